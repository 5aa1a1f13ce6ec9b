/* pprof.c: profile.proto encoding and decoding (see pprof.h; wire codec in protobuf.h; the
 * frame-kind conventions are described in docs/formats.md).
 *
 * Encoding writes the profile's string table as pprof's string table as is (our string ids are
 * pprof string indexes), and our mapping, function and location ids as pprof ids, so it needs
 * no index of its own. Decoding makes four passes over the top-level message: counts and
 * scalars, the string table, mappings/functions/locations into small side arrays, then the
 * samples, which go straight into the profile. */
#include "profile/pprof.h"
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/hash.h"
#include "lib/strtab.h"
#include "profile/gzip.h"
#include "profile/protobuf.h"

#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <zlib.h>

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };
enum {
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
};
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum {
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

#define NKINDS 4

/* Zero-range mappings that carry a frame kind for locations that have no mapping of their own
 * (native needs none): one per kind, and runtime frames one per language of their file
 * (profile_file_lang()), so that Java frames are not said to be Python's. Indexed by slot:
 * the kind for kernel and special frames, MARKER_LANG + lang for runtime frames. */
#define MARKER_LANG NKINDS
#define NMARKERS (MARKER_LANG + PROFILE_NLANGS)
static const char *const marker_names[NMARKERS] = {
	[FRAME_KERNEL] = PPROF_KERNEL_MAPPING,
	[FRAME_SPECIAL] = PPROF_SPECIAL_MAPPING,
	[MARKER_LANG + PROFILE_LANG_NONE] = PPROF_RUNTIME_MAPPING,
	[MARKER_LANG + PROFILE_LANG_PYTHON] = PPROF_PYTHON_MAPPING,
	[MARKER_LANG + PROFILE_LANG_JS] = "[javascript]",
	[MARKER_LANG + PROFILE_LANG_JAVA] = "[java]",
	[MARKER_LANG + PROFILE_LANG_RUBY] = "[ruby]",
	[MARKER_LANG + PROFILE_LANG_PHP] = "[php]",
	[MARKER_LANG + PROFILE_LANG_PERL] = "[perl]",
};

/* The marker slot of a frame of function f without a mapping, or 0 (native: none). */
static int marker_slot(const struct profile *p, const struct profile_function *f)
{
	const char *file;

	if (f->kind != FRAME_PYTHON)
		return f->kind == FRAME_NATIVE || f->kind >= NKINDS ? 0 : f->kind;
	file = f->filename ? profile_get_str(p, f->filename) : "";
	return MARKER_LANG + (int)profile_file_lang(file, strlen(file));
}

/* The kind a marker mapping's name stands for, or -1. */
static int marker_kind(const char *name)
{
	int k;

	for (k = 1; k < NMARKERS; k++)
		if (marker_names[k] && !strcmp(name, marker_names[k]))
			return k < NKINDS ? k : FRAME_PYTHON;
	return -1;
}

/* ------------------------------------------------------------------ encoding */

enum { MF_SEEN = 1, MF_NOFUNC = 2, MF_NOFILE = 4, MF_NOLINE = 8 };

static void put_value_type(struct protobuf_writer *w, uint32_t field, uint32_t type, uint32_t unit)
{
	size_t m = protobuf_begin(w, field);

	protobuf_put_uint64_nz(w, VALUETYPE_TYPE, type);
	protobuf_put_uint64_nz(w, VALUETYPE_UNIT, unit);
	protobuf_end(w, m);
}

/* A sample count with a CPU period is written the way Go writes CPU profiles: a second value,
 * cpu/nanoseconds = count x period, which pprof tools show by default. */
static int cpu_time_value(const struct profile *p)
{
	const struct strtab *t = p->strings;

	return p->period > 0 && !strcmp(strtab_get(t, p->sample_type), "samples") &&
	       !strcmp(strtab_get(t, p->sample_unit), "count") &&
	       !strcmp(strtab_get(t, p->period_type), "cpu") &&
	       !strcmp(strtab_get(t, p->period_unit), "nanoseconds");
}

/* Inlined frames: a run of locations, the inlined ones then their caller, at one address and
 * mapping, is written as one pprof Location with a Line per frame, innermost first. Runs get
 * the ids after the profile's own locations; a location is written on its own only when some
 * sample has it outside a run. */
struct run_entry {
	uint32_t first, n, next;
};

struct runs {
	struct u64map index;     /* hash of the run's location ids -> entry index + 1 */
	struct run_entry *v;
	size_t n, cap;
	uint32_t *pool;          /* location ids of every run, back to back */
	size_t npool, pool_cap;
	uint8_t *alone;          /* alone[id]: location id used outside a run */
	int any;                 /* some location is inlined */
};

/* The length of the run of locs[j..n) (1 when locs[j] is not inlined into locs[j + 1]). */
static size_t run_length(const struct profile *p, const uint32_t *locs, size_t n, size_t j)
{
	size_t k = j;

	while (k + 1 < n && locs[k] && locs[k] <= p->nlocations && locs[k + 1] &&
	       locs[k + 1] <= p->nlocations) {
		const struct profile_location *a = &p->locations[locs[k] - 1],
					      *b = &p->locations[locs[k + 1] - 1];

		if (!a->inlined || a->address != b->address || a->mapping != b->mapping)
			break;
		k++;
	}
	return k - j + 1;
}

/* The pprof id of the run locs[0..n) (n >= 2), added when new. */
static uint32_t run_id(struct runs *r, const struct profile *p, const uint32_t *locs, size_t n)
{
	uint64_t key = hash_bytes(locs, n * sizeof(*locs), n) | 1, *v = u64map_get(&r->index, key);
	uint32_t e = v ? (uint32_t)*v : 0;

	for (; e; e = r->v[e - 1].next) {
		if (r->v[e - 1].n == n && !memcmp(r->pool + r->v[e - 1].first, locs, n * sizeof(*locs)))
			return (uint32_t)(p->nlocations + e);
	}
	ALLOC_GROW(r->pool, r->npool + n, r->pool_cap);
	memcpy(r->pool + r->npool, locs, n * sizeof(*locs));
	ALLOC_GROW(r->v, r->n + 1, r->cap);
	r->v[r->n] = (struct run_entry){ (uint32_t)r->npool, (uint32_t)n, v ? (uint32_t)*v : 0 };
	r->npool += n;
	r->n++;
	u64map_put(&r->index, key, r->n);
	return (uint32_t)(p->nlocations + r->n);
}

/* Find the runs and the locations used alone (before the samples are written). */
static void runs_find(struct runs *r, const struct profile *p)
{
	size_t i, j;

	memset(r, 0, sizeof(*r));
	u64map_init(&r->index);
	for (i = 0; i < p->nlocations && !r->any; i++)
		r->any = p->locations[i].inlined;
	if (!r->any)
		return;
	r->alone = xcalloc(p->nlocations + 1, 1);
	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);

		for (j = 0; j < s->nlocs;) {
			size_t k = run_length(p, locs, s->nlocs, j);

			if (k > 1)
				run_id(r, p, locs + j, k);
			else if (locs[j] <= p->nlocations)
				r->alone[locs[j]] = 1;
			j += k;
		}
	}
}

