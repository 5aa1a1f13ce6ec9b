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
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

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

/* Wait (up to 30 s) until process PID runs the executable at PATH and sleeps in it (a child
 * that exec()s /bin/sleep: its exec and start-up, the dynamic loader's mappings included, are
 * over). A fixed pause may be too short on a busy machine. 0 when it does, -1 otherwise. */
static inline int test_wait_exec(pid_t pid, const char *path)
{
	struct stat want, got;
	char exe[64], st[64], buf[512];
	int i;

	if (stat(path, &want) < 0)
		return -1;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	snprintf(st, sizeof(st), "/proc/%d/stat", (int)pid);
	for (i = 0; i < 3000; i++) {
		if (stat(exe, &got) == 0 && got.st_ino == want.st_ino && got.st_dev == want.st_dev) {
			FILE *f = fopen(st, "r");
			size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
			const char *paren;

			if (f)
				fclose(f);
			buf[n] = 0;
			paren = strrchr(buf, ')');
			if (paren && paren[1] == ' ' && paren[2] == 'S')
				return 0;
		}
		usleep(10000);
	}
	return -1;
}

static inline int test_summary(void)
{
	printf("%d passed, %d failed, %d skipped\n", test_passed, test_failed, test_skipped);
	return test_failed ? 1 : 0;
}

#endif
