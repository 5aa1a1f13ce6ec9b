/* strtab.c: string interning (see strtab.h). Strings live in 64 KiB chunks (long ones get their
 * own chunk) so that their addresses never move; a u64map from hash to id finds them, with
 * collisions chained through a side array. */
#include "lib/strtab.h"
#include "lib/alloc.h"
#include "lib/hash.h"

#include <string.h>

#define CHUNK 65536

struct entry {
	const char *s;
	uint32_t len;
	uint32_t next; /* next id with the same hash slot, UINT32_MAX ends */
};

struct strtab {
	struct entry *entries;
	size_t count, cap;
	struct u64map index; /* hash|1 -> first id */
	char **chunks;
	size_t nchunks, chunks_cap;
	size_t chunk_used;
	size_t bytes;
};

static uint64_t key_of(const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len, 0x5eed);

	return h == ~0ULL ? 2 : h | 1;
}

static const char *store(struct strtab *t, const char *s, size_t len)
{
	char *dst;

	if (len + 1 > CHUNK) {
		ALLOC_GROW(t->chunks, t->nchunks + 2, t->chunks_cap);
		dst = xmalloc(len + 1);
		/* Keep the current chunk last so it keeps filling. */
		if (t->nchunks) {
			t->chunks[t->nchunks] = t->chunks[t->nchunks - 1];
			t->chunks[t->nchunks - 1] = dst;
		} else {
			t->chunks[0] = dst;
			t->chunk_used = CHUNK;
		}
		t->nchunks++;
		t->bytes += len + 1;
	} else {
		if (!t->nchunks || t->chunk_used + len + 1 > CHUNK) {
			ALLOC_GROW(t->chunks, t->nchunks + 1, t->chunks_cap);
			t->chunks[t->nchunks++] = xmalloc(CHUNK);
			t->chunk_used = 0;
			t->bytes += CHUNK;
		}
		dst = t->chunks[t->nchunks - 1] + t->chunk_used;
		t->chunk_used += len + 1;
	}
	memcpy(dst, s, len);
	dst[len] = '\0';
	return dst;
}

struct strtab *strtab_new(void)
{
	struct strtab *t = xcalloc(1, sizeof(*t));

	u64map_init(&t->index);
	strtab_intern_len(t, "", 0);
	return t;
}

void strtab_free(struct strtab *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nchunks; i++)
		xfree(t->chunks[i]);
	xfree(t->chunks);
	xfree(t->entries);
	u64map_release(&t->index);
	xfree(t);
}

uint32_t strtab_find(const struct strtab *t, const char *s, size_t len)
{
	uint64_t *first = u64map_get(&t->index, key_of(s, len));
	uint32_t id;

	if (!first)
		return UINT32_MAX;
	for (id = (uint32_t)*first; id != UINT32_MAX; id = t->entries[id].next) {
		if (t->entries[id].len == len && !memcmp(t->entries[id].s, s, len))
			return id;
	}
	return UINT32_MAX;
}

uint32_t strtab_intern_len(struct strtab *t, const char *s, size_t len)
{
	uint64_t key = key_of(s, len);
	uint64_t *first = u64map_get(&t->index, key);
	uint32_t id;

	if (first) {
		for (id = (uint32_t)*first; id != UINT32_MAX; id = t->entries[id].next) {
			if (t->entries[id].len == len && !memcmp(t->entries[id].s, s, len))
				return id;
		}
	}
	ALLOC_GROW(t->entries, t->count + 1, t->cap);
	id = (uint32_t)t->count++;
	t->entries[id].s = store(t, s, len);
	t->entries[id].len = (uint32_t)len;
	t->entries[id].next = first ? (uint32_t)*first : UINT32_MAX;
	u64map_put(&t->index, key, id);
	return id;
}

uint32_t strtab_intern(struct strtab *t, const char *s)
{
	return strtab_intern_len(t, s, strlen(s));
}

const char *strtab_get(const struct strtab *t, uint32_t id)
{
	return id < t->count ? t->entries[id].s : "";
}

size_t strtab_len(const struct strtab *t, uint32_t id)
{
	return id < t->count ? t->entries[id].len : 0;
}

uint32_t strtab_count(const struct strtab *t)
{
	return (uint32_t)t->count;
}

size_t strtab_bytes(const struct strtab *t)
{
	return t->bytes + t->cap * sizeof(struct entry) + t->index.cap * 16;
}
