/* http_parse.c: HTTP/1.x request heads, query arguments and chunked bodies from hostile bytes
 * (see http_parse.h). The connection handling around it is http.c. */
#include "server/http_parse.h"
#include "lib/alloc.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* tchar of RFC 9110: the characters of a method or a header name. */
static int is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A byte of a request target: visible ASCII, or obs-text (clients do send raw UTF-8). */
static int is_target(unsigned char c)
{
	return c > 0x20 && c != 0x7f;
}

/* A byte of a header value: visible, space, tab or obs-text. */
static int is_value(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

enum { RL_LEAD, RL_METHOD, RL_TARGET0, RL_TARGET, RL_VERSION, RL_CR, RL_DONE };

int http_head_scan(struct http_head_scan *s, const char *buf, size_t len)
{
	static const char version[] = "HTTP/d.d";
	size_t i = s->pos;

	for (; i < len && s->state != RL_DONE; i++) {
		unsigned char c = (unsigned char)buf[i];

		switch (s->state) {
		case RL_LEAD:
			if (c == '\r' || c == '\n')
				break;
			s->state = RL_METHOD;
			s->n = 0;
			/* fall through */
		case RL_METHOD:
			if (c == ' ' && s->n > 0) {
				s->state = RL_TARGET0;
				break;
			}
			if (!is_tchar(c) || ++s->n > HTTP_MAX_METHOD)
				return -EBADMSG;
			break;
		case RL_TARGET0:
		case RL_TARGET:
			if (c == ' ' && s->state == RL_TARGET) {
				s->state = RL_VERSION;
				s->n = 0;
				break;
			}
			if (!is_target(c))
				return -EBADMSG;
			s->state = RL_TARGET;
			break;
		case RL_VERSION:
			if (s->n == sizeof(version) - 1) {
				if (c == '\n') {
					s->state = RL_DONE;
					s->rl_end = i;
					break;
				}
				if (c != '\r')
					return -EBADMSG;
				s->state = RL_CR;
				break;
			}
			if (version[s->n] == 'd' ? !(c >= '0' && c <= '9') : c != (unsigned char)version[s->n])
				return -EBADMSG;
			s->n++;
			break;
		case RL_CR:
			if (c != '\n')
				return -EBADMSG;
			s->state = RL_DONE;
			s->rl_end = i;
			break;
		}
	}
	/* The end of the head: an empty line after the request line. Rescan a few bytes back, a
	 * line end may have been split between reads. */
	if (s->state == RL_DONE && !s->end) {
		size_t j = s->pos > 3 ? s->pos - 3 : 0;

		if (j < s->rl_end)
			j = s->rl_end;
		for (; j < len; j++) {
			if (buf[j] != '\n')
				continue;
			if (j + 1 < len && buf[j + 1] == '\n') {
				s->end = j + 2;
				break;
			}
			if (j + 2 < len && buf[j + 1] == '\r' && buf[j + 2] == '\n') {
				s->end = j + 3;
				break;
			}
		}
	}
	s->pos = len;
	return 0;
}

static int head_error(struct errmsg *err, int *status, int code, const char *what)
{
	*status = code;
	return errmsg_set(err, -EBADMSG, "%s", what);
}

/* Does the comma-separated header value list contain token (case-insensitive)? */
static int has_token(const char *list, const char *token)
{
	size_t n = strlen(token);
	const char *p = list;

	while (*p) {
		const char *e;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		e = p;
		while (*e && *e != ',')
			e++;
		{
			const char *t = e;

			while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
				t--;
			if ((size_t)(t - p) == n && !strncasecmp(p, token, n))
				return 1;
		}
		p = e;
	}
	return 0;
}

/* Split one line (terminated by LF, maybe CR LF) starting at *pp; returns its start, NUL-
 * terminates it, moves *pp past the line end. NULL on a bare CR inside. */
static char *take_line(char **pp, char *end, int *bad)
{
	char *p = *pp, *line = p, *nl = memchr(p, '\n', (size_t)(end - p));

	*bad = 0;
	if (!nl)
		return NULL;
	*pp = nl + 1;
	if (nl > line && nl[-1] == '\r')
		nl--;
	*nl = '\0';
	if (memchr(line, '\r', (size_t)(nl - line)))
		*bad = 1;
	return line;
}

static int parse_length(const char *v, uint64_t *out)
{
	uint64_t n = 0;

	if (!*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || n > ((1ULL << 53) - 10) / 10)
			return -1;
		n = n * 10 + (uint64_t)(*v - '0');
	}
	*out = n;
	return 0;
}

