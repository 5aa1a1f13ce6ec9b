/* test_pprof.c: the protobuf codec and pprof encode/decode: exact round trips, foreign
 * conventions (inlining, packed and unpacked fields, several sample values, kind inference),
 * hostile input, and a profile read by Go's own pprof tool. */
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/strtab.h"
#include "profile/gzip.h"
#include "profile/pprof.h"
#include "profile/protobuf.h"
#include "test.h"

#include <errno.h>
#include <unistd.h>
#include <zlib.h>

#define MAXU (64u << 20)

/* No caps but the inflated size (limits have tests of their own). */
static const struct decode_limits *lim(size_t max_inflated)
{
	static struct decode_limits l;

	decode_limits_none(&l);
	l.max_inflated = max_inflated;
	return &l;
}

/* A profile using every field: two real mappings, all four frame kinds, unsymbolized frames,
 * string and numeric labels, merged samples. */
static struct profile *rich_profile(void)
{
	struct profile *p = profile_new();
	uint32_t m1, m2, fmain, fwork, fk, fpy, fpy2, fidle;
	uint32_t lmain, lwork, lk, lpy, lpy2, lidle, lraw, s[6];
	struct profile_label la[2], lb[2];

	profile_set_type(p, "cpu", "nanoseconds", 10101010);
	p->time_nanos = 1700000000123456789LL;
	p->duration_nanos = 5000000000LL;
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
	lb[0] = (struct profile_label){ profile_str(p, "comm"), profile_str(p, "python3"), 0 };
	lb[1] = (struct profile_label){ profile_str(p, "pid"), 0, -1 };

	s[0] = lk; s[1] = lraw; s[2] = lwork; s[3] = lmain;
	profile_add_sample(p, s, 4, la, 2, 30000000);
	profile_add_sample(p, s + 2, 2, la, 2, 20000000);
	profile_add_sample(p, s + 2, 2, la, 2, 5);   /* merges with the previous */
	s[0] = lpy; s[1] = lpy2;
	profile_add_sample(p, s, 2, lb, 2, 7);
	profile_add_sample(p, &lidle, 1, NULL, 0, 1000);
	profile_add_sample(p, NULL, 0, la, 1, 3);     /* empty stack */
	return p;
}

static const char *S(const struct profile *p, uint32_t id)
{
	return profile_get_str(p, id);
}

/* Everything the model holds, compared by content; ids must match too. */
static void check_same(const struct profile *a, const struct profile *b)
{
	size_t i, j;

	CHECK_EQ_STR(S(a, a->sample_type), S(b, b->sample_type));
	CHECK_EQ_STR(S(a, a->sample_unit), S(b, b->sample_unit));
	CHECK_EQ_STR(S(a, a->period_type), S(b, b->period_type));
	CHECK_EQ_STR(S(a, a->period_unit), S(b, b->period_unit));
	CHECK_EQ_INT(a->period, b->period);
	CHECK_EQ_INT(a->time_nanos, b->time_nanos);
	CHECK_EQ_INT(a->duration_nanos, b->duration_nanos);
	CHECK_EQ_INT(a->nmappings, b->nmappings);
	for (i = 0; i < a->nmappings && i < b->nmappings; i++) {
		const struct profile_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		CHECK_EQ_INT(x->start, y->start);
		CHECK_EQ_INT(x->limit, y->limit);
		CHECK_EQ_INT(x->offset, y->offset);
		CHECK_EQ_STR(S(a, x->file), S(b, y->file));
		CHECK_EQ_STR(S(a, x->build_id), S(b, y->build_id));
		CHECK_EQ_INT(!x->build_id, !y->build_id);
	}
	CHECK_EQ_INT(a->nfunctions, b->nfunctions);
	for (i = 0; i < a->nfunctions && i < b->nfunctions; i++) {
		const struct profile_function *x = &a->functions[i], *y = &b->functions[i];

		CHECK_EQ_STR(S(a, x->name), S(b, y->name));
		CHECK_EQ_STR(S(a, x->system_name), S(b, y->system_name));
		CHECK_EQ_STR(S(a, x->filename), S(b, y->filename));
		CHECK_EQ_INT(x->start_line, y->start_line);
		CHECK_EQ_INT(x->kind, y->kind);
	}
	CHECK_EQ_INT(a->nlocations, b->nlocations);
	for (i = 0; i < a->nlocations && i < b->nlocations; i++) {
		const struct profile_location *x = &a->locations[i], *y = &b->locations[i];

		CHECK_EQ_INT(x->address, y->address);
		CHECK_EQ_INT(x->mapping, y->mapping);
		CHECK_EQ_INT(x->function, y->function);
		CHECK_EQ_INT(x->line, y->line);
	}
	CHECK_EQ_INT(a->nsamples, b->nsamples);
	for (i = 0; i < a->nsamples && i < b->nsamples; i++) {
		const struct profile_sample *x = &a->samples[i], *y = &b->samples[i];
		const struct profile_label *lx = profile_sample_labels(a, x), *ly = profile_sample_labels(b, y);

		CHECK_EQ_INT(x->value, y->value);
		CHECK_EQ_INT(x->nlocs, y->nlocs);
		CHECK_EQ_INT(x->nlabels, y->nlabels);
		if (x->nlocs == y->nlocs)
			CHECK(!memcmp(profile_sample_locs(a, x), profile_sample_locs(b, y),
				      x->nlocs * sizeof(uint32_t)));
		for (j = 0; j < x->nlabels && j < y->nlabels; j++) {
			CHECK_EQ_STR(S(a, lx[j].key), S(b, ly[j].key));
			CHECK_EQ_STR(S(a, lx[j].str), S(b, ly[j].str));
			CHECK_EQ_INT(!lx[j].str, !ly[j].str);
			CHECK_EQ_INT(lx[j].num, ly[j].num);
		}
	}
}

