/* srcline.h: source file, line and inlined calls of native code, from DWARF (.debug_line and
 * the DW_TAG_inlined_subroutine entries of .debug_info), through elfutils' libdw.
 *
 * The DWARF of one file is opened with ELF_C_READ (libelf reads with pread and never maps the
 * file, so a file truncated under us gives errors, not SIGBUS). libdw loads what a lookup
 * needs (a unit's line table, its DIE tree) and keeps it until srcline_free(): the memory of
 * an open srcline grows with the units looked up, up to about the size of the file's DWARF
 * sections (srcline_cost() is that bound, for callers that keep a budget).
 *
 * Ownership: srcline_open() returns an object freed with srcline_free(); it does not own the
 * descriptor, which must stay open while the srcline is used. Strings of struct srcline_frame
 * are valid until the next lookup. Not thread-safe. */
#ifndef SCORCH_AGENT_SRCLINE_H
#define SCORCH_AGENT_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;
struct srcline;

#define SRCLINE_MAX_INLINE 32 /* inlined frames reported at one address */

/* Open the DWARF of the ELF file on fd (name for messages). -ENOENT when it has no line
 * tables, -ENOEXEC when it is not an ELF file libdw can read. */
int srcline_open(int fd, const char *name, struct srcline **out, struct errmsg *err);
void srcline_free(struct srcline *s); /* NULL ok */

/* Bytes of DWARF the file holds (.debug_info, .debug_line, .debug_str, ... uncompressed as
 * far as the headers say): about what an srcline holds at most. */
uint64_t srcline_cost(const struct srcline *s);
/* The same from our own reader (section headers and compression headers only, nothing else
 * read), to decide before opening: 0 when the file has no .debug_line. */
struct elf_file;
uint64_t srcline_estimate(struct elf_file *e);

struct srcline_frame {
	const char *name;    /* linkage (mangled) name if the DIE has one, else its name; or NULL */
	const char *file;    /* source file (relative paths joined to the unit's compilation
				directory), or NULL */
	int line;            /* 0 when unknown */
	int inlined;         /* 1: inlined into the next frame */
};

/* The frames at link-time address addr, innermost first: the functions inlined there (each
 * with the file and line inside it), then the function holding addr (its name from DWARF,
 * when the unit has one, and the line within it). Returns how many were written (<= max), 0
 * when DWARF says nothing about addr. */
size_t srcline_lookup(struct srcline *s, uint64_t addr, struct srcline_frame *out, size_t max);

#endif
