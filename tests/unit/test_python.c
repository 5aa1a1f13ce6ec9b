/* test_python.c: CPython support. Line-table decoders against tables and lines dumped by every
 * installed interpreter; the user-space walker, script label and offset checks against live
 * interpreters (tests/helpers/python/stack.py); the 3.14 layout on a hand-built memory image;
 * _Py_DebugOffsets parsing. Interpreters that are not installed are skipped loudly. */
#include "runtime/python/python_proc.h"
#include "runtime/python/python_code.h"
#include "runtime/procmem.h"
#include "runtime/python/python_offsets.h"
#include "runtime/python/python_runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "profile/profile.h"
#include "runtime/runtime.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "child_cpu.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const interpreters[] = {
	"/root/.pyenv/versions/3.8.18/bin/python3.8",
	"/root/.pyenv/versions/3.9.18/bin/python3.9",
	"/root/.pyenv/versions/3.10.13/bin/python3.10",
	"/root/.pyenv/versions/3.11.7/bin/python3.11",
	"/root/.pyenv/versions/3.12.1/bin/python3.12",
	"/root/.pyenv/versions/3.13.0/bin/python3.13",
	"/usr/bin/python3.11",
};
#define NINTERP (sizeof(interpreters) / sizeof(interpreters[0]))

static int exists(const char *path)
{
	return access(path, X_OK) == 0;
}

static int hexval(int c)
{
	return c >= 'a' ? c - 'a' + 10 : c - '0';
}

/* --- line tables ------------------------------------------------------------------------ */

static void check_linetables(const char *py)
{
	char cmd[1024], *line = NULL;
	size_t cap = 0, tablen = 0;
	uint8_t *tab = xmalloc(1 << 20);
	int minor = 0, first = 0, codes = 0, checked = 0, bad = 0, ncodes = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "%s tests/helpers/python/dump_linetables.py textwrap json.decoder "
		 "tests/helpers/python/stack.py", py);
	f = popen(cmd, "r");
	CHECK(f != NULL);
	while (f && getline(&line, &cap, f) > 0) {
		if (line[0] == 'C') {
			char *hex = NULL;
			int a, b;

			hex = xmalloc(strlen(line) + 1);
			if (sscanf(line, "C %d %d %s", &a, &b, hex) == 3) {
				minor = a;
				first = b;
				tablen = 0;
				for (size_t i = 0; hex[i] && hex[i + 1] && tablen < (1 << 20); i += 2)
					tab[tablen++] = (uint8_t)(hexval(hex[i]) << 4 | hexval(hex[i + 1]));
				codes++;
			} else if (sscanf(line, "C %d %d", &a, &b) == 2) {
				minor = a;
				first = b;
				tablen = 0;
				codes++;
			}
			xfree(hex);
		} else if (line[0] == 'L') {
			unsigned off;
			int want, got;

			if (sscanf(line, "L %u %d", &off, &want) != 2)
				continue;
			if (minor <= 9)
				got = python_line_lnotab(tab, tablen, first, off);
			else if (minor == 10)
				got = python_line_310(tab, tablen, first, off);
			else
				got = python_line_311(tab, tablen, first, off);
			checked++;
			if (got != want) {
				if (bad++ < 5)
					fprintf(stderr, "  %s: offset %u: line %d, expected %d\n", py, off, got,
						want);
			}
		} else if (line[0] == 'N') {
			ncodes = atoi(line + 2);
		}
	}
	if (f)
		CHECK_EQ_INT(pclose(f), 0);
	CHECK(ncodes > 10);
	CHECK_EQ_INT(codes, ncodes);
	CHECK(checked > 1000);
	CHECK_EQ_INT(bad, 0);
	free(line);
	xfree(tab);
}

static void test_linetables(void)
{
	size_t i, ran = 0;

	for (i = 0; i < NINTERP; i++) {
		if (!exists(interpreters[i])) {
			fprintf(stderr, "  SKIP-PART %s: not installed\n", interpreters[i]);
			continue;
		}
		check_linetables(interpreters[i]);
		ran++;
	}
	if (!ran)
		SKIP("no CPython installed");
}

