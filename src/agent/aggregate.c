/* aggregate.c: raw stack counting and symbolization into profiles (see aggregate.h).
 * Stacks live in one arena of variable-size entries; a u64map from the stack hash to the first
 * entry, with collision chains, finds them. */
#include "agent/aggregate.h"
#include "agent/symbolizer.h"
#include "bpf/offcpu.h"
#include "bpf/unwind.h"
#include "runtime/runtime.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "profile/profile.h"

#include <errno.h>
#include <string.h>

struct stack_entry {
	uint64_t hash;
	uint32_t next;   /* index + 1 of the next entry with the same hash slot */
	uint32_t pid;
	uint64_t count;
	uint64_t weight;  /* off-CPU: sum of the records' weight_ns */
	uint32_t flags;
	uint32_t gen;     /* the process's image when the samples were taken (agg_gen_fn) */
	uint16_t nkernel, nuser;
	char comm[TASK_COMM_SIZE];
	char *thread;     /* the thread's name from its runtime (a Java thread's), or NULL */
	uint64_t *frames; /* nkernel kernel addresses then nuser user words, leaf first */
};

struct agg {
	struct stack_entry *entries;
	size_t nentries, cap;
	size_t max_stacks;
	struct u64map index;
	uint64_t samples, offcpu, dropped;
	struct runtimes *rts;      /* symbolizes runtime frames (may be NULL) */
	agg_label_fn label_fn;
	void *label_ctx;
	agg_gen_fn gen_fn;
	void *gen_ctx;
};

#define MAX_RUNTIME_FRAMES 64 /* frames one group of runtime words may stand for */

void agg_set_runtimes(struct agg *a, struct runtimes *rts)
{
	a->rts = rts;
}

void agg_set_label_source(struct agg *a, agg_label_fn fn, void *ctx)
{
	a->label_fn = fn;
	a->label_ctx = ctx;
}

void agg_set_generation_source(struct agg *a, agg_gen_fn fn, void *ctx)
{
	a->gen_fn = fn;
	a->gen_ctx = ctx;
}

struct agg *agg_new(size_t max_stacks)
{
	struct agg *a = xcalloc(1, sizeof(*a));

	a->max_stacks = max_stacks ? max_stacks : 1u << 20;
	u64map_init(&a->index);
	return a;
}

void agg_reset(struct agg *a)
{
	size_t i;

	for (i = 0; i < a->nentries; i++) {
		xfree(a->entries[i].frames);
		xfree(a->entries[i].thread);
	}
	a->nentries = 0;
	a->samples = a->offcpu = a->dropped = 0;
	u64map_release(&a->index);
	u64map_init(&a->index);
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	agg_reset(a);
	xfree(a->entries);
	u64map_release(&a->index);
	xfree(a);
}

static void agg_count(struct agg *a, const struct sample_body *body)
{
	if (body->flags & SAMPLE_F_OFFCPU)
		a->offcpu++;
	else
		a->samples++;
}

