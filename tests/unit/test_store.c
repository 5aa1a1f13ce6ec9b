/* test_store.c: the profile store (store.h, SQLite backend): exact totals, selectors, time
 * ranges, rollups equal raw sums across partition edges, retention by age and size, reopen,
 * failed batches, label listings, time series, and the top table / sandwich helpers. */
#include "test.h"
#include "store/store.h"
#include "store/selector.h"
#include "store/query.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/strtab.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DAY 86400
#define T0 1700006400 /* a UTC midnight */

static char tmpdir[64];

static void make_dir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/scorch-test-store-XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
}

static void remove_dir(void)
{
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);

	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	xfree(cmd);
}

static struct store *open_store(const struct store_opts *o)
{
	struct errmsg err = { "" };
	struct store *s = store_open("sqlite", tmpdir, o, &err);

	if (!s)
		fprintf(stderr, "open: %s\n", err.msg);
	return s;
}

/* Write one batch of folded stacks ("a;b;c" with values) for type/app at time t. */
static int put(struct store *s, const char *type, const char *app, const char *host, int64_t t,
	       const char *const *stacks, const int64_t *values, size_t n)
{
	struct store_batchbuf *bb = store_batchbuf_new();
	struct store_label labels[2] = { { "service_name", app }, { "host", host } };
	struct store_batch b = { 0 };
	struct errmsg err = { "" };
	size_t i;
	int ret;

	for (i = 0; i < n; i++)
		store_batchbuf_add_split(bb, stacks[i], strlen(stacks[i]), ';', values[i]);
	b.type = type;
	b.labels = labels;
	b.nlabels = host ? 2 : 1;
	b.from = t;
	b.until = t + 10;
	b.sample_rate = 19;
	b.units = "samples";
	b.spy_name = "scorch";
	store_batchbuf_fill(bb, &b);
	ret = store_write(s, &b, 1, &err);
	if (ret < 0)
		fprintf(stderr, "write: %s\n", err.msg);
	store_batchbuf_free(bb);
	return ret;
}

static struct store_profile *merge(struct store *s, const char *query, int64_t from, int64_t until)
{
	struct selector *sel = NULL;
	struct store_profile *p = NULL;
	struct errmsg err = { "" };
	struct store_query q;

	if (query && selector_parse(query, strlen(query), &sel, &err) < 0) {
		fprintf(stderr, "selector: %s\n", err.msg);
		return NULL;
	}
	q.sel = sel;
	q.from = from;
	q.until = until;
	if (store_merge(s, &q, 0, &p, &err) < 0)
		fprintf(stderr, "merge: %s\n", err.msg);
	selector_free(sel);
	return p;
}

static int64_t total_of(struct store *s, const char *query, int64_t from, int64_t until)
{
	struct store_profile *p = merge(s, query, from, until);
	int64_t v = p ? p->total : -1;

	store_profile_free(p);
	return v;
}

/* Value of the stack given as "a;b;c" in p, or -1. */
static int64_t stack_value(const struct store_profile *p, const char *folded)
{
	size_t i, j;

	for (i = 0; i < p->nstacks; i++) {
		char buf[1024];
		size_t len = 0;

		for (j = 0; j < p->stacks[i].depth; j++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", j ? ";" : "",
						strtab_get(p->names, p->frames[p->stacks[i].first + j]));
		if (!strcmp(buf, folded))
			return p->stacks[i].value;
	}
	return -1;
}

static void test_write_read_exact(void)
{
	static const char *const st1[] = { "main;foo;bar", "main;foo", "main;baz" };
	static const int64_t v1[] = { 5, 3, 7 };
	static const char *const st2[] = { "main;foo;bar", "main;qux" };
	static const int64_t v2[] = { 10, 1 };
	struct store *s;
	struct store_profile *p;

	make_dir();
	s = open_store(NULL);
	CHECK(s != NULL);
	CHECK_EQ_INT(put(s, "cpu", "app", "h1", T0 + 100, st1, v1, 3), 0);
	CHECK_EQ_INT(put(s, "cpu", "app", "h1", T0 + 110, st2, v2, 2), 0);
	p = merge(s, "app.cpu", T0, T0 + 3600);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->total, 26);
		CHECK_EQ_INT(p->nstacks, 4);
		CHECK_EQ_INT(stack_value(p, "main;foo;bar"), 15);
		CHECK_EQ_INT(stack_value(p, "main;foo"), 3);
		CHECK_EQ_INT(stack_value(p, "main;baz"), 7);
		CHECK_EQ_INT(stack_value(p, "main;qux"), 1);
		CHECK_EQ_INT(p->stacks[0].value, 15); /* largest first */
		CHECK_EQ_INT(p->sample_rate, 19);
		CHECK_EQ_STR(p->units, "samples");
		CHECK_EQ_STR(p->spy_name, "scorch");
		CHECK_EQ_STR(p->type, "cpu");
		CHECK_EQ_INT(p->nseries, 1);
	}
	store_profile_free(p);
	/* A cap on stacks: the rest goes to other. */
	{
		struct store_query q = { NULL, T0, T0 + 3600 };
		struct errmsg err;

		p = NULL;
		CHECK_EQ_INT(store_merge(s, &q, 2, &p, &err), 0);
		if (p) {
			CHECK_EQ_INT(p->nstacks, 2);
			CHECK_EQ_INT(p->other, 4);
			CHECK_EQ_INT(p->other_stacks, 2);
			CHECK_EQ_INT(p->total, 26);
		}
		store_profile_free(p);
	}
	store_close(s);
	remove_dir();
}

