/* test_name_cache.c: the identity-keyed cache of names (runtime/name_cache.h) with a fake
 * reader: a hit only on a key equal in every field, two keys forced to one hash never give
 * each other's value, a value read for another identity is a miss, read errors, clear when
 * full, forget_pid, put, and every value released exactly once (counted here; ASan checks
 * that nothing leaks or is freed twice). */
#include "test.h"
#include "lib/alloc.h"
#include "runtime/name_cache.h"

#include <errno.h>

#define MAX_VALUES 4096

struct tval {
	uint32_t id;         /* which read made it */
	uint64_t ident;      /* the identity found at the address */
	char *name;          /* xmalloc'ed: a leak or a double free shows under ASan */
};

static unsigned made, released[MAX_VALUES];

struct reader {
	int calls;
	int fail;            /* return this error */
	int other_ident;     /* the address holds another object: ident + 1 */
};

static int fake_read(void *arg, const struct name_cache_key *k, void *value)
{
	struct reader *r = arg;
	struct tval *v = value;

	r->calls++;
	CHECK(v->id == 0 && v->name == NULL); /* handed over zeroed */
	if (r->fail)
		return r->fail;
	if (made >= MAX_VALUES)
		abort();
	v->id = made++;
	v->ident = k->ident + (r->other_ident ? 1 : 0);
	v->name = xasprintf("%u/%u/%llx/%llu", k->pid, k->tag, (unsigned long long)k->addr,
			    (unsigned long long)k->ident);
	return 0;
}

static int fake_same(const struct name_cache_key *k, const void *value)
{
	const struct tval *v = value;

	return v->ident == k->ident;
}

static void fake_release(const struct name_cache_key *k, void *value)
{
	struct tval *v = value;

	CHECK(v->name != NULL);
	CHECK(v->id < made);
	if (v->id < MAX_VALUES)
		released[v->id]++;
	xfree(v->name);
	v->name = NULL;
}

static uint64_t one_hash(const struct name_cache_key *k)
{
	return 42;
}

static uint64_t no_ident_hash(const struct name_cache_key *k)
{
	struct name_cache_key h = *k;

	h.ident = 0;
	return name_cache_hash(&h);
}

/* A cache of struct tval with hash (NULL: the default), the counts of values set to zero. */
static struct name_cache *cache_new(uint64_t (*hash)(const struct name_cache_key *), size_t max)
{
	struct name_cache_ops o = { sizeof(struct tval), fake_release, fake_same, hash };

	made = 0;
	memset(released, 0, sizeof(released));
	return name_cache_new(&o, max);
}

/* Frees c and checks that every value made was released exactly once. */
static void cache_done(struct name_cache *c)
{
	unsigned i, bad = 0;

	name_cache_free(c);
	for (i = 0; i < made; i++)
		if (released[i] != 1)
			bad++;
	CHECK_EQ_INT(bad, 0);
}

struct counts {
	uint64_t lookups, hits, reads, read_errors, mismatches, evictions, puts, entries;
};

#define CHECK_COUNTS(c, ...) check_counts(c, (struct counts){ __VA_ARGS__ }, __LINE__)

static void check_counts(struct name_cache *c, struct counts want, int line)
{
	struct name_cache_stats st;

	name_cache_stats(c, &st);
	if (st.lookups != want.lookups || st.hits != want.hits || st.reads != want.reads ||
	    st.read_errors != want.read_errors || st.checksum_mismatches != want.mismatches ||
	    st.evictions != want.evictions || st.puts != want.puts || st.entries != want.entries) {
		fprintf(stderr, "  FAIL %s:%d: %s: lookups %" PRIu64 " hits %" PRIu64 " reads %" PRIu64
			" read_errors %" PRIu64 " mismatches %" PRIu64 " evictions %" PRIu64
			" puts %" PRIu64 " entries %zu\n", __FILE__, line, test_current, st.lookups,
			st.hits, st.reads, st.read_errors, st.checksum_mismatches, st.evictions,
			st.puts, st.entries);
		test_failed_checks++;
	}
}

static const struct tval *get(struct name_cache *c, uint32_t pid, uint64_t addr, uint32_t tag,
			      uint64_t ident, struct reader *r)
{
	struct name_cache_key k = { pid, tag, addr, ident };

	return name_cache_get(c, &k, r ? fake_read : NULL, r);
}

