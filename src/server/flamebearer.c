/* flamebearer.c: call tree building, truncation and level encoding (see flamebearer.h).
 *
 * The tree is built from the stacks sorted by frames (see tree_build()). Truncation keeps the heaviest nodes: a node never weighs
 * more than its parent and is created after it, so sorting by (weight desc, index asc) puts
 * every parent before its children and any prefix of that order is a connected tree. The top
 * nodes are found by selection (quickselect on the weights), not by sorting all nodes. */
#include "server/flamebearer.h"
#include "lib/alloc.h"
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

/* The k-th largest (1-based) of a[0..n), reordering a: quickselect with a three-way partition,
 * so that the many equal weights of real trees cost nothing extra. */
static int64_t kth_largest(int64_t *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n; /* the answer is in a[lo..hi) at position k - 1 */

	k--;
	while (hi - lo > 1) {
		int64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1], pivot;
		size_t lt = lo, i = lo, gt = hi;

		/* median of three */
		pivot = x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
		/* [lo, lt) > pivot, [lt, i) == pivot, [gt, hi) < pivot (descending order) */
		while (i < gt) {
			int64_t v = a[i];

			if (v > pivot) {
				a[i] = a[lt];
				a[lt++] = v;
				i++;
			} else if (v < pivot) {
				a[i] = a[--gt];
				a[gt] = v;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
	}
	return a[lo];
}

/* Keep the k heaviest nodes, ties broken by index (a parent before its children). */
static void mark_top(struct fb_tree *t, int64_t *scratch, size_t n, size_t k)
{
	int64_t thr;
	size_t i, above = 0, ties;

	for (i = 0; i < n; i++)
		scratch[i] = weight(&t->nodes[i]);
	thr = kth_largest(scratch, n, k);
	for (i = 0; i < n; i++)
		above += weight(&t->nodes[i]) > thr;
	ties = k - above;
	for (i = 0; i < n; i++) {
		int64_t w = weight(&t->nodes[i]);

		if (w > thr)
			t->nodes[i].kept = 1;
		else if (w == thr && ties) {
			t->nodes[i].kept = 1;
			ties--;
		} else
			t->nodes[i].kept = 0;
	}
	t->nodes[0].kept = 1;
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

/* Mark the kept nodes and append the "other" nodes. */
/* Keep the k heaviest nodes; returns how many "other" nodes they need (one per kept node with
 * a dropped child), marked in needs[]. */
static size_t try_keep(struct fb_tree *t, int64_t *scratch, uint8_t *needs, size_t n, size_t k)
{
	size_t i, others = 0;

	mark_top(t, scratch, n, k);
	memset(needs, 0, n);
	for (i = 1; i < n; i++) {
		const struct fb_node *nd = &t->nodes[i];

		if (!nd->kept && t->nodes[nd->parent].kept && !needs[nd->parent]) {
			needs[nd->parent] = 1;
			others++;
		}
	}
	return others;
}

/* Mark the kept nodes and append the "other" nodes. */
static void tree_truncate(struct fb_tree *t, size_t max_nodes)
{
	size_t n = t->n, i, k, lo, hi;
	int64_t *scratch;
	uint8_t *needs;

	if (max_nodes < 1)
		max_nodes = 1;
	if (n <= max_nodes) {
		for (i = 0; i < n; i++)
			t->nodes[i].kept = 1;
		return;
	}
	scratch = xmalloc(n * sizeof(*scratch));
	needs = xcalloc(n, 1);
	/* The largest k whose nodes and "other" nodes fit in max_nodes. Every kept node needs at
	 * most one "other", so k = max_nodes / 2 always fits: binary search above it (a wide,
	 * flat tree, where every kept node has dropped children, still gets half the nodes). */
	lo = max_nodes / 2 > 1 ? max_nodes / 2 : 1;
	hi = max_nodes;
	if (hi + try_keep(t, scratch, needs, n, hi) > max_nodes) {
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (mid + try_keep(t, scratch, needs, n, mid) <= max_nodes)
				lo = mid;
			else
				hi = mid;
		}
		k = lo;
		try_keep(t, scratch, needs, n, k);
	}
	for (i = 0; i < n; i++) {
		uint32_t o;

		if (!needs[i])
			continue;
		o = add_node(t, (uint32_t)i, t->name_other);
		t->nodes[o].kept = 1;
		t->nodes[o].is_other = 1;
	}
	/* An "other" node gets what the parent's self and its kept children leave. */
	{
		int64_t *kept_sum = xcalloc(2 * n, sizeof(*kept_sum));

		for (i = 1; i < n; i++) {
			const struct fb_node *nd = &t->nodes[i];

			if (nd->kept && needs[nd->parent]) {
				kept_sum[2 * nd->parent] = store_sat_add(kept_sum[2 * nd->parent], nd->total[0]);
				kept_sum[2 * nd->parent + 1] = store_sat_add(kept_sum[2 * nd->parent + 1], nd->total[1]);
			}
		}
		for (i = n; i < t->n; i++) {
			struct fb_node *o = &t->nodes[i];
			const struct fb_node *p = &t->nodes[o->parent];
			int s;

			for (s = 0; s < 2; s++) {
				o->total[s] = p->total[s] - p->self[s] - kept_sum[2 * o->parent + s];
				if (o->total[s] < 0) /* only when sums saturated */
					o->total[s] = 0;
				o->self[s] = o->total[s];
			}
		}
		xfree(kept_sum);
	}
	xfree(scratch);
	xfree(needs);
}

/* Children lists of kept nodes, sorted; fills kids/nkids and the x offsets. Returns the nodes
 * in breadth-first (level) order in *bfs (count = kept nodes). */
static size_t tree_layout(struct fb_tree *t, uint32_t **bfs_out)
{
	size_t n = t->n, i, nkept = 0, pos = 0, head;
	uint32_t *fill, *bfs;

	for (i = 0; i < n; i++) {
		t->nodes[i].nkids = 0;
		t->nodes[i].kids = 0;
		nkept += t->nodes[i].kept;
	}
	for (i = 1; i < n; i++)
		if (t->nodes[i].kept)
			t->nodes[t->nodes[i].parent].nkids++;
	for (i = 0; i < n; i++) {
		t->nodes[i].kids = (uint32_t)pos;
		pos += t->nodes[i].nkids;
	}
	t->kids = xmalloc((pos ? pos : 1) * sizeof(*t->kids));
	fill = xcalloc(n, sizeof(*fill));
	for (i = 1; i < n; i++) {
		const struct fb_node *nd = &t->nodes[i];

		if (nd->kept)
			t->kids[t->nodes[nd->parent].kids + fill[nd->parent]++] = (uint32_t)i;
	}
	xfree(fill);
	for (i = 0; i < n; i++)
		if (t->nodes[i].nkids > 1)
			qsort_r(t->kids + t->nodes[i].kids, t->nodes[i].nkids, sizeof(uint32_t),
				cmp_kids, t);

	bfs = xmalloc(nkept * sizeof(*bfs));
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
	tree_truncate(&t, max_nodes);
	err = write_json(&t, right != NULL, out);
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