static void test_varint(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct protobuf_writer w = PROTOBUF_WRITER(&b);
	static const uint64_t vals[] = { 0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, INT64_MAX, UINT64_MAX };
	struct protobuf_reader r;
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		size_t before = b.len;

		protobuf_put_raw_varint(&w, vals[i]);
		CHECK_EQ_INT(b.len - before, protobuf_varint_size(vals[i]));
	}
	CHECK_EQ_INT(w.err, 0);
	r = (struct protobuf_reader)PROTOBUF_READER(b.data, b.len);
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		CHECK_EQ_INT(protobuf_read_varint(&r, &v), 0);
		CHECK(v == vals[i]);
	}
	CHECK(r.p == r.end);
	{
		/* 11 bytes, a 10th byte above 1, and a cut varint are all malformed. */
		static const uint8_t over[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
		static const uint8_t big10[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
		static const uint8_t cut[] = { 0x80, 0x80 };
		struct protobuf_reader r1 = PROTOBUF_READER(over, sizeof(over));
		struct protobuf_reader r2 = PROTOBUF_READER(big10, sizeof(big10));
		struct protobuf_reader r3 = PROTOBUF_READER(cut, sizeof(cut));

		CHECK_EQ_INT(protobuf_read_varint(&r1, &v), -EBADMSG);
		CHECK_EQ_INT(protobuf_read_varint(&r2, &v), -EBADMSG);
		CHECK_EQ_INT(protobuf_read_varint(&r3, &v), -EBADMSG);
	}
	buf_release(&b);
}

static void test_nested_lengths(void)
{
	/* A nested message longer than 127 bytes needs its body moved for a 2-byte length. */
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct protobuf_writer w = PROTOBUF_WRITER(&b);
	struct protobuf_reader r, inner;
	struct protobuf_field f;
	char big[300];
	size_t m, m2;

	memset(big, 'x', sizeof(big));
	m = protobuf_begin(&w, 7);
	protobuf_put_uint64(&w, 1, 5);
	m2 = protobuf_begin(&w, 2);
	protobuf_put_bytes(&w, 3, big, sizeof(big));
	protobuf_end(&w, m2);
	protobuf_end(&w, m);
	protobuf_put_uint64(&w, 9, 42);
	CHECK_EQ_INT(w.err, 0);
	r = (struct protobuf_reader)PROTOBUF_READER(b.data, b.len);
	CHECK_EQ_INT(protobuf_next(&r, &f), 1);
	CHECK_EQ_INT(f.num, 7);
	CHECK_EQ_INT(f.wire, PROTOBUF_LEN);
	inner = (struct protobuf_reader)PROTOBUF_READER(f.data, f.len);
	CHECK_EQ_INT(protobuf_next(&inner, &f), 1);
	CHECK(f.num == 1 && f.u == 5);
	CHECK_EQ_INT(protobuf_next(&inner, &f), 1);
	CHECK(f.num == 2 && f.len == sizeof(big) + 3);
	CHECK_EQ_INT(protobuf_next(&inner, &f), 0);
	CHECK_EQ_INT(protobuf_next(&r, &f), 1);
	CHECK(f.num == 9 && f.u == 42);
	CHECK_EQ_INT(protobuf_next(&r, &f), 0);

	/* The writer's maximum sticks as an error. */
	{
		struct buf small = BUF_INIT(8);
		struct protobuf_writer ws = PROTOBUF_WRITER(&small);

		protobuf_put_bytes(&ws, 1, big, sizeof(big));
		protobuf_put_uint64(&ws, 2, 1);
		CHECK_EQ_INT(ws.err, -E2BIG);
		buf_release(&small);
	}
	buf_release(&b);
}

static void test_roundtrip(void)
{
	struct profile *p = rich_profile(), *q = NULL, *q2 = NULL;
	struct buf gz = BUF_INIT(BUF_UNLIMITED), raw = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err = { "" };

	CHECK_EQ_INT(p->nsamples, 5);
	CHECK_EQ_INT(pprof_encode(p, &gz), 0);
	CHECK(gz.len > 20 && (uint8_t)gz.data[0] == 0x1f && (uint8_t)gz.data[1] == 0x8b);
	CHECK_EQ_INT(pprof_decode(gz.data, gz.len, lim(MAXU), -1, &q, &err), 0);
	CHECK(q != NULL);
	if (q)
		check_same(p, q);
	CHECK_EQ_INT(pprof_encode_raw(p, &raw), 0);
	CHECK(raw.len > gz.len / 2);
	CHECK_EQ_INT(pprof_decode(raw.data, raw.len, lim(MAXU), -1, &q2, &err), 0);
	if (q2) {
		check_same(p, q2);
		CHECK_EQ_STR(profile_sample_label_str(q2, &q2->samples[0], "comm"), "app");
		CHECK_EQ_INT(profile_total(q2), profile_total(p));
	}
	/* A second trip changes nothing either. */
	if (q) {
		struct buf again = BUF_INIT(BUF_UNLIMITED);
		struct profile *q3 = NULL;

		CHECK_EQ_INT(pprof_encode_raw(q, &again), 0);
		CHECK_EQ_INT(pprof_decode(again.data, again.len, lim(MAXU), -1, &q3, &err), 0);
		if (q3)
			check_same(p, q3);
		profile_free(q3);
		buf_release(&again);
	}
	profile_free(p);
	profile_free(q);
	profile_free(q2);
	buf_release(&gz);
	buf_release(&raw);
}

static const struct profile_function *fn_of(const struct profile *p, uint32_t loc);

/* The file names of a raw pprof's mappings, in the order of their messages (field 3, name in
 * field 5), into names[] (at most max); returns how many. */
static size_t mapping_files(const struct buf *raw, const char **names, size_t max)
{
	struct protobuf_reader r = PROTOBUF_READER((const uint8_t *)raw->data, raw->len), mr;
	struct protobuf_field f, mf;
	uint64_t idx[16];
	const char *strs[64];
	size_t n = 0, ns = 0, i;
	static char copies[64][64];

	while (protobuf_next(&r, &f) > 0) {
		if (f.num == 3 && n < 16) {
			mr = (struct protobuf_reader)PROTOBUF_READER(f.data, f.len);
			idx[n] = 0;
			while (protobuf_next(&mr, &mf) > 0)
				if (mf.num == 5)
					idx[n] = mf.u;
			n++;
		} else if (f.num == 6 && ns < 64) {
			snprintf(copies[ns], sizeof(copies[ns]), "%.*s", (int)f.len, (const char *)f.data);
			strs[ns] = copies[ns];
			ns++;
		}
	}
	for (i = 0; i < n && i < max; i++)
		names[i] = idx[i] < ns ? strs[idx[i]] : "";
	return n < max ? n : max;
}

/* Runtime frames get a marker mapping named after the language of their file, never
 * "[python]" for another runtime's; they come back as runtime frames with their files. The
 * executable's mapping is put first (tools take it for the main file) and comes back first. */
static void test_markers_and_main(void)
{
	static const struct {
		const char *name, *file, *marker;
	} rt[] = {
		{ "(anonymous)", "/app/a.js", "[javascript]" },
		{ "(anonymous)", "/app/b.js", "[javascript]" },
		{ "java.util.HashMap.get", "HashMap.java", "[java]" },
		{ "Foo#bar", "foo.rb", "[ruby]" },
		{ "handle", "index.php", "[php]" },
		{ "main::work", "app.pl", "[perl]" },
		{ "work", "app.py", "[python]" },
		{ "stub", NULL, "[runtime]" },
	};
	struct profile *p = profile_new(), *q = NULL;
	struct buf raw = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err = { "" };
	const char *names[16];
	uint32_t libm, exe, locs[2];
	size_t n, i, j;
	char buf[128];

	libm = profile_add_mapping(p, 0x7f0000, 0x7f1000, 0, "/lib/libm.so.6", NULL);
	exe = profile_add_mapping(p, 0x400000, 0x401000, 0, "/usr/bin/app", NULL);
	p->mappings[exe - 1].main_exe = 1;
	locs[1] = profile_intern_location(p, libm, 0x7f0010, 0, 0);
	locs[0] = profile_intern_location(p, exe, 0x400010, 0, 0);
	profile_add_sample(p, locs, 2, NULL, 0, 1);
	for (i = 0; i < sizeof(rt) / sizeof(rt[0]); i++) {
		uint32_t fn = profile_intern_function(p, FRAME_PYTHON, rt[i].name, NULL, rt[i].file, 0);

		locs[0] = profile_intern_location(p, 0, 0, fn, 3);
		profile_add_sample(p, locs, 1, NULL, 0, 1);
	}
	profile_mappings_main_first(p);
	CHECK_EQ_STR(profile_get_str(p, p->mappings[0].file), "/usr/bin/app");
	CHECK_EQ_INT(profile_frame_name(p, profile_sample_locs(p, &p->samples[0])[0], buf,
					sizeof(buf)), 8);
	CHECK_EQ_STR(buf, "app+0x10"); /* the location follows its mapping */
	CHECK_EQ_INT(pprof_encode_raw(p, &raw), 0);
	n = mapping_files(&raw, names, 16);
	CHECK(n >= 2);
	if (n >= 2) {
		CHECK_EQ_STR(names[0], "/usr/bin/app");
		CHECK_EQ_STR(names[1], "/lib/libm.so.6");
	}
	for (i = 0; i < sizeof(rt) / sizeof(rt[0]); i++) {
		int found = 0;

		for (j = 0; j < n; j++)
			found |= !strcmp(names[j], rt[i].marker);
		CHECK(found);
	}
	CHECK_EQ_INT(n, 2 + 7); /* one marker per language, two for JavaScript's two files */
	CHECK_EQ_INT(pprof_decode(raw.data, raw.len, lim(MAXU), -1, &q, &err), 0);
	if (q) {
		CHECK_EQ_INT(q->nmappings, 2);
		CHECK_EQ_STR(profile_get_str(q, q->mappings[0].file), "/usr/bin/app");
		CHECK_EQ_INT(q->mappings[0].main_exe, 1);
		for (i = 0; i < q->nsamples; i++) {
			const uint32_t *l = profile_sample_locs(q, &q->samples[i]);
			const struct profile_function *f = fn_of(q, l[0]);

			if (f && f->filename)
				CHECK_EQ_INT(f->kind, FRAME_PYTHON);
		}
		/* the two anonymous functions stay two frames, each with its file */
		for (i = 0, j = 0; i < q->nsamples; i++) {
			profile_frame_name(q, profile_sample_locs(q, &q->samples[i])[0], buf, sizeof(buf));
			j += !strcmp(buf, "(anonymous) (/app/a.js)") || !strcmp(buf, "(anonymous) (/app/b.js)");
		}
		CHECK_EQ_INT(j, 2);
	}
	profile_free(p);
	profile_free(q);
	buf_release(&raw);
}

/* Inlined frames: a run of locations (inlined ones, then their caller at the same address)
 * becomes one pprof Location with a Line per frame, and comes back as the same run. */
static void test_inlined(void)
{
	struct profile *p = profile_new(), *q = NULL;
	struct buf raw = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err = { "" };
	uint32_t m = profile_add_mapping(p, 0x1000, 0x9000, 0, "/bin/app", NULL);
	uint32_t fin = profile_intern_function(p, FRAME_NATIVE, "inner", NULL, "a.h", 0);
	uint32_t fmid = profile_intern_function(p, FRAME_NATIVE, "middle", NULL, "a.h", 0);
	uint32_t fout = profile_intern_function(p, FRAME_NATIVE, "outer", NULL, "a.c", 0);
	uint32_t fmain = profile_intern_function(p, FRAME_NATIVE, "main", NULL, "a.c", 0);
	uint32_t s[4], t[2];
	const uint32_t *locs;
	size_t nloc_msgs = 0;

	s[0] = profile_intern_location_inl(p, m, 0x1234, fin, 11, 1);
	s[1] = profile_intern_location_inl(p, m, 0x1234, fmid, 22, 1);
	s[2] = profile_intern_location(p, m, 0x1234, fout, 33);
	s[3] = profile_intern_location(p, m, 0x1500, fmain, 44);
	profile_add_sample(p, s, 4, NULL, 0, 5);
	/* the caller alone, at another sample */
	t[0] = s[2];
	t[1] = s[3];
	profile_add_sample(p, t, 2, NULL, 0, 2);
	CHECK_EQ_INT(pprof_encode_raw(p, &raw), 0);
	/* Count the Location messages: outer, main and the run (inner and middle are only ever
	 * written inside the run). */
	{
		struct protobuf_reader r = PROTOBUF_READER(raw.data, raw.len);
		struct protobuf_field f;

		while (protobuf_next(&r, &f) > 0)
			nloc_msgs += f.num == 4; /* Profile.location */
	}
	CHECK_EQ_INT(nloc_msgs, 3);
	CHECK_EQ_INT(pprof_decode(raw.data, raw.len, lim(MAXU), -1, &q, &err), 0);
	if (q) {
		CHECK_EQ_INT(q->nsamples, 2);
		locs = profile_sample_locs(q, &q->samples[0]);
		CHECK_EQ_INT(q->samples[0].nlocs, 4);
		CHECK_EQ_STR(S(q, fn_of(q, locs[0])->name), "inner");
		CHECK_EQ_INT(q->locations[locs[0] - 1].inlined, 1);
		CHECK_EQ_INT(q->locations[locs[0] - 1].line, 11);
		CHECK_EQ_STR(S(q, fn_of(q, locs[1])->name), "middle");
		CHECK_EQ_INT(q->locations[locs[1] - 1].inlined, 1);
		CHECK_EQ_STR(S(q, fn_of(q, locs[2])->name), "outer");
		CHECK_EQ_INT(q->locations[locs[2] - 1].inlined, 0);
		CHECK_EQ_INT(q->locations[locs[2] - 1].line, 33);
		CHECK(q->locations[locs[0] - 1].address == 0x1234 &&
		      q->locations[locs[2] - 1].address == 0x1234);
		CHECK_EQ_STR(S(q, fn_of(q, locs[3])->name), "main");
		locs = profile_sample_locs(q, &q->samples[1]);
		CHECK_EQ_INT(q->samples[1].nlocs, 2);
		CHECK_EQ_STR(S(q, fn_of(q, locs[0])->name), "outer");
	}
	profile_free(p);
	profile_free(q);
	buf_release(&raw);
}

static void test_encode_limit(void)
{
	struct profile *p = rich_profile();
	struct buf small = BUF_INIT(40);

	CHECK_EQ_INT(pprof_encode_raw(p, &small), -E2BIG);
	CHECK_EQ_INT(small.len, 0);
	CHECK_EQ_INT(pprof_encode(p, &small), -E2BIG);
	CHECK_EQ_INT(small.len, 0);
	buf_release(&small);
	profile_free(p);
}

/* A hand-written foreign profile: ids not in order, unpacked repeated fields, two sample values,
 * an inlined location, kinds to infer, string table in the middle. */
static void foreign_profile(struct buf *b, int packed, int with_default)
{
	struct protobuf_writer w = PROTOBUF_WRITER(b);
	/* strings: 0 "", 1 samples, 2 count, 3 cpu, 4 nanoseconds, 5 inner, 6 outer, 7 a.go,
	 * 8 [kernel.kallsyms], 9 schedule, 10 handler, 11 /srv/x.py, 12 [idle], 13 comm, 14 go */
	static const char *strs[] = { "", "samples", "count", "cpu", "nanoseconds", "inner", "outer",
				      "a.go", "[kernel.kallsyms]", "schedule", "handler", "/srv/x.py",
				      "[idle]", "comm", "go" };
	size_t m, n, i;

	for (i = 0; i < 2; i++) {
		m = protobuf_begin(&w, 1);
		protobuf_put_uint64(&w, 1, i ? 3 : 1);
		protobuf_put_uint64(&w, 2, i ? 4 : 2);
		protobuf_end(&w, m);
	}
	/* sample 1: leaf location 30 (inlined inner<-outer) <- 10 (kernel) ... as stack [20, 30] */
	m = protobuf_begin(&w, 2);
	if (packed) {
		n = protobuf_begin(&w, 1);
		protobuf_put_raw_varint(&w, 20);
		protobuf_put_raw_varint(&w, 30);
		protobuf_end(&w, n);
		n = protobuf_begin(&w, 2);
		protobuf_put_raw_varint(&w, 4);
		protobuf_put_raw_varint(&w, 40000000);
		protobuf_end(&w, n);
	} else {
		protobuf_put_uint64(&w, 1, 20);
		protobuf_put_uint64(&w, 1, 30);
		protobuf_put_uint64(&w, 2, 4);
		protobuf_put_uint64(&w, 2, 40000000);
	}
	n = protobuf_begin(&w, 3);
	protobuf_put_uint64(&w, 1, 13);
	protobuf_put_uint64(&w, 2, 14);
	protobuf_end(&w, n);
	protobuf_end(&w, m);
	/* sample 2: python then idle */
	m = protobuf_begin(&w, 2);
	protobuf_put_uint64(&w, 1, 40);
	protobuf_put_uint64(&w, 1, 50);
	protobuf_put_uint64(&w, 2, 1);
	protobuf_put_uint64(&w, 2, 10000000);
	protobuf_end(&w, m);
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		protobuf_put_bytes(&w, 6, strs[i], strlen(strs[i]));
	/* mapping 7: kernel, with a real range (kept as a mapping) */
	m = protobuf_begin(&w, 3);
	protobuf_put_uint64(&w, 1, 7);
	protobuf_put_uint64(&w, 2, 0xffffffff81000000ULL);
	protobuf_put_uint64(&w, 3, 0xffffffff82000000ULL);
	protobuf_put_uint64(&w, 5, 8);
	protobuf_end(&w, m);
	/* functions 100 inner, 101 outer, 102 schedule, 103 handler (x.py), 104 [idle] */
	for (i = 0; i < 5; i++) {
		static const uint64_t names[] = { 5, 6, 9, 10, 12 };

		m = protobuf_begin(&w, 5);
		protobuf_put_uint64(&w, 1, 100 + i);
		protobuf_put_uint64(&w, 2, names[i]);
		protobuf_put_uint64(&w, 3, names[i]);
		if (i < 2)
			protobuf_put_uint64(&w, 4, 7);
		if (i == 3)
			protobuf_put_uint64(&w, 4, 11);
		protobuf_end(&w, m);
	}
	/* location 20: inner inlined into outer; 30: kernel schedule; 40: python; 50: idle */
	m = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 20);
	protobuf_put_uint64(&w, 3, 0x1234);
	n = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 100);
	protobuf_put_uint64(&w, 2, 11);
	protobuf_end(&w, n);
	n = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 101);
	protobuf_put_uint64(&w, 2, 22);
	protobuf_end(&w, n);
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 30);
	protobuf_put_uint64(&w, 2, 7);
	protobuf_put_uint64(&w, 3, 0xffffffff81000100ULL);
	n = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 102);
	protobuf_end(&w, n);
	protobuf_end(&w, m);
	for (i = 0; i < 2; i++) {
		m = protobuf_begin(&w, 4);
		protobuf_put_uint64(&w, 1, 40 + 10 * i);
		n = protobuf_begin(&w, 4);
		protobuf_put_uint64(&w, 1, 103 + i);
		protobuf_put_uint64(&w, 2, i ? 0 : 9);
		protobuf_end(&w, n);
		protobuf_end(&w, m);
	}
	protobuf_put_uint64(&w, 12, 10000000);
	m = protobuf_begin(&w, 11);
	protobuf_put_uint64(&w, 1, 3);
	protobuf_put_uint64(&w, 2, 4);
	protobuf_end(&w, m);
	if (with_default)
		protobuf_put_uint64(&w, 14, 3);
	CHECK_EQ_INT(w.err, 0);
}

