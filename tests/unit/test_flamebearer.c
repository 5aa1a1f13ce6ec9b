/* test_flamebearer.c: flamebearer JSON from hand-made merged profiles: level encoding with
 * delta x-offsets, child order, maxNodes truncation into "other" nodes, the diff format; the
 * level-by-level budget (a light deep frame is not crowded out by heavier wide levels), focus
 * on a subtree, and reachability: every frame holding >= 0.1% of a deep random profile is
 * reached by zooming (rendering the subtree of a kept node) from the first render; a query's
 * budget stops a build with its error. */
#include "lib/budget.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/strtab.h"
#include "minijson.h"
#include "server/flamebearer.h"
#include "server/render.h"
#include "store/store.h"
#include "test.h"

#include <errno.h>

static void add(struct store_profile *p, const char *stack, int64_t value)
{
	const char *names[16];
	char copy[256];
	size_t n = 0;
	char *s = copy, *semi;

	snprintf(copy, sizeof(copy), "%s", stack);
	while (s && *s && n < 16) {
		semi = strchr(s, ';');
		if (semi)
			*semi++ = '\0';
		names[n++] = s;
		s = semi;
	}
	store_profile_add(p, names, n, value);
	p->total += value;
}

static struct store_profile *sample_profile(void)
{
	struct store_profile *p = store_profile_new();

	add(p, "a;b", 3);
	add(p, "a;c", 2);
	add(p, "a", 1);
	add(p, "d", 3);
	add(p, "d;g", 1);
	return p;
}

static void check_single(struct store_profile *p, size_t max_nodes, const char *want)
{
	struct buf b = BUF_INIT(1 << 20);

	CHECK_EQ_INT(flamebearer_write(p, max_nodes, &b), 0);
	CHECK_EQ_STR(b.data, want);
	buf_release(&b);
}

static void test_levels(void)
{
	struct store_profile *p = sample_profile();

	/* g starts at x=6 (under d) while the row's previous node c ends at 5: offset 1. */
	check_single(p, 0,
		     "{\"names\":[\"total\",\"a\",\"d\",\"b\",\"c\",\"g\"],"
		     "\"levels\":[[0,10,0,0],[0,6,1,1,0,4,3,2],[0,3,3,3,0,2,2,4,1,1,1,5]],"
		     "\"numTicks\":10,\"maxSelf\":3}");
	store_profile_free(p);
}

static void test_children_sorted_by_name(void)
{
	struct store_profile *p = store_profile_new();

	add(p, "zeta", 5);
	add(p, "alpha", 1);
	check_single(p, 0,
		     "{\"names\":[\"total\",\"alpha\",\"zeta\"],"
		     "\"levels\":[[0,6,0,0],[0,1,1,1,0,5,5,2]],\"numTicks\":6,\"maxSelf\":5}");
	store_profile_free(p);
}

static void test_truncation(void)
{
	struct store_profile *p = sample_profile();

	/* 4 nodes: the root, a, and two "other" nodes (d's subtree under the root, b and c
	 * under a). Totals are preserved. */
	check_single(p, 4,
		     "{\"names\":[\"total\",\"a\",\"other\"],"
		     "\"levels\":[[0,10,0,0],[0,6,1,1,0,4,4,2],[0,5,5,2]],"
		     "\"numTicks\":10,\"maxSelf\":5}");
	/* Enough room: nothing merged. */
	check_single(p, 6,
		     "{\"names\":[\"total\",\"a\",\"d\",\"b\",\"c\",\"g\"],"
		     "\"levels\":[[0,10,0,0],[0,6,1,1,0,4,3,2],[0,3,3,3,0,2,2,4,1,1,1,5]],"
		     "\"numTicks\":10,\"maxSelf\":3}");
	/* One node: the root and one "other" child holding everything. */
	check_single(p, 1,
		     "{\"names\":[\"total\",\"other\"],\"levels\":[[0,10,0,0],[0,10,10,1]],"
		     "\"numTicks\":10,\"maxSelf\":10}");
	store_profile_free(p);
}

