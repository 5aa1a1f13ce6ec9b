/* clickhouse.c: the HTTP client of the ClickHouse store backend (see clickhouse.h): URL
 * parsing, a pool of kept-alive libcurl handles, node fail-over and error classification. */
#include "store/clickhouse.h"
#include "store/timerange.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 64            /* idle handles kept */
#define ERROR_BODY_MAX 4096    /* bytes of an error answer kept for the message */

struct clickhouse {
	struct clickhouse_url u;
	char *base[CLICKHOUSE_MAX_NODES]; /* "http://host:port/?user=...&password=...&" */
	atomic_int preferred;             /* node that answered last */
	pthread_mutex_t lock;
	CURL *idle[POOL_MAX];
	int nidle;
};

/* ---- URL ---------------------------------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode [s, s+n) into a new string; NULL when malformed or holding a NUL. */
static char *pct_decode(const char *s, size_t n)
{
	char *out = xmalloc(n + 1);
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n) {
				xfree(out);
				return NULL;
			}
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				xfree(out);
				return NULL;
			}
			out[k++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[k++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	out[k] = '\0';
	return out;
}

static int valid_ident(const char *s)
{
	size_t i;

	if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return i <= 64;
}

void clickhouse_url_release(struct clickhouse_url *u)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; i < u->nnodes; i++)
		xfree(u->nodes[i]);
	xfree(u->database);
	xfree(u->user);
	xfree(u->password);
	xfree(u->cluster);
	memset(u, 0, sizeof(*u));
}

static int parse_node(const char *s, size_t n, struct clickhouse_url *u, struct errmsg *err)
{
	const char *colon;
	size_t hlen, i;
	unsigned long port = 8123;

	if (!n)
		return errmsg_set(err, -EINVAL, "empty host in the store URL");
	if (u->nnodes >= CLICKHOUSE_MAX_NODES)
		return errmsg_set(err, -EINVAL, "more than %d nodes in the store URL", CLICKHOUSE_MAX_NODES);
	colon = memrchr(s, ':', n);
	if (s[0] == '[') { /* [v6]:port */
		const char *close = memchr(s, ']', n);

		if (!close)
			return errmsg_set(err, -EINVAL, "bad IPv6 address '%.*s' in the store URL", (int)n, s);
		colon = (size_t)(close - s) + 1 < n && close[1] == ':' ? close + 1 : NULL;
	}
	hlen = colon ? (size_t)(colon - s) : n;
	if (colon) {
		char *end;

		if ((size_t)(colon - s) + 1 >= n)
			return errmsg_set(err, -EINVAL, "empty port in '%.*s'", (int)n, s);
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || end != s + n || port == 0 || port > 65535)
			return errmsg_set(err, -EINVAL, "bad port in '%.*s'", (int)n, s);
	}
	if (!hlen)
		return errmsg_set(err, -EINVAL, "empty host in '%.*s'", (int)n, s);
	for (i = 0; i < hlen; i++)
		if (s[i] == '/' || s[i] == '?' || s[i] == '@' || s[i] == ' ' || s[i] == '#')
			return errmsg_set(err, -EINVAL, "bad host '%.*s' in the store URL", (int)hlen, s);
	u->nodes[u->nnodes++] = xasprintf("%.*s:%lu", (int)hlen, s, port);
	return 0;
}

