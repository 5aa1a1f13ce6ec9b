/* cmd_server.c: `scorch server`, the profile server: options, the signal loop that drives
 * store maintenance, and graceful shutdown. The server itself is src/server/server.h. */
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "server/server.h"
#include "store/timerange.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char usage_text[] =
	"usage: scorch server [--listen HOST:PORT] [--data DIR | --store URL] [--retention DURATION]\n"
	"                     [--max-disk SIZE] [--auth-token-file FILE] [options]\n"
	"\n"
	"Run the profile server: Pyroscope-compatible ingest (POST /ingest), storage, and the\n"
	"query API (/render, /render-diff, /labels, /label-values, /api/v1/series|top|sandwich),\n"
	"/metrics (Prometheus) and /healthz, all on one port.\n"
	"\n"
	"options:\n"
	"  --listen HOST:PORT      address to listen on (default 127.0.0.1:4040; port 0 picks one)\n"
	"  --data DIR              store directory (default ./scorch-data): same as --store sqlite://DIR\n"
	"  --store URL             where profiles are kept: sqlite://DIR (embedded, the default) or\n"
	"                          clickhouse://HOST:PORT[,HOST:PORT...]/DB[?user=&password=&cluster=NAME]\n"
	"                          (ClickHouse's HTTP port; tables created when missing; a cluster lists\n"
	"                          the HTTP address of every shard; see docs/storage.md)\n"
	"  --retention DURATION    drop data older than this, e.g. 30d, 12h (default 30d; 0 = keep)\n"
	"  --max-disk SIZE         drop the oldest data beyond this size, e.g. 20GB (default 0 = no cap)\n"
	"  --auth-token-file FILE  require 'Authorization: Bearer <token>' on every endpoint\n"
	"  --max-body SIZE         largest request body accepted (default 64MiB; larger is 413)\n"
	"  --threads N             worker threads: half for ingest, half for queries (default 4;\n"
	"                          32 with ClickHouse, where an ingest waits for the next batched\n"
	"                          insert)\n"
	"  --max-connections N     open connections at most (default 1024)\n"
	"  --max-client-connections N\n"
	"                          open connections per client address (default 128; 0 = no cap)\n"
	"  --header-timeout DURATION\n"
	"                          time for a whole request head, e.g. 10s (default 10s)\n"
	"  --limit NAME=VALUE      change a limit (repeatable); see 'limits' below\n"
	"  --sync-full             fsync every commit (survives power loss, slower ingest)\n"
	"  --port-file FILE        write the bound port there once listening (for scripts)\n"
	"\n"
	"limits (--limit NAME=VALUE; sizes like 64MiB, counts like 2M, times like 10s):\n"
	"  ingest-memory=96MiB     memory all ingests hold together (bodies and decoding); a\n"
	"                          request that finds it full waits up to 10 s, then gets 503\n"
	"  request-memory=64MiB    memory to decode one ingest (more is 413)\n"
	"  query-memory=64MiB      memory all queries hold together (a query waits up to 10 s, then 503)\n"
	"  render-memory=64MiB     memory of one query (503)\n"
	"  render-seconds=10s      time of one query (503)\n"
	"  render-stacks=65536     stacks of one flame graph (the lightest go to 'other')\n"
	"  render-nodes=256K       call-tree nodes of those stacks drawn from (idem)\n"
	"  inflated=64MiB          pprof size after gzip inflation (413)\n"
	"  strings=1M mappings=64K functions=1M locations=1M samples=512K frames=8M\n"
	"  sample-types=16 stacks=1M depth=65536 labels=1024 profiles=4096\n"
	"                          what one pushed profile (pprof, OTLP, JFR) may hold (413)\n"
	"  cache=32MiB             memory of the store's caches\n"
	"  merge-cache=32MiB       merged profiles kept for the next queries of a selection\n"
	"\n"
	"SIGTERM or SIGINT stop the server gracefully: no new connections, in-flight requests finish,\n"
	"the store is closed. An ingest is acknowledged (2xx) only after its data is committed.\n"
	"\n"
	"examples:\n"
	"  scorch server --data /var/lib/scorch --retention 14d --max-disk 20GB\n"
	"  curl --data-binary @profile.folded --url-query 'name=myapp.cpu{env=dev}' \\\n"
	"       http://127.0.0.1:4040/ingest\n"
	"  curl -G --data-urlencode 'query=myapp.cpu{env=\"dev\"}' -d from=now-1h -d format=html \\\n"
	"       http://127.0.0.1:4040/render > flamegraph.html\n"
	"  scorch server --listen 0.0.0.0:4040 --auth-token-file /etc/scorch/token\n"
	"  scorch server --store clickhouse://127.0.0.1:8123/scorch --retention 30d\n"
	"  scorch server --store 'clickhouse://ch1:8123,ch2:8123/scorch?cluster=profiles&user=scorch&password=secret'\n"
	"  scorch server --limit ingest-memory=512MiB --limit locations=4M --max-body 256MiB\n";

