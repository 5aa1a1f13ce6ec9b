/* test_gopclntab.c: the .gopclntab reader against Go programs built at test time
 * (tests/helpers/go/spin.go): normal, stripped (-s -w: no .symtab, no DWARF), stripped PIE,
 * and stripped with the section headers cut off (found by its magic). Names and lines at
 * function entries must match `go tool nm` / `go tool addr2line` of the unstripped twin; a pc
 * inside inlined code must give the inlined function (at its line) then its caller (at the
 * call's line); the unwind table of the stripped binary must use the stack-pointer deltas
 * (frameless leaf: CFA = rsp + 8), and the Go runtime's own rules (roots, stack switches,
 * time.now, the signal restorer), stripped or not. A truncated copy must not crash anything. */
#include "agent/elf.h"
#include "agent/gopclntab.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/scorch-test-go-XXXXXX";
#include "scratch.h"
static int have_go;

/* The address of a Go function per `go tool nm`, or 0. */
static uint64_t nm_addr(const char *file, const char *name)
{
	char cmd[1024], line[512];
	unsigned long long a = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "go tool nm %s 2>/dev/null", file);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char sym[400], type;
		unsigned long long v;

		if (sscanf(line, "%llx %c %399s", &v, &type, sym) == 3 && !strcmp(sym, name))
			a = v;
	}
	pclose(f);
	return a;
}

/* The line of spin.go that contains text (1-based), or 0. */
static int src_line(const char *text)
{
	char line[512];
	int n = 0, found = 0;
	FILE *f = fopen("tests/helpers/go/spin.go", "r");

	while (f && fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, text)) {
			found = n;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* The first address of function fn (in the unstripped build) whose instruction is on line
 * `line` of spin.go, per go tool objdump; 0 if none. */
static uint64_t addr_on_line(const char *fn, int line)
{
	char cmd[1024], buf[512], want[32];
	unsigned long long a = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "go tool objdump -s '^%s$' %s 2>/dev/null", fn, tpath("normal"));
	snprintf(want, sizeof(want), "spin.go:%d", line);
	f = popen(cmd, "r");
	while (f && fgets(buf, sizeof(buf), f)) {
		char loc[64];
		unsigned long long v;

		if (!a && sscanf(buf, " %63s 0x%llx", loc, &v) == 2 && !strcmp(loc, want))
			a = v;
	}
	if (f)
		pclose(f);
	return a;
}

static void setup(void)
{
	if (!mkdtemp(tmpdir) || sh("command -v go > /dev/null 2>&1"))
		return;
	/* go needs a build cache; the default one lives under $HOME */
	if (!getenv("HOME") && !getenv("GOCACHE") && !getenv("XDG_CACHE_HOME"))
		setenv("GOCACHE", "/tmp/scorch-go-build-cache", 1);
	/* The default build cache makes this fast after the first run. */
	have_go = sh("cp tests/helpers/go/spin.go tests/helpers/go/go.mod %s/ && cd %s && "
		     "go build -o normal . && go build -ldflags='-s -w' -o stripped . && "
		     "go build -buildmode=pie -o pie . && "
		     "go build -buildmode=pie -ldflags='-s -w' -o pie_stripped . && "
		     "objcopy --strip-section-headers stripped noshdr 2>/dev/null || "
		     "cp stripped noshdr; "
		     "head -c 700000 stripped > truncated",
		     tmpdir, tmpdir) == 0;
}

static struct gopclntab *open_go(const char *name, struct elf_file **e)
{
	struct gopclntab *g = NULL;
	struct errmsg err = { "" };

	*e = NULL;
	if (elf_open(tpath(name), e, &err) < 0) {
		fprintf(stderr, "  %s: %s\n", name, err.msg);
		return NULL;
	}
	if (gopclntab_open(*e, &g, &err) < 0)
		fprintf(stderr, "  %s: %s\n", name, err.msg);
	return g;
}

static void check_frame(const struct gopclntab_frame *f, const char *name, int line, int inlined)
{
	CHECK_EQ_STR(f->name, name);
	CHECK(f->file && strstr(f->file, "spin.go"));
	CHECK_EQ_INT(f->line, line);
	CHECK_EQ_INT(f->inlined, inlined);
}

