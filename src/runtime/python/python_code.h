/* python_code.h: reading CPython code objects out of another process (or a memory image) and
 * turning (code object, instruction offset) into qualname, file name and line.
 *
 * Process memory is hostile: the target runs on while we read, addresses get reused, a lying
 * or corrupted object must give an error and never a crash, a hang or an unbounded allocation.
 * Every read is bounded (PYTHON_NAME_MAX, PYTHON_FILE_MAX, PYTHON_LINETABLE_MAX), objects are
 * checked against their type when the type's address is known, and line tables are decoded
 * with every index checked.
 *
 * The line-table decoders are plain functions on bytes (unit-tested with tables dumped by the
 * real interpreters):
 *   3.8/3.9  co_lnotab      python_line_lnotab(), offset in bytes
 *   3.10     co_linetable   python_line_310(), offset in bytes
 *   3.11+    co_linetable   python_line_311(), offset in bytes (code units * 2)
 * Each returns the line, or -1 when the instruction has no line.
 *
 * The cache (struct python_code_cache, a runtime/name_cache.h of struct python_code) keeps
 * decoded code objects per (pid, address, checksum): a reused address is caught (a new
 * checksum) and read as a new entry, next to the code object that was there before, whose
 * samples may still wait to be symbolized (a module body's code object dies when its import
 * ends, and the next one is often allocated at its address); entries stay after the process
 * exits. Strings returned by the cache are owned by it and valid
 * until the next python_code_cache_get() (which may evict) or python_code_cache_free(). */
#ifndef SCORCH_AGENT_PYTHON_CODE_H
#define SCORCH_AGENT_PYTHON_CODE_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/name_cache.h"
#include "runtime/python/python.h"

struct errmsg;
struct procmem;

#define PYTHON_NAME_MAX 512          /* bytes of UTF-8 kept of a (qual)name */
#define PYTHON_FILE_MAX 4096         /* bytes of UTF-8 kept of a file name */
#define PYTHON_LINETABLE_MAX (256u << 10)

/* Addresses of type objects, to check what a pointer points to (0 = unknown, not checked). */
struct python_types {
	uint64_t code_type;
	uint64_t str_type;
	uint64_t bytes_type;
};

struct python_code {
	char *qualname;       /* co_qualname (3.11+) or co_name; xmalloc'ed */
	char *filename;       /* co_filename; xmalloc'ed */
	uint8_t *linetable;   /* raw co_lnotab / co_linetable bytes; xmalloc'ed, may be NULL */
	size_t linetable_len;
	int32_t firstlineno;
	uint32_t checksum;    /* py_code_checksum() of this object */
	uint32_t version;     /* (major << 8) | minor: which decoder applies */
};

/* Read the code object at addr. 0, or a negative errno with a message in err (may be NULL).
 * On success the caller releases out with python_code_release(). */
int python_code_read(struct procmem *m, const struct py_offsets *off,
		     const struct python_types *types, uint64_t addr, struct python_code *out,
		     struct errmsg *err);
void python_code_release(struct python_code *c);

/* A code object that may be gone, from what the walker noted of it (python.h, YOUNG CODE
 * OBJECTS): its name and file name strings read at their own addresses, no line table (every
 * line is firstlineno). 0, or a negative errno (a string freed too) with a message in err. */
int python_code_from_refs(struct procmem *m, const struct py_offsets *off,
			  const struct python_types *types, const struct py_code_refs *r,
			  struct python_code *out, struct errmsg *err);

/* Only the checksum of the code object at addr (two small reads): 0 or negative errno. */
int python_code_checksum(struct procmem *m, const struct py_offsets *off, uint64_t addr,
			 uint32_t *checksum);

/* The line of the instruction at byte offset off in the bytecode, or -1. off ==
 * PY_INSTR_UNKNOWN gives firstlineno. */
int python_code_line(const struct python_code *c, uint32_t off);

int python_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, uint32_t off);
int python_line_310(const uint8_t *tab, size_t len, int firstlineno, uint32_t off);
int python_line_311(const uint8_t *tab, size_t len, int firstlineno, uint32_t off);

/* Read a str object into out as UTF-8 (NUL-terminated, at most outlen - 1 bytes; longer
 * strings are cut at a character boundary). 0 or negative errno. */
int python_read_str(struct procmem *m, const struct py_offsets *off,
		    const struct python_types *types, uint64_t addr, char *out, size_t outlen);

/* --- cache */
struct python_code_cache;

struct python_code_cache *python_code_cache_new(size_t max_entries);
void python_code_cache_free(struct python_code_cache *cc); /* NULL ok */

/* The decoded code object for (pid, addr) whose checksum is checksum. On a miss it is read
 * through m (when m is not NULL) and cached. Returns NULL when it cannot
 * be had (process gone and never seen, unreadable, checksum differs from what is in memory). */
const struct python_code *python_code_cache_get(struct python_code_cache *cc, uint32_t pid,
						uint64_t addr, uint32_t checksum,
						struct procmem *m,
						const struct py_offsets *off,
						const struct python_types *types);
/* Stores code as the entry of (pid, addr, code->checksum), replacing one that is there; the
 * cache takes code over (it is zeroed). Returns the entry. */
const struct python_code *python_code_cache_put(struct python_code_cache *cc, uint32_t pid,
						uint64_t addr, struct python_code *code);
/* Drop every entry of pid (e.g. when the pid is reused by a new process). */
void python_code_cache_forget_pid(struct python_code_cache *cc, uint32_t pid);

/* puts: the entries made by python_code_cache_put() (from the walker's refs). */
void python_code_cache_stats(const struct python_code_cache *cc, struct name_cache_stats *st);

#endif
