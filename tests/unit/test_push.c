/* test_push.c: the pusher's queue stays within its byte bound while the server is down,
 * dropping (and counting) the oldest requests; stopping gives up in time and frees all;
 * delivery failing and recovering is reported once each; a server that never answers cannot
 * hold a stop. */
#include "agent/push.h"
#include "lib/alloc.h"
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void test_bounded_while_down(void)
{
	struct pusher_opts po;
	struct pusher_stats st, fin;
	struct pusher *p = NULL;
	struct errmsg err = { "" };
	struct timespec t0, t1;
	int i;

	memset(&po, 0, sizeof(po));
	po.server_url = "http://127.0.0.1:1"; /* nothing listens on port 1 */
	po.max_queue_bytes = 100;
	po.timeout_ms = 500;
	CHECK_EQ_INT(pusher_start(&po, &p, &err), 0);
	if (!p)
		return;
	for (i = 0; i < 10; i++) {
		char *body = xmalloc(30);

		memset(body, 'x', 30);
		pusher_enqueue(p, xasprintf("/ingest?n=%d", i), NULL, body, 30);
		pusher_get_stats(p, &st);
		CHECK(st.queued_bytes <= 100);
	}
	pusher_get_stats(p, &st);
	CHECK_EQ_INT(st.sent, 0);
	/* 10 requests: at most 3 fit, one more may be in flight; the rest were dropped */
	CHECK(st.queued <= 3);
	CHECK(st.dropped >= 6);
	CHECK(st.queued + st.dropped >= 9);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pusher_stop(p, 300, &fin);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_EQ_INT(fin.sent, 0);
	CHECK(fin.queued + fin.dropped + fin.rejected >= 9);
	/* gives up near the flush deadline (one attempt may still be under way) */
	CHECK(t1.tv_sec - t0.tv_sec < 20);
}

static void test_bad_url(void)
{
	struct pusher_opts po;
	struct pusher *p = NULL;
	struct errmsg err = { "" };

	memset(&po, 0, sizeof(po));
	po.server_url = "ftp://example";
	CHECK(pusher_start(&po, &p, &err) < 0);
	CHECK(p == NULL);
	CHECK(strstr(err.msg, "http://") != NULL);
}

/* A tiny HTTP server on loopback: answers 200 to every request, or (blackhole) reads them and
 * never answers. Bound at once (connections are refused) and listening once started. */
struct tiny {
	int fd, port;
	atomic_int blackhole, stop, requests;
	int held[64];
	int nheld;
	pthread_t thread;
};

static void *tiny_serve(void *arg)
{
	struct tiny *t = arg;

	while (!atomic_load(&t->stop)) {
		char b[65536];
		int c = accept(t->fd, NULL, NULL);
		ssize_t n;

		if (c < 0)
			continue;
		/* One request per connection is enough for the pusher (it reconnects). */
		n = read(c, b, sizeof(b));
		if (n > 0)
			atomic_fetch_add(&t->requests, 1);
		if (atomic_load(&t->blackhole) && t->nheld < 64) {
			t->held[t->nheld++] = c;
			continue;
		}
		if (n > 0) {
			static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

			n = write(c, ok, sizeof(ok) - 1);
		}
		close(c);
	}
	return NULL;
}

static int tiny_bind(struct tiny *t)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	struct timeval tv = { 0, 200000 };

	memset(t, 0, sizeof(*t));
	t->fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (t->fd < 0 || bind(t->fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	getsockname(t->fd, (struct sockaddr *)&a, &al);
	t->port = ntohs(a.sin_port);
	setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* accept() wakes to stop */
	return 0;
}

static void tiny_start(struct tiny *t)
{
	listen(t->fd, 16);
	pthread_create(&t->thread, NULL, tiny_serve, t);
}

static void tiny_stop(struct tiny *t)
{
	int i;

	atomic_store(&t->stop, 1);
	pthread_join(t->thread, NULL);
	for (i = 0; i < t->nheld; i++)
		close(t->held[i]);
	close(t->fd);
}

struct states {
	atomic_int failing, recovered;
	atomic_ullong queued_at_failure;
};

static void on_state(void *arg, int failing, const struct pusher_stats *st)
{
	struct states *s = arg;

	if (failing) {
		atomic_fetch_add(&s->failing, 1);
		atomic_store(&s->queued_at_failure, st->queued);
	} else {
		atomic_fetch_add(&s->recovered, 1);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void enqueue_one(struct pusher *p)
{
	char *body = xmalloc(16);

	memset(body, 'x', 16);
	pusher_enqueue(p, xstrdup("/ingest?name=t"), NULL, body, 16);
}

static void test_state_reports(void)
{
	struct tiny t;
	struct states st = { 0 };
	struct pusher_opts po;
	struct pusher_stats ps;
	struct pusher *p = NULL;
	struct errmsg err = { "" };
	char url[64];
	double t0;

	if (tiny_bind(&t) < 0)
		SKIP("cannot bind a loopback socket");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", t.port);
	memset(&po, 0, sizeof(po));
	po.server_url = url;
	po.on_state = on_state;
	po.on_state_arg = &st;
	CHECK_EQ_INT(pusher_start(&po, &p, &err), 0);
	if (!p)
		return;
	/* Refused: one report, however many retries (1 s, then 2 s apart). */
	enqueue_one(p);
	enqueue_one(p);
	t0 = now_s();
	while (!atomic_load(&st.failing) && now_s() - t0 < 5)
		usleep(20000);
	CHECK_EQ_INT(atomic_load(&st.failing), 1);
	CHECK(atomic_load(&st.queued_at_failure) >= 1);
	usleep(1500000);
	pusher_get_stats(p, &ps);
	CHECK(ps.failed_attempts >= 2);
	CHECK_EQ_INT(atomic_load(&st.failing), 1);
	/* The server comes up: one recovery report, both requests delivered. */
	tiny_start(&t);
	t0 = now_s();
	while (!atomic_load(&st.recovered) && now_s() - t0 < 8)
		usleep(20000);
	CHECK_EQ_INT(atomic_load(&st.recovered), 1);
	t0 = now_s();
	do {
		pusher_get_stats(p, &ps);
		usleep(20000);
	} while (ps.sent < 2 && now_s() - t0 < 5);
	CHECK_EQ_INT(ps.sent, 2);
	CHECK_EQ_INT(ps.failed_attempts, 0);
	/* A server that accepts and never answers cannot hold a stop (timeout_ms is 10 s). */
	atomic_store(&t.blackhole, 1);
	enqueue_one(p);
	t0 = now_s();
	while (atomic_load(&t.requests) < 3 && now_s() - t0 < 5)
		usleep(20000);
	CHECK_EQ_INT(atomic_load(&t.requests), 3);
	t0 = now_s();
	pusher_stop(p, 500, &ps);
	CHECK(now_s() - t0 < 2.0);
	CHECK_EQ_INT(ps.queued, 1);
	CHECK_EQ_INT(atomic_load(&st.failing), 1); /* the aborted attempt is not a new failure */
	tiny_stop(&t);
}

int main(void)
{
	RUN(test_bounded_while_down);
	RUN(test_bad_url);
	RUN(test_state_reports);
	return test_summary();
}