static void check_binary(const char *name, const char *twin)
{
	struct elf_file *e;
	struct gopclntab *g = open_go(name, &e);
	struct gopclntab_frame fr[40];
	uint64_t leaf = nm_addr(tpath(twin), "main.leafA"), spin_a = nm_addr(tpath(twin), "main.spinA");
	uint64_t entry = 0, lo, hi;
	size_t n;

	CHECK(g != NULL);
	CHECK(leaf && spin_a);
	if (!g || !leaf) {
		elf_close(e);
		return;
	}
	CHECK_EQ_INT(gopclntab_layout(g), 118); /* Go 1.19 */
	gopclntab_text_range(g, &lo, &hi);
	CHECK(lo <= leaf && leaf < hi);
	n = gopclntab_lookup(g, leaf + 1, fr, 40, &entry);
	CHECK_EQ_INT(n, 1);
	if (n == 1)
		check_frame(&fr[0], "main.leafA", src_line("func leafA("), 0);
	CHECK_EQ_INT(entry, leaf);
	n = gopclntab_lookup(g, spin_a, fr, 40, NULL);
	CHECK_EQ_INT(n, 1);
	if (n == 1)
		check_frame(&fr[0], "main.spinA", src_line("func spinA("), 0);
	/* outside Go text */
	CHECK_EQ_INT(gopclntab_lookup(g, 0x10, fr, 40, NULL), 0);
	CHECK_EQ_INT(gopclntab_lookup(g, hi, fr, 40, NULL), 0);
	gopclntab_free(g);
	elf_close(e);
}

static void test_stripped(void)
{
	if (!have_go)
		SKIP("go cannot build tests/helpers/go/spin.go here");
	check_binary("normal", "normal");
	check_binary("stripped", "normal");
	check_binary("pie_stripped", "pie");
	check_binary("noshdr", "normal");
}

/* hot() is inlined into spinB: a pc on hot's line is two frames. */
static void test_inlined(void)
{
	int l_hot = src_line("func hot("), l_call = src_line("x = hot(");
	uint64_t pc = 0;
	struct elf_file *e;
	struct gopclntab *g;
	struct gopclntab_frame fr[40];
	size_t n;

	if (!have_go)
		SKIP("go cannot build tests/helpers/go/spin.go here");
	pc = addr_on_line("main.spinB", l_hot);
	CHECK(pc != 0 && l_hot > 0 && l_call > 0);
	g = open_go("stripped", &e);
	CHECK(g != NULL);
	if (g && pc) {
		CHECK(gopclntab_has_inline(g));
		n = gopclntab_lookup(g, pc, fr, 40, NULL);
		CHECK_EQ_INT(n, 2);
		if (n == 2) {
			check_frame(&fr[0], "main.hot", l_hot, 1);
			check_frame(&fr[1], "main.spinB", l_call, 0);
		}
		/* with room for one frame: the innermost only, never a mix */
		CHECK_EQ_INT(gopclntab_lookup(g, pc, fr, 1, NULL), 1);
		CHECK_EQ_STR(fr[0].name, "main.spinB");
	}
	gopclntab_free(g);
	elf_close(e);
}

/* go tool addr2line on the unstripped binary agrees with us on the stripped one (at pcs that
 * are not inside inlined code, where addr2line gives the outer name with the inner line). */
static void test_addr2line(void)
{
	static const char *const fns[] = { "main.spinA", "main.leafA", "main.threadCPU",
					   "main.main", "runtime.main", "runtime.mallocgc" };
	struct elf_file *e;
	struct gopclntab *g;
	size_t i, compared = 0;

	if (!have_go)
		SKIP("go cannot build tests/helpers/go/spin.go here");
	g = open_go("stripped", &e);
	CHECK(g != NULL);
	for (i = 0; g && i < sizeof(fns) / sizeof(fns[0]); i++) {
		uint64_t a = nm_addr(tpath("normal"), fns[i]);
		struct gopclntab_frame fr[40];
		char cmd[1024], name[512] = "", loc[1024] = "";
		FILE *f;
		size_t n;

		if (!a)
			continue;
		n = gopclntab_lookup(g, a, fr, 40, NULL);
		snprintf(cmd, sizeof(cmd), "echo 0x%llx | go tool addr2line %s", (unsigned long long)a,
			 tpath("normal"));
		f = popen(cmd, "r");
		if (!f || !fgets(name, sizeof(name), f) || !fgets(loc, sizeof(loc), f)) {
			if (f)
				pclose(f);
			continue;
		}
		pclose(f);
		name[strcspn(name, "\n")] = 0;
		loc[strcspn(loc, "\n")] = 0;
		CHECK_EQ_INT(n, 1);
		if (n == 1) {
			char ours[1100];

			snprintf(ours, sizeof(ours), "%s:%d", fr[0].file ? fr[0].file : "?", fr[0].line);
			CHECK_EQ_STR(fr[0].name, name);
			CHECK_EQ_STR(ours, loc);
			compared++;
		}
	}
	CHECK(compared >= 4);
	gopclntab_free(g);
	elf_close(e);
}

