/* session.c: the profiling event loop (see session.h). The ring-buffer callback only counts
 * raw stacks and tells the process registry about processes; symbols are resolved once per
 * distinct stack at the end (or per interval), never per sample.
 *
 * Who learns what: the process registry (process.h) reads each process's maps once per change
 * and hands them to its subscribers, in this order: the runtimes (runtime.h: CPython, ...),
 * the native unwinder (tables for BPF), the symbolizer (files and symbols, read while the
 * process lives). */
#include "agent/session.h"
#include "agent/aggregate.h"
#include "agent/procinfo.h"
#include "agent/mapevents.h"
#include "agent/process.h"
#include "agent/sampler.h"
#include "agent/symbolizer.h"
#include "agent/unwinder.h"
#include "runtime/runtime.h"
#include "sampler.skel.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "replay/replay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* A pc outside the known mappings re-reads a process's maps at most this often. */
#define REFRESH_UNWIND_NS (2 * 1000000ULL)
#define REFRESH_SYMBOLS_NS (2 * 1000000ULL)

struct session {
	struct session_opts opts;
	struct sampler *sampler;
	struct symbolizer *sym;
	struct unwinder *unw;  /* native unwind tables (NULL: frame pointers only) */
	struct agg *agg;
	struct process_registry *reg; /* every process we profile (process.h) */
	struct mapevents *mev; /* mappings of new processes as they are made (NULL: none) */
	struct runtimes *rts;  /* CPython and the other runtimes (runtime.h) */
	size_t captured, capture_skipped; /* replay cases written, left out (opts.capture_dir) */
	double start, last_status, period_start_wall;
	uint64_t period_start_ns;
	int filtering;        /* -p or command: only chosen processes are sampled */
	uint64_t short_lived_ns; /* labels: a process younger has its ancestors' labels read */
	int *pidfds;          /* -p: one pidfd per target (-1: none), to see them exit */
	pid_t child;          /* command mode */
	int child_status;     /* waitpid status once reaped */
	int child_done;
	int exec_failed;
	int stopped;          /* session_stop() ran */
	int stop_sig;         /* the signal that stopped us (0: none) */
	int duration_over;
	uint64_t samples_before; /* samples already handed out by session_profile() */
	uint64_t offcpu_before;  /* the same for off-CPU records */
	uint64_t offcpu_said[OFFCPU_STAT__COUNT]; /* counters as of the last report */
	char lost_note[64];
	int status_shown;
	int opts_time_phases; /* SCORCH_BPF_PHASES=1 */
};

static volatile sig_atomic_t stop_flag;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
	/* SI_KERNEL: the terminal's ^C or ^\ went to the whole foreground process group. */
	stop_flag = sig | (si && si->si_code == SI_KERNEL ? SESSION_STOP_TTY : 0);
}

volatile sig_atomic_t *session_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_stop_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	return &stop_flag;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Fork the command, stopped on a pipe until the sampler follows it; exec errors come back
 * through a close-on-exec pipe. */
static int spawn_command(struct session *s, int *go_fd, int *err_fd)
{
	int go[2] = { -1, -1 }, errp[2] = { -1, -1 };
	pid_t pid = -1;

	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		int e = errno;
		int i;

		for (i = 0; i < 2; i++) {
			if (go[i] >= 0)
				close(go[i]);
			if (errp[i] >= 0)
				close(errp[i]);
		}
		return error("cannot start '%s': %s", s->opts.command[0], strerror(e));
	}
	if (pid == 0) {
		sigset_t none;
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		/* The command starts as if we were not there: default dispositions (ours
		 * ignore SIGPIPE and catch SIGINT/SIGTERM), nothing blocked. */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* Stopped before it could start: die of the signal, as it would have. */
		if (stop_flag & ~SESSION_STOP_TTY)
			raise(stop_flag & ~SESSION_STOP_TTY);
		execvp(s->opts.command[0], s->opts.command);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	s->child = pid;
	*go_fd = go[1];
	*err_fd = errp[0];
	return 0;
}

_Static_assert(PROCINFO_ANCESTORS == SAMPLE_ANCESTORS, "procinfo.h and sampler.h disagree");

/* ---- the registry's subscribers (process.h) */

static void unwinder_listener(void *ctx, struct process *p, enum process_event ev)
{
	struct unwinder *u = ctx;
	struct unwinder_claim claims[PROCESS_MAX_CLAIMS];
	size_t i;

	switch (ev) {
	case PROCESS_EV_NEW:
	case PROCESS_EV_CHANGED:
	case PROCESS_EV_CLAIMS:
		for (i = 0; i < p->nclaims && i < PROCESS_MAX_CLAIMS; i++) {
			claims[i].start = p->claims[i].start;
			claims[i].end = p->claims[i].end;
			claims[i].kind = p->claims[i].kind;
		}
		unwinder_set_maps(u, p->pid, &p->maps, claims, i);
		break;
	case PROCESS_EV_STALE: /* the tables of the old image must not unwind the new one */
	case PROCESS_EV_EXIT:
	case PROCESS_EV_FORGET:
		unwinder_forget_pid(u, p->pid);
		break;
	}
}

static void symbolizer_listener(void *ctx, struct process *p, enum process_event ev)
{
	struct symbolizer *sym = ctx;

	switch (ev) {
	case PROCESS_EV_NEW:
	case PROCESS_EV_CHANGED:
		/* files are opened now, while the process lives */
		symbolizer_set_maps_gen(sym, p->pid, &p->maps, p->generation + 1);
		break;
	case PROCESS_EV_FORGET:
		symbolizer_forget_pid(sym, p->pid);
		break;
	default:
		break; /* an exited process keeps its mappings until its samples are symbolized */
	}
}

static int refresh_for_unwinder(void *ctx, int pid, uint64_t sample_ns)
{
	struct session *s = ctx;

	return process_refresh_after(s->reg, pid, REFRESH_UNWIND_NS, sample_ns);
}

static int refresh_for_symbolizer(void *ctx, int pid)
{
	struct session *s = ctx;

	return process_refresh(s->reg, pid, REFRESH_SYMBOLS_NS);
}

