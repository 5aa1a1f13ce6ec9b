/* remote.h: reading CI runs from a scorch server for `scorch diff --server`, with the API the
 * server already has (docs/server.md):
 *
 *   the runs of a selection   GET /api/v1/series?query=SEL&group_by=LABEL&from=&until=
 *                             (one group per value of the run label, with its total and where
 *                             in time it has samples)
 *   one run's profile          GET /render?query=SEL{LABEL="id"}&format=pprof&from=&until=
 *
 * Answers are untrusted: bounded in size, parsed strictly (jsonread.h, pprof.h). Errors carry
 * the server's own message ({"error": "..."}) when it sent one. */
#ifndef SCORCH_REMOTE_H
#define SCORCH_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/log.h"

struct profile;
struct remote;

#define REMOTE_MAX_JSON    (64u << 20)  /* bytes of a JSON answer */
#define REMOTE_MAX_PROFILE (256u << 20) /* bytes of a pprof answer (compressed; 1 GiB inflated) */
#define REMOTE_MAX_RUNS    100000

struct remote_opts {
	const char *url;        /* http://host:port, without a trailing path */
	const char *auth_token; /* bearer token, or NULL */
	int timeout_ms;         /* per request (default 60000) */
};

struct remote_run {
	char *id;      /* the run label's value ("" for series without the label) */
	int64_t first; /* unix seconds: start of its first and last buckets with samples */
	int64_t last;
	int64_t step;  /* bucket width, seconds */
	double total;  /* samples */
};

int remote_open(const struct remote_opts *o, struct remote **out, struct errmsg *err);
void remote_close(struct remote *r);

/* The runs (groups of run_label) of selector in [from, until) (times as the server takes
 * them: unix seconds, "now-30d", ...), newest first; ties by id, descending. Groups without
 * samples are left out. *runs is freed with remote_runs_free(). */
int remote_list_runs(struct remote *r, const char *selector, const char *run_label,
		     const char *from, const char *until, struct remote_run **runs, size_t *n,
		     struct errmsg *err);
/* The merged profile of selector in [from, until). */
int remote_fetch(struct remote *r, const char *selector, const char *from, const char *until,
		 struct profile **out, struct errmsg *err);

/* Parse an /api/v1/series answer (what remote_list_runs() does with it). */
int remote_parse_series(const char *json, size_t len, struct remote_run **runs, size_t *n,
			struct errmsg *err);
void remote_runs_free(struct remote_run *runs, size_t n);

/* selector with the matcher label="value" added (value quoted and escaped); "app.cpu" becomes
 * app.cpu{label="value"}, "app.cpu{a=\"b\"}" becomes app.cpu{a="b",label="value"}. A new
 * string (xfree()). */
char *remote_selector_with(const char *selector, const char *label, const char *value);

/* Append s to out percent-encoded for a URL query value. */
struct buf;
int remote_urlencode(struct buf *out, const char *s);

#endif
