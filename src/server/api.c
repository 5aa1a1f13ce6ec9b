/* api.c: /labels, /label-values and the /api/v1 queries (see api.h). The store computes; this
 * file validates parameters and writes JSON. */
#include "server/api.h"
#include "lib/alloc.h"
#include "lib/json.h"
#include "server/flamebearer.h"
#include "server/merge_cache.h"
#include "server/server.h"
#include "store/query.h"
#include "store/store.h"
#include "store/timerange.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_strings(struct buf *b, const struct store_strings *l)
{
	size_t i;
	int err = buf_putc(b, '[');

	for (i = 0; i < l->n && !err; i++) {
		if (i)
			err = buf_putc(b, ',');
		if (!err)
			err = json_str(b, l->v[i]);
	}
	if (!err)
		err = buf_puts(b, "]\n");
	return err;
}

/* /labels and /label-values cover all time unless a range is given. */
static int label_range(const struct http_request *req, struct http_response *resp,
		       struct server_range *r)
{
	const char *f = http_arg(req, "from"), *u = http_arg(req, "until");

	if (server_parse_range(req, resp, "query", "from", "until", r) < 0)
		return -EINVAL;
	if ((!f || !*f) && (!u || !*u))
		r->q.from = r->q.until = 0;
	return 0;
}

void api_labels(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range r;
	struct store_strings l = { NULL, 0 };
	struct errmsg err = { "" };
	int rc;

	if (label_range(req, resp, &r) < 0)
		return;
	rc = store_label_names(s->store, &r.q, &l, &err);
	if (rc < 0)
		server_store_error(resp, rc, &err);
	else if (write_strings(&resp->body, &l) < 0)
		http_error(resp, 500, "response too large");
	store_strings_release(&l);
	server_range_release(&r);
}

void api_label_values(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range r;
	struct store_strings l = { NULL, 0 };
	struct errmsg err = { "" };
	const char *label = http_arg(req, "label");
	int rc;

	if (!label || !*label) {
		http_error(resp, 400, "missing parameter 'label'");
		return;
	}
	if (label_range(req, resp, &r) < 0)
		return;
	rc = store_label_values(s->store, label, &r.q, &l, &err);
	if (rc < 0)
		server_store_error(resp, rc, &err);
	else if (write_strings(&resp->body, &l) < 0)
		http_error(resp, 500, "response too large");
	store_strings_release(&l);
	server_range_release(&r);
}

/* ---- /api/v1/series ----------------------------------------------------------------------- */

struct rate_info {
	uint32_t rate;
	char units[STORE_MAX_META + 1];
	int mixed_rates, mixed_units;
	size_t n;
};

static int rate_cb(const struct store_series_info *info, void *arg)
{
	struct rate_info *ri = arg;
	const char *u = info->units ? info->units : "";

	if (ri->n++ == 0) {
		ri->rate = info->sample_rate;
		snprintf(ri->units, sizeof(ri->units), "%s", u);
		return 0;
	}
	if (info->sample_rate != ri->rate)
		ri->mixed_rates = 1;
	if (strcmp(u, ri->units))
		ri->mixed_units = 1;
	return 0;
}