static void test_truncation_many_nodes(void)
{
	struct store_profile *p = store_profile_new();
	struct buf b = BUF_INIT(1 << 22);
	char stack[64];
	int i, levels_nodes = 0;

	for (i = 0; i < 3000; i++) {
		snprintf(stack, sizeof(stack), "root;f%d;g%d", i, i);
		add(p, stack, 1 + i % 7);
	}
	CHECK_EQ_INT(flamebearer_write(p, 100, &b), 0);
	/* Simple structural checks: numTicks is the full total and at most 100 nodes. */
	{
		int64_t total = 0;
		char want[64];

		for (i = 0; i < 3000; i++)
			total += 1 + i % 7;
		snprintf(want, sizeof(want), "\"numTicks\":%lld,", (long long)total);
		CHECK(strstr(b.data, want) != NULL);
	}
	{
		/* Node count = (number of integers in levels) / 4. */
		const char *l = strstr(b.data, "\"levels\":") + 9, *e = strstr(b.data, ",\"numTicks\"");
		int ints = 0, in_num = 0;

		for (; l < e; l++) {
			int digit = (*l >= '0' && *l <= '9');

			if (digit && !in_num)
				ints++;
			in_num = digit;
		}
		levels_nodes = ints / 4;
		CHECK_EQ_INT(ints % 4, 0);
	}
	CHECK(levels_nodes <= 100);
	CHECK(levels_nodes >= 90);
	CHECK(strstr(b.data, "\"other\"") != NULL);
	buf_release(&b);
	store_profile_free(p);
}

static void test_shared_prefixes(void)
{
	struct store_profile *p = store_profile_new();

	/* Equal stacks, prefixes of other stacks, and shared prefixes far apart in the input. */
	add(p, "a;b;c", 1);
	add(p, "x", 2);
	add(p, "a;b", 3);
	add(p, "a;b;c", 4);
	add(p, "a", 5);
	add(p, "a;d", 6);
	check_single(p, 0,
		     "{\"names\":[\"total\",\"a\",\"x\",\"b\",\"d\",\"c\"],"
		     "\"levels\":[[0,21,0,0],[0,19,5,1,0,2,2,2],[0,8,3,3,0,6,6,4],[0,5,5,5]],"
		     "\"numTicks\":21,\"maxSelf\":6}");
	store_profile_free(p);
}

static void test_profile_other(void)
{
	struct store_profile *p = store_profile_new();

	add(p, "a", 5);
	p->other = 2;
	p->total += 2;
	check_single(p, 0,
		     "{\"names\":[\"total\",\"a\",\"other\"],"
		     "\"levels\":[[0,7,0,0],[0,5,5,1,0,2,2,2]],\"numTicks\":7,\"maxSelf\":5}");
	store_profile_free(p);
}

static void test_empty(void)
{
	struct store_profile *p = store_profile_new();

	check_single(p, 0, "{\"names\":[\"total\"],\"levels\":[[0,0,0,0]],\"numTicks\":0,\"maxSelf\":0}");
	store_profile_free(p);
}

static void test_diff(void)
{
	struct store_profile *l = store_profile_new(), *r = store_profile_new();
	struct buf b = BUF_INIT(1 << 20);

	add(l, "a;b", 2);
	add(l, "a", 1);
	add(r, "a;b", 1);
	add(r, "c", 3);
	CHECK_EQ_INT(flamebearer_write_diff(l, r, 0, &b), 0);
	CHECK_EQ_STR(b.data,
		     "{\"names\":[\"total\",\"a\",\"c\",\"b\"],"
		     "\"levels\":[[0,3,0,0,4,0,0],[0,3,1,0,1,0,1,0,0,0,0,3,3,2],[0,2,2,0,1,1,3]],"
		     "\"numTicks\":7,\"maxSelf\":3,\"leftTicks\":3,\"rightTicks\":4}");
	buf_release(&b);
	store_profile_free(l);
	store_profile_free(r);
}

static void test_diff_truncation(void)
{
	struct store_profile *l = store_profile_new(), *r = store_profile_new();
	struct buf b = BUF_INIT(1 << 20);

	add(l, "a", 5);
	add(l, "x", 1);
	add(r, "a", 4);
	add(r, "y", 1);
	/* Root and a are kept; x and y merge into one "other" with 1 on each side. */
	CHECK_EQ_INT(flamebearer_write_diff(l, r, 3, &b), 0);
	CHECK_EQ_STR(b.data,
		     "{\"names\":[\"total\",\"a\",\"other\"],"
		     "\"levels\":[[0,6,0,0,5,0,0],[0,5,5,0,4,4,1,0,1,1,0,1,1,2]],"
		     "\"numTicks\":11,\"maxSelf\":5,\"leftTicks\":6,\"rightTicks\":5}");
	buf_release(&b);
	store_profile_free(l);
	store_profile_free(r);
}

