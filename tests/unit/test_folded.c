/* test_folded.c: the folded writer (order, comm root, frame names of every kind, merging) and
 * parser (grammar, kinds, round trips, errors naming the line, limits). */
#include "lib/alloc.h"
#include "profile/folded.h"
#include "test.h"

#include <errno.h>

static void test_write(void)
{
	struct profile *p = profile_new();
	struct buf out = BUF_INIT(BUF_UNLIMITED);
	uint32_t m = profile_add_mapping(p, 0x7f0000000000, 0x7f0000100000, 0x2000, "/usr/lib/libfoo.so", NULL);
	uint32_t fmain = profile_intern_function(p, FRAME_NATIVE, "main", NULL, NULL, 0);
	uint32_t fk = profile_intern_function(p, FRAME_KERNEL, "vfs_read", NULL, NULL, 0);
	uint32_t fpy = profile_intern_function(p, FRAME_PYTHON, "Job.step", NULL, "app/job.py", 1);
	uint32_t fsemi = profile_intern_function(p, FRAME_NATIVE, "odd;name\nhere", NULL, NULL, 0);
	uint32_t lmain = profile_intern_location(p, 0, 0, fmain, 0);
	uint32_t lk = profile_intern_location(p, 0, 0, fk, 0);
	uint32_t lpy = profile_intern_location(p, 0, 0, fpy, 42);
	uint32_t lraw = profile_intern_location(p, m, 0x7f0000000100, 0, 0);
	uint32_t lsemi = profile_intern_location(p, 0, 0, fsemi, 0);
	struct profile_label comm_a[2] = {
		{ profile_str(p, "comm"), profile_str(p, "alpha"), 0 },
		{ profile_str(p, "pid"), 0, 1 },
	};
	struct profile_label comm_a2[2] = {
		{ profile_str(p, "comm"), profile_str(p, "alpha"), 0 },
		{ profile_str(p, "pid"), 0, 2 },
	};
	uint32_t s[4];

	s[0] = lk; s[1] = lpy; s[2] = lmain;
	profile_add_sample(p, s, 3, comm_a, 2, 5);
	profile_add_sample(p, s, 3, comm_a2, 2, 7);   /* another pid: same line, summed */
	s[0] = lraw; s[1] = lmain;
	profile_add_sample(p, s, 2, NULL, 0, 3);      /* no comm */
	profile_add_sample(p, &lsemi, 1, NULL, 0, 1);
	profile_add_sample(p, s, 2, comm_a, 1, 0);    /* zero: left out */
	profile_add_sample(p, NULL, 0, NULL, 0, 2);   /* nothing at all */
	CHECK_EQ_INT(folded_write(p, &out), 0);
	CHECK_EQ_STR(out.data,
		     "[unknown] 2\n"
		     "alpha;main;Job.step (app/job.py);vfs_read_[k] 12\n"
		     "main;libfoo.so+0x2100 3\n"
		     "odd:name here 1\n");
	/* With lines. */
	buf_reset(&out);
	p->show_lines = 1;
	CHECK_EQ_INT(folded_write(p, &out), 0);
	CHECK_EQ_STR(out.data,
		     "[unknown] 2\n"
		     "alpha;main;Job.step (app/job.py:42);vfs_read_[k] 12\n"
		     "main;libfoo.so+0x2100 3\n"
		     "odd:name here 1\n");
	p->show_lines = 0;
	/* The maximum is honoured. */
	{
		struct buf small = BUF_INIT(10);

		CHECK_EQ_INT(folded_write(p, &small), -E2BIG);
		buf_release(&small);
	}
	buf_release(&out);
	profile_free(p);
}

static struct profile *parse_ok(const char *text)
{
	struct profile *p = NULL;
	struct errmsg err = { "" };
	int rc = folded_parse(text, strlen(text), 1000, &p, &err);

	CHECK_EQ_INT(rc, 0);
	if (rc)
		fprintf(stderr, "  parse error: %s\n", err.msg);
	return p;
}

static void expect_error(const char *text, size_t max_lines, int code, const char *needle)
{
	struct profile *p = (struct profile *)1;
	struct errmsg err = { "" };
	int rc = folded_parse(text, strlen(text), max_lines, &p, &err);

	CHECK_EQ_INT(rc, code);
	CHECK(p == NULL);
	if (!strstr(err.msg, needle)) {
		fprintf(stderr, "  message '%s' lacks '%s'\n", err.msg, needle);
		CHECK(0);
	}
}

static const struct profile_function *leaf_fn(const struct profile *p, size_t sample, size_t depth)
{
	const uint32_t *locs = profile_sample_locs(p, &p->samples[sample]);
	const struct profile_location *l = &p->locations[locs[depth] - 1];

	return &p->functions[l->function - 1];
}

