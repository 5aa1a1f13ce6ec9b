/* spin.c: a process of a few milliseconds for tests/integration/mmap_events.sh. It spins ARG
 * milliseconds (default 2) in mmap_spin_work(), reading a clock the vDSO serves (the time is
 * spent in user space), and exits: many of its samples are read after it is gone. */
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) void mmap_spin_work(double ms);
__attribute__((noinline)) void mmap_spin_work(double ms)
{
	struct timespec t0, t;
	volatile unsigned long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++)
			n += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

int main(int argc, char **argv)
{
	mmap_spin_work(argc > 1 ? atof(argv[1]) : 2);
	return 0;
}
