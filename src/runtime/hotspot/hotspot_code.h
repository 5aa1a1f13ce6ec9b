/* hotspot_code.h: turning the HotSpot walker's frame words (hotspot.h) into Java frames:
 * `java.util.HashMap.get (HashMap.java:557)`, with the methods a compiled frame inlined.
 *
 * Readers of the JVM's metadata (layouts from hotspot_vm.h, all read from process memory):
 *   Method* -> ConstMethod (name and signature indices, flags, bytecodes, line table)
 *           -> ConstantPool (the symbols; its holder class and the source file name)
 *           -> Klass::_name        "java/util/HashMap" shown as "java.util.HashMap"
 *   nmethod -> its Method*, and for a pc: the PcDesc at or after it, whose scope chain in the
 *              scopes data names (Method*, bci) of every inlined level (metadata table)
 * The line table (compressed: one byte of bci/line deltas, or 0xff and two signed UNSIGNED5
 * numbers) and the scope stream (UNSIGNED5; from JDK 19 without zero bytes) are decoded by
 * plain functions on bytes, unit-tested on their own.
 *
 * Process memory is hostile: every pointer and size read is checked (a method's class must
 * point back to its constant pool, indices inside the pool, tables bounded by HOTSPOT_*_MAX),
 * a lying object gives an error, never a crash, a hang or an unbounded allocation.
 *
 * THE CACHE (struct hotspot_cache) keeps, per (pid, address), decoded methods with the cookie
 * of the frame word (ConstMethod* >> 3), decoded compiled pcs per (nmethod, compile id, pc)
 * and named stubs, so that an address reused by another method (class unloading) or another
 * nmethod (code cache flushing) is caught and read again. Entries stay after the process exits
 * (its samples of the interval are symbolized later); hotspot_cache_forget_pid() drops them.
 * It is emptied when full (bounded memory). Strings it returns are owned by it and valid until
 * the next call that may read (hotspot_cache_frames()) or hotspot_cache_free(). */
#ifndef SCORCH_RUNTIME_HOTSPOT_CODE_H
#define SCORCH_RUNTIME_HOTSPOT_CODE_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;
struct hotspot_vm;
struct procmem;

#define HOTSPOT_SYMBOL_MAX 1024         /* bytes kept of a class, method or file name */
#define HOTSPOT_LINETABLE_MAX (64u << 10)
#define HOTSPOT_SCOPES_MAX (1u << 20)   /* bytes of an nmethod's scopes data or PcDescs */
#define HOTSPOT_MAX_INLINE 64           /* inlined levels of one compiled pc */

struct hotspot_line {
	uint32_t bci;
	uint32_t line;
};

struct hotspot_method {
	char *klass;        /* "java.util.HashMap" (hidden classes: the "+0x..." part dropped) */
	char *name;         /* "get" */
	char *qualified;    /* "java.util.HashMap.get" */
	char *system_name;  /* "java.util.HashMap.get(Ljava/lang/Object;)Ljava/lang/Object;" */
	char *file;         /* "HashMap.java", or NULL */
	struct hotspot_line *lines; /* in table order (increasing bci) */
	size_t nlines;
	uint32_t first_line; /* smallest line, 0 when none */
	uint32_t code_size;
	uint32_t cookie;     /* ConstMethod* >> 3 (low 32 bits) */
};

/* Read the Method at addr. cookie: the frame word's, or 0 to take the one in memory now.
 * 0, or a negative errno (-ESTALE: the cookie differs, another method lives there now). */
int hotspot_method_read(struct procmem *m, const struct hotspot_vm *vm, uint64_t addr,
			uint32_t cookie, struct hotspot_method *out, struct errmsg *err);
void hotspot_method_release(struct hotspot_method *hm);
/* The line of bytecode index bci (the last entry at or before it); 0 when unknown. */
uint32_t hotspot_method_line(const struct hotspot_method *hm, uint32_t bci);

/* Decoders on bytes (bounds-checked; -EINVAL on a truncated or lying stream). */
int hotspot_unsigned5(const uint8_t *buf, size_t len, size_t *pos, uint32_t x, uint32_t *out);
/* The compressed line number table at buf: pairs into out (at most max), count in *n. */
int hotspot_line_table(const uint8_t *buf, size_t len, uint32_t x, struct hotspot_line *out,
		       size_t max, size_t *n);

/* One level of a compiled pc: the method and its bytecode index (-1: unknown). */
struct hotspot_scope {
	uint64_t method;
	int32_t bci;
};

/* The scopes of pc offset pos in the nmethod at addr whose compile id is cookie, innermost
 * first: fills up to max (HOTSPOT_MAX_INLINE), count in *n. An nmethod without debug info at
 * that pc (a native wrapper) gives its own method with bci -1. 0 or negative errno (-ESTALE:
 * not that nmethod any more). */
int hotspot_nmethod_scopes(struct procmem *m, const struct hotspot_vm *vm, uint64_t addr,
			   uint32_t cookie, uint32_t pos, struct hotspot_scope *out, size_t max,
			   size_t *n, struct errmsg *err);

/* The name of a stub blob: its CodeBlob name, refined with the StubRoutines entry it is in
 * ("StubRoutines::jlong_disjoint_arraycopy", "StubRoutines::call_stub"). 0 or errno. */
int hotspot_stub_name(struct procmem *m, const struct hotspot_vm *vm, uint64_t blob, uint32_t pos,
		      char *out, size_t outlen);

/* ---- cache */
/* The Symbol in slot idx (checked against the pool's length) of the constant pool cp, into out
 * (NUL-terminated, cut at outlen - 1, control bytes replaced). 0 or a negative errno. */
int hotspot_cp_symbol(struct procmem *m, const struct hotspot_vm *vm, uint64_t cp, uint32_t idx,
		      char *out, size_t outlen);

struct hotspot_cache;

/* One symbolized Java frame (strings owned by the cache). */
struct hotspot_sym {
	const char *name;
	const char *system_name;
	const char *file;
	uint32_t line;
	uint32_t start_line;
	int inlined;   /* inlined into the next frame */
	int special;   /* a marker such as "[java: unknown method]" (name only) */
	int stub;      /* a stub of the JVM ("StubRoutines::call_stub"): machine code, name only */
};

struct hotspot_cache *hotspot_cache_new(size_t max_entries);
void hotspot_cache_free(struct hotspot_cache *hc); /* NULL ok */

/* The frames of one frame-word pair (w0: FW_TAG_HS_INTERP / _JIT / _STUB, w1: FW_TAG_HS_INFO)
 * of process pid, innermost first, up to max. m and vm may be NULL (the process is gone):
 * only what is cached then. Returns the number of frames (>= 1: a marker frame when the words
 * cannot be symbolized). */
int hotspot_cache_frames(struct hotspot_cache *hc, uint32_t pid, struct procmem *m,
			 const struct hotspot_vm *vm, uint64_t w0, uint64_t w1,
			 struct hotspot_sym *out, int max);
void hotspot_cache_forget_pid(struct hotspot_cache *hc, uint32_t pid);

struct hotspot_cache_stats {
	uint64_t lookups, hits, reads, read_errors, stale, clears;
	size_t methods, pcs, stubs;
};
void hotspot_cache_stats(const struct hotspot_cache *hc, struct hotspot_cache_stats *st);

/* "java/util/HashMap" -> "java.util.HashMap", "Foo$$Lambda$14+0x0000000800c03000" ->
 * "Foo$$Lambda$14", in place. */
void hotspot_class_name(char *s);

#endif
