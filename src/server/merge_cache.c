/* merge_cache.c: a small LRU of merged profiles with reference counts (see merge_cache.h). */
#include "server/merge_cache.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/strtab.h"
#include "store/store.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

struct entry {
	char *query;
	int64_t from, until;
	size_t max_stacks;
	uint64_t generation;
	struct store_profile *p;
	size_t bytes;
	unsigned refs;    /* profiles handed out */
	int evicted;      /* out of the table: freed when refs drops to 0 */
	uint64_t used;    /* LRU clock */
};

/* A profile handed out is found again by merge_cache_put() through this table: every entry
 * ever handed out is here until its last put. */
struct merge_cache {
	pthread_mutex_t lock;
	struct entry *live[MERGE_CACHE_ENTRIES]; /* cached (may also be out) */
	struct entry **out;                       /* evicted or uncached, still out */
	size_t nout, out_cap;
	size_t bytes;
	uint64_t clock;
};

size_t merge_cache_profile_bytes(const struct store_profile *p)
{
	return sizeof(*p) + p->frames_cap * sizeof(*p->frames) + p->stacks_cap * sizeof(*p->stacks) +
	       strtab_bytes(p->names);
}

struct merge_cache *merge_cache_new(void)
{
	struct merge_cache *c = xcalloc(1, sizeof(*c));

	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static void entry_free(struct entry *e)
{
	store_profile_free(e->p);
	xfree(e->query);
	xfree(e);
}

void merge_cache_free(struct merge_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < MERGE_CACHE_ENTRIES; i++)
		if (c->live[i])
			entry_free(c->live[i]);
	for (i = 0; i < c->nout; i++)
		entry_free(c->out[i]);
	xfree(c->out);
	pthread_mutex_destroy(&c->lock);
	xfree(c);
}

/* Take e out of the table (locked): freed now, or by its last put. */
static void evict(struct merge_cache *c, size_t slot)
{
	struct entry *e = c->live[slot];

	c->live[slot] = NULL;
	c->bytes -= e->bytes;
	if (!e->refs) {
		entry_free(e);
		return;
	}
	e->evicted = 1;
	ALLOC_GROW(c->out, c->nout + 1, c->out_cap);
	c->out[c->nout++] = e;
}

int merge_cache_get(struct merge_cache *c, struct store *s, const char *query,
		    const struct store_query *q, size_t max_stacks, const struct store_profile **out,
		    struct errmsg *err)
{
	struct store_profile *p = NULL;
	struct entry *e;
	uint64_t gen = store_generation(s);
	size_t i, victim;
	int rc;

	*out = NULL;
	if (c) {
		pthread_mutex_lock(&c->lock);
		for (i = 0; i < MERGE_CACHE_ENTRIES; i++) {
			e = c->live[i];
			if (!e)
				continue;
			if (e->generation != gen) { /* stale: nobody can get it again */
				evict(c, i);
				continue;
			}
			if (e->from == q->from && e->until == q->until && e->max_stacks == max_stacks &&
			    !strcmp(e->query, query)) {
				e->refs++;
				e->used = ++c->clock;
				*out = e->p;
				pthread_mutex_unlock(&c->lock);
				return 0;
			}
		}
		pthread_mutex_unlock(&c->lock);
	}
	rc = store_merge(s, q, max_stacks, &p, err);
	if (rc < 0)
		return rc;
	e = xcalloc(1, sizeof(*e));
	e->query = xstrdup(query);
	e->from = q->from;
	e->until = q->until;
	e->max_stacks = max_stacks;
	e->generation = gen;
	e->p = p;
	e->bytes = merge_cache_profile_bytes(p);
	e->refs = 1;
	*out = p;
	if (!c) {
		/* handed out alone: merge_cache_put(NULL, p) frees it */
		xfree(e->query);
		xfree(e);
		return 0;
	}
	pthread_mutex_lock(&c->lock);
	e->used = ++c->clock;
	if (e->bytes > MERGE_CACHE_BYTES / 4 || gen != store_generation(s)) {
		/* too big to keep, or already stale: only out */
		e->evicted = 1;
		ALLOC_GROW(c->out, c->nout + 1, c->out_cap);
		c->out[c->nout++] = e;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	for (;;) {
		/* a free slot, else the least recently used; and room for the bytes */
		victim = MERGE_CACHE_ENTRIES;
		for (i = 0; i < MERGE_CACHE_ENTRIES; i++) {
			if (!c->live[i]) {
				victim = i;
				break;
			}
			if (victim == MERGE_CACHE_ENTRIES || c->live[i]->used < c->live[victim]->used)
				victim = i;
		}
		if (c->live[victim])
			evict(c, victim);
		else if (c->bytes + e->bytes > MERGE_CACHE_BYTES) {
			/* room in the table but not in memory: drop the oldest */
			size_t old = MERGE_CACHE_ENTRIES;

			for (i = 0; i < MERGE_CACHE_ENTRIES; i++)
				if (c->live[i] && (old == MERGE_CACHE_ENTRIES || c->live[i]->used < c->live[old]->used))
					old = i;
			if (old == MERGE_CACHE_ENTRIES)
				break; /* cannot happen: bytes > 0 means an entry */
			evict(c, old);
			continue;
		}
		if (c->bytes + e->bytes <= MERGE_CACHE_BYTES)
			break;
	}
	c->live[victim] = e;
	c->bytes += e->bytes;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void merge_cache_put(struct merge_cache *c, const struct store_profile *p)
{
	size_t i;

	if (!p)
		return;
	if (!c) {
		store_profile_free((struct store_profile *)p);
		return;
	}
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < MERGE_CACHE_ENTRIES; i++) {
		if (c->live[i] && c->live[i]->p == p) {
			c->live[i]->refs--;
			pthread_mutex_unlock(&c->lock);
			return;
		}
	}
	for (i = 0; i < c->nout; i++) {
		struct entry *e = c->out[i];

		if (e->p != p)
			continue;
		if (--e->refs == 0) {
			c->out[i] = c->out[--c->nout];
			entry_free(e);
		}
		pthread_mutex_unlock(&c->lock);
		return;
	}
	pthread_mutex_unlock(&c->lock);
	log_warn("merge cache: a profile nobody handed out was given back");
}
