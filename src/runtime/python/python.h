/* python.h: the contract between the CPython stack walker in BPF (python.bpf.h) and user space
 * (python_runtime.c, python_proc.c, python_code.c). Only fixed-size types; included by both
 * sides.
 *
 * User space finds CPython in a process (python_runtime.c), fills one struct py_proc per
 * process into the `py_procs` map (key: tgid), and the walker reads the interpreter's thread
 * states and frames with those offsets.
 *
 * FRAME WORDS (sampler.h; CPython owns the tags 0x10 - 0x1f) for one Python frame, leaf first,
 * always as a pair:
 *   word 1: tag FW_TAG_PYTHON,       data = address of the code object
 *   word 2: tag FW_TAG_PYTHON_INSTR, data bits 0-31  = byte offset of the current instruction
 *                                                       in the bytecode (PY_INSTR_UNKNOWN if
 *                                                       not known)
 *                                    data bits 32-55 = py_code_checksum() of the code object
 * A word with tag FW_TAG_PYTHON_MARK (data = enum py_mark) reports a walker problem in place of
 * frames it could not read.
 *
 * THE WALKER (python.bpf.h: python_bpf_walk(), dispatched by runtime/runtime.bpf.h for
 * mappings of kind UNWINDER_PYTHON):
 *   RT_OP_FRAME  the native unwinder is at a pc in _PyEval_EvalFrameDefault (or its .cold
 *                part; the ranges user space flagged UNW_F_INTERP). The first call of a sample
 *                finds the thread's thread state; each call replaces the eval-loop frame just
 *                emitted by the Python frames that C-level eval call runs (<= 3.10: one frame;
 *                3.11: up to the is_entry frame; 3.12+: up to the owner >= 3 shim), or keeps it
 *                next to them with python_keep_eval_frames. The walker remembers where it
 *                stopped, so the next eval frame further down continues from there.
 *   RT_OP_DEFER  the same segments, one after another with FW_MARKER_SEGMENT_END after each,
 *                for a sample sent as a stack snapshot (user space replays them).
 *   RT_OP_ONLY   all Python frames of the thread in place of the native stack.
 * Counters: the py_stats map (enum py_stat), printed by `scorch record --stats`.
 *
 * YOUNG CODE OBJECTS (py_young_code, an LRU map): in a process published with UNW_PID_EAGER
 * (its first seconds), the walker also notes, once per (pid, code object, checksum), the
 * pointers user space needs to name the code object: co_name, co_qualname, co_filename and
 * co_firstlineno. A module body's code object is freed when its import ends, often before the
 * reader (woken at once, but late under load) reads it, and its address is soon reused; a
 * short-lived process can even exit first. User space then names the frame from these: the
 * strings usually outlive the code object (`<module>` is interned, the file name is shared
 * with the module's functions), and the walker copies their characters too, for when the
 * process is gone (python_runtime.c). Long-running processes never touch the map.
 */
#ifndef SCORCH_RUNTIME_PYTHON_H
#define SCORCH_RUNTIME_PYTHON_H

#include "bpf/sampler.h"
#include "bpf/unwind.h"

#define FW_TAG_PYTHON       (FW_TAG_FIRST(UNWINDER_PYTHON) + 0) /* 0x10 */
#define FW_TAG_PYTHON_INSTR (FW_TAG_FIRST(UNWINDER_PYTHON) + 1)
#define FW_TAG_PYTHON_MARK  (FW_TAG_FIRST(UNWINDER_PYTHON) + 2)

#define PY_INSTR_UNKNOWN 0xffffffffULL

enum py_mark {
	PY_MARK_NO_THREAD = 1, /* no thread state matches the sampled thread */
	PY_MARK_BAD_FRAME = 2, /* a frame or code pointer could not be read */
	PY_MARK_TRUNCATED = 3, /* more Python frames than the walker reads per sample */
};

/* Counters in the py_stats map (per CPU). */
enum py_stat {
	PYSTAT_SAMPLES = 0,  /* samples of known CPython processes */
	PYSTAT_NO_TSTATE,    /* ... whose thread has no thread state (or it was not found) */
	PYSTAT_HOOKS,        /* native frames in the eval loop handed to the walker */
	PYSTAT_FRAMES,       /* Python frames emitted */
	PYSTAT_ERRORS,       /* unreadable frames or code objects */
	PYSTAT_TRUNCATED,    /* walks cut at PY_MAX_FRAMES or the record's end */
	PYSTAT_WALK_NS,      /* time spent in the walker (thread-state lookup + frames), ns */
	PYSTAT_DEFERRED,     /* samples sent as snapshots whose Python frames were deferred */
	PYSTAT__COUNT,
};

