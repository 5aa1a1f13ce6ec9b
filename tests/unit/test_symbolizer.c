/* test_symbolizer.c: the symbolizer against live processes: children built at test time with
 * gcc/g++ (PIE with a C++ shared library, non-PIE, stripped with a debuglink file) print the
 * runtime addresses of their functions, which must resolve to the right names, also after the
 * child has exited; plus this process (its own code, libc, the vDSO) and the kernel. */
#include "agent/elf.h"
#include "agent/kallsyms.h"
#include "agent/procmaps.h"
#include "agent/symbolizer.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/scorch-test-sym-XXXXXX";
#include "scratch.h"
static int have_tools;

static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"extern int lib_add(int, int);\n"
	"extern int _ZN6scorch5probe6scaledEi(int);\n"
	"volatile int sink;\n"
	"__attribute__((noinline)) int leaf_fn(int x) { return x * 3 + sink; }\n"
	"static __attribute__((noinline)) int static_fn(int x) { return leaf_fn(x) + 1; }\n"
	"__attribute__((noinline, aligned(64))) int aligned_fn(int x) { return x ^ 0x55; }\n"
	"int main(void) {\n"
	"  sink = static_fn(1) + lib_add(1, 2) + _ZN6scorch5probe6scaledEi(3) + aligned_fn(2);\n"
	"  printf(\"%p %p %p %p %p\\n\", (void *)leaf_fn, (void *)static_fn, (void *)lib_add,\n"
	"         (void *)_ZN6scorch5probe6scaledEi, (void *)aligned_fn);\n"
	"  fflush(stdout);\n"
	"  for (;;) pause();\n"
	"}\n";

static const char lib_src[] =
	"extern \"C\" __attribute__((noinline)) int lib_add(int a, int b) { return a + b; }\n"
	"namespace scorch { namespace probe {\n"
	"__attribute__((noinline)) int scaled(int x) { return lib_add(x, x) * 7; }\n"
	"} }\n";

static void setup(void)
{
	FILE *f;

	if (!mkdtemp(tmpdir))
		return;
	sh("cd %s && cat > p.c <<'EOF'\n%sEOF\ncat > lib.cc <<'EOF'\n%sEOF\n", tmpdir, prog_src, lib_src);
	have_tools = sh("cd %s && g++ -O1 -fno-inline -shared -fPIC -o libprobe.so lib.cc && "
			"gcc -O1 -fno-inline -pie -fPIE -o pie p.c -L. -lprobe -Wl,-rpath,'$ORIGIN' && "
			"gcc -O1 -g -fno-inline -pie -fPIE -o pieg p.c -L. -lprobe -Wl,-rpath,'$ORIGIN' && "
			"gcc -O1 -fno-inline -no-pie -fno-PIE -o nopie p.c -L. -lprobe -Wl,-rpath,'$ORIGIN' && "
			"mkdir -p sub && objcopy --only-keep-debug pie sub/stripped.debug && "
			"objcopy --strip-all --add-gnu-debuglink=sub/stripped.debug pie sub/stripped && "
			"cp libprobe.so sub/",
			tmpdir) == 0;
	(void)f;
}

struct child {
	pid_t pid;
	uint64_t leaf, stat, lib_add, scaled, aligned;
};

/* Start prog and read the addresses it prints. */
static int child_start(const char *prog, struct child *c)
{
	int fds[2];
	FILE *f;
	unsigned long long a, b, x, y, z;
	int ok;

	memset(c, 0, sizeof(*c));
	if (pipe(fds) < 0)
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	ok = f && fscanf(f, "%llx %llx %llx %llx %llx", &a, &b, &x, &y, &z) == 5;
	if (f)
		fclose(f);
	if (!ok) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		return -1;
	}
	c->leaf = a;
	c->stat = b;
	c->lib_add = x;
	c->scaled = y;
	c->aligned = z;
	return 0;
}

static void child_stop(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
}

static void check_addr(struct symbolizer *s, int pid, uint64_t addr, const char *want,
		       const char *module_suffix)
{
	struct sym_result r;
	int rc = symbolizer_user(s, pid, addr, &r);

	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_STR(r.name, want);
	CHECK(r.module && strlen(r.module) >= strlen(module_suffix) &&
	      !strcmp(r.module + strlen(r.module) - strlen(module_suffix), module_suffix));
	CHECK(r.map_start <= addr && addr < r.map_limit);
	CHECK_EQ_INT(r.module_offset, addr - r.map_start + r.map_offset);
	/* a few bytes into the function too */
	rc = symbolizer_user(s, pid, addr + 2, &r);
	CHECK(rc == 0 && r.name && !strcmp(r.name, want));
}

