/* query.h: views computed from a merged profile (store.h's struct store_profile), so that the
 * HTTP layer only formats them: the top table (self / total per function) and the sandwich of
 * one function (its callers and its callees). */
#ifndef SCORCH_QUERY_H
#define SCORCH_QUERY_H

#include <stddef.h>
#include <stdint.h>

struct store_profile;

struct query_top_row {
	const char *name; /* points into the profile's names (valid while it lives) */
	int64_t self;     /* value of stacks whose leaf is this function */
	int64_t total;    /* value of stacks containing it (once per stack, even when recursive) */
};

/* One row per distinct frame name in p, sorted by self then total (largest first), then name.
 * Returns the number of rows; *rows is owned by the caller (xfree). */
size_t query_top(const struct store_profile *p, struct query_top_row **rows);

/* The sandwich of function `name` in p. For every stack containing it, with i its first
 * (outermost) occurrence:
 *   callers gets frames [0..i] (root first, `name` as the leaf),
 *   callees gets frames [i..depth) (`name` as the root).
 * Both get the stack's value, so both totals equal the function's total in query_top().
 * Equal stacks are merged. Returns 0, or -ENOENT when name is not in p (both still empty
 * profiles). *callers and *callees are owned by the caller (store_profile_free). */
int query_sandwich(const struct store_profile *p, const char *name, struct store_profile **callers,
		   struct store_profile **callees);

#endif
