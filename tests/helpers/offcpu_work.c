/* offcpu_work.c: a thread that blocks a known share of its wall time, and says how much.
 * usage: offcpu_work pipe|futex|sleep SECONDS BLOCK_MS BURN_MS
 *
 * The thread "blocker" runs work_loop() for SECONDS: burn() on the CPU for about BURN_MS, then
 * one wait of about BLOCK_MS, again and again (each length drawn between half and one and a
 * half times the nominal one, so that the cycle does not beat with a sampling period). The
 * wait is
 *   pipe   wait_for_data(): read() on a pipe the thread "feeder" writes to BLOCK_MS later
 *   futex  wait_for_lock(): FUTEX_WAIT on a word the feeder sets (and wakes) BLOCK_MS later
 *   sleep  take_a_nap(): nanosleep(BLOCK_MS)
 * At the end it prints its own measure, from clock_gettime() around each wait:
 *   blocked_ns=B wall_ns=W cpu_ns=C
 * W is the time in work_loop(), B the time inside the waits, C the thread's CPU time. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void burn(long ns);
void wait_for_data(long ns);
void wait_for_lock(long ns);
void take_a_nap(long ns);
void work_loop(double seconds, long burn_ns, long long *blocked, long long *wall);

static int go_pipe[2], data_pipe[2];
static atomic_int word;
static long block_ns;
static unsigned long long rng = 88172645463325252ULL;
static volatile unsigned long sink;
static int mode; /* 0 pipe, 1 futex, 2 sleep */

static long long now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ns times a factor in [0.5, 1.5) (xorshift64). */
static long jitter(long ns)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ns / 2 + (long)((double)(rng >> 11) / 9007199254740992.0 * (double)ns);
}

static void nap(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The feeder: on each request, wait BLOCK_MS, then release the blocker. */
static void *feeder(void *arg)
{
	long ns;
	char c = 'x';

	prctl(PR_SET_NAME, "feeder");
	while (read(go_pipe[0], &ns, sizeof(ns)) == (ssize_t)sizeof(ns)) {
		nap(ns);
		if (mode == 0) {
			if (write(data_pipe[1], &c, 1) != 1)
				break;
		} else {
			atomic_store(&word, 1);
			syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		}
	}
	return arg;
}

__attribute__((noinline)) void burn(long ns)
{
	long long end = now_ns(CLOCK_MONOTONIC) + ns;

	while (now_ns(CLOCK_MONOTONIC) < end) {
		unsigned long i, x = sink;

		for (i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
}

__attribute__((noinline)) void wait_for_data(long ns)
{
	char c;

	if (write(go_pipe[1], &ns, sizeof(ns)) != (ssize_t)sizeof(ns) ||
	    read(data_pipe[0], &c, 1) != 1) {
		perror("offcpu_work: pipe");
		exit(1);
	}
}

__attribute__((noinline)) void wait_for_lock(long ns)
{
	atomic_store(&word, 0);
	if (write(go_pipe[1], &ns, sizeof(ns)) != (ssize_t)sizeof(ns)) {
		perror("offcpu_work: pipe");
		exit(1);
	}
	while (atomic_load(&word) == 0)
		syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

__attribute__((noinline)) void take_a_nap(long ns)
{
	nap(ns);
}

__attribute__((noinline)) void work_loop(double seconds, long burn_ns, long long *blocked,
					 long long *wall)
{
	long long start = now_ns(CLOCK_MONOTONIC), end = start + (long long)(seconds * 1e9), t;

	*blocked = 0;
	do {
		long ns;

		burn(jitter(burn_ns));
		ns = jitter(block_ns);
		t = now_ns(CLOCK_MONOTONIC);
		if (mode == 0)
			wait_for_data(ns);
		else if (mode == 1)
			wait_for_lock(ns);
		else
			take_a_nap(ns);
		*blocked += now_ns(CLOCK_MONOTONIC) - t;
	} while (now_ns(CLOCK_MONOTONIC) < end);
	*wall = now_ns(CLOCK_MONOTONIC) - start;
}

int main(int argc, char **argv)
{
	pthread_t th;
	long long blocked, wall, cpu0;
	double seconds;

	if (argc != 5 || (strcmp(argv[1], "pipe") && strcmp(argv[1], "futex") &&
			  strcmp(argv[1], "sleep"))) {
		fprintf(stderr, "usage: offcpu_work pipe|futex|sleep SECONDS BLOCK_MS BURN_MS\n");
		return 2;
	}
	mode = !strcmp(argv[1], "pipe") ? 0 : !strcmp(argv[1], "futex") ? 1 : 2;
	seconds = atof(argv[2]);
	block_ns = (long)(atof(argv[3]) * 1e6);
	if (pipe(go_pipe) || pipe(data_pipe) || pthread_create(&th, NULL, feeder, NULL)) {
		perror("offcpu_work");
		return 1;
	}
	prctl(PR_SET_NAME, "blocker");
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	work_loop(seconds, (long)(atof(argv[4]) * 1e6), &blocked, &wall);
	printf("blocked_ns=%lld wall_ns=%lld cpu_ns=%lld\n", blocked, wall,
	       now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0);
	fflush(stdout);
	close(go_pipe[1]);
	pthread_join(th, NULL);
	return 0;
}
