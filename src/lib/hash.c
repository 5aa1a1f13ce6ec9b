/* hash.c: byte hashing and the u64 open addressing map (see hash.h). Linear probing; a
 * tombstone is ~0, an empty slot 0. */
#include "lib/hash.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <string.h>

#define EMPTY 0ULL
#define TOMB (~0ULL)

/* The high and low halves of the 128-bit product, folded: one multiply mixes 16 bytes. */
static inline uint64_t hash_mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

#define HASH_K1 0xa0761d6478bd642fULL
#define HASH_K2 0xe7037ed1a0b428dbULL

/* 16 bytes per multiply, the running state fed into one factor and added back (a block whose
 * first word cancels its constant then leaves the state as it was instead of zeroing it), the
 * tail padded with zeros and tagged with the length, then a full avalanche. */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = hash_u64(seed ^ (len * 0x9e3779b97f4a7c15ULL)), a, b;
	size_t n = len;

	while (n > 16) {
		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		h ^= hash_mum(a ^ HASH_K1, b ^ h ^ HASH_K2);
		p += 16;
		n -= 16;
	}
	a = b = 0;
	if (n > 8) {
		memcpy(&a, p, 8);
		memcpy(&b, p + 8, n - 8);
	} else if (n) {
		memcpy(&a, p, n);
	}
	h ^= hash_mum(a ^ HASH_K1, b ^ h ^ HASH_K2 ^ ((uint64_t)n << 56));
	return hash_u64(h);
}

void u64map_init(struct u64map *m)
{
	memset(m, 0, sizeof(*m));
}

void u64map_release(struct u64map *m)
{
	xfree(m->keys);
	xfree(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t find_slot(const struct u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i = hash_u64(key) & mask;

	while (m->keys[i] != EMPTY && m->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

uint64_t *u64map_get(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (key == EMPTY || key == TOMB)
		BUG("u64map key %llx is reserved", (unsigned long long)key);
	if (!m->cap)
		return NULL;
	i = find_slot(m, key);
	return m->keys[i] == key ? &m->vals[i] : NULL;
}

static void rehash(struct u64map *m, size_t ncap)
{
	struct u64map old = *m;
	size_t i;

	m->keys = xcalloc(ncap, sizeof(uint64_t));
	m->vals = xcalloc(ncap, sizeof(uint64_t));
	m->cap = ncap;
	m->count = m->used = 0;
	for (i = 0; i < old.cap; i++) {
		if (old.keys[i] != EMPTY && old.keys[i] != TOMB)
			u64map_put(m, old.keys[i], old.vals[i]);
	}
	xfree(old.keys);
	xfree(old.vals);
}

void u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
	size_t mask, i;
	size_t tomb = SIZE_MAX;

	if (key == EMPTY || key == TOMB)
		BUG("u64map key %llx is reserved", (unsigned long long)key);
	if ((m->used + 1) * 4 >= m->cap * 3)
		rehash(m, m->cap ? (m->count * 2 + 2 > m->cap ? m->cap * 2 : m->cap) : 16);
	mask = m->cap - 1;
	i = hash_u64(key) & mask;
	while (m->keys[i] != EMPTY && m->keys[i] != key) {
		if (m->keys[i] == TOMB && tomb == SIZE_MAX)
			tomb = i;
		i = (i + 1) & mask;
	}
	if (m->keys[i] == key) {
		m->vals[i] = val;
		return;
	}
	if (tomb != SIZE_MAX)
		i = tomb;
	else
		m->used++;
	m->keys[i] = key;
	m->vals[i] = val;
	m->count++;
}

int u64map_remove(struct u64map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return 0;
	i = find_slot(m, key);
	if (m->keys[i] != key)
		return 0;
	m->keys[i] = TOMB;
	m->count--;
	return 1;
}

int u64map_next(const struct u64map *m, size_t *iter, uint64_t *key, uint64_t *val)
{
	while (*iter < m->cap) {
		size_t i = (*iter)++;

		if (m->keys[i] != EMPTY && m->keys[i] != TOMB) {
			if (key)
				*key = m->keys[i];
			if (val)
				*val = m->vals[i];
			return 1;
		}
	}
	return 0;
}

uint64_t hash_stable(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t h = 0x243f6a8885a308d3ULL ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL), v;

	while (len >= 8) {
		memcpy(&v, p, 8);
		h = (h ^ v) * 0x9fb21c651e98df25ULL;
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	v = 0;
	if (len)
		memcpy(&v, p, len);
	h = hash_u64(h ^ v ^ ((uint64_t)len << 56));
	return (h == 0 || h == ~0ULL) ? 2 : h;
}
