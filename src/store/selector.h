/* selector.h: label selectors in the Prometheus / Pyroscope style, parsed from query strings:
 *
 *   APP.TYPE{k="v", k2!="x", k3=~"re.*", k4!~"re"}
 *
 * - APP (everything before the last '.' of the head) becomes the matcher service_name="APP";
 *   TYPE (after the last '.') the profile type. A head without '.' is only an app name (any
 *   type); no head at all ("{...}" or "") selects every series.
 * - Values are double-quoted (escapes \" \\ \n \t \uXXXX-free: \x is x) or bare
 *   ([^,}\s]+). Label names are [A-Za-z_][A-Za-z0-9_.]*. The pseudo label "__type__" matches
 *   the profile type.
 * - =~ and !~ are POSIX extended regexes, fully anchored ("^(re)$"), at most
 *   SELECTOR_MAX_REGEX bytes, no back-references, repetition counts at most 32.
 * - A label that a series does not have has the value "" (k!="x" matches it, k="" matches it).
 *
 * Errors say what is wrong and where: "expected '=' after label name at offset 9".
 * The parsed selector owns all its strings and compiled regexes: selector_free(). */
#ifndef SCORCH_SELECTOR_H
#define SCORCH_SELECTOR_H

#include <regex.h>
#include <stddef.h>

struct errmsg;
struct store_label;

#define SELECTOR_MAX_LEN      8192 /* bytes of a whole selector */
#define SELECTOR_MAX_MATCHERS 64
#define SELECTOR_MAX_REGEX    256  /* bytes of one regex */

enum selector_op {
	SELECTOR_EQ,  /* =  */
	SELECTOR_NE,  /* != */
	SELECTOR_RE,  /* =~ */
	SELECTOR_NRE, /* !~ */
};

struct selector_matcher {
	char *name;
	char *value;
	enum selector_op op;
	regex_t *re; /* compiled for SELECTOR_RE / SELECTOR_NRE */
};

struct selector {
	char *type; /* profile type, or NULL = any */
	struct selector_matcher *matchers;
	size_t nmatchers;
};

/* Parse s[0..len) (need not be NUL-terminated). Returns 0 and *out, or -EINVAL / -E2BIG and a
 * message naming the problem and its byte offset. */
int selector_parse(const char *s, size_t len, struct selector **out, struct errmsg *err);
void selector_free(struct selector *sel);

/* 1 when a series of profile type `type` with these labels (any order, names unique) matches
 * every matcher and the type; 0 otherwise. sel == NULL matches everything. */
int selector_match(const struct selector *sel, const char *type, const struct store_label *labels,
		   size_t nlabels);

/* The value the selector requires for label `name` with "=", or NULL (e.g. to name the app
 * of a query: selector_eq_value(sel, "service_name")). */
const char *selector_eq_value(const struct selector *sel, const char *name);

#endif
