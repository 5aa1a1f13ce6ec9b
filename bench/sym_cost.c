/* sym_cost.c: what native symbolization costs (the numbers of docs/benchmarks.md):
 *   cold     ms to learn a new binary: this process's own mappings (itself, libc, libdw,
 *            libcurl, ... all its libraries) taken in at once by a fresh symbolizer, per file;
 *   warm     us per 1,000 frames: addresses spread over the functions of those files, first
 *            looked up (files known, addresses new: symbol search, DWARF lines and inlines
 *            where there is DWARF), then again (cached);
 *   DWARF    resident memory per MB of DWARF once every function of this binary (built -g)
 *            has been looked up with lines (libdw's tables of every unit);
 *   Go       a Go binary given as argument (stripped or not): ms to index its .gopclntab, us
 *            per 1,000 lookups (names, files, lines, inlined calls), bytes kept.
 * usage: build/bench/sym_cost [GO_BINARY|-] [BINARY_WITH_DWARF] */
#include "agent/elf.h"
#include "agent/gopclntab.h"
#include "agent/srcline.h"
#include "agent/symbolizer.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long rss_kb(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = 0;
	if (f)
		fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Function addresses of our own executable mappings, from their symbol tables. */
static size_t own_addresses(uint64_t *out, size_t max, size_t *nfiles)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	size_t n = 0;

	*nfiles = 0;
	while (f && fgets(line, sizeof(line), f) && n < max) {
		unsigned long long start, end, off;
		char perms[8], path[2048] = "";
		struct elf_file *e;
		const struct elf_symbol *syms;
		size_t ns, i, step;
		uint64_t bias;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %2047s", &start, &end, perms, &off, path) < 4 ||
		    perms[2] != 'x' || path[0] != '/')
			continue;
		if (elf_open(path, &e, NULL) < 0)
			continue;
		(*nfiles)++;
		bias = elf_load_bias(e, start, off);
		elf_symbols_load(e, NULL);
		syms = elf_symbols(e, &ns);
		step = ns / 200 + 1;
		for (i = 0; i < ns && n < max; i += step) {
			uint64_t a = syms[i].addr + bias + syms[i].size / 2;

			if (syms[i].type == 2 /* STT_FUNC */ && a >= start && a < end)
				out[n++] = a;
		}
		elf_close(e);
	}
	if (f)
		fclose(f);
	return n;
}

static void bench_native(void)
{
	struct symbolizer_options o;
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct sym_result r;
	uint64_t *addrs = xmalloc(20000 * sizeof(*addrs));
	size_t nfiles, n = own_addresses(addrs, 20000, &nfiles), i, named = 0, lined = 0, inl = 0;
	double t0, cold, first, again, opened;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		memset(&o, 0, sizeof(o));
		o.no_debuginfod = 1;
		o.no_line_info = pass == 0;
		s = symbolizer_new_opts(&o);
		t0 = now_ms();
		symbolizer_track_pid(s, getpid());
		cold = now_ms() - t0;
		symbolizer_get_stats(s, &st);
		t0 = now_ms();
		for (i = 0; i < n; i++) {
			symbolizer_user(s, getpid(), addrs[i], &r);
			if (pass) {
				named += r.name != NULL;
				lined += r.line > 0;
				inl += r.ninlined > 0;
			}
		}
		first = now_ms() - t0;
		t0 = now_ms();
		for (i = 0; i < n; i++)
			symbolizer_user(s, getpid(), addrs[i], &r);
		again = now_ms() - t0;
		/* new addresses in files whose debug info is already open: the lookup alone */
		t0 = now_ms();
		for (i = 0; i < n; i++)
			symbolizer_user(s, getpid(), addrs[i] + 1, &r);
		opened = now_ms() - t0;
		/* ms for n frames -> ms per 1,000 frames */
		printf("| %s | %zu | %.2f | %.1f | %.1f | %.2f |\n", pass ? "names + lines + inlines" : "names only",
		       st.files, cold / (double)(st.files ? st.files : 1), first * 1000.0 / (double)n,
		       opened * 1000.0 / (double)n, again * 1000.0 / (double)n);
		symbolizer_free(s);
	}
	printf("\n%zu addresses in %zu files: %zu named, %zu with a line, %zu with inlined frames\n", n,
	       nfiles, named, lined, inl);
	xfree(addrs);
}

/* Resident memory of libdw's tables once every function of a binary with DWARF was looked up. */
static void bench_dwarf_memory(const char *path)
{
	struct elf_file *e;
	struct srcline *sl = NULL;
	const struct elf_symbol *syms;
	struct srcline_frame fr[40];
	size_t ns, i, hits = 0;
	long before, after;
	double t0, ms;
	int fd;

	if (elf_open(path, &e, NULL) < 0)
		return;
	elf_symbols_load(e, NULL);
	syms = elf_symbols(e, &ns);
	fd = open(path, O_RDONLY);
	before = rss_kb();
	t0 = now_ms();
	if (srcline_open(fd, "self", &sl, NULL) == 0) {
		for (i = 0; i < ns; i++) {
			if (syms[i].type == 2)
				hits += srcline_lookup(sl, syms[i].addr + syms[i].size / 2, fr, 40) > 0;
		}
		ms = now_ms() - t0;
		after = rss_kb();
		printf("DWARF of %s: %.1f MB; %zu functions looked up in %.0f ms; resident memory "
		       "+%.1f MB = %.2f MB per MB of DWARF\n", path, (double)srcline_cost(sl) / 1048576.0, hits, ms,
		       (double)(after - before) / 1024.0,
		       (double)(after - before) / 1024.0 / ((double)srcline_cost(sl) / 1048576.0));
		srcline_free(sl);
	}
	close(fd);
	elf_close(e);
}

static void bench_go(const char *path)
{
	struct elf_file *e;
	struct gopclntab *g;
	struct gopclntab_frame fr[40];
	uint64_t lo, hi, pc;
	double t0, open_ms, look_ms;
	long before = rss_kb();
	size_t i, n = 0;

	if (elf_open(path, &e, NULL) < 0)
		return;
	t0 = now_ms();
	if (gopclntab_open(e, &g, NULL) < 0) {
		elf_close(e);
		return;
	}
	open_ms = now_ms() - t0;
	gopclntab_text_range(g, &lo, &hi);
	t0 = now_ms();
	for (i = 0, pc = lo; i < 100000; i++, pc = lo + (pc - lo + 7919) % (hi - lo))
		n += gopclntab_lookup(g, pc, fr, 40, NULL) > 0;
	look_ms = now_ms() - t0;
	printf("\nGo (%s): .gopclntab indexed in %.2f ms; %.0f us per 1,000 lookups (%zu of 100000 named); "
	       "resident +%ld KB\n", path, open_ms, look_ms * 1000.0 / 100.0, n, rss_kb() - before);
	gopclntab_free(g);
	elf_close(e);
}

int main(int argc, char **argv)
{
	log_set_level(LOG_ERROR);
	/* first, while the heap is fresh: its growth is libdw's */
	bench_dwarf_memory(argc > 2 ? argv[2] : "/proc/self/exe");
	printf("\n| symbolizer | files | cold: ms per new binary | first frames (debug info opened on the way): ms per 1,000 | new frames, debug info open: ms per 1,000 | cached: ms per 1,000 frames |\n");
	printf("|---|---|---|---|---|---|\n");
	bench_native();
	if (argc > 1 && strcmp(argv[1], "-"))
		bench_go(argv[1]);
	return 0;
}
