/* code.h: reading an interpreter's own machine code, for runtimes whose internals are not
 * exported. A stripped libruby has no symbol for its VM loop, the address of the global symbol
 * table or of opcache's JIT buffer globals; the functions that use them are exported, and their
 * code says where the rest is. What is here:
 *   - the bounds of the function holding an address, from .eh_frame_hdr and its FDE (the
 *     unwind data every x86-64 binary carries, stripped or not);
 *   - the direct calls and jumps of a piece of code, and the addresses of the RIP-relative
 *     memory operands it uses (x86-64 pattern matching, not a disassembler).
 * Everything found this way is a guess: callers validate it (a call target must be a function
 * start; a global must hold what it should in the process) before they rely on it. The input
 * is any file on the machine: every read is bounded and checked.
 *
 * Ownership: nothing is allocated; results go to caller arrays. */
#ifndef SCORCH_RUNTIME_CODE_H
#define SCORCH_RUNTIME_CODE_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

#define CODE_MAX_READ 65536 /* bytes of code one call reads */

/* Read len bytes at link-time address vaddr (in the file's bytes of a PT_LOAD): 0, -ENOENT
 * (not in the file), -EIO, -E2BIG (len > CODE_MAX_READ). */
int code_read(struct elf_file *e, uint64_t vaddr, void *buf, size_t len);

/* The [lo, hi) range of the function holding link-time address vaddr, from its FDE (found
 * through the .eh_frame_hdr search table): 0, or -ENOENT (no FDE holds it, or the file has no
 * usable .eh_frame_hdr), -EIO. */
int code_function_range(struct elf_file *e, uint64_t vaddr, uint64_t *lo, uint64_t *hi);

/* The targets of the direct calls (e8 rel32) and, with jumps set, of the direct jumps
 * (e9 rel32) found in buf (code at link-time address base): up to max, in order. Every byte
 * position is tried, so targets inside other instructions are possible: check them. */
int code_x86_branch_targets(const uint8_t *buf, size_t len, uint64_t base, int jumps,
			    uint64_t *out, int max);

/* A RIP-relative memory operand: the instruction's opcode (the byte before the ModRM byte),
 * its offset in buf and the link-time address it refers to. */
struct code_riprel {
	uint8_t opcode;   /* e.g. 0x8b mov load, 0x89 mov store, 0x39/0x3b cmp, 0x8d lea */
	uint8_t rex;      /* the REX prefix before it, or 0 */
	uint8_t reg;      /* the ModRM reg field (with REX.R) */
	uint32_t at;      /* offset of the opcode in buf */
	uint64_t target;  /* the address the operand refers to */
};
/* The RIP-relative operands of the one-byte opcodes in ops[0..nops) (ModRM mod=00 rm=101,
 * disp32; the operand ends the instruction: no immediate follows) found in buf: up to max,
 * in order. */
int code_x86_riprel(const uint8_t *buf, size_t len, uint64_t base, const uint8_t *ops,
		    size_t nops, struct code_riprel *out, int max);

#endif
