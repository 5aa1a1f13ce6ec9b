/* ruby.h: the contract between the CRuby stack walker in BPF (ruby.bpf.h) and user space
 * (ruby_runtime.c, ruby_proc.c, ruby_sym.c). Only fixed-size types; included by both sides.
 *
 * User space finds CRuby in a process (libruby-X.Y.so or a `ruby` executable with the VM linked
 * in: ruby_proc.c), fills one struct rb_proc per process into the `rb_procs` map (key: tgid),
 * and the walker follows the control frames of the sampled thread's execution context with
 * those offsets (per version, ruby_offsets.c: CRuby exports no layout).
 *
 * PER SAMPLE: the execution context (rb_execution_context_t) of the sampled thread is the
 * thread-local ruby_current_ec (runtime/rt_tls.h: general dynamic in Debian's libruby), else
 * the main ractor's running_ec. Its control frames run from ec->cfp (newest) up to the end of
 * the VM stack, a dummy frame marking the bottom. Per frame the walker reads the frame, its
 * environment (ep[-2..0]: method entry or cref, specval, flags), and:
 *   - a C function frame (VM_FRAME_MAGIC_CFUNC): the method entry of the function;
 *   - an iseq frame (method, block, class body, top, eval, rescue/ensure): the iseq, the
 *     instruction index of cfp->pc and, when one is found up the environment chain (a block's
 *     method), the method entry that names its class;
 *   - other frames (IFUNC: a C block) are skipped.
 * A frame with VM_FRAME_FLAG_FINISH is the first frame of one C-level call of the VM loop
 * (rb_vm_exec, whose loop is vm_exec_core): it ends a segment.
 *
 * FRAME WORDS (sampler.h; Ruby owns the tags 0x40 - 0x4f), leaf first:
 *   iseq frame    FW_TAG_RUBY_ISEQ (iseq address), FW_TAG_RUBY_INFO, [FW_TAG_RUBY_CME when the
 *                 frame has a method entry: bits 0-47 its address, bits 48-55 the low byte of
 *                 rb_checksum() of its definition]
 *   C function    FW_TAG_RUBY_CFUNC (method entry address), FW_TAG_RUBY_INFO
 *   FW_TAG_RUBY_INFO data: bits 0-31  instruction index of cfp->pc ((pc - iseq_encoded) / 8)
 *                                     or RB_POS_UNKNOWN
 *                          bits 32-55 rb_checksum() of what the first word names (the iseq's
 *                                     body pointer and size; the method entry's definition)
 *   FW_TAG_RUBY_MARK data = enum rb_mark, in place of frames the walker could not read.
 *
 * THE WALKER (ruby.bpf.h: ruby_bpf_walk(), dispatched by runtime/runtime.bpf.h for mappings of
 * kind UNWINDER_RUBY):
 *   RT_OP_FRAME  at vm_exec_core or rb_vm_exec (the ranges user space flagged UNW_F_INTERP):
 *                the frames of that C-level call of the VM, up to its FINISH frame, in place
 *                of the native frame; rb_vm_exec right after a vm_exec_core of the same call
 *                only loses its native frame. In YJIT code (a claimed range: no unwind data):
 *                every remaining frame, then the unwind stops.
 *   RT_OP_DEFER  the same segments for a stack snapshot; each vm_exec_core segment is followed
 *                by an empty FW_SEGMENT_DROP_NATIVE one for its rb_vm_exec.
 *   RT_OP_ONLY   every frame of the thread in place of the native stack.
 * Counters: the rb_stats map (enum rb_stat), printed by `scorch record --stats`.
 */
#ifndef SCORCH_RUNTIME_RUBY_H
#define SCORCH_RUNTIME_RUBY_H

#include "bpf/sampler.h"
#include "bpf/unwind.h"
#include "runtime/rt_tls.h"

#define FW_TAG_RUBY_ISEQ  (FW_TAG_FIRST(UNWINDER_RUBY) + 0) /* 0x40 */
#define FW_TAG_RUBY_INFO  (FW_TAG_FIRST(UNWINDER_RUBY) + 1)
#define FW_TAG_RUBY_CME   (FW_TAG_FIRST(UNWINDER_RUBY) + 2)
#define FW_TAG_RUBY_CFUNC (FW_TAG_FIRST(UNWINDER_RUBY) + 3)
#define FW_TAG_RUBY_MARK  (FW_TAG_FIRST(UNWINDER_RUBY) + 4)

#define RB_POS_UNKNOWN 0xffffffffULL
#define RB_MAX_EP 8 /* environments climbed to find a block's method entry */

enum rb_mark {
	RB_MARK_BAD_FRAME = 1, /* a control frame or its environment could not be read */
	RB_MARK_TRUNCATED = 2, /* more frames than the walker reads per sample */
};

