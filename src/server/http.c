/* http.c: the HTTP/1.1 server of `scorch server` (see http.h): one epoll I/O thread for every
 * connection, worker pools for the handlers, the connection limits and deadlines. Parsing is
 * http_parse.c; routes live in ingest.c, render.c, api.c and server.c; the command that wires
 * them is src/cli/cmd_server.c.
 *
 * A connection is owned by the I/O thread, except while its request sits in a pool (queued or
 * running): then the worker owns the request fields and the I/O thread only notes that the
 * peer went away (`dead`); the worker hands it back through the done list and an eventfd. */
#include "server/http.h"
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/hash.h"
#include "lib/json.h"
#include "lib/quota.h"
#include "server/http_parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_BODY (64u << 20)
#define DEFAULT_MAX_CONN 1024
#define DEFAULT_MAX_CLIENT 128
#define DEFAULT_RESERVE 32
#define DEFAULT_HEADER_MS 10000
#define DEFAULT_IDLE_MS 30000
#define DEFAULT_MAX_HEAD (32u << 10)
#define DEFAULT_QUEUE 64
#define DEFAULT_WAIT_MS 10000
#define RESERVE_HEAD_MS 2000          /* a reserve connection's whole head */
#define RESERVE_MAX_HEAD 4096
#define SMALL_BODY (1u << 20)          /* bodies of routes whose pool has no quota */
#define CHUNK_STEP (1u << 20)          /* quota taken at a time for a chunked body */
#define READ_CHUNK (256u << 10)
#define READ_TURN (1u << 20)           /* body bytes read from one connection per loop turn */
/* At shutdown, requests whose bodies have not moved for this long are not waited for:
 * nothing of them was acknowledged, and a stalled client must not hold the stop. */
#define STOP_IDLE_MS 2000
#define SWEEP_MS 50

enum cstate {
	C_HEAD,     /* reading a request head, or idle between requests */
	C_WAIT_MEM, /* head read, waiting for its pool's quota to hold the body */
	C_BODY,     /* reading the body */
	C_QUEUED,   /* in a pool's queue */
	C_RUNNING,  /* a worker runs the handler */
	C_WRITE,    /* writing the response */
};

struct pool;

struct conn {
	struct http_server *srv;
	int fd;
	enum cstate state;
	uint32_t events;          /* registered with epoll (0: not registered) */
	uint64_t client;          /* key of the client address */
	int reserve;              /* admitted over a cap: HTTP_INLINE routes only */
	int refuse_status;        /* what the reserve answers other routes (429 or 503) */
	int close_after;          /* close once the response is out */
	int dead;                 /* peer gone while a worker holds the connection */
	int read_closed;          /* the peer shut its sending side */
	int started;              /* a request is in progress (counted in inflight) */
	int64_t accepted_ms;
	int64_t head_deadline;    /* the whole head must be in by then */
	int64_t idle_deadline;    /* body, response or keep-alive progress */
	int64_t wait_deadline;    /* memory wait or queue wait */
	int64_t last_data;        /* last body byte (for the stop) */
	/* input */
	char *in;
	size_t in_len, in_cap;
	struct http_head_scan scan;
	/* the request */
	char *headbuf;
	struct http_head head;
	struct http_args args;
	const struct http_route *route;
	struct pool *pool;        /* NULL for HTTP_INLINE */
	struct buf body;
	struct http_chunked chunk;
	int body_chunked;
	uint64_t body_left;       /* Content-Length bytes still to read */
	uint64_t need;            /* quota bytes wanted while waiting */
	uint64_t reserved;        /* quota bytes held for the body */
	uint64_t resp_held;       /* quota bytes held for the response until it is sent */
	int status;
	size_t bytes_in;
	int64_t start_ns;
	double seconds;
	/* the response */
	struct http_response resp;
	char hdr[1024];
	size_t hdr_len, hdr_off, body_off;
	int head_only;
	int interim;              /* "100 Continue" being written (body reading waits) */
	/* lists */
	struct conn *prev, *next;   /* every connection */
	struct conn *qprev, *qnext; /* a pool's queue or memory wait list */
	struct conn *done_next;     /* the done list, or the closed list */
};

struct pool {
	struct http_server *srv;
	const struct http_pool *cfg;
	size_t index;
	pthread_t *threads;
	unsigned nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct conn *qhead, *qtail; /* queued requests (under lock) */
	unsigned queued, running;
	int stop;
	struct conn *whead, *wtail; /* waiting for body memory (I/O thread only) */
	unsigned waiting;
};

struct http_server {
	const struct http_config *cfg;
	size_t max_body, max_head;
	unsigned max_conn, max_client, reserve_max;
	unsigned header_ms, idle_ms;
	unsigned port;
	int lfd, epfd, wakefd;
	int listening;
	int64_t listen_paused_until;
	pthread_t io;
	struct pool *pools;
	size_t npools;
	uint64_t seed;
	struct u64map clients;      /* client key -> open connections */
	struct conn *conns;         /* every connection (I/O thread only) */
	unsigned nconns, nreserve;
	atomic_uint inflight;
	pthread_mutex_t done_lock;
	struct conn *done;
	struct conn *closed;        /* closed this loop turn, freed at its end (I/O thread) */
	atomic_int stopping;
	atomic_llong stop_deadline;
	atomic_int io_exited;
	int64_t last_sweep;
	/* stats */
	atomic_uint st_conns, st_reserve;
	atomic_ullong st_accepted, st_refused, st_evicted, st_timeouts, st_bad, st_busy, st_over;
	char listen_tag, wake_tag;
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void wake(struct http_server *s)
{
	uint64_t one = 1;
	ssize_t n = write(s->wakefd, &one, sizeof(one));

	(void)n;
}

static void quota_notify(void *arg)
{
	wake(arg);
}

/* ---- helpers for handlers ----------------------------------------------------------------- */

const char *http_arg(const struct http_request *req, const char *key)
{
	struct conn *c = req->conn;

	return http_args_get(&c->args, key);
}

const char *http_header(const struct http_request *req, const char *name)
{
	struct conn *c = req->conn;

	return http_head_get(&c->head, name);
}

static void body_free(struct conn *c)
{
	buf_release(&c->body);
	if (c->reserved && c->pool && c->pool->cfg->quota)
		quota_give(c->pool->cfg->quota, c->reserved);
	c->reserved = 0;
}

void http_request_drop_body(const struct http_request *req)
{
	body_free(req->conn);
}

int http_error(struct http_response *resp, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	struct budget *b;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The message is written even when the request's budget is spent (often why it fails). */
	b = budget_pause();
	buf_release(&resp->body);
	/* An error body is small; if even this fails the status alone still tells the story. */
	if (buf_puts(&resp->body, "{\"error\":") < 0 || json_str(&resp->body, msg) < 0 ||
	    buf_puts(&resp->body, "}\n") < 0)
		buf_reset(&resp->body);
	budget_resume(b);
	resp->status = status;
	resp->content_type = "application/json";
	resp->content_encoding = NULL;
	resp->content_disposition = NULL;
	resp->body_static = NULL;
	resp->body_static_len = 0;
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

static int authorized(const struct http_server *s, const struct http_head *h)
{
	const char *tok = s->cfg->auth_token, *v;
	static const char prefix[] = "Bearer ";

	if (!tok)
		return 1;
	v = http_head_get(h, "Authorization");
	if (!v || strncasecmp(v, prefix, sizeof(prefix) - 1))
		return 0;
	v += sizeof(prefix) - 1;
	return http_secret_equal(v, strlen(v), tok, strlen(tok));
}

static const char *reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default: return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
	}
}

