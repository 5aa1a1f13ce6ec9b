/* hotspot.h: the contract between the HotSpot (JVM) stack walker in BPF (hotspot.bpf.h, whose
 * frame step hotspot_step.h also runs in user space) and user space (hotspot_runtime.c,
 * hotspot_vm.c, hotspot_code.c). Only fixed-size types; included by both sides.
 *
 * User space finds libjvm.so in a process, reads the JVM's own description of its structures
 * (gHotSpotVMStructs / gHotSpotVMTypes, hotspot_vm.c), fills one struct hs_proc per process
 * into the `hs_procs` map (key: tgid) and claims the code cache for UNWINDER_HOTSPOT, so the
 * native unwinder hands every pc in it to the walker.
 *
 * FRAME WORDS (sampler.h; HotSpot owns the tags 0x20 - 0x2f). One Java frame is two words,
 * leaf first:
 *   word 1  FW_TAG_HS_INTERP  data = Method*               an interpreted frame
 *           FW_TAG_HS_JIT     data = nmethod*              a compiled frame (C1, C2, or the
 *                                                          wrapper of a native method); user
 *                                                          space expands the inlined methods
 *           FW_TAG_HS_STUB    data = CodeBlob*             a stub, adapter or runtime blob
 *   word 2  FW_TAG_HS_INFO    bits 0-23:  the bytecode index (interpreted) or the pc's offset
 *                                         from the blob's code_begin (JIT, stub); HS_NO_POS
 *                                         when not known
 *                             bits 24-55: the cookie that ties the pointer to the object that
 *                                         was there at the sample: ConstMethod* >> 3
 *                                         (interpreted), the nmethod's compile id (JIT), the
 *                                         blob's name pointer >> 3 (stub); low 32 bits
 *                             user space drops a frame whose cookie no longer matches
 *   FW_TAG_HS_MARK (one word, data = enum hs_mark): the walker could not go on there.
 * A JIT frame word pair stands for the compiled method and every method inlined into it at
 * that pc (PcDesc + scopes, user space), so it may become several frames.
 *
 * THE WALKER (hotspot.bpf.h: hotspot_bpf_walk(), dispatched by runtime/runtime.bpf.h for the
 * claimed code cache, mappings flagged UNW_MAP_RUNTIME of kind UNWINDER_HOTSPOT):
 *   RT_OP_FRAME  replaces the native word of the pc by the frame's two words, unwinds it (and
 *                every following frame whose pc is in the code cache) and hands the first pc
 *                outside back to the native unwinder (UNW_HOOK_MOVED), e.g. libjvm's
 *                JavaCalls::call_helper under the call stub, or JNI code called from Java.
 *   RT_OP_DEFER, RT_OP_ONLY: nothing (the frames are on the native stack; a stack snapshot
 *                unwinds them in user space with the same step).
 * Counters: the hs_stats map (enum hs_stat), printed by `scorch record --stats`.
 */
#ifndef SCORCH_RUNTIME_HOTSPOT_H
#define SCORCH_RUNTIME_HOTSPOT_H

#ifndef __VMLINUX_H__ /* user space; BPF has the types from vmlinux.h */
#include <linux/types.h>
#endif
#include "bpf/sampler.h"
#include "bpf/unwind.h"

#define FW_TAG_HS_INTERP (FW_TAG_FIRST(UNWINDER_HOTSPOT) + 0) /* 0x20 */
#define FW_TAG_HS_JIT    (FW_TAG_FIRST(UNWINDER_HOTSPOT) + 1)
#define FW_TAG_HS_STUB   (FW_TAG_FIRST(UNWINDER_HOTSPOT) + 2)
#define FW_TAG_HS_INFO   (FW_TAG_FIRST(UNWINDER_HOTSPOT) + 3)
#define FW_TAG_HS_MARK   (FW_TAG_FIRST(UNWINDER_HOTSPOT) + 4)

#define HS_NO_POS 0xffffffULL
#define HS_INFO(cookie, pos) \
	((FW_TAG_HS_INFO << FW_TAG_SHIFT) | (((__u64)(cookie) & 0xffffffffULL) << 24) | \
	 ((__u64)(pos) & HS_NO_POS))
