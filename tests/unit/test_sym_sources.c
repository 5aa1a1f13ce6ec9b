/* test_sym_sources.c: the sources of names and lines besides a file's own .symtab, against
 * programs built at test time:
 *   - MiniDebugInfo: a stripped C++ program with a .gnu_debugdata made here (Fedora's recipe:
 *     the function symbols .dynsym lacks, xz-compressed) names a static function and a method;
 *     the same program without it does not;
 *   - DWARF inlined calls: a C program built -O2 -g with always_inline helpers; at every
 *     address of its hot function, our frames must equal `addr2line -i -f` (names, files,
 *     lines), and the symbolizer must report the inlined frames of a live process;
 *   - JIT code: a process that maps anonymous executable memory and names it in
 *     /tmp/perf-PID.map (appended later: a miss reads it again) and in a jitdump file;
 *     perf maps that are links or belong to another user are refused. */
#include "agent/elf.h"
#include "agent/minidebug.h"
#include "agent/perfmap.h"
#include "agent/srcline.h"
#include "agent/symbolizer.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/scorch-test-sources-XXXXXX";
#include "scratch.h"
static int have_cxx, have_inline;

static const char mini_src[] =
	"#include <cstdio>\n"
	"#include <unistd.h>\n"
	"namespace app {\n"
	"struct Worker { __attribute__((noinline)) int step(int x); };\n"
	"int Worker::step(int x) { return x * 7 + 1; }\n"
	"}\n"
	"static __attribute__((noinline)) int hidden_static(int x) { return x ^ 0x5a; }\n"
	"volatile int sink;\n"
	"int main() {\n"
	"  app::Worker w;\n"
	"  sink = w.step(3) + hidden_static(4);\n"
	"  int (app::Worker::*pm)(int) = &app::Worker::step;\n"
	"  void *p; __builtin_memcpy(&p, &pm, sizeof(p));\n"
	"  printf(\"%p %p\\n\", p, (void *)hidden_static);\n"
	"  fflush(stdout);\n"
	"  for (;;) pause();\n"
	"}\n";

