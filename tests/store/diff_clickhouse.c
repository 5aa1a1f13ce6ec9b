/* diff_clickhouse.c: the differential test of the store backends. One generated data set is
 * written to a SQLite store and to a ClickHouse store, then every query the server makes is run
 * on both and the answers compared as text: series listings, label names and values, merges
 * (every stack with its value, totals, truncation, metadata), flame graph and diff JSON, the
 * top table, sandwiches, and time series over many steps, groupings and ranges, including
 * ranges cutting hours, days and 10-minute buckets. Then retention by age on both (a cutoff on
 * a day boundary, the granularity both share) and everything again.
 *
 *   diff_clickhouse CLICKHOUSE-URL SQLITE-DIR
 * Run by tests/integration/store_clickhouse.sh with a ClickHouse it started. */
#include "store/store.h"
#include "store/query.h"
#include "store/selector.h"
#include "server/flamebearer.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/strtab.h"
#include "test.h"

#include <errno.h>
#include <time.h>

#define DAY 86400
#define BASE (19676LL * DAY) /* a day boundary (2023-11-15) */
#define NSERIES 9
#define NFUNCS 150
#define NSTACKS 300

static struct store *sq, *ch;
static const char *ch_url, *sq_dir;
static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- data ---------------------------------------------------------------------------------- */

static char *funcs[NFUNCS];
static uint32_t *stacks[NSTACKS];
static uint32_t depths[NSTACKS];

struct series_def {
	const char *type;
	struct store_label labels[3];
	size_t nlabels;
};

static const struct series_def defs[NSERIES] = {
	{ "cpu", { { "service_name", "app1" }, { "host", "h1" }, { "env", "prod" } }, 3 },
	{ "cpu", { { "service_name", "app1" }, { "host", "h2" }, { "env", "prod" } }, 3 },
	{ "cpu", { { "service_name", "app1" }, { "host", "h3" } }, 2 },
	{ "alloc_space", { { "service_name", "app1" }, { "host", "h1" } }, 2 },
	{ "cpu", { { "service_name", "app2" }, { "env", "dev" } }, 2 },
	{ "cpu", { { "service_name", "my.app-3" }, { "zone", "eu-1" } }, 2 },
	{ "wall", { { "service_name", "app2" }, { "env", "dev" } }, 2 },
	{ "cpu", { { "service_name", "app4" } }, 1 },
	{ "inuse_objects", { { "service_name", "app4" }, { "host", "h2" } }, 2 },
};

static void make_pool(void)
{
	static const char *const odd[] = { "main", "std::vector<int>::push_back(int const&)",
					   "handle (app/views.py:42)", "libc.so.6+0x1f3",
					   "do_syscall_64_[k]", "функция", "with space", "[unknown]" };
	size_t i, j;

	for (i = 0; i < NFUNCS; i++)
		funcs[i] = i < 8 ? xstrdup(odd[i]) : xasprintf("fn_%zu", i);
	for (i = 0; i < NSTACKS; i++) {
		depths[i] = 1 + (uint32_t)(rnd() % 30);
		stacks[i] = xcalloc(depths[i], sizeof(uint32_t));
		stacks[i][0] = (uint32_t)(rnd() % 4); /* a few roots */
		for (j = 1; j < depths[i]; j++)
			stacks[i][j] = (uint32_t)(rnd() % NFUNCS);
	}
}

/* One batch of series s at time t into both stores (ret of each compared). */
static void write_both(const struct store_batch *b, size_t n)
{
	struct errmsg e1 = { "" }, e2 = { "" };
	int r1 = store_write(sq, b, n, &e1), r2 = store_write(ch, b, n, &e2);

	if (r1 || r2)
		fprintf(stderr, "  write: sqlite %d (%s), clickhouse %d (%s)\n", r1, e1.msg, r2, e2.msg);
	CHECK_EQ_INT(r1, 0);
	CHECK_EQ_INT(r2, 0);
}

