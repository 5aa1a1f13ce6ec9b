/* otlp.c: OTLP profiles encoding and decoding (see otlp.h; field numbers below are those of
 * opentelemetry-proto v1.11.0; docs/formats.md has the conventions).
 *
 * Encoding interns every dictionary entry by its serialized bytes: each table is a strtab of
 * encoded messages, so equal entries share one index and the zero value (an empty message) is
 * index 0, as the dictionary requires. Profiles are written first (they name dictionary
 * indexes), the dictionary last.
 *
 * Decoding reads the dictionary once into compact arrays (validating every index), then builds
 * one struct profile per Profile message, interning into it only what its samples use; per-
 * profile memo arrays are stamped with a generation so that a request of many profiles does not
 * clear them for each. */
#include "profile/otlp.h"
#include "lib/alloc.h"
#include "lib/json.h"
#include "lib/strtab.h"
#include "profile/gzip.h"
#include "profile/protobuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ExportProfilesServiceRequest */
enum { REQ_RESOURCE_PROFILES = 1, REQ_DICTIONARY = 2 };
/* ProfilesDictionary */
enum {
	DICT_MAPPING = 1,
	DICT_LOCATION = 2,
	DICT_FUNCTION = 3,
	DICT_LINK = 4,
	DICT_STRING = 5,
	DICT_ATTRIBUTE = 6,
	DICT_STACK = 7,
};
enum { RP_RESOURCE = 1, RP_SCOPE_PROFILES = 2 };     /* ResourceProfiles */
enum { RES_ATTRIBUTES = 1 };                          /* Resource */
enum { KV_KEY = 1, KV_VALUE = 2, KV_KEY_STRINDEX = 3 }; /* KeyValue */
enum {                                                /* AnyValue */
	ANY_STRING = 1,
	ANY_BOOL = 2,
	ANY_INT = 3,
	ANY_DOUBLE = 4,
	ANY_ARRAY = 5,
	ANY_KVLIST = 6,
	ANY_BYTES = 7,
	ANY_STRINDEX = 8,
};
enum { SP_SCOPE = 1, SP_PROFILES = 2 };               /* ScopeProfiles */
enum { SCOPE_NAME = 1, SCOPE_VERSION = 2 };           /* InstrumentationScope */
enum {                                                /* Profile */
	PROF_SAMPLE_TYPE = 1,
	PROF_SAMPLES = 2,
	PROF_TIME = 3,
	PROF_DURATION = 4,
	PROF_PERIOD_TYPE = 5,
	PROF_PERIOD = 6,
	PROF_ATTRIBUTES = 11,
};
enum { VT_TYPE = 1, VT_UNIT = 2 };                    /* ValueType */
enum {                                                /* Sample */
	SAMPLE_STACK = 1,
	SAMPLE_ATTRIBUTES = 2,
	SAMPLE_LINK = 3,
	SAMPLE_VALUES = 4,
	SAMPLE_TIMESTAMPS = 5,
};
enum {                                                /* Mapping */
	MAP_START = 1,
	MAP_LIMIT = 2,
	MAP_OFFSET = 3,
	MAP_FILENAME = 4,
	MAP_ATTRIBUTES = 5,
};
enum { STACK_LOCATIONS = 1 };                         /* Stack */
enum { LOC_MAPPING = 1, LOC_ADDRESS = 2, LOC_LINES = 3, LOC_ATTRIBUTES = 4 }; /* Location */
enum { LINE_FUNCTION = 1, LINE_LINE = 2 };            /* Line */
enum { FN_NAME = 1, FN_SYSTEM_NAME = 2, FN_FILENAME = 3, FN_START_LINE = 4 }; /* Function */
enum { KVU_KEY = 1, KVU_VALUE = 2 };                  /* KeyValueAndUnit */
enum { LINK_TRACE_ID = 1, LINK_SPAN_ID = 2 };         /* Link */
enum { RESP_PARTIAL = 1 };                            /* ExportProfilesServiceResponse */
enum { PARTIAL_REJECTED = 1, PARTIAL_MESSAGE = 2 };   /* ExportProfilesPartialSuccess */
enum { STATUS_CODE = 1, STATUS_MESSAGE = 2 };         /* google.rpc.Status */

#define NKINDS 4

/* profile.frame.type values per enum frame_kind (markers get none), then, for runtime frames,
 * per language of their file (profile_file_lang(); one the file does not tell gets none). */
#define NFRAME_TYPES (NKINDS + PROFILE_NLANGS)
static const char *const frame_types[NFRAME_TYPES] = {
	[FRAME_NATIVE] = "native",
	[FRAME_KERNEL] = "kernel",
	[NKINDS + PROFILE_LANG_PYTHON] = "cpython",
	[NKINDS + PROFILE_LANG_JS] = "v8js",
	[NKINDS + PROFILE_LANG_JAVA] = "jvm",
	[NKINDS + PROFILE_LANG_RUBY] = "ruby",
	[NKINDS + PROFILE_LANG_PHP] = "php",
	[NKINDS + PROFILE_LANG_PERL] = "perl",
};

/* The frame_types index of a frame of function f (-1: none). */
static int frame_type_of(const struct profile *p, const struct profile_function *f)
{
	const char *file;

	if (f->kind != FRAME_PYTHON)
		return f->kind < NKINDS ? f->kind : -1;
	file = f->filename ? profile_get_str(p, f->filename) : "";
	return NKINDS + (int)profile_file_lang(file, strlen(file));
}

/* Label keys of the model that travel under a semantic-convention name. */
static const char *const key_map[][2] = {
	{ "comm", "thread.name" },
	{ "pid", "process.pid" },
};
#define NKEYMAP (sizeof(key_map) / sizeof(key_map[0]))

/* ------------------------------------------------------------------ encoding */

struct enc {
	struct strtab *strs;                 /* string_table */
	struct strtab *tab[DICT_STACK + 1];  /* serialized entries per dictionary field */
	struct buf tmp;
	uint32_t frame_attr[NFRAME_TYPES];   /* attribute index of each frame type */
	uint32_t *str_of;                    /* per profile: model string id -> string index + 1 */
	size_t str_of_cap;
};

static uint32_t enc_str(struct enc *e, const char *s)
{
	return strtab_intern(e->strs, s);
}

/* The dictionary index of the message serialized in e->tmp. */
static uint32_t enc_intern(struct enc *e, int table)
{
	return strtab_intern_len(e->tab[table], e->tmp.data ? e->tmp.data : "", e->tmp.len);
}

static struct protobuf_writer enc_begin(struct enc *e)
{
	struct protobuf_writer w = PROTOBUF_WRITER(&e->tmp);

	buf_reset(&e->tmp);
	return w;
}

/* Our string id -> string table index (per profile, memoized). */
static uint32_t enc_pstr(struct enc *e, const struct profile *p, uint32_t id)
{
	if (!id)
		return 0;
	if (!e->str_of[id])
		e->str_of[id] = enc_str(e, profile_get_str(p, id)) + 1;
	return e->str_of[id] - 1;
}

static void put_any_str(struct protobuf_writer *w, uint32_t field, const char *s)
{
	size_t m = protobuf_begin(w, field);

	protobuf_put_bytes(w, ANY_STRING, s, strlen(s));
	protobuf_end(w, m);
}

static void put_any_int(struct protobuf_writer *w, uint32_t field, int64_t v)
{
	size_t m = protobuf_begin(w, field);

	protobuf_put_uint64(w, ANY_INT, (uint64_t)v);
	protobuf_end(w, m);
}

/* Attribute table index of key = string value (or integer value when str is NULL). */
static uint32_t enc_attr(struct enc *e, const char *key, const char *str, int64_t num)
{
	struct protobuf_writer w = enc_begin(e);

	protobuf_put_uint64_nz(&w, KVU_KEY, enc_str(e, key));
	if (str)
		put_any_str(&w, KVU_VALUE, str);
	else
		put_any_int(&w, KVU_VALUE, num);
	return w.err ? 0 : enc_intern(e, DICT_ATTRIBUTE);
}

static void put_packed(struct protobuf_writer *w, uint32_t field, const uint32_t *v, size_t n)
{
	size_t m, i;

	if (!n)
		return;
	m = protobuf_begin(w, field);
	for (i = 0; i < n; i++)
		protobuf_put_raw_varint(w, v[i]);
	protobuf_end(w, m);
}

