/* stats.c: binomial and t tails through the incomplete beta function, Welch's test, Holm's
 * adjustment, weighted median (see stats.h). */
#include "lib/stats.h"
#include "lib/alloc.h"

#include <math.h>
#include <stdlib.h>

#define BETACF_MAX_ITER 200000
#define BETACF_EPS      1e-15
#define BETACF_TINY     1e-300

/* The continued fraction of I_x(a, b) (modified Lentz evaluation). It converges quickly for
 * x < (a + 1) / (a + b + 2); the caller uses the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) for the
 * rest. */
static double betacf(double a, double b, double x)
{
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap, h;
	int m;

	if (fabs(d) < BETACF_TINY)
		d = BETACF_TINY;
	d = 1 / d;
	h = d;
	for (m = 1; m <= BETACF_MAX_ITER; m++) {
		double m2 = 2.0 * m, aa, del;

		aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1 + aa * d;
		if (fabs(d) < BETACF_TINY)
			d = BETACF_TINY;
		c = 1 + aa / c;
		if (fabs(c) < BETACF_TINY)
			c = BETACF_TINY;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		if (fabs(d) < BETACF_TINY)
			d = BETACF_TINY;
		c = 1 + aa / c;
		if (fabs(c) < BETACF_TINY)
			c = BETACF_TINY;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < BETACF_EPS)
			break;
	}
	return h;
}

double stats_betainc(double a, double b, double x)
{
	double lfront;

	if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1))
		return NAN;
	if (x == 0)
		return 0;
	if (x == 1)
		return 1;
	lfront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	if (x < (a + 1) / (a + b + 2))
		return exp(lfront) * betacf(a, b, x) / a;
	return 1 - exp(lfront) * betacf(b, a, 1 - x) / b;
}

double stats_binom_sf(uint64_t k, uint64_t n, double p)
{
	if (!(p >= 0) || !(p <= 1))
		return NAN;
	if (k == 0)
		return 1;
	if (k > n)
		return 0;
	if (p == 0)
		return 0;
	if (p == 1)
		return 1;
	return stats_betainc((double)k, (double)(n - k + 1), p);
}

double stats_binom_cdf(uint64_t k, uint64_t n, double p)
{
	if (!(p >= 0) || !(p <= 1))
		return NAN;
	if (k >= n)
		return 1;
	if (p == 0)
		return 1;
	if (p == 1)
		return 0;
	/* P(X <= k) = P(n - X >= n - k) with n - X ~ Binomial(n, 1 - p). */
	return stats_betainc((double)(n - k), (double)(k + 1), 1 - p);
}

double stats_binom_test(uint64_t k, uint64_t n, double p)
{
	double lo, hi, t;

	if (!(p >= 0) || !(p <= 1) || k > n)
		return NAN;
	if (n == 0)
		return 1;
	lo = stats_binom_cdf(k, n, p);
	hi = stats_binom_sf(k, n, p);
	t = 2 * (lo < hi ? lo : hi);
	return t > 1 ? 1 : t;
}

double stats_t_test_p(double t, double df)
{
	if (!(df > 0) || isnan(t))
		return NAN;
	if (isinf(t))
		return 0;
	return stats_betainc(df / 2, 0.5, df / (df + t * t));
}

void stats_welch(double mean1, double var1, size_t n1, double mean2, double var2, size_t n2,
		 struct stats_welch *out)
{
	double s1, s2, se2;

	if (n1 < 2 || n2 < 2 || !(var1 >= 0) || !(var2 >= 0)) {
		out->t = out->df = out->p = NAN;
		return;
	}
	s1 = var1 / (double)n1;
	s2 = var2 / (double)n2;
	se2 = s1 + s2;
	if (se2 == 0) {
		out->t = mean1 == mean2 ? 0 : (mean2 > mean1 ? INFINITY : -INFINITY);
		out->df = (double)(n1 + n2 - 2);
		out->p = mean1 == mean2 ? 1 : 0;
		return;
	}
	out->t = (mean2 - mean1) / sqrt(se2);
	out->df = se2 * se2 / (s1 * s1 / (double)(n1 - 1) + s2 * s2 / (double)(n2 - 1));
	out->p = stats_t_test_p(out->t, out->df);
}

double stats_digamma(double x)
{
	double r = 0, x2;

	if (!(x > 0))
		return NAN;
	while (x < 10) {
		r -= 1 / x;
		x += 1;
	}
	x2 = 1 / (x * x);
	return r + log(x) - 0.5 / x -
	       x2 * (1.0 / 12 - x2 * (1.0 / 120 - x2 * (1.0 / 252 - x2 * (1.0 / 240 - x2 / 132))));
}