int agg_add_record(struct agg *a, const struct event_hdr *hdr, size_t size)
{
	const struct sample_body *body = (const void *)(hdr + 1);
	const uint64_t *frames = (const void *)(body + 1);
	size_t nframes, need;
	uint64_t h, key, *first;
	uint32_t idx;
	struct stack_entry *e;
	char thread[RUNTIME_THREAD_NAME_MAX];
	int named = 0;
	uint32_t gen;

	if (size < sizeof(*hdr) + sizeof(*body))
		return -EINVAL;
	nframes = (size_t)body->nkernel + body->nuser;
	need = sizeof(*hdr) + sizeof(*body) + nframes * sizeof(uint64_t);
	if (need > size || body->nkernel > MAX_KERNEL_FRAMES || body->nuser > MAX_USER_WORDS)
		return -EINVAL;

	/* Why hash here: the same few thousand stacks recur in every sample. */
	h = hash_bytes(frames, nframes * sizeof(uint64_t),
		       ((uint64_t)hdr->pid << 32) ^ ((uint64_t)body->nkernel << 16) ^ body->flags);
	h = hash_bytes(body->comm, strnlen(body->comm, TASK_COMM_SIZE), h);
	/* a runtime may know the thread by a longer name than comm (a Java thread's) */
	if (a->rts && hdr->pid && !(body->flags & SAMPLE_F_IDLE))
		named = runtimes_thread_name(a->rts, (int)hdr->pid, (int)hdr->tid, thread,
					     sizeof(thread)) == 1;
	if (named)
		h = hash_bytes(thread, strlen(thread), h ^ 0x7468);
	/* which image of the process ran: its addresses are named from that image's files */
	gen = a->gen_fn && hdr->pid ? a->gen_fn(a->gen_ctx, hdr->pid) : 0;
	h = hash_combine(h, gen);
	key = h == ~0ULL ? 2 : h | 1;
	first = u64map_get(&a->index, key);
	for (idx = first ? (uint32_t)*first : 0; idx; idx = a->entries[idx - 1].next) {
		e = &a->entries[idx - 1];
		if (e->hash == h && e->pid == hdr->pid && e->gen == gen && e->nkernel == body->nkernel &&
		    e->nuser == body->nuser && e->flags == body->flags &&
		    !strncmp(e->comm, body->comm, TASK_COMM_SIZE) &&
		    (named ? e->thread && !strcmp(e->thread, thread) : !e->thread) &&
		    !memcmp(e->frames, frames, nframes * sizeof(uint64_t))) {
			e->count++;
			e->weight += body->weight_ns;
			agg_count(a, body);
			return 0;
		}
	}
	if (a->nentries >= a->max_stacks) {
		a->dropped++;
		return -ENOSPC;
	}
	ALLOC_GROW(a->entries, a->nentries + 1, a->cap);
	e = &a->entries[a->nentries++];
	memset(e, 0, sizeof(*e));
	e->hash = h;
	e->next = first ? (uint32_t)*first : 0;
	e->pid = hdr->pid;
	e->gen = gen;
	e->count = 1;
	e->weight = body->weight_ns;
	e->flags = body->flags;
	e->nkernel = body->nkernel;
	e->nuser = body->nuser;
	memcpy(e->comm, body->comm, TASK_COMM_SIZE);
	e->comm[TASK_COMM_SIZE - 1] = '\0';
	e->thread = named ? xstrdup(thread) : NULL;
	e->frames = xmalloc(nframes ? nframes * sizeof(uint64_t) : 1);
	memcpy(e->frames, frames, nframes * sizeof(uint64_t));
	u64map_put(&a->index, key, a->nentries);
	agg_count(a, body);
	return 0;
}

uint64_t agg_samples(const struct agg *a)
{
	return a->samples;
}

uint64_t agg_offcpu_records(const struct agg *a)
{
	return a->offcpu;
}

uint64_t agg_dropped(const struct agg *a)
{
	return a->dropped;
}

size_t agg_stacks(const struct agg *a)
{
	return a->nentries;
}

/* Per-profile caches from (pid, address) to location ids, so each distinct frame is
 * symbolized and interned once per profile. A native address may be several frames (inlined
 * calls): its ids are a run in `runs`. */
struct native_run {
	uint64_t addr;
	uint32_t pid;
	uint32_t gen;
	uint32_t is_return;
	uint32_t first, n; /* the location ids: runs[first .. first + n) */
};

struct loc_cache {
	struct profile *p;
	struct u64map locs;     /* hash(pid, word, kind) -> location id */
	struct u64map native;   /* hash(pid, addr, is_return) -> index in nat + 1 */
	struct native_run *nat; /* the exact key of each cached address, checked on a hit */
	size_t nnat, nat_cap;
	uint32_t *runs;
	size_t nruns, runs_cap;
	struct u64map mappings; /* hash(module, start) -> mapping id */
};

static uint32_t special_location(struct profile *p, const char *name)
{
	uint32_t fn = profile_intern_function(p, FRAME_SPECIAL, name, NULL, NULL, 0);

	return profile_intern_location(p, 0, 0, fn, 0);
}

static uint32_t mapping_for(struct loc_cache *c, const struct sym_result *r)
{
	uint64_t key, *v;
	uint32_t id;

	if (!r->module)
		return 0;
	key = hash_combine(hash_bytes(r->module, strlen(r->module), 7), r->map_start) | 1;
	v = u64map_get(&c->mappings, key);
	if (v)
		return (uint32_t)*v;
	id = profile_add_mapping(c->p, r->map_start, r->map_limit, r->map_offset, r->module,
				 r->build_id);
	c->p->mappings[id - 1].main_exe = (uint8_t)r->main_exe;
	u64map_put(&c->mappings, key, id);
	return id;
}

