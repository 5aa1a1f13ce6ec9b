/* output.c: the choice of writer by file name, and rendering a profile to a file (see
 * output.h). The writers live in pprof.c, folded.c, speedscope.c and flamegraph.c. */
#include "profile/output.h"
#include "profile/folded.h"
#include "profile/otlp.h"
#include "profile/pprof.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *suffix;
	enum output_format format;
} suffixes[] = {
	{ ".pb.gz", OUTPUT_PPROF },
	{ ".pprof", OUTPUT_PPROF },
	{ ".pb", OUTPUT_PPROF },
	{ ".folded", OUTPUT_FOLDED },
	{ ".txt", OUTPUT_FOLDED },
	{ ".json", OUTPUT_SPEEDSCOPE },
	{ ".html", OUTPUT_HTML },
	{ ".htm", OUTPUT_HTML },
	{ ".svg", OUTPUT_SVG },
	{ ".otlp", OUTPUT_OTLP },
};

enum output_format output_format_for(const char *path)
{
	size_t n = path ? strlen(path) : 0, i;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t m = strlen(suffixes[i].suffix);

		if (n > m && !strcasecmp(path + n - m, suffixes[i].suffix))
			return suffixes[i].format;
	}
	return OUTPUT_UNKNOWN;
}

const char *output_format_name(enum output_format f)
{
	switch (f) {
	case OUTPUT_PPROF: return "pprof";
	case OUTPUT_FOLDED: return "folded";
	case OUTPUT_SPEEDSCOPE: return "speedscope";
	case OUTPUT_HTML: return "html";
	case OUTPUT_SVG: return "svg";
	case OUTPUT_OTLP: return "otlp";
	default: return "unknown";
	}
}

enum output_format output_format_parse(const char *name)
{
	enum output_format f;

	for (f = OUTPUT_PPROF; f <= OUTPUT_OTLP; f++) {
		if (!strcasecmp(name, output_format_name(f)))
			return f;
	}
	return OUTPUT_UNKNOWN;
}

int output_render(const struct profile *p, enum output_format f, const char *title, struct buf *out)
{
	switch (f) {
	case OUTPUT_PPROF: return pprof_encode(p, out);
	case OUTPUT_FOLDED: return folded_write(p, out);
	case OUTPUT_SPEEDSCOPE: return speedscope_write(p, title, out);
	case OUTPUT_HTML: return flamegraph_html_write(p, title, out);
	case OUTPUT_SVG: return flamegraph_svg_write(p, title, out);
	case OUTPUT_OTLP: {
		struct otlp_attr attr = { "service.name", title && *title ? title : "scorch", 0 };
		struct profile *one = (struct profile *)p;
		struct otlp_resource r = { &attr, 1, "scorch", NULL, &one, 1 };

		return otlp_encode(&r, 1, out);
	}
	default: return -EINVAL;
	}
}

int output_write_file(const struct profile *p, const char *path, const char *title)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	enum output_format f = output_format_for(path);
	int err;

	if (f == OUTPUT_UNKNOWN)
		return -EINVAL;
	err = output_render(p, f, title, &b);
	if (!err)
		err = write_file_atomic(path, b.data ? b.data : "", b.len);
	buf_release(&b);
	return err;
}
