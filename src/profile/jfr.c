/* jfr.c: JFR recordings into profiles (see jfr.h; the layout is in docs/formats.md, "JFR").
 *
 * A recording is a sequence of self-contained chunks. Each chunk is read in three passes:
 *   1. its metadata event (at the offset the header gives): the string table and the element
 *      tree of classes and their fields, into class and field arrays;
 *   2. every event header, in file order: constant pool events (type 1) are indexed, each
 *      entry's key mapped to its offset, skipping the values by their class layout;
 *   3. the events of the kinds in the table below, read field by field, their stack traces,
 *      methods, classes, symbols and threads resolved through the constant pools on demand and
 *      memoized, since the same few thousand stacks recur in every event.
 * Nothing is copied out of the input but the strings that end up in the profiles. */
#include "profile/jfr.h"
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/hash.h"
#include "lib/strtab.h"
#include "lib/utf8.h"
#include "profile/gzip.h"
#include "profile/protobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_HEADER 68
#define MAX_NEST 32          /* inline types nested in one another */
#define MAX_CLASSES 65536    /* classes of one chunk's metadata */
#define MAX_FIELDS (1 << 20) /* fields of all of them */
#define EV_METADATA 0
#define EV_CONSTANTS 1

/* ---- event kinds ---- */

enum { VAL_ONE, VAL_FIELD, VAL_DURATION };

struct kind {
	const char *event;
	const char *types[2], *units[2], *sample_units[2];
	int value[2];          /* VAL_ONE: 1 per event; VAL_FIELD: the field's value; VAL_DURATION */
	const char *field;     /* the VAL_FIELD field */
	const char *thread;    /* the thread field */
};

static const struct kind kinds[] = {
	{ "jdk.ExecutionSample", { "cpu", NULL }, { "samples", NULL }, { "count", NULL },
	  { VAL_ONE, 0 }, NULL, "sampledThread" },
	{ "jdk.ObjectAllocationInNewTLAB", { "alloc_in_new_tlab_objects", "alloc_in_new_tlab_bytes" },
	  { "objects", "bytes" }, { "count", "bytes" }, { VAL_ONE, VAL_FIELD }, "tlabSize", "eventThread" },
	{ "jdk.ObjectAllocationOutsideTLAB", { "alloc_outside_tlab_objects", "alloc_outside_tlab_bytes" },
	  { "objects", "bytes" }, { "count", "bytes" }, { VAL_ONE, VAL_FIELD }, "allocationSize",
	  "eventThread" },
	{ "jdk.ObjectAllocationSample", { "alloc_sample_objects", "alloc_sample_bytes" },
	  { "objects", "bytes" }, { "count", "bytes" }, { VAL_ONE, VAL_FIELD }, "weight", "eventThread" },
	{ "jdk.JavaMonitorEnter", { "lock_count", "lock_duration" }, { "count", "nanoseconds" },
	  { "count", "nanoseconds" }, { VAL_ONE, VAL_DURATION }, NULL, "eventThread" },
	{ "jdk.ThreadPark", { "park_count", "park_duration" }, { "count", "nanoseconds" },
	  { "count", "nanoseconds" }, { VAL_ONE, VAL_DURATION }, NULL, "eventThread" },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))
#define NPROFILES (2 * NKINDS)

/* ---- labels snapshot ---- */

struct jfr_labels {
	struct strtab *strs;
	struct u64map string_ids; /* string id + 1 -> strtab id */
	struct u64map contexts;   /* context id + 1 -> index into ctx */
	struct {
		uint32_t first, n; /* pairs in pairs[] */
	} *ctx;
	size_t nctx, ctx_cap;
	uint64_t *pairs; /* (key string id, value string id) of each context, flattened */
	size_t npairs, pairs_cap;
};

static int map_key(uint64_t k, uint64_t *out)
{
	if (k >= UINT64_MAX - 1)
		return -1;
	*out = k + 1;
	return 0;
}

void jfr_labels_free(struct jfr_labels *l)
{
	if (!l)
		return;
	strtab_free(l->strs);
	u64map_release(&l->string_ids);
	u64map_release(&l->contexts);
	xfree(l->ctx);
	xfree(l->pairs);
	xfree(l);
}

/* One map entry message: key (1) and value (2), either varint or bytes. */
static int map_entry(const struct protobuf_field *f, uint64_t *key, struct protobuf_field *value)
{
	struct protobuf_reader r;
	struct protobuf_field g;
	int rc;

	*key = 0;
	memset(value, 0, sizeof(*value));
	if (f->wire != PROTOBUF_LEN)
		return -EBADMSG;
	r = (struct protobuf_reader)PROTOBUF_READER(f->data, f->len);
	while ((rc = protobuf_next(&r, &g)) > 0) {
		if (g.num == 1 && g.wire == PROTOBUF_VARINT)
			*key = g.u;
		else if (g.num == 2)
			*value = g;
	}
	return rc < 0 ? -EBADMSG : 0;
}

int jfr_labels_decode(const void *data, size_t len, const struct decode_limits *lim_in,
		      struct jfr_labels **out, struct errmsg *err)
{
	const struct decode_limits *lim = decode_limits_or_default(lim_in);
	struct jfr_labels *l = xcalloc(1, sizeof(*l));
	struct protobuf_reader r = PROTOBUF_READER(data, len);
	struct protobuf_field f, v;
	uint64_t key, mk;
	size_t entries = 0;
	int rc, pass;

