/* fuzz_gopclntab.c: libFuzzer target for the .gopclntab reader (src/agent/gopclntab.c): the
 * input is an ELF image (corpus: tests/fuzz/gen_gopclntab.py's files of every layout); find
 * and index the table, look up pcs across its text range and around it, walk every
 * stack-pointer delta table. */
#include "agent/elf.h"
#include "agent/gopclntab.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ctx, uint64_t lo, uint64_t hi, int32_t d)
{
	size_t *n = ctx;

	(void)lo;
	(void)hi;
	(void)d;
	return ++*n > 100000; /* bounded walk */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_file *e = NULL;
	struct gopclntab *g = NULL;
	struct gopclntab_frame fr[GOPCLNTAB_MAX_INLINE + 1];
	uint64_t lo, hi, pc, step, entry;
	size_t n = 0, i;

	if (elf_open_mem(data, size, &e, NULL) < 0)
		return 0;
	if (gopclntab_open(e, &g, NULL) == 0) {
		gopclntab_text_range(g, &lo, &hi);
		step = hi > lo && (hi - lo) / 64 ? (hi - lo) / 64 : 1;
		for (pc = lo - (lo > 16 ? 16 : lo), i = 0; i < 80; pc += step, i++) {
			size_t k = gopclntab_lookup(g, pc, fr, sizeof(fr) / sizeof(fr[0]), &entry), j;

			for (j = 0; j < k; j++)
				(void)fr[j].name[0];
		}
		gopclntab_lookup(g, hi, fr, 1, NULL);
		gopclntab_sp_deltas(g, count, &n);
		gopclntab_free(g);
	}
	elf_close(e);
	return 0;
}
