/* test_unwind_step.c: the hand-over between the native unwind step (bpf/unwind_step.h, the same
 * code BPF runs) and a runtime walker, on a synthetic stack: a range a runtime claimed
 * (UNW_MAP_RUNTIME, a JIT) whose walker unwinds its frame and gives the caller's registers back
 * (UNW_HOOK_MOVED), a walker that declines (UNW_HOOK_NATIVE: the native rule applies), one that
 * ends the unwind (UNW_HOOK_STOP), interpreter entries (UNW_F_INTERP) that call the walker
 * of the mapping's kind only, a garbage return address whose top byte would read as a
 * runtime's tag (never emitted: the unwind ends in USTAT_ERR_BAD_PC), the leaf rule for an exact
 * pc without CFI, stack switches (a CFA from rbp on another stack: followed when the caller is
 * known code, else USTAT_STACK_SWITCH; Go's time.now leads back to the goroutine's stack so),
 * the frame-pointer guess in anonymous memory, Go's runtime.systemstack (UNW_GO_SYSTEMSTACK),
 * morestack (UNW_GO_MORESTACK) and asmcgocall (UNW_GO_ASMCGOCALL) back to the goroutine's
 * stack, and the links through PCRE2's JIT code (UNW_MAP_JIT_LINKS: its body, prologue and
 * epilogue, a helper it called, and what must not be taken for a link). */
#include <linux/types.h>

#include "bpf/sampler.h"
#include "bpf/unwind.h"
#include "test.h"

#include <string.h>

#define STACK_BASE 0x7000ULL
#define NATIVE_LO 0x1000ULL  /* frame-pointer code */
#define INTERP_LO 0x3000ULL  /* a file with an interpreter range at 0x3100..0x3200 */
#define JIT_LO 0x10000ULL    /* claimed by a runtime */

struct env {
	uint64_t stack[64];            /* memory at STACK_BASE */
	struct unwind_mapping maps[3];
	struct unwind_entry entries[4];
	uint64_t words[64];
	int hook_calls, interp_calls;
	int jit_mode;                  /* what the JIT walker answers */
	struct unwind_jit_links jit;   /* the process's PCRE2 JIT links */
	uint8_t code[64];              /* code at JIT_LO */
};

static struct env E;

static int env_read(__u64 addr, __u64 *out)
{
	if (addr < STACK_BASE || addr + 8 > STACK_BASE + sizeof(E.stack) || (addr & 7))
		return -1;
	*out = E.stack[(addr - STACK_BASE) / 8];
	return 0;
}

static const struct unwind_mapping *env_mapping(uint32_t i)
{
	return i < 3 ? &E.maps[i] : NULL;
}

static const struct unwind_entry *env_entry(uint32_t i)
{
	return i < 4 ? &E.entries[i] : NULL;
}

static int env_emit(struct unw_state *st, uint64_t w)
{
	if (st->n >= 63)
		return 1;
	E.words[st->n++] = w;
	return 0;
}

/* A walker: for the JIT, a frame is [sp] = return address, [sp + 8] = caller's rbp. */
static int env_hook(struct unw_state *st, const struct unwind_mapping *m,
		    const struct unwind_entry *e)
{
	__u64 ra, bp;

	E.hook_calls++;
	if (e) { /* an interpreter entry */
		E.interp_calls++;
		E.words[st->n - 1] = (FW_TAG_FIRST(m->kind) << FW_TAG_SHIFT) | 0x1e;
		return UNW_HOOK_NATIVE;
	}
	if (E.jit_mode == UNW_HOOK_STOP) {
		st->result = USTAT_COMPLETE;
		return UNW_HOOK_STOP;
	}
	if (E.jit_mode == UNW_HOOK_NATIVE)
		return UNW_HOOK_NATIVE;
	if (env_read(st->sp, &ra) || env_read(st->sp + 8, &bp))
		return UNW_HOOK_NATIVE;
	E.words[st->n - 1] = (FW_TAG_FIRST(m->kind) << FW_TAG_SHIFT) | (st->pc - JIT_LO);
	st->pc = ra;
	st->sp += 16;
	st->bp = bp;
	st->flags |= UNW_S_RETADDR;
	return UNW_HOOK_MOVED;
}

static const struct unwind_jit_links *env_jit(void)
{
	return E.jit.count ? &E.jit : NULL;
}

static int env_code(__u64 addr, __u64 *out)
{
	uint8_t buf[16];
	size_t i;

	for (i = 0; i < 16; i++)
		buf[i] = addr + i >= JIT_LO && addr + i < JIT_LO + sizeof(E.code)
				 ? E.code[addr + i - JIT_LO] : 0xcc;
	memcpy(out, buf, 16);
	return 0;
}

