/* query.c: the top table and the sandwich view computed from a merged profile (see query.h). */
#include "store/query.h"
#include "store/store.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/strtab.h"
#include "profile/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_top(const void *a, const void *b)
{
	const struct query_top_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct store_profile *query_by_function(const struct store_profile *p)
{
	uint32_t nnames = strtab_count(p->names), *map, *ids = NULL, id;
	struct store_profile *out = NULL;
	struct strtab *names;
	size_t i, j, ids_cap = 0;
	char *buf;
	int changed = 0;

	map = xmalloc((size_t)nnames * sizeof(*map) + 1);
	buf = xmalloc(STORE_MAX_FRAME + 1);
	names = strtab_new();
	for (id = 0; id < nnames; id++) {
		const char *name = strtab_get(p->names, id);
		size_t n = profile_frame_strip_line(name, buf, STORE_MAX_FRAME + 1);

		changed |= n != strlen(name);
		map[id] = strtab_intern(names, buf);
	}
	if (changed) {
		out = store_profile_new();
		strtab_free(out->names);
		out->names = names;
		names = NULL;
		for (i = 0; i < p->nstacks; i++) {
			const struct store_stack *st = &p->stacks[i];

			ALLOC_GROW(ids, st->depth + 1, ids_cap);
			for (j = 0; j < st->depth; j++) {
				uint32_t f = p->frames[st->first + j];

				ids[j] = f < nnames ? map[f] : 0;
			}
			store_profile_add_ids(out, ids, st->depth, st->value);
		}
		out->total = p->total;
		out->other = p->other;
		out->other_stacks = p->other_stacks;
		out->nseries = p->nseries;
		out->sample_rate = p->sample_rate;
		memcpy(out->type, p->type, sizeof(out->type));
		memcpy(out->units, p->units, sizeof(out->units));
		memcpy(out->spy_name, p->spy_name, sizeof(out->spy_name));
		memcpy(out->aggregation, p->aggregation, sizeof(out->aggregation));
	}
	strtab_free(names);
	xfree(ids);
	xfree(buf);
	xfree(map);
	return out;
}

size_t query_top(const struct store_profile *p, struct query_top_row **rows)
{
	uint32_t nnames = strtab_count(p->names), *row_of, *seen;
	struct query_top_row *out = NULL;
	size_t n = 0, cap = 0, i, j;

	row_of = xcalloc(nnames + 1, sizeof(*row_of)); /* name id -> row + 1 */
	seen = xcalloc(nnames + 1, sizeof(*seen));     /* name id -> last stack + 1 counted */
	for (i = 0; i < p->nstacks; i++) {
		const struct store_stack *st = &p->stacks[i];

		for (j = 0; j < st->depth; j++) {
			uint32_t id = p->frames[st->first + j];

			if (id >= nnames)
				continue;
			if (!row_of[id]) {
				ALLOC_GROW(out, n + 1, cap);
				out[n].name = strtab_get(p->names, id);
				out[n].self = 0;
				out[n].total = 0;
				row_of[id] = (uint32_t)++n;
			}
			if (seen[id] != i + 1) {
				seen[id] = (uint32_t)(i + 1);
				out[row_of[id] - 1].total = store_sat_add(out[row_of[id] - 1].total, st->value);
			}
			if (j + 1 == st->depth)
				out[row_of[id] - 1].self = store_sat_add(out[row_of[id] - 1].self, st->value);
		}
	}
	if (n)
		qsort(out, n, sizeof(*out), cmp_top);
	xfree(row_of);
	xfree(seen);
	*rows = out;
	return n;
}

/* Adds stacks to a profile, summing equal ones, with names copied from a source profile. */
struct merger {
	struct store_profile *out;
	const struct store_profile *src;
	uint32_t *id_map; /* src name id -> out name id + 1 */
	struct u64map index; /* hash of ids -> stack index + 1 */
	uint32_t *scratch;
	size_t scratch_cap;
};

static void merger_add(struct merger *m, const uint32_t *src_ids, size_t depth, int64_t value)
{
	uint64_t h, *slot;
	size_t i;

	ALLOC_GROW(m->scratch, depth + 1, m->scratch_cap);
	for (i = 0; i < depth; i++) {
		uint32_t id = src_ids[i];

		if (!m->id_map[id])
			m->id_map[id] = strtab_intern(m->out->names, strtab_get(m->src->names, id)) + 1;
		m->scratch[i] = m->id_map[id] - 1;
	}
	h = hash_bytes(m->scratch, depth * sizeof(uint32_t), 0x5a4d);
	h = (h == 0 || h == ~0ULL) ? 2 : h;
	for (;;) {
		struct store_stack *st;

		slot = u64map_get(&m->index, h);
		if (!slot)
			break;
		st = &m->out->stacks[*slot - 1];
		if (st->depth == depth &&
		    !memcmp(m->out->frames + st->first, m->scratch, depth * sizeof(uint32_t))) {
			st->value = store_sat_add(st->value, value);
			m->out->total = store_sat_add(m->out->total, value);
			return;
		}
		h = (h + 1 == ~0ULL) ? 2 : h + 1; /* a collision: probe the next key */
	}
	store_profile_add_ids(m->out, m->scratch, depth, value);
	u64map_put(&m->index, h, m->out->nstacks);
}

static void copy_meta(struct store_profile *dst, const struct store_profile *src)
{
	dst->nseries = src->nseries;
	dst->sample_rate = src->sample_rate;
	memcpy(dst->type, src->type, sizeof(dst->type));
	memcpy(dst->units, src->units, sizeof(dst->units));
	memcpy(dst->spy_name, src->spy_name, sizeof(dst->spy_name));
	memcpy(dst->aggregation, src->aggregation, sizeof(dst->aggregation));
}

int query_sandwich(const struct store_profile *p, const char *name, struct store_profile **callers,
		   struct store_profile **callees)
{
	uint32_t nnames = strtab_count(p->names), target;
	struct merger up = { 0 }, down = { 0 };
	size_t i, j;

	*callers = store_profile_new();
	*callees = store_profile_new();
	copy_meta(*callers, p);
	copy_meta(*callees, p);
	target = strtab_find(p->names, name, strlen(name));
	if (target == UINT32_MAX)
		return -ENOENT;
	up.out = *callers;
	down.out = *callees;
	up.src = down.src = p;
	up.id_map = xcalloc(nnames + 1, sizeof(uint32_t));
	down.id_map = xcalloc(nnames + 1, sizeof(uint32_t));
	u64map_init(&up.index);
	u64map_init(&down.index);
	for (i = 0; i < p->nstacks; i++) {
		const struct store_stack *st = &p->stacks[i];
		const uint32_t *fr = p->frames + st->first;

		for (j = 0; j < st->depth; j++)
			if (fr[j] == target)
				break;
		if (j == st->depth)
			continue;
		merger_add(&up, fr, j + 1, st->value);
		merger_add(&down, fr + j, st->depth - j, st->value);
	}
	store_profile_truncate(*callers, 0);
	store_profile_truncate(*callees, 0);
	u64map_release(&up.index);
	u64map_release(&down.index);
	xfree(up.id_map);
	xfree(down.id_map);
	xfree(up.scratch);
	xfree(down.scratch);
	return 0;
}
