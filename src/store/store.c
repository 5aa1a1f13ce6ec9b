/* store.c: the generic front of the profile store (see store.h): backend table, argument
 * validation and normalization (sorted labels), label name/value listings built on a backend's
 * series walk, merged-profile helpers and the batch builder. Backends: store_sqlite.c. */
#include "store/store.h"
#include "store/selector.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/strtab.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct store {
	const struct store_ops *ops;
	void *state;
	atomic_uint_least64_t generation; /* store_generation() */
};

static const struct store_ops *const backends[] = {
	&store_sqlite_ops,
	&store_clickhouse_ops,
};

struct store *store_open(const char *kind, const char *path, const struct store_opts *opts,
			 struct errmsg *err)
{
	struct store_opts defaults = { 0 };
	const struct store_ops *ops = NULL;
	struct store *s;
	size_t i;
	int ret;

	if (!kind || !*kind)
		kind = "sqlite";
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(backends[i]->kind, kind))
			ops = backends[i];
	if (!ops) {
		errmsg_set(err, -EINVAL, "unknown store kind '%s'", kind);
		errno = EINVAL;
		return NULL;
	}
	if (!path || !*path) {
		errmsg_set(err, -EINVAL, "store path is empty");
		errno = EINVAL;
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->ops = ops;
	ret = ops->open(path, opts ? opts : &defaults, &s->state, err);
	if (ret < 0) {
		xfree(s);
		errno = -ret;
		return NULL;
	}
	return s;
}

static int cmp_pair_stack(const void *a, const void *b)
{
	const struct store_pair *x = a, *y = b;

	return (x->stack > y->stack) - (x->stack < y->stack);
}

size_t store_pairs_merge(struct store_pair *pairs, size_t n)
{
	size_t i, j;

	if (n < 2)
		return n;
	qsort(pairs, n, sizeof(*pairs), cmp_pair_stack);
	for (i = 1, j = 0; i < n; i++) {
		if (pairs[i].stack == pairs[j].stack)
			pairs[j].value = store_sat_add(pairs[j].value, pairs[i].value);
		else
			pairs[++j] = pairs[i];
	}
	return j + 1;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	s->ops->close(s->state);
	xfree(s);
}

/* ---- validation -------------------------------------------------------------------------- */

static int valid_type(const char *t)
{
	size_t n = 0;

	if (!t || !*t)
		return 0;
	for (; t[n]; n++) {
		char c = t[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == ':' || c == '-'))
			return 0;
	}
	return n <= STORE_MAX_TYPE;
}

static int valid_label_name(const char *n)
{
	size_t i;

	if (!n || !((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= 'A' && n[0] <= 'Z') || n[0] == '_'))
		return 0;
	for (i = 1; n[i]; i++) {
		char c = n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.'))
			return 0;
	}
	return i <= STORE_MAX_LABEL_NAME;
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct store_label *)a)->name, ((const struct store_label *)b)->name);
}

/* Copy b's labels into out (sorted, empty values dropped) after checking them. */
static int normalize_labels(const struct store_batch *b, struct store_label *out, size_t *nout,
			    struct errmsg *err)
{
	size_t i, n = 0;

	if (b->nlabels > STORE_MAX_LABELS)
		return errmsg_set(err, -E2BIG, "too many labels (%zu, at most %d)", b->nlabels,
				  STORE_MAX_LABELS);
	for (i = 0; i < b->nlabels; i++) {
		const struct store_label *l = &b->labels[i];

		if (!valid_label_name(l->name))
			return errmsg_set(err, -EINVAL, "invalid label name '%.64s'", l->name ? l->name : "");
		if (!l->value || !*l->value)
			continue;
		if (strlen(l->value) > STORE_MAX_LABEL_VALUE)
			return errmsg_set(err, -E2BIG, "value of label '%s' is longer than %d bytes",
					  l->name, STORE_MAX_LABEL_VALUE);
		out[n++] = *l;
	}
	qsort(out, n, sizeof(*out), cmp_label);
	for (i = 1; i < n; i++)
		if (!strcmp(out[i - 1].name, out[i].name))
			return errmsg_set(err, -EINVAL, "label '%s' given twice", out[i].name);
	*nout = n;
	return 0;
}

static int check_meta(const char *what, const char *v, struct errmsg *err)
{
	if (v && strlen(v) > STORE_MAX_META)
		return errmsg_set(err, -E2BIG, "%s is longer than %d bytes", what, STORE_MAX_META);
	return 0;
}

