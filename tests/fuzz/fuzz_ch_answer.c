/* fuzz_ch_answer.c: answers of ClickHouse as the store backend reads them (RowBinary rows of
 * the series list, merge pairs, stacks, frames and time series; error bodies), and store URLs.
 * The first byte picks the reader, the rest is the answer. A reader returns 0 or -EIO, never
 * reads out of bounds, and bounds what it allocates. */
#include "lib/log.h"
#include "lib/alloc.h"
#include "store/clickhouse.h"
#include "store/store_clickhouse.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct errmsg err;
	int kind, ret;

	if (!size)
		return 0;
	kind = data[0] % 7;
	data++;
	size--;
	if (kind < 5) {
		ret = store_clickhouse_decode(kind, data, size, &err);
		if (ret != 0 && ret != -EIO)
			abort();
	} else if (kind == 5) {
		ret = clickhouse_error_class((const char *)data, size);
		if (ret != -EAGAIN && ret != -EACCES && ret != -EIO)
			abort();
	} else {
		struct clickhouse_url u;
		char *s = xstrndup((const char *)data, size);

		if (clickhouse_url_parse(s, &u, &err) == 0) {
			if (!u.nnodes || u.nnodes > CLICKHOUSE_MAX_NODES || !u.database || u.timeout_ms < 1000)
				abort();
			clickhouse_url_release(&u);
		}
		xfree(s);
	}
	return 0;
}
