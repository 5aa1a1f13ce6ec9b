/* compare.c: per-function statistics of the runs of two versions and the tests between them
 * (see compare.h and docs/ci.md). Functions are keyed by display name; Python frames drop
 * their line ("qual (file.py:12)" is "qual (file.py)"), so an edit that moves a function does
 * not make it new. Call paths live in one trie shared by both sides. */
#include "ci/compare.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/stats.h"
#include "lib/strtab.h"
#include "profile/profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 4096

struct crun {
	int side;
	double unit;    /* value of one sample: seconds, or 1 (samples) */
	int64_t total;  /* samples */
	int64_t *self;  /* samples per key id */
	int64_t *tot;
	size_t cap;
};

struct cnode {
	uint32_t parent, key;
	int64_t cnt[2]; /* samples on each side, all runs */
};

struct compare {
	struct strtab *keys;
	struct crun *runs;
	size_t nruns, runs_cap;
	struct u64map child;    /* (parent << 32 | key) -> node id */
	struct cnode *nodes;    /* nodes[0] is the root */
	size_t nnodes, nodes_cap;
	int truncated;
	int has_period;         /* -1 unknown yet, 0 no, 1 yes */
	uint32_t *stamp;        /* per key: last stack that counted it in total */
	size_t stamp_cap;
	uint32_t epoch;
};

struct compare *compare_new(void)
{
	struct compare *c = xcalloc(1, sizeof(*c));

	c->keys = strtab_new();
	u64map_init(&c->child);
	ALLOC_GROW(c->nodes, 1, c->nodes_cap);
	memset(&c->nodes[0], 0, sizeof(c->nodes[0]));
	c->nnodes = 1;
	c->has_period = -1;
	return c;
}

void compare_free(struct compare *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nruns; i++) {
		xfree(c->runs[i].self);
		xfree(c->runs[i].tot);
	}
	xfree(c->runs);
	xfree(c->nodes);
	xfree(c->stamp);
	u64map_release(&c->child);
	strtab_free(c->keys);
	xfree(c);
}

const char *compare_verdict_name(enum compare_verdict v)
{
	switch (v) {
	case COMPARE_REGRESSION: return "regression";
	case COMPARE_IMPROVEMENT: return "improvement";
	case COMPARE_NEW: return "new";
	case COMPARE_GONE: return "gone";
	case COMPARE_SMALL: return "changed (small)";
	default: return "noise";
	}
}

/* "name (file.py:123)" -> "name (file.py)": the line is not part of a function's identity. */
static size_t strip_line(char *name, size_t len)
{
	size_t i = len;

	if (len < 4 || name[len - 1] != ')')
		return len;
	i = len - 1;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == len - 1 || i < 2 || name[i - 1] != ':' || !memchr(name, '(', i))
		return len;
	name[i - 1] = ')';
	name[i] = '\0';
	return i;
}

static void run_grow(struct crun *r, size_t nkeys)
{
	size_t old = r->cap;

	if (nkeys <= old)
		return;
	r->self = xgrow(r->self, &r->cap, nkeys, sizeof(*r->self));
	r->tot = xrealloc(r->tot, r->cap * sizeof(*r->tot));
	memset(r->self + old, 0, (r->cap - old) * sizeof(*r->self));
	memset(r->tot + old, 0, (r->cap - old) * sizeof(*r->tot));
}

/* The child of node `parent` for key, created unless the trie is full (then 0). */
static uint32_t trie_child(struct compare *c, uint32_t parent, uint32_t key)
{
	uint64_t k = ((uint64_t)parent << 32 | key) + 1;
	uint64_t *v = u64map_get(&c->child, k);

	if (v)
		return (uint32_t)*v;
	if (c->nnodes >= COMPARE_MAX_PATHS) {
		c->truncated = 1;
		return 0;
	}
	ALLOC_GROW(c->nodes, c->nnodes + 1, c->nodes_cap);
	c->nodes[c->nnodes].parent = parent;
	c->nodes[c->nnodes].key = key;
	c->nodes[c->nnodes].cnt[0] = c->nodes[c->nnodes].cnt[1] = 0;
	u64map_put(&c->child, k, c->nnodes);
	return (uint32_t)c->nnodes++;
}

