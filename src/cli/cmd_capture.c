/* cmd_capture.c: `scorch capture -p PID`: replay cases (src/replay/case.h) of the stacks of a
 * live process's threads, unwound by the same step as the BPF program, for `scorch replay`. */
#include "agent/symbolizer.h"
#include "agent/unwinder.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "replay/replay.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char capture_usage[] =
	"usage: scorch capture -p PID [-t TID[,TID...]] [-n N] [-i DUR] [-o DIR] [-m TEXT]\n"
	"\n"
	"Stop each chosen thread of a live process for a moment, unwind its user stack with the\n"
	"same code the BPF sampler runs, and write what that unwind read as a replay case: the\n"
	"registers, the pages of memory it touched, the mappings and unwind-table entries it\n"
	"looked up, and the name of every frame. `scorch replay` runs the case again without the\n"
	"process, its binaries or root, so a stack that comes out wrong can be kept, sent and\n"
	"debugged (`scorch replay --trace`). Needs the right to trace the process (root, or\n"
	"ptrace_scope 0 and the same user).\n"
	"\n"
	"Native frames only for now (C, C++, Rust, Go, frame-pointer JIT code): the frames of\n"
	"interpreters (CPython, Java, ...) come from the BPF walkers and are not in these cases.\n"
	"\n"
	"  -p, --pid PID         the process\n"
	"  -t, --tid TID,...     these threads only (default: every thread)\n"
	"  -n, --samples N       cases per thread, taken --interval apart (default 1)\n"
	"  -i, --interval DUR    time between a thread's cases (default 5ms)\n"
	"  -o, --output DIR      where the cases go, as PID-TID-K.case (default scorch-cases)\n"
	"  -m, --description T   a one-line description kept in each case\n"
	"  -q, --quiet           no line per case\n"
	"\n"
	"examples:\n"
	"  scorch capture -p $(pidof myserver) -o cases/\n"
	"  scorch capture -p 1234 -t 1240 -n 20 -i 2ms -m 'worker stuck in the parser'\n"
	"  scorch replay --trace cases/1234-1240-0.case\n";

struct capture_opts {
	int pid;
	int *tids;
	size_t ntids;
	unsigned samples;
	uint64_t interval_ns;
	const char *dir;
	const char *description;
	int quiet;
};

