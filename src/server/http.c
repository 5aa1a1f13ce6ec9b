/* http.c: libmicrohttpd glue for `scorch server` (see http.h): per-request state with a bounded
 * body, routing, bearer-token check, JSON errors, graceful stop. Routes live in ingest.c,
 * render.c, api.c and server.c; the command that wires them is src/cli/cmd_server.c. */
#include "server/http.h"
#include "lib/alloc.h"
#include "lib/json.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_DEFAULT_MAX_BODY (64u << 20)
#define HTTP_MIN_BODY_BUDGET (256u << 20)
#define HTTP_MAX_RESERVE (4u << 20)
/* At shutdown, requests whose bodies have not moved for this long (and no handler running) are
 * not waited for: nothing of them was acknowledged, and a stalled client must not hold the
 * stop for the whole grace period. */
#define HTTP_STOP_IDLE_MS 2000

struct http_server {
	struct MHD_Daemon *daemon;
	const struct http_config *cfg;
	size_t max_body;
	unsigned port;
	atomic_uint inflight;
	atomic_uint handling;        /* route handlers running now */
	atomic_llong last_activity;  /* monotonic ms of the last request data or handler end */
	size_t body_budget;      /* bytes all request bodies together may hold */
	atomic_size_t buffered;  /* bytes they hold now */
};

/* Per-request state, from the first call of the access handler to the completion callback. */
struct reqstate {
	const struct http_route *route;
	struct buf body;
	int too_large;  /* body exceeded max_body: discard the rest, answer 413 */
	int no_memory;  /* body could not be buffered: answer 503 */
	int status;     /* status of the response queued, 0 before */
	size_t bytes_in; /* body bytes received */
	struct timespec start;
	double seconds;
};

/* Free a request's body and return its bytes to the budget. */
static void body_release(struct http_server *s, struct reqstate *st)
{
	atomic_fetch_sub(&s->buffered, st->body.len);
	buf_release(&st->body);
}

static long long monotonic_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static double elapsed_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

const char *http_arg(const struct http_request *req, const char *key)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_header(const struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

int http_error(struct http_response *resp, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_reset(&resp->body);
	/* An error body is small; if even this fails the status alone still tells the story. */
	if (buf_puts(&resp->body, "{\"error\":") < 0 || json_str(&resp->body, msg) < 0 ||
	    buf_puts(&resp->body, "}\n") < 0)
		buf_reset(&resp->body);
	resp->status = status;
	resp->content_type = "application/json";
	resp->content_encoding = NULL;
	resp->content_disposition = NULL;
	return status;
}

int http_secret_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char diff = (unsigned char)(alen != blen);
	size_t i, n = alen > blen ? alen : blen;

	/* Walk the longer length so the time does not depend on where the first mismatch is. */
	for (i = 0; i < n; i++) {
		unsigned char x = i < alen ? (unsigned char)a[i] : 0;
		unsigned char y = i < blen ? (unsigned char)b[i] : 0;

		diff |= x ^ y;
	}
	return diff == 0;
}

static int authorized(const struct http_server *s, struct MHD_Connection *conn)
{
	const char *tok = s->cfg->auth_token;
	const char *h;
	static const char prefix[] = "Bearer ";

	if (!tok)
		return 1;
	h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, prefix, sizeof(prefix) - 1))
		return 0;
	h += sizeof(prefix) - 1;
	return http_secret_equal(h, strlen(h), tok, strlen(tok));
}

static enum MHD_Result send_response(struct MHD_Connection *conn, struct reqstate *st,
				     struct http_response *resp)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *data = buf_detach(&resp->body, &len);

	r = MHD_create_response_from_buffer_with_free_callback(len, data, xfree);
	if (!r) {
		xfree(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				resp->content_type ? resp->content_type : "application/json");
	if (resp->content_encoding)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, resp->content_encoding);
	if (resp->content_disposition)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
					resp->content_disposition);
	if (resp->cache_control)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, resp->cache_control);
	if (resp->status == 401)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	st->status = resp->status;
	st->seconds = elapsed_since(&st->start);
	ret = MHD_queue_response(conn, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, struct reqstate *st, int status,
				  const char *msg)
{
	struct http_response resp = { 0 };
	enum MHD_Result ret;

	buf_init(&resp.body, 4096);
	http_error(&resp, status, "%s", msg);
	ret = send_response(conn, st, &resp);
	buf_release(&resp.body);
	return ret;
}

