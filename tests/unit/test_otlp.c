/* test_otlp.c: the OTLP profiles codec: round trips of every model field through the wire
 * format, pprof <-> OTLP agreement, requests built field by field as other producers write them
 * (inlined lines, timestamps, attribute forms, several resources), and hostile input. */
#include "lib/alloc.h"
#include "lib/strtab.h"
#include "profile/gzip.h"
#include "profile/otlp.h"
#include "profile/otlp_json.h"
#include "profile/pprof.h"
#include "profile/protobuf.h"
#include "test.h"

#include <errno.h>
#include <zlib.h>

/* A profile using every field: mappings with and without build id, all four frame kinds,
 * unsymbolized frames, string and numeric labels, an empty stack. */
static struct profile *rich_profile(void)
{
	struct profile *p = profile_new();
	uint32_t m1, m2, fmain, fwork, fk, fpy, fpy2, fidle;
	uint32_t lmain, lwork, lk, lpy, lpy2, lidle, lraw, s[6];
	struct profile_label la[3], lb[2];

	profile_set_type(p, "samples", "count", 52631578);
	profile_set_period_type(p, "cpu", "nanoseconds");
	p->time_nanos = 1700000000123456789LL;
	p->duration_nanos = 10000000000LL;
	m1 = profile_add_mapping(p, 0x400000, 0x500000, 0x1000, "/usr/bin/app", "deadbeef01");
	m2 = profile_add_mapping(p, 0x7f0000000000, 0x7f0000100000, 0, "/lib/libc.so.6", NULL);
	fmain = profile_intern_function(p, FRAME_NATIVE, "main", NULL, "app.c", 10);
	fwork = profile_intern_function(p, FRAME_NATIVE, "work(int)", "_Z4worki", "app.c", 20);
	fk = profile_intern_function(p, FRAME_KERNEL, "do_syscall_64", NULL, NULL, 0);
	fpy = profile_intern_function(p, FRAME_PYTHON, "Foo.run", NULL, "/srv/app/foo.py", 3);
	fpy2 = profile_intern_function(p, FRAME_PYTHON, "<module>", NULL, "<frozen importlib._bootstrap>", 0);
	fidle = profile_intern_function(p, FRAME_SPECIAL, "[idle]", NULL, NULL, 0);
	lmain = profile_intern_location(p, m1, 0x401000, fmain, 12);
	lwork = profile_intern_location(p, m1, 0x402000, fwork, 25);
	lk = profile_intern_location(p, 0, 0xffffffff81000000ULL, fk, 0);
	lpy = profile_intern_location(p, 0, 0, fpy, 7);
	lpy2 = profile_intern_location(p, 0, 0, fpy2, 1);
	lidle = profile_intern_location(p, 0, 0, fidle, 0);
	lraw = profile_intern_location(p, m2, 0x7f0000001234, 0, 0);

	la[0] = (struct profile_label){ profile_str(p, "comm"), profile_str(p, "app"), 0 };
	la[1] = (struct profile_label){ profile_str(p, "pid"), 0, 4242 };
	la[2] = (struct profile_label){ profile_str(p, "script"), profile_str(p, "job.py"), 0 };
	lb[0] = (struct profile_label){ profile_str(p, "comm"), profile_str(p, "python3"), 0 };
	lb[1] = (struct profile_label){ profile_str(p, "pid"), 0, -1 };

	s[0] = lk; s[1] = lraw; s[2] = lwork; s[3] = lmain;
	profile_add_sample(p, s, 4, la, 2, 30);
	profile_add_sample(p, s + 2, 2, la, 2, 20);
	profile_add_sample(p, s + 2, 2, la, 3, 5);
	s[0] = lpy; s[1] = lpy2;
	profile_add_sample(p, s, 2, lb, 2, 7);
	profile_add_sample(p, &lidle, 1, NULL, 0, 1000);
	profile_add_sample(p, NULL, 0, la, 1, 3); /* empty stack */
	return p;
}

