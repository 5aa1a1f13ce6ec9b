/* test_remote.c: the parts of `scorch diff --server` that need no server (src/ci/remote.c):
 * reading an /api/v1/series answer into runs, and adding a run matcher to a selection. */
#include "ci/remote.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "store/selector.h"
#include "test.h"

#include <errno.h>

static void test_parse_series(void)
{
	static const char ok[] =
		"{\"start\":1000,\"step\":10,\"points\":4,\"unit\":\"samples\",\"series\":["
		"{\"group\":\"20260101T000000Z-aaaaaa\",\"total\":30,\"values\":[10,20,0,0]},"
		"{\"group\":\"20260101T000100Z-bbbbbb\",\"total\":5,\"values\":[0,0,0,5]},"
		"{\"group\":\"empty\",\"total\":0,\"values\":[0,0,0,0]},"
		"{\"group\":\"\",\"total\":7,\"values\":[0,0,7,0]}]}";
	static const char empty[] = "{\"start\":1,\"step\":1,\"series\":[]}";
	struct remote_run *runs = NULL;
	struct errmsg err = { "" };
	size_t n = 0;

	CHECK_EQ_INT(remote_parse_series(ok, strlen(ok), &runs, &n, &err), 0);
	CHECK_EQ_INT(n, 3); /* the group without samples is left out */
	if (n == 3) {
		/* newest first */
		CHECK_EQ_STR(runs[0].id, "20260101T000100Z-bbbbbb");
		CHECK_EQ_INT(runs[0].first, 1030);
		CHECK_EQ_INT(runs[0].last, 1030);
		CHECK_EQ_STR(runs[1].id, "");
		CHECK_EQ_INT(runs[1].last, 1020);
		CHECK_EQ_STR(runs[2].id, "20260101T000000Z-aaaaaa");
		CHECK_EQ_INT(runs[2].first, 1000);
		CHECK_EQ_INT(runs[2].last, 1010);
		CHECK_EQ_INT(runs[2].step, 10);
		CHECK(runs[2].total == 30);
	}
	remote_runs_free(runs, n);

	CHECK_EQ_INT(remote_parse_series(empty, strlen(empty), &runs, &n, &err), 0);
	CHECK(n == 0 && runs == NULL);
}

static void test_parse_series_errors(void)
{
	static const char *bad[] = {
		"[]", "{\"step\":1,\"series\":[]}", "{\"start\":1,\"step\":0,\"series\":[]}",
		"{\"start\":1,\"step\":1,\"series\":{}}",
		"{\"start\":1,\"step\":1,\"series\":[{\"group\":1,\"total\":1,\"values\":[1]}]}",
		"{\"start\":1,\"step\":1,\"series\":[{\"group\":\"a\",\"values\":[1]}]}",
		"{\"start\":1,\"step\":1e300,\"series\":[]}", "not json",
	};
	struct remote_run *runs = NULL;
	struct errmsg err = { "" };
	size_t n = 0, i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		CHECK(remote_parse_series(bad[i], strlen(bad[i]), &runs, &n, &err) < 0);
		CHECK(runs == NULL && n == 0);
		CHECK(err.msg[0] != '\0');
	}
}

static void check_selector(const char *in, const char *value, const char *want)
{
	char *s = remote_selector_with(in, "run", value);
	struct selector *sel = NULL;
	struct errmsg err = { "" };

	CHECK_EQ_STR(s, want);
	/* and the server's parser reads it back with the value intact */
	CHECK_EQ_INT(selector_parse(s, strlen(s), &sel, &err), 0);
	if (sel)
		CHECK_EQ_STR(selector_eq_value(sel, "run"), value);
	selector_free(sel);
	xfree(s);
}

static void test_selector_with(void)
{
	check_selector("app.cpu", "r1", "app.cpu{run=\"r1\"}");
	check_selector("app.cpu{}", "r1", "app.cpu{run=\"r1\"}");
	check_selector("app.cpu{ }", "r1", "app.cpu{ run=\"r1\"}");
	check_selector("app.cpu{commit=\"abc\"}", "r1", "app.cpu{commit=\"abc\",run=\"r1\"}");
	check_selector("app.cpu{commit=\"a}\"} ", "x", "app.cpu{commit=\"a}\",run=\"x\"}");
	check_selector("{commit=abc}", "", "{commit=abc,run=\"\"}");
	check_selector("app.cpu", "q\"uo\\te", "app.cpu{run=\"q\\\"uo\\\\te\"}");
}

static void test_urlencode(void)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);

	CHECK_EQ_INT(remote_urlencode(&b, "app.cpu{commit=\"a b\"}~-_"), 0);
	CHECK_EQ_STR(b.data, "app.cpu%7Bcommit%3D%22a%20b%22%7D~-_");
	buf_release(&b);
}

int main(void)
{
	RUN(test_parse_series);
	RUN(test_parse_series_errors);
	RUN(test_selector_with);
	RUN(test_urlencode);
	return test_summary();
}
