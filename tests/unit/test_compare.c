/* test_compare.c: `scorch diff`'s comparison (src/ci/compare.c) on profiles with known counts:
 * a doubled function is found and named, equal profiles give no alarm, small counts stay
 * within noise, several runs use the moderated t-test, normalization, new and vanished paths,
 * frame identity; and the three report layouts (src/ci/diffreport.c). */
#include "ci/compare.h"
#include "ci/diffreport.h"
#include "profile/folded.h"
#include "profile/profile.h"
#include "minijson.h"
#include "test.h"

#include <errno.h>
#include <math.h>

/* A CPU profile at 100 Hz from folded lines ("main;a 100\n..."). */
static struct profile *prof(const char *folded)
{
	struct profile *p = NULL;
	struct errmsg err;

	if (folded_parse(folded, strlen(folded), 1000, &p, &err) < 0) {
		fprintf(stderr, "folded_parse: %s\n", err.msg);
		abort();
	}
	profile_set_period_type(p, "cpu", "nanoseconds");
	p->period = 10000000;
	return p;
}

static void add(struct compare *c, enum compare_side side, const char *folded)
{
	struct profile *p = prof(folded);
	struct errmsg err;

	CHECK_EQ_INT(compare_add(c, side, p, &err), 0);
	profile_free(p);
}

static struct compare_result *run(struct compare *c, const struct compare_opts *o)
{
	struct compare_result *r = NULL;
	struct errmsg err = { "" };

	if (compare_run(c, o, &r, &err) < 0)
		fprintf(stderr, "compare_run: %s\n", err.msg);
	return r;
}

static const struct compare_row *row(const struct compare_result *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].name, name))
			return &r->rows[i];
	return NULL;
}

static void test_doubled_function(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;
	const struct compare_row *b, *a, *m;

	add(c, COMPARE_SIDE_BASE, "app;main;a 300\napp;main;b 300\napp;main;c 300\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 300\napp;main;b 600\napp;main;c 300\n");
	r = run(c, &o);
	CHECK(r != NULL);
	if (!r)
		goto out;
	CHECK(r->regressed);
	CHECK_EQ_INT(r->welch, 0);
	CHECK_EQ_INT(r->seconds, 1);
	CHECK_EQ_INT(r->self_regressions, 1);
	CHECK_EQ_STR(r->rows[0].name, "b"); /* the function that got slower comes first */
	b = row(r, "b");
	a = row(r, "a");
	m = row(r, "main");
	CHECK(b && b->self.verdict == COMPARE_REGRESSION);
	CHECK(b && fabs(b->self.change - 1.0) < 1e-9);
	CHECK(b && fabs(b->self.base - 3.0) < 1e-9 && fabs(b->self.new - 6.0) < 1e-9); /* seconds */
	CHECK(b && b->self.p_adj < 1e-6);
	CHECK(a && a->verdict == COMPARE_NOISE && a->self.change == 0);
	CHECK(m && m->self.verdict == COMPARE_NOISE && m->total.verdict == COMPARE_REGRESSION);
	CHECK(r->total.verdict == COMPARE_REGRESSION);
	CHECK(fabs(r->total.change - 1.0 / 3) < 1e-9);
	CHECK_EQ_INT(r->npaths, 0);
out:
	compare_result_free(r);
	compare_free(c);
}

static void test_same_profile_no_alarm(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;
	size_t i;

	/* Counts that differ as much as sampling makes them (about one standard deviation). */
	add(c, COMPARE_SIDE_BASE, "app;main;a 300\napp;main;b 300\napp;main;c 100\napp;x 4\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 318\napp;main;b 285\napp;main;c 110\napp;x 7\n");
	r = run(c, &o);
	CHECK(r && !r->regressed);
	for (i = 0; r && i < r->nrows; i++)
		CHECK(r->rows[i].verdict == COMPARE_NOISE);
	compare_result_free(r);
	compare_free(c);
}

