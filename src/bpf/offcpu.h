/* offcpu.h: the contract of off-CPU profiling between the BPF side (offcpu.bpf.h, in the
 * sampler's object) and user space (src/agent/sampler.c, aggregate.c). Only fixed-size types
 * and code that compiles both as BPF and as plain C (offcpu_reason() is unit-tested).
 *
 * WHAT IS MEASURED. A user thread (one with an mm) of a profiled process that is switched out
 * gets a mark in its task storage at sched_switch: the time and what it was doing (runnable or
 * not, the system call it sleeps in, whether it waits for block I/O). When it next runs, a
 * kprobe on finish_task_switch() (the first code the thread runs again, in its own context, so
 * its user stack can be read) computes the interval d = now - mark and records it:
 *   d <  min_ns      not recorded (counted with its nanoseconds: OFFCPU_STAT_SHORT*)
 *   d >= period_ns   recorded with weight d
 *   d <  period_ns   recorded with probability d / period_ns and weight period_ns
 * so the expected weight of every interval of at least min_ns is d: the estimate of off-CPU
 * time is unbiased for them, and intervals shorter than the period cost a random draw, not a
 * stack. period_ns is the CPU sampling period (1e9 / Hz) by default, so that off-CPU and CPU
 * samples have the same resolution. A recorded interval costs the unwind of its stack; at most
 * max_rate of them per CPU and second get one (a virtual-time bucket, burst max_rate / 8), the
 * others are recorded without stack (SAMPLE_F_NO_STACK, OFFCPU_STAT_RATE_LIMITED): the time is
 * kept, the stack is not. So are intervals that end while the ring buffer is more than half
 * full (OFFCPU_STAT_BACKPRESSURE): stacks are what fills it, and the time must not be lost.
 *
 * The record is an EVENT_SAMPLE (sampler.h) with SAMPLE_F_OFFCPU, the reason in the flags
 * (SAMPLE_F_REASON), body.weight_ns the weight, and the stacks as the thread resumes: the
 * kernel stack from finish_task_switch() outwards (the path that blocked), the user stack
 * through the same unwinder and runtime walkers as CPU samples.
 */
#ifndef SCORCH_BPF_OFFCPU_H
#define SCORCH_BPF_OFFCPU_H

/* Why a thread was off CPU (SAMPLE_F_REASON bits of a record's flags). */
enum offcpu_reason {
	OFFCPU_PREEMPTED = 1, /* still runnable: preempted or yielded, waited for a CPU */
	OFFCPU_SLEEP = 2,     /* nanosleep, clock_nanosleep, pause, ... */
	OFFCPU_IO = 3,        /* read/write/poll/socket/... system calls, block I/O (iowait) */
	OFFCPU_LOCK = 4,      /* futex: mutexes, condition variables, joins */
	OFFCPU_OTHER = 5,     /* anything else: wait4, page faults, signals, kernel waits */
	OFFCPU_REASONS = 6,
};

/* What the mark remembers of the switch-out (struct offcpu_mark.info). */
#define OFFCPU_I_RUNNABLE 0x10000u /* preempted, or switched out in state TASK_RUNNING */
#define OFFCPU_I_IOWAIT   0x20000u /* task->in_iowait (io_schedule()) */
#define OFFCPU_I_SYSCALL  0x40000u /* in a system call: the low 16 bits are its number */
#define OFFCPU_I_NR_MASK  0xffffu

/* Task storage value (map offcpu_marks). t == 0: no interval open. */
struct offcpu_mark {
	__u64 t;    /* bpf_ktime_get_ns() at the switch-out */
	__u32 info; /* OFFCPU_I_* */
	__u32 pad;
};

/* Per-CPU rate limiter state (map offcpu_rate). */
struct offcpu_rate {
	__u64 tat; /* theoretical arrival time of the next stack (GCRA) */
};

