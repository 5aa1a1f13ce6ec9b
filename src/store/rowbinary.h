/* rowbinary.h: ClickHouse's RowBinary format, both ways: appending rows to a buffer (inserts)
 * and reading the rows of an answer with bounds checks (query results are outside input: a
 * truncated, hostile or corrupt answer is an error, never a read past the end).
 *
 * Format (little-endian, no row or column separators, columns in the order of the query):
 *   UInt8/16/32/64, Int64   1/2/4/8/8 bytes
 *   String                  unsigned LEB128 length, then the bytes
 *   Array(T)                unsigned LEB128 element count, then the elements
 *   Nullable(T)             one byte: 1 = NULL (nothing follows), 0 = a T follows
 *
 * A reader points into memory it does not own. Every rowbinary_get_* returns 0, or -EIO once
 * the data is short or malformed; after the first error the reader stays failed (r->bad), so
 * a sequence of gets may be checked once at the end. */
#ifndef SCORCH_ROWBINARY_H
#define SCORCH_ROWBINARY_H

#include <stddef.h>
#include <stdint.h>

struct buf;

struct rowbinary {
	const uint8_t *p, *end;
	int bad;
};

static inline void rowbinary_init(struct rowbinary *r, const void *data, size_t len)
{
	r->p = data;
	r->end = r->p + len;
	r->bad = 0;
}

/* 1 while unread bytes remain (and no error happened). */
static inline int rowbinary_more(const struct rowbinary *r)
{
	return !r->bad && r->p < r->end;
}

int rowbinary_get_u8(struct rowbinary *r, uint8_t *out);
int rowbinary_get_u32(struct rowbinary *r, uint32_t *out);
int rowbinary_get_u64(struct rowbinary *r, uint64_t *out);
/* A length or element count; larger than max is an error (bounds what a caller allocates). */
int rowbinary_get_len(struct rowbinary *r, uint64_t max, size_t *out);
/* A String: *s points into the data (NOT NUL-terminated), at most max bytes. */
int rowbinary_get_str(struct rowbinary *r, size_t max, const char **s, size_t *len);
/* Nullable prefix: *is_null = 1 when the value is NULL (nothing follows). */
int rowbinary_get_null(struct rowbinary *r, int *is_null);

/* Writers: append to b (which must be large enough by its max, else -E2BIG). */
int rowbinary_put_u8(struct buf *b, uint8_t v);
int rowbinary_put_u32(struct buf *b, uint32_t v);
int rowbinary_put_u64(struct buf *b, uint64_t v);
int rowbinary_put_len(struct buf *b, uint64_t n);
int rowbinary_put_str(struct buf *b, const char *s, size_t len);
/* Nullable(String) from a C string (NULL = SQL NULL). */
int rowbinary_put_nstr(struct buf *b, const char *s);

#endif