static void test_small_counts_stay_noise(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;

	/* +200% on 2 samples is not evidence. */
	add(c, COMPARE_SIDE_BASE, "app;main;a 2\napp;main;b 20\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 6\napp;main;b 20\n");
	r = run(c, &o);
	CHECK(r && !r->regressed);
	CHECK(r && row(r, "a") && row(r, "a")->self.verdict == COMPARE_NOISE);
	compare_result_free(r);
	compare_free(c);
}

#define BASE10 "app;f1 400\napp;f2 400\napp;f3 400\napp;f4 400\napp;f5 400\napp;f6 400\n" \
	       "app;f7 400\napp;f8 400\napp;f9 400\napp;f10 400\n"

static void test_overdispersed_single_runs(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;

	/* Two runs whose functions differ by ~3 standard deviations of sampling each (a busy
	 * machine): with the sampling noise alone f5 (+30%, z = 4) would be an alarm. */
	add(c, COMPARE_SIDE_BASE, BASE10);
	add(c, COMPARE_SIDE_NEW, "app;f1 460\napp;f2 345\napp;f3 455\napp;f4 350\napp;f5 520\n"
				 "app;f6 400\napp;f7 450\napp;f8 352\napp;f9 396\napp;f10 445\n");
	r = run(c, &o);
	CHECK(r && r->dispersion > 2);
	CHECK(r && !r->regressed);
	compare_result_free(r);
	compare_free(c);

	/* ... and a doubled function on top of such noise is still found. */
	c = compare_new();
	add(c, COMPARE_SIDE_BASE, BASE10);
	add(c, COMPARE_SIDE_NEW, "app;f1 460\napp;f2 345\napp;f3 455\napp;f4 350\napp;f5 800\n"
				 "app;f6 400\napp;f7 450\napp;f8 352\napp;f9 396\napp;f10 445\n");
	r = run(c, &o);
	CHECK(r && r->regressed && !strcmp(r->rows[0].name, "f5"));
	compare_result_free(r);
	compare_free(c);

	/* With fewer than 10 functions there is no estimate: sampling noise only. */
	c = compare_new();
	add(c, COMPARE_SIDE_BASE, "app;f1 400\napp;f2 400\napp;f3 400\napp;f4 400\napp;f5 400\n");
	add(c, COMPARE_SIDE_NEW, "app;f1 460\napp;f2 345\napp;f3 455\napp;f4 350\napp;f5 400\n");
	r = run(c, &o);
	CHECK(r && r->dispersion == 1);
	compare_result_free(r);
	compare_free(c);
}

static void test_threshold_and_impact(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;

	/* +5% on a huge count: significant, but under the 10% threshold. */
	add(c, COMPARE_SIDE_BASE, "app;main;a 100000\napp;main;b 100000\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 105000\napp;main;b 100000\n");
	r = run(c, &o);
	CHECK(r && !r->regressed);
	CHECK(r && row(r, "a") && row(r, "a")->self.verdict == COMPARE_SMALL);
	compare_result_free(r);
	o.threshold = 0.04;
	r = run(c, &o);
	CHECK(r && r->regressed && row(r, "a")->self.verdict == COMPARE_REGRESSION);
	compare_result_free(r);
	/* +50% of a function that is 0.2% of the run: under the minimum impact. */
	compare_free(c);
	c = compare_new();
	o.threshold = 0.10;
	add(c, COMPARE_SIDE_BASE, "app;main;a 100000\napp;main;tiny 200\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 100000\napp;main;tiny 300\n");
	r = run(c, &o);
	CHECK(r && !r->regressed && row(r, "tiny")->self.verdict == COMPARE_SMALL);
	compare_result_free(r);
	compare_free(c);
}

