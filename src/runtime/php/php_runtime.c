/* php_runtime.c: PHP as a runtime of the framework (php_runtime.h). Detection, functions and
 * the user-space walker are in php_proc.c, the BPF walker in php.bpf.h. */
#include "runtime/php/php_runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/php/php_proc.h"
#include "sampler.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CACHE_ENTRIES (1u << 17)
#define RETRY_NS (50 * 1000000ULL)
#define VALIDATE_TRIES 5
#define MAX_JIT 8

struct php_state {
	int procs_fd, stats_fd;
	struct php_cache *cache;
	uint64_t frames;
	size_t live;
	uint64_t validations, validation_retries, failures, jit_claims;
};

struct php_inst {
	int pid;
	struct php_process *proc;
	struct process_registry *reg;
	int published, verified, tries, script_tries;
	uint64_t next_try_ns;
	char *script;
	uint64_t jit_claimed[MAX_JIT][2]; /* the ranges claimed */
	int njit;
	uint64_t buf_var, size_var;  /* opcache's dasm_buf and dasm_size in the process */
	int opcache_tried, jit_done;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int php_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		    struct errmsg *err)
{
	struct php_state *s = xcalloc(1, sizeof(*s));

	s->procs_fd = s->stats_fd = -1;
	if (obj) {
		struct bpf_map *procs = bpf_object__find_map_by_name(obj, "php_procs");
		struct bpf_map *stats = bpf_object__find_map_by_name(obj, "php_stats");

		if (!procs || !stats) {
			xfree(s);
			return errmsg_set(err, -ENOENT, "the BPF object has no PHP maps");
		}
		s->procs_fd = bpf_map__fd(procs);
		s->stats_fd = bpf_map__fd(stats);
	}
	s->cache = php_cache_new(CACHE_ENTRIES);
	*state = s;
	return 0;
}

static void php_configure(const struct runtime_config *cfg, struct sampler_bpf *skel)
{
	skel->rodata->php_keep_vm_frames = cfg->keep_native ? 1 : 0;
}

static void php_free(void *state)
{
	struct php_state *s = state;

	if (!s)
		return;
	php_cache_free(s->cache);
	xfree(s);
}

static int php_file_detect_op(void *state, struct elf_file *e, const char *path, void **data)
{
	struct php_file f;
	int rc = php_file_detect(e, path, &f);

	if (rc <= 0)
		return rc;
	*data = xmalloc(sizeof(f));
	memcpy(*data, &f, sizeof(f));
	return 1;
}

static int php_interp_ranges(void *data, struct unwind_range *out, int max)
{
	const struct php_file *f = data;

	if (max < 1)
		return 0;
	out[0].lo = f->exec_lo;
	out[0].hi = f->exec_hi;
	return 1;
}

static void php_file_free(void *data)
{
	xfree(data);
}

static void publish(struct php_state *s, struct php_inst *in)
{
	__u32 key = (__u32)in->pid;

	if (s->procs_fd >= 0 &&
	    bpf_map_update_elem(s->procs_fd, &key, php_proc_bpf(in->proc), BPF_ANY) == 0)
		in->published = 1;
}

static void unpublish(struct php_state *s, struct php_inst *in)
{
	if (in->published && s->procs_fd >= 0) {
		__u32 key = (__u32)in->pid;

		bpf_map_delete_elem(s->procs_fd, &key);
	}
	in->published = 0;
}

/* opcache.so's JIT buffer globals, decoded once per instance: 1 when known. */
static int opcache_globals(struct php_inst *in, struct process *p)
{
	size_t i;

	if (in->buf_var)
		return 1;
	if (in->opcache_tried)
		return 0;
	for (i = 0; i < p->maps.n; i++) {
		const struct procmaps_entry *m = &p->maps.v[i];
		struct elf_file *e = NULL;
		uint64_t buf, size;
		int fd;

		if (m->kind != PROCMAPS_FILE || strcmp(strrchr(m->path, '/') ? strrchr(m->path, '/') + 1
									     : m->path, "opcache.so"))
			continue;
		in->opcache_tried = 1;
		fd = procmaps_open(in->pid, m, NULL);
		if (fd < 0 || elf_open_fd(fd, m->path, &e, NULL) < 0)
			return 0;
		if (php_opcache_jit_globals(e, &buf, &size) == 0) {
			uint64_t bias = elf_load_bias(e, m->start, m->offset);

			in->buf_var = buf + bias;
			in->size_var = size + bias;
		}
		elf_close(e);
		return in->buf_var != 0;
	}
	return 0;
}

/* opcache's JIT buffer: JIT code runs on execute_ex's stack frame, the walker resumes the unwind
 * there. The buffer is opcache's globals dasm_buf / dasm_size once its JIT started: claimed
 * whole (its pages turn writable while opcache compiles into them). Without those globals,
 * the executable memory of its shared segment ("/dev/zero (deleted)", or anonymous) as the
 * maps show it now. */
