/* hash.h: fast non-cryptographic hashing for interning and maps, plus a u64 -> u64 open
 * addressing map (keys must not be 0 or ~0; values are free-form).
 *
 * The map owns its slot array; u64map_release() frees it. */
#ifndef SCORCH_HASH_H
#define SCORCH_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);
/* A 64-bit hash that is part of stored formats (the stores key frames, stacks and series by
 * it): it must never change. Little-endian 8-byte words, one multiply each, then a full
 * avalanche. Never 0 or ~0, so it can key a u64map. */
uint64_t hash_stable(const void *data, size_t len);
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
	return hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

struct u64map {
	uint64_t *keys;
	uint64_t *vals;
	size_t cap;   /* power of two, or 0 */
	size_t count; /* live entries */
	size_t used;  /* live + tombstones */
};

void u64map_init(struct u64map *m);
void u64map_release(struct u64map *m);
/* Returns a pointer to the value for key, or NULL. Valid until the next insert/remove. */
uint64_t *u64map_get(const struct u64map *m, uint64_t key);
/* Insert or overwrite. */
void u64map_put(struct u64map *m, uint64_t key, uint64_t val);
/* Returns 1 if removed, 0 if absent. */
int u64map_remove(struct u64map *m, uint64_t key);
/* Iterate: for (size_t i = 0; u64map_next(m, &i, &k, &v);) */
int u64map_next(const struct u64map *m, size_t *iter, uint64_t *key, uint64_t *val);

#endif
