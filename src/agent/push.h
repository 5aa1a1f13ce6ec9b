/* push.h: delivers profiles to a scorch (or Pyroscope-compatible) server's /ingest from a
 * background thread, so a slow or absent server never stalls sampling.
 *
 * Requests wait in a queue bounded in bytes; when it is full the OLDEST request is dropped
 * (and counted). Failed sends (network errors, 5xx, 408, 429; with otlp_retries only 429, 502,
 * 503, 504) are retried with exponential backoff (1 s doubling to 30 s); requests the server
 * rejects (other 4xx, or any other status with otlp_retries) are dropped and counted.
 * The same pusher also serves OTLP endpoints (src/agent/otlp_export.c). Delivery changing
 * state (starting to fail, working again) is reported once per change through
 * pusher_opts.on_state, not once per attempt.
 *
 * Stopping is bounded: pusher_stop() gives delivery flush_ms, aborting a request in flight
 * when that time is up (a server that accepts and never answers cannot hold the agent). */
#ifndef SCORCH_PUSH_H
#define SCORCH_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/log.h"

struct pusher;

struct pusher_stats;

struct pusher_opts {
	const char *server_url;  /* e.g. http://127.0.0.1:4040 */
	const char *auth_token;  /* bearer token, or NULL */
	size_t max_queue_bytes;  /* default 16 MiB (agent RSS budget: 64 MB in all) */
	int timeout_ms;          /* per request, default 10000 */
	const char *const *headers; /* more request headers ("Name: value"), copied; may be NULL */
	size_t nheaders;
	int otlp_retries;        /* retry only what OTLP/HTTP calls retryable (429, 502, 503, 504
	                          * and transport errors); other answers drop the request */
	/* Called from the push thread with every answer (status and up to 64 KiB of its body),
	 * e.g. to read an OTLP partial success. May be NULL. */
	void (*on_response)(void *ctx, long status, const char *body, size_t len);
	void *ctx;
	/* Called from the push thread when delivery starts failing (failing = 1: the first
	 * failed attempt after a success, or at start) and when it works again (0); st has the
	 * counters then (queue size, last error). May be NULL. */
	void (*on_state)(void *arg, int failing, const struct pusher_stats *st);
	void *on_state_arg;
};

struct pusher_stats {
	uint64_t sent;           /* requests acknowledged with 2xx */
	uint64_t sent_bytes;
	uint64_t retries;        /* failed attempts that will be retried */
	uint64_t rejected;       /* dropped: the server answered 4xx */
	uint64_t dropped;        /* dropped: queue full (oldest first) */
	uint64_t queued;         /* requests waiting now */
	uint64_t queued_bytes;
	uint64_t failed_attempts; /* since delivery last worked (0 while it works) */
	double failing_seconds;  /* how long delivery has been failing (when it recovers: how
	                          * long it failed) */
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
