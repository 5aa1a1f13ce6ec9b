/* table_build.c: what one unwind table costs, file by file: the build from the ELF file exactly
 * as the unwinder does it (open, CPython eval ranges, the separate debug file when the file has
 * no CFI, unwind_table_build), and what the table cache (table_cache.h) does instead once the
 * table is cached: the compact form's size, and the CPU time to publish the table from memory
 * (decode) or from a cache file on disk (read, check, decode). Measured over several rounds.
 *
 *   table_build [-r ROUNDS] [-B] FILE...
 *
 * Per file, one line of a Markdown table: entries and CFI rows of the table; the median CPU
 * time of a build (this thread's CPU clock, which a busy machine disturbs less than wall time);
 * allocations (calls through lib/alloc.h) and the heap peak during one build; minor page
 * faults of one build (getrusage RUSAGE_THREAD); then the cache's columns. -B prints the build
 * columns only. A last line sums the files.
 *
 * Build: `make bench` gives build/bench/table_build. */
#include "agent/elf.h"
#include "agent/table_cache.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 101

struct figures {
	uint64_t entries, rows;
	double build_ms;           /* median over the rounds */
	uint64_t allocs, heap_peak, faults;
	uint64_t compact_bytes;
	double mem_ms, disk_ms;    /* publish from the cache: memory, disk (medians) */
};

static int build_only;
static char cache_dir[] = "/tmp/table_build.XXXXXX";

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_minflt;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One build as unwinder.c's file_load() does it. Returns 0 or a negative errno. */
static int build_once(const char *path, struct unwind_table *t, struct errmsg *err)
{
	struct unwind_range interp[4];
	struct elf_section_info si;
	struct elf_file *e = NULL, *dbg = NULL;
	static struct runtimes *rts;
	uint8_t kind;
	int ninterp, rc;

	if (!rts) {
		rts = runtimes_new(NULL);
		runtimes_init(rts, NULL);
	}
	rc = elf_open(path, &e, err);
	if (rc)
		return rc;
	ninterp = runtimes_interp_ranges(rts, e, path, interp, 4, &kind);
	if (ninterp < 0 || ninterp > 4)
		ninterp = 0;
	if (elf_section_info(e, ".eh_frame", &si) && elf_section_info(e, ".debug_frame", &si))
		elf_open_debug_file(e, path, NULL, NULL, &dbg);
	rc = unwind_table_build(e, dbg, interp, (size_t)ninterp, t, err);
	elf_close(dbg);
	elf_close(e);
	return rc;
}

static int median_cmp_rounds(double *ms, int rounds, double *out)
{
	qsort(ms, (size_t)rounds, sizeof(ms[0]), cmp_double);
	*out = ms[rounds / 2];
	return 0;
}

/* The cache's side: put the table once, then get + decode it from memory, and from disk with a
 * fresh cache each round (the file is in the page cache, as for an agent restarted). */
static int measure_cache(const struct unwind_table *t, int rounds, struct figures *f)
{
	struct table_cache_opts o = { .dir = cache_dir };
	struct table_info info = { .kind = TABLE_ENTRIES, .interp = (uint8_t)t->interp,
				   .sources = (uint8_t)t->stats.sources,
				   .count = (uint32_t)t->count, .base = t->base };
	struct unwind_entry *out = xmalloc(t->count * sizeof(*out));
	double mem[MAX_ROUNDS], disk[MAX_ROUNDS];
	struct table_cache_stats st;
	struct table_cache *c;
	struct errmsg err;
	int i, rc = -1;

	c = table_cache_new(&o, &err);
	if (!c || table_cache_put(c, "b:bench", &info, t->entries)) {
		fprintf(stderr, "table_build: the cache failed: %s\n", c ? "put" : err.msg);
		goto out;
	}
	table_cache_flush(c); /* on disk before the disk rounds */
	table_cache_stats(c, &st);
	f->compact_bytes = st.bytes;
	for (i = 0; i < rounds; i++) {
		const struct table_rec *r;
		double c0 = cpu_ms();

		r = table_cache_get(c, "b:bench", &info);
		if (!r || table_rec_decode(r, out, t->count))
			goto out;
		mem[i] = cpu_ms() - c0;
	}
	if (memcmp(out, t->entries, t->count * sizeof(*out))) {
		fprintf(stderr, "table_build: the cached table differs from the built one\n");
		goto out;
	}
	for (i = 0; i < rounds; i++) {
		struct table_cache *d;
		const struct table_rec *r;
		double c0 = cpu_ms();

		d = table_cache_new(&o, &err);
		r = d ? table_cache_get(d, "b:bench", &info) : NULL;
		if (!r || table_rec_decode(r, out, t->count)) {
			table_cache_free(d);
			goto out;
		}
		disk[i] = cpu_ms() - c0;
		table_cache_free(d);
	}
	median_cmp_rounds(mem, rounds, &f->mem_ms);
	median_cmp_rounds(disk, rounds, &f->disk_ms);
	rc = 0;
out:
	table_cache_free(c);
	xfree(out);
	return rc;
}

