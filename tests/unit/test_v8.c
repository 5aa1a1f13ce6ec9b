/* test_v8.c: V8 (Node.js) support. The metadata of the installed node against the layout
 * checked by hand on node 20 (and made-up files: what is refused and why); the position table,
 * Sparkplug offset and line decoders; strings of every representation; the frame walk and the
 * symbolization over made-up heaps, with and without pointer compression: interpreted,
 * Sparkplug, TurboFan with an inlined function, a function found by pc, typed frames, a leaf
 * bytecode handler, names, inferred names and anonymous functions; the reuse checks (an address
 * holding another function later, a function the GC moved, a process gone); node's command
 * line; and a live node process walked from its registers. Node missing: those tests are
 * skipped loudly. */
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/procmem.h"
#include "runtime/v8/v8_heap.h"
#include "runtime/v8/v8_meta.h"
#include "runtime/v8/v8_runtime.h"
#include "runtime/v8/v8_symbols.h"
#include "runtime/v8/v8_walk.h"
#include "test.h"
#include "v8_fixture.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NODE "/usr/bin/node"

/* ---- metadata */

static void test_meta_node(void)
{
	struct elf_file *e = NULL;
	struct errmsg err = { "" };
	struct v8_file f;
	int rc;

	if (access(NODE, X_OK))
		SKIP("%s is not installed", NODE);
	CHECK_EQ_INT(elf_open(NODE, &e, &err), 0);
	if (!e)
		return;
	rc = v8_file_detect(e, NODE, &f, &err);
	CHECK_EQ_INT(rc, 1);
	if (rc == 1) {
		const struct v8_layout *l = &f.lay;

		printf("  %s: V8 %u.%u.%u.%u, %d metadata symbols, derived: %s\n", NODE, f.major,
		       f.minor, f.build, f.patch, f.nmetadata, f.fallbacks);
		CHECK(f.nmetadata > 400);
		/* what node 20 (V8 11.3) was read by hand to be; other majors differ */
		if (f.major == 11 && f.minor == 3) {
			CHECK_EQ_INT(l->tagged_size, 8);
			CHECK_EQ_INT(l->smi_shift, 32);
			CHECK_EQ_INT(l->fp_context, -8);
			CHECK_EQ_INT(l->fp_function, -16);
			CHECK_EQ_INT(l->fp_bytecode_array, -32);
			CHECK_EQ_INT(l->fp_bytecode_offset, -40);
			CHECK_EQ_INT(l->fn_shared, 24);
			CHECK_EQ_INT(l->fn_code, 48);
			CHECK_EQ_INT(l->sfi_name_or_scope_info, 16);
			CHECK_EQ_INT(l->sfi_script, 32);
			CHECK_EQ_INT(l->script_name, 16);
			CHECK_EQ_INT(l->script_line_ends, 56);
			CHECK_EQ_INT(l->code_spt, 24);
			CHECK_EQ_INT(l->code_start, 40);
			CHECK_EQ_INT(l->code_flags, 48);
			CHECK_EQ_INT(l->code_size, 56);
			CHECK_EQ_INT(l->bca_data, 54);
			CHECK_EQ_INT(l->bca_spt, 32);
			CHECK_EQ_INT(l->t_js_function_first, VT_JS_FUNCTION);
			CHECK_EQ_INT(l->t_sfi, VT_SFI);
			CHECK_EQ_INT(l->t_code, VT_CODE);
			CHECK_EQ_INT(l->kind_baseline, VK_BASELINE);
			CHECK_EQ_INT(l->kind_turbofan, VK_TURBOFAN);
			CHECK_EQ_INT(f.off.type_entry, VF_ENTRY);
			CHECK_EQ_INT(f.off.bc_offset_reg, 9);
			CHECK_EQ_STR(v8_frame_type_name(&f, VF_INTERPRETED), "InterpretedFrame");
			/* the fallbacks: fields this metadata does not have */
			CHECK(strstr(f.fallbacks, "JSFunction::code") != NULL);
			CHECK(strstr(f.fallbacks, "Code::instruction_start") != NULL);
		}
		CHECK(f.builtins_hi - f.builtins_lo > (1u << 20));
		CHECK(f.builtins_offset != 0);
		CHECK_EQ_INT(f.ninterp, 4);
		CHECK(f.interp_lo[0] >= f.builtins_lo && f.interp_hi[0] <= f.builtins_hi);
		CHECK(f.handlers_lo > f.builtins_lo && f.handlers_hi == f.builtins_hi);
		CHECK(f.nbytecodes > 100);
		CHECK(f.blob_code_var != 0 && f.blob_size_var != 0);
		v8_file_release(&f);
	} else {
		printf("  %s\n", err.msg);
	}
	elf_close(e);
}

/* ---- a made-up ELF file with v8dbg_ symbols */

struct elfimg {
	uint8_t b[65536];
	size_t len;
	char strtab[16384];
	size_t strlen_;
	Elf64_Sym syms[256];
	int nsyms;
	int32_t data[256];
	int ndata;
};

#define IMG_DATA_VADDR 0x600000ULL

static void img_sym(struct elfimg *im, const char *name, int32_t value)
{
	Elf64_Sym *s = &im->syms[im->nsyms++];
	size_t n = strlen(name) + 1;

	memset(s, 0, sizeof(*s));
	s->st_name = (uint32_t)im->strlen_;
	memcpy(im->strtab + im->strlen_, name, n);
	im->strlen_ += n;
	s->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
	s->st_shndx = 2;
	s->st_value = IMG_DATA_VADDR + 4 * (uint64_t)im->ndata;
	s->st_size = 4;
	im->data[im->ndata++] = value;
}

/* The metadata of node 20 minus what skip names (NULL: all), with v8dbg_off_fp_function at
 * fp_function. */