#define HS_INFO_POS(w) ((__u32)((w) & HS_NO_POS))
#define HS_INFO_COOKIE(w) ((__u32)(((w) >> 24) & 0xffffffffULL))

enum hs_mark {
	HS_MARK_NO_BLOB = 1,  /* a pc in the code cache outside every code blob */
	HS_MARK_BAD_READ = 2, /* a frame or code blob could not be read */
	HS_MARK_BAD_FRAME = 3, /* the frame's layout makes no sense (sp would not move up) */
	HS_MARK_TRUNCATED = 4, /* more Java frames than a sample keeps */
};

/* Why a step failed (struct hs_walk's cause): the finer reason behind the mark, counted per
 * cause in hs_stats (HSSTAT_CAUSE + cause). */
enum hs_cause {
	HS_CAUSE_NONE = 0,
	HS_CAUSE_NO_HEAP,    /* the pc is in no code heap */
	HS_CAUSE_NO_BLOCK,   /* the segment map leads to no block, a free one, or one too short */
	HS_CAUSE_READ_BLOB,  /* the segment map, blob header or blob name could not be read */
	HS_CAUSE_FRAME_SIZE, /* the blob's frame size is larger than HS_MAX_FRAME */
	HS_CAUSE_LAYOUT,     /* interpreter frame slots out of the step's window */
	HS_CAUSE_INTERP_FP,  /* interpreted frame: rbp is no frame pointer above sp */
	HS_CAUSE_PROLOGUE,   /* leaf in a prologue: no return address at sp or above rbp */
	HS_CAUSE_STUB_FP,    /* a caller frame in a stub without frame size nor frame pointer */
	HS_CAUSE_READ_FRAME, /* the frame's slots or return address could not be read */
	HS_CAUSE_SP,         /* the caller's sp would not be above sp (or too far) */
	HS_CAUSE_PC0,        /* the caller's pc is 0 */
	HS_CAUSE__COUNT,
};

/* Counters in the hs_stats map (per CPU). */
enum hs_stat {
	HSSTAT_SAMPLES = 0,   /* samples whose unwind entered the code cache of a known JVM */
	HSSTAT_HOOKS,         /* calls from the native unwinder */
	HSSTAT_INTERP,        /* interpreted frames emitted */
	HSSTAT_JIT,           /* compiled frames emitted */
	HSSTAT_STUB,          /* stub frames emitted */
	HSSTAT_ERRORS,        /* walks ended by an enum hs_mark */
	HSSTAT_PROLOGUE,      /* leaf frames caught in a prologue or epilogue */
	HSSTAT_DEOPT,         /* frames returning into a deoptimization handler */
	HSSTAT_CACHE_HITS,    /* frames whose blob was the one of the previous frame */
	HSSTAT_WALK_NS,       /* time spent in the walker, ns */
	HSSTAT_FAIL_LEAF,     /* walks that failed at their first frame */
	HSSTAT_FAIL_INTERP,   /* walks that failed at an interpreted frame */
	HSSTAT_FAIL_JIT,      /* ... at a compiled frame (nmethod, native wrapper) */
	HSSTAT_FAIL_STUB,     /* ... at a stub or adapter */
	HSSTAT_CAUSE,         /* HS_CAUSE__COUNT counters from here: walks failed per cause */
	HSSTAT__COUNT = HSSTAT_CAUSE + HS_CAUSE__COUNT,
};

#define HS_MAX_HEAPS 4

/* One code heap (CodeHeap): reserved range, its segment map and segment size. */
struct hs_heap {
	__u64 lo, hi;     /* [lo, hi): _memory low boundary .. high boundary */
	__u64 segmap;     /* address of the segment map (one byte per segment) */
	__u32 log2_seg;   /* log2 of the segment size */
	__u32 pad;
};

/* The per-process map value (key: tgid), and what the frame step needs. Offsets in bytes;
 * interpreter frame slots in words relative to the frame pointer. */
