/* test_stats.c: binomial tails against exact sums, t tails against table values, Welch's
 * test, Holm's adjustment and the weighted median (src/lib/stats.c). */
#include "lib/stats.h"
#include "test.h"

#include <math.h>

/* |a - b| within rel of b (or within 1e-300 when b is 0). */
static int close_to(double a, double b, double rel)
{
	if (b == 0)
		return fabs(a) < 1e-300;
	return fabs(a - b) <= rel * fabs(b);
}

static void test_betainc_edges(void)
{
	CHECK(stats_betainc(2, 3, 0) == 0);
	CHECK(stats_betainc(2, 3, 1) == 1);
	CHECK(isnan(stats_betainc(0, 3, 0.5)));
	CHECK(isnan(stats_betainc(2, 3, 1.5)));
	CHECK(isnan(stats_betainc(2, 3, NAN)));
	/* I_x(1, 1) = x; I_x(a, 1) = x^a */
	CHECK(close_to(stats_betainc(1, 1, 0.3), 0.3, 1e-12));
	CHECK(close_to(stats_betainc(3, 1, 0.5), 0.125, 1e-12));
	/* symmetry I_x(a,b) = 1 - I_{1-x}(b,a) */
	CHECK(close_to(stats_betainc(7, 4, 0.8), 1 - stats_betainc(4, 7, 0.2), 1e-12));
}

static void test_binomial_tails(void)
{
	/* Exact sums computed with integer binomial coefficients. */
	CHECK(close_to(stats_binom_sf(7, 10, 0.5), 0.171875, 1e-10));
	CHECK(close_to(stats_binom_cdf(3, 10, 0.5), 0.171875, 1e-10));
	CHECK(close_to(stats_binom_sf(40, 60, 0.5), 0.00674464686559593, 1e-9));
	CHECK(close_to(stats_binom_cdf(20, 60, 0.5), 0.00674464686559593, 1e-9));
	CHECK(close_to(stats_binom_sf(30, 100, 0.2), 0.011248978720991697, 1e-9));
	CHECK(close_to(stats_binom_sf(600, 1000, 0.5), 1.3642320780330092e-10, 1e-7));
	CHECK(close_to(stats_binom_sf(5500, 10000, 0.5), 7.755320284123021e-24, 1e-6));
	/* edges */
	CHECK(stats_binom_sf(0, 10, 0.3) == 1);
	CHECK(stats_binom_sf(11, 10, 0.3) == 0);
	CHECK(stats_binom_cdf(10, 10, 0.3) == 1);
	CHECK(stats_binom_sf(3, 10, 0) == 0);
	CHECK(stats_binom_sf(3, 10, 1) == 1);
	CHECK(stats_binom_cdf(3, 10, 1) == 0);
	CHECK(isnan(stats_binom_sf(3, 10, -0.1)));
	/* Large counts: a million trials must not take long or lose the answer. */
	CHECK(stats_binom_test(500000, 1000000, 0.5) > 0.99);
	CHECK(stats_binom_test(510000, 1000000, 0.5) < 1e-80);
}

static void test_binomial_two_sided(void)
{
	CHECK(close_to(stats_binom_test(7, 10, 0.5), 2 * 0.171875, 1e-10));
	CHECK(close_to(stats_binom_test(3, 10, 0.5), 2 * 0.171875, 1e-10));
	CHECK(stats_binom_test(5, 10, 0.5) == 1);
	CHECK(stats_binom_test(0, 0, 0.5) == 1);
	CHECK(isnan(stats_binom_test(11, 10, 0.5)));
	/* everything on one side: p = 2 * 0.5^n */
	CHECK(close_to(stats_binom_test(10, 10, 0.5), 2.0 / 1024, 1e-10));
}

static void test_t_tails(void)
{
	/* Two-sided 5% critical values of Student's t tables. */
	CHECK(close_to(stats_t_test_p(12.706, 1), 0.05, 1e-3));
	CHECK(close_to(stats_t_test_p(2.776, 4), 0.05, 1e-3));
	CHECK(close_to(stats_t_test_p(2.228, 10), 0.05, 1e-3));
	CHECK(close_to(stats_t_test_p(1.960, 1e7), 0.05, 1e-3));
	/* 1% two-sided, 4 df */
	CHECK(close_to(stats_t_test_p(4.604, 4), 0.01, 1e-3));
	CHECK(stats_t_test_p(0, 3) == 1);
	CHECK(stats_t_test_p(INFINITY, 3) == 0);
	CHECK(isnan(stats_t_test_p(1, 0)));
	CHECK(close_to(stats_t_test_p(-2.228, 10), stats_t_test_p(2.228, 10), 1e-12));
}

static void test_welch(void)
{
	struct stats_welch w;

	/* Equal variances and sizes: t = diff / sqrt(2 var / n), df = 2n - 2. */
	stats_welch(10, 4, 5, 14, 4, 5, &w);
	CHECK(close_to(w.t, 4 / sqrt(8.0 / 5), 1e-12));
	CHECK(close_to(w.df, 8, 1e-12));
	CHECK(w.p < 0.05 && w.p > 0.01);
	/* Unequal: df between min(n) - 1 and n1 + n2 - 2 */
	stats_welch(10, 1, 3, 12, 9, 3, &w);
	CHECK(w.df > 2 - 1e-9 && w.df < 4);
	/* zero variances */
	stats_welch(1, 0, 3, 1, 0, 3, &w);
	CHECK(w.p == 1);
	stats_welch(1, 0, 3, 2, 0, 3, &w);
	CHECK(w.p == 0);
	stats_welch(1, 1, 1, 2, 1, 3, &w);
	CHECK(isnan(w.p));
}

