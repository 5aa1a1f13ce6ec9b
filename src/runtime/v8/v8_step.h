/* v8_step.h: one frame of the V8 stack walk, shared by the BPF walker (v8.bpf.h) and user space
 * (v8_walk.c: the same step over memory images for the tests and the fuzzer). Frame layout and
 * words: v8.h.
 *
 * The includer defines, before including this file:
 *   V8_INLINE                    function attribute (__always_inline in BPF)
 *   V8_READ(w, dst, size, addr)  read size bytes of the walked process at addr into dst;
 *                                0 on success
 *   V8_BARRIER(x)                keep x in a register the verifier tracks (BPF), or nothing
 *   V8_LOAD(dst, p, n)           load n (4 or 8) bytes at p, which may be unaligned, into dst
 *
 * v8_step(w) unwinds the frame w->pc / w->sp / w->fp: it fills w->out[0 .. w->nout) with the
 * frame's words (w->replace: whether they replace the native word of pc), w->found with what
 * the frame was (enum v8_stat), and leaves the caller's registers in w->pc / w->sp / w->fp.
 * Returns 0, or -1 when the frame pointer cannot be a V8 frame (below sp, unreadable): the
 * caller then gives the frame back to the native unwinder. Every read may fail; a JavaScript
 * frame whose objects cannot be read still unwinds (one MARK word). */
#ifndef SCORCH_V8_STEP_H
#define SCORCH_V8_STEP_H

#include "runtime/v8/v8.h"

#define V8_MAX_FRAME (8u << 20) /* fp may be at most this far above sp */

/* An aligned load of size (4 or 8) bytes at off of a buffer of cap (a power of two) bytes. */
static V8_INLINE __u64 v8_ld(const __u8 *buf, __u64 off, __u32 size, __u32 cap)
{
	__u64 v8 = 0;
	__u32 v4 = 0;

	V8_BARRIER(off);
	off &= cap - 1;
	if (size == 8) {
		V8_LOAD(v8, buf + off, 8);
		return v8;
	}
	V8_LOAD(v4, buf + off, 4);
	return v4;
}

/* A tagged field at off of the object at obj (its first bytes in buf): the full pointer, also
 * under pointer compression (the cage is 4 GiB aligned, and so is the object's half). */
static V8_INLINE __u64 v8_tagged(const struct v8_walk *w, const __u8 *buf, __u64 off, __u64 obj)
{
	if (w->p.off.tagged_size == 4)
		return (obj & 0xffffffff00000000ULL) | v8_ld(buf, off, 4, V8_OBJ_READ);
	return v8_ld(buf, off, 8, V8_OBJ_READ);
}

static V8_INLINE int v8_in(__u64 pc, __u64 lo, __u64 hi)
{
	return pc >= lo && pc < hi;
}

/* pc's offset in the copy of the builtins holding it, or ~0 when it is in neither. */
static V8_INLINE __u64 v8_builtin_offset(const struct v8_walk *w, __u64 pc)
{
	if (v8_in(pc, w->p.builtins_lo[0], w->p.builtins_hi[0]))
		return pc - w->p.builtins_lo[0];
	if (v8_in(pc, w->p.builtins_lo[1], w->p.builtins_hi[1]))
		return pc - w->p.builtins_lo[1];
	return ~0ULL;
}

static V8_INLINE int v8_in_interp(const struct v8_walk *w, __u64 rel)
{
	return v8_in(rel, w->p.interp_lo[0], w->p.interp_hi[0]) ||
	       v8_in(rel, w->p.interp_lo[1], w->p.interp_hi[1]) ||
	       v8_in(rel, w->p.interp_lo[2], w->p.interp_hi[2]) ||
	       v8_in(rel, w->p.interp_lo[3], w->p.interp_hi[3]);
}

/* The first V8_OBJ_READ bytes of the object at addr (untagged) into dst; an object near the end
 * of a heap page whose next page is not mapped gets the bytes up to the page's end, when they
 * hold the first need bytes. 0 on success. */
static V8_INLINE int v8_read_obj(struct v8_walk *w, __u8 *dst, __u64 addr, __u32 need)
{
	__u32 len;

	if (!V8_READ(w, dst, V8_OBJ_READ, addr))
		return 0;
	len = 4096 - (__u32)(addr & 4095);
	if (len >= V8_OBJ_READ || len < need)
		return -1;
	V8_BARRIER(len);
	len &= V8_OBJ_READ - 1;
	if (!len)
		return -1;
	return V8_READ(w, dst, len, addr) ? -1 : 0;
}

/* The frame slot at fp + off (off in [-V8_FRAME_BELOW, 8]) from the frame buffer. */
static V8_INLINE __u64 v8_slot(const struct v8_walk *w, __s64 off)
{
	return v8_ld(w->frame, (__u64)(off + V8_FRAME_BELOW), 8, V8_FRAME_READ);
}

