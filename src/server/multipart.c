/* multipart.c: bounded multipart/form-data parsing (see multipart.h). Delimiters are found with
 * memmem and accepted only at the start of a line; line ends may be CRLF or bare LF. */
#include "server/multipart.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

static int ieq_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !strncasecmp(s, prefix, n);
}

int multipart_boundary(const char *content_type, char *out, size_t outlen, struct errmsg *err)
{
	const char *p, *v, *end;
	size_t n;

	if (!content_type || !ieq_prefix(content_type, strlen(content_type), "multipart/form-data"))
		return errmsg_set(err, -EINVAL, "content type is not multipart/form-data");
	p = content_type + strlen("multipart/form-data");
	for (;;) {
		p = strchr(p, ';');
		if (!p)
			return errmsg_set(err, -EINVAL, "multipart content type without a boundary");
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncasecmp(p, "boundary=", 9))
			break;
	}
	v = p + 9;
	if (*v == '"') {
		v++;
		end = strchr(v, '"');
		if (!end)
			return errmsg_set(err, -EINVAL, "unterminated quoted multipart boundary");
	} else {
		end = v;
		while (*end && *end != ';' && *end != ' ' && *end != '\t')
			end++;
	}
	n = (size_t)(end - v);
	if (n == 0 || n > MULTIPART_MAX_BOUNDARY || n >= outlen)
		return errmsg_set(err, -EINVAL, "multipart boundary empty or longer than %d bytes",
				  MULTIPART_MAX_BOUNDARY);
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* The next delimiter line at or after p: "--boundary" at the start of the body or right after
 * a '\n'. Returns its position or NULL. */
static const char *find_delim(const char *body, const char *p, const char *end, const char *delim,
			      size_t dlen)
{
	while (p < end) {
		const char *q = memmem(p, (size_t)(end - p), delim, dlen);

		if (!q)
			return NULL;
		if (q == body || q[-1] == '\n')
			return q;
		p = q + 1;
	}
	return NULL;
}

/* Parse a Content-Disposition header value for name= and filename= parameters. */
static void parse_disposition(const char *v, const char *end, struct multipart_part *part)
{
	const char *p = v;

	while (p < end) {
		const char *key, *val, *vend;
		size_t klen;

		while (p < end && *p != ';')
			p++;
		if (p >= end)
			break;
		p++;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		key = p;
		while (p < end && *p != '=' && *p != ';')
			p++;
		if (p >= end || *p != '=')
			continue;
		klen = (size_t)(p - key);
		p++;
		if (p < end && *p == '"') {
			val = ++p;
			while (p < end && *p != '"') {
				if (*p == '\\' && p + 1 < end)
					p++;
				p++;
			}
			vend = p;
			if (p < end)
				p++;
		} else {
			val = p;
			while (p < end && *p != ';' && *p != ' ' && *p != '\t')
				p++;
			vend = p;
		}
		if (klen == 4 && !strncasecmp(key, "name", 4)) {
			part->name = val;
			part->name_len = (size_t)(vend - val);
		} else if (klen == 8 && !strncasecmp(key, "filename", 8)) {
			part->filename = val;
			part->filename_len = (size_t)(vend - val);
		}
	}
}

int multipart_each(const char *body, size_t len, const char *boundary,
		   int (*fn)(void *arg, const struct multipart_part *part), void *arg,
		   struct errmsg *err)
{
	char delim[MULTIPART_MAX_BOUNDARY + 3];
	const char *end = body + len, *p, *q;
	size_t blen = strlen(boundary), dlen;
	int nparts = 0;

	if (blen == 0 || blen > MULTIPART_MAX_BOUNDARY)
		return errmsg_set(err, -EINVAL, "bad multipart boundary length");
	delim[0] = '-';
	delim[1] = '-';
	memcpy(delim + 2, boundary, blen);
	dlen = blen + 2;
	delim[dlen] = '\0';

	p = find_delim(body, body, end, delim, dlen);
	if (!p)
		return errmsg_set(err, -EINVAL, "multipart body without the boundary");
	for (;;) {
		struct multipart_part part;
		const char *hstart, *dend;
		int rc;

		p += dlen;
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return 0; /* closing delimiter; an epilogue may follow */
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && *p == '\r')
			p++;
		if (p >= end || *p != '\n')
			return errmsg_set(err, -EINVAL, "multipart delimiter not followed by a line end");
		p++;
		if (++nparts > MULTIPART_MAX_PARTS)
			return errmsg_set(err, -EINVAL, "more than %d multipart parts",
					  MULTIPART_MAX_PARTS);

		memset(&part, 0, sizeof(part));
		part.name = "";
		hstart = p;
		/* Header lines up to an empty line. */
		for (;;) {
			const char *nl, *lend;

			if (p - hstart > MULTIPART_MAX_HEADER)
				return errmsg_set(err, -EINVAL, "multipart part headers longer than %d bytes",
						  MULTIPART_MAX_HEADER);
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl)
				return errmsg_set(err, -EINVAL, "unterminated multipart part headers");
			lend = nl;
			if (lend > p && lend[-1] == '\r')
				lend--;
			if (lend == p) {
				p = nl + 1;
				break;
			}
			if (ieq_prefix(p, (size_t)(lend - p), "content-disposition:"))
				parse_disposition(p + 20, lend, &part);
			p = nl + 1;
		}
		if (p - hstart > MULTIPART_MAX_HEADER)
			return errmsg_set(err, -EINVAL, "multipart part headers longer than %d bytes",
					  MULTIPART_MAX_HEADER);
		q = find_delim(body, p, end, delim, dlen);
		if (!q)
			return errmsg_set(err, -EINVAL, "multipart part without a closing boundary");
		/* The line end before the delimiter belongs to the delimiter. */
		dend = q;
		if (dend > p && dend[-1] == '\n')
			dend--;
		if (dend > p && dend[-1] == '\r')
			dend--;
		part.data = p;
		part.len = (size_t)(dend - p);
		rc = fn(arg, &part);
		if (rc)
			return rc;
		p = q;
	}
}

struct find_ctx {
	const char *name;
	struct multipart_part *out;
};

static int find_cb(void *arg, const struct multipart_part *part)
{
	struct find_ctx *c = arg;
	size_t n = strlen(c->name);

	if (part->name_len == n && !memcmp(part->name, c->name, n)) {
		*c->out = *part;
		return 1;
	}
	return 0;
}

int multipart_find(const char *body, size_t len, const char *boundary, const char *name,
		   struct multipart_part *part, struct errmsg *err)
{
	struct find_ctx c = { name, part };
	int rc = multipart_each(body, len, boundary, find_cb, &c, err);

	if (rc == 1)
		return 0;
	if (rc == 0)
		return errmsg_set(err, -ENOENT, "multipart body has no part named '%s'", name);
	return rc;
}
