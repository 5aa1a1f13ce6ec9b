/* test_selector.c: selector parsing (names, types, quoting, errors with offsets, limits) and
 * matching (=, !=, =~, !~, absent labels, anchoring). */
#include "test.h"
#include "store/selector.h"
#include "store/store.h"
#include "lib/log.h"

#include <errno.h>

static struct selector *parse(const char *s)
{
	struct selector *sel = NULL;
	struct errmsg err = { "" };

	if (selector_parse(s, strlen(s), &sel, &err) < 0)
		fprintf(stderr, "parse '%s': %s\n", s, err.msg);
	return sel;
}

/* Returns the error message of a failing parse ("" if it parsed). */
static const char *parse_error(const char *s)
{
	static struct errmsg err;
	struct selector *sel = NULL;

	err.msg[0] = '\0';
	if (selector_parse(s, strlen(s), &sel, &err) == 0) {
		selector_free(sel);
		return "";
	}
	return err.msg;
}

static const struct store_label web_h1[] = { { "host", "h1" }, { "service_name", "web" } };

static int matches(const char *q, const char *type, const struct store_label *l, size_t n)
{
	struct selector *sel = parse(q);
	int m = sel ? selector_match(sel, type, l, n) : -1;

	selector_free(sel);
	return m;
}

static void test_parse_head(void)
{
	struct selector *sel = parse("my-app.cpu{env=\"prod\"}");

	CHECK(sel != NULL);
	if (!sel)
		return;
	CHECK_EQ_STR(sel->type, "cpu");
	CHECK_EQ_INT(sel->nmatchers, 2);
	CHECK_EQ_STR(sel->matchers[0].name, "service_name");
	CHECK_EQ_STR(sel->matchers[0].value, "my-app");
	CHECK_EQ_STR(sel->matchers[1].name, "env");
	CHECK_EQ_STR(sel->matchers[1].value, "prod");
	CHECK_EQ_STR(selector_eq_value(sel, "service_name"), "my-app");
	CHECK(selector_eq_value(sel, "nope") == NULL);
	selector_free(sel);

	sel = parse("com.example.app.alloc_space");
	CHECK(sel && sel->type && !strcmp(sel->type, "alloc_space"));
	CHECK(sel && !strcmp(sel->matchers[0].value, "com.example.app"));
	selector_free(sel);

	sel = parse("justapp");
	CHECK(sel && sel->type == NULL && sel->nmatchers == 1);
	selector_free(sel);

	sel = parse("");
	CHECK(sel && sel->type == NULL && sel->nmatchers == 0);
	selector_free(sel);

	sel = parse("  {  }  ");
	CHECK(sel && sel->nmatchers == 0);
	selector_free(sel);

	sel = parse(".cpu");
	CHECK(sel && sel->type && !strcmp(sel->type, "cpu") && sel->nmatchers == 0);
	selector_free(sel);
}

static void test_parse_values(void)
{
	struct selector *sel = parse("{a=\"x\\\"y\\\\z\", b = bare , c!='sq', d=~\"re.*\", e!~\"n\",}");

	CHECK(sel != NULL);
	if (!sel)
		return;
	CHECK_EQ_INT(sel->nmatchers, 5);
	CHECK_EQ_STR(sel->matchers[0].value, "x\"y\\z");
	CHECK_EQ_INT(sel->matchers[0].op, SELECTOR_EQ);
	CHECK_EQ_STR(sel->matchers[1].value, "bare");
	CHECK_EQ_INT(sel->matchers[2].op, SELECTOR_NE);
	CHECK_EQ_STR(sel->matchers[2].value, "sq");
	CHECK_EQ_INT(sel->matchers[3].op, SELECTOR_RE);
	CHECK(sel->matchers[3].re != NULL);
	CHECK_EQ_INT(sel->matchers[4].op, SELECTOR_NRE);
	selector_free(sel);
}