static uint32_t enc_mapping(struct enc *e, const struct profile *p, const struct profile_mapping *mp)
{
	uint32_t attr = 0, file = enc_pstr(e, p, mp->file);
	struct protobuf_writer w;

	if (mp->build_id)
		attr = enc_attr(e, OTLP_BUILD_ID_GNU, profile_get_str(p, mp->build_id), 0);
	w = enc_begin(e);
	protobuf_put_uint64_nz(&w, MAP_START, mp->start);
	protobuf_put_uint64_nz(&w, MAP_LIMIT, mp->limit);
	protobuf_put_uint64_nz(&w, MAP_OFFSET, mp->offset);
	protobuf_put_uint64_nz(&w, MAP_FILENAME, file);
	put_packed(&w, MAP_ATTRIBUTES, &attr, attr ? 1 : 0);
	return w.err ? 0 : enc_intern(e, DICT_MAPPING);
}

static uint32_t enc_function(struct enc *e, const struct profile *p, const struct profile_function *f)
{
	uint32_t name = enc_pstr(e, p, f->name), sys = enc_pstr(e, p, f->system_name);
	uint32_t file = enc_pstr(e, p, f->filename);
	struct protobuf_writer w = enc_begin(e);

	protobuf_put_uint64_nz(&w, FN_NAME, name);
	protobuf_put_uint64_nz(&w, FN_SYSTEM_NAME, sys);
	protobuf_put_uint64_nz(&w, FN_FILENAME, file);
	protobuf_put_int64_nz(&w, FN_START_LINE, f->start_line);
	return w.err ? 0 : enc_intern(e, DICT_FUNCTION);
}

/* Encode one profile as a Profile message (field PROF of the ScopeProfiles being written). */
static void enc_profile(struct enc *e, struct protobuf_writer *w, const struct profile *p)
{
	uint32_t *map_idx = xcalloc(p->nmappings + 1, sizeof(*map_idx));
	uint32_t *fn_idx = xcalloc(p->nfunctions + 1, sizeof(*fn_idx));
	uint32_t *loc_idx = xcalloc(p->nlocations + 1, sizeof(*loc_idx));
	uint32_t *attrs = NULL, *stack = NULL;
	size_t attrs_cap = 0, stack_cap = 0, i, j, m, n;
	uint32_t nstr = strtab_count(p->strings);

	if (nstr + 1 > e->str_of_cap) {
		xfree(e->str_of);
		e->str_of_cap = nstr + 1;
		e->str_of = xmalloc(e->str_of_cap * sizeof(*e->str_of));
	}
	memset(e->str_of, 0, (nstr + 1) * sizeof(*e->str_of));

	for (i = 0; i < p->nmappings; i++)
		map_idx[i + 1] = enc_mapping(e, p, &p->mappings[i]);
	for (i = 0; i < p->nfunctions; i++)
		fn_idx[i + 1] = enc_function(e, p, &p->functions[i]);
	for (i = 0; i < p->nlocations; i++) {
		const struct profile_location *l = &p->locations[i];
		const struct profile_function *f =
			l->function && l->function <= p->nfunctions ? &p->functions[l->function - 1] : NULL;
		uint32_t mid = l->mapping <= p->nmappings ? map_idx[l->mapping] : 0;
		int kind = f ? frame_type_of(p, f) : (mid ? FRAME_NATIVE : -1);
		uint32_t attr = kind >= 0 && kind < NFRAME_TYPES ? e->frame_attr[kind] : 0;
		struct protobuf_writer lw = enc_begin(e);

		protobuf_put_uint64_nz(&lw, LOC_MAPPING, mid);
		protobuf_put_uint64_nz(&lw, LOC_ADDRESS, l->address);
		if (f) {
			m = protobuf_begin(&lw, LOC_LINES);
			protobuf_put_uint64_nz(&lw, LINE_FUNCTION, fn_idx[l->function]);
			protobuf_put_int64_nz(&lw, LINE_LINE, l->line);
			protobuf_end(&lw, m);
		}
		put_packed(&lw, LOC_ATTRIBUTES, &attr, attr ? 1 : 0);
		loc_idx[i + 1] = lw.err ? 0 : enc_intern(e, DICT_LOCATION);
	}

	m = protobuf_begin(w, SP_PROFILES);
	n = protobuf_begin(w, PROF_SAMPLE_TYPE);
	protobuf_put_uint64_nz(w, VT_TYPE, enc_pstr(e, p, p->sample_type));
	protobuf_put_uint64_nz(w, VT_UNIT, enc_pstr(e, p, p->sample_unit));
	protobuf_end(w, n);
	for (i = 0; i < p->nsamples && !w->err; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const struct profile_label *labels = profile_sample_labels(p, s);
		uint32_t stack_index;
		struct protobuf_writer sw;
		size_t k;

		ALLOC_GROW(stack, s->nlocs + 1, stack_cap);
		ALLOC_GROW(attrs, s->nlabels + 1, attrs_cap);
		for (j = k = 0; j < s->nlocs; j++)
			stack[k++] = locs[j] <= p->nlocations ? loc_idx[locs[j]] : 0;
		sw = enc_begin(e);
		put_packed(&sw, STACK_LOCATIONS, stack, k);
		stack_index = sw.err ? 0 : enc_intern(e, DICT_STACK);
		for (j = k = 0; j < s->nlabels; j++) {
			const char *key = profile_get_str(p, labels[j].key);
			size_t q;

			for (q = 0; q < NKEYMAP; q++) {
				if (!strcmp(key, key_map[q][0])) {
					key = key_map[q][1];
					break;
				}
			}
			attrs[k++] = enc_attr(e, key,
					      labels[j].str ? profile_get_str(p, labels[j].str) : NULL,
					      labels[j].num);
		}
		n = protobuf_begin(w, PROF_SAMPLES);
		protobuf_put_uint64_nz(w, SAMPLE_STACK, stack_index);
		put_packed(w, SAMPLE_ATTRIBUTES, attrs, k);
		{
			size_t v = protobuf_begin(w, SAMPLE_VALUES);

			protobuf_put_raw_varint(w, (uint64_t)s->value);
			protobuf_end(w, v);
		}
		protobuf_end(w, n);
	}
	if (p->time_nanos)
		protobuf_put_fixed64(w, PROF_TIME, (uint64_t)p->time_nanos);
	protobuf_put_uint64_nz(w, PROF_DURATION, (uint64_t)p->duration_nanos);
	n = protobuf_begin(w, PROF_PERIOD_TYPE);
	protobuf_put_uint64_nz(w, VT_TYPE, enc_pstr(e, p, p->period_type));
	protobuf_put_uint64_nz(w, VT_UNIT, enc_pstr(e, p, p->period_unit));
	protobuf_end(w, n);
	protobuf_put_int64_nz(w, PROF_PERIOD, p->period);
	protobuf_end(w, m);
	xfree(map_idx);
	xfree(fn_idx);
	xfree(loc_idx);
	xfree(attrs);
	xfree(stack);
}

static void put_table(struct protobuf_writer *w, uint32_t field, const struct strtab *t)
{
	uint32_t i, n = strtab_count(t);

	for (i = 0; i < n && !w->err; i++)
		protobuf_put_bytes(w, field, strtab_get(t, i), strtab_len(t, i));
}