/* Which sample values are CPU samples, and what one is worth. */
static int sample_unit(const struct profile *p, double *unit, int *per_value, struct errmsg *err)
{
	const char *type = profile_get_str(p, p->sample_type);
	const char *u = profile_get_str(p, p->sample_unit);
	const char *pu = profile_get_str(p, p->period_unit);

	*per_value = 0;
	if (!strcmp(u, "count") || !strcmp(u, "samples")) {
		*unit = !strcmp(pu, "nanoseconds") && p->period > 0 ? (double)p->period / 1e9 : 0;
		return 0;
	}
	if (!strcmp(u, "nanoseconds") && p->period > 0) {
		*unit = (double)p->period / 1e9;
		*per_value = 1; /* values are nanoseconds: samples = value / period */
		return 0;
	}
	return errmsg_set(err, -EINVAL, "not a CPU sample profile (sample type %s/%s): diff compares "
			  "CPU profiles such as scorch record writes", type, u);
}

int compare_add(struct compare *c, enum compare_side side, const struct profile *p,
		struct errmsg *err)
{
	uint32_t *keyof = NULL, *path = NULL;
	size_t path_cap = 0, i, j;
	uint32_t comm_key = strtab_find(p->strings, "comm", 4);
	char name[NAME_MAX_LEN];
	struct crun *r;
	double unit = 0;
	int per_value = 0, rc;

	if ((rc = sample_unit(p, &unit, &per_value, err)) < 0)
		return rc;
	if (c->has_period >= 0 && c->has_period != (unit > 0))
		return errmsg_set(err, -EINVAL, "some profiles have a sampling period (pprof) and some "
				  "do not (folded): convert the folded ones to pprof with the rate "
				  "they were sampled at, or compare like with like");
	c->has_period = unit > 0;
	ALLOC_GROW(c->runs, c->nruns + 1, c->runs_cap);
	r = &c->runs[c->nruns++];
	memset(r, 0, sizeof(*r));
	r->side = side;
	r->unit = unit > 0 ? unit : 1;
	keyof = xcalloc(p->nlocations + 1, sizeof(*keyof));

	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const struct profile_label *labels = profile_sample_labels(p, s);
		int64_t n = s->value;
		size_t depth = 0;
		uint32_t node = 0;

		if (per_value)
			n = (int64_t)((double)s->value / (double)p->period + 0.5);
		if (n <= 0)
			continue;
		ALLOC_GROW(path, s->nlocs + 2, path_cap);
		/* The process name is the outermost frame, as folded files and the server show it. */
		for (j = 0; comm_key != UINT32_MAX && j < s->nlabels; j++) {
			if (labels[j].key == comm_key && labels[j].str) {
				path[depth++] = strtab_intern(c->keys, profile_get_str(p, labels[j].str));
				break;
			}
		}
		for (j = s->nlocs; j-- > 0;) {
			uint32_t loc = locs[j] <= p->nlocations ? locs[j] : 0;

			if (!keyof[loc]) {
				size_t len = profile_frame_name(p, loc, name, sizeof(name));

				len = strip_line(name, len);
				keyof[loc] = strtab_intern_len(c->keys, name, len);
			}
			path[depth++] = keyof[loc];
		}
		if (!depth)
			path[depth++] = strtab_intern(c->keys, "[unknown]");

		run_grow(r, strtab_count(c->keys));
		if (strtab_count(c->keys) > c->stamp_cap) {
			size_t old = c->stamp_cap;

			c->stamp = xgrow(c->stamp, &c->stamp_cap, strtab_count(c->keys), sizeof(*c->stamp));
			memset(c->stamp + old, 0, (c->stamp_cap - old) * sizeof(*c->stamp));
		}
		if (++c->epoch == 0) { /* wrapped: forget every stamp */
			memset(c->stamp, 0, c->stamp_cap * sizeof(*c->stamp));
			c->epoch = 1;
		}
		r->total += n;
		r->self[path[depth - 1]] += n;
		for (j = 0; j < depth; j++) {
			uint32_t k = path[j];

			if (c->stamp[k] != c->epoch) {
				c->stamp[k] = c->epoch;
				r->tot[k] += n;
			}
			if (node != UINT32_MAX) {
				uint32_t child = trie_child(c, node, k);

				/* A full trie stops following this stack deeper. */
				node = child ? child : UINT32_MAX;
				if (child)
					c->nodes[child].cnt[side] += n;
			}
		}
	}
	run_grow(r, strtab_count(c->keys));
	xfree(keyof);
	xfree(path);
	return 0;
}

