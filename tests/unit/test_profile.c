/* test_profile.c: the profile model: interning, sample merging, labels, frame names, merging
 * profiles. */
#include "lib/alloc.h"
#include "profile/profile.h"
#include "test.h"

static void test_interning(void)
{
	struct profile *p = profile_new();
	uint32_t a = profile_intern_function(p, FRAME_NATIVE, "f", NULL, "f.c", 1);
	uint32_t b = profile_intern_function(p, FRAME_NATIVE, "f", NULL, "f.c", 1);
	uint32_t c = profile_intern_function(p, FRAME_KERNEL, "f", NULL, "f.c", 1);
	uint32_t d = profile_intern_function(p, FRAME_NATIVE, "f", "_Zf", "f.c", 1);
	uint32_t e = profile_intern_function(p, FRAME_NATIVE, "f", NULL, "f.c", 2);
	uint32_t la, lb, lc, m1, m2;
	size_t i;

	CHECK_EQ_INT(a, 1);
	CHECK_EQ_INT(b, a);
	CHECK(c != a && d != a && e != a && c != d && d != e);
	CHECK_EQ_INT(p->nfunctions, 4);
	/* A NULL system name means "same as name". */
	CHECK_EQ_STR(profile_get_str(p, p->functions[a - 1].system_name), "f");
	CHECK_EQ_INT(p->functions[c - 1].kind, FRAME_KERNEL);

	la = profile_intern_location(p, 0, 0x10, a, 3);
	lb = profile_intern_location(p, 0, 0x10, a, 3);
	lc = profile_intern_location(p, 0, 0x10, a, 4);
	CHECK_EQ_INT(la, lb);
	CHECK(lc != la);
	/* Mappings are not interned. */
	m1 = profile_add_mapping(p, 0x1000, 0x2000, 0, "/bin/x", "ab");
	m2 = profile_add_mapping(p, 0x1000, 0x2000, 0, "/bin/x", "ab");
	CHECK(m1 == 1 && m2 == 2);
	CHECK_EQ_INT(p->mappings[0].build_id, p->mappings[1].build_id);
	CHECK_EQ_INT(profile_add_mapping(p, 0, 0, 0, "/bin/y", ""), 3);
	CHECK_EQ_INT(p->mappings[2].build_id, 0);
	/* Strings: id 0 is "", equal strings share an id. */
	CHECK_EQ_STR(profile_get_str(p, 0), "");
	CHECK_EQ_INT(profile_str(p, "zzz"), profile_str(p, "zzz"));
	CHECK_EQ_INT(profile_str(p, NULL), 0);
	/* Many functions: all distinct, all found again. */
	for (i = 0; i < 5000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "fn%zu", i);
		CHECK_EQ_INT(profile_intern_function(p, FRAME_NATIVE, name, NULL, NULL, 0), 5 + i);
	}
	for (i = 0; i < 5000; i += 499) {
		char name[32];

		snprintf(name, sizeof(name), "fn%zu", i);
		CHECK_EQ_INT(profile_intern_function(p, FRAME_NATIVE, name, NULL, NULL, 0), 5 + i);
	}
	profile_free(p);
}

static void test_samples(void)
{
	struct profile *p = profile_new();
	uint32_t f = profile_intern_function(p, FRAME_NATIVE, "f", NULL, NULL, 0);
	uint32_t g = profile_intern_function(p, FRAME_NATIVE, "g", NULL, NULL, 0);
	uint32_t s1[2] = { profile_intern_location(p, 0, 0, f, 0), profile_intern_location(p, 0, 0, g, 0) };
	uint32_t s2[2] = { s1[1], s1[0] };
	struct profile_label l1[2] = {
		{ profile_str(p, "comm"), profile_str(p, "app"), 0 },
		{ profile_str(p, "pid"), 0, 7 },
	};
	struct profile_label l2[2] = { l1[0], { l1[1].key, 0, 8 } };

	profile_add_sample(p, s1, 2, l1, 2, 1);
	profile_add_sample(p, s1, 2, l1, 2, 2);    /* merges */
	profile_add_sample(p, s2, 2, l1, 2, 4);    /* other order: other stack */
	profile_add_sample(p, s1, 2, l2, 2, 8);    /* other pid */
	profile_add_sample(p, s1, 1, l1, 2, 16);   /* shorter stack */
	profile_add_sample(p, s1, 2, l1, 1, 32);   /* fewer labels */
	profile_add_sample(p, s1, 2, l1, 2, -3);   /* negative values add too */
	CHECK_EQ_INT(p->nsamples, 5);
	CHECK_EQ_INT(p->samples[0].value, 0);
	CHECK_EQ_INT(profile_total(p), 60);
	CHECK_EQ_STR(profile_sample_label_str(p, &p->samples[3], "comm"), "app");
	CHECK(profile_sample_label_str(p, &p->samples[0], "pid") == NULL); /* numeric */
	CHECK(profile_sample_label_str(p, &p->samples[0], "nope") == NULL);
	CHECK_EQ_INT(profile_sample_labels(p, &p->samples[2])[1].num, 8);
	profile_free(p);
}