static const struct profile_function *fn_of(const struct profile *p, uint32_t loc)
{
	const struct profile_location *l = &p->locations[loc - 1];

	return l->function ? &p->functions[l->function - 1] : NULL;
}

static void test_foreign(void)
{
	int packed;

	for (packed = 0; packed < 2; packed++) {
		struct buf b = BUF_INIT(BUF_UNLIMITED);
		struct profile *p = NULL;
		struct errmsg err = { "" };
		const uint32_t *locs;
		char name[256];

		foreign_profile(&b, packed, 0);
		CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), -1, &p, &err), 0);
		if (!p) {
			fprintf(stderr, "  %s\n", err.msg);
			continue;
		}
		/* No default type: the count is preferred over the time. */
		CHECK_EQ_STR(S(p, p->sample_type), "samples");
		CHECK_EQ_STR(S(p, p->sample_unit), "count");
		CHECK_EQ_STR(S(p, p->period_type), "cpu");
		CHECK_EQ_INT(p->period, 10000000);
		CHECK_EQ_INT(p->nsamples, 2);
		CHECK_EQ_INT(p->samples[0].value, 4);
		CHECK_EQ_INT(p->samples[1].value, 1);
		/* Inlined location 20 became two, leaf first, then kernel 30. */
		CHECK_EQ_INT(p->samples[0].nlocs, 3);
		locs = profile_sample_locs(p, &p->samples[0]);
		CHECK_EQ_STR(S(p, fn_of(p, locs[0])->name), "inner");
		CHECK_EQ_INT(p->locations[locs[0] - 1].line, 11);
		CHECK_EQ_STR(S(p, fn_of(p, locs[1])->name), "outer");
		CHECK_EQ_INT(p->locations[locs[1] - 1].line, 22);
		CHECK(p->locations[locs[0] - 1].address == 0x1234 && p->locations[locs[1] - 1].address == 0x1234);
		CHECK_EQ_INT(fn_of(p, locs[0])->kind, FRAME_NATIVE);
		CHECK_EQ_INT(fn_of(p, locs[2])->kind, FRAME_KERNEL);
		profile_frame_name(p, locs[2], name, sizeof(name));
		CHECK_EQ_STR(name, "schedule_[k]");
		/* The kernel mapping has a real range, so it stays. */
		CHECK_EQ_INT(p->nmappings, 1);
		CHECK_EQ_INT(p->locations[locs[2] - 1].mapping, 1);
		CHECK_EQ_STR(profile_sample_label_str(p, &p->samples[0], "comm"), "go");
		locs = profile_sample_locs(p, &p->samples[1]);
		CHECK_EQ_INT(fn_of(p, locs[0])->kind, FRAME_PYTHON);
		profile_frame_name(p, locs[0], name, sizeof(name));
		CHECK_EQ_STR(name, "handler (/srv/x.py)");
		profile_frame_name_flags(p, locs[0], PROFILE_NAME_LINES, name, sizeof(name));
		CHECK_EQ_STR(name, "handler (/srv/x.py:9)");
		CHECK_EQ_INT(fn_of(p, locs[1])->kind, FRAME_SPECIAL);
		profile_free(p);

		/* An explicit index, and the profile's default type, win over "samples". */
		CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), 1, &p, &err), 0);
		if (p) {
			CHECK_EQ_STR(S(p, p->sample_type), "cpu");
			CHECK_EQ_STR(S(p, p->sample_unit), "nanoseconds");
			CHECK_EQ_INT(p->samples[0].value, 40000000);
			CHECK_EQ_INT(profile_total(p), 50000000);
			profile_free(p);
		}
		CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), 2, &p, &err), -EINVAL);
		CHECK(p == NULL && strstr(err.msg, "sample index 2"));
		buf_reset(&b);
		foreign_profile(&b, packed, 1);
		CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), -1, &p, &err), 0);
		if (p) {
			CHECK_EQ_STR(S(p, p->sample_type), "cpu");
			profile_free(p);
		}
		buf_release(&b);
	}
}