/* The backends' pair merge: sorted by stack, a stack given more than once summed, sums
 * saturated at INT64_MAX. */
static void test_pairs_merge(void)
{
	struct store_pair p[] = {
		{ 30, 1 }, { 10, 2 }, { 30, 4 }, { 20, INT64_MAX - 1 }, { 10, 8 }, { 20, 5 },
	};
	struct store_pair one = { 7, 3 };

	CHECK_EQ_INT(store_pairs_merge(p, 0), 0);
	CHECK_EQ_INT(store_pairs_merge(&one, 1), 1);
	CHECK(one.stack == 7 && one.value == 3);
	CHECK_EQ_INT(store_pairs_merge(p, sizeof(p) / sizeof(p[0])), 3);
	CHECK(p[0].stack == 10 && p[0].value == 10);
	CHECK(p[1].stack == 20 && p[1].value == INT64_MAX);
	CHECK(p[2].stack == 30 && p[2].value == 5);
}

static void test_selectors(void)
{
	static const char *const st[] = { "a;b" };
	static const int64_t one[] = { 1 }, two[] = { 2 }, four[] = { 4 }, eight[] = { 8 };
	struct store *s;

	make_dir();
	s = open_store(NULL);
	put(s, "cpu", "web", "h1", T0, st, one, 1);
	put(s, "cpu", "web", "h2", T0, st, two, 1);
	put(s, "cpu", "db", "h1", T0, st, four, 1);
	put(s, "alloc_space", "web", "h1", T0, st, eight, 1);
	CHECK_EQ_INT(total_of(s, "web.cpu", T0, T0 + 10), 3);
	CHECK_EQ_INT(total_of(s, "web.cpu{host=\"h2\"}", T0, T0 + 10), 2);
	CHECK_EQ_INT(total_of(s, "web.cpu{host!=\"h2\"}", T0, T0 + 10), 1);
	CHECK_EQ_INT(total_of(s, "{host=~\"h.*\"}", T0, T0 + 10), 15);
	CHECK_EQ_INT(total_of(s, "{host=~\"h\"}", T0, T0 + 10), 0); /* anchored */
	CHECK_EQ_INT(total_of(s, ".cpu{service_name!~\"w.b\"}", T0, T0 + 10), 4);
	CHECK_EQ_INT(total_of(s, "web", T0, T0 + 10), 11);
	CHECK_EQ_INT(total_of(s, "{__type__=\"alloc_space\"}", T0, T0 + 10), 8);
	CHECK_EQ_INT(total_of(s, "nope.cpu", T0, T0 + 10), 0);
	CHECK_EQ_INT(total_of(s, NULL, T0, T0 + 10), 15);
	store_close(s);
	remove_dir();
}

static void test_time_ranges(void)
{
	static const char *const st[] = { "x" };
	static const int64_t v[] = { 1 };
	struct store *s;
	int i;

	make_dir();
	s = open_store(NULL);
	for (i = 0; i < 10; i++)
		put(s, "cpu", "app", NULL, T0 + i * 10, st, v, 1);
	CHECK_EQ_INT(total_of(s, NULL, T0, T0 + 100), 10);
	CHECK_EQ_INT(total_of(s, NULL, T0, T0 + 90), 9);    /* until is exclusive */
	CHECK_EQ_INT(total_of(s, NULL, T0 + 1, T0 + 100), 9); /* by batch start time */
	CHECK_EQ_INT(total_of(s, NULL, T0 + 30, T0 + 60), 3);
	CHECK_EQ_INT(total_of(s, NULL, T0 - 1000, T0), 0);
	store_close(s);
	remove_dir();
}

/* Deterministic pseudo-random data over three days at 10-minute steps. */
struct rec {
	int64_t t;
	int stack;
	int64_t value;
};

static const char *const rstacks[] = {
	"main;a;b", "main;a;c", "main;d", "main;d;e;f", "main", "other;x", "other;y;z", "main;a",
};
#define NRSTACKS (int)(sizeof(rstacks) / sizeof(rstacks[0]))

static size_t gen(struct rec *out, size_t max)
{
	uint64_t x = 12345;
	size_t n = 0;
	int64_t t;

	for (t = T0 - 7 * 3600 - 300; t < T0 + 2 * DAY + 5 * 3600 && n + 3 <= max; t += 600) {
		int k;

		for (k = 0; k < 3; k++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			out[n].t = t;
			out[n].stack = (int)((x >> 33) % NRSTACKS);
			out[n].value = (int64_t)((x >> 20) % 50) + 1;
			n++;
		}
	}
	return n;
}