static void test_linetable_hostile(void)
{
	/* Truncated varints, entries without their start bit, empty tables: no crash, -1. */
	static const uint8_t t1[] = { 0xf0 | 0x08 | 0x07 };          /* code 14, no varints */
	static const uint8_t t2[] = { 0x01, 0x02 };                  /* no start bit */
	static const uint8_t t3[] = { 0xe8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t t4[] = { 0xff, 0x80 };                  /* 3.10: no line */

	CHECK_EQ_INT(python_line_311(t1, sizeof(t1), 5, 0), -1);
	CHECK_EQ_INT(python_line_311(t2, sizeof(t2), 5, 0), -1);
	CHECK_EQ_INT(python_line_311(t3, sizeof(t3), 5, 0), -1);
	CHECK_EQ_INT(python_line_311(NULL, 0, 5, 0), -1);
	CHECK_EQ_INT(python_line_310(t4, sizeof(t4), 5, 10), -1);
	CHECK_EQ_INT(python_line_lnotab(NULL, 0, 7, 100), 7);
	CHECK_EQ_INT(python_line_lnotab(t2, 1, 7, 100), 7);
}

/* --- live interpreters -------------------------------------------------------------------- */

/* Start py on stack.py (or -m stack with module set) and wait for "ready". */
static int start_stack(const char *py, int module, struct child *c)
{
	char *const script[] = { (char *)py, (char *)"tests/helpers/python/stack.py", NULL };
	char *const mod[] = { (char *)py, (char *)"-m", (char *)"stack", NULL };

	if (module)
		return child_start(c, "tests/helpers/python", mod, 0);
	return child_start(c, NULL, script, 0);
}

static const char *sym_name(struct python_proc *p, struct python_code_cache *cc,
			    const struct python_frame *f, int *line, char *file, size_t filelen)
{
	static char name[PYTHON_NAME_MAX];
	struct python_sym s;

	if (python_proc_symbolize(p, cc, f, &s) < 0)
		return "?";
	*line = s.line;
	snprintf(file, filelen, "%s", s.filename);
	snprintf(name, sizeof(name), "%s", s.qualname);
	return name;
}

static void check_live(const char *py, int minor)
{
	struct errmsg err = { { 0 } };
	struct python_code_cache *cc = python_code_cache_new(0);
	struct python_threads th = { 0 };
	struct python_proc *p = NULL;
	struct child c;
	const char *script = NULL;
	size_t i, j, found_main = 0, found_worker = 0;
	int rc;

	if (start_stack(py, 0, &c) < 0) {
		CHECK(!"stack.py did not start");
		python_code_cache_free(cc);
		return;
	}
	rc = python_proc_open(c.pid, &p, &err);
	if (rc) {
		fprintf(stderr, "  %s: %s\n", py, err.msg);
		CHECK_EQ_INT(rc, 0);
		goto out;
	}
	CHECK(strncmp(python_proc_version(p), "3.", 2) == 0 &&
	      atoi(python_proc_version(p) + 2) == minor);
	CHECK(python_proc_bpf(p)->runtime != 0);
	CHECK(python_proc_bpf(p)->eval_lo[0] != 0);
	CHECK_EQ_INT(python_proc_script(p, &script), 0);
	CHECK(script && strstr(script, "tests/helpers/python/stack.py"));
	CHECK_EQ_INT(python_proc_walk(p, &th), 0);
	CHECK(th.n >= 2); /* main, worker (and the thread that printed "ready", maybe gone) */
	for (i = 0; i < th.n; i++) {
		struct python_thread *t = &th.v[i];
		char file[PYTHON_FILE_MAX];
		int line = 0;

		CHECK(!t->truncated);
		if (minor >= 11)
			CHECK(t->native_thread_id > 0);
		if (!t->nframes)
			continue;
		if (!strcmp(sym_name(p, cc, &t->frames[0], &line, file, sizeof(file)), "park")) {
			static const char *const want[] = { "park", "recurse", "recurse", "recurse",
							    "recurse", "recurse", "recurse",
							    "Outer.method", "main", "<module>" };
			static const int want_line[] = { 23, 18, 17, 17, 17, 17, 17, 12, 33, 39 };

			found_main++;
			CHECK_EQ_INT(t->nframes, 10);
			for (j = 0; j < t->nframes && j < 10; j++) {
				const char *n = sym_name(p, cc, &t->frames[j], &line, file, sizeof(file));

				CHECK_EQ_STR(n, minor >= 11 || strcmp(want[j], "Outer.method") ? want[j]
												: "method");
				CHECK_EQ_INT(line, want_line[j]);
				CHECK(strstr(file, "stack.py") != NULL);
			}
			if (minor >= 11 && t->nframes == 10) {
				/* The eval loop is entered once for the whole chain (inline calls). */
				CHECK_EQ_INT(t->frames[9].entry, 1);
				CHECK_EQ_INT(t->frames[0].entry, 0);
			}
			if (minor >= 11)
				CHECK_EQ_INT(t->native_thread_id, c.pid);
		} else if (!strcmp(sym_name(p, cc, &t->frames[0], &line, file, sizeof(file)),
				   "worker")) {
			found_worker++;
			CHECK_EQ_INT(line, 27);
			CHECK(t->nframes >= 3);
		}
	}
	CHECK_EQ_INT(found_main, 1);
	CHECK_EQ_INT(found_worker, 1);
	python_threads_release(&th);

	/* A wrong table must be caught, not produce garbage: read with another version's
	 * offsets (one whose chain offsets differ: 3.8 - 3.10 share theirs). */
	if (minor <= 12) {
		static const unsigned wrong_minor[] = { 11, 11, 12, 10, 11 };
		struct python_proc *wrong = NULL;
		struct procmem m;

		procmem_init_pid(&m, c.pid);
		rc = python_proc_open_mem(&m, c.pid, python_proc_bpf(p)->runtime, 3,
					  wrong_minor[minor - 8], &wrong, &err);
		if (rc != -EINVAL && rc != -EFAULT && rc != -EAGAIN)
			fprintf(stderr, "  %s as 3.%u: rc %d %s\n", py, wrong_minor[minor - 8], rc, err.msg);
		CHECK(rc == -EINVAL || rc == -EFAULT || rc == -EAGAIN);
		if (!rc)
			python_proc_free(wrong);
	}
out:
	python_proc_free(p);
	python_code_cache_free(cc);
	child_stop(&c);

	/* python -m stack: the script label is the module name. */
	if (start_stack(py, 1, &c) == 0) {
		/* "ready" is printed by the module; on a loaded machine the interpreter's state
		 * may not be readable at once: a few tries, then the reason */
		for (i = 0; i < 20 && (rc = python_proc_open(c.pid, &p, &err)) != 0; i++)
			usleep(50000);
		if (rc == 0) {
			CHECK_EQ_INT(python_proc_script(p, &script), 0);
			CHECK_EQ_STR(script, "stack");
			python_proc_free(p);
		} else {
			fprintf(stderr, "  %s -m stack: %s\n", py, err.msg);
			CHECK(!"python -m stack: not detected");
		}
		child_stop(&c);
	} else {
		CHECK(!"python -m stack did not start");
	}
}

/* The runtime through the framework and the process registry, as a session drives it: frame
 * words as BPF makes them, the script label, names still there after the process exited and
 * until the registry forgets it. */
static void test_runtime_exited(void)
{
	const char *py = interpreters[4]; /* 3.12 */
	static const struct runtime_ops *const table[] = { &python_runtime_ops };
	struct process_registry *reg;
	struct runtimes *rts;
	struct runtime_frame fr[4];
	struct python_threads th = { 0 };
	struct python_proc *p = NULL;
	struct errmsg err = { { 0 } };
	const char *key = NULL, *value = NULL;
	uint64_t words[64], bad[2];
	size_t n = 0, i, k, used = 0;
	struct child c;
	int tries;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (!exists(py))
		SKIP("%s not installed", py);
	if (start_stack(py, 0, &c) < 0) {
		CHECK(!"stack.py did not start");
		return;
	}
	reg = process_registry_new(NULL);
	rts = runtimes_new_table(table, 1, NULL);
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, c.pid, "python3.12"), 0);
	CHECK(process_get(reg, c.pid) && process_get(reg, c.pid)->runtimes != NULL);
	CHECK_EQ_INT(process_track(reg, getpid(), "test"), 0);
	CHECK(process_get(reg, getpid()) && process_get(reg, getpid())->runtimes == NULL);
	CHECK_EQ_INT(python_proc_open(c.pid, &p, &err), 0);
	if (p && python_proc_walk(p, &th) == 0) {
		for (i = 0; i < th.n && !n; i++) {
			if (th.v[i].native_thread_id != c.pid)
				continue;
			for (k = 0; k < th.v[i].nframes && n + 2 <= 64; k++) {
				const struct python_frame *f = &th.v[i].frames[k];

				words[n++] = (FW_TAG_PYTHON << FW_TAG_SHIFT) | f->code;
				words[n++] = (FW_TAG_PYTHON_INSTR << FW_TAG_SHIFT) |
					     ((uint64_t)f->checksum << 32) | f->instr;
			}
		}
	}
	CHECK_EQ_INT(n, 20);
	/* samples validate the offsets, then find the script (polls are spaced in time) */
	for (tries = 0; tries < 200 && !process_runtime_label(reg, c.pid, &key, &value); tries++) {
		runtimes_note_sample(rts, c.pid, words, n);
		usleep(2000);
	}
	CHECK(key && !strcmp(key, "script"));
	CHECK(value && strstr(value, "tests/helpers/python/stack.py"));
	child_stop(&c); /* the process is gone: names come from the cache */
	process_exit(reg, c.pid);
	if (n == 20) {
		CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words, n, &used, fr, 4), 1);
		CHECK_EQ_INT(used, 2);
		CHECK_EQ_STR(fr[0].name, "park");
		CHECK_EQ_INT(fr[0].line, 23);
		CHECK_EQ_INT(fr[0].kind, FRAME_PYTHON);
		CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + 14, n - 14, &used, fr, 4), 1);
		CHECK_EQ_STR(fr[0].name, "Outer.method");
		/* a checksum that does not match what was cached: unknown, not a wrong name */
		bad[0] = words[0];
		bad[1] = words[1] ^ (1ULL << 32);
		CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, bad, 2, &used, fr, 4), 1);
		CHECK_EQ_STR(fr[0].name, "[python: unknown code]");
		CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
		/* a walker mark */
		bad[0] = (FW_TAG_PYTHON_MARK << FW_TAG_SHIFT) | PY_MARK_TRUNCATED;
		CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, bad, 1, &used, fr, 4), 1);
		CHECK_EQ_STR(fr[0].name, "[python: truncated]");
		CHECK_EQ_INT(used, 1);
	}
	process_registry_collect(reg); /* the interval is over: everything of it goes */
	CHECK(process_get(reg, c.pid) == NULL);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words, n, &used, fr, 4), 1);
	CHECK_EQ_STR(fr[0].name, "[unknown]"); /* no process, no runtime: its words are no one's */
	CHECK(!process_runtime_label(reg, c.pid, &key, &value));
	python_threads_release(&th);
	python_proc_free(p);
	process_registry_free(reg);
	runtimes_free(rts);
}