static int check_batch(const struct store_batch *b, struct errmsg *err)
{
	uint64_t *seen = NULL;
	size_t i, j;
	int ret;

	if (!valid_type(b->type))
		return errmsg_set(err, -EINVAL, "invalid profile type '%.64s' (expected [A-Za-z0-9_:-]+)",
				  b->type ? b->type : "");
	if (b->from < 0 || b->until < b->from || b->until > STORE_MAX_TIME)
		return errmsg_set(err, -EINVAL, "invalid time range [%lld, %lld)", (long long)b->from,
				  (long long)b->until);
	if ((ret = check_meta("units", b->units, err)) < 0 ||
	    (ret = check_meta("spy name", b->spy_name, err)) < 0 ||
	    (ret = check_meta("aggregation", b->aggregation, err)) < 0)
		return ret;
	if (b->nsamples > STORE_MAX_SAMPLES)
		return errmsg_set(err, -E2BIG, "too many samples in one batch (%zu, at most %d)",
				  b->nsamples, STORE_MAX_SAMPLES);
	if (b->nsamples && !b->samples)
		return errmsg_set(err, -EINVAL, "batch has no sample array");
	if (b->nframe_names && !b->frame_names)
		return errmsg_set(err, -EINVAL, "batch has no frame names");
	/* Only the names samples refer to are checked (once each). */
	seen = xcalloc(b->nframe_names / 64 + 1, sizeof(*seen));
	for (i = 0; i < b->nsamples; i++) {
		const struct store_sample *sm = &b->samples[i];

		if (sm->value < 0) {
			ret = errmsg_set(err, -EINVAL, "negative sample value %lld", (long long)sm->value);
			goto cleanup;
		}
		if (sm->nframes > STORE_MAX_DEPTH) {
			ret = errmsg_set(err, -E2BIG, "stack of %u frames (at most %d)", sm->nframes,
					 STORE_MAX_DEPTH);
			goto cleanup;
		}
		if (sm->nframes && !sm->frames) {
			ret = errmsg_set(err, -EINVAL, "sample %zu has no frame array", i);
			goto cleanup;
		}
		for (j = 0; j < sm->nframes; j++) {
			uint32_t f = sm->frames[j];

			if (f >= b->nframe_names) {
				ret = errmsg_set(err, -EINVAL, "sample %zu refers to frame %u of %zu", i, f,
						 b->nframe_names);
				goto cleanup;
			}
			if (seen[f / 64] & (1ULL << (f % 64)))
				continue;
			seen[f / 64] |= 1ULL << (f % 64);
			if (!b->frame_names[f]) {
				ret = errmsg_set(err, -EINVAL, "frame name %u is NULL", f);
				goto cleanup;
			}
			if (strlen(b->frame_names[f]) > STORE_MAX_FRAME) {
				ret = errmsg_set(err, -E2BIG, "frame name %u is longer than %d bytes", f,
						 STORE_MAX_FRAME);
				goto cleanup;
			}
		}
	}
	ret = 0;
cleanup:
	xfree(seen);
	return ret;
}

int store_write(struct store *s, const struct store_batch *batches, size_t n, struct errmsg *err)
{
	struct store_batch *copy = NULL;
	struct store_label *labels = NULL;
	size_t i, used = 0;
	int ret = 0;

	if (!n)
		return 0;
	if (!batches)
		return errmsg_set(err, -EINVAL, "no batches");
	copy = xcalloc(n, sizeof(*copy));
	for (i = 0; i < n; i++) {
		ret = check_batch(&batches[i], err);
		if (ret < 0)
			goto cleanup;
		used += batches[i].nlabels;
	}
	labels = xcalloc(used ? used : 1, sizeof(*labels));
	used = 0;
	for (i = 0; i < n; i++) {
		size_t nl = 0;

		ret = normalize_labels(&batches[i], labels + used, &nl, err);
		if (ret < 0)
			goto cleanup;
		copy[i] = batches[i];
		copy[i].labels = labels + used;
		copy[i].nlabels = nl;
		used += nl;
	}
	ret = s->ops->write(s->state, copy, n, err);
	/* A write refused for space may have dropped old data to make room first. */
	if (ret == 0 || ret == -ENOSPC)
		atomic_fetch_add_explicit(&s->generation, 1, memory_order_release);
cleanup:
	xfree(labels);
	xfree(copy);
	return ret;
}