static const char *S(const struct profile *p, uint32_t id)
{
	return profile_get_str(p, id);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One line per sample with everything the model says about it, sorted: comparing two
 * profiles' canon() compares them by content, whatever their ids. */
static char *canon(const struct profile *p)
{
	struct buf out = BUF_INIT(BUF_UNLIMITED);
	char **lines = xcalloc(p->nsamples + 1, sizeof(*lines));
	size_t i, j;

	buf_printf(&out, "type %s/%s period %s/%s %lld time %lld dur %lld\n", S(p, p->sample_type),
		   S(p, p->sample_unit), S(p, p->period_type), S(p, p->period_unit),
		   (long long)p->period, (long long)p->time_nanos, (long long)p->duration_nanos);
	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const struct profile_label *l = profile_sample_labels(p, s);
		struct buf b = BUF_INIT(BUF_UNLIMITED);

		buf_printf(&b, "%lld |", (long long)s->value);
		for (j = 0; j < s->nlabels; j++) {
			if (l[j].str)
				buf_printf(&b, " %s=%s", S(p, l[j].key), S(p, l[j].str));
			else
				buf_printf(&b, " %s=#%lld", S(p, l[j].key), (long long)l[j].num);
		}
		buf_puts(&b, " |");
		for (j = 0; j < s->nlocs; j++) {
			const struct profile_location *lo = &p->locations[locs[j] - 1];
			char name[512];

			profile_frame_name(p, locs[j], name, sizeof(name));
			buf_printf(&b, " %s@%llx:%lld", name, (unsigned long long)lo->address,
				   (long long)lo->line);
			if (lo->function) {
				const struct profile_function *f = &p->functions[lo->function - 1];

				buf_printf(&b, "[k%d %s %s %lld]", f->kind, S(p, f->system_name),
					   S(p, f->filename), (long long)f->start_line);
			}
			if (lo->mapping) {
				const struct profile_mapping *m = &p->mappings[lo->mapping - 1];

				buf_printf(&b, "{%s %s %llx-%llx+%llx}", S(p, m->file), S(p, m->build_id),
					   (unsigned long long)m->start, (unsigned long long)m->limit,
					   (unsigned long long)m->offset);
			}
		}
		lines[i] = buf_detach(&b, NULL);
	}
	qsort(lines, p->nsamples, sizeof(*lines), cmp_str);
	for (i = 0; i < p->nsamples; i++) {
		buf_printf(&out, "%s\n", lines[i]);
		xfree(lines[i]);
	}
	xfree(lines);
	return buf_detach(&out, NULL);
}

static void check_same_content(const struct profile *a, const struct profile *b)
{
	char *x = canon(a), *y = canon(b);

	CHECK_EQ_STR(y, x);
	xfree(x);
	xfree(y);
}

static int encode_one(struct profile *p, const struct otlp_attr *attrs, size_t nattrs,
		      struct buf *out)
{
	struct otlp_resource r = { attrs, nattrs, "scorch", "test", &p, 1 };

	return otlp_encode(&r, 1, out);
}

static void test_round_trip(void)
{
	struct profile *p = rich_profile();
	struct otlp_attr attrs[] = {
		{ "service.name", "shop", 0 },
		{ "host.name", "h1", 0 },
		{ "process.pid", NULL, 77 },
	};
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct otlp_request req;
	struct errmsg err = { "" };
	const struct otlp_kv *kv;

	CHECK_EQ_INT(encode_one(p, attrs, 3, &b), 0);
	CHECK_EQ_INT(otlp_decode(b.data, b.len, NULL, &req, &err), 0);
	CHECK_EQ_STR(err.msg, "");
	CHECK_EQ_INT(req.nresources, 1);
	CHECK_EQ_INT(req.nprofiles, 1);
	CHECK_EQ_INT(req.samples, p->nsamples);
	if (req.nprofiles == 1) {
		check_same_content(p, req.profiles[0].prof);
		CHECK_EQ_INT(profile_total(req.profiles[0].prof), profile_total(p));
		CHECK_EQ_STR(req.profiles[0].scope_name, "scorch");
		CHECK_EQ_INT(req.profiles[0].resource, 0);
	}
	if (req.nresources == 1) {
		CHECK_EQ_INT(req.resources[0].nattrs, 3);
		kv = otlp_kv_find(req.resources[0].attrs, req.resources[0].nattrs, "service.name");
		CHECK(kv && kv->kind == OTLP_STR && !strcmp(kv->str, "shop"));
		kv = otlp_kv_find(req.resources[0].attrs, req.resources[0].nattrs, "process.pid");
		CHECK(kv && kv->kind == OTLP_INT && kv->num == 77 && !strcmp(kv->str, "77"));
	}
	otlp_request_release(&req);
	otlp_request_release(&req); /* idempotent */

	/* gzip on the wire decodes the same. */
	{
		struct buf z = BUF_INIT(BUF_UNLIMITED);

		CHECK_EQ_INT(gzip_compress(b.data, b.len, Z_BEST_SPEED, &z), 0);
		CHECK_EQ_INT(otlp_decode(z.data, z.len, NULL, &req, &err), 0);
		if (req.nprofiles == 1)
			check_same_content(p, req.profiles[0].prof);
		otlp_request_release(&req);
		buf_release(&z);
	}
	buf_release(&b);
	profile_free(p);
}

