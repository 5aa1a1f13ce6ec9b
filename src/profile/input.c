/* input.c: decode a profile of any supported format (see input.h). */
#include "profile/input.h"
#include "profile/folded.h"
#include "profile/gzip.h"
#include "profile/pprof.h"

#include <errno.h>
#include <stdint.h>

#define SNIFF_BYTES 65536

enum input_format input_detect(const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i, n = len < SNIFF_BYTES ? len : SNIFF_BYTES;

	if (!len)
		return INPUT_UNKNOWN;
	for (i = 0; i < n; i++) {
		if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] == 0x7f)
			return INPUT_PPROF;
	}
	return INPUT_FOLDED;
}

const char *input_format_name(enum input_format f)
{
	return f == INPUT_PPROF ? "pprof" : f == INPUT_FOLDED ? "folded" : "unknown";
}

int input_decode(const void *data, size_t len, const struct input_opts *o,
		 enum input_format *format, struct profile **out, struct errmsg *err)
{
	struct buf inflated = BUF_INIT(o->max_uncompressed);
	enum input_format f;
	int rc;

	*out = NULL;
	if (format)
		*format = INPUT_UNKNOWN;
	if (gzip_is(data, len)) {
		rc = gzip_decompress(data, len, o->max_uncompressed, &inflated, err);
		if (rc)
			goto cleanup;
		data = inflated.data;
		len = inflated.len;
	} else if (len > o->max_uncompressed) {
		rc = errmsg_set(err, -E2BIG, "input of %zu bytes is larger than %zu", len,
				o->max_uncompressed);
		goto cleanup;
	}
	f = input_detect(data, len);
	if (format)
		*format = f;
	switch (f) {
	case INPUT_PPROF:
		rc = pprof_decode(data, len, o->max_uncompressed, o->sample_index, out, err);
		break;
	case INPUT_FOLDED:
		rc = folded_parse(data, len, o->max_lines, out, err);
		break;
	default:
		rc = errmsg_set(err, -EINVAL, "empty input");
		break;
	}
cleanup:
	buf_release(&inflated);
	return rc;
}
