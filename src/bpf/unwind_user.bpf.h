/* unwind_user.bpf.h: the user-stack step of the sampler. The sampler calls unwind_user() once
 * per sample with the record being built; it appends user frame words (sampler.h, FRAME WORDS)
 * leaf first at rec->frames[start..] and returns how many it wrote. Programs that run while
 * the task is in the kernel (off-CPU, offcpu.bpf.h) call unwind_user_regs() with the user
 * registers saved on kernel entry (unwind_saved_regs()): the same unwinder and walkers.
 *
 * Native code is unwound without frame pointers, from per-file tables user space builds from
 * DWARF CFI (maps and formats: unwind.h; the step itself: unwind_step.h, shared with user
 * space). The loop runs under bpf_loop(), so a stack may have up to MAX_USER_WORDS frames.
 * A process without tables yet, or a pc in a mapping user space does not know yet (dlopen),
 * makes the sample carry a stack snapshot that user space unwinds with the same step
 * (unwinder.c), so no early sample is lost. An unwind that fails ends with an
 * [unwind error] marker, one cut at the limit with [truncated]; both are counted.
 *
 * *wake is set when user space should see the sample at once: UNW_WAKE_SNAPSHOT (user space
 * must read the process's maps while it lives) or UNW_WAKE_EAGER (a young process's runtime
 * frames, whose names user space must read while the process lives, UNW_PID_EAGER): the
 * sampler then wakes the reader.
 *
 * Runtimes: entries flagged UNW_F_INTERP (e.g. CPython's eval loop) and mappings flagged
 * UNW_MAP_RUNTIME (JIT code) call UNW_RUNTIME_HOOK (unwind_step.h), which the includer defines
 * first (runtime/runtime.bpf.h dispatches it by the mapping's kind). A snapshot of a process
 * with runtime walkers (UNW_RUNTIME_PRESENT(pid) != 0) keeps room for their deferred frames
 * and asks them for it (UNW_RUNTIME_DEFER(mask)).
 *
 * New mappings (dlopen) need no hook: the first sample whose pc falls outside the known
 * mappings carries a snapshot, and user space re-reads the process's maps when it sees it. */
#ifndef SCORCH_UNWIND_USER_BPF_H
#define SCORCH_UNWIND_USER_BPF_H

#include "unwind.h"

/* *wake of unwind_user() and unwind_user_regs() */
#define UNW_WAKE_SNAPSHOT 1
#define UNW_WAKE_EAGER 2


struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 4 << 20); /* UNWINDER_DEFAULT_ENTRIES: 32 MiB */
	__type(key, __u32);
	__type(value, struct unwind_entry);
} unw_entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 64 << 10); /* UNWINDER_DEFAULT_MAPPINGS: 2.5 MiB */
	__type(key, __u32);
	__type(value, struct unwind_mapping);
} unw_maps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* UNWINDER_DEFAULT_PIDS */
	__type(key, __u32);
	__type(value, struct unwind_pid);
} unw_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, USTAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} unw_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UNW_EXEC_HOT_MAX);
	__type(key, struct unwind_exec_key);
	__type(value, __u8);
} unw_exec_hot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UNW_JIT_PIDS_MAX);
	__type(key, __u32);
	__type(value, struct unwind_jit_links);
} unw_jit SEC(".maps");

/* The unwind state lives in a per-CPU map, not on the stack: values read from a map are
 * unknown to the verifier, so the bpf_loop callback is verified in a couple of passes instead
 * of once per possible frame count. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unw_state);
} unw_state_map SEC(".maps");

static __always_inline void ustat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&unw_stats, &which);

	if (v)
		*v += 1;
}

static __always_inline void ustat_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&unw_stats, &which);

	if (v)
		*v += n;
}

static __always_inline int unw_bpf_read(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (const void *)addr) ? 1 : 0;
}

static __always_inline int unw_bpf_read2(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, 2 * sizeof(*out), (const void *)addr) ? 1 : 0;
}

static __always_inline int unw_bpf_emit(struct unw_state *st, __u64 word)
{
	__u32 zero = 0, idx;
	struct sample_record *rec;

	if (st->n >= MAX_USER_WORDS - 1) /* one word stays free for a marker */
		return 1;
	rec = bpf_map_lookup_elem(&scratch, &zero);
	if (!rec)
		return 1;
	idx = st->out_base + st->n;
	if (idx >= MAX_KERNEL_FRAMES + MAX_USER_WORDS)
		return 1;
	rec->frames[idx] = word;
	st->n++;
	return 0;
}

