/* unwind_table.h: builds the compact per-file unwind table the BPF unwinder searches
 * (entry format: bpf/unwind.h) from a file's CFI (.eh_frame, .debug_frame, a debug file's
 * .debug_frame), PLT sections and, for files without CFI or Go binaries, the frame-pointer rule.
 *
 * How a table is made:
 *   1. rows from the sources, in priority order: .eh_frame, .debug_frame, the debug file's
 *      CFI, Go's .gopclntab stack-pointer deltas, PLT sections without CFI (CFA = rsp + 8),
 *      and the frame-pointer rule over
 *      executable segments when the file has no CFI at all or is a Go binary; rows are cut to
 *      the span of the executable PT_LOAD segments (when the file has any), so that one bogus
 *      FDE range cannot make the table span more than 4 GiB;
 *   2. rows are converted to rules (cfi_row -> struct unwind_entry), sorted, overlaps resolved
 *      by priority, gaps become UNW_INVALID, interpreter ranges are flagged UNW_F_INTERP;
 *   3. consecutive equal rules are merged; the table ends with an UNW_INVALID entry.
 *
 * Ownership: struct unwind_table owns entries; unwind_table_release() frees them. */
#ifndef SCORCH_AGENT_UNWIND_TABLE_H
#define SCORCH_AGENT_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/unwind.h"

struct elf_file;
struct errmsg;
struct cfi_row;

#define UNWIND_TABLE_MAX_ROWS (8u << 20) /* rows gathered for one file */

/* What the builder makes of a given file. Tables are cached on disk under this version
 * (table_cache.h): bump it whenever a change here or in cfi.c changes the entries of a file. */
#define UNWIND_TABLE_VERSION 5 /* 2: Go stack-pointer deltas, V8 builtins; 3: the Go runtime's roots
				* and stack switches, big frames (UNW_F_BIG); 4: Go's morestack
				* (UNW_GO_MORESTACK); 5: the return address in rdi
				* (UNW_RA_REG) */

struct unwind_table_stats {
	uint64_t fdes, rows, bad_entries;
	uint64_t unsupported;   /* rows whose rule cannot be expressed (become UNW_INVALID) */
	uint64_t plt_rows, fp_rows;
	uint64_t outside;       /* rows cut or dropped: outside the executable segments */
	int sources;            /* bitmask of UT_SRC_* that contributed rows */
};

#define UT_SRC_EH_FRAME    (1 << 0)
#define UT_SRC_DEBUG_FRAME (1 << 1)
#define UT_SRC_DEBUG_FILE  (1 << 2)
#define UT_SRC_PLT         (1 << 3)
#define UT_SRC_FP          (1 << 4)
#define UT_SRC_GOPCLNTAB   (1 << 5) /* Go's stack-pointer deltas (gopclntab.h) */

struct unwind_table {
	uint64_t base;                 /* link-time address that entry pcs are relative to */
	struct unwind_entry *entries;  /* sorted by pc; last one UNW_INVALID */
	size_t count;
	int interp;                    /* some entries carry UNW_F_INTERP */
	struct unwind_table_stats stats;
};

/* A link-time address range [lo, hi) to flag UNW_F_INTERP. */
struct unwind_range {
	uint64_t lo, hi;
};

/* Build the table of an ELF file. debug (may be NULL) is its separate debug file, used when e
 * has no CFI of its own. interp (ninterp of them, may be NULL) are link-time ranges to flag
 * UNW_F_INTERP (an interpreter's eval loop). Returns 0, or a negative errno with a message: -ENOENT
 * when there is nothing to unwind with (no CFI and no executable segment), -E2BIG past
 * UNWIND_TABLE_MAX_ROWS or when the file spans more than 4 GiB. */
int unwind_table_build(struct elf_file *e, struct elf_file *debug, const struct unwind_range *interp,
		       size_t ninterp, struct unwind_table *out, struct errmsg *err);

/* The same from raw CFI sections (for tests and fuzzing): .eh_frame with its .eh_frame_hdr
 * index and .debug_frame; any may be NULL/0. */
struct unwind_cfi_sections {
	const uint8_t *eh;
	size_t eh_size;
	uint64_t eh_vaddr;
	const uint8_t *eh_hdr;
	size_t eh_hdr_size;
	uint64_t eh_hdr_vaddr;
	const uint8_t *df;
	size_t df_size;
};
int unwind_table_from_sections(const struct unwind_cfi_sections *sec,
			       const struct unwind_range *interp, size_t ninterp,
			       struct unwind_table *out, struct errmsg *err);
/* The same without an index. */
int unwind_table_from_cfi(const uint8_t *eh, size_t eh_size, uint64_t eh_vaddr,
			  const uint8_t *df, size_t df_size, const struct unwind_range *interp,
			  size_t ninterp, struct unwind_table *out, struct errmsg *err);

void unwind_table_release(struct unwind_table *t);

/* The entry for link-time address vaddr, or NULL when vaddr is below the table. */
const struct unwind_entry *unwind_table_lookup(const struct unwind_table *t, uint64_t vaddr);

/* Write the page index of a table of count entries (bpf/unwind.h: PAGE INDEX) into the
 * UNW_INDEX_SLOTS(count) entry slots that follow it at entries[count]: the smallest bucket
 * size that keeps it within UNW_INDEX_WORDS(count) words. Sets *shift and *nbuckets (the
 * mapping's index_shift and index_count); both 0 when the table is too small for an index
 * (nothing is written then). */
void unwind_table_index(struct unwind_entry *entries, uint32_t count, uint8_t *shift,
			uint32_t *nbuckets);

/* Convert one CFI row to an entry's rule (pc left 0). Returns 1 when representable, 0 when the
 * row became UNW_INVALID. */
int unwind_rule_from_cfi(const struct cfi_row *row, struct unwind_entry *out);

/* A readable form of an entry's rule, e.g. "cfa=rsp+16 rbp=cfa-16", for tests and tools. */
const char *unwind_rule_str(const struct unwind_entry *e, char *buf, size_t size);

#endif