static void write_recs(struct store *s, const struct rec *r, size_t n)
{
	size_t i = 0;

	while (i < n) {
		const char *st[3];
		int64_t v[3];
		size_t k = 0;
		int64_t t = r[i].t;

		while (i < n && r[i].t == t && k < 3) {
			st[k] = rstacks[r[i].stack];
			v[k] = r[i].value;
			k++;
			i++;
		}
		put(s, "cpu", "app", "h", t, st, v, k);
	}
}

static int64_t expect_total(const struct rec *r, size_t n, int64_t from, int64_t until, int stack)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (r[i].t >= from && r[i].t < until && (stack < 0 || r[i].stack == stack))
			sum += r[i].value;
	return sum;
}

static void check_ranges(struct store *s, const struct rec *r, size_t n)
{
	static const int64_t ranges[][2] = {
		{ T0 - DAY, T0 + 3 * DAY },          /* everything */
		{ T0, T0 + DAY },                    /* exactly one day partition */
		{ T0 + 3600, T0 + 7200 },            /* exactly one hour */
		{ T0 - 1800, T0 + DAY + 1800 },      /* edges inside hours */
		{ T0 + 1234, T0 + 2 * DAY - 4321 },  /* odd edges */
		{ T0 + 3599, T0 + 3601 },            /* tiny across an hour edge */
		{ T0 - 3 * 3600 + 600, T0 + 5 * 3600 }, /* across a day edge */
	};
	size_t i;
	int k;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		struct store_profile *p = merge(s, "app.cpu", ranges[i][0], ranges[i][1]);

		CHECK(p != NULL);
		if (!p)
			continue;
		CHECK_EQ_INT(p->total, expect_total(r, n, ranges[i][0], ranges[i][1], -1));
		for (k = 0; k < NRSTACKS; k++) {
			int64_t want = expect_total(r, n, ranges[i][0], ranges[i][1], k);
			int64_t got = stack_value(p, rstacks[k]);

			CHECK_EQ_INT(got < 0 ? 0 : got, want);
		}
		store_profile_free(p);
	}
}

static void check_timeseries(struct store *s, const struct rec *r, size_t n, int64_t step,
			     int64_t from, int64_t until)
{
	struct store_query q = { NULL, from, until };
	struct store_timeseries *ts = NULL;
	struct errmsg err = { "" };
	size_t k;

	CHECK_EQ_INT(store_timeseries(s, &q, step, NULL, &ts, &err), 0);
	if (!ts)
		return;
	CHECK_EQ_INT(ts->step, step);
	CHECK_EQ_INT(ts->ngroups, 1);
	for (k = 0; k < ts->npoints && ts->ngroups; k++) {
		int64_t a = ts->start + (int64_t)k * step, b = a + step;

		if (a < from)
			a = from;
		if (b > until)
			b = until;
		CHECK_EQ_INT(ts->groups[0].values[k], expect_total(r, n, a, b, -1));
	}
	store_timeseries_free(ts);
}

static void test_rollups_equal_raw(void)
{
	static struct rec r[4000];
	size_t n = gen(r, 4000);
	struct store_stats st;
	struct errmsg err = { "" };
	struct store *s;

	make_dir();
	s = open_store(NULL);
	write_recs(s, r, n);
	check_ranges(s, r, n); /* raw only */
	CHECK_EQ_INT(store_maintain(s, T0 + 10 * DAY, &err), 0);
	CHECK_EQ_INT(store_stats(s, &st, &err), 0);
	CHECK(st.rollup_rows >= 60 + 3); /* 60 hours and the days were built */
	if (getenv("TEST_DEBUG")) fprintf(stderr, "rollups %llu raw %llu\n", (unsigned long long)st.rollup_rows, (unsigned long long)st.raw_rows);
	check_ranges(s, r, n); /* rollups + raw edges */
	check_timeseries(s, r, n, 600, T0 - 5000, T0 + DAY + 77);
	check_timeseries(s, r, n, 3600, T0 - 5000, T0 + 2 * DAY + 77);
	check_timeseries(s, r, n, DAY, T0 - DAY, T0 + 3 * DAY);
	check_timeseries(s, r, n, 7200, T0 + 1800, T0 + DAY);
	/* A late write into a rolled-up hour and day must be seen. */
	{
		static const char *const late[] = { "main;a;b" };
		static const int64_t lv[] = { 1000 };

		CHECK_EQ_INT(put(s, "cpu", "app", "h", T0 + 3600 + 5, late, lv, 1), 0);
		r[n].t = T0 + 3600 + 5;
		r[n].stack = 0;
		r[n].value = 1000;
		n++;
		check_ranges(s, r, n);
		CHECK_EQ_INT(store_maintain(s, T0 + 10 * DAY, &err), 0);
		check_ranges(s, r, n);
		check_timeseries(s, r, n, 3600, T0 - 5000, T0 + 2 * DAY + 77);
	}
	store_close(s);
	remove_dir();
}