/* The value of a SMI held in a full word (a frame slot). */
static V8_INLINE __s64 v8_smi(const struct v8_walk *w, __u64 v)
{
	if (w->p.off.smi_shift == 1)
		return (__s64)(__s32)(__u32)v >> 1;
	return (__s64)v >> 32;
}

/* The frame's words for compiled code: [SFI][CODE|JITPC][PC|RET]. */
static V8_INLINE void v8_out_code(struct v8_walk *w, __u64 sfi, __u64 what, __u64 off, int ret,
				  __u32 chk)
{
	w->out[0] = (FW_TAG_V8_SFI << FW_TAG_SHIFT) | (sfi & FW_DATA_MASK);
	w->out[1] = what;
	w->out[2] = ((ret ? FW_TAG_V8_RET : FW_TAG_V8_PC) << FW_TAG_SHIFT) | ((__u64)chk << 32) |
		    (off & 0xffffffffULL);
	w->nout = 3;
}

/* A JavaScript frame: fn is its JSFunction; rel is pc's offset in the builtins (~0: JIT). */
static V8_INLINE void v8_js_frame(struct v8_walk *w, __u64 fn, __u64 rel, int exact)
{
	int in_builtins = rel != ~0ULL;
	const struct v8_offsets *o = &w->p.off;
	__u64 sfi, code, start, a, b, pc = w->pc, bc;
	__u32 size, kind, chk, i, need;

	if (fn != w->c_fn || !fn) {
		/* a function not seen in this sample yet: its SFI, code and checksum bytes */
		w->c_fn = 0;
		if (!(fn & 1) ||
		    v8_read_obj(w, w->obj, fn - 1,
				(o->fn_shared > o->fn_code ? o->fn_shared : o->fn_code) +
					o->tagged_size)) {
			w->out[0] = (FW_TAG_V8_MARK << FW_TAG_SHIFT) | V8_MARK_BAD_FRAME;
			w->nout = 1;
			w->found = V8STAT_BAD;
			return;
		}
		sfi = v8_tagged(w, w->obj, o->fn_shared, fn);
		code = v8_tagged(w, w->obj, o->fn_code, fn);
		if (!(sfi & 1) || V8_READ(w, w->sfi, V8_SFI_READ, sfi - 1 + o->sfi_sum)) {
			w->out[0] = (FW_TAG_V8_MARK << FW_TAG_SHIFT) | V8_MARK_BAD_FRAME;
			w->nout = 1;
			w->found = V8STAT_BAD;
			return;
		}
		/* the checksum covers the SFI's immutable scalars */
		V8_LOAD(a, w->sfi, 8);
		V8_LOAD(b, w->sfi + 8, 8);
		for (i = 0; i < 8; i++) {
			if (!(o->sfi_sum_mask & (1u << i)))
				a &= ~(0xffULL << (8 * i));
			if (!(o->sfi_sum_mask & (1u << (i + 8))))
				b &= ~(0xffULL << (8 * i));
		}
		w->c_code_ok = 0; /* read when a frame needs it */
		w->c_fn = fn;
		w->c_sfi = sfi;
		w->c_code = code;
		w->c_a = a;
		w->c_b = b;
	}
	sfi = w->c_sfi;
	code = w->c_code;
	a = w->c_a;
	b = w->c_b;
	w->replace = !in_builtins || !exact;
	if (!(in_builtins && v8_in_interp(w, rel)) && !w->c_code_ok) {
		/* the function's code: its kind and instructions (not needed by interpreted frames) */
		w->c_code_ok = 2;
		need = (__u32)o->code_start + 8;
		if ((__u32)o->code_size + 4 > need)
			need = (__u32)o->code_size + 4;
		if ((__u32)o->code_flags + 4 > need)
			need = (__u32)o->code_flags + 4;
		if ((code & 1) && !v8_read_obj(w, w->code, code - 1, need)) {
			w->c_start = v8_ld(w->code, o->code_start, 8, V8_OBJ_READ);
			w->c_size = (__u32)v8_ld(w->code, o->code_size, 4, V8_OBJ_READ);
			w->c_kind = ((__u32)v8_ld(w->code, o->code_flags, 4, V8_OBJ_READ) >>
				     o->kind_shift) & o->kind_mask;
			w->c_code_ok = 1;
		}
	}
	if (!(in_builtins && v8_in_interp(w, rel)) && w->c_code_ok == 1) {
		start = w->c_start;
		size = w->c_size;
		kind = w->c_kind;
		chk = v8_checksum(a ^ (((__u64)kind << 32) | size), b ^ start);
		if (kind == o->kind_baseline || kind == o->kind_maglev || kind == o->kind_turbofan) {
			if (v8_in(pc, start, start + size)) {
				v8_out_code(w, sfi, (FW_TAG_V8_CODE << FW_TAG_SHIFT) | (code & FW_DATA_MASK),
					    pc - start, !exact, chk);
				w->found = V8STAT_COMPILED;
				return;
			}
			/* The sampled pc outside its frame's code: a frameless builtin the code
			 * called, or the prologue or epilogue of a function it called. The
			 * frame's own pc is then a return address near the top of the stack. */
			if (exact && !V8_READ(w, w->stack, sizeof(w->stack), w->sp)) {
				for (i = 0; i < 3; i++) {
					if (v8_in(w->stack[i], start, start + size)) {
						v8_out_code(w, sfi, (FW_TAG_V8_CODE << FW_TAG_SHIFT) |
							    (code & FW_DATA_MASK),
							    w->stack[i] - start, 1, chk);
						w->found = V8STAT_COMPILED;
						return;
					}
				}
			}
		}
	}
	chk = v8_checksum(a, b);
	if (!in_builtins) {
		/* JIT code that is not the function's code: OSR code, or code replaced (tiered
		 * up, deoptimized) while this frame runs it. User space finds it by pc. */
		v8_out_code(w, sfi, (FW_TAG_V8_JITPC << FW_TAG_SHIFT) | (pc & FW_DATA_MASK), 0, !exact,
			    chk);
		w->found = V8STAT_JITPC;
		return;
	}
	/* The interpreter (its trampoline, a bytecode handler) or a builtin running the frame:
	 * the bytecode offset slot says where it is when the frame is interpreted; it is saved
	 * there at calls only, so a bytecode handler at the leaf has the current offset in the
	 * interpreter's register instead. */
	bc = v8_slot(w, o->fp_bytecode_offset);
	if ((bc & 1) || !(v8_slot(w, o->fp_bytecode_array) & 1))
		bc = V8_POS_UNKNOWN;
	else
		bc = (__u32)v8_smi(w, bc);
	if (exact && v8_in(rel, w->p.handlers_lo, w->p.handlers_hi) && w->leaf_bc < (1u << 30))
		bc = w->leaf_bc;
	w->out[0] = (FW_TAG_V8_SFI << FW_TAG_SHIFT) | (sfi & FW_DATA_MASK);
	w->out[1] = (FW_TAG_V8_POS << FW_TAG_SHIFT) | ((__u64)chk << 32) | (bc & 0xffffffffULL);
	w->nout = 2;
	w->found = V8STAT_INTERP;
}

