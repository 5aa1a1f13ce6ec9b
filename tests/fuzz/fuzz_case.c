/* fuzz_case.c: replay case files (src/replay/case.h) are outside input: a case someone sends
 * us. Any bytes must parse or be refused with a message, never crash; a case that parses must
 * replay without a crash (the step reads only what the case holds) and encode again into a
 * case that parses to the same words. */
#include "replay/case.h"
#include "replay/replay.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay_case c, again;
	struct replay_result r;
	struct errmsg err = { { 0 } };
	struct buf b = BUF_INIT(BUF_UNLIMITED);

	if (case_parse(data, size, &c, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a refusal says why */
		return 0;
	}
	if (replay_run(&c, NULL, &r) == 0) {
		if (!r.folded || r.n > MAX_USER_WORDS)
			abort();
		replay_result_release(&r);
	}
	if (case_encode(&c, &b) == 0) {
		if (case_parse(b.data, b.len, &again, &err) < 0)
			abort(); /* what we write, we read */
		if (again.nexpect != c.nexpect || again.nmem != c.nmem ||
		    again.nentries != c.nentries || again.nmaps != c.nmaps)
			abort();
		case_release(&again);
	}
	buf_release(&b);
	case_release(&c);
	return 0;
}
