/* json.h: helpers for writing JSON into a struct buf. Strings are escaped per RFC 8259;
 * invalid UTF-8 bytes are replaced with U+FFFD so the output is always valid JSON. */
#ifndef SCORCH_JSON_H
#define SCORCH_JSON_H

#include "lib/buf.h"

/* Append s (len bytes) as a quoted JSON string. */
int json_str_len(struct buf *b, const char *s, size_t len);
int json_str(struct buf *b, const char *s);
/* Append a finite double (NaN/Inf become null). */
int json_double(struct buf *b, double v);

#endif
