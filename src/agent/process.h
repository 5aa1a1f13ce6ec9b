/* process.h: the process registry. One record per process the session profiles, owned here
 * and shared by everything that needs to know about processes: the native unwinder (tables in
 * BPF maps), the symbolizer (mappings and files), the runtimes (CPython, ...: one instance per
 * runtime found in the process) and the labels of the agent.
 *
 * The registry is the only reader of /proc/PID/maps in a session: a process's maps are read
 * once per change (its first sample, or its exec/fork when the session follows chosen
 * processes; then again when a pc falls outside every known mapping) and handed to every
 * subscriber in the same event. Subscribers keep what they derive from the maps (tables,
 * symbols, runtime state), never their own list of processes to poll.
 *
 * EVENTS (process_listener.on_event):
 *   PROCESS_EV_NEW      the maps of a process seen for the first time, or of a new image
 *                       (after an exec, or a pid reused by a new process): drop what you knew
 *                       of this pid and start from p->maps.
 *   PROCESS_EV_CHANGED  the same image mapped or unmapped code (dlopen, a JIT code cache
 *                       grew): p->maps is the new list.
 *   PROCESS_EV_CLAIMS   a runtime claimed or released address ranges of the process
 *                       (p->claims): the native unwinder republishes its mappings.
 *   PROCESS_EV_STALE    an exec or a fork of this pid was seen and the new image is not read
 *                       yet (whole-machine mode reads it at its first sample): drop what would
 *                       mislead (unwind tables of the old image).
 *   PROCESS_EV_EXIT     the process exited: stop work for it (BPF maps), keep what
 *                       symbolizing its samples of this interval needs.
 *   PROCESS_EV_FORGET   the registry drops the record (process_registry_collect() after an
 *                       interval, or the registry's end): free everything of this pid.
 * Listeners run in the order they subscribed. Claims made from inside a listener are applied
 * and announced (PROCESS_EV_CLAIMS) once the current event has reached every listener.
 *
 * Ownership: the registry owns every struct process and its fields; pointers stay valid until
 * the FORGET event of that process returns. `runtimes` is the one field another module owns
 * (src/runtime/runtime.c creates and frees what hangs there). Not thread-safe. */
#ifndef SCORCH_AGENT_PROCESS_H
#define SCORCH_AGENT_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/procinfo.h"
#include "agent/procmaps.h"

enum process_state {
	PROCESS_LIVE = 1,  /* maps read and current */
	PROCESS_STALE,     /* exec/fork seen, new maps not read yet */
	PROCESS_EXITED,    /* exit seen (or found dead); forgotten at the next collect */
};

enum process_event {
	PROCESS_EV_NEW = 1,
	PROCESS_EV_CHANGED,
	PROCESS_EV_CLAIMS,
	PROCESS_EV_STALE,
	PROCESS_EV_EXIT,
	PROCESS_EV_FORGET,
};

/* An address range a runtime owns (JIT code): the unwinder gives the mappings inside it the
 * runtime's kind and UNW_MAP_RUNTIME, so the runtime's BPF walker sees every pc there. */
struct process_claim {
	uint64_t start, end; /* [start, end) */
	uint8_t kind;        /* enum unwinder_kind */
};

#define PROCESS_MAX_CLAIMS 256

struct runtime_inst;

struct process {
	int pid;
	enum process_state state;
	uint32_t generation;       /* +1 for every new image (exec, reused pid) */
	struct procmaps maps;      /* executable mappings, sorted by address */
	uint64_t maps_hash;        /* of (start, end, offset, inode) of every entry */
	uint64_t maps_read_ns;     /* CLOCK_MONOTONIC of the last read */
	char comm[16];             /* from the last sample (may be empty) */
	char *exe;                 /* target of /proc/PID/exe ("" when unreadable) */
	struct procinfo info;      /* labels: read with process_registry_opts.labels */
	int have_info;
	char label_key[32];        /* a runtime's label for the process (e.g. "script"), or "" */
	char label_value[256];
	struct process_claim *claims;
	size_t nclaims, claims_cap;
	struct runtime_inst *runtimes; /* owned by src/runtime/runtime.c */
	/* private */
	int claims_dirty;
	int cgroup_known;          /* info.container_id was read (or taken from the parent) */
	int cgroup_stale;          /* moved to another cgroup since, or a new process took the pid */
};

/* A subscriber. on_event gets the process and what happened to it (see EVENTS above). */
struct process_listener {
	const char *name;
	void (*on_event)(void *ctx, struct process *p, enum process_event ev);
	void *ctx;
};