/* Runtime frames travel with the frame type of their language (v8js, jvm, ...; not cpython for
 * all) and come back as runtime frames with their files: two "(anonymous)" of two files stay
 * two frames. */
static void test_runtime_frame_types(void)
{
	static const char *const types[] = { "v8js", "jvm", "ruby", "php", "perl", "cpython" };
	static const struct {
		const char *name, *file;
	} rt[] = {
		{ "(anonymous)", "/app/a.js" }, { "(anonymous)", "/app/b.js" },
		{ "java.util.HashMap.get", "HashMap.java" }, { "Foo#bar", "foo.rb" },
		{ "handle", "index.php" }, { "main::work", "app.pl" }, { "work", "app.py" },
	};
	struct profile *p = profile_new();
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct otlp_request req;
	struct errmsg err = { "" };
	size_t i, n = 0;
	char buf[128];

	for (i = 0; i < sizeof(rt) / sizeof(rt[0]); i++) {
		uint32_t fn = profile_intern_function(p, FRAME_PYTHON, rt[i].name, NULL, rt[i].file, 0);
		uint32_t loc = profile_intern_location(p, 0, 0, fn, 2);

		profile_add_sample(p, &loc, 1, NULL, 0, 1);
	}
	CHECK_EQ_INT(encode_one(p, NULL, 0, &b), 0);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		CHECK(memmem(b.data, b.len, types[i], strlen(types[i])) != NULL);
	CHECK_EQ_INT(otlp_decode(b.data, b.len, NULL, &req, &err), 0);
	if (req.nprofiles == 1) {
		struct profile *q = req.profiles[0].prof;

		for (i = 0; i < q->nsamples; i++) {
			uint32_t loc = profile_sample_locs(q, &q->samples[i])[0];

			CHECK_EQ_INT(q->functions[q->locations[loc - 1].function - 1].kind, FRAME_PYTHON);
			profile_frame_name(q, loc, buf, sizeof(buf));
			n += !strcmp(buf, "(anonymous) (/app/a.js)") || !strcmp(buf, "(anonymous) (/app/b.js)");
		}
	}
	CHECK_EQ_INT(n, 2);
	otlp_request_release(&req);
	buf_release(&b);
	profile_free(p);
}

/* Several resources and profiles share one dictionary: each profile comes back whole, with its
 * own resource, and equal entries are written once. */
static void test_shared_dictionary(void)
{
	struct profile *a = rich_profile(), *b2 = rich_profile(), *c = profile_new();
	struct otlp_attr ra[] = { { "service.name", "a", 0 } }, rb[] = { { "service.name", "b", 0 } };
	struct profile *pa[2] = { a, c }, *pb[1] = { b2 };
	struct otlp_resource res[2] = { { ra, 1, NULL, NULL, pa, 2 }, { rb, 1, NULL, NULL, pb, 1 } };
	struct buf one = BUF_INIT(BUF_UNLIMITED), both = BUF_INIT(BUF_UNLIMITED);
	struct otlp_request req;
	struct errmsg err;
	uint32_t loc;

	/* c: an allocation profile with a frame of its own. */
	profile_set_type(c, "alloc_space", "bytes", 524288);
	loc = profile_intern_location(c, 0, 0, profile_intern_function(c, FRAME_NATIVE, "malloc", NULL, NULL, 0), 0);
	profile_add_sample(c, &loc, 1, NULL, 0, 4096);

	CHECK_EQ_INT(encode_one(a, ra, 1, &one), 0);
	CHECK_EQ_INT(otlp_encode(res, 2, &both), 0);
	/* b2 repeats a: its dictionary entries are shared, so it costs far less than a. */
	CHECK(both.len < 2 * one.len);
	CHECK_EQ_INT(otlp_decode(both.data, both.len, NULL, &req, &err), 0);
	CHECK_EQ_INT(req.nresources, 2);
	CHECK_EQ_INT(req.nprofiles, 3);
	if (req.nprofiles == 3) {
		check_same_content(a, req.profiles[0].prof);
		check_same_content(c, req.profiles[1].prof);
		check_same_content(b2, req.profiles[2].prof);
		CHECK_EQ_INT(req.profiles[0].resource, 0);
		CHECK_EQ_INT(req.profiles[1].resource, 0);
		CHECK_EQ_INT(req.profiles[2].resource, 1);
		CHECK_EQ_STR(req.resources[1].attrs[0].str, "b");
	}
	otlp_request_release(&req);
	buf_release(&one);
	buf_release(&both);
	profile_free(a);
	profile_free(b2);
	profile_free(c);
}