static void test_several_runs(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;

	add(c, COMPARE_SIDE_BASE, "app;main;a 300\napp;main;b 100\napp;main;c 200\napp;d 50\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 310\napp;main;b 104\napp;main;c 190\napp;d 55\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 295\napp;main;b 97\napp;main;c 204\napp;d 48\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 305\napp;main;b 200\napp;main;c 199\napp;d 52\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 290\napp;main;b 195\napp;main;c 207\napp;d 47\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 312\napp;main;b 206\napp;main;c 196\napp;d 51\n");
	r = run(c, &o);
	CHECK(r && r->welch && r->runs[0] == 3 && r->runs[1] == 3);
	CHECK(r && r->prior_df > 0);
	CHECK(r && r->regressed && !strcmp(r->rows[0].name, "b"));
	CHECK(r && row(r, "a")->verdict == COMPARE_NOISE && row(r, "c")->verdict == COMPARE_NOISE);
	CHECK(r && fabs(row(r, "b")->self.base - (100 + 104 + 97) / 300.0) < 1e-9);
	compare_result_free(r);
	compare_free(c);

	/* The same runs of one version on both sides. */
	c = compare_new();
	add(c, COMPARE_SIDE_BASE, "app;main;a 300\napp;main;b 100\napp;main;c 200\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 310\napp;main;b 104\napp;main;c 190\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 295\napp;main;b 97\napp;main;c 204\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 305\napp;main;b 108\napp;main;c 199\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 290\napp;main;b 95\napp;main;c 207\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 312\napp;main;b 101\napp;main;c 196\n");
	r = run(c, &o);
	CHECK(r && !r->regressed);
	CHECK(r && r->self_regressions + r->total_regressions + r->improvements == 0);
	compare_result_free(r);
	compare_free(c);
}

static void test_noisy_function_is_not_flagged(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;

	/* d swings by 2x between runs of one side: a +40% mean difference is within its noise. */
	add(c, COMPARE_SIDE_BASE, "app;main;a 300\napp;main;b 300\napp;main;d 100\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 305\napp;main;b 296\napp;main;d 200\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 298\napp;main;b 303\napp;main;d 120\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 302\napp;main;b 299\napp;main;d 260\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 296\napp;main;b 305\napp;main;d 130\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 301\napp;main;b 297\napp;main;d 190\n");
	r = run(c, &o);
	CHECK(r && row(r, "d") && row(r, "d")->self.verdict != COMPARE_REGRESSION);
	compare_result_free(r);
	compare_free(c);
}

static void test_burst_in_one_run(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;

	/* Steady functions give a tight prior; irq is hit by a burst of interrupts in one new run
	 * (0, 1, 17 samples): its own variance must count, it is no regression. */
	add(c, COMPARE_SIDE_BASE, "app;main;a 300\napp;main;b 200\napp;main;c 100\napp;main;irq 1\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 302\napp;main;b 198\napp;main;c 101\n");
	add(c, COMPARE_SIDE_BASE, "app;main;a 299\napp;main;b 201\napp;main;c 99\napp;main;irq 1\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 301\napp;main;b 199\napp;main;c 100\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 298\napp;main;b 202\napp;main;c 102\napp;main;irq 1\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 300\napp;main;b 200\napp;main;c 98\napp;main;irq 17\n");
	r = run(c, &o);
	CHECK(r && r->welch && r->prior_df > 0 && r->prior_df <= 16);
	CHECK(r && row(r, "irq") && row(r, "irq")->verdict != COMPARE_REGRESSION);
	CHECK(r && !r->regressed);
	compare_result_free(r);
	compare_free(c);
}

static void test_normalize(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;

	/* A runner 30% slower at everything. */
	add(c, COMPARE_SIDE_BASE, "app;main;a 1000\napp;main;b 1000\napp;main;c 1000\napp;main;d 500\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 1300\napp;main;b 1300\napp;main;c 1300\napp;main;d 650\n");
	r = run(c, &o);
	CHECK(r && r->regressed && r->self_regressions == 4);
	compare_result_free(r);
	o.normalize = 1;
	r = run(c, &o);
	CHECK(r && !r->regressed);
	CHECK(r && fabs(r->scale - 1.3) < 1e-9);
	CHECK(r && !r->total.tested);
	compare_result_free(r);
	compare_free(c);

	/* ... and one function 2x on top of it is still found. */
	c = compare_new();
	add(c, COMPARE_SIDE_BASE, "app;main;a 1000\napp;main;b 1000\napp;main;c 1000\napp;main;d 500\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 1300\napp;main;b 2600\napp;main;c 1300\napp;main;d 650\n");
	r = run(c, &o);
	CHECK(r && r->regressed && r->self_regressions == 1 && !strcmp(r->rows[0].name, "b"));
	CHECK(r && fabs(row(r, "b")->self.change - 1.0) < 1e-9);
	compare_result_free(r);
	compare_free(c);
}

