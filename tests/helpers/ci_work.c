/* ci_work.c: a fixed amount of CPU work split over a few functions, the program that
 * `scorch diff` is tested and measured on (tests/integration/ci_diff.sh, bench/ci_diff.sh).
 *
 * usage: ci_work [SCALE]   (default 1: about one second of CPU on the base build)
 *
 * main -> run_batch -> parse_input     1 part
 *                   -> hash_records    1 part
 *                   -> checksum        1 part  (2 parts when built with -DCI_WORK_SLOW)
 *                   -> sort_keys       1 part
 *                   -> encode_output   0.5 part
 *
 * The work is a number of iterations, not a time: the slow build does more work in total, as
 * a real regression would, and every run of one build does the same work. The batches
 * interleave the functions so that any stretch of the run has the same mix. */
#include <stdio.h>
#include <stdlib.h>

#ifdef CI_WORK_SLOW
#define CHECKSUM_PARTS 2
#else
#define CHECKSUM_PARTS 1
#endif

/* Iterations of one part in one batch; 100 batches make SCALE 1. */
#define PART 1500000UL

void parse_input(unsigned long n);
void hash_records(unsigned long n);
void checksum(unsigned long n);
void sort_keys(unsigned long n);
void encode_output(unsigned long n);
void run_batch(void);

static volatile unsigned long sink;

__attribute__((noinline)) void parse_input(unsigned long n)
{
	volatile unsigned long x = sink;
	unsigned long i;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void hash_records(unsigned long n)
{
	volatile unsigned long h = sink | 1;
	unsigned long i;

	for (i = 0; i < n; i++)
		h = (h ^ i) * 1099511628211UL;
	sink = h;
}

__attribute__((noinline)) void checksum(unsigned long n)
{
	volatile unsigned long c = sink;
	unsigned long i;

	for (i = 0; i < n; i++)
		c = (c << 1 | c >> 63) + i;
	sink = c;
}

__attribute__((noinline)) void sort_keys(unsigned long n)
{
	/* Fixed inputs: the branch pattern must not depend on what the other functions did. */
	volatile unsigned long a = 0x9e3779b97f4a7c15UL, b = 0x6a09e667f3bcc909UL;
	unsigned long i;

	for (i = 0; i < n / 2; i++) {
		if (a > b)
			a -= b;
		else
			b ^= a + i;
	}
	sink = a ^ b;
}

__attribute__((noinline)) void encode_output(unsigned long n)
{
	volatile unsigned long x = sink;
	unsigned long i;

	for (i = 0; i < n; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

__attribute__((noinline)) void run_batch(void)
{
	parse_input(PART);
	hash_records(PART);
	checksum(PART * CHECKSUM_PARTS);
	sort_keys(PART);
	encode_output(PART / 2);
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	long batches = (long)(scale * 100 + 0.5), i;

	if (argc > 2 || !(scale > 0) || scale > 1000) {
		fprintf(stderr, "usage: ci_work [SCALE]  (SCALE > 0, at most 1000)\n");
		return 2;
	}
	for (i = 0; i < batches; i++)
		run_batch();
	return 0;
}