void api_series(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range r;
	struct store_timeseries *ts = NULL;
	struct errmsg err = { "" };
	struct rate_info ri;
	const char *step_s = http_arg(req, "step"), *group_by = http_arg(req, "group_by");
	const char *unit = http_arg(req, "unit");
	struct buf *b = &resp->body;
	int64_t step = 0;
	double scale = 1; /* value -> seconds */
	size_t g, i;
	int rc, mode; /* 0 samples, 1 seconds, 2 cores */

	if (!unit || !*unit || !strcmp(unit, "samples"))
		mode = 0;
	else if (!strcmp(unit, "seconds"))
		mode = 1;
	else if (!strcmp(unit, "cores"))
		mode = 2;
	else {
		http_error(resp, 400, "bad parameter 'unit': want samples, seconds or cores");
		return;
	}
	if (step_s && *step_s && (timerange_parse_duration(step_s, &step, &err) < 0 || step <= 0)) {
		http_error(resp, 400, "bad parameter 'step': %s", err.msg[0] ? err.msg : "must be > 0");
		return;
	}
	if (group_by && strlen(group_by) > STORE_MAX_LABEL_NAME) {
		http_error(resp, 400, "bad parameter 'group_by': too long");
		return;
	}
	if (server_parse_range(req, resp, "query", "from", "until", &r) < 0)
		return;
	memset(&ri, 0, sizeof(ri));
	if (mode) {
		rc = store_series(s->store, &r.q, rate_cb, &ri, &err);
		if (rc < 0) {
			server_store_error(resp, rc, &err);
			goto cleanup;
		}
		if (ri.mixed_units || ri.mixed_rates) {
			http_error(resp, 400, "unit=%s: the selected series differ in %s; select fewer",
				   unit, ri.mixed_units ? "units" : "sample rates");
			goto cleanup;
		}
		if (!strcmp(ri.units, "nanoseconds"))
			scale = 1e-9;
		else if (!ri.units[0] || !strcmp(ri.units, "samples"))
			scale = 1.0 / (ri.rate ? ri.rate : 100);
		else if (ri.n) {
			http_error(resp, 400, "unit=%s needs CPU samples or nanoseconds, the series are in '%s'",
				   unit, ri.units);
			goto cleanup;
		}
	}
	rc = store_timeseries(s->store, &r.q, step, group_by, &ts, &err);
	if (rc < 0) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	rc = buf_printf(b, "{\"start\":%" PRId64 ",\"step\":%" PRId64 ",\"points\":%zu,\"unit\":\"%s\"",
			ts->start, ts->step, ts->npoints, mode == 0 ? "samples" : mode == 1 ? "seconds" : "cores");
	if (mode && !rc)
		rc = buf_printf(b, ",\"sampleRate\":%" PRIu32, ri.rate ? ri.rate : 100);
	if (!rc)
		rc = buf_puts(b, ",\"series\":[");
	for (g = 0; g < ts->ngroups && !rc; g++) {
		const struct store_ts_group *gr = &ts->groups[g];

		rc = buf_puts(b, g ? ",{\"group\":" : "{\"group\":");
		if (!rc)
			rc = json_str(b, gr->group ? gr->group : "");
		if (!rc)
			rc = buf_puts(b, ",\"total\":");
		if (!rc && mode == 0)
			rc = buf_printf(b, "%" PRId64, gr->total);
		else if (!rc)
			rc = json_double(b, (double)gr->total * scale);
		if (!rc)
			rc = buf_puts(b, ",\"values\":[");
		for (i = 0; i < ts->npoints && !rc; i++) {
			if (i)
				rc = buf_putc(b, ',');
			if (rc)
				break;
			if (mode == 0)
				rc = buf_printf(b, "%" PRId64, gr->values[i]);
			else if (mode == 1)
				rc = json_double(b, (double)gr->values[i] * scale);
			else
				rc = json_double(b, (double)gr->values[i] * scale / (double)ts->step);
		}
		if (!rc)
			rc = buf_puts(b, "]}");
	}
	if (!rc)
		rc = buf_puts(b, "]}\n");
	if (rc < 0)
		http_error(resp, 500, "response too large");
cleanup:
	store_timeseries_free(ts);
	server_range_release(&r);
}

/* ---- /api/v1/top -------------------------------------------------------------------------- */

