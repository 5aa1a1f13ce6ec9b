/* test_lib.c: the small library modules: bounded buffers, u64map, strtab, JSON escaping,
 * allocation accounting and failure injection. */
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/buf.h"
#include "lib/hash.h"
#include "lib/json.h"
#include "lib/quota.h"
#include "lib/strtab.h"
#include "lib/utf8.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

static void test_buf_max(void)
{
	struct buf b = BUF_INIT(8);

	CHECK_EQ_INT(buf_puts(&b, "12345678"), 0);
	CHECK_EQ_INT(buf_putc(&b, '9'), -E2BIG);
	CHECK_EQ_INT(b.len, 8);
	CHECK_EQ_STR(b.data, "12345678");
	buf_reset(&b);
	CHECK_EQ_INT(buf_printf(&b, "%d-%s", 42, "x"), 0);
	CHECK_EQ_STR(b.data, "42-x");
	CHECK_EQ_INT(buf_printf(&b, "%0300d", 1), -E2BIG);
	CHECK_EQ_STR(b.data, "42-x");
	buf_release(&b);
}

static void test_buf_long_printf(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	int i;

	for (i = 0; i < 1000; i++)
		CHECK_EQ_INT(buf_printf(&b, "%0500d", i), 0);
	CHECK_EQ_INT(b.len, 500000);
	CHECK(b.data[499999] == '9');
	buf_release(&b);
}

static void test_buf_read_file(void)
{
	char path[] = "/tmp/scorch-test-buf.XXXXXX";
	int fd = mkstemp(path);
	struct buf b = BUF_INIT(BUF_UNLIMITED), small = BUF_INIT(3);

	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, "hello", 5), 5);
	close(fd);
	CHECK_EQ_INT(buf_read_file(&b, path), 0);
	CHECK_EQ_STR(b.data, "hello");
	CHECK_EQ_INT(buf_read_file(&small, path), -E2BIG);
	CHECK_EQ_INT(buf_read_file(&b, "/nonexistent/x"), -ENOENT);
	CHECK_EQ_INT(write_file_atomic(path, "abc", 3), 0);
	buf_reset(&b);
	CHECK_EQ_INT(buf_read_file(&b, path), 0);
	CHECK_EQ_STR(b.data, "abc");
	unlink(path);
	buf_release(&b);
	buf_release(&small);
}

/* hash_bytes: every length up to three blocks and every bit of the input counts, the seed
 * counts, trailing zero bytes count (the length is part of the hash), and stack-like strings
 * spread evenly over the buckets of a table. */
