/* python_runtime.c: the CPython runtime (python_runtime.h). Detection and offsets are in
 * python_proc.c, code objects and line tables in python_code.c, the BPF walker in
 * python.bpf.h. */
#include "runtime/python/python_runtime.h"
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "agent/process.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/python/python_code.h"
#include "runtime/python/python_proc.h"
#include "runtime/plugin.h"
#include "sampler.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CODE_CACHE_ENTRIES (1u << 17)
#define SCRIPT_RETRY_NS (100 * 1000000ULL)
#define SCRIPT_TRIES 100

struct py_state {
	struct plugin_maps maps;    /* py_procs, py_stats */
	int young_fd;               /* py_young_code (python.h), -1 without BPF */
	struct python_code_cache *cache;
	uint64_t frames;            /* Python frames noted */
	size_t live;                /* attached instances */
	struct plugin_check_stats checks;
};

struct py_inst {
	struct plugin_entry e;      /* in py_procs */
	struct python_proc *proc;
	struct plugin_check check;  /* python_proc_validate(), then the main script */
};

static int py_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		   struct errmsg *err)
{
	struct py_state *s = xcalloc(1, sizeof(*s));
	int rc = plugin_maps_find(obj, "py_procs", "py_stats", "CPython", &s->maps, err);

	if (rc) {
		xfree(s);
		return rc;
	}
	s->young_fd = -1;
	if (obj) {
		struct bpf_map *young = bpf_object__find_map_by_name(obj, "py_young_code");

		if (!young) {
			xfree(s);
			return errmsg_set(err, -ENOENT, "the BPF object has no py_young_code map");
		}
		s->young_fd = bpf_map__fd(young);
	}
	s->cache = python_code_cache_new(CODE_CACHE_ENTRIES);
	*state = s;
	return 0;
}

static void py_configure(const struct runtime_config *cfg, struct sampler_bpf *skel)
{
	skel->rodata->python_keep_eval_frames = cfg->keep_native ? 1 : 0;
}

static void py_free(void *state)
{
	struct py_state *s = state;

	if (!s)
		return;
	python_code_cache_free(s->cache);
	xfree(s);
}

static int py_file_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	struct python_file f;
	int rc = python_file_detect(e, path, &f);

	if (rc <= 0)
		return rc;
	*data = plugin_file_copy(&f, sizeof(f));
	return 1;
}

static int py_interp_ranges(void *data, struct unwind_range *out, int max)
{
	const struct python_file *f = data;
	int i;

	for (i = 0; i < f->neval && i < max; i++) {
		out[i].lo = f->eval_lo[i];
		out[i].hi = f->eval_hi[i];
	}
	return i;
}

static int validate(void *proc, struct errmsg *err)
{
	return python_proc_validate(proc, err);
}

static int script(void *proc, const char **out)
{
	return python_proc_script(proc, out);
}

/* Validation waits while the interpreter starts (tried again at the next poll). The main
 * script is known once it runs (a walk of every thread: not on every sample); an interactive
 * interpreter has none. */
static const struct plugin_check_ops check_ops = {
	.validate = validate,
	.script = script,
	.max_tries = PYTHON_VALIDATE_TRIES,
	.again_ns = 0,
	.invalid_ns = PYTHON_VALIDATE_RETRY_NS,
	.script_ns = SCRIPT_RETRY_NS,
	.max_script_tries = SCRIPT_TRIES,
};

/* Attach at once, before the interpreter is initialized: the walker then has the process
 * from its very first Python frame. The offsets are checked once the interpreter runs
 * (py_poll()); until then a wrong table could show unreadable frames, never wrong names: every
 * code object is type-checked when read. */
static int py_attach(void *state, void *data, const struct runtime_attach *at, void **out,
		     struct errmsg *err)
{
	struct py_state *s = state;
	struct py_inst *in;
	struct python_proc *p = NULL;
	int rc;

	rc = python_proc_attach(at->proc->pid, data, at->bias, &p, err);
	if (rc)
		return rc;
	in = xcalloc(1, sizeof(*in));
	in->e.pid = at->proc->pid;
	in->proc = p;
	rc = plugin_publish(&s->maps, &in->e, python_proc_bpf(p));
	if (rc) {
		rc = errmsg_set(err, rc, "cannot publish CPython process %d to BPF: %s", in->e.pid,
				strerror(-rc));
		python_proc_free(p);
		xfree(in);
		return rc;
	}
	s->live++;
	*out = in;
	return 1; /* validate from the sample stream */
}

static int py_poll(void *state, void *inst, struct errmsg *err)
{
	struct py_state *s = state;
	struct py_inst *in = inst;
	int rc = plugin_check_poll(&in->check, &check_ops, in->proc, &s->checks, err);

	if (rc < 0)
		plugin_unpublish(&s->maps, &in->e);
	return rc;
}

/* The code object of a frame: cached, else read from the process (p NULL: gone), else, when it
 * is gone or its address holds another one already, named from what the walker noted of it
 * in a young process (py_young_code, python.h). NULL when none of these has it. */
static const struct python_code *code_get(struct py_state *s, struct python_proc *p, int pid,
					  uint64_t addr, uint32_t checksum)
{
	struct py_code_key k = { .pid = (__u32)pid, .checksum = checksum, .addr = addr };
	struct py_code_refs r;
	struct python_code code;
	const struct python_code *c;

	c = python_code_cache_get(s->cache, (uint32_t)pid, addr, checksum,
				  p ? python_proc_mem(p) : NULL, p ? python_proc_offsets(p) : NULL,
				  p ? python_proc_types(p) : NULL);
	if (c || !p || s->young_fd < 0 || bpf_map_lookup_elem(s->young_fd, &k, &r))
		return c;
	if (python_code_from_refs(python_proc_mem(p), python_proc_offsets(p),
				  python_proc_types(p), &r, &code, NULL))
		return NULL;
	if (code.checksum != checksum) {
		python_code_release(&code);
		return NULL;
	}
	return python_code_cache_put(s->cache, (uint32_t)pid, addr, &code);
}

