/* cmd_ci.c: `scorch ci`: profile a CI job's command like `scorch record -- COMMAND` (the same
 * session code), label the profile with what the CI system knows (src/ci/cienv.c), then upload
 * it to a server's /ingest (src/agent/push.c) and/or write it, and exit with the command's
 * status. `scorch diff` compares such runs (docs/ci.md). */
#include "agent/push.h"
#include "agent/session.h"
#include "ci/cienv.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "profile/output.h"
#include "profile/pprof.h"
#include "profile/profile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char ci_usage[] =
	"usage: scorch ci [--server URL] [--label K=V]... [-o FILE] [options] -- COMMAND [ARGS...]\n"
	"\n"
	"Profile COMMAND and every process it starts (as `scorch record -- COMMAND` does), label\n"
	"the profile with what the CI system says about this run, upload it to a scorch server\n"
	"and/or write it to a file, and exit with COMMAND's exit status.\n"
	"\n"
	"  -s, --server URL          upload to this server (default: $SCORCH_SERVER)\n"
	"  -o, --output FILE         write the profile; the format follows the extension\n"
	"                            (.pb.gz keeps the labels; see scorch record --help)\n"
	"  -l, --label K=V           add or override a label (repeatable); K= drops one\n"
	"  -a, --app NAME            application name on the server (default: the repository's\n"
	"                            name, else the command's)\n"
	"  -F, --freq HZ             samples per second per CPU, 1..10000 (default 99)\n"
	"      --auth-token-file F   send the bearer token in F (default: $SCORCH_AUTH_TOKEN)\n"
	"      --upload-timeout SECS keep retrying the upload this long (default 60)\n"
	"      --best-effort         never let profiling change the job's outcome: if sampling\n"
	"                            cannot start, run COMMAND unprofiled; upload and write\n"
	"                            failures are warnings\n"
	"  -q, --quiet               no status line, no summary\n"
	"\n"
	"Labels, from the environment of GitHub Actions, GitLab CI, Jenkins, CircleCI or\n"
	"Buildkite (docs/ci.md lists the variables):\n"
	"  ci (which CI), commit, branch, job, runner, pipeline, pr (pull/merge request number)\n"
	"Outside CI, commit and branch come from git, runner is the host name. Every run also gets\n"
	"run=<UTC time>-<random>, unique, so that several runs of one commit stay apart for\n"
	"`scorch diff`. Labels given with --label win.\n"
	"\n"
	"When the upload fails (after retries) the profile is kept: in -o FILE, or else in\n"
	"./scorch-ci-<run>.pb.gz, with the command to upload it later.\n"
	"\n"
	"Exit status: COMMAND's (128+N when killed by signal N, 127 when it cannot be started);\n"
	"1 when sampling cannot start, or when COMMAND succeeded but the profile could not be\n"
	"uploaded or written (unless --best-effort); 2 for bad arguments.\n"
	"\n"
	"examples:\n"
	"  scorch ci --server http://profiles:4040 -- make test\n"
	"  scorch ci --label suite=integration -- pytest tests/     # server from $SCORCH_SERVER\n"
	"  scorch ci -o run.pb.gz -- ./bench.sh\n"
	"  scorch diff --server http://profiles:4040 'myapp.cpu{branch=\"main\"}' \\\n"
	"              \"myapp.cpu{commit=\\\"$GITHUB_SHA\\\"}\"\n";

#define MAX_LABELS 24

struct label {
	char *key;
	char *value; /* NULL: drop */
};

struct ci_run {
	struct label labels[MAX_LABELS];
	size_t nlabels;
	char app[128];
	char run_id[48];
};

