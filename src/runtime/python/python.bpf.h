/* python.bpf.h: the CPython stack walker in BPF: python_bpf_walk(), the UNWINDER_PYTHON entry
 * of runtime/runtime.bpf.h's dispatch (its ops are described there and in python.h). Included
 * by runtime/walkers.bpf.h, after the unwinder's maps (unwind_user.bpf.h).
 *
 * Per sample: find the sampled thread's PyThreadState (a per-thread cache, checked, else a walk
 * of the thread-state lists comparing tstate->thread_id with the thread's fsbase, which is
 * pthread_self() on x86-64), then follow the frame chain from the thread's current frame. Each
 * Python frame becomes two words (code object, instruction offset + checksum). Entry frames
 * (3.11 is_entry, 3.12+ owner >= 3 shims) delimit the Python frames of one C-level
 * _PyEval_EvalFrameDefault call, which is what lets the native unwinder put them in place of
 * that native frame.
 *
 * Every read can fail (the target runs on, the process is hostile): a failed read ends the walk
 * with a PY_MARK_BAD_FRAME word; loops are bounded (PY_MAX_FRAMES frames per sample,
 * PY_MAX_THREADS thread states, PY_MAX_INTERPS interpreters). */
#ifndef SCORCH_PYTHON_BPF_H
#define SCORCH_PYTHON_BPF_H

#include "runtime/python/python.h"
#include "runtime/runtime.bpf.h"

#define PY_MAX_FRAMES  192 /* Python frames per sample */
#define PY_MAX_THREADS 1024 /* thread states searched per interpreter (cache misses only) */
#define PY_MAX_INTERPS 4
#define PY_OUT_LIMIT   (MAX_KERNEL_FRAMES + MAX_USER_WORDS)
#define PY_HDR         128 /* bytes of a frame / code object read at once (power of two) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32); /* tgid */
	__type(value, struct py_proc);
} py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* PyThreadState address */
} py_tstates SEC(".maps");

/* Code objects seen in young processes (python.h, YOUNG CODE OBJECTS). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct py_code_key);
	__type(value, struct py_code_refs);
} py_young_code SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PYSTAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

static __always_inline void py_stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &which);

	if (v)
		*v += n;
}

/* Walker state for one sample. */
struct py_walk {
	struct py_proc p;  /* copy of the process's map value */
	__u64 frame;       /* next frame to read (0: the chain is done) */
	__u64 fsbase;
	__u32 tid;
	__u32 nframes;     /* Python frames emitted so far */
	__u32 error;       /* a read failed: the walk stopped */
	/* The current emission (kept here, in map memory, not on the stack: the verifier then
	 * sees unknown values and checks the loop body once instead of once per value). */
	__u32 active;      /* py_walk_begin() found a thread state for this sample */
	__u32 pos;         /* next index in rec->frames */
	__u32 limit;       /* do not write at or past this index */
	__u32 segment;     /* 1: stop at the end of one C-level eval call */
	__u32 defer;       /* 1: mark the end of each C-level eval call and go on (RT_OP_DEFER) */
	__u32 open;        /* defer: words were emitted since the last segment end */
	__u32 young;       /* the process is young (UNW_PID_EAGER): note its code objects */
	__u32 tgid;
	struct py_code_refs refs; /* py_note_young()'s value, built here (too big for the stack) */
	/* The first PY_HDR bytes of the current frame and code object, read at once: one read
	 * instead of one per field (+8: room for an 8-byte load at any masked offset). */
	__u8 fbuf[PY_HDR + 8];
	__u8 cbuf[PY_HDR + 8];
};

/* 1: keep the native _PyEval_EvalFrameDefault frames next to the Python frames they run. */
const volatile __u32 python_keep_eval_frames = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_walk);
} py_scratch SEC(".maps");

/* Per-call context of the frame loop (bpf_loop callback). */
struct py_loop_ctx {
	struct py_walk *w;
	struct sample_record *rec;
};

