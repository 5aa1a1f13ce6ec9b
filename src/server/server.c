/* server.c: the route table, /healthz and /metrics, shared parameter parsing, and the server
 * lifecycle (see server.h). */
#include "server/server.h"
#include "lib/alloc.h"
#include "lib/budget.h"
#include "server/api.h"
#include "server/flamebearer.h"
#include "server/ingest.h"
#include "server/merge_cache.h"
#include "server/otlp_ingest.h"
#include "server/render.h"
#include "server/ui.h"
#include "store/selector.h"
#include "store/timerange.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void healthz(void *ctx, const struct http_request *req, struct http_response *resp)
{
	buf_puts(&resp->body, "{\"status\":\"ok\"}\n");
}

static const char *const pool_names[SERVER_NPOOLS] = { "ingest", "query", "meta" };

/* The HTTP layer's own figures: connections, refusals, pools and their memory. */
static int http_metrics(struct server *s, struct buf *out)
{
	struct http_stats h;
	size_t i;
	int err = 0;

	http_server_stats(s->http, &h);
	err |= buf_printf(out, "# HELP scorch_http_connections Open connections (reserve: over a "
			       "connection cap, health and metrics only).\n"
			       "# TYPE scorch_http_connections gauge\n"
			       "scorch_http_connections{kind=\"all\"} %u\n"
			       "scorch_http_connections{kind=\"reserve\"} %u\n", h.connections, h.reserve);
	err |= buf_printf(out, "# HELP scorch_http_connections_total Connections accepted.\n"
			       "# TYPE scorch_http_connections_total counter\n"
			       "scorch_http_connections_total %" PRIu64 "\n", h.accepted);
	err |= buf_printf(out, "# HELP scorch_http_refused_total Requests and connections refused "
			       "by the HTTP layer, by reason.\n"
			       "# TYPE scorch_http_refused_total counter\n"
			       "scorch_http_refused_total{reason=\"connections\"} %" PRIu64 "\n"
			       "scorch_http_refused_total{reason=\"evicted\"} %" PRIu64 "\n"
			       "scorch_http_refused_total{reason=\"timeout\"} %" PRIu64 "\n"
			       "scorch_http_refused_total{reason=\"malformed\"} %" PRIu64 "\n"
			       "scorch_http_refused_total{reason=\"busy\"} %" PRIu64 "\n"
			       "scorch_http_refused_total{reason=\"over_cap\"} %" PRIu64 "\n",
			  h.refused_connections, h.evicted, h.head_timeouts, h.bad_requests, h.busy,
			  h.over_cap);
	err |= buf_printf(out, "# HELP scorch_pool_requests Requests of a worker pool, by state.\n"
			       "# TYPE scorch_pool_requests gauge\n");
	for (i = 0; i < SERVER_NPOOLS; i++) {
		struct http_pool_stats p;

		http_server_pool_stats(s->http, i, &p);
		err |= buf_printf(out, "scorch_pool_requests{pool=\"%s\",state=\"queued\"} %u\n"
				       "scorch_pool_requests{pool=\"%s\",state=\"running\"} %u\n"
				       "scorch_pool_requests{pool=\"%s\",state=\"waiting_memory\"} %u\n",
				  pool_names[i], p.queued, pool_names[i], p.running, pool_names[i],
				  p.waiting_memory);
	}
	err |= buf_printf(out, "# HELP scorch_memory_budget_bytes Memory budgets shared by "
			       "concurrent requests: limit, in use, peak.\n"
			       "# TYPE scorch_memory_budget_bytes gauge\n");
	for (i = 0; i < 2; i++) {
		struct quota *q = i ? &s->query_quota : &s->ingest_quota;
		const char *name = i ? "query" : "ingest";
		uint64_t used, total, peak, refused;

		quota_get(q, &used, &total, &peak, &refused);
		err |= buf_printf(out,
				  "scorch_memory_budget_bytes{budget=\"%s\",kind=\"limit\"} %" PRIu64 "\n"
				  "scorch_memory_budget_bytes{budget=\"%s\",kind=\"used\"} %" PRIu64 "\n"
				  "scorch_memory_budget_bytes{budget=\"%s\",kind=\"peak\"} %" PRIu64 "\n",
				  name, total, name, used, name, peak);
	}
	return err < 0 ? -E2BIG : 0;
}