/* Counters: the one value of the per-CPU array offcpu_stats is a struct offcpu_stats. */
enum offcpu_stat {
	OFFCPU_STAT_SWITCHES = 0,  /* intervals that ended (a marked thread ran again) */
	OFFCPU_STAT_NS,            /* their total duration */
	OFFCPU_STAT_SHORT,         /* intervals shorter than min_ns: not recorded */
	OFFCPU_STAT_SHORT_NS,      /* their total duration (the estimator's known bias) */
	OFFCPU_STAT_RECORDS,       /* intervals recorded (with or without stack) */
	OFFCPU_STAT_WEIGHT_NS,     /* the sum of their weights (estimate of OFFCPU_STAT_NS minus
				    * the short ones) */
	OFFCPU_STAT_RATE_LIMITED,  /* records sent without stack: over max_rate */
	OFFCPU_STAT_BACKPRESSURE,  /* records sent without stack: the ring buffer was more than
				    * half full (user space behind, e.g. reading new processes) */
	OFFCPU_STAT_LOST,          /* records the ring buffer refused */
	OFFCPU_STAT_LOST_NS,       /* their weight */
	OFFCPU_STAT_NO_MARK,       /* switch-outs whose mark could not be stored */
	OFFCPU_STAT_SEEDED,        /* threads found blocked when profiling started */
	OFFCPU_STAT__COUNT,
};

struct offcpu_stats {
	__u64 v[OFFCPU_STAT__COUNT];
};

/* x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
static inline __u32 offcpu_reason(__u32 info)
{
	if (info & OFFCPU_I_RUNNABLE)
		return OFFCPU_PREEMPTED;
	if (info & OFFCPU_I_IOWAIT)
		return OFFCPU_IO;
	if (!(info & OFFCPU_I_SYSCALL))
		return OFFCPU_OTHER;
	switch (info & OFFCPU_I_NR_MASK) {
	case 202: /* futex */
	case 449: /* futex_waitv */
	case 455: /* futex_wait */
		return OFFCPU_LOCK;
	case 34:  /* pause */
	case 35:  /* nanosleep */
	case 130: /* rt_sigsuspend */
	case 128: /* rt_sigtimedwait */
	case 230: /* clock_nanosleep */
		return OFFCPU_SLEEP;
	case 0: case 1: case 17: case 18: case 19: case 20:       /* read write pread64 pwrite64 readv writev */
	case 295: case 296: case 327: case 328:                   /* preadv pwritev preadv2 pwritev2 */
	case 7: case 23: case 270: case 271:                      /* poll select pselect6 ppoll */
	case 232: case 281: case 441:                             /* epoll_wait epoll_pwait epoll_pwait2 */
	case 42: case 43: case 288:                               /* connect accept accept4 */
	case 44: case 45: case 46: case 47: case 299: case 307:   /* sendto recvfrom sendmsg recvmsg recvmmsg sendmmsg */
	case 40: case 275: case 276: case 278:                    /* sendfile splice tee vmsplice */
	case 74: case 75: case 162: case 277:                     /* fsync fdatasync sync sync_file_range */
	case 426: case 206: case 208: case 209:                   /* io_uring_enter io_setup io_getevents io_submit */
	case 333: case 2: case 257: case 3: case 16:              /* io_pgetevents open openat close ioctl */
		return OFFCPU_IO;
	default:
		return OFFCPU_OTHER;
	}
}

/* The pseudo frame naming a reason, at the leaf of an off-CPU stack. */
static inline const char *offcpu_reason_frame(__u32 reason)
{
	switch (reason) {
	case OFFCPU_PREEMPTED: return "[off-cpu: preempted]";
	case OFFCPU_SLEEP: return "[off-cpu: sleep]";
	case OFFCPU_IO: return "[off-cpu: io]";
	case OFFCPU_LOCK: return "[off-cpu: lock]";
	default: return "[off-cpu: other]";
	}
}

#endif