/* The registry could not read a process's maps (it is gone): what the kernel said of them. */
static int maps_from_events(void *ctx, int pid, uint64_t when_ns, struct procmaps *out,
			    char *exe, size_t exelen, uint64_t *as_of_ns)
{
	struct session *s = ctx;

	memset(out, 0, sizeof(*out));
	if (!s->mev)
		return -ENOENT;
	return mapevents_maps(s->mev, pid, when_ns, out, exe, exelen, as_of_ns);
}

/* agg_gen_fn: the image the process runs now, as the registry knows it (its samples are
 * counted in order with its exec records). */
static uint32_t gen_for_agg(void *ctx, uint32_t pid)
{
	struct session *s = ctx;
	const struct process *p = process_get(s->reg, (int)pid);

	return p ? p->generation + 1 : 0; /* 1 for its first image: 0 is unknown */
}

static int label_for_agg(void *ctx, uint32_t pid, const char **key, const char **value)
{
	struct session *s = ctx;

	return process_runtime_label(s->reg, (int)pid, key, value);
}

/* What went wrong with the unwind table cache's directory, said once. */
static void say_cache_note(struct session *s)
{
	const char *note = s->unw ? unwinder_cache_note(s->unw) : NULL;

	if (note)
		log_warn("%s", note);
}

/* The drain callback: runs for every record, so it only counts (agg_add_record() hashes the
 * raw stack) and does real work once per new process. */
static int on_record(void *ctx, const struct event_hdr *hdr, size_t size)
{
	struct session *s = ctx;
	const struct sample_body *b;

	switch (hdr->type) {
	case EVENT_SAMPLE:
		if (size < sizeof(*hdr) + sizeof(*b))
			break;
		b = (const void *)(hdr + 1);
		/* A process seen for the first time (or since its exec/fork) is read now: its
		 * cost follows the sample rate, not the rate at which the machine starts
		 * processes. With -p or a command it was read at its fork or exec already. */
		if (hdr->pid) {
			process_seen_at(s->reg, (int)hdr->pid, b->comm, hdr->time_ns);
			if (s->opts.procinfo) {
				/* who started it and when: a short-lived child takes its parent's
				 * service (service_name.h) */
				struct process_lineage l = { hdr->time_ns, b->start_ns, b->ancestors,
							     (b->flags & SAMPLE_F_KTHREAD) != 0 };

				process_note_lineage(s->reg, (int)hdr->pid, &l, s->short_lived_ns);
			}
		}
		if (s->unw) {
			const struct event_hdr *fhdr;
			size_t fsize;

			/* A snapshot means BPF met code it had no table for (a new process, a
			 * new mapping): the unwinder asks the registry to re-read the maps. */
			if (unwinder_fix_sample(s->unw, hdr, size, &fhdr, &fsize) > 0) {
				hdr = fhdr;
				size = fsize;
			}
		}
		agg_add_record(s->agg, hdr, size);
		b = (const void *)(hdr + 1);
		if (hdr->pid && size >= sizeof(*hdr) + sizeof(*b) +
					    ((size_t)b->nkernel + b->nuser) * sizeof(uint64_t))
			/* the runtimes read what the frames name while the process lives */
			runtimes_note_sample(s->rts, (int)hdr->pid,
					     (const uint64_t *)(b + 1) + b->nkernel, b->nuser);
		break;
	case EVENT_EXEC:
		/* With -p or a command the new image is read at once, so that its first samples
		 * unwind in BPF; with -a every exec of the machine comes here: a known process
		 * only turns stale and is read at its next sample, if it is ever sampled, unless
		 * it runs an executable whose processes mostly are (a compiler, a JVM): the
		 * unwinder says so, and its tables are published now. */
		process_exec(s->reg, (int)hdr->pid, hdr->time_ns,
			     s->filtering || (s->unw && unwinder_exec(s->unw, hdr, size)));
		break;
	case EVENT_FORK: {
		const struct fork_body *fb = (const void *)(hdr + 1);
		struct process_fork_info fi;

		if (size < sizeof(*hdr) + sizeof(*fb)) {
			process_fork(s->reg, (int)hdr->pid, hdr->time_ns, s->filtering, NULL);
			break;
		}
		fi.parent = (int)fb->parent_pid;
		fi.ppid = (int)fb->ppid;
		fi.start_ns = fb->start_ns;
		fi.kernel_thread = (fb->flags & FORK_F_KTHREAD) != 0;
		fi.same_cgroups = (fb->flags & FORK_F_SAME_CGROUPS) != 0;
		fi.cgroup_moves = fb->cgroup_moves;
		process_fork(s->reg, (int)hdr->pid, hdr->time_ns, s->filtering, &fi);
		break;
	}
	case EVENT_CGROUP_MOVE: {
		const struct cgroup_body *cb = (const void *)(hdr + 1);

		if (size >= sizeof(*hdr) + sizeof(*cb))
			process_cgroup_moved(s->reg, (int)hdr->pid, cb->seq);
		break;
	}
	case EVENT_EXIT:
		/* forgotten once this interval's stacks are symbolized (session_collect()) */
		process_set_exit_time(s->reg, (int)hdr->pid, hdr->time_ns);
		process_exit(s->reg, (int)hdr->pid);
		break;
	case EVENT_STACK_CHUNK:
		/* the deep part of the stack snapshot that comes next from this CPU */
		if (s->unw)
			unwinder_note_chunk(s->unw, hdr, size);
		break;
	default:
		break;
	}
	return 0;
}

/* Ring buffer size: about two seconds of samples at 4 KiB each, so that a pause of the reader
 * (a big unwind table built, an interval symbolized) loses nothing, within [2, 32] MiB. The
 * consumer maps the data twice, so it counts double in our RSS: do not oversize it. Off-CPU
 * records come at about the rate of samples per blocked thread (one per period of off-CPU
 * time): count them as much again. */
static size_t ringbuf_size(int freq_hz, int offcpu)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t want = (uint64_t)(ncpu > 0 ? ncpu : 1) * (uint64_t)(freq_hz > 0 ? freq_hz : 99) *
			(offcpu ? 16384 : 8192);
	size_t sz = 2u << 20;

	while (sz < want && sz < (32u << 20))
		sz <<= 1;
	return sz;
}

void session_capture_counts(const struct session *s, size_t *written, size_t *skipped)
{
	*written = s->captured;
	*skipped = s->capture_skipped;
}

/* unwinder_opts.capture: a sample whose user stack ended in an error marker, kept as a replay
 * case in opts.capture_dir (record --capture-dir). */
