/* fuzz_series_name.c: the `name` parameter of POST /ingest (APP.TYPE{k=v,...}). A successful
 * parse must respect every documented cap. */
#include "lib/alloc.h"
#include "server/series_name.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xstrndup((const char *)data, size);
	struct series_name n;
	struct errmsg err;
	size_t i;

	if (series_name_parse(s, &n, &err) == 0) {
		if (!n.app || !*n.app || !n.type || n.nlabels > SERIES_MAX_LABELS)
			abort();
		for (i = 0; i < n.nlabels; i++)
			if (strlen(n.labels[i].key) > SERIES_MAX_KEY ||
			    strlen(n.labels[i].value) > SERIES_MAX_VALUE)
				abort();
	}
	series_name_release(&n);
	xfree(s);
	return 0;
}
