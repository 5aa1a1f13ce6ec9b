/* merge_cache.c: a small LRU of merged profiles with reference counts (see merge_cache.h). A
 * merge in progress is noted, so that a second query of the same selection (the UI asks for
 * the flame graph and its table at once) waits for it instead of merging again. */
#include "server/merge_cache.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/strtab.h"
#include "store/query.h"
#include "store/store.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct entry {
	char *query;
	int64_t from, until;
	size_t max_stacks;
	int lines;             /* p is the merge as stored (1) or by function (0) */
	size_t merged_stacks;  /* stacks of the merge (p has fewer by function) */
	int merged_complete;   /* the merge left nothing out (other, other_stacks 0) */
	uint64_t generation;
	struct store_profile *p;
	size_t bytes;
	uint64_t born_ns; /* CLOCK_MONOTONIC of the merge */
	unsigned refs;    /* profiles handed out */
	int evicted;      /* out of the table: freed when refs drops to 0 */
	uint64_t used;    /* LRU clock */
};

/* A profile handed out is found again by merge_cache_put() through this table: every entry
 * ever handed out is here until its last put. */
/* A merge in progress (the key of the entry it will make). */
struct pending {
	const char *query;
	int64_t from, until;
	int lines;
	uint64_t generation;
};

struct merge_cache {
	pthread_mutex_t lock;
	pthread_cond_t done;                      /* a pending merge finished */
	struct pending *pending[MERGE_CACHE_ENTRIES * 4];
	struct entry *live[MERGE_CACHE_ENTRIES]; /* cached (may also be out) */
	struct entry **out;                       /* evicted or uncached, still out */
	size_t nout, out_cap;
	size_t bytes;
	size_t max_bytes;                         /* bytes of all cached profiles, at most */
	uint64_t clock;
};

size_t merge_cache_profile_bytes(const struct store_profile *p)
{
	return sizeof(*p) + p->frames_cap * sizeof(*p->frames) + p->stacks_cap * sizeof(*p->stacks) +
	       strtab_bytes(p->names);
}

struct merge_cache *merge_cache_new(size_t max_bytes)
{
	struct merge_cache *c = xcalloc(1, sizeof(*c));

	c->max_bytes = max_bytes ? max_bytes : MERGE_CACHE_BYTES;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
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
	pthread_cond_destroy(&c->done);
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

static size_t norm_cap(size_t max_stacks)
{
	if (!max_stacks)
		return STORE_DEFAULT_MAX_STACKS;
	return max_stacks > STORE_MAX_MERGE_STACKS ? STORE_MAX_MERGE_STACKS : max_stacks;
}

/* Does e's merge answer a merge capped at max_stacks? Yes for the same cap, and for any cap
 * when e left nothing out and has no more stacks than the cap allows: a merge of either cap
 * returns then exactly the same stacks. */
static int answers(const struct entry *e, size_t max_stacks)
{
	size_t want = norm_cap(max_stacks);

	if (norm_cap(e->max_stacks) == want)
		return 1;
	return e->merged_complete && e->merged_stacks <= want;
}

int merge_cache_get(struct merge_cache *c, struct store *s, const char *query,
		    const struct store_query *q, size_t max_stacks, int lines,
		    const struct store_profile **out, struct errmsg *err)
{
	struct store_profile *p = NULL, *byfn;
	struct entry *e;
	struct pending me = { query, q->from, q->until, !!lines, 0 }, **slot = NULL;
	size_t merged_stacks;
	int merged_complete;
	uint64_t gen = store_generation(s);
	size_t i, victim;
	int rc, waited;

	*out = NULL;
	if (c) {
		pthread_mutex_lock(&c->lock);
		do {
			waited = 0;
			gen = store_generation(s);
			for (i = 0; i < MERGE_CACHE_ENTRIES; i++) {
				e = c->live[i];
				if (!e)
					continue;
				if (e->generation != gen ||
				    mono_ns() - e->born_ns > (uint64_t)MERGE_CACHE_TTL_S * 1000000000ULL) {
					evict(c, i); /* stale: nobody can get it again */
					continue;
				}
				if (e->from == q->from && e->until == q->until && e->lines == me.lines &&
				    !strcmp(e->query, query) && answers(e, max_stacks)) {
					e->refs++;
					e->used = ++c->clock;
					*out = e->p;
					pthread_mutex_unlock(&c->lock);
					return 0;
				}
			}
			/* the same selection being merged: wait for it, then look again */
			for (i = 0; i < sizeof(c->pending) / sizeof(c->pending[0]); i++) {
				const struct pending *pd = c->pending[i];

				if (pd && pd->generation == gen && pd->from == q->from &&
				    pd->until == q->until && pd->lines == me.lines &&
				    !strcmp(pd->query, query)) {
					pthread_cond_wait(&c->done, &c->lock);
					waited = 1;
					break;
				}
			}
		} while (waited);
		me.generation = gen;
		for (i = 0; i < sizeof(c->pending) / sizeof(c->pending[0]) && !slot; i++)
			if (!c->pending[i]) {
				slot = &c->pending[i];
				*slot = &me;
			}
		pthread_mutex_unlock(&c->lock);
	}
	rc = store_merge(s, q, max_stacks, &p, err);
	if (rc < 0) {
		if (c && slot) {
			pthread_mutex_lock(&c->lock);
			*slot = NULL;
			pthread_cond_broadcast(&c->done); /* the waiters merge on their own */
			pthread_mutex_unlock(&c->lock);
		}
		return rc;
	}
	merged_stacks = p->nstacks;
	merged_complete = p->other == 0 && p->other_stacks == 0;
	if (!lines && (byfn = query_by_function(p))) {
		store_profile_free(p);
		p = byfn;
	}
	e = xcalloc(1, sizeof(*e));
	e->query = xstrdup(query);
	e->from = q->from;
	e->until = q->until;
	e->max_stacks = max_stacks;
	e->lines = me.lines;
	e->merged_stacks = merged_stacks;
	e->merged_complete = merged_complete;
	e->generation = gen;
	e->born_ns = mono_ns();
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
	if (slot)
		*slot = NULL; /* the waiters are woken once the entry is in */
	e->used = ++c->clock;
	if (e->bytes > c->max_bytes / 4 || gen != store_generation(s)) {
		/* too big to keep, or already stale: only out */
		e->evicted = 1;
		ALLOC_GROW(c->out, c->nout + 1, c->out_cap);
		c->out[c->nout++] = e;
		pthread_cond_broadcast(&c->done);
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
		else if (c->bytes + e->bytes > c->max_bytes) {
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
		if (c->bytes + e->bytes <= c->max_bytes)
			break;
	}
	c->live[victim] = e;
	c->bytes += e->bytes;
	pthread_cond_broadcast(&c->done);
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
