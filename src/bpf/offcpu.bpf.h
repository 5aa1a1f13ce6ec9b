/* offcpu.bpf.h: off-CPU profiling in BPF (what is measured and the estimator: offcpu.h).
 * Included at the end of sampler.bpf.c: the records go through the sampler's ring buffer and
 * scratch record, and user stacks through the same unwinder and runtime walkers as CPU
 * samples (unwind_user_regs()), so every runtime with a walker shows its frames off CPU too.
 *
 *   offcpu_switch_out  tp_btf/sched_switch: marks the thread switched out (time, reason facts)
 *   offcpu_switch_in   tp_btf/sched_exit_tp (6.16+), the end of __schedule() in the resumed
 *                      thread, or offcpu_switch_in_kprobe on finish_task_switch() (older
 *                      kernels): the thread runs again; decide whether to record the
 *                      interval and, if so, take its stacks
 *   offcpu_seed        iter/task, run once after attaching: marks the threads that are blocked
 *                      already, so their wait counts from the start of profiling
 * User space loads them only when off-CPU or wall-clock profiles are asked for. */
#ifndef SCORCH_OFFCPU_BPF_H
#define SCORCH_OFFCPU_BPF_H

#include "offcpu.h"

/* Set by user space before load (offcpu.h: the estimator). */
const volatile __u64 offcpu_min_ns = 0;
const volatile __u64 offcpu_period_ns = 10000000;   /* at most 2^32 */
const volatile __u64 offcpu_rate_cost_ns = 1000000; /* 1e9 / max stacks per CPU and second */
const volatile __u64 offcpu_rate_burst_ns = 125000000;

#define OFFCPU_TASK_DEAD 0x80 /* TASK_DEAD: the task's last switch-out */
#define OFFCPU_ENOSYS    38   /* pt_regs->ax holds -ENOSYS while a system call runs */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_mark);
} offcpu_marks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_rate);
} offcpu_rate_map SEC(".maps");

/* One lookup per program run for all its counters: the switch programs run at every context
 * switch of the machine. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_stats);
} offcpu_stats SEC(".maps");

static __always_inline struct offcpu_stats *ostats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&offcpu_stats, &zero);
}

#define OSTAT_ADD(st, which, n) do { if (st) (st)->v[which] += (n); } while (0)

/* What the thread was doing as it left the CPU (OFFCPU_I_*). A system call is told from an
 * exception (a page fault's error code also lands in orig_ax) by ax, which the syscall entry
 * sets to -ENOSYS until the call returns. */
static __always_inline __u32 offcpu_info(struct task_struct *t, __u32 preempt, __u32 state)
{
	struct pt_regs *regs;
	__u64 nr, ax;
	__u32 info = 0;

	if (preempt || state == 0)
		return OFFCPU_I_RUNNABLE;
	/* direct loads through BTF pointers: no helper call on this path, which runs at every
	 * switch-out */
	if (BPF_CORE_READ_BITFIELD(t, in_iowait))
		info |= OFFCPU_I_IOWAIT;
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return info;
	nr = regs->orig_ax;
	ax = regs->ax;
	if (ax == (__u64)-OFFCPU_ENOSYS && nr < 1024)
		info |= OFFCPU_I_SYSCALL | (__u32)nr;
	return info;
}

/* Whether this CPU may take one more stack now (a GCRA bucket in virtual time). */
static __always_inline int offcpu_rate_ok(__u64 now)
{
	__u32 zero = 0;
	struct offcpu_rate *r = bpf_map_lookup_elem(&offcpu_rate_map, &zero);
	__u64 tat;

	if (!r || !offcpu_rate_cost_ns)
		return 1;
	tat = r->tat > now ? r->tat : now;
	if (tat - now > offcpu_rate_burst_ns)
		return 0;
	r->tat = tat + offcpu_rate_cost_ns;
	return 1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch_out, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 pid = prev->tgid;
	struct offcpu_mark *m;

	/* the idle task, kernel threads (no user stack, and no user's wait) and the last
	 * switch-out of an exiting thread */
	if (!pid || !prev->mm || (prev_state & OFFCPU_TASK_DEAD) || !wanted(pid))
		return 0;
	m = bpf_task_storage_get(&offcpu_marks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!m) {
		struct offcpu_stats *st = ostats();

		OSTAT_ADD(st, OFFCPU_STAT_NO_MARK, 1);
		return 0;
	}
	m->t = bpf_ktime_get_ns();
	m->info = offcpu_info(prev, preempt, prev_state);
	return 0;
}

/* Per-CPU: 1 while offcpu_resume() builds a record. It runs with interrupts enabled (after
 * sched_exit_tp) and uses the sampler's per-CPU scratch record and unwinder state: a CPU sample
 * taken meanwhile on this CPU would overwrite them, so on_sample skips it (STAT_BUSY). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} offcpu_busy SEC(".maps");

static __always_inline int offcpu_is_busy(void)
{
	__u32 zero = 0, *b = bpf_map_lookup_elem(&offcpu_busy, &zero);

	return b && *b;
}

/* The thread that runs now has just been switched in: if it was marked, decide whether to
 * record its interval and, if so, take its stacks. ctx is the program's context, for the
 * kernel stack: the path that blocked, still below us. */