/* pprof and OTLP agree: a profile through pprof then OTLP (and back) keeps its content. */
static void test_pprof_agreement(void)
{
	struct profile *p = rich_profile(), *q = NULL, *r2 = NULL;
	struct buf b = BUF_INIT(BUF_UNLIMITED), c = BUF_INIT(BUF_UNLIMITED);
	struct otlp_request req;
	struct errmsg err;

	CHECK_EQ_INT(pprof_encode(p, &b), 0);
	CHECK_EQ_INT(pprof_decode(b.data, b.len, NULL, -1, &q, &err), 0);
	CHECK_EQ_INT(encode_one(q, NULL, 0, &c), 0);
	CHECK_EQ_INT(otlp_decode(c.data, c.len, NULL, &req, &err), 0);
	if (req.nprofiles == 1) {
		CHECK_EQ_INT(profile_total(req.profiles[0].prof), profile_total(p));
		check_same_content(p, req.profiles[0].prof);
		buf_reset(&b);
		CHECK_EQ_INT(pprof_encode(req.profiles[0].prof, &b), 0);
		CHECK_EQ_INT(pprof_decode(b.data, b.len, NULL, -1, &r2, &err), 0);
		if (r2)
			check_same_content(p, r2);
	}
	otlp_request_release(&req);
	profile_free(p);
	profile_free(q);
	profile_free(r2);
	buf_release(&b);
	buf_release(&c);
}

/* ---- requests written field by field ---- */

struct w {
	struct buf b;
	struct protobuf_writer pw;
};

static void put_str(struct protobuf_writer *w, uint32_t f, const char *s)
{
	protobuf_put_bytes(w, f, s, strlen(s));
}

/* A dictionary: strings "", "cpu", "nanoseconds", "inlined", "outer", "a.out", "service.name",
 * "svc", "thread.name", "worker-1", "profile.frame.type", "jvm"; one mapping; functions
 * inlined (1) and outer (2); location 1 with two lines (inlined into outer), location 2 with
 * no lines on the mapping; stack 1 = [1, 2]; attributes 1 thread.name=worker-1 (strindex form),
 * 2 frame type jvm. */