/* Inlined helpers in a hot loop; the pointers printed are of the noinline functions. */
static const char inline_src[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"volatile unsigned sink;\n"
	"static inline __attribute__((always_inline)) unsigned mix(unsigned x) {\n"
	"  return (x ^ (x >> 7)) * 2654435761u;\n"
	"}\n"
	"static inline __attribute__((always_inline)) unsigned twice(unsigned x) {\n"
	"  return mix(x) + mix(x + 1);\n"
	"}\n"
	"__attribute__((noinline)) unsigned hot_loop(unsigned n) {\n"
	"  unsigned s = 0;\n"
	"  for (unsigned i = 0; i < n; i++)\n"
	"    s += twice(s + i);\n"
	"  return s;\n"
	"}\n"
	"int main(void) {\n"
	"  sink = hot_loop(1000);\n"
	"  printf(\"%p\\n\", (void *)hot_loop);\n"
	"  fflush(stdout);\n"
	"  for (;;) pause();\n"
	"}\n";

static void setup(void)
{
	if (!mkdtemp(tmpdir))
		return;
	write_file("prog.cc", mini_src);
	write_file("inl.c", inline_src);
	/* MiniDebugInfo as Fedora makes it (find-debuginfo's add_minidebug). */
	have_cxx = sh("cd %s && g++ -O1 -g -o prog prog.cc && "
		      "nm prog --format=posix --defined-only | "
		      "awk '{ if ($2 == \"T\" || $2 == \"t\" || $2 == \"W\") print $1 }' | sort > funcsyms && "
		      "nm -D prog --format=posix --defined-only | awk '{ print $1 }' | sort > dynsyms && "
		      "comm -13 dynsyms funcsyms > keep && "
		      "objcopy --only-keep-debug prog full.debug && "
		      "objcopy -S --remove-section .gdb_index --remove-section .comment "
		      "--keep-symbols=keep full.debug minidebuginfo && xz -f minidebuginfo && "
		      "objcopy --strip-all prog stripped && "
		      "objcopy --add-section .gnu_debugdata=minidebuginfo.xz stripped mini",
		      tmpdir) == 0;
	have_inline = sh("cd %s && gcc -O2 -g -o inl inl.c && command -v addr2line > /dev/null",
			 tmpdir) == 0;
}

static struct symbolizer *new_sym(void)
{
	struct symbolizer_options o;

	memset(&o, 0, sizeof(o));
	o.no_debuginfod = 1;
	o.debug_dir = "/nonexistent"; /* only what the files themselves say */
	return symbolizer_new_opts(&o);
}

static void test_minidebuginfo(void)
{
	struct symbolizer *s;
	struct sym_result r;
	uint64_t a[2];
	pid_t pid;

	if (!have_cxx)
		SKIP("g++/objcopy/xz cannot make a MiniDebugInfo program here");
	/* the stripped program alone: .dynsym has neither function, which is named after its
	 * start (its FDE; the address asked, whose file offset is its address with GNU ld) */
	pid = start_prog(tpath("stripped"), a, 2);
	CHECK(pid > 0);
	if (pid > 0) {
		char want[64];

		s = new_sym();
		CHECK_EQ_INT(symbolizer_user(s, pid, a[1], &r), 0);
		snprintf(want, sizeof(want), "stripped+0x%" PRIx64, r.module_offset);
		CHECK_EQ_STR(r.name, want);
		CHECK_EQ_INT(r.func_start, r.module_offset);
		symbolizer_free(s);
		stop_prog(pid);
	}
	pid = start_prog(tpath("mini"), a, 2);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	s = new_sym();
	CHECK_EQ_INT(symbolizer_user(s, pid, a[0] + 1, &r), 0);
	CHECK_EQ_STR(r.name, "app::Worker::step(int)");
	CHECK_EQ_STR(r.mangled, "_ZN3app6Worker4stepEi");
	CHECK_EQ_INT(symbolizer_user(s, pid, a[1], &r), 0);
	CHECK_EQ_STR(r.name, "hidden_static(int)");
	{
		struct symbolizer_stats st;

		symbolizer_get_stats(s, &st);
		CHECK(st.mini_files >= 1);
	}
	symbolizer_free(s);
	stop_prog(pid);
}

/* Names are loaded at a file's first lookup, within the symbol budget: with room for one file at
 * a time, MiniDebugInfo and DWARF are dropped and loaded again as lookups alternate between two
 * programs, and give the same answers. */
static void test_lazy_sources(void)
{
	struct symbolizer_options o;
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct sym_result r;
	uint64_t a[2], live[1];
	pid_t mini, inl;

	if (!have_cxx || !have_inline)
		SKIP("g++/gcc/objcopy/xz cannot make the programs here");
	mini = start_prog(tpath("mini"), a, 2);
	inl = start_prog(tpath("inl"), live, 1);
	CHECK(mini > 0 && inl > 0);
	if (mini <= 0 || inl <= 0)
		goto out;
	memset(&o, 0, sizeof(o));
	o.no_debuginfod = 1;
	o.debug_dir = "/nonexistent";
	o.max_symbol_bytes = 1;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(symbolizer_track_pid(s, mini), 0);
	CHECK_EQ_INT(symbolizer_track_pid(s, inl), 0);
	symbolizer_get_stats(s, &st);
	CHECK(st.files_pending >= 3); /* both programs and libc: headers only */
	CHECK_EQ_INT(st.mini_files, 0);
	CHECK_EQ_INT(st.line_files, 0);
	CHECK_EQ_INT(symbolizer_user(s, mini, a[0] + 1, &r), 0);
	CHECK_EQ_STR(r.name, "app::Worker::step(int)");
	symbolizer_get_stats(s, &st);
	CHECK_EQ_INT(st.mini_files, 1);
	CHECK_EQ_INT(symbolizer_user(s, inl, live[0], &r), 0);
	CHECK_EQ_STR(r.name, "hot_loop");
	CHECK(r.source_file && strstr(r.source_file, "inl.c"));
	symbolizer_get_stats(s, &st);
	CHECK(st.drops >= 1);
	CHECK_EQ_INT(st.mini_files, 0); /* dropped for the other */
	CHECK_EQ_INT(st.line_files, 1);
	CHECK_EQ_INT(symbolizer_user(s, mini, a[1], &r), 0);
	CHECK_EQ_STR(r.name, "hidden_static(int)");
	symbolizer_get_stats(s, &st);
	CHECK(st.reopens >= 1);
	CHECK_EQ_INT(st.mini_files, 1);
	CHECK_EQ_INT(st.line_files, 0); /* the DWARF went with its file's names */
	CHECK_EQ_INT(symbolizer_user(s, inl, live[0] + 1, &r), 0);
	CHECK_EQ_STR(r.name, "hot_loop");
	CHECK(r.source_file && strstr(r.source_file, "inl.c"));
	CHECK(r.line > 0);
	symbolizer_get_stats(s, &st);
	CHECK(st.reopens >= 2);
	CHECK_EQ_INT(st.reopen_failures, 0);
	symbolizer_free(s);
out:
	if (mini > 0)
		stop_prog(mini);
	if (inl > 0)
		stop_prog(inl);
}

/* Two programs whose DWARF does not fit the line budget together: the second closes the
 * first; the first is then not opened again (closing the second) until a while after it was
 * closed, its frames keep their names without lines meanwhile and are not cached that way,
 * and it gets its lines back after the wait. */
static void test_line_turns(void)
{
	struct symbolizer_options o;
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct sym_result r;
	uint64_t live[1], live2[1], cost;
	pid_t a, b;

	if (!have_inline)
		SKIP("gcc/addr2line cannot make the programs here");
	/* built otherwise: another build id, so another file for the symbolizer */
	CHECK(sh("cd %s && gcc -O1 -g -o inl2 inl.c", tmpdir) == 0);
	a = start_prog(tpath("inl"), live, 1);
	b = start_prog(tpath("inl2"), live2, 1);
	CHECK(a > 0 && b > 0);
	if (a <= 0 || b <= 0)
		goto out;
	memset(&o, 0, sizeof(o));
	o.no_debuginfod = 1;
	o.debug_dir = "/nonexistent";
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(symbolizer_track_pid(s, a), 0);
	CHECK_EQ_INT(symbolizer_user(s, a, live[0], &r), 0);
	symbolizer_get_stats(s, &st);
	cost = st.line_bytes;
	symbolizer_free(s);
	CHECK(cost > 0);

	o.line_budget = cost + cost / 2; /* room for one */
	o.line_reopen_ns = 1000000000ull;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(symbolizer_track_pid(s, a), 0);
	CHECK_EQ_INT(symbolizer_track_pid(s, b), 0);
	CHECK_EQ_INT(symbolizer_user(s, a, live[0], &r), 0);
	CHECK(r.source_file && strstr(r.source_file, "inl.c") && r.line > 0);
	CHECK_EQ_INT(symbolizer_user(s, b, live2[0], &r), 0);
	CHECK(r.source_file && strstr(r.source_file, "inl.c") && r.line > 0);
	symbolizer_get_stats(s, &st);
	CHECK_EQ_INT((int)st.line_opens, 2);
	CHECK_EQ_INT((int)st.line_files, 1);
	/* the first one's turn is not yet: a name, no line, and the second keeps its DWARF */
	CHECK_EQ_INT(symbolizer_user(s, a, live[0] + 1, &r), 0);
	CHECK_EQ_STR(r.name, "hot_loop");
	CHECK(!r.source_file || !*r.source_file);
	CHECK_EQ_INT(r.line, 0);
	symbolizer_get_stats(s, &st);
	CHECK_EQ_INT((int)st.line_opens, 2);
	CHECK(st.line_deferred >= 1);
	CHECK_EQ_INT(symbolizer_user(s, b, live2[0] + 1, &r), 0);
	CHECK(r.line > 0);
	usleep(1100000);
	/* the same address again: not cached without its line */
	CHECK_EQ_INT(symbolizer_user(s, a, live[0] + 1, &r), 0);
	CHECK_EQ_STR(r.name, "hot_loop");
	CHECK(r.source_file && strstr(r.source_file, "inl.c") && r.line > 0);
	symbolizer_get_stats(s, &st);
	CHECK_EQ_INT((int)st.line_opens, 3);
	CHECK_EQ_INT((int)st.line_files, 1);
	symbolizer_free(s);
out:
	if (a > 0)
		stop_prog(a);
	if (b > 0)
		stop_prog(b);
}

/* A program whose DWARF alone is above the line budget gets names without lines (its DWARF is
 * never opened: the agent's memory stays within --line-memory); with the budget raised to hold
 * it, its lines and inlined frames, as `scorch record` gives them. */
static void test_line_over(void)
{
	struct symbolizer_options o;
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct sym_result r;
	uint64_t live[1], cost;
	size_t ninl;
	pid_t a;

	if (!have_inline)
		SKIP("gcc/addr2line cannot make the programs here");
	a = start_prog(tpath("inl"), live, 1);
	CHECK(a > 0);
	if (a <= 0)
		return;
	memset(&o, 0, sizeof(o));
	o.no_debuginfod = 1;
	o.debug_dir = "/nonexistent";
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(symbolizer_user(s, a, live[0], &r), 0);
	CHECK(r.source_file && strstr(r.source_file, "inl.c") && r.line > 0);
	ninl = r.ninlined;
	symbolizer_get_stats(s, &st);
	cost = st.line_bytes;
	symbolizer_free(s);
	CHECK(cost > 0);

	o.line_budget = 4 * cost;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(symbolizer_user(s, a, live[0], &r), 0);
	CHECK(r.line > 0);
	CHECK_EQ_INT(r.ninlined, ninl);
	symbolizer_free(s);

	o.line_budget = cost / 3;
	s = symbolizer_new_opts(&o);
	CHECK_EQ_INT(symbolizer_user(s, a, live[0], &r), 0);
	CHECK_EQ_STR(r.name, "hot_loop");
	CHECK_EQ_INT(r.line, 0);
	symbolizer_free(s);
	stop_prog(a);
}

static void test_minidebug_corrupt(void)
{
	static const uint8_t not_xz[] = "definitely not xz data";
	uint8_t xz_header[] = { 0xfd, '7', 'z', 'X', 'Z', 0, 0, 4, 0xe6, 0xd6, 0xb4, 0x46 };
	struct errmsg err = { "" };
	void *out = (void *)1;
	size_t n = 1;

	CHECK_EQ_INT(minidebug_decompress(not_xz, sizeof(not_xz), 1 << 20, &out, &n, &err), -EINVAL);
	CHECK(out == NULL && n == 0);
	CHECK(err.msg[0] != 0);
	/* a stream that ends early */
	CHECK(minidebug_decompress(xz_header, sizeof(xz_header), 1 << 20, &out, &n, &err) < 0);
	CHECK(out == NULL);
}

/* addr2line -i -f's frames at addr: "name\nfile:line" pairs, innermost first. */
static int addr2line_frames(const char *file, uint64_t addr, char names[][256], char locs[][512],
			    int max)
{
	char cmd[1024], line[1024];
	int n = 0, odd = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "addr2line -i -f -e %s 0x%llx", file, (unsigned long long)addr);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f) && n < max) {
		line[strcspn(line, "\n")] = 0;
		if (!odd) {
			snprintf(names[n], 256, "%.255s", line);
		} else {
			char *disc = strstr(line, " (discriminator");

			if (disc)
				*disc = 0;
			snprintf(locs[n], 512, "%.511s", line);
			n++;
		}
		odd = !odd;
	}
	if (f)
		pclose(f);
	return n;
}