/* Decoding must fail with a message naming the problem. */
static void expect_reject(const void *data, size_t len, size_t max, const char *needle, int code)
{
	struct profile *p = (struct profile *)1;
	struct errmsg err = { "" };
	int rc = pprof_decode(data, len, lim(max), -1, &p, &err);

	CHECK(rc < 0);
	if (code)
		CHECK_EQ_INT(rc, code);
	CHECK(p == NULL);
	CHECK(err.msg[0] != '\0');
	if (needle && !strstr(err.msg, needle)) {
		fprintf(stderr, "  message '%s' lacks '%s'\n", err.msg, needle);
		CHECK(0);
	}
}

static void test_malformed(void)
{
	struct profile *p = rich_profile();
	struct buf gz = BUF_INIT(BUF_UNLIMITED), raw = BUF_INIT(BUF_UNLIMITED), b = BUF_INIT(BUF_UNLIMITED);
	struct protobuf_writer w = PROTOBUF_WRITER(&b);
	size_t m, cut;

	CHECK_EQ_INT(pprof_encode(p, &gz), 0);
	CHECK_EQ_INT(pprof_encode_raw(p, &raw), 0);
	expect_reject("", 0, MAXU, "empty", 0);
	expect_reject("\x1f\x8b\x08\x00garbage", 11, MAXU, "gzip", -EBADMSG);
	expect_reject(gz.data, gz.len - 9, MAXU, "truncated", -EBADMSG);
	expect_reject(gz.data, gz.len, 100, "limit 'inflated'", -E2BIG);
	expect_reject(raw.data, raw.len, 100, "more than 100", -E2BIG);
	/* Every truncation of the raw encoding is either rejected or decodes; never a crash. */
	for (cut = 1; cut < raw.len; cut++) {
		struct profile *q = NULL;
		struct errmsg err;

		if (pprof_decode(raw.data, cut, lim(MAXU), -1, &q, &err) == 0)
			profile_free(q);
	}
	expect_reject("\x0a\x05\x08", 3, MAXU, "malformed", -EBADMSG);  /* length past the end */
	expect_reject("\x03\x00", 2, MAXU, "malformed", -EBADMSG);      /* group wire type */
	expect_reject("\x12\x02\x08\x07", 4, MAXU, "unknown location id 7", -EBADMSG);
	expect_reject("\x32\x01x", 3, MAXU, "entry 0", -EBADMSG);       /* string 0 not empty */
	expect_reject("\x0a\x02\x08\x05", 4, MAXU, "string index 5", -EBADMSG);
	expect_reject("\x08\x01", 2, MAXU, "wire type", -EBADMSG);      /* sample_type as varint */

	/* duplicate and zero ids */
	m = protobuf_begin(&w, 5);
	protobuf_put_uint64(&w, 1, 3);
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 5);
	protobuf_put_uint64(&w, 1, 3);
	protobuf_end(&w, m);
	expect_reject(b.data, b.len, MAXU, "duplicate id 3", -EBADMSG);
	buf_reset(&b);
	m = protobuf_begin(&w, 3);
	protobuf_end(&w, m);
	expect_reject(b.data, b.len, MAXU, "invalid id 0", -EBADMSG);
	buf_reset(&b);
	/* a line naming a function that does not exist */
	m = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 1);
	{
		size_t n = protobuf_begin(&w, 4);

		protobuf_put_uint64(&w, 1, 99);
		protobuf_end(&w, n);
	}
	protobuf_end(&w, m);
	expect_reject(b.data, b.len, MAXU, "unknown function id 99", -EBADMSG);
	buf_reset(&b);
	/* values that would overflow when merged */
	{
		int i;

		m = protobuf_begin(&w, 1);
		protobuf_end(&w, m);
		for (i = 0; i < 2; i++) {
			m = protobuf_begin(&w, 2);
			protobuf_put_uint64(&w, 2, (uint64_t)INT64_MAX - 1);
			protobuf_end(&w, m);
		}
		expect_reject(b.data, b.len, MAXU, "overflow", -ERANGE);
	}
	/* a sample with fewer values than sample types */
	buf_reset(&b);
	m = protobuf_begin(&w, 1);
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 1);
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 2);
	protobuf_put_uint64(&w, 2, 1);
	protobuf_end(&w, m);
	{
		struct profile *q = NULL;
		struct errmsg err = { "" };

		CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), 1, &q, &err), -EBADMSG);
		CHECK(strstr(err.msg, "has 1 values, expected 2") != NULL);
	}
	CHECK_EQ_INT(w.err, 0);
	profile_free(p);
	buf_release(&gz);
	buf_release(&raw);
	buf_release(&b);
}

