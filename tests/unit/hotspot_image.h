/* hotspot_image.h: a made-up HotSpot JVM in memory, for the unit test (test_hotspot.c) and the
 * fuzz target (tests/fuzz/fuzz_hotspot.c). It lays out, at fixed addresses, what the walker and
 * the symbolizer read from a real JVM, in the dialect of one JDK:
 *   - the exported tables (gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMIntConstants) with the
 *     names and types that JDK uses: JDK 11 (GenericGrowableArray, Symbol::_length_and_refcount,
 *     the source file index in InstanceKlass), JDK 17, JDK 21 (no JDK_Version, ConstMethod's
 *     flags as _flags._flags u4, ConstMethodFlags constants, UNSIGNED5 without zero bytes);
 *     the offsets differ per dialect so that nothing can pass by assuming JDK 17's;
 *   - a code heap with its segment map: the interpreter, a StubRoutines blob holding the call
 *     stub, an nmethod `Demo.caller` into which `Demo.inlined` is inlined, an nmethod
 *     `Demo.leaf`; methods, constant pool, class, symbols, line tables, PcDescs and scopes;
 *   - a thread's stack: leaf (compiled) <- caller (compiled, inlined frame at the call) <-
 *     main (interpreted, bci 5) <- the call stub <- a native return address;
 *   - the Java threads (JDK 11 and 17; JDK 21's field info streams are not read): the JVM's
 *     flags, the thread list with three JavaThreads (tids HSIMG_TID + 0..2): one whose
 *     java.lang.Thread has a LATIN1 name, one of a Thread subclass with a UTF-16 name, one
 *     without a java.lang.Thread; the Thread, String and byte[] classes with their field info.
 *     JDK 17 uses compressed oops and class pointers, JDK 11 neither.
 * Everything is plain data in heap buffers; hsimg.img is a struct procmem_image over them. */
#ifndef SCORCH_TESTS_HOTSPOT_IMAGE_H
#define SCORCH_TESTS_HOTSPOT_IMAGE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/alloc.h"
#include "runtime/hotspot/hotspot_vm.h"
#include "runtime/procmem.h"

enum hsimg_dialect { HSIMG_JDK11 = 0, HSIMG_JDK17, HSIMG_JDK21, HSIMG__COUNT };

#define HSIMG_TAB   0x7f0000000000ULL /* tables, names, statics ("libjvm's data") */
#define HSIMG_META  0x7f0000100000ULL /* methods, constant pool, class, symbols */
#define HSIMG_CODE  0x7f0000200000ULL /* the code heap */
#define HSIMG_SEGM  0x7f0000300000ULL /* its segment map */
#define HSIMG_STACK 0x7ffe00000000ULL /* a thread's stack (lowest address) */
#define HSIMG_TAB_LEN   (64u << 10)
#define HSIMG_META_LEN  (64u << 10)
#define HSIMG_CODE_LEN  (64u << 10)
#define HSIMG_SEGM_LEN  (HSIMG_CODE_LEN >> 7)
#define HSIMG_STACK_LEN (16u << 10)
#define HSIMG_NATIVE_RA 0x400123ULL   /* where the call stub returns to (libjvm) */

/* The layout of one dialect: offsets in its C++ objects. */
struct hsimg_layout {
	unsigned major, minor, security;
	uint32_t cb_name, cb_size, cb_fc, cb_fs, cb_code_begin, cb_sizeof;
	uint32_t cm_method, cm_scopes_begin, cm_deopt, cm_deopt_mh, cm_sizeof;
	uint32_t nm_compile_id, nm_orig_pc, nm_metadata, nm_scopes_pcs, nm_deps, nm_sizeof;
	uint32_t m_const, m_sizeof;
	uint32_t k_constants, k_name, k_src, k_sizeof, klass_sizeof;
	uint32_t cst_constants, cst_flags, cst_code_size, cst_name, cst_sig, cst_sizeof;
	uint32_t cp_holder, cp_length, cp_src, cp_sizeof;
	uint32_t sym_len, sym_body;
	uint32_t u5x;
};

static const struct hsimg_layout hsimg_layouts[HSIMG__COUNT] = {
	/* JDK 11: smaller CodeBlob, shifted nmethod, source index in InstanceKlass */
	[HSIMG_JDK11] = { 11, 0, 22, 88, 8, 16, 24, 32, 96, 104, 112, 120, 128, 184,
			  280, 276, 240, 248, 252, 336, 8, 96, 216, 24, 198, 448, 200, 8, 30, 32, 34,
			  36, 48, 24, 56, 0xffffffffu, 64, 0, 6, 0 },
	/* JDK 17: the offsets of Debian's 17.0.21 */
	[HSIMG_JDK17] = { 17, 0, 21, 96, 12, 20, 28, 32, 104, 112, 120, 128, 136, 192,
			  304, 300, 260, 268, 272, 352, 8, 88, 232, 24, 0xffffffffu, 464, 208, 8, 28,
			  32, 34, 36, 48, 24, 60, 54, 72, 4, 6, 0 },
	/* JDK 21: some fields moved, u4 flags, UNSIGNED5 excluding zero */
	[HSIMG_JDK21] = { 21, 0, 5, 104, 12, 20, 28, 40, 112, 120, 128, 136, 144, 200,
			  312, 308, 264, 272, 276, 360, 16, 96, 240, 32, 0xffffffffu, 472, 216, 8, 24,
			  32, 34, 36, 56, 24, 64, 58, 80, 4, 6, 1 },
};

struct hsimg {
	enum hsimg_dialect d;
	const struct hsimg_layout *L;
	uint8_t *tab, *meta, *code, *segm, *stack;
	size_t tab_used, meta_used;
	struct procmem_region regions[5];
	struct procmem_image img;
	struct hotspot_file file;
	/* what was built */
	uint64_t m_main, m_caller, m_inlined, m_leaf;  /* Method* */
	uint64_t cm_main;                               /* ConstMethod* of main */
	uint64_t nm_caller, nm_leaf, stubs, interp;     /* blobs (CodeBlob*) */
	uint64_t caller_ret;    /* the return address in caller's code (the call to leaf) */
	uint64_t leaf_body, leaf_epilogue, leaf_prologue; /* pcs in leaf's code */
	uint64_t deopt;         /* caller's deoptimization handler */
	uint64_t pc, sp, bp;    /* the thread's registers: leaf's frame */
	uint64_t sym_java_command;
	/* statics of the tables the test rewrites */
	uint64_t heaps_var, low_var, high_var;
	uint64_t stride_var;
	uint64_t struct_entries;  /* address of the first vmStructs entry */
	/* the Java threads */
	uint64_t jt[3], os[3];    /* JavaThread*, OSThread* */
	uint64_t thread_obj[2];   /* the java.lang.Thread objects of jt[0], jt[1] */
	uint64_t name_bytes[2];   /* their names' byte[] */
	uint64_t string_klass, byte_klass;
};