static void runs_release(struct runs *r)
{
	u64map_release(&r->index);
	xfree(r->v);
	xfree(r->pool);
	xfree(r->alone);
}

static void put_samples(struct protobuf_writer *w, const struct profile *p, struct runs *r)
{
	int cpu = cpu_time_value(p);
	size_t i, j, m, n;

	for (i = 0; i < p->nsamples && !w->err; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const struct profile_label *labels = profile_sample_labels(p, s);

		m = protobuf_begin(w, PROFILE_SAMPLE);
		if (s->nlocs) {
			n = protobuf_begin(w, SAMPLE_LOCATION_ID);
			for (j = 0; j < s->nlocs;) {
				size_t k = r->any ? run_length(p, locs, s->nlocs, j) : 1;

				/* pprof has no location 0; a stack slot we know nothing of is dropped. */
				if (k > 1)
					protobuf_put_raw_varint(w, run_id(r, p, locs + j, k));
				else if (locs[j] && locs[j] <= p->nlocations)
					protobuf_put_raw_varint(w, locs[j]);
				j += k;
			}
			protobuf_end(w, n);
		}
		n = protobuf_begin(w, SAMPLE_VALUE);
		protobuf_put_raw_varint(w, (uint64_t)s->value);
		if (cpu) {
			int64_t ns;

			if (__builtin_mul_overflow(s->value, p->period, &ns))
				ns = s->value < 0 ? INT64_MIN : INT64_MAX;
			protobuf_put_raw_varint(w, (uint64_t)ns);
		}
		protobuf_end(w, n);
		for (j = 0; j < s->nlabels; j++) {
			n = protobuf_begin(w, SAMPLE_LABEL);
			protobuf_put_uint64_nz(w, LABEL_KEY, labels[j].key);
			if (labels[j].str)
				protobuf_put_uint64(w, LABEL_STR, labels[j].str);
			else
				protobuf_put_int64_nz(w, LABEL_NUM, labels[j].num);
			protobuf_end(w, n);
		}
		protobuf_end(w, m);
	}
}

static void put_mapping(struct protobuf_writer *w, uint64_t id, const struct profile_mapping *mp,
			uint32_t file, uint8_t flags)
{
	size_t m = protobuf_begin(w, PROFILE_MAPPING);
	int seen = flags & MF_SEEN;

	protobuf_put_uint64(w, MAPPING_ID, id);
	if (mp) {
		protobuf_put_uint64_nz(w, MAPPING_MEMORY_START, mp->start);
		protobuf_put_uint64_nz(w, MAPPING_MEMORY_LIMIT, mp->limit);
		protobuf_put_uint64_nz(w, MAPPING_FILE_OFFSET, mp->offset);
		protobuf_put_uint64_nz(w, MAPPING_BUILD_ID, mp->build_id);
	}
	protobuf_put_uint64_nz(w, MAPPING_FILENAME, file);
	protobuf_put_uint64_nz(w, MAPPING_HAS_FUNCTIONS, seen && !(flags & MF_NOFUNC));
	protobuf_put_uint64_nz(w, MAPPING_HAS_FILENAMES, seen && !(flags & MF_NOFILE));
	protobuf_put_uint64_nz(w, MAPPING_HAS_LINE_NUMBERS, seen && !(flags & MF_NOLINE));
	protobuf_end(w, m);
}

/* A pprof Location: the address and mapping of locs[0], one Line per location of locs (an
 * inlined run, innermost first; see struct runs). */
static void put_location(struct protobuf_writer *w, const struct profile *p, uint64_t id,
			 const uint32_t *locs, size_t n, const uint32_t *marker_map)
{
	const struct profile_location *l = &p->locations[locs[0] - 1];
	uint32_t mid = l->mapping <= p->nmappings ? l->mapping : 0;
	size_t m, j;

	if (!mid && l->function && l->function <= p->nfunctions)
		mid = marker_map[marker_slot(p, &p->functions[l->function - 1])];
	m = protobuf_begin(w, PROFILE_LOCATION);
	protobuf_put_uint64(w, LOCATION_ID, id);
	protobuf_put_uint64_nz(w, LOCATION_MAPPING_ID, mid);
	protobuf_put_uint64_nz(w, LOCATION_ADDRESS, l->address);
	for (j = 0; j < n; j++) {
		const struct profile_location *x = &p->locations[locs[j] - 1];

		if (x->function && x->function <= p->nfunctions) {
			size_t ln = protobuf_begin(w, LOCATION_LINE);

			protobuf_put_uint64(w, LINE_FUNCTION_ID, x->function);
			protobuf_put_int64_nz(w, LINE_LINE, x->line);
			protobuf_end(w, ln);
		}
	}
	protobuf_end(w, m);
}

