/* test_unwind_table.c: unwind tables from hand-made CFI (rules, gaps, priorities, interpreter
 * ranges), tables of real files, and the unwind step compiled as plain C replaying the recorded
 * stack of a helper built without frame pointers (tests/helpers/unwind_chain.c), stopped under
 * ptrace at a known point. */
#include "agent/cfi.h"
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "agent/unwind_table.h"
#include "agent/unwinder.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

struct sec {
	uint8_t b[2048];
	size_t n;
};

static void put(struct sec *s, const void *p, size_t n)
{
	memcpy(s->b + s->n, p, n);
	s->n += n;
}
static void u8(struct sec *s, uint8_t v) { put(s, &v, 1); }
static void u32(struct sec *s, uint32_t v) { put(s, &v, 4); }
static void patch32(struct sec *s, size_t at, uint32_t v) { memcpy(s->b + at, &v, 4); }

static size_t eh_cie(struct sec *s)
{
	size_t start = s->n;

	u32(s, 0);
	u32(s, 0);
	u8(s, 1);
	put(s, "zR", 3);
	u8(s, 1);
	u8(s, 0x78);
	u8(s, 16);
	u8(s, 1);
	u8(s, 0x1b);
	put(s, "\x0c\x07\x08\x90\x01", 5);
	while ((s->n - start) % 8)
		u8(s, 0);
	patch32(s, start, (uint32_t)(s->n - start - 4));
	return start;
}

static void eh_fde(struct sec *s, size_t cie, uint64_t pc, uint32_t range, const char *prog,
		   size_t plen)
{
	size_t start = s->n;

	u32(s, 0);
	u32(s, (uint32_t)(s->n - cie));
	u32(s, (uint32_t)(int32_t)(pc - s->n));
	u32(s, range);
	u8(s, 0);
	put(s, prog, plen);
	while ((s->n - start) % 8)
		u8(s, 0);
	patch32(s, start, (uint32_t)(s->n - start - 4));
}

static const char *rule_at(const struct unwind_table *t, uint64_t pc, char *buf, size_t size)
{
	const struct unwind_entry *e = unwind_table_lookup(t, pc);

	return e ? unwind_rule_str(e, buf, size) : "none";
}

