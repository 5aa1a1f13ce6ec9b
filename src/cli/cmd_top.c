/* cmd_top.c: `scorch top`: the hottest functions, live, like top(1). Every interval the
 * session's samples become a profile; functions are ranked by self samples (the frame that was
 * running) with their total (anywhere on the stack, counted once per stack) and the process
 * they ran in. On a terminal, keys sort the rows and quit (the terminal is restored). */
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
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char top_usage[] =
	"usage: scorch top [-F HZ] [-p PID[,PID...]] [-i SECS] [-n ROWS] [-d SECS] [-s KEY]\n"
	"                  [--per-process] [--no-idle] [--off-cpu | --wall]\n"
	"\n"
	"Show the hottest functions of the whole machine (or of some processes), refreshed every\n"
	"interval. SELF is the share of samples where the function was running, TOTAL where it was\n"
	"anywhere on the stack; PROCESS the process with most of its samples (+N when others have\n"
	"some too). Kernel functions end in _[k]; runtime ones show their file.\n"
	"With --off-cpu the shares are of the time threads spent waiting (TIME: seconds of it in\n"
	"the interval; the reason is a frame of its own, e.g. [off-cpu: io]); with --wall, of\n"
	"their wall time, running or waiting.\n"
	"\n"
	"  -F, --freq HZ        samples per second per CPU (default 99)\n"
	"  -p, --pid PID,...    only these processes\n"
	"  -i, --interval SECS  refresh period (default 1)\n"
	"  -n, --rows N         rows to show (default: fit the terminal, else 20)\n"
	"  -d, --duration SECS  stop after SECS seconds\n"
	"  -s, --sort KEY       self (default), total, name or process\n"
	"      --per-process    one row per function and process\n"
	"      --no-idle        leave idle CPU out\n"
	"      --off-cpu        where threads wait instead of where they run\n"
	"      --wall           where threads spend wall time, running or waiting\n"
	CLI_OFFCPU_USAGE
	"\n"
	"keys (on a terminal): q or Ctrl-C quit; s, t, n, p sort by self, total, name, process;\n"
	"r reverses the order; g toggles one row per function and process.\n"
	"\n"
	"examples:\n"
	"  scorch top\n"
	"  scorch top -p $(pidof postgres | tr ' ' ,) -n 30 -s total\n"
	"  scorch top -d 5 -i 5 > hot.txt     # one plain report when not on a terminal\n"
	"  scorch top --off-cpu -p $(pidof nginx | tr ' ' ,)   # where its workers block\n";

enum sort_key { SORT_SELF, SORT_TOTAL, SORT_NAME, SORT_PROCESS };

struct view {
	enum sort_key sort;
	int reverse;
	int per_process; /* rows keyed by (function, process) */
	int rows;        /* -n, 0: fit the terminal */
	int tty;
	int utf8;
	int ncpu;
};

struct fn_count {
	uint32_t name;    /* id in the local strtab */
	uint32_t process; /* id in the local strtab: the process with most self (or the row's) */
	int64_t self, total;
	int64_t proc_self; /* self samples of that process */
	uint32_t nprocs;   /* processes the function was seen in (when not per process) */
	uint32_t last_sample; /* to count total once per stack */
};

static const struct strtab *sort_names;
static enum sort_key sort_by;

