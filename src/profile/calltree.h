/* calltree.h: a profile's samples merged into one call tree, root first, the shape every flame
 * graph draws (the HTML and SVG writers here, flamebearer JSON in the server).
 *
 * Level 1 under the root is the sample's "comm" label when it has one (kind CALLTREE_PROCESS),
 * then the frames from outermost to leaf. Frames merge by their display name
 * (profile_frame_name(), the folded name) under the same parent. Samples with a value <= 0 are
 * left out (a tree of negative weights cannot be drawn).
 *
 * The nodes are stored in preorder with each node's children sorted by name, so a subtree is
 * the contiguous range [i, nodes[i].end) and the children of i are
 *     for (c = i + 1; c < t->nodes[i].end; c = t->nodes[c].end) ...
 * The tree owns its nodes and its name table; calltree_free() releases them. */
#ifndef SCORCH_CALLTREE_H
#define SCORCH_CALLTREE_H

#include "profile/profile.h"

#include <stddef.h>
#include <stdint.h>

struct strtab;

/* Node kinds: enum frame_kind's values, plus two of the tree's own. */
enum calltree_kind {
	CALLTREE_NATIVE = FRAME_NATIVE,
	CALLTREE_KERNEL = FRAME_KERNEL,
	CALLTREE_PYTHON = FRAME_PYTHON,
	CALLTREE_SPECIAL = FRAME_SPECIAL,
	CALLTREE_PROCESS = 4, /* a "comm" level */
	CALLTREE_ROOT = 5,
	CALLTREE_NKINDS = 6,
};

struct calltree_node {
	uint32_t name;      /* id in t->names; the root's is 0 ("") */
	uint32_t parent;    /* index of the parent; the root (index 0) is its own parent */
	uint32_t depth;     /* root 0 */
	uint32_t nchildren;
	uint32_t end;       /* one past the last node of this subtree */
	uint8_t kind;       /* enum calltree_kind */
	int64_t self;       /* value of samples ending here */
	int64_t total;      /* self + the children's totals (including truncated ones) */
};

struct calltree {
	struct strtab *names;
	struct calltree_node *nodes; /* nodes[0] is the root; its total is the profile's total */
	size_t nnodes;
	uint32_t max_depth;
	size_t truncated; /* nodes removed by calltree_truncate() */
};

enum calltree_flags {
	CALLTREE_NO_COMM = 1, /* do not add the "comm" level */
};

/* Build the tree of p. Returns a new tree (calltree_free()). Never NULL. */
struct calltree *calltree_build(const struct profile *p, unsigned flags);
void calltree_free(struct calltree *t);

/* Keep at most max_nodes nodes (at least the root): the heaviest by total, which always form a
 * connected tree since a child is never heavier than its parent. A removed subtree's value
 * stays in its parent's total (it shows as a gap), and t->truncated counts the removed nodes.
 * Returns the number of nodes removed. */
size_t calltree_truncate(struct calltree *t, size_t max_nodes);

/* The name of node i. */
const char *calltree_name(const struct calltree *t, size_t i);
/* "native", "kernel", "python", "special", "process" or "root". */
const char *calltree_kind_name(unsigned kind);

#endif
