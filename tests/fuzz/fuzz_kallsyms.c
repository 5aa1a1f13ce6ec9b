/* fuzz_kallsyms.c: libFuzzer target for the /proc/kallsyms parser (src/agent/kallsyms.c). */
#include "agent/kallsyms.h"
#include "lib/log.h"

#include <stdint.h>
#include <stddef.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms *k = NULL;
	struct errmsg err;
	uint64_t a;

	if (kallsyms_parse((const char *)data, size, &k, &err) == 0) {
		kallsyms_lookup(k, 0xffffffff81000000ULL, &a, NULL);
		kallsyms_lookup(k, 0, NULL, NULL);
		kallsyms_lookup(k, UINT64_MAX, NULL, NULL);
		kallsyms_find(k, "schedule", &a);
	}
	kallsyms_free(k);
	return 0;
}
