/* scratch.h: a scratch directory and the shell for the unit tests that build programs with
 * the system's tools (cc, ld, objcopy, go) and run them. The includer defines its directory
 * first, as a mkdtemp() template: `static char tmpdir[] = "/tmp/scorch-test-NAME-XXXXXX";`.
 * Header-only: test_elf.c, test_gopclntab.c, test_sym_layouts.c, test_sym_sources.c,
 * test_debuginfod.c and test_symbolizer.c. */
#ifndef SCORCH_TEST_SCRATCH_H
#define SCORCH_TEST_SCRATCH_H

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run a shell command made like printf: system()'s status. */
static inline int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* tmpdir/name (in one of 8 rotating buffers). */
static inline const char *tpath(const char *name)
{
	static char paths[8][512];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, 512, "%s/%s", tmpdir, name);
	return p;
}

/* Write text to tmpdir/name: 0 or -1. */
static inline int write_file(const char *name, const char *text)
{
	FILE *f = fopen(tpath(name), "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Start prog and read the n addresses it prints. */
static inline pid_t start_prog(const char *prog, uint64_t *addrs, int n)
{
	int fds[2], i, ok = 1;
	pid_t pid;
	FILE *f;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	for (i = 0; i < n && ok; i++) {
		unsigned long long a;

		ok = f && fscanf(f, "%llx", &a) == 1;
		addrs[i] = a;
	}
	if (f)
		fclose(f);
	if (!ok) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static inline void stop_prog(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

#endif
