// SPDX-License-Identifier: GPL-2.0
/* sampler.bpf.c: the CPU sampler. A perf_event program (cpu-clock, one event per online CPU)
 * records pid, tid, cpu, time, comm, the kernel stack and the user stack of the interrupted
 * task into the ring buffer (layout: sampler.h). Tracepoints on fork/exec/exit keep user space
 * informed and let `scorch record -- CMD` follow the command's children.
 * User-stack unwinding lives in unwind_user.bpf.h; off-CPU profiling in offcpu.bpf.h. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "sampler.h"

/* include/linux/sched.h: not in BTF (a macro) */
#define PF_KTHREAD 0x00200000

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile __u32 filter_pids = 0;      /* 1: only pids in target_pids */
const volatile __u32 follow_children = 0;  /* 1: children of targets become targets */
const volatile __u32 include_idle = 1;     /* 1: report samples of the idle task */
const volatile __u32 want_lineage = 0;     /* 1: fill sample_body.start_ns and ancestors */
const volatile __u32 time_phases = 0;      /* 1: time the phases of a sample (sampler.h) */
const volatile __u32 capture_errors = 0;   /* 1: a user stack BPF cannot unwind whole comes as a
					    * stack snapshot, so that user space can keep it as a
					    * replay case (record --capture-dir) */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_record);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);  /* pid (tgid) */
	__type(value, __u8);
} target_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * PHASE__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} phases SEC(".maps");

/* Add the time since *t to phase and restart *t (no-op unless time_phases). */
static __always_inline void phase_done(__u32 phase, __u64 *t)
{
	__u32 k = 2 * phase;
	__u64 now, *v;

	if (!time_phases)
		return;
	now = bpf_ktime_get_ns();
	v = bpf_map_lookup_elem(&phases, &k);
	if (v)
		*v += now - *t;
	k++;
	v = bpf_map_lookup_elem(&phases, &k);
	if (v)
		*v += 1;
	*t = now;
}

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1;
}

/* Samples do not wake the reader: waking it sends an inter-processor interrupt, which in a
 * VM costs more than the rest of the sample (about 7 us of the program's run time). The
 * reader polls with a timeout and drains the buffer each time (sampler_poll()); a sample wakes
 * it only when it makes the buffer cross an eighth of its size. Lifecycle events and samples
 * carrying a stack snapshot (unwind_user() says so) wake it: user space must read a new
 * process's maps while the process still runs. */
