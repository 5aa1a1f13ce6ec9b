/* cmd_agent.c: `scorch agent`: whole-machine continuous profiling. Every interval the samples
 * are symbolized into one profile per service and pushed as pprof to a server's /ingest
 * (src/agent/push.c does the delivery, retries and bounded queueing), and/or sent as one OTLP
 * request to an OTLP profiles receiver (src/agent/otlp_export.c). */
#include "agent/otlp_export.h"
#include "agent/procinfo.h"
#include "agent/push.h"
#include "agent/service_name.h"
#include "agent/session.h"
#include "agent/table_cache.h"
#include "agent/unwinder.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "profile/pprof.h"
#include "profile/profile.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char agent_usage[] =
	"usage: scorch agent (--server URL | --otlp-endpoint URL) [-F HZ] [--interval SECS]\n"
	"                    [--profile cpu,offcpu,wall] [--label K=V]...\n"
	"\n"
	"Profile the whole machine continuously and push one pprof profile per service (and\n"
	"profile type) to a scorch server (or any server with Pyroscope's /ingest API) every\n"
	"interval, and/or send the interval's profiles as OTLP/HTTP (protobuf) to any\n"
	"OpenTelemetry profiles receiver.\n"
	"\n"
	"  -s, --server URL          where to push pprof, e.g. http://127.0.0.1:4040\n"
	"      --otlp-endpoint URL   OTLP receiver: a base URL (http://collector:4318, the path\n"
	"                            /v1development/profiles is added) or the full endpoint URL\n"
	"      --otlp-header 'N: V'  add a header to OTLP requests, e.g. authorization (repeatable)\n"
	"      --otlp-compression C  gzip (default) or none\n"
	"  -F, --freq HZ             samples per second per CPU (default 19)\n"
	"      --profile LIST        profile types to send, comma-separated (default cpu):\n"
	"                              cpu     CPU samples (units: samples at HZ)\n"
	"                              offcpu  time threads spent off CPU: blocked in I/O,\n"
	"                                      locks, sleeps, or waiting for a CPU\n"
	"                                      (nanoseconds)\n"
	"                              wall    both: threads' wall time (nanoseconds)\n"
	"                            each is its own type on the server (APP.offcpu, ...)\n"
	CLI_OFFCPU_USAGE
	"  -i, --interval SECS       push period in seconds, suffix s/m allowed (default 10s)\n"
	"  -l, --label K=V           add a label to every profile (repeatable)\n"
	"      --auth-token-file F   send the bearer token in F\n"
	"      --max-queue MB        data held while the server is unreachable (default 16, for\n"
	"                            each destination); the oldest is dropped first, and counted\n"
	"      --no-idle             do not report idle CPU\n"
	"      --cache-dir DIR       keep the unwind tables built from binaries on disk in DIR,\n"
	"                            so that each is built once, not at every start (default\n"
	"                            " TABLE_CACHE_DEFAULT_DIR "; created 0700; at most\n"
	"                            256 MB, least recently used tables deleted first)\n"
	"      --no-cache-dir        keep unwind tables in memory only\n"
	"      --unwind-memory MB    kernel memory for the unwind tables of the binaries that\n"
	"                            running processes map (default 32); when they do not fit,\n"
	"                            tables no running process maps are dropped first, and\n"
	"                            stacks through binaries whose tables are left out may\n"
	"                            end early (--stats: entries_used, cap_hits)\n"
	"      --short-lived SECS    a child that lives less than this is counted under its\n"
	"                            parent's service (default 1; 0 turns it off)\n"
	"      --debuginfod URL      fetch missing symbols and lines from this debuginfod server\n"
	"                            (also read from DEBUGINFOD_URLS), in the background: frames\n"
	"                            get the better names from the next interval on\n"
	"      --no-debuginfod       ignore DEBUGINFOD_URLS\n"
	"      --line-memory MB      memory for DWARF line tables (default 16): files beyond it\n"
	"                            get names without lines\n"
	"      --no-lines            no source lines or inlined frames\n"
	"      --stats               print the agent's counters to stderr after every interval\n"
	"                            and at the end: samples and losses, BPF run time, processes,\n"
	"                            unwind tables, and the memory of every cache next to its\n"
	"                            bound (docs/benchmarks.md, \"Agent cost\")\n"
	"  -d, --duration SECS       stop after SECS seconds (default: run until SIGTERM/Ctrl-C)\n"
	"\n"
	"Labels on each profile: service_name, process (executable), host, cpus (CPU count),\n"
	"container_id when there is one. Idle CPU is sent as service_name=idle so servers can\n"
	"show absolute CPU usage. The service is, in order: \"kernel\" for kernel threads; the\n"
	"parent's service for a child that lived less than --short-lived; the script or module\n"
	"of an interpreter (python app.py -> app.py, python -m pkg -> pkg, python -c ->\n"
	"python3.11[-c]), the main class or -jar file of a JVM (com.example.Main, app.jar); the\n"
	"container; the executable's name (docs/agent.md). OTLP resources\n"
	"carry the same as service.name, process.executable.name, host.name and container.id,\n"
	"--label pairs under their own names; samples carry thread.name and process.pid.\n"
	"\n"
	"examples:\n"
	"  scorch agent --server http://127.0.0.1:4040\n"
	"  scorch agent --server http://profiles:4040 -F 49 --interval 15s --label env=prod\n"
	"  scorch agent --server http://127.0.0.1:4040 --profile cpu,offcpu\n"
	"  scorch agent --otlp-endpoint http://otel-collector:4318\n"
	"  scorch agent --server http://127.0.0.1:4040 --otlp-endpoint https://otlp.example/v1development/profiles \\\n"
	"               --otlp-header 'Authorization: Bearer TOKEN'\n"
	"  scorch agent --server http://127.0.0.1:4040 --cache-dir /var/lib/scorch/tables\n"
	"  scorch agent --server http://127.0.0.1:4040 --stats 2> agent-stats.log\n";

