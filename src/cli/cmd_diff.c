/* cmd_diff.c: `scorch diff BASE NEW`: read the runs of each side (profile files, or CI runs on
 * a server through src/ci/remote.c), compare them (src/ci/compare.c) and report
 * (src/ci/diffreport.c). Exit status 3 says a regression was found. */
#include "ci/compare.h"
#include "ci/diffreport.h"
#include "ci/remote.h"
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "profile/input.h"
#include "profile/profile.h"
#include "store/selector.h"
#include "store/timerange.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIFF_EXIT_REGRESSION 3
#define MAX_FILE_BYTES       ((size_t)1 << 30)
#define MAX_RUNS_PER_SIDE    200

static const char diff_usage[] =
	"usage: scorch diff [options] BASE NEW\n"
	"\n"
	"Compare the CPU profile of a base version with a new one, function by function, and\n"
	"tell which changes are beyond the noise of sampling and of the runs themselves.\n"
	"\n"
	"BASE and NEW are\n"
	"  - profile files: pprof (as scorch record and scorch ci write) or folded text; several\n"
	"    runs of one side as a comma-separated list or a directory of profiles;\n"
	"  - with --server, selections of CI runs, e.g. 'myapp.cpu{commit=\"abc123\"}': each\n"
	"    value of the run label in the selection is one run (the newest --max-runs).\n"
	"\n"
	"  -t, --threshold PCT     smallest growth that counts as a regression (default 10)\n"
	"      --min-impact PCT    ... that is also this share of the base run's CPU (default 0.5)\n"
	"      --alpha A           accepted chance of any false alarm in a report (default 0.01)\n"
	"      --normalize         first scale the base by the typical change of all functions\n"
	"                          (runners of different speed); the run total is then not tested\n"
	"  -f, --format F          text, markdown (a pull-request comment) or json (default text)\n"
	"  -o, --output FILE       write the report there (default: standard output)\n"
	"  -n, --top N             rows of the table (default 10)\n"
	"  -s, --server URL        read selections from this server (default: $SCORCH_SERVER)\n"
	"      --from T, --until T time range of the selections (default now-30d, now): unix\n"
	"                          seconds or now-7d, now-1h, ...\n"
	"      --runs-by LABEL     the label that tells runs apart (default run, which scorch ci\n"
	"                          sets)\n"
	"      --max-runs N        newest runs per side (default 10)\n"
	"      --auth-token-file F send the bearer token in F (default: $SCORCH_AUTH_TOKEN)\n"
	"  -q, --quiet             no progress or verdict on standard error\n"
	"\n"
	"The test: a function's self time (samples ending in it) and total time (samples\n"
	"containing it) are its CPU seconds per run.\n"
	"  - One run on a side: the exact test of two Poisson counts (given both sides' samples\n"
	"    of the function, the new side's are binomial with its share of the sampling\n"
	"    exposure), the counts first divided by the run-to-run dispersion the other\n"
	"    functions show (median z^2 / 0.455, at least 1; with 10 or more functions).\n"
	"  - Two or more runs on both sides: a moderated t-test on the per-run values, each\n"
	"    function's variance (at least its sampling variance) shrunk toward the typical one\n"
	"    of all functions (empirical Bayes, as limma does).\n"
	"Every p-value of a report is adjusted with Holm's method (tests that cannot reach\n"
	"significance left out by Tarone's rule), so --alpha bounds the chance that a report holds\n"
	"any false alarm. A regression is a significant growth of at least --threshold that is\n"
	"also at least --min-impact of the base run's CPU. docs/ci.md has more.\n"
	"\n"
	"Exit status: 3 when a function (or the whole run) got significantly slower beyond the\n"
	"threshold, 0 when not; 1 when a profile or the server cannot be read; 2 for bad arguments.\n"
	"\n"
	"examples:\n"
	"  scorch diff base.pb.gz new.pb.gz\n"
	"  scorch diff base1.pb.gz,base2.pb.gz,base3.pb.gz new-runs/\n"
	"  scorch diff -f markdown -o comment.md --server http://profiles:4040 \\\n"
	"      'myapp.cpu{branch=\"main\"}' \"myapp.cpu{commit=\\\"$GITHUB_SHA\\\"}\"\n"
	"  scorch diff -f json old.folded new.folded | jq '.functions[0]'\n";

enum format { FORMAT_TEXT, FORMAT_MARKDOWN, FORMAT_JSON };

struct diff_opts {
	const char *server, *from, *until, *runs_by;
	char *token;
	size_t max_runs;
	int quiet;
};

