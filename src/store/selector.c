/* selector.c: parsing and evaluating label selectors (see selector.h). A hand-written scanner
 * over a bounded input: every error names the problem and its byte offset. */
#include "store/selector.h"
#include "store/store.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"

#include <errno.h>
#include <string.h>

#define MAX_REPEAT         32   /* largest count in {n,m} */
#define MAX_REPEAT_PRODUCT 1024 /* product of all counts of one regex */
#define MAX_REGEX_DEPTH    8    /* nested groups */

struct scan {
	const char *s;
	size_t len, pos;
	struct errmsg *err;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_space(struct scan *sc)
{
	while (sc->pos < sc->len && is_space(sc->s[sc->pos]))
		sc->pos++;
}

static int name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9') || c == '.';
}

static int type_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == ':' || c == '-';
}

static void matcher_release(struct selector_matcher *m)
{
	xfree(m->name);
	xfree(m->value);
	if (m->re) {
		regfree(m->re);
		xfree(m->re);
	}
}

void selector_free(struct selector *sel)
{
	size_t i;

	if (!sel)
		return;
	for (i = 0; i < sel->nmatchers; i++)
		matcher_release(&sel->matchers[i]);
	xfree(sel->matchers);
	xfree(sel->type);
	xfree(sel);
}

static struct selector_matcher *add_matcher(struct selector *sel)
{
	struct selector_matcher *m;

	sel->matchers = xrealloc(sel->matchers, (sel->nmatchers + 1) * sizeof(*sel->matchers));
	m = &sel->matchers[sel->nmatchers++];
	memset(m, 0, sizeof(*m));
	return m;
}

/* Refuse regexes whose matching cost or compiled size could explode: back-references, and
 * counted repetitions ("{n,m}") whose counts multiply past MAX_REPEAT_PRODUCT (the regex
 * compiler copies the repeated part once per count, nested ones multiply). */
static int check_regex(const char *re, size_t at, struct errmsg *err)
{
	size_t i, n = strlen(re);
	unsigned long product = 1;
	long depth = 0;
	int prev_repeat = 0;

	if (n > SELECTOR_MAX_REGEX)
		return errmsg_set(err, -E2BIG, "regex longer than %d bytes at offset %zu",
				  SELECTOR_MAX_REGEX, at);
	for (i = 0; i < n; i++) {
		int repeat = re[i] == '*' || re[i] == '+' || re[i] == '?' ||
			     (re[i] == '{' && i + 1 < n && ((re[i + 1] >= '0' && re[i + 1] <= '9') || re[i + 1] == ','));

		/* "a**" is undefined in POSIX and compiles in exponential time in some libcs. */
		if (repeat && prev_repeat)
			return errmsg_set(err, -EINVAL, "repeated quantifier in regex at offset %zu", at);
		prev_repeat = repeat;
		if (re[i] == '\\' && i + 1 < n) {
			if (re[i + 1] >= '0' && re[i + 1] <= '9')
				return errmsg_set(err, -EINVAL, "back-references are not supported in regex at offset %zu", at);
			i++;
		} else if (re[i] == '[') {
			/* A bracket expression: ']' right after '[' or '[^' is literal. */
			i++;
			if (i < n && re[i] == '^')
				i++;
			if (i < n && re[i] == ']')
				i++;
			while (i < n && re[i] != ']') {
				if (re[i] == '[' && i + 1 < n && (re[i + 1] == ':' || re[i + 1] == '.' || re[i + 1] == '=')) {
					char close = re[i + 1];

					for (i += 2; i + 1 < n && !(re[i] == close && re[i + 1] == ']'); i++)
						;
					i++;
				}
				i++;
			}
		} else if (re[i] == '(') {
			if (++depth > MAX_REGEX_DEPTH)
				return errmsg_set(err, -E2BIG, "regex nests deeper than %d groups at offset %zu",
						  MAX_REGEX_DEPTH, at);
		} else if (re[i] == ')') {
			if (--depth < 0)
				return errmsg_set(err, -EINVAL, "unbalanced ')' in regex at offset %zu", at);
		} else if (re[i] == '{') {
			size_t j = i + 1;
			unsigned long v = 0, vmax = 0;

			for (; j < n && ((re[j] >= '0' && re[j] <= '9') || re[j] == ','); j++) {
				if (re[j] == ',') {
					v = 0;
					continue;
				}
				v = v * 10 + (unsigned long)(re[j] - '0');
				if (v > MAX_REPEAT)
					return errmsg_set(err, -E2BIG, "repetition count above %d in regex at offset %zu",
							  MAX_REPEAT, at);
				if (v > vmax)
					vmax = v;
			}
			if (j == i + 1)
				continue;
			if (j < n && re[j] == '}')
				i = j; /* the next character must not be another quantifier */
			if (j < n && re[j] == '}' && re[j - 1] == ',')
				vmax = MAX_REPEAT; /* "{n,}" unbounded: counts as the largest */
			product *= vmax ? vmax : 1;
			if (product > MAX_REPEAT_PRODUCT)
				return errmsg_set(err, -E2BIG, "too many counted repetitions in regex at offset %zu", at);
		}
	}
	return 0;
}