int pprof_encode_raw(const struct profile *p, struct buf *out)
{
	struct runs runs;
	struct protobuf_writer w = PROTOBUF_WRITER(out);
	uint32_t nstr = strtab_count(p->strings), next_str = nstr;
	uint32_t marker_map[NMARKERS] = { 0 }, marker_str[NMARKERS] = { 0 };
	uint32_t next_map = (uint32_t)p->nmappings + 1;
	uint8_t *mflags = xcalloc(p->nmappings + NMARKERS + 1, 1);
	size_t i, m, start_len = out->len;
	int k;

	/* Which markers are needed (numbered after the real mappings, in slot order, with their
	 * names after the profile's own strings)... */
	for (i = 0; i < p->nlocations; i++) {
		const struct profile_location *l = &p->locations[i];

		if ((!l->mapping || l->mapping > p->nmappings) && l->function &&
		    l->function <= p->nfunctions) {
			k = marker_slot(p, &p->functions[l->function - 1]);
			if (k)
				marker_map[k] = 1;
		}
	}
	for (k = 0; k < NMARKERS; k++) {
		if (marker_map[k]) {
			marker_map[k] = next_map++;
			marker_str[k] = next_str++;
		}
	}
	/* ...and what each mapping's has_* flags are. */
	for (i = 0; i < p->nlocations; i++) {
		const struct profile_location *l = &p->locations[i];
		const struct profile_function *f =
			l->function && l->function <= p->nfunctions ? &p->functions[l->function - 1] : NULL;
		uint32_t mid = l->mapping <= p->nmappings ? l->mapping : 0;

		if (!mid && f)
			mid = marker_map[marker_slot(p, f)];
		if (!mid)
			continue;
		mflags[mid] |= MF_SEEN;
		if (!f)
			mflags[mid] |= MF_NOFUNC | MF_NOFILE | MF_NOLINE;
		else if (!f->filename)
			mflags[mid] |= MF_NOFILE;
		if (l->line <= 0)
			mflags[mid] |= MF_NOLINE;
	}

	runs_find(&runs, p);
	put_value_type(&w, PROFILE_SAMPLE_TYPE, p->sample_type, p->sample_unit);
	if (cpu_time_value(p))
		put_value_type(&w, PROFILE_SAMPLE_TYPE, p->period_type, p->period_unit);
	put_samples(&w, p, &runs);
	for (i = 0; i < p->nmappings; i++)
		put_mapping(&w, i + 1, &p->mappings[i], p->mappings[i].file, mflags[i + 1]);
	for (k = 0; k < NMARKERS; k++) {
		if (marker_map[k])
			put_mapping(&w, marker_map[k], NULL, marker_str[k], mflags[marker_map[k]]);
	}
	for (i = 0; i < p->nlocations && !w.err; i++) {
		uint32_t id = (uint32_t)i + 1;

		if (runs.any && p->locations[i].inlined && !runs.alone[id])
			continue; /* only ever written as part of its runs */
		put_location(&w, p, id, &id, 1, marker_map);
	}
	for (i = 0; i < runs.n && !w.err; i++)
		put_location(&w, p, p->nlocations + i + 1, runs.pool + runs.v[i].first, runs.v[i].n,
			     marker_map);
	runs_release(&runs);
	for (i = 0; i < p->nfunctions && !w.err; i++) {
		const struct profile_function *f = &p->functions[i];

		m = protobuf_begin(&w, PROFILE_FUNCTION);
		protobuf_put_uint64(&w, FUNCTION_ID, i + 1);
		protobuf_put_uint64_nz(&w, FUNCTION_NAME, f->name);
		protobuf_put_uint64_nz(&w, FUNCTION_SYSTEM_NAME, f->system_name);
		protobuf_put_uint64_nz(&w, FUNCTION_FILENAME, f->filename);
		protobuf_put_int64_nz(&w, FUNCTION_START_LINE, f->start_line);
		protobuf_end(&w, m);
	}
	for (i = 0; i < nstr && !w.err; i++)
		protobuf_put_bytes(&w, PROFILE_STRING_TABLE, strtab_get(p->strings, (uint32_t)i),
				   strtab_len(p->strings, (uint32_t)i));
	/* Marker names follow the profile's own strings, in slot order (as numbered above). */
	for (k = 0; k < NMARKERS; k++) {
		if (marker_map[k])
			protobuf_put_bytes(&w, PROFILE_STRING_TABLE, marker_names[k],
					   strlen(marker_names[k]));
	}
	protobuf_put_int64_nz(&w, PROFILE_TIME_NANOS, p->time_nanos);
	protobuf_put_int64_nz(&w, PROFILE_DURATION_NANOS, p->duration_nanos);
	put_value_type(&w, PROFILE_PERIOD_TYPE, p->period_type, p->period_unit);
	protobuf_put_int64_nz(&w, PROFILE_PERIOD, p->period);
	xfree(mflags);
	if (w.err) {
		out->len = start_len;
		if (out->data)
			out->data[start_len] = '\0';
	}
	return w.err;
}

int pprof_encode(const struct profile *p, struct buf *out)
{
	struct buf raw = BUF_INIT(out->max);
	int err = pprof_encode_raw(p, &raw);

	if (!err)
		err = gzip_compress(raw.data, raw.len, Z_BEST_SPEED, out);
	buf_release(&raw);
	return err;
}

/* ------------------------------------------------------------------ decoding */

/* Ids of one kind of entity (mapping, function, location) to their index in the side array.
 * Producers number them 1..n in order, which is kept as a plain offset; anything else goes
 * through a hash map. */
struct idmap {
	size_t n;
	int sparse;
	struct u64map m; /* id -> index + 1 */
};

static int idmap_add(struct idmap *im, uint64_t id, size_t index)
{
	size_t i;

	if (id == 0 || id == UINT64_MAX)
		return -EINVAL;
	if (!im->sparse && id == index + 1 && index == im->n) {
		im->n++;
		return 0;
	}
	if (!im->sparse) {
		im->sparse = 1;
		for (i = 0; i < im->n; i++)
			u64map_put(&im->m, i + 1, i + 1);
	}
	if (u64map_get(&im->m, id))
		return -EEXIST;
	u64map_put(&im->m, id, index + 1);
	return 0;
}

/* Index for id, or -1. */
static ssize_t idmap_find(const struct idmap *im, uint64_t id)
{
	uint64_t *v;

	if (!im->sparse)
		return id >= 1 && id <= im->n ? (ssize_t)(id - 1) : -1;
	if (id == 0 || id == UINT64_MAX)
		return -1;
	v = u64map_get(&im->m, id);
	return v ? (ssize_t)(*v - 1) : -1;
}