#define UNW_INLINE inline
#define UNW_JIT_LINKS(st) env_jit()
#define UNW_SET_LAST(st, word) (E.words[(st)->n - 1] = (word))
#define UNW_READ_CODE(st, addr, dst) env_code((addr), (dst))
#define UNW_READ_U64(st, addr, dstp) env_read((addr), (dstp))
#define UNW_MAPPING(st, idx) env_mapping(idx)
#define UNW_ENTRY(st, idx) env_entry(idx)
#define UNW_EMIT(st, word) env_emit((st), (word))
#define UNW_RUNTIME_HOOK(st, m, e) env_hook((st), (m), (e))
#include "bpf/unwind_step.h"

/* Stack, leaf first: JIT frame at pc JIT_LO+0x40 (sp = STACK_BASE) returning into native code
 * at NATIVE_LO+0x10 whose frame-pointer frame returns into the interpreter at INTERP_LO+0x150,
 * itself a frame-pointer frame whose caller is 0 (the end). */
static size_t run_ra(int jit_mode, uint64_t native_ra, uint32_t *result)
{
	struct unw_state st;
	int i;

	memset(&E, 0, sizeof(E));
	E.jit_mode = jit_mode;
	/* JIT frame: [0] = return address, [1] = caller's rbp */
	E.stack[0] = NATIVE_LO + 0x10;
	E.stack[1] = STACK_BASE + 0x40;
	/* native frame (rbp = STACK_BASE + 0x40): saved rbp, return address */
	E.stack[8] = STACK_BASE + 0x80;
	E.stack[9] = native_ra;
	/* interpreter frame (rbp = STACK_BASE + 0x80): saved rbp 0, return address 0 */
	E.stack[16] = 0;
	E.stack[17] = 0;
	E.maps[0] = (struct unwind_mapping){ NATIVE_LO, NATIVE_LO + 0x1000, 0, 0, 0, UNW_MAP_FP,
					     UNWINDER_NATIVE, 0, 1 };
	E.maps[1] = (struct unwind_mapping){ INTERP_LO, INTERP_LO + 0x1000, INTERP_LO, 0, 4,
					     UNW_MAP_INTERP, UNWINDER_PYTHON, 0, 2 };
	E.maps[2] = (struct unwind_mapping){ JIT_LO, JIT_LO + 0x1000, 0, 0, 0,
					     UNW_MAP_FP | UNW_MAP_RUNTIME, UNWINDER_HOTSPOT, 0, 0 };
	/* the interpreter file's table: frame-pointer rule, the eval range flagged */
	E.entries[0] = (struct unwind_entry){ 0, 16, UNW_CFA_RBP, -2 };
	E.entries[1] = (struct unwind_entry){ 0x100, 16, UNW_CFA_RBP | UNW_F_INTERP, -2 };
	E.entries[2] = (struct unwind_entry){ 0x200, 16, UNW_CFA_RBP, -2 };
	E.entries[3] = (struct unwind_entry){ 0x1000, 0, UNW_INVALID, 0 };
	memset(&st, 0, sizeof(st));
	st.pc = JIT_LO + 0x40;
	st.sp = STACK_BASE;
	st.bp = 0xdead; /* a JIT frame's rbp means nothing to the frame-pointer rule */
	st.map_count = 3;
	for (i = 0; i < 64; i++)
		if (unwind_step(&st))
			break;
	*result = st.result;
	return st.n;
}

static size_t run(int jit_mode, uint32_t *result)
{
	return run_ra(jit_mode, INTERP_LO + 0x150, result);
}

static void test_jit_hands_back(void)
{
	uint32_t result;
	size_t n = run(UNW_HOOK_MOVED, &result);

	CHECK_EQ_INT(result, USTAT_COMPLETE);
	CHECK_EQ_INT(n, 3);
	/* the JIT frame became the walker's word, then native and interpreter frames */
	CHECK_EQ_INT(E.words[0], (FW_TAG_FIRST(UNWINDER_HOTSPOT) << FW_TAG_SHIFT) | 0x40);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
	CHECK_EQ_INT(E.words[2], (FW_TAG_FIRST(UNWINDER_PYTHON) << FW_TAG_SHIFT) | 0x1e);
	CHECK_EQ_INT(E.hook_calls, 2); /* the JIT frame and the interpreter entry, not the rest */
	CHECK_EQ_INT(E.interp_calls, 1);
}

static void test_jit_declines_and_stops(void)
{
	uint32_t result;
	size_t n;

	/* declined: the native rule of the mapping (frame pointers) applies to a bogus rbp */
	n = run(UNW_HOOK_NATIVE, &result);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(E.words[0], JIT_LO + 0x40);
	CHECK(result == USTAT_ERR_READ);
	/* stopped by the walker */
	n = run(UNW_HOOK_STOP, &result);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(result, USTAT_COMPLETE);
	CHECK_EQ_INT(E.hook_calls, 1);
}

/* A frame that switched stacks (Go's time.now on the system stack, its frame pointer on the
 * goroutine's, lower): its table rule puts the CFA in rbp, so the step follows it below SP
 * as a stack switch, since the caller is code we know. */