static __always_inline __u64 sample_wakeup(__u64 rsize)
{
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 mark = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 8;

	return avail < mark && avail + rsize >= mark ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline int wanted(__u32 pid)
{
	if (!filter_pids)
		return 1;
	return bpf_map_lookup_elem(&target_pids, &pid) != NULL;
}

/* User stacks: the native unwinder (unwind_user.bpf.h) hands frames of runtimes (CPython, ...)
 * to their walkers through the dispatch of runtime/runtime.bpf.h. */
#include "runtime/runtime.bpf.h"
#include "unwind_user.bpf.h"
#include "runtime/walkers.bpf.h"

/* Who the sampled process is, beyond its pid: a kernel thread or not, and (for the agent,
 * want_lineage) when it started and who started it. The agent names a short-lived child after
 * the nearest ancestor that lasts, which it can only do if it learns the chain before the child
 * (and a shell in between) are gone. Reading it costs about 1.4 us a sample at 19 Hz (a dozen
 * cold task fields), so it is read only until user space has seen a sample of the process:
 * while the process has no entry in unw_pids (its first samples are the snapshots that make
 * user space read it), or an entry published at its exec before any sample (UNW_PID_UNSEEN).
 * Every record of the scratch buffer goes through here (rec->hdr.pid set), CPU samples and
 * off-CPU intervals alike, so that none carries another's lineage. Returns 1 when it read the
 * lineage of a user process: user space has not seen it yet and should read it while it
 * still runs, so the sample wakes the reader (which otherwise waits up to
 * SAMPLER_AGENT_MAX_WAIT_MS). */
static __always_inline int sample_lineage(struct sample_record *rec, struct task_struct *task)
{
	struct unwind_pid *up;
	struct task_struct *anc;
	__u32 pid;
	int i;

	__builtin_memset(rec->body.ancestors, 0, sizeof(rec->body.ancestors));
	rec->body.reserved = 0;
	rec->body.start_ns = 0;
	if (!task)
		return 0;
	if (BPF_CORE_READ(task, flags) & PF_KTHREAD)
		rec->body.flags |= SAMPLE_F_KTHREAD;
	if (!want_lineage)
		return 0;
	pid = rec->hdr.pid;
	up = bpf_map_lookup_elem(&unw_pids, &pid);
	if (up && !(up->flags & UNW_PID_UNSEEN))
		return 0;
	rec->body.start_ns = BPF_CORE_READ(task, group_leader, start_time);
	anc = BPF_CORE_READ(task, real_parent);
	for (i = 0; i < SAMPLE_ANCESTORS && anc; i++) {
		__u32 apid = BPF_CORE_READ(anc, tgid);

		if (apid <= 1)
			break;
		rec->body.ancestors[i] = apid;
		anc = BPF_CORE_READ(anc, real_parent);
	}
	/* kernel threads are never published (no user mappings): their samples always carry
	 * the lineage, and must not wake the reader every time */
	return !(rec->body.flags & SAMPLE_F_KTHREAD);
}

/* Off-CPU profiling: switch-out and switch-in programs that share the ring buffer, the scratch
 * record and the user-stack unwinder with on_sample (loaded only when asked for). */
#include "offcpu.bpf.h"

/* "Runtime frames only" (runtime_only_kind != 0): the walker of that kind replaces the user
 * words by the thread's runtime frames (a benchmark and debugging knob). */
static __always_inline __u32 runtime_only(__u32 start, __u32 nuser)
{
	__u32 zero = 0;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);

	if (!st || start > MAX_KERNEL_FRAMES)
		return nuser;
	st->rt_begun = 0;
	st->out_base = start;
	st->n = nuser;
	runtime_walk(runtime_only_kind, RT_OP_ONLY);
	return st->n < MAX_USER_WORDS ? st->n : nuser;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u32 zero = 0, nk = 0, nu = 0;
	__u64 rsize, wake = 0, unseen = 0, t = time_phases ? bpf_ktime_get_ns() : 0, t_all = t;
	struct sample_record *rec;
	long n;

	stat_inc(STAT_SAMPLES);
	if (pid == 0 ? !include_idle || filter_pids : !wanted(pid)) {
		stat_inc(STAT_FILTERED);
		return 0;
	}
	if (offcpu_is_busy()) {
		/* this CPU's scratch record holds an off-CPU record being built */
		stat_inc(STAT_BUSY);
		return 0;
	}
	rec = bpf_map_lookup_elem(&scratch, &zero);
	if (!rec)
		return 0;
	rec->hdr.type = EVENT_SAMPLE;
	rec->hdr.version = SCORCH_EVENT_VERSION;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.pid = pid;
	rec->hdr.tid = tid;
	rec->hdr.time_ns = bpf_ktime_get_ns();
	rec->body.flags = 0;
	rec->body.weight_ns = 0;
	bpf_get_current_comm(rec->body.comm, sizeof(rec->body.comm));

	if (pid == 0) {
		/* The idle task: its kernel stack is the idle loop, which says nothing. */
		rec->body.flags |= SAMPLE_F_IDLE;
		sample_lineage(rec, NULL);
	} else {
		unseen = sample_lineage(rec, (struct task_struct *)bpf_get_current_task());
		phase_done(PHASE_ENTRY, &t);
		n = bpf_get_stack(ctx, rec->frames, MAX_KERNEL_FRAMES * sizeof(__u64), 0);
		if (n < 0) {
			stat_inc(STAT_KSTACK_ERRORS);
			rec->body.flags |= SAMPLE_F_KERNEL_ERROR;
		} else {
			nk = (__u32)n / sizeof(__u64);
		}
		if (nk > MAX_KERNEL_FRAMES)
			nk = MAX_KERNEL_FRAMES;
		phase_done(PHASE_KSTACK, &t);
		/* Kernel threads have no user stack. */
		if (BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), mm)) {
			nu = unwind_user(ctx, rec, nk, &wake);
			phase_done(wake == UNW_WAKE_SNAPSHOT ? PHASE_SNAPSHOT : PHASE_USTACK, &t);
		}
		if (nu && runtime_only_kind)
			nu = runtime_only(nk, nu);
	}
	if (nu > MAX_USER_WORDS)
		nu = MAX_USER_WORDS;
	rec->body.nkernel = nk;
	rec->body.nuser = nu;
	/* 64-bit arithmetic: with a __u32 size clang bounds a zero-extended copy and the
	 * verifier cannot see the bound on the value passed on. */
	rsize = sizeof(rec->hdr) + sizeof(rec->body) + ((__u64)nk + nu) * sizeof(__u64);
	if (rsize > sizeof(*rec))
		rsize = sizeof(*rec);
	rec->hdr.size = rsize > 0xffff ? 0xffff : rsize;
	if (bpf_ringbuf_output(&events, rec, rsize,
			       wake || unseen ? BPF_RB_FORCE_WAKEUP : sample_wakeup(rsize)))
		stat_inc(STAT_LOST_RINGBUF);
	phase_done(PHASE_OUTPUT, &t);
	phase_done(PHASE_ALL, &t_all);
	return 0;
}

