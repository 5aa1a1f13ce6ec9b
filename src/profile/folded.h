/* folded.h: the folded ("collapsed") text format, one stack per line, root first:
 *     comm;frame;frame;leaf COUNT
 * The writer puts the sample's "comm" label (when present) as the root frame.
 * The grammar is in docs/formats.md ("folded"). */
#ifndef SCORCH_FOLDED_H
#define SCORCH_FOLDED_H

#include "lib/buf.h"
#include "lib/log.h"
#include "profile/profile.h"

/* Frames per line the parser accepts. */
#define FOLDED_MAX_DEPTH 65536

/* Append the folded form of p to out, lines sorted (bytewise) for stable output; samples with
 * the same line (e.g. same comm, other pid) are summed, samples with a value <= 0 are left out.
 * Frame names come from profile_frame_name() (by function unless p->show_lines); a ';' inside a name is written as ':' and line
 * breaks as spaces, so every line parses back. A sample with neither frames nor comm is
 * written as "[unknown]". Returns 0 or a negative errno (-E2BIG past out->max). */
int folded_write(const struct profile *p, struct buf *out);

/* Parse folded text into a new profile (sample type "samples"/"count"). Rejects (returns
 * -EINVAL, message in err naming the line) a line without a count, a negative or overflowing
 * count, an empty stack or frame, or a NUL byte; -E2BIG past max_lines lines or
 * FOLDED_MAX_DEPTH frames in a line. Blank lines are skipped; CRLF and trailing blanks are fine;
 * the count is the last blank-separated token, so names may contain spaces.
 * Frames become functions of kind (the inverse of profile_frame_name(), so that writing the
 * profile back gives the same lines):
 *   "name_[k]"                            kernel "name"
 *   "qual (file.py:LINE)", "qual (<...>)" python "qual" in "file.py", location line LINE
 *   "name (file:LINE)"                    native "name" in "file", location line LINE
 *   "[anything]"                          special
 *   anything else                         native
 * (see profile_frame_split()). When some frame carries a line, the profile's show_lines is
 * set, so that it is written back with its lines. The first frame is not taken for a comm
 * label. On success *out owns a new profile. */
int folded_parse(const char *text, size_t len, size_t max_lines, struct profile **out,
		 struct errmsg *err);

#endif
