/* hotspot_runtime.c: the HotSpot runtime (hotspot_runtime.h). The JVM's tables are read in
 * hotspot_vm.c, its methods and compiled code in hotspot_code.c, the BPF walker is
 * hotspot.bpf.h (its frame step hotspot_step.h). */
#include "runtime/hotspot/hotspot_runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/hotspot/hotspot_code.h"
#include "runtime/hotspot/hotspot_threads.h"
#include "runtime/hotspot/hotspot_vm.h"
#include "runtime/hotspot/hotspot_walk.h"
#include "runtime/procmem.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct hs_state {
	int procs_fd;               /* hs_procs, or -1 (no BPF) */
	int stats_fd;               /* hs_stats, or -1 */
	struct hotspot_cache *cache;
	size_t live;                /* attached instances */
	uint64_t frames_noted, setups, setup_retries, failures;
	uint64_t symbolized, inlined; /* Java frames symbolized (per distinct stack), inlined ones */
	uint64_t table_ns;          /* time spent reading vmStructs */
	uint64_t thread_ns;         /* time spent reading thread names and lists */
	struct hotspot_threads_stats threads; /* of the instances released */
	struct hs_inst *insts;      /* the instances attached */
	struct hotspot_sym syms[HOTSPOT_MAX_INLINE];
};

struct hs_inst {
	int pid;
	struct process_registry *reg;
	struct procmem mem;
	const struct hotspot_file *file;
	uint64_t bias;
	struct hotspot_vm vm;
	int have_vm;                /* hotspot_vm_read() succeeded */
	int ready;                  /* code cache read, published, claimed */
	int published;
	uint64_t claimed_lo;        /* start of the claimed code cache, 0 when none */
	int tries;
	uint64_t next_try_ns;
	int label_tries, stub_tries;
	char main_class[256];
	struct hotspot_threads *threads; /* Java thread names by thread id */
	struct hs_inst *next, *prev;     /* hs_state.insts */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int hs_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		   struct errmsg *err)
{
	struct hs_state *s = xcalloc(1, sizeof(*s));

	s->procs_fd = s->stats_fd = -1;
	if (obj) {
		struct bpf_map *procs = bpf_object__find_map_by_name(obj, "hs_procs");
		struct bpf_map *stats = bpf_object__find_map_by_name(obj, "hs_stats");

		if (!procs || !stats) {
			xfree(s);
			return errmsg_set(err, -ENOENT, "the BPF object has no HotSpot maps");
		}
		s->procs_fd = bpf_map__fd(procs);
		s->stats_fd = bpf_map__fd(stats);
	}
	s->cache = hotspot_cache_new(HOTSPOT_CACHE_ENTRIES);
	*state = s;
	return 0;
}

static void hs_free(void *state)
{
	struct hs_state *s = state;

	if (!s)
		return;
	hotspot_cache_free(s->cache);
	xfree(s);
}

static int hs_file_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	struct hotspot_file f;
	int rc = hotspot_file_detect(e, path, &f);

	if (rc <= 0)
		return rc;
	*data = xmalloc(sizeof(f));
	memcpy(*data, &f, sizeof(f));
	return 1;
}

static void hs_file_free(void *data)
{
	xfree(data);
}

static void unpublish(struct hs_state *s, struct hs_inst *in)
{
	if (in->published && s->procs_fd >= 0) {
		__u32 key = (__u32)in->pid;

		bpf_map_delete_elem(s->procs_fd, &key);
	}
	in->published = 0;
}

/* Read the tables and the code cache, publish the process to the walker and claim the code
 * cache. 0 done, -EAGAIN not yet (the JVM is starting), other errors final. */
