/* test_cfi.c: the DWARF CFI parser on hand-made .eh_frame / .debug_frame sections, and the
 * function starts taken from it (fde_index.h), there and on this test's own binary. */
#include "agent/cfi.h"
#include "agent/elf.h"
#include "agent/fde_index.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>

struct sec {
	uint8_t b[1024];
	size_t n;
};

static void put(struct sec *s, const void *p, size_t n)
{
	memcpy(s->b + s->n, p, n);
	s->n += n;
}
static void u8(struct sec *s, uint8_t v) { put(s, &v, 1); }
static void u32(struct sec *s, uint32_t v) { put(s, &v, 4); }
static void u64(struct sec *s, uint64_t v) { put(s, &v, 8); }
static void bytes(struct sec *s, const char *p, size_t n) { put(s, p, n); }
static void patch32(struct sec *s, size_t at, uint32_t v) { memcpy(s->b + at, &v, 4); }

/* An .eh_frame CIE "zR" (pcrel|sdata4), code align 1, data align -8, RA column 16, initial
 * rules CFA = rsp + 8, RA at CFA - 8. Returns its offset. */
static size_t eh_cie(struct sec *s, const char *aug)
{
	size_t start = s->n;

	u32(s, 0); /* length, patched */
	u32(s, 0); /* CIE id */
	u8(s, 1);
	bytes(s, aug, strlen(aug) + 1);
	u8(s, 1);    /* code align */
	u8(s, 0x78); /* data align -8 */
	u8(s, 16);   /* RA column */
	u8(s, 1);    /* augmentation length */
	u8(s, 0x1b); /* FDE encoding */
	bytes(s, "\x0c\x07\x08", 3); /* def_cfa rsp 8 */
	bytes(s, "\x90\x01", 2);     /* offset r16, 1 * -8 */
	while ((s->n - start) % 8)
		u8(s, 0);
	patch32(s, start, (uint32_t)(s->n - start - 4));
	return start;
}

/* An FDE for [pc, pc + range) with the given program; vaddr is the section's address. */
static void eh_fde(struct sec *s, size_t cie, uint64_t vaddr, uint64_t pc, uint32_t range,
		   const char *prog, size_t plen)
{
	size_t start = s->n;

	u32(s, 0);
	u32(s, (uint32_t)(s->n - cie));
	u32(s, (uint32_t)(int32_t)(pc - (vaddr + s->n)));
	u32(s, range);
	u8(s, 0); /* augmentation length */
	bytes(s, prog, plen);
	while ((s->n - start) % 8)
		u8(s, 0);
	patch32(s, start, (uint32_t)(s->n - start - 4));
}

struct rows {
	struct cfi_row r[32];
	int n;
};

static int collect(void *arg, const struct cfi_row *row)
{
	struct rows *rs = arg;

	if (rs->n < 32)
		rs->r[rs->n++] = *row;
	return 0;
}

static void test_prologue_rows(void)
{
	struct sec s = { .n = 0 };
	struct rows rs = { .n = 0 };
	struct cfi_stats st = { 0 };
	uint64_t va = 0x1000;
	size_t cie = eh_cie(&s, "zR");
	/* push rbp; mov rbp,rsp; ...; leave; ret */
	static const char prog[] = "\x41\x0e\x10\x86\x02\x43\x0d\x06\x50\x0c\x07\x08";

	eh_fde(&s, cie, va, 0x2000, 0x20, prog, sizeof(prog) - 1);
	u32(&s, 0);
	CHECK_EQ_INT(cfi_parse(s.b, s.n, va, CFI_EH_FRAME, collect, &rs, &st, NULL), 0);
	CHECK_EQ_INT(st.fdes, 1);
	CHECK_EQ_INT(st.bad_entries, 0);
	CHECK_EQ_INT(rs.n, 4);
	CHECK_EQ_INT(rs.r[0].start, 0x2000);
	CHECK_EQ_INT(rs.r[0].end, 0x2001);
	CHECK_EQ_INT(rs.r[0].cfa_kind, CFI_CFA_REG);
	CHECK_EQ_INT(rs.r[0].cfa_reg, CFI_REG_RSP);
	CHECK_EQ_INT(rs.r[0].cfa_off, 8);
	CHECK_EQ_INT(rs.r[0].ra_kind, CFI_R_OFFSET);
	CHECK_EQ_INT(rs.r[0].ra_off, -8);
	CHECK_EQ_INT(rs.r[0].rbp_kind, CFI_R_SAME);
	CHECK_EQ_INT(rs.r[1].start, 0x2001);
	CHECK_EQ_INT(rs.r[1].cfa_off, 16);
	CHECK_EQ_INT(rs.r[1].rbp_kind, CFI_R_OFFSET);
	CHECK_EQ_INT(rs.r[1].rbp_off, -16);
	CHECK_EQ_INT(rs.r[2].start, 0x2004);
	CHECK_EQ_INT(rs.r[2].cfa_reg, CFI_REG_RBP);
	CHECK_EQ_INT(rs.r[2].cfa_off, 16);
	CHECK_EQ_INT(rs.r[3].start, 0x2014);
	CHECK_EQ_INT(rs.r[3].end, 0x2020);
	CHECK_EQ_INT(rs.r[3].cfa_reg, CFI_REG_RSP);
	CHECK_EQ_INT(rs.r[3].cfa_off, 8);
}

