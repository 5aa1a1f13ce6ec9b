/* unwind_tree.c: the native-unwinding benchmark's workload (bench/native_unwind.py), built with
 * -O2 -fomit-frame-pointer. A known call tree: each round spends work units in one leaf
 * (burn) reached by three paths:
 *   main > path_a > a1 > a2 > a3 > burn             40% of the units, 5 frames deep
 *   main > path_b > down x 120 > burn                30%, 122 frames deep
 *   main > path_c > rec x 500 > burn                 30%, 502 frames deep
 * Runs for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE void burn(int units);
NOINLINE void burn(int units)
{
	unsigned long x = sink;

	for (long i = 0; i < (long)units * 20000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

NOINLINE void a3(void) { burn(4); sink++; }
NOINLINE void a2(void) { a3(); sink++; }
NOINLINE void a1(void) { a2(); sink++; }
NOINLINE void path_a(void) { a1(); sink++; }

NOINLINE void down(int n);
NOINLINE void down(int n)
{
	if (n <= 1)
		burn(3);
	else
		down(n - 1);
	sink++;
}
NOINLINE void path_b(void) { down(120); sink++; }

NOINLINE void rec(int n);
NOINLINE void rec(int n)
{
	if (n <= 1)
		burn(3);
	else
		rec(n - 1);
	sink++;
}
NOINLINE void path_c(void) { rec(500); sink++; }

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 3);

	while (now() < end) {
		path_a();
		path_b();
		path_c();
	}
	return 0;
}