static __always_inline void unw_bpf_set_last(struct unw_state *st, __u64 word)
{
	__u32 zero = 0, idx;
	struct sample_record *rec;

	if (st->n == 0)
		return;
	rec = bpf_map_lookup_elem(&scratch, &zero);
	if (!rec)
		return;
	idx = st->out_base + st->n - 1;
	if (idx >= MAX_KERNEL_FRAMES + MAX_USER_WORDS)
		return;
	rec->frames[idx] = word;
}

#ifndef UNW_RUNTIME_PRESENT
#define UNW_RUNTIME_PRESENT(pid) 0
#define UNW_RUNTIME_DEFER(mask) do { } while (0)
#define UNW_RUNTIME_RESCUE(mask) do { } while (0)
#endif

#define UNW_INLINE __always_inline
#define UNW_READ_U64(st, addr, dstp) unw_bpf_read((addr), (dstp))
#define UNW_READ_2U64(st, addr, dst) unw_bpf_read2((addr), (dst))
#define UNW_MAPPING(st, idx) unw_lookup_mapping(idx)
#define UNW_ENTRY(st, idx) unw_lookup_entry(idx)
#define UNW_EMIT(st, word) unw_bpf_emit((st), (word))
#define UNW_SET_LAST(st, word) unw_bpf_set_last((st), (word))
#define UNW_JIT_LINKS(st) \
	((const struct unwind_jit_links *)bpf_map_lookup_elem(&unw_jit, &(st)->pid))

static __always_inline const struct unwind_mapping *unw_lookup_mapping(__u32 idx)
{
	return bpf_map_lookup_elem(&unw_maps, &idx);
}

static __always_inline const struct unwind_entry *unw_lookup_entry(__u32 idx)
{
	return bpf_map_lookup_elem(&unw_entries, &idx);
}

/* Binary searches, one bpf_loop step per probe: the verifier checks the callback once instead
 * of every path through an unrolled search. */
struct unw_search {
	__u32 lo, hi, first;
	__u32 is_entry;
	__u64 key;
};

static long unw_search_cb(__u32 i, void *data)
{
	struct unw_search *s = data;
	__u32 mid, idx;

	if (s->hi - s->lo <= 1)
		return 1;
	mid = s->lo + (s->hi - s->lo) / 2;
	idx = s->first + mid;
	if (s->is_entry) {
		const struct unwind_entry *e = bpf_map_lookup_elem(&unw_entries, &idx);

		if (!e)
			return 1;
		if (e->pc <= s->key)
			s->lo = mid;
		else
			s->hi = mid;
	} else {
		const struct unwind_mapping *m = bpf_map_lookup_elem(&unw_maps, &idx);

		if (!m)
			return 1;
		if (m->start <= s->key)
			s->lo = mid;
		else
			s->hi = mid;
	}
	return 0;
}

#define UNW_HAVE_SEARCH 1

/* unwind_step.h */
static UNW_INLINE int unwind_index_range(struct unw_state *st, const struct unwind_mapping *m,
					 __u64 rel, __u32 *lo, __u32 *hi);

