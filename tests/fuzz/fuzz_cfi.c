/* fuzz_cfi.c: the DWARF CFI parser and the unwind table builder on arbitrary sections.
 * Byte 0 picks the section kind (bit 0: .debug_frame) and whether to build a whole table
 * (bit 1); the rest is the section, at a vaddr taken from bytes 1-4. */
#include "agent/cfi.h"
#include "agent/unwind_table.h"
#include "lib/log.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_row(void *arg, const struct cfi_row *row)
{
	uint64_t *n = arg;

	if (row->end <= row->start)
		__builtin_trap(); /* rows are never empty */
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_stats st;
	struct errmsg err;
	uint32_t vaddr;
	uint64_t rows = 0;
	uint8_t mode;

	if (size < 5)
		return 0;
	mode = data[0];
	memcpy(&vaddr, data + 1, 4);
	data += 5;
	size -= 5;
	memset(&st, 0, sizeof(st));
	cfi_parse(data, size, vaddr, mode & 1 ? CFI_DEBUG_FRAME : CFI_EH_FRAME, count_row, &rows,
		  &st, &err);
	if (st.rows != rows)
		__builtin_trap();
	if (mode & 2) {
		struct unwind_table t;
		struct unwind_range r = { vaddr, (uint64_t)vaddr + 64 };
		size_t i;

		if (unwind_table_from_cfi(mode & 1 ? NULL : data, mode & 1 ? 0 : size, vaddr,
					  mode & 1 ? data : NULL, mode & 1 ? size : 0, &r, 1, &t,
					  &err) == 0) {
			/* sorted, ends with an invalid entry */
			for (i = 1; i < t.count; i++)
				if (t.entries[i].pc <= t.entries[i - 1].pc)
					__builtin_trap();
			if (!t.count || (t.entries[t.count - 1].kind & UNW_KIND_MASK) != UNW_INVALID)
				__builtin_trap();
			unwind_table_lookup(&t, vaddr + 3);
			unwind_table_release(&t);
		}
	}
	return 0;
}
