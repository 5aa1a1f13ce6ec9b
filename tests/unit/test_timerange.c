/* test_timerange.c: time ("now-1h", unix s/ms/us/ns), duration ("30d") and size ("20GB") parsing. */
#include "test.h"
#include "store/timerange.h"
#include "lib/log.h"

#include <errno.h>

#define NOW 1700000000LL

static int64_t t_of(const char *s)
{
	int64_t v = -1;

	if (timerange_parse_time(s, NOW, &v, NULL) < 0)
		return -1;
	return v;
}

static int64_t d_of(const char *s)
{
	int64_t v = -1;

	if (timerange_parse_duration(s, &v, NULL) < 0)
		return -1;
	return v;
}

static long long sz_of(const char *s)
{
	uint64_t v = 0;

	if (timerange_parse_size(s, &v, NULL) < 0)
		return -1;
	return (long long)v;
}

static void test_times(void)
{
	struct errmsg err = { "" };
	int64_t v;

	CHECK_EQ_INT(t_of("now"), NOW);
	CHECK_EQ_INT(t_of("now-1h"), NOW - 3600);
	CHECK_EQ_INT(t_of("now-30m"), NOW - 1800);
	CHECK_EQ_INT(t_of("now-7d"), NOW - 7 * 86400);
	CHECK_EQ_INT(t_of("now+10s"), NOW + 10);
	CHECK_EQ_INT(t_of("1700000123"), 1700000123);
	CHECK_EQ_INT(t_of("1700000123456"), 1700000123);       /* ms */
	CHECK_EQ_INT(t_of("1700000123456789"), 1700000123);    /* us */
	CHECK_EQ_INT(t_of("1700000123456789012"), 1700000123); /* ns */
	CHECK_EQ_INT(t_of("0"), 0);
	CHECK_EQ_INT(t_of(""), -1);
	CHECK_EQ_INT(t_of("now-"), -1);
	CHECK_EQ_INT(t_of("now-1x"), -1);
	CHECK_EQ_INT(t_of("nowx"), -1);
	CHECK_EQ_INT(t_of("-5"), -1);
	CHECK_EQ_INT(t_of("12abc"), -1);
	CHECK_EQ_INT(timerange_parse_time("99999999999999999999999", NOW, &v, &err), -ERANGE);
	CHECK_EQ_INT(timerange_parse_time("yesterday", NOW, &v, &err), -EINVAL);
	CHECK(strstr(err.msg, "yesterday") != NULL);
}

static void test_durations(void)
{
	CHECK_EQ_INT(d_of("30d"), 30 * 86400);
	CHECK_EQ_INT(d_of("12h"), 12 * 3600);
	CHECK_EQ_INT(d_of("90m"), 5400);
	CHECK_EQ_INT(d_of("10s"), 10);
	CHECK_EQ_INT(d_of("2w"), 14 * 86400);
	CHECK_EQ_INT(d_of("1h30m"), 5400);
	CHECK_EQ_INT(d_of("45"), 45);
	CHECK_EQ_INT(d_of("1h30"), -1);
	CHECK_EQ_INT(d_of("d"), -1);
	CHECK_EQ_INT(d_of("5y"), -1);
	CHECK_EQ_INT(d_of("99999999999999999999d"), -1);
	CHECK_EQ_INT(d_of("9999999999999999w"), -1);
}

static void test_sizes(void)
{
	CHECK_EQ_INT(sz_of("20GB"), 20000000000LL);
	CHECK_EQ_INT(sz_of("20gb"), 20000000000LL);
	CHECK_EQ_INT(sz_of("512MiB"), 512LL << 20);
	CHECK_EQ_INT(sz_of("1.5G"), 1500000000LL);
	CHECK_EQ_INT(sz_of("1.5GiB"), 3LL << 29);
	CHECK_EQ_INT(sz_of("100"), 100);
	CHECK_EQ_INT(sz_of("100B"), 100);
	CHECK_EQ_INT(sz_of("4 KB"), 4000);
	CHECK_EQ_INT(sz_of("2TB"), 2000000000000LL);
	CHECK_EQ_INT(sz_of("GB"), -1);
	CHECK_EQ_INT(sz_of("1.GB"), -1);
	CHECK_EQ_INT(sz_of("20XB"), -1);
	CHECK_EQ_INT(sz_of("99999999999TB"), -1);
	CHECK_EQ_INT(sz_of("-1GB"), -1);
}

int main(void)
{
	RUN(test_times);
	RUN(test_durations);
	RUN(test_sizes);
	return test_summary();
}
