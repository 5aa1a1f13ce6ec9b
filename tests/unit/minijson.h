/* minijson.h: a small strict JSON reader for tests that check what our JSON writers produce
 * (speedscope, the flame graph page's data). Parses into a tree; strings are decoded to UTF-8
 * (\uXXXX with surrogate pairs included). Returns NULL on any syntax error. Test-only: plain
 * malloc, recursion. */
#ifndef SCORCH_MINIJSON_H
#define SCORCH_MINIJSON_H

#include <stdlib.h>
#include <string.h>

enum mj_type { MJ_NULL, MJ_BOOL, MJ_NUM, MJ_STR, MJ_ARR, MJ_OBJ };

struct mj {
	enum mj_type type;
	double num;          /* MJ_NUM, MJ_BOOL */
	char *str;           /* MJ_STR (NUL-terminated; len in n) */
	size_t n;            /* MJ_ARR/MJ_OBJ: items; MJ_STR: bytes */
	struct mj *items;
	char **keys;         /* MJ_OBJ */
};

struct mj_parser {
	const char *s, *end;
	int depth;
};

static void mj_ws(struct mj_parser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t'))
		p->s++;
}

static void mj_put_utf8(char **out, size_t *len, size_t *cap, unsigned cp)
{
	char tmp[4];
	size_t n;

	if (cp < 0x80) { tmp[0] = (char)cp; n = 1; }
	else if (cp < 0x800) { tmp[0] = (char)(0xc0 | cp >> 6); tmp[1] = (char)(0x80 | (cp & 0x3f)); n = 2; }
	else if (cp < 0x10000) { tmp[0] = (char)(0xe0 | cp >> 12); tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); tmp[2] = (char)(0x80 | (cp & 0x3f)); n = 3; }
	else { tmp[0] = (char)(0xf0 | cp >> 18); tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f)); tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); tmp[3] = (char)(0x80 | (cp & 0x3f)); n = 4; }
	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*out = realloc(*out, *cap);
	}
	memcpy(*out + *len, tmp, n);
	*len += n;
}

static int mj_hex4(struct mj_parser *p, unsigned *v)
{
	int i;

	*v = 0;
	if (p->end - p->s < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = *p->s++;

		*v <<= 4;
		if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
		else return -1;
	}
	return 0;
}

static char *mj_string(struct mj_parser *p, size_t *outlen)
{
	char *out = malloc(16);
	size_t len = 0, cap = 16;

	if (p->s >= p->end || *p->s != '"')
		goto fail;
	p->s++;
	while (p->s < p->end && *p->s != '"') {
		unsigned char c = (unsigned char)*p->s++;
		unsigned cp, lo;

		if (c < 0x20)
			goto fail;
		if (c != '\\') {
			mj_put_utf8(&out, &len, &cap, 0); /* grow */
			len--;
			out[len++] = (char)c;
			continue;
		}
		if (p->s >= p->end)
			goto fail;
		c = (unsigned char)*p->s++;
		switch (c) {
		case '"': cp = '"'; break;
		case '\\': cp = '\\'; break;
		case '/': cp = '/'; break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			if (mj_hex4(p, &cp))
				goto fail;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u')
					goto fail;
				p->s += 2;
				if (mj_hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff)
					goto fail;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				goto fail;
			}
			break;
		default:
			goto fail;
		}
		mj_put_utf8(&out, &len, &cap, cp);
	}
	if (p->s >= p->end)
		goto fail;
	p->s++;
	out[len] = '\0';
	*outlen = len;
	return out;
fail:
	free(out);
	return NULL;
}

static void mj_release(struct mj *v)
{
	size_t i;

	if (v->type == MJ_ARR || v->type == MJ_OBJ) {
		for (i = 0; i < v->n; i++) {
			mj_release(&v->items[i]);
			if (v->keys)
				free(v->keys[i]);
		}
		free(v->items);
		free(v->keys);
	}
	free(v->str);
}