/* One service's profiles of the interval, one per kind (index: kind_index()). */
#define AGENT_KINDS 3
struct service_profile {
	char service[PROCINFO_NAME_MAX];
	char process[PROCINFO_NAME_MAX];
	char container[65];
	struct profile *prof[AGENT_KINDS];
};

static const enum session_kind agent_kinds[AGENT_KINDS] = { SESSION_CPU, SESSION_OFFCPU,
							    SESSION_WALL };

static size_t kind_index(enum session_kind kind)
{
	return kind == SESSION_OFFCPU ? 1 : kind == SESSION_WALL ? 2 : 0;
}

struct agent {
	struct session *session;
	struct pusher *pusher;         /* pprof to --server, or NULL */
	struct otlp_exporter *otlp;    /* OTLP to --otlp-endpoint, or NULL */
	struct service_profile *svc;
	size_t nsvc, svc_cap;
	char host[256];
	int ncpus;
	int hz;
	char **labels; /* "k=v" */
	char **label_keys; /* "k" of each */
	size_t nlabels;
	int include_idle;
	struct service_rules rules;
	struct u64map others; /* pid + 1 -> struct procinfo * (or 0): parents read this interval */
	uint64_t now_ns;      /* CLOCK_MONOTONIC at the start of the interval's collection */
};

/* The lineage of a process the session never sampled (the parent of one it did): read from
 * /proc once per interval. */
static const struct procinfo *other_procinfo(struct agent *a, int pid)
{
	uint64_t *v = u64map_get(&a->others, (uint64_t)pid + 1);
	struct procinfo *pi;

	if (v)
		return *v ? (const struct procinfo *)(uintptr_t)*v : NULL;
	pi = xmalloc(sizeof(*pi));
	if (procinfo_read(pid, NULL, pi) < 0 || procinfo_read_stat(pid, pi) < 0) {
		xfree(pi);
		pi = NULL;
	}
	u64map_put(&a->others, (uint64_t)pid + 1, (uintptr_t)pi);
	return pi;
}

static void forget_others(struct agent *a)
{
	size_t it = 0;
	uint64_t k, v;

	while (u64map_next(&a->others, &it, &k, &v))
		xfree((void *)(uintptr_t)v);
	u64map_release(&a->others);
	u64map_init(&a->others);
}

/* How long a process lived (it exited) or has lived so far; < 0 when unknown. A process
 * that is gone although no exit was seen (the event was lost in a full ring buffer) lived at
 * least until its latest sample: that is its lifetime here. */
static double age_of(const struct procinfo *pi, uint64_t now_ns)
{
	uint64_t end;

	if (!pi->start_ns)
		return -1;
	end = pi->exit_ns ? pi->exit_ns : now_ns;
	if (!pi->exit_ns && pi->last_ns && now_ns - pi->start_ns < 60000000000ULL &&
	    kill(pi->pid, 0) < 0 && errno == ESRCH)
		end = pi->last_ns;
	return end > pi->start_ns ? (double)(end - pi->start_ns) / 1e9 : 0;
}