static void test_frame_names(void)
{
	struct profile *p = profile_new();
	uint32_t m = profile_add_mapping(p, 0x400000, 0x500000, 0x1000, "/usr/lib/libz.so.1", NULL);
	uint32_t fn = profile_intern_function(p, FRAME_NATIVE, "deflate", NULL, NULL, 0);
	uint32_t fk = profile_intern_function(p, FRAME_KERNEL, "tcp_sendmsg", NULL, NULL, 0);
	uint32_t fp = profile_intern_function(p, FRAME_PYTHON, "Cls.meth", NULL, "pkg/mod.py", 5);
	uint32_t fp0 = profile_intern_function(p, FRAME_PYTHON, "<module>", NULL, "<string>", 0);
	uint32_t fpn = profile_intern_function(p, FRAME_PYTHON, "nofile", NULL, NULL, 0);
	uint32_t fs = profile_intern_function(p, FRAME_SPECIAL, "[truncated]", NULL, NULL, 0);
	char name[64];
	size_t n;

	n = profile_frame_name(p, profile_intern_location(p, m, 0x400010, fn, 0), name, sizeof(name));
	CHECK_EQ_STR(name, "deflate");
	CHECK_EQ_INT(n, 7);
	profile_frame_name(p, profile_intern_location(p, 0, 0, fk, 0), name, sizeof(name));
	CHECK_EQ_STR(name, "tcp_sendmsg_[k]");
	profile_frame_name(p, profile_intern_location(p, 0, 0, fp, 17), name, sizeof(name));
	CHECK_EQ_STR(name, "Cls.meth (pkg/mod.py)");
	profile_frame_name_flags(p, profile_intern_location(p, 0, 0, fp, 17), PROFILE_NAME_LINES,
				 name, sizeof(name));
	CHECK_EQ_STR(name, "Cls.meth (pkg/mod.py:17)");
	profile_frame_name(p, profile_intern_location(p, 0, 0, fp0, 0), name, sizeof(name));
	CHECK_EQ_STR(name, "<module> (<string>)");
	profile_frame_name(p, profile_intern_location(p, 0, 0, fpn, 3), name, sizeof(name));
	CHECK_EQ_STR(name, "nofile");
	profile_frame_name(p, profile_intern_location(p, 0, 0, fs, 0), name, sizeof(name));
	CHECK_EQ_STR(name, "[truncated]");
	/* Unsymbolized: module and file offset; nothing known: [unknown]. */
	profile_frame_name(p, profile_intern_location(p, m, 0x400234, 0, 0), name, sizeof(name));
	CHECK_EQ_STR(name, "libz.so.1+0x1234");
	profile_frame_name(p, profile_intern_location(p, 0, 0x1234, 0, 0), name, sizeof(name));
	CHECK_EQ_STR(name, "[unknown]");
	profile_frame_name(p, 0, name, sizeof(name));
	CHECK_EQ_STR(name, "[unknown]");
	profile_frame_name(p, 9999, name, sizeof(name));
	CHECK_EQ_STR(name, "[unknown]");
	/* Truncated to the buffer, always terminated. */
	n = profile_frame_name(p, 3, name, 6);
	CHECK_EQ_STR(name, "Cls.m");
	CHECK_EQ_INT(n, 5);
	profile_free(p);
}