struct side_runs {
	const char *arg;        /* as given */
	int remote;             /* a selection */
	struct remote_run *runs;
	size_t nruns;
	char **files;
	size_t nfiles;
};

static int has_profile_ext(const char *name)
{
	static const char *const ext[] = { ".pb.gz", ".pprof", ".pb", ".folded", ".txt", ".gz" };
	size_t n = strlen(name), i;

	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t e = strlen(ext[i]);

		if (n > e && !strcmp(name + n - e, ext[i]))
			return 1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The profiles of a directory (by extension, sorted by name). */
static int add_dir(struct side_runs *s, const char *dir, size_t *cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t first = s->nfiles;

	if (!d)
		return error("cannot open directory '%s': %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		char *path;
		struct stat st;

		if (e->d_name[0] == '.' || !has_profile_ext(e->d_name))
			continue;
		path = xasprintf("%s/%s", dir, e->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			xfree(path);
			continue;
		}
		ALLOC_GROW(s->files, s->nfiles + 1, *cap);
		s->files[s->nfiles++] = path;
	}
	closedir(d);
	if (s->nfiles == first)
		return error("directory '%s' holds no profile (.pb.gz, .pprof, .folded, .txt)", dir);
	qsort(s->files + first, s->nfiles - first, sizeof(*s->files), cmp_str);
	return 0;
}

/* 1 when arg names files (each comma-separated item exists), 0 when none does. */
static int names_files(const char *arg)
{
	char *copy = xstrdup(arg), *item, *save = NULL;
	int all = 1;
	struct stat st;

	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
		if (stat(item, &st) < 0)
			all = 0;
	xfree(copy);
	return all;
}

static int resolve_side(struct side_runs *s, const char *arg, const struct diff_opts *o)
{
	size_t cap = 0;
	char *copy, *item, *save = NULL;
	struct stat st;
	int rc = 0;

	s->arg = arg;
	if (!*arg)
		return error("empty profile or selection");
	if (o->server && !names_files(arg)) {
		struct selector *sel = NULL;
		struct errmsg err = { "" };

		if (selector_parse(arg, strlen(arg), &sel, &err) < 0)
			return error("'%s' is neither a file nor a valid selection: %s", arg, err.msg);
		selector_free(sel);
		s->remote = 1;
		return 0;
	}
	copy = xstrdup(arg);
	for (item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
		if (stat(item, &st) < 0) {
			rc = error("cannot read '%s': %s%s", item, strerror(errno),
				   strchr(item, '{') && !o->server ?
				   " (a selection needs --server URL)" : "");
		} else if (S_ISDIR(st.st_mode)) {
			rc = add_dir(s, item, &cap);
		} else {
			ALLOC_GROW(s->files, s->nfiles + 1, cap);
			s->files[s->nfiles++] = xstrdup(item);
		}
	}
	xfree(copy);
	if (!rc && s->nfiles > MAX_RUNS_PER_SIDE)
		rc = error("more than %d profiles on one side", MAX_RUNS_PER_SIDE);
	return rc;
}

static void side_release(struct side_runs *s)
{
	size_t i;

	for (i = 0; i < s->nfiles; i++)
		xfree(s->files[i]);
	xfree(s->files);
	remote_runs_free(s->runs, s->nruns);
	memset(s, 0, sizeof(*s));
}

static int read_profile_file(const char *path, struct profile **out)
{
	struct buf b = BUF_INIT(MAX_FILE_BYTES);
	struct input_opts io = INPUT_OPTS_DEFAULT;
	struct errmsg err = { "" };
	int rc = buf_read_file(&b, path);

	*out = NULL;
	if (rc < 0) {
		buf_release(&b);
		return error("cannot read '%s': %s", path,
			     rc == -E2BIG ? "larger than 1 GiB" : strerror(-rc));
	}
	rc = input_decode(b.data, b.len, &io, NULL, out, &err);
	buf_release(&b);
	if (rc < 0)
		return error("cannot read '%s': %s", path, err.msg);
	return 0;
}

static int add_files(struct compare *c, enum compare_side side, const struct side_runs *s)
{
	struct errmsg err = { "" };
	size_t i;

	for (i = 0; i < s->nfiles; i++) {
		struct profile *p;
		int rc;

		if (read_profile_file(s->files[i], &p))
			return -1;
		rc = compare_add(c, side, p, &err);
		profile_free(p);
		if (rc < 0)
			return error("'%s': %s", s->files[i], err.msg);
	}
	return 0;
}

/* Runs present on both sides (a commit of the base branch compared with that branch) would
 * compare with themselves: they stay on the new side only. */
static void drop_shared_runs(struct side_runs *base, const struct side_runs *new, int quiet)
{
	size_t i, j, kept = 0, dropped = 0;

	for (i = 0; i < base->nruns; i++) {
		int shared = 0;

		for (j = 0; j < new->nruns && !shared; j++)
			shared = !strcmp(base->runs[i].id, new->runs[j].id);
		if (shared) {
			xfree(base->runs[i].id);
			dropped++;
			continue;
		}
		base->runs[kept++] = base->runs[i];
	}
	base->nruns = kept;
	if (dropped && !quiet)
		fprintf(stderr, "scorch: %zu run%s of the new side also match%s the base selection: "
			"left out of the base\n", dropped, dropped == 1 ? "" : "s",
			dropped == 1 ? "es" : "");
}

static int add_remote(struct compare *c, enum compare_side side, struct remote *r,
		      const struct side_runs *s, const struct diff_opts *o)
{
	struct errmsg err = { "" };
	size_t i;

	for (i = 0; i < s->nruns; i++) {
		char *sel = remote_selector_with(s->arg, o->runs_by, s->runs[i].id);
		struct profile *p = NULL;
		int rc = remote_fetch(r, sel, o->from, o->until, &p, &err);

		if (rc == 0) {
			rc = compare_add(c, side, p, &err);
			profile_free(p);
		}
		if (rc < 0) {
			error("run '%s' of '%s': %s", s->runs[i].id, s->arg, err.msg);
			xfree(sel);
			return -1;
		}
		if (!o->quiet && isatty(STDERR_FILENO))
			fprintf(stderr, "\rscorch: %s: run %zu of %zu", side ? "new" : "base", i + 1,
				s->nruns);
		xfree(sel);
	}
	if (!o->quiet && isatty(STDERR_FILENO))
		fputc('\n', stderr);
	return 0;
}

static int list_remote(struct remote *r, struct side_runs *s, const struct diff_opts *o)
{
	struct errmsg err = { "" };

	if (remote_list_runs(r, s->arg, o->runs_by, o->from, o->until, &s->runs, &s->nruns, &err) < 0)
		return error("cannot list the runs of '%s': %s", s->arg, err.msg);
	if (!s->nruns)
		return error("no runs match '%s' between %s and %s", s->arg, o->from, o->until);
	return 0;
}

/* Keep the newest max runs (the list is newest first). */
static void keep_newest(struct side_runs *s, size_t max)
{
	size_t i;

	for (i = max; i < s->nruns; i++)
		xfree(s->runs[i].id);
	if (s->nruns > max)
		s->nruns = max;
}

/* A description of a side for the report: the file(s), or the selection and its runs. */
static char *describe(const struct side_runs *s)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	size_t i;

	if (s->remote) {
		buf_printf(&b, "%s (%zu run%s", s->arg, s->nruns, s->nruns == 1 ? "" : "s");
		for (i = 0; i < s->nruns && i < 5; i++)
			buf_printf(&b, "%s%s", i ? ", " : ": ", s->runs[i].id[0] ? s->runs[i].id :
				   "(no run label)");
		buf_puts(&b, s->nruns > 5 ? ", ...)" : ")");
	} else {
		for (i = 0; i < s->nfiles && i < 5; i++)
			buf_printf(&b, "%s%s", i ? ", " : "", s->files[i]);
		if (s->nfiles > 5)
			buf_printf(&b, " and %zu more", s->nfiles - 5);
	}
	return buf_detach(&b, NULL);
}

