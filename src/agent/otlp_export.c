/* otlp_export.c: the agent's OTLP exporter (see otlp_export.h): endpoint parsing, one encoded
 * request per interval, delivery through a pusher, partial-success accounting. */
#include "agent/otlp_export.h"
#include "agent/push.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "profile/gzip.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

struct otlp_exporter {
	struct pusher *pusher;
	char *base;       /* scheme://host[:port] */
	char *path;       /* the endpoint's path (and query) */
	char *url;
	int gzip;
	uint64_t requests;
	pthread_mutex_t lock; /* guards what on_response writes */
	uint64_t rejected_profiles;
	char partial_msg[200];
};

/* Called by the pusher's thread with each answer. */
static void on_response(void *ctx, long status, const char *body, size_t len)
{
	struct otlp_exporter *e = ctx;
	int64_t rejected = 0;
	char msg[160];

	if (status < 200 || status >= 300 || !len)
		return;
	if (otlp_decode_response(body, len, &rejected, msg, sizeof(msg)) < 0)
		return; /* not ours to judge: the request was accepted */
	pthread_mutex_lock(&e->lock);
	if (rejected > 0)
		e->rejected_profiles += (uint64_t)rejected;
	if (msg[0])
		snprintf(e->partial_msg, sizeof(e->partial_msg), "receiver: %s", msg);
	pthread_mutex_unlock(&e->lock);
}

int otlp_exporter_start(const struct otlp_export_opts *opts, struct otlp_exporter **out,
			struct errmsg *err)
{
	const char *url = opts->endpoint, *host, *slash;
	struct otlp_exporter *e;
	struct pusher_opts po;
	const char **headers;
	size_t i, nh = 0;
	int rc;

	*out = NULL;
	if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
		return errmsg_set(err, -EINVAL, "OTLP endpoint '%s' must start with http:// or https://",
				  url ? url : "");
	host = strstr(url, "://") + 3;
	if (!*host || *host == '/')
		return errmsg_set(err, -EINVAL, "OTLP endpoint '%s' has no host", url);
	for (i = 0; i < opts->nheaders; i++) {
		const char *colon = strchr(opts->headers[i], ':');

		if (!colon || colon == opts->headers[i] || strpbrk(opts->headers[i], "\r\n"))
			return errmsg_set(err, -EINVAL, "bad header '%s': expected 'Name: value'",
					  opts->headers[i]);
	}
	e = xcalloc(1, sizeof(*e));
	slash = strchr(host, '/');
	if (!slash || !strcmp(slash, "/")) {
		/* A base URL: the signal's path is added, as OTLP exporters do. */
		e->base = slash ? xstrndup(url, (size_t)(slash - url)) : xstrdup(url);
		e->path = xstrdup(OTLP_PROFILES_PATH);
	} else {
		e->base = xstrndup(url, (size_t)(slash - url));
		e->path = xstrdup(slash);
	}
	e->url = xasprintf("%s%s", e->base, e->path);
	e->gzip = opts->gzip;
	pthread_mutex_init(&e->lock, NULL);

	headers = xcalloc(opts->nheaders + 2, sizeof(*headers));
	for (i = 0; i < opts->nheaders; i++)
		headers[nh++] = opts->headers[i];
	if (opts->gzip)
		headers[nh++] = "Content-Encoding: gzip";
	memset(&po, 0, sizeof(po));
	po.server_url = e->base;
	po.max_queue_bytes = opts->max_queue_bytes;
	po.timeout_ms = opts->timeout_ms;
	po.headers = headers;
	po.nheaders = nh;
	po.otlp_retries = 1;
	po.on_response = on_response;
	po.ctx = e;
	rc = pusher_start(&po, &e->pusher, err);
	xfree(headers);
	if (rc < 0) {
		pthread_mutex_destroy(&e->lock);
		xfree(e->base);
		xfree(e->path);
		xfree(e->url);
		xfree(e);
		return rc;
	}
	*out = e;
	return 0;
}

const char *otlp_exporter_url(const struct otlp_exporter *e)
{
	return e->url;
}

int otlp_exporter_push(struct otlp_exporter *e, const struct otlp_export_resource *res,
		       size_t nres)
{
	struct otlp_resource *r = xcalloc(nres + 1, sizeof(*r));
	struct profile **profs = NULL;
	struct buf raw = BUF_INIT(BUF_UNLIMITED), z = BUF_INIT(BUF_UNLIMITED);
	size_t i, j, n = 0, nprof = 0, total = 0;
	char *data;
	size_t len;
	int rc;

	for (i = 0; i < nres; i++)
		total += res[i].nprofiles;
	profs = xcalloc(total + 1, sizeof(*profs));
	for (i = 0; i < nres; i++) {
		size_t first = nprof;

		for (j = 0; j < res[i].nprofiles; j++) {
			if (res[i].profiles[j]->nsamples)
				profs[nprof++] = res[i].profiles[j];
		}
		if (nprof == first)
			continue;
		r[n].attrs = res[i].attrs;
		r[n].nattrs = res[i].nattrs;
		r[n].scope_name = "scorch";
		r[n].profiles = profs + first;
		r[n].nprofiles = nprof - first;
		n++;
	}
	rc = 0;
	if (!n)
		goto cleanup; /* an idle interval: nothing to say */
	rc = otlp_encode(r, n, &raw);
	if (!rc && e->gzip)
		rc = gzip_compress(raw.data, raw.len, Z_BEST_SPEED, &z);
	if (rc < 0)
		goto cleanup;
	data = e->gzip ? buf_detach(&z, &len) : buf_detach(&raw, &len);
	pusher_enqueue(e->pusher, xstrdup(e->path), "application/x-protobuf", data, len);
	e->requests++;
cleanup:
	buf_release(&raw);
	buf_release(&z);
	xfree(profs);
	xfree(r);
	return rc;
}

void otlp_exporter_get_stats(struct otlp_exporter *e, struct otlp_export_stats *st)
{
	struct pusher_stats ps;

	pusher_get_stats(e->pusher, &ps);
	memset(st, 0, sizeof(*st));
	st->requests = e->requests;
	st->sent = ps.sent;
	st->sent_bytes = ps.sent_bytes;
	st->rejected = ps.rejected;
	st->dropped = ps.dropped;
	st->retries = ps.retries;
	st->queued = ps.queued;
	pthread_mutex_lock(&e->lock);
	st->rejected_profiles = e->rejected_profiles;
	snprintf(st->last_error, sizeof(st->last_error), "%s",
		 ps.last_error[0] ? ps.last_error : e->partial_msg);
	pthread_mutex_unlock(&e->lock);
}

void otlp_exporter_stop(struct otlp_exporter *e, int flush_ms, struct otlp_export_stats *final)
{
	struct pusher_stats ps;

	if (!e)
		return;
	pusher_stop(e->pusher, flush_ms, &ps);
	if (final) {
		memset(final, 0, sizeof(*final));
		final->requests = e->requests;
		final->sent = ps.sent;
		final->sent_bytes = ps.sent_bytes;
		final->rejected = ps.rejected;
		final->dropped = ps.dropped;
		final->retries = ps.retries;
		final->queued = ps.queued;
		final->rejected_profiles = e->rejected_profiles;
		snprintf(final->last_error, sizeof(final->last_error), "%s",
			 ps.last_error[0] ? ps.last_error : e->partial_msg);
	}
	pthread_mutex_destroy(&e->lock);
	xfree(e->base);
	xfree(e->path);
	xfree(e->url);
	xfree(e);
}
