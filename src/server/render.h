/* render.h: GET /render and GET /render-diff, the flame graph queries of the legacy API.
 *
 *   /render?query=APP.TYPE{selectors}&from=&until=&format=json|pprof|folded|html&maxNodes=
 *   /render-diff?leftQuery=&leftFrom=&leftUntil=&rightQuery=&rightFrom=&rightUntil=&maxNodes=
 *
 * json is the flamebearer document (flamebearer.h) with metadata and timeline; pprof is a gzip
 * pprof file, folded the collapsed text, html one self-contained flame graph page. */
#ifndef SCORCH_RENDER_H
#define SCORCH_RENDER_H

#include "server/http.h"

struct profile;
struct store_profile;

void render_handle(void *ctx, const struct http_request *req, struct http_response *resp);
void render_diff_handle(void *ctx, const struct http_request *req, struct http_response *resp);

/* A merged store profile as a struct profile (frames with a "_[k]" suffix become kernel
 * functions), for the pprof and HTML writers. The caller frees it (profile_free()). */
struct profile *render_to_profile(const struct store_profile *sp);

/* Append the folded text of sp (root first, one line per stack, "other" for the rest). */
int render_folded(const struct store_profile *sp, struct buf *out);

#endif