int store_maintain(struct store *s, int64_t now, struct errmsg *err)
{
	int ret = s->ops->maintain(s->state, now, err);

	/* The backend says 1 when it dropped data (retention): what was read before, or during
	 * the pass, is no longer what a query gives. Rollups change nothing a query sees. */
	if (ret != 0)
		atomic_fetch_add_explicit(&s->generation, 1, memory_order_release);
	return ret < 0 ? ret : 0;
}

uint64_t store_generation(struct store *s)
{
	return atomic_load_explicit(&s->generation, memory_order_acquire);
}

static int check_query(const struct store_query *q, struct errmsg *err)
{
	if (q && q->until < q->from)
		return errmsg_set(err, -EINVAL, "time range ends before it starts");
	return 0;
}

int store_series(struct store *s, const struct store_query *q, store_series_fn fn, void *arg,
		 struct errmsg *err)
{
	struct store_query all = { 0 };
	int ret = check_query(q, err);

	if (ret < 0)
		return ret;
	return s->ops->series(s->state, q ? q : &all, fn, arg, err);
}

int store_merge(struct store *s, const struct store_query *q, size_t max_stacks,
		struct store_profile **out, struct errmsg *err)
{
	int ret = check_query(q, err);

	*out = NULL;
	if (ret < 0)
		return ret;
	if (!q)
		return errmsg_set(err, -EINVAL, "merge needs a query");
	if (!max_stacks)
		max_stacks = STORE_DEFAULT_MAX_STACKS;
	if (max_stacks > STORE_MAX_MERGE_STACKS)
		max_stacks = STORE_MAX_MERGE_STACKS;
	return s->ops->merge(s->state, q, max_stacks, out, err);
}

int store_timeseries(struct store *s, const struct store_query *q, int64_t step,
		     const char *group_by, struct store_timeseries **out, struct errmsg *err)
{
	int64_t range;
	int ret = check_query(q, err);

	*out = NULL;
	if (ret < 0)
		return ret;
	if (!q)
		return errmsg_set(err, -EINVAL, "time series needs a query");
	range = q->until - q->from;
	if (step <= 0) {
		step = range / 1000;
		if (step < 10)
			step = 10;
	}
	if (range / step >= STORE_MAX_POINTS)
		step = range / (STORE_MAX_POINTS - 1) + 1;
	if (group_by && !*group_by)
		group_by = NULL;
	return s->ops->timeseries(s->state, q, step, group_by, out, err);
}

void store_timeseries_free(struct store_timeseries *ts)
{
	size_t i;

	if (!ts)
		return;
	for (i = 0; i < ts->ngroups; i++) {
		xfree(ts->groups[i].group);
		xfree(ts->groups[i].values);
	}
	xfree(ts->groups);
	xfree(ts);
}

int store_stats(struct store *s, struct store_stats *out, struct errmsg *err)
{
	memset(out, 0, sizeof(*out));
	return s->ops->stats(s->state, out, err);
}

/* ---- labels --------------------------------------------------------------------------------- */

void store_strings_release(struct store_strings *l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->n; i++)
		xfree(l->v[i]);
	xfree(l->v);
	l->v = NULL;
	l->n = 0;
}

char *store_series_group(const struct store_series_info *info, const char *group_by)
{
	const char *v = "", *app = "";
	size_t i;

	if (!strcmp(group_by, "__type__"))
		v = info->type;
	for (i = 0; i < info->nlabels; i++) {
		if (!strcmp(info->labels[i].name, group_by))
			v = info->labels[i].value;
		if (!strcmp(info->labels[i].name, "service_name"))
			app = info->labels[i].value;
	}
	/* __name__: the legacy application name APP.TYPE, as in store_label_values(). */
	return !strcmp(group_by, "__name__") ? xasprintf("%s.%s", app, info->type) : xstrdup(v);
}

struct label_walk {
	struct strtab *set;
	const char *name; /* NULL: collect names */
};

