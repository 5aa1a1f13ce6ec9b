/* v8_walk.h: the V8 frame walk in user space: the BPF walker's step (v8_step.h) compiled as
 * plain C over a struct procmem (a live process or a memory image). The tests walk live Node
 * processes and recorded images with it, and the fuzzer feeds it hostile memory.
 *
 * v8_walk() unwinds from registers (pc, sp, fp) while the pc stays in V8 code (in_v8 says
 * which pcs are: the builtins and the JIT code the runtime claims) and writes what the BPF
 * walker and the native unwinder would have written for those frames: V8 frame words (v8.h),
 * and the native word (the pc) of frames whose pc keeps it (a builtin at the leaf, typed
 * frames of builtins). It stops at the first pc outside V8 code (an entry frame's C++
 * caller), after max words, or at a frame it cannot unwind. */
#ifndef SCORCH_RUNTIME_V8_WALK_H
#define SCORCH_RUNTIME_V8_WALK_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/v8/v8.h"

struct procmem;

/* Read len bytes of the walked process at addr into buf: 0, or a negative errno. */
typedef int (*v8_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* One frame: v8_step() of v8_step.h with memory from read (the user-space unwinder's view of a
 * stack snapshot and the live process, for runtime_ops.jit_step). 0, or -1 (not a V8 frame). */
int v8_walk_step(struct v8_walk *w, v8_read_fn read, void *ctx);

/* 1 when pc is V8 code (the walker's business) in the walked process. */
typedef int (*v8_in_code_fn)(void *ctx, uint64_t pc);

struct v8_walk_result {
	uint64_t pc, sp, fp;  /* where the walk stopped (the first pc outside V8 code) */
	size_t frames;        /* V8 frames unwound */
	int error;            /* 1: stopped at a frame it could not unwind */
};

/* leaf_bc: the sample's bytecode offset register (struct v8_offsets.bc_offset_reg), or ~0 */
size_t v8_walk(struct procmem *m, const struct v8_proc *p, uint64_t pc, uint64_t sp, uint64_t fp,
	       uint64_t leaf_bc, v8_in_code_fn in_v8, void *ctx, uint64_t *words, size_t max,
	       struct v8_walk_result *res);

#endif
