/* budget.h: the limits of one unit of work (one HTTP request) done by the calling thread: a
 * deadline, a cap on the heap it holds, and a shared quota (quota.h) that heap is taken from.
 *
 * lib/alloc.c counts, per thread, the bytes allocated minus the bytes freed. While a budget is
 * active on a thread (budget_begin() .. budget_end()), the heap of the work is that count minus
 * its value at budget_begin(). It is compared with max_bytes and taken from the quota in steps
 * of BUDGET_STEP. Allocations whose size comes from outside input (try_malloc, try_realloc, and
 * so every struct buf) are checked before they happen and fail (NULL, errno ENOMEM); the others
 * (xmalloc) are counted and caught by the next budget_check(). Long loops (decoders, store
 * merges, call-tree builds) call budget_check() and give up with its error:
 *
 *     if ((rc = budget_check()) < 0)
 *             return budget_error(err, rc);
 *
 * Failures are sticky: once a check failed, every later one fails the same way, so nested
 * loops unwind. Without an active budget every check passes. Budgets nest (the inner one is
 * checked; the outer one sees the heap when the inner ends).
 *
 * Errors: -ENOMEM  the work needs more heap than max_bytes (or than the whole quota): it can
 *                  never succeed as it is (413 for a request body, 503 for a query);
 *         -EBUSY   the quota is held by concurrent work: retry later (503 + Retry-After);
 *         -ETIME   past the deadline (503). */
#ifndef SCORCH_BUDGET_H
#define SCORCH_BUDGET_H

#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

struct quota;

#define BUDGET_STEP (1u << 20) /* quota is taken in steps of this many bytes */

struct budget {
	/* Set by the caller before budget_begin(); zero fields mean "no limit". */
	uint64_t max_bytes;
	const char *mem_name;    /* the memory limit's name in messages, e.g. "request-memory" */
	struct quota *quota;
	const char *quota_name;  /* e.g. "ingest-memory" */
	uint64_t quota_other;    /* bytes of the same work held in the quota elsewhere (a body) */
	int64_t deadline_ms;     /* CLOCK_MONOTONIC milliseconds */
	const char *time_name;   /* e.g. "render-seconds" */
	/* Results. */
	uint64_t peak;           /* most heap held at once */
	int failed;              /* 0, or the error of the first failed check */
	/* Private. */
	int64_t base;
	uint64_t held;           /* bytes taken from the quota */
	uint64_t need;           /* heap asked for when the check failed */
	unsigned ticks;
	struct budget *prev;
};

/* Make b the calling thread's current budget (its heap counts from now). */
void budget_begin(struct budget *b);
/* End b (the current budget of this thread): its quota bytes are given back. */
void budget_end(struct budget *b);

/* Step out of the calling thread's budget for a moment (to write an error message once it
 * failed, say): returns the budget to hand back to budget_resume(). */
struct budget *budget_pause(void);
void budget_resume(struct budget *b);

/* 0, or the error of the current budget (see above). Cheap: call it in loops. */
int budget_check(void);
/* Called by lib/alloc.c before an allocation of n bytes from try_malloc/try_realloc. */
int budget_admit(size_t n);
/* The current budget's heap now (0 without one). */
uint64_t budget_used(void);
/* Milliseconds on CLOCK_MONOTONIC (for deadlines). */
int64_t budget_now_ms(void);

/* Fill err with the message of a budget failure rc (naming the limit) and return rc. When rc
 * is -ENOMEM but no budget failed (a plain out-of-memory), says so. */
int budget_error(struct errmsg *err, int rc);
/* The current budget's failure (0 when none): lets a caller tell a budget failure from other
 * errors of the same code after a decoder returned. */
int budget_failed(void);

#endif
