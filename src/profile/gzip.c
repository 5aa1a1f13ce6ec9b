/* gzip.c: gzip through zlib, with every output bounded (see gzip.h). */
#include "profile/gzip.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#define CHUNK 65536

int gzip_is(const void *data, size_t len)
{
	const uint8_t *p = data;

	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

int gzip_compress(const void *data, size_t len, int level, struct buf *out)
{
	size_t start_len = out->len;
	z_stream z;
	int err = 0, zrc = Z_OK;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)data;
	while (zrc != Z_STREAM_END) {
		size_t room = out->max - out->len < CHUNK ? out->max - out->len : CHUNK;
		uint8_t *dst = room ? buf_reserve(out, room) : NULL;
		size_t feed = len > UINT32_MAX ? UINT32_MAX : len;

		if (!dst) {
			err = -E2BIG;
			break;
		}
		z.avail_in = (uInt)feed;
		z.next_out = dst;
		z.avail_out = (uInt)room;
		zrc = deflate(&z, feed == len ? Z_FINISH : Z_NO_FLUSH);
		buf_commit(out, room - z.avail_out);
		len -= feed - z.avail_in;
		if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR) {
			err = -ENOMEM;
			break;
		}
	}
	deflateEnd(&z);
	if (err && out->data) {
		out->len = start_len;
		out->data[start_len] = '\0';
	}
	return err;
}

int gzip_decompress(const void *data, size_t len, size_t max, struct buf *out, struct errmsg *err)
{
	const uint8_t *in = data;
	size_t limit = out->len + (max < SIZE_MAX - out->len ? max : SIZE_MAX - out->len);
	z_stream z;
	int zrc = Z_OK, rc = 0;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return errmsg_set(err, -ENOMEM, "gzip: cannot initialize zlib");
	while (len || zrc != Z_STREAM_END) {
		size_t room = limit - out->len < CHUNK ? limit - out->len : CHUNK;
		uint8_t *dst;

		if (zrc == Z_STREAM_END) {
			/* Another member follows (concatenated members are one valid gzip file). */
			if (!gzip_is(in, len)) {
				rc = errmsg_set(err, -EBADMSG, "gzip: trailing data after the stream");
				break;
			}
			inflateReset(&z);
		}
		if (!room) {
			rc = errmsg_set(err, -E2BIG, "gzip: inflated size exceeds %zu bytes", max);
			break;
		}
		dst = buf_reserve(out, room);
		if (!dst) {
			rc = errmsg_set(err, -ENOMEM, "gzip: out of memory inflating");
			break;
		}
		z.next_in = (Bytef *)in;
		z.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
		z.next_out = dst;
		z.avail_out = (uInt)room;
		zrc = inflate(&z, Z_NO_FLUSH);
		buf_commit(out, room - z.avail_out);
		len -= (size_t)((const uint8_t *)z.next_in - in);
		in = z.next_in;
		if (zrc == Z_STREAM_END)
			continue;
		if (zrc == Z_BUF_ERROR && !len) {
			rc = errmsg_set(err, -EBADMSG, "gzip: truncated stream");
			break;
		}
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			rc = errmsg_set(err, -EBADMSG, "gzip: corrupt stream (%s)",
					z.msg ? z.msg : "inflate error");
			break;
		}
	}
	inflateEnd(&z);
	return rc;
}