static __always_inline int offcpu_resume(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid, now, t, d, w, rsize, wake = 0, pc, sp, bp, bx, di;
	struct sample_record *rec;
	struct offcpu_stats *st;
	struct offcpu_mark *m;
	__u32 zero = 0, nk = 0, nu = 0, info, *busy;
	long n;

	m = bpf_task_storage_get(&offcpu_marks, task, 0, 0);
	if (!m || !m->t)
		return 0;
	now = bpf_ktime_get_ns();
	t = m->t;
	info = m->info;
	m->t = 0;
	if (now <= t)
		return 0;
	d = now - t;
	st = ostats();
	OSTAT_ADD(st, OFFCPU_STAT_SWITCHES, 1);
	OSTAT_ADD(st, OFFCPU_STAT_NS, d);
	if (d < offcpu_min_ns) {
		OSTAT_ADD(st, OFFCPU_STAT_SHORT, 1);
		OSTAT_ADD(st, OFFCPU_STAT_SHORT_NS, d);
		return 0;
	}
	w = d;
	if (d < offcpu_period_ns) {
		/* recorded with probability d / period, weighing a whole period: a draw
		 * uniform in [0, period) below d (period <= 2^32: no overflow) */
		if ((((__u64)bpf_get_prandom_u32() * offcpu_period_ns) >> 32) >= d)
			return 0;
		w = offcpu_period_ns;
	}
	OSTAT_ADD(st, OFFCPU_STAT_RECORDS, 1);
	OSTAT_ADD(st, OFFCPU_STAT_WEIGHT_NS, w);

	rec = bpf_map_lookup_elem(&scratch, &zero);
	busy = bpf_map_lookup_elem(&offcpu_busy, &zero);
	if (!rec || !busy)
		return 0;
	*busy = 1;
	pid_tgid = bpf_get_current_pid_tgid();
	rec->hdr.type = EVENT_SAMPLE;
	rec->hdr.version = SCORCH_EVENT_VERSION;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.pid = pid_tgid >> 32;
	rec->hdr.tid = (__u32)pid_tgid;
	rec->hdr.time_ns = now;
	rec->body.flags = SAMPLE_F_OFFCPU | (offcpu_reason(info) << SAMPLE_F_REASON_SHIFT);
	rec->body.weight_ns = w;
	sample_lineage(rec, task);
	bpf_get_current_comm(rec->body.comm, sizeof(rec->body.comm));
	if (!offcpu_rate_ok(now)) {
		rec->body.flags |= SAMPLE_F_NO_STACK;
		OSTAT_ADD(st, OFFCPU_STAT_RATE_LIMITED, 1);
	} else if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >
		   bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2) {
		rec->body.flags |= SAMPLE_F_NO_STACK;
		OSTAT_ADD(st, OFFCPU_STAT_BACKPRESSURE, 1);
	} else {
		n = bpf_get_stack(ctx, rec->frames, MAX_KERNEL_FRAMES * sizeof(__u64), 0);
		if (n < 0) {
			stat_inc(STAT_KSTACK_ERRORS);
			rec->body.flags |= SAMPLE_F_KERNEL_ERROR;
		} else {
			nk = (__u32)n / sizeof(__u64);
		}
		if (nk > MAX_KERNEL_FRAMES)
			nk = MAX_KERNEL_FRAMES;
		unwind_saved_regs(&pc, &sp, &bp, &bx, &di);
		nu = unwind_user_regs(rec, nk, pc, sp, bp, bx, di, &wake);
	}
	if (nu > MAX_USER_WORDS)
		nu = MAX_USER_WORDS;
	rec->body.nkernel = nk;
	rec->body.nuser = nu;
	rsize = sizeof(rec->hdr) + sizeof(rec->body) + ((__u64)nk + nu) * sizeof(__u64);
	if (rsize > sizeof(*rec))
		rsize = sizeof(*rec);
	rec->hdr.size = rsize > 0xffff ? 0xffff : rsize;
	if (bpf_ringbuf_output(&events, rec, rsize,
			       wake ? BPF_RB_FORCE_WAKEUP : sample_wakeup(rsize))) {
		stat_inc(STAT_LOST_RINGBUF);
		OSTAT_ADD(st, OFFCPU_STAT_LOST, 1);
		OSTAT_ADD(st, OFFCPU_STAT_LOST_NS, w);
	}
	*busy = 0;
	return 0;
}

/* The end of __schedule(), in the context of the thread that runs now (Linux 6.16 and later:
 * the sched_exit_tp tracepoint). */
SEC("tp_btf/sched_exit_tp")
int BPF_PROG(offcpu_switch_in, bool is_switch)
{
	/* __schedule() kept the same thread: nothing ended */
	if (!is_switch)
		return 0;
	return offcpu_resume(ctx);
}

/* Older kernels: a kprobe on finish_task_switch() (user space attaches it by the name
 * /proc/kallsyms shows, e.g. finish_task_switch.isra.0), the first function the resumed
 * thread runs. */
SEC("kprobe")
int offcpu_switch_in_kprobe(struct pt_regs *ctx)
{
	return offcpu_resume(ctx);
}

SEC("iter/task")
int offcpu_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offcpu_mark *m;
	__u32 pid, state;

	struct offcpu_stats *st;

	if (!task)
		return 0;
	pid = task->tgid;
	state = task->__state;
	/* running or runnable threads are not waiting; one that is about to switch out gets
	 * its own mark then */
	if (!pid || state == 0 || (state & OFFCPU_TASK_DEAD) || !task->mm || !wanted(pid))
		return 0;
	m = bpf_task_storage_get(&offcpu_marks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!m || m->t)
		return 0;
	m->t = bpf_ktime_get_ns();
	m->info = offcpu_info(task, 0, state);
	st = ostats();
	OSTAT_ADD(st, OFFCPU_STAT_SEEDED, 1);
	return 0;
}

#endif
