/* v8.h: the contract between the V8 (Node.js) stack walker in BPF (v8.bpf.h, whose frame step
 * v8_step.h is shared with user space) and user space (v8_runtime.c, v8_heap.c). Only
 * fixed-size types; included by both sides.
 *
 * User space finds V8 in a file from its postmortem metadata (the v8dbg_* symbols, v8_meta.c),
 * fills one struct v8_proc per process into the `v8_procs` map (key: tgid) and claims V8's
 * code for the walker: the embedded builtins in the executable (no CFI there) and every
 * anonymous executable mapping (the JIT code space). The native unwinder then hands every pc
 * in them to the walker.
 *
 * THE WALKER (v8.bpf.h: v8_bpf_walk(), RT_OP_FRAME only). Every V8 frame keeps a frame
 * pointer: the frame of a pc is the one rbp points at, its caller's pc is at [fp + 8] and its
 * caller's rbp at [fp]. For each frame the walker reads the frame's fixed slots and emits the
 * frame's words in place of the native word of the pc (or after it: a builtin at the leaf keeps
 * its native name). It goes on with the caller while the caller is V8 code: every V8 frame but
 * an entry frame is called from V8 code, so a caller in a mapping the unwinder does not know
 * yet (a code page V8 just made) is walked too. The caller of an entry frame, or a pc in a
 * known native mapping, goes back to the native unwinder (UNW_HOOK_MOVED).
 *   - slot fp_context holds a frame-type marker (an even value: type << 1) for typed frames
 *     (entry, exit, stub, internal, ...), else the context of a JavaScript frame;
 *   - a JavaScript frame's JSFunction is at fp_function; its SharedFunctionInfo (SFI) names
 *     the function; the code it runs is its JSFunction's code when the pc lies inside it
 *     (Sparkplug, Maglev, TurboFan), the interpreter when the pc is one of the interpreter's
 *     entry trampolines (the bytecode offset is then in slot fp_bytecode_offset).
 *
 * FRAME WORDS (sampler.h; V8 owns the tags 0x30 - 0x3f), leaf first. A JavaScript frame is
 *   [SFI] [POS]                 interpreted, or a function whose code is not known
 *   [SFI] [CODE] [PC | RET]     compiled code known by its Code object
 *   [SFI] [JITPC] [PC | RET]    compiled code that is not its function's current code (OSR,
 *                               replaced while the frame runs): user space finds the Code
 * where
 *   SFI    data = address of the SharedFunctionInfo (tagged)
 *   CODE   data = address of the Code object (tagged)
 *   JITPC  data = the pc itself
 *   POS    bits 0-31: the frame's bytecode offset slot (the SMI's value; V8_POS_UNKNOWN when
 *          not known), bits 32-55: checksum
 *   PC     bits 0-31: pc - instruction start (the sampled pc), bits 32-55: checksum
 *   RET    the same for a return address (user space looks up offset - 1)
 * The checksum (v8_checksum()) ties the addresses to the objects that were there at the sample:
 * the SFI's immutable scalar fields, and for CODE frames the code's kind, size and instruction
 * start (another compilation of the same function is another Code). A typed
 * frame in JIT code (a stub, regular expression code) is one TYPED word (data = frame type);
 * a frame the walker could not read is one MARK word (enum v8_mark). Typed frames of builtins
 * (entry, exit, CEntry, ...) keep their native word: the builtin's symbol names them.
 *
 * Counters: the v8_stats map (enum v8_stat), printed by `scorch record --stats`. */
#ifndef SCORCH_RUNTIME_V8_H
#define SCORCH_RUNTIME_V8_H

#include "bpf/sampler.h"
#include "bpf/unwind.h"

#define FW_TAG_V8_SFI   (FW_TAG_FIRST(UNWINDER_V8) + 0) /* 0x30 */
#define FW_TAG_V8_CODE  (FW_TAG_FIRST(UNWINDER_V8) + 1)
#define FW_TAG_V8_JITPC (FW_TAG_FIRST(UNWINDER_V8) + 2)
#define FW_TAG_V8_POS   (FW_TAG_FIRST(UNWINDER_V8) + 3)
#define FW_TAG_V8_PC    (FW_TAG_FIRST(UNWINDER_V8) + 4)
#define FW_TAG_V8_RET   (FW_TAG_FIRST(UNWINDER_V8) + 5)
#define FW_TAG_V8_TYPED (FW_TAG_FIRST(UNWINDER_V8) + 6)
#define FW_TAG_V8_MARK  (FW_TAG_FIRST(UNWINDER_V8) + 7)

#define V8_POS_UNKNOWN 0xffffffffULL
#define V8_MAX_WORDS 3 /* words of one frame */

enum v8_mark {
	V8_MARK_BAD_FRAME = 1, /* a JavaScript frame whose function could not be read */
};

/* Counters in the v8_stats map (per CPU). */
enum v8_stat {
	V8STAT_SAMPLES = 0, /* samples that reached V8 code of a known process */
	V8STAT_FRAMES,      /* frames handed to the walker */
	V8STAT_INTERP,      /* interpreted frames */
	V8STAT_COMPILED,    /* compiled frames whose Code is known */
	V8STAT_JITPC,       /* compiled frames found by pc only */
	V8STAT_TYPED,       /* typed frames (entry, exit, stub, ...) */
	V8STAT_BAD,         /* JavaScript frames whose function could not be read */
	V8STAT_ERRORS,      /* frames that could not be unwound (bad frame pointer) */
	V8STAT_WALK_NS,     /* time spent in the walker, ns */
	V8STAT__COUNT,
};

/* The walker's reads: 64 bytes of the frame, at fp - V8_FRAME_BELOW (so every fp_* slot must be
 * in [-V8_FRAME_BELOW, 8]), and V8_OBJ_READ bytes of a JSFunction and of a Code object. */
