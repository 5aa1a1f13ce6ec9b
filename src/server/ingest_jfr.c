/* ingest_jfr.c: POST /ingest?format=jfr (see ingest.h): a JFR recording (and Pyroscope's labels
 * snapshot) decoded by profile/jfr.h, each profile type of it converted into batches the way a
 * pprof upload is (ingest_profile()). */
#include "server/ingest.h"
#include "lib/alloc.h"
#include "lib/strtab.h"
#include "profile/jfr.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Profile types a name may end in without being part of the app (Pyroscope's Java agent names
 * its uploads "app.itimer", "app.cpu", "app.alloc", ...). */
static const char *const jfr_suffixes[] = { "cpu", "itimer", "wall", "alloc", "lock", "jfr" };

static int is_jfr_suffix(const char *type, const struct jfr_result *r)
{
	size_t i;

	for (i = 0; i < sizeof(jfr_suffixes) / sizeof(jfr_suffixes[0]); i++) {
		if (!strcmp(type, jfr_suffixes[i]))
			return 1;
	}
	for (i = 0; i < r->nprofiles; i++) {
		if (!strcmp(type, r->profiles[i].type))
			return 1;
	}
	return 0;
}

void ingest_jfr_release(struct ingest_jfr *j)
{
	size_t i;

	if (!j)
		return;
	for (i = 0; i < j->n; i++)
		ingest_batches_release(&j->b[i]);
	xfree(j->b);
	xfree(j->app);
	memset(j, 0, sizeof(*j));
}

int ingest_jfr(const char *body, size_t len, const char *labels, size_t labels_len,
	       const struct decode_limits *lim, const struct ingest_meta *meta_in, int has_from,
	       int has_until, int64_t now, struct ingest_jfr *out, struct errmsg *err)
{
	struct jfr_labels *jl = NULL;
	struct jfr_result r;
	const struct series_name *name = meta_in->name;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&r, 0, sizeof(r));
	if (labels && labels_len) {
		rc = jfr_labels_decode(labels, labels_len, lim, &jl, err);
		if (rc < 0)
			goto cleanup;
	}
	rc = jfr_decode(body, len, lim, jl, &r, err);
	if (rc < 0)
		goto cleanup;
	/* The name is a prefix: "app" or "app.cpu" give app "app"; "my.service" stays whole. */
	if (name && *name->type && !is_jfr_suffix(name->type, &r))
		out->app = xasprintf("%s.%s", name->app, name->type);
	else
		out->app = xstrdup(name ? name->app : "java");
	out->b = xcalloc(r.nprofiles + 1, sizeof(*out->b));
	for (i = 0; i < r.nprofiles; i++) {
		const struct jfr_profile *jp = &r.profiles[i];
		struct ingest_meta m = *meta_in;

		m.app = out->app;
		m.type = jp->type;
		m.units = jp->units;
		m.aggregation = "sum";
		if (!m.spy_name)
			m.spy_name = "jfr";
		/* The recording's sampling period wins for cpu; other types are event counts and
		 * sums, whose "rate" only matters for cpu-time units. */
		if (jp->sample_rate)
			m.sample_rate = jp->sample_rate;
		else if (!m.sample_rate)
			m.sample_rate = 100;
		if (!has_from && r.start_ns > 0) {
			int64_t dur = r.duration_ns > 0 ? r.duration_ns / 1000000000 : 0;

			m.from = r.start_ns / 1000000000;
			if (m.from > now + 86400) {
				rc = errmsg_set(err, -EINVAL, "the recording starts more than a day in the future");
				goto cleanup;
			}
			if (!has_until || m.until < m.from)
				m.until = m.from + (dur < 86400 ? dur : 86400);
		}
		rc = ingest_profile(jp->prof, &m, &out->b[out->n], err);
		out->n++;
		if (rc < 0)
			goto cleanup;
		out->samples += out->b[out->n - 1].samples;
		out->stacks += out->b[out->n - 1].stacks;
		out->nbatches += out->b[out->n - 1].n;
	}
	out->events = r.events;
	rc = 0;
cleanup:
	/* The batches point at the profiles' frame names only through their own copies: the
	 * recording can go. */
	jfr_result_release(&r);
	jfr_labels_free(jl);
	if (rc < 0)
		ingest_jfr_release(out);
	return rc;
}
