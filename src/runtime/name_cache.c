/* name_cache.c: the identity-keyed cache of names read from process memory (name_cache.h).
 * Keys and values live in two parallel arrays (values of any size and alignment), found
 * through a u64map from the key's hash to the entry's index + 1. */
#include "runtime/name_cache.h"
#include "lib/alloc.h"
#include "lib/hash.h"

#include <string.h>

struct name_cache {
	struct name_cache_ops ops;
	struct u64map index;          /* hash(key) -> entry index + 1 */
	struct name_cache_key *keys;
	unsigned char *values;        /* cap values of ops.value_size bytes */
	unsigned char *fresh;         /* one value: what a read fills before it is kept */
	size_t n, cap, max;
	struct name_cache_stats st;
};

uint64_t name_cache_hash(const struct name_cache_key *k)
{
	return hash_combine(hash_combine(hash_u64(((uint64_t)k->tag << 32 | k->pid) + 1), k->addr),
			    k->ident);
}

static uint64_t key_hash(const struct name_cache *c, const struct name_cache_key *k)
{
	uint64_t h = c->ops.hash ? c->ops.hash(k) : name_cache_hash(k);

	return (h == 0 || h == ~0ULL) ? 1 : h; /* the u64map's reserved keys */
}

static int key_equal(const struct name_cache_key *a, const struct name_cache_key *b)
{
	return a->pid == b->pid && a->addr == b->addr && a->tag == b->tag && a->ident == b->ident;
}

static void *value_at(const struct name_cache *c, size_t i)
{
	return c->values + i * c->ops.value_size;
}

static void release(struct name_cache *c, const struct name_cache_key *k, void *value)
{
	if (c->ops.release)
		c->ops.release(k, value);
}

struct name_cache *name_cache_new(const struct name_cache_ops *ops, size_t max_entries)
{
	struct name_cache *c = xcalloc(1, sizeof(*c));

	c->ops = *ops;
	if (!c->ops.value_size)
		c->ops.value_size = 1;
	u64map_init(&c->index);
	c->fresh = xcalloc(1, c->ops.value_size);
	c->max = max_entries ? max_entries : 65536;
	return c;
}

static void cache_clear(struct name_cache *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		release(c, &c->keys[i], value_at(c, i));
	c->n = 0;
	u64map_release(&c->index);
	u64map_init(&c->index);
}

void name_cache_free(struct name_cache *c)
{
	if (!c)
		return;
	cache_clear(c);
	u64map_release(&c->index);
	xfree(c->keys);
	xfree(c->values);
	xfree(c->fresh);
	xfree(c);
}

/* Keeps value (value_size bytes, taken over and zeroed) as the entry of key. */
static void *store(struct name_cache *c, const struct name_cache_key *key, uint64_t h,
		   void *value)
{
	uint64_t *slot = u64map_get(&c->index, h);
	size_t i;

	if (slot) {
		/* the same identity read again, or a hash collision: replace in place */
		i = *slot - 1;
		release(c, &c->keys[i], value_at(c, i));
	} else {
		if (c->n >= c->max) {
			c->st.evictions += c->n;
			cache_clear(c);
		}
		if (c->n == c->cap) {
			ALLOC_GROW(c->keys, c->n + 1, c->cap);
			c->values = xrealloc(c->values, c->cap * c->ops.value_size);
		}
		i = c->n++;
		u64map_put(&c->index, h, c->n);
	}
	c->keys[i] = *key;
	memcpy(value_at(c, i), value, c->ops.value_size);
	memset(value, 0, c->ops.value_size);
	return value_at(c, i);
}

const void *name_cache_get(struct name_cache *c, const struct name_cache_key *key,
			   name_cache_read_fn reader, void *arg)
{
	uint64_t h = key_hash(c, key), *slot;

	c->st.lookups++;
	slot = u64map_get(&c->index, h);
	if (slot) {
		const struct name_cache_key *e = &c->keys[*slot - 1];

		if (key_equal(e, key)) {
			c->st.hits++;
			return value_at(c, *slot - 1);
		}
		if (e->pid == key->pid && e->addr == key->addr && e->tag == key->tag)
			c->st.checksum_mismatches++; /* the entry there is of another object */
	}
	if (!reader)
		return NULL;
	c->st.reads++;
	memset(c->fresh, 0, c->ops.value_size);
	if (reader(arg, key, c->fresh) < 0) {
		c->st.read_errors++;
		return NULL;
	}
	if (c->ops.same && !c->ops.same(key, c->fresh)) {
		/* the address holds another object now: the sample's is gone */
		c->st.checksum_mismatches++;
		release(c, key, c->fresh);
		return NULL;
	}
	return store(c, key, h, c->fresh);
}

const void *name_cache_put(struct name_cache *c, const struct name_cache_key *key, void *value)
{
	c->st.puts++;
	return store(c, key, key_hash(c, key), value);
}

void name_cache_forget_pid(struct name_cache *c, uint32_t pid)
{
	size_t i, j = 0, size = c->ops.value_size;

	for (i = 0; i < c->n; i++) {
		if (c->keys[i].pid == pid) {
			release(c, &c->keys[i], value_at(c, i));
			continue;
		}
		if (i != j) {
			c->keys[j] = c->keys[i];
			memcpy(value_at(c, j), value_at(c, i), size);
		}
		j++;
	}
	c->n = j;
	u64map_release(&c->index);
	u64map_init(&c->index);
	for (i = 0; i < c->n; i++)
		u64map_put(&c->index, key_hash(c, &c->keys[i]), i + 1);
}

void name_cache_stats(const struct name_cache *c, struct name_cache_stats *st)
{
	*st = c->st;
	st->entries = c->n;
}
