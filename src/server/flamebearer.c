/* flamebearer.c: call tree building, truncation and level encoding (see flamebearer.h).
 *
 * The tree is built from the stacks sorted by frames (see tree_build()). Truncation computes
 * one keep order (keep_order(): the qualifying nodes level by level, then best first by
 * weight); any prefix of it is a connected tree, so the nodes kept are the longest prefix
 * whose "other" nodes still fit in the budget, found in one pass over the order. */
#include "server/flamebearer.h"
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/json.h"
#include "lib/strtab.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct fb_node {
	uint32_t parent;
	uint32_t name;    /* id in fb_tree.names */
	uint32_t kids;    /* first index into fb_tree.kids (after layout) */
	uint32_t kidx;    /* place in the keep order (while truncating) */
	uint32_t nkids;
	uint32_t depth;
	int64_t total[2], self[2];
	int64_t x[2];
	uint8_t kept, is_other;
};

struct fb_tree {
	struct fb_node *nodes;
	size_t n, cap;
	struct strtab *names;
	int64_t other[2];    /* the profiles' own `other` values */
	uint32_t *kids;
	uint32_t name_total, name_other;
	int64_t *w;          /* weights of the nodes while truncating (heavier()) */
	uint32_t *kept_list; /* the kept nodes ("other" ones included) after a truncation;
	                      * NULL: every node */
	size_t nkept_list;
};

static uint32_t add_node(struct fb_tree *t, uint32_t parent, uint32_t name)
{
	struct fb_node *n;

	ALLOC_GROW(t->nodes, t->n + 1, t->cap);
	n = &t->nodes[t->n];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->name = name;
	n->depth = t->n ? t->nodes[parent].depth + 1 : 0;
	return (uint32_t)t->n++;
}

static void tree_init(struct fb_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->names = strtab_new();
	t->name_total = strtab_intern(t->names, "total");
	t->name_other = strtab_intern(t->names, "other");
	add_node(t, 0, t->name_total);
}

static void tree_release(struct fb_tree *t)
{
	xfree(t->nodes);
	xfree(t->kids);
	xfree(t->kept_list);
	strtab_free(t->names);
}

/* Stacks of both sides with frames as ids of the tree's name table, to be sorted. */
struct fb_entry {
	uint32_t first, depth;
	int side;
	int64_t value;
};

struct fb_input {
	uint32_t *pool;
	size_t npool, pool_cap;
	struct fb_entry *e;
	size_t n, cap;
	uint32_t max_depth;
};

static void input_add(struct fb_tree *t, struct fb_input *in, const struct store_profile *p,
		      int side)
{
	uint32_t nnames = strtab_count(p->names);
	uint32_t *map = xmalloc((nnames ? nnames : 1) * sizeof(*map));
	size_t i, j;

	memset(map, 0xff, (nnames ? nnames : 1) * sizeof(*map));
	for (i = 0; i < p->nstacks; i++) {
		const struct store_stack *st = &p->stacks[i];
		struct fb_entry *e;

		if (st->value <= 0)
			continue;
		ALLOC_GROW(in->e, in->n + 1, in->cap);
		ALLOC_GROW(in->pool, in->npool + st->depth, in->pool_cap);
		e = &in->e[in->n++];
		e->first = (uint32_t)in->npool;
		e->depth = st->depth;
		e->side = side;
		e->value = st->value;
		for (j = 0; j < st->depth; j++) {
			uint32_t f = p->frames[st->first + j];

			if (f >= nnames)
				f = 0;
			if (map[f] == UINT32_MAX)
				map[f] = strtab_intern(t->names, strtab_get(p->names, f));
			in->pool[in->npool++] = map[f];
		}
		if (st->depth > in->max_depth)
			in->max_depth = st->depth;
	}
	if (p->other > 0)
		t->other[side] = store_sat_add(t->other[side], p->other);
	xfree(map);
}

