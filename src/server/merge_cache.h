/* merge_cache.h: the last few merged profiles of the server, shared by the queries that need
 * the same selection: the web UI loads a flame graph and its table together, then asks for
 * the subtree of each frame it zooms into, all over one selection. A merge is the costly part
 * of those queries (the store reads every row); the tree built from it is cheap.
 *
 * Entries are keyed by (query text, from, until, max_stacks, lines) and the store's generation
 * (store_generation()), so a write, or a maintenance pass that dropped data, makes every
 * entry unreachable: a cached result is exactly what a new merge would give. That holds for a
 * store with one server in front; several servers on one ClickHouse do not see each other's
 * writes, so an entry also expires MERGE_CACHE_TTL_S seconds after it was merged. Memory is
 * bounded: max_bytes of merge_cache_new() at most in all (least recently used entries go
 * first), and a profile larger than a quarter of it is never kept.
 *
 * Threads: every function may be called concurrently. Profiles handed out are shared and
 * read-only; each merge_cache_get() is paired with a merge_cache_put(). */
#ifndef SCORCH_MERGE_CACHE_H
#define SCORCH_MERGE_CACHE_H

#include <stddef.h>

struct errmsg;
struct store;
struct store_profile;
struct store_query;

#define MERGE_CACHE_BYTES (32u << 20) /* max_bytes when 0 is given */
#define MERGE_CACHE_ENTRIES 8
#define MERGE_CACHE_TTL_S 30

struct merge_cache;

struct merge_cache *merge_cache_new(size_t max_bytes);
/* Frees every entry; no profile may still be out. Accepts NULL. */
void merge_cache_free(struct merge_cache *c);

/* store_merge(s, q, max_stacks) through the cache; query is the selection's text (part of
 * the key). With lines 0 the profile is the merge by function (query_by_function(): what the
 * views show unless asked for lines), with lines 1 the merge as stored (a frame per source
 * line); lines is part of the key, so one view is never answered with the other's profile.
 * Returns 0 and a shared profile in *out, or a negative errno as store_merge(). A NULL cache
 * merges without caching (the profile is still released with merge_cache_put). */
int merge_cache_get(struct merge_cache *c, struct store *s, const char *query,
		    const struct store_query *q, size_t max_stacks, int lines,
		    const struct store_profile **out, struct errmsg *err);
void merge_cache_put(struct merge_cache *c, const struct store_profile *p);

/* Bytes a merged profile holds (its arrays and names). */
size_t merge_cache_profile_bytes(const struct store_profile *p);

#endif