static uint32_t kernel_location(struct loc_cache *c, struct symbolizer *sym, uint64_t addr)
{
	uint64_t key = hash_combine(0x6b65726e, addr) | 1, *v = u64map_get(&c->locs, key);
	struct sym_result r;
	uint32_t fn = 0, id;

	if (v)
		return (uint32_t)*v;
	memset(&r, 0, sizeof(r));
	if (symbolizer_kernel(sym, addr, &r) == 0 && r.name)
		fn = profile_intern_function(c->p, FRAME_KERNEL, r.name, r.mangled, NULL, 0);
	else
		fn = profile_intern_function(c->p, FRAME_KERNEL, "[unknown]", NULL, NULL, 0);
	id = profile_intern_location(c->p, 0, addr, fn, 0);
	u64map_put(&c->locs, key, id);
	return id;
}

/* The frames of a native address, innermost first (the functions inlined there, then the
 * function itself), as location ids into out (room for SYM_FRAMES_MAX). is_return: the
 * address is a return address, so the call is the instruction before it. Returns how many. */
#define SYM_FRAMES_MAX 34
static size_t native_locations(struct loc_cache *c, struct symbolizer *sym, uint32_t pid,
			       uint32_t gen, uint64_t addr, int is_return, uint32_t *out)
{
	uint64_t key = hash_combine(hash_combine(hash_u64(((uint64_t)pid << 1 |
							     (is_return ? 1 : 0)) + 1), addr),
				    gen);
	uint64_t *v;
	const struct native_run *hit;
	struct sym_result r;
	uint32_t fn = 0, map;
	size_t n = 0, i;
	int cache = 1;

	key = key == ~0ULL ? 2 : key | 1;
	v = u64map_get(&c->native, key);
	if (v) {
		/* The key is a hash: another (pid, address) may share it, and must not lend
		 * this one its names (a goroutine's root named after another process's leaf). */
		hit = &c->nat[*v - 1];
		if (hit->pid == pid && hit->gen == gen && hit->addr == addr &&
		    hit->is_return == (is_return ? 1u : 0u)) {
			memcpy(out, c->runs + hit->first, hit->n * sizeof(*out));
			return hit->n;
		}
		cache = 0;
	}
	memset(&r, 0, sizeof(r));
	if (symbolizer_user_gen(sym, (int)pid, gen, is_return && addr ? addr - 1 : addr, &r) < 0)
		memset(&r, 0, sizeof(r));
	map = mapping_for(c, &r);
	for (i = 0; i < r.ninlined && n + 1 < SYM_FRAMES_MAX; i++) {
		const struct sym_frame *x = &r.inlined[i];

		fn = profile_intern_function(c->p, FRAME_NATIVE, x->name ? x->name : "[unknown inlined]",
					     x->mangled, x->source_file, 0);
		out[n++] = profile_intern_location_inl(c->p, map, addr, fn, x->line, 1);
	}
	fn = 0;
	if (r.name)
		fn = profile_intern_function(c->p, FRAME_NATIVE, r.name, r.mangled, r.source_file, 0);
	out[n++] = profile_intern_location(c->p, map, addr, fn, r.line);
	if (!cache)
		return n;
	ALLOC_GROW(c->runs, c->nruns + n, c->runs_cap);
	memcpy(c->runs + c->nruns, out, n * sizeof(*out));
	ALLOC_GROW(c->nat, c->nnat + 1, c->nat_cap);
	c->nat[c->nnat++] = (struct native_run){ addr, pid, gen, is_return ? 1u : 0u,
						 (uint32_t)c->nruns, (uint32_t)n };
	u64map_put(&c->native, key, c->nnat);
	c->nruns += n;
	return n;
}

/* The locations of the runtime words at w[0..n): appended to stack[*pos], leaf first.
 * Returns the number of words consumed. */
static size_t runtime_locations(struct agg *a, struct profile *p, uint32_t pid, const uint64_t *w,
				size_t n, uint32_t *stack, size_t *pos)
{
	struct runtime_frame fr[MAX_RUNTIME_FRAMES];
	size_t used = 1;
	int nf, i;

	if (!a->rts) {
		stack[(*pos)++] = special_location(p, "[unknown]");
		return 1;
	}
	nf = runtimes_symbolize(a->rts, (int)pid, w, n, &used, fr, MAX_RUNTIME_FRAMES);
	for (i = 0; i < nf; i++) {
		uint32_t fn;

		if (fr[i].kind == FRAME_SPECIAL) {
			stack[(*pos)++] = special_location(p, fr[i].name);
			continue;
		}
		fn = profile_intern_function(p, (enum frame_kind)fr[i].kind, fr[i].name,
					     fr[i].system_name ? fr[i].system_name : fr[i].name,
					     fr[i].file, fr[i].start_line);
		stack[(*pos)++] = profile_intern_location(p, 0, 0, fn, fr[i].line);
	}
	return used;
}

