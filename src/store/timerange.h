/* timerange.h: parsers for the time, duration and size values of query parameters and flags.
 *
 * Times (query from/until):
 *   "1700000000"            unix seconds; larger numbers are read as milliseconds (>= 1e11),
 *                           microseconds (>= 1e14) or nanoseconds (>= 1e17)
 *   "now", "now-1h", "now-30m", "now+10s", "now-7d"
 * Durations: an integer with a unit s, m, h, d, w (e.g. "30d", "90m", "10s"); a bare integer is
 *   seconds. Compound forms ("1h30m") are accepted.
 * Sizes: an integer or decimal with an optional unit B, K/KB, M/MB, G/GB, T/TB (powers of 1000)
 *   or KiB, MiB, GiB, TiB (powers of 1024), case-insensitive: "20GB", "512MiB", "1.5G".
 *
 * All return 0 or -EINVAL (with a message naming the input) / -ERANGE (overflow). */
#ifndef SCORCH_TIMERANGE_H
#define SCORCH_TIMERANGE_H

#include <stdint.h>

struct errmsg;

int timerange_parse_time(const char *s, int64_t now, int64_t *out, struct errmsg *err);
int timerange_parse_duration(const char *s, int64_t *out_seconds, struct errmsg *err);
int timerange_parse_size(const char *s, uint64_t *out_bytes, struct errmsg *err);

#endif