#define HSIMG_TID 1001
#define HSIMG_NAME0 "worker-with-a-very-long-name-alpha"
#define HSIMG_NAME1 "renamed-\xc3\xa9\xe4\xb8\xad-\xf0\x9f\x98\x80-beta" /* UTF-16 in the JVM */

/* ---- little helpers */

static inline void hsimg_put64(uint8_t *base, uint64_t base_addr, uint64_t addr, uint64_t v)
{
	memcpy(base + (addr - base_addr), &v, 8);
}

static inline void hsimg_put32(uint8_t *base, uint64_t base_addr, uint64_t addr, uint32_t v)
{
	memcpy(base + (addr - base_addr), &v, 4);
}

static inline void hsimg_put16(uint8_t *base, uint64_t base_addr, uint64_t addr, uint16_t v)
{
	memcpy(base + (addr - base_addr), &v, 2);
}

static inline uint64_t hsimg_tab_alloc(struct hsimg *im, size_t n)
{
	uint64_t a = HSIMG_TAB + ((im->tab_used + 7) & ~7ULL);

	im->tab_used = (size_t)(a - HSIMG_TAB) + n;
	return a;
}

static inline uint64_t hsimg_meta_alloc(struct hsimg *im, size_t n)
{
	uint64_t a = HSIMG_META + ((im->meta_used + 7) & ~7ULL);

	im->meta_used = (size_t)(a - HSIMG_META) + n;
	return a;
}

static inline uint64_t hsimg_str(struct hsimg *im, const char *s)
{
	uint64_t a = hsimg_tab_alloc(im, strlen(s) + 1);

	memcpy(im->tab + (a - HSIMG_TAB), s, strlen(s) + 1);
	return a;
}

#define T64(a, v) hsimg_put64(im->tab, HSIMG_TAB, (a), (v))
#define M64(a, v) hsimg_put64(im->meta, HSIMG_META, (a), (v))
#define M32(a, v) hsimg_put32(im->meta, HSIMG_META, (a), (v))
#define M16(a, v) hsimg_put16(im->meta, HSIMG_META, (a), (v))
#define C64(a, v) hsimg_put64(im->code, HSIMG_CODE, (a), (v))
#define C32(a, v) hsimg_put32(im->code, HSIMG_CODE, (a), (v))
#define S64(a, v) hsimg_put64(im->stack, HSIMG_STACK, (a), (v))

/* UNSIGNED5 (x = 0: JDK <= 18; x = 1: JDK 19+), appended at buf[*n]. */
static inline void hsimg_u5(uint8_t *buf, size_t *n, uint32_t v, uint32_t x)
{
	uint32_t L = 192 - x, i;

	for (i = 0; i < 4 && v >= L; i++) {
		v -= L;
		buf[(*n)++] = (uint8_t)(x + L + (v % 64));
		v /= 64;
	}
	buf[(*n)++] = (uint8_t)(x + v);
}

static inline uint32_t hsimg_sign(int32_t v)
{
	return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}

/* ---- the tables */

struct hsimg_tables {
	struct hsimg *im;
	uint64_t s_arr, t_arr, i_arr;
	size_t ns, nt, ni;
};

static inline void hsimg_field(struct hsimg_tables *t, const char *type, const char *field,
			       const char *typestr, int is_static, uint64_t off_or_addr)
{
	struct hsimg *im = t->im;
	uint64_t e = t->s_arr + 48 * t->ns++;

	T64(e + 0, hsimg_str(im, type));
	T64(e + 8, hsimg_str(im, field));
	T64(e + 16, typestr ? hsimg_str(im, typestr) : 0);
	hsimg_put32(im->tab, HSIMG_TAB, e + 24, (uint32_t)is_static);
	T64(e + 32, is_static ? 0 : off_or_addr);
	T64(e + 40, is_static ? off_or_addr : 0);
}

static inline void hsimg_type(struct hsimg_tables *t, const char *type, uint64_t size)
{
	struct hsimg *im = t->im;
	uint64_t e = t->t_arr + 40 * t->nt++;

	T64(e + 0, hsimg_str(im, type));
	T64(e + 32, size);
}

static inline void hsimg_const(struct hsimg_tables *t, const char *name, int32_t v)
{
	struct hsimg *im = t->im;
	uint64_t e = t->i_arr + 16 * t->ni++;

	T64(e + 0, hsimg_str(im, name));
	hsimg_put32(im->tab, HSIMG_TAB, e + 8, (uint32_t)v);
}

/* A code blob: block header + blob header, its segments marked in the map. */
static inline uint64_t hsimg_blob(struct hsimg *im, uint32_t seg, uint32_t nsegs,
				  uint64_t name, int32_t frame_complete, uint32_t frame_words,
				  uint32_t code_off)
{
	const struct hsimg_layout *L = im->L;
	uint64_t block = HSIMG_CODE + ((uint64_t)seg << 7), blob = block + 16;
	uint32_t i, v = 0;

	C64(block, nsegs);
	im->code[block - HSIMG_CODE + 8] = 1; /* used */
	for (i = 0; i < nsegs; i++) {
		im->segm[seg + i] = (uint8_t)v;
		v = v + 1 == 0xff ? 1 : v + 1;
	}
	C64(blob + L->cb_name, name);
	C32(blob + L->cb_size, nsegs * 128 - 16);
	C32(blob + L->cb_fc, (uint32_t)frame_complete);
	C32(blob + L->cb_fs, frame_words);
	C64(blob + L->cb_code_begin, blob + code_off);
	return blob;
}

static inline uint64_t hsimg_symbol(struct hsimg *im, const char *s)
{
	const struct hsimg_layout *L = im->L;
	size_t n = strlen(s);
	uint64_t a = hsimg_meta_alloc(im, L->sym_body + n + 1);

	if (im->d == HSIMG_JDK11)
		M32(a + L->sym_len, (uint32_t)n << 16 | 1); /* length in the high half, refcount 1 */
	else
		M16(a + L->sym_len, (uint16_t)n);
	memcpy(im->meta + (a - HSIMG_META) + L->sym_body, s, n);
	return a;
}

