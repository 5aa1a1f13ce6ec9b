/* v8_walk.c: the BPF walker's frame step run in user space (v8_walk.h). */
#include "runtime/v8/v8_walk.h"
#include "runtime/procmem.h"

#include <string.h>

#define V8_INLINE inline
#define V8_READ(w, dst, size, addr) v8_walk_read((dst), (size), (addr))
#define V8_BARRIER(x) ((void)0)
#define V8_LOAD(dst, p, n) memcpy(&(dst), (p), (n))

/* The step reads through the current walk's reader; one walk at a time (not thread-safe). */
static v8_read_fn walk_read;
static void *walk_ctx;

static int v8_walk_read(void *dst, size_t size, uint64_t addr)
{
	return walk_read(walk_ctx, addr, dst, size) ? 1 : 0;
}

#include "runtime/v8/v8_step.h"

int v8_walk_step(struct v8_walk *w, v8_read_fn read, void *ctx)
{
	int rc;

	walk_read = read;
	walk_ctx = ctx;
	rc = v8_step(w);
	walk_read = NULL;
	walk_ctx = NULL;
	return rc;
}

static int procmem_reader(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem_read(ctx, addr, buf, len);
}

#define V8_WALK_MAX_FRAMES 4096

size_t v8_walk(struct procmem *m, const struct v8_proc *p, uint64_t pc, uint64_t sp, uint64_t fp,
	       uint64_t leaf_bc, v8_in_code_fn in_v8, void *ctx, uint64_t *words, size_t max,
	       struct v8_walk_result *res)
{
	struct v8_walk w;
	size_t n = 0, i, k;
	int exact = 1;

	memset(&w, 0, sizeof(w));
	memset(res, 0, sizeof(*res));
	w.p = *p;
	for (k = 0; k < V8_WALK_MAX_FRAMES && in_v8(ctx, pc); k++) {
		w.pc = pc;
		w.sp = sp;
		w.fp = fp;
		w.flags = exact ? V8_W_EXACT : 0;
		w.leaf_bc = exact ? leaf_bc : ~0ULL;
		if (v8_walk_step(&w, procmem_reader, m)) {
			res->error = 1;
			break;
		}
		/* as the native unwinder and the BPF walker do: the native word, then the
		 * frame's words in its place or after it */
		if (!w.replace && n < max)
			words[n++] = pc;
		for (i = 0; i < w.nout && n < max; i++)
			words[n++] = w.out[i];
		res->frames++;
		if (w.sp <= sp)
			break; /* the stack must move up */
		if (w.entry) {
			/* an entry frame's caller is C++ */
			pc = w.pc;
			sp = w.sp;
			fp = w.fp;
			break;
		}
		pc = w.pc;
		sp = w.sp;
		fp = w.fp;
		exact = 0;
		if (n >= max)
			break;
	}
	res->pc = pc;
	res->sp = sp;
	res->fp = fp;
	return n;
}