int otlp_encode(const struct otlp_resource *res, size_t nres, struct buf *out)
{
	struct protobuf_writer w = PROTOBUF_WRITER(out);
	struct enc e;
	size_t start_len = out->len, r, i, m, n, q;
	int t, k;

	memset(&e, 0, sizeof(e));
	buf_init(&e.tmp, BUF_UNLIMITED);
	e.strs = strtab_new();
	for (t = 1; t <= DICT_STACK; t++)
		e.tab[t] = strtab_new();
	for (k = 0; k < NFRAME_TYPES; k++)
		e.frame_attr[k] = frame_types[k] ? enc_attr(&e, OTLP_FRAME_TYPE, frame_types[k], 0) : 0;

	for (r = 0; r < nres && !w.err; r++) {
		const struct otlp_resource *rs = &res[r];

		m = protobuf_begin(&w, REQ_RESOURCE_PROFILES);
		n = protobuf_begin(&w, RP_RESOURCE);
		for (i = 0; i < rs->nattrs; i++) {
			const struct otlp_attr *a = &rs->attrs[i];

			q = protobuf_begin(&w, RES_ATTRIBUTES);
			protobuf_put_bytes(&w, KV_KEY, a->key, strlen(a->key));
			if (a->str)
				put_any_str(&w, KV_VALUE, a->str);
			else
				put_any_int(&w, KV_VALUE, a->num);
			protobuf_end(&w, q);
		}
		protobuf_end(&w, n);
		n = protobuf_begin(&w, RP_SCOPE_PROFILES);
		if (rs->scope_name || rs->scope_version) {
			q = protobuf_begin(&w, SP_SCOPE);
			if (rs->scope_name)
				protobuf_put_bytes(&w, SCOPE_NAME, rs->scope_name, strlen(rs->scope_name));
			if (rs->scope_version)
				protobuf_put_bytes(&w, SCOPE_VERSION, rs->scope_version,
						   strlen(rs->scope_version));
			protobuf_end(&w, q);
		}
		for (i = 0; i < rs->nprofiles && !w.err; i++)
			enc_profile(&e, &w, rs->profiles[i]);
		protobuf_end(&w, n);
		protobuf_end(&w, m);
	}

	m = protobuf_begin(&w, REQ_DICTIONARY);
	put_table(&w, DICT_MAPPING, e.tab[DICT_MAPPING]);
	put_table(&w, DICT_LOCATION, e.tab[DICT_LOCATION]);
	put_table(&w, DICT_FUNCTION, e.tab[DICT_FUNCTION]);
	{
		/* link_table[0]: the zero link, with ids of the lengths strict codecs expect */
		static const uint8_t zero[16];

		n = protobuf_begin(&w, DICT_LINK);
		protobuf_put_bytes(&w, LINK_TRACE_ID, zero, 16);
		protobuf_put_bytes(&w, LINK_SPAN_ID, zero, 8);
		protobuf_end(&w, n);
	}
	put_table(&w, DICT_STRING, e.strs);
	put_table(&w, DICT_ATTRIBUTE, e.tab[DICT_ATTRIBUTE]);
	put_table(&w, DICT_STACK, e.tab[DICT_STACK]);
	protobuf_end(&w, m);

	strtab_free(e.strs);
	for (t = 1; t <= DICT_STACK; t++)
		strtab_free(e.tab[t]);
	buf_release(&e.tmp);
	xfree(e.str_of);
	if (w.err) {
		out->len = start_len;
		if (out->data)
			out->data[start_len] = '\0';
	}
	return w.err;
}

int otlp_encode_response(int64_t rejected, const char *msg, int json, struct buf *out)
{
	struct protobuf_writer w = PROTOBUF_WRITER(out);
	size_t m;

	if (!msg)
		msg = "";
	if (json) {
		if (!rejected && !*msg)
			return buf_puts(out, "{}");
		buf_printf(out, "{\"partialSuccess\":{\"rejectedProfiles\":\"%" PRId64 "\"", rejected);
		if (*msg) {
			buf_puts(out, ",\"errorMessage\":");
			json_str(out, msg);
		}
		return buf_puts(out, "}}");
	}
	if (!rejected && !*msg)
		return 0;
	m = protobuf_begin(&w, RESP_PARTIAL);
	protobuf_put_int64_nz(&w, PARTIAL_REJECTED, rejected);
	if (*msg)
		protobuf_put_bytes(&w, PARTIAL_MESSAGE, msg, strlen(msg));
	protobuf_end(&w, m);
	return w.err;
}

int otlp_encode_status(int code, const char *msg, int json, struct buf *out)
{
	struct protobuf_writer w = PROTOBUF_WRITER(out);

	if (json) {
		buf_printf(out, "{\"code\":%d,\"message\":", code);
		json_str(out, msg);
		return buf_puts(out, "}");
	}
	protobuf_put_int64_nz(&w, STATUS_CODE, code);
	protobuf_put_bytes(&w, STATUS_MESSAGE, msg, strlen(msg));
	return w.err;
}

int otlp_decode_response(const void *data, size_t len, int64_t *rejected, char *msg,
			 size_t msglen)
{
	struct protobuf_reader r = PROTOBUF_READER(data, len), pr;
	struct protobuf_field f, g;
	int rc;

	*rejected = 0;
	if (msglen)
		msg[0] = '\0';
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num != RESP_PARTIAL)
			continue;
		if (f.wire != PROTOBUF_LEN)
			return -EBADMSG;
		pr = (struct protobuf_reader)PROTOBUF_READER(f.data, f.len);
		while ((rc = protobuf_next(&pr, &g)) > 0) {
			if (g.num == PARTIAL_REJECTED && g.wire == PROTOBUF_VARINT)
				*rejected = (int64_t)g.u;
			else if (g.num == PARTIAL_MESSAGE && g.wire == PROTOBUF_LEN && msglen)
				snprintf(msg, msglen, "%.*s", (int)(g.len < msglen ? g.len : msglen - 1),
					 (const char *)g.data);
		}
		if (rc < 0)
			return -EBADMSG;
	}
	return rc < 0 ? -EBADMSG : 0;
}

/* ------------------------------------------------------------------ decoding */

struct span {
	const uint8_t *p;
	size_t len;
};

struct dattr {
	struct span key;
	struct span str; /* OTLP_STR */
	int64_t num;     /* OTLP_INT, OTLP_BOOL */
	double d;        /* OTLP_DOUBLE */
	uint8_t kind;
};

struct dmap {
	uint64_t start, limit, offset;
	uint32_t file;       /* string index */
	int32_t build_id;    /* attribute index of the best build id, -1 none */
	int8_t kernel;       /* file starts with "[kernel" */
};

struct dfn {
	uint32_t name, sys, file;
	int64_t start_line;
};

struct dline {
	uint32_t fn;
	int64_t line;
};

struct dloc {
	uint32_t map;
	uint64_t address;
	uint32_t lines_first, nlines;
	int8_t kind; /* from profile.frame.type, -1 when absent */
};

struct dstack {
	uint32_t first, n;
};

struct memo {
	uint32_t gen;
	uint32_t id;
};

/* A decoded attribute while decoding: its strings are ids in dec_priv.strs, turned into
 * pointers by finish() once the table stops growing. */
struct kv_id {
	uint32_t key, str;
	int64_t num;
	uint8_t kind;
};

struct dec_priv {
	struct strtab *strs; /* copies of decoded keys, values and scope names */
	struct kv_id *ids;
	struct otlp_kv *kvs; /* built by finish() */
	size_t nkvs, kvs_cap;
	size_t *res_kv_first; /* per resource */
	size_t *prof_kv_first; /* per profile */
	uint32_t *scope_ids;   /* per profile */
};

struct dec {
	const struct decode_limits *lim;
	struct errmsg *err;
	struct otlp_request *out;
	struct dec_priv *pv;

	struct span *dict_parts; /* the dictionary field may occur several times: merged */
	size_t ndict_parts, dict_parts_cap;

	struct span *strs;
	size_t nstrs;
	struct dmap *maps;
	size_t nmaps;
	struct dfn *fns;
	size_t nfns;
	struct dloc *locs;
	size_t nlocs;
	struct dline *lines;
	size_t nlines;
	struct dattr *attrs;
	size_t nattrs;
	struct dstack *stacks;
	size_t nstacks;
	uint32_t *stack_locs;
	size_t nstack_locs;

	/* per profile */
	struct profile *p;
	uint32_t gen;
	struct memo *m_str, *m_map, *m_loc, *m_fn; /* m_fn: NKINDS per function */
	uint32_t *exp;
	size_t nexp, exp_cap;
	uint32_t *stack;
	size_t stack_cap;
	struct profile_label *labels;
	size_t labels_cap;
	size_t frames;   /* frames of all profiles so far */
	size_t distinct; /* distinct samples of all profiles so far */
};

#define MSG(d, code, ...) errmsg_set((d)->err, (code), "otlp: " __VA_ARGS__)

static int bad(struct dec *d, const char *what)
{
	return MSG(d, -EBADMSG, "malformed %s", what);
}

static int need_wire(struct dec *d, const struct protobuf_field *f, int wire, const char *what)
{
	if (f->wire == wire)
		return 0;
	return MSG(d, -EBADMSG, "%s: field %u has wire type %u, expected %d", what, f->num, f->wire,
		   wire);
}

/* An index field (int32 on the wire) into a table of n entries. */
static int index_ok(struct dec *d, uint64_t v, size_t n, const char *table, const char *where,
		    size_t at, uint32_t *out)
{
	if (v >= n)
		return MSG(d, -EBADMSG, "%s %zu: %s index %" PRId64 " out of range (%zu entries)",
			   where, at, table, (int64_t)v, n);
	*out = (uint32_t)v;
	return 0;
}

static int span_eq(struct span s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len == n && !memcmp(s.p, lit, n);
}

