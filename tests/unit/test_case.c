/* test_case.c: replay cases (src/replay/case.c, replay.c): a round trip through the file
 * format, the refusal of a newer version and of damaged files with a message, and that a
 * replay notices a changed rule or memory (what `scorch replay --expect` relies on). The cases
 * are the seeds of the fuzz corpus (tests/fuzz/corpus/case: captured from a C program in a
 * signal handler and from a Go program). */
#include "replay/case.h"
#include "replay/replay.h"
#include "profile/gzip.h"
#include "test.h"

#include <errno.h>
#include <string.h>

#define CORPUS "tests/fuzz/corpus/case/"

static void test_round_trip(void)
{
	struct replay_case c, d;
	struct replay_result r;
	struct errmsg err = { { 0 } };
	struct buf b = BUF_INIT(BUF_UNLIMITED);

	CHECK_EQ_INT(case_load(CORPUS "c-signal-chain.case", &c, &err), 0);
	if (!c.have_regs)
		return;
	CHECK(c.expect && strstr(c.expect, "main;level1;level2;"));
	CHECK(c.expect && strstr(c.expect, "on_signal;leaf_spin") != NULL);
	CHECK_EQ_INT(c.expect_result, USTAT_COMPLETE);
	CHECK_EQ_INT(replay_run(&c, NULL, &r), 0);
	CHECK(replay_matches(&c, &r));
	CHECK_EQ_STR(r.folded, c.expect);
	replay_result_release(&r);
	CHECK_EQ_INT(case_encode(&c, &b), 0);
	CHECK_EQ_INT(case_parse(b.data, b.len, &d, &err), 0);
	CHECK_EQ_INT(d.nexpect, c.nexpect);
	CHECK_EQ_INT(d.nmem, c.nmem);
	CHECK_EQ_INT(d.nentries, c.nentries);
	CHECK_EQ_INT(d.nmaps, c.nmaps);
	CHECK_EQ_STR(d.expect, c.expect);
	CHECK_EQ_STR(d.description, c.description);
	case_release(&d);
	buf_release(&b);
	case_release(&c);
}

/* A rule changed in the table, or a return address changed in memory: the replay differs. */
static void test_mutations(void)
{
	struct replay_case c;
	struct replay_result r;
	struct errmsg err = { { 0 } };
	size_t i, j, differ = 0, rules = 0;

	CHECK_EQ_INT(case_load(CORPUS "c-signal-chain.case", &c, &err), 0);
	if (!c.have_regs)
		return;
	for (i = 0; i < c.nentries; i++) {
		struct unwind_entry keep = c.entries[i].e;
		unsigned k = keep.kind & UNW_KIND_MASK;

		if (k != UNW_CFA_RSP && k != UNW_CFA_RBP)
			continue;
		rules++;
		c.entries[i].e.off += 8;
		CHECK_EQ_INT(replay_run(&c, NULL, &r), 0);
		differ += !replay_matches(&c, &r);
		replay_result_release(&r);
		c.entries[i].e = keep;
	}
	/* each native frame's own rule is among the entries (the others are its search's
	 * probes): at least one change per frame the table unwound is seen */
	CHECK(rules > 0);
	CHECK(differ * 2 >= c.nexpect / 2);
	/* the leaf's caller: the return address the first rule finds, changed in memory */
	for (i = 0, differ = 0; i < c.nmem; i++) {
		for (j = 0; j + 8 <= c.mem[i].len; j += 8) {
			uint64_t v;

			memcpy(&v, c.mem[i].data + j, 8);
			if (c.nexpect > 1 && v == c.expect_words[1]) {
				uint64_t w = v + 0x100000;

				memcpy(c.mem[i].data + j, &w, 8);
				CHECK_EQ_INT(replay_run(&c, NULL, &r), 0);
				differ += !replay_matches(&c, &r);
				replay_result_release(&r);
				memcpy(c.mem[i].data + j, &v, 8);
			}
		}
	}
	CHECK(differ > 0);
	CHECK_EQ_INT(replay_run(&c, NULL, &r), 0);
	CHECK(replay_matches(&c, &r)); /* all put back */
	replay_result_release(&r);
	case_release(&c);
}

static void test_refusals(void)
{
	struct replay_case c;
	struct errmsg err = { { 0 } };
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	size_t cut;

	CHECK_EQ_INT(case_load(CORPUS "future-version.bin", &c, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "version 2 is newer") != NULL);
	memset(&err, 0, sizeof(err));
	CHECK_EQ_INT(case_load(CORPUS "overlap.bin", &c, &err), -EINVAL);
	CHECK(strstr(err.msg, "overlap") != NULL);
	CHECK_EQ_INT(case_parse("hello", 5, &c, &err), -EINVAL);
	CHECK(strstr(err.msg, "not a scorch replay case") != NULL);
	memset(&err, 0, sizeof(err));
	CHECK(case_load(CORPUS "no-such.case", &c, &err) < 0);
	CHECK(strstr(err.msg, "cannot read") != NULL);
	/* every cut of a real case is refused or parses, never more */
	CHECK_EQ_INT(buf_read_file(&b, CORPUS "go-time-now.case"), 0);
	{
		struct buf plain = BUF_INIT(CASE_MAX_BYTES);

		CHECK_EQ_INT(gzip_decompress(b.data, b.len, CASE_MAX_BYTES, &plain, &err), 0);
		for (cut = 0; cut < plain.len; cut += 7) {
			memset(&err, 0, sizeof(err));
			if (case_parse(plain.data, cut, &c, &err) == 0)
				case_release(&c);
			else
				CHECK(err.msg[0] != 0);
		}
		CHECK_EQ_INT(case_parse(plain.data, plain.len, &c, &err), 0);
		case_release(&c);
		buf_release(&plain);
	}
	buf_release(&b);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_mutations);
	RUN(test_refusals);
	return test_summary();
}
