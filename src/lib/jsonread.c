/* jsonread.c: recursive-descent JSON reader (see jsonread.h). Depth is capped, so the
 * recursion is bounded; every allocation is sized by the input and checked. */
#include "lib/jsonread.h"
#include "lib/alloc.h"
#include "lib/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const char *s;
	size_t len, pos;
	size_t nodes, max_nodes;
	struct errmsg *err;
};

static void value_release(struct json_value *v)
{
	size_t i;

	if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
		for (i = 0; i < v->n; i++) {
			value_release(&v->items[i]);
			if (v->keys)
				xfree(v->keys[i]);
		}
		xfree(v->items);
		xfree(v->keys);
	}
	xfree(v->str);
	memset(v, 0, sizeof(*v));
}

void jsonread_free(struct json_value *v)
{
	if (!v)
		return;
	value_release(v);
	xfree(v);
}

const struct json_value *jsonread_get(const struct json_value *obj, const char *key)
{
	size_t i;

	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static int fail(struct parser *p, const char *what)
{
	return errmsg_set(p->err, -EINVAL, "bad JSON at offset %zu: %s", p->pos, what);
}

static int put_utf8(char *out, size_t *n, uint32_t cp)
{
	*n += utf8_encode(cp, out + *n);
	return 0;
}

static int hex4(struct parser *p, uint32_t *v)
{
	size_t i;

	*v = 0;
	if (p->len - p->pos < 4)
		return fail(p, "short \\u escape");
	for (i = 0; i < 4; i++) {
		char c = p->s[p->pos + i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t)(c - 'A' + 10);
		else
			return fail(p, "bad hex digit in \\u escape");
	}
	p->pos += 4;
	return 0;
}

/* A string at p->pos (the opening quote) into a new buffer. Decoded UTF-8 is never longer
 * than the escaped text (6 bytes of \uXXXX give at most 3, 12 of a pair give 4). */
static int parse_string(struct parser *p, char **out, size_t *outlen)
{
	size_t start = ++p->pos, end = start, n = 0;
	char *s;
	int rc;

	while (end < p->len && p->s[end] != '"') {
		if (p->s[end] == '\\')
			end++;
		end++;
	}
	if (end >= p->len)
		return fail(p, "unterminated string");
	s = try_malloc(end - start + 1);
	if (!s)
		return errmsg_set(p->err, -ENOMEM, "out of memory reading JSON");
	while (p->pos < end) {
		unsigned char c = (unsigned char)p->s[p->pos];

		if (c < 0x20) {
			rc = fail(p, "control character in string");
			goto bad;
		}
		if (c != '\\') {
			s[n++] = (char)c;
			p->pos++;
			continue;
		}
		p->pos++;
		c = (unsigned char)p->s[p->pos++];
		switch (c) {
		case '"': s[n++] = '"'; break;
		case '\\': s[n++] = '\\'; break;
		case '/': s[n++] = '/'; break;
		case 'b': s[n++] = '\b'; break;
		case 'f': s[n++] = '\f'; break;
		case 'n': s[n++] = '\n'; break;
		case 'r': s[n++] = '\r'; break;
		case 't': s[n++] = '\t'; break;
		case 'u': {
			uint32_t cp, lo;

			if ((rc = hex4(p, &cp)) < 0)
				goto bad;
			if (cp >= 0xd800 && cp < 0xdc00 && end - p->pos >= 6 && p->s[p->pos] == '\\' &&
			    p->s[p->pos + 1] == 'u') {
				size_t save = p->pos;

				p->pos += 2;
				if ((rc = hex4(p, &lo)) < 0)
					goto bad;
				if (lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else {
					p->pos = save; /* not a pair: the next escape stands alone */
					cp = 0xfffd;
				}
			} else if (cp >= 0xd800 && cp < 0xe000) {
				cp = 0xfffd;
			}
			put_utf8(s, &n, cp);
			break;
		}
		default:
			p->pos--;
			rc = fail(p, "bad escape in string");
			goto bad;
		}
	}
	if (p->pos != end) { /* an escape ran past the closing quote */
		rc = fail(p, "unterminated string");
		goto bad;
	}
	p->pos = end + 1;
	s[n] = '\0';
	*out = s;
	*outlen = n;
	return 0;
bad:
	xfree(s);
	return rc;
}

static int parse_number(struct parser *p, double *out)
{
	size_t start = p->pos, i = p->pos;
	char tmp[64], *end;

	if (i < p->len && p->s[i] == '-')
		i++;
	if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
		return fail(p, "bad number");
	if (p->s[i] == '0')
		i++;
	else
		while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	if (i < p->len && p->s[i] == '.') {
		i++;
		if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
			return fail(p, "bad number");
		while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
			return fail(p, "bad number");
		while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	}
	if (i - start >= sizeof(tmp))
		return fail(p, "number too long");
	memcpy(tmp, p->s + start, i - start);
	tmp[i - start] = '\0';
	*out = strtod(tmp, &end);
	if (!isfinite(*out))
		return fail(p, "number out of range");
	p->pos = i;
	return 0;
}

static int literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n))
		return fail(p, "unexpected character");
	p->pos += n;
	return 0;
}

