/* cfi.h: a DWARF call frame information (CFI) parser for x86-64, used to build unwind tables.
 *
 * cfi_parse() walks a .eh_frame or .debug_frame section held in memory, runs the call frame
 * program of every FDE (with its CIE's initial instructions) and reports, through a callback,
 * one row per address range with a constant rule. Only what an x86-64 unwinder needs is kept:
 * how to compute the CFA, where RBP and the return address are saved. Other registers are
 * parsed and ignored.
 *
 * The input is hostile (any file on the machine): every read is bounds checked, CIE initial
 * programs are capped (CFI_MAX_CIE_PROGRAM bytes), the remember/restore stack is capped
 * (CFI_MAX_STATE_DEPTH) and a malformed entry is skipped (counted in cfi_stats.bad_entries)
 * rather than ending the walk when the entry length still lets the walk continue. Running time
 * is linear in the section size. Nothing is allocated: the parser keeps a fixed-size CIE cache
 * on the stack.
 *
 * Ownership: the parser keeps no pointer to data after it returns. */
#ifndef SCORCH_AGENT_CFI_H
#define SCORCH_AGENT_CFI_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;

#define CFI_MAX_CIE_PROGRAM 512 /* bytes of CIE initial instructions we accept */
#define CFI_MAX_STATE_DEPTH 16  /* DW_CFA_remember_state nesting */

/* DWARF register numbers on x86-64. */
#define CFI_REG_RBP 6
#define CFI_REG_RSP 7
#define CFI_REG_RA  16

enum cfi_cfa_kind {
	CFI_CFA_UNDEF = 0, /* no CFA rule yet (malformed program) */
	CFI_CFA_REG,       /* CFA = reg + off */
	CFI_CFA_PLT,       /* the PLT expression: CFA = rsp + off + ((rip & 15) >= plt_thresh ? 8 : 0) */
	CFI_CFA_DEREF,     /* CFA = *(reg + off) (realigned stack frames) */
	CFI_CFA_EXPR,      /* another expression we do not evaluate */
};

enum cfi_reg_kind {
	CFI_R_SAME = 0,  /* unchanged in the caller (same value, or initial state) */
	CFI_R_UNDEF,     /* undefined (for the return address: the outermost frame) */
	CFI_R_OFFSET,    /* saved at CFA + off */
	CFI_R_VAL_OFFSET,/* the value is CFA + off */
	CFI_R_AT_RBP,    /* saved at RBP + off (DW_CFA_expression: DW_OP_breg6 off) */
	CFI_R_OTHER,     /* in another expression */
	CFI_R_REG,       /* in another register: off is its DWARF number (DW_CFA_register) */
};

struct cfi_row {
	uint64_t start, end; /* [start, end) in the section's address space (link-time vaddr) */
	int64_t cfa_off;
	int64_t rbp_off;
	int64_t ra_off;
	uint8_t cfa_kind;    /* enum cfi_cfa_kind */
	uint8_t cfa_reg;     /* DWARF register number for CFI_CFA_REG / CFI_CFA_DEREF */
	uint8_t plt_thresh;  /* for CFI_CFA_PLT */
	uint8_t rbp_kind;    /* enum cfi_reg_kind */
	uint8_t ra_kind;     /* enum cfi_reg_kind */
	uint8_t signal;      /* the CIE has the 'S' augmentation: a signal trampoline */
};

struct cfi_stats {
	uint64_t cies, fdes, rows;
	uint64_t bad_entries; /* CIEs/FDEs skipped as malformed */
};

/* Called for every row, in FDE order (cfi_parse_sorted: address order), rows of one FDE in
 * increasing address order. Return 0 to
 * go on, non-zero to stop the walk (cfi_parse() then returns that value). */
typedef int (*cfi_row_fn)(void *arg, const struct cfi_row *row);

#define CFI_EH_FRAME    0 /* .eh_frame: CIE id 0, relative CIE pointers, pointer encodings */
#define CFI_DEBUG_FRAME 1 /* .debug_frame: CIE id ~0, absolute CIE offsets, 8-byte addresses */

/* Parse a whole section. vaddr is the section's sh_addr (needed for pc-relative pointers in
 * .eh_frame; 0 for .debug_frame). Returns 0 when the walk completed (possibly with skipped
 * entries, see stats), the callback's non-zero value if it stopped the walk, or -EINVAL with a
 * message when the section cannot be walked at all (e.g. the very first length is invalid).
 * stats may be NULL. */
int cfi_parse(const uint8_t *data, size_t size, uint64_t vaddr, int kind, cfi_row_fn fn, void *arg,
	      struct cfi_stats *stats, struct errmsg *err);

/* Called by cfi_fdes() for every FDE with a non-empty range [start, end) (link-time
 * addresses), in section order. Return 0 to go on, non-zero to stop the walk. */
typedef int (*cfi_fde_fn)(void *arg, uint64_t start, uint64_t end);

/* Like cfi_parse(), but only the range of each FDE is reported, its program is not run (a
 * function's start and end, to name code without symbols: fde_index.h). Same returns;
 * stats->rows stays 0. */
int cfi_fdes(const uint8_t *data, size_t size, uint64_t vaddr, int kind, cfi_fde_fn fn, void *arg,
	     struct cfi_stats *stats, struct errmsg *err);

/* Like cfi_parse() on an .eh_frame section, but in the order of its .eh_frame_hdr search
 * table (hdr, hdr_size bytes at link-time address hdr_vaddr), that is by address: the rows of a
 * well-formed section come sorted, which makes building a table linear. Returns -ENOENT, having
 * reported nothing, when the index cannot be used (unknown version or encoding, another
 * section, entries unsorted or outside the section, or not as many as the section's FDEs):
 * walk the section with cfi_parse() then. Otherwise as cfi_parse(). */
int cfi_parse_sorted(const uint8_t *data, size_t size, uint64_t vaddr, const uint8_t *hdr,
		     size_t hdr_size, uint64_t hdr_vaddr, cfi_row_fn fn, void *arg,
		     struct cfi_stats *stats);

#endif