static void claim(struct php_state *s, struct php_inst *in, uint64_t start, uint64_t end)
{
	int k;

	for (k = 0; k < in->njit && in->jit_claimed[k][0] != start; k++)
		;
	if (k < in->njit && in->jit_claimed[k][1] == end)
		return;
	if (k == in->njit && in->njit == MAX_JIT)
		return;
	/* the same start with another end: the claim of that start is replaced */
	if (process_claim(in->reg, in->pid, start, end, UNWINDER_PHP) == 0) {
		log_debug("php stacks of PID %d: JIT code at 0x%llx-0x%llx", in->pid,
			  (unsigned long long)start, (unsigned long long)end);
		in->jit_claimed[k][0] = start;
		in->jit_claimed[k][1] = end;
		if (k == in->njit)
			in->njit++;
		s->jit_claims++;
	}
}

static void claim_jit(struct php_state *s, struct php_inst *in, struct process *p)
{
	struct procmem *m = php_proc_mem(in->proc);
	uint64_t buf = 0, size = 0;
	size_t i;

	if (!in->reg || !php_proc_bpf(in->proc)->jit_return || in->jit_done)
		return;
	if (opcache_globals(in, p)) {
		if (procmem_u64(m, in->buf_var, &buf) == 0 && procmem_u64(m, in->size_var, &size) == 0 &&
		    buf && size && size < (1ULL << 34)) {
			claim(s, in, buf, buf + size);
			in->jit_done = 1;
		}
		return;
	}
	for (i = 0; i < p->maps.n; i++) {
		const struct procmaps_entry *e = &p->maps.v[i];
		int jit = e->kind == PROCMAPS_ANON ||
			  (e->kind == PROCMAPS_FILE && !strcmp(e->path, "/dev/zero"));

		if ((e->perms & PROCMAPS_X) && jit)
			claim(s, in, e->start, e->end);
	}
}

static int php_attach(void *state, void *data, const struct runtime_attach *at, void **out,
		      struct errmsg *err)
{
	struct php_state *s = state;
	struct php_inst *in;
	struct php_process *p = NULL;
	int rc;

	rc = php_proc_attach(at->proc->pid, data, at->bias, &p, err);
	if (rc < 0)
		return rc;
	in = xcalloc(1, sizeof(*in));
	in->pid = at->proc->pid;
	in->proc = p;
	in->reg = at->reg;
	publish(s, in);
	claim_jit(s, in, at->proc);
	s->live++;
	*out = in;
	return 1;
}

static int php_poll(void *state, void *inst, struct errmsg *err)
{
	struct php_state *s = state;
	struct php_inst *in = inst;
	const char *script;
	int rc;

	if (now_ns() < in->next_try_ns)
		return 1;
	if (in->reg && process_get(in->reg, in->pid))
		claim_jit(s, in, process_get(in->reg, in->pid));
	if (!in->verified) {
		s->validations++;
		rc = php_proc_validate(in->proc, err);
		if (rc == -EAGAIN) {
			/* no PHP code runs now (start-up, an idle FPM worker): later */
			in->next_try_ns = now_ns() + RETRY_NS;
			return 1;
		}
		if (rc == -EINVAL && ++in->tries < VALIDATE_TRIES) {
			s->validation_retries++;
			in->next_try_ns = now_ns() + RETRY_NS / 2;
			return 1;
		}
		if (rc) {
			s->failures++;
			unpublish(s, in);
			return rc;
		}
		in->verified = 1;
	}
	if (php_proc_script(in->proc, &script) == 0) {
		in->script = xstrdup(script);
		return 0;
	}
	in->next_try_ns = now_ns() + RETRY_NS;
	return 1; /* an FPM worker gets its first request when it gets it */
}

static void php_maps_changed(void *state, void *inst, struct process *proc)
{
	claim_jit(state, inst, proc);
}

