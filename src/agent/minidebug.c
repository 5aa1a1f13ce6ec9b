/* minidebug.c: .gnu_debugdata decompression (see minidebug.h). */
#include "agent/minidebug.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <errno.h>
#include <lzma.h>
#include <string.h>

int minidebug_decompress(const void *xz, size_t len, size_t max, void **out, size_t *out_len,
			 struct errmsg *err)
{
	lzma_stream st = LZMA_STREAM_INIT;
	uint8_t *buf = NULL;
	size_t cap = 0, limit = max;
	lzma_ret r;
	int rc = 0;

	*out = NULL;
	*out_len = 0;
	if ((uint64_t)len * MINIDEBUG_MAX_RATIO + 4096 < limit)
		limit = (size_t)((uint64_t)len * MINIDEBUG_MAX_RATIO + 4096);
	if (lzma_stream_decoder(&st, MINIDEBUG_MEMLIMIT, 0) != LZMA_OK)
		return errmsg_set(err, -ENOMEM, "cannot start the xz decoder");
	st.next_in = xz;
	st.avail_in = len;
	for (;;) {
		if (st.avail_out == 0) {
			size_t ncap = cap ? cap * 2 : 65536;
			uint8_t *nb;

			if (cap >= limit) {
				rc = errmsg_set(err, -E2BIG, "xz data larger than %zu bytes", limit);
				break;
			}
			if (ncap > limit)
				ncap = limit;
			nb = try_realloc(buf, ncap);
			if (!nb) {
				rc = errmsg_set(err, -ENOMEM, "out of memory for %zu bytes", ncap);
				break;
			}
			buf = nb;
			st.next_out = buf + cap;
			st.avail_out = ncap - cap;
			cap = ncap;
		}
		r = lzma_code(&st, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK) {
			rc = errmsg_set(err, r == LZMA_MEMLIMIT_ERROR ? -E2BIG : -EINVAL,
					"bad xz data (liblzma error %d)", (int)r);
			break;
		}
	}
	lzma_end(&st);
	if (rc) {
		xfree(buf);
		return rc;
	}
	*out = buf;
	*out_len = (size_t)st.total_out;
	return 0;
}

int minidebug_open(struct elf_file *e, struct elf_file **out, struct errmsg *err)
{
	const void *data;
	void *plain;
	size_t size, n;
	int rc;

	*out = NULL;
	rc = elf_section(e, ".gnu_debugdata", &data, &size, NULL);
	if (rc == -ENOENT)
		return rc;
	if (rc < 0)
		return errmsg_set(err, rc, "cannot read .gnu_debugdata");
	rc = minidebug_decompress(data, size, MINIDEBUG_MAX_BYTES, &plain, &n, err);
	if (rc < 0)
		return rc;
	rc = elf_open_mem(plain, n, out, err);
	xfree(plain);
	return rc;
}