static void img_metadata(struct elfimg *im, const char *skip, int32_t fp_function, int major,
			 int minor)
{
	static const struct { const char *name; int32_t v; } meta[] = {
		{ "v8dbg_TaggedSize", 8 }, { "v8dbg_SystemPointerSize", 8 },
		{ "v8dbg_SmiShiftSize", 31 }, { "v8dbg_HeapObjectTag", 1 },
		{ "v8dbg_HeapObjectTagMask", 3 }, { "v8dbg_SmiTag", 0 }, { "v8dbg_SmiTagMask", 1 },
		{ "v8dbg_FirstNonstringType", 128 }, { "v8dbg_StringRepresentationMask", 7 },
		{ "v8dbg_StringEncodingMask", 8 }, { "v8dbg_OneByteStringTag", 8 },
		{ "v8dbg_SeqStringTag", 0 }, { "v8dbg_ConsStringTag", 1 },
		{ "v8dbg_ExternalStringTag", 2 },
		{ "v8dbg_class_HeapObject__map__Map", 0 },
		{ "v8dbg_class_Map__instance_type__uint16_t", 12 },
		{ "v8dbg_class_FixedArrayBase__length__SMI", 8 },
		{ "v8dbg_class_FixedArray__data__uintptr_t", 16 },
		{ "v8dbg_class_String__length__int32_t", 12 },
		{ "v8dbg_class_SeqOneByteString__chars__char", 16 },
		{ "v8dbg_class_ConsString__first__String", 16 },
		{ "v8dbg_class_ConsString__second__String", 24 },
		{ "v8dbg_class_JSFunction__shared__SharedFunctionInfo", 24 },
		{ "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object", 16 },
		{ "v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject", 32 },
		{ "v8dbg_class_SharedFunctionInfo__length__uint16_t", 40 },
		{ "v8dbg_class_SharedFunctionInfo__flags__int", 48 },
		{ "v8dbg_class_Script__source__Object", 8 },
		{ "v8dbg_class_Script__name__Object", 16 },
		{ "v8dbg_class_Code__deoptimization_data__FixedArray", 16 },
		{ "v8dbg_class_Code__source_position_table__ByteArray", 24 },
		{ "v8dbg_class_BytecodeArray__data__uintptr_t", 54 },
		{ "v8dbg_CodeKindBaseline", 11 }, { "v8dbg_CodeKindFieldMask", 15 },
		{ "v8dbg_off_fp_context", -8 },
		{ "v8dbg_type_JSFunction__JS_FUNCTION_TYPE", 2066 },
		{ "v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 262 },
		{ "v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE", 261 },
		{ "v8dbg_type_Script__SCRIPT_TYPE", 167 }, { "v8dbg_type_Code__CODE_TYPE", 245 },
		{ "v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE", 191 },
		{ "v8dbg_type_ByteArray__BYTE_ARRAY_TYPE", 190 },
		{ "v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", 175 },
		{ "v8dbg_frametype_EntryFrame", 1 }, { "v8dbg_frametype_InterpretedFrame", 13 },
	};
	size_t i;

	for (i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
		if (!skip || strcmp(skip, meta[i].name))
			img_sym(im, meta[i].name, meta[i].v);
	if (!skip || strcmp(skip, "v8dbg_off_fp_function"))
		img_sym(im, "v8dbg_off_fp_function", fp_function);
	img_sym(im, "_ZN2v88internal7Version6major_E", major);
	img_sym(im, "_ZN2v88internal7Version6minor_E", minor);
	img_sym(im, "_ZN2v88internal7Version6build_E", 244);
}

/* Lay out: ELF header, .data, .symtab, .strtab, .shstrtab, section headers; one PT_LOAD of the
 * data. Returns the image length. */
static size_t img_finish(struct elfimg *im)
{
	static const char shstr[] = "\0.data\0.symtab\0.strtab\0.shstrtab\0";
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr sh[5];
	size_t off_data, off_sym, off_str, off_shstr, off_sh, off = sizeof(eh) + sizeof(ph);

	memset(&eh, 0, sizeof(eh));
	memset(&ph, 0, sizeof(ph));
	memset(sh, 0, sizeof(sh));
	off_data = off;
	off += 4 * (size_t)im->ndata;
	off = (off + 7) & ~(size_t)7;
	off_sym = off;
	off += sizeof(Elf64_Sym) * (size_t)(im->nsyms + 1);
	off_str = off;
	off += im->strlen_;
	off_shstr = off;
	off += sizeof(shstr);
	off = (off + 7) & ~(size_t)7;
	off_sh = off;
	off += sizeof(sh);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = off_sh;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 5;
	eh.e_shstrndx = 4;
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_W;
	ph.p_offset = off_data;
	ph.p_vaddr = IMG_DATA_VADDR;
	ph.p_filesz = ph.p_memsz = 4 * (uint64_t)im->ndata;
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_flags = SHF_ALLOC | SHF_WRITE;
	sh[1].sh_addr = IMG_DATA_VADDR;
	sh[1].sh_offset = off_data;
	sh[1].sh_size = 4 * (uint64_t)im->ndata;
	sh[2].sh_name = 7;
	sh[2].sh_type = SHT_SYMTAB;
	sh[2].sh_offset = off_sym;
	sh[2].sh_size = sizeof(Elf64_Sym) * (uint64_t)(im->nsyms + 1);
	sh[2].sh_link = 3;
	sh[2].sh_entsize = sizeof(Elf64_Sym);
	sh[3].sh_name = 15;
	sh[3].sh_type = SHT_STRTAB;
	sh[3].sh_offset = off_str;
	sh[3].sh_size = im->strlen_;
	sh[4].sh_name = 23;
	sh[4].sh_type = SHT_STRTAB;
	sh[4].sh_offset = off_shstr;
	sh[4].sh_size = sizeof(shstr);
	/* every symbol lives in section 1 (.data) */
	{
		int i;

		for (i = 0; i < im->nsyms; i++)
			im->syms[i].st_shndx = 1;
	}
	memset(im->b, 0, sizeof(im->b));
	memcpy(im->b, &eh, sizeof(eh));
	memcpy(im->b + sizeof(eh), &ph, sizeof(ph));
	memcpy(im->b + off_data, im->data, 4 * (size_t)im->ndata);
	memcpy(im->b + off_sym + sizeof(Elf64_Sym), im->syms, sizeof(Elf64_Sym) * (size_t)im->nsyms);
	memcpy(im->b + off_str, im->strtab, im->strlen_);
	memcpy(im->b + off_shstr, shstr, sizeof(shstr));
	memcpy(im->b + off_sh, sh, sizeof(sh));
	im->len = off;
	return off;
}

static int detect_img(const char *skip, int32_t fp_function, int major, int minor,
		      const char *path, struct v8_file *f, struct errmsg *err)
{
	struct elfimg *im = xcalloc(1, sizeof(*im));
	struct elf_file *e = NULL;
	int rc;

	im->strlen_ = 1; /* "" at 0 */
	if (major)
		img_metadata(im, skip, fp_function, major, minor);
	img_finish(im);
	rc = elf_open_mem(im->b, im->len, &e, err);
	if (rc == 0)
		rc = v8_file_detect(e, path, f, err);
	elf_close(e);
	xfree(im);
	return rc;
}

static void test_meta_refusals(void)
{
	struct errmsg err = { "" };
	struct v8_file f;

	/* complete metadata: found, with what was derived said */
	CHECK_EQ_INT(detect_img(NULL, -16, 11, 3, "/usr/bin/node", &f, &err), 1);
	CHECK_EQ_INT(f.lay.fn_code, 48);
	CHECK_EQ_INT(f.lay.code_start, 40);
	CHECK_EQ_INT(f.lay.code_size, 56);
	CHECK_EQ_INT(f.lay.kind_turbofan, 13);
	CHECK(strstr(f.fallbacks, "Code::instruction_size") != NULL);
	v8_file_release(&f);
	/* the same file under another name, without v8dbg_ in its dynamic symbols: not looked at */
	CHECK_EQ_INT(detect_img(NULL, -16, 11, 3, "/usr/bin/python3", &f, &err), 0);
	/* a name like node, no metadata at all: refused, said why */
	err.msg[0] = '\0';
	CHECK_EQ_INT(detect_img(NULL, -16, 0, 0, "/opt/node20", &f, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "no V8 postmortem metadata") != NULL);
	/* a required field missing: refused with its name */
	CHECK_EQ_INT(detect_img("v8dbg_off_fp_function", -16, 11, 3, "node", &f, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "off_fp_function") != NULL);
	CHECK_EQ_INT(detect_img("v8dbg_class_JSFunction__shared__SharedFunctionInfo", -16, 11, 3,
				"node", &f, &err), -ENOTSUP);
	/* a lying value: a frame slot the walker's read cannot reach */
	CHECK_EQ_INT(detect_img(NULL, -4096, 11, 3, "node", &f, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "out of reach") != NULL);
	/* too old a V8 */
	CHECK_EQ_INT(detect_img(NULL, -16, 10, 2, "node", &f, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "older than") != NULL);
	/* names */
	CHECK(v8_is_embedder_path("/usr/bin/node"));
	CHECK(v8_is_embedder_path("node20"));
	CHECK(v8_is_embedder_path("/usr/lib/libnode.so.115"));
	CHECK(v8_is_embedder_path("nodejs"));
	CHECK(!v8_is_embedder_path("/usr/bin/nodemon"));
	CHECK(!v8_is_embedder_path("/usr/sbin/nodeX1"));
}

/* ---- decoders */

static void test_decoders(void)
{
	static const int32_t e[][3] = { { -1, 10, -1 }, { 0, 12, -1 }, { 7, 40, 0 }, { 30, 35, -1 },
					 { 31, 100, 1 } };
	uint8_t tab[128], bad[] = { 0x80, 0x80 };
	struct v8_pos *pos = NULL;
	size_t n = 0, len = vh_spt(tab, e, 5);
	uint32_t ends[] = { 9, 19, 29, 39 };
	int64_t raw;

	CHECK_EQ_INT(v8_spt_decode(tab, len, &pos, &n), 0);
	CHECK_EQ_INT(n, 5);
	if (n == 5) {
		CHECK_EQ_INT(pos[0].code_offset, 0); /* the entry's -1 */
		CHECK_EQ_INT(pos[2].code_offset, 7);
		CHECK_EQ_INT(v8_pos_script_offset(pos[2].position), 40);
		CHECK_EQ_INT(v8_pos_inlining_id(pos[2].position), 0);
		CHECK_EQ_INT(v8_pos_inlining_id(pos[3].position), -1);
	}
	raw = v8_spt_lookup(pos, n, 6);
	CHECK_EQ_INT(v8_pos_script_offset((uint64_t)raw), 12);
	raw = v8_spt_lookup(pos, n, 30);
	CHECK_EQ_INT(v8_pos_script_offset((uint64_t)raw), 35);
	raw = v8_spt_lookup(pos, n, 1000);
	CHECK_EQ_INT(v8_pos_inlining_id((uint64_t)raw), 1);
	xfree(pos);
	CHECK_EQ_INT(v8_spt_decode(bad, sizeof(bad), &pos, &n), -EINVAL);
	CHECK(pos == NULL);
	CHECK_EQ_INT(v8_spt_decode(tab, 0, &pos, &n), 0);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(v8_spt_lookup(pos, 0, 3), -1);
	xfree(pos);
	/* lines: a position on a '\n' is on that line */
	CHECK_EQ_INT(v8_line_of(ends, 4, 0), 1);
	CHECK_EQ_INT(v8_line_of(ends, 4, 9), 1);
	CHECK_EQ_INT(v8_line_of(ends, 4, 10), 2);
	CHECK_EQ_INT(v8_line_of(ends, 4, 39), 4);
	CHECK_EQ_INT(v8_line_of(ends, 4, 40), 5);
	CHECK_EQ_INT(v8_line_of(ends, 4, -1), 0);
	CHECK_EQ_INT(v8_line_of(NULL, 0, 5), 1);
}

static void test_baseline_offsets(void)
{
	/* bytecodes (sizes: vfix_bytecode_sizes): 4 (2 bytes), 7 (5), 0 4 (Wide 4: 1 + 3),
	 * 5 (3) at offsets 0, 2, 7, 11 */
	static const uint8_t bc[] = { 4, 0, 7, 0, 0, 0, 0, 0, 4, 0, 0, 5, 0, 0 };
	/* pc deltas: prologue ends at 10, then one entry per bytecode */
	static const uint8_t table[] = { 10, 6, 20, 0x82, 0x01, 4 };
	const uint8_t *sizes = &vfix_bytecode_sizes[0][0];

	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 5), -1);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 10), -1);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 11), 0);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 16), 0);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 17), 2);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 36), 2);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 37), 7);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 166), 7);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 167), 11);
	/* past the table, or bytecodes that do not match it */
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 8, 1000), -2);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, 3, sizes, 8, 40), -2);
	CHECK_EQ_INT(v8_baseline_offset(table, sizeof(table), bc, sizeof(bc), NULL, 0, 40), -2);
}