	*out = NULL;
	l->strs = strtab_new();
	u64map_init(&l->string_ids);
	u64map_init(&l->contexts);
	if (len > lim->max_inflated) {
		rc = decode_limit_exceeded(err, "jfr labels", "bytes", "inflated", lim->max_inflated);
		goto fail;
	}
	/* Strings first (contexts refer to them), then contexts. */
	for (pass = 2; pass >= 1; pass--) {
		r = (struct protobuf_reader)PROTOBUF_READER(data, len);
		while ((rc = protobuf_next(&r, &f)) > 0) {
			if ((int)f.num != pass)
				continue;
			if (++entries > lim->max_strings) {
				rc = decode_limit_exceeded(err, "jfr labels", "entries", "strings",
							   lim->max_strings);
				goto fail;
			}
			if (map_entry(&f, &key, &v) < 0 || map_key(key, &mk) < 0)
				goto bad;
			if (pass == 2) {
				if (v.data && v.wire != PROTOBUF_LEN)
					goto bad;
				u64map_put(&l->string_ids, mk,
					   strtab_intern_len(l->strs, v.data ? (const char *)v.data : "", v.len));
			} else {
				struct protobuf_reader cr;
				struct protobuf_field lf, lv;
				uint64_t k2;
				size_t first = l->npairs;

				if (v.data && v.wire != PROTOBUF_LEN)
					goto bad;
				cr = (struct protobuf_reader)PROTOBUF_READER(v.data ? v.data : (const uint8_t *)"",
									      v.data ? v.len : 0);
				while ((rc = protobuf_next(&cr, &lf)) > 0) {
					uint64_t *ks, *vs, vk;

					if (lf.num != 1)
						continue;
					if (map_entry(&lf, &k2, &lv) < 0 || lv.wire != PROTOBUF_VARINT)
						goto bad;
					if ((l->npairs - first) / 2 >= lim->max_labels) {
						rc = decode_limit_exceeded(err, "jfr labels", "labels in a context",
									   "labels", lim->max_labels);
						goto fail;
					}
					if (map_key(k2, &k2) < 0 || map_key(lv.u, &vk) < 0)
						goto bad;
					ks = u64map_get(&l->string_ids, k2);
					if (!ks) {
						rc = errmsg_set(err, -EBADMSG, "jfr labels: unknown string id %" PRIu64, k2 - 1);
						goto fail;
					}
					k2 = *ks;
					vs = u64map_get(&l->string_ids, vk);
					if (!vs) {
						rc = errmsg_set(err, -EBADMSG, "jfr labels: unknown string id %" PRIu64, vk - 1);
						goto fail;
					}
					ALLOC_GROW(l->pairs, l->npairs + 2, l->pairs_cap);
					l->pairs[l->npairs++] = k2;
					l->pairs[l->npairs++] = *vs;
				}
				if (rc < 0)
					goto bad;
				ALLOC_GROW(l->ctx, l->nctx + 1, l->ctx_cap);
				l->ctx[l->nctx].first = (uint32_t)first;
				l->ctx[l->nctx].n = (uint32_t)((l->npairs - first) / 2);
				u64map_put(&l->contexts, mk, l->nctx);
				l->nctx++;
			}
		}
		if (rc < 0)
			goto bad;
	}
	*out = l;
	return 0;
bad:
	rc = errmsg_set(err, -EBADMSG, "jfr labels: malformed LabelsSnapshot");
fail:
	jfr_labels_free(l);
	return rc;
}

/* ---- chunk reading ---- */

enum prim { P_STRUCT = 0, P_BOOL, P_BYTE, P_CHAR, P_SHORT, P_INT, P_LONG, P_FLOAT, P_DOUBLE,
	    P_STRING };

struct jfield {
	uint32_t name;  /* metadata string id */
	int64_t cls_id; /* the field's class id, resolved into cls after the metadata */
	uint32_t cls;
	uint8_t cp, array;
};

struct jclass {
	int64_t id;
	uint32_t name;
	uint32_t first, nfields;
	uint8_t prim;
	int8_t has_pool;
	struct u64map pool; /* key + 1 -> offset in the chunk */
};

struct cur {
	const uint8_t *p, *end;
};

/* A field's value, as much as scorch needs of it. */
enum { V_NONE = 0, V_INT, V_REF, V_FLOAT, V_STR, V_STRREF, V_NULL };
struct jv {
	uint8_t kind;
	uint8_t enc;      /* V_STR: 3 UTF-8, 4 UTF-16 code units as varints, 5 Latin-1 */
	uint64_t u;       /* V_INT, V_REF, V_STRREF */
	double d;
	const uint8_t *s; /* V_STR */
	size_t n;         /* V_STR: bytes (3, 5) or code units (4) */
};

struct jprof {
	struct profile *p;
	struct u64map stacks;  /* stack key + 1 -> exp index + 1 (per chunk) */
	struct u64map methods; /* method key + 1 -> function id (per chunk) */
	uint32_t *exp;         /* stacks as our location ids: n, then ids leaf first */
	size_t nexp, exp_cap;
};

struct dec {
	const struct decode_limits *lim;
	const struct jfr_labels *labels;
	struct errmsg *err;
	struct jfr_result *out;
	struct jprof prof[NPROFILES];
	struct strtab *text;  /* strings resolved from the input (names, threads) */
	struct buf scratch;
	uint64_t frames;      /* frames of all distinct samples */
	uint64_t distinct;    /* distinct samples of all profiles */
	uint64_t period_ns;   /* of jdk.ExecutionSample, from jdk.ActiveSetting */

	/* per chunk */
	const uint8_t *base, *end;
	uint64_t ticks_per_sec;
	struct strtab *mstr;        /* metadata strings */
	uint32_t *mstr_ids;         /* metadata string index -> mstr id */
	size_t nmstr;
	struct jclass *classes;
	size_t nclasses, classes_cap;
	struct jfield *fields;
	size_t nfields, fields_cap;
	struct u64map class_ids;    /* class id + 1 -> index + 1 */
	int32_t c_string, c_symbol, c_class, c_method, c_stack, c_frame, c_thread;
	struct u64map method_text;  /* method key + 1 -> (name id << 32 | sys id) in text */
	struct u64map thread_text;  /* thread key + 1 -> text id */
	uint64_t cp_entries;
};

#define MSG(d, code, ...) errmsg_set((d)->err, (code), "jfr: " __VA_ARGS__)

static int off_of(const struct dec *d, const uint8_t *p)
{
	return (int)(p - d->base);
}

/* JFR's compressed integers: 7 bits per byte, low first, the 9th byte whole. */
static int rd_varint(struct cur *r, uint64_t *v)
{
	uint64_t x = 0;
	int i;

	for (i = 0; i < 8; i++) {
		uint8_t b;

		if (r->p >= r->end)
			return -1;
		b = *r->p++;
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	if (r->p >= r->end)
		return -1;
	x |= (uint64_t)*r->p++ << 56;
	*v = x;
	return 0;
}

static int rd_bytes(struct cur *r, size_t n, const uint8_t **out)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	*out = r->p;
	r->p += n;
	return 0;
}

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* A string in JFR's encoding. */
static int rd_string(struct cur *r, struct jv *v)
{
	uint64_t n, c;
	const uint8_t *s;
	uint8_t enc;
	size_t i;

	if (r->p >= r->end)
		return -1;
	enc = *r->p++;
	memset(v, 0, sizeof(*v));
	switch (enc) {
	case 0:
		v->kind = V_NULL;
		return 0;
	case 1:
		v->kind = V_STR;
		v->enc = 3;
		v->s = (const uint8_t *)"";
		return 0;
	case 2:
		v->kind = V_STRREF;
		return rd_varint(r, &v->u);
	case 3:
	case 5:
		if (rd_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) || rd_bytes(r, (size_t)n, &s) < 0)
			return -1;
		v->kind = V_STR;
		v->enc = enc;
		v->s = s;
		v->n = (size_t)n;
		return 0;
	case 4:
		if (rd_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p))
			return -1;
		v->kind = V_STR;
		v->enc = 4;
		v->s = r->p;
		v->n = (size_t)n;
		for (i = 0; i < n; i++) {
			if (rd_varint(r, &c) < 0)
				return -1;
		}
		return 0;
	default:
		return -1;
	}
}

