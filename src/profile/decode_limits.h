/* decode_limits.h: the caps every decoder of outside profile input (OTLP, JFR) works within.
 *
 * A decoder checks each count against its cap BEFORE allocating for it, and an input beyond any
 * cap is rejected as a whole with -E2BIG and a message naming the cap (nothing of it is kept).
 * The caller chooses the caps: the server derives them from its request budget
 * (docs/server.md, "Limits"), `scorch convert` uses the defaults. Memory held by a decoder is
 * bounded by roughly max_bytes plus a few dozen bytes per counted entity, so the byte cap is the
 * one that matters most; the others stop inputs that are small on the wire but expand (a stack
 * table naming one location a million times, a JFR constant pool of empty entries).
 *
 * Zero fields mean "the default" (decode_limits_fill()). */
#ifndef SCORCH_DECODE_LIMITS_H
#define SCORCH_DECODE_LIMITS_H

#include <stddef.h>

struct decode_limits {
	size_t max_bytes;     /* input after decompression (default 256 MiB) */
	size_t max_strings;   /* string table entries / distinct JFR symbols (16 Mi) */
	size_t max_mappings;  /* mappings (1 Mi) */
	size_t max_functions; /* functions / JFR methods (4 Mi) */
	size_t max_locations; /* locations / distinct JFR frames (16 Mi) */
	size_t max_stacks;    /* stack table entries / JFR stack traces (16 Mi) */
	size_t max_samples;   /* samples / JFR events kept (64 Mi) */
	size_t max_frames;    /* frames of all stacks after expansion (default 4 per input byte
	                       * + 64 Ki) */
	size_t max_depth;     /* frames of one stack (65536) */
	size_t max_labels;    /* labels (attributes) of one sample (1024) */
	size_t max_profiles;  /* profiles of one request / profile types of one JFR (4096) */
};

#define DECODE_DEFAULT_MAX_BYTES (256u << 20)

/* Replace the zero fields of l by the defaults; max_frames follows from the input length. */
static inline void decode_limits_fill(struct decode_limits *l, size_t input_len)
{
	if (!l->max_bytes)
		l->max_bytes = DECODE_DEFAULT_MAX_BYTES;
	if (!l->max_strings)
		l->max_strings = 16u << 20;
	if (!l->max_mappings)
		l->max_mappings = 1u << 20;
	if (!l->max_functions)
		l->max_functions = 4u << 20;
	if (!l->max_locations)
		l->max_locations = 16u << 20;
	if (!l->max_stacks)
		l->max_stacks = 16u << 20;
	if (!l->max_samples)
		l->max_samples = 64u << 20;
	if (!l->max_frames)
		l->max_frames = input_len < ((size_t)-1) / 8 ? 4 * input_len + 65536 : ((size_t)-1) / 2;
	if (!l->max_depth)
		l->max_depth = 65536;
	if (!l->max_labels)
		l->max_labels = 1024;
	if (!l->max_profiles)
		l->max_profiles = 4096;
}

#endif