static void test_live_pie_and_exit(void)
{
	struct symbolizer *s;
	struct sym_result r;
	struct child c;
	char prog[600];

	if (!have_tools)
		SKIP("gcc/g++/objcopy not usable");
	snprintf(prog, sizeof(prog), "%s/pie", tmpdir);
	s = symbolizer_new();
	CHECK_EQ_INT(child_start(prog, &c), 0);
	if (!c.pid) {
		symbolizer_free(s);
		return;
	}
	CHECK_EQ_INT(symbolizer_track_pid(s, c.pid), 0);
	check_addr(s, c.pid, c.leaf, "leaf_fn", "/pie");
	check_addr(s, c.pid, c.stat, "static_fn", "/pie");
	check_addr(s, c.pid, c.lib_add, "lib_add", "/libprobe.so");
	check_addr(s, c.pid, c.scaled, "scorch::probe::scaled(int)", "/libprobe.so");
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.scaled, &r), 0);
	CHECK_EQ_STR(r.mangled, "_ZN6scorch5probe6scaledEi");
	CHECK(r.build_id != NULL && strlen(r.build_id) == 40);
	/* one byte before a function, in the alignment padding: a return address at a function's
	 * first byte (signal trampolines) looked up at addr - 1 */
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.aligned - 1, &r), 0);
	CHECK_EQ_STR(r.name, "aligned_fn");
	child_stop(&c);
	/* the process is gone: its addresses still resolve from the snapshot */
	CHECK_EQ_INT(symbolizer_track_pid(s, c.pid), -ESRCH);
	check_addr(s, c.pid, c.leaf, "leaf_fn", "/pie");
	check_addr(s, c.pid, c.scaled, "scorch::probe::scaled(int)", "/libprobe.so");
	/* an address in no mapping */
	CHECK_EQ_INT(symbolizer_user(s, c.pid, 0x10, &r), -ENOENT);
	CHECK(r.module == NULL && r.name == NULL);
	symbolizer_forget_pid(s, c.pid);
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.leaf, &r), -ENOENT);
	symbolizer_free(s);
}

static void test_nopie_and_shared_cache(void)
{
	struct symbolizer *s;
	struct symbolizer_stats st1, st2;
	struct sym_result r;
	struct child c1, c2;
	char prog[600];

	if (!have_tools)
		SKIP("gcc/g++ not usable");
	snprintf(prog, sizeof(prog), "%s/nopie", tmpdir);
	s = symbolizer_new();
	CHECK_EQ_INT(child_start(prog, &c1), 0);
	CHECK_EQ_INT(child_start(prog, &c2), 0);
	if (!c1.pid || !c2.pid)
		goto cleanup;
	CHECK_EQ_INT(symbolizer_track_pid(s, c1.pid), 0);
	symbolizer_get_stats(s, &st1);
	CHECK_EQ_INT(symbolizer_track_pid(s, c2.pid), 0);
	symbolizer_get_stats(s, &st2);
	/* the second process maps the same files: nothing new opened */
	CHECK_EQ_INT(st2.files, st1.files);
	CHECK_EQ_INT(st2.pids, 2);
	check_addr(s, c1.pid, c1.leaf, "leaf_fn", "/nopie");
	check_addr(s, c2.pid, c2.stat, "static_fn", "/nopie");
	/* in a non-PIE executable a function pointer to a library function is its PLT entry */
	CHECK_EQ_INT(symbolizer_user(s, c2.pid, c2.lib_add, &r), 0);
	CHECK(r.module && strstr(r.module, "/nopie"));
	CHECK_EQ_INT(symbolizer_user(s, c2.pid, c2.leaf, &r), 0); /* a repeat: from the cache */
	CHECK_EQ_STR(r.name, "leaf_fn");
	/* tracking again with unchanged maps is cheap and changes nothing */
	CHECK_EQ_INT(symbolizer_track_pid(s, c1.pid), 0);
	symbolizer_get_stats(s, &st1);
	CHECK_EQ_INT(st1.files, st2.files);
	CHECK(st1.cache_hits > 0);
cleanup:
	if (c1.pid)
		child_stop(&c1);
	if (c2.pid)
		child_stop(&c2);
	symbolizer_free(s);
}