static void capture_case(void *ctx, struct unwinder *u, const struct unwinder_snapshot *snap)
{
	struct session *s = ctx;
	struct replay_case c;
	struct errmsg err = { { 0 } };
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	char *path;

	if (s->captured >= (s->opts.capture_max ? s->opts.capture_max : 100)) {
		s->capture_skipped++;
		return;
	}
	if (replay_capture_snapshot(u, s->sym, s->rts, snap, &c, &err) < 0) {
		log_debug("capture of a sample of %d: %s", snap->pid, err.msg);
		s->capture_skipped++;
		return;
	}
	c.description = xasprintf("a sample of %s (pid %d, tid %d) that scorch record could not "
				  "unwind whole",
				  c.comm, snap->pid, snap->tid);
	c.origin = xstrdup("scorch record --capture-dir");
	path = xasprintf("%s/%d-%d-%llu.case", s->opts.capture_dir, snap->pid, snap->tid,
			 (unsigned long long)snap->time_ns);
	if (case_encode(&c, &b) == 0 && write_file_atomic(path, b.data, b.len) == 0)
		s->captured++;
	else
		s->capture_skipped++;
	xfree(path);
	buf_release(&b);
	case_release(&c);
}

int session_start(const struct session_opts *opts, struct session **out)
{
	struct session *s = xcalloc(1, sizeof(*s));
	struct sampler_opts so;
	struct errmsg err = { "" };
	int go_fd = -1, err_fd = -1, ret = -1;
	size_t i;

	s->opts = *opts;
	s->child = -1;
	s->short_lived_ns = opts->short_lived_s > 0 ? (uint64_t)(opts->short_lived_s * 1e9) :
						      1000000000ULL;
	s->agg = agg_new(opts->max_stacks);
	{
		struct process_registry_opts po = { .labels = opts->procinfo };
		struct symbolizer_options sy;
		/* SCORCH_PYTHON=off|only|keep, SCORCH_RUBY=..., one per runtime (no frames of the
		 * runtime / its frames only / keep its eval-loop frames next to them): knobs for
		 * benchmarks and debugging. */
		struct runtimes_opts ro;

		s->reg = process_registry_new(&po);
		memset(&sy, 0, sizeof(sy));
		sy.refresh = refresh_for_symbolizer;
		sy.refresh_ctx = s;
		sy.no_line_info = opts->no_line_info;
		sy.line_budget = opts->line_budget;
		sy.debuginfod_urls = opts->debuginfod_urls;
		sy.no_debuginfod = opts->no_debuginfod;
		s->sym = symbolizer_new_opts(&sy);
		if (symbolizer_debuginfod_urls(s->sym))
			log_info("asking debuginfod for missing debug info: %s",
				 symbolizer_debuginfod_urls(s->sym));
		runtimes_opts_from_env(&ro);
		s->rts = runtimes_new(&ro);
		agg_set_runtimes(s->agg, s->rts);
		agg_set_label_source(s->agg, label_for_agg, s);
		agg_set_generation_source(s->agg, gen_for_agg, s);
	}

	s->filtering = opts->npids || opts->command;
	if (opts->npids) {
		/* pidfds see a target exit even if its pid is reused at once. */
		s->pidfds = xcalloc(opts->npids, sizeof(int));
		for (i = 0; i < opts->npids; i++)
			s->pidfds[i] = -1;
		for (i = 0; i < opts->npids; i++) {
			s->pidfds[i] = (int)syscall(SYS_pidfd_open, opts->pids[i], 0);
			if (s->pidfds[i] < 0 && errno == ESRCH) {
				error("no process with PID %d (it exited)", opts->pids[i]);
				goto fail;
			}
		}
	}

	if (!s->opts.kinds)
		s->opts.kinds = SESSION_CPU;
	memset(&so, 0, sizeof(so));
	so.freq_hz = opts->freq_hz;
	so.offcpu = !!(s->opts.kinds & (SESSION_OFFCPU | SESSION_WALL));
	so.no_cpu = !(s->opts.kinds & (SESSION_CPU | SESSION_WALL));
	so.offcpu_min_ns = opts->offcpu_min_ns;
	so.offcpu_period_ns = opts->offcpu_period_ns;
	so.offcpu_max_rate = opts->offcpu_max_rate ? opts->offcpu_max_rate :
			     SESSION_OFFCPU_DEFAULT_RATE;
	so.ringbuf_bytes = ringbuf_size(opts->freq_hz, so.offcpu);
	so.filter_pids = s->filtering;
	so.follow_children = opts->command != NULL;
	so.include_idle = opts->include_idle;
	so.lineage = opts->procinfo; /* the agent's labels name processes after their ancestors */
	/* SCORCH_BPF_PHASES=1: time the phases of each sample in BPF (a benchmark knob; --stats
	 * prints them) */
	so.time_phases = getenv("SCORCH_BPF_PHASES") && !strcmp(getenv("SCORCH_BPF_PHASES"), "1");
	so.unwind_entries = opts->unwind_entries;
	so.capture_errors = opts->capture_dir != NULL;
	so.configure = runtimes_configure_bpf;
	so.configure_ctx = s->rts;
	s->opts_time_phases = so.time_phases;
	if (sampler_open(&so, &s->sampler, &err) < 0) {
		error("%s", err.msg);
		goto fail;
	}
	runtimes_init(s->rts, sampler_skel(s->sampler)->obj);
	{
		struct unwinder_opts uo;
		struct process_listener l;

		memset(&uo, 0, sizeof(uo));
		uo.interp = runtimes_interp_ranges;
		uo.interp_ctx = s->rts;
		uo.refresh = refresh_for_unwinder;
		uo.refresh_ctx = s;
		uo.cache_dir = opts->cache_dir;
		uo.jit = runtimes_jit_step;
		uo.jit_ctx = s->rts;
		if (opts->capture_dir) {
			uo.capture = capture_case;
			uo.capture_ctx = s;
		}
		s->unw = unwinder_new(sampler_skel(s->sampler)->obj, &uo, &err);
		if (!s->unw)
			log_warn("native unwinding without frame pointers is off: %s", err.msg);
		say_cache_note(s);
		/* The order matters: the runtimes first (cheap, and until the unwinder has built
		 * the tables of a new program, tens of ms for a big one, its samples go to user
		 * space as snapshots that carry the runtime frames only if the walkers know the
		 * process), then the tables, then the symbols. Runtimes' claims of JIT ranges
		 * reach the unwinder as a CLAIMS event after the NEW one. */
		runtimes_subscribe(s->rts, s->reg);
		if (s->unw) {
			l = (struct process_listener){ "unwinder", unwinder_listener, s->unw };
			process_registry_subscribe(s->reg, &l);
		}
		l = (struct process_listener){ "symbolizer", symbolizer_listener, s->sym };
		process_registry_subscribe(s->reg, &l);
	}
	/* The mappings of processes that start from now on, for those gone before their maps
	 * are read (mapevents.h). SCORCH_MAPEVENTS=0 turns it off (a benchmark knob). */
	if (!getenv("SCORCH_MAPEVENTS") || strcmp(getenv("SCORCH_MAPEVENTS"), "0")) {
		struct errmsg merr = { "" };

		s->mev = mapevents_new(NULL);
		if (mapevents_open(s->mev, &merr) < 0) {
			log_info("%s: processes that exit before their maps are read keep no "
				 "user stack", merr.msg);
			mapevents_free(s->mev);
			s->mev = NULL;
		} else {
			process_registry_set_maps_source(s->reg, maps_from_events, s);
			for (i = 0; i < opts->npids; i++)
				mapevents_follow(s->mev, opts->pids[i], 0);
		}
	}
	for (i = 0; i < opts->npids; i++)
		process_track(s->reg, opts->pids[i], NULL);
	for (i = 0; i < opts->npids; i++) {
		int e = sampler_add_pid(s->sampler, opts->pids[i]);

		if (e < 0) {
			error("cannot follow PID %d: %s", opts->pids[i], strerror(-e));
			goto fail;
		}
	}
	if (opts->command) {
		if (spawn_command(s, &go_fd, &err_fd))
			goto fail;
		if (s->mev) /* it waits for go_fd before its exec */
			mapevents_follow(s->mev, (int)s->child, 1);
		int e = sampler_add_pid(s->sampler, s->child);

		if (e < 0) {
			error("cannot follow the command's PID %d: %s", (int)s->child, strerror(-e));
			goto fail;
		}
	}
	if (sampler_attach(s->sampler, &err) < 0) {
		error("%s", err.msg);
		goto fail;
	}
	process_registry_follow_cgroups(s->reg, sampler_cgroup_events(s->sampler));
	s->start = s->last_status = now_s();
	s->period_start_ns = wall_ns();
	if (opts->command) {
		int e = 0;
		ssize_t n;

		close(go_fd);
		go_fd = -1;
		do
			n = read(err_fd, &e, sizeof(e));
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof(e)) {
			if (e == ENOENT)
				error("command not found: '%s'", opts->command[0]);
			else
				error("cannot run '%s': %s", opts->command[0], strerror(e));
			s->exec_failed = 1;
			waitpid(s->child, &s->child_status, 0);
			s->child_done = 1;
			ret = -127;
			goto fail;
		}
	}
	ret = 0;
	*out = s;