static void test_remember_restore_and_undefined(void)
{
	struct sec s = { .n = 0 };
	struct rows rs = { .n = 0 };
	size_t cie = eh_cie(&s, "zR");
	/* advance 1; def_cfa_offset 16; remember; advance 1; def_cfa_offset 32; advance 1;
	 * restore_state; advance 1; undefined r16 */
	static const char prog[] = "\x41\x0e\x10\x0a\x41\x0e\x20\x41\x0b\x41\x07\x10";

	eh_fde(&s, cie, 0, 0x100, 8, prog, sizeof(prog) - 1);
	CHECK_EQ_INT(cfi_parse(s.b, s.n, 0, CFI_EH_FRAME, collect, &rs, NULL, NULL), 0);
	CHECK_EQ_INT(rs.n, 5);
	CHECK_EQ_INT(rs.r[1].cfa_off, 16);
	CHECK_EQ_INT(rs.r[2].cfa_off, 32);
	CHECK_EQ_INT(rs.r[3].cfa_off, 16);
	CHECK_EQ_INT(rs.r[4].start, 0x104);
	CHECK_EQ_INT(rs.r[4].ra_kind, CFI_R_UNDEF);
}

static void test_plt_signal_deref(void)
{
	struct sec s = { .n = 0 };
	struct rows rs = { .n = 0 };
	size_t cie = eh_cie(&s, "zR"), scie;
	/* def_cfa_expression: breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus */
	static const char plt[] = "\x0f\x0b\x77\x08\x80\x00\x3f\x1a\x3b\x2a\x33\x24\x22";
	/* def_cfa_expression: breg6 -8; deref; expression r6: breg6 0 */
	static const char drap[] = "\x0f\x03\x76\x78\x06\x10\x06\x02\x76\x00";

	eh_fde(&s, cie, 0, 0x500, 0x10, plt, sizeof(plt) - 1);
	eh_fde(&s, cie, 0, 0x600, 0x10, drap, sizeof(drap) - 1);
	scie = eh_cie(&s, "zRS");
	eh_fde(&s, scie, 0, 0x700, 0x8, "", 0);
	CHECK_EQ_INT(cfi_parse(s.b, s.n, 0, CFI_EH_FRAME, collect, &rs, NULL, NULL), 0);
	CHECK_EQ_INT(rs.n, 3);
	CHECK_EQ_INT(rs.r[0].cfa_kind, CFI_CFA_PLT);
	CHECK_EQ_INT(rs.r[0].cfa_off, 8);
	CHECK_EQ_INT(rs.r[0].plt_thresh, 11);
	CHECK_EQ_INT(rs.r[1].cfa_kind, CFI_CFA_DEREF);
	CHECK_EQ_INT(rs.r[1].cfa_reg, CFI_REG_RBP);
	CHECK_EQ_INT(rs.r[1].cfa_off, -8);
	CHECK_EQ_INT(rs.r[1].rbp_kind, CFI_R_AT_RBP);
	CHECK_EQ_INT(rs.r[1].rbp_off, 0);
	CHECK_EQ_INT(rs.r[2].signal, 1);
	CHECK_EQ_INT(rs.r[2].start, 0x700);
}

