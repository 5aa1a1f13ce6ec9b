/* test_merge_cache.c: the server's cache of merged profiles (merge_cache.h) over a real SQLite
 * store: a second query gets the same profile, a write makes it unreachable (the next merge
 * sees the new data), other keys and the LRU limit, profiles handed out outlive their
 * eviction, no cache merges alone, a merge of another cap answers when it left nothing out,
 * the view by function and the view by line are cached apart, two threads asking for one
 * selection at once share one merge, and the cache's size bounds the profiles it keeps. ASan
 * checks that nothing leaks or is used after free. */
#include "test.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/strtab.h"
#include "server/merge_cache.h"
#include "store/store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1700006400

static char tmpdir[64];

static int put(struct store *s, const char *stack, int64_t value, int64_t t)
{
	struct store_batchbuf *bb = store_batchbuf_new();
	struct store_label labels[1] = { { "service_name", "app" } };
	struct store_batch b = { 0 };
	struct errmsg err = { "" };
	int ret;

	store_batchbuf_add_split(bb, stack, strlen(stack), ';', value);
	b.type = "cpu";
	b.labels = labels;
	b.nlabels = 1;
	b.from = t;
	b.until = t + 10;
	store_batchbuf_fill(bb, &b);
	ret = store_write(s, &b, 1, &err);
	store_batchbuf_free(bb);
	return ret;
}

static void test_cache(void)
{
	struct errmsg err = { "" };
	struct store *s;
	struct merge_cache *c = merge_cache_new(0);
	struct store_query q = { NULL, T0, T0 + 3600 }, q2 = { NULL, T0, T0 + 7200 };
	const struct store_profile *a, *b, *d, *k[MERGE_CACHE_ENTRIES + 2];
	char *cmd;
	size_t i;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/scorch-test-mcache-XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
	s = store_open("sqlite", tmpdir, NULL, &err);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK_EQ_INT(put(s, "main;a", 5, T0 + 10), 0);

	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 0, 0, &a, &err), 0);
	CHECK_EQ_INT(a->total, 5);
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 0, 0, &b, &err), 0);
	CHECK(a == b); /* the same merge, shared */
	/* another range: another merge */
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q2, 0, 0, &d, &err), 0);
	CHECK(d != a);
	merge_cache_put(c, d);
	merge_cache_put(c, b);

	/* a write: the cached merge is unreachable, the next one has the new data; the one
	 * still out stays valid until it is given back */
	CHECK_EQ_INT(put(s, "main;b", 7, T0 + 20), 0);
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 0, 0, &b, &err), 0);
	CHECK(b != a);
	CHECK_EQ_INT(b->total, 12);
	CHECK_EQ_INT(a->total, 5);
	CHECK(merge_cache_profile_bytes(b) >= merge_cache_profile_bytes(a) && merge_cache_profile_bytes(a) > 0);
	merge_cache_put(c, a);
	merge_cache_put(c, b);

	/* more keys than entries: the least recently used go, those out survive */
	for (i = 0; i < MERGE_CACHE_ENTRIES + 2; i++) {
		char key[32];

		snprintf(key, sizeof(key), "{k=\"%zu\"}", i);
		CHECK_EQ_INT(merge_cache_get(c, s, key, &q, 0, 0, &k[i], &err), 0);
	}
	for (i = 0; i < MERGE_CACHE_ENTRIES + 2; i++)
		CHECK_EQ_INT(k[i]->total, 12);
	for (i = 0; i < MERGE_CACHE_ENTRIES + 2; i++)
		merge_cache_put(c, k[i]);
	/* the newest is still cached, the oldest not */
	CHECK_EQ_INT(merge_cache_get(c, s, "{k=\"9\"}", &q, 0, 0, &a, &err), 0);
	CHECK(a == k[9]);
	merge_cache_put(c, a);

	/* another cap: the 64 Ki merge left nothing out, so it answers a 512 Ki request too */
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 0, 0, &a, &err), 0);
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, STORE_MAX_MERGE_STACKS, 0, &b, &err), 0);
	CHECK(a == b);
	merge_cache_put(c, b);
	/* but not a 1-stack request: that merge would leave a stack out */
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 1, 0, &b, &err), 0);
	CHECK(a != b);
	CHECK_EQ_INT(b->nstacks, 1);
	CHECK(b->other > 0);
	merge_cache_put(c, b);
	merge_cache_put(c, a);

	/* no cache: a merge of one's own */
	CHECK_EQ_INT(merge_cache_get(NULL, s, "{}", &q, 0, 0, &a, &err), 0);
	CHECK_EQ_INT(a->total, 12);
	merge_cache_put(NULL, a);
	store_close(s);
out:
	merge_cache_free(c);
	cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	xfree(cmd);
}

static int has_name(const struct store_profile *p, const char *name)
{
	return strtab_find(p->names, name, strlen(name)) != UINT32_MAX;
}

/* lines is part of the key: the view by function (frames of one function on several lines
 * merged) and the view by line (the frames as stored) are cached apart, each found again. */