/* Runs on the I/O thread (HTTP_INLINE): only counters and the statistics cached by
 * server_maintain(), never the store itself, so a scrape is answered whatever load the server
 * is under. */
static void metrics_route(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct store_stats st;
	struct metrics_store ms;
	int ok;

	memset(&ms, 0, sizeof(ms));
	pthread_mutex_lock(&s->stats.lock);
	st = s->stats.st;
	ok = s->stats.ok;
	pthread_mutex_unlock(&s->stats.lock);
	if (ok) {
		ms.ok = 1;
		ms.disk_bytes = (int64_t)st.disk_bytes;
		ms.live_bytes = (int64_t)st.live_bytes;
		ms.series = (int64_t)st.series;
		ms.stacks = (int64_t)st.stacks;
		ms.frames = (int64_t)st.frames;
		ms.raw_rows = (int64_t)st.raw_rows;
		ms.rollup_rows = (int64_t)st.rollup_rows;
		ms.oldest = st.oldest;
		ms.newest = st.newest;
	}
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	if (metrics_render(&s->metrics, &ms, http_server_inflight(s->http), &resp->body) < 0 ||
	    http_metrics(s, &resp->body) < 0)
		http_error(resp, 500, "cannot render metrics");
}

/* Where each route runs (http.h): ingest and queries in pools of their own, so that neither
 * starves the other; health, metrics and the UI's static files on the I/O thread, so that they
 * answer whatever the pools are doing. */