/* ---- client addresses --------------------------------------------------------------------- */

static uint64_t client_key(struct http_server *s, const struct sockaddr_storage *ss)
{
	uint8_t a[17] = { 0 };
	uint64_t h;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		memcpy(a, &s6->sin6_addr, 16);
		a[16] = 6;
		/* An IPv4-mapped address is its IPv4 client. */
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memset(a, 0, sizeof(a));
			memcpy(a, (const uint8_t *)&s6->sin6_addr + 12, 4);
			a[16] = 4;
		}
	} else if (ss->ss_family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		a[16] = 4;
	}
	/* Seeded per start, so that nobody can pick addresses that share a counter. */
	h = hash_bytes(a, sizeof(a), s->seed);
	return h == 0 || h == ~0ULL ? 2 : h;
}

static unsigned client_count(struct http_server *s, uint64_t key)
{
	uint64_t *v = u64map_get(&s->clients, key);

	return v ? (unsigned)*v : 0;
}

static void client_add(struct http_server *s, uint64_t key, int delta)
{
	uint64_t *v = u64map_get(&s->clients, key);
	uint64_t n = (v ? *v : 0) + (uint64_t)(int64_t)delta;

	if (!n || (int64_t)n < 0)
		u64map_remove(&s->clients, key);
	else
		u64map_put(&s->clients, key, n);
}

/* ---- connections -------------------------------------------------------------------------- */

static void set_events(struct conn *c, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = c };

	if (c->fd < 0 || c->events == ev)
		return;
	if (!c->events && ev)
		epoll_ctl(c->srv->epfd, EPOLL_CTL_ADD, c->fd, &e);
	else if (!ev)
		epoll_ctl(c->srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	else
		epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &e);
	c->events = ev;
}

static uint32_t read_events(const struct conn *c)
{
	return c->read_closed ? 0 : EPOLLIN | EPOLLRDHUP;
}

/* Forget the request (its head, arguments, body and response). */
static void request_reset(struct conn *c)
{
	xfree(c->headbuf);
	c->headbuf = NULL;
	memset(&c->head, 0, sizeof(c->head));
	http_args_release(&c->args);
	body_free(c);
	buf_release(&c->resp.body);
	if (c->resp_held && c->pool && c->pool->cfg->quota)
		quota_give(c->pool->cfg->quota, c->resp_held);
	c->resp_held = 0;
	memset(&c->resp, 0, sizeof(c->resp));
	memset(&c->scan, 0, sizeof(c->scan));
	memset(&c->chunk, 0, sizeof(c->chunk));
	c->route = NULL;
	c->pool = NULL;
	c->body_chunked = 0;
	c->body_left = 0;
	c->need = 0;
	c->status = 0;
	c->bytes_in = 0;
	c->hdr_len = c->hdr_off = c->body_off = 0;
	c->head_only = 0;
	c->interim = 0;
	if (c->started) {
		c->started = 0;
		atomic_fetch_sub(&c->srv->inflight, 1);
	}
}

static void wait_unlink(struct conn *c)
{
	struct pool *p = c->pool;

	if (c->state != C_WAIT_MEM || !p)
		return;
	if (c->qprev)
		c->qprev->qnext = c->qnext;
	else
		p->whead = c->qnext;
	if (c->qnext)
		c->qnext->qprev = c->qprev;
	else
		p->wtail = c->qprev;
	c->qprev = c->qnext = NULL;
	p->waiting--;
}

