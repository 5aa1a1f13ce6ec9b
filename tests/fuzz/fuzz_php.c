/* fuzz_php.c: the PHP readers on hostile process memory. The input is one byte choosing the
 * version (7.4, 8.0 - 8.3) and a memory image mapped at IMAGE_BASE whose first word is the
 * address of executor_globals (tests/unit/test_php.c writes such images as seeds). The offset
 * check, the walk of the execute_data chain, the symbolization of every frame it gives
 * (functions, classes, file names), the script label and the x86 decoders run on it. Nothing
 * may crash, hang or allocate without bound. */
#include <linux/types.h>

#include "lib/log.h"
#include "runtime/php/php_proc.h"
#include "runtime/procmem.h"

#include <stdint.h>
#include <string.h>

#define IMAGE_BASE 0x7f0000200000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned versions[5][2] = { { 7, 4 }, { 8, 0 }, { 8, 1 }, { 8, 2 }, { 8, 3 } };
	struct procmem_region region;
	struct procmem_image img = { &region, 1 };
	struct php_process *p = NULL;
	struct php_cache *cache;
	struct procmem m;
	struct errmsg err;
	uint64_t eg, words[256];
	const char *script;
	char buf[PHP_NAME_MAX];
	int n, i;
	unsigned v;

	if (size < 9)
		return 0;
	log_set_level(LOG_ERROR);
	php_decode_jit_return(data, size, 0x1000);
	php_decode_vm_kind_hybrid(data, size);
	memcpy(&eg, data + 1, 8);
	region.addr = IMAGE_BASE;
	region.data = data + 1;
	region.len = size - 1;
	procmem_init_image(&m, &img);
	v = data[0] % 5;
	if (php_proc_open_mem(&m, versions[v][0], versions[v][1], eg, &p, &err) < 0)
		return 0;
	cache = php_cache_new(16);
	php_proc_validate(p, &err);
	n = php_proc_walk(p, words, 256, 1);
	for (i = 0; i + 1 < n; i++)
		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_PHP_FUNC)
			php_cache_get(cache, 1, words[i] & FW_DATA_MASK,
				      (uint32_t)(words[i + 1] >> 32) & 0xffff,
				      (uint32_t)(words[i + 1] >> 48) & 0xff, php_proc_mem(p),
				      php_proc_offsets(p));
	for (i = 0; i + 8 <= (int)(size - 1) && i < 4096; i += 32) {
		uint64_t a;
		struct php_func f;

		memcpy(&a, data + 1 + i, 8);
		php_read_zstr(php_proc_mem(p), php_proc_offsets(p), a, buf, sizeof(buf));
		if (php_func_read(php_proc_mem(p), php_proc_offsets(p), a, data[0], &f) == 0)
			php_func_release(&f);
	}
	php_proc_script(p, &script);
	php_cache_free(cache);
	php_proc_free(p);
	return 0;
}