static void test_hash_bytes(void)
{
	unsigned char buf[64];
	static unsigned counts[1024];
	size_t len, bit, i, worst = 0, bad = 0;
	char s[128];

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	CHECK(hash_bytes(buf, 40, 1) == hash_bytes(buf, 40, 1));
	CHECK(hash_bytes(buf, 40, 1) != hash_bytes(buf, 40, 2));
	CHECK(hash_bytes(NULL, 0, 3) == hash_bytes(buf, 0, 3));
	for (len = 1; len <= 48; len++) {
		uint64_t base = hash_bytes(buf, len, 9);

		memset(s, 0, sizeof(s));
		memcpy(s, buf, len);
		if (hash_bytes(s, len + 1, 9) == base) /* one more zero byte */
			bad++;
		for (bit = 0; bit < len * 8; bit++) {
			uint64_t h;

			buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
			h = hash_bytes(buf, len, 9);
			buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
			if (h == base)
				bad++;
			/* about half of the output bits change */
			if (__builtin_popcountll(h ^ base) < 12 || __builtin_popcountll(h ^ base) > 52)
				bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
	for (i = 0; i < 200000; i++) {
		int n = snprintf(s, sizeof(s), "main;run_batch;worker_%zu;parse_input;frame_%zu", i % 997,
				 i / 997);

		counts[hash_bytes(s, (size_t)n, 0x5eed) & 1023]++;
	}
	for (i = 0; i < 1024; i++) {
		size_t d = counts[i] > 195 ? counts[i] - 195 : 195 - counts[i];

		if (d > worst)
			worst = d;
	}
	/* 195 per bucket on average, sd ~14: 6 sd is far off for any of 1024 buckets */
	CHECK(worst < 84);
}

static void test_u64map(void)
{
	struct u64map m;
	uint64_t k, v, sum = 0, *p;
	size_t it = 0;
	int i;

	u64map_init(&m);
	CHECK(u64map_get(&m, 5) == NULL);
	for (i = 1; i <= 10000; i++)
		u64map_put(&m, (uint64_t)i * 7919, (uint64_t)i);
	CHECK_EQ_INT(m.count, 10000);
	p = u64map_get(&m, 7919 * 500);
	CHECK(p && *p == 500);
	for (i = 1; i <= 10000; i += 2)
		CHECK_EQ_INT(u64map_remove(&m, (uint64_t)i * 7919), 1);
	CHECK_EQ_INT(u64map_remove(&m, 7919), 0);
	CHECK_EQ_INT(m.count, 5000);
	/* Reinsert over tombstones. */
	for (i = 1; i <= 10000; i += 2)
		u64map_put(&m, (uint64_t)i * 7919, 1);
	while (u64map_next(&m, &it, &k, &v))
		sum += v;
	CHECK_EQ_INT(m.count, 10000);
	CHECK_EQ_INT(sum, 5000 + (2 + 10000) / 2 * 5000);
	u64map_release(&m);
}

static void test_strtab(void)
{
	struct strtab *t = strtab_new();
	char big[100000];
	uint32_t a, b, c, d;
	int i;

	CHECK_EQ_INT(strtab_intern(t, ""), 0);
	a = strtab_intern(t, "alpha");
	b = strtab_intern(t, "beta");
	CHECK(a != b);
	CHECK_EQ_INT(strtab_intern(t, "alpha"), a);
	CHECK_EQ_STR(strtab_get(t, b), "beta");
	CHECK_EQ_INT(strtab_find(t, "beta", 4), b);
	CHECK_EQ_INT(strtab_find(t, "gamma", 5), UINT32_MAX);
	CHECK_EQ_STR(strtab_get(t, 99999), "");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	c = strtab_intern(t, big);
	d = strtab_intern(t, "after-big");
	CHECK_EQ_INT(strtab_len(t, c), sizeof(big) - 1);
	CHECK_EQ_STR(strtab_get(t, d), "after-big");
	for (i = 0; i < 20000; i++) {
		char s[32];

		snprintf(s, sizeof(s), "s%d", i);
		CHECK_EQ_INT(strtab_intern(t, s), strtab_intern(t, s));
	}
	/* Strings keep their addresses as the table grows. */
	CHECK_EQ_STR(strtab_get(t, a), "alpha");
	CHECK_EQ_INT(strtab_count(t), 20005);
	strtab_free(t);
}

static void test_json(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);

	json_str(&b, "a\"b\\c\n\t\x01</script>");
	CHECK_EQ_STR(b.data, "\"a\\\"b\\\\c\\n\\t\\u0001</script>\"");
	buf_reset(&b);
	json_str(&b, "caf\xc3\xa9 \xff bad");
	CHECK_EQ_STR(b.data, "\"caf\xc3\xa9 \\ufffd bad\"");
	buf_reset(&b);
	json_str_len(&b, "\xe2\x82", 2); /* truncated sequence */
	CHECK_EQ_STR(b.data, "\"\\ufffd\\ufffd\"");
	buf_release(&b);
}

static void test_alloc(void)
{
	uint64_t before = alloc_live_bytes();
	void *p = xmalloc(1000), *q;

	CHECK(alloc_live_bytes() >= before + 1000);
	CHECK(alloc_peak_bytes() >= alloc_live_bytes());
	xfree(p);
	CHECK_EQ_INT(alloc_live_bytes(), before);
	alloc_fail_after(2);
	q = try_malloc(10);
	CHECK(q != NULL);
	CHECK(try_malloc(10) == NULL);
	p = try_malloc(10); /* the injected failure happened once only */
	CHECK(p != NULL);
	alloc_fail_after(0);
	xfree(p);
	xfree(q);
}

static void test_quota(void)
{
	struct quota q;
	uint64_t used, total, peak, refused;

	quota_init(&q, 100);
	CHECK(quota_try(&q, 60));
	CHECK(!quota_try(&q, 41));
	CHECK(quota_try(&q, 40));
	quota_give(&q, 60);
	quota_force(&q, 70); /* memory that exists already may pass the total */
	quota_get(&q, &used, &total, &peak, &refused);
	CHECK_EQ_INT(used, 110);
	CHECK_EQ_INT(total, 100);
	CHECK_EQ_INT(peak, 110);
	CHECK_EQ_INT(refused, 1);
	CHECK(!quota_try(&q, 1));
	quota_give(&q, 110);
	CHECK(quota_try(&q, 100));
	quota_release_all(&q);
}

/* The heap of a unit of work is measured per thread and held to its cap and quota. */
static void test_budget(void)
{
	struct quota q;
	struct budget b, inner;
	struct errmsg err;
	void *p, *big;

	CHECK_EQ_INT(budget_check(), 0); /* no budget: nothing to enforce */
	quota_init(&q, 4u << 20);
	memset(&b, 0, sizeof(b));
	b.max_bytes = 3u << 20;
	b.mem_name = "request-memory";
	b.quota = &q;
	b.quota_name = "ingest-memory";
	budget_begin(&b);
	p = xmalloc(1u << 20);
	CHECK_EQ_INT(budget_check(), 0);
	CHECK(budget_used() >= (1u << 20));
	/* try_malloc is refused before the allocation happens. */
	big = try_malloc(4u << 20);
	CHECK(big == NULL);
	CHECK_EQ_INT(budget_failed(), -ENOMEM);
	CHECK_EQ_INT(budget_error(&err, -ENOMEM), -ENOMEM);
	CHECK(strstr(err.msg, "3 MiB") && strstr(err.msg, "'request-memory'"));
	/* Sticky: later checks fail the same way. */
	CHECK_EQ_INT(budget_check(), -ENOMEM);
	xfree(p);
	budget_end(&b);
	/* Quota taken by another request: -EBUSY, the work could fit once it is back. */
	CHECK(quota_try(&q, 3u << 20));
	memset(&b, 0, sizeof(b));
	b.quota = &q;
	b.quota_name = "ingest-memory";
	budget_begin(&b);
	p = xmalloc(2u << 20);
	CHECK_EQ_INT(budget_check(), -EBUSY);
	budget_error(&err, -EBUSY);
	CHECK(strstr(err.msg, "busy") && strstr(err.msg, "'ingest-memory'"));
	xfree(p);
	budget_end(&b);
	quota_give(&q, 3u << 20);
	/* Alone, more than the whole quota: it never fits (-ENOMEM, not -EBUSY). */
	memset(&b, 0, sizeof(b));
	b.quota = &q;
	budget_begin(&b);
	p = xmalloc(5u << 20);
	CHECK_EQ_INT(budget_check(), -ENOMEM);
	xfree(p);
	budget_end(&b);
	/* Quota bytes are given back at the end; nested budgets see their own heap. */
	memset(&b, 0, sizeof(b));
	b.quota = &q;
	budget_begin(&b);
	p = xmalloc(1u << 20);
	CHECK_EQ_INT(budget_check(), 0);
	memset(&inner, 0, sizeof(inner));
	inner.max_bytes = 1024;
	budget_begin(&inner);
	CHECK_EQ_INT(budget_check(), 0);
	budget_end(&inner);
	xfree(p);
	budget_end(&b);
	{
		uint64_t used;

		quota_get(&q, &used, NULL, NULL, NULL);
		CHECK_EQ_INT(used, 0);
	}
	/* A deadline in the past fails (the clock is read every 64th check). */
	memset(&b, 0, sizeof(b));
	b.deadline_ms = budget_now_ms() - 1;
	b.time_name = "render-seconds";
	budget_begin(&b);
	CHECK_EQ_INT(budget_check(), -ETIME);
	budget_error(&err, -ETIME);
	CHECK(strstr(err.msg, "'render-seconds'") != NULL);
	budget_end(&b);
	quota_release_all(&q);
}

/* Code points at every length boundary, and past U+10FFFF. */
static void test_utf8(void)
{
	static const struct {
		uint32_t cp;
		const char *want;
	} cases[] = {
		{ 0x24, "$" },
		{ 0x7f, "\x7f" },
		{ 0x80, "\xc2\x80" },
		{ 0xe9, "\xc3\xa9" },
		{ 0x7ff, "\xdf\xbf" },
		{ 0x800, "\xe0\xa0\x80" },
		{ 0x540d, "\xe5\x90\x8d" },
		{ 0xffff, "\xef\xbf\xbf" },
		{ 0x10000, "\xf0\x90\x80\x80" },
		{ 0x1f525, "\xf0\x9f\x94\xa5" },
		{ 0x10ffff, "\xf4\x8f\xbf\xbf" },
		{ 0x110000, "?" },
		{ 0xffffffff, "?" },
	};
	char out[5];
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(out, 0, sizeof(out));
		n = utf8_encode(cases[i].cp, out);
		CHECK_EQ_INT(n, strlen(cases[i].want));
		CHECK_EQ_STR(out, cases[i].want);
	}
}

int main(void)
{
	RUN(test_buf_max);
	RUN(test_buf_long_printf);
	RUN(test_buf_read_file);
	RUN(test_hash_bytes);
	RUN(test_u64map);
	RUN(test_strtab);
	RUN(test_json);
	RUN(test_alloc);
	RUN(test_quota);
	RUN(test_budget);
	RUN(test_utf8);
	return test_summary();
}