static void put_utf8(struct buf *b, uint32_t c)
{
	char u[4];
	size_t n = utf8_encode(c, u);

	buf_append(b, u, n);
}

/* The text of an inline string value into b (appended). */
static void str_text(const struct jv *v, struct buf *b)
{
	size_t i;

	if (v->kind != V_STR)
		return;
	if (v->enc == 3) {
		buf_append(b, v->s, v->n);
	} else if (v->enc == 5) {
		for (i = 0; i < v->n; i++)
			put_utf8(b, v->s[i]);
	} else {
		struct cur r = { v->s, v->s + 10 * v->n + 10 };
		uint64_t c, lo;

		for (i = 0; i < v->n; i++) {
			if (rd_varint(&r, &c) < 0)
				return;
			c &= 0xffff;
			if (c >= 0xd800 && c < 0xdc00 && i + 1 < v->n) {
				struct cur save = r;

				if (rd_varint(&r, &lo) == 0 && (lo & 0xffff) >= 0xdc00 && (lo & 0xffff) < 0xe000) {
					c = 0x10000 + ((c - 0xd800) << 10) + ((lo & 0xffff) - 0xdc00);
					i++;
				} else {
					r = save;
					c = 0xfffd;
				}
			} else if (c >= 0xd800 && c < 0xe000) {
				c = 0xfffd;
			}
			put_utf8(b, (uint32_t)c);
		}
	}
}

/* ---- metadata ---- */

static const char *mname(const struct dec *d, uint32_t id)
{
	return strtab_get(d->mstr, id);
}

static uint32_t mstr_of(struct dec *d, uint64_t idx, int *ok)
{
	if (idx >= d->nmstr) {
		*ok = 0;
		return 0;
	}
	return d->mstr_ids[idx];
}

static int prim_of(const char *name)
{
	static const char *const names[] = { NULL, "boolean", "byte", "char", "short", "int",
					     "long", "float", "double", "java.lang.String" };
	int i;

	for (i = 1; i <= P_STRING; i++) {
		if (!strcmp(name, names[i]))
			return i;
	}
	return P_STRUCT;
}

/* One element of the metadata tree and its children. cls: the class being defined (for
 * "field" children), or -1. */
static int parse_element(struct dec *d, struct cur *r, int depth, int32_t cls)
{
	uint64_t name_idx, nattr, nchild, i, k, v;
	const char *name;
	uint32_t aname = 0, aid = 0, aclass = 0, acp = 0, adim = 0;
	int ok = 1, has_name = 0, has_id = 0, has_class = 0;
	int32_t mine = -1;

	if (depth > MAX_NEST)
		return MSG(d, -EBADMSG, "metadata nested too deeply");
	if (rd_varint(r, &name_idx) < 0 || rd_varint(r, &nattr) < 0 || nattr > (uint64_t)(r->end - r->p))
		return MSG(d, -EBADMSG, "malformed metadata element at offset %d", off_of(d, r->p));
	name = mname(d, mstr_of(d, name_idx, &ok));
	for (i = 0; i < nattr; i++) {
		const char *key;
		uint32_t val;

		if (rd_varint(r, &k) < 0 || rd_varint(r, &v) < 0)
			return MSG(d, -EBADMSG, "malformed metadata attribute at offset %d", off_of(d, r->p));
		key = mname(d, mstr_of(d, k, &ok));
		val = mstr_of(d, v, &ok);
		if (!strcmp(key, "name")) {
			aname = val;
			has_name = 1;
		} else if (!strcmp(key, "id")) {
			aid = val;
			has_id = 1;
		} else if (!strcmp(key, "class")) {
			aclass = val;
			has_class = 1;
		} else if (!strcmp(key, "constantPool")) {
			acp = val;
		} else if (!strcmp(key, "dimension")) {
			adim = val;
		}
	}
	if (!ok)
		return MSG(d, -EBADMSG, "metadata string index out of range");
	if (!strcmp(name, "class")) {
		char *end;
		const char *id = mname(d, aid);
		long long idv = strtoll(id, &end, 10);
		uint64_t key;
		struct jclass *c;

		if (!has_name || !has_id || !*id || *end || idv < 0 || map_key((uint64_t)idv, &key) < 0)
			return MSG(d, -EBADMSG, "metadata class without a valid name and id");
		if (d->nclasses >= MAX_CLASSES)
			return MSG(d, -E2BIG, "more than %d classes", MAX_CLASSES);
		if (u64map_get(&d->class_ids, key))
			return MSG(d, -EBADMSG, "duplicate class id %lld", idv);
		ALLOC_GROW(d->classes, d->nclasses + 1, d->classes_cap);
		c = &d->classes[d->nclasses];
		memset(c, 0, sizeof(*c));
		c->id = idv;
		c->name = aname;
		c->first = (uint32_t)d->nfields;
		c->prim = (uint8_t)prim_of(mname(d, aname));
		mine = (int32_t)d->nclasses++;
		u64map_put(&d->class_ids, key, (uint64_t)mine + 1);
	} else if (!strcmp(name, "field") && cls >= 0) {
		char *end;
		const char *cid = mname(d, aclass);
		long long idv = strtoll(cid, &end, 10);
		struct jfield *f;

		if (!has_name || !has_class || !*cid || *end || idv < 0)
			return MSG(d, -EBADMSG, "metadata field without a valid name and class");
		if (d->nfields >= MAX_FIELDS)
			return MSG(d, -E2BIG, "more than %d fields", MAX_FIELDS);
		/* Fields of a class are contiguous: its children are read right after it. */
		if (d->classes[cls].first + d->classes[cls].nfields != d->nfields)
			return MSG(d, -EBADMSG, "malformed metadata class");
		ALLOC_GROW(d->fields, d->nfields + 1, d->fields_cap);
		f = &d->fields[d->nfields++];
		memset(f, 0, sizeof(*f));
		f->name = aname;
		f->cls_id = idv;
		f->cp = !strcmp(mname(d, acp), "true");
		f->array = strcmp(mname(d, adim), "") && strcmp(mname(d, adim), "0");
		d->classes[cls].nfields++;
	}
	if (rd_varint(r, &nchild) < 0 || nchild > (uint64_t)(r->end - r->p))
		return MSG(d, -EBADMSG, "malformed metadata element at offset %d", off_of(d, r->p));
	for (i = 0; i < nchild; i++) {
		int rc = parse_element(d, r, depth + 1, mine);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int32_t class_named(struct dec *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->nclasses; i++) {
		if (!strcmp(mname(d, d->classes[i].name), name))
			return (int32_t)i;
	}
	return -1;
}

static int parse_metadata(struct dec *d, uint64_t offset)
{
	struct cur r;
	uint64_t size, type, v, n, i;
	size_t k;
	int rc;

	if (offset < CHUNK_HEADER || offset >= (uint64_t)(d->end - d->base))
		return MSG(d, -EBADMSG, "metadata offset %" PRIu64 " outside the chunk", offset);
	r.p = d->base + offset;
	r.end = d->end;
	if (rd_varint(&r, &size) < 0 || size > (uint64_t)(d->end - (d->base + offset)) || size < 2)
		return MSG(d, -EBADMSG, "malformed metadata event");
	r.end = d->base + offset + size;
	if (rd_varint(&r, &type) < 0 || type != EV_METADATA)
		return MSG(d, -EBADMSG, "no metadata event at offset %" PRIu64, offset);
	/* start time, duration, metadata id */
	for (i = 0; i < 3; i++) {
		if (rd_varint(&r, &v) < 0)
			return MSG(d, -EBADMSG, "malformed metadata event");
	}
	if (rd_varint(&r, &n) < 0 || n > (uint64_t)(r.end - r.p))
		return MSG(d, -EBADMSG, "malformed metadata string table");
	if (n > d->lim->max_strings)
		return decode_limit_exceeded(d->err, "jfr", "metadata strings", "strings",
					     d->lim->max_strings);
	d->nmstr = (size_t)n;
	d->mstr_ids = xcalloc(d->nmstr + 1, sizeof(*d->mstr_ids));
	for (i = 0; i < n; i++) {
		struct jv s;

		if (rd_string(&r, &s) < 0)
			return MSG(d, -EBADMSG, "malformed metadata string %" PRIu64, i);
		buf_reset(&d->scratch);
		str_text(&s, &d->scratch);
		d->mstr_ids[i] = strtab_intern_len(d->mstr, d->scratch.data ? d->scratch.data : "",
						   d->scratch.len);
	}
	rc = parse_element(d, &r, 0, -1);
	if (rc < 0)
		return rc;
	/* Resolve the fields' classes. */
	for (k = 0; k < d->nfields; k++) {
		struct jfield *f = &d->fields[k];
		uint64_t key, *idx;

		if (map_key((uint64_t)f->cls_id, &key) < 0 || !(idx = u64map_get(&d->class_ids, key)))
			return MSG(d, -EBADMSG, "field '%s' has unknown class id %" PRId64,
				   mname(d, f->name), f->cls_id);
		f->cls = (uint32_t)(*idx - 1);
	}
	d->c_string = class_named(d, "java.lang.String");
	d->c_symbol = class_named(d, "jdk.types.Symbol");
	d->c_class = class_named(d, "java.lang.Class");
	d->c_method = class_named(d, "jdk.types.Method");
	d->c_stack = class_named(d, "jdk.types.StackTrace");
	d->c_frame = class_named(d, "jdk.types.StackFrame");
	d->c_thread = class_named(d, "java.lang.Thread");
	return 0;
}

/* ---- values ---- */

static int skip_inline(struct dec *d, struct cur *r, uint32_t cls, int depth);

static int skip_field(struct dec *d, struct cur *r, const struct jfield *f, int depth)
{
	uint64_t n = 1, i, v;

	if (f->array) {
		if (rd_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) + 1)
			return -1;
	}
	for (i = 0; i < n; i++) {
		const uint8_t *before = r->p;

		if (f->cp) {
			if (rd_varint(r, &v) < 0)
				return -1;
		} else if (skip_inline(d, r, f->cls, depth + 1) < 0) {
			return -1;
		}
		if (r->p == before)
			break; /* an element of zero bytes: all of them are */
	}
	return 0;
}

