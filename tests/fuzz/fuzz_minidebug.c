/* fuzz_minidebug.c: libFuzzer target for MiniDebugInfo (src/agent/minidebug.c): the input is an
 * ELF image whose .gnu_debugdata is decompressed (xz, bounded), opened as an ELF and whose
 * symbols are loaded and looked up; the input is also decompressed as a bare xz stream. */
#include "agent/elf.h"
#include "agent/minidebug.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_file *e = NULL, *mini = NULL;
	const struct elf_symbol *syms;
	void *out = NULL;
	size_t n, i;

	if (minidebug_decompress(data, size, 1 << 20, &out, &n, NULL) == 0)
		xfree(out);
	if (elf_open_mem(data, size, &e, NULL) < 0)
		return 0;
	if (minidebug_open(e, &mini, NULL) == 0) {
		elf_symbols_load(mini, NULL);
		syms = elf_symbols(mini, &n);
		for (i = 0; i < n && i < 64; i++)
			(void)elf_symbol_name(mini, elf_symbol_lookup(mini, syms[i].addr) ?: &syms[i]);
		elf_close(mini);
	}
	elf_close(e);
	return 0;
}
