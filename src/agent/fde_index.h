/* fde_index.h: where each function starts, from a file's call frame information, to name code
 * that no symbol covers (stripped executables and libraries, static functions of a file that
 * has only .dynsym) after its function rather than after each sampled instruction.
 *
 * Every FDE of .eh_frame (else .debug_frame) gives a function's range: its initial location
 * is the function's start (or the start of one of its parts, such as a .cold block: compilers
 * give each part its own FDE). The index keeps those ranges sorted, 8 bytes each (start and
 * length relative to the lowest executable segment), so that a lookup is a binary search.
 * FDEs that start outside the executable segments (bogus or hostile) are left out, and so is a
 * range longer than 4 GiB; at most FDE_INDEX_MAX are kept.
 *
 * Ownership: fde_index_build*() return an index the caller releases with fde_index_free(); it
 * keeps no pointer into the file or the section. */
#ifndef SCORCH_AGENT_FDE_INDEX_H
#define SCORCH_AGENT_FDE_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct errmsg;
struct fde_index;

#define FDE_INDEX_MAX (1u << 20) /* FDEs kept for one file (8 MiB) */

/* The index of an ELF file's .eh_frame, else its .debug_frame. Returns 0, or -ENOENT (no CFI,
 * or no FDE inside the executable segments), -E2BIG (past FDE_INDEX_MAX), -EIO, -ENOMEM or
 * -EINVAL with a message. The file must still be readable (not detached). */
int fde_index_build(struct elf_file *e, struct fde_index **out, struct errmsg *err);
/* The same from a raw section (cfi.h's CFI_EH_FRAME or CFI_DEBUG_FRAME at link-time address
 * vaddr), keeping the FDEs that start in [lo, hi) (hi - lo at most 4 GiB): tests, fuzzing. */
int fde_index_build_cfi(const uint8_t *data, size_t size, uint64_t vaddr, int kind, uint64_t lo,
			uint64_t hi, struct fde_index **out, struct errmsg *err);

/* The start of the function (FDE) whose range holds link-time address vaddr: 1 with *start
 * set, or 0 when no FDE covers it. Where ranges overlap, the one that starts last wins (an
 * FDE inside another: the outer one beyond the inner one's end, nested up to 4 deep). */
int fde_index_lookup(const struct fde_index *x, uint64_t vaddr, uint64_t *start);
size_t fde_index_count(const struct fde_index *x);
size_t fde_index_bytes(const struct fde_index *x); /* memory held */
void fde_index_free(struct fde_index *x);           /* NULL ok */

#endif
