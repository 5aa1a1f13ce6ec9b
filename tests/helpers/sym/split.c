/* split.c: a native workload with a known CPU split, built at test time as C (-O2, no frame
 * pointers) and as C++ (stripped, names only from MiniDebugInfo) by the tests and benchmarks
 * of native symbolization (tests/integration/native_symbols.sh, bench/native_symbols.sh).
 *
 *   split SECONDS [TRUTH_FILE]
 *
 * Rounds of work_a (2 units of this thread's CPU time, in leaf_a, a frameless leaf it calls)
 * then work_b (1 unit, with mix() inlined into it) run for SECONDS; the CPU time each really
 * got goes to TRUTH_FILE as "work_a SECS\nwork_b SECS". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long leaf_a(unsigned long x)
{
	return x * 2654435761UL + 1;
}

__attribute__((noinline)) void work_a(int n)
{
	unsigned long x = sink;

	for (int i = 0; i < n; i++)
		x = leaf_a(x);
	sink = x;
}

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15UL;
	return x ^ (x >> 29);
}

__attribute__((noinline)) void work_b(int n)
{
	unsigned long x = sink;

	for (int i = 0; i < n; i++)
		x = mix(x + (unsigned long)i);
	sink = x;
}

static double spin_for(double secs, void (*f)(int))
{
	double t0 = thread_cpu(), t;

	do {
		f(20000);
		t = thread_cpu();
	} while (t - t0 < secs);
	return t - t0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2, a = 0, b = 0;
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		a += spin_for(0.02, work_a);
		b += spin_for(0.01, work_b);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 < secs);
	if (argc > 2) {
		FILE *f = fopen(argv[2], "w");

		if (!f)
			return 1;
		fprintf(f, "work_a %.3f\nwork_b %.3f\n", a, b);
		fclose(f);
	}
	return 0;
}
