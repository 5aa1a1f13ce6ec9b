/* fuzz_cfi.c: the DWARF CFI parser, the unwind table builder and the function starts
 * (fde_index.h) on arbitrary sections.
 * Byte 0 picks the section kind (bit 0: .debug_frame), whether to build a whole table (bit 1)
 * and whether an .eh_frame_hdr index comes first (bit 2: bytes 5-6 give its length, it lies
 * 64 KiB below the section); the rest is the section, at a vaddr taken from bytes 1-4. */
#include "agent/cfi.h"
#include "agent/fde_index.h"
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
	const uint8_t *hdr = NULL;
	size_t hdr_size = 0;
	uint8_t mode;

	if (size < 5)
		return 0;
	mode = data[0];
	memcpy(&vaddr, data + 1, 4);
	data += 5;
	size -= 5;
	if (mode & 4) {
		if (size < 2)
			return 0;
		hdr_size = (size_t)data[0] | (size_t)data[1] << 8;
		data += 2;
		size -= 2;
		if (hdr_size > size)
			hdr_size = size;
		hdr = data;
		data += hdr_size;
		size -= hdr_size;
		memset(&st, 0, sizeof(st));
		if (cfi_parse_sorted(data, size, vaddr, hdr, hdr_size, (uint64_t)vaddr - 0x10000,
				     count_row, &rows, &st) == 0 && st.rows != rows)
			__builtin_trap();
		rows = 0;
	}
	memset(&st, 0, sizeof(st));
	cfi_parse(data, size, vaddr, mode & 1 ? CFI_DEBUG_FRAME : CFI_EH_FRAME, count_row, &rows,
		  &st, &err);
	if (st.rows != rows)
		__builtin_trap();
	{
		struct fde_index *x = NULL;
		uint64_t start, a;

		if (fde_index_build_cfi(data, size, vaddr, mode & 1 ? CFI_DEBUG_FRAME : CFI_EH_FRAME,
					vaddr, (uint64_t)vaddr + (1u << 20), &x, &err) == 0) {
			/* a start found is at or below the address, inside the range kept */
			for (a = vaddr; a < (uint64_t)vaddr + 256; a += 7)
				if (fde_index_lookup(x, a, &start) && (start > a || start < vaddr))
					__builtin_trap();
			fde_index_free(x);
		} else if (x) {
			__builtin_trap();
		}
	}
	if (mode & 2) {
		struct unwind_table t;
		struct unwind_range r = { vaddr, (uint64_t)vaddr + 64 };
		struct unwind_cfi_sections sec;
		size_t i;

		memset(&sec, 0, sizeof(sec));
		if (mode & 1) {
			sec.df = data;
			sec.df_size = size;
		} else {
			sec.eh = data;
			sec.eh_size = size;
			sec.eh_vaddr = vaddr;
			sec.eh_hdr = hdr;
			sec.eh_hdr_size = hdr_size;
			sec.eh_hdr_vaddr = (uint64_t)vaddr - 0x10000;
		}
		if (unwind_table_from_sections(&sec, &r, 1, &t, &err) == 0) {
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
