/* unwinder.h: user space of the table-driven native unwinder. It keeps, for every process the
 * sampler profiles, the list of its executable mappings, builds one unwind table per file
 * (unwind_table.h; keyed by GNU build id, else a content hash; shared by every process mapping
 * the file; reference counted; evicted least recently used when the table space is full) and
 * publishes both in the BPF maps the in-kernel unwinder reads (bpf/unwind.h). Every table built
 * goes to a table cache (table_cache.h; memory, and disk with opts.cache_dir): a file is built
 * once, and an evicted table comes back from the cache, not from its ELF file.
 *
 * Samples of a process whose tables are not published yet (or whose pc falls in a mapping not
 * yet known, e.g. right after dlopen) arrive as stack snapshots (bpf/unwind.h); the unwinder
 * unwinds them here with the same step the BPF program runs (bpf/unwind_step.h).
 *
 * Use from the sampler's event loop (the session feeds it from the process registry,
 * agent/process.h, which is the one reader of /proc/PID/maps):
 *   u = unwinder_new(bpf_object of the sampler, &opts, &err)   after the object is loaded
 *   unwinder_set_maps(u, pid, maps, claims, n)   a process's executable mappings (new or
 *                                       changed), with the address ranges runtimes claimed
 *   unwinder_forget_pid(u, pid)         the process exited or its image is stale
 *   unwinder_exec(u, hdr, size)         an EVENT_EXEC record with -a: 1 when the new image
 *                                       should be read at once (see below)
 *   unwinder_note_chunk(u, hdr, size)   every EVENT_STACK_CHUNK record
 *   unwinder_fix_sample(u, hdr, size, &hdr2, &size2)
 *                                       for every EVENT_SAMPLE, before using its frames: when
 *                                       the record carries a snapshot, returns 1 and a rewritten
 *                                       record (owned by u, valid until the next call); a pc in
 *                                       a mapping it does not know makes it ask opts.refresh
 *   unwinder_free(u)
 * unwinder_track_pid(u, pid) reads the maps itself (tools and tests without a registry).
 *
 * Runtimes: a file whose table has interpreter ranges (opts.interp) gets their unwinder kind on
 * its mappings; address ranges claimed by a runtime (JIT code) are published with its kind and
 * UNW_MAP_RUNTIME. When a snapshot carries deferred runtime frames (bpf/unwind.h), the
 * user-space unwind puts segment i in place of (or, with FW_SEGMENT_KEEP_NATIVE, after) the
 * i-th native frame in an UNW_F_INTERP range, exactly as the BPF walker would have; a pc in a
 * claimed range goes to the runtime's user-space step (opts.jit), as it goes to the walker in
 * BPF.
 * With obj NULL the unwinder works in user space alone (tests): tables live in heap arrays of
 * the same layout and only unwinder_fix_sample() / unwinder_unwind() use them.
 *
 * Not thread-safe. */
#ifndef SCORCH_AGENT_UNWINDER_H
#define SCORCH_AGENT_UNWINDER_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/sampler.h"
#include "bpf/unwind.h"
#include "agent/table_cache.h"
#include "agent/unwind_table.h"

struct bpf_object;
struct elf_file;
struct errmsg;
struct unwinder;

/* Interpreter ranges of a file (e.g. CPython's eval loop): fill up to max ranges (link-time
 * addresses), set *kind to the file's unwinder kind (enum unwinder_kind; native when it has no
 * runtime) and return how many. path is the file's path as mapped (may be a /proc path). */
typedef int (*unwinder_interp_fn)(void *ctx, struct elf_file *e, const char *path,
				  struct unwind_range *out, int max, uint8_t *kind);
/* Re-read pid's maps now (through whoever owns them) and call unwinder_set_maps() when they
 * changed. sample_ns: when the pc that missed ran (CLOCK_MONOTONIC); maps read before it are
 * read again however recently. Returns 1 when they were read, 0 when not (too soon, process
 * gone). */
typedef int (*unwinder_refresh_fn)(void *ctx, int pid, uint64_t sample_ns);

/* What a runtime's JIT step sees of the process while a stack snapshot is unwound in user
 * space: read() takes stack addresses from the snapshot (the stack as it was at the sample)
 * and everything else from the live process; emit() appends a frame word (non-zero when the
 * output is full). */
