/* ingest.c: POST /ingest (see ingest.h): parameters, body decoding (folded text here, pprof
 * through profile/pprof.h, multipart through multipart.h), conversion into store batches and
 * one store_write() per request.
 *
 * Hot path: folded lines go straight into a store_batchbuf (frames interned once per request),
 * without building a struct profile, because that is what agents and benchmarks push most. */
#include "server/ingest.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/budget.h"
#include "lib/strtab.h"
#include "profile/decode_limits.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "server/multipart.h"
#include "server/server.h"
#include "store/store.h"
#include "store/timerange.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct group {
	struct store_batchbuf *bb; /* NULL until the group is used */
	struct store_label labels[STORE_MAX_LABELS];
	size_t nlabels;
};

struct ingest_priv {
	struct group *groups; /* indexed by the signature's id in sigs */
	size_t ngroups, groups_cap, nused;
	size_t ncols;         /* value columns of every group's batch builder */
	struct strtab *strs;  /* copies of label strings and frame names (stable addresses) */
	struct strtab *sigs;  /* label-set signatures */
};

static struct ingest_priv *priv_of(struct ingest_batches *b)
{
	if (!b->priv) {
		struct ingest_priv *pv = xcalloc(1, sizeof(*pv));

		pv->strs = strtab_new();
		pv->sigs = strtab_new();
		pv->ncols = 1;
		b->priv = pv;
	}
	return b->priv;
}

void ingest_batches_release(struct ingest_batches *b)
{
	struct ingest_priv *pv;
	size_t i;

	if (!b)
		return;
	pv = b->priv;
	if (pv) {
		for (i = 0; i < pv->ngroups; i++)
			store_batchbuf_free(pv->groups[i].bb);
		xfree(pv->groups);
		strtab_free(pv->strs);
		strtab_free(pv->sigs);
		xfree(pv);
	}
	xfree(b->batches);
	memset(b, 0, sizeof(*b));
}

static int label_name_ok(const char *s)
{
	const char *p = s;

	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
		return 0;
	for (p++; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
		      (*p >= '0' && *p <= '9') || *p == '.'))
			return 0;
	return p - s <= STORE_MAX_LABEL_NAME;
}

static const char *keep(struct ingest_priv *pv, const char *s)
{
	return strtab_get(pv->strs, strtab_intern(pv->strs, s));
}

/* Set (or override) label name=value in g. */
static int group_set(struct group *g, const char *name, const char *value, struct errmsg *err)
{
	size_t i;

	for (i = 0; i < g->nlabels; i++)
		if (!strcmp(g->labels[i].name, name)) {
			g->labels[i].value = value;
			return 0;
		}
	if (g->nlabels >= STORE_MAX_LABELS)
		return errmsg_set(err, -EINVAL, "more than %d labels", STORE_MAX_LABELS);
	g->labels[g->nlabels].name = name;
	g->labels[g->nlabels].value = value;
	g->nlabels++;
	return 0;
}

/* The group for a signature id, created with the request's labels plus extra[] (pairs). */
static int group_get(struct ingest_batches *b, const struct ingest_meta *meta, uint32_t sig,
		     const char *const *extra, size_t nextra, struct group **out, struct errmsg *err)
{
	struct ingest_priv *pv = priv_of(b);
	struct group *g;
	size_t i;
	int rc;

	if (sig >= pv->ngroups) {
		ALLOC_GROW(pv->groups, (size_t)sig + 1, pv->groups_cap);
		memset(pv->groups + pv->ngroups, 0, (sig + 1 - pv->ngroups) * sizeof(*pv->groups));
		pv->ngroups = (size_t)sig + 1;
	}
	g = &pv->groups[sig];
	if (!g->bb) {
		if (pv->nused >= INGEST_MAX_GROUPS)
			return errmsg_set(err, -EINVAL, "more than %d distinct sample label sets",
					  INGEST_MAX_GROUPS);
		g->bb = store_batchbuf_new();
		store_batchbuf_set_columns(g->bb, pv->ncols);
		pv->nused++;
		g->nlabels = 0;
		if ((rc = group_set(g, "service_name", keep(pv, meta->app), err)) < 0)
			return rc;
		for (i = 0; meta->name && i < meta->name->nlabels; i++)
			if ((rc = group_set(g, keep(pv, meta->name->labels[i].key),
					    keep(pv, meta->name->labels[i].value), err)) < 0)
				return rc;
		for (i = 0; i + 1 < 2 * nextra; i += 2) {
			if (!label_name_ok(extra[i]))
				return errmsg_set(err, -EINVAL, "bad sample label name '%.64s'", extra[i]);
			if (strlen(extra[i + 1]) > STORE_MAX_LABEL_VALUE)
				return errmsg_set(err, -EINVAL, "value of sample label '%s' longer than %d bytes",
						  extra[i], STORE_MAX_LABEL_VALUE);
			if ((rc = group_set(g, keep(pv, extra[i]), keep(pv, extra[i + 1]), err)) < 0)
				return rc;
		}
	}
	*out = g;
	return 0;
}

