/* v8.bpf.h: the V8 (Node.js) stack walker in BPF: v8_bpf_walk(), the UNWINDER_V8 entry of
 * runtime/runtime.bpf.h's dispatch. Included by runtime/walkers.bpf.h, after the unwinder's
 * maps (unwind_user.bpf.h).
 *
 * The native unwinder calls the walker for every pc in code user space claimed for V8 (the
 * embedded builtins, the JIT code space). Each call unwinds one frame by its frame pointer
 * (v8_step.h): the frame's words replace the native word of the pc (a builtin at the leaf keeps
 * it: its symbol names it), and the caller's registers go back to the native unwinder, which
 * hands the next pc to the walker again while it stays in V8 code, or unwinds the C++ under an
 * entry frame. No per-thread state: a pc in V8 code and rbp are all a frame needs, so every
 * isolate and worker thread is walked. Samples sent as stack snapshots (RT_OP_DEFER) carry no
 * V8 words: user space has the stack, and the frame-pointer rule unwinds V8 code there. */
#ifndef SCORCH_V8_BPF_H
#define SCORCH_V8_BPF_H

#include "runtime/runtime.bpf.h"
#include "runtime/v8/v8.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); /* tgid */
	__type(value, struct v8_proc);
} v8_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, V8STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} v8_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v8_walk);
} v8_scratch SEC(".maps");

static __always_inline void v8_stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&v8_stats, &which);

	if (v)
		*v += n;
}

#define V8_INLINE __always_inline
#define V8_READ(w, dst, size, addr) bpf_probe_read_user((dst), (size), (const void *)(addr))
#define V8_BARRIER(x) asm volatile("" : "+r"(x))
#include "runtime/v8/v8_step.h"

/* The walker (runtime/runtime.bpf.h). A global function: verified once, on its own. */
__noinline int v8_bpf_walk(__u32 op)
{
	__u32 zero = 0, base, n, i;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);
	struct v8_walk *w = bpf_map_lookup_elem(&v8_scratch, &zero);
	struct sample_record *rec = bpf_map_lookup_elem(&scratch, &zero);
	struct v8_proc *p;
	__u64 t0, pos;

	if (!st || !w || !rec || op != RT_OP_FRAME)
		return UNW_HOOK_NATIVE;
	if (!(st->rt_begun & (1u << UNWINDER_V8))) {
		/* First call in this sample: the process's V8. */
		st->rt_begun |= 1u << UNWINDER_V8;
		p = bpf_map_lookup_elem(&v8_procs, &st->pid);
		w->active = p != NULL;
		if (!p)
			return UNW_HOOK_NATIVE;
		__builtin_memcpy(&w->p, p, sizeof(w->p));
		v8_stat_add(V8STAT_SAMPLES, 1);
	}
	if (!w->active)
		return UNW_HOOK_NATIVE;
	t0 = bpf_ktime_get_ns();
	base = st->out_base;
	n = st->n;
	if (base > MAX_KERNEL_FRAMES || n == 0 || n > MAX_USER_WORDS)
		return UNW_HOOK_NATIVE;
	v8_stat_add(V8STAT_FRAMES, 1);
	w->pc = st->pc;
	w->sp = st->sp;
	w->fp = st->bp;
	w->flags = (st->flags & UNW_S_RETADDR) ? 0 : V8_W_EXACT;
	if (v8_step(w)) {
		/* not a V8 frame after all: the native unwinder's rule for the mapping decides */
		v8_stat_add(V8STAT_ERRORS, 1);
		v8_stat_add(V8STAT_WALK_NS, bpf_ktime_get_ns() - t0);
		return UNW_HOOK_NATIVE;
	}
	if (w->found)
		v8_stat_add(w->found, 1);
	/* the frame's words in place of the native word of pc, or after it */
	pos = base + n - (w->replace ? 1 : 0);
	for (i = 0; i < V8_MAX_WORDS; i++) {
		__u64 idx = pos;

		if (i >= w->nout)
			break;
		asm volatile("" : "+r"(idx));
		if (idx >= base + MAX_USER_WORDS - 1 || idx >= MAX_KERNEL_FRAMES + MAX_USER_WORDS)
			break;
		rec->frames[idx] = w->out[i];
		pos = idx + 1;
	}
	if (pos >= base && pos <= base + MAX_USER_WORDS)
		st->n = pos - base;
	st->pc = w->pc;
	st->sp = w->sp;
	st->bp = w->fp;
	st->flags |= UNW_S_RETADDR;
	v8_stat_add(V8STAT_WALK_NS, bpf_ktime_get_ns() - t0);
	return UNW_HOOK_MOVED;
}

#endif
