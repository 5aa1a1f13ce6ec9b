/* pprof.h: pprof (profile.proto) encoding and decoding with a small hand-written protobuf
 * codec. Encoded output is gzip-compressed; the decoder accepts gzip or raw protobuf.
 *
 * The decoder treats its input as hostile: every length is bounds-checked, sizes are capped,
 * and on error it returns a negative errno with a message in err and no profile. */
#ifndef SCORCH_PPROF_H
#define SCORCH_PPROF_H

#include "lib/buf.h"
#include "lib/log.h"
#include "profile/profile.h"

/* Append the gzip-compressed pprof encoding of p to out. Returns 0 or a negative errno. */
int pprof_encode(const struct profile *p, struct buf *out);
/* Same, without compression. */
int pprof_encode_raw(const struct profile *p, struct buf *out);

/* Decode data (gzip or raw protobuf; at most max_uncompressed bytes after inflation) into a new
 * profile. Only the first sample value is kept unless sample_index >= 0 selects another.
 * On success *out owns a new profile (profile_free()). */
int pprof_decode(const void *data, size_t len, size_t max_uncompressed, int sample_index,
		 struct profile **out, struct errmsg *err);

#endif
