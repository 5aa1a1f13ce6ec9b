/* hotspot_step.h: one step of the HotSpot frame walk (x86-64), shared by the BPF walker
 * (hotspot.bpf.h) and user space (hotspot_runtime.c unwinds stack snapshots with it; the unit
 * tests run it over recorded JVM memory). Contract and layouts: hotspot.h.
 *
 * The includer defines, before including this file:
 *   HS_INLINE                      function attribute (__always_inline in BPF)
 *   HS_READ(w, dst, size, addr)    read size bytes of the walked process at addr into dst;
 *                                  0 on success
 *   HS_LD64(p), HS_LD32(p), HS_LD8(p)
 *                                  loads from a byte pointer into the walk's buffers (plain
 *                                  loads in BPF, memcpy in user space: no alignment promises)
 *   HS_BARRIER(x)                  keep x in a register the verifier bounds (BPF), or nothing
 *
 * hs_step() takes the frame at w->pc / w->sp / w->bp (w->flags & HS_W_RETADDR: pc is a return
 * address), fills w->out[] with its two frame words and leaves the caller's registers in
 * w->pc / w->sp / w->bp. How a frame is unwound (frame_x86.hpp, the code blob's own data):
 *   interpreted  fp-based: Method* and bcp in the frame's slots, caller pc at fp + 8, caller
 *                fp at fp, caller sp in the sender-sp slot (its unextended sp).
 *   compiled     (nmethod, native wrapper, runtime stubs with a frame size) the frame size
 *                from the blob: caller sp = sp + frame size, return address just below it,
 *                the caller's rbp below that. A return address that is the deoptimization
 *                handler stands for the pc saved in the frame (orig_pc_offset). The leaf frame
 *                may be in its prologue (before frame_complete_offset: the return address is
 *                at sp, or above the pushed rbp, or above the slot C2's `mov [rsp + N], rbp`
 *                writes after `sub rsp, N`) or its epilogue (rbp popped, at the safepoint
 *                poll or the ret): recognised from the instruction bytes.
 *   stub         frame size 0 or none (StubRoutines, the call stub, C1's runtime stubs):
 *                fp-based like a C function with a frame pointer; frameless adapters and
 *                leaf stubs caught before their `push rbp`: return address at sp; a leaf stub
 *                whose rbp leads to no return address after a call: the first of the top
 *                stack words that is one.
 * Every frame must move sp up: the step fails with a mark (enum hs_mark) otherwise, and on
 * any failed read. The blob of the previous frame is remembered (w->blob): a recursion and
 * frames of one method repeat it. */
#ifndef SCORCH_RUNTIME_HOTSPOT_STEP_H
#define SCORCH_RUNTIME_HOTSPOT_STEP_H

#include "runtime/hotspot/hotspot.h"

#define HS_STEP_OK   0 /* frame emitted, caller's registers set */
#define HS_STEP_FAIL 1 /* w->mark says why */

/* Little-endian first four bytes of the blob names the step tells apart. */
#define HS_NAME_NMET 0x74656d6eu /* "nmet" */
#define HS_NAME_NATI 0x6974616eu /* "nati" */
#define HS_NAME_INTE 0x65746e49u /* "Inte" */
#define HS_NAME_I2C  0x2f433249u /* "I2C/" */
#define HS_NAME_VTAB 0x62617476u /* "vtab" */
#define HS_NAME_ITAB 0x62617469u /* "itab" */

static HS_INLINE __u64 hs_buf64(struct hs_walk *w, __u32 off)
{
	HS_BARRIER(off);
	off &= HS_HDR - 1;
	return HS_LD64(&w->buf[off]);
}

static HS_INLINE __u32 hs_buf32(struct hs_walk *w, __u32 off)
{
	HS_BARRIER(off);
	off &= HS_HDR - 1;
	return HS_LD32(&w->buf[off]);
}

static HS_INLINE int hs_in_cc(const struct hs_walk *w, __u64 pc)
{
	return pc >= w->p.cc_lo && pc < w->p.cc_hi;
}

static HS_INLINE int hs_fail(struct hs_walk *w, __u32 mark, __u32 cause)
{
	w->mark = mark;
	w->cause = cause;
	return HS_STEP_FAIL;
}

