/* cmd_record.c: `scorch record`: sample a command, some processes or the whole machine with
 * the BPF sampler, then symbolize and write the profile in the format the output file's
 * extension names. The event loop lives in agent/session.c, shared with the agent. */
#include "agent/session.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/output.h"
#include "profile/profile.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char record_usage[] =
	"usage: scorch record [-F HZ] [-d SECONDS] [--off-cpu | --wall]\n"
	"                     [-p PID[,PID...] | -a | -- COMMAND [ARGS...]] -o FILE\n"
	"\n"
	"Sample stacks of every CPU with eBPF and write a profile: kernel, native (C, C++, Rust,\n"
	"Go) and the frames of CPython, HotSpot/Java, V8/Node.js, Ruby, PHP and Perl programs.\n"
	"With --off-cpu, record instead where threads wait (blocked in I/O, locks, sleeps, or\n"
	"runnable but not running); with --wall, both: where every thread spends its wall time.\n"
	"\n"
	"  -o, --output FILE     where to write; the format follows the extension:\n"
	"                          .pb.gz .pprof  gzip pprof (go tool pprof, Pyroscope, ...)\n"
	"                          .folded .txt   folded stacks, root first: comm;a;b;c COUNT\n"
	"                          .json          speedscope\n"
	"                          .html          standalone interactive flame graph\n"
	"                          .svg           static flame graph\n"
	"  -F, --freq HZ         samples per second per CPU, 1..10000 (default 99)\n"
	"  -d, --duration SECS   stop after SECS seconds (default: until the command exits,\n"
	"                        the processes exit, or Ctrl-C); a command still running\n"
	"                        then gets SIGTERM (SIGKILL 5 s later)\n"
	"  -p, --pid PID,...     profile these processes (all their threads) until they exit\n"
	"  -a, --all             profile the whole machine, idle CPU included as [idle]\n"
	"                        (the default without -p or a command)\n"
	"      --no-idle         with -a, leave idle CPU out\n"
	"      --off-cpu         an off-CPU profile: nanoseconds threads spent off CPU, by\n"
	"                        stack at the wait (kernel, native, runtime) and reason, a\n"
	"                        leaf frame [off-cpu: io|lock|sleep|preempted|other]\n"
	"      --wall            a wall-clock profile: CPU samples (1/HZ s each) plus off-CPU\n"
	"                        time, in nanoseconds; idle CPU is left out\n"
	CLI_OFFCPU_USAGE
	"  -l, --lines           one frame per source line: 'fn (file.c:LINE)'; by default a\n"
	"                        function sampled on several lines is one frame (pprof output\n"
	"                        keeps the lines either way)\n"
	"      --debuginfod URL  fetch missing symbols and lines from this debuginfod server\n"
	"                        (also read from DEBUGINFOD_URLS), in the background; at the\n"
	"                        end, wait up to 30 s for what is still downloading\n"
	"      --no-debuginfod   ignore DEBUGINFOD_URLS\n"
	"  -q, --quiet           no status line\n"
	"      --stats           print counters at the end (samples, lost, BPF run time,\n"
	"                        unwind tables built and reused)\n"
	"      --cache-dir DIR   keep the unwind tables built from binaries in DIR (created\n"
	"                        0700), so that later runs do not build them again; e.g.\n"
	"                        /var/cache/scorch/tables, the agent's (default: none)\n"
	"      --capture-dir DIR keep, as replay cases in DIR (created), samples whose user\n"
	"                        stack could not be unwound whole ([unwind error], [stack\n"
	"                        switch]): `scorch replay --trace DIR/...case` shows why, without\n"
	"                        the process; such stacks are then unwound in user space\n"
	"      --capture-max N   at most N cases (default 100)\n"
	"  -- COMMAND [ARGS]     run COMMAND, profile it and every process it starts, stop when\n"
	"                        COMMAND exits (children it leaves running, e.g. daemons, are\n"
	"                        not waited for), and exit with its exit status (128+N when\n"
	"                        killed by signal N, 127 when it cannot be started)\n"
	"\n"
	"Needs root (or CAP_BPF + CAP_PERFMON). Ctrl-C or SIGTERM stops and still writes the\n"
	"profile; with a command, the signal is passed on to it; a second one kills it.\n"
	"A status line (elapsed time, samples, lost samples) is shown when stderr is a terminal.\n"
	"Exit status: the command's; else 0, 1 on failure, 2 for bad arguments.\n"
	"\n"
	"examples:\n"
	"  scorch record -o out.html -- ./my-program --its-args\n"
	"  scorch record -d 10 -o machine.pb.gz           # whole machine for 10 s, pprof\n"
	"  scorch record -p 1234,5678 -d 30 -o app.folded\n"
	"  scorch record -F 999 -o build.svg -- make -j4\n"
	"  scorch record --lines -o lines.folded -- ./my-program   # hot source lines\n"
	"  DEBUGINFOD_URLS=https://debuginfod.debian.net scorch record -o out.html -- ls -R /\n"
	"  scorch record --cache-dir /var/cache/scorch/tables -o t.html -- make test\n"
	"  scorch record --capture-dir cases -o app.folded -- ./app   # keep broken stacks\n"
	"  scorch record --off-cpu -o waits.html -- ./server --once   # where it blocks\n"
	"  scorch record --wall -p 1234 -d 10 -o wall.pb.gz           # running and waiting\n"
	"  go tool pprof -top machine.pb.gz\n";