static void put_dictionary(struct protobuf_writer *w, int bad)
{
	static const char *strs[] = { "", "cpu", "nanoseconds", "inlined", "outer", "a.out",
				      "service.name", "svc", "thread.name", "worker-1",
				      "profile.frame.type", "jvm" };
	size_t m = protobuf_begin(w, 2), n, k, i;

	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		put_str(w, 5, (bad == 1 && i == 0) ? "x" : strs[i]);
	protobuf_put_bytes(w, 1, "", 0); /* mapping 0 */
	n = protobuf_begin(w, 1);       /* mapping 1 */
	protobuf_put_uint64(w, 1, 0x1000);
	protobuf_put_uint64(w, 2, 0x9000);
	protobuf_put_uint64(w, 4, 5);
	protobuf_end(w, n);
	protobuf_put_bytes(w, 3, "", 0); /* function 0 */
	n = protobuf_begin(w, 3);
	protobuf_put_uint64(w, 1, 3);
	protobuf_end(w, n);
	n = protobuf_begin(w, 3);
	protobuf_put_uint64(w, 1, 4);
	protobuf_end(w, n);
	protobuf_put_bytes(w, 6, "", 0); /* attribute 0 */
	n = protobuf_begin(w, 6);
	protobuf_put_uint64(w, 1, 8);
	k = protobuf_begin(w, 2);
	protobuf_put_uint64(w, 8, 9); /* string_value_strindex */
	protobuf_end(w, k);
	protobuf_end(w, n);
	n = protobuf_begin(w, 6);
	protobuf_put_uint64(w, 1, 10);
	k = protobuf_begin(w, 2);
	put_str(w, 1, "jvm");
	protobuf_end(w, k);
	protobuf_end(w, n);
	protobuf_put_bytes(w, 2, "", 0); /* location 0 */
	n = protobuf_begin(w, 2);       /* location 1: inlined into outer */
	protobuf_put_uint64(w, 1, 1);
	protobuf_put_uint64(w, 2, 0x1234);
	k = protobuf_begin(w, 3);
	protobuf_put_uint64(w, 1, 1);
	protobuf_put_uint64(w, 2, 11);
	protobuf_end(w, k);
	k = protobuf_begin(w, 3);
	protobuf_put_uint64(w, 1, bad == 2 ? 9 : 2); /* bad 2: function out of range */
	protobuf_put_uint64(w, 2, 22);
	protobuf_end(w, k);
	protobuf_put_uint64(w, 4, 2); /* unpacked attribute index */
	protobuf_end(w, n);
	n = protobuf_begin(w, 2);     /* location 2: unsymbolized */
	protobuf_put_uint64(w, 1, 1);
	protobuf_put_uint64(w, 2, 0x2345);
	protobuf_end(w, n);
	protobuf_put_bytes(w, 7, "", 0); /* stack 0 */
	n = protobuf_begin(w, 7);
	k = protobuf_begin(w, 1);
	protobuf_put_raw_varint(w, 1);
	protobuf_put_raw_varint(w, 2);
	protobuf_end(w, k);
	protobuf_end(w, n);
	protobuf_end(w, m);
}

/* One resource (service.name=svc) with one cpu/nanoseconds profile of `nsamples` samples of
 * stack 1: values [v, v] packed, or (stamps) 3 timestamps and no values. */
static void put_request(struct buf *b, int nsamples, int64_t v, int stamps, int bad)
{
	struct protobuf_writer w = PROTOBUF_WRITER(b);
	size_t rp, res, kv, any, sp, pr, n, k;
	int i;

	rp = protobuf_begin(&w, 1);
	res = protobuf_begin(&w, 1);
	kv = protobuf_begin(&w, 1);
	put_str(&w, 1, "service.name");
	any = protobuf_begin(&w, 2);
	put_str(&w, 1, "svc");
	protobuf_end(&w, any);
	protobuf_end(&w, kv);
	protobuf_end(&w, res);
	sp = protobuf_begin(&w, 2);
	pr = protobuf_begin(&w, 2);
	n = protobuf_begin(&w, 1);
	protobuf_put_uint64(&w, 1, 1);
	protobuf_put_uint64(&w, 2, 2);
	protobuf_end(&w, n);
	protobuf_put_fixed64(&w, 3, 1700000000000000000ULL);
	protobuf_put_uint64(&w, 4, 10000000000ULL);
	for (i = 0; i < nsamples; i++) {
		n = protobuf_begin(&w, 2);
		protobuf_put_uint64(&w, 1, bad == 3 ? 5 : 1); /* bad 3: stack out of range */
		protobuf_put_uint64(&w, 2, 1);
		if (stamps) {
			protobuf_put_fixed64(&w, 5, 1700000000000000001ULL);
			k = protobuf_begin(&w, 5);
			buf_append(w.b, "\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00", 16);
			protobuf_end(&w, k);
		} else {
			k = protobuf_begin(&w, 4);
			protobuf_put_raw_varint(&w, (uint64_t)v);
			protobuf_put_raw_varint(&w, (uint64_t)v);
			protobuf_end(&w, k);
		}
		protobuf_end(&w, n);
	}
	protobuf_end(&w, pr);
	protobuf_end(&w, sp);
	protobuf_end(&w, rp);
	/* The dictionary after the profiles that use it. */
	put_dictionary(&w, bad);
}