/* Iterate the packed or unpacked index values of one field occurrence, checking each. */
static int each_index(struct dec *d, const struct protobuf_field *f, size_t n, const char *table,
		      const char *where, size_t at, uint32_t *out, size_t *nout, size_t max)
{
	struct protobuf_values it;
	uint64_t v;
	int rc;

	protobuf_values_init(&it, f);
	while ((rc = protobuf_values_next(&it, &v)) > 0) {
		uint32_t idx = 0;

		if (index_ok(d, v, n, table, where, at, &idx) < 0)
			return -EBADMSG;
		if (*nout >= max)
			return MSG(d, -E2BIG, "%s %zu: more than %zu %s indexes", where, at, max, table);
		if (out)
			out[*nout] = idx;
		(*nout)++;
	}
	return rc < 0 ? MSG(d, -EBADMSG, "%s %zu: malformed %s indexes", where, at, table) : 0;
}

/* AnyValue into a (the key is set by the caller). */
static int parse_any(struct dec *d, struct span m, struct dattr *a, const char *where, size_t at)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	int rc;

	a->kind = OTLP_OTHER;
	a->str.p = (const uint8_t *)"";
	a->str.len = 0;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case ANY_STRING:
			if (need_wire(d, &f, PROTOBUF_LEN, where) < 0)
				return -EBADMSG;
			a->kind = OTLP_STR;
			a->str.p = f.data;
			a->str.len = f.len;
			break;
		case ANY_STRINDEX: {
			uint32_t idx = 0;

			if (need_wire(d, &f, PROTOBUF_VARINT, where) < 0 ||
			    index_ok(d, f.u, d->nstrs, "string", where, at, &idx) < 0)
				return -EBADMSG;
			a->kind = OTLP_STR;
			a->str = d->strs[idx];
			break;
		}
		case ANY_BOOL:
		case ANY_INT:
			if (need_wire(d, &f, PROTOBUF_VARINT, where) < 0)
				return -EBADMSG;
			a->kind = f.num == ANY_BOOL ? OTLP_BOOL : OTLP_INT;
			a->num = f.num == ANY_BOOL ? (f.u != 0) : (int64_t)f.u;
			break;
		case ANY_DOUBLE:
			if (need_wire(d, &f, PROTOBUF_FIXED64, where) < 0)
				return -EBADMSG;
			a->kind = OTLP_DOUBLE;
			memcpy(&a->d, &f.u, sizeof(a->d));
			break;
		case ANY_ARRAY:
		case ANY_KVLIST:
		case ANY_BYTES:
			if (need_wire(d, &f, PROTOBUF_LEN, where) < 0)
				return -EBADMSG;
			a->kind = OTLP_OTHER;
			break;
		default:
			break;
		}
	}
	return rc < 0 ? MSG(d, -EBADMSG, "%s %zu: malformed value", where, at) : 0;
}

/* Pass 1 over the dictionary: count the entries of every table and check the caps. */
static int dict_count(struct dec *d)
{
	size_t counts[DICT_STACK + 1] = { 0 }, i;
	struct {
		int field;
		size_t cap;
		const char *what, *limit;
	} caps[] = {
		{ DICT_MAPPING, d->lim->max_mappings, "mappings", "mappings" },
		{ DICT_LOCATION, d->lim->max_locations, "locations", "locations" },
		{ DICT_FUNCTION, d->lim->max_functions, "functions", "functions" },
		{ DICT_STRING, d->lim->max_strings, "strings", "strings" },
		{ DICT_ATTRIBUTE, d->lim->max_strings, "attributes", "strings" },
		{ DICT_STACK, d->lim->max_stacks, "stacks", "stacks" },
	};

	for (i = 0; i < d->ndict_parts; i++) {
		struct protobuf_reader r = PROTOBUF_READER(d->dict_parts[i].p, d->dict_parts[i].len);
		struct protobuf_field f;
		int rc;

		while ((rc = protobuf_next(&r, &f)) > 0) {
			if (f.num < DICT_MAPPING || f.num > DICT_STACK)
				continue;
			if (need_wire(d, &f, PROTOBUF_LEN, "dictionary") < 0)
				return -EBADMSG;
			counts[f.num]++;
		}
		if (rc < 0)
			return bad(d, "dictionary");
	}
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		if (counts[caps[i].field] > caps[i].cap)
			return decode_limit_exceeded(d->err, "otlp", caps[i].what, caps[i].limit,
						     caps[i].cap);
	}
	d->nstrs = counts[DICT_STRING];
	d->nmaps = counts[DICT_MAPPING];
	d->nfns = counts[DICT_FUNCTION];
	d->nlocs = counts[DICT_LOCATION];
	d->nattrs = counts[DICT_ATTRIBUTE];
	d->nstacks = counts[DICT_STACK];
	/* Index 0 of each table means "none": an empty table still has it implicitly. */
	d->strs = xcalloc(d->nstrs + 1, sizeof(*d->strs));
	d->maps = xcalloc(d->nmaps + 1, sizeof(*d->maps));
	d->fns = xcalloc(d->nfns + 1, sizeof(*d->fns));
	d->locs = xcalloc(d->nlocs + 1, sizeof(*d->locs));
	d->attrs = xcalloc(d->nattrs + 1, sizeof(*d->attrs));
	d->stacks = xcalloc(d->nstacks + 1, sizeof(*d->stacks));
	d->m_str = xcalloc(d->nstrs + 1, sizeof(*d->m_str));
	d->m_map = xcalloc(d->nmaps + 1, sizeof(*d->m_map));
	d->m_loc = xcalloc(d->nlocs + 1, sizeof(*d->m_loc));
	d->m_fn = xcalloc((d->nfns + 1) * NKINDS, sizeof(*d->m_fn));
	for (i = 0; i <= d->nstrs; i++)
		d->strs[i].p = (const uint8_t *)"";
	return 0;
}

static int parse_attr(struct dec *d, struct span m, size_t at)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct dattr *a = &d->attrs[at];
	uint32_t key = 0;
	int rc;

	a->kind = OTLP_OTHER;
	a->str.p = (const uint8_t *)"";
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num == KVU_KEY) {
			if (need_wire(d, &f, PROTOBUF_VARINT, "attribute") < 0 ||
			    index_ok(d, f.u, d->nstrs, "string", "attribute", at, &key) < 0)
				return -EBADMSG;
		} else if (f.num == KVU_VALUE) {
			if (need_wire(d, &f, PROTOBUF_LEN, "attribute") < 0 ||
			    parse_any(d, (struct span){ f.data, f.len }, a, "attribute", at) < 0)
				return -EBADMSG;
		}
	}
	if (rc < 0)
		return MSG(d, -EBADMSG, "attribute %zu: malformed", at);
	a->key = d->strs[key];
	return 0;
}

static int parse_mapping(struct dec *d, struct span m, size_t at)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct dmap *mp = &d->maps[at];
	int best = 99, rc;
	static const char *const ids[] = {
		OTLP_BUILD_ID_GNU,
		"process.executable.build_id.go",
		"process.executable.build_id.htlhash",
	};

	mp->build_id = -1;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case MAP_START:
		case MAP_LIMIT:
		case MAP_OFFSET:
		case MAP_FILENAME:
			if (need_wire(d, &f, PROTOBUF_VARINT, "mapping") < 0)
				return -EBADMSG;
			if (f.num == MAP_START)
				mp->start = f.u;
			else if (f.num == MAP_LIMIT)
				mp->limit = f.u;
			else if (f.num == MAP_OFFSET)
				mp->offset = f.u;
			else if (index_ok(d, f.u, d->nstrs, "string", "mapping", at, &mp->file) < 0)
				return -EBADMSG;
			break;
		case MAP_ATTRIBUTES: {
			struct protobuf_values it;
			uint64_t v;
			size_t k;

			/* Build ids are the only mapping attributes used; the others are checked. */
			protobuf_values_init(&it, &f);
			while ((rc = protobuf_values_next(&it, &v)) > 0) {
				uint32_t idx = 0;
				const struct dattr *a;

				if (index_ok(d, v, d->nattrs, "attribute", "mapping", at, &idx) < 0)
					return -EBADMSG;
				a = &d->attrs[idx];
				for (k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
					if ((int)k < best && a->kind == OTLP_STR && a->str.len &&
					    span_eq(a->key, ids[k])) {
						best = (int)k;
						mp->build_id = (int32_t)idx;
					}
				}
			}
			if (rc < 0)
				return MSG(d, -EBADMSG, "mapping %zu: malformed attribute indexes", at);
			break;
		}
		default:
			break;
		}
	}
	if (rc < 0)
		return MSG(d, -EBADMSG, "mapping %zu: malformed", at);
	mp->kernel = d->strs[mp->file].len >= 7 && !memcmp(d->strs[mp->file].p, "[kernel", 7);
	return 0;
}

