/* leader_exit.c: a process whose main thread leaves early and whose other thread keeps
 * working: the process lives on until the worker is done.
 * usage: leader_exit [SECONDS]   (default 2)
 * main starts worker_thread -> worker_spin (busy for SECONDS) and calls pthread_exit(). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

void *worker_thread(void *arg);
void worker_spin(double seconds);

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void worker_spin(double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		unsigned long i;

		for (i = 0; i < 100000; i++)
			sink = sink * 6364136223846793005UL + i;
	}
}

__attribute__((noinline)) void *worker_thread(void *arg)
{
	worker_spin(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	static double seconds;
	pthread_t t;

	seconds = argc > 1 ? atof(argv[1]) : 2;
	if (pthread_create(&t, NULL, worker_thread, &seconds))
		return 1;
	pthread_exit(NULL);
}