static uint64_t nm_addr(const char *file, const char *name)
{
	char cmd[1024], line[512];
	unsigned long long a = 0, size = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm -S %s", file);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char sym[400], type;
		unsigned long long v, sz;

		if (sscanf(line, "%llx %llx %c %399s", &v, &sz, &type, sym) == 4 && !strcmp(sym, name)) {
			a = v;
			size = sz;
		}
	}
	if (f)
		pclose(f);
	return a | (size << 40);
}

static void test_dwarf_inlines(void)
{
	struct srcline *sl = NULL;
	struct srcline_frame fr[40];
	uint64_t packed = nm_addr(tpath("inl"), "hot_loop"), start = packed & ((1ULL << 40) - 1);
	uint64_t size = packed >> 40, a, inl_addr = 0;
	int fd, compared = 0, multi = 0;

	if (!have_inline)
		SKIP("gcc -O2 -g or addr2line not usable");
	CHECK(start && size);
	fd = open(tpath("inl"), O_RDONLY);
	CHECK_EQ_INT(srcline_open(fd, "inl", &sl, NULL), 0);
	for (a = start; sl && a < start + size; a++) {
		char names[40][256], locs[40][512];
		int n = addr2line_frames(tpath("inl"), a, names, locs, 40), i;
		size_t m = srcline_lookup(sl, a, fr, 40);

		if (n < 1 || strchr(locs[0], '?'))
			continue;
		CHECK_EQ_INT((int)m, n);
		if ((int)m != n)
			break;
		for (i = 0; i < n; i++) {
			char ours[600];
			const char *base = fr[i].file ? strrchr(fr[i].file, '/') : NULL;

			snprintf(ours, sizeof(ours), "%s:%d", fr[i].file ? fr[i].file : "??", fr[i].line);
			/* addr2line prints the full path too */
			CHECK_EQ_STR(ours, locs[i]);
			CHECK_EQ_STR(fr[i].name, names[i]);
			CHECK_EQ_INT(fr[i].inlined, i + 1 < n);
			(void)base;
		}
		compared++;
		if (n >= 3 && !inl_addr)
			inl_addr = a;
		multi += n >= 2;
	}
	CHECK(compared > 10);
	CHECK(multi > 0);
	srcline_free(sl);
	if (fd >= 0)
		close(fd);
	/* the same through the symbolizer, in a live process */
	if (inl_addr) {
		struct symbolizer *s = new_sym();
		struct sym_result r;
		uint64_t live[1];
		pid_t pid = start_prog(tpath("inl"), live, 1);

		CHECK(pid > 0);
		if (pid > 0) {
			CHECK_EQ_INT(symbolizer_user(s, pid, live[0] + (inl_addr - start), &r), 0);
			CHECK_EQ_STR(r.name, "hot_loop");
			CHECK_EQ_INT(r.ninlined, 2);
			if (r.ninlined == 2) {
				CHECK_EQ_STR(r.inlined[0].name, "mix");
				CHECK_EQ_STR(r.inlined[1].name, "twice");
				CHECK(r.inlined[0].source_file && strstr(r.inlined[0].source_file, "inl.c"));
				CHECK_EQ_INT(r.inlined[0].line, 5);
				CHECK_EQ_INT(r.inlined[1].line, 8);
			}
			CHECK_EQ_INT(r.line, 13);
			stop_prog(pid);
		}
		symbolizer_free(s);
	}
}

