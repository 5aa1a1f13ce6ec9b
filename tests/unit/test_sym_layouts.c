/* test_sym_layouts.c: address-to-file mapping (elf_mapping_bias()) for every ELF layout the
 * linkers produce. Programs built at test time with GNU ld (with and without -z separate-code),
 * gold, LLD (its default layout puts the code one page above its file offset; with
 * --no-rosegment; with -z separate-code; with a linker script that puts two executable
 * segments in one file page), non-PIE executables, a shared library linked at a fixed base (a
 * prelinked layout) and a Rust release binary (rustc links with LLD) print the runtime
 * addresses of their functions, and of an alias mapping of their own code at another file
 * offset; every address must resolve to its exact name. The mapping rules are also checked on
 * synthetic segment tables. */
#include "agent/elf.h"
#include "agent/symbolizer.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/scorch-test-layouts-XXXXXX";
#include "scratch.h"

/* The program: functions in .text (and, with FAR, one in a section of its own), a call into a
 * shared library, and an alias: its own code mapped a second time, from the page of leaf_fn. */
static const char prog_src[] =
	"#define _GNU_SOURCE\n"
	"#include <fcntl.h>\n"
	"#include <stdio.h>\n"
	"#include <stdint.h>\n"
	"#include <string.h>\n"
	"#include <sys/mman.h>\n"
	"#include <unistd.h>\n"
	"extern int lib_call(int);\n"
	"extern void *lib_addr(void);\n"
	"volatile int sink;\n"
	"#ifdef FAR\n"
	"#define FARSEC __attribute__((section(\".text.far\")))\n"
	"#else\n"
	"#define FARSEC\n"
	"#endif\n"
	"__attribute__((noinline)) int leaf_fn(int x) { return x * 3 + sink; }\n"
	"static __attribute__((noinline)) int static_fn(int x) { return leaf_fn(x) + 1; }\n"
	"__attribute__((noinline)) FARSEC int far_fn(int x) { return static_fn(x) * 7; }\n"
	"__attribute__((noinline)) int mid_fn(int x) { return far_fn(x) + lib_call(x); }\n"
	"/* The mapping of this file that holds p (start, file offset), from /proc/self/maps. */\n"
	"static int find_map(uintptr_t p, uintptr_t *start, unsigned long long *off) {\n"
	"  char line[4096]; FILE *f = fopen(\"/proc/self/maps\", \"r\");\n"
	"  unsigned long long a, b, o;\n"
	"  while (f && fgets(line, sizeof(line), f))\n"
	"    if (sscanf(line, \"%llx-%llx %*s %llx\", &a, &b, &o) == 3 && p >= a && p < b) {\n"
	"      *start = a; *off = o; fclose(f); return 0; }\n"
	"  if (f) fclose(f);\n"
	"  return -1;\n"
	"}\n"
	"int main(void) {\n"
	"  uintptr_t start = 0, alias = 0; unsigned long long off = 0;\n"
	"  int fd = open(\"/proc/self/exe\", O_RDONLY);\n"
	"  sink = mid_fn(1);\n"
	"  if (fd >= 0 && find_map((uintptr_t)leaf_fn, &start, &off) == 0) {\n"
	"    uintptr_t page = ((uintptr_t)leaf_fn - start) & ~(uintptr_t)4095;\n"
	"    void *m = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, off + page);\n"
	"    if (m != MAP_FAILED) alias = (uintptr_t)m + ((uintptr_t)leaf_fn - start - page);\n"
	"  }\n"
	"  printf(\"%p %p %p %p %p %p\\n\", (void *)leaf_fn, (void *)static_fn, (void *)far_fn,\n"
	"         (void *)mid_fn, lib_addr(), (void *)alias);\n"
	"  fflush(stdout);\n"
	"  for (;;) pause();\n"
	"}\n";

/* A static function: its address is its own, not a PLT entry of a non-PIE caller. */
static const char lib_src[] =
	"static __attribute__((noinline)) int lib_fn(int x) { return x * 5 + 1; }\n"
	"int lib_call(int x) { return lib_fn(x); }\n"
	"void *lib_addr(void) { return (void *)lib_fn; }\n";

/* A linker script fragment: .text.far in a PT_LOAD of its own, after the data. With LLD all
 * segments of this small program then start in the first page of the file. */
