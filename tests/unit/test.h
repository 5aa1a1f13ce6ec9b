/* test.h: a tiny unit-test harness. Each tests/unit/test_x.c defines test functions and lists
 * them in main via RUN(fn). A failed CHECK prints file:line and marks the test failed; the
 * binary prints "N passed, N failed" and exits non-zero on any failure.
 *
 *   static void test_thing(void) { CHECK(1 + 1 == 2); CHECK_EQ_INT(f(), 3); }
 *   int main(void) { RUN(test_thing); return test_summary(); }
 */
#ifndef SCORCH_TEST_H
#define SCORCH_TEST_H

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static int test_failed_checks;
static int test_passed, test_failed, test_skipped;
static const char *test_current;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "  FAIL %s:%d: %s: CHECK(%s)\n", __FILE__, __LINE__, test_current, #cond); \
		test_failed_checks++; \
	} } while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) { \
		fprintf(stderr, "  FAIL %s:%d: %s: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
			test_current, #a, _a, #b, _b); \
		test_failed_checks++; \
	} } while (0)

#define CHECK_EQ_STR(a, b) do { \
	const char *_a = (a), *_b = (b); \
	if (!_a || !_b || strcmp(_a, _b)) { \
		fprintf(stderr, "  FAIL %s:%d: %s: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, \
			test_current, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
		test_failed_checks++; \
	} } while (0)

/* Skip the current test with a loud reason (counted as skipped, never as passed). */
#define SKIP(...) do { \
	fprintf(stderr, "  SKIP %s: ", test_current); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); \
	test_failed_checks = -1; return; } while (0)

#define RUN(fn) do { \
	test_current = #fn; test_failed_checks = 0; \
	fn(); \
	if (test_failed_checks < 0) test_skipped++; \
	else if (test_failed_checks) { test_failed++; fprintf(stderr, "not ok %s\n", #fn); } \
	else { test_passed++; if (getenv("TEST_VERBOSE")) fprintf(stderr, "ok %s\n", #fn); } \
	} while (0)

static inline int test_summary(void)
{
	printf("%d passed, %d failed, %d skipped\n", test_passed, test_failed, test_skipped);
	return test_failed ? 1 : 0;
}

#endif