/* getopt's message said what was wrong with the option; point to the help. */
static int bad_usage(void)
{
	fputs("see 'scorch record --help'\n", stderr);
	return 2;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "no-idle", no_argument, NULL, 'I' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "stats", no_argument, NULL, 'S' },
		{ "cache-dir", required_argument, NULL, 'C' },
		{ "capture-dir", required_argument, NULL, 'K' },
		{ "capture-max", required_argument, NULL, 'M' },
		{ "off-cpu", no_argument, NULL, 'O' },
		{ "wall", no_argument, NULL, 'W' },
		CLI_OFFCPU_LONGOPTS,
		{ "lines", no_argument, NULL, 'l' },
		{ "debuginfod", required_argument, NULL, 'D' },
		{ "no-debuginfod", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char progname[] = "scorch record";
	struct session_opts so;
	struct session *s = NULL;
	struct profile *prof = NULL;
	const char *output = NULL;
	int *pids = NULL, c, ret = 2, all = 0, status = 0, stats = 0, lines = 0;
	size_t npids = 0;
	double duration = 0;

	memset(&so, 0, sizeof(so));
	so.freq_hz = 99;
	/* one profile, written once: DWARF of big programs may take more memory than the agent's */
	so.line_budget = (size_t)1 << 30;
	so.include_idle = 1;
	so.status_line = isatty(STDERR_FILENO);
	optind = 1;
	argv[0] = progname; /* getopt's messages name it */
	while ((c = getopt_long(argc, argv, "+o:F:d:p:aqlh", longopts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'F':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > 10000) {
				error("invalid frequency '%s': expected 1..10000 Hz", optarg);
				goto out;
			}
			so.freq_hz = (int)v;
			break;
		case 'd':
			duration = strtod(optarg, &end);
			if (end == optarg || *end || !(duration > 0) || duration > 31536000) {
				error("invalid duration '%s': expected seconds, more than 0 and at most "
				      "a year", optarg);
				goto out;
			}
			break;
		case 'p':
			if (cli_parse_pids(optarg, &pids, &npids))
				goto out;
			break;
		case 'a':
			all = 1;
			break;
		case 'I':
			so.include_idle = 0;
			break;
		case 'q':
			so.status_line = 0;
			break;
		case 'S':
			stats = 1;
			break;
		case 'C':
			if (!*optarg) {
				error("empty --cache-dir: give a directory");
				goto out;
			}
			so.cache_dir = optarg;
			break;
		case 'K':
			if (!*optarg) {
				error("empty --capture-dir: give a directory");
				goto out;
			}
			if (mkdir(optarg, 0755) < 0 && errno != EEXIST) {
				error("cannot create --capture-dir %s: %s", optarg, strerror(errno));
				goto out;
			}
			so.capture_dir = optarg;
			break;
		case 'M':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > 1000000) {
				error("invalid --capture-max '%s': expected 1..1000000", optarg);
				goto out;
			}
			so.capture_max = (size_t)v;
			break;
		case 'O':
		case 'W':
			if (so.kinds && so.kinds != (c == 'O' ? SESSION_OFFCPU : SESSION_WALL)) {
				error("--off-cpu and --wall are exclusive: --wall includes the "
				      "off-CPU time");
				goto out;
			}
			so.kinds = c == 'O' ? SESSION_OFFCPU : SESSION_WALL;
			break;
		case CLI_OPT_OFFCPU_MIN:
		case CLI_OPT_OFFCPU_PERIOD:
		case CLI_OPT_OFFCPU_RATE:
			if (cli_offcpu_option(c, optarg, &so))
				goto out;
			break;
		case 'l':
			lines = 1;
			break;
		case 'D':
			so.debuginfod_urls = optarg;
			break;
		case 'N':
			so.no_debuginfod = 1;
			break;
		case 'h':
			fputs(record_usage, stdout);
			ret = 0;
			goto out;
		default:
			ret = bad_usage();
			goto out;
		}
	}
	if (optind > 1 && optind == argc && !strcmp(argv[optind - 1], "--") &&
	    output != argv[optind - 1]) {
		error("no command after '--': put the command to run there, e.g. "
		      "'scorch record -o out.html -- ./my-program'");
		goto out;
	}
	if (!output) {
		error("no output file: add -o FILE (e.g. -o profile.html)");
		ret = bad_usage();
		goto out;
	}
	if ((all && npids) || (optind < argc && (all || npids))) {
		error("-a, -p and -- COMMAND are exclusive: choose one");
		goto out;
	}
	if ((so.offcpu_min_ns || so.offcpu_period_ns || so.offcpu_max_rate) && !so.kinds) {
		error("the --off-cpu-* options need --off-cpu or --wall");
		goto out;
	}
	ret = 1;
	if (cli_check_output(output))
		goto out;
	if (so.kinds)
		so.include_idle = 0; /* idle CPU is no thread's time */

	so.duration_s = duration;
	so.stop_flag = session_signals_install();
	so.pids = pids;
	so.npids = npids;
	so.command = optind < argc ? argv + optind : NULL;
	c = session_start(&so, &s);
	if (c) {
		ret = c == -127 ? 127 : 1;
		goto out;
	}
	status = session_run(s);
	/* Debug files still downloading would name frames that are addresses now. */
	session_wait_debuginfo(s, 30);
	prof = session_profile(s);
	if (!prof)
		goto out;
	prof->show_lines = (uint8_t)lines;
	if (so.kinds == SESSION_OFFCPU ? session_offcpu_records(s) == 0 :
	    session_samples(s) + session_offcpu_records(s) == 0)
		log_warn("no %s recorded%s", so.kinds == SESSION_OFFCPU ? "off-CPU time was" :
			 "samples were", so.command ? " (did the command run long enough?)" :
			 npids ? " (did the processes exit?)" : "");
	session_offcpu_report(s);
	c = output_write_file(prof, output, so.command ? so.command[0] : "scorch record");
	if (c < 0) {
		error("cannot write '%s': %s", output, strerror(-c));
		goto out;
	}
	if (stats)
		session_print_stats(s);
	if (so.kinds == SESSION_OFFCPU)
		fprintf(stderr, "scorch: wrote %s (%.3f s off CPU in %llu waits recorded, %zu "
			"stacks%s)\n", output, profile_total(prof) / 1e9,
			(unsigned long long)session_offcpu_records(s), prof->nsamples,
			session_lost_note(s));
	else if (so.kinds == SESSION_WALL)
		fprintf(stderr, "scorch: wrote %s (%.3f s of wall time: %llu samples, %llu waits "
			"recorded, %zu stacks%s)\n", output, profile_total(prof) / 1e9,
			(unsigned long long)session_samples(s),
			(unsigned long long)session_offcpu_records(s), prof->nsamples,
			session_lost_note(s));
	else
		fprintf(stderr, "scorch: wrote %s (%llu samples, %zu stacks%s)\n", output,
			(unsigned long long)session_samples(s), prof->nsamples, session_lost_note(s));
	if (so.capture_dir) {
		size_t kept, left;

		session_capture_counts(s, &kept, &left);
		fprintf(stderr, "scorch: %zu replay cases of stacks not unwound whole in %s%s\n",
			kept, so.capture_dir,
			left ? " (more were left out: --capture-max)" : "");
	}
	ret = so.command ? session_command_status(s) : (status < 0 ? 1 : 0);
out:
	profile_free(prof);
	session_free(s);
	xfree(pids);
	return ret;
}
