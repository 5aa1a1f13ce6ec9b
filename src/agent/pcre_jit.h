/* pcre_jit.h: where a PCRE2 library (libpcre2-8, -16, -32) calls its JIT code, for the rule
 * that unwinds through that code (bpf/unwind.h: PCRE2 JIT LINKS; docs/unwinding.md).
 *
 * PCRE2's JIT code is entered by an indirect call in pcre2_jit_match_<width>(), or in the
 * function it calls when it has no JIT stack (jit_machine_stack_exec(), which puts a 32 KiB
 * stack in its own frame), with a pointer to a struct jit_arguments that pcre2_jit_match()
 * keeps at a fixed offset k from its stack pointer (set up by `mov %rsp,%rdi` or
 * `lea k(%rsp),%rdi` just before the call). A link is the return address of such a call and
 * how far below that pointer it is on the stack:
 *   direct call:                      below = k + 8
 *   through a function T:             below = k + (T's CFA offset at its call) + 8
 * Each link is checked against the file's CFI: the frames it leads to have their CFA at rsp +
 * a constant, and the caller's rbp is restored from the stack by them, so an unwind through a
 * link never needs the rbp the JIT code had on entry.
 *
 * Finding the calls is x86-64 pattern matching (runtime/code.h), not disassembly: everything
 * found is checked against the CFI here and against the stack at every use (unwind_step.h).
 *
 * Ownership: nothing is allocated for the caller; results go to caller arrays. */
#ifndef SCORCH_AGENT_PCRE_JIT_H
#define SCORCH_AGENT_PCRE_JIT_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

#define PCRE_JIT_LINKS_MAX 2 /* per file: the direct call and the one through a function */

struct pcre_jit_link {
	uint64_t ra;    /* link-time return address of the call into the JIT code */
	uint64_t below; /* its stack slot is at (jit_arguments pointer) - below */
};

/* A call found in a piece of code (pcre_jit_calls()). */
struct pcre_jit_call {
	uint64_t at;       /* link-time address of the call instruction */
	uint64_t ra;       /* the address after it */
	uint64_t target;   /* a direct call's target; 0 for an indirect one */
	int64_t args;      /* offset from rsp of the pointer passed in rdi, set up in the bytes
			      just before the call (`mov %rsp,%rdi`: 0, `lea k(%rsp),%rdi`: k);
			      -1 when there is no such set-up */
};

/* The calls in buf (code at link-time address base): direct calls (e8 rel32) and indirect
 * ones through a register or memory (ff /2, not RIP-relative: those are calls through the
 * GOT), each with the set-up of rdi that precedes it when there is one. Every byte position is
 * tried. Returns how many were stored (at most max). */
int pcre_jit_calls(const uint8_t *buf, size_t len, uint64_t base, struct pcre_jit_call *out,
		   int max);

/* The links of file e when it exports pcre2_jit_match_8, _16 or _32: the number stored in out
 * (at most max, sorted by below, smallest first), 0 when the file is no PCRE2 library or no
 * call checks out, or a negative errno (-EIO, -ENOMEM). */
int pcre_jit_links(struct elf_file *e, struct pcre_jit_link *out, int max);

#endif
