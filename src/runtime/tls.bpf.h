/* tls.bpf.h: reading an interpreter's per-thread state in BPF (the contract and the layouts:
 * runtime/rt_tls.h). The walkers pass the sampled task's fs base (task->thread.fsbase, the
 * thread pointer on x86-64). Every read may fail: 0 on success, -1 otherwise. */
#ifndef SCORCH_RUNTIME_TLS_BPF_H
#define SCORCH_RUNTIME_TLS_BPF_H

#include "runtime/rt_tls.h"

/* The address of a thread-local variable of the current thread. */
static __always_inline int rt_tls_addr(const struct rt_tls *t, __u64 fsbase, __u64 *addr)
{
	__u64 dtv = 0, block = 0;

	if (!fsbase)
		return -1;
	if (t->mode == RT_TLS_TPOFF) {
		*addr = fsbase + t->tpoff;
		return 0;
	}
	if (t->mode != RT_TLS_DTV || t->module == 0 || t->module > 4096)
		return -1;
	if (bpf_probe_read_user(&dtv, sizeof(dtv), (const void *)(fsbase + t->dtv_offset)) || !dtv)
		return -1;
	if (bpf_probe_read_user(&block, sizeof(block),
				(const void *)(dtv + t->module * t->dtv_stride)))
		return -1;
	if (!block || block == ~0ULL) /* TLS_DTV_UNALLOCATED: not set up for this thread */
		return -1;
	*addr = block + t->offset;
	return 0;
}

/* The value of pthread key `key` in the current thread (glibc), or -1. */
static __always_inline int rt_tsd_get(const struct rt_tsd *t, __u64 fsbase, __u32 key,
				      __u64 *value)
{
	if (!fsbase || key >= t->direct || !t->stride)
		return -1;
	return bpf_probe_read_user(value, sizeof(*value),
				   (const void *)(fsbase + t->base + (__u64)t->stride * key +
						  t->data)) ? -1 : 0;
}

#endif
