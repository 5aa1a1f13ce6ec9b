/* server.h: `scorch server` assembled: the store, the metrics, the route table and the HTTP
 * plumbing (http.h). The routes themselves live in ingest.c (POST /ingest), render.c (/render,
 * /render-diff) and api.c (/labels, /label-values, /api/v1/...); /metrics and /healthz are
 * here. The command line is src/cli/cmd_server.c; docs/server.md describes the endpoints.
 *
 * Lifecycle: server_start() opens the store and starts listening; the caller calls
 * server_maintain() every few seconds; server_stop() stops accepting, lets in-flight requests
 * finish (so every acknowledged ingest is committed), then closes the store. */
#ifndef SCORCH_SERVER_H
#define SCORCH_SERVER_H

#include "lib/log.h"
#include "server/http.h"
#include "server/metrics.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

struct selector;

struct server_config {
	const char *listen;          /* default "127.0.0.1:4040" */
	const char *data_dir;        /* store directory (required) */
	const char *store_kind;      /* default "sqlite" */
	int64_t retention_sec;       /* 0 = keep forever */
	uint64_t max_disk_bytes;     /* 0 = no cap */
	const char *auth_token;      /* NULL = no authentication */
	size_t max_body;             /* default 64 MiB */
	unsigned threads;            /* default 4 */
	unsigned max_connections;    /* default 256 */
	int sync_full;               /* fsync every commit (see store_opts) */
};

struct merge_cache;

struct server {
	struct server_config cfg;
	struct store *store;
	struct merge_cache *merges; /* merge_cache.h: merged profiles shared by queries */
	struct metrics metrics;
	struct http_config http_cfg;
	struct http_server *http;
};

/* Open the store and start serving. The strings in cfg must outlive the server. Returns NULL
 * with a message in err on failure (nothing left open). */
struct server *server_start(const struct server_config *cfg, struct errmsg *err);
unsigned server_port(const struct server *s);
/* Store maintenance (retention, rollups, checkpoints); counted in the metrics. */
int server_maintain(struct server *s, int64_t now, struct errmsg *err);
/* Graceful stop (see above); accepts NULL. */
void server_stop(struct server *s, int timeout_ms);

/* ---- Helpers for the route handlers ----------------------------------------------------- */

/* A parsed selection: the selector from query parameter `query_key` (absent or empty = every
 * series) and the range [from, until) from `from_key` / `until_key` (default: the last hour,
 * until now). */
struct server_range {
	struct selector *sel;
	struct store_query q;
	const char *query; /* the raw query string ("" when absent) */
};

/* Parse the parameters; on error fill resp with a 400 naming the parameter and return -EINVAL. */
int server_parse_range(const struct http_request *req, struct http_response *resp,
		       const char *query_key, const char *from_key, const char *until_key,
		       struct server_range *out);
void server_range_release(struct server_range *r);

/* Fill resp with the error of a failed store call rc (-EINVAL/-E2BIG 400, -ENOENT 404,
 * -EAGAIN 503 (store unavailable), else 500) and return the status. */
int server_store_error(struct http_response *resp, int rc, const struct errmsg *err);

/* Parse an optional unsigned integer parameter in [min, max]; absent gives def. On error
 * fills a 400 and returns -EINVAL. */
int server_arg_uint(const struct http_request *req, struct http_response *resp, const char *key,
		    uint64_t def, uint64_t min, uint64_t max, uint64_t *out);

/* The flame graph size: `maxNodes`, or `max-nodes` as older Pyroscope clients spell it
 * (default FLAMEBEARER_DEFAULT_MAX_NODES, 1..FLAMEBEARER_MAX_MAX_NODES). 400 on error. */
int server_arg_max_nodes(const struct http_request *req, struct http_response *resp, uint64_t *out);

#endif