/* The header of a lifecycle record. */
static __always_inline void event_hdr_fill(struct event_hdr *h, __u8 type, __u16 size, __u32 pid,
					   __u32 tid)
{
	h->type = type;
	h->version = SCORCH_EVENT_VERSION;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
	h->pid = pid;
	h->tid = tid;
	h->time_ns = bpf_ktime_get_ns();
}

/* EVENT_CGROUP_MOVE records sent so far (cgroup_body.seq of the latest). */
__u32 cgroup_moves = 0;

static __always_inline void emit_simple(__u8 type, __u32 pid, __u32 tid, __u32 parent,
					 const struct fork_body *more)
{
	struct {
		struct event_hdr hdr;
		struct fork_body body;
	} ev = {};

	event_hdr_fill(&ev.hdr, type, sizeof(ev), pid, tid);
	if (more)
		ev.body = *more;
	ev.body.parent_pid = parent;
	ev.body.child_pid = pid;
	/* With -p or a command, user space reads a new process at once; with -a forks and exits
	 * come for every process on the machine and nothing is urgent about them, so they wait
	 * for the reader's next poll (at most SAMPLER_MAX_WAIT_MS) like samples. */
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev),
			       filter_pids ? BPF_RB_FORCE_WAKEUP : sample_wakeup(sizeof(ev))))
		stat_inc(STAT_EVENTS_LOST);
}

/* A fork says whether the child starts in its parent's cgroups (the same css_set, read after
 * cgroup_post_fork(): the tracepoint follows copy_process()), so that user space can take the
 * parent's container id instead of reading /proc/PID/cgroup of every new process. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, tgid);
	struct fork_body more = {};
	__u8 one = 1;

	if (cpid == ppid) /* a new thread, not a new process */
		return 0;
	if (filter_pids) {
		if (!follow_children || !bpf_map_lookup_elem(&target_pids, &ppid))
			return 0;
		bpf_map_update_elem(&target_pids, &cpid, &one, BPF_ANY);
	}
	/* A move of the parent is counted (on_cgroup_attach) before the fork can see its new
	 * css_set (cgroup_threadgroup_rwsem orders the two), and its record precedes this one. */
	more.cgroup_moves = *(volatile __u32 *)&cgroup_moves;
	if (BPF_CORE_READ(parent, cgroups) == BPF_CORE_READ(child, cgroups))
		more.flags |= FORK_F_SAME_CGROUPS;
	if (BPF_CORE_READ(child, flags) & PF_KTHREAD)
		more.flags |= FORK_F_KTHREAD;
	more.ppid = BPF_CORE_READ(child, real_parent, tgid);
	more.start_ns = BPF_CORE_READ(child, start_time);
	emit_simple(EVENT_FORK, cpid, cpid, ppid, &more);
	return 0;
}