static void write_data(void)
{
	static const char *const units[] = { NULL, "samples", "nanoseconds" };
	static const char *const spies[] = { NULL, "scorch", "pyspy" };
	struct store_batch b[27];
	struct store_sample *samples[27];
	size_t s, k, i, nb = 0;

	for (i = 0; i < 27; i++)
		samples[i] = xcalloc(64, sizeof(struct store_sample));
	for (s = 0; s < NSERIES; s++) {
		/* 80 batches in [BASE - 1 day, BASE + 2 days), and one at BASE exactly: after
		 * retention at BASE, SQLite reports a series' first time as the cutoff and ClickHouse
		 * its oldest remaining batch, which are then the same. */
		for (k = 0; k < 81; k++) {
			struct store_batch *bb = &b[nb];
			size_t ns = 1 + rnd() % 40;
			int64_t t = k == 40 ? BASE : BASE - DAY + (int64_t)(rnd() % (3 * DAY));

			if (s == 7) /* app4.cpu only before the cutoff: gone after retention */
				t = BASE - DAY + (int64_t)(rnd() % DAY);
			memset(bb, 0, sizeof(*bb));
			bb->type = defs[s].type;
			bb->labels = defs[s].labels;
			bb->nlabels = defs[s].nlabels;
			bb->from = t;
			bb->until = t + 10;
			bb->sample_rate = (rnd() % 3) ? 100 : (rnd() % 2 ? 19 : 0);
			bb->units = units[rnd() % 3];
			bb->spy_name = spies[rnd() % 3];
			bb->aggregation = rnd() % 5 ? NULL : "sum";
			bb->frame_names = (const char *const *)funcs;
			bb->nframe_names = NFUNCS;
			for (i = 0; i < ns; i++) {
				size_t st = rnd() % NSTACKS;

				samples[nb][i].frames = stacks[st];
				samples[nb][i].nframes = depths[st];
				samples[nb][i].value = (rnd() % 10 == 0) ? 0 : (int64_t)(1 + rnd() % 1000);
			}
			bb->samples = samples[nb];
			bb->nsamples = ns;
			nb++;
			if (nb == 27 || rnd() % 16 == 0) { /* writes of 1 to 27 batches */
				write_both(b, nb);
				nb = 0;
			}
		}
	}
	if (nb)
		write_both(b, nb);
	/* An empty profile stores nothing in either. */
	memset(b, 0, sizeof(b[0]));
	b[0].type = "cpu";
	b[0].labels = defs[0].labels;
	b[0].nlabels = 1;
	b[0].from = b[0].until = BASE + 5;
	write_both(b, 1);
	for (i = 0; i < 27; i++)
		xfree(samples[i]);
}

/* ---- canonical answers ---------------------------------------------------------------------- */

struct range {
	int64_t from, until;
};

static const struct range ranges[] = {
	{ BASE - DAY, BASE + 2 * DAY },            /* everything */
	{ BASE + 1234, BASE + 5000 },              /* within one hour and across one */
	{ BASE + 3 * 3600, BASE + 30 * 3600 + 17 },/* across a day edge */
	{ BASE, BASE + 3600 },                     /* exactly one hour */
	{ BASE + 600 * 7, BASE + 600 * 55 },       /* whole 10 minutes */
	{ BASE + 100, BASE + 100 },                /* empty */
	{ BASE - 7 * DAY, BASE - 3 * DAY },        /* before any data */
	{ BASE - 1, BASE + 1 },                    /* the boundary batch */
};
#define NRANGES (sizeof(ranges) / sizeof(ranges[0]))