static void test_reopen_keeps_everything(void)
{
	static struct rec r[4000];
	size_t n = gen(r, 4000);
	struct errmsg err = { "" };
	struct store *s;

	make_dir();
	s = open_store(NULL);
	write_recs(s, r, n / 2);
	CHECK_EQ_INT(store_maintain(s, T0 + 10 * DAY, &err), 0);
	store_close(s);
	s = open_store(NULL);
	CHECK(s != NULL);
	if (!s)
		return;
	write_recs(s, r + n / 2, n - n / 2); /* stacks known from before keep their ids */
	check_ranges(s, r, n);
	store_close(s);
	s = open_store(NULL);
	check_ranges(s, r, n);
	store_close(s);
	remove_dir();
}

static void test_retention_by_age(void)
{
	static struct rec r[4000];
	size_t n = gen(r, 4000);
	struct store_opts o = { 0 };
	struct store_stats st;
	struct errmsg err = { "" };
	struct store *s;
	int64_t now = T0 + 2 * DAY + 5 * 3600 + 1800, cutoff = T0 + DAY + 5 * 3600;

	o.retention_sec = now - cutoff; /* = 1 day 30 min: cutoff rounds down to the hour */
	make_dir();
	s = open_store(&o);
	write_recs(s, r, n);
	CHECK_EQ_INT(store_maintain(s, T0 + 10 * DAY - 1, &err), 0); /* far future: everything goes */
	CHECK_EQ_INT(total_of(s, NULL, 0, T0 + 10 * DAY), 0);
	CHECK_EQ_INT(store_stats(s, &st, &err), 0);
	CHECK_EQ_INT(st.series + st.stacks + st.frames + st.raw_rows + st.rollup_rows, 0);
	store_close(s);
	remove_dir();

	/* Again with a clock just after the data. */
	make_dir();
	s = open_store(&o);
	write_recs(s, r, n);
	CHECK_EQ_INT(store_maintain(s, now, &err), 0);
	CHECK_EQ_INT(store_stats(s, &st, &err), 0);
	CHECK(st.oldest >= cutoff);
	CHECK_EQ_INT(total_of(s, NULL, 0, T0 + 10 * DAY), expect_total(r, n, cutoff, T0 + 10 * DAY, -1));
	CHECK_EQ_INT(total_of(s, NULL, 0, cutoff), 0);
	/* Rollups of the partial day rebuild correctly. */
	CHECK_EQ_INT(store_maintain(s, now + DAY, &err), 0); /* also drops one more day */
	store_close(s);
	remove_dir();
}

static void test_retention_by_size(void)
{
	struct store_opts o = { 0 };
	struct store_stats st;
	struct errmsg err = { "" };
	struct store *s;
	int64_t t, last = 0;
	char names[40][64];
	const char *stacks[40];
	int64_t vals[40];
	int i, k = 0;

	o.max_disk_bytes = 2 << 20;
	make_dir();
	s = open_store(&o);
	/* ~40 fresh stacks every 10 minutes for 3 days: several MB unless dropped. */
	for (t = T0; t < T0 + 3 * DAY; t += 600) {
		for (i = 0; i < 40; i++) {
			snprintf(names[i], sizeof(names[i]), "main;f%d;g%d;h%d;leaf_with_a_long_name_%d", k, k, k, k);
			stacks[i] = names[i];
			vals[i] = 1;
			k++;
		}
		CHECK_EQ_INT(put(s, "cpu", "app", "h", t, stacks, vals, 40), 0);
		last = t;
	}
	CHECK_EQ_INT(store_stats(s, &st, &err), 0);
	CHECK(st.live_bytes <= o.max_disk_bytes);
	CHECK(st.oldest > T0);         /* the oldest went first */
	CHECK_EQ_INT(st.newest, last); /* the newest stayed */
	CHECK_EQ_INT(total_of(s, NULL, last, last + 1), 40);
	CHECK_EQ_INT(store_maintain(s, last + 600, &err), 0);
	CHECK_EQ_INT(store_stats(s, &st, &err), 0);
	CHECK(st.live_bytes <= o.max_disk_bytes);
	CHECK(st.disk_bytes < 2 * o.max_disk_bytes);
	if (getenv("TEST_DEBUG")) fprintf(stderr, "disk %llu live %llu\n", (unsigned long long)st.disk_bytes, (unsigned long long)st.live_bytes);
	store_close(s);
	remove_dir();
}

