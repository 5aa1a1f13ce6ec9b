/* child_cpu.h: for the unit tests that read a live interpreter's stack: wait until a child that
 * announced it reached its spinning loop has really run in it, so that the statement or call
 * that made the announcement (a print, a flush) is over. Header-only, included by test_ruby.c,
 * test_php.c and test_perl.c. */
#ifndef SCORCH_TEST_CHILD_CPU_H
#define SCORCH_TEST_CHILD_CPU_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The user + system CPU time of pid in clock ticks, or -1. */
static inline long long child_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			 &st) != 2)
		return -1;
	return (long long)(ut + st);
}

/* Wait until pid used `ticks` more clock ticks of CPU than now (at most about 10 s): 0, or -1
 * when it did not (it is blocked, or gone). */
static inline int child_wait_cpu(pid_t pid, long long ticks)
{
	long long start = child_cpu_ticks(pid), now;
	int i;

	if (start < 0)
		return -1;
	for (i = 0; i < 2000; i++) {
		now = child_cpu_ticks(pid);
		if (now < 0)
			return -1;
		if (now - start >= ticks)
			return 0;
		usleep(5000);
	}
	return -1;
}

#endif
