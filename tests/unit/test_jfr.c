/* test_jfr.c: the JFR decoder on chunks written here field by field (every string encoding, pool
 * references from pools, truncated stacks, Pyroscope context labels, several chunks, settings),
 * and on hostile variants of them; plus the LabelsSnapshot decoder. A recording made by a real
 * JVM is covered by tests/integration/jfr_ingest.sh. */
#include "lib/alloc.h"
#include "lib/buf.h"
#include "profile/folded.h"
#include "profile/gzip.h"
#include "profile/jfr.h"
#include "profile/protobuf.h"
#include "test.h"

#include <errno.h>
#include <zlib.h>

/* ---- a tiny JFR writer ---- */

static void vint(struct buf *b, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++) {
		if (v < 0x80) {
			buf_putc(b, (char)v);
			return;
		}
		buf_putc(b, (char)(0x80 | (v & 0x7f)));
		v >>= 7;
	}
	buf_putc(b, (char)v);
}

static void str3(struct buf *b, const char *s)
{
	buf_putc(b, 3);
	vint(b, strlen(s));
	buf_puts(b, s);
}

/* An event: size as a padded 4-byte varint (as the JDK writes it), then body. */
static void event(struct buf *out, const struct buf *body)
{
	uint64_t n = body->len + 4;

	buf_putc(out, (char)(0x80 | (n & 0x7f)));
	buf_putc(out, (char)(0x80 | ((n >> 7) & 0x7f)));
	buf_putc(out, (char)(0x80 | ((n >> 14) & 0x7f)));
	buf_putc(out, (char)((n >> 21) & 0x7f));
	buf_append(out, body->data, body->len);
}

static void be64(struct buf *b, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--)
		buf_putc(b, (char)(v >> (8 * i)));
}

static const char *const strings[] = {
	"root", "metadata", "region", "class", "field", "name", "id", "constantPool", "dimension",
	"true", "1", "long", "int", "boolean", "java.lang.String", "java.lang.Thread",
	"jdk.types.Symbol", "java.lang.Class", "jdk.types.Method", "jdk.types.StackFrame",
	"jdk.types.StackTrace", "jdk.ExecutionSample", "jdk.ActiveSetting", "jdk.JavaMonitorEnter",
	"x.Unknown", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31", "32", "33",
	"javaName", "osName", "string", "type", "descriptor", "method", "lineNumber", "truncated",
	"frames", "startTime", "sampledThread", "stackTrace", "contextId", "value", "duration",
	"eventThread", "double", "34", "self", "tags", "nested", "x.Nested", "35", "d", "annotation",
};

static uint64_t si(const char *s)
{
	uint64_t i;

	for (i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		if (!strcmp(strings[i], s))
			return i;
	}
	fprintf(stderr, "test_jfr: no string '%s'\n", s);
	abort();
}

/* element name, attributes (key, value pairs, NULL-terminated), child count follows */
static void elem(struct buf *b, const char *name, const char *const *attrs, uint64_t children)
{
	size_t n = 0;

	while (attrs && attrs[2 * n])
		n++;
	vint(b, si(name));
	vint(b, n);
	for (size_t i = 0; i < n; i++) {
		vint(b, si(attrs[2 * i]));
		vint(b, si(attrs[2 * i + 1]));
	}
	vint(b, children);
}

static void cls(struct buf *b, const char *id, const char *name, uint64_t nfields)
{
	const char *a[] = { "id", id, "name", name, NULL };

	elem(b, "class", a, nfields);
}

static void fld(struct buf *b, const char *name, const char *cls_id, int cp, int array)
{
	const char *a[9] = { "name", name, "class", cls_id, NULL, NULL, NULL, NULL, NULL };
	int n = 4;

	if (cp) {
		a[n++] = "constantPool";
		a[n++] = "true";
	}
	if (array) {
		a[n++] = "dimension";
		a[n++] = "1";
	}
	elem(b, "field", a, 0);
}

enum { BAD_NONE, BAD_UNKNOWN_FIELD_CLASS, BAD_SELF_NEST, BAD_POOL_CLASS, BAD_STACK_REF,
       BAD_DEEP_STACK };