struct dstr {
	const uint8_t *p;
	size_t len;
};

struct dmapping {
	uint32_t our;    /* our mapping id, 0 for a kind marker */
	int8_t kind;     /* kind this mapping implies, or -1 */
	int8_t marker;
};

struct dfunction {
	int64_t name, system_name, filename, start_line;
	uint32_t our[NKINDS]; /* our function id per kind, 0 until interned */
	int8_t first_kind;    /* kind of the first location that uses it, or -1 */
};

struct dline {
	uint64_t function_id; /* resolved to an index + 1 (0 none) after the parse */
	int64_t line;
};

struct dlocation {
	uint64_t mapping_id; /* resolved to an index + 1 (0 none) after the parse */
	uint64_t address;
	uint32_t lines_first, nlines;
	uint32_t exp_first, nexp; /* our location ids in d->exp, leaf first */
};

struct decoder {
	struct profile *p;
	struct errmsg *err;
	const struct decode_limits *lim;
	const uint8_t *data;
	size_t len;

	struct dstr *strs;
	uint32_t *str_ids; /* our string id, or UINT32_MAX until interned */
	size_t nstrs;

	struct dstr *types; /* sample_type messages */
	size_t ntypes;
	struct dstr period_type;
	int64_t default_type;

	struct dmapping *maps;
	size_t nmaps;
	struct dfunction *fns;
	size_t nfns;
	struct dlocation *locs;
	size_t nlocs;
	struct dline *lines;
	size_t nlines;
	uint32_t *exp;
	size_t nexp;
	struct idmap map_ids, fn_ids, loc_ids;

	uint32_t *stack;
	size_t stack_cap;
	struct profile_label *labels;
	size_t labels_cap;
	size_t sample_no;
	int all_types;        /* keep every value (PPROF_ALL_TYPES) */
	int64_t *vals;        /* one sample's values, ntypes of them, when all_types */
	uint64_t *abs_totals; /* per value: sum of magnitudes so far */
};

#define MSG(d, code, ...) errmsg_set((d)->err, (code), "pprof: " __VA_ARGS__)
#define OVER(d, what, name, limit) decode_limit_exceeded((d)->err, "pprof", (what), (name), (limit))

static int bad(struct decoder *d, const char *what, size_t index)
{
	return MSG(d, -EBADMSG, "malformed %s %zu", what, index);
}

/* Our string id for pprof string index idx (interned on first use). */
static int str_ref(struct decoder *d, uint64_t idx, uint32_t *out)
{
	if (idx == 0) {
		*out = 0;
		return 0;
	}
	if (idx >= d->nstrs)
		return MSG(d, -EBADMSG, "string index %llu out of range (%zu strings)",
			   (unsigned long long)idx, d->nstrs);
	if (d->str_ids[idx] == UINT32_MAX)
		d->str_ids[idx] = strtab_intern_len(d->p->strings, (const char *)d->strs[idx].p,
						    d->strs[idx].len);
	*out = d->str_ids[idx];
	return 0;
}

static const char *str_of(struct decoder *d, uint32_t our)
{
	return profile_get_str(d->p, our);
}

static int need_wire(struct decoder *d, const struct protobuf_field *f, int wire, const char *what)
{
	if (f->wire == wire)
		return 0;
	return MSG(d, -EBADMSG, "%s: field %u has wire type %u, expected %d", what, f->num, f->wire, wire);
}

static int decode_value_type(struct decoder *d, struct dstr m, uint32_t *type, uint32_t *unit)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	int rc;

	*type = *unit = 0;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num != VALUETYPE_TYPE && f.num != VALUETYPE_UNIT)
			continue;
		if (need_wire(d, &f, PROTOBUF_VARINT, "value type") < 0)
			return -EBADMSG;
		if (str_ref(d, f.u, f.num == VALUETYPE_TYPE ? type : unit) < 0)
			return -EBADMSG;
	}
	return rc < 0 ? MSG(d, -EBADMSG, "malformed value type") : 0;
}

/* Pass 1: count repeated fields, keep the scalars. */
static int scan_top(struct decoder *d, struct profile *p)
{
	struct protobuf_reader r = PROTOBUF_READER(d->data, d->len);
	struct protobuf_field f;
	size_t ntypes_cap = 0;
	int rc;

	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case PROFILE_SAMPLE_TYPE:
		case PROFILE_SAMPLE:
		case PROFILE_MAPPING:
		case PROFILE_LOCATION:
		case PROFILE_FUNCTION:
		case PROFILE_STRING_TABLE:
		case PROFILE_PERIOD_TYPE:
			if (need_wire(d, &f, PROTOBUF_LEN, "profile") < 0)
				return -EBADMSG;
			break;
		case PROFILE_TIME_NANOS:
		case PROFILE_DURATION_NANOS:
		case PROFILE_PERIOD:
		case PROFILE_DEFAULT_SAMPLE_TYPE:
			if (need_wire(d, &f, PROTOBUF_VARINT, "profile") < 0)
				return -EBADMSG;
			break;
		default:
			continue;
		}
		switch (f.num) {
		case PROFILE_SAMPLE_TYPE:
			if (d->ntypes >= PPROF_MAX_SAMPLE_TYPES)
				return MSG(d, -E2BIG, "more than %d sample types", PPROF_MAX_SAMPLE_TYPES);
			if (d->ntypes >= d->lim->max_sample_types)
				return OVER(d, "sample types", "sample-types", d->lim->max_sample_types);
			ALLOC_GROW(d->types, d->ntypes + 1, ntypes_cap);
			d->types[d->ntypes++] = (struct dstr){ f.data, f.len };
			break;
		case PROFILE_MAPPING: d->nmaps++; break;
		case PROFILE_LOCATION: d->nlocs++; break;
		case PROFILE_FUNCTION: d->nfns++; break;
		case PROFILE_STRING_TABLE: d->nstrs++; break;
		case PROFILE_PERIOD_TYPE: d->period_type = (struct dstr){ f.data, f.len }; break;
		case PROFILE_TIME_NANOS: p->time_nanos = (int64_t)f.u; break;
		case PROFILE_DURATION_NANOS: p->duration_nanos = (int64_t)f.u; break;
		case PROFILE_PERIOD: p->period = (int64_t)f.u; break;
		case PROFILE_DEFAULT_SAMPLE_TYPE: d->default_type = (int64_t)f.u; break;
		default: break;
		}
	}
	if (rc < 0)
		return MSG(d, -EBADMSG, "malformed protobuf at offset %zu", (size_t)(r.p - d->data));
	if (d->nstrs > PPROF_MAX_STRINGS)
		return MSG(d, -E2BIG, "%zu strings, more than %d", d->nstrs, PPROF_MAX_STRINGS);
	/* Counted before anything is allocated for them. */
	if (d->nstrs > d->lim->max_strings)
		return OVER(d, "strings", "strings", d->lim->max_strings);
	if (d->nmaps > d->lim->max_mappings)
		return OVER(d, "mappings", "mappings", d->lim->max_mappings);
	if (d->nfns > d->lim->max_functions)
		return OVER(d, "functions", "functions", d->lim->max_functions);
	if (d->nlocs > d->lim->max_locations)
		return OVER(d, "locations", "locations", d->lim->max_locations);
	return decode_check(d->err, "pprof");
}

