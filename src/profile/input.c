/* input.c: decode a profile of any supported format (see input.h). */
#include "profile/input.h"
#include "lib/alloc.h"
#include "profile/folded.h"
#include "profile/gzip.h"
#include "profile/jfr.h"
#include "profile/otlp.h"
#include "profile/pprof.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define SNIFF_BYTES 65536

enum input_format input_detect(const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i, n = len < SNIFF_BYTES ? len : SNIFF_BYTES;

	if (!len)
		return INPUT_UNKNOWN;
	if (jfr_is(data, len))
		return INPUT_JFR;
	for (i = 0; i < n; i++) {
		if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] == 0x7f)
			return INPUT_PPROF;
	}
	return INPUT_FOLDED;
}

const char *input_format_name(enum input_format f)
{
	switch (f) {
	case INPUT_PPROF: return "pprof";
	case INPUT_FOLDED: return "folded";
	case INPUT_OTLP: return "OTLP";
	case INPUT_JFR: return "JFR";
	default: return "unknown";
	}
}

static int decode_jfr(const void *data, size_t len, const struct input_opts *o,
		      struct profile **out, struct errmsg *err)
{
	struct decode_limits lim;
	struct jfr_result r;
	size_t i, pick = 0;
	int rc;

	decode_limits_none(&lim); /* a local file: only the byte cap of the caller */
	lim.max_inflated = o->max_uncompressed;
	rc = jfr_decode(data, len, &lim, NULL, &r, err);

	if (rc < 0)
		return rc;
	if (!r.nprofiles) {
		jfr_result_release(&r);
		return errmsg_set(err, -ENOENT, "the recording has no events scorch reads "
				  "(execution samples, allocations, monitor enters, parks)");
	}
	for (i = 0; i < r.nprofiles; i++) {
		if (o->type ? !strcmp(r.profiles[i].type, o->type) : !strcmp(r.profiles[i].type, "cpu")) {
			pick = i;
			break;
		}
	}
	if (o->type && i == r.nprofiles) {
		jfr_result_release(&r);
		return errmsg_set(err, -ENOENT, "the recording has no '%s' profile", o->type);
	}
	*out = r.profiles[pick].prof;
	r.profiles[pick].prof = NULL;
	jfr_result_release(&r);
	return 0;
}

static int decode_otlp(const void *data, size_t len, const struct input_opts *o,
		       struct profile **out, struct errmsg *err)
{
	struct decode_limits lim;
	struct otlp_request req;
	const char *type = o->type;
	size_t i;
	int rc;

	decode_limits_none(&lim);
	lim.max_inflated = o->max_uncompressed;
	rc = otlp_decode(data, len, &lim, &req, err);

	if (rc < 0)
		goto cleanup;
	for (i = 0; i < req.nprofiles; i++) {
		const struct profile *p = req.profiles[i].prof;

		if (!type)
			type = profile_get_str(p, p->sample_type);
		if (strcmp(profile_get_str(p, p->sample_type), type))
			continue;
		if (!*out) {
			*out = req.profiles[i].prof;
			req.profiles[i].prof = NULL;
		} else {
			profile_merge(*out, p);
		}
	}
	if (!*out && req.nprofiles)
		rc = errmsg_set(err, -ENOENT, "no profile of sample type '%s'", type);
	else if (!*out)
		rc = errmsg_set(err, -ENOENT, "no profiles in the request");
cleanup:
	otlp_request_release(&req);
	return rc;
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
	case INPUT_PPROF: {
		struct decode_limits lim;

		/* A file the user chose: only its size is capped. */
		decode_limits_none(&lim);
		lim.max_inflated = o->max_uncompressed;
		rc = pprof_decode(data, len, &lim, o->sample_index, out, err);
		if (rc == -EBADMSG) {
			/* Not pprof: maybe OTLP (both are protobuf; neither parses as the other). */
			struct errmsg e2;
			int rc2 = decode_otlp(data, len, o, out, &e2);

			/* An OTLP request without the profile asked for is an OTLP answer too. */
			if (rc2 == 0 || rc2 == -ENOENT) {
				rc = rc2;
				if (rc2 && err)
					*err = e2;
				if (format)
					*format = INPUT_OTLP;
			}
		}
		break;
	}
	case INPUT_JFR:
		rc = decode_jfr(data, len, o, out, err);
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