static void test_debug_frame(void)
{
	struct sec s = { .n = 0 };
	struct rows rs = { .n = 0 };
	size_t cie = s.n, fde;

	u32(&s, 0);
	u32(&s, 0xffffffffu);
	u8(&s, 3);
	u8(&s, 0);    /* no augmentation */
	u8(&s, 1);
	u8(&s, 0x78);
	u8(&s, 16);
	bytes(&s, "\x0c\x07\x08\x90\x01", 5);
	patch32(&s, cie, (uint32_t)(s.n - cie - 4));
	fde = s.n;
	u32(&s, 0);
	u32(&s, (uint32_t)cie);
	u64(&s, 0x401000);
	u64(&s, 0x40);
	bytes(&s, "\x44\x0e\x20", 3);
	patch32(&s, fde, (uint32_t)(s.n - fde - 4));
	CHECK_EQ_INT(cfi_parse(s.b, s.n, 0, CFI_DEBUG_FRAME, collect, &rs, NULL, NULL), 0);
	CHECK_EQ_INT(rs.n, 2);
	CHECK_EQ_INT(rs.r[0].start, 0x401000);
	CHECK_EQ_INT(rs.r[0].end, 0x401004);
	CHECK_EQ_INT(rs.r[1].cfa_off, 32);
	CHECK_EQ_INT(rs.r[1].end, 0x401040);
}

static void test_malformed(void)
{
	struct sec s = { .n = 0 };
	struct rows rs = { .n = 0 };
	struct cfi_stats st = { 0 };
	size_t cie = eh_cie(&s, "zR"), fde;
	struct errmsg err;
	static const uint8_t huge[8] = { 0xf0, 0xff, 0xff, 0xff, 0, 0, 0, 0 };

	/* an FDE pointing before the section start */
	fde = s.n;
	u32(&s, 12);
	u32(&s, (uint32_t)(s.n + 100));
	u32(&s, 0);
	u32(&s, 0);
	/* an FDE whose program uses an unknown opcode */
	eh_fde(&s, cie, 0, 0x10, 4, "\x41\x3f", 2);
	/* a length running past the end */
	u32(&s, 0x1000);
	CHECK_EQ_INT(cfi_parse(s.b, s.n, 0, CFI_EH_FRAME, collect, &rs, &st, NULL), 0);
	CHECK(st.bad_entries >= 3);
	CHECK_EQ_INT(rs.n, 1); /* the row before the bad opcode */
	(void)fde;
	CHECK_EQ_INT(cfi_parse(huge, sizeof(huge), 0, CFI_EH_FRAME, collect, &rs, NULL, &err), -EINVAL);
	CHECK_EQ_INT(cfi_parse(NULL, 0, 0, CFI_EH_FRAME, collect, &rs, NULL, NULL), 0);
	/* every truncation of a valid section is handled */
	{
		struct sec v = { .n = 0 };
		size_t c = eh_cie(&v, "zR"), cut;

		eh_fde(&v, c, 0, 0x2000, 0x20, "\x41\x0e\x10\x86\x02", 5);
		for (cut = 0; cut < v.n; cut++)
			cfi_parse(v.b, cut, 0, CFI_EH_FRAME, collect, &(struct rows){ .n = 0 }, NULL, NULL);
	}
}

/* An .eh_frame_hdr at hdr_va for the FDEs at offsets fde[i] (of a section at eh_va) starting at
 * pc[i], listed in the given order. */
static void eh_hdr(struct sec *h, uint64_t hdr_va, uint64_t eh_va, const size_t *fde,
		   const uint64_t *pc, size_t n)
{
	size_t i;

	u8(h, 1);
	u8(h, 0x1b); /* eh_frame_ptr: pcrel sdata4 */
	u8(h, 0x03); /* fde_count: udata4 */
	u8(h, 0x3b); /* table: datarel sdata4 */
	u32(h, (uint32_t)(int32_t)(eh_va - (hdr_va + h->n)));
	u32(h, (uint32_t)n);
	for (i = 0; i < n; i++) {
		u32(h, (uint32_t)(int32_t)(pc[i] - hdr_va));
		u32(h, (uint32_t)(int32_t)(eh_va + fde[i] - hdr_va));
	}
}

/* The index gives the FDEs in address order; an index that does not describe the section is
 * refused before any row is reported. */
