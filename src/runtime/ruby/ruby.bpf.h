/* ruby.bpf.h: the CRuby stack walker in BPF: ruby_bpf_walk(), the UNWINDER_RUBY entry of
 * runtime/runtime.bpf.h's dispatch (its ops and words are described in ruby.h). Included by
 * runtime/walkers.bpf.h, after the unwinder's maps (unwind_user.bpf.h).
 *
 * Per sample: the sampled thread's execution context (ruby_current_ec through TLS, else the
 * main ractor's running one), then its control frames from ec->cfp up the VM stack. A frame
 * costs 4 reads (the frame, its environment, the iseq's body pointer and the body's head) plus
 * one or two per environment climbed to find a method entry (a block's method).
 *
 * Every read can fail (the target runs on, the process is hostile): a failed read ends the walk
 * with a RB_MARK_BAD_FRAME word; loops are bounded (RB_MAX_FRAMES frames per sample, RB_MAX_EP
 * environments per frame). */
#ifndef SCORCH_RUBY_BPF_H
#define SCORCH_RUBY_BPF_H

#include "runtime/ruby/ruby.h"
#include "runtime/runtime.bpf.h"
#include "runtime/tls.bpf.h"

#define RB_MAX_FRAMES 512 /* control frames per sample */
#define RB_OUT_LIMIT  (MAX_KERNEL_FRAMES + MAX_USER_WORDS)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct rb_proc);
} rb_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RBSTAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} rb_stats SEC(".maps");

/* 1: keep the native rb_vm_exec / vm_exec_core frames next to the Ruby frames they run. */
const volatile __u32 ruby_keep_vm_frames = 0;

/* Walker state for one sample (map memory: the verifier sees unknown values and checks the
 * loop body once). */
struct rb_walk {
	struct rb_proc p;   /* copy of the process's map value */
	__u64 cfp;          /* next control frame (0: the walk is over) */
	__u64 end;          /* end of the VM stack: frames lie below it */
	__u32 active;       /* rb_walk_begin() found an execution context */
	__u32 nframes;
	__u32 core_seen;    /* the last hook was vm_exec_core: its rb_vm_exec only drops */
	__u32 hooked;       /* a VM frame of this sample was handed over already */
	__u32 skip_finish;  /* the next FINISH frame does not end the segment */
	__u32 pos, limit;   /* output window in rec->frames */
	__u32 segment;      /* 1: stop after the FINISH frame of one C-level VM call */
	__u32 defer;        /* 1: mark segment ends and go on (RT_OP_DEFER) */
	__u32 open;         /* defer: words emitted since the last segment end */
	__u64 me, def;      /* the frame's method entry and its definition (0: none) */
	__u64 c[5];         /* the control frame: pc, sp, iseq, self, ep */
	__u64 env[3];       /* an environment: me_cref, specval, flags */
	__u64 h[3];         /* an object's head */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rb_walk);
} rb_scratch SEC(".maps");

struct rb_loop_ctx {
	struct rb_walk *w;
	struct sample_record *rec;
};

static __always_inline void rb_stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&rb_stats, &which);

	if (v)
		*v += n;
}

