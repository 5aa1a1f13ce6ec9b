/* fuzz_table_cache.c: an unwind table cache file (agent/table_cache.h) as read back from disk:
 * table_cache_check_file() on arbitrary bytes, then the entries of an accepted file decoded and
 * checked to be a valid table (sorted, ending with UNW_INVALID), as the unwinder would publish
 * them in the BPF table space. The checksums keep most mutations from the decoder, so the input
 * also goes to table_cache_decode() directly (rule and entry counts from its first bytes). */
#include "agent/table_cache.h"
#include "lib/alloc.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct table_info info;
	struct unwind_entry *e;
	size_t off, i;
	uint32_t nrules;

	if (size >= 4) {
		uint32_t nr = data[0] % 64, count = (uint32_t)data[1] | (uint32_t)data[2] << 8;

		e = xcalloc(count + 1, sizeof(*e));
		if (table_cache_decode(data + 3, size - 3, nr, count, e) == 0) {
			for (i = 1; i < count; i++)
				if (e[i].pc <= e[i - 1].pc)
					__builtin_trap();
			if ((e[count - 1].kind & UNW_KIND_MASK) != UNW_INVALID)
				__builtin_trap();
		}
		xfree(e);
	}
	if (table_cache_check_file(data, size, NULL, &info, &off, &nrules) ||
	    info.kind != TABLE_ENTRIES)
		return 0;
	if (info.count > (1u << 20))
		return 0; /* accepted, but too large to decode here quickly */
	e = xcalloc(info.count, sizeof(*e));
	if (table_cache_decode(data + off, size - off, nrules, info.count, e))
		__builtin_trap(); /* accepted files decode */
	for (i = 1; i < info.count; i++)
		if (e[i].pc <= e[i - 1].pc)
			__builtin_trap();
	if ((e[info.count - 1].kind & UNW_KIND_MASK) != UNW_INVALID)
		__builtin_trap();
	xfree(e);
	return 0;
}
