/* unwind.h: the contract between the table-driven user-stack unwinder in BPF
 * (unwind_user.bpf.h, unwind_step.h) and the user space that fills its maps
 * (src/agent/unwind_table.c builds per-file tables, src/agent/unwinder.c loads them).
 * Only fixed-size types; included by BPF and by user space.
 *
 * MAPS (all sizes set by user space before load; see docs/unwinding.md)
 *   unw_entries  ARRAY  u32 -> struct unwind_entry     every file's table, one slice per file
 *   unw_maps     ARRAY  u32 -> struct unwind_mapping   every process's executable mappings,
 *                                                      one slice per process, sorted by start
 *   unw_pids     HASH   u32 pid -> struct unwind_pid   where a process's slice is
 *   unw_stats    PERCPU_ARRAY enum unwind_stat -> u64
 *   rt_pids      HASH   u32 pid -> u32 mask of the unwinder kinds present in the process
 *                       (1 << kind; runtime/runtime.bpf.h, filled by src/runtime/runtime.c)
 *   unw_exec_hot HASH   struct unwind_exec_key -> u8  executables whose processes are mostly
 *                                                      sampled: their exec wakes user space,
 *                                                      which reads them at once
 *   unw_jit      HASH   u32 pid -> struct unwind_jit_links  where the process's PCRE2 calls
 *                                                      its JIT code (UNW_MAP_JIT_LINKS)
 *
 * struct unwind_entry (8 bytes). A file's table is a slice of unw_entries sorted by pc; entry i
 * holds for link-time addresses [base + pc_i, base + pc_{i+1}); the last entry of a table is
 * UNW_INVALID. The slice of a large table goes on with its page index (PAGE INDEX below). For an address a in the process, the entry is the last one with
 * pc <= a - mapping.bias (bias = load bias + table base).
 *   offset size field
 *   0      4    pc     address relative to the table base
 *   4      2    off    UNW_CFA_RSP / UNW_CFA_RBP: CFA = reg + off (unsigned)
 *                      UNW_PLT: low byte = base, high byte = threshold:
 *                               CFA = rsp + base + ((pc & 15) >= threshold ? 8 : 0)
 *                      UNW_DEREF_RBP: CFA = *(rbp + (s16)off)
 *                      UNW_GO_SYSTEMSTACK: low byte = offset of m.curg / 8, high byte =
 *                               offset of g.sched.bp / 8
 *                      UNW_GO_MORESTACK: low byte = offset of m.curg / 8, high byte =
 *                               offset of g.atomicstatus / 4
 *   6      1    kind   low 4 bits enum unwind_kind, high bits UNW_F_* (UNW_F_INTERP,
 *                      UNW_F_BIG and its UNW_BIG_HIGH bits)
 *   7      1    rbp    s8: 0 = RBP unchanged in the caller; else the caller's RBP is saved at
 *                      CFA + 8 * rbp (for UNW_DEREF_RBP, always: at old RBP + 8 * rbp;
 *                      for UNW_GO_SYSTEMSTACK and UNW_GO_MORESTACK: the thread's g is at
 *                      fs base + 8 * rbp)
 * The return address is always at CFA - 8 (x86-64); rows whose CFI says otherwise are
 * UNW_INVALID.
 */
#ifndef SCORCH_BPF_UNWIND_H
#define SCORCH_BPF_UNWIND_H

#include "bpf/sampler.h"

/* Which unwinder owns a mapping (struct unwind_mapping.kind), and which runtime owns a range
 * of frame-word tags (sampler.h: kind k owns tags k << 4 .. (k << 4) + 15). The BPF dispatch on
 * it is runtime/runtime.bpf.h; user space's table of runtimes is src/runtime/runtime.c. */