static int cmp_rows(const void *a, const void *b)
{
	const struct fn_count *x = a, *y = b;
	int c = 0;

	switch (sort_by) {
	case SORT_TOTAL:
		c = x->total != y->total ? (x->total < y->total ? 1 : -1) : 0;
		break;
	case SORT_NAME:
		c = strcmp(strtab_get(sort_names, x->name), strtab_get(sort_names, y->name));
		break;
	case SORT_PROCESS:
		c = strcmp(strtab_get(sort_names, x->process), strtab_get(sort_names, y->process));
		break;
	default:
		break;
	}
	if (c)
		return c;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Print s in at most width columns: cut with "…" (or "+" outside UTF-8 locales). Counts a
 * UTF-8 sequence as one column. */
static void put_cut(const char *s, int width, int utf8, int pad)
{
	int cols = 0;
	const char *p = s, *cut = NULL;

	if (width < 1)
		return;
	for (; *p; p++) {
		if (((unsigned char)*p & 0xc0) == 0x80)
			continue;
		if (cols == width - 1)
			cut = p;
		if (++cols > width)
			break;
	}
	if (cols > width) {
		fwrite(s, 1, (size_t)(cut - s), stdout);
		fputs(utf8 ? "\xe2\x80\xa6" : "+", stdout);
		cols = width;
	} else {
		fputs(s, stdout);
	}
	for (; pad && cols < width; cols++)
		putchar(' ');
}

/* One report: count functions (per process when asked) and print the top rows. */
static void show(const struct profile *p, const struct view *v, double interval)
{
	struct strtab *names = strtab_new();
	struct u64map index, procs; /* (name[, process]) -> row; (name, process) -> self */
	struct fn_count *fns = NULL;
	size_t nfns = 0, cap = 0, i, j;
	int64_t total = profile_total(p), idle = 0;
	char name[512];
	time_t now = time(NULL);
	char when[32];
	int rows = v->rows, cols = 0, namew;
	int in_ns = !strcmp(profile_get_str(p, p->sample_unit), "nanoseconds");
	struct winsize ws;

	if (v->tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
		cols = ws.ws_col;
		if (!rows)
			rows = ws.ws_row > 7 ? ws.ws_row - 6 : 1;
	}
	if (!rows)
		rows = 20;
	u64map_init(&index);
	u64map_init(&procs);
	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const char *comm = profile_sample_label_str(p, s, "comm");
		uint32_t proc = strtab_intern(names, comm && *comm ? comm : "?");

		for (j = 0; j < s->nlocs; j++) {
			uint32_t id;
			uint64_t key, *row;
			struct fn_count *f;

			profile_frame_name(p, locs[j], name, sizeof(name));
			id = strtab_intern(names, name);
			key = v->per_process ? ((uint64_t)id << 32 | proc) + 1 : (uint64_t)id + 1;
			row = u64map_get(&index, key);
			if (!row) {
				ALLOC_GROW(fns, nfns + 1, cap);
				memset(&fns[nfns], 0, sizeof(fns[nfns]));
				fns[nfns].name = id;
				fns[nfns].process = proc;
				fns[nfns].last_sample = UINT32_MAX;
				u64map_put(&index, key, nfns);
				f = &fns[nfns++];
			} else {
				f = &fns[*row];
			}
			if (j == 0) {
				f->self += s->value;
				if (!strcmp(name, "[idle]"))
					idle += s->value;
				if (!v->per_process) {
					/* which process has most of the function's self samples */
					uint64_t pk = ((uint64_t)id << 32 | proc) + 1, *ps = u64map_get(&procs, pk);
					int64_t ns = (ps ? (int64_t)*ps : 0) + s->value;

					if (!ps)
						f->nprocs++;
					u64map_put(&procs, pk, (uint64_t)ns);
					if (ns > f->proc_self || f->process == proc) {
						f->process = proc;
						f->proc_self = ns;
					}
				}
			}
			if (f->last_sample != i) {
				f->total += s->value;
				f->last_sample = (uint32_t)i;
			}
		}
	}
	sort_names = names;
	sort_by = v->sort;
	if (nfns)
		qsort(fns, nfns, sizeof(*fns), cmp_rows);
	if (v->reverse)
		for (i = 0; i < nfns / 2; i++) {
			struct fn_count t = fns[i];

			fns[i] = fns[nfns - 1 - i];
			fns[nfns - 1 - i] = t;
		}
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	if (v->tty)
		fputs("\033[H\033[2J", stdout);
	if (in_ns) {
		/* off-CPU or wall time: values are nanoseconds of threads' time */
		char head[256];

		snprintf(head, sizeof(head), "scorch top - %s  %s %.2f s in %.1f s  (%.2f threads on "
			 "average)", when, profile_get_str(p, p->sample_type), (double)total / 1e9,
			 interval, interval > 0 ? (double)total / 1e9 / interval : 0.0);
		if (cols > 1)
			put_cut(head, cols - 1, v->utf8, 0);
		else
			fputs(head, stdout);
		printf("\n\n");
	} else {
		char head[256];
		int n = snprintf(head, sizeof(head), "scorch top - %s  %lld samples in %.1f s", when,
				 (long long)total, interval);

		if (total && p->period > 0 && interval > 0 && n > 0 && (size_t)n < sizeof(head)) {
			double busy = (double)(total - idle) * (double)p->period / 1e9 / interval;

			snprintf(head + n, sizeof(head) - (size_t)n, "  busy %.2f of %d CPUs", busy, v->ncpu);
		}
		if (cols > 1)
			put_cut(head, cols - 1, v->utf8, 0);
		else
			fputs(head, stdout);
		printf("\n\n");
	}
	/* SELF TOTAL SAMPLES PROCESS FUNCTION: the function gets what the terminal has left */
	namew = cols ? cols - (7 + 1 + 7 + 1 + 9 + 2 + 18 + 2) : 0;
	/* the sorted column in inverse video on a terminal */
	{
		const char *const heads[] = { "   SELF", "  TOTAL", in_ns ? "     TIME" : "  SAMPLES",
					      "PROCESS           ", "FUNCTION" };
		static const enum sort_key keys[] = { SORT_SELF, SORT_TOTAL, (enum sort_key)-1,
						      SORT_PROCESS, SORT_NAME };
		static const char *const seps[] = { " ", " ", "  ", "  ", "\n" };

		for (i = 0; i < 5; i++) {
			int hl = v->tty && keys[i] == v->sort;

			printf("%s%s%s%s", hl ? "\033[7m" : "", heads[i], hl ? "\033[0m" : "", seps[i]);
		}
	}
	for (i = 0; i < nfns && (int)i < rows; i++) {
		char proc[64];

		printf("%6.2f%% %6.2f%% ", total ? 100.0 * fns[i].self / total : 0.0,
		       total ? 100.0 * fns[i].total / total : 0.0);
		if (in_ns)
			printf("%8.3fs  ", (double)fns[i].self / 1e9);
		else
			printf("%9lld  ", (long long)fns[i].self);
		if (!v->per_process && fns[i].nprocs > 1)
			snprintf(proc, sizeof(proc), "%s +%u", strtab_get(names, fns[i].process),
				 fns[i].nprocs - 1);
		else
			snprintf(proc, sizeof(proc), "%s", strtab_get(names, fns[i].process));
		put_cut(proc, 18, v->utf8, 1);
		fputs("  ", stdout);
		if (namew > 0)
			put_cut(strtab_get(names, fns[i].name), namew, v->utf8, 0);
		else
			fputs(strtab_get(names, fns[i].name), stdout);
		putchar('\n');
	}
	if (v->tty) {
		char help[160];

		snprintf(help, sizeof(help), " q quit  s/t/n/p sort by self/total/name/process  r reverse  g %s",
			 v->per_process ? "one row per function" : "one row per process");
		putchar('\n');
		put_cut(help, cols > 1 ? cols - 1 : 79, v->utf8, 0);
	} else
		printf("\n");
	fflush(stdout);
	xfree(fns);
	u64map_release(&index);
	u64map_release(&procs);
	strtab_free(names);
}