/* Pass 2: the string table. */
static int scan_strings(struct decoder *d)
{
	struct protobuf_reader r = PROTOBUF_READER(d->data, d->len);
	struct protobuf_field f;
	size_t n = 0;
	int rc;

	d->strs = xcalloc(d->nstrs ? d->nstrs : 1, sizeof(*d->strs));
	d->str_ids = xmalloc((d->nstrs ? d->nstrs : 1) * sizeof(*d->str_ids));
	memset(d->str_ids, 0xff, (d->nstrs ? d->nstrs : 1) * sizeof(*d->str_ids));
	rc = decode_check(d->err, "pprof");
	if (rc < 0)
		return rc;
	while (protobuf_next(&r, &f) > 0) {
		if (f.num == PROFILE_STRING_TABLE && n < d->nstrs)
			d->strs[n++] = (struct dstr){ f.data, f.len };
	}
	if (d->nstrs && d->strs[0].len)
		return MSG(d, -EBADMSG, "string table entry 0 is not empty");
	return 0;
}

/* The sample value to keep; see pprof.h for the rule. */
static int choose_sample_type(struct decoder *d, int sample_index, struct profile *p)
{
	uint32_t *type = xcalloc(d->ntypes + 1, sizeof(*type));
	uint32_t *unit = xcalloc(d->ntypes + 1, sizeof(*unit));
	uint32_t def = 0;
	size_t i;
	int err = 0, chosen = -1;

	for (i = 0; i < d->ntypes; i++) {
		err = decode_value_type(d, d->types[i], &type[i], &unit[i]);
		if (err)
			goto cleanup;
	}
	if (d->default_type) {
		err = str_ref(d, (uint64_t)d->default_type, &def);
		if (err)
			goto cleanup;
	}
	if (sample_index >= 0) {
		if ((size_t)sample_index >= d->ntypes && !(sample_index == 0 && d->ntypes == 0)) {
			err = MSG(d, -EINVAL, "sample index %d out of range (%zu sample types)",
				  sample_index, d->ntypes);
			goto cleanup;
		}
		chosen = sample_index;
	}
	for (i = 0; chosen < 0 && def && i < d->ntypes; i++) {
		if (type[i] == def)
			chosen = (int)i;
	}
	/* The sample count first: exact, and with the period it gives the time too. */
	for (i = 0; chosen < 0 && i < d->ntypes; i++) {
		if (!strcmp(str_of(d, type[i]), "samples"))
			chosen = (int)i;
	}
	for (i = 0; chosen < 0 && i < d->ntypes; i++) {
		if (!strcmp(str_of(d, type[i]), "cpu"))
			chosen = (int)i;
	}
	/* pprof's own convention: the last type (Go's heap: inuse_space). */
	if (chosen < 0)
		chosen = d->ntypes ? (int)d->ntypes - 1 : 0;
	if (d->ntypes) {
		p->sample_type = p->period_type = type[chosen];
		p->sample_unit = p->period_unit = unit[chosen];
		if (d->all_types) {
			profile_set_value_types(p, d->ntypes, type, unit, (uint32_t)chosen);
			d->vals = xcalloc(d->ntypes, sizeof(*d->vals));
		}
	}
	d->abs_totals = xcalloc(d->ntypes + 1, sizeof(*d->abs_totals));
	if (d->period_type.p) {
		err = decode_value_type(d, d->period_type, &p->period_type, &p->period_unit);
		if (err)
			goto cleanup;
	}
	err = chosen;
cleanup:
	xfree(type);
	xfree(unit);
	return err;
}

static int parse_mapping(struct decoder *d, struct dstr m, size_t index)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	uint64_t id = 0, start = 0, limit = 0, offset = 0;
	uint32_t file = 0, build_id = 0;
	struct dmapping *dm = &d->maps[index];
	const char *name;
	int rc, k;

	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num > MAPPING_BUILD_ID)
			continue;
		if (need_wire(d, &f, PROTOBUF_VARINT, "mapping") < 0)
			return -EBADMSG;
		switch (f.num) {
		case MAPPING_ID: id = f.u; break;
		case MAPPING_MEMORY_START: start = f.u; break;
		case MAPPING_MEMORY_LIMIT: limit = f.u; break;
		case MAPPING_FILE_OFFSET: offset = f.u; break;
		case MAPPING_FILENAME:
			if (str_ref(d, f.u, &file) < 0)
				return -EBADMSG;
			break;
		case MAPPING_BUILD_ID:
			if (str_ref(d, f.u, &build_id) < 0)
				return -EBADMSG;
			break;
		}
	}
	if (rc < 0)
		return bad(d, "mapping", index);
	rc = idmap_add(&d->map_ids, id, index);
	if (rc < 0)
		return MSG(d, -EBADMSG, "mapping %zu: %s id %llu", index,
			   rc == -EEXIST ? "duplicate" : "invalid", (unsigned long long)id);
	name = str_of(d, file);
	dm->kind = -1;
	if (!strncmp(name, "[kernel", 7))
		dm->kind = FRAME_KERNEL;
	k = marker_kind(name);
	if (k >= 0) {
		dm->kind = (int8_t)k;
		dm->marker = !start && !limit && !offset && !build_id;
	}
	if (!dm->marker) {
		dm->our = profile_add_mapping(d->p, start, limit, offset, name, str_of(d, build_id));
		/* tools take the first mapping for the main file */
		d->p->mappings[dm->our - 1].main_exe = d->p->nmappings == 1;
	}
	return 0;
}