static const struct http_route routes[] = {
	{ "POST", "/ingest", ingest_handle, SERVER_POOL_INGEST },
	{ "POST", "/v1development/profiles", otlp_ingest_handle, SERVER_POOL_INGEST },
	{ "GET", "/render", render_handle, SERVER_POOL_QUERY },
	{ "GET", "/render-diff", render_diff_handle, SERVER_POOL_QUERY },
	{ "GET", "/labels", api_labels, SERVER_POOL_META },
	{ "GET", "/label-values", api_label_values, SERVER_POOL_META },
	{ "GET", "/api/v1/series", api_series, SERVER_POOL_META },
	{ "GET", "/api/v1/top", api_top, SERVER_POOL_QUERY },
	{ "GET", "/api/v1/sandwich", api_sandwich, SERVER_POOL_QUERY },
	{ "GET", "/api/v1/runs", api_runs, SERVER_POOL_META },
	{ "GET", "/metrics", metrics_route, HTTP_INLINE },
	{ "GET", "/healthz", healthz, HTTP_INLINE },
	{ "GET", "/", ui_handle, HTTP_INLINE },
	{ "GET", "/ui/*", ui_handle, HTTP_INLINE },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static void observe(void *ctx, const struct http_route *route, int status, size_t bytes_in,
		    double seconds)
{
	struct server *s = ctx;

	metrics_observe(&s->metrics, route ? route->path : NULL, status, seconds);
	/* Accepted ingests are counted by the handler (it knows the samples); rejections of any
	 * kind, including those answered before the handler ran (401, 413), here. */
	if (route && (route->fn == ingest_handle || route->fn == otlp_ingest_handle) &&
	    (status < 200 || status >= 300))
		metrics_ingest(&s->metrics, status, 0, 0, bytes_in);
}

void server_config_defaults(struct server_config *cfg)
{
	struct decode_limits d;
	size_t *mine = (size_t *)&cfg->limits;
	const size_t *def = (const size_t *)&d;
	size_t i;

	/* struct decode_limits is a list of size_t caps: every one left 0 gets its default. */
	decode_limits_default(&d);
	for (i = 0; i < sizeof(d) / sizeof(size_t); i++)
		if (!mine[i])
			mine[i] = def[i];
	if (!cfg->listen)
		cfg->listen = "127.0.0.1:4040";
	if (!cfg->store_kind)
		cfg->store_kind = "sqlite";
	if (!cfg->max_body)
		cfg->max_body = 64u << 20;
	if (!cfg->threads)
		cfg->threads = 4;
	if (!cfg->cache_bytes)
		cfg->cache_bytes = SERVER_DEFAULT_CACHE_BYTES;
	if (!cfg->ingest_memory)
		cfg->ingest_memory = SERVER_DEFAULT_INGEST_MEMORY;
	if (!cfg->request_memory)
		cfg->request_memory = SERVER_DEFAULT_REQUEST_MEMORY;
	if (!cfg->query_memory)
		cfg->query_memory = SERVER_DEFAULT_QUERY_MEMORY;
	if (!cfg->render_memory)
		cfg->render_memory = SERVER_DEFAULT_RENDER_MEMORY;
	if (!cfg->render_ms)
		cfg->render_ms = SERVER_DEFAULT_RENDER_MS;
	if (!cfg->render.max_nodes)
		cfg->render.max_nodes = RENDER_DEFAULT_NODES;
	if (!cfg->merge_cache_bytes)
		cfg->merge_cache_bytes = SERVER_DEFAULT_MERGE_CACHE;
	if (!cfg->render.max_stacks)
		cfg->render.max_stacks = STORE_DEFAULT_MAX_STACKS;
}

static void refresh_stats(struct server *s)
{
	struct store_stats st;
	struct errmsg err;
	int ok = store_stats(s->store, &st, &err) == 0;

	pthread_mutex_lock(&s->stats.lock);
	if (ok)
		s->stats.st = st;
	s->stats.ok = ok;
	pthread_mutex_unlock(&s->stats.lock);
}

void server_tick(struct server *s)
{
	if (atomic_exchange(&s->stats_dirty, 0))
		refresh_stats(s);
}

static void setup_pools(struct server *s)
{
	struct server_config *c = &s->cfg;
	unsigned ingest = c->threads / 2 ? c->threads / 2 : 1;
	unsigned query = c->threads - c->threads / 2 ? c->threads - c->threads / 2 : 1;
	struct http_pool *p;

	quota_init(&s->ingest_quota, c->ingest_memory);
	quota_init(&s->query_quota, c->query_memory);
	p = &s->pools[SERVER_POOL_INGEST];
	p->name = "ingest";
	p->threads = ingest;
	p->queue = 512;
	p->quota = &s->ingest_quota;
	p->quota_name = "ingest-memory";
	p->max_bytes = c->request_memory;
	p->mem_name = "request-memory";
	p = &s->pools[SERVER_POOL_QUERY];
	p->name = "query";
	p->threads = query;
	p->queue = 512;
	p->quota = &s->query_quota;
	p->quota_name = "query-memory";
	p->max_bytes = c->render_memory;
	p->mem_name = "render-memory";
	p->time_ms = c->render_ms;
	p->time_name = "render-seconds";
	p->rerun_busy = 1;
	p = &s->pools[SERVER_POOL_META];
	p->name = "meta";
	p->threads = 1;
	p->queue = 512;
	p->quota = &s->query_quota;
	p->quota_name = "query-memory";
	p->max_bytes = c->render_memory;
	p->mem_name = "render-memory";
	p->time_ms = c->render_ms;
	p->time_name = "render-seconds";
	p->rerun_busy = 1;
}

struct server *server_start(const struct server_config *cfg, struct errmsg *err)
{
	struct server *s = xcalloc(1, sizeof(*s));
	struct store_opts opts;
	const char *names[NROUTES];
	size_t i;

	s->cfg = *cfg;
	server_config_defaults(&s->cfg);
	pthread_mutex_init(&s->stats.lock, NULL);
	setup_pools(s);
	if (!s->cfg.data_dir) {
		errmsg_set(err, -EINVAL, "no data directory");
		goto fail;
	}
	if (s->cfg.max_body > s->cfg.ingest_memory) {
		errmsg_set(err, -EINVAL, "the largest body (%zu bytes, --max-body) does not fit the "
			   "memory of all ingests (%llu bytes, limit 'ingest-memory')", s->cfg.max_body,
			   (unsigned long long)s->cfg.ingest_memory);
		goto fail;
	}
	/* Large blocks straight from mmap and back to the system on free, few arenas: the
	 * memory given back by a finished request shows in RSS, which is what the limits
	 * bound. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
	mallopt(M_ARENA_MAX, 4);
	memset(&opts, 0, sizeof(opts));
	opts.retention_sec = s->cfg.retention_sec;
	opts.max_disk_bytes = s->cfg.max_disk_bytes;
	opts.sync_full = s->cfg.sync_full;
	opts.cache_bytes = s->cfg.cache_bytes;
	s->store = store_open(s->cfg.store_kind, s->cfg.data_dir, &opts, err);
	if (!s->store)
		goto fail;
	s->merges = merge_cache_new(s->cfg.merge_cache_bytes);
	refresh_stats(s);
	for (i = 0; i < NROUTES; i++)
		names[i] = routes[i].path;
	metrics_init(&s->metrics, names, NROUTES);

	s->http_cfg.listen = s->cfg.listen;
	s->http_cfg.max_body = s->cfg.max_body;
	s->http_cfg.max_connections = s->cfg.max_connections;
	s->http_cfg.max_client_connections = s->cfg.max_client_connections;
	s->http_cfg.header_timeout_ms = s->cfg.header_timeout_ms;
	s->http_cfg.auth_token = s->cfg.auth_token;
	s->http_cfg.routes = routes;
	s->http_cfg.nroutes = NROUTES;
	s->http_cfg.pools = s->pools;
	s->http_cfg.npools = SERVER_NPOOLS;
	s->http_cfg.ctx = s;
	s->http_cfg.observe = observe;
	s->http = http_server_start(&s->http_cfg, err);
	if (!s->http)
		goto fail;
	return s;
fail:
	store_close(s->store);
	merge_cache_free(s->merges);
	quota_release_all(&s->ingest_quota);
	quota_release_all(&s->query_quota);
	pthread_mutex_destroy(&s->stats.lock);
	xfree(s);
	return NULL;
}

unsigned server_port(const struct server *s)
{
	return http_server_port(s->http);
}

int server_maintain(struct server *s, int64_t now, struct errmsg *err)
{
	int rc = store_maintain(s->store, now, err);

	atomic_fetch_add_explicit(&s->metrics.maintenance_runs, 1, memory_order_relaxed);
	if (rc < 0)
		atomic_fetch_add_explicit(&s->metrics.maintenance_errors, 1, memory_order_relaxed);
	refresh_stats(s);
	/* What finished requests freed in the arenas goes back to the system. */
	malloc_trim(0);
	return rc;
}

void server_stop(struct server *s, int timeout_ms)
{
	if (!s)
		return;
	http_server_stop(s->http, timeout_ms);
	store_close(s->store);
	merge_cache_free(s->merges);
	quota_release_all(&s->ingest_quota);
	quota_release_all(&s->query_quota);
	pthread_mutex_destroy(&s->stats.lock);
	xfree(s);
}

int server_parse_range(const struct http_request *req, struct http_response *resp,
		       const char *query_key, const char *from_key, const char *until_key,
		       struct server_range *out)
{
	const char *q = http_arg(req, query_key);
	const char *f = http_arg(req, from_key), *u = http_arg(req, until_key);
	int64_t now = (int64_t)time(NULL);
	struct errmsg err = { "" };

	memset(out, 0, sizeof(*out));
	if (!q && !strcmp(query_key, "query"))
		q = http_arg(req, "name"); /* the legacy spelling */
	out->query = q ? q : "";
	if (q && *q && selector_parse(q, strlen(q), &out->sel, &err) < 0)
		return http_error(resp, 400, "bad parameter '%s': %s", query_key, err.msg), -EINVAL;
	out->q.sel = out->sel;
	/* until is exclusive, and samples are stamped with whole seconds: "now" as the end of a
	 * range is the end of the current second, so that data written during it is included
	 * (until=now, the default, and until=now-1h alike). */
	out->q.from = now - 3600;
	out->q.until = now + 1;
	if (f && *f && timerange_parse_time(f, now, &out->q.from, &err) < 0)
		goto bad_from;
	if (u && *u && timerange_parse_time(u, now + 1, &out->q.until, &err) < 0) {
		http_error(resp, 400, "bad parameter '%s': %s", until_key, err.msg);
		goto fail;
	}
	if (out->q.until < out->q.from) {
		http_error(resp, 400, "bad parameters: '%s' is before '%s'", until_key, from_key);
		goto fail;
	}
	return 0;
bad_from:
	http_error(resp, 400, "bad parameter '%s': %s", from_key, err.msg);
fail:
	server_range_release(out);
	return -EINVAL;
}

void server_range_release(struct server_range *r)
{
	selector_free(r->sel);
	r->sel = NULL;
	r->q.sel = NULL;
}

int server_store_error(struct http_response *resp, int rc, const struct errmsg *err)
{
	const char *m = err && err->msg[0] ? err->msg : "store error";

	if (budget_failed() && (rc == -ETIME || rc == -EBUSY || rc == -ENOMEM)) {
		struct errmsg why;

		budget_error(&why, rc);
		http_error(resp, 503, "%s%s", why.msg, rc == -ETIME ? "; narrow the time range or "
			   "the query" : rc == -ENOMEM ? "; narrow the query or lower maxNodes" : "");
		resp->retry_after = rc == -EBUSY ? 2 : 0;
		return 503;
	}
	if (rc == -EINVAL || rc == -E2BIG)
		return http_error(resp, 400, "%s", m);
	if (rc == -ENOENT)
		return http_error(resp, 404, "%s", m);
	if (rc == -EAGAIN) {
		log_warn("store query failed: %s", m);
		return http_error(resp, 503, "store unavailable, retry later: %s", m);
	}
	log_warn("store query failed: %s", m);
	return http_error(resp, 500, "storage failure: %s", m);
}

int server_arg_uint(const struct http_request *req, struct http_response *resp, const char *key,
		    uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *v = http_arg(req, key);
	char *end;
	unsigned long long n;

	*out = def;
	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || end == v || v[0] == '-' || n < min || n > max) {
		http_error(resp, 400, "bad parameter '%s': want an integer in [%" PRIu64 ", %" PRIu64 "]",
			   key, min, max);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

int server_arg_lines(const struct http_request *req, struct http_response *resp, int *out)
{
	const char *v = http_arg(req, "lines");

	*out = 0;
	if (!v || !*v || !strcmp(v, "0") || !strcmp(v, "false"))
		return 0;
	if (!strcmp(v, "1") || !strcmp(v, "true")) {
		*out = 1;
		return 0;
	}
	http_error(resp, 400, "bad parameter 'lines': want 1 or 0");
	return -EINVAL;
}

int server_arg_max_nodes(const struct http_request *req, struct http_response *resp, uint64_t *out)
{
	const char *key = http_arg(req, "maxNodes") ? "maxNodes" : "max-nodes";

	return server_arg_uint(req, resp, key, FLAMEBEARER_DEFAULT_MAX_NODES, 1,
			       FLAMEBEARER_MAX_MAX_NODES, out);
}
