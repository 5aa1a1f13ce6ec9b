/* budget.c: per-thread limits of one unit of work (see budget.h). The heap count is
 * lib/alloc.c's per-thread balance of bytes allocated minus bytes freed. */
#include "lib/budget.h"
#include "lib/alloc.h"
#include "lib/quota.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

static __thread struct budget *current;

int64_t budget_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void budget_begin(struct budget *b)
{
	b->base = alloc_thread_bytes();
	b->held = 0;
	b->peak = 0;
	b->failed = 0;
	b->need = 0;
	b->ticks = 0;
	b->prev = current;
	current = b;
}

void budget_end(struct budget *b)
{
	if (b->quota && b->held)
		quota_give(b->quota, b->held);
	b->held = 0;
	if (current == b)
		current = b->prev;
}

struct budget *budget_pause(void)
{
	struct budget *b = current;

	current = NULL;
	return b;
}

void budget_resume(struct budget *b)
{
	current = b;
}

static uint64_t used_of(const struct budget *b)
{
	int64_t u = alloc_thread_bytes() - b->base;

	return u > 0 ? (uint64_t)u : 0;
}

static int fail(struct budget *b, int rc, uint64_t need)
{
	b->failed = rc;
	b->need = need;
	return rc;
}

/* Can the work hold `want` bytes of heap? Takes quota as needed. */
static int admit(struct budget *b, uint64_t want)
{
	if (want > b->peak)
		b->peak = want;
	if (b->max_bytes && want > b->max_bytes)
		return fail(b, -ENOMEM, want);
	if (b->quota && want > b->held) {
		uint64_t step = want - b->held;

		step = (step + BUDGET_STEP - 1) / BUDGET_STEP * BUDGET_STEP;
		if (!quota_try(b->quota, step)) {
			uint64_t total;

			quota_get(b->quota, NULL, &total, NULL, NULL);
			/* Alone with the whole quota it still would not fit: it never will. */
			if (total && want + b->quota_other > total)
				return fail(b, -ENOMEM, want);
			return fail(b, -EBUSY, want);
		}
		b->held += step;
	}
	return 0;
}

int budget_check(void)
{
	struct budget *b = current;
	int rc;

	if (!b)
		return 0;
	if (b->failed)
		return b->failed;
	rc = admit(b, used_of(b));
	if (rc)
		return rc;
	/* The clock is read every 64th check: loops call this often. */
	if (b->deadline_ms && (b->ticks++ & 63) == 0 && budget_now_ms() > b->deadline_ms)
		return fail(b, -ETIME, 0);
	return 0;
}

int budget_admit(size_t n)
{
	struct budget *b = current;

	if (!b)
		return 0;
	if (b->failed)
		return b->failed;
	return admit(b, used_of(b) + n);
}

uint64_t budget_used(void)
{
	return current ? used_of(current) : 0;
}

int budget_failed(void)
{
	return current ? current->failed : 0;
}

static void mib(char *out, size_t len, uint64_t n)
{
	if (n >= (1u << 20))
		snprintf(out, len, "%.0f MiB", (double)n / (1 << 20));
	else
		snprintf(out, len, "%.0f KiB", (double)n / 1024);
}

int budget_error(struct errmsg *err, int rc)
{
	struct budget *b = current;
	char a[32], q[32];
	uint64_t total = 0;

	if (!b || b->failed != rc) {
		if (rc == -ETIME)
			return errmsg_set(err, rc, "took too long");
		return errmsg_set(err, rc, "out of memory");
	}
	if (b->quota)
		quota_get(b->quota, NULL, &total, NULL, NULL);
	switch (rc) {
	case -ETIME:
		return errmsg_set(err, rc, "took longer than its time limit (limit '%s')",
				  b->time_name ? b->time_name : "time");
	case -EBUSY:
		mib(q, sizeof(q), total);
		return errmsg_set(err, rc, "server busy: the %s shared by concurrent requests "
				  "(limit '%s') is in use, retry later", q,
				  b->quota_name ? b->quota_name : "memory");
	default:
		if (b->max_bytes && b->need > b->max_bytes) {
			mib(a, sizeof(a), b->max_bytes);
			return errmsg_set(err, rc, "needs more than %s of memory (limit '%s')", a,
					  b->mem_name ? b->mem_name : "memory");
		}
		mib(q, sizeof(q), total);
		return errmsg_set(err, rc, "needs more memory than the %s that all requests share "
				  "(limit '%s')", q, b->quota_name ? b->quota_name : "memory");
	}
}
