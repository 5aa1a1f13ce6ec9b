/* sampler.h: the contract between the sampling BPF program (sampler.bpf.c) and user space
 * (src/agent/sampler.c). Only fixed-size types; included by both sides.
 *
 * Records cross the ring buffer as a struct event_hdr followed by a type-specific body. Every
 * record carries SCORCH_EVENT_VERSION; user space rejects other versions.
 *
 * A sample record (EVENT_SAMPLE):
 *   offset  size              field
 *   0       sizeof(hdr)       struct event_hdr  (type, version, pid, tid, cpu, time)
 *   ..      sizeof(sample)    struct sample_body (comm, nkernel, nuser, flags, ancestors,
 *                             start_ns, weight_ns)
 *   ..      8 * nkernel       kernel return addresses, leaf first
 *   ..      8 * nuser         user frame words, leaf first (see FRAME WORDS)
 *
 * FRAME WORDS. A user frame word's top byte is a tag; the rest (56 bits) is data. Tags are
 * reserved in ranges of 16, one range per unwinder kind (enum unwinder_kind, bpf/unwind.h):
 * kind k owns the tags k << 4 .. (k << 4) + 15, so `tag >> 4` says which runtime a word belongs
 * to (FW_TAG_KIND) and user space hands it to that runtime without knowing its format.
 *   0x00         native frame: the absolute instruction address (a return address for every
 *                frame but the leaf; user space subtracts 1 before symbolizing it)
 *   0x01         FW_TAG_MARKER: data = enum fw_marker ([truncated], [unwind error] ...)
 *   0x02 - 0x0e  reserved (native)
 *   0x0f         FW_TAG_SNAPSHOT: a stack snapshot instead of frames (bpf/unwind.h)
 *   0x10 - 0x1f  CPython (runtime/python/python.h)
 *   0x20 - 0x2f  HotSpot          0x30 - 0x3f  V8        0x40 - 0x4f  Ruby
 *   0x50 - 0x5f  PHP              0x60 - 0x6f  Perl      0x70 - 0x7f  .NET
 *   0x80 - 0xff  reserved for further runtimes (kinds 8 - 15)
 * A runtime's words never cross into another range; how many words make one of its frames is
 * its own business (CPython: two).
 */
#ifndef SCORCH_BPF_SAMPLER_H
#define SCORCH_BPF_SAMPLER_H

#define SCORCH_EVENT_VERSION 4

#define MAX_KERNEL_FRAMES 127
#define MAX_USER_WORDS    2048
#define TASK_COMM_SIZE    16
#define SAMPLE_ANCESTORS  5

enum event_type {
	EVENT_SAMPLE = 1,
	EVENT_EXEC = 2, /* a process called exec: user space refreshes what it knows of it */
	EVENT_EXIT = 3, /* a process (thread group leader) exited */
	EVENT_FORK = 4, /* a new process (not thread) of a tracked parent */
	EVENT_MMAP = 5, /* reserved, never sent: mappings come from perf's own mmap records
			 * (src/agent/mapevents.h), not from this ring buffer */
	EVENT_STACK_CHUNK = 6, /* more stack bytes for the stack snapshot of the sample that
				* follows from the same CPU (unwind.h: STACK SNAPSHOTS) */
	EVENT_CGROUP_MOVE = 7, /* a process (or one of its threads) was moved to another cgroup;
				* pid 0: a cgroup was renamed (every process's path may change) */
};

#define FW_TAG_SHIFT  56
#define FW_TAG_MASK   0xff00000000000000ULL
#define FW_DATA_MASK  0x00ffffffffffffffULL
#define FW_TAG_NATIVE 0x00ULL
#define FW_TAG_MARKER 0x01ULL
#define FW_TAG_KIND(tag) ((__u32)(tag) >> 4)                 /* the unwinder kind owning a tag */
#define FW_TAG_FIRST(kind) ((__u64)(kind) << 4)              /* first tag of a kind's range */

enum fw_marker {
	FW_MARKER_TRUNCATED = 1,    /* the stack had more frames than we keep */
	FW_MARKER_UNWIND_ERROR = 2, /* the unwinder could not continue (no rule, bad read) */
	FW_MARKER_NO_USER = 3,      /* a kernel thread: no user stack */
	FW_MARKER_SEGMENT_END = 4,  /* only inside a stack snapshot: ends one deferred segment of
				     * runtime frames (bpf/unwind.h); bit 8 of the data: keep the
				     * native frame the segment belongs to; bit 9: an empty segment
				     * that removes it (an interpreter's second native frame for the
				     * same frames, e.g. Ruby's rb_vm_exec under vm_exec_core) */
	FW_MARKER_STACK_SWITCH = 5, /* the stack goes on on another stack we cannot follow (a
				     * coroutine's, makecontext(), a switch without a link) */
	FW_MARKER_EXEC = 6,         /* the only user word: the thread is in execve() past the point
				     * of no return, its old image is gone and the new one does not
				     * run yet (no user stack to unwind) */
	FW_MARKER_EXITED = 7,       /* the only user word: a snapshot of a process that exited
				     * before user space could read its maps (unwinder.c) */
	FW_MARKER_PCRE_JIT = 8,     /* in place of a native frame: PCRE2's JIT code, which the
				     * unwinder went through from the call that entered it
				     * (unwind_step.h: unwind_jit_link()); shown as [pcre2 jit] */
};
#define FW_SEGMENT_KEEP_NATIVE 0x100ULL
#define FW_SEGMENT_DROP_NATIVE 0x200ULL

