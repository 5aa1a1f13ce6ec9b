/* v8_fixture.h: made-up V8 heaps for the V8 tests (test_v8.c) and the fuzzer (fuzz_v8.c).
 *
 * v8_fixture_file() fills a struct v8_file with Node 20's layout (V8 11.3, as the metadata of
 * the installed node says; test_v8.c checks that against the real file when node is there),
 * or the same objects under pointer compression (4-byte tagged fields, 31-bit SMIs). A struct
 * vheap lays objects out in one buffer at a fixed address: maps with instance types, strings,
 * SharedFunctionInfos with ScopeInfos, Scripts, BytecodeArrays, Code objects with source
 * position tables and inlining, JSFunctions, and stack frames; procmem_init_image() then reads
 * it like a process. Everything a test builds is checked by it, nothing here asserts. */
#ifndef SCORCH_TEST_V8_FIXTURE_H
#define SCORCH_TEST_V8_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "runtime/procmem.h"
#include "runtime/v8/v8_meta.h"

/* Instance types and frame types of V8 11.3 (node 20). */
enum {
	VT_SEQ_TWO = 32, VT_CONS_TWO = 33, VT_EXT_TWO = 34, VT_SLICED_TWO = 35, VT_THIN_TWO = 37,
	VT_SEQ_ONE = 40, VT_CONS_ONE = 41, VT_EXT_ONE = 42, VT_SLICED_ONE = 43, VT_THIN_ONE = 45,
	VT_ODDBALL = 131, VT_MAP = 180, VT_INTERP_DATA = 159, VT_SCRIPT = 167, VT_FIXED = 175,
	VT_BYTE_ARRAY = 190, VT_BYTECODES = 191, VT_WEAK_FIXED = 240, VT_CODE = 245,
	VT_ISTREAM = 252, VT_SCOPE_INFO = 261, VT_SFI = 262, VT_JS_FUNCTION = 2066,
};
enum { VF_ENTRY = 1, VF_EXIT = 3, VF_INTERPRETED = 13, VF_STUB = 17, VF_INTERNAL = 22 };
enum { VK_BUILTIN = 2, VK_INTERPRETED = 10, VK_BASELINE = 11, VK_MAGLEV = 12, VK_TURBOFAN = 13 };

/* Three made-up bytecodes (sizes per operand scale) after the four prefixes. */
static const uint8_t vfix_bytecode_sizes[3][8] = {
	{ 1, 1, 1, 1, 2, 3, 1, 5 },
	{ 1, 1, 1, 1, 3, 5, 1, 9 },
	{ 1, 1, 1, 1, 5, 9, 1, 17 },
};

