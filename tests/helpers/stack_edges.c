/* stack_edges.c: native code the CFI tables do not describe, for tests/integration/
 * stack_edges.sh.
 *   stack_edges leaf SECONDS      main -> leaf_caller -> asm_leaf, a leaf assembly function
 *                                 without CFI (64 bytes, so its gap in the table is an
 *                                 UNW_INVALID range, not padding that keeps the previous rule)
 *   stack_edges linked SECONDS    main -> run_linked -> asm_switch (moves to an mmap'ed stack,
 *                                 leaving the old stack pointer in rbp, with CFI that says so,
 *                                 like Rust's psm) -> on_new_stack -> spin
 *   stack_edges ucontext SECONDS  main -> swapcontext into a makecontext() context on an mmap'ed
 *                                 stack: ctx_entry -> spin (no link back to main)
 * Each runs its loop for SECONDS of wall time. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#define NEW_STACK (256 * 1024)

unsigned long asm_leaf(unsigned long n);
void asm_switch(void *stack_top, void (*fn)(void));

/* No .cfi directives: nothing in .eh_frame covers these. */
__asm__(".text\n"
	".globl asm_leaf\n"
	".type asm_leaf, @function\n"
	".p2align 6\n"
	"asm_leaf:\n"
	"	mov %rdi, %rax\n"
	"1:	pause\n"
	"	dec %rdi\n"
	"	jnz 1b\n"
	"	ret\n"
	"	.fill 48, 1, 0x90\n"
	".size asm_leaf, . - asm_leaf\n"
	".p2align 6\n");

/* A stack switch that leaves a link: the caller's rsp in rbp, described by CFI (CFA = rbp + 16
 * once rbp is set), as psm's rust_psm_on_stack does. */
__asm__(".text\n"
	".globl asm_switch\n"
	".type asm_switch, @function\n"
	".p2align 4\n"
	"asm_switch:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	mov %rdi, %rsp\n"
	"	call *%rsi\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size asm_switch, . - asm_switch\n");

static double deadline;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void leaf_caller(void)
{
	while (now() < deadline)
		sink += asm_leaf(20000);
}

__attribute__((noinline)) static void spin(void)
{
	unsigned long i, x = sink;

	while (now() < deadline)
		for (i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) static void on_new_stack(void)
{
	spin();
	sink++;
}

__attribute__((noinline)) static void run_linked(void)
{
	char *s = mmap(NULL, NEW_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (s == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	asm_switch(s + NEW_STACK, on_new_stack);
	munmap(s, NEW_STACK);
}

static ucontext_t main_ctx, co_ctx;

__attribute__((noinline)) static void ctx_entry(void)
{
	spin();
	sink++;
}

__attribute__((noinline)) static void run_ucontext(void)
{
	char *s = mmap(NULL, NEW_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (s == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = s;
	co_ctx.uc_stack.ss_size = NEW_STACK;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, ctx_entry, 0);
	swapcontext(&main_ctx, &co_ctx);
	munmap(s, NEW_STACK);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: stack_edges leaf|linked|ucontext SECONDS\n");
		return 2;
	}
	deadline = now() + atof(argv[2]);
	if (!strcmp(argv[1], "leaf"))
		leaf_caller();
	else if (!strcmp(argv[1], "linked"))
		run_linked();
	else if (!strcmp(argv[1], "ucontext"))
		run_ucontext();
	else
		return 2;
	return 0;
}