static void test_buffer_limit(void)
{
	struct store_profile *p = sample_profile();
	struct buf b = BUF_INIT(20);

	CHECK(flamebearer_write(p, 0, &b) < 0);
	buf_release(&b);
	store_profile_free(p);
}

/* A wide, flat profile (many roots of equal weight, each with children): every kept node has
 * dropped children, so half of maxNodes goes to "other" nodes, not all of it (a flame graph
 * of nothing but "other"). */
static void test_truncation_wide_flat(void)
{
	struct store_profile *p = store_profile_new();
	struct buf b = BUF_INIT(1 << 24);
	char stack[64];
	const char *q;
	size_t nodes = 0;
	int i;

	for (i = 0; i < 2000; i++) {
		snprintf(stack, sizeof(stack), "r%d;c%d", i, i);
		add(p, stack, 2);
		snprintf(stack, sizeof(stack), "r%d;d%d", i, i);
		add(p, stack, 2);
	}
	CHECK_EQ_INT(flamebearer_write(p, 100, &b), 0);
	/* Count nodes: 4 ints each, so count commas in the levels and divide. */
	q = strstr(b.data ? b.data : "", "\"levels\":");
	CHECK(q != NULL);
	for (; q && *q && strncmp(q, "]],", 3); q++)
		nodes += *q == ',';
	nodes = (nodes + 1) / 4;
	CHECK(nodes >= 50 && nodes <= 100);
	CHECK(strstr(b.data ? b.data : "", "\"numTicks\":8000,") != NULL);
	buf_release(&b);
	store_profile_free(p);
}

/* 500 wide chains of 20 frames at 0.2% each outweigh a 100-frame chain at 0.13%: ranking all
 * nodes by weight alone spends the budget on the wide chains and drops the deep chain's head
 * into "other", where no zoom can reach it. Level by level, its head is kept. */
static void test_level_budget(void)
{
	struct store_profile *p = store_profile_new();
	struct buf b = BUF_INIT(1 << 24);
	char names[100][32];
	const char *stack[100];
	int i, j;

	for (i = 0; i < 500; i++) {
		for (j = 0; j < 20; j++) {
			snprintf(names[j], sizeof(names[j]), "w%d_%d", i, j);
			stack[j] = names[j];
		}
		store_profile_add(p, stack, 20, 19);
	}
	for (j = 0; j < 100; j++) {
		snprintf(names[j], sizeof(names[j]), "deep%d", j);
		stack[j] = names[j];
	}
	store_profile_add(p, stack, 100, 12);
	CHECK_EQ_INT(flamebearer_write(p, 8192, &b), 0);
	CHECK(strstr(b.data, "\"deep0\"") != NULL);
	CHECK(strstr(b.data, "\"w499_0\"") != NULL);
	/* levels 1..15 are whole: 501 nodes each, with the root and their 501 "other" nodes 8018 */
	CHECK(strstr(b.data, "\"deep14\"") != NULL);
	CHECK(strstr(b.data, "\"w499_14\"") != NULL);
	buf_release(&b);
	store_profile_free(p);
}

