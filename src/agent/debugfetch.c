/* debugfetch.c: the debuginfod worker (see debugfetch.h). The queue and the results are
 * arrays under one mutex; the worker holds no lock while libdebuginfod downloads, and its
 * progress callback cancels a transfer when the owner is shutting down. */
#include "agent/debugfetch.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct request {
	uint8_t id[64];
	size_t len;
};

struct debugfetch {
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	int stop;                 /* owner shutting down (read by the worker without the lock:
				     atomics) */
	struct request *queue;    /* FIFO of requests */
	size_t qhead, qlen, qcap;
	int busy;                 /* the worker is on a request */
	struct debugfetch_result *results;
	size_t nresults, rcap;
	struct u64map known;      /* hash(build id) -> 1: asked */
	char *urls;
};

static void hexify(const uint8_t *id, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * len] = '\0';
}

static int progress(debuginfod_client *c, long a, long b)
{
	struct debugfetch *d = debuginfod_get_user_data(c);

	(void)a;
	(void)b;
	return __atomic_load_n(&d->stop, __ATOMIC_RELAXED); /* non-zero cancels the transfer */
}

static void *worker(void *arg)
{
	struct debugfetch *d = arg;
	debuginfod_client *c = debuginfod_begin();

	if (c) {
		debuginfod_set_user_data(c, d);
		debuginfod_set_progressfn(c, progress);
	}
	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct request r;
		struct debugfetch_result res;
		char *path = NULL;
		int fd;

		while (!d->stop && !d->qlen)
			pthread_cond_wait(&d->work, &d->lock);
		if (d->stop)
			break;
		r = d->queue[d->qhead];
		d->qhead = (d->qhead + 1) % d->qcap;
		d->qlen--;
		d->busy = 1;
		pthread_mutex_unlock(&d->lock);

		memset(&res, 0, sizeof(res));
		hexify(r.id, r.len, res.build_id);
		fd = c ? debuginfod_find_debuginfo(c, r.id, (int)r.len, &path) : -ENOSYS;
		if (fd >= 0) {
			close(fd);
			res.path = path ? xstrdup(path) : NULL;
			res.error = path ? 0 : -ENOENT;
		} else {
			res.error = fd;
		}
		free(path); /* malloc'ed by libdebuginfod */

		pthread_mutex_lock(&d->lock);
		d->busy = 0;
		ALLOC_GROW(d->results, d->nresults + 1, d->rcap);
		d->results[d->nresults++] = res;
		pthread_cond_broadcast(&d->done);
	}
	pthread_mutex_unlock(&d->lock);
	if (c)
		debuginfod_end(c);
	return NULL;
}

struct debugfetch *debugfetch_new(const char *urls, struct errmsg *err)
{
	const char *env = getenv("DEBUGINFOD_URLS");
	struct debugfetch *d;
	char *all;

	if ((!env || !*env) && (!urls || !*urls)) {
		errmsg_set(err, -ENOENT, "no debuginfod server (DEBUGINFOD_URLS is not set)");
		return NULL;
	}
	if (env && urls && strstr(env, urls))
		urls = NULL; /* already there */
	all = xasprintf("%s%s%s", env && *env ? env : "", env && *env && urls && *urls ? " " : "",
			urls && *urls ? urls : "");
	/* libdebuginfod reads the servers from the environment at each query. */
	if (urls && *urls && setenv("DEBUGINFOD_URLS", all, 1) < 0) {
		errmsg_set(err, -errno, "cannot set DEBUGINFOD_URLS: %s", strerror(errno));
		xfree(all);
		return NULL;
	}
	d = xcalloc(1, sizeof(*d));
	d->urls = all;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->work, NULL);
	pthread_cond_init(&d->done, NULL);
	u64map_init(&d->known);
	d->qcap = DEBUGFETCH_MAX_QUEUED;
	d->queue = xcalloc(d->qcap, sizeof(*d->queue));
	if (pthread_create(&d->thread, NULL, worker, d)) {
		errmsg_set(err, -EAGAIN, "cannot start the debuginfod thread");
		debugfetch_free(d);
		return NULL;
	}
	d->started = 1;
	return d;
}

void debugfetch_free(struct debugfetch *d)
{
	size_t i;

	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->lock);
		__atomic_store_n(&d->stop, 1, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&d->work);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	for (i = 0; i < d->nresults; i++)
		xfree(d->results[i].path);
	xfree(d->results);
	xfree(d->queue);
	u64map_release(&d->known);
	pthread_cond_destroy(&d->done);
	pthread_cond_destroy(&d->work);
	pthread_mutex_destroy(&d->lock);
	xfree(d->urls);
	xfree(d);
}

const char *debugfetch_urls(const struct debugfetch *d)
{
	return d->urls;
}

int debugfetch_request(struct debugfetch *d, const uint8_t *build_id, size_t len)
{
	uint64_t key;
	int rc = 0;

	if (!len || len > sizeof(d->queue[0].id))
		return -EINVAL;
	key = hash_bytes(build_id, len, 0xdeb) | 1;
	pthread_mutex_lock(&d->lock);
	if (u64map_get(&d->known, key)) {
		rc = -EEXIST;
	} else if (d->qlen >= d->qcap) {
		rc = -ENOSPC;
	} else {
		struct request *r = &d->queue[(d->qhead + d->qlen) % d->qcap];

		memcpy(r->id, build_id, len);
		r->len = len;
		d->qlen++;
		if (d->known.count >= DEBUGFETCH_MAX_KNOWN) {
			u64map_release(&d->known);
			u64map_init(&d->known);
		}
		u64map_put(&d->known, key, 1);
		pthread_cond_signal(&d->work);
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

size_t debugfetch_poll(struct debugfetch *d, struct debugfetch_result *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&d->lock);
	n = d->nresults < max ? d->nresults : max;
	if (n) {
		memcpy(out, d->results, n * sizeof(*out));
		memmove(d->results, d->results + n, (d->nresults - n) * sizeof(*out));
		d->nresults -= n;
	}
	pthread_mutex_unlock(&d->lock);
	return n;
}

size_t debugfetch_pending(struct debugfetch *d)
{
	size_t n;

	pthread_mutex_lock(&d->lock);
	n = d->qlen + (size_t)d->busy;
	pthread_mutex_unlock(&d->lock);
	return n;
}

int debugfetch_wait(struct debugfetch *d, int timeout_ms)
{
	struct timespec ts;
	int ready;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&d->lock);
	while (!d->nresults && (d->qlen || d->busy)) {
		if (pthread_cond_timedwait(&d->done, &d->lock, &ts) == ETIMEDOUT)
			break;
	}
	ready = d->nresults > 0;
	pthread_mutex_unlock(&d->lock);
	return ready;
}
