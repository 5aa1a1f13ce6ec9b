/* quota.c: bytes shared by concurrent work (see quota.h). */
#include "lib/quota.h"

void quota_init(struct quota *q, uint64_t total)
{
	pthread_mutex_init(&q->lock, NULL);
	q->total = total;
	q->used = q->peak = q->refused = 0;
	q->notify = NULL;
	q->notify_arg = NULL;
}

void quota_release_all(struct quota *q)
{
	if (q)
		pthread_mutex_destroy(&q->lock);
}

int quota_try(struct quota *q, uint64_t n)
{
	int ok;

	pthread_mutex_lock(&q->lock);
	ok = !q->total || (q->used <= q->total && n <= q->total - q->used);
	if (ok) {
		q->used += n;
		if (q->used > q->peak)
			q->peak = q->used;
	} else {
		q->refused++;
	}
	pthread_mutex_unlock(&q->lock);
	return ok;
}

void quota_force(struct quota *q, uint64_t n)
{
	pthread_mutex_lock(&q->lock);
	q->used += n;
	if (q->used > q->peak)
		q->peak = q->used;
	pthread_mutex_unlock(&q->lock);
}

void quota_give(struct quota *q, uint64_t n)
{
	void (*notify)(void *);
	void *arg;

	if (!n)
		return;
	pthread_mutex_lock(&q->lock);
	q->used = n < q->used ? q->used - n : 0;
	notify = q->notify;
	arg = q->notify_arg;
	pthread_mutex_unlock(&q->lock);
	if (notify)
		notify(arg);
}

void quota_get(struct quota *q, uint64_t *used, uint64_t *total, uint64_t *peak,
	       uint64_t *refused)
{
	pthread_mutex_lock(&q->lock);
	if (used)
		*used = q->used;
	if (total)
		*total = q->total;
	if (peak)
		*peak = q->peak;
	if (refused)
		*refused = q->refused;
	pthread_mutex_unlock(&q->lock);
}