static int parse_function(struct decoder *d, struct dstr m, size_t index)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct dfunction *fn = &d->fns[index];
	uint64_t id = 0;
	uint32_t dummy;
	int rc;

	fn->first_kind = -1;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num > FUNCTION_START_LINE)
			continue;
		if (need_wire(d, &f, PROTOBUF_VARINT, "function") < 0)
			return -EBADMSG;
		switch (f.num) {
		case FUNCTION_ID: id = f.u; break;
		case FUNCTION_NAME: fn->name = (int64_t)f.u; break;
		case FUNCTION_SYSTEM_NAME: fn->system_name = (int64_t)f.u; break;
		case FUNCTION_FILENAME: fn->filename = (int64_t)f.u; break;
		case FUNCTION_START_LINE: fn->start_line = (int64_t)f.u; break;
		}
	}
	if (rc < 0)
		return bad(d, "function", index);
	/* Validate the string indexes now; intern them when a location uses the function. */
	if (str_ref(d, (uint64_t)fn->name, &dummy) < 0 ||
	    str_ref(d, (uint64_t)fn->system_name, &dummy) < 0 ||
	    str_ref(d, (uint64_t)fn->filename, &dummy) < 0)
		return -EBADMSG;
	rc = idmap_add(&d->fn_ids, id, index);
	if (rc < 0)
		return MSG(d, -EBADMSG, "function %zu: %s id %llu", index,
			   rc == -EEXIST ? "duplicate" : "invalid", (unsigned long long)id);
	return 0;
}

static int parse_line(struct decoder *d, const struct protobuf_field *lf, struct dline *out)
{
	struct protobuf_reader r = PROTOBUF_READER(lf->data, lf->len);
	struct protobuf_field f;
	int rc;

	memset(out, 0, sizeof(*out));
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num > LINE_LINE)
			continue;
		if (f.wire != PROTOBUF_VARINT)
			return -EBADMSG;
		if (f.num == LINE_FUNCTION_ID)
			out->function_id = f.u;
		else
			out->line = (int64_t)f.u;
	}
	return rc;
}

static int parse_location(struct decoder *d, struct dstr m, size_t index, size_t *lines_cap)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct dlocation *dl = &d->locs[index];
	uint64_t id = 0;
	int rc;

	dl->lines_first = (uint32_t)d->nlines;
	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case LOCATION_ID:
		case LOCATION_MAPPING_ID:
		case LOCATION_ADDRESS:
			if (need_wire(d, &f, PROTOBUF_VARINT, "location") < 0)
				return -EBADMSG;
			if (f.num == LOCATION_ID)
				id = f.u;
			else if (f.num == LOCATION_MAPPING_ID)
				dl->mapping_id = f.u;
			else
				dl->address = f.u;
			break;
		case LOCATION_LINE:
			if (need_wire(d, &f, PROTOBUF_LEN, "location") < 0)
				return -EBADMSG;
			if (dl->nlines >= PPROF_MAX_LINES)
				return MSG(d, -E2BIG, "location %zu has more than %d lines", index,
					   PPROF_MAX_LINES);
			if (d->nlines >= d->lim->max_frames)
				return OVER(d, "frames in locations", "frames", d->lim->max_frames);
			ALLOC_GROW(d->lines, d->nlines + 1, *lines_cap);
			if (parse_line(d, &f, &d->lines[d->nlines]) < 0)
				return bad(d, "line in location", index);
			d->nlines++;
			dl->nlines++;
			break;
		default:
			break;
		}
	}
	if (rc < 0)
		return bad(d, "location", index);
	rc = idmap_add(&d->loc_ids, id, index);
	if (rc < 0)
		return MSG(d, -EBADMSG, "location %zu: %s id %llu", index,
			   rc == -EEXIST ? "duplicate" : "invalid", (unsigned long long)id);
	return 0;
}

/* Pass 3: mappings, functions and locations into the side arrays. */
static int scan_entities(struct decoder *d)
{
	struct protobuf_reader r = PROTOBUF_READER(d->data, d->len);
	struct protobuf_field f;
	size_t nm = 0, nf = 0, nl = 0, lines_cap = 0;
	int err = 0;

	d->maps = xcalloc(d->nmaps + 1, sizeof(*d->maps));
	d->fns = xcalloc(d->nfns + 1, sizeof(*d->fns));
	d->locs = xcalloc(d->nlocs + 1, sizeof(*d->locs));
	while (!err && protobuf_next(&r, &f) > 0) {
		struct dstr m = { f.data, f.len };

		if ((f.num == PROFILE_MAPPING || f.num == PROFILE_FUNCTION ||
		     f.num == PROFILE_LOCATION) && (err = decode_check(d->err, "pprof")) < 0)
			break;
		if (f.num == PROFILE_MAPPING && nm < d->nmaps)
			err = parse_mapping(d, m, nm++);
		else if (f.num == PROFILE_FUNCTION && nf < d->nfns)
			err = parse_function(d, m, nf++);
		else if (f.num == PROFILE_LOCATION && nl < d->nlocs)
			err = parse_location(d, m, nl++, &lines_cap);
	}
	return err;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !memcmp(s + n - m, suffix, m);
}

/* The kind of one line of a location (see docs/formats.md, "frame kinds"). */
static int line_kind(struct decoder *d, const struct dmapping *dm, const struct dfunction *fn)
{
	const char *name, *file;
	uint32_t id;

	if (dm && dm->kind >= 0)
		return dm->kind;
	if (!fn)
		return FRAME_NATIVE;
	str_ref(d, (uint64_t)fn->filename, &id);
	file = str_of(d, id);
	str_ref(d, (uint64_t)fn->name, &id);
	name = str_of(d, id);
	if (ends_with(file, ".py") || ends_with(file, ".pyw") ||
	    (!dm && profile_is_runtime_file(file, strlen(file))))
		return FRAME_PYTHON;
	if (!dm && !*file && name[0] == '[' && ends_with(name, "]"))
		return FRAME_SPECIAL;
	return FRAME_NATIVE;
}

