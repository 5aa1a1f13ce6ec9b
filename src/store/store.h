/* store.h: the profile store interface (the storage layer of `scorch server`).
 *
 * A store keeps profiles as samples (series, time, stack, value):
 *   series = profile type ("cpu", "alloc_space", ...) + a label set (service_name=..., host=...)
 *   stack  = frame names, ROOT FIRST, interned once per store (never repeated per sample)
 *   value  = a non-negative count or quantity in the series' units
 *
 * This header is the generic front: store_open(kind, ...) picks a backend by name and every
 * other call dispatches through its struct store_ops vtable. Backends:
 *   "sqlite"      store_sqlite.c (embedded, default; schema documented in store_sqlite.h and
 *                 docs/storage.md)
 *   "clickhouse"  store_clickhouse.c (scale-out, over ClickHouse's HTTP interface; path is a
 *                 clickhouse:// URL, tables documented in store_clickhouse.h)
 * Selectors are in selector.h, time/duration/size parsing in timerange.h, top table and
 * sandwich helpers computed from a merge result in query.h.
 *
 * Threads: every function may be called from any thread at the same time. Writes and
 * maintenance are serialized inside the backend; queries run concurrently with writes.
 *
 * Errors: int functions return 0 or a negative errno and fill *err (may be NULL):
 *   -EINVAL   bad argument (invalid label name, negative value, from > until, ...)
 *   -E2BIG    input over a documented limit (STORE_MAX_*)
 *   -EIO      storage failure (the message carries SQLite's or ClickHouse's text)
 *   -ENOSPC   the disk is full (a write stored nothing; retry after retention freed space)
 *   -EAGAIN   the backend cannot be reached or is overloaded (ClickHouse down or slow): a
 *             write stored nothing that was acknowledged, a query has no answer; retry later
 *   -EACCES   the backend refused the credentials
 *   -ENOMEM   out of memory
 *
 * Ownership: the store copies everything it is given; results are owned by the caller and freed
 * with the matching *_free / *_release function. */
#ifndef SCORCH_STORE_H
#define SCORCH_STORE_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;
struct selector;
struct strtab;

/* Limits on what a write may carry (larger is -E2BIG, the batch stores nothing). */
#define STORE_MAX_LABELS      64      /* labels per series */
#define STORE_MAX_LABEL_NAME  128     /* bytes */
#define STORE_MAX_LABEL_VALUE 1024    /* bytes */
#define STORE_MAX_TYPE        128     /* bytes of a profile type */
#define STORE_MAX_META        128     /* bytes of units / spy_name / aggregation */
#define STORE_MAX_DEPTH       2048    /* frames per stack */
#define STORE_MAX_FRAME       4096    /* bytes of one frame name */
#define STORE_MAX_SAMPLES     1000000 /* (stack, value) pairs per batch */
#define STORE_MAX_TIME        60000000000LL /* latest batch time, unix seconds (year 3871) */

/* a + b for sample values (>= 0), saturating at INT64_MAX: sums of values never wrap, however
 * many samples are added up. */
static inline int64_t store_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

/* A (stack, value) pair of a batch, as the backends keep them. */
struct store_pair {
	uint64_t stack;
	int64_t value;
};

/* Sort pairs by stack and sum the values of a stack given more than once (store_sat_add());
 * returns how many distinct pairs are left at the front. */
size_t store_pairs_merge(struct store_pair *pairs, size_t n);

/* Query bounds (memory is bounded whatever the data size). */
#define STORE_DEFAULT_MAX_STACKS 65536   /* stacks returned by a merge when max_stacks is 0 */
#define STORE_MAX_MERGE_STACKS   524288  /* distinct stacks one merge accumulates; stacks first
                                          * seen after that are counted in `other` */
#define STORE_MAX_MERGE_FRAMES   (4u << 20) /* frames of all stacks a merge returns (the
                                          * lightest stacks beyond it are counted in
                                          * `other`): bounds the memory of a merge and of
                                          * the call tree built from it */
#define STORE_MAX_POINTS         100000  /* points per time series (step is raised to fit) */
#define STORE_MAX_GROUPS         1000    /* groups of a grouped time series ("" gets the rest) */

