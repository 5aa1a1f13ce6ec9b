/* http_parse.h: parsing of HTTP/1.x requests for `scorch server` (http.c drives it): the
 * request head, query-string arguments and the chunked transfer coding. Everything here reads
 * bytes from the network and treats them as hostile: every length is bounded, nothing is
 * allocated except the argument table, and the first byte that cannot belong to a request is
 * an error (so garbage is answered at once, not when a newline happens to arrive).
 *
 * Accepted (RFC 9112): optional empty lines, then METHOD SP TARGET SP HTTP/1.x, header lines
 * "Name: value" (token names, visible or obs-text values; CRLF or bare LF line ends), an
 * empty line. Refused with a status: malformed syntax, line folding, bare CR, control bytes,
 * Content-Length together with Transfer-Encoding, differing Content-Length values (400); a
 * transfer coding other than chunked (501); an expectation other than 100-continue (417); a
 * version other than 1.0/1.1 (505); more than HTTP_MAX_HEADERS headers (431). */
#ifndef SCORCH_HTTP_PARSE_H
#define SCORCH_HTTP_PARSE_H

#include "lib/buf.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_MAX_HEADERS 100
#define HTTP_MAX_METHOD  16
#define HTTP_MAX_ARGS    256

struct http_header_field {
	const char *name;  /* as sent (compare case-insensitively) */
	const char *value; /* without surrounding whitespace */
};

/* A parsed request head. Every pointer is into the buffer given to http_head_parse(), which
 * must outlive the struct. */
struct http_head {
	const char *method;
	const char *target;   /* as sent: path and query */
	char *path;           /* percent-decoded path (without the query) */
	const char *query;    /* raw query string after '?' ("" when none) */
	int minor;            /* HTTP/1.<minor> */
	struct http_header_field headers[HTTP_MAX_HEADERS];
	size_t nheaders;
	/* Derived from the headers. */
	uint64_t content_length; /* valid when has_length */
	int has_length;
	int chunked;
	int keep_alive;       /* the connection may serve another request */
	int expect_continue;  /* "Expect: 100-continue" */
};

/* Incremental checks while a head arrives; zero-initialize for each request. */
struct http_head_scan {
	size_t pos;     /* bytes checked */
	int state;      /* in the request line */
	unsigned n;     /* bytes of the current request-line element */
	size_t rl_end;  /* offset of the LF that ends the request line */
	size_t end;     /* length of the head once found (0 before) */
};

/* Feed the head received so far, buf[0..len) (the same buffer, growing): checks the new bytes
 * of the request line and looks for the end of the head. Returns 0 while the bytes can still
 * be the start of a request (s->end is set once the empty line arrived), -EBADMSG at the first
 * byte that cannot: a control byte or a space where the request line has none, a method that
 * is not a token, a version that is not HTTP/x.y. Cost linear in the new bytes. */
int http_head_scan(struct http_head_scan *s, const char *buf, size_t len);

/* Parse the complete head buf[0..len) (len from http_head_scan()) in place: NULs are written
 * into buf. Returns 0, or -EBADMSG with *status set (400, 417, 431, 501, 505) and a message. */
int http_head_parse(char *buf, size_t len, struct http_head *h, int *status, struct errmsg *err);

/* The value of header name (case-insensitive; the first one), or NULL. */
const char *http_head_get(const struct http_head *h, const char *name);

/* Query-string arguments, decoded ("+" is a space, %XX escapes; a bad escape stays as sent).
 * The table owns one allocation; http_args_release() frees it. */
struct http_args {
	char *mem;
	const char *kv[2 * HTTP_MAX_ARGS]; /* name, value, name, value, ... */
	size_t n;                          /* pairs */
};
/* Parse query (at most HTTP_MAX_ARGS arguments; more are ignored). Returns 0 or -ENOMEM. */
int http_args_parse(const char *query, struct http_args *a);
/* The value of the first argument named key ("" for "?key"), or NULL. */
const char *http_args_get(const struct http_args *a, const char *key);
void http_args_release(struct http_args *a);

/* Decode %XX escapes of s in place (a bad escape stays as it is); '+' is kept. */
void http_percent_decode(char *s);

/* The chunked transfer coding, decoded incrementally into a buffer. */
struct http_chunked {
	int state;
	uint64_t left;    /* bytes left in the current chunk */
	size_t linelen;   /* bytes of the current size or trailer line */
	size_t trailers;  /* bytes of trailers */
};
/* Feed in[0..len): chunk data is appended to out (up to out->max). Returns the number of
 * bytes of in consumed (all of them unless the body ended inside in), and sets *done when the
 * last chunk and the trailers are complete. Errors: -EBADMSG malformed, -E2BIG when out would
 * pass its maximum, -ENOMEM. */
ssize_t http_chunked_feed(struct http_chunked *c, const char *in, size_t len, struct buf *out,
			  int *done);

#endif