static void test_failed_batch_stores_nothing(void)
{
	static const char *const st[] = { "main;foo" };
	static const int64_t v[] = { 5 };
	struct store_batchbuf *bb = store_batchbuf_new();
	struct store_label lab = { "service_name", "app" };
	struct store_batch b[2];
	struct errmsg err = { "" };
	struct store *s;
	sqlite3 *db;
	char *file;

	make_dir();
	s = open_store(NULL);
	/* Invalid second batch: checked before anything is written. */
	store_batchbuf_add_split(bb, "main;new1", 9, ';', 3);
	memset(b, 0, sizeof(b));
	b[0].type = "cpu";
	b[0].labels = &lab;
	b[0].nlabels = 1;
	b[0].from = T0;
	b[0].until = T0 + 10;
	store_batchbuf_fill(bb, &b[0]);
	b[1] = b[0];
	b[1].type = "bad.type";
	CHECK(store_write(s, b, 2, &err) == -EINVAL);
	CHECK_EQ_INT(total_of(s, NULL, 0, T0 + DAY), 0);

	/* A storage failure in the middle of the transaction (a trigger refuses time 666). */
	file = xasprintf("%s/scorch.db", tmpdir);
	CHECK_EQ_INT(sqlite3_open(file, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_exec(db, "CREATE TRIGGER no666 BEFORE INSERT ON raw WHEN NEW.t = 666 "
				  "BEGIN SELECT RAISE(ABORT, 'refused'); END;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	xfree(file);
	b[1] = b[0];
	b[1].from = 666;
	b[1].until = 676;
	CHECK(store_write(s, b, 2, &err) == -EIO);
	CHECK(strstr(err.msg, "refused") != NULL);
	CHECK_EQ_INT(total_of(s, NULL, 0, T0 + DAY), 0);
	{
		struct store_stats sst;

		store_stats(s, &sst, &err);
		CHECK_EQ_INT(sst.series, 0);
		CHECK_EQ_INT(sst.stacks, 0);
		CHECK_EQ_INT(sst.frames, 0);
	}
	/* The store works afterwards: ids from the failed transaction are not reused from cache. */
	CHECK_EQ_INT(store_write(s, b, 1, &err), 0);
	CHECK_EQ_INT(put(s, "cpu", "app", NULL, T0 + 10, st, v, 1), 0);
	{
		struct store_profile *p = merge(s, NULL, 0, T0 + DAY);

		CHECK(p && p->total == 8);
		if (p) {
			CHECK_EQ_INT(stack_value(p, "main;new1"), 3);
			CHECK_EQ_INT(stack_value(p, "main;foo"), 5);
		}
		store_profile_free(p);
	}
	store_batchbuf_free(bb);
	store_close(s);
	remove_dir();
}

static void test_validation(void)
{
	struct store_batchbuf *bb = store_batchbuf_new();
	struct store_label dup[2] = { { "a", "1" }, { "a", "2" } };
	struct store_label badname[1] = { { "1x", "v" } };
	struct store_batch b = { 0 };
	struct errmsg err = { "" };
	struct store *s;
	uint32_t frames[1] = { 99 };
	struct store_sample sm = { frames, 1, 1 };

	make_dir();
	s = open_store(NULL);
	store_batchbuf_add_split(bb, "a;b", 3, ';', 1);
	b.type = "cpu";
	b.from = T0;
	b.until = T0 + 10;
	store_batchbuf_fill(bb, &b);
	b.labels = dup;
	b.nlabels = 2;
	CHECK_EQ_INT(store_write(s, &b, 1, &err), -EINVAL);
	CHECK(strstr(err.msg, "twice") != NULL);
	b.labels = badname;
	b.nlabels = 1;
	CHECK_EQ_INT(store_write(s, &b, 1, &err), -EINVAL);
	b.nlabels = 0;
	b.until = T0 - 1;
	CHECK_EQ_INT(store_write(s, &b, 1, &err), -EINVAL);
	b.until = T0 + 10;
	b.samples = &sm;
	b.nsamples = 1;
	CHECK_EQ_INT(store_write(s, &b, 1, &err), -EINVAL); /* frame index out of range */
	sm.frames = NULL;
	sm.nframes = 0;
	sm.value = -1;
	CHECK_EQ_INT(store_write(s, &b, 1, &err), -EINVAL);
	CHECK_EQ_INT(store_batchbuf_add_split(bb, "a", 1, ';', -5), -EINVAL);
	store_batchbuf_free(bb);
	CHECK(store_open("nosuch", tmpdir, NULL, &err) == NULL);
	store_close(s);
	remove_dir();
}

static void test_labels_and_series(void)
{
	static const char *const st[] = { "a" };
	static const int64_t v[] = { 1 };
	struct store_strings l = { 0 };
	struct selector *sel = NULL;
	struct errmsg err = { "" };
	struct store_query q = { NULL, 0, 0 };
	struct store *s;

	make_dir();
	s = open_store(NULL);
	put(s, "cpu", "web", "h1", T0, st, v, 1);
	put(s, "cpu", "db", NULL, T0 + 100, st, v, 1);
	put(s, "alloc_space", "web", "h2", T0 + 200, st, v, 1);
	CHECK_EQ_INT(store_label_names(s, NULL, &l, &err), 0);
	CHECK_EQ_INT(l.n, 2);
	if (l.n == 2) {
		CHECK_EQ_STR(l.v[0], "host");
		CHECK_EQ_STR(l.v[1], "service_name");
	}
	store_strings_release(&l);
	CHECK_EQ_INT(store_label_values(s, "service_name", NULL, &l, &err), 0);
	CHECK_EQ_INT(l.n, 2);
	if (l.n == 2) {
		CHECK_EQ_STR(l.v[0], "db");
		CHECK_EQ_STR(l.v[1], "web");
	}
	store_strings_release(&l);
	CHECK_EQ_INT(store_label_values(s, "__name__", NULL, &l, &err), 0);
	CHECK_EQ_INT(l.n, 3);
	if (l.n == 3)
		CHECK_EQ_STR(l.v[0], "db.cpu");
	store_strings_release(&l);
	CHECK_EQ_INT(store_label_values(s, "__type__", NULL, &l, &err), 0);
	CHECK_EQ_INT(l.n, 2);
	store_strings_release(&l);
	/* Filtered by selector and time. */
	selector_parse("{service_name=\"web\"}", 20, &sel, &err);
	q.sel = sel;
	CHECK_EQ_INT(store_label_values(s, "host", &q, &l, &err), 0);
	CHECK_EQ_INT(l.n, 2);
	store_strings_release(&l);
	q.from = T0 + 150;
	q.until = T0 + 300;
	CHECK_EQ_INT(store_label_values(s, "host", &q, &l, &err), 0);
	CHECK_EQ_INT(l.n, 1);
	if (l.n == 1)
		CHECK_EQ_STR(l.v[0], "h2");
	store_strings_release(&l);
	selector_free(sel);
	store_close(s);
	remove_dir();
}

static void test_timeseries_group_by(void)
{
	static const char *const st[] = { "a" };
	static const int64_t v1[] = { 1 }, v2[] = { 2 };
	struct store_query q = { NULL, T0, T0 + 60 };
	struct store_timeseries *ts = NULL;
	struct errmsg err = { "" };
	struct store *s;

	make_dir();
	s = open_store(NULL);
	put(s, "cpu", "web", "h1", T0, st, v1, 1);
	put(s, "cpu", "web", "h1", T0 + 10, st, v1, 1);
	put(s, "cpu", "web", "h2", T0 + 30, st, v2, 1);
	put(s, "cpu", "db", NULL, T0 + 30, st, v2, 1);
	CHECK_EQ_INT(store_timeseries(s, &q, 20, "host", &ts, &err), 0);
	if (ts) {
		CHECK_EQ_INT(ts->npoints, 3);
		CHECK_EQ_INT(ts->ngroups, 3);
		if (ts->ngroups == 3) {
			CHECK_EQ_STR(ts->groups[0].group, "");
			CHECK_EQ_INT(ts->groups[0].values[1], 2);
			CHECK_EQ_STR(ts->groups[1].group, "h1");
			CHECK_EQ_INT(ts->groups[1].values[0], 2);
			CHECK_EQ_INT(ts->groups[1].total, 2);
			CHECK_EQ_STR(ts->groups[2].group, "h2");
			CHECK_EQ_INT(ts->groups[2].values[1], 2);
		}
	}
	store_timeseries_free(ts);
	store_close(s);
	remove_dir();
}

/* Stored frames carry lines; the views aggregate by function (query_by_function()). */
static void test_by_function(void)
{
	static const char *const a[] = { "main (/src/m.c:3)", "work (/src/w.c:10)" },
		*const b[] = { "main (/src/m.c:3)", "work (/src/w.c:12)" },
		*const c[] = { "<module> (app.py:1)", "run (app.py:7)" },
		*const d[] = { "<module> (app.py:1)", "run (app.py:9)", "memcpy" };
	struct store_profile *p = store_profile_new(), *f;
	struct query_top_row *rows = NULL;
	size_t n, i;
	int seen = 0;

	store_profile_add(p, a, 2, 4);
	store_profile_add(p, b, 2, 6);
	store_profile_add(p, c, 2, 1);
	store_profile_add(p, d, 3, 2);
	n = query_top(p, &rows);
	CHECK_EQ_INT(n, 7); /* by line: every (function, line) its own row */
	xfree(rows);
	f = query_by_function(p);
	CHECK(f != NULL);
	if (!f) {
		store_profile_free(p);
		return;
	}
	CHECK_EQ_INT(f->total, p->total);
	CHECK_EQ_INT(f->nstacks, p->nstacks);
	n = query_top(f, &rows);
	CHECK_EQ_INT(n, 5);
	for (i = 0; i < n; i++) {
		if (!strcmp(rows[i].name, "work")) {
			CHECK_EQ_INT(rows[i].self, 10);
			seen++;
		}
		if (!strcmp(rows[i].name, "run (app.py)")) {
			CHECK_EQ_INT(rows[i].total, 3);
			CHECK_EQ_INT(rows[i].self, 1);
			seen++;
		}
		if (!strcmp(rows[i].name, "main"))
			seen++;
	}
	CHECK_EQ_INT(seen, 3);
	xfree(rows);
	/* p itself is unchanged (it may be a shared merge), and a profile without lines needs no
	 * copy */
	n = query_top(p, &rows);
	CHECK_EQ_INT(n, 7);
	xfree(rows);
	CHECK(query_by_function(f) == NULL);
	store_profile_free(f);
	store_profile_free(p);
}

static void test_top_and_sandwich(void)
{
	static const char *const a[] = { "main", "f", "g" }, *const b[] = { "main", "g" },
		*const c[] = { "main", "f", "f", "h" };
	struct store_profile *p = store_profile_new(), *up = NULL, *down = NULL;
	struct query_top_row *rows = NULL;
	size_t n, i;

	store_profile_add(p, a, 3, 10);
	store_profile_add(p, b, 2, 5);
	store_profile_add(p, c, 4, 2);
	n = query_top(p, &rows);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_STR(rows[0].name, "g");
	CHECK_EQ_INT(rows[0].self, 15);
	CHECK_EQ_INT(rows[0].total, 15);
	for (i = 0; i < n; i++) {
		if (!strcmp(rows[i].name, "main")) {
			CHECK_EQ_INT(rows[i].self, 0);
			CHECK_EQ_INT(rows[i].total, 17);
		}
		if (!strcmp(rows[i].name, "f")) {
			CHECK_EQ_INT(rows[i].self, 0);
			CHECK_EQ_INT(rows[i].total, 12); /* recursion counted once */
		}
	}
	xfree(rows);
	CHECK_EQ_INT(query_sandwich(p, "f", &up, &down), 0);
	CHECK_EQ_INT(up->total, 12);
	CHECK_EQ_INT(down->total, 12);
	CHECK_EQ_INT(up->nstacks, 1);     /* main;f twice, merged */
	CHECK_EQ_INT(stack_value(up, "main;f"), 12);
	CHECK_EQ_INT(stack_value(down, "f;g"), 10);
	CHECK_EQ_INT(stack_value(down, "f;f;h"), 2);
	store_profile_free(up);
	store_profile_free(down);
	CHECK_EQ_INT(query_sandwich(p, "nope", &up, &down), -ENOENT);
	CHECK_EQ_INT(up->nstacks + down->nstacks, 0);
	store_profile_free(up);
	store_profile_free(down);
	store_profile_free(p);
}

/* Queries run on reader connections while the writer commits: each sees a consistent snapshot
 * (the total is a multiple of the per-batch total and never goes down). */
struct reader_arg {
	struct store *s;
	int failures, rounds;
};

static void *reader_thread(void *p)
{
	struct reader_arg *a = p;
	int64_t last = 0;
	int i;

	for (i = 0; i < a->rounds; i++) {
		int64_t v = total_of(a->s, "app.cpu", 0, T0 + DAY);

		if (v < last || v % 6 != 0)
			a->failures++;
		last = v;
	}
	return NULL;
}

static void test_concurrent_reads(void)
{
	static const char *const st[] = { "main;a", "main;b" };
	static const int64_t v[] = { 2, 4 };
	struct reader_arg a[2];
	pthread_t th[2];
	struct errmsg err = { "" };
	struct store *s;
	int i;

	make_dir();
	s = open_store(NULL);
	for (i = 0; i < 2; i++) {
		a[i].s = s;
		a[i].failures = 0;
		a[i].rounds = 40;
		pthread_create(&th[i], NULL, reader_thread, &a[i]);
	}
	for (i = 0; i < 200; i++)
		put(s, "cpu", "app", NULL, T0 + i * 10, st, v, 2);
	CHECK_EQ_INT(store_maintain(s, T0 + 2 * DAY, &err), 0);
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ_INT(a[i].failures, 0);
	}
	CHECK_EQ_INT(total_of(s, "app.cpu", 0, T0 + DAY), 1200);
	store_close(s);
	remove_dir();
}

/* Sums of huge values saturate at INT64_MAX instead of wrapping (in a batch, across raw rows,
 * in rollups, in time series and in the top table). */
static void test_sums_saturate(void)
{
	static const char *const st[] = { "main;big", "main;big", "main;small" };
	static const int64_t v[] = { INT64_MAX, 1, 5 };
	struct store_query q = { NULL, T0, T0 + DAY };
	struct store_timeseries *ts = NULL;
	struct query_top_row *rows = NULL;
	struct errmsg err = { "" };
	struct store_profile *p;
	struct store *s;
	size_t n;

	make_dir();
	s = open_store(NULL);
	CHECK_EQ_INT(put(s, "cpu", "app", NULL, T0, st, v, 3), 0);
	CHECK_EQ_INT(put(s, "cpu", "app", NULL, T0 + 10, st, v, 3), 0);
	p = merge(s, "app.cpu", T0, T0 + DAY);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->total, INT64_MAX);
		CHECK_EQ_INT(stack_value(p, "main;big"), INT64_MAX);
		CHECK_EQ_INT(stack_value(p, "main;small"), 10);
		n = query_top(p, &rows);
		CHECK_EQ_INT(n, 3);
		if (n == 3) {
			CHECK_EQ_STR(rows[0].name, "big");
			CHECK_EQ_INT(rows[0].self, INT64_MAX);
		}
		xfree(rows);
	}
	store_profile_free(p);
	CHECK_EQ_INT(store_timeseries(s, &q, 60, NULL, &ts, &err), 0);
	if (ts && ts->ngroups == 1)
		CHECK_EQ_INT(ts->groups[0].total, INT64_MAX);
	store_timeseries_free(ts);
	/* The same through hour and day rollups. */
	CHECK_EQ_INT(store_maintain(s, T0 + 3 * DAY, &err), 0);
	CHECK_EQ_INT(total_of(s, "app.cpu", T0, T0 + DAY), INT64_MAX);
	store_close(s);
	remove_dir();
}