/* A cgroup event for pid's process (0: every process). Cgroup changes are serialized (their
 * callers hold cgroup_mutex): the count needs no atomic. */
static __always_inline void emit_cgroup_move(__u32 pid, __u32 tid)
{
	struct {
		struct event_hdr hdr;
		struct cgroup_body body;
	} ev = {};

	event_hdr_fill(&ev.hdr, EVENT_CGROUP_MOVE, sizeof(ev), pid, tid);
	/* counted even when the record is lost: the gap in seq shows it */
	ev.body.seq = *(volatile __u32 *)&cgroup_moves + 1;
	*(volatile __u32 *)&cgroup_moves = ev.body.seq;
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), sample_wakeup(sizeof(ev))))
		stat_inc(STAT_EVENTS_LOST);
}

/* task was moved to another cgroup: its process's container id may have changed, and what
 * the fork events said of its cgroups no longer holds for the children it forks next. */
static __always_inline void task_moved(struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid);

	if (wanted(pid))
		emit_cgroup_move(pid, BPF_CORE_READ(task, pid));
}

/* cgroup.procs, tasks, cgroup_attach_task_all: rare (container and service starts) */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(on_cgroup_attach, struct cgroup *dst, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	task_moved(task);
	return 0;
}

/* cgroup v1's cpuset moving the tasks of a cgroup that lost its last CPU to its parent */
SEC("tp_btf/cgroup_transfer_tasks")
int BPF_PROG(on_cgroup_transfer, struct cgroup *dst, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	task_moved(task);
	return 0;
}

/* A renamed cgroup changes the path of every process in it: user space forgets every
 * container id it took from events. */
SEC("tp_btf/cgroup_rename")
int BPF_PROG(on_cgroup_rename, struct cgroup *cgrp, const char *path)
{
	emit_cgroup_move(0, 0);
	return 0;
}

/* An exec names its executable (device and inode), so that user space can tell at no cost
 * whether it knows the binary's unwind table, and publish it before the first sample. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	struct inode *inode = BPF_CORE_READ(bprm, file, f_inode);
	__u32 dev = BPF_CORE_READ(inode, i_sb, s_dev);
	struct unwind_exec_key key = {};
	struct {
		struct event_hdr hdr;
		struct exec_body body;
	} ev = {};

	if (!wanted(pid))
		return 0;
	event_hdr_fill(&ev.hdr, EVENT_EXEC, sizeof(ev), pid, BPF_CORE_READ(p, pid));
	ev.body.dev_major = dev >> 20; /* the kernel's dev_t: MAJOR, MINOR (linux/kdev_t.h) */
	ev.body.dev_minor = dev & ((1u << 20) - 1);
	ev.body.ino = BPF_CORE_READ(inode, i_ino);
	key.ino = ev.body.ino;
	key.dev_major = ev.body.dev_major;
	key.dev_minor = ev.body.dev_minor;
	/* User space publishes a new image's tables at once (with -p or a command, always; with
	 * -a, for the executables it marked hot: their processes are mostly sampled, and it has
	 * their tables), so that their first samples unwind in BPF: such an exec wakes the
	 * reader. The others wait for its next poll, like samples. */
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev),
			       filter_pids || bpf_map_lookup_elem(&unw_exec_hot, &key) ?
			       BPF_RB_FORCE_WAKEUP : sample_wakeup(sizeof(ev))))
		stat_inc(STAT_EVENTS_LOST);
	return 0;
}

/* A process exits when its last thread does, which need not be the leader (a main thread may
 * call pthread_exit() and leave the others running). do_exit() decrements signal->live before
 * this tracepoint, so live == 0 means the whole group is gone. Two threads exiting together
 * may both see 0: user space takes a repeated exit in its stride. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);

	if (BPF_CORE_READ(p, signal, live.counter) != 0 || !wanted(pid))
		return 0;
	emit_simple(EVENT_EXIT, pid, tid, 0, NULL);
	if (filter_pids)
		bpf_map_delete_elem(&target_pids, &pid);
	return 0;
}
