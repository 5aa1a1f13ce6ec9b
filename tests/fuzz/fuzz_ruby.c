/* fuzz_ruby.c: the CRuby readers on hostile process memory. The input is one byte choosing the
 * version (3.1 - 3.4) and a memory image mapped at IMAGE_BASE whose first two words are the
 * addresses of ruby_single_main_ractor and ruby_global_symbols (tests/unit/test_ruby.c writes
 * such images as seeds). The offset check, the walk of the running execution context, the
 * symbolization of every frame word it gives (iseqs, line tables, method entries, class paths,
 * symbols), the script label and the succinct line index run on it. Nothing may crash, hang or
 * allocate without bound. */
#include <linux/types.h>

#include "lib/log.h"
#include "runtime/procmem.h"
#include "runtime/ruby/ruby_proc.h"
#include "runtime/ruby/ruby_sym.h"

#include <stdint.h>
#include <string.h>

#define IMAGE_BASE 0x7f0000100000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmem_region region;
	struct procmem_image img = { &region, 1 };
	struct ruby_proc *p = NULL;
	struct ruby_cache *cache;
	struct procmem m;
	struct errmsg err;
	uint64_t var, symbols, ec = 0, words[512];
	char buf[RUBY_NAME_MAX];
	int n, i, singleton;

	if (size < 17)
		return 0;
	log_set_level(LOG_ERROR);
	memcpy(&var, data + 1, 8);
	memcpy(&symbols, data + 9, 8);
	region.addr = IMAGE_BASE;
	region.data = data + 1;
	region.len = size - 1;
	procmem_init_image(&m, &img);
	ruby_succ_lookup(data + 1, size - 1, data[0] * 7u);
	if (ruby_proc_open_mem(&m, 3, 1 + (data[0] + 3) % 4, var, symbols, &p, &err) < 0)
		return 0;
	cache = ruby_cache_new(32);
	ruby_proc_validate(p, &err);
	if (ruby_proc_running_ec(p, &ec) == 0) {
		n = ruby_proc_walk_ec(p, ec, words, 512, 1);
		for (i = 0; i + 1 < n; i++) {
			uint64_t t = words[i] >> FW_TAG_SHIFT, a = words[i] & FW_DATA_MASK;
			uint32_t cks = (uint32_t)(words[i + 1] >> 32) & 0xffffff;
			const struct ruby_iseq *is;
			const struct ruby_cme *cme;

			if (t == FW_TAG_RUBY_ISEQ) {
				is = ruby_cache_iseq(cache, 1, a, cks, ruby_proc_mem(p));
				if (is) {
					ruby_iseq_line(is, (uint32_t)words[i + 1]);
					ruby_iseq_line(is, (uint32_t)words[i + 1] * 977u);
					ruby_frame_name(is, NULL, buf, sizeof(buf));
				}
			} else if (t == FW_TAG_RUBY_CFUNC || t == FW_TAG_RUBY_CME) {
				cme = ruby_cache_cme(cache, 1, a & 0xffffffffffffULL, cks, 0xffffff,
						     ruby_proc_mem(p));
				if (cme)
					ruby_frame_name(NULL, cme, buf, sizeof(buf));
			}
		}
	}
	/* every word of the image as an object of each kind */
	for (i = 0; i + 8 <= (int)(size - 1) && i < 4096; i += 64) {
		uint64_t v;

		memcpy(&v, data + 1 + i, 8);
		ruby_read_str(ruby_proc_mem(p), v, buf, sizeof(buf));
		ruby_class_path(ruby_proc_mem(p), v, buf, sizeof(buf), &singleton);
		ruby_id2str(ruby_proc_mem(p), v, buf, sizeof(buf));
	}
	{
		const char *script;

		ruby_proc_script(p, &script);
	}
	ruby_cache_free(cache);
	ruby_proc_free(p);
	return 0;
}