static void py_note(void *state, void *inst, int pid, const uint64_t *words, size_t n)
{
	struct py_state *s = state;
	struct py_inst *in = inst;
	struct python_proc *p = in->proc;
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		if ((words[i] >> FW_TAG_SHIFT) != FW_TAG_PYTHON ||
		    (words[i + 1] >> FW_TAG_SHIFT) != FW_TAG_PYTHON_INSTR)
			continue;
		code_get(s, p, pid, words[i] & FW_DATA_MASK,
			 (uint32_t)((words[i + 1] >> 32) & 0xffffff));
		s->frames++;
		i++;
	}
}

static const char *mark_name(uint64_t code)
{
	switch (code) {
	case PY_MARK_TRUNCATED:
		return "[python: truncated]";
	case PY_MARK_BAD_FRAME:
		return "[python: unreadable frame]";
	default:
		return "[python: no thread state]";
	}
}

static int py_symbolize(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			size_t *used, struct runtime_frame *out, int max)
{
	struct py_state *s = state;
	struct py_inst *in = inst;
	struct python_proc *p = in ? in->proc : NULL;
	uint64_t tag = words[0] >> FW_TAG_SHIFT;
	const struct python_code *c;
	uint32_t instr;
	int line;

	*used = 1;
	if (max < 1)
		return 0;
	if (tag == FW_TAG_PYTHON_MARK)
		return plugin_special(out, mark_name(words[0] & FW_DATA_MASK));
	if (tag != FW_TAG_PYTHON || n < 2 || (words[1] >> FW_TAG_SHIFT) != FW_TAG_PYTHON_INSTR)
		return plugin_special(out, "[python: unknown frame]");
	*used = 2;
	instr = (uint32_t)(words[1] & 0xffffffffu);
	/* Cached while the process lived; read now only if it still lives. */
	c = code_get(s, p, pid, words[0] & FW_DATA_MASK, (uint32_t)((words[1] >> 32) & 0xffffff));
	if (!c)
		return plugin_special(out, "[python: unknown code]");
	line = python_code_line(c, instr);
	memset(out, 0, sizeof(*out));
	out->name = c->qualname;
	out->file = c->filename;
	out->start_line = c->firstlineno;
	out->line = line < 0 ? c->firstlineno : line;
	out->kind = FRAME_PYTHON;
	return 1;
}

static int py_label(void *state, void *inst, char *key, size_t keylen, char *value,
		    size_t valuelen)
{
	struct py_inst *in = inst;

	return plugin_check_label(&in->check, key, keylen, value, valuelen);
}

static void py_detach(void *state, void *inst)
{
	struct py_state *s = state;
	struct py_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
}

static void py_release(void *state, void *inst)
{
	struct py_state *s = state;
	struct py_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
	python_code_cache_forget_pid(s->cache, (uint32_t)in->e.pid);
	python_proc_free(in->proc);
	plugin_check_release(&in->check);
	xfree(in);
	if (s->live)
		s->live--;
}

static void py_print_stats(void *state, FILE *f)
{
	struct py_state *s = state;
	struct name_cache_stats cs;
	uint64_t b[PYSTAT__COUNT];

	python_code_cache_stats(s->cache, &cs);
	runtime_read_counters(s->maps.stats_fd, b, PYSTAT__COUNT);
	fprintf(f, "python: procs=%zu frames_noted=%llu cache_lookups=%llu cache_hits=%llu "
		"code_reads=%llu read_errors=%llu checksum_mismatches=%llu young_named=%llu "
		"validations=%llu "
		"validation_retries=%llu failures=%llu bpf_samples=%llu bpf_no_tstate=%llu "
		"bpf_hooks=%llu bpf_frames=%llu bpf_errors=%llu bpf_truncated=%llu "
		"bpf_deferred=%llu bpf_walk_ns=%llu\n",
		s->live, (unsigned long long)s->frames, (unsigned long long)cs.lookups,
		(unsigned long long)cs.hits, (unsigned long long)cs.reads,
		(unsigned long long)cs.read_errors, (unsigned long long)cs.checksum_mismatches,
		(unsigned long long)cs.puts,
		(unsigned long long)s->checks.validations,
		(unsigned long long)s->checks.validation_retries,
		(unsigned long long)s->checks.failures, (unsigned long long)b[PYSTAT_SAMPLES],
		(unsigned long long)b[PYSTAT_NO_TSTATE], (unsigned long long)b[PYSTAT_HOOKS],
		(unsigned long long)b[PYSTAT_FRAMES], (unsigned long long)b[PYSTAT_ERRORS],
		(unsigned long long)b[PYSTAT_TRUNCATED], (unsigned long long)b[PYSTAT_DEFERRED],
		(unsigned long long)b[PYSTAT_WALK_NS]);
}

const struct runtime_ops python_runtime_ops = {
	.name = "python",
	.kind = UNWINDER_PYTHON,
	.init = py_init,
	.configure = py_configure,
	.free = py_free,
	.file_detect = py_file_detect,
	.interp_ranges = py_interp_ranges,
	.file_free = plugin_file_free,
	.attach = py_attach,
	.poll = py_poll,
	.note = py_note,
	.symbolize = py_symbolize,
	.label = py_label,
	.detach = py_detach,
	.release = py_release,
	.print_stats = py_print_stats,
};