static void test_new_and_vanished_paths(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;
	size_t i, nadded = 0, ngone = 0;

	add(c, COMPARE_SIDE_BASE, "app;main;a 500\napp;main;b 500\napp;main;old;deep 100\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 500\napp;main;b 500\napp;main;fresh;x;y 120\n");
	r = run(c, &o);
	CHECK(r != NULL);
	for (i = 0; r && i < r->npaths; i++) {
		const struct compare_path *p = &r->paths[i];

		if (p->added) {
			nadded++;
			/* only where it starts to differ: main -> fresh, not main -> fresh -> x -> y */
			CHECK_EQ_INT(p->nframes, 3);
			CHECK_EQ_STR(p->frames[2], "fresh");
			CHECK(fabs(p->share - 120.0 / 1120) < 1e-9);
		} else {
			ngone++;
			CHECK_EQ_STR(p->frames[p->nframes - 1], "old");
		}
	}
	CHECK_EQ_INT(nadded, 1);
	CHECK_EQ_INT(ngone, 1);
	CHECK(r && r->paths[0].added); /* added first */
	CHECK(r && row(r, "y") && row(r, "y")->verdict == COMPARE_NEW);
	CHECK(r && row(r, "deep") && row(r, "deep")->verdict == COMPARE_GONE);
	CHECK(r && r->added >= 1 && r->gone >= 1);
	compare_result_free(r);
	compare_free(c);
}

static void test_frame_identity(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;
	struct profile *p;
	struct errmsg err;

	/* A Python function whose line moved is the same function. */
	add(c, COMPARE_SIDE_BASE, "python;<module> (app.py:1);work (app.py:10) 400\n");
	add(c, COMPARE_SIDE_NEW, "python;<module> (app.py:1);work (app.py:12) 400\n");
	r = run(c, &o);
	CHECK(r && row(r, "work (app.py)") && row(r, "work (app.py)")->verdict == COMPARE_NOISE);
	CHECK(r && r->npaths == 0);
	compare_result_free(r);
	compare_free(c);

	/* pprof's comm label is the root frame, as folded files have it. */
	c = compare_new();
	add(c, COMPARE_SIDE_BASE, "prog;main;a 400\n");
	p = prof("main;a 400\n");
	profile_set_label(p, "comm", "prog");
	CHECK_EQ_INT(compare_add(c, COMPARE_SIDE_NEW, p, &err), 0);
	profile_free(p);
	r = run(c, &o);
	CHECK(r && r->npaths == 0 && row(r, "prog") && row(r, "prog")->total.base == 4.0 &&
	      row(r, "prog")->total.new == 4.0);
	compare_result_free(r);
	compare_free(c);
}

static void test_errors(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r = NULL;
	struct profile *p;
	struct errmsg err = { "" };

	CHECK_EQ_INT(compare_run(c, &o, &r, &err), -EINVAL);
	CHECK(strstr(err.msg, "no base run") != NULL);
	add(c, COMPARE_SIDE_BASE, "main;a 10\n");
	/* a folded profile (no sampling period) next to a recorded one */
	p = NULL;
	CHECK_EQ_INT(folded_parse("main;a 10\n", 10, 10, &p, &err), 0);
	CHECK_EQ_INT(compare_add(c, COMPARE_SIDE_NEW, p, &err), -EINVAL);
	CHECK(strstr(err.msg, "sampling period") != NULL);
	profile_free(p);
	/* not CPU samples */
	p = prof("main;a 10\n");
	profile_set_type(p, "inuse_space", "bytes", 0);
	CHECK_EQ_INT(compare_add(c, COMPARE_SIDE_NEW, p, &err), -EINVAL);
	CHECK(strstr(err.msg, "not a CPU sample profile") != NULL);
	profile_free(p);
	CHECK_EQ_INT(compare_run(c, &o, &r, &err), -EINVAL);
	CHECK(strstr(err.msg, "no new run") != NULL);
	compare_free(c);
	compare_free(NULL);
	compare_result_free(NULL);
}

