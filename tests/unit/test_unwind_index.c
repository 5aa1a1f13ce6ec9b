/* test_unwind_index.c: the page index of unwind tables (bpf/unwind.h: PAGE INDEX). Tables of
 * every shape (tiny, dense, sparse, one huge gap, a last entry near 4 GiB) get their index from
 * unwind_table_index(), and the step's entry search (bpf/unwind_step.h, the code BPF runs) must
 * find with the index exactly the entry a linear scan finds, for addresses on, around and
 * between entries, below and past the table. */
#include <linux/types.h>

#include "agent/unwind_table.h"
#include "bpf/unwind.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES (1u << 16)

static struct unwind_entry slots[MAX_ENTRIES + UNW_INDEX_SLOTS(MAX_ENTRIES) + 8];
static uint32_t nslots;

static int env_read(__u64 addr, __u64 *out)
{
	(void)addr;
	*out = 0;
	return -1;
}

static const struct unwind_entry *env_entry(uint32_t i)
{
	return i < nslots ? &slots[i] : NULL;
}

#define UNW_INLINE inline
#define UNW_READ_U64(st, addr, dstp) env_read((addr), (dstp))
#define UNW_MAPPING(st, idx) ((const struct unwind_mapping *)NULL)
#define UNW_ENTRY(st, idx) env_entry(idx)
#define UNW_EMIT(st, word) 1
#include "bpf/unwind_step.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The entry a linear scan finds for rel: the last with pc <= rel, or -1. */
static long linear(uint32_t count, uint64_t rel)
{
	long i, found = -1;

	for (i = 0; i < (long)count; i++) {
		if (slots[i].pc <= rel)
			found = i;
		else
			break;
	}
	return found;
}

/* Look rel up with the index (shift/nb) and without, against the linear scan. The step's
 * search returns NULL past the last bucket (the closing UNW_INVALID entry holds those
 * addresses): both mean "no rule". */
static void check_rel(const struct unwind_mapping *with, const struct unwind_mapping *without,
		      uint32_t count, uint64_t rel)
{
	struct unw_state st;
	const struct unwind_entry *a, *b;
	uint32_t ia = 0, ib = 0;
	long want = linear(count, rel);

	memset(&st, 0, sizeof(st));
	a = unwind_find_entry(&st, with, rel, &ia);
	b = unwind_find_entry(&st, without, rel, &ib);
	if (want < 0 || rel > 0xffffffffULL) {
		/* below the table, or beyond what a table-relative pc can be */
		CHECK(a == NULL);
		CHECK(b == NULL);
		return;
	}
	CHECK(b != NULL);
	if (!b)
		return;
	CHECK_EQ_INT((long)ib, want);
	if (want == (long)count - 1) {
		/* the last entry: found, or past the index (same meaning) */
		CHECK(a == NULL || (long)ia == want);
		return;
	}
	CHECK(a != NULL);
	if (a)
		CHECK_EQ_INT((long)ia, want);
}

/* A table of count entries: pcs strictly increasing from 0 with gaps drawn by gap(). */
static void check_table(uint32_t count, uint64_t (*gap)(uint32_t i), const char *what)
{
	struct unwind_mapping with, without;
	uint32_t i, nb = 0, k;
	uint8_t shift = 0;
	uint64_t pc = 0;

	memset(slots, 0xee, sizeof(slots));
	for (i = 0; i < count; i++) {
		slots[i].pc = (uint32_t)pc;
		slots[i].kind = i + 1 == count ? UNW_INVALID : UNW_CFA_RSP;
		slots[i].off = (uint16_t)i;
		pc += gap(i);
		if (pc > 0xffffffffULL)
			pc = 0xffffffffULL;
	}
	unwind_table_index(slots, count, &shift, &nb);
	nslots = count + UNW_INDEX_SLOTS(count);
	if (count >= UNW_INDEX_MIN_ENTRIES) {
		CHECK(shift != 0);
		CHECK(nb >= 2 && nb <= UNW_INDEX_WORDS(count));
	} else {
		CHECK_EQ_INT(shift, 0);
		CHECK_EQ_INT(nb, 0);
	}
	memset(&with, 0, sizeof(with));
	with.table_count = count;
	with.index_shift = shift;
	with.index_count = nb;
	without = with;
	without.index_shift = 0;
	without.index_count = 0;
	for (i = 0; i < count; i++) {
		check_rel(&with, &without, count, slots[i].pc);
		if (slots[i].pc)
			check_rel(&with, &without, count, slots[i].pc - 1);
		check_rel(&with, &without, count, (uint64_t)slots[i].pc + 1);
	}
	for (k = 0; k < 20000; k++)
		check_rel(&with, &without, count, next() % ((uint64_t)slots[count - 1].pc + 4096));
	check_rel(&with, &without, count, 0xffffffffULL);
	check_rel(&with, &without, count, 0x100000000ULL);
	if (shift && getenv("TEST_VERBOSE"))
		fprintf(stderr, "  %s: %u entries, %u buckets of %u bytes\n", what, count, nb,
			1u << shift);
}

static uint64_t gap_small(uint32_t i) { (void)i; return 1 + next() % 64; }
static uint64_t gap_one(uint32_t i) { (void)i; return 1; }
static uint64_t gap_mixed(uint32_t i) { return i % 97 == 0 ? 1 + next() % 100000 : 1 + next() % 40; }
static uint64_t gap_huge(uint32_t i) { return i == 3 ? 0xf0000000ULL : 16; }
static uint64_t gap_top(uint32_t i) { (void)i; return 0xffffffffULL / 40; }

static void test_small_tables(void)
{
	uint32_t n;

	for (n = 1; n < 40; n++)
		check_table(n, gap_small, "small");
}

static void test_dense(void)
{
	check_table(UNW_INDEX_MIN_ENTRIES, gap_one, "dense, the smallest indexed");
	check_table(1000, gap_one, "dense");
}

static void test_typical(void)
{
	check_table(5000, gap_small, "typical");
	check_table(MAX_ENTRIES, gap_mixed, "mixed gaps");
}

static void test_far_apart(void)
{
	check_table(500, gap_huge, "one gap of 3.75 GiB");
	check_table(40, gap_top, "last entry near 4 GiB");
}

int main(void)
{
	RUN(test_small_tables);
	RUN(test_dense);
	RUN(test_typical);
	RUN(test_far_apart);
	return test_summary();
}
