/* decode_limits.h: the caps that every decoder of profiles from outside input applies (OTLP,
 * JFR, and any other format the server accepts), so that what one request can make the server
 * hold is bounded and a request over a cap is told which one.
 *
 * A decoder takes a `const struct decode_limits *` (NULL: the defaults), checks each count as
 * soon as it knows it (before allocating for it), and refuses input over a cap as a whole with
 * -E2BIG and a message made by decode_limit_exceeded(), naming the limit:
 *     "otlp: more than 1048576 locations (limit 'locations')"
 * Memory held by a decoder is bounded by max_inflated plus a few dozen bytes per counted entity.
 * The server derives max_inflated from its body limit (docs/server.md, "Limits"); `scorch
 * convert` reads local files with decode_limits_none() and its own byte cap. */
#ifndef SCORCH_DECODE_LIMITS_H
#define SCORCH_DECODE_LIMITS_H

#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

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

/* Fill err with "<format>: more than <limit> <what> (limit '<name>')" and return -E2BIG. */
int decode_limit_exceeded(struct errmsg *err, const char *format, const char *what,
			  const char *name, uint64_t limit);

#endif