enum {
	OPT_LISTEN = 256,
	OPT_DATA,
	OPT_STORE,
	OPT_RETENTION,
	OPT_MAX_DISK,
	OPT_TOKEN_FILE,
	OPT_MAX_BODY,
	OPT_THREADS,
	OPT_MAX_CONN,
	OPT_SYNC_FULL,
	OPT_PORT_FILE,
	OPT_MAX_CLIENT,
	OPT_HEADER_TIMEOUT,
	OPT_LIMIT,
};

static const struct option options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "data", required_argument, NULL, OPT_DATA },
	{ "store", required_argument, NULL, OPT_STORE },
	{ "retention", required_argument, NULL, OPT_RETENTION },
	{ "max-disk", required_argument, NULL, OPT_MAX_DISK },
	{ "auth-token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
	{ "sync-full", no_argument, NULL, OPT_SYNC_FULL },
	{ "port-file", required_argument, NULL, OPT_PORT_FILE },
	{ "max-client-connections", required_argument, NULL, OPT_MAX_CLIENT },
	{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Read the token: the first line of the file, surrounding whitespace removed. */
static char *read_token(const char *path)
{
	struct buf b = BUF_INIT(4096);
	char *tok, *end;
	size_t len;
	int rc = buf_read_file(&b, path);

	if (rc < 0) {
		error("cannot read auth token file '%s': %s", path,
		      rc == -E2BIG ? "larger than 4 KiB" : strerror(-rc));
		buf_release(&b);
		return NULL;
	}
	len = b.len;
	tok = buf_detach(&b, NULL);
	tok[len] = '\0';
	end = strchr(tok, '\n');
	if (end)
		*end = '\0';
	end = tok + strlen(tok);
	while (end > tok && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	if (!*tok) {
		error("auth token file '%s' is empty", path);
		xfree(tok);
		return NULL;
	}
	return tok;
}

/* The store URL for messages, without its password. */
static const char *redact_url(const char *url, char *out, size_t size)
{
	const char *pw = strstr(url, "password=");
	const char *end;

	if (!pw) {
		snprintf(out, size, "%s", url);
		return out;
	}
	end = pw + strcspn(pw, "&");
	snprintf(out, size, "%.*spassword=***%s", (int)(pw - url), url, end);
	return out;
}

static int parse_count(const char *opt, const char *v, unsigned max, unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || end == v || n == 0 || n > max)
		return error("bad %s '%s': want an integer in [1, %u]", opt, v, max);
	*out = (unsigned)n;
	return 0;
}

/* --limit NAME=VALUE: a limit of server.h's config or of decode_limits.h. */
static int parse_limit(struct server_config *cfg, const char *arg)
{
	static const struct {
		const char *name;
		int kind; /* 0 size/count, 1 seconds */
	} server_limits[] = {
		{ "ingest-memory", 0 }, { "request-memory", 0 }, { "query-memory", 0 },
		{ "render-memory", 0 }, { "render-seconds", 1 }, { "render-stacks", 0 },
		{ "cache", 0 }, { "merge-cache", 0 }, { "render-nodes", 0 },
	};
	const char *eq = strchr(arg, '=');
	char name[32];
	struct errmsg err;
	uint64_t v = 0;
	int64_t secs = 0;
	size_t i, n;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(name))
		return error("bad --limit '%s': want NAME=VALUE (see scorch server --help)", arg);
	n = (size_t)(eq - arg);
	memcpy(name, arg, n);
	name[n] = '\0';
	for (i = 0; i < sizeof(server_limits) / sizeof(server_limits[0]); i++) {
		if (strcmp(name, server_limits[i].name))
			continue;
		if (server_limits[i].kind == 1) {
			if (timerange_parse_duration(eq + 1, &secs, &err) < 0 || secs <= 0 ||
			    secs > 3600)
				return error("bad --limit %s: want a duration from 1s to 1h", arg);
			cfg->render_ms = (unsigned)secs * 1000;
			return 0;
		}
		if (timerange_parse_size(eq + 1, &v, &err) < 0 || v == 0 || v > (1ULL << 40))
			return error("bad --limit %s: %s", arg, v ? "too large" : "want a positive value");
		switch (i) {
		case 0: cfg->ingest_memory = v; break;
		case 1: cfg->request_memory = v; break;
		case 2: cfg->query_memory = v; break;
		case 3: cfg->render_memory = v; break;
		case 5: cfg->render.max_stacks = (size_t)v; break;
		case 6: cfg->cache_bytes = v; break;
		case 7: cfg->merge_cache_bytes = v; break;
		case 8: cfg->render.max_nodes = (size_t)v; break;
		}
		return 0;
	}
	if (timerange_parse_size(eq + 1, &v, &err) < 0)
		return error("bad --limit %s: %s", arg, err.msg);
	switch (decode_limits_set(&cfg->limits, name, v)) {
	case 0:
		return 0;
	case -EINVAL:
		return error("bad --limit %s: want a positive value", arg);
	default:
		return error("unknown limit '%s' (see scorch server --help)", name);
	}
}

int cmd_server(int argc, char **argv)
{
	struct server_config cfg;
	struct server *srv = NULL;
	struct errmsg err = { "" };
	const char *token_file = NULL, *port_file = NULL;
	char *token = NULL;
	int64_t retention = 30 * 86400;
	uint64_t max_body = 0;
	sigset_t sigs;
	time_t last_maintain = 0;
	char url_shown[512];
	int c, rc = 1, sig = 0;

	memset(&cfg, 0, sizeof(cfg));
	server_config_defaults(&cfg);
	cfg.threads = 0; /* its default depends on the store (below) */
	cfg.listen = "127.0.0.1:4040";
	cfg.data_dir = "scorch-data";
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			cfg.listen = optarg;
			break;
		case OPT_DATA:
			cfg.data_dir = optarg;
			cfg.store_kind = "sqlite";
			break;
		case OPT_STORE:
			if (!strncmp(optarg, "sqlite://", 9) && optarg[9]) {
				cfg.store_kind = "sqlite";
				cfg.data_dir = optarg + 9;
			} else if (!strncmp(optarg, "clickhouse://", 13)) {
				cfg.store_kind = "clickhouse";
				cfg.data_dir = optarg;
			} else {
				error("bad --store '%s': want sqlite://DIR or clickhouse://HOST:PORT/DB", optarg);
				return 2;
			}
			break;
		case OPT_RETENTION:
			if (!strcmp(optarg, "0")) {
				retention = 0;
			} else if (timerange_parse_duration(optarg, &retention, &err) < 0) {
				error("bad --retention: %s", err.msg);
				return 2;
			}
			break;
		case OPT_MAX_DISK:
			if (timerange_parse_size(optarg, &cfg.max_disk_bytes, &err) < 0) {
				error("bad --max-disk: %s", err.msg);
				return 2;
			}
			break;
		case OPT_TOKEN_FILE:
			token_file = optarg;
			break;
		case OPT_MAX_BODY:
			if (timerange_parse_size(optarg, &max_body, &err) < 0 || max_body == 0 ||
			    max_body > (4ULL << 30)) {
				error("bad --max-body '%s': want a size up to 4GiB", optarg);
				return 2;
			}
			break;
		case OPT_THREADS:
			if (parse_count("--threads", optarg, 256, &cfg.threads) < 0)
				return 2;
			break;
		case OPT_MAX_CONN:
			if (parse_count("--max-connections", optarg, 65536, &cfg.max_connections) < 0)
				return 2;
			break;
		case OPT_SYNC_FULL:
			cfg.sync_full = 1;
			break;
		case OPT_PORT_FILE:
			port_file = optarg;
			break;
		case OPT_MAX_CLIENT:
			if (!strcmp(optarg, "0"))
				cfg.max_client_connections = UINT_MAX;
			else if (parse_count("--max-client-connections", optarg, 65536,
					     &cfg.max_client_connections) < 0)
				return 2;
			break;
		case OPT_HEADER_TIMEOUT: {
			int64_t secs;

			if (timerange_parse_duration(optarg, &secs, &err) < 0 || secs < 1 || secs > 600) {
				error("bad --header-timeout '%s': want a duration from 1s to 10m", optarg);
				return 2;
			}
			cfg.header_timeout_ms = (unsigned)secs * 1000;
			break;
		}
		case OPT_LIMIT:
			if (parse_limit(&cfg, optarg) < 0)
				return 2;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		error("unexpected argument '%s'", argv[optind]);
		fputs(usage_text, stderr);
		return 2;
	}
	cfg.retention_sec = retention;
	if (max_body)
		cfg.max_body = (size_t)max_body;
	if (cfg.max_body > cfg.ingest_memory) {
		error("--max-body %zu is larger than the memory all ingests share "
		      "(ingest-memory=%llu): raise it with --limit ingest-memory=SIZE",
		      cfg.max_body, (unsigned long long)cfg.ingest_memory);
		return 2;
	}
	if (token_file) {
		token = read_token(token_file);
		if (!token)
			return 1;
		cfg.auth_token = token;
	}
	if (cfg.store_kind && !strcmp(cfg.store_kind, "clickhouse")) {
		if (!cfg.threads)
			cfg.threads = 32;
	} else if (mkdir(cfg.data_dir, 0750) < 0 && errno != EEXIST) {
		error("cannot create data directory '%s': %s", cfg.data_dir, strerror(errno));
		goto cleanup;
	}

	/* Handle SIGINT/SIGTERM synchronously in this thread; the worker threads started below
	 * inherit the blocked mask, so a signal never interrupts a store write. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	srv = server_start(&cfg, &err);
	if (!srv) {
		error("cannot start the server: %s", err.msg);
		goto cleanup;
	}
	if (cfg.store_kind && !strcmp(cfg.store_kind, "clickhouse"))
		fprintf(stderr, "scorch server: listening on %s (port %u), store %s\n", cfg.listen,
			server_port(srv), redact_url(cfg.data_dir, url_shown, sizeof(url_shown)));
	else
		fprintf(stderr, "scorch server: listening on %s (port %u), data in '%s'\n", cfg.listen,
			server_port(srv), cfg.data_dir);
	if (!cfg.auth_token && !http_listen_is_loopback(cfg.listen)) {
		fprintf(stderr,
			"scorch server: WARNING: listening on '%s' beyond loopback WITHOUT "
			"authentication:\n"
			"scorch server: WARNING: anyone who can reach this port can push profiles and "
			"read every stored one.\n"
			"scorch server: WARNING: use --auth-token-file FILE (and a TLS proxy), or "
			"--listen 127.0.0.1:PORT.\n", cfg.listen);
	}
	if (port_file) {
		char num[16];
		int n = snprintf(num, sizeof(num), "%u\n", server_port(srv));

		if (write_file_atomic(port_file, num, (size_t)n) < 0) {
			error("cannot write port file '%s'", port_file);
			goto cleanup;
		}
	}
	for (;;) {
		struct timespec ts = { 1, 0 };
		time_t now;

		sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig == SIGINT || sig == SIGTERM)
			break;
		server_tick(srv);
		now = time(NULL);
		if (now - last_maintain >= 10) {
			last_maintain = now;
			if (server_maintain(srv, (int64_t)now, &err) < 0)
				log_warn("store maintenance failed: %s", err.msg);
		}
	}
	fprintf(stderr, "scorch server: %s received, finishing in-flight requests\n",
		sig == SIGINT ? "SIGINT" : "SIGTERM");
	rc = 0;
cleanup:
	server_stop(srv, 30000);
	xfree(token);
	return rc;
}
