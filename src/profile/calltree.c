/* calltree.c: merge a profile's samples into a root-first call tree (see calltree.h).
 *
 * Building inserts each sample's path with a (parent, name) -> child hash map, linking children
 * in lists, and adds the sample's value to the self of its last node only; a final pass sums
 * the totals bottom-up and lays the tree out in preorder with sorted children. Frame names are
 * computed once per location, not per sample. */
#include "profile/calltree.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/strtab.h"

#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 4096

/* (parent, name) -> child, open addressing with the key and the node in one slot: building a
 * tree is one lookup per frame of every sample, and this keeps each to about one cache miss. */
struct child_slot {
	uint64_t key; /* ((parent << 32) | name) + 1, 0 = empty */
	uint32_t node;
};

struct builder {
	struct strtab *names;
	struct calltree_node *n;
	size_t nn, ncap;
	uint32_t *first, *next; /* child lists: 0 ends (the root is never a child) */
	size_t fcap, xcap;
	struct child_slot *slots;
	size_t nslots, used;    /* nslots: a power of two, at most half used */
};

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static uint32_t new_node(struct builder *b, uint32_t parent, uint32_t name, uint8_t kind)
{
	uint32_t i = (uint32_t)b->nn;

	ALLOC_GROW(b->n, b->nn + 1, b->ncap);
	ALLOC_GROW(b->first, b->nn + 1, b->fcap);
	ALLOC_GROW(b->next, b->nn + 1, b->xcap);
	b->nn++;
	memset(&b->n[i], 0, sizeof(b->n[i]));
	b->n[i].name = name;
	b->n[i].parent = parent;
	b->n[i].kind = kind;
	b->first[i] = 0;
	b->next[i] = 0;
	if (i) {
		b->n[i].depth = b->n[parent].depth + 1;
		b->next[i] = b->first[parent];
		b->first[parent] = i;
	}
	return i;
}

static void index_grow(struct builder *b)
{
	struct child_slot *old = b->slots;
	size_t n = b->nslots, i, j, mask;

	b->nslots = n ? n * 2 : 1024;
	b->slots = xcalloc(b->nslots, sizeof(*b->slots));
	mask = b->nslots - 1;
	for (i = 0; i < n; i++) {
		if (!old[i].key)
			continue;
		for (j = hash_u64(old[i].key) & mask; b->slots[j].key; j = (j + 1) & mask)
			;
		b->slots[j] = old[i];
	}
	xfree(old);
}

static uint32_t child(struct builder *b, uint32_t parent, uint32_t name, uint8_t kind)
{
	uint64_t key = (((uint64_t)parent << 32) | name) + 1;
	size_t mask, j;

	if ((b->used + 1) * 2 > b->nslots)
		index_grow(b);
	mask = b->nslots - 1;
	for (j = hash_u64(key) & mask; b->slots[j].key; j = (j + 1) & mask) {
		if (b->slots[j].key == key)
			return b->slots[j].node;
	}
	b->slots[j].key = key;
	b->slots[j].node = new_node(b, parent, name, kind);
	b->used++;
	return b->slots[j].node;
}

static int cmp_names(const void *a, const void *b, void *arg)
{
	const struct builder *bl = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return strcmp(strtab_get(bl->names, bl->n[x].name), strtab_get(bl->names, bl->n[y].name));
}

/* Lay the built tree out in preorder with each node's children sorted by name. */
static void layout(struct builder *b, struct calltree *t)
{
	uint32_t *size = xmalloc(b->nn * sizeof(*size));
	uint32_t *newidx = xmalloc(b->nn * sizeof(*newidx));
	uint32_t *stack = xmalloc(b->nn * sizeof(*stack));
	uint32_t *kids = NULL;
	size_t i, sp = 0, pos = 0, kcap = 0;

	/* Totals and subtree sizes bottom-up: a child is always created after its parent. */
	for (i = 0; i < b->nn; i++) {
		size[i] = 1;
		b->n[i].total = b->n[i].self;
	}
	for (i = b->nn; i-- > 1;) {
		size[b->n[i].parent] += size[i];
		b->n[b->n[i].parent].total = sat_add(b->n[b->n[i].parent].total, b->n[i].total);
	}
	t->nodes = xmalloc(b->nn * sizeof(*t->nodes));
	t->nnodes = b->nn;
	stack[sp++] = 0;
	while (sp) {
		uint32_t o = stack[--sp], c, k = 0;
		struct calltree_node *out = &t->nodes[pos];

		newidx[o] = (uint32_t)pos;
		*out = b->n[o];
		out->parent = o ? newidx[b->n[o].parent] : 0;
		out->end = (uint32_t)(pos + size[o]);
		if (out->depth > t->max_depth)
			t->max_depth = out->depth;
		pos++;
		for (c = b->first[o]; c; c = b->next[c]) {
			ALLOC_GROW(kids, k + 1, kcap);
			kids[k++] = c;
		}
		out->nchildren = k;
		if (k > 1)
			qsort_r(kids, k, sizeof(*kids), cmp_names, b);
		while (k)
			stack[sp++] = kids[--k];
	}
	xfree(size);
	xfree(newidx);
	xfree(stack);
	xfree(kids);
}