static inline void v8_fixture_file(struct v8_file *f, int compressed)
{
	struct v8_layout *l = &f->lay;
	uint32_t ts = compressed ? 4 : 8;

	memset(f, 0, sizeof(*f));
	f->major = 11;
	f->minor = 3;
	f->build = 244;
	l->tagged_size = ts;
	l->smi_shift = compressed ? 1 : 32;
	l->ptr_size = 8;
	l->heap_object_tag = 1;
	l->heap_object_tag_mask = 3;
	l->first_nonstring = 128;
	l->t_js_function_first = VT_JS_FUNCTION;
	l->t_js_function_last = VT_JS_FUNCTION + 15;
	l->t_sfi = VT_SFI;
	l->t_scope_info = VT_SCOPE_INFO;
	l->t_script = VT_SCRIPT;
	l->t_code = VT_CODE;
	l->t_bytecode_array = VT_BYTECODES;
	l->t_byte_array = VT_BYTE_ARRAY;
	l->t_fixed_array = VT_FIXED;
	l->t_weak_fixed_array = VT_WEAK_FIXED;
	l->t_interpreter_data = VT_INTERP_DATA;
	l->t_instruction_stream = VT_ISTREAM;
	l->str_rep_mask = 7;
	l->str_enc_mask = 8;
	l->str_one_byte = 8;
	l->str_seq = 0;
	l->str_cons = 1;
	l->str_external = 2;
	l->str_sliced = 3;
	l->str_thin = 5;
	l->obj_map = 0;
	l->map_instance_type = 12;
	l->fa_length = ts;
	l->fa_data = 2 * ts;
	l->str_length = compressed ? 8 : 12;
	l->seq_chars = compressed ? 12 : 16;
	l->cons_first = compressed ? 12 : 16;
	l->cons_second = compressed ? 16 : 24;
	l->thin_actual = compressed ? 12 : 16;
	l->sliced_parent = compressed ? 12 : 16;
	l->sliced_offset = compressed ? 16 : 24;
	l->ext_resource = compressed ? 12 : 16;
	l->ext_data = l->ext_resource + 8;
	l->fn_shared = 3 * ts;
	l->fn_code = 6 * ts;
	l->sfi_function_data = ts;
	l->sfi_name_or_scope_info = 2 * ts;
	l->sfi_script = 4 * ts;
	l->sfi_length = 5 * ts;
	l->sfi_flags = 5 * ts + 8;
	l->sfi_literal_id = 5 * ts + 12;
	l->si_base = ts;
	l->si_flags = 0;
	l->si_ncontextlocals = 2;
	l->si_first_vars = 3;
	l->script_source = ts;
	l->script_name = 2 * ts;
	l->script_line_ends = 7 * ts;
	l->code_deopt = 2 * ts;
	l->code_spt = 3 * ts;
	l->code_bytecode = 2 * ts;
	l->code_istream = 4 * ts;
	l->code_start = 5 * ts;
	l->code_flags = 5 * ts + 8;
	l->code_size = 5 * ts + 16;
	l->is_body = 2 * ts;
	l->bca_spt = 4 * ts;
	l->bca_data = 4 * ts + 22;
	l->id_bytecode_array = ts;
	l->deopt_inlined_count = 1;
	l->deopt_literals = 2;
	l->deopt_sfi = 6;
	l->deopt_inlining = 7;
	l->kind_interpreted = VK_INTERPRETED;
	l->kind_baseline = VK_BASELINE;
	l->kind_maglev = VK_MAGLEV;
	l->kind_turbofan = VK_TURBOFAN;
	l->kind_shift = 0;
	l->kind_mask = 15;
	l->fp_context = -8;
	l->fp_function = -16;
	l->fp_bytecode_array = -32;
	l->fp_bytecode_offset = -40;
	f->off.tagged_size = (uint8_t)ts;
	f->off.smi_shift = (uint8_t)l->smi_shift;
	f->off.kind_mask = 15;
	f->off.fp_context = -8;
	f->off.fp_function = -16;
	f->off.fp_bytecode_array = -32;
	f->off.fp_bytecode_offset = -40;
	f->off.fn_shared = (uint16_t)l->fn_shared;
	f->off.fn_code = (uint16_t)l->fn_code;
	f->off.sfi_sum = (uint16_t)l->sfi_length;
	f->off.sfi_sum_mask = 0xf03f;
	f->off.code_start = (uint16_t)l->code_start;
	f->off.code_size = (uint16_t)l->code_size;
	f->off.code_flags = (uint16_t)l->code_flags;
	f->off.kind_baseline = VK_BASELINE;
	f->off.kind_maglev = VK_MAGLEV;
	f->off.kind_turbofan = VK_TURBOFAN;
	f->off.type_entry = VF_ENTRY;
	f->off.type_construct_entry = 2;
	f->off.bc_offset_reg = 9;
	snprintf(f->frame_types[VF_ENTRY], sizeof(f->frame_types[0]), "EntryFrame");
	snprintf(f->frame_types[VF_EXIT], sizeof(f->frame_types[0]), "ExitFrame");
	snprintf(f->frame_types[VF_STUB], sizeof(f->frame_types[0]), "StubFrame");
	snprintf(f->frame_types[VF_INTERNAL], sizeof(f->frame_types[0]), "InternalFrame");
	f->bytecode_sizes = (uint8_t *)vfix_bytecode_sizes; /* static: do not v8_file_release() */
	f->nbytecodes = 8;
}

