/* minidebug.h: MiniDebugInfo, the .gnu_debugdata section: an xz-compressed ELF file that holds
 * the .symtab a stripped binary lost (the functions that .dynsym does not export), as Fedora,
 * RHEL and others ship their packages (gdb, systemd-coredump and perf read it too).
 *
 * The section is decompressed with liblzma, bounded (MINIDEBUG_MAX_BYTES out, a ratio to the
 * compressed size, a decoder memory limit) and opened as an in-memory ELF (elf_open_mem()),
 * whose symbols elf_symbols_load() reads like any other.
 *
 * Ownership: minidebug_open() gives a new elf_file the caller closes; minidebug_decompress()
 * a buffer the caller frees with xfree(). */
#ifndef SCORCH_AGENT_MINIDEBUG_H
#define SCORCH_AGENT_MINIDEBUG_H

#include <stddef.h>

struct elf_file;
struct errmsg;

#define MINIDEBUG_MAX_BYTES (64u << 20)   /* decompressed */
#define MINIDEBUG_MAX_RATIO 1100u         /* decompressed : compressed */
#define MINIDEBUG_MEMLIMIT (64ull << 20)  /* liblzma decoder memory */

/* Decompress an xz stream of len bytes into a new buffer of at most max bytes. 0, -EINVAL
 * (not xz, corrupt, truncated), -E2BIG (over max or the ratio), -ENOMEM; message in err. */
int minidebug_decompress(const void *xz, size_t len, size_t max, void **out, size_t *out_len,
			 struct errmsg *err);

/* The embedded ELF of e's .gnu_debugdata: 0 and a new elf_file in *out, -ENOENT when e has no
 * such section, another negative errno (message in err) when it cannot be used. */
int minidebug_open(struct elf_file *e, struct elf_file **out, struct errmsg *err);

#endif
