/* test_flamegraph.c: the call tree (shape, order, invariants, truncation) and the flame graph
 * writers: the HTML page carries the tree as JSON, needs no network, and no frame name can
 * break out of its script; the SVG is escaped and complete. */
#include "lib/alloc.h"
#include "lib/strtab.h"
#include "minijson.h"
#include "profile/calltree.h"
#include "profile/output.h"
#include "test.h"

#include <errno.h>
#include <time.h>

#define EVIL "</script><script>alert(1)</script><!-- & \"q\""

static uint32_t loc_of(struct profile *p, enum frame_kind k, const char *name)
{
	return profile_intern_location(p, 0, 0, profile_intern_function(p, k, name, NULL, NULL, 0), 0);
}

/*   app: main;work;memcpy 30   main;work 10   main;idle_[k] 5   main;ghost 0 (left out)
 *   no comm: main;work 7 */
static struct profile *tree_profile(void)
{
	struct profile *p = profile_new();
	uint32_t lmain = loc_of(p, FRAME_NATIVE, "main"), lwork = loc_of(p, FRAME_NATIVE, "work");
	uint32_t lmem = loc_of(p, FRAME_NATIVE, "memcpy"), lidle = loc_of(p, FRAME_KERNEL, "idle");
	struct profile_label comm = { profile_str(p, "comm"), profile_str(p, "app"), 0 };
	uint32_t s[3];

	s[0] = lmem; s[1] = lwork; s[2] = lmain;
	profile_add_sample(p, s, 3, &comm, 1, 30);
	profile_add_sample(p, s + 1, 2, &comm, 1, 10);
	s[1] = lidle;
	profile_add_sample(p, s + 1, 2, &comm, 1, 5);
	s[1] = loc_of(p, FRAME_NATIVE, "ghost");
	profile_add_sample(p, s + 1, 2, &comm, 1, 0);
	s[1] = lwork;
	profile_add_sample(p, s + 1, 2, NULL, 0, 7);
	return p;
}

/* Preorder layout invariants of any tree. */
static void check_invariants(const struct calltree *t, int exact)
{
	size_t i, c;

	CHECK(t->nnodes >= 1);
	CHECK_EQ_INT(t->nodes[0].depth, 0);
	CHECK_EQ_INT(t->nodes[0].end, t->nnodes);
	for (i = 0; i < t->nnodes; i++) {
		const struct calltree_node *n = &t->nodes[i];
		int64_t sum = 0;
		uint32_t kids = 0;

		CHECK(n->end > i && n->end <= t->nnodes);
		if (i) {
			CHECK(n->parent < i);
			CHECK_EQ_INT(n->depth, t->nodes[n->parent].depth + 1);
			CHECK(n->end <= t->nodes[n->parent].end);
		}
		for (c = i + 1; c < n->end; c = t->nodes[c].end) {
			CHECK_EQ_INT(t->nodes[c].parent, i);
			sum += t->nodes[c].total;
			kids++;
			if (t->nodes[c].end < n->end)
				CHECK(strcmp(calltree_name(t, c), calltree_name(t, t->nodes[c].end)) < 0);
		}
		CHECK_EQ_INT(kids, n->nchildren);
		if (exact)
			CHECK_EQ_INT(n->self + sum, n->total);
		else
			CHECK(n->self + sum <= n->total);
	}
}

static size_t find_child(const struct calltree *t, size_t i, const char *name)
{
	size_t c;

	for (c = i + 1; c < t->nodes[i].end; c = t->nodes[c].end) {
		if (!strcmp(calltree_name(t, c), name))
			return c;
	}
	return 0;
}