static int compile_regex(struct selector_matcher *m, size_t at, struct errmsg *err)
{
	char *anchored;
	int rc, ret;

	ret = check_regex(m->value, at, err);
	if (ret < 0)
		return ret;
	anchored = xasprintf("^(%s)$", m->value);
	m->re = xcalloc(1, sizeof(*m->re));
	rc = regcomp(m->re, anchored, REG_EXTENDED | REG_NOSUB);
	xfree(anchored);
	if (rc) {
		char msg[128];

		regerror(rc, m->re, msg, sizeof(msg));
		xfree(m->re);
		m->re = NULL;
		return errmsg_set(err, -EINVAL, "invalid regex at offset %zu: %s", at, msg);
	}
	return 0;
}

/* A quoted ('"' or '\'') or bare value into out. */
static int scan_value(struct scan *sc, struct buf *out)
{
	size_t start = sc->pos;
	char q;

	if (sc->pos >= sc->len)
		return errmsg_set(sc->err, -EINVAL, "expected a value at offset %zu", sc->pos);
	q = sc->s[sc->pos];
	if (q == '"' || q == '\'') {
		sc->pos++;
		while (sc->pos < sc->len && sc->s[sc->pos] != q) {
			char c = sc->s[sc->pos++];

			if (c == '\\') {
				if (sc->pos >= sc->len)
					break;
				c = sc->s[sc->pos++];
				if (c == 'n')
					c = '\n';
				else if (c == 't')
					c = '\t';
			}
			if (c == '\0')
				return errmsg_set(sc->err, -EINVAL, "NUL byte in value at offset %zu", sc->pos - 1);
			if (buf_putc(out, c) < 0)
				return errmsg_set(sc->err, -E2BIG, "value too long at offset %zu", start);
		}
		if (sc->pos >= sc->len)
			return errmsg_set(sc->err, -EINVAL, "unterminated string starting at offset %zu", start);
		sc->pos++;
		return 0;
	}
	while (sc->pos < sc->len) {
		char c = sc->s[sc->pos];

		if (c == ',' || c == '}' || is_space(c))
			break;
		if (c == '"' || c == '\'' || c == '{' || c == '\0')
			return errmsg_set(sc->err, -EINVAL, "unexpected '%c' in value at offset %zu",
					  c ? c : '0', sc->pos);
		if (buf_putc(out, c) < 0)
			return errmsg_set(sc->err, -E2BIG, "value too long at offset %zu", start);
		sc->pos++;
	}
	if (sc->pos == start)
		return errmsg_set(sc->err, -EINVAL, "expected a value at offset %zu", sc->pos);
	return 0;
}