int http_head_parse(char *buf, size_t len, struct http_head *h, int *status, struct errmsg *err)
{
	char *p = buf, *end = buf + len, *line, *sp, *q;
	const char *te = NULL, *conn, *expect;
	size_t i;
	int bad;

	memset(h, 0, sizeof(*h));
	*status = 400;
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	line = take_line(&p, end, &bad);
	if (!line || bad)
		return head_error(err, status, 400, "malformed request line");
	/* METHOD SP TARGET SP HTTP/1.x, already checked byte by byte by http_head_scan(). */
	sp = strchr(line, ' ');
	if (!sp || sp == line)
		return head_error(err, status, 400, "malformed request line");
	*sp = '\0';
	h->method = line;
	h->target = sp + 1;
	sp = strchr(sp + 1, ' ');
	if (!sp || sp == h->target)
		return head_error(err, status, 400, "malformed request line");
	*sp = '\0';
	for (i = 0; line[i]; i++)
		if (!is_tchar((unsigned char)line[i]))
			return head_error(err, status, 400, "malformed method");
	for (q = (char *)h->target; *q; q++)
		if (!is_target((unsigned char)*q))
			return head_error(err, status, 400, "malformed request target");
	if (strncmp(sp + 1, "HTTP/", 5) || !(sp[6] >= '0' && sp[6] <= '9') || sp[7] != '.' ||
	    !(sp[8] >= '0' && sp[8] <= '9') || sp[9])
		return head_error(err, status, 400, "malformed HTTP version");
	if (sp[6] != '1')
		return head_error(err, status, 505, "HTTP version not supported (want HTTP/1.x)");
	h->minor = sp[8] - '0';
	if (h->target[0] != '/' && strcmp(h->target, "*"))
		return head_error(err, status, 400, "request target must start with '/'");
	/* The path is copied next to nothing: split the target in place after the version is
	 * known (the target string stays whole for messages until then). */
	for (;;) {
		char *colon, *v, *e;

		if (p >= end)
			return head_error(err, status, 400, "head without an empty line");
		line = take_line(&p, end, &bad);
		if (!line || bad)
			return head_error(err, status, 400, "malformed header line");
		if (!*line)
			break;
		if (*line == ' ' || *line == '\t')
			return head_error(err, status, 400, "obsolete header line folding");
		colon = strchr(line, ':');
		if (!colon || colon == line)
			return head_error(err, status, 400, "malformed header line");
		for (q = line; q < colon; q++)
			if (!is_tchar((unsigned char)*q))
				return head_error(err, status, 400, "malformed header name");
		*colon = '\0';
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		e = v + strlen(v);
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		*e = '\0';
		for (q = v; q < e; q++)
			if (!is_value((unsigned char)*q))
				return head_error(err, status, 400, "control character in a header value");
		if (h->nheaders >= HTTP_MAX_HEADERS)
			return head_error(err, status, 431, "too many header fields");
		h->headers[h->nheaders].name = line;
		h->headers[h->nheaders].value = v;
		h->nheaders++;
		if (!strcasecmp(line, "Content-Length")) {
			uint64_t n;

			if (parse_length(v, &n) < 0)
				return head_error(err, status, 400, "bad Content-Length");
			if (h->has_length && n != h->content_length)
				return head_error(err, status, 400, "conflicting Content-Length headers");
			h->content_length = n;
			h->has_length = 1;
		} else if (!strcasecmp(line, "Transfer-Encoding")) {
			if (te)
				return head_error(err, status, 501, "more than one Transfer-Encoding");
			te = v;
		}
	}
	if (te) {
		if (strcasecmp(te, "chunked"))
			return head_error(err, status, 501, "transfer coding not supported (only chunked)");
		if (h->has_length)
			return head_error(err, status, 400, "both Content-Length and Transfer-Encoding");
		if (h->minor == 0)
			return head_error(err, status, 400, "chunked coding in HTTP/1.0");
		h->chunked = 1;
	}
	conn = http_head_get(h, "Connection");
	h->keep_alive = h->minor >= 1 ? !(conn && has_token(conn, "close")) :
			(conn && has_token(conn, "keep-alive"));
	expect = http_head_get(h, "Expect");
	if (expect) {
		if (strcasecmp(expect, "100-continue"))
			return head_error(err, status, 417, "unsupported expectation");
		h->expect_continue = h->minor >= 1;
	}
	/* Path and query: split at '?', the path percent-decoded. */
	q = strchr((char *)h->target, '?');
	if (q) {
		h->query = q + 1;
		*q = '\0'; /* target now holds the path only, query stays after it */
	} else {
		h->query = "";
	}
	h->path = (char *)h->target;
	http_percent_decode(h->path);
	*status = 0;
	return 0;
}

const char *http_head_get(const struct http_head *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->nheaders; i++)
		if (!strcasecmp(h->headers[i].name, name))
			return h->headers[i].value;
	return NULL;
}

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