static int parse_function(struct dec *d, struct span m, size_t at)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct dfn *fn = &d->fns[at];
	int rc;

	while ((rc = protobuf_next(&r, &f)) > 0) {
		uint32_t *dst = NULL;

		switch (f.num) {
		case FN_NAME: dst = &fn->name; break;
		case FN_SYSTEM_NAME: dst = &fn->sys; break;
		case FN_FILENAME: dst = &fn->file; break;
		case FN_START_LINE:
			if (need_wire(d, &f, PROTOBUF_VARINT, "function") < 0)
				return -EBADMSG;
			fn->start_line = (int64_t)f.u;
			continue;
		default:
			continue;
		}
		if (need_wire(d, &f, PROTOBUF_VARINT, "function") < 0 ||
		    index_ok(d, f.u, d->nstrs, "string", "function", at, dst) < 0)
			return -EBADMSG;
	}
	return rc < 0 ? MSG(d, -EBADMSG, "function %zu: malformed", at) : 0;
}

static int frame_kind_of(struct span s)
{
	if (span_eq(s, "kernel"))
		return FRAME_KERNEL;
	if (span_eq(s, "cpython") || span_eq(s, "v8js") || span_eq(s, "jvm") || span_eq(s, "ruby") ||
	    span_eq(s, "php") || span_eq(s, "perl"))
		return FRAME_PYTHON;
	return FRAME_NATIVE;
}

static int parse_line(struct dec *d, const struct protobuf_field *lf, size_t at, struct dline *out)
{
	struct protobuf_reader r = PROTOBUF_READER(lf->data, lf->len);
	struct protobuf_field f;
	int rc;

	memset(out, 0, sizeof(*out));
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num != LINE_FUNCTION && f.num != LINE_LINE)
			continue;
		if (need_wire(d, &f, PROTOBUF_VARINT, "line") < 0)
			return -EBADMSG;
		if (f.num == LINE_LINE)
			out->line = (int64_t)f.u;
		else if (index_ok(d, f.u, d->nfns, "function", "location", at, &out->fn) < 0)
			return -EBADMSG;
	}
	return rc < 0 ? MSG(d, -EBADMSG, "location %zu: malformed line", at) : 0;
}

static int parse_location(struct dec *d, struct span m, size_t at, size_t *lines_cap)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct dloc *l = &d->locs[at];
	int rc;

	l->kind = -1;
	l->lines_first = (uint32_t)d->nlines;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case LOC_MAPPING:
			if (need_wire(d, &f, PROTOBUF_VARINT, "location") < 0 ||
			    index_ok(d, f.u, d->nmaps, "mapping", "location", at, &l->map) < 0)
				return -EBADMSG;
			break;
		case LOC_ADDRESS:
			if (need_wire(d, &f, PROTOBUF_VARINT, "location") < 0)
				return -EBADMSG;
			l->address = f.u;
			break;
		case LOC_LINES:
			if (need_wire(d, &f, PROTOBUF_LEN, "location") < 0)
				return -EBADMSG;
			if (l->nlines >= 1024)
				return MSG(d, -E2BIG, "location %zu has more than 1024 lines", at);
			if (d->nlines >= UINT32_MAX - 1)
				return MSG(d, -E2BIG, "too many lines");
			ALLOC_GROW(d->lines, d->nlines + 1, *lines_cap);
			if (parse_line(d, &f, at, &d->lines[d->nlines]) < 0)
				return -EBADMSG;
			d->nlines++;
			l->nlines++;
			break;
		case LOC_ATTRIBUTES: {
			struct protobuf_values it;
			uint64_t v;

			protobuf_values_init(&it, &f);
			while ((rc = protobuf_values_next(&it, &v)) > 0) {
				uint32_t idx = 0;
				const struct dattr *a;

				if (index_ok(d, v, d->nattrs, "attribute", "location", at, &idx) < 0)
					return -EBADMSG;
				a = &d->attrs[idx];
				if (a->kind == OTLP_STR && span_eq(a->key, OTLP_FRAME_TYPE))
					l->kind = (int8_t)frame_kind_of(a->str);
			}
			if (rc < 0)
				return MSG(d, -EBADMSG, "location %zu: malformed attribute indexes", at);
			break;
		}
		default:
			break;
		}
	}
	return rc < 0 ? MSG(d, -EBADMSG, "location %zu: malformed", at) : 0;
}

static int parse_stack(struct dec *d, struct span m, size_t at, size_t *cap)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct dstack *s = &d->stacks[at];
	int rc;

	s->first = (uint32_t)d->nstack_locs;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		size_t n = 0;

		if (f.num != STACK_LOCATIONS)
			continue;
		/* Count first (bounded by the field's bytes), then store. */
		if (each_index(d, &f, d->nlocs, "location", "stack", at, NULL, &n, SIZE_MAX) < 0)
			return -EBADMSG;
		if (!n)
			continue;
		if (s->n + n > d->lim->max_depth)
			return decode_limit_exceeded(d->err, "otlp", "frames in one stack", "depth",
						     d->lim->max_depth);
		if (d->nstack_locs + n > d->lim->max_frames || d->nstack_locs + n >= UINT32_MAX)
			return decode_limit_exceeded(d->err, "otlp", "frames in the stack table",
						     "frames", d->lim->max_frames);
		ALLOC_GROW(d->stack_locs, d->nstack_locs + n, *cap);
		n = 0;
		each_index(d, &f, d->nlocs, "location", "stack", at, d->stack_locs + d->nstack_locs,
			   &n, SIZE_MAX);
		d->nstack_locs += n;
		s->n += (uint32_t)n;
	}
	return rc < 0 ? MSG(d, -EBADMSG, "stack %zu: malformed", at) : 0;
}

/* The dictionary tables, in dependency order: strings, attributes, then mappings, functions,
 * locations and stacks (which refer to them). Entry k of a table is index k. */
static int dict_parse(struct dec *d)
{
	static const int order[] = { DICT_STRING, DICT_ATTRIBUTE, DICT_MAPPING, DICT_FUNCTION,
				     DICT_LOCATION, DICT_STACK };
	size_t lines_cap = 0, stack_cap = 0, o, i;
	int rc;

	/* Tables sized to their entries; an absent table has its zero entry implicitly. */
	d->nstrs = d->nstrs ? d->nstrs : 1;
	d->nmaps = d->nmaps ? d->nmaps : 1;
	d->nfns = d->nfns ? d->nfns : 1;
	d->nlocs = d->nlocs ? d->nlocs : 1;
	d->nattrs = d->nattrs ? d->nattrs : 1;
	d->nstacks = d->nstacks ? d->nstacks : 1;
	for (o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
		size_t at = 0;

		for (i = 0; i < d->ndict_parts; i++) {
			struct protobuf_reader r =
				PROTOBUF_READER(d->dict_parts[i].p, d->dict_parts[i].len);
			struct protobuf_field f;

			while (protobuf_next(&r, &f) > 0) {
				struct span m = { f.data, f.len };

				if ((int)f.num != order[o])
					continue;
				switch (f.num) {
				case DICT_STRING: d->strs[at] = m; rc = 0; break;
				case DICT_ATTRIBUTE: rc = parse_attr(d, m, at); break;
				case DICT_MAPPING: rc = parse_mapping(d, m, at); break;
				case DICT_FUNCTION: rc = parse_function(d, m, at); break;
				case DICT_LOCATION: rc = parse_location(d, m, at, &lines_cap); break;
				default: rc = parse_stack(d, m, at, &stack_cap); break;
				}
				if (rc < 0)
					return rc;
				at++;
			}
		}
	}
	if (d->strs[0].len)
		return MSG(d, -EBADMSG, "string_table[0] is not empty");
	return 0;
}

/* ---- per profile ---- */

static uint32_t our_str(struct dec *d, uint32_t idx)
{
	struct memo *m = &d->m_str[idx];

	if (!idx)
		return 0;
	if (m->gen != d->gen) {
		m->gen = d->gen;
		m->id = strtab_intern_len(d->p->strings, (const char *)d->strs[idx].p, d->strs[idx].len);
	}
	return m->id;
}

static uint32_t our_span(struct dec *d, struct span s)
{
	return strtab_intern_len(d->p->strings, s.len ? (const char *)s.p : "", s.len);
}

