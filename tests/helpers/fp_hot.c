/* fp_hot.c: a CPU-bound program with a known split, built with frame pointers.
 * usage: fp_hot [SECONDS]   (default 1.5)
 * main -> run -> hot_function  spends ~80% of the time,
 * main -> run -> cold_function spends ~20%. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void hot_function(void);
void cold_function(void);
void run(double seconds);

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void hot_function(void)
{
	/* A stack variable makes this leaf set up a frame like every other function. */
	volatile unsigned long x = sink;
	unsigned long i;

	for (i = 0; i < 4000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void cold_function(void)
{
	volatile unsigned long x = sink;
	unsigned long i;

	for (i = 0; i < 1000000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

__attribute__((noinline)) void run(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		hot_function();
		cold_function();
	}
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 1.5);
	return 0;
}