static size_t run_switch(uint32_t *result)
{
	struct unw_state st;
	int i;

	memset(&E, 0, sizeof(E));
	/* the goroutine's frame (rbp = STACK_BASE + 0x40): saved rbp, return into native code */
	E.stack[8] = STACK_BASE + 0x80;
	E.stack[9] = NATIVE_LO + 0x10;
	/* native frame (rbp = STACK_BASE + 0x80): the end */
	E.stack[16] = 0;
	E.stack[17] = 0;
	E.maps[0] = (struct unwind_mapping){ NATIVE_LO, NATIVE_LO + 0x1000, 0, 0, 0, UNW_MAP_FP,
					     UNWINDER_NATIVE, 0, 1 };
	E.maps[1] = (struct unwind_mapping){ INTERP_LO, INTERP_LO + 0x1000, INTERP_LO, 0, 2, 0,
					     UNWINDER_NATIVE, 0, 0 };
	E.entries[0] = (struct unwind_entry){ 0, 16, UNW_CFA_RBP, -2 };
	E.entries[1] = (struct unwind_entry){ 0x1000, 0, UNW_INVALID, 0 };
	memset(&st, 0, sizeof(st));
	st.pc = INTERP_LO + 0x20;
	st.sp = STACK_BASE + 0x100; /* the system stack, above */
	st.bp = STACK_BASE + 0x40;
	st.map_count = 2;
	for (i = 0; i < 64; i++)
		if (unwind_step(&st))
			break;
	*result = st.result;
	return st.n;
}

static void test_go_time_now(void)
{
	uint32_t result;
	size_t n;

	n = run_switch(&result);
	CHECK_EQ_INT(result, USTAT_COMPLETE);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(E.words[0], INTERP_LO + 0x20);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
}

/* runtime.systemstack's rule: from the system stack (g0) back to the goroutine that switched
 * there, through the thread's g (fs base - 8), g.m, m.g0 == g, m.curg and its g.sched. The
 * "memory" is E.stack: fs base at +0x1f8 (g at +0x1f0), g0 at +0x100, m at +0x140, curg at
 * +0x180; the goroutine's frames at +0x40 (sched.sp: return into native code) and +0x80. */
#define GO_G0 (STACK_BASE + 0x100)
#define GO_M (STACK_BASE + 0x140)
#define GO_CURG (STACK_BASE + 0x180)
#define GO_FS (STACK_BASE + 0x1f8)

static void go_setup(struct unw_state *st, __u64 curg_sp)
{
	memset(&E, 0, sizeof(E));
	E.stack[(GO_FS - 8 - STACK_BASE) / 8] = GO_G0;               /* TLS g */
	E.stack[(GO_G0 + UNW_GO_G_M - STACK_BASE) / 8] = GO_M;        /* g0.m */
	E.stack[(GO_M + UNW_GO_M_G0 - STACK_BASE) / 8] = GO_G0;       /* m.g0 */
	E.stack[(GO_M + 24 - STACK_BASE) / 8] = GO_CURG;              /* m.curg at 24 */
	E.stack[(GO_CURG + UNW_GO_G_SCHED_SP - STACK_BASE) / 8] = curg_sp;
	E.stack[(GO_CURG + 16 - STACK_BASE) / 8] = STACK_BASE + 0x70;  /* sched.bp at 16 */
	/* the goroutine: return address into native code at sched.sp; its frame (rbp + 0x70):
	 * saved rbp, return address 0 (the end) */
	E.stack[8] = NATIVE_LO + 0x10;
	E.stack[14] = 0;
	E.stack[15] = 0;
	E.maps[0] = (struct unwind_mapping){ NATIVE_LO, NATIVE_LO + 0x1000, 0, 0, 0, UNW_MAP_FP,
					     UNWINDER_NATIVE, 0, 1 };
	E.maps[1] = (struct unwind_mapping){ INTERP_LO, INTERP_LO + 0x1000, INTERP_LO, 0, 2, 0,
					     UNWINDER_NATIVE, 0, 0 };
	E.entries[0] = (struct unwind_entry){ 0, 3 | 2 << 8, UNW_GO_SYSTEMSTACK, -1 };
	E.entries[1] = (struct unwind_entry){ 0x1000, 0, UNW_INVALID, 0 };
	memset(st, 0, sizeof(*st));
	st->pc = INTERP_LO + 0x20; /* a return address into systemstack */
	st->sp = STACK_BASE + 0x1c0;
	st->flags = UNW_S_RETADDR;
	st->fsbase = GO_FS;
	st->map_count = 2;
}

static size_t go_run(struct unw_state *st)
{
	int i;

	for (i = 0; i < 64; i++)
		if (unwind_step(st))
			break;
	return st->n;
}