static uint32_t our_mapping(struct dec *d, uint32_t idx)
{
	struct memo *m = &d->m_map[idx];

	if (!idx)
		return 0;
	if (m->gen != d->gen) {
		const struct dmap *mp = &d->maps[idx];
		/* Strings of the profile never move once interned: pointers to them stay valid. */
		const char *bid = mp->build_id >= 0
			? profile_get_str(d->p, our_span(d, d->attrs[mp->build_id].str)) : "";
		const char *file = profile_get_str(d->p, our_str(d, mp->file));

		m->gen = d->gen;
		m->id = profile_add_mapping(d->p, mp->start, mp->limit, mp->offset, file, bid);
	}
	return m->id;
}

static int ends_with(struct span s, const char *suffix)
{
	size_t n = strlen(suffix);

	return s.len >= n && !memcmp(s.p + s.len - n, suffix, n);
}

/* The kind of a line of location l without a frame type attribute (the rules of pprof.h). */
static int infer_kind(struct dec *d, const struct dloc *l, const struct dfn *fn)
{
	struct span file, name;

	if (l->map && d->maps[l->map].kernel)
		return FRAME_KERNEL;
	if (!fn)
		return FRAME_NATIVE;
	file = d->strs[fn->file];
	name = d->strs[fn->name];
	if (ends_with(file, ".py") || ends_with(file, ".pyw") ||
	    (!l->map && profile_is_runtime_file((const char *)file.p, file.len)))
		return FRAME_PYTHON;
	if (!l->map && !file.len && name.len >= 2 && name.p[0] == '[' && name.p[name.len - 1] == ']')
		return FRAME_SPECIAL;
	return FRAME_NATIVE;
}

static uint32_t our_function(struct dec *d, uint32_t idx, int kind)
{
	struct memo *m = &d->m_fn[(size_t)idx * NKINDS + (size_t)kind];

	if (m->gen != d->gen) {
		const struct dfn *fn = &d->fns[idx];
		uint32_t name = our_str(d, fn->name), sys = our_str(d, fn->sys);
		uint32_t file = our_str(d, fn->file);

		m->gen = d->gen;
		m->id = profile_intern_function(d->p, (enum frame_kind)kind, profile_get_str(d->p, name),
						profile_get_str(d->p, sys ? sys : name),
						profile_get_str(d->p, file), fn->start_line);
	}
	return m->id;
}

/* Our locations for dictionary location idx (one per line, leaf first): *first, *n in d->exp. */
static void our_location(struct dec *d, uint32_t idx, uint32_t *first, uint32_t *n)
{
	struct memo *m = &d->m_loc[idx];
	const struct dloc *l = &d->locs[idx];
	uint32_t map, j;

	*n = l->nlines ? l->nlines : 1;
	if (m->gen == d->gen) {
		*first = m->id;
		return;
	}
	map = our_mapping(d, l->map);
	ALLOC_GROW(d->exp, d->nexp + *n, d->exp_cap);
	*first = (uint32_t)d->nexp;
	if (!l->nlines) {
		d->exp[d->nexp++] = profile_intern_location(d->p, map, l->address, 0, 0);
	} else {
		for (j = 0; j < l->nlines; j++) {
			const struct dline *ln = &d->lines[l->lines_first + j];
			const struct dfn *fn = ln->fn ? &d->fns[ln->fn] : NULL;
			int kind = l->kind >= 0 ? l->kind : infer_kind(d, l, fn);
			uint32_t fid = fn ? our_function(d, ln->fn, kind) : 0;

			/* several lines: inlined calls, innermost first (as in pprof) */
			d->exp[d->nexp++] = profile_intern_location_inl(d->p, map, l->address, fid,
									ln->line, j + 1 < l->nlines);
		}
	}
	m->gen = d->gen;
	m->id = *first;
}

/* The text of a decoded attribute value, interned in the request's strings. */
static const char *kv_text(struct dec *d, const struct dattr *a, char *tmp, size_t tmplen)
{
	switch (a->kind) {
	case OTLP_STR:
		return NULL; /* the span itself */
	case OTLP_INT:
		snprintf(tmp, tmplen, "%" PRId64, a->num);
		break;
	case OTLP_BOOL:
		snprintf(tmp, tmplen, "%s", a->num ? "true" : "false");
		break;
	case OTLP_DOUBLE:
		snprintf(tmp, tmplen, "%.17g", a->d);
		break;
	default:
		tmp[0] = '\0';
		break;
	}
	return tmp;
}

static void add_kv(struct dec *d, const struct dattr *a)
{
	struct dec_priv *pv = d->pv;
	struct kv_id *kv;
	char tmp[64];
	const char *t = kv_text(d, a, tmp, sizeof(tmp));

	ALLOC_GROW(pv->ids, pv->nkvs + 1, pv->kvs_cap);
	kv = &pv->ids[pv->nkvs++];
	kv->key = strtab_intern_len(pv->strs, a->key.len ? (const char *)a->key.p : "", a->key.len);
	kv->str = t ? strtab_intern(pv->strs, t)
		    : strtab_intern_len(pv->strs, a->str.len ? (const char *)a->str.p : "", a->str.len);
	kv->num = a->num;
	kv->kind = a->kind;
}

/* The model label for sample attribute a (key mapped back from its semantic-convention name).
 * Returns 0 when the attribute has no label form (arrays, maps, bytes). */
static int sample_label(struct dec *d, const struct dattr *a, struct profile_label *l)
{
	char tmp[64];
	const char *key = NULL, *t;
	size_t q;

	if (a->kind == OTLP_OTHER)
		return 0;
	for (q = 0; q < NKEYMAP; q++) {
		if (span_eq(a->key, key_map[q][1])) {
			key = key_map[q][0];
			break;
		}
	}
	l->key = key ? profile_str(d->p, key) : our_span(d, a->key);
	l->str = 0;
	l->num = 0;
	if (a->kind == OTLP_INT) {
		l->num = a->num;
		return 1;
	}
	t = kv_text(d, a, tmp, sizeof(tmp));
	l->str = t ? profile_str(d->p, t) : our_span(d, a->str);
	return 1;
}

static int parse_value_type(struct dec *d, const struct protobuf_field *vf, uint32_t *type,
			    uint32_t *unit, size_t at)
{
	struct protobuf_reader r = PROTOBUF_READER(vf->data, vf->len);
	struct protobuf_field f;
	int rc;

	*type = *unit = 0;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		uint32_t idx = 0;

		if (f.num != VT_TYPE && f.num != VT_UNIT)
			continue;
		if (need_wire(d, &f, PROTOBUF_VARINT, "value type") < 0 ||
		    index_ok(d, f.u, d->nstrs, "string", "profile", at, &idx) < 0)
			return -EBADMSG;
		*(f.num == VT_TYPE ? type : unit) = our_str(d, idx);
	}
	return rc < 0 ? MSG(d, -EBADMSG, "profile %zu: malformed value type", at) : 0;
}