enum unwinder_kind {
	UNWINDER_NATIVE = 0,  /* machine code with CFI or frame pointers */
	UNWINDER_PYTHON = 1,  /* CPython (runtime/python/) */
	UNWINDER_HOTSPOT = 2, /* reserved: the HotSpot JVM */
	UNWINDER_V8 = 3,      /* reserved: Node.js / V8 */
	UNWINDER_RUBY = 4,    /* reserved */
	UNWINDER_PHP = 5,     /* reserved */
	UNWINDER_PERL = 6,    /* reserved */
	UNWINDER_DOTNET = 7,  /* reserved */
	UNWINDER_KINDS = 16,  /* kinds 8 - 15 are free; 16 tag ranges of 16 tags fill the top byte */
};

enum unwind_kind {
	UNW_INVALID = 0,   /* no rule: the unwind stops with an error marker */
	UNW_CFA_RSP = 1,
	UNW_CFA_RBP = 2,
	UNW_PLT = 3,
	UNW_DEREF_RBP = 4,
	UNW_SIGNAL = 5,    /* a signal trampoline: registers come from the rt_sigframe */
	UNW_STOP = 6,      /* the outermost frame (_start, thread entry): the stack is complete */
	UNW_GO_SYSTEMSTACK = 7, /* Go's runtime.systemstack called a function on the system stack
			    * (g0): the goroutine that switched there goes on from its saved
			    * registers, found from the thread's g (UNW_GO_* below); when they cannot
			    * be read, a STOP */
	UNW_GO_ASMCGOCALL = 8, /* Go's runtime.asmcgocall called C code on the system stack: the
			    * goroutine's SP is found from what asmcgocall saved on that stack
			    * (off: low byte = slot of the g / 8, high byte = slot of the depth /
			    * 8; a g of 0: the depth slot holds the SP itself) */
	UNW_GO_MORESTACK = 9, /* Go's runtime.morestack called runtime.newstack on the system stack
			    * to grow the goroutine's stack: while newstack copies it (m.curg's
			    * status is _Gcopystack), the goroutine goes on from g.sched, where
			    * morestack saved the registers of the function that called it (off:
			    * low byte = offset of m.curg / 8, high byte = offset of
			    * g.atomicstatus / 4; rbp: as UNW_GO_SYSTEMSTACK); else a STOP */
	UNW_RA_REG = 10,   /* the return address is in a register, not on the stack (glibc's __vfork
			    * pops it into rdi across the syscall: DW_CFA_register): CFA = rsp + off,
			    * the address in register rbp (a DWARF number: 5, rdi), known only at
			    * the leaf, from the sample's registers (unw_state.leaf_di); elsewhere no
			    * rule */
};

#define UNW_KIND_MASK 0x0f
#define UNW_F_INTERP  0x80 /* the address is inside an interpreter's eval loop: the walker of
                            * the mapping's kind is called there (unwind_step.h:
                            * UNW_RUNTIME_HOOK) */
#define UNW_F_BIG     0x40 /* UNW_CFA_RSP / UNW_CFA_RBP with a frame of 64 KiB or more: the
			    * CFA offset is 8 * (off | bits 4-5 of kind << 16), up to 2 MiB
			    * (rustc has a 540,080-byte frame) */
#define UNW_BIG_HIGH  0x30
/* The CFA offset of an UNW_CFA_RSP / UNW_CFA_RBP entry, without a branch (a branch in the
 * step costs the verifier more than the arithmetic): bits 4-5 of kind are 0 unless big. */
#define UNW_CFA_OFF(e) \
	(((__u64)(e)->off | (__u64)((e)->kind & UNW_BIG_HIGH) << 12) << \
	 ((((e)->kind & UNW_F_BIG) >> 6) * 3))

struct unwind_entry {
	__u32 pc;
	__u16 off;
	__u8 kind;
	__s8 rbp;
};

/* struct unwind_mapping.flags */
#define UNW_MAP_FP       (1u << 0) /* no table: frame-pointer rule (CFA = rbp + 16) */
#define UNW_MAP_NO_TABLE (1u << 1) /* the table is not loaded (too big, no space, unreadable) */
#define UNW_MAP_VDSO     (1u << 2)
#define UNW_MAP_INTERP   (1u << 3) /* the file has UNW_F_INTERP entries */
#define UNW_MAP_RUNTIME  (1u << 4) /* the whole range belongs to the runtime of `kind` (JIT code
				    * a runtime claimed): its walker is called for every pc in it */