/* Point one store_batch at every used group and column (cols NULL: one column, the meta's
 * type and units). */
static void finish_batches(struct ingest_batches *b, const struct ingest_meta *meta,
			   const struct ingest_column *cols)
{
	struct ingest_priv *pv = priv_of(b);
	size_t i, c;

	b->batches = xcalloc(pv->nused * pv->ncols + 1, sizeof(*b->batches));
	b->n = 0;
	for (c = 0; c < pv->ncols; c++) {
		for (i = 0; i < pv->ngroups; i++) {
			struct group *g = &pv->groups[i];
			struct store_batch *sb;

			if (!g->bb)
				continue;
			sb = &b->batches[b->n++];
			sb->type = cols ? cols[c].type : meta->type;
			sb->labels = g->labels;
			sb->nlabels = g->nlabels;
			sb->from = meta->from;
			sb->until = meta->until;
			sb->sample_rate = meta->sample_rate;
			sb->units = cols && cols[c].units ? cols[c].units : meta->units;
			sb->spy_name = meta->spy_name;
			sb->aggregation = meta->aggregation;
			store_batchbuf_fill_column(g->bb, c, sb);
		}
	}
}

/* Sum of sample values for the answer: saturates at INT64_MAX like the store's sums. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return (uint64_t)store_sat_add((int64_t)a, (int64_t)b);
}

/* Copy the stack s[0..len) (frames separated by ';') into out, cut to what the store takes:
 * frames longer than STORE_MAX_FRAME bytes are shortened, and a stack deeper than
 * STORE_MAX_DEPTH keeps its root side with a last frame "[truncated]" (as pprof ingest does). */
static int clip_stack(struct buf *out, const char *s, size_t len)
{
	size_t i = 0, n = 0;
	int err = 0;

	buf_reset(out);
	while (i < len && !err) {
		size_t j = i, flen;

		while (j < len && s[j] != ';')
			j++;
		if (n == STORE_MAX_DEPTH - 1) {
			err = buf_puts(out, ";[truncated]");
			break;
		}
		flen = j - i > STORE_MAX_FRAME ? STORE_MAX_FRAME : j - i;
		if (n)
			err = buf_putc(out, ';');
		if (!err)
			err = buf_append(out, s + i, flen);
		n++;
		i = j + 1;
	}
	return err;
}

int ingest_folded(const char *text, size_t len, const struct ingest_meta *meta,
		  struct ingest_batches *out, struct errmsg *err)
{
	const struct decode_limits *lim = decode_limits_or_default(meta->limits);
	const char *p = text, *end = text + len;
	struct buf clip = BUF_INIT((size_t)STORE_MAX_DEPTH * (STORE_MAX_FRAME + 1) + 64);
	size_t max_stacks = lim->max_samples < STORE_MAX_SAMPLES ? lim->max_samples : STORE_MAX_SAMPLES;
	struct group *g;
	size_t line = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (memchr(text, '\0', len))
		return errmsg_set(err, -EINVAL, "folded body contains a NUL byte");
	rc = group_get(out, meta, 0, NULL, 0, &g, err);
	if (rc < 0)
		return rc;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *d, *s_end;
		uint64_t count = 0;

