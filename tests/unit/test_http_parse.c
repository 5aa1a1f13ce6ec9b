/* test_http_parse.c: request heads (garbage refused at its first byte, heads split anywhere,
 * statuses of malformed ones), query arguments, chunked bodies. */
#include "lib/alloc.h"
#include "lib/buf.h"
#include "server/http_parse.h"
#include "test.h"

#include <errno.h>

static int scan_all(const char *s, size_t *end)
{
	struct http_head_scan sc;
	int rc;

	memset(&sc, 0, sizeof(sc));
	rc = http_head_scan(&sc, s, strlen(s));
	*end = sc.end;
	return rc;
}

static void test_scan(void)
{
	static const char head[] = "\r\nGET /render?query=a HTTP/1.1\r\nHost: x\r\n\r\nBODY";
	struct http_head_scan sc;
	size_t end, i;

	CHECK_EQ_INT(scan_all(head, &end), 0);
	CHECK_EQ_INT(end, sizeof(head) - 1 - 4);
	/* Byte by byte: the same end, found once the empty line is there. */
	memset(&sc, 0, sizeof(sc));
	for (i = 1; i <= sizeof(head) - 1; i++) {
		CHECK_EQ_INT(http_head_scan(&sc, head, i), 0);
		if (i < end)
			CHECK_EQ_INT(sc.end, 0);
	}
	CHECK_EQ_INT(sc.end, end);
	/* Garbage is refused before any newline. */
	CHECK_EQ_INT(scan_all("\x16\x03\x01", &end), -EBADMSG);
	CHECK_EQ_INT(scan_all("GARBAGE GARBAGE G", &end), -EBADMSG);
	CHECK_EQ_INT(scan_all("GET /a b HTTP/1.1", &end), -EBADMSG);
	CHECK_EQ_INT(scan_all("GE\tT / HTTP/1.1", &end), -EBADMSG);
	CHECK_EQ_INT(scan_all("ABCDEFGHIJKLMNOPQRSTUVWXYZ / HTTP/1.1", &end), -EBADMSG);
	CHECK_EQ_INT(scan_all("GET / HTTP/1.1\r\r", &end), -EBADMSG);
	/* A prefix that can still become a request is fine. */
	CHECK_EQ_INT(scan_all("GET /a HTT", &end), 0);
	CHECK_EQ_INT(end, 0);
	/* LF-only line ends. */
	CHECK_EQ_INT(scan_all("GET / HTTP/1.0\nA: b\n\n", &end), 0);
	CHECK_EQ_INT(end, 21);
}

static int parse(const char *s, struct http_head *h, char **keep)
{
	size_t end;
	int status;
	struct errmsg err;

	if (scan_all(s, &end) < 0 || !end)
		return -1;
	*keep = xstrndup(s, end);
	return http_head_parse(*keep, end, h, &status, &err) < 0 ? status : 0;
}