int clickhouse_url_parse(const char *url, struct clickhouse_url *u, struct errmsg *err)
{
	static const char scheme[] = "clickhouse://";
	const char *p, *hosts_end, *path_end, *q;
	int ret;

	memset(u, 0, sizeof(*u));
	u->timeout_ms = 10000;
	u->flush_ms = 100;
	if (!url || strncmp(url, scheme, sizeof(scheme) - 1))
		return errmsg_set(err, -EINVAL, "store URL must start with %s", scheme);
	p = url + sizeof(scheme) - 1;
	hosts_end = p + strcspn(p, "/?");
	while (p < hosts_end) {
		const char *comma = memchr(p, ',', (size_t)(hosts_end - p));
		const char *e = comma ? comma : hosts_end;

		ret = parse_node(p, (size_t)(e - p), u, err);
		if (ret < 0)
			goto fail;
		p = comma ? comma + 1 : hosts_end;
		if (comma && p == hosts_end) {
			ret = errmsg_set(err, -EINVAL, "empty host after ',' in the store URL");
			goto fail;
		}
	}
	if (!u->nnodes) {
		ret = errmsg_set(err, -EINVAL, "no host in the store URL");
		goto fail;
	}
	p = hosts_end;
	if (*p == '/')
		p++;
	path_end = p + strcspn(p, "?");
	u->database = path_end > p ? pct_decode(p, (size_t)(path_end - p)) : xstrdup("scorch");
	if (!u->database || !valid_ident(u->database)) {
		ret = errmsg_set(err, -EINVAL, "bad database name '%.*s' (letters, digits, '_')",
				 (int)(path_end - p), p);
		goto fail;
	}
	q = *path_end == '?' ? path_end + 1 : path_end;
	while (*q) {
		size_t n = strcspn(q, "&");
		const char *eq = memchr(q, '=', n);
		size_t klen = eq ? (size_t)(eq - q) : n;
		char *v = eq ? pct_decode(eq + 1, n - klen - 1) : xstrdup("");

		if (!v) {
			ret = errmsg_set(err, -EINVAL, "bad %%-escape in the store URL parameter '%.*s'",
					 (int)klen, q);
			goto fail;
		}
		if (klen == 4 && !memcmp(q, "user", 4)) {
			xfree(u->user);
			u->user = v;
		} else if (klen == 8 && !memcmp(q, "password", 8)) {
			xfree(u->password);
			u->password = v;
		} else if (klen == 7 && !memcmp(q, "cluster", 7)) {
			xfree(u->cluster);
			u->cluster = v;
			if (!valid_ident(v)) {
				ret = errmsg_set(err, -EINVAL, "bad cluster name '%s' (letters, digits, '_')", v);
				goto fail;
			}
		} else if (klen == 7 && !memcmp(q, "timeout", 7)) {
			int64_t sec = 0;
			struct errmsg e2;

			if (timerange_parse_duration(v, &sec, &e2) < 0 || sec < 1 || sec > 3600) {
				ret = errmsg_set(err, -EINVAL, "bad timeout '%s' in the store URL (1s..1h)", v);
				xfree(v);
				goto fail;
			}
			u->timeout_ms = (int)(sec * 1000);
			xfree(v);
		} else if (klen == 5 && !memcmp(q, "flush", 5)) {
			char *end;
			unsigned long ms;

			errno = 0;
			ms = strtoul(v, &end, 10);
			if (!strcmp(end, "s"))
				ms *= 1000;
			else if (strcmp(end, "ms") && *end)
				end = NULL;
			if (errno || !end || end == v || ms > 60000) {
				ret = errmsg_set(err, -EINVAL, "bad flush '%s' in the store URL (0ms..60s)", v);
				xfree(v);
				goto fail;
			}
			u->flush_ms = (int)ms;
			xfree(v);
		} else if (n) {
			ret = errmsg_set(err, -EINVAL, "unknown store URL parameter '%.*s' (user, password, "
					 "cluster, timeout, flush)", (int)klen, q);
			xfree(v);
			goto fail;
		} else {
			xfree(v);
		}
		q += n;
		if (*q == '&')
			q++;
	}
	if (u->nnodes > 1 && !u->cluster) {
		ret = errmsg_set(err, -EINVAL, "several nodes in the store URL need cluster=NAME");
		goto fail;
	}
	return 0;
fail:
	clickhouse_url_release(u);
	return ret;
}

/* ---- client --------------------------------------------------------------------------------- */

struct clickhouse *clickhouse_new(const struct clickhouse_url *u)
{
	struct clickhouse *c = xcalloc(1, sizeof(*c));
	CURL *esc = curl_easy_init();
	size_t i;