static void test_merge(void)
{
	struct profile *a = profile_new(), *b = profile_new();
	uint32_t fa = profile_intern_function(a, FRAME_NATIVE, "shared", NULL, NULL, 0);
	uint32_t fb0 = profile_intern_function(b, FRAME_KERNEL, "only_b", NULL, NULL, 0);
	uint32_t fb = profile_intern_function(b, FRAME_NATIVE, "shared", NULL, NULL, 0);
	uint32_t la = profile_intern_location(a, 0, 0, fa, 0);
	uint32_t lb[2] = { profile_intern_location(b, 0, 0, fb0, 0), profile_intern_location(b, 0, 0, fb, 0) };
	struct profile_label lab = { profile_str(b, "comm"), profile_str(b, "bee"), 0 };
	char name[64];

	profile_add_mapping(b, 1, 2, 3, "/b", "bid");
	profile_add_sample(a, &la, 1, NULL, 0, 10);
	profile_add_sample(b, &lb[1], 1, NULL, 0, 5);   /* same stack as a's: merges */
	profile_add_sample(b, lb, 2, &lab, 1, 1);
	profile_merge(a, b);
	CHECK_EQ_INT(a->nsamples, 2);
	CHECK_EQ_INT(a->samples[0].value, 15);
	CHECK_EQ_INT(profile_total(a), 16);
	CHECK_EQ_INT(a->nfunctions, 2);
	CHECK_EQ_INT(a->nmappings, 1);
	CHECK_EQ_STR(profile_get_str(a, a->mappings[0].build_id), "bid");
	CHECK_EQ_STR(profile_sample_label_str(a, &a->samples[1], "comm"), "bee");
	profile_frame_name(a, profile_sample_locs(a, &a->samples[1])[0], name, sizeof(name));
	CHECK_EQ_STR(name, "only_b_[k]");
	profile_free(a);
	profile_free(b);
}

static void test_set_label(void)
{
	struct profile *p = profile_new();
	uint32_t f = profile_intern_function(p, FRAME_NATIVE, "f", "f", NULL, 0);
	uint32_t g = profile_intern_function(p, FRAME_NATIVE, "g", "g", NULL, 0);
	uint32_t lf = profile_intern_location(p, 0, 0, f, 0), lg = profile_intern_location(p, 0, 0, g, 0);
	uint32_t stack[2] = { lf, lg };
	struct profile_label l[2];
	size_t i;

	l[0].key = profile_str(p, "comm");
	l[0].str = profile_str(p, "a");
	l[0].num = 0;
	l[1].key = profile_str(p, "commit");
	l[1].str = profile_str(p, "old");
	l[1].num = 0;
	profile_add_sample(p, stack, 2, l, 1, 5);      /* comm=a */
	profile_add_sample(p, stack, 2, l, 2, 7);      /* comm=a commit=old */
	profile_add_sample(p, stack, 1, NULL, 0, 3);   /* no labels */
	profile_set_label(p, "commit", "abc");
	/* the first two are now equal and merged; the label replaced the old one */
	CHECK_EQ_INT(p->nsamples, 2);
	CHECK_EQ_INT(profile_total(p), 15);
	for (i = 0; i < p->nsamples; i++) {
		CHECK_EQ_STR(profile_sample_label_str(p, &p->samples[i], "commit"), "abc");
	}
	CHECK_EQ_STR(profile_sample_label_str(p, &p->samples[0], "comm"), "a");
	CHECK_EQ_INT(p->samples[0].value, 12);
	CHECK(profile_sample_label_str(p, &p->samples[1], "comm") == NULL);
	/* the sample index still works: adding an equal sample merges */
	l[1].str = profile_str(p, "abc");
	profile_add_sample(p, stack, 2, l, 2, 1);
	CHECK_EQ_INT(p->nsamples, 2);
	CHECK_EQ_INT(p->samples[0].value, 13);
	profile_free(p);
}

/* By function (the default) a function sampled on several lines is one frame; with lines, one
 * frame per line. Native frames get "(file:LINE)" only with lines. */
static void test_lines(void)
{
	struct profile *p = profile_new();
	uint32_t fpy = profile_intern_function(p, FRAME_PYTHON, "work", NULL, "app.py", 3);
	uint32_t fc = profile_intern_function(p, FRAME_NATIVE, "compute", NULL, "/src/c.c", 10);
	uint32_t a = profile_intern_location(p, 0, 0, fpy, 5), b = profile_intern_location(p, 0, 0, fpy, 7);
	uint32_t c = profile_intern_location(p, 0, 0x40, fc, 12);
	char x[64], y[64];

	profile_frame_name(p, a, x, sizeof(x));
	profile_frame_name(p, b, y, sizeof(y));
	CHECK_EQ_STR(x, "work (app.py)");
	CHECK_EQ_STR(y, "work (app.py)");
	profile_frame_name(p, c, x, sizeof(x));
	CHECK_EQ_STR(x, "compute");
	p->show_lines = 1;
	profile_frame_name(p, a, x, sizeof(x));
	profile_frame_name(p, b, y, sizeof(y));
	CHECK_EQ_STR(x, "work (app.py:5)");
	CHECK_EQ_STR(y, "work (app.py:7)");
	profile_frame_name(p, c, x, sizeof(x));
	CHECK_EQ_STR(x, "compute (/src/c.c:12)");
	profile_free(p);
}