/* The stripped binary's unwind table: a frameless leaf is CFA = rsp + 8 with RBP untouched; a
 * function with a frame has the caller's RBP at CFA - 16. */
static void test_unwind_rows(void)
{
	struct elf_file *e = NULL;
	struct unwind_table t;
	struct errmsg err = { "" };
	const struct unwind_entry *u;
	uint64_t leaf = nm_addr(tpath("normal"), "main.leafA");
	uint64_t body = addr_on_line("main.spinA", src_line("x = leafA("));
	char buf[128];

	if (!have_go)
		SKIP("go cannot build tests/helpers/go/spin.go here");
	CHECK_EQ_INT(elf_open(tpath("stripped"), &e, &err), 0);
	if (!e)
		return;
	CHECK_EQ_INT(unwind_table_build(e, NULL, NULL, 0, &t, &err), 0);
	CHECK(t.stats.sources & UT_SRC_GOPCLNTAB);
	u = unwind_table_lookup(&t, leaf + 2);
	CHECK(u != NULL);
	if (u)
		CHECK_EQ_STR(unwind_rule_str(u, buf, sizeof(buf)), "cfa=rsp+8");
	CHECK(body != 0);
	u = body ? unwind_table_lookup(&t, body) : NULL;
	CHECK(u != NULL);
	if (u) {
		unwind_rule_str(u, buf, sizeof(buf));
		CHECK(!strncmp(buf, "cfa=rsp+", 8) && strstr(buf, "rbp=cfa-16") && strcmp(buf, "cfa=rsp+8"));
	}
	unwind_table_release(&t);
	elf_close(e);
}

/* The address of the first instruction of fn (in the unstripped build) whose disassembly
 * contains text, per go tool objdump; 0 if none. */
static uint64_t insn_addr(const char *fn, const char *text)
{
	char cmd[1024], buf[512];
	unsigned long long a = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "go tool objdump -s '^%s$' %s 2>/dev/null", fn, tpath("normal"));
	f = popen(cmd, "r");
	while (f && fgets(buf, sizeof(buf), f)) {
		char loc[64];
		unsigned long long v;

		if (!a && strstr(buf, text) && sscanf(buf, " %63s 0x%llx", loc, &v) == 2)
			a = v;
	}
	if (f)
		pclose(f);
	return a;
}

/* The same, the second such instruction. */
static uint64_t insn_addr2(const char *fn, const char *text)
{
	char cmd[1024], buf[512];
	unsigned long long a = 0;
	int seen = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "go tool objdump -s '^%s$' %s 2>/dev/null", fn, tpath("normal"));
	f = popen(cmd, "r");
	while (f && fgets(buf, sizeof(buf), f)) {
		char loc[64];
		unsigned long long v;

		if (!a && strstr(buf, text) && sscanf(buf, " %63s 0x%llx", loc, &v) == 2 && seen++)
			a = v;
	}
	if (f)
		pclose(f);
	return a;
}

static void check_rule(const struct unwind_table *t, const char *name, uint64_t addr,
		       const char *want)
{
	const struct unwind_entry *u = addr ? unwind_table_lookup(t, addr) : NULL;
	char buf[128];

	CHECK(u != NULL);
	if (!u) {
		fprintf(stderr, "  %s (%#llx): no rule\n", name, (unsigned long long)addr);
		return;
	}
	unwind_rule_str(u, buf, sizeof(buf));
	if (strcmp(buf, want))
		fprintf(stderr, "  %s (%#llx): %s, want %s\n", name, (unsigned long long)addr, buf, want);
	CHECK_EQ_STR(buf, want);
}

struct special {
	uint64_t goexit, sigtramp, systemstack, now, sigreturn;
	int n;
};

