/* metrics.h: the server's own counters and their Prometheus text exposition (GET /metrics).
 *
 * Every counter is a relaxed atomic, so worker threads update them without locks. Label sets
 * are fixed (route names from the route table, a fixed list of status codes, a fixed list of
 * rejection reasons), so the exposition stays bounded whatever clients send. */
#ifndef SCORCH_METRICS_H
#define SCORCH_METRICS_H

#include "lib/buf.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_ROUTES 24
#define METRICS_NCODES 15
#define METRICS_NBUCKETS 12

enum metrics_reject {
	METRICS_REJECT_BAD_REQUEST = 0, /* 400 */
	METRICS_REJECT_UNAUTHORIZED,    /* 401 */
	METRICS_REJECT_TOO_LARGE,       /* 413 */
	METRICS_REJECT_PARSE,           /* 422 */
	METRICS_REJECT_STORAGE,         /* 500 / 507 */
	METRICS_REJECT_BUSY,            /* 503: memory or queue in use, retry */
	METRICS_NREJECT,
};

struct metrics_route {
	const char *name; /* the path, e.g. "/render"; NULL ends the table */
	atomic_uint_fast64_t requests[METRICS_NCODES];
	atomic_uint_fast64_t duration_buckets[METRICS_NBUCKETS]; /* cumulative at render time */
	atomic_uint_fast64_t duration_count;
	atomic_uint_fast64_t duration_sum_us;
};

struct metrics {
	struct metrics_route routes[METRICS_MAX_ROUTES]; /* the last one is "other" (no route) */
	size_t nroutes;
	atomic_uint_fast64_t ingest_requests;  /* accepted (2xx) */
	atomic_uint_fast64_t ingest_samples;   /* sum of sample values stored */
	atomic_uint_fast64_t ingest_stacks;    /* (stack, value) pairs stored */
	atomic_uint_fast64_t ingest_bytes;     /* request bodies of accepted ingests */
	atomic_uint_fast64_t ingest_rejected[METRICS_NREJECT];
	atomic_uint_fast64_t ingest_rejected_bytes;
	atomic_uint_fast64_t maintenance_runs;
	atomic_uint_fast64_t maintenance_errors;
	int64_t start_time; /* unix seconds */
};

/* Zero m and register the route names (paths, up to METRICS_MAX_ROUTES - 1; more are counted
 * under "other"). The strings must outlive m. */
void metrics_init(struct metrics *m, const char *const *route_names, size_t n);

/* Record one finished request of the route with this path (NULL: no route matched). */
void metrics_observe(struct metrics *m, const char *route, int status, double seconds);

/* Count an ingest outcome: status 2xx adds samples/stacks/bytes; anything else a rejection. */
void metrics_ingest(struct metrics *m, int status, uint64_t samples, uint64_t stacks,
		    uint64_t bytes);

/* Store figures sampled at scrape time (from store_stats()); -1 fields are left out. */
struct metrics_store {
	int64_t disk_bytes, live_bytes, series, stacks, frames, raw_rows, rollup_rows;
	int64_t oldest, newest;
	int ok; /* 0 when store_stats() failed */
};

/* Append the Prometheus text exposition (version 0.0.4). */
int metrics_render(struct metrics *m, const struct metrics_store *st, unsigned inflight,
		   struct buf *out);

#endif
