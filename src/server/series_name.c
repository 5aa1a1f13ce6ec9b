/* series_name.c: the ingest `name` parser (see series_name.h). A single forward pass with
 * explicit caps; every allocation is bounded by SERIES_NAME_MAX. */
#include "server/series_name.h"
#include "lib/alloc.h"

#include <errno.h>
#include <string.h>

/* Printable ASCII but the name syntax, and any byte of a UTF-8 sequence. */
static int app_char(char ch)
{
	unsigned char c = (unsigned char)ch;

	return c > ' ' && c != 0x7f && c != '{' && c != '}' && c != ',' && c != '=' && c != '"';
}

static int key_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int key_char(char c)
{
	return key_start(c) || (c >= '0' && c <= '9') || c == '.';
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Parse one value at *pp (bare or quoted) into a new string. */
static int parse_value(const char **pp, char **out, const char *key, struct errmsg *err)
{
	const char *p = *pp;
	char tmp[SERIES_MAX_VALUE + 1];
	size_t n = 0;

	if (*p == '"') {
		p++;
		for (;;) {
			char c = *p;

			if (!c)
				return errmsg_set(err, -EINVAL, "unterminated quoted value of label '%s'", key);
			if (c == '"')
				break;
			if (c == '\\') {
				p++;
				c = *p;
				if (c != '"' && c != '\\')
					return errmsg_set(err, -EINVAL, "bad escape in value of label '%s'", key);
			}
			if ((unsigned char)c < ' ')
				return errmsg_set(err, -EINVAL, "control character in value of label '%s'", key);
			if (n >= SERIES_MAX_VALUE)
				return errmsg_set(err, -EINVAL, "value of label '%s' longer than %d bytes", key,
						  SERIES_MAX_VALUE);
			tmp[n++] = c;
			p++;
		}
		p++;
	} else {
		while (*p && *p != ',' && *p != '}') {
			if (*p == '{' || *p == '"' || *p == '=' || (unsigned char)*p < ' ')
				return errmsg_set(err, -EINVAL, "bad character in value of label '%s'", key);
			if (n >= SERIES_MAX_VALUE)
				return errmsg_set(err, -EINVAL, "value of label '%s' longer than %d bytes", key,
						  SERIES_MAX_VALUE);
			tmp[n++] = *p++;
		}
		while (n > 0 && (tmp[n - 1] == ' ' || tmp[n - 1] == '\t'))
			n--;
	}
	tmp[n] = '\0';
	*out = xstrndup(tmp, n);
	*pp = p;
	return 0;
}

static int parse_labels(const char *p, struct series_name *out, struct errmsg *err)
{
	/* p points just after '{' */
	for (;;) {
		const char *k;
		size_t klen, i;
		char key[SERIES_MAX_KEY + 1];
		struct series_label *l;
		int rc;

		p = skip_ws(p);
		if (*p == '}')
			break;
		k = p;
		if (!key_start(*p))
			return errmsg_set(err, -EINVAL, "bad label name starting at '%.16s'", k);
		while (key_char(*p))
			p++;
		klen = (size_t)(p - k);
		if (klen > SERIES_MAX_KEY)
			return errmsg_set(err, -EINVAL, "label name longer than %d bytes", SERIES_MAX_KEY);
		memcpy(key, k, klen);
		key[klen] = '\0';
		if (klen >= 2 && k[0] == '_' && k[1] == '_')
			return errmsg_set(err, -EINVAL, "label name '%s' is reserved", key);
		if (!strcmp(key, "service_name"))
			return errmsg_set(err, -EINVAL,
					  "label 'service_name' is set by the application name");
		for (i = 0; i < out->nlabels; i++)
			if (!strcmp(out->labels[i].key, key))
				return errmsg_set(err, -EINVAL, "duplicate label '%s'", key);
		if (out->nlabels >= SERIES_MAX_LABELS)
			return errmsg_set(err, -EINVAL, "more than %d labels", SERIES_MAX_LABELS);
		p = skip_ws(p);
		if (*p != '=')
			return errmsg_set(err, -EINVAL, "label '%s' without '='", key);
		p = skip_ws(p + 1);
		l = &out->labels[out->nlabels];
		rc = parse_value(&p, &l->value, key, err);
		if (rc < 0)
			return rc;
		l->key = xstrdup(key);
		out->nlabels++;
		p = skip_ws(p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == '}')
			break;
		return errmsg_set(err, -EINVAL, "expected ',' or '}' after label '%s'", key);
	}
	if (p[1] != '\0')
		return errmsg_set(err, -EINVAL, "trailing characters after the labels");
	return 0;
}

int series_name_parse(const char *s, struct series_name *out, struct errmsg *err)
{
	const char *p = s, *brace, *dot = NULL;
	size_t len, applen;

	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return errmsg_set(err, -EINVAL, "empty name");
	len = strnlen(s, SERIES_NAME_MAX + 1);
	if (len > SERIES_NAME_MAX)
		return errmsg_set(err, -EINVAL, "name longer than %d bytes", SERIES_NAME_MAX);
	while (*p && *p != '{') {
		if (!app_char(*p))
			return errmsg_set(err, -EINVAL, "bad character 0x%02x in application name",
					  (unsigned char)*p);
		if (*p == '.')
			dot = p;
		p++;
	}
	brace = p;
	applen = (size_t)((dot ? dot : brace) - s);
	if (applen == 0)
		return errmsg_set(err, -EINVAL, "empty application name");
	if (dot && dot + 1 == brace)
		return errmsg_set(err, -EINVAL, "empty profile type after '.'");
	out->app = xstrndup(s, applen);
	out->type = dot ? xstrndup(dot + 1, (size_t)(brace - dot - 1)) : xstrdup("");
	if (*brace == '{')
		return parse_labels(brace + 1, out, err);
	return 0;
}

void series_name_release(struct series_name *n)
{
	size_t i;

	if (!n)
		return;
	xfree(n->app);
	xfree(n->type);
	for (i = 0; i < n->nlabels; i++) {
		xfree(n->labels[i].key);
		xfree(n->labels[i].value);
	}
	memset(n, 0, sizeof(*n));
}

const char *series_name_label(const struct series_name *n, const char *key)
{
	size_t i;

	for (i = 0; i < n->nlabels; i++)
		if (!strcmp(n->labels[i].key, key))
			return n->labels[i].value;
	return NULL;
}