/* A label. In a write, names are [A-Za-z_][A-Za-z0-9_.]* and unique; order does not matter
 * (the store sorts). An empty value means "no such label" and is dropped. */
struct store_label {
	const char *name;
	const char *value;
};

/* One (stack, value) pair of a write batch. frames[] are indexes into the batch's
 * frame_names[], root first. Pairs with the same stack are summed; value 0 is dropped. */
struct store_sample {
	const uint32_t *frames;
	uint32_t nframes;
	int64_t value; /* >= 0 */
};

/* One profile for one series over [from, until) (unix seconds). Samples are stored at time
 * `from`; queries select by that time. Profile type: [A-Za-z0-9_:-]+ (no dots, so that
 * "app.type" selectors stay unambiguous). units/spy_name/aggregation/sample_rate are metadata
 * kept per series (the latest write wins) for /render; NULL or 0 keeps the previous value. */
struct store_batch {
	const char *type;
	const struct store_label *labels;
	size_t nlabels;
	int64_t from, until;
	uint32_t sample_rate;    /* Hz, e.g. 100 */
	const char *units;       /* "samples", "bytes", "objects", "nanoseconds", ... */
	const char *spy_name;    /* "scorch", "pyspy", ... */
	const char *aggregation; /* "sum" (default) or "average" */
	const char *const *frame_names;
	size_t nframe_names;
	const struct store_sample *samples;
	size_t nsamples;
};

/* What to read: the series matching sel (NULL = all) with samples at time t, from <= t < until
 * (unix seconds). */
struct store_query {
	const struct selector *sel;
	int64_t from, until;
};

/* Options of store_open (NULL = all defaults). Zero fields take the default. */
struct store_opts {
	int64_t retention_sec;   /* drop samples older than this (0 = keep forever) */
	uint64_t max_disk_bytes; /* drop the oldest samples while the store is larger (0 = no cap) */
	uint64_t cache_bytes;    /* memory for caches of all connections (default 64 MiB) */
	int sync_full;           /* 1: fsync every commit (durable against power loss), 0: WAL
	                          * synchronous=NORMAL: durable against a crash of the process
	                          * (kill -9); a power loss may drop the last commits but never
	                          * corrupts the store */
	int readers;             /* concurrent query connections (default 4) */
};

struct store;

/* Open (creating if needed) a store of the given kind ("sqlite") at path (a directory for
 * sqlite: the database is path/scorch.db). Returns NULL and fills err on failure (errno set).
 * Free with store_close(). */
struct store *store_open(const char *kind, const char *path, const struct store_opts *opts,
			 struct errmsg *err);
void store_close(struct store *s);

/* Write n batches in ONE transaction: returns 0 only after the commit is durable (see
 * store_opts.sync_full); on error nothing of any batch is stored. When the store is over
 * max_disk_bytes after the commit, the oldest data is dropped before returning. */
int store_write(struct store *s, const struct store_batch *batches, size_t n, struct errmsg *err);

/* Periodic work; the server calls it every few seconds (cheap when there is nothing to do):
 * retention by age and size, rollup building for completed hours/days, WAL checkpoints.
 * `now` is unix seconds (tests pass a fixed clock). */
int store_maintain(struct store *s, int64_t now, struct errmsg *err);

/* A number that changes whenever what a query may read changes (every write and maintenance
 * pass): callers that cache query results key them with it. */
uint64_t store_generation(struct store *s);

/* ---- Series and labels ---------------------------------------------------------------- */

/* A series as listed; pointers are valid only during the callback. labels are sorted by name. */
struct store_series_info {
	uint64_t id;
	const char *type;
	const struct store_label *labels;
	size_t nlabels;
	uint32_t sample_rate;
	const char *units, *spy_name, *aggregation;
	int64_t first_time, last_time; /* time of the oldest / newest batch written */
};
/* Return 0 to continue, anything else stops the walk and is returned by store_series(). */
typedef int (*store_series_fn)(const struct store_series_info *info, void *arg);

/* Call fn for every series matching q->sel that has data overlapping [q->from, q->until)
 * (from = until = 0: any time). */
int store_series(struct store *s, const struct store_query *q, store_series_fn fn, void *arg,
		 struct errmsg *err);

