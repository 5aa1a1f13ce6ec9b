/* protobuf.h: a minimal protocol buffers wire-format codec, enough for profile.proto (pprof) and
 * other small schemas: a bounds-checked reader over a byte range and a writer into a struct buf.
 *
 * Reader: never reads outside [p, end); every length is checked against what is left; groups
 * (wire types 3 and 4) and field number 0 are errors. Nothing is allocated: length-delimited
 * fields are returned as pointers into the input.
 *
 *     struct protobuf_reader r = PROTOBUF_READER(data, len);
 *     struct protobuf_field f;
 *     int rc;
 *     while ((rc = protobuf_next(&r, &f)) > 0) { switch (f.num) { ... } }
 *     if (rc < 0) ...malformed...
 *
 * Writer: appends to a struct buf; the first failure (e.g. the buf's maximum) sticks in w->err
 * and later calls do nothing, so an encoder checks once at the end. Nested messages are written
 * in place: protobuf_begin() reserves one length byte, protobuf_end() fixes the length and moves
 * the body only when it is 128 bytes or longer (rare for profile.proto's small messages). */
#ifndef SCORCH_PROTOBUF_H
#define SCORCH_PROTOBUF_H

#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

enum protobuf_wire {
	PROTOBUF_VARINT = 0,
	PROTOBUF_FIXED64 = 1,
	PROTOBUF_LEN = 2,
	PROTOBUF_FIXED32 = 5,
};

struct protobuf_reader {
	const uint8_t *p, *end;
};

#define PROTOBUF_READER(data, len) \
	{ (const uint8_t *)(data), (const uint8_t *)(data) + (len) }

struct protobuf_field {
	uint32_t num;   /* field number, >= 1 */
	uint8_t wire;   /* enum protobuf_wire */
	uint64_t u;     /* VARINT, FIXED64, FIXED32: the value */
	const uint8_t *data; /* LEN: the bytes (inside the reader's input) */
	size_t len;
};

/* Read one varint (at most 10 bytes; the 10th may only carry the top bit). Returns 0 or
 * -EBADMSG (truncated or overlong). */
int protobuf_read_varint(struct protobuf_reader *r, uint64_t *v);
/* Read the next field. Returns 1 with *f filled, 0 at the end of input, -EBADMSG if malformed. */
int protobuf_next(struct protobuf_reader *r, struct protobuf_field *f);

/* Repeated scalar fields may come packed (one LEN field of varints) or one value per field.
 * This iterates either form of one field occurrence:
 *     struct protobuf_values it; uint64_t v;
 *     protobuf_values_init(&it, &f);
 *     while ((rc = protobuf_values_next(&it, &v)) > 0) ...
 * Returns 1 with a value, 0 when done, -EBADMSG on a bad varint or an unexpected wire type. */
struct protobuf_values {
	struct protobuf_reader r;
	uint64_t single;
	int state; /* 0 single pending, 1 packed, 2 done, -1 bad wire type */
};
void protobuf_values_init(struct protobuf_values *it, const struct protobuf_field *f);
int protobuf_values_next(struct protobuf_values *it, uint64_t *v);

struct protobuf_writer {
	struct buf *b;
	int err; /* first error (negative errno), sticky */
};

#define PROTOBUF_WRITER(bufp) { (bufp), 0 }

void protobuf_put_raw_varint(struct protobuf_writer *w, uint64_t v);
void protobuf_put_tag(struct protobuf_writer *w, uint32_t num, enum protobuf_wire wire);
/* A varint field; protobuf_put_uint64_nz() omits it when v is 0 (proto3 default). */
void protobuf_put_uint64(struct protobuf_writer *w, uint32_t num, uint64_t v);
void protobuf_put_uint64_nz(struct protobuf_writer *w, uint32_t num, uint64_t v);
/* int64 fields are varints of the two's complement (negative values take 10 bytes). */
static inline void protobuf_put_int64_nz(struct protobuf_writer *w, uint32_t num, int64_t v)
{
	protobuf_put_uint64_nz(w, num, (uint64_t)v);
}
void protobuf_put_bytes(struct protobuf_writer *w, uint32_t num, const void *data, size_t len);
/* A fixed64 field (little-endian 8 bytes), e.g. OTLP's timestamps; doubles as their bits. */
void protobuf_put_fixed64(struct protobuf_writer *w, uint32_t num, uint64_t v);
/* Open a length-delimited field (nested message or packed values); returns a mark for
 * protobuf_end(), which closes the innermost open field. */
size_t protobuf_begin(struct protobuf_writer *w, uint32_t num);
void protobuf_end(struct protobuf_writer *w, size_t mark);

/* Bytes a varint of v takes (1-10). */
size_t protobuf_varint_size(uint64_t v);

#endif
