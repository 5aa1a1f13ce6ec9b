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

/* Aggregate by function: a copy of p whose frame names stored with their source line
 * ("f (file.c:12)", "q (app.py:12)") become the function's frame ("f", "q (app.py)": see
 * profile_frame_strip_line()), so that a function sampled on several lines is one frame in the
 * views computed from it; stacks that become equal stay separate entries (every view merges
 * equal paths). NULL when p has no frame with a line (use p itself). The copy is the caller's
 * (store_profile_free()); p is not changed (it may be shared: merge_cache.h). */
struct store_profile *query_by_function(const struct store_profile *p);

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