static int scan_matcher(struct scan *sc, struct selector *sel)
{
	struct buf val = BUF_INIT(STORE_MAX_LABEL_VALUE);
	struct selector_matcher *m;
	size_t start, vstart;
	enum selector_op op;
	int ret = 0;

	start = sc->pos;
	if (sc->pos >= sc->len || !name_start(sc->s[sc->pos]))
		return errmsg_set(sc->err, -EINVAL, "expected a label name at offset %zu", sc->pos);
	while (sc->pos < sc->len && name_char(sc->s[sc->pos]))
		sc->pos++;
	if (sc->pos - start > STORE_MAX_LABEL_NAME)
		return errmsg_set(sc->err, -E2BIG, "label name too long at offset %zu", start);
	if (sel->nmatchers >= SELECTOR_MAX_MATCHERS)
		return errmsg_set(sc->err, -E2BIG, "more than %d matchers at offset %zu",
				  SELECTOR_MAX_MATCHERS, start);
	m = add_matcher(sel);
	m->name = xstrndup(sc->s + start, sc->pos - start);
	skip_space(sc);
	if (sc->pos + 1 < sc->len && sc->s[sc->pos] == '=' && sc->s[sc->pos + 1] == '~') {
		op = SELECTOR_RE;
		sc->pos += 2;
	} else if (sc->pos + 1 < sc->len && sc->s[sc->pos] == '!' && sc->s[sc->pos + 1] == '~') {
		op = SELECTOR_NRE;
		sc->pos += 2;
	} else if (sc->pos + 1 < sc->len && sc->s[sc->pos] == '!' && sc->s[sc->pos + 1] == '=') {
		op = SELECTOR_NE;
		sc->pos += 2;
	} else if (sc->pos < sc->len && sc->s[sc->pos] == '=') {
		op = SELECTOR_EQ;
		sc->pos += 1;
	} else {
		return errmsg_set(sc->err, -EINVAL,
				  "expected '=', '!=', '=~' or '!~' after label name '%s' at offset %zu",
				  m->name, sc->pos);
	}
	m->op = op;
	skip_space(sc);
	vstart = sc->pos;
	ret = scan_value(sc, &val);
	if (ret < 0)
		goto cleanup;
	m->value = buf_detach(&val, NULL);
	if (op == SELECTOR_RE || op == SELECTOR_NRE)
		ret = compile_regex(m, vstart, sc->err);
cleanup:
	buf_release(&val);
	return ret;
}

static int scan_head(struct scan *sc, struct selector *sel)
{
	size_t start = sc->pos, end, dot, i;

	while (sc->pos < sc->len && sc->s[sc->pos] != '{' && !is_space(sc->s[sc->pos])) {
		char c = sc->s[sc->pos];

		if (c == '}' || c == ',' || c == '"' || c == '\'' || c == '=' || c == '\0' ||
		    (unsigned char)c < 0x20)
			return errmsg_set(sc->err, -EINVAL, "unexpected '%c' in application name at offset %zu",
					  c >= 0x20 ? c : '?', sc->pos);
		sc->pos++;
	}
	end = sc->pos;
	if (end == start)
		return 0;
	if (end - start > STORE_MAX_LABEL_VALUE)
		return errmsg_set(sc->err, -E2BIG, "application name too long at offset %zu", start);
	dot = end;
	for (i = start; i < end; i++)
		if (sc->s[i] == '.')
			dot = i;
	if (dot != end) {
		if (dot + 1 == end)
			return errmsg_set(sc->err, -EINVAL, "missing profile type after '.' at offset %zu", dot);
		if (end - dot - 1 > STORE_MAX_TYPE)
			return errmsg_set(sc->err, -E2BIG, "profile type too long at offset %zu", dot + 1);
		for (i = dot + 1; i < end; i++)
			if (!type_char(sc->s[i]))
				return errmsg_set(sc->err, -EINVAL, "invalid character in profile type at offset %zu", i);
		sel->type = xstrndup(sc->s + dot + 1, end - dot - 1);
	}
	if (dot > start) {
		struct selector_matcher *m = add_matcher(sel);

		m->name = xstrdup("service_name");
		m->value = xstrndup(sc->s + start, dot - start);
		m->op = SELECTOR_EQ;
	}
	return 0;
}

