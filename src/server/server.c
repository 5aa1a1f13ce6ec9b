/* server.c: the route table, /healthz and /metrics, shared parameter parsing, and the server
 * lifecycle (see server.h). */
#include "server/server.h"
#include "lib/alloc.h"
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
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void healthz(void *ctx, const struct http_request *req, struct http_response *resp)
{
	buf_puts(&resp->body, "{\"status\":\"ok\"}\n");
}

static void metrics_route(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct store_stats st;
	struct metrics_store ms;
	struct errmsg err;

	memset(&ms, 0, sizeof(ms));
	if (store_stats(s->store, &st, &err) == 0) {
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
	if (metrics_render(&s->metrics, &ms, http_server_inflight(s->http), &resp->body) < 0)
		http_error(resp, 500, "cannot render metrics");
}

static const struct http_route routes[] = {
	{ "POST", "/ingest", ingest_handle },
	{ "POST", "/v1development/profiles", otlp_ingest_handle },
	{ "GET", "/render", render_handle },
	{ "GET", "/render-diff", render_diff_handle },
	{ "GET", "/labels", api_labels },
	{ "GET", "/label-values", api_label_values },
	{ "GET", "/api/v1/series", api_series },
	{ "GET", "/api/v1/top", api_top },
	{ "GET", "/api/v1/sandwich", api_sandwich },
	{ "GET", "/api/v1/runs", api_runs },
	{ "GET", "/metrics", metrics_route },
	{ "GET", "/healthz", healthz },
	{ "GET", "/", ui_handle },
	{ "GET", "/ui/*", ui_handle },
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

struct server *server_start(const struct server_config *cfg, struct errmsg *err)
{
	struct server *s = xcalloc(1, sizeof(*s));
	struct store_opts opts;
	const char *names[NROUTES];
	size_t i;

	s->cfg = *cfg;
	if (!s->cfg.listen)
		s->cfg.listen = "127.0.0.1:4040";
	if (!s->cfg.store_kind)
		s->cfg.store_kind = "sqlite";
	if (!s->cfg.data_dir) {
		errmsg_set(err, -EINVAL, "no data directory");
		goto fail;
	}
	memset(&opts, 0, sizeof(opts));
	opts.retention_sec = s->cfg.retention_sec;
	opts.max_disk_bytes = s->cfg.max_disk_bytes;
	opts.sync_full = s->cfg.sync_full;
	s->store = store_open(s->cfg.store_kind, s->cfg.data_dir, &opts, err);
	if (!s->store)
		goto fail;
	s->merges = merge_cache_new();
	for (i = 0; i < NROUTES; i++)
		names[i] = routes[i].path;
	metrics_init(&s->metrics, names, NROUTES);

	s->http_cfg.listen = s->cfg.listen;
	s->http_cfg.max_body = s->cfg.max_body;
	s->http_cfg.threads = s->cfg.threads;
	s->http_cfg.max_connections = s->cfg.max_connections;
	s->http_cfg.auth_token = s->cfg.auth_token;
	s->http_cfg.routes = routes;
	s->http_cfg.nroutes = NROUTES;
	s->http_cfg.ctx = s;
	s->http_cfg.observe = observe;
	s->http = http_server_start(&s->http_cfg, err);
	if (!s->http)
		goto fail;
	return s;
fail:
	store_close(s->store);
	merge_cache_free(s->merges);
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
	return rc;
}

void server_stop(struct server *s, int timeout_ms)
{
	if (!s)
		return;
	http_server_stop(s->http, timeout_ms);
	store_close(s->store);
	merge_cache_free(s->merges);
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

int server_arg_max_nodes(const struct http_request *req, struct http_response *resp, uint64_t *out)
{
	const char *key = http_arg(req, "maxNodes") ? "maxNodes" : "max-nodes";

	return server_arg_uint(req, resp, key, FLAMEBEARER_DEFAULT_MAX_NODES, 1,
			       FLAMEBEARER_MAX_MAX_NODES, out);
}
