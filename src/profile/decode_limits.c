/* decode_limits.c: caps shared by the decoders of outside input (see decode_limits.h). */
#include "profile/decode_limits.h"

#include <errno.h>

static const struct decode_limits defaults = {
	.max_inflated = DECODE_DEFAULT_INFLATED,
	.max_strings = DECODE_DEFAULT_STRINGS,
	.max_mappings = DECODE_DEFAULT_MAPPINGS,
	.max_functions = DECODE_DEFAULT_FUNCTIONS,
	.max_locations = DECODE_DEFAULT_LOCATIONS,
	.max_samples = DECODE_DEFAULT_SAMPLES,
	.max_frames = DECODE_DEFAULT_FRAMES,
	.max_sample_types = DECODE_DEFAULT_SAMPLE_TYPES,
	.max_stacks = DECODE_DEFAULT_STACKS,
	.max_depth = DECODE_DEFAULT_DEPTH,
	.max_labels = DECODE_DEFAULT_LABELS,
	.max_profiles = DECODE_DEFAULT_PROFILES,
};

void decode_limits_default(struct decode_limits *l)
{
	*l = defaults;
}

void decode_limits_none(struct decode_limits *l)
{
	l->max_inflated = l->max_strings = l->max_mappings = l->max_functions = SIZE_MAX;
	l->max_locations = l->max_samples = l->max_frames = l->max_sample_types = SIZE_MAX;
	l->max_stacks = l->max_depth = l->max_labels = l->max_profiles = SIZE_MAX;
}

const struct decode_limits *decode_limits_or_default(const struct decode_limits *l)
{
	return l ? l : &defaults;
}

int decode_limit_exceeded(struct errmsg *err, const char *format, const char *what,
			  const char *name, uint64_t limit)
{
	return errmsg_set(err, -E2BIG, "%s: more than %llu %s (limit '%s')", format,
			  (unsigned long long)limit, what, name);
}
