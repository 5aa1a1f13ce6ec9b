/* input.h: reading a profile in any format scorch reads, told apart by content, not by name:
 * pprof (gzip or raw protobuf), OTLP profiles (an ExportProfilesServiceRequest, gzip or raw),
 * JFR (gzip or raw) or folded text (plain or gzip). For `scorch convert` and for uploads whose
 * format is not declared.
 *
 * OTLP and JFR hold several profiles: one profile type is read (input_opts.type, else JFR's
 * "cpu", else the first one), and all OTLP profiles of that sample type are merged into one. */
#ifndef SCORCH_INPUT_H
#define SCORCH_INPUT_H

#include "lib/log.h"
#include "profile/profile.h"

#include <stddef.h>

enum input_format {
	INPUT_UNKNOWN = 0,
	INPUT_PPROF,
	INPUT_FOLDED,
	INPUT_OTLP,
	INPUT_JFR,
};

struct input_opts {
	size_t max_uncompressed; /* bytes after gzip inflation (and for raw input) */
	size_t max_lines;        /* folded lines */
	int sample_index;        /* pprof value to keep, -1 for the default (see pprof.h) */
	const char *type;        /* OTLP sample type or JFR profile type to read, NULL: default */
};

#define INPUT_OPTS_DEFAULT { 1024u << 20, 50u << 20, -1, NULL }

/* The format of uncompressed data: JFR when it starts with "FLR\0", folded when the first
 * 64 KiB are text (no control bytes but tab, CR and LF), otherwise pprof (input_decode() tries
 * OTLP when the data does not decode as pprof). */
enum input_format input_detect(const void *data, size_t len);
const char *input_format_name(enum input_format f);

/* Decode data into a new profile (*out; profile_free()). *format (may be NULL) receives the
 * format found. Returns 0 or a negative errno with a message in err. */
int input_decode(const void *data, size_t len, const struct input_opts *o,
		 enum input_format *format, struct profile **out, struct errmsg *err);

#endif
