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
#include "runtime/plugin.h"
#include "sampler.skel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CACHE_ENTRIES (1u << 17)
#define RETRY_NS (50 * 1000000ULL)
#define VALIDATE_TRIES 5

struct php_state {
	struct plugin_maps maps; /* php_procs, php_stats */
	struct php_cache *cache;
	uint64_t frames;
	size_t live;
	struct plugin_check_stats checks;
	uint64_t jit_claims;
};

struct php_inst {
	struct plugin_entry e;
	struct php_process *proc;
	struct process_registry *reg;
	struct plugin_check check;
	struct plugin_jit jit;
	uint64_t buf_var, size_var;  /* opcache's dasm_buf and dasm_size in the process */
	int opcache_tried, jit_done;
};

static int php_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		    struct errmsg *err)
{
	struct php_state *s = xcalloc(1, sizeof(*s));
	int rc = plugin_maps_find(obj, "php_procs", "php_stats", "PHP", &s->maps, err);

	if (rc) {
		xfree(s);
		return rc;
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
	*data = plugin_file_copy(&f, sizeof(f));
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

static int validate(void *proc, struct errmsg *err)
{
	return php_proc_validate(proc, err);
}

static int script(void *proc, const char **out)
{
	return php_proc_script(proc, out);
}

/* No PHP code runs at start-up or in an idle FPM worker (validation waits); a worker gets its
 * first request, and so its script, when it gets it. */
static const struct plugin_check_ops check_ops = {
	.validate = validate,
	.script = script,
	.max_tries = VALIDATE_TRIES,
	.again_ns = RETRY_NS,
	.invalid_ns = RETRY_NS / 2,
	.script_ns = RETRY_NS,
	.max_script_tries = 0,
};

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
		fd = procmaps_open(in->e.pid, m, NULL);
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
	/* the same start with another end: the claim of that start is replaced */
	if (plugin_jit_claim(&in->jit, in->reg, in->e.pid, start, end, UNWINDER_PHP) > 0) {
		log_debug("php stacks of PID %d: JIT code at 0x%llx-0x%llx", in->e.pid,
			  (unsigned long long)start, (unsigned long long)end);
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
	in->e.pid = at->proc->pid;
	in->proc = p;
	in->reg = at->reg;
	plugin_publish(&s->maps, &in->e, php_proc_bpf(p));
	claim_jit(s, in, at->proc);
	s->live++;
	*out = in;
	return 1;
}

static int php_poll(void *state, void *inst, struct errmsg *err)
{
	struct php_state *s = state;
	struct php_inst *in = inst;
	int rc;

	if (!plugin_check_due(&in->check))
		return 1;
	if (in->reg && process_get(in->reg, in->e.pid))
		claim_jit(s, in, process_get(in->reg, in->e.pid));
	rc = plugin_check_poll(&in->check, &check_ops, in->proc, &s->checks, err);
	if (rc < 0)
		plugin_unpublish(&s->maps, &in->e);
	return rc;
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
		return plugin_special(out, (words[0] & FW_DATA_MASK) == PHP_MARK_TRUNCATED
					    ? "[php: truncated]" : "[php: unreadable frame]");
	if (tag != FW_TAG_PHP_FUNC || n < 2 || (words[1] >> FW_TAG_SHIFT) != FW_TAG_PHP_LINE)
		return plugin_special(out, "[php: unknown frame]");
	*used = 2;
	f = php_cache_get(s->cache, (uint32_t)pid, words[0] & FW_DATA_MASK,
			  (uint32_t)(words[1] >> 32) & 0xffff, (uint32_t)(words[1] >> 48) & 0xff,
			  in ? php_proc_mem(in->proc) : NULL, in ? php_proc_offsets(in->proc) : NULL);
	if (!f)
		return plugin_special(out, "[php: unknown function]");
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

	return plugin_check_label(&in->check, key, keylen, value, valuelen);
}

static void php_detach(void *state, void *inst)
{
	struct php_state *s = state;
	struct php_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
}

static void php_release(void *state, void *inst)
{
	struct php_state *s = state;
	struct php_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
	php_cache_forget_pid(s->cache, (uint32_t)in->e.pid);
	php_proc_free(in->proc);
	plugin_check_release(&in->check);
	xfree(in);
	if (s->live)
		s->live--;
}

static void php_print_stats(void *state, FILE *f)
{
	struct php_state *s = state;
	struct name_cache_stats cs;
	uint64_t b[PHPSTAT__COUNT];

	php_cache_stats(s->cache, &cs);
	runtime_read_counters(s->maps.stats_fd, b, PHPSTAT__COUNT);
	fprintf(f, "php: procs=%zu frames_noted=%llu cache_lookups=%llu cache_hits=%llu reads=%llu "
		"read_errors=%llu checksum_mismatches=%llu validations=%llu validation_retries=%llu "
		"failures=%llu jit_claims=%llu bpf_samples=%llu bpf_idle=%llu bpf_hooks=%llu "
		"bpf_frames=%llu bpf_errors=%llu bpf_truncated=%llu bpf_deferred=%llu bpf_jit=%llu "
		"bpf_walk_ns=%llu\n",
		s->live, (unsigned long long)s->frames, (unsigned long long)cs.lookups,
		(unsigned long long)cs.hits, (unsigned long long)cs.reads,
		(unsigned long long)cs.read_errors, (unsigned long long)cs.checksum_mismatches,
		(unsigned long long)s->checks.validations,
		(unsigned long long)s->checks.validation_retries,
		(unsigned long long)s->checks.failures, (unsigned long long)s->jit_claims,
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
	.file_free = plugin_file_free,
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