static const struct http_route *find_route(const struct http_config *cfg, const char *method,
					   const char *url, int *path_known)
{
	size_t i;

	*path_known = 0;
	for (i = 0; i < cfg->nroutes; i++) {
		const char *p = cfg->routes[i].path;
		size_t n = strlen(p);

		if (n > 0 && p[n - 1] == '*' ? strncmp(p, url, n - 1) : strcmp(p, url))
			continue;
		*path_known = 1;
		if (!strcmp(cfg->routes[i].method, method) ||
		    (!strcmp(method, "HEAD") && !strcmp(cfg->routes[i].method, "GET")))
			return &cfg->routes[i];
	}
	return NULL;
}

static enum MHD_Result first_call(struct http_server *s, struct MHD_Connection *conn,
				  const char *url, const char *method, struct reqstate *st)
{
	const struct http_config *cfg = s->cfg;
	const char *cl;
	int path_known;

	st->route = find_route(cfg, method, url, &path_known);
	if (!authorized(s, conn))
		return send_error(conn, st, 401, "missing or wrong bearer token");
	if (!st->route)
		return send_error(conn, st, path_known ? 405 : 404,
				  path_known ? "method not allowed" : "no such endpoint");
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		char *end;
		unsigned long long n;

		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno || end == cl || n > s->max_body) {
			char msg[128];

			snprintf(msg, sizeof(msg), "request body larger than %zu bytes", s->max_body);
			st->too_large = 1;
			return send_error(conn, st, 413, msg);
		}
		/* Reserve the announced size (up to a few MB: a client may announce and not send)
		 * so that a large body is not copied over and over while doubling. */
		if (n > 0 && !buf_reserve(&st->body, n < HTTP_MAX_RESERVE ? (size_t)n : HTTP_MAX_RESERVE))
			st->no_memory = 1;
	}
	return MHD_YES;
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_data_size,
				      void **con_cls)
{
	struct http_server *s = cls;
	struct reqstate *st = *con_cls;
	struct http_request req;
	struct http_response resp;
	enum MHD_Result ret;

	atomic_store(&s->last_activity, monotonic_ms());
	if (!st) {
		st = xcalloc(1, sizeof(*st));
		buf_init(&st->body, s->max_body);
		clock_gettime(CLOCK_MONOTONIC, &st->start);
		*con_cls = st;
		atomic_fetch_add(&s->inflight, 1);
		return first_call(s, conn, url, method, st);
	}
	if (st->status) {
		*upload_data_size = 0; /* a response is already queued: drop the rest */
		return MHD_YES;
	}
	if (*upload_data_size) {
		st->bytes_in += *upload_data_size;
		if (!st->too_large && !st->no_memory) {
			size_t before = st->body.len;
			int err;

			/* All bodies together stay under a budget, whatever many clients send. */
			if (atomic_fetch_add(&s->buffered, *upload_data_size) + *upload_data_size >
			    s->body_budget)
				err = -ENOMEM;
			else
				err = buf_append(&st->body, upload_data, *upload_data_size);
			atomic_fetch_sub(&s->buffered, *upload_data_size);
			atomic_fetch_add(&s->buffered, st->body.len - before);
			if (err == -E2BIG) {
				st->too_large = 1;
				body_release(s, st);
			} else if (err) {
				st->no_memory = 1;
				body_release(s, st);
			}
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (st->too_large) {
		char msg[128];

		snprintf(msg, sizeof(msg), "request body larger than %zu bytes", s->max_body);
		return send_error(conn, st, 413, msg);
	}
	if (st->no_memory)
		return send_error(conn, st, 503, "server busy: too much request data buffered, retry");

	req.method = method;
	req.path = url;
	req.body = st->body.data ? st->body.data : "";
	req.body_len = st->body.len;
	req.conn = conn;
	memset(&resp, 0, sizeof(resp));
	resp.status = 200;
	resp.content_type = "application/json";
	buf_init(&resp.body, BUF_UNLIMITED);
	atomic_fetch_add(&s->handling, 1);
	st->route->fn(s->cfg->ctx, &req, &resp);
	atomic_store(&s->last_activity, monotonic_ms());
	atomic_fetch_sub(&s->handling, 1);
	/* The body is not needed any more: free it before the response goes out. */
	body_release(s, st);
	ret = send_response(conn, st, &resp);
	buf_release(&resp.body);
	return ret;
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			      enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct reqstate *st = *con_cls;

	if (!st)
		return;
	if (s->cfg->observe)
		s->cfg->observe(s->cfg->ctx, st->route, st->status ? st->status : 499,
				st->bytes_in, st->status ? st->seconds : elapsed_since(&st->start));
	body_release(s, st);
	xfree(st);
	*con_cls = NULL;
	atomic_fetch_sub(&s->inflight, 1);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	/* libmicrohttpd reports client misbehaviour here (bad headers, resets): debug only. */
	log_vmsg(LOG_DEBUG, fmt, ap);
}

int http_parse_listen(const char *listen, struct sockaddr_storage *ss, struct errmsg *err)
{
	char host[256];
	const char *colon, *port_s;
	size_t hlen;
	unsigned long port;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (!listen || !*listen)
		return errmsg_set(err, -EINVAL, "empty listen address");
	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');

		if (!rb || rb[1] != ':')
			return errmsg_set(err, -EINVAL, "bad listen address '%s': want [V6]:PORT",
					  listen);
		hlen = (size_t)(rb - listen - 1);
		if (hlen >= sizeof(host))
			return errmsg_set(err, -EINVAL, "listen host too long");
		memcpy(host, listen + 1, hlen);
		host[hlen] = '\0';
		port_s = rb + 2;
	} else if ((colon = strrchr(listen, ':'))) {
		hlen = (size_t)(colon - listen);
		if (hlen >= sizeof(host))
			return errmsg_set(err, -EINVAL, "listen host too long");
		memcpy(host, listen, hlen);
		host[hlen] = '\0';
		port_s = colon + 1;
	} else {
		host[0] = '\0';
		port_s = listen;
	}
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (errno || end == port_s || *end || port > 65535)
		return errmsg_set(err, -EINVAL, "bad port in listen address '%s'", listen);
	if (!host[0] || !strcmp(host, "*") || !strcmp(host, "0.0.0.0")) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		sin->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	{
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
			sin->sin_family = AF_INET;
			sin->sin_port = htons((uint16_t)port);
			return 0;
		}
		memset(ss, 0, sizeof(*ss));
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
			sin6->sin6_family = AF_INET6;
			sin6->sin6_port = htons((uint16_t)port);
			return 0;
		}
	}
	return errmsg_set(err, -EINVAL, "bad host in listen address '%s': want an IP literal",
			  listen);
}

