/* churn.c: processes and mappings that come and go under the profiler (tests/integration/churn.sh).
 *
 *   churn spawn SECS [MAXPROCS]
 *       for SECS seconds keep up to MAXPROCS (default 16) short children alive; each one
 *       dlopen()s a few libraries in turn (libz, libm, libsqlite3, libcurl, ...), burns a
 *       little CPU inside them (zlib's crc32, libm's cos) and in itself, dlclose()s them, and
 *       exits after 2-20 ms; one child in 8 exec()s /bin/true instead. Prints
 *       "churn started=N" at the end.
 *   churn mapped LIB SECS
 *       dlopen LIB, call into it once (crc32 if it is a zlib, else nothing), print "ready" and
 *       then burn CPU in this program only for SECS seconds: LIB stays mapped but is never
 *       executed again, so the test may truncate or delete it without crashing us (touching a
 *       truncated page would be SIGBUS).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void __attribute__((noinline)) burn_self(double secs)
{
	double end = now() + secs;
	unsigned long i;

	while (now() < end)
		for (i = 0; i < 20000; i++)
			sink += i * i;
}

typedef unsigned long (*crc32_fn)(unsigned long, const unsigned char *, unsigned);
typedef double (*cos_fn)(double);

static void burn_in(void *h)
{
	static unsigned char buf[1 << 16];
	crc32_fn crc = (crc32_fn)dlsym(h, "crc32");
	cos_fn c = (cos_fn)dlsym(h, "cos");
	int i;

	if (crc)
		for (i = 0; i < 8; i++)
			sink += crc(0, buf, sizeof(buf));
	if (c)
		for (i = 0; i < 20000; i++)
			sink += (unsigned long)(c((double)i) * 100);
}

static void child(unsigned seed)
{
	static const char *const libs[] = {
		"libz.so.1", "libm.so.6", "libsqlite3.so.0", "libcurl.so.4", "libzstd.so.1",
		"libexpat.so.1", "libbz2.so.1.0", "liblzma.so.5",
	};
	size_t n = sizeof(libs) / sizeof(libs[0]), i;

	if (seed % 8 == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 3; i++) {
		void *h = dlopen(libs[(seed + i * 3) % n], RTLD_NOW | RTLD_LOCAL);

		if (!h)
			continue;
		burn_in(h);
		burn_self(0.001);
		dlclose(h);
	}
	burn_self(0.001 * (seed % 17));
	_exit(0);
}

static int spawn(double secs, int maxprocs)
{
	double end = now() + secs;
	unsigned long started = 0;
	int alive = 0, st;

	while (now() < end) {
		pid_t pid;

		while (alive >= maxprocs) {
			if (wait(&st) > 0)
				alive--;
		}
		while (alive > 0 && waitpid(-1, &st, WNOHANG) > 0)
			alive--;
		pid = fork();
		if (pid == 0)
			child((unsigned)started * 2654435761u >> 7);
		if (pid > 0) {
			alive++;
			started++;
		} else {
			usleep(1000);
		}
	}
	while (alive > 0 && wait(&st) > 0)
		alive--;
	printf("churn started=%lu\n", started);
	return 0;
}

static int mapped(const char *lib, double secs)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "churn: %s\n", dlerror());
		return 1;
	}
	burn_in(h);
	printf("ready\n");
	fflush(stdout);
	burn_self(secs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "spawn"))
		return spawn(atof(argv[2]), argc > 3 ? atoi(argv[3]) : 16);
	if (argc >= 4 && !strcmp(argv[1], "mapped"))
		return mapped(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: churn spawn SECS [MAXPROCS] | churn mapped LIB SECS\n");
	return 2;
}
