/* unwind_tree.c: the native-unwinding benchmark's workload (bench/native_unwind.py), built with
 * -O2 -fomit-frame-pointer.
 *
 *   unwind_tree SECS [TRUTH]   a known call tree for SECS seconds; each round runs one leaf
 *                              (burn) through three paths, in an order drawn at random:
 *       main > path_a > a1 > a2 > a3 > burn        4 units, 5 frames deep
 *       main > path_b > down x 120 > burn          3 units, 122 frames deep
 *       main > path_c > rec x 500 > burn           3 units, 502 frames deep
 *     Units are iteration counts, so 40/30/30 is only the nominal split. The split of CPU time
 *     is measured: each path reads its thread CPU time (CLOCK_THREAD_CPUTIME_ID) around its
 *     burn call and sums it; at exit the program writes to TRUTH (default: stdout)
 *       truth a=SECONDS b=SECONDS c=SECONDS total=SECONDS calls=N
 *     where total is the process's CPU time (CLOCK_PROCESS_CPUTIME_ID), the denominator a
 *     profiler's share of samples is compared with.
 *     A round lasts about 250 us. Run in a fixed order the workload would be periodic, and a
 *     profiler whose cost per sample depends on the stack depth phase-locks with it (the
 *     sample's cost delays the workload, not the timer): shares then drift by tens of points.
 *     Real programs are not periodic to the microsecond; the random order keeps the workload
 *     honest. UNWIND_TREE_FIXED=1 in the environment keeps the fixed order (a, b, c).
 *
 *   unwind_tree short MS       main > short_a > short_b > burn until the process has used MS
 *                              milliseconds of CPU time (not wall time), then exits
 *
 *   unwind_tree spawn RATE SECS MS
 *                              start RATE processes per second of `unwind_tree short MS` (exec
 *                              of this program) for SECS seconds on an absolute schedule (what
 *                              falls behind it is started late; nothing after SECS), then
 *                              stop the ones still running (SIGTERM to its process group) and
 *                              reap them. Renames itself
 *                              unw_spawner. Prints
 *       spawn started=N finished=N killed=N failed=N peak_running=N late_ms=X rate=R
 *     finished: exited on their own; killed: still running at the end; peak_running: most
 *     children alive at once; late_ms: the most the spawner fell behind its schedule.
 *     UNWIND_TREE_NICE=N in the environment: the spawner runs at nice N, its children at 0. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
volatile unsigned long sink;

static double clock_secs(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
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

/* CPU time spent in burn per path: [0] a, [1] b, [2] c */
static double leaf_cpu[3];

static void timed_burn(int path, int units)
{
	double t0 = clock_secs(CLOCK_THREAD_CPUTIME_ID);

	burn(units);
	leaf_cpu[path] += clock_secs(CLOCK_THREAD_CPUTIME_ID) - t0;
}

NOINLINE void a3(void);
NOINLINE void a2(void);
NOINLINE void a1(void);
NOINLINE void path_a(void);
NOINLINE void a3(void) { timed_burn(0, 4); sink++; }
NOINLINE void a2(void) { a3(); sink++; }
NOINLINE void a1(void) { a2(); sink++; }
NOINLINE void path_a(void) { a1(); sink++; }

NOINLINE void down(int n);
NOINLINE void down(int n)
{
	if (n <= 1)
		timed_burn(1, 3);
	else
		down(n - 1);
	sink++;
}
NOINLINE void path_b(void);
NOINLINE void path_b(void) { down(120); sink++; }

NOINLINE void rec(int n);
NOINLINE void rec(int n)
{
	if (n <= 1)
		timed_burn(2, 3);
	else
		rec(n - 1);
	sink++;
}
NOINLINE void path_c(void);
NOINLINE void path_c(void) { rec(500); sink++; }

NOINLINE void short_b(double cpu_secs);
NOINLINE void short_b(double cpu_secs)
{
	while (clock_secs(CLOCK_PROCESS_CPUTIME_ID) < cpu_secs)
		burn(2);
	sink++;
}
NOINLINE void short_a(double cpu_secs);
NOINLINE void short_a(double cpu_secs) { short_b(cpu_secs); sink++; }