static int collect_special(void *ctx, uint64_t entry, uint64_t end, const char *name,
			   unsigned flags)
{
	struct special *s = ctx;

	(void)end;
	s->n++;
	if (!strcmp(name, "runtime.goexit") && flags == GOPCLNTAB_TOPFRAME)
		s->goexit = entry;
	if (!strcmp(name, "runtime.sigtramp") &&
	    flags == (GOPCLNTAB_TOPFRAME | GOPCLNTAB_SIGTRAMP))
		s->sigtramp = entry;
	if (!strcmp(name, "runtime.systemstack") && flags == GOPCLNTAB_SPWRITE)
		s->systemstack = entry;
	if (!strcmp(name, "time.now") && flags == GOPCLNTAB_SPWRITE)
		s->now = entry;
	if (!strcmp(name, "runtime.sigreturn") && flags == GOPCLNTAB_SIGRETURN)
		s->sigreturn = entry;
	return 0;
}

/* The Go runtime's functions that no stack-pointer delta describes, from their funcFlag: the
 * stack roots end the unwind, runtime.systemstack and asmcgocall go back to the goroutine at
 * their call (and end it elsewhere), the other stack switches without a frame end the system
 * stack's part,
 * time.now (vDSO on the system stack) unwinds by its frame pointer between its prologue and
 * epilogue, the signal restorer is a signal frame. The same rules with and without the
 * symbols and DWARF (the unstripped binary's .debug_frame must not win over them). */