/* One side's numbers for one key and metric. */
struct side {
	double mean, var, floor;
	uint64_t count;
	double w;   /* exposure: sum over runs of 1 / unit */
	size_t n;
};

static void side_stats(const struct compare *c, int side, int metric, uint32_t key, struct side *s)
{
	double sum = 0, sum2 = 0, fl = 0;
	size_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < c->nruns; i++) {
		const struct crun *r = &c->runs[i];
		int64_t cnt;
		double v;

		if (r->side != side)
			continue;
		if (metric == 2)
			cnt = r->total;
		else
			cnt = key < r->cap ? (metric ? r->tot[key] : r->self[key]) : 0;
		v = (double)cnt * r->unit;
		s->n++;
		s->count += (uint64_t)cnt;
		s->w += 1 / r->unit;
		sum += v;
		sum2 += v * v;
		fl += (double)cnt * r->unit * r->unit;
	}
	if (!s->n)
		return;
	s->mean = sum / (double)s->n;
	s->var = s->n > 1 ? (sum2 - sum * s->mean) / (double)(s->n - 1) : 0;
	if (s->var < 0)
		s->var = 0;
	s->floor = fl / (double)s->n;
}

/* The prior of run-to-run noise, shared by every function (see compare_run()). */
struct prior {
	double d0; /* degrees of freedom; 0: none (plain Welch) */
	double s0; /* typical variance relative to the Poisson sampling variance */
	double phi; /* one run per side: the empirical dispersion (>= 1) */
};

/* The prior's degrees of freedom are at most this many times a function's own. */
#define COMPARE_PRIOR_WEIGHT 4.0

/* Median of chi-square with 1 degree of freedom: E[median z^2] for standard normal z. */
#define CHI2_1_MEDIAN 0.45493642311957

/* A function's run-to-run variance relative to its sampling variance, pooled over both
 * sides (with d = runs - 2 degrees of freedom); NaN without samples. */
static double dispersion(const struct side *a, const struct side *b)
{
	double fl = (double)(a->n - 1) * a->floor + (double)(b->n - 1) * b->floor;

	if (!(fl > 0))
		return NAN;
	return ((double)(a->n - 1) * a->var + (double)(b->n - 1) * b->var) / fl;
}

/* The p-value of a change, and in *pmin the smallest p-value the test could give with these
 * samples (Tarone's rule leaves tests that cannot reach significance out of the count). */
static double test_p(const struct side *a, const struct side *b, double scale, int welch,
		     const struct prior *pr, double *pmin)
{
	*pmin = 0;
	if (!welch) {
		double p0 = scale * b->w / (a->w + scale * b->w), lo, hi;
		uint64_t x = a->count, y = b->count;

		if (pr->phi > 1) { /* counts worth 1/phi of a Poisson count each */
			x = (uint64_t)llround((double)x / pr->phi);
			y = (uint64_t)llround((double)y / pr->phi);
		}
		if (!(x + y)) {
			*pmin = 1;
			return 1;
		}
		lo = stats_binom_test(0, x + y, p0);
		hi = stats_binom_test(x + y, x + y, p0);
		*pmin = lo < hi ? lo : hi;
		return stats_binom_test(y, x + y, p0);
	}
	if (!(a->floor + b->floor > 0))
		return 1;
	if (pr->d0 > 0) {
		/* Moderated t: the function's own dispersion shrunk toward the typical one. */
		double d = (double)(a->n + b->n - 2), r = dispersion(a, b), rt, se2;

		rt = isinf(pr->d0) ? pr->s0 : (pr->d0 * pr->s0 + d * (isnan(r) ? pr->s0 : r)) /
					      (pr->d0 + d);
		/* Never less than sampling noise: busy functions sampled by a regular timer are
		 * less noisy than Poisson, but rare bursty ones (interrupts) are not. */
		if (!(rt >= 1))
			rt = 1;
		se2 = rt * (b->floor / (double)b->n + scale * scale * a->floor / (double)a->n);
		if (!(se2 > 0))
			return b->mean == scale * a->mean ? 1 : 0;
		return stats_t_test_p((b->mean - scale * a->mean) / sqrt(se2),
				      isinf(pr->d0) ? 1e9 : pr->d0 + d);
	} else {
		struct stats_welch w;
		double va = (a->var > a->floor ? a->var : a->floor) * scale * scale;
		double vb = b->var > b->floor ? b->var : b->floor;

		stats_welch(scale * a->mean, va, a->n, b->mean, vb, b->n, &w);
		return isnan(w.p) ? 1 : w.p;
	}
}