static void test_focus_filter(void)
{
	struct store_profile *p = sample_profile(), *f;
	struct render_focus focus;
	struct errmsg err = { "" };
	struct buf b = BUF_INIT(1 << 20);

	CHECK_EQ_INT(render_focus_parse("a;b", &focus, &err), 0);
	CHECK_EQ_INT(focus.n, 2);
	f = render_focus_filter(p, &focus);
	CHECK_EQ_INT(flamebearer_write(f, 0, &b), 0);
	CHECK_EQ_STR(b.data, "{\"names\":[\"total\",\"a\",\"b\"],"
			     "\"levels\":[[0,3,0,0],[0,3,0,1],[0,3,3,2]],\"numTicks\":3,\"maxSelf\":3}");
	store_profile_free(f);
	render_focus_release(&focus);
	/* a path nobody has: nothing */
	CHECK_EQ_INT(render_focus_parse("a;zzz", &focus, &err), 0);
	f = render_focus_filter(p, &focus);
	CHECK_EQ_INT(f->nstacks, 0);
	CHECK_EQ_INT(f->total, 0);
	store_profile_free(f);
	render_focus_release(&focus);
	CHECK(render_focus_parse("a;;b", &focus, &err) < 0);
	CHECK(strstr(err.msg, "empty frame") != NULL);
	CHECK_EQ_INT(render_focus_parse("", &focus, &err), 0);
	CHECK_EQ_INT(focus.n, 0);
	buf_release(&b);
	store_profile_free(p);
}

/* ---- reachability ---- */

struct fnode {
	char *path;     /* "a;b;c" */
	double total;
	int other_child; /* a truncation "other" hangs under it */
};

/* Decode a single-format flamebearer into nodes with their paths (parents found as the UI
 * does: the node of the row above whose span holds the child's start). */
static size_t decode(const char *json, struct fnode **out)
{
	struct mj *doc = mj_parse(json, strlen(json));
	const struct mj *names = mj_get(doc, "names"), *levels = mj_get(doc, "levels");
	struct fnode *v = NULL;
	double *x = NULL;
	size_t n = 0, cap = 0, prev_begin = 0, prev_end = 0, l, i;

	CHECK(doc && names && levels);
	if (!doc || !names || !levels)
		return 0;
	for (l = 0; l < levels->n; l++) {
		const struct mj *row = &levels->items[l];
		size_t begin = n, pp = prev_begin;
		double cur = 0;

		for (i = 0; i + 4 <= row->n; i += 4) {
			const char *name = names->items[(size_t)row->items[i + 3].num].str;
			struct fnode *nd;
			size_t plen;

			cur += row->items[i].num;
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				v = realloc(v, cap * sizeof(*v));
				x = realloc(x, cap * sizeof(*x));
			}
			nd = &v[n];
			x[n] = cur;
			nd->total = row->items[i + 1].num;
			nd->other_child = 0;
			if (l == 0) {
				nd->path = strdup("");
			} else {
				while (pp + 1 < prev_end && x[pp + 1] <= cur)
					pp++;
				plen = strlen(v[pp].path) + strlen(name) + 2;
				nd->path = malloc(plen);
				snprintf(nd->path, plen, "%s%s%s", v[pp].path, *v[pp].path ? ";" : "", name);
				if (!strcmp(name, "other"))
					v[pp].other_child = 1;
			}
			n++;
			cur += nd->total;
		}
		prev_begin = begin;
		prev_end = n;
	}
	free(x);
	mj_free(doc);
	*out = v;
	return n;
}

static void free_nodes(struct fnode *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

static uint32_t rnd_state = 12345;
static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 8) % n;
}

