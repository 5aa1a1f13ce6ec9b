/* http.h: the HTTP/1.1 layer of `scorch server`: its own small server on epoll (no external
 * HTTP library), built so that a hostile or merely busy crowd of clients cannot lock others
 * out. It knows nothing about profiles: routes (ingest.c, render.c, api.c, server.c) are plain
 * functions that read a struct http_request and fill a struct http_response.
 *
 * Threads. One I/O thread accepts connections, reads request heads and bodies and writes
 * responses; it never runs anything slow, and asks for nice -10 (kept when permitted) so that
 * a busy machine does not delay it. Route handlers run in worker pools (struct
 * http_pool: e.g. "ingest", "query", "meta"), each with its own threads and queue, so heavy
 * queries and ingests cannot starve each other; routes marked HTTP_INLINE (health, metrics,
 * static assets) run on the I/O thread itself and are answered at once whatever the pools are
 * doing. Handlers of one pool run concurrently: whatever ctx points to must be thread-safe.
 *
 * Limits (defaults in brackets; docs/server.md, "Connections" and "Limits"):
 *   - the whole request head (request line and headers) must arrive within header_timeout_ms
 *     [10 s] of its first byte (of the connection, for the first request); bytes trickling in
 *     do not extend it (408 and close). At most max_head bytes [32 KiB] (431).
 *   - garbage is refused at the first byte that cannot start a request (400 and close); see
 *     http_parse.h for what is malformed.
 *   - max_connections [1024] in all and max_client_connections [128] per client address.
 *     Connections beyond either still get a small reserve (reserve [32] slots, 2 s, 4 KiB
 *     heads, the oldest evicted first) in which only HTTP_INLINE routes are served: /healthz
 *     and /metrics answer even when every slot is taken by slow clients; anything else there
 *     gets 503 (total cap) or 429 (per-client cap) and the connection is closed.
 *   - bodies: at most max_body [64 MiB] (413 from Content-Length, before reading); routes of a
 *     pool without a quota take bodies of at most 1 MiB. A body is held in the pool's quota
 *     (the memory shared by its requests) from the head on; when the quota is full the
 *     connection waits (nothing is read) up to the pool's max_wait_ms, then gets 503 with
 *     Retry-After. A stalled body (no byte for idle_timeout_ms [30 s]) gets 408.
 *   - queues: a request that finds its pool's queue full, or waits in it longer than
 *     max_wait_ms, gets 503 with Retry-After.
 *   - handlers run under a lib/budget.h budget made from their pool: heap cap, the pool's
 *     quota, and a deadline (the handler maps budget errors to statuses). A response stays
 *     in its pool's quota until it is sent, so clients that do not read cannot pile up
 *     answers beyond it.
 * Keep-alive and pipelining follow HTTP/1.1; `Expect: 100-continue` is honoured; HEAD works
 * for every GET route. Every error answer is JSON {"error": "..."}. */
#ifndef SCORCH_HTTP_H
#define SCORCH_HTTP_H

#include "lib/buf.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

struct quota;

/* One request, valid for the duration of the handler call. */
struct http_request {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* percent-decoded, without the query string */
	const char *body;   /* NUL-terminated (the NUL is not counted); "" when there is none */
	size_t body_len;
	void *conn;         /* private: the connection */
};

/* The value of query-string argument key (percent-decoded), or NULL when absent. */
const char *http_arg(const struct http_request *req, const char *key);
/* The value of request header name (case-insensitive), or NULL. */
const char *http_header(const struct http_request *req, const char *name);
/* Free the body now and give its bytes back to the quota (a decoder that copied what it
 * needs): req->body must not be used after. body_len keeps its value. */
void http_request_drop_body(const struct http_request *req);

/* What a handler fills. The body is owned by the response; the plumbing frees it. */
struct http_response {
	int status;                      /* default 200 */
	const char *content_type;        /* static string; default application/json */
	const char *content_encoding;    /* static string or NULL */
	const char *content_disposition; /* static string or NULL */
	const char *cache_control;       /* static string or NULL */
	unsigned retry_after;            /* seconds for a Retry-After header, 0 for none */
	struct buf body;
	/* A body that outlives the server (an embedded asset): sent as is, without a copy, in
	 * place of `body` when set. */
	const char *body_static;
	size_t body_static_len;
};

