/* fuzz_elf_unwind.c: what the agent does with the file behind an executable mapping, on an
 * arbitrary ELF image: open it, ask the CPython runtime whether it is an interpreter
 * (python_file_detect: name, .PyRuntime, symbols, eval ranges) and the HotSpot runtime whether
 * it is a libjvm (hotspot_file_detect: .dynsym, else the symbols), build its unwind table
 * (unwind_table_build: .eh_frame, .debug_frame, the same image as its "debug file", entry
 * point, PLT, frame-pointer rule, the eval ranges flagged as interpreter code), look entries up,
 * and read every section by index. Complements fuzz_elf (the reader) and fuzz_cfi (raw CFI
 * sections). */
#include "agent/elf.h"
#include "runtime/hotspot/hotspot_vm.h"
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
	struct python_file pf;
	struct hotspot_file hf;
	struct unwind_table t;
	struct errmsg err;
	size_t i, n;
	int ninterp = 0;

	if (elf_open_mem(data, size, &e, &err) < 0)
		return 0;
	/* named like an interpreter so the detection always goes as far as the symbols */
	if (python_file_detect(e, "/usr/lib/libpython3.12.so.1.0", &pf) == 1) {
		if (pf.neval < 0 || pf.neval > 2 || pf.major != 3 || pf.minor != 12)
			__builtin_trap();
		for (i = 0; i < (size_t)pf.neval; i++) {
			interp[i].lo = pf.eval_lo[i];
			interp[i].hi = pf.eval_hi[i];
		}
		ninterp = pf.neval;
	}
	/* named like libjvm so that its symbols are looked at */
	if (hotspot_file_detect(e, "/usr/lib/jvm/x/lib/server/libjvm.so", &hf) == 1) {
		for (i = 0; i < HS_SYM__COUNT; i++)
			if (!hf.sym[i])
				__builtin_trap();
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
