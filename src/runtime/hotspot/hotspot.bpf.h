/* hotspot.bpf.h: the HotSpot (JVM) stack walker in BPF: hotspot_bpf_walk(), the
 * UNWINDER_HOTSPOT entry of runtime/runtime.bpf.h's dispatch (its ops are described there and
 * in hotspot.h). Included by runtime/walkers.bpf.h, after the unwinder's maps.
 *
 * The native unwinder calls the walker for a pc in the code cache of a known JVM (user space
 * claimed it). The walker replaces the native word of that pc by the Java frame's words and
 * unwinds frame after frame (hotspot_step.h) while the pc stays in the code cache: compiled
 * methods, interpreted methods, stubs and adapters, without frame pointers. The first pc
 * outside (libjvm under the call stub, JNI code, a VM runtime call) goes back to the native
 * unwinder with its registers. No per-thread state is needed: a pc in the code cache is
 * enough to start, so every Java thread is walked, GC and compiler threads never enter. */
#ifndef SCORCH_HOTSPOT_BPF_H
#define SCORCH_HOTSPOT_BPF_H

#include "runtime/hotspot/hotspot.h"
#include "runtime/runtime.bpf.h"

#define HS_MAX_FRAMES 1024 /* Java frames per walker call (the record's words bound them too) */
#define HS_OUT_LIMIT  (MAX_KERNEL_FRAMES + MAX_USER_WORDS)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct hs_proc);
} hs_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HSSTAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} hs_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_walk);
} hs_scratch SEC(".maps");

static __always_inline void hs_stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&hs_stats, &which);

	if (v)
		*v += n;
}

#define HS_INLINE __always_inline
#define HS_READ(w, dst, size, addr) bpf_probe_read_user((dst), (size), (const void *)(addr))
#define HS_LD64(p) (*(const __u64 *)(p))
#define HS_LD32(p) (*(const __u32 *)(p))
#define HS_BARRIER(x) asm volatile("" : "+r"(x))
#include "runtime/hotspot/hotspot_step.h"

/* One frame step, a global function: verified once, on its own, not once per state of the
 * frame loop that calls it. */
__noinline int hotspot_bpf_step(void)
{
	__u32 zero = 0;
	struct hs_walk *w = bpf_map_lookup_elem(&hs_scratch, &zero);

	if (!w)
		return HS_STEP_FAIL;
	return hs_step(w);
}

struct hs_loop_ctx {
	struct hs_walk *w;
	struct sample_record *rec;
	__u32 done;  /* 1: the pc left the code cache; 2: failed; 3: out of room */
};

/* One Java frame (bpf_loop callback): emit its words, move to the caller. */
static long hs_frame_cb(__u32 i, void *data)
{
	struct hs_loop_ctx *c = data;
	struct hs_walk *w = c->w;
	__u64 idx = w->pos;
	__u32 kind;

	asm volatile("" : "+r"(idx));
	if (idx + 2 > w->limit || idx >= HS_OUT_LIMIT - 1) {
		c->done = 3;
		return 1;
	}
	if (hotspot_bpf_step() != HS_STEP_OK) {
		kind = w->kind_last;
		hs_stat_add(HSSTAT_FAIL_LEAF, !(w->flags & HS_W_RETADDR));
		if (kind)
			hs_stat_add(kind == HS_BLOB_INTERP ? HSSTAT_FAIL_INTERP :
				    kind == HS_BLOB_NMETHOD || kind == HS_BLOB_NATIVE ?
				    HSSTAT_FAIL_JIT : HSSTAT_FAIL_STUB, 1);
		if (w->cause < HS_CAUSE__COUNT)
			hs_stat_add(HSSTAT_CAUSE + w->cause, 1);
		c->done = 2;
		return 1;
	}
	c->rec->frames[idx] = w->out[0];
	c->rec->frames[idx + 1] = w->out[1];
	w->pos = idx + 2;
	w->frames++;
	kind = w->kind_last;
	hs_stat_add(kind == HS_BLOB_INTERP ? HSSTAT_INTERP :
		    kind == HS_BLOB_NMETHOD || kind == HS_BLOB_NATIVE ? HSSTAT_JIT : HSSTAT_STUB, 1);
	if (!hs_in_cc(w, w->pc)) {
		c->done = 1;
		return 1;
	}
	return 0;
}