/* One location with many inlined lines, named many times: the expansion budget stops it. */
static void test_inline_bomb(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct protobuf_writer w = PROTOBUF_WRITER(&b);
	struct profile *p = NULL;
	struct errmsg err = { "" };
	size_t m, n, i;
	int rc;

	m = protobuf_begin(&w, 5);
	protobuf_put_uint64(&w, 1, 1);
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 1);
	for (i = 0; i < PPROF_MAX_LINES; i++) {
		n = protobuf_begin(&w, 4);
		protobuf_put_uint64(&w, 1, 1);
		protobuf_put_uint64(&w, 2, i + 1);
		protobuf_end(&w, n);
	}
	protobuf_end(&w, m);
	/* Distinct samples (one more copy of the location each) so none merge. */
	for (i = 1; i <= 60; i++) {
		size_t j;

		m = protobuf_begin(&w, 2);
		n = protobuf_begin(&w, 1);
		for (j = 0; j < i; j++)
			protobuf_put_raw_varint(&w, 1);
		protobuf_end(&w, n);
		protobuf_end(&w, m);
	}
	rc = pprof_decode(b.data, b.len, lim(MAXU), -1, &p, &err);
	CHECK_EQ_INT(rc, -E2BIG);
	CHECK(strstr(err.msg, "frames") != NULL);
	CHECK(p == NULL);
	/* One line too many in a location is refused outright. */
	buf_reset(&b);
	m = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 1);
	for (i = 0; i <= PPROF_MAX_LINES; i++) {
		n = protobuf_begin(&w, 4);
		protobuf_end(&w, n);
	}
	protobuf_end(&w, m);
	CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), -1, &p, &err), -E2BIG);
	buf_release(&b);
}