static __always_inline const struct unwind_mapping *unwind_find_mapping(struct unw_state *st,
									__u64 pc, __u32 *found)
{
	struct unw_search s = { 0, st->map_count, st->map_first, 0, pc };
	const struct unwind_mapping *m;
	__u32 idx;

	if (s.hi == 0 || s.hi > UNW_MAX_PID_MAPPINGS)
		return 0;
	bpf_loop(14, unw_search_cb, &s, 0);
	idx = s.first + s.lo;
	*found = idx;
	m = bpf_map_lookup_elem(&unw_maps, &idx);
	if (!m || pc < m->start || pc >= m->end)
		return 0;
	return m;
}

static __always_inline const struct unwind_entry *unwind_find_entry(struct unw_state *st,
								    const struct unwind_mapping *m,
								    __u64 rel, __u32 *found)
{
	struct unw_search s = { 0, m->table_count, m->table_first, 1, rel };
	const struct unwind_entry *e;
	__u32 idx;

	if (s.hi == 0 || s.hi > UNW_MAX_FILE_ENTRIES || rel > 0xffffffffULL)
		return 0;
	/* a large table: its page index narrows the search to a few entries on one line */
	if (m->index_shift && unwind_index_range(st, m, rel, &s.lo, &s.hi))
		return 0;
	bpf_loop(26, unw_search_cb, &s, 0);
	idx = s.first + s.lo;
	*found = idx;
	e = bpf_map_lookup_elem(&unw_entries, &idx);
	if (!e || e->pc > rel)
		return 0;
	return e;
}

#include "unwind_step.h"

static long unwind_loop_cb(__u32 i, void *data)
{
	__u32 zero = 0;
	struct unw_state *st = bpf_map_lookup_elem(&unw_state_map, &zero);

	if (!st)
		return 1;
	return unwind_step(st);
}

/* The end of the stack mapping holding sp, from the VMA (any thread); 0 when the mmap lock is
 * busy (the process is mapping memory right now). */
struct unw_vma_end {
	__u64 end;
};

static long unw_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct unw_vma_end *v = data;

	v->end = vma->vm_end;
	return 0;
}

/* Whether sp is off the thread's own stack, as far as BPF can tell cheaply: the main thread's
 * sp outside the UNW_MAIN_STACK_SPAN below mm->start_stack (a makecontext() or coroutine
 * stack). Other threads' stacks are anonymous memory like any other: never off stack. */
static __always_inline int unw_off_stack(const struct sample_record *rec, __u64 sp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 top;

	if (rec->hdr.tid != rec->hdr.pid)
		return 0;
	top = BPF_CORE_READ(task, mm, start_stack);
	return top && !(top > sp && top - sp <= UNW_MAIN_STACK_SPAN);
}

struct unw_chunks {
	struct sample_record *rec;
	__u64 addr, end;  /* what is left to send: [addr, end) */
	__u64 top;        /* the process's start_stack */
	__u32 sent;
	__u32 cut;        /* the ring buffer refused a chunk: the stack is cut short */
};

/* One EVENT_STACK_CHUNK record: the next STACK_CHUNK_BYTES of the stack (unwind.h). */
static long unw_chunk_cb(__u32 i, void *data)
{
	struct unw_chunks *c = data;
	struct stack_chunk *ch;
	__u64 n = c->end - c->addr;

	if (c->addr >= c->end)
		return 1;
	if (n > STACK_CHUNK_BYTES)
		n = STACK_CHUNK_BYTES;
	ch = bpf_ringbuf_reserve(&events, sizeof(*ch), 0);
	if (!ch) {
		c->cut = 1;
		return 1;
	}
	if (bpf_probe_read_user(ch->data, n, (const void *)c->addr)) {
		/* The end was a guess past the mapping (its VMA could not be looked up): the
		 * frames end below start_stack, read up to there. */
		n = c->top > c->addr ? (c->top - c->addr) & ~7ULL : 0;
		if (n > STACK_CHUNK_BYTES)
			n = STACK_CHUNK_BYTES;
		if (n < 8 || bpf_probe_read_user(ch->data, n, (const void *)c->addr)) {
			bpf_ringbuf_discard(ch, BPF_RB_NO_WAKEUP);
			return 1;
		}
		c->end = c->addr + n;
	}
	ch->hdr = c->rec->hdr;
	ch->hdr.type = EVENT_STACK_CHUNK;
	ch->hdr.size = sizeof(*ch);
	ch->index = c->sent;
	ch->len = n;
	ch->addr = c->addr;
	/* no wakeup: the sample that follows wakes the reader */
	bpf_ringbuf_submit(ch, BPF_RB_NO_WAKEUP);
	c->addr += n;
	c->sent++;
	return c->addr < c->end && n == STACK_CHUNK_BYTES ? 0 : 1;
}