/* <server>/?view=diff&lq=..&rq=..&from=..&until=.. over the span of both sides' runs. */
static char *ui_link(const char *server, const struct side_runs *a, const struct side_runs *b)
{
	struct buf u = BUF_INIT(BUF_UNLIMITED);
	int64_t from = INT64_MAX, until = INT64_MIN;
	size_t len = strlen(server), i;
	const struct side_runs *sides[2] = { a, b };
	int k;

	while (len > 0 && server[len - 1] == '/')
		len--;
	for (k = 0; k < 2; k++) {
		for (i = 0; i < sides[k]->nruns; i++) {
			const struct remote_run *r = &sides[k]->runs[i];

			if (r->first < from)
				from = r->first;
			if (r->last + r->step > until)
				until = r->last + r->step;
		}
	}
	buf_append(&u, server, len);
	buf_puts(&u, "/?view=diff&lq=");
	remote_urlencode(&u, a->arg);
	buf_puts(&u, "&rq=");
	remote_urlencode(&u, b->arg);
	if (from <= until)
		buf_printf(&u, "&from=%lld&until=%lld", (long long)from, (long long)until);
	return buf_detach(&u, NULL);
}

static int read_token(const char *path, char **out)
{
	struct buf b = BUF_INIT(4096);
	int ret = buf_read_file(&b, path);

	if (ret < 0) {
		buf_release(&b);
		return error("cannot read auth token file '%s': %s", path, strerror(-ret));
	}
	while (b.len && isspace((unsigned char)b.data[b.len - 1]))
		b.data[--b.len] = '\0';
	if (!b.len) {
		buf_release(&b);
		return error("auth token file '%s' is empty", path);
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

static int parse_pct(const char *s, const char *what, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end != s && *end == '%')
		end++;
	if (end == s || *end || !(v >= lo) || !(v <= hi))
		return error("invalid %s '%s': expected a percentage, %g..%g", what, s, lo, hi);
	*out = v / 100;
	return 0;
}

static int check_time(const char *s, const char *what)
{
	struct errmsg err = { "" };
	int64_t t;

	if (timerange_parse_time(s, (int64_t)time(NULL), &t, &err) < 0)
		return error("invalid --%s '%s': %s", what, s, err.msg);
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threshold", required_argument, NULL, 't' },
		{ "min-impact", required_argument, NULL, 'I' },
		{ "alpha", required_argument, NULL, 'A' },
		{ "normalize", no_argument, NULL, 'N' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 'n' },
		{ "server", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'F' },
		{ "until", required_argument, NULL, 'U' },
		{ "runs-by", required_argument, NULL, 'R' },
		{ "max-runs", required_argument, NULL, 'M' },
		{ "auth-token-file", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char progname[] = "scorch diff";
	struct compare_opts co = COMPARE_OPTS_INIT;
	struct diff_opts o;
	struct side_runs base, new;
	struct diffreport_ctx ctx;
	struct compare *cmp = NULL;
	struct compare_result *res = NULL;
	struct remote *remote = NULL;
	struct buf report = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err = { "" };
	enum format format = FORMAT_TEXT;
	const char *output = NULL, *env_token = getenv("SCORCH_AUTH_TOKEN");
	char *base_desc = NULL, *new_desc = NULL, *link = NULL;
	int c, ret = 2, rc;

	memset(&o, 0, sizeof(o));
	memset(&base, 0, sizeof(base));
	memset(&new, 0, sizeof(new));
	memset(&ctx, 0, sizeof(ctx));
	o.server = getenv("SCORCH_SERVER");
	o.from = "now-30d";
	o.until = "now";
	o.runs_by = "run";
	o.max_runs = 10;
	optind = 1;
	argv[0] = progname;
	while ((c = getopt_long(argc, argv, "t:f:o:n:s:qh", longopts, NULL)) != -1) {
		char *end;
		long lv;
		double dv;

		switch (c) {
		case 't':
			if (parse_pct(optarg, "threshold", 0, 10000, &co.threshold))
				goto out;
			break;
		case 'I':
			if (parse_pct(optarg, "minimum impact", 0, 100, &co.min_impact))
				goto out;
			break;
		case 'A':
			dv = strtod(optarg, &end);
			if (end == optarg || *end || !(dv > 0) || !(dv < 1)) {
				error("invalid --alpha '%s': expected a probability, e.g. 0.01", optarg);
				goto out;
			}
			co.alpha = dv;
			break;
		case 'N':
			co.normalize = 1;
			break;
		case 'f':
			if (!strcmp(optarg, "text"))
				format = FORMAT_TEXT;
			else if (!strcmp(optarg, "markdown") || !strcmp(optarg, "md"))
				format = FORMAT_MARKDOWN;
			else if (!strcmp(optarg, "json"))
				format = FORMAT_JSON;
			else {
				error("invalid format '%s': expected text, markdown or json", optarg);
				goto out;
			}
			break;
		case 'o':
			output = optarg;
			break;
		case 'n':
			errno = 0;
			lv = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || lv < 1 || lv > 100000) {
				error("invalid --top '%s': expected a number of rows", optarg);
				goto out;
			}
			ctx.top = (size_t)lv;
			break;
		case 's':
			o.server = optarg;
			break;
		case 'F':
			o.from = optarg;
			if (check_time(optarg, "from"))
				goto out;
			break;
		case 'U':
			o.until = optarg;
			if (check_time(optarg, "until"))
				goto out;
			break;
		case 'R':
			if (!*optarg || (!isalpha((unsigned char)optarg[0]) && optarg[0] != '_')) {
				error("invalid --runs-by '%s': expected a label name", optarg);
				goto out;
			}
			o.runs_by = optarg;
			break;
		case 'M':
			errno = 0;
			lv = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || lv < 1 || lv > MAX_RUNS_PER_SIDE) {
				error("invalid --max-runs '%s': expected 1..%d", optarg, MAX_RUNS_PER_SIDE);
				goto out;
			}
			o.max_runs = (size_t)lv;
			break;
		case 'T':
			xfree(o.token);
			o.token = NULL;
			if (read_token(optarg, &o.token))
				goto out;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			ret = 0;
			goto out;
		default:
			fputs("see 'scorch diff --help'\n", stderr);
			goto out;
		}
	}
	if (argc - optind != 2) {
		error(argc - optind < 2 ? "need two profiles (or selections): BASE and NEW" :
		      "too many arguments: give BASE and NEW (several runs of a side as a "
		      "comma-separated list or a directory)");
		fputs("see 'scorch diff --help'\n", stderr);
		goto out;
	}
	if (o.server && !*o.server)
		o.server = NULL;
	if (!o.token && env_token && *env_token)
		o.token = xstrdup(env_token);
	ret = 1;
	if (resolve_side(&base, argv[optind], &o) || resolve_side(&new, argv[optind + 1], &o))
		goto out;

	cmp = compare_new();
	if (base.remote || new.remote) {
		struct remote_opts ro = { o.server, o.token, 0 };

		if (remote_open(&ro, &remote, &err) < 0) {
			error("%s", err.msg);
			goto out;
		}
		if ((new.remote && list_remote(remote, &new, &o)) ||
		    (base.remote && list_remote(remote, &base, &o)))
			goto out;
		/* The newest runs of the new side; then the base's newest that are not those. */
		keep_newest(&new, o.max_runs);
		if (base.remote && new.remote) {
			drop_shared_runs(&base, &new, o.quiet);
			if (!base.nruns) {
				error("every run of '%s' is also in '%s': nothing left to compare with",
				      base.arg, new.arg);
				goto out;
			}
		}
		keep_newest(&base, o.max_runs);
	}
	if ((base.remote ? add_remote(cmp, COMPARE_SIDE_BASE, remote, &base, &o) :
			   add_files(cmp, COMPARE_SIDE_BASE, &base)) ||
	    (new.remote ? add_remote(cmp, COMPARE_SIDE_NEW, remote, &new, &o) :
			  add_files(cmp, COMPARE_SIDE_NEW, &new)))
		goto out;
	if (compare_run(cmp, &co, &res, &err) < 0) {
		error("%s", err.msg);
		goto out;
	}

	base_desc = describe(&base);
	new_desc = describe(&new);
	ctx.base_name = base_desc;
	ctx.new_name = new_desc;
	if (base.remote && new.remote) {
		link = ui_link(o.server, &base, &new);
		ctx.ui_url = link;
	}
	rc = format == FORMAT_MARKDOWN ? diffreport_markdown(res, &ctx, &report) :
	     format == FORMAT_JSON ? diffreport_json(res, &ctx, &report) :
	     diffreport_text(res, &ctx, &report);
	if (rc < 0) {
		error("cannot write the report: %s", strerror(-rc));
		goto out;
	}
	if (output) {
		rc = write_file_atomic(output, report.data, report.len);
		if (rc < 0) {
			error("cannot write '%s': %s", output, strerror(-rc));
			goto out;
		}
	} else if (fwrite(report.data, 1, report.len, stdout) != report.len || fflush(stdout)) {
		error("cannot write the report: %s", strerror(errno));
		goto out;
	}
	if (!o.quiet && (output || !isatty(STDOUT_FILENO))) {
		if (res->regressed && res->nrows && res->rows[0].verdict == COMPARE_REGRESSION)
			fprintf(stderr, "scorch: regression: '%s' %s\n", res->rows[0].name,
				res->rows[0].self.verdict == COMPARE_REGRESSION ? "self time grew" :
				"total time grew");
		else
			fprintf(stderr, "scorch: %s\n", res->regressed ? "regression of the run's total" :
				"no regression");
	}
	ret = res->regressed ? DIFF_EXIT_REGRESSION : 0;
out:
	buf_release(&report);
	compare_result_free(res);
	compare_free(cmp);
	remote_close(remote);
	side_release(&base);
	side_release(&new);
	xfree(base_desc);
	xfree(new_desc);
	xfree(link);
	xfree(o.token);
	return ret;
}
