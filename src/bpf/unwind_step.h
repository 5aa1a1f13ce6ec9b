/* unwind_step.h: one step of the table-driven x86-64 user-stack unwinder, shared by the BPF
 * program (unwind_user.bpf.h) and user space (src/agent/unwinder.c, which unwinds stack
 * snapshots, and the unit tests, which replay recorded stacks). Tables: bpf/unwind.h.
 *
 * The includer defines, before including this file:
 *   UNW_INLINE                      function attribute (__always_inline in BPF)
 *   UNW_READ_U64(st, addr, dstp)    read 8 bytes of the unwound process at addr; 0 on success
 *   UNW_READ_2U64(st, addr, dst)    (optional) read 16 bytes at addr into __u64 dst[2]; 0 on
 *                                   success (default: two UNW_READ_U64)
 *   UNW_MAPPING(st, idx)            const struct unwind_mapping * at index idx, or NULL
 *   UNW_ENTRY(st, idx)              const struct unwind_entry * at index idx, or NULL
 *   UNW_EMIT(st, word)              append a frame word; 0 on success, non-zero when full
 *   UNW_RUNTIME_HOOK(st, m, e)      (optional) hands the frame to the walker of mapping m's
 *                                   kind (m->kind, enum unwinder_kind). Called after the native
 *                                   word for st->pc was emitted (at st->n - 1), before the
 *                                   native rule is applied, when
 *                                     - the entry e has UNW_F_INTERP (an interpreter's eval
 *                                       loop inside a native file), or
 *                                     - m has UNW_MAP_RUNTIME (code a runtime claimed, e.g. a
 *                                       JIT code cache); e is NULL then.
 *                                   The walker may replace the native word or add words after
 *                                   it, and returns
 *                                     UNW_HOOK_NATIVE (0): go on with the native rule for
 *                                       st->pc/sp/bp (an interpreter: its frames are emitted,
 *                                       the C frame of the eval loop unwinds as usual);
 *                                     UNW_HOOK_STOP (1): the unwind is over (st->result set);
 *                                     UNW_HOOK_MOVED (2): the walker unwound the frame itself
 *                                       and left the caller's registers in st->pc/sp/bp (and
 *                                       UNW_S_RETADDR in st->flags when pc is a return
 *                                       address): the next step starts from there (a JIT
 *                                       frame handing back to native code, or to another JIT
 *                                       frame).
 *   UNW_READ_CODE(st, addr, dst)    (optional) read 16 bytes of code at addr into __u64 dst[2];
 *                                   0 on success (default: UNW_READ_2U64)
 *   UNW_SET_LAST(st, word)          (optional) replace the frame word emitted last
 *                                   (default: nothing, the native word stays)
 *   UNW_JIT_LINKS(st)               (optional) const struct unwind_jit_links * of the process
 *                                   (unwind.h: PCRE2 JIT LINKS), or NULL; asked only in a
 *                                   mapping with UNW_MAP_JIT_LINKS
 *
 * The state below is all an unwinder of another kind (an interpreter walker) needs to read and
 * update: registers of the current frame, where the process's mappings are, and the result. */
#ifndef SCORCH_BPF_UNWIND_STEP_H
#define SCORCH_BPF_UNWIND_STEP_H

#include "bpf/unwind.h"

#ifndef UNW_RUNTIME_HOOK
#define UNW_RUNTIME_HOOK(st, m, e) UNW_HOOK_NATIVE
#endif

#ifndef UNW_JIT_LINKS
#define UNW_JIT_LINKS(st) ((const struct unwind_jit_links *)0)
#endif

#ifndef UNW_SET_LAST
#define UNW_SET_LAST(st, word) do { } while (0)
#endif

#ifndef UNW_READ_2U64
#define UNW_READ_2U64(st, addr, dst) \
	(UNW_READ_U64(st, (addr), &(dst)[0]) || UNW_READ_U64(st, (addr) + 8, &(dst)[1]))
#endif

#ifndef UNW_READ_CODE
#define UNW_READ_CODE(st, addr, dst) UNW_READ_2U64(st, addr, dst)
#endif