static int mj_value(struct mj_parser *p, struct mj *v)
{
	memset(v, 0, sizeof(*v));
	mj_ws(p);
	if (p->s >= p->end || ++p->depth > 200)
		return -1;
	if (*p->s == '{' || *p->s == '[') {
		int obj = *p->s == '{';
		size_t cap = 0;

		v->type = obj ? MJ_OBJ : MJ_ARR;
		p->s++;
		mj_ws(p);
		if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
			p->s++;
			p->depth--;
			return 0;
		}
		for (;;) {
			if (v->n == cap) {
				cap = cap ? cap * 2 : 8;
				v->items = realloc(v->items, cap * sizeof(*v->items));
				if (obj)
					v->keys = realloc(v->keys, cap * sizeof(*v->keys));
			}
			if (obj) {
				size_t kl;

				mj_ws(p);
				v->keys[v->n] = mj_string(p, &kl);
				if (!v->keys[v->n])
					return -1;
				mj_ws(p);
				if (p->s >= p->end || *p->s++ != ':') {
					free(v->keys[v->n]);
					return -1;
				}
			}
			if (mj_value(p, &v->items[v->n])) {
				if (obj)
					free(v->keys[v->n]);
				mj_release(&v->items[v->n]);
				return -1;
			}
			v->n++;
			mj_ws(p);
			if (p->s < p->end && *p->s == ',') {
				p->s++;
				continue;
			}
			if (p->s < p->end && *p->s == (obj ? '}' : ']')) {
				p->s++;
				p->depth--;
				return 0;
			}
			return -1;
		}
	}
	if (*p->s == '"') {
		v->type = MJ_STR;
		v->str = mj_string(p, &v->n);
		p->depth--;
		return v->str ? 0 : -1;
	}
	if (p->end - p->s >= 4 && !memcmp(p->s, "null", 4)) { p->s += 4; v->type = MJ_NULL; p->depth--; return 0; }
	if (p->end - p->s >= 4 && !memcmp(p->s, "true", 4)) { p->s += 4; v->type = MJ_BOOL; v->num = 1; p->depth--; return 0; }
	if (p->end - p->s >= 5 && !memcmp(p->s, "false", 5)) { p->s += 5; v->type = MJ_BOOL; p->depth--; return 0; }
	{
		const char *start = p->s;
		char tmp[64];

		if (p->s < p->end && *p->s == '-')
			p->s++;
		if (p->s >= p->end || *p->s < '0' || *p->s > '9')
			return -1;
		if (*p->s == '0' && p->s + 1 < p->end && p->s[1] >= '0' && p->s[1] <= '9')
			return -1; /* leading zero */
		while (p->s < p->end && ((*p->s >= '0' && *p->s <= '9') || *p->s == '.' || *p->s == 'e' ||
					 *p->s == 'E' || *p->s == '+' || *p->s == '-'))
			p->s++;
		if ((size_t)(p->s - start) >= sizeof(tmp))
			return -1;
		memcpy(tmp, start, (size_t)(p->s - start));
		tmp[p->s - start] = '\0';
		v->type = MJ_NUM;
		v->num = strtod(tmp, NULL);
		p->depth--;
		return 0;
	}
}

/* Parse all of s (trailing whitespace allowed). Free with mj_free(). */
static struct mj *mj_parse(const char *s, size_t len)
{
	struct mj_parser p = { s, s + len, 0 };
	struct mj *v = calloc(1, sizeof(*v));

	if (mj_value(&p, v) == 0) {
		mj_ws(&p);
		if (p.s == p.end)
			return v;
	}
	mj_release(v);
	free(v);
	return NULL;
}

static void mj_free(struct mj *v)
{
	if (v) {
		mj_release(v);
		free(v);
	}
}

/* Member key of object o, or NULL. */
static const struct mj *mj_get(const struct mj *o, const char *key)
{
	size_t i;

	if (!o || o->type != MJ_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++) {
		if (!strcmp(o->keys[i], key))
			return &o->items[i];
	}
	return NULL;
}

#endif
