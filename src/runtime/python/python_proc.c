/* python.c: CPython detection in a process, offset validation, the user-space stack walker and
 * the script label (python.h). The BPF walker (src/bpf/python.bpf.h) follows the same chains;
 * keep the two in step. */
#include "runtime/python/python_proc.h"
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "runtime/python/python_offsets.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct python_proc {
	int pid;
	struct procmem mem;
	struct py_offsets off;
	struct python_types types;
	struct py_proc bpf;
	char version[32];
	char *file;
	char *script;
	long budget; /* steps left in the current walk (cycles in hostile memory) */
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int python_is_interpreter_path(const char *path, unsigned *major, unsigned *minor)
{
	const char *b = base_name(path), *s;
	unsigned long mj, mn;
	char *end;
	int lib = 0;

	if (!strncmp(b, "libpython", 9)) {
		s = b + 9;
		lib = 1;
	} else if (!strncmp(b, "python", 6)) {
		s = b + 6;
	} else {
		return 0;
	}
	if (*s < '0' || *s > '9')
		return 0;
	mj = strtoul(s, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return 0;
	mn = strtoul(end + 1, &end, 10);
	while (*end == 'd' || *end == 'm' || *end == 't' || *end == 'u')
		end++;
	if (lib ? strncmp(end, ".so", 3) != 0 : *end != 0)
		return 0;
	if (mj > 9 || mn > 99)
		return 0;
	if (major)
		*major = (unsigned)mj;
	if (minor)
		*minor = (unsigned)mn;
	return 1;
}

/* python3.13t, libpython3.13t.so.1.0: the ABI flag 't' of a free-threaded build. */
static int is_free_threaded_name(const char *path)
{
	const char *b = base_name(path), *s;

	if (!python_is_interpreter_path(path, NULL, NULL))
		return 0;
	s = strchr(b, '.'); /* the dot of 3.X */
	if (!s)
		return 0;
	for (s++; *s >= '0' && *s <= '9'; s++)
		;
	for (; *s == 'd' || *s == 'm' || *s == 't' || *s == 'u'; s++)
		if (*s == 't')
			return 1;
	return 0;
}

int python_eval_ranges(struct elf_file *e, uint64_t lo[2], uint64_t hi[2])
{
	static const char *const names[2] = {
		"_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault.cold"
	};
	int i, n = 0;

	for (i = 0; i < 2; i++) {
		uint64_t v, size;

		if (elf_find_symbol(e, names[i], &v, &size) == 0 && v && size) {
			lo[n] = v;
			hi[n] = v + size;
			n++;
		}
	}
	return n;
}

/* --- reading the chains */

static int rd64(struct python_proc *p, uint64_t addr, uint64_t *v)
{
	return procmem_u64(&p->mem, addr, v);
}

static uint64_t code_of(const struct py_offsets *o, uint64_t v)
{
	return (o->flags & PY_F_TAGGED_CODE) ? v & ~3ULL : v;
}

static int thread_frame(struct python_proc *p, uint64_t tstate, uint64_t *frame)
{
	const struct py_offsets *o = &p->off;
	int err = rd64(p, tstate + o->ts_frame, frame);

	if (!err && (o->flags & PY_F_CFRAME) && *frame)
		err = rd64(p, *frame + o->ts_cframe_frame, frame);
	return err;
}

/* Walk one thread's frames, leaf first. Returns 0 (t->truncated set on a bad pointer or too
 * many frames); -EINVAL when a code object fails its type check (check_types). */
static int walk_thread(struct python_proc *p, uint64_t tstate, struct python_thread *t,
		       int check_types)
{
	const struct py_offsets *o = &p->off;
	uint64_t frame = 0, code, ptr, type;
	size_t cap = 0, steps = 0;
	int32_t lasti;
	uint8_t owner;

	memset(t, 0, sizeof(*t));
	t->tstate = tstate;
	t->native_thread_id = -1;
	if (rd64(p, tstate + o->ts_thread_id, &t->thread_id) < 0) {
		t->truncated = 1;
		return 0;
	}
	if (o->ts_native_thread_id != PY_NO_OFFSET) {
		uint64_t tid;

		if (rd64(p, tstate + o->ts_native_thread_id, &tid) == 0)
			t->native_thread_id = (int64_t)(uint32_t)tid;
	}
	if (thread_frame(p, tstate, &frame) < 0) {
		t->truncated = 1;
		return 0;
	}
	while (frame) {
		struct python_frame *f;

		if (++steps > 2 * PYTHON_MAX_FRAMES || t->nframes >= PYTHON_MAX_FRAMES ||
		    --p->budget <= 0) {
			t->truncated = 1;
			break;
		}
		if (rd64(p, frame + o->fr_code, &code) < 0) {
			t->truncated = 1;
			break;
		}
		code = code_of(o, code);
		owner = 0;
		if (o->fr_owner != PY_NO_OFFSET &&
		    procmem_read(&p->mem, frame + o->fr_owner, &owner, 1) < 0) {
			t->truncated = 1;
			break;
		}
		if ((o->flags & PY_F_OWNER_SHIM) && owner >= 3) {
			/* The C-stack entry frame (3.12 shim, 3.13 Py_None entry): the frame
			 * above it is the first of its C-level eval call. */
			if (t->nframes)
				t->frames[t->nframes - 1].entry = 1;
			goto next;
		}
		if (check_types && p->types.code_type) {
			if (rd64(p, code + o->ob_type, &type) < 0 || type != p->types.code_type) {
				xfree(t->frames);
				t->frames = NULL;
				t->nframes = 0;
				return -EINVAL;
			}
		}
		ALLOC_GROW(t->frames, t->nframes + 1, cap);
		f = &t->frames[t->nframes++];
		memset(f, 0, sizeof(*f));
		f->frame = frame;
		f->code = code;
		f->instr = (uint32_t)PY_INSTR_UNKNOWN;
		if (o->flags & PY_F_FRAME_OBJECTS) {
			f->entry = 1;
			if (procmem_read(&p->mem, frame + o->fr_instr, &lasti, 4) == 0 &&
			    lasti >= 0)
				f->instr = (o->flags & PY_F_LASTI_UNITS) ? (uint32_t)lasti * 2
									 : (uint32_t)lasti;
		} else {
			uint64_t base = code + o->co_code_adaptive;

			f->entry = (o->flags & PY_F_IS_ENTRY) ? owner != 0 : 0;
			if (rd64(p, frame + o->fr_instr, &ptr) == 0 && ptr >= base &&
			    ptr - base < (1u << 24))
				f->instr = (uint32_t)(ptr - base);
		}
		if (python_code_checksum(&p->mem, o, code, &f->checksum) < 0) {
			t->truncated = 1;
			break;
		}
next:
		if (rd64(p, frame + o->fr_previous, &frame) < 0) {
			t->truncated = 1;
			break;
		}
	}
	return 0;
}

void python_threads_release(struct python_threads *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		xfree(t->v[i].frames);
	xfree(t->v);
	memset(t, 0, sizeof(*t));
}

/* Walk every thread; with check set, verify each link and code object against the offsets
 * and explain a mismatch in err. */
static int walk_all_read(struct python_proc *p, struct python_threads *out, int check,
			 struct errmsg *err)
{
	const struct py_offsets *o = &p->off;
	uint64_t interp, tstate, back;
	size_t ni = 0, nt;
	int rc;

	memset(out, 0, sizeof(*out));
	p->budget = PYTHON_MAX_STEPS;
	if (rd64(p, p->bpf.runtime + o->rt_interp_head, &interp) < 0)
		return errmsg_set(err, -EFAULT, "cannot read _PyRuntime at 0x%llx",
				  (unsigned long long)p->bpf.runtime);
	if (!interp)
		return errmsg_set(err, -EAGAIN, "CPython %s is not initialized yet", p->version);
	for (; interp && ni < PYTHON_MAX_INTERPS && p->budget > 0; ni++) {
		p->budget--;
		if (rd64(p, interp + o->interp_threads_head, &tstate) < 0) {
			rc = errmsg_set(err, -EINVAL, "cannot read the thread list of interpreter 0x%llx",
					(unsigned long long)interp);
			goto fail;
		}
		for (nt = 0; tstate && nt < PYTHON_MAX_THREADS && p->budget > 0; nt++) {
			struct python_thread t;

			if (rd64(p, tstate + o->ts_interp, &back) < 0 || back != interp) {
				rc = errmsg_set(err, -EINVAL,
						"thread state 0x%llx does not point back to interpreter 0x%llx: offsets for CPython %s do not match",
						(unsigned long long)tstate, (unsigned long long)interp,
						p->version);
				goto fail;
			}
			if (walk_thread(p, tstate, &t, check) < 0) {
				rc = errmsg_set(err, -EINVAL,
						"a frame of thread state 0x%llx has no code object: offsets for CPython %s do not match",
						(unsigned long long)tstate, p->version);
				goto fail;
			}
			p->budget--;
			ALLOC_GROW(out->v, out->n + 1, out->cap);
			out->v[out->n++] = t;
			if (rd64(p, tstate + o->ts_next, &tstate) < 0)
				break;
		}
		if (rd64(p, interp + o->interp_next, &interp) < 0)
			break;
	}
	if (check && !out->n) {
		/* An interpreter gets its first thread state microseconds after it is created:
		 * none, for longer than the caller's retries, means the offsets are wrong. */
		rc = errmsg_set(err, -EINVAL,
				"the interpreter has no thread state: offsets for CPython %s do not match",
				p->version);
		goto fail;
	}
	if (check && p->pid > 0 && o->ts_native_thread_id != PY_NO_OFFSET) {
		/* At least one thread state must name a thread of the process. */
		char path[64];
		size_t i;

		for (i = 0; i < out->n; i++) {
			snprintf(path, sizeof(path), "/proc/%d/task/%lld", p->pid,
				 (long long)out->v[i].native_thread_id);
			if (out->v[i].native_thread_id > 0 && access(path, F_OK) == 0)
				break;
		}
		if (i == out->n) {
			rc = errmsg_set(err, -EINVAL,
					"no thread state of CPython %s names a thread of process %d: offsets do not match",
					p->version, p->pid);
			goto fail;
		}
	}
	return 0;
fail:
	python_threads_release(out);
	return rc;
}

/* The thread states and frames of a walk sit close together (3.11+ frames on the data stack,
 * a code object's fields in one object): read through blocks, a system call for each rather
 * than for each field. */
static int walk_all(struct python_proc *p, struct python_threads *out, int check,
		    struct errmsg *err)
{
	int rc;

	procmem_cache_begin(&p->mem);
	rc = walk_all_read(p, out, check, err);
	procmem_cache_end(&p->mem);
	return rc;
}

int python_proc_walk(struct python_proc *p, struct python_threads *out)
{
	return walk_all(p, out, 0, NULL);
}

/* --- opening */

static void version_from_hex(char *buf, size_t len, uint32_t hex)
{
	snprintf(buf, len, "%u.%u.%u", (hex >> 24) & 0xff, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
}

/* Version and offsets from what is known (no validation). */
static int proc_offsets(struct python_proc *p, unsigned major, unsigned minor,
			uint32_t py_version, int free_threaded, struct errmsg *err)
{
	uint8_t dbg[PYTHON_DEBUG_OFFSETS_MAX];
	uint32_t hex = 0;
	int rc;

	if (py_version && (py_version >> 24) == 3) {
		major = 3;
		minor = (py_version >> 16) & 0xff;
		version_from_hex(p->version, sizeof(p->version), py_version);
	} else {
		snprintf(p->version, sizeof(p->version), "%u.%u", major, minor);
	}
	if (free_threaded)
		return errmsg_set(err, -ENOTSUP,
				  "free-threaded CPython %s (%s) is not supported yet", p->version,
				  p->file ? p->file : "?");
	rc = -ENOENT;
	if (procmem_read(&p->mem, p->bpf.runtime, dbg, sizeof(dbg)) == 0)
		rc = python_offsets_from_debug(dbg, sizeof(dbg), &p->off, &hex, err);
	if (rc == 0) {
		version_from_hex(p->version, sizeof(p->version), hex);
	} else if (rc != -ENOENT) {
		return rc; /* free-threaded, or a cookie with broken groups */
	} else {
		if (major != 3 || minor < 8)
			return errmsg_set(err, -ENOTSUP,
					  "CPython %s is not supported (3.8 or newer is)", p->version);
		if (minor > 13)
			return errmsg_set(err, -ENOTSUP,
					  "CPython %s has no readable _Py_DebugOffsets", p->version);
		rc = python_offsets_builtin(major, minor, &p->off);
		if (rc)
			return errmsg_set(err, rc, "CPython %s is not supported", p->version);
	}
	p->bpf.off = p->off;
	return 0;
}

int python_proc_validate(struct python_proc *p, struct errmsg *err)
{
	struct python_threads threads;
	int rc = walk_all(p, &threads, 1, err);

	if (rc)
		return rc;
	python_threads_release(&threads);
	return 0;
}

/* Common part of the memory-image and test paths: offsets, then validation. */
static int proc_setup(struct python_proc *p, unsigned major, unsigned minor, uint32_t py_version,
		      int free_threaded, struct errmsg *err)
{
	int rc = proc_offsets(p, major, minor, py_version, free_threaded, err);

	return rc ? rc : python_proc_validate(p, err);
}

int python_proc_open_mem(struct procmem *m, int pid, uint64_t runtime, unsigned major,
			 unsigned minor, struct python_proc **out, struct errmsg *err)
{
	struct python_proc *p = xcalloc(1, sizeof(*p));
	int rc;

	p->pid = pid;
	p->mem = *m;
	p->bpf.runtime = runtime;
	rc = proc_setup(p, major, minor, 0, 0, err);
	if (rc) {
		python_proc_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* The mapping of the interpreter: the first libpython mapping, else the executable's. */
static const struct procmaps_entry *find_interpreter(const struct procmaps *maps, int pid,
						     unsigned *major, unsigned *minor)
{
	char exe[PATH_MAX], link[64];
	ssize_t n;
	size_t i;

	for (i = 0; i < maps->n; i++)
		if (maps->v[i].kind == PROCMAPS_FILE && strstr(base_name(maps->v[i].path), "libpython") &&
		    python_is_interpreter_path(maps->v[i].path, major, minor))
			return &maps->v[i];
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = 0;
	for (i = 0; i < maps->n; i++)
		if (maps->v[i].kind == PROCMAPS_FILE && !strcmp(maps->v[i].path, exe)) {
			if (!python_is_interpreter_path(exe, major, minor))
				*major = *minor = 0;
			return &maps->v[i];
		}
	return NULL;
}

static uint64_t sym_addr(struct elf_file *e, const char *name)
{
	uint64_t v, size;

	if (elf_find_symbol(e, name, &v, &size) == 0 && v)
		return v;
	return 0;
}

int python_file_detect(struct elf_file *e, const char *path, struct python_file *out)
{
	struct elf_section_info sec;
	unsigned major = 0, minor = 0;
	int named = python_is_interpreter_path(path, &major, &minor), rc;

	memset(out, 0, sizeof(*out));
	/* A file not named like CPython must at least carry the .PyRuntime section (3.10+):
	 * loading every program's symbols just to find out is too slow. */
	if (!named && elf_section_info(e, ".PyRuntime", &sec) < 0)
		return 0;
	rc = elf_symbols_load(e, NULL);
	if (rc)
		return rc;
	out->runtime = sym_addr(e, "_PyRuntime");
	if (!out->runtime && elf_section_info(e, ".PyRuntime", &sec) == 0 && sec.addr)
		out->runtime = sec.addr;
	if (!out->runtime)
		return 0; /* e.g. the executable of a build with a shared libpython */
	out->py_version = sym_addr(e, "Py_Version");
	out->code_type = sym_addr(e, "PyCode_Type");
	out->str_type = sym_addr(e, "PyUnicode_Type");
	out->bytes_type = sym_addr(e, "PyBytes_Type");
	out->neval = python_eval_ranges(e, out->eval_lo, out->eval_hi);
	/* An executable with CPython linked in under another name: 3.10+ (it has .PyRuntime). */
	out->major = named ? major : 3;
	out->minor = named ? minor : 0;
	out->free_threaded = is_free_threaded_name(path);
	snprintf(out->path, sizeof(out->path), "%s", path);
	return 1;
}

int python_proc_attach(int pid, const struct python_file *f, uint64_t bias,
		       struct python_proc **out, struct errmsg *err)
{
	struct python_proc *p = xcalloc(1, sizeof(*p));
	uint32_t py_version = 0;
	uint8_t probe;
	int rc, i;

	p->pid = pid;
	p->file = xstrdup(f->path);
	procmem_init_pid(&p->mem, pid);
	p->bpf.runtime = f->runtime + bias;
	if (f->py_version)
		procmem_u32(&p->mem, f->py_version + bias, &py_version);
	p->types.code_type = f->code_type ? f->code_type + bias : 0;
	p->types.str_type = f->str_type ? f->str_type + bias : 0;
	p->types.bytes_type = f->bytes_type ? f->bytes_type + bias : 0;
	for (i = 0; i < f->neval && i < 2; i++) {
		p->bpf.eval_lo[i] = f->eval_lo[i] + bias;
		p->bpf.eval_hi[i] = f->eval_hi[i] + bias;
	}
	rc = proc_offsets(p, f->major, f->minor, py_version, f->free_threaded, err);
	if (rc == 0 && procmem_read(&p->mem, p->bpf.runtime, &probe, 1) < 0) {
		rc = kill(pid, 0) < 0 && errno == ESRCH ? -ESRCH : -EFAULT;
		errmsg_set(err, rc, "cannot read _PyRuntime of process %d at 0x%llx", pid,
			   (unsigned long long)p->bpf.runtime);
	}
	if (rc) {
		python_proc_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int python_proc_open(int pid, struct python_proc **out, struct errmsg *err)
{
	struct procmaps maps = { 0 };
	const struct procmaps_entry *ent;
	struct python_proc *p = NULL;
	struct python_file f;
	struct elf_file *e = NULL;
	unsigned major = 0, minor = 0;
	int rc, fd;

	rc = procmaps_read(pid, &maps, err);
	if (rc)
		goto cleanup;
	ent = find_interpreter(&maps, pid, &major, &minor);
	if (!ent) {
		rc = errmsg_set(err, -ENOENT, "process %d: no CPython mapped", pid);
		goto cleanup;
	}
	fd = procmaps_open(pid, ent, err);
	if (fd < 0) {
		rc = fd;
		goto cleanup;
	}
	rc = elf_open_fd(fd, ent->path, &e, err);
	if (rc)
		goto cleanup;
	rc = python_file_detect(e, ent->path, &f);
	if (rc <= 0) {
		/* A python3.X executable whose libpython is not mapped yet (the dynamic loader
		 * is still at work): try again later. */
		rc = rc < 0 ? rc : errmsg_set(err, major ? -EAGAIN : -ENOENT,
					      "'%s' has no _PyRuntime symbol or .PyRuntime section",
					      ent->path);
		goto cleanup;
	}
	rc = python_proc_attach(pid, &f, elf_load_bias(e, ent->start, ent->offset), &p, err);
	if (rc)
		goto cleanup;
	rc = python_proc_validate(p, err);
	if (rc)
		goto cleanup;
	*out = p;
	p = NULL;
cleanup:
	if (rc == -ESRCH)
		errmsg_set(err, rc, "process %d is gone", pid);
	python_proc_free(p);
	elf_close(e);
	procmaps_release(&maps);
	return rc;
}

void python_proc_free(struct python_proc *p)
{
	if (!p)
		return;
	xfree(p->file);
	xfree(p->script);
	xfree(p);
}

int python_proc_pid(const struct python_proc *p)
{
	return p->pid;
}

const char *python_proc_version(const struct python_proc *p)
{
	return p->version;
}

const struct py_offsets *python_proc_offsets(const struct python_proc *p)
{
	return &p->off;
}

const struct python_types *python_proc_types(const struct python_proc *p)
{
	return &p->types;
}

struct procmem *python_proc_mem(struct python_proc *p)
{
	return &p->mem;
}

const struct py_proc *python_proc_bpf(const struct python_proc *p)
{
	return &p->bpf;
}

const char *python_proc_file(const struct python_proc *p)
{
	return p->file ? p->file : "";
}

int python_proc_symbolize(struct python_proc *p, struct python_code_cache *cc,
			  const struct python_frame *f, struct python_sym *out)
{
	const struct python_code *c;

	c = python_code_cache_get(cc, (uint32_t)p->pid, f->code, f->checksum, &p->mem, &p->off,
				  &p->types);
	if (!c)
		return -ENOENT;
	out->qualname = c->qualname;
	out->filename = c->filename;
	out->firstlineno = c->firstlineno;
	out->line = python_code_line(c, f->instr);
	if (out->line < 0)
		out->line = c->firstlineno;
	return 0;
}

/* --- script label */

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static int is_runpy(const char *file)
{
	return ends_with(file, "/runpy.py") || !strcmp(file, "<frozen runpy>");
}

int python_proc_script(struct python_proc *p, const char **script)
{
	struct python_threads threads;
	struct python_thread *main_thread = NULL;
	size_t i;
	int rc = -ENOENT;

	if (p->script) {
		*script = p->script;
		return 0;
	}
	procmem_cache_begin(&p->mem);
	if (walk_all(p, &threads, 0, NULL) < 0) {
		procmem_cache_end(&p->mem);
		return -ENOENT;
	}
	/* The main thread: its tid is the pid (3.11+); else the oldest thread state, which is
	 * the last of the (newest first) list of the first interpreter that has threads. */
	for (i = 0; i < threads.n; i++)
		if (threads.v[i].native_thread_id == p->pid)
			main_thread = &threads.v[i];
	if (!main_thread && threads.n) {
		uint64_t interp0 = 0;

		for (i = 0; i < threads.n; i++) {
			uint64_t in;

			if (rd64(p, threads.v[i].tstate + p->off.ts_interp, &in) < 0)
				continue;
			if (!interp0)
				interp0 = in;
			if (in == interp0)
				main_thread = &threads.v[i];
		}
	}
	/* Only the outermost frame of the main thread says what runs: the main script's
	 * <module> (the file, "<string>" for -c), or runpy's _run_module_as_main (-m: the
	 * module's name). Anything else, such as an import running while the interpreter starts
	 * (<frozen site>, encodings/__init__.py under importlib's frames), means there is no
	 * script yet: the next call looks again. */
	for (i = main_thread ? main_thread->nframes : 0; i-- > 0;) {
		struct python_code c;
		const struct python_frame *f = &main_thread->frames[i];

		if (python_code_read(&p->mem, &p->off, &p->types, f->code, &c, NULL) < 0)
			continue;
		if (!strcmp(c.qualname, "_run_module_as_main") && is_runpy(c.filename) &&
		    p->off.fr_localsplus != PY_NO_OFFSET) {
			char mod[PYTHON_NAME_MAX];
			uint64_t name;

			if (rd64(p, f->frame + p->off.fr_localsplus, &name) == 0 &&
			    python_read_str(&p->mem, &p->off, &p->types, code_of(&p->off, name), mod,
					    sizeof(mod)) == 0 && mod[0]) {
				p->script = xstrdup(mod);
				rc = 0;
			}
		} else if (!strcmp(c.qualname, "<module>") && !is_runpy(c.filename) &&
			   strncmp(c.filename, "<frozen ", 8)) {
			p->script = xstrdup(c.filename);
			rc = 0;
		}
		python_code_release(&c);
		break;
	}
	python_threads_release(&threads);
	procmem_cache_end(&p->mem);
	if (rc == 0)
		*script = p->script;
	return rc;
}
