/* fuzz_jfr.c: the JFR decoder (and the Pyroscope labels snapshot decoder) on hostile input, with
 * small caps so that they are exercised too. An input starting with 'L' carries a labels
 * snapshot first: 'L', its length (2 bytes, little-endian), the snapshot, then the recording.
 * A recording it accepts must survive every writer, and pprof must carry its totals. */
#include "lib/buf.h"
#include "profile/jfr.h"
#include "profile/output.h"
#include "profile/pprof.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct decode_limits lim;
	struct jfr_labels *labels = NULL;
	struct jfr_result r;
	struct errmsg err;
	enum output_format f;
	size_t i;

	decode_limits_default(&lim);
	lim.max_inflated = 8u << 20;
	lim.max_strings = 1u << 16;
	lim.max_locations = 1u << 18;
	lim.max_samples = 1u << 16;
	lim.max_stacks = 1u << 16;
	if (size >= 3 && data[0] == 'L') {
		size_t n = (size_t)data[1] | (size_t)data[2] << 8;

		if (n > size - 3)
			n = size - 3;
		if (jfr_labels_decode(data + 3, n, &lim, &labels, &err) != 0)
			labels = NULL;
		data += 3 + n;
		size -= 3 + n;
	}
	if (jfr_decode(data, size, &lim, labels, &r, &err) == 0) {
		for (i = 0; i < r.nprofiles; i++) {
			struct profile *p = r.profiles[i].prof, *q = NULL;
			struct buf o = BUF_INIT(BUF_UNLIMITED);
			struct decode_limits none;

			for (f = OUTPUT_PPROF; f <= OUTPUT_SVG; f++) {
				buf_reset(&o);
				if (output_render(p, f, "fuzz", &o) != 0)
					abort();
			}
			buf_reset(&o);
			decode_limits_none(&none);
			if (pprof_encode_raw(p, &o) != 0 ||
			    pprof_decode(o.data, o.len, &none, -1, &q, &err) != 0 ||
			    profile_total(q) != profile_total(p))
				abort();
			profile_free(q);
			buf_release(&o);
		}
	}
	jfr_result_release(&r);
	jfr_labels_free(labels);
	return 0;
}
