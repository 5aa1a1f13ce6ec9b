/* fuzz_folded.c: the folded parser on hostile input. Text it accepts must write back to lines
 * that parse again to the same total and the same text. */
#include "lib/alloc.h"
#include "lib/buf.h"
#include "profile/folded.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *q = NULL;
	struct errmsg err;
	struct buf w1 = BUF_INIT(BUF_UNLIMITED), w2 = BUF_INIT(BUF_UNLIMITED);

	if (folded_parse((const char *)data, size, 100000, &p, &err) != 0)
		return 0;
	if (folded_write(p, &w1) != 0)
		abort();
	if (folded_parse(w1.data, w1.len, 100000, &q, &err) != 0)
		abort();
	if (profile_total(q) != profile_total(p))
		abort();
	if (folded_write(q, &w2) != 0 || w1.len != w2.len || (w1.len && memcmp(w1.data, w2.data, w1.len)))
		abort();
	profile_free(p);
	profile_free(q);
	buf_release(&w1);
	buf_release(&w2);
	return 0;
}