const char *agg_marker_name(uint64_t code)
{
	switch (code) {
	case FW_MARKER_TRUNCATED:
		return "[truncated]";
	case FW_MARKER_UNWIND_ERROR:
		return "[unwind error]";
	case FW_MARKER_STACK_SWITCH:
		return "[stack switch]";
	case FW_MARKER_EXEC:
		return "[exec]";
	case FW_MARKER_EXITED:
		return "[exited]";
	case FW_MARKER_PCRE_JIT:
		return "[pcre2 jit]";
	case FW_MARKER_NO_USER:
		return NULL;
	default:
		return "[unknown marker]";
	}
}

static uint32_t marker_location(struct profile *p, uint64_t code)
{
	const char *name = agg_marker_name(code);

	return name ? special_location(p, name) : 0;
}

/* How many leaf kernel frames of an off-CPU record belong to the probe that took it (the BPF
 * program and the tracepoint's trampoline), not to the thread: left out, so the stack ends
 * where the thread blocked (__schedule, or finish_task_switch under a kprobe). When no such
 * frame is among the first few (an unusual kernel), everything is kept. */
static size_t probe_frames(struct symbolizer *sym, const uint64_t *frames, size_t nkernel)
{
	size_t j;

	for (j = 0; j < nkernel && j < 4; j++) {
		struct sym_result r;

		memset(&r, 0, sizeof(r));
		if (symbolizer_kernel(sym, frames[j], &r) == 0 && r.name &&
		    (!strcmp(r.name, "__schedule") || !strncmp(r.name, "finish_task_switch", 18)))
			return j;
	}
	return 0;
}

/* Whether a sample with kernel frames entered the kernel by a system call: its user PC is then
 * the instruction after `syscall` (looked up at PC - 1, like a return address). An interrupt
 * or a fault leaves the exact PC of the interrupted instruction, which may be the first of a
 * function: PC - 1 would name the function before it. Told by the outermost kernel frame. */
static int in_syscall(struct symbolizer *sym, const struct stack_entry *e)
{
	struct sym_result r;

	if (!e->nkernel || symbolizer_kernel(sym, e->frames[e->nkernel - 1], &r) < 0 || !r.name)
		return 0;
	return !strncmp(r.name, "entry_SYSCALL", 13) || !strncmp(r.name, "entry_SYSENTER", 14) ||
	       !strncmp(r.name, "entry_INT80", 11) || !strncmp(r.name, "do_syscall", 10);
}

struct pick_slot {
	struct profile *p;
	struct loc_cache cache;
};

int agg_to_profile(struct agg *a, struct symbolizer *sym, struct profile *into, agg_pick_fn pick, void *pick_ctx)
{
	return agg_to_profile_kind(a, sym, AGG_CPU, 0, into, pick, pick_ctx);
}

/* An entry's value in a profile of this kind, or 0 when it has no place in it. */
static int64_t entry_value(const struct stack_entry *e, enum agg_kind kind, int64_t cpu_period_ns)
{
	int64_t v;

	if (e->flags & SAMPLE_F_OFFCPU)
		return kind == AGG_CPU ? 0 : e->weight > INT64_MAX ? INT64_MAX : (int64_t)e->weight;
	if (kind == AGG_CPU)
		return (int64_t)e->count;
	if (kind == AGG_OFFCPU || (e->flags & SAMPLE_F_IDLE))
		return 0;
	if (__builtin_mul_overflow((int64_t)e->count, cpu_period_ns, &v))
		return INT64_MAX;
	return v;
}

