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
	int index = size ? (int)(data[size - 1] % 4) - 2 : -1; /* -2..1: default or 0/1 */

	if (pprof_decode(data, size, 4u << 20, index, &p, &err) != 0)
		return 0;
	if (pprof_encode_raw(p, &b) != 0)
		abort();
	if (pprof_decode(b.data, b.len, SIZE_MAX, -1, &q, &err) != 0)
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
