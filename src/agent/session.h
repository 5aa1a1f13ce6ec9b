/* session.h: one profiling session: the BPF sampler, the processes it follows, the raw-stack
 * aggregate and the symbolizer, driven by one event loop. Shared by `scorch record`, `scorch
 * top` and `scorch agent`. A session makes CPU, off-CPU and wall-clock profiles (kinds).
 *
 *   session_start()  load BPF, start the command (if any), attach
 *   session_run()    loop until the command exits, the pids exit, the duration passes or
 *                    *stop_flag is set     -- or drive it yourself with session_poll()
 *   session_profile() symbolize what was collected into a new profile and start afresh
 *   session_free()
 */
#ifndef SCORCH_SESSION_H
#define SCORCH_SESSION_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct session;
struct profile;

/* The kinds of profile a session makes (session_opts.kinds, a mask):
 *   SESSION_CPU     CPU samples; value: number of samples (period 1e9 / freq_hz ns each)
 *   SESSION_OFFCPU  time threads spent off CPU (blocked or waiting for a CPU), nanoseconds
 *   SESSION_WALL    both: every thread's wall time, nanoseconds
 * Off-CPU intervals are recorded as bpf/offcpu.h describes (sampling, reasons, stacks). */
enum session_kind { SESSION_CPU = 1, SESSION_OFFCPU = 2, SESSION_WALL = 4 };
#define SESSION_KINDS_ALL (SESSION_CPU | SESSION_OFFCPU | SESSION_WALL)
#define SESSION_OFFCPU_DEFAULT_RATE 1000 /* off-CPU stacks per CPU and second */
/* "cpu", "offcpu", "wall": the profile type servers know them by. */
const char *session_kind_name(enum session_kind kind);
/* Parse a comma-separated list of kind names into a mask ("cpu,offcpu"): 0, or -EINVAL with
 * the unknown (or empty) name copied into bad (NUL-terminated, truncated to badlen). */
int session_kinds_parse(const char *list, unsigned *mask, char *bad, size_t badlen);

struct session_opts {
	int freq_hz;              /* default 99 */
	unsigned kinds;           /* enum session_kind mask; 0: SESSION_CPU */
	uint64_t offcpu_min_ns;   /* off-CPU intervals shorter than this are not recorded */
	uint64_t offcpu_period_ns; /* off-CPU sampling period (0: 1e9 / freq_hz) */
	uint32_t offcpu_max_rate; /* off-CPU stacks per CPU and second (0: default, 1000) */
	int include_idle;         /* whole-machine mode: count idle CPU as [idle] */
	int status_line;          /* live status on stderr */
	int procinfo;             /* read executable name and container of each process
				     (session_procinfo(); the agent's labels) */
	double duration_s;        /* 0: no limit */
	volatile sig_atomic_t *stop_flag; /* set by a signal handler to stop: see
					     session_signals_install() */
	const int *pids;          /* profile these processes ... */
	size_t npids;
	char *const *command;     /* ... or run and profile this command (argv, NULL-terminated) */
	size_t max_stacks;        /* cap on distinct raw stacks held (default 1M) */
	const char *cache_dir;    /* keep unwind tables on disk there too (NULL: memory only) */
	double short_lived_s;     /* with procinfo: the ancestors of a process younger than
				     this are read at once, for naming it (0: 1 s) */
	const char *debuginfod_urls; /* debuginfod servers (space-separated), besides
					DEBUGINFOD_URLS; NULL: only those */
	int no_debuginfod;        /* 1: no debuginfod, whatever DEBUGINFOD_URLS says */
	int no_line_info;         /* 1: no source lines (DWARF, .gopclntab) */
	size_t line_budget;       /* memory for DWARF (symbolizer_options.line_budget; 0:
				     the symbolizer's default, sized for the agent) */
	uint32_t unwind_entries;  /* the kernel's unwind entry space, in entries of 8 bytes
				     (0: UNWINDER_DEFAULT_ENTRIES) */
	const char *capture_dir;  /* keep samples whose user stack ends in an error marker as
				     replay cases there (src/replay/); NULL: none */
	size_t capture_max;       /* at most this many (0: 100) */
};