static int setup(struct hs_state *s, struct hs_inst *in, struct errmsg *err)
{
	uint64_t t0 = now_ns();
	int rc;

	s->setups++;
	if (!in->have_vm) {
		rc = hotspot_vm_read(&in->mem, in->file, in->bias, &in->vm, err);
		s->table_ns += now_ns() - t0;
		if (rc == -EFAULT)
			return -EAGAIN; /* the tables are filled in while the JVM starts */
		if (rc)
			return rc;
		in->have_vm = 1;
	}
	rc = hotspot_vm_code_cache(&in->mem, &in->vm, err);
	if (rc == -EFAULT)
		return -EAGAIN;
	if (rc)
		return rc;
	if (s->procs_fd >= 0) {
		__u32 key = (__u32)in->pid;

		if (bpf_map_update_elem(s->procs_fd, &key, &in->vm.bpf, BPF_ANY))
			return errmsg_set(err, -errno, "cannot publish JVM %d to BPF: %s", in->pid,
					  strerror(errno));
		in->published = 1;
	}
	if (in->reg) {
		rc = process_claim(in->reg, in->pid, in->vm.bpf.cc_lo, in->vm.bpf.cc_hi,
				   UNWINDER_HOTSPOT);
		if (rc == 0)
			in->claimed_lo = in->vm.bpf.cc_lo;
		else if (rc != -ENOENT)
			return errmsg_set(err, rc, "cannot claim the code cache of JVM %d", in->pid);
	}
	in->ready = 1;
	return 0;
}

/* The label: the main class, the -jar file or module/class, from the JVM's command. */
static void find_label(struct hs_inst *in)
{
	char cmd[256];

	if (in->main_class[0] || in->label_tries >= 50)
		return;
	in->label_tries++;
	if (hotspot_vm_java_command(&in->mem, &in->vm, cmd, sizeof(cmd)) == 0)
		snprintf(in->main_class, sizeof(in->main_class), "%s", cmd);
}

static int hs_attach(void *state, void *data, const struct runtime_attach *at, void **out,
		     struct errmsg *err)
{
	struct hs_state *s = state;
	struct hs_inst *in = xcalloc(1, sizeof(*in));
	int rc;

	in->pid = at->proc->pid;
	in->reg = at->reg;
	in->file = data;
	in->bias = at->bias;
	procmem_init_pid(&in->mem, in->pid);
	in->threads = hotspot_threads_new();
	rc = setup(s, in, err);
	if (rc && rc != -EAGAIN) {
		s->failures++;
		hotspot_vm_release(&in->vm);
		hotspot_threads_free(in->threads);
		xfree(in);
		return rc;
	}
	if (in->have_vm)
		find_label(in);
	s->live++;
	in->next = s->insts;
	if (s->insts)
		s->insts->prev = in;
	s->insts = in;
	*out = in;
	return 1; /* polled: the setup if not done, the label and the late stubs */
}

static int hs_poll(void *state, void *inst, struct errmsg *err)
{
	struct hs_state *s = state;
	struct hs_inst *in = inst;
	uint64_t now = now_ns();
	int rc;

	if (now < in->next_try_ns)
		return 1;
	in->next_try_ns = now + HOTSPOT_SETUP_RETRY_NS;
	if (!in->ready) {
		rc = setup(s, in, err);
		if (rc == -EAGAIN) {
			s->setup_retries++;
			if (++in->tries < HOTSPOT_SETUP_TRIES)
				return 1;
			return errmsg_set(err, -ETIMEDOUT, "the JVM did not finish starting: %s",
					  err->msg[0] ? err->msg : "no code cache");
		}
		if (rc) {
			s->failures++;
			unpublish(s, in);
			return rc;
		}
	}
	find_label(in);
	/* The interpreter and the stubs are generated after the code cache, stubs in phases:
	 * look again for a while, and give the walker what changed. */
	if ((in->vm.stubs_resolved < in->vm.nstubs || !in->vm.bpf.interp_hi) && in->stub_tries < 50) {
		struct hs_proc before = in->vm.bpf;

		in->stub_tries++;
		in->next_try_ns = now + 100 * 1000000ULL;
		if (hotspot_vm_code_cache(&in->mem, &in->vm, NULL) == 0 && in->published &&
		    memcmp(&before, &in->vm.bpf, sizeof(before))) {
			__u32 key = (__u32)in->pid;

			bpf_map_update_elem(s->procs_fd, &key, &in->vm.bpf, BPF_ANY);
		}
		return 1;
	}
	return in->main_class[0] || in->label_tries >= 50 ? 0 : 1;
}