static const char far_lds[] = "SECTIONS { .text.far : { *(.text.far) } } INSERT AFTER .bss;\n";

struct variant {
	const char *name;
	const char *cc;       /* compiler driver and link flags of the program */
	const char *lib;      /* link flags of the library: a fixed base (prelinked layout) */
	int far;
};

static const struct variant variants[] = {
	{ "bfd", "gcc -fuse-ld=bfd -pie -fPIE -Wl,-z,separate-code",
	  "gcc -fuse-ld=bfd -Wl,-Ttext-segment=0x20000000", 0 },
	{ "bfd-noseparate", "gcc -fuse-ld=bfd -pie -fPIE -Wl,-z,noseparate-code",
	  "gcc -fuse-ld=bfd -Wl,-z,noseparate-code", 0 },
	{ "bfd-nopie", "gcc -fuse-ld=bfd -no-pie -fno-PIE", "gcc -fuse-ld=bfd", 0 },
	{ "gold", "gcc -fuse-ld=gold -pie -fPIE", "gcc -fuse-ld=gold -Wl,-Ttext-segment=0x20000000", 0 },
	{ "lld", "clang -fuse-ld=lld -pie -fPIE", "clang -fuse-ld=lld -Wl,--image-base=0x20000000", 0 },
	{ "lld-separate", "clang -fuse-ld=lld -pie -fPIE -Wl,-z,separate-code",
	  "clang -fuse-ld=lld -Wl,-z,separate-code", 0 },
	{ "lld-norosegment", "clang -fuse-ld=lld -pie -fPIE -Wl,--no-rosegment",
	  "clang -fuse-ld=lld -Wl,--no-rosegment", 0 },
	{ "lld-nopie", "clang -fuse-ld=lld -no-pie -fno-PIE", "clang -fuse-ld=lld", 0 },
	{ "lld-two-exec-segments", "clang -fuse-ld=lld -pie -fPIE -DFAR -Wl,-T,far.lds",
	  "clang -fuse-ld=lld", 1 },
};

static void check_name(struct symbolizer *s, pid_t pid, uint64_t addr, const char *want,
		       const char *variant)
{
	struct sym_result r;
	int rc = symbolizer_user(s, (int)pid, addr, &r);

	if (rc != 0 || !r.name || strcmp(r.name, want)) {
		fprintf(stderr, "  FAIL %s: %s: 0x%llx is '%s' (rc %d, module %s), expected '%s'\n",
			test_current, variant, (unsigned long long)addr, r.name ? r.name : "(null)", rc,
			r.module ? r.module : "(null)", want);
		test_failed_checks++;
	}
}

static void test_linkers(void)
{
	size_t i;
	int built = 0;

	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		const struct variant *v = &variants[i];
		struct symbolizer *s;
		uint64_t a[6];
		char prog[600];
		pid_t pid;

		if (sh("cd %s && mkdir -p %s && %s -O1 -g -shared -fPIC -o %s/libl.so lib.c && "
		       "%s -O1 -g -fno-inline -o %s/prog p.c -L%s -ll -Wl,-rpath,'$ORIGIN' "
		       "2>%s/build.log",
		       tmpdir, v->name, v->lib, v->name, v->cc, v->name, v->name, v->name)) {
			fprintf(stderr, "  SKIP %s: cannot build with '%s'\n", v->name, v->cc);
			continue;
		}
		built++;
		snprintf(prog, sizeof(prog), "%s/%s/prog", tmpdir, v->name);
		pid = start_prog(prog, a, 6);
		CHECK(pid > 0);
		if (pid <= 0)
			continue;
		s = symbolizer_new();
		check_name(s, pid, a[0], "leaf_fn", v->name);
		check_name(s, pid, a[0] + 1, "leaf_fn", v->name);
		check_name(s, pid, a[1], "static_fn", v->name);
		check_name(s, pid, a[2], "far_fn", v->name);
		check_name(s, pid, a[3] + 2, "mid_fn", v->name);
		check_name(s, pid, a[4], "lib_fn", v->name);
		/* the same file mapped again, from another offset */
		CHECK(a[5] != 0);
		if (a[5])
			check_name(s, pid, a[5], "leaf_fn", v->name);
		symbolizer_free(s);
		stop_prog(pid);
	}
	if (!built)
		SKIP("no linker usable");
}