/* A child with anonymous executable memory: 4 pages of `ret`. It writes its perf map (two
 * entries), prints the base, waits for a byte on its stdin, appends a third entry, prints "ok". */
static pid_t start_jit(uint64_t *base, int *to_child, FILE **from_child)
{
	int in[2], out[2];
	pid_t pid;

	if (pipe(in) < 0 || pipe(out) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char path[64], c;
		uint8_t *code;
		FILE *f;

		close(in[1]);
		close(out[0]);
		code = mmap(NULL, 16384, PROT_READ | PROT_WRITE | PROT_EXEC,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (code == MAP_FAILED)
			_exit(1);
		memset(code, 0xc3, 16384);
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
		f = fopen(path, "w");
		if (!f)
			_exit(1);
		fprintf(f, "%llx 100 LazyCompile:*hotLoop /app/server.js:10\n",
			(unsigned long long)(uintptr_t)code);
		fprintf(f, "0x%llx 0x40 Builtin: ArrayPush\n",
			(unsigned long long)(uintptr_t)(code + 0x1000));
		/* code reused: the later entry wins */
		fprintf(f, "%llx 10 LazyCompile:~replaced /app/a.js:1\n",
			(unsigned long long)(uintptr_t)(code + 0x20));
		fflush(f);
		dprintf(out[1], "%llx\n", (unsigned long long)(uintptr_t)code);
		if (read(in[0], &c, 1) != 1)
			_exit(1);
		fprintf(f, "%llx 200 Function:lateFunction /app/late.js:3\n",
			(unsigned long long)(uintptr_t)(code + 0x2000));
		fclose(f);
		dprintf(out[1], "ok\n");
		for (;;)
			pause();
	}
	close(in[0]);
	close(out[1]);
	*to_child = in[1];
	*from_child = fdopen(out[0], "r");
	if (!*from_child || fscanf(*from_child, "%llx", (unsigned long long *)base) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static void test_perf_map(void)
{
	struct symbolizer *s = new_sym();
	struct sym_result r;
	uint64_t base = 0;
	int to_child = -1;
	FILE *from_child = NULL;
	char path[64], ok[8];
	pid_t pid = start_jit(&base, &to_child, &from_child);

	CHECK(pid > 0);
	if (pid <= 0) {
		symbolizer_free(s);
		return;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 4, &r), 0);
	CHECK_EQ_STR(r.name, "LazyCompile:*hotLoop /app/server.js:10");
	CHECK_EQ_STR(r.module, path);
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 0x1010, &r), 0);
	CHECK_EQ_STR(r.name, "Builtin: ArrayPush");
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 0x24, &r), 0);
	CHECK_EQ_STR(r.name, "LazyCompile:~replaced /app/a.js:1");
	/* JIT memory nobody named: unknown, not a made-up name */
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 0x3000, &r), -ENOENT);
	CHECK(r.name == NULL);
	/* an entry written later is found on a later miss (re-read at most once a second) */
	CHECK_EQ_INT(write(to_child, "x", 1), 1);
	CHECK(fscanf(from_child, "%7s", ok) == 1 && !strcmp(ok, "ok"));
	{
		struct timespec ts = { 1, 100 * 1000000L };

		nanosleep(&ts, NULL);
	}
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 0x2004, &r), 0);
	CHECK_EQ_STR(r.name, "Function:lateFunction /app/late.js:3");
	stop_prog(pid);
	unlink(path);
	fclose(from_child);
	close(to_child);
	symbolizer_free(s);
}