static const struct procinfo *any_procinfo(struct agent *a, uint32_t pid)
{
	const struct procinfo *pi = session_procinfo(a->session, pid);

	return pi ? pi : other_procinfo(a, (int)pid);
}

/* The service of a process (service_name.h). The facts come from the session's procinfo; the
 * parent's service is that of the nearest ancestor that is not short-lived itself (a shell
 * between a service and its `cat` usually is), judged now, at the end of the interval, when
 * their lifetimes are known. */
static void service_of(struct agent *a, const struct procinfo *pi, uint64_t now_ns, int depth,
		       char *out, size_t outlen)
{
	struct service_facts f;
	const char *argv[PROCINFO_ARGS_MAX];
	char parent[SERVICE_NAME_MAX] = "";
	size_t i;

	memset(&f, 0, sizeof(f));
	f.exe = pi->exe_known ? pi->exe : NULL;
	f.comm = pi->exe_known ? NULL : pi->exe; /* procinfo falls back to comm */
	f.argc = procinfo_split_cmdline(pi->cmdline, pi->cmdline_len, argv, PROCINFO_ARGS_MAX);
	f.argv = argv;
	f.script = pi->script;
	f.container_id = pi->container_id;
	f.kernel_thread = pi->kernel_thread;
	f.age_s = age_of(pi, now_ns);
	if (a->rules.short_lived_s > 0 && f.age_s >= 0 && f.age_s < a->rules.short_lived_s &&
	    !depth) {
		for (i = 0; i < PROCINFO_ANCESTORS && pi->ancestors[i] > 1; i++) {
			const struct procinfo *pp = any_procinfo(a, pi->ancestors[i]);
			double age;

			if (!pp)
				continue; /* gone before we could read it: it named nothing */
			age = age_of(pp, now_ns);
			if (age >= 0 && age < a->rules.short_lived_s)
				continue; /* short-lived too */
			service_of(a, pp, now_ns, depth + 1, parent, sizeof(parent));
			f.parent_service = parent;
			break;
		}
	}
	service_name(&f, &a->rules, out, outlen);
}

static struct profile *pick_profile(void *ctx, enum session_kind kind, uint32_t pid,
				    const char *comm)
{
	struct agent *a = ctx;
	const struct procinfo *pi = pid ? session_procinfo(a->session, pid) : NULL;
	const char *process, *container = "";
	char service[SERVICE_NAME_MAX];
	size_t i;

	if (pid == 0) {
		snprintf(service, sizeof(service), "idle");
		process = "idle";
	} else if (pi) {
		/* kernel threads have no executable: one process value for all of them (their
		 * name is the root frame of each stack) */
		process = pi->kernel_thread ? "kernel" : pi->exe;
		container = pi->container_id;
		service_of(a, pi, a->now_ns, 0, service, sizeof(service));
	} else {
		process = comm && *comm ? comm : "[unknown]";
		snprintf(service, sizeof(service), "%s", process);
	}
	for (i = 0; i < a->nsvc; i++) {
		if (!strcmp(a->svc[i].service, service) && !strcmp(a->svc[i].process, process) &&
		    !strcmp(a->svc[i].container, container))
			break;
	}
	if (i == a->nsvc) {
		ALLOC_GROW(a->svc, a->nsvc + 1, a->svc_cap);
		memset(&a->svc[a->nsvc], 0, sizeof(a->svc[a->nsvc]));
		snprintf(a->svc[a->nsvc].service, PROCINFO_NAME_MAX, "%s", service);
		snprintf(a->svc[a->nsvc].process, PROCINFO_NAME_MAX, "%s", process);
		snprintf(a->svc[a->nsvc].container, sizeof(a->svc[a->nsvc].container), "%s",
			 container);
		a->nsvc++;
	}
	if (!a->svc[i].prof[kind_index(kind)])
		a->svc[i].prof[kind_index(kind)] = session_new_profile(a->session, kind);
	return a->svc[i].prof[kind_index(kind)];
}

/* Label values go inside name={...}: keep them to a safe character set. */
static void put_label_value(struct buf *b, const char *v)
{
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;

		buf_putc(b, isalnum(c) || strchr("._-/:@+[]", c) ? (char)c : '_');
	}
}