/* ---- a heap in one buffer */

struct vheap {
	uint8_t *mem;
	uint64_t base;       /* address of mem[0] (4 GiB aligned + 64 KiB: a compression cage) */
	size_t size, used;
	const struct v8_file *f;
	uint64_t maps[16];   /* map objects made so far and their types */
	uint32_t map_types[16];
	int nmaps;
};

static inline void vh_init(struct vheap *h, const struct v8_file *f, uint8_t *mem, size_t size)
{
	memset(h, 0, sizeof(*h));
	memset(mem, 0, size);
	h->mem = mem;
	h->size = size;
	h->base = 0x5500000000ULL + 0x10000;
	h->f = f;
}

static inline void vh_w(struct vheap *h, uint64_t addr, const void *p, size_t n)
{
	if (addr >= h->base && addr - h->base + n <= h->size)
		memcpy(h->mem + (addr - h->base), p, n);
}

static inline void vh_w64(struct vheap *h, uint64_t addr, uint64_t v) { vh_w(h, addr, &v, 8); }
static inline void vh_w32(struct vheap *h, uint64_t addr, uint32_t v) { vh_w(h, addr, &v, 4); }
static inline void vh_w16(struct vheap *h, uint64_t addr, uint16_t v) { vh_w(h, addr, &v, 2); }

/* Raw bytes at the next 8-byte aligned place: their address. */
static inline uint64_t vh_raw(struct vheap *h, size_t n)
{
	uint64_t a = h->base + h->used;

	h->used = (h->used + n + 15) & ~(size_t)15;
	if (h->used > h->size)
		h->used = h->size;
	return a;
}

/* A SMI as a tagged field holds it. */
static inline uint64_t vh_smi(const struct vheap *h, int64_t v)
{
	if (h->f->lay.tagged_size == 4)
		return (uint64_t)(uint32_t)((uint32_t)v << 1);
	return (uint64_t)v << 32;
}

/* A tagged field: the whole pointer, or its low half under pointer compression. */
static inline void vh_field(struct vheap *h, uint64_t obj, uint32_t off, uint64_t v)
{
	if (h->f->lay.tagged_size == 4)
		vh_w32(h, obj - 1 + off, (uint32_t)v);
	else
		vh_w64(h, obj - 1 + off, v);
}

static inline uint64_t vh_map(struct vheap *h, uint32_t type)
{
	uint64_t m;
	int i;

	for (i = 0; i < h->nmaps; i++)
		if (h->map_types[i] == type)
			return h->maps[i];
	m = vh_raw(h, 64) + 1;
	vh_w16(h, m - 1 + h->f->lay.map_instance_type, (uint16_t)type);
	if (h->nmaps < 16) {
		h->maps[h->nmaps] = m;
		h->map_types[h->nmaps++] = type;
	}
	return m;
}

/* A heap object of type with size bytes: its tagged address. */
static inline uint64_t vh_obj(struct vheap *h, uint32_t type, size_t size)
{
	uint64_t map = vh_map(h, type), o = vh_raw(h, size) + 1;

	vh_field(h, o, h->f->lay.obj_map, map);
	return o;
}

static inline uint64_t vh_str(struct vheap *h, const char *s)
{
	const struct v8_layout *l = &h->f->lay;
	size_t n = strlen(s);
	uint64_t o = vh_obj(h, VT_SEQ_ONE, l->seq_chars + n + 1);

	vh_w32(h, o - 1 + l->str_length, (uint32_t)n);
	vh_w(h, o - 1 + l->seq_chars, s, n);
	return o;
}