fail:
	if (ret && ret != -127)
		ret = -1;
	if (go_fd >= 0)
		close(go_fd);
	if (err_fd >= 0)
		close(err_fd);
	if (ret) {
		if (s->child > 0 && !s->child_done) {
			kill(s->child, SIGKILL);
			waitpid(s->child, NULL, 0);
		}
		session_free(s);
	}
	return ret;
}

static void show_status(struct session *s, int final)
{
	double t = now_s();

	if (!s->opts.status_line)
		return;
	if (!final && t - s->last_status < 0.25)
		return;
	s->last_status = t;
	/* \r and erase-line: each refresh (and any log message, see log_status_line()) starts
	 * on a clean line; the final one ends it. */
	if (s->opts.kinds & (SESSION_OFFCPU | SESSION_WALL))
		fprintf(stderr, "\r\033[Krecording %6.1f s  %8llu samples  %8llu off-CPU  %llu "
			"lost%s", t - s->start, (unsigned long long)session_samples(s),
			(unsigned long long)session_offcpu_records(s),
			(unsigned long long)session_lost(s), final ? "\n" : "");
	else
		fprintf(stderr, "\r\033[Krecording %6.1f s  %8llu samples  %llu lost%s",
			t - s->start, (unsigned long long)session_samples(s),
			(unsigned long long)session_lost(s), final ? "\n" : "");
	fflush(stderr);
	s->status_shown = !final;
	log_status_line(!final);
}

/* Whether a -p target still runs: its pidfd turns readable when it has exited. */
static int targets_alive(struct session *s)
{
	size_t i;

	for (i = 0; i < s->opts.npids; i++) {
		if (s->pidfds && s->pidfds[i] >= 0) {
			struct pollfd pfd = { .fd = s->pidfds[i], .events = POLLIN };

			if (poll(&pfd, 1, 0) == 0)
				return 1;
		} else if (kill(s->opts.pids[i], 0) == 0 || errno != ESRCH) {
			return 1;
		}
	}
	return 0;
}

/* Reap the command if it exited. ECHILD (someone else reaped it) ends the wait too. */
static int child_exited(struct session *s)
{
	pid_t r;

	if (s->child <= 0 || s->child_done)
		return 1;
	do
		r = waitpid(s->child, &s->child_status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == s->child || (r < 0 && errno == ECHILD)) {
		if (r < 0) {
			log_warn("cannot read the exit status of '%s': %s", s->opts.command[0],
				 strerror(errno));
			s->child_status = 0;
		}
		s->child_done = 1;
		return 1;
	}
	return 0;
}