/* A row's side statistics while the result is built: self and total, base and new. */
struct row_sides {
	struct side s, sn, t, tn;
};

static void fill_metric(struct compare_metric *m, const struct side *a, const struct side *b,
			double scale, double base_total)
{
	double sb = scale * a->mean;

	m->base = a->mean;
	m->new = b->mean;
	m->change = sb > 0 ? (b->mean - sb) / sb : (b->mean > 0 ? INFINITY : 0);
	m->impact = base_total > 0 ? (b->mean - sb) / (scale * base_total) : 0;
	m->p = m->p_adj = 1;
}

static enum compare_verdict verdict_of(const struct compare_metric *m, const struct compare_opts *o)
{
	if (!m->tested || m->p_adj > o->alpha)
		return COMPARE_NOISE;
	if (m->base == 0 && m->new > 0)
		return COMPARE_NEW;
	if (m->new == 0 && m->base > 0)
		return COMPARE_GONE;
	if (m->change >= o->threshold && m->impact >= o->min_impact)
		return COMPARE_REGRESSION;
	/* The same ratio downwards: +10% up is -9.1% down, +100% is -50%. */
	if (m->change <= 1 / (1 + o->threshold) - 1 && -m->impact >= o->min_impact)
		return COMPARE_IMPROVEMENT;
	return COMPARE_SMALL;
}

/* Order of rows: self regressions, total-only regressions, new, improvements, gone, the rest;
 * each group by the size of its change in CPU. */
static int row_rank(const struct compare_row *r)
{
	if (r->self.verdict == COMPARE_REGRESSION)
		return 0;
	if (r->total.verdict == COMPARE_REGRESSION)
		return 1;
	if (r->verdict == COMPARE_NEW)
		return 2;
	if (r->verdict == COMPARE_IMPROVEMENT)
		return 3;
	if (r->verdict == COMPARE_GONE)
		return 4;
	if (r->verdict == COMPARE_SMALL)
		return 5;
	return 6;
}

static double row_weight(const struct compare_row *r)
{
	double s = fabs(r->self.impact), t = fabs(r->total.impact);

	if (row_rank(r) == 0)
		return s;
	if (row_rank(r) == 1)
		return t;
	if (row_rank(r) == 2)
		return r->self.new > 0 ? r->self.new : r->total.new;
	if (row_rank(r) >= 5) /* unchanged: the functions where the time is spent first */
		return s;
	return s > t ? s : t;
}

