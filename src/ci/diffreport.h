/* diffreport.h: `scorch diff` results (compare.h) as a pull-request comment (markdown), a
 * terminal table (text) or JSON. The layouts are in docs/ci.md.
 *
 * The writers append to out and return 0 or -E2BIG (out's maximum). They read the result and
 * the context, and own nothing. */
#ifndef SCORCH_DIFFREPORT_H
#define SCORCH_DIFFREPORT_H

#include <stddef.h>

#include "lib/buf.h"

struct compare_result;

struct diffreport_ctx {
	const char *base_name; /* what the base is: a file name or a selection */
	const char *new_name;
	const char *ui_url;    /* a link to the UI's diff view, or NULL */
	size_t top;            /* rows in markdown/text tables (0: 10) */
};

int diffreport_markdown(const struct compare_result *r, const struct diffreport_ctx *ctx,
			struct buf *out);
int diffreport_text(const struct compare_result *r, const struct diffreport_ctx *ctx,
		    struct buf *out);
int diffreport_json(const struct compare_result *r, const struct diffreport_ctx *ctx,
		    struct buf *out);

/* The statement of the test used, one sentence (markdown and --help share it). */
const char *diffreport_method(const struct compare_result *r);

#endif