static int collect_label(const struct store_series_info *info, void *arg)
{
	struct label_walk *w = arg;
	size_t i;

	if (!w->name) {
		for (i = 0; i < info->nlabels; i++)
			strtab_intern(w->set, info->labels[i].name);
		return 0;
	}
	if (!strcmp(w->name, "__type__")) {
		strtab_intern(w->set, info->type);
		return 0;
	}
	if (!strcmp(w->name, "__name__")) {
		const char *app = "";
		char *full;

		for (i = 0; i < info->nlabels; i++)
			if (!strcmp(info->labels[i].name, "service_name"))
				app = info->labels[i].value;
		full = xasprintf("%s.%s", app, info->type);
		strtab_intern(w->set, full);
		xfree(full);
		return 0;
	}
	for (i = 0; i < info->nlabels; i++)
		if (!strcmp(info->labels[i].name, w->name))
			strtab_intern(w->set, info->labels[i].value);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int label_walk(struct store *s, const char *name, const struct store_query *q,
		      struct store_strings *out, struct errmsg *err)
{
	struct label_walk w = { strtab_new(), name };
	uint32_t i, n;
	int ret;

	out->v = NULL;
	out->n = 0;
	ret = store_series(s, q, collect_label, &w, err);
	if (ret < 0)
		goto cleanup;
	n = strtab_count(w.set);
	out->v = xcalloc(n ? n : 1, sizeof(*out->v));
	for (i = 1; i < n; i++) /* id 0 is "" */
		out->v[out->n++] = xstrdup(strtab_get(w.set, i));
	qsort(out->v, out->n, sizeof(*out->v), cmp_str);
cleanup:
	strtab_free(w.set);
	return ret;
}

int store_label_names(struct store *s, const struct store_query *q, struct store_strings *out,
		      struct errmsg *err)
{
	return label_walk(s, NULL, q, out, err);
}

int store_label_values(struct store *s, const char *name, const struct store_query *q,
		       struct store_strings *out, struct errmsg *err)
{
	if (!name || !*name) {
		out->v = NULL;
		out->n = 0;
		return errmsg_set(err, -EINVAL, "label name is empty");
	}
	return label_walk(s, name, q, out, err);
}

/* ---- merged profiles -------------------------------------------------------------------------- */

struct store_profile *store_profile_new(void)
{
	struct store_profile *p = xcalloc(1, sizeof(*p));

	p->names = strtab_new();
	return p;
}

void store_profile_free(struct store_profile *p)
{
	if (!p)
		return;
	strtab_free(p->names);
	xfree(p->frames);
	xfree(p->stacks);
	xfree(p);
}

void store_profile_add_ids(struct store_profile *p, const uint32_t *ids, size_t depth, int64_t value)
{
	struct store_stack *st;

	ALLOC_GROW(p->frames, p->nframes + depth, p->frames_cap);
	ALLOC_GROW(p->stacks, p->nstacks + 1, p->stacks_cap);
	st = &p->stacks[p->nstacks++];
	st->first = (uint32_t)p->nframes;
	st->depth = (uint32_t)depth;
	st->value = value;
	if (depth)
		memcpy(p->frames + p->nframes, ids, depth * sizeof(*ids));
	p->nframes += depth;
	p->total = store_sat_add(p->total, value);
}

void store_profile_add(struct store_profile *p, const char *const *names, size_t depth, int64_t value)
{
	struct store_stack *st;
	size_t i;

	ALLOC_GROW(p->frames, p->nframes + depth, p->frames_cap);
	ALLOC_GROW(p->stacks, p->nstacks + 1, p->stacks_cap);
	st = &p->stacks[p->nstacks++];
	st->first = (uint32_t)p->nframes;
	st->depth = (uint32_t)depth;
	st->value = value;
	for (i = 0; i < depth; i++)
		p->frames[p->nframes++] = strtab_intern(p->names, names[i]);
	p->total = store_sat_add(p->total, value);
}

static int cmp_stack(const void *a, const void *b, void *arg)
{
	const struct store_stack *x = a, *y = b;
	const uint32_t *sort_frames = arg;
	uint32_t i, n = x->depth < y->depth ? x->depth : y->depth;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	for (i = 0; i < n; i++) {
		uint32_t fx = sort_frames[x->first + i], fy = sort_frames[y->first + i];

		if (fx != fy)
			return fx < fy ? -1 : 1;
	}
	return (x->depth > y->depth) - (x->depth < y->depth);
}

void store_profile_truncate(struct store_profile *p, size_t max)
{
	size_t i;

	if (p->nstacks > 1)
		qsort_r(p->stacks, p->nstacks, sizeof(*p->stacks), cmp_stack, p->frames);
	if (!max || p->nstacks <= max)
		return;
	for (i = max; i < p->nstacks; i++) {
		p->other = store_sat_add(p->other, p->stacks[i].value);
		p->other_stacks++;
	}
	p->nstacks = max;
}

/* ---- batch builder ------------------------------------------------------------------------------ */

struct store_batchbuf {
	struct strtab *names;
	const char **name_ptrs; /* name_ptrs[id] = strtab_get(names, id) */
	size_t nnames, names_cap;
	uint32_t *pool;         /* frame ids of all stacks */
	size_t npool, pool_cap;
	struct bb_stack { size_t first; uint32_t depth; int64_t value; } *stacks;
	size_t nstacks, stacks_cap;
	struct store_sample *samples; /* ncols sections of nstacks */
	size_t samples_cap;
	struct u64map index;    /* hash of a stack -> index + 1 */
	uint32_t *scratch;
	size_t scratch_cap;
	size_t ncols;           /* value columns (1: the stack's value only) */
	int64_t *vals;          /* ncols values per stack when ncols > 1 */
	size_t vals_cap;
};

struct store_batchbuf *store_batchbuf_new(void)
{
	struct store_batchbuf *bb = xcalloc(1, sizeof(*bb));

	bb->names = strtab_new();
	u64map_init(&bb->index);
	store_batchbuf_reset(bb);
	return bb;
}

void store_batchbuf_free(struct store_batchbuf *bb)
{
	if (!bb)
		return;
	strtab_free(bb->names);
	xfree(bb->name_ptrs);
	xfree(bb->pool);
	xfree(bb->stacks);
	xfree(bb->samples);
	xfree(bb->scratch);
	xfree(bb->vals);
	u64map_release(&bb->index);
	xfree(bb);
}

void store_batchbuf_reset(struct store_batchbuf *bb)
{
	strtab_free(bb->names);
	bb->names = strtab_new();
	bb->nnames = 0;
	ALLOC_GROW(bb->name_ptrs, 1, bb->names_cap);
	bb->name_ptrs[bb->nnames++] = strtab_get(bb->names, 0);
	bb->npool = 0;
	bb->nstacks = 0;
	if (!bb->ncols)
		bb->ncols = 1;
	u64map_release(&bb->index);
	u64map_init(&bb->index);
}

void store_batchbuf_set_columns(struct store_batchbuf *bb, size_t n)
{
	if (bb->nstacks || n == 0)
		BUG("store_batchbuf_set_columns(%zu) after %zu stacks", n, bb->nstacks);
	bb->ncols = n;
}

static uint32_t bb_intern(struct store_batchbuf *bb, const char *s, size_t len)
{
	uint32_t id = strtab_intern_len(bb->names, s, len);

	if (id == bb->nnames) {
		ALLOC_GROW(bb->name_ptrs, bb->nnames + 1, bb->names_cap);
		bb->name_ptrs[bb->nnames++] = strtab_get(bb->names, id);
	}
	return id;
}

/* Add the stack in bb->scratch[0..n) with value (one column) or values (ncols columns). */
static int bb_add_ids(struct store_batchbuf *bb, size_t n, int64_t value, const int64_t *values)
{
	uint64_t h = hash_bytes(bb->scratch, n * sizeof(uint32_t), 0x57ac), *slot;
	struct bb_stack *st;
	size_t k;

	h = (h == ~0ULL) ? 2 : (h | 1);
	slot = u64map_get(&bb->index, h);
	if (slot) {
		st = &bb->stacks[*slot - 1];
		if (st->depth == n && !memcmp(bb->pool + st->first, bb->scratch, n * sizeof(uint32_t))) {
			st->value = store_sat_add(st->value, value);
			for (k = 0; values && k < bb->ncols; k++) {
				int64_t *v = &bb->vals[(*slot - 1) * bb->ncols + k];

				*v = store_sat_add(*v, values[k]);
			}
			return 0;
		}
	}
	if (bb->nstacks >= STORE_MAX_SAMPLES)
		return -E2BIG;
	ALLOC_GROW(bb->pool, bb->npool + n, bb->pool_cap);
	ALLOC_GROW(bb->stacks, bb->nstacks + 1, bb->stacks_cap);
	if (values) {
		ALLOC_GROW(bb->vals, (bb->nstacks + 1) * bb->ncols, bb->vals_cap);
		memcpy(bb->vals + bb->nstacks * bb->ncols, values, bb->ncols * sizeof(*values));
	}
	st = &bb->stacks[bb->nstacks++];
	st->first = bb->npool;
	st->depth = (uint32_t)n;
	st->value = value;
	if (n)
		memcpy(bb->pool + bb->npool, bb->scratch, n * sizeof(uint32_t));
	bb->npool += n;
	if (!slot)
		u64map_put(&bb->index, h, bb->nstacks);
	return 0;
}

/* Intern frames[0..n) into bb->scratch. */
static int bb_frames(struct store_batchbuf *bb, const char *const *frames, size_t n)
{
	size_t i;

	if (n > STORE_MAX_DEPTH)
		return -E2BIG;
	ALLOC_GROW(bb->scratch, n + 1, bb->scratch_cap);
	for (i = 0; i < n; i++) {
		size_t len = strlen(frames[i]);

		if (len > STORE_MAX_FRAME)
			return -E2BIG;
		bb->scratch[i] = bb_intern(bb, frames[i], len);
	}
	return 0;
}

int store_batchbuf_add_values(struct store_batchbuf *bb, const char *const *frames, size_t n,
			      const int64_t *values)
{
	size_t k;
	int err;

	if (bb->ncols < 2)
		return store_batchbuf_add(bb, frames, n, values[0]);
	for (k = 0; k < bb->ncols; k++)
		if (values[k] < 0)
			return -EINVAL;
	err = bb_frames(bb, frames, n);
	return err ? err : bb_add_ids(bb, n, values[0], values);
}

int store_batchbuf_add(struct store_batchbuf *bb, const char *const *frames, size_t n, int64_t value)
{
	size_t i;

	if (value < 0)
		return -EINVAL;
	if (bb->ncols > 1)
		BUG("store_batchbuf_add on a batch builder with %zu columns", bb->ncols);
	if (n > STORE_MAX_DEPTH)
		return -E2BIG;
	ALLOC_GROW(bb->scratch, n + 1, bb->scratch_cap);
	for (i = 0; i < n; i++) {
		size_t len = strlen(frames[i]);

		if (len > STORE_MAX_FRAME)
			return -E2BIG;
		bb->scratch[i] = bb_intern(bb, frames[i], len);
	}
	return bb_add_ids(bb, n, value, NULL);
}

int store_batchbuf_add_split(struct store_batchbuf *bb, const char *stack, size_t len, char sep,
			     int64_t value)
{
	size_t i = 0, n = 0;

	if (value < 0)
		return -EINVAL;
	while (i < len) {
		size_t j = i;

		while (j < len && stack[j] != sep)
			j++;
		if (n >= STORE_MAX_DEPTH || j - i > STORE_MAX_FRAME)
			return -E2BIG;
		ALLOC_GROW(bb->scratch, n + 1, bb->scratch_cap);
		bb->scratch[n++] = bb_intern(bb, stack + i, j - i);
		i = j + 1;
	}
	if (bb->ncols > 1)
		BUG("store_batchbuf_add_split on a batch builder with %zu columns", bb->ncols);
	return bb_add_ids(bb, n, value, NULL);
}

void store_batchbuf_fill(struct store_batchbuf *bb, struct store_batch *b)
{
	store_batchbuf_fill_column(bb, 0, b);
}

void store_batchbuf_fill_column(struct store_batchbuf *bb, size_t col, struct store_batch *b)
{
	struct store_sample *out;
	size_t i, n = 0;

	if (col >= bb->ncols)
		BUG("store_batchbuf_fill_column(%zu) of %zu columns", col, bb->ncols);
	/* Every column has its section, so the batches of all columns stay valid together. */
	ALLOC_GROW(bb->samples, bb->nstacks * bb->ncols + 1, bb->samples_cap);
	out = bb->samples + col * bb->nstacks;
	for (i = 0; i < bb->nstacks; i++) {
		int64_t v = bb->ncols > 1 ? bb->vals[i * bb->ncols + col] : bb->stacks[i].value;

		if (bb->ncols > 1 && !v)
			continue; /* a stack seen only in other columns */
		out[n].frames = bb->pool + bb->stacks[i].first;
		out[n].nframes = bb->stacks[i].depth;
		out[n].value = v;
		n++;
	}
	b->frame_names = bb->name_ptrs;
	b->nframe_names = bb->nnames;
	b->samples = out;
	b->nsamples = n;
}

size_t store_batchbuf_nsamples(const struct store_batchbuf *bb)
{
	return bb->nstacks;
}

size_t store_batchbuf_nframes(const struct store_batchbuf *bb)
{
	return bb->npool;
}