/* perf maps that are links, or owned by another user, are not read. */
static void test_perf_map_refused(void)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	CHECK_EQ_INT(symlink("/dev/zero", path), 0);
	CHECK_EQ_INT(perfmap_open_for(getpid(), path), -ELOOP);
	unlink(path);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	fd = perfmap_open_for(getpid(), path);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	if (getuid() == 0) {
		CHECK_EQ_INT(chown(path, 65534, 65534), 0);
		CHECK_EQ_INT(perfmap_open_for(getpid(), path), -EPERM);
	}
	unlink(path);
	CHECK_EQ_INT(perfmap_open_for(getpid(), path), -ENOENT);
}

static void put_rec(FILE *f, uint32_t id, const void *body, size_t len, const char *name)
{
	uint32_t total = (uint32_t)(16 + len + (name ? strlen(name) + 1 : 0) + (id == 0 ? 8 : 0));
	uint64_t ts = 1;

	fwrite(&id, 4, 1, f);
	fwrite(&total, 4, 1, f);
	fwrite(&ts, 8, 1, f);
	fwrite(body, len, 1, f);
	if (name)
		fwrite(name, strlen(name) + 1, 1, f);
	if (id == 0)
		fwrite("\xc3\xc3\xc3\xc3\xc3\xc3\xc3\xc3", 8, 1, f); /* the code bytes */
}