static void hs_note(void *state, void *inst, int pid, const uint64_t *words, size_t n)
{
	struct hs_state *s = state;
	struct hs_inst *in = inst;
	size_t i;

	if (!in->have_vm)
		return;
	for (i = 0; i + 1 < n; i++) {
		uint64_t tag = words[i] >> FW_TAG_SHIFT;

		if ((tag != FW_TAG_HS_INTERP && tag != FW_TAG_HS_JIT && tag != FW_TAG_HS_STUB) ||
		    (words[i + 1] >> FW_TAG_SHIFT) != FW_TAG_HS_INFO)
			continue;
		/* read now what the frame names: an nmethod may be flushed and a class unloaded
		 * before the profile is built */
		hotspot_cache_frames(s->cache, (uint32_t)pid, &in->mem, &in->vm, words[i],
				     words[i + 1], s->syms, HOTSPOT_MAX_INLINE);
		s->frames_noted++;
		i++;
	}
}

static int hs_thread_name(void *state, void *inst, int tid, char *out, size_t outlen)
{
	struct hs_state *s = state;
	struct hs_inst *in = inst;
	uint64_t t0;
	const char *name;

	if (!in->have_vm || !in->vm.thr.usable)
		return 0;
	t0 = now_ns();
	name = hotspot_threads_name(in->threads, &in->mem, &in->vm, tid, t0);
	s->thread_ns += now_ns() - t0;
	if (!name)
		return 0;
	snprintf(out, outlen, "%s", name);
	return 1;
}

/* Add t's counters to acc (and its cached threads when it lives on). */
static void add_thread_stats(struct hotspot_threads_stats *acc, const struct hotspot_threads *t,
			     int live)
{
	struct hotspot_threads_stats st;

	hotspot_threads_stats(t, &st);
	acc->lookups += st.lookups;
	acc->named += st.named;
	acc->reads += st.reads;
	acc->scans += st.scans;
	acc->read_errors += st.read_errors;
	if (live)
		acc->threads += st.threads;
}

static int hs_jit_step(void *state, void *inst, struct unw_state *st,
		       const struct unwinder_io *io)
{
	struct hs_inst *in = inst;

	if (!in->ready)
		return UNW_HOOK_NATIVE;
	return hotspot_jit_step(&in->vm.bpf, st, io);
}

static const char *mark_name(uint64_t code)
{
	switch (code) {
	case HS_MARK_NO_BLOB:
		return "[java: unknown code]";
	case HS_MARK_BAD_READ:
		return "[java: unreadable frame]";
	case HS_MARK_TRUNCATED:
		return "[java: truncated]";
	default:
		return "[java: bad frame]";
	}
}

static int hs_symbolize(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			size_t *used, struct runtime_frame *out, int max)
{
	struct hs_state *s = state;
	struct hs_inst *in = inst;
	uint64_t tag = words[0] >> FW_TAG_SHIFT;
	int nf, i;

	*used = 1;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	if (tag == FW_TAG_HS_MARK) {
		out->name = mark_name(words[0] & FW_DATA_MASK);
		out->kind = FRAME_SPECIAL;
		return 1;
	}
	if ((tag != FW_TAG_HS_INTERP && tag != FW_TAG_HS_JIT && tag != FW_TAG_HS_STUB) || n < 2 ||
	    (words[1] >> FW_TAG_SHIFT) != FW_TAG_HS_INFO) {
		out->name = "[java: unknown frame]";
		out->kind = FRAME_SPECIAL;
		return 1;
	}
	*used = 2;
	if (max > HOTSPOT_MAX_INLINE)
		max = HOTSPOT_MAX_INLINE;
	/* cached while the process lived; read now only if it still lives */
	nf = hotspot_cache_frames(s->cache, (uint32_t)pid, in && in->have_vm ? &in->mem : NULL,
				  in && in->have_vm ? &in->vm : NULL, words[0], words[1], s->syms,
				  max);
	for (i = 0; i < nf; i++) {
		const struct hotspot_sym *h = &s->syms[i];

		memset(&out[i], 0, sizeof(out[i]));
		out[i].name = h->name;
		if (h->special) {
			out[i].kind = FRAME_SPECIAL;
			continue;
		}
		if (h->stub) {
			out[i].kind = FRAME_NATIVE;
			continue;
		}
		out[i].system_name = h->system_name;
		out[i].file = h->file;
		out[i].line = h->line;
		out[i].start_line = h->start_line;
		out[i].kind = FRAME_PYTHON; /* an interpreted or JIT frame: "name (file:line)" */
		out[i].inlined = (uint8_t)h->inlined;
		s->symbolized++;
		s->inlined += h->inlined != 0;
	}
	return nf;
}