static void test_table_rules_and_gaps(void)
{
	struct sec s = { .n = 0 };
	struct unwind_table t;
	struct errmsg err;
	struct unwind_range interp = { 0x3008, 0x3010 };
	char buf[64];
	size_t cie = eh_cie(&s);

	/* f1 [0x1000, 0x1010): push rbp at +1, CFA from rbp at +4 */
	eh_fde(&s, cie, 0x1000, 0x10, "\x41\x0e\x10\x86\x02\x43\x0d\x06", 8);
	/* f2 right after padding [0x1020, 0x1030): a leaf */
	eh_fde(&s, cie, 0x1020, 0x10, "", 0);
	/* f3 after a large gap [0x3000, 0x3020): sub rsp at +4 */
	eh_fde(&s, cie, 0x3000, 0x20, "\x44\x0e\x40", 3);
	u32(&s, 0);
	CHECK_EQ_INT(unwind_table_from_cfi(s.b, s.n, 0, NULL, 0, &interp, 1, &t, &err), 0);
	CHECK_EQ_INT(t.base, 0x1000);
	CHECK_EQ_STR(rule_at(&t, 0x0fff, buf, sizeof(buf)), "none");
	CHECK_EQ_STR(rule_at(&t, 0x1000, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK_EQ_STR(rule_at(&t, 0x1001, buf, sizeof(buf)), "cfa=rsp+16 rbp=cfa-16");
	CHECK_EQ_STR(rule_at(&t, 0x100f, buf, sizeof(buf)), "cfa=rbp+16 rbp=cfa-16");
	/* padding (< 32 bytes) keeps the previous rule; no code runs there */
	CHECK_EQ_STR(rule_at(&t, 0x1018, buf, sizeof(buf)), "cfa=rbp+16 rbp=cfa-16");
	CHECK_EQ_STR(rule_at(&t, 0x1020, buf, sizeof(buf)), "cfa=rsp+8");
	/* a real gap has no rule */
	CHECK_EQ_STR(rule_at(&t, 0x2000, buf, sizeof(buf)), "invalid");
	CHECK_EQ_STR(rule_at(&t, 0x3003, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK_EQ_STR(rule_at(&t, 0x3004, buf, sizeof(buf)), "cfa=rsp+64");
	CHECK_EQ_STR(rule_at(&t, 0x3008, buf, sizeof(buf)), "cfa=rsp+64 interp");
	CHECK_EQ_STR(rule_at(&t, 0x300f, buf, sizeof(buf)), "cfa=rsp+64 interp");
	CHECK_EQ_STR(rule_at(&t, 0x3010, buf, sizeof(buf)), "cfa=rsp+64");
	CHECK_EQ_STR(rule_at(&t, 0x3020, buf, sizeof(buf)), "invalid");
	CHECK_EQ_INT(t.entries[t.count - 1].kind, UNW_INVALID);
	CHECK(t.interp);
	CHECK_EQ_INT(t.stats.sources, UT_SRC_EH_FRAME);
	unwind_table_release(&t);
}

static void test_rule_conversion(void)
{
	struct cfi_row r;
	struct unwind_entry e;

	memset(&r, 0, sizeof(r));
	r.cfa_kind = CFI_CFA_REG;
	r.cfa_reg = CFI_REG_RSP;
	r.cfa_off = 8;
	r.ra_kind = CFI_R_OFFSET;
	r.ra_off = -8;
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 1);
	CHECK_EQ_INT(e.kind, UNW_CFA_RSP);
	r.cfa_reg = 10; /* the DRAP register */
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 0);
	CHECK_EQ_INT(e.kind, UNW_INVALID);
	r.cfa_reg = CFI_REG_RSP;
	/* frames of 64 KiB and more: in 8-byte units (rustc's run_compiler closure) */
	r.cfa_off = 540080;
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 1);
	CHECK_EQ_INT(e.kind & UNW_KIND_MASK, UNW_CFA_RSP);
	CHECK(e.kind & UNW_F_BIG);
	CHECK_EQ_INT(UNW_CFA_OFF(&e), 540080);
	r.cfa_off = (1 << 21) - 8;
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 1);
	CHECK_EQ_INT(UNW_CFA_OFF(&e), (1 << 21) - 8);
	r.cfa_off = 0x10004; /* big and not 8-aligned */
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 0);
	r.cfa_off = 1 << 21; /* too big */
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 0);
	r.cfa_off = 0xffff; /* the largest small one */
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 1);
	CHECK_EQ_INT(e.kind, UNW_CFA_RSP);
	CHECK_EQ_INT(UNW_CFA_OFF(&e), 0xffff);
	r.cfa_off = 16;
	r.ra_off = -16; /* return address not at CFA - 8 */
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 0);
	r.ra_off = -8;
	r.rbp_kind = CFI_R_OFFSET;
	r.rbp_off = -12; /* not 8-aligned */
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 0);
	r.rbp_off = -24;
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 1);
	CHECK_EQ_INT(e.rbp, -3);
	r.ra_kind = CFI_R_UNDEF;
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 1);
	CHECK_EQ_INT(e.kind, UNW_STOP);
	r.signal = 1;
	CHECK_EQ_INT(unwind_rule_from_cfi(&r, &e), 1);
	CHECK_EQ_INT(e.kind, UNW_SIGNAL);
}