/* Remove a queued request from its pool; 0 when a worker took it already. */
static int queue_unlink(struct conn *c)
{
	struct pool *p = c->pool;
	int ok = 0;

	pthread_mutex_lock(&p->lock);
	if (c->state == C_QUEUED) {
		if (c->qprev)
			c->qprev->qnext = c->qnext;
		else
			p->qhead = c->qnext;
		if (c->qnext)
			c->qnext->qprev = c->qprev;
		else
			p->qtail = c->qprev;
		c->qprev = c->qnext = NULL;
		p->queued--;
		ok = 1;
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

static void conn_free(struct conn *c)
{
	request_reset(c);
	xfree(c->in);
	xfree(c);
}

/* Close a connection owned by the I/O thread. */
static void conn_close(struct conn *c)
{
	struct http_server *s = c->srv;

	if (c->state == C_WAIT_MEM)
		wait_unlink(c);
	if (c->state == C_QUEUED && !queue_unlink(c))
		c->state = C_RUNNING; /* a worker has it: it comes back through the done list */
	if (c->fd >= 0) {
		set_events(c, 0);
		close(c->fd);
		c->fd = -1;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	s->nconns--;
	atomic_store(&s->st_conns, s->nconns);
	if (c->reserve) {
		s->nreserve--;
		atomic_store(&s->st_reserve, s->nreserve);
	}
	client_add(s, c->client, -1);
	if (c->state == C_RUNNING) {
		c->dead = 1; /* freed when the worker hands it back */
		return;
	}
	/* Freed at the end of the loop turn: callers up the stack (and events of this turn) may
	 * still look at it, and see fd < 0. */
	c->done_next = s->closed;
	s->closed = c;
}

static void free_closed(struct http_server *s)
{
	struct conn *c;

	while ((c = s->closed)) {
		s->closed = c->done_next;
		conn_free(c);
	}
}

/* ---- responses ------------------------------------------------------------------------------ */

static void observe(struct conn *c)
{
	const struct http_config *cfg = c->srv->cfg;

	if (cfg->observe && c->started)
		cfg->observe(cfg->ctx, c->route, c->status, c->bytes_in, c->seconds);
}

static void request_finished(struct conn *c);
static void conn_input(struct conn *c);

static const char *resp_data(const struct conn *c)
{
	return c->resp.body_static ? c->resp.body_static : c->resp.body.data;
}

static size_t resp_len(const struct conn *c)
{
	return c->resp.body_static ? c->resp.body_static_len : c->resp.body.len;
}

/* Write what is pending; returns 1 when everything went out, 0 to wait, -1 on error. */
static int flush_out(struct conn *c)
{
	while (c->hdr_off < c->hdr_len || (!c->head_only && c->body_off < resp_len(c))) {
		struct iovec iov[2];
		int n = 0;
		ssize_t w;

		if (c->hdr_off < c->hdr_len) {
			iov[n].iov_base = c->hdr + c->hdr_off;
			iov[n++].iov_len = c->hdr_len - c->hdr_off;
		}
		if (!c->head_only && c->body_off < resp_len(c)) {
			iov[n].iov_base = (char *)resp_data(c) + c->body_off;
			iov[n++].iov_len = resp_len(c) - c->body_off;
		}
		w = writev(c->fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		c->idle_deadline = now_ms() + c->srv->idle_ms;
		if ((size_t)w <= c->hdr_len - c->hdr_off) {
			c->hdr_off += (size_t)w;
		} else {
			w -= (ssize_t)(c->hdr_len - c->hdr_off);
			c->hdr_off = c->hdr_len;
			c->body_off += (size_t)w;
		}
	}
	return 1;
}

static void do_write(struct conn *c)
{
	int rc = flush_out(c);

	if (rc < 0) {
		conn_close(c);
		return;
	}
	if (!rc) {
		set_events(c, EPOLLOUT);
		return;
	}
	if (c->interim) {
		/* "100 Continue" is out: now the body. */
		c->interim = 0;
		c->hdr_len = c->hdr_off = 0;
		c->state = C_BODY;
		set_events(c, read_events(c));
		conn_input(c);
		return;
	}
	request_finished(c);
}

/* Queue the response in c->resp and start writing it. */
static void respond(struct conn *c)
{
	struct http_server *s = c->srv;
	struct http_response *r = &c->resp;
	int keep = !c->close_after && c->head.keep_alive && !atomic_load(&s->stopping) &&
		   !c->read_closed && !c->reserve;
	int n;

	if (!r->status)
		r->status = 200;
	c->status = r->status;
	c->seconds = (double)(now_ns() - c->start_ns) / 1e9;
	if (!keep)
		c->close_after = 1;
	n = snprintf(c->hdr, sizeof(c->hdr),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s%s%s%s%s%s%s",
		     r->status, reason(r->status), r->content_type ? r->content_type : "application/json",
		     resp_len(c),
		     r->content_encoding ? "Content-Encoding: " : "",
		     r->content_encoding ? r->content_encoding : "", r->content_encoding ? "\r\n" : "",
		     r->content_disposition ? "Content-Disposition: " : "",
		     r->content_disposition ? r->content_disposition : "",
		     r->content_disposition ? "\r\n" : "",
		     r->cache_control ? "Cache-Control: " : "", r->cache_control ? r->cache_control : "");
	if (r->cache_control && n > 0 && (size_t)n < sizeof(c->hdr))
		n += snprintf(c->hdr + n, sizeof(c->hdr) - (size_t)n, "\r\n");
	if (r->status == 401 && n > 0 && (size_t)n < sizeof(c->hdr))
		n += snprintf(c->hdr + n, sizeof(c->hdr) - (size_t)n, "WWW-Authenticate: Bearer\r\n");
	if (r->retry_after && n > 0 && (size_t)n < sizeof(c->hdr))
		n += snprintf(c->hdr + n, sizeof(c->hdr) - (size_t)n, "Retry-After: %u\r\n",
			      r->retry_after);
	if (n > 0 && (size_t)n < sizeof(c->hdr))
		n += snprintf(c->hdr + n, sizeof(c->hdr) - (size_t)n, "Connection: %s\r\n\r\n",
			      keep ? "keep-alive" : "close");
	if (n <= 0 || (size_t)n >= sizeof(c->hdr)) {
		conn_close(c);
		return;
	}
	c->hdr_len = (size_t)n;
	c->hdr_off = c->body_off = 0;
	c->head_only = c->head.method && !strcmp(c->head.method, "HEAD");
	c->state = C_WRITE;
	c->idle_deadline = now_ms() + s->idle_ms;
	set_events(c, 0);
	do_write(c);
}

/* Answer with an error now; the connection closes after it unless the request is complete. */
static void respond_error(struct conn *c, int status, int close_after, unsigned retry_after,
			  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void respond_error(struct conn *c, int status, int close_after, unsigned retry_after,
			  const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->started) {
		c->started = 1;
		c->start_ns = now_ns();
		atomic_fetch_add(&c->srv->inflight, 1);
	}
	buf_release(&c->resp.body);
	memset(&c->resp, 0, sizeof(c->resp));
	buf_init(&c->resp.body, 4096);
	http_error(&c->resp, status, "%s", msg);
	c->resp.retry_after = retry_after;
	if (close_after)
		c->close_after = 1;
	respond(c);
}

static void request_finished(struct conn *c)
{
	struct http_server *s = c->srv;

	observe(c);
	request_reset(c);
	if (c->close_after || atomic_load(&s->stopping)) {
		conn_close(c);
		return;
	}
	c->state = C_HEAD;
	c->head_deadline = 0; /* set when the next request's first byte arrives */
	c->idle_deadline = now_ms() + s->idle_ms;
	if (c->in_cap > 16384 && c->in_len <= 4096) {
		/* Give back what a chunked body used. */
		char *p = try_realloc(c->in, 4096);

		if (p) {
			c->in = p;
			c->in_cap = 4096;
		}
	}
	set_events(c, read_events(c));
	if (c->in_len)
		conn_input(c); /* a pipelined request */
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static void run_inline(struct conn *c)
{
	struct http_request req;

	req.method = c->head.method;
	req.path = c->head.path;
	req.body = c->body.data ? c->body.data : "";
	req.body_len = c->body.len;
	req.conn = c;
	buf_init(&c->resp.body, BUF_UNLIMITED);
	c->resp.status = 200;
	c->resp.content_type = "application/json";
	c->route->fn(c->srv->cfg->ctx, &req, &c->resp);
	body_free(c);
	respond(c);
}

static void dispatch(struct conn *c)
{
	struct pool *p = c->pool;

	if (!p) {
		run_inline(c);
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (p->queued >= (p->cfg->queue ? p->cfg->queue : DEFAULT_QUEUE)) {
		pthread_mutex_unlock(&p->lock);
		atomic_fetch_add(&c->srv->st_busy, 1);
		body_free(c);
		respond_error(c, 503, 0, 2, "server busy: the %s queue is full, retry later",
			      p->cfg->name);
		return;
	}
	c->state = C_QUEUED;
	c->qnext = NULL;
	c->qprev = p->qtail;
	if (p->qtail)
		p->qtail->qnext = c;
	else
		p->qhead = c;
	p->qtail = c;
	p->queued++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	c->wait_deadline = now_ms() + (p->cfg->max_wait_ms ? p->cfg->max_wait_ms : DEFAULT_WAIT_MS);
	/* Nothing is read while the request is handled (pipelined bytes wait in the kernel);
	 * hang-ups still show (EPOLLHUP/EPOLLERR are always reported). */
	set_events(c, EPOLLRDHUP);
}

/* ---- bodies --------------------------------------------------------------------------------- */

/* Take quota for n more body bytes; 0 when it is not free now. */
static int reserve_body(struct conn *c, uint64_t n)
{
	struct quota *q = c->pool ? c->pool->cfg->quota : NULL;

	if (!q || !n)
		return 1;
	if (!quota_try(q, n))
		return 0;
	c->reserved += n;
	return 1;
}

static void wait_memory(struct conn *c, uint64_t need)
{
	struct pool *p = c->pool;

	c->need = need;
	c->state = C_WAIT_MEM;
	c->qnext = NULL;
	c->qprev = p->wtail;
	if (p->wtail)
		p->wtail->qnext = c;
	else
		p->whead = c;
	p->wtail = c;
	p->waiting++;
	c->wait_deadline = now_ms() + (p->cfg->max_wait_ms ? p->cfg->max_wait_ms : DEFAULT_WAIT_MS);
	set_events(c, c->read_closed ? 0 : EPOLLRDHUP);
}

static void body_start(struct conn *c)
{
	struct http_server *s = c->srv;

	c->state = C_BODY;
	c->idle_deadline = now_ms() + s->idle_ms;
	c->last_data = now_ms();
	if (c->head.expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

		memcpy(c->hdr, cont, sizeof(cont) - 1);
		c->hdr_len = sizeof(cont) - 1;
		c->hdr_off = 0;
		c->interim = 1;
		c->head_only = 1;
		c->state = C_WRITE; /* until it is out (EPOLLOUT), then C_BODY */
		set_events(c, 0);
		do_write(c);
		return;
	}
	set_events(c, read_events(c));
	conn_input(c);
}

/* Retry the connections waiting for their pool's quota, oldest first (a large body is not
 * overtaken forever by small ones). */
static void retry_waiters(struct http_server *s)
{
	size_t i;

	for (i = 0; i < s->npools; i++) {
		struct pool *p = &s->pools[i];

		while (p->whead) {
			struct conn *c = p->whead;

			if (!reserve_body(c, c->need))
				break;
			wait_unlink(c);
			c->need = 0;
			body_start(c);
		}
	}
}

/* Consume body bytes from c->in (chunked, or what arrived with the head). Returns 1 when the
 * body is complete, 0 for more, -1 when the connection was answered or closed. */
static int body_from_input(struct conn *c)
{
	size_t used;
	int err = 0, done = 0;

	if (!c->in_len)
		return c->body_chunked ? 0 : c->body_left == 0;
	if (c->body_chunked) {
		ssize_t n;

		/* Quota for what this input can add, taken in steps. */
		if (c->pool && c->pool->cfg->quota && c->body.len + c->in_len > c->reserved) {
			uint64_t step = c->body.len + c->in_len - c->reserved;

			step = (step + CHUNK_STEP - 1) / CHUNK_STEP * CHUNK_STEP;
			if (c->reserved + step > c->body.max + CHUNK_STEP)
				step = c->body.max + CHUNK_STEP - c->reserved;
			if (!reserve_body(c, step)) {
				wait_memory(c, step);
				return -1;
			}
		}
		n = http_chunked_feed(&c->chunk, c->in, c->in_len, &c->body, &done);
		if (n < 0) {
			err = (int)n;
		} else {
			used = (size_t)n;
			c->bytes_in += used;
			memmove(c->in, c->in + used, c->in_len - used);
			c->in_len -= used;
		}
	} else {
		used = c->in_len < c->body_left ? c->in_len : (size_t)c->body_left;
		err = buf_append(&c->body, c->in, used);
		if (!err) {
			c->bytes_in += used;
			c->body_left -= used;
			memmove(c->in, c->in + used, c->in_len - used);
			c->in_len -= used;
			done = c->body_left == 0;
		}
	}
	if (err == -E2BIG) {
		body_free(c);
		respond_error(c, 413, 1, 0, "request body larger than %zu bytes (limit 'max-body')",
			      c->body.max);
		return -1;
	}
	if (err == -EBADMSG) {
		atomic_fetch_add(&c->srv->st_bad, 1);
		body_free(c);
		respond_error(c, 400, 1, 0, "malformed chunked body");
		return -1;
	}
	if (err) {
		body_free(c);
		atomic_fetch_add(&c->srv->st_busy, 1);
		respond_error(c, 503, 1, 2, "server busy: cannot buffer the body, retry later");
		return -1;
	}
	return done;
}

/* Read body bytes from the socket: at most READ_TURN bytes per turn of the loop, so that one
 * fast upload does not keep the I/O thread from other connections (epoll reports the socket
 * again while bytes wait). */
static void read_body(struct conn *c)
{
	size_t turn = 0;
	int rc;

	for (;;) {
		ssize_t n;

		rc = body_from_input(c);
		if (rc < 0)
			return;
		if (rc > 0) {
			dispatch(c);
			return;
		}
		if (!c->body_chunked) {
			/* Straight into the body: Content-Length was reserved up front. */
			size_t room = c->body_left < READ_CHUNK ? (size_t)c->body_left : READ_CHUNK;
			char *dst = buf_reserve(&c->body, room);

			if (!dst) {
				body_free(c);
				atomic_fetch_add(&c->srv->st_busy, 1);
				respond_error(c, 503, 1, 2, "server busy: cannot buffer the body, retry later");
				return;
			}
			n = read(c->fd, dst, room);
			if (n > 0) {
				buf_commit(&c->body, (size_t)n);
				c->body_left -= (size_t)n;
				c->bytes_in += (size_t)n;
			}
		} else {
			if (c->in_cap < READ_CHUNK) {
				char *p = try_realloc(c->in, READ_CHUNK);

				if (!p) {
					conn_close(c);
					return;
				}
				c->in = p;
				c->in_cap = READ_CHUNK;
			}
			n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
			if (n > 0)
				c->in_len += (size_t)n;
		}
		if (n > 0) {
			c->idle_deadline = now_ms() + c->srv->idle_ms;
			c->last_data = now_ms();
			if (!c->body_chunked && c->body_left == 0) {
				dispatch(c);
				return;
			}
			turn += (size_t)n;
			if (turn >= READ_TURN) {
				/* Chunked bytes read are decoded now: epoll will not report them. */
				if (c->body_chunked && body_from_input(c) > 0)
					dispatch(c);
				return;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* The peer closed (or failed) before the body was complete: nothing to answer. */
		conn_close(c);
		return;
	}
}

/* ---- heads ---------------------------------------------------------------------------------- */

static const struct http_route *find_route(const struct http_config *cfg, const char *method,
					   const char *path, int *path_known)
{
	size_t i;

	*path_known = 0;
	for (i = 0; i < cfg->nroutes; i++) {
		const char *p = cfg->routes[i].path;
		size_t n = strlen(p);

		if (n > 0 && p[n - 1] == '*' ? strncmp(p, path, n - 1) : strcmp(p, path))
			continue;
		*path_known = 1;
		if (!strcmp(cfg->routes[i].method, method) ||
		    (!strcmp(method, "HEAD") && !strcmp(cfg->routes[i].method, "GET")))
			return &cfg->routes[i];
	}
	return NULL;
}

/* A complete head is at the start of c->in: parse it and start the request. */
static void head_complete(struct conn *c, size_t len)
{
	struct http_server *s = c->srv;
	const struct http_config *cfg = s->cfg;
	struct errmsg err;
	int status, known, has_body;
	uint64_t limit;

	c->started = 1;
	c->start_ns = now_ns();
	atomic_fetch_add(&s->inflight, 1);
	c->headbuf = try_malloc(len + 1);
	if (!c->headbuf) {
		conn_close(c);
		return;
	}
	memcpy(c->headbuf, c->in, len);
	c->headbuf[len] = '\0';
	memmove(c->in, c->in + len, c->in_len - len);
	c->in_len -= len;
	if (http_head_parse(c->headbuf, len, &c->head, &status, &err) < 0) {
		atomic_fetch_add(&s->st_bad, 1);
		respond_error(c, status, 1, 0, "%s", err.msg);
		return;
	}
	has_body = c->head.chunked || (c->head.has_length && c->head.content_length > 0);
	if (http_args_parse(c->head.query, &c->args) < 0) {
		respond_error(c, 503, 1, 2, "server busy: out of memory");
		return;
	}
	c->route = find_route(cfg, c->head.method, c->head.path, &known);
	if (!authorized(s, &c->head)) {
		respond_error(c, 401, has_body, 0, "missing or wrong bearer token");
		return;
	}
	if (!c->route) {
		respond_error(c, known ? 405 : 404, has_body, 0, "%s",
			      known ? "method not allowed" : "no such endpoint");
		return;
	}
	if (c->reserve && c->route->pool != HTTP_INLINE) {
		atomic_fetch_add(&s->st_over, 1);
		if (c->refuse_status == 429)
			respond_error(c, 429, 1, 2, "too many connections from this address "
				      "(limit 'max-client-connections'), retry later");
		else
			respond_error(c, 503, 1, 2, "server at its connection limit "
				      "(limit 'max-connections'), retry later");
		return;
	}
	if (atomic_load(&s->stopping)) {
		respond_error(c, 503, 1, 1, "server shutting down");
		return;
	}
	c->pool = c->route->pool >= 0 && (size_t)c->route->pool < s->npools ?
		  &s->pools[c->route->pool] : NULL;
	limit = c->pool && c->pool->cfg->quota ? s->max_body : SMALL_BODY;
	if (!has_body) {
		dispatch(c);
		return;
	}
	if (c->head.has_length && c->head.content_length > limit) {
		respond_error(c, 413, 1, 0, "request body larger than %llu bytes (limit '%s')",
			      (unsigned long long)limit, limit == s->max_body ? "max-body" : "body");
		return;
	}
	buf_init(&c->body, (size_t)limit);
	c->body_chunked = c->head.chunked;
	c->body_left = c->head.chunked ? 0 : c->head.content_length;
	if (c->pool && c->pool->cfg->quota) {
		uint64_t want = c->head.chunked ? CHUNK_STEP : c->head.content_length;
		uint64_t total;

		quota_get(c->pool->cfg->quota, NULL, &total, NULL, NULL);
		if (total && want > total) {
			respond_error(c, 413, 1, 0, "request body larger than the %llu bytes all "
				      "requests may hold (limit '%s')", (unsigned long long)total,
				      c->pool->cfg->quota_name ? c->pool->cfg->quota_name : "memory");
			return;
		}
		if (!reserve_body(c, want)) {
			wait_memory(c, want);
			return;
		}
	}
	/* Small bodies get their buffer at once; large ones grow (mremap, no copies). */
	if (!c->head.chunked && c->head.content_length <= (4u << 20) &&
	    !buf_reserve(&c->body, (size_t)c->head.content_length)) {
		respond_error(c, 503, 1, 2, "server busy: cannot buffer the body, retry later");
		return;
	}
	body_start(c);
}

/* Bytes are in c->in while reading a head: check them, and start the request when the head is
 * complete. */
static void head_input(struct conn *c)
{
	struct http_server *s = c->srv;
	size_t max = c->reserve ? RESERVE_MAX_HEAD : s->max_head;

	if (!c->head_deadline)
		c->head_deadline = now_ms() + (c->reserve ? RESERVE_HEAD_MS : s->header_ms);
	if (http_head_scan(&c->scan, c->in, c->in_len) < 0) {
		atomic_fetch_add(&s->st_bad, 1);
		c->in_len = 0;
		respond_error(c, 400, 1, 0, "malformed request: not an HTTP/1.x request line");
		return;
	}
	if (c->scan.end) {
		head_complete(c, c->scan.end);
		return;
	}
	if (c->in_len >= max) {
		atomic_fetch_add(&s->st_bad, 1);
		c->in_len = 0;
		respond_error(c, 431, 1, 0, "request head larger than %zu bytes", max);
	}
}

/* Process buffered input for the current state. */
static void conn_input(struct conn *c)
{
	if (c->state == C_HEAD && c->in_len)
		head_input(c);
	else if (c->state == C_BODY)
		read_body(c);
}

static void conn_readable(struct conn *c)
{
	struct http_server *s = c->srv;

	if (c->state == C_BODY) {
		read_body(c);
		return;
	}
	if (c->state != C_HEAD)
		return;
	for (;;) {
		size_t max = c->reserve ? RESERVE_MAX_HEAD : s->max_head;
		ssize_t n;

		if (c->in_len >= c->in_cap) {
			size_t ncap = c->in_cap ? c->in_cap * 2 : 4096;
			char *p;

			if (ncap > max + 1)
				ncap = max + 1;
			if (ncap <= c->in_len) {
				head_input(c);
				return;
			}
			p = try_realloc(c->in, ncap);
			if (!p) {
				conn_close(c);
				return;
			}
			c->in = p;
			c->in_cap = ncap;
		}
		n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
		if (n > 0) {
			c->in_len += (size_t)n;
			head_input(c);
			if (c->state != C_HEAD || c->fd < 0)
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* Closed by the peer: nothing of a request to answer. */
		conn_close(c);
		return;
	}
}

static void conn_event(struct conn *c, uint32_t ev)
{
	if (c->fd < 0)
		return; /* closed earlier in this loop turn */
	if (ev & (EPOLLHUP | EPOLLERR)) {
		conn_close(c);
		return;
	}
	if (ev & EPOLLOUT && c->state == C_WRITE) {
		do_write(c);
		return;
	}
	if (ev & EPOLLIN) {
		conn_readable(c);
		if (c->fd < 0 || c->dead)
			return;
	}
	if ((ev & EPOLLRDHUP) && !c->read_closed) {
		/* The peer will send nothing more: an unfinished head or body never completes; a
		 * request in progress is still answered. */
		c->read_closed = 1;
		if (c->state == C_HEAD || c->state == C_BODY || c->state == C_WAIT_MEM) {
			conn_close(c);
			return;
		}
		set_events(c, c->state == C_WRITE ? EPOLLOUT : 0);
	}
}

/* ---- accepting ------------------------------------------------------------------------------ */

/* The oldest reserve connection still reading its head (to make room), or NULL. */
static struct conn *oldest_reserve(struct http_server *s)
{
	struct conn *c, *best = NULL;

	for (c = s->conns; c; c = c->next)
		if (c->reserve && c->state == C_HEAD && (!best || c->accepted_ms < best->accepted_ms))
			best = c;
	return best;
}

static void refuse_now(int fd, int status, const char *msg)
{
	char body[256], b[512];
	int bn = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", msg);
	int n = snprintf(b, sizeof(b),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
			 "Retry-After: 2\r\nConnection: close\r\n\r\n%s", status, reason(status), bn, body);
	ssize_t w = write(fd, b, (size_t)n);

	(void)w;
	close(fd);
}

static void accept_all(struct http_server *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		uint64_t key;
		int over_total, over_client, one = 1;
		struct conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: stop accepting for a moment (the kernel's
				 * backlog holds the clients) instead of spinning. */
				struct epoll_event e = { 0 };

				epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, &e);
				s->listening = 0;
				s->listen_paused_until = now_ms() + 100;
			}
			return;
		}
		atomic_fetch_add(&s->st_accepted, 1);
		key = client_key(s, &ss);
		over_total = s->nconns - s->nreserve >= s->max_conn;
		over_client = client_count(s, key) >= s->max_client;
		if ((over_total || over_client) && s->nreserve >= s->reserve_max) {
			struct conn *old = oldest_reserve(s);

			if (!old) {
				atomic_fetch_add(&s->st_refused, 1);
				refuse_now(fd, over_total ? 503 : 429, "too many connections, retry later");
				continue;
			}
			atomic_fetch_add(&s->st_evicted, 1);
			conn_close(old);
		}
		c = try_malloc(sizeof(*c));
		if (!c) {
			atomic_fetch_add(&s->st_refused, 1);
			refuse_now(fd, 503, "server out of memory, retry later");
			continue;
		}
		memset(c, 0, sizeof(*c));
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->srv = s;
		c->fd = fd;
		c->state = C_HEAD;
		c->client = key;
		c->reserve = over_total || over_client;
		c->refuse_status = over_total ? 503 : 429;
		c->accepted_ms = now_ms();
		/* The first head's deadline runs from the connection, not from its first byte. */
		c->head_deadline = c->accepted_ms + (c->reserve ? RESERVE_HEAD_MS : s->header_ms);
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->nconns++;
		atomic_store(&s->st_conns, s->nconns);
		if (c->reserve) {
			s->nreserve++;
			atomic_store(&s->st_reserve, s->nreserve);
		}
		client_add(s, key, 1);
		set_events(c, EPOLLIN | EPOLLRDHUP);
		/* The request often arrives with the connection: serve it without a round trip. */
		conn_readable(c);
	}
}

/* ---- the I/O loop --------------------------------------------------------------------------- */

static void process_done(struct http_server *s)
{
	struct conn *list, *c;

	pthread_mutex_lock(&s->done_lock);
	list = s->done;
	s->done = NULL;
	pthread_mutex_unlock(&s->done_lock);
	while ((c = list)) {
		list = c->done_next;
		c->done_next = NULL;
		if (c->dead) {
			conn_free(c);
			continue;
		}
		c->state = C_WRITE;
		respond(c);
	}
}

static void sweep(struct http_server *s, int64_t now)
{
	struct conn *c, *next;
	int stopping = atomic_load(&s->stopping);

	for (c = s->conns; c; c = next) {
		next = c->next;
		switch (c->state) {
		case C_HEAD:
			if (stopping && !c->in_len) {
				conn_close(c);
			} else if (c->head_deadline && now > c->head_deadline &&
				   (c->in_len || !c->idle_deadline)) {
				/* A head that did not arrive in time, however many bytes trickled. */
				atomic_fetch_add(&s->st_timeouts, 1);
				c->in_len = 0;
				respond_error(c, 408, 1, 0, "request head not received within %u ms "
					      "(limit 'header-timeout')",
					      c->reserve ? RESERVE_HEAD_MS : s->header_ms);
			} else if (!c->in_len && c->idle_deadline && now > c->idle_deadline) {
				conn_close(c); /* idle keep-alive connection */
			} else if (stopping) {
				conn_close(c); /* a head still arriving: nothing acknowledged */
			}
			break;
		case C_WAIT_MEM:
			if (stopping || now > c->wait_deadline) {
				atomic_fetch_add(&s->st_busy, 1);
				wait_unlink(c);
				body_free(c);
				respond_error(c, 503, 1, 5, "server busy: the %s shared by concurrent "
					      "requests (limit '%s') stayed full, retry later",
					      "memory", c->pool->cfg->quota_name ?
					      c->pool->cfg->quota_name : "memory");
			}
			break;
		case C_BODY:
			if (stopping && now - c->last_data > STOP_IDLE_MS) {
				conn_close(c);
			} else if (now > c->idle_deadline) {
				atomic_fetch_add(&s->st_timeouts, 1);
				body_free(c);
				respond_error(c, 408, 1, 0, "request body stalled for %u ms", s->idle_ms);
			}
			break;
		case C_QUEUED:
			if (now > c->wait_deadline && queue_unlink(c)) {
				atomic_fetch_add(&s->st_busy, 1);
				body_free(c);
				respond_error(c, 503, 0, 2, "server busy: waited too long for a %s "
					      "worker, retry later", c->pool->cfg->name);
			}
			break;
		case C_WRITE:
			if (now > c->idle_deadline)
				conn_close(c);
			break;
		case C_RUNNING:
			break;
		}
	}
}

static int io_idle(struct http_server *s)
{
	return s->conns == NULL;
}

static void *io_thread(void *arg)
{
	struct http_server *s = arg;
	struct epoll_event evs[256];

	/* The I/O thread does little work per event but must do it at once (health checks):
	 * ahead of the workers and other programs on a busy machine, where permitted (root or
	 * CAP_SYS_NICE; otherwise it stays at the process's nice value). */
	setpriority(PRIO_PROCESS, (id_t)gettid(), -10);

	for (;;) {
		int n, i, stopping = atomic_load(&s->stopping);
		int64_t now;

		if (stopping) {
			if (s->listening) {
				epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
				s->listening = 0;
			}
			if (s->lfd >= 0) {
				close(s->lfd);
				s->lfd = -1;
			}
			if (io_idle(s) || now_ms() > atomic_load(&s->stop_deadline))
				break;
		}
		n = epoll_wait(s->epfd, evs, 256, SWEEP_MS);
		now = now_ms();
		for (i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &s->listen_tag) {
				accept_all(s);
			} else if (p == &s->wake_tag) {
				uint64_t v;
				ssize_t r = read(s->wakefd, &v, sizeof(v));

				(void)r;
			} else {
				conn_event(p, evs[i].events);
			}
		}
		process_done(s);
		retry_waiters(s);
		free_closed(s);
		if (!s->listening && s->lfd >= 0 && !stopping && now >= s->listen_paused_until) {
			struct epoll_event e = { .events = EPOLLIN, .data.ptr = &s->listen_tag };

			if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &e) == 0)
				s->listening = 1;
		}
		if (now - s->last_sweep >= SWEEP_MS || stopping) {
			s->last_sweep = now;
			sweep(s, now);
		}
		free_closed(s);
	}
	atomic_store(&s->io_exited, 1);
	return NULL;
}

/* ---- workers -------------------------------------------------------------------------------- */

static void run_handler(struct pool *p, struct conn *c)
{
	const struct http_pool *pc = p->cfg;
	struct http_request req;
	struct budget b;
	int64_t wait_end;

	req.method = c->head.method;
	req.path = c->head.path;
	req.body = c->body.data ? c->body.data : "";
	req.body_len = c->body.len;
	req.conn = c;
	wait_end = now_ms() + (pc->max_wait_ms ? pc->max_wait_ms : DEFAULT_WAIT_MS);
again:
	buf_init(&c->resp.body, BUF_UNLIMITED);
	c->resp.status = 200;
	c->resp.content_type = "application/json";
	memset(&b, 0, sizeof(b));
	b.max_bytes = pc->max_bytes;
	b.mem_name = pc->mem_name;
	b.quota = pc->quota;
	b.quota_name = pc->quota_name;
	b.quota_other = c->reserved;
	b.deadline_ms = pc->time_ms ? now_ms() + pc->time_ms : 0;
	b.time_name = pc->time_name;
	budget_begin(&b);
	c->route->fn(p->srv->cfg->ctx, &req, &c->resp);
	/* A read-only handler that found the shared memory taken by other requests runs again
	 * once some of it is given back (no lock is held here), until the pool's wait is up. */
	if (b.failed == -EBUSY && pc->rerun_busy && pc->quota) {
		uint64_t used0, used, need = b.need, peak = b.peak;

		budget_end(&b);
		quota_get(pc->quota, &used0, NULL, NULL, NULL);
		do {
			struct timespec ts = { 0, 5 * 1000000L };

			nanosleep(&ts, NULL);
			quota_get(pc->quota, &used, NULL, NULL, NULL);
		} while (used >= used0 && used && now_ms() < wait_end);
		if ((used < used0 || !used) && now_ms() < wait_end) {
			buf_release(&c->resp.body);
			memset(&c->resp, 0, sizeof(c->resp));
			goto again;
		}
		budget_begin(&b); /* ended below; the failure is answered as it was */
		b.failed = -EBUSY;
		b.need = need;
		b.peak = peak;
	}
	/* A handler that failed because its budget ran out (out of memory, past its time)
	 * without saying so: the budget's own answer, naming the limit. */
	if (b.failed && c->resp.status == 500) {
		struct errmsg why;

		budget_error(&why, b.failed);
		http_error(&c->resp, 503, "%s", why.msg);
		c->resp.retry_after = b.failed == -EBUSY ? 2 : 0;
	}
	budget_end(&b);
	body_free(c);
	/* The answer exists until it is sent: it stays in the pool's memory until then. */
	if (pc->quota && c->resp.body.cap) {
		c->resp_held = c->resp.body.cap;
		quota_force(pc->quota, c->resp_held);
	}
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	struct http_server *s = p->srv;

	if (p->cfg->nice)
		setpriority(PRIO_PROCESS, (id_t)gettid(), p->cfg->nice);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct conn *c;

		while (!p->qhead && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->qhead)
			break;
		c = p->qhead;
		p->qhead = c->qnext;
		if (p->qhead)
			p->qhead->qprev = NULL;
		else
			p->qtail = NULL;
		c->qnext = c->qprev = NULL;
		p->queued--;
		p->running++;
		c->state = C_RUNNING;
		pthread_mutex_unlock(&p->lock);

		run_handler(p, c);

		pthread_mutex_lock(&s->done_lock);
		c->done_next = s->done;
		s->done = c;
		pthread_mutex_unlock(&s->done_lock);
		wake(s);
		pthread_mutex_lock(&p->lock);
		p->running--;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- listening ------------------------------------------------------------------------------ */

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

int http_listen_is_loopback(const char *listen)
{
	struct sockaddr_storage ss;

	if (http_parse_listen(listen, &ss, NULL) < 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && ((const uint8_t *)a)[12] == 127);
	}
	return 0;
}

static int open_listener(const char *addr, unsigned *port, struct errmsg *err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1, e;

	if (http_parse_listen(addr, &ss, err) < 0)
		return -EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errmsg_set(err, -errno, "cannot create a socket: %s", strerror(errno));
	/* SO_REUSEADDR only lets a restart bind over connections in TIME_WAIT; it never lets two
	 * servers share the port (that is SO_REUSEPORT, deliberately not set). */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sl = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
		e = errno;
		close(fd);
		if (e == EADDRINUSE)
			return errmsg_set(err, -EADDRINUSE, "cannot listen on '%s': address already in "
					  "use (another scorch server, or another program, listens "
					  "there)", addr);
		if (e == EADDRNOTAVAIL)
			return errmsg_set(err, -e, "cannot listen on '%s': not an address of this "
					  "machine", addr);
		return errmsg_set(err, -e, "cannot listen on '%s': %s", addr, strerror(e));
	}
	if (listen(fd, SOMAXCONN) < 0) {
		e = errno;
		close(fd);
		return errmsg_set(err, -e, "cannot listen on '%s': %s", addr, strerror(e));
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						 ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* Enough descriptors for every connection the limits allow (the soft limit is raised up to
 * the hard one). */
static int raise_nofile(unsigned want, struct errmsg *err)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) < 0)
		return 0;
	if (r.rlim_cur >= want)
		return 0;
	if (r.rlim_max != RLIM_INFINITY && r.rlim_max < want)
		return errmsg_set(err, -EMFILE, "the open files limit (%llu) is below the %u "
				  "connections allowed: lower --max-connections or raise 'ulimit -n'",
				  (unsigned long long)r.rlim_max, want);
	r.rlim_cur = want;
	setrlimit(RLIMIT_NOFILE, &r);
	return 0;
}