static void put_urlencoded(struct buf *out, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || strchr("-._~", c))
			buf_putc(out, (char)c);
		else
			buf_printf(out, "%%%02X", c);
	}
}

/* The interval's profiles as OTLP: one resource per service. */
static void export_otlp(struct agent *a)
{
	struct otlp_export_resource *res = xcalloc(a->nsvc + 1, sizeof(*res));
	struct otlp_attr *attrs = xcalloc((a->nsvc + 1) * (4 + a->nlabels), sizeof(*attrs));
	struct profile **profs = xcalloc((a->nsvc + 1) * AGENT_KINDS, sizeof(*profs));
	size_t i, j, n = 0, nprofs = 0;

	for (i = 0; i < a->nsvc; i++) {
		struct service_profile *sp = &a->svc[i];
		struct otlp_attr *at = attrs + i * (4 + a->nlabels);
		size_t k = 0;

		at[k++] = (struct otlp_attr){ "service.name", sp->service, 0 };
		at[k++] = (struct otlp_attr){ "host.name", a->host, 0 };
		at[k++] = (struct otlp_attr){ "process.executable.name", sp->process, 0 };
		if (sp->container[0])
			at[k++] = (struct otlp_attr){ "container.id", sp->container, 0 };
		for (j = 0; j < a->nlabels; j++) {
			at[k++] = (struct otlp_attr){ a->label_keys[j], strchr(a->labels[j], '=') + 1, 0 };
		}
		/* the kinds this service has profiles of, side by side in one resource */
		for (j = 0; j < AGENT_KINDS; j++)
			if (sp->prof[j])
				profs[nprofs + res[n].nprofiles++] = sp->prof[j];
		res[n].attrs = at;
		res[n].nattrs = k;
		res[n].profiles = profs + nprofs;
		nprofs += res[n].nprofiles;
		n++;
	}
	if (otlp_exporter_push(a->otlp, res, n) < 0)
		log_warn("cannot encode the interval's profiles as OTLP");
	xfree(res);
	xfree(attrs);
	xfree(profs);
}

/* Queue one service's profile of one kind for the server: /ingest?name=SERVICE.KIND{labels}. */
static void push_profile(struct agent *a, struct service_profile *sp, size_t kind)
{
	const struct profile *prof = sp->prof[kind];
	struct buf body = BUF_INIT(BUF_UNLIMITED), name = BUF_INIT(16384);
	struct buf path = BUF_INIT(65536);
	int64_t from = prof->time_nanos / 1000000000LL;
	int64_t until = (prof->time_nanos + prof->duration_nanos) / 1000000000LL;
	int cpu = agent_kinds[kind] == SESSION_CPU;
	char *data;
	size_t len, j;

	if (until <= from)
		until = from + 1;
	if (pprof_encode(prof, &body) < 0) {
		log_warn("cannot encode the %s profile of '%s'", session_kind_name(agent_kinds[kind]),
			 sp->service);
		buf_release(&body);
		return;
	}
	put_label_value(&name, sp->service);
	buf_printf(&name, ".%s{host=", session_kind_name(agent_kinds[kind]));
	put_label_value(&name, a->host);
	buf_puts(&name, ",process=");
	put_label_value(&name, sp->process);
	buf_printf(&name, ",cpus=%d", a->ncpus);
	if (sp->container[0])
		buf_printf(&name, ",container_id=%s", sp->container);
	for (j = 0; j < a->nlabels; j++) {
		const char *eq = strchr(a->labels[j], '=');

		buf_putc(&name, ',');
		buf_append(&name, a->labels[j], (size_t)(eq - a->labels[j]));
		buf_putc(&name, '=');
		put_label_value(&name, eq + 1);
	}
	buf_putc(&name, '}');
	buf_puts(&path, "/ingest?name=");
	put_urlencoded(&path, name.data, name.len);
	/* CPU: counts of samples at HZ; off-CPU and wall: nanoseconds, whose "rate" is
	 * the profile's period (1e9 / period) */
	buf_printf(&path, "&from=%lld&until=%lld&format=pprof&sampleRate=%lld&spyName=scorch"
		   "&units=%s", (long long)from, (long long)until,
		   cpu ? (long long)a->hz : prof->period > 0 ?
		   (long long)(1000000000LL / prof->period) : (long long)a->hz,
		   cpu ? "samples" : "nanoseconds");
	data = buf_detach(&body, &len);
	pusher_enqueue(a->pusher, buf_detach(&path, NULL), "application/octet-stream", data, len);
	buf_release(&name);
}

