/* push.c: the background sender of the agent (see push.h): a mutex-protected FIFO, one
 * thread with one libcurl handle (connection reuse), exponential backoff. */
#include "agent/push.h"
#include "lib/alloc.h"
#include "lib/buf.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct request {
	struct request *next;
	char *path;
	char *content_type;
	char *body;
	size_t len;
};

struct pusher {
	struct pusher_opts opts;
	char *server;
	char *auth_header;
	char **headers;     /* copies of opts.headers */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct request *head, *tail;
	int stopping;
	struct timespec deadline; /* when stopping: give up after this */
	struct pusher_stats st;
	int failing;              /* delivery is failing (reported through on_state) */
	struct timespec fail_start;
	curl_socket_t sock;       /* the connection's socket (CURL_SOCKET_BAD when none) */
};

static void request_free(struct request *r)
{
	if (!r)
		return;
	xfree(r->path);
	xfree(r->content_type);
	xfree(r->body);
	xfree(r);
}

#define MAX_RESPONSE (64u << 10)

/* The answer's body: kept (up to MAX_RESPONSE) when someone wants it, else dropped. */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;

	if (b && b->len < MAX_RESPONSE)
		buf_append(b, ptr, n < MAX_RESPONSE - b->len ? n : MAX_RESPONSE - b->len);
	return n;
}

static int past(const struct timespec *t);

/* libcurl's progress callback: abort the request in flight once a stop's time is up. */
static int progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		    curl_off_t ulnow)
{
	struct pusher *p = arg;
	int stop;

	pthread_mutex_lock(&p->lock);
	stop = p->stopping && past(&p->deadline);
	pthread_mutex_unlock(&p->lock);
	return stop;
}

/* libcurl opens and closes the connection's socket through these, so that a stop can shut
 * it down: an answer that never comes then ends at once, not at the request's timeout. */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct pusher *p = arg;
	curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);

	pthread_mutex_lock(&p->lock);
	if (fd != CURL_SOCKET_BAD)
		p->sock = fd;
	pthread_mutex_unlock(&p->lock);
	return fd;
}

static int close_socket(void *arg, curl_socket_t fd)
{
	struct pusher *p = arg;

	pthread_mutex_lock(&p->lock);
	if (p->sock == fd)
		p->sock = CURL_SOCKET_BAD;
	close(fd);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static double seconds_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Delivery changed state: tell the caller once (called with the lock held; the callback
 * runs without it). */
static void report(struct pusher *p, int failing)
{
	struct pusher_stats st;

	if (p->failing == failing)
		return;
	p->failing = failing;
	if (failing) {
		clock_gettime(CLOCK_MONOTONIC, &p->fail_start);
		p->st.failing_seconds = 0;
	} else {
		p->st.failing_seconds = seconds_since(&p->fail_start);
	}
	st = p->st;
	if (!p->opts.on_state)
		return;
	pthread_mutex_unlock(&p->lock);
	p->opts.on_state(p->opts.on_state_arg, failing, &st);
	pthread_mutex_lock(&p->lock);
}

/* Returns the HTTP status, or -1 on a transport error (message in err). */
static long send_one(struct pusher *p, CURL *c, struct request *r, char *err, size_t errlen)
{
	struct curl_slist *hdrs = NULL;
	char *url = xasprintf("%s%s", p->server, r->path);
	char ct[256];
	long status = -1;
	CURLcode rc;

	struct buf answer = BUF_INIT(MAX_RESPONSE);
	size_t i;

	snprintf(ct, sizeof(ct), "Content-Type: %s",
		 r->content_type ? r->content_type : "application/octet-stream");
	hdrs = curl_slist_append(hdrs, ct);
	if (p->auth_header)
		hdrs = curl_slist_append(hdrs, p->auth_header);
	for (i = 0; i < p->opts.nheaders; i++)
		hdrs = curl_slist_append(hdrs, p->headers[i]);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)p->opts.timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, p->opts.on_response ? &answer : NULL);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "scorch-agent");
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, p);
	curl_easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
	curl_easy_setopt(c, CURLOPT_CLOSESOCKETDATA, p);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(err, errlen, "%s", curl_easy_strerror(rc));
	if (rc == CURLE_OK && p->opts.on_response)
		p->opts.on_response(p->opts.ctx, status, answer.data ? answer.data : "", answer.len);
	buf_release(&answer);
	curl_slist_free_all(hdrs);
	xfree(url);
	return status;
}

