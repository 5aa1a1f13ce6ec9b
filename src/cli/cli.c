/* cli.c: argument helpers shared by the commands (see cli.h). */
#include "cli/cli.h"
#include "agent/sampler.h"
#include "agent/session.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/output.h"

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
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

/* A duration in the largest unit that shows it whole: "4s", "1us", "0". */
static const char *fmt_duration(uint64_t ns, char *out, size_t len)
{
	if (ns && ns % 1000000000ULL == 0)
		snprintf(out, len, "%llus", (unsigned long long)(ns / 1000000000ULL));
	else if (ns && ns % 1000000ULL == 0)
		snprintf(out, len, "%llums", (unsigned long long)(ns / 1000000ULL));
	else if (ns && ns % 1000ULL == 0)
		snprintf(out, len, "%lluus", (unsigned long long)(ns / 1000ULL));
	else
		snprintf(out, len, ns ? "%lluns" : "%llu", (unsigned long long)ns);
	return out;
}

int cli_parse_duration_ns(const char *arg, const char *option, uint64_t min_ns, uint64_t max_ns,
			  uint64_t *out)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
	char *end;
	double v, ns = -1;
	size_t i;

	errno = 0;
	v = strtod(arg, &end);
	if (end != arg && !errno && v >= 0) {
		if (!*end && v == 0)
			ns = 0;
		for (i = 0; i < sizeof(units) / sizeof(units[0]) && ns < 0; i++)
			if (!strcmp(end, units[i].suffix))
				ns = v * units[i].mult;
	}
	if (ns < 0)
		return error("invalid %s '%s': expected a duration with its unit, e.g. 500us, 2ms, 1s",
			     option, arg);
	if (ns < (double)min_ns || ns > (double)max_ns) {
		char lo[32], hi[32];

		return error("invalid %s '%s': expected %s to %s", option, arg,
			     fmt_duration(min_ns, lo, sizeof(lo)), fmt_duration(max_ns, hi, sizeof(hi)));
	}
	*out = (uint64_t)(ns + 0.5);
	return 0;
}

int cli_offcpu_option(int code, const char *arg, struct session_opts *so)
{
	char *end;
	long v;

	switch (code) {
	case CLI_OPT_OFFCPU_MIN:
		return cli_parse_duration_ns(arg, "--off-cpu-min", 0, 60000000000ULL,
					     &so->offcpu_min_ns);
	case CLI_OPT_OFFCPU_PERIOD:
		return cli_parse_duration_ns(arg, "--off-cpu-period", 1000,
					     SAMPLER_OFFCPU_MAX_PERIOD_NS, &so->offcpu_period_ns);
	case CLI_OPT_OFFCPU_RATE:
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < 1 || v > 1000000)
			return error("invalid --off-cpu-max-rate '%s': expected stacks per CPU and "
				     "second, 1..1000000", arg);
		so->offcpu_max_rate = (uint32_t)v;
		return 0;
	default:
		return error("unknown off-CPU option");
	}
}