/* Move to the caller: checks that the stack grows towards the caller. */
static HS_INLINE int hs_move(struct hs_walk *w, __u64 pc, __u64 sp, __u64 bp)
{
	if (sp <= w->sp || sp - w->sp > HS_MAX_FRAME)
		return hs_fail(w, HS_MARK_BAD_FRAME, HS_CAUSE_SP);
	if (pc == 0)
		return hs_fail(w, HS_MARK_BAD_FRAME, HS_CAUSE_PC0);
	w->pc = pc;
	w->sp = sp;
	w->bp = bp;
	w->flags |= HS_W_RETADDR;
	return HS_STEP_OK;
}

/* The code blob holding lookup (an address in the code cache): from the segment map of its
 * heap, then its header. Fills w->blob. 0 on success. */
static HS_INLINE int hs_find_blob(struct hs_walk *w, __u64 lookup)
{
	const struct hs_proc *p = &w->p;
	__u64 lo = 0, hi = 0, segmap = 0, seg, block, blob, name = 0;
	__u32 log2 = 0, i, tag = 0, namebytes = 0, size;
	__s32 fsize;
	__u8 b = 0;

	for (i = 0; i < HS_MAX_HEAPS; i++) {
		if (i < p->nheaps && lookup >= p->heaps[i].lo && lookup < p->heaps[i].hi) {
			lo = p->heaps[i].lo;
			hi = p->heaps[i].hi;
			segmap = p->heaps[i].segmap;
			log2 = p->heaps[i].log2_seg;
			break;
		}
	}
	if (!hi || log2 < 4 || log2 > 20)
		return hs_fail(w, HS_MARK_NO_BLOB, HS_CAUSE_NO_HEAP);
	seg = (lookup - lo) >> log2;
	/* Each entry of the segment map says how many segments back the block starts (0: here,
	 * 0xff: free); a long block takes several hops. */
	for (i = 0; i < HS_MAX_HOPS; i++) {
		if (HS_READ(w, &b, 1, segmap + seg))
			return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_BLOB);
		tag = b;
		if (tag == 0 || tag == 0xff || tag > seg)
			break;
		seg -= tag;
	}
	if (tag != 0)
		return hs_fail(w, HS_MARK_NO_BLOB, HS_CAUSE_NO_BLOCK);
	block = lo + (seg << log2);
	if (HS_READ(w, w->buf, HS_HDR, block) && HS_READ(w, w->buf, HS_HDR_MIN, block))
		return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_BLOB);
	if (!w->buf[p->hb_used & (HS_HDR - 1)])
		return hs_fail(w, HS_MARK_NO_BLOB, HS_CAUSE_NO_BLOCK); /* a free block */
	blob = block + p->hb_size;
	size = hs_buf32(w, p->hb_size + p->cb_size);
	if (size < 64 || size > (1u << 30) || lookup < blob || lookup - blob >= size)
		return hs_fail(w, HS_MARK_NO_BLOB, HS_CAUSE_NO_BLOCK);
	name = hs_buf64(w, p->hb_size + p->cb_name);
	if (HS_READ(w, &namebytes, 4, name))
		return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_BLOB);
	w->blob.lo = blob;
	w->blob.hi = blob + size;
	w->blob.code_begin = hs_buf64(w, p->hb_size + p->cb_code_begin);
	w->blob.frame_complete = (__s32)hs_buf32(w, p->hb_size + p->cb_frame_complete);
	/* in words; C1's runtime stubs made without a frame size (no_frame_size, -1: the G1
	 * barriers) keep a frame pointer like the stubs of size 0 */
	fsize = (__s32)hs_buf32(w, p->hb_size + p->cb_frame_size);
	w->blob.frame_size = fsize <= 0 ? 0 :
			     fsize > (__s32)(HS_MAX_FRAME >> 3) ? HS_MAX_FRAME + 1 : (__u32)fsize * 8;
	w->blob.deopt = 0;
	w->blob.deopt_mh = 0;
	w->blob.orig_pc_offset = 0;
	w->blob.cookie = (__u32)(name >> 3);
	if (namebytes == HS_NAME_NMET || namebytes == HS_NAME_NATI) {
		w->blob.kind = namebytes == HS_NAME_NMET ? HS_BLOB_NMETHOD : HS_BLOB_NATIVE;
		w->blob.cookie = hs_buf32(w, p->hb_size + p->nm_compile_id);
		w->blob.deopt = hs_buf64(w, p->hb_size + p->nm_deopt_handler);
		w->blob.deopt_mh = hs_buf64(w, p->hb_size + p->nm_deopt_mh_handler);
		w->blob.orig_pc_offset = (__s32)hs_buf32(w, p->hb_size + p->nm_orig_pc_offset);
	} else if (namebytes == HS_NAME_INTE) {
		w->blob.kind = HS_BLOB_INTERP;
	} else if (namebytes == HS_NAME_I2C || namebytes == HS_NAME_VTAB ||
		   namebytes == HS_NAME_ITAB) {
		w->blob.kind = HS_BLOB_ADAPTER;
	} else {
		w->blob.kind = HS_BLOB_STUB;
	}
	if (w->blob.frame_size > HS_MAX_FRAME)
		return hs_fail(w, HS_MARK_BAD_FRAME, HS_CAUSE_FRAME_SIZE);
	return 0;
}