static void test_calltree(void)
{
	struct profile *p = tree_profile();
	struct calltree *t = calltree_build(p, 0);
	size_t app, m, w, mem, k;

	check_invariants(t, 1);
	CHECK_EQ_INT(t->nodes[0].total, 52);
	CHECK_EQ_INT(t->nodes[0].kind, CALLTREE_ROOT);
	CHECK_EQ_INT(t->nodes[0].nchildren, 2);  /* "app" and "main" */
	app = find_child(t, 0, "app");
	CHECK(app == 1);  /* sorted: "app" < "main" */
	CHECK_EQ_INT(t->nodes[app].kind, CALLTREE_PROCESS);
	CHECK_EQ_INT(t->nodes[app].total, 45);
	m = find_child(t, app, "main");
	w = find_child(t, m, "work");
	mem = find_child(t, w, "memcpy");
	k = find_child(t, m, "idle_[k]");
	CHECK(m && w && mem && k);
	CHECK_EQ_INT(t->nodes[w].total, 40);
	CHECK_EQ_INT(t->nodes[w].self, 10);
	CHECK_EQ_INT(t->nodes[mem].self, 30);
	CHECK_EQ_INT(t->nodes[k].kind, CALLTREE_KERNEL);
	CHECK_EQ_INT(t->nodes[k].total, 5);
	CHECK_EQ_INT(find_child(t, m, "ghost"), 0);
	CHECK_EQ_INT(t->max_depth, 4);
	m = find_child(t, 0, "main");
	CHECK(m && t->nodes[m].total == 7 && t->nodes[m].kind == CALLTREE_NATIVE);
	CHECK_EQ_STR(calltree_kind_name(CALLTREE_PYTHON), "python");
	calltree_free(t);

	t = calltree_build(p, CALLTREE_NO_COMM);
	check_invariants(t, 1);
	CHECK_EQ_INT(t->nodes[0].nchildren, 1);
	m = find_child(t, 0, "main");
	CHECK(m && t->nodes[m].total == 52);
	calltree_free(t);
	profile_free(p);
}

/* main -> fnN for N < n, with weight N + 1, so the heaviest are the last ones. */
static struct profile *wide_profile(size_t n)
{
	struct profile *p = profile_new();
	uint32_t s[2];
	size_t i;

	s[1] = loc_of(p, FRAME_NATIVE, "main");
	for (i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "fn%06zu", i);
		s[0] = loc_of(p, i % 3 ? FRAME_NATIVE : FRAME_PYTHON, name);
		profile_add_sample(p, s, 2, NULL, 0, (int64_t)i + 1);
	}
	return p;
}

static void test_truncate(void)
{
	struct profile *p = wide_profile(2000);
	struct calltree *t = calltree_build(p, 0);
	int64_t total = t->nodes[0].total;
	size_t i;

	CHECK_EQ_INT(t->nnodes, 2002);
	CHECK_EQ_INT(calltree_truncate(t, 5000), 0);
	CHECK_EQ_INT(calltree_truncate(t, 100), 1902);
	CHECK_EQ_INT(t->nnodes, 100);
	CHECK_EQ_INT(t->truncated, 1902);
	CHECK_EQ_INT(t->nodes[0].total, total);
	check_invariants(t, 0);
	/* The kept leaves are the heaviest 98. */
	for (i = 2; i < t->nnodes; i++)
		CHECK(t->nodes[i].total > 2000 - 98);
	CHECK_EQ_INT(calltree_truncate(t, 0), 99);
	CHECK_EQ_INT(t->nnodes, 1);
	CHECK_EQ_INT(t->nodes[0].end, 1);
	CHECK_EQ_INT(t->nodes[0].nchildren, 0);
	calltree_free(t);
	profile_free(p);
}

/* The JSON the page embeds: the text after "var D = " up to the ";" ending that line. */
static struct mj *page_data(const char *html)
{
	const char *s = strstr(html, "var D = "), *e;

	if (!s)
		return NULL;
	s += strlen("var D = ");
	e = strstr(s, ";\n");
	return e ? mj_parse(s, (size_t)(e - s)) : NULL;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle))
		n++;
	return n;
}

