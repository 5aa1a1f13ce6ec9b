/* buf.c: bounded growable buffers and whole-file helpers (see buf.h). */
#include "lib/buf.h"
#include "lib/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void buf_release(struct buf *b)
{
	xfree(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p = b->data;

	if (len)
		*len = b->len;
	if (!p)
		p = xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int ensure(struct buf *b, size_t n)
{
	size_t need, ncap;
	char *p;

	if (n > b->max || b->len > b->max - n)
		return -E2BIG;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	p = try_realloc(b->data, ncap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = ncap;
	b->data[b->len] = '\0'; /* keep the NUL-termination promise after buf_reserve() */
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
	int err = ensure(b, n);

	if (err)
		return err;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
	return buf_append(b, &c, 1);
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;
	char small[256];

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return buf_append(b, small, (size_t)n);
	err = ensure(b, (size_t)n);
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void *buf_reserve(struct buf *b, size_t n)
{
	if (ensure(b, n))
		return NULL;
	return b->data + b->len;
}

void buf_commit(struct buf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

int buf_read_file(struct buf *b, const char *path)
{
	int fd, err = 0;
	ssize_t got;
	size_t want;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		char *p = buf_reserve(b, 65536 < b->max - b->len ? 65536 : b->max - b->len);

		if (!p || b->len == b->max) {
			/* At the maximum: succeed only if the file has nothing more. */
			char c;

			got = read(fd, &c, 1);
			err = got == 0 ? 0 : -E2BIG;
			break;
		}
		want = b->cap - b->len - 1;
		if (want > b->max - b->len)
			want = b->max - b->len;
		got = read(fd, p, want);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (got == 0)
			break;
		buf_commit(b, (size_t)got);
	}
	close(fd);
	if (!b->data && !err)
		err = buf_append(b, "", 0);
	return err;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	char *dircopy = xstrdup(path);
	const char *p = data;
	int fd, dfd, err = 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err) {
		unlink(tmp);
		goto cleanup;
	}
	dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
cleanup:
	xfree(tmp);
	xfree(dircopy);
	return err;
}