static int hs_label(void *state, void *inst, char *key, size_t keylen, char *value,
		    size_t valuelen)
{
	struct hs_inst *in = inst;

	if (!in->main_class[0])
		return 0;
	snprintf(key, keylen, "main_class");
	snprintf(value, valuelen, "%s", in->main_class);
	return 1;
}

static void release_claim(struct hs_inst *in)
{
	if (in->claimed_lo && in->reg)
		process_claim(in->reg, in->pid, in->claimed_lo, in->claimed_lo + 1, 0);
	in->claimed_lo = 0;
}

static void hs_detach(void *state, void *inst)
{
	unpublish(state, inst);
}

static void hs_release(void *state, void *inst)
{
	struct hs_state *s = state;
	struct hs_inst *in = inst;

	unpublish(s, in);
	/* the registry drops the claims with the process or the image: nothing to release
	 * when it is forgotten; a live process losing its runtime gives its range back */
	if (in->reg && process_get(in->reg, in->pid) &&
	    process_get(in->reg, in->pid)->state == PROCESS_LIVE)
		release_claim(in);
	hotspot_cache_forget_pid(s->cache, (uint32_t)in->pid);
	hotspot_vm_release(&in->vm);
	add_thread_stats(&s->threads, in->threads, 0);
	hotspot_threads_free(in->threads);
	if (in->prev)
		in->prev->next = in->next;
	else
		s->insts = in->next;
	if (in->next)
		in->next->prev = in->prev;
	xfree(in);
	if (s->live)
		s->live--;
}

