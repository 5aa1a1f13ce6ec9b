/* alloc.h: every heap allocation in scorch goes through here, so that live bytes can be
 * counted (agent RSS is a product metric) and failures injected in tests.
 *
 * xmalloc() and friends never return NULL: they die with a message on exhaustion, like git's.
 * try_malloc()/try_realloc() return NULL (errno = ENOMEM) and are for allocations whose size
 * comes from outside input, where failure must be an error and not a crash.
 * Memory from any of them is released with xfree() (which accepts NULL). */
#ifndef SCORCH_ALLOC_H
#define SCORCH_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Like asprintf, dies on exhaustion. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *try_malloc(size_t n);
void *try_realloc(void *p, size_t n);
void xfree(void *p);

/* Grow *arr (of *cap elements of size elem) so that it holds at least need elements. */
void *xgrow(void *arr, size_t *cap, size_t need, size_t elem);
#define ALLOC_GROW(arr, need, cap) ((arr) = xgrow((arr), &(cap), (need), sizeof(*(arr))))

/* Bytes currently allocated through this module, and the peak since start (or since the last
 * alloc_peak_reset(), which sets the peak to the live bytes). */
uint64_t alloc_live_bytes(void);
uint64_t alloc_peak_bytes(void);
void alloc_peak_reset(void);
/* Allocations made so far (malloc, calloc and realloc calls), for benchmarks. */
uint64_t alloc_calls(void);
/* Bytes allocated minus bytes freed by the calling thread since it started (lib/budget.h
 * measures the heap of one unit of work with it). try_malloc/try_realloc also refuse an
 * allocation that the calling thread's budget does not admit. */
int64_t alloc_thread_bytes(void);

/* Tests: make the n-th next try_malloc/try_realloc fail (0 disables). */
void alloc_fail_after(uint64_t n);

#endif