static int cmp_total(const void *a, const void *b)
{
	const struct query_top_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_name(const void *a, const void *b)
{
	const struct query_top_row *x = a, *y = b;

	return strcmp(x->name, y->name);
}

void api_top(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range r;
	const struct store_profile *p = NULL, *v;
	struct query_top_row *rows = NULL;
	struct errmsg err = { "" };
	const char *sort = http_arg(req, "sort");
	struct buf *b = &resp->body;
	uint64_t limit;
	size_t n = 0, i;
	int rc, lines;

	if (sort && *sort && strcmp(sort, "self") && strcmp(sort, "total") && strcmp(sort, "name")) {
		http_error(resp, 400, "bad parameter 'sort': want self, total or name");
		return;
	}
	if (server_arg_uint(req, resp, "limit", 100, 1, 1000000, &limit) < 0 ||
	    server_arg_lines(req, resp, &lines) < 0)
		return;
	if (server_parse_range(req, resp, "query", "from", "until", &r) < 0)
		return;
	/* Every stack the store returns, not only the heaviest that a flame graph shows: function
	 * totals stay exact unless the selection is over the store's merge caps. */
	rc = merge_cache_get(s->merges, s->store, r.query, &r.q, STORE_MAX_MERGE_STACKS, lines, &p,
			     &err);
	if (rc < 0) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	v = p; /* by function unless lines (merge_cache.h) */
	n = query_top(v, &rows);
	if (n > 1 && sort && !strcmp(sort, "total"))
		qsort(rows, n, sizeof(*rows), cmp_total);
	else if (n > 1 && sort && !strcmp(sort, "name"))
		qsort(rows, n, sizeof(*rows), cmp_name);
	rc = buf_printf(b, "{\"total\":%" PRId64 ",\"functions\":%zu,\"rows\":[", v->total, n);
	for (i = 0; i < n && i < limit && !rc; i++) {
		rc = buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
		if (!rc)
			rc = json_str(b, rows[i].name);
		if (!rc)
			rc = buf_printf(b, ",\"self\":%" PRId64 ",\"total\":%" PRId64 "}", rows[i].self,
					rows[i].total);
	}
	if (!rc)
		rc = buf_puts(b, "]}\n");
	if (rc < 0)
		http_error(resp, 500, "response too large");
cleanup:
	xfree(rows);
	merge_cache_put(s->merges, p);
	server_range_release(&r);
}

/* ---- /api/v1/sandwich --------------------------------------------------------------------- */

void api_sandwich(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range r;
	const struct store_profile *p = NULL, *v;
	struct store_profile *callers = NULL, *callees = NULL;
	struct errmsg err = { "" };
	const char *fn = http_arg(req, "function");
	struct buf *b = &resp->body;
	uint64_t max_nodes;
	int rc, lines;

	if (!fn || !*fn) {
		http_error(resp, 400, "missing parameter 'function'");
		return;
	}
	if (server_arg_max_nodes(req, resp, &max_nodes) < 0 || server_arg_lines(req, resp, &lines) < 0)
		return;
	if (server_parse_range(req, resp, "query", "from", "until", &r) < 0)
		return;
	/* Every stack the store returns, not only the heaviest that a flame graph shows: function
	 * totals stay exact unless the selection is over the store's merge caps. */
	rc = merge_cache_get(s->merges, s->store, r.query, &r.q, STORE_MAX_MERGE_STACKS, lines, &p,
			     &err);
	if (rc < 0) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	v = p; /* by function unless lines (merge_cache.h) */
	rc = query_sandwich(v, fn, &callers, &callees);
	if (rc == -ENOENT) {
		http_error(resp, 404, "function '%.200s' is not in the selected profiles", fn);
		goto cleanup;
	}
	if (rc < 0) {
		http_error(resp, 500, "cannot compute the sandwich (%s)", strerror(-rc));
		goto cleanup;
	}
	rc = buf_puts(b, "{\"function\":");
	if (!rc)
		rc = json_str(b, fn);
	if (!rc)
		rc = buf_printf(b, ",\"total\":%" PRId64 ",\"callers\":", callers->total);
	if (!rc)
		rc = flamebearer_write(callers, (size_t)max_nodes, b);
	if (!rc)
		rc = buf_puts(b, ",\"callees\":");
	if (!rc)
		rc = flamebearer_write(callees, (size_t)max_nodes, b);
	if (!rc)
		rc = buf_puts(b, "}\n");
	if (rc < 0)
		http_error(resp, 500, "response too large");
cleanup:
	store_profile_free(callers);
	store_profile_free(callees);
	merge_cache_put(s->merges, p);
	server_range_release(&r);
}

/* ---- /api/v1/runs ------------------------------------------------------------------------- */

#define RUNS_MAX_GROUPS 5000   /* distinct values of the `by` label listed at most */
#define RUNS_MAX_LABELS 8      /* labels whose values are reported per group */
#define RUNS_MAX_VALUES 16     /* values reported per label and group */

struct run_group {
	char *value;
	int64_t first, last, total;
	uint64_t nseries;
	uint32_t sample_rate;
	char units[STORE_MAX_META + 1];
	struct store_strings vals[RUNS_MAX_LABELS]; /* unsorted, unique, at most RUNS_MAX_VALUES */
};

struct runs {
	const char *by;
	const char *labels[RUNS_MAX_LABELS];
	size_t nlabels;
	struct run_group *g;
	size_t n, cap;
	int truncated;
};

static const char *label_of(const struct store_series_info *info, const char *name)
{
	size_t i;

	if (!strcmp(name, "__type__"))
		return info->type;
	for (i = 0; i < info->nlabels; i++)
		if (!strcmp(info->labels[i].name, name))
			return info->labels[i].value;
	return NULL;
}

static void add_value(struct store_strings *l, const char *v)
{
	size_t i;

	if (!v || !*v || l->n >= RUNS_MAX_VALUES)
		return;
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], v))
			return;
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(v);
}

static int runs_cb(const struct store_series_info *info, void *arg)
{
	struct runs *r = arg;
	const char *v = label_of(info, r->by);
	struct run_group *g = NULL;
	size_t i;

	if (!v || !*v)
		return 0;
	for (i = 0; i < r->n; i++)
		if (!strcmp(r->g[i].value, v)) {
			g = &r->g[i];
			break;
		}
	if (!g) {
		if (r->n >= RUNS_MAX_GROUPS) {
			r->truncated = 1;
			return 0;
		}
		ALLOC_GROW(r->g, r->n + 1, r->cap);
		g = &r->g[r->n++];
		memset(g, 0, sizeof(*g));
		g->value = xstrdup(v);
		g->first = info->first_time;
		g->last = info->last_time;
		g->sample_rate = info->sample_rate;
		snprintf(g->units, sizeof(g->units), "%s", info->units ? info->units : "");
	}
	if (info->first_time < g->first)
		g->first = info->first_time;
	if (info->last_time > g->last)
		g->last = info->last_time;
	g->nseries++;
	for (i = 0; i < r->nlabels; i++)
		add_value(&g->vals[i], label_of(info, r->labels[i]));
	return 0;
}