static int thread_comm(int pid, int tid, char *out, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	f = fopen(path, "re");
	out[0] = 0;
	if (!f)
		return -1;
	if (fgets(out, (int)size, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
	return 0;
}

static int list_threads(int pid, int **tids, size_t *n)
{
	char path[64];
	size_t cap = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return error("process %d: %s", pid, strerror(errno));
	while ((e = readdir(d))) {
		char *end;
		long t = strtol(e->d_name, &end, 10);

		if (e->d_name[0] == '.' || *end || t <= 0)
			continue;
		ALLOC_GROW(*tids, *n + 1, cap);
		(*tids)[(*n)++] = (int)t;
	}
	closedir(d);
	return 0;
}

static int parse_tids(const char *arg, struct capture_opts *o)
{
	const char *p = arg;
	size_t cap = 0;

	while (*p) {
		char *end;
		long t = strtol(p, &end, 10);

		if (end == p || t <= 0 || t > 0x7fffffff || (*end && *end != ','))
			return error("bad thread list '%s'", arg);
		ALLOC_GROW(o->tids, o->ntids + 1, cap);
		o->tids[o->ntids++] = (int)t;
		p = *end ? end + 1 : end;
	}
	return o->ntids ? 0 : error("empty thread list");
}

static int write_case(const struct capture_opts *o, const struct replay_case *c, unsigned k,
		      size_t *bytes)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	char *path = xasprintf("%s/%d-%u-%u.case", o->dir, o->pid, c->tid, k);
	int rc = case_encode(c, &b);

	if (!rc && write_file_atomic(path, b.data, b.len) < 0)
		rc = error("cannot write %s: %s", path, strerror(errno));
	else if (rc)
		rc = error("cannot encode the case of thread %u", c->tid);
	if (!rc && !o->quiet)
		printf("%s: %zu frames, %zu bytes, %s\n", path, c->nexpect, b.len,
		       c->expect ? c->expect : "");
	*bytes = b.len;
	buf_release(&b);
	xfree(path);
	return rc;
}

int cmd_capture(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "samples", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "description", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct capture_opts o = { 0, NULL, 0, 1, 5000000ull, "scorch-cases", NULL, 0 };
	struct unwinder_opts uo = { 0 };
	struct unwinder *u = NULL;
	struct symbolizer *sym = NULL;
	struct errmsg err = { { 0 } };
	unsigned k, written = 0, failed = 0;
	size_t i, total = 0;
	int c, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:t:n:i:o:m:qh", longopts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 0x7fffffff)
				return error("bad pid '%s'", optarg), 2;
			o.pid = (int)v;
			break;
		case 't':
			if (parse_tids(optarg, &o) < 0)
				return 2;
			break;
		case 'n':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 10000)
				return error("--samples: 1 to 10000"), 2;
			o.samples = (unsigned)v;
			break;
		case 'i':
			if (cli_parse_duration_ns(optarg, "--interval", 0, 60000000000ull,
						  &o.interval_ns) < 0)
				return 2;
			break;
		case 'o':
			o.dir = optarg;
			break;
		case 'm':
			o.description = optarg;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'h':
			fputs(capture_usage, stdout);
			return 0;
		default:
			fputs(capture_usage, stderr);
			return 2;
		}
	}
	if (!o.pid || optind != argc) {
		fputs(capture_usage, stderr);
		return 2;
	}
	if (!o.ntids && list_threads(o.pid, &o.tids, &o.ntids) < 0)
		goto out;
	if (mkdir(o.dir, 0755) < 0 && errno != EEXIST) {
		error("cannot create %s: %s", o.dir, strerror(errno));
		goto out;
	}
	uo.max_entries = 8u << 20;
	u = unwinder_new(NULL, &uo, &err);
	sym = symbolizer_new();
	if (!u || !sym) {
		error("%s", err.msg[0] ? err.msg : "out of memory");
		goto out;
	}
	if (unwinder_track_pid(u, o.pid) < 0 || symbolizer_track_pid(sym, o.pid) < 0) {
		error("cannot read process %d: is it running, and may it be traced?", o.pid);
		goto out;
	}
	for (k = 0; k < o.samples; k++) {
		if (k && o.interval_ns) {
			struct timespec ts = { (time_t)(o.interval_ns / 1000000000ull),
					       (long)(o.interval_ns % 1000000000ull) };

			nanosleep(&ts, NULL);
		}
		for (i = 0; i < o.ntids; i++) {
			struct replay_case cs;
			char comm[32];
			size_t bytes = 0;

			thread_comm(o.pid, o.tids[i], comm, sizeof(comm));
			memset(&err, 0, sizeof(err));
			if (replay_capture(u, sym, o.pid, o.tids[i], comm, &cs, &err) < 0) {
				log_warn("thread %d: %s", o.tids[i], err.msg);
				failed++;
				continue;
			}
			cs.description = o.description ? xstrdup(o.description)
						       : xasprintf("thread %d (%s) of process %d",
								   o.tids[i], comm, o.pid);
			cs.origin = xasprintf("scorch capture -p %d, sample %u", o.pid, k);
			if (write_case(&o, &cs, k, &bytes) == 0) {
				written++;
				total += bytes;
			} else {
				failed++;
			}
			case_release(&cs);
		}
	}
	if (!o.quiet || failed)
		fprintf(stderr, "scorch: %u cases in %s (%zu bytes), %u failed\n", written, o.dir,
			total, failed);
	rc = written ? 0 : 1;
out:
	symbolizer_free(sym);
	unwinder_free(u);
	xfree(o.tids);
	return rc;
}
