/* ruby_sym.h: reading CRuby objects out of another process (or a memory image) and naming the
 * frames the walker reports: strings, arrays, symbols (ID -> name through the VM's global
 * symbol table), class paths, instruction sequences with their line tables, method entries.
 *
 * Process memory is hostile: the target runs on while we read, objects are freed and their
 * addresses reused, and a lying image must give an error, never a crash, a hang or an unbounded
 * allocation. Every object is type-checked through its flags (T_STRING, T_ARRAY, T_CLASS,
 * imemo method entries), every length is capped (RUBY_NAME_MAX, RUBY_PATH_MAX,
 * RUBY_LINES_MAX, RUBY_SUCC_MAX), every loop is bounded.
 *
 * Names follow rb_profile_frame_full_label(): `Worker#inner`, `Zlib::Deflate.deflate` (a
 * singleton method), `block in Worker#outer`, `<main>`, `<class:Worker>`; C functions are named
 * from their method entry (`Integer#times`). Lines come from the iseq's instruction table
 * (the succinct index of insns_info, as rb_iseq_line_no() reads it).
 *
 * The cache (struct ruby_cache, a runtime/name_cache.h) keeps decoded iseqs and method entries
 * per (pid, address, checksum the walker computed: ruby.h, rb_checksum()): a reused address is
 * caught and read as a new entry, next to the object that was there before, whose samples may
 * still wait to be symbolized; entries stay after the process exits (its last samples still
 * need them). Pointers returned by the cache are valid until its next get (which may evict) or
 * ruby_cache_free(). */
#ifndef SCORCH_RUNTIME_RUBY_SYM_H
#define SCORCH_RUNTIME_RUBY_SYM_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/name_cache.h"
#include "runtime/ruby/ruby.h"

struct procmem;

#define RUBY_NAME_MAX 256            /* bytes kept of a label, method or class name */
#define RUBY_PATH_MAX 1024           /* bytes kept of a file path */
#define RUBY_STR_MAX (1u << 16)      /* longer strings are not read */
#define RUBY_LINES_MAX (1u << 16)    /* insns_info entries kept per iseq */
#define RUBY_ISEQ_MAX (1u << 22)     /* instructions of an iseq we accept */
#define RUBY_SUCC_MAX (256u << 10)   /* bytes of a succinct index table we copy */
#define RUBY_IVARS_MAX 64            /* ivar table entries of a class looked at */

/* iseq types (enum rb_iseq_type) */
enum {
	RUBY_ISEQ_TOP = 0, RUBY_ISEQ_METHOD = 1, RUBY_ISEQ_BLOCK = 2, RUBY_ISEQ_CLASS = 3,
	RUBY_ISEQ_RESCUE = 4, RUBY_ISEQ_ENSURE = 5, RUBY_ISEQ_EVAL = 6, RUBY_ISEQ_MAIN = 7,
	RUBY_ISEQ_PLAIN = 8,
};
/* method types (enum rb_method_type_t) */
enum { RUBY_METHOD_ISEQ = 0, RUBY_METHOD_CFUNC = 1, RUBY_METHOD_BMETHOD = 4 };

/* What the readers need of one process. The IDs of the internal ivar names are learnt on first
 * use (they are the same for every class of the process). */
struct ruby_mem {
	struct procmem *m;
	const struct rb_offsets *off;
	uint64_t symbols;       /* address of ruby_global_symbols, 0: unknown (no C names) */
	uint64_t id_classpath;  /* ID of "__classpath__" once seen, else 0 (3.1) */
	uint64_t id_attached;   /* ID of "__attached__" once seen, else 0 (3.1) */
};

/* A String's bytes, NUL-terminated (cut at outlen - 1 bytes, and at an embedded NUL): 0,
 * -EINVAL (not a String), -E2BIG (longer than RUBY_STR_MAX), -EFAULT. */
