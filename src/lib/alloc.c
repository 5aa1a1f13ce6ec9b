/* alloc.c: counting allocation wrappers (see alloc.h). The count uses malloc_usable_size so no
 * header is added to each block. */
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/log.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t live_bytes;
static uint64_t peak_bytes;
static uint64_t calls;
static uint64_t fail_countdown;
/* Bytes allocated minus bytes freed by this thread (negative when it frees what others
 * allocated): the heap measure of lib/budget.h. */
static __thread int64_t thread_bytes;

static void account(void *p, int sign)
{
	uint64_t n, now;

	if (!p)
		return;
	n = malloc_usable_size(p);
	thread_bytes += sign > 0 ? (int64_t)n : -(int64_t)n;
	if (sign > 0) {
		__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
		now = __atomic_add_fetch(&live_bytes, n, __ATOMIC_RELAXED);
		if (now > __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED))
			__atomic_store_n(&peak_bytes, now, __ATOMIC_RELAXED);
	} else {
		__atomic_sub_fetch(&live_bytes, n, __ATOMIC_RELAXED);
	}
}

static int injected_failure(void)
{
	if (!fail_countdown)
		return 0;
	return __atomic_sub_fetch(&fail_countdown, 1, __ATOMIC_RELAXED) == 0;
}

void *try_malloc(size_t n)
{
	void *p;

	if (injected_failure() || budget_admit(n) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	p = malloc(n ? n : 1);
	account(p, 1);
	return p;
}

void *try_realloc(void *p, size_t n)
{
	void *q;
	size_t old = p ? malloc_usable_size(p) : 0;

	if (injected_failure() || (n > old && budget_admit(n - old) < 0)) {
		errno = ENOMEM;
		return NULL;
	}
	account(p, -1);
	q = realloc(p, n ? n : 1);
	if (!q) {
		account(p, 1);
		errno = ENOMEM;
		return NULL;
	}
	account(q, 1);
	return q;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory allocating %zu bytes", n);
	account(p, 1);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		die("out of memory allocating %zu x %zu bytes", nmemb, size);
	account(p, 1);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q;

	account(p, -1);
	q = realloc(p, n ? n : 1);
	if (!q)
		die("out of memory reallocating %zu bytes", n);
	account(q, 1);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("xasprintf: bad format '%s'", fmt);
	p = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void xfree(void *p)
{
	account(p, -1);
	free(p);
}

void *xgrow(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;

	if (need <= *cap)
		return arr;
	ncap = *cap ? *cap : 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			die("xgrow: array of %zu elements is too large", need);
		ncap *= 2;
	}
	arr = xrealloc(arr, ncap * elem);
	*cap = ncap;
	return arr;
}

uint64_t alloc_live_bytes(void)
{
	return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}

int64_t alloc_thread_bytes(void)
{
	return thread_bytes;
}

uint64_t alloc_peak_bytes(void)
{
	return __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
}

void alloc_peak_reset(void)
{
	__atomic_store_n(&peak_bytes, __atomic_load_n(&live_bytes, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
}

uint64_t alloc_calls(void)
{
	return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

void alloc_fail_after(uint64_t n)
{
	__atomic_store_n(&fail_countdown, n, __ATOMIC_RELAXED);
}