static int retryable(const struct pusher *p, long status)
{
	if (p->opts.otlp_retries)
		return status == 429 || status == 502 || status == 503 || status == 504;
	return status >= 500 || status == 408 || status == 429 || status < 400;
}

static int past(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static void *push_thread(void *arg)
{
	struct pusher *p = arg;
	CURL *c = curl_easy_init();
	int backoff_ms = 0, was_stopping;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct request *r;
		char err[160] = "";
		long status;

		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->head || (p->stopping && past(&p->deadline)))
			break;
		/* Take r out of the queue while it is in flight, so that a full queue can
		 * never free it under us; put it back at the front if it must be retried. */
		r = p->head;
		p->head = r->next;
		if (!p->head)
			p->tail = NULL;
		r->next = NULL;
		pthread_mutex_unlock(&p->lock);
		status = c ? send_one(p, c, r, err, sizeof(err)) : -1;
		pthread_mutex_lock(&p->lock);

		if (status >= 200 && status < 300) {
			p->st.sent++;
			p->st.sent_bytes += r->len;
			backoff_ms = 0;
			p->st.queued--;
			p->st.queued_bytes -= r->len;
			request_free(r);
			report(p, 0);
			p->st.failed_attempts = 0;
			continue;
		} else if (status > 0 && !retryable(p, status)) {
			p->st.rejected++;
			snprintf(p->st.last_error, sizeof(p->st.last_error),
				 "server rejected a profile with HTTP %ld", status);
			backoff_ms = 0;
		} else {
			struct timespec until;

			p->st.retries++;
			p->st.failed_attempts++;
			if (status > 0)
				snprintf(p->st.last_error, sizeof(p->st.last_error),
					 "server answered HTTP %ld", status);
			else
				snprintf(p->st.last_error, sizeof(p->st.last_error), "%s",
					 c ? err : "cannot initialize libcurl");
			/* libcurl's messages start with a capital: ours do not */
			p->st.last_error[0] = (char)tolower((unsigned char)p->st.last_error[0]);
			/* An attempt aborted by a stop is not news. */
			if (!(p->stopping && past(&p->deadline)))
				report(p, 1);
			backoff_ms = backoff_ms ? backoff_ms * 2 : 1000;
			if (backoff_ms > (p->stopping ? 1000 : 30000))
				backoff_ms = p->stopping ? 1000 : 30000;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += backoff_ms / 1000;
			until.tv_nsec += (long)(backoff_ms % 1000) * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			r->next = p->head;
			p->head = r;
			if (!p->tail)
				p->tail = r;
			if (p->stopping && past(&p->deadline))
				break;
			/* Back off, but a stop ends the wait: one more attempt (the flush) is made
			 * at once, and no wait outlasts the stop's deadline. */
			was_stopping = p->stopping;
			for (;;) {
				if (p->stopping && (until.tv_sec > p->deadline.tv_sec ||
						    (until.tv_sec == p->deadline.tv_sec &&
						     until.tv_nsec > p->deadline.tv_nsec)))
					until = p->deadline;
				if (pthread_cond_timedwait(&p->cond, &p->lock, &until) == ETIMEDOUT ||
				    (p->stopping && !was_stopping) || (p->stopping && past(&p->deadline)))
					break;
			}
			continue;
		}
		p->st.queued--;
		p->st.queued_bytes -= r->len;
		request_free(r);
	}
	pthread_mutex_unlock(&p->lock);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