static int skip_inline(struct dec *d, struct cur *r, uint32_t cls, int depth)
{
	const struct jclass *c = &d->classes[cls];
	const uint8_t *s;
	uint64_t v;
	struct jv sv;
	uint32_t i;

	switch (c->prim) {
	case P_BOOL:
	case P_BYTE:
		return rd_bytes(r, 1, &s);
	case P_CHAR:
	case P_SHORT:
	case P_INT:
	case P_LONG:
		return rd_varint(r, &v);
	case P_FLOAT:
		return rd_bytes(r, 4, &s);
	case P_DOUBLE:
		return rd_bytes(r, 8, &s);
	case P_STRING:
		return rd_string(r, &sv);
	default:
		if (depth > MAX_NEST)
			return -1;
		for (i = 0; i < c->nfields; i++) {
			if (skip_field(d, r, &d->fields[c->first + i], depth) < 0)
				return -1;
		}
		return 0;
	}
}

/* Read one non-array field value. */
static int read_field(struct dec *d, struct cur *r, const struct jfield *f, struct jv *v, int depth)
{
	const struct jclass *c = &d->classes[f->cls];
	const uint8_t *s;

	memset(v, 0, sizeof(*v));
	if (f->cp) {
		v->kind = V_REF;
		return rd_varint(r, &v->u);
	}
	switch (c->prim) {
	case P_BOOL:
	case P_BYTE:
		if (rd_bytes(r, 1, &s) < 0)
			return -1;
		v->kind = V_INT;
		v->u = c->prim == P_BYTE ? (uint64_t)(int64_t)(int8_t)s[0] : s[0];
		return 0;
	case P_CHAR:
	case P_SHORT:
	case P_INT:
	case P_LONG:
		v->kind = V_INT;
		return rd_varint(r, &v->u);
	case P_FLOAT: {
		uint32_t bits;
		float fl;

		if (rd_bytes(r, 4, &s) < 0)
			return -1;
		bits = (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
		memcpy(&fl, &bits, sizeof(fl));
		v->kind = V_FLOAT;
		v->d = fl;
		return 0;
	}
	case P_DOUBLE: {
		uint64_t bits;

		if (rd_bytes(r, 8, &s) < 0)
			return -1;
		bits = be64(s);
		memcpy(&v->d, &bits, sizeof(v->d));
		v->kind = V_FLOAT;
		return 0;
	}
	case P_STRING:
		return rd_string(r, v);
	default:
		return skip_inline(d, r, f->cls, depth + 1);
	}
}

/* Read the fields named in want[] (metadata string ids; UINT32_MAX never matches) of an
 * instance of class cls at r; others are skipped. out[i] stays V_NONE for fields absent. */
static int read_fields(struct dec *d, struct cur *r, uint32_t cls, const uint32_t *want, size_t nwant,
		       struct jv *out, int depth)
{
	const struct jclass *c = &d->classes[cls];
	uint32_t i;
	size_t k;

	for (k = 0; k < nwant; k++)
		memset(&out[k], 0, sizeof(out[k]));
	if (c->prim != P_STRUCT || depth > MAX_NEST)
		return -1;
	for (i = 0; i < c->nfields; i++) {
		const struct jfield *f = &d->fields[c->first + i];

		for (k = 0; k < nwant && want[k] != f->name; k++)
			;
		if (k < nwant && !f->array) {
			if (read_field(d, r, f, &out[k], depth) < 0)
				return -1;
		} else if (skip_field(d, r, f, depth) < 0) {
			return -1;
		}
	}
	return 0;
}

static uint32_t want_id(struct dec *d, const char *name)
{
	return strtab_find(d->mstr, name, strlen(name));
}

/* The cursor at the constant pool entry key of class cls, or -1. */
static int pool_entry(struct dec *d, int32_t cls, uint64_t key, struct cur *r)
{
	uint64_t k, *off;

	if (cls < 0 || !d->classes[cls].has_pool || map_key(key, &k) < 0)
		return -1;
	off = u64map_get(&d->classes[cls].pool, k);
	if (!off)
		return -1;
	r->p = d->base + *off;
	r->end = d->end;
	return 0;
}

/* The text of a string value (inline or a java.lang.String pool reference) into d->scratch. */
static int string_value(struct dec *d, const struct jv *v)
{
	buf_reset(&d->scratch);
	if (v->kind == V_STRREF) {
		struct cur r;
		struct jv s;

		if (pool_entry(d, d->c_string, v->u, &r) < 0 || rd_string(&r, &s) < 0 || s.kind != V_STR)
			return -1;
		str_text(&s, &d->scratch);
		return 0;
	}
	if (v->kind == V_STR) {
		str_text(v, &d->scratch);
		return 0;
	}
	return v->kind == V_NULL ? 0 : -1;
}

/* The text of a Symbol reference into d->scratch. */
static int symbol_text(struct dec *d, uint64_t key)
{
	struct cur r;
	struct jv v;
	uint32_t want = want_id(d, "string");

	if (pool_entry(d, d->c_symbol, key, &r) < 0 ||
	    read_fields(d, &r, (uint32_t)d->c_symbol, &want, 1, &v, 0) < 0)
		return -1;
	return string_value(d, &v);
}

/* ---- constant pools ---- */

static int index_pools(struct dec *d, const uint8_t *ev, const uint8_t *ev_end)
{
	struct cur r = { ev, ev_end };
	uint64_t v, npools, i, j, cid, count, key, k, *idx;
	int skip;

	/* size, type, start time, duration, delta to the previous pool event */
	for (i = 0; i < 5; i++) {
		if (rd_varint(&r, &v) < 0)
			goto bad;
	}
	if (r.p >= r.end)
		goto bad;
	r.p++; /* checkpoint type mask */
	if (rd_varint(&r, &npools) < 0 || npools > (uint64_t)(r.end - r.p))
		goto bad;
	for (i = 0; i < npools; i++) {
		struct jclass *c;

		if (rd_varint(&r, &cid) < 0 || rd_varint(&r, &count) < 0 ||
		    count > (uint64_t)(r.end - r.p) || map_key(cid, &k) < 0)
			goto bad;
		idx = u64map_get(&d->class_ids, k);
		if (!idx)
			return MSG(d, -EBADMSG, "constant pool of unknown class id %" PRIu64, cid);
		c = &d->classes[*idx - 1];
		if (!c->has_pool) {
			u64map_init(&c->pool);
			c->has_pool = 1;
		}
		skip = 0;
		for (j = 0; j < count; j++) {
			const uint8_t *at;

			if (rd_varint(&r, &key) < 0 || map_key(key, &k) < 0)
				goto bad;
			if (++d->cp_entries > d->lim->max_locations)
				return decode_limit_exceeded(d->err, "jfr", "constant pool entries",
							     "locations", d->lim->max_locations);
			at = r.p;
			u64map_put(&c->pool, k, (uint64_t)(at - d->base));
			if (!skip && skip_inline(d, &r, (uint32_t)(*idx - 1), 0) < 0)
				goto bad;
			/* Entries of zero bytes (a class without fields) need no further walking. */
			if (r.p == at)
				skip = 1;
		}
	}
	return 0;
bad:
	return MSG(d, -EBADMSG, "malformed constant pool event at offset %d", off_of(d, ev));
}

/* ---- events ---- */

static struct jprof *jprof_of(struct dec *d, size_t kind, int which)
{
	struct jprof *jp = &d->prof[2 * kind + (size_t)which];
	const struct kind *k = &kinds[kind];

	if (!jp->p) {
		jp->p = profile_new();
		if (!strcmp(k->types[which], "cpu")) {
			profile_set_type(jp->p, "samples", "count", 0);
			profile_set_period_type(jp->p, "cpu", "nanoseconds");
		} else {
			profile_set_type(jp->p, k->types[which], k->sample_units[which], 0);
		}
		u64map_init(&jp->stacks);
		u64map_init(&jp->methods);
	}
	return jp;
}

/* Our function for method key (its text memoized per chunk). */
static uint32_t method_function(struct dec *d, struct jprof *jp, uint64_t key)
{
	uint64_t mk, *m, *t;
	uint32_t name_id, sys_id, fn;

	if (map_key(key, &mk) < 0)
		return 0;
	m = u64map_get(&jp->methods, mk);
	if (m)
		return (uint32_t)*m;
	t = u64map_get(&d->method_text, mk);
	if (t) {
		name_id = (uint32_t)(*t >> 32);
		sys_id = (uint32_t)*t;
	} else {
		uint32_t want[3] = { want_id(d, "type"), want_id(d, "name"), want_id(d, "descriptor") };
		uint32_t cname = want_id(d, "name");
		struct jv mv[3], cv;
		struct cur r;
		struct buf name = BUF_INIT(BUF_UNLIMITED);
		size_t i, cut;

		if (pool_entry(d, d->c_method, key, &r) == 0 &&
		    read_fields(d, &r, (uint32_t)d->c_method, want, 3, mv, 0) == 0) {
			if (mv[0].kind == V_REF && pool_entry(d, d->c_class, mv[0].u, &r) == 0 &&
			    read_fields(d, &r, (uint32_t)d->c_class, &cname, 1, &cv, 0) == 0 &&
			    cv.kind == V_REF && symbol_text(d, cv.u) == 0 && d->scratch.len) {
				/* Internal names (java/util/HashMap) as Java writes them, up to the class
				 * name: hidden classes (Foo$$Lambda$4+0x.../0x...) keep their suffix. */
				for (i = 0; i < d->scratch.len && d->scratch.data[i] != '$' &&
					    d->scratch.data[i] != '+'; i++)
					d->scratch.data[i] = d->scratch.data[i] == '/' ? '.' : d->scratch.data[i];
				buf_append(&name, d->scratch.data, d->scratch.len);
				buf_putc(&name, '.');
			}
			if (mv[1].kind == V_REF && symbol_text(d, mv[1].u) == 0)
				buf_append(&name, d->scratch.data ? d->scratch.data : "", d->scratch.len);
		}
		if (!name.len)
			buf_printf(&name, "[unknown method %" PRIu64 "]", key);
		cut = name.len;
		if (mv[2].kind == V_REF && symbol_text(d, mv[2].u) == 0)
			buf_append(&name, d->scratch.data ? d->scratch.data : "", d->scratch.len);
		sys_id = strtab_intern_len(d->text, name.data, name.len);
		name_id = strtab_intern_len(d->text, name.data, cut);
		buf_release(&name);
		u64map_put(&d->method_text, mk, (uint64_t)name_id << 32 | sys_id);
	}
	fn = profile_intern_function(jp->p, FRAME_NATIVE, strtab_get(d->text, name_id),
				     strtab_get(d->text, sys_id), NULL, 0);
	u64map_put(&jp->methods, mk, fn);
	return fn;
}

/* The stack trace key as our location ids in jp->exp: returns the index of its length (the ids
 * follow), or -1 on error. */
static ssize_t stack_locations(struct dec *d, struct jprof *jp, uint64_t key)
{
	uint64_t sk, *m, n, i;
	uint32_t want_st[2] = { want_id(d, "truncated"), want_id(d, "frames") };
	uint32_t want_fr[2] = { want_id(d, "method"), want_id(d, "lineNumber") };
	const struct jclass *c;
	struct cur r;
	size_t at, depth = 0, f;
	int truncated = 0;

	if (map_key(key, &sk) < 0)
		return -1;
	m = u64map_get(&jp->stacks, sk);
	if (m)
		return (ssize_t)*m - 1;
	if (jp->stacks.count >= d->lim->max_stacks)
		return decode_limit_exceeded(d->err, "jfr", "stack traces", "stacks", d->lim->max_stacks), -2;
	ALLOC_GROW(jp->exp, jp->nexp + 1, jp->exp_cap);
	at = jp->nexp++;
	jp->exp[at] = 0;
	if (key && pool_entry(d, d->c_stack, key, &r) == 0) {
		c = &d->classes[d->c_stack];
		for (f = 0; f < c->nfields; f++) {
			const struct jfield *fd = &d->fields[c->first + f];

			if (fd->name == want_st[0] && !fd->array) {
				struct jv v;

				if (read_field(d, &r, fd, &v, 0) < 0)
					return -1;
				truncated = v.kind == V_INT && v.u;
				continue;
			}
			if (fd->name != want_st[1] || !fd->array) {
				if (skip_field(d, &r, fd, 0) < 0)
					return -1;
				continue;
			}
			if (rd_varint(&r, &n) < 0 || n > (uint64_t)(r.end - r.p))
				return -1;
			for (i = 0; i < n; i++) {
				struct jv fv[2];
				uint32_t fn = 0, loc;

				if (fd->cp) {
					uint64_t fk;
					struct cur fr;

					if (rd_varint(&r, &fk) < 0)
						return -1;
					if (pool_entry(d, d->c_frame, fk, &fr) < 0 ||
					    read_fields(d, &fr, fd->cls, want_fr, 2, fv, 0) < 0)
						return -1;
				} else if (read_fields(d, &r, fd->cls, want_fr, 2, fv, 0) < 0) {
					return -1;
				}
				if (fv[0].kind == V_REF)
					fn = method_function(d, jp, fv[0].u);
				if (++depth > d->lim->max_depth)
					return decode_limit_exceeded(d->err, "jfr", "frames in one stack trace",
								     "depth", d->lim->max_depth), -2;
				loc = profile_intern_location(jp->p, 0, 0, fn,
							      fv[1].kind == V_INT ? (int64_t)(int32_t)fv[1].u : 0);
				ALLOC_GROW(jp->exp, jp->nexp + 1, jp->exp_cap);
				jp->exp[jp->nexp++] = loc;
			}
		}
	}
	if (truncated) {
		uint32_t fn = profile_intern_function(jp->p, FRAME_SPECIAL, "[truncated]", NULL, NULL, 0);

		ALLOC_GROW(jp->exp, jp->nexp + 1, jp->exp_cap);
		jp->exp[jp->nexp++] = profile_intern_location(jp->p, 0, 0, fn, 0);
	}
	jp->exp[at] = (uint32_t)(jp->nexp - at - 1);
	u64map_put(&jp->stacks, sk, at + 1);
	return (ssize_t)at;
}

/* The thread's name (javaName, else osName) as an id in d->text, 0 when unknown. */
static uint32_t thread_name(struct dec *d, uint64_t key)
{
	uint64_t tk, *m;
	uint32_t want[2] = { want_id(d, "javaName"), want_id(d, "osName") }, id = 0;
	struct jv v[2];
	struct cur r;

	if (map_key(key, &tk) < 0)
		return 0;
	m = u64map_get(&d->thread_text, tk);
	if (m)
		return (uint32_t)*m;
	if (pool_entry(d, d->c_thread, key, &r) == 0 &&
	    read_fields(d, &r, (uint32_t)d->c_thread, want, 2, v, 0) == 0) {
		if (string_value(d, &v[0]) == 0 && d->scratch.len)
			id = strtab_intern_len(d->text, d->scratch.data, d->scratch.len);
		else if (string_value(d, &v[1]) == 0 && d->scratch.len)
			id = strtab_intern_len(d->text, d->scratch.data, d->scratch.len);
	}
	u64map_put(&d->thread_text, tk, id);
	return id;
}

static uint64_t ticks_to_ns(const struct dec *d, uint64_t ticks)
{
	unsigned __int128 ns;

	if ((int64_t)ticks <= 0 || !d->ticks_per_sec)
		return 0;
	ns = (unsigned __int128)ticks * 1000000000u / d->ticks_per_sec;
	return ns > INT64_MAX ? INT64_MAX : (uint64_t)ns;
}

/* jdk.ActiveSetting: keep the period of jdk.ExecutionSample ("10 ms", "20 ms", ...). */
static void active_setting(struct dec *d, struct cur *r, uint32_t cls, int64_t sample_cls_id)
{
	uint32_t want[3] = { want_id(d, "id"), want_id(d, "name"), want_id(d, "value") };
	struct jv v[3];
	char text[64], *end;
	double x;

	if (sample_cls_id < 0 || read_fields(d, r, cls, want, 3, v, 0) < 0 || v[0].kind != V_INT ||
	    v[0].u != (uint64_t)sample_cls_id || string_value(d, &v[1]) < 0 || !d->scratch.data ||
	    strcmp(d->scratch.data, "period") || string_value(d, &v[2]) < 0 || !d->scratch.data)
		return;
	snprintf(text, sizeof(text), "%s", d->scratch.data);
	x = strtod(text, &end);
	while (*end == ' ')
		end++;
	if (!(x > 0))
		return;
	if (!strcmp(end, "ms"))
		x *= 1e6;
	else if (!strcmp(end, "us"))
		x *= 1e3;
	else if (!strcmp(end, "s"))
		x *= 1e9;
	else if (strcmp(end, "ns"))
		return;
	if (x >= 1e3 && x <= 1e12)
		d->period_ns = (uint64_t)x;
}

struct ev_layout {
	int32_t cls;      /* class index of the event type, -1 when absent */
	uint32_t want[5]; /* stackTrace, thread, value field, duration, contextId */
};

static int read_event(struct dec *d, const struct ev_layout *lay, size_t kind, struct cur *r)
{
	const struct kind *k = &kinds[kind];
	struct jv v[5];
	struct profile_label labels[1 + 64];
	size_t nlabels = 0, which;
	uint32_t comm;

	if (read_fields(d, r, (uint32_t)lay->cls, lay->want, 5, v, 0) < 0)
		return MSG(d, -EBADMSG, "malformed %s event", k->event);
	/* The request's memory and time (lib/budget.h). */
	if (decode_check(d->err, "jfr") < 0)
		return budget_failed();
	d->out->events++;
	comm = v[1].kind == V_REF ? thread_name(d, v[1].u) : 0;
	for (which = 0; which < 2 && k->types[which]; which++) {
		struct jprof *jp = jprof_of(d, kind, (int)which);
		int64_t value = 1;
		ssize_t at;
		size_t before, nbefore, j;

		if (k->value[which] == VAL_FIELD)
			value = v[2].kind == V_INT && (int64_t)v[2].u > 0 ? (int64_t)v[2].u : 0;
		else if (k->value[which] == VAL_DURATION)
			value = (int64_t)ticks_to_ns(d, v[3].kind == V_INT ? v[3].u : 0);
		at = stack_locations(d, jp, v[0].kind == V_REF ? v[0].u : 0);
		if (at < 0)
			return at == -2 ? -E2BIG : MSG(d, -EBADMSG, "malformed stack trace in a %s event",
							  k->event);
		nlabels = 0;
		if (comm) {
			labels[nlabels].key = profile_str(jp->p, "comm");
			labels[nlabels].str = profile_str(jp->p, strtab_get(d->text, comm));
			labels[nlabels++].num = 0;
		}
		if (d->labels && v[4].kind == V_INT && v[4].u) {
			uint64_t ck, *ci;

			if (map_key(v[4].u, &ck) == 0 && (ci = u64map_get(&d->labels->contexts, ck))) {
				const struct jfr_labels *l = d->labels;

				for (j = 0; j < l->ctx[*ci].n && nlabels < sizeof(labels) / sizeof(labels[0]); j++) {
					const uint64_t *pr = l->pairs + l->ctx[*ci].first + 2 * j;

					labels[nlabels].key = profile_str(jp->p, strtab_get(l->strs, (uint32_t)pr[0]));
					labels[nlabels].str = profile_str(jp->p, strtab_get(l->strs, (uint32_t)pr[1]));
					labels[nlabels++].num = 0;
				}
			}
		}
		before = jp->p->loc_pool_len;
		nbefore = jp->p->nsamples;
		profile_add_sample(jp->p, jp->exp + at + 1, jp->exp[at], labels, nlabels, value);
		d->frames += jp->p->loc_pool_len - before;
		d->distinct += jp->p->nsamples - nbefore;
		if (d->distinct > d->lim->max_samples)
			return decode_limit_exceeded(d->err, "jfr", "samples", "samples",
						     d->lim->max_samples);
		if (d->frames > d->lim->max_frames)
			return decode_limit_exceeded(d->err, "jfr", "frames", "frames", d->lim->max_frames);
	}
	return 0;
}

static void chunk_reset(struct dec *d)
{
	size_t i;

	for (i = 0; i < d->nclasses; i++) {
		if (d->classes[i].has_pool)
			u64map_release(&d->classes[i].pool);
	}
	d->nclasses = 0;
	d->nfields = 0;
	u64map_release(&d->class_ids);
	u64map_init(&d->class_ids);
	u64map_release(&d->method_text);
	u64map_init(&d->method_text);
	u64map_release(&d->thread_text);
	u64map_init(&d->thread_text);
	strtab_free(d->mstr);
	d->mstr = strtab_new();
	xfree(d->mstr_ids);
	d->mstr_ids = NULL;
	d->nmstr = 0;
	for (i = 0; i < NPROFILES; i++) {
		struct jprof *jp = &d->prof[i];

		if (!jp->p)
			continue;
		/* Keys are per chunk: the memos start over; the profile keeps what it has. */
		u64map_release(&jp->stacks);
		u64map_init(&jp->stacks);
		u64map_release(&jp->methods);
		u64map_init(&jp->methods);
		jp->nexp = 0;
	}
}

static int decode_chunk(struct dec *d, const uint8_t *chunk, size_t avail, size_t *used)
{
	struct ev_layout lay[NKINDS], setting;
	uint64_t size, meta_off, start_ns, dur_ns, flags, type;
	int64_t sample_cls_id = -1;
	const uint8_t *p;
	size_t k;
	int rc;

	if (avail < CHUNK_HEADER || memcmp(chunk, "FLR\0", 4))
		return MSG(d, -EBADMSG, "not a JFR chunk (no FLR magic)");
	if (chunk[4] != 0 || (chunk[5] != 1 && chunk[5] != 2))
		return MSG(d, -EBADMSG, "unsupported JFR version %u.%u", chunk[4] << 8 | chunk[5],
			   chunk[6] << 8 | chunk[7]);
	size = be64(chunk + 8);
	meta_off = be64(chunk + 24);
	start_ns = be64(chunk + 32);
	dur_ns = be64(chunk + 40);
	d->ticks_per_sec = be64(chunk + 56);
	flags = be64(chunk + 60) & 0xffffffffu; /* the 4 bytes at 64 */
	if (!size)
		return MSG(d, -EBADMSG, "chunk is still being written (size 0): dump the recording first");
	if (size < CHUNK_HEADER || size > avail)
		return MSG(d, -EBADMSG, "chunk of %" PRIu64 " bytes, but %zu are left", size, avail);
	if (!(flags & 1))
		return MSG(d, -EBADMSG, "chunk without compressed integers is not supported");
	/* Times in the year 2116 at most keep all sums below 2^63. */
	if (start_ns > (UINT64_MAX >> 2) || dur_ns > (UINT64_MAX >> 2))
		return MSG(d, -EBADMSG, "implausible chunk start time or duration");
	chunk_reset(d);
	d->base = chunk;
	d->end = chunk + size;
	*used = (size_t)size;
	rc = parse_metadata(d, meta_off);
	if (rc < 0)
		return rc;

	/* Pass 2: event headers; constant pools indexed. */
	for (p = chunk + CHUNK_HEADER; p < d->end;) {
		struct cur r = { p, d->end };

		if (rd_varint(&r, &size) < 0 || size < 2 || size > (uint64_t)(d->end - p) ||
		    rd_varint(&r, &type) < 0)
			return MSG(d, -EBADMSG, "malformed event header at offset %d", off_of(d, p));
		if (type == EV_CONSTANTS) {
			rc = index_pools(d, p, p + size);
			if (rc < 0)
				return rc;
		}
		p += size;
	}

	/* Pass 3: the events of interest. */
	for (k = 0; k < NKINDS; k++) {
		size_t f;
		const struct jclass *c;

		lay[k].cls = class_named(d, kinds[k].event);
		if (lay[k].cls < 0)
			continue;
		c = &d->classes[lay[k].cls];
		if (c->prim != P_STRUCT) {
			lay[k].cls = -1;
			continue;
		}
		lay[k].want[0] = want_id(d, "stackTrace");
		lay[k].want[1] = want_id(d, kinds[k].thread);
		lay[k].want[2] = kinds[k].field ? want_id(d, kinds[k].field) : UINT32_MAX;
		lay[k].want[3] = want_id(d, "duration");
		lay[k].want[4] = want_id(d, "contextId");
		if (k == 0)
			sample_cls_id = c->id;
		/* A pool reference to the stack trace needs the pools to resolve it. */
		for (f = 0; f < c->nfields; f++) {
			const struct jfield *fd = &d->fields[c->first + f];

			if (fd->name == lay[k].want[0] && (d->c_stack < 0 || !fd->cp))
				lay[k].want[0] = UINT32_MAX;
		}
	}
	setting.cls = class_named(d, "jdk.ActiveSetting");
	for (p = chunk + CHUNK_HEADER; p < d->end;) {
		struct cur r = { p, d->end };

		rd_varint(&r, &size);
		rd_varint(&r, &type);
		r.end = p + size;
		for (k = 0; k < NKINDS; k++) {
			if (lay[k].cls >= 0 && (uint64_t)d->classes[lay[k].cls].id == type) {
				rc = read_event(d, &lay[k], k, &r);
				if (rc < 0)
					return rc;
				break;
			}
		}
		if (k == NKINDS && setting.cls >= 0 && (uint64_t)d->classes[setting.cls].id == type &&
		    d->classes[setting.cls].prim == P_STRUCT)
			active_setting(d, &r, (uint32_t)setting.cls, sample_cls_id);
		p += size;
	}
	if (d->out->chunks == 0 || (int64_t)start_ns < d->out->start_ns) {
		int64_t end = d->out->chunks ? d->out->start_ns + d->out->duration_ns : 0;

		d->out->start_ns = (int64_t)start_ns;
		if (end > d->out->start_ns)
			d->out->duration_ns = end - d->out->start_ns;
	}
	if ((int64_t)(start_ns + dur_ns) - d->out->start_ns > d->out->duration_ns)
		d->out->duration_ns = (int64_t)(start_ns + dur_ns) - d->out->start_ns;
	d->out->chunks++;
	return 0;
}

int jfr_is(const void *data, size_t len)
{
	return len >= 4 && !memcmp(data, "FLR\0", 4);
}

void jfr_result_release(struct jfr_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nprofiles; i++)
		profile_free(r->profiles[i].prof);
	xfree(r->profiles);
	memset(r, 0, sizeof(*r));
}

