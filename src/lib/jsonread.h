/* jsonread.h: a strict, bounded JSON reader (RFC 8259) for documents from outside, such as a
 * server's answers to `scorch diff --server`. Parses the whole text into a tree.
 *
 * Hostile input is expected: nesting deeper than JSONREAD_MAX_DEPTH, more than max_nodes values,
 * invalid UTF-8 escapes, trailing garbage, a NUL byte, numbers out of double range all give
 * -EINVAL (or -E2BIG for the caps) with a message naming the byte offset, and no tree.
 * Strings are decoded to UTF-8 (\uXXXX with surrogate pairs; a lone surrogate becomes U+FFFD)
 * and NUL-terminated; a string holding \u0000 keeps its length in `len`.
 *
 * The tree owns every node and string; jsonread_free() releases it all. */
#ifndef SCORCH_JSONREAD_H
#define SCORCH_JSONREAD_H

#include <stddef.h>

#include "lib/log.h"

#define JSONREAD_MAX_DEPTH 64

enum json_type {
	JSON_NULL,
	JSON_BOOL,   /* num is 0 or 1 */
	JSON_NUMBER, /* num */
	JSON_STRING, /* str, len */
	JSON_ARRAY,  /* items[n] */
	JSON_OBJECT, /* keys[n], items[n] (duplicate keys are kept; jsonread_get finds the first) */
};

struct json_value {
	enum json_type type;
	double num;
	char *str;
	size_t len;
	size_t n;
	struct json_value *items;
	char **keys;
};

/* Parse text[0..len) into *out (jsonread_free()). max_nodes bounds the number of values
 * (0: 1 Mi). Returns 0, or a negative errno with the reason in err. */
int jsonread_parse(const char *text, size_t len, size_t max_nodes, struct json_value **out,
		   struct errmsg *err);
void jsonread_free(struct json_value *v);

/* The member `key` of an object, or NULL (not an object, or no such member). */
const struct json_value *jsonread_get(const struct json_value *obj, const char *key);

#endif