static const char *rustc_path(void)
{
	static char path[512];
	const char *home = getenv("HOME");

	if (sh("command -v rustc > /dev/null 2>&1") == 0)
		return "rustc";
	snprintf(path, sizeof(path), "%s/.cargo/bin/rustc", home ? home : "/root");
	return access(path, X_OK) == 0 ? path : NULL;
}

static void test_rust_release(void)
{
	const char *rustc = rustc_path();
	struct symbolizer *s;
	uint64_t a[3];
	char prog[512];
	pid_t pid;

	if (!rustc)
		SKIP("rustc not installed");
	if (write_file("r.rs",
		       "use std::io::Write;\n"
		       "#[inline(never)] #[no_mangle] pub extern \"C\" fn rs_leaf(x: u64) -> u64 {\n"
		       "  std::hint::black_box(x).wrapping_mul(3) }\n"
		       "#[inline(never)] fn rs_mid(x: u64) -> u64 { rs_leaf(x) + 1 }\n"
		       "#[inline(never)] fn rs_deep(v: &mut Vec<u64>) -> u64 { v.push(rs_mid(3)); v[0] }\n"
		       "fn main() {\n"
		       "  let mut v = Vec::new();\n"
		       "  let x = rs_deep(std::hint::black_box(&mut v));\n"
		       "  let f: fn(u64) -> u64 = rs_mid;\n"
		       "  let g: fn(&mut Vec<u64>) -> u64 = rs_deep;\n"
		       "  println!(\"{:p} {:p} {:p} {}\", rs_leaf as *const (), f as *const (),\n"
		       "           g as *const (), x);\n"
		       "  std::io::stdout().flush().unwrap();\n"
		       "  loop { std::thread::sleep(std::time::Duration::from_secs(100)); }\n"
		       "}\n") < 0 ||
	    sh("cd %s && %s -O -C debuginfo=1 -o rs r.rs 2>rs.log", tmpdir, rustc))
		SKIP("rustc cannot build a program here");
	snprintf(prog, sizeof(prog), "%s/rs", tmpdir);
	pid = start_prog(prog, a, 3);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	s = symbolizer_new();
	check_name(s, pid, a[0], "rs_leaf", "rust");
	check_name(s, pid, a[1], "r::rs_mid", "rust");
	check_name(s, pid, a[2] + 1, "r::rs_deep", "rust");
	symbolizer_free(s);
	stop_prog(pid);
}

/* LLD's default layout, as rustc 1.95 links: code one page above its file offset. */
static const struct elf_segment lld_segs[] = {
	{ .vaddr = 0, .memsz = 0x12d4c, .offset = 0, .filesz = 0x12d4c, .flags = PF_R },
	{ .vaddr = 0x13d50, .memsz = 0x3d4f0, .offset = 0x12d50, .filesz = 0x3d4f0, .flags = PF_R | PF_X },
	{ .vaddr = 0x52240, .memsz = 0x2dc0, .offset = 0x50240, .filesz = 0x2748, .flags = PF_R | PF_W },
	{ .vaddr = 0x55988, .memsz = 0xa8a, .offset = 0x52988, .filesz = 0x9c0, .flags = PF_R | PF_W },
};

static void test_rules(void)
{
	const uint64_t base = 0x555555554000ULL;
	struct elf_mapping text = { base + 0x13000, base + 0x51000, 0x12000, PF_R | PF_X };
	struct elf_mapping ro = { base, base + 0x13000, 0, PF_R };
	struct elf_mapping relro = { base + 0x52000, base + 0x55000, 0x50000, PF_R };
	struct elf_mapping data = { base + 0x55000, base + 0x57000, 0x52000, PF_R | PF_W };
	struct elf_mapping far = { 0x7f0000000000ULL, 0x7f0000001000ULL, 1ULL << 40, PF_R | PF_X };
	struct elf_mapping any = { base + 0x13000, base + 0x13000, 0x12000, ELF_MAP_ANY_PROT };
	uint64_t bias = 0;

	/* The code: the file offset's page is shared with the read-only segment. */
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 4, &text, NULL, &bias), 0);
	CHECK_EQ_INT(bias, base);
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 4, &text, &base, &bias), 0);
	CHECK_EQ_INT(bias, base);
	/* Unknown protection: the segment that starts in that page. */
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 4, &any, NULL, &bias), 0);
	CHECK_EQ_INT(bias, base);
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 4, &ro, NULL, &bias), 0);
	CHECK_EQ_INT(bias, base);
	/* RELRO made read-only by mprotect, and the data after it. */
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 4, &relro, &base, &bias), 0);
	CHECK_EQ_INT(bias, base);
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 4, &data, &base, &bias), 0);
	CHECK_EQ_INT(bias, base);
	/* A mapping no segment holds. */
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 4, &far, NULL, &bias), -ENOENT);
	CHECK_EQ_INT(elf_segments_bias(lld_segs, 0, &text, NULL, &bias), -ENOENT);
}