static void test_debuglink(void)
{
	struct symbolizer *s;
	struct child c;
	char prog[600], nodebug[600];
	struct symbolizer_options o = { 0 };

	if (!have_tools)
		SKIP("gcc/objcopy not usable");
	snprintf(prog, sizeof(prog), "%s/sub/stripped", tmpdir);
	snprintf(nodebug, sizeof(nodebug), "%s/none", tmpdir);
	o.debug_dir = nodebug;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(child_start(prog, &c), 0);
	if (!c.pid) {
		symbolizer_free(s);
		return;
	}
	/* static_fn is only in the debug file's .symtab */
	check_addr(s, c.pid, c.stat, "static_fn", "/stripped");
	check_addr(s, c.pid, c.leaf, "leaf_fn", "/stripped");
	symbolizer_free(s);
	/* without debug files no symbol covers it: named after its function's start (its FDE),
	 * which is the address asked (GNU ld: the code's file offset is its address) */
	o.no_debug_files = 1;
	s = symbolizer_new_opts(&o);
	{
		struct sym_result r;
		char want[64];

		CHECK_EQ_INT(symbolizer_user(s, c.pid, c.stat, &r), 0);
		CHECK(r.module && strstr(r.module, "/stripped"));
		CHECK(r.module_offset > 0);
		CHECK_EQ_INT(r.func_start, r.module_offset);
		snprintf(want, sizeof(want), "stripped+0x%" PRIx64, r.module_offset);
		CHECK_EQ_STR(r.name, want);
		/* any address inside it: the same name */
		CHECK_EQ_INT(symbolizer_user(s, c.pid, c.stat + 3, &r), 0);
		CHECK_EQ_STR(r.name, want);
	}
	child_stop(&c);
	symbolizer_free(s);
}

__attribute__((noinline)) static int self_probe(int x)
{
	return x * 5 + 1;
}

static void test_self_libc_vdso(void)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_result r;
	struct elf_file *v = NULL;
	uint64_t base = getauxval(AT_SYSINFO_EHDR), val = 0;
	struct timespec t0, t1;

	CHECK(self_probe(1) == 6);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ_INT(symbolizer_track_pid(s, getpid()), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "  tracking self took %.1f ms\n",
			(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	CHECK_EQ_INT(symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)&self_probe, &r), 0);
	CHECK_EQ_STR(r.name, "self_probe");
	CHECK_EQ_INT(symbolizer_user(s, getpid(), (uint64_t)(uintptr_t)&getppid + 1, &r), 0);
	CHECK_EQ_STR(r.name, "getppid");
	CHECK(r.module && strstr(r.module, "libc.so"));
	/* vDSO */
	if (base && elf_open_mem((void *)(uintptr_t)base, 8192, &v, NULL) == 0 &&
	    elf_find_symbol(v, "__vdso_clock_gettime", &val, NULL) == 0) {
		uint64_t addr = base + val - elf_segments(v, &(size_t){ 0 })[0].vaddr;

		CHECK_EQ_INT(symbolizer_user(s, getpid(), addr + 1, &r), 0);
		CHECK(r.name && strstr(r.name, "clock_gettime"));
		CHECK_EQ_STR(r.module, "[vdso]");
	}
	elf_close(v);
	symbolizer_free(s);
}

/* Images (symbolizer_set_maps_gen()): the mappings of the image before an exec stay for its
 * samples; an older image, or an address the image did not map, gets no name, never one from
 * the later image's files at the same address. */