struct unwinder_io {
	int (*read)(void *io, uint64_t addr, void *buf, size_t len);
	int (*emit)(void *io, uint64_t word);
	void *io;
};
/* The frame step of the runtime of kind (enum unwinder_kind) for st->pc in a range it claimed
 * (JIT code), on a snapshot: what its BPF walker does for RT_OP_FRAME. The native word of
 * st->pc is the last one emitted (st->n - 1). Returns UNW_HOOK_NATIVE (not handled: the
 * mapping's native rule applies), UNW_HOOK_MOVED (st->pc/sp/bp are the caller's) or
 * UNW_HOOK_STOP (st->result set). */
typedef int (*unwinder_jit_fn)(void *ctx, int pid, uint8_t kind, struct unw_state *st,
			       const struct unwinder_io *io);

/* An address range of a process a runtime owns (JIT code). */
struct unwinder_claim {
	uint64_t start, end;
	uint8_t kind; /* enum unwinder_kind */
};

/* A stack snapshot the user-space unwind did not finish (unwinder_opts.capture): what a replay
 * case is made of (src/replay/). Valid during the call. */
struct unwinder_snapshot {
	int pid, tid;
	uint64_t time_ns;
	const char *comm;
	uint64_t pc, sp, bp;
	uint32_t flags;            /* UNW_S_OFF_STACK */
	const void *stack;         /* len bytes from sp */
	size_t len;
	const uint64_t *deferred;  /* the snapshot's deferred runtime words */
	size_t ndeferred;
	uint32_t result;           /* how the unwind ended (enum unwind_stat) */
};
struct unwinder;
typedef void (*unwinder_capture_fn)(void *ctx, struct unwinder *u,
				    const struct unwinder_snapshot *snap);

struct unwinder_opts {
	/* user-space only mode: sizes of the heap tables (the BPF maps' sizes are set in the
	 * BPF object) */
	uint32_t max_entries;    /* default UNWINDER_DEFAULT_ENTRIES */
	uint32_t max_mappings;   /* default UNWINDER_DEFAULT_MAPPINGS */
	unwinder_interp_fn interp;
	void *interp_ctx;
	unwinder_refresh_fn refresh; /* NULL: the unwinder reads /proc/PID/maps itself */
	void *refresh_ctx;
	unwinder_jit_fn jit;     /* NULL: snapshots unwind JIT ranges by their native rule */
	void *jit_ctx;
	unwinder_capture_fn capture; /* called for each snapshot whose unwind ended in an error
				      * marker (not [truncated], not [exited]) */
	void *capture_ctx;
	const char *debug_dir;   /* overrides /usr/lib/debug (tests); NULL: default */
	/* The table cache (table_cache.h): tables per file identity, so that a file is built
	 * once, and a table evicted from the table space comes back without a rebuild. */
	size_t cache_bytes;       /* memory for cached tables; 0: TABLE_CACHE_DEFAULT_BYTES */
	const char *cache_dir;    /* also keep them on disk there; NULL: memory only */
	uint64_t cache_disk_bytes; /* 0: TABLE_CACHE_DEFAULT_DISK_BYTES */
};

#define UNWINDER_DEFAULT_ENTRIES  (4u << 20)  /* 32 MiB of unwind entries */
#define UNWINDER_DEFAULT_MAPPINGS (64u << 10) /* 2.5 MiB of process mappings */
#define UNWINDER_DEFAULT_PIDS     16384u
/* A runtime's process is eager (bpf/unwind.h: UNW_PID_EAGER) this long from its first
 * publication: the samples that run its runtime's code wake the reader at once, so that the
 * runtime names their frames before a short-lived process exits or frees its code. Then it is
 * read at the sampler's pace, with its names mostly cached. */
#define UNWINDER_EAGER_NS         (2000ULL * 1000000ULL)
#define UNWINDER_MAX_FILES        8192u /* files known but neither mapped nor loaded */

/* Create the unwinder. obj: the loaded sampler BPF object (its maps unw_entries, unw_maps,
 * unw_pids, unw_stats), or NULL for user space only. opts may be NULL. Returns NULL with a
 * message in err on failure (e.g. the maps are missing or cannot be mapped). */
