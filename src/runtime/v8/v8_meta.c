/* v8_meta.c: V8's postmortem metadata and builtins read from a file (v8_meta.h). */
#include "runtime/v8/v8_meta.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V8_MIN_TEXT (8u << 20) /* V8 alone is more code than this: smaller files are not V8 */

const char *v8_frame_type_name(const struct v8_file *f, uint32_t type)
{
	if (type >= V8_MAX_FRAME_TYPES || !f->frame_types[type][0])
		return NULL;
	return f->frame_types[type];
}

int v8_is_embedder_path(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t i;

	b = b ? b + 1 : path;
	if (!strncmp(b, "libnode.so", 10))
		return 1;
	if (!strcmp(b, "nodejs") || !strcmp(b, "nsolid"))
		return 1;
	if (strncmp(b, "node", 4))
		return 0;
	for (i = 4; b[i]; i++)
		if (b[i] < '0' || b[i] > '9')
			return 0;
	return 1;
}

/* ---- the metadata symbols */

struct meta {
	const char *name; /* without the v8dbg_ prefix; points into the elf_file's names */
	int32_t value;
};

struct metas {
	struct meta *v;
	size_t n, cap;
};

static int meta_cmp(const void *a, const void *b)
{
	return strcmp(((const struct meta *)a)->name, ((const struct meta *)b)->name);
}

static int meta_get(const struct metas *m, const char *name, int32_t *out)
{
	struct meta key = { name, 0 }, *hit;

	hit = m->n ? bsearch(&key, m->v, m->n, sizeof(*m->v), meta_cmp) : NULL;
	if (!hit)
		return -ENOENT;
	*out = hit->value;
	return 0;
}

/* The int32 a data symbol holds: from the file, or 0 for a symbol in .bss (zero-initialized
 * data has no file bytes). */