/* A batch without samples stores nothing, not even its series. */
static void test_empty_batch(void)
{
	struct store_label lab = { "service_name", "empty" };
	struct store_batch b;
	struct store_stats sst;
	struct errmsg err = { "" };
	struct store *s;

	make_dir();
	s = open_store(NULL);
	memset(&b, 0, sizeof(b));
	b.type = "cpu";
	b.labels = &lab;
	b.nlabels = 1;
	b.from = b.until = T0;
	CHECK_EQ_INT(store_write(s, &b, 1, &err), 0);
	CHECK_EQ_INT(store_stats(s, &sst, &err), 0);
	CHECK_EQ_INT(sst.series, 0);
	CHECK_EQ_INT(sst.raw_rows, 0);
	store_close(s);
	remove_dir();
}

/* A merge returns at most STORE_MAX_MERGE_FRAMES frames, heaviest stacks first; the rest is
 * counted in `other`, so the total stays exact. */
static void test_merge_frame_cap(void)
{
	const size_t nstacks = STORE_MAX_MERGE_FRAMES / STORE_MAX_DEPTH + 8;
	const char **frames = xcalloc(STORE_MAX_DEPTH, sizeof(*frames));
	struct store_batchbuf *bb = store_batchbuf_new();
	struct store_label lab = { "service_name", "deep" };
	struct store_batch b;
	struct errmsg err = { "" };
	struct store_profile *p;
	struct store *s;
	char root[32];
	size_t i, j;

	make_dir();
	s = open_store(NULL);
	for (j = 1; j < STORE_MAX_DEPTH; j++)
		frames[j] = "f";
	frames[0] = root;
	for (i = 0; i < nstacks; i++) {
		snprintf(root, sizeof(root), "r%zu", i);
		CHECK_EQ_INT(store_batchbuf_add(bb, frames, STORE_MAX_DEPTH, (int64_t)i + 1), 0);
	}
	memset(&b, 0, sizeof(b));
	b.type = "cpu";
	b.labels = &lab;
	b.nlabels = 1;
	b.from = b.until = T0;
	store_batchbuf_fill(bb, &b);
	CHECK_EQ_INT(store_write(s, &b, 1, &err), 0);
	p = merge(s, "deep.cpu", T0, T0 + 10);
	CHECK(p != NULL);
	if (p) {
		CHECK(p->nframes <= STORE_MAX_MERGE_FRAMES);
		CHECK(p->nstacks < nstacks);
		CHECK(p->other > 0);
		CHECK_EQ_INT(p->nstacks + p->other_stacks, nstacks);
		CHECK_EQ_INT(p->total, (int64_t)(nstacks * (nstacks + 1) / 2));
		/* The heaviest stack is kept. */
		snprintf(root, sizeof(root), "r%zu", nstacks - 1);
		CHECK(p->nstacks > 0 && !strcmp(strtab_get(p->names, p->frames[p->stacks[0].first]), root));
	}
	store_profile_free(p);
	store_batchbuf_free(bb);
	xfree(frames);
	store_close(s);
	remove_dir();
}

int main(void)
{
	RUN(test_write_read_exact);
	RUN(test_pairs_merge);
	RUN(test_selectors);
	RUN(test_time_ranges);
	RUN(test_rollups_equal_raw);
	RUN(test_reopen_keeps_everything);
	RUN(test_retention_by_age);
	RUN(test_retention_by_size);
	RUN(test_failed_batch_stores_nothing);
	RUN(test_validation);
	RUN(test_labels_and_series);
	RUN(test_timeseries_group_by);
	RUN(test_top_and_sandwich);
	RUN(test_by_function);
	RUN(test_concurrent_reads);
	RUN(test_sums_saturate);
	RUN(test_empty_batch);
	RUN(test_merge_frame_cap);
	return test_summary();
}
