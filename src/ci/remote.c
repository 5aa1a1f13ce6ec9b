/* remote.c: GET requests to a scorch server with libcurl, bounded answers, and the parsing of
 * its run list (see remote.h). */
#include "ci/remote.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/jsonread.h"
#include "profile/pprof.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct remote {
	CURL *curl;
	char *url;
	char *auth_header;
	long timeout_ms;
};

int remote_urlencode(struct buf *out, const char *s)
{
	int err = 0;

	for (; *s && !err; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || strchr("-._~", c))
			err = buf_putc(out, (char)c);
		else
			err = buf_printf(out, "%%%02X", c);
	}
	return err;
}

int remote_open(const struct remote_opts *o, struct remote **out, struct errmsg *err)
{
	struct remote *r;
	size_t n;

	*out = NULL;
	if (!o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)))
		return errmsg_set(err, -EINVAL, "server URL '%s' must start with http:// or https://",
				  o->url ? o->url : "");
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return errmsg_set(err, -ENOMEM, "cannot initialize libcurl");
	r = xcalloc(1, sizeof(*r));
	r->curl = curl_easy_init();
	if (!r->curl) {
		xfree(r);
		return errmsg_set(err, -ENOMEM, "cannot initialize libcurl");
	}
	r->url = xstrdup(o->url);
	n = strlen(r->url);
	while (n > 0 && r->url[n - 1] == '/')
		r->url[--n] = '\0';
	if (o->auth_token)
		r->auth_header = xasprintf("Authorization: Bearer %s", o->auth_token);
	r->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 60000;
	*out = r;
	return 0;
}

void remote_close(struct remote *r)
{
	if (!r)
		return;
	curl_easy_cleanup(r->curl);
	xfree(r->url);
	xfree(r->auth_header);
	xfree(r);
}

static size_t collect(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;

	return buf_append(b, data, n) < 0 ? 0 : n; /* 0 makes curl stop: answer too large */
}

