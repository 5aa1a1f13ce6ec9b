/* mapevents.h: the executable mappings of new processes as the kernel makes them.
 *
 * A process of a few milliseconds (sh -c, git, a compiler's helper) is often gone before user
 * space reads /proc/PID/maps for its first samples, which then cannot be unwound or named.
 * The kernel tells every mapping as it is made to a perf event that asks for it: one dummy
 * software event per CPU (PERF_COUNT_SW_DUMMY, every process of the machine, nothing sampled)
 * with attr.mmap2, comm (comm_exec) and task set sends PERF_RECORD_MMAP2 for every executable
 * mapping, PERF_RECORD_COMM with PERF_RECORD_MISC_COMM_EXEC at each exec, PERF_RECORD_FORK and
 * PERF_RECORD_EXIT. This module reads those records and keeps, per process born while it
 * watches, the executable mappings of its current image and of the one before (a sample taken
 * just before an exec is unwound after it). The process registry (process.h) asks it when
 * /proc/PID/maps can no longer be read.
 *
 * RECORDS. The events are opened with sample_id_all and sample_type = TID | TIME, and
 * use_clockid with CLOCK_MONOTONIC (the sampler's clock), so every record ends with
 *   u32 pid, u32 tid, u64 time
 * Layouts read here (after struct perf_event_header {u32 type; u16 misc; u16 size}):
 *   MMAP2 (10)  u32 pid, tid; u64 addr, len, pgoff;
 *               u32 maj, min; u64 ino, ino_generation    (or, with
 *               PERF_RECORD_MISC_MMAP_BUILD_ID in misc: u8 build_id_size, 3 reserved bytes,
 *               u8 build_id[20]);
 *               u32 prot, flags; char filename[] (NUL-terminated, padded to 8 bytes)
 *   COMM (3)    u32 pid, tid; char comm[]  (misc PERF_RECORD_MISC_COMM_EXEC: an exec)
 *   EXIT (4), FORK (7)  u32 pid, ppid, tid, ptid; u64 time
 *   LOST (2)    u64 id, lost
 * Others are skipped. The records are outside input to this parser (tests/fuzz/fuzz_mapevents.c):
 * any size, any field may be wrong.
 *
 * ORDER. Each CPU's buffer is in time order, the CPUs are not: a drain merges them by time.
 * The mappings a sample needs were made before the sample was written, so reading the buffers
 * when a sample is unwound (mapevents_maps() drains first) sees them.
 *
 * TRUST. A mapping names a file by path, read again later: mapevents_maps() keeps the path
 * only when the file there now is the mapped one (same device and inode; same build id when
 * the record carries one instead), else the mapping is anonymous (an address, never a wrong
 * name). A record lost (ring buffer full) may have been a mapping: images current then are not
 * served any more, nor those current when a drain finds a buffer nearly full (the kernel tells
 * of a loss only when it writes its next record).
 *
 * MEMORY. Only processes whose exec or fork was seen are kept, at most max_procs (the oldest
 * image goes first), each with at most MAPEVENTS_MAX_MAPPINGS mappings per image; a process
 * that exited is dropped at the second mapevents_collect() after its exit (its samples have
 * been read by then), a live one when its image is older than max_age_ns (it has been read from
 * /proc since, if it was ever sampled).
 *
 * Ownership: struct mapevents owns everything; mapevents_maps() fills a struct procmaps the
 * caller releases. Not thread-safe. */
#ifndef SCORCH_AGENT_MAPEVENTS_H
#define SCORCH_AGENT_MAPEVENTS_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;
struct procmaps;

#define MAPEVENTS_MAX_MAPPINGS 1024        /* per image; past it the image is not served */
#define MAPEVENTS_DEFAULT_PROCS 4096
#define MAPEVENTS_DEFAULT_AGE_NS (30ULL * 1000000000ULL)
#define MAPEVENTS_DEFAULT_PAGES 32         /* data pages per CPU (128 KiB with 4 KiB pages) */

/* perf record types and misc bits read here (linux/perf_event.h) */
#define MAPEVENTS_REC_MMAP2 10
#define MAPEVENTS_REC_COMM 3
#define MAPEVENTS_REC_EXIT 4
#define MAPEVENTS_REC_FORK 7
#define MAPEVENTS_REC_LOST 2
#define MAPEVENTS_MISC_COMM_EXEC (1u << 13)
#define MAPEVENTS_MISC_BUILD_ID (1u << 14)

