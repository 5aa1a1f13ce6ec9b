/* fp_hot.c: a CPU-bound program with a known split, built with frame pointers.
 * usage: fp_hot [-c] [SECONDS]   (default 1.5)
 * main -> run -> hot_function  spends ~80% of the time,
 * main -> run -> cold_function spends ~20%.
 * SECONDS is wall-clock time; with -c it is the process's own CPU time, so that a test gets the
 * same amount of work to profile however busy the machine is (it gives up after 120 s of
 * wall-clock time). With -c the program prints the CPU time it used at exit, measured by
 * CLOCK_PROCESS_CPUTIME_ID: "fp_hot: cpu 1.500312 s". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void hot_function(void);
void cold_function(void);
void run(double seconds, clockid_t clock);

static volatile unsigned long sink;

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
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

__attribute__((noinline)) void run(double seconds, clockid_t clock)
{
	double end = now(clock) + seconds;
	double give_up = clock == CLOCK_MONOTONIC ? end : now(CLOCK_MONOTONIC) + 120;

	while (now(clock) < end && now(CLOCK_MONOTONIC) < give_up) {
		hot_function();
		cold_function();
	}
}

int main(int argc, char **argv)
{
	int cpu = argc > 1 && strcmp(argv[1], "-c") == 0;

	if (cpu) {
		argc--;
		argv++;
	}
	run(argc > 1 ? atof(argv[1]) : 1.5, cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC);
	if (cpu) {
		printf("fp_hot: cpu %.6f s\n", now(CLOCK_PROCESS_CPUTIME_ID));
		fflush(stdout);
	}
	return 0;
}