/* A sorted list of unique strings owned by the list; free with store_strings_release(). */
struct store_strings {
	char **v;
	size_t n;
};
void store_strings_release(struct store_strings *l);

/* The value a series has for group_by (time series grouping): a label's value ("" without
 * it), the profile type for "__type__", "<service_name>.<type>" for "__name__". Owned by the
 * caller (xfree). */
char *store_series_group(const struct store_series_info *info, const char *group_by);

/* Label names of the series selected by q (q may be NULL = everything), sorted. */
int store_label_names(struct store *s, const struct store_query *q, struct store_strings *out,
		      struct errmsg *err);
/* Values of label `name` over the selected series, sorted. Two pseudo labels:
 *   "__type__"  the profile types;
 *   "__name__"  "<service_name>.<type>" (the legacy application name). */
int store_label_values(struct store *s, const char *name, const struct store_query *q,
		       struct store_strings *out, struct errmsg *err);

/* ---- Merge: total value per distinct stack ---------------------------------------------- */

struct store_stack {
	uint32_t first; /* index of the root frame in store_profile.frames */
	uint32_t depth; /* number of frames */
	int64_t value;
};

/* A merged profile. Frames are ids into names (strtab ids; 0 is ""). stacks[] are sorted by
 * value, largest first. Iterate:
 *   for (i = 0; i < p->nstacks; i++)
 *     for (j = 0; j < p->stacks[i].depth; j++)
 *       strtab_get(p->names, p->frames[p->stacks[i].first + j]);   root first
 * Owned by the caller: store_profile_free(). */
struct store_profile {
	struct strtab *names;
	uint32_t *frames;
	size_t nframes, frames_cap;
	struct store_stack *stacks;
	size_t nstacks, stacks_cap;
	int64_t total;          /* sum of all values, including `other` */
	int64_t other;          /* value of stacks left out by the cap (not in stacks[]) */
	uint64_t other_stacks;  /* distinct stacks left out (a lower bound once a merge passed
	                         * STORE_MAX_MERGE_STACKS) */
	/* Metadata of the selected series (of the one with the newest data when they differ). */
	uint64_t nseries;
	uint32_t sample_rate;
	char type[STORE_MAX_TYPE + 1];
	char units[STORE_MAX_META + 1];
	char spy_name[STORE_MAX_META + 1];
	char aggregation[STORE_MAX_META + 1];
};

struct store_profile *store_profile_new(void);
void store_profile_free(struct store_profile *p);
/* Append a stack (names root first, copied) with its value; no merging of equal stacks. */
void store_profile_add(struct store_profile *p, const char *const *names, size_t depth, int64_t value);
/* Append a stack given as ids of p->names. */
void store_profile_add_ids(struct store_profile *p, const uint32_t *ids, size_t depth, int64_t value);
/* Sort stacks by value (largest first; ties by frames) and keep at most max (0 = all), adding
 * the rest to other / other_stacks. */
void store_profile_truncate(struct store_profile *p, size_t max);

/* Merge the samples of the selected series over [q->from, q->until). max_stacks caps the
 * number of stacks returned (0 = STORE_DEFAULT_MAX_STACKS, at most STORE_MAX_MERGE_STACKS),
 * and so does STORE_MAX_MERGE_FRAMES for their frames together; the smallest go to p->other.
 * Reads pre-aggregated hour/day rollups where they lie fully inside the range and raw rows at
 * the edges, so the result equals the raw sum exactly. Result in *out (free it). */
int store_merge(struct store *s, const struct store_query *q, size_t max_stacks,
		struct store_profile **out, struct errmsg *err);

/* ---- Time series: sum of values per step ------------------------------------------------ */

/* Buckets are aligned to multiples of step in unix time: bucket k covers
 * [start + k*step, start + (k+1)*step), start = from rounded down to a multiple of step;
 * only samples with from <= t < until count. */
struct store_ts_group {
	char *group;     /* value of the group_by label ("" for series without it, or no group_by) */
	int64_t *values; /* npoints values */
	int64_t total;
};
struct store_timeseries {
	int64_t start, step;
	size_t npoints;
	struct store_ts_group *groups; /* sorted by group value */
	size_t ngroups;
};
void store_timeseries_free(struct store_timeseries *ts);

