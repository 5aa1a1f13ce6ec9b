/* test_hostile_elf.c: regression tests for what the machine-wide sweep (bench/elf_sweep.c),
 * fuzzing with real files and the churn test (tests/integration/churn.sh) found in the code that
 * reads binaries and processes (elf.c, cfi.c, unwind_table.c, unwinder.c). Most tests build a
 * small ELF image in memory that reproduces one finding. */
#include "agent/elf.h"
#include "agent/unwind_table.h"
#include "agent/unwinder.h"
#include "lib/log.h"
#include "test.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- a tiny ELF64 image builder: one R+X PT_LOAD, a few sections */

struct img {
	uint8_t b[16384];
	size_t len;
	Elf64_Shdr sh[16];
	int nsh;
	char shstr[512];
	size_t shstr_len;
};

static size_t img_put(struct img *im, const void *p, size_t n)
{
	size_t at = (im->len + 7) & ~(size_t)7;

	if (at + n > sizeof(im->b))
		abort();
	memcpy(im->b + at, p, n);
	im->len = at + n;
	return at;
}

static void img_init(struct img *im)
{
	memset(im, 0, sizeof(*im));
	im->len = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
	im->nsh = 1;
	im->shstr_len = 1;
}

static void img_section(struct img *im, const char *name, uint32_t type, uint64_t flags,
			uint64_t addr, const void *data, size_t size)
{
	Elf64_Shdr *s = &im->sh[im->nsh++];
	size_t n = strlen(name) + 1;

	memset(s, 0, sizeof(*s));
	s->sh_name = (uint32_t)im->shstr_len;
	memcpy(im->shstr + im->shstr_len, name, n);
	im->shstr_len += n;
	s->sh_type = type;
	s->sh_flags = flags;
	s->sh_addr = addr;
	s->sh_offset = img_put(im, data, size);
	s->sh_size = size;
	s->sh_addralign = 8;
}

/* Finish: .shstrtab, section headers, ELF header, one PT_LOAD R+X [vaddr, vaddr + memsz). */
static void img_finish(struct img *im, uint64_t vaddr, uint64_t memsz, uint64_t entry)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	size_t shoff;
	int strndx = im->nsh;

	img_section(im, ".shstrtab", SHT_STRTAB, 0, 0, "", 0);
	memcpy(im->shstr + im->shstr_len, "", 1);
	im->sh[strndx].sh_offset = img_put(im, im->shstr, im->shstr_len + 16);
	im->sh[strndx].sh_size = im->shstr_len + 16;
	shoff = img_put(im, im->sh, sizeof(Elf64_Shdr) * (size_t)im->nsh);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = entry;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)im->nsh;
	eh.e_shstrndx = (uint16_t)strndx;
	memcpy(im->b, &eh, sizeof(eh));
	memset(&ph, 0, sizeof(ph));
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_vaddr = vaddr;
	ph.p_memsz = memsz;
	ph.p_offset = 0;
	ph.p_filesz = im->len < memsz ? im->len : memsz;
	ph.p_align = 4096;
	memcpy(im->b + sizeof(eh), &ph, sizeof(ph));
}

/* --- .eh_frame pieces: a CIE without augmentation (8-byte absolute FDE pointers),
 * CFA = rsp + 8, return address at CFA - 8 */

struct cfi_buf {
	uint8_t b[1024];
	size_t len;
};

static void cb_put(struct cfi_buf *c, const void *p, size_t n)
{
	if (n)
		memcpy(c->b + c->len, p, n);
	c->len += n;
}

static size_t eh_cie(struct cfi_buf *c)
{
	static const uint8_t body[] = {
		0, 0, 0, 0,  /* CIE id */
		1,           /* version */
		0,           /* augmentation "" */
		1,           /* code align */
		0x78,        /* data align -8 */
		16,          /* return address column */
		0x0c, 7, 8,  /* def_cfa rsp+8 */
		0x90, 1,     /* offset r16 at cfa-8 */
		0, 0, 0,     /* padding to 4 */
	};
	uint32_t len = sizeof(body);
	size_t at = c->len;

	cb_put(c, &len, 4);
	cb_put(c, body, sizeof(body));
	return at;
}

/* An FDE with an absolute pc and range and the program prog (plen bytes). */
static void eh_fde(struct cfi_buf *c, size_t cie, uint64_t pc, uint64_t range, const uint8_t *prog,
		   size_t plen)
{
	uint32_t len = (uint32_t)(4 + 16 + plen), ptr;
	size_t at = c->len;
	static const uint8_t pad[8];

	len = (len + 3) & ~3u;
	cb_put(c, &len, 4);
	ptr = (uint32_t)(at + 4 - cie);
	cb_put(c, &ptr, 4);
	cb_put(c, &pc, 8);
	cb_put(c, &range, 8);
	cb_put(c, prog, plen);
	cb_put(c, pad, len - (4 + 16 + plen));
}

static const char *rule_at(const struct unwind_table *t, uint64_t pc, char *buf, size_t size)
{
	const struct unwind_entry *e = unwind_table_lookup(t, pc);

	return e ? unwind_rule_str(e, buf, size) : "(none)";
}