static void test_parse(void)
{
	struct profile *p = parse_ok("\n"
				     "main;work;read_[k] 10\r\n"
				     "main;work;read_[k]   5  \n"
				     "python3;<module> (/x/run.py:3);f (a b.py:12);[idle] 4\n"
				     "   \n"
				     "a b c;d e 1\n"
				     "main;libc.so.6+0x1f00\t7");
	char name[128];

	if (!p)
		return;
	CHECK_EQ_INT(p->nsamples, 4);
	CHECK_EQ_INT(profile_total(p), 27);
	CHECK_EQ_STR(profile_get_str(p, p->sample_type), "samples");
	CHECK_EQ_INT(p->samples[0].value, 15);
	CHECK_EQ_INT(p->samples[0].nlocs, 3);
	/* Leaf first in the model. */
	CHECK_EQ_INT(leaf_fn(p, 0, 0)->kind, FRAME_KERNEL);
	CHECK_EQ_STR(profile_get_str(p, leaf_fn(p, 0, 0)->name), "read");
	CHECK_EQ_STR(profile_get_str(p, leaf_fn(p, 0, 2)->name), "main");
	CHECK_EQ_INT(leaf_fn(p, 1, 0)->kind, FRAME_SPECIAL);
	CHECK_EQ_INT(leaf_fn(p, 1, 1)->kind, FRAME_PYTHON);
	CHECK_EQ_STR(profile_get_str(p, leaf_fn(p, 1, 1)->name), "f");
	CHECK_EQ_STR(profile_get_str(p, leaf_fn(p, 1, 1)->filename), "a b.py");
	CHECK_EQ_INT(leaf_fn(p, 1, 2)->kind, FRAME_PYTHON);
	CHECK_EQ_INT(leaf_fn(p, 1, 3)->kind, FRAME_NATIVE);
	profile_frame_name(p, profile_sample_locs(p, &p->samples[1])[1], name, sizeof(name));
	CHECK_EQ_STR(name, "f (a b.py:12)");
	CHECK_EQ_STR(profile_get_str(p, leaf_fn(p, 2, 1)->name), "a b c");
	CHECK_EQ_STR(profile_get_str(p, leaf_fn(p, 3, 0)->name), "libc.so.6+0x1f00");
	profile_free(p);
}

/* Writing what was parsed gives the input back, sorted and merged. */
static void test_roundtrip(void)
{
	static const char *in =
		"zeta;main 3\n"
		"comm;start;Handler.get (/srv/web/handler.py:88);json.dumps (<frozen json>);encode_[k] 9\n"
		"comm;start;f (x.py:0) 1\n"
		"zeta;main 4\n"
		"[kernel];schedule_[k] 2\n"
		"notpython (file.c:3);tail 6\n"
		"_[k];x 1\n";
	static const char *want =
		"[kernel];schedule_[k] 2\n"
		"_[k];x 1\n"
		"comm;start;Handler.get (/srv/web/handler.py:88);json.dumps (<frozen json>);encode_[k] 9\n"
		"comm;start;f (x.py:0) 1\n"
		"notpython (file.c:3);tail 6\n"
		"zeta;main 7\n";
	struct profile *p = parse_ok(in);
	struct buf out = BUF_INIT(BUF_UNLIMITED);

	if (!p)
		return;
	CHECK_EQ_INT(folded_write(p, &out), 0);
	CHECK_EQ_STR(out.data, want);
	buf_release(&out);
	profile_free(p);
}

static void test_errors(void)
{
	struct profile *p = NULL;
	struct errmsg err;

	expect_error("a;b 1\nnocount\n", 100, -EINVAL, "line 2: no count");
	expect_error("a;b -5\n", 100, -EINVAL, "line 1: bad count '-5'");
	expect_error("a;b 1x\n", 100, -EINVAL, "bad count");
	expect_error("a;b 99999999999999999999\n", 100, -EINVAL, "bad count");
	expect_error("a 9223372036854775807\nb 1\n", 100, -ERANGE, "line 2: counts overflow");
	expect_error("\n\n 5\n", 100, -EINVAL, "line 3: empty stack");
	expect_error("a;;b 1\n", 100, -EINVAL, "line 1: empty frame");
	expect_error("a;b; 1\n", 100, -EINVAL, "empty frame");
	expect_error(";a 1\n", 100, -EINVAL, "empty frame");
	expect_error("a 1\nb 1\nc 1\n", 2, -E2BIG, "more than 2 lines");
	{
		static const char nul[] = "a\0b 1\n";

		CHECK_EQ_INT(folded_parse(nul, sizeof(nul) - 1, 10, &p, &err), -EINVAL);
		CHECK(strstr(err.msg, "NUL") != NULL);
	}
	/* Too deep a line. */
	{
		struct buf deep = BUF_INIT(BUF_UNLIMITED);
		int i;

		for (i = 0; i <= FOLDED_MAX_DEPTH; i++)
			buf_puts(&deep, "f;");
		buf_puts(&deep, "g 1\n");
		CHECK_EQ_INT(folded_parse(deep.data, deep.len, 10, &p, &err), -E2BIG);
		CHECK(strstr(err.msg, "frames") != NULL);
		buf_release(&deep);
	}
	/* Empty input is an empty profile; a zero count is fine. */
	CHECK_EQ_INT(folded_parse("", 0, 10, &p, &err), 0);
	CHECK(p && p->nsamples == 0);
	profile_free(p);
	CHECK_EQ_INT(folded_parse("a 0", 3, 10, &p, &err), 0);
	CHECK(p && p->nsamples == 1 && p->samples[0].value == 0);
	profile_free(p);
}

int main(void)
{
	RUN(test_write);
	RUN(test_parse);
	RUN(test_roundtrip);
	RUN(test_errors);
	return test_summary();
}