/* One chunk with everything; `bad` breaks one thing. */
static void write_chunk(struct buf *out, int bad, uint64_t start_ns)
{
	struct buf meta = BUF_INIT(BUF_UNLIMITED), cp = BUF_INIT(BUF_UNLIMITED);
	struct buf evs = BUF_INIT(BUF_UNLIMITED), e = BUF_INIT(BUF_UNLIMITED);
	size_t start = out->len, i, meta_off, cp_off;
	int k;

	/* metadata */
	vint(&meta, 0); /* type */
	vint(&meta, 0); /* start */
	vint(&meta, 0); /* duration */
	vint(&meta, 1); /* metadata id */
	vint(&meta, sizeof(strings) / sizeof(strings[0]));
	for (i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		str3(&meta, strings[i]);
	elem(&meta, "root", NULL, 2);
	elem(&meta, "metadata", NULL, 16);
	cls(&meta, "20", "long", 0);
	cls(&meta, "21", "int", 0);
	cls(&meta, "22", "boolean", 0);
	cls(&meta, "23", "java.lang.String", 0);
	cls(&meta, "34", "double", 0);
	cls(&meta, "24", "java.lang.Thread", 2);
	fld(&meta, "javaName", "23", 0, 0);
	fld(&meta, "osName", "23", 0, 0);
	cls(&meta, "25", "jdk.types.Symbol", 1);
	fld(&meta, "string", "23", 0, 0);
	cls(&meta, "26", "java.lang.Class", 1);
	fld(&meta, "name", "25", 1, 0);
	cls(&meta, "27", "jdk.types.Method", 3);
	fld(&meta, "type", "26", 1, 0);
	fld(&meta, "name", "25", 1, 0);
	fld(&meta, "descriptor", "25", 1, 0);
	cls(&meta, "28", "jdk.types.StackFrame", 2);
	fld(&meta, "method", "27", 1, 0);
	fld(&meta, "lineNumber", "21", 0, 0);
	cls(&meta, "29", "jdk.types.StackTrace", 2);
	fld(&meta, "truncated", "22", 0, 0);
	fld(&meta, "frames", "28", 0, 1);
	cls(&meta, "30", "jdk.ExecutionSample", bad == BAD_SELF_NEST ? 5 : 4);
	fld(&meta, "startTime", "20", 0, 0);
	fld(&meta, "sampledThread", "24", 1, 0);
	fld(&meta, "stackTrace", "29", 1, 0);
	fld(&meta, "contextId", "20", 0, 0);
	if (bad == BAD_SELF_NEST)
		fld(&meta, "nested", "35", 0, 0);
	cls(&meta, "31", "jdk.ActiveSetting", 4);
	fld(&meta, "startTime", "20", 0, 0);
	fld(&meta, "id", "20", 0, 0);
	fld(&meta, "name", "23", 0, 0);
	fld(&meta, "value", "23", 0, 0);
	cls(&meta, "32", "jdk.JavaMonitorEnter", 4);
	fld(&meta, "startTime", "20", 0, 0);
	fld(&meta, "duration", "20", 0, 0);
	fld(&meta, "eventThread", "24", 1, 0);
	fld(&meta, "stackTrace", "29", 1, 0);
	/* An event nobody reads, with an inline struct, a double and a string array to skip. */
	cls(&meta, "35", "x.Nested", bad == BAD_SELF_NEST ? 2 : 1);
	fld(&meta, "d", "34", 0, 0);
	if (bad == BAD_SELF_NEST)
		fld(&meta, "self", "35", 0, 0); /* an inline type containing itself */
	cls(&meta, "33", "x.Unknown", 3);
	fld(&meta, "nested", bad == BAD_UNKNOWN_FIELD_CLASS ? "1" : "35", 0, 0);
	fld(&meta, "tags", "23", 0, 1);
	fld(&meta, "value", "20", 0, 0);
	elem(&meta, "region", NULL, 0);

	/* constant pools */
	vint(&cp, 1);  /* type */
	vint(&cp, 0);  /* start */
	vint(&cp, 0);  /* duration */
	vint(&cp, 0);  /* delta */
	buf_putc(&cp, 0); /* checkpoint type */
	vint(&cp, 7);  /* pools */
	vint(&cp, 23); /* String */
	vint(&cp, 1);
	vint(&cp, 1);
	str3(&cp, "lib");
	vint(&cp, bad == BAD_POOL_CLASS ? 99 : 25); /* Symbol */
	vint(&cp, 6);
	vint(&cp, 1); str3(&cp, "com/example/App");
	vint(&cp, 2); str3(&cp, "main");
	vint(&cp, 3); buf_putc(&cp, 5); vint(&cp, 4); buf_puts(&cp, "w\xf6rk"); /* Latin-1 */
	vint(&cp, 4); str3(&cp, "([Ljava/lang/String;)V");
	vint(&cp, 5); str3(&cp, "()V");
	vint(&cp, 6); buf_putc(&cp, 2); vint(&cp, 1); /* a reference to String 1 */
	vint(&cp, 26); /* Class */
	vint(&cp, 1);
	vint(&cp, 1); vint(&cp, 1);
	vint(&cp, 27); /* Method */
	vint(&cp, 2);
	vint(&cp, 1); vint(&cp, 1); vint(&cp, 2); vint(&cp, 4);
	vint(&cp, 2); vint(&cp, 1); vint(&cp, 3); vint(&cp, 5);
	vint(&cp, 24); /* Thread */
	vint(&cp, 2);
	vint(&cp, 1); buf_putc(&cp, 5); vint(&cp, 8); buf_puts(&cp, "worker-1"); buf_putc(&cp, 0);
	vint(&cp, 2); buf_putc(&cp, 0); buf_putc(&cp, 4); vint(&cp, 3);
	vint(&cp, 'o'); vint(&cp, 0xd83d); vint(&cp, 0xde00); /* "o" and U+1F600 as UTF-16 */
	vint(&cp, 29); /* StackTrace */
	vint(&cp, 2);
	vint(&cp, 1); buf_putc(&cp, 0); vint(&cp, bad == BAD_DEEP_STACK ? 3 : 2);
	vint(&cp, 2); vint(&cp, 20);
	vint(&cp, 1); vint(&cp, 10);
	if (bad == BAD_DEEP_STACK) {
		vint(&cp, 1);
		vint(&cp, 9);
	}
	vint(&cp, 2); buf_putc(&cp, 1); vint(&cp, 1);
	vint(&cp, 1); vint(&cp, (uint64_t)-1); /* line -1: unknown */
	vint(&cp, 28); /* StackFrame: an (empty) pool of a type used inline */
	vint(&cp, 0);

	/* events */
	buf_reset(&e);
	vint(&e, 31); vint(&e, 5); vint(&e, 30); str3(&e, "period"); str3(&e, "20 ms");
	event(&evs, &e);
	for (k = 0; k < 3; k++) {
		buf_reset(&e);
		vint(&e, 30); vint(&e, 100 + k); vint(&e, 1);
		vint(&e, bad == BAD_STACK_REF ? 77 : 1); vint(&e, 7);
		event(&evs, &e);
	}
	buf_reset(&e);
	vint(&e, 30); vint(&e, 200); vint(&e, 2); vint(&e, 2); vint(&e, 0);
	event(&evs, &e);
	buf_reset(&e);
	vint(&e, 32); vint(&e, 300); vint(&e, 2000); vint(&e, 1); vint(&e, 1);
	event(&evs, &e);
	buf_reset(&e);
	vint(&e, 33); /* x.Unknown: nested {d}, tags ["a", "b"], value */
	be64(&e, 0x4000000000000000ULL); /* the double 2.0 */
	vint(&e, 2); str3(&e, "a"); str3(&e, "b");
	vint(&e, 5);
	event(&evs, &e);

	/* the chunk: header, events, constant pool, metadata */
	buf_append(out, "FLR\0\0\2\0\1", 8);
	be64(out, 0); /* size, fixed below */
	be64(out, 0); /* constant pool offset */
	be64(out, 0); /* metadata offset */
	be64(out, start_ns);
	be64(out, 3000000000ULL);
	be64(out, 1000);
	be64(out, 1000000); /* ticks per second */
	buf_append(out, "\0\0\0\3", 4);
	buf_append(out, evs.data, evs.len);
	cp_off = out->len - start;
	event(out, &cp);
	meta_off = out->len - start;
	event(out, &meta);
	for (k = 0; k < 8; k++) {
		out->data[start + 8 + k] = (char)((out->len - start) >> (8 * (7 - k)));
		out->data[start + 16 + k] = (char)(cp_off >> (8 * (7 - k)));
		out->data[start + 24 + k] = (char)(meta_off >> (8 * (7 - k)));
	}
	buf_release(&meta);
	buf_release(&cp);
	buf_release(&evs);
	buf_release(&e);
}

/* LabelsSnapshot { contexts {7: {labels {1: 2}}}, strings {1: "endpoint", 2: "/api/v1"} } */
static void write_labels(struct buf *b, int bad)
{
	struct protobuf_writer w = PROTOBUF_WRITER(b);
	size_t m, c, l;

	m = protobuf_begin(&w, 1);
	protobuf_put_uint64(&w, 1, 7);
	c = protobuf_begin(&w, 2);
	l = protobuf_begin(&w, 1);
	protobuf_put_uint64(&w, 1, 1);
	protobuf_put_uint64(&w, 2, bad ? 9 : 2);
	protobuf_end(&w, l);
	protobuf_end(&w, c);
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 2);
	protobuf_put_uint64(&w, 1, 1);
	protobuf_put_bytes(&w, 2, "endpoint", 8);
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 2);
	protobuf_put_uint64(&w, 1, 2);
	protobuf_put_bytes(&w, 2, "/api/v1", 7);
	protobuf_end(&w, m);
}

