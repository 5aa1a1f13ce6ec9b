/* child_cpu.h: for the unit tests that read a live interpreter's stack: start a child that
 * announces "ready" on its standard output when it reached its spinning loop, and wait until
 * it has really run in it, so that the statement or call that made the announcement (a print,
 * a flush) is over. Header-only, included by test_ruby.c, test_php.c, test_perl.c and test_python.c. */
#ifndef SCORCH_TEST_CHILD_CPU_H
#define SCORCH_TEST_CHILD_CPU_H

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
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

struct child {
	pid_t pid;
	FILE *out; /* its standard output */
};

/* Runs argv (argv[0] a path) in directory dir (NULL: this one) with its standard output on
 * c->out, and waits for its "ready" line, then for ticks clock ticks of its CPU time (a child
 * that spins after the line; 0: none): 0, or -1 (the child is gone then). */
static inline int child_start(struct child *c, const char *dir, char *const argv[],
			      long long ticks)
{
	int fds[2];
	char buf[64];

	if (pipe(fds) < 0)
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (dir && chdir(dir) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	c->out = fdopen(fds[0], "r");
	if (!c->out || !fgets(buf, sizeof(buf), c->out) || strncmp(buf, "ready", 5) ||
	    (ticks && child_wait_cpu(c->pid, ticks) < 0)) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		if (c->out)
			fclose(c->out);
		return -1;
	}
	return 0;
}

static inline void child_stop(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	if (c->out)
		fclose(c->out);
}

#endif
