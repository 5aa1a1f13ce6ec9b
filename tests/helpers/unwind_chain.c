/* unwind_chain: a program built without frame pointers whose call chains are known, for the
 * native unwinder's tests and benchmarks.
 *
 *   unwind_chain chain SECS   main > level1 > level2 > qsort > cmp > raise(SIGUSR1) >
 *                             on_signal > leaf_spin for SECS seconds (a signal frame and a
 *                             libc callback in the chain)
 *   unwind_chain stop         the same chain, but the leaf stops itself (SIGSTOP) under
 *                             ptrace (PTRACE_TRACEME) so a test can read its registers
 *   unwind_chain deep N SECS  main > deep_start > recurse x N > leaf_spin
 *   unwind_chain stopdeep N   the same, stopping itself under ptrace in the leaf
 *   unwind_chain wide N SECS  main > wide_start > recurse_wide x N > leaf_spin, with 128-byte
 *                             frames (600 of them need 75 KiB of stack: more than one record's
 *                             stack snapshot holds)
 *   unwind_chain stopwide N   the same, stopping itself under ptrace in the leaf
 *   unwind_chain dlopen SECS  main > run_dlopen > sqlite3_exec (libsqlite3, dlopen()ed)
 *   unwind_chain short MS     main > short_a > short_b > leaf_spin for MS milliseconds
 *
 * Functions are noinline and calls are not tail calls (the Makefile builds helpers with
 * -fno-inline -fno-optimize-sibling-calls) so every frame stays on the stack. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static double spin_secs;
static int stop_mode;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE void leaf_spin(double secs);
NOINLINE void leaf_spin(double secs)
{
	double end = now() + secs;
	unsigned long i = 0;

	if (stop_mode) {
		raise(SIGSTOP);
		return;
	}
	while (now() < end) {
		for (int k = 0; k < 10000; k++)
			i += (unsigned long)k * 7;
		sink = i;
	}
}

NOINLINE void on_signal(int sig);
NOINLINE void on_signal(int sig)
{
	leaf_spin(spin_secs);
	sink += (unsigned long)sig;
}

static int raised;

NOINLINE int cmp(const void *a, const void *b);
NOINLINE int cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!raised) {
		raised = 1;
		raise(SIGUSR1);
	}
	return (x > y) - (x < y);
}

NOINLINE void level2(void);
NOINLINE void level2(void)
{
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), cmp);
	sink += (unsigned long)v[0];
}

NOINLINE void level1(void);
NOINLINE void level1(void)
{
	level2();
	sink++;
}

NOINLINE unsigned long recurse(int n);
NOINLINE unsigned long recurse(int n)
{
	if (n <= 0)
		leaf_spin(spin_secs);
	else
		sink += recurse(n - 1);
	return sink + 1;
}

NOINLINE void deep_start(int n);
NOINLINE void deep_start(int n)
{
	sink += recurse(n - 1);
}

NOINLINE unsigned long recurse_wide(int n);
NOINLINE unsigned long recurse_wide(int n)
{
	volatile unsigned char pad[112];

	pad[0] = (unsigned char)n;
	pad[sizeof(pad) - 1] = (unsigned char)(n >> 8);
	if (n <= 0)
		leaf_spin(spin_secs);
	else
		sink += recurse_wide(n - 1);
	return sink + pad[0] + pad[sizeof(pad) - 1];
}

NOINLINE void wide_start(int n);
NOINLINE void wide_start(int n)
{
	sink += recurse_wide(n - 1);
}

NOINLINE int run_dlopen(double secs);
NOINLINE int run_dlopen(double secs)
{
	void *h = dlopen("libsqlite3.so.0", RTLD_NOW);
	int (*open_db)(const char *, void **);
	int (*exec_sql)(void *, const char *, void *, void *, char **);
	void *db = NULL;
	double end = now() + secs;

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&open_db = dlsym(h, "sqlite3_open");
	*(void **)&exec_sql = dlsym(h, "sqlite3_exec");
	if (!open_db || !exec_sql || open_db(":memory:", &db))
		return 1;
	while (now() < end)
		exec_sql(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
			 "LIMIT 300000) SELECT sum(x) FROM c", NULL, NULL, NULL);
	return 0;
}

NOINLINE void short_b(double secs);
NOINLINE void short_b(double secs)
{
	leaf_spin(secs);
	sink++;
}

NOINLINE void short_a(double secs);
NOINLINE void short_a(double secs)
{
	short_b(secs);
	sink++;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "chain";

	signal(SIGUSR1, on_signal);
	if (!strcmp(mode, "chain") || !strcmp(mode, "stop")) {
		spin_secs = argc > 2 ? atof(argv[2]) : 1;
		if (!strcmp(mode, "stop")) {
			stop_mode = 1;
			if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
				return 2;
		}
		level1();
	} else if (!strcmp(mode, "deep") || !strcmp(mode, "stopdeep") || !strcmp(mode, "wide") ||
		   !strcmp(mode, "stopwide")) {
		int n = argc > 2 ? atoi(argv[2]) : 500;

		if (!strncmp(mode, "stop", 4)) {
			stop_mode = 1;
			if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
				return 2;
		}
		spin_secs = argc > 3 ? atof(argv[3]) : 1;
		if (strstr(mode, "wide"))
			wide_start(n);
		else
			deep_start(n);
	} else if (!strcmp(mode, "dlopen")) {
		return run_dlopen(argc > 2 ? atof(argv[2]) : 1);
	} else if (!strcmp(mode, "short")) {
		short_a((argc > 2 ? atof(argv[2]) : 100) / 1000.0);
	} else {
		fprintf(stderr, "usage: unwind_chain chain|stop|deep|stopdeep|wide|stopwide|dlopen|"
			"short ...\n");
		return 2;
	}
	return 0;
}
