/* gopclntab.h: Go's own symbol table, .gopclntab, read from the file: function names, source
 * files and lines, inlined calls, and the stack-pointer delta of every pc. Stripped Go
 * binaries (-ldflags='-s -w', the usual release build) keep it, because the Go runtime needs
 * it for its own tracebacks.
 *
 * Layouts (runtime/symtab.go of each release): Go 1.16-1.17 (magic 0xfffffffa), 1.18-1.19
 * (0xfffffff0) and 1.20+ (0xfffffff1); older tables are refused (-ENOTSUP). The table is found
 * by its section (.gopclntab, .data.rel.ro.gopclntab) or, when section headers are stripped,
 * by its header pattern in the read-only segments. Inlined calls need the FUNCDATA_InlTree
 * tables, which (from Go 1.18) are addressed from runtime.moduledata's gofunc field: that
 * structure is found by the pointer it holds to the table (or, in PIE builds, by the
 * R_X86_64_RELATIVE relocation that fills it). Without it, a pc inside inlined code gets the
 * name of the function it was inlined into and no line (its line would be the inlinee's).
 *
 * Nothing but a small index (8 bytes per function) is kept in memory: names, files and the
 * pc-value tables are read from the file on demand, through a small block cache, so the
 * elf_file must stay attached (not elf_detach_file()) while the gopclntab is used. Every read
 * is bounds checked (a lying or truncated file gives fewer or no frames, never a crash); walks
 * of pc-value tables are bounded by the function's size and GOPCLNTAB_MAX_STEPS.
 *
 * Ownership: gopclntab_open() returns an object freed with gopclntab_free(); it does not own
 * the elf_file, which must outlive it. Strings in struct gopclntab_frame are owned by the
 * gopclntab and valid until its next lookup. Not thread-safe. */
#ifndef SCORCH_AGENT_GOPCLNTAB_H
#define SCORCH_AGENT_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct errmsg;
struct gopclntab;

#define GOPCLNTAB_MAX_FUNCS (4u << 20)  /* functions indexed */
#define GOPCLNTAB_MAX_NAME 4096         /* bytes of one function or file name */
#define GOPCLNTAB_MAX_INLINE 32         /* inlined frames reported at one pc */
#define GOPCLNTAB_MAX_STEPS (1u << 20)  /* entries decoded in one pc-value table */
#define GOPCLNTAB_MAX_SCAN (512ull << 20) /* bytes searched for a table without its section */

/* Find and index the table of e. 0, -ENOENT (not a Go binary, or no table), -ENOTSUP (a
 * layout before Go 1.16, or not for x86-64), -EINVAL (a table that does not hold together),
 * -EIO, -ENOMEM; a message in err. */
int gopclntab_open(struct elf_file *e, struct gopclntab **out, struct errmsg *err);
void gopclntab_free(struct gopclntab *g); /* NULL ok */

/* 116, 118 or 120: the table layout (Go 1.16-1.17, 1.18-1.19, 1.20 and later). */
int gopclntab_layout(const struct gopclntab *g);
/* Bytes g holds in memory: its index, block cache and name pool. */
size_t gopclntab_bytes(const struct gopclntab *g);
/* [lo, hi): link-time addresses of the Go functions the table covers. */
void gopclntab_text_range(const struct gopclntab *g, uint64_t *lo, uint64_t *hi);
/* Whether inlined calls can be expanded (the inline trees were found). */
int gopclntab_has_inline(const struct gopclntab *g);

struct gopclntab_frame {
	const char *name;  /* e.g. "main.(*server).handle" */
	const char *file;  /* NULL when unknown */
	int line;          /* 0 when unknown */
	int inlined;       /* 1: inlined into the next frame (its caller) */
};

/* The frames at link-time address pc, innermost first: the functions inlined there, then the
 * function that holds pc (its entry in *entry, may be NULL). Returns how many were written
 * (at most max), 0 when pc is in no Go function. For a return address, pass the address of
 * the call (return address - 1). */
size_t gopclntab_lookup(struct gopclntab *g, uint64_t pc, struct gopclntab_frame *out,
			size_t max, uint64_t *entry);

/* The stack-pointer delta table of every function (pcsp: bytes the function has pushed or
 * allocated below its return address at each pc), as runs [lo, hi) of one value, function by
 * function. fn returns 0 to go on; a non-zero value stops the walk and is returned. */
typedef int (*gopclntab_sp_fn)(void *ctx, uint64_t lo, uint64_t hi, int32_t spdelta);
int gopclntab_sp_deltas(struct gopclntab *g, gopclntab_sp_fn fn, void *ctx);

/* What an unwinder must know of a function besides its deltas: runtime/symtab.go's funcFlag
 * (Go 1.17+; for 1.16, which has no flags, the same functions by name) and the signal
 * restorer. */
#define GOPCLNTAB_TOPFRAME  (1u << 0) /* the outermost frame of its stack: runtime.goexit (every
				       * goroutine's), runtime.mstart, runtime.rt0_go, and
				       * runtime.sigtramp (a signal handler's) */
#define GOPCLNTAB_SPWRITE   (1u << 1) /* writes SP other than by its frame's prologue and
				       * epilogue (a switch to the system stack, a vDSO call):
				       * its deltas do not hold after the write */
#define GOPCLNTAB_SIGTRAMP  (1u << 2) /* runtime.sigtramp: the signal handler */
#define GOPCLNTAB_SIGRETURN (1u << 3) /* the signal restorer the handler returns into
				       * (runtime.sigreturn, runtime.sigreturn__sigaction) */
#define GOPCLNTAB_CASGSTATUS (1u << 4) /* runtime.casgstatus: its code says where a g's
					* status is (g.atomicstatus) */

/* Every function with one of the GOPCLNTAB_* flags, as [entry, end) link-time addresses, its
 * name (valid during the call) and flags. fn returns 0 to go on; a non-zero value stops the
 * walk and is returned. */
typedef int (*gopclntab_func_fn)(void *ctx, uint64_t entry, uint64_t end, const char *name,
				 unsigned flags);
int gopclntab_special_funcs(struct gopclntab *g, gopclntab_func_fn fn, void *ctx);

#endif
