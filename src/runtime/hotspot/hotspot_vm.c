/* hotspot_vm.c: reading a HotSpot JVM's description of itself (hotspot_vm.h): the vmStructs,
 * vmTypes and int-constant tables, the version, the code cache and the stub routines. */
#include "runtime/hotspot/hotspot_vm.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "runtime/procmem.h"

#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sym_names[HS_SYM__COUNT] = {
	[HS_SYM_STRUCTS] = "gHotSpotVMStructs",
	[HS_SYM_S_STRIDE] = "gHotSpotVMStructEntryArrayStride",
	[HS_SYM_S_TYPE] = "gHotSpotVMStructEntryTypeNameOffset",
	[HS_SYM_S_FIELD] = "gHotSpotVMStructEntryFieldNameOffset",
	[HS_SYM_S_TYPESTR] = "gHotSpotVMStructEntryTypeStringOffset",
	[HS_SYM_S_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
	[HS_SYM_S_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
	[HS_SYM_S_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
	[HS_SYM_TYPES] = "gHotSpotVMTypes",
	[HS_SYM_T_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
	[HS_SYM_T_TYPE] = "gHotSpotVMTypeEntryTypeNameOffset",
	[HS_SYM_T_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
	[HS_SYM_INTS] = "gHotSpotVMIntConstants",
	[HS_SYM_I_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
	[HS_SYM_I_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
	[HS_SYM_I_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
};

const char *hotspot_sym_name(enum hotspot_export s)
{
	return (unsigned)s < HS_SYM__COUNT ? sym_names[s] : "?";
}

static int is_libjvm(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libjvm.so", 9);
}

/* The exported symbols from .dynsym alone: libjvm's full symbol table (60,000+ C++ names) is
 * the symbolizer's business, not worth loading twice. Returns how many were found. */
static int dynsyms(struct elf_file *e, struct hotspot_file *out)
{
	const void *symtab, *strtab;
	size_t symsz, strsz, i;
	int found = 0, k;

	if (elf_section(e, ".dynsym", &symtab, &symsz, NULL) ||
	    elf_section(e, ".dynstr", &strtab, &strsz, NULL))
		return 0;
	for (i = 0; i + sizeof(Elf64_Sym) <= symsz; i += sizeof(Elf64_Sym)) {
		Elf64_Sym sym;
		const char *name;

		memcpy(&sym, (const char *)symtab + i, sizeof(sym));
		if (sym.st_name >= strsz || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = (const char *)strtab + sym.st_name;
		if (strnlen(name, strsz - sym.st_name) == strsz - sym.st_name ||
		    strncmp(name, "gHotSpotVM", 10))
			continue;
		for (k = 0; k < HS_SYM__COUNT; k++) {
			if (!out->sym[k] && !strcmp(name, sym_names[k])) {
				out->sym[k] = sym.st_value;
				found++;
			}
		}
	}
	return found;
}

int hotspot_file_detect(struct elf_file *e, const char *path, struct hotspot_file *out)
{
	uint64_t size;
	int rc, i;

	memset(out, 0, sizeof(*out));
	/* Only a file named like HotSpot's is worth a look at its symbols. */
	if (!is_libjvm(path))
		return 0;
	if (dynsyms(e, out) < HS_SYM__COUNT) {
		/* not exported dynamically (a static build?): the full symbol table */
		memset(out, 0, sizeof(*out));
		rc = elf_symbols_load(e, NULL);
		if (rc)
			return rc;
		for (i = 0; i < HS_SYM__COUNT; i++)
			if (elf_find_symbol(e, sym_names[i], &out->sym[i], &size) || !out->sym[i])
				return 0; /* another JVM (OpenJ9, ...) or a stripped build */
	}
	snprintf(out->path, sizeof(out->path), "%s", path);
	return 1;
}

/* ---- reading the tables */

/* A NUL-terminated string of at most outlen - 1 bytes at addr, read in page-bounded pieces
 * (a string near the end of a mapping must not make the read fail). 0, -EFAULT, -E2BIG (no
 * NUL within outlen - 1 bytes). */
static int read_cstr(struct procmem *m, uint64_t addr, char *out, size_t outlen)
{
	size_t have = 0;

	if (outlen < 2)
		return -E2BIG;
	while (have < outlen - 1) {
		size_t want = 4096 - ((addr + have) & 4095), i;

		if (want > outlen - 1 - have)
			want = outlen - 1 - have;
		if (procmem_read(m, addr + have, out + have, want) < 0)
			return -EFAULT;
		for (i = have; i < have + want; i++)
			if (out[i] == '\0')
				return 0;
		have += want;
	}
	out[outlen - 1] = '\0';
	return -E2BIG;
}

struct vm_field {
	char type[HOTSPOT_NAME_MAX];
	char field[HOTSPOT_NAME_MAX];
	char typestr[32];
	int is_static;
	uint64_t offset;   /* non-static: offset in the type */
	uint64_t address;  /* static: the variable's address */
};

struct vm_type {
	char name[HOTSPOT_NAME_MAX];
	uint64_t size;
};

struct vm_const {
	char name[HOTSPOT_NAME_MAX];
	int32_t value;
};

struct tables {
	struct vm_field *fields;
	size_t nfields, fields_cap;
	struct vm_type *types;
	size_t ntypes, types_cap;
	struct vm_const *consts;
	size_t nconsts, consts_cap;
	size_t entries;
};

/* The types whose fields (and sizes) we keep; the others are skipped without reading their
 * field names. */
static const char *const wanted_types[] = {
	"CodeBlob", "CompiledMethod", "nmethod", "CodeHeap", "CodeCache", "HeapBlock",
	"HeapBlock::Header", "VirtualSpace", "GrowableArrayBase", "GenericGrowableArray",
	"GrowableArray<int>", "AbstractInterpreter", "StubQueue", "Method", "ConstMethod",
	"ConstantPool", "InstanceKlass", "Klass", "Symbol", "PcDesc", "JDK_Version",
	"Abstract_VM_Version", "Arguments", "StubRoutines",
	/* Java thread names */
	"ThreadsSMRSupport", "ThreadsList", "Thread", "JavaThread", "OopHandle", "OSThread",
	"vmClasses", "SystemDictionary", "CompressedOops", "CompressedKlassPointers", "Universe",
	"JVMFlag", "oopDesc", "Array<u2>",
};

static int wanted(const char *type)
{
	size_t i;

	for (i = 0; i < sizeof(wanted_types) / sizeof(wanted_types[0]); i++)
		if (!strcmp(type, wanted_types[i]))
			return 1;
	return 0;
}

static void tables_release(struct tables *t)
{
	xfree(t->fields);
	xfree(t->types);
	xfree(t->consts);
	memset(t, 0, sizeof(*t));
}

/* Names are cached by pointer: the tables repeat the same string literal for every field of a
 * type. cache maps a pointer to 1 + index in names (wanted) or to 0 (not wanted, remembered as
 * ~0). */
struct name_cache {
	struct u64map map;
	char (*names)[HOTSPOT_NAME_MAX];
	size_t n, cap;
};

static int cached_name(struct procmem *m, struct name_cache *c, uint64_t ptr, const char **out)
{
	uint64_t *v;
	char buf[HOTSPOT_NAME_MAX];
	int rc;

	if (ptr == 0 || ptr == ~0ULL) { /* never a name (and the map's reserved keys) */
		*out = NULL;
		return 0;
	}
	v = u64map_get(&c->map, ptr);
	if (v) {
		*out = *v ? c->names[*v - 1] : NULL;
		return 0;
	}
	rc = read_cstr(m, ptr, buf, sizeof(buf));
	if (rc == -EFAULT)
		return rc;
	if (rc < 0 || !wanted(buf)) {
		u64map_put(&c->map, ptr, 0);
		*out = NULL;
		return 0;
	}
	ALLOC_GROW(c->names, c->n + 1, c->cap);
	memcpy(c->names[c->n], buf, sizeof(buf));
	c->n++;
	u64map_put(&c->map, ptr, c->n);
	*out = c->names[c->n - 1];
	return 0;
}

struct layout {
	uint64_t base, stride;
	uint64_t off[6];
};

/* The layout variables of one table: its array pointer, stride and field offsets. */
static int read_layout(struct procmem *m, const struct hotspot_file *f, uint64_t bias,
		       enum hotspot_export array, enum hotspot_export stride, const enum hotspot_export *offs,
		       int noffs, struct layout *out, struct errmsg *err)
{
	int i;

	memset(out, 0, sizeof(*out));
	if (procmem_u64(m, f->sym[array] + bias, &out->base) < 0 ||
	    procmem_u64(m, f->sym[stride] + bias, &out->stride) < 0)
		return errmsg_set(err, -EFAULT, "cannot read %s", sym_names[array]);
	/* the JVM fills these in while it starts: not set yet is not an error */
	if (!out->base || !out->stride)
		return errmsg_set(err, -EFAULT, "%s is not set yet", sym_names[array]);
	if (out->stride < 8 || out->stride > HOTSPOT_MAX_STRIDE || (out->stride & 7))
		return errmsg_set(err, -EINVAL, "%s: stride %llu is not plausible", sym_names[stride],
				  (unsigned long long)out->stride);
	for (i = 0; i < noffs; i++) {
		if (procmem_u64(m, f->sym[offs[i]] + bias, &out->off[i]) < 0)
			return errmsg_set(err, -EFAULT, "cannot read %s", sym_names[offs[i]]);
		if (out->off[i] + 8 > out->stride)
			return errmsg_set(err, -EINVAL, "%s: %llu is outside the entry", sym_names[offs[i]],
					  (unsigned long long)out->off[i]);
	}
	return 0;
}

#define CHUNK_ENTRIES 256

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Walk a table chunk by chunk, calling fn for each entry until the entry whose first name
 * pointer (at name_off) is NULL. */
typedef int (*entry_fn)(struct procmem *m, struct tables *t, struct name_cache *c,
			const struct layout *l, const uint8_t *entry, struct errmsg *err);

static int walk_table(struct procmem *m, struct tables *t, struct name_cache *c,
		      const struct layout *l, uint64_t name_off, entry_fn fn, const char *what,
		      struct errmsg *err)
{
	uint8_t *buf = xmalloc(CHUNK_ENTRIES * HOTSPOT_MAX_STRIDE);
	size_t i, n = 0;
	int rc = 0;

	for (;;) {
		size_t len = CHUNK_ENTRIES * l->stride;

		if (n >= HOTSPOT_MAX_ENTRIES) {
			rc = errmsg_set(err, -EINVAL, "%s: more than %u entries", what,
					HOTSPOT_MAX_ENTRIES);
			goto cleanup;
		}
		/* the last chunk may cross the end of the mapping: take less */
		while (len >= l->stride && procmem_read(m, l->base + n * l->stride, buf, len) < 0)
			len = (len / 2 / l->stride) * l->stride;
		if (len < l->stride) {
			rc = errmsg_set(err, -EFAULT, "%s: cannot read entry %zu", what, n);
			goto cleanup;
		}
		for (i = 0; i < len / l->stride; i++, n++) {
			const uint8_t *e = buf + i * l->stride;

			if (ld64(e + name_off) == 0)
				goto cleanup; /* the end of the table */
			rc = fn(m, t, c, l, e, err);
			if (rc)
				goto cleanup;
			t->entries++;
		}
	}
cleanup:
	xfree(buf);
	return rc;
}

static int struct_entry(struct procmem *m, struct tables *t, struct name_cache *c,
			const struct layout *l, const uint8_t *e, struct errmsg *err)
{
	const char *type = NULL;
	struct vm_field *f;
	int rc;

	rc = cached_name(m, c, ld64(e + l->off[0]), &type);
	if (rc || !type)
		return rc == -EFAULT ? errmsg_set(err, rc, "vmStructs: unreadable type name") : 0;
	ALLOC_GROW(t->fields, t->nfields + 1, t->fields_cap);
	f = &t->fields[t->nfields];
	memset(f, 0, sizeof(*f));
	snprintf(f->type, sizeof(f->type), "%s", type);
	if (read_cstr(m, ld64(e + l->off[1]), f->field, sizeof(f->field)) < 0)
		return 0; /* a field without a readable name is of no use */
	if (ld64(e + l->off[2]) && read_cstr(m, ld64(e + l->off[2]), f->typestr,
					       sizeof(f->typestr)) < 0)
		f->typestr[0] = '\0';
	f->is_static = ld32(e + l->off[3]) != 0;
	f->offset = ld64(e + l->off[4]);
	f->address = ld64(e + l->off[5]);
	t->nfields++;
	return 0;
}

static int type_entry(struct procmem *m, struct tables *t, struct name_cache *c,
		      const struct layout *l, const uint8_t *e, struct errmsg *err)
{
	const char *type = NULL;
	struct vm_type *ty;
	int rc;

	rc = cached_name(m, c, ld64(e + l->off[0]), &type);
	if (rc || !type)
		return rc == -EFAULT ? errmsg_set(err, rc, "vmTypes: unreadable type name") : 0;
	ALLOC_GROW(t->types, t->ntypes + 1, t->types_cap);
	ty = &t->types[t->ntypes++];
	snprintf(ty->name, sizeof(ty->name), "%s", type);
	ty->size = ld64(e + l->off[1]);
	if (ty->size > HOTSPOT_MAX_TYPE_SIZE)
		return errmsg_set(err, -EINVAL, "vmTypes: %s has size %llu", type,
				  (unsigned long long)ty->size);
	return 0;
}

/* The int constants we use, by name; the others are skipped after reading their name. */
static const char *const wanted_consts[] = {
	"ConstMethod::_has_linenumber_table",
	"ConstMethodFlags::_misc_has_linenumber_table",
	"frame::interpreter_frame_sender_sp_offset",
	"frame::interpreter_frame_last_sp_offset",
	"FieldInfo::access_flags_offset",
	"FieldInfo::name_index_offset",
	"FieldInfo::signature_index_offset",
	"FieldInfo::low_packed_offset",
	"FieldInfo::high_packed_offset",
	"FieldInfo::field_slots",
	"FIELDINFO_TAG_SIZE",
	"FIELDINFO_TAG_OFFSET",
};

static int const_entry(struct procmem *m, struct tables *t, struct name_cache *c,
		       const struct layout *l, const uint8_t *e, struct errmsg *err)
{
	char name[HOTSPOT_NAME_MAX];
	size_t i;

	if (read_cstr(m, ld64(e + l->off[0]), name, sizeof(name)) < 0)
		return 0;
	for (i = 0; i < sizeof(wanted_consts) / sizeof(wanted_consts[0]); i++) {
		if (strcmp(name, wanted_consts[i]))
			continue;
		ALLOC_GROW(t->consts, t->nconsts + 1, t->consts_cap);
		snprintf(t->consts[t->nconsts].name, sizeof(t->consts[0].name), "%s", name);
		t->consts[t->nconsts].value = (int32_t)ld32(e + l->off[1]);
		t->nconsts++;
	}
	return 0;
}

static int read_tables(struct procmem *m, const struct hotspot_file *f, uint64_t bias,
		       struct tables *t, struct errmsg *err)
{
	static const enum hotspot_export s_offs[] = { HS_SYM_S_TYPE, HS_SYM_S_FIELD, HS_SYM_S_TYPESTR,
						   HS_SYM_S_STATIC, HS_SYM_S_OFFSET,
						   HS_SYM_S_ADDRESS };
	static const enum hotspot_export t_offs[] = { HS_SYM_T_TYPE, HS_SYM_T_SIZE };
	static const enum hotspot_export i_offs[] = { HS_SYM_I_NAME, HS_SYM_I_VALUE };
	struct name_cache c;
	struct layout l;
	int rc;

	memset(&c, 0, sizeof(c));
	u64map_init(&c.map);
	rc = read_layout(m, f, bias, HS_SYM_STRUCTS, HS_SYM_S_STRIDE, s_offs, 6, &l, err);
	if (rc == 0)
		rc = walk_table(m, t, &c, &l, l.off[0], struct_entry, "vmStructs", err);
	if (rc == 0)
		rc = read_layout(m, f, bias, HS_SYM_TYPES, HS_SYM_T_STRIDE, t_offs, 2, &l, err);
	if (rc == 0)
		rc = walk_table(m, t, &c, &l, l.off[0], type_entry, "vmTypes", err);
	/* the int constants only refine defaults: a JVM without them is still usable */
	if (rc == 0 && read_layout(m, f, bias, HS_SYM_INTS, HS_SYM_I_STRIDE, i_offs, 2, &l, NULL) == 0)
		walk_table(m, t, &c, &l, l.off[0], const_entry, "vmIntConstants", NULL);
	u64map_release(&c.map);
	xfree(c.names);
	return rc;
}

static const struct vm_field *find_field(const struct tables *t, const char *type,
					 const char *field)
{
	size_t i;

	for (i = 0; i < t->nfields; i++)
		if (!strcmp(t->fields[i].type, type) && !strcmp(t->fields[i].field, field))
			return &t->fields[i];
	return NULL;
}

static const struct vm_type *find_type(const struct tables *t, const char *type)
{
	size_t i;

	for (i = 0; i < t->ntypes; i++)
		if (!strcmp(t->types[i].name, type))
			return &t->types[i];
	return NULL;
}

static int find_const(const struct tables *t, const char *name, int32_t *out)
{
	size_t i;

	for (i = 0; i < t->nconsts; i++) {
		if (!strcmp(t->consts[i].name, name)) {
			*out = t->consts[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

/* Lookups that remember the first failure: the reader asks for everything, then checks once. */
struct picker {
	const struct tables *t;
	char missing[160];
	char bad[160];
};

static void note_missing(struct picker *pk, const char *type, const char *field)
{
	if (!pk->missing[0])
		snprintf(pk->missing, sizeof(pk->missing), "%s::%s", type, field);
}

/* The offset of a non-static field in its type, checked against the type's size. Tries the
 * names in order ("Type::field", split at the last "::": "HeapBlock::Header::_used"). */
static uint32_t pick_offset(struct picker *pk, int required, const char *const *names)
{
	size_t i;

	for (i = 0; names[i]; i++) {
		char type[HOTSPOT_NAME_MAX];
		const char *sep = NULL, *s, *field;
		const struct vm_field *f;
		const struct vm_type *ty;

		for (s = names[i]; (s = strstr(s, "::")); s += 2)
			sep = s;
		if (!sep || (size_t)(sep - names[i]) >= sizeof(type))
			continue;
		memcpy(type, names[i], (size_t)(sep - names[i]));
		type[sep - names[i]] = '\0';
		field = sep + 2;
		f = find_field(pk->t, type, field);
		if (!f || f->is_static)
			continue;
		ty = find_type(pk->t, type);
		if (f->offset >= HOTSPOT_MAX_TYPE_SIZE || (ty && ty->size && f->offset >= ty->size)) {
			if (!pk->bad[0])
				snprintf(pk->bad, sizeof(pk->bad), "%s::%s at %llu is outside its type",
					 type, field, (unsigned long long)f->offset);
			return HS_NO_FIELD;
		}
		return (uint32_t)f->offset;
	}
	if (required && !pk->missing[0])
		snprintf(pk->missing, sizeof(pk->missing), "%s", names[0]);
	return HS_NO_FIELD;
}

static uint64_t pick_static(struct picker *pk, int required, const char *type, const char *field)
{
	const struct vm_field *f = find_field(pk->t, type, field);

	if (f && f->is_static && f->address)
		return f->address;
	if (required)
		note_missing(pk, type, field);
	return 0;
}

static uint32_t pick_size(struct picker *pk, int required, const char *type)
{
	const struct vm_type *ty = find_type(pk->t, type);

	if (ty && ty->size)
		return (uint32_t)ty->size;
	if (required && !pk->missing[0])
		snprintf(pk->missing, sizeof(pk->missing), "sizeof(%s)", type);
	return 0;
}

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

static int read_version(struct procmem *m, const struct tables *t, struct picker *pk,
			struct hotspot_vm *vm)
{
	uint64_t jv = pick_static(pk, 0, "JDK_Version", "_current"), rel;
	uint8_t b[5];
	uint32_t v;

	if (jv && procmem_read(m, jv, b, sizeof(b)) == 0 && b[0]) {
		vm->major = b[0];
		vm->minor = b[1];
		vm->security = b[2];
		vm->build = b[4];
	} else {
		/* JDK 21 dropped JDK_Version from the tables */
		uint64_t a = pick_static(pk, 0, "Abstract_VM_Version", "_vm_major_version");

		if (!a || procmem_u32(m, a, &v) < 0 || v == 0 || v > 1000)
			return -ENOENT;
		vm->major = v;
		a = pick_static(pk, 0, "Abstract_VM_Version", "_vm_minor_version");
		if (a && procmem_u32(m, a, &v) == 0)
			vm->minor = v;
		a = pick_static(pk, 0, "Abstract_VM_Version", "_vm_security_version");
		if (a && procmem_u32(m, a, &v) == 0)
			vm->security = v;
		a = pick_static(pk, 0, "Abstract_VM_Version", "_vm_build_number");
		if (a && procmem_u32(m, a, &v) == 0)
			vm->build = v;
	}
	rel = pick_static(pk, 0, "Abstract_VM_Version", "_s_vm_release");
	if (rel && procmem_u64(m, rel, &rel) == 0 && rel)
		read_cstr(m, rel, vm->release, sizeof(vm->release));
	(void)t;
	return 0;
}

/* A static of type (one of two names) whose field name contains part: the well-known class
 * slots are named after an expression ("_klasses[static_cast<int>(vmClassID::Thread_klass_knum)]"
 * in JDK 17, "_well_known_klasses[SystemDictionary::Thread_klass_knum]" in JDK 11). */
static uint64_t find_static_part(const struct tables *t, const char *type1, const char *type2,
				 const char *part)
{
	size_t i;

	for (i = 0; i < t->nfields; i++) {
		const struct vm_field *f = &t->fields[i];

		if (f->is_static && f->address && strstr(f->field, part) &&
		    (!strcmp(f->type, type1) || !strcmp(f->type, type2)))
			return f->address;
	}
	return 0;
}

static uint64_t static_of(struct picker *pk, const char *type1, const char *type2,
			  const char *field)
{
	uint64_t a = pick_static(pk, 0, type1, field);

	return a ? a : pick_static(pk, 0, type2, field);
}

/* What naming Java threads needs (hotspot_thread_offsets). Nothing here is required: a JVM
 * without it is walked as well, its threads keep their kernel names. */
static void pick_threads(const struct tables *t, struct picker *pk, struct hotspot_thread_offsets *o)
{
	static const struct {
		const char *name;
		size_t off;
	} consts[] = {
		{ "FieldInfo::access_flags_offset", offsetof(struct hotspot_thread_offsets, fi_access) },
		{ "FieldInfo::name_index_offset", offsetof(struct hotspot_thread_offsets, fi_name) },
		{ "FieldInfo::signature_index_offset", offsetof(struct hotspot_thread_offsets, fi_sig) },
		{ "FieldInfo::low_packed_offset", offsetof(struct hotspot_thread_offsets, fi_low) },
		{ "FieldInfo::high_packed_offset", offsetof(struct hotspot_thread_offsets, fi_high) },
		{ "FieldInfo::field_slots", offsetof(struct hotspot_thread_offsets, fi_slots) },
		{ "FIELDINFO_TAG_SIZE", offsetof(struct hotspot_thread_offsets, fi_tag_size) },
		{ "FIELDINFO_TAG_OFFSET", offsetof(struct hotspot_thread_offsets, fi_tag_offset) },
	};
	const struct vm_field *tobj = find_field(t, "JavaThread", "_threadObj");
	size_t i;
	int32_t c;

	memset(o, 0, sizeof(*o));
	o->java_thread_list = pick_static(pk, 0, "ThreadsSMRSupport", "_java_thread_list");
	o->tl_length = pick_offset(pk, 0, NAMES("ThreadsList::_length"));
	o->tl_threads = pick_offset(pk, 0, NAMES("ThreadsList::_threads"));
	o->jt_osthread = pick_offset(pk, 0, NAMES("JavaThread::_osthread", "Thread::_osthread"));
	o->jt_thread_obj = pick_offset(pk, 0, NAMES("JavaThread::_threadObj"));
	o->jt_obj_handle = tobj && !strcmp(tobj->typestr, "OopHandle");
	o->oh_obj = o->jt_obj_handle ? pick_offset(pk, 0, NAMES("OopHandle::_obj")) : 0;
	o->os_thread_id = pick_offset(pk, 0, NAMES("OSThread::_thread_id"));
	o->thread_klass = find_static_part(t, "vmClasses", "SystemDictionary", "::Thread_klass_knum");
	o->string_klass = find_static_part(t, "vmClasses", "SystemDictionary", "::String_klass_knum");
	o->narrow_oop_base = static_of(pk, "CompressedOops", "Universe", "_narrow_oop._base");
	o->narrow_oop_shift = static_of(pk, "CompressedOops", "Universe", "_narrow_oop._shift");
	o->narrow_klass_base = static_of(pk, "CompressedKlassPointers", "Universe",
					 "_narrow_klass._base");
	o->narrow_klass_shift = static_of(pk, "CompressedKlassPointers", "Universe",
					  "_narrow_klass._shift");
	o->flags = pick_static(pk, 0, "JVMFlag", "flags");
	o->num_flags = pick_static(pk, 0, "JVMFlag", "numFlags");
	o->flag_size = pick_size(pk, 0, "JVMFlag");
	o->flag_name = pick_offset(pk, 0, NAMES("JVMFlag::_name"));
	o->flag_addr = pick_offset(pk, 0, NAMES("JVMFlag::_addr"));
	o->oop_klass = pick_offset(pk, 0, NAMES("oopDesc::_metadata._klass"));
	o->klass_super = pick_offset(pk, 0, NAMES("Klass::_super"));
	o->klass_layout = pick_offset(pk, 0, NAMES("Klass::_layout_helper"));
	o->ik_fields = pick_offset(pk, 0, NAMES("InstanceKlass::_fields"));
	o->ik_java_fields = pick_offset(pk, 0, NAMES("InstanceKlass::_java_fields_count"));
	o->array_u2_data = pick_offset(pk, 0, NAMES("Array<u2>::_data"));
	for (i = 0; i < sizeof(consts) / sizeof(consts[0]); i++) {
		if (find_const(t, consts[i].name, &c) || c < 0 || c > 64)
			return;
		memcpy((char *)o + consts[i].off, &(uint32_t){ (uint32_t)c }, sizeof(uint32_t));
	}
	if (!o->java_thread_list || !o->thread_klass || !o->string_klass || !o->narrow_oop_base ||
	    !o->narrow_oop_shift || !o->narrow_klass_base || !o->narrow_klass_shift || !o->flags ||
	    !o->num_flags || o->flag_size < 16 || o->tl_length == HS_NO_FIELD ||
	    o->tl_threads == HS_NO_FIELD || o->jt_osthread == HS_NO_FIELD ||
	    o->jt_thread_obj == HS_NO_FIELD || o->oh_obj == HS_NO_FIELD ||
	    o->os_thread_id == HS_NO_FIELD || o->flag_name == HS_NO_FIELD ||
	    o->flag_addr == HS_NO_FIELD || o->oop_klass == HS_NO_FIELD ||
	    o->klass_super == HS_NO_FIELD || o->klass_layout == HS_NO_FIELD ||
	    o->ik_fields == HS_NO_FIELD || o->ik_java_fields == HS_NO_FIELD ||
	    o->array_u2_data == HS_NO_FIELD || o->array_u2_data > 16 || o->fi_slots == 0 ||
	    o->fi_slots > 16 || o->fi_access >= o->fi_slots || o->fi_name >= o->fi_slots ||
	    o->fi_sig >= o->fi_slots || o->fi_low >= o->fi_slots || o->fi_high >= o->fi_slots ||
	    o->fi_tag_size > 8 || o->flag_name + 8 > o->flag_size || o->flag_addr + 8 > o->flag_size)
		return;
	o->usable = 1;
}

/* The StubRoutines::_<name> entry-point variables: their addresses now, their values (the
 * entry points) once the stubs are generated (hotspot_vm_code_cache()). */
static void collect_stubs(const struct tables *t, struct hotspot_vm *vm)
{
	size_t i, cap = 0;

	for (i = 0; i < t->nfields && vm->nstubs < HOTSPOT_MAX_STUBS; i++) {
		const struct vm_field *f = &t->fields[i];
		struct hotspot_stub *st;

		if (strcmp(f->type, "StubRoutines") || !f->is_static || !f->address ||
		    strcmp(f->typestr, "address") || f->field[0] != '_')
			continue;
		ALLOC_GROW(vm->stubs, vm->nstubs + 1, cap);
		st = &vm->stubs[vm->nstubs++];
		st->addr = 0;
		st->var = f->address;
		snprintf(st->name, sizeof(st->name), "%s", f->field + 1);
	}
	vm->stubs_resolved = 0;
}

static int vm_read(struct procmem *m, const struct hotspot_file *f, uint64_t bias,
		   struct hotspot_vm *vm, struct errmsg *err);

/* The tables are arrays of entries whose names sit together in libjvm's read-only data: read
 * through blocks, a system call for each rather than for each field and name. */
int hotspot_vm_read(struct procmem *m, const struct hotspot_file *f, uint64_t bias,
		    struct hotspot_vm *vm, struct errmsg *err)
{
	int rc;

	procmem_cache_begin(m);
	rc = vm_read(m, f, bias, vm, err);
	procmem_cache_end(m);
	return rc;
}

static int vm_read(struct procmem *m, const struct hotspot_file *f, uint64_t bias,
		   struct hotspot_vm *vm, struct errmsg *err)
{
	struct tables t;
	struct picker pk;
	struct hs_proc *b = &vm->bpf;
	int32_t c = 0, sender_sp = -1, last_sp = -2;
	uint32_t hb_header, hb_used, max_off;
	int rc;

	memset(vm, 0, sizeof(*vm));
	memset(&t, 0, sizeof(t));
	memset(&pk, 0, sizeof(pk));
	pk.t = &t;
	rc = read_tables(m, f, bias, &t, err);
	if (rc)
		goto cleanup;
	vm->entries_read = t.entries;
	if (read_version(m, &t, &pk, vm)) {
		rc = errmsg_set(err, -ENOTSUP, "the JVM's version is not in its tables");
		goto cleanup;
	}
	if (vm->major < 9 || vm->major > 22) {
		rc = errmsg_set(err, -ENOTSUP, "JDK %u is not supported (JDK 9 - 22 are)", vm->major);
		goto cleanup;
	}
	b->version = (vm->major << 16) | ((vm->minor > 255 ? 255 : vm->minor) << 8) |
		     (vm->security > 255 ? 255 : vm->security);
	vm->unsigned5_x = vm->major >= 19 ? 1 : 0;

	/* the code cache and its blobs */
	hb_header = pick_offset(&pk, 0, NAMES("HeapBlock::_header"));
	hb_used = pick_offset(&pk, 1, NAMES("HeapBlock::Header::_used"));
	b->hb_size = (uint16_t)pick_size(&pk, 1, "HeapBlock");
	b->hb_used = (uint16_t)((hb_header == HS_NO_FIELD ? 0 : hb_header) + hb_used);
	b->cb_name = (uint16_t)pick_offset(&pk, 1, NAMES("CodeBlob::_name"));
	b->cb_size = (uint16_t)pick_offset(&pk, 1, NAMES("CodeBlob::_size"));
	b->cb_frame_complete = (uint16_t)pick_offset(&pk, 1,
						     NAMES("CodeBlob::_frame_complete_offset"));
	b->cb_frame_size = (uint16_t)pick_offset(&pk, 1, NAMES("CodeBlob::_frame_size"));
	b->cb_code_begin = (uint16_t)pick_offset(&pk, 1, NAMES("CodeBlob::_code_begin"));
	b->nm_compile_id = (uint16_t)pick_offset(&pk, 1, NAMES("nmethod::_compile_id"));
	b->nm_orig_pc_offset = (uint16_t)pick_offset(&pk, 1, NAMES("nmethod::_orig_pc_offset"));
	b->nm_deopt_handler = (uint16_t)pick_offset(
		&pk, 1, NAMES("CompiledMethod::_deopt_handler_begin", "nmethod::_deopt_handler_begin"));
	b->nm_deopt_mh_handler = (uint16_t)pick_offset(
		&pk, 1,
		NAMES("CompiledMethod::_deopt_mh_handler_begin", "nmethod::_deopt_mh_handler_begin"));
	b->m_const_method = (uint16_t)pick_offset(&pk, 1, NAMES("Method::_constMethod"));
	b->cm_size = (uint16_t)pick_size(&pk, 1, "ConstMethod");
	/* interpreter frame slots (frame_x86.hpp): sender sp -1, last sp -2, then Method*, the
	 * mirror (JDK 9+), mdp, cache, locals and the bytecode pointer */
	if (find_const(&t, "frame::interpreter_frame_sender_sp_offset", &c) == 0)
		sender_sp = c;
	if (find_const(&t, "frame::interpreter_frame_last_sp_offset", &c) == 0)
		last_sp = c;
	b->if_sender_sp = (int16_t)sender_sp;
	b->if_method = (int16_t)(last_sp - 1);
	b->if_bcp = (int16_t)(last_sp - 6);

	vm->method_size = pick_size(&pk, 1, "Method");
	vm->cm_constants = pick_offset(&pk, 1, NAMES("ConstMethod::_constants"));
	vm->cm_flags = pick_offset(&pk, 1, NAMES("ConstMethod::_flags._flags", "ConstMethod::_flags"));
	vm->cm_flags_size = 2;
	{
		const struct vm_field *ff = find_field(&t, "ConstMethod", "_flags._flags");

		if (!ff)
			ff = find_field(&t, "ConstMethod", "_flags");
		if (ff && (!strcmp(ff->typestr, "u4") || !strcmp(ff->typestr, "int") ||
			   !strcmp(ff->typestr, "uint32_t") || !strcmp(ff->typestr, "jint")))
			vm->cm_flags_size = 4;
	}
	vm->cm_code_size = pick_offset(&pk, 1, NAMES("ConstMethod::_code_size"));
	vm->cm_name_index = pick_offset(&pk, 1, NAMES("ConstMethod::_name_index"));
	vm->cm_signature_index = pick_offset(&pk, 1, NAMES("ConstMethod::_signature_index"));
	vm->cm_has_linenumbers = 1;
	if (find_const(&t, "ConstMethodFlags::_misc_has_linenumber_table", &c) == 0 ||
	    find_const(&t, "ConstMethod::_has_linenumber_table", &c) == 0)
		vm->cm_has_linenumbers = (uint32_t)c;
	vm->cp_size = pick_size(&pk, 1, "ConstantPool");
	vm->cp_pool_holder = pick_offset(&pk, 1, NAMES("ConstantPool::_pool_holder"));
	vm->cp_length = pick_offset(&pk, 1, NAMES("ConstantPool::_length"));
	vm->cp_source_file = pick_offset(&pk, 0, NAMES("ConstantPool::_source_file_name_index"));
	vm->ik_source_file = pick_offset(&pk, 0, NAMES("InstanceKlass::_source_file_name_index"));
	vm->ik_constants = pick_offset(&pk, 1, NAMES("InstanceKlass::_constants"));
	vm->klass_name = pick_offset(&pk, 1, NAMES("Klass::_name"));
	vm->sym_length = pick_offset(&pk, 0, NAMES("Symbol::_length"));
	if (vm->sym_length == HS_NO_FIELD) {
		/* JDK 11 - 13: the length is the high half of _length_and_refcount */
		vm->sym_length = pick_offset(&pk, 1, NAMES("Symbol::_length_and_refcount"));
		vm->sym_length_shift = 16;
	}
	vm->sym_body = pick_offset(&pk, 1, NAMES("Symbol::_body"));
	vm->nm_method = pick_offset(&pk, 1, NAMES("CompiledMethod::_method", "nmethod::_method"));
	vm->nm_scopes_data = pick_offset(
		&pk, 1, NAMES("CompiledMethod::_scopes_data_begin", "nmethod::_scopes_data_begin"));
	vm->nm_metadata = pick_offset(&pk, 1, NAMES("nmethod::_metadata_offset"));
	vm->nm_scopes_pcs = pick_offset(&pk, 1, NAMES("nmethod::_scopes_pcs_offset"));
	vm->nm_dependencies = pick_offset(&pk, 1, NAMES("nmethod::_dependencies_offset"));
	vm->pc_size = pick_size(&pk, 1, "PcDesc");
	vm->pc_pc_offset = pick_offset(&pk, 1, NAMES("PcDesc::_pc_offset"));
	vm->pc_scope = pick_offset(&pk, 1, NAMES("PcDesc::_scope_decode_offset"));

	vm->heaps_addr = pick_static(&pk, 1, "CodeCache", "_heaps");
	vm->low_bound_addr = pick_static(&pk, 1, "CodeCache", "_low_bound");
	vm->high_bound_addr = pick_static(&pk, 1, "CodeCache", "_high_bound");
	vm->ga_len = pick_offset(&pk, 1, NAMES("GrowableArrayBase::_len", "GenericGrowableArray::_len"));
	vm->ga_data = pick_offset(&pk, 1, NAMES("GrowableArray<int>::_data"));
	vm->heap_memory = pick_offset(&pk, 1, NAMES("CodeHeap::_memory"));
	vm->heap_segmap = pick_offset(&pk, 1, NAMES("CodeHeap::_segmap"));
	vm->heap_log2 = pick_offset(&pk, 1, NAMES("CodeHeap::_log2_segment_size"));
	vm->vs_low_boundary = pick_offset(&pk, 1, NAMES("VirtualSpace::_low_boundary"));
	vm->vs_high_boundary = pick_offset(&pk, 1, NAMES("VirtualSpace::_high_boundary"));
	vm->vs_low = pick_offset(&pk, 1, NAMES("VirtualSpace::_low"));
	vm->interp_code_addr = pick_static(&pk, 0, "AbstractInterpreter", "_code");
	vm->sq_buffer = pick_offset(&pk, 0, NAMES("StubQueue::_stub_buffer"));
	vm->sq_limit = pick_offset(&pk, 0, NAMES("StubQueue::_buffer_limit"));
	vm->java_command_addr = pick_static(&pk, 0, "Arguments", "_java_command");
	vm->call_stub_ret_addr = pick_static(&pk, 0, "StubRoutines", "_call_stub_return_address");
	collect_stubs(&t, vm);
	pick_threads(&t, &pk, &vm->thr);
	if (pk.bad[0]) {
		rc = errmsg_set(err, -EINVAL, "vmStructs: %s", pk.bad);
		goto cleanup;
	}
	if (pk.missing[0]) {
		rc = errmsg_set(err, -ENOTSUP, "JDK %u.%u.%u: %s is not in the JVM's tables", vm->major,
				vm->minor, vm->security, pk.missing);
		goto cleanup;
	}
	if (vm->cp_source_file == HS_NO_FIELD && vm->ik_source_file == HS_NO_FIELD) {
		rc = errmsg_set(err, -ENOTSUP, "JDK %u: no source file index in its tables",
				vm->major);
		goto cleanup;
	}
	/* the walker reads a block + blob header of HS_HDR bytes at once */
	max_off = b->cb_name;
	if (b->cb_size > max_off) max_off = b->cb_size;
	if (b->cb_frame_complete > max_off) max_off = b->cb_frame_complete;
	if (b->cb_frame_size > max_off) max_off = b->cb_frame_size;
	if (b->cb_code_begin > max_off) max_off = b->cb_code_begin;
	if (b->nm_compile_id > max_off) max_off = b->nm_compile_id;
	if (b->nm_orig_pc_offset > max_off) max_off = b->nm_orig_pc_offset;
	if (b->nm_deopt_handler > max_off) max_off = b->nm_deopt_handler;
	if (b->nm_deopt_mh_handler > max_off) max_off = b->nm_deopt_mh_handler;
	if (b->hb_size + max_off + 8 > HS_HDR || b->hb_used >= HS_HDR || b->hb_size < 8 ||
	    b->hb_size > 64 || b->cb_name + 8 > HS_HDR_MIN - b->hb_size ||
	    b->cb_size + 4 > HS_HDR_MIN - b->hb_size) {
		rc = errmsg_set(err, -EINVAL, "code blob layout beyond %u bytes (HeapBlock %u, "
				"offsets up to %u)", HS_HDR, b->hb_size, max_off);
		goto cleanup;
	}
	if (b->cm_size < 16 || vm->cp_size < 16 || vm->pc_size < 8 ||
	    vm->pc_pc_offset + 4 > vm->pc_size || vm->pc_scope + 4 > vm->pc_size ||
	    b->if_method < HS_SLOT_LO || b->if_method > 0 || b->if_sender_sp < HS_SLOT_LO ||
	    b->if_sender_sp > 0 || b->if_bcp < HS_SLOT_LO) {
		rc = errmsg_set(err, -EINVAL, "vmStructs/vmTypes: sizes or frame slots out of range");
		goto cleanup;
	}
	rc = 0;
cleanup:
	tables_release(&t);
	if (rc)
		hotspot_vm_release(vm);
	return rc;
}

void hotspot_vm_release(struct hotspot_vm *vm)
{
	if (!vm)
		return;
	xfree(vm->stubs);
	vm->stubs = NULL;
	vm->nstubs = 0;
}

/* ---- the code cache */

static int rd64(struct procmem *m, uint64_t addr, __u64 *out)
{
	uint64_t v;
	int rc = procmem_u64(m, addr, &v);

	if (rc == 0)
		*out = v;
	return rc;
}

static int stub_cmp(const void *a, const void *b)
{
	const struct hotspot_stub *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int hotspot_vm_code_cache(struct procmem *m, struct hotspot_vm *vm, struct errmsg *err)
{
	struct hs_proc *b = &vm->bpf;
	uint64_t ga = 0, data = 0, lo = 0, hi = 0, q;
	uint32_t len = 0, i, limit = 0;
	int32_t log2;

	if (procmem_u64(m, vm->heaps_addr, &ga) < 0 || procmem_u64(m, vm->low_bound_addr, &lo) < 0 ||
	    procmem_u64(m, vm->high_bound_addr, &hi) < 0)
		return errmsg_set(err, -EFAULT, "cannot read CodeCache");
	if (!ga || !lo || !hi)
		return errmsg_set(err, -EAGAIN, "the code cache is not set up yet");
	if (procmem_u32(m, ga + vm->ga_len, &len) < 0 || procmem_u64(m, ga + vm->ga_data, &data) < 0)
		return errmsg_set(err, -EFAULT, "cannot read CodeCache::_heaps");
	if (len == 0 || !data)
		return errmsg_set(err, -EAGAIN, "the code cache has no heaps yet");
	if (len > HS_MAX_HEAPS)
		return errmsg_set(err, -EINVAL, "%u code heaps (at most %d are walked)", len,
				  HS_MAX_HEAPS);
	if (lo >= hi || hi - lo > (1ULL << 32))
		return errmsg_set(err, -EINVAL, "code cache bounds 0x%llx - 0x%llx make no sense",
				  (unsigned long long)lo, (unsigned long long)hi);
	for (i = 0; i < len; i++) {
		struct hs_heap *h = &b->heaps[i];
		uint64_t heap = 0;

		if (procmem_u64(m, data + 8ULL * i, &heap) < 0 || !heap ||
		    rd64(m, heap + vm->heap_memory + vm->vs_low_boundary, &h->lo) < 0 ||
		    rd64(m, heap + vm->heap_memory + vm->vs_high_boundary, &h->hi) < 0 ||
		    rd64(m, heap + vm->heap_segmap + vm->vs_low, &h->segmap) < 0 ||
		    procmem_u32(m, heap + vm->heap_log2, (uint32_t *)&log2) < 0)
			return errmsg_set(err, -EFAULT, "cannot read code heap %u", i);
		if (h->lo >= h->hi || h->lo < lo || h->hi > hi || !h->segmap || log2 < 4 || log2 > 20)
			return errmsg_set(err, -EINVAL, "code heap %u (0x%llx - 0x%llx, segment 2^%d) "
					  "makes no sense", i, (unsigned long long)h->lo,
					  (unsigned long long)h->hi, log2);
		h->log2_seg = (uint32_t)log2;
	}
	b->nheaps = len;
	b->cc_lo = lo;
	b->cc_hi = hi;
	if (vm->interp_code_addr && vm->sq_buffer != HS_NO_FIELD && vm->sq_limit != HS_NO_FIELD &&
	    procmem_u64(m, vm->interp_code_addr, &q) == 0 && q &&
	    rd64(m, q + vm->sq_buffer, &b->interp_lo) == 0 &&
	    procmem_u32(m, q + vm->sq_limit, &limit) == 0 && b->interp_lo >= lo &&
	    b->interp_lo < hi && limit < (64u << 20))
		b->interp_hi = b->interp_lo + limit;
	else
		b->interp_lo = b->interp_hi = 0;
	if (vm->stubs_resolved < vm->nstubs) {
		size_t k;

		/* the variables hold the entry points (0 until generated) */
		vm->stubs_resolved = 0;
		for (k = 0; k < vm->nstubs; k++) {
			uint64_t entry = 0;

			if (procmem_u64(m, vm->stubs[k].var, &entry) < 0 || entry < lo || entry >= hi)
				entry = 0;
			vm->stubs[k].addr = entry;
			vm->stubs_resolved += entry != 0;
		}
		qsort(vm->stubs, vm->nstubs, sizeof(*vm->stubs), stub_cmp);
	}
	return 0;
}

const char *hotspot_vm_stub_name(const struct hotspot_vm *vm, uint64_t addr, uint64_t max_dist)
{
	size_t lo = 0, hi = vm->nstubs;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (vm->stubs[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (!vm->nstubs || !vm->stubs[lo].addr || vm->stubs[lo].addr > addr ||
	    addr - vm->stubs[lo].addr > max_dist)
		return NULL;
	return vm->stubs[lo].name;
}

int hotspot_vm_java_command(struct procmem *m, const struct hotspot_vm *vm, char *out,
			    size_t outlen)
{
	uint64_t p = 0;
	char buf[512];
	size_t n;
	int rc;

	if (!vm->java_command_addr || outlen == 0)
		return -ENOENT;
	if (procmem_u64(m, vm->java_command_addr, &p) < 0)
		return -EFAULT;
	if (!p)
		return -ENOENT;
	rc = read_cstr(m, p, buf, sizeof(buf));
	if (rc == -EFAULT)
		return rc;
	n = strcspn(buf, " \t");
	if (n == 0)
		return -ENOENT;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, buf, n);
	out[n] = '\0';
	return 0;
}
