/* sampler.h: user-space side of the BPF sampler (src/bpf/sampler.bpf.c). Opens and loads the
 * BPF object, opens one cpu-clock perf event per online CPU in frequency mode, attaches the
 * sampling program and the fork/exec/exit tracepoints, the off-CPU programs when asked
 * (bpf/offcpu.h), and drains the ring buffer.
 *
 * Lifecycle: sampler_open() -> [sampler_add_pid()...] -> sampler_attach() -> sampler_poll()...
 * -> sampler_close(). Records handed to the poll callback live only during the call. */
#ifndef SCORCH_SAMPLER_H
#define SCORCH_SAMPLER_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/offcpu.h"
#include "bpf/sampler.h"
#include "lib/log.h"

struct sampler;
struct sampler_bpf;

struct sampler_opts {
	int freq_hz;          /* samples per second per CPU (default 99) */
	int filter_pids;      /* profile only pids added with sampler_add_pid() (and, with
				 follow_children, their descendants) */
	int follow_children;
	int include_idle;     /* report idle CPU samples (pid 0) when not filtering */
	int lineage;          /* samples carry the process's start and ancestors (the agent) */
	size_t ringbuf_bytes; /* ring buffer size, power of two (default 8 MiB) */
	int no_cpu;           /* open no cpu-clock events (off-CPU records only) */
	/* Off-CPU intervals (bpf/offcpu.h: the estimator): offcpu = 1 loads and attaches the
	 * switch programs. period 0: 1e9 / freq_hz; max_rate 0: no limit. */
	int offcpu;
	uint64_t offcpu_min_ns;
	uint64_t offcpu_period_ns;  /* at most SAMPLER_OFFCPU_MAX_PERIOD_NS */
	uint32_t offcpu_max_rate;   /* stacks per CPU and second */
	int time_phases;      /* time the phases of each sample (sampler_phases()) */
	int capture_errors;   /* a user stack BPF cannot unwind whole comes as a snapshot
			       * (unwinder_opts.capture keeps it as a replay case) */
	uint32_t unwind_entries; /* size of the unwind entry map (0: as compiled, bpf/unwind.h) */
	/* Called with the opened skeleton before it is loaded, for the runtimes to set their
	 * knobs (const volatile globals of their walkers; runtime.h: runtimes_configure_bpf). */
	void (*configure)(void *ctx, struct sampler_bpf *skel);
	void *configure_ctx;
};

#define SAMPLER_OFFCPU_MAX_PERIOD_NS 4000000000ULL

/* Open and load the BPF object. On failure returns a negative errno and explains the problem
 * and its fix in err (not root, missing CAP_BPF/CAP_PERFMON, no BTF, ...). */
int sampler_open(const struct sampler_opts *opts, struct sampler **out, struct errmsg *err);
/* Add a process (thread group id) to the profiled set. */
int sampler_add_pid(struct sampler *s, int pid);
/* Open the perf events on every online CPU and attach the programs; with offcpu, attach the
 * switch programs and mark the threads already blocked. */
int sampler_attach(struct sampler *s, struct errmsg *err);
/* 1 when EVENT_CGROUP records come (with lineage, on kernels with the cgroup_attach_task
 * tracepoint): user space may then trust what fork events say of a child's cgroups. */
int sampler_cgroup_events(const struct sampler *s);

/* Called for each record: hdr->type says what follows the header (sampler.h).
 * A non-zero return stops the current poll and is returned by sampler_poll(). */
typedef int (*sampler_record_fn)(void *ctx, const struct event_hdr *hdr, size_t size);
/* Wait up to timeout_ms (at most SAMPLER_MAX_WAIT_MS, or SAMPLER_AGENT_MAX_WAIT_MS with
 * lineage: most samples do not wake the reader) for records and hand each to fn. Returns the
 * number of records consumed, or a negative errno (-EINTR when a signal arrived). */
#define SAMPLER_MAX_WAIT_MS 50
#define SAMPLER_AGENT_MAX_WAIT_MS 250
int sampler_poll(struct sampler *s, int timeout_ms, sampler_record_fn fn, void *ctx);

/* Stop sampling: disable the perf events and detach the off-CPU programs (records already in
 * the ring buffer can still be polled). Idempotent. */
void sampler_stop(struct sampler *s);

/* Sum over CPUs of each enum sampler_stat counter. */
int sampler_stats(struct sampler *s, uint64_t out[STAT__COUNT]);
/* Sum over CPUs of each enum offcpu_stat counter (bpf/offcpu.h); zeros without offcpu. */
int sampler_offcpu_stats(struct sampler *s, uint64_t out[OFFCPU_STAT__COUNT]);
/* The loaded skeleton, for modules that add their own maps (unwind tables, interpreters). */
struct sampler_bpf *sampler_skel(struct sampler *s);
int sampler_ncpus(const struct sampler *s);
/* Records that failed validation in user space (bad version or size). */
uint64_t sampler_bad_records(const struct sampler *s);
void sampler_close(struct sampler *s);

/* Sum over CPUs of the phase timings (sampler.h, enum sampler_phase: ns at 2 * phase, samples
 * at 2 * phase + 1); all zero unless sampler_opts.time_phases. */
int sampler_phases(struct sampler *s, uint64_t out[2 * PHASE__COUNT]);

/* Run time (ns) and run count of the sampling program from kernel.bpf_stats_enabled, or
 * -ENODATA when stats are off. */
int sampler_prog_stats(struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt);
/* The same for the off-CPU programs: switch-out and switch-in together (each context switch
 * runs both), or -ENODATA. */
int sampler_offcpu_prog_stats(struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt);

#endif
