/* test_flamebearer.c: flamebearer JSON from hand-made merged profiles: level encoding with
 * delta x-offsets, child order, maxNodes truncation into "other" nodes, the diff format. */
#include "lib/buf.h"
#include "server/flamebearer.h"
#include "store/store.h"
#include "test.h"

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
	return test_summary();
}
