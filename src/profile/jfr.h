/* jfr.h: JDK Flight Recorder recordings (.jfr) into the profile model, as the JDK's
 * -XX:StartFlightRecording, `jcmd JFR.dump` and async-profiler (Pyroscope's Java agent) write
 * them: the chunk format (version 2, compressed integers), read generically through each chunk's
 * own metadata, so that event and type layouts are never assumed. The format is described in
 * docs/formats.md ("JFR").
 *
 * Events become profiles, one per profile type, with the event's stack trace (leaf first; a
 * truncated trace gets a "[truncated]" marker at its root), the Java thread's name as the "comm"
 * label, and, with a Pyroscope labels snapshot, the labels of the event's contextId:
 *
 *   jdk.ExecutionSample             cpu                          1 per sample
 *   jdk.ObjectAllocationInNewTLAB   alloc_in_new_tlab_objects    1 per event
 *                                   alloc_in_new_tlab_bytes      tlabSize
 *   jdk.ObjectAllocationOutsideTLAB alloc_outside_tlab_objects   1 per event
 *                                   alloc_outside_tlab_bytes     allocationSize
 *   jdk.ObjectAllocationSample      alloc_sample_objects         1 per event
 *                                   alloc_sample_bytes           weight
 *   jdk.JavaMonitorEnter            lock_count, lock_duration    1, duration in ns
 *   jdk.ThreadPark                  park_count, park_duration    1, duration in ns
 *
 * Frames are Java methods named "package.Class.method" (the descriptor in system_name), with
 * their line numbers; native kind. The sampling period of jdk.ExecutionSample comes from the
 * recording's jdk.ActiveSetting events (e.g. "10 ms" gives 100 Hz).
 *
 * The decoder treats its input as hostile (decode_limits.h caps; every offset, length and
 * reference checked; nesting of inline types bounded): a malformed recording is rejected as a
 * whole with -EBADMSG and a message naming what is wrong, -E2BIG past a cap. */
#ifndef SCORCH_JFR_H
#define SCORCH_JFR_H

#include "lib/log.h"
#include "profile/decode_limits.h"
#include "profile/profile.h"

#include <stddef.h>
#include <stdint.h>

/* Pyroscope's LabelsSnapshot (the "labels" part of its Java agent's uploads):
 *   message Context { map<int64, int64> labels = 1; }          string id -> string id
 *   message LabelsSnapshot { map<int64, Context> contexts = 1;  context id -> Context
 *                            map<int64, string> strings = 2; }  string id -> string */
struct jfr_labels;

int jfr_labels_decode(const void *data, size_t len, const struct decode_limits *lim,
		      struct jfr_labels **out, struct errmsg *err);
void jfr_labels_free(struct jfr_labels *l);

struct jfr_profile {
	const char *type;   /* profile type, e.g. "cpu", "alloc_in_new_tlab_bytes" (static) */
	const char *units;  /* "samples", "objects", "bytes", "count", "nanoseconds" (static) */
	uint32_t sample_rate; /* Hz, from the recording's period (cpu), else 0 */
	struct profile *prof; /* owned by the result */
};

struct jfr_result {
	struct jfr_profile *profiles; /* only types that have events */
	size_t nprofiles;
	int64_t start_ns, duration_ns; /* the recording's span (its chunks') */
	uint64_t events;               /* events turned into samples */
	uint32_t chunks;
};

/* Decode a recording (gzip or raw; several chunks concatenated are fine). labels may be NULL.
 * Zero fields of lim (may be NULL) take the defaults. Returns 0, or a negative errno with a
 * message in err and out empty. Release with jfr_result_release() either way. */
int jfr_decode(const void *data, size_t len, const struct decode_limits *lim,
	       const struct jfr_labels *labels, struct jfr_result *out, struct errmsg *err);
void jfr_result_release(struct jfr_result *r);

/* Does data start like a JFR chunk ("FLR\0")? */
int jfr_is(const void *data, size_t len);

#endif