		line++;
		rc = decode_check(err, "folded");
		if (rc < 0)
			goto cleanup;
		while (e > p && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == p)
			goto next;
		d = e;
		while (d > p && d[-1] >= '0' && d[-1] <= '9')
			d--;
		if (d == e || d == p || (d[-1] != ' ' && d[-1] != '\t')) {
			rc = errmsg_set(err, -EINVAL, "line %zu: missing or bad sample count", line);
			goto cleanup;
		}
		for (s_end = d; s_end < e; s_end++) {
			unsigned digit = (unsigned)(*s_end - '0');

			if (count > ((uint64_t)INT64_MAX - digit) / 10) {
				rc = errmsg_set(err, -EINVAL, "line %zu: sample count too large", line);
				goto cleanup;
			}
			count = count * 10 + digit;
		}
		s_end = d - 1;
		while (s_end > p && (s_end[-1] == ' ' || s_end[-1] == '\t'))
			s_end--;
		if (s_end == p) {
			rc = errmsg_set(err, -EINVAL, "line %zu: empty stack", line);
			goto cleanup;
		}
		if (store_batchbuf_nsamples(g->bb) >= max_stacks) {
			/* Only a new stack would pass the cap; a known one just adds up. */
			size_t before = store_batchbuf_nsamples(g->bb);

			rc = store_batchbuf_add_split(g->bb, p, (size_t)(s_end - p), ';', (int64_t)count);
			if (rc == 0 && store_batchbuf_nsamples(g->bb) > before)
				rc = -E2BIG;
			if (rc == -E2BIG) {
				rc = decode_limit_exceeded(err, "folded", "distinct stacks", "samples",
							   max_stacks);
				goto cleanup;
			}
		} else {
			rc = store_batchbuf_add_split(g->bb, p, (size_t)(s_end - p), ';', (int64_t)count);
		}
		if (rc == -E2BIG && store_batchbuf_nsamples(g->bb) < max_stacks) {
			/* Too deep or a frame too long: keep it cut, as pprof ingest does. */
			if (clip_stack(&clip, p, (size_t)(s_end - p)) < 0) {
				rc = errmsg_set(err, -EINVAL, "line %zu: cannot shorten the stack", line);
				goto cleanup;
			}
			rc = store_batchbuf_add_split(g->bb, clip.data, clip.len, ';', (int64_t)count);
		}
		if (rc == -E2BIG) {
			rc = decode_limit_exceeded(err, "folded", "distinct stacks", "samples",
						   max_stacks);
			goto cleanup;
		}
		if (rc < 0) {
			rc = errmsg_set(err, rc, "line %zu: cannot add the stack", line);
			goto cleanup;
		}
		if (store_batchbuf_nframes(g->bb) > lim->max_frames) {
			rc = decode_limit_exceeded(err, "folded", "frames in distinct stacks", "frames",
						   lim->max_frames);
			goto cleanup;
		}
		out->samples = sat_add(out->samples, count);
		out->stacks++;
next:
		p = nl ? nl + 1 : end;
	}
	finish_batches(out, meta, NULL);
	rc = 0;
cleanup:
	buf_release(&clip);
	return rc;
}

int ingest_profile(const struct profile *p, const struct ingest_meta *meta,
		   struct ingest_batches *out, struct errmsg *err)
{
	struct ingest_column col = { -1, meta->type, meta->units };

	return ingest_profile_columns(p, meta, &col, 1, out, err);
}

