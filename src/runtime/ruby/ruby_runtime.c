/* ruby_runtime.c: CRuby as a runtime of the framework (ruby_runtime.h). Detection and the
 * process side are in ruby_proc.c, objects and names in ruby_sym.c, the BPF walker in
 * ruby.bpf.h. */
#include "runtime/ruby/ruby_runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/ruby/ruby_proc.h"
#include "runtime/ruby/ruby_sym.h"
#include "sampler.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CACHE_ENTRIES (1u << 17)
#define SCRIPT_RETRY_NS (50 * 1000000ULL)
#define SCRIPT_TRIES 200
#define VALIDATE_TRIES 5
#define VALIDATE_RETRY_NS (20 * 1000000ULL)
#define JIT_MIN_BYTES (1u << 20) /* YJIT reserves its code memory in one big mapping */

struct rb_state {
	int procs_fd;             /* rb_procs, or -1 (no BPF) */
	int stats_fd;             /* rb_stats, or -1 */
	struct ruby_cache *cache;
	uint64_t frames;          /* Ruby frames noted */
	size_t live;
	uint64_t validations, validation_retries, failures, jit_claims;
	char name[2 * RUBY_NAME_MAX + 8]; /* the last frame name symbolize() returned */
};

struct rb_inst {
	int pid;
	struct ruby_proc *proc;
	struct process_registry *reg;
	int published;
	int tls_pending;
	int verified;
	int tries;
	uint64_t next_try_ns;
	int script_tries;
	char *script;
	uint64_t jit_claimed[8][2]; /* the ranges claimed */
	int njit;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int rb_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		   struct errmsg *err)
{
	struct rb_state *s = xcalloc(1, sizeof(*s));

	s->procs_fd = s->stats_fd = -1;
	if (obj) {
		struct bpf_map *procs = bpf_object__find_map_by_name(obj, "rb_procs");
		struct bpf_map *stats = bpf_object__find_map_by_name(obj, "rb_stats");

		if (!procs || !stats) {
			xfree(s);
			return errmsg_set(err, -ENOENT, "the BPF object has no Ruby maps");
		}
		s->procs_fd = bpf_map__fd(procs);
		s->stats_fd = bpf_map__fd(stats);
	}
	s->cache = ruby_cache_new(CACHE_ENTRIES);
	*state = s;
	return 0;
}

static void rb_configure(const struct runtime_config *cfg, struct sampler_bpf *skel)
{
	skel->rodata->ruby_keep_vm_frames = cfg->keep_native ? 1 : 0;
}

static void rb_free(void *state)
{
	struct rb_state *s = state;

	if (!s)
		return;
	ruby_cache_free(s->cache);
	xfree(s);
}

static int rb_file_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	struct ruby_file f;
	int rc = ruby_file_detect(e, path, &f);

	if (rc <= 0)
		return rc;
	*data = xmalloc(sizeof(f));
	memcpy(*data, &f, sizeof(f));
	return 1;
}

static int rb_interp_ranges(void *data, struct unwind_range *out, int max)
{
	const struct ruby_file *f = data;
	int n = 0;

	if (n < max) {
		out[n].lo = f->exec_lo;
		out[n].hi = f->exec_hi;
		n++;
	}
	if (f->core_lo && n < max) {
		out[n].lo = f->core_lo;
		out[n].hi = f->core_hi;
		n++;
	}
	return n;
}

static void rb_file_free(void *data)
{
	xfree(data);
}

static void publish(struct rb_state *s, struct rb_inst *in)
{
	__u32 key = (__u32)in->pid;

	if (s->procs_fd < 0)
		return;
	if (bpf_map_update_elem(s->procs_fd, &key, ruby_proc_bpf(in->proc), BPF_ANY) == 0)
		in->published = 1;
}