static void test_go_systemstack(void)
{
	struct unw_state st;

	/* on g0: the goroutine's frames follow */
	go_setup(&st, STACK_BASE + 0x40);
	CHECK_EQ_INT(go_run(&st), 2);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	CHECK_EQ_INT(E.words[0], INTERP_LO + 0x20);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
	/* no fs base (a snapshot), the thread's g is not g0 (a signal handler's), no curg, no
	 * saved sp (systemstack returned): the end, with no caller */
	go_setup(&st, STACK_BASE + 0x40);
	st.fsbase = 0;
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	go_setup(&st, STACK_BASE + 0x40);
	E.stack[(GO_FS - 8 - STACK_BASE) / 8] = GO_CURG;
	E.stack[(GO_CURG + UNW_GO_G_M - STACK_BASE) / 8] = GO_M;
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	go_setup(&st, STACK_BASE + 0x40);
	E.stack[(GO_M + 24 - STACK_BASE) / 8] = 0;
	CHECK_EQ_INT(go_run(&st), 1);
	go_setup(&st, 0);
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	/* a goroutine stack leading into systemstack again: once only */
	go_setup(&st, STACK_BASE + 0x40);
	E.stack[8] = INTERP_LO + 0x20;
	CHECK_EQ_INT(go_run(&st), 2);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	CHECK_EQ_INT(E.words[1], INTERP_LO + 0x20);
}

/* runtime.morestack's rule: from newstack's return address, while the goroutine's status is
 * _Gcopystack, its g.sched (pc, sp, bp at 64, 56, 104) is the caller; else the end. */
static void morestack_setup(struct unw_state *st, __u64 status)
{
	go_setup(st, STACK_BASE + 0x40);
	E.entries[0] = (struct unwind_entry){ 0, 3 | (40 / 4) << 8, UNW_GO_MORESTACK, -1 };
	E.stack[(GO_CURG + 40 - STACK_BASE) / 8] = status | 0x500000000ULL; /* the next field */
	E.stack[(GO_CURG + UNW_GO_G_SCHED_PC - STACK_BASE) / 8] = NATIVE_LO + 0x10;
	E.stack[(GO_CURG + UNW_GO_G_SCHED_BP - STACK_BASE) / 8] = STACK_BASE + 0x70;
	E.stack[8] = 0x1234; /* what lies at sched.sp: not a return address here */
}

static void test_go_morestack(void)
{
	struct unw_state st;

	morestack_setup(&st, UNW_GO_GCOPYSTACK);
	CHECK_EQ_INT(go_run(&st), 2);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	CHECK_EQ_INT(E.words[0], INTERP_LO + 0x20);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10); /* sched.pc, not the word at sched.sp */
	CHECK_EQ_INT(st.sp, STACK_BASE + 0x80);
	/* running (newstack before the copy, or another goroutine it scheduled), no fs base,
	 * no curg: the end */
	morestack_setup(&st, 2);
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	morestack_setup(&st, UNW_GO_GCOPYSTACK);
	st.fsbase = 0;
	CHECK_EQ_INT(go_run(&st), 1);
	morestack_setup(&st, UNW_GO_GCOPYSTACK);
	E.stack[(GO_M + 24 - STACK_BASE) / 8] = 0;
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
}

/* The return address in rdi (glibc's __vfork between its pop and its push): at the leaf, from
 * the sample's rdi, CFA = rsp + off; anywhere else (a return address into it, no rdi), the
 * end. */
static void test_ra_in_register(void)
{
	struct unw_state st;

	memset(&E, 0, sizeof(E));
	E.maps[0] = (struct unwind_mapping){ NATIVE_LO, NATIVE_LO + 0x1000, 0, 0, 0, UNW_MAP_FP,
					     UNWINDER_NATIVE, 0, 1 };
	E.maps[1] = (struct unwind_mapping){ INTERP_LO, INTERP_LO + 0x1000, INTERP_LO, 0, 2, 0,
					     UNWINDER_NATIVE, 0, 0 };
	E.entries[0] = (struct unwind_entry){ 0, 0, UNW_RA_REG, UNW_DWARF_RDI };
	E.entries[1] = (struct unwind_entry){ 0x1000, 0, UNW_INVALID, 0 };
	E.stack[15] = 0; /* the caller's frame (frame pointer rbp + 0x70): the end */
	memset(&st, 0, sizeof(st));
	st.pc = INTERP_LO + 0x8;
	st.sp = STACK_BASE + 0x40;
	st.bp = STACK_BASE + 0x70;
	st.leaf_di = NATIVE_LO + 0x10;
	st.map_count = 2;
	CHECK_EQ_INT(go_run(&st), 2);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
	/* no rdi (a snapshot), or not the leaf: no rule */
	memset(&st, 0, sizeof(st));
	st.pc = INTERP_LO + 0x8;
	st.sp = STACK_BASE + 0x40;
	st.map_count = 2;
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_ERR_INVALID);
	memset(&st, 0, sizeof(st));
	st.pc = INTERP_LO + 0x9;
	st.sp = STACK_BASE + 0x40;
	st.leaf_di = NATIVE_LO + 0x10;
	st.flags = UNW_S_RETADDR;
	st.map_count = 2;
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_ERR_INVALID);
}

/* runtime.asmcgocall's rule: at the C function's return, SP is where asmcgocall left it: the
 * goroutine's g at sp + 48, its SP as a depth below g.stack.hi at sp + 40 (g 0: the SP itself);
 * there the return address into cgocall, RBP unchanged. */
