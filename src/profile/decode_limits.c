/* decode_limits.c: caps shared by the decoders of outside input (see decode_limits.h). */
#include "profile/decode_limits.h"
#include "lib/budget.h"

#include <errno.h>
#include <string.h>

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

const char *const decode_limit_names[] = {
	"inflated", "strings", "mappings", "functions", "locations", "samples", "frames",
	"sample-types", "stacks", "depth", "labels", "profiles", NULL,
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

int decode_limits_set(struct decode_limits *l, const char *name, uint64_t v)
{
	size_t *fields[] = {
		&l->max_inflated, &l->max_strings, &l->max_mappings, &l->max_functions,
		&l->max_locations, &l->max_samples, &l->max_frames, &l->max_sample_types,
		&l->max_stacks, &l->max_depth, &l->max_labels, &l->max_profiles,
	};
	size_t i;

	for (i = 0; decode_limit_names[i]; i++) {
		if (strcmp(name, decode_limit_names[i]))
			continue;
		if (!v || v > SIZE_MAX)
			return -EINVAL;
		*fields[i] = (size_t)v;
		return 0;
	}
	return -ENOENT;
}

int decode_limit_exceeded(struct errmsg *err, const char *format, const char *what,
			  const char *name, uint64_t limit)
{
	return errmsg_set(err, -E2BIG, "%s: more than %llu %s (limit '%s')", format,
			  (unsigned long long)limit, what, name);
}

int decode_check(struct errmsg *err, const char *format)
{
	struct errmsg why;
	int rc = budget_check();

	if (!rc)
		return 0;
	budget_error(&why, rc);
	return errmsg_set(err, rc, "%s: %s", format, why.msg);
}
