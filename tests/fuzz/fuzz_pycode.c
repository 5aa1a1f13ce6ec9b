/* fuzz_pycode.c: the CPython readers on hostile process memory. The input is a memory image
 * (mapped at IMAGE_BASE) preceded by one byte choosing the version: the code-object reader,
 * the line-table decoders, the _Py_DebugOffsets parser and the whole stack walk (runtime at
 * IMAGE_BASE) run on it. Nothing may crash, hang or allocate without bound. */
#include "runtime/python/python_proc.h"
#include "runtime/python/python_code.h"
#include "runtime/procmem.h"
#include "runtime/python/python_offsets.h"
#include "lib/log.h"

#include <stdint.h>
#include <string.h>

#define IMAGE_BASE 0x10000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmem_region region;
	struct procmem_image img = { &region, 1 };
	struct python_code_cache *cc;
	struct python_threads th;
	struct python_proc *p = NULL;
	struct procmem m;
	struct python_code code;
	struct py_offsets off;
	struct errmsg err;
	unsigned minor;
	uint32_t hex;
	size_t i, j;

	if (size < 2)
		return 0;
	minor = 8 + data[0] % 7; /* 3.8 - 3.14 */
	region.addr = IMAGE_BASE;
	region.data = data + 1;
	region.len = size - 1;
	procmem_init_image(&m, &img);

	python_line_lnotab(data, size, 1, data[0]);
	python_line_310(data, size, 1, data[0] * 2u);
	python_line_311(data, size, 1, data[0] * 2u);
	python_offsets_from_debug(data + 1, size - 1, &off, &hex, &err);

	if (python_offsets_builtin(3, minor > 13 ? 13 : minor, &off) == 0) {
		if (minor > 13)
			off.flags |= PY_F_TAGGED_CODE;
		if (python_code_read(&m, &off, NULL, IMAGE_BASE + (data[1] & 0xf8), &code, &err) == 0) {
			for (i = 0; i < 64; i++)
				python_code_line(&code, (uint32_t)(i * 2));
			python_code_release(&code);
		}
	}

	cc = python_code_cache_new(16);
	if (python_proc_open_mem(&m, 0, IMAGE_BASE, 3, minor, &p, &err) == 0) {
		const char *script;

		if (python_proc_walk(p, &th) == 0) {
			for (i = 0; i < th.n; i++)
				for (j = 0; j < th.v[i].nframes; j++) {
					struct python_sym s;

					python_proc_symbolize(p, cc, &th.v[i].frames[j], &s);
				}
			python_threads_release(&th);
		}
		python_proc_script(p, &script);
		python_proc_free(p);
	}
	python_code_cache_free(cc);
	return 0;
}
