/* fuzz_otlp.c: the OTLP profiles decoder on hostile input, with small caps so that the caps are
 * exercised too. A request it accepts must survive every writer, and encoding its profiles again
 * must decode to the same totals and sample counts. */
#include "lib/alloc.h"
#include "lib/buf.h"
#include "profile/otlp.h"
#include "profile/output.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct decode_limits lim;
	struct otlp_request req, again;
	struct otlp_resource *res = NULL;
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err;
	enum output_format f;
	size_t i;

	decode_limits_default(&lim);
	lim.max_inflated = 4u << 20;
	lim.max_strings = 1u << 16;
	lim.max_locations = 1u << 16;
	lim.max_samples = 1u << 16;
	lim.max_profiles = 64;
	if (otlp_decode(data, size, &lim, &req, &err) != 0) {
		otlp_request_release(&req);
		return 0;
	}
	/* One resource per profile, in order, so that the profiles come back in the same order. */
	res = xcalloc(req.nprofiles + 1, sizeof(*res));
	for (i = 0; i < req.nprofiles; i++) {
		res[i].profiles = &req.profiles[i].prof;
		res[i].nprofiles = 1;
	}
	if (otlp_encode(res, req.nprofiles, &b) != 0)
		abort();
	if (otlp_decode(b.data, b.len, NULL, &again, &err) != 0)
		abort();
	if (again.nprofiles != req.nprofiles)
		abort();
	for (i = 0; i < req.nprofiles; i++) {
		const struct profile *p = req.profiles[i].prof, *q = again.profiles[i].prof;

		if (profile_total(p) != profile_total(q) || p->nsamples != q->nsamples)
			abort();
		for (f = OUTPUT_PPROF; f <= OUTPUT_SVG; f++) {
			struct buf o = BUF_INIT(BUF_UNLIMITED);

			if (output_render(p, f, "fuzz", &o) != 0)
				abort();
			buf_release(&o);
		}
	}
	otlp_request_release(&again);
	otlp_request_release(&req);
	xfree(res);
	buf_release(&b);
	return 0;
}
