/* quota.h: a number of bytes shared by concurrent work, e.g. the memory that all ingest
 * requests of `scorch server` may hold together. Takers ask for bytes and give them back; a
 * request that cannot get its bytes waits (outside this module) or is refused. Nothing here
 * allocates: a quota only counts.
 *
 * Thread-safe. The notify callback (optional) runs, outside the quota's lock, after every
 * release, so that an event loop can retry the work that waits for bytes. */
#ifndef SCORCH_QUOTA_H
#define SCORCH_QUOTA_H

#include <pthread.h>
#include <stdint.h>

struct quota {
	pthread_mutex_t lock;
	uint64_t total;  /* bytes that may be taken at once (0: unlimited) */
	uint64_t used;   /* bytes taken now */
	uint64_t peak;   /* largest `used` seen */
	uint64_t refused; /* takes that failed */
	void (*notify)(void *arg);
	void *notify_arg;
};

void quota_init(struct quota *q, uint64_t total);
void quota_release_all(struct quota *q); /* destroys the lock; accepts NULL */

/* Take n bytes if they are free: 1 when taken, 0 when not (nothing taken). */
int quota_try(struct quota *q, uint64_t n);
/* Take n bytes even past the total (for memory that exists already). */
void quota_force(struct quota *q, uint64_t n);
/* Give n bytes back (n <= what the caller holds). */
void quota_give(struct quota *q, uint64_t n);
/* Snapshot of the counters. */
void quota_get(struct quota *q, uint64_t *used, uint64_t *total, uint64_t *peak,
	       uint64_t *refused);

#endif