/* ---- heaps */

#define HEAP_SIZE (1u << 20)

struct heapfix {
	struct v8_file f;
	struct vheap h;
	uint8_t *mem;
	struct procmem_region region;
	struct procmem_image img;
	struct procmem m;
	struct v8_reader r;
};

static void heap_init(struct heapfix *x, int compressed)
{
	v8_fixture_file(&x->f, compressed);
	x->mem = xmalloc(HEAP_SIZE);
	vh_init(&x->h, &x->f, x->mem, HEAP_SIZE);
	x->region.addr = x->h.base;
	x->region.data = x->mem;
	x->region.len = HEAP_SIZE;
	x->img.regions = &x->region;
	x->img.nregions = 1;
	procmem_init_image(&x->m, &x->img);
	memset(&x->r, 0, sizeof(x->r));
	x->r.mem = &x->m;
	x->r.f = &x->f;
	x->r.budget = V8_READ_BUDGET;
}

static void heap_release(struct heapfix *x)
{
	xfree(x->mem);
}

static void test_strings(int compressed)
{
	struct heapfix x;
	uint16_t two[] = { 'a', 0xe9, 0xd83d, 0xde00, 'z', 0xdc00 };
	uint64_t s1, s2, c, deep;
	uint32_t *ends = NULL;
	size_t n = 0;
	char out[64];
	int i;

	heap_init(&x, compressed);
	s1 = vh_str(&x.h, "hello\nworld");
	CHECK_EQ_INT(v8_read_string(&x.r, s1, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "hello\nworld");
	/* UTF-16 with a surrogate pair and a lone low surrogate */
	s2 = vh_str16(&x.h, two, 6);
	CHECK_EQ_INT(v8_read_string(&x.r, s2, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "a\xc3\xa9\xf0\x9f\x98\x80z\xef\xbf\xbd");
	/* cut at a character boundary */
	CHECK_EQ_INT(v8_read_string(&x.r, s2, out, 4), 0);
	CHECK_EQ_STR(out, "a\xc3\xa9");
	/* cons strings, deep on the left as `s += x` makes them */
	c = vh_cons(&x.h, s1, vh_str(&x.h, "!\n"));
	CHECK_EQ_INT(v8_read_string(&x.r, c, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "hello\nworld!\n");
	deep = vh_str(&x.h, "x\n");
	for (i = 0; i < 200; i++)
		deep = vh_cons(&x.h, deep, vh_str(&x.h, "y\n"));
	CHECK_EQ_INT(v8_string_line_ends(&x.r, deep, &ends, &n), 0);
	CHECK_EQ_INT(n, 201);
	if (n == 201) {
		CHECK_EQ_INT(ends[0], 1);
		CHECK_EQ_INT(ends[200], 401);
	}
	xfree(ends);
	/* not a string */
	CHECK_EQ_INT(v8_read_string(&x.r, vh_obj(&x.h, VT_SFI, 64), out, sizeof(out)), -EINVAL);
	/* a cons string whose halves lie about their lengths */
	vh_w32(&x.h, c - 1 + x.f.lay.str_length, 1u << 30);
	CHECK_EQ_INT(v8_read_string(&x.r, c, out, sizeof(out)), -EINVAL);
	heap_release(&x);
}

static void test_strings_both(void)
{
	test_strings(0);
	test_strings(1);
}

/* ---- the walk and the frames, over a made-up Node process */

struct proc {
	struct heapfix x;
	struct v8_proc p;
	uint64_t builtins, trampoline, handler, jit;  /* code addresses */
	uint64_t stack;                                /* frames live here */
	uint64_t outer_sfi, inner_sfi, f_sfi, anon_sfi, top_sfi;
	uint64_t outer_code, f_fn;
	uint64_t spin_pc;                              /* a pc in code found by scanning */
	uint64_t script, source;                       /* the Script and its source string */
	const char *src;
};

static const char proc_src[] =
	"function inner(x) { return x * 2; }\n"          /* line 1: inlined into outer */
	"function outer(n) {\n"                          /* 2 */
	"  let t = 0;\n"                                 /* 3 */
	"  for (let i = 0; i < n; i++) t += inner(i);\n" /* 4 */
	"  return t;\n"                                  /* 5 */
	"}\n"                                            /* 6 */
	"const f = function () { return outer(9); };\n"  /* 7: V8 infers "f" */
	"module.exports = () => f();\n";                 /* 8: anonymous */

static int pos_of(const char *needle, int nth)
{
	const char *p = proc_src;

	while (nth-- >= 0) {
		p = strstr(p + (p == proc_src ? 0 : 1), needle);
		if (!p)
			return -1;
	}
	return (int)(p - proc_src);
}

/* Lays out the heap and a stack of frames, leaf first:
 *   TurboFan outer (inner inlined, the leaf pc in inner's part)   JIT code
 *   interpreted f (its bytecode offset slot at the call)          pc: the trampoline
 *   interpreted anonymous module function                         pc: the trampoline
 *   a stub frame in JIT code                                      typed
 *   interpreted top-level function                                pc: the trampoline
 *   an entry frame                                                builtins
 * and returns the registers of the leaf. */
static void proc_build(struct proc *P, int compressed, uint64_t *pc, uint64_t *sp, uint64_t *fp)
{
	struct vheap *h = &P->x.h;
	const struct v8_layout *l;
	uint64_t script, spt, bca_f, bca_anon, bca_top, deopt, lits, inlpos, is_code;
	uint8_t tab[256], pod[32], bytes[64];
	int32_t e[4][3];
	size_t len;
	uint64_t fps[6];
	int i;

	memset(P, 0, sizeof(*P));
	heap_init(&P->x, compressed);
	l = &P->x.f.lay;
	P->src = proc_src;
	script = vh_script(h, "file:///srv/app.js", proc_src);
	P->script = script;
	P->source = vh_str(h, proc_src);
	vh_field(h, script, l->script_source, P->source);
	/* bytecodes: the interpreted functions' offsets map to positions */
	memset(bytes, 6, sizeof(bytes));
	e[0][0] = 0; e[0][1] = pos_of("return outer", 0); e[0][2] = -1;
	e[1][0] = 5; e[1][1] = pos_of("outer(9)", 0); e[1][2] = -1;
	len = vh_spt(tab, (const int32_t (*)[3])e, 2);
	bca_f = vh_bytecodes(h, bytes, 16, vh_byte_array(h, VT_BYTE_ARRAY, tab, len, l->fa_data));
	e[0][0] = 3; e[0][1] = pos_of("f()", 0); e[0][2] = -1;
	len = vh_spt(tab, (const int32_t (*)[3])e, 1);
	bca_anon = vh_bytecodes(h, bytes, 16, vh_byte_array(h, VT_BYTE_ARRAY, tab, len, l->fa_data));
	e[0][0] = 0; e[0][1] = pos_of("module", 0); e[0][2] = -1;
	len = vh_spt(tab, (const int32_t (*)[3])e, 1);
	bca_top = vh_bytecodes(h, bytes, 16, vh_byte_array(h, VT_BYTE_ARRAY, tab, len, l->fa_data));
	/* functions */
	P->inner_sfi = vh_sfi(h, vh_scope_info(h, "inner", NULL, 0, 36), script, vh_smi(h, 0), 1, 1);
	P->outer_sfi = vh_sfi(h, vh_scope_info(h, "outer", NULL, pos_of("function outer", 0), 120),
			      script, vh_smi(h, 0), 2, 1);
	P->f_sfi = vh_sfi(h, vh_scope_info(h, "", "f", pos_of("function ()", 0), 140), script,
			  bca_f, 3, 0);
	P->anon_sfi = vh_sfi(h, vh_scope_info(h, "", NULL, pos_of("()", 1), 170), script, bca_anon,
			     4, 0);
	P->top_sfi = vh_sfi(h, vh_str(h, ""), script, bca_top, 0, 5);
	/* code: the builtins (with the interpreter's trampoline and a bytecode handler) and JIT
	 * code, each in the heap buffer so that the walker's reads of it succeed */
	P->builtins = vh_raw(h, 0x4000);
	P->trampoline = P->builtins + 0x100;
	P->handler = P->builtins + 0x3000;
	P->p.off = P->x.f.off;
	P->p.builtins_lo[0] = P->builtins;
	P->p.builtins_hi[0] = P->builtins + 0x4000;
	P->p.interp_lo[0] = 0x100;
	P->p.interp_hi[0] = 0x200;
	P->p.handlers_lo = 0x3000;
	P->p.handlers_hi = 0x4000;
	P->jit = (vh_raw(h, 0x3000) + 63) & ~63ULL;
	/* outer: TurboFan, inner inlined at the call in line 4 */
	e[0][0] = 0; e[0][1] = pos_of("let t", 0); e[0][2] = -1;
	e[1][0] = 0x40; e[1][1] = pos_of("x * 2", 0); e[1][2] = 0;
	e[2][0] = 0x60; e[2][1] = pos_of("return t", 0); e[2][2] = -1;
	len = vh_spt(tab, (const int32_t (*)[3])e, 3);
	spt = vh_byte_array(h, VT_BYTE_ARRAY, tab, len, l->fa_data);
	memset(pod, 0, sizeof(pod));
	{
		uint64_t call = ((uint64_t)(pos_of("inner(i)", 0) + 1) << 1); /* in outer, not inlined */
		int32_t id = 0;

		memcpy(pod, &call, 8);
		memcpy(pod + 8, &id, 4);
	}
	inlpos = vh_byte_array(h, VT_BYTE_ARRAY, pod, 16, l->fa_data);
	{
		uint64_t lit = P->inner_sfi | 2; /* a weak reference */

		lits = vh_fixed(h, VT_WEAK_FIXED, &lit, 1);
	}
	{
		uint64_t dd[8] = { vh_smi(h, 0), vh_smi(h, 1), lits, vh_smi(h, 0), vh_smi(h, 0),
				   vh_smi(h, 0), P->outer_sfi, inlpos };

		deopt = vh_fixed(h, VT_FIXED, dd, 8);
	}
	P->outer_code = vh_code(h, VK_TURBOFAN, P->jit + 0x40, 0x100, spt, deopt);
	vh_istream(h, P->jit + 0x40, P->outer_code);
	/* code only found by its pc (outer's OSR code): another Code of outer further up */
	is_code = vh_code(h, VK_TURBOFAN, P->jit + 0x1040, 0x200, spt, deopt);
	vh_istream(h, P->jit + 0x1040, is_code);
	P->spin_pc = P->jit + 0x1040 + 0x61;
	P->f_fn = vh_function(h, P->f_sfi, vh_smi(h, 0));
	/* the stack, callers at higher addresses */
	P->stack = vh_raw(h, 0x2000);
	for (i = 0; i < 6; i++)
		fps[i] = P->stack + 0x100 + 0x200 * (uint64_t)i;
	vh_frame(h, fps[0], 0x1001 /* a context */, vh_function(h, P->outer_sfi, P->outer_code), 0,
		 0, fps[1], P->trampoline + 0x10);
	vh_frame(h, fps[1], 0x1001, P->f_fn, bca_f, vh_smi(h, 5 + (int64_t)(l->bca_data - 1)),
		 fps[2], P->trampoline + 0x10);
	vh_frame(h, fps[2], 0x1001, vh_function(h, P->anon_sfi, vh_smi(h, 0)), bca_anon,
		 vh_smi(h, 3 + (int64_t)(l->bca_data - 1)), fps[3], P->jit + 0x2010);
	vh_frame(h, fps[3], VF_STUB << 1, 0, 0, 0, fps[4], P->trampoline + 0x20);
	vh_frame(h, fps[4], 0x1001, vh_function(h, P->top_sfi, vh_smi(h, 0)), bca_top,
		 vh_smi(h, 0 + (int64_t)(l->bca_data - 1)), fps[5], P->builtins + 0x2000);
	vh_frame(h, fps[5], VF_ENTRY << 1, 0, 0, 0, 0x7000, 0x401234 /* C++ */);
	*pc = P->jit + 0x40 + 0x48; /* in inner's inlined part */
	*sp = fps[0] - 0x30;
	*fp = fps[0];
}

static int proc_in_v8(void *ctx, uint64_t pc)
{
	struct proc *P = ctx;

	return (pc >= P->builtins && pc < P->builtins + 0x4000) ||
	       (pc >= P->jit && pc < P->jit + 0x3000);
}

/* Symbolize words[0..n) the way the aggregator does: native words as "native", runtime words
 * through the cache. Writes "name (file:line)" frames joined by ';' into out. */
static void frames_pid(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
		       const struct v8_file *f, const uint64_t *w, size_t n, char *out, size_t outlen)
{
	struct runtime_frame fr[16];
	size_t i = 0, used, len = 0;
	int k, j;

	out[0] = '\0';
	while (i < n && len + 1 < outlen) {
		if (FW_TAG_KIND(w[i] >> FW_TAG_SHIFT) != UNWINDER_V8) {
			len += (size_t)snprintf(out + len, outlen - len, "%snative", len ? ";" : "");
			i++;
			continue;
		}
		k = v8_symbols_frames(s, pid, r, f, w + i, n - i, &used, fr, 16);
		for (j = 0; j < k && len + 1 < outlen; j++) {
			if (fr[j].kind == FRAME_SPECIAL)
				len += (size_t)snprintf(out + len, outlen - len, "%s%s", len ? ";" : "",
							fr[j].name);
			else
				len += (size_t)snprintf(out + len, outlen - len, "%s%s%s (%s:%lld)",
							len ? ";" : "", fr[j].inlined ? "^" : "",
							fr[j].name, fr[j].file ? fr[j].file : "-",
							(long long)fr[j].line);
		}
		i += used;
	}
}

static void frames_str(struct v8_symbols *s, struct v8_reader *r, const struct v8_file *f,
		       const uint64_t *w, size_t n, char *out, size_t outlen)
{
	frames_pid(s, 77, r, f, w, n, out, outlen);
}

static void test_walk(int compressed)
{
	struct proc P;
	struct v8_symbols *s = v8_symbols_new(0);
	struct v8_walk_result res;
	uint64_t words[64], pc, sp, fp;
	char out[1024];
	size_t n;

	proc_build(&P, compressed, &pc, &sp, &fp);
	n = v8_walk(&P.x.m, &P.p, pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	CHECK_EQ_INT(res.error, 0);
	CHECK_EQ_INT(res.frames, 6);
	CHECK_EQ_INT(res.pc, 0x401234); /* the entry frame's C++ caller */
	v8_symbols_note(s, 77, &P.x.r, words, n);
	frames_str(s, &P.x.r, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "^inner (/srv/app.js:1);outer (/srv/app.js:4);"
			  "f (/srv/app.js:7);(anonymous) (/srv/app.js:8);[v8: Stub];"
			  "(anonymous) (/srv/app.js:8);native");
	/* the process is gone: the cache still names every frame */
	frames_str(s, NULL, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "^inner (/srv/app.js:1);outer (/srv/app.js:4);"
			  "f (/srv/app.js:7);(anonymous) (/srv/app.js:8);[v8: Stub];"
			  "(anonymous) (/srv/app.js:8);native");
	v8_symbols_free(s);
	heap_release(&P.x);
}

static void test_walk_both(void)
{
	test_walk(0);
	test_walk(1);
}

/* A script whose source could not be read when its function was first met (the process
 * changed it under the reader) is named, without lines; its line ends are read again later,
 * and its frames get their lines. */
static void test_script_read_again(void)
{
	struct proc P;
	struct v8_symbols *s = v8_symbols_new(0);
	struct v8_walk_result res;
	uint64_t words[64], pc, sp, fp;
	struct timespec pause = { 0, 150 * 1000000L };
	char out[1024];
	size_t n;

	proc_build(&P, 0, &pc, &sp, &fp);
	vh_field(&P.x.h, P.script, P.x.f.lay.script_source, vh_smi(&P.x.h, 0));
	n = v8_walk(&P.x.m, &P.p, pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	CHECK_EQ_INT(res.frames, 6);
	v8_symbols_note(s, 77, &P.x.r, words, n);
	frames_str(s, &P.x.r, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "^inner (/srv/app.js:0);outer (/srv/app.js:0);f (/srv/app.js:0);"
			  "(anonymous) (/srv/app.js:0);[v8: Stub];(anonymous) (/srv/app.js:0);native");
	/* the source is readable again: at the next sample, after the retry delay */
	vh_field(&P.x.h, P.script, P.x.f.lay.script_source, P.source);
	nanosleep(&pause, NULL);
	v8_symbols_note(s, 77, &P.x.r, words, n);
	frames_str(s, NULL, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "^inner (/srv/app.js:1);outer (/srv/app.js:4);"
			  "f (/srv/app.js:7);(anonymous) (/srv/app.js:8);[v8: Stub];"
			  "(anonymous) (/srv/app.js:8);native");
	v8_symbols_free(s);
	heap_release(&P.x);
}

/* The leaf in a bytecode handler: the offset comes from the interpreter's register; the
 * handler keeps its native frame. The leaf in a frameless builtin called from TurboFan code:
 * the frame's own pc is the return address on top of the stack. The leaf in code that is not
 * its function's code: found by scanning for its InstructionStream. */
static void test_leaves(void)
{
	struct proc P;
	struct v8_symbols *s = v8_symbols_new(0);
	struct v8_walk_result res;
	uint64_t words[64], pc, sp, fp, fps1;
	char out[1024];
	size_t n;

	proc_build(&P, 0, &pc, &sp, &fp);
	fps1 = P.stack + 0x300;
	/* in a handler running f: its register says offset 0 (line 7's "return outer") */
	n = v8_walk(&P.x.m, &P.p, P.handler + 8, fps1 - 0x40, fps1,
		    (uint64_t)(P.x.f.lay.bca_data - 1), proc_in_v8, &P, words, 3, &res);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(words[0], P.handler + 8); /* the handler's own frame */
	v8_symbols_note(s, 77, &P.x.r, words, n);
	frames_str(s, &P.x.r, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "native;f (/srv/app.js:7)");
	/* without the register: the frame's slot (offset 5: "outer(9)", the same line) */
	n = v8_walk(&P.x.m, &P.p, P.handler + 8, fps1 - 0x40, fps1, ~0ULL, proc_in_v8, &P,
		    words, 3, &res);
	CHECK_EQ_INT((uint32_t)words[2], 5 + P.x.f.lay.bca_data - 1);
	/* a frameless builtin called by outer: the return address is on the stack */
	vh_w64(&P.x.h, sp, P.jit + 0x40 + 0x61);
	n = v8_walk(&P.x.m, &P.p, P.builtins + 0x2800, sp, fp, ~0ULL, proc_in_v8, &P, words, 4,
		    &res);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(words[3] >> FW_TAG_SHIFT, FW_TAG_V8_RET);
	frames_str(s, &P.x.r, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "native;outer (/srv/app.js:5)");
	/* outer running code that is not its JSFunction's: found by pc */
	vh_w64(&P.x.h, sp, 0);
	n = v8_walk(&P.x.m, &P.p, P.spin_pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 3, &res);
	CHECK_EQ_INT(words[1] >> FW_TAG_SHIFT, FW_TAG_V8_JITPC);
	v8_symbols_note(s, 77, &P.x.r, words, n);
	frames_str(s, &P.x.r, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "outer (/srv/app.js:5)");
	v8_symbols_free(s);
	heap_release(&P.x);
}

static int image_reader(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem_read(ctx, addr, buf, len);
}

/* Frames at the edges: a JSFunction that ends a heap page whose next page is not mapped (its
 * V8_OBJ_READ bytes cannot all be read); the leaf in a JavaScript prologue, the function not
 * pushed yet (stale slots below sp), named from rdi, or kept as its native word without it. */
static void test_walk_edges(void)
{
	struct proc P;
	struct v8_symbols *s = v8_symbols_new(0);
	struct v8_walk_result res;
	struct v8_walk w;
	const struct v8_layout *l;
	static const uint8_t prologue[] = { 0x56, 0x57, 0x50 }; /* push rsi; push rdi; push rax */
	uint64_t words[64], pc, sp, fp, fn, end, outer_fn, fpx;
	char out[1024];
	size_t n;

	proc_build(&P, 0, &pc, &sp, &fp);
	l = &P.x.f.lay;
	end = P.x.h.base + HEAP_SIZE;
	fn = end - (l->fn_code + 8) + 1;
	vh_field(&P.x.h, fn, l->obj_map, vh_map(&P.x.h, VT_JS_FUNCTION));
	vh_field(&P.x.h, fn, l->fn_shared, P.outer_sfi);
	vh_field(&P.x.h, fn, l->fn_code, P.outer_code);
	vh_w64(&P.x.h, fp - 16, fn);
	n = v8_walk(&P.x.m, &P.p, pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	CHECK_EQ_INT(res.frames, 6);
	v8_symbols_note(s, 77, &P.x.r, words, n);
	frames_str(s, &P.x.r, &P.x.f, words, n, out, sizeof(out));
	CHECK_EQ_STR(out, "^inner (/srv/app.js:1);outer (/srv/app.js:4);"
			  "f (/srv/app.js:7);(anonymous) (/srv/app.js:8);[v8: Stub];"
			  "(anonymous) (/srv/app.js:8);native");

	/* outer called again from outer, in its prologue at `push rsi`: fp = sp, below it a
	 * stale even word where the function goes */
	outer_fn = vh_function(&P.x.h, P.outer_sfi, P.outer_code);
	vh_w(&P.x.h, P.jit + 0x40 + 0x10, prologue, sizeof(prologue));
	fpx = fp - 0x80;
	vh_w64(&P.x.h, fpx - 8, 0x53dad0a8f91ULL);
	vh_w64(&P.x.h, fpx - 16, 0x200000000ULL);
	vh_w64(&P.x.h, fpx, fp);
	vh_w64(&P.x.h, fpx + 8, P.jit + 0x40 + 0x61);
	memset(&w, 0, sizeof(w));
	w.p = P.p;
	w.pc = P.jit + 0x40 + 0x10;
	w.sp = w.fp = fpx;
	w.flags = V8_W_EXACT;
	w.leaf_bc = ~0ULL;
	w.leaf_fn = outer_fn;
	CHECK_EQ_INT(v8_walk_step(&w, image_reader, &P.x.m), 0);
	CHECK_EQ_INT(w.found, V8STAT_COMPILED);
	CHECK_EQ_INT(w.nout, 3);
	CHECK(w.out[0] == ((FW_TAG_V8_SFI << FW_TAG_SHIFT) | P.outer_sfi));
	CHECK(w.pc == P.jit + 0x40 + 0x61 && w.fp == fp && w.sp == fpx + 16);
	/* without rdi (a stack snapshot): no mark, the native word stays, on to the caller */
	memset(&w, 0, sizeof(w));
	w.p = P.p;
	w.pc = P.jit + 0x40 + 0x10;
	w.sp = w.fp = fpx;
	w.flags = V8_W_EXACT;
	w.leaf_bc = ~0ULL;
	CHECK_EQ_INT(v8_walk_step(&w, image_reader, &P.x.m), 0);
	CHECK_EQ_INT(w.nout, 0);
	CHECK_EQ_INT(w.replace, 0);
	CHECK(w.pc == P.jit + 0x40 + 0x61 && w.fp == fp);
	/* after `push rsi`, at `push rdi`: the context is pushed, the function still in rdi */
	memset(&w, 0, sizeof(w));
	w.p = P.p;
	w.pc = P.jit + 0x40 + 0x11;
	w.fp = fpx;
	w.sp = fpx - 8;
	w.flags = V8_W_EXACT;
	w.leaf_bc = ~0ULL;
	w.leaf_fn = outer_fn;
	CHECK_EQ_INT(v8_walk_step(&w, image_reader, &P.x.m), 0);
	CHECK_EQ_INT(w.found, V8STAT_COMPILED);
	v8_symbols_free(s);
	heap_release(&P.x);
}

/* Objects move and die: a checksum that does not match is never another function's name. */
static void test_reuse(void)
{
	struct proc P;
	struct v8_symbols *s = v8_symbols_new(0);
	struct v8_symbols_stats st;
	struct v8_walk_result res;
	uint64_t words[64], pc, sp, fp, f_new;
	char out[1024];
	size_t n;

	proc_build(&P, 0, &pc, &sp, &fp);
	n = v8_walk(&P.x.m, &P.p, pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	v8_symbols_note(s, 77, &P.x.r, words, n);
	/* the GC moves f elsewhere, and another function takes its address */
	f_new = vh_obj(&P.x.h, VT_SFI, 64);
	memcpy(P.x.mem + (f_new - 1 - P.x.h.base), P.x.mem + (P.f_sfi - 1 - P.x.h.base), 64);
	vh_field(&P.x.h, P.f_sfi, P.x.f.lay.sfi_name_or_scope_info,
		 vh_scope_info(&P.x.h, "other", NULL, 0, 10));
	vh_w32(&P.x.h, P.f_sfi - 1 + P.x.f.lay.sfi_literal_id, 99);
	/* the old sample's words: still f, from the cache */
	frames_str(s, &P.x.r, &P.x.f, words + 3, 2, out, sizeof(out));
	CHECK_EQ_STR(out, "f (/srv/app.js:7)");
	/* a new sample at the same address: the other function, read again */
	vh_w64(&P.x.h, P.stack + 0x300 - 16, vh_function(&P.x.h, P.f_sfi, vh_smi(&P.x.h, 0)));
	n = v8_walk(&P.x.m, &P.p, pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	v8_symbols_note(s, 77, &P.x.r, words, n);
	frames_str(s, &P.x.r, &P.x.f, words + 3, 2, out, sizeof(out));
	CHECK_EQ_STR(out, "other (/srv/app.js:7)");
	v8_symbols_stats(s, &st);
	CHECK(st.checksum_mismatches >= 1);
	/* f's old words once more: its entry was replaced, the address is another function now,
	 * but the checksum still finds f (moved by the GC) */
	{
		uint64_t old[2] = { (FW_TAG_V8_SFI << FW_TAG_SHIFT) | P.f_sfi, 0 };
		struct v8_sfi_info si;

		P.x.r.budget = V8_READ_BUDGET;
		CHECK_EQ_INT(v8_read_sfi(&P.x.r, f_new, &si), 0);
		old[1] = (FW_TAG_V8_POS << FW_TAG_SHIFT) |
			 ((uint64_t)v8_checksum(si.sum_a, si.sum_b) << 32) |
			 (5 + P.x.f.lay.bca_data - 1);
		/* read once at its new address (as a sample there would have) */
		{
			uint64_t moved[2] = { (FW_TAG_V8_SFI << FW_TAG_SHIFT) | f_new, old[1] };

			v8_symbols_note(s, 77, &P.x.r, moved, 2);
		}
		frames_str(s, &P.x.r, &P.x.f, old, 2, out, sizeof(out));
		CHECK_EQ_STR(out, "f (/srv/app.js:7)");
	}
	/* a word whose checksum matches nothing: no name made up */
	{
		uint64_t bad[2] = { (FW_TAG_V8_SFI << FW_TAG_SHIFT) | P.anon_sfi,
				    (FW_TAG_V8_POS << FW_TAG_SHIFT) | (0xabcdefULL << 32) | 5 };

		frames_str(s, &P.x.r, &P.x.f, bad, 2, out, sizeof(out));
		CHECK_EQ_STR(out, "[v8: unknown function]");
		frames_str(s, NULL, &P.x.f, bad, 2, out, sizeof(out));
		CHECK_EQ_STR(out, "[v8: unknown function]");
	}
	/* forgetting the process drops its entries */
	v8_symbols_forget_pid(s, 77);
	v8_symbols_stats(s, &st);
	CHECK_EQ_INT(st.functions, 0);
	CHECK_EQ_INT(st.codes, 0);
	frames_str(s, NULL, &P.x.f, words + 3, 2, out, sizeof(out));
	CHECK_EQ_STR(out, "[v8: unknown function]");
	v8_symbols_free(s);
	heap_release(&P.x);
}

/* Hostile memory: frames below sp, garbage slots, cycles, words that are not frames. */
static void test_hostile(void)
{
	struct proc P;
	struct v8_symbols *s = v8_symbols_new(0);
	struct v8_walk_result res;
	uint64_t words[64], pc, sp, fp, junk[6];
	char out[1024];
	size_t n;
	int i;

	proc_build(&P, 0, &pc, &sp, &fp);
	/* fp below sp: not a V8 frame */
	n = v8_walk(&P.x.m, &P.p, pc, fp + 8, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(res.error, 1);
	/* a frame pointing at itself: the stack must move up, the walk ends */
	vh_w64(&P.x.h, fp, fp);
	vh_w64(&P.x.h, fp + 8, P.jit + 0x10);
	n = v8_walk(&P.x.m, &P.p, pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	CHECK(res.frames <= 2);
	/* garbage in the function slot: one unreadable frame, the walk goes on */
	heap_release(&P.x);
	proc_build(&P, 0, &pc, &sp, &fp);
	vh_w64(&P.x.h, fp - 16, 0xdeadbeefULL | 1);
	n = v8_walk(&P.x.m, &P.p, pc, sp, fp, ~0ULL, proc_in_v8, &P, words, 64, &res);
	CHECK_EQ_INT(res.frames, 6);
	frames_str(s, &P.x.r, &P.x.f, words, n, out, sizeof(out));
	CHECK(strncmp(out, "[v8: unreadable frame];f (", 26) == 0);
	/* words of no frame */
	for (i = 0; i < 6; i++)
		junk[i] = ((uint64_t)(FW_TAG_FIRST(UNWINDER_V8) + (uint64_t)i) << FW_TAG_SHIFT) |
			  (0x1234567ULL * (uint64_t)(i + 1));
	frames_str(s, &P.x.r, &P.x.f, junk, 6, out, sizeof(out));
	CHECK(strstr(out, "[v8: ") != NULL);
	v8_symbols_free(s);
	heap_release(&P.x);
}

static void test_main_script(void)
{
	static const struct { const char *args; size_t len; const char *want; } cases[] = {
#define A(s) s, sizeof(s)
		{ A("node\0app.js\0--port\0080\0"), "app.js" },
		{ A("/usr/bin/node\0--max-old-space-size=4096\0-r\0dotenv/config\0srv/main.js\0"),
		  "srv/main.js" },
		{ A("node\0--inspect\0--require\0x\0--\0-weird.js\0"), "-weird.js" },
		{ A("node\0-e\0console.log(1)\0"), NULL },
		{ A("node\0--print=1+1\0"), NULL },
		{ A("node\0"), NULL },
		{ A("node\0--no-warnings\0"), NULL },
		{ A("node\0-\0"), NULL },
		{ A("node\0--import\0tsx\0--loader\0l.mjs\0index.ts\0"), "index.ts" },
		{ "node\0app", 8, "app" }, /* no final NUL */
#undef A
	};
	char out[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = v8_node_main_script(cases[i].args, cases[i].len, out, sizeof(out));

		CHECK_EQ_INT(rc, cases[i].want ? 1 : 0);
		if (cases[i].want)
			CHECK_EQ_STR(out, cases[i].want);
	}
	CHECK_EQ_INT(v8_node_main_script("node\0a.js", 9, out, 0), 0);
}

/* ---- a live node */

static const char live_js[] =
	"function inner(x) { let s = 0; for (let i = 0; i < 2000; i++) s += Math.sqrt(i * x);"
	" return s; }\n"
	"function outer(n) { let t = 0; for (let i = 0; i < n; i++) t += inner(i); return t; }\n"
	"const tick = function () { return outer(500); };\n"
	"let total = 0; const end = Date.now() + 20000;\n"
	"while (Date.now() < end) total += tick();\n";

struct live {
	struct procmaps maps;
	struct v8_proc p;
};

static int live_in_v8(void *ctx, uint64_t pc)
{
	struct live *L = ctx;
	const struct procmaps_entry *e;

	if ((pc >= L->p.builtins_lo[0] && pc < L->p.builtins_hi[0]) ||
	    (pc >= L->p.builtins_lo[1] && pc < L->p.builtins_hi[1]))
		return 1;
	e = procmaps_find(&L->maps, pc);
	return e && e->kind == PROCMAPS_ANON && (e->perms & PROCMAPS_X);
}

static void test_live_node(void)
{
	struct elf_file *e = NULL;
	struct errmsg err = { "" };
	struct v8_file f;
	struct live L;
	struct v8_symbols *s;
	struct procmem m;
	struct v8_reader r;
	char path[64], out[2048];
	int pid, tries, found = 0, i;
	FILE *js;

	if (access(NODE, X_OK))
		SKIP("%s is not installed", NODE);
	if (elf_open(NODE, &e, &err) || v8_file_detect(e, NODE, &f, &err) != 1) {
		elf_close(e);
		CHECK(0);
		return;
	}
	elf_close(e);
	snprintf(path, sizeof(path), "/tmp/scorch-v8-test-%d.js", (int)getpid());
	js = fopen(path, "w");
	CHECK(js != NULL);
	if (!js)
		return;
	fputs(live_js, js);
	fclose(js);
	pid = fork();
	if (pid == 0) {
		execl(NODE, "node", path, (char *)NULL);
		_exit(127);
	}
	usleep(800000); /* bootstrapped, the loop optimized */
	memset(&L, 0, sizeof(L));
	L.p.off = f.off;
	L.p.builtins_lo[0] = f.builtins_lo;
	L.p.builtins_hi[0] = f.builtins_hi;
	for (i = 0; i < f.ninterp; i++) {
		L.p.interp_lo[i] = (uint32_t)(f.interp_lo[i] - f.builtins_lo);
		L.p.interp_hi[i] = (uint32_t)(f.interp_hi[i] - f.builtins_lo);
	}
	L.p.handlers_lo = (uint32_t)(f.handlers_lo - f.builtins_lo);
	L.p.handlers_hi = (uint32_t)(f.handlers_hi - f.builtins_lo);
	procmem_init_pid(&m, pid);
	memset(&r, 0, sizeof(r));
	r.mem = &m;
	r.f = &f;
	s = v8_symbols_new(0);
	if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		unlink(path);
		v8_symbols_free(s);
		v8_file_release(&f);
		SKIP("cannot trace node: %s", strerror(errno));
	}
	/* stop it at random points until one is in the optimized loop */
	for (tries = 0; tries < 200 && !found; tries++) {
		struct user_regs_struct regs;
		struct v8_walk_result res;
		uint64_t words[256];
		size_t n;

		usleep(3000);
		if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) || waitpid(pid, NULL, __WALL) < 0)
			break;
		procmaps_release(&L.maps);
		if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0 && procmaps_read(pid, &L.maps, NULL) == 0) {
			const struct procmaps_entry *copy;

			/* V8's copy of the builtins, where they run from */
			for (i = 0; i < (int)L.maps.n; i++) {
				copy = &L.maps.v[i];
				if (copy->kind == PROCMAPS_FILE && f.builtins_offset >= copy->offset &&
				    f.builtins_offset - copy->offset < copy->end - copy->start &&
				    copy->start + (f.builtins_offset - copy->offset) != f.builtins_lo) {
					L.p.builtins_lo[1] = copy->start + (f.builtins_offset - copy->offset);
					L.p.builtins_hi[1] = L.p.builtins_lo[1] + (f.builtins_hi - f.builtins_lo);
				}
			}
			if (live_in_v8(&L, regs.rip)) {
				n = v8_walk(&m, &L.p, regs.rip, regs.rsp, regs.rbp, regs.r9, live_in_v8, &L,
					    words, 256, &res);
				v8_symbols_note(s, (uint32_t)pid, &r, words, n);
				frames_pid(s, (uint32_t)pid, &r, &f, words, n, out, sizeof(out));
				/* tick (interpreted or optimized) under the loop, outer above it,
				 * inner (inlined or not) at the top, every line right */
				if (strstr(out, "outer (") && strstr(out, "inner (") && strstr(out, "tick (")) {
					printf("  live: %s\n", out);
					found = 1;
					CHECK(strstr(out, ".js:1)") != NULL);
					CHECK(strstr(out, "outer (/tmp/scorch-v8-test-") != NULL);
					CHECK(strstr(out, ".js:2);") != NULL);
					CHECK(strstr(out, "tick (/tmp/scorch-v8-test-") != NULL);
					CHECK(strstr(out, ".js:3)") != NULL);
					CHECK(res.error == 0);
				}
			}
		}
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
	CHECK(found);
	ptrace(PTRACE_DETACH, pid, 0, 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
	procmaps_release(&L.maps);
	v8_symbols_free(s);
	v8_file_release(&f);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_meta_node);
	RUN(test_meta_refusals);
	RUN(test_decoders);
	RUN(test_baseline_offsets);
	RUN(test_strings_both);
	RUN(test_walk_both);
	RUN(test_script_read_again);
	RUN(test_leaves);
	RUN(test_walk_edges);
	RUN(test_reuse);
	RUN(test_hostile);
	RUN(test_main_script);
	RUN(test_live_node);
	return test_summary();
}