static void test_debug_frame_fills_gaps_only(void)
{
	struct sec eh = { .n = 0 }, df = { .n = 0 };
	struct unwind_table t;
	struct errmsg err;
	char buf[64];
	size_t cie = eh_cie(&eh), dcie, fde;
	uint64_t v;

	eh_fde(&eh, cie, 0x1000, 0x10, "\x41\x0e\x10", 3);
	/* .debug_frame: claims [0x1000, 0x1100) with CFA = rsp + 24 everywhere */
	dcie = df.n;
	u32(&df, 0);
	u32(&df, 0xffffffffu);
	u8(&df, 3);
	u8(&df, 0);
	u8(&df, 1);
	u8(&df, 0x78);
	u8(&df, 16);
	put(&df, "\x0c\x07\x18\x90\x01", 5);
	patch32(&df, dcie, (uint32_t)(df.n - dcie - 4));
	fde = df.n;
	u32(&df, 0);
	u32(&df, (uint32_t)dcie);
	v = 0x1000;
	put(&df, &v, 8);
	v = 0x100;
	put(&df, &v, 8);
	patch32(&df, fde, (uint32_t)(df.n - fde - 4));
	CHECK_EQ_INT(unwind_table_from_cfi(eh.b, eh.n, 0, df.b, df.n, NULL, 0, &t, &err), 0);
	CHECK_EQ_STR(rule_at(&t, 0x1000, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK_EQ_STR(rule_at(&t, 0x1005, buf, sizeof(buf)), "cfa=rsp+16");
	CHECK_EQ_STR(rule_at(&t, 0x1010, buf, sizeof(buf)), "cfa=rsp+24");
	CHECK_EQ_STR(rule_at(&t, 0x10ff, buf, sizeof(buf)), "cfa=rsp+24");
	CHECK_EQ_STR(rule_at(&t, 0x1100, buf, sizeof(buf)), "invalid");
	CHECK_EQ_INT(t.stats.sources, UT_SRC_EH_FRAME | UT_SRC_DEBUG_FRAME);
	unwind_table_release(&t);
	CHECK_EQ_INT(unwind_table_from_cfi(NULL, 0, 0, NULL, 0, NULL, 0, &t, &err), -ENOENT);
}

/* A .debug_frame CIE (CFA = rsp + 8, RA at CFA - 8) and an FDE with "def_cfa_offset off". */
static size_t df_cie(struct sec *s)
{
	size_t start = s->n;

	u32(s, 0);
	u32(s, 0xffffffffu);
	u8(s, 3);
	u8(s, 0);
	u8(s, 1);
	u8(s, 0x78);
	u8(s, 16);
	put(s, "\x0c\x07\x08\x90\x01", 5);
	patch32(s, start, (uint32_t)(s->n - start - 4));
	return start;
}

static void df_fde(struct sec *s, size_t cie, uint64_t pc, uint64_t range, uint8_t cfa_off)
{
	size_t start = s->n;

	u32(s, 0);
	u32(s, (uint32_t)cie);
	put(s, &pc, 8);
	put(s, &range, 8);
	u8(s, 0x0e);
	u8(s, cfa_off);
	patch32(s, start, (uint32_t)(s->n - start - 4));
}

static int same_table(const struct unwind_table *a, const struct unwind_table *b)
{
	return a->base == b->base && a->count == b->count &&
	       !memcmp(a->entries, b->entries, a->count * sizeof(*a->entries));
}

/* FDEs out of address order (cold code placed apart), an overlapping FDE: the table is the same
 * whether the rows come sorted through .eh_frame_hdr or are sorted afterwards, and the earlier
 * FDE wins the overlap. */
static void test_unsorted_rows(void)
{
	struct sec s = { .n = 0 }, h = { .n = 0 };
	struct unwind_cfi_sections sec;
	struct unwind_table a, b;
	struct errmsg err;
	char buf[64];
	size_t cie = eh_cie(&s), fde[4], i;
	uint64_t pc[4] = { 0x1000, 0x1008, 0x2000, 0x3000 }, hdr_va = 0x10000;

	fde[3] = s.n;
	eh_fde(&s, cie, 0x3000, 0x20, "\x44\x0e\x40", 3);
	fde[0] = s.n;
	eh_fde(&s, cie, 0x1000, 0x10, "\x41\x0e\x10", 3);
	fde[2] = s.n;
	eh_fde(&s, cie, 0x2000, 0x10, "", 0);
	fde[1] = s.n; /* overlaps the one at 0x1000 */
	eh_fde(&s, cie, 0x1008, 0x10, "\x0e\x20", 2);
	u32(&s, 0);
	u8(&h, 1);
	u8(&h, 0x1b);
	u8(&h, 0x03);
	u8(&h, 0x3b);
	u32(&h, (uint32_t)(int32_t)(0 - (hdr_va + 4)));
	u32(&h, 4);
	for (i = 0; i < 4; i++) {
		u32(&h, (uint32_t)(int32_t)(pc[i] - hdr_va));
		u32(&h, (uint32_t)(int32_t)(fde[i] - hdr_va));
	}
	CHECK_EQ_INT(unwind_table_from_cfi(s.b, s.n, 0, NULL, 0, NULL, 0, &a, &err), 0);
	memset(&sec, 0, sizeof(sec));
	sec.eh = s.b;
	sec.eh_size = s.n;
	sec.eh_hdr = h.b;
	sec.eh_hdr_size = h.n;
	sec.eh_hdr_vaddr = hdr_va;
	CHECK_EQ_INT(unwind_table_from_sections(&sec, NULL, 0, &b, &err), 0);
	CHECK(same_table(&a, &b));
	CHECK_EQ_STR(rule_at(&b, 0x1000, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK_EQ_STR(rule_at(&b, 0x100f, buf, sizeof(buf)), "cfa=rsp+16");
	CHECK_EQ_STR(rule_at(&b, 0x1010, buf, sizeof(buf)), "cfa=rsp+32"); /* the overlap's rest */
	CHECK_EQ_STR(rule_at(&b, 0x2000, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK_EQ_STR(rule_at(&b, 0x3004, buf, sizeof(buf)), "cfa=rsp+64");
	CHECK_EQ_STR(rule_at(&b, 0x3020, buf, sizeof(buf)), "invalid");
	unwind_table_release(&a);
	unwind_table_release(&b);
}

/* A lower-priority row that reaches past a higher-priority one must still yield to it for the
 * rows after it: .debug_frame [0xf00, 0x1005) and [0x1008, 0x1020) around .eh_frame
 * [0x1000, 0x1010). */
static void test_lower_level_around_higher(void)
{
	struct sec eh = { .n = 0 }, df = { .n = 0 };
	struct unwind_table t;
	struct errmsg err;
	char buf[64];
	size_t cie = eh_cie(&eh), dcie = df_cie(&df);

	eh_fde(&eh, cie, 0x1000, 0x10, "", 0);
	df_fde(&df, dcie, 0xf00, 0x105, 24);
	df_fde(&df, dcie, 0x1008, 0x18, 32);
	CHECK_EQ_INT(unwind_table_from_cfi(eh.b, eh.n, 0, df.b, df.n, NULL, 0, &t, &err), 0);
	CHECK_EQ_INT(t.base, 0xf00);
	CHECK_EQ_STR(rule_at(&t, 0xf00, buf, sizeof(buf)), "cfa=rsp+24");
	CHECK_EQ_STR(rule_at(&t, 0x1000, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK_EQ_STR(rule_at(&t, 0x100f, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK_EQ_STR(rule_at(&t, 0x1010, buf, sizeof(buf)), "cfa=rsp+32");
	CHECK_EQ_STR(rule_at(&t, 0x101f, buf, sizeof(buf)), "cfa=rsp+32");
	CHECK_EQ_STR(rule_at(&t, 0x1020, buf, sizeof(buf)), "invalid");
	unwind_table_release(&t);
}

/* libc's table: the signal trampoline, the PLT and a plain function. */
static void test_real_libc(void)
{
	struct elf_file *e;
	struct unwind_table t;
	struct errmsg err;
	const struct unwind_entry *x;
	uint64_t v, sz;
	size_t i;
	int signals = 0, stops = 0;

	if (elf_open("/lib/x86_64-linux-gnu/libc.so.6", &e, &err))
		SKIP("no libc.so.6: %s", err.msg);
	CHECK_EQ_INT(unwind_table_build(e, NULL, NULL, 0, &t, &err), 0);
	CHECK(t.count > 1000);
	CHECK(t.stats.sources & UT_SRC_EH_FRAME);
	for (i = 0; i < t.count; i++) {
		signals += (t.entries[i].kind & UNW_KIND_MASK) == UNW_SIGNAL;
		stops += (t.entries[i].kind & UNW_KIND_MASK) == UNW_STOP;
	}
	CHECK(signals >= 1); /* __restore_rt */
	CHECK(stops >= 1);   /* clone3's child, thread start */
	if (elf_find_symbol(e, "qsort", &v, &sz) == 0) {
		x = unwind_table_lookup(&t, v);
		CHECK(x && (x->kind & UNW_KIND_MASK) == UNW_CFA_RSP && x->off == 8);
	}
	/* __vfork: `pop %rdi` keeps the return address in rdi across the syscall
	 * (DW_CFA_register): the leaf rule UNW_RA_REG, CFA = rsp */
	if (elf_find_symbol(e, "__vfork", &v, &sz) == 0 && sz > 8) {
		x = unwind_table_lookup(&t, v + 1);
		CHECK(x && (x->kind & UNW_KIND_MASK) == UNW_RA_REG && x->off == 0 &&
		      x->rbp == UNW_DWARF_RDI);
		x = unwind_table_lookup(&t, v);
		CHECK(x && (x->kind & UNW_KIND_MASK) == UNW_CFA_RSP && x->off == 8);
	}
	unwind_table_release(&t);
	elf_close(e);
}

/* ---- a recorded stack */
static char helper_path[4096];

static int find_helper(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -1;
	self[n] = 0;
	snprintf(helper_path, sizeof(helper_path), "%s/../helpers/unwind_chain", dirname(self));
	return access(helper_path, X_OK);
}

struct recorded {
	pid_t pid;
	struct user_regs_struct regs;
	uint8_t *stack;
	size_t len;
};

/* Start the helper in a stop mode and record its registers and stack. */
static int record_helper(const char *mode, const char *arg, struct recorded *r)
{
	char path[64];
	int status, fd;
	size_t cap = 1 << 20;

	memset(r, 0, sizeof(*r));
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (r->pid == 0) {
		execl(helper_path, helper_path, mode, arg, (char *)NULL);
		_exit(127);
	}
	if (waitpid(r->pid, &status, 0) != r->pid || !WIFSTOPPED(status))
		return -1;
	/* Other signals (the helper's own SIGUSR1) stop a tracee too: deliver them. */
	while (WSTOPSIG(status) != SIGSTOP) {
		int sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);

		ptrace(PTRACE_CONT, r->pid, NULL, (void *)(long)sig);
		if (waitpid(r->pid, &status, 0) != r->pid || !WIFSTOPPED(status))
			return -1;
	}
	if (ptrace(PTRACE_GETREGS, r->pid, NULL, &r->regs) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)r->pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	r->stack = xmalloc(cap);
	/* page by page up to the end of the stack mapping */
	while (r->len < cap) {
		uint64_t addr = r->regs.rsp + r->len;
		size_t chunk = 4096 - (addr & 4095);
		ssize_t got = pread(fd, r->stack + r->len, chunk, (off_t)addr);

		if (got <= 0)
			break;
		r->len += (size_t)got;
	}
	close(fd);
	return 0;
}

static void recorded_release(struct recorded *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	xfree(r->stack);
}

/* Names of the frames that fall in the helper executable, leaf first, joined by ';'. */
static void helper_names(int pid, const uint64_t *w, size_t n, char *out, size_t size)
{
	struct procmaps pm;
	struct elf_file *e = NULL;
	uint64_t bias = 0;
	size_t i, len = 0;
	int have = 0;

	out[0] = 0;
	if (procmaps_read(pid, &pm, NULL) == 0 && elf_open(helper_path, &e, NULL) == 0) {
		for (i = 0; i < pm.n; i++) {
			if (pm.v[i].kind == PROCMAPS_FILE && strstr(pm.v[i].path, "unwind_chain") &&
			    pm.v[i].offset == 0) {
				bias = elf_load_bias(e, pm.v[i].start, 0);
				have = 1;
				break;
			}
		}
	}
	for (i = 0; have && i < n; i++) {
		const struct elf_symbol *sym;
		uint64_t a = w[i];

		if (w[i] >> FW_TAG_SHIFT)
			continue;
		if (i > 0)
			a--; /* return address */
		sym = elf_symbol_lookup(e, a - bias);
		if (!sym)
			continue;
		len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ";" : "",
					elf_symbol_name(e, sym));
		if (len >= size)
			break;
	}
	procmaps_release(&pm);
	elf_close(e);
}

static void test_recorded_chain(void)
{
	struct recorded r;
	struct unwinder *u;
	uint64_t words[MAX_USER_WORDS];
	uint32_t result = 0;
	size_t n;
	char names[8192];
	struct errmsg err;

	if (find_helper())
		SKIP("helper %s not built", helper_path);
	if (record_helper("stop", "0", &r)) {
		recorded_release(&r);
		SKIP("cannot trace the helper (ptrace not permitted?)");
	}
	u = unwinder_new(NULL, NULL, &err);
	CHECK(u != NULL);
	CHECK_EQ_INT(unwinder_track_pid(u, r.pid), 0);
	n = unwinder_unwind(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack, r.len, words,
			    MAX_USER_WORDS, &result);
	CHECK_EQ_INT(result, USTAT_COMPLETE);
	CHECK(n > 10);
	helper_names(r.pid, words, n, names, sizeof(names));
	/* raise -> libc -> the signal frame -> handler -> ... -> qsort's callback -> ... -> _start */
	CHECK_EQ_STR(names, "leaf_spin;on_signal;cmp;level2;level1;main;_start");
	unwinder_free(u);
	recorded_release(&r);
}

static void test_recorded_deep(void)
{
	struct recorded r;
	struct unwinder *u;
	uint64_t *words = xcalloc(MAX_USER_WORDS, sizeof(uint64_t));
	uint32_t result = 0;
	size_t n, i, recurse = 0;
	char *names = xmalloc(65536), *p;
	struct errmsg err;

	if (find_helper() || record_helper("stopdeep", "500", &r)) {
		xfree(words);
		xfree(names);
		SKIP("helper not built or not traceable");
	}
	u = unwinder_new(NULL, NULL, &err);
	CHECK_EQ_INT(unwinder_track_pid(u, r.pid), 0);
	n = unwinder_unwind(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack, r.len, words,
			    MAX_USER_WORDS, &result);
	CHECK_EQ_INT(result, USTAT_COMPLETE);
	helper_names(r.pid, words, n, names, 65536);
	for (p = names; (p = strstr(p, "recurse")); p++)
		recurse++;
	CHECK_EQ_INT(recurse, 500); /* deep_start calls recurse(499) ... recurse(0) */
	CHECK(strstr(names, "leaf_spin;recurse;") == names);
	CHECK(strstr(names, "recurse;deep_start;main;_start") != NULL);
	/* a too small output is cut and says so */
	n = unwinder_unwind(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack, r.len, words, 64,
			    &result);
	CHECK_EQ_INT(result, USTAT_TRUNCATED);
	CHECK_EQ_INT(n, 64);
	CHECK_EQ_INT(words[63], (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_TRUNCATED);
	/* a stack copy that is too short ends in an error marker, never a crash */
	n = unwinder_unwind(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack, 256, words,
			    MAX_USER_WORDS, &result);
	CHECK_EQ_INT(result, USTAT_ERR_READ);
	CHECK_EQ_INT(words[n - 1], (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_UNWIND_ERROR);
	for (i = 0; i + 1 < n; i++)
		CHECK(words[i] >> FW_TAG_SHIFT == 0);
	unwinder_free(u);
	recorded_release(&r);
	xfree(words);
	xfree(names);
}

/* The interpreter hook of the user-space step: flag level2, level1 and main of the helper as
 * "eval loops" of a runtime and replay deferred segments at them, as unwinder_fix_sample()
 * does with a snapshot's deferred words. */
static int chain_interp(void *ctx, struct elf_file *e, const char *path, struct unwind_range *out,
			int max, uint8_t *kind)
{
	static const char *const names[] = { "level2", "level1", "main" };
	int i, n = 0;

	*kind = UNWINDER_NATIVE;
	if (!strstr(path, "unwind_chain"))
		return 0;
	for (i = 0; i < 3 && n < max; i++) {
		uint64_t v, size;

		if (elf_find_symbol(e, names[i], &v, &size) == 0 && size) {
			out[n].lo = v;
			out[n].hi = v + size;
			n++;
		}
	}
	*kind = UNWINDER_PYTHON;
	return n;
}

static void test_deferred_segments(void)
{
	const uint64_t end = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_SEGMENT_END;
	const uint64_t a1 = (FW_TAG_FIRST(UNWINDER_PYTHON) << FW_TAG_SHIFT) | 0xa1;
	const uint64_t a2 = (FW_TAG_FIRST(UNWINDER_PYTHON) << FW_TAG_SHIFT) | 0xa2;
	const uint64_t b1 = (FW_TAG_FIRST(UNWINDER_PYTHON) << FW_TAG_SHIFT) | 0xb1;
	/* level2: replaced by a1 a2; level1: empty segment, kept; main: b1 after it (keep) */
	const uint64_t deferred[] = { a1, a2, end, end, b1, end | FW_SEGMENT_KEEP_NATIVE, a1, end };
	struct unwinder_opts o = { .interp = chain_interp };
	struct unwind_mapping m;
	struct recorded r;
	struct unwinder *u;
	uint64_t words[MAX_USER_WORDS], plain[MAX_USER_WORDS];
	uint32_t result = 0, kinds;
	size_t n, np, i;
	char names[8192];
	struct errmsg err;
	struct unwinder_stats st;

	if (find_helper())
		SKIP("helper %s not built", helper_path);
	if (record_helper("stop", "0", &r)) {
		recorded_release(&r);
		SKIP("cannot trace the helper (ptrace not permitted?)");
	}
	u = unwinder_new(NULL, &o, &err);
	CHECK(u != NULL);
	CHECK_EQ_INT(unwinder_track_pid(u, r.pid), 0);
	np = unwinder_unwind(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack, r.len, plain,
			     MAX_USER_WORDS, &result);
	CHECK_EQ_INT(result, USTAT_COMPLETE);
	/* the helper's mapping carries the kind of the runtime flagged in it, libc's does not */
	for (i = 0, kinds = 0; i < np; i++)
		if (unwinder_lookup_mapping(u, r.pid, plain[i] - (i > 0), &m) == 0)
			kinds |= 1u << m.kind | ((m.flags & UNW_MAP_INTERP) ? 0x100 : 0);
	CHECK_EQ_INT(kinds, (1u << UNWINDER_NATIVE) | (1u << UNWINDER_PYTHON) | 0x100);
	helper_names(r.pid, plain, np, names, sizeof(names));
	CHECK_EQ_STR(names, "leaf_spin;on_signal;cmp;level2;level1;main;_start");
	n = unwinder_unwind_deferred(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack, r.len,
				     deferred, sizeof(deferred) / sizeof(deferred[0]), words,
				     MAX_USER_WORDS, &result);
	CHECK_EQ_INT(result, USTAT_COMPLETE);
	CHECK_EQ_INT(n, np + 2); /* -1 (level2) +2 (a1 a2) +1 (b1) */
	/* the first difference is level2, in place of which the deferred unwind has a1 a2 */
	for (i = 0; i < np && i < n && words[i] == plain[i]; i++)
		;
	CHECK(i + 4 < np && n > i + 5);
	if (i + 4 < np && n > i + 5) {
		CHECK_EQ_INT(words[i], a1);
		CHECK_EQ_INT(words[i + 1], a2);
		CHECK_EQ_INT(words[i + 2], plain[i + 1]); /* level1 kept (empty segment) */
		CHECK_EQ_INT(words[i + 3], plain[i + 2]); /* main kept ... */
		CHECK_EQ_INT(words[i + 4], b1);           /* ... with b1 after it */
		CHECK_EQ_INT(words[i + 5], plain[i + 3]); /* _start */
	}
	unwinder_stats(u, &st);
	CHECK_EQ_INT(st.deferred_segments, 2);
	/* fewer segments than eval frames: the rest stay native; a missing end marker is fine */
	n = unwinder_unwind_deferred(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack, r.len,
				     deferred, 2, words, MAX_USER_WORDS, &result);
	CHECK_EQ_INT(result, USTAT_COMPLETE);
	CHECK_EQ_INT(n, np + 1);
	/* an empty segment with FW_SEGMENT_DROP_NATIVE removes its native frame (level1) */
	{
		const uint64_t drop[] = { a1, end, end | FW_SEGMENT_DROP_NATIVE };

		n = unwinder_unwind_deferred(u, r.pid, r.regs.rip, r.regs.rsp, r.regs.rbp, r.stack,
					     r.len, drop, 3, words, MAX_USER_WORDS, &result);
		CHECK_EQ_INT(result, USTAT_COMPLETE);
		CHECK_EQ_INT(n, np - 1); /* level2 -> a1, level1 gone */
		for (i = 0; i < np && i < n && words[i] == plain[i]; i++)
			;
		CHECK(i + 3 < np && n > i + 2);
		if (i + 3 < np && n > i + 2) {
			CHECK_EQ_INT(words[i], a1);
			CHECK_EQ_INT(words[i + 1], plain[i + 2]); /* main */
		}
	}
	unwinder_free(u);
	recorded_release(&r);
}

/* A sample carrying a stack snapshot as BPF sends it: the first UNW_SNAPSHOT_MAX_BYTES in the
 * record, the rest in EVENT_STACK_CHUNK records sent before it (bpf/unwind.h). Returns the
 * record (xfree it) and its size. */
static struct event_hdr *snapshot_sample(const struct recorded *r, uint32_t nchunks, size_t *size)
{
	size_t first = r->len < UNW_SNAPSHOT_MAX_BYTES ? r->len & ~(size_t)7 : UNW_SNAPSHOT_MAX_BYTES;
	size_t words = UNW_SNAPSHOT_WORDS + first / 8;
	struct event_hdr *h;
	struct sample_body *b;
	uint64_t *w;

	*size = sizeof(*h) + sizeof(*b) + words * 8;
	h = xcalloc(1, *size);
	h->type = EVENT_SAMPLE;
	h->version = SCORCH_EVENT_VERSION;
	h->size = (uint16_t)*size;
	h->cpu = 1;
	h->pid = h->tid = (uint32_t)r->pid;
	h->time_ns = 123456789;
	b = (struct sample_body *)(h + 1);
	b->nuser = (uint16_t)words;
	w = (uint64_t *)(b + 1);
	w[0] = (FW_TAG_SNAPSHOT << FW_TAG_SHIFT) | ((uint64_t)nchunks << UNW_SNAPSHOT_CHUNKS_SHIFT) |
	       first;
	w[1] = r->regs.rip;
	w[2] = r->regs.rsp;
	w[3] = r->regs.rbp;
	memcpy(&w[4], r->stack, first);
	return h;
}

/* Send the chunks of r's stack after the first part; time: the sample's time to claim. */
static uint32_t send_chunks(struct unwinder *u, const struct recorded *r, uint64_t time,
			    uint32_t max)
{
	struct stack_chunk *c = xcalloc(1, sizeof(*c));
	size_t off = UNW_SNAPSHOT_MAX_BYTES;
	uint32_t n = 0;

	while (off < r->len && n < max) {
		size_t len = r->len - off < STACK_CHUNK_BYTES ? r->len - off : STACK_CHUNK_BYTES;

		memset(c, 0, sizeof(*c));
		c->hdr.type = EVENT_STACK_CHUNK;
		c->hdr.version = SCORCH_EVENT_VERSION;
		c->hdr.size = sizeof(*c);
		c->hdr.cpu = 1;
		c->hdr.pid = c->hdr.tid = (uint32_t)r->pid;
		c->hdr.time_ns = time;
		c->index = n++;
		c->len = (uint32_t)len;
		c->addr = r->regs.rsp + off;
		memcpy(c->data, r->stack + off, len);
		unwinder_note_chunk(u, &c->hdr, sizeof(*c));
		off += len;
	}
	xfree(c);
	return n;
}

static size_t count_of(const char *names, const char *fn)
{
	size_t n = 0, len = strlen(fn);
	const char *p;

	for (p = names; (p = strstr(p, fn)); p += len)
		if ((p == names || p[-1] == ';') && (p[len] == ';' || !p[len]))
			n++;
	return n;
}

/* A stack deeper than one record (600 frames of 128 bytes: 75 KiB) is whole when its snapshot
 * goes on in stack chunks; without them (or with chunks of another sample) it ends in an error
 * marker, never a crash. */
static void test_snapshot_chunks(void)
{
	struct recorded r;
	struct unwinder *u;
	struct errmsg err;
	const struct event_hdr *out;
	struct event_hdr *h;
	const struct sample_body *b;
	char *names = xmalloc(65536);
	size_t size, out_size, used;
	uint32_t n;
	const uint64_t *w;

	if (find_helper() || record_helper("stopwide", "600", &r)) {
		xfree(names);
		SKIP("helper not built or not traceable");
	}
	CHECK(r.len > 4 * UNW_SNAPSHOT_MAX_BYTES);
	u = unwinder_new(NULL, NULL, &err);
	CHECK_EQ_INT(unwinder_track_pid(u, r.pid), 0);
	/* chunks, then the sample */
	n = send_chunks(u, &r, 123456789, UNW_SNAPSHOT_CHUNKS);
	CHECK(n >= 4);
	h = snapshot_sample(&r, n, &size);
	CHECK_EQ_INT(unwinder_fix_sample(u, h, size, &out, &out_size), 1);
	b = (const struct sample_body *)(out + 1);
	w = (const uint64_t *)(b + 1);
	helper_names(r.pid, w, b->nuser, names, 65536);
	CHECK_EQ_INT(count_of(names, "recurse_wide"), 600);
	CHECK(strstr(names, "recurse_wide;wide_start;main;_start") != NULL);
	CHECK(w[b->nuser - 1] >> FW_TAG_SHIFT == 0); /* no marker: complete */
	used = b->nuser;
	xfree(h);
	/* the same sample without its chunks: cut short, with an error marker */
	h = snapshot_sample(&r, n, &size);
	CHECK_EQ_INT(unwinder_fix_sample(u, h, size, &out, &out_size), 1);
	b = (const struct sample_body *)(out + 1);
	w = (const uint64_t *)(b + 1);
	CHECK(b->nuser < used);
	CHECK_EQ_INT(w[b->nuser - 1], (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_UNWIND_ERROR);
	xfree(h);
	/* chunks of another sample (another time) are not joined */
	send_chunks(u, &r, 42, UNW_SNAPSHOT_CHUNKS);
	h = snapshot_sample(&r, n, &size);
	CHECK_EQ_INT(unwinder_fix_sample(u, h, size, &out, &out_size), 1);
	b = (const struct sample_body *)(out + 1);
	CHECK(b->nuser < used);
	xfree(h);
	/* a chunk missing in the middle: not joined */
	send_chunks(u, &r, 123456789, 2);
	h = snapshot_sample(&r, n, &size);
	CHECK_EQ_INT(unwinder_fix_sample(u, h, size, &out, &out_size), 1);
	b = (const struct sample_body *)(out + 1);
	CHECK(b->nuser < used);
	xfree(h);
	unwinder_free(u);
	recorded_release(&r);
	xfree(names);
}

/* A claimed range the maps do not show as executable (a JIT cache the runtime is writing to)
 * stays the runtime's; one that overlaps an executable mapping splits it instead. */
static void test_claim_without_mapping(void)
{
	struct unwinder_opts o = { 0 };
	struct unwind_mapping m;
	struct procmaps pm = { 0 };
	struct unwinder_claim c[2] = { { 0x7f0000000000ULL, 0x7f0004000000ULL, UNWINDER_PHP },
				       { 0x7f0010000000ULL, 0x7f0010001000ULL, 0 } };
	struct errmsg err;
	struct unwinder *u = unwinder_new(NULL, &o, &err);

	CHECK(u != NULL);
	if (!u)
		return;
	CHECK_EQ_INT(unwinder_set_maps(u, 4242, &pm, c, 2), 0);
	CHECK_EQ_INT(unwinder_lookup_mapping(u, 4242, 0x7f0000001000ULL, &m), 0);
	CHECK_EQ_INT(m.kind, UNWINDER_PHP);
	CHECK(m.flags & UNW_MAP_RUNTIME);
	CHECK_EQ_INT(m.start, 0x7f0000000000ULL);
	CHECK_EQ_INT(m.end, 0x7f0004000000ULL);
	/* a released claim (kind 0) adds nothing */
	CHECK_EQ_INT(unwinder_lookup_mapping(u, 4242, 0x7f0010000800ULL, &m), -ENOENT);
	unwinder_free(u);
}

int main(void)
{
	RUN(test_table_rules_and_gaps);
	RUN(test_rule_conversion);
	RUN(test_debug_frame_fills_gaps_only);
	RUN(test_unsorted_rows);
	RUN(test_lower_level_around_higher);
	RUN(test_real_libc);
	RUN(test_recorded_chain);
	RUN(test_recorded_deep);
	RUN(test_deferred_segments);
	RUN(test_snapshot_chunks);
	RUN(test_claim_without_mapping);
	return test_summary();
}