#define UNW_MAP_ANON     (1u << 5) /* anonymous memory (JIT code): its frame-pointer rule is a
				    * guess, the caller it gives is kept only if it is in a known
				    * mapping (unwind_step.h: UNW_S_GUESSED) */
#define UNW_MAP_JIT_LINKS (1u << 6) /* anonymous memory in a process that has PCRE2: the
				     * process has struct unwind_jit_links (unw_jit), tried before
				     * the frame-pointer guess (unwind_step.h: unwind_jit_link()) */

/* One executable mapping of a process (40 bytes). */
struct unwind_mapping {
	__u64 start, end;   /* [start, end) in the process */
	__u64 bias;         /* process address - bias = table-relative pc */
	__u32 table_first;  /* index in unw_entries of the file's first entry */
	__u32 table_count;
	__u16 flags;        /* UNW_MAP_* */
	__u8 kind;          /* enum unwinder_kind: whose walker UNW_F_INTERP entries and
			     * UNW_MAP_RUNTIME ranges call */
	__u8 index_shift;   /* the table's page index: buckets of 1 << index_shift bytes (0:
			     * no index, the whole table is searched) */
	__u32 index_count;  /* buckets in the page index */
};

/* PAGE INDEX. A lookup at 19 Hz finds every cache line cold, so a binary search over a big
 * table (cc1: 430,000 entries, 19 probes on 19 lines of 16 pages) costs more than the rest of
 * the frame. A table of UNW_INDEX_MIN_ENTRIES or more is followed in unw_entries by a page
 * index: index_count u32 words, two per entry slot (the word i at slot table_first +
 * table_count + i / 2, low half first), where word b is the index (from table_first) of the
 * entry holding table-relative address b << index_shift. The entry for rel is then between
 * words rel >> shift and rel >> shift + 1: one read of the index and a search of a few
 * entries on one line. User space picks the smallest shift that keeps the index at most
 * table_count / 4 + 2 words (UNW_INDEX_WORDS): about 4 entries per bucket, and the index costs
 * an eighth of the table. */
#define UNW_INDEX_MIN_ENTRIES 16
#define UNW_INDEX_WORDS(count) ((count) >= UNW_INDEX_MIN_ENTRIES ? (count) / 4 + 2 : 0)
#define UNW_INDEX_SLOTS(count) ((UNW_INDEX_WORDS(count) + 1) / 2)

/* An executable as /proc/PID/maps names it (key of unw_exec_hot). */
struct unwind_exec_key {
	__u64 ino;
	__u32 dev_major;
	__u32 dev_minor;
};

#define UNW_EXEC_HOT_MAX 4096

struct unwind_pid {
	__u32 first;  /* index in unw_maps */
	__u32 count;  /* number of mappings, sorted by start, not overlapping */
	__u32 flags;  /* UNW_PID_* */
};

/* struct unwind_pid.flags */
#define UNW_PID_UNSEEN (1u << 0) /* published at its exec, before user space saw a sample of
				  * it: samples still carry the process's lineage (sampler.h) */
#define UNW_PID_EAGER (1u << 1)  /* a young process of a runtime (its first UNWINDER_EAGER_NS):
				  * a sample that went through a runtime's walker wakes the
				  * reader, which reads what the frames name before the process
				  * exits or frees it (docs/runtimes.md, "Short-lived processes") */

#define UNW_MAIN_STACK_SPAN (64ULL << 20) /* below mm->start_stack: the main thread's stack (the
					      * kernel keeps at least 128 MiB free below it); an
					      * sp elsewhere is UNW_S_OFF_STACK */

