/* aggregate.h: counts raw samples from the ring buffer by (pid, comm, flags, stack) without
 * symbolizing them, so the drain loop stays cheap; agg_to_profile() then symbolizes each
 * distinct stack once into the profile model. Off-CPU records (SAMPLE_F_OFFCPU) are kept apart
 * by their flags and add up their weights (nanoseconds); agg_to_profile_kind() makes CPU,
 * off-CPU or wall-clock profiles of them.
 *
 * Memory is bounded by max_stacks distinct stacks; samples past the cap are counted in
 * agg_dropped() and not stored. */
#ifndef SCORCH_AGGREGATE_H
#define SCORCH_AGGREGATE_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/sampler.h"

struct agg;
struct profile;
struct symbolizer;

struct agg *agg_new(size_t max_stacks);
/* Symbolize runtime frame words (tags of a runtime's range, bpf/sampler.h) with rts
 * (runtime/runtime.h), and name threads the way their runtime does (a Java thread by its
 * java.lang.Thread name, asked when its sample is counted): that name is the sample's "comm"
 * label in place of the kernel's 15-byte one. rts stays owned by the caller. */
struct runtimes;
void agg_set_runtimes(struct agg *a, struct runtimes *rts);
/* A label of the process pid for its samples (e.g. "script" = "app.py"): 1 with key and value
 * set (strings valid until the next call), 0 for none. */
typedef int (*agg_label_fn)(void *ctx, uint32_t pid, const char **key, const char **value);
void agg_set_label_source(struct agg *a, agg_label_fn fn, void *ctx);
/* The image pid runs now (process.h: generation), asked when a sample is counted: samples of
 * different images are kept apart and their addresses named from that image's mappings
 * (symbolizer_user_gen()), even once the process has exec'd another. 0: unknown. */
typedef uint32_t (*agg_gen_fn)(void *ctx, uint32_t pid);
void agg_set_generation_source(struct agg *a, agg_gen_fn fn, void *ctx);
void agg_free(struct agg *a);
/* Forget every stack (keeps the allocation for reuse). */
void agg_reset(struct agg *a);

/* Count one EVENT_SAMPLE record of size bytes (as read from the ring buffer). Returns 0,
 * -EINVAL for a malformed record, -ENOSPC when the stack cap was hit. */
int agg_add_record(struct agg *a, const struct event_hdr *hdr, size_t size);
/* The frame a marker word (FW_TAG_MARKER, its data: enum fw_marker) stands for in a profile,
 * e.g. "[unwind error]"; NULL for one that adds no frame (FW_MARKER_NO_USER). */
const char *agg_marker_name(uint64_t code);

uint64_t agg_samples(const struct agg *a);  /* CPU samples counted */
uint64_t agg_offcpu_records(const struct agg *a); /* off-CPU records counted (SAMPLE_F_OFFCPU) */
uint64_t agg_dropped(const struct agg *a);  /* samples dropped at the cap */
size_t agg_stacks(const struct agg *a);     /* distinct stacks */

/* For each process, which profile its stacks go to (NULL: skip them). */
typedef struct profile *(*agg_pick_fn)(void *ctx, uint32_t pid, const char *comm);

/* Symbolize every stack and add it to the profile chosen by pick (or to `into` when pick is
 * NULL), with labels comm (string: the thread's name, see agg_set_runtimes()) and pid
 * (number), value = number of samples. pick gets the kernel's comm. */
int agg_to_profile(struct agg *a, struct symbolizer *sym, struct profile *into, agg_pick_fn pick, void *pick_ctx);

/* Which records a profile is made of, and its values:
 *   AGG_CPU     CPU samples, value = number of samples (agg_to_profile())
 *   AGG_OFFCPU  off-CPU records, value = nanoseconds (their weights); the stack's leaf is a
 *               pseudo frame naming the reason ("[off-cpu: io]", bpf/offcpu.h)
 *   AGG_WALL    both, in nanoseconds: a CPU sample weighs cpu_period_ns; idle CPU is left out
 * Several calls may build several kinds from the same records before agg_reset(). */
enum agg_kind { AGG_CPU = 0, AGG_OFFCPU = 1, AGG_WALL = 2 };
int agg_to_profile_kind(struct agg *a, struct symbolizer *sym, enum agg_kind kind,
			int64_t cpu_period_ns, struct profile *into, agg_pick_fn pick,
			void *pick_ctx);

#endif
