/* python_mem.h: reading another process's memory for the CPython readers, behind a small
 * interface so that tests and fuzzers can hand them a memory image instead of a process.
 *
 * Every read is bounded by the caller's length and may fail (the target runs on, unmaps memory,
 * exits); a failed read returns -EFAULT and never a partial result. */
#ifndef SCORCH_AGENT_PYTHON_MEM_H
#define SCORCH_AGENT_PYTHON_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct python_mem {
	/* Read len bytes at addr into buf: 0, or a negative errno. */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
	uint64_t reads; /* counter, for statistics */
};

/* A reader of process pid through process_vm_readv. ctx holds the pid; nothing to free. */
void python_mem_init_pid(struct python_mem *m, pid_t pid);

/* A reader of a memory image: a list of regions (address, bytes). The regions are not copied:
 * they must outlive the reader. */
struct python_mem_region {
	uint64_t addr;
	const void *data;
	size_t len;
};
struct python_mem_image {
	const struct python_mem_region *regions;
	size_t nregions;
};
void python_mem_init_image(struct python_mem *m, struct python_mem_image *img);

int python_mem_read(struct python_mem *m, uint64_t addr, void *buf, size_t len);
int python_mem_u64(struct python_mem *m, uint64_t addr, uint64_t *out);
int python_mem_u32(struct python_mem *m, uint64_t addr, uint32_t *out);

#endif