/* Free Pascal's relocatable objects carry unrelocated .debug_frame ranges such as
 * 0x4cd00000000; one such FDE in a mapped file made the whole table fail with "unwind rows
 * span more than 4 GiB". Rows are now cut to the executable segments. */
static void test_bogus_fde_range_is_cut(void)
{
	static const uint8_t push_prog[] = { 0x41, 0x0e, 16 }; /* advance 1; def_cfa_offset 16 */
	static const uint8_t code[0x200];
	struct cfi_buf c;
	struct img im;
	struct elf_file *e = NULL;
	struct unwind_table t;
	struct errmsg err;
	char buf[64];
	size_t cie;
	int rc;

	memset(&c, 0, sizeof(c));
	cie = eh_cie(&c);
	eh_fde(&c, cie, 0x1000, 0x100, push_prog, sizeof(push_prog));
	eh_fde(&c, cie, 0x1100, 0x4cd00000000ull, NULL, 0); /* bogus range */
	eh_fde(&c, cie, 0x7000000000ull, 0x10, NULL, 0);    /* wholly outside */
	c.len += 4;                                          /* terminator */
	img_init(&im);
	img_section(&im, ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, code, sizeof(code));
	img_section(&im, ".eh_frame", SHT_PROGBITS, SHF_ALLOC, 0x3000, c.b, c.len);
	img_finish(&im, 0x1000, 0x2400, 0);

	CHECK_EQ_INT(elf_open_mem(im.b, im.len, &e, &err), 0);
	if (!e)
		return;
	rc = unwind_table_build(e, NULL, NULL, 0, &t, &err);
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		CHECK_EQ_STR(rule_at(&t, 0x1000, buf, sizeof(buf)), "cfa=rsp+8");
		CHECK_EQ_STR(rule_at(&t, 0x1001, buf, sizeof(buf)), "cfa=rsp+16");
		CHECK_EQ_STR(rule_at(&t, 0x1100, buf, sizeof(buf)), "cfa=rsp+8");
		/* cut at the end of the executable segment */
		CHECK_EQ_STR(rule_at(&t, 0x3400, buf, sizeof(buf)), "invalid");
		CHECK_EQ_INT(t.stats.outside, 2);
		CHECK(t.count < 16);
		unwind_table_release(&t);
	}
	elf_close(e);
}

/* Sections by index (the sweep reads every section header): duplicate names are reachable,
 * index 0 and indexes past the count are not, NOBITS has no contents. */
static void test_sections_by_index(void)
{
	struct elf_file *e = NULL;
	struct elf_section_info si;
	struct errmsg err;
	struct img im;
	const char *name;
	const void *d;
	size_t len, n;

	img_init(&im);
	img_section(&im, ".dup", SHT_PROGBITS, 0, 0, "first", 5);
	img_section(&im, ".dup", SHT_PROGBITS, 0, 0, "second!", 7);
	img_section(&im, ".bss", SHT_NOBITS, SHF_ALLOC, 0x5000, "", 0);
	img_finish(&im, 0x1000, 0x1000, 0);
	CHECK_EQ_INT(elf_open_mem(im.b, im.len, &e, &err), 0);
	if (!e)
		return;
	n = elf_section_count(e);
	CHECK_EQ_INT(n, 5); /* null, .dup, .dup, .bss, .shstrtab */
	CHECK_EQ_INT(elf_section_info_at(e, 2, &name, &si), 0);
	CHECK_EQ_STR(name, ".dup");
	CHECK_EQ_INT(si.size, 7);
	CHECK_EQ_INT(elf_section_at(e, 2, &d, &len), 0);
	CHECK(len == 7 && !memcmp(d, "second!", 7));
	CHECK_EQ_INT(elf_section(e, ".dup", &d, &len, NULL), 0);
	CHECK(len == 5 && !memcmp(d, "first", 5));
	CHECK_EQ_INT(elf_section_at(e, 3, &d, &len), -ENOENT);
	CHECK_EQ_INT(elf_section_at(e, 0, &d, &len), -ENOENT);
	CHECK_EQ_INT(elf_section_at(e, n, &d, &len), -ENOENT);
	CHECK_EQ_INT(elf_section_info_at(e, n, &name, &si), -ENOENT);
	elf_close(e);
}

/* A process that exits while we track it has an empty /proc/PID/maps (a zombie's): the
 * unwinder then sorted a NULL array (undefined behaviour, reported by UBSan under churn). */
static void test_track_exited_process(void)
{
	struct unwinder *u;
	struct errmsg err;
	pid_t pid = fork();
	int rc, st;

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	{
		siginfo_t si;

		/* a zombie now: waited for, not reaped yet */
		CHECK_EQ_INT(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	}
	u = unwinder_new(NULL, NULL, &err);
	CHECK(u != NULL);
	if (u) {
		rc = unwinder_track_pid(u, pid);
		CHECK(rc == 0 || rc == -ESRCH);
		unwinder_forget_pid(u, pid);
		unwinder_free(u);
	}
	waitpid(pid, &st, 0);
}

int main(void)
{
	RUN(test_bogus_fde_range_is_cut);
	RUN(test_sections_by_index);
	RUN(test_track_exited_process);
	return test_summary();
}
