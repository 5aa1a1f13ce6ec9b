/* flamegraph.c: flame graph writers (declared in output.h).
 *
 *   HTML: web/static/flamegraph.html (embedded at build time, build/web_assets.h) with the call
 *         tree (calltree.h) as JSON in place of its data marker; the page draws it on a canvas.
 *   SVG:  a static classic flame graph (root at the bottom) with <title> tooltips.
 *
 * The JSON layout is described in docs/formats.md ("html"). */
#include "lib/alloc.h"
#include "lib/json.h"
#include "lib/strtab.h"
#include "profile/calltree.h"
#include "profile/output.h"
#include "web_assets.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#define DATA_MARKER "/*SCORCH_DATA*/null"

/* Nodes kept in the HTML page; beyond this the lightest go (they would be far below a pixel). */
#define HTML_MAX_NODES 500000

static const struct web_asset *asset_find(const char *name)
{
	const struct web_asset *a;

	for (a = web_assets; a->name; a++) {
		if (!strcmp(a->name, name))
			return a;
	}
	return NULL;
}

/* Decimal int64 without printf: these arrays hold millions of numbers. */
static int put_i64(struct buf *b, int64_t v, char sep)
{
	char tmp[24];
	size_t n = sizeof(tmp);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		tmp[--n] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--n] = '-';
	if (sep)
		tmp[--n] = sep;
	return buf_append(b, tmp + n, sizeof(tmp) - n);
}

static int put_node_array(struct buf *b, const struct calltree *t, const char *key, int which)
{
	size_t i;
	int err = buf_printf(b, ",\"%s\":[", key);

	for (i = 0; i < t->nnodes && !err; i++) {
		const struct calltree_node *n = &t->nodes[i];
		int64_t v = which == 0 ? n->name : which == 1 ? n->kind : which == 2 ? n->depth :
			    which == 3 ? n->self : n->total;

		err = put_i64(b, v, i ? ',' : 0);
	}
	return err ? err : buf_putc(b, ']');
}

static int tree_json(const struct calltree *t, const struct profile *p, const char *title,
		     struct buf *b)
{
	uint32_t i, nnames = strtab_count(t->names);
	int err = buf_puts(b, "{\"title\":");

	if (!err)
		err = json_str(b, title);
	if (!err)
		err = buf_puts(b, ",\"unit\":");
	if (!err)
		err = json_str(b, profile_get_str(p, p->sample_unit));
	if (!err)
		err = buf_puts(b, ",\"type\":");
	if (!err)
		err = json_str(b, profile_get_str(p, p->sample_type));
	if (!err)
		err = buf_printf(b, ",\"total\":%" PRId64 ",\"truncated\":%zu,\"kinds\":[",
				 t->nodes[0].total, t->truncated);
	for (i = 0; i < CALLTREE_NKINDS && !err; i++)
		err = buf_printf(b, i ? ",\"%s\"" : "\"%s\"", calltree_kind_name(i));
	if (!err)
		err = buf_puts(b, "],\"names\":[");
	for (i = 0; i < nnames && !err; i++) {
		if (i)
			err = buf_putc(b, ',');
		if (!err)
			err = json_str_len(b, strtab_get(t->names, i), strtab_len(t->names, i));
	}
	if (!err)
		err = buf_putc(b, ']');
	if (!err)
		err = put_node_array(b, t, "name", 0);
	if (!err)
		err = put_node_array(b, t, "kind", 1);
	if (!err)
		err = put_node_array(b, t, "depth", 2);
	if (!err)
		err = put_node_array(b, t, "self", 3);
	if (!err)
		err = put_node_array(b, t, "totals", 4);
	return err ? err : buf_putc(b, '}');
}

/* Append json to out with every '<' as \u003c, so that no name can close the <script> element
 * ("</script>") or open a comment ("<!--"). '<' only occurs inside JSON strings. */
static int append_script_safe(struct buf *out, const char *json, size_t len)
{
	const char *s = json, *end = json + len, *lt;
	int err = 0;

	while (!err && s < end) {
		lt = memchr(s, '<', (size_t)(end - s));
		if (!lt)
			return buf_append(out, s, (size_t)(end - s));
		err = buf_append(out, s, (size_t)(lt - s));
		if (!err)
			err = buf_puts(out, "\\u003c");
		s = lt + 1;
	}
	return err;
}

