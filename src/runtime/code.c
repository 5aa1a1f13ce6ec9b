/* code.c: function bounds from .eh_frame_hdr and x86-64 code patterns (code.h). */
#include "runtime/code.h"
#include "agent/elf.h"

#include <errno.h>
#include <string.h>

#define EH_PE_UDATA4 0x03
#define EH_PE_SDATA4 0x0b
#define EH_PE_PCREL  0x10
#define EH_PE_DATAREL 0x30

int code_read(struct elf_file *e, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off;

	if (len > CODE_MAX_READ)
		return -E2BIG;
	if (elf_offset_of_vaddr(e, vaddr, &off) < 0)
		return -ENOENT;
	return elf_read(e, off, buf, len) < 0 ? -EIO : 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int code_function_range(struct elf_file *e, uint64_t vaddr, uint64_t *lo, uint64_t *hi)
{
	const uint8_t *h;
	uint8_t fde[16];
	uint64_t hv, count, first = 0, last, fde_addr, begin;
	size_t size;
	int64_t loc;
	uint32_t range;

	if (elf_section(e, ".eh_frame_hdr", (const void **)&h, &size, &hv) < 0 || size < 12)
		return -ENOENT;
	/* version 1; eh_frame_ptr any 4-byte encoding; count udata4; table datarel sdata4: the
	 * encodings every x86-64 toolchain writes */
	if (h[0] != 1 || (h[1] & 0x0f) != EH_PE_SDATA4 || h[2] != EH_PE_UDATA4 ||
	    h[3] != (EH_PE_DATAREL | EH_PE_SDATA4))
		return -ENOENT;
	count = le32(h + 8);
	if (count == 0 || count > (size - 12) / 8)
		return -ENOENT;
	/* the last entry whose initial location is <= vaddr */
	last = count;
	while (last - first > 1) {
		uint64_t mid = first + (last - first) / 2;

		loc = (int32_t)le32(h + 12 + 8 * mid);
		if (hv + loc <= vaddr)
			first = mid;
		else
			last = mid;
	}
	loc = (int32_t)le32(h + 12 + 8 * first);
	if (hv + loc > vaddr)
		return -ENOENT;
	fde_addr = hv + (int64_t)(int32_t)le32(h + 12 + 8 * first + 4);
	if (code_read(e, fde_addr, fde, sizeof(fde)) < 0)
		return -EIO;
	if (le32(fde) == 0xffffffffu || le32(fde) < 12 || le32(fde + 4) == 0)
		return -ENOENT; /* 64-bit length, or a CIE: not what the table points at */
	begin = fde_addr + 8 + (int64_t)(int32_t)le32(fde + 8); /* pcrel sdata4 */
	range = le32(fde + 12);
	if (begin != hv + (uint64_t)loc || vaddr >= begin + range)
		return -ENOENT;
	*lo = begin;
	*hi = begin + range;
	return 0;
}

int code_x86_branch_targets(const uint8_t *buf, size_t len, uint64_t base, int jumps,
			    uint64_t *out, int max)
{
	size_t i;
	int n = 0;

	for (i = 0; i + 5 <= len && n < max; i++) {
		if (buf[i] != 0xe8 && !(jumps && buf[i] == 0xe9))
			continue;
		out[n++] = base + i + 5 + (int64_t)(int32_t)le32(buf + i + 1);
	}
	return n;
}

int code_x86_riprel(const uint8_t *buf, size_t len, uint64_t base, const uint8_t *ops,
		    size_t nops, struct code_riprel *out, int max)
{
	size_t i, k;
	int n = 0;

	for (i = 0; i + 6 <= len && n < max; i++) {
		uint8_t modrm = buf[i + 1], rex = 0;

		if ((modrm & 0xc7) != 0x05)
			continue;
		for (k = 0; k < nops && ops[k] != buf[i]; k++)
			;
		if (k == nops)
			continue;
		if (i > 0 && (buf[i - 1] & 0xf0) == 0x40)
			rex = buf[i - 1];
		out[n].opcode = buf[i];
		out[n].rex = rex;
		out[n].reg = (uint8_t)(((modrm >> 3) & 7) | ((rex & 4) ? 8 : 0));
		out[n].at = (uint32_t)i;
		out[n].target = base + i + 6 + (int64_t)(int32_t)le32(buf + i + 2);
		n++;
	}
	return n;
}