static void test_gzip_bomb(void)
{
	/* 64 MiB of zeros compress to ~64 KiB; a 1 MiB cap must stop the inflation early. */
	struct buf zeros = BUF_INIT(BUF_UNLIMITED), gz = BUF_INIT(BUF_UNLIMITED), out = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err = { "" };
	char *z = buf_reserve(&zeros, 64u << 20);

	CHECK(z != NULL);
	if (!z)
		return;
	memset(z, 0, 64u << 20);
	buf_commit(&zeros, 64u << 20);
	CHECK_EQ_INT(gzip_compress(zeros.data, zeros.len, Z_BEST_SPEED, &gz), 0);
	CHECK(gz.len < (1u << 20));
	CHECK_EQ_INT(gzip_decompress(gz.data, gz.len, 1u << 20, &out, &err), -E2BIG);
	CHECK(out.len <= (1u << 20) && out.cap <= (4u << 20));
	buf_reset(&out);
	/* Two members back to back are one stream. */
	CHECK_EQ_INT(gzip_compress("abc", 3, 6, &out), 0);
	CHECK_EQ_INT(gzip_compress("def", 3, 6, &out), 0);
	{
		struct buf plain = BUF_INIT(100);

		CHECK_EQ_INT(gzip_decompress(out.data, out.len, 100, &plain, &err), 0);
		CHECK_EQ_STR(plain.data, "abcdef");
		buf_reset(&plain);
		CHECK_EQ_INT(buf_append(&out, "xx", 2), 0);
		CHECK_EQ_INT(gzip_decompress(out.data, out.len, 100, &plain, &err), -EBADMSG);
		CHECK(strstr(err.msg, "trailing") != NULL);
		buf_release(&plain);
	}
	buf_release(&zeros);
	buf_release(&gz);
	buf_release(&out);
}

/* Without "cpu" or a default, pprof's convention: the last sample type. */
static void test_last_type(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct protobuf_writer w = PROTOBUF_WRITER(&b);
	static const char *strs[] = { "", "alloc_space", "bytes", "inuse_space" };
	struct profile *p = NULL;
	struct errmsg err = { "" };
	size_t m, i;

	for (i = 0; i < 2; i++) {
		m = protobuf_begin(&w, 1);
		protobuf_put_uint64(&w, 1, i ? 3 : 1);
		protobuf_put_uint64(&w, 2, 2);
		protobuf_end(&w, m);
	}
	m = protobuf_begin(&w, 2);
	protobuf_put_uint64(&w, 2, 100);
	protobuf_put_uint64(&w, 2, 60);
	protobuf_end(&w, m);
	for (i = 0; i < 4; i++)
		protobuf_put_bytes(&w, 6, strs[i], strlen(strs[i]));
	CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), -1, &p, &err), 0);
	if (p) {
		CHECK_EQ_STR(S(p, p->sample_type), "inuse_space");
		CHECK_EQ_STR(S(p, p->sample_unit), "bytes");
		CHECK_EQ_INT(profile_total(p), 60);
		/* No period type given: it follows the sample type. */
		CHECK_EQ_STR(S(p, p->period_type), "inuse_space");
		profile_free(p);
	}
	buf_release(&b);
}

/* The recorder's samples/count profile with a cpu/nanoseconds period gets Go's second value. */
static void test_cpu_value(void)
{
	struct profile *p = rich_profile(), *q = NULL;
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err = { "" };

	profile_set_type(p, "samples", "count", 10000000);
	profile_set_period_type(p, "cpu", "nanoseconds");
	CHECK_EQ_INT(pprof_encode(p, &b), 0);
	/* Index 1: the time, count x period. */
	CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), 1, &q, &err), 0);
	if (q) {
		CHECK_EQ_STR(S(q, q->sample_type), "cpu");
		CHECK_EQ_STR(S(q, q->sample_unit), "nanoseconds");
		CHECK_EQ_INT(profile_total(q), profile_total(p) * 10000000);
		CHECK_EQ_INT(q->samples[2].value, 7 * 10000000LL);
		profile_free(q);
	}
	/* Default: exactly what was written. */
	CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), -1, &q, &err), 0);
	if (q) {
		check_same(p, q);
		profile_free(q);
	}
	buf_release(&b);
	profile_free(p);
}

