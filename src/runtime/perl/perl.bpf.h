/* perl.bpf.h: the Perl stack walker in BPF: perl_bpf_walk(), the UNWINDER_PERL entry of
 * runtime/runtime.bpf.h's dispatch (ops and words: perl.h). Included by runtime/walkers.bpf.h,
 * after the unwinder's maps (unwind_user.bpf.h).
 *
 * Per sample: the thread's interpreter (its pthread key), PL_curcop and PL_curstackinfo, then
 * the contexts of each stack info, newest first. A sub costs 6 reads (its context, the CV's
 * head and body, the GV's head, the GP's effective GV, the pending COP's line), any other
 * context one. Every read can fail: a failed read ends the walk with a PERL_MARK_BAD_FRAME
 * word; loops are bounded (PERL_MAX_CONTEXTS per sample). */
#ifndef SCORCH_PERL_BPF_H
#define SCORCH_PERL_BPF_H

#include "runtime/perl/perl.h"
#include "runtime/runtime.bpf.h"
#include "runtime/tls.bpf.h"

#define PERL_MAX_CONTEXTS 1024
#define PERL_OUT_LIMIT    (MAX_KERNEL_FRAMES + MAX_USER_WORDS)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct perl_proc);
} perl_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PLSTAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} perl_stats SEC(".maps");

/* 1: keep the native Perl_runops_standard frames next to the Perl frames they run. */
const volatile __u32 perl_keep_vm_frames = 0;

struct perl_walk {
	struct perl_proc p;
	__u64 si;          /* the stack info being walked (0: none left) */
	__u64 cxstack, si_prev;
	__s32 ix;          /* next context index in it (-1: its end) */
	__u32 si_type;
	__u64 pending;     /* the pending COP: the line of the next sub */
	__u32 active, nframes, done;
	__u32 pos, limit, segment, defer, open;
	/* (arrays sized to a power of two: fields are picked by masked indexes) */
	__u64 cx[16];      /* a context's first 0x50 bytes */
	__u64 h[3];        /* an SV's head: sv_any, refcnt + flags, sv_u */
	__u64 b[8];        /* XPVCV from xcv_gv (0x38) to past xcv_flags (0x5c) */
	__u64 s[8];        /* a stack info's first 0x30 bytes */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct perl_walk);
} perl_scratch SEC(".maps");

struct perl_loop_ctx {
	struct perl_walk *w;
	struct sample_record *rec;
};

static __always_inline void perl_stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&perl_stats, &which);

	if (v)
		*v += n;
}