static void free_headers(struct pusher *p)
{
	size_t i;

	for (i = 0; p->headers && i < p->opts.nheaders; i++)
		xfree(p->headers[i]);
	xfree(p->headers);
}

int pusher_start(const struct pusher_opts *opts, struct pusher **out, struct errmsg *err)
{
	struct pusher *p;
	size_t n;

	if (strncmp(opts->server_url, "http://", 7) && strncmp(opts->server_url, "https://", 8))
		return errmsg_set(err, -EINVAL, "server URL '%s' must start with http:// or https://",
				  opts->server_url);
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return errmsg_set(err, -ENOMEM, "cannot initialize libcurl");
	p = xcalloc(1, sizeof(*p));
	p->opts = *opts;
	if (!p->opts.max_queue_bytes)
		p->opts.max_queue_bytes = 16u << 20; /* thousands of profiles of a few KiB */
	if (p->opts.timeout_ms <= 0)
		p->opts.timeout_ms = 10000;
	p->server = xstrdup(opts->server_url);
	n = strlen(p->server);
	while (n && p->server[n - 1] == '/')
		p->server[--n] = '\0';
	if (opts->auth_token)
		p->auth_header = xasprintf("Authorization: Bearer %s", opts->auth_token);
	p->headers = xcalloc(opts->nheaders + 1, sizeof(*p->headers));
	for (n = 0; n < opts->nheaders; n++)
		p->headers[n] = xstrdup(opts->headers[n]);
	p->opts.headers = NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->sock = CURL_SOCKET_BAD;
	if (pthread_create(&p->thread, NULL, push_thread, p)) {
		free_headers(p);
		xfree(p->server);
		xfree(p->auth_header);
		xfree(p);
		return errmsg_set(err, -EAGAIN, "cannot start the push thread");
	}
	*out = p;
	return 0;
}

void pusher_enqueue(struct pusher *p, char *path_and_query, const char *content_type,
		    char *body, size_t len)
{
	struct request *r = xcalloc(1, sizeof(*r));

	r->path = path_and_query;
	r->content_type = content_type ? xstrdup(content_type) : NULL;
	r->body = body;
	r->len = len;
	pthread_mutex_lock(&p->lock);
	/* Drop the oldest queued requests to make room (the one in flight is not queued). */
	while (p->head && p->st.queued_bytes + len > p->opts.max_queue_bytes) {
		struct request *old = p->head;

		p->head = old->next;
		if (!p->head)
			p->tail = NULL;
		p->st.queued--;
		p->st.queued_bytes -= old->len;
		p->st.dropped++;
		request_free(old);
	}
	if (p->tail)
		p->tail->next = r;
	else
		p->head = r;
	p->tail = r;
	p->st.queued++;
	p->st.queued_bytes += len;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void pusher_get_stats(struct pusher *p, struct pusher_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
}

void pusher_stop(struct pusher *p, int flush_ms, struct pusher_stats *final)
{
	struct request *r;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	clock_gettime(CLOCK_REALTIME, &p->deadline);
	p->deadline.tv_sec += flush_ms / 1000;
	p->deadline.tv_nsec += (long)(flush_ms % 1000) * 1000000L;
	if (p->deadline.tv_nsec >= 1000000000L) {
		p->deadline.tv_sec++;
		p->deadline.tv_nsec -= 1000000000L;
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (pthread_timedjoin_np(p->thread, NULL, &p->deadline)) {
		/* Time is up and a request is still under way: end it now. */
		pthread_mutex_lock(&p->lock);
		if (p->sock != CURL_SOCKET_BAD)
			shutdown(p->sock, SHUT_RDWR);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	if (final)
		*final = p->st;
	while ((r = p->head)) {
		p->head = r->next;
		request_free(r);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free_headers(p);
	xfree(p->server);
	xfree(p->auth_header);
	xfree(p);
}