/* PCRE2 JIT LINKS. PCRE2's JIT code (SLJIT) has no unwind information and no frame pointer,
 * but it is entered from two known places in libpcre2 (pcre2_jit_match() calls it, or calls
 * jit_machine_stack_exec() which calls it), with a pointer to a struct jit_arguments that
 * lives at a fixed place in pcre2_jit_match()'s frame, and the JIT code keeps that pointer in
 * rbp for the whole body of the matcher (PCRE2's ARGUMENTS register, SLJIT's saved register
 * S4, rbp on x86-64). A link says: when rbp is that pointer A, the return address of the call
 * into the JIT code is at A - below, and its value is ra (absolute, in this process).
 * unwind_jit_link() (unwind_step.h) checks, nearest to A first, that the word at A - below is
 * exactly ra; user space (src/agent/pcre_jit.c) finds the links in the file and checks that
 * the caller's CFI restores rbp from its stack, so the caller's rbp is never needed. */
#define UNW_JIT_LINKS_MAX 6        /* two per library: libpcre2-8, -16, -32 */
#define UNW_JIT_MAX_REACH (1u << 20) /* A is at most this far above the JIT frame's sp */
#define UNW_JIT_PIDS_MAX 4096

struct unwind_jit_link {
	__u64 ra;     /* the return address after the call into the JIT code */
	__u64 below;  /* where it is: A - below, A the jit_arguments pointer (rbp) */
};

struct unwind_jit_links {
	__u32 count;  /* links used, sorted by below, smallest first */
	__u32 pad;
	struct unwind_jit_link link[UNW_JIT_LINKS_MAX];
};

#define UNW_MAX_PID_MAPPINGS 4096   /* mappings per process (16 lookup steps) */
#define UNW_MAX_FILE_ENTRIES (1u << 24) /* entries per file (24 lookup steps) */

/* Counters in unw_stats. */
enum unwind_stat {
	USTAT_UNWINDS = 0,     /* user stacks unwound from tables */
	USTAT_FRAMES,          /* native frames produced */
	USTAT_COMPLETE,        /* stacks that reached the outermost frame (UNW_STOP or pc 0) */
	USTAT_TRUNCATED,       /* stacks cut at MAX_USER_WORDS */
	USTAT_ERR_NO_PID,      /* the process has no tables yet (a snapshot is sent instead) */
	USTAT_ERR_NO_MAPPING,  /* a pc outside every known mapping */
	USTAT_ERR_NO_TABLE,    /* the mapping's table is not loaded */
	USTAT_ERR_INVALID,     /* the pc has no rule */
	USTAT_ERR_READ,        /* reading the stack failed */
	USTAT_ERR_LOOP,        /* the CFA did not move up the stack */
	USTAT_SIGNAL_FRAMES,   /* signal frames crossed */
	USTAT_SNAPSHOTS,       /* stack snapshots sent for user-space unwinding */
	USTAT_SNAPSHOT_ERRORS, /* snapshot copy failed */
	USTAT_FROM_KERNEL,     /* samples in kernel mode (user registers from pt_regs) */
	USTAT_SNAPSHOTS_CHAINED, /* snapshots that went on in EVENT_STACK_CHUNK records */
	USTAT_SNAPSHOTS_UNCHAINED, /* ... that should have (all or some chunks), but the ring
				    * buffer was too full */
	USTAT_ERR_BAD_PC,      /* a pc no user code can have (top byte set: garbage taken for a
				* return address); not emitted, the stack ends in [unwind error] */
	USTAT_STACK_SWITCH,    /* stacks that end in [stack switch]: code that moved to another
				* stack without a link we can follow (unwind_step.h), or the
				* base of a stack that is not the thread's (makecontext) */
	USTAT_SWITCHES,        /* stack switches followed (CFA from rbp on another stack) */
	USTAT_EXEC,            /* samples inside execve() past the point of no return: the user
				* registers belong to the image just replaced; one [exec] word */
	USTAT__COUNT,
};

/* What a runtime walker tells the native unwinder (unwind_step.h: UNW_RUNTIME_HOOK). */
#define UNW_HOOK_NATIVE 0 /* go on with the native rule for st->pc/sp/bp */
#define UNW_HOOK_STOP   1 /* the unwind is over (st->result set) */
#define UNW_HOOK_MOVED  2 /* the walker unwound the frame: st->pc/sp/bp are the caller's */

