/* cswitch_load.c: a load of context switches at a chosen rate, for bench/offcpu_overhead.sh.
 * usage: cswitch_load SWITCHES_PER_S SECONDS [PAIRS]
 *
 * PAIRS pairs of threads (default 4) pass a byte back and forth over two pipes: every pass
 * blocks the sender in read(), so each round trip is two voluntary context switches. A
 * controller paces the round trips so that the process's own context switches (getrusage:
 * voluntary + involuntary) run at SWITCHES_PER_S, whatever else the machine does. At the end
 * it prints "switches=N seconds=S rate=R cpu_s=C": its switches, the time, their rate and the
 * CPU time it used (user + system, which includes what the kernel spent in tracepoints and
 * BPF programs run at its switches). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 64

struct pair {
	int ab[2], ba[2];
	pthread_t a, b;
};

static atomic_long budget;   /* round trips allowed so far, all pairs together */
static atomic_long done;     /* round trips made */
static atomic_int stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static long switches(double *cpu)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	if (cpu)
		*cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void *side_a(void *arg)
{
	struct pair *p = arg;
	char c = 'x';

	while (!atomic_load(&stop)) {
		if (atomic_load(&done) >= atomic_load(&budget)) {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL); /* ahead of the pace */
			continue;
		}
		atomic_fetch_add(&done, 1);
		if (write(p->ab[1], &c, 1) != 1 || read(p->ba[0], &c, 1) != 1)
			break;
	}
	close(p->ab[1]);
	return NULL;
}

static void *side_b(void *arg)
{
	struct pair *p = arg;
	char c;

	while (read(p->ab[0], &c, 1) == 1)
		if (write(p->ba[1], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	struct pair pairs[MAX_PAIRS];
	double rate, seconds, start, t, prev, win_t, cpu0, cpu1, rt_rate, allowed = 0;
	long s_start, s_end, win_s;
	int npairs, i;

	if (argc < 3) {
		fprintf(stderr, "usage: cswitch_load SWITCHES_PER_S SECONDS [PAIRS]\n");
		return 2;
	}
	rate = atof(argv[1]);
	seconds = atof(argv[2]);
	npairs = argc > 3 ? atoi(argv[3]) : 4;
	if (rate <= 0 || seconds <= 0 || npairs < 1 || npairs > MAX_PAIRS) {
		fprintf(stderr, "cswitch_load: bad arguments\n");
		return 2;
	}
	for (i = 0; i < npairs; i++) {
		if (pipe(pairs[i].ab) || pipe(pairs[i].ba) ||
		    pthread_create(&pairs[i].b, NULL, side_b, &pairs[i]) ||
		    pthread_create(&pairs[i].a, NULL, side_a, &pairs[i])) {
			perror("cswitch_load");
			return 1;
		}
	}
	/* The controller: round trips are released at rt_rate; every 100 ms the rate is
	 * corrected by the switches really seen in that window (two per round trip to begin). */
	rt_rate = rate / 2;
	start = prev = win_t = now();
	s_start = win_s = switches(&cpu0);
	while ((t = now()) - start < seconds) {
		struct timespec ts = { 0, 2000000 };

		allowed += (t - prev) * rt_rate;
		prev = t;
		atomic_store(&budget, (long)allowed);
		if (t - win_t >= 0.1) {
			long s = switches(NULL);
			double seen = (double)(s - win_s) / (t - win_t), f = seen > 0 ? rate / seen : 2;

			f = f < 0.5 ? 0.5 : f > 2 ? 2 : f;
			rt_rate *= 0.5 + 0.5 * f;
			win_t = t;
			win_s = s;
		}
		nanosleep(&ts, NULL);
	}
	s_end = switches(&cpu1);
	t = now();
	atomic_store(&stop, 1);
	for (i = 0; i < npairs; i++) {
		pthread_join(pairs[i].a, NULL);
		pthread_join(pairs[i].b, NULL);
	}
	return printf("switches=%ld seconds=%.3f rate=%.0f cpu_s=%.3f round_trips=%ld\n",
		      s_end - s_start, t - start, (double)(s_end - s_start) / (t - start),
		      cpu1 - cpu0, atomic_load(&done)) < 0;
}
