/* session.c: the profiling event loop (see session.h). The ring-buffer callback only counts
 * raw stacks and notes new processes; symbols are resolved once per distinct stack at the end
 * (or per interval), never per sample. */
#include "agent/session.h"
#include "agent/aggregate.h"
#include "agent/procinfo.h"
#include "agent/python_tracker.h"
#include "agent/sampler.h"
#include "agent/symbolizer.h"
#include "agent/unwinder.h"
#include "sampler.skel.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "profile/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum pid_state { PID_UNTRACKED = 0, PID_TRACKED = 1, PID_STALE = 2 };

struct session {
	struct session_opts opts;
	struct sampler *sampler;
	struct symbolizer *sym;
	struct unwinder *unw;  /* native unwind tables (NULL: frame pointers only) */
	struct agg *agg;
	struct python_tracker *py; /* CPython processes: detection, code objects, labels */
	struct u64map pids;   /* pid + 1 -> enum pid_state */
	struct u64map procs;  /* pid + 1 -> struct procinfo * */
	uint32_t *exited;     /* pids whose exit we saw, forgotten at the next collect */
	size_t nexited, exited_cap;
	double start, last_status, period_start_wall;
	uint64_t period_start_ns;
	pid_t child;          /* command mode */
	int child_status;     /* waitpid status once reaped */
	int child_done;
	int exec_failed;
	uint64_t samples_before; /* samples already handed out by session_profile() */
	char lost_note[64];
	int status_shown;
};

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
	int go[2], errp[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
		return error("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return error("fork: %s", strerror(errno));
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
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

static void note_pid(struct session *s, uint32_t pid, enum pid_state state)
{
	if (pid)
		u64map_put(&s->pids, (uint64_t)pid + 1, state);
}

/* Look for CPython in a process we start to follow; say once why one cannot be profiled. */
static void session_track_python(struct session *s, int pid)
{
	const char *why = NULL;

	if (s->py && python_tracker_add_pid(s->py, pid, &why) < 0 && why)
		log_warn("python stacks of PID %d: %s", pid, why);
}

static int on_record(void *ctx, const struct event_hdr *hdr, size_t size)
{
	struct session *s = ctx;
	uint64_t *state;

	/* Unwind tables follow the processes; stack snapshots become frames. */
	unwinder_on_event(s->unw, hdr, size);
	if (hdr->type == EVENT_SAMPLE && s->unw) {
		const struct event_hdr *fixed;
		size_t fixed_size;

		if (unwinder_fix_sample(s->unw, hdr, size, &fixed, &fixed_size) > 0) {
			/* A snapshot means BPF met code it had no table for: a new process or a
			 * new mapping (dlopen). Re-read the mappings for symbols too, while the
			 * process lives (cheap when nothing changed). */
			if (hdr->pid)
				symbolizer_track_pid(s->sym, (int)hdr->pid);
			hdr = fixed;
			size = fixed_size;
		}
	}
	switch (hdr->type) {
	case EVENT_SAMPLE:
		agg_add_record(s->agg, hdr, size);
		if (hdr->pid && s->py) {
			/* Read the code objects a sample names while the process lives. */
			const struct sample_body *b = (const void *)(hdr + 1);

			if (size >= sizeof(*hdr) + sizeof(*b) +
					    ((size_t)b->nkernel + b->nuser) * sizeof(uint64_t))
			{
				const char *why = python_tracker_note_sample(
					s->py, (int)hdr->pid, (const uint64_t *)(b + 1) + b->nkernel,
					b->nuser);

				if (why)
					log_warn("python stacks of PID %u: %s", hdr->pid, why);
			}
		}
		if (!hdr->pid)
			break;
		state = u64map_get(&s->pids, (uint64_t)hdr->pid + 1);
		if (!state || *state != PID_TRACKED) {
			/* Read the process's mappings while it lives, so its frames resolve
			 * even if it exits before we symbolize. */
			const struct sample_body *body = (const void *)(hdr + 1);
			uint64_t *pi = u64map_get(&s->procs, (uint64_t)hdr->pid + 1);
			struct procinfo *info;

			symbolizer_track_pid(s->sym, (int)hdr->pid);
			if (s->unw)
				unwinder_track_pid(s->unw, (int)hdr->pid);
			session_track_python(s, (int)hdr->pid);
			if (pi) {
				info = (struct procinfo *)(uintptr_t)*pi;
			} else {
				info = xmalloc(sizeof(*info));
				u64map_put(&s->procs, (uint64_t)hdr->pid + 1, (uintptr_t)info);
			}
			procinfo_read((int)hdr->pid, body->comm, info);
			note_pid(s, hdr->pid, PID_TRACKED);
		}
		break;
	case EVENT_EXEC:
	case EVENT_FORK:
		/* New image or new process: what we know of its mappings is stale. */
		note_pid(s, hdr->pid, PID_STALE);
		break;
	case EVENT_EXIT:
		ALLOC_GROW(s->exited, s->nexited + 1, s->exited_cap);
		s->exited[s->nexited++] = hdr->pid;
		break;
	default:
		break;
	}
	return 0;
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
	u64map_init(&s->pids);
	u64map_init(&s->procs);
	s->agg = agg_new(opts->max_stacks);
	s->sym = symbolizer_new();

	memset(&so, 0, sizeof(so));
	so.freq_hz = opts->freq_hz;
	so.filter_pids = opts->npids || opts->command;
	so.follow_children = opts->command != NULL;
	so.include_idle = opts->include_idle;
	{
		/* CPython frames, interleaved by the native unwinder. SCORCH_PYTHON=off|only|keep
		 * (no Python frames / Python frames only / keep the eval-loop frames) is a knob
		 * for benchmarks and debugging. */
		const char *pm = getenv("SCORCH_PYTHON");

		so.python_mode = pm && !strcmp(pm, "off") ? 0 : pm && !strcmp(pm, "only") ? 1 : 2;
		so.python_keep_eval = pm && !strcmp(pm, "keep");
	}
	if (sampler_open(&so, &s->sampler, &err) < 0) {
		error("%s", err.msg);
		goto fail;
	}
	if (so.python_mode) {
		s->py = python_tracker_new(bpf_map__fd(sampler_skel(s->sampler)->maps.py_procs));
		agg_set_python(s->agg, s->py);
	}
	{
		struct unwinder_opts uo;

		memset(&uo, 0, sizeof(uo));
		uo.interp = s->py ? python_tracker_interp_ranges : NULL;
		uo.interp_ctx = s->py;
		s->unw = unwinder_new(sampler_skel(s->sampler)->obj, &uo, &err);
	}
	if (!s->unw)
		log_warn("native unwinding without frame pointers is off: %s", err.msg);
	for (i = 0; i < opts->npids && s->unw; i++)
		unwinder_track_pid(s->unw, opts->pids[i]);
	for (i = 0; i < opts->npids; i++)
		session_track_python(s, opts->pids[i]);
	for (i = 0; i < opts->npids; i++) {
		if (sampler_add_pid(s->sampler, opts->pids[i]) < 0) {
			error("cannot follow PID %d: %s", opts->pids[i], strerror(errno));
			goto fail;
		}
	}
	if (opts->command) {
		if (spawn_command(s, &go_fd, &err_fd))
			goto fail;
		if (sampler_add_pid(s->sampler, s->child) < 0) {
			error("cannot follow the command's PID %d: %s", (int)s->child, strerror(errno));
			goto fail;
		}
	}
	if (sampler_attach(s->sampler, &err) < 0) {
		error("%s", err.msg);
		goto fail;
	}
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
	fprintf(stderr, "\r\033[Krecording %6.1f s  %8llu samples  %llu lost%s", t - s->start,
		(unsigned long long)agg_samples(s->agg), (unsigned long long)session_lost(s),
		final ? "\n" : "");
	s->status_shown = 1;
}

static int targets_alive(struct session *s)
{
	size_t i;

	for (i = 0; i < s->opts.npids; i++) {
		if (kill(s->opts.pids[i], 0) == 0 || errno != ESRCH)
			return 1;
	}
	return 0;
}

int session_poll(struct session *s, int timeout_ms)
{
	int n;

	if (s->opts.duration_s > 0) {
		double left = s->start + s->opts.duration_s - now_s();

		if (left <= 0)
			return 0;
		if (left * 1000 < timeout_ms)
			timeout_ms = (int)(left * 1000) + 1;
	}
	n = sampler_poll(s->sampler, timeout_ms, on_record, s);
	if (n < 0 && n != -EINTR)
		return error("reading the BPF ring buffer: %s", strerror(-n));
	show_status(s, 0);
	if (s->opts.stop_flag && *s->opts.stop_flag) {
		/* Pass the signal on to the command so it can finish too. */
		if (s->child > 0 && !s->child_done)
			kill(s->child, (int)*s->opts.stop_flag);
		return 0;
	}
	if (s->child > 0 && !s->child_done) {
		pid_t r = waitpid(s->child, &s->child_status, WNOHANG);

		if (r == s->child) {
			s->child_done = 1;
			return 0;
		}
	}
	if (s->opts.npids && !targets_alive(s))
		return 0;
	if (s->opts.duration_s > 0 && now_s() - s->start >= s->opts.duration_s)
		return 0;
	return 1;
}

int session_run(struct session *s)
{
	int r;

	while ((r = session_poll(s, 100)) > 0)
		;
	/* Drain what is left in the ring buffer. */
	while (sampler_poll(s->sampler, 0, on_record, s) > 0)
		;
	show_status(s, 1);
	if (s->child > 0 && !s->child_done) {
		/* Stopped by duration or signal: the command's exit status is still ours to return. */
		if (waitpid(s->child, &s->child_status, 0) == s->child)
			s->child_done = 1;
	}
	return r < 0 ? r : 0;
}

struct profile *session_new_profile(struct session *s)
{
	struct profile *p = profile_new();
	int hz = s->opts.freq_hz > 0 ? s->opts.freq_hz : 99;

	profile_set_type(p, "samples", "count", 1000000000LL / hz);
	profile_set_period_type(p, "cpu", "nanoseconds");
	p->time_nanos = (int64_t)s->period_start_ns;
	p->duration_nanos = (int64_t)(wall_ns() - s->period_start_ns);
	return p;
}

const struct procinfo *session_procinfo(struct session *s, uint32_t pid)
{
	uint64_t *v = u64map_get(&s->procs, (uint64_t)pid + 1);

	return v ? (const struct procinfo *)(uintptr_t)*v : NULL;
}

static void forget_exited(struct session *s)
{
	size_t i;

	for (i = 0; i < s->nexited; i++) {
		uint64_t key = (uint64_t)s->exited[i] + 1, *v = u64map_get(&s->procs, key);

		if (v) {
			xfree((void *)(uintptr_t)*v);
			u64map_remove(&s->procs, key);
		}
		u64map_remove(&s->pids, key);
		symbolizer_forget_pid(s->sym, (int)s->exited[i]);
		if (s->py)
			python_tracker_forget_pid(s->py, (int)s->exited[i]);
	}
	s->nexited = 0;
}

int session_collect(struct session *s, session_pick_fn pick, void *ctx)
{
	int ret = agg_to_profile(s->agg, s->sym, NULL, pick, ctx);

	s->samples_before += agg_samples(s->agg);
	agg_reset(s->agg);
	s->period_start_ns = wall_ns();
	forget_exited(s);
	return ret;
}

static struct profile *pick_one(void *ctx, uint32_t pid, const char *comm)
{
	return ctx;
}

struct profile *session_profile(struct session *s)
{
	struct profile *p = session_new_profile(s);

	session_collect(s, pick_one, p);
	return p;
}

uint64_t session_samples(const struct session *s)
{
	return s->samples_before + agg_samples(s->agg);
}

void session_print_stats(struct session *s)
{
	uint64_t st[STAT__COUNT], rt = 0, cnt = 0;

	memset(st, 0, sizeof(st));
	sampler_stats(s->sampler, st);
	sampler_prog_stats(s->sampler, &rt, &cnt);
	fprintf(stderr, "stats: samples=%llu stacks_lost=%llu ringbuf_lost=%llu kstack_errors=%llu "
		"ustack_errors=%llu ustack_truncated=%llu bpf_runtime_ns=%llu bpf_run_cnt=%llu "
		"alloc_live_bytes=%llu alloc_peak_bytes=%llu\n",
		(unsigned long long)session_samples(s), (unsigned long long)agg_dropped(s->agg),
		(unsigned long long)st[STAT_LOST_RINGBUF], (unsigned long long)st[STAT_KSTACK_ERRORS],
		(unsigned long long)st[STAT_USTACK_ERRORS], (unsigned long long)st[STAT_USTACK_TRUNCATED],
		(unsigned long long)rt, (unsigned long long)cnt,
		(unsigned long long)alloc_live_bytes(), (unsigned long long)alloc_peak_bytes());
	{
		struct symbolizer_stats ss;

		symbolizer_get_stats(s->sym, &ss);
		fprintf(stderr, "session: pids=%zu procinfo=%zu exited_pending=%zu stacks=%zu "
			"sym_pids=%zu sym_files=%zu sym_symbols=%zu sym_cached_addrs=%zu "
			"bad_records=%llu\n",
			s->pids.count, s->procs.count, s->nexited, agg_stacks(s->agg), ss.pids,
			ss.files, ss.symbols, ss.cached_addrs,
			(unsigned long long)sampler_bad_records(s->sampler));
	}
	if (s->py) {
		struct python_tracker_stats ps;
		uint64_t bpf[PYSTAT__COUNT];

		python_tracker_get_stats(s->py, &ps);
		python_tracker_bpf_stats(sampler_skel(s->sampler)->maps.py_stats, bpf);
		fprintf(stderr, "python: procs=%zu frames_noted=%llu cache_lookups=%llu cache_hits=%llu "
			"code_reads=%llu read_errors=%llu checksum_mismatches=%llu bpf_samples=%llu "
			"bpf_no_tstate=%llu bpf_hooks=%llu bpf_frames=%llu bpf_errors=%llu "
			"bpf_truncated=%llu bpf_walk_ns=%llu\n",
			ps.procs, (unsigned long long)ps.frames, (unsigned long long)ps.cache_lookups,
			(unsigned long long)ps.cache_hits, (unsigned long long)ps.code_reads,
			(unsigned long long)ps.read_errors, (unsigned long long)ps.checksum_mismatches,
			(unsigned long long)bpf[PYSTAT_SAMPLES], (unsigned long long)bpf[PYSTAT_NO_TSTATE],
			(unsigned long long)bpf[PYSTAT_HOOKS], (unsigned long long)bpf[PYSTAT_FRAMES],
			(unsigned long long)bpf[PYSTAT_ERRORS], (unsigned long long)bpf[PYSTAT_TRUNCATED],
			(unsigned long long)bpf[PYSTAT_WALK_NS]);
	}
	if (s->unw) {
		struct unwinder_stats us;

		unwinder_stats(s->unw, &us);
		fprintf(stderr, "unwind: pids=%llu files=%llu entries_used=%llu entries_cap=%llu "
			"kernel_bytes=%llu table_builds=%llu table_build_ms=%.1f evictions=%llu "
			"cap_hits=%llu snapshots=%llu snapshots_complete=%llu bpf_unwinds=%llu "
			"bpf_complete=%llu bpf_frames=%llu bpf_truncated=%llu bpf_invalid=%llu "
			"bpf_read_errors=%llu\n",
			(unsigned long long)us.pids, (unsigned long long)us.files,
			(unsigned long long)us.entries_used, (unsigned long long)us.entries_cap,
			(unsigned long long)us.kernel_bytes, (unsigned long long)us.table_builds,
			us.table_build_ns / 1e6, (unsigned long long)us.evictions,
			(unsigned long long)us.cap_hits, (unsigned long long)us.snapshots,
			(unsigned long long)us.snapshots_complete,
			(unsigned long long)us.bpf[USTAT_UNWINDS],
			(unsigned long long)us.bpf[USTAT_COMPLETE],
			(unsigned long long)us.bpf[USTAT_FRAMES],
			(unsigned long long)us.bpf[USTAT_TRUNCATED],
			(unsigned long long)us.bpf[USTAT_ERR_INVALID],
			(unsigned long long)us.bpf[USTAT_ERR_READ]);
	}
}

uint64_t session_lost(struct session *s)
{
	uint64_t st[STAT__COUNT];

	if (sampler_stats(s->sampler, st))
		return 0;
	return st[STAT_LOST_RINGBUF] + agg_dropped(s->agg);
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
	unwinder_free(s->unw);
	python_tracker_free(s->py);
	sampler_close(s->sampler);
	symbolizer_free(s->sym);
	agg_free(s->agg);
	u64map_release(&s->pids);
	{
		size_t it = 0;
		uint64_t k, v;

		while (u64map_next(&s->procs, &it, &k, &v))
			xfree((void *)(uintptr_t)v);
	}
	u64map_release(&s->procs);
	xfree(s->exited);
	xfree(s);
}
