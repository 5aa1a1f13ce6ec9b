/* test_push.c: the pusher's queue stays within its byte bound while the server is down,
 * dropping (and counting) the oldest requests; stopping gives up in time and frees all. */
#include "agent/push.h"
#include "lib/alloc.h"
#include "test.h"

#include <time.h>

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

int main(void)
{
	RUN(test_bounded_while_down);
	RUN(test_bad_url);
	return test_summary();
}
