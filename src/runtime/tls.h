/* tls.h: finding an interpreter's per-thread state, user-space side (the BPF side and the
 * layouts: runtime/rt_tls.h, runtime/tls.bpf.h).
 *
 *   tls_symbol_find()  what a file says about one of its thread-local variables: its offset
 *                      in the module's TLS block and the GOT slots the dynamic loader fills
 *                      for it (R_X86_64_DTPMOD64: general dynamic; R_X86_64_TPOFF64: initial
 *                      exec). Once per file.
 *   tls_resolve()      in a process: read those GOT slots (the module id, or the offset from
 *                      the thread pointer) and fill the BPF descriptor. The loader relocates
 *                      a library before its code runs, so a process caught at its exec may
 *                      not be relocated yet: -EAGAIN, try again later.
 *   tls_tsd_decode()   where glibc keeps pthread keys: decoded from the code of the libc's
 *                      own pthread_getspecific (cached per libc file by tls_tsd_of_process()).
 *
 * Ownership: nothing is kept but the small cache of tls_tsd_of_process(), freed at exit of the
 * program (it holds one entry per distinct libc). Not thread-safe. */
#ifndef SCORCH_RUNTIME_TLS_H
#define SCORCH_RUNTIME_TLS_H

#include <linux/types.h>
#include <stdint.h>

#include "runtime/rt_tls.h"

struct elf_file;
struct errmsg;
struct procmaps;
struct procmem;

struct tls_symbol {
	uint64_t value;      /* st_value: offset of the variable in the module's TLS block */
	uint64_t got_module; /* link-time address of its DTPMOD64 GOT slot, or 0 */
	uint64_t got_tpoff;  /* link-time address of its TPOFF64 GOT slot, or 0 */
};

/* The thread-local variable `name` of e (.dynsym, else .symtab) and its relocations: 0, or
 * -ENOENT (no such TLS symbol, or no relocation tells how to reach it), -EIO. */
int tls_symbol_find(struct elf_file *e, const char *name, struct tls_symbol *out);

/* Fill out for the process read by m, where the file of s is loaded with bias: 0, -EAGAIN (the
 * GOT is not relocated yet), -EFAULT (unreadable). */
int tls_resolve(struct procmem *m, const struct tls_symbol *s, uint64_t bias, struct rt_tls *out);

/* glibc's pthread key layout from libc's pthread_getspecific: 0, -ENOENT (not the code we
 * know: musl, another glibc), -EIO. */
int tls_tsd_decode(struct elf_file *libc, struct rt_tsd *out);

/* The same for the libc mapped by process pid (maps: its executable mappings, as the process
 * registry keeps them): cached by file identity. 0, -ENOENT (no libc.so.6 mapped, or not
 * decodable: err says which), -ESRCH. */
int tls_tsd_of_process(int pid, const struct procmaps *maps, struct rt_tsd *out,
		       struct errmsg *err);

#endif