double stats_trigamma(double x)
{
	double r = 0, x2;

	if (!(x > 0))
		return NAN;
	while (x < 10) {
		r += 1 / (x * x);
		x += 1;
	}
	x2 = 1 / (x * x);
	return r + 1 / x + x2 / 2 +
	       x2 / x * (1.0 / 6 - x2 * (1.0 / 30 - x2 * (1.0 / 42 - x2 / 30)));
}

double stats_trigamma_inverse(double y)
{
	double lo = -30, hi = 30; /* log of the answer; trigamma decreases */
	int i;

	if (!(y > 0))
		return NAN;
	for (i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (stats_trigamma(exp(mid)) > y)
			lo = mid;
		else
			hi = mid;
	}
	return exp((lo + hi) / 2);
}

void stats_fit_prior(const double *var, size_t n, double d, double *d0, double *s0)
{
	double sum = 0, sum2 = 0, mean, ev, corr;
	size_t i, k = 0;

	*d0 = 0;
	*s0 = NAN;
	if (!(d > 0))
		return;
	corr = log(d / 2) - stats_digamma(d / 2); /* E[log chi2_d / d] = -corr */
	for (i = 0; i < n; i++) {
		double e;

		if (!(var[i] > 0) || !isfinite(var[i]))
			continue;
		e = log(var[i]) + corr;
		sum += e;
		sum2 += e * e;
		k++;
	}
	if (k < 3)
		return;
	mean = sum / (double)k;
	ev = (sum2 - sum * mean) / (double)(k - 1) - stats_trigamma(d / 2);
	if (ev > 0) {
		*d0 = 2 * stats_trigamma_inverse(ev);
		*s0 = exp(mean + stats_digamma(*d0 / 2) - log(*d0 / 2));
	} else {
		*d0 = INFINITY;
		*s0 = exp(mean);
	}
}

struct pidx {
	double p;
	size_t i;
};

static int pidx_cmp(const void *a, const void *b)
{
	const struct pidx *x = a, *y = b;

	if (x->p < y->p)
		return -1;
	if (x->p > y->p)
		return 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

void stats_holm(const double *p, size_t n, double *adj)
{
	struct pidx *v;
	double run = 0;
	size_t k;

	if (!n)
		return;
	v = xmalloc(n * sizeof(*v));
	for (k = 0; k < n; k++) {
		v[k].p = isnan(p[k]) ? 1 : p[k];
		v[k].i = k;
	}
	qsort(v, n, sizeof(*v), pidx_cmp);
	for (k = 0; k < n; k++) {
		double a = (double)(n - k) * v[k].p;

		if (a > 1)
			a = 1;
		if (a > run)
			run = a;
		adj[v[k].i] = run;
	}
	xfree(v);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

size_t stats_tarone(const double *pmin, size_t n, double alpha, unsigned char *keep)
{
	double *v;
	size_t k, cnt = 0, i;

	if (!n)
		return 0;
	v = xmalloc(n * sizeof(*v));
	for (i = 0; i < n; i++)
		v[i] = isnan(pmin[i]) ? 1 : pmin[i];
	qsort(v, n, sizeof(*v), dbl_cmp);
	for (k = 1; k <= n; k++) {
		double th = alpha / (double)k;

		/* cnt = tests with pmin <= th; th shrinks as k grows, so cnt only falls */
		cnt = 0;
		{
			size_t lo = 0, hi = n;

			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (v[mid] <= th)
					lo = mid + 1;
				else
					hi = mid;
			}
			cnt = lo;
		}
		if (cnt <= k)
			break;
	}
	if (k > n)
		k = n;
	for (i = 0, cnt = 0; i < n; i++) {
		keep[i] = !isnan(pmin[i]) && pmin[i] <= alpha / (double)k;
		cnt += keep[i];
	}
	xfree(v);
	return cnt;
}

struct vw {
	double v, w;
};

static int vw_cmp(const void *a, const void *b)
{
	const struct vw *x = a, *y = b;

	return x->v < y->v ? -1 : x->v > y->v;
}

double stats_weighted_median(const double *values, const double *weights, size_t n)
{
	struct vw *v;
	double total = 0, cum = 0, m = NAN;
	size_t i;

	if (!n)
		return NAN;
	v = xmalloc(n * sizeof(*v));
	for (i = 0; i < n; i++) {
		v[i].v = values[i];
		v[i].w = weights[i] > 0 ? weights[i] : 0;
		total += v[i].w;
	}
	qsort(v, n, sizeof(*v), vw_cmp);
	for (i = 0; i < n; i++) {
		cum += v[i].w;
		if (cum >= total / 2) {
			m = v[i].v;
			break;
		}
	}
	xfree(v);
	return m;
}
