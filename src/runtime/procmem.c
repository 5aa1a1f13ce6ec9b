/* procmem.c: process and memory-image readers for the runtimes (procmem.h). */
#include "runtime/procmem.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>

#include "lib/alloc.h"

struct procmem_blocks {
	uint64_t addr[PROCMEM_BLOCKS]; /* block start; 0: empty */
	uint64_t used[PROCMEM_BLOCKS]; /* when last read, for replacement */
	uint64_t clock;
	unsigned char data[PROCMEM_BLOCKS][PROCMEM_BLOCK];
};


static int read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(intptr_t)ctx;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

void procmem_init_pid(struct procmem *m, pid_t pid)
{
	memset(m, 0, sizeof(*m));
	m->read = read_pid;
	m->ctx = (void *)(intptr_t)pid;
}

static int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct procmem_image *img = ctx;
	size_t i;

	for (i = 0; i < img->nregions; i++) {
		const struct procmem_region *r = &img->regions[i];

		if (addr >= r->addr && addr - r->addr <= r->len && len <= r->len - (addr - r->addr)) {
			memcpy(buf, (const char *)r->data + (addr - r->addr), len);
			return 0;
		}
	}
	return -EFAULT;
}

void procmem_init_image(struct procmem *m, struct procmem_image *img)
{
	memset(m, 0, sizeof(*m));
	m->read = read_image;
	m->ctx = img;
}

void procmem_cache_begin(struct procmem *m)
{
	if (m->cache_depth++ == 0 && !m->blocks) {
		m->blocks = xmalloc(sizeof(*m->blocks));
		memset(m->blocks, 0, offsetof(struct procmem_blocks, data));
	}
}

void procmem_cache_end(struct procmem *m)
{
	if (!m->cache_depth || --m->cache_depth)
		return;
	xfree(m->blocks);
	m->blocks = NULL;
}

/* The read from the cached blocks: 0, or 1 when it must go to the reader. */
static int read_cached(struct procmem *m, uint64_t addr, void *buf, size_t len)
{
	struct procmem_blocks *b = m->blocks;
	uint64_t start = addr & ~(uint64_t)(PROCMEM_BLOCK - 1);
	unsigned i, victim = 0;

	if (!start || addr - start + len > PROCMEM_BLOCK)
		return 1;
	for (i = 0; i < PROCMEM_BLOCKS; i++) {
		if (b->addr[i] == start) {
			b->used[i] = ++b->clock;
			memcpy(buf, b->data[i] + (addr - start), len);
			return 0;
		}
		if (b->used[i] < b->used[victim])
			victim = i;
	}
	m->fetches++;
	if (m->read(m->ctx, start, b->data[victim], PROCMEM_BLOCK)) {
		b->addr[victim] = 0;
		b->used[victim] = 0;
		return 1;
	}
	b->addr[victim] = start;
	b->used[victim] = ++b->clock;
	memcpy(buf, b->data[victim] + (addr - start), len);
	return 0;
}

int procmem_read(struct procmem *m, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	if (len > PROCMEM_MAX_READ || addr == 0 || addr + len < addr)
		return -EFAULT;
	m->reads++;
	if (m->blocks && read_cached(m, addr, buf, len) == 0)
		return 0;
	m->fetches++;
	return m->read(m->ctx, addr, buf, len);
}

int procmem_u64(struct procmem *m, uint64_t addr, uint64_t *out)
{
	return procmem_read(m, addr, out, sizeof(*out));
}

int procmem_u32(struct procmem *m, uint64_t addr, uint32_t *out)
{
	return procmem_read(m, addr, out, sizeof(*out));
}