static void test_go_asmcgocall(void)
{
	struct unw_state st;
	int i;

	for (i = 0; i < 2; i++) {
		memset(&E, 0, sizeof(E));
		E.maps[0] = (struct unwind_mapping){ NATIVE_LO, NATIVE_LO + 0x1000, 0, 0, 0,
						     UNW_MAP_FP, UNWINDER_NATIVE, 0, 1 };
		E.maps[1] = (struct unwind_mapping){ INTERP_LO, INTERP_LO + 0x1000, INTERP_LO, 0, 2,
						     0, UNWINDER_NATIVE, 0, 0 };
		E.entries[0] = (struct unwind_entry){ 0, 6 | 5 << 8, UNW_GO_ASMCGOCALL, 0 };
		E.entries[1] = (struct unwind_entry){ 0x1000, 0, UNW_INVALID, 0 };
		/* the system stack at +0x100; the goroutine's g at +0x180 (stack.hi at +0x188 =
		 * +0x1c0); its SP at +0x40, depth 0x180 */
		if (i == 0) {
			E.stack[(0x100 + 48) / 8] = STACK_BASE + 0x180;
			E.stack[(0x100 + 40) / 8] = 0x180;
			E.stack[(0x188) / 8] = STACK_BASE + 0x1c0;
		} else {
			E.stack[(0x100 + 48) / 8] = 0;
			E.stack[(0x100 + 40) / 8] = STACK_BASE + 0x40;
		}
		E.stack[8] = NATIVE_LO + 0x10; /* return into cgocall */
		E.stack[15] = 0;               /* cgocall's frame (rbp + 0x70): the end */
		memset(&st, 0, sizeof(st));
		st.pc = INTERP_LO + 0x20;
		st.sp = STACK_BASE + 0x100;
		st.bp = STACK_BASE + 0x70;
		st.flags = UNW_S_RETADDR;
		st.map_count = 2;
		CHECK_EQ_INT(go_run(&st), 2);
		CHECK_EQ_INT(st.result, USTAT_COMPLETE);
		CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
	}
	/* a depth past stack.hi: the end */
	E.stack[(0x100 + 48) / 8] = STACK_BASE + 0x180;
	E.stack[(0x100 + 40) / 8] = STACK_BASE + 0x1000;
	memset(&st, 0, sizeof(st));
	st.pc = INTERP_LO + 0x20;
	st.sp = STACK_BASE + 0x100;
	st.flags = UNW_S_RETADDR;
	st.map_count = 2;
	CHECK_EQ_INT(go_run(&st), 1);
	CHECK_EQ_INT(st.result, USTAT_COMPLETE);
}

/* A return address with its top byte set (what a bad stack slot gives, e.g. the garbage
 * above a Go goroutine's goexit): no user code is there, and as a frame word it would be
 * taken for a runtime's frame. The stack ends before it; the frames before it stay. */
static void test_bad_pc(void)
{
	static const uint64_t bad[] = { (FW_TAG_FIRST(UNWINDER_HOTSPOT) << FW_TAG_SHIFT) | 0x1234,
					0xff00000000001000ULL, 0x0100000000401000ULL };
	uint32_t result;
	size_t i, n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = run_ra(UNW_HOOK_MOVED, bad[i], &result);
		CHECK_EQ_INT(result, USTAT_ERR_BAD_PC);
		CHECK_EQ_INT(n, 2);
		CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
		CHECK_EQ_INT(E.words[2], 0);
	}
	/* the highest user address is still a pc (the mapping decides) */
	n = run_ra(UNW_HOOK_MOVED, 0x00fffffffffff000ULL, &result);
	CHECK_EQ_INT(result, USTAT_ERR_NO_MAPPING);
	CHECK_EQ_INT(n, 3);
}

/* The mappings and tables of run_ra(), with no CFI for INTERP_LO + 0x200 .. + 0x1000; the
 * stack zeroed. */
static void setup_plain(struct unw_state *st, uint64_t pc, uint64_t sp, uint64_t bp)
{
	uint32_t result;

	run_ra(UNW_HOOK_MOVED, 0, &result);
	memset(E.stack, 0, sizeof(E.stack));
	memset(E.words, 0, sizeof(E.words));
	E.entries[2] = (struct unwind_entry){ 0x200, 0, UNW_INVALID, 0 };
	memset(st, 0, sizeof(*st));
	st->pc = pc;
	st->sp = sp;
	st->bp = bp;
	st->map_count = 3;
}

static uint32_t unwind_all(struct unw_state *st)
{
	int i;

	for (i = 0; i < 64; i++)
		if (unwind_step(st))
			break;
	return st->result;
}

/* A leaf function without CFI (assembly): at an exact pc, return address at [rsp], kept when
 * it lands in a known mapping; never for a return address (the caller's frame is unknown). */