/* Fills the runtime label of p (key, e.g. "script", and value) when a runtime of p knows it:
 * returns 1 when set, 0 when not (yet) known. */
typedef int (*process_label_fn)(void *ctx, struct process *p, char *key, size_t keylen,
				char *value, size_t valuelen);

struct process_registry_opts {
	int labels; /* read exe name and container id of each process (procinfo.h) */
};

struct process_registry;

struct process_registry *process_registry_new(const struct process_registry_opts *opts);
/* Sends PROCESS_EV_FORGET for every process, then frees. NULL ok. */
void process_registry_free(struct process_registry *r);
/* Add a listener (copied). Up to 8. 0 or -ENOSPC. */
int process_registry_subscribe(struct process_registry *r, const struct process_listener *l);
/* Where runtime labels come from (src/runtime/runtime.c). */
void process_registry_set_label_source(struct process_registry *r, process_label_fn fn,
				       void *ctx);

/* Where the maps of a process that is gone come from (mapevents.h: what the kernel said of
 * its mappings as they were made): fills out (initialized by the call, released by the caller
 * in every case) with the executable mappings of pid's image that ran at when_ns (0: the
 * latest), exe with its executable, *as_of_ns with the time up to which they hold. 0, or a
 * negative errno when it does not know them. */
typedef int (*process_maps_fn)(void *ctx, int pid, uint64_t when_ns, struct procmaps *out,
			       char *exe, size_t exelen, uint64_t *as_of_ns);
/* Ask fn for the maps of a process whose /proc/PID/maps cannot be read (gone already): the
 * record is then read (NEW) as if from /proc, with what fn says. */
void process_registry_set_maps_source(struct process_registry *r, process_maps_fn fn,
				      void *ctx);

/* The record of pid, or NULL. */
struct process *process_get(struct process_registry *r, int pid);

/* Read pid now (a -p target, or an exec/fork when following chosen processes) and send NEW.
 * 0, or -ESRCH when the process is gone (no record is kept). */
int process_track(struct process_registry *r, int pid, const char *comm);
/* A sample of pid was seen (drain loop): a pid not known yet, or stale, is read now (NEW).
 * Returns the record (NULL when the process could not be read). Cheap when nothing is to do. */
struct process *process_seen(struct process_registry *r, int pid, const char *comm);
/* process_seen() for a sample taken at when_ns (CLOCK_MONOTONIC): a process gone already is
 * read from the maps source as its image was then. */
struct process *process_seen_at(struct process_registry *r, int pid, const char *comm,
				uint64_t when_ns);
/* Lifecycle records of the sampler (when_ns: the record's CLOCK_MONOTONIC time, 0 unknown).
 * An exec or fork of a known pid makes its record stale (STALE sent), or reads it at once when
 * read_now is set (NEW); an unknown pid is read at once with read_now, else left for its first
 * sample. A record read after when_ns (a sample of the new image came first) is current. */
void process_exec(struct process_registry *r, int pid, uint64_t when_ns, int read_now);
void process_exit(struct process_registry *r, int pid);

/* What a fork record says (sampler.h's fork_body). */
struct process_fork_info {
	int parent;            /* the forking process */
	int ppid;              /* the child's parent (the same but with CLONE_PARENT) */
	uint64_t start_ns;     /* the child's start (CLOCK_MONOTONIC) */
	int kernel_thread;
	int same_cgroups;      /* the child starts in every cgroup of parent */
	uint32_t cgroup_moves; /* cgroup-move records sent before the fork */
};
/* A fork record (f may be NULL), handled as process_exec(). With labels, what f says is kept
 * until the child is read (or for 30 s): its start and parent, so that reading it as an
 * ancestor needs no /proc/PID/stat, and, when cgroup moves are followed and the child started
 * in its parent's cgroups, the parent's container id, so that reading it needs no
 * /proc/PID/cgroup. */
void process_fork(struct process_registry *r, int pid, uint64_t when_ns, int read_now,
		  const struct process_fork_info *f);
/* Cgroup-move records come (sampler_cgroup_events()): container ids may be taken from fork
 * records, and kept across an exec. Without them every process's is read from /proc. */
void process_registry_follow_cgroups(struct process_registry *r, int on);
/* A cgroup-move record: pid (one of its threads) moved to another cgroup; seq numbers the
 * records from 1. pid's container id is read again when next asked for; a gap in seq (a
 * record lost) stops taking container ids from events for good. */
void process_cgroup_moved(struct process_registry *r, int pid, uint32_t seq);