int flamegraph_html_write(const struct profile *p, const char *title, struct buf *out)
{
	const struct web_asset *page = asset_find("flamegraph.html");
	struct buf json = BUF_INIT(out->max);
	struct calltree *t = NULL;
	const char *tpl, *mark;
	size_t start_len = out->len;
	int err;

	if (!page)
		return -ENOENT;
	tpl = (const char *)page->data;
	mark = memmem(tpl, page->len, DATA_MARKER, strlen(DATA_MARKER));
	if (!mark)
		return -ENOENT;
	if (!title || !*title)
		title = "scorch flame graph";
	t = calltree_build(p, 0);
	calltree_truncate(t, HTML_MAX_NODES);
	err = tree_json(t, p, title, &json);
	if (!err)
		err = buf_append(out, tpl, (size_t)(mark - tpl));
	if (!err)
		err = append_script_safe(out, json.data, json.len);
	if (!err) {
		const char *rest = mark + strlen(DATA_MARKER);

		err = buf_append(out, rest, page->len - (size_t)(rest - tpl));
	}
	if (err && out->data) {
		out->len = start_len;
		out->data[start_len] = '\0';
	}
	buf_release(&json);
	calltree_free(t);
	return err;
}

/* ------------------------------------------------------------------ SVG */

#define SVG_WIDTH 1200
#define SVG_PAD 10
#define SVG_ROW 16
#define SVG_TOP 50
#define SVG_BOTTOM 10
#define SVG_MIN_WIDTH 0.1
#define SVG_CHAR_WIDTH 7.0 /* 12px monospace */

/* Length of the valid UTF-8 sequence at s (1-4), or 0. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (!n || n > left || s[0] == 0xc0 || s[0] == 0xc1 || s[0] > 0xf4)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

/* Escaped XML text of s, cut to max_chars characters ending in ".." when longer (max_chars 0:
 * all of it). Bytes XML cannot carry (controls, broken UTF-8) become '?'. */
static int xml_text(struct buf *b, const char *str, size_t max_chars)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t left = strlen(str), chars = 0, n, limit = SIZE_MAX;
	int err = 0;

	if (max_chars) {
		for (n = 0; n < left; n += utf8_len(s + n, left - n) ? utf8_len(s + n, left - n) : 1)
			chars++;
		if (chars > max_chars)
			limit = max_chars > 2 ? max_chars - 2 : 0;
		chars = 0;
	}
	while (left && !err && chars < limit) {
		n = utf8_len(s, left);
		if (!n || (s[0] < 0x20 && s[0] != '\t') || s[0] == 0x7f) {
			err = buf_putc(b, '?');
			n = n ? n : 1;
		} else if (s[0] == '&') {
			err = buf_puts(b, "&amp;");
		} else if (s[0] == '<') {
			err = buf_puts(b, "&lt;");
		} else if (s[0] == '>') {
			err = buf_puts(b, "&gt;");
		} else if (s[0] == '"') {
			err = buf_puts(b, "&quot;");
		} else {
			err = buf_append(b, s, n);
		}
		s += n;
		left -= n;
		chars++;
	}
	if (!err && left)
		err = buf_puts(b, "..");
	return err;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static void hsl_to_rgb(double h, double s, double l, int rgb[3])
{
	double c = (1 - (2 * l - 1 < 0 ? 1 - 2 * l : 2 * l - 1)) * s;
	double hp = h / 60, xm, r = 0, g = 0, bl = 0, m;
	double f = hp - 2 * (int)(hp / 2);

	xm = c * (1 - (f - 1 < 0 ? 1 - f : f - 1));
	switch ((int)hp % 6) {
	case 0: r = c; g = xm; break;
	case 1: r = xm; g = c; break;
	case 2: g = c; bl = xm; break;
	case 3: g = xm; bl = c; break;
	case 4: r = xm; bl = c; break;
	default: r = c; bl = xm; break;
	}
	m = l - c / 2;
	rgb[0] = (int)((r + m) * 255 + 0.5);
	rgb[1] = (int)((g + m) * 255 + 0.5);
	rgb[2] = (int)((bl + m) * 255 + 0.5);
}

/* The same palette as the HTML page: warm native, blue kernel, green Python, grey special. */
static void node_color(unsigned kind, const char *name, int rgb[3])
{
	double v = (name_hash(name) >> 8) / 16777216.0;

	switch (kind) {
	case CALLTREE_KERNEL: hsl_to_rgb(195 + 25 * v, 0.55, 0.58 + 0.10 * v, rgb); break;
	case CALLTREE_PYTHON: hsl_to_rgb(90 + 45 * v, 0.50, 0.52 + 0.10 * v, rgb); break;
	case CALLTREE_SPECIAL: hsl_to_rgb(0, 0, 0.68 + 0.10 * v, rgb); break;
	case CALLTREE_PROCESS: hsl_to_rgb(265 + 25 * v, 0.35, 0.70 + 0.08 * v, rgb); break;
	case CALLTREE_ROOT: hsl_to_rgb(0, 0, 0.82, rgb); break;
	default: hsl_to_rgb(5 + 40 * v, 0.78, 0.58 + 0.08 * v, rgb); break;
	}
}

