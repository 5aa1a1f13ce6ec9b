/* rt_tls.h: the contract between user space (runtime/tls.c finds the values) and the BPF
 * walkers (runtime/tls.bpf.h reads with them) for per-thread state of an interpreter: an ELF
 * thread-local variable (Ruby's ruby_current_ec) and a pthread key (Perl's PL_thr_key). Only
 * fixed-size types; included by both sides.
 *
 * THREAD-LOCAL VARIABLES (x86-64, variant II: the thread pointer is the fs base). Where a
 * variable of a shared library lives depends on how the library reaches it:
 *   RT_TLS_TPOFF  an initial-exec access (R_X86_64_TPOFF64 in the GOT): the variable is at
 *                 fsbase + tpoff, tpoff read from the GOT once the loader relocated it.
 *   RT_TLS_DTV    a general-dynamic access (R_X86_64_DTPMOD64: Debian's libruby): the module's
 *                 block is dtv[module], the DTV pointer at fsbase + dtv_offset, entries of
 *                 dtv_stride bytes (glibc: the pointer at +0 of 16-byte entries); the variable
 *                 is at block + offset.
 *
 * PTHREAD KEYS (glibc): pthread_getspecific(key) for key < direct reads
 *   *(fsbase + base + stride * key + data)
 * (struct pthread's specific_1stblock: base 0x310, stride 16, data 8 on Debian 12's glibc);
 * the values are decoded from the process's own libc (tls.c). */
#ifndef SCORCH_RUNTIME_RT_TLS_H
#define SCORCH_RUNTIME_RT_TLS_H

enum rt_tls_mode {
	RT_TLS_NONE = 0,
	RT_TLS_DTV = 1,
	RT_TLS_TPOFF = 2,
};

struct rt_tls {
	__u32 mode;        /* enum rt_tls_mode */
	__u32 dtv_offset;  /* RT_TLS_DTV: offset of the DTV pointer in the thread control block */
	__u32 dtv_stride;  /* RT_TLS_DTV: bytes per DTV entry */
	__u32 pad;
	__u64 module;      /* RT_TLS_DTV: the module id (index in the DTV) */
	__s64 tpoff;       /* RT_TLS_TPOFF: offset of the variable from the thread pointer */
	__u64 offset;      /* RT_TLS_DTV: offset of the variable in the module's block */
};

struct rt_tsd {
	__u32 base;    /* offset of the first-level key array from the thread pointer */
	__u32 stride;  /* bytes per key */
	__u32 data;    /* offset of the value in a key's entry */
	__u32 direct;  /* keys below this are in the first-level array (glibc: 32) */
};

#endif
