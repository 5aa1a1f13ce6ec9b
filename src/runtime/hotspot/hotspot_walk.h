/* hotspot_walk.h: the HotSpot frame step (hotspot_step.h) compiled for user space. It unwinds
 * the Java frames of stack snapshots (the framework's jit_step, agent/unwinder.h) and runs in
 * the unit tests and the fuzz target over recorded or hostile JVM memory: the same code as
 * the BPF walker, with memory read through a callback.
 *
 * Not thread-safe; no allocation. */
#ifndef SCORCH_RUNTIME_HOTSPOT_WALK_H
#define SCORCH_RUNTIME_HOTSPOT_WALK_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/hotspot/hotspot.h"

struct unw_state;
struct unwinder_io;

/* Reads size bytes at addr of the walked process: 0 or a negative errno. */
typedef int (*hotspot_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

enum hotspot_walk_end {
	HOTSPOT_WALK_LEFT = 0,  /* the pc left the code cache: *pc, *sp, *bp are the caller's */
	HOTSPOT_WALK_FAILED,    /* a frame could not be unwound: the last word is a mark */
	HOTSPOT_WALK_FULL,      /* out of room (or HOTSPOT_WALK_MAX_FRAMES) */
};

#define HOTSPOT_WALK_MAX_FRAMES 1024

/* Unwind from the frame at pc, sp, bp (retaddr: pc is a return address) while the pc is in
 * p's code cache, writing two words per Java frame (hotspot.h) into words[0..max). Returns
 * the number of words and, in *end, how it ended. */
size_t hotspot_walk(const struct hs_proc *p, hotspot_read_fn read, void *ctx, uint64_t *pc,
		    uint64_t *sp, uint64_t *bp, int retaddr, uint64_t *words, size_t max,
		    enum hotspot_walk_end *end);

/* The framework's jit_step for process p: replaces the native word of st->pc by the Java
 * frames, leaves the caller's registers in st (UNW_HOOK_MOVED) or stops (UNW_HOOK_STOP). */
int hotspot_jit_step(const struct hs_proc *p, struct unw_state *st,
		     const struct unwinder_io *io);

#endif