/* The entries [*lo, *hi) (from m->table_first) among which the one for table-relative address
 * rel lies, from the table's page index (unwind.h: PAGE INDEX): two words of the index, mostly
 * in one slot. Returns 0, or 1 when no entry holds rel (past the last bucket: the table's
 * closing UNW_INVALID entry holds it) or the index is not readable. */
static UNW_INLINE int unwind_index_range(struct unw_state *st, const struct unwind_mapping *m,
					 __u64 rel, __u32 *lo, __u32 *hi)
{
	const struct unwind_entry *e;
	__u64 b = rel >> (m->index_shift & 31);
	__u32 slot, w0, w1;

	if (b + 1 >= m->index_count)
		return 1;
	slot = m->table_first + m->table_count + (__u32)(b >> 1);
	e = UNW_ENTRY(st, slot);
	if (!e)
		return 1;
	if (b & 1) {
		w0 = ((const __u32 *)e)[1];
		e = UNW_ENTRY(st, slot + 1);
		if (!e)
			return 1;
		w1 = ((const __u32 *)e)[0];
	} else {
		w0 = ((const __u32 *)e)[0];
		w1 = ((const __u32 *)e)[1];
	}
	if (w0 > w1 || w1 >= m->table_count)
		return 1;
	*lo = w0;
	*hi = w1 + 1;
	return 0;
}

/* UNW_HAVE_SEARCH: the includer provides unwind_find_mapping() and unwind_find_entry() with
 * the semantics below (BPF does, with bpf_loop, to keep the verifier's work linear). Both
 * store the index of what they found in *idx. */
#ifndef UNW_HAVE_SEARCH
/* The mapping holding pc, or NULL. Mappings are sorted by start. */
static UNW_INLINE const struct unwind_mapping *unwind_find_mapping(struct unw_state *st,
								   __u64 pc, __u32 *idx)
{
	const struct unwind_mapping *m;
	__u32 lo = 0, hi = st->map_count, i;

	if (hi == 0 || hi > UNW_MAX_PID_MAPPINGS)
		return 0;
	for (i = 0; i < 13; i++) { /* log2(UNW_MAX_PID_MAPPINGS) + 1 */
		__u32 mid;

		if (hi - lo <= 1)
			break;
		mid = lo + (hi - lo) / 2;
		m = UNW_MAPPING(st, st->map_first + mid);
		if (!m)
			return 0;
		if (m->start <= pc)
			lo = mid;
		else
			hi = mid;
	}
	*idx = st->map_first + lo;
	m = UNW_MAPPING(st, *idx);
	if (!m || pc < m->start || pc >= m->end)
		return 0;
	return m;
}

