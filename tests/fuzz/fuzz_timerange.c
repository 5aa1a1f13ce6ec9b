/* fuzz_timerange.c: the time, duration and size parsers on arbitrary (NUL-terminated) text. */
#include "store/timerange.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);
	struct errmsg err;
	int64_t t, d;
	uint64_t b;

	memcpy(s, data, size);
	s[size] = '\0';
	timerange_parse_time(s, 1700000000, &t, &err);
	timerange_parse_duration(s, &d, &err);
	timerange_parse_size(s, &b, &err);
	xfree(s);
	return 0;
}
