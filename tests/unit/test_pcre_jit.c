/* test_pcre_jit.c: finding where a PCRE2 library calls its JIT code (agent/pcre_jit.h): the
 * calls and the set-up of their first argument in crafted code, and the links of the system's
 * libpcre2-8 when it is installed (the direct call in pcre2_jit_match_8 and the one through
 * jit_machine_stack_exec). The rule that uses the links is tested in test_unwind_step.c. */
#include "agent/elf.h"
#include "agent/pcre_jit.h"
#include "runtime/code.h"
#include "test.h"

#define BASE 0x1000

static void test_calls(void)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xe7,                   /*  0: mov %rsp,%rdi */
		0x48, 0x89, 0x04, 0x24,             /*  3: mov %rax,(%rsp) */
		0xff, 0xd6,                         /*  7: call *%rsi */
		0x48, 0x8d, 0x7c, 0x24, 0x10,       /*  9: lea 0x10(%rsp),%rdi */
		0x41, 0xff, 0xd3,                   /* 14: call *%r11 */
		0x48, 0x89, 0xe7,                   /* 17: mov %rsp,%rdi */
		0xe8, 0x10, 0x00, 0x00, 0x00,       /* 20: call 0x1029 */
		0xff, 0x15, 0x00, 0x01, 0x00, 0x00, /* 25: call *0x100(%rip): not counted */
		0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
		0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
		0xff, 0x50, 0x08,                   /* 48: call *0x8(%rax), no set-up near */
	};
	struct pcre_jit_call c[8];
	int n = pcre_jit_calls(code, sizeof(code), BASE, c, 8);

	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(c[0].at, BASE + 7);
	CHECK_EQ_INT(c[0].ra, BASE + 9);
	CHECK_EQ_INT(c[0].target, 0);
	CHECK_EQ_INT(c[0].args, 0);
	CHECK_EQ_INT(c[1].at, BASE + 14); /* once, with its REX prefix */
	CHECK_EQ_INT(c[1].ra, BASE + 17);
	CHECK_EQ_INT(c[1].args, 0x10);
	CHECK_EQ_INT(c[2].at, BASE + 20);
	CHECK_EQ_INT(c[2].target, BASE + 25 + 0x10);
	CHECK_EQ_INT(c[2].args, 0);
	CHECK_EQ_INT(c[3].at, BASE + 48);
	CHECK_EQ_INT(c[3].ra, BASE + 51);
	CHECK_EQ_INT(c[3].args, -1);
}

/* The bytes before ra are an indirect call through a register (ff /2, mod 3). */
static int call_reg_before(struct elf_file *e, uint64_t ra)
{
	uint8_t b[2];

	return code_read(e, ra - 2, b, 2) == 0 && b[0] == 0xff && (b[1] & 0xf8) == 0xd0;
}

static void test_links_libpcre2(void)
{
	static const char *const paths[] = { "/usr/lib/x86_64-linux-gnu/libpcre2-8.so.0",
					     "/lib/x86_64-linux-gnu/libpcre2-8.so.0",
					     "/usr/lib64/libpcre2-8.so.0" };
	struct pcre_jit_link l[PCRE_JIT_LINKS_MAX];
	struct elf_file *e = NULL;
	uint64_t lo, size;
	size_t i;
	int n;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (elf_open(paths[i], &e, NULL) == 0)
			break;
	if (!e)
		SKIP("libpcre2-8 is not installed");
	n = pcre_jit_links(e, l, PCRE_JIT_LINKS_MAX);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(elf_find_symbol(e, "pcre2_jit_match_8", &lo, &size), 0);
	if (n == 2) {
		/* the direct call: in pcre2_jit_match_8, its arguments at its stack pointer */
		CHECK(l[0].ra > lo && l[0].ra <= lo + size);
		CHECK_EQ_INT(l[0].below, 8);
		CHECK(call_reg_before(e, l[0].ra));
		/* through jit_machine_stack_exec: below its 32 KiB stack */
		CHECK(l[1].ra < lo || l[1].ra > lo + size);
		CHECK(l[1].below > 32768 && l[1].below < 65536);
		CHECK(call_reg_before(e, l[1].ra));
	}
	elf_close(e);
}

/* A library that is no PCRE2 has no links. */
static void test_links_none(void)
{
	struct pcre_jit_link l[PCRE_JIT_LINKS_MAX];
	struct elf_file *e = NULL;

	if (elf_open("/proc/self/exe", &e, NULL))
		SKIP("cannot open the test binary");
	CHECK_EQ_INT(pcre_jit_links(e, l, PCRE_JIT_LINKS_MAX), 0);
	elf_close(e);
}

int main(void)
{
	RUN(test_calls);
	RUN(test_links_libpcre2);
	RUN(test_links_none);
	return test_summary();
}