static void test_reachable_by_zoom(void)
{
	struct store_profile *p = store_profile_new();
	struct strtab *seen = strtab_new();
	struct buf b = BUF_INIT(1 << 26);
	struct fnode *full = NULL;
	char **queue = NULL;
	size_t nfull, nq = 0, qcap = 0, head, i, renders = 0, missing = 0, heavy = 0;
	const char *stack[300];
	char names[300][16];
	int s, d;

	/* 6000 stacks down a random tree: a few hot deep paths and a long tail. */
	for (s = 0; s < 6000; s++) {
		int depth = 5 + (int)rnd(s % 10 == 0 ? 250 : 40);

		for (d = 0; d < depth; d++) {
			snprintf(names[d], sizeof(names[d]), "f%u_%d", rnd(d < 3 ? 4 : d < 20 ? 3 : 2), d);
			stack[d] = names[d];
		}
		store_profile_add(p, stack, (size_t)depth, 1 + rnd(s % 50 == 0 ? 400 : 8));
	}
	/* the whole tree */
	CHECK_EQ_INT(flamebearer_write(p, FLAMEBEARER_MAX_MAX_NODES, &b), 0);
	nfull = decode(b.data, &full);
	/* zoom breadth first from the first render, 300 nodes per render */
	queue = malloc(sizeof(*queue));
	queue[nq++] = strdup("");
	qcap = 1;
	for (head = 0; head < nq; head++) {
		struct render_focus focus;
		struct errmsg err = { "" };
		struct store_profile *sub;
		struct fnode *v = NULL;
		size_t n;

		CHECK_EQ_INT(render_focus_parse(queue[head], &focus, &err), 0);
		sub = render_focus_filter(p, &focus);
		buf_reset(&b);
		CHECK_EQ_INT(flamebearer_write(sub, 300, &b), 0);
		renders++;
		n = decode(b.data, &v);
		for (i = 0; i < n; i++) {
			const char *last = strrchr(v[i].path, ';');

			if (!strcmp(last ? last + 1 : v[i].path, "other"))
				continue;
			strtab_intern(seen, v[i].path);
			/* a truncated node other than the focus: zooming into it renders more */
			if (v[i].other_child && strcmp(v[i].path, queue[head])) {
				if (nq == qcap) {
					qcap *= 2;
					queue = realloc(queue, qcap * sizeof(*queue));
				}
				queue[nq++] = strdup(v[i].path);
			}
		}
		free_nodes(v, n);
		store_profile_free(sub);
		render_focus_release(&focus);
	}
	for (i = 1; i < nfull; i++) {
		if (full[i].total * 1000 < full[0].total)
			continue;
		heavy++;
		if (strtab_find(seen, full[i].path, strlen(full[i].path)) == UINT32_MAX) {
			if (missing++ < 5)
				fprintf(stderr, "  unreachable: %s (%.0f of %.0f)\n", full[i].path, full[i].total,
					full[0].total);
		}
	}
	CHECK_EQ_INT(missing, 0);
	CHECK(heavy > 1000); /* the test is not trivially true */
	CHECK(renders > 5);
	for (i = 0; i < nq; i++)
		free(queue[i]);
	free(queue);
	free_nodes(full, nfull);
	strtab_free(seen);
	buf_release(&b);
	store_profile_free(p);
}

/* A query's budget (lib/budget.h) stops a call-tree build with its error, not a partial tree:
 * past the deadline -ETIME, over the memory cap -ENOMEM. */
static void test_budget(void)
{
	struct store_profile *p = store_profile_new();
	struct buf out = BUF_INIT(BUF_UNLIMITED);
	struct budget b;
	char name[32];
	const char *frames[3];
	int i;

	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "leaf%d", i);
		frames[0] = "main";
		frames[1] = i % 2 ? "a" : "b";
		frames[2] = name;
		store_profile_add(p, frames, 3, 1 + i % 7);
	}
	memset(&b, 0, sizeof(b));
	b.deadline_ms = budget_now_ms() - 1;
	b.time_name = "render-seconds";
	budget_begin(&b);
	CHECK_EQ_INT(flamebearer_write(p, 100, &out), -ETIME);
	budget_end(&b);
	buf_reset(&out);
	memset(&b, 0, sizeof(b));
	b.max_bytes = 64 << 10;
	budget_begin(&b);
	CHECK_EQ_INT(flamebearer_write(p, 100, &out), -ENOMEM);
	budget_end(&b);
	buf_reset(&out);
	/* With room, the same profile renders. */
	memset(&b, 0, sizeof(b));
	b.max_bytes = 64 << 20;
	b.deadline_ms = budget_now_ms() + 60000;
	budget_begin(&b);
	CHECK_EQ_INT(flamebearer_write(p, 100, &out), 0);
	budget_end(&b);
	CHECK(strstr(out.data, "\"numTicks\":") != NULL);
	buf_release(&out);
	store_profile_free(p);
}

int main(void)
{
	RUN(test_levels);
	RUN(test_children_sorted_by_name);
	RUN(test_truncation);
	RUN(test_truncation_many_nodes);
	RUN(test_truncation_wide_flat);
	RUN(test_shared_prefixes);
	RUN(test_profile_other);
	RUN(test_empty);
	RUN(test_diff);
	RUN(test_diff_truncation);
	RUN(test_buffer_limit);
	RUN(test_level_budget);
	RUN(test_focus_filter);
	RUN(test_reachable_by_zoom);
	RUN(test_budget);
	return test_summary();
}