/* A jitdump file written here and mapped executable by a child, as perf expects JITs to. */
static void test_jitdump(void)
{
	struct symbolizer *s = new_sym();
	struct sym_result r;
	uint64_t base = 0;
	uint32_t hdr[10];
	uint64_t load[5], move[6];
	char path[256];
	FILE *f;
	pid_t pid;
	int fds[2];

	CHECK_EQ_INT(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		uint8_t *code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int fd;
		void *mark;

		snprintf(path, sizeof(path), "%s/jit-%d.dump", tmpdir, getpid());
		f = fopen(path, "w");
		memset(hdr, 0, sizeof(hdr));
		hdr[0] = 0x4A695444;
		hdr[1] = 1;
		hdr[2] = 40;
		hdr[3] = 62;
		hdr[5] = (uint32_t)getpid();
		fwrite(hdr, 40, 1, f);
		memset(load, 0, sizeof(load));
		load[0] = (uint64_t)getpid(); /* pid, tid */
		load[1] = load[2] = (uint64_t)(uintptr_t)code;
		load[3] = 64;
		put_rec(f, 0, load, 40, "jitted_one");
		load[1] = load[2] = (uint64_t)(uintptr_t)(code + 0x100);
		put_rec(f, 0, load, 40, "jitted_two");
		memset(move, 0, sizeof(move));
		move[0] = (uint64_t)getpid();
		move[2] = (uint64_t)(uintptr_t)code;
		move[3] = (uint64_t)(uintptr_t)(code + 0x1000);
		move[4] = 32;
		put_rec(f, 1, move, 48, NULL);
		fclose(f);
		fd = open(path, O_RDONLY);
		mark = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		dprintf(fds[1], "%llx %d\n", (unsigned long long)(uintptr_t)code, mark != MAP_FAILED);
		for (;;)
			pause();
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	{
		int mapped = 0;

		CHECK(f && fscanf(f, "%llx %d", (unsigned long long *)&base, &mapped) == 2 && mapped);
	}
	if (f)
		fclose(f);
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 8, &r), 0);
	CHECK_EQ_STR(r.name, "jitted_one");
	CHECK(r.module && strstr(r.module, ".dump"));
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 0x108, &r), 0);
	CHECK_EQ_STR(r.name, "jitted_two");
	CHECK_EQ_INT(symbolizer_user(s, pid, base + 0x1008, &r), 0);
	CHECK_EQ_STR(r.name, "jitted_one");
	snprintf(path, sizeof(path), "%s/jit-%d.dump", tmpdir, (int)pid);
	stop_prog(pid);
	unlink(path);
	symbolizer_free(s);
}