int session_poll(struct session *s, int timeout_ms)
{
	int n;

	if (s->stopped)
		return 0;
	if (s->opts.duration_s > 0) {
		double left = s->start + s->opts.duration_s - now_s();

		if (left <= 0) {
			s->duration_over = 1;
			return 0;
		}
		if (left * 1000 < timeout_ms)
			timeout_ms = (int)(left * 1000) + 1;
	}
	n = sampler_poll(s->sampler, timeout_ms, on_record, s);
	/* keep the mapping buffers from filling (samples read them when they need them) */
	if (s->mev)
		mapevents_drain(s->mev);
	if (n < 0 && n != -EINTR)
		return error("reading the BPF ring buffer: %s", strerror(-n));
	say_cache_note(s);
	show_status(s, 0);
	if (s->opts.stop_flag && *s->opts.stop_flag) {
		int sig = *s->opts.stop_flag;

		*s->opts.stop_flag = 0;
		s->stop_sig = sig & ~SESSION_STOP_TTY;
		/* Pass the signal on to the command so it can finish too, unless the terminal
		 * sent it to both of us (a second SIGINT would cut its cleanup short). */
		if (s->child > 0 && !child_exited(s) && !(sig & SESSION_STOP_TTY))
			kill(s->child, s->stop_sig);
		return 0;
	}
	if (s->child > 0 && child_exited(s))
		return 0;
	if (s->opts.npids && !targets_alive(s))
		return 0;
	if (s->opts.duration_s > 0 && now_s() - s->start >= s->opts.duration_s) {
		s->duration_over = 1;
		return 0;
	}
	return 1;
}

void session_stop(struct session *s)
{
	double until;

	if (s->stopped)
		return;
	s->stopped = 1;
	sampler_stop(s->sampler);
	/* Drain what is left. Sampling is off, so this ends; process lifecycle events still
	 * come, so bound it in time too. */
	until = now_s() + 2;
	while (sampler_poll(s->sampler, 0, on_record, s) > 0 && now_s() < until)
		;
	show_status(s, 1);
}

/* Wait for the command after we stopped (see session_run()). */
static void wait_command(struct session *s)
{
	double kill_at = 0, t0 = now_s();
	int told = 0;

	if (child_exited(s))
		return;
	if (s->duration_over && !s->stop_sig) {
		kill(s->child, SIGTERM);
		kill_at = now_s() + 5;
	}
	while (!child_exited(s)) {
		struct timespec ts = { 0, 20 * 1000000L };

		if (s->opts.stop_flag && *s->opts.stop_flag) {
			*s->opts.stop_flag = 0;
			kill(s->child, SIGKILL);
		}
		if (kill_at && now_s() >= kill_at) {
			log_warn("'%s' (PID %d) did not exit after SIGTERM: killing it",
				 s->opts.command[0], (int)s->child);
			kill(s->child, SIGKILL);
			kill_at = 0;
		}
		if (!told && now_s() - t0 > 1) {
			log_info("waiting for '%s' (PID %d) to exit; send the signal again to kill "
				 "it", s->opts.command[0], (int)s->child);
			told = 1;
		}
		nanosleep(&ts, NULL);
	}
}

int session_run(struct session *s)
{
	int r;

	while ((r = session_poll(s, 100)) > 0)
		;
	session_stop(s);
	if (s->child > 0)
		wait_command(s);
	return r < 0 ? r : 0;
}

void session_wait_debuginfo(struct session *s, double timeout_s)
{
	double until = now_s() + timeout_s, told = 0;
	size_t pending;

	/* names are loaded lazily, at the first lookup in a file: load those not looked up yet,
	 * so that what they lack is asked of debuginfod before the profile is made */
	symbolizer_debuginfo_request(s->sym);
	while ((pending = symbolizer_debuginfo_pending(s->sym)) > 0 && now_s() < until) {
		if (s->opts.stop_flag && *s->opts.stop_flag) {
			*s->opts.stop_flag = 0;
			break;
		}
		if (!told || now_s() - told >= 5) {
			log_warn("waiting for %zu debug file%s from debuginfod (up to %.0f s more; "
				 "Ctrl-C to go on without)", pending, pending == 1 ? "" : "s",
				 until - now_s());
			told = now_s();
		}
		symbolizer_debuginfo_poll(s->sym, 200);
	}
	symbolizer_debuginfo_poll(s->sym, 0);
}

int session_stop_signal(const struct session *s)
{
	return s->stop_sig;
}

const char *session_kind_name(enum session_kind kind)
{
	switch (kind) {
	case SESSION_OFFCPU: return "offcpu";
	case SESSION_WALL: return "wall";
	default: return "cpu";
	}
}

int session_kinds_parse(const char *list, unsigned *mask, char *bad, size_t badlen)
{
	unsigned m = 0;

	for (;;) {
		size_t n = strcspn(list, ",");
		unsigned k = 0;

		if (n == 3 && !strncmp(list, "cpu", 3))
			k = SESSION_CPU;
		else if (n == 6 && !strncmp(list, "offcpu", 6))
			k = SESSION_OFFCPU;
		else if (n == 4 && !strncmp(list, "wall", 4))
			k = SESSION_WALL;
		if (!k) {
			snprintf(bad, badlen, "%.*s", (int)n, list);
			return -EINVAL;
		}
		m |= k;
		if (!list[n])
			break;
		list += n + 1;
	}
	*mask = m;
	return 0;
}

static int64_t cpu_period_ns(const struct session *s)
{
	return 1000000000LL / (s->opts.freq_hz > 0 ? s->opts.freq_hz : 99);
}

static int64_t offcpu_period_ns(const struct session *s)
{
	int64_t p = s->opts.offcpu_period_ns ? (int64_t)s->opts.offcpu_period_ns : cpu_period_ns(s);

	return p > (int64_t)SAMPLER_OFFCPU_MAX_PERIOD_NS ? (int64_t)SAMPLER_OFFCPU_MAX_PERIOD_NS : p;
}

struct profile *session_new_profile(struct session *s, enum session_kind kind)
{
	struct profile *p = profile_new();

	switch (kind) {
	case SESSION_OFFCPU:
		/* values are nanoseconds; the period is the off-CPU sampling period */
		profile_set_type(p, "offcpu", "nanoseconds", offcpu_period_ns(s));
		break;
	case SESSION_WALL:
		profile_set_type(p, "wall", "nanoseconds", cpu_period_ns(s));
		break;
	default:
		profile_set_type(p, "samples", "count", cpu_period_ns(s));
		profile_set_period_type(p, "cpu", "nanoseconds");
		break;
	}
	p->time_nanos = (int64_t)s->period_start_ns;
	p->duration_nanos = (int64_t)(wall_ns() - s->period_start_ns);
	return p;
}

const struct procinfo *session_procinfo(struct session *s, uint32_t pid)
{
	return process_labels(s->reg, (int)pid);
}