static V8_INLINE int v8_step(struct v8_walk *w)
{
	const struct v8_offsets *o = &w->p.off;
	__u64 fp = w->fp, marker, rel;
	int exact = !!(w->flags & V8_W_EXACT);

	w->nout = 0;
	w->replace = 1;
	w->found = 0;
	w->entry = 0;
	if (fp < w->sp || fp - w->sp > V8_MAX_FRAME || (fp & 7) ||
	    V8_READ(w, w->frame, V8_FRAME_READ, fp - V8_FRAME_BELOW))
		return -1;
	rel = v8_builtin_offset(w, w->pc);
	marker = v8_slot(w, o->fp_context);
	if (!(marker & 1)) {
		/* A typed frame: entry, exit, internal, stub, ... A builtin's is named by its
		 * symbol; JIT code (a stub, regular expression code) gets its type. */
		__u32 type = ((__u32)marker >> 1) & 0xff;

		if (rel != ~0ULL) {
			w->replace = 0;
		} else {
			w->out[0] = (FW_TAG_V8_TYPED << FW_TAG_SHIFT) | type;
			w->nout = 1;
		}
		w->entry = type == o->type_entry || type == o->type_construct_entry;
		w->found = V8STAT_TYPED;
	} else {
		/* The sampled pc in a JavaScript prologue: `push rbp; mov rbp, rsp` done, the
		 * context or the function not pushed yet (`push rsi`, `push rdi` next): the
		 * function is still in rdi, the slots below sp are stale. Without rdi (a stack
		 * snapshot), the frame keeps its native word. */
		__u64 fn = v8_slot(w, o->fp_function);
		__u8 op = 0;
		int unnamed = 0;

		if (exact && fp + o->fp_function < w->sp && !V8_READ(w, &op, 1, w->pc) &&
		    (op == 0x56 || op == 0x57)) {
			fn = w->leaf_fn;
			unnamed = !(fn & 1);
		}
		if (unnamed)
			w->replace = 0;
		else
			v8_js_frame(w, fn, rel, exact);
	}
	w->pc = v8_slot(w, 8);
	w->fp = v8_slot(w, 0);
	w->sp = fp + 16;
	return 0;
}

#endif