static int sym_int(struct elf_file *e, uint64_t vaddr, int32_t *out)
{
	const struct elf_segment *seg;
	uint64_t off;
	size_t n, i;

	if (elf_offset_of_vaddr(e, vaddr, &off) == 0 && off <= UINT64_MAX - 4)
		return elf_read(e, off, out, sizeof(*out)) ? -EIO : 0;
	seg = elf_segments(e, &n);
	for (i = 0; i < n; i++) {
		if (vaddr >= seg[i].vaddr && vaddr - seg[i].vaddr < seg[i].memsz &&
		    vaddr - seg[i].vaddr >= seg[i].filesz) {
			*out = 0;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- building the layout */

struct builder {
	const struct metas *m;
	struct v8_file *f;
	struct errmsg *err;
	const char *missing; /* the first required field that is missing */
	uint32_t version;
};

/* A required value. */
static uint32_t need(struct builder *b, const char *name)
{
	int32_t v = 0;

	if (meta_get(b->m, name, &v) < 0 || v < -65536 || v > 65536) {
		if (!b->missing)
			b->missing = name;
		return 0;
	}
	return (uint32_t)v;
}

/* Record that what was derived, not read. */
static void fallback(struct builder *b, const char *what)
{
	size_t len = strlen(b->f->fallbacks);

	if (len + strlen(what) + 3 < sizeof(b->f->fallbacks))
		snprintf(b->f->fallbacks + len, sizeof(b->f->fallbacks) - len, "%s%s",
			 len ? ", " : "", what);
}

/* A value with a fallback (recorded in f->fallbacks when used). */
static uint32_t want(struct builder *b, const char *name, uint32_t dflt, const char *what)
{
	int32_t v = 0;

	if (meta_get(b->m, name, &v) == 0 && v >= -65536 && v <= 65536)
		return (uint32_t)v;
	fallback(b, what);
	return dflt;
}

/* A class field: v8dbg_class_<cls>__<field>__<type> with any type. */
static int field(const struct metas *m, const char *cls, const char *fld, uint32_t *out)
{
	char prefix[128];
	size_t len, lo = 0, hi = m->n;

	len = (size_t)snprintf(prefix, sizeof(prefix), "class_%s__%s__", cls, fld);
	if (len >= sizeof(prefix))
		return -ENOENT;
	/* the first name >= prefix, then check it starts with prefix */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(m->v[mid].name, prefix) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->n && !strncmp(m->v[lo].name, prefix, len) && m->v[lo].value >= 0 &&
	    m->v[lo].value < 65536) {
		*out = (uint32_t)m->v[lo].value;
		return 0;
	}
	return -ENOENT;
}

static uint32_t need_field(struct builder *b, const char *cls, const char *fld)
{
	uint32_t v = 0;

	if (field(b->m, cls, fld, &v) < 0 && !b->missing)
		b->missing = fld;
	return v;
}

static uint32_t want_field(struct builder *b, const char *cls, const char *fld, uint32_t dflt,
			   const char *what)
{
	uint32_t v;

	if (field(b->m, cls, fld, &v) == 0)
		return v;
	fallback(b, what);
	return dflt;
}

/* An instance type: v8dbg_type_<Class>__<TYPE_NAME>. */
static uint32_t type_of(struct builder *b, const char *name, int required)
{
	int32_t v = 0;

	if (meta_get(b->m, name, &v) < 0 || v < 0 || v > 65535) {
		if (required && !b->missing)
			b->missing = name;
		return 0xffffffffu;
	}
	return (uint32_t)v;
}

static void frame_types(struct builder *b)
{
	size_t i;

	for (i = 0; i < b->m->n; i++) {
		const struct meta *t = &b->m->v[i];

		if (strncmp(t->name, "frametype_", 10) || t->value < 0 ||
		    t->value >= V8_MAX_FRAME_TYPES)
			continue;
		snprintf(b->f->frame_types[t->value], sizeof(b->f->frame_types[0]), "%s",
			 t->name + 10);
	}
}

static int build_layout(struct builder *b)
{
	struct v8_layout *l = &b->f->lay;
	struct v8_offsets *o = &b->f->off;
	uint32_t ver = b->version, ts, smi_shift_size, cls_start, tag;
	int32_t tagmask = 0;

	/* tagging: 64-bit SMIs (shift 31 + tag bit) or 31-bit ones under pointer compression */
	ts = want(b, "TaggedSize", 8, "TaggedSize");
	l->ptr_size = want(b, "SystemPointerSize", 8, "SystemPointerSize");
	smi_shift_size = need(b, "SmiShiftSize");
	tag = need(b, "HeapObjectTag");
	if (meta_get(b->m, "HeapObjectTagMask", &tagmask) < 0)
		tagmask = 3;
	if (b->missing)
		return 0;
	if ((ts != 8 && ts != 4) || l->ptr_size != 8 || tag != 1 || tagmask != 3 ||
	    need(b, "SmiTag") != 0 || need(b, "SmiTagMask") != 1 ||
	    (smi_shift_size != 31 && smi_shift_size != 0))
		return errmsg_set(b->err, -ENOTSUP,
				  "unsupported tagging (TaggedSize %u, SmiShiftSize %u, "
				  "HeapObjectTag %u)", ts, smi_shift_size, tag);
	l->tagged_size = ts;
	l->smi_shift = smi_shift_size + 1;
	l->heap_object_tag = tag;
	l->heap_object_tag_mask = (uint32_t)tagmask;

	l->first_nonstring = need(b, "FirstNonstringType");
	l->str_rep_mask = need(b, "StringRepresentationMask");
	l->str_enc_mask = need(b, "StringEncodingMask");
	l->str_one_byte = need(b, "OneByteStringTag");
	l->str_seq = need(b, "SeqStringTag");
	l->str_cons = need(b, "ConsStringTag");
	l->str_external = need(b, "ExternalStringTag");
	l->str_sliced = want(b, "SlicedStringTag", 3, "SlicedStringTag");
	l->str_thin = want(b, "ThinStringTag", 5, "ThinStringTag");

	l->obj_map = need_field(b, "HeapObject", "map");
	l->map_instance_type = need_field(b, "Map", "instance_type");
	l->fa_length = need_field(b, "FixedArrayBase", "length");
	l->fa_data = need_field(b, "FixedArray", "data");
	l->str_length = need_field(b, "String", "length");
	l->seq_chars = need_field(b, "SeqOneByteString", "chars");
	l->cons_first = need_field(b, "ConsString", "first");
	l->cons_second = need_field(b, "ConsString", "second");
	l->thin_actual = want_field(b, "ThinString", "actual", 2 * ts, "ThinString::actual");
	l->sliced_parent = want_field(b, "SlicedString", "parent", 2 * ts, "SlicedString::parent");
	l->sliced_offset = want_field(b, "SlicedString", "offset", 3 * ts, "SlicedString::offset");
	l->ext_resource = want_field(b, "ExternalString", "resource", 2 * ts,
				     "ExternalString::resource");
	/* the cached data pointer follows the resource (not in the metadata) */
	l->ext_data = l->ext_resource + l->ptr_size;

	l->fn_shared = need_field(b, "JSFunction", "shared");
	/* JSFunction::code is not in the metadata: after shared, context and feedback cell
	 * before 11.7.368; just before shared after (the code moved into the JSFunction's
	 * header then). */
	if (field(b->m, "JSFunction", "code", &l->fn_code) < 0) {
		l->fn_code = ver < v8_version_key(11, 7, 368) ? l->fn_shared + 3 * ts :
			     l->fn_shared - ts;
		fallback(b, "JSFunction::code");
	}
	l->sfi_function_data = want_field(b, "SharedFunctionInfo", "function_data", ts,
					  "SharedFunctionInfo::function_data");
	l->sfi_name_or_scope_info = need_field(b, "SharedFunctionInfo", "name_or_scope_info");
	l->sfi_script = need_field(b, "SharedFunctionInfo", "script_or_debug_info");
	l->sfi_length = need_field(b, "SharedFunctionInfo", "length");
	l->sfi_flags = need_field(b, "SharedFunctionInfo", "flags");
	l->sfi_literal_id = want_field(b, "SharedFunctionInfo", "function_literal_id",
				       l->sfi_flags + 4, "SharedFunctionInfo::function_literal_id");

	/* ScopeInfo: a FixedArray (slots after the length) before 9.1.71, after the map since */
	l->si_base = ver < v8_version_key(9, 1, 71) ? l->fa_data : ts;
	l->si_flags = 0;
	l->si_ncontextlocals = want(b, "scopeinfo_idx_ncontextlocals", 2,
				    "scopeinfo_idx_ncontextlocals");
	l->si_first_vars = want(b, "scopeinfo_idx_first_vars", 3, "scopeinfo_idx_first_vars");

	l->script_source = need_field(b, "Script", "source");
	l->script_name = need_field(b, "Script", "name");
	l->script_line_ends = want_field(b, "Script", "line_ends", 0, "Script::line_ends");

	l->code_deopt = need_field(b, "Code", "deoptimization_data");
	l->code_spt = need_field(b, "Code", "source_position_table");
	l->code_bytecode = want_field(b, "Code", "bytecode_or_interpreter_data", l->code_deopt,
				      "Code::bytecode_or_interpreter_data");
	/* Code's instruction start, flags and size are not in the 11.x metadata: the start
	 * follows the source position table and the InstructionStream pointer (a raw pointer
	 * since 11.1.204); the flags and the size follow it. */
	cls_start = l->code_spt + 2 * ts;
	if (field(b->m, "Code", "instruction_start", &l->code_start) < 0) {
		l->code_start = cls_start;
		fallback(b, "Code::instruction_start");
	}
	if (field(b->m, "Code", "flags", &l->code_flags) < 0) {
		l->code_flags = l->code_start + l->ptr_size;
		fallback(b, "Code::flags");
	}
	if (field(b->m, "Code", "instruction_size", &l->code_size) < 0) {
		l->code_size = l->code_flags + (ver < v8_version_key(11, 4, 59) ? 8 : 4);
		fallback(b, "Code::instruction_size");
	}
	l->code_istream = l->code_start - ts;
	l->is_body = want_field(b, "InstructionStream", "instruction_start", 2 * ts,
				"InstructionStream::instruction_start");
	l->bca_data = need_field(b, "BytecodeArray", "data");
	l->bca_spt = want_field(b, "BytecodeArray", "source_position_table", l->fa_length + 3 * ts,
				"BytecodeArray::source_position_table");
	l->id_bytecode_array = want_field(b, "InterpreterData", "bytecode_array", ts,
					  "InterpreterData::bytecode_array");

	l->deopt_inlined_count = want(b, "DeoptimizationDataInlinedFunctionCountIndex", 1,
				      "DeoptimizationDataInlinedFunctionCountIndex");
	l->deopt_literals = want(b, "DeoptimizationDataLiteralArrayIndex", 2,
				 "DeoptimizationDataLiteralArrayIndex");
	l->deopt_sfi = want(b, "DeoptimizationDataSharedFunctionInfoIndex", 6,
			    "DeoptimizationDataSharedFunctionInfoIndex");
	l->deopt_inlining = want(b, "DeoptimizationDataInliningPositionsIndex", 7,
				 "DeoptimizationDataInliningPositionsIndex");

	l->kind_interpreted = want(b, "CodeKindInterpretedFunction", 10,
				   "CodeKindInterpretedFunction");
	l->kind_baseline = need(b, "CodeKindBaseline");
	l->kind_maglev = want(b, "CodeKindMaglev", l->kind_baseline + 1, "CodeKindMaglev");
	l->kind_turbofan = want(b, "CodeKindTurbofan", l->kind_baseline + 2, "CodeKindTurbofan");
	l->kind_mask = need(b, "CodeKindFieldMask");
	l->kind_shift = want(b, "CodeKindFieldShift", 0, "CodeKindFieldShift");

	l->fp_context = (int32_t)need(b, "off_fp_context");
	l->fp_function = (int32_t)need(b, "off_fp_function");
	/* exported since 9.5.2; the interpreter's frame has kept them there since */
	l->fp_bytecode_array = (int32_t)want(b, "off_fp_bytecode_array", (uint32_t)-32,
					     "off_fp_bytecode_array");
	l->fp_bytecode_offset = (int32_t)want(b, "off_fp_bytecode_offset", (uint32_t)-40,
					      "off_fp_bytecode_offset");

	l->t_js_function_first = type_of(b, "type_JSFunction__JS_FUNCTION_TYPE", 1);
	/* JSFunction has subtypes (class constructors, ...) right after it since 9.0 */
	l->t_js_function_last = l->t_js_function_first +
				(ver >= v8_version_key(9, 6, 138) ? 15 :
				 ver >= v8_version_key(9, 0, 14) ? 14 : 0);
	l->t_sfi = type_of(b, "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 1);
	l->t_scope_info = type_of(b, "type_ScopeInfo__SCOPE_INFO_TYPE", 1);
	l->t_script = type_of(b, "type_Script__SCRIPT_TYPE", 1);
	l->t_code = type_of(b, "type_Code__CODE_TYPE", 1);
	l->t_bytecode_array = type_of(b, "type_BytecodeArray__BYTECODE_ARRAY_TYPE", 1);
	l->t_byte_array = type_of(b, "type_ByteArray__BYTE_ARRAY_TYPE", 1);
	l->t_fixed_array = type_of(b, "type_FixedArray__FIXED_ARRAY_TYPE", 1);
	l->t_weak_fixed_array = type_of(b, "type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", 0);
	l->t_interpreter_data = type_of(b, "type_InterpreterData__INTERPRETER_DATA_TYPE", 0);
	l->t_instruction_stream = type_of(b, "type_InstructionStream__INSTRUCTION_STREAM_TYPE", 0);
	if (b->missing)
		return 0;

	/* the BPF walker's copy */
	o->tagged_size = (uint8_t)ts;
	o->smi_shift = (uint8_t)l->smi_shift;
	o->kind_shift = (uint8_t)l->kind_shift;
	o->kind_mask = (uint8_t)l->kind_mask;
	o->fp_context = (int16_t)l->fp_context;
	o->fp_function = (int16_t)l->fp_function;
	o->fp_bytecode_array = (int16_t)l->fp_bytecode_array;
	o->fp_bytecode_offset = (int16_t)l->fp_bytecode_offset;
	o->fn_shared = (uint16_t)l->fn_shared;
	o->fn_code = (uint16_t)l->fn_code;
	/* the checksum bytes: length, formal parameter count, function token offset (6 bytes
	 * from length) and the function literal id; not the flags, which change */
	o->sfi_sum = (uint16_t)l->sfi_length;
	o->sfi_sum_mask = 0x3f;
	if (l->sfi_literal_id >= l->sfi_length && l->sfi_literal_id + 4 <= l->sfi_length + V8_SFI_READ)
		o->sfi_sum_mask |= (uint16_t)(0xf << (l->sfi_literal_id - l->sfi_length));
	o->code_start = (uint16_t)l->code_start;
	o->code_size = (uint16_t)l->code_size;
	o->code_flags = (uint16_t)l->code_flags;
	o->kind_baseline = (uint8_t)l->kind_baseline;
	o->kind_maglev = (uint8_t)l->kind_maglev;
	o->kind_turbofan = (uint8_t)l->kind_turbofan;
	o->type_entry = (uint8_t)need(b, "frametype_EntryFrame");
	o->type_construct_entry = (uint8_t)want(b, "frametype_ConstructEntryFrame", 0xff,
						"frametype_ConstructEntryFrame");
	o->bc_offset_reg = (uint8_t)want(b, "InterpreterBytecodeOffsetRegister", 0xff,
					 "InterpreterBytecodeOffsetRegister");
	return 0;
}

/* What the walker's reads can hold (v8.h): a lying file is refused here. */
static int check_bounds(const struct v8_file *f, struct errmsg *err)
{
	const struct v8_layout *l = &f->lay;
	const int32_t fps[4] = { l->fp_context, l->fp_function, l->fp_bytecode_array,
				 l->fp_bytecode_offset };
	int i;

	for (i = 0; i < 4; i++)
		if (fps[i] < -V8_FRAME_BELOW || fps[i] > 0 || (fps[i] & 7))
			return errmsg_set(err, -ENOTSUP, "frame slot at fp%+d is out of reach",
					  fps[i]);
	if (l->fn_shared + l->tagged_size > V8_OBJ_READ || l->fn_code + l->tagged_size > V8_OBJ_READ ||
	    l->code_start + 8 > V8_OBJ_READ || l->code_size + 4 > V8_OBJ_READ ||
	    l->code_flags + 4 > V8_OBJ_READ || l->sfi_length + V8_SFI_READ > 4096 ||
	    l->kind_mask == 0 || l->kind_mask > 255 || l->kind_shift > 31)
		return errmsg_set(err, -ENOTSUP, "object fields out of reach (JSFunction::code %u, "
				  "Code::instruction_start %u)", l->fn_code, l->code_start);
	return 0;
}

void v8_file_release(struct v8_file *f)
{
	if (!f)
		return;
	xfree(f->bytecode_sizes);
	f->bytecode_sizes = NULL;
}

/* A quick look for files not named like an embedder: enough code for V8, and v8dbg_ symbols
 * among the dynamic ones. */
static int looks_like_v8(struct elf_file *e)
{
	const struct elf_segment *seg;
	const void *dynstr;
	uint64_t text = 0;
	size_t n, i, len;

	seg = elf_segments(e, &n);
	for (i = 0; i < n; i++)
		if (seg[i].flags & 1 /* PF_X */)
			text += seg[i].memsz;
	if (text < V8_MIN_TEXT)
		return 0;
	if (elf_section(e, ".dynstr", &dynstr, &len, NULL) < 0)
		return 0;
	return memmem(dynstr, len, "v8dbg_SmiTag", 12) != NULL;
}

static void add_interp(struct v8_file *f, uint64_t lo, uint64_t size)
{
	if (f->ninterp < V8_INTERP_RANGES && size) {
		f->interp_lo[f->ninterp] = lo;
		f->interp_hi[f->ninterp] = lo + size;
		f->ninterp++;
	}
}

/* What the symbol scan collects. */
struct scan {
	struct metas m;
	struct v8_file *out;
	uint64_t blob, blob_end, sizes, sizes_len;
	uint64_t handler_lo, other_hi; /* lowest bytecode handler, highest other builtin */
	int32_t ver[4];
};

static void scan_symbol(struct elf_file *e, struct scan *sc, const char *name, uint64_t addr,
			uint64_t size)
{
	static const char *const interp_names[] = {
		"Builtins_InterpreterEntryTrampoline",
		"Builtins_InterpreterEntryTrampolineForProfiling",
		"Builtins_InterpreterEnterAtBytecode",
		"Builtins_InterpreterEnterAtNextBytecode",
	};
	static const char *const parts[4] = { "6major_E", "6minor_E", "6build_E", "6patch_E" };
	size_t j;

	if (!strncmp(name, "v8dbg_", 6)) {
		int32_t v;

		if (sym_int(e, addr, &v) < 0)
			return;
		/* .symtab and .dynsym both list them: the first one read wins (same value) */
		ALLOC_GROW(sc->m.v, sc->m.n + 1, sc->m.cap);
		sc->m.v[sc->m.n].name = name + 6;
		sc->m.v[sc->m.n].value = v;
		sc->m.n++;
	} else if (!strncmp(name, "Builtins_", 9) && size) {
		/* the embedded builtins: from the first to the end of the last */
		if (!sc->blob || addr < sc->blob)
			sc->blob = addr;
		if (addr + size > sc->blob_end)
			sc->blob_end = addr + size;
		/* the bytecode handlers (FooHandler, FooWideHandler, ...) come last */
		if (strlen(name) > 16 && !strcmp(name + strlen(name) - 7, "Handler")) {
			if (!sc->handler_lo || addr < sc->handler_lo)
				sc->handler_lo = addr;
		} else if (addr > sc->other_hi) {
			sc->other_hi = addr;
		}
		for (j = 0; j < sizeof(interp_names) / sizeof(interp_names[0]); j++) {
			if (strcmp(name, interp_names[j]))
				continue;
			for (j = 0; j < (size_t)sc->out->ninterp; j++)
				if (sc->out->interp_lo[j] == addr)
					return;
			add_interp(sc->out, addr, size);
			return;
		}
	} else if (!strncmp(name, "_ZN2v88internal7Version", 23)) {
		for (j = 0; j < 4; j++)
			if (!strcmp(name + 23, parts[j]))
				sym_int(e, addr, &sc->ver[j]);
	} else if (!strcmp(name, "v8_Default_embedded_blob_code_")) {
		if (!sc->blob || addr < sc->blob)
			sc->blob = addr;
	} else if (!strcmp(name, "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE")) {
		sc->sizes = addr;
		sc->sizes_len = size;
	} else if (!strncmp(name, "_ZN2v88internal12_GLOBAL__N_1", 29) &&
		   strstr(name, "current_embedded_blob_code_")) {
		if (strstr(name, "size"))
			sc->out->blob_size_var = addr;
		else
			sc->out->blob_code_var = addr;
	}
}

/* One pass over the raw symbol tables (.symtab, then .dynsym): far cheaper than loading the
 * sorted symbol table of a 100 MB executable, and the unwinder's tables wait for us. */
static void scan_symbols(struct elf_file *e, struct scan *sc)
{
	static const char *const tabs[2][2] = { { ".symtab", ".strtab" }, { ".dynsym", ".dynstr" } };
	int pass;

	for (pass = 0; pass < 2; pass++) {
		const void *symdata, *strdata;
		size_t symlen, strsize, j;

		if (elf_section(e, tabs[pass][0], &symdata, &symlen, NULL) ||
		    elf_section(e, tabs[pass][1], &strdata, &strsize, NULL))
			continue;
		for (j = 0; j + sizeof(Elf64_Sym) <= symlen; j += sizeof(Elf64_Sym)) {
			Elf64_Sym sym;
			const char *name;

			memcpy(&sym, (const char *)symdata + j, sizeof(sym));
			if (sym.st_shndx == SHN_UNDEF || !sym.st_value || sym.st_name >= strsize)
				continue;
			name = (const char *)strdata + sym.st_name;
			if (!memchr(name, 0, strsize - sym.st_name))
				continue;
			scan_symbol(e, sc, name, sym.st_value, sym.st_size);
		}
	}
}

int v8_file_detect(struct elf_file *e, const char *path, struct v8_file *out, struct errmsg *err)
{
	struct scan sc;
	struct metas m = { 0 };
	struct builder b;
	uint64_t blob, blob_end, sizes, sizes_len;
	int32_t ver[4];
	size_t i, j;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!v8_is_embedder_path(path) && !looks_like_v8(e))
		return 0;
	memset(&sc, 0, sizeof(sc));
	sc.out = out;
	scan_symbols(e, &sc);
	/* the same name from .symtab and .dynsym: keep one */
	m = sc.m;
	if (m.n) {
		qsort(m.v, m.n, sizeof(*m.v), meta_cmp);
		for (i = j = 0; i < m.n; i++)
			if (!j || strcmp(m.v[j - 1].name, m.v[i].name))
				m.v[j++] = m.v[i];
		m.n = j;
	}
	blob = sc.blob;
	blob_end = sc.blob_end;
	sizes = sc.sizes;
	sizes_len = sc.sizes_len;
	memcpy(ver, sc.ver, sizeof(ver));
	if (!m.n) {
		rc = v8_is_embedder_path(path) ?
			errmsg_set(err, -ENOTSUP, "'%s' has no V8 postmortem metadata (v8dbg_*)", path) :
			0;
		goto cleanup;
	}
	out->nmetadata = (int)m.n;
	out->major = (uint32_t)ver[0];
	out->minor = (uint32_t)ver[1];
	out->build = (uint32_t)ver[2];
	out->patch = (uint32_t)ver[3];
	snprintf(out->path, sizeof(out->path), "%s", path);
	memset(&b, 0, sizeof(b));
	b.m = &m;
	b.f = out;
	b.err = err;
	b.version = v8_version_key(out->major, out->minor, out->build);
	if (!out->major)
		b.version = v8_version_key(11, 3, 0); /* no version symbols: assume Node 20's */
	if (b.version < v8_version_key(11, 1, 204)) {
		/* before 11.1.204 a JSFunction's code held its instructions: another walk */
		rc = errmsg_set(err, -ENOTSUP, "V8 %u.%u.%u is older than 11.1.204 (Node 20)",
				out->major, out->minor, out->build);
		goto cleanup;
	}
	rc = build_layout(&b);
	if (rc)
		goto cleanup;
	if (b.missing) {
		rc = errmsg_set(err, -ENOTSUP, "V8 %u.%u.%u: the metadata has no '%s'", out->major,
				out->minor, out->build, b.missing);
		goto cleanup;
	}
	rc = check_bounds(out, err);
	if (rc)
		goto cleanup;
	frame_types(&b);
	if (blob && blob_end > blob) {
		out->builtins_lo = blob;
		out->builtins_hi = blob_end;
		if (elf_offset_of_vaddr(e, blob, &out->builtins_offset))
			out->builtins_offset = 0;
		if (sc.handler_lo > sc.other_hi && sc.handler_lo < blob_end) {
			out->handlers_lo = sc.handler_lo;
			out->handlers_hi = blob_end;
		}
	}
	if (sizes && sizes_len >= 3 && sizes_len % 3 == 0 && sizes_len / 3 <= V8_MAX_BYTECODES) {
		uint64_t off;

		out->bytecode_sizes = xmalloc(sizes_len);
		if (elf_offset_of_vaddr(e, sizes, &off) == 0 &&
		    elf_read(e, off, out->bytecode_sizes, sizes_len) == 0) {
			out->nbytecodes = sizes_len / 3;
		} else {
			xfree(out->bytecode_sizes);
			out->bytecode_sizes = NULL;
		}
	}
	rc = 1;
cleanup:
	xfree(m.v);
	if (rc != 1)
		v8_file_release(out);
	return rc;
}