void http_percent_decode(char *s)
{
	char *w = s;

	for (; *s; s++) {
		int a, b;

		if (*s == '%' && (a = hexval(s[1])) >= 0 && (b = hexval(s[2])) >= 0) {
			*w++ = (char)(a * 16 + b);
			s += 2;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

int http_args_parse(const char *query, struct http_args *a)
{
	size_t len = strlen(query), i;
	char *p;

	memset(a, 0, sizeof(*a));
	a->mem = try_malloc(len + 2);
	if (!a->mem)
		return -ENOMEM;
	memcpy(a->mem, query, len + 1);
	p = a->mem;
	while (*p && a->n < HTTP_MAX_ARGS) {
		char *amp = strchr(p, '&'), *eq, *next = amp ? amp + 1 : p + strlen(p);

		if (amp)
			*amp = '\0';
		if (*p) {
			eq = strchr(p, '=');
			if (eq)
				*eq = '\0';
			/* '+' is a space in a query string (form encoding), before escapes. */
			for (i = 0; p[i]; i++)
				if (p[i] == '+')
					p[i] = ' ';
			for (i = 0; eq && eq[1 + i]; i++)
				if (eq[1 + i] == '+')
					eq[1 + i] = ' ';
			http_percent_decode(p);
			if (eq)
				http_percent_decode(eq + 1);
			a->kv[2 * a->n] = p;
			a->kv[2 * a->n + 1] = eq ? eq + 1 : p + strlen(p);
			a->n++;
		}
		p = next;
	}
	return 0;
}

const char *http_args_get(const struct http_args *a, const char *key)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (!strcmp(a->kv[2 * i], key))
			return a->kv[2 * i + 1];
	return NULL;
}

void http_args_release(struct http_args *a)
{
	xfree(a->mem);
	memset(a, 0, sizeof(*a));
}

/* ---- chunked transfer coding ----------------------------------------------------------------- */

enum {
	CH_SIZE,      /* hex digits of the chunk size */
	CH_EXT,       /* chunk extension, up to LF */
	CH_DATA,
	CH_DATA_CR,   /* CR LF after the data */
	CH_DATA_LF,
	CH_TRAILER,   /* start of a trailer line (or the final empty line) */
	CH_TRAILER_LINE,
	CH_FINAL_LF,  /* CR seen at the start of the final line */
	CH_DONE,
};

#define CH_MAX_LINE 4096         /* bytes of a size line or of one trailer line */
#define CH_MAX_TRAILERS (16u << 10) /* bytes of all trailers */

ssize_t http_chunked_feed(struct http_chunked *c, const char *in, size_t len, struct buf *out,
			  int *done)
{
	size_t i = 0;
	int err;

	*done = c->state == CH_DONE;
	while (i < len && c->state != CH_DONE) {
		unsigned char ch = (unsigned char)in[i];
		int v;

		switch (c->state) {
		case CH_SIZE:
			v = hexval((char)ch);
			if (v >= 0) {
				if (c->linelen >= 15) /* 15 hex digits: sizes below 2^60 */
					return -EBADMSG;
				c->left = c->left * 16 + (uint64_t)v;
				c->linelen++;
				i++;
				break;
			}
			if (!c->linelen)
				return -EBADMSG;
			c->state = CH_EXT;
			break;
		case CH_EXT:
			i++;
			if (ch == '\n') {
				c->linelen = 0;
				c->state = c->left ? CH_DATA : CH_TRAILER;
				break;
			}
			if (++c->linelen > CH_MAX_LINE || (ch < 0x20 && ch != '\t' && ch != '\r'))
				return -EBADMSG;
			break;
		case CH_DATA: {
			size_t n = len - i < c->left ? len - i : (size_t)c->left;

			err = buf_append(out, in + i, n);
			if (err)
				return err;
			i += n;
			c->left -= n;
			if (!c->left)
				c->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
			i++;
			if (ch == '\n') {
				c->state = CH_SIZE;
				break;
			}
			if (ch != '\r')
				return -EBADMSG;
			c->state = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			i++;
			if (ch != '\n')
				return -EBADMSG;
			c->state = CH_SIZE;
			break;
		case CH_TRAILER:
			i++;
			if (ch == '\n') {
				c->state = CH_DONE;
				break;
			}
			if (ch == '\r') {
				c->state = CH_FINAL_LF;
				break;
			}
			c->linelen = 1;
			c->trailers++;
			c->state = CH_TRAILER_LINE;
			break;
		case CH_FINAL_LF:
			i++;
			if (ch != '\n')
				return -EBADMSG;
			c->state = CH_DONE;
			break;
		case CH_TRAILER_LINE:
			i++;
			if (++c->trailers > CH_MAX_TRAILERS || ++c->linelen > CH_MAX_LINE)
				return -EBADMSG;
			if (ch == '\n')
				c->state = CH_TRAILER;
			break;
		}
	}
	*done = c->state == CH_DONE;
	return (ssize_t)i;
}
