/* python.h: finding CPython in a running process and walking its Python stacks from user space.
 *
 * python_proc_open() looks at /proc/PID/maps for the interpreter (a static `python3.X` or a
 * `libpython3.X.so*`, PIE or not), finds _PyRuntime (symbol, else the .PyRuntime section), the
 * version (_Py_DebugOffsets on 3.13+, else Py_Version, else the file name), the offsets
 * (_Py_DebugOffsets on 3.13+, the built-in table for 3.8 - 3.12) and then checks them against
 * the live process: every thread state must point back to its interpreter and every frame's
 * code object must be a code object. A wrong table is an error with a message, never garbage.
 *
 * The result feeds the BPF walker (python_proc_bpf(): the py_procs map value) and the user-space
 * walker below, which reads the same chains the BPF walker reads (used for tests, for the
 * script label and as a reference).
 *
 * Ownership: struct python_proc is freed with python_proc_free(); strings it returns live as
 * long as it does. Not thread-safe. */
#ifndef SCORCH_AGENT_PYTHON_H
#define SCORCH_AGENT_PYTHON_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/python_code.h"
#include "agent/python_mem.h"
#include "bpf/python.h"

struct errmsg;
struct python_proc;

#define PYTHON_MAX_FRAMES 1024  /* per thread, user-space walker */
#define PYTHON_MAX_THREADS 4096 /* thread states followed per interpreter */
#define PYTHON_MAX_INTERPS 64   /* interpreters followed */
#define PYTHON_MAX_STEPS (1L << 16) /* frames + thread states + interpreters per walk */

/* Find CPython in pid. Returns 0 and a new python_proc, or:
 *   -ENOENT   not a CPython process (no interpreter mapped)
 *   -ENOTSUP  a CPython we do not support (version, free-threaded build): err says which
 *   -EAGAIN   the interpreter is not initialized yet (try again later)
 *   -EINVAL   the offsets do not match the process (err says what did not match)
 *   -ESRCH    the process is gone
 * err (may be NULL) always explains a failure in one line. */
int python_proc_open(int pid, struct python_proc **out, struct errmsg *err);
void python_proc_free(struct python_proc *p); /* NULL ok */

/* The same through a given reader (tests: a memory image, or a live process read with a
 * forced version): the caller gives the runtime address and the version (major.minor); 3.13+
 * read _Py_DebugOffsets from memory, older versions use the built-in table. pid is the
 * process the memory belongs to, or 0 for an image (fewer checks are possible then). */
int python_proc_open_mem(struct python_mem *m, int pid, uint64_t runtime, unsigned major,
			 unsigned minor, struct python_proc **out, struct errmsg *err);

int python_proc_pid(const struct python_proc *p);
/* "3.11.7" (or "3.11" when only the file name told), and the offsets in use. */
const char *python_proc_version(const struct python_proc *p);
const struct py_offsets *python_proc_offsets(const struct python_proc *p);
const struct python_types *python_proc_types(const struct python_proc *p);
struct python_mem *python_proc_mem(struct python_proc *p);
/* The value for the BPF py_procs map. */
const struct py_proc *python_proc_bpf(const struct python_proc *p);
/* Path of the file holding the interpreter (the executable or libpython). */
const char *python_proc_file(const struct python_proc *p);

/* One Python frame as the walkers report it. */
struct python_frame {
	uint64_t frame;    /* frame address (PyFrameObject or _PyInterpreterFrame) */
	uint64_t code;     /* code object address */
	uint32_t instr;    /* byte offset of the instruction, or PY_INSTR_UNKNOWN */
	uint32_t checksum; /* py_code_checksum() */
	uint32_t entry;    /* 1: the first frame of a C-level eval call (3.11+; 1 on <= 3.10) */
};

struct python_thread {
	uint64_t tstate;
	uint64_t thread_id;        /* pthread_self() of the thread */
	int64_t native_thread_id;  /* tid, or -1 when the version does not record it */
	int truncated;             /* more frames than PYTHON_MAX_FRAMES, or a bad pointer */
	size_t nframes;
	struct python_frame *frames; /* leaf first; owned by the python_threads array */
};

struct python_threads {
	struct python_thread *v;
	size_t n, cap;
};
void python_threads_release(struct python_threads *t);

/* Walk every thread of every interpreter. 0 or negative errno (-EFAULT: the chain could not
 * be read at all). Threads whose frames cannot be read are reported with truncated = 1. */
int python_proc_walk(struct python_proc *p, struct python_threads *out);

/* The script label: the file of the main module (the outermost `<module>` frame of the main
 * thread outside runpy), or the module name given to `python -m` (read from the first argument
 * of runpy's _run_module_as_main). Remembered once found. 0 or -ENOENT (not running a script
 * or module, e.g. an interactive session, or the main thread has no Python frames now). */
int python_proc_script(struct python_proc *p, const char **script);

/* Name, file and line of a frame (the first line of the function when the instruction has
 * no line). The code object goes through the cache cc. Returns 0 with out filled (strings
 * owned by cc, valid until its next get), or -ENOENT when the code object is gone, unreadable
 * or no longer the one the frame saw (checksum). */
struct python_sym {
	const char *qualname;
	const char *filename;
	int line;
	int firstlineno;
};
int python_proc_symbolize(struct python_proc *p, struct python_code_cache *cc,
			  const struct python_frame *f, struct python_sym *out);

/* Link-time [lo, hi) ranges of _PyEval_EvalFrameDefault and its .cold part in an interpreter
 * file (the executable or libpython), for the native unwinder to mark. Returns how many ranges
 * were found (0 - 2) and fills lo/hi. */
struct elf_file;
int python_eval_ranges(struct elf_file *e, uint64_t lo[2], uint64_t hi[2]);
/* 1 when the file name looks like a CPython interpreter (python3.X, libpython3.X.so*). */
int python_is_interpreter_path(const char *path, unsigned *major, unsigned *minor);

#endif
