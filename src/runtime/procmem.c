/* procmem.c: process and memory-image readers for the runtimes (procmem.h). */
#include "runtime/procmem.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>


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
	m->read = read_pid;
	m->ctx = (void *)(intptr_t)pid;
	m->reads = 0;
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
	m->read = read_image;
	m->ctx = img;
	m->reads = 0;
}

int procmem_read(struct procmem *m, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	if (len > PROCMEM_MAX_READ || addr == 0 || addr + len < addr)
		return -EFAULT;
	m->reads++;
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
