/* fuzz_http.c: the HTTP/1.x request parser of `scorch server` (http_parse.h) on hostile bytes:
 * the incremental head scan (fed in two pieces it must agree with one pass), the head parser,
 * query arguments, and the chunked body decoder (two pieces must decode like one). The first
 * input byte chooses the split point. */
#include "lib/alloc.h"
#include "lib/buf.h"
#include "server/http_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void chunked(const char *in, size_t len, size_t split)
{
	struct http_chunked a, b;
	struct buf one = BUF_INIT(1 << 20), two = BUF_INIT(1 << 20);
	ssize_t n1, n2 = 0, n3;
	int done1 = 0, done2 = 0;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	n1 = http_chunked_feed(&a, in, len, &one, &done1);
	if (split > len)
		split = len;
	n3 = http_chunked_feed(&b, in, split, &two, &done2);
	if (n3 >= 0 && !done2)
		n2 = http_chunked_feed(&b, in + n3, len - (size_t)n3, &two, &done2);
	if (n1 >= 0 && n3 >= 0 && n2 >= 0) {
		/* Same bytes, same outcome, whatever the split. */
		if (done1 != done2 || one.len != two.len || (one.len && memcmp(one.data, two.data, one.len)))
			abort();
		if ((size_t)n1 > len || one.len > len)
			abort();
	}
	buf_release(&one);
	buf_release(&two);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_head_scan s1, s2;
	struct http_head h;
	struct http_args args;
	struct errmsg err;
	size_t split;
	char *buf;
	int r1, r2, status;

	if (!size)
		return 0;
	split = data[0] % (size + 1);
	data++;
	size--;
	memset(&s1, 0, sizeof(s1));
	memset(&s2, 0, sizeof(s2));
	r1 = http_head_scan(&s1, (const char *)data, size);
	r2 = http_head_scan(&s2, (const char *)data, split < size ? split : size);
	if (r2 == 0)
		r2 = http_head_scan(&s2, (const char *)data, size);
	if (r1 != r2 || (r1 == 0 && s1.end != s2.end) || s1.end > size)
		abort();
	if (r1 < 0 || !s1.end) {
		chunked((const char *)data, size, split);
		return 0;
	}
	buf = xmalloc(s1.end + 1);
	memcpy(buf, data, s1.end);
	buf[s1.end] = '\0';
	if (http_head_parse(buf, s1.end, &h, &status, &err) == 0) {
		if (!h.method || !h.path || !h.query || h.nheaders > HTTP_MAX_HEADERS || status)
			abort();
		if (h.chunked && h.has_length)
			abort();
		if (http_args_parse(h.query, &args) == 0) {
			if (args.n > HTTP_MAX_ARGS)
				abort();
			http_args_get(&args, "name");
			http_args_release(&args);
		}
		http_head_get(&h, "Content-Type");
		if (h.chunked)
			chunked((const char *)data + s1.end, size - s1.end, split);
	} else if (status < 400 || status > 599 || !err.msg[0]) {
		abort();
	}
	xfree(buf);
	return 0;
}
