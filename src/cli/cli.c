/* cli.c: argument helpers shared by the commands (see cli.h). */
#include "cli/cli.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

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
