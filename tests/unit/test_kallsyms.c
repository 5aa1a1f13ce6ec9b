/* test_kallsyms.c: /proc/kallsyms parsing on fixed text (aliases, modules, non-text symbols,
 * hidden addresses) and on the running kernel's. */
#include "agent/kallsyms.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

static const char sample[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81000100 t secondary_startup\n"
	"ffffffff81000200 D some_data\n"
	"ffffffff81000300 T __schedule\n"
	"ffffffff81000400 W weak_fn\n"
	"garbage line\n"
	"ffffffffc0201000 t ext4_fill_super\t[ext4]\n"
	"ffffffffc0201100 t ext4_read\t[ext4]\n"
	"ffffffffc0300000 t bpf_prog_123456_handler\t[bpf]\n";

static void test_parse(void)
{
	struct kallsyms *k = NULL;
	const char *mod = "x";
	uint64_t a = 0;

	CHECK_EQ_INT(kallsyms_parse(sample, strlen(sample), &k, NULL), 0);
	if (!k)
		return;
	CHECK_EQ_INT(kallsyms_count(k), 7);
	CHECK_EQ_STR(kallsyms_lookup(k, 0xffffffff81000000ULL, &a, &mod), "startup_64");
	CHECK(mod == NULL);
	CHECK_EQ_INT(a, 0xffffffff81000000ULL);
	CHECK_EQ_STR(kallsyms_lookup(k, 0xffffffff810000ffULL, NULL, NULL), "startup_64");
	/* data symbols are skipped: secondary_startup extends to __schedule */
	CHECK_EQ_STR(kallsyms_lookup(k, 0xffffffff81000250ULL, NULL, NULL), "secondary_startup");
	CHECK_EQ_STR(kallsyms_lookup(k, 0xffffffff81000301ULL, NULL, NULL), "__schedule");
	CHECK_EQ_STR(kallsyms_lookup(k, 0xffffffff81000400ULL, NULL, NULL), "weak_fn");
	/* the gap up to the modules is not attributed to weak_fn */
	CHECK(kallsyms_lookup(k, 0xffffffffa0000000ULL, NULL, NULL) == NULL);
	CHECK_EQ_STR(kallsyms_lookup(k, 0xffffffffc0201120ULL, NULL, &mod), "ext4_read");
	CHECK_EQ_STR(mod, "ext4");
	CHECK_EQ_STR(kallsyms_lookup(k, 0xffffffffc0300010ULL, NULL, &mod), "bpf_prog_123456_handler");
	CHECK_EQ_STR(mod, "bpf");
	CHECK(kallsyms_lookup(k, 0xffffffffc0300000ULL + KALLSYMS_MAX_SIZE, NULL, NULL) == NULL);
	CHECK(kallsyms_lookup(k, 0x1000, NULL, NULL) == NULL);
	CHECK_EQ_INT(kallsyms_find(k, "ext4_read", &a), 0);
	CHECK_EQ_INT(a, 0xffffffffc0201100ULL);
	CHECK_EQ_INT(kallsyms_find(k, "some_data", &a), -ENOENT);
	kallsyms_free(k);
}

static void test_hidden(void)
{
	static const char hidden[] = "0000000000000000 T _text\n0000000000000000 T startup_64\n"
				     "0000000000000000 t ext4_read\t[ext4]\n";
	struct kallsyms *k = NULL;
	struct errmsg err;

	CHECK_EQ_INT(kallsyms_parse(hidden, strlen(hidden), &k, &err), -EPERM);
	CHECK(k == NULL);
	CHECK(strstr(err.msg, "kptr_restrict") != NULL);
	CHECK_EQ_INT(kallsyms_parse("", 0, &k, &err), -ENOENT);
	CHECK_EQ_INT(kallsyms_load("/nonexistent/kallsyms", &k, &err), -ENOENT);
}

static void test_running_kernel(void)
{
	struct kallsyms *k = NULL;
	struct errmsg err;
	uint64_t a = 0, start = 0;
	int rc;

	rc = kallsyms_load(NULL, &k, &err);
	if (rc == -EPERM)
		SKIP("%s", err.msg);
	CHECK_EQ_INT(rc, 0);
	if (!k)
		return;
	CHECK(kallsyms_count(k) > 1000);
	CHECK_EQ_INT(kallsyms_find(k, "schedule", &a), 0);
	CHECK_EQ_STR(kallsyms_lookup(k, a + 4, &start, NULL), "schedule");
	CHECK_EQ_INT(start, a);
	kallsyms_free(k);
}

int main(void)
{
	RUN(test_parse);
	RUN(test_hidden);
	RUN(test_running_kernel);
	return test_summary();
}