static void test_foreign_request(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct otlp_request req;
	struct errmsg err = { "" };
	struct profile *p;
	char name[128];

	put_request(&b, 2, 5, 0, 0);
	CHECK_EQ_INT(otlp_decode(b.data, b.len, NULL, &req, &err), 0);
	CHECK_EQ_STR(err.msg, "");
	CHECK_EQ_INT(req.nprofiles, 1);
	if (req.nprofiles == 1) {
		const struct profile_sample *s;
		const uint32_t *locs;

		p = req.profiles[0].prof;
		CHECK_EQ_STR(S(p, p->sample_type), "cpu");
		CHECK_EQ_STR(S(p, p->sample_unit), "nanoseconds");
		CHECK_EQ_STR(S(p, p->period_type), "cpu"); /* defaults to the sample type */
		CHECK_EQ_INT(p->time_nanos, 1700000000000000000LL);
		CHECK_EQ_INT(p->nsamples, 1);                /* two equal samples merged */
		CHECK_EQ_INT(profile_total(p), 20);          /* 2 x (5 + 5) */
		s = &p->samples[0];
		locs = profile_sample_locs(p, s);
		/* Location 1's two lines become two frames (inlined first), then location 2. */
		CHECK_EQ_INT(s->nlocs, 3);
		if (s->nlocs == 3) {
			profile_frame_name(p, locs[0], name, sizeof(name));
			CHECK_EQ_STR(name, "inlined");
			profile_frame_name(p, locs[1], name, sizeof(name));
			CHECK_EQ_STR(name, "outer");
			CHECK_EQ_INT(p->locations[locs[1] - 1].line, 22);
			profile_frame_name(p, locs[2], name, sizeof(name));
			CHECK_EQ_STR(name, "a.out+0x1345");
		}
		/* thread.name travels back as comm. */
		CHECK_EQ_STR(profile_sample_label_str(p, s, "comm"), "worker-1");
	}
	otlp_request_release(&req);

	/* A native frame whose address lies below its mapping (a file offset, as OTel's eBPF
	 * profiler sends them) is named by that offset. */
	{
		struct profile *q = profile_new();
		uint32_t m = profile_add_mapping(q, 0x7f0000000000, 0x7f0000100000, 0, "/lib/libz.so.1", NULL);
		uint32_t loc = profile_intern_location(q, m, 0x1f3c, 0, 0);

		profile_frame_name(q, loc, name, sizeof(name));
		CHECK_EQ_STR(name, "libz.so.1+0x1f3c");
		profile_free(q);
	}

	/* Timestamps without values: one event each. */
	buf_reset(&b);
	put_request(&b, 1, 0, 1, 0);
	CHECK_EQ_INT(otlp_decode(b.data, b.len, NULL, &req, &err), 0);
	if (req.nprofiles == 1)
		CHECK_EQ_INT(profile_total(req.profiles[0].prof), 3);
	otlp_request_release(&req);
	buf_release(&b);
}

static void expect_error(const void *data, size_t len, const struct decode_limits *lim, int code,
			 const char *needle)
{
	struct otlp_request req;
	struct errmsg err = { "" };
	int rc = otlp_decode(data, len, lim, &req, &err);

	CHECK_EQ_INT(rc, code);
	CHECK(strstr(err.msg, needle) != NULL);
	if (!strstr(err.msg, needle))
		fprintf(stderr, "    message: %s\n", err.msg);
	CHECK_EQ_INT(req.nprofiles, 0);
	CHECK(req.profiles == NULL);
	otlp_request_release(&req);
}