struct hs_proc {
	__u64 cc_lo, cc_hi;          /* CodeCache::_low_bound / _high_bound */
	__u64 interp_lo, interp_hi;  /* the template interpreter's code (AbstractInterpreter) */
	struct hs_heap heaps[HS_MAX_HEAPS];
	__u32 nheaps;
	__u32 version;               /* major << 16 | minor << 8 | security (capped at 255) */
	__u16 hb_size;               /* sizeof(HeapBlock): the blob follows its block header */
	__u16 hb_used;               /* HeapBlock::Header::_used (byte) */
	__u16 cb_name;               /* CodeBlob::_name (const char *) */
	__u16 cb_size;               /* CodeBlob::_size (int) */
	__u16 cb_frame_complete;     /* CodeBlob::_frame_complete_offset (int) */
	__u16 cb_frame_size;         /* CodeBlob::_frame_size (int, words) */
	__u16 cb_code_begin;         /* CodeBlob::_code_begin (address) */
	__u16 nm_compile_id;         /* nmethod::_compile_id (int) */
	__u16 nm_orig_pc_offset;     /* nmethod::_orig_pc_offset (int) */
	__u16 nm_deopt_handler;      /* CompiledMethod::_deopt_handler_begin (address) */
	__u16 nm_deopt_mh_handler;   /* CompiledMethod::_deopt_mh_handler_begin (address) */
	__u16 m_const_method;        /* Method::_constMethod */
	__u16 cm_size;               /* sizeof(ConstMethod): the bytecodes follow it */
	__s16 if_method;             /* interpreter frame: Method* slot (-3) */
	__s16 if_bcp;                /* bytecode pointer slot (-8; -7 before JDK 9) */
	__s16 if_sender_sp;          /* the caller's sp (-1) */
};

/* Interpreter frame slots the step reads: fp + 8 * (HS_SLOT_LO .. HS_SLOT_LO + HS_SLOTS). */
#define HS_SLOT_LO (-10)
#define HS_SLOTS 12
/* Bytes of a block header + code blob header read at once (power of two): user space
 * refuses layouts whose fields lie beyond it. */
#define HS_HDR 512
#define HS_HDR_MIN 128 /* read when HS_HDR bytes cross the end of the mapping */
#define HS_MAX_HOPS 16 /* segment map hops (one hop covers up to 254 segments) */
#define HS_MAX_FRAME (1u << 20) /* bytes: a larger frame is taken for garbage */

/* What the frame step remembers across the frames of one sample. */
struct hs_blob {
	__u64 lo, hi;        /* [blob, blob + size) */
	__u64 code_begin;
	__u64 deopt, deopt_mh;
	__u32 kind;          /* enum hs_blob_kind */
	__s32 frame_complete;
	__u32 frame_size;    /* bytes */
	__u32 cookie;
	__s32 orig_pc_offset;
	__u32 pad;
};

enum hs_blob_kind {
	HS_BLOB_NMETHOD = 1, /* "nmethod" */
	HS_BLOB_NATIVE,      /* "native nmethod": the compiled wrapper of a native method */
	HS_BLOB_INTERP,      /* "Interpreter" */
	HS_BLOB_ADAPTER,     /* "I2C/C2I adapters", vtable and itable stubs: frameless */
	HS_BLOB_STUB,        /* everything else */
};

#define HS_W_RETADDR (1u << 0) /* pc is a return address */

/* The state of the frame step (hotspot_step.h) for one sample: the registers of the frame
 * being unwound, the blob of the previous frame, scratch buffers. */
struct hs_walk {
	struct hs_proc p;
	__u64 pc, sp, bp;
	__u32 flags;         /* HS_W_* */
	__u32 mark;          /* enum hs_mark when a step failed */
	__u64 out[2];        /* the frame's two words */
	__u32 pos, limit;    /* BPF: where the words go in the record */
	__u32 active;        /* the process is a known JVM */
	__u32 frames;
	__u32 prologue, deopt, hits;
	__u32 kind_last;     /* the kind of the last frame stepped, failed or not (0: no blob) */
	__u32 cause;         /* enum hs_cause when a step failed */
	__u32 pad2;
	struct hs_blob blob; /* the last blob found (hi == 0: none) */
	__u8 buf[HS_HDR + 8];
	__u64 slots[16];     /* HS_SLOTS used: a power of two for the verifier */
};

#endif