/* Copy registers and the stack for user space to unwind (see unwind.h: STACK SNAPSHOTS), the
 * stack beyond what the record holds in chunk records, and the deferred frames of the
 * process's runtime walkers after the stack bytes. */
static __always_inline __u32 unwind_snapshot(struct sample_record *rec, struct unw_state *stp,
					     __u32 start, __u64 pc, __u64 sp, __u64 bp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 top = BPF_CORE_READ(task, mm, start_stack), end = 0;
	struct unw_vma_end vma = { 0 };
	struct unw_chunks chunks = { 0 };
	__u32 len = UNW_SNAPSHOT_MAX_BYTES, tries, max = UNW_SNAPSHOT_MAX_BYTES, deferred = 0;
	__u32 mask = UNW_RUNTIME_PRESENT(rec->hdr.pid), words;

	if (start > MAX_KERNEL_FRAMES)
		return 0;
	if (mask)
		max -= 8 * UNW_SNAPSHOT_DEFER_WORDS;
	/* The main thread's frames all lie below mm->start_stack (argc, argv, the environment and
	 * their strings sit above it, inside the same mapping): copying up to there needs no
	 * lookup of the stack's VMA, which costs about 10 us here (the mmap lock is taken, and
	 * released through an irq_work, an interrupt that a VM turns into an exit): most
	 * snapshots are of new, single-threaded processes. Other stacks (threads, an alternate
	 * signal stack, a coroutine's) are looked up. */
	if (rec->hdr.tid == rec->hdr.pid && top > sp && top - sp <= UNW_MAIN_STACK_SPAN)
		end = top;
	else if (bpf_find_vma(bpf_get_current_task_btf(), sp, unw_vma_cb, &vma, 0) == 0 &&
		 vma.end > sp)
		end = vma.end;
	else if (top > sp)
		end = top; /* the mmap lock is busy: a guess, the main thread's stack */
	if (end && end - sp < max)
		len = (__u32)(end - sp) & ~7u;
	for (tries = 0; tries < 5; tries++) {
		if (len > max)
			len = max;
		if (len < 8)
			break;
		if (bpf_probe_read_user(&rec->frames[start + UNW_SNAPSHOT_WORDS], len,
					(const void *)sp) == 0)
			goto copied;
		/* the read crossed the end of the stack mapping: take less */
		len = (len / 2) & ~7u;
	}
	ustat_inc(USTAT_SNAPSHOT_ERRORS);
	len = 0;
copied:
	ustat_inc(USTAT_SNAPSHOTS);
	/* A deeper stack goes on in chunk records, sent before the sample, as long as they leave
	 * an eighth of the ring buffer to the samples that follow. */
	if (len == max && end > sp + len) {
		chunks.rec = rec;
		chunks.addr = sp + len;
		chunks.end = end;
		chunks.top = top;
		if (end - chunks.addr > (__u64)UNW_SNAPSHOT_CHUNKS * STACK_CHUNK_BYTES)
			chunks.end = chunks.addr + (__u64)UNW_SNAPSHOT_CHUNKS * STACK_CHUNK_BYTES;
		if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + (chunks.end - chunks.addr) >
		    bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 8 * 7) {
			chunks.end = chunks.addr;
			ustat_inc(USTAT_SNAPSHOTS_UNCHAINED);
		}
		bpf_loop(UNW_SNAPSHOT_CHUNKS, unw_chunk_cb, &chunks, 0);
		if (chunks.cut)
			ustat_inc(USTAT_SNAPSHOTS_UNCHAINED);
		if (chunks.sent)
			ustat_inc(USTAT_SNAPSHOTS_CHAINED);
	}
	words = UNW_SNAPSHOT_WORDS + len / 8;
	if (mask) {
		/* The walkers start over: what they emitted during the unwind is dropped. */
		stp->rt_begun = 0;
		stp->out_base = start;
		stp->rt_pos = start + words;
		stp->rt_limit = start + MAX_USER_WORDS;
		UNW_RUNTIME_DEFER(mask);
		if (stp->rt_pos > start + words && stp->rt_pos <= start + MAX_USER_WORDS)
			deferred = stp->rt_pos - (start + words);
	}
	rec->frames[start] = (FW_TAG_SNAPSHOT << FW_TAG_SHIFT) |
			     (unw_off_stack(rec, sp) ? UNW_SNAPSHOT_OFF_STACK : 0) |
			     ((__u64)chunks.sent << UNW_SNAPSHOT_CHUNKS_SHIFT) |
			     ((__u64)deferred << 16) | len;
	rec->frames[start + 1] = pc;
	rec->frames[start + 2] = sp;
	rec->frames[start + 3] = bp;
	return words + deferred;
}

