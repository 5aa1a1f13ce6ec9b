/* rowbinary.c: RowBinary encoding and bounded decoding (see rowbinary.h). */
#include "store/rowbinary.h"
#include "lib/buf.h"

#include <errno.h>
#include <string.h>

static int fail(struct rowbinary *r)
{
	r->bad = 1;
	r->p = r->end;
	return -EIO;
}

static int get_fixed(struct rowbinary *r, void *out, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n)
		return fail(r);
	memcpy(out, r->p, n); /* x86-64 and aarch64 are little-endian, like the format */
	r->p += n;
	return 0;
}

int rowbinary_get_u8(struct rowbinary *r, uint8_t *out)
{
	return get_fixed(r, out, 1);
}

int rowbinary_get_u32(struct rowbinary *r, uint32_t *out)
{
	return get_fixed(r, out, 4);
}

int rowbinary_get_u64(struct rowbinary *r, uint64_t *out)
{
	return get_fixed(r, out, 8);
}

int rowbinary_get_len(struct rowbinary *r, uint64_t max, size_t *out)
{
	uint64_t v = 0;
	int shift = 0;

	while (!r->bad && r->p < r->end && shift < 64) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (v > max || v > SIZE_MAX)
				return fail(r);
			*out = (size_t)v;
			return 0;
		}
		shift += 7;
	}
	return fail(r);
}

int rowbinary_get_str(struct rowbinary *r, size_t max, const char **s, size_t *len)
{
	size_t n;

	if (rowbinary_get_len(r, max, &n) < 0)
		return -EIO;
	if ((size_t)(r->end - r->p) < n)
		return fail(r);
	*s = (const char *)r->p;
	*len = n;
	r->p += n;
	return 0;
}

int rowbinary_get_null(struct rowbinary *r, int *is_null)
{
	uint8_t b;

	if (get_fixed(r, &b, 1) < 0 || b > 1)
		return fail(r);
	*is_null = b;
	return 0;
}

int rowbinary_put_u8(struct buf *b, uint8_t v)
{
	return buf_append(b, &v, 1);
}

int rowbinary_put_u32(struct buf *b, uint32_t v)
{
	return buf_append(b, &v, 4);
}

int rowbinary_put_u64(struct buf *b, uint64_t v)
{
	return buf_append(b, &v, 8);
}

int rowbinary_put_len(struct buf *b, uint64_t n)
{
	uint8_t tmp[10];
	size_t k = 0;

	while (n >= 0x80) {
		tmp[k++] = (uint8_t)(n | 0x80);
		n >>= 7;
	}
	tmp[k++] = (uint8_t)n;
	return buf_append(b, tmp, k);
}

int rowbinary_put_str(struct buf *b, const char *s, size_t len)
{
	int ret = rowbinary_put_len(b, len);

	return ret < 0 ? ret : buf_append(b, s, len);
}

int rowbinary_put_nstr(struct buf *b, const char *s)
{
	int ret;

	if (!s)
		return rowbinary_put_u8(b, 1);
	ret = rowbinary_put_u8(b, 0);
	return ret < 0 ? ret : rowbinary_put_str(b, s, strlen(s));
}