static const char *const selectors[] = {
	NULL, "app1.cpu", "app1.cpu{host=\"h1\"}", "{host=~\"h[12]\"}", "app2", "{env!=\"prod\"}",
	"my.app-3.cpu", "nosuch.cpu", "{__type__=\"alloc_space\"}", "app4",
};
#define NSEL (sizeof(selectors) / sizeof(selectors[0]))

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort the lines of b (each ends in '\n'). */
static void sort_lines(struct buf *b)
{
	char **lines = NULL, *p, *copy;
	size_t n = 0, cap = 0, i;

	if (!b->len)
		return;
	copy = xstrndup(b->data, b->len);
	for (p = copy; *p;) {
		char *nl = strchr(p, '\n');

		ALLOC_GROW(lines, n + 1, cap);
		lines[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	buf_reset(b);
	for (i = 0; i < n; i++)
		buf_printf(b, "%s\n", lines[i]);
	xfree(lines);
	xfree(copy);
}

static int series_line(const struct store_series_info *info, void *arg)
{
	struct buf *b = arg;
	size_t i;

	buf_printf(b, "%s{", info->type);
	for (i = 0; i < info->nlabels; i++)
		buf_printf(b, "%s%s=%s", i ? "," : "", info->labels[i].name, info->labels[i].value);
	buf_printf(b, "} rate=%u units=%s spy=%s agg=%s first=%lld last=%lld\n", info->sample_rate,
		   info->units, info->spy_name, info->aggregation, (long long)info->first_time,
		   (long long)info->last_time);
	return 0;
}

static void profile_text(const struct store_profile *p, struct buf *b, int with_stacks)
{
	size_t i, j;
	struct buf lines = BUF_INIT(BUF_UNLIMITED);

	buf_printf(b, "total=%lld other=%lld other_stacks=%llu nseries=%llu rate=%u type=%s units=%s"
		   " spy=%s agg=%s nstacks=%zu\n", (long long)p->total, (long long)p->other,
		   (unsigned long long)p->other_stacks, (unsigned long long)p->nseries, p->sample_rate,
		   p->type, p->units, p->spy_name, p->aggregation, p->nstacks);
	for (i = 0; i < p->nstacks; i++) {
		if (!with_stacks) {
			buf_printf(&lines, "value %020lld\n", (long long)p->stacks[i].value);
			continue;
		}
		for (j = 0; j < p->stacks[i].depth; j++)
			buf_printf(&lines, "%s%s", j ? ";" : "", strtab_get(p->names, p->frames[p->stacks[i].first + j]));
		buf_printf(&lines, " %lld\n", (long long)p->stacks[i].value);
	}
	sort_lines(&lines);
	if (lines.len)
		buf_append(b, lines.data, lines.len);
	buf_release(&lines);
}

/* Every answer for one (selector, range) into b, from store s; `full`: time series with
 * every step and grouping (else two of them: the test must stay quick). */
static void answers(struct store *s, const char *selstr, const struct range *r, int full,
		    struct buf *b)
{
	static const int64_t steps[] = { 0, 7, 10, 60, 600, 3600, 1200, DAY };
	static const char *const groups[] = { NULL, "host", "__name__", "__type__", "env" };
	struct selector *sel = NULL;
	struct errmsg err = { "" };
	struct store_query q;
	struct store_profile *p = NULL, *p5 = NULL, *callers = NULL, *callees = NULL;
	struct store_strings names = { 0 }, vals = { 0 };
	struct query_top_row *rows = NULL;
	struct buf tmp = BUF_INIT(BUF_UNLIMITED);
	size_t i, j, nrows;
	int ret;

	if (selstr)
		CHECK_EQ_INT(selector_parse(selstr, strlen(selstr), &sel, &err), 0);
	q.sel = sel;
	q.from = r->from;
	q.until = r->until;

	buf_puts(b, "## series\n");
	CHECK_EQ_INT(store_series(s, &q, series_line, &tmp, &err), 0);
	sort_lines(&tmp);
	buf_append(b, tmp.data ? tmp.data : "", tmp.len);
	buf_reset(&tmp);

	buf_puts(b, "## labels\n");
	CHECK_EQ_INT(store_label_names(s, &q, &names, &err), 0);
	for (i = 0; i < names.n; i++)
		buf_printf(b, "%s\n", names.v[i]);
	for (i = 0; i < names.n + 2; i++) {
		const char *n = i < names.n ? names.v[i] : i == names.n ? "__name__" : "__type__";

		CHECK_EQ_INT(store_label_values(s, n, &q, &vals, &err), 0);
		buf_printf(b, "%s:", n);
		for (j = 0; j < vals.n; j++)
			buf_printf(b, " %s", vals.v[j]);
		buf_puts(b, "\n");
		store_strings_release(&vals);
	}

	buf_puts(b, "## merge\n");
	ret = store_merge(s, &q, 0, &p, &err);
	CHECK_EQ_INT(ret, 0);
	if (ret == 0) {
		profile_text(p, b, 1);
		buf_puts(b, "## flamebearer\n");
		flamebearer_write(p, 200, b);
		buf_puts(b, "\n## top\n");
		nrows = query_top(p, &rows);
		for (i = 0; i < nrows; i++)
			buf_printf(&tmp, "%s self=%lld total=%lld\n", rows[i].name, (long long)rows[i].self,
				   (long long)rows[i].total);
		sort_lines(&tmp);
		buf_append(b, tmp.data ? tmp.data : "", tmp.len);
		buf_reset(&tmp);
		buf_puts(b, "## sandwich\n");
		if (query_sandwich(p, funcs[9], &callers, &callees) == 0) {
			profile_text(callers, b, 1);
			profile_text(callees, b, 1);
		}
		xfree(rows);
		rows = NULL;
	}
	/* Truncated merge: which of two equal values is cut may differ, so values only. */
	buf_puts(b, "## merge max 5\n");
	ret = store_merge(s, &q, 5, &p5, &err);
	CHECK_EQ_INT(ret, 0);
	if (ret == 0) {
		profile_text(p5, b, 0);
		buf_puts(b, "## diff\n");
		if (p)
			flamebearer_write_diff(p, p, 100, b);
		buf_puts(b, "\n");
	}

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		for (j = 0; j < sizeof(groups) / sizeof(groups[0]); j++) {
			struct store_timeseries *ts = NULL;
			size_t g, k;

			if (!full && !((i == 0 && j == 0) || (i == 4 && j == 1)))
				continue;

			ret = store_timeseries(s, &q, steps[i], groups[j], &ts, &err);
			CHECK_EQ_INT(ret, 0);
			if (ret)
				continue;
			buf_printf(b, "## ts step=%lld group=%s: start=%lld step=%lld points=%zu groups=%zu\n",
				   (long long)steps[i], groups[j] ? groups[j] : "-", (long long)ts->start,
				   (long long)ts->step, ts->npoints, ts->ngroups);
			for (g = 0; g < ts->ngroups; g++) {
				buf_printf(b, "%s total=%lld:", ts->groups[g].group, (long long)ts->groups[g].total);
				for (k = 0; k < ts->npoints; k++)
					if (ts->groups[g].values[k])
						buf_printf(b, " %zu=%lld", k, (long long)ts->groups[g].values[k]);
				buf_puts(b, "\n");
			}
			store_timeseries_free(ts);
		}
	}
	store_strings_release(&names);
	store_profile_free(p);
	store_profile_free(p5);
	store_profile_free(callers);
	store_profile_free(callees);
	buf_release(&tmp);
	selector_free(sel);
}

/* Compare the answers of both stores; print the first difference. */
static int compare_all(const char *phase)
{
	size_t si, ri, cases = 0, diffs = 0;

	for (si = 0; si < NSEL; si++) {
		for (ri = 0; ri < NRANGES; ri++) {
			struct buf a = BUF_INIT(BUF_UNLIMITED), c = BUF_INIT(BUF_UNLIMITED);

			int full = si == 0 || si == 3;

			answers(sq, selectors[si], &ranges[ri], full, &a);
			answers(ch, selectors[si], &ranges[ri], full, &c);
			cases++;
			if (a.len != c.len || memcmp(a.data, c.data, a.len)) {
				size_t k = 0, line = 1, ls = 0;

				while (k < a.len && k < c.len && a.data[k] == c.data[k]) {
					if (a.data[k] == '\n') {
						line++;
						ls = k + 1;
					}
					k++;
				}
				fprintf(stderr, "  %s: selector %s, range %zu: answers differ at line %zu:\n"
					"    sqlite:     %.300s\n    clickhouse: %.300s\n", phase,
					selectors[si] ? selectors[si] : "(all)", ri, line,
					a.data ? a.data + ls : "", c.data ? c.data + ls : "");
				diffs++;
			}
			buf_release(&a);
			buf_release(&c);
		}
	}
	printf("%s: %zu selector x range cases compared, %zu differ\n", phase, cases, diffs);
	return diffs ? -1 : 0;
}

static void test_same_answers(void)
{
	CHECK_EQ_INT(compare_all("after ingest"), 0);
}

static void test_same_after_maintenance(void)
{
	struct errmsg err = { "" };

	/* A maintenance pass without retention must not change any answer (SQLite builds its
	 * rollups now; ClickHouse had them from the views). */
	CHECK_EQ_INT(store_maintain(sq, BASE + 10 * DAY, &err), 0);
	CHECK_EQ_INT(store_maintain(ch, BASE + 10 * DAY, &err), 0);
	CHECK_EQ_INT(compare_all("after rollups"), 0);
}

static void test_same_after_retention(void)
{
	struct store_opts o = { 0 };
	struct errmsg err = { "" };
	int64_t now = BASE + 30 * DAY;

	/* Reopen both with a retention whose cutoff is BASE (a day boundary). */
	store_close(sq);
	store_close(ch);
	o.retention_sec = 30 * DAY;
	sq = store_open("sqlite", sq_dir, &o, &err);
	CHECK(sq != NULL);
	ch = store_open("clickhouse", ch_url, &o, &err);
	CHECK(ch != NULL);
	if (!sq || !ch)
		return;
	CHECK_EQ_INT(store_maintain(sq, now, &err), 0);
	CHECK_EQ_INT(store_maintain(ch, now, &err), 0);
	CHECK_EQ_INT(compare_all("after retention"), 0);
}

/* A size cap drops the oldest days until the store fits, never the newest day: with a cap of
 * one byte, exactly the newest day is left, equal to SQLite's answer for that day. */
static void test_size_cap(void)
{
	struct store_opts o = { 0 };
	struct errmsg err = { "" };
	struct store_stats st;
	struct store_query q = { NULL, BASE + DAY, BASE + 2 * DAY };
	struct store_query all = { NULL, 0, BASE + 3 * DAY };
	struct store_profile *a = NULL, *c = NULL;
	struct buf ta = BUF_INIT(BUF_UNLIMITED), tc = BUF_INIT(BUF_UNLIMITED);
	struct store *capped;

	o.max_disk_bytes = 1;
	capped = store_open("clickhouse", ch_url, &o, &err);
	CHECK(capped != NULL);
	if (!capped)
		return;
	CHECK_EQ_INT(store_maintain(capped, BASE + 3 * DAY, &err), 0);
	CHECK_EQ_INT(store_stats(capped, &st, &err), 0);
	CHECK(st.oldest >= BASE + DAY);
	CHECK(st.newest >= BASE + DAY && st.newest < BASE + 2 * DAY);
	CHECK(st.disk_bytes > 0);
	CHECK_EQ_INT(store_merge(sq, &q, 0, &a, &err), 0);
	CHECK_EQ_INT(store_merge(capped, &all, 0, &c, &err), 0);
	if (a && c) {
		profile_text(a, &ta, 1);
		profile_text(c, &tc, 1);
		/* nseries differs: SQLite still has series of the dropped day (other ranges) */
		CHECK(a->total > 0);
		CHECK_EQ_INT(c->total, a->total);
		CHECK_EQ_INT(c->nstacks, a->nstacks);
	}
	store_profile_free(a);
	store_profile_free(c);
	buf_release(&ta);
	buf_release(&tc);
	store_close(capped);
}

static void test_reopen_checks_version(void)
{
	struct errmsg err = { "" };
	struct store *again = store_open("clickhouse", ch_url, NULL, &err);

	/* The layout recorded at creation is accepted on a second open. */
	CHECK(again != NULL);
	store_close(again);
}

int main(int argc, char **argv)
{
	struct errmsg err = { "" };
	size_t i;

	if (argc != 3) {
		fprintf(stderr, "usage: diff_clickhouse CLICKHOUSE-URL SQLITE-DIR\n");
		return 2;
	}
	ch_url = argv[1];
	sq_dir = argv[2];
	make_pool();
	sq = store_open("sqlite", sq_dir, NULL, &err);
	if (!sq) {
		fprintf(stderr, "cannot open sqlite store: %s\n", err.msg);
		return 1;
	}
	ch = store_open("clickhouse", ch_url, NULL, &err);
	if (!ch) {
		fprintf(stderr, "cannot open clickhouse store: %s\n", err.msg);
		return 1;
	}
	test_current = "write";
	{
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		write_data();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("written in %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	RUN(test_same_answers);
	RUN(test_same_after_maintenance);
	RUN(test_reopen_checks_version);
	RUN(test_same_after_retention);
	RUN(test_size_cap);
	store_close(sq);
	store_close(ch);
	for (i = 0; i < NFUNCS; i++)
		xfree(funcs[i]);
	for (i = 0; i < NSTACKS; i++)
		xfree(stacks[i]);
	return test_summary();
}