static void test_sorted_by_index(void)
{
	struct sec s = { .n = 0 }, h = { .n = 0 };
	struct rows rs = { .n = 0 };
	struct cfi_stats st = { 0 };
	uint64_t eh_va = 0x1000, hdr_va = 0x800;
	uint64_t pc[3] = { 0x2000, 0x3000, 0x4000 };
	size_t cie = eh_cie(&s, "zR"), fde[3];
	int i;

	/* in the section: 0x4000, 0x2000, 0x3000 (as a linker places cold code) */
	fde[2] = s.n;
	eh_fde(&s, cie, eh_va, 0x4000, 0x10, "\x41\x0e\x10", 3);
	fde[0] = s.n;
	eh_fde(&s, cie, eh_va, 0x2000, 0x10, "\x41\x0e\x10", 3);
	fde[1] = s.n;
	eh_fde(&s, cie, eh_va, 0x3000, 0x10, "", 0);
	u32(&s, 0);
	eh_hdr(&h, hdr_va, eh_va, fde, pc, 3);
	CHECK_EQ_INT(cfi_parse_sorted(s.b, s.n, eh_va, h.b, h.n, hdr_va, collect, &rs, &st), 0);
	CHECK_EQ_INT(st.fdes, 3);
	CHECK_EQ_INT(rs.n, 5);
	for (i = 1; i < rs.n; i++)
		CHECK(rs.r[i].start >= rs.r[i - 1].end);
	CHECK_EQ_INT(rs.r[0].start, 0x2000);
	CHECK_EQ_INT(rs.r[2].start, 0x3000);
	CHECK_EQ_INT(rs.r[4].end, 0x4010);

	/* refused: not sorted */
	{
		struct sec bad = { .n = 0 };
		size_t f2[3] = { fde[1], fde[0], fde[2] };
		uint64_t p2[3] = { pc[1], pc[0], pc[2] };

		eh_hdr(&bad, hdr_va, eh_va, f2, p2, 3);
		rs.n = 0;
		CHECK_EQ_INT(cfi_parse_sorted(s.b, s.n, eh_va, bad.b, bad.n, hdr_va, collect, &rs,
					      NULL), -ENOENT);
		CHECK_EQ_INT(rs.n, 0);
	}
	/* refused: an FDE missing from the index */
	{
		struct sec bad = { .n = 0 };

		eh_hdr(&bad, hdr_va, eh_va, fde, pc, 2);
		CHECK_EQ_INT(cfi_parse_sorted(s.b, s.n, eh_va, bad.b, bad.n, hdr_va, collect, &rs,
					      NULL), -ENOENT);
	}
	/* refused: an entry outside the section, another section, a count past the end */
	{
		struct sec bad = { .n = 0 };
		size_t f2[3] = { fde[0], fde[1], 4096 };

		eh_hdr(&bad, hdr_va, eh_va, f2, pc, 3);
		CHECK_EQ_INT(cfi_parse_sorted(s.b, s.n, eh_va, bad.b, bad.n, hdr_va, collect, &rs,
					      NULL), -ENOENT);
		CHECK_EQ_INT(cfi_parse_sorted(s.b, s.n, eh_va + 8, h.b, h.n, hdr_va, collect, &rs,
					      NULL), -ENOENT);
		bad.n = 0;
		eh_hdr(&bad, hdr_va, eh_va, fde, pc, 3);
		patch32(&bad, 8, 1000);
		CHECK_EQ_INT(cfi_parse_sorted(s.b, s.n, eh_va, bad.b, bad.n, hdr_va, collect, &rs,
					      NULL), -ENOENT);
		CHECK_EQ_INT(rs.n, 0);
	}
	/* an entry that names a CIE is skipped as malformed, like a bad FDE in a walk */
	{
		struct sec odd = { .n = 0 };
		size_t f2[3] = { fde[0], cie, fde[2] };

		eh_hdr(&odd, hdr_va, eh_va, f2, pc, 3);
		memset(&st, 0, sizeof(st));
		CHECK_EQ_INT(cfi_parse_sorted(s.b, s.n, eh_va, odd.b, odd.n, hdr_va, collect, &rs,
					      &st), 0);
		CHECK_EQ_INT(st.bad_entries, 1);
		CHECK_EQ_INT(rs.n, 4);
	}
	/* every truncation of the index is handled */
	{
		size_t cut;

		for (cut = 0; cut < h.n; cut++)
			cfi_parse_sorted(s.b, s.n, eh_va, h.b, cut, hdr_va, collect,
					 &(struct rows){ .n = 0 }, NULL);
	}
}

/* Function starts: FDEs in any order, a gap, an FDE inside another, one outside the code, an
 * empty one; a lookup names the FDE that holds the address, nothing in a gap. */
