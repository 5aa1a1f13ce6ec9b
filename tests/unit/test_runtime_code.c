/* test_runtime_code.c: the helpers runtimes use to find what a stripped interpreter does not
 * export (runtime/code.h) and to reach per-thread state (runtime/tls.h): x86-64 patterns on
 * byte strings, function bounds from .eh_frame_hdr on this test binary, the resolution of TLS
 * GOT slots in a memory image (the live general-dynamic case is test_ruby's, on libruby), and
 * glibc's pthread key layout decoded from the libc this test runs with and checked against
 * what pthread_setspecific() wrote. */
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "lib/log.h"
#include "runtime/code.h"
#include "runtime/procmem.h"
#include "runtime/tls.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int code_probe(int x);
__attribute__((noinline)) int code_probe(int x)
{
	return x * 7 + 3;
}

static void test_branch_targets(void)
{
	/* call +0x10; nop; jmp -0x20 */
	static const uint8_t code[] = { 0xe8, 0x10, 0, 0, 0, 0x90, 0xe9, 0xe0, 0xff, 0xff, 0xff };
	uint64_t t[4];

	CHECK_EQ_INT(code_x86_branch_targets(code, sizeof(code), 0x1000, 0, t, 4), 1);
	CHECK_EQ_INT(t[0], 0x1000 + 5 + 0x10);
	CHECK_EQ_INT(code_x86_branch_targets(code, sizeof(code), 0x1000, 1, t, 4), 2);
	CHECK_EQ_INT(t[1], 0x1000 + 11 - 0x20);
	CHECK_EQ_INT(code_x86_branch_targets(code, 4, 0x1000, 1, t, 4), 0); /* cut short */
}

static void test_riprel(void)
{
	/* cmp %edi,0x1a9e71(%rip); mov 0x1a9e78(%rip),%rdi (libruby's get_id_serial_entry) */
	static const uint8_t code[] = { 0x39, 0x3d, 0x71, 0x9e, 0x1a, 0x00,
					0x72, 0x5f,
					0x48, 0x8b, 0x3d, 0x78, 0x9e, 0x1a, 0x00 };
	static const uint8_t ops[] = { 0x39, 0x3b, 0x8b };
	struct code_riprel r[4];

	CHECK_EQ_INT(code_x86_riprel(code, sizeof(code), 0x207349, ops, 3, r, 4), 2);
	CHECK_EQ_INT(r[0].opcode, 0x39);
	CHECK_EQ_INT(r[0].target, 0x3b11c0);
	CHECK_EQ_INT(r[1].opcode, 0x8b);
	CHECK_EQ_INT(r[1].rex, 0x48);
	CHECK_EQ_INT(r[1].reg, 7); /* rdi */
	CHECK_EQ_INT(r[1].target, 0x3b11d0);
	CHECK_EQ_INT(code_x86_riprel(code, sizeof(code), 0, ops, 1, r, 4), 1);
}

