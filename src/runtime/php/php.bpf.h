/* php.bpf.h: the PHP stack walker in BPF: php_bpf_walk(), the UNWINDER_PHP entry of
 * runtime/runtime.bpf.h's dispatch (ops and words: php.h). Included by runtime/walkers.bpf.h,
 * after the unwinder's maps (unwind_user.bpf.h).
 *
 * Per sample: executor_globals.current_execute_data, then the zend_execute_data chain: three
 * reads per frame (the execute_data's head, its function's head, the line of its opline).
 * Every read can fail: a failed read ends the walk with a PHP_MARK_BAD_FRAME word; loops are
 * bounded (PHP_MAX_FRAMES frames per sample). */
#ifndef SCORCH_PHP_BPF_H
#define SCORCH_PHP_BPF_H

#include "runtime/php/php.h"
#include "runtime/runtime.bpf.h"

#define PHP_MAX_FRAMES 512
#define PHP_OUT_LIMIT  (MAX_KERNEL_FRAMES + MAX_USER_WORDS)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct php_proc);
} php_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PHPSTAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} php_stats SEC(".maps");

/* 1: keep the native execute_ex frames next to the PHP frames they run. */
const volatile __u32 php_keep_vm_frames = 0;

struct php_walk {
	struct php_proc p;
	__u64 ex;          /* next execute_data (0: the walk is over) */
	__u32 active;      /* php_walk_begin() found PHP code running */
	__u32 nframes;
	__u32 after_jit;   /* the unwind resumed in execute_ex after JIT code: drop that frame */
	__u32 pos, limit, segment, defer, open;
	__u64 e[7];        /* zend_execute_data: opline, call, return_value, func, This, prev */
	__u64 f[3];        /* zend_function: type.., function_name, scope */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct php_walk);
} php_scratch SEC(".maps");

struct php_loop_ctx {
	struct php_walk *w;
	struct sample_record *rec;
};

static __always_inline void php_stat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&php_stats, &which);

	if (v)
		*v += n;
}

static __always_inline void php_emit(struct php_loop_ctx *c, __u64 word)
{
	struct php_walk *w = c->w;
	__u64 i = w->pos;

	asm volatile("" : "+r"(i));
	if (i >= w->limit || i >= PHP_OUT_LIMIT)
		return;
	c->rec->frames[i] = word;
	w->pos = i + 1;
}