static void test_live(void)
{
	static const int minors[] = { 8, 9, 10, 11, 12, 13, 11 };
	size_t i, ran = 0;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	for (i = 0; i < NINTERP; i++) {
		if (!exists(interpreters[i])) {
			fprintf(stderr, "  SKIP-PART %s: not installed\n", interpreters[i]);
			continue;
		}
		check_live(interpreters[i], minors[i]);
		ran++;
	}
	if (!ran)
		SKIP("no CPython installed");
}

/* The runtime's offset check from the sample stream: a right table passes (then the script is
 * found), a wrong one is retried PYTHON_VALIDATE_TRIES times, spaced in time, before it is
 * called wrong (the target runs while we read: one failed check may be a race). */
static void check_poll(const char *py, unsigned wrong_minor, int want)
{
	struct errmsg err = { { 0 } };
	struct runtime_config cfg = { 0 };
	struct python_file f;
	struct procmaps pm;
	struct elf_file *e = NULL;
	struct process proc;
	struct runtime_attach at;
	struct child c;
	void *state = NULL, *inst = NULL;
	uint64_t bias = 0;
	struct timespec t0, t1;
	size_t i;
	int rc = 1, polls = 0, have = 0;

	if (start_stack(py, 0, &c) < 0) {
		CHECK(!"stack.py did not start");
		return;
	}
	/* the interpreter is the executable or libpython: whichever mapped file detects */
	if (procmaps_read(c.pid, &pm, NULL) == 0) {
		for (i = 0; i < pm.n && !have; i++) {
			if (pm.v[i].kind != PROCMAPS_FILE || !strstr(pm.v[i].path, "python"))
				continue;
			elf_close(e);
			e = NULL;
			if (elf_open(pm.v[i].path, &e, NULL) == 0 &&
			    python_file_detect(e, pm.v[i].path, &f) == 1) {
				bias = elf_load_bias(e, pm.v[i].start, pm.v[i].offset);
				have = 1;
			}
		}
		procmaps_release(&pm);
	}
	CHECK(have);
	if (!have) {
		elf_close(e);
		child_stop(&c);
		return;
	}
	if (wrong_minor) {
		f.py_version = 0; /* believe the name */
		f.minor = wrong_minor;
	}
	memset(&proc, 0, sizeof(proc));
	proc.pid = c.pid;
	at.reg = NULL;
	at.proc = &proc;
	at.map = NULL;
	at.bias = bias;
	CHECK_EQ_INT(python_runtime_ops.init(NULL, &cfg, &state, &err), 0);
	CHECK_EQ_INT(python_runtime_ops.attach(state, &f, &at, &inst, &err), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (inst && rc == 1 && polls < 500) {
		rc = python_runtime_ops.poll(state, inst, &err);
		polls++;
		usleep(2000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_EQ_INT(rc, want);
	if (want < 0) {
		/* not given up at the first failure: the tries are spaced */
		CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >=
		      (PYTHON_VALIDATE_TRIES - 1) * (long)(PYTHON_VALIDATE_RETRY_NS / 1000000));
		CHECK(strstr(err.msg, "do not match") != NULL);
	}
	if (inst)
		python_runtime_ops.release(state, inst);
	python_runtime_ops.free(state);
	elf_close(e);
	child_stop(&c);
}

static void test_runtime_poll(void)
{
	const char *py = interpreters[4]; /* 3.12 */

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (!exists(py))
		SKIP("%s not installed", py);
	check_poll(py, 0, 0);
	check_poll(py, 11, -EINVAL);
}

static void test_not_python(void)
{
	struct errmsg err = { { 0 } };
	struct python_proc *p = NULL;

	CHECK_EQ_INT(python_proc_open(getpid(), &p, &err), -ENOENT);
	CHECK(python_is_interpreter_path("/usr/lib/libpython3.11.so.1.0", NULL, NULL));
	CHECK(python_is_interpreter_path("/usr/bin/python3.13t", NULL, NULL));
	CHECK(!python_is_interpreter_path("/usr/bin/python3", NULL, NULL));
	CHECK(!python_is_interpreter_path("/usr/bin/python3.11-config", NULL, NULL));
	CHECK(!python_is_interpreter_path("/usr/lib/libpython3.11.a", NULL, NULL));
}

/* --- 3.14 on a hand-built memory image ------------------------------------------------------ */

/* Offsets of the 3.14 layout used to build the image (GIL build). */
#define RT 0x100000ULL
#define INTERP 0x200000ULL
#define TSTATE 0x300000ULL
#define FRAMES 0x400000ULL
#define CODES 0x500000ULL
#define STRS 0x600000ULL
#define CODE_TYPE 0x700000ULL
#define STR_TYPE 0x700100ULL
#define BYTES_TYPE 0x700200ULL

#define I_THREADS_HEAD 7400
#define I_NEXT 7320
#define T_FRAME 72
#define F_PREV 8
#define F_EXEC 0
#define F_INSTR 56
#define F_OWNER 74
#define C_FILENAME 112
#define C_NAME 120
#define C_QUALNAME 128
#define C_LINETABLE 136
#define C_FIRSTLINE 68
#define C_ADAPTIVE 208

static uint8_t mem_rt[1024], mem_interp[8192], mem_ts[512], mem_frames[4096], mem_codes[4096],
	mem_strs[8192];

static void put64(uint8_t *base, size_t off, uint64_t v)
{
	memcpy(base + off, &v, 8);
}

static void put32(uint8_t *base, size_t off, uint32_t v)
{
	memcpy(base + off, &v, 4);
}

/* A compact ASCII str at STRS + off; returns its address. */
static uint64_t make_str(size_t off, const char *s)
{
	uint8_t *o = mem_strs + off;

	put64(o, 8, STR_TYPE);
	put64(o, 16, strlen(s));
	put32(o, 32, (1u << 2) | (1u << 5) | (1u << 6)); /* kind 1, compact, ascii */
	memcpy(o + 40, s, strlen(s) + 1);
	return STRS + off;
}

static uint64_t make_bytes(size_t off, const uint8_t *b, size_t n)
{
	uint8_t *o = mem_strs + off;

	put64(o, 8, BYTES_TYPE);
	put64(o, 16, n);
	memcpy(o + 32, b, n);
	return STRS + off;
}

/* Debug offsets: header + groups, in the order and sizes of 3.14's _Py_DebugOffsets. */
static void build_debug_offsets(void)
{
	uint64_t w[120];
	size_t n = 0;

	memset(w, 0, sizeof(w));
	/* runtime_state */
	w[n++] = 4096; w[n++] = 16; w[n++] = 640;
	/* interpreter_state (14 fields in 3.14: threads_main added) */
	w[n++] = 8192; w[n++] = 8; w[n++] = I_NEXT; w[n++] = I_THREADS_HEAD; w[n++] = 7408;
	w[n++] = 100; w[n++] = 200; w[n++] = 300; w[n++] = 400; w[n++] = 500; w[n++] = 600;
	w[n++] = 0; w[n++] = 700; w[n++] = 800;
	/* thread_state */
	w[n++] = 400; w[n++] = 0; w[n++] = 8; w[n++] = 16; w[n++] = T_FRAME; w[n++] = 152;
	w[n++] = 160; w[n++] = 200; w[n++] = 210;
	/* interpreter_frame (3.14: stackpointer added) */
	w[n++] = 80; w[n++] = F_PREV; w[n++] = F_EXEC; w[n++] = F_INSTR; w[n++] = 80;
	w[n++] = F_OWNER; w[n++] = 64;
	/* code_object */
	w[n++] = 216; w[n++] = C_FILENAME; w[n++] = C_NAME; w[n++] = C_QUALNAME;
	w[n++] = C_LINETABLE; w[n++] = C_FIRSTLINE; w[n++] = 52; w[n++] = 144; w[n++] = 152;
	w[n++] = C_ADAPTIVE;
	/* pyobject, type_object, tuple, list, set, dict, float, long */
	w[n++] = 16; w[n++] = 8;
	w[n++] = 400; w[n++] = 24; w[n++] = 88; w[n++] = 168;
	w[n++] = 32; w[n++] = 24; w[n++] = 16;
	w[n++] = 40; w[n++] = 24; w[n++] = 16;
	w[n++] = 200; w[n++] = 24; w[n++] = 40; w[n++] = 32;
	w[n++] = 48; w[n++] = 32; w[n++] = 40;
	w[n++] = 24; w[n++] = 16;
	w[n++] = 32; w[n++] = 16; w[n++] = 24;
	/* bytes_object, unicode_object */
	w[n++] = 40; w[n++] = 16; w[n++] = 32;
	w[n++] = 48; w[n++] = 32; w[n++] = 16; w[n++] = 40;
	/* gc, gen_object */
	w[n++] = 400; w[n++] = 8;
	w[n++] = 80; w[n++] = 40; w[n++] = 64; w[n++] = 50;
	memcpy(mem_rt, "xdebugpy", 8);
	put64(mem_rt, 8, 0x030e00f0); /* 3.14.0 final */
	put64(mem_rt, 16, 0);
	memcpy(mem_rt + 24, w, n * 8);
}

/* Code object a, cached under checksum old, dies and another (firstlineno 40) is made at its
 * address: the new one is read as an entry of its own, and a's entry stays for the samples
 * that still name it (a module body's code object is freed when its import ends). */
static void test_code_reuse(struct python_proc *p, struct python_code_cache *cc, uint64_t a,
			    uint32_t old)
{
	const struct python_code *c;
	uint32_t fresh = 0;

	put32(mem_codes, C_FIRSTLINE, 40);
	CHECK_EQ_INT(python_code_checksum(python_proc_mem(p), python_proc_offsets(p), a, &fresh), 0);
	CHECK(fresh != old);
	c = python_code_cache_get(cc, 0, a, fresh, python_proc_mem(p), python_proc_offsets(p),
				  python_proc_types(p));
	CHECK(c != NULL && c->firstlineno == 40);
	c = python_code_cache_get(cc, 0, a, old, NULL, NULL, NULL);
	CHECK(c != NULL && c->firstlineno == 10 && !strcmp(c->qualname, "Worker.work"));
	put32(mem_codes, C_FIRSTLINE, 10);
}

/* A code object gone before user space read it, named from what the walker noted of it in a
 * young process (python.h, YOUNG CODE OBJECTS): the copied characters when there are any, else
 * the strings at their own addresses; then cached under its identity. */
static void test_code_from_refs(struct python_proc *p, struct python_code_cache *cc,
				uint64_t name, uint64_t qualname, uint64_t file)
{
	struct py_code_refs r = { .name = name, .qualname = qualname, .filename = file,
				  .firstlineno = 10 };
	struct python_code code;
	const struct python_code *c;

	CHECK_EQ_INT(python_code_from_refs(python_proc_mem(p), python_proc_offsets(p),
					   python_proc_types(p), &r, &code, NULL), 0);
	CHECK_EQ_STR(code.qualname, "Worker.work");
	CHECK_EQ_STR(code.filename, "/srv/app.py");
	CHECK_EQ_INT(code.checksum, py_code_checksum(10, name));
	CHECK_EQ_INT(python_code_line(&code, 8), 10); /* no line table: firstlineno */
	python_code_release(&code);
	/* the process is gone (strings unreadable): the copies name it */
	r.qualname = r.filename = 0x10;
	snprintf(r.name_text, sizeof(r.name_text), "load.<locals>.step");
	snprintf(r.file_text, sizeof(r.file_text), "/srv/gone.py");
	CHECK_EQ_INT(python_code_from_refs(python_proc_mem(p), python_proc_offsets(p),
					   python_proc_types(p), &r, &code, NULL), 0);
	CHECK_EQ_STR(code.qualname, "load.<locals>.step");
	CHECK_EQ_STR(code.filename, "/srv/gone.py");
	c = python_code_cache_put(cc, 7, 0x5000, &code);
	CHECK(c != NULL && code.qualname == NULL);
	c = python_code_cache_get(cc, 7, 0x5000, py_code_checksum(10, name), NULL, NULL, NULL);
	CHECK(c != NULL && !strcmp(c->filename, "/srv/gone.py"));
	/* neither: an error, no name made up; nor from a copy that is not NUL-terminated */
	r.file_text[0] = 0;
	CHECK(python_code_from_refs(python_proc_mem(p), python_proc_offsets(p),
				    python_proc_types(p), &r, &code, NULL) < 0);
	memset(r.file_text, 'x', sizeof(r.file_text));
	CHECK(python_code_from_refs(python_proc_mem(p), python_proc_offsets(p),
				    python_proc_types(p), &r, &code, NULL) < 0);
}

static void test_py314_image(void)
{
	struct procmem_region regions[] = {
		{ RT, mem_rt, sizeof(mem_rt) },
		{ INTERP, mem_interp, sizeof(mem_interp) },
		{ TSTATE, mem_ts, sizeof(mem_ts) },
		{ FRAMES, mem_frames, sizeof(mem_frames) },
		{ CODES, mem_codes, sizeof(mem_codes) },
		{ STRS, mem_strs, sizeof(mem_strs) },
	};
	struct procmem_image img = { regions, sizeof(regions) / sizeof(regions[0]) };
	/* Location table: 3 code units on firstlineno (short form), 4 on +2 (one-line form),
	 * 2 without location, 5 on -1 (no-column form, svarint 3 = -1). */
	static const uint8_t tab[] = { 0x80 | (0 << 3) | 2, 0x00,
				       0x80 | (12 << 3) | 3, 0x01, 0x02,
				       0x80 | (15 << 3) | 1,
				       0x80 | (13 << 3) | 4, 0x03 };
	struct python_threads th = { 0 };
	struct python_code_cache *cc = python_code_cache_new(0);
	struct errmsg err = { { 0 } };
	struct python_proc *p = NULL;
	struct procmem m;
	struct python_sym s;
	uint64_t code_a = CODES, code_b = CODES + 1024, fn, fq, ff, ft;
	const char *script = NULL;
	int rc;

	memset(mem_rt, 0, sizeof(mem_rt));
	memset(mem_interp, 0, sizeof(mem_interp));
	memset(mem_ts, 0, sizeof(mem_ts));
	memset(mem_frames, 0, sizeof(mem_frames));
	memset(mem_codes, 0, sizeof(mem_codes));
	memset(mem_strs, 0, sizeof(mem_strs));
	build_debug_offsets();
	put64(mem_rt, 640, INTERP);
	put64(mem_interp, I_THREADS_HEAD, TSTATE);
	put64(mem_ts, 16, INTERP);
	put64(mem_ts, 152, 0x7f0000001000ULL);
	put64(mem_ts, 160, 4242);
	put64(mem_ts, T_FRAME, FRAMES);

	/* code objects: a = work() in app.py line 10, b = <module> in app.py line 1 */
	fn = make_str(0, "work");
	fq = make_str(256, "Worker.work");
	ff = make_str(512, "/srv/app.py");
	ft = make_bytes(1024, tab, sizeof(tab));
	put64(mem_codes, 8, CODE_TYPE);
	put32(mem_codes, C_FIRSTLINE, 10);
	put64(mem_codes, C_NAME, fn);
	put64(mem_codes, C_QUALNAME, fq);
	put64(mem_codes, C_FILENAME, ff);
	put64(mem_codes, C_LINETABLE, ft);
	put64(mem_codes, 1024 + 8, CODE_TYPE);
	put32(mem_codes, 1024 + C_FIRSTLINE, 1);
	put64(mem_codes, 1024 + C_NAME, make_str(1536, "<module>"));
	put64(mem_codes, 1024 + C_QUALNAME, make_str(1536, "<module>"));
	put64(mem_codes, 1024 + C_FILENAME, ff);
	put64(mem_codes, 1024 + C_LINETABLE, ft);

	/* frames: work (tagged ref, instr at unit 4 -> line 12), a C-stack entry (owner 4),
	 * <module> (instr at unit 10 -> line 11), the interpreter's base frame (owner 3). */
	put64(mem_frames, 0 + F_EXEC, code_a | 1);
	put64(mem_frames, 0 + F_INSTR, code_a + C_ADAPTIVE + 8);
	put64(mem_frames, 0 + F_PREV, FRAMES + 512);
	mem_frames[512 + F_OWNER] = 4;
	put64(mem_frames, 512 + F_EXEC, 0x12345); /* Py_None-like, never read */
	put64(mem_frames, 512 + F_PREV, FRAMES + 1024);
	put64(mem_frames, 1024 + F_EXEC, code_b | 1);
	put64(mem_frames, 1024 + F_INSTR, code_b + C_ADAPTIVE + 20);
	put64(mem_frames, 1024 + F_PREV, FRAMES + 1536);
	mem_frames[1536 + F_OWNER] = 3;
	put64(mem_frames, 1536 + F_PREV, 0);

	procmem_init_image(&m, &img);
	rc = python_proc_open_mem(&m, 0, RT, 3, 14, &p, &err);
	if (rc)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		goto out;
	CHECK_EQ_STR(python_proc_version(p), "3.14.0");
	CHECK(python_proc_offsets(p)->flags & PY_F_TAGGED_CODE);
	CHECK_EQ_INT(python_proc_offsets(p)->fr_owner, F_OWNER);
	CHECK_EQ_INT(python_proc_offsets(p)->co_code_adaptive, C_ADAPTIVE);
	CHECK_EQ_INT(python_proc_walk(p, &th), 0);
	CHECK_EQ_INT(th.n, 1);
	if (th.n == 1) {
		CHECK_EQ_INT(th.v[0].native_thread_id, 4242);
		CHECK_EQ_INT(th.v[0].nframes, 2);
		if (th.v[0].nframes == 2) {
			CHECK_EQ_INT(th.v[0].frames[0].code, code_a);
			CHECK_EQ_INT(th.v[0].frames[0].instr, 8);
			CHECK_EQ_INT(th.v[0].frames[0].entry, 1);
			CHECK_EQ_INT(th.v[0].frames[1].code, code_b);
			CHECK_EQ_INT(python_proc_symbolize(p, cc, &th.v[0].frames[0], &s), 0);
			CHECK_EQ_STR(s.qualname, "Worker.work");
			CHECK_EQ_STR(s.filename, "/srv/app.py");
			CHECK_EQ_INT(s.line, 12);
			CHECK_EQ_INT(python_proc_symbolize(p, cc, &th.v[0].frames[1], &s), 0);
			CHECK_EQ_STR(s.qualname, "<module>");
			CHECK_EQ_INT(s.line, 2); /* same table, from firstlineno 1 */
			/* a reused address: the checksum no longer matches */
			th.v[0].frames[0].checksum ^= 1;
			CHECK_EQ_INT(python_proc_symbolize(p, cc, &th.v[0].frames[0], &s), -ENOENT);
			th.v[0].frames[0].checksum ^= 1;
			test_code_reuse(p, cc, code_a, th.v[0].frames[0].checksum);
			test_code_from_refs(p, cc, fn, fq, ff);
		}
	}
	CHECK_EQ_INT(python_proc_script(p, &script), 0);
	CHECK_EQ_STR(script, "/srv/app.py");

	/* The thread state list pointing to a foreign interpreter: offsets rejected. */
	python_proc_free(p);
	p = NULL;
	put64(mem_ts, 16, INTERP + 8);
	CHECK_EQ_INT(python_proc_open_mem(&m, 0, RT, 3, 14, &p, &err), -EINVAL);
	put64(mem_ts, 16, INTERP);
	/* A frame chain that loops: bounded, no hang. */
	put64(mem_frames, 1024 + F_PREV, FRAMES);
	CHECK_EQ_INT(python_proc_open_mem(&m, 0, RT, 3, 14, &p, &err), 0);
	python_threads_release(&th);
	if (p) {
		CHECK_EQ_INT(python_proc_walk(p, &th), 0);
		CHECK(th.n == 1 && th.v[0].truncated);
	}
	/* Free-threaded: reported as unsupported in one line. */
	python_proc_free(p);
	p = NULL;
	put64(mem_rt, 16, 1);
	CHECK_EQ_INT(python_proc_open_mem(&m, 0, RT, 3, 14, &p, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "free-threaded") != NULL);
out:
	python_threads_release(&th);
	python_proc_free(p);
	python_code_cache_free(cc);
}

static void test_builtin_offsets(void)
{
	struct py_offsets o;
	unsigned minor;

	for (minor = 8; minor <= 13; minor++) {
		CHECK_EQ_INT(python_offsets_builtin(3, minor, &o), 0);
		CHECK_EQ_INT(o.version, 0x300 | minor);
		CHECK(o.co_name == o.co_filename + 8);
	}
	CHECK_EQ_INT(python_offsets_builtin(3, 7, &o), -ENOTSUP);
	CHECK_EQ_INT(python_offsets_builtin(3, 14, &o), -ENOTSUP);
	CHECK_EQ_INT(python_offsets_builtin(3, 11, &o), 0);
	CHECK_EQ_INT(o.fr_owner, 68);
	CHECK(o.flags & PY_F_IS_ENTRY);
}

int main(void)
{
	RUN(test_linetable_hostile);
	RUN(test_builtin_offsets);
	RUN(test_not_python);
	RUN(test_py314_image);
	RUN(test_linetables);
	RUN(test_live);
	RUN(test_runtime_exited);
	RUN(test_runtime_poll);
	return test_summary();
}