static void test_images(void)
{
	struct symbolizer *s = symbolizer_new();
	struct procmaps all, other;
	struct sym_result r;
	uint64_t probe = (uint64_t)(uintptr_t)&self_probe;
	size_t i;
	int pid = getpid();

	CHECK(self_probe(1) == 6);
	CHECK_EQ_INT(procmaps_read(pid, &all, NULL), 0);
	CHECK_EQ_INT(procmaps_read(pid, &other, NULL), 0);
	/* image 2: the same process without its executable's mappings (as if it exec'd a
	 * program mapped elsewhere) */
	for (i = 0; i < other.n; i++)
		if (other.v[i].start <= probe && probe < other.v[i].end)
			other.v[i].perms &= (uint8_t)~PROCMAPS_X;
	CHECK_EQ_INT(symbolizer_set_maps_gen(s, pid, &all, 1), 0);
	CHECK_EQ_INT(symbolizer_user_gen(s, pid, 1, probe, &r), 0);
	CHECK_EQ_STR(r.name, "self_probe");
	CHECK_EQ_INT(symbolizer_set_maps_gen(s, pid, &other, 2), 0);
	CHECK_EQ_INT(symbolizer_user_gen(s, pid, 1, probe, &r), 0); /* the image before */
	CHECK_EQ_STR(r.name, "self_probe");
	CHECK(symbolizer_user_gen(s, pid, 2, probe, &r) < 0);        /* not in image 2 */
	/* image 3 maps it again: image 1 is two back, no name for it (not image 3's) */
	CHECK_EQ_INT(symbolizer_set_maps_gen(s, pid, &all, 3), 0);
	CHECK(symbolizer_user_gen(s, pid, 1, probe, &r) < 0);
	CHECK(symbolizer_user_gen(s, pid, 2, probe, &r) < 0);
	CHECK_EQ_INT(symbolizer_user_gen(s, pid, 3, probe, &r), 0);
	CHECK_EQ_STR(r.name, "self_probe");
	/* image 4 with the same mappings: image 3's samples are named from them */
	CHECK_EQ_INT(symbolizer_set_maps_gen(s, pid, &all, 4), 0);
	CHECK_EQ_INT(symbolizer_user_gen(s, pid, 3, probe, &r), 0);
	CHECK_EQ_STR(r.name, "self_probe");
	CHECK(symbolizer_user_gen(s, pid, 2, probe, &r) < 0);
	procmaps_release(&all);
	procmaps_release(&other);
	symbolizer_free(s);
}

static void test_kernel(void)
{
	struct symbolizer *s = symbolizer_new();
	struct kallsyms *k = NULL;
	struct sym_result r;
	uint64_t a = 0;

	if (kallsyms_load(NULL, &k, NULL) < 0 || kallsyms_find(k, "schedule", &a) < 0) {
		CHECK_EQ_INT(symbolizer_kernel(s, 0xffffffff81000000ULL, &r), -ENOENT);
		CHECK(symbolizer_kernel_problem(s) != NULL);
		kallsyms_free(k);
		symbolizer_free(s);
		SKIP("kernel symbols hidden");
	}
	CHECK_EQ_INT(symbolizer_kernel(s, a + 3, &r), 0);
	CHECK_EQ_STR(r.name, "schedule");
	CHECK_EQ_STR(r.module, "[kernel.kallsyms]");
	CHECK_EQ_INT(symbolizer_kernel(s, a + 3, &r), 0); /* cached */
	CHECK_EQ_STR(r.name, "schedule");
	CHECK_EQ_INT(symbolizer_kernel(s, 0x1000, &r), -ENOENT);
	CHECK(symbolizer_kernel_problem(s) == NULL);
	kallsyms_free(k);
	symbolizer_free(s);
}

static void test_eviction(void)
{
	struct symbolizer_options o = { 0 };
	struct symbolizer *s;
	struct symbolizer_stats st1, st2;
	struct sym_result r1, r2;
	struct child c1, c2;
	char prog[600];

	if (!have_tools)
		SKIP("gcc not usable");
	o.max_files = 1;
	s = symbolizer_new_opts(&o);
	snprintf(prog, sizeof(prog), "%s/pie", tmpdir);
	CHECK_EQ_INT(child_start(prog, &c1), 0);
	snprintf(prog, sizeof(prog), "%s/nopie", tmpdir);
	CHECK_EQ_INT(child_start(prog, &c2), 0);
	if (!c1.pid || !c2.pid)
		goto cleanup;
	CHECK_EQ_INT(symbolizer_user(s, c1.pid, c1.leaf, &r1), 0);
	CHECK_EQ_STR(r1.name, "leaf_fn");
	symbolizer_get_stats(s, &st1);
	symbolizer_forget_pid(s, c1.pid);
	CHECK_EQ_INT(symbolizer_track_pid(s, c2.pid), 0);
	symbolizer_get_stats(s, &st2);
	/* pie was dropped, the libraries both map stayed */
	CHECK(st2.files < st1.files + 1);
	CHECK_EQ_INT(symbolizer_user(s, c2.pid, c2.leaf, &r2), 0);
	CHECK_EQ_STR(r2.name, "leaf_fn");
	CHECK_EQ_STR(r1.name, "leaf_fn"); /* earlier results stay valid */
	CHECK(strstr(r1.module, "/pie") != NULL);
cleanup:
	if (c1.pid)
		child_stop(&c1);
	if (c2.pid)
		child_stop(&c2);
	symbolizer_free(s);
}