static void test_parse(void)
{
	struct http_head h;
	struct http_args a;
	char *b = NULL;

	CHECK_EQ_INT(parse("POST /ingest%2Fx?name=a.cpu%7Bk%3Dv%7D&x=1+2&flag HTTP/1.1\r\n"
			   "Host: x\r\nContent-Length:  12 \r\nExpect: 100-Continue\r\n\r\n", &h, &b), 0);
	CHECK_EQ_STR(h.method, "POST");
	CHECK_EQ_STR(h.path, "/ingest/x");
	CHECK_EQ_INT(h.has_length, 1);
	CHECK_EQ_INT(h.content_length, 12);
	CHECK_EQ_INT(h.keep_alive, 1);
	CHECK_EQ_INT(h.expect_continue, 1);
	CHECK_EQ_STR(http_head_get(&h, "content-length"), "12");
	CHECK_EQ_INT(http_args_parse(h.query, &a), 0);
	CHECK_EQ_STR(http_args_get(&a, "name"), "a.cpu{k=v}");
	CHECK_EQ_STR(http_args_get(&a, "x"), "1 2");
	CHECK_EQ_STR(http_args_get(&a, "flag"), "");
	CHECK(http_args_get(&a, "none") == NULL);
	http_args_release(&a);
	xfree(b);
	CHECK_EQ_INT(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &h, &b), 0);
	CHECK_EQ_INT(h.keep_alive, 1);
	xfree(b);
	CHECK_EQ_INT(parse("GET / HTTP/1.1\r\nConnection: x, close\r\n\r\n", &h, &b), 0);
	CHECK_EQ_INT(h.keep_alive, 0);
	xfree(b);
	/* Malformed heads and their statuses. */
	CHECK_EQ_INT(parse("GET / HTTP/2.0\r\n\r\n", &h, &b), 505);
	xfree(b);
	CHECK_EQ_INT(parse("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", &h, &b), 400);
	xfree(b);
	CHECK_EQ_INT(parse("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", &h, &b), 400);
	xfree(b);
	CHECK_EQ_INT(parse("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", &h, &b), 400);
	xfree(b);
	CHECK_EQ_INT(parse("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", &h, &b), 400);
	xfree(b);
	CHECK_EQ_INT(parse("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", &h, &b), 501);
	xfree(b);
	CHECK_EQ_INT(parse("GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", &h, &b), 417);
	xfree(b);
	CHECK_EQ_INT(parse("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", &h, &b), 400);
	xfree(b);
	CHECK_EQ_INT(parse("GET / HTTP/1.1\r\nA: \x01\r\n\r\n", &h, &b), 400);
	xfree(b);
	CHECK_EQ_INT(parse("GET x HTTP/1.1\r\n\r\n", &h, &b), 400);
	xfree(b);
	{
		struct buf many = BUF_INIT(BUF_UNLIMITED);
		int i;

		buf_puts(&many, "GET / HTTP/1.1\r\n");
		for (i = 0; i <= HTTP_MAX_HEADERS; i++)
			buf_printf(&many, "H%d: v\r\n", i);
		buf_puts(&many, "\r\n");
		CHECK_EQ_INT(parse(many.data, &h, &b), 431);
		xfree(b);
		buf_release(&many);
	}
}

static void test_chunked(void)
{
	static const char body[] = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	struct http_chunked c;
	struct buf out = BUF_INIT(100), small = BUF_INIT(8);
	size_t i;
	ssize_t n;
	int done = 0;

	memset(&c, 0, sizeof(c));
	n = http_chunked_feed(&c, body, sizeof(body) - 1, &out, &done);
	CHECK_EQ_INT(done, 1);
	CHECK_EQ_INT(n, sizeof(body) - 1 - 4); /* what follows the body is not consumed */
	CHECK_EQ_STR(out.data, "hello world");
	/* Byte by byte, the same. */
	buf_reset(&out);
	memset(&c, 0, sizeof(c));
	done = 0;
	for (i = 0; i < sizeof(body) - 1 - 4; i++)
		CHECK_EQ_INT(http_chunked_feed(&c, body + i, 1, &out, &done), 1);
	CHECK_EQ_INT(done, 1);
	CHECK_EQ_STR(out.data, "hello world");
	/* Past the buffer's maximum, malformed sizes and line ends. */
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(http_chunked_feed(&c, body, sizeof(body) - 1, &small, &done), -E2BIG);
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(http_chunked_feed(&c, "zz\r\n", 4, &out, &done), -EBADMSG);
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(http_chunked_feed(&c, "1\r\nab\r\n", 7, &out, &done), -EBADMSG);
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(http_chunked_feed(&c, "fffffffffffffffff\r\n", 19, &out, &done), -EBADMSG);
	buf_release(&out);
	buf_release(&small);
}

int main(void)
{
	RUN(test_scan);
	RUN(test_parse);
	RUN(test_chunked);
	return test_summary();
}