static __always_inline int rb_read(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

static __always_inline void rb_emit(struct rb_loop_ctx *c, __u64 word)
{
	struct rb_walk *w = c->w;
	__u64 i = w->pos;

	asm volatile("" : "+r"(i)); /* bound-check the very register used as index */
	if (i >= w->limit || i >= RB_OUT_LIMIT)
		return;
	c->rec->frames[i] = word;
	w->pos = i + 1;
}

static __always_inline void rb_segment_end(struct rb_loop_ctx *c, __u64 flags)
{
	rb_emit(c, (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_SEGMENT_END | flags |
		       (ruby_keep_vm_frames ? FW_SEGMENT_KEEP_NATIVE : 0));
	c->w->open = 0;
}

/* One step of rb_vm_frame_method_entry() (a bpf_loop callback): check the environment in
 * w->env for a method entry, or climb to the previous one. w->me, w->def: the result. */
struct rb_me_ctx {
	struct rb_walk *w;
};

static long rb_me_step(__u32 i, void *data)
{
	struct rb_me_ctx *mc = data;
	struct rb_walk *w = mc->w;
	__u64 cand = w->env[0], t;
	int local = !!(w->env[2] & RB_ENV_FLAG_LOCAL);

	if (cand && !(cand & 7) && !rb_read(w->h, sizeof(w->h), cand) &&
	    (w->h[0] & RB_T_MASK) == RB_T_IMEMO) {
		t = (w->h[0] >> RB_IMEMO_SHIFT) & 0xf;
		if (t == RB_IMEMO_MENT) {
			w->me = cand;
			w->def = w->h[2];
			return 1;
		}
		if (local && t == RB_IMEMO_SVAR) {
			cand = w->h[1]; /* vm_svar.cref_or_me */
			if (cand && !(cand & 7) && !rb_read(w->h, sizeof(w->h), cand) &&
			    (w->h[0] & RB_T_MASK) == RB_T_IMEMO &&
			    ((w->h[0] >> RB_IMEMO_SHIFT) & 0xf) == RB_IMEMO_MENT) {
				w->me = cand;
				w->def = w->h[2];
			}
			return 1;
		}
	}
	if (local)
		return 1;
	/* VM_ENV_PREV_EP */
	return rb_read(w->env, sizeof(w->env), (w->env[1] & ~3ULL) - 16) ? 1 : 0;
}

/* One control frame: emit it (or skip it), advance w->cfp. */
static long rb_frame_step(__u32 i, void *data)
{
	struct rb_loop_ctx *c = data;
	struct rb_walk *w = c->w;
	__u64 cfp = w->cfp, flags, magic, body = 0, pos, iseq, pc;
	__u64 head[2];
	__u32 size, cfp_size = w->p.off.cfp_size;

	if (!cfp)
		return 1;
	if (cfp_size < 40 || cfp + cfp_size > w->end) {
		if (w->defer && w->open)
			rb_segment_end(c, 0);
		w->cfp = 0;
		return 1;
	}
	if (w->pos + 4 + 2 * w->defer > w->limit || w->nframes >= RB_MAX_FRAMES) {
		rb_emit(c, (FW_TAG_RUBY_MARK << FW_TAG_SHIFT) | RB_MARK_TRUNCATED);
		w->open = 1;
		rb_stat_add(RBSTAT_TRUNCATED, 1);
		w->cfp = 0;
		return 1;
	}
	if (rb_read(w->c, sizeof(w->c), cfp) || !w->c[4] ||
	    rb_read(w->env, sizeof(w->env), w->c[4] - 16))
		goto bad;
	w->cfp = cfp + cfp_size;
	flags = w->env[2];
	magic = flags & RB_FRAME_MAGIC_MASK;
	if (magic == RB_FRAME_MAGIC_DUMMY) {
		/* the bottom of the thread's VM stack */
		if (w->defer && w->open)
			rb_segment_end(c, 0);
		w->cfp = 0;
		return 1;
	}
	iseq = w->c[2];
	pc = w->c[0];
	if (magic == RB_FRAME_MAGIC_IFUNC || (magic != RB_FRAME_MAGIC_CFUNC && !iseq))
		goto next; /* a C block, or no code: nothing to show */
	if (magic != RB_FRAME_MAGIC_CFUNC &&
	    (rb_read(&body, sizeof(body), iseq + w->p.off.iseq_body) || !body ||
	     rb_read(head, sizeof(head), body)))
		goto bad;
	w->me = 0;
	w->def = 0;
	{
		struct rb_me_ctx mc = { .w = w };

		bpf_loop(RB_MAX_EP, rb_me_step, &mc, 0);
	}
	if (magic == RB_FRAME_MAGIC_CFUNC) {
		if (!w->me)
			goto next;
		rb_emit(c, (FW_TAG_RUBY_CFUNC << FW_TAG_SHIFT) | (w->me & FW_DATA_MASK));
		rb_emit(c, (FW_TAG_RUBY_INFO << FW_TAG_SHIFT) | RB_POS_UNKNOWN |
			       (__u64)rb_checksum(w->def, 0) << 32);
	} else {
		size = (__u32)(head[0] >> 32); /* type at 0, iseq_size at 4, iseq_encoded at 8 */
		pos = RB_POS_UNKNOWN;
		if (pc >= head[1] && (pc - head[1]) / 8 <= size)
			pos = (pc - head[1]) / 8;
		rb_emit(c, (FW_TAG_RUBY_ISEQ << FW_TAG_SHIFT) | (iseq & FW_DATA_MASK));
		rb_emit(c, (FW_TAG_RUBY_INFO << FW_TAG_SHIFT) | pos |
			       (__u64)rb_checksum(body, size) << 32);
		if (w->me)
			rb_emit(c, (FW_TAG_RUBY_CME << FW_TAG_SHIFT) | (w->me & 0xffffffffffffULL) |
				       (__u64)(rb_checksum(w->def, 0) & 0xff) << 48);
	}
	w->nframes++;
	w->open = 1;
	rb_stat_add(RBSTAT_FRAMES, 1);
next:
	if ((flags & RB_FRAME_FLAG_FINISH) && w->skip_finish) {
		w->skip_finish = 0;
	} else if (flags & RB_FRAME_FLAG_FINISH) {
		/* the first frame of one C-level call of the VM loop */
		if (w->defer) {
			rb_segment_end(c, 0);
			if (w->p.core_lo)
				rb_segment_end(c, FW_SEGMENT_DROP_NATIVE);
		}
		if (w->segment)
			return 1;
	}
	return 0;
bad:
	rb_emit(c, (FW_TAG_RUBY_MARK << FW_TAG_SHIFT) | RB_MARK_BAD_FRAME);
	w->open = 1;
	rb_stat_add(RBSTAT_ERRORS, 1);
	w->cfp = 0;
	return 1;
}

/* Find the sampled thread's execution context. 1 when the process is a known CRuby and the
 * thread has one. */
static __always_inline int rb_walk_begin(struct rb_walk *w, __u32 tgid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct rb_proc *p = bpf_map_lookup_elem(&rb_procs, &tgid);
	__u64 fsbase, addr = 0, ec = 0, ractor = 0, e[3];

	if (!p)
		return 0;
	rb_stat_add(RBSTAT_SAMPLES, 1);
	__builtin_memcpy(&w->p, p, sizeof(w->p));
	w->cfp = 0;
	w->nframes = 0;
	w->core_seen = 0;
	w->hooked = 0;
	w->skip_finish = 0;
	fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (w->p.ec_tls.mode != RT_TLS_NONE) {
		if (rt_tls_addr(&w->p.ec_tls, fsbase, &addr) == 0)
			rb_read(&ec, sizeof(ec), addr);
	} else if (w->p.main_ractor && !rb_read(&ractor, sizeof(ractor), w->p.main_ractor) &&
		   ractor) {
		rb_read(&ec, sizeof(ec), ractor + w->p.off.ractor_running_ec);
	}
	if (!ec || rb_read(e, sizeof(e), ec)) {
		rb_stat_add(RBSTAT_NO_EC, 1);
		return 0;
	}
	/* vm_stack, vm_stack_size (in VALUEs), cfp: frames grow down from the stack's end */
	if (e[1] > (1u << 24) || e[2] < e[0] || e[2] >= e[0] + 8 * e[1]) {
		rb_stat_add(RBSTAT_NO_EC, 1);
		return 0;
	}
	w->cfp = e[2];
	w->end = e[0] + 8 * e[1];
	return 1;
}

/* What the newest control frame is: its magic, and whether it is a FINISH iseq frame that has
 * not run an instruction yet (its pc at the start of its iseq). */
static __always_inline __u64 rb_peek_top(struct rb_walk *w, int *unstarted)
{
	__u64 body = 0, head[2];

	*unstarted = 0;
	if (!w->cfp || rb_read(w->c, sizeof(w->c), w->cfp) || !w->c[4] ||
	    rb_read(w->env, sizeof(w->env), w->c[4] - 16))
		return 0;
	if ((w->env[2] & RB_FRAME_FLAG_FINISH) && w->c[2] &&
	    (w->env[2] & RB_FRAME_MAGIC_MASK) != RB_FRAME_MAGIC_CFUNC &&
	    (w->env[2] & RB_FRAME_MAGIC_MASK) != RB_FRAME_MAGIC_IFUNC &&
	    !rb_read(&body, sizeof(body), w->c[2] + w->p.off.iseq_body) && body &&
	    !rb_read(head, sizeof(head), body) && w->c[0] == head[1])
		*unstarted = 1;
	return w->env[2] & RB_FRAME_MAGIC_MASK;
}

/* Emit frames into rec->frames[pos..limit): one C-level VM call's (segment), or every one, with
 * segment ends when defer is set. Returns the new pos. */
static __always_inline __u32 rb_walk_frames(struct rb_walk *w, struct sample_record *rec,
					    __u32 pos, __u32 limit, __u32 segment, __u32 defer)
{
	struct rb_loop_ctx c = { .w = w, .rec = rec };

	w->pos = pos;
	w->limit = defer ? limit - 2 : limit; /* defer: room for the last segment's ends */
	w->segment = segment;
	w->defer = defer;
	w->open = 0;
	if (w->cfp && limit > pos + 2)
		bpf_loop(RB_MAX_FRAMES + 8, rb_frame_step, &c, 0);
	w->limit = limit;
	if (defer && w->open)
		rb_segment_end(&c, 0); /* a walk cut short still ends its last segment */
	return w->pos;
}

/* The walker (runtime/runtime.bpf.h: RT_OP_FRAME, RT_OP_DEFER, RT_OP_RESCUE, RT_OP_ONLY). A global function:
 * the verifier checks it once, on its own, whatever calls it. */
__noinline int ruby_bpf_walk(__u32 op)
{
	__u32 zero = 0, n, keep = ruby_keep_vm_frames, pos, base, end, in_core, in_exec;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);
	struct rb_walk *w = bpf_map_lookup_elem(&rb_scratch, &zero);
	struct sample_record *rec = bpf_map_lookup_elem(&scratch, &zero);
	__u64 t0 = bpf_ktime_get_ns(), pc;
	int ret = UNW_HOOK_NATIVE;

	if (!st || !w || !rec)
		return UNW_HOOK_NATIVE;
	if (!(st->rt_begun & (1u << UNWINDER_RUBY))) {
		st->rt_begun |= 1u << UNWINDER_RUBY;
		w->active = rb_walk_begin(w, st->pid);
	}
	base = st->out_base;
	if (base > MAX_KERNEL_FRAMES)
		goto out;
	if (op == RT_OP_FRAME) {
		n = st->n;
		if (n == 0 || n >= MAX_USER_WORDS)
			goto out;
		pc = st->pc - ((st->flags & UNW_S_RETADDR) ? 1 : 0);
		in_core = pc >= w->p.core_lo && pc < w->p.core_hi;
		in_exec = pc >= w->p.exec_lo && pc < w->p.exec_hi;
		if (!in_core && !in_exec) {
			/* YJIT code: no unwind data. Every remaining Ruby frame, then stop. */
			rb_stat_add(RBSTAT_JIT, 1);
			st->result = USTAT_ERR_INVALID;
			ret = UNW_HOOK_STOP;
			if (!w->active || !w->cfp)
				goto out;
			pos = rb_walk_frames(w, rec, base + n - 1, base + MAX_USER_WORDS - 1, 0, 0);
			if (pos > base + n - 1 && pos <= base + MAX_USER_WORDS) {
				st->n = pos - base;
				st->result = USTAT_COMPLETE;
			}
			goto out;
		}
		if (!w->active)
			goto out;
		rb_stat_add(RBSTAT_HOOKS, 1);
		if (!w->hooked) {
			/* The newest VM call may be at either end of its life: */
			int leaf = n == 1 && !(st->flags & UNW_S_RETADDR), unstarted = 0;
			__u64 magic = rb_peek_top(w, &unstarted);

			w->hooked = 1;
			if (leaf && magic == RB_FRAME_MAGIC_CFUNC) {
				/* its FINISH frame is popped already (it runs its last
				 * instructions) and a C function's frame, the caller's, is on
				 * top: the call has no frame left */
				w->core_seen = in_core;
				if (!keep)
					st->n = n - 1;
				goto out;
			}
			/* a FINISH frame that has not started runs in a VM call that is not
			 * on the C stack yet: it goes with the frames of this one */
			w->skip_finish = in_core && !leaf && unstarted;
		}
		if (in_exec && w->core_seen) {
			/* rb_vm_exec right under its vm_exec_core: the frames are out already */
			w->core_seen = 0;
			if (!keep)
				st->n = n - 1;
			goto out;
		}
		w->core_seen = in_core;
		if (!w->cfp)
			goto out;
		if (!keep)
			n--; /* overwrite the VM loop's frame */
		pos = rb_walk_frames(w, rec, base + n, base + MAX_USER_WORDS - 1, 1, 0);
		if (pos > base + n && pos <= base + MAX_USER_WORDS)
			st->n = pos - base;
		/* else no Ruby frame for it: the native frame stays */
	} else if (op == RT_OP_DEFER) {
		if (!w->active || !w->cfp)
			goto out;
		rb_stat_add(RBSTAT_DEFERRED, 1);
		pos = st->rt_pos;
		end = st->rt_limit;
		if (end > base + MAX_USER_WORDS - 1)
			end = base + MAX_USER_WORDS - 1;
		if (pos + 3 < end)
			st->rt_pos = rb_walk_frames(w, rec, pos, end, 0, 1);
	} else if (op == RT_OP_ONLY || op == RT_OP_RESCUE) {
		/* all frames in place of the stack, or (RESCUE) the frames the unwind did not
		 * reach, after its marker: one walk either way */
		n = op == RT_OP_ONLY ? 0 : st->n;
		if (!w->active || !w->cfp || n >= MAX_USER_WORDS - 1)
			goto out;
		end = rb_walk_frames(w, rec, base + n, base + MAX_USER_WORDS - 1, 0, 0);
		if (end > base + n && end <= base + MAX_USER_WORDS - 1)
			st->n = end - base;
	}
out:
	if (w->active)
		rb_stat_add(RBSTAT_WALK_NS, bpf_ktime_get_ns() - t0);
	return ret;
}

#endif