/* Counters in the rb_stats map (per CPU). */
enum rb_stat {
	RBSTAT_SAMPLES = 0, /* samples of known CRuby processes that reached the walker */
	RBSTAT_NO_EC,       /* ... whose thread has no execution context (not a Ruby thread) */
	RBSTAT_HOOKS,       /* native frames in the VM loop handed to the walker */
	RBSTAT_FRAMES,      /* Ruby frames emitted */
	RBSTAT_ERRORS,      /* unreadable control frames or environments */
	RBSTAT_TRUNCATED,   /* walks cut at RB_MAX_FRAMES or the record's end */
	RBSTAT_WALK_NS,     /* time spent in the walker, ns */
	RBSTAT_DEFERRED,    /* samples sent as snapshots whose Ruby frames were deferred */
	RBSTAT_JIT,         /* samples whose unwind met YJIT code */
	RBSTAT__COUNT,
};

/* VM constants (vm_core.h, method.h, internal/imemo.h; unchanged from 3.0 to 3.4). */
#define RB_FRAME_MAGIC_MASK  0x7fff0001ULL
#define RB_FRAME_MAGIC_CFUNC 0x55550001ULL
#define RB_FRAME_MAGIC_IFUNC 0x66660001ULL
#define RB_FRAME_MAGIC_DUMMY 0x79990001ULL
#define RB_FRAME_FLAG_FINISH 0x0020ULL
#define RB_ENV_FLAG_LOCAL    0x0002ULL
#define RB_T_MASK            0x1fULL
#define RB_T_IMEMO           0x1aULL
#define RB_IMEMO_SHIFT       12
#define RB_IMEMO_SVAR        2
#define RB_IMEMO_MENT        6

/* struct rb_offsets.flags */
#define RB_F_LINENO_VALUE   (1u << 0) /* 3.1: location.first_lineno is a Fixnum VALUE */
#define RB_F_STR_LEN_FLAGS  (1u << 1) /* 3.1: an embedded string's length is in its flags */
#define RB_F_CLASS_IV_TBL   (1u << 2) /* 3.1: class path in the class's ivar st_table */
#define RB_F_CLASS_IV_PTR   (1u << 3) /* 3.2: class path is the first ivar of the class */
#define RB_F_CLASS_PATH     (1u << 4) /* 3.3+: classext->classpath */

/* Field offsets of one CRuby version (x86-64), in bytes. */
struct rb_offsets {
	__u32 version;        /* (major << 16) | (minor << 8) | patch */
	__u32 flags;          /* RB_F_* */
	/* rb_execution_context_t */
	__u32 ec_vm_stack, ec_vm_stack_size, ec_cfp;
	/* rb_control_frame_t: pc 0, iseq 16, ep 32 in every version; its size varies */
	__u32 cfp_size;
	/* rb_iseq_t, rb_iseq_constant_body */
	__u32 iseq_body;
	__u32 body_type, body_size, body_encoded, body_location, body_insn_info,
	      body_insn_info_size, body_succ_table, body_local_iseq;
	__u32 loc_first_lineno;
	__u32 insn_info_entry; /* sizeof(struct iseq_insn_info_entry); line_no at 0 */
	/* rb_callable_method_entry_t, rb_method_definition_t */
	__u32 me_defined_class, me_def, me_owner, def_original_id;
	/* rb_ractor_t */
	__u32 ractor_running_ec;
	/* RString, RArray */
	__u32 str_len, str_heap_ptr, str_embed;
	__u32 ary_embed_len_mask; /* of (flags >> 15) */
	/* classes: where the class extension is (RClass + N, or the pointer at N) */
	__u32 class_ext;          /* 3.1: RClass.ptr (a pointer); 3.2+: offset of the inline ext */
	__u32 ext_iv_tbl;         /* 3.1: classext.iv_tbl; 3.2: classext.iv_ptr */
	__u32 ext_classpath, ext_attached; /* 3.3+ */
	__u32 singleton_flag;     /* FL_SINGLETON: FL_USER0 (3.1 - 3.3) or FL_USER1 (3.4) */
	/* symbols */
	__u32 last_op_id;         /* tLAST_OP_ID */
	__u32 symbols_ids;        /* rb_symbols_t.ids */
};

/* The per-process map value (key: tgid). */
struct rb_proc {
	struct rt_tls ec_tls;    /* ruby_current_ec; mode RT_TLS_NONE: use main_ractor */
	__u64 main_ractor;       /* address of ruby_single_main_ractor (the variable), or 0 */
	__u64 exec_lo, exec_hi;  /* rb_vm_exec */
	__u64 core_lo, core_hi;  /* vm_exec_core (0 when not found) */
	struct rb_offsets off;
};

/* The checksum that ties an address in the frame words to the object that was there when the
 * sample was taken: 24 bits of two of its fields. Computed the same way in BPF and in user
 * space. */
static inline __u32 rb_checksum(__u64 a, __u64 b)
{
	__u32 h = (__u32)(a >> 3) * 0x9e3779b1u;

	h ^= (__u32)(a >> 35) * 0x7feb352du;
	h ^= (__u32)b * 0x85ebca6bu;
	h ^= h >> 15;
	return h & 0xffffff;
}

#endif