static inline uint64_t vh_str16(struct vheap *h, const uint16_t *s, size_t n)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, VT_SEQ_TWO, l->seq_chars + 2 * n + 2);

	vh_w32(h, o - 1 + l->str_length, (uint32_t)n);
	vh_w(h, o - 1 + l->seq_chars, s, 2 * n);
	return o;
}

static inline uint32_t vh_strlen(struct vheap *h, uint64_t s)
{
	uint32_t n = 0;

	if (s - 1 >= h->base && s - 1 - h->base + 16 <= h->size)
		memcpy(&n, h->mem + (s - 1 - h->base) + h->f->lay.str_length, 4);
	return n;
}

static inline uint64_t vh_cons(struct vheap *h, uint64_t a, uint64_t b)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, VT_CONS_ONE, 32);

	vh_w32(h, o - 1 + l->str_length, vh_strlen(h, a) + vh_strlen(h, b));
	vh_field(h, o, l->cons_first, a);
	vh_field(h, o, l->cons_second, b);
	return o;
}

static inline uint64_t vh_byte_array(struct vheap *h, uint32_t type, const uint8_t *b, size_t n,
				     uint32_t data_off)
{
	uint64_t o = vh_obj(h, type, data_off + n + 1);

	vh_field(h, o, h->f->lay.fa_length, vh_smi(h, (int64_t)n));
	vh_w(h, o - 1 + data_off, b, n);
	return o;
}

static inline uint64_t vh_fixed(struct vheap *h, uint32_t type, const uint64_t *v, size_t n)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, type, l->fa_data + n * l->tagged_size);
	size_t i;

	vh_field(h, o, l->fa_length, vh_smi(h, (int64_t)n));
	for (i = 0; i < n; i++)
		vh_field(h, o, l->fa_data + (uint32_t)i * l->tagged_size, v[i]);
	return o;
}

/* A source position table from (code offset, script offset, inlining id) entries. */
static inline size_t vh_spt(uint8_t *out, const int32_t (*e)[3], size_t n)
{
	int64_t code = -1, pos = 0;
	size_t len = 0, i;

	for (i = 0; i < n; i++) {
		int64_t raw = (int64_t)((((uint64_t)(e[i][2] + 1)) << 31) | ((uint64_t)(e[i][1] + 1) << 1));
		int64_t vals[2] = { e[i][0] - code, raw - pos };
		int k;

		for (k = 0; k < 2; k++) {
			uint64_t z = ((uint64_t)vals[k] << 1) ^ (uint64_t)(vals[k] >> 63);

			do {
				out[len++] = (uint8_t)((z & 0x7f) | (z > 0x7f ? 0x80 : 0));
				z >>= 7;
			} while (z);
		}
		code = e[i][0];
		pos = raw;
	}
	return len;
}

/* A Script named name over source (its line ends computed by the reader from the source). */
static inline uint64_t vh_script(struct vheap *h, const char *name, const char *source)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, VT_SCRIPT, 12 * l->tagged_size);

	vh_field(h, o, l->script_source, vh_str(h, source));
	vh_field(h, o, l->script_name, name ? vh_str(h, name) : vh_smi(h, 0));
	vh_field(h, o, l->script_line_ends, vh_smi(h, 0));
	return o;
}

/* A ScopeInfo for a function: its name ("" anonymous, NULL none), the name V8 inferred (or
 * NULL), its start and end positions. */
