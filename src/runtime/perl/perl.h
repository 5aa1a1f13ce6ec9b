/* perl.h: the contract between the Perl stack walker in BPF (perl.bpf.h) and user space
 * (perl_runtime.c, perl_proc.c). Only fixed-size types; included by both sides.
 *
 * User space finds the Perl interpreter in a process (an executable named perl with the
 * interpreter linked in, as Debian's, or libperl.so: perl_proc.c), fills one struct perl_proc
 * per process into the `perl_procs` map (key: tgid), and the walker follows the context stack
 * of the sampled thread's interpreter with the offsets of the Perl version.
 *
 * PER SAMPLE: the interpreter (my_perl) is the value of the pthread key PL_thr_key in a
 * threaded build (runtime/rt_tls.h: glibc's key layout, from the process's libc); its current
 * COP (PL_curcop: the statement running) and stack info (PL_curstackinfo) are fields of it (in a
 * non-threaded build, globals). The walk goes through the contexts of each stack info (newest
 * first, then si_prev):
 *   - a sub (CXt_SUB, CXt_FORMAT; not the fake one of a regex code block): its CV's GV (the
 *     effective GV: a sub imported under another name keeps its own) and the pending COP;
 *   - every context's blk_oldcop becomes the pending COP once the previous one was used: it is
 *     the caller's statement, the line of the next sub down;
 *   - the end of the main stack info: the program's file-level code, at the pending COP.
 * A sub whose blk_sub.retop is NULL was called from C (call_sv: a callback of an XS function, a
 * sort sub, a signal handler): the frames down to it are those of one C-level run of the ops
 * (Perl_runops_standard) and end a segment; so does the end of a stack info that is not the
 * main one (a sort block).
 *
 * FRAME WORDS (sampler.h; Perl owns the tags 0x60 - 0x6f), leaf first, two per frame:
 *   FW_TAG_PERL_SUB  bits 0-47 the effective GV of the sub (0: the program's file-level code);
 *                    bit 48: it is the CV of a sub named by a HEK rather than a GV (CvNAMED:
 *                    lexical subs, and since 5.22 most subs of a package that nothing took a
 *                    reference to the glob of)
 *   FW_TAG_PERL_COP  bits 0-47 the COP (the statement: file and line), bits 48-55 the low byte
 *                    of its line (checked when it is read later)
 *   FW_TAG_PERL_MARK data = enum perl_mark.
 *
 * THE WALKER (perl.bpf.h: perl_bpf_walk(), dispatched by runtime/runtime.bpf.h for mappings of
 * kind UNWINDER_PERL): RT_OP_FRAME at Perl_runops_standard (flagged UNW_F_INTERP): the frames of
 * that run of the ops in place of the native frame; RT_OP_DEFER the same segments for a stack
 * snapshot; RT_OP_ONLY every frame of the interpreter.
 */
#ifndef SCORCH_RUNTIME_PERL_H
#define SCORCH_RUNTIME_PERL_H

#include "bpf/sampler.h"
#include "bpf/unwind.h"
#include "runtime/rt_tls.h"

#define FW_TAG_PERL_SUB  (FW_TAG_FIRST(UNWINDER_PERL) + 0) /* 0x60 */
#define FW_TAG_PERL_COP  (FW_TAG_FIRST(UNWINDER_PERL) + 1)
#define FW_TAG_PERL_MARK (FW_TAG_FIRST(UNWINDER_PERL) + 2)

#define PERL_SUB_NAMED_CV (1ULL << 48)
#define PERL_ADDR_MASK    0xffffffffffffULL

enum perl_mark {
	PERL_MARK_BAD_FRAME = 1,
	PERL_MARK_TRUNCATED = 2,
};

enum perl_stat {
	PLSTAT_SAMPLES = 0, /* samples of known Perl processes that reached the walker */
	PLSTAT_NO_INTERP,   /* ... whose thread has no interpreter */
	PLSTAT_HOOKS,       /* native frames in Perl_runops_standard handed to the walker */
	PLSTAT_FRAMES,      /* Perl frames emitted */
	PLSTAT_ERRORS,      /* unreadable contexts */
	PLSTAT_TRUNCATED,   /* walks cut at PERL_MAX_CONTEXTS or the record's end */
	PLSTAT_WALK_NS,     /* time spent in the walker, ns */
	PLSTAT_DEFERRED,    /* samples sent as snapshots whose Perl frames were deferred */
	PLSTAT__COUNT,
};

/* Perl constants (cop.h, sv.h, cv.h) */
#define PERL_CXT_SUB     9
#define PERL_CXT_FORMAT  10
#define PERL_CXT_SUBST   12
#define PERL_CXP_RE_FAKE 0x80
#define PERL_SI_MAIN     1
#define PERL_SVT_PVGV    9
#define PERL_SVT_PVCV    13
#define PERL_SVT_PVHV    12
#define PERL_SVPGV_GP    0x8000
#define PERL_CVF_NAMED   0x8000

/* struct perl_offsets.flags */
#define PERL_F_THREADED  (1u << 0) /* my_perl from PL_thr_key; COP files are char * */
#define PERL_F_HV_AUX_IN_BODY (1u << 1) /* 5.36+: xpvhv_with_aux: the aux struct after the body */

/* Field offsets of one Perl version (x86-64), in bytes. */
struct perl_offsets {
	__u32 version;      /* (5 << 16) | (minor << 8) | patch */
	__u32 flags;
	__u32 interp_curcop, interp_curstackinfo;     /* PerlInterpreter (threaded) */
	__u32 si_cxstack, si_prev, si_cxix, si_type;  /* PERL_SI */
	__u32 cx_size, cx_oldcop, cx_retop, cx_cv;    /* PERL_CONTEXT (cx_type at 0) */
	__u32 cop_line, cop_file;                     /* COP */
	__u32 sv_any, sv_flags, sv_u;                 /* SV head */
	__u32 xcv_stash, xcv_gv, xcv_flags;           /* XPVCV */
	__u32 gp_egv;                                 /* GP */
	__u32 xgv_namehek, xgv_stash;                 /* XPVGV */
	__u32 xhv_max, hv_aux;                        /* XPVHV; the aux's offset after its body */
	__u32 aux_name, aux_name_count;               /* xpvhv_aux */
};

/* The per-process map value (key: tgid). */
struct perl_proc {
	struct rt_tsd tsd;     /* glibc's pthread key layout (threaded) */
	__u32 key;             /* the value of PL_thr_key (threaded) */
	__u32 pad;
	__u64 curinterp;       /* address of PL_curinterp: the main interpreter, when no key */
	__u64 curcop, curstackinfo; /* non-threaded: addresses of PL_curcop, PL_curstackinfo */
	__u64 runops_lo, runops_hi; /* Perl_runops_standard */
	struct perl_offsets off;
};

#endif
