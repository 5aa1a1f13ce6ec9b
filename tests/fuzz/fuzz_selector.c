/* fuzz_selector.c: selector_parse() on arbitrary bytes, then matching the result against a
 * fixed label set (regexes included). */
#include "store/selector.h"
#include "store/store.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct store_label labels[] = {
		{ "host", "h1" }, { "service_name", "web" }, { "zone", "eu-west-1" },
	};
	struct selector *sel = NULL;
	struct errmsg err;

	if (selector_parse((const char *)data, size, &sel, &err) == 0) {
		selector_match(sel, "cpu", labels, 3);
		selector_match(sel, "alloc_space", labels, 1);
		selector_eq_value(sel, "service_name");
		selector_free(sel);
	}
	return 0;
}
