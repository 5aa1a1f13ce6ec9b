/* multipart.h: a small, bounded parser for multipart/form-data request bodies (RFC 7578), as
 * Pyroscope clients send pprof uploads (the profile in the field named "profile").
 *
 * The parser never copies: parts point into the caller's body, which must outlive them. Input
 * is hostile: at most MULTIPART_MAX_PARTS parts and MULTIPART_MAX_HEADER bytes of headers per
 * part; every malformed body gives -EINVAL with a message, never a crash. */
#ifndef SCORCH_MULTIPART_H
#define SCORCH_MULTIPART_H

#include "lib/log.h"

#include <stddef.h>

#define MULTIPART_MAX_BOUNDARY 70
#define MULTIPART_MAX_PARTS 64
#define MULTIPART_MAX_HEADER 8192

struct multipart_part {
	const char *name;     /* form field name (not NUL-terminated), may be empty */
	size_t name_len;
	const char *filename; /* or NULL */
	size_t filename_len;
	const char *data;     /* the part's content */
	size_t len;
};

/* Extract the boundary parameter of a Content-Type value such as
 * `multipart/form-data; boundary=xyz` into out (NUL-terminated). Returns 0, or -EINVAL when
 * the type is not multipart/form-data or the boundary is missing, empty or too long. */
int multipart_boundary(const char *content_type, char *out, size_t outlen, struct errmsg *err);

/* Parse body and find the part whose field name is name. Returns 0 and fills *part when found,
 * -ENOENT when the body is well-formed but has no such part, -EINVAL on a malformed body. */
int multipart_find(const char *body, size_t len, const char *boundary, const char *name,
		   struct multipart_part *part, struct errmsg *err);

/* Call fn for every part in order, stopping early when fn returns non-zero (that value is then
 * returned). Returns 0 after the closing delimiter, -EINVAL on a malformed body. */
int multipart_each(const char *body, size_t len, const char *boundary,
		   int (*fn)(void *arg, const struct multipart_part *part), void *arg,
		   struct errmsg *err);

#endif