/* agg_pick_fn for one kind: the caller's pick with the kind added. */
struct kind_pick {
	enum session_kind kind;
	session_pick_fn pick;
	void *ctx;
};

static struct profile *pick_kind(void *ctx, uint32_t pid, const char *comm)
{
	struct kind_pick *kp = ctx;

	return kp->pick(kp->ctx, kp->kind, pid, comm);
}

int session_collect(struct session *s, session_pick_fn pick, void *ctx)
{
	static const struct {
		enum session_kind kind;
		enum agg_kind agg;
	} kinds[] = { { SESSION_CPU, AGG_CPU }, { SESSION_OFFCPU, AGG_OFFCPU },
		      { SESSION_WALL, AGG_WALL } };
	size_t i;
	int ret = 0;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !ret; i++) {
		struct kind_pick kp = { kinds[i].kind, pick, ctx };

		if (s->opts.kinds & kinds[i].kind)
			ret = agg_to_profile_kind(s->agg, s->sym, kinds[i].agg, cpu_period_ns(s),
						  NULL, pick_kind, &kp);
	}
	s->samples_before += agg_samples(s->agg);
	s->offcpu_before += agg_offcpu_records(s->agg);
	agg_reset(s->agg);
	s->period_start_ns = wall_ns();
	/* processes that exited are forgotten now that their last samples have names */
	process_registry_collect(s->reg);
	if (s->mev)
		mapevents_collect(s->mev);
	return ret;
}

static enum session_kind first_kind(const struct session *s)
{
	if (s->opts.kinds & SESSION_CPU)
		return SESSION_CPU;
	return (s->opts.kinds & SESSION_OFFCPU) ? SESSION_OFFCPU : SESSION_WALL;
}

struct one_pick {
	enum session_kind kind;
	struct profile *p;
};

static struct profile *pick_one(void *ctx, enum session_kind kind, uint32_t pid, const char *comm)
{
	struct one_pick *op = ctx;

	return kind == op->kind ? op->p : NULL;
}

struct profile *session_profile(struct session *s)
{
	struct one_pick op = { first_kind(s), NULL };

	op.p = session_new_profile(s, op.kind);
	session_collect(s, pick_one, &op);
	return op.p;
}

uint64_t session_samples(const struct session *s)
{
	return s->samples_before + agg_samples(s->agg);
}

void session_offcpu_log_totals(struct session *s)
{
	uint64_t o[OFFCPU_STAT__COUNT], rt = 0, cnt = 0;
	char bpf[96] = "";

	if (!(s->opts.kinds & (SESSION_OFFCPU | SESSION_WALL)) || sampler_offcpu_stats(s->sampler, o))
		return;
	if (sampler_offcpu_prog_stats(s->sampler, &rt, &cnt) == 0)
		snprintf(bpf, sizeof(bpf), "; BPF %.0f ns per context switch (%llu switches)",
			 (double)rt / (double)cnt, (unsigned long long)cnt);
	log_info("off-CPU: %llu waits ended (%.3f s), %llu recorded (%.3f s), %llu shorter than "
		 "--off-cpu-min (%.3f s), %llu without stack (rate limit, full buffer), %llu lost "
		 "(%.3f s)%s",
		 (unsigned long long)o[OFFCPU_STAT_SWITCHES], o[OFFCPU_STAT_NS] / 1e9,
		 (unsigned long long)o[OFFCPU_STAT_RECORDS], o[OFFCPU_STAT_WEIGHT_NS] / 1e9,
		 (unsigned long long)o[OFFCPU_STAT_SHORT], o[OFFCPU_STAT_SHORT_NS] / 1e9,
		 (unsigned long long)(o[OFFCPU_STAT_RATE_LIMITED] + o[OFFCPU_STAT_BACKPRESSURE]),
		 (unsigned long long)o[OFFCPU_STAT_LOST], o[OFFCPU_STAT_LOST_NS] / 1e9, bpf);
}

uint64_t session_offcpu_records(const struct session *s)
{
	return s->offcpu_before + agg_offcpu_records(s->agg);
}

void session_offcpu_report(struct session *s)
{
	uint64_t st[OFFCPU_STAT__COUNT], d[OFFCPU_STAT__COUNT];
	size_t i;

	if (!(s->opts.kinds & (SESSION_OFFCPU | SESSION_WALL)) || sampler_offcpu_stats(s->sampler, st))
		return;
	for (i = 0; i < OFFCPU_STAT__COUNT; i++)
		d[i] = st[i] - s->offcpu_said[i];
	memcpy(s->offcpu_said, st, sizeof(st));
	if (d[OFFCPU_STAT_RATE_LIMITED])
		log_warn("off-CPU: %llu of %llu intervals recorded without their stack (over %u "
			 "stacks per CPU and second: --off-cpu-max-rate); their time is kept under "
			 "[rate limited]", (unsigned long long)d[OFFCPU_STAT_RATE_LIMITED],
			 (unsigned long long)d[OFFCPU_STAT_RECORDS], s->opts.offcpu_max_rate ?
			 s->opts.offcpu_max_rate : SESSION_OFFCPU_DEFAULT_RATE);
	if (d[OFFCPU_STAT_BACKPRESSURE])
		log_warn("off-CPU: %llu of %llu intervals recorded without their stack while the "
			 "ring buffer was more than half full (reading new processes?); their time "
			 "is kept under [rate limited]", (unsigned long long)d[OFFCPU_STAT_BACKPRESSURE],
			 (unsigned long long)d[OFFCPU_STAT_RECORDS]);
	if (d[OFFCPU_STAT_LOST])
		log_warn("off-CPU: %llu intervals (%.3f s) lost: the ring buffer was full",
			 (unsigned long long)d[OFFCPU_STAT_LOST], d[OFFCPU_STAT_LOST_NS] / 1e9);
	if (d[OFFCPU_STAT_NO_MARK])
		log_warn("off-CPU: %llu switches could not be followed (no task storage)",
			 (unsigned long long)d[OFFCPU_STAT_NO_MARK]);
}