/* Delivery changed state (push.c calls this once per change, from its thread): say so once,
 * with what waits in the queue, instead of once per failed attempt. */
static void delivery_state(void *arg, int failing, const struct pusher_stats *st)
{
	const char *url = arg;

	if (failing)
		log_warn("agent: cannot deliver profiles to %s: %s; retrying with backoff "
			 "(%llu profiles, %llu KiB queued)", url, st->last_error,
			 (unsigned long long)st->queued, (unsigned long long)(st->queued_bytes >> 10));
	else
		log_warn("agent: delivering profiles to %s again after %.0f s and %llu failed "
			 "attempts (%llu profiles, %llu KiB queued)", url, st->failing_seconds,
			 (unsigned long long)st->failed_attempts, (unsigned long long)st->queued,
			 (unsigned long long)(st->queued_bytes >> 10));
}

static void push_interval(struct agent *a)
{
	size_t i, k;

	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		a->now_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	}
	session_collect(a->session, pick_profile, a);
	forget_others(a);
	if (a->otlp)
		export_otlp(a);
	for (i = 0; i < a->nsvc && a->pusher; i++)
		for (k = 0; k < AGENT_KINDS; k++)
			if (a->svc[i].prof[k])
				push_profile(a, &a->svc[i], k);
	for (i = 0; i < a->nsvc; i++)
		for (k = 0; k < AGENT_KINDS; k++)
			profile_free(a->svc[i].prof[k]);
	a->nsvc = 0;
	session_offcpu_report(a->session);
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

/* A whole number in [lo, hi]: 0 and *out, or -1 (nothing written). */
static int parse_range(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static double parse_seconds(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v > 0))
		return -1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		return v;
	if (!strcmp(end, "m"))
		return v * 60;
	if (!strcmp(end, "ms"))
		return v / 1000;
	return -1;
}