static __always_inline int py_read(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* bpf_loop callback for the thread-state search. */
struct py_ts_ctx {
	struct py_walk *w;
	__u64 ts;
	__u64 found;    /* the thread's thread state that runs Python code now */
	__u64 fallback; /* the thread's first thread state, whatever it runs */
};

static __always_inline __u64 py_ts_frame(struct py_walk *w, __u64 ts)
{
	__u64 f = 0;

	if (py_read(&f, sizeof(f), ts + w->p.off.ts_frame))
		return 0;
	if ((w->p.off.flags & PY_F_CFRAME) && f &&
	    py_read(&f, sizeof(f), f + w->p.off.ts_cframe_frame))
		return 0;
	return f;
}

static long py_ts_step(__u32 i, void *data)
{
	struct py_ts_ctx *c = data;
	struct py_walk *w = c->w;
	__u64 id = 0;

	if (!c->ts)
		return 1;
	if (py_read(&id, sizeof(id), c->ts + w->p.off.ts_thread_id))
		return 1;
	if (id == w->fsbase) {
		/* With subinterpreters one OS thread has a thread state in each interpreter it
		 * entered: take the one with a current frame. */
		if (py_ts_frame(w, c->ts)) {
			c->found = c->ts;
			return 1;
		}
		if (!c->fallback)
			c->fallback = c->ts;
	}
	if (py_read(&c->ts, sizeof(c->ts), c->ts + w->p.off.ts_next))
		return 1;
	return 0;
}

static __always_inline __u64 py_find_tstate(struct py_walk *w)
{
	struct py_ts_ctx c = { .w = w };
	__u64 *cached, interp = 0, id = 0, next = 0;
	int i;

	if (py_read(&interp, sizeof(interp), w->p.runtime + w->p.off.rt_interp_head) || !interp)
		return 0;
	/* The per-thread cache is only right with one interpreter. */
	if (!py_read(&next, sizeof(next), interp + w->p.off.interp_next) && !next) {
		cached = bpf_map_lookup_elem(&py_tstates, &w->tid);
		if (cached && *cached &&
		    !py_read(&id, sizeof(id), *cached + w->p.off.ts_thread_id) && id == w->fsbase)
			return *cached;
	}
	for (i = 0; i < PY_MAX_INTERPS && interp; i++) {
		c.ts = 0;
		if (py_read(&c.ts, sizeof(c.ts), interp + w->p.off.interp_threads_head))
			break;
		bpf_loop(PY_MAX_THREADS, py_ts_step, &c, 0);
		if (c.found)
			break;
		if (py_read(&interp, sizeof(interp), interp + w->p.off.interp_next))
			break;
	}
	if (!c.found)
		c.found = c.fallback;
	if (c.found)
		bpf_map_update_elem(&py_tstates, &w->tid, &c.found, BPF_ANY);
	return c.found;
}

/* Start a walk for the current task of process tgid. Returns 1 when the process is a known
 * CPython and the thread has a thread state (w->frame may still be 0: no Python frames). */
static __always_inline int py_walk_begin(struct py_walk *w, __u32 tgid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct py_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	__u64 ts;

	if (!p)
		return 0;
	py_stat_add(PYSTAT_SAMPLES, 1);
	__builtin_memcpy(&w->p, p, sizeof(w->p));
	w->frame = 0;
	w->nframes = 0;
	w->error = 0;
	w->tid = (__u32)bpf_get_current_pid_tgid();
	w->fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (w->p.off.flags & PY_F_FREE_THREADED)
		return 0;
	ts = py_find_tstate(w);
	if (!ts) {
		py_stat_add(PYSTAT_NO_TSTATE, 1);
		return 0;
	}
	if (py_read(&w->frame, sizeof(w->frame), ts + w->p.off.ts_frame)) {
		w->frame = 0;
		return 1;
	}
	if ((w->p.off.flags & PY_F_CFRAME) && w->frame &&
	    py_read(&w->frame, sizeof(w->frame), w->frame + w->p.off.ts_cframe_frame))
		w->frame = 0;
	return 1;
}

/* 1 when pc is inside the eval loop of the walked process. */
static __always_inline int py_pc_in_eval(const struct py_walk *w, __u64 pc)
{
	return (pc >= w->p.eval_lo[0] && pc < w->p.eval_hi[0]) ||
	       (pc >= w->p.eval_lo[1] && pc < w->p.eval_hi[1]);
}

static __always_inline void py_emit(struct py_loop_ctx *c, __u64 word)
{
	struct py_walk *w = c->w;
	__u64 i = w->pos;

	asm volatile("" : "+r"(i)); /* bound-check the very register used as index */
	if (i >= w->limit || i >= PY_OUT_LIMIT)
		return;
	c->rec->frames[i] = word;
	w->pos = i + 1;
}

static __always_inline void py_emit2(struct py_loop_ctx *c, __u64 a, __u64 b)
{
	struct py_walk *w = c->w;
	__u64 i = w->pos;

	asm volatile("" : "+r"(i));
	if (i + 2 > w->limit || i >= PY_OUT_LIMIT - 1)
		return;
	c->rec->frames[i] = a;
	c->rec->frames[i + 1] = b;
	w->pos = i + 2;
}

/* A field of size bytes at base + off: from buf (the first PY_HDR bytes at base, when have is
 * set) or read from memory. 0 on success. */
static __always_inline int py_get(__u8 *buf, int have, __u64 base, __u64 off, void *dst,
				  __u32 size)
{
	if (have && off + size <= PY_HDR) {
		asm volatile("" : "+r"(off));
		off &= PY_HDR - 1;
		if (size == 8)
			*(__u64 *)dst = *(__u64 *)(buf + off);
		else if (size == 4)
			*(__u32 *)dst = *(__u32 *)(buf + off);
		else
			*(__u8 *)dst = *(__u8 *)(buf + off);
		return 0;
	}
	return py_read(dst, size, base + off);
}

/* End one deferred segment (RT_OP_DEFER): the marker word after its frames. */
static __always_inline void py_segment_end(struct py_loop_ctx *c)
{
	py_emit(c, (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_SEGMENT_END |
		       (python_keep_eval_frames ? FW_SEGMENT_KEEP_NATIVE : 0));
	c->w->open = 0;
}

/* The characters of the str object at str into dst (NUL-terminated, cut at size - 1 bytes)
 * when it is compact ASCII (state: kind 1, compact, ascii; the same bits in 3.8 - 3.14), else
 * dst[0] = 0. */
static __always_inline void py_copy_ascii(const struct py_offsets *o, __u64 str, char *dst,
					  __u32 size)
{
	__u32 state = 0;

	dst[0] = 0;
	if (!str || py_read(&state, sizeof(state), str + o->str_state))
		return;
	if ((state & 0x7c) != ((1u << 2) | (1u << 5) | (1u << 6)))
		return;
	if (bpf_probe_read_user_str(dst, size, (const void *)(str + o->str_ascii_size)) < 0)
		dst[0] = 0;
}

/* A young process's code object: note what names it (py_young_code), once. Its module body
 * may be freed before user space reads it. The fields are in the code object's header (cbuf,
 * when ch is set) in every supported version. */
static __always_inline void py_note_young(struct py_walk *w, __u8 *cbuf, int ch, __u64 code,
					  __u32 checksum, __u32 firstlineno, __u64 name)
{
	const struct py_offsets *o = &w->p.off;
	struct py_code_key k = { .pid = w->tgid, .checksum = checksum, .addr = code };
	struct py_code_refs *r = &w->refs;

	if (bpf_map_lookup_elem(&py_young_code, &k))
		return;
	r->name = name;
	r->firstlineno = firstlineno;
	r->qualname = 0;
	if (py_get(cbuf, ch, code, o->co_filename, &r->filename, 8))
		return;
	if (o->co_qualname != PY_NO_OFFSET && py_get(cbuf, ch, code, o->co_qualname, &r->qualname, 8))
		r->qualname = 0;
	py_copy_ascii(o, r->qualname ? r->qualname : name, r->name_text, PY_YOUNG_NAME);
	py_copy_ascii(o, r->filename, r->file_text, PY_YOUNG_FILE);
	bpf_map_update_elem(&py_young_code, &k, r, BPF_NOEXIST);
}

/* One frame of the chain: emit it (or skip a shim), advance w->frame. */
static long py_frame_step(__u32 i, void *data)
{
	struct py_loop_ctx *c = data;
	struct py_walk *w = c->w;
	const struct py_offsets *o = &w->p.off;
	__u64 frame = w->frame, code = 0, next = 0, ptr = 0, name = 0;
	__u32 instr = (__u32)PY_INSTR_UNKNOWN, firstlineno = 0, sum;
	__u8 owner = 0;
	int entry = 0, fh, ch;

	if (!frame)
		return 1;
	if (w->pos + 2 + w->defer > w->limit || w->nframes >= PY_MAX_FRAMES) {
		py_emit(c, (FW_TAG_PYTHON_MARK << FW_TAG_SHIFT) | PY_MARK_TRUNCATED);
		w->open = 1;
		py_stat_add(PYSTAT_TRUNCATED, 1);
		w->frame = 0;
		return 1;
	}
	fh = !py_read(w->fbuf, PY_HDR, frame);
	if (py_get(w->fbuf, fh, frame, o->fr_code, &code, 8) ||
	    py_get(w->fbuf, fh, frame, o->fr_previous, &next, 8))
		goto bad;
	if (o->flags & PY_F_TAGGED_CODE)
		code &= ~3ULL;
	if (o->fr_owner != PY_NO_OFFSET && py_get(w->fbuf, fh, frame, o->fr_owner, &owner, 1))
		goto bad;
	w->frame = next;
	if ((o->flags & PY_F_OWNER_SHIM) && owner >= 3) {
		/* The entry frame of a C-level eval call: the end of its segment. */
		if (w->defer)
			py_segment_end(c);
		return w->segment ? 1 : 0;
	}
	if (o->flags & PY_F_FRAME_OBJECTS) {
		__s32 lasti = -1;

		entry = 1;
		if (!py_get(w->fbuf, fh, frame, o->fr_instr, &lasti, 4) && lasti >= 0)
			instr = (o->flags & PY_F_LASTI_UNITS) ? (__u32)lasti * 2 : (__u32)lasti;
	} else {
		__u64 base = code + o->co_code_adaptive;

		entry = (o->flags & PY_F_IS_ENTRY) && owner;
		if (!py_get(w->fbuf, fh, frame, o->fr_instr, &ptr, 8) && ptr >= base &&
		    ptr - base < (1u << 24))
			instr = (__u32)(ptr - base);
	}
	ch = !py_read(w->cbuf, PY_HDR, code);
	if (py_get(w->cbuf, ch, code, o->co_firstlineno, &firstlineno, 4) ||
	    py_get(w->cbuf, ch, code, o->co_name, &name, 8))
		goto bad;
	sum = py_code_checksum(firstlineno, name);
	py_emit2(c, (FW_TAG_PYTHON << FW_TAG_SHIFT) | (code & FW_DATA_MASK),
		 (FW_TAG_PYTHON_INSTR << FW_TAG_SHIFT) | ((__u64)sum << 32) | instr);
	if (w->young)
		py_note_young(w, w->cbuf, ch, code & FW_DATA_MASK, sum, firstlineno, name);
	w->nframes++;
	py_stat_add(PYSTAT_FRAMES, 1);
	w->open = 1;
	if (w->defer && entry && !(o->flags & PY_F_OWNER_SHIM))
		py_segment_end(c);
	if (w->segment && entry)
		return 1;
	return 0;
bad:
	py_emit(c, (FW_TAG_PYTHON_MARK << FW_TAG_SHIFT) | PY_MARK_BAD_FRAME);
	w->open = 1;
	py_stat_add(PYSTAT_ERRORS, 1);
	w->frame = 0;
	w->error = 1;
	return 1;
}

/* Emit the Python frames of the C-level eval call the native unwinder is at, into
 * rec->frames[pos..limit). Returns the new pos. */
static __always_inline __u32 py_walk_eval_frame(struct py_walk *w, struct sample_record *rec,
						__u32 pos, __u32 limit)
{
	struct py_loop_ctx c = { .w = w, .rec = rec };

	w->pos = pos;
	w->limit = limit;
	w->segment = 1;
	w->defer = 0;
	if (w->frame)
		bpf_loop(PY_MAX_FRAMES, py_frame_step, &c, 0);
	return w->pos;
}

/* Emit every Python frame of the thread into rec->frames[pos..limit), with a segment end
 * marker after each C-level eval call when defer is set. Returns the new pos. */
static __always_inline __u32 py_walk_all(struct py_walk *w, struct sample_record *rec,
					 __u32 pos, __u32 limit, __u32 defer)
{
	struct py_loop_ctx c = { .w = w, .rec = rec };

	w->pos = pos;
	w->limit = defer ? limit - 1 : limit; /* defer: the last word is for the last segment end */
	w->segment = 0;
	w->defer = defer;
	w->open = 0;
	if (w->frame && limit > pos + 1)
		bpf_loop(PY_MAX_FRAMES + 64, py_frame_step, &c, 0);
	w->limit = limit;
	if (defer && w->open)
		py_segment_end(&c); /* a walk cut short still ends its last segment */
	return w->pos;
}

/* The walker (runtime/runtime.bpf.h: RT_OP_FRAME, RT_OP_DEFER, RT_OP_RESCUE, RT_OP_ONLY). A global function:
 * the verifier checks it once, on its own, whatever calls it. */
__noinline int python_bpf_walk(__u32 op)
{
	__u32 zero = 0, n, keep = python_keep_eval_frames, pos, base, end;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);
	struct py_walk *w = bpf_map_lookup_elem(&py_scratch, &zero);
	struct sample_record *rec = bpf_map_lookup_elem(&scratch, &zero);
	__u64 t0 = bpf_ktime_get_ns();

	if (!st || !w || !rec)
		return UNW_HOOK_NATIVE;
	if (!(st->rt_begun & (1u << UNWINDER_PYTHON))) {
		/* First call in this sample: find the thread's thread state. */
		st->rt_begun |= 1u << UNWINDER_PYTHON;
		w->active = py_walk_begin(w, st->pid);
		w->young = !!(st->pid_flags & UNW_PID_EAGER);
		w->tgid = st->pid;
	}
	if (!w->active || !w->frame)
		goto out;
	base = st->out_base;
	if (base > MAX_KERNEL_FRAMES)
		goto out;
	if (op == RT_OP_FRAME) {
		n = st->n;
		if (n == 0 || n >= MAX_USER_WORDS)
			goto out;
		py_stat_add(PYSTAT_HOOKS, 1);
		if (!keep)
			n--; /* overwrite the eval-loop frame */
		pos = py_walk_eval_frame(w, rec, base + n, base + MAX_USER_WORDS - 1);
		if (pos > base + n && pos <= base + MAX_USER_WORDS)
			st->n = pos - base;
		/* else no Python frame for it: the native frame stays */
	} else if (op == RT_OP_DEFER) {
		py_stat_add(PYSTAT_DEFERRED, 1);
		pos = st->rt_pos;
		end = st->rt_limit;
		if (end > base + MAX_USER_WORDS - 1)
			end = base + MAX_USER_WORDS - 1;
		if (pos < end)
			st->rt_pos = py_walk_all(w, rec, pos, end, 1);
	} else if (op == RT_OP_ONLY || op == RT_OP_RESCUE) {
		/* all frames in place of the stack, or (RESCUE) the frames the unwind did not
		 * reach, after its marker: one walk either way */
		n = op == RT_OP_ONLY ? 0 : st->n;
		if (n >= MAX_USER_WORDS - 1)
			goto out;
		end = py_walk_all(w, rec, base + n, base + MAX_USER_WORDS - 1, 0);
		if (end > base + n && end <= base + MAX_USER_WORDS - 1)
			st->n = end - base;
	}
out:
	if (w->active)
		py_stat_add(PYSTAT_WALK_NS, bpf_ktime_get_ns() - t0);
	return UNW_HOOK_NATIVE;
}

#endif