struct unwinder *unwinder_new(struct bpf_object *obj, const struct unwinder_opts *opts,
			      struct errmsg *err);
/* Something the user should know about the table cache (the directory cannot be used, writes
 * failed), once; else NULL. The string is owned by u. A cache directory that cannot be used is
 * not a failure of unwinder_new(): tables are kept in memory only. */
const char *unwinder_cache_note(struct unwinder *u);
void unwinder_free(struct unwinder *u); /* NULL ok */

/* The executable mappings of pid (procmaps.h entries, sorted by start: non-executable ones are
 * skipped) and the ranges runtimes claimed in it (sorted by start, may be NULL): build or
 * reuse the table of every file, publish. Cheap when nothing changed. 0 or negative errno. */
struct procmaps;
int unwinder_set_maps(struct unwinder *u, int pid, const struct procmaps *maps,
		      const struct unwinder_claim *claims, size_t nclaims);
/* Read /proc/PID/maps and unwinder_set_maps() them. 0, -ESRCH when the process is gone. */
int unwinder_track_pid(struct unwinder *u, int pid);
/* Drop a process: its mappings are unpublished and its files' references released. */
void unwinder_forget_pid(struct unwinder *u, int pid);
/* An EVENT_EXEC record when every process of the machine is profiled (-a). The unwinder keeps,
 * per executable (named by the record's device and inode), how many of its recent processes
 * were started and how many were sampled. Returns 1 when the executable's processes are mostly
 * sampled (a quarter or more) and its table is at hand: the caller should read the new image
 * now, so that its first samples unwind in BPF. Such executables are marked in the BPF map
 * unw_exec_hot, so that their exec wakes user space; any other exec costs a hash lookup. */
int unwinder_exec(struct unwinder *u, const struct event_hdr *hdr, size_t size);
/* An EVENT_STACK_CHUNK record: kept for the stack snapshot that follows it (bpf/unwind.h). */
void unwinder_note_chunk(struct unwinder *u, const struct event_hdr *hdr, size_t size);
/* The published mapping of pid holding addr (a copy), for tests and tools: 0 or -ENOENT. */
int unwinder_lookup_mapping(struct unwinder *u, int pid, uint64_t addr,
			    struct unwind_mapping *out);

/* For an EVENT_SAMPLE record: if its user words are a stack snapshot, unwind it and return 1
 * with *out and *out_size a rewritten record (frame words in place of the snapshot; memory owned by
 * u, valid until the next call). Returns 0 when the record needs nothing, negative errno when
 * the record is malformed. */
int unwinder_fix_sample(struct unwinder *u, const struct event_hdr *hdr, size_t size,
			const struct event_hdr **out, size_t *out_size);

/* Unwind registers + a copy of stack memory (stack holds len bytes from address sp) of pid in
 * user space. Writes frame words (sampler.h), leaf first, ending with a marker word when the
 * unwind did not complete. Returns the number of words (<= max) and, in *result (may be NULL),
 * the enum unwind_stat saying how it ended. */
size_t unwinder_unwind(struct unwinder *u, int pid, uint64_t pc, uint64_t sp, uint64_t bp,
		       const void *stack, size_t len, uint64_t *words, size_t max, uint32_t *result);
/* The same with the deferred runtime words of a snapshot (ndeferred words, segments ended by
 * FW_MARKER_SEGMENT_END; see bpf/unwind.h) interleaved at the frames in UNW_F_INTERP ranges. */
size_t unwinder_unwind_deferred(struct unwinder *u, int pid, uint64_t pc, uint64_t sp,
				uint64_t bp, const void *stack, size_t len,
				const uint64_t *deferred, size_t ndeferred, uint64_t *words,
				size_t max, uint32_t *result);

/* REPLAY (src/replay/). The same user-space unwind with its memory, mappings and table
 * entries from another source: a recorded case (the process, its files and u's tables are not
 * needed; u only gives the step its options). map_first and map_count start the state; step,
 * when set, is called before each step (a trace). */