static int have_go(void)
{
	return system("command -v go >/dev/null 2>&1") == 0;
}

/* Go's pprof reads our encoding: the hottest function and the totals are in its -top table. */
static void test_go_pprof(void)
{
	char path[] = "/tmp/scorch-test-pprof-XXXXXX";
	struct buf gz = BUF_INIT(BUF_UNLIMITED), outb = BUF_INIT(1 << 20);
	struct profile *p;
	uint32_t fhot, fcold, fmain, lhot, lcold, lmain, s[2];
	char cmd[512], line[512];
	FILE *f;
	int fd, found_hot = 0, found_total = 0, found_kernel = 0, found_type = 0, hot_first = -1, row = 0;

	if (!have_go())
		SKIP("'go' is not installed: cannot check the encoding with go tool pprof");
	/* As the recorder makes them: sample counts, a cpu/nanoseconds period of 10 ms. */
	p = profile_new();
	profile_set_type(p, "samples", "count", 10000000);
	profile_set_period_type(p, "cpu", "nanoseconds");
	p->duration_nanos = 3000000000LL;
	fmain = profile_intern_function(p, FRAME_NATIVE, "main", NULL, "main.c", 1);
	fhot = profile_intern_function(p, FRAME_NATIVE, "hot_function", NULL, "main.c", 10);
	fcold = profile_intern_function(p, FRAME_KERNEL, "cold_syscall", NULL, NULL, 0);
	lmain = profile_intern_location(p, profile_add_mapping(p, 0x1000, 0x9000, 0, "/nonexistent/app", "abcd"),
					0x1100, fmain, 2);
	lhot = profile_intern_location(p, 1, 0x1200, fhot, 11);
	lcold = profile_intern_location(p, 0, 0xffffffff81001000ULL, fcold, 0);
	s[1] = lmain;
	s[0] = lhot;
	profile_add_sample(p, s, 2, NULL, 0, 200);
	s[0] = lcold;
	profile_add_sample(p, s, 2, NULL, 0, 100);
	CHECK_EQ_INT(pprof_encode(p, &gz), 0);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		goto cleanup;
	CHECK_EQ_INT(write(fd, gz.data, gz.len), (long long)gz.len);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "HOME=/tmp PPROF_TMPDIR=/tmp go tool pprof -top -symbolize=none %s 2>&1", path);
	f = popen(cmd, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		buf_puts(&outb, line);
		if (strstr(line, "of 3s total"))
			found_total = 1;
		if (!strncmp(line, "Type: cpu", 9))
			found_type = 1;
		/* Rows of the table: "flat flat% sum% cum cum% name". */
		if (strstr(line, "%") && (strstr(line, "hot_function") || strstr(line, "cold_syscall") ||
					  strstr(line, " main"))) {
			if (strstr(line, "hot_function")) {
				found_hot = strstr(line, "2s") && strstr(line, "66.67%");
				if (hot_first < 0)
					hot_first = row == 0;
			}
			if (strstr(line, "cold_syscall") && strstr(line, "1s"))
				found_kernel = 1;
			row++;
		}
	}
	if (f)
		CHECK_EQ_INT(pclose(f), 0);
	unlink(path);
	CHECK(found_total);
	CHECK(found_hot);
	CHECK(hot_first == 1);
	CHECK(found_kernel);
	CHECK(found_type);
	if (!found_total || !found_hot || hot_first != 1 || !found_kernel || !found_type)
		fprintf(stderr, "  go tool pprof said:\n%s\n", outb.data ? outb.data : "");
cleanup:
	profile_free(p);
	buf_release(&gz);
	buf_release(&outb);
}

/* Every sample type kept as a value column, decoded once (what ingest does). */
static void test_all_types(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct protobuf_writer w = PROTOBUF_WRITER(&b);
	static const char *strs[] = { "", "alloc_space", "bytes", "inuse_space", "main" };
	struct profile *p = NULL;
	struct errmsg err = { "" };
	size_t m, i;

	for (i = 0; i < 2; i++) {
		m = protobuf_begin(&w, 1);
		protobuf_put_uint64(&w, 1, i ? 3 : 1);
		protobuf_put_uint64(&w, 2, 2);
		protobuf_end(&w, m);
	}
	/* Two samples of one stack (merged, every column adds up), one of another stack. */
	for (i = 0; i < 3; i++) {
		m = protobuf_begin(&w, 2);
		protobuf_put_uint64(&w, 1, 1);
		if (i == 2)
			protobuf_put_uint64(&w, 1, 1);
		protobuf_put_uint64(&w, 2, i == 2 ? 5 : 100);
		protobuf_put_uint64(&w, 2, i == 2 ? 0 : 60);
		protobuf_end(&w, m);
	}
	m = protobuf_begin(&w, 4);
	protobuf_put_uint64(&w, 1, 1);
	{
		size_t l = protobuf_begin(&w, 4);

		protobuf_put_uint64(&w, 1, 1);
		protobuf_end(&w, l);
	}
	protobuf_end(&w, m);
	m = protobuf_begin(&w, 5);
	protobuf_put_uint64(&w, 1, 1);
	protobuf_put_uint64(&w, 2, 4);
	protobuf_end(&w, m);
	for (i = 0; i < 5; i++)
		protobuf_put_bytes(&w, 6, strs[i], strlen(strs[i]));
	/* The default column is the last type, inuse_space, as with sample_index -1. */
	CHECK_EQ_INT(pprof_decode(b.data, b.len, lim(MAXU), PPROF_ALL_TYPES, &p, &err), 0);
	if (p) {
		CHECK_EQ_INT(p->nvalues, 2);
		CHECK_EQ_INT(p->value_index, 1);
		CHECK_EQ_STR(S(p, p->value_types[0]), "alloc_space");
		CHECK_EQ_STR(S(p, p->value_types[1]), "inuse_space");
		CHECK_EQ_STR(S(p, p->sample_type), "inuse_space");
		CHECK_EQ_INT(p->nsamples, 2);
		CHECK_EQ_INT(profile_sample_value(p, &p->samples[0], 0), 200);
		CHECK_EQ_INT(profile_sample_value(p, &p->samples[0], 1), 120);
		CHECK_EQ_INT(p->samples[0].value, 120);
		CHECK_EQ_INT(profile_sample_value(p, &p->samples[1], 0), 5);
		CHECK_EQ_INT(profile_sample_value(p, &p->samples[1], 1), 0);
		profile_free(p);
	}
	buf_release(&b);
}