static void test_line_info(void)
{
	struct symbolizer_options o = { 0 };
	struct symbolizer *s;
	struct sym_result r;
	struct child c;
	char prog[600];

	if (!have_tools)
		SKIP("gcc not usable");
	o.no_debuginfod = 1;
	s = symbolizer_new_opts(&o); /* line info is on by default */
	snprintf(prog, sizeof(prog), "%s/pieg", tmpdir);
	CHECK_EQ_INT(child_start(prog, &c), 0);
	if (!c.pid) {
		symbolizer_free(s);
		return;
	}
	/* leaf_fn is defined on line 6 of p.c */
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.leaf, &r), 0);
	CHECK_EQ_STR(r.name, "leaf_fn");
	CHECK(r.source_file && strstr(r.source_file, "p.c"));
	CHECK_EQ_INT(r.line, 6);
	child_stop(&c);
	/* after exit, from the cache and from the file kept open */
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.stat, &r), 0);
	CHECK_EQ_STR(r.name, "static_fn");
	CHECK_EQ_INT(r.line, 7);
	/* libprobe.so has no DWARF: no line, the name still resolves */
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.scaled, &r), 0);
	CHECK_EQ_STR(r.name, "scorch::probe::scaled(int)");
	CHECK(r.source_file == NULL && r.line == 0);
	symbolizer_free(s);
	/* and off when asked */
	o.no_line_info = 1;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(child_start(prog, &c), 0);
	if (c.pid) {
		CHECK_EQ_INT(symbolizer_user(s, c.pid, c.leaf, &r), 0);
		CHECK_EQ_STR(r.name, "leaf_fn");
		CHECK(r.source_file == NULL && r.line == 0);
		child_stop(&c);
	}
	symbolizer_free(s);
}

/* Symbols are loaded when a file's first address is symbolized, not when a process mapping it
 * is tracked: a process gone before any of its samples is symbolized costs no symbol loading,
 * and one whose samples come after it exited still resolves (debug file included). */
static void test_lazy_symbols(void)
{
	struct symbolizer *s;
	struct symbolizer_stats st0, st1, st2;
	struct symbolizer_options o = { 0 };
	struct sym_result r;
	struct child c;
	char prog[600], nodebug[600];

	if (!have_tools)
		SKIP("gcc/objcopy not usable");
	snprintf(prog, sizeof(prog), "%s/sub/stripped", tmpdir);
	snprintf(nodebug, sizeof(nodebug), "%s/none", tmpdir);
	o.debug_dir = nodebug;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(child_start(prog, &c), 0);
	if (!c.pid) {
		symbolizer_free(s);
		return;
	}
	CHECK_EQ_INT(symbolizer_track_pid(s, c.pid), 0);
	symbolizer_get_stats(s, &st0);
	CHECK_EQ_INT(st0.parked, 0);
	/* the executable, libprobe.so, libc, ld.so... opened; no symbols (at most the vDSO's) */
	CHECK(st0.files_pending >= 3);
	CHECK(st0.files_loaded <= 1);
	child_stop(&c);
	/* gone before any address was asked for: its files still load, its debug file too */
	check_addr(s, c.pid, c.stat, "static_fn", "/stripped");
	symbolizer_get_stats(s, &st1);
	CHECK_EQ_INT(st1.files_loaded, st0.files_loaded + 1);
	CHECK_EQ_INT(st1.files_pending, st0.files_pending - 1);
	check_addr(s, c.pid, c.lib_add, "lib_add", "/libprobe.so");
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.leaf, &r), 0); /* loaded already */
	CHECK_EQ_STR(r.name, "leaf_fn");
	symbolizer_get_stats(s, &st2);
	CHECK_EQ_INT(st2.files_loaded, st0.files_loaded + 2);
	CHECK_EQ_INT(st2.files_pending, st0.files_pending - 2);
	CHECK(st2.symbols > st0.symbols);
	symbolizer_free(s);

	/* one file may wait with its descriptor: the others let it go and are opened again by
	 * path when symbolized (the process is gone by then) */
	o.max_pending_files = 1;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(child_start(prog, &c), 0);
	if (!c.pid) {
		symbolizer_free(s);
		return;
	}
	CHECK_EQ_INT(symbolizer_track_pid(s, c.pid), 0);
	symbolizer_get_stats(s, &st0);
	CHECK_EQ_INT(st0.files_pending, 1);
	CHECK(st0.parked >= 2);
	child_stop(&c);
	check_addr(s, c.pid, c.stat, "static_fn", "/stripped");
	check_addr(s, c.pid, c.lib_add, "lib_add", "/libprobe.so");
	symbolizer_get_stats(s, &st1);
	CHECK(st1.reopens >= 1);
	CHECK_EQ_INT(st1.reopen_failures, 0);
	symbolizer_free(s);
}