/* Two executable segments starting in the same file page: only the bias of the load (the
 * previous mapping's) can tell them apart; the first of them is the lower one. */
static void test_rules_shared_page(void)
{
	static const struct elf_segment segs[] = {
		{ .vaddr = 0, .offset = 0, .filesz = 0x6d4, .memsz = 0x6d4, .flags = PF_R },
		{ .vaddr = 0x16e0, .offset = 0x6e0, .filesz = 0x190, .memsz = 0x190, .flags = PF_R | PF_X },
		{ .vaddr = 0x2870, .offset = 0x870, .filesz = 0x1e8, .memsz = 0x1e8, .flags = PF_R | PF_W },
		{ .vaddr = 0x4aa0, .offset = 0xaa0, .filesz = 0xa, .memsz = 0xa, .flags = PF_R | PF_X },
	};
	const uint64_t base = 0x560000000000ULL;
	struct elf_mapping ro = { base, base + 0x1000, 0, PF_R };
	struct elf_mapping x1 = { base + 0x1000, base + 0x2000, 0, PF_R | PF_X };
	struct elf_mapping x2 = { base + 0x4000, base + 0x5000, 0, PF_R | PF_X };
	uint64_t bias = 0, hint;

	/* with every mapping, in order */
	CHECK_EQ_INT(elf_segments_bias(segs, 4, &ro, NULL, &bias), 0);
	CHECK_EQ_INT(bias, base);
	hint = bias;
	CHECK_EQ_INT(elf_segments_bias(segs, 4, &x1, &hint, &bias), 0);
	CHECK_EQ_INT(bias, base);
	CHECK_EQ_INT(elf_segments_bias(segs, 4, &x2, &hint, &bias), 0);
	CHECK_EQ_INT(bias, base);
	/* with the executable mappings only (what the process registry hands out) */
	CHECK_EQ_INT(elf_segments_bias(segs, 4, &x1, NULL, &bias), 0);
	CHECK_EQ_INT(bias, base);
	hint = bias;
	CHECK_EQ_INT(elf_segments_bias(segs, 4, &x2, &hint, &bias), 0);
	CHECK_EQ_INT(bias, base);
}

/* Hostile segment tables: sizes and offsets at the top of the address space. */
static void test_rules_hostile(void)
{
	static const struct elf_segment segs[] = {
		{ .vaddr = UINT64_MAX - 10, .offset = UINT64_MAX - 10, .filesz = 100, .flags = PF_X },
		{ .vaddr = 0, .offset = 0x1000, .filesz = UINT64_MAX, .flags = PF_X },
		{ .vaddr = 0, .offset = 0, .filesz = 0, .memsz = 0x1000, .flags = PF_X },
	};
	struct elf_mapping m = { 0x1000, 0x2000, 0x1000, PF_R | PF_X };
	uint64_t bias;

	uint64_t hint = 0x1000;

	CHECK_EQ_INT(elf_segments_bias(segs, 3, &m, &hint, &bias), -ENOENT);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	if (!mkdtemp(tmpdir))
		return 1;
	write_file("p.c", prog_src);
	write_file("lib.c", lib_src);
	write_file("far.lds", far_lds);
	RUN(test_rules);
	RUN(test_rules_shared_page);
	RUN(test_rules_hostile);
	RUN(test_linkers);
	RUN(test_rust_release);
	sh("rm -rf %s", tmpdir);
	return test_summary();
}