/* An interpreted frame: fp-based. */
static HS_INLINE int hs_interp(struct hs_walk *w)
{
	const struct hs_proc *p = &w->p;
	__u64 fp = w->bp, method, bcp, sender_sp, link, ret, cm = 0;
	__u32 bci = (__u32)HS_NO_POS;
	__s32 im = p->if_method - HS_SLOT_LO, ib = p->if_bcp - HS_SLOT_LO,
	      is = p->if_sender_sp - HS_SLOT_LO;

	w->kind_last = HS_BLOB_INTERP;
	if (fp <= w->sp || fp - w->sp > HS_MAX_FRAME || fp < 8 * -HS_SLOT_LO)
		return hs_fail(w, HS_MARK_BAD_FRAME, HS_CAUSE_INTERP_FP);
	if (HS_READ(w, w->slots, 8 * HS_SLOTS, fp + 8 * HS_SLOT_LO))
		return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_FRAME);
	if (im < 0 || im >= HS_SLOTS || ib < 0 || ib >= HS_SLOTS || is < 0 || is >= HS_SLOTS)
		return hs_fail(w, HS_MARK_BAD_FRAME, HS_CAUSE_LAYOUT);
	HS_BARRIER(im);
	HS_BARRIER(ib);
	HS_BARRIER(is);
	method = w->slots[im & 15];
	bcp = w->slots[ib & 15];
	sender_sp = w->slots[is & 15];
	link = w->slots[-HS_SLOT_LO];
	ret = w->slots[-HS_SLOT_LO + 1];
	if (method && !HS_READ(w, &cm, 8, method + p->m_const_method) && cm &&
	    bcp >= cm + p->cm_size && bcp - (cm + p->cm_size) < 0x10000)
		bci = (__u32)(bcp - (cm + p->cm_size));
	w->out[0] = (FW_TAG_HS_INTERP << FW_TAG_SHIFT) | (method & FW_DATA_MASK);
	w->out[1] = HS_INFO(cm >> 3, bci);
	/* the caller's sp is its unextended sp (a compiled caller computes its frame from it) */
	if (sender_sp <= fp)
		sender_sp = fp + 16;
	return hs_move(w, ret, sender_sp, link);
}

/* The leaf frame of a blob with a frame of frame_size bytes, before its frame is complete or
 * after it was torn down: find where the return address is from the code at pc. Returns 1
 * and moves when it recognised the place, 0 when the frame is whole. */
