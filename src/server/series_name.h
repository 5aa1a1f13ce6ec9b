/* series_name.h: parsing the `name` parameter of POST /ingest, Pyroscope's series key:
 *
 *     APP[.TYPE][{key=value,key2="quoted value",...}]
 *
 * APP becomes the label service_name and TYPE the profile type (the part after the last dot
 * before the braces; empty when there is no dot). Values may be bare (up to ',' or '}', spaces
 * trimmed) or double-quoted with \" and \\ escapes. Keys match [A-Za-z_][A-Za-z0-9_.]*; keys
 * starting with "__", duplicates and `service_name` (set by APP) are refused.
 *
 * The name is outside input: its length, the number of labels and each key and value are
 * capped, and any violation is -EINVAL with a message naming the problem. */
#ifndef SCORCH_SERIES_NAME_H
#define SCORCH_SERIES_NAME_H

#include "lib/log.h"

#include <stddef.h>

#define SERIES_NAME_MAX 4096
#define SERIES_MAX_LABELS 32
#define SERIES_MAX_KEY 128
#define SERIES_MAX_VALUE 1024

struct series_label {
	char *key;   /* owned, NUL-terminated */
	char *value; /* owned, NUL-terminated */
};

struct series_name {
	char *app;  /* owned; never empty after a successful parse */
	char *type; /* owned; "" when the name has no ".TYPE" */
	struct series_label labels[SERIES_MAX_LABELS];
	size_t nlabels;
};

/* Parse s into *out (which the caller releases with series_name_release(), also on error). */
int series_name_parse(const char *s, struct series_name *out, struct errmsg *err);
void series_name_release(struct series_name *n);

/* The value of label key, or NULL. */
const char *series_name_label(const struct series_name *n, const char *key);

#endif
