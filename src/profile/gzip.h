/* gzip.h: gzip compression into a struct buf, and bounded decompression of untrusted input
 * (zlib). Used by the pprof codec and for reading profiles of any format. */
#ifndef SCORCH_GZIP_H
#define SCORCH_GZIP_H

#include "lib/buf.h"
#include "lib/log.h"

#include <stddef.h>

/* Does data start with the gzip magic (1f 8b)? */
int gzip_is(const void *data, size_t len);

/* Append the gzip compression of data to out. Returns 0, -E2BIG past out->max (out is then as
 * it was) or -ENOMEM. */
int gzip_compress(const void *data, size_t len, int level, struct buf *out);

/* Append the decompression of a gzip stream (concatenated members allowed) to out, at most max
 * bytes. Returns 0 or a negative errno with a message in err: -E2BIG when the output would pass
 * max, -EBADMSG when the stream is corrupt, truncated or followed by anything but another
 * member. */
int gzip_decompress(const void *data, size_t len, size_t max, struct buf *out, struct errmsg *err);

#endif
