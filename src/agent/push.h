/* push.h: delivers profiles to a scorch (or Pyroscope-compatible) server's /ingest from a
 * background thread, so a slow or absent server never stalls sampling.
 *
 * Requests wait in a queue bounded in bytes; when it is full the OLDEST request is dropped
 * (and counted). Failed sends (network errors, 5xx, 429) are retried with exponential backoff
 * (1 s doubling to 30 s); requests the server rejects as malformed (other 4xx) are dropped and
 * counted. */
#ifndef SCORCH_PUSH_H
#define SCORCH_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/log.h"

struct pusher;

struct pusher_opts {
	const char *server_url;  /* e.g. http://127.0.0.1:4040 */
	const char *auth_token;  /* bearer token, or NULL */
	size_t max_queue_bytes;  /* default 16 MiB (agent RSS budget: 64 MB in all) */
	int timeout_ms;          /* per request, default 10000 */
};

struct pusher_stats {
	uint64_t sent;           /* requests acknowledged with 2xx */
	uint64_t sent_bytes;
	uint64_t retries;        /* failed attempts that will be retried */
	uint64_t rejected;       /* dropped: the server answered 4xx */
	uint64_t dropped;        /* dropped: queue full (oldest first) */
	uint64_t queued;         /* requests waiting now */
	uint64_t queued_bytes;
	char last_error[160];
};

int pusher_start(const struct pusher_opts *opts, struct pusher **out, struct errmsg *err);
/* Queue a POST of body (len bytes, ownership passes to the pusher; freed with xfree()) to
 * server_url + path_and_query (which must start with '/'). content_type may be NULL. */
void pusher_enqueue(struct pusher *p, char *path_and_query, const char *content_type,
		    char *body, size_t len);
void pusher_get_stats(struct pusher *p, struct pusher_stats *st);
/* Try to deliver what is queued for up to flush_ms, then stop the thread and free p. The
 * final counters go to *final when it is not NULL (queued = requests never delivered). */
void pusher_stop(struct pusher *p, int flush_ms, struct pusher_stats *final);

#endif