int agg_to_profile_kind(struct agg *a, struct symbolizer *sym, enum agg_kind kind,
			int64_t cpu_period_ns, struct profile *into, agg_pick_fn pick,
			void *pick_ctx)
{
	struct pick_slot *slots = NULL;
	size_t nslots = 0, slots_cap = 0, i, j;
	uint32_t *stack = NULL;
	size_t stack_cap = 0;

	for (i = 0; i < a->nentries; i++) {
		struct stack_entry *e = &a->entries[i];
		int64_t value = entry_value(e, kind, cpu_period_ns);
		struct profile *p;
		struct loc_cache *c = NULL;
		struct profile_label labels[3];
		const char *lkey = NULL, *lval = NULL;
		size_t nlabels = 2;
		size_t n = 0;

		if (value <= 0)
			continue;
		p = pick ? pick(pick_ctx, e->pid, e->comm) : into;
		if (!p)
			continue;
		for (j = 0; j < nslots; j++) {
			if (slots[j].p == p) {
				c = &slots[j].cache;
				break;
			}
		}
		if (!c) {
			ALLOC_GROW(slots, nslots + 1, slots_cap);
			memset(&slots[nslots], 0, sizeof(slots[nslots]));
			slots[nslots].p = p;
			c = &slots[nslots].cache;
			c->p = p;
			u64map_init(&c->locs);
			u64map_init(&c->native);
			u64map_init(&c->mappings);
			nslots++;
		}

		/* a group of runtime words may stand for several frames (inlining) */
		ALLOC_GROW(stack, (size_t)e->nkernel + (size_t)e->nuser * MAX_RUNTIME_FRAMES + 2,
			   stack_cap);
		if (e->flags & SAMPLE_F_OFFCPU) {
			/* the reason is the leaf: where time went, by kind of wait */
			stack[n++] = special_location(p, offcpu_reason_frame(
				(e->flags & SAMPLE_F_REASON_MASK) >> SAMPLE_F_REASON_SHIFT));
			if (e->flags & SAMPLE_F_NO_STACK)
				stack[n++] = special_location(p, "[rate limited]");
		}
		if (e->flags & SAMPLE_F_IDLE) {
			stack[n++] = special_location(p, "[idle]");
		} else {
			j = (e->flags & SAMPLE_F_OFFCPU) ? probe_frames(sym, e->frames, e->nkernel) : 0;
			for (; j < e->nkernel; j++)
				stack[n++] = kernel_location(c, sym, e->frames[j]);
			for (j = 0; j < e->nuser; j++) {
				uint64_t w = e->frames[e->nkernel + j];
				uint64_t tag = (w & FW_TAG_MASK) >> FW_TAG_SHIFT;
				uint32_t loc = 0;

				if (tag == FW_TAG_NATIVE) {
					/* The first user frame is an exact PC, unless the
					 * sample is in a system call (then it is where the
					 * call returns; off CPU, always); the rest are
					 * return addresses. */
					ALLOC_GROW(stack, n + SYM_FRAMES_MAX, stack_cap);
					n += native_locations(c, sym, e->pid, e->gen, w,
							      j > 0 || in_syscall(sym, e) ||
							      (e->flags & SAMPLE_F_OFFCPU), stack + n);
					continue;
				} else if (tag == FW_TAG_MARKER) {
					loc = marker_location(p, w & FW_DATA_MASK);
				} else {
					/* a runtime's words: it says how many make a frame
					 * (room checked: inlined native frames may have
					 * used the slack of the first allocation); words no
					 * runtime of the process wrote (a reserved native
					 * tag included) come back as one [unknown] */
					ALLOC_GROW(stack, n + MAX_RUNTIME_FRAMES, stack_cap);
					j += runtime_locations(a, p, e->pid, &e->frames[e->nkernel + j],
							       e->nuser - j, stack, &n) - 1;
					continue;
				}
				if (loc) {
					ALLOC_GROW(stack, n + 1, stack_cap);
					stack[n++] = loc;
				}
			}
			if (n == 0 || (n == 1 && (e->flags & SAMPLE_F_OFFCPU)))
				stack[n++] = special_location(p, "[no stack]");
		}
		labels[0].key = profile_str(p, "comm");
		labels[0].str = profile_str(p, (e->flags & SAMPLE_F_IDLE) ? "swapper" :
					       e->thread ? e->thread : e->comm);
		labels[0].num = 0;
		labels[1].key = profile_str(p, "pid");
		labels[1].str = 0;
		labels[1].num = e->pid;
		if (a->label_fn && a->label_fn(a->label_ctx, e->pid, &lkey, &lval) == 1) {
			labels[2].key = profile_str(p, lkey);
			labels[2].str = profile_str(p, lval);
			labels[2].num = 0;
			nlabels = 3;
		}
		profile_add_sample(p, stack, n, labels, nlabels, value);
	}
	for (j = 0; j < nslots; j++) {
		/* the executables first: pprof readers take the first mapping for the main file */
		profile_mappings_main_first(slots[j].p);
		u64map_release(&slots[j].cache.locs);
		u64map_release(&slots[j].cache.native);
		xfree(slots[j].cache.runs);
		xfree(slots[j].cache.nat);
		u64map_release(&slots[j].cache.mappings);
	}
	xfree(slots);
	xfree(stack);
	return 0;
}