static void test_leaf_rule(void)
{
	struct unw_state st;

	setup_plain(&st, INTERP_LO + 0x250, STACK_BASE, STACK_BASE + 0x40);
	E.stack[0] = NATIVE_LO + 0x10; /* [rsp]: the caller, frame-pointer code */
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE); /* its frame: rbp 0x40 -> ra 0 */
	CHECK_EQ_INT(st.n, 2);
	CHECK_EQ_INT(E.words[0], INTERP_LO + 0x250);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
	/* [rsp] is not code we know: no frame made up */
	setup_plain(&st, INTERP_LO + 0x250, STACK_BASE, STACK_BASE + 0x40);
	E.stack[0] = 0x99999;
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
	CHECK_EQ_INT(st.n, 1);
	/* a return address without CFI */
	setup_plain(&st, INTERP_LO + 0x250, STACK_BASE, STACK_BASE + 0x40);
	E.stack[0] = NATIVE_LO + 0x10;
	st.flags = UNW_S_RETADDR;
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
	CHECK_EQ_INT(st.n, 1);
}

/* A frame whose CFI puts the CFA in rbp, with rbp on another stack (below sp here): a switch
 * that left its link (psm's rust_psm_on_stack). */
static void test_stack_switch(void)
{
	struct unw_state st;

	setup_plain(&st, INTERP_LO + 0x50, STACK_BASE + 0x100, STACK_BASE + 0x40);
	E.stack[8] = STACK_BASE + 0x80; /* the caller's rbp, then its return address */
	E.stack[9] = NATIVE_LO + 0x10;
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(st.switches, 1);
	CHECK_EQ_INT(st.n, 2);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
	/* the link leads to no code we know: the stack ends there, as a switch */
	setup_plain(&st, INTERP_LO + 0x50, STACK_BASE + 0x100, STACK_BASE + 0x40);
	E.stack[9] = 0x99999;
	CHECK_EQ_INT(unwind_all(&st), USTAT_STACK_SWITCH);
	CHECK_EQ_INT(st.n, 1);
	/* the frame-pointer rule (no CFI) proves nothing: a CFA going down is an error */
	setup_plain(&st, NATIVE_LO + 0x10, STACK_BASE + 0x100, STACK_BASE + 0x40);
	E.stack[9] = NATIVE_LO + 0x10;
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_LOOP);
	CHECK_EQ_INT(st.switches, 0);
	/* two frames that link to each other: followed at most UNW_MAX_SWITCHES times */
	setup_plain(&st, INTERP_LO + 0x50, STACK_BASE + 0x100, STACK_BASE + 0x40);
	E.stack[8] = STACK_BASE + 0x140; /* rbp of the next frame: back above */
	E.stack[9] = INTERP_LO + 0x51;
	E.stack[40] = STACK_BASE + 0x40;
	E.stack[41] = INTERP_LO + 0x51;
	CHECK_EQ_INT(unwind_all(&st), USTAT_STACK_SWITCH);
	CHECK_EQ_INT(st.switches, UNW_MAX_SWITCHES);
}

/* Anonymous memory (JIT code no runtime claimed, e.g. PCRE2's): its frame-pointer rule is a
 * guess, kept only when the caller is in a known mapping. */
static void test_anon_fp_guess(void)
{
	struct unw_state st;

	setup_plain(&st, JIT_LO + 0x40, STACK_BASE, STACK_BASE + 0x40);
	E.maps[2].flags = UNW_MAP_FP | UNW_MAP_ANON;
	E.stack[8] = STACK_BASE + 0x80; /* rbp's "frame": saved rbp, garbage return address */
	E.stack[9] = 0x99999;
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID); /* not NO_MAPPING: no snapshot */
	CHECK_EQ_INT(st.n, 1);
	CHECK_EQ_INT(E.words[0], JIT_LO + 0x40);
	/* a real frame-pointer frame is followed as before */
	setup_plain(&st, JIT_LO + 0x40, STACK_BASE, STACK_BASE + 0x40);
	E.maps[2].flags = UNW_MAP_FP | UNW_MAP_ANON;
	E.stack[8] = STACK_BASE + 0x80;
	E.stack[9] = NATIVE_LO + 0x10;
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(st.n, 2);
	CHECK_EQ_INT(E.words[1], NATIVE_LO + 0x10);
}


/* PCRE2's JIT code (bpf/unwind.h: PCRE2 JIT LINKS). The "libpcre2" is the interpreter file's
 * table from 0x200 on: CFA = rsp + 0x30, rbp saved at CFA - 16. Links: the direct call returns
 * to R_DIRECT, 8 below the jit_arguments pointer A; the call through jit_machine_stack_exec()
 * to R_EXEC, 0x48 below it (R_OUTER: that function's return into pcre2_jit_match(), no link).
 * The caller's frame ends the stack (return address 0). */
#define R_DIRECT (INTERP_LO + 0x210)
#define R_OUTER (INTERP_LO + 0x220)
#define R_EXEC (INTERP_LO + 0x230)
#define HELPER_PC (INTERP_LO + 0x240)
/* a JIT frame the unwinder went through is named (the native word replaced) */
#define JIT_WORD ((FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_PCRE_JIT)

