/* store_bench.c: measures the profile store alone (no HTTP) against its targets and prints a
 * table: ingest rate, flame graph (merge) over 24 h and 7 days, time series over 7 days, bytes
 * per profiled core per day, peak memory, and the cost of synchronous=FULL.
 *
 * Workload: one service on 16 cores sampled at 19 Hz, pushed every 10 s as one batch of
 * aggregated (stack, count) pairs: 3040 samples per batch spread over ~300 distinct stacks drawn
 * (Zipf-like) from a pool of 3000 stacks of 12..40 frames named from 2000 functions.
 *
 *   store_bench [-d DAYS] [-o DIR] [-r RUNS]     (defaults: 7 days, /tmp/scorch-bench, 5 runs) */
#include "store/store.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CORES 16
#define HZ 19
#define STEP 10
#define POOL_STACKS 3000
#define POOL_FUNCS 2000
#define PER_BATCH 300
#define SAMPLES_PER_BATCH (CORES * HZ * STEP)

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct pool {
	char *names[POOL_FUNCS];
	uint32_t *frames[POOL_STACKS];
	uint32_t depth[POOL_STACKS];
	double cdf[POOL_STACKS];
};

static void pool_init(struct pool *p)
{
	double sum = 0;
	int i, j;

	for (i = 0; i < POOL_FUNCS; i++)
		p->names[i] = xasprintf("github.com/example/service/pkg%d.(*Handler).function_%d", i % 37, i);
	for (i = 0; i < POOL_STACKS; i++) {
		p->depth[i] = 12 + (uint32_t)(rnd() % 29);
		p->frames[i] = xmalloc(p->depth[i] * sizeof(uint32_t));
		/* Shared roots like real programs: the first frames come from a few functions. */
		for (j = 0; j < (int)p->depth[i]; j++)
			p->frames[i][j] = j < 3 ? (uint32_t)(j * 7 + (int)(rnd() % 2)) :
					  (uint32_t)(rnd() % POOL_FUNCS);
		sum += 1.0 / pow(i + 1, 0.8);
		p->cdf[i] = sum;
	}
	for (i = 0; i < POOL_STACKS; i++)
		p->cdf[i] /= sum;
}