static int tree(double secs, const char *truth_path)
{
	static void (*const orders[6][3])(void) = {
		{ path_a, path_b, path_c }, { path_a, path_c, path_b }, { path_b, path_a, path_c },
		{ path_b, path_c, path_a }, { path_c, path_a, path_b }, { path_c, path_b, path_a },
	};
	double end = clock_secs(CLOCK_MONOTONIC) + secs;
	const char *fixed = getenv("UNWIND_TREE_FIXED");
	unsigned long calls = 0;
	unsigned int r = 12345;
	FILE *f = stdout;

	while (clock_secs(CLOCK_MONOTONIC) < end) {
		const int o = fixed && *fixed == '1' ? 0 : (int)((r >> 16) % 6);

		r = r * 1103515245u + 12345u;
		orders[o][0]();
		orders[o][1]();
		orders[o][2]();
		calls++;
	}
	if (truth_path && !(f = fopen(truth_path, "w"))) {
		perror(truth_path);
		return 1;
	}
	fprintf(f, "truth a=%.6f b=%.6f c=%.6f total=%.6f calls=%lu\n", leaf_cpu[0], leaf_cpu[1],
		leaf_cpu[2], clock_secs(CLOCK_PROCESS_CPUTIME_ID), calls);
	if (f != stdout)
		fclose(f);
	return 0;
}

#define MAX_CHILDREN 65536

static int spawn(double rate, double secs, const char *ms)
{
	long started = 0, finished = 0, killed = 0, failed = 0, running = 0, peak = 0, i;
	double t0 = clock_secs(CLOCK_MONOTONIC), late = 0, elapsed;
	long total = (long)(rate * secs);
	char *argv[] = { "unwind_tree", "short", (char *)ms, NULL };
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;
	pid_t p;

	if (len <= 0)
		return 1;
	self[len] = '\0'; /* exec the file by name: the children's comm is its name */

	prctl(PR_SET_NAME, "unw_spawner", 0, 0, 0);
	if (getenv("UNWIND_TREE_NICE")) /* the spawner's priority; the children get 0 */
		setpriority(PRIO_PROCESS, 0, atoi(getenv("UNWIND_TREE_NICE")));
	setpgid(0, 0); /* the children join this group: the end kills the group, not pids */
	if (total > MAX_CHILDREN)
		total = MAX_CHILDREN;
	for (i = 0; i < total; i++) {
		double due = t0 + (double)i / rate, now = clock_secs(CLOCK_MONOTONIC);

		if (now >= t0 + secs)
			break; /* behind schedule: the window is over */
		if (due > now) {
			struct timespec ts = { (time_t)(due - now),
					       (long)((due - now - (double)(time_t)(due - now)) * 1e9) };

			nanosleep(&ts, NULL);
		} else if (now - due > late) {
			late = now - due;
		}
		p = fork();
		if (p == 0) {
			setpriority(PRIO_PROCESS, 0, 0);
			execv(self, argv);
			_exit(127);
		}
		if (p < 0) {
			failed++;
			continue;
		}
		started++;
		running++;
		while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
			running--;
			finished++;
		}
		if (running > peak)
			peak = running;
	}
	elapsed = clock_secs(CLOCK_MONOTONIC) - t0;
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	while ((p = wait(&status)) > 0 || (p < 0 && errno == EINTR)) {
		if (p < 0)
			continue;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)
			killed++;
		else
			finished++;
	}
	printf("spawn started=%ld finished=%ld killed=%ld failed=%ld peak_running=%ld late_ms=%.0f "
	       "rate=%.1f\n", started, finished, killed, failed, peak, late * 1e3,
	       elapsed > 0 ? (double)started / elapsed : 0.0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "short")) {
		short_a(atof(argv[2]) / 1e3);
		return 0;
	}
	if (argc > 4 && !strcmp(argv[1], "spawn"))
		return spawn(atof(argv[2]), atof(argv[3]), argv[4]);
	return tree(argc > 1 ? atof(argv[1]) : 3, argc > 2 ? argv[2] : NULL);
}
