/* mem_image.h: a process memory image the unit tests lay out by hand (an interpreter's
 * structures at the addresses a live process would have them), read back through procmem's
 * region source. Header-only, included by test_ruby.c, test_php.c and test_perl.c. */
#ifndef SCORCH_TEST_MEM_IMAGE_H
#define SCORCH_TEST_MEM_IMAGE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mem_image {
	uint8_t *mem;   /* the bytes of [base, base + cap) */
	uint64_t base;  /* the address of mem[0] */
	size_t used, cap;
};

/* n bytes (16-aligned) at the next free address; aborts when the image is full. */
static inline uint64_t mem_image_alloc(struct mem_image *m, size_t n)
{
	uint64_t a = m->base + m->used;

	m->used += (n + 15) & ~(size_t)15;
	if (m->used > m->cap)
		abort();
	return a;
}

static inline void mem_image_put(struct mem_image *m, uint64_t addr, const void *p, size_t n)
{
	memcpy(m->mem + (addr - m->base), p, n);
}

static inline void mem_image_put64(struct mem_image *m, uint64_t addr, uint64_t v)
{
	mem_image_put(m, addr, &v, 8);
}

static inline void mem_image_put32(struct mem_image *m, uint64_t addr, uint32_t v)
{
	mem_image_put(m, addr, &v, 4);
}

#endif
