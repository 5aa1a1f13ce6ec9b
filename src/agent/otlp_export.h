/* otlp_export.h: the agent's OTLP exporter: each interval's profiles, one resource per service,
 * as an OTLP/HTTP protobuf request (profile/otlp.h) to any OTLP profiles receiver, delivered in
 * the background by a pusher of its own (push.h: bounded queue, retries as OTLP/HTTP defines).
 *
 * Resource attributes (semantic conventions): service.name, host.name, process.executable.name,
 * container.id when there is one, plus the agent's --label K=V pairs under their own keys.
 * Sample attributes: thread.name (the thread's comm) and process.pid; mappings carry the file name
 * and process.executable.build_id.gnu; frames carry profile.frame.type (see otlp.h).
 *
 * Not thread-safe: one caller (the agent's loop) pushes. */
#ifndef SCORCH_OTLP_EXPORT_H
#define SCORCH_OTLP_EXPORT_H

#include "lib/log.h"
#include "profile/otlp.h"

#include <stddef.h>
#include <stdint.h>

struct otlp_exporter;

struct otlp_export_opts {
	/* The receiver: a base URL (http://collector:4318), to which /v1development/profiles is
	 * added, or the full URL of the profiles endpoint (any URL with a path). */
	const char *endpoint;
	const char *const *headers; /* extra request headers, "Name: value" (e.g. authorization) */
	size_t nheaders;
	int gzip;                   /* compress bodies (Content-Encoding: gzip) */
	size_t max_queue_bytes;     /* requests held while the receiver is unreachable (16 MiB) */
	int timeout_ms;             /* per request (10000) */
};

/* One resource: its attributes and the profiles of the interval that belong to it. */
struct otlp_export_resource {
	const struct otlp_attr *attrs;
	size_t nattrs;
	struct profile *const *profiles;
	size_t nprofiles;
};

struct otlp_export_stats {
	uint64_t requests;           /* requests queued */
	uint64_t sent;               /* acknowledged (2xx) */
	uint64_t sent_bytes;
	uint64_t rejected;           /* refused (4xx, 5xx other than the retryable ones) */
	uint64_t dropped;            /* queue full */
	uint64_t retries;
	uint64_t queued;
	uint64_t rejected_profiles;  /* profiles the receiver refused in a partial success */
	char last_error[200];        /* transport/HTTP error, or the last partial-success message */
};

/* Check the endpoint and start the exporter's delivery thread. Returns 0 or -EINVAL with a
 * message (a URL that is not http(s)://, a header without ':'). */
int otlp_exporter_start(const struct otlp_export_opts *opts, struct otlp_exporter **out,
			struct errmsg *err);
/* The URL requests go to (for messages). */
const char *otlp_exporter_url(const struct otlp_exporter *e);
/* Encode the resources' profiles (profiles without samples are left out) into one request and
 * queue it. Returns 0, or a negative errno when nothing could be encoded (then nothing is
 * queued). The profiles stay the caller's. */
int otlp_exporter_push(struct otlp_exporter *e, const struct otlp_export_resource *res,
		       size_t nres);
void otlp_exporter_get_stats(struct otlp_exporter *e, struct otlp_export_stats *st);
/* Deliver what is queued for up to flush_ms, stop, and free e (NULL is fine). The final
 * counters go to *final when not NULL. */
void otlp_exporter_stop(struct otlp_exporter *e, int flush_ms, struct otlp_export_stats *final);

#endif