struct unwind_source {
	void *ctx;
	int (*read)(void *ctx, uint64_t addr, uint64_t *out); /* 8 bytes: 0 or -1 */
	const struct unwind_mapping *(*mapping)(void *ctx, uint32_t idx);
	const struct unwind_entry *(*entry)(void *ctx, uint32_t idx);
	void (*step)(void *ctx, const struct unw_state *st);
	/* the process's PCRE2 JIT links (bpf/unwind.h), or NULL; may be NULL */
	const struct unwind_jit_links *(*jit_links)(void *ctx);
	uint32_t map_first, map_count;
};
/* What an unwind from the live process and u's tables read (a capture records it): every
 * 8 bytes of memory, mapping and table entry, as the step gets them. With a tap, the unwind
 * reads any address from the process (a stopped thread: as BPF does), not only the stack
 * copy. */
struct unwind_tap {
	void *ctx;
	void (*read)(void *ctx, uint64_t addr, const void *data, size_t len);
	void (*mapping)(void *ctx, uint32_t idx, const struct unwind_mapping *m);
	void (*entry)(void *ctx, uint32_t idx, const struct unwind_entry *e);
	void (*jit_links)(void *ctx, const struct unwind_jit_links *jl); /* may be NULL */
};
/* The registers an unwind starts from: fs base and rbx 0 when unknown (a snapshot). */
struct unwind_regs {
	uint64_t pc, sp, bp, fsbase, bx, di;
};
/* unwinder_unwind_deferred() from src (NULL: the live process, watched by tap when set), with
 * the thread's registers and the unwind's first flags (UNW_S_OFF_STACK). */
size_t unwinder_unwind_from(struct unwinder *u, int pid, const struct unwind_source *src,
			    const struct unwind_tap *tap, const struct unwind_regs *r,
			    const void *stack, size_t len, const uint64_t *deferred,
			    size_t ndeferred, uint32_t flags, uint64_t *words, size_t max,
			    uint32_t *result);
/* Where pid's published mappings are (indices of the mapping space): 0 or -ENOENT. */
int unwinder_pid_mappings(struct unwinder *u, int pid, uint32_t *first, uint32_t *count);

struct unwinder_stats {
	uint64_t pids;             /* processes published */
	uint64_t files;            /* files known (their table built or cached) */
	uint64_t files_loaded;     /* ... of which loaded in the table space */
	uint64_t entries_used;     /* entries of the table space in use */
	uint64_t entries_cap;
	uint64_t mappings_used, mappings_cap;
	uint64_t table_builds;     /* tables built from ELF files */
	uint64_t table_rebuilds;   /* ... of files built before (the caches lost them) */
	uint64_t table_build_ns;   /* CPU time spent building (and caching) them */
	uint64_t tables_from_cache; /* tables loaded into the table space from the table cache */
	uint64_t exec_publishes;   /* execs read at once (-a), see unwinder_exec() */
	uint64_t exec_hot;         /* executables marked so */
	uint64_t table_errors;     /* files without a usable table */
	uint64_t evictions;        /* files evicted (LRU) to make room */
	uint64_t cap_hits;         /* a table or process did not fit even after eviction */
	uint64_t map_reads;        /* /proc/PID/maps reads */
	uint64_t snapshots;        /* snapshots unwound in user space */
	uint64_t snapshots_complete;
	uint64_t snapshots_chained; /* ... deeper than a record: joined with their stack chunks */
	uint64_t deferred_segments; /* runtime segments put into unwound snapshots */
	uint64_t snapshots_bad_pc; /* ... that ended at a pc no user code can have
				    * (USTAT_ERR_BAD_PC) */
	uint64_t snapshots_stack_switch; /* ... that ended in [stack switch] */
	uint64_t snapshots_exited; /* ... of processes gone before their maps were read: one
				    * [exited] word */
	uint64_t switches;         /* stack switches followed in snapshots */
	uint64_t kernel_bytes;     /* memory of the BPF maps for tables (bytes) */
	uint64_t entry_reads;      /* entries read from the entry map (snapshots; cache misses) */
	uint64_t files_by_path;    /* mappings of a known file found by stat, without an open */
	uint64_t files_by_inode;   /* ... by device and inode, found so within the last second */
	struct table_cache_stats cache;
	uint64_t bpf[USTAT__COUNT]; /* unw_stats summed over CPUs (0 without BPF) */
};
void unwinder_stats(struct unwinder *u, struct unwinder_stats *out);

#endif