static HS_INLINE int hs_leaf_edges(struct hs_walk *w, int prologue, int *rc)
{
	__u8 code[16];
	__u64 pair[2];
	__u32 disp;

	if (HS_READ(w, code, sizeof(code), w->pc))
		return 0;
	/* ret; the safepoint poll of the return (cmp rsp, [r15 + d32]; ja) after `pop rbp`; the
	 * out-of-line poll stub (mov r10, imm64; mov [r15 + d32], r10): nothing left but the
	 * return address */
	if (code[0] == 0xc3 ||
	    (code[0] == 0x49 && code[1] == 0x3b && code[2] == 0xa7 && code[7] == 0x0f &&
	     code[8] == 0x87) ||
	    (code[0] == 0x0f && code[1] == 0x87 && code[6] == 0xc3) ||
	    (code[0] == 0x49 && code[1] == 0xba && code[10] == 0x4d && code[11] == 0x89)) {
		if (HS_READ(w, pair, 8, w->sp))
			return 0;
		*rc = hs_move(w, pair[0], w->sp + 8, w->bp);
		w->prologue++;
		return 1;
	}
	/* pop rbp, then the poll or ret */
	if (code[0] == 0x5d && (code[1] == 0xc3 || (code[1] == 0x49 && code[2] == 0x3b))) {
		if (HS_READ(w, pair, 16, w->sp))
			return 0;
		*rc = hs_move(w, pair[1], w->sp + 16, pair[0]);
		w->prologue++;
		return 1;
	}
	if (!prologue)
		return 0;
	w->prologue++;
	/* C2's prologue without a stack bang: `sub rsp, N` then `mov [rsp + N], rbp`; at the
	 * mov, the frame is allocated but rbp (still the caller's) not saved yet: the return
	 * address is just above the slot being written */
	disp = code[0] == 0x48 && code[1] == 0x89 && code[2] == 0x6c && code[3] == 0x24 ?
		       code[4] :
	       code[0] == 0x48 && code[1] == 0x89 && code[2] == 0xac && code[3] == 0x24 ?
		       (__u32)code[4] | (__u32)code[5] << 8 | (__u32)code[6] << 16 |
			       (__u32)code[7] << 24 :
		       0;
	if (disp && disp + 16 == w->blob.frame_size) {
		if (HS_READ(w, pair, 8, w->sp + disp + 8))
			return 0;
		*rc = hs_move(w, pair[0], w->sp + disp + 16, w->bp);
		return 1;
	}
	/* Else the return address is at sp (before `push rbp` or `sub rsp`), or just above a
	 * pushed rbp; either way it points into the code cache (Java code is called from Java
	 * code, adapters or the call stub). */
	if (HS_READ(w, pair, 16, w->sp))
		return 0;
	if (hs_in_cc(w, pair[0])) {
		*rc = hs_move(w, pair[0], w->sp + 8, w->bp);
		return 1;
	}
	if (hs_in_cc(w, pair[1])) {
		*rc = hs_move(w, pair[1], w->sp + 16, pair[0]);
		return 1;
	}
	*rc = hs_fail(w, HS_MARK_BAD_FRAME, HS_CAUSE_PROLOGUE);
	return 1;
}

/* A frame with a fixed size: caller sp = sp + size, return address and rbp just below. */
static HS_INLINE int hs_sized(struct hs_walk *w)
{
	__u64 pair[2], sender_sp = w->sp + w->blob.frame_size;

	if (HS_READ(w, pair, 16, sender_sp - 16))
		return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_FRAME);
	return hs_move(w, pair[1], sender_sp, pair[0]);
}

/* addr is a return address into the code cache: the bytes before it are a call (e8 rel32,
 * ff 15 [rip + d32], ff d0+r or 41 ff d0+r). */
static HS_INLINE int hs_call_ret(struct hs_walk *w, __u64 addr)
{
	__u8 b[8];

	if (!hs_in_cc(w, addr) || HS_READ(w, b, sizeof(b), addr - 8))
		return 0;
	return b[3] == 0xe8 || (b[2] == 0xff && b[3] == 0x15) ||
	       (b[6] == 0xff && (b[7] & 0xf8) == 0xd0);
}

#define HS_TOP_WORDS 6 /* stack words a frameless leaf stub may have pushed, + 1 */