static void test_exact_key(void)
{
	struct name_cache *c = cache_new(NULL, 0);
	struct reader r = { 0 };
	const struct tval *v;

	v = get(c, 7, 0x1000, 1, 99, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "7/1/1000/99");
	/* the same key: a hit, no read */
	v = get(c, 7, 0x1000, 1, 99, &r);
	CHECK(v && v->id == 0);
	CHECK_EQ_INT(r.calls, 1);
	/* each field differing alone: a miss, an entry of its own */
	v = get(c, 8, 0x1000, 1, 99, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "8/1/1000/99");
	v = get(c, 7, 0x1008, 1, 99, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "7/1/1008/99");
	v = get(c, 7, 0x1000, 2, 99, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "7/2/1000/99");
	v = get(c, 7, 0x1000, 1, 100, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "7/1/1000/100");
	CHECK_EQ_INT(r.calls, 5);
	/* the first is still there, next to the one of the new identity */
	v = get(c, 7, 0x1000, 1, 99, &r);
	CHECK(v && v->id == 0);
	CHECK_COUNTS(c, .lookups = 7, .hits = 2, .reads = 5, .entries = 5);
	cache_done(c);
}

/* Every key hashes to one slot: a lookup never takes another key's entry for its own; the one
 * read last replaces the other in place. */
static void test_collision(void)
{
	struct name_cache *c = cache_new(one_hash, 0);
	struct reader r = { 0 };
	const struct tval *v;

	v = get(c, 1, 0x10, 0, 5, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "1/0/10/5");
	v = get(c, 2, 0x20, 0, 6, &r);          /* another key, the same hash */
	CHECK_EQ_STR(v ? v->name : NULL, "2/0/20/6");
	CHECK_EQ_INT(released[0], 1);           /* replaced in place */
	/* without a reader, the first is not to be had: never the second's name */
	CHECK(get(c, 1, 0x10, 0, 5, NULL) == NULL);
	v = get(c, 2, 0x20, 0, 6, NULL);
	CHECK_EQ_STR(v ? v->name : NULL, "2/0/20/6");
	/* keys differing in one field only, all on one slot */
	CHECK(get(c, 2, 0x20, 1, 6, NULL) == NULL);
	CHECK(get(c, 2, 0x20, 0, 7, NULL) == NULL); /* another identity there: a mismatch */
	CHECK(get(c, 3, 0x20, 0, 6, NULL) == NULL);
	CHECK(get(c, 2, 0x28, 0, 6, NULL) == NULL);
	CHECK_COUNTS(c, .lookups = 8, .hits = 1, .reads = 2, .mismatches = 1, .entries = 1);
	name_cache_forget_pid(c, 2);
	CHECK_EQ_INT(released[1], 1);
	cache_done(c);
}

/* A runtime whose hash leaves ident out (PHP): one entry per (pid, addr, tag), replaced when
 * the object there is read with a new identity. */
static void test_hash_without_ident(void)
{
	struct name_cache *c = cache_new(no_ident_hash, 0);
	struct reader r = { 0 };
	const struct tval *v;

	v = get(c, 1, 0x10, 0, 5, &r);
	CHECK(v && v->id == 0);
	v = get(c, 1, 0x10, 0, 6, &r);
	CHECK(v && v->id == 1);
	CHECK_EQ_INT(released[0], 1);
	CHECK(get(c, 1, 0x10, 0, 5, NULL) == NULL);
	CHECK_COUNTS(c, .lookups = 3, .reads = 2, .mismatches = 2, .entries = 1);
	cache_done(c);
}

static void test_identity_and_errors(void)
{
	struct name_cache *c = cache_new(NULL, 0);
	struct reader r = { 0 };

	/* the address holds another object: a miss, the value read released at once */
	r.other_ident = 1;
	CHECK(get(c, 1, 0x10, 0, 5, &r) == NULL);
	CHECK_EQ_INT(made, 1);
	CHECK_EQ_INT(released[0], 1);
	r.other_ident = 0;
	/* a read error: nothing kept, nothing to release */
	r.fail = -EFAULT;
	CHECK(get(c, 1, 0x10, 0, 5, &r) == NULL);
	r.fail = 0;
	/* no reader: cached entries only */
	CHECK(get(c, 1, 0x10, 0, 5, NULL) == NULL);
	CHECK_COUNTS(c, .lookups = 3, .reads = 2, .read_errors = 1, .mismatches = 1);
	cache_done(c);
}