static void setup_jit(struct unw_state *st, uint64_t pc, uint64_t sp, uint64_t bp)
{
	setup_plain(st, pc, sp, bp);
	E.maps[2].flags = UNW_MAP_FP | UNW_MAP_ANON | UNW_MAP_JIT_LINKS;
	E.entries[2] = (struct unwind_entry){ 0x200, 0x30, UNW_CFA_RSP, -2 };
	E.jit.count = 2;
	E.jit.link[0] = (struct unwind_jit_link){ R_DIRECT, 8 };
	E.jit.link[1] = (struct unwind_jit_link){ R_EXEC, 0x48 };
	memset(E.code, 0x90, sizeof(E.code)); /* nops: no prologue, no epilogue */
}

/* struct jit_arguments at word w of the stack: stack, str, begin, end */
static void put_args(int w)
{
	E.stack[w] = 0x1234;
	E.stack[w + 1] = 0x5008;
	E.stack[w + 2] = 0x5000;
	E.stack[w + 3] = 0x5100;
}

static void test_pcre_jit_body(void)
{
	struct unw_state st;

	/* called by pcre2_jit_match(): A = word 12, its return address in word 11; an older
	 * copy of a return address lower in the JIT frame is never looked at */
	setup_jit(&st, JIT_LO + 0x40, STACK_BASE, STACK_BASE + 12 * 8);
	put_args(12);
	E.stack[11] = R_DIRECT;
	E.stack[4] = R_EXEC;
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(st.n, 2);
	CHECK_EQ_INT(E.words[0], JIT_WORD);
	CHECK_EQ_INT(E.words[1], R_DIRECT);
	/* through jit_machine_stack_exec(): A = word 32, A - 8 holds R_OUTER, the JIT code's
	 * return address is at A - 0x48 (word 23); stale links elsewhere are not taken */
	setup_jit(&st, JIT_LO + 0x40, STACK_BASE, STACK_BASE + 32 * 8);
	put_args(32);
	E.stack[31] = R_OUTER;
	E.stack[23] = R_EXEC;
	E.stack[5] = R_DIRECT;
	E.stack[12] = R_EXEC;
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(st.n, 2);
	CHECK_EQ_INT(E.words[1], R_EXEC);
	/* a libpcre2 helper called from the JIT code: its CFI gives back rbp = A and a return
	 * address into the JIT code, whose frame then links as above */
	setup_jit(&st, HELPER_PC, STACK_BASE, 0xbad);
	E.stack[4] = STACK_BASE + 12 * 8; /* saved rbp at CFA - 16 */
	E.stack[5] = JIT_LO + 0x50;
	put_args(12);
	E.stack[11] = R_DIRECT;
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(st.n, 3);
	CHECK_EQ_INT(E.words[0], HELPER_PC);
	CHECK_EQ_INT(E.words[1], JIT_WORD);
	CHECK_EQ_INT(E.words[2], R_DIRECT);
}

/* What is no link: the frame-pointer guess applies then, and fails (its "return address" is
 * the subject pointer str, in no mapping). */
static void test_pcre_jit_not_linked(void)
{
	struct unw_state st;

	/* the word below A is no link's return address */
	setup_jit(&st, JIT_LO + 0x40, STACK_BASE, STACK_BASE + 12 * 8);
	put_args(12);
	E.stack[11] = R_OUTER;
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
	CHECK_EQ_INT(st.n, 1);
	CHECK_EQ_INT(E.words[0], JIT_LO + 0x40); /* not named */
	/* what A points to is no jit_arguments (begin > str) */
	setup_jit(&st, JIT_LO + 0x40, STACK_BASE, STACK_BASE + 12 * 8);
	put_args(12);
	E.stack[14] = 0x6000;
	E.stack[11] = R_DIRECT;
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
	CHECK_EQ_INT(st.n, 1);
	/* rbp below the frame */
	setup_jit(&st, JIT_LO + 0x40, STACK_BASE + 16 * 8, STACK_BASE + 12 * 8);
	put_args(12);
	E.stack[11] = R_DIRECT;
	CHECK(unwind_all(&st) != USTAT_COMPLETE);
	CHECK_EQ_INT(st.n, 1);
	/* the mapping is not flagged (no PCRE2 in the process): the links are not asked */
	setup_jit(&st, JIT_LO + 0x40, STACK_BASE, STACK_BASE + 12 * 8);
	E.maps[2].flags = UNW_MAP_FP | UNW_MAP_ANON;
	put_args(12);
	E.stack[11] = R_DIRECT;
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
	CHECK_EQ_INT(st.n, 1);
}

/* SLJIT's prologue and epilogue, where rbp is the caller's (here: a frame-pointer "frame"
 * at word 56 whose return address is 0, a guess that ends nothing): read from the code. */
