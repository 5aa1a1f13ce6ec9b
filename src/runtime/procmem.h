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

struct procmem_blocks;

struct procmem {
	/* Read len bytes at addr into buf: 0, or a negative errno. */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
	uint64_t reads;   /* counter, for statistics: reads asked for */
	uint64_t fetches; /* reads that went to the reader (all of them when not cached) */
	struct procmem_blocks *blocks; /* procmem_cache_begin() .. _end(), else NULL */
	unsigned cache_depth;
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

/* A walk that reads many small fields close to each other (a thread's frames, a code object's
 * fields) can have them served from whole aligned blocks read once (PROCMEM_BLOCK bytes, a few
 * of them, least recently read replaced first), one system call per block instead of one per
 * field, until procmem_cache_end(). Calls nest; the outermost end drops the blocks. What the
 * walk reads is then what the blocks held when they were read: use it only for a walk that
 * checks what it reads anyway (every reader here does), never across walks. A read that spans
 * two blocks, or whose block cannot be read whole (at the end of a mapping, a small memory
 * image), goes to the reader as it would without the cache. */
#define PROCMEM_BLOCK 4096u
#define PROCMEM_BLOCKS 8u
void procmem_cache_begin(struct procmem *m);
void procmem_cache_end(struct procmem *m);

int procmem_read(struct procmem *m, uint64_t addr, void *buf, size_t len);
int procmem_u64(struct procmem *m, uint64_t addr, uint64_t *out);
int procmem_u32(struct procmem *m, uint64_t addr, uint32_t *out);

#endif