static int cmp_entry(const void *a, const void *b, void *arg)
{
	const struct fb_entry *x = a, *y = b;
	const uint32_t *pool = arg, *px = pool + x->first, *py = pool + y->first;
	uint32_t i, n = x->depth < y->depth ? x->depth : y->depth;

	for (i = 0; i < n; i++)
		if (px[i] != py[i])
			return px[i] < py[i] ? -1 : 1;
	return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Build the tree from stacks sorted by their frame ids: stacks sharing a prefix are then
 * adjacent, so each stack reuses the path of the previous one up to their common prefix and
 * only creates the nodes after it. No lookup structure is needed, and no node is created twice
 * (a second stack with the same prefix and next frame would have to sort between them). */
static void tree_build(struct fb_tree *t, struct fb_input *in)
{
	uint32_t *path = xmalloc(((size_t)in->max_depth + 1) * sizeof(*path));
	const struct fb_entry *prev = NULL;
	size_t i;
	uint32_t j;
	int side;

	if (in->n > 1)
		qsort_r(in->e, in->n, sizeof(*in->e), cmp_entry, in->pool);
	path[0] = 0;
	for (i = 0; i < in->n; i++) {
		const struct fb_entry *e = &in->e[i];
		const uint32_t *ids = in->pool + e->first;
		uint32_t lcp = 0;

		if ((i & 255) == 0 && budget_check() < 0)
			break; /* build_and_write() reports it */
		if (prev) {
			const uint32_t *pids = in->pool + prev->first;

			while (lcp < prev->depth && lcp < e->depth && ids[lcp] == pids[lcp])
				lcp++;
		}
		for (j = lcp; j < e->depth; j++)
			path[j + 1] = add_node(t, path[j], ids[j]);
		for (j = 0; j <= e->depth; j++)
			t->nodes[path[j]].total[e->side] = store_sat_add(t->nodes[path[j]].total[e->side], e->value);
		t->nodes[path[e->depth]].self[e->side] = store_sat_add(t->nodes[path[e->depth]].self[e->side], e->value);
		prev = e;
	}
	xfree(path);
	/* The profiles' own rest goes to a root child "other" (merged with a frame so named). */
	for (side = 0; side < 2; side++) {
		uint32_t o = 0;
		size_t n;

		if (t->other[side] <= 0)
			continue;
		for (n = 1; n < t->n && !o; n++)
			if (t->nodes[n].parent == 0 && t->nodes[n].name == t->name_other)
				o = (uint32_t)n;
		if (!o)
			o = add_node(t, 0, t->name_other);
		t->nodes[0].total[side] = store_sat_add(t->nodes[0].total[side], t->other[side]);
		t->nodes[o].total[side] = store_sat_add(t->nodes[o].total[side], t->other[side]);
		t->nodes[o].self[side] = store_sat_add(t->nodes[o].self[side], t->other[side]);
	}
}

static int64_t weight(const struct fb_node *n)
{
	return store_sat_add(n->total[0], n->total[1]);
}

/* Heavier first; equal weights by index (a parent before its children, as it was created
 * first). */
static int heavier(const struct fb_tree *t, uint32_t a, uint32_t b)
{
	int64_t wa = t->w[a], wb = t->w[b];

	return wa != wb ? wa > wb : a < b;
}

static int cmp_heavier(const void *a, const void *b, void *arg)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x == y ? 0 : heavier(arg, x, y) ? -1 : 1;
}

/* A binary max-heap of node indexes ordered by heavier(). */
struct fb_heap {
	uint32_t *v;
	size_t n;
};