#define V8_FRAME_BELOW 48
#define V8_FRAME_READ  64
#define V8_OBJ_READ    64
#define V8_SFI_READ    16
#define V8_INTERP_RANGES 4
#define V8_JIT_RANGES 8

/* What the walker needs of one V8 build (v8_meta.c derives it from the v8dbg_* metadata). All
 * offsets in bytes; object offsets are from the untagged object address. */
struct v8_offsets {
	__u8 tagged_size;     /* 8, or 4 with pointer compression */
	__u8 smi_shift;       /* 32 (SMIs in the upper half of a word) or 1 (31-bit SMIs) */
	__u8 kind_shift;      /* Code kind: (flags >> kind_shift) & kind_mask */
	__u8 kind_mask;
	__s16 fp_context;     /* context, or a frame-type marker */
	__s16 fp_function;
	__s16 fp_bytecode_array;
	__s16 fp_bytecode_offset;
	__u16 fn_shared;      /* JSFunction::shared */
	__u16 fn_code;        /* JSFunction::code */
	__u16 sfi_sum;        /* the V8_SFI_READ bytes of an SFI the checksum is taken from */
	__u16 sfi_sum_mask;   /* which of them (bit i: byte i): the immutable ones */
	__u16 code_start;     /* Code::instruction_start (a raw pointer) */
	__u16 code_size;      /* Code::instruction_size (u32) */
	__u16 code_flags;     /* Code::flags (u32) */
	__u8 kind_baseline, kind_maglev, kind_turbofan;
	__u8 type_entry;      /* frame types whose caller is C++: EntryFrame, ConstructEntryFrame */
	__u8 type_construct_entry;
	__u8 bc_offset_reg;   /* the interpreter's bytecode offset register (x86-64 number), or
			       * 0xff: a bytecode handler at the leaf has the current offset there */
	__u8 pad[2];
};

/* The per-process map value (key: tgid). V8 may run its embedded builtins from a copy it maps
 * next to its code space: both copies are here, and the interpreter's entry trampolines are
 * offsets into either. */
struct v8_proc {
	struct v8_offsets off;
	__u64 builtins_lo[2], builtins_hi[2]; /* the builtins in the executable, V8's copy (or 0) */
	__u32 interp_lo[V8_INTERP_RANGES];    /* the interpreter's entry trampolines: offsets */
	__u32 interp_hi[V8_INTERP_RANGES];    /* from builtins_lo */
	__u32 handlers_lo, handlers_hi;       /* the bytecode handlers: offsets (0, 0: unknown) */
	__u64 jit_lo[V8_JIT_RANGES];          /* the JIT code mappings (the first ones, for the */
	__u64 jit_hi[V8_JIT_RANGES];          /* walker to see V8 code without a mapping lookup) */
};

/* The frame step's state (v8_step.h), in a per-CPU map in BPF. */
#define V8_W_EXACT (1u << 0) /* pc is the sampled pc, not a return address */

/* Why the walker's loop stopped (struct v8_walk.stop). */
#define V8_STOP_NATIVE 1 /* the next pc is native code (an entry frame's caller): moved */
#define V8_STOP_FAILED 2 /* a frame could not be unwound: back to the native unwinder there */
#define V8_STOP_FULL   3 /* no room left for words */

struct v8_walk {
	struct v8_proc p;      /* copy of the process's map value */
	__u64 pc, sp, fp;      /* in: the frame; out: its caller's */
	__u32 flags;           /* V8_W_* */
	__u64 leaf_bc;         /* at the sample: the bytecode offset register (~0: unknown) */
	__u64 leaf_fn;         /* at the sample: rdi, the JSFunction called (0: unknown); read in
				* a JavaScript prologue, before the function is pushed */
	__u32 nout;            /* words in out[] */
	__u32 replace;         /* 1: out[] replaces the native word of pc; 0: it follows it */
	__u32 found;           /* enum v8_stat of the frame found (V8STAT_INTERP, ...) */
	__u32 entry;           /* the frame was an entry frame: its caller is C++ */
	__u32 active;          /* BPF: the process is known (set at the sample's first call) */
	/* BPF: the walker's loop over consecutive V8 frames */
	__u32 pos;             /* next index in the record's frames */
	__u32 limit;           /* do not write at or past this index */
	__u32 first;           /* the next frame is the one the unwinder handed over */
	__u32 stop;            /* V8_STOP_* */
	__u32 frames;          /* frames unwound in this call */
	__u64 out[V8_MAX_WORDS];
	/* the last JavaScript function read in this sample (a recursion reads it once) */
	__u64 c_fn, c_sfi, c_code, c_a, c_b, c_start;
	__u32 c_size, c_kind;
	__u32 c_code_ok;       /* 0: code not read yet, 1: read (c_start, c_size, c_kind), 2: not
				* readable */
	__u32 c_pad;
	/* read buffers (+8: room for an 8-byte load at any masked offset) */
	__u8 frame[V8_FRAME_READ + 8];
	__u8 obj[V8_OBJ_READ + 8];
	__u8 code[V8_OBJ_READ + 8];
	__u8 sfi[V8_SFI_READ + 8];
	__u64 stack[3];
};

/* 24 bits from the words a checksum covers; the same in BPF and user space. */
static inline __u32 v8_checksum(__u64 a, __u64 b)
{
	__u64 h = a * 0x9e3779b97f4a7c15ULL;

	h ^= (b + 0x7f4a7c15ULL) * 0xc2b2ae3d27d4eb4fULL;
	h ^= h >> 29;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 32;
	return (__u32)h & 0xffffff;
}

#endif
