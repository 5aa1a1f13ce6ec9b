/* fuzz_otlp_json.c: the OTLP/JSON transcoder on hostile input; what it accepts goes through the
 * protobuf decoder, which must never crash on it either. */
#include "lib/buf.h"
#include "profile/otlp.h"
#include "profile/otlp_json.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct decode_limits lim;
	struct buf pb = BUF_INIT(BUF_UNLIMITED);
	struct otlp_request req;
	struct errmsg err;

	decode_limits_default(&lim);
	lim.max_inflated = 4u << 20;
	lim.max_samples = 1u << 16;
	if (otlp_json_to_protobuf((const char *)data, size, 4u << 20, &pb, &err) == 0) {
		otlp_decode(pb.data ? pb.data : "", pb.len, &lim, &req, &err);
		otlp_request_release(&req);
	}
	buf_release(&pb);
	return 0;
}