static void test_html(void)
{
	struct profile *p = tree_profile(), *empty = profile_new();
	struct buf out = BUF_INIT(BUF_UNLIMITED), out2 = BUF_INIT(BUF_UNLIMITED);
	struct mj *d;
	const struct mj *names, *totals;
	uint32_t s[2];
	size_t i, found_evil = 0;

	s[1] = loc_of(p, FRAME_NATIVE, "main");
	s[0] = loc_of(p, FRAME_NATIVE, EVIL);
	profile_add_sample(p, s, 2, NULL, 0, 1);
	CHECK_EQ_INT(flamegraph_html_write(p, "t<i>tle", &out), 0);
	CHECK(!strncmp(out.data, "<!DOCTYPE html>", 15));
	CHECK(strstr(out.data, "</html>") != NULL);
	CHECK(strstr(out.data, "/*SCORCH_DATA*/") == NULL);
	/* Self-contained: nothing to fetch. */
	CHECK(strstr(out.data, "http://") == NULL);
	CHECK(strstr(out.data, "https://") == NULL);
	CHECK(strstr(out.data, "src=") == NULL);
	CHECK(strstr(out.data, "<link") == NULL);
	CHECK(strstr(out.data, "@import") == NULL);
	CHECK(strstr(out.data, "url(") == NULL);
	/* The evil name cannot close the script: one "</script" (the page's own), no "<!--" added. */
	CHECK_EQ_INT(count(out.data, "</script"), 1);
	CHECK(strstr(out.data, "\\u003c/script>") != NULL);
	CHECK(strstr(out.data, "<i>") == NULL);
	d = page_data(out.data);
	CHECK(d != NULL);
	if (d) {
		names = mj_get(d, "names");
		totals = mj_get(d, "totals");
		CHECK(names && totals && names->type == MJ_ARR);
		for (i = 0; names && i < names->n; i++)
			found_evil += !strcmp(names->items[i].str, EVIL);
		CHECK_EQ_INT(found_evil, 1);
		CHECK_EQ_STR(mj_get(d, "title")->str, "t<i>tle");
		CHECK(mj_get(d, "total")->num == 53);
		CHECK(totals && totals->n > 0 && totals->items[0].num == 53);
		CHECK_EQ_INT(mj_get(d, "name")->n, totals->n);
		CHECK_EQ_INT(mj_get(d, "depth")->n, totals->n);
		CHECK_EQ_INT(mj_get(d, "kind")->n, totals->n);
		CHECK_EQ_INT(mj_get(d, "self")->n, totals->n);
		CHECK_EQ_STR(mj_get(d, "unit")->str, "nanoseconds");
	}
	mj_free(d);
	/* An empty profile still makes a page. */
	CHECK_EQ_INT(flamegraph_html_write(empty, NULL, &out2), 0);
	d = page_data(out2.data);
	CHECK(d != NULL);
	if (d)
		CHECK(mj_get(d, "total")->num == 0);
	mj_free(d);
	profile_free(p);
	profile_free(empty);
	buf_release(&out);
	buf_release(&out2);
}

static void test_html_large(void)
{
	struct profile *p = wide_profile(120000);
	struct buf out = BUF_INIT(BUF_UNLIMITED);
	struct mj *d;
	clock_t t0 = clock();

	CHECK_EQ_INT(flamegraph_html_write(p, "big", &out), 0);
	CHECK(out.len > 120000 * 8);
	d = page_data(out.data);
	CHECK(d != NULL);
	if (d)
		CHECK_EQ_INT(mj_get(d, "totals")->n, 120002);
	mj_free(d);
	/* Generous even under sanitizers; catches accidental quadratic work. */
	CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 20);
	buf_release(&out);
	profile_free(p);
}

static void test_svg(void)
{
	struct profile *p = tree_profile(), *empty = profile_new();
	struct buf out = BUF_INIT(BUF_UNLIMITED);
	uint32_t s[2];
	size_t i;

	s[1] = loc_of(p, FRAME_NATIVE, "main");
	s[0] = loc_of(p, FRAME_NATIVE, "a<b>&c \x01 \xff");
	profile_add_sample(p, s, 2, NULL, 0, 100);
	CHECK_EQ_INT(flamegraph_svg_write(p, "svg & title", &out), 0);
	CHECK(!strncmp(out.data, "<?xml", 5));
	CHECK(out.len > 7 && !strcmp(out.data + out.len - 7, "</svg>\n"));
	CHECK(strstr(out.data, "svg &amp; title") != NULL);
	CHECK(strstr(out.data, "<title>a&lt;b&gt;&amp;c ? ? (100 samples") == NULL); /* unit is ns */
	CHECK(strstr(out.data, "<title>a&lt;b&gt;&amp;c ? ? (100 ns, 65.79%") != NULL);
	CHECK(strstr(out.data, "<title>memcpy (30 ns, 19.74%, self 30 ns)</title>") != NULL);
	CHECK(strstr(out.data, "<title>all (152 ns, 100.00%") != NULL);
	CHECK_EQ_INT(count(out.data, "<g>"), count(out.data, "</g>"));
	CHECK_EQ_INT(count(out.data, "<g>"), 9);
	for (i = 0; i < out.len; i++)
		CHECK((unsigned char)out.data[i] >= 0x20 || out.data[i] == '\n');
	CHECK(strstr(out.data, "a<b") == NULL);
	buf_reset(&out);
	CHECK_EQ_INT(flamegraph_svg_write(empty, NULL, &out), 0);
	CHECK(strstr(out.data, "</svg>") != NULL);
	profile_free(p);
	profile_free(empty);
	buf_release(&out);
}

int main(void)
{
	RUN(test_calltree);
	RUN(test_truncate);
	RUN(test_html);
	RUN(test_html_large);
	RUN(test_svg);
	return test_summary();
}