/* A method with a line table of pairs (bci, line). */
static inline uint64_t hsimg_method(struct hsimg *im, uint64_t cp, uint16_t name_idx,
				    uint16_t sig_idx, const uint32_t (*lines)[2], size_t nlines,
				    uint64_t *cm_out)
{
	const struct hsimg_layout *L = im->L;
	uint16_t code_size = 24;
	uint64_t cm = hsimg_meta_alloc(im, L->cst_sizeof + code_size + 64), m;
	uint8_t *lt = im->meta + (cm - HSIMG_META) + L->cst_sizeof + code_size;
	size_t n = 0, i;
	uint32_t bci = 0, line = 0;

	M64(cm + L->cst_constants, cp);
	if (im->d == HSIMG_JDK21)
		M32(cm + L->cst_flags, 1);
	else
		M16(cm + L->cst_flags, 1);
	M16(cm + L->cst_code_size, code_size);
	M16(cm + L->cst_name, name_idx);
	M16(cm + L->cst_sig, sig_idx);
	memset(im->meta + (cm - HSIMG_META) + L->cst_sizeof, 0xb1, code_size);
	for (i = 0; i < nlines; i++) {
		int32_t db = (int32_t)(lines[i][0] - bci), dl = (int32_t)(lines[i][1] - line);

		if (db >= 0 && db < 32 && dl >= 0 && dl < 8 && (db || dl)) {
			lt[n++] = (uint8_t)(db << 3 | dl);
		} else {
			lt[n++] = 0xff;
			hsimg_u5(lt, &n, hsimg_sign(db), L->u5x);
			hsimg_u5(lt, &n, hsimg_sign(dl), L->u5x);
		}
		bci = lines[i][0];
		line = lines[i][1];
	}
	lt[n++] = 0;
	m = hsimg_meta_alloc(im, L->m_sizeof);
	M64(m + L->m_const, cm);
	if (cm_out)
		*cm_out = cm;
	return m;
}

/* An object header at a (mark, then the class: narrow when compressed). */
static inline void hsimg_header(struct hsimg *im, uint64_t a, uint64_t klass, int compressed)
{
	hsimg_put64(im->meta, HSIMG_META, a, 1);
	if (compressed)
		hsimg_put32(im->meta, HSIMG_META, a + 8, (uint32_t)(klass - HSIMG_META));
	else
		hsimg_put64(im->meta, HSIMG_META, a + 8, klass);
}

/* A reference to obj stored at a. */
static inline void hsimg_ref(struct hsimg *im, uint64_t a, uint64_t obj, int compressed)
{
	if (compressed)
		hsimg_put32(im->meta, HSIMG_META, a, obj ? (uint32_t)((obj - HSIMG_META) >> 3) : 0);
	else
		hsimg_put64(im->meta, HSIMG_META, a, obj);
}

/* Field info of a class: n fields of (access, name index, signature index, offset). */
static inline uint64_t hsimg_fields(struct hsimg *im, const uint16_t (*f)[4], size_t n)
{
	uint64_t a = hsimg_meta_alloc(im, 8 + n * 12);
	size_t i;

	hsimg_put32(im->meta, HSIMG_META, a, (uint32_t)(n * 6));
	for (i = 0; i < n; i++) {
		uint64_t e = a + 4 + i * 12;
		uint32_t packed = ((uint32_t)f[i][3] << 2) | 1;

		hsimg_put16(im->meta, HSIMG_META, e, f[i][0]);
		hsimg_put16(im->meta, HSIMG_META, e + 2, f[i][1]);
		hsimg_put16(im->meta, HSIMG_META, e + 4, f[i][2]);
		hsimg_put16(im->meta, HSIMG_META, e + 8, (uint16_t)packed);
		hsimg_put16(im->meta, HSIMG_META, e + 10, (uint16_t)(packed >> 16));
	}
	return a;
}