int cmd_agent(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "freq", required_argument, NULL, 'F' },
		{ "interval", required_argument, NULL, 'i' },
		{ "label", required_argument, NULL, 'l' },
		{ "auth-token-file", required_argument, NULL, 'T' },
		{ "max-queue", required_argument, NULL, 'Q' },
		{ "no-idle", no_argument, NULL, 'I' },
		{ "duration", required_argument, NULL, 'd' },
		{ "otlp-endpoint", required_argument, NULL, 'O' },
		{ "otlp-header", required_argument, NULL, 'H' },
		{ "otlp-compression", required_argument, NULL, 'C' },
		{ "cache-dir", required_argument, NULL, 'D' },
		{ "no-cache-dir", no_argument, NULL, 'N' },
		{ "short-lived", required_argument, NULL, 'S' },
		{ "profile", required_argument, NULL, 'P' },
		CLI_OFFCPU_LONGOPTS,
		{ "debuginfod", required_argument, NULL, 'U' },
		{ "no-debuginfod", no_argument, NULL, 'X' },
		{ "line-memory", required_argument, NULL, 'L' },
		{ "unwind-memory", required_argument, NULL, 'W' },
		{ "no-lines", no_argument, NULL, 'n' },
		{ "stats", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct agent a;
	struct session_opts so;
	struct pusher_opts po;
	struct pusher_stats ps;
	struct otlp_export_opts oo;
	struct otlp_export_stats os;
	const char **otlp_headers = NULL;
	size_t otlp_headers_cap = 0;
	static char progname[] = "scorch agent";
	struct errmsg err = { "" };
	char *token = NULL;
	const char *cache_dir = TABLE_CACHE_DEFAULT_DIR;
	double interval = 10, duration = 0, next_push, start;
	const char *debuginfod = NULL;
	int c, ret = 2, r, no_debuginfod = 0, no_lines = 0, flush_ms, stats = 0;
	unsigned kinds = SESSION_CPU;
	size_t line_mb = 0;
	uint32_t unwind_mb = UNWINDER_DEFAULT_ENTRIES / (1u << 20) * sizeof(struct unwind_entry);
	size_t cap = 0;
	struct timespec ts;

	memset(&a, 0, sizeof(a));
	memset(&so, 0, sizeof(so));
	memset(&po, 0, sizeof(po));
	memset(&oo, 0, sizeof(oo));
	memset(&os, 0, sizeof(os));
	memset(&ps, 0, sizeof(ps));
	oo.gzip = 1;
	a.hz = 19;
	a.include_idle = 1;
	a.rules.short_lived_s = SERVICE_SHORT_LIVED_DEFAULT;
	u64map_init(&a.others);
	optind = 1;
	argv[0] = progname; /* getopt's messages name it */
	while ((c = getopt_long(argc, argv, "s:F:i:l:d:h", longopts, NULL)) != -1) {
		char *end;
		long lv;
		unsigned long long mb;

		switch (c) {
		case 's':
			po.server_url = optarg;
			break;
		case 'F':
			if (parse_range(optarg, 1, 10000, &lv)) {
				error("invalid frequency '%s': expected 1..10000 Hz", optarg);
				goto out;
			}
			a.hz = (int)lv;
			break;
		case 'i':
			interval = parse_seconds(optarg);
			if (interval < 1 || interval > 3600) {
				error("invalid interval '%s': expected 1s..60m", optarg);
				goto out;
			}
			break;
		case 'd':
			duration = parse_seconds(optarg);
			if (duration <= 0 || duration > 31536000 * 100.0) {
				error("invalid duration '%s': expected seconds (suffix s, m allowed)",
				      optarg);
				goto out;
			}
			break;
		case 'l': {
			const char *eq = strchr(optarg, '=');
			const char *k;

			if (!eq || eq == optarg || !eq[1]) {
				error("invalid label '%s': expected KEY=VALUE", optarg);
				goto out;
			}
			for (k = optarg; k < eq; k++) {
				if (!isalnum((unsigned char)*k) && *k != '_') {
					error("invalid label name in '%s': use letters, digits and _", optarg);
					goto out;
				}
			}
			ALLOC_GROW(a.labels, a.nlabels + 1, cap);
			a.labels[a.nlabels++] = optarg;
			break;
		}
		case 'T':
			xfree(token);
			token = NULL;
			if (read_token(optarg, &token))
				goto out;
			po.auth_token = token;
			break;
		case 'Q':
			errno = 0;
			mb = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || mb < 1 ||
			    mb > 4096) {
				error("invalid --max-queue '%s': expected megabytes, 1..4096", optarg);
				goto out;
			}
			po.max_queue_bytes = (size_t)mb << 20;
			break;
		case 'I':
			a.include_idle = 0;
			break;
		case 'O':
			oo.endpoint = optarg;
			break;
		case 'H':
			ALLOC_GROW(otlp_headers, oo.nheaders + 1, otlp_headers_cap);
			otlp_headers[oo.nheaders++] = optarg;
			oo.headers = otlp_headers;
			break;
		case 'C':
			if (strcmp(optarg, "gzip") && strcmp(optarg, "none")) {
				error("invalid --otlp-compression '%s': expected gzip or none", optarg);
				goto out;
			}
			oo.gzip = !strcmp(optarg, "gzip");
			break;
		case 'D':
			if (!*optarg) {
				error("empty --cache-dir: give a directory, or --no-cache-dir");
				goto out;
			}
			cache_dir = optarg;
			break;
		case 'N':
			cache_dir = NULL;
			break;
		case 'S':
			a.rules.short_lived_s = strtod(optarg, &end);
			if (end == optarg || (*end && strcmp(end, "s")) || !(a.rules.short_lived_s >= 0) ||
			    a.rules.short_lived_s > 3600) {
				error("invalid --short-lived '%s': expected seconds (0 turns it off)", optarg);
				goto out;
			}
			break;
		case 'P': {
			char bad[64];

			if (session_kinds_parse(optarg, &kinds, bad, sizeof(bad))) {
				error("invalid --profile '%s': unknown profile type '%s' (cpu, "
				      "offcpu, wall)", optarg, bad);
				goto out;
			}
			break;
		}
		case CLI_OPT_OFFCPU_MIN:
		case CLI_OPT_OFFCPU_PERIOD:
		case CLI_OPT_OFFCPU_RATE:
			if (cli_offcpu_option(c, optarg, &so))
				goto out;
			break;
		case 'U':
			debuginfod = optarg;
			break;
		case 'X':
			no_debuginfod = 1;
			break;
		case 'n':
			no_lines = 1;
			break;
		case 'L':
			if (parse_range(optarg, 1, 65536, &lv)) {
				error("invalid --line-memory '%s': expected 1..65536 MB", optarg);
				goto out;
			}
			line_mb = (size_t)lv;
			break;
		case 'W':
			if (parse_range(optarg, 1, 1024, &lv)) {
				error("invalid --unwind-memory '%s': expected 1..1024 MB", optarg);
				goto out;
			}
			unwind_mb = (uint32_t)lv;
			break;
		case 'M':
			stats = 1;
			break;
		case 'h':
			fputs(agent_usage, stdout);
			ret = 0;
			goto out;
		default:
			fputs("see 'scorch agent --help'\n", stderr);
			goto out;
		}
	}
	if (!po.server_url && !oo.endpoint) {
		error("nowhere to send profiles: add --server URL (e.g. --server http://127.0.0.1:4040) "
		      "and/or --otlp-endpoint URL");
		goto out;
	}
	if (optind < argc) {
		error("unexpected argument '%s': see 'scorch agent --help'", argv[optind]);
		goto out;
	}
	if (gethostname(a.host, sizeof(a.host) - 1) < 0)
		snprintf(a.host, sizeof(a.host), "unknown");
	a.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);

	a.label_keys = xcalloc(a.nlabels + 1, sizeof(*a.label_keys));
	for (r = 0; r < (int)a.nlabels; r++)
		a.label_keys[r] = xstrndup(a.labels[r], (size_t)(strchr(a.labels[r], '=') - a.labels[r]));
	oo.max_queue_bytes = po.max_queue_bytes;
	po.on_state = delivery_state;
	po.on_state_arg = (void *)po.server_url;
	if (po.server_url && pusher_start(&po, &a.pusher, &err) < 0) {
		error("%s", err.msg);
		goto out;
	}
	if (oo.endpoint && otlp_exporter_start(&oo, &a.otlp, &err) < 0) {
		error("%s", err.msg);
		goto out;
	}
	if ((so.offcpu_min_ns || so.offcpu_period_ns || so.offcpu_max_rate) &&
	    !(kinds & (SESSION_OFFCPU | SESSION_WALL))) {
		error("the --off-cpu-* options need --profile with offcpu or wall");
		goto out;
	}
	ret = 1;
	so.kinds = kinds;
	so.freq_hz = a.hz;
	so.include_idle = a.include_idle;
	so.procinfo = 1;
	/* One interval at most: ample for 19 Hz x 10 s on a thousand CPUs. */
	so.max_stacks = 256 * 1024;
	so.stop_flag = session_signals_install();
	so.duration_s = duration;
	so.cache_dir = cache_dir;
	so.short_lived_s = a.rules.short_lived_s;
	so.debuginfod_urls = debuginfod;
	so.no_debuginfod = no_debuginfod;
	so.no_line_info = no_lines;
	so.line_budget = line_mb << 20;
	so.unwind_entries = (uint32_t)(((uint64_t)unwind_mb << 20) / sizeof(struct unwind_entry));
	/* The agent's peak RSS is the sum of what it holds and of the transient buffers of the
	 * moment (a big binary's unwind table or symbols read): blocks from 256 KiB up come
	 * straight from mmap and go back to the system when freed, instead of staying in the
	 * heap's free lists; the heap gives back what it frees from 1 MiB up; at most two arenas
	 * (the agent has a few helper threads, and each arena keeps memory of its own). */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
	mallopt(M_ARENA_MAX, 2);
	if (session_start(&so, &a.session))
		goto out;
	log_info("agent: profiling %d CPUs at %d Hz (%s%s%s%s%s), sending to %s%s%s every %.0f s",
		 a.ncpus, a.hz, kinds & SESSION_CPU ? "cpu" : "",
		 (kinds & SESSION_CPU) && (kinds & ~SESSION_CPU) ? "," : "",
		 kinds & SESSION_OFFCPU ? "offcpu" : "",
		 (kinds & SESSION_OFFCPU) && (kinds & SESSION_WALL) ? "," : "",
		 kinds & SESSION_WALL ? "wall" : "",
		 po.server_url ? po.server_url : "", po.server_url && a.otlp ? " and " : "",
		 a.otlp ? otlp_exporter_url(a.otlp) : "", interval);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	start = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	next_push = start + interval;
	for (;;) {
		double now, wait_s;

		/* until the next push; the sampler waits at most SAMPLER_AGENT_MAX_WAIT_MS (every
		 * wakeup costs), and signals cut the wait short */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		wait_s = next_push - ((double)ts.tv_sec + ts.tv_nsec / 1e9);
		r = session_poll(a.session, wait_s <= 0 ? 0 : wait_s >= 1 ? 1000 : (int)(wait_s * 1000) + 1);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
		if (r <= 0)
			session_stop(a.session); /* the last push gets what the ring buffer holds */
		if (r <= 0 || now >= next_push) {
			push_interval(&a);
			next_push += interval;
			if (next_push < now)
				next_push = now + interval;
			if (a.pusher) {
				pusher_get_stats(a.pusher, &ps);
				log_info("agent: %llu profiles sent, %llu queued, %llu dropped, %llu rejected%s%s",
					 (unsigned long long)ps.sent, (unsigned long long)ps.queued,
					 (unsigned long long)ps.dropped, (unsigned long long)ps.rejected,
					 ps.last_error[0] ? ", last error: " : "", ps.last_error);
			}
			if (a.otlp) {
				otlp_exporter_get_stats(a.otlp, &os);
				log_info("agent: otlp: %llu requests sent, %llu queued, %llu dropped, %llu "
					 "rejected, %llu profiles refused by the receiver%s%s",
					 (unsigned long long)os.sent, (unsigned long long)os.queued,
					 (unsigned long long)os.dropped, (unsigned long long)os.rejected,
					 (unsigned long long)os.rejected_profiles,
					 os.last_error[0] ? ", last: " : "", os.last_error);
			}
			if (stats || log_get_level() >= LOG_DEBUG)
				session_print_stats(a.session);
			/* Symbolizing an interval (and building unwind tables for new
			 * binaries) allocates and frees a lot; give it back to the system so
			 * that the RSS stays flat between intervals. */
			malloc_trim(0);
		}
		if (r <= 0)
			break;
	}
	ret = r < 0 ? 1 : 0;