static int parse_value(struct parser *p, struct json_value *v, int depth);

/* Append a zeroed slot to v->items (and v->keys for objects). */
static struct json_value *add_item(struct parser *p, struct json_value *v, size_t *cap)
{
	if (v->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4;
		struct json_value *items = try_realloc(v->items, ncap * sizeof(*items));

		if (!items)
			return NULL;
		v->items = items;
		if (v->type == JSON_OBJECT) {
			char **keys = try_realloc(v->keys, ncap * sizeof(*keys));

			if (!keys)
				return NULL;
			v->keys = keys;
		}
		*cap = ncap;
	}
	memset(&v->items[v->n], 0, sizeof(v->items[v->n]));
	if (v->keys)
		v->keys[v->n] = NULL;
	return &v->items[v->n++];
}

static int parse_container(struct parser *p, struct json_value *v, int depth)
{
	char close = v->type == JSON_ARRAY ? ']' : '}';
	size_t cap = 0;
	int rc;

	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		struct json_value *item;
		char *key = NULL;
		size_t klen;

		skip_ws(p);
		if (v->type == JSON_OBJECT) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return fail(p, "expected a member name");
			if ((rc = parse_string(p, &key, &klen)) < 0)
				return rc;
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				xfree(key);
				return fail(p, "expected ':'");
			}
			p->pos++;
		}
		item = add_item(p, v, &cap);
		if (!item) {
			xfree(key);
			return errmsg_set(p->err, -ENOMEM, "out of memory reading JSON");
		}
		if (v->keys)
			v->keys[v->n - 1] = key;
		if ((rc = parse_value(p, item, depth + 1)) < 0)
			return rc;
		skip_ws(p);
		if (p->pos >= p->len)
			return fail(p, "unterminated array or object");
		if (p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->s[p->pos] == close) {
			p->pos++;
			return 0;
		}
		return fail(p, "expected ',' or the end of the array or object");
	}
}

static int parse_value(struct parser *p, struct json_value *v, int depth)
{
	char c;

	if (depth > JSONREAD_MAX_DEPTH)
		return errmsg_set(p->err, -E2BIG, "JSON nested deeper than %d at offset %zu",
				  JSONREAD_MAX_DEPTH, p->pos);
	if (++p->nodes > p->max_nodes)
		return errmsg_set(p->err, -E2BIG, "JSON with more than %zu values", p->max_nodes);
	skip_ws(p);
	if (p->pos >= p->len)
		return fail(p, "unexpected end");
	c = p->s[p->pos];
	switch (c) {
	case '{':
		v->type = JSON_OBJECT;
		return parse_container(p, v, depth);
	case '[':
		v->type = JSON_ARRAY;
		return parse_container(p, v, depth);
	case '"':
		v->type = JSON_STRING;
		return parse_string(p, &v->str, &v->len);
	case 't':
		v->type = JSON_BOOL;
		v->num = 1;
		return literal(p, "true");
	case 'f':
		v->type = JSON_BOOL;
		return literal(p, "false");
	case 'n':
		v->type = JSON_NULL;
		return literal(p, "null");
	default:
		v->type = JSON_NUMBER;
		return parse_number(p, &v->num);
	}
}

int jsonread_parse(const char *text, size_t len, size_t max_nodes, struct json_value **out,
		   struct errmsg *err)
{
	struct parser p = { text, len, 0, 0, max_nodes ? max_nodes : (size_t)1 << 20, err };
	struct json_value *v = xcalloc(1, sizeof(*v));
	int rc;

	*out = NULL;
	if (memchr(text, '\0', len)) {
		jsonread_free(v);
		return errmsg_set(err, -EINVAL, "bad JSON: NUL byte at offset %zu",
				  (size_t)((const char *)memchr(text, '\0', len) - text));
	}
	rc = parse_value(&p, v, 1);
	if (rc == 0) {
		skip_ws(&p);
		if (p.pos != len)
			rc = fail(&p, "trailing characters after the document");
	}
	if (rc < 0) {
		jsonread_free(v);
		return rc;
	}
	*out = v;
	return 0;
}
