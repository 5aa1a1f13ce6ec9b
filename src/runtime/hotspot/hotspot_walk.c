/* hotspot_walk.c: the HotSpot frame step for user space (hotspot_walk.h). */
#include "runtime/hotspot/hotspot_walk.h"
#include "agent/unwinder.h"

#include <string.h>

/* The step's state with the reader next to it: HS_READ finds it from the walk. */
struct uwalk {
	struct hs_walk w; /* first: the step gets &uw->w */
	hotspot_read_fn read;
	void *ctx;
};

static uint64_t ld64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t ld32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

#define HS_INLINE inline
#define HS_READ(w, dst, size, addr) \
	(((struct uwalk *)(void *)(w))->read(((struct uwalk *)(void *)(w))->ctx, (addr), (dst), \
					      (size)))
#define HS_LD64(p) ld64(p)
#define HS_LD32(p) ld32(p)
#define HS_BARRIER(x) do { } while (0)
#include "runtime/hotspot/hotspot_step.h"

size_t hotspot_walk(const struct hs_proc *p, hotspot_read_fn read, void *ctx, uint64_t *pc,
		    uint64_t *sp, uint64_t *bp, int retaddr, uint64_t *words, size_t max,
		    enum hotspot_walk_end *end)
{
	struct uwalk uw;
	struct hs_walk *w = &uw.w;
	size_t n = 0, i;

	memset(&uw, 0, sizeof(uw));
	uw.read = read;
	uw.ctx = ctx;
	w->p = *p;
	w->pc = *pc;
	w->sp = *sp;
	w->bp = *bp;
	w->flags = retaddr ? HS_W_RETADDR : 0;
	*end = HOTSPOT_WALK_FULL;
	for (i = 0; i < HOTSPOT_WALK_MAX_FRAMES; i++) {
		if (n + 2 > max)
			break;
		if (hs_step(w) != HS_STEP_OK) {
			if (n < max)
				words[n++] = (FW_TAG_HS_MARK << FW_TAG_SHIFT) |
					     (w->mark ? w->mark : HS_MARK_BAD_FRAME);
			*end = HOTSPOT_WALK_FAILED;
			break;
		}
		words[n++] = w->out[0];
		words[n++] = w->out[1];
		if (!hs_in_cc(w, w->pc)) {
			*end = HOTSPOT_WALK_LEFT;
			break;
		}
	}
	*pc = w->pc;
	*sp = w->sp;
	*bp = w->bp;
	return n;
}

static int io_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct unwinder_io *io = ctx;

	return io->read(io->io, addr, buf, len);
}

int hotspot_jit_step(const struct hs_proc *p, struct unw_state *st,
		     const struct unwinder_io *io)
{
	uint64_t words[2 * 64], pc = st->pc, sp = st->sp, bp = st->bp;
	enum hotspot_walk_end end = HOTSPOT_WALK_FULL;
	size_t n, i;

	if (st->n == 0)
		return UNW_HOOK_NATIVE;
	st->n--; /* the Java frames replace the native word of this pc */
	for (;;) {
		n = hotspot_walk(p, io_read, (void *)io, &pc, &sp, &bp,
				 (st->flags & UNW_S_RETADDR) != 0, words, sizeof(words) / 8, &end);
		for (i = 0; i < n; i++) {
			if (io->emit(io->io, words[i])) {
				st->result = USTAT_TRUNCATED;
				return UNW_HOOK_STOP;
			}
		}
		if (end != HOTSPOT_WALK_FULL || n == 0)
			break;
		/* more frames than one batch: go on from where the walk stopped */
		st->flags |= UNW_S_RETADDR;
		if (pc < p->cc_lo || pc >= p->cc_hi)
			break;
	}
	if (end == HOTSPOT_WALK_FAILED || (end == HOTSPOT_WALK_FULL && n == 0)) {
		st->result = USTAT_ERR_INVALID;
		return UNW_HOOK_STOP;
	}
	st->pc = pc;
	st->sp = sp;
	st->bp = bp;
	st->flags |= UNW_S_RETADDR;
	return UNW_HOOK_MOVED;
}
