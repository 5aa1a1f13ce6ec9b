/* render.h: GET /render and GET /render-diff, the flame graph queries of the legacy API.
 *
 *   /render?query=APP.TYPE{selectors}&from=&until=&format=json|pprof|folded|html|svg
 *          &maxNodes=&focus=FRAME;FRAME;...
 *   /render-diff?leftQuery=&leftFrom=&leftUntil=&rightQuery=&rightFrom=&rightUntil=&maxNodes=
 *          &focus=
 *
 * json is the flamebearer document (flamebearer.h) with metadata and timeline; pprof is a gzip
 * pprof file, folded the collapsed text, html one self-contained flame graph page, svg a static
 * flame graph. With focus (frame names from the root, separated by ';'), only the stacks that
 * pass through that path are rendered, in every format: the subtree of one node, with the
 * whole node budget (flamebearer.h's truncation) spent below it. json then carries
 * "focus":{"path":[...],"total":T,"selectionTotal":S}. */
#ifndef SCORCH_RENDER_H
#define SCORCH_RENDER_H

#include "server/http.h"

#include <stddef.h>

struct errmsg;
struct profile;
struct server;
struct store_profile;
struct store_query;

/* What one flame graph query may hold: the heaviest stacks of a selection are kept and the
 * rest is counted in "other" (totals stay exact), so a large selection degrades instead of
 * failing. Time and memory are the request's budget (lib/budget.h, from the query pool:
 * render-seconds, render-memory, query-memory). */
struct render_budget {
	size_t max_stacks; /* stacks merged per profile (render-stacks; 0: STORE_DEFAULT_MAX_STACKS) */
	size_t max_nodes;  /* call-tree nodes drawn from (render-nodes; 0: no cap): the heaviest
	                    * stacks whose tree fits, which bounds the flame graph's build */
};
#define RENDER_DEFAULT_NODES (256u << 10)

/* A focus path: n frame names from the root (pointing into copy). */
struct render_focus {
	char **path;
	size_t n;
	char *copy;
};

/* Parse "a;b;c" into f (an empty or NULL string gives n = 0). -EINVAL for an empty frame,
 * -E2BIG beyond STORE_MAX_DEPTH frames; f needs render_focus_release() on success. */
int render_focus_parse(const char *s, struct render_focus *f, struct errmsg *err);
void render_focus_release(struct render_focus *f);
/* A new profile with the stacks of sp whose first f->n frames are f->path (whole, root
 * first), and sp's metadata; its total is the focused node's total (0 when nothing matches).
 * The caller frees it. */
struct store_profile *render_focus_filter(const struct store_profile *sp, const struct render_focus *f);

void render_handle(void *ctx, const struct http_request *req, struct http_response *resp);
void render_diff_handle(void *ctx, const struct http_request *req, struct http_response *resp);

/* A merged store profile as a struct profile (frames with a "_[k]" suffix become kernel
 * functions), for the pprof and HTML writers. The caller frees it (profile_free()). */
struct profile *render_to_profile(const struct store_profile *sp);

/* Append the folded text of sp (root first, one line per stack, "other" for the rest). */
int render_folded(const struct store_profile *sp, struct buf *out);

#endif
