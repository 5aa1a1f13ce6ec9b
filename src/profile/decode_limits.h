/* decode_limits.h: the caps that every decoder of profiles from outside input applies (pprof,
 * folded ingest, OTLP, JFR, and any other format the server accepts), so that what one request
 * can make the server hold is bounded and a request over a cap is told which one.
 *
 * Two mechanisms work together:
 *   - counts: a decoder refuses input with more strings, mappings, functions, locations,
 *     distinct samples, frames, sample types, stacks, labels or profiles than struct
 *     decode_limits allows, or that inflates past max_inflated. It checks each count as soon
 *     as it knows it (before allocating for it) and returns -E2BIG with a message made by
 *     decode_limit_exceeded(), naming the limit:
 *         "otlp: more than 1048576 locations (limit 'locations')"
 *   - memory: the decoder runs under the calling thread's budget (lib/budget.h: the server
 *     sets one per request, with a per-request cap and a quota shared by all requests). It
 *     calls decode_check() in its loops, at least once per entity it decodes, and gives up
 *     with that error (-ENOMEM over the cap, -EBUSY when concurrent requests hold the quota,
 *     -ETIME past the deadline); allocations sized by the input use try_malloc or a struct
 *     buf, which the budget refuses up front.
 *
 * A decoder takes a `const struct decode_limits *` (NULL: the defaults). The server maps -E2BIG
 * and -ENOMEM to 413, -EBUSY and -ETIME to 503, anything else to 422 (docs/server.md,
 * "Limits"); `--limit NAME=VALUE` sets a cap by the names of decode_limits_set(). `scorch
 * convert` reads local files with decode_limits_none() and its own byte cap. */
#ifndef SCORCH_DECODE_LIMITS_H
#define SCORCH_DECODE_LIMITS_H

#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

/* Only size_t fields (the server fills the ones left 0 with the defaults, field by field). */
struct decode_limits {
	size_t max_inflated;     /* bytes after decompression (or of uncompressed input) */
	size_t max_strings;      /* string table entries, OTLP attributes, JFR metadata strings */
	size_t max_mappings;
	size_t max_functions;
	size_t max_locations;    /* locations; JFR constant pool entries */
	size_t max_samples;      /* distinct samples (a stack and its labels), all profiles */
	size_t max_frames;       /* frames of all distinct samples together, after inlining */
	size_t max_sample_types; /* values per sample */
	size_t max_stacks;       /* OTLP stack table entries; JFR stack traces per profile */
	size_t max_depth;        /* frames of one stack */
	size_t max_labels;       /* labels (attributes) of one sample, resource or profile */
	size_t max_profiles;     /* profiles (and resources) of one OTLP request */
};

/* Defaults: generous for real profiles (a large Go heap profile has ~100k locations, a long
 * JFR recording a few hundred thousand pool entries), small enough that a request stays within
 * tens of MB. */
#define DECODE_DEFAULT_INFLATED     (64u << 20)
#define DECODE_DEFAULT_STRINGS      (1u << 20)
#define DECODE_DEFAULT_MAPPINGS     (64u << 10)
#define DECODE_DEFAULT_FUNCTIONS    (1u << 20)
#define DECODE_DEFAULT_LOCATIONS    (1u << 20)
#define DECODE_DEFAULT_SAMPLES      (512u << 10)
#define DECODE_DEFAULT_FRAMES       (8u << 20)
#define DECODE_DEFAULT_SAMPLE_TYPES 16
#define DECODE_DEFAULT_STACKS       (1u << 20)
#define DECODE_DEFAULT_DEPTH        65536
#define DECODE_DEFAULT_LABELS       1024
#define DECODE_DEFAULT_PROFILES     4096

void decode_limits_default(struct decode_limits *l);
/* No caps at all (SIZE_MAX everywhere; for files a user converts locally). */
void decode_limits_none(struct decode_limits *l);
/* The limits to use: l, or the defaults when l is NULL. */
const struct decode_limits *decode_limits_or_default(const struct decode_limits *l);

/* Set the limit called name ("inflated", "strings", "mappings", "functions", "locations",
 * "samples", "frames", "sample-types", "stacks", "depth", "labels", "profiles") to v (0 is
 * refused). Returns 0, -ENOENT for an unknown name, -EINVAL for 0. */
int decode_limits_set(struct decode_limits *l, const char *name, uint64_t v);
/* The names, for help texts: NULL-terminated. */
extern const char *const decode_limit_names[];

/* Fill err with "<format>: more than <limit> <what> (limit '<name>')" and return -E2BIG. */
int decode_limit_exceeded(struct errmsg *err, const char *format, const char *what,
			  const char *name, uint64_t limit);

/* budget_check() for decoders: 0, or its error with the message "<format>: <why>". */
int decode_check(struct errmsg *err, const char *format);

#endif