out:
	/* 0.8 s to deliver what is queued (an answer in flight included; then its socket is shut
	 * down), shared by the destinations: the agent exits within 2 s of SIGTERM however slow
	 * or absent they are (releasing the BPF programs and maps takes a few hundred ms more). */
	flush_ms = a.pusher && a.otlp ? 400 : 800;
	if (a.pusher) {
		pusher_stop(a.pusher, flush_ms, &ps);
		log_info("agent: stopped: %llu samples, %llu profiles sent (%llu KiB), %llu "
			 "undelivered, %llu dropped (queue full), %llu rejected by the server, %llu "
			 "retries",
			 (unsigned long long)(a.session ? session_samples(a.session) : 0),
			 (unsigned long long)ps.sent, (unsigned long long)(ps.sent_bytes >> 10),
			 (unsigned long long)ps.queued,
			 (unsigned long long)ps.dropped, (unsigned long long)ps.rejected,
			 (unsigned long long)ps.retries);
		if (ps.queued || ps.dropped || ps.rejected)
			log_warn("agent: %llu profiles could not be delivered%s%s",
				 (unsigned long long)(ps.queued + ps.dropped + ps.rejected),
				 ps.last_error[0] ? ": " : "", ps.last_error);
	}
	if (a.otlp) {
		otlp_exporter_stop(a.otlp, flush_ms, &os);
		log_info("agent: otlp: stopped: %llu requests sent (%llu KiB), %llu undelivered, %llu "
			 "dropped (queue full), %llu rejected, %llu retries, %llu profiles refused by "
			 "the receiver",
			 (unsigned long long)os.sent, (unsigned long long)(os.sent_bytes >> 10),
			 (unsigned long long)os.queued, (unsigned long long)os.dropped,
			 (unsigned long long)os.rejected, (unsigned long long)os.retries,
			 (unsigned long long)os.rejected_profiles);
		if (os.queued || os.dropped || os.rejected)
			log_warn("agent: otlp: %llu requests could not be delivered%s%s",
				 (unsigned long long)(os.queued + os.dropped + os.rejected),
				 os.last_error[0] ? ": " : "", os.last_error);
		else if (os.rejected_profiles)
			log_warn("agent: otlp: the receiver refused %llu profiles%s%s",
				 (unsigned long long)os.rejected_profiles, os.last_error[0] ? ": " : "",
				 os.last_error);
	}
	forget_others(&a);
	u64map_release(&a.others);
	if (a.session)
		session_offcpu_log_totals(a.session);
	session_free(a.session);
	xfree(a.svc);
	xfree(a.labels);
	for (r = 0; a.label_keys && r < (int)a.nlabels; r++)
		xfree(a.label_keys[r]);
	xfree(a.label_keys);
	xfree(otlp_headers);
	xfree(token);
	return ret;
}