static uint32_t function_for(struct decoder *d, struct dfunction *fn, int kind)
{
	uint32_t name, sys, file;

	if (!fn->our[kind]) {
		str_ref(d, (uint64_t)fn->name, &name);
		str_ref(d, (uint64_t)fn->system_name, &sys);
		str_ref(d, (uint64_t)fn->filename, &file);
		fn->our[kind] = profile_intern_function(d->p, (enum frame_kind)kind, str_of(d, name),
							str_of(d, sys), str_of(d, file), fn->start_line);
	}
	return fn->our[kind];
}

/* Resolve ids, decide kinds, then intern functions (in file order, so that ids written by
 * pprof_encode come back the same) and our locations (one per line, leaf first). */
static int resolve_locations(struct decoder *d)
{
	size_t i, j, exp_cap = 0;
	ssize_t idx;

	for (i = 0; i < d->nlocs; i++) {
		struct dlocation *dl = &d->locs[i];

		if (dl->mapping_id) {
			idx = idmap_find(&d->map_ids, dl->mapping_id);
			if (idx < 0)
				return MSG(d, -EBADMSG, "location %zu: unknown mapping id %llu", i,
					   (unsigned long long)dl->mapping_id);
			dl->mapping_id = (uint64_t)idx + 1;
		}
		for (j = 0; j < dl->nlines; j++) {
			struct dline *ln = &d->lines[dl->lines_first + j];
			struct dfunction *fn;

			if (!ln->function_id)
				continue;
			idx = idmap_find(&d->fn_ids, ln->function_id);
			if (idx < 0)
				return MSG(d, -EBADMSG, "location %zu: unknown function id %llu", i,
					   (unsigned long long)ln->function_id);
			ln->function_id = (uint64_t)idx + 1;
			fn = &d->fns[idx];
			if (fn->first_kind < 0)
				fn->first_kind = (int8_t)line_kind(
					d, dl->mapping_id ? &d->maps[dl->mapping_id - 1] : NULL, fn);
		}
	}
	for (i = 0; i < d->nfns; i++) {
		struct dfunction *fn = &d->fns[i];

		function_for(d, fn, fn->first_kind >= 0 ? fn->first_kind : line_kind(d, NULL, fn));
	}
	for (i = 0; i < d->nlocs; i++) {
		struct dlocation *dl = &d->locs[i];
		const struct dmapping *dm = dl->mapping_id ? &d->maps[dl->mapping_id - 1] : NULL;
		uint32_t our_map = dm ? dm->our : 0;
		size_t n = dl->nlines ? dl->nlines : 1;
		int rc = decode_check(d->err, "pprof");

		if (rc < 0)
			return rc;
		ALLOC_GROW(d->exp, d->nexp + n, exp_cap);
		dl->exp_first = (uint32_t)d->nexp;
		dl->nexp = (uint32_t)n;
		if (!dl->nlines) {
			d->exp[d->nexp++] = profile_intern_location(d->p, our_map, dl->address, 0, 0);
			continue;
		}
		for (j = 0; j < dl->nlines; j++) {
			const struct dline *ln = &d->lines[dl->lines_first + j];
			uint32_t fid = 0;

			if (ln->function_id) {
				struct dfunction *fn = &d->fns[ln->function_id - 1];

				fid = function_for(d, fn, line_kind(d, dm, fn));
			}
			/* Every line but the last is inlined into the next. */
			d->exp[d->nexp++] = profile_intern_location_inl(d->p, our_map, dl->address, fid,
									ln->line, j + 1 < dl->nlines);
		}
	}
	return 0;
}

static int parse_label(struct decoder *d, const struct protobuf_field *lf, struct profile_label *l)
{
	struct protobuf_reader r = PROTOBUF_READER(lf->data, lf->len);
	struct protobuf_field f;
	int rc;

	memset(l, 0, sizeof(*l));
	while ((rc = protobuf_next(&r, &f)) > 0) {
		if (f.num > LABEL_NUM)
			continue;
		if (f.wire != PROTOBUF_VARINT)
			return -EBADMSG;
		if (f.num == LABEL_KEY)
			rc = str_ref(d, f.u, &l->key);
		else if (f.num == LABEL_STR)
			rc = str_ref(d, f.u, &l->str);
		else
			l->num = (int64_t)f.u;
		if (rc < 0)
			return rc;
	}
	if (l->str)
		l->num = 0;
	return rc;
}

/* Add a value to a running sum of magnitudes; -ERANGE when merged samples could overflow. */
static int add_abs(uint64_t *total, int64_t value)
{
	uint64_t mag = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;

	if (mag > (uint64_t)INT64_MAX - *total)
		return -ERANGE;
	*total += mag;
	return 0;
}

