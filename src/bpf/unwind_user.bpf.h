/* unwind_user.bpf.h: the user-stack step of the sampler. The sampler calls unwind_user() once
 * per sample with the record being built; it appends user frame words (sampler.h, FRAME WORDS)
 * leaf first at rec->frames[start..] and returns how many it wrote.
 *
 * This version asks the kernel for the frame-pointer chain (bpf_get_stack with
 * BPF_F_USER_STACK), which is complete only for code built with frame pointers. The
 * table-driven unwinder replaces this file's body without touching the sampler. */
#ifndef SCORCH_UNWIND_USER_BPF_H
#define SCORCH_UNWIND_USER_BPF_H

static __always_inline __u32 unwind_user(struct bpf_perf_event_data *ctx,
					 struct sample_record *rec, __u32 start)
{
	long n;

	if (start > MAX_KERNEL_FRAMES)
		return 0;
	n = bpf_get_stack(ctx, &rec->frames[start], MAX_USER_WORDS * sizeof(__u64),
			  BPF_F_USER_STACK);
	if (n < 0) {
		stat_inc(STAT_USTACK_ERRORS);
		rec->frames[start] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_UNWIND_ERROR;
		return 1;
	}
	return (__u32)n / sizeof(__u64);
}

#endif