/* Re-read the maps of a live process (a pc outside every known mapping, a new library), unless
 * it was read less than min_interval_ns ago. Sends CHANGED when they differ. Returns 1 when
 * the maps were read, 0 when skipped (too soon, not live), or a negative errno. */
int process_refresh(struct process_registry *r, int pid, uint64_t min_interval_ns);
/* process_refresh() for a pc that ran at when_ns (CLOCK_MONOTONIC, a sample's time): maps read
 * before when_ns may miss it (a new process read at its exec, before ld.so mapped its
 * libraries) and are read again however recently; maps read after it are current for it. */
int process_refresh_after(struct process_registry *r, int pid, uint64_t min_interval_ns,
			  uint64_t when_ns);

/* Claim [start, end) of pid for the runtime of kind (enum unwinder_kind): replaces a claim of
 * the same start. kind 0 releases the claim at start. 0, -ENOENT (no such process), -EINVAL,
 * -ENOSPC (PROCESS_MAX_CLAIMS). Sends CLAIMS (after the current event when called from a
 * listener). */
int process_claim(struct process_registry *r, int pid, uint64_t start, uint64_t end,
		  uint8_t kind);

/* Labels of pid for the agent (exe name, container id, the runtime's script label), or NULL
 * when unknown or without process_registry_opts.labels. The runtime label is asked for until
 * a runtime gives one (a CPython script is known once the interpreter runs it). */
const struct procinfo *process_labels(struct process_registry *r, int pid);
/* The runtime label of pid (key and value, e.g. "script" = "app.py"): 1 when set, else 0. */
int process_runtime_label(struct process_registry *r, int pid, const char **key,
			  const char **value);

/* What a sample tells of its process (sampler.h's sample_body), for the agent's service names
 * (service_name.h): recorded on the record of pid (with process_registry_opts.labels). */
struct process_lineage {
	uint64_t time_ns;          /* the sample's time (CLOCK_MONOTONIC) */
	uint64_t start_ns;         /* the process's start (CLOCK_MONOTONIC) */
	const uint32_t *ancestors; /* PROCINFO_ANCESTORS pids, parent first, 0 past init */
	int kernel_thread;
};
/* Record l on pid's labels (procinfo: ancestors, start, kernel thread, latest sample). A pid
 * whose record could not be read (gone already) keeps the labels known without /proc (its
 * comm, the lineage). When the process is younger than young_ns at the sample, its ancestors'
 * labels are read now, while they most likely still run: a short-lived child is named after
 * the nearest of them that lasts (process_note_labels()). */
void process_note_lineage(struct process_registry *r, int pid, const struct process_lineage *l,
			  uint64_t young_ns);
/* The labels of pid read now, without its maps: the record is created stale, so a sample of
 * its own reads it in full (NEW) later. NULL when pid cannot be read. */
const struct procinfo *process_note_labels(struct process_registry *r, int pid);
/* The time of pid's exit record (before process_exit()): its lifetime for the labels. */
void process_set_exit_time(struct process_registry *r, int pid, uint64_t when_ns);

/* End of an interval, after its samples are symbolized: processes whose exit record came are
 * forgotten (PROCESS_EV_FORGET). A process found dead without one gets PROCESS_EV_EXIT now and
 * is forgotten at the next collect: its exit record may have been lost, or it died while this
 * interval was symbolized and its last samples and exit record are still in the ring buffer
 * (they must find its labels and lineage). */
void process_registry_collect(struct process_registry *r);

/* Iterate over the records: for (size_t it = 0; (p = process_next(r, &it));) */
struct process *process_next(struct process_registry *r, size_t *iter);

struct process_registry_stats {
	size_t procs;           /* records */
	size_t exited_pending;  /* exited, forgotten at the next collect */
	size_t labeled;         /* with labels read */
	uint64_t maps_reads;    /* /proc/PID/maps reads */
	uint64_t maps_changes;  /* reads that found new maps (NEW or CHANGED sent) */
	uint64_t maps_from_events; /* reads of a gone process answered by the maps source */
	uint64_t events;        /* events sent (per listener) */
	uint64_t cgroup_reads;  /* /proc/PID/cgroup reads */
	uint64_t cgroup_inherited; /* container ids taken from a fork record or kept at an exec */
	uint64_t cgroup_moves;  /* cgroup-move records */
	uint64_t stat_reads;    /* /proc/PID/stat reads (an ancestor without a fork record) */
	size_t fork_notes;      /* fork records kept for processes not read yet */
	int cgroups_followed;   /* container ids are taken from events */
};
void process_registry_stats(const struct process_registry *r, struct process_registry_stats *st);

#endif