static __always_inline int perl_read(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

static __always_inline void perl_emit(struct perl_loop_ctx *c, __u64 word)
{
	struct perl_walk *w = c->w;
	__u64 i = w->pos;

	asm volatile("" : "+r"(i));
	if (i >= w->limit || i >= PERL_OUT_LIMIT)
		return;
	c->rec->frames[i] = word;
	w->pos = i + 1;
}

static __always_inline void perl_segment_end(struct perl_loop_ctx *c)
{
	/* a run of the ops without frames of its own (a sort block's) loses its native frame
	 * too, as RT_OP_FRAME does */
	perl_emit(c, (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_SEGMENT_END |
			(perl_keep_vm_frames ? FW_SEGMENT_KEEP_NATIVE : FW_SEGMENT_DROP_NATIVE));
	c->w->open = 0;
}

/* Make si the stack info being walked, from its newest context. 0, or -1 (unreadable). */
static __always_inline int perl_load_si(struct perl_walk *w, __u64 si)
{
	const struct perl_offsets *o = &w->p.off;

	w->si = si;
	if (!si)
		return 0;
	if (perl_read(w->s, 0x30, si))
		return -1;
	w->cxstack = w->s[(o->si_cxstack / 8) & 7];
	w->si_prev = w->s[(o->si_prev / 8) & 7];
	w->ix = (__s32)(__u32)(w->s[(o->si_cxix / 8) & 7] >> (8 * (o->si_cxix & 7)));
	w->si_type = (__u32)(w->s[(o->si_type / 8) & 7] >> (8 * (o->si_type & 7)));
	return 0;
}

/* Emit the frame of a sub (gv_or_cv as the SUB word) at the pending COP. */
static __always_inline void perl_emit_frame(struct perl_loop_ctx *c, __u64 sub)
{
	struct perl_walk *w = c->w;
	__u32 line = 0;

	if (w->pending)
		perl_read(&line, sizeof(line), w->pending + w->p.off.cop_line);
	perl_emit(c, (FW_TAG_PERL_SUB << FW_TAG_SHIFT) | sub);
	perl_emit(c, (FW_TAG_PERL_COP << FW_TAG_SHIFT) | (w->pending & PERL_ADDR_MASK) |
			(__u64)(line & 0xff) << 48);
	w->nframes++;
	perl_stat_add(PLSTAT_FRAMES, 1);
}

/* The SUB word of a sub's CV: its effective GV, or the CV of a lexical (named) sub. */
static __always_inline __u64 perl_sub_of(struct perl_walk *w, __u64 cv)
{
	const struct perl_offsets *o = &w->p.off;
	__u64 gv, egv = 0;
	__u32 flags;

	if (!cv || perl_read(w->h, sizeof(w->h), cv))
		return 0;
	if (((w->h[1] >> 32) & 0x1f) != PERL_SVT_PVCV || !w->h[0])
		return 0;
	if (perl_read(w->b, 0x28, w->h[0] + o->xcv_gv))
		return 0;
	flags = (__u32)(w->b[((o->xcv_flags - o->xcv_gv) / 8) & 7] >>
			(8 * ((o->xcv_flags - o->xcv_gv) & 7)));
	if (flags & PERL_CVF_NAMED)
		return (cv & PERL_ADDR_MASK) | PERL_SUB_NAMED_CV;
	gv = w->b[0];
	if (!gv || perl_read(w->h, sizeof(w->h), gv))
		return 0;
	if (((w->h[1] >> 32) & (0x1f | PERL_SVPGV_GP)) != (PERL_SVT_PVGV | PERL_SVPGV_GP))
		return 0;
	if (w->h[2] && perl_read(&egv, sizeof(egv), w->h[2] + o->gp_egv))
		egv = 0;
	return (egv ? egv : gv) & PERL_ADDR_MASK;
}

/* One context (or the end of a stack info): emit, advance. */
static long perl_step(__u32 i, void *data)
{
	struct perl_loop_ctx *c = data;
	struct perl_walk *w = c->w;
	const struct perl_offsets *o = &w->p.off;
	__u32 type;
	__u64 sub, retop;
	int ended;

	if (w->done || !w->si)
		return 1;
	if (w->pos + 3 + w->defer > w->limit || w->nframes >= PERL_MAX_CONTEXTS) {
		perl_emit(c, (FW_TAG_PERL_MARK << FW_TAG_SHIFT) | PERL_MARK_TRUNCATED);
		w->open = 1;
		perl_stat_add(PLSTAT_TRUNCATED, 1);
		w->done = 1;
		return 1;
	}
	if (w->ix < 0) {
		if (w->si_type == PERL_SI_MAIN) {
			/* the program's file-level code */
			if (w->pending)
				perl_emit_frame(c, 0);
			w->done = 1;
			if (w->defer)
				perl_segment_end(c);
			return 1;
		}
		/* a sort block's, a signal handler's stack: its run of the ops ends here */
		ended = w->open;
		if (perl_load_si(w, w->si_prev) < 0)
			goto bad;
		if (!w->si) {
			w->done = 1;
			return 1;
		}
		if (ended) {
			if (w->defer)
				perl_segment_end(c);
			if (w->segment)
				return 1;
		}
		return 0;
	}
	if (perl_read(w->cx, 0x50, w->cxstack + (__u64)(__u32)w->ix * o->cx_size))
		goto bad;
	w->ix--;
	type = (__u32)(w->cx[0] & 0xff);
	if ((type & 0xf) == PERL_CXT_SUBST)
		return 0; /* a s///e context: another layout */
	w->open = 1;
	if (((type & 0xf) == PERL_CXT_SUB || (type & 0xf) == PERL_CXT_FORMAT) &&
	    !(type & PERL_CXP_RE_FAKE)) {
		retop = w->cx[(o->cx_retop / 8) & 15];
		sub = perl_sub_of(w, w->cx[(o->cx_cv / 8) & 15]);
		if (sub)
			perl_emit_frame(c, sub);
		w->pending = w->cx[(o->cx_oldcop / 8) & 15];
		if (!retop) {
			/* called from C: the first sub of this run of the ops */
			if (w->defer)
				perl_segment_end(c);
			if (w->segment)
				return 1;
		}
		return 0;
	}
	if (!w->pending)
		w->pending = w->cx[(o->cx_oldcop / 8) & 15];
	return 0;
bad:
	perl_emit(c, (FW_TAG_PERL_MARK << FW_TAG_SHIFT) | PERL_MARK_BAD_FRAME);
	w->open = 1;
	perl_stat_add(PLSTAT_ERRORS, 1);
	w->done = 1;
	return 1;
}

static __always_inline int perl_walk_begin(struct perl_walk *w, __u32 tgid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct perl_proc *p = bpf_map_lookup_elem(&perl_procs, &tgid);
	__u64 interp = 0, cop = 0, si = 0;

	if (!p)
		return 0;
	perl_stat_add(PLSTAT_SAMPLES, 1);
	__builtin_memcpy(&w->p, p, sizeof(w->p));
	w->si = 0;
	w->nframes = 0;
	w->done = 0;
	if (w->p.off.flags & PERL_F_THREADED) {
		if (rt_tsd_get(&w->p.tsd, BPF_CORE_READ(task, thread.fsbase), w->p.key, &interp) ||
		    !interp) {
			/* no key value in this thread (a thread Perl did not start, or a key past the
			 * first block): the main interpreter */
			if (!w->p.curinterp || perl_read(&interp, sizeof(interp), w->p.curinterp))
				interp = 0;
		}
		if (!interp || perl_read(&cop, sizeof(cop), interp + w->p.off.interp_curcop) ||
		    perl_read(&si, sizeof(si), interp + w->p.off.interp_curstackinfo))
			si = 0;
	} else if (perl_read(&cop, sizeof(cop), w->p.curcop) ||
		   perl_read(&si, sizeof(si), w->p.curstackinfo)) {
		si = 0;
	}
	if (!si || perl_load_si(w, si) < 0 || !w->si) {
		perl_stat_add(PLSTAT_NO_INTERP, 1);
		return 0;
	}
	w->pending = cop;
	return 1;
}

static __always_inline __u32 perl_walk_frames(struct perl_walk *w, struct sample_record *rec,
					      __u32 pos, __u32 limit, __u32 segment, __u32 defer)
{
	struct perl_loop_ctx c = { .w = w, .rec = rec };

	w->pos = pos;
	w->limit = defer ? limit - 1 : limit;
	w->segment = segment;
	w->defer = defer;
	w->open = 0;
	if (!w->done && w->si && limit > pos + 2)
		bpf_loop(PERL_MAX_CONTEXTS + 64, perl_step, &c, 0);
	w->limit = limit;
	if (defer && w->open)
		perl_segment_end(&c);
	return w->pos;
}

__noinline int perl_bpf_walk(__u32 op)
{
	__u32 zero = 0, n, keep = perl_keep_vm_frames, pos, base, end;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);
	struct perl_walk *w = bpf_map_lookup_elem(&perl_scratch, &zero);
	struct sample_record *rec = bpf_map_lookup_elem(&scratch, &zero);
	__u64 t0 = bpf_ktime_get_ns();

	if (!st || !w || !rec)
		return UNW_HOOK_NATIVE;
	if (!(st->rt_begun & (1u << UNWINDER_PERL))) {
		st->rt_begun |= 1u << UNWINDER_PERL;
		w->active = perl_walk_begin(w, st->pid);
	}
	base = st->out_base;
	if (!w->active || base > MAX_KERNEL_FRAMES)
		goto out;
	if (op == RT_OP_FRAME) {
		n = st->n;
		if (n == 0 || n >= MAX_USER_WORDS)
			goto out;
		perl_stat_add(PLSTAT_HOOKS, 1);
		if (!keep)
			n--; /* the runops frame goes, with or without Perl frames of its own */
		pos = perl_walk_frames(w, rec, base + n, base + MAX_USER_WORDS - 1, 1, 0);
		if (pos >= base + n && pos <= base + MAX_USER_WORDS)
			st->n = pos - base;
	} else if (op == RT_OP_DEFER) {
		perl_stat_add(PLSTAT_DEFERRED, 1);
		pos = st->rt_pos;
		end = st->rt_limit;
		if (end > base + MAX_USER_WORDS - 1)
			end = base + MAX_USER_WORDS - 1;
		if (pos + 3 < end)
			st->rt_pos = perl_walk_frames(w, rec, pos, end, 0, 1);
	} else if (op == RT_OP_ONLY || op == RT_OP_RESCUE) {
		/* all frames in place of the stack, or (RESCUE) the frames the unwind did not
		 * reach, after its marker: one walk either way */
		n = op == RT_OP_ONLY ? 0 : st->n;
		if (n >= MAX_USER_WORDS - 1)
			goto out;
		end = perl_walk_frames(w, rec, base + n, base + MAX_USER_WORDS - 1, 0, 0);
		if (end > base + n && end <= base + MAX_USER_WORDS - 1)
			st->n = end - base;
	}
out:
	if (w->active)
		perl_stat_add(PLSTAT_WALK_NS, bpf_ktime_get_ns() - t0);
	return UNW_HOOK_NATIVE;
}

#endif
