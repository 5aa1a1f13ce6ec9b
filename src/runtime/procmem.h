/* procmem.h: reading another process's memory for the runtimes' user-space readers (CPython
 * code objects, HotSpot vmStructs, ...), behind a small interface so that tests and fuzzers can
 * hand them a memory image instead of a process.
 *
 * Every read is bounded (PROCMEM_MAX_READ and the caller's length) and may fail (the target runs
 * on, unmaps memory, exits); a failed read returns a negative errno and never a partial result.
 * Process memory is hostile input: readers built on this must check every pointer and size
 * they get from it, and have a fuzz target that feeds them images (tests/fuzz/). */
#ifndef SCORCH_RUNTIME_PROCMEM_H
#define SCORCH_RUNTIME_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCMEM_MAX_READ (1u << 20) /* larger reads are refused: no reader needs more */

struct procmem {
	/* Read len bytes at addr into buf: 0, or a negative errno. */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
	uint64_t reads; /* counter, for statistics */
};

/* A reader of process pid through process_vm_readv. ctx holds the pid; nothing to free. */
void procmem_init_pid(struct procmem *m, pid_t pid);

/* A reader of a memory image: a list of regions (address, bytes). The regions are not copied:
 * they must outlive the reader. */
struct procmem_region {
	uint64_t addr;
	const void *data;
	size_t len;
};
struct procmem_image {
	const struct procmem_region *regions;
	size_t nregions;
};
void procmem_init_image(struct procmem *m, struct procmem_image *img);

int procmem_read(struct procmem *m, uint64_t addr, void *buf, size_t len);
int procmem_u64(struct procmem *m, uint64_t addr, uint64_t *out);
int procmem_u32(struct procmem *m, uint64_t addr, uint32_t *out);

#endif