static void test_holm(void)
{
	double p[5] = { 0.01, 0.04, 0.03, 0.005, 0.5 }, adj[5];

	stats_holm(p, 5, adj);
	/* sorted: 0.005*5=0.025, 0.01*4=0.04, 0.03*3=0.09, 0.04*2=0.08->0.09, 0.5*1=0.5 */
	CHECK(close_to(adj[3], 0.025, 1e-12));
	CHECK(close_to(adj[0], 0.04, 1e-12));
	CHECK(close_to(adj[2], 0.09, 1e-12));
	CHECK(close_to(adj[1], 0.09, 1e-12));
	CHECK(close_to(adj[4], 0.5, 1e-12));
	/* capped at 1, NaN counts as 1, in place */
	p[0] = 0.9;
	p[1] = NAN;
	stats_holm(p, 2, p);
	CHECK(p[0] == 1 && p[1] == 1);
	stats_holm(p, 0, p);
}

static void test_tarone(void)
{
	/* Three tests that can reach any p, and seven that cannot go below 0.1 (few samples). */
	double pmin[10] = { 0, 0, 1e-6, 0.1, 0.1, 0.2, 0.5, 0.5, 1, NAN };
	unsigned char keep[10];
	size_t i;

	CHECK_EQ_INT(stats_tarone(pmin, 10, 0.05, keep), 3);
	for (i = 0; i < 10; i++)
		CHECK_EQ_INT(keep[i], i < 3);
	/* All can be significant: all are kept. */
	for (i = 0; i < 10; i++)
		pmin[i] = 0;
	CHECK_EQ_INT(stats_tarone(pmin, 10, 0.05, keep), 10);
	CHECK_EQ_INT(stats_tarone(pmin, 0, 0.05, keep), 0);
	/* None can: none are kept. */
	for (i = 0; i < 10; i++)
		pmin[i] = 0.5;
	CHECK_EQ_INT(stats_tarone(pmin, 10, 0.05, keep), 0);
}

static void test_weighted_median(void)
{
	double v[4] = { 2, 1, 3, 10 }, w[4] = { 1, 1, 1, 1 };

	CHECK(stats_weighted_median(v, w, 4) == 2);
	w[3] = 10; /* the heavy value wins */
	CHECK(stats_weighted_median(v, w, 4) == 10);
	CHECK(isnan(stats_weighted_median(v, w, 0)));
	w[0] = -1; /* negative weights count as 0 */
	w[3] = 1;
	CHECK(stats_weighted_median(v, w, 4) == 3);
}

static void test_gamma_functions(void)
{
	/* Reference values from mpmath. */
	CHECK(close_to(stats_digamma(0.5), -1.9635100260214235, 1e-10));
	CHECK(close_to(stats_digamma(7.3), 1.9178203356379862, 1e-10));
	CHECK(close_to(stats_trigamma(0.5), 4.934802200544679, 1e-10));
	CHECK(close_to(stats_trigamma(7.3), 0.1467957681314271, 1e-10));
	CHECK(close_to(stats_trigamma_inverse(stats_trigamma(0.5)), 0.5, 1e-8));
	CHECK(close_to(stats_trigamma_inverse(stats_trigamma(123.0)), 123.0, 1e-8));
	CHECK(isnan(stats_digamma(0)) && isnan(stats_trigamma(-1)) && isnan(stats_trigamma_inverse(0)));
}

static void test_fit_prior(void)
{
	/* Identical variances: infinite prior degrees of freedom. */
	double same[5] = { 2, 2, 2, 2, 2 }, narrow[6] = { 1, 1.3, 0.8, 1.1, 0.9, 1.2 };
	double wide[6] = { 0.01, 1, 100, 0.1, 10, 1 }, d0, s0, d0w, s0w;

	stats_fit_prior(same, 5, 4, &d0, &s0);
	CHECK(isinf(d0));
	CHECK(close_to(s0, 2 * exp(log(2.0) - stats_digamma(2)), 1e-9));
	/* Narrow spread (less than chi-square with 2 df gives): infinite too; wide: small d0. */
	stats_fit_prior(narrow, 6, 2, &d0, &s0);
	CHECK(isinf(d0));
	stats_fit_prior(wide, 6, 2, &d0w, &s0w);
	CHECK(d0w > 0 && d0w < 2);
	CHECK(s0w > 0);
	/* Too few positive variances: no prior. */
	same[0] = same[1] = same[2] = 0;
	stats_fit_prior(same, 5, 4, &d0, &s0);
	CHECK(d0 == 0);
}

int main(void)
{
	RUN(test_gamma_functions);
	RUN(test_fit_prior);
	RUN(test_betainc_edges);
	RUN(test_binomial_tails);
	RUN(test_binomial_two_sided);
	RUN(test_t_tails);
	RUN(test_welch);
	RUN(test_holm);
	RUN(test_tarone);
	RUN(test_weighted_median);
	return test_summary();
}