	c->u.nnodes = u->nnodes;
	for (i = 0; i < u->nnodes; i++)
		c->u.nodes[i] = xstrdup(u->nodes[i]);
	c->u.database = xstrdup(u->database);
	c->u.user = u->user ? xstrdup(u->user) : NULL;
	c->u.password = u->password ? xstrdup(u->password) : NULL;
	c->u.cluster = u->cluster ? xstrdup(u->cluster) : NULL;
	c->u.timeout_ms = u->timeout_ms;
	c->u.flush_ms = u->flush_ms;
	for (i = 0; i < u->nnodes; i++) {
		struct buf b = BUF_INIT(BUF_UNLIMITED);

		/* Every statement names its tables with the database: it may not exist yet. */
		buf_printf(&b, "http://%s/?", u->nodes[i]);
		if (u->user && esc) {
			char *e = curl_easy_escape(esc, u->user, 0);

			buf_printf(&b, "user=%s&", e ? e : "");
			curl_free(e);
		}
		if (u->password && esc) {
			char *e = curl_easy_escape(esc, u->password, 0);

			buf_printf(&b, "password=%s&", e ? e : "");
			curl_free(e);
		}
		c->base[i] = buf_detach(&b, NULL);
	}
	if (esc)
		curl_easy_cleanup(esc);
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void clickhouse_free(struct clickhouse *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < (size_t)c->nidle; i++)
		curl_easy_cleanup(c->idle[i]);
	for (i = 0; i < c->u.nnodes; i++)
		xfree(c->base[i]);
	clickhouse_url_release(&c->u);
	pthread_mutex_destroy(&c->lock);
	xfree(c);
}

size_t clickhouse_nodes(const struct clickhouse *c)
{
	return c->u.nnodes;
}

const char *clickhouse_node_name(const struct clickhouse *c, size_t i)
{
	return i < c->u.nnodes ? c->u.nodes[i] : "?";
}

static CURL *handle_get(struct clickhouse *c)
{
	CURL *h = NULL;

	pthread_mutex_lock(&c->lock);
	if (c->nidle)
		h = c->idle[--c->nidle];
	pthread_mutex_unlock(&c->lock);
	return h ? h : curl_easy_init();
}

