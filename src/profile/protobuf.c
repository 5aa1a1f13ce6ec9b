/* protobuf.c: protobuf wire-format reader and writer (see protobuf.h). */
#include "profile/protobuf.h"

#include <errno.h>
#include <string.h>

int protobuf_read_varint(struct protobuf_reader *r, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift;

	for (shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (r->p >= r->end)
			return -EBADMSG;
		c = *r->p++;
		/* The 10th byte holds bit 63 only. */
		if (shift == 63 && c > 1)
			return -EBADMSG;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;
}

int protobuf_next(struct protobuf_reader *r, struct protobuf_field *f)
{
	uint64_t key, v;

	if (r->p >= r->end)
		return 0;
	if (protobuf_read_varint(r, &key) < 0)
		return -EBADMSG;
	if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return -EBADMSG;
	f->num = (uint32_t)(key >> 3);
	f->wire = (uint8_t)(key & 7);
	f->u = 0;
	f->data = NULL;
	f->len = 0;
	switch (f->wire) {
	case PROTOBUF_VARINT:
		return protobuf_read_varint(r, &f->u) < 0 ? -EBADMSG : 1;
	case PROTOBUF_FIXED64:
		if (r->end - r->p < 8)
			return -EBADMSG;
		memcpy(&v, r->p, 8); /* little-endian hosts only (x86, arm64) */
		f->u = v;
		r->p += 8;
		return 1;
	case PROTOBUF_FIXED32: {
		uint32_t w;

		if (r->end - r->p < 4)
			return -EBADMSG;
		memcpy(&w, r->p, 4);
		f->u = w;
		r->p += 4;
		return 1;
	}
	case PROTOBUF_LEN:
		if (protobuf_read_varint(r, &v) < 0 || v > (uint64_t)(r->end - r->p))
			return -EBADMSG;
		f->data = r->p;
		f->len = (size_t)v;
		r->p += v;
		return 1;
	default:
		return -EBADMSG;
	}
}

void protobuf_values_init(struct protobuf_values *it, const struct protobuf_field *f)
{
	if (f->wire == PROTOBUF_LEN) {
		it->r.p = f->data;
		it->r.end = f->data + f->len;
		it->state = 1;
	} else if (f->wire == PROTOBUF_VARINT) {
		it->single = f->u;
		it->state = 0;
	} else {
		it->state = -1;
	}
}

int protobuf_values_next(struct protobuf_values *it, uint64_t *v)
{
	switch (it->state) {
	case 0:
		*v = it->single;
		it->state = 2;
		return 1;
	case 1:
		if (it->r.p >= it->r.end)
			return 0;
		return protobuf_read_varint(&it->r, v) < 0 ? -EBADMSG : 1;
	case 2:
		return 0;
	default:
		return -EBADMSG;
	}
}

size_t protobuf_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t encode_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

void protobuf_put_raw_varint(struct protobuf_writer *w, uint64_t v)
{
	uint8_t *p;

	if (w->err)
		return;
	p = buf_reserve(w->b, 10);
	if (!p) {
		w->err = -E2BIG;
		return;
	}
	buf_commit(w->b, encode_varint(p, v));
}

void protobuf_put_tag(struct protobuf_writer *w, uint32_t num, enum protobuf_wire wire)
{
	protobuf_put_raw_varint(w, (uint64_t)num << 3 | wire);
}

void protobuf_put_uint64(struct protobuf_writer *w, uint32_t num, uint64_t v)
{
	uint8_t *p;
	size_t n;

	if (w->err)
		return;
	p = buf_reserve(w->b, 20);
	if (!p) {
		w->err = -E2BIG;
		return;
	}
	n = encode_varint(p, (uint64_t)num << 3 | PROTOBUF_VARINT);
	n += encode_varint(p + n, v);
	buf_commit(w->b, n);
}

void protobuf_put_uint64_nz(struct protobuf_writer *w, uint32_t num, uint64_t v)
{
	if (v)
		protobuf_put_uint64(w, num, v);
}

void protobuf_put_bytes(struct protobuf_writer *w, uint32_t num, const void *data, size_t len)
{
	protobuf_put_tag(w, num, PROTOBUF_LEN);
	protobuf_put_raw_varint(w, len);
	if (!w->err && len) {
		int err = buf_append(w->b, data, len);

		if (err)
			w->err = err;
	}
}

void protobuf_put_fixed64(struct protobuf_writer *w, uint32_t num, uint64_t v)
{
	protobuf_put_tag(w, num, PROTOBUF_FIXED64);
	if (!w->err) {
		int err = buf_append(w->b, &v, 8); /* little-endian hosts only, as the reader */

		if (err)
			w->err = err;
	}
}

size_t protobuf_begin(struct protobuf_writer *w, uint32_t num)
{
	protobuf_put_tag(w, num, PROTOBUF_LEN);
	if (!w->err && buf_putc(w->b, 0) < 0)
		w->err = -E2BIG;
	return w->b->len;
}

void protobuf_end(struct protobuf_writer *w, size_t mark)
{
	size_t body, n;
	uint8_t tmp[10];

	if (w->err)
		return;
	body = w->b->len - mark;
	n = encode_varint(tmp, body);
	if (n > 1) {
		/* Make room for the longer length and slide the body up. */
		if (!buf_reserve(w->b, n - 1)) {
			w->err = -E2BIG;
			return;
		}
		memmove(w->b->data + mark + n - 1, w->b->data + mark, body);
		buf_commit(w->b, n - 1);
	}
	memcpy(w->b->data + mark - 1, tmp, n);
}