/* The Java threads' world (see the top of the file). */
static inline void hsimg_threads(struct hsimg *im, struct hsimg_tables *t)
{
	const struct hsimg_layout *L = im->L;
	int d = im->d, c = d == HSIMG_JDK17; /* compressed oops and class pointers */
	uint32_t ref = c ? 4 : 8, hdr = c ? 12 : 16, arr_hdr = c ? 16 : 24;
	uint64_t v_list = hsimg_tab_alloc(im, 8), v_tk = hsimg_tab_alloc(im, 8);
	uint64_t v_sk = hsimg_tab_alloc(im, 8), v_ob = hsimg_tab_alloc(im, 8);
	uint64_t v_os = hsimg_tab_alloc(im, 8), v_kb = hsimg_tab_alloc(im, 8);
	uint64_t v_ks = hsimg_tab_alloc(im, 8), v_flags = hsimg_tab_alloc(im, 8);
	uint64_t v_nflags = hsimg_tab_alloc(im, 8), flags = hsimg_tab_alloc(im, 3 * 24);
	uint64_t vals = hsimg_tab_alloc(im, 8), cp, tk, sub, sk, bk, list, arr, str[2];
	static const char *const flag_names[3] = { "UseSerialGC", "UseCompressedOops",
						   "UseCompressedClassPointers" };
	static const char *const cp_syms[] = { NULL, "name", "Ljava/lang/String;", "value", "[B",
					       "coder", "B", "tid", "J", "COMPACT_STRINGS", "Z" };
	const char *klasses = d == HSIMG_JDK11 ? "SystemDictionary" : "vmClasses";
	const char *tk_name = d == HSIMG_JDK11 ?
		"_well_known_klasses[SystemDictionary::Thread_klass_knum]" :
		"_klasses[static_cast<int>(vmClassID::Thread_klass_knum)]";
	const char *sk_name = d == HSIMG_JDK11 ?
		"_well_known_klasses[SystemDictionary::String_klass_knum]" :
		"_klasses[static_cast<int>(vmClassID::String_klass_knum)]";
	const char *narrow = d == HSIMG_JDK11 ? "Universe" : "CompressedOops";
	const char *narrowk = d == HSIMG_JDK11 ? "Universe" : "CompressedKlassPointers";
	/* UTF-16 of HSIMG_NAME1: renamed-, e acute, a CJK character, -, a surrogate pair, -beta */
	static const uint16_t u16[] = { 'r', 'e', 'n', 'a', 'm', 'e', 'd', '-', 0xe9, 0x4e2d, '-',
					0xd83d, 0xde00, '-', 'b', 'e', 't', 'a' };
	uint16_t tf[2][4], sf[3][4];
	size_t i;

	/* the tables */
	hsimg_field(t, "ThreadsSMRSupport", "_java_thread_list", "ThreadsList*", 1, v_list);
	hsimg_field(t, "ThreadsList", "_length", "const uint", 0, 4);
	hsimg_field(t, "ThreadsList", "_threads", "JavaThread *const *const", 0, 16);
	hsimg_field(t, d == HSIMG_JDK11 ? "Thread" : "JavaThread", "_osthread", "OSThread*", 0, 560);
	hsimg_field(t, "OopHandle", "_obj", "oop*", 0, 0);
	hsimg_field(t, "OSThread", "_thread_id", "OSThread::thread_id_t", 0, 208);
	hsimg_field(t, klasses, tk_name, "InstanceKlass*", 1, v_tk);
	hsimg_field(t, klasses, sk_name, "InstanceKlass*", 1, v_sk);
	hsimg_field(t, narrow, "_narrow_oop._base", "address", 1, v_ob);
	hsimg_field(t, narrow, "_narrow_oop._shift", "int", 1, v_os);
	hsimg_field(t, narrowk, "_narrow_klass._base", "address", 1, v_kb);
	hsimg_field(t, narrowk, "_narrow_klass._shift", "int", 1, v_ks);
	hsimg_field(t, "JVMFlag", "flags", "JVMFlag*", 1, v_flags);
	hsimg_field(t, "JVMFlag", "numFlags", "size_t", 1, v_nflags);
	hsimg_field(t, "JVMFlag", "_addr", NULL, 0, 0);
	hsimg_field(t, "JVMFlag", "_name", "const char*", 0, 8);
	hsimg_field(t, "oopDesc", "_metadata._klass", "Klass*", 0, 8);
	hsimg_field(t, "Klass", "_super", "Klass*", 0, 120);
	hsimg_field(t, "Klass", "_layout_helper", "jint", 0, 8);
	hsimg_field(t, "InstanceKlass", "_fields", "Array<u2>*", 0, 424);
	hsimg_field(t, "InstanceKlass", "_java_fields_count", "u2", 0, 310);
	hsimg_field(t, "Array<u2>", "_data", NULL, 0, 4);
	hsimg_type(t, "JavaThread", 1384);
	hsimg_type(t, "Thread", 648);
	hsimg_type(t, "ThreadsList", 32);
	hsimg_type(t, "OSThread", 216);
	hsimg_type(t, "OopHandle", 8);
	hsimg_type(t, "JVMFlag", 24);
	hsimg_type(t, "oopDesc", 16);
	hsimg_type(t, "Array<u2>", 8);
	hsimg_const(t, "FieldInfo::access_flags_offset", 0);
	hsimg_const(t, "FieldInfo::name_index_offset", 1);
	hsimg_const(t, "FieldInfo::signature_index_offset", 2);
	hsimg_const(t, "FieldInfo::low_packed_offset", 4);
	hsimg_const(t, "FieldInfo::high_packed_offset", 5);
	hsimg_const(t, "FieldInfo::field_slots", 6);
	hsimg_const(t, "FIELDINFO_TAG_SIZE", 2);
	hsimg_const(t, "FIELDINFO_TAG_OFFSET", 1);

	/* the flags (names in the tables' region, values after them) */
	T64(v_flags, flags);
	T64(v_nflags, 3);
	for (i = 0; i < 3; i++) {
		T64(flags + 24 * i, vals + i);
		T64(flags + 24 * i + 8, hsimg_str(im, flag_names[i]));
		im->tab[vals + i - HSIMG_TAB] = (uint8_t)(i == 0 ? 1 : c);
	}
	T64(v_ob, HSIMG_META);
	hsimg_put32(im->tab, HSIMG_TAB, v_os, 3);
	T64(v_kb, HSIMG_META);
	hsimg_put32(im->tab, HSIMG_TAB, v_ks, 0);

	/* the classes: their pool, Thread { long tid; String name }, a subclass, String
	 * { static boolean COMPACT_STRINGS; byte[] value; byte coder }, byte[] */
	cp = hsimg_meta_alloc(im, L->cp_sizeof + 8 * 11);
	M32(cp + L->cp_length, 11);
	for (i = 1; i < 11; i++)
		M64(cp + L->cp_sizeof + 8 * i, hsimg_symbol(im, cp_syms[i]));
	tk = hsimg_meta_alloc(im, L->k_sizeof);
	sub = hsimg_meta_alloc(im, L->k_sizeof);
	sk = hsimg_meta_alloc(im, L->k_sizeof);
	bk = hsimg_meta_alloc(im, L->klass_sizeof);
	T64(v_tk, tk);
	T64(v_sk, sk);
	tf[0][0] = 0x0002; tf[0][1] = 7; tf[0][2] = 8; tf[0][3] = (uint16_t)(hdr + ref);
	tf[1][0] = 0x0042; tf[1][1] = 1; tf[1][2] = 2; tf[1][3] = (uint16_t)hdr;
	M64(tk + L->k_constants, cp);
	M64(tk + 424, hsimg_fields(im, tf, 2));
	M16(tk + 310, 2);
	M32(tk + 8, 40);
	M64(sub + 120, tk);
	M32(sub + 8, 48);
	sf[0][0] = 0x0018; sf[0][1] = 9; sf[0][2] = 10; sf[0][3] = 112;
	sf[1][0] = 0x0012; sf[1][1] = 3; sf[1][2] = 4; sf[1][3] = (uint16_t)hdr;
	sf[2][0] = 0x0012; sf[2][1] = 5; sf[2][2] = 6; sf[2][3] = (uint16_t)(hdr + ref);
	M64(sk + L->k_constants, cp);
	M64(sk + 424, hsimg_fields(im, sf, 3));
	M16(sk + 310, 3);
	M32(sk + 8, 32);
	M32(bk + 8, (3u << 30) | (arr_hdr << 16) | (8u << 8));
	im->string_klass = sk;
	im->byte_klass = bk;

	/* the names: String objects and their byte[] */
	for (i = 0; i < 2; i++) {
		size_t len = i == 0 ? strlen(HSIMG_NAME0) : sizeof(u16);

		arr = hsimg_meta_alloc(im, arr_hdr + len);
		hsimg_header(im, arr, bk, c);
		M32(arr + hdr, (uint32_t)len);
		memcpy(im->meta + (arr - HSIMG_META) + arr_hdr, i == 0 ? (const void *)HSIMG_NAME0 :
		       (const void *)u16, len);
		im->name_bytes[i] = arr;
		str[i] = hsimg_meta_alloc(im, 32);
		hsimg_header(im, str[i], sk, c);
		hsimg_ref(im, str[i] + hdr, arr, c);
		im->meta[str[i] + hdr + ref - HSIMG_META] = (uint8_t)i; /* the coder */
	}
	/* the threads: two with a java.lang.Thread (the second of a subclass), one without */
	list = hsimg_meta_alloc(im, 32 + 3 * 8);
	T64(v_list, list);
	M32(list + 4, 3);
	M64(list + 16, list + 32);
	for (i = 0; i < 3; i++) {
		im->jt[i] = hsimg_meta_alloc(im, 1384);
		im->os[i] = hsimg_meta_alloc(im, 216);
		M64(list + 32 + 8 * i, im->jt[i]);
		M64(im->jt[i] + 560, im->os[i]);
		M32(im->os[i] + 208, (uint32_t)(HSIMG_TID + i));
		if (i == 2)
			continue;
		im->thread_obj[i] = hsimg_meta_alloc(im, 48);
		hsimg_header(im, im->thread_obj[i], i == 0 ? tk : sub, c);
		hsimg_ref(im, im->thread_obj[i] + hdr, str[i], c);
		if (d == HSIMG_JDK11) {
			M64(im->jt[i] + 648, im->thread_obj[i]);
		} else {
			uint64_t slot = hsimg_meta_alloc(im, 8);

			M64(slot, im->thread_obj[i]);
			M64(im->jt[i] + 648, slot);
		}
	}
}