static void test_runtime_rows(void)
{
	static const char *const builds[] = { "normal", "stripped" };
	uint64_t goexit = nm_addr(tpath("normal"), "runtime.goexit.abi0");
	uint64_t sysstack = nm_addr(tpath("normal"), "runtime.systemstack.abi0");
	uint64_t now = nm_addr(tpath("normal"), "time.now");
	uint64_t sigret = nm_addr(tpath("normal"), "runtime.sigreturn.abi0");
	uint64_t sigtramp = nm_addr(tpath("normal"), "runtime.sigtramp.abi0");
	uint64_t mcall = nm_addr(tpath("normal"), "runtime.mcall");
	uint64_t morestack = nm_addr(tpath("normal"), "runtime.morestack.abi0");
	uint64_t rt0 = nm_addr(tpath("normal"), "runtime.rt0_go.abi0");
	uint64_t mstart = nm_addr(tpath("normal"), "runtime.mstart.abi0");
	uint64_t sys_call = insn_addr("runtime.systemstack.abi0", "CALL DI") + 1; /* ret - 1 */
	uint64_t cgocall = nm_addr(tpath("normal"), "runtime.asmcgocall.abi0");
	uint64_t cgo_call = insn_addr("runtime.asmcgocall.abi0", "CALL AX") + 1;
	uint64_t cgo_call2 = insn_addr2("runtime.asmcgocall.abi0", "CALL AX") + 1;
	uint64_t now_frame = insn_addr("time.now", "LEAQ 0x10(SP), BP");
	uint64_t now_vdso = insn_addr("time.now", "CALL AX");
	uint64_t now_addq = insn_addr("time.now", "ADDQ $0x18, SP");
	struct special sp;
	size_t i;

	if (!have_go)
		SKIP("go cannot build tests/helpers/go/spin.go here");
	CHECK(goexit && sysstack && now && sigret && sigtramp && mcall && morestack && rt0 && mstart);
	CHECK(sys_call > 1 && now_frame && now_vdso && now_addq && cgocall && cgo_call > 1 &&
	      cgo_call2 > cgo_call);
	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		struct elf_file *e = NULL;
		struct gopclntab *g = open_go(builds[i], &e);
		struct unwind_table t;
		struct errmsg err = { "" };

		fprintf(stderr, "  %s\n", builds[i]);
		CHECK(g != NULL);
		memset(&sp, 0, sizeof(sp));
		if (g)
			CHECK_EQ_INT(gopclntab_special_funcs(g, collect_special, &sp), 0);
		CHECK(sp.n >= 10 && sp.n < 100);
		CHECK_EQ_INT(sp.goexit, goexit);
		CHECK_EQ_INT(sp.sigtramp, sigtramp);
		CHECK_EQ_INT(sp.systemstack, sysstack);
		CHECK_EQ_INT(sp.now, now);
		CHECK_EQ_INT(sp.sigreturn, sigret);
		if (g) {
			/* goexit + 1, a goroutine's bottom return address, is looked up at
			 * goexit's entry: goexit, not the function before it */
			struct gopclntab_frame fr[4];
			uint64_t entry = 0;

			CHECK_EQ_INT(gopclntab_lookup(g, goexit, fr, 4, &entry), 1);
			CHECK_EQ_STR(fr[0].name, "runtime.goexit");
			CHECK_EQ_INT(entry, goexit);
			CHECK(gopclntab_lookup(g, goexit - 1, fr, 4, &entry) == 1 &&
			      strcmp(fr[0].name, "runtime.goexit") && entry < goexit);
		}
		gopclntab_free(g);
		if (!e)
			continue;
		CHECK_EQ_INT(unwind_table_build(e, NULL, NULL, 0, &t, &err), 0);
		/* every goroutine's bottom return address is goexit + 1 */
		check_rule(&t, "goexit", goexit, "stop");
		check_rule(&t, "goexit+1", goexit + 1, "stop");
		/* the return address of the call on the system stack: back to the goroutine,
		 * with Go 1.19's offsets (docs/unwinding.md), read from its instructions */
		check_rule(&t, "systemstack", sys_call,
			   "go-systemstack(g=fs-8 curg=192 sched.bp=104)");
		check_rule(&t, "systemstack CALL", sys_call - 1,
			   "go-systemstack(g=fs-8 curg=192 sched.bp=104)");
		/* elsewhere in it (before the switch, the tail call without one): the end */
		check_rule(&t, "systemstack+0", sysstack, "stop");
		check_rule(&t, "systemstack after", sys_call + 1, "stop");
		/* the C function's return into asmcgocall, with and without a switch */
		check_rule(&t, "asmcgocall", cgo_call, "go-asmcgocall(g=sp+48 depth=sp+40)");
		check_rule(&t, "asmcgocall noswitch", cgo_call2,
			   "go-asmcgocall(g=sp+48 depth=sp+40)");
		check_rule(&t, "asmcgocall+0", cgocall, "stop");
		check_rule(&t, "asmcgocall after", cgo_call + 1, "stop");
		/* mcall: the goroutine is being descheduled; morestack: the end */
		check_rule(&t, "mcall", mcall, "stop");
		check_rule(&t, "morestack", morestack, "stop");
		check_rule(&t, "rt0_go", rt0, "stop");
		check_rule(&t, "mstart", mstart, "stop");
		/* time.now: the deltas in the prologue, the frame pointer in the body (over the
		 * stack switch), the deltas again once RBP is reloaded */
		check_rule(&t, "time.now+0", now, "cfa=rsp+8");
		check_rule(&t, "time.now frame", now_frame + 5, "cfa=rbp+16 rbp=cfa-16");
		check_rule(&t, "time.now vDSO call", now_vdso, "cfa=rbp+16 rbp=cfa-16");
		check_rule(&t, "time.now ADDQ", now_addq, "cfa=rsp+32");
		check_rule(&t, "time.now RET", now_addq + 4, "cfa=rsp+8");
		/* the restorer, from the padding byte before it */
		check_rule(&t, "sigreturn-1", sigret - 1, "signal");
		check_rule(&t, "sigreturn", sigret, "signal");
		/* the handler itself unwinds by its deltas, to the restorer */
		check_rule(&t, "sigtramp+0", sigtramp, "cfa=rsp+8");
		unwind_table_release(&t);
		elf_close(e);
	}
}

/* A file cut short: no crash, no lies (lookups give nothing or the truth). */
static void test_truncated(void)
{
	struct elf_file *e = NULL;
	struct gopclntab *g = NULL;
	uint64_t leaf = nm_addr(tpath("normal"), "main.leafA");
	struct gopclntab_frame fr[40];
	uint64_t a;

	if (!have_go)
		SKIP("go cannot build tests/helpers/go/spin.go here");
	if (elf_open(tpath("truncated"), &e, NULL) < 0)
		return; /* refused as a whole: fine */
	if (gopclntab_open(e, &g, NULL) == 0) {
		for (a = leaf - 4096; a < leaf + 4096; a += 7) {
			size_t n = gopclntab_lookup(g, a, fr, 40, NULL), i;

			for (i = 0; i < n; i++)
				CHECK(fr[i].name && *fr[i].name);
		}
	}
	gopclntab_free(g);
	elf_close(e);
}

