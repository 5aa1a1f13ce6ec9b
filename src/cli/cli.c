/* cli.c: argument helpers shared by the commands (see cli.h). */
#include "cli/cli.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/output.h"

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_parse_pids(const char *arg, int **pids, size_t *npids)
{
	size_t cap = *npids;
	const char *p = arg;

	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > 4194304 || (*end && *end != ','))
			return error("invalid PID list '%s': expected numbers separated by commas", arg);
		if (kill((pid_t)v, 0) < 0 && errno == ESRCH)
			return error("no process with PID %ld: check the PID (ps -e)", v);
		ALLOC_GROW(*pids, *npids + 1, cap);
		(*pids)[(*npids)++] = (int)v;
		p = *end ? end + 1 : end;
	}
	if (!*npids)
		return error("empty PID list");
	return 0;
}

/* Refuse early an output we could not write, before profiling for minutes. */
int cli_check_output(const char *path)
{
	char *copy, *dir;
	int ret = 0;
	struct stat st;

	if (output_format_for(path) == OUTPUT_UNKNOWN)
		return error("cannot tell the format of '%s' from its extension: use .pb.gz, .pprof, "
			     ".folded, .txt, .json, .html, .svg or .otlp", path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return error("output '%s' is a directory", path);
	copy = xstrdup(path);
	dir = dirname(copy);
	if (access(dir, W_OK) < 0)
		ret = error("cannot write output '%s': directory '%s' is %s", path, dir,
			    errno == ENOENT ? "missing" : "not writable");
	else if (access(path, F_OK) == 0 && access(path, W_OK) < 0)
		ret = error("cannot write output '%s': %s", path, strerror(errno));
	xfree(copy);
	return ret;
}