/* The entry for table-relative address rel in the mapping's table, or NULL. */
static UNW_INLINE const struct unwind_entry *unwind_find_entry(struct unw_state *st,
							       const struct unwind_mapping *m,
							       __u64 rel, __u32 *idx)
{
	const struct unwind_entry *e;
	__u32 lo = 0, hi = m->table_count, first = m->table_first, i;

	if (hi == 0 || hi > UNW_MAX_FILE_ENTRIES || rel > 0xffffffffULL)
		return 0;
	if (m->index_shift && unwind_index_range(st, m, rel, &lo, &hi))
		return 0;
	for (i = 0; i < 25; i++) { /* log2(UNW_MAX_FILE_ENTRIES) + 1 */
		__u32 mid;

		if (hi - lo <= 1)
			break;
		mid = lo + (hi - lo) / 2;
		e = UNW_ENTRY(st, first + mid);
		if (!e)
			return 0;
		if (e->pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	*idx = first + lo;
	e = UNW_ENTRY(st, *idx);
	if (!e || e->pc > rel)
		return 0;
	return e;
}

#endif

/* The mapping holding lookup: the last one found when it still matches, else a search. */
static UNW_INLINE const struct unwind_mapping *unwind_mapping_of(struct unw_state *st,
								 __u64 lookup)
{
	const struct unwind_mapping *m;
	__u32 idx = 0;

	if (st->last_map) {
		m = UNW_MAPPING(st, st->last_map - 1);
		if (m && lookup >= m->start && lookup < m->end)
			return m;
	}
	m = unwind_find_mapping(st, lookup, &idx);
	if (m)
		st->last_map = idx + 1;
	return m;
}

/* The entry for lookup in mapping m: the last one found when the address repeats (a
 * recursion), else a search. */
static UNW_INLINE const struct unwind_entry *unwind_entry_of(struct unw_state *st,
							     const struct unwind_mapping *m,
							     __u64 lookup)
{
	const struct unwind_entry *e;
	__u32 idx = 0;

	if (st->last_entry && lookup == st->last_lookup) {
		e = UNW_ENTRY(st, st->last_entry - 1);
		if (e)
			return e;
	}
	e = unwind_find_entry(st, m, lookup - m->bias, &idx);
	if (e) {
		st->last_lookup = lookup;
		st->last_entry = idx + 1;
	}
	return e;
}

/* PCRE2's JIT code (unwind.h: PCRE2 JIT LINKS). Whether A can be the jit_arguments pointer
 * of a JIT frame whose sp is st->sp: on the stack, above the frame and not far (heap data never
 * is), holding what the struct starts with (a stack pointer, then the subject pointers str,
 * begin, end with begin <= str <= end). */
static UNW_INLINE int unwind_jit_args(struct unw_state *st, __u64 a)
{
	__u64 args[4];

	if ((a & 7) || a <= st->sp || a - st->sp > UNW_JIT_MAX_REACH)
		return 0;
	if (UNW_READ_2U64(st, a, args) || UNW_READ_2U64(st, a + 16, &args[2]))
		return 0;
	return args[0] && args[2] && args[2] <= args[1] && args[1] <= args[3];
}

/* The caller of a JIT frame whose return address should be at slot: it is when the word there
 * is the ra of a link and the jit_arguments pointer that link implies (slot + below) checks
 * out. Moves st there (pc = ra, sp = slot + 8) and returns 0, else 1. */
static UNW_INLINE int unwind_jit_at(struct unw_state *st, const struct unwind_jit_links *jl,
				   __u64 slot)
{
	__u64 w;
	__u32 i;

	if (slot < st->sp || UNW_READ_U64(st, slot, &w))
		return 1;
	for (i = 0; i < UNW_JIT_LINKS_MAX; i++) {
		if (i >= jl->count)
			break;
		if (w == jl->link[i].ra && unwind_jit_args(st, slot + jl->link[i].below)) {
			st->pc = w;
			st->sp = slot + 8;
			st->flags |= UNW_S_RETADDR;
			return 0;
		}
	}
	return 1;
}

#define UNW_JIT_IS_PUSH(b) ((b) >= 0x50 && (b) <= 0x57)
#define UNW_JIT_IS_POP(b) ((b) >= 0x58 && (b) <= 0x5f)
#define UNW_JIT_MAX_PUSHES 6
/* Byte i (0..31) of the code words c0..c3, from registers: a byte array on the BPF stack
 * indexed by a variable makes clang emit pointer arithmetic the verifier refuses. */
#define UNW_CB(i) \
	((__u32)(((i) & 31) < 8 ? c0 >> (((i) & 7) * 8) :	\
		 ((i) & 31) < 16 ? c1 >> (((i) & 7) * 8) :	\
		 ((i) & 31) < 24 ? c2 >> (((i) & 7) * 8) :	\
		 c3 >> (((i) & 7) * 8)) & 0xff) /* SLJIT saves at most 6 registers on x86-64 */

/* The JIT function's own prologue or epilogue at the exact pc (rbp is not A there yet, or no
 * more), from the instructions at pc, which SLJIT emits the same for every function:
 *   entry:  push reg (x up to 6); mov reg, reg (x any); sub $N, %rsp
 *   exit:   add $N, %rsp; pop reg (x up to 6); ret
 * Before the sub (read forward from pc) the return address is one of the words from sp up,
 * above the pushes done so far: the first that is a link's ra with its jit_arguments in place
 * (the pushed words are the caller's registers, never a return address into libpcre2). Right
 * after the sub (read backward from pc) it is at sp + N + 8 x pushes. In the exit, at
 * sp + N + 8 x pops to come, and rbp is the word `pop %rbp` would load. Returns 0 when st was
 * moved to the caller, 1 otherwise. */
static UNW_INLINE int unwind_jit_edge(struct unw_state *st, const struct unwind_jit_links *jl)
{
	__u64 code[4], c0, c1, c2, c3, slot, imm = 0, bp_at = 0;
	__u32 i = 0, k = 0, pushes = 0;

	if (UNW_READ_CODE(st, st->pc, code) || UNW_READ_CODE(st, st->pc + 16, &code[2]))
		return 1;
	c0 = code[0];
	c1 = code[1];
	c2 = code[2];
	c3 = code[3];
	/* exit: [add $N, %rsp;] pop...; ret */
	if ((c0 & 0xffffff) == 0xc48348 && UNW_CB(3) < 0x80) {        /* 48 83 c4 ib */
		imm = UNW_CB(3);
		i = 4;
	} else if ((c0 & 0xffffff) == 0xc48148 && UNW_CB(6) < 0x80) { /* 48 81 c4 id */
		imm = (c0 >> 24) & 0xffffffff;
		i = 7;
	}
	for (k = 0; k < UNW_JIT_MAX_PUSHES; k++) {
		if (i >= 30)
			break;
		if (UNW_JIT_IS_POP(UNW_CB(i))) {
			if (UNW_CB(i) == 0x5d)
				bp_at = st->sp + imm + 8 * k + 1; /* + 1: found */
			i++;
		} else if (UNW_CB(i) == 0x41 && UNW_JIT_IS_POP(UNW_CB(i + 1))) {
			i += 2;
		} else {
			break;
		}
	}
	if (i < 32 && UNW_CB(i) == 0xc3) {
		__u64 bp = 0;

		slot = st->sp + imm + 8 * k;
		if (bp_at && UNW_READ_U64(st, bp_at - 1, &bp))
			return 1;
		if (unwind_jit_at(st, jl, slot))
			return 1;
		if (bp_at)
			st->bp = bp;
		return 0;
	}
	/* entry, before the sub: push...; mov reg, reg...; sub $N, %rsp */
	for (i = 0, k = 0; k < 12; k++) {
		if (i >= 29)
			break;
		if (UNW_JIT_IS_PUSH(UNW_CB(i)))
			i++;
		else if (UNW_CB(i) == 0x41 && UNW_JIT_IS_PUSH(UNW_CB(i + 1)))
			i += 2;
		else if ((UNW_CB(i) & 0xfa) == 0x48 &&
			 (UNW_CB(i + 1) == 0x89 || UNW_CB(i + 1) == 0x8b) &&
			 UNW_CB(i + 2) >= 0xc0)
			i += 3;
		else
			break;
	}
	if (i < 29 && UNW_CB(i) == 0x48 && (UNW_CB(i + 1) == 0x83 || UNW_CB(i + 1) == 0x81) &&
	    UNW_CB(i + 2) == 0xec) {
		for (k = 0; k <= UNW_JIT_MAX_PUSHES; k++)
			if (!unwind_jit_at(st, jl, st->sp + 8 * k))
				return 0;
		return 1;
	}
	/* entry, right after the sub: read backward */
	if (UNW_READ_CODE(st, st->pc - 32, code) || UNW_READ_CODE(st, st->pc - 16, &code[2]))
		return 1;
	c0 = code[0];
	c1 = code[1];
	c2 = code[2];
	c3 = code[3];
	if (((c3 >> 32) & 0xffffff) == 0xec8348 && UNW_CB(31) < 0x80) {       /* 48 83 ec ib */
		imm = UNW_CB(31);
		i = 28;
	} else if (((c3 >> 8) & 0xffffff) == 0xec8148 && UNW_CB(31) < 0x80) { /* 48 81 ec id */
		imm = (c3 >> 32) & 0xffffffff;
		i = 25;
	} else {
		return 1;
	}
	for (k = 0; k < 8; k++) {
		if (i < 3 || i > 28)
			break;
		if ((UNW_CB(i - 3) & 0xfa) == 0x48 &&
		    (UNW_CB(i - 2) == 0x89 || UNW_CB(i - 2) == 0x8b) && UNW_CB(i - 1) >= 0xc0)
			i -= 3;
		else
			break;
	}
	for (k = 0; k < UNW_JIT_MAX_PUSHES; k++) {
		if (i < 1 || i > 28 || !UNW_JIT_IS_PUSH(UNW_CB(i - 1)))
			break;
		i -= (i >= 2 && UNW_CB(i - 2) == 0x41) ? 2 : 1;
		pushes++;
	}
	if (!pushes)
		return 1;
	return unwind_jit_at(st, jl, st->sp + imm + 8 * pushes);
}

/* The caller of a JIT frame whose jit_arguments pointer is a, from the links, nearest to a
 * first: moves st there and returns 0, else 1. */
static UNW_INLINE int unwind_jit_from_args(struct unw_state *st,
					   const struct unwind_jit_links *jl, __u64 a)
{
	__u64 slot, w;
	__u32 i;

	if (!unwind_jit_args(st, a))
		return 1;
	for (i = 0; i < UNW_JIT_LINKS_MAX; i++) {
		if (i >= jl->count)
			break;
		slot = a - jl->link[i].below;
		if (slot < st->sp || slot >= a)
			break;
		if (UNW_READ_U64(st, slot, &w))
			break;
		if (w == jl->link[i].ra) {
			st->pc = w;
			st->sp = slot + 8;
			st->flags |= UNW_S_RETADDR;
			return 0;
		}
	}
	return 1;
}

/* A frame of PCRE2's JIT code: in the body of the matcher rbp is the jit_arguments pointer A,
 * and the links are tried nearest to A first: each is then the first return address found
 * below A where it can be, so an older copy of a return address left deeper in the stack
 * (stale data in the JIT frame) is never reached: in the direct call A - 8 holds
 * pcre2_jit_match()'s own link, and through jit_machine_stack_exec() A - 8 holds the return
 * address into pcre2_jit_match() of that call, which is no link. At the exact pc of a sample
 * the JIT function may be in its prologue or epilogue instead (unwind_jit_edge()), or between
 * its `sub $N, %rsp` and the `mov %rbx, %rbp` that sets A (PCRE2 resets the ovector there):
 * rbx holds A then (its first move of rdi), which BPF has for the leaf (st->leaf_bx). Moves
 * st to the caller (rbp is left: the caller's CFI restores it, which user space checked) and
 * returns 0, or returns 1 (no link: the caller stays unknown). */
static UNW_INLINE int unwind_jit_link(struct unw_state *st)
{
	const struct unwind_jit_links *jl = UNW_JIT_LINKS(st);

	if (!jl)
		return 1;
	if (!unwind_jit_from_args(st, jl, st->bp))
		return 0;
	if (st->flags & UNW_S_RETADDR)
		return 1; /* a call from the body: rbp is A there */
	if (!unwind_jit_edge(st, jl))
		return 0;
	/* the sample's own registers: the JIT frame is the leaf, no signal frame crossed */
	if (st->leaf_bx && st->n == 1 && !st->signals)
		return unwind_jit_from_args(st, jl, st->leaf_bx);
	return 1;
}

/* Emit the current frame and move to its caller. Returns 0 to go on, 1 when the unwind is
 * over (st->result says why). */
static UNW_INLINE int unwind_step(struct unw_state *st)
{
	const struct unwind_mapping *m;
	const struct unwind_entry *e;
	/* the frame's rule, a copy: one kind of pointer for the verifier to follow whichever
	 * rule applies (the frame-pointer rule here unless a table says otherwise) */
	struct unwind_entry rule = { 0, 16, UNW_CFA_RBP, -2 };
	__u64 lookup, cfa, ra, v, old_bp;
	__u32 kind, fp = 0, guess = st->flags & (UNW_S_GUESSED | UNW_S_SWITCHED);

	/* a caller found by the leaf rule or across a stack switch is only a guess until its
	 * mapping is found below */
	st->flags &= ~(UNW_S_GUESSED | UNW_S_SWITCHED);
	if (st->pc == 0 && st->n > 0) {
		/* a zero return address ends some stacks (a guessed one ends nothing) */
		st->result = guess ? USTAT_ERR_INVALID : USTAT_COMPLETE;
		goto guessed;
	}
	if (st->pc >> FW_TAG_SHIFT) {
		/* not a user address: emitted, its top byte would read as a runtime's tag */
		st->result = USTAT_ERR_BAD_PC;
		goto guessed;
	}
	if (UNW_EMIT(st, st->pc)) {
		st->result = USTAT_TRUNCATED;
		return 1;
	}
	st->frames++;
	lookup = st->pc - ((st->flags & UNW_S_RETADDR) ? 1 : 0);
	m = unwind_mapping_of(st, lookup);
	if (!m) {
		st->result = USTAT_ERR_NO_MAPPING;
		if (guess) {
			st->n--; /* the guess was wrong: no frame made up */
			st->frames--;
			st->result = USTAT_ERR_INVALID;
		}
		goto guessed;
	}
	guess = 0; /* the pc is in code we know: this frame is real */
	if (m->flags & UNW_MAP_RUNTIME) {
		int r = UNW_RUNTIME_HOOK(st, m, (const struct unwind_entry *)0);

		if (r == UNW_HOOK_STOP)
			return 1;
		if (r == UNW_HOOK_MOVED)
			return 0;
	}
	if ((m->flags & UNW_MAP_JIT_LINKS) && !unwind_jit_link(st)) {
		/* anonymous memory has no name: this frame is known to be PCRE2's JIT code */
		UNW_SET_LAST(st, (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_PCRE_JIT);
		return 0;
	}
	if (m->flags & UNW_MAP_FP) {
		fp = 1;
		/* JIT code that does not keep frame pointers (PCRE2's SLJIT code) gives garbage */
		if (m->flags & UNW_MAP_ANON)
			guess = UNW_S_GUESSED;
	} else if ((m->flags & UNW_MAP_NO_TABLE) || m->table_count == 0) {
		st->result = USTAT_ERR_NO_TABLE;
		return 1;
	} else {
		e = unwind_entry_of(st, m, lookup);
		if (!e || (e->kind & UNW_KIND_MASK) == UNW_INVALID) {
			/* No CFI: at an exact pc (the leaf, an interrupted frame) assume a leaf
			 * function without a frame (assembly such as HotSpot's SpinPause), its
			 * return address at [rsp]; kept only if it lands in a known mapping. */
			if (st->flags & UNW_S_RETADDR) {
				st->result = USTAT_ERR_INVALID;
				return 1;
			}
			rule.off = 8;
			rule.kind = UNW_CFA_RSP;
			rule.rbp = 0;
			guess = UNW_S_GUESSED;
		} else {
			if (e->kind & UNW_F_INTERP) {
				int r = UNW_RUNTIME_HOOK(st, m, e);

				if (r == UNW_HOOK_STOP)
					return 1;
				if (r == UNW_HOOK_MOVED)
					return 0;
			}
			rule = *e;
		}
	}
	e = &rule;
	kind = e->kind & UNW_KIND_MASK;
	old_bp = st->bp;
	switch (kind) {
	case UNW_CFA_RSP:
		cfa = st->sp + UNW_CFA_OFF(e);
		break;
	case UNW_CFA_RBP:
		if (st->bp == 0) {
			st->result = USTAT_COMPLETE; /* the frame-pointer chain ends with rbp 0 */
			return 1;
		}
		cfa = st->bp + UNW_CFA_OFF(e);
		break;
	case UNW_PLT:
		cfa = st->sp + (e->off & 0xff) + ((st->pc & 15) >= (__u64)(e->off >> 8) ? 8 : 0);
		break;
	case UNW_DEREF_RBP:
		if (UNW_READ_U64(st, st->bp + (__s64)(__s16)e->off, &cfa)) {
			st->result = USTAT_ERR_READ;
			return 1;
		}
		break;
	case UNW_SIGNAL: {
		/* The handler returned into the trampoline: sp is just past the return address,
		 * the interrupted registers are in the ucontext's mcontext. */
		__u64 mc = st->sp + UNW_SIGFRAME_MCONTEXT, rip, rsp, rbp;

		if (UNW_READ_U64(st, mc + UNW_SIGCTX_RIP, &rip) ||
		    UNW_READ_U64(st, mc + UNW_SIGCTX_RSP, &rsp) ||
		    UNW_READ_U64(st, mc + UNW_SIGCTX_RBP, &rbp)) {
			st->result = USTAT_ERR_READ;
			return 1;
		}
		st->pc = rip;
		st->sp = rsp;
		st->bp = rbp;
		st->flags &= ~UNW_S_RETADDR; /* the interrupted pc is exact */
		st->signals++;
		return 0;
	}
	case UNW_STOP:
		st->result = USTAT_COMPLETE;
		return 1;
	case UNW_GO_SYSTEMSTACK:
	case UNW_GO_MORESTACK: {
		/* A return address into runtime.systemstack or runtime.morestack: the system stack
		 * (g0) ends here. When the thread's g is that g0, its m's user goroutine (curg)
		 * saved where it switched (Go's own traceback takes the same links):
		 *   - systemstack (gosave_systemstack_switch): sched.sp holds the return address
		 *     into systemstack's caller, sched.bp its RBP; the runtime zeroes sched.sp on
		 *     the way back;
		 *   - morestack: sched.pc and sched.sp are those of the function that called it
		 *     (in its prologue, before its frame), sched.bp its RBP; they are the
		 *     goroutine's while newstack copies its stack (status _Gcopystack). Elsewhere
		 *     newstack may have scheduled another goroutine, whose saved registers are not
		 *     this stack's caller.
		 * Anything else is the end. */
		__u64 g, mp, g0, curg, ssp, sbp, spc = 0, status = UNW_GO_GCOPYSTACK;
		__u32 more = kind == UNW_GO_MORESTACK;

		if (!st->fsbase || (st->flags & UNW_S_GO_SWITCHED) ||
		    UNW_READ_U64(st, st->fsbase + (__s64)e->rbp * 8, &g) || !g ||
		    UNW_READ_U64(st, g + UNW_GO_G_M, &mp) || !mp ||
		    UNW_READ_U64(st, mp + UNW_GO_M_G0, &g0) || g0 != g ||
		    UNW_READ_U64(st, mp + (__u64)(e->off & 0xff) * 8, &curg) || !curg ||
		    curg == g ||
		    (more && UNW_READ_U64(st, curg + (__u64)(e->off >> 8) * 4, &status)) ||
		    (__u32)status != UNW_GO_GCOPYSTACK ||
		    UNW_READ_U64(st, curg + UNW_GO_G_SCHED_SP, &ssp) || !ssp ||
		    UNW_READ_U64(st, curg + (more ? UNW_GO_G_SCHED_BP : (__u64)(e->off >> 8) * 8),
				 &sbp) ||
		    UNW_READ_U64(st, more ? curg + UNW_GO_G_SCHED_PC : ssp, &spc) || !spc) {
			st->result = USTAT_COMPLETE;
			return 1;
		}
		st->pc = spc;
		st->sp = more ? ssp : ssp + 8;
		st->bp = sbp;
		st->flags |= UNW_S_RETADDR | UNW_S_GO_SWITCHED;
		return 0;
	}
	case UNW_RA_REG:
		/* only the leaf's registers are known, and only rdi is kept */
		if ((st->flags & UNW_S_RETADDR) || st->frames != 1 || st->signals ||
		    e->rbp != UNW_DWARF_RDI || !st->leaf_di) {
			st->result = USTAT_ERR_INVALID;
			return 1;
		}
		st->pc = st->leaf_di;
		st->sp += e->off;
		st->flags |= UNW_S_RETADDR;
		return 0;
	case UNW_GO_ASMCGOCALL: {
		/* A return address into runtime.asmcgocall: the C function it called on the
		 * system stack returned here, SP is where it was at the call. asmcgocall saved
		 * there the goroutine's g and how far below g.stack.hi its own SP was (the
		 * goroutine's stack may move during a callback into Go), or, when it did not
		 * switch stacks, a g of 0 and the SP itself. At that SP: the return address into
		 * its caller (runtime.cgocall); RBP is still the caller's (C code saves it). */
		__u64 gp, depth, hi, osp;

		if ((st->flags & UNW_S_GO_CGO) ||
		    UNW_READ_U64(st, st->sp + (__u64)(e->off & 0xff) * 8, &gp) ||
		    UNW_READ_U64(st, st->sp + (__u64)(e->off >> 8) * 8, &depth)) {
			st->result = USTAT_COMPLETE;
			return 1;
		}
		osp = depth;
		if (gp) {
			if (UNW_READ_U64(st, gp + UNW_GO_G_STACK_HI, &hi) || depth > hi) {
				st->result = USTAT_COMPLETE;
				return 1;
			}
			osp = hi - depth;
		}
		if (!osp || UNW_READ_U64(st, osp, &ra) || !ra) {
			st->result = USTAT_COMPLETE;
			return 1;
		}
		st->pc = ra;
		st->sp = osp + 8;
		st->flags |= UNW_S_RETADDR | UNW_S_GO_CGO;
		return 0;
	}
	default:
		st->result = USTAT_ERR_INVALID;
		return 1;
	}
	if (cfa <= st->sp || cfa - st->sp > (1ULL << 30)) {
		/* The CFA must move up the stack, unless the frame's CFI puts it in rbp: then
		 * this is code that switched stacks and left the old stack pointer there (Rust's
		 * psm, coroutine libraries), followed when the caller is code we know; else the
		 * stack ends with [stack switch]. */
		if ((kind != UNW_CFA_RBP && kind != UNW_DEREF_RBP) || fp) {
			st->result = USTAT_ERR_LOOP;
			return 1;
		}
		if (st->switches >= UNW_MAX_SWITCHES) {
			st->result = USTAT_STACK_SWITCH;
			return 1;
		}
		st->switches++;
		guess = UNW_S_SWITCHED;
	}
	if (e->rbp == -2 && kind != UNW_DEREF_RBP) {
		/* the usual `push rbp` frame: the caller's RBP sits just below the return
		 * address, one read for both */
		__u64 pair[2];

		if (UNW_READ_2U64(st, cfa - 16, pair)) {
			st->result = USTAT_ERR_READ;
			goto guessed;
		}
		st->bp = pair[0];
		ra = pair[1];
	} else if (UNW_READ_U64(st, cfa - 8, &ra)) {
		st->result = USTAT_ERR_READ;
		goto guessed;
	} else if (kind == UNW_DEREF_RBP) {
		if (UNW_READ_U64(st, old_bp + (__s64)e->rbp * 8, &v)) {
			st->result = USTAT_ERR_READ;
			goto guessed;
		}
		st->bp = v;
	} else if (e->rbp) {
		if (UNW_READ_U64(st, cfa + (__s64)e->rbp * 8, &v)) {
			st->result = USTAT_ERR_READ;
			goto guessed;
		}
		st->bp = v;
	}
	st->sp = cfa;
	st->pc = ra;
	st->flags |= UNW_S_RETADDR | guess;
	if (ra == 0) {
		st->result = guess ? USTAT_ERR_INVALID : USTAT_COMPLETE;
		goto guessed;
	}
	return 0;
guessed:
	/* a switch we could not follow ends the stack as a switch, not as an error */
	if ((guess & UNW_S_SWITCHED) && st->result != USTAT_COMPLETE)
		st->result = USTAT_STACK_SWITCH;
	return 1;
}

#endif