int jfr_decode(const void *data, size_t len, const struct decode_limits *lim_in,
	       const struct jfr_labels *labels, struct jfr_result *out, struct errmsg *err)
{
	const struct decode_limits *lim = decode_limits_or_default(lim_in);
	struct buf inflated;
	struct dec d;
	const uint8_t *p = data;
	size_t i, used = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&d, 0, sizeof(d));
	buf_init(&inflated, lim->max_inflated);
	d.lim = lim;
	d.labels = labels;
	d.err = err;
	d.out = out;
	d.text = strtab_new();
	d.mstr = strtab_new();
	buf_init(&d.scratch, 1u << 20);
	u64map_init(&d.class_ids);
	u64map_init(&d.method_text);
	u64map_init(&d.thread_text);
	if (gzip_is(p, len)) {
		rc = gzip_decompress(p, len, lim->max_inflated, &inflated, err);
		if (rc < 0)
			goto cleanup;
		p = (const uint8_t *)inflated.data;
		len = inflated.len;
	} else if (len > lim->max_inflated) {
		rc = decode_limit_exceeded(err, "jfr", "bytes", "inflated", lim->max_inflated);
		goto cleanup;
	}
	if (!jfr_is(p, len)) {
		rc = MSG(&d, -EBADMSG, "not a JFR recording (no FLR magic)");
		goto cleanup;
	}
	while (len) {
		rc = decode_chunk(&d, p, len, &used);
		if (rc < 0)
			goto cleanup;
		p += used;
		len -= used;
	}
	out->profiles = xcalloc(NPROFILES, sizeof(*out->profiles));
	for (i = 0; i < NPROFILES; i++) {
		struct jprof *jp = &d.prof[i];
		const struct kind *k = &kinds[i / 2];
		struct jfr_profile *o;

		if (!jp->p)
			continue;
		o = &out->profiles[out->nprofiles++];
		o->type = k->types[i % 2];
		o->units = k->units[i % 2];
		o->prof = jp->p;
		jp->p = NULL;
		o->prof->time_nanos = out->start_ns;
		o->prof->duration_nanos = out->duration_ns;
		if (i == 0 && d.period_ns) {
			o->prof->period = (int64_t)d.period_ns;
			o->sample_rate = (uint32_t)(1e9 / (double)d.period_ns + 0.5);
		}
	}
cleanup:
	if (rc < 0)
		jfr_result_release(out);
	chunk_reset(&d);
	for (i = 0; i < NPROFILES; i++) {
		profile_free(d.prof[i].p);
		u64map_release(&d.prof[i].stacks);
		u64map_release(&d.prof[i].methods);
		xfree(d.prof[i].exp);
	}
	u64map_release(&d.class_ids);
	u64map_release(&d.method_text);
	u64map_release(&d.thread_text);
	strtab_free(d.mstr);
	strtab_free(d.text);
	xfree(d.mstr_ids);
	xfree(d.classes);
	xfree(d.fields);
	buf_release(&d.scratch);
	buf_release(&inflated);
	return rc < 0 ? rc : 0;
}