static void test_reports(void)
{
	struct compare_opts o = COMPARE_OPTS_INIT;
	struct compare *c = compare_new();
	struct compare_result *r;
	struct diffreport_ctx ctx = { "base.pb.gz", "new.pb.gz", "http://x:4040/?view=diff&lq=a", 5 };
	struct buf b = BUF_INIT(BUF_UNLIMITED), small = BUF_INIT(64);
	struct mj *j;

	add(c, COMPARE_SIDE_BASE, "app;main;a 300\napp;main;op|er 300\napp;main;c 300\n");
	add(c, COMPARE_SIDE_NEW, "app;main;a 300\napp;main;op|er 600\napp;main;c 300\napp;main;n 100\n");
	r = run(c, &o);
	if (!r) {
		CHECK(r != NULL);
		compare_free(c);
		return;
	}
	CHECK_EQ_INT(diffreport_markdown(r, &ctx, &b), 0);
	CHECK(strstr(b.data, "### scorch: CPU regression in `op\\|er` (+100.0% self time)") != NULL);
	CHECK(strstr(b.data, "| function | self: base → new |") != NULL);
	CHECK(strstr(b.data, "| `op\\|er` | 3.00 s → 6.00 s | **+100.0%** |") != NULL);
	CHECK(strstr(b.data, "[Open this comparison in the scorch UI](http://x:4040/?view=diff&lq=a)") != NULL);
	CHECK(strstr(b.data, "**New hot paths**") != NULL);
	CHECK(strstr(b.data, "Callers whose total grew with it: `app` (+44.4%), `main` (+44.4%)") != NULL);
	CHECK(strstr(b.data, "<details>") != NULL && strstr(b.data, "</details>") != NULL);
	buf_reset(&b);

	CHECK_EQ_INT(diffreport_text(r, &ctx, &b), 0);
	CHECK(strncmp(b.data, "REGRESSION: 1 function slower", 29) == 0);
	CHECK(strstr(b.data, "op|er") != NULL);
	buf_reset(&b);

	CHECK_EQ_INT(diffreport_json(r, &ctx, &b), 0);
	j = mj_parse(b.data, b.len);
	CHECK(j != NULL);
	if (j) {
		const struct mj *f = mj_get(j, "functions");

		CHECK(mj_get(j, "regressed") && mj_get(j, "regressed")->num == 1);
		CHECK(f && f->type == MJ_ARR && f->n == r->nrows);
		CHECK(f && f->n && !strcmp(mj_get(&f->items[0], "name")->str, "op|er"));
		CHECK(mj_get(j, "paths") && mj_get(j, "paths")->n == r->npaths);
		CHECK(!strcmp(mj_get(j, "test")->str, "poisson"));
		mj_free(j);
	}
	/* Too small a buffer: -E2BIG, nothing left behind. */
	CHECK_EQ_INT(diffreport_markdown(r, &ctx, &small), -E2BIG);
	CHECK_EQ_INT(small.len, 0);
	CHECK_EQ_INT(diffreport_json(r, &ctx, &small), -E2BIG);
	CHECK_EQ_INT(small.len, 0);

	buf_release(&b);
	buf_release(&small);
	compare_result_free(r);
	compare_free(c);
}

int main(void)
{
	RUN(test_doubled_function);
	RUN(test_same_profile_no_alarm);
	RUN(test_small_counts_stay_noise);
	RUN(test_overdispersed_single_runs);
	RUN(test_threshold_and_impact);
	RUN(test_several_runs);
	RUN(test_noisy_function_is_not_flagged);
	RUN(test_burst_in_one_run);
	RUN(test_normalize);
	RUN(test_new_and_vanished_paths);
	RUN(test_frame_identity);
	RUN(test_errors);
	RUN(test_reports);
	return test_summary();
}