/* Install the handlers every profiling command wants, and return the stop flag for
 * session_opts.stop_flag: SIGINT and SIGTERM set it (to the signal number, or'ed with
 * SESSION_STOP_TTY when the terminal sent it to the whole process group, so the command has
 * it already); SIGPIPE is ignored (a closed stderr must not kill us before the output is
 * written); SIGCHLD is reset to its default, so that the command's exit status can be read
 * even when our parent ignored it. The command itself starts with the default dispositions. */
#define SESSION_STOP_TTY 0x100
volatile sig_atomic_t *session_signals_install(void);

/* Start profiling. Prints what went wrong (and how to fix it) and returns -1 on failure, or
 * -127 when the command could not be started (not found, not executable). */
int session_start(const struct session_opts *opts, struct session **out);
/* With opts.capture_dir: the replay cases written so far, and those left out (past
 * capture_max, or that could not be made). */
void session_capture_counts(const struct session *s, size_t *written, size_t *skipped);
/* Wait up to timeout_ms for samples and consume them. Returns 1 while the session should go
 * on, 0 when it is over (command/pids exited, duration passed, stop flag), negative on error.
 * When it acts on the stop flag it clears it, so that a second signal can be told apart. */
int session_poll(struct session *s, int timeout_ms);
/* Stop sampling (the perf events are disabled, so the lost-sample counters stop too) and
 * consume what the ring buffer still holds. Idempotent; session_run() calls it. */
void session_stop(struct session *s);
/* session_poll() until over, then session_stop(), then wait for the command (if any):
 *   - the command exited: done;
 *   - stopped by a signal: the signal was passed on to the command (unless the terminal sent
 *     it to both); wait for it to exit; a second signal kills it (SIGKILL);
 *   - the duration passed: send the command SIGTERM, and SIGKILL 5 s later if it is still
 *     there.
 * Processes the command started and left running (daemons) are not waited for.
 * Returns 0 or a negative errno. */
int session_run(struct session *s);

/* Wait up to timeout_s seconds (less on the stop flag) for debug files still downloading from
 * debuginfod, saying so on stderr; nothing to do without debuginfod. For one-shot recordings,
 * before session_profile(). */
void session_wait_debuginfo(struct session *s, double timeout_s);

/* Symbolize everything collected since the last call into a new profile of the session's
 * first kind (CPU, else off-CPU, else wall; the caller frees it with profile_free()), and
 * reset the aggregate. */
struct profile *session_profile(struct session *s);

/* The same for every kind of the session, but each process's stacks go to the profile pick()
 * returns for it and the kind (see aggregate.h; pick may return NULL to drop them). Profiles
 * should come from session_new_profile(). Processes that exited are forgotten afterwards. */
struct profile;
typedef struct profile *(*session_pick_fn)(void *ctx, enum session_kind kind, uint32_t pid,
					   const char *comm);
int session_collect(struct session *s, session_pick_fn pick, void *ctx);
/* A new empty profile of this kind with its sample type (samples/count with a cpu period,
 * offcpu/nanoseconds, wall/nanoseconds), period and the current interval. */
struct profile *session_new_profile(struct session *s, enum session_kind kind);

/* What we know of a process seen in this interval (exe name, container, Python script), or
 * NULL (always NULL without session_opts.procinfo). */
struct procinfo;
const struct procinfo *session_procinfo(struct session *s, uint32_t pid);

uint64_t session_samples(const struct session *s);     /* CPU samples */
uint64_t session_offcpu_records(const struct session *s); /* off-CPU intervals recorded */
/* Say (log_warn) what the off-CPU estimate lost since the last call: intervals recorded
 * without stack over the rate limit, records the ring buffer refused. Quiet when nothing. */
void session_offcpu_report(struct session *s);
/* Log (info) the off-CPU totals of the session: waits that ended, recorded, under the minimum,
 * without stack, lost, and the BPF run time per context switch when kernel.bpf_stats_enabled
 * is on. Nothing without off-CPU profiles. */
void session_offcpu_log_totals(struct session *s);
/* Print machine-readable counters (samples, lost, BPF run time) on one line to stderr. */
void session_print_stats(struct session *s);
uint64_t session_lost(struct session *s);
/* ", N lost" when samples were lost, else "". */
const char *session_lost_note(struct session *s);
/* The command's exit status as a shell reports it (128+signal when killed); 127 when it could
 * not be started. */
/* The signal that stopped the session (0: it ended by itself). */
int session_stop_signal(const struct session *s);
int session_command_status(const struct session *s);
void session_free(struct session *s);

#endif