int ingest_profile_columns(const struct profile *p, const struct ingest_meta *meta,
			   const struct ingest_column *cols, size_t ncols,
			   struct ingest_batches *out, struct errmsg *err)
{
	const char **locname = NULL, **frames = NULL, **extra = NULL;
	struct ingest_priv *pv;
	struct buf sig = BUF_INIT(1 << 20);
	char name[STORE_MAX_FRAME + 1];
	uint32_t comm_key = UINT32_MAX;
	int64_t values[INGEST_MAX_TYPES];
	size_t i, c;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (ncols < 1 || ncols > INGEST_MAX_TYPES)
		return errmsg_set(err, -EINVAL, "%zu value columns, want 1..%d", ncols,
				  INGEST_MAX_TYPES);
	pv = priv_of(out);
	pv->ncols = ncols;
	{
		uint32_t k = strtab_find(p->strings, "comm", 4);

		if (k != UINT32_MAX)
			comm_key = k;
	}
	locname = xcalloc(p->nlocations + 1, sizeof(*locname));
	frames = xmalloc((STORE_MAX_DEPTH + 1) * sizeof(*frames));
	extra = xmalloc(2 * STORE_MAX_LABELS * sizeof(*extra));
	for (i = 0; i < p->nsamples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const struct profile_label *labels = profile_sample_labels(p, s);
		const char *comm = NULL, *process = NULL;
		size_t j, n = 0, nextra = 0, depth;
		int has_app = 0;
		struct group *g;
		uint32_t sigid;
		int any = 0;

		rc = decode_check(err, "pprof");
		if (rc < 0)
			goto cleanup;
		for (c = 0; c < ncols; c++) {
			values[c] = cols[c].index < 0 ? s->value :
				    profile_sample_value(p, s, (uint32_t)cols[c].index);
			if (values[c] < 0) {
				rc = errmsg_set(err, -EINVAL, "negative sample value %" PRId64, values[c]);
				goto cleanup;
			}
			any |= values[c] != 0;
		}
		if (!any)
			continue;
		buf_reset(&sig);
		for (j = 0; j < s->nlabels; j++) {
			const char *v;

			if (!labels[j].str)
				continue; /* numeric labels (pid, ...) do not make series */
			v = profile_get_str(p, labels[j].str);
			if (labels[j].key == comm_key) {
				comm = v;
				continue;
			}
			if (!*v)
				continue;
			/* The app of the request stays the app (unless the caller lets samples name
			 * theirs); "__" names are the selectors' pseudo labels. Such sample labels are
			 * dropped, as the name parameter refuses them. */
			{
				const char *k = profile_get_str(p, labels[j].key);

				if ((!strcmp(k, "service_name") && !meta->sample_app) || !strncmp(k, "__", 2))
					continue;
				if (!strcmp(k, "service_name"))
					has_app = 1;
				else if (!strcmp(k, "process"))
					process = v;
			}
			if (nextra >= STORE_MAX_LABELS) {
				rc = errmsg_set(err, -EINVAL, "sample with more than %d labels",
						STORE_MAX_LABELS);
				goto cleanup;
			}
			extra[2 * nextra] = profile_get_str(p, labels[j].key);
			extra[2 * nextra + 1] = v;
			nextra++;
			/* Length-prefixed, so that no label content can fake a separator. */
			if (buf_printf(&sig, "%zu:", strlen(extra[2 * nextra - 2])) < 0 ||
			    buf_puts(&sig, extra[2 * nextra - 2]) < 0 ||
			    buf_printf(&sig, "%zu:", strlen(v)) < 0 || buf_puts(&sig, v) < 0) {
				rc = errmsg_set(err, -EINVAL, "sample labels too long");
				goto cleanup;
			}
		}
		/* Without an app of its own, a sample may be named by its process. */
		if (meta->sample_app == 2 && !has_app && process && nextra < STORE_MAX_LABELS) {
			extra[2 * nextra] = "service_name";
			extra[2 * nextra + 1] = process;
			nextra++;
			if (buf_printf(&sig, "12:service_name%zu:", strlen(process)) < 0 ||
			    buf_puts(&sig, process) < 0) {
				rc = errmsg_set(err, -EINVAL, "sample labels too long");
				goto cleanup;
			}
		}
		sigid = sig.len ? strtab_intern_len(pv->sigs, sig.data, sig.len) : 0;
		rc = group_get(out, meta, sigid, extra, nextra, &g, err);
		if (rc < 0)
			goto cleanup;
		if (comm && *comm)
			frames[n++] = keep(pv, comm);
		/* Root first; a stack deeper than the store takes keeps its root side. */
		depth = s->nlocs;
		for (j = 0; j < depth; j++) {
			uint32_t loc = locs[depth - 1 - j];

			if (n >= STORE_MAX_DEPTH - 1) {
				frames[n++] = "[truncated]";
				break;
			}
			if (loc > p->nlocations)
				loc = 0;
			if (!locname[loc]) {
				/* Stored with their lines; queries aggregate by
				 * function unless asked for lines (query_by_function()). */
				profile_frame_name_flags(p, loc, PROFILE_NAME_LINES, name,
							 sizeof(name));
				locname[loc] = keep(pv, name);
			}
			frames[n++] = locname[loc];
		}
		if (n == 0)
			frames[n++] = "[unknown]";
		if (ncols == 1)
			rc = store_batchbuf_add(g->bb, frames, n, values[0]);
		else
			rc = store_batchbuf_add_values(g->bb, frames, n, values);
		if (rc == -E2BIG && store_batchbuf_nsamples(g->bb) >= STORE_MAX_SAMPLES) {
			rc = decode_limit_exceeded(err, "pprof", "distinct stacks in one series",
						   "samples", STORE_MAX_SAMPLES);
			goto cleanup;
		}
		if (rc < 0) {
			rc = errmsg_set(err, -EINVAL, "sample %zu: cannot be stored (%s)", i,
					rc == -E2BIG ? "too deep or frame too long" : "bad value");
			goto cleanup;
		}
		for (c = 0; c < ncols; c++)
			out->samples = sat_add(out->samples, (uint64_t)values[c]);
		out->stacks++;
	}
	if (pv->nused == 0) {
		struct group *g;

		rc = group_get(out, meta, 0, NULL, 0, &g, err);
		if (rc < 0)
			goto cleanup;
	}
	finish_batches(out, meta, cols);
cleanup:
	buf_release(&sig);
	xfree(locname);
	xfree(frames);
	xfree(extra);
	return rc;
}

