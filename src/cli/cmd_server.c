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
	"  --threads N             request worker threads (default 4; 32 with ClickHouse, where an\n"
	"                          ingest waits for the next batched insert)\n"
	"  --max-connections N     open connections at most (default 256)\n"
	"  --sync-full             fsync every commit (survives power loss, slower ingest)\n"
	"  --port-file FILE        write the bound port there once listening (for scripts)\n"
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
	"  scorch server --store 'clickhouse://ch1:8123,ch2:8123/scorch?cluster=profiles&user=scorch&password=secret'\n";

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
	cfg.max_body = (size_t)max_body;
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
