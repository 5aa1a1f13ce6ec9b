/* python_tracker.c: per-process CPython state for the sampler: detection, the py_procs BPF
 * map, eager code-object caching and frame symbolization (python_tracker.h). */
#include "agent/python_tracker.h"
#include "agent/elf.h"
#include "agent/python.h"
#include "agent/unwind_table.h"
#include "agent/python_code.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define RETRY_NS (200 * 1000000ULL) /* between detection attempts of a starting interpreter */
#define MAX_RETRIES 50

enum pstate { P_NOT_PYTHON = 0, P_PYTHON, P_PENDING, P_FAILED, P_EXITED };

struct pentry {
	int pid;
	enum pstate state;
	struct python_proc *proc;
	char *why;
	char *script;
	char version[32];
	uint64_t next_try_ns;
	int tries;
};

struct python_tracker {
	int map_fd;
	struct u64map index; /* pid + 1 -> entry index + 1 */
	struct pentry *v;
	size_t n, cap;
	struct python_code_cache *cache;
	uint64_t frames;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct python_tracker *python_tracker_new(int py_procs_fd)
{
	struct python_tracker *t = xcalloc(1, sizeof(*t));

	t->map_fd = py_procs_fd;
	u64map_init(&t->index);
	t->cache = python_code_cache_new(1 << 17);
	return t;
}

static void entry_clear(struct python_tracker *t, struct pentry *e)
{
	if (e->proc && t->map_fd >= 0) {
		__u32 key = (__u32)e->pid;

		bpf_map_delete_elem(t->map_fd, &key);
	}
	python_proc_free(e->proc);
	e->proc = NULL;
	xfree(e->why);
	e->why = NULL;
}

void python_tracker_free(struct python_tracker *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++) {
		entry_clear(t, &t->v[i]);
		xfree(t->v[i].script);
	}
	xfree(t->v);
	u64map_release(&t->index);
	python_code_cache_free(t->cache);
	xfree(t);
}

static struct pentry *find(struct python_tracker *t, int pid, int create)
{
	uint64_t *slot = u64map_get(&t->index, (uint64_t)pid + 1);
	struct pentry *e;

	if (slot)
		return &t->v[*slot - 1];
	if (!create)
		return NULL;
	ALLOC_GROW(t->v, t->n + 1, t->cap);
	e = &t->v[t->n++];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	u64map_put(&t->index, (uint64_t)pid + 1, t->n);
	return e;
}

static int detect(struct python_tracker *t, struct pentry *e)
{
	struct errmsg err = { { 0 } };
	const char *script;
	int rc;

	rc = python_proc_open(e->pid, &e->proc, &err);
	e->tries++;
	if (rc == 0) {
		e->state = P_PYTHON;
		snprintf(e->version, sizeof(e->version), "%s", python_proc_version(e->proc));
		if (t->map_fd >= 0) {
			__u32 key = (__u32)e->pid;

			if (bpf_map_update_elem(t->map_fd, &key, python_proc_bpf(e->proc), BPF_ANY)) {
				rc = -errno;
				e->why = xasprintf("cannot publish CPython process %d to BPF: %s",
						   e->pid, strerror(errno));
				e->state = P_FAILED;
				python_proc_free(e->proc);
				e->proc = NULL;
				return rc;
			}
		}
		if (!e->script && python_proc_script(e->proc, &script) == 0)
			e->script = xstrdup(script);
		return 1;
	}
	if (rc == -ENOENT || rc == -ESRCH) {
		e->state = P_NOT_PYTHON;
		return 0;
	}
	if (rc == -EAGAIN && e->tries < MAX_RETRIES) {
		e->state = P_PENDING;
		e->next_try_ns = now_ns() + RETRY_NS;
		return 0;
	}
	e->state = P_FAILED;
	e->why = xasprintf("%s", err.msg[0] ? err.msg : "cannot read the interpreter");
	return rc;
}

int python_tracker_add_pid(struct python_tracker *t, int pid, const char **why)
{
	struct pentry *e = find(t, pid, 1);
	int rc;

	if (e->state == P_EXITED || e->state == P_PYTHON)
		python_code_cache_forget_pid(t->cache, (uint32_t)pid);
	entry_clear(t, e);
	xfree(e->script);
	e->script = NULL;
	e->tries = 0;
	rc = detect(t, e);
	if (rc < 0 && why)
		*why = e->why;
	return rc;
}

void python_tracker_forget_pid(struct python_tracker *t, int pid)
{
	struct pentry *e = find(t, pid, 0);
	size_t i;

	if (!e)
		return;
	/* The profile with this pid's last samples is built: nothing of it is needed now. */
	entry_clear(t, e);
	xfree(e->script);
	python_code_cache_forget_pid(t->cache, (uint32_t)pid);
	i = (size_t)(e - t->v);
	u64map_remove(&t->index, (uint64_t)pid + 1);
	if (i != t->n - 1) {
		t->v[i] = t->v[t->n - 1];
		u64map_put(&t->index, (uint64_t)t->v[i].pid + 1, i + 1);
	}
	t->n--;
}