static void sanitize_type(const char *in, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < outlen; i++) {
		char c = in[i];

		out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == ':' || c == '-') ? c : '_';
	}
	out[i] = '\0';
}

/* The series type and units of a pprof value type (type and unit string ids). */
static void value_type(const struct profile *p, uint32_t type_id, uint32_t unit_id,
		       const char *fallback, char *type, size_t typelen, const char **units)
{
	const char *st = profile_get_str(p, type_id);
	const char *su = profile_get_str(p, unit_id);

	if (!*st)
		st = fallback && *fallback ? fallback : "cpu";
	else if (!strcmp(st, "samples"))
		st = "cpu";
	sanitize_type(st, type, typelen);
	if ((!*su || !strcmp(su, "count")) && strstr(type, "objects"))
		*units = "objects"; /* Go's alloc_objects / inuse_objects, as Pyroscope names them */
	else if (!*su || !strcmp(su, "count"))
		*units = "samples";
	else
		*units = su;
}

void ingest_pprof_type(const struct profile *p, const char *fallback, char *type, size_t typelen,
		       const char **units, uint32_t *sample_rate)
{
	const char *su = profile_get_str(p, p->sample_unit);
	const char *pu = profile_get_str(p, p->period_unit);

	value_type(p, p->sample_type, p->sample_unit, fallback, type, typelen, units);
	*sample_rate = 0;
	/* A period in nanoseconds (pprof's CPU convention, also scorch's agent with a count
	 * unit and a period of 1e9/Hz) gives the sampling frequency. */
	if (p->period > 0 && (!strcmp(pu, "nanoseconds") ||
			      (!strcmp(su, "count") && p->period >= 100000))) {
		double hz = 1e9 / (double)p->period;

		if (hz >= 1 && hz <= 1e6)
			*sample_rate = (uint32_t)lround(hz);
	}
}

/* ---- The route ---------------------------------------------------------------------------- */

static int type_ok(const char *t)
{
	if (!*t || strlen(t) > STORE_MAX_TYPE)
		return 0;
	for (; *t; t++)
		if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
		      *t == '_' || *t == ':' || *t == '-'))
			return 0;
	return 1;
}

static int meta_arg(const struct http_request *req, struct http_response *resp, const char *key,
		    const char **out)
{
	const char *v = http_arg(req, key);

	if (v && strlen(v) > STORE_MAX_META)
		return http_error(resp, 400, "parameter '%s' longer than %d bytes", key, STORE_MAX_META);
	*out = v && *v ? v : NULL;
	return 0;
}

/* The series a decoded pprof gives (see docs/server.md): its default type first; for any
 * profile but a CPU one, every other sample type too, distinct by series type, at most
 * INGEST_MAX_TYPES in all. A CPU profile's second type (Go's cpu nanoseconds next to samples)
 * would be the same series in other units: only the default is kept. */
struct pprof_series {
	struct ingest_column cols[INGEST_MAX_TYPES];
	char types[INGEST_MAX_TYPES][STORE_MAX_TYPE + 1];
	size_t n;
};

static int has_column(const struct pprof_series *ps, const char *type)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		if (!strcmp(ps->types[i], type))
			return 1;
	return 0;
}

static void pprof_columns(const struct profile *p, const char *fallback, const char *units,
			  struct pprof_series *ps)
{
	uint32_t k;