/* The unwinder's state (unwind_step.h), shared with interpreter walkers: registers of the frame
 * being unwound, where the process's mappings are, and how the unwind ended. */
#define UNW_S_RETADDR (1u << 0) /* pc is a return address: look up pc - 1 */
#define UNW_S_OFF_STACK (1u << 1) /* the leaf's sp is not on the thread's own stack (the main
				   * thread's, below mm->start_stack): an unwind that fails
				   * before crossing a signal frame or a followed switch ends
				   * with [stack switch] instead of [unwind error] */
#define UNW_S_GUESSED   (1u << 2) /* pc comes from the leaf rule (unwind_step.h): dropped unless
				   * it is in a known mapping */
#define UNW_S_SWITCHED  (1u << 3) /* pc comes from across a stack switch: the same, and the
				   * stack then ends in [stack switch] */
#define UNW_MAX_SWITCHES 8  /* stack switches followed per unwind */
#define UNW_S_GO_SWITCHED (1u << 4) /* UNW_GO_SYSTEMSTACK went back to the goroutine's stack
				     * (once per unwind: a second time would be a loop) */
#define UNW_S_GO_CGO (1u << 5) /* UNW_GO_ASMCGOCALL went back to its caller (once per unwind) */

struct unw_state {
	__u64 pc, sp, bp;     /* registers of the frame being unwound */
	__u32 map_first;      /* the process's mappings: unw_maps[map_first .. +map_count) */
	__u32 map_count;
	__u32 n;              /* frame words emitted so far */
	__u32 flags;          /* UNW_S_* */
	__u32 result;         /* why the unwind stopped: enum unwind_stat (USTAT_COMPLETE, ...) */
	__u32 signals;        /* signal frames crossed */
	__u32 frames;         /* native frames emitted */
	__u32 out_base;       /* BPF: index in the record's frames where the words go */
	__u64 env;            /* user space: its reader's context (unused in BPF) */
	/* Runtime walkers (runtime/runtime.bpf.h): which kinds began their per-sample work
	 * (1 << kind), and for RT_OP_DEFER the output window in the record's frames. */
	__u32 rt_begun;
	__u32 rt_pos, rt_limit;
	__u32 pid;
	/* Caches of the current unwind (zero at its start): consecutive frames are mostly in the
	 * same mapping, and a recursion looks the same address up again and again. */
	__u64 last_lookup;    /* the address last looked up in a table */
	__u32 last_map;       /* index in unw_maps of the mapping last found, + 1 (0: none) */
	__u32 last_entry;     /* index in unw_entries of last_lookup's entry, + 1 (0: none) */
	__u64 fsbase;         /* the thread's fs base (its thread-local storage), 0 if unknown:
			       * BPF reads it from the task; a snapshot does not carry it */
	__u32 switches;       /* stack switches followed (unwind_step.h) */
	__u32 pid_flags;      /* BPF: the process's UNW_PID_* flags (0 when it is not published) */
	__u32 pad;
	__u64 leaf_bx;        /* BPF: rbx at the sample (the leaf's), for PCRE2's JIT prologue
			       * (unwind_step.h); 0 when unknown (a snapshot does not carry it) */
	__u64 leaf_di;        /* BPF: rdi at the sample, for UNW_RA_REG; 0 when unknown */
};
#define UNW_DWARF_RDI 5