static int decode_sample(struct dec *d, const struct protobuf_field *sf, size_t at,
			 uint64_t *abs_total)
{
	struct protobuf_reader r = PROTOBUF_READER(sf->data, sf->len);
	struct protobuf_field f;
	uint32_t stack_idx = 0;
	size_t nlabels = 0, depth = 0, j, nvalues = 0, nstamps = 0;
	int64_t value = 0;
	uint64_t mag;
	int rc, have_stack = 0;

	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case SAMPLE_STACK:
			if (need_wire(d, &f, PROTOBUF_VARINT, "sample") < 0 ||
			    index_ok(d, f.u, d->nstacks, "stack", "profile", at, &stack_idx) < 0)
				return -EBADMSG;
			have_stack = 1;
			break;
		case SAMPLE_ATTRIBUTES: {
			struct protobuf_values it;
			uint64_t v;

			protobuf_values_init(&it, &f);
			while ((rc = protobuf_values_next(&it, &v)) > 0) {
				uint32_t idx = 0;
				struct profile_label l;
				size_t q;

				if (index_ok(d, v, d->nattrs, "attribute", "profile", at, &idx) < 0)
					return -EBADMSG;
				if (!idx || !sample_label(d, &d->attrs[idx], &l))
					continue;
				/* Keys are unique per sample; a repeated key keeps its first value. */
				for (q = 0; q < nlabels && d->labels[q].key != l.key; q++)
					;
				if (q < nlabels)
					continue;
				if (nlabels >= d->lim->max_labels)
					return decode_limit_exceeded(d->err, "otlp", "attributes in a sample",
								     "labels", d->lim->max_labels);
				ALLOC_GROW(d->labels, nlabels + 1, d->labels_cap);
				d->labels[nlabels++] = l;
			}
			if (rc < 0)
				return MSG(d, -EBADMSG, "profile %zu: malformed sample attributes", at);
			break;
		}
		case SAMPLE_VALUES: {
			struct protobuf_values it;
			uint64_t v;

			protobuf_values_init(&it, &f);
			while ((rc = protobuf_values_next(&it, &v)) > 0) {
				int64_t x = (int64_t)v;

				if (__builtin_add_overflow(value, x, &value))
					return MSG(d, -ERANGE, "profile %zu: sample values overflow", at);
				nvalues++;
			}
			if (rc < 0)
				return MSG(d, -EBADMSG, "profile %zu: malformed sample values", at);
			break;
		}
		case SAMPLE_TIMESTAMPS:
			if (f.wire == PROTOBUF_FIXED64) {
				nstamps++;
			} else if (f.wire == PROTOBUF_LEN && f.len % 8 == 0) {
				nstamps += f.len / 8;
			} else {
				return MSG(d, -EBADMSG, "profile %zu: malformed sample timestamps", at);
			}
			break;
		default:
			break;
		}
	}
	if (rc < 0)
		return MSG(d, -EBADMSG, "profile %zu: malformed sample", at);
	/* Timestamps without values count one event each. */
	if (!nvalues)
		value = (int64_t)(nstamps > INT64_MAX ? INT64_MAX : nstamps);
	if (have_stack) {
		const struct dstack *s = &d->stacks[stack_idx];

		for (j = 0; j < s->n; j++) {
			uint32_t first, n;

			our_location(d, d->stack_locs[s->first + j], &first, &n);
			if (depth + n > d->lim->max_depth)
				return decode_limit_exceeded(d->err, "otlp", "frames in one stack", "depth",
							     d->lim->max_depth);
			ALLOC_GROW(d->stack, depth + n, d->stack_cap);
			memcpy(d->stack + depth, d->exp + first, n * sizeof(*d->stack));
			depth += n;
		}
	}
	mag = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
	if (mag > (uint64_t)INT64_MAX - *abs_total)
		return MSG(d, -ERANGE, "profile %zu: sample values overflow", at);
	*abs_total += mag;
	d->out->samples++;
	{
		size_t before = d->p->loc_pool_len, nbefore = d->p->nsamples;

		profile_add_sample(d->p, d->stack, depth, d->labels, nlabels, value);
		d->frames += d->p->loc_pool_len - before;
		d->distinct += d->p->nsamples - nbefore;
	}
	if (d->distinct > d->lim->max_samples)
		return decode_limit_exceeded(d->err, "otlp", "samples", "samples", d->lim->max_samples);
	if (d->frames > d->lim->max_frames)
		return decode_limit_exceeded(d->err, "otlp", "frames", "frames", d->lim->max_frames);
	/* The request's memory and time (lib/budget.h). */
	return decode_check(d->err, "otlp");
}

static int decode_profile(struct dec *d, const struct protobuf_field *pf, size_t resource,
			  struct span scope)
{
	struct protobuf_reader r = PROTOBUF_READER(pf->data, pf->len);
	struct protobuf_field f;
	struct otlp_request *out = d->out;
	struct otlp_profile_in *pi;
	size_t at = out->nprofiles;
	uint64_t abs_total = 0;
	int rc;

	if (out->nprofiles >= d->lim->max_profiles)
		return decode_limit_exceeded(d->err, "otlp", "profiles", "profiles", d->lim->max_profiles);
	d->p = profile_new();
	d->p->period = 0;
	d->gen++;
	d->nexp = 0;
	out->profiles = xrealloc(out->profiles, (out->nprofiles + 1) * sizeof(*out->profiles));
	d->pv->prof_kv_first = xrealloc(d->pv->prof_kv_first,
					(out->nprofiles + 1) * sizeof(*d->pv->prof_kv_first));
	d->pv->scope_ids = xrealloc(d->pv->scope_ids, (out->nprofiles + 1) * sizeof(*d->pv->scope_ids));
	pi = &out->profiles[out->nprofiles++];
	memset(pi, 0, sizeof(*pi));
	pi->prof = d->p;
	pi->resource = resource;
	pi->scope_name = "";
	d->pv->scope_ids[at] = strtab_intern_len(d->pv->strs, scope.len ? (const char *)scope.p : "",
						 scope.len);
	d->pv->prof_kv_first[at] = d->pv->nkvs;
	/* The profile's type first (samples are read in any order relative to it). */
	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case PROF_SAMPLE_TYPE:
			if (need_wire(d, &f, PROTOBUF_LEN, "profile") < 0 ||
			    parse_value_type(d, &f, &d->p->sample_type, &d->p->sample_unit, at) < 0)
				return -EBADMSG;
			break;
		case PROF_PERIOD_TYPE:
			if (need_wire(d, &f, PROTOBUF_LEN, "profile") < 0 ||
			    parse_value_type(d, &f, &d->p->period_type, &d->p->period_unit, at) < 0)
				return -EBADMSG;
			break;
		case PROF_TIME:
			if (need_wire(d, &f, PROTOBUF_FIXED64, "profile") < 0)
				return -EBADMSG;
			d->p->time_nanos = (int64_t)f.u;
			break;
		case PROF_DURATION:
		case PROF_PERIOD:
			if (need_wire(d, &f, PROTOBUF_VARINT, "profile") < 0)
				return -EBADMSG;
			if (f.num == PROF_DURATION)
				d->p->duration_nanos = (int64_t)f.u;
			else
				d->p->period = (int64_t)f.u;
			break;
		case PROF_ATTRIBUTES: {
			struct protobuf_values it;
			uint64_t v;

			protobuf_values_init(&it, &f);
			while ((rc = protobuf_values_next(&it, &v)) > 0) {
				uint32_t idx = 0;

				if (index_ok(d, v, d->nattrs, "attribute", "profile", at, &idx) < 0)
					return -EBADMSG;
				if (pi->nattrs >= d->lim->max_labels)
					return decode_limit_exceeded(d->err, "otlp", "attributes of a profile",
								     "labels", d->lim->max_labels);
				if (idx) {
					add_kv(d, &d->attrs[idx]);
					pi->nattrs++;
				}
			}
			if (rc < 0)
				return MSG(d, -EBADMSG, "profile %zu: malformed attribute indexes", at);
			break;
		}
		case PROF_SAMPLES:
			if (need_wire(d, &f, PROTOBUF_LEN, "profile") < 0)
				return -EBADMSG;
			break;
		default:
			break;
		}
	}
	if (rc < 0)
		return MSG(d, -EBADMSG, "profile %zu: malformed", at);
	/* No period type: the sample type's (as pprof). */
	if (!d->p->period_type && !d->p->period_unit) {
		d->p->period_type = d->p->sample_type;
		d->p->period_unit = d->p->sample_unit;
	}
	r = (struct protobuf_reader)PROTOBUF_READER(pf->data, pf->len);
	while (protobuf_next(&r, &f) > 0) {
		if (f.num != PROF_SAMPLES)
			continue;
		rc = decode_sample(d, &f, at, &abs_total);
		if (rc < 0)
			return rc;
	}
	d->p = NULL;
	return 0;
}

static int decode_resource(struct dec *d, const struct protobuf_field *rf, size_t at)
{
	struct protobuf_reader r = PROTOBUF_READER(rf->data, rf->len);
	struct protobuf_field f;
	size_t n = 0;
	int rc;

	while ((rc = protobuf_next(&r, &f)) > 0) {
		struct protobuf_reader kr;
		struct protobuf_field k;
		struct dattr a;

		if (f.num != RES_ATTRIBUTES)
			continue;
		if (need_wire(d, &f, PROTOBUF_LEN, "resource") < 0)
			return -EBADMSG;
		if (n >= d->lim->max_labels)
			return decode_limit_exceeded(d->err, "otlp", "attributes of a resource", "labels",
						     d->lim->max_labels);
		memset(&a, 0, sizeof(a));
		a.key.p = a.str.p = (const uint8_t *)"";
		a.kind = OTLP_OTHER;
		kr = (struct protobuf_reader)PROTOBUF_READER(f.data, f.len);
		while ((rc = protobuf_next(&kr, &k)) > 0) {
			uint32_t idx = 0;

			if (k.num == KV_KEY) {
				if (need_wire(d, &k, PROTOBUF_LEN, "resource attribute") < 0)
					return -EBADMSG;
				a.key = (struct span){ k.data, k.len };
			} else if (k.num == KV_KEY_STRINDEX) {
				if (need_wire(d, &k, PROTOBUF_VARINT, "resource attribute") < 0 ||
				    index_ok(d, k.u, d->nstrs, "string", "resource", at, &idx) < 0)
					return -EBADMSG;
				a.key = d->strs[idx];
			} else if (k.num == KV_VALUE) {
				if (need_wire(d, &k, PROTOBUF_LEN, "resource attribute") < 0 ||
				    parse_any(d, (struct span){ k.data, k.len }, &a, "resource", at) < 0)
					return -EBADMSG;
			}
		}
		if (rc < 0)
			return MSG(d, -EBADMSG, "resource %zu: malformed attribute", at);
		add_kv(d, &a);
		n++;
	}
	if (rc < 0)
		return MSG(d, -EBADMSG, "resource %zu: malformed", at);
	d->out->resources[at].nattrs = n;
	return 0;
}