/* Unwind the current task's user stack from its registers pc, sp, bp (see unwind_user()). */
static __always_inline __u32 unwind_user_regs(struct sample_record *rec, __u32 start, __u64 pc,
					      __u64 sp, __u64 bp, __u64 bx, __u64 di, __u64 *wake)
{
	struct unw_state st, *stp;
	struct unwind_pid *up;
	struct mm_struct *mm;
	__u32 zero = 0;
	__u32 pid = rec->hdr.pid, idx, mask;
	__u64 marker;

	if (start > MAX_KERNEL_FRAMES)
		return 0;
	/* execve() past the point of no return: the task has its new mm, which has no code until
	 * load_elf_binary() sets start_code just before the new registers (start_thread()); the
	 * saved registers still point into the image that is gone. One read per sample. */
	mm = BPF_CORE_READ(bpf_get_current_task_btf(), mm);
	if (mm && !BPF_CORE_READ(mm, start_code)) {
		ustat_inc(USTAT_EXEC);
		rec->frames[start] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_EXEC;
		return 1;
	}
	stp = bpf_map_lookup_elem(&unw_state_map, &zero);
	if (!stp)
		return 0;
	__builtin_memset(stp, 0, sizeof(*stp));
	stp->pc = pc;
	stp->sp = sp;
	stp->bp = bp;
	stp->leaf_bx = bx;
	stp->leaf_di = di;
	stp->pid = pid;
	stp->out_base = start; /* BPF: where the words go in rec->frames */
	stp->fsbase = BPF_CORE_READ(bpf_get_current_task_btf(), thread.fsbase);
	up = bpf_map_lookup_elem(&unw_pids, &pid);
	if (!up) {
		/* Not published yet: a process that has just started, as young as they come (the
		 * runtime walkers note what its deferred frames name, python.h). */
		stp->pid_flags = UNW_PID_EAGER;
		ustat_inc(USTAT_ERR_NO_PID);
		goto snapshot;
	}
	stp->map_first = up->first;
	stp->map_count = up->count;
	stp->pid_flags = up->flags;
	ustat_inc(USTAT_UNWINDS);
	bpf_loop(MAX_USER_WORDS, unwind_loop_cb, NULL, 0);
	st = *stp;
	/* A young process of a runtime: user space reads what its frames name while it still
	 * runs (a process of 50 ms is gone before the reader's next timed poll). */
	if (st.rt_begun && (up->flags & UNW_PID_EAGER))
		*wake = UNW_WAKE_EAGER;
	ustat_add(USTAT_FRAMES, st.frames);
	if (st.result == USTAT_ERR_NO_MAPPING || st.result == USTAT_ERR_NO_TABLE) {
		/* a mapping user space has not seen yet: let it unwind this one */
		ustat_inc(st.result);
		goto snapshot;
	}
	if (st.switches)
		ustat_add(USTAT_SWITCHES, st.switches);
	if (st.result == USTAT_COMPLETE) {
		ustat_inc(USTAT_COMPLETE);
		return st.n;
	}
	/* a stack to keep as a replay case: user space unwinds the copy the same way, and keeps
	 * what the unwind read */
	if (capture_errors && st.result != USTAT_TRUNCATED)
		goto snapshot;
	/* failed on a stack that is not the thread's, before any way back to it */
	if (st.result != USTAT_TRUNCATED && st.result != USTAT_STACK_SWITCH && !st.signals &&
	    !st.switches && unw_off_stack(rec, sp))
		st.result = USTAT_STACK_SWITCH;
	if (st.result == USTAT_TRUNCATED) {
		ustat_inc(USTAT_TRUNCATED);
		stat_inc(STAT_USTACK_TRUNCATED);
		marker = FW_MARKER_TRUNCATED;
	} else if (st.result == USTAT_STACK_SWITCH) {
		ustat_inc(USTAT_STACK_SWITCH);
		marker = FW_MARKER_STACK_SWITCH;
	} else {
		ustat_inc(st.result < USTAT__COUNT ? st.result : USTAT_ERR_INVALID);
		stat_inc(STAT_USTACK_ERRORS);
		marker = FW_MARKER_UNWIND_ERROR;
	}
	idx = start + st.n;
	if (st.n < MAX_USER_WORDS && idx < MAX_KERNEL_FRAMES + MAX_USER_WORDS) {
		rec->frames[idx] = (FW_TAG_MARKER << FW_TAG_SHIFT) | marker;
		st.n++;
	}
	if (marker != FW_MARKER_TRUNCATED && (mask = UNW_RUNTIME_PRESENT(pid))) {
		/* the runtime frames the unwind did not reach (native code it could not cross
		 * between them and the leaf) come after the marker, from the walkers' state */
		stp->n = st.n;
		UNW_RUNTIME_RESCUE(mask);
		if (stp->n > st.n && stp->n <= MAX_USER_WORDS)
			st.n = stp->n;
	}
	return st.n;
snapshot:
	*wake = UNW_WAKE_SNAPSHOT; /* user space must read the process's maps now */
	return unwind_snapshot(rec, stp, start, pc, sp, bp);
}