static inline void hsimg_free(struct hsimg *im)
{
	xfree(im->tab);
	xfree(im->meta);
	xfree(im->code);
	xfree(im->segm);
	xfree(im->stack);
	memset(im, 0, sizeof(*im));
}

static inline void hsimg_build(struct hsimg *im, enum hsimg_dialect d)
{
	const struct hsimg_layout *L = &hsimg_layouts[d];
	struct hsimg_tables t = { im, 0, 0, 0, 0, 0, 0 };
	uint64_t cp, klass, s_demo, s_file, s_leaf, s_caller, s_inl, s_main, s_sigj, s_sigv;
	uint64_t heaps, ga_data, heap, sq, v_heaps, v_low, v_high, v_interp, v_jc, v_csr, v_dsin;
	uint64_t v_cs_entry, jv, name_interp, name_stubs, name_nm, metadata, scopes, pcs, blob;
	uint64_t sp, fp_main, fp_cs, code;
	uint8_t sd[64];
	size_t n, off_inl, off_caller, off_leaf;
	static const uint32_t main_lines[][2] = { { 0, 30 }, { 5, 31 }, { 9, 32 } };
	static const uint32_t caller_lines[][2] = { { 0, 20 }, { 7, 22 }, { 12, 23 } };
	static const uint32_t inl_lines[][2] = { { 0, 1000 }, { 3, 1001 } };
	static const uint32_t leaf_lines[][2] = { { 0, 10 }, { 4, 11 } };
	int i;

	memset(im, 0, sizeof(*im));
	im->d = d;
	im->L = L;
	im->tab = xcalloc(1, HSIMG_TAB_LEN);
	im->meta = xcalloc(1, HSIMG_META_LEN);
	im->code = xcalloc(1, HSIMG_CODE_LEN);
	im->segm = xcalloc(1, HSIMG_SEGM_LEN);
	im->stack = xcalloc(1, HSIMG_STACK_LEN);
	memset(im->segm, 0xff, HSIMG_SEGM_LEN);
	im->tab_used = 0x1000; /* the exported variables live in the first page */

	/* the exported layout variables (bias 0: link-time address = address) */
	for (i = 0; i < HS_SYM__COUNT; i++)
		im->file.sym[i] = HSIMG_TAB + 8ULL * (uint64_t)i;
	snprintf(im->file.path, sizeof(im->file.path), "/jdk-%u/lib/server/libjvm.so", L->major);
	t.s_arr = hsimg_tab_alloc(im, 48 * 128);
	t.t_arr = hsimg_tab_alloc(im, 40 * 64);
	t.i_arr = hsimg_tab_alloc(im, 16 * 16);
	T64(im->file.sym[HS_SYM_STRUCTS], t.s_arr);
	T64(im->file.sym[HS_SYM_S_STRIDE], 48);
	T64(im->file.sym[HS_SYM_S_TYPE], 0);
	T64(im->file.sym[HS_SYM_S_FIELD], 8);
	T64(im->file.sym[HS_SYM_S_TYPESTR], 16);
	T64(im->file.sym[HS_SYM_S_STATIC], 24);
	T64(im->file.sym[HS_SYM_S_OFFSET], 32);
	T64(im->file.sym[HS_SYM_S_ADDRESS], 40);
	T64(im->file.sym[HS_SYM_TYPES], t.t_arr);
	T64(im->file.sym[HS_SYM_T_STRIDE], 40);
	T64(im->file.sym[HS_SYM_T_TYPE], 0);
	T64(im->file.sym[HS_SYM_T_SIZE], 32);
	T64(im->file.sym[HS_SYM_INTS], t.i_arr);
	T64(im->file.sym[HS_SYM_I_STRIDE], 16);
	T64(im->file.sym[HS_SYM_I_NAME], 0);
	T64(im->file.sym[HS_SYM_I_VALUE], 8);
	im->stride_var = im->file.sym[HS_SYM_S_STRIDE];
	im->struct_entries = t.s_arr;

	/* statics */
	v_heaps = hsimg_tab_alloc(im, 8);
	v_low = hsimg_tab_alloc(im, 8);
	v_high = hsimg_tab_alloc(im, 8);
	v_interp = hsimg_tab_alloc(im, 8);
	v_jc = hsimg_tab_alloc(im, 8);
	v_csr = hsimg_tab_alloc(im, 8);
	v_dsin = hsimg_tab_alloc(im, 8);
	v_cs_entry = hsimg_tab_alloc(im, 8);
	jv = hsimg_tab_alloc(im, 8);
	im->heaps_var = v_heaps;
	im->low_var = v_low;
	im->high_var = v_high;

	/* the vmStructs entries, with each dialect's names */
	hsimg_field(&t, "CodeBlob", "_name", "const char*", 0, L->cb_name);
	hsimg_field(&t, "CodeBlob", "_size", "int", 0, L->cb_size);
	hsimg_field(&t, "CodeBlob", "_frame_complete_offset", "int", 0, L->cb_fc);
	hsimg_field(&t, "CodeBlob", "_frame_size", "int", 0, L->cb_fs);
	hsimg_field(&t, "CodeBlob", "_code_begin", "address", 0, L->cb_code_begin);
	hsimg_field(&t, "CompiledMethod", "_method", "Method*", 0, L->cm_method);
	hsimg_field(&t, "CompiledMethod", "_scopes_data_begin", "address", 0, L->cm_scopes_begin);
	hsimg_field(&t, "CompiledMethod", "_deopt_handler_begin", "address", 0, L->cm_deopt);
	hsimg_field(&t, "CompiledMethod", "_deopt_mh_handler_begin", "address", 0, L->cm_deopt_mh);
	hsimg_field(&t, "nmethod", "_compile_id", "int", 0, L->nm_compile_id);
	hsimg_field(&t, "nmethod", "_orig_pc_offset", "int", 0, L->nm_orig_pc);
	hsimg_field(&t, "nmethod", "_metadata_offset", "int", 0, L->nm_metadata);
	hsimg_field(&t, "nmethod", "_scopes_pcs_offset", "int", 0, L->nm_scopes_pcs);
	hsimg_field(&t, "nmethod", "_dependencies_offset", "int", 0, L->nm_deps);
	hsimg_field(&t, "HeapBlock", "_header", "HeapBlock::Header", 0, 0);
	hsimg_field(&t, "HeapBlock::Header", "_length", "size_t", 0, 0);
	hsimg_field(&t, "HeapBlock::Header", "_used", "bool", 0, 8);
	hsimg_field(&t, "CodeHeap", "_memory", "VirtualSpace", 0, 8);
	hsimg_field(&t, "CodeHeap", "_segmap", "VirtualSpace", 0, 120);
	hsimg_field(&t, "CodeHeap", "_log2_segment_size", "int", 0, 256);
	hsimg_field(&t, "VirtualSpace", "_low_boundary", "char*", 0, 0);
	hsimg_field(&t, "VirtualSpace", "_high_boundary", "char*", 0, 8);
	hsimg_field(&t, "VirtualSpace", "_low", "char*", 0, 16);
	hsimg_field(&t, "CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, v_heaps);
	hsimg_field(&t, "CodeCache", "_low_bound", "address", 1, v_low);
	hsimg_field(&t, "CodeCache", "_high_bound", "address", 1, v_high);
	hsimg_field(&t, d == HSIMG_JDK11 ? "GenericGrowableArray" : "GrowableArrayBase", "_len",
		    "int", 0, 0);
	hsimg_field(&t, "GrowableArray<int>", "_data", "int*", 0, 8);
	hsimg_field(&t, "AbstractInterpreter", "_code", "StubQueue*", 1, v_interp);
	hsimg_field(&t, "StubQueue", "_stub_buffer", "address", 0, 8);
	hsimg_field(&t, "StubQueue", "_buffer_limit", "int", 0, 20);
	hsimg_field(&t, "Method", "_constMethod", "ConstMethod*", 0, L->m_const);
	hsimg_field(&t, "ConstMethod", "_constants", "ConstantPool*", 0, L->cst_constants);
	if (d == HSIMG_JDK21)
		hsimg_field(&t, "ConstMethod", "_flags._flags", "u4", 0, L->cst_flags);
	else
		hsimg_field(&t, "ConstMethod", "_flags", "u2", 0, L->cst_flags);
	hsimg_field(&t, "ConstMethod", "_code_size", "u2", 0, L->cst_code_size);
	hsimg_field(&t, "ConstMethod", "_name_index", "u2", 0, L->cst_name);
	hsimg_field(&t, "ConstMethod", "_signature_index", "u2", 0, L->cst_sig);
	hsimg_field(&t, "ConstantPool", "_pool_holder", "InstanceKlass*", 0, L->cp_holder);
	hsimg_field(&t, "ConstantPool", "_length", "int", 0, L->cp_length);
	if (L->cp_src != 0xffffffffu)
		hsimg_field(&t, "ConstantPool", "_source_file_name_index", "u2", 0, L->cp_src);
	else
		hsimg_field(&t, "InstanceKlass", "_source_file_name_index", "u2", 0, L->k_src);
	hsimg_field(&t, "InstanceKlass", "_constants", "ConstantPool*", 0, L->k_constants);
	hsimg_field(&t, "Klass", "_name", "Symbol*", 0, L->k_name);
	if (d == HSIMG_JDK11) {
		hsimg_field(&t, "Symbol", "_length_and_refcount", "unsigned int", 0, L->sym_len);
	} else {
		hsimg_field(&t, "Symbol", "_hash_and_refcount", "unsigned int", 0, 0);
		hsimg_field(&t, "Symbol", "_length", "u2", 0, L->sym_len);
	}
	hsimg_field(&t, "Symbol", "_body", NULL, 0, L->sym_body);
	hsimg_field(&t, "PcDesc", "_pc_offset", "int", 0, 0);
	hsimg_field(&t, "PcDesc", "_scope_decode_offset", "int", 0, 4);
	hsimg_field(&t, "Arguments", "_java_command", "char*", 1, v_jc);
	hsimg_field(&t, "StubRoutines", "_call_stub_return_address", "address", 1, v_csr);
	hsimg_field(&t, "StubRoutines", "_call_stub_entry", "address", 1, v_cs_entry);
	hsimg_field(&t, "StubRoutines", "_dsin", "address", 1, v_dsin);
	if (d != HSIMG_JDK21) {
		hsimg_field(&t, "JDK_Version", "_current", "JDK_Version", 1, jv);
		im->tab[jv - HSIMG_TAB] = (uint8_t)L->major;
		im->tab[jv - HSIMG_TAB + 1] = (uint8_t)L->minor;
		im->tab[jv - HSIMG_TAB + 2] = (uint8_t)L->security;
	} else {
		/* JDK 21 has no JDK_Version in its tables: Abstract_VM_Version says */
		uint64_t a = hsimg_tab_alloc(im, 16);

		hsimg_put32(im->tab, HSIMG_TAB, a, L->major);
		hsimg_put32(im->tab, HSIMG_TAB, a + 4, L->minor);
		hsimg_put32(im->tab, HSIMG_TAB, a + 8, L->security);
		hsimg_field(&t, "Abstract_VM_Version", "_vm_major_version", "int", 1, a);
		hsimg_field(&t, "Abstract_VM_Version", "_vm_minor_version", "int", 1, a + 4);
		hsimg_field(&t, "Abstract_VM_Version", "_vm_security_version", "int", 1, a + 8);
	}
	hsimg_field(&t, "JavaThread", "_threadObj", d == HSIMG_JDK11 ? "oop" : "OopHandle", 0, 648);
	/* a type we do not look at, and a field of it, must be skipped */
	hsimg_field(&t, "G1CollectedHeap", "_hrm", "HeapRegionManager", 0, 88);

	hsimg_type(&t, "CodeBlob", L->cb_sizeof);
	hsimg_type(&t, "CompiledMethod", L->cm_sizeof);
	hsimg_type(&t, "nmethod", L->nm_sizeof);
	hsimg_type(&t, "HeapBlock", 16);
	hsimg_type(&t, "HeapBlock::Header", 16);
	hsimg_type(&t, "CodeHeap", 344);
	hsimg_type(&t, "VirtualSpace", 112);
	hsimg_type(&t, "StubQueue", 48);
	hsimg_type(&t, "Method", L->m_sizeof);
	hsimg_type(&t, "ConstMethod", L->cst_sizeof);
	hsimg_type(&t, "ConstantPool", L->cp_sizeof);
	hsimg_type(&t, "InstanceKlass", L->k_sizeof);
	hsimg_type(&t, "Klass", L->klass_sizeof);
	hsimg_type(&t, "Symbol", 8);
	hsimg_type(&t, "PcDesc", 16);
	hsimg_type(&t, d == HSIMG_JDK11 ? "GenericGrowableArray" : "GrowableArrayBase", 16);
	hsimg_type(&t, "GrowableArray<int>", 24);

	hsimg_const(&t, "frame::interpreter_frame_sender_sp_offset", -1);
	hsimg_const(&t, "frame::interpreter_frame_last_sp_offset", -2);
	hsimg_const(&t, d == HSIMG_JDK21 ? "ConstMethodFlags::_misc_has_linenumber_table" :
					   "ConstMethod::_has_linenumber_table", 1);
	hsimg_const(&t, "InvocationEntryBci", -1);

	if (d != HSIMG_JDK21)
		hsimg_threads(im, &t);

	/* the command */
	T64(v_jc, hsimg_str(im, "com.example.Demo --port 8080"));

	/* class, pool, symbols, methods */
	s_demo = hsimg_symbol(im, "com/example/Demo");
	s_leaf = hsimg_symbol(im, "leaf");
	s_caller = hsimg_symbol(im, "caller");
	s_inl = hsimg_symbol(im, "inlined");
	s_main = hsimg_symbol(im, "main");
	s_sigj = hsimg_symbol(im, "(J)J");
	s_sigv = hsimg_symbol(im, "([Ljava/lang/String;)V");
	s_file = hsimg_symbol(im, "Demo.java");
	klass = hsimg_meta_alloc(im, L->k_sizeof);
	cp = hsimg_meta_alloc(im, L->cp_sizeof + 8 * 10);
	M64(klass + L->k_name, s_demo);
	M64(klass + L->k_constants, cp);
	M64(cp + L->cp_holder, klass);
	M32(cp + L->cp_length, 10);
	if (L->cp_src != 0xffffffffu)
		M16(cp + L->cp_src, 8);
	else
		M16(klass + L->k_src, 8);
	M64(cp + L->cp_sizeof + 8 * 1, s_leaf | 1); /* a tagged slot: the reader clears bit 0 */
	M64(cp + L->cp_sizeof + 8 * 2, s_sigj);
	M64(cp + L->cp_sizeof + 8 * 3, s_caller);
	M64(cp + L->cp_sizeof + 8 * 4, s_inl);
	M64(cp + L->cp_sizeof + 8 * 5, s_main);
	M64(cp + L->cp_sizeof + 8 * 6, s_sigv);
	M64(cp + L->cp_sizeof + 8 * 8, s_file);
	im->m_main = hsimg_method(im, cp, 5, 6, main_lines, 3, &im->cm_main);
	im->m_caller = hsimg_method(im, cp, 3, 2, caller_lines, 3, NULL);
	im->m_inlined = hsimg_method(im, cp, 4, 2, inl_lines, 2, NULL);
	im->m_leaf = hsimg_method(im, cp, 1, 2, leaf_lines, 2, NULL);

	/* the code heap: one heap over the whole code region, segments of 128 bytes */
	heaps = hsimg_tab_alloc(im, 16);
	ga_data = hsimg_tab_alloc(im, 8);
	heap = hsimg_tab_alloc(im, 344);
	T64(v_heaps, heaps);
	T64(v_low, HSIMG_CODE);
	T64(v_high, HSIMG_CODE + HSIMG_CODE_LEN);
	hsimg_put32(im->tab, HSIMG_TAB, heaps, 1);
	T64(heaps + 8, ga_data);
	T64(ga_data, heap);
	T64(heap + 8 + 0, HSIMG_CODE);
	T64(heap + 8 + 8, HSIMG_CODE + HSIMG_CODE_LEN);
	T64(heap + 120 + 16, HSIMG_SEGM);
	hsimg_put32(im->tab, HSIMG_TAB, heap + 256, 7);
	name_interp = hsimg_str(im, "Interpreter");
	name_stubs = hsimg_str(im, "StubRoutines (1)");
	name_nm = hsimg_str(im, "nmethod");

	/* segments 0-31: the interpreter, its code from the StubQueue */
	im->interp = hsimg_blob(im, 0, 32, name_interp, -1, 0, 112);
	sq = hsimg_tab_alloc(im, 48);
	T64(v_interp, sq);
	T64(sq + 8, im->interp + 112);
	hsimg_put32(im->tab, HSIMG_TAB, sq + 20, 3000);
	/* segments 32-47: StubRoutines, the call stub, dsin */
	im->stubs = hsimg_blob(im, 32, 16, name_stubs, -1, 0, 112);
	T64(v_cs_entry, im->stubs + 112);
	T64(v_csr, im->stubs + 112 + 0x30);
	T64(v_dsin, im->stubs + 112 + 0x400);
	/* segments 48-63: nmethod Demo.caller, frame 6 words, Demo.inlined inlined at the call */
	blob = im->nm_caller = hsimg_blob(im, 48, 16, name_nm, 16, 6, L->nm_sizeof);
	code = blob + L->nm_sizeof;
	C64(blob + L->cm_method, im->m_caller);
	C32(blob + L->nm_compile_id, 42);
	im->deopt = code + 0x300;
	C64(blob + L->cm_deopt, im->deopt);
	C64(blob + L->cm_deopt_mh, code + 0x310);
	C32(blob + L->nm_orig_pc, 16);
	metadata = code + 0x380;
	C32(blob + L->nm_metadata, (uint32_t)(metadata - blob));
	C64(metadata, im->m_caller);
	C64(metadata + 8, im->m_inlined);
	scopes = metadata + 16;
	C64(blob + L->cm_scopes_begin, scopes);
	/* scope stream: at 1, caller (outer): sender 0, method 1, bci 7 + 1; at off_inl,
	 * inlined: sender = caller's, method 2, bci 3 + 1 */
	n = 0;
	sd[n++] = (uint8_t)L->u5x; /* offset 0: serialized null */
	off_caller = n;
	hsimg_u5(sd, &n, 0, L->u5x);
	hsimg_u5(sd, &n, 1, L->u5x);
	hsimg_u5(sd, &n, 7 + 1, L->u5x);
	hsimg_u5(sd, &n, 0, L->u5x); /* locals, expressions, monitors: unused */
	hsimg_u5(sd, &n, 0, L->u5x);
	hsimg_u5(sd, &n, 0, L->u5x);
	off_inl = n;
	hsimg_u5(sd, &n, (uint32_t)off_caller, L->u5x);
	hsimg_u5(sd, &n, 2, L->u5x);
	hsimg_u5(sd, &n, 3 + 1, L->u5x);
	off_leaf = n; /* for Demo.leaf's own nmethod: itself at bci 4 */
	hsimg_u5(sd, &n, 0, L->u5x);
	hsimg_u5(sd, &n, 1, L->u5x);
	hsimg_u5(sd, &n, 4 + 1, L->u5x);
	memcpy(im->code + (scopes - HSIMG_CODE), sd, n);
	pcs = (scopes + n + 7) & ~7ULL;
	C32(blob + L->nm_scopes_pcs, (uint32_t)(pcs - blob));
	/* PcDescs: the sentinel, a pc in caller's own scope, the call to leaf (inlined), end */
	C32(pcs + 0, (uint32_t)-1);
	C32(pcs + 4, 0);
	C32(pcs + 16, 0x20);
	C32(pcs + 20, (uint32_t)off_caller);
	C32(pcs + 32, 0x48);
	C32(pcs + 36, (uint32_t)off_inl);
	C32(pcs + 48, 0x200);
	C32(pcs + 52, 0);
	C32(blob + L->nm_deps, (uint32_t)(pcs + 64 - blob));
	im->caller_ret = code + 0x48;
	/* segments 64-79: nmethod Demo.leaf, frame 4 words, complete after 8 bytes */
	blob = im->nm_leaf = hsimg_blob(im, 64, 16, name_nm, 8, 4, L->nm_sizeof);
	code = blob + L->nm_sizeof;
	C64(blob + L->cm_method, im->m_leaf);
	C32(blob + L->nm_compile_id, 43);
	C64(blob + L->cm_deopt, code + 0x300);
	C64(blob + L->cm_deopt_mh, code + 0x310);
	metadata = code + 0x380;
	C32(blob + L->nm_metadata, (uint32_t)(metadata - blob));
	C64(metadata, im->m_leaf);
	scopes = metadata + 8;
	C64(blob + L->cm_scopes_begin, scopes);
	memcpy(im->code + (scopes - HSIMG_CODE), sd, n);
	pcs = (scopes + n + 7) & ~7ULL;
	C32(blob + L->nm_scopes_pcs, (uint32_t)(pcs - blob));
	C32(pcs + 0, (uint32_t)-1);
	C32(pcs + 16, 0x60);
	C32(pcs + 20, (uint32_t)off_leaf);
	C32(blob + L->nm_deps, (uint32_t)(pcs + 32 - blob));
	/* fix the scope's method index for this nmethod: its metadata holds leaf at 1 */
	im->leaf_prologue = code + 2;
	im->leaf_body = code + 0x40;
	im->leaf_epilogue = code + 0x70; /* pop rbp; cmp rsp, [r15 + 0x340]; ja; ret */
	{
		static const uint8_t epi[] = { 0x5d, 0x49, 0x3b, 0xa7, 0x40, 0x03, 0, 0,
					       0x0f, 0x87, 0x10, 0, 0, 0, 0xc3 };

		memcpy(im->code + (im->leaf_epilogue - HSIMG_CODE), epi, sizeof(epi));
	}

	/* the stack, leaf first: leaf (32 bytes) <- caller (48 bytes) <- main (interpreted)
	 * <- the call stub <- native */
	sp = HSIMG_STACK + 0x1000;
	im->pc = im->leaf_body;
	im->sp = sp;
	im->bp = 0x1234; /* compiled code uses rbp as it likes */
	S64(sp + 24, im->caller_ret);
	S64(sp + 16, 0x5678);          /* the caller's rbp (garbage in compiled code) */
	sp += 32;                       /* caller's frame */
	fp_main = sp + 48 + 0x60;       /* main's frame pointer, above its locals */
	S64(sp + 40, im->interp + 112 + 0x500); /* return into the interpreter */
	S64(sp + 32, fp_main);          /* rbp saved by caller: main's fp */
	fp_cs = fp_main + 0x100;
	S64(fp_main - 3 * 8, im->m_main);
	S64(fp_main - 8 * 8, im->cm_main + L->cst_sizeof + 5); /* bcp: bci 5 */
	S64(fp_main - 1 * 8, fp_main + 16); /* sender sp */
	S64(fp_main, fp_cs);
	S64(fp_main + 8, im->stubs + 112 + 0x30); /* the call stub's return address */
	S64(fp_cs, 0x7ffe00003ff0ULL);  /* libjvm's rbp */
	S64(fp_cs + 8, HSIMG_NATIVE_RA);

	/* regions */
	im->regions[0] = (struct procmem_region){ HSIMG_TAB, im->tab, HSIMG_TAB_LEN };
	im->regions[1] = (struct procmem_region){ HSIMG_META, im->meta, HSIMG_META_LEN };
	im->regions[2] = (struct procmem_region){ HSIMG_CODE, im->code, HSIMG_CODE_LEN };
	im->regions[3] = (struct procmem_region){ HSIMG_SEGM, im->segm, HSIMG_SEGM_LEN };
	im->regions[4] = (struct procmem_region){ HSIMG_STACK, im->stack, HSIMG_STACK_LEN };
	im->img.regions = im->regions;
	im->img.nregions = 5;
}

#undef T64
#undef M64
#undef M32
#undef M16
#undef C64
#undef C32
#undef S64

#endif
