/* test_jsonread.c: the strict JSON reader (src/lib/jsonread.c): values, escapes, limits and
 * the errors hostile documents get. */
#include "lib/jsonread.h"
#include "test.h"

#include <errno.h>

static struct json_value *parse(const char *s, int *rc, struct errmsg *err)
{
	struct json_value *v = NULL;

	*rc = jsonread_parse(s, strlen(s), 0, &v, err);
	return v;
}

static void test_values(void)
{
	struct errmsg err = { "" };
	const struct json_value *x;
	struct json_value *v;
	int rc;

	v = parse(" {\"a\": [1, -2.5e2, true, false, null, \"s\"], \"b\": {}, \"c\": []} ", &rc, &err);
	CHECK_EQ_INT(rc, 0);
	CHECK(v && v->type == JSON_OBJECT && v->n == 3);
	x = jsonread_get(v, "a");
	CHECK(x && x->type == JSON_ARRAY && x->n == 6);
	if (x && x->n == 6) {
		CHECK(x->items[0].type == JSON_NUMBER && x->items[0].num == 1);
		CHECK(x->items[1].num == -250);
		CHECK(x->items[2].type == JSON_BOOL && x->items[2].num == 1);
		CHECK(x->items[3].type == JSON_BOOL && x->items[3].num == 0);
		CHECK(x->items[4].type == JSON_NULL);
		CHECK(x->items[5].type == JSON_STRING);
		CHECK_EQ_STR(x->items[5].str, "s");
	}
	x = jsonread_get(v, "b");
	CHECK(x && x->type == JSON_OBJECT && x->n == 0);
	CHECK(jsonread_get(v, "zz") == NULL);
	CHECK(jsonread_get(x, "a") == NULL);
	CHECK(jsonread_get(jsonread_get(v, "a"), "a") == NULL);
	jsonread_free(v);

	v = parse("42", &rc, &err);
	CHECK(rc == 0 && v && v->type == JSON_NUMBER && v->num == 42);
	jsonread_free(v);
	jsonread_free(NULL);
}

static void test_strings(void)
{
	struct errmsg err = { "" };
	struct json_value *v;
	int rc;

	v = parse("\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\u20ac\\ud83d\\ude00\"", &rc, &err);
	CHECK_EQ_INT(rc, 0);
	if (v)
		CHECK_EQ_STR(v->str, "a\"b\\c/d\n\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	jsonread_free(v);
	/* lone surrogates become U+FFFD */
	v = parse("\"\\ud800x\\udc00\"", &rc, &err);
	CHECK_EQ_INT(rc, 0);
	if (v)
		CHECK_EQ_STR(v->str, "\xef\xbf\xbdx\xef\xbf\xbd");
	jsonread_free(v);
	/* \u0000 keeps its length */
	v = parse("\"a\\u0000b\"", &rc, &err);
	CHECK(rc == 0 && v && v->len == 3);
	jsonread_free(v);
}

static void test_errors(void)
{
	static const char *bad[] = {
		"", " ", "{", "[1,", "[1 2]", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[-]", "[1e]",
		"\"abc", "\"a\\x\"", "\"\\u12\"", "\"\x01\"", "tru", "nul", "[1] x", "{\"a\":1,}",
		"[,1]", "1e999", "\"\\", "[\"\\u00\"]",
	};
	struct errmsg err = { "" };
	struct json_value *v;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		v = parse(bad[i], &rc, &err);
		if (rc != -EINVAL || v || !strstr(err.msg, "bad JSON"))
			fprintf(stderr, "  input %zu '%s': rc %d msg '%s'\n", i, bad[i], rc, err.msg);
		CHECK(rc == -EINVAL && v == NULL);
		CHECK(strstr(err.msg, "bad JSON") != NULL);
	}
	/* a NUL byte inside */
	rc = jsonread_parse("[1,\0 2]", 7, 0, &v, &err);
	CHECK(rc == -EINVAL && !v);
}

static void test_limits(void)
{
	struct errmsg err = { "" };
	struct json_value *v = NULL;
	char deep[2 * JSONREAD_MAX_DEPTH + 8];
	int rc, i;

	for (i = 0; i < JSONREAD_MAX_DEPTH + 2; i++) {
		deep[i] = '[';
		deep[2 * (JSONREAD_MAX_DEPTH + 2) - 1 - i] = ']';
	}
	rc = jsonread_parse(deep, 2 * (JSONREAD_MAX_DEPTH + 2), 0, &v, &err);
	CHECK(rc == -E2BIG && !v);
	CHECK(strstr(err.msg, "deeper") != NULL);
	/* exactly the maximum depth is fine */
	rc = jsonread_parse(deep + 2, 2 * JSONREAD_MAX_DEPTH, 0, &v, &err);
	CHECK_EQ_INT(rc, 0);
	jsonread_free(v);
	rc = jsonread_parse("[1,2,3,4]", 9, 4, &v, &err);
	CHECK(rc == -E2BIG && !v);
	rc = jsonread_parse("[1,2,3]", 7, 4, &v, &err);
	CHECK_EQ_INT(rc, 0);
	jsonread_free(v);
}

int main(void)
{
	RUN(test_values);
	RUN(test_strings);
	RUN(test_errors);
	RUN(test_limits);
	return test_summary();
}
