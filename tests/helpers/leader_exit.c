/* leader_exit.c: a process whose main thread leaves early and whose other thread keeps
 * working: the process lives on until the worker is done.
 * usage: leader_exit [-c] [SECONDS]   (default 2)
 * main starts worker_thread -> worker_spin (busy for SECONDS) and calls pthread_exit().
 * With -c, SECONDS is the worker's own CPU time (it gives up after 120 s of wall-clock time)
 * and the worker prints what it used at the end: "leader_exit: cpu 0.500120 s". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *worker_thread(void *arg);
void worker_spin(double seconds, clockid_t clock);

static volatile unsigned long sink;
static double seconds;
static int cpu_mode;

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void worker_spin(double secs, clockid_t clock)
{
	double end = now(clock) + secs;
	double give_up = clock == CLOCK_MONOTONIC ? end : now(CLOCK_MONOTONIC) + 120;

	while (now(clock) < end && now(CLOCK_MONOTONIC) < give_up) {
		unsigned long i;

		for (i = 0; i < 100000; i++)
			sink = sink * 6364136223846793005UL + i;
	}
}

__attribute__((noinline)) void *worker_thread(void *arg)
{
	(void)arg;
	worker_spin(seconds, cpu_mode ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC);
	if (cpu_mode) {
		printf("leader_exit: cpu %.6f s\n", now(CLOCK_THREAD_CPUTIME_ID));
		fflush(stdout);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	cpu_mode = argc > 1 && strcmp(argv[1], "-c") == 0;
	if (cpu_mode) {
		argc--;
		argv++;
	}
	seconds = argc > 1 ? atof(argv[1]) : 2;
	if (pthread_create(&t, NULL, worker_thread, NULL))
		return 1;
	pthread_exit(NULL);
}