/* struct py_offsets.flags */
#define PY_F_FRAME_OBJECTS (1u << 0) /* <= 3.10: PyFrameObject chain, instr = f_lasti int */
#define PY_F_LASTI_UNITS   (1u << 1) /* 3.10: f_lasti counts 2-byte code units */
#define PY_F_IS_ENTRY      (1u << 2) /* 3.11: fr_owner is the is_entry byte */
#define PY_F_OWNER_SHIM    (1u << 3) /* 3.12+: owner >= 3 marks a C-stack/entry frame */
#define PY_F_INSTR_PTR     (1u << 4) /* 3.11+: fr_instr is a pointer into co_code_adaptive */
#define PY_F_TAGGED_CODE   (1u << 5) /* 3.14+: f_executable is a tagged _PyStackRef */
#define PY_F_CFRAME        (1u << 6) /* 3.11/3.12: ts_frame is tstate->cframe, then
					  ts_cframe_frame gives current_frame */
#define PY_F_FREE_THREADED (1u << 7) /* 3.13t+: not supported by the walker */

#define PY_NO_OFFSET 0xffffffffu

/* Field offsets of one interpreter build. All in bytes; PY_NO_OFFSET when the field does not
 * exist in that version. */
struct py_offsets {
	__u32 version; /* (major << 8) | minor, e.g. 0x030b for 3.11 */
	__u32 flags;   /* PY_F_* */
	/* _PyRuntimeState */
	__u32 rt_interp_head;
	/* PyInterpreterState */
	__u32 interp_next;
	__u32 interp_threads_head;
	/* PyThreadState */
	__u32 ts_next;
	__u32 ts_interp;
	__u32 ts_frame;        /* frame (<= 3.10), cframe (3.11/3.12), current_frame (3.13+) */
	__u32 ts_cframe_frame; /* _PyCFrame.current_frame (3.11/3.12) */
	__u32 ts_thread_id;    /* pthread_self() == fsbase on x86-64 */
	__u32 ts_native_thread_id;
	/* frame (PyFrameObject or _PyInterpreterFrame) */
	__u32 fr_previous;
	__u32 fr_code;
	__u32 fr_instr;       /* f_lasti (int) or prev_instr / instr_ptr (pointer) */
	__u32 fr_owner;       /* owner / is_entry byte */
	__u32 fr_localsplus;
	/* PyCodeObject */
	__u32 co_argcount;
	__u32 co_flags;
	__u32 co_firstlineno;
	__u32 co_filename;
	__u32 co_name;
	__u32 co_qualname;
	__u32 co_linetable;   /* co_lnotab (3.8/3.9) or co_linetable */
	__u32 co_code_adaptive;
	/* objects */
	__u32 ob_type;        /* PyObject.ob_type */
	__u32 str_length;     /* PyASCIIObject.length */
	__u32 str_state;      /* PyASCIIObject.state */
	__u32 str_ascii_size; /* sizeof(PyASCIIObject) */
	__u32 bytes_size;     /* PyVarObject.ob_size of a bytes object */
	__u32 bytes_sval;     /* PyBytesObject.ob_sval */
};

/* The per-process map value (key: tgid). */
struct py_proc {
	__u64 runtime;      /* address of _PyRuntime in the process */
	__u64 eval_lo[2];   /* [lo, hi) of _PyEval_EvalFrameDefault and of its .cold part */
	__u64 eval_hi[2];
	struct py_offsets off;
};

/* py_young_code key and value (see YOUNG CODE OBJECTS above). */
struct py_code_key {
	__u32 pid;      /* tgid */
	__u32 checksum; /* py_code_checksum() of the code object, as in the frame's second word */
	__u64 addr;     /* the code object */
};

#define PY_YOUNG_NAME 96  /* bytes kept of a copied qualname, NUL included */
#define PY_YOUNG_FILE 192 /* bytes kept of a copied file name, NUL included */

struct py_code_refs {
	__u64 name;        /* co_name (a str object) */
	__u64 qualname;    /* co_qualname, 0 before 3.11 */
	__u64 filename;    /* co_filename */
	__u32 firstlineno; /* co_firstlineno */
	__u32 pad;
	/* The characters of co_qualname (else co_name) and co_filename when they are compact
	 * ASCII strings, NUL-terminated, cut at PY_YOUNG_NAME / PY_YOUNG_FILE - 1 bytes; "" when
	 * not ASCII or not readable. They name the frame once the process is gone. */
	char name_text[PY_YOUNG_NAME];
	char file_text[PY_YOUNG_FILE];
};

/* The checksum that ties a code object address to the code object that was there when the
 * sample was taken: 24 bits from co_firstlineno and the co_name pointer. Computed the same way
 * in BPF and in user space. */
static inline __u32 py_code_checksum(__u32 firstlineno, __u64 name_ptr)
{
	__u32 h = firstlineno * 0x9e3779b1u;

	h ^= (__u32)(name_ptr >> 3) * 0x85ebca6bu;
	h ^= h >> 15;
	return h & 0xffffff;
}

#endif
