/* buf.h: a growable byte buffer with a declared maximum size (like curl's dynbuf).
 *
 * Every buffer that grows from outside input says how large it may get; appends past the
 * maximum fail with -E2BIG and leave the buffer unchanged. The data is always NUL-terminated
 * (the terminator is not counted in len). The buffer owns data; buf_release() frees it,
 * buf_detach() hands it to the caller (free with xfree()). */
#ifndef SCORCH_BUF_H
#define SCORCH_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

#define BUF_UNLIMITED SIZE_MAX
#define BUF_INIT(maxsize) { NULL, 0, 0, (maxsize) }

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);
/* Return the data (never NULL) and reset b to empty; the caller frees with xfree(). */
char *buf_detach(struct buf *b, size_t *len);
void buf_reset(struct buf *b);

int buf_append(struct buf *b, const void *data, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Make room for n more bytes; returns a pointer to them (the caller then calls buf_commit). */
void *buf_reserve(struct buf *b, size_t n);
void buf_commit(struct buf *b, size_t n);

/* Read a whole file into b (up to b->max). Returns 0 or a negative errno. */
int buf_read_file(struct buf *b, const char *path);
/* Write data durably: temp file in the same directory, fsync, rename, fsync the directory. */
int write_file_atomic(const char *path, const void *data, size_t len);

#endif