/* Sum of values per step bucket over the selected series, one group per distinct value of
 * label group_by (NULL or "" = one group with everything; the pseudo labels "__type__" and
 * "__name__" group by profile type and by APP.TYPE). step <= 0 picks a step giving
 * about 1000 points (at least 10 s); step is raised to keep npoints <= STORE_MAX_POINTS. */
int store_timeseries(struct store *s, const struct store_query *q, int64_t step,
		     const char *group_by, struct store_timeseries **out, struct errmsg *err);

/* ---- Introspection ---------------------------------------------------------------------- */

struct store_stats {
	uint64_t disk_bytes;  /* database + WAL files */
	uint64_t live_bytes;  /* pages in use */
	uint64_t series, stacks, frames;
	uint64_t raw_rows, rollup_rows;
	int64_t oldest, newest; /* sample times, 0 when empty */
	uint64_t cache_bytes; /* memory held by the store's own caches */
};
int store_stats(struct store *s, struct store_stats *out, struct errmsg *err);

/* ---- Backends ----------------------------------------------------------------------------- */

/* A backend: every function gets the state its open() returned. The front validates arguments
 * (labels, types, limits, from <= until, selectors parsed) before calling write/queries, and
 * implements store_label_names/values on top of series(). */
struct store_ops {
	const char *kind;
	int (*open)(const char *path, const struct store_opts *opts, void **state, struct errmsg *err);
	void (*close)(void *state);
	int (*write)(void *state, const struct store_batch *batches, size_t n, struct errmsg *err);
	int (*maintain)(void *state, int64_t now, struct errmsg *err); /* 1: it dropped data */
	int (*series)(void *state, const struct store_query *q, store_series_fn fn, void *arg,
		      struct errmsg *err);
	int (*merge)(void *state, const struct store_query *q, size_t max_stacks,
		     struct store_profile **out, struct errmsg *err);
	int (*timeseries)(void *state, const struct store_query *q, int64_t step, const char *group_by,
			  struct store_timeseries **out, struct errmsg *err);
	int (*stats)(void *state, struct store_stats *out, struct errmsg *err);
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_clickhouse_ops;

/* ---- Helper for writers: build a batch from stacks given as strings -------------------------- */

/* Owns copies of frame names and stacks; store_batchbuf_fill() points a store_batch at them
 * (valid until the next add/reset/free). Counts of equal stacks are summed. */
struct store_batchbuf;
struct store_batchbuf *store_batchbuf_new(void);
void store_batchbuf_free(struct store_batchbuf *bb);
void store_batchbuf_reset(struct store_batchbuf *bb);
/* Add a stack given root first as n strings. Returns 0, -EINVAL (negative value), -E2BIG. */
int store_batchbuf_add(struct store_batchbuf *bb, const char *const *frames, size_t n, int64_t value);
/* Add a stack given as one string of frames separated by sep (e.g. "a;b;c", ';'), root first. */
int store_batchbuf_add_split(struct store_batchbuf *bb, const char *stack, size_t len, char sep,
			     int64_t value);
/* Set b->frame_names, nframe_names, samples, nsamples (other fields untouched). */
void store_batchbuf_fill(struct store_batchbuf *bb, struct store_batch *b);
/* Distinct stacks so far, and their frames together. */
size_t store_batchbuf_nsamples(const struct store_batchbuf *bb);
size_t store_batchbuf_nframes(const struct store_batchbuf *bb);

/* Several value columns per stack (a profile with several sample types: its stacks and frame
 * names are kept once). set_columns(n) before the first add; then add_values() with n values
 * (>= 0) per stack, and fill_column(col) for the batch of each column (the batches of all
 * columns stay valid together; a column's batch leaves out stacks whose value in it is 0). */
void store_batchbuf_set_columns(struct store_batchbuf *bb, size_t n);
int store_batchbuf_add_values(struct store_batchbuf *bb, const char *const *frames, size_t n,
			      const int64_t *values);
void store_batchbuf_fill_column(struct store_batchbuf *bb, size_t col, struct store_batch *b);

#endif
