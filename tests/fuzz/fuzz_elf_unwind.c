/* fuzz_elf_unwind.c: what the agent does with the file behind an executable mapping, on an
 * arbitrary ELF image: open it, build its unwind table (unwind_table_build: .eh_frame,
 * .debug_frame, the same image as its "debug file", entry point, PLT, frame-pointer rule,
 * CPython eval ranges flagged as interpreter code), look entries up, and read every section by
 * index. Complements fuzz_elf (the reader) and fuzz_cfi (raw CFI sections). */
#include "agent/elf.h"
#include "runtime/python/python_proc.h"
#include "agent/unwind_table.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_table(const struct unwind_table *t)
{
	size_t i;

	if (!t->count || (t->entries[t->count - 1].kind & UNW_KIND_MASK) != UNW_INVALID)
		__builtin_trap();
	for (i = 1; i < t->count; i++)
		if (t->entries[i].pc <= t->entries[i - 1].pc)
			__builtin_trap();
	for (i = 0; i < t->count && i < 64; i++)
		if (unwind_table_lookup(t, t->base + t->entries[i].pc) != &t->entries[i])
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_file *e = NULL;
	struct unwind_range interp[2];
	struct unwind_table t;
	struct errmsg err;
	uint64_t lo[2], hi[2];
	size_t i, n;
	int ninterp;

	if (elf_open_mem(data, size, &e, &err) < 0)
		return 0;
	ninterp = python_eval_ranges(e, lo, hi);
	for (i = 0; i < (size_t)ninterp; i++) {
		interp[i].lo = lo[i];
		interp[i].hi = hi[i];
	}
	if (unwind_table_build(e, e, interp, (size_t)ninterp, &t, &err) == 0) {
		check_table(&t);
		unwind_table_release(&t);
	}
	n = elf_section_count(e);
	for (i = 0; i < n; i++) {
		struct elf_section_info si;
		const char *name;
		const void *d;
		size_t len;

		if (elf_section_info_at(e, i, &name, &si) == 0 && !name)
			__builtin_trap();
		elf_section_at(e, i, &d, &len);
	}
	elf_close(e);
	return 0;
}
