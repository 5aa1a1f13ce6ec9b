/* fuzz_ci_series.c: remote_parse_series(), what `scorch diff --server` makes of a server's
 * /api/v1/series answer, on arbitrary bytes. */
#include "ci/remote.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct remote_run *runs = NULL;
	struct errmsg err;
	size_t n = 0, i, len = 0;

	if (remote_parse_series((const char *)data, size, &runs, &n, &err) == 0) {
		for (i = 0; i < n; i++)
			len += strlen(runs[i].id) + (runs[i].first <= runs[i].last);
		remote_runs_free(runs, n);
	}
	return (int)(len & 0);
}