static void test_clear_when_full(void)
{
	struct name_cache *c = cache_new(NULL, 4);
	struct reader r = { 0 };
	const struct tval *v;
	uint64_t i;

	for (i = 0; i < 4; i++)
		CHECK(get(c, 1, 0x100 + 8 * i, 0, i, &r) != NULL);
	/* a hit is no fifth entry */
	CHECK(get(c, 1, 0x100, 0, 0, &r) != NULL);
	CHECK_COUNTS(c, .lookups = 5, .hits = 1, .reads = 4, .entries = 4);
	/* a fifth: every entry goes */
	v = get(c, 1, 0x200, 0, 9, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "1/0/200/9");
	CHECK_COUNTS(c, .lookups = 6, .hits = 1, .reads = 5, .evictions = 4, .entries = 1);
	for (i = 0; i < 4; i++)
		CHECK_EQ_INT(released[i], 1);
	CHECK_EQ_INT(released[4], 0);
	CHECK(get(c, 1, 0x100, 0, 0, NULL) == NULL);
	v = get(c, 1, 0x200, 0, 9, NULL);
	CHECK(v && v->id == 4);
	cache_done(c);
}

static void test_forget_pid(void)
{
	struct name_cache *c = cache_new(NULL, 0);
	struct reader r = { 0 };
	const struct tval *v;
	uint64_t i;

	for (i = 0; i < 30; i++)
		CHECK(get(c, (uint32_t)(1 + i % 3), 0x1000 + 16 * i, (uint32_t)(i % 2), i, &r) != NULL);
	name_cache_forget_pid(c, 2);
	CHECK_COUNTS(c, .lookups = 30, .reads = 30, .entries = 20);
	for (i = 0; i < 30; i++) {
		int gone = (1 + i % 3) == 2;

		CHECK_EQ_INT(released[i], gone);
		/* what stays is found again through the rebuilt index, with its own value */
		v = get(c, (uint32_t)(1 + i % 3), 0x1000 + 16 * i, (uint32_t)(i % 2), i, NULL);
		CHECK(gone ? v == NULL : v != NULL && v->id == i);
	}
	name_cache_forget_pid(c, 12345); /* no entry: nothing happens */
	CHECK_COUNTS(c, .lookups = 60, .hits = 20, .reads = 30, .entries = 20);
	cache_done(c);
}

static struct tval made_value(const char *name)
{
	struct tval t = { made++, 7, xstrdup(name) };

	return t;
}

static void test_put(void)
{
	struct name_cache *c = cache_new(NULL, 0);
	struct name_cache_key k = { 3, 0, 0x30, 7 };
	struct reader r = { 0 };
	struct tval t = made_value("from put");
	const struct tval *v;

	v = name_cache_put(c, &k, &t);
	CHECK(t.name == NULL && t.id == 0); /* taken over */
	CHECK_EQ_STR(v ? v->name : NULL, "from put");
	v = get(c, 3, 0x30, 0, 7, &r);
	CHECK_EQ_STR(v ? v->name : NULL, "from put");
	CHECK_EQ_INT(r.calls, 0);
	/* put again: the old value released, the new one in its place */
	t = made_value("again");
	name_cache_put(c, &k, &t);
	CHECK_EQ_INT(released[0], 1);
	v = get(c, 3, 0x30, 0, 7, NULL);
	CHECK_EQ_STR(v ? v->name : NULL, "again");
	CHECK_COUNTS(c, .lookups = 2, .hits = 2, .puts = 2, .entries = 1);
	cache_done(c);
	name_cache_free(NULL);
}

/* Many entries: the arrays grow and are cleared, every value stays its key's. */
static void test_many(void)
{
	struct name_cache *c = cache_new(NULL, 1000);
	struct reader r = { 0 };
	uint64_t i;
	unsigned bad = 0;

	for (i = 0; i < 2500; i++)
		if (!get(c, (uint32_t)(i % 7), i * 8, 0, i, &r))
			bad++;
	CHECK_EQ_INT(bad, 0);
	CHECK_COUNTS(c, .lookups = 2500, .reads = 2500, .evictions = 2000, .entries = 500);
	for (i = 2000; i < 2500; i++) {
		const struct tval *v = get(c, (uint32_t)(i % 7), i * 8, 0, i, NULL);

		if (!v || v->id != i)
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	cache_done(c);
}

int main(void)
{
	RUN(test_exact_key);
	RUN(test_collision);
	RUN(test_hash_without_ident);
	RUN(test_identity_and_errors);
	RUN(test_clear_when_full);
	RUN(test_forget_pid);
	RUN(test_put);
	RUN(test_many);
	return test_summary();
}