/* STACK SNAPSHOTS. Sent when the process has no tables yet (or the pc is in a mapping user
 * space has not published yet): the user frame words are
 *   word 0   (FW_TAG_SNAPSHOT << FW_TAG_SHIFT) | UNW_SNAPSHOT_OFF_STACK (bit 40) |
 *            chunks << 32 | deferred words << 16 | stack bytes copied
 *   word 1   pc, word 2 sp, word 3 rbp (user registers at the sample)
 *   word 4.. the stack bytes from sp upwards (a multiple of 8)
 *   then     the deferred words: the frames the runtime walkers of the process produced for
 *            this sample (RT_OP_DEFER), as segments, each ended by a FW_MARKER_SEGMENT_END
 *            marker word. Segment i is what the walker would have put in place of the i-th
 *            native frame the unwinder hands to a walker (an UNW_F_INTERP entry), so that the
 *            user-space unwinder (unwinder_fix_sample()) interleaves them exactly as BPF does.
 * A stack deeper than the record holds goes on in `chunks` records EVENT_STACK_CHUNK (struct
 * stack_chunk) sent just before the sample from the same CPU, with the sample's pid, tid and
 * time, index 0, 1, ..., each holding the bytes that follow the previous one, up to the end of
 * the stack mapping or UNW_SNAPSHOT_CHUNKS of them, as long as they leave an eighth of the ring
 * buffer free: a 600-frame recursion is whole in its first sample. User space unwinds the
 * snapshot with the same step (unwind_step.h). */
#define FW_TAG_SNAPSHOT 0x0fULL
#define UNW_SNAPSHOT_WORDS 4
#define UNW_SNAPSHOT_MAX_BYTES (8u * (MAX_USER_WORDS - UNW_SNAPSHOT_WORDS))
#define UNW_SNAPSHOT_BYTES(w0) ((__u32)((w0) & 0xffff))
#define UNW_SNAPSHOT_DEFERRED(w0) ((__u32)(((w0) >> 16) & 0xffff))
#define UNW_SNAPSHOT_CHUNKS_SHIFT 32
#define UNW_SNAPSHOT_CHUNKS_OF(w0) ((__u32)(((w0) >> UNW_SNAPSHOT_CHUNKS_SHIFT) & 0xff))
#define UNW_SNAPSHOT_OFF_STACK (1ULL << 40) /* the sp is not on the main thread's stack
					     * (UNW_S_OFF_STACK) */
/* Words kept free for deferred runtime frames when the process has a runtime. */
#define UNW_SNAPSHOT_DEFER_WORDS 640
#define UNW_SNAPSHOT_CHUNKS 7          /* at most 16 KiB + 7 x 16 KiB = 128 KiB of stack */
#define STACK_CHUNK_BYTES 16384

struct stack_chunk {
	struct event_hdr hdr;   /* EVENT_STACK_CHUNK; pid, tid, cpu, time_ns of the sample */
	__u32 index;            /* 0, 1, ... */
	__u32 len;              /* bytes of data used */
	__u64 addr;             /* stack address of data[0] */
	__u8 data[STACK_CHUNK_BYTES];
};

/* Go's per-thread state for UNW_GO_SYSTEMSTACK (runtime/runtime2.go; the same from Go 1.16 to
 * 1.26): the thread's g at fs base + tls offset (the entry's rbp), g.m, m.g0 (the system
 * stack's g), m.curg (the user goroutine, offset in the entry), its gobuf g.sched: sp (where
 * the return address into systemstack's caller is), bp (offset in the entry). User space takes
 * the offsets from runtime.systemstack's own instructions. */
#define UNW_GO_G_M        48
#define UNW_GO_M_G0       0
#define UNW_GO_G_SCHED_SP 56
#define UNW_GO_G_SCHED_PC 64
#define UNW_GO_G_SCHED_BP 104 /* for UNW_GO_MORESTACK (checked in morestack's code) */
#define UNW_GO_G_STACK_HI 8 /* g.stack.hi: asmcgocall saves the SP as a depth below it */
#define UNW_GO_GCOPYSTACK 8 /* g.atomicstatus while newstack copies the stack (_Gcopystack) */

/* rt_sigframe on x86-64: after the handler returns, sp points just past the return address
 * (pretcode); the ucontext follows and its mcontext (struct sigcontext) starts 40 bytes in. */
#define UNW_SIGFRAME_MCONTEXT 40
#define UNW_SIGCTX_RBP (10 * 8)
#define UNW_SIGCTX_RSP (15 * 8)
#define UNW_SIGCTX_RIP (16 * 8)

#endif
