/* test_output.c: format by file name, rendering to files durably, and reading a profile back
 * whatever its format (detection by content, gzip included). */
#include "lib/alloc.h"
#include "profile/folded.h"
#include "profile/gzip.h"
#include "profile/input.h"
#include "profile/output.h"
#include "profile/pprof.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

static void test_format_for(void)
{
	CHECK_EQ_INT(output_format_for("a.pb.gz"), OUTPUT_PPROF);
	CHECK_EQ_INT(output_format_for("dir.x/a.PPROF"), OUTPUT_PPROF);
	CHECK_EQ_INT(output_format_for("a.pb"), OUTPUT_PPROF);
	CHECK_EQ_INT(output_format_for("a.folded"), OUTPUT_FOLDED);
	CHECK_EQ_INT(output_format_for("a.txt"), OUTPUT_FOLDED);
	CHECK_EQ_INT(output_format_for("a.json"), OUTPUT_SPEEDSCOPE);
	CHECK_EQ_INT(output_format_for("a.html"), OUTPUT_HTML);
	CHECK_EQ_INT(output_format_for("a.Htm"), OUTPUT_HTML);
	CHECK_EQ_INT(output_format_for("a.svg"), OUTPUT_SVG);
	CHECK_EQ_INT(output_format_for("a.gz"), OUTPUT_UNKNOWN);
	CHECK_EQ_INT(output_format_for(".svg"), OUTPUT_UNKNOWN);
	CHECK_EQ_INT(output_format_for("svg"), OUTPUT_UNKNOWN);
	CHECK_EQ_INT(output_format_for(""), OUTPUT_UNKNOWN);
	CHECK_EQ_INT(output_format_for(NULL), OUTPUT_UNKNOWN);
	CHECK_EQ_STR(output_format_name(OUTPUT_SPEEDSCOPE), "speedscope");
	CHECK_EQ_INT(output_format_parse("HTML"), OUTPUT_HTML);
	CHECK_EQ_INT(output_format_parse("pprof"), OUTPUT_PPROF);
	CHECK_EQ_INT(output_format_parse("png"), OUTPUT_UNKNOWN);
}

static struct profile *small_profile(void)
{
	struct profile *p = NULL;
	struct errmsg err;
	static const char text[] = "app;main;work 5\napp;main;read_[k] 2\nsh;f (x.py:3) 1\n";

	CHECK_EQ_INT(folded_parse(text, sizeof(text) - 1, 100, &p, &err), 0);
	return p;
}

static void test_write_files(void)
{
	char dir[] = "/tmp/scorch-test-output-XXXXXX", path[256];
	static const char *names[] = { "p.pb.gz", "p.folded", "p.json", "p.html", "p.svg" };
	struct profile *p = small_profile(), *q;
	struct buf b = BUF_INIT(64u << 20);
	struct errmsg err;
	enum input_format f;
	struct input_opts o = INPUT_OPTS_DEFAULT;
	size_t i;

	if (!p)
		return;
	CHECK(mkdtemp(dir) != NULL);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		CHECK_EQ_INT(output_write_file(p, path, "t"), 0);
		buf_reset(&b);
		CHECK_EQ_INT(buf_read_file(&b, path), 0);
		CHECK(b.len > 10);
		if (i < 2) {
			/* The two formats scorch reads come back with the same content. */
			q = NULL;
			CHECK_EQ_INT(input_decode(b.data, b.len, &o, &f, &q, &err), 0);
			CHECK_EQ_INT(f, i == 0 ? INPUT_PPROF : INPUT_FOLDED);
			CHECK(q && profile_total(q) == 8 && q->nsamples == 3);
			profile_free(q);
		}
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/p.png", dir);
	CHECK_EQ_INT(output_write_file(p, path, "t"), -EINVAL);
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "%s/missing/p.svg", dir);
	CHECK_EQ_INT(output_write_file(p, path, "t"), -ENOENT);
	CHECK_EQ_INT(output_render(p, OUTPUT_UNKNOWN, NULL, &b), -EINVAL);
	rmdir(dir);
	buf_release(&b);
	profile_free(p);
}

static void test_input_detect(void)
{
	struct profile *p = small_profile(), *q = NULL;
	struct buf raw = BUF_INIT(BUF_UNLIMITED), text = BUF_INIT(BUF_UNLIMITED), gz = BUF_INIT(BUF_UNLIMITED);
	struct input_opts o = INPUT_OPTS_DEFAULT;
	struct errmsg err = { "" };
	enum input_format f;

	if (!p)
		return;
	CHECK_EQ_INT(pprof_encode_raw(p, &raw), 0);
	CHECK_EQ_INT(folded_write(p, &text), 0);
	CHECK_EQ_INT(input_detect(raw.data, raw.len), INPUT_PPROF);
	CHECK_EQ_INT(input_detect(text.data, text.len), INPUT_FOLDED);
	CHECK_EQ_INT(input_detect("", 0), INPUT_UNKNOWN);
	/* Raw pprof. */
	CHECK_EQ_INT(input_decode(raw.data, raw.len, &o, &f, &q, &err), 0);
	CHECK(f == INPUT_PPROF && q && profile_total(q) == 8);
	profile_free(q);
	/* gzip-compressed folded text. */
	CHECK_EQ_INT(gzip_compress(text.data, text.len, Z_BEST_SPEED, &gz), 0);
	CHECK_EQ_INT(input_decode(gz.data, gz.len, &o, &f, &q, &err), 0);
	CHECK(f == INPUT_FOLDED && q && profile_total(q) == 8);
	profile_free(q);
	/* Errors carry a message; limits hold. */
	CHECK_EQ_INT(input_decode("", 0, &o, &f, &q, &err), -EINVAL);
	CHECK(q == NULL && strstr(err.msg, "empty"));
	CHECK_EQ_INT(input_decode("x;y\n", 4, &o, &f, &q, &err), -EINVAL);
	CHECK(f == INPUT_FOLDED && strstr(err.msg, "line 1"));
	o.max_uncompressed = 10;
	CHECK_EQ_INT(input_decode(gz.data, gz.len, &o, &f, &q, &err), -E2BIG);
	CHECK_EQ_INT(input_decode(text.data, text.len, &o, &f, &q, &err), -E2BIG);
	buf_release(&raw);
	buf_release(&text);
	buf_release(&gz);
	profile_free(p);
}

int main(void)
{
	RUN(test_format_for);
	RUN(test_write_files);
	RUN(test_input_detect);
	return test_summary();
}