#define EDGE_BP (STACK_BASE + 56 * 8)
static const uint8_t prologue[] = {
	0x53, 0x41, 0x57, 0x41, 0x56, 0x41, 0x55, 0x55, /* push rbx, r15, r14, r13, rbp */
	0x48, 0x89, 0xfb,                               /* mov %rdi, %rbx */
	0x48, 0x81, 0xec, 0xa0, 0x00, 0x00, 0x00,       /* sub $0xa0, %rsp */
	0x48, 0x8b, 0x43, 0x10,                         /* mov 0x10(%rbx), %rax */
};
static const uint8_t epilogue[] = {
	0x48, 0x81, 0xc4, 0xa0, 0x00, 0x00, 0x00,       /* add $0xa0, %rsp */
	0x5d, 0x41, 0x5d, 0x41, 0x5e, 0x41, 0x5f, 0x5b, /* pop rbp, r13, r14, r15, rbx */
	0xc3,                                           /* ret */
};

static void test_pcre_jit_edges(void)
{
	struct unw_state st;

	/* in the prologue, two pushes done: the return address is word 2, A word 3; the
	 * pushed words are the caller's registers */
	setup_jit(&st, JIT_LO + 3, STACK_BASE, EDGE_BP);
	memcpy(E.code, prologue, sizeof(prologue));
	E.stack[0] = 0x1111;
	E.stack[1] = 0x2222;
	E.stack[2] = R_DIRECT;
	put_args(3);
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(st.n, 2);
	CHECK_EQ_INT(E.words[1], R_DIRECT);
	/* right after the sub: 0xa0 + 5 pushes above sp (word 25), A word 26 */
	setup_jit(&st, JIT_LO + 18, STACK_BASE, EDGE_BP);
	memcpy(E.code, prologue, sizeof(prologue));
	E.stack[25] = R_DIRECT;
	put_args(26);
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(st.n, 2);
	CHECK_EQ_INT(E.words[1], R_DIRECT);
	/* the same pc with a push less in the code: the word it points to is no link */
	setup_jit(&st, JIT_LO + 18, STACK_BASE, EDGE_BP);
	memcpy(E.code, prologue, sizeof(prologue));
	E.code[0] = 0x90;
	E.stack[25] = R_DIRECT;
	put_args(26);
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
	CHECK_EQ_INT(st.n, 1);
	/* in the epilogue at the add: 0xa0 + 5 pops to come (word 25); rbp comes from the
	 * word `pop %rbp` loads */
	setup_jit(&st, JIT_LO, STACK_BASE, EDGE_BP);
	memcpy(E.code, epilogue, sizeof(epilogue));
	E.stack[20] = 0x4242;
	E.stack[25] = R_DIRECT;
	put_args(26);
	CHECK(unwind_step(&st) == 0);
	CHECK_EQ_INT(st.pc, R_DIRECT);
	CHECK_EQ_INT(st.sp, STACK_BASE + 26 * 8);
	CHECK_EQ_INT(st.bp, 0x4242);
	/* at the ret: the return address is at sp */
	setup_jit(&st, JIT_LO + 15, STACK_BASE, EDGE_BP);
	memcpy(E.code, epilogue, sizeof(epilogue));
	E.stack[0] = R_DIRECT;
	put_args(1);
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(E.words[1], R_DIRECT);
	/* after the sub, in code that is neither (PCRE2's ovector reset) before rbp is set: rbx,
	 * which BPF has for the leaf, is A; never for a frame above the leaf */
	setup_jit(&st, JIT_LO + 0x40, STACK_BASE, EDGE_BP);
	st.leaf_bx = STACK_BASE + 26 * 8;
	E.stack[25] = R_DIRECT;
	put_args(26);
	CHECK_EQ_INT(unwind_all(&st), USTAT_COMPLETE);
	CHECK_EQ_INT(E.words[0], JIT_WORD);
	CHECK_EQ_INT(E.words[1], R_DIRECT);
	setup_jit(&st, HELPER_PC, STACK_BASE, 0xbad);
	st.leaf_bx = STACK_BASE + 26 * 8;
	E.stack[4] = EDGE_BP; /* the helper restores an rbp that is no A */
	E.stack[5] = JIT_LO + 0x50;
	E.stack[25] = R_DIRECT;
	put_args(26);
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
	CHECK_EQ_INT(st.n, 2);
	/* a return address of a helper call is never in a prologue or epilogue */
	setup_jit(&st, JIT_LO + 15, STACK_BASE, EDGE_BP);
	memcpy(E.code, epilogue, sizeof(epilogue));
	st.flags |= UNW_S_RETADDR;
	E.stack[0] = R_DIRECT;
	put_args(1);
	CHECK_EQ_INT(unwind_all(&st), USTAT_ERR_INVALID);
}

int main(void)
{
	RUN(test_jit_hands_back);
	RUN(test_jit_declines_and_stops);
	RUN(test_bad_pc);
	RUN(test_leaf_rule);
	RUN(test_stack_switch);
	RUN(test_anon_fp_guess);
	RUN(test_go_time_now);
	RUN(test_go_systemstack);
	RUN(test_go_asmcgocall);
	RUN(test_go_morestack);
	RUN(test_ra_in_register);
	RUN(test_pcre_jit_body);
	RUN(test_pcre_jit_not_linked);
	RUN(test_pcre_jit_edges);
	return test_summary();
}