static void test_strip_line(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "compute (/src/c.c:12)", "compute" },
		{ "work (app.py:5)", "work (app.py)" },
		{ "work (app.py)", "work (app.py)" },
		{ "<module> (<frozen runpy>:88)", "<module> (<frozen runpy>)" },
		{ "std::vector<int>::push_back(int const&)", "std::vector<int>::push_back(int const&)" },
		{ "(anonymous namespace)::f (x.cc:0)", "(anonymous namespace)::f (x.cc:0)" },
		{ "f (not a line:x1)", "f (not a line:x1)" },
		{ "vfs_read_[k]", "vfs_read_[k]" },
		{ "main.main (/go/src/main.go:31)", "main.main" },
		/* every runtime's frame keeps its file */
		{ "(anonymous) (/app/a.js:3)", "(anonymous) (/app/a.js)" },
		{ "(anonymous) (node:internal/main/run_main_module:23)",
		  "(anonymous) (node:internal/main/run_main_module)" },
		{ "java.util.HashMap.get (HashMap.java:557)", "java.util.HashMap.get (HashMap.java)" },
		{ "Foo#bar (app/foo.rb:9)", "Foo#bar (app/foo.rb)" },
		{ "Kernel#loop (<internal:kernel>:187)", "Kernel#loop (<internal:kernel>)" },
		{ "handle (/srv/index.php:40)", "handle (/srv/index.php)" },
		{ "main::work (t/app.pl:7)", "main::work (t/app.pl)" },
		{ "main::__ANON__ ((eval 3):1)", "main::__ANON__ ((eval 3))" },
		{ "work (lib.rs:4)", "work" },
	};
	size_t i, name_len, file_off, file_len;
	int64_t line;
	char out[128];

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		profile_frame_strip_line(cases[i].in, out, sizeof(out));
		CHECK_EQ_STR(out, cases[i].out);
	}
	CHECK_EQ_INT(profile_frame_split("f (a.c:9)", 9, &name_len, &file_off, &file_len, &line), 1);
	CHECK_EQ_INT(name_len, 1);
	CHECK_EQ_INT(file_off, 3);
	CHECK_EQ_INT(file_len, 3);
	CHECK_EQ_INT(line, 9);
	CHECK_EQ_INT(profile_frame_split("f (a.c)", 7, &name_len, &file_off, &file_len, &line), 0);
	/* without a line, a runtime's file is a file part; C++ arguments are not */
	CHECK_EQ_INT(profile_frame_split("f (x/a.js)", 10, &name_len, &file_off, &file_len, &line), 1);
	CHECK_EQ_INT(file_len, 6);
	CHECK_EQ_INT(profile_frame_split("g(int, (anonymous namespace)::X)", 32, &name_len, &file_off,
					 &file_len, &line), 0);
	CHECK_EQ_INT(profile_file_lang("a.py", 4), PROFILE_LANG_PYTHON);
	CHECK_EQ_INT(profile_file_lang("<frozen runpy>", 14), PROFILE_LANG_PYTHON);
	CHECK_EQ_INT(profile_file_lang("/x/a.mjs", 8), PROFILE_LANG_JS);
	CHECK_EQ_INT(profile_file_lang("node:fs", 7), PROFILE_LANG_JS);
	CHECK_EQ_INT(profile_file_lang("Main.java", 9), PROFILE_LANG_JAVA);
	CHECK_EQ_INT(profile_file_lang("<internal:array>", 16), PROFILE_LANG_RUBY);
	CHECK_EQ_INT(profile_file_lang("x.rb", 4), PROFILE_LANG_RUBY);
	CHECK_EQ_INT(profile_file_lang("i.php", 5), PROFILE_LANG_PHP);
	CHECK_EQ_INT(profile_file_lang("(eval 12)", 9), PROFILE_LANG_PERL);
	CHECK_EQ_INT(profile_file_lang("M.pm", 4), PROFILE_LANG_PERL);
	CHECK_EQ_INT(profile_file_lang("/src/x.c", 8), PROFILE_LANG_NONE);
	CHECK_EQ_INT(profile_file_lang("x.go", 4), PROFILE_LANG_NONE);
	CHECK_EQ_INT(profile_file_lang(".js", 3), PROFILE_LANG_NONE);
	CHECK_EQ_INT(profile_file_lang(NULL, 0), PROFILE_LANG_NONE);
	/* truncated output stays terminated */
	CHECK_EQ_INT(profile_frame_strip_line("work (app.py:5)", out, 5), 4);
	CHECK_EQ_STR(out, "work");
}

int main(void)
{
	RUN(test_interning);
	RUN(test_samples);
	RUN(test_frame_names);
	RUN(test_merge);
	RUN(test_set_label);
	RUN(test_lines);
	RUN(test_strip_line);
	return test_summary();
}