/* GET url path_and_query into body (bounded by body->max); 2xx required. */
static int get(struct remote *r, const char *path_and_query, struct buf *body, struct errmsg *err)
{
	struct curl_slist *hdrs = NULL;
	char *url = xasprintf("%s%s", r->url, path_and_query);
	long status = 0;
	CURLcode rc;
	int ret = 0;

	if (r->auth_header)
		hdrs = curl_slist_append(hdrs, r->auth_header);
	curl_easy_reset(r->curl);
	curl_easy_setopt(r->curl, CURLOPT_URL, url);
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(r->curl, CURLOPT_USERAGENT, "scorch-diff");
	rc = curl_easy_perform(r->curl);
	if (rc == CURLE_WRITE_ERROR) {
		ret = errmsg_set(err, -E2BIG, "answer of %s%s larger than %zu MiB", r->url,
				 path_and_query, body->max >> 20);
		goto out;
	}
	if (rc != CURLE_OK) {
		ret = errmsg_set(err, -EIO, "cannot reach %s: %s", r->url, curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		struct json_value *j = NULL;
		const struct json_value *msg = NULL;
		struct errmsg jerr;

		if (body->len && jsonread_parse(body->data, body->len, 64, &j, &jerr) == 0)
			msg = jsonread_get(j, "error");
		ret = errmsg_set(err, status == 401 ? -EACCES : -EIO, "%s answered %ld%s%.200s", r->url,
				 status, msg && msg->type == JSON_STRING ? ": " : "",
				 msg && msg->type == JSON_STRING ? msg->str : "");
		jsonread_free(j);
	}
out:
	curl_slist_free_all(hdrs);
	xfree(url);
	return ret;
}

static int run_cmp(const void *x, const void *y)
{
	const struct remote_run *a = x, *b = y;

	if (a->last != b->last)
		return a->last > b->last ? -1 : 1;
	return -strcmp(a->id, b->id);
}

void remote_runs_free(struct remote_run *runs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		xfree(runs[i].id);
	xfree(runs);
}

static int num_of(const struct json_value *v, double *out)
{
	if (!v || v->type != JSON_NUMBER)
		return -1;
	*out = v->num;
	return 0;
}

int remote_parse_series(const char *json, size_t len, struct remote_run **runs, size_t *n,
			struct errmsg *err)
{
	struct json_value *root = NULL;
	const struct json_value *series;
	struct remote_run *out = NULL;
	size_t cap = 0, count = 0, i, k;
	double start, step;
	int rc;

	*runs = NULL;
	*n = 0;
	rc = jsonread_parse(json, len, 16u << 20, &root, err);
	if (rc < 0)
		return rc;
	series = jsonread_get(root, "series");
	if (num_of(jsonread_get(root, "start"), &start) || num_of(jsonread_get(root, "step"), &step) ||
	    !series || series->type != JSON_ARRAY || !(step > 0) || fabs(start) > 1e15 ||
	    step > 1e9) {
		jsonread_free(root);
		return errmsg_set(err, -EINVAL, "unexpected answer from /api/v1/series: no start, step "
				  "or series");
	}
	if (series->n > REMOTE_MAX_RUNS) {
		jsonread_free(root);
		return errmsg_set(err, -E2BIG, "more than %d runs in the selection: narrow it",
				  REMOTE_MAX_RUNS);
	}
	for (i = 0; i < series->n; i++) {
		const struct json_value *g = &series->items[i];
		const struct json_value *group = jsonread_get(g, "group");
		const struct json_value *values = jsonread_get(g, "values");
		struct remote_run *r;
		double total;
		int64_t first = -1, last = -1;

		if (!group || group->type != JSON_STRING || num_of(jsonread_get(g, "total"), &total) ||
		    !values || values->type != JSON_ARRAY) {
			remote_runs_free(out, count);
			jsonread_free(root);
			return errmsg_set(err, -EINVAL, "unexpected answer from /api/v1/series: series "
					  "%zu lacks group, total or values", i);
		}
		for (k = 0; k < values->n; k++) {
			if (values->items[k].type == JSON_NUMBER && values->items[k].num > 0) {
				if (first < 0)
					first = (int64_t)k;
				last = (int64_t)k;
			}
		}
		if (!(total > 0) || last < 0)
			continue;
		ALLOC_GROW(out, count + 1, cap);
		r = &out[count++];
		r->id = xstrndup(group->str, group->len);
		r->step = (int64_t)step;
		r->first = (int64_t)start + first * (int64_t)step;
		r->last = (int64_t)start + last * (int64_t)step;
		r->total = total;
	}
	jsonread_free(root);
	if (count)
		qsort(out, count, sizeof(*out), run_cmp);
	*runs = out;
	*n = count;
	return 0;
}

char *remote_selector_with(const char *selector, const char *label, const char *value)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	size_t len = strlen(selector), body;
	const char *v;

	while (len > 0 && isspace((unsigned char)selector[len - 1]))
		len--;
	if (len > 0 && selector[len - 1] == '}') {
		const char *open = memchr(selector, '{', len);

		body = len - 1;
		buf_append(&b, selector, body);
		/* a comma unless the braces are empty */
		if (open) {
			const char *q = open + 1;

			while (q < selector + body && isspace((unsigned char)*q))
				q++;
			if (q < selector + body)
				buf_putc(&b, ',');
		}
	} else {
		buf_append(&b, selector, len);
		buf_putc(&b, '{');
	}
	buf_printf(&b, "%s=\"", label);
	for (v = value; *v; v++) {
		if (*v == '"' || *v == '\\')
			buf_putc(&b, '\\');
		buf_putc(&b, *v);
	}
	buf_puts(&b, "\"}");
	return buf_detach(&b, NULL);
}

static void put_range(struct buf *q, const char *from, const char *until)
{
	if (from && *from) {
		buf_puts(q, "&from=");
		remote_urlencode(q, from);
	}
	if (until && *until) {
		buf_puts(q, "&until=");
		remote_urlencode(q, until);
	}
}

int remote_list_runs(struct remote *r, const char *selector, const char *run_label,
		     const char *from, const char *until, struct remote_run **runs, size_t *n,
		     struct errmsg *err)
{
	struct buf q = BUF_INIT(BUF_UNLIMITED), body = BUF_INIT(REMOTE_MAX_JSON);
	int rc;

	*runs = NULL;
	*n = 0;
	buf_puts(&q, "/api/v1/series?query=");
	remote_urlencode(&q, selector);
	buf_puts(&q, "&group_by=");
	remote_urlencode(&q, run_label);
	put_range(&q, from, until);
	rc = get(r, q.data, &body, err);
	if (rc == 0)
		rc = remote_parse_series(body.data, body.len, runs, n, err);
	buf_release(&q);
	buf_release(&body);
	return rc;
}

int remote_fetch(struct remote *r, const char *selector, const char *from, const char *until,
		 struct profile **out, struct errmsg *err)
{
	struct buf q = BUF_INIT(BUF_UNLIMITED), body = BUF_INIT(REMOTE_MAX_PROFILE);
	int rc;

	*out = NULL;
	buf_puts(&q, "/render?format=pprof&query=");
	remote_urlencode(&q, selector);
	put_range(&q, from, until);
	rc = get(r, q.data, &body, err);
	if (rc == 0) {
		struct decode_limits lim;

		/* A profile the server rendered: only its size is capped. */
		decode_limits_none(&lim);
		lim.max_inflated = (size_t)1 << 30;
		rc = pprof_decode(body.data, body.len, &lim, -1, out, err);
	}
	buf_release(&q);
	buf_release(&body);
	return rc;
}