static void unpublish(struct rb_state *s, struct rb_inst *in)
{
	if (in->published && s->procs_fd >= 0) {
		__u32 key = (__u32)in->pid;

		bpf_map_delete_elem(s->procs_fd, &key);
	}
	in->published = 0;
}

/* YJIT's code memory: a big anonymous executable mapping (named by the VM from 3.3 on). Its
 * code has no unwind data: the walker reports the Ruby frames from there on. */
static void claim_jit(struct rb_state *s, struct rb_inst *in, struct process *p)
{
	size_t i;
	int k;

	if (!in->reg)
		return;
	for (i = 0; i < p->maps.n; i++) {
		const struct procmaps_entry *m = &p->maps.v[i];
		int named = m->kind == PROCMAPS_SPECIAL && strstr(m->path, "[anon:Ruby");

		if (!(m->perms & PROCMAPS_X) ||
		    !(named || (m->kind == PROCMAPS_ANON && m->end - m->start >= JIT_MIN_BYTES)))
			continue;
		/* the same start with another end: the code memory grew (its protection
		 * changed page by page); the claim of that start is replaced */
		for (k = 0; k < in->njit && in->jit_claimed[k][0] != m->start; k++)
			;
		if (k < in->njit && in->jit_claimed[k][1] == m->end)
			continue;
		if (k == in->njit && in->njit == 8)
			continue;
		if (process_claim(in->reg, in->pid, m->start, m->end, UNWINDER_RUBY) == 0) {
			in->jit_claimed[k][0] = m->start;
			in->jit_claimed[k][1] = m->end;
			if (k == in->njit)
				in->njit++;
			s->jit_claims++;
		}
	}
}

static int rb_attach(void *state, void *data, const struct runtime_attach *at, void **out,
		     struct errmsg *err)
{
	struct rb_state *s = state;
	struct rb_inst *in;
	struct ruby_proc *p = NULL;
	int rc;

	rc = ruby_proc_attach(at->proc->pid, data, at->bias, &p, err);
	if (rc < 0 && rc != -EAGAIN)
		return rc;
	in = xcalloc(1, sizeof(*in));
	in->pid = at->proc->pid;
	in->proc = p;
	in->reg = at->reg;
	in->tls_pending = rc == -EAGAIN;
	publish(s, in);
	claim_jit(s, in, at->proc);
	s->live++;
	*out = in;
	return 1; /* validate and find the script from the sample stream */
}

static int rb_poll(void *state, void *inst, struct errmsg *err)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;
	const char *script;
	int rc;

	if (now_ns() < in->next_try_ns)
		return 1;
	if (in->tls_pending) {
		rc = ruby_proc_tls(in->proc);
		if (rc == -EAGAIN)
			return 1;
		in->tls_pending = 0;
		if (rc == 0)
			publish(s, in);
	}
	if (!in->verified) {
		s->validations++;
		rc = ruby_proc_validate(in->proc, err);
		if (rc == -EAGAIN) {
			in->next_try_ns = now_ns() + VALIDATE_RETRY_NS;
			return 1; /* the VM is still starting */
		}
		if (rc == -EINVAL && ++in->tries < VALIDATE_TRIES) {
			/* a frame pushed or popped while we read looks like a bad offset once */
			s->validation_retries++;
			in->next_try_ns = now_ns() + VALIDATE_RETRY_NS;
			return 1;
		}
		if (rc) {
			s->failures++;
			unpublish(s, in);
			return rc;
		}
		in->verified = 1;
	}
	if (ruby_proc_script(in->proc, &script) == 0) {
		in->script = xstrdup(script);
		return 0;
	}
	/* the main thread must hold the VM lock when we look */
	if (++in->script_tries >= SCRIPT_TRIES)
		return 0;
	in->next_try_ns = now_ns() + SCRIPT_RETRY_NS;
	return 1;
}

static void rb_maps_changed(void *state, void *inst, struct process *proc)
{
	claim_jit(state, inst, proc);
}