struct http_server *http_server_start(const struct http_config *cfg, struct errmsg *err)
{
	struct http_server *s = xcalloc(1, sizeof(*s));
	struct epoll_event e;
	size_t i;
	unsigned t;

	s->cfg = cfg;
	s->lfd = s->epfd = s->wakefd = -1;
	s->max_body = cfg->max_body ? cfg->max_body : DEFAULT_MAX_BODY;
	s->max_head = cfg->max_head ? cfg->max_head : DEFAULT_MAX_HEAD;
	s->max_conn = cfg->max_connections ? cfg->max_connections : DEFAULT_MAX_CONN;
	s->max_client = cfg->max_client_connections ? cfg->max_client_connections : DEFAULT_MAX_CLIENT;
	s->reserve_max = cfg->reserve ? cfg->reserve : DEFAULT_RESERVE;
	s->header_ms = cfg->header_timeout_ms ? cfg->header_timeout_ms : DEFAULT_HEADER_MS;
	s->idle_ms = cfg->idle_timeout_ms ? cfg->idle_timeout_ms : DEFAULT_IDLE_MS;
	u64map_init(&s->clients);
	pthread_mutex_init(&s->done_lock, NULL);
	if (getrandom(&s->seed, sizeof(s->seed), 0) != sizeof(s->seed))
		s->seed = (uint64_t)now_ns() ^ (uint64_t)getpid();
	if (raise_nofile(s->max_conn + s->reserve_max + 64, err) < 0)
		goto fail;
	s->lfd = open_listener(cfg->listen, &s->port, err);
	if (s->lfd < 0) {
		s->lfd = -1;
		goto fail;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->epfd < 0 || s->wakefd < 0) {
		errmsg_set(err, -errno, "cannot create the event loop: %s", strerror(errno));
		goto fail;
	}
	e.events = EPOLLIN;
	e.data.ptr = &s->listen_tag;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &e);
	s->listening = 1;
	e.events = EPOLLIN;
	e.data.ptr = &s->wake_tag;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wakefd, &e);
	s->npools = cfg->npools;
	s->pools = xcalloc(s->npools + 1, sizeof(*s->pools));
	for (i = 0; i < s->npools; i++) {
		struct pool *p = &s->pools[i];

		p->srv = s;
		p->cfg = &cfg->pools[i];
		p->index = i;
		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->cond, NULL);
		if (p->cfg->quota) {
			p->cfg->quota->notify = quota_notify;
			p->cfg->quota->notify_arg = s;
		}
		p->nthreads = p->cfg->threads ? p->cfg->threads : 1;
		p->threads = xcalloc(p->nthreads, sizeof(*p->threads));
		for (t = 0; t < p->nthreads; t++) {
			if (pthread_create(&p->threads[t], NULL, worker, p)) {
				p->nthreads = t;
				errmsg_set(err, -EAGAIN, "cannot start the %s worker threads",
					   p->cfg->name);
				goto fail;
			}
		}
	}
	if (pthread_create(&s->io, NULL, io_thread, s)) {
		errmsg_set(err, -EAGAIN, "cannot start the I/O thread");
		goto fail;
	}
	return s;