/* The user registers of the current task while it is in the kernel: those saved on entry. */
static __always_inline void unwind_saved_regs(__u64 *pc, __u64 *sp, __u64 *bp, __u64 *bx,
					      __u64 *di)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	*pc = BPF_CORE_READ(regs, ip);
	*sp = BPF_CORE_READ(regs, sp);
	*bp = BPF_CORE_READ(regs, bp);
	*bx = BPF_CORE_READ(regs, bx);
	*di = BPF_CORE_READ(regs, di);
}

static __always_inline __u32 unwind_user(struct bpf_perf_event_data *ctx,
					 struct sample_record *rec, __u32 start, __u64 *wake)
{
	__u64 pc, sp, bp, bx, di, cs;

	/* cs is a union of u16 and u64 on recent kernels; the context allows only 8-byte loads */
	cs = *(volatile __u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));
	if (cs & 3) {
		pc = ctx->regs.ip;
		sp = ctx->regs.sp;
		bp = ctx->regs.bp;
		bx = ctx->regs.bx;
		di = ctx->regs.di;
	} else {
		/* The sample hit kernel code: the user registers were saved on kernel entry. */
		unwind_saved_regs(&pc, &sp, &bp, &bx, &di);
		ustat_inc(USTAT_FROM_KERNEL);
	}
	return unwind_user_regs(rec, start, pc, sp, bp, bx, di, wake);
}

#endif