static void test_function_range(void)
{
	struct elf_file *e = NULL;
	uint64_t v, size, lo = 0, hi = 0;
	char self[256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	CHECK(n > 0);
	self[n > 0 ? n : 0] = 0;
	CHECK_EQ_INT(elf_open(self, &e, NULL), 0);
	if (!e)
		return;
	CHECK_EQ_INT(elf_symbols_load(e, NULL), 0);
	CHECK_EQ_INT(elf_find_symbol(e, "code_probe", &v, &size), 0);
	CHECK_EQ_INT(code_function_range(e, v + 1, &lo, &hi), 0);
	CHECK_EQ_INT(lo, v);
	CHECK_EQ_INT(hi, v + size);
	CHECK_EQ_INT(code_function_range(e, 1, &lo, &hi), -ENOENT);
	elf_close(e);
}

static void test_tls_image(void)
{
	/* a DTPMOD64 slot not relocated yet, then relocated to module 3 */
	uint64_t got[2] = { 0, 0 };
	struct procmem_region r = { 0x5000, got, sizeof(got) };
	struct procmem_image img = { &r, 1 };
	struct tls_symbol s = { .value = 8, .got_module = 0x1000 };
	struct procmem m;
	struct rt_tls t;

	procmem_init_image(&m, &img);
	CHECK_EQ_INT(tls_resolve(&m, &s, 0x4000, &t), -EAGAIN);
	got[0] = 3;
	CHECK_EQ_INT(tls_resolve(&m, &s, 0x4000, &t), 0);
	CHECK_EQ_INT(t.mode, RT_TLS_DTV);
	CHECK_EQ_INT(t.module, 3);
	CHECK_EQ_INT(t.offset, 8);
	CHECK_EQ_INT(t.dtv_stride, 16);
	CHECK_EQ_INT(tls_resolve(&m, &s, 0x9000, &t), -EFAULT);
	s.got_module = 0;
	s.got_tpoff = 0x1008;
	got[1] = (uint64_t)-0x80;
	CHECK_EQ_INT(tls_resolve(&m, &s, 0x4000, &t), 0);
	CHECK_EQ_INT(t.mode, RT_TLS_TPOFF);
	CHECK_EQ_INT(t.tpoff, -0x80);
}

static void *key_thread(void *arg)
{
	pthread_key_t *key = arg;
	struct rt_tsd tsd;
	struct procmaps maps = { 0 };
	struct errmsg err = { "" };
	uint64_t tp, v;

	pthread_setspecific(*key, (void *)0x1234);
	if (procmaps_read(0, &maps, NULL) < 0)
		return (void *)1;
	if (tls_tsd_of_process(getpid(), &maps, &tsd, &err) < 0) {
		procmaps_release(&maps);
		return (void *)2;
	}
	procmaps_release(&maps);
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
	if (*key >= tsd.direct)
		return (void *)3;
	memcpy(&v, (const void *)(uintptr_t)(tp + tsd.base + tsd.stride * (uint64_t)*key + tsd.data),
	       sizeof(v));
	return v == 0x1234 ? NULL : (void *)4;
}

static void test_tsd(void)
{
	pthread_key_t key;
	pthread_t th;
	void *res = (void *)9;

	CHECK_EQ_INT(pthread_key_create(&key, NULL), 0);
	CHECK_EQ_INT(pthread_create(&th, NULL, key_thread, &key), 0);
	pthread_join(th, &res);
	CHECK(res == NULL);
	pthread_key_delete(key);
}

/* procmem's block cache: reads inside a cached block come from it (one fetch for many fields),
 * a block that changes after it was read is not seen until the cache ends, reads that span
 * blocks or whose block cannot be read whole go to the reader, and the answers are the same
 * as without the cache. */
static void test_procmem_cache(void)
{
	static unsigned char page[3 * PROCMEM_BLOCK] __attribute__((aligned(4096)));
	static unsigned char small[64];
	struct procmem_region r[2] = { { 0x10000, page, sizeof(page) }, { 0x90000 + 8, small, 40 } };
	struct procmem_image img = { r, 2 };
	struct procmem m, self;
	uint64_t v, w;
	unsigned char span[16];
	size_t i;

	for (i = 0; i < sizeof(page); i++)
		page[i] = (unsigned char)(i * 7 + 1);
	procmem_init_image(&m, &img);
	procmem_cache_begin(&m);
	CHECK(procmem_u64(&m, 0x10000 + 8, &v) == 0);
	CHECK(memcmp(&v, page + 8, 8) == 0);
	CHECK(procmem_u64(&m, 0x10000 + 800, &w) == 0);
	CHECK(memcmp(&w, page + 800, 8) == 0);
	CHECK(m.reads == 2 && m.fetches == 1);
	/* the cache holds what was read: a change shows only after the cache ends */
	page[8] ^= 0xff;
	CHECK(procmem_u64(&m, 0x10000 + 8, &w) == 0 && w == v);
	/* across two blocks: straight to the reader, and right */
	CHECK(procmem_read(&m, 0x10000 + PROCMEM_BLOCK - 8, span, sizeof(span)) == 0);
	CHECK(memcmp(span, page + PROCMEM_BLOCK - 8, sizeof(span)) == 0);
	/* a region smaller than a block: the block read fails, the field read does not */
	CHECK(procmem_u64(&m, 0x90000 + 16, &w) == 0 && memcmp(&w, small + 8, 8) == 0);
	CHECK(procmem_u64(&m, 0x90000 + 64, &w) < 0);
	/* more blocks than slots: the oldest go, every answer stays right */
	for (i = 0; i < 3 * PROCMEM_BLOCKS; i++) {
		uint64_t a = 0x10000 + (i % 3) * PROCMEM_BLOCK + (i * 40) % (PROCMEM_BLOCK - 8);

		CHECK(procmem_u64(&m, a, &w) == 0 && memcmp(&w, page + (a - 0x10000), 8) == 0);
	}
	procmem_cache_begin(&m); /* nested: the inner end keeps the blocks */
	procmem_cache_end(&m);
	CHECK(m.blocks != NULL);
	procmem_cache_end(&m);
	CHECK(m.blocks == NULL);
	CHECK(procmem_u64(&m, 0x10000 + 8, &w) == 0 && w != v);
	procmem_cache_end(&m); /* unbalanced: a no-op */

	/* this process, through process_vm_readv */
	procmem_init_pid(&self, getpid());
	procmem_cache_begin(&self);
	for (i = 0; i + 8 <= sizeof(page); i += 64) {
		CHECK(procmem_u64(&self, (uint64_t)(uintptr_t)(page + i), &w) == 0);
		CHECK(memcmp(&w, page + i, 8) == 0);
	}
	CHECK(self.fetches <= 4);
	procmem_cache_end(&self);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_branch_targets);
	RUN(test_riprel);
	RUN(test_function_range);
	RUN(test_tls_image);
	RUN(test_tsd);
	RUN(test_procmem_cache);
	return test_summary();
}