static void bpf_counters(int fd, uint64_t out[HSSTAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	__u32 k;
	int c;

	memset(out, 0, sizeof(uint64_t) * HSSTAT__COUNT);
	if (fd < 0 || ncpu <= 0)
		return;
	vals = xcalloc((size_t)ncpu, sizeof(*vals));
	for (k = 0; k < HSSTAT__COUNT; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	xfree(vals);
}

/* --stats names of enum hs_cause (hotspot.h), in its order. */
static const char *const cause_names[HS_CAUSE__COUNT] = {
	[HS_CAUSE_NONE] = "none",
	[HS_CAUSE_NO_HEAP] = "no_heap",
	[HS_CAUSE_NO_BLOCK] = "no_block",
	[HS_CAUSE_READ_BLOB] = "read_blob",
	[HS_CAUSE_FRAME_SIZE] = "frame_size",
	[HS_CAUSE_LAYOUT] = "layout",
	[HS_CAUSE_INTERP_FP] = "interp_fp",
	[HS_CAUSE_PROLOGUE] = "prologue",
	[HS_CAUSE_STUB_FP] = "stub_fp",
	[HS_CAUSE_READ_FRAME] = "read_frame",
	[HS_CAUSE_SP] = "sp",
	[HS_CAUSE_PC0] = "pc0",
};

static void hs_print_stats(void *state, FILE *f)
{
	struct hs_state *s = state;
	struct hotspot_cache_stats cs;
	uint64_t b[HSSTAT__COUNT];
	struct hotspot_threads_stats ts = s->threads;
	struct hs_inst *in;
	int k;

	hotspot_cache_stats(s->cache, &cs);
	bpf_counters(s->stats_fd, b);
	for (in = s->insts; in; in = in->next)
		add_thread_stats(&ts, in->threads, 1);
	fprintf(f, "hotspot: jvms=%zu frames_noted=%llu symbolized=%llu inlined=%llu "
		"cache_lookups=%llu cache_hits=%llu "
		"cache_reads=%llu read_errors=%llu stale=%llu cache_clears=%llu methods=%zu "
		"pcs=%zu stubs=%zu setups=%llu setup_retries=%llu failures=%llu table_ms=%.1f "
		"bpf_samples=%llu bpf_hooks=%llu bpf_interp=%llu bpf_jit=%llu bpf_stub=%llu "
		"bpf_errors=%llu bpf_prologue=%llu bpf_deopt=%llu bpf_blob_hits=%llu "
		"bpf_walk_ns=%llu thread_lookups=%llu thread_named=%llu thread_reads=%llu "
		"thread_scans=%llu thread_read_errors=%llu threads_cached=%zu thread_ms=%.1f",
		s->live, (unsigned long long)s->frames_noted, (unsigned long long)s->symbolized,
		(unsigned long long)s->inlined, (unsigned long long)cs.lookups,
		(unsigned long long)cs.hits, (unsigned long long)cs.reads,
		(unsigned long long)cs.read_errors, (unsigned long long)cs.stale,
		(unsigned long long)cs.clears, cs.methods, cs.pcs, cs.stubs,
		(unsigned long long)s->setups, (unsigned long long)s->setup_retries,
		(unsigned long long)s->failures, s->table_ns / 1e6,
		(unsigned long long)b[HSSTAT_SAMPLES], (unsigned long long)b[HSSTAT_HOOKS],
		(unsigned long long)b[HSSTAT_INTERP], (unsigned long long)b[HSSTAT_JIT],
		(unsigned long long)b[HSSTAT_STUB], (unsigned long long)b[HSSTAT_ERRORS],
		(unsigned long long)b[HSSTAT_PROLOGUE], (unsigned long long)b[HSSTAT_DEOPT],
		(unsigned long long)b[HSSTAT_CACHE_HITS], (unsigned long long)b[HSSTAT_WALK_NS],
		(unsigned long long)ts.lookups, (unsigned long long)ts.named,
		(unsigned long long)ts.reads, (unsigned long long)ts.scans,
		(unsigned long long)ts.read_errors, ts.threads, s->thread_ns / 1e6);
	fprintf(f, " bpf_fail_leaf=%llu bpf_fail_interp=%llu bpf_fail_jit=%llu bpf_fail_stub=%llu",
		(unsigned long long)b[HSSTAT_FAIL_LEAF], (unsigned long long)b[HSSTAT_FAIL_INTERP],
		(unsigned long long)b[HSSTAT_FAIL_JIT], (unsigned long long)b[HSSTAT_FAIL_STUB]);
	for (k = 1; k < HS_CAUSE__COUNT; k++)
		fprintf(f, " bpf_fail_%s=%llu", cause_names[k],
			(unsigned long long)b[HSSTAT_CAUSE + k]);
	fputc('\n', f);
}

const struct runtime_ops hotspot_runtime_ops = {
	.name = "hotspot",
	.kind = UNWINDER_HOTSPOT,
	.frames_on_stack = 1, /* snapshots are walked by hs_jit_step */
	.init = hs_init,
	.free = hs_free,
	.file_detect = hs_file_detect,
	.file_free = hs_file_free,
	.attach = hs_attach,
	.poll = hs_poll,
	.note = hs_note,
	.jit_step = hs_jit_step,
	.symbolize = hs_symbolize,
	.label = hs_label,
	.thread_name = hs_thread_name,
	.detach = hs_detach,
	.release = hs_release,
	.print_stats = hs_print_stats,
};
