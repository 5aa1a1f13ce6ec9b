/* python_proc.h: finding CPython in a file and in a running process, and walking its Python
 * stacks from user space.
 *
 * In two steps, as the runtime framework asks (runtime/runtime.h):
 *   python_file_detect()  what the file says, once per file: is it an interpreter (a static
 *                         `python3.X`, a `libpython3.X.so*`, or any executable carrying a
 *                         .PyRuntime section), where _PyRuntime is (symbol, else the section),
 *                         Py_Version, the type objects, the eval-loop ranges.
 *   python_proc_attach()  what the process says: the version (_Py_DebugOffsets on 3.13+, else
 *                         Py_Version, else the file name) and the offsets (_Py_DebugOffsets on
 *                         3.13+, the built-in table for 3.8 - 3.12). It needs no initialized
 *                         interpreter: the BPF walker can start at once (it finds no thread
 *                         state until there is one).
 *   python_proc_validate() once the interpreter runs: every thread state must point back to
 *                         its interpreter and every frame's code object must be a code object.
 *                         The target runs while we read, so one failed check can be a race:
 *                         the caller retries (python_runtime.c) before calling it a wrong table.
 * python_proc_open() does all three from /proc/PID/maps (tests and tools).
 *
 * The result feeds the BPF walker (python_proc_bpf(): the py_procs map value) and the user-space
 * walker below, which reads the same chains the BPF walker reads (used for tests, for the
 * script label and as a reference).
 *
 * Ownership: struct python_proc is freed with python_proc_free(); strings it returns live as
 * long as it does. Not thread-safe. */
#ifndef SCORCH_RUNTIME_PYTHON_PROC_H
#define SCORCH_RUNTIME_PYTHON_PROC_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/python/python_code.h"
#include "runtime/procmem.h"
#include "runtime/python/python.h"

struct elf_file;
struct errmsg;
struct python_proc;

/* What an interpreter file says about itself (link-time addresses: add the load bias). */
struct python_file {
	uint64_t runtime;      /* _PyRuntime (symbol or .PyRuntime section) */
	uint64_t py_version;   /* Py_Version (3.11+), or 0 */
	uint64_t code_type, str_type, bytes_type; /* PyCode_Type, PyUnicode_Type, PyBytes_Type */
	uint64_t eval_lo[2], eval_hi[2];          /* _PyEval_EvalFrameDefault (and .cold) */
	int neval;
	unsigned major, minor; /* from the file name; 0.0 when the name does not say */
	int free_threaded;     /* the name says 3.Xt */
	char path[256];        /* for messages */
};

/* 1 with out filled when e (mapped as path) is a CPython interpreter, 0 when it is not (or is
 * one without _PyRuntime: the executable of a shared build), negative errno on read errors. */
int python_file_detect(struct elf_file *e, const char *path, struct python_file *out);

/* The process side: pid's interpreter is the file f loaded with bias. 0, or -ENOTSUP
 * (unsupported or free-threaded version; err says which), -ESRCH, -EFAULT (the runtime cannot
 * be read). Does not validate: see python_proc_validate(). */
int python_proc_attach(int pid, const struct python_file *f, uint64_t bias,
		       struct python_proc **out, struct errmsg *err);
/* Check the offsets against the live interpreter (see above). 0, -EAGAIN (no interpreter
 * yet), -EINVAL (a check failed, or an interpreter without a thread state: err says which;
 * retry before believing it), -EFAULT, -ESRCH. */
int python_proc_validate(struct python_proc *p, struct errmsg *err);

#define PYTHON_MAX_FRAMES 1024  /* per thread, user-space walker */
#define PYTHON_MAX_THREADS 4096 /* thread states followed per interpreter */
#define PYTHON_MAX_INTERPS 64   /* interpreters followed */
#define PYTHON_MAX_STEPS (1L << 16) /* frames + thread states + interpreters per walk */

/* Find CPython in pid from its maps, attach and validate. Returns 0 and a new python_proc, or:
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
int python_proc_open_mem(struct procmem *m, int pid, uint64_t runtime, unsigned major,
			 unsigned minor, struct python_proc **out, struct errmsg *err);

int python_proc_pid(const struct python_proc *p);
/* "3.11.7" (or "3.11" when only the file name told), and the offsets in use. */
const char *python_proc_version(const struct python_proc *p);
const struct py_offsets *python_proc_offsets(const struct python_proc *p);
const struct python_types *python_proc_types(const struct python_proc *p);
struct procmem *python_proc_mem(struct python_proc *p);
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
int python_eval_ranges(struct elf_file *e, uint64_t lo[2], uint64_t hi[2]);
/* 1 when the file name looks like a CPython interpreter (python3.X, libpython3.X.so*). */
int python_is_interpreter_path(const char *path, unsigned *major, unsigned *minor);

#endif