static int decode_sample(struct decoder *d, struct dstr m, int vindex, size_t budget)
{
	struct protobuf_reader r = PROTOBUF_READER(m.p, m.len);
	struct protobuf_field f;
	struct protobuf_values it;
	size_t depth = 0, nlabels = 0, nvalues = 0;
	int64_t value = 0;
	uint64_t v;
	ssize_t idx;
	size_t k;
	int rc;

	if (d->vals)
		memset(d->vals, 0, d->ntypes * sizeof(*d->vals));
	while ((rc = protobuf_next(&r, &f)) > 0) {
		switch (f.num) {
		case SAMPLE_LOCATION_ID:
			protobuf_values_init(&it, &f);
			while ((rc = protobuf_values_next(&it, &v)) > 0) {
				const struct dlocation *dl;

				idx = idmap_find(&d->loc_ids, v);
				if (idx < 0)
					return MSG(d, -EBADMSG, "sample %zu: unknown location id %llu",
						   d->sample_no, (unsigned long long)v);
				dl = &d->locs[idx];
				if (depth + dl->nexp > PPROF_MAX_DEPTH)
					return MSG(d, -E2BIG, "sample %zu: stack deeper than %d frames",
						   d->sample_no, PPROF_MAX_DEPTH);
				ALLOC_GROW(d->stack, depth + dl->nexp, d->stack_cap);
				memcpy(d->stack + depth, d->exp + dl->exp_first,
				       dl->nexp * sizeof(*d->stack));
				depth += dl->nexp;
			}
			if (rc < 0)
				return bad(d, "location ids in sample", d->sample_no);
			break;
		case SAMPLE_VALUE:
			protobuf_values_init(&it, &f);
			while ((rc = protobuf_values_next(&it, &v)) > 0) {
				if (d->vals && nvalues < d->ntypes)
					d->vals[nvalues] = (int64_t)v;
				if (nvalues++ == (size_t)vindex)
					value = (int64_t)v;
			}
			if (rc < 0)
				return bad(d, "values in sample", d->sample_no);
			break;
		case SAMPLE_LABEL:
			if (f.wire != PROTOBUF_LEN)
				return bad(d, "label in sample", d->sample_no);
			if (nlabels >= PPROF_MAX_LABELS)
				return MSG(d, -E2BIG, "sample %zu: more than %d labels", d->sample_no,
					   PPROF_MAX_LABELS);
			ALLOC_GROW(d->labels, nlabels + 1, d->labels_cap);
			if (parse_label(d, &f, &d->labels[nlabels]) < 0)
				return bad(d, "label in sample", d->sample_no);
			nlabels++;
			break;
		default:
			break;
		}
	}
	if (rc < 0)
		return bad(d, "sample", d->sample_no);
	if (nvalues <= (size_t)vindex && (d->ntypes || nvalues))
		return MSG(d, -EBADMSG, "sample %zu has %zu values, expected %zu", d->sample_no,
			   nvalues, d->ntypes);
	/* Merged samples add up; keep every partial sum representable. */
	if (add_abs(&d->abs_totals[d->ntypes], value) < 0)
		return MSG(d, -ERANGE, "sample %zu: values overflow", d->sample_no);
	for (k = 0; d->vals && k < d->ntypes; k++)
		if (add_abs(&d->abs_totals[k], d->vals[k]) < 0)
			return MSG(d, -ERANGE, "sample %zu: values overflow", d->sample_no);
	if (d->vals && d->p->nvalues)
		profile_add_sample_values(d->p, d->stack, depth, d->labels, nlabels, d->vals);
	else
		profile_add_sample(d->p, d->stack, depth, d->labels, nlabels, value);
	if (d->p->nsamples > d->lim->max_samples)
		return OVER(d, "distinct samples", "samples", d->lim->max_samples);
	if (d->p->loc_pool_len > d->lim->max_frames)
		return OVER(d, "frames in samples", "frames", d->lim->max_frames);
	if (d->p->loc_pool_len > budget)
		return MSG(d, -E2BIG, "stacks expand to more than %zu frames", budget);
	return 0;
}

/* Pass 4: samples, straight into the profile. */
static int scan_samples(struct decoder *d, int vindex)
{
	struct protobuf_reader r = PROTOBUF_READER(d->data, d->len);
	struct protobuf_field f;
	/* Inlining lets a few bytes name many frames; allow a generous multiple of the input. */
	size_t budget = d->len < SIZE_MAX / 8 ? 4 * d->len + 65536 : SIZE_MAX / 2;
	int err = 0;

	while (!err && protobuf_next(&r, &f) > 0) {
		if (f.num != PROFILE_SAMPLE)
			continue;
		err = decode_check(d->err, "pprof");
		if (!err)
			err = decode_sample(d, (struct dstr){ f.data, f.len }, vindex, budget);
		d->sample_no++;
	}
	return err;
}

int pprof_decode(const void *data, size_t len, const struct decode_limits *lim, int sample_index,
		 struct profile **out, struct errmsg *err)
{
	const uint8_t *in = data;
	struct buf inflated;
	struct decoder d;
	struct profile *p = NULL;
	int rc, vindex = 0;

	*out = NULL;
	memset(&d, 0, sizeof(d));
	d.err = err;
	d.lim = decode_limits_or_default(lim);
	d.all_types = sample_index == PPROF_ALL_TYPES;
	buf_init(&inflated, d.lim->max_inflated);
	if (gzip_is(in, len)) {
		rc = gzip_decompress(in, len, d.lim->max_inflated, &inflated, err);
		if (rc == -E2BIG)
			rc = OVER(&d, "bytes after inflation", "inflated", d.lim->max_inflated);
		else if (rc == -ENOMEM && budget_failed())
			rc = decode_check(err, "pprof");
		if (rc)
			goto cleanup;
		in = (const uint8_t *)inflated.data;
		len = inflated.len;
	} else if (len > d.lim->max_inflated) {
		rc = OVER(&d, "bytes", "inflated", d.lim->max_inflated);
		goto cleanup;
	}
	if (!len) {
		rc = errmsg_set(err, -EBADMSG, "pprof: empty profile");
		goto cleanup;
	}
	d.data = in;
	d.len = len;
	p = profile_new();
	d.p = p;
	p->period = 0;
	rc = scan_top(&d, p);
	if (!rc)
		rc = scan_strings(&d);
	if (!rc)
		rc = vindex = choose_sample_type(&d, sample_index, p);
	if (rc >= 0)
		rc = scan_entities(&d);
	if (!rc)
		rc = resolve_locations(&d);
	if (!rc)
		rc = scan_samples(&d, vindex);
cleanup:
	if (rc < 0) {
		profile_free(p);
		p = NULL;
	}
	*out = p;
	buf_release(&inflated);
	xfree(d.strs);
	xfree(d.str_ids);
	xfree(d.types);
	xfree(d.maps);
	xfree(d.fns);
	xfree(d.locs);
	xfree(d.lines);
	xfree(d.exp);
	xfree(d.stack);
	xfree(d.labels);
	xfree(d.vals);
	xfree(d.abs_totals);
	u64map_release(&d.map_ids.m);
	u64map_release(&d.fn_ids.m);
	u64map_release(&d.loc_ids.m);
	return rc < 0 ? rc : 0;
}
