/* cmd_top.c: `scorch top`: the hottest functions, live, like top(1). Every interval the
 * session's samples become a profile; functions are ranked by self samples (the frame that was
 * running) with their total (anywhere on the stack, counted once per stack). */
#include "agent/session.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/strtab.h"
#include "profile/profile.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static const char top_usage[] =
	"usage: scorch top [-F HZ] [-p PID[,PID...]] [-i SECS] [-n ROWS] [-d SECS] [--no-idle]\n"
	"\n"
	"Show the hottest functions of the whole machine (or of some processes), refreshed every\n"
	"interval. SELF is the share of samples where the function was running, TOTAL where it was\n"
	"anywhere on the stack. Kernel functions end in _[k]; Python ones show file and line.\n"
	"\n"
	"  -F, --freq HZ        samples per second per CPU (default 99)\n"
	"  -p, --pid PID,...    only these processes\n"
	"  -i, --interval SECS  refresh period (default 1)\n"
	"  -n, --rows N         rows to show (default: fit the terminal, else 20)\n"
	"  -d, --duration SECS  stop after SECS seconds\n"
	"      --no-idle        leave idle CPU out\n"
	"\n"
	"examples:\n"
	"  scorch top\n"
	"  scorch top -p $(pidof postgres | tr ' ' ,) -n 30\n"
	"  scorch top -d 5 -i 5 > hot.txt     # one plain report when not on a terminal\n";

struct fn_count {
	uint32_t name; /* id in the local strtab */
	int64_t self, total;
	uint32_t last_sample; /* to count total once per stack */
};

static int cmp_self(const void *a, const void *b)
{
	const struct fn_count *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static void show(const struct profile *p, int rows, int tty, double interval, int ncpu_hint)
{
	struct strtab *names = strtab_new();
	struct u64map index;
	struct fn_count *fns = NULL;
	size_t nfns = 0, cap = 0, i, j;
	int64_t total = profile_total(p), idle = 0;
	char name[512];
	time_t now = time(NULL);
	char when[32];

	u64map_init(&index);
	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);

		for (j = 0; j < s->nlocs; j++) {
			uint32_t id;
			uint64_t *v;
			struct fn_count *f;

			profile_frame_name(p, locs[j], name, sizeof(name));
			id = strtab_intern(names, name);
			v = u64map_get(&index, (uint64_t)id + 1);
			if (!v) {
				ALLOC_GROW(fns, nfns + 1, cap);
				memset(&fns[nfns], 0, sizeof(fns[nfns]));
				fns[nfns].name = id;
				fns[nfns].last_sample = UINT32_MAX;
				u64map_put(&index, (uint64_t)id + 1, nfns);
				f = &fns[nfns++];
			} else {
				f = &fns[*v];
			}
			if (j == 0) {
				f->self += s->value;
				if (!strcmp(name, "[idle]"))
					idle += s->value;
			}
			if (f->last_sample != i) {
				f->total += s->value;
				f->last_sample = (uint32_t)i;
			}
		}
	}
	if (nfns)
		qsort(fns, nfns, sizeof(*fns), cmp_self);
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("scorch top - %s  %lld samples in %.1f s", when, (long long)total, interval);
	if (total && p->period > 0 && interval > 0) {
		double busy = (double)(total - idle) * (double)p->period / 1e9 / interval;

		printf("  busy %.2f of %d CPUs", busy, ncpu_hint);
	}
	printf("\n\n%7s %7s %9s  %s\n", "SELF", "TOTAL", "SAMPLES", "FUNCTION");
	for (i = 0; i < nfns && (int)i < rows; i++) {
		printf("%6.2f%% %6.2f%% %9lld  %s\n", total ? 100.0 * fns[i].self / total : 0.0,
		       total ? 100.0 * fns[i].total / total : 0.0, (long long)fns[i].self,
		       strtab_get(names, fns[i].name));
	}
	if (!tty)
		printf("\n");
	fflush(stdout);
	xfree(fns);
	u64map_release(&index);
	strtab_free(names);
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "pid", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "rows", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' },
		{ "no-idle", no_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char progname[] = "scorch top";
	struct session_opts so;
	struct session *s = NULL;
	int *pids = NULL, c, ret = 2, rows = 0, tty = isatty(STDOUT_FILENO), r;
	size_t npids = 0;
	double interval = 1, last;
	struct timespec ts;

	memset(&so, 0, sizeof(so));
	so.freq_hz = 99;
	so.include_idle = 1;
	optind = 1;
	argv[0] = progname; /* getopt's messages name it */
	while ((c = getopt_long(argc, argv, "F:p:i:n:d:h", longopts, NULL)) != -1) {
		char *end;
		long lv;

		switch (c) {
		case 'F':
			lv = strtol(optarg, &end, 10);
			if (end == optarg || *end || lv < 1 || lv > 10000) {
				error("invalid frequency '%s': expected 1..10000 Hz", optarg);
				goto out;
			}
			so.freq_hz = (int)lv;
			break;
		case 'p':
			if (cli_parse_pids(optarg, &pids, &npids))
				goto out;
			break;
		case 'i':
			interval = strtod(optarg, &end);
			if (end == optarg || *end || !(interval >= 0.2) || interval > 3600) {
				error("invalid interval '%s': expected 0.2..3600 seconds", optarg);
				goto out;
			}
			break;
		case 'n':
			lv = strtol(optarg, &end, 10);
			if (end == optarg || *end || lv < 1 || lv > 100000) {
				error("invalid row count '%s': expected a number of rows", optarg);
				goto out;
			}
			rows = (int)lv;
			break;
		case 'd':
			so.duration_s = strtod(optarg, &end);
			if (end == optarg || *end || !(so.duration_s > 0) || so.duration_s > 31536000) {
				error("invalid duration '%s': expected seconds, more than 0", optarg);
				goto out;
			}
			break;
		case 'I':
			so.include_idle = 0;
			break;
		case 'h':
			fputs(top_usage, stdout);
			ret = 0;
			goto out;
		default:
			fputs("see 'scorch top --help'\n", stderr);
			goto out;
		}
	}
	if (optind < argc) {
		error("unexpected argument '%s': see 'scorch top --help'", argv[optind]);
		goto out;
	}
	ret = 1;
	if (!rows) {
		struct winsize ws;

		rows = tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6 ?
			ws.ws_row - 4 : 20;
	}
	so.stop_flag = session_signals_install();
	so.pids = pids;
	so.npids = npids;
	if (session_start(&so, &s))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	last = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	do {
		double now;

		r = session_poll(s, 100);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
		if (r <= 0)
			session_stop(s); /* the last report gets what the ring buffer holds */
		if (r <= 0 || now - last >= interval) {
			struct profile *p = session_profile(s);

			show(p, rows, tty, now - last, (int)sysconf(_SC_NPROCESSORS_ONLN));
			profile_free(p);
			last = now;
		}
	} while (r > 0);
	ret = r < 0 ? 1 : 0;
out:
	session_free(s);
	xfree(pids);
	return ret;
}