static int row_cmp(const void *x, const void *y)
{
	const struct compare_row *a = x, *b = y;
	int ra = row_rank(a), rb = row_rank(b);
	double wa, wb;

	if (ra != rb)
		return ra - rb;
	wa = row_weight(a);
	wb = row_weight(b);
	if (wa != wb)
		return wa > wb ? -1 : 1;
	/* then where the time is spent */
	if (a->self.new + a->self.base != b->self.new + b->self.base)
		return a->self.new + a->self.base > b->self.new + b->self.base ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int path_cmp(const void *x, const void *y)
{
	const struct compare_path *a = x, *b = y;

	if (a->added != b->added)
		return b->added - a->added;
	if (a->share != b->share)
		return a->share > b->share ? -1 : 1;
	return 0;
}

static enum compare_verdict worse(enum compare_verdict a, enum compare_verdict b)
{
	static const int rank[] = {
		[COMPARE_NOISE] = 5, [COMPARE_SMALL] = 4, [COMPARE_REGRESSION] = 0,
		[COMPARE_IMPROVEMENT] = 2, [COMPARE_NEW] = 1, [COMPARE_GONE] = 3,
	};

	return rank[a] <= rank[b] ? a : b;
}

/* The typical change of the whole profile: the median (weighted by CPU) of the new/base ratio
 * of every function's self time present on both sides. When few functions change, this is
 * the runner's speed difference, which normalize removes. */
static double typical_scale(const struct compare *c, size_t nkeys)
{
	double *ratio = xmalloc((nkeys + 1) * sizeof(*ratio));
	double *weight = xmalloc((nkeys + 1) * sizeof(*weight));
	size_t n = 0, k;
	double s;

	for (k = 1; k < nkeys; k++) {
		struct side a, b;

		side_stats(c, COMPARE_SIDE_BASE, 0, (uint32_t)k, &a);
		side_stats(c, COMPARE_SIDE_NEW, 0, (uint32_t)k, &b);
		if (a.mean > 0 && b.mean > 0) {
			ratio[n] = b.mean / a.mean;
			weight[n] = a.mean + b.mean;
			n++;
		}
	}
	s = n ? stats_weighted_median(ratio, weight, n) : 1;
	xfree(ratio);
	xfree(weight);
	if (!(s > 1e-3) || s > 1e3)
		s = 1;
	return s;
}

static char **path_frames(const struct compare *c, uint32_t node, size_t *n)
{
	size_t depth = 0, i;
	uint32_t x;
	char **f;

	for (x = node; x; x = c->nodes[x].parent)
		depth++;
	f = xcalloc(depth ? depth : 1, sizeof(*f));
	i = depth;
	for (x = node; x; x = c->nodes[x].parent)
		f[--i] = xstrdup(strtab_get(c->keys, c->nodes[x].key));
	*n = depth;
	return f;
}

static void find_paths(const struct compare *c, struct compare_result *res, const struct side *ta,
		       const struct side *tb, double scale)
{
	size_t cap = 0, i;
	double p0 = scale * tb->w / (ta->w + scale * tb->w);

	for (i = 1; i < c->nnodes; i++) {
		const struct cnode *nd = &c->nodes[i];
		const struct cnode *par = &c->nodes[nd->parent];
		int added = nd->cnt[0] == 0;
		int64_t cnt = added ? nd->cnt[1] : nd->cnt[0];
		uint64_t tot = added ? tb->count : ta->count;
		struct compare_path *cp;
		double p;

		if ((nd->cnt[0] && nd->cnt[1]) || !cnt || !tot)
			continue;
		if ((double)cnt / (double)tot < res->opts.path_share)
			continue;
		/* Only where the path starts to differ: its parent is on both sides. */
		if (nd->parent && (par->cnt[0] == 0 || par->cnt[1] == 0))
			continue;
		p = stats_binom_test(added ? (uint64_t)cnt : 0, (uint64_t)cnt, p0);
		if (p > res->opts.alpha)
			continue;
		ALLOC_GROW(res->paths, res->npaths + 1, cap);
		cp = &res->paths[res->npaths++];
		cp->frames = path_frames(c, (uint32_t)i, &cp->nframes);
		cp->added = added;
		cp->value = (double)cnt / (added ? tb->w : ta->w);
		cp->share = (double)cnt / (double)tot;
		cp->p = p;
	}
	if (res->npaths)
		qsort(res->paths, res->npaths, sizeof(*res->paths), path_cmp);
}

int compare_run(struct compare *c, const struct compare_opts *o, struct compare_result **out,
		struct errmsg *err)
{
	struct compare_result *res;
	struct side ta, tb;
	size_t nkeys = strtab_count(c->keys), k, cap = 0, sides_cap = 0, ntests = 0, i, t;
	struct row_sides *sides = NULL;
	struct prior pr = { 0, NAN, 1 };
	double *p = NULL, *pmin, *pmin_self, *pmin_total, pmin_run = 1, scale = 1;
	unsigned char *keep;
	int welch;

	*out = NULL;
	side_stats(c, COMPARE_SIDE_BASE, 2, 0, &ta);
	side_stats(c, COMPARE_SIDE_NEW, 2, 0, &tb);
	if (!ta.n || !tb.n)
		return errmsg_set(err, -EINVAL, "no %s run to compare", ta.n ? "new" : "base");
	if (!ta.count || !tb.count)
		return errmsg_set(err, -EINVAL, "the %s runs have no samples", ta.count ? "new" : "base");
	welch = ta.n >= 2 && tb.n >= 2;
	if (o->normalize)
		scale = typical_scale(c, nkeys);

	res = xcalloc(1, sizeof(*res));
	res->opts = *o;
	res->runs[0] = ta.n;
	res->runs[1] = tb.n;
	res->seconds = c->has_period > 0;
	res->welch = welch;
	res->scale = scale;
	res->paths_truncated = c->truncated;

	/* Rows: every function with at least min_share of the pooled CPU of both sides. */
	for (k = 1; k < nkeys; k++) {
		struct side at, bt;
		struct row_sides *rs;
		struct compare_row *r;

		side_stats(c, COMPARE_SIDE_BASE, 1, (uint32_t)k, &at);
		side_stats(c, COMPARE_SIDE_NEW, 1, (uint32_t)k, &bt);
		if (at.mean + bt.mean < o->min_share * (ta.mean + tb.mean)) {
			if (at.count + bt.count)
				res->untested++;
			continue;
		}
		ALLOC_GROW(res->rows, res->nrows + 1, cap);
		ALLOC_GROW(sides, res->nrows + 1, sides_cap);
		rs = &sides[res->nrows];
		r = &res->rows[res->nrows++];
		memset(r, 0, sizeof(*r));
		rs->t = at;
		rs->tn = bt;
		side_stats(c, COMPARE_SIDE_BASE, 0, (uint32_t)k, &rs->s);
		side_stats(c, COMPARE_SIDE_NEW, 0, (uint32_t)k, &rs->sn);
		r->name = xstrdup(strtab_get(c->keys, (uint32_t)k));
		fill_metric(&r->self, &rs->s, &rs->sn, scale, ta.mean);
		fill_metric(&r->total, &at, &bt, scale, ta.mean);
		r->self.tested = rs->s.mean + rs->sn.mean >= o->min_share * (ta.mean + tb.mean);
		r->total.tested = 1;
	}
	fill_metric(&res->total, &ta, &tb, 1, ta.mean);
	res->total.tested = !o->normalize; /* normalizing takes the whole-run change out */

	/* With runs to compare within each side, the run-to-run noise of all functions (relative
	 * to sampling noise) is the prior each function's own estimate is shrunk toward: a few
	 * runs then suffice, where a t-test per function would have 2-4 degrees of freedom. */
	if (welch) {
		double *disp = xmalloc((2 * res->nrows + 1) * sizeof(*disp));
		size_t nd = 0;

		for (i = 0; i < res->nrows; i++) {
			const struct row_sides *rs = &sides[i];

			/* Counts under ~10 per run say little about dispersion. */
			if (res->rows[i].self.tested && rs->s.count + rs->sn.count >= 10 * (ta.n + tb.n))
				disp[nd++] = dispersion(&rs->s, &rs->sn);
			if (rs->t.count + rs->tn.count >= 10 * (ta.n + tb.n))
				disp[nd++] = dispersion(&rs->t, &rs->tn);
		}
		disp[nd++] = dispersion(&ta, &tb);
		stats_fit_prior(disp, nd, (double)(ta.n + tb.n - 2), &pr.d0, &pr.s0);
		/* The prior comes from the busy functions; a rare one hit by a burst in one run
		 * (interrupts, reschedules of a loaded machine) is far noisier. Its own variance
		 * keeps at least a fifth of the weight, so such a run is not taken for a change. */
		if (pr.d0 > COMPARE_PRIOR_WEIGHT * (double)(ta.n + tb.n - 2))
			pr.d0 = COMPARE_PRIOR_WEIGHT * (double)(ta.n + tb.n - 2);
		xfree(disp);
		res->prior_df = pr.d0;
		res->prior_dispersion = pr.s0;
	}
	/* One run per side: the only replicates are the other functions. If most did not change,
	 * their standardized differences show how much noisier than Poisson the two runs are (an
	 * empirical null, as in Efron's large-scale testing): the median of z^2 over the functions
	 * with at least 20 samples, relative to chi-square(1)'s, robust to the few that did
	 * change. */
	if (!welch) {
		double *z2 = xmalloc((res->nrows + 1) * sizeof(*z2));
		double p0 = scale * tb.w / (ta.w + scale * tb.w);
		size_t nz = 0;

		for (i = 0; i < res->nrows; i++) {
			const struct row_sides *rs = &sides[i];
			double n = (double)(rs->s.count + rs->sn.count), z;

			if (!res->rows[i].self.tested || n < 20)
				continue;
			z = ((double)rs->sn.count - n * p0) / sqrt(n * p0 * (1 - p0));
			z2[nz++] = z * z;
		}
		/* Fewer functions than this: the median would be pulled up by the one that changed
		 * (with 5, a regression alone makes it ~2), so sampling noise is all we test for. */
		if (nz >= 10) {
			double *ones = xmalloc(nz * sizeof(*ones));
			size_t j;

			for (j = 0; j < nz; j++)
				ones[j] = 1;
			pr.phi = stats_weighted_median(z2, ones, nz) / CHI2_1_MEDIAN;
			xfree(ones);
		}
		if (!(pr.phi >= 1))
			pr.phi = 1;
		if (pr.phi > 1e4)
			pr.phi = 1e4;
		xfree(z2);
		res->dispersion = pr.phi;
	}
	pmin_self = xcalloc(res->nrows + 1, sizeof(*pmin_self));
	pmin_total = xcalloc(res->nrows + 1, sizeof(*pmin_total));
	for (i = 0; i < res->nrows; i++) {
		struct compare_row *r = &res->rows[i];

		if (r->self.tested)
			r->self.p = test_p(&sides[i].s, &sides[i].sn, scale, welch, &pr, &pmin_self[i]);
		r->total.p = test_p(&sides[i].t, &sides[i].tn, scale, welch, &pr, &pmin_total[i]);
	}
	res->total.p = test_p(&ta, &tb, 1, welch, &pr, &pmin_run);
	xfree(sides);

	/* Holm over every test of the report that could be significant at all (Tarone). */
	p = xmalloc((2 * res->nrows + 1) * sizeof(*p));
	pmin = xmalloc((2 * res->nrows + 1) * sizeof(*pmin));
	keep = xmalloc(2 * res->nrows + 1);
	for (i = 0; i < res->nrows; i++) {
		if (res->rows[i].self.tested) {
			pmin[ntests] = pmin_self[i];
			p[ntests++] = res->rows[i].self.p;
		}
		pmin[ntests] = pmin_total[i];
		p[ntests++] = res->rows[i].total.p;
	}
	if (res->total.tested) {
		pmin[ntests] = pmin_run;
		p[ntests++] = res->total.p;
	}
	res->tests = stats_tarone(pmin, ntests, o->alpha, keep);
	{
		double *fam = xmalloc((ntests + 1) * sizeof(*fam));
		size_t nf = 0, j;

		for (j = 0; j < ntests; j++)
			if (keep[j])
				fam[nf++] = p[j];
		stats_holm(fam, nf, fam);
		for (j = 0, nf = 0; j < ntests; j++)
			p[j] = keep[j] ? fam[nf++] : 1;
		xfree(fam);
	}
	xfree(pmin);
	xfree(keep);
	xfree(pmin_self);
	xfree(pmin_total);
	for (i = 0, t = 0; i < res->nrows; i++) {
		struct compare_row *r = &res->rows[i];

		if (r->self.tested)
			r->self.p_adj = p[t++];
		r->total.p_adj = p[t++];
		r->self.verdict = verdict_of(&r->self, o);
		r->total.verdict = verdict_of(&r->total, o);
		r->verdict = worse(r->self.verdict, r->total.verdict);
		if (r->self.verdict == COMPARE_REGRESSION)
			res->self_regressions++;
		else if (r->total.verdict == COMPARE_REGRESSION)
			res->total_regressions++;
		else if (r->verdict == COMPARE_IMPROVEMENT)
			res->improvements++;
		else if (r->verdict == COMPARE_NEW)
			res->added++;
		else if (r->verdict == COMPARE_GONE)
			res->gone++;
	}
	if (res->total.tested)
		res->total.p_adj = p[t++];
	res->total.verdict = verdict_of(&res->total, o);
	xfree(p);
	if (res->nrows)
		qsort(res->rows, res->nrows, sizeof(*res->rows), row_cmp);
	res->regressed = res->self_regressions || res->total_regressions ||
			 res->total.verdict == COMPARE_REGRESSION;
	find_paths(c, res, &ta, &tb, scale);
	*out = res;
	return 0;
}

void compare_result_free(struct compare_result *r)
{
	size_t i, j;

	if (!r)
		return;
	for (i = 0; i < r->nrows; i++)
		xfree(r->rows[i].name);
	for (i = 0; i < r->npaths; i++) {
		for (j = 0; j < r->paths[i].nframes; j++)
			xfree(r->paths[i].frames[j]);
		xfree(r->paths[i].frames);
	}
	xfree(r->rows);
	xfree(r->paths);
	xfree(r);
}