static void test_hostile(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct decode_limits lim;
	size_t i;

	put_request(&b, 1, 5, 0, 1);
	expect_error(b.data, b.len, NULL, -EBADMSG, "string_table[0]");
	buf_reset(&b);
	put_request(&b, 1, 5, 0, 2);
	expect_error(b.data, b.len, NULL, -EBADMSG, "function index 9 out of range");
	buf_reset(&b);
	put_request(&b, 1, 5, 0, 3);
	expect_error(b.data, b.len, NULL, -EBADMSG, "stack index 5 out of range");
	buf_reset(&b);
	put_request(&b, 1, INT64_MAX, 0, 0);
	expect_error(b.data, b.len, NULL, -ERANGE, "overflow");

	/* Every truncation of a valid request is an error or a smaller valid request, never a
	 * crash (ASan watches). */
	buf_reset(&b);
	put_request(&b, 3, 5, 0, 0);
	for (i = 0; i < b.len; i++) {
		struct otlp_request req;
		struct errmsg err;

		otlp_decode(b.data, i, NULL, &req, &err);
		otlp_request_release(&req);
	}

	/* Caps. */
	decode_limits_default(&lim);
	lim.max_samples = 0;
	expect_error(b.data, b.len, &lim, -E2BIG, "otlp: more than 0 samples (limit 'samples')");
	decode_limits_default(&lim);
	lim.max_strings = 4;
	expect_error(b.data, b.len, &lim, -E2BIG, "more than 4 strings (limit 'strings')");
	decode_limits_default(&lim);
	lim.max_inflated = 100;
	expect_error(b.data, b.len, &lim, -E2BIG, "more than 100 bytes (limit 'inflated')");
	decode_limits_default(&lim);
	lim.max_depth = 1;
	expect_error(b.data, b.len, &lim, -E2BIG, "(limit 'depth')");
	decode_limits_default(&lim);
	lim.max_frames = 2;
	expect_error(b.data, b.len, &lim, -E2BIG, "(limit 'frames')");
	decode_limits_default(&lim);
	lim.max_profiles = 0;
	expect_error(b.data, b.len, &lim, -E2BIG, "(limit 'profiles')");

	/* Wrong wire types and garbage. */
	expect_error("\x0a\x05\x12\x03\x08\x01", 6, NULL, -EBADMSG, "malformed");
	expect_error("\x08\x01", 2, NULL, -EBADMSG, "wire type");
	{
		struct buf z = BUF_INIT(BUF_UNLIMITED);

		/* A gzip bomb stops at max_inflated. */
		char *zeros = xcalloc(1, 1 << 20);

		CHECK_EQ_INT(gzip_compress(zeros, 1 << 20, 9, &z), 0);
		decode_limits_default(&lim);
		lim.max_inflated = 4096;
		expect_error(z.data, z.len, &lim, -E2BIG, "");
		xfree(zeros);
		buf_release(&z);
	}
	buf_release(&b);
}

/* An empty request is valid: nothing in it. */
static void test_empty(void)
{
	struct otlp_request req;
	struct errmsg err;

	CHECK_EQ_INT(otlp_decode("", 0, NULL, &req, &err), 0);
	CHECK_EQ_INT(req.nprofiles, 0);
	CHECK_EQ_INT(req.nresources, 0);
	otlp_request_release(&req);
}

static void test_responses(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);

	CHECK_EQ_INT(otlp_encode_response(0, NULL, 0, &b), 0);
	CHECK_EQ_INT(b.len, 0); /* full success: an empty message */
	CHECK_EQ_INT(otlp_encode_response(2, "two profiles have negative values", 0, &b), 0);
	/* partial_success { rejected_profiles: 2, error_message: "..." } */
	CHECK(b.len > 4 && (uint8_t)b.data[0] == 0x0a && b.data[2] == 0x08 && b.data[3] == 2);
	buf_reset(&b);
	CHECK_EQ_INT(otlp_encode_response(2, "x\"y", 1, &b), 0);
	CHECK_EQ_STR(b.data, "{\"partialSuccess\":{\"rejectedProfiles\":\"2\",\"errorMessage\":\"x\\\"y\"}}");
	buf_reset(&b);
	CHECK_EQ_INT(otlp_encode_status(3, "bad", 1, &b), 0);
	CHECK_EQ_STR(b.data, "{\"code\":3,\"message\":\"bad\"}");
	buf_reset(&b);
	CHECK_EQ_INT(otlp_encode_status(3, "bad", 0, &b), 0);
	CHECK_EQ_INT(b.len, 7);
	CHECK(!memcmp(b.data, "\x08\x03\x12\x03" "bad", 7));
	buf_release(&b);
}


/* OTLP/JSON: camelCase and snake_case names, 64-bit integers as strings, escapes, unknown
 * fields, null; and its errors. */
