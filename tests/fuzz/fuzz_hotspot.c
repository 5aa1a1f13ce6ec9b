/* fuzz_hotspot.c: the HotSpot readers on hostile JVM memory: the vmStructs/vmTypes reader, the
 * code cache, the frame step (the BPF walker's, compiled for user space), methods, nmethod
 * scopes, line tables and stub names through the symbolization cache; Java thread names (the
 * flags, classes and field info, the thread list, the thread and String objects, the cache by
 * thread id).
 *
 * The input mutates a made-up JVM (tests/unit/hotspot_image.h), so that the fuzzer starts from
 * memory the readers accept and gets deep:
 *   byte 0      the dialect (JDK 11, 17, 21)
 *   byte 1      bit 0: the rest is raw bytes laid over libjvm's tables instead of edits
 *   then        edits of 4 bytes: region (0 tables, 1 metadata, 2 code, 3 segment map,
 *               4 stack), offset (16 bits, little endian), value
 * The decoders also run over the raw input. Nothing may crash, hang or allocate without
 * bound. */
#include "lib/log.h"
#include "runtime/hotspot/hotspot_code.h"
#include "runtime/hotspot/hotspot_threads.h"
#include "runtime/hotspot/hotspot_vm.h"
#include "runtime/hotspot/hotspot_walk.h"
#include "runtime/procmem.h"

#include "../unit/hotspot_image.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem_read(ctx, addr, buf, len);
}

/* The thread readers: each listed thread's name, then the cache over the same threads and
 * ids nobody has, across a rename interval. */
static void fuzz_threads(struct procmem *m, const struct hotspot_vm *vm)
{
	struct hotspot_jthread list[16];
	struct hotspot_jenv env;
	struct hotspot_threads *t;
	char name[HOTSPOT_THREAD_NAME_MAX];
	size_t n = 0, i;

	if (hotspot_jenv_read(m, vm, &env, NULL) == 0 &&
	    hotspot_jthreads_list(m, vm, list, 16, &n) == 0)
		for (i = 0; i < n; i++)
			hotspot_jthread_name(m, vm, &env, list[i].jt, list[i].tid, name, sizeof(name));
	t = hotspot_threads_new();
	for (i = 0; i < 8; i++)
		hotspot_threads_name(t, m, vm, (int32_t)(HSIMG_TID + i % 4), 1 + i * 400000000ULL);
	hotspot_threads_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t lens[5] = { HSIMG_TAB_LEN, HSIMG_META_LEN, HSIMG_CODE_LEN,
					HSIMG_SEGM_LEN, HSIMG_STACK_LEN };
	struct hotspot_line lines[64];
	struct hsimg im;
	struct procmem m;
	struct hotspot_vm vm;
	struct errmsg err;
	struct hotspot_cache *hc;
	struct hotspot_sym syms[HOTSPOT_MAX_INLINE];
	uint64_t w[256], pc, sp, bp;
	enum hotspot_walk_end end;
	size_t i, n, pos = 0;
	uint32_t v;
	char cmd[64];

	if (size < 2)
		return 0;
	hotspot_line_table(data, size, data[0] & 1, lines, 64, &n);
	hotspot_string_utf8(data, size, data[0] & 1, cmd, sizeof(cmd));
	while (pos < size && hotspot_unsigned5(data, size, &pos, data[0] & 1, &v) == 0)
		;

	hsimg_build(&im, (enum hsimg_dialect)(data[0] % HSIMG__COUNT));
	if (data[1] & 1) {
		/* raw bytes over the tables, after the exported variables' page */
		n = size - 2 < HSIMG_TAB_LEN - 0x1000 ? size - 2 : HSIMG_TAB_LEN - 0x1000;
		memcpy(im.tab + 0x1000, data + 2, n);
	} else {
		uint8_t *bases[5] = { im.tab, im.meta, im.code, im.segm, im.stack };

		for (i = 2; i + 4 <= size; i += 4) {
			unsigned r = data[i] % 5;
			size_t off = (size_t)(data[i + 1] | data[i + 2] << 8) % lens[r];

			bases[r][off] = data[i + 3];
		}
	}
	procmem_init_image(&m, &im.img);
	hc = hotspot_cache_new(64);
	if (hotspot_vm_read(&m, &im.file, 0, &vm, &err) == 0) {
		hotspot_vm_java_command(&m, &vm, cmd, sizeof(cmd));
		fuzz_threads(&m, &vm);
		if (hotspot_vm_code_cache(&m, &vm, &err) == 0) {
			pc = im.pc;
			sp = im.sp;
			bp = im.bp;
			n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 256, &end);
			/* the same from a pc of the input, as a return address */
			if (size >= 10) {
				uint64_t pc2 = HSIMG_CODE + (uint64_t)(data[size - 1] | data[size - 2] << 8);

				pc = pc2;
				sp = im.sp;
				bp = im.bp;
				n += hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 1, w + n,
						  256 - n, &end);
			}
			for (i = 0; i + 1 < n; i++)
				hotspot_cache_frames(hc, 1, &m, &vm, w[i], w[i + 1], syms,
						     HOTSPOT_MAX_INLINE);
			/* a second pass only from the cache, as for an exited process */
			for (i = 0; i + 1 < n; i++)
				hotspot_cache_frames(hc, 1, NULL, NULL, w[i], w[i + 1], syms, 4);
		}
		hotspot_vm_release(&vm);
	}
	hotspot_cache_free(hc);
	hsimg_free(&im);
	return 0;
}