static inline uint64_t vh_scope_info(struct vheap *h, const char *name, const char *inferred,
				     int32_t start, int32_t end)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, VT_SCOPE_INFO, 16 * l->tagged_size);
	uint32_t i = l->si_first_vars, ts = l->tagged_size;
	int64_t flags = 2; /* function scope */

	if (name)
		flags |= 3 << 12; /* function variable */
	if (inferred)
		flags |= 1 << 14;
	vh_field(h, o, l->si_base + 0 * ts, vh_smi(h, flags));
	vh_field(h, o, l->si_base + 1 * ts, vh_smi(h, 0));
	vh_field(h, o, l->si_base + 2 * ts, vh_smi(h, 0)); /* no context locals */
	if (name) {
		vh_field(h, o, l->si_base + i++ * ts, vh_str(h, name));
		vh_field(h, o, l->si_base + i++ * ts, vh_smi(h, -1));
	}
	if (inferred)
		vh_field(h, o, l->si_base + i++ * ts, vh_str(h, inferred));
	vh_field(h, o, l->si_base + i++ * ts, vh_smi(h, start));
	vh_field(h, o, l->si_base + i++ * ts, vh_smi(h, end));
	return o;
}

/* A SharedFunctionInfo; literal_id and length make its checksum. */
static inline uint64_t vh_sfi(struct vheap *h, uint64_t scope_info, uint64_t script,
			      uint64_t function_data, int32_t literal_id, uint16_t length)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, VT_SFI, l->sfi_literal_id + 8);

	vh_field(h, o, l->sfi_function_data, function_data);
	vh_field(h, o, l->sfi_name_or_scope_info, scope_info);
	vh_field(h, o, l->sfi_script, script);
	vh_w16(h, o - 1 + l->sfi_length, length);
	vh_w16(h, o - 1 + l->sfi_length + 2, 1);
	vh_w32(h, o - 1 + l->sfi_flags, 0x5a5a5a5a); /* mutable: not in the checksum */
	vh_w32(h, o - 1 + l->sfi_literal_id, (uint32_t)literal_id);
	return o;
}

static inline uint64_t vh_bytecodes(struct vheap *h, const uint8_t *code, size_t n,
				    uint64_t spt)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_byte_array(h, VT_BYTECODES, code, n, l->bca_data);

	vh_field(h, o, l->bca_spt, spt);
	return o;
}

/* A Code object whose instructions are [start, start + size). */
static inline uint64_t vh_code(struct vheap *h, uint32_t kind, uint64_t start, uint32_t size,
			       uint64_t spt, uint64_t deopt_or_bytecode)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, VT_CODE, 64);

	vh_field(h, o, l->code_spt, spt);
	vh_field(h, o, kind == VK_BASELINE ? l->code_bytecode : l->code_deopt, deopt_or_bytecode);
	vh_w64(h, o - 1 + l->code_start, start);
	vh_w32(h, o - 1 + l->code_flags, kind);
	vh_w32(h, o - 1 + l->code_size, size);
	return o;
}

/* An InstructionStream header right before instructions at start (start - is_body). */
static inline void vh_istream(struct vheap *h, uint64_t start, uint64_t code)
{
	uint64_t is = start - h->f->lay.is_body;

	vh_w64(h, is, vh_map(h, VT_ISTREAM));
	vh_w64(h, is + 8, code);
	vh_field(h, code, h->f->lay.code_istream, is + 1);
}

static inline uint64_t vh_function(struct vheap *h, uint64_t sfi, uint64_t code)
{
	const struct v8_layout *l = &h->f->lay;
	uint64_t o = vh_obj(h, VT_JS_FUNCTION, 64);

	vh_field(h, o, l->fn_shared, sfi);
	vh_field(h, o, l->fn_code, code);
	return o;
}

/* A frame at fp: its fixed slots (context or marker, function, bytecode array and offset),
 * the caller's fp and return address. */
static inline void vh_frame(struct vheap *h, uint64_t fp, uint64_t marker_or_context,
			    uint64_t function, uint64_t bytecodes, uint64_t bc_slot,
			    uint64_t caller_fp, uint64_t ret)
{
	vh_w64(h, fp - 8, marker_or_context);
	vh_w64(h, fp - 16, function);
	vh_w64(h, fp - 24, 0);
	vh_w64(h, fp - 32, bytecodes);
	vh_w64(h, fp - 40, bc_slot);
	vh_w64(h, fp, caller_fp);
	vh_w64(h, fp + 8, ret);
}

#endif
