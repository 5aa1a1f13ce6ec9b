/* test_elf.c: the ELF reader against binaries built at test time with gcc (PIE, non-PIE, a
 * shared library, stripped with a debug file, compressed debug sections) whose symbol
 * addresses come from nm; and against truncated and corrupted copies. */
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/scorch-test-elf-XXXXXX";
#include "scratch.h"
static int have_tools;

/* The address of symbol name in file per `nm`, or 0. */
static uint64_t nm_addr(const char *file, const char *name)
{
	char cmd[1024], line[512];
	unsigned long long a = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm %s '%s' 2>/dev/null", strstr(file, ".so") ? "-D" : "", file);
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

static const char prog_src[] =
	"#include <stdio.h>\n"
	"int global_counter = 1;\n"
	"__attribute__((noinline)) int leaf_fn(int x) { return x * 3 + global_counter; }\n"
	"static __attribute__((noinline)) int static_fn(int x) { return leaf_fn(x) + 1; }\n"
	"__attribute__((noinline)) int mid_fn(int x) { return static_fn(x) * 2; }\n"
	"int main(int argc, char **argv) { printf(\"%d\\n\", mid_fn(argc)); return 0; }\n";

static const char lib_src[] =
	"__attribute__((noinline)) int lib_add(int a, int b) { return a + b; }\n"
	"__attribute__((noinline)) int lib_mul(int a, int b) { return lib_add(a, 0) * b; }\n";

static void setup(void)
{
	FILE *f;

	if (!mkdtemp(tmpdir))
		return;
	f = fopen(tpath("p.c"), "w");
	fputs(prog_src, f);
	fclose(f);
	f = fopen(tpath("lib.c"), "w");
	fputs(lib_src, f);
	fclose(f);
	have_tools = sh("cd %s && gcc -O1 -g -fno-inline -pie -fPIE -o pie p.c && "
			"gcc -O1 -g -fno-inline -no-pie -fno-PIE -o nopie p.c && "
			"gcc -O1 -g -fno-inline -shared -fPIC -Wl,--build-id -o lib.so lib.c && "
			"gcc -O1 -g -gz=zlib -o gz p.c && "
			"printf '__attribute__((noinline)) int impl_v2(int x) { return x + 2; }\\n"
			"__asm__(\".symver impl_v2, vfn2@@VER_2\");\\n' > v2.c && "
			"echo 'VER_2 { global: vfn2; local: *; };' > v2.map && "
			"gcc -O1 -shared -fPIC -Wl,--version-script=v2.map -o libv2.so v2.c && "
			"objcopy --only-keep-debug pie pie.debug && "
			"objcopy --strip-all --add-gnu-debuglink=pie.debug pie pie.stripped",
			tmpdir) == 0;
}

static void check_sym(struct elf_file *e, const char *file, const char *name)
{
	const struct elf_symbol *s;
	uint64_t a = nm_addr(file, name), size;

	CHECK(a != 0);
	s = elf_symbol_lookup(e, a);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ_STR(elf_symbol_name(e, s), name);
	CHECK_EQ_INT(s->addr, a);
	CHECK(s->size > 0);
	size = s->size;
	/* inside and at the last byte of the function, and not past it */
	s = elf_symbol_lookup(e, a + 1);
	CHECK(s && !strcmp(elf_symbol_name(e, s), name));
	s = elf_symbol_lookup(e, a + size - 1);
	CHECK(s && !strcmp(elf_symbol_name(e, s), name));
	s = elf_symbol_lookup(e, a + size);
	CHECK(!s || strcmp(elf_symbol_name(e, s), name));
}

static void test_pie_and_nopie(void)
{
	static const char *files[] = { "pie", "nopie" };
	struct errmsg err = { "" };
	size_t i;

	if (!have_tools)
		SKIP("gcc/objcopy not usable");
	for (i = 0; i < 2; i++) {
		struct elf_file *e = NULL;
		const char *path = tpath(files[i]);
		uint64_t v = 0, sz = 0;

		CHECK_EQ_INT(elf_open(path, &e, &err), 0);
		if (!e)
			continue;
		CHECK_EQ_INT(elf_type(e), i == 0 ? ET_DYN : ET_EXEC);
		CHECK_EQ_INT(elf_machine(e), EM_X86_64);
		CHECK(elf_build_id(e) != NULL && strlen(elf_build_id(e)) == 40);
		CHECK(elf_has_symtab(e));
		CHECK_EQ_INT(elf_symbols_load(e, &err), 0);
		check_sym(e, path, "leaf_fn");
		check_sym(e, path, "static_fn");
		check_sym(e, path, "mid_fn");
		check_sym(e, path, "main");
		CHECK_EQ_INT(elf_find_symbol(e, "global_counter", &v, &sz), 0);
		CHECK_EQ_INT(v, nm_addr(path, "global_counter"));
		CHECK_EQ_INT(sz, 4);
		CHECK_EQ_INT(elf_find_symbol(e, "no_such_symbol", &v, &sz), -ENOENT);
		/* before the first symbol: nothing */
		CHECK(elf_symbol_lookup(e, 1) == NULL);
		elf_close(e);
	}
}

static void test_segments_and_bias(void)
{
	struct elf_file *e = NULL;
	const struct elf_segment *segs;
	size_t n, i;
	uint64_t v, off;
	int exec_seen = 0;

	if (!have_tools)
		SKIP("gcc not usable");
	CHECK_EQ_INT(elf_open(tpath("pie"), &e, NULL), 0);
	if (!e)
		return;
	segs = elf_segments(e, &n);
	CHECK(n >= 2);
	for (i = 0; i < n; i++) {
		if (!(segs[i].flags & PF_X))
			continue;
		exec_seen = 1;
		CHECK_EQ_INT(elf_vaddr_of_offset(e, segs[i].offset, &v), 0);
		CHECK_EQ_INT(v, segs[i].vaddr);
		CHECK_EQ_INT(elf_offset_of_vaddr(e, segs[i].vaddr + 5, &off), 0);
		CHECK_EQ_INT(off, segs[i].offset + 5);
		/* a mapping at 0x555555554000 + the page of this segment */
		CHECK_EQ_INT(elf_load_bias(e, 0x555555554000ULL + (segs[i].vaddr & ~0xfffULL),
					   segs[i].offset & ~0xfffULL),
			     0x555555554000ULL);
	}
	CHECK(exec_seen);
	CHECK_EQ_INT(elf_vaddr_of_offset(e, 1ULL << 40, &v), -ENOENT);
	elf_close(e);
}

static void test_shared_library(void)
{
	struct elf_file *e = NULL;

	if (!have_tools)
		SKIP("gcc not usable");
	CHECK_EQ_INT(elf_open(tpath("lib.so"), &e, NULL), 0);
	if (!e)
		return;
	CHECK_EQ_INT(elf_type(e), ET_DYN);
	check_sym(e, tpath("lib.so"), "lib_add");
	check_sym(e, tpath("lib.so"), "lib_mul");
	elf_close(e);
}

static void test_versioned_names(void)
{
	struct elf_file *e = NULL;
	const struct elf_symbol *s;
	size_t n, i;
	int found = 0;

	if (!have_tools)
		SKIP("gcc not usable");
	CHECK_EQ_INT(elf_open(tpath("libv2.so"), &e, NULL), 0);
	if (!e)
		return;
	CHECK_EQ_INT(elf_symbols_load(e, NULL), 0);
	s = elf_symbols(e, &n);
	for (i = 0; i < n; i++) {
		CHECK(strchr(elf_symbol_name(e, &s[i]), '@') == NULL);
		if (!strcmp(elf_symbol_name(e, &s[i]), "vfn2")) {
			/* the global name wins over the local alias impl_v2 at the same address */
			CHECK(elf_symbol_lookup(e, s[i].addr + 1) == &s[i]);
			found = 1;
		}
	}
	CHECK(found);
	elf_close(e);
}

/* Every many_* function of many.so per nm is found at its address with its name: 0 or the
 * number of misses. */
static size_t check_many(struct elf_file *e, size_t *found)
{
	char cmd[1024], line[512];
	size_t misses = 0;
	FILE *f;

	*found = 0;
	snprintf(cmd, sizeof(cmd), "nm --defined-only %s", tpath("many.so"));
	f = popen(cmd, "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[400];
		const struct elf_symbol *h;

		if (sscanf(line, "%llx %c %399s", &a, &type, name) != 3 || strncmp(name, "many_", 5))
			continue;
		h = elf_symbol_lookup(e, a);
		if (!h || h->addr != a || strcmp(elf_symbol_name(e, h), name))
			misses++;
		(*found)++;
	}
	pclose(f);
	return misses;
}

/* A library with more symbols than one read block holds, in .symtab and .dynsym: every name
 * is found at nm's address, read from the file while it is open and from memory once it is
 * detached; loading holds little more than the result (records and one string table, not
 * copies of every name); the names held after detaching take exactly their size. */
static void test_many_symbols(void)
{
	enum { NFN = 3000 };
	struct elf_file *e = NULL;
	const struct elf_symbol *s;
	uint64_t before, extra, names = 0, strtab = 0;
	char cmd[1024], line[512];
	size_t n, i, found = 0;
	FILE *f;

	if (!have_tools)
		SKIP("gcc not usable");
	f = fopen(tpath("many.c"), "w");
	CHECK(f != NULL);
	if (!f)
		return;
	for (i = 0; i < NFN; i++)
		fprintf(f, "__attribute__((noinline)) int many_%zu_%.*s(int x) { return x * %zu; }\n",
			i, (int)(i % 37), "abcdefghijklmnopqrstuvwxyzabcdefghijklmnop", i + 3);
	fclose(f);
	CHECK_EQ_INT(sh("cd %s && gcc -O1 -shared -fPIC -o many.so many.c", tmpdir), 0);
	CHECK_EQ_INT(elf_open(tpath("many.so"), &e, NULL), 0);
	if (!e)
		return;
	before = alloc_live_bytes();
	alloc_peak_reset();
	CHECK_EQ_INT(elf_symbols_load(e, NULL), 0);
	extra = alloc_peak_bytes() - before;
	s = elf_symbols(e, &n);
	CHECK(n >= NFN);
	/* names stay in the file: the records and a small name buffer */
	CHECK(elf_symbols_bytes(e) <= n * sizeof(*s) + 1024);
	/* the candidates of both tables (2 x NFN records of 32 bytes, in a vector that doubles),
	 * the result, the largest string table and a read block of 24 KiB */
	snprintf(cmd, sizeof(cmd), "readelf -SW %s", tpath("many.so"));
	f = popen(cmd, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long addr, off, size;
		char sec[64];

		if (strstr(line, " STRTAB ") &&
		    sscanf(strchr(line, ']') + 1, "%63s STRTAB %llx %llx %llx", sec, &addr, &off,
			   &size) == 4 && size > strtab)
			strtab = size;
	}
	if (f)
		pclose(f);
	CHECK(strtab > 0);
	CHECK(extra <= n * sizeof(*s) + 2 * (2 * NFN * 32) + strtab + (24 << 10));
	CHECK_EQ_INT(check_many(e, &found), 0);
	CHECK_EQ_INT(found, NFN);
	/* detached: the names are copied into memory, in a pool of exactly their size */
	elf_detach_file(e);
	CHECK_EQ_INT(elf_fd(e), -1);
	for (i = 0; i < n; i++)
		names += strlen(elf_symbol_name(e, &s[i])) + 1;
	s = elf_symbols(e, &n);
	CHECK_EQ_INT(elf_symbols_bytes(e), n * sizeof(*s) + names);
	CHECK_EQ_INT(check_many(e, &found), 0);
	CHECK_EQ_INT(found, NFN);
	elf_close(e);
}

static void test_debuglink(void)
{
	struct elf_file *e = NULL, *d = NULL;
	const char *link;
	uint32_t crc = 0;
	char bid[129];

	if (!have_tools)
		SKIP("objcopy not usable");
	CHECK_EQ_INT(elf_open(tpath("pie.stripped"), &e, NULL), 0);
	if (!e)
		return;
	CHECK(!elf_has_symtab(e));
	link = elf_debuglink(e, &crc);
	CHECK_EQ_STR(link, "pie.debug");
	CHECK(crc != 0);
	CHECK_EQ_INT(elf_open_debug_file(e, tpath("pie.stripped"), NULL, tpath("nodebug"), &d), 0);
	if (d) {
		CHECK(elf_has_symtab(d));
		CHECK_EQ_STR(elf_build_id(d), elf_build_id(e));
		check_sym(d, tpath("pie"), "static_fn");
		elf_close(d);
		d = NULL;
	}
	/* by build id under a debug dir, once the debuglink file is gone */
	snprintf(bid, sizeof(bid), "%s", elf_build_id(e));
	CHECK_EQ_INT(sh("mkdir -p %s/dbg/.build-id/%.2s && mv %s/pie.debug %s/dbg/.build-id/%.2s/%s.debug",
			tmpdir, bid, tmpdir, tmpdir, bid, bid + 2), 0);
	CHECK_EQ_INT(elf_open_debug_file(e, tpath("pie.stripped"), NULL, tpath("nodebug"), &d), -ENOENT);
	CHECK_EQ_INT(elf_open_debug_file(e, tpath("pie.stripped"), NULL, tpath("dbg"), &d), 0);
	if (d) {
		check_sym(d, tpath("pie"), "leaf_fn");
		elf_close(d);
		d = NULL;
	}
	/* a debuglink file whose CRC does not match is refused */
	CHECK_EQ_INT(sh("cp %s/nopie %s/pie.debug", tmpdir, tmpdir), 0);
	CHECK_EQ_INT(elf_open_debug_file(e, tpath("pie.stripped"), NULL, tpath("nodebug"), &d), -ENOENT);
	elf_close(e);
}

static void test_compressed_section(void)
{
	struct elf_file *e = NULL, *plain = NULL;
	const void *d1, *d2;
	size_t n1 = 0, n2 = 0;
	struct elf_section_info si;

	if (!have_tools)
		SKIP("gcc not usable");
	CHECK_EQ_INT(sh("objcopy --decompress-debug-sections %s/gz %s/gz.plain", tmpdir, tmpdir), 0);
	CHECK_EQ_INT(elf_open(tpath("gz"), &e, NULL), 0);
	CHECK_EQ_INT(elf_open(tpath("gz.plain"), &plain, NULL), 0);
	if (!e || !plain)
		goto cleanup;
	CHECK_EQ_INT(elf_section_info(e, ".debug_info", &si), 0);
	CHECK(si.flags & SHF_COMPRESSED);
	CHECK_EQ_INT(elf_section(e, ".debug_info", &d1, &n1, NULL), 0);
	CHECK_EQ_INT(elf_section(plain, ".debug_info", &d2, &n2, NULL), 0);
	CHECK(n1 > 0 && n1 == n2 && !memcmp(d1, d2, n1));
	CHECK_EQ_INT(elf_section(e, ".bss", &d1, &n1, NULL), -ENOENT);
	CHECK_EQ_INT(elf_section(e, ".nonexistent", &d1, &n1, NULL), -ENOENT);
cleanup:
	elf_close(e);
	elf_close(plain);
}

static void test_self(void)
{
	struct elf_file *e = NULL;
	const struct elf_symbol *s;
	uint64_t id1 = 0, id2 = 0;

	CHECK_EQ_INT(elf_open("/proc/self/exe", &e, NULL), 0);
	if (!e)
		return;
	CHECK_EQ_INT(elf_find_symbol(e, "main", &(uint64_t){ 0 }, NULL), 0);
	s = elf_symbol_lookup(e, 0); /* loads symbols */
	CHECK(s == NULL);
	CHECK(elf_symbols(e, &(size_t){ 0 }) != NULL);
	CHECK_EQ_INT(elf_file_id(e, &id1), 0);
	CHECK_EQ_INT(elf_file_id(e, &id2), 0);
	CHECK(id1 != 0 && id1 == id2);
	elf_close(e);
}

static void test_truncated_and_corrupt(void)
{
	struct buf_file { uint8_t *d; size_t n; } f = { 0 };
	FILE *fp;
	size_t cut, i;
	struct errmsg err;
	uint64_t main_addr;

	if (!have_tools)
		SKIP("gcc not usable");
	fp = fopen(tpath("pie"), "rb");
	if (!fp)
		return;
	f.d = xmalloc(1 << 20);
	f.n = fread(f.d, 1, 1 << 20, fp);
	fclose(fp);
	main_addr = nm_addr(tpath("pie"), "main");
	/* every truncation opens or fails cleanly; symbols never crash */
	for (cut = 0; cut < f.n; cut += cut < 256 ? 7 : 397) {
		struct elf_file *e = NULL;
		int rc = elf_open_mem(f.d, cut, &e, &err);

		if (cut < sizeof(Elf64_Ehdr))
			CHECK_EQ_INT(rc, -ENOEXEC);
		if (rc == 0) {
			elf_symbols_load(e, &err);
			elf_symbol_lookup(e, main_addr);
			elf_close(e);
		}
	}
	/* random byte flips */
	srand(1);
	for (i = 0; i < 300; i++) {
		uint8_t *c = xmalloc(f.n);
		struct elf_file *e = NULL;
		int k;

		memcpy(c, f.d, f.n);
		for (k = 0; k < 8; k++)
			c[(size_t)rand() % 4096 < f.n ? (size_t)rand() % 4096 : 0] ^= (uint8_t)rand();
		if (elf_open_mem(c, f.n, &e, &err) == 0) {
			const void *d;
			size_t n;

			elf_symbols_load(e, &err);
			elf_section(e, ".text", &d, &n, NULL);
			elf_close(e);
		}
		xfree(c);
	}
	/* a file truncated on disk after open */
	{
		struct elf_file *e = NULL;

		CHECK_EQ_INT(sh("cp %s/pie %s/shrink", tmpdir, tmpdir), 0);
		CHECK_EQ_INT(elf_open(tpath("shrink"), &e, NULL), 0);
		CHECK_EQ_INT(truncate(tpath("shrink"), 100), 0);
		if (e) {
			const void *d;
			size_t n;

			CHECK(elf_symbols_load(e, &err) < 0);
			CHECK_EQ_INT(elf_section(e, ".text", &d, &n, NULL), -EIO);
			elf_close(e);
		}
	}
	CHECK_EQ_INT(elf_open(tpath("p.c"), &(struct elf_file *){ NULL }, &err), -ENOEXEC);
	CHECK(strstr(err.msg, "not an ELF") != NULL);
	CHECK_EQ_INT(elf_open(tpath("missing"), &(struct elf_file *){ NULL }, &err), -ENOENT);
	xfree(f.d);
}

int main(void)
{
	setup();
	RUN(test_pie_and_nopie);
	RUN(test_segments_and_bias);
	RUN(test_shared_library);
	RUN(test_versioned_names);
	RUN(test_many_symbols);
	RUN(test_debuglink);
	RUN(test_compressed_section);
	RUN(test_self);
	RUN(test_truncated_and_corrupt);
	sh("rm -rf %s", tmpdir);
	return test_summary();
}