static int pick(const struct pool *p)
{
	double x = (double)(rnd() % 1000000) / 1e6;
	int lo = 0, hi = POOL_STACKS - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (p->cdf[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Fill samples with one 10 s batch: PER_BATCH distinct stacks, counts summing to 3040. */
static size_t make_batch(const struct pool *p, struct store_sample *samples, int *used)
{
	size_t n = 0;
	int left = SAMPLES_PER_BATCH, i;

	memset(used, 0, POOL_STACKS * sizeof(*used));
	while (n < PER_BATCH) {
		int s = pick(p);

		if (used[s])
			continue;
		used[s] = 1;
		samples[n].frames = p->frames[s];
		samples[n].nframes = p->depth[s];
		samples[n].value = 1;
		n++;
	}
	left -= PER_BATCH;
	for (i = 0; i < left; i++)
		samples[(rnd() % 1000 < 700) ? rnd() % (PER_BATCH / 10) : rnd() % PER_BATCH].value++;
	return n;
}

static long peak_rss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

static double last_cpu; /* median CPU seconds of the last timed query */

static double time_merge(struct store *s, int64_t from, int64_t until, int runs, int64_t *total,
			 size_t *nstacks)
{
	double t[32], c[32];
	int i;

	for (i = 0; i < runs; i++) {
		struct store_query q = { NULL, from, until };
		struct store_profile *p = NULL;
		struct errmsg err;
		double t0 = now_s(), c0 = cpu_s();

		if (store_merge(s, &q, 0, &p, &err) < 0)
			die("merge: %s", err.msg);
		t[i] = now_s() - t0;
		c[i] = cpu_s() - c0;
		*total = p->total;
		*nstacks = p->nstacks;
		store_profile_free(p);
	}
	last_cpu = median(c, runs);
	return median(t, runs);
}

static double time_series(struct store *s, int64_t from, int64_t until, int64_t step, int runs,
			  size_t *npoints)
{
	double t[32], c[32];
	int i;

	for (i = 0; i < runs; i++) {
		struct store_query q = { NULL, from, until };
		struct store_timeseries *ts = NULL;
		struct errmsg err;
		double t0 = now_s(), c0 = cpu_s();

		if (store_timeseries(s, &q, step, NULL, &ts, &err) < 0)
			die("timeseries: %s", err.msg);
		t[i] = now_s() - t0;
		c[i] = cpu_s() - c0;
		*npoints = ts->npoints;
		store_timeseries_free(ts);
	}
	last_cpu = median(c, runs);
	return median(t, runs);
}

static double ingest_cpu; /* CPU seconds of the last ingest (batch generation excluded) */

static int group = 1; /* batches per store_write (-w) */

static double ingest(struct store *s, const struct pool *p, int64_t start, long nbatches,
		     uint64_t *pairs, uint64_t *samples)
{
	static int used[POOL_STACKS];
	struct store_sample *smp = xcalloc((size_t)group * PER_BATCH, sizeof(*smp));
	struct store_label labels[2] = { { "service_name", "bench" }, { "host", "node-1" } };
	struct store_batch *b = xcalloc((size_t)group, sizeof(*b));
	struct errmsg err;
	double t0 = now_s(), c0 = cpu_s(), gen = 0, gen_cpu = 0;
	long i;
	int n = 0;

	for (i = 0; i < nbatches; i++) {
		double g0 = now_s(), gc0 = cpu_s();
		struct store_batch *bb = &b[n];
		size_t k;

		bb->type = "cpu";
		bb->labels = labels;
		bb->nlabels = 2;
		bb->sample_rate = HZ;
		bb->units = "samples";
		bb->spy_name = "scorch";
		bb->frame_names = (const char *const *)p->names;
		bb->nframe_names = POOL_FUNCS;
		bb->samples = smp + (size_t)n * PER_BATCH;
		bb->nsamples = make_batch(p, smp + (size_t)n * PER_BATCH, used);
		gen += now_s() - g0;
		gen_cpu += cpu_s() - gc0;
		bb->from = start + i * STEP;
		bb->until = bb->from + STEP;
		*pairs += bb->nsamples;
		for (k = 0; k < bb->nsamples; k++)
			*samples += (uint64_t)bb->samples[k].value;
		if (++n == group || i + 1 == nbatches) {
			if (store_write(s, b, (size_t)n, &err) < 0)
				die("write: %s", err.msg);
			n = 0;
		}
	}
	ingest_cpu = cpu_s() - c0 - gen_cpu;
	xfree(smp);
	xfree(b);
	return now_s() - t0 - gen;
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp/scorch-bench", *url = NULL;
	int days = 7, runs = 5, opt;
	struct pool *p = xcalloc(1, sizeof(*p));
	struct store_opts o = { 0 };
	struct store_stats st;
	struct errmsg err;
	struct store *s;
	uint64_t pairs = 0, samples = 0;
	int64_t start = 1700006400 - 3600 * 5 - 17, end, total;
	double secs, secs_cpu, t_maint, t24, t7, t24raw, tts600, tts3600, tfull;
	double c24, c7, c24raw, cts600, cts3600;
	size_t nst, npts;
	long nb;
	char *cmd;

	while ((opt = getopt(argc, argv, "d:o:r:s:w:")) != -1) {
		if (opt == 's')
			url = optarg;
		else if (opt == 'w')
			group = atoi(optarg);
		else if (opt == 'd')
			days = atoi(optarg);
		else if (opt == 'o')
			dir = optarg;
		else if (opt == 'r')
			runs = atoi(optarg);
		else
			die("usage: store_bench [-d DAYS] [-o DIR] [-r RUNS] [-s clickhouse://...] [-w BATCHES]");
	}
	if (url && group == 1)
		group = 256; /* the ClickHouse store inserts what many agents pushed meanwhile at once */
	if (days < 1 || runs < 1 || runs > 31 || group < 1 || group > 4096)
		die("bad arguments");
	pool_init(p);
	cmd = xasprintf("rm -rf '%s' '%s-full'", dir, dir);
	if (system(cmd) != 0)
		die("cannot clean '%s'", dir);
	xfree(cmd);

	s = url ? store_open("clickhouse", url, &o, &err) : store_open("sqlite", dir, &o, &err);
	if (!s)
		die("open: %s", err.msg);
	nb = (long)days * 86400 / STEP;
	fprintf(stderr, "ingesting %ld batches (%d days)...\n", nb, days);
	secs = ingest(s, p, start, nb, &pairs, &samples);
	secs_cpu = ingest_cpu;
	end = start + nb * STEP;
	t24raw = time_merge(s, end - 86400, end, runs, &total, &nst);
	c24raw = last_cpu;
	if (url) {
		t_maint = 0; /* rollups were filled by the materialized views during the inserts */
	} else {
		double t0 = now_s();

		if (store_maintain(s, end + 600, &err) < 0)
			die("maintain: %s", err.msg);
		while (store_maintain(s, end + 600, &err) == 0 && now_s() - t0 < 600) {
			store_stats(s, &st, &err);
			if (st.rollup_rows + 2 >= (uint64_t)days * 25)
				break;
		}
		t_maint = now_s() - t0;
	}
	t24 = time_merge(s, end - 86400, end, runs, &total, &nst);
	c24 = last_cpu;
	printf("merge 24h: total %lld samples, %zu stacks\n", (long long)total, nst);
	t7 = time_merge(s, end - (int64_t)days * 86400, end, runs, &total, &nst);
	c7 = last_cpu;
	printf("merge %dd: total %lld samples (written %llu), %zu stacks\n", days, (long long)total,
	       (unsigned long long)samples, nst);
	tts600 = time_series(s, end - (int64_t)days * 86400, end, 600, runs, &npts);
	cts600 = last_cpu;
	tts3600 = time_series(s, end - (int64_t)days * 86400, end, 3600, runs, &npts);
	cts3600 = last_cpu;
	store_stats(s, &st, &err);
	store_close(s);

	/* synchronous=FULL: ingest cost of an fsync per commit. */
	tfull = 0;
	if (!url) {
		struct store_opts of = { 0 };
		uint64_t fp = 0, fs = 0;
		char *d2 = xasprintf("%s-full", dir);

		of.sync_full = 1;
		s = store_open("sqlite", d2, &of, &err);
		if (!s)
			die("open: %s", err.msg);
		tfull = ingest(s, p, start, 3000, &fp, &fs);
		tfull = (double)fp / tfull; /* wall clock: fsync waits are the point */
		store_close(s);
		xfree(d2);
	}

	printf("\n| measure | wall clock | CPU time | target |\n|---|---|---|---|\n");
	printf("| ingest, (stack,count) pairs/s (300-pair batches, %d per write) | %.0f | %.0f | >= 500000 |\n",
	       group, (double)pairs / secs, (double)pairs / secs_cpu);
	printf("| ingest, samples/s (sum of counts) | %.0f | %.0f | |\n", (double)samples / secs,
	       (double)samples / secs_cpu);
	printf("| ingest with synchronous=FULL, pairs/s | %.0f | | |\n", tfull);
	printf("| rollup build after ingest (%d days) | %.2f s | | |\n", days, t_maint);
	printf("| flame graph 24 h, raw rows only (before rollups) | %.1f ms | %.1f ms | |\n",
	       t24raw * 1e3, c24raw * 1e3);
	printf("| flame graph 24 h (%.1f M samples) | %.1f ms | %.1f ms | <= 200 ms |\n",
	       (double)SAMPLES_PER_BATCH * 8640 / 1e6, t24 * 1e3, c24 * 1e3);
	printf("| flame graph %d days | %.1f ms | %.1f ms | <= 500 ms |\n", days, t7 * 1e3, c7 * 1e3);
	printf("| time series %d days, step 600 s | %.1f ms | %.1f ms | <= 100 ms |\n", days,
	       tts600 * 1e3, cts600 * 1e3);
	printf("| time series %d days, step 3600 s | %.1f ms | %.1f ms | <= 100 ms |\n", days,
	       tts3600 * 1e3, cts3600 * 1e3);
	printf("| disk (db + wal) | %.1f MB | | |\n", (double)st.disk_bytes / 1e6);
	printf("| bytes per profiled core per day | %.2f MB | | <= 4 MB |\n",
	       (double)st.disk_bytes / CORES / days / 1e6);
	printf("| rows: raw / rollup / stacks / frames | %llu / %llu / %llu / %llu | | |\n",
	       (unsigned long long)st.raw_rows, (unsigned long long)st.rollup_rows,
	       (unsigned long long)st.stacks, (unsigned long long)st.frames);
	printf("| peak RSS of the benchmark process | %ld MB | | <= 256 MB |\n", peak_rss_mb());
	return 0;
}