static void test_json(void)
{
	static const char json[] =
		"{\"resourceProfiles\": [{\"resource\": {\"attributes\": ["
		"  {\"key\": \"service.name\", \"value\": {\"stringValue\": \"caf\\u00e9 \\ud83d\\ude00\"}},"
		"  {\"key\": \"process.pid\", \"value\": {\"intValue\": \"-12\"}},"
		"  {\"key\": \"ratio\", \"value\": {\"doubleValue\": 0.5}},"
		"  {\"key\": \"ok\", \"value\": {\"boolValue\": true}}]},"
		" \"scope_profiles\": [{\"scope\": {\"name\": \"x\", \"future\": [1, {\"a\": null}]},"
		"  \"profiles\": [{\"sampleType\": {\"typeStrindex\": 1, \"unitStrindex\": 2},"
		"    \"timeUnixNano\": \"1700000000000000000\", \"period\": null,"
		"    \"samples\": [{\"stackIndex\": 1, \"values\": [\"40\", 2],"
		"                   \"attribute_indices\": [1]}]}]}]}],"
		" \"dictionary\": {\"stringTable\": [\"\", \"cpu\", \"nanoseconds\", \"f\\\"n\", \"thread.name\", \"w\"],"
		"  \"functionTable\": [{}, {\"nameStrindex\": 3}],"
		"  \"locationTable\": [{}, {\"lines\": [{\"functionIndex\": 1, \"line\": \"9\"}]}],"
		"  \"stackTable\": [{}, {\"locationIndices\": [1, 1]}],"
		"  \"attributeTable\": [{}, {\"keyStrindex\": 4, \"value\": {\"stringValueStrindex\": 5}}],"
		"  \"linkTable\": [{\"traceId\": \"00\", \"spanId\": \"00\"}]}}";
	struct buf pb = BUF_INIT(BUF_UNLIMITED);
	struct otlp_request req;
	struct errmsg err = { "" };
	const struct otlp_kv *kv;

	CHECK_EQ_INT(otlp_json_to_protobuf(json, sizeof(json) - 1, 1 << 20, &pb, &err), 0);
	CHECK_EQ_STR(err.msg, "");
	CHECK_EQ_INT(otlp_decode(pb.data, pb.len, NULL, &req, &err), 0);
	CHECK_EQ_STR(err.msg, "");
	CHECK_EQ_INT(req.nprofiles, 1);
	CHECK_EQ_INT(req.nresources, 1);
	if (req.nresources == 1) {
		const struct otlp_resource_in *r = &req.resources[0];

		kv = otlp_kv_find(r->attrs, r->nattrs, "service.name");
		CHECK(kv && !strcmp(kv->str, "caf\xc3\xa9 \xf0\x9f\x98\x80"));
		kv = otlp_kv_find(r->attrs, r->nattrs, "process.pid");
		CHECK(kv && kv->kind == OTLP_INT && kv->num == -12);
		kv = otlp_kv_find(r->attrs, r->nattrs, "ratio");
		CHECK(kv && kv->kind == OTLP_DOUBLE && !strcmp(kv->str, "0.5"));
		kv = otlp_kv_find(r->attrs, r->nattrs, "ok");
		CHECK(kv && kv->kind == OTLP_BOOL && !strcmp(kv->str, "true"));
	}
	if (req.nprofiles == 1) {
		struct profile *p = req.profiles[0].prof;
		char *c = canon(p);

		CHECK_EQ_STR(req.profiles[0].scope_name, "x");
		CHECK_EQ_STR(c, "type cpu/nanoseconds period cpu/nanoseconds 0 time 1700000000000000000 dur 0\n"
				"42 | comm=w | f\"n@0:9[k0 f\"n  0] f\"n@0:9[k0 f\"n  0]\n");
		xfree(c);
	}
	otlp_request_release(&req);

	buf_reset(&pb);
	CHECK_EQ_INT(otlp_json_to_protobuf("{\"dictionary\": {\"stringTable\": [\"\\ud800\"]}}", 40,
					   1 << 20, &pb, &err), -EBADMSG);
	CHECK(strstr(err.msg, "surrogate") != NULL);
	CHECK_EQ_INT(otlp_json_to_protobuf("{\"resourceProfiles\": {}}", 24, 1 << 20, &pb, &err), -EBADMSG);
	CHECK(strstr(err.msg, "expected an array") != NULL);
	CHECK_EQ_INT(otlp_json_to_protobuf("{} x", 4, 1 << 20, &pb, &err), -EBADMSG);
	CHECK(strstr(err.msg, "trailing data at offset 3") != NULL);
	CHECK_EQ_INT(otlp_json_to_protobuf("{\"dictionary\":{\"stackTable\":[{\"locationIndices\":[1.5]}]}}",
					   56, 1 << 20, &pb, &err), -EBADMSG);
	CHECK(strstr(err.msg, "expected an integer") != NULL);
	CHECK_EQ_INT(otlp_json_to_protobuf(json, sizeof(json) - 1, 10, &pb, &err), -EBADMSG);
	CHECK(strstr(err.msg, "too large") != NULL);
	buf_release(&pb);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_runtime_frame_types);
	RUN(test_shared_dictionary);
	RUN(test_pprof_agreement);
	RUN(test_foreign_request);
	RUN(test_hostile);
	RUN(test_empty);
	RUN(test_responses);
	RUN(test_json);
	return test_summary();
}
