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
#include "lib/quota.h"
#include "profile/decode_limits.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/render.h"
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct selector;

/* The worker pools (http.h) and which routes run where. */
enum {
	SERVER_POOL_INGEST = 0, /* POST /ingest and other decoders of pushed profiles */
	SERVER_POOL_QUERY,      /* flame graphs: /render, /render-diff, /api/v1/top|sandwich */
	SERVER_POOL_META,       /* cheap queries: /labels, /label-values, /api/v1/series */
	SERVER_NPOOLS,
};

/* Memory plan at the defaults (docs/server.md, "Limits"): ingest 96 MiB (bodies and their
 * decoding), queries 64 MiB (their answers included until sent), store caches 32 MiB, merged
 * profiles kept for later queries 32 MiB, the rest (connections, code, SQLite) a few tens of
 * MB: the server stays under 256 MB of RSS whatever mix of requests it accepts. */
#define SERVER_DEFAULT_INGEST_MEMORY  (96ULL << 20)
#define SERVER_DEFAULT_REQUEST_MEMORY (64ULL << 20)
#define SERVER_DEFAULT_QUERY_MEMORY   (64ULL << 20)
#define SERVER_DEFAULT_RENDER_MEMORY  (64ULL << 20)
#define SERVER_DEFAULT_RENDER_MS      10000
#define SERVER_DEFAULT_CACHE_BYTES    (32ULL << 20)
#define SERVER_DEFAULT_MERGE_CACHE    (32ULL << 20)

struct server_config {
	const char *listen;          /* default "127.0.0.1:4040" */
	const char *data_dir;        /* store directory (required) */
	const char *store_kind;      /* default "sqlite" */
	int64_t retention_sec;       /* 0 = keep forever */
	uint64_t max_disk_bytes;     /* 0 = no cap */
	const char *auth_token;      /* NULL = no authentication */
	size_t max_body;             /* default 64 MiB */
	unsigned threads;            /* workers: half ingest, half queries (default 4) */
	unsigned max_connections;    /* default 1024 */
	unsigned max_client_connections; /* per client address (default 128) */
	unsigned header_timeout_ms;  /* whole request head (default 10 s) */
	int sync_full;               /* fsync every commit (see store_opts) */
	uint64_t cache_bytes;        /* store caches (default SERVER_DEFAULT_CACHE_BYTES) */
	/* Limits of ingest decoding (zero fields: decode_limits.h defaults). */
	struct decode_limits limits;
	uint64_t ingest_memory;      /* held by all ingests together: bodies and decoding */
	uint64_t request_memory;     /* decoding one ingest */
	/* Limits of queries. */
	uint64_t query_memory;       /* held by all queries together */
	uint64_t render_memory;      /* one query */
	unsigned render_ms;          /* one query's time */
	uint64_t merge_cache_bytes;  /* merged profiles kept for later queries (merge_cache.h) */
	struct render_budget render; /* stacks and call-tree nodes per flame graph (render.h) */
};

/* Store statistics, refreshed by server_maintain() so that /metrics never waits for the store. */
struct server_store_stats {
	pthread_mutex_t lock;
	struct store_stats st;
	int ok;
};

struct merge_cache;

struct server {
	struct server_config cfg;
	struct store *store;
	struct merge_cache *merges; /* merge_cache.h: merged profiles shared by queries */
	struct metrics metrics;
	struct quota ingest_quota, query_quota;
	struct http_pool pools[SERVER_NPOOLS];
	struct http_config http_cfg;
	struct http_server *http;
	struct server_store_stats stats;
	atomic_int stats_dirty;      /* data changed since the statistics were read */
	atomic_int disk_full;        /* the last write was refused for space (logged once) */
};

/* Open the store and start serving. The strings in cfg must outlive the server. Returns NULL
 * with a message in err on failure (nothing left open). */
struct server *server_start(const struct server_config *cfg, struct errmsg *err);
unsigned server_port(const struct server *s);
/* Store maintenance (retention, rollups, checkpoints) and the statistics /metrics shows;
 * counted in the metrics. */
int server_maintain(struct server *s, int64_t now, struct errmsg *err);
/* Refresh the store statistics /metrics shows if data changed (call about every second). */
void server_tick(struct server *s);
/* Fill the defaults of the zero fields of cfg (limits, memory, pools). */
void server_config_defaults(struct server_config *cfg);
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
 * -EAGAIN 503 (store unavailable), budget failures -ETIME/-EBUSY/-ENOMEM 503 with the budget's
 * message, else 500) and return the status. */
int server_store_error(struct http_response *resp, int rc, const struct errmsg *err);

/* Parse an optional unsigned integer parameter in [min, max]; absent gives def. On error
 * fills a 400 and returns -EINVAL. */
int server_arg_uint(const struct http_request *req, struct http_response *resp, const char *key,
		    uint64_t def, uint64_t min, uint64_t max, uint64_t *out);

/* The flame graph size: `maxNodes`, or `max-nodes` as older Pyroscope clients spell it
 * (default FLAMEBEARER_DEFAULT_MAX_NODES, 1..FLAMEBEARER_MAX_MAX_NODES). 400 on error. */
int server_arg_max_nodes(const struct http_request *req, struct http_response *resp, uint64_t *out);
/* The `lines` argument of the query views: 1 ("1", "true") keeps a frame per source line as
 * stored; 0 (absent, "", "0", "false", the default) aggregates by function
 * (query_by_function()). Answers 400 and returns -EINVAL for another value. */
int server_arg_lines(const struct http_request *req, struct http_response *resp, int *out);

#endif