int ruby_read_str(struct ruby_mem *rm, uint64_t v, char *out, size_t outlen);
/* Element i of an Array: 0, -ENOENT (past its length), -EINVAL (not an Array), -EFAULT. */
int ruby_ary_entry(struct ruby_mem *rm, uint64_t ary, uint64_t i, uint64_t *out);
/* The name of an ID: 0, -ENOENT (no symbol table, or an ID it does not hold), -EFAULT. */
int ruby_id2str(struct ruby_mem *rm, uint64_t id, char *out, size_t outlen);
/* The path of a class or module (`Zlib::Deflate`; an included module's for an iclass); for a
 * singleton class, the path of the class it is attached to and *singleton = 1. 0, -ENOENT
 * (anonymous, or not knowable on this version), -EINVAL (not a class), -EFAULT. */
int ruby_class_path(struct ruby_mem *rm, uint64_t klass, char *out, size_t outlen,
		    int *singleton);

struct ruby_iseq {
	char *label;          /* "block in outer" */
	char *base_label;     /* "outer" */
	char *method;         /* base label of the local iseq when it is a method, else NULL */
	char *path;           /* pathobj (the path as given, e.g. "app.rb") */
	int32_t first_lineno;
	uint32_t type;        /* RUBY_ISEQ_* */
	uint32_t size;        /* iseq_size: instructions */
	uint32_t checksum;    /* rb_checksum(body, size) */
	int32_t *lines;       /* insns_info line numbers (nlines; NULL when not kept) */
	uint32_t nlines;
	uint8_t *succ;        /* the succinct index table (nsucc bytes), NULL when nlines <= 1 */
	uint32_t nsucc;
};
/* Read the iseq (rb_iseq_t) at addr: 0, or a negative errno. Release with
 * ruby_iseq_release(). */
int ruby_iseq_read(struct ruby_mem *rm, uint64_t addr, struct ruby_iseq *out);
void ruby_iseq_release(struct ruby_iseq *is);
/* The line of the instruction at index pos (as the walker reports it: (pc - encoded) / 8, the
 * next instruction's), first_lineno for RB_POS_UNKNOWN or when the table does not say. */
int ruby_iseq_line(const struct ruby_iseq *is, uint32_t pos);
/* The succinct index lookup of rb_iseq_line_no(): the rank of position pos in the table of a
 * body of `size` instructions, or -1 when the table is too short. */
int ruby_succ_lookup(const uint8_t *table, size_t len, uint32_t pos);

struct ruby_cme {
	char *name;           /* the method's original name (C functions), else NULL */
	char *klass;          /* class path of defined_class, or NULL (anonymous, unknown) */
	uint32_t type;        /* RUBY_METHOD_* */
	int singleton;        /* defined on a singleton class: `Klass.name` */
	uint32_t checksum;    /* rb_checksum(def, 0) */
};
/* Read the callable method entry at addr: 0, or a negative errno (-EINVAL: not a method
 * entry). Release with ruby_cme_release(). */
int ruby_cme_read(struct ruby_mem *rm, uint64_t addr, struct ruby_cme *out);
void ruby_cme_release(struct ruby_cme *c);

/* The frame name for an iseq (and the method entry of its frame, or NULL) or for a C function
 * (is NULL), into out: 0, or -ENOENT when nothing names it. */
int ruby_frame_name(const struct ruby_iseq *is, const struct ruby_cme *cme, char *out,
		    size_t outlen);

/* --- cache */
struct ruby_cache;

struct ruby_cache *ruby_cache_new(size_t max_entries);
void ruby_cache_free(struct ruby_cache *c); /* NULL ok */
/* The decoded iseq / method entry of (pid, addr) whose checksum is checksum: cached, or read
 * through rm (when not NULL) and cached. NULL when it cannot be had (never seen and the process
 * is gone, unreadable, or the address holds another object now). */
const struct ruby_iseq *ruby_cache_iseq(struct ruby_cache *c, uint32_t pid, uint64_t addr,
					uint32_t checksum, struct ruby_mem *rm);
/* mask: the checksum bits the word carries (0xffffff for a C function's info word, 0xff for the
 * method entry word of an iseq frame). */
const struct ruby_cme *ruby_cache_cme(struct ruby_cache *c, uint32_t pid, uint64_t addr,
				      uint32_t checksum, uint32_t mask, struct ruby_mem *rm);
void ruby_cache_forget_pid(struct ruby_cache *c, uint32_t pid);

void ruby_cache_stats(const struct ruby_cache *c, struct name_cache_stats *st);

#endif