static void heap_push(const struct fb_tree *t, struct fb_heap *h, uint32_t x)
{
	size_t i = h->n++;

	while (i && heavier(t, x, h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

static uint32_t heap_pop(const struct fb_tree *t, struct fb_heap *h)
{
	uint32_t top = h->v[0], x = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && heavier(t, h->v[c + 1], h->v[c]))
			c++;
		if (!heavier(t, h->v[c], x))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}

/* The order in which nodes are kept (the first k of it are the k nodes kept), at most cap
 * long. Two passes, both of which only ever add a node whose parent is already in:
 *   1. level by level from the root, every node holding at least FLAMEBEARER_MIN_SHARE of the
 *      root, heaviest first within a level: a wide level cannot starve the levels below it,
 *      and when the budget runs out inside a level, all levels above it are whole;
 *   2. then the heaviest of the nodes left whose parent is in (best first, with a heap), so
 *      the rest of the budget goes where the weight is, at any depth.
 * kids/kid_start give every node's children (all of them, kept or not). */
static size_t keep_order(const struct fb_tree *t, const uint32_t *kids, const uint32_t *kid_start,
			 uint32_t *order, size_t cap)
{
	size_t len = 0, lvl_begin, lvl_end, i;
	uint8_t *in = xcalloc(t->n, 1);
	struct fb_heap h = { NULL, 0 };
	uint32_t *lvl = NULL;
	size_t lvl_cap = 0;
	int64_t thr = (int64_t)((double)t->w[0] * FLAMEBEARER_MIN_SHARE);
	uint32_t c;

	if (thr < 1)
		thr = 1;
	order[len++] = 0;
	in[0] = 1;
	lvl_begin = 0;
	lvl_end = 1;
	while (len < cap && lvl_begin < lvl_end) {
		size_t nlvl = 0, take;

		/* every qualifying child of the last level, heaviest first, as many as fit */
		for (i = lvl_begin; i < lvl_end; i++)
			for (c = kid_start[order[i]]; c < kid_start[order[i] + 1]; c++)
				if (t->w[kids[c]] >= thr) {
					ALLOC_GROW(lvl, nlvl + 1, lvl_cap);
					lvl[nlvl++] = kids[c];
				}
		if (nlvl > 1)
			qsort_r(lvl, nlvl, sizeof(*lvl), cmp_heavier, (void *)t);
		take = nlvl < cap - len ? nlvl : cap - len;
		if (take)
			memcpy(order + len, lvl, take * sizeof(*lvl));
		for (i = 0; i < take; i++)
			in[lvl[i]] = 1;
		lvl_begin = len;
		len += take;
		lvl_end = len;
	}
	xfree(lvl);
	if (len < cap) {
		h.v = xmalloc(t->n * sizeof(*h.v));
		for (i = 0; i < len; i++)
			for (c = kid_start[order[i]]; c < kid_start[order[i] + 1]; c++)
				if (!in[kids[c]])
					heap_push(t, &h, kids[c]);
		while (len < cap && h.n) {
			uint32_t x = heap_pop(t, &h);

			order[len++] = x;
			for (c = kid_start[x]; c < kid_start[x + 1]; c++)
				heap_push(t, &h, kids[c]);
		}
		xfree(h.v);
	}
	xfree(in);
	return len;
}

/* Mark the kept nodes and append the "other" nodes: one per kept node with dropped children,
 * counted against max_nodes (except the root's, so that one node still shows everything). */
static void tree_truncate(struct fb_tree *t, size_t max_nodes)
{
	size_t n = t->n, i, len, k, best = 1, nl;
	uint32_t *kids, *kid_start, *order, *unkept, *cnt;
	int64_t *sum;
	size_t others = 0;

	if (max_nodes < 1)
		max_nodes = 1;
	if (n <= max_nodes) {
		for (i = 0; i < n; i++)
			t->nodes[i].kept = 1;
		return;
	}
	t->w = xmalloc(n * sizeof(*t->w));
	for (i = 0; i < n; i++)
		t->w[i] = weight(&t->nodes[i]);
	/* children of every node, in index order (CSR) */
	kid_start = xcalloc(n + 1, sizeof(*kid_start));
	for (i = 1; i < n; i++)
		kid_start[t->nodes[i].parent + 1]++;
	for (i = 0; i < n; i++)
		kid_start[i + 1] += kid_start[i];
	kids = xmalloc((n ? n : 1) * sizeof(*kids));
	unkept = xcalloc(n, sizeof(*unkept)); /* used as a fill cursor first */
	for (i = 1; i < n; i++) {
		uint32_t p = t->nodes[i].parent;

		kids[kid_start[p] + unkept[p]++] = (uint32_t)i;
	}
	order = xmalloc(max_nodes * sizeof(*order));
	len = keep_order(t, kids, kid_start, order, max_nodes);
	/* The largest k whose nodes and "other" nodes fit: others(k) is the number of the
	 * first k nodes that still have a child outside them, followed as k grows. */
	for (k = 0; k < len; k++) {
		uint32_t x = order[k];

		if (unkept[x])
			others++;
		if (k && --unkept[t->nodes[x].parent] == 0)
			others--;
		if (k + 1 + others <= max_nodes || k == 0)
			best = k + 1;
	}
	xfree(unkept);
	xfree(t->w);
	t->w = NULL;
	/* From here on only the kept nodes are visited (a few thousand of maybe millions): each
	 * one's kept children and their totals, then one "other" per node with children left
	 * out, holding what the node's self and its kept children leave. */
	cnt = xcalloc(best, sizeof(*cnt));
	sum = xcalloc(2 * best, sizeof(*sum));
	for (k = 0; k < best; k++) {
		t->nodes[order[k]].kept = 1;
		t->nodes[order[k]].kidx = (uint32_t)k;
	}
	for (k = 1; k < best; k++) {
		const struct fb_node *nd = &t->nodes[order[k]];
		uint32_t pk = t->nodes[nd->parent].kidx;

		cnt[pk]++;
		sum[2 * pk] = store_sat_add(sum[2 * pk], nd->total[0]);
		sum[2 * pk + 1] = store_sat_add(sum[2 * pk + 1], nd->total[1]);
	}
	t->kept_list = xmalloc(2 * best * sizeof(*t->kept_list));
	memcpy(t->kept_list, order, best * sizeof(*order));
	nl = best;
	for (k = 0; k < best; k++) {
		uint32_t x = order[k], o;
		int side;

		if (kid_start[x + 1] - kid_start[x] <= cnt[k])
			continue;
		o = add_node(t, x, t->name_other); /* may move t->nodes */
		t->nodes[o].kept = 1;
		t->nodes[o].is_other = 1;
		for (side = 0; side < 2; side++) {
			const struct fb_node *p = &t->nodes[x];
			int64_t v = p->total[side] - p->self[side] - sum[2 * k + side];

			t->nodes[o].total[side] = t->nodes[o].self[side] = v < 0 ? 0 : v; /* < 0 only when sums saturated */
		}
		t->kept_list[nl++] = o;
	}
	t->nkept_list = nl;
	xfree(cnt);
	xfree(sum);
	xfree(order);
	xfree(kids);
	xfree(kid_start);
}

static int cmp_kids(const void *a, const void *b, void *arg)
{
	const struct fb_tree *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct fb_node *nx = &t->nodes[x], *ny = &t->nodes[y];
	int c;

	if (nx->is_other != ny->is_other)
		return nx->is_other ? 1 : -1;
	c = strcmp(strtab_get(t->names, nx->name), strtab_get(t->names, ny->name));
	if (c)
		return c;
	return x < y ? -1 : x > y;
}

/* Children lists of kept nodes, sorted; fills kids/nkids and the x offsets. Returns the nodes
 * in breadth-first (level) order in *bfs (count = kept nodes). Visits only the kept nodes. */
static size_t tree_layout(struct fb_tree *t, uint32_t **bfs_out)
{
	size_t nl = t->kept_list ? t->nkept_list : t->n, k, pos = 0, head;
	uint32_t *bfs;

#define KEPT(k) (t->kept_list ? t->kept_list[k] : (uint32_t)(k))
	for (k = 0; k < nl; k++)
		t->nodes[KEPT(k)].nkids = 0;
	for (k = 0; k < nl; k++)
		if (KEPT(k))
			t->nodes[t->nodes[KEPT(k)].parent].nkids++;
	for (k = 0; k < nl; k++) {
		struct fb_node *nd = &t->nodes[KEPT(k)];

		nd->kids = (uint32_t)pos;
		pos += nd->nkids;
		nd->nkids = 0; /* counts again while filling */
	}
	t->kids = xmalloc((pos ? pos : 1) * sizeof(*t->kids));
	for (k = 0; k < nl; k++) {
		uint32_t x = KEPT(k);
		struct fb_node *p;

		if (!x)
			continue;
		p = &t->nodes[t->nodes[x].parent];
		t->kids[p->kids + p->nkids++] = x;
	}
	for (k = 0; k < nl; k++) {
		const struct fb_node *nd = &t->nodes[KEPT(k)];

		if (nd->nkids > 1)
			qsort_r(t->kids + nd->kids, nd->nkids, sizeof(uint32_t), cmp_kids, t);
	}
#undef KEPT

	bfs = xmalloc((nl ? nl : 1) * sizeof(*bfs));
	bfs[0] = 0;
	pos = 1;
	t->nodes[0].x[0] = t->nodes[0].x[1] = 0;
	for (head = 0; head < pos; head++) {
		const struct fb_node *nd = &t->nodes[bfs[head]];
		int64_t x0 = nd->x[0], x1 = nd->x[1];
		uint32_t c;

		for (c = 0; c < nd->nkids; c++) {
			uint32_t kid = t->kids[nd->kids + c];

			t->nodes[kid].x[0] = x0;
			t->nodes[kid].x[1] = x1;
			x0 = store_sat_add(x0, t->nodes[kid].total[0]);
			x1 = store_sat_add(x1, t->nodes[kid].total[1]);
			bfs[pos++] = kid;
		}
	}
	*bfs_out = bfs;
	return pos;
}

static int write_json(struct fb_tree *t, int diff, struct buf *out)
{
	uint32_t *bfs = NULL, *outname = NULL;
	size_t nbfs, i, nnames = 0;
	uint32_t cur_depth = UINT32_MAX;
	int64_t end[2] = { 0, 0 }, max_self = 0;
	int err = 0;

	nbfs = tree_layout(t, &bfs);
	outname = xmalloc(strtab_count(t->names) * sizeof(*outname));
	memset(outname, 0xff, strtab_count(t->names) * sizeof(*outname));

	if ((err = buf_puts(out, "{\"names\":[")) < 0)
		goto cleanup;
	for (i = 0; i < nbfs; i++) {
		const struct fb_node *nd = &t->nodes[bfs[i]];

		if (nd->self[0] > max_self)
			max_self = nd->self[0];
		if (nd->self[1] > max_self)
			max_self = nd->self[1];
		if (outname[nd->name] != UINT32_MAX)
			continue;
		outname[nd->name] = (uint32_t)nnames;
		if ((nnames++ && (err = buf_putc(out, ',')) < 0) ||
		    (err = json_str(out, strtab_get(t->names, nd->name))) < 0)
			goto cleanup;
	}
	if ((err = buf_puts(out, "],\"levels\":[")) < 0)
		goto cleanup;
	for (i = 0; i < nbfs; i++) {
		const struct fb_node *nd = &t->nodes[bfs[i]];
		int first = nd->depth != cur_depth;

		if (first) {
			if (i && (err = buf_puts(out, "],")) < 0)
				goto cleanup;
			if ((err = buf_putc(out, '[')) < 0)
				goto cleanup;
			cur_depth = nd->depth;
			end[0] = end[1] = 0;
		} else if ((err = buf_putc(out, ',')) < 0) {
			goto cleanup;
		}
		if (diff)
			err = buf_printf(out, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
					 ",%" PRId64 ",%" PRIu32,
					 nd->x[0] - end[0], nd->total[0], nd->self[0],
					 nd->x[1] - end[1], nd->total[1], nd->self[1], outname[nd->name]);
		else
			err = buf_printf(out, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu32,
					 nd->x[0] - end[0], nd->total[0], nd->self[0], outname[nd->name]);
		if (err < 0)
			goto cleanup;
		end[0] = store_sat_add(nd->x[0], nd->total[0]);
		end[1] = store_sat_add(nd->x[1], nd->total[1]);
	}
	if (diff)
		err = buf_printf(out, "]],\"numTicks\":%" PRId64 ",\"maxSelf\":%" PRId64
				 ",\"leftTicks\":%" PRId64 ",\"rightTicks\":%" PRId64 "}",
				 store_sat_add(t->nodes[0].total[0], t->nodes[0].total[1]), max_self,
				 t->nodes[0].total[0], t->nodes[0].total[1]);
	else
		err = buf_printf(out, "]],\"numTicks\":%" PRId64 ",\"maxSelf\":%" PRId64 "}",
				 t->nodes[0].total[0], max_self);
cleanup:
	xfree(bfs);
	xfree(outname);
	return err < 0 ? err : 0;
}

static int build_and_write(const struct store_profile *left, const struct store_profile *right,
			   size_t max_nodes, struct buf *out)
{
	struct fb_tree t;
	struct fb_input in;
	int err;

	if (max_nodes == 0)
		max_nodes = FLAMEBEARER_DEFAULT_MAX_NODES;
	if (max_nodes > FLAMEBEARER_MAX_MAX_NODES)
		max_nodes = FLAMEBEARER_MAX_MAX_NODES;
	tree_init(&t);
	memset(&in, 0, sizeof(in));
	if (left)
		input_add(&t, &in, left, 0);
	if (right)
		input_add(&t, &in, right, 1);
	tree_build(&t, &in);
	xfree(in.pool);
	xfree(in.e);
	/* The request's time and memory budget (lib/budget.h): its error, not a half tree. */
	err = budget_check();
	if (!err) {
		tree_truncate(&t, max_nodes);
		err = write_json(&t, right != NULL, out);
	}
	tree_release(&t);
	return err;
}

int flamebearer_write(const struct store_profile *p, size_t max_nodes, struct buf *out)
{
	return build_and_write(p, NULL, max_nodes, out);
}

int flamebearer_write_diff(const struct store_profile *left, const struct store_profile *right,
			   size_t max_nodes, struct buf *out)
{
	struct store_profile *empty = NULL;
	int err;

	if (!right) {
		empty = store_profile_new();
		right = empty;
	}
	err = build_and_write(left, right, max_nodes, out);
	store_profile_free(empty);
	return err;
}
