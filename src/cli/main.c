/* main.c: `scorch <command> [args]` dispatch. Commands live in cmd_<name>.c (commands.h). */
#include "cli/commands.h"
#include "lib/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef SCORCH_VERSION
#define SCORCH_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{ "record", cmd_record, "profile a command, processes or the whole machine into a file" },
	{ "top", cmd_top, "show the hottest functions live, like top" },
	{ "agent", cmd_agent, "profile the whole machine continuously and push to a server" },
	{ "convert", cmd_convert, "convert a profile between pprof, folded, speedscope, html and svg" },
	{ "server", cmd_server, "run the profile server: ingest, storage, query API" },
	{ "ci", cmd_ci, "profile a CI job's command, label it with the commit, upload it" },
	{ "diff", cmd_diff, "compare two profiles or CI runs, per function, with a noise test" },
	{ "capture", cmd_capture, "keep a live thread's stack as a replay case" },
	{ "replay", cmd_replay, "unwind replay cases again, without the process or root" },
	{ NULL, NULL, NULL },
};

static void usage(FILE *out)
{
	const struct command *c;

	fprintf(out, "usage: scorch [-v] <command> [<args>]\n\n"
		     "scorch is a continuous profiler for Linux: eBPF sampling of every CPU, kernel\n"
		     "and native stacks (C, C++, Rust, Go) with the frames of CPython, HotSpot/Java,\n"
		     "V8/Node.js, Ruby, PHP and Perl, flame graphs.\n\ncommands:\n");
	for (c = commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->help);
	fprintf(out, "\nexamples:\n"
		     "  scorch record -o profile.html -- ./my-program --its-args\n"
		     "  scorch record -a -d 10 -o machine.pb.gz\n\n"
		     "'scorch <command> --help' describes a command.\n");
}

/* A closed stdin, stdout or stderr would be reused by the next open(): messages would then
 * go into an output file or a BPF object. Point them at /dev/null instead. */
static void sanitize_std_fds(void)
{
	int fd;

	for (fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
			_exit(127);
	}
}

int main(int argc, char **argv)
{
	const struct command *c;

	sanitize_std_fds();
	while (argc > 1 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "-v")) {
			log_set_level(log_get_level() < LOG_INFO ? LOG_INFO : LOG_DEBUG);
		} else if (!strcmp(argv[1], "--version")) {
			printf("scorch %s\n", SCORCH_VERSION);
			return 0;
		} else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return 0;
		} else {
			error("unknown option '%s'", argv[1]);
			usage(stderr);
			return 2;
		}
		argc--;
		argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (c = commands; c->name; c++) {
		if (!strcmp(c->name, argv[1]))
			return c->fn(argc - 1, argv + 1);
	}
	error("'%s' is not a scorch command; see 'scorch --help'", argv[1]);
	return 2;
}