static uint32_t info_checksum(uint64_t info)
{
	return (uint32_t)((info >> 32) & 0xffffff);
}

static uint32_t info_pos(uint64_t info)
{
	return (uint32_t)(info & 0xffffffffu);
}

static uint64_t tag_of(uint64_t w)
{
	return w >> FW_TAG_SHIFT;
}

static void rb_note(void *state, void *inst, int pid, const uint64_t *words, size_t n)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;
	struct ruby_mem *rm = ruby_proc_mem(in->proc);
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		uint64_t t = tag_of(words[i]), addr = words[i] & FW_DATA_MASK;

		if (tag_of(words[i + 1]) != FW_TAG_RUBY_INFO)
			continue;
		if (t == FW_TAG_RUBY_ISEQ) {
			ruby_cache_iseq(s->cache, (uint32_t)pid, addr, info_checksum(words[i + 1]),
					rm);
			if (i + 2 < n && tag_of(words[i + 2]) == FW_TAG_RUBY_CME) {
				ruby_cache_cme(s->cache, (uint32_t)pid,
					       words[i + 2] & 0xffffffffffffULL,
					       (uint32_t)((words[i + 2] >> 48) & 0xff), 0xff, rm);
				i++;
			}
		} else if (t == FW_TAG_RUBY_CFUNC) {
			ruby_cache_cme(s->cache, (uint32_t)pid, addr, info_checksum(words[i + 1]),
				       0xffffff, rm);
		} else {
			continue;
		}
		s->frames++;
		i++;
	}
}

static int special(struct runtime_frame *out, const char *name)
{
	memset(out, 0, sizeof(*out));
	out->name = name;
	out->kind = FRAME_SPECIAL;
	return 1;
}

static int rb_symbolize(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			size_t *used, struct runtime_frame *out, int max)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;
	struct ruby_mem *rm = in ? ruby_proc_mem(in->proc) : NULL;
	uint64_t t = tag_of(words[0]), addr = words[0] & FW_DATA_MASK;
	const struct ruby_iseq *is = NULL;
	const struct ruby_cme *cme = NULL;
	struct ruby_cme copy;
	char klass[RUBY_NAME_MAX];

	*used = 1;
	if (max < 1)
		return 0;
	if (t == FW_TAG_RUBY_MARK)
		return special(out, (words[0] & FW_DATA_MASK) == RB_MARK_TRUNCATED
					    ? "[ruby: truncated]" : "[ruby: unreadable frame]");
	if ((t != FW_TAG_RUBY_ISEQ && t != FW_TAG_RUBY_CFUNC) || n < 2 ||
	    tag_of(words[1]) != FW_TAG_RUBY_INFO)
		return special(out, "[ruby: unknown frame]");
	*used = 2;
	memset(out, 0, sizeof(*out));
	out->kind = FRAME_PYTHON;
	if (t == FW_TAG_RUBY_CFUNC) {
		cme = ruby_cache_cme(s->cache, (uint32_t)pid, addr, info_checksum(words[1]), 0xffffff,
				     rm);
		if (!cme || ruby_frame_name(NULL, cme, s->name, sizeof(s->name)) < 0)
			return special(out, "[ruby: C function]");
		out->name = s->name;
		return 1;
	}
	if (n > 2 && tag_of(words[2]) == FW_TAG_RUBY_CME) {
		*used = 3;
		cme = ruby_cache_cme(s->cache, (uint32_t)pid, words[2] & 0xffffffffffffULL,
				     (uint32_t)((words[2] >> 48) & 0xff), 0xff, rm);
		if (cme) {
			/* the iseq's lookup may evict it: keep what the name needs */
			copy = *cme;
			snprintf(klass, sizeof(klass), "%s", cme->klass ? cme->klass : "");
			copy.klass = cme->klass ? klass : NULL;
			copy.name = NULL;
			cme = &copy;
		}
	}
	is = ruby_cache_iseq(s->cache, (uint32_t)pid, addr, info_checksum(words[1]), rm);
	if (!is)
		return special(out, "[ruby: unknown iseq]");
	ruby_frame_name(is, cme, s->name, sizeof(s->name));
	out->name = s->name;
	out->file = is->path;
	out->start_line = is->first_lineno;
	out->line = ruby_iseq_line(is, info_pos(words[1]));
	return 1;
}