static char *folded_of(const struct profile *p)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);

	folded_write(p, &b);
	return buf_detach(&b, NULL);
}

static const struct jfr_profile *find(const struct jfr_result *r, const char *type)
{
	size_t i;

	for (i = 0; i < r->nprofiles; i++) {
		if (!strcmp(r->profiles[i].type, type))
			return &r->profiles[i];
	}
	return NULL;
}

static void test_decode(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED), lb = BUF_INIT(BUF_UNLIMITED);
	struct jfr_labels *labels = NULL;
	struct jfr_result r;
	struct errmsg err = { "" };
	const struct jfr_profile *jp;
	char *f;

	write_chunk(&b, BAD_NONE, 1700000000000000000ULL);
	write_labels(&lb, 0);
	CHECK_EQ_INT(jfr_labels_decode(lb.data, lb.len, NULL, &labels, &err), 0);
	CHECK_EQ_INT(jfr_decode(b.data, b.len, NULL, labels, &r, &err), 0);
	CHECK_EQ_STR(err.msg, "");
	CHECK_EQ_INT(r.chunks, 1);
	CHECK_EQ_INT(r.events, 5);
	CHECK_EQ_INT(r.nprofiles, 3); /* cpu, lock_count, lock_duration */
	CHECK_EQ_INT(r.start_ns, 1700000000000000000LL);
	CHECK_EQ_INT(r.duration_ns, 3000000000LL);
	jp = find(&r, "cpu");
	CHECK(jp != NULL);
	if (jp) {
		CHECK_EQ_STR(jp->units, "samples");
		CHECK_EQ_INT(jp->sample_rate, 50); /* "20 ms" */
		CHECK_EQ_INT(jp->prof->period, 20000000);
		CHECK_EQ_INT(profile_total(jp->prof), 4);
		f = folded_of(jp->prof);
		/* Latin-1 and UTF-16 names to UTF-8, internal class names dotted, the context's
		 * labels on the sample, a truncated stack marked at its root. */
		CHECK_EQ_STR(f, "o\xf0\x9f\x98\x80;[truncated];com.example.App.main 1\n"
				"worker-1;com.example.App.main;com.example.App.w\xc3\xb6rk 3\n");
		xfree(f);
		CHECK_EQ_STR(profile_sample_label_str(jp->prof, &jp->prof->samples[0], "endpoint"), "/api/v1");
		CHECK(profile_sample_label_str(jp->prof, &jp->prof->samples[1], "endpoint") == NULL);
		/* Line numbers on the locations, the descriptor in system_name. */
		{
			const struct profile_sample *s = &jp->prof->samples[0];
			const uint32_t *locs = profile_sample_locs(jp->prof, s);
			const struct profile_location *leaf = &jp->prof->locations[locs[0] - 1];

			CHECK_EQ_INT(leaf->line, 20);
			CHECK_EQ_STR(profile_get_str(jp->prof, jp->prof->functions[leaf->function - 1].system_name),
				     "com.example.App.w\xc3\xb6rk()V");
		}
	}
	jp = find(&r, "lock_duration");
	CHECK(jp && profile_total(jp->prof) == 2000000); /* 2000 ticks at 1 MHz */
	jp = find(&r, "lock_count");
	CHECK(jp && profile_total(jp->prof) == 1 && !strcmp(jp->units, "count"));
	jfr_result_release(&r);

	/* Two chunks (as a long recording has): totals add up, the span covers both; gzip. */
	write_chunk(&b, BAD_NONE, 1700000010000000000ULL);
	{
		struct buf z = BUF_INIT(BUF_UNLIMITED);

		CHECK_EQ_INT(gzip_compress(b.data, b.len, Z_BEST_SPEED, &z), 0);
		CHECK_EQ_INT(jfr_decode(z.data, z.len, NULL, NULL, &r, &err), 0);
		buf_release(&z);
	}
	CHECK_EQ_INT(r.chunks, 2);
	CHECK_EQ_INT(r.duration_ns, 13000000000LL);
	jp = find(&r, "cpu");
	CHECK(jp && profile_total(jp->prof) == 8);
	jfr_result_release(&r);
	jfr_labels_free(labels);
	buf_release(&b);
	buf_release(&lb);
}