static void test_parse_errors(void)
{
	CHECK(strstr(parse_error("app.cpu{env}"), "expected '=', '!=', '=~' or '!~'") != NULL);
	CHECK(strstr(parse_error("app.cpu{env}"), "offset 11") != NULL);
	CHECK(strstr(parse_error("app.cpu{env=\"x"), "unterminated string starting at offset 12") != NULL);
	CHECK(strstr(parse_error("app.cpu{env=\"x\""), "missing '}'") != NULL);
	CHECK(strstr(parse_error("app.cpu{env=\"x\" y=\"z\"}"), "expected ',' or '}' at offset 16") != NULL);
	CHECK(strstr(parse_error("app.{}"), "missing profile type") != NULL);
	CHECK(strstr(parse_error("app.c/u"), "invalid character in profile type at offset 5") != NULL);
	CHECK(strstr(parse_error("{1a=\"x\"}"), "expected a label name at offset 1") != NULL);
	CHECK(strstr(parse_error("{a=}"), "expected a value at offset 3") != NULL);
	CHECK(strstr(parse_error("{a=~\"(\"}"), "invalid regex") != NULL);
	CHECK(strstr(parse_error("{a=~\"(x)\\\\1\"}"), "back-references") != NULL);
	CHECK(strstr(parse_error("{a=~\"x{100}\"}"), "repetition count") != NULL);
	CHECK(strstr(parse_error("{a=~\"((x{20}){20}){20}\"}"), "too many counted repetitions") != NULL);
	CHECK(strstr(parse_error("{a=~\"x)|(.*\"}"), "unbalanced") != NULL);
	CHECK(strstr(parse_error("{a=~\"ab**\"}"), "repeated quantifier") != NULL);
	CHECK(strstr(parse_error("{a=~\"a{2}*\"}"), "repeated quantifier") != NULL);
	CHECK(strstr(parse_error("{a=~\"((((((((((a))))))))))\"}"), "nests deeper") != NULL);
	CHECK(*parse_error("{a=~\"[*+]*x\\\\**\"}") == '\0'); /* escaped star, bracket */
	CHECK(strstr(parse_error("app.cpu{a=\"b\"} trailing"), "unexpected text at offset 15") != NULL);
	CHECK(*parse_error("{a=~\"[0-9]{1,3}\\\\.[0-9]{1,3}\"}") == '\0');
	{
		char big[SELECTOR_MAX_LEN + 10];
		struct selector *sel = NULL;

		memset(big, 'a', sizeof(big));
		CHECK_EQ_INT(selector_parse(big, sizeof(big), &sel, NULL), -E2BIG);
		CHECK(sel == NULL);
	}
}

static void test_match(void)
{
	CHECK_EQ_INT(matches("web.cpu", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("web.alloc", "cpu", web_h1, 2), 0);
	CHECK_EQ_INT(matches("db.cpu", "cpu", web_h1, 2), 0);
	CHECK_EQ_INT(matches("{host=\"h1\"}", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("{host!=\"h1\"}", "cpu", web_h1, 2), 0);
	CHECK_EQ_INT(matches("{host!=\"h2\"}", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("{host=~\"h[0-9]\"}", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("{host=~\"h\"}", "cpu", web_h1, 2), 0);  /* anchored at the end */
	CHECK_EQ_INT(matches("{host=~\"1\"}", "cpu", web_h1, 2), 0);  /* and at the start */
	CHECK_EQ_INT(matches("{host=~\"x|h1\"}", "cpu", web_h1, 2), 1); /* alternation inside the group */
	CHECK_EQ_INT(matches("{host!~\"h.*\"}", "cpu", web_h1, 2), 0);
	CHECK_EQ_INT(matches("{host!~\"x.*\"}", "cpu", web_h1, 2), 1);
	/* Absent labels are "". */
	CHECK_EQ_INT(matches("{zone=\"\"}", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("{zone!=\"eu\"}", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("{zone=\"eu\"}", "cpu", web_h1, 2), 0);
	CHECK_EQ_INT(matches("{zone=~\".*\"}", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("{__type__=\"cpu\"}", "cpu", web_h1, 2), 1);
	CHECK_EQ_INT(matches("{__type__=~\"alloc.*\"}", "cpu", web_h1, 2), 0);
	CHECK_EQ_INT(selector_match(NULL, "cpu", web_h1, 2), 1);
}

int main(void)
{
	RUN(test_parse_head);
	RUN(test_parse_values);
	RUN(test_parse_errors);
	RUN(test_match);
	return test_summary();
}
