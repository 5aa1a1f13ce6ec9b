/* metrics.c: counters and the Prometheus text format (see metrics.h). The HTTP route that
 * serves it is in server.c. */
#include "server/metrics.h"
#include "lib/alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const int codes[METRICS_NCODES] = { 200, 204, 400, 401, 404, 405, 408, 413, 422, 429,
					   499, 500, 503, 507, 0 /* any other */ };
/* Upper bounds in seconds of the latency histogram buckets (+Inf is the count). */
static const double buckets[METRICS_NBUCKETS] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
						  0.1, 0.25, 0.5, 1, 2.5, 10 };
static const char *const reject_names[METRICS_NREJECT] = { "bad_request", "unauthorized",
							   "too_large", "parse_error",
							   "storage_error", "busy" };

void metrics_init(struct metrics *m, const char *const *route_names, size_t n)
{
	size_t i;

	memset(m, 0, sizeof(*m));
	if (n > METRICS_MAX_ROUTES - 1)
		n = METRICS_MAX_ROUTES - 1;
	for (i = 0; i < n; i++)
		m->routes[i].name = route_names[i];
	m->routes[n].name = "other";
	m->nroutes = n + 1;
	m->start_time = (int64_t)time(NULL);
}

static struct metrics_route *route_of(struct metrics *m, const char *route)
{
	size_t i;

	if (route)
		for (i = 0; i + 1 < m->nroutes; i++)
			if (!strcmp(m->routes[i].name, route))
				return &m->routes[i];
	return &m->routes[m->nroutes - 1];
}

void metrics_observe(struct metrics *m, const char *route, int status, double seconds)
{
	struct metrics_route *r = route_of(m, route);
	size_t i;

	for (i = 0; i < METRICS_NCODES - 1; i++)
		if (codes[i] == status)
			break;
	atomic_fetch_add_explicit(&r->requests[i], 1, memory_order_relaxed);
	for (i = 0; i < METRICS_NBUCKETS; i++)
		if (seconds <= buckets[i]) {
			atomic_fetch_add_explicit(&r->duration_buckets[i], 1, memory_order_relaxed);
			break;
		}
	atomic_fetch_add_explicit(&r->duration_count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&r->duration_sum_us, (uint64_t)(seconds * 1e6),
				  memory_order_relaxed);
}

void metrics_ingest(struct metrics *m, int status, uint64_t samples, uint64_t stacks,
		    uint64_t bytes)
{
	enum metrics_reject why;

	if (status >= 200 && status < 300) {
		atomic_fetch_add_explicit(&m->ingest_requests, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->ingest_samples, samples, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->ingest_stacks, stacks, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->ingest_bytes, bytes, memory_order_relaxed);
		return;
	}
	switch (status) {
	case 401: why = METRICS_REJECT_UNAUTHORIZED; break;
	case 413: why = METRICS_REJECT_TOO_LARGE; break;
	case 422: why = METRICS_REJECT_PARSE; break;
	case 503: why = METRICS_REJECT_BUSY; break;
	default: why = status >= 500 ? METRICS_REJECT_STORAGE : METRICS_REJECT_BAD_REQUEST; break;
	}
	atomic_fetch_add_explicit(&m->ingest_rejected[why], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->ingest_rejected_bytes, bytes, memory_order_relaxed);
}

#define LOAD(x) ((uint64_t)atomic_load_explicit(&(x), memory_order_relaxed))

static int counter(struct buf *out, const char *name, const char *help, uint64_t v)
{
	return buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", name, help, name,
			  name, v);
}

static int gauge(struct buf *out, const char *name, const char *help, int64_t v)
{
	return buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %" PRId64 "\n", name, help, name,
			  name, v);
}

int metrics_render(struct metrics *m, const struct metrics_store *st, unsigned inflight,
		   struct buf *out)
{
	size_t r, i;
	int err = 0;

	err |= counter(out, "scorch_ingest_requests_total", "Ingest requests accepted (2xx).",
		       LOAD(m->ingest_requests));
	err |= counter(out, "scorch_ingest_samples_total",
		       "Sum of sample values accepted by ingest.", LOAD(m->ingest_samples));
	err |= counter(out, "scorch_ingest_stacks_total",
		       "Stacks (stack, value pairs) accepted by ingest.", LOAD(m->ingest_stacks));
	err |= counter(out, "scorch_ingest_bytes_total", "Request body bytes of accepted ingests.",
		       LOAD(m->ingest_bytes));
	err |= buf_printf(out, "# HELP scorch_ingest_rejected_total Ingest requests rejected, by "
			       "reason; nothing of them was stored.\n"
			       "# TYPE scorch_ingest_rejected_total counter\n");
	for (i = 0; i < METRICS_NREJECT; i++)
		err |= buf_printf(out, "scorch_ingest_rejected_total{reason=\"%s\"} %" PRIu64 "\n",
				  reject_names[i], LOAD(m->ingest_rejected[i]));
	err |= counter(out, "scorch_ingest_rejected_bytes_total",
		       "Request body bytes of rejected ingests (dropped).",
		       LOAD(m->ingest_rejected_bytes));