static int decode_scope(struct dec *d, const struct protobuf_field *sf, struct span *name)
{
	struct protobuf_reader r = PROTOBUF_READER(sf->data, sf->len);
	struct protobuf_field f;
	int rc;

	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num == SCOPE_NAME) {
			if (need_wire(d, &f, PROTOBUF_LEN, "scope") < 0)
				return -EBADMSG;
			*name = (struct span){ f.data, f.len };
		}
	}
	return rc < 0 ? bad(d, "instrumentation scope") : 0;
}

static int decode_resource_profiles(struct dec *d, const struct protobuf_field *rf, size_t at)
{
	struct protobuf_reader r = PROTOBUF_READER(rf->data, rf->len);
	struct protobuf_field f;
	int rc;

	d->pv->res_kv_first[at] = d->pv->nkvs;
	/* The resource first, so that its attributes are contiguous. */
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num == RP_RESOURCE) {
			if (need_wire(d, &f, PROTOBUF_LEN, "resource profiles") < 0 ||
			    decode_resource(d, &f, at) < 0)
				return -EBADMSG;
		} else if (f.num == RP_SCOPE_PROFILES &&
			   need_wire(d, &f, PROTOBUF_LEN, "resource profiles") < 0) {
			return -EBADMSG;
		}
	}
	if (rc < 0)
		return MSG(d, -EBADMSG, "resource %zu: malformed", at);
	r = (struct protobuf_reader)PROTOBUF_READER(rf->data, rf->len);
	while (protobuf_next(&r, &f) > 0) {
		struct protobuf_reader sr;
		struct protobuf_field s;
		struct span scope = { (const uint8_t *)"", 0 };

		if (f.num != RP_SCOPE_PROFILES)
			continue;
		sr = (struct protobuf_reader)PROTOBUF_READER(f.data, f.len);
		while ((rc = protobuf_next(&sr, &s)) > 0) {
			if (s.num == SP_SCOPE &&
			    (need_wire(d, &s, PROTOBUF_LEN, "scope profiles") < 0 ||
			     decode_scope(d, &s, &scope) < 0))
				return -EBADMSG;
		}
		if (rc < 0)
			return MSG(d, -EBADMSG, "resource %zu: malformed scope profiles", at);
		sr = (struct protobuf_reader)PROTOBUF_READER(f.data, f.len);
		while (protobuf_next(&sr, &s) > 0) {
			if (s.num != SP_PROFILES)
				continue;
			if (need_wire(d, &s, PROTOBUF_LEN, "scope profiles") < 0)
				return -EBADMSG;
			rc = decode_profile(d, &s, at, scope);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* Turn the string ids of decoded attributes and scopes into pointers, now that nothing moves. */
static void finish(struct dec *d)
{
	struct dec_priv *pv = d->pv;
	struct otlp_request *out = d->out;
	size_t i;

	pv->kvs = xcalloc(pv->nkvs + 1, sizeof(*pv->kvs));
	for (i = 0; i < pv->nkvs; i++) {
		pv->kvs[i].key = strtab_get(pv->strs, pv->ids[i].key);
		pv->kvs[i].str = strtab_get(pv->strs, pv->ids[i].str);
		pv->kvs[i].num = pv->ids[i].num;
		pv->kvs[i].kind = pv->ids[i].kind;
	}
	for (i = 0; i < out->nresources; i++)
		out->resources[i].attrs = pv->kvs + pv->res_kv_first[i];
	for (i = 0; i < out->nprofiles; i++) {
		out->profiles[i].attrs = pv->kvs + pv->prof_kv_first[i];
		out->profiles[i].scope_name = strtab_get(pv->strs, pv->scope_ids[i]);
	}
}

void otlp_request_release(struct otlp_request *r)
{
	struct dec_priv *pv;
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nprofiles; i++)
		profile_free(r->profiles[i].prof);
	pv = r->priv;
	if (pv) {
		strtab_free(pv->strs);
		xfree(pv->ids);
		xfree(pv->kvs);
		xfree(pv->res_kv_first);
		xfree(pv->prof_kv_first);
		xfree(pv->scope_ids);
		xfree(pv);
	}
	xfree(r->resources);
	xfree(r->profiles);
	memset(r, 0, sizeof(*r));
}

int otlp_decode(const void *data, size_t len, const struct decode_limits *lim_in,
		struct otlp_request *out, struct errmsg *err)
{
	const struct decode_limits *lim = decode_limits_or_default(lim_in);
	struct buf inflated;
	struct dec d;
	const uint8_t *in = data;
	struct protobuf_reader r;
	struct protobuf_field f;
	size_t nres = 0, at = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&d, 0, sizeof(d));
	buf_init(&inflated, lim->max_inflated);
	d.lim = lim;
	d.err = err;
	d.out = out;
	d.pv = xcalloc(1, sizeof(*d.pv));
	d.pv->strs = strtab_new();
	out->priv = d.pv;
	if (gzip_is(in, len)) {
		rc = gzip_decompress(in, len, lim->max_inflated, &inflated, err);
		if (rc)
			goto cleanup;
		in = (const uint8_t *)inflated.data;
		len = inflated.len;
	} else if (len > lim->max_inflated) {
		rc = decode_limit_exceeded(err, "otlp", "bytes", "inflated", lim->max_inflated);
		goto cleanup;
	}

	/* Find the dictionary (it may come after the profiles that use it) and count resources. */
	r = (struct protobuf_reader)PROTOBUF_READER(in, len);
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num != REQ_RESOURCE_PROFILES && f.num != REQ_DICTIONARY)
			continue;
		if (need_wire(&d, &f, PROTOBUF_LEN, "request") < 0) {
			rc = -EBADMSG;
			goto cleanup;
		}
		if (f.num == REQ_RESOURCE_PROFILES) {
			nres++;
		} else {
			ALLOC_GROW(d.dict_parts, d.ndict_parts + 1, d.dict_parts_cap);
			d.dict_parts[d.ndict_parts++] = (struct span){ f.data, f.len };
		}
	}
	if (rc < 0) {
		rc = MSG(&d, -EBADMSG, "malformed protobuf at offset %zu", (size_t)(r.p - in));
		goto cleanup;
	}
	if (nres > lim->max_profiles) {
		rc = decode_limit_exceeded(err, "otlp", "resources", "profiles", lim->max_profiles);
		goto cleanup;
	}
	rc = dict_count(&d);
	if (!rc)
		rc = dict_parse(&d);
	if (rc)
		goto cleanup;
	out->resources = xcalloc(nres + 1, sizeof(*out->resources));
	out->nresources = nres;
	d.pv->res_kv_first = xcalloc(nres + 1, sizeof(*d.pv->res_kv_first));
	r = (struct protobuf_reader)PROTOBUF_READER(in, len);
	while (protobuf_next(&r, &f) > 0) {
		if (f.num != REQ_RESOURCE_PROFILES)
			continue;
		rc = decode_resource_profiles(&d, &f, at++);
		if (rc)
			goto cleanup;
	}
	finish(&d);
	rc = 0;
cleanup:
	/* A profile being decoded when an error struck is in out->profiles already. */
	if (rc < 0)
		otlp_request_release(out);
	buf_release(&inflated);
	xfree(d.dict_parts);
	xfree(d.strs);
	xfree(d.maps);
	xfree(d.fns);
	xfree(d.locs);
	xfree(d.lines);
	xfree(d.attrs);
	xfree(d.stacks);
	xfree(d.stack_locs);
	xfree(d.m_str);
	xfree(d.m_map);
	xfree(d.m_loc);
	xfree(d.m_fn);
	xfree(d.exp);
	xfree(d.stack);
	xfree(d.labels);
	return rc < 0 ? rc : 0;
}

const struct otlp_kv *otlp_kv_find(const struct otlp_kv *attrs, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(attrs[i].key, key))
			return &attrs[i];
	}
	return NULL;
}