static void handle_put(struct clickhouse *c, CURL *h)
{
	pthread_mutex_lock(&c->lock);
	if (c->nidle < POOL_MAX) {
		c->idle[c->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (h)
		curl_easy_cleanup(h);
}

struct sink {
	struct buf *out;
	struct buf err; /* the answer of a failed statement (bounded) */
	int failed;     /* HTTP status was not 200: collect into err */
	int too_big;
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;

	if (s->failed) {
		size_t room = ERROR_BODY_MAX > s->err.len ? ERROR_BODY_MAX - s->err.len : 0;

		buf_append(&s->err, data, len < room ? len : room);
		return len;
	}
	if (!s->out)
		return len;
	if (buf_append(s->out, data, len) < 0) {
		s->too_big = 1;
		return 0; /* aborts the transfer */
	}
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;

	/* The status line of the final answer decides where the body goes. */
	if (len > 9 && !memcmp(data, "HTTP/", 5)) {
		const char *sp = memchr(data, ' ', len);

		s->failed = !(sp && (size_t)(sp - data) + 4 <= len && !memcmp(sp + 1, "200", 3));
	}
	return len;
}

int clickhouse_error_class(const char *body, size_t len)
{
	static const int transient[] = {
		159, /* TIMEOUT_EXCEEDED */
		202, /* TOO_MANY_SIMULTANEOUS_QUERIES */
		203, /* NO_FREE_CONNECTION */
		209, /* SOCKET_TIMEOUT */
		210, /* NETWORK_ERROR */
		236, /* ABORTED */
		241, /* MEMORY_LIMIT_EXCEEDED */
		242, /* TABLE_IS_READ_ONLY */
		252, /* TOO_MANY_PARTS */
		279, /* ALL_CONNECTION_TRIES_FAILED */
		285, /* TOO_FEW_LIVE_REPLICAS */
		319, /* UNKNOWN_STATUS_OF_INSERT */
		394, /* QUERY_WAS_CANCELLED */
	};
	const char *p = len >= 6 ? memmem(body, len, "Code: ", 6) : NULL;
	long code = -1;
	size_t i;

	if (p) {
		p += 6;
		code = 0;
		while (p < body + len && *p >= '0' && *p <= '9' && code < 100000)
			code = code * 10 + (*p++ - '0');
	}
	for (i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		if (code == transient[i])
			return -EAGAIN;
	if (code == 192 || code == 193 || code == 194 || code == 195 || code == 516)
		return -EACCES;
	return -EIO;
}

/* One attempt on one node; *unsent = 1 when the request never reached it (no connection). */
static int exec_on(struct clickhouse *c, size_t node, const char *sql, const char *settings,
		   const void *data, size_t len, struct buf *out, int *unsent, struct errmsg *err)
{
	CURL *h = handle_get(c);
	struct sink sink = { out, BUF_INIT(ERROR_BODY_MAX + 1), 0, 0 };
	struct buf url = BUF_INIT(BUF_UNLIMITED);
	struct curl_slist *hdrs = NULL;
	size_t out_len0 = out ? out->len : 0;
	CURLcode rc;
	long status = 0;
	int ret = 0;

	if (!h)
		return errmsg_set(err, -ENOMEM, "cannot create an HTTP handle");
	buf_puts(&url, c->base[node]); /* ends in '?' or '&' */
	if (settings && *settings)
		buf_printf(&url, "%s&", settings);
	if (data) {
		char *e = curl_easy_escape(h, sql, 0);

		buf_printf(&url, "query=%s&", e ? e : "");
		curl_free(e);
	}
	url.data[--url.len] = '\0';
	curl_easy_reset(h);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(h, CURLOPT_URL, url.data);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, data ? data : sql);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(data ? len : strlen(sql)));
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->u.timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "scorch-server");
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	*unsent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
	if (sink.too_big) {
		ret = errmsg_set(err, -E2BIG, "answer of clickhouse at %s is larger than %zu bytes",
				 c->u.nodes[node], out->max);
	} else if (rc != CURLE_OK) {
		ret = errmsg_set(err, -EAGAIN, "clickhouse at %s: %s", c->u.nodes[node],
				 curl_easy_strerror(rc));
	} else if (status != 200) {
		size_t n = sink.err.len;

		while (n && (sink.err.data[n - 1] == '\n' || sink.err.data[n - 1] == '\r'))
			n--;
		ret = clickhouse_error_class(sink.err.data ? sink.err.data : "", n);
		errmsg_set(err, ret, "clickhouse at %s (HTTP %ld): %.*s", c->u.nodes[node], status,
			   (int)(n > 400 ? 400 : n), sink.err.data ? sink.err.data : "");
	}
	if (ret < 0 && out)
		out->len = out_len0;
	curl_slist_free_all(hdrs);
	buf_release(&url);
	buf_release(&sink.err);
	/* A handle whose transfer failed may hold a broken connection: do not reuse it. */
	if (rc == CURLE_OK)
		handle_put(c, h);
	else
		curl_easy_cleanup(h);
	return ret;
}

int clickhouse_exec(struct clickhouse *c, int node, const char *sql, const char *settings,
		    const void *data, size_t len, struct buf *out, struct errmsg *err)
{
	size_t n = c->u.nnodes, i, first;
	int ret = -EAGAIN, unsent = 0;

	if (node >= 0)
		return exec_on(c, (size_t)node % n, sql, settings, data, len, out, &unsent, err);
	first = (size_t)atomic_load(&c->preferred) % n;
	for (i = 0; i < n; i++) {
		size_t k = (first + i) % n;

		ret = exec_on(c, k, sql, settings, data, len, out, &unsent, err);
		if (ret == 0 && k != first)
			atomic_store(&c->preferred, (int)k);
		/* Another node may answer when this one is unreachable or busy; an error that
		 * ClickHouse reported for the statement itself would be the same everywhere. An
		 * insert is tried elsewhere only if it never left: one that timed out may have
		 * been stored, and the caller's retry must decide (it answers 503). */
		if (ret != -EAGAIN || (data && !unsent))
			return ret;
	}
	return ret;
}