fail:
	for (i = 0; s->pools && i < s->npools; i++) {
		struct pool *p = &s->pools[i];

		if (!p->srv)
			continue;
		pthread_mutex_lock(&p->lock);
		p->stop = 1;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		for (t = 0; t < p->nthreads; t++)
			pthread_join(p->threads[t], NULL);
		xfree(p->threads);
		if (p->cfg->quota)
			p->cfg->quota->notify = NULL;
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
	}
	xfree(s->pools);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->wakefd >= 0)
		close(s->wakefd);
	u64map_release(&s->clients);
	pthread_mutex_destroy(&s->done_lock);
	xfree(s);
	return NULL;
}

unsigned http_server_port(const struct http_server *s)
{
	return s->port;
}

unsigned http_server_inflight(const struct http_server *s)
{
	return atomic_load(&((struct http_server *)s)->inflight);
}

void http_server_stats(struct http_server *s, struct http_stats *st)
{
	st->connections = atomic_load(&s->st_conns);
	st->reserve = atomic_load(&s->st_reserve);
	st->inflight = atomic_load(&s->inflight);
	st->accepted = atomic_load(&s->st_accepted);
	st->refused_connections = atomic_load(&s->st_refused);
	st->evicted = atomic_load(&s->st_evicted);
	st->head_timeouts = atomic_load(&s->st_timeouts);
	st->bad_requests = atomic_load(&s->st_bad);
	st->busy = atomic_load(&s->st_busy);
	st->over_cap = atomic_load(&s->st_over);
}