void session_print_stats(struct session *s)
{
	uint64_t st[STAT__COUNT], rt = 0, cnt = 0;

	memset(st, 0, sizeof(st));
	sampler_stats(s->sampler, st);
	sampler_prog_stats(s->sampler, &rt, &cnt);
	fprintf(stderr, "stats: uptime_s=%.1f samples=%llu stacks_lost=%llu ringbuf_lost=%llu "
		"busy_lost=%llu events_lost=%llu kstack_errors=%llu "
		"ustack_errors=%llu ustack_truncated=%llu bpf_runtime_ns=%llu bpf_run_cnt=%llu "
		"alloc_live_bytes=%llu alloc_peak_bytes=%llu\n",
		now_s() - s->start,
		(unsigned long long)session_samples(s), (unsigned long long)agg_dropped(s->agg),
		(unsigned long long)st[STAT_LOST_RINGBUF], (unsigned long long)st[STAT_BUSY],
		(unsigned long long)st[STAT_EVENTS_LOST],
		(unsigned long long)st[STAT_KSTACK_ERRORS],
		(unsigned long long)st[STAT_USTACK_ERRORS], (unsigned long long)st[STAT_USTACK_TRUNCATED],
		(unsigned long long)rt, (unsigned long long)cnt,
		(unsigned long long)alloc_live_bytes(), (unsigned long long)alloc_peak_bytes());
	if (s->mev) {
		struct mapevents_stats ms;
		struct process_registry_stats ps;

		mapevents_stats(s->mev, &ms);
		process_registry_stats(s->reg, &ps);
		fprintf(stderr, "mapevents: cpus=%d records=%llu mmaps=%llu lost=%llu full=%llu bad=%llu "
			"served=%llu stale=%llu refused=%llu procs=%zu evicted=%zu bytes=%zu "
			"maps_from_events=%llu\n",
			ms.cpus, (unsigned long long)ms.records, (unsigned long long)ms.mmaps,
			(unsigned long long)ms.lost, (unsigned long long)ms.full,
			(unsigned long long)ms.bad,
			(unsigned long long)ms.served, (unsigned long long)ms.stale,
			(unsigned long long)ms.refused, ms.procs,
			ms.evicted, ms.bytes, (unsigned long long)ps.maps_from_events);
	}
	{
		struct symbolizer_stats ss;
		struct process_registry_stats ps;

		symbolizer_get_stats(s->sym, &ss);
		process_registry_stats(s->reg, &ps);
		fprintf(stderr, "session: pids=%zu procinfo=%zu exited_pending=%zu maps_reads=%llu "
			"maps_changes=%llu stacks=%zu sym_pids=%zu sym_files=%zu sym_files_pending=%zu "
			"sym_files_loaded=%llu sym_symbols=%zu sym_symbol_bytes=%zu sym_drops=%llu "
			"sym_reopens=%llu sym_reopen_failures=%llu sym_cached_addrs=%zu "
			"sym_parked=%llu sym_strings=%zu sym_string_bytes=%zu sym_line_files=%zu "
			"sym_line_bytes=%llu sym_line_opens=%llu sym_line_deferred=%llu "
			"cgroup_reads=%llu cgroup_inherited=%llu cgroup_moves=%llu "
			"cgroups_followed=%d stat_reads=%llu fork_notes=%zu bad_records=%llu\n",
			ps.procs, ps.labeled, ps.exited_pending, (unsigned long long)ps.maps_reads,
			(unsigned long long)ps.maps_changes, agg_stacks(s->agg), ss.pids, ss.files,
			ss.files_pending, (unsigned long long)ss.files_loaded, ss.symbols,
			ss.symbol_bytes, (unsigned long long)ss.drops, (unsigned long long)ss.reopens,
			(unsigned long long)ss.reopen_failures, ss.cached_addrs,
			(unsigned long long)ss.parked, ss.strings,
			ss.string_bytes, ss.line_files, (unsigned long long)ss.line_bytes,
			(unsigned long long)ss.line_opens, (unsigned long long)ss.line_deferred,
			(unsigned long long)ps.cgroup_reads, (unsigned long long)ps.cgroup_inherited,
			(unsigned long long)ps.cgroup_moves, ps.cgroups_followed,
			(unsigned long long)ps.stat_reads, ps.fork_notes,
			(unsigned long long)sampler_bad_records(s->sampler));
	}
	if (s->opts.kinds & (SESSION_OFFCPU | SESSION_WALL)) {
		uint64_t o[OFFCPU_STAT__COUNT];

		rt = cnt = 0;
		sampler_offcpu_stats(s->sampler, o);
		sampler_offcpu_prog_stats(s->sampler, &rt, &cnt);
		fprintf(stderr, "offcpu: records=%llu switches=%llu off_ns=%llu short=%llu "
			"short_ns=%llu recorded=%llu weight_ns=%llu rate_limited=%llu backpressure=%llu "
			"lost=%llu lost_ns=%llu no_mark=%llu seeded=%llu bpf_runtime_ns=%llu "
			"bpf_run_cnt=%llu\n",
			(unsigned long long)session_offcpu_records(s),
			(unsigned long long)o[OFFCPU_STAT_SWITCHES],
			(unsigned long long)o[OFFCPU_STAT_NS], (unsigned long long)o[OFFCPU_STAT_SHORT],
			(unsigned long long)o[OFFCPU_STAT_SHORT_NS],
			(unsigned long long)o[OFFCPU_STAT_RECORDS],
			(unsigned long long)o[OFFCPU_STAT_WEIGHT_NS],
			(unsigned long long)o[OFFCPU_STAT_RATE_LIMITED],
			(unsigned long long)o[OFFCPU_STAT_BACKPRESSURE],
			(unsigned long long)o[OFFCPU_STAT_LOST],
			(unsigned long long)o[OFFCPU_STAT_LOST_NS],
			(unsigned long long)o[OFFCPU_STAT_NO_MARK],
			(unsigned long long)o[OFFCPU_STAT_SEEDED], (unsigned long long)rt,
			(unsigned long long)cnt);
	}
	if (s->opts_time_phases) {
		uint64_t ph[2 * PHASE__COUNT];
		static const char *names[PHASE__COUNT] = { "entry", "kstack", "ustack",
							   "snapshot", "output", "all" };
		int i;

		if (sampler_phases(s->sampler, ph) == 0) {
			fprintf(stderr, "bpf_phases:");
			for (i = 0; i < PHASE__COUNT; i++)
				fprintf(stderr, " %s_ns=%llu %s_n=%llu", names[i],
					(unsigned long long)ph[2 * i], names[i],
					(unsigned long long)ph[2 * i + 1]);
			fputc('\n', stderr);
		}
	}
	runtimes_print_stats(s->rts, stderr);
	if (s->unw) {
		struct unwinder_stats us;

		unwinder_stats(s->unw, &us);
		fprintf(stderr, "unwind: pids=%llu files=%llu entries_used=%llu entries_cap=%llu "
			"kernel_bytes=%llu entry_reads=%llu files_by_path=%llu files_by_inode=%llu table_builds=%llu table_rebuilds=%llu table_build_ms=%.1f "
			"tables_from_cache=%llu exec_publishes=%llu exec_hot=%llu evictions=%llu "
			"cap_hits=%llu snapshots=%llu snapshots_complete=%llu snapshots_chained=%llu "
			"deferred_segments=%llu snapshots_bad_pc=%llu snapshots_stack_switch=%llu "
			"switches=%llu bpf_unwinds=%llu "
			"bpf_complete=%llu bpf_frames=%llu bpf_truncated=%llu bpf_invalid=%llu "
			"bpf_read_errors=%llu bpf_snapshots=%llu bpf_snapshots_chained=%llu "
			"bpf_snapshots_unchained=%llu bpf_no_pid=%llu bpf_no_mapping=%llu "
			"bpf_no_table=%llu bpf_from_kernel=%llu bpf_bad_pc=%llu bpf_stack_switch=%llu "
			"bpf_switches=%llu bpf_exec=%llu snapshots_exited=%llu\n",
			(unsigned long long)us.pids, (unsigned long long)us.files,
			(unsigned long long)us.entries_used, (unsigned long long)us.entries_cap,
			(unsigned long long)us.kernel_bytes, (unsigned long long)us.entry_reads,
			(unsigned long long)us.files_by_path, (unsigned long long)us.files_by_inode,
			(unsigned long long)us.table_builds,
			(unsigned long long)us.table_rebuilds, us.table_build_ns / 1e6,
			(unsigned long long)us.tables_from_cache,
			(unsigned long long)us.exec_publishes, (unsigned long long)us.exec_hot,
			(unsigned long long)us.evictions,
			(unsigned long long)us.cap_hits, (unsigned long long)us.snapshots,
			(unsigned long long)us.snapshots_complete,
			(unsigned long long)us.snapshots_chained,
			(unsigned long long)us.deferred_segments,
			(unsigned long long)us.snapshots_bad_pc,
			(unsigned long long)us.snapshots_stack_switch,
			(unsigned long long)us.switches,
			(unsigned long long)us.bpf[USTAT_UNWINDS],
			(unsigned long long)us.bpf[USTAT_COMPLETE],
			(unsigned long long)us.bpf[USTAT_FRAMES],
			(unsigned long long)us.bpf[USTAT_TRUNCATED],
			(unsigned long long)us.bpf[USTAT_ERR_INVALID],
			(unsigned long long)us.bpf[USTAT_ERR_READ],
			(unsigned long long)us.bpf[USTAT_SNAPSHOTS],
			(unsigned long long)us.bpf[USTAT_SNAPSHOTS_CHAINED],
			(unsigned long long)us.bpf[USTAT_SNAPSHOTS_UNCHAINED],
			(unsigned long long)us.bpf[USTAT_ERR_NO_PID],
			(unsigned long long)us.bpf[USTAT_ERR_NO_MAPPING],
			(unsigned long long)us.bpf[USTAT_ERR_NO_TABLE],
			(unsigned long long)us.bpf[USTAT_FROM_KERNEL],
			(unsigned long long)us.bpf[USTAT_ERR_BAD_PC],
			(unsigned long long)us.bpf[USTAT_STACK_SWITCH],
			(unsigned long long)us.bpf[USTAT_SWITCHES],
			(unsigned long long)us.bpf[USTAT_EXEC],
			(unsigned long long)us.snapshots_exited);
		fprintf(stderr, "table_cache: records=%llu bytes=%llu entries=%llu hits=%llu "
			"disk_hits=%llu misses=%llu puts=%llu evictions=%llu disk=%d disk_bytes=%llu "
			"disk_writes=%llu disk_errors=%llu bad_files=%llu disk_evictions=%llu\n",
			(unsigned long long)us.cache.records, (unsigned long long)us.cache.bytes,
			(unsigned long long)us.cache.encoded_entries,
			(unsigned long long)us.cache.hits, (unsigned long long)us.cache.disk_hits,
			(unsigned long long)us.cache.misses, (unsigned long long)us.cache.puts,
			(unsigned long long)us.cache.evictions, us.cache.disk,
			(unsigned long long)us.cache.disk_bytes,
			(unsigned long long)us.cache.disk_writes,
			(unsigned long long)us.cache.disk_errors,
			(unsigned long long)us.cache.bad_files,
			(unsigned long long)us.cache.disk_evictions);
	}
}