/* sample_body.flags */
#define SAMPLE_F_KERNEL_ERROR (1u << 0) /* bpf_get_stack failed for the kernel stack */
#define SAMPLE_F_IDLE         (1u << 1) /* the CPU was idle (pid 0) */
#define SAMPLE_F_KTHREAD      (1u << 2) /* a kernel thread (PF_KTHREAD) */
#define SAMPLE_F_OFFCPU       (1u << 3) /* an off-CPU interval, not a CPU sample (offcpu.h):
					 * weight_ns is its weight, the stacks are the thread's
					 * as it resumed */
#define SAMPLE_F_NO_STACK     (1u << 4) /* off-CPU, stack not taken (rate limit, full buffer) */
#define SAMPLE_F_REASON_SHIFT 8         /* off-CPU: enum offcpu_reason in bits 8..11 */
#define SAMPLE_F_REASON_MASK  (0xfu << SAMPLE_F_REASON_SHIFT)

struct event_hdr {
	__u8 type;    /* enum event_type */
	__u8 version; /* SCORCH_EVENT_VERSION */
	__u16 size;   /* total record size in bytes (header included) */
	__u32 cpu;
	__u32 pid;    /* thread group id as seen from the root pid namespace */
	__u32 tid;
	__u64 time_ns; /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
};

struct sample_body {
	char comm[TASK_COMM_SIZE];
	__u16 nkernel;
	__u16 nuser;
	__u32 flags;
	__u32 ancestors[SAMPLE_ANCESTORS]; /* thread group ids of the parent, grandparent, ...
	                 * below init (0 past it); the agent names a short-lived child after the
	                 * nearest one that lasted, even when those in between are gone */
	__u32 reserved;
	__u64 start_ns; /* when the process started (group leader's start_time, CLOCK_MONOTONIC),
	                 * so that user space knows its age even after it is gone; this and
	                 * ancestors are 0 unless the sampler was loaded with want_lineage, and
	                 * once user space has seen a sample of the process (sampler.bpf.c:
	                 * sample_lineage(); it keeps what the first samples said) */
	__u64 weight_ns; /* SAMPLE_F_OFFCPU: the nanoseconds off CPU this record stands for; else 0 */
};

/* EVENT_FORK and EVENT_EXIT (whose fields past parent_pid are 0). */
struct fork_body {
	__u32 parent_pid;   /* the process that forked (whose cgroups the child starts in) */
	__u32 child_pid;
	__u32 flags;        /* FORK_F_* */
	__u32 cgroup_moves; /* EVENT_CGROUP_MOVE records sent before this fork (their seq), read as
			     * the child was forked: user space, having read that many, knows
			     * the forking process's cgroups as they were then */
	__u32 ppid;         /* the child's parent (real_parent: not parent_pid with
			     * CLONE_PARENT) */
	__u32 reserved;
	__u64 start_ns;     /* the child's start (start_time, CLOCK_MONOTONIC), as the
			     * start_ns of its samples */
};
#define FORK_F_SAME_CGROUPS (1u << 0) /* the child is in every cgroup its forking process is
				       * (same css_set: not CLONE_INTO_CGROUP) */
#define FORK_F_KTHREAD      (1u << 1) /* a kernel thread */

/* EVENT_CGROUP_MOVE: hdr.pid's process was moved (cgroup_attach_task: the whole process or one
 * thread, cgroup v1 or v2; cgroup_transfer_tasks), or with pid 0 a cgroup was renamed. seq
 * numbers these records from 1, so that a gap shows that one was lost (ring buffer full). */
struct cgroup_body {
	__u32 seq;
	__u32 reserved;
};

/* EVENT_EXEC: the new executable's device and inode, as /proc/PID/maps shows them. */
struct exec_body {
	__u32 dev_major;
	__u32 dev_minor;
	__u64 ino;
};

/* The largest sample record: the per-CPU scratch buffer that builds it. */
struct sample_record {
	struct event_hdr hdr;
	struct sample_body body;
	__u64 frames[MAX_KERNEL_FRAMES + MAX_USER_WORDS];
};

/* Counters kept per CPU in the `stats` map, index = enum sampler_stat. */
enum sampler_stat {
	STAT_SAMPLES = 0,      /* perf events seen by the program */
	STAT_FILTERED,         /* samples of processes we do not profile */
	STAT_LOST_RINGBUF,     /* records dropped: ring buffer full */
	STAT_KSTACK_ERRORS,    /* bpf_get_stack() failures for the kernel stack */
	STAT_USTACK_ERRORS,    /* user stack unwind errors */
	STAT_USTACK_TRUNCATED, /* user stacks cut at MAX_USER_WORDS */
	STAT_EVENTS_LOST,      /* exec/exit/fork events dropped: ring buffer full */
	STAT_BUSY,             /* samples skipped: they interrupted an off-CPU record being
				* built on their CPU (bpf/offcpu.bpf.h) */
	STAT__COUNT,
};

/* Where a sample's BPF time goes (only when user space sets time_phases before load: a
 * benchmark knob, SCORCH_BPF_PHASES=1; each measure costs two clock reads). Kept per CPU in
 * the `phases` map: index 2 * phase is the sum of ns, 2 * phase + 1 the number of samples. */
enum sampler_phase {
	PHASE_ENTRY = 0,    /* the record's header: filters, pid, time, comm */
	PHASE_KSTACK,       /* the kernel stack (bpf_get_stack) */
	PHASE_USTACK,       /* the user stack unwound from tables (walkers included) */
	PHASE_SNAPSHOT,     /* the user stack sent as a snapshot (copy, chunks) */
	PHASE_OUTPUT,       /* the record into the ring buffer */
	PHASE_ALL,          /* the whole program, from its first instruction to its last */
	PHASE__COUNT,
};

#endif
