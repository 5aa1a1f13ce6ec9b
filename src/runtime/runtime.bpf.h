/* runtime.bpf.h: the BPF side of the runtime framework: how the native unwinder hands frames to
 * the walker of a runtime (CPython, HotSpot, V8, ...). Included by sampler.bpf.c BEFORE
 * unwind_user.bpf.h (it defines UNW_RUNTIME_HOOK and the snapshot hooks the unwinder calls);
 * runtime/walkers.bpf.h, included after it, holds the walkers' bodies.
 *
 * DISPATCH. Every executable mapping the unwinder knows carries an unwinder kind (struct
 * unwind_mapping.kind, enum unwinder_kind), found by the mapping lookup the native unwinder
 * does for every frame anyway. The walker of that kind is called
 *   - for a pc in an entry flagged UNW_F_INTERP (an interpreter's eval loop in its own file:
 *     libpython, the ruby or php executable, ...), and
 *   - for every pc of a mapping flagged UNW_MAP_RUNTIME (code a runtime claimed: a JIT code
 *     cache in anonymous memory),
 * so a sample pays only for the walkers of the code it runs through. RUNTIME_WALKERS below is
 * the table: one line per runtime, naming its kind and its walker.
 *
 * A WALKER is one global function `int fn(__u32 op)`. Global (non-static, __noinline) BPF
 * functions are verified on their own, once, whatever calls them: the sampler's verification
 * does not grow with the number of runtimes, and a walker's own loops (bpf_loop) are checked
 * in its own context. A walker finds what it needs in per-CPU maps: the unwinder's state
 * (unw_state_map[0], struct unw_state) and the record being built (scratch[0]).
 *   op RT_OP_FRAME  the native unwinder is at a frame of this runtime; the native word of
 *                   st->pc is at rec->frames[st->out_base + st->n - 1]. Emit the runtime's
 *                   frames (in place of that word or after it, st->n updated) and return
 *                   UNW_HOOK_NATIVE, UNW_HOOK_STOP or UNW_HOOK_MOVED (unwind.h).
 *   op RT_OP_DEFER  the sample goes to user space as a stack snapshot (bpf/unwind.h): append,
 *                   at rec->frames[st->rt_pos .. st->rt_limit), what RT_OP_FRAME would emit at
 *                   each of its frames, one segment per frame ended by a
 *                   FW_MARKER_SEGMENT_END word, and advance st->rt_pos. User space replays the
 *                   segments when it unwinds the snapshot. Walkers whose frames can be found
 *                   again from the copied stack alone (a JIT walker that user space runs over
 *                   the snapshot) return without writing.
 *   op RT_OP_RESCUE the native unwind failed (the stack so far ends with its [unwind error]
 *                   marker, st->n words): append at rec->frames[st->out_base + st->n ..) the
 *                   frames the walker has not emitted yet, from its own state (an
 *                   interpreter's current frame), so that they outlive native code the
 *                   unwinder cannot cross (JIT code without unwind info, assembly without
 *                   CFI); st->n updated. Walkers that cannot return nothing.
 *   op RT_OP_ONLY   "runtime frames only" (SCORCH_PYTHON=only, a benchmark and debugging knob):
 *                   replace the user words rec->frames[st->out_base .. + st->n) by all frames
 *                   of the thread, leaf first; leave them when the thread has none.
 * The first call of a walker in a sample finds its per-thread state (st->rt_begun has the bit
 * 1 << kind once done); later calls continue where the previous one stopped.
 *
 * Walkers emit only words with tags of their own range (sampler.h, FRAME WORDS), never write
 * past rec->frames[st->out_base + MAX_USER_WORDS - 1) (one word stays free for the unwinder's
 * marker), bound every loop, and treat every read of process memory as one that can fail. */
#ifndef SCORCH_RUNTIME_BPF_H
#define SCORCH_RUNTIME_BPF_H

#include "bpf/sampler.h"
#include "bpf/unwind.h"

#define RT_OP_FRAME 0
#define RT_OP_DEFER 1
#define RT_OP_ONLY  2
#define RT_OP_RESCUE 3

/* The table: X(kind, walker function). A new runtime adds one line here and its walker's
 * header to runtime/walkers.bpf.h. */
#define RUNTIME_WALKERS(X) \
	X(UNWINDER_PYTHON, python_bpf_walk) \
	X(UNWINDER_HOTSPOT, hotspot_bpf_walk) \
	X(UNWINDER_V8, v8_bpf_walk) \
	X(UNWINDER_RUBY, ruby_bpf_walk) \
	X(UNWINDER_PHP, php_bpf_walk) \
	X(UNWINDER_PERL, perl_bpf_walk)

#define RT_DECLARE_(kind, fn) int fn(__u32 op);
RUNTIME_WALKERS(RT_DECLARE_)

/* Which kinds have a walker that defers frames into snapshots in a process: pid -> 1 << kind
 * for each (runtime.c keeps it; walkers whose frames are on the stack are left out). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} rt_pids SEC(".maps");

/* "Runtime frames only" mode: the kind whose frames replace the user stack (0: off). */
const volatile __u32 runtime_only_kind = 0;

/* For measuring the verifier's work per walker (bench/bpf_verify.sh): a build with
 * -DRT_WALKER_MASK=m calls (and so loads) only the walkers of the kinds in m. */
#ifndef RT_WALKER_MASK
#define RT_WALKER_MASK 0xffffffffu
#endif

static __always_inline int runtime_walk(__u32 kind, __u32 op)
{
	switch (kind) {
#define RT_CASE_(k, fn) case k: return (RT_WALKER_MASK & (1u << (k))) ? fn(op) : UNW_HOOK_NATIVE;
	RUNTIME_WALKERS(RT_CASE_)
#undef RT_CASE_
	default:
		return UNW_HOOK_NATIVE;
	}
}

/* The mask of kinds with a walker in process pid (0: none). */
static __always_inline __u32 runtime_present(__u32 pid)
{
	__u32 *mask = bpf_map_lookup_elem(&rt_pids, &pid);

	return mask ? *mask : 0;
}

/* Every walker present in the mask appends its deferred segments (RT_OP_DEFER). */
static __always_inline void runtime_defer(__u32 mask)
{
#define RT_DEFER_(k, fn) if (mask & RT_WALKER_MASK & (1u << (k))) fn(RT_OP_DEFER);
	RUNTIME_WALKERS(RT_DEFER_)
#undef RT_DEFER_
}

/* Every walker present in the mask appends the frames a failed native unwind left out
 * (RT_OP_RESCUE). */
static __always_inline void runtime_rescue(__u32 mask)
{
#define RT_RESCUE_(k, fn) if (mask & RT_WALKER_MASK & (1u << (k))) fn(RT_OP_RESCUE);
	RUNTIME_WALKERS(RT_RESCUE_)
#undef RT_RESCUE_
}

/* The unwinder's hooks (unwind_step.h, unwind_user.bpf.h). In "runtime frames only" mode the
 * walkers are not called during the native unwind: RT_OP_ONLY replaces its result. */
#define UNW_RUNTIME_HOOK(st, m, e) \
	(runtime_only_kind ? UNW_HOOK_NATIVE : runtime_walk((m)->kind, RT_OP_FRAME))
#define UNW_RUNTIME_PRESENT(pid) (runtime_only_kind ? 0 : runtime_present(pid))
#define UNW_RUNTIME_DEFER(mask) runtime_defer(mask)
#define UNW_RUNTIME_RESCUE(mask) runtime_rescue(mask)

#endif