	ps->n = 1;
	ps->cols[0].index = -1;
	ps->cols[0].type = ps->types[0];
	ps->cols[0].units = units;
	if (!strcmp(ps->types[0], "cpu"))
		return;
	for (k = 0; k < p->nvalues && ps->n < INGEST_MAX_TYPES; k++) {
		char type[STORE_MAX_TYPE + 1];
		const char *u;

		if (k == p->value_index)
			continue;
		value_type(p, p->value_types[k], p->value_units[k], fallback, type, sizeof(type), &u);
		if (has_column(ps, type))
			continue;
		memcpy(ps->types[ps->n], type, sizeof(type));
		ps->cols[ps->n].index = (int)k;
		ps->cols[ps->n].type = ps->types[ps->n];
		ps->cols[ps->n].units = u;
		ps->n++;
	}
}

int ingest_status(int rc)
{
	switch (rc) {
	case -E2BIG:
	case -ENOMEM:
		return 413;
	case -EBUSY:
	case -ETIME:
		return 503;
	default:
		return 422;
	}
}

/* Answer a body that could not be decoded or converted: the status follows ingest_status(),
 * a busy server asks the client to come back. */
static void body_failed(struct http_response *resp, const char *what, int rc,
			const struct errmsg *err)
{
	int status = ingest_status(rc);
	const char *m = err->msg;

	/* "cannot decode pprof: pprof: ..." says it twice. */
	if (!strncmp(m, "pprof: ", 7))
		m += 7;
	else if (!strncmp(m, "folded: ", 8))
		m += 8;
	http_error(resp, status, "%s: %s", what, m);
	if (rc == -EBUSY)
		resp->retry_after = 2;
}

static void handle(struct server *s, const struct http_request *req, struct http_response *resp,
		   struct ingest_batches *batches)
{
	struct series_name name;
	struct ingest_meta meta;
	struct errmsg err = { "" };
	struct profile *prof = NULL;
	const char *name_s = http_arg(req, "name");
	const char *format = http_arg(req, "format");
	const char *ctype = http_header(req, "Content-Type");
	const char *from_s = http_arg(req, "from"), *until_s = http_arg(req, "until");
	const char *body = req->body;
	size_t body_len = req->body_len;
	char appbuf[SERIES_NAME_MAX + 1];
	int64_t now = (int64_t)time(NULL);
	uint64_t rate = 0;
	struct pprof_series ps;
	struct store_batch *all = NULL;
	size_t i, nseries = 0, nall = 0;
	int multipart = 0, pprof, jfr = 0, rc;
	struct ingest_jfr jb;
	const char *labels_part = NULL;
	size_t labels_len = 0;

	memset(&meta, 0, sizeof(meta));
	memset(&jb, 0, sizeof(jb));
	meta.limits = &s->cfg.limits;
	if (!name_s || !*name_s) {
		http_error(resp, 400, "missing parameter 'name'");
		return;
	}
	if (series_name_parse(name_s, &name, &err) < 0) {
		http_error(resp, 400, "bad parameter 'name': %s", err.msg);
		goto cleanup;
	}
	meta.name = &name;
	if (ctype && !strncasecmp(ctype, "multipart/form-data", 19))
		multipart = 1;
	if (!format || !*format)
		format = multipart ? "pprof" : "folded";
	if (!strcmp(format, "folded") || !strcmp(format, "collapsed"))
		pprof = 0;
	else if (!strcmp(format, "pprof"))
		pprof = 1;
	else if (!strcmp(format, "jfr"))
		pprof = 0, jfr = 1;
	else {
		http_error(resp, 400, "bad parameter 'format': '%.32s' is not folded, pprof or jfr", format);
		goto cleanup;
	}
	meta.from = meta.until = now;
	if (from_s && *from_s && timerange_parse_time(from_s, now, &meta.from, &err) < 0) {
		http_error(resp, 400, "bad parameter 'from': %s", err.msg);
		goto cleanup;
	}
	meta.until = meta.from;
	if (until_s && *until_s && timerange_parse_time(until_s, now, &meta.until, &err) < 0) {
		http_error(resp, 400, "bad parameter 'until': %s", err.msg);
		goto cleanup;
	}
	/* Data from the future would outlive retention and outrank the present in the size cap;
	 * a day of clock skew is tolerated. */
	if (meta.from > now + 86400) {
		http_error(resp, 400, "bad parameter 'from': more than a day in the future");
		goto cleanup;
	}
	if (meta.until < meta.from) {
		http_error(resp, 400, "bad parameters: 'until' is before 'from'");
		goto cleanup;
	}
	if (server_arg_uint(req, resp, "sampleRate", 0, 1, 1000000, &rate) < 0)
		goto cleanup;
	meta.sample_rate = (uint32_t)rate;
	if (meta_arg(req, resp, "units", &meta.units) || meta_arg(req, resp, "spyName", &meta.spy_name) ||
	    meta_arg(req, resp, "aggregationType", &meta.aggregation))
		goto cleanup;
	if (meta.aggregation && strcmp(meta.aggregation, "sum") && strcmp(meta.aggregation, "average")) {
		http_error(resp, 400, "bad parameter 'aggregationType': want sum or average");
		goto cleanup;
	}