static const char *env_get(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

/* Set (or, with value NULL, drop) label key. */
static int set_label(struct ci_run *r, const char *key, const char *value)
{
	size_t i;

	for (i = 0; i < r->nlabels; i++) {
		if (!strcmp(r->labels[i].key, key)) {
			xfree(r->labels[i].value);
			r->labels[i].value = value ? xstrdup(value) : NULL;
			return 0;
		}
	}
	if (r->nlabels >= MAX_LABELS)
		return error("too many labels (at most %d)", MAX_LABELS);
	r->labels[r->nlabels].key = xstrdup(key);
	r->labels[r->nlabels].value = value ? xstrdup(value) : NULL;
	r->nlabels++;
	return 0;
}

static const char *label_value(const struct ci_run *r, const char *key)
{
	size_t i;

	for (i = 0; i < r->nlabels; i++)
		if (!strcmp(r->labels[i].key, key))
			return r->labels[i].value;
	return NULL;
}

static void release_labels(struct ci_run *r)
{
	size_t i;

	for (i = 0; i < r->nlabels; i++) {
		xfree(r->labels[i].key);
		xfree(r->labels[i].value);
	}
	r->nlabels = 0;
}

/* "K=V" from --label: K as the server takes label names. */
static int parse_label_arg(const char *arg, char **key, const char **value)
{
	const char *eq = strchr(arg, '='), *k;

	if (!eq || eq == arg)
		return error("invalid label '%s': expected KEY=VALUE (KEY= drops a label)", arg);
	if (!isalpha((unsigned char)arg[0]) && arg[0] != '_')
		return error("invalid label name in '%s': start with a letter or _", arg);
	for (k = arg; k < eq; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return error("invalid label name in '%s': use letters, digits and _", arg);
	if (eq - arg >= 2 && arg[0] == '_' && arg[1] == '_')
		return error("invalid label name in '%s': names starting with __ are reserved", arg);
	if (eq - arg == 12 && !strncmp(arg, "service_name", 12))
		return error("label 'service_name' is the application name: use --app");
	if (strlen(eq + 1) > 1024)
		return error("value of label '%.*s' longer than 1024 bytes", (int)(eq - arg), arg);
	*key = xstrndup(arg, (size_t)(eq - arg));
	*value = eq[1] ? eq + 1 : NULL;
	return 0;
}

/* The first line `git ARGS` prints in the current directory, or "" (not a repository, no
 * git, ...). Errors are not ours to report: outside CI these labels are a convenience. */
static void git_line(const char *const *args, char *out, size_t outlen)
{
	int fd[2], status;
	ssize_t n;
	size_t len = 0;
	pid_t pid;

	out[0] = '\0';
	if (pipe2(fd, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(fd[1], STDOUT_FILENO);
		if (devnull >= 0) {
			dup2(devnull, STDERR_FILENO);
			dup2(devnull, STDIN_FILENO);
		}
		execvp("git", (char *const *)args);
		_exit(127);
	}
	close(fd[1]);
	while (len + 1 < outlen && (n = read(fd[0], out + len, outlen - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)n;
	}
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[len] = '\0';
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		out[0] = '\0';
		return;
	}
	out[strcspn(out, "\r\n")] = '\0';
}

/* An application name the server accepts: no spaces, braces, commas, '=' or quotes. */
static void set_app(struct ci_run *r, const char *name)
{
	size_t i;

	snprintf(r->app, sizeof(r->app), "%s", name);
	for (i = 0; r->app[i]; i++) {
		unsigned char c = (unsigned char)r->app[i];

		if (c <= ' ' || c == 0x7f || strchr("{},=\"", c))
			r->app[i] = '_';
	}
	if (!r->app[0])
		snprintf(r->app, sizeof(r->app), "ci");
}

static void make_run_id(char *out, size_t outlen)
{
	unsigned char rnd[3] = { 0 };
	time_t now = time(NULL);
	struct tm tm;
	char ts[32];

	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		unsigned v = (unsigned)getpid() ^ (unsigned)now;

		rnd[0] = (unsigned char)v;
		rnd[1] = (unsigned char)(v >> 8);
		rnd[2] = (unsigned char)(v >> 16);
	}
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(out, outlen, "%s-%02x%02x%02x", ts, rnd[0], rnd[1], rnd[2]);
}

/* Labels from the CI environment (or git), then the run id; explicit ones are applied later. */
static void detect_labels(struct ci_run *r, char *const *command)
{
	static const char *const git_head[] = { "git", "rev-parse", "HEAD", NULL };
	static const char *const git_branch[] = { "git", "rev-parse", "--abbrev-ref", "HEAD", NULL };
	static const char *const git_top[] = { "git", "rev-parse", "--show-toplevel", NULL };
	struct cienv e;
	char line[512], repo[128];
	const char *slash;
	int f;

	cienv_detect(env_get, NULL, &e);
	if (!e.value[CIENV_COMMIT]) {
		git_line(git_head, line, sizeof(line));
		cienv_set(&e, CIENV_COMMIT, line);
		if (!e.value[CIENV_BRANCH]) {
			git_line(git_branch, line, sizeof(line));
			if (strcmp(line, "HEAD")) /* detached */
				cienv_set(&e, CIENV_BRANCH, line);
		}
	}
	if (!e.value[CIENV_RUNNER] && gethostname(line, sizeof(line) - 1) == 0) {
		line[sizeof(line) - 1] = '\0';
		cienv_set(&e, CIENV_RUNNER, line);
	}
	for (f = 0; f < CIENV_NFIELDS; f++)
		if (e.value[f])
			set_label(r, cienv_label((enum cienv_field)f), e.value[f]);
	make_run_id(r->run_id, sizeof(r->run_id));
	set_label(r, "run", r->run_id);

	if (cienv_repo_name(&e, repo, sizeof(repo))) {
		set_app(r, repo);
	} else {
		git_line(git_top, line, sizeof(line));
		slash = strrchr(line, '/');
		if (slash && slash[1])
			set_app(r, slash + 1);
		else {
			slash = strrchr(command[0], '/');
			set_app(r, slash ? slash + 1 : command[0]);
		}
	}
	cienv_release(&e);
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

static void put_urlencoded(struct buf *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || strchr("-._~", c))
			buf_putc(out, (char)c);
		else
			buf_printf(out, "%%%02X", c);
	}
}

/* "/ingest?name=APP.cpu&..." for the profile; the labels travel on its samples. */
static char *ingest_path(const struct ci_run *r, const struct profile *prof, int hz)
{
	struct buf path = BUF_INIT(BUF_UNLIMITED), name = BUF_INIT(BUF_UNLIMITED);
	int64_t from = prof->time_nanos / 1000000000LL;
	int64_t until = (prof->time_nanos + prof->duration_nanos + 999999999LL) / 1000000000LL;

	if (until <= from)
		until = from + 1;
	buf_printf(&name, "%s.cpu", r->app);
	buf_puts(&path, "/ingest?name=");
	put_urlencoded(&path, name.data);
	buf_printf(&path, "&format=pprof&from=%lld&until=%lld&sampleRate=%d&spyName=scorch&units=samples",
		   (long long)from, (long long)until, hz);
	buf_release(&name);
	return buf_detach(&path, NULL);
}

/* The selection naming this run, for messages: app.cpu{run="..."}. */
static void run_selection(const struct ci_run *r, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s.cpu{run=\"%s\"}", r->app, label_value(r, "run") ? label_value(r, "run") : "");
}

/* Upload prof; on failure keep it in a file (-o, or ./scorch-ci-RUN.pb.gz). Returns 0 when the
 * server acknowledged it. */
static int upload(const struct ci_run *r, struct profile *prof, const char *server,
		  const char *token, int hz, double timeout_s, const char *output, int quiet)
{
	struct pusher_opts po;
	struct pusher_stats st;
	struct pusher *p = NULL;
	struct errmsg err = { "" };
	struct buf body = BUF_INIT(BUF_UNLIMITED);
	char *path, *data, sel[256];
	size_t len;
	int c;

	memset(&po, 0, sizeof(po));
	po.server_url = server;
	po.auth_token = token;
	po.max_queue_bytes = (size_t)1 << 30;
	po.timeout_ms = 30000;
	if (pprof_encode(prof, &body) < 0) {
		buf_release(&body);
		return error("cannot encode the profile");
	}
	if (pusher_start(&po, &p, &err) < 0) {
		buf_release(&body);
		return error("%s", err.msg);
	}
	path = ingest_path(r, prof, hz);
	data = buf_detach(&body, &len);
	pusher_enqueue(p, path, "application/octet-stream", data, len);
	pusher_stop(p, (int)(timeout_s * 1000), &st);
	run_selection(r, sel, sizeof(sel));
	if (st.sent == 1) {
		if (!quiet)
			fprintf(stderr, "scorch: uploaded to %s as %s (%zu KiB)\n", server, sel,
				(size_t)(st.sent_bytes >> 10));
		return 0;
	}
	error("cannot upload the profile to %s: %s", server,
	      st.last_error[0] ? st.last_error : "no answer in time");
	if (!output) {
		char file[96];

		snprintf(file, sizeof(file), "scorch-ci-%s.pb.gz", r->run_id);
		c = output_write_file(prof, file, "scorch ci");
		if (c < 0)
			error("cannot save the profile to '%s' either: %s", file, strerror(-c));
		else
			fprintf(stderr, "scorch: saved the profile to %s; upload it later with:\n"
				"  curl --data-binary @%s '%s/ingest?name=%s.cpu&format=pprof'\n",
				file, file, server, r->app);
	} else {
		fprintf(stderr, "scorch: the profile is in %s; upload it later with:\n"
			"  curl --data-binary @%s '%s/ingest?name=%s.cpu&format=pprof'\n", output,
			output, server, r->app);
	}
	return -1;
}

/* --best-effort without BPF: run the command as is and return its status as a shell would. */
static int run_unprofiled(char *const *command)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		error("cannot start '%s': %s", command[0], strerror(errno));
		return 127;
	}
	if (pid == 0) {
		execvp(command[0], command);
		fprintf(stderr, "scorch: cannot run '%s': %s\n", command[0], strerror(errno));
		_exit(127);
	}
	/* The terminal's Ctrl-C reaches the command itself; we only wait. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return 1;
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static double parse_secs(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v > 0) || v > 86400)
		return -1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		return v;
	if (!strcmp(end, "m") && v <= 1440)
		return v * 60;
	return -1;
}

int cmd_ci(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "label", required_argument, NULL, 'l' },
		{ "app", required_argument, NULL, 'a' },
		{ "freq", required_argument, NULL, 'F' },
		{ "auth-token-file", required_argument, NULL, 'T' },
		{ "upload-timeout", required_argument, NULL, 'U' },
		{ "best-effort", no_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char progname[] = "scorch ci";
	struct ci_run run;
	struct session_opts so;
	struct session *s = NULL;
	struct profile *prof = NULL;
	const char *server = getenv("SCORCH_SERVER"), *output = NULL, *app = NULL;
	const char *extra[MAX_LABELS];
	char *token = NULL, *env_token = getenv("SCORCH_AUTH_TOKEN"), *k;
	const char *v;
	size_t nextra = 0, i;
	int c, ret = 2, quiet = 0, best_effort = 0, status, failed = 0;
	double upload_timeout = 60;

	memset(&run, 0, sizeof(run));
	memset(&so, 0, sizeof(so));
	so.freq_hz = 99;
	so.include_idle = 0;
	optind = 1;
	argv[0] = progname;
	while ((c = getopt_long(argc, argv, "+s:o:l:a:F:qh", longopts, NULL)) != -1) {
		char *end;
		long lv;

		switch (c) {
		case 's':
			server = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'l':
			if (nextra >= MAX_LABELS) {
				error("too many --label options (at most %d)", MAX_LABELS);
				goto out;
			}
			extra[nextra++] = optarg;
			if (parse_label_arg(optarg, &k, &v))
				goto out;
			xfree(k);
			break;
		case 'a':
			if (!*optarg) {
				error("empty --app name");
				goto out;
			}
			app = optarg;
			break;
		case 'F':
			errno = 0;
			lv = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || lv < 1 || lv > 10000) {
				error("invalid frequency '%s': expected 1..10000 Hz", optarg);
				goto out;
			}
			so.freq_hz = (int)lv;
			break;
		case 'T':
			xfree(token);
			token = NULL;
			if (read_token(optarg, &token))
				goto out;
			break;
		case 'U':
			upload_timeout = parse_secs(optarg);
			if (upload_timeout <= 0) {
				error("invalid --upload-timeout '%s': expected seconds (suffix s or m), "
				      "at most a day", optarg);
				goto out;
			}
			break;
		case 'B':
			best_effort = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(ci_usage, stdout);
			ret = 0;
			goto out;
		default:
			fputs("see 'scorch ci --help'\n", stderr);
			goto out;
		}
	}
	if (optind >= argc) {
		error("no command: put the command to profile after '--', e.g. "
		      "'scorch ci --server URL -- make test'");
		goto out;
	}
	if (server && !*server)
		server = NULL;
	if (!server && !output) {
		error("nowhere to put the profile: give --server URL (or set SCORCH_SERVER) or "
		      "-o FILE");
		goto out;
	}
	if (server && strncmp(server, "http://", 7) && strncmp(server, "https://", 8)) {
		error("server URL '%s' must start with http:// or https://", server);
		goto out;
	}
	if (!token && env_token && *env_token)
		token = xstrdup(env_token);
	ret = 1;
	if (output && cli_check_output(output))
		goto out;

	detect_labels(&run, argv + optind);
	for (i = 0; i < nextra; i++) {
		parse_label_arg(extra[i], &k, &v);
		set_label(&run, k, v);
		if (!strcmp(k, "run") && v)
			snprintf(run.run_id, sizeof(run.run_id), "%.40s", v);
		xfree(k);
	}
	if (app)
		set_app(&run, app);
	if (!quiet) {
		struct buf b = BUF_INIT(BUF_UNLIMITED);

		for (i = 0; i < run.nlabels; i++)
			if (run.labels[i].value)
				buf_printf(&b, "%s%s=%s", b.len ? " " : "", run.labels[i].key,
					   run.labels[i].value);
		fprintf(stderr, "scorch: profiling '%s' as %s.cpu {%s}\n", argv[optind], run.app,
			b.data ? b.data : "");
		buf_release(&b);
	}

	so.status_line = !quiet && isatty(STDERR_FILENO);
	so.stop_flag = session_signals_install();
	so.command = argv + optind;
	c = session_start(&so, &s);
	if (c == -127) {
		ret = 127;
		goto out;
	}
	if (c) {
		if (best_effort) {
			log_warn("running '%s' without profiling (--best-effort)", argv[optind]);
			ret = run_unprofiled(argv + optind);
		}
		goto out;
	}
	session_run(s);
	status = session_command_status(s);
	prof = session_profile(s);
	if (!prof) {
		error("cannot build the profile");
		ret = status ? status : (best_effort ? 0 : 1);
		goto out;
	}
	if (session_samples(s) == 0)
		log_warn("no samples were recorded (did the command run long enough?)");
	for (i = 0; i < run.nlabels; i++)
		if (run.labels[i].value)
			profile_set_label(prof, run.labels[i].key, run.labels[i].value);
	if (output) {
		c = output_write_file(prof, output, argv[optind]);
		if (c < 0) {
			error("cannot write '%s': %s", output, strerror(-c));
			failed = 1;
		} else if (!quiet) {
			fprintf(stderr, "scorch: wrote %s (%llu samples%s)\n", output,
				(unsigned long long)session_samples(s), session_lost_note(s));
		}
	}
	if (server && upload(&run, prof, server, token, so.freq_hz, upload_timeout,
			     failed ? NULL : output, quiet) < 0)
		failed = 1;
	if (!quiet && server && !failed) {
		char sel[256];

		run_selection(&run, sel, sizeof(sel));
		fprintf(stderr, "scorch: compare with: scorch diff --server %s 'BASE' '%s'\n", server,
			sel);
	}
	ret = status;
	if (status == 0 && failed && !best_effort)
		ret = 1;
out:
	profile_free(prof);
	session_free(s);
	release_labels(&run);
	xfree(token);
	return ret;
}
