/* flamebearer.h: the "flamebearer" JSON that flame graph UIs of the Pyroscope family draw, built
 * from merged profiles (store.h's struct store_profile, stacks root first).
 *
 * Single format (one profile), 4 ints per node in each level row:
 *     [x-offset, total, self, nameIndex]
 * Diff ("double") format (left and right profiles in one tree), 7 ints per node:
 *     [x-offsetL, totalL, selfL, x-offsetR, totalR, selfR, nameIndex]
 * levels[0] is the root node "total". In a row, nodes are ordered left to right; each x-offset
 * is delta-encoded from the end (offset + total) of the previous node in the same row (from 0
 * for the first). Children start at their parent's x, ordered by name; the parent's self is
 * the uncovered rest on the right.
 *
 * Truncation (pruning): at most max_nodes nodes are kept, chosen in two passes that only add
 * a node whose parent is kept:
 *   1. level by level from the root, every node whose total holds at least
 *      FLAMEBEARER_MIN_SHARE of the root's (heaviest first within a level), while the budget
 *      lasts: a wide level cannot starve the levels below it, and if the budget runs out
 *      inside a level, every level above it is whole;
 *   2. the rest of the budget to the heaviest remaining nodes (left + right in a diff) at any
 *      depth.
 * The dropped children of a kept node are summed into one child named "other" (placed last;
 * its self is its total, the parent's own self stays exact). The "other" nodes count against
 * max_nodes, except that the root and one "other" under it are always present. A profile's
 * own `other` (stacks the store left out) becomes an "other" child of the root too, so
 * numTicks always equals the profile total. A frame cut off this way is reached by rendering
 * the subtree of a kept ancestor on its own (/render's focus): each such render keeps at least
 * the next level of nodes above FLAMEBEARER_MIN_SHARE of its root.
 *
 * Output objects (appended to out):
 *   single: {"names":[...],"levels":[[...],...],"numTicks":N,"maxSelf":M}
 *   diff:   {"names":[...],"levels":[[...],...],"numTicks":L+R,"maxSelf":M,
 *            "leftTicks":L,"rightTicks":R}
 */
#ifndef SCORCH_FLAMEBEARER_H
#define SCORCH_FLAMEBEARER_H

#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

struct store_profile;

#define FLAMEBEARER_DEFAULT_MAX_NODES 8192
#define FLAMEBEARER_MAX_MAX_NODES (1u << 20)
/* Share of the root above which pass 1 of the truncation keeps a node, level by level. */
#define FLAMEBEARER_MIN_SHARE 0.001

/* Append the single-format flamebearer object of p. Returns 0 or a negative errno
 * (-E2BIG when out's maximum is reached). */
int flamebearer_write(const struct store_profile *p, size_t max_nodes, struct buf *out);

/* Append the diff-format object of left vs right. */
int flamebearer_write_diff(const struct store_profile *left, const struct store_profile *right,
			   size_t max_nodes, struct buf *out);

#endif