	if (multipart) {
		char boundary[MULTIPART_MAX_BOUNDARY + 1];
		struct multipart_part part;

		if (multipart_boundary(ctype, boundary, sizeof(boundary), &err) < 0) {
			http_error(resp, 400, "bad Content-Type: %s", err.msg);
			goto cleanup;
		}
		if (jfr) {
			/* Pyroscope's Java agent: the recording in "jfr", its labels in "labels". */
			struct multipart_part lp;

			rc = multipart_find(body, body_len, boundary, "labels", &lp, &err);
			if (rc == 0) {
				labels_part = lp.data;
				labels_len = lp.len;
			} else if (rc != -ENOENT) {
				http_error(resp, 422, "bad multipart body: %s", err.msg);
				goto cleanup;
			}
			rc = multipart_find(body, body_len, boundary, "jfr", &part, &err);
			if (rc == -ENOENT)
				rc = multipart_find(body, body_len, boundary, "profile", &part, &err);
		} else {
			rc = multipart_find(body, body_len, boundary, "profile", &part, &err);
		}
		if (rc < 0) {
			http_error(resp, 422, "bad multipart body: %s", err.msg);
			goto cleanup;
		}
		body = part.data;
		body_len = part.len;
	}

	if (jfr) {
		meta.spy_name = meta.spy_name ? meta.spy_name : "jfr";
		rc = ingest_jfr(body, body_len, labels_part, labels_len, &s->cfg.limits, &meta,
				from_s && *from_s, until_s && *until_s, now, &jb, &err);
		if (rc < 0) {
			/* Over a decoder cap or the request memory: 413; busy: 503; malformed: 422. */
			body_failed(resp, "cannot ingest jfr", rc, &err);
			goto cleanup;
		}
		batches->samples = jb.samples;
		batches->stacks = jb.stacks;
		goto write;
	}