/* A stub without a frame size: fp-based, or frameless. */
static HS_INLINE int hs_stub(struct hs_walk *w)
{
	__u64 pair[2];
	__u8 code[4];
	__u32 i;
	int leaf = !(w->flags & HS_W_RETADDR);

	if (leaf && w->blob.kind != HS_BLOB_ADAPTER && !HS_READ(w, code, sizeof(code), w->pc)) {
		if (code[0] == 0x55 || code[0] == 0xc3) { /* push rbp / ret: frameless here */
			if (HS_READ(w, pair, 8, w->sp))
				return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_FRAME);
			return hs_move(w, pair[0], w->sp + 8, w->bp);
		}
		/* mov rbp, rsp (HotSpot's assembler writes it 48 8b ec) */
		if (code[0] == 0x48 && ((code[1] == 0x89 && code[2] == 0xe5) ||
					(code[1] == 0x8b && code[2] == 0xec))) {
			if (HS_READ(w, pair, 16, w->sp))
				return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_FRAME);
			return hs_move(w, pair[1], w->sp + 16, pair[0]);
		}
		/* A leaf stub may be frameless (C1's slow_subtype_check pushes registers, no
		 * rbp; an arraycopy stub after its `leave`): rbp is its frame pointer only when
		 * it leads to a return address after a call, else the return address is one of
		 * the top words of the stack. Stubs called from Java return into the code
		 * cache; the call stub, called from libjvm, falls through to rbp below. */
		if (w->bp > w->sp && w->bp - w->sp <= HS_MAX_FRAME && !HS_READ(w, pair, 16, w->bp) &&
		    hs_call_ret(w, pair[1]))
			return hs_move(w, pair[1], w->bp + 16, pair[0]);
		if (!HS_READ(w, w->slots, 8 * HS_TOP_WORDS, w->sp)) {
			for (i = 0; i < HS_TOP_WORDS; i++) {
				if (hs_call_ret(w, w->slots[i]))
					return hs_move(w, w->slots[i], w->sp + 8 * (i + 1), w->bp);
			}
		}
	}
	if (w->blob.kind == HS_BLOB_ADAPTER || w->bp <= w->sp || w->bp - w->sp > HS_MAX_FRAME) {
		if (!leaf)
			return hs_fail(w, HS_MARK_BAD_FRAME, HS_CAUSE_STUB_FP);
		if (HS_READ(w, pair, 8, w->sp))
			return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_FRAME);
		return hs_move(w, pair[0], w->sp + 8, w->bp);
	}
	if (HS_READ(w, pair, 16, w->bp))
		return hs_fail(w, HS_MARK_BAD_READ, HS_CAUSE_READ_FRAME);
	return hs_move(w, pair[1], w->bp + 16, pair[0]);
}

/* One frame: see the top of this file. */
static HS_INLINE int hs_step(struct hs_walk *w)
{
	const struct hs_proc *p = &w->p;
	__u64 pc = w->pc, lookup = pc - ((w->flags & HS_W_RETADDR) ? 1 : 0), real = pc, pos, tag;
	int rc = HS_STEP_OK, leaf = !(w->flags & HS_W_RETADDR), prologue;

	w->mark = 0;
	w->cause = 0;
	w->kind_last = 0;
	if (lookup >= p->interp_lo && lookup < p->interp_hi)
		return hs_interp(w);
	if (lookup >= w->blob.lo && lookup < w->blob.hi) {
		w->hits++;
	} else if (hs_find_blob(w, lookup)) {
		w->blob.hi = 0;
		return HS_STEP_FAIL;
	}
	if (w->blob.kind == HS_BLOB_INTERP)
		return hs_interp(w);
	w->kind_last = w->blob.kind;
	if (w->blob.kind == HS_BLOB_NMETHOD || w->blob.kind == HS_BLOB_NATIVE) {
		tag = FW_TAG_HS_JIT;
		if (!leaf && (pc == w->blob.deopt || pc == w->blob.deopt_mh) && w->blob.deopt) {
			/* deoptimized: the frame returns into the handler; the pc it stood at is
			 * saved in the frame */
			if (HS_READ(w, &real, 8, w->sp + w->blob.orig_pc_offset) ||
			    real < w->blob.lo || real >= w->blob.hi)
				real = pc;
			else
				w->deopt++;
		}
	} else {
		tag = FW_TAG_HS_STUB;
	}
	pos = real >= w->blob.code_begin && real - w->blob.code_begin < HS_NO_POS ?
		      real - w->blob.code_begin : HS_NO_POS;
	w->out[0] = (tag << FW_TAG_SHIFT) | (w->blob.lo & FW_DATA_MASK);
	w->out[1] = HS_INFO(w->blob.cookie, pos);
	if (w->blob.frame_size == 0)
		return hs_stub(w);
	if (leaf) {
		prologue = w->blob.frame_complete >= 0 && pc >= w->blob.code_begin &&
			   pc - w->blob.code_begin < (__u64)w->blob.frame_complete;
		if (hs_leaf_edges(w, prologue, &rc))
			return rc;
	}
	return hs_sized(w);
}

#endif
