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
#define V8_LOAD(dst, p, n) ((dst) = (n) == 8 ? *(const __u64 *)(p) : *(const __u32 *)(p))
#include "runtime/v8/v8_step.h"

/* A register of the sampled user context, by its x86-64 number (V8's register codes). */
static __always_inline __u64 v8_user_reg(__u32 code)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	switch (code) {
	case 0: return BPF_CORE_READ(r, ax);
	case 1: return BPF_CORE_READ(r, cx);
	case 2: return BPF_CORE_READ(r, dx);
	case 3: return BPF_CORE_READ(r, bx);
	case 6: return BPF_CORE_READ(r, si);
	case 7: return BPF_CORE_READ(r, di);
	case 8: return BPF_CORE_READ(r, r8);
	case 9: return BPF_CORE_READ(r, r9);
	case 10: return BPF_CORE_READ(r, r10);
	case 11: return BPF_CORE_READ(r, r11);
	case 12: return BPF_CORE_READ(r, r12);
	case 13: return BPF_CORE_READ(r, r13);
	case 14: return BPF_CORE_READ(r, r14);
	case 15: return BPF_CORE_READ(r, r15);
	default: return ~0ULL;
	}
}

#define V8_MAX_FRAMES 512 /* V8 frames per walker call (the record's words bound them too) */
#define V8_OUT_LIMIT (MAX_KERNEL_FRAMES + MAX_USER_WORDS)

struct v8_loop_ctx {
	struct unw_state *st;
	struct v8_walk *w;
	struct sample_record *rec;
};

static __always_inline int v8_emit(struct v8_loop_ctx *c, __u64 word)
{
	struct v8_walk *w = c->w;
	__u64 i = w->pos;

	asm volatile("" : "+r"(i)); /* bound-check the very register used as index */
	if (i >= w->limit || i >= V8_OUT_LIMIT)
		return 1;
	c->rec->frames[i] = word;
	w->pos = i + 1;
	return 0;
}

/* One V8 frame (bpf_loop callback): its words, then on to its caller while that is V8 code. */
static long v8_frame_cb(__u32 i, void *data)
{
	struct v8_loop_ctx *c = data;
	struct v8_walk *w = c->w;
	const struct unwind_mapping *m;
	__u64 pc = w->pc, sp = w->sp, fp = w->fp;
	__u32 k;

	if (v8_step(w)) {
		/* not a V8 frame after all: the native unwinder's rule for the pc decides */
		w->pc = pc;
		w->sp = sp;
		w->fp = fp;
		w->stop = V8_STOP_FAILED;
		v8_stat_add(V8STAT_ERRORS, 1);
		return 1;
	}
	if (w->found)
		v8_stat_add(w->found, 1);
	w->frames++;
	if (w->first) {
		/* the unwinder emitted the native word of the first pc: keep or overwrite it */
		if (w->replace && w->pos > 0)
			w->pos--;
		w->first = 0;
	} else if (!w->replace && v8_emit(c, pc)) {
		w->stop = V8_STOP_FULL;
		return 1;
	}
	for (k = 0; k < V8_MAX_WORDS; k++) {
		if (k >= w->nout)
			break;
		if (v8_emit(c, w->out[k])) {
			w->stop = V8_STOP_FULL;
			return 1;
		}
	}
	/* The caller: C++ under an entry frame, else V8 code (also in a code page the unwinder
	 * does not know yet), unless the unwinder knows it as native code. The builtins and the
	 * first JIT mappings are known without a lookup. */
	if (w->entry || !w->pc || !w->fp) {
		w->stop = V8_STOP_NATIVE;
		return 1;
	}
	w->flags = 0;
	if (v8_builtin_offset(w, w->pc) != ~0ULL)
		return 0;
	for (k = 0; k < V8_JIT_RANGES; k++)
		if (v8_in(w->pc, w->p.jit_lo[k], w->p.jit_hi[k]))
			return 0;
	m = unwind_mapping_of(c->st, w->pc - 1);
	if (m && !((m->flags & UNW_MAP_RUNTIME) && m->kind == UNWINDER_V8)) {
		w->stop = V8_STOP_NATIVE;
		return 1;
	}
	return 0;
}

/* The walker (runtime/runtime.bpf.h). A global function: verified once, on its own. */
__noinline int v8_bpf_walk(__u32 op)
{
	__u32 zero = 0, base, n;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);
	struct v8_walk *w = bpf_map_lookup_elem(&v8_scratch, &zero);
	struct sample_record *rec = bpf_map_lookup_elem(&scratch, &zero);
	struct v8_loop_ctx c;
	struct v8_proc *p;
	__u64 t0;

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
		w->c_fn = 0;
		v8_stat_add(V8STAT_SAMPLES, 1);
	}
	if (!w->active)
		return UNW_HOOK_NATIVE;
	t0 = bpf_ktime_get_ns();
	base = st->out_base;
	n = st->n;
	if (base > MAX_KERNEL_FRAMES || n == 0 || n > MAX_USER_WORDS)
		return UNW_HOOK_NATIVE;
	w->pc = st->pc;
	w->sp = st->sp;
	w->fp = st->bp;
	w->flags = (st->flags & UNW_S_RETADDR) ? 0 : V8_W_EXACT;
	/* the sample's own registers belong to its leaf frame only */
	w->leaf_bc = n == 1 && (w->flags & V8_W_EXACT) ? v8_user_reg(w->p.off.bc_offset_reg) : ~0ULL;
	w->leaf_fn = n == 1 && (w->flags & V8_W_EXACT) ? v8_user_reg(7) : 0; /* rdi */
	w->pos = base + n;
	w->limit = base + MAX_USER_WORDS - 1;
	w->first = 1;
	w->stop = 0;
	w->frames = 0;
	c.st = st;
	c.w = w;
	c.rec = rec;
	bpf_loop(V8_MAX_FRAMES, v8_frame_cb, &c, 0);
	v8_stat_add(V8STAT_FRAMES, w->frames);
	v8_stat_add(V8STAT_WALK_NS, bpf_ktime_get_ns() - t0);
	if (!w->frames)
		return UNW_HOOK_NATIVE; /* the first frame was not V8's: native rule */
	if (w->pos >= base && w->pos <= base + MAX_USER_WORDS)
		st->n = w->pos - base;
	/* a caller's registers (or those of a frame that failed, never the first): its pc is a
	 * return address */
	st->pc = w->pc;
	st->sp = w->sp;
	st->bp = w->fp;
	st->flags |= UNW_S_RETADDR;
	return UNW_HOOK_MOVED;
}

#endif