static void expect_error(const void *data, size_t len, const struct decode_limits *lim, int code,
			 const char *needle)
{
	struct jfr_result r;
	struct errmsg err = { "" };

	CHECK_EQ_INT(jfr_decode(data, len, lim, NULL, &r, &err), code);
	CHECK(strstr(err.msg, needle) != NULL);
	if (!strstr(err.msg, needle))
		fprintf(stderr, "    message: %s\n", err.msg);
	CHECK_EQ_INT(r.nprofiles, 0);
	jfr_result_release(&r);
}

static void test_hostile(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct decode_limits lim;
	size_t i;

	write_chunk(&b, BAD_UNKNOWN_FIELD_CLASS, 1);
	expect_error(b.data, b.len, NULL, -EBADMSG, "unknown class id 1");
	buf_reset(&b);
	write_chunk(&b, BAD_SELF_NEST, 1);
	expect_error(b.data, b.len, NULL, -EBADMSG, "malformed jdk.ExecutionSample event");
	buf_reset(&b);
	write_chunk(&b, BAD_POOL_CLASS, 1);
	expect_error(b.data, b.len, NULL, -EBADMSG, "constant pool of unknown class id 99");
	buf_reset(&b);
	write_chunk(&b, BAD_STACK_REF, 1);
	{
		/* A reference to a stack trace that is not in the pool: the sample has no frames. */
		struct jfr_result r;
		struct errmsg err;

		CHECK_EQ_INT(jfr_decode(b.data, b.len, NULL, NULL, &r, &err), 0);
		CHECK(find(&r, "cpu") && profile_total(find(&r, "cpu")->prof) == 4);
		jfr_result_release(&r);
	}
	buf_reset(&b);
	write_chunk(&b, BAD_DEEP_STACK, 1);
	decode_limits_default(&lim);
	lim.max_depth = 2;
	expect_error(b.data, b.len, &lim, -E2BIG, "jfr: more than 2 frames in one stack trace (limit 'depth')");
	decode_limits_default(&lim);
	lim.max_samples = 2; /* cpu has 2 distinct samples, lock_count 1 more */
	expect_error(b.data, b.len, &lim, -E2BIG, "jfr: more than 2 samples (limit 'samples')");
	decode_limits_default(&lim);
	lim.max_locations = 10;
	expect_error(b.data, b.len, &lim, -E2BIG, "(limit 'locations')");
	decode_limits_default(&lim);
	lim.max_inflated = 100;
	expect_error(b.data, b.len, &lim, -E2BIG, "more than 100 bytes (limit 'inflated')");

	buf_reset(&b);
	write_chunk(&b, BAD_NONE, 1);
	/* Every truncation: an error, never a crash (ASan watches). */
	for (i = 0; i < b.len; i++) {
		struct jfr_result r;
		struct errmsg err;

		CHECK(jfr_decode(b.data, i, NULL, NULL, &r, &err) < 0);
		jfr_result_release(&r);
	}
	/* Header fields. */
	b.data[5] = 3;
	expect_error(b.data, b.len, NULL, -EBADMSG, "unsupported JFR version");
	b.data[5] = 2;
	b.data[67] = 2; /* no compressed integers */
	expect_error(b.data, b.len, NULL, -EBADMSG, "compressed integers");
	b.data[67] = 3;
	memset(b.data + 8, 0, 8);
	expect_error(b.data, b.len, NULL, -EBADMSG, "still being written");
	expect_error("FLX\0", 4, NULL, -EBADMSG, "no FLR magic");
	expect_error("", 0, NULL, -EBADMSG, "no FLR magic");
	buf_release(&b);
}

static void test_labels(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct jfr_labels *l = NULL;
	struct errmsg err = { "" };
	struct decode_limits lim;

	write_labels(&b, 1);
	CHECK_EQ_INT(jfr_labels_decode(b.data, b.len, NULL, &l, &err), -EBADMSG);
	CHECK(strstr(err.msg, "unknown string id 9") != NULL);
	CHECK(l == NULL);
	CHECK_EQ_INT(jfr_labels_decode("\x0a\x05\x08", 3, NULL, &l, &err), -EBADMSG);
	CHECK_EQ_INT(jfr_labels_decode("", 0, NULL, &l, &err), 0); /* empty: no contexts */
	jfr_labels_free(l);
	buf_reset(&b);
	write_labels(&b, 0);
	decode_limits_default(&lim);
	lim.max_strings = 2;
	CHECK_EQ_INT(jfr_labels_decode(b.data, b.len, &lim, &l, &err), -E2BIG);
	CHECK(strstr(err.msg, "(limit 'strings')") != NULL);
	buf_release(&b);
}

int main(void)
{
	RUN(test_decode);
	RUN(test_hostile);
	RUN(test_labels);
	return test_summary();
}