static int rb_label(void *state, void *inst, char *key, size_t keylen, char *value,
		    size_t valuelen)
{
	struct rb_inst *in = inst;

	if (!in->script)
		return 0;
	snprintf(key, keylen, "script");
	snprintf(value, valuelen, "%s", in->script);
	return 1;
}

static void rb_detach(void *state, void *inst)
{
	unpublish(state, inst);
}

static void rb_release(void *state, void *inst)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;

	unpublish(s, in);
	ruby_cache_forget_pid(s->cache, (uint32_t)in->pid);
	ruby_proc_free(in->proc);
	xfree(in->script);
	xfree(in);
	if (s->live)
		s->live--;
}

static void bpf_counters(int fd, uint64_t out[RBSTAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	__u32 k;
	int c;

	memset(out, 0, sizeof(uint64_t) * RBSTAT__COUNT);
	if (fd < 0 || ncpu <= 0)
		return;
	vals = xcalloc((size_t)ncpu, sizeof(*vals));
	for (k = 0; k < RBSTAT__COUNT; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	xfree(vals);
}

static void rb_print_stats(void *state, FILE *f)
{
	struct rb_state *s = state;
	struct ruby_cache_stats cs;
	uint64_t b[RBSTAT__COUNT];

	ruby_cache_stats(s->cache, &cs);
	bpf_counters(s->stats_fd, b);
	fprintf(f, "ruby: procs=%zu frames_noted=%llu cache_lookups=%llu cache_hits=%llu "
		"reads=%llu read_errors=%llu checksum_mismatches=%llu validations=%llu "
		"validation_retries=%llu failures=%llu jit_claims=%llu bpf_samples=%llu "
		"bpf_no_ec=%llu bpf_hooks=%llu bpf_frames=%llu bpf_errors=%llu bpf_truncated=%llu "
		"bpf_deferred=%llu bpf_jit=%llu bpf_walk_ns=%llu\n",
		s->live, (unsigned long long)s->frames, (unsigned long long)cs.lookups,
		(unsigned long long)cs.hits, (unsigned long long)cs.reads,
		(unsigned long long)cs.read_errors, (unsigned long long)cs.checksum_mismatches,
		(unsigned long long)s->validations, (unsigned long long)s->validation_retries,
		(unsigned long long)s->failures, (unsigned long long)s->jit_claims,
		(unsigned long long)b[RBSTAT_SAMPLES], (unsigned long long)b[RBSTAT_NO_EC],
		(unsigned long long)b[RBSTAT_HOOKS], (unsigned long long)b[RBSTAT_FRAMES],
		(unsigned long long)b[RBSTAT_ERRORS], (unsigned long long)b[RBSTAT_TRUNCATED],
		(unsigned long long)b[RBSTAT_DEFERRED], (unsigned long long)b[RBSTAT_JIT],
		(unsigned long long)b[RBSTAT_WALK_NS]);
}

const struct runtime_ops ruby_runtime_ops = {
	.name = "ruby",
	.kind = UNWINDER_RUBY,
	.init = rb_init,
	.configure = rb_configure,
	.free = rb_free,
	.file_detect = rb_file_detect,
	.interp_ranges = rb_interp_ranges,
	.file_free = rb_file_free,
	.attach = rb_attach,
	.poll = rb_poll,
	.note = rb_note,
	.maps_changed = rb_maps_changed,
	.symbolize = rb_symbolize,
	.label = rb_label,
	.detach = rb_detach,
	.release = rb_release,
	.print_stats = rb_print_stats,
};