static int cmp_run_last(const void *a, const void *b)
{
	const struct run_group *x = a, *y = b;

	if (x->last != y->last)
		return x->last > y->last ? -1 : 1;
	return strcmp(x->value, y->value);
}

void api_runs(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range r;
	struct runs runs;
	struct store_timeseries *ts = NULL;
	struct errmsg err = { "" };
	const char *by = http_arg(req, "by"), *labels = http_arg(req, "labels");
	struct buf *b = &resp->body;
	char *lcopy = NULL, *p, *comma;
	uint64_t limit;
	size_t i, j, k;
	int rc;

	memset(&runs, 0, sizeof(runs));
	if (!by || !*by)
		by = "commit";
	if (strlen(by) > STORE_MAX_LABEL_NAME) {
		http_error(resp, 400, "bad parameter 'by': too long");
		return;
	}
	if (!labels)
		labels = "branch,job,pipeline,pr,runner,run,service_name";
	if (server_arg_uint(req, resp, "limit", 200, 1, RUNS_MAX_GROUPS, &limit) < 0)
		return;
	lcopy = xstrdup(labels);
	for (p = lcopy; p && *p; p = comma) {
		comma = strchr(p, ',');
		if (comma)
			*comma++ = '\0';
		if (!*p)
			continue;
		if (runs.nlabels == RUNS_MAX_LABELS || strlen(p) > STORE_MAX_LABEL_NAME) {
			http_error(resp, 400, "bad parameter 'labels': at most %d label names", RUNS_MAX_LABELS);
			xfree(lcopy);
			return;
		}
		runs.labels[runs.nlabels++] = p;
	}
	runs.by = by;
	if (server_parse_range(req, resp, "query", "from", "until", &r) < 0) {
		xfree(lcopy);
		return;
	}
	rc = store_series(s->store, &r.q, runs_cb, &runs, &err);
	if (rc == 0)
		rc = store_timeseries(s->store, &r.q, r.q.until - r.q.from > 0 ? r.q.until - r.q.from : 1,
				      by, &ts, &err);
	if (rc < 0) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	for (i = 0; i < ts->ngroups; i++) {
		for (j = 0; j < runs.n; j++)
			if (ts->groups[i].group && !strcmp(ts->groups[i].group, runs.g[j].value))
				runs.g[j].total = ts->groups[i].total;
	}
	if (runs.n > 1)
		qsort(runs.g, runs.n, sizeof(*runs.g), cmp_run_last);
	rc = buf_puts(b, "{\"by\":");
	if (!rc)
		rc = json_str(b, by);
	if (!rc)
		rc = buf_printf(b, ",\"count\":%zu,\"truncated\":%s,\"runs\":[", runs.n,
				runs.truncated ? "true" : "false");
	for (i = 0; i < runs.n && i < limit && !rc; i++) {
		const struct run_group *g = &runs.g[i];

		rc = buf_puts(b, i ? ",{\"value\":" : "{\"value\":");
		if (!rc)
			rc = json_str(b, g->value);
		if (!rc)
			rc = buf_printf(b, ",\"total\":%" PRId64 ",\"first\":%" PRId64 ",\"last\":%" PRId64
					",\"series\":%" PRIu64 ",\"sampleRate\":%" PRIu32 ",\"units\":",
					g->total, g->first, g->last, g->nseries,
					g->sample_rate ? g->sample_rate : 100);
		if (!rc)
			rc = json_str(b, g->units[0] ? g->units : "samples");
		if (!rc)
			rc = buf_puts(b, ",\"labels\":{");
		for (j = 0; j < runs.nlabels && !rc; j++) {
			if (j)
				rc = buf_putc(b, ',');
			if (!rc)
				rc = json_str(b, runs.labels[j]);
			if (!rc)
				rc = buf_puts(b, ":[");
			for (k = 0; k < g->vals[j].n && !rc; k++) {
				if (k)
					rc = buf_putc(b, ',');
				if (!rc)
					rc = json_str(b, g->vals[j].v[k]);
			}
			if (!rc)
				rc = buf_putc(b, ']');
		}
		if (!rc)
			rc = buf_puts(b, "}}");
	}
	if (!rc)
		rc = buf_puts(b, "]}\n");
	if (rc < 0)
		http_error(resp, 500, "response too large");
cleanup:
	for (i = 0; i < runs.n; i++) {
		xfree(runs.g[i].value);
		for (j = 0; j < RUNS_MAX_LABELS; j++)
			store_strings_release(&runs.g[i].vals[j]);
	}
	xfree(runs.g);
	xfree(lcopy);
	store_timeseries_free(ts);
	server_range_release(&r);
}