static struct python_proc *live_proc(struct python_tracker *t, int pid, const char **why)
{
	struct pentry *e = find(t, pid, 0);

	if (!e)
		return NULL;
	if (e->state == P_PENDING && now_ns() >= e->next_try_ns &&
	    detect(t, e) < 0 && why)
		*why = e->why;
	if (e->state == P_PYTHON && !e->script) {
		const char *script;

		if (python_proc_script(e->proc, &script) == 0)
			e->script = xstrdup(script);
	}
	return e->state == P_PYTHON ? e->proc : NULL;
}

const char *python_tracker_note_sample(struct python_tracker *t, int pid, const uint64_t *words,
				       size_t n)
{
	const char *why = NULL;
	struct python_proc *p = live_proc(t, pid, &why);
	size_t i;

	if (!p)
		return why;
	for (i = 0; i + 1 < n; i++) {
		uint64_t tag = words[i] >> FW_TAG_SHIFT;

		if (tag != FW_TAG_PYTHON || (words[i + 1] >> FW_TAG_SHIFT) != FW_TAG_PYTHON_INSTR)
			continue;
		python_code_cache_get(t->cache, (uint32_t)pid, words[i] & FW_DATA_MASK,
				      (uint32_t)((words[i + 1] >> 32) & 0xffffff),
				      python_proc_mem(p), python_proc_offsets(p),
				      python_proc_types(p));
		t->frames++;
		i++;
	}
	return NULL;
}

int python_tracker_symbolize(struct python_tracker *t, int pid, uint64_t w0, uint64_t w1,
			     struct python_tracker_sym *out)
{
	struct pentry *e = find(t, pid, 0);
	struct python_proc *p = e && e->state == P_PYTHON ? e->proc : NULL;
	const struct python_code *c;
	uint32_t instr = (uint32_t)(w1 & 0xffffffffu);

	c = python_code_cache_get(t->cache, (uint32_t)pid, w0 & FW_DATA_MASK,
				  (uint32_t)((w1 >> 32) & 0xffffff), p ? python_proc_mem(p) : NULL,
				  p ? python_proc_offsets(p) : NULL, p ? python_proc_types(p) : NULL);
	if (!c)
		return -ENOENT;
	out->qualname = c->qualname;
	out->filename = c->filename;
	out->firstlineno = c->firstlineno;
	out->line = python_code_line(c, instr);
	if (out->line < 0)
		out->line = c->firstlineno;
	return 0;
}

const char *python_tracker_script(struct python_tracker *t, int pid)
{
	struct pentry *e;

	live_proc(t, pid, NULL);
	e = find(t, pid, 0);
	return e ? e->script : NULL;
}

const char *python_tracker_version(struct python_tracker *t, int pid)
{
	struct pentry *e = find(t, pid, 0);

	return e && e->version[0] ? e->version : NULL;
}

void python_tracker_get_stats(const struct python_tracker *t, struct python_tracker_stats *st)
{
	struct python_code_cache_stats cs;
	size_t i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < t->n; i++)
		st->procs += t->v[i].state == P_PYTHON;
	python_code_cache_stats(t->cache, &cs);
	st->frames = t->frames;
	st->cache_lookups = cs.lookups;
	st->cache_hits = cs.hits;
	st->code_reads = cs.reads;
	st->read_errors = cs.read_errors;
	st->checksum_mismatches = cs.checksum_mismatches;
}

int python_tracker_interp_ranges(void *ctx, struct elf_file *e, const char *path,
				 struct unwind_range *out, int max)
{
	struct elf_section_info sec;
	uint64_t lo[2], hi[2];
	int n, i;

	(void)ctx;
	if (!python_is_interpreter_path(path, NULL, NULL) &&
	    elf_section_info(e, ".PyRuntime", &sec) < 0)
		return 0;
	n = python_eval_ranges(e, lo, hi);
	for (i = 0; i < n && i < max; i++) {
		out[i].lo = lo[i];
		out[i].hi = hi[i];
	}
	return i;
}

void python_tracker_bpf_stats(const struct bpf_map *py_stats, uint64_t out[PYSTAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus(), fd = py_stats ? bpf_map__fd(py_stats) : -1;
	uint64_t *vals;
	__u32 k;
	int c;

	memset(out, 0, sizeof(uint64_t) * PYSTAT__COUNT);
	if (fd < 0 || ncpu <= 0)
		return;
	vals = xcalloc((size_t)ncpu, sizeof(*vals));
	for (k = 0; k < PYSTAT__COUNT; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	xfree(vals);
}
