/* compare.h: the comparison behind `scorch diff`: runs of a base and of a new version (each a
 * CPU profile), per-function self and total CPU on both sides, and whether each change is
 * larger than the noise of sampling and of the runs themselves. docs/ci.md states the method;
 * in short:
 *
 *   - a run's value for a function is its CPU time (samples x sampling period), self = stacks
 *     ending in it, total = stacks containing it (once per stack); the process name (pprof
 *     label "comm", or the first frame of folded lines) is the outermost frame;
 *   - with one run on either side, the exact conditional test of two Poisson counts: given the
 *     n samples both sides have for a function, the new side's count is Binomial(n, p0) with p0
 *     the new side's share of the sampling exposure (runs x sampling rate); the counts are
 *     first divided by the dispersion the other functions show between the two runs (the
 *     median of their squared z-scores over chi-square(1)'s, at least 1; with 10 functions
 *     of 20 samples or more), as one run per side cannot show run-to-run noise otherwise;
 *   - with two or more runs on both sides, a moderated t-test on the per-run values: each
 *     function's run-to-run variance, relative to its sampling (Poisson) variance, is shrunk
 *     toward the typical one of all functions (an empirical Bayes prior, as limma does for
 *     gene expression; its weight at most 4 times the function's own), so that three runs
 *     per side have much of the power of many; without such a prior (fewer than 3
 *     functions), Welch's t-test with the Poisson variance as a floor;
 *   - every p-value of the result (self and total of each tested function, the run total) is
 *     adjusted with Holm's method, so alpha bounds the chance of any false alarm in the report;
 *     tests that cannot reach significance with their samples are not counted (Tarone);
 *   - a significant change is a regression when the function's time grew by at least
 *     `threshold` (relative) and by at least `min_impact` of the base run's total CPU.
 *
 * Usage: compare_new(); compare_add() every run (the profile can be freed right after);
 * compare_run() for the result; compare_result_free(); compare_free(). Both objects own their
 * memory; a result does not point into the compare object. */
#ifndef SCORCH_COMPARE_H
#define SCORCH_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/log.h"

struct profile;
struct compare;

enum compare_side {
	COMPARE_SIDE_BASE = 0,
	COMPARE_SIDE_NEW = 1,
};

struct compare_opts {
	double threshold;  /* relative growth that counts as a regression (0.10 = +10%) */
	double min_impact; /* ... and the growth as a fraction of the base run's total (0.005) */
	double alpha;      /* family-wise false-alarm rate of the whole report (0.01) */
	double min_share;  /* functions under this share of both sides' pooled CPU are not tested */
	double path_share; /* new / vanished call paths of at least this share of their side */
	int normalize;     /* scale the base by the typical change of all functions (see .c) */
};

#define COMPARE_OPTS_INIT { 0.10, 0.005, 0.01, 0.001, 0.01, 0 }

/* Limits: distinct call paths followed (deeper ones are not reported as new or vanished). */
#define COMPARE_MAX_PATHS (4u << 20)

enum compare_verdict {
	COMPARE_NOISE = 0,   /* no change beyond the noise */
	COMPARE_SMALL,       /* a real change, under the threshold or the minimum impact */
	COMPARE_REGRESSION,
	COMPARE_IMPROVEMENT,
	COMPARE_NEW,         /* absent from the base runs, significant in the new ones */
	COMPARE_GONE,        /* absent from the new runs, significant in the base ones */
};

struct compare_metric {
	double base, new; /* mean per run: seconds (result->seconds) or samples */
	double change;    /* (new - scaled base) / scaled base; +INFINITY when the base is 0 */
	double impact;    /* (new - scaled base) / scaled base total */
	double p;         /* two-sided p-value of the test; 1 when not tested */
	double p_adj;     /* after Holm's adjustment over every test of the result */
	int tested;
	enum compare_verdict verdict;
};

struct compare_row {
	char *name;
	struct compare_metric self, total;
	enum compare_verdict verdict; /* the more serious of self's and total's */
};

struct compare_path {
	char **frames;    /* root first */
	size_t nframes;
	int added;        /* 1: only in the new runs; 0: only in the base runs */
	double value;     /* mean per run on the side it is in */
	double share;     /* of that side's total */
	double p;
};

struct compare_result {
	size_t runs[2];      /* runs per side */
	int seconds;         /* values are CPU seconds (1) or samples (0: no sampling period known) */
	int welch;           /* 1: moderated t-test on per-run values; 0: exact Poisson test */
	double prior_df;     /* moderated t: the prior's degrees of freedom (0: plain Welch) */
	double prior_dispersion; /* ... and the typical run-to-run / sampling variance ratio */
	double dispersion;   /* Poisson test: how much wider than sampling noise the differences
				of the other functions are (>= 1); counts are divided by it */
	double scale;        /* base values were multiplied by this (1 without normalize) */
	struct compare_opts opts;
	struct compare_metric total; /* the whole run, never scaled */
	struct compare_row *rows;    /* tested functions: regressions first (see compare.c) */
	size_t nrows;
	size_t untested;             /* functions under min_share, left out of rows */
	size_t tests;                /* p-values in the Holm family (after Tarone's rule) */
	struct compare_path *paths;  /* added first, then vanished, each by share */
	size_t npaths;
	int paths_truncated;         /* COMPARE_MAX_PATHS was hit */
	size_t self_regressions;     /* rows whose self time regressed */
	size_t total_regressions;    /* rows whose total regressed but not their self time */
	size_t improvements, added, gone;
	int regressed;               /* a significant regression beyond the threshold (exit 3) */
};

struct compare *compare_new(void);
void compare_free(struct compare *c);

/* Add one run. The profile must hold CPU samples: sample type count (with the sampling period
 * in nanoseconds, as recorded, or no period, as folded), or nanoseconds with a period. All runs
 * must agree on having a period or not. Returns 0, or -EINVAL with a message. */
int compare_add(struct compare *c, enum compare_side side, const struct profile *p,
		struct errmsg *err);

/* Compare what was added. Returns 0 and *out (compare_result_free()), or -EINVAL when a side
 * has no run or no samples. */
int compare_run(struct compare *c, const struct compare_opts *o, struct compare_result **out,
		struct errmsg *err);
void compare_result_free(struct compare_result *r);

/* "regression", "improvement", "new", "gone", "changed (small)", "noise". */
const char *compare_verdict_name(enum compare_verdict v);

#endif