/* The walker (runtime/runtime.bpf.h). A global function: verified once, on its own. */
__noinline int hotspot_bpf_walk(__u32 op)
{
	__u32 zero = 0, base, n, idx;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);
	struct hs_walk *w = bpf_map_lookup_elem(&hs_scratch, &zero);
	struct sample_record *rec = bpf_map_lookup_elem(&scratch, &zero);
	struct hs_loop_ctx c = {};
	struct hs_proc *p;
	__u64 t0;
	int ret = UNW_HOOK_NATIVE;

	if (!st || !w || !rec || op != RT_OP_FRAME)
		return UNW_HOOK_NATIVE;
	t0 = bpf_ktime_get_ns();
	if (!(st->rt_begun & (1u << UNWINDER_HOTSPOT))) {
		/* First call in this sample: the process's JVM; nothing remembered from another
		 * sample (the code cache may have changed since). */
		st->rt_begun |= 1u << UNWINDER_HOTSPOT;
		p = bpf_map_lookup_elem(&hs_procs, &st->pid);
		w->active = p != NULL;
		if (!p)
			return UNW_HOOK_NATIVE;
		__builtin_memcpy(&w->p, p, sizeof(w->p));
		w->blob.hi = 0;
		w->blob.lo = 0;
		w->frames = 0;
		w->prologue = 0;
		w->deopt = 0;
		w->hits = 0;
		hs_stat_add(HSSTAT_SAMPLES, 1);
	}
	if (!w->active)
		return UNW_HOOK_NATIVE;
	hs_stat_add(HSSTAT_HOOKS, 1);
	base = st->out_base;
	n = st->n;
	if (base > MAX_KERNEL_FRAMES || n == 0 || n > MAX_USER_WORDS)
		return UNW_HOOK_NATIVE;
	/* the native word of this pc is replaced by the Java frame's words */
	w->pos = base + n - 1;
	w->limit = base + MAX_USER_WORDS - 1;
	w->pc = st->pc;
	w->sp = st->sp;
	w->bp = st->bp;
	w->flags = (st->flags & UNW_S_RETADDR) ? HS_W_RETADDR : 0;
	c.w = w;
	c.rec = rec;
	bpf_loop(HS_MAX_FRAMES, hs_frame_cb, &c, 0);
	if (w->pos >= base && w->pos <= base + MAX_USER_WORDS)
		st->n = w->pos - base;
	if (c.done == 1) {
		st->pc = w->pc;
		st->sp = w->sp;
		st->bp = w->bp;
		st->flags |= UNW_S_RETADDR;
		ret = UNW_HOOK_MOVED;
	} else {
		/* the walk cannot go on: say where (the unwinder adds its marker) */
		idx = w->pos;
		if (c.done != 3 && idx < HS_OUT_LIMIT && idx < base + MAX_USER_WORDS - 1) {
			rec->frames[idx] = (FW_TAG_HS_MARK << FW_TAG_SHIFT) |
					   (w->mark ? w->mark : HS_MARK_BAD_FRAME);
			st->n = idx + 1 - base;
		}
		hs_stat_add(HSSTAT_ERRORS, c.done != 3);
		st->result = c.done == 3 || c.done == 0 ? USTAT_TRUNCATED : USTAT_ERR_INVALID;
		ret = UNW_HOOK_STOP;
	}
	hs_stat_add(HSSTAT_PROLOGUE, w->prologue);
	hs_stat_add(HSSTAT_DEOPT, w->deopt);
	hs_stat_add(HSSTAT_CACHE_HITS, w->hits);
	w->prologue = w->deopt = w->hits = 0;
	hs_stat_add(HSSTAT_WALK_NS, bpf_ktime_get_ns() - t0);
	return ret;
}

#endif
