/* stats.h: the few statistical tests `scorch diff` rests on (docs/ci.md states how they are
 * used): exact binomial tails (the conditional test of two Poisson counts), Welch's t-test,
 * Holm's step-down adjustment for many tests, and a weighted median.
 *
 * Pure functions of their arguments; no allocation except in stats_holm() and
 * stats_weighted_median() (scratch space, freed before they return). Probabilities are doubles
 * in [0, 1]; arguments out of range give NaN, never a crash. */
#ifndef SCORCH_STATS_H
#define SCORCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* The regularized incomplete beta function I_x(a, b), a > 0, b > 0, 0 <= x <= 1. Accurate to
 * about 1e-10 relative for the arguments binomial and t tails need (a, b up to ~1e9). */
double stats_betainc(double a, double b, double x);

/* X ~ Binomial(n, p): P(X >= k) and P(X <= k). */
double stats_binom_sf(uint64_t k, uint64_t n, double p);
double stats_binom_cdf(uint64_t k, uint64_t n, double p);
/* Two-sided exact test of k successes in n trials against probability p: twice the smaller
 * tail, at most 1. n == 0 gives 1. */
double stats_binom_test(uint64_t k, uint64_t n, double p);

/* Two-sided p-value of Student's t with df degrees of freedom (df > 0, may be fractional). */
double stats_t_test_p(double t, double df);

struct stats_welch {
	double t;  /* (mean2 - mean1) / standard error */
	double df; /* Welch-Satterthwaite degrees of freedom */
	double p;  /* two-sided */
};
/* Welch's unequal-variance t-test of mean2 against mean1, from each sample's mean, variance
 * (unbiased, n-1) and size (each n >= 2). With both variances 0 the p-value is 1 when the means
 * are equal and 0 otherwise. */
void stats_welch(double mean1, double var1, size_t n1, double mean2, double var2, size_t n2,
		 struct stats_welch *out);

/* Digamma and trigamma functions (x > 0), and the inverse of trigamma (y > 0). */
double stats_digamma(double x);
double stats_trigamma(double x);
double stats_trigamma_inverse(double y);

/* Empirical Bayes prior for many variances (Smyth's moderated t, as in limma): given n sample
 * variances var[i], each with d degrees of freedom, fit the scaled inverse chi-square prior
 * they look drawn from by the method of moments on log variances. *d0 receives its degrees of
 * freedom (INFINITY when the variances vary no more than chance; 0 when there are fewer than
 * 3 positive variances), *s0 its typical variance. A moderated variance is then
 * (d0 * s0 + d * var) / (d0 + d), with d0 + d degrees of freedom. */
void stats_fit_prior(const double *var, size_t n, double d, double *d0, double *s0);

/* Holm's step-down adjustment: adj[i] is the smallest family-wise error rate at which p[i]
 * would be rejected among all n tests (monotone, at most 1). adj may alias p. */
void stats_holm(const double *p, size_t n, double *adj);

/* Tarone's rule for discrete tests: a test whose smallest achievable p-value (pmin[i], e.g.
 * all the samples on one side) cannot reach its threshold need not be counted among the
 * tests. Finds the smallest K with at most K tests of pmin <= alpha / K, sets keep[i] for
 * those, and returns their number. Family-wise error stays at most alpha when the kept tests
 * are then adjusted among themselves (stats_holm()). */
size_t stats_tarone(const double *pmin, size_t n, double alpha, unsigned char *keep);

/* The weighted median of values (weights > 0): the smallest value at which the cumulative
 * weight reaches half the total. n == 0 gives NaN. */
double stats_weighted_median(const double *values, const double *weights, size_t n);

#endif