struct calltree *calltree_build(const struct profile *p, unsigned flags)
{
	struct calltree *t = xcalloc(1, sizeof(*t));
	struct builder b;
	uint32_t *loc_name = xmalloc((p->nlocations + 1) * sizeof(*loc_name));
	uint8_t *loc_kind = xmalloc(p->nlocations + 1);
	uint32_t comm_key = strtab_find(p->strings, "comm", 4);
	char *name = xmalloc(NAME_MAX_LEN);
	size_t i, j;

	memset(&b, 0, sizeof(b));
	b.names = t->names = strtab_new();
	memset(loc_name, 0xff, (p->nlocations + 1) * sizeof(*loc_name));
	if (flags & CALLTREE_NO_COMM)
		comm_key = UINT32_MAX;
	new_node(&b, 0, 0, CALLTREE_ROOT);
	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const struct profile_label *labels = profile_sample_labels(p, s);
		uint32_t node = 0;

		if (s->value <= 0)
			continue;
		for (j = 0; comm_key != UINT32_MAX && j < s->nlabels; j++) {
			if (labels[j].key == comm_key && labels[j].str) {
				node = child(&b, node,
					     strtab_intern(t->names, profile_get_str(p, labels[j].str)),
					     CALLTREE_PROCESS);
				break;
			}
		}
		for (j = s->nlocs; j-- > 0;) {
			uint32_t loc = locs[j] <= p->nlocations ? locs[j] : 0;

			if (loc_name[loc] == UINT32_MAX) {
				const struct profile_location *l = loc ? &p->locations[loc - 1] : NULL;

				profile_frame_name(p, loc, name, NAME_MAX_LEN);
				loc_name[loc] = strtab_intern(t->names, name);
				if (l && l->function && l->function <= p->nfunctions)
					loc_kind[loc] = p->functions[l->function - 1].kind & 3;
				else
					loc_kind[loc] = l && l->mapping ? CALLTREE_NATIVE : CALLTREE_SPECIAL;
			}
			node = child(&b, node, loc_name[loc], loc_kind[loc]);
		}
		b.n[node].self = sat_add(b.n[node].self, s->value);
	}
	layout(&b, t);
	xfree(b.n);
	xfree(b.first);
	xfree(b.next);
	xfree(b.slots);
	xfree(loc_name);
	xfree(loc_kind);
	xfree(name);
	return t;
}

void calltree_free(struct calltree *t)
{
	if (!t)
		return;
	strtab_free(t->names);
	xfree(t->nodes);
	xfree(t);
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

size_t calltree_truncate(struct calltree *t, size_t max_nodes)
{
	int64_t *totals, thr;
	uint32_t *newidx, *size;
	size_t i, kept = 0, removed;

	if (max_nodes < 1)
		max_nodes = 1;
	if (t->nnodes <= max_nodes)
		return 0;
	totals = xmalloc(t->nnodes * sizeof(*totals));
	for (i = 0; i < t->nnodes; i++)
		totals[i] = t->nodes[i].total;
	qsort(totals, t->nnodes, sizeof(*totals), cmp_desc);
	thr = totals[max_nodes - 1];
	xfree(totals);

	/* Keep, in preorder, nodes above the threshold and those at it while room is left; a node
	 * whose parent went is dropped too. newidx[i] is i's new index or UINT32_MAX. */
	newidx = xmalloc(t->nnodes * sizeof(*newidx));
	for (i = 0; i < t->nnodes; i++) {
		const struct calltree_node *n = &t->nodes[i];
		int keep = i == 0 || (newidx[n->parent] != UINT32_MAX &&
				      (n->total > thr || (n->total == thr && kept < max_nodes)));

		newidx[i] = keep && kept < max_nodes ? (uint32_t)kept++ : UINT32_MAX;
		if (newidx[i] != UINT32_MAX && i != kept - 1)
			t->nodes[kept - 1] = *n;
		if (newidx[i] != UINT32_MAX)
			t->nodes[kept - 1].parent = i ? newidx[n->parent] : 0;
	}
	xfree(newidx);
	removed = t->nnodes - kept;
	t->nnodes = kept;
	t->truncated += removed;
	/* Recount children and subtree ends; parents precede children in preorder. */
	size = xmalloc(kept * sizeof(*size));
	t->max_depth = 0;
	for (i = 0; i < kept; i++) {
		size[i] = 1;
		t->nodes[i].nchildren = 0;
		if (t->nodes[i].depth > t->max_depth)
			t->max_depth = t->nodes[i].depth;
	}
	for (i = kept; i-- > 1;) {
		size[t->nodes[i].parent] += size[i];
		t->nodes[t->nodes[i].parent].nchildren++;
	}
	for (i = 0; i < kept; i++)
		t->nodes[i].end = (uint32_t)(i + size[i]);
	xfree(size);
	return removed;
}

const char *calltree_name(const struct calltree *t, size_t i)
{
	return i < t->nnodes ? strtab_get(t->names, t->nodes[i].name) : "";
}

const char *calltree_kind_name(unsigned kind)
{
	static const char *const names[CALLTREE_NKINDS] = {
		"native", "kernel", "python", "special", "process", "root",
	};

	return kind < CALLTREE_NKINDS ? names[kind] : "native";
}
