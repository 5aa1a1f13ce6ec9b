/* fuzz_v8.c: the V8 readers on hostile input. The first byte chooses:
 *   even: the input after it is an ELF file: V8's metadata reader (v8_file_detect()).
 *   odd:  registers (pc, sp, fp, the bytecode offset register), where the builtins start (16 KiB
 *         of them: the interpreter's trampoline at +0x100, bytecode handlers from +0x3000; 5 x 8
 *         bytes) and a memory image mapped at IMAGE_BASE, read with Node 20's layout (bit 1:
 *         under pointer compression):
 *         the frame walk from those registers, the symbolization of what it found, every
 *         object reader on the first words of the image taken as objects, the position table,
 *         Sparkplug and line decoders and node's command-line parser on the raw bytes.
 * Nothing may crash, hang or allocate without bound. tests/unit/v8_fixture.h builds the
 * corpus's heaps. */
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "runtime/procmem.h"
#include "runtime/v8/v8_heap.h"
#include "runtime/v8/v8_meta.h"
#include "runtime/v8/v8_runtime.h"
#include "runtime/v8/v8_symbols.h"
#include "runtime/v8/v8_walk.h"
#include "../unit/v8_fixture.h"

#include <stdint.h>
#include <string.h>

#define IMAGE_BASE (0x5500000000ULL + 0x10000) /* the fixture's heaps live there */
#define REGS 40

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct image {
	uint64_t lo, hi;
};

static int in_image(void *ctx, uint64_t pc)
{
	const struct image *im = ctx;

	return pc >= im->lo && pc < im->hi;
}

static void decoders(const uint8_t *d, size_t n, const struct v8_file *f)
{
	struct v8_pos *pos = NULL;
	size_t npos = 0, half = n / 2;
	uint32_t ends[8] = { 3, 9, 27, 81, 243, 729, 2187, 6561 };
	char out[64];

	if (v8_spt_decode(d, n, &pos, &npos) == 0) {
		v8_spt_lookup(pos, npos, n > 0 ? d[0] : 0);
		v8_spt_lookup(pos, npos, 0xffffffffu);
		xfree(pos);
	}
	v8_baseline_offset(d, half, d + half, n - half, f->bytecode_sizes, f->nbytecodes,
			   n > 1 ? (uint32_t)d[1] * 3 : 0);
	v8_line_of(ends, 8, n > 2 ? (int32_t)d[2] * 40 : 0);
	v8_node_main_script((const char *)d, n, out, sizeof(out));
}

static void objects(struct v8_reader *r, const uint8_t *d, size_t n)
{
	struct v8_sfi_info sfi;
	struct v8_code_info ci;
	struct v8_inlined *inl;
	uint32_t *ends, type;
	uint8_t *bytes;
	uint64_t obj, v, outer;
	char name[128];
	size_t i, k, len;

	/* the image's first words, taken as tagged pointers into it */
	for (i = 0; i + 8 <= n && i < 128; i += 8) {
		memcpy(&obj, d + i, 8);
		obj |= 1;
		r->budget = 2000;
		v8_type_of(r, obj, &type);
		v8_field(r, obj, 8, &v);
		v8_read_string(r, obj, name, sizeof(name));
		if (v8_string_line_ends(r, obj, &ends, &len) == 0)
			xfree(ends);
		r->budget = 2000;
		v8_read_sfi(r, obj, &sfi);
		r->budget = 2000;
		if (v8_read_script(r, obj, name, sizeof(name), &ends, &len) == 0)
			xfree(ends);
		r->budget = 2000;
		if (v8_read_code(r, obj, &ci) == 0 && ci.size)
			v8_code_at_pc(r, ci.start + ci.size / 2, &v);
		r->budget = 2000;
		if (v8_read_inlining(r, obj, &inl, &k, &outer) == 0)
			xfree(inl);
		r->budget = 2000;
		if (v8_read_byte_array(r, obj, &bytes, &len) == 0)
			xfree(bytes);
		if (v8_read_bytecodes(r, obj, &bytes, &len) == 0)
			xfree(bytes);
		v8_bytecode_of(r, obj);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmem_region region;
	struct procmem_image img = { &region, 1 };
	struct procmem m;
	struct v8_reader r;
	struct v8_file f;
	struct v8_proc p;
	struct v8_walk_result res;
	struct v8_symbols *s;
	struct runtime_frame fr[16];
	struct image im;
	uint64_t regs[5], words[512];
	size_t n, i, used;

	if (size < 1)
		return 0;
	log_set_level(LOG_ERROR);
	if (!(data[0] & 1)) {
		struct elf_file *e = NULL;
		struct errmsg err;

		if (elf_open_mem(data + 1, size - 1, &e, &err) == 0) {
			if (v8_file_detect(e, "/usr/bin/node", &f, &err) == 1)
				v8_file_release(&f);
			elf_close(e);
		}
		return 0;
	}
	if (size < 1 + REGS)
		return 0;
	v8_fixture_file(&f, (data[0] >> 1) & 1);
	memcpy(regs, data + 1, REGS);
	region.addr = IMAGE_BASE;
	region.data = data + 1 + REGS;
	region.len = size - 1 - REGS;
	procmem_init_image(&m, &img);
	memset(&r, 0, sizeof(r));
	r.mem = &m;
	r.f = &f;
	im.lo = IMAGE_BASE;
	im.hi = IMAGE_BASE + region.len;
	decoders(data + 1 + REGS, region.len, &f);
	objects(&r, data + 1 + REGS, region.len);

	/* the walk: the whole image is V8 code */
	memset(&p, 0, sizeof(p));
	p.off = f.off;
	p.builtins_lo[0] = regs[4];
	p.builtins_hi[0] = regs[4] + 0x4000;
	p.interp_lo[0] = 0x100;
	p.interp_hi[0] = 0x200;
	p.handlers_lo = 0x3000;
	p.handlers_hi = 0x4000;
	n = v8_walk(&m, &p, regs[0], regs[1], regs[2], regs[3], in_image, &im, words, 512, &res);
	s = v8_symbols_new(64);
	r.budget = V8_READ_BUDGET;
	v8_symbols_note(s, 1, &r, words, n);
	for (i = 0; i < n; i += used) {
		if (FW_TAG_KIND(words[i] >> FW_TAG_SHIFT) != UNWINDER_V8) {
			used = 1;
			continue;
		}
		v8_symbols_frames(s, 1, i & 1 ? NULL : &r, &f, words + i, n - i, &used, fr, 16);
	}
	/* the image's words as frame words */
	for (i = 0; i + 8 <= region.len && i < 256; i += 8) {
		memcpy(&words[i / 8], region.data + i, 8);
		words[i / 8] = (words[i / 8] & ~(0xfULL << 60)) | (FW_TAG_FIRST(UNWINDER_V8) << FW_TAG_SHIFT);
	}
	n = region.len / 8 < 32 ? region.len / 8 : 32;
	v8_symbols_note(s, 1, &r, words, n);
	for (i = 0; i < n; i += used)
		v8_symbols_frames(s, 1, &r, &f, words + i, n - i, &used, fr, 16);
	v8_symbols_forget_pid(s, 1);
	v8_symbols_free(s);
	return 0;
}
