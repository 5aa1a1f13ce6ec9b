/* folded.h: the folded ("collapsed") text format, one stack per line, root first:
 *     comm;frame;frame;leaf COUNT
 * The writer puts the sample's "comm" label (when present) as the root frame. */
#ifndef SCORCH_FOLDED_H
#define SCORCH_FOLDED_H

#include "lib/buf.h"
#include "lib/log.h"
#include "profile/profile.h"

/* Append the folded form of p to out, lines sorted for stable output. */
int folded_write(const struct profile *p, struct buf *out);

/* Parse folded text into a new profile (frames become FRAME_NATIVE functions, or kernel ones
 * for a "_[k]" suffix). Rejects (returns -EINVAL, message in err naming the line) a line
 * without a count, a negative or overflowing count, or an empty stack; at most max_lines lines.
 * Blank lines are skipped. On success *out owns a new profile. */
int folded_parse(const char *text, size_t len, size_t max_lines, struct profile **out,
		 struct errmsg *err);

#endif