static void test_fde_index(void)
{
	struct sec s = { .n = 0 };
	struct fde_index *x = NULL;
	struct errmsg err;
	uint64_t va = 0x800, st = 0;
	size_t cie = eh_cie(&s, "zR");

	eh_fde(&s, cie, va, 0x3000, 0x40, "\x41\x0e\x10", 3);
	eh_fde(&s, cie, va, 0x1000, 0x100, "", 0);
	eh_fde(&s, cie, va, 0x1080, 0x10, "", 0);   /* inside the one above */
	eh_fde(&s, cie, va, 0x1000, 0x20, "", 0);   /* same start, shorter: the longer kept */
	eh_fde(&s, cie, va, 0x2000, 0, "", 0);      /* empty */
	eh_fde(&s, cie, va, 0x90000, 0x10, "", 0);  /* outside [lo, hi) */
	eh_fde(&s, cie, va, 0x200, 0x10, "", 0);    /* below lo */
	u32(&s, 0);
	CHECK_EQ_INT(fde_index_build_cfi(s.b, s.n, va, CFI_EH_FRAME, 0x1000, 0x10000, &x, &err), 0);
	CHECK_EQ_INT(fde_index_count(x), 3);
	CHECK(fde_index_bytes(x) > 0);
	CHECK_EQ_INT(fde_index_lookup(x, 0x1000, &st), 1);
	CHECK_EQ_INT(st, 0x1000);
	CHECK_EQ_INT(fde_index_lookup(x, 0x10ff, &st), 1);
	CHECK_EQ_INT(st, 0x1000);
	CHECK_EQ_INT(fde_index_lookup(x, 0x1085, &st), 1);
	CHECK_EQ_INT(st, 0x1080); /* the one that starts last */
	CHECK_EQ_INT(fde_index_lookup(x, 0x1090, &st), 1); /* past the inner one: the outer */
	CHECK_EQ_INT(st, 0x1000);
	CHECK_EQ_INT(fde_index_lookup(x, 0x1100, &st), 0); /* the gap */
	CHECK_EQ_INT(fde_index_lookup(x, 0x2000, &st), 0);
	CHECK_EQ_INT(fde_index_lookup(x, 0x303f, &st), 1);
	CHECK_EQ_INT(st, 0x3000);
	CHECK_EQ_INT(fde_index_lookup(x, 0x3040, &st), 0);
	CHECK_EQ_INT(fde_index_lookup(x, 0x205, &st), 0);
	CHECK_EQ_INT(fde_index_lookup(x, 0x90005, &st), 0);
	CHECK_EQ_INT(fde_index_lookup(x, 0xfff, &st), 0);
	CHECK_EQ_INT(fde_index_lookup(x, UINT64_MAX, &st), 0);
	CHECK_EQ_INT(fde_index_lookup(NULL, 0x1000, &st), 0);
	fde_index_free(x);
	/* nothing inside the code */
	CHECK_EQ_INT(fde_index_build_cfi(s.b, s.n, va, CFI_EH_FRAME, 0x100000, 0x200000, &x, &err),
		     -ENOENT);
	CHECK(x == NULL);
	/* a section that cannot be walked */
	CHECK_EQ_INT(fde_index_build_cfi((const uint8_t *)"\xf0\xff\xff\xff", 4, va, CFI_EH_FRAME,
					 0, 0x10000, &x, &err), -EINVAL);
	fde_index_free(NULL);
}

/* On a real file, this test's own binary: every function of the index's own source starts
 * where its symbol says (gcc gives each function an FDE). */
static void test_fde_index_self(void)
{
	struct elf_file *e = NULL;
	struct fde_index *x = NULL;
	struct errmsg err;
	const struct elf_symbol *syms;
	size_t n = 0, i, checked = 0;

	CHECK_EQ_INT(elf_open("/proc/self/exe", &e, &err), 0);
	if (!e)
		return;
	CHECK_EQ_INT(fde_index_build(e, &x, &err), 0);
	CHECK(fde_index_count(x) > 100);
	CHECK_EQ_INT(elf_symbols_load(e, &err), 0);
	syms = elf_symbols(e, &n);
	for (i = 0; i < n; i++) {
		const char *name = elf_symbol_name(e, &syms[i]);
		uint64_t st = 0;

		if (!name || syms[i].size < 2 || strncmp(name, "fde_index_", 10))
			continue;
		checked++;
		CHECK_EQ_INT(fde_index_lookup(x, syms[i].addr + syms[i].size / 2, &st), 1);
		CHECK_EQ_INT(st, syms[i].addr);
		CHECK_EQ_INT(fde_index_lookup(x, syms[i].addr + syms[i].size - 1, &st), 1);
		CHECK_EQ_INT(st, syms[i].addr);
	}
	CHECK(checked >= 5);
	fde_index_free(x);
	elf_close(e);
}

int main(void)
{
	RUN(test_prologue_rows);
	RUN(test_remember_restore_and_undefined);
	RUN(test_plt_signal_deref);
	RUN(test_debug_frame);
	RUN(test_malformed);
	RUN(test_sorted_by_index);
	RUN(test_fde_index);
	RUN(test_fde_index_self);
	return test_summary();
}