void http_server_pool_stats(struct http_server *s, size_t i, struct http_pool_stats *st)
{
	struct pool *p;

	memset(st, 0, sizeof(*st));
	if (i >= s->npools)
		return;
	p = &s->pools[i];
	pthread_mutex_lock(&p->lock);
	st->queued = p->queued;
	st->running = p->running;
	pthread_mutex_unlock(&p->lock);
	/* Read without the I/O thread's knowledge: a snapshot for metrics. */
	st->waiting_memory = __atomic_load_n(&p->waiting, __ATOMIC_RELAXED);
	if (p->cfg->quota)
		quota_get(p->cfg->quota, &st->quota_used, &st->quota_total, &st->quota_peak, NULL);
}

void http_server_stop(struct http_server *s, int timeout_ms)
{
	struct conn *c;
	size_t i;
	unsigned t;

	if (!s)
		return;
	atomic_store(&s->stop_deadline, now_ms() + timeout_ms);
	atomic_store(&s->stopping, 1);
	wake(s);
	pthread_join(s->io, NULL);
	/* The I/O thread is gone: whatever is left (requests past the deadline) is closed here.
	 * Queued requests are dropped (nothing of them was acknowledged); a running handler
	 * completes before its pool's threads are joined. */
	for (i = 0; i < s->npools; i++) {
		struct pool *p = &s->pools[i];

		pthread_mutex_lock(&p->lock);
		p->stop = 1;
		while ((c = p->qhead)) {
			p->qhead = c->qnext;
			c->qnext = c->qprev = NULL;
			p->queued--;
			c->state = C_HEAD; /* back to the I/O side: closed below */
		}
		p->qtail = NULL;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	for (i = 0; i < s->npools; i++) {
		struct pool *p = &s->pools[i];

		for (t = 0; t < p->nthreads; t++)
			pthread_join(p->threads[t], NULL);
	}
	process_done(s); /* handlers that finished after the I/O thread left */
	while ((c = s->conns)) {
		if (c->state == C_WRITE)
			flush_out(c); /* a last try, without waiting */
		c->state = c->state == C_RUNNING ? C_HEAD : c->state;
		conn_close(c);
	}
	free_closed(s);
	for (i = 0; i < s->npools; i++) {
		struct pool *p = &s->pools[i];

		xfree(p->threads);
		if (p->cfg->quota)
			p->cfg->quota->notify = NULL;
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
	}
	xfree(s->pools);
	if (s->lfd >= 0)
		close(s->lfd);
	close(s->epfd);
	close(s->wakefd);
	u64map_release(&s->clients);
	pthread_mutex_destroy(&s->done_lock);
	xfree(s);
}