struct http_server *http_server_start(const struct http_config *cfg, struct errmsg *err)
{
	struct sockaddr_storage ss;
	struct http_server *s;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
			 MHD_USE_ERROR_LOG;
	unsigned threads = cfg->threads ? cfg->threads : 4;
	unsigned maxconn = cfg->max_connections ? cfg->max_connections : 256;
	unsigned timeout = cfg->timeout_sec ? cfg->timeout_sec : 60;

	if (http_parse_listen(cfg->listen, &ss, err) < 0)
		return NULL;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s = xcalloc(1, sizeof(*s));
	s->cfg = cfg;
	s->max_body = cfg->max_body ? cfg->max_body : HTTP_DEFAULT_MAX_BODY;
	s->body_budget = s->max_body < HTTP_MIN_BODY_BUDGET / 2 ? HTTP_MIN_BODY_BUDGET : 2 * s->max_body;
	atomic_init(&s->inflight, 0);
	atomic_init(&s->handling, 0);
	atomic_init(&s->last_activity, monotonic_ms());
	atomic_init(&s->buffered, 0);
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, access_handler, s,
				     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				     MHD_OPTION_THREAD_POOL_SIZE, threads,
				     MHD_OPTION_CONNECTION_LIMIT, maxconn,
				     MHD_OPTION_CONNECTION_TIMEOUT, timeout,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 << 10),
				     MHD_OPTION_NOTIFY_COMPLETED, request_completed, s,
				     MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
				     MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
				     MHD_OPTION_END);
	if (!s->daemon) {
		xfree(s);
		errmsg_set(err, -EADDRINUSE, "cannot listen on '%s' (address in use or not local?)",
			   cfg->listen);
		return NULL;
	}
	info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	return s;
}

unsigned http_server_port(const struct http_server *s)
{
	return s->port;
}

unsigned http_server_inflight(const struct http_server *s)
{
	return atomic_load(&((struct http_server *)s)->inflight);
}

void http_server_stop(struct http_server *s, int timeout_ms)
{
	int waited = 0;
	MHD_socket fd;

	if (!s)
		return;
	/* Stop accepting; requests already received (and their store writes) run to the end and
	 * their answers go out. Requests still receiving a body are waited for while their data
	 * keeps coming; MHD_stop_daemon() joins the workers, so a handler that is still running
	 * (a store write) always completes. */
	fd = MHD_quiesce_daemon(s->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	while (atomic_load(&s->inflight) > 0 && waited < timeout_ms) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (atomic_load(&s->handling) == 0 &&
		    monotonic_ms() - atomic_load(&s->last_activity) > HTTP_STOP_IDLE_MS)
			break;
		nanosleep(&ts, NULL);
		waited += 10;
	}
	MHD_stop_daemon(s->daemon);
	xfree(s);
}