static void php_note(void *state, void *inst, int pid, const uint64_t *words, size_t n)
{
	struct php_state *s = state;
	struct php_inst *in = inst;
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		if ((words[i] >> FW_TAG_SHIFT) != FW_TAG_PHP_FUNC ||
		    (words[i + 1] >> FW_TAG_SHIFT) != FW_TAG_PHP_LINE)
			continue;
		php_cache_get(s->cache, (uint32_t)pid, words[i] & FW_DATA_MASK,
			      (uint32_t)(words[i + 1] >> 32) & 0xffff,
			      (uint32_t)(words[i + 1] >> 48) & 0xff, php_proc_mem(in->proc),
			      php_proc_offsets(in->proc));
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

static int php_symbolize(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			 size_t *used, struct runtime_frame *out, int max)
{
	struct php_state *s = state;
	struct php_inst *in = inst;
	uint64_t tag = words[0] >> FW_TAG_SHIFT;
	const struct php_func *f;

	*used = 1;
	if (max < 1)
		return 0;
	if (tag == FW_TAG_PHP_MARK)
		return special(out, (words[0] & FW_DATA_MASK) == PHP_MARK_TRUNCATED
					    ? "[php: truncated]" : "[php: unreadable frame]");
	if (tag != FW_TAG_PHP_FUNC || n < 2 || (words[1] >> FW_TAG_SHIFT) != FW_TAG_PHP_LINE)
		return special(out, "[php: unknown frame]");
	*used = 2;
	f = php_cache_get(s->cache, (uint32_t)pid, words[0] & FW_DATA_MASK,
			  (uint32_t)(words[1] >> 32) & 0xffff, (uint32_t)(words[1] >> 48) & 0xff,
			  in ? php_proc_mem(in->proc) : NULL, in ? php_proc_offsets(in->proc) : NULL);
	if (!f)
		return special(out, "[php: unknown function]");
	memset(out, 0, sizeof(*out));
	out->name = f->name;
	out->file = f->file;
	out->start_line = f->line_start;
	out->line = f->file ? (int64_t)(words[1] & 0xffffffffu) : 0;
	out->kind = FRAME_PYTHON;
	return 1;
}

static int php_label(void *state, void *inst, char *key, size_t keylen, char *value,
		     size_t valuelen)
{
	struct php_inst *in = inst;

	if (!in->script)
		return 0;
	snprintf(key, keylen, "script");
	snprintf(value, valuelen, "%s", in->script);
	return 1;
}

static void php_detach(void *state, void *inst)
{
	unpublish(state, inst);
}

static void php_release(void *state, void *inst)
{
	struct php_state *s = state;
	struct php_inst *in = inst;

	unpublish(s, in);
	php_cache_forget_pid(s->cache, (uint32_t)in->pid);
	php_proc_free(in->proc);
	xfree(in->script);
	xfree(in);
	if (s->live)
		s->live--;
}

static void bpf_counters(int fd, uint64_t out[PHPSTAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	__u32 k;
	int c;

	memset(out, 0, sizeof(uint64_t) * PHPSTAT__COUNT);
	if (fd < 0 || ncpu <= 0)
		return;
	vals = xcalloc((size_t)ncpu, sizeof(*vals));
	for (k = 0; k < PHPSTAT__COUNT; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	xfree(vals);
}

static void php_print_stats(void *state, FILE *f)
{
	struct php_state *s = state;
	struct php_cache_stats cs;
	uint64_t b[PHPSTAT__COUNT];

	php_cache_stats(s->cache, &cs);
	bpf_counters(s->stats_fd, b);
	fprintf(f, "php: procs=%zu frames_noted=%llu cache_lookups=%llu cache_hits=%llu reads=%llu "
		"read_errors=%llu checksum_mismatches=%llu validations=%llu validation_retries=%llu "
		"failures=%llu jit_claims=%llu bpf_samples=%llu bpf_idle=%llu bpf_hooks=%llu "
		"bpf_frames=%llu bpf_errors=%llu bpf_truncated=%llu bpf_deferred=%llu bpf_jit=%llu "
		"bpf_walk_ns=%llu\n",
		s->live, (unsigned long long)s->frames, (unsigned long long)cs.lookups,
		(unsigned long long)cs.hits, (unsigned long long)cs.reads,
		(unsigned long long)cs.read_errors, (unsigned long long)cs.checksum_mismatches,
		(unsigned long long)s->validations, (unsigned long long)s->validation_retries,
		(unsigned long long)s->failures, (unsigned long long)s->jit_claims,
		(unsigned long long)b[PHPSTAT_SAMPLES], (unsigned long long)b[PHPSTAT_IDLE],
		(unsigned long long)b[PHPSTAT_HOOKS], (unsigned long long)b[PHPSTAT_FRAMES],
		(unsigned long long)b[PHPSTAT_ERRORS], (unsigned long long)b[PHPSTAT_TRUNCATED],
		(unsigned long long)b[PHPSTAT_DEFERRED], (unsigned long long)b[PHPSTAT_JIT],
		(unsigned long long)b[PHPSTAT_WALK_NS]);
}

const struct runtime_ops php_runtime_ops = {
	.name = "php",
	.kind = UNWINDER_PHP,
	.init = php_init,
	.configure = php_configure,
	.free = php_free,
	.file_detect = php_file_detect_op,
	.interp_ranges = php_interp_ranges,
	.file_free = php_file_free,
	.attach = php_attach,
	.poll = php_poll,
	.note = php_note,
	.maps_changed = php_maps_changed,
	.symbolize = php_symbolize,
	.label = php_label,
	.detach = php_detach,
	.release = php_release,
	.print_stats = php_print_stats,
};