/* Loaded symbols are bounded: past max_symbol_bytes the least recently used file's symbols are
 * dropped and read again (by path, the process gone) when one of its addresses is new; a file
 * replaced on disk in between is not mistaken for the one mapped. */
static void test_symbol_budget(void)
{
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct symbolizer_options o = { 0 };
	struct sym_result r;
	struct child c;
	char prog[600];

	if (!have_tools)
		SKIP("gcc not usable");
	snprintf(prog, sizeof(prog), "%s/budget", tmpdir);
	CHECK_EQ_INT(sh("cp %s/pie %s && cp %s/libprobe.so %s/libprobe.so.keep", tmpdir, prog,
			tmpdir, tmpdir), 0);
	o.no_debug_files = 1;
	o.max_symbol_bytes = 1; /* one file's symbols at a time */
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(child_start(prog, &c), 0);
	if (!c.pid) {
		symbolizer_free(s);
		return;
	}
	CHECK_EQ_INT(symbolizer_track_pid(s, c.pid), 0);
	check_addr(s, c.pid, c.leaf, "leaf_fn", "/budget");
	check_addr(s, c.pid, c.lib_add, "lib_add", "/libprobe.so"); /* drops budget's */
	symbolizer_get_stats(s, &st);
	CHECK(st.drops >= 1);
	child_stop(&c);
	/* a new address in the executable: read again from its path */
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.stat + 1, &r), 0);
	CHECK_EQ_STR(r.name, "static_fn");
	symbolizer_get_stats(s, &st);
	CHECK(st.reopens >= 1);
	CHECK_EQ_INT(st.reopen_failures, 0);
	CHECK(st.symbol_bytes > 0);
	/* results already given stay */
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.leaf, &r), 0);
	CHECK_EQ_STR(r.name, "leaf_fn");
	/* the library is replaced on disk (another size): its symbols are not read from the new
	 * file, the module is still named */
	CHECK_EQ_INT(sh("cd %s && rm -f libprobe.so && cp nopie libprobe.so", tmpdir), 0);
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.scaled + 1, &r), 0);
	CHECK(r.name == NULL);
	CHECK(r.module && strstr(r.module, "/libprobe.so"));
	symbolizer_get_stats(s, &st);
	CHECK_EQ_INT(st.reopen_failures, 1);
	CHECK_EQ_INT(symbolizer_user(s, c.pid, c.lib_add, &r), 0); /* cached before */
	CHECK_EQ_STR(r.name, "lib_add");
	sh("cd %s && mv -f libprobe.so.keep libprobe.so && rm -f budget", tmpdir);
	symbolizer_free(s);
}

static void test_gone_pid(void)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_result r;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	CHECK_EQ_INT(symbolizer_track_pid(s, pid), -ESRCH);
	CHECK_EQ_INT(symbolizer_user(s, pid, 0x401000, &r), -ENOENT);
	CHECK_EQ_INT(symbolizer_user(s, 0, 0x401000, &r), -ENOENT);
	CHECK_EQ_INT(symbolizer_track_pid(s, -1), -EINVAL);
	symbolizer_free(s);
}

int main(void)
{
	setup();
	RUN(test_live_pie_and_exit);
	RUN(test_nopie_and_shared_cache);
	RUN(test_debuglink);
	RUN(test_self_libc_vdso);
	RUN(test_images);
	RUN(test_kernel);
	RUN(test_eviction);
	RUN(test_line_info);
	RUN(test_lazy_symbols);
	RUN(test_symbol_budget);
	RUN(test_gone_pid);
	sh("rm -rf %s", tmpdir);
	return test_summary();
}