uint64_t session_lost(struct session *s)
{
	uint64_t st[STAT__COUNT];

	if (sampler_stats(s->sampler, st))
		return 0;
	return st[STAT_LOST_RINGBUF] + st[STAT_BUSY] + agg_dropped(s->agg);
}

const char *session_lost_note(struct session *s)
{
	uint64_t lost = session_lost(s);

	s->lost_note[0] = '\0';
	if (lost)
		snprintf(s->lost_note, sizeof(s->lost_note), ", %llu lost", (unsigned long long)lost);
	return s->lost_note;
}

int session_command_status(const struct session *s)
{
	if (s->exec_failed || !s->child_done)
		return 127;
	if (WIFEXITED(s->child_status))
		return WEXITSTATUS(s->child_status);
	if (WIFSIGNALED(s->child_status))
		return 128 + WTERMSIG(s->child_status);
	return 1;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	/* The registry's last events (FORGET) reach the unwinder, symbolizer and runtimes. */
	process_registry_free(s->reg);
	mapevents_free(s->mev);
	runtimes_free(s->rts);
	unwinder_free(s->unw);
	sampler_close(s->sampler);
	symbolizer_free(s->sym);
	agg_free(s->agg);
	if (s->pidfds) {
		size_t i;

		for (i = 0; i < s->opts.npids; i++) {
			if (s->pidfds[i] >= 0)
				close(s->pidfds[i]);
		}
		xfree(s->pidfds);
	}
	xfree(s);
}