/* ---- the terminal: keys without Enter, restored on the way out */

static struct termios saved_tio;
static int tio_saved;

static void term_restore(void)
{
	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
		tio_saved = 0;
	}
}

static void term_keys(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return;
	t = saved_tio;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: Ctrl-C is SIGINT */
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0) {
		tio_saved = 1;
		atexit(term_restore);
	}
}

/* A key pressed since the last call, or 0. */
static int read_key(void)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	unsigned char c;

	if (!tio_saved || poll(&pfd, 1, 0) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
		return 0;
	return c;
}

/* Apply a key to the view: 1 when it changed (redraw), -1 to quit, 0 otherwise. */
static int apply_key(struct view *v, int key)
{
	enum sort_key k;

	switch (key) {
	case 'q':
	case 'Q':
	case 3: /* Ctrl-C, should the terminal deliver it as a byte */
		return -1;
	case 's':
		k = SORT_SELF;
		break;
	case 't':
		k = SORT_TOTAL;
		break;
	case 'n':
		k = SORT_NAME;
		break;
	case 'p':
		k = SORT_PROCESS;
		break;
	case 'r':
		v->reverse = !v->reverse;
		return 1;
	case 'g':
		v->per_process = !v->per_process;
		return 1;
	default:
		return 0;
	}
	v->reverse = v->sort == k ? v->reverse : 0;
	v->sort = k;
	return 1;
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
		{ "sort", required_argument, NULL, 's' },
		{ "per-process", no_argument, NULL, 'P' },
		{ "off-cpu", no_argument, NULL, 'O' },
		{ "wall", no_argument, NULL, 'W' },
		CLI_OFFCPU_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char progname[] = "scorch top";
	struct session_opts so;
	struct session *s = NULL;
	int *pids = NULL, c, ret = 2, r;
	size_t npids = 0;
	double interval = 1, last;
	struct timespec ts;
	struct view v;
	struct profile *shown = NULL;
	const char *cs;

	memset(&so, 0, sizeof(so));
	memset(&v, 0, sizeof(v));
	v.tty = isatty(STDOUT_FILENO);
	cs = setlocale(LC_CTYPE, "") ? nl_langinfo(CODESET) : NULL;
	v.utf8 = cs && !strcmp(cs, "UTF-8");
	so.freq_hz = 99;
	so.include_idle = 1;
	optind = 1;
	argv[0] = progname; /* getopt's messages name it */
	while ((c = getopt_long(argc, argv, "F:p:i:n:d:s:h", longopts, NULL)) != -1) {
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
			v.rows = (int)lv;
			break;
		case 's':
			if (!strcmp(optarg, "self"))
				v.sort = SORT_SELF;
			else if (!strcmp(optarg, "total"))
				v.sort = SORT_TOTAL;
			else if (!strcmp(optarg, "name"))
				v.sort = SORT_NAME;
			else if (!strcmp(optarg, "process"))
				v.sort = SORT_PROCESS;
			else {
				error("invalid sort key '%s': expected self, total, name or process", optarg);
				goto out;
			}
			break;
		case 'P':
			v.per_process = 1;
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
	if ((so.offcpu_min_ns || so.offcpu_period_ns || so.offcpu_max_rate) && !so.kinds) {
		error("the --off-cpu-* options need --off-cpu or --wall");
		goto out;
	}
	if (so.kinds)
		so.include_idle = 0; /* idle CPU is no thread's time */
	ret = 1;
	v.ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	so.stop_flag = session_signals_install();
	so.pids = pids;
	so.npids = npids;
	if (session_start(&so, &s))
		goto out;
	if (v.tty)
		term_keys();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	last = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	do {
		double now;
		int key, quit = 0;

		r = session_poll(s, 100);
		while ((key = read_key())) {
			int k = apply_key(&v, key);

			if (k < 0)
				quit = 1;
			else if (k > 0 && shown)
				show(shown, &v, interval);
		}
		if (quit) {
			session_stop(s);
			r = 0;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
		if (r <= 0)
			session_stop(s); /* the last report gets what the ring buffer holds */
		if (r <= 0 || now - last >= interval) {
			profile_free(shown);
			shown = session_profile(s);
			show(shown, &v, now - last);
			session_offcpu_report(s);
			last = now;
		}
	} while (r > 0);
	if (v.tty)
		putchar('\n');
	ret = r < 0 ? 1 : 0;
out:
	term_restore();
	profile_free(shown);
	session_free(s);
	xfree(pids);
	return ret;
}