/* Each cap of struct decode_limits refuses the input with -E2BIG and names itself. */
static void test_decode_limits(void)
{
	struct profile *p = profile_new(), *q = NULL;
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct decode_limits l;
	struct errmsg err = { "" };
	uint32_t locs[2];
	char name[32];
	int i;

	profile_set_type(p, "samples", "count", 0);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		locs[0] = profile_intern_location(p, 0, 0x1000 + (uint64_t)i,
						  profile_intern_function(p, FRAME_NATIVE, name, NULL,
									  NULL, 0), 0);
		locs[1] = 1;
		profile_add_sample(p, locs, i ? 2 : 1, NULL, 0, 1 + i);
	}
	CHECK_EQ_INT(pprof_encode(p, &b), 0);
	decode_limits_default(&l);
	CHECK_EQ_INT(pprof_decode(b.data, b.len, &l, -1, &q, &err), 0);
	profile_free(q);
	q = NULL;
	{
		static const struct { const char *name; const char *msg; } caps[] = {
			{ "locations", "locations (limit 'locations')" },
			{ "functions", "functions (limit 'functions')" },
			{ "strings", "strings (limit 'strings')" },
			{ "samples", "(limit 'samples')" },
			{ "frames", "(limit 'frames')" },
			{ "inflated", "(limit 'inflated')" },
		};
		size_t k;

		for (k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
			decode_limits_default(&l);
			CHECK_EQ_INT(decode_limits_set(&l, caps[k].name, 50), 0);
			CHECK_EQ_INT(pprof_decode(b.data, b.len, &l, -1, &q, &err), -E2BIG);
			CHECK(q == NULL);
			if (!strstr(err.msg, caps[k].msg)) {
				fprintf(stderr, "  message '%s' lacks '%s'\n", err.msg, caps[k].msg);
				CHECK(0);
			}
		}
	}
	CHECK_EQ_INT(decode_limits_set(&l, "no-such-limit", 5), -ENOENT);
	CHECK_EQ_INT(decode_limits_set(&l, "samples", 0), -EINVAL);
	profile_free(p);
	buf_release(&b);
}

/* A decoder under a request budget (lib/budget.h) stops with -ENOMEM naming the limit. */
static void test_decode_budget(void)
{
	struct profile *p = rich_profile(), *q = NULL;
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	struct errmsg err = { "" };
	struct budget bud;

	CHECK_EQ_INT(pprof_encode(p, &b), 0);
	memset(&bud, 0, sizeof(bud));
	bud.max_bytes = 256; /* far less than any profile needs */
	bud.mem_name = "request-memory";
	budget_begin(&bud);
	CHECK_EQ_INT(pprof_decode(b.data, b.len, NULL, -1, &q, &err), -ENOMEM);
	budget_end(&bud);
	CHECK(q == NULL);
	CHECK(strstr(err.msg, "limit 'request-memory'") != NULL);
	/* The same input with room decodes. */
	memset(&bud, 0, sizeof(bud));
	bud.max_bytes = 64u << 20;
	budget_begin(&bud);
	CHECK_EQ_INT(pprof_decode(b.data, b.len, NULL, -1, &q, &err), 0);
	budget_end(&bud);
	CHECK(bud.peak > 0 && bud.peak < (64u << 20));
	profile_free(q);
	profile_free(p);
	buf_release(&b);
}

/* go tool pprof sees our inlined frames as inlined: -traces marks them "(inline)". */
static void test_go_pprof_inline(void)
{
	char path[] = "/tmp/scorch-test-pprof-XXXXXX";
	struct buf gz = BUF_INIT(BUF_UNLIMITED), outb = BUF_INIT(1 << 20);
	struct profile *p;
	uint32_t m, s[3];
	char cmd[512], line[512];
	FILE *f;
	int fd, inline_marked = 0, caller_plain = 0;

	if (!have_go())
		SKIP("'go' is not installed: cannot check the encoding with go tool pprof");
	p = profile_new();
	profile_set_type(p, "samples", "count", 10000000);
	profile_set_period_type(p, "cpu", "nanoseconds");
	m = profile_add_mapping(p, 0x1000, 0x9000, 0, "/nonexistent/app", "abcd");
	s[0] = profile_intern_location_inl(
		p, m, 0x1100, profile_intern_function(p, FRAME_NATIVE, "helper_inl", NULL, "main.c", 0),
		7, 1);
	s[1] = profile_intern_location(
		p, m, 0x1100, profile_intern_function(p, FRAME_NATIVE, "caller_fn", NULL, "main.c", 0), 20);
	s[2] = profile_intern_location(
		p, m, 0x1500, profile_intern_function(p, FRAME_NATIVE, "main", NULL, "main.c", 0), 30);
	profile_add_sample(p, s, 3, NULL, 0, 50);
	CHECK_EQ_INT(pprof_encode(p, &gz), 0);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		goto cleanup;
	CHECK_EQ_INT(write(fd, gz.data, gz.len), (long long)gz.len);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "HOME=/tmp PPROF_TMPDIR=/tmp go tool pprof -traces -symbolize=none %s 2>&1", path);
	f = popen(cmd, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		buf_puts(&outb, line);
		if (strstr(line, "helper_inl") && strstr(line, "(inline)"))
			inline_marked = 1;
		if (strstr(line, "caller_fn") && !strstr(line, "(inline)"))
			caller_plain = 1;
	}
	if (f)
		CHECK_EQ_INT(pclose(f), 0);
	unlink(path);
	CHECK(inline_marked);
	CHECK(caller_plain);
	if (!inline_marked || !caller_plain)
		fprintf(stderr, "  go tool pprof said:\n%s\n", outb.data ? outb.data : "");
cleanup:
	profile_free(p);
	buf_release(&gz);
	buf_release(&outb);
}

int main(void)
{
	RUN(test_varint);
	RUN(test_nested_lengths);
	RUN(test_roundtrip);
	RUN(test_inlined);
	RUN(test_encode_limit);
	RUN(test_foreign);
	RUN(test_malformed);
	RUN(test_inline_bomb);
	RUN(test_gzip_bomb);
	RUN(test_last_type);
	RUN(test_cpu_value);
	RUN(test_go_pprof);
	RUN(test_all_types);
	RUN(test_decode_limits);
	RUN(test_decode_budget);
	RUN(test_go_pprof_inline);
	RUN(test_markers_and_main);
	return test_summary();
}
