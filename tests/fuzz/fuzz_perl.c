/* fuzz_perl.c: the Perl readers on hostile process memory. The input is one byte choosing the
 * version (5.28 - 5.42; odd bytes: a non-threaded layout) and a memory image mapped at
 * IMAGE_BASE whose first three words are the addresses of PL_curinterp, PL_curcop and
 * PL_curstackinfo (tests/unit/test_perl.c writes such images as seeds). The offset check, the
 * context walk, the names of every sub and statement it gives and the script label run on it.
 * Nothing may crash, hang or allocate without bound. */
#include <linux/types.h>

#include "lib/log.h"
#include "runtime/perl/perl_proc.h"
#include "runtime/procmem.h"

#include <stdint.h>
#include <string.h>

#define IMAGE_BASE 0x7f0000300000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmem_region region;
	struct procmem_image img = { &region, 1 };
	struct perl_process *p = NULL;
	struct perl_cache *cache;
	struct procmem m;
	struct errmsg err;
	uint64_t hdr[3], words[256];
	const char *script;
	unsigned minor;
	int n, i;

	if (size < 25)
		return 0;
	log_set_level(LOG_ERROR);
	memcpy(hdr, data + 1, sizeof(hdr));
	region.addr = IMAGE_BASE;
	region.data = data + 1;
	region.len = size - 1;
	procmem_init_image(&m, &img);
	minor = 28 + data[0] % 15;
	if (perl_proc_open_mem(&m, minor, hdr[1] || hdr[2] ? 0 : hdr[0], hdr[1], hdr[2], &p,
			       &err) < 0)
		return 0;
	cache = perl_cache_new(16);
	perl_proc_validate(p, &err);
	n = perl_proc_walk(p, words, 256, 1);
	for (i = 0; i + 1 < n; i++)
		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_PERL_SUB) {
			perl_cache_sub(cache, 1, words[i] & FW_DATA_MASK, perl_proc_mem(p),
				       perl_proc_offsets(p));
			perl_cache_cop(cache, 1, words[i + 1] & PERL_ADDR_MASK,
				       (uint32_t)(words[i + 1] >> 48) & 0xff, perl_proc_mem(p),
				       perl_proc_offsets(p));
		}
	for (i = 0; i + 8 <= (int)(size - 1) && i < 4096; i += 32) {
		uint64_t a;
		struct perl_sub s;
		struct perl_cop c;

		memcpy(&a, data + 1 + i, 8);
		if (perl_sub_read(perl_proc_mem(p), perl_proc_offsets(p),
				  a | ((i & 32) ? PERL_SUB_NAMED_CV : 0), &s) == 0)
			perl_sub_release(&s);
		if (perl_cop_read(perl_proc_mem(p), perl_proc_offsets(p), a, &c) == 0)
			perl_cop_release(&c);
	}
	perl_proc_script(p, &script);
	perl_cache_free(cache);
	perl_proc_free(p);
	return 0;
}