int selector_parse(const char *s, size_t len, struct selector **out, struct errmsg *err)
{
	struct scan sc = { s, len, 0, err };
	struct selector *sel = xcalloc(1, sizeof(*sel));
	int ret;

	*out = NULL;
	if (len > SELECTOR_MAX_LEN) {
		ret = errmsg_set(err, -E2BIG, "selector longer than %d bytes", SELECTOR_MAX_LEN);
		goto cleanup;
	}
	skip_space(&sc);
	ret = scan_head(&sc, sel);
	if (ret < 0)
		goto cleanup;
	skip_space(&sc);
	if (sc.pos < sc.len && s[sc.pos] == '{') {
		sc.pos++;
		skip_space(&sc);
		while (sc.pos < sc.len && s[sc.pos] != '}') {
			ret = scan_matcher(&sc, sel);
			if (ret < 0)
				goto cleanup;
			skip_space(&sc);
			if (sc.pos < sc.len && s[sc.pos] == ',') {
				sc.pos++;
				skip_space(&sc);
			} else if (sc.pos < sc.len && s[sc.pos] != '}') {
				ret = errmsg_set(err, -EINVAL, "expected ',' or '}' at offset %zu", sc.pos);
				goto cleanup;
			}
		}
		if (sc.pos >= sc.len) {
			ret = errmsg_set(err, -EINVAL, "missing '}' at offset %zu", sc.pos);
			goto cleanup;
		}
		sc.pos++;
		skip_space(&sc);
	}
	if (sc.pos < sc.len) {
		ret = errmsg_set(err, -EINVAL, "unexpected text at offset %zu", sc.pos);
		goto cleanup;
	}
	*out = sel;
	sel = NULL;
	ret = 0;
cleanup:
	selector_free(sel);
	return ret;
}

static const char *label_value(const char *type, const struct store_label *labels, size_t n,
			       const char *name)
{
	size_t i;

	if (name[0] == '_' && !strcmp(name, "__type__"))
		return type;
	for (i = 0; i < n; i++)
		if (!strcmp(labels[i].name, name))
			return labels[i].value ? labels[i].value : "";
	return "";
}

int selector_match(const struct selector *sel, const char *type, const struct store_label *labels,
		   size_t nlabels)
{
	size_t i;

	if (!sel)
		return 1;
	if (sel->type && strcmp(sel->type, type))
		return 0;
	for (i = 0; i < sel->nmatchers; i++) {
		const struct selector_matcher *m = &sel->matchers[i];
		const char *v = label_value(type, labels, nlabels, m->name);
		int hit;

		switch (m->op) {
		case SELECTOR_EQ:
			hit = !strcmp(v, m->value);
			break;
		case SELECTOR_NE:
			hit = !!strcmp(v, m->value);
			break;
		case SELECTOR_RE:
			hit = regexec(m->re, v, 0, NULL, 0) == 0;
			break;
		case SELECTOR_NRE:
		default:
			hit = regexec(m->re, v, 0, NULL, 0) != 0;
			break;
		}
		if (!hit)
			return 0;
	}
	return 1;
}

const char *selector_eq_value(const struct selector *sel, const char *name)
{
	size_t i;

	if (!sel)
		return NULL;
	for (i = 0; i < sel->nmatchers; i++)
		if (sel->matchers[i].op == SELECTOR_EQ && !strcmp(sel->matchers[i].name, name))
			return sel->matchers[i].value;
	return NULL;
}