/* The perf-map parser on its own: formats, overlaps, partial lines across feeds, junk. */
static void test_perfmap_parser(void)
{
	struct perfmap *m = perfmap_new();
	uint64_t start = 0;

	CHECK_EQ_INT(perfmap_feed(m, "1000 10 first\n0x2000 0x20 second one\n3000 zz bad\n", 47), 0);
	CHECK_EQ_INT(perfmap_feed(m, "\n2008 4 in", 10), 0);
	CHECK_EQ_INT(perfmap_feed(m, "ner\r\n", 5), 0);
	CHECK_EQ_STR(perfmap_lookup(m, 0x100f, &start), "first");
	CHECK_EQ_INT(start, 0x1000);
	CHECK(perfmap_lookup(m, 0x1010, NULL) == NULL);
	CHECK_EQ_STR(perfmap_lookup(m, 0x2001, NULL), "second one");
	CHECK_EQ_STR(perfmap_lookup(m, 0x2009, NULL), "inner");
	CHECK_EQ_STR(perfmap_lookup(m, 0x200c, NULL), "second one");
	CHECK_EQ_INT(perfmap_count(m), 3);
	CHECK_EQ_INT(perfmap_bad_lines(m), 1);
	perfmap_free(m);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	setup();
	RUN(test_minidebuginfo);
	RUN(test_lazy_sources);
	RUN(test_line_turns);
	RUN(test_line_over);
	RUN(test_minidebug_corrupt);
	RUN(test_dwarf_inlines);
	RUN(test_perf_map);
	RUN(test_perf_map_refused);
	RUN(test_jitdump);
	RUN(test_perfmap_parser);
	sh("rm -rf %s", tmpdir);
	return test_summary();
}