static int svg_value(struct buf *b, int64_t v, const char *unit)
{
	int err;

	if (!strcmp(unit, "nanoseconds")) {
		if (v >= 1000000000)
			return buf_printf(b, "%.2f s", v / 1e9);
		if (v >= 1000000)
			return buf_printf(b, "%.2f ms", v / 1e6);
		return buf_printf(b, "%" PRId64 " ns", v);
	}
	if (!*unit || !strcmp(unit, "count") || !strcmp(unit, "samples"))
		return buf_printf(b, "%" PRId64 " samples", v);
	err = buf_printf(b, "%" PRId64 " ", v);
	return err ? err : xml_text(b, unit, 0);
}

int flamegraph_svg_write(const struct profile *p, const char *title, struct buf *out)
{
	struct calltree *t = calltree_build(p, 0);
	const char *unit = profile_get_str(p, p->sample_unit);
	double *x = xcalloc(t->nnodes, sizeof(*x));
	double scale, plot = SVG_WIDTH - 2 * SVG_PAD;
	int64_t all = t->nodes[0].total;
	uint32_t depth = 0;
	size_t start_len = out->len, i, c;
	int err = 0, height;

	if (!title || !*title)
		title = "scorch flame graph";
	scale = all > 0 ? plot / (double)all : 0;
	/* x offsets: children side by side from the parent's left edge. */
	for (i = 0; i < t->nnodes; i++) {
		double cursor = x[i];

		for (c = i + 1; c < t->nodes[i].end; c = t->nodes[c].end) {
			x[c] = cursor;
			cursor += (double)t->nodes[c].total;
		}
	}
	/* Height from the deepest node that will be drawn. */
	for (i = 0; i < t->nnodes;) {
		if ((double)t->nodes[i].total * scale < SVG_MIN_WIDTH && i) {
			i = t->nodes[i].end;
			continue;
		}
		if (t->nodes[i].depth > depth)
			depth = t->nodes[i].depth;
		i++;
	}
	height = SVG_TOP + (int)(depth + 1) * SVG_ROW + SVG_BOTTOM;
	err = buf_printf(out,
			 "<?xml version=\"1.0\" standalone=\"no\"?>\n"
			 "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
			 "xmlns=\"http://www.w3.org/2000/svg\">\n"
			 "<style>text{font-family:monospace;font-size:12px;fill:#000}"
			 "g rect:hover{stroke:#000;stroke-width:0.5}</style>\n"
			 "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
			 "<text x=\"%d\" y=\"24\" style=\"font-size:17px\">",
			 SVG_WIDTH, height, SVG_WIDTH, height, SVG_PAD);
	if (!err)
		err = xml_text(out, title, 0);
	if (!err)
		err = buf_printf(out, "</text>\n<text x=\"%d\" y=\"42\" style=\"fill:#555\">total ",
				 SVG_PAD);
	if (!err)
		err = svg_value(out, all, unit);
	if (!err)
		err = buf_puts(out, "; hover a frame for its name and share</text>\n");
	for (i = 0; i < t->nnodes && !err;) {
		const struct calltree_node *n = &t->nodes[i];
		const char *name = i ? calltree_name(t, i) : "all";
		double w = (double)n->total * scale, x0 = SVG_PAD + x[i] * scale;
		int y = SVG_TOP + (int)(depth - n->depth) * SVG_ROW, rgb[3];
		size_t chars = (size_t)((w - 6) / SVG_CHAR_WIDTH);

		if (w < SVG_MIN_WIDTH && i) {
			i = n->end;
			continue;
		}
		node_color(n->kind, name, rgb);
		err = buf_puts(out, "<g><title>");
		if (!err)
			err = xml_text(out, name, 0);
		if (!err)
			err = buf_puts(out, " (");
		if (!err)
			err = svg_value(out, n->total, unit);
		if (!err)
			err = buf_printf(out, ", %.2f%%, self ", all ? 100.0 * (double)n->total / (double)all : 0.0);
		if (!err)
			err = svg_value(out, n->self, unit);
		if (!err)
			err = buf_printf(out, ")</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
					 "fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>",
					 x0, y, w > 0.5 ? w - 0.5 : w, SVG_ROW - 1, rgb[0], rgb[1], rgb[2]);
		if (!err && w > 6 && chars >= 3) {
			err = buf_printf(out, "<text x=\"%.2f\" y=\"%d\">", x0 + 3, y + SVG_ROW - 4);
			if (!err)
				err = xml_text(out, name, chars);
			if (!err)
				err = buf_puts(out, "</text>");
		}
		if (!err)
			err = buf_puts(out, "</g>\n");
		i++;
	}
	if (!err)
		err = buf_puts(out, "</svg>\n");
	if (err && out->data) {
		out->len = start_len;
		out->data[start_len] = '\0';
	}
	xfree(x);
	calltree_free(t);
	return err;
}