static int measure(const char *path, int rounds, struct figures *f)
{
	double ms[MAX_ROUNDS];
	struct unwind_table t;
	struct errmsg err;
	int i, rc;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < rounds; i++) {
		uint64_t a0 = alloc_calls(), pf0 = minor_faults();
		double c0;

		alloc_peak_reset();
		c0 = cpu_ms();
		rc = build_once(path, &t, &err);
		ms[i] = cpu_ms() - c0;
		if (rc) {
			fprintf(stderr, "table_build: %s: %s\n", path, err.msg);
			return rc;
		}
		if (i == 0) {
			/* The first round also pays for reading the file into the page cache. */
			f->allocs = alloc_calls() - a0;
			f->heap_peak = alloc_peak_bytes() - alloc_live_bytes();
			f->faults = minor_faults() - pf0;
		}
		f->entries = t.count;
		f->rows = t.stats.rows;
		if (i == rounds - 1 && !build_only && measure_cache(&t, rounds, f)) {
			unwind_table_release(&t);
			return -1;
		}
		unwind_table_release(&t);
	}
	qsort(ms, (size_t)rounds, sizeof(ms[0]), cmp_double);
	f->build_ms = ms[rounds / 2];
	return 0;
}

static int remove_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	struct figures sum;
	int rounds = 5, c, i, nfiles = 0, bad = 0;

	while ((c = getopt(argc, argv, "r:B")) != -1) {
		switch (c) {
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'B':
			build_only = 1;
			break;
		default:
			goto usage;
		}
	}
	if (optind == argc || rounds < 1 || rounds > MAX_ROUNDS)
		goto usage;
	memset(&sum, 0, sizeof(sum));
	if (!build_only && !mkdtemp(cache_dir)) {
		perror("mkdtemp");
		return 2;
	}
	printf("| file | entries | CFI rows | build CPU ms (median of %d) | allocations | heap peak MiB "
	       "| minor faults |", rounds);
	if (!build_only)
		printf(" cached KiB | bytes per entry | from memory ms | from disk ms |");
	printf("\n|---|---|---|---|---|---|---|%s\n", build_only ? "" : "---|---|---|---|");
	for (i = optind; i < argc; i++) {
		struct figures f;
		const char *base = strrchr(argv[i], '/');

		if (measure(argv[i], rounds, &f)) {
			bad = 1;
			continue;
		}
		printf("| %s | %llu | %llu | %.2f | %llu | %.1f | %llu |", base ? base + 1 : argv[i],
		       (unsigned long long)f.entries, (unsigned long long)f.rows, f.build_ms,
		       (unsigned long long)f.allocs, (double)f.heap_peak / (1 << 20),
		       (unsigned long long)f.faults);
		if (!build_only)
			printf(" %.0f | %.2f | %.2f | %.2f |", (double)f.compact_bytes / 1024,
			       f.entries ? (double)f.compact_bytes / (double)f.entries : 0, f.mem_ms,
			       f.disk_ms);
		printf("\n");
		fflush(stdout);
		sum.entries += f.entries;
		sum.rows += f.rows;
		sum.build_ms += f.build_ms;
		sum.allocs += f.allocs;
		sum.heap_peak = f.heap_peak > sum.heap_peak ? f.heap_peak : sum.heap_peak;
		sum.faults += f.faults;
		sum.compact_bytes += f.compact_bytes;
		sum.mem_ms += f.mem_ms;
		sum.disk_ms += f.disk_ms;
		nfiles++;
	}
	printf("| all %d files (heap: the largest) | %llu | %llu | %.2f | %llu | %.1f | %llu |",
	       nfiles, (unsigned long long)sum.entries, (unsigned long long)sum.rows, sum.build_ms,
	       (unsigned long long)sum.allocs, (double)sum.heap_peak / (1 << 20),
	       (unsigned long long)sum.faults);
	if (!build_only) {
		printf(" %.0f | %.2f | %.2f | %.2f |", (double)sum.compact_bytes / 1024,
		       sum.entries ? (double)sum.compact_bytes / (double)sum.entries : 0, sum.mem_ms,
		       sum.disk_ms);
		nftw(cache_dir, remove_cb, 8, FTW_DEPTH | FTW_PHYS);
	}
	printf("\n");
	return bad;
usage:
	fprintf(stderr, "usage: table_build [-r ROUNDS] FILE...\n");
	return 2;
}
