/* pprof.h: pprof (profile.proto) encoding and decoding with a small hand-written protobuf
 * codec (protobuf.h). Encoded output is gzip-compressed; the decoder accepts gzip or raw protobuf.
 *
 * The decoder treats its input as hostile: every length is bounds-checked, sizes are capped,
 * and on error it returns a negative errno with a message in err and no profile.
 *
 * Frame kinds (enum frame_kind) have no field in profile.proto; they travel as conventions
 * (docs/formats.md, "pprof"):
 *   - the encoder gives a kernel, runtime or special frame whose location has no mapping a
 *     zero-range marker mapping named PPROF_KERNEL_MAPPING, PPROF_SPECIAL_MAPPING or, for a
 *     runtime frame, after the language of its file (profile_file_lang()): "[python]",
 *     "[javascript]", "[java]", "[ruby]", "[php]", "[perl]", else PPROF_RUNTIME_MAPPING; the
 *     decoder turns such a marker back into "no mapping" (and a runtime frame);
 *   - for foreign profiles the decoder infers: a mapping whose file starts with "[kernel" ->
 *     kernel; a function file ending in ".py"/".pyw" (or, without a mapping, any runtime's
 *     source file: profile_is_runtime_file()) -> runtime; a name "[...]" without mapping and
 *     file -> special; anything else native.
 * A pprof location with several lines (inlined calls, innermost first) becomes that many
 * consecutive locations of the model, leaf first. Ids written by the encoder (mapping, function,
 * location = the model's ids; string indexes = the model's string ids) come back unchanged.
 *
 * A profile of sample type samples/count with period type cpu/nanoseconds (what the recorder
 * makes) is written as Go writes CPU profiles: sample types samples/count and cpu/nanoseconds,
 * the second value being count x period, which pprof tools show by default. Decoding it with
 * the default index gives the counts back exactly; sample_index 1 gives the times. */
#ifndef SCORCH_PPROF_H
#define SCORCH_PPROF_H

#include "lib/buf.h"
#include "lib/log.h"
#include "profile/decode_limits.h"
#include "profile/profile.h"

#define PPROF_KERNEL_MAPPING  "[kernel.kallsyms]"
#define PPROF_PYTHON_MAPPING  "[python]"
#define PPROF_RUNTIME_MAPPING "[runtime]" /* a runtime frame whose file tells no language */
#define PPROF_SPECIAL_MAPPING "[special]"

/* Decoder limits besides struct decode_limits: an input beyond them is rejected with -E2BIG. */
#define PPROF_MAX_STRINGS      (1 << 24)
#define PPROF_MAX_SAMPLE_TYPES 256
#define PPROF_MAX_LINES        1024  /* line records (inlined frames) per location */
#define PPROF_MAX_DEPTH        65536 /* frames per sample, after inline expansion */
#define PPROF_MAX_LABELS       1024  /* labels per sample */

/* Append the gzip-compressed pprof encoding of p to out. Returns 0 or a negative errno
 * (-E2BIG past out->max); on error out is left as it was. */
int pprof_encode(const struct profile *p, struct buf *out);
/* Same, without compression. */
int pprof_encode_raw(const struct profile *p, struct buf *out);

/* Decode data (gzip or raw protobuf) into a new profile, within lim (NULL: the defaults of
 * decode_limits.h; max_inflated bounds the protobuf after inflation, or a raw input) and the
 * calling thread's budget (lib/budget.h). The value kept in each sample's `value`:
 *   sample_index >= 0   that index (-EINVAL if the profile has fewer sample types);
 *   sample_index < 0    the profile's default_sample_type if it names one of its types, else
 *                       the first type named "samples" (Go's CPU profiles: the count, with
 *                       the period in period_type/period), else the first named "cpu", else
 *                       the last type (pprof's own default: Go's heap gives inuse_space).
 * With sample_index == PPROF_ALL_TYPES the default is chosen as for -1 and every sample type
 * is kept as a value column (profile.h: nvalues, value_types, values), so that a profile with
 * several types is decoded once. A sample with fewer values than types has 0 in the others.
 * The profile's sample type/unit become the chosen one's; period type, period, time and
 * duration are copied. Label num_unit is dropped. Stacks expand to at most 4 frames per input
 * byte (plus 64 Ki) in total, a bound on memory for hostile inlining.
 * Errors: -E2BIG over a limit (message naming it), -ENOMEM/-EBUSY/-ETIME from the budget,
 * -EBADMSG malformed, -EINVAL bad sample_index, -ERANGE values overflow.
 * On success *out owns a new profile (profile_free()); on error *out is NULL. */
#define PPROF_ALL_TYPES (-2)
int pprof_decode(const void *data, size_t len, const struct decode_limits *lim, int sample_index,
		 struct profile **out, struct errmsg *err);

#endif
