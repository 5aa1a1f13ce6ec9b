/* output.h: writers for humans and other tools, and the choice of writer by file name.
 *
 *   .pb.gz / .pprof   gzip pprof            (pprof.h)
 *   .folded / .txt    folded text           (folded.h)
 *   .json             speedscope JSON
 *   .html             one self-contained interactive flame graph (no network)
 *   .svg              a static SVG flame graph
 *   .otlp             an OTLP ExportProfilesServiceRequest (protobuf; otlp.h), one resource
 *                     whose service.name is the title
 */
#ifndef SCORCH_OUTPUT_H
#define SCORCH_OUTPUT_H

#include "lib/buf.h"
#include "profile/profile.h"

enum output_format {
	OUTPUT_UNKNOWN = 0,
	OUTPUT_PPROF,
	OUTPUT_FOLDED,
	OUTPUT_SPEEDSCOPE,
	OUTPUT_HTML,
	OUTPUT_SVG,
	OUTPUT_OTLP,
};

/* The format for a file name by its extension (case-insensitive; ".pb" and ".htm" too), or
 * OUTPUT_UNKNOWN. */
enum output_format output_format_for(const char *path);
/* "pprof", "folded", "speedscope", "html", "svg", "otlp" ("unknown"), and back (OUTPUT_UNKNOWN if
 * none). */
const char *output_format_name(enum output_format f);
enum output_format output_format_parse(const char *name);

/* The writers append to out and return 0 or a negative errno (-E2BIG past out->max, and then
 * out is as it was). title may be NULL. Samples with a value <= 0 are left out of all three.
 *
 * speedscope_write: one "sampled" profile; frames shared by display name (with file and line
 *   when known); the "comm" label is the outermost frame.
 * flamegraph_html_write: the page web/static/flamegraph.html with the call tree (calltree.h) as
 *   JSON; at most 500000 nodes (the lightest are left out). -ENOENT if the page is not built in.
 * flamegraph_svg_write: a classic flame graph, 1200 px wide, frames under 0.1 px left out. */

int speedscope_write(const struct profile *p, const char *title, struct buf *out);
int flamegraph_html_write(const struct profile *p, const char *title, struct buf *out);
int flamegraph_svg_write(const struct profile *p, const char *title, struct buf *out);

/* Render p in format f into out. */
int output_render(const struct profile *p, enum output_format f, const char *title, struct buf *out);
/* Render p into path (format from the extension) durably. Returns 0 or a negative errno;
 * -EINVAL for an unknown extension. */
int output_write_file(const struct profile *p, const char *path, const char *title);

#endif