/* Replace the body with {"error": "<message>"} and set status. Returns status. */
int http_error(struct http_response *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

typedef void (*http_handler_fn)(void *ctx, const struct http_request *req,
				struct http_response *resp);

#define HTTP_INLINE (-1) /* http_route.pool: run on the I/O thread (must be quick, never block) */

struct http_route {
	const char *method; /* "GET" or "POST" */
	const char *path;   /* exact match, or a prefix when it ends in "*" */
	http_handler_fn fn;
	int pool;           /* index into http_config.pools, or HTTP_INLINE */
};

/* A worker pool: its threads run the handlers of the routes that name it. */
struct http_pool {
	const char *name;        /* for metrics and messages: "ingest", "query", ... */
	unsigned threads;        /* at least 1 */
	unsigned queue;          /* requests waiting for a thread at most (0: 64) */
	unsigned max_wait_ms;    /* longest wait for a thread or for body memory (0: 10 s) */
	struct quota *quota;     /* memory its requests share (bodies and handlers), or NULL */
	const char *quota_name;  /* the limit's name in messages, e.g. "ingest-memory" */
	uint64_t max_bytes;      /* heap of one handler (0: no cap) */
	const char *mem_name;    /* e.g. "request-memory" */
	unsigned time_ms;        /* time of one handler (0: none) */
	const char *time_name;   /* e.g. "render-seconds" */
	int nice;                /* the threads' nice value (the I/O thread asks for -10) */
	int rerun_busy;          /* handlers only read: one that found the quota taken by others
	                          * (-EBUSY) runs again once some is given back, within
	                          * max_wait_ms, before it is answered 503 */
};

/* Called once per finished request (on the I/O thread) for metrics: route is NULL when no
 * route matched; bytes_in is the body length received. */
typedef void (*http_observe_fn)(void *ctx, const struct http_route *route, int status,
				size_t bytes_in, double seconds);

struct http_config {
	const char *listen;              /* "HOST:PORT", ":PORT" or "[V6]:PORT"; port 0 picks one */
	size_t max_body;                 /* bytes; 0 means 64 MiB */
	unsigned max_connections;        /* 0 means 1024 */
	unsigned max_client_connections; /* per client address; 0 means 128 */
	unsigned reserve;                /* 0 means 32 */
	unsigned header_timeout_ms;      /* 0 means 10 s */
	unsigned idle_timeout_ms;        /* 0 means 30 s */
	size_t max_head;                 /* 0 means 32 KiB */
	const char *auth_token;          /* when non-NULL, every request needs "Authorization:
	                                  * Bearer T" */
	const struct http_route *routes;
	size_t nroutes;
	const struct http_pool *pools;
	size_t npools;
	void *ctx;                       /* passed to handlers and observe */
	http_observe_fn observe;         /* may be NULL */
};

struct http_server;

/* Parse "HOST:PORT" into a socket address (IPv4 or IPv6 literal, or "localhost"; empty host
 * means all interfaces). Returns 0 or -EINVAL with a message in err. */
struct sockaddr_storage;
int http_parse_listen(const char *listen, struct sockaddr_storage *ss, struct errmsg *err);
/* Is the listen address a loopback one (127.0.0.0/8, ::1, localhost)? */
int http_listen_is_loopback(const char *listen);

/* Start listening and serving. cfg (and the routes, pools and token it points to) must outlive
 * the server. An address already in use is refused (-EADDRINUSE: the socket is not shared).
 * Returns NULL with a message in err on failure. */
struct http_server *http_server_start(const struct http_config *cfg, struct errmsg *err);
/* The port actually bound (useful with port 0). */
unsigned http_server_port(const struct http_server *s);

struct http_stats {
	unsigned connections;       /* open now */
	unsigned reserve;           /* of which in the reserve */
	unsigned inflight;          /* requests being received, queued, handled or answered */
	uint64_t accepted;
	uint64_t refused_connections; /* closed at once: over every cap and the reserve full */
	uint64_t evicted;           /* reserve connections closed for newer ones */
	uint64_t head_timeouts;     /* 408: head or body too slow */
	uint64_t bad_requests;      /* malformed heads (400/431/501/505) */
	uint64_t busy;              /* 503 for a full queue or memory wait */
	uint64_t over_cap;          /* 429/503 in the reserve (non-inline route over a cap) */
};
struct http_pool_stats {
	unsigned queued, running, waiting_memory;
	uint64_t quota_used, quota_total, quota_peak;
};
/* Counters (cheap; safe from any thread). */
void http_server_stats(struct http_server *s, struct http_stats *st);
void http_server_pool_stats(struct http_server *s, size_t pool, struct http_pool_stats *st);
/* Requests currently being received, queued, handled or answered. */
unsigned http_server_inflight(const struct http_server *s);

/* Graceful stop: close the listening socket, let requests already received run to the end and
 * their answers go out (requests whose body stalled for 2 s are not waited for, nothing of
 * them was acknowledged), for at most timeout_ms; then close every connection and join the
 * threads (a running handler always completes). Frees s. Accepts NULL. */
void http_server_stop(struct http_server *s, int timeout_ms);

/* Compare two strings in time that depends only on their lengths (for secrets). 1 if equal. */
int http_secret_equal(const char *a, size_t alen, const char *b, size_t blen);

#endif
