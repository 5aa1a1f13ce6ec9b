/* test_demangle.c: C++ and Rust names demangled as g++ and rustc produce them. The fixed names
 * below were taken from `nm` on binaries built by g++ 12 and rustc (legacy and v0 mangling);
 * when g++ and rustc are installed, fresh binaries are built and checked too. */
#include "agent/demangle.h"
#include "lib/alloc.h"
#include "test.h"

#include <stdarg.h>
#include <unistd.h>

static void check_dm(const char *in, const char *want)
{
	char *out = demangle(in);

	if (want)
		CHECK_EQ_STR(out, want);
	else
		CHECK(out == NULL);
	xfree(out);
}

static void test_cpp(void)
{
	check_dm("_Z3fooi", "foo(int)");
	check_dm("_ZN3foo3barE", "foo::bar");
	check_dm("_ZNSt6vectorIiSaIiEE9push_backERKi",
		 "std::vector<int, std::allocator<int> >::push_back(int const&)");
	check_dm("_ZN2ns5Klass6methodEv", "ns::Klass::method()");
	check_dm("_Z3fooi.cold", "foo(int) [clone .cold]");
	check_dm("_ZZ4mainE1x", "main::x");
}

static void test_rust(void)
{
	check_dm("_ZN1r11hello_world17he337b6697eb61099E", "r::hello_world");
	check_dm("_ZN1r5inner5Thing6method17hbefd09a525198fceE", "r::inner::Thing::method");
	check_dm("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE", "core::fmt::Formatter::pad");
	check_dm("_RNvCs6GmmlP4bgsG_1r11hello_world", "r::hello_world");
	check_dm("_RNvMNtCs6GmmlP4bgsG_1r5innerNtB2_5Thing6method", "<r::inner::Thing>::method");
}

static void test_not_mangled(void)
{
	char *long_name;

	check_dm("main", NULL);
	check_dm("", NULL);
	check_dm("_", NULL);
	check_dm("_Z", NULL);
	check_dm("_R", NULL);
	check_dm("_Zgarbage!!", NULL);
	CHECK(!demangle_is_mangled("malloc"));
	CHECK(demangle_is_mangled("_ZN3foo3barE"));
	/* an absurdly long name is left alone, not fed to the demangler */
	long_name = xcalloc(1, DEMANGLE_MAX_INPUT + 16);
	memcpy(long_name, "_ZN", 3);
	memset(long_name + 3, 'A', DEMANGLE_MAX_INPUT + 8);
	check_dm(long_name, NULL);
	xfree(long_name);
}

/* Build with g++ and rustc now and demangle what nm reports. */
static int tool_names(const char *cmd, const char *grep, char *out, size_t outlen)
{
	char line[1024];
	FILE *f = popen(cmd, "r");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char sym[900];
		unsigned long long v;
		char t;

		if (sscanf(line, "%llx %c %899s", &v, &t, sym) == 3 && strstr(sym, grep)) {
			snprintf(out, outlen, "%s", sym);
			found = 1;
		}
	}
	pclose(f);
	return found;
}

static void test_fresh_compilers(void)
{
	char dir[] = "/tmp/scorch-test-demangle-XXXXXX", cmd[2048], sym[1024];
	FILE *f;
	char *d;
	int ran = 0;

	if (!mkdtemp(dir))
		SKIP("mkdtemp failed");
	snprintf(cmd, sizeof(cmd), "%s/a.cc", dir);
	f = fopen(cmd, "w");
	fputs("namespace zz { template <class T> struct Box { __attribute__((noinline)) T get(T v) "
	      "{ return v + 1; } }; }\nint main() { zz::Box<long> b; return (int)b.get(2); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && g++ -O1 -o a a.cc 2>/dev/null && nm a", dir);
	if (tool_names(cmd, "Box", sym, sizeof(sym))) {
		d = demangle(sym);
		CHECK_EQ_STR(d, "zz::Box<long>::get(long)");
		xfree(d);
		ran++;
	}
	snprintf(cmd, sizeof(cmd), "%s/r.rs", dir);
	f = fopen(cmd, "w");
	fputs("#[inline(never)] pub fn scorch_probe(x: u64) -> u64 { x * 3 }\n"
	      "fn main() { println!(\"{}\", scorch_probe(3)); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && PATH=$PATH:$HOME/.cargo/bin rustc -o r r.rs 2>/dev/null && nm r", dir);
	if (tool_names(cmd, "scorch_probe", sym, sizeof(sym))) {
		d = demangle(sym);
		CHECK_EQ_STR(d, "r::scorch_probe");
		xfree(d);
		ran++;
	}
	snprintf(cmd, sizeof(cmd),
		 "cd %s && PATH=$PATH:$HOME/.cargo/bin rustc -C symbol-mangling-version=v0 -o r0 r.rs 2>/dev/null && nm r0", dir);
	if (tool_names(cmd, "scorch_probe", sym, sizeof(sym))) {
		CHECK(sym[0] == '_' && sym[1] == 'R');
		d = demangle(sym);
		CHECK_EQ_STR(d, "r::scorch_probe");
		xfree(d);
		ran++;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		CHECK(0);
	if (!ran)
		SKIP("neither g++ nor rustc usable");
}

int main(void)
{
	RUN(test_cpp);
	RUN(test_rust);
	RUN(test_not_mangled);
	RUN(test_fresh_compilers);
	return test_summary();
}
