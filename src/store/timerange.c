/* timerange.c: time, duration and size parsers for query parameters and flags (see
 * timerange.h). Strict: the whole string must be consumed, overflow is an error. */
#include "store/timerange.h"
#include "lib/log.h"

#include <errno.h>
#include <string.h>

#define MAX_INPUT 64

/* Parse an unsigned decimal at *p; returns -1 on no digits or overflow. */
static int parse_uint(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -2;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*out = v;
	return 0;
}

static int64_t unit_seconds(char c)
{
	switch (c) {
	case 's': return 1;
	case 'm': return 60;
	case 'h': return 3600;
	case 'd': return 86400;
	case 'w': return 7 * 86400;
	default: return 0;
	}
}

int timerange_parse_duration(const char *s, int64_t *out_seconds, struct errmsg *err)
{
	const char *p = s;
	int64_t total = 0;
	int parts = 0;

	if (!s || !*s || strlen(s) > MAX_INPUT)
		return errmsg_set(err, -EINVAL, "invalid duration '%.64s'", s ? s : "");
	while (*p) {
		uint64_t v;
		int64_t unit;
		int rc = parse_uint(&p, &v);

		if (rc == -2)
			return errmsg_set(err, -ERANGE, "duration '%s' is too large", s);
		if (rc < 0)
			return errmsg_set(err, -EINVAL, "invalid duration '%s' (expected e.g. 30d, 12h, 90m)", s);
		if (!*p && !parts) {
			unit = 1; /* a bare number: seconds */
		} else {
			unit = unit_seconds(*p);
			if (!unit)
				return errmsg_set(err, -EINVAL, "invalid duration '%s': unknown unit (s, m, h, d, w)", s);
			p++;
		}
		if (v > (uint64_t)(INT64_MAX - total) / (uint64_t)unit)
			return errmsg_set(err, -ERANGE, "duration '%s' is too large", s);
		total += (int64_t)v * unit;
		parts++;
	}
	*out_seconds = total;
	return 0;
}

int timerange_parse_time(const char *s, int64_t now, int64_t *out, struct errmsg *err)
{
	const char *p = s;
	uint64_t v;
	int rc;

	if (!s || !*s || strlen(s) > MAX_INPUT)
		return errmsg_set(err, -EINVAL, "invalid time '%.64s'", s ? s : "");
	if (!strncmp(s, "now", 3)) {
		int64_t d;
		int sign;

		if (!s[3]) {
			*out = now;
			return 0;
		}
		if (s[3] != '-' && s[3] != '+')
			return errmsg_set(err, -EINVAL, "invalid time '%s' (expected now, now-1h, ...)", s);
		sign = s[3] == '-' ? -1 : 1;
		rc = timerange_parse_duration(s + 4, &d, err);
		if (rc < 0)
			return errmsg_set(err, rc, "invalid time '%s' (expected now, now-1h, ...)", s);
		if ((sign < 0 && now < INT64_MIN + d) || (sign > 0 && now > INT64_MAX - d))
			return errmsg_set(err, -ERANGE, "time '%s' is out of range", s);
		*out = now + sign * d;
		return 0;
	}
	rc = parse_uint(&p, &v);
	if (rc == -2 || (!rc && !*p && v > (uint64_t)INT64_MAX))
		return errmsg_set(err, -ERANGE, "time '%s' is out of range", s);
	if (rc < 0 || *p)
		return errmsg_set(err, -EINVAL, "invalid time '%s' (expected unix seconds or now-DURATION)", s);
	/* Larger numbers are finer units: seconds stay below 1e11 until the year 5138. */
	if (v >= 100000000000000000ULL)
		v /= 1000000000ULL;
	else if (v >= 100000000000000ULL)
		v /= 1000000ULL;
	else if (v >= 100000000000ULL)
		v /= 1000ULL;
	*out = (int64_t)v;
	return 0;
}

int timerange_parse_size(const char *s, uint64_t *out_bytes, struct errmsg *err)
{
	static const struct { const char *name; uint64_t mult; } units[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", 1000ULL }, { "kb", 1000ULL }, { "kib", 1024ULL },
		{ "m", 1000000ULL }, { "mb", 1000000ULL }, { "mib", 1ULL << 20 },
		{ "g", 1000000000ULL }, { "gb", 1000000000ULL }, { "gib", 1ULL << 30 },
		{ "t", 1000000000000ULL }, { "tb", 1000000000000ULL }, { "tib", 1ULL << 40 },
	};
	const char *p = s;
	uint64_t whole, frac = 0, frac_div = 1, mult = 0, v;
	char unit[8];
	size_t i, n;
	int rc;

	if (!s || !*s || strlen(s) > MAX_INPUT)
		return errmsg_set(err, -EINVAL, "invalid size '%.64s'", s ? s : "");
	rc = parse_uint(&p, &whole);
	if (rc == -2)
		return errmsg_set(err, -ERANGE, "size '%s' is too large", s);
	if (rc < 0)
		return errmsg_set(err, -EINVAL, "invalid size '%s' (expected e.g. 20GB, 512MiB)", s);
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return errmsg_set(err, -EINVAL, "invalid size '%s'", s);
		for (; *p >= '0' && *p <= '9'; p++) {
			if (frac_div >= 1000000000ULL)
				continue; /* ignore digits past 1e-9 */
			frac = frac * 10 + (uint64_t)(*p - '0');
			frac_div *= 10;
		}
	}
	while (*p == ' ')
		p++;
	n = strlen(p);
	if (n >= sizeof(unit))
		return errmsg_set(err, -EINVAL, "invalid size '%s': unknown unit", s);
	for (i = 0; i <= n; i++)
		unit[i] = (p[i] >= 'A' && p[i] <= 'Z') ? (char)(p[i] - 'A' + 'a') : p[i];
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].name))
			mult = units[i].mult;
	if (!mult)
		return errmsg_set(err, -EINVAL, "invalid size '%s': unknown unit (B, KB, MB, GB, TB, KiB, ...)", s);
	if (whole > UINT64_MAX / mult)
		return errmsg_set(err, -ERANGE, "size '%s' is too large", s);
	v = whole * mult;
	/* frac < 1e9 and mult <= 2^40: split to avoid overflow */
	v += (mult / frac_div) * frac + ((mult % frac_div) * frac) / frac_div;
	if (v < whole * mult)
		return errmsg_set(err, -ERANGE, "size '%s' is too large", s);
	*out_bytes = v;
	return 0;
}
