/* json.c: JSON string escaping (see json.h). */
#include "lib/json.h"

#include <math.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
	size_t n, i;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		n = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		n = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

int json_str_len(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;
	int err = buf_putc(b, '"');

	while (!err && i < len) {
		unsigned char c = p[i];
		size_t n;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			run++;
			i++;
			continue;
		}
		if (run)
			err = buf_append(b, p + i - run, run);
		run = 0;
		if (err)
			break;
		switch (c) {
		case '"': err = buf_puts(b, "\\\""); i++; continue;
		case '\\': err = buf_puts(b, "\\\\"); i++; continue;
		case '\n': err = buf_puts(b, "\\n"); i++; continue;
		case '\r': err = buf_puts(b, "\\r"); i++; continue;
		case '\t': err = buf_puts(b, "\\t"); i++; continue;
		default: break;
		}
		if (c < 0x20) {
			err = buf_printf(b, "\\u%04x", c);
			i++;
			continue;
		}
		n = utf8_seq(p + i, len - i);
		if (n) {
			err = buf_append(b, p + i, n);
			i += n;
		} else {
			err = buf_puts(b, "\\ufffd");
			i++;
		}
	}
	if (!err && run)
		err = buf_append(b, p + i - run, run);
	if (!err)
		err = buf_putc(b, '"');
	return err;
}

int json_str(struct buf *b, const char *s)
{
	return json_str_len(b, s, strlen(s));
}

int json_double(struct buf *b, double v)
{
	if (!isfinite(v))
		return buf_puts(b, "null");
	return buf_printf(b, "%.17g", v);
}