static __always_inline void php_segment_end(struct php_loop_ctx *c)
{
	php_emit(c, (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_SEGMENT_END |
		       (php_keep_vm_frames ? FW_SEGMENT_KEEP_NATIVE : 0));
	c->w->open = 0;
}

/* One execute_data: emit it, advance w->ex. The execute_data layout is the same from 7.4 to
 * 8.3 (php.h): opline e[0], func e[3], call info e[5] (low half), prev e[6]. */
static long php_frame_step(__u32 i, void *data)
{
	struct php_loop_ctx *c = data;
	struct php_walk *w = c->w;
	__u64 ex = w->ex, func;
	__u32 info, type, line = 0;

	if (!ex)
		return 1;
	if (w->pos + 2 + w->defer > w->limit || w->nframes >= PHP_MAX_FRAMES) {
		php_emit(c, (FW_TAG_PHP_MARK << FW_TAG_SHIFT) | PHP_MARK_TRUNCATED);
		w->open = 1;
		php_stat_add(PHPSTAT_TRUNCATED, 1);
		w->ex = 0;
		return 1;
	}
	if (bpf_probe_read_user(w->e, sizeof(w->e), (const void *)ex))
		goto bad;
	w->ex = w->e[6];
	func = w->e[3];
	info = (__u32)w->e[5];
	if (func) {
		if (bpf_probe_read_user(w->f, sizeof(w->f), (const void *)func))
			goto bad;
		type = (__u32)(w->f[0] & 0xff);
		if (type != PHP_FUNC_INTERNAL && w->e[0] &&
		    bpf_probe_read_user(&line, sizeof(line),
					(const void *)(w->e[0] + w->p.off.op_lineno)))
			line = 0;
		php_emit(c, (FW_TAG_PHP_FUNC << FW_TAG_SHIFT) | (func & FW_DATA_MASK));
		php_emit(c, (FW_TAG_PHP_LINE << FW_TAG_SHIFT) | line |
			       (__u64)php_checksum(w->f[1], type) << 32 |
			       (__u64)((info >> 16) & 0xff) << 48);
		w->nframes++;
		w->open = 1;
		php_stat_add(PHPSTAT_FRAMES, 1);
	}
	if (info & PHP_CALL_TOP) {
		/* the first frame of one C-level call of the VM */
		if (w->defer)
			php_segment_end(c);
		if (w->segment)
			return 1;
	}
	return 0;
bad:
	php_emit(c, (FW_TAG_PHP_MARK << FW_TAG_SHIFT) | PHP_MARK_BAD_FRAME);
	w->open = 1;
	php_stat_add(PHPSTAT_ERRORS, 1);
	w->ex = 0;
	return 1;
}

static __always_inline int php_walk_begin(struct php_walk *w, __u32 tgid)
{
	struct php_proc *p = bpf_map_lookup_elem(&php_procs, &tgid);
	__u64 ex = 0;

	if (!p)
		return 0;
	php_stat_add(PHPSTAT_SAMPLES, 1);
	__builtin_memcpy(&w->p, p, sizeof(w->p));
	w->ex = 0;
	w->nframes = 0;
	w->after_jit = 0;
	if (bpf_probe_read_user(&ex, sizeof(ex), (const void *)(w->p.eg + w->p.off.eg_current_ex)) ||
	    !ex) {
		php_stat_add(PHPSTAT_IDLE, 1);
		return 0;
	}
	w->ex = ex;
	return 1;
}

static __always_inline __u32 php_walk_frames(struct php_walk *w, struct sample_record *rec,
					     __u32 pos, __u32 limit, __u32 segment, __u32 defer)
{
	struct php_loop_ctx c = { .w = w, .rec = rec };

	w->pos = pos;
	w->limit = defer ? limit - 1 : limit;
	w->segment = segment;
	w->defer = defer;
	w->open = 0;
	if (w->ex && limit > pos + 1)
		bpf_loop(PHP_MAX_FRAMES + 8, php_frame_step, &c, 0);
	w->limit = limit;
	if (defer && w->open)
		php_segment_end(&c);
	return w->pos;
}

__noinline int php_bpf_walk(__u32 op)
{
	__u32 zero = 0, n, keep = php_keep_vm_frames, pos, base, end;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);
	struct php_walk *w = bpf_map_lookup_elem(&php_scratch, &zero);
	struct sample_record *rec = bpf_map_lookup_elem(&scratch, &zero);
	__u64 t0 = bpf_ktime_get_ns(), pc;
	int ret = UNW_HOOK_NATIVE, jit;

	if (!st || !w || !rec)
		return UNW_HOOK_NATIVE;
	if (!(st->rt_begun & (1u << UNWINDER_PHP))) {
		st->rt_begun |= 1u << UNWINDER_PHP;
		w->active = php_walk_begin(w, st->pid);
	}
	base = st->out_base;
	if (base > MAX_KERNEL_FRAMES)
		goto out;
	if (op == RT_OP_FRAME) {
		n = st->n;
		if (n == 0 || n >= MAX_USER_WORDS)
			goto out;
		pc = st->pc - ((st->flags & UNW_S_RETADDR) ? 1 : 0);
		jit = !(pc >= w->p.exec_lo && pc < w->p.exec_hi);
		if (jit) {
			php_stat_add(PHPSTAT_JIT, 1);
			if (!w->p.jit_return) {
				st->result = USTAT_ERR_INVALID;
				ret = UNW_HOOK_STOP;
				goto out;
			}
			/* JIT code runs on execute_ex's stack frame: its frames, then on from
			 * execute_ex */
			if (w->active && w->ex) {
				pos = php_walk_frames(w, rec, base + n - 1, base + MAX_USER_WORDS - 1,
						      1, 0);
				if (pos > base + n - 1 && pos <= base + MAX_USER_WORDS)
					st->n = pos - base;
			}
			st->pc = w->p.jit_return;
			st->flags |= UNW_S_RETADDR;
			w->after_jit = 1;
			ret = UNW_HOOK_MOVED;
			goto out;
		}
		if (!w->active)
			goto out;
		php_stat_add(PHPSTAT_HOOKS, 1);
		if (w->after_jit) {
			w->after_jit = 0;
			if (!keep)
				st->n = n - 1;
			goto out;
		}
		if (!w->ex)
			goto out;
		if (!keep)
			n--;
		pos = php_walk_frames(w, rec, base + n, base + MAX_USER_WORDS - 1, 1, 0);
		if (pos > base + n && pos <= base + MAX_USER_WORDS)
			st->n = pos - base;
	} else if (op == RT_OP_DEFER) {
		if (!w->active || !w->ex)
			goto out;
		php_stat_add(PHPSTAT_DEFERRED, 1);
		pos = st->rt_pos;
		end = st->rt_limit;
		if (end > base + MAX_USER_WORDS - 1)
			end = base + MAX_USER_WORDS - 1;
		if (pos + 2 < end)
			st->rt_pos = php_walk_frames(w, rec, pos, end, 0, 1);
	} else if (op == RT_OP_ONLY || op == RT_OP_RESCUE) {
		/* all frames in place of the stack, or (RESCUE) the frames of every VM call the
		 * unwind did not reach, after its marker: one walk either way */
		n = op == RT_OP_ONLY ? 0 : st->n;
		if (!w->active || !w->ex || n >= MAX_USER_WORDS - 1)
			goto out;
		end = php_walk_frames(w, rec, base + n, base + MAX_USER_WORDS - 1, 0, 0);
		if (end > base + n && end <= base + MAX_USER_WORDS - 1)
			st->n = end - base;
	}
out:
	if (w->active)
		php_stat_add(PHPSTAT_WALK_NS, bpf_ktime_get_ns() - t0);
	return ret;
}

#endif
