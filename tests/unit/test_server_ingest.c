/* test_server_ingest.c: the server's input parsers: the ingest `name` (series_name), the
 * multipart parser, folded bodies into store batches, and pprof-model profiles into batches
 * (comm as the root frame, string labels as series labels, the type from the sample type). */
#include "lib/alloc.h"
#include "lib/buf.h"
#include "profile/decode_limits.h"
#include "profile/profile.h"
#include "server/http.h"
#include "server/ingest.h"
#include "server/multipart.h"
#include "server/series_name.h"
#include "store/store.h"
#include "test.h"

#include <errno.h>

static void test_series_name(void)
{
	struct series_name n;
	struct errmsg err;

	CHECK_EQ_INT(series_name_parse("my.app.cpu{env=prod, region=\"us east\",k.x=\"a\\\"b\"}", &n, &err), 0);
	CHECK_EQ_STR(n.app, "my.app");
	CHECK_EQ_STR(n.type, "cpu");
	CHECK_EQ_INT(n.nlabels, 3);
	CHECK_EQ_STR(series_name_label(&n, "env"), "prod");
	CHECK_EQ_STR(series_name_label(&n, "region"), "us east");
	CHECK_EQ_STR(series_name_label(&n, "k.x"), "a\"b");
	series_name_release(&n);

	CHECK_EQ_INT(series_name_parse("app", &n, &err), 0);
	CHECK_EQ_STR(n.app, "app");
	CHECK_EQ_STR(n.type, "");
	CHECK_EQ_INT(n.nlabels, 0);
	series_name_release(&n);

	CHECK_EQ_INT(series_name_parse("app.cpu{}", &n, &err), 0);
	series_name_release(&n);

	/* UTF-8 and slashes in the app name. */
	CHECK_EQ_INT(series_name_parse("s\xc3\xa9rvice/v-2.cpu", &n, &err), 0);
	CHECK_EQ_STR(n.app, "s\xc3\xa9rvice/v-2");
	CHECK_EQ_STR(n.type, "cpu");
	series_name_release(&n);

	CHECK(series_name_parse("", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse(".cpu", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse("app.", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse("app{a=1,a=2}", &n, &err) < 0);
	CHECK(strstr(err.msg, "duplicate") != NULL);
	series_name_release(&n);
	CHECK(series_name_parse("app{service_name=x}", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse("app{__x=1}", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse("app{a=\"open}", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse("app{a=1}x", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse("app{1a=1}", &n, &err) < 0);
	series_name_release(&n);
	CHECK(series_name_parse("my app", &n, &err) < 0);
	series_name_release(&n);
}

static void test_series_name_caps(void)
{
	struct series_name n;
	struct errmsg err;
	char s[SERIES_NAME_MAX + 64];
	int i, len;

	len = snprintf(s, sizeof(s), "app{");
	for (i = 0; i < SERIES_MAX_LABELS + 1; i++)
		len += snprintf(s + len, sizeof(s) - (size_t)len, "%sk%d=v", i ? "," : "", i);
	snprintf(s + len, sizeof(s) - (size_t)len, "}");
	CHECK(series_name_parse(s, &n, &err) < 0);
	CHECK(strstr(err.msg, "labels") != NULL);
	series_name_release(&n);

	len = snprintf(s, sizeof(s), "app{k=");
	memset(s + len, 'x', SERIES_MAX_VALUE + 1);
	snprintf(s + len + SERIES_MAX_VALUE + 1, 2, "}");
	CHECK(series_name_parse(s, &n, &err) < 0);
	series_name_release(&n);

	memset(s, 'a', SERIES_NAME_MAX + 1);
	s[SERIES_NAME_MAX + 1] = '\0';
	CHECK(series_name_parse(s, &n, &err) < 0);
	series_name_release(&n);
}

static void test_multipart(void)
{
	static const char body[] =
		"--XyZ\r\nContent-Disposition: form-data; name=\"sample_type_config\"\r\n\r\n{}\r\n"
		"--XyZ\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"p.pprof\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\nBIN\r\nARY\r\n--XyZ--\r\n";
	char boundary[MULTIPART_MAX_BOUNDARY + 1];
	struct multipart_part part;
	struct errmsg err;

	CHECK_EQ_INT(multipart_boundary("multipart/form-data; boundary=XyZ", boundary, sizeof(boundary), &err), 0);
	CHECK_EQ_STR(boundary, "XyZ");
	CHECK_EQ_INT(multipart_boundary("multipart/form-data; charset=utf-8; boundary=\"a b\"", boundary,
					 sizeof(boundary), &err), 0);
	CHECK_EQ_STR(boundary, "a b");
	CHECK(multipart_boundary("text/plain", boundary, sizeof(boundary), &err) < 0);
	CHECK(multipart_boundary("multipart/form-data", boundary, sizeof(boundary), &err) < 0);

	CHECK_EQ_INT(multipart_find(body, sizeof(body) - 1, "XyZ", "profile", &part, &err), 0);
	CHECK_EQ_INT(part.len, 8);
	CHECK(!memcmp(part.data, "BIN\r\nARY", 8));
	CHECK(part.filename && part.filename_len == 7);
	CHECK_EQ_INT(multipart_find(body, sizeof(body) - 1, "XyZ", "nope", &part, &err), -ENOENT);
	/* Cut before the closing delimiter: malformed. */
	CHECK_EQ_INT(multipart_find(body, 60, "XyZ", "profile", &part, &err), -EINVAL);
	CHECK_EQ_INT(multipart_find("no boundary here", 16, "XyZ", "profile", &part, &err), -EINVAL);
}

static struct ingest_meta meta_for(const struct series_name *n)
{
	struct ingest_meta m;

	memset(&m, 0, sizeof(m));
	m.name = n;
	m.app = "app";
	m.type = "cpu";
	m.from = 1000;
	m.until = 1010;
	m.sample_rate = 100;
	return m;
}

static const char *label_of(const struct store_batch *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->nlabels; i++)
		if (!strcmp(b->labels[i].name, name))
			return b->labels[i].value;
	return NULL;
}

static void test_folded(void)
{
	static const char text[] = "main;foo;bar 10\r\n\nmain;foo;bar 5\nmain 3  \n";
	struct series_name n;
	struct ingest_meta m;
	struct ingest_batches b;
	struct errmsg err;
	const struct store_batch *sb;

	CHECK_EQ_INT(series_name_parse("app.cpu{env=prod}", &n, &err), 0);
	m = meta_for(&n);
	CHECK_EQ_INT(ingest_folded(text, sizeof(text) - 1, &m, &b, &err), 0);
	CHECK_EQ_INT(b.n, 1);
	CHECK_EQ_INT(b.samples, 18);
	CHECK_EQ_INT(b.stacks, 3);
	sb = &b.batches[0];
	CHECK_EQ_INT(sb->nsamples, 2); /* equal stacks summed */
	CHECK_EQ_STR(label_of(sb, "service_name"), "app");
	CHECK_EQ_STR(label_of(sb, "env"), "prod");
	CHECK_EQ_INT(sb->from, 1000);
	if (sb->nsamples == 2) {
		size_t i;
		int64_t deep = 0;

		for (i = 0; i < 2; i++)
			if (sb->samples[i].nframes == 3) {
				deep = sb->samples[i].value;
				CHECK_EQ_STR(sb->frame_names[sb->samples[i].frames[0]], "main");
				CHECK_EQ_STR(sb->frame_names[sb->samples[i].frames[2]], "bar");
			}
		CHECK_EQ_INT(deep, 15);
	}
	ingest_batches_release(&b);

	CHECK(ingest_folded("a;b\n", 4, &m, &b, &err) < 0);
	CHECK(strstr(err.msg, "line 1") != NULL);
	ingest_batches_release(&b);
	CHECK(ingest_folded("a 1\na;b -2\n", 11, &m, &b, &err) < 0);
	CHECK(strstr(err.msg, "line 2") != NULL);
	ingest_batches_release(&b);
	CHECK(ingest_folded(" 5\n", 3, &m, &b, &err) < 0);
	ingest_batches_release(&b);
	CHECK(ingest_folded("a 99999999999999999999\n", 23, &m, &b, &err) < 0);
	ingest_batches_release(&b);
	CHECK(ingest_folded("a\0b 1\n", 6, &m, &b, &err) < 0);
	ingest_batches_release(&b);
	series_name_release(&n);
}

static void test_profile(void)
{
	struct profile *p = profile_new();
	struct series_name n;
	struct ingest_meta m;
	struct ingest_batches b;
	struct errmsg err;
	struct profile_label l1[2], l2[2];
	uint32_t f_main, f_work, f_k, locs[3];
	char type[64];
	const char *units;
	uint32_t rate;
	size_t i;

	profile_set_type(p, "samples", "count", 1000000000LL / 99);
	f_main = profile_intern_function(p, FRAME_NATIVE, "main", "main", NULL, 0);
	f_work = profile_intern_function(p, FRAME_NATIVE, "work", "work", NULL, 0);
	f_k = profile_intern_function(p, FRAME_KERNEL, "do_syscall", "do_syscall", NULL, 0);
	locs[0] = profile_intern_location(p, 0, 0, f_k, 0); /* leaf first */
	locs[1] = profile_intern_location(p, 0, 0, f_work, 0);
	locs[2] = profile_intern_location(p, 0, 0, f_main, 0);
	l1[0].key = profile_str(p, "comm");
	l1[0].str = profile_str(p, "server");
	l1[0].num = 0;
	l1[1].key = profile_str(p, "pid");
	l1[1].str = 0;
	l1[1].num = 42;
	l2[0].key = profile_str(p, "comm");
	l2[0].str = profile_str(p, "server");
	l2[0].num = 0;
	l2[1].key = profile_str(p, "thread_pool");
	l2[1].str = profile_str(p, "io");
	l2[1].num = 0;
	profile_add_sample(p, locs, 3, l1, 2, 7);
	profile_add_sample(p, locs + 1, 2, l2, 2, 4);

	ingest_pprof_type(p, "", type, sizeof(type), &units, &rate);
	CHECK_EQ_STR(type, "cpu");
	CHECK_EQ_STR(units, "samples");
	CHECK_EQ_INT(rate, 99);

	CHECK_EQ_INT(series_name_parse("app{env=dev}", &n, &err), 0);
	m = meta_for(&n);
	CHECK_EQ_INT(ingest_profile(p, &m, &b, &err), 0);
	CHECK_EQ_INT(b.samples, 11);
	CHECK_EQ_INT(b.n, 2); /* the numeric pid makes no series; thread_pool=io does */
	for (i = 0; i < b.n; i++) {
		const struct store_batch *sb = &b.batches[i];

		CHECK_EQ_STR(label_of(sb, "env"), "dev");
		CHECK_EQ_STR(label_of(sb, "service_name"), "app");
		CHECK(label_of(sb, "comm") == NULL);
		CHECK_EQ_INT(sb->nsamples, 1);
		if (sb->nsamples != 1)
			continue;
		CHECK_EQ_STR(sb->frame_names[sb->samples[0].frames[0]], "server");
		CHECK_EQ_STR(sb->frame_names[sb->samples[0].frames[1]], "main");
		if (label_of(sb, "thread_pool")) {
			CHECK_EQ_INT(sb->samples[0].value, 4);
			CHECK_EQ_INT(sb->samples[0].nframes, 3);
		} else {
			CHECK_EQ_INT(sb->samples[0].value, 7);
			CHECK_EQ_INT(sb->samples[0].nframes, 4);
			CHECK_EQ_STR(sb->frame_names[sb->samples[0].frames[3]], "do_syscall_[k]");
		}
	}
	ingest_batches_release(&b);
	series_name_release(&n);
	profile_free(p);
}

/* Folded lines the store cannot take as they are: deeper than STORE_MAX_DEPTH (cut at the root
 * side with "[truncated]"), frames longer than STORE_MAX_FRAME (cut); counts whose sum passes
 * INT64_MAX (saturate); text without a terminating NUL (a multipart part). */
static void test_folded_limits(void)
{
	struct buf t = BUF_INIT(1 << 24);
	struct series_name n;
	struct ingest_meta m;
	struct ingest_batches b;
	struct errmsg err;
	char *exact;
	size_t i;

	CHECK_EQ_INT(series_name_parse("app.cpu", &n, &err), 0);
	m = meta_for(&n);
	for (i = 0; i < 3000; i++)
		buf_printf(&t, "%sf%zu", i ? ";" : "", i);
	buf_puts(&t, " 7\nlong;");
	for (i = 0; i < STORE_MAX_FRAME + 100; i++)
		buf_putc(&t, 'x');
	buf_puts(&t, " 2\nbig 9223372036854775807\nbig 5\n");
	/* Exactly the bytes, no NUL after them (ASan checks nothing reads past). */
	exact = xmalloc(t.len);
	memcpy(exact, t.data, t.len);
	CHECK_EQ_INT(ingest_folded(exact, t.len, &m, &b, &err), 0);
	CHECK_EQ_INT(b.n, 1);
	CHECK_EQ_INT(b.samples, INT64_MAX);
	if (b.n == 1) {
		const struct store_batch *sb = &b.batches[0];

		CHECK_EQ_INT(sb->nsamples, 3);
		for (i = 0; i < sb->nsamples; i++) {
			const struct store_sample *sm = &sb->samples[i];
			const char *root = sb->frame_names[sm->frames[0]];

			if (!strcmp(root, "f0")) {
				CHECK_EQ_INT(sm->nframes, STORE_MAX_DEPTH);
				CHECK_EQ_STR(sb->frame_names[sm->frames[sm->nframes - 1]], "[truncated]");
				CHECK_EQ_STR(sb->frame_names[sm->frames[sm->nframes - 2]], "f2046");
				CHECK_EQ_INT(sm->value, 7);
			} else if (!strcmp(root, "long")) {
				CHECK_EQ_INT(sm->nframes, 2);
				CHECK_EQ_INT(strlen(sb->frame_names[sm->frames[1]]), STORE_MAX_FRAME);
			} else {
				CHECK_EQ_STR(root, "big");
				CHECK_EQ_INT(sm->value, INT64_MAX);
			}
		}
	}
	ingest_batches_release(&b);
	xfree(exact);
	buf_release(&t);
	series_name_release(&n);
}

/* pprof sample labels cannot move samples to another app or set the pseudo labels. */
static void test_profile_reserved_labels(void)
{
	struct profile *p = profile_new();
	struct series_name n;
	struct ingest_meta m;
	struct ingest_batches b;
	struct errmsg err;
	struct profile_label l[3];
	uint32_t f, loc;

	profile_set_type(p, "samples", "count", 10000000);
	f = profile_intern_function(p, FRAME_NATIVE, "main", "main", NULL, 0);
	loc = profile_intern_location(p, 0, 0, f, 0);
	l[0].key = profile_str(p, "service_name");
	l[0].str = profile_str(p, "someone-else");
	l[1].key = profile_str(p, "__type__");
	l[1].str = profile_str(p, "alloc");
	l[2].key = profile_str(p, "span");
	l[2].str = profile_str(p, "s1");
	l[0].num = l[1].num = l[2].num = 0;
	profile_add_sample(p, &loc, 1, l, 3, 5);
	CHECK_EQ_INT(series_name_parse("app", &n, &err), 0);
	m = meta_for(&n);
	CHECK_EQ_INT(ingest_profile(p, &m, &b, &err), 0);
	CHECK_EQ_INT(b.n, 1);
	if (b.n == 1) {
		CHECK_EQ_STR(label_of(&b.batches[0], "service_name"), "app");
		CHECK(label_of(&b.batches[0], "__type__") == NULL);
		CHECK_EQ_STR(label_of(&b.batches[0], "span"), "s1");
	}
	ingest_batches_release(&b);
	series_name_release(&n);
	profile_free(p);
}

static void test_secret_equal(void)
{
	CHECK(http_secret_equal("abc", 3, "abc", 3));
	CHECK(!http_secret_equal("abc", 3, "abd", 3));
	CHECK(!http_secret_equal("abc", 3, "abcd", 4));
	CHECK(!http_secret_equal("", 0, "a", 1));
	CHECK(http_secret_equal("", 0, "", 0));
}

/* A profile with several value columns converts in one pass: one batch per column, the stacks
 * shared, a stack missing from a column left out of its batch. */
static void test_profile_columns(void)
{
	struct profile *p = profile_new();
	struct series_name n;
	struct ingest_meta m;
	struct ingest_batches b;
	struct errmsg err;
	struct ingest_column cols[2] = { { 1, "alloc_space", "bytes" }, { 0, "alloc_objects", NULL } };
	uint32_t types[2], units[2], loc[2];
	int64_t v1[2] = { 3, 300 }, v2[2] = { 0, 50 };
	size_t i;

	types[0] = profile_str(p, "alloc_objects");
	units[0] = profile_str(p, "count");
	types[1] = profile_str(p, "alloc_space");
	units[1] = profile_str(p, "bytes");
	profile_set_value_types(p, 2, types, units, 1);
	loc[0] = profile_intern_location(p, 0, 0, profile_intern_function(p, FRAME_NATIVE, "alloc",
									    NULL, NULL, 0), 0);
	loc[1] = profile_intern_location(p, 0, 0, profile_intern_function(p, FRAME_NATIVE, "main",
									    NULL, NULL, 0), 0);
	profile_add_sample_values(p, loc, 2, NULL, 0, v1);
	profile_add_sample_values(p, loc, 2, NULL, 0, v1); /* merged: 6, 600 */
	profile_add_sample_values(p, loc + 1, 1, NULL, 0, v2);
	CHECK_EQ_INT(p->nsamples, 2);
	CHECK_EQ_INT(p->samples[0].value, 600);
	CHECK_EQ_INT(series_name_parse("app", &n, &err), 0);
	m = meta_for(&n);
	m.units = "objects";
	CHECK_EQ_INT(ingest_profile_columns(p, &m, cols, 2, &b, &err), 0);
	CHECK_EQ_INT(b.n, 2);
	CHECK_EQ_INT(b.stacks, 2);
	CHECK_EQ_INT(b.samples, 600 + 50 + 6);
	for (i = 0; i < b.n; i++) {
		const struct store_batch *sb = &b.batches[i];

		if (!strcmp(sb->type, "alloc_space")) {
			CHECK_EQ_STR(sb->units, "bytes");
			CHECK_EQ_INT(sb->nsamples, 2);
		} else {
			CHECK_EQ_STR(sb->type, "alloc_objects");
			CHECK_EQ_STR(sb->units, "objects"); /* NULL: the meta's units */
			CHECK_EQ_INT(sb->nsamples, 1);
			if (sb->nsamples == 1) {
				CHECK_EQ_INT(sb->samples[0].value, 6);
				CHECK_EQ_INT(sb->samples[0].nframes, 2);
			}
		}
	}
	ingest_batches_release(&b);
	series_name_release(&n);
	profile_free(p);
}

/* The decode limits bound folded bodies too: distinct stacks and their frames. */
static void test_folded_caps(void)
{
	static const char text[] = "a;b 1\na;b 2\na;c 1\nd 1\n";
	struct series_name n;
	struct ingest_meta m;
	struct ingest_batches b;
	struct decode_limits l;
	struct errmsg err;

	CHECK_EQ_INT(series_name_parse("app", &n, &err), 0);
	m = meta_for(&n);
	decode_limits_default(&l);
	m.limits = &l;
	CHECK_EQ_INT(ingest_folded(text, sizeof(text) - 1, &m, &b, &err), 0);
	ingest_batches_release(&b);
	/* Two distinct stacks fit (the repeated one adds up); the third does not. */
	l.max_samples = 2;
	CHECK_EQ_INT(ingest_folded(text, sizeof(text) - 1, &m, &b, &err), -E2BIG);
	CHECK(strstr(err.msg, "limit 'samples'") != NULL);
	ingest_batches_release(&b);
	CHECK_EQ_INT(ingest_folded(text, 12, &m, &b, &err), 0);
	ingest_batches_release(&b);
	decode_limits_default(&l);
	l.max_frames = 4; /* the three stacks have 5 */
	CHECK_EQ_INT(ingest_folded(text, sizeof(text) - 1, &m, &b, &err), -E2BIG);
	CHECK(strstr(err.msg, "limit 'frames'") != NULL);
	ingest_batches_release(&b);
	series_name_release(&n);
}

int main(void)
{
	RUN(test_series_name);
	RUN(test_series_name_caps);
	RUN(test_multipart);
	RUN(test_folded);
	RUN(test_profile);
	RUN(test_folded_limits);
	RUN(test_profile_reserved_labels);
	RUN(test_secret_equal);
	RUN(test_profile_columns);
	RUN(test_folded_caps);
	return test_summary();
}
