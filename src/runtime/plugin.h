/* plugin.h: what the interpreter runtimes (CPython, Ruby, PHP, Perl, ...) share in their
 * plumbing, so that a runtime's *_runtime.c holds only what is its own (docs/runtimes.md):
 *   - the walker's two BPF maps: the processes (keyed by pid, a value of the runtime's own)
 *     and the per-CPU counters (runtime_read_counters() sums them for the stats line);
 *   - the check of a newly attached process, polled from the sample stream: validation of its
 *     offsets with retries (the process runs while we read it), then its main script;
 *   - JIT ranges claimed for the walker (process_claim()), replaced when a range grows;
 *   - marker frames.
 * Nothing here owns a process: the instance that embeds these structures does. Not
 * thread-safe. */
#ifndef SCORCH_RUNTIME_PLUGIN_H
#define SCORCH_RUNTIME_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

struct bpf_object;
struct errmsg;
struct process_registry;
struct runtime_frame;

/* CLOCK_MONOTONIC now, in ns. */
uint64_t plugin_now_ns(void);

/* A copy of a file's detection result (size bytes) for runtime_ops.file_detect(); freed by
 * plugin_file_free(), which fits runtime_ops.file_free. */
void *plugin_file_copy(const void *f, size_t size);
void plugin_file_free(void *data);

/* The walker's maps. Without a BPF object (offline use, unit tests) both fds are -1 and
 * publishing does nothing. */
struct plugin_maps {
	int procs_fd; /* pid -> the runtime's per-process value */
	int stats_fd; /* per-CPU array of u64 counters */
};

/* Finds the maps named procs and stats in obj (what names the runtime in the error: "PHP").
 * 0, or -ENOENT with err set. */
int plugin_maps_find(struct bpf_object *obj, const char *procs, const char *stats,
		     const char *what, struct plugin_maps *out, struct errmsg *err);

/* One process's entry in the procs map. */
struct plugin_entry {
	int pid;
	int published;
};

/* Writes value as e's entry: 0 (also without BPF, e stays unpublished then) or -errno. */
int plugin_publish(const struct plugin_maps *m, struct plugin_entry *e, const void *value);
/* Removes e's entry if it is published. */
void plugin_unpublish(const struct plugin_maps *m, struct plugin_entry *e);

/* The check of an attached process: validate() until it passes, then script() until it
 * names the main script (or max_script_tries ran out). */
struct plugin_check_ops {
	/* 0: the offsets hold; -EAGAIN: nothing to check yet (the interpreter is starting, no
	 * code runs); -EINVAL: a mismatch, which a torn read can cause once; else fatal. */
	int (*validate)(void *proc, struct errmsg *err);
	/* 0 with *out set when the main script is known (valid until the next call). */
	int (*script)(void *proc, const char **out);
	int max_tries;            /* -EINVAL answers before the check fails */
	uint64_t again_ns;        /* wait after -EAGAIN (0: at the next poll) */
	uint64_t invalid_ns;      /* wait after a -EINVAL that is retried */
	uint64_t script_ns;       /* wait between script attempts */
	int max_script_tries;     /* 0: keep trying (an FPM worker's first request comes late) */
};

struct plugin_check_stats {
	uint64_t validations, validation_retries, failures;
};

struct plugin_check {
	uint64_t next_try_ns;
	int verified, tries, script_tries;
	char *script; /* the main script once known (owned) */
};

/* Whether it is time for the instance's next attempt. */
int plugin_check_due(const struct plugin_check *c);
/* One step of the check: 1 to be polled again, 0 done (c->script set if found), < 0 the
 * offsets do not hold (err set; the caller unpublishes and the process is profiled
 * natively). */
int plugin_check_poll(struct plugin_check *c, const struct plugin_check_ops *ops, void *proc,
		      struct plugin_check_stats *st, struct errmsg *err);
/* runtime_ops.label for a checked instance: "script" = its main script, once known. */
int plugin_check_label(const struct plugin_check *c, char *key, size_t keylen, char *value,
		       size_t valuelen);
void plugin_check_release(struct plugin_check *c);

/* JIT code ranges an instance claimed for its walker. */
#define PLUGIN_JIT_MAX 8
struct plugin_jit {
	uint64_t range[PLUGIN_JIT_MAX][2];
	int n;
};

/* Claims [start, end) of pid for the unwinder kind: a range already claimed is left alone; the
 * same start with another end (code memory that grew) replaces its claim. 1 when claimed now,
 * 0 when nothing changed (or no room for another range), < 0 when the registry refused. */
int plugin_jit_claim(struct plugin_jit *j, struct process_registry *reg, int pid, uint64_t start,
		     uint64_t end, int kind);

/* A marker frame (FRAME_SPECIAL) named name: returns 1, the count of frames made. */
int plugin_special(struct runtime_frame *out, const char *name);

#endif