	if (!pprof) {
		meta.app = name.app;
		meta.type = *name.type ? name.type : "cpu";
		if (!type_ok(meta.type)) {
			http_error(resp, 400, "bad parameter 'name': bad profile type '%.64s'", meta.type);
			goto cleanup;
		}
		if (!meta.units)
			meta.units = "samples";
		if (!meta.sample_rate)
			meta.sample_rate = 100;
		/* Bounded by body_len throughout: a multipart part needs no NUL terminator. */
		rc = ingest_folded(body, body_len, &meta, batches, &err);
		if (rc < 0) {
			body_failed(resp, "cannot parse folded body", rc, &err);
			goto cleanup;
		}
	} else {
		const char *units = NULL;
		uint32_t prate = 0;

		/* One decode whatever the number of sample types: every type is a value column. */
		rc = pprof_decode(body, body_len, &s->cfg.limits, PPROF_ALL_TYPES, &prof, &err);
		if (rc < 0) {
			/* Over-limit structures and inflation bombs alike: the body is unusable. */
			body_failed(resp, "cannot decode pprof", rc, &err);
			goto cleanup;
		}
		/* Decoded: the body (often compressed) is not needed any more. */
		http_request_drop_body(req);
		body = NULL;
		ingest_pprof_type(prof, name.type, ps.types[0], sizeof(ps.types[0]), &units, &prate);
		meta.type = ps.types[0];
		/* A memory (or any non-CPU) profile carries several sample types (Go's heap:
		 * alloc_objects, alloc_space, inuse_objects, inuse_space): each becomes its own
		 * series, as Pyroscope does. */
		pprof_columns(prof, name.type, meta.units ? meta.units : units, &ps);
		if (meta.units)
			for (i = 0; i < ps.n; i++)
				ps.cols[i].units = meta.units;
		/* The name is a prefix: "app.cpu" with a cpu profile means app "app", while
		 * "my.service" with a cpu profile keeps "my.service" whole. */
		if (*name.type && !has_column(&ps, name.type))
			snprintf(appbuf, sizeof(appbuf), "%s.%s", name.app, name.type);
		else
			snprintf(appbuf, sizeof(appbuf), "%s", name.app);
		meta.app = appbuf;
		if (!meta.units)
			meta.units = units;
		if (!meta.sample_rate)
			meta.sample_rate = prate ? prate : 100;
		if (!from_s || !*from_s) {
			if (prof->time_nanos > 0) {
				int64_t dur = prof->duration_nanos > 0 ? prof->duration_nanos / 1000000000 : 0;

				meta.from = prof->time_nanos / 1000000000;
				if (meta.from > now + 86400) {
					http_error(resp, 422, "pprof time_nanos is more than a day in the future");
					goto cleanup;
				}
				meta.until = meta.from + (dur < 86400 ? dur : 86400);
			}
			if (until_s && *until_s && meta.until < meta.from)
				meta.until = meta.from;
		}
		if (!meta.spy_name)
			meta.spy_name = "pprof";
		rc = ingest_profile_columns(prof, &meta, ps.cols, ps.n, batches, &err);
		if (rc < 0) {
			body_failed(resp, "cannot convert pprof", rc, &err);
			goto cleanup;
		}
		profile_free(prof);
		prof = NULL;
	}

write:
	/* One transaction for everything of the request. */
	if (jb.n) {
		/* A recording's profile types are batches of their own: one array for all. */
		nall = batches->n + jb.nbatches;
		all = xcalloc(nall ? nall : 1, sizeof(*all));
		memcpy(all, batches->batches, batches->n * sizeof(*all));
		nall = batches->n;
		for (i = 0; i < jb.n; i++) {
			memcpy(all + nall, jb.b[i].batches, jb.b[i].n * sizeof(*all));
			nall += jb.b[i].n;
		}
	} else {
		all = NULL;
		nall = batches->n;
	}
	rc = store_write(s->store, all ? all : batches->batches, nall, &err);
	if (rc == -EINVAL || rc == -E2BIG) {
		http_error(resp, 422, "rejected by the store: %s", err.msg);
		goto cleanup;
	}
	if (rc == -EBUSY || rc == -ETIME || (rc == -ENOMEM && budget_failed())) {
		body_failed(resp, "cannot store", rc, &err);
		goto cleanup;
	}
	if (rc == -ENOSPC) {
		/* Said once per episode, not once per refused request. */
		if (!atomic_exchange(&s->disk_full, 1))
			log_warn("ingest: %s", err.msg);
		http_error(resp, 507, "insufficient storage: %s", err.msg);
		resp->retry_after = 10;
		goto cleanup;
	}
	if (rc == -EAGAIN) {
		/* The store cannot take it now (ClickHouse down or slow): nothing of the request
		 * is acknowledged, the client retries later. */
		log_warn("ingest: store write failed: %s", err.msg);
		http_error(resp, 503, "store unavailable, retry later: %s", err.msg);
		resp->retry_after = 5;
		goto cleanup;
	}
	if (rc < 0) {
		log_warn("ingest: store write failed: %s", err.msg);
		http_error(resp, 500, "storage failure: %s", err.msg);
		goto cleanup;
	}
	if (atomic_exchange(&s->disk_full, 0))
		log_warn("ingest: writes accepted again");
	atomic_store(&s->stats_dirty, 1);
	/* A series without samples (an empty body) was not stored: not counted. */
	for (i = 0; i < nall; i++)
		nseries += (all ? all : batches->batches)[i].nsamples > 0;
	resp->status = 200;
	buf_printf(&resp->body, "{\"stacks\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"series\":%zu}\n",
		   batches->stacks, batches->samples, nseries);
cleanup:
	ingest_jfr_release(&jb);
	xfree(all);
	profile_free(prof);
	series_name_release(&name);
}

void ingest_handle(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct ingest_batches batches;

	memset(&batches, 0, sizeof(batches));
	handle(s, req, resp, &batches);
	if (resp->status >= 200 && resp->status < 300)
		metrics_ingest(&s->metrics, resp->status, batches.samples, batches.stacks,
			       req->body_len);
	ingest_batches_release(&batches);
}