	err |= buf_printf(out, "# HELP scorch_http_requests_total HTTP requests by route and "
			       "status code.\n# TYPE scorch_http_requests_total counter\n");
	for (r = 0; r < m->nroutes; r++)
		for (i = 0; i < METRICS_NCODES; i++) {
			uint64_t v = LOAD(m->routes[r].requests[i]);
			char code[16];

			if (!v)
				continue;
			if (codes[i])
				snprintf(code, sizeof(code), "%d", codes[i]);
			else
				snprintf(code, sizeof(code), "other");
			err |= buf_printf(out,
					  "scorch_http_requests_total{route=\"%s\",code=\"%s\"} %" PRIu64
					  "\n", m->routes[r].name, code, v);
		}
	err |= buf_printf(out, "# HELP scorch_http_request_duration_seconds Time to handle a "
			       "request, by route.\n"
			       "# TYPE scorch_http_request_duration_seconds histogram\n");
	for (r = 0; r < m->nroutes; r++) {
		struct metrics_route *rt = &m->routes[r];
		uint64_t cum = 0, count = LOAD(rt->duration_count);

		if (!count)
			continue;
		for (i = 0; i < METRICS_NBUCKETS; i++) {
			cum += LOAD(rt->duration_buckets[i]);
			err |= buf_printf(out,
					  "scorch_http_request_duration_seconds_bucket{route=\"%s\","
					  "le=\"%g\"} %" PRIu64 "\n", rt->name, buckets[i], cum);
		}
		err |= buf_printf(out,
				  "scorch_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} "
				  "%" PRIu64 "\n"
				  "scorch_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
				  "scorch_http_request_duration_seconds_count{route=\"%s\"} %" PRIu64 "\n",
				  rt->name, count, rt->name, (double)LOAD(rt->duration_sum_us) / 1e6,
				  rt->name, count);
	}
	err |= gauge(out, "scorch_http_inflight_requests", "Requests being received or handled.",
		     inflight);
	err |= counter(out, "scorch_store_maintenance_runs_total",
		       "Store maintenance passes (retention, rollups, checkpoints).",
		       LOAD(m->maintenance_runs));
	err |= counter(out, "scorch_store_maintenance_errors_total",
		       "Store maintenance passes that failed.", LOAD(m->maintenance_errors));
	err |= gauge(out, "scorch_store_up", "1 when the store answered its statistics.", st->ok);
	if (st->ok) {
		err |= gauge(out, "scorch_store_disk_bytes", "Store files on disk (database + WAL).",
			     st->disk_bytes);
		err |= gauge(out, "scorch_store_live_bytes", "Store pages in use.", st->live_bytes);
		err |= gauge(out, "scorch_store_series", "Series in the store.", st->series);
		err |= gauge(out, "scorch_store_stacks", "Distinct stacks in the store.", st->stacks);
		err |= gauge(out, "scorch_store_frames", "Distinct frame names in the store.",
			     st->frames);
		err |= gauge(out, "scorch_store_raw_rows", "Raw sample rows.", st->raw_rows);
		err |= gauge(out, "scorch_store_rollup_rows", "Pre-aggregated rollup rows.",
			     st->rollup_rows);
		err |= gauge(out, "scorch_store_oldest_sample_seconds",
			     "Unix time of the oldest sample (0 when empty).", st->oldest);
		err |= gauge(out, "scorch_store_newest_sample_seconds",
			     "Unix time of the newest sample (0 when empty).", st->newest);
	}
	err |= gauge(out, "scorch_heap_live_bytes", "Heap bytes allocated by scorch itself.",
		     (int64_t)alloc_live_bytes());
	err |= gauge(out, "scorch_heap_peak_bytes", "Peak of scorch_heap_live_bytes.",
		     (int64_t)alloc_peak_bytes());
	err |= gauge(out, "scorch_start_time_seconds", "Unix time the server started.",
		     m->start_time);
	return err < 0 ? -E2BIG : 0;
}