/* The layouts Go 1.19 cannot build here, from the synthetic files of
 * tests/fuzz/gen_gopclntab.py (see the values there). */
struct sp_run {
	uint64_t lo, hi;
	int32_t d;
};

static int collect_sp(void *ctx, uint64_t lo, uint64_t hi, int32_t d)
{
	struct sp_run *r = ctx;
	size_t i;

	for (i = 0; i < 16 && r[i].hi; i++)
		;
	if (i < 16)
		r[i] = (struct sp_run){ lo, hi, d };
	return 0;
}

static void test_layouts(void)
{
	static const struct {
		const char *file;
		int layout;
	} files[] = {
		{ "go116.elf", 116 }, { "go118.elf", 118 }, { "go120.elf", 120 }, { "go120_notext.elf", 120 },
	};
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[256];
		struct elf_file *e = NULL;
		struct gopclntab *g = NULL;
		struct gopclntab_frame fr[8];
		struct sp_run sp[16];
		uint64_t lo, hi;

		snprintf(path, sizeof(path), "tests/fuzz/corpus/gopclntab/%s", files[i].file);
		CHECK_EQ_INT(elf_open(path, &e, NULL), 0);
		CHECK_EQ_INT(e ? gopclntab_open(e, &g, NULL) : -1, 0);
		if (!g) {
			fprintf(stderr, "  %s: not read\n", files[i].file);
			elf_close(e);
			continue;
		}
		CHECK_EQ_INT(gopclntab_layout(g), files[i].layout);
		gopclntab_text_range(g, &lo, &hi);
		CHECK_EQ_INT(lo, 0x401000);
		CHECK_EQ_INT(hi, 0x401080);
		CHECK(gopclntab_has_inline(g));
		CHECK_EQ_INT(gopclntab_lookup(g, 0x401000, fr, 8, NULL), 1);
		CHECK_EQ_STR(fr[0].name, "main.outer");
		CHECK_EQ_STR(fr[0].file, "/src/main.go");
		CHECK_EQ_INT(fr[0].line, 10);
		CHECK_EQ_INT(gopclntab_lookup(g, 0x401021, fr, 8, NULL), 2);
		CHECK_EQ_STR(fr[0].name, "main.inlinee");
		CHECK_EQ_INT(fr[0].line, 5);
		CHECK_EQ_INT(fr[0].inlined, 1);
		CHECK_EQ_STR(fr[1].name, "main.outer");
		CHECK_EQ_INT(fr[1].line, 12); /* the line at parentPc */
		CHECK_EQ_INT(fr[1].inlined, 0);
		CHECK_EQ_INT(gopclntab_lookup(g, 0x401041, fr, 8, NULL), 1);
		CHECK_EQ_STR(fr[0].name, "main.leaf");
		CHECK_EQ_INT(fr[0].line, 20);
		CHECK_EQ_INT(gopclntab_lookup(g, 0x40107f, fr, 8, NULL), 1);
		CHECK_EQ_STR(fr[0].name, "main.other");
		CHECK_EQ_INT(gopclntab_lookup(g, 0x401080, fr, 8, NULL), 0);
		memset(sp, 0, sizeof(sp));
		CHECK_EQ_INT(gopclntab_sp_deltas(g, collect_sp, sp), 0);
		CHECK(sp[0].lo == 0x401000 && sp[0].hi == 0x401004 && sp[0].d == 0);
		CHECK(sp[1].lo == 0x401004 && sp[1].hi == 0x40103c && sp[1].d == 24);
		CHECK(sp[2].lo == 0x40103c && sp[2].hi == 0x401040 && sp[2].d == 0);
		CHECK(sp[3].lo == 0x401040 && sp[3].hi == 0x401060 && sp[3].d == 0);
		CHECK(sp[5].lo == 0x401062 && sp[5].hi == 0x401080 && sp[5].d == 8);
		gopclntab_free(g);
		elf_close(e);
	}
}

int main(void)
{
	log_set_level(LOG_ERROR);
	setup();
	RUN(test_layouts);
	RUN(test_stripped);
	RUN(test_inlined);
	RUN(test_addr2line);
	RUN(test_unwind_rows);
	RUN(test_runtime_rows);
	RUN(test_truncated);
	sh("rm -rf %s", tmpdir);
	return test_summary();
}
