/* fuzz_pprof.c: the pprof decoder on hostile input. A profile it accepts must survive every
 * writer, and encoding it again must decode to the same total and sample count. */
#include "lib/alloc.h"
#include "lib/buf.h"
#include "profile/folded.h"
#include "profile/output.h"
#include "profile/pprof.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *q = NULL;
	struct errmsg err;
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	enum output_format f;
	/* -2..1: every type (PPROF_ALL_TYPES), the default, or index 0/1 */
	int index = size ? (int)(data[size - 1] % 4) - 2 : -1;
	struct decode_limits lim;
	uint32_t k;

	decode_limits_default(&lim);
	lim.max_inflated = 4u << 20;
	if (pprof_decode(data, size, &lim, index, &p, &err) != 0)
		return 0;
	if (p->nsamples > lim.max_samples || p->loc_pool_len > lim.max_frames ||
	    p->nlocations > lim.max_locations * PPROF_MAX_LINES)
		abort();
	/* With every type kept, column value_index is `value`. */
	for (k = 0; p->nvalues && k < p->nsamples; k++)
		if (profile_sample_value(p, &p->samples[k], p->value_index) != p->samples[k].value)
			abort();
	if (pprof_encode_raw(p, &b) != 0)
		abort();
	decode_limits_none(&lim);
	if (pprof_decode(b.data, b.len, &lim, -1, &q, &err) != 0)
		abort();
	if (profile_total(q) != profile_total(p) || q->nsamples != p->nsamples)
		abort();
	for (f = OUTPUT_PPROF; f <= OUTPUT_SVG; f++) {
		buf_reset(&b);
		if (output_render(p, f, "fuzz", &b) != 0)
			abort();
	}
	profile_free(p);
	profile_free(q);
	buf_release(&b);
	return 0;
}
