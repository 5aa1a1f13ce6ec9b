/* test_speedscope.c: the speedscope writer's output parsed back and checked against the file
 * format (schema fields, frame indexes, weights, units) and against the profile. */
#include "lib/alloc.h"
#include "minijson.h"
#include "profile/folded.h"
#include "profile/output.h"
#include "test.h"

#include <errno.h>
#include <math.h>

static struct profile *sample_profile(void)
{
	struct profile *p = profile_new();
	uint32_t fmain = profile_intern_function(p, FRAME_NATIVE, "main", NULL, "main.c", 1);
	uint32_t fq = profile_intern_function(p, FRAME_NATIVE, "say \"hi\" \\ \xc3\xa9t\xc3\xa9 \xff", NULL, NULL, 0);
	uint32_t fpy = profile_intern_function(p, FRAME_PYTHON, "run", NULL, "job.py", 1);
	uint32_t lmain = profile_intern_location(p, 0, 0x10, fmain, 5);
	uint32_t lmain2 = profile_intern_location(p, 0, 0x20, fmain, 5); /* same name: one frame */
	uint32_t lq = profile_intern_location(p, 0, 0, fq, 0);
	uint32_t lpy = profile_intern_location(p, 0, 0, fpy, 9);
	struct profile_label comm = { profile_str(p, "comm"), profile_str(p, "worker"), 0 };
	uint32_t s[3];

	profile_set_type(p, "cpu", "nanoseconds", 1000);
	s[0] = lq; s[1] = lmain;
	profile_add_sample(p, s, 2, &comm, 1, 300);
	s[0] = lpy; s[1] = lmain2;
	profile_add_sample(p, s, 2, NULL, 0, 200);
	profile_add_sample(p, s, 1, NULL, 0, -5);   /* left out */
	return p;
}

static void test_structure(void)
{
	struct profile *p = sample_profile();
	struct buf out = BUF_INIT(BUF_UNLIMITED);
	struct mj *doc;
	const struct mj *frames, *prof, *samples, *weights, *v;
	double sum = 0;
	size_t i, j;

	CHECK_EQ_INT(speedscope_write(p, "my \"title\"", &out), 0);
	doc = mj_parse(out.data, out.len);
	CHECK(doc != NULL);
	if (!doc) {
		fprintf(stderr, "  not JSON: %s\n", out.data);
		goto cleanup;
	}
	v = mj_get(doc, "$schema");
	CHECK(v && v->type == MJ_STR && !strcmp(v->str, "https://www.speedscope.app/file-format-schema.json"));
	v = mj_get(doc, "name");
	CHECK(v && v->type == MJ_STR && !strcmp(v->str, "my \"title\""));
	v = mj_get(doc, "exporter");
	CHECK(v && v->type == MJ_STR);
	frames = mj_get(mj_get(doc, "shared"), "frames");
	CHECK(frames && frames->type == MJ_ARR);
	if (!frames)
		goto cleanup;
	/* worker, main, the odd name, run (main at two addresses is one frame) */
	CHECK_EQ_INT(frames->n, 4);
	for (i = 0; i < frames->n; i++) {
		v = mj_get(&frames->items[i], "name");
		CHECK(v && v->type == MJ_STR && v->n > 0);
	}
	CHECK_EQ_STR(mj_get(&frames->items[0], "name")->str, "worker");
	CHECK_EQ_STR(mj_get(&frames->items[1], "name")->str, "main");
	CHECK_EQ_STR(mj_get(&frames->items[1], "file")->str, "main.c");
	/* by function: where the function starts */
	CHECK(mj_get(&frames->items[1], "line")->num == 1);
	/* Valid UTF-8 survives; the stray byte becomes U+FFFD. */
	CHECK_EQ_STR(mj_get(&frames->items[2], "name")->str, "say \"hi\" \\ \xc3\xa9t\xc3\xa9 \xef\xbf\xbd");
	CHECK(mj_get(&frames->items[2], "file") == NULL);
	CHECK_EQ_STR(mj_get(&frames->items[3], "name")->str, "run (job.py)");

	prof = mj_get(doc, "profiles");
	CHECK(prof && prof->type == MJ_ARR && prof->n == 1);
	if (!prof || prof->n != 1)
		goto cleanup;
	prof = &prof->items[0];
	CHECK_EQ_STR(mj_get(prof, "type")->str, "sampled");
	CHECK_EQ_STR(mj_get(prof, "name")->str, "my \"title\"");
	CHECK_EQ_STR(mj_get(prof, "unit")->str, "nanoseconds");
	CHECK(mj_get(prof, "startValue")->num == 0);
	samples = mj_get(prof, "samples");
	weights = mj_get(prof, "weights");
	CHECK(samples && weights && samples->type == MJ_ARR && weights->type == MJ_ARR);
	if (!samples || !weights)
		goto cleanup;
	CHECK_EQ_INT(samples->n, 2);
	CHECK_EQ_INT(weights->n, 2);
	for (i = 0; i < weights->n; i++)
		sum += weights->items[i].num;
	CHECK(sum == 500);
	CHECK(mj_get(prof, "endValue")->num == sum);
	for (i = 0; i < samples->n; i++) {
		CHECK(samples->items[i].type == MJ_ARR);
		for (j = 0; j < samples->items[i].n; j++) {
			double ix = samples->items[i].items[j].num;

			CHECK(ix >= 0 && ix < (double)frames->n && ix == floor(ix));
		}
	}
	/* Root first: comm, main, then the leaf. */
	CHECK_EQ_INT(samples->items[0].n, 3);
	CHECK(samples->items[0].items[0].num == 0 && samples->items[0].items[1].num == 1 &&
	      samples->items[0].items[2].num == 2);
	CHECK(weights->items[0].num == 300);
cleanup:
	mj_free(doc);
	buf_release(&out);
	profile_free(p);
}

static void test_units_and_empty(void)
{
	struct profile *p = NULL;
	struct errmsg err;
	struct buf out = BUF_INIT(BUF_UNLIMITED);
	struct mj *doc;

	/* Folded counts have no time unit: "none". */
	CHECK_EQ_INT(folded_parse("a;b 2\n", 6, 10, &p, &err), 0);
	CHECK_EQ_INT(speedscope_write(p, NULL, &out), 0);
	doc = mj_parse(out.data, out.len);
	CHECK(doc != NULL);
	if (doc) {
		const struct mj *prof = &mj_get(doc, "profiles")->items[0];

		CHECK_EQ_STR(mj_get(prof, "unit")->str, "none");
		CHECK(mj_get(prof, "endValue")->num == 2);
	}
	mj_free(doc);
	profile_free(p);
	/* No samples: still a valid file. */
	p = profile_new();
	buf_reset(&out);
	CHECK_EQ_INT(speedscope_write(p, "empty", &out), 0);
	doc = mj_parse(out.data, out.len);
	CHECK(doc != NULL);
	if (doc)
		CHECK_EQ_INT(mj_get(mj_get(doc, "shared"), "frames")->n, 0);
	mj_free(doc);
	/* The maximum is honoured and leaves out as it was. */
	{
		struct buf small = BUF_INIT(50);

		CHECK_EQ_INT(buf_puts(&small, "keep"), 0);
		CHECK_EQ_INT(speedscope_write(p, "empty", &small), -E2BIG);
		CHECK_EQ_STR(small.data, "keep");
		buf_release(&small);
	}
	profile_free(p);
	buf_release(&out);
}

int main(void)
{
	RUN(test_structure);
	RUN(test_units_and_empty);
	return test_summary();
}
