/* fuzz_elf.c: libFuzzer target for the ELF reader (src/agent/elf.c): open a memory image,
 * load and look up symbols, read the build id, debuglink, sections (compressed ones too),
 * segments and address translations (elf_mapping_bias() too). */
#include "agent/elf.h"
#include "lib/log.h"

#include <stdint.h>
#include <stddef.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *sections[] = { ".text", ".eh_frame", ".eh_frame_hdr", ".debug_info",
					  ".debug_frame", ".gnu_debuglink", ".dynstr", ".symtab" };
	struct elf_file *e = NULL;
	struct errmsg err;
	const struct elf_segment *segs;
	const struct elf_symbol *syms;
	uint64_t v, off, id;
	uint32_t crc;
	size_t i, n, nsyms;

	if (elf_open_mem(data, size, &e, &err) < 0)
		return 0;
	(void)elf_build_id(e);
	(void)elf_debuglink(e, &crc);
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		const void *d;
		struct elf_section_info si;

		elf_section_info(e, sections[i], &si);
		elf_section(e, sections[i], &d, &n, &v);
	}
	segs = elf_segments(e, &n);
	for (i = 0; i < n; i++) {
		elf_vaddr_of_offset(e, segs[i].offset, &v);
		elf_offset_of_vaddr(e, segs[i].vaddr, &off);
		elf_load_bias(e, 0x7f0000000000ULL, segs[i].offset & ~0xfffULL);
		{
			struct elf_mapping m = { 0x7f0000001000ULL, 0x7f0000009000ULL,
						 segs[i].offset & ~0xfffULL, segs[i].flags };
			uint64_t hint = 0x7f0000000000ULL;

			elf_mapping_bias(e, &m, &hint, &v);
			elf_mapping_bias(e, &m, NULL, &v);
		}
	}
	elf_symbols_load(e, &err);
	syms = elf_symbols(e, &nsyms);
	for (i = 0; i < nsyms && i < 64; i++) {
		const struct elf_symbol *s = elf_symbol_lookup(e, syms[i].addr + syms[i].size / 2);

		if (s)
			(void)elf_symbol_name(e, s);
	}
	elf_symbol_lookup(e, 0x401000);
	elf_find_symbol(e, "_start", &v, NULL);
	elf_file_id(e, &id);
	elf_close(e);
	return 0;
}