static void test_lines_key(void)
{
	struct errmsg err = { "" };
	struct store *s;
	struct merge_cache *c = merge_cache_new(0);
	struct store_query q = { NULL, T0, T0 + 3600 };
	const struct store_profile *fn, *ln, *fn2, *ln2;
	char *cmd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/scorch-test-mcache-XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
	s = store_open("sqlite", tmpdir, NULL, &err);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK_EQ_INT(put(s, "main;work (w.c:10)", 3, T0 + 10), 0);
	CHECK_EQ_INT(put(s, "main;work (w.c:12)", 4, T0 + 20), 0);

	/* by function first: one name for both lines */
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 0, 0, &fn, &err), 0);
	CHECK_EQ_INT(fn->total, 7);
	CHECK(has_name(fn, "work"));
	CHECK(!has_name(fn, "work (w.c:10)"));
	/* by line next: not the function view's entry */
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 0, 1, &ln, &err), 0);
	CHECK(ln != fn);
	CHECK_EQ_INT(ln->total, 7);
	CHECK(has_name(ln, "work (w.c:10)"));
	CHECK(has_name(ln, "work (w.c:12)"));
	CHECK(!has_name(ln, "work"));
	/* each found again, another cap included */
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, STORE_MAX_MERGE_STACKS, 0, &fn2, &err), 0);
	CHECK(fn2 == fn);
	CHECK_EQ_INT(merge_cache_get(c, s, "{}", &q, 0, 1, &ln2, &err), 0);
	CHECK(ln2 == ln);
	merge_cache_put(c, fn2);
	merge_cache_put(c, ln2);
	merge_cache_put(c, fn);
	merge_cache_put(c, ln);
	store_close(s);
out:
	merge_cache_free(c);
	cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	xfree(cmd);
}

struct racer {
	struct merge_cache *c;
	struct store *s;
	pthread_barrier_t *go;
	const struct store_profile *p;
	int rc;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct store_query q = { NULL, T0, T0 + 3600 };
	struct errmsg err = { "" };

	pthread_barrier_wait(r->go);
	r->rc = merge_cache_get(r->c, r->s, "{}", &q, 0, 0, &r->p, &err);
	return NULL;
}

static void test_one_merge_for_two(void)
{
	struct errmsg err = { "" };
	struct merge_cache *c = merge_cache_new(0);
	struct racer r[4];
	pthread_t th[4];
	pthread_barrier_t go;
	struct store *s;
	char *cmd, stack[64];
	int i, j;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/scorch-test-mcache-XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
	s = store_open("sqlite", tmpdir, NULL, &err);
	CHECK(s != NULL);
	if (!s)
		goto out;
	/* enough stacks for a merge to take a while */
	for (i = 0; i < 20; i++) {
		struct store_batchbuf *bb = store_batchbuf_new();
		struct store_label labels[1] = { { "service_name", "app" } };
		struct store_batch b = { 0 };

		for (j = 0; j < 1000; j++) {
			snprintf(stack, sizeof(stack), "main;f%d;g%d", i, j);
			store_batchbuf_add_split(bb, stack, strlen(stack), ';', 1 + j % 5);
		}
		b.type = "cpu";
		b.labels = labels;
		b.nlabels = 1;
		b.from = T0 + i;
		b.until = T0 + i + 1;
		store_batchbuf_fill(bb, &b);
		CHECK_EQ_INT(store_write(s, &b, 1, &err), 0);
		store_batchbuf_free(bb);
	}
	pthread_barrier_init(&go, NULL, 4);
	for (i = 0; i < 4; i++) {
		r[i].c = c;
		r[i].s = s;
		r[i].go = &go;
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 4; i++) {
		CHECK_EQ_INT(r[i].rc, 0);
		CHECK(r[i].p == r[0].p);
	}
	CHECK_EQ_INT(r[0].p->nstacks, 20000);
	for (i = 0; i < 4; i++)
		merge_cache_put(c, r[i].p);
	pthread_barrier_destroy(&go);
	store_close(s);
out:
	merge_cache_free(c);
	cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	xfree(cmd);
}

/* The size given to merge_cache_new(): a profile larger than a quarter of it is merged for its
 * query alone (never shared), one of exactly a quarter is kept and shared. */
static void test_size(void)
{
	struct errmsg err = { "" };
	struct store *s;
	struct store_query q = { NULL, T0, T0 + 3600 };
	const struct store_profile *a, *b;
	struct merge_cache *small, *fits;
	size_t bytes;
	char *cmd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/scorch-test-mcache-XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
	s = store_open("sqlite", tmpdir, NULL, &err);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK_EQ_INT(put(s, "main;a;b;c", 5, T0 + 10), 0);
	CHECK_EQ_INT(put(s, "main;d;e;f", 3, T0 + 20), 0);
	CHECK_EQ_INT(merge_cache_get(NULL, s, "{}", &q, 0, 0, &a, &err), 0);
	bytes = merge_cache_profile_bytes(a);
	merge_cache_put(NULL, a);
	CHECK(bytes > 0);

	/* a quarter of the cache is one byte short of the profile: not kept */
	small = merge_cache_new(4 * (bytes - 1));
	CHECK_EQ_INT(merge_cache_get(small, s, "{}", &q, 0, 0, &a, &err), 0);
	CHECK_EQ_INT(merge_cache_get(small, s, "{}", &q, 0, 0, &b, &err), 0);
	CHECK(a != b);
	CHECK_EQ_INT(a->total, 8);
	CHECK_EQ_INT(b->total, 8);
	merge_cache_put(small, a);
	merge_cache_put(small, b);
	merge_cache_free(small);

	/* a quarter of the cache is the profile: kept and shared */
	fits = merge_cache_new(4 * bytes);
	CHECK_EQ_INT(merge_cache_get(fits, s, "{}", &q, 0, 0, &a, &err), 0);
	CHECK_EQ_INT(merge_cache_get(fits, s, "{}", &q, 0, 0, &b, &err), 0);
	CHECK(a == b);
	merge_cache_put(fits, b);
	merge_cache_put(fits, a);
	merge_cache_free(fits);
	store_close(s);
out:
	cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	xfree(cmd);
}

int main(void)
{
	RUN(test_cache);
	RUN(test_lines_key);
	RUN(test_one_merge_for_two);
	RUN(test_size);
	return test_summary();
}
