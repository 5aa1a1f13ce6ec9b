/* http.h: the HTTP plumbing of `scorch server`, on top of libmicrohttpd.
 *
 * It owns the listening socket, the worker thread pool, bounded request bodies, the optional
 * bearer-token check, routing by exact path, JSON error bodies and graceful shutdown. It knows
 * nothing about profiles: the routes (ingest.c, query.c, metrics.c) are plain functions that
 * read a struct http_request and fill a struct http_response.
 *
 * Limits: a request body larger than max_body is answered 413 without being stored (refused
 * up front when Content-Length says so, otherwise the rest is read and discarded); at most
 * max_connections connections are open at once; `threads` handlers run concurrently; all bodies
 * being received together hold at most max(256 MiB, 2 * max_body), beyond which requests get
 * 503 (retry later).
 *
 * Handlers run on worker threads, concurrently: whatever ctx points to must be thread-safe. */
#ifndef SCORCH_HTTP_H
#define SCORCH_HTTP_H

#include "lib/buf.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

/* One request, valid for the duration of the handler call. */
struct http_request {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* without the query string */
	const char *body;   /* NUL-terminated (the NUL is not counted); "" when there is none */
	size_t body_len;
	void *conn;         /* private: the libmicrohttpd connection */
};

/* The value of query-string argument key (percent-decoded), or NULL when absent. */
const char *http_arg(const struct http_request *req, const char *key);
/* The value of request header name (case-insensitive), or NULL. */
const char *http_header(const struct http_request *req, const char *name);

/* What a handler fills. The body is owned by the response; the plumbing frees it. */
struct http_response {
	int status;                      /* default 200 */
	const char *content_type;        /* static string; default application/json */
	const char *content_encoding;    /* static string or NULL */
	const char *content_disposition; /* static string or NULL */
	const char *cache_control;       /* static string or NULL */
	struct buf body;
};

/* Replace the body with {"error": "<message>"} and set status. Returns status. */
int http_error(struct http_response *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

typedef void (*http_handler_fn)(void *ctx, const struct http_request *req,
				struct http_response *resp);

struct http_route {
	const char *method; /* "GET" or "POST" */
	const char *path;   /* exact match, or a prefix when it ends in "*" */
	http_handler_fn fn;
};

/* Called once per finished request (from a worker thread) for metrics: route is NULL when no
 * route matched; bytes_in is the body length received. */
typedef void (*http_observe_fn)(void *ctx, const struct http_route *route, int status,
				size_t bytes_in, double seconds);

struct http_config {
	const char *listen;         /* "HOST:PORT", ":PORT" or "[V6]:PORT"; port 0 picks one */
	size_t max_body;            /* bytes; 0 means 64 MiB */
	unsigned threads;           /* worker threads; 0 means 4 */
	unsigned max_connections;   /* 0 means 256 */
	unsigned timeout_sec;       /* idle connection timeout; 0 means 60 */
	const char *auth_token;     /* when non-NULL, every request needs "Authorization: Bearer T" */
	const struct http_route *routes;
	size_t nroutes;
	void *ctx;                  /* passed to handlers and observe */
	http_observe_fn observe;    /* may be NULL */
};

struct http_server;

/* Parse "HOST:PORT" into a socket address (IPv4 or IPv6 literal, or "localhost"; empty host
 * means all interfaces). Returns 0 or -EINVAL with a message in err. */
struct sockaddr_storage;
int http_parse_listen(const char *listen, struct sockaddr_storage *ss, struct errmsg *err);

/* Start listening and serving. cfg (and the routes and token it points to) must outlive the
 * server. Returns NULL with a message in err on failure. */
struct http_server *http_server_start(const struct http_config *cfg, struct errmsg *err);
/* The port actually bound (useful with port 0). */
unsigned http_server_port(const struct http_server *s);
/* Requests currently being received or handled. */
unsigned http_server_inflight(const struct http_server *s);
/* Graceful stop: close the listening socket, wait up to timeout_ms for in-flight requests to
 * finish (but not for requests whose body stalled for 2 s while no handler runs: a slow or
 * idle client cannot hold the stop), then close every connection and join the threads (a
 * running handler always completes), and free s. Accepts NULL. */
void http_server_stop(struct http_server *s, int timeout_ms);

/* Compare two strings in time that depends only on their lengths (for secrets). 1 if equal. */
int http_secret_equal(const char *a, size_t alen, const char *b, size_t blen);

#endif