/* One record, decoded (mapevents_parse()). */
struct mapevent {
	uint32_t type;
	uint16_t misc;
	uint32_t pid, tid;    /* the trailer's (sample_id) */
	uint64_t time_ns;     /* the trailer's: CLOCK_MONOTONIC */
	/* MMAP2 */
	uint64_t addr, len, pgoff, ino;
	uint32_t maj, min, prot, flags;
	uint8_t build_id_size;   /* with MAPEVENTS_MISC_BUILD_ID; else 0 */
	uint8_t build_id[20];
	const char *filename;    /* in the record, NUL-terminated; "" when none */
	/* FORK, EXIT */
	uint32_t ppid, ptid;
	/* COMM */
	int comm_exec;
	/* LOST */
	uint64_t lost;
};

/* Decode one record of len bytes (header included). 0, -EINVAL (malformed: size, missing NUL,
 * trailer), -ENOENT (a type not read here). */
int mapevents_parse(const void *rec, size_t len, struct mapevent *out);

struct mapevents_opts {
	size_t max_procs;     /* 0: MAPEVENTS_DEFAULT_PROCS */
	uint64_t max_age_ns;  /* 0: MAPEVENTS_DEFAULT_AGE_NS */
	unsigned pages;       /* data pages per CPU, a power of two, at least 2; 0:
			       * MAPEVENTS_DEFAULT_PAGES */
	int previous_images;  /* mapevents_maps() answers with the image before the last exec
			       * for a sample taken before it; else -ESTALE (a session: its
			       * symbolizer keeps one set of mappings per pid, the latest, so the
			       * addresses of an earlier image would be named from the files of a
			       * later one, at the same addresses when both are not PIE) */
};

struct mapevents;

struct mapevents *mapevents_new(const struct mapevents_opts *opts);
void mapevents_free(struct mapevents *m); /* NULL ok */
/* Open the per-CPU events and map their buffers. 0, or a negative errno with err filled (no
 * permission, an old kernel): the caller goes on without. */
int mapevents_open(struct mapevents *m, struct errmsg *err);
/* Keep only pid, and with children the processes it starts from now on (their forks), as
 * `record -p` (its processes only) and `record -- COMMAND` (its tree) profile; without a call
 * every new process of the machine is kept. */
void mapevents_follow(struct mapevents *m, int pid, int children);
/* Read what the buffers hold and apply it, merged by time. Returns the records applied. */
int mapevents_drain(struct mapevents *m);
/* Tests and fuzzing: read one ring as a drain reads a CPU's buffer (data_bytes, a power of two;
 * the records from tail to head, wrapping), then apply them merged by time. Returns the records
 * applied, or -EINVAL for a bad data_bytes. */
int mapevents_feed_ring(struct mapevents *m, const uint8_t *data, size_t data_bytes,
			uint64_t head, uint64_t tail);
/* Apply one record (what the drain does for each; tests and fuzzing feed records here).
 * 0, or the error of mapevents_parse(). */
int mapevents_apply(struct mapevents *m, const void *rec, size_t len);

/* The executable mappings of pid for a sample taken at when_ns (0: now), after a drain: those
 * of the image that ran then, files checked (see TRUST). exe gets the image's executable
 * ("" unknown). *as_of_ns: the time up to which the list is known to hold (now for the
 * current image, the next exec for the one before). 0, or -ENOENT (not known, not complete:
 * a lost record, an image inherited from a process not watched). out is initialized by the
 * call; release it in every case. -ESTALE: the sample ran in the image before the last exec
 * and opts.previous_images is not set. */
int mapevents_maps(struct mapevents *m, int pid, uint64_t when_ns, struct procmaps *out,
		   char *exe, size_t exelen, uint64_t *as_of_ns);

/* After an interval's samples are handled: drop what is no longer needed (MEMORY). */
void mapevents_collect(struct mapevents *m);

struct mapevents_stats {
	int cpus;               /* buffers open */
	uint64_t records;       /* records applied */
	uint64_t mmaps;         /* MMAP2 records of kept processes */
	uint64_t lost;          /* records the kernel lost (PERF_RECORD_LOST) */
	uint64_t full;          /* drains that found a buffer (nearly) full: records may be lost */
	uint64_t bad;           /* malformed records, and buffers found corrupt */
	uint64_t served;        /* mapevents_maps() answers */
	uint64_t stale;         /* asked for an image before the last exec (previous_images off) */
	uint64_t refused;       /* files whose path no longer leads to the mapped file */
	size_t procs;           /* processes kept */
	size_t evicted;         /* dropped for max_procs */
	size_t bytes;           /* memory held for the mappings */
};
void mapevents_stats(const struct mapevents *m, struct mapevents_stats *out);

#endif
