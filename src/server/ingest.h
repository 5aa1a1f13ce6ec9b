/* ingest.h: POST /ingest, Pyroscope's legacy push API.
 *
 *   POST /ingest?name=APP.TYPE{k=v,...}&from=&until=&format=folded|pprof|jfr&sampleRate=
 *                &spyName=&units=&aggregationType=
 *
 * The body is folded text (the default), pprof (raw or gzip) with format=pprof, a JFR recording
 * (raw or gzip) with format=jfr, or multipart/form-data with the pprof in the field "profile"
 * (for jfr: the recording in "jfr", Pyroscope's labels snapshot in "labels"). Everything of one
 * request is
 * written in one store transaction, and 200 is answered only after it committed; on any error
 * nothing is stored: 400 bad parameter, 413 too large, 422 unparsable body, 500 storage failure,
 * each with {"error": "..."}.
 *
 * The conversion functions are exposed for the unit tests and the fuzz target. */
#ifndef SCORCH_INGEST_H
#define SCORCH_INGEST_H

#include "lib/log.h"
#include "server/http.h"
#include "server/series_name.h"

#include <stddef.h>
#include <stdint.h>

struct decode_limits;
struct profile;
struct store_batch;
struct store_batchbuf;

/* The route handler; ctx is the struct server. */
void ingest_handle(void *ctx, const struct http_request *req, struct http_response *resp);

/* Batches converted from one request: one per distinct label set. Owns everything that the
 * batches point to; ingest_batches_release() frees it. */
#define INGEST_MAX_GROUPS 256
#define INGEST_MAX_TYPES 8   /* series per pprof sample type, at most */

struct ingest_batches {
	struct store_batch *batches;
	size_t n;
	uint64_t samples; /* sum of values */
	uint64_t stacks;  /* lines / pprof samples */
	/* private */
	void *priv;
};
void ingest_batches_release(struct ingest_batches *b);

/* Common metadata of a request's batches. */
struct ingest_meta {
	const struct series_name *name; /* app, type, labels from the name parameter */
	const char *type;               /* profile type to store */
	const char *app;                /* service_name to store */
	int64_t from, until;
	uint32_t sample_rate;
	const char *units, *spy_name, *aggregation;
	int sample_app;                 /* 1: a sample's string label service_name is its app;
	                                 * 2: that, else its label process */
	const struct decode_limits *limits; /* caps of the body's decoding (NULL: defaults) */
};

/* Parse folded text ("frame;frame;leaf COUNT" per line, root first) into one batch. A stack
 * deeper than STORE_MAX_DEPTH keeps its root side and ends in a frame "[truncated]"; frames
 * longer than STORE_MAX_FRAME bytes are cut. Returns 0, or -EINVAL with a message naming the
 * line (no count, bad count, empty stack), -E2BIG over meta->limits (distinct stacks:
 * "samples", their frames: "frames"), or the error of the thread's budget (lib/budget.h). */
int ingest_folded(const char *text, size_t len, const struct ingest_meta *meta,
		  struct ingest_batches *out, struct errmsg *err);

/* Convert a decoded profile into batches: frames root first by their folded names, the
 * sample's "comm" label (if any) as the root frame, other string labels of a sample as series
 * labels (one batch per distinct set, at most INGEST_MAX_GROUPS); a sample's service_name label
 * is dropped, or names the sample's app when meta->sample_app is set. Returns 0 or -EINVAL. */
int ingest_profile(const struct profile *p, const struct ingest_meta *meta,
		   struct ingest_batches *out, struct errmsg *err);

/* JFR (format=jfr): every profile type of the recording (profile/jfr.h) as batches, the app
 * from the name (a prefix: "app" or "app.cpu" give "app"), times from the recording unless the
 * request gave them (has_from, has_until). labels: Pyroscope's LabelsSnapshot, or NULL.
 * Returns 0, or a negative errno with a message (the body does not decode, or a profile cannot
 * be stored); out is then empty. */
struct decode_limits;
struct ingest_jfr {
	struct ingest_batches *b; /* one per profile type */
	size_t n;
	size_t nbatches;          /* store batches in all */
	uint64_t samples, stacks, events;
	char *app;
};
int ingest_jfr(const char *body, size_t len, const char *labels, size_t labels_len,
	       const struct decode_limits *lim, const struct ingest_meta *meta, int has_from,
	       int has_until, int64_t now, struct ingest_jfr *out, struct errmsg *err);
void ingest_jfr_release(struct ingest_jfr *j);
/* A value column of a decoded profile, stored as series of its own type. */
struct ingest_column {
	int index;          /* the profile's value column (profile.h); -1: each sample's `value` */
	const char *type;   /* series profile type */
	const char *units;  /* NULL: meta->units */
};
/* ingest_profile() for several columns at once (a pprof with several sample types, decoded
 * once): out gets one batch per (label set, column), column-major; samples counts every
 * column's values; a sample whose values are all 0 is skipped. */
int ingest_profile_columns(const struct profile *p, const struct ingest_meta *meta,
			   const struct ingest_column *cols, size_t ncols,
			   struct ingest_batches *out, struct errmsg *err);

/* The HTTP status for a decode error rc: 413 over a limit (-E2BIG, -ENOMEM), 503 when the
 * server is busy or the request too slow (-EBUSY, -ETIME), else 422. */
int ingest_status(int rc);

/* The profile type, unit and sample rate implied by a pprof profile (see docs/server.md):
 * sample type "samples" becomes "cpu"; characters outside [A-Za-z0-9_:-] become '_'. */
void ingest_pprof_type(const struct profile *p, const char *fallback, char *type, size_t typelen,
		       const char **units, uint32_t *sample_rate);

#endif
