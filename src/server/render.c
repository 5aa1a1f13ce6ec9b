/* render.c: /render and /render-diff (see render.h): selection, store_merge(), and the four
 * output formats. The flamebearer tree itself is built in flamebearer.c. */
#include "server/render.h"
#include "store/query.h"
#include "lib/alloc.h"
#include "lib/json.h"
#include "lib/strtab.h"
#include "profile/output.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "server/flamebearer.h"
#include "server/merge_cache.h"
#include "server/server.h"
#include "store/selector.h"
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A flame graph is drawn from the heaviest stacks of *p whose call tree (one node per distinct
 * path from the root, as flamebearer.c builds it) holds at most max_nodes nodes; the rest is
 * counted in "other" (totals stay exact). A stack costs the nodes it adds to those before it,
 * so stacks sharing a deep trunk are kept where as many unrelated ones would not fit. The
 * nodes are counted in an open-addressing table of (parent, frame) pairs, load at most 2/3.
 * *p may be shared (merge_cache.h) and is not changed: *view is a shallow copy of it with
 * fewer stacks. When the table cannot be had within the request's memory, nothing is cut and
 * the budget's failure ends the request (503). */
struct node_slot {
	uint32_t parent, frame, id; /* id 0: empty (node ids start at 1; the root is 0) */
};

static void nodes_view(const struct store_profile **p, struct store_profile *view,
		       size_t max_nodes)
{
	const struct store_profile *q = *p;
	struct node_slot *slots;
	size_t i, j, frames = 0, nodes = 0, nslots = 16, mask;

	for (i = 0; i < q->nstacks; i++)
		frames += q->stacks[i].depth;
	if (!max_nodes || frames <= max_nodes)
		return; /* a tree never has more nodes than its stacks have frames */
	while (nslots < max_nodes + max_nodes / 2)
		nslots <<= 1;
	mask = nslots - 1;
	slots = try_malloc(nslots * sizeof(*slots));
	if (!slots)
		return;
	memset(slots, 0, nslots * sizeof(*slots));
	for (i = 0; i < q->nstacks; i++) {
		const struct store_stack *st = &q->stacks[i];
		const uint32_t *fr = q->frames + st->first;
		uint32_t parent = 0;

		for (j = 0; j < st->depth; j++) {
			uint64_t key = ((uint64_t)parent << 32) | fr[j];
			size_t h = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 20) & mask;

			while (slots[h].id && (slots[h].parent != parent || slots[h].frame != fr[j]))
				h = (h + 1) & mask;
			if (!slots[h].id) {
				if (nodes == max_nodes)
					goto full;
				slots[h].parent = parent;
				slots[h].frame = fr[j];
				slots[h].id = (uint32_t)++nodes;
			}
			parent = slots[h].id;
		}
	}
full:
	xfree(slots);
	if (i == q->nstacks)
		return;
	*view = *q;
	view->nstacks = i;
	for (; i < q->nstacks; i++) {
		view->other = store_sat_add(view->other, q->stacks[i].value);
		view->other_stacks++;
	}
	*p = view;
}

struct profile *render_to_profile(const struct store_profile *sp)
{
	struct profile *p = profile_new();
	uint32_t nnames = strtab_count(sp->names);
	uint32_t *loc = xcalloc(nnames + 1, sizeof(*loc));
	uint32_t *stack = xmalloc((STORE_MAX_DEPTH + 1) * sizeof(*stack));
	int64_t period = sp->sample_rate ? 1000000000LL / sp->sample_rate : 0;
	size_t i, j;

	if (!sp->units[0] || !strcmp(sp->units, "samples")) {
		/* Counts of samples taken every `period` ns of the type's time, as Go's CPU
		 * profiles say it: pprof tools then show time too. */
		profile_set_type(p, "samples", "count", period);
		if (period)
			profile_set_period_type(p, sp->type[0] ? sp->type : "cpu", "nanoseconds");
	} else
		profile_set_type(p, sp->type[0] ? sp->type : "cpu", sp->units, period);
	for (i = 0; i < sp->nstacks; i++) {
		const struct store_stack *st = &sp->stacks[i];
		size_t depth = st->depth > STORE_MAX_DEPTH ? STORE_MAX_DEPTH : st->depth;

		for (j = 0; j < depth; j++) {
			uint32_t id = sp->frames[st->first + j];

			if (id >= nnames)
				id = 0;
			if (!loc[id]) {
				const char *name = strtab_get(sp->names, id);
				size_t len = strlen(name);
				uint32_t fn;

				if (len > 4 && !strcmp(name + len - 4, "_[k]")) {
					char *k = xstrndup(name, len - 4);

					fn = profile_intern_function(p, FRAME_KERNEL, k, k, NULL, 0);
					xfree(k);
				} else {
					fn = profile_intern_function(p, FRAME_NATIVE, name, name, NULL, 0);
				}
				loc[id] = profile_intern_location(p, 0, 0, fn, 0);
			}
			stack[depth - 1 - j] = loc[id]; /* leaf first */
		}
		if (depth && st->value > 0)
			profile_add_sample(p, stack, depth, NULL, 0, st->value);
	}
	if (sp->other > 0) {
		uint32_t fn = profile_intern_function(p, FRAME_SPECIAL, "other", "other", NULL, 0);

		stack[0] = profile_intern_location(p, 0, 0, fn, 0);
		profile_add_sample(p, stack, 1, NULL, 0, sp->other);
	}
	xfree(loc);
	xfree(stack);
	return p;
}

int render_folded(const struct store_profile *sp, struct buf *out)
{
	size_t i, j;
	int err = 0;

	for (i = 0; i < sp->nstacks && !err; i++) {
		const struct store_stack *st = &sp->stacks[i];

		if (st->value <= 0)
			continue;
		for (j = 0; j < st->depth && !err; j++) {
			if (j)
				err = buf_putc(out, ';');
			if (!err)
				err = buf_puts(out, strtab_get(sp->names, sp->frames[st->first + j]));
		}
		if (!err)
			err = buf_printf(out, " %" PRId64 "\n", st->value);
	}
	if (!err && sp->other > 0)
		err = buf_printf(out, "other %" PRId64 "\n", sp->other);
	return err;
}

/* ---- focus: the subtree of one node ------------------------------------------------------ */

void render_focus_release(struct render_focus *f)
{
	xfree(f->path);
	xfree(f->copy);
	memset(f, 0, sizeof(*f));
}

int render_focus_parse(const char *s, struct render_focus *f, struct errmsg *err)
{
	size_t n = 1, i;
	char *p;

	memset(f, 0, sizeof(*f));
	if (!s || !*s)
		return 0;
	for (i = 0; s[i]; i++)
		n += s[i] == ';';
	if (n > STORE_MAX_DEPTH)
		return errmsg_set(err, -E2BIG, "the path has %zu frames, more than %d", n,
				  STORE_MAX_DEPTH);
	f->copy = xstrdup(s);
	f->path = xmalloc(n * sizeof(*f->path));
	for (p = f->copy; p;) {
		char *semi = strchr(p, ';');

		if (semi)
			*semi++ = '\0';
		if (!*p) {
			render_focus_release(f);
			return errmsg_set(err, -EINVAL, "empty frame name in the path (frames are separated by ';')");
		}
		f->path[f->n++] = p;
		p = semi;
	}
	return 0;
}

struct store_profile *render_focus_filter(const struct store_profile *sp, const struct render_focus *f)
{
	struct store_profile *out = store_profile_new();
	uint32_t nnames = strtab_count(sp->names);
	uint32_t *want = xmalloc((f->n ? f->n : 1) * sizeof(*want));
	uint32_t *map = xmalloc((nnames ? nnames : 1) * sizeof(*map));
	uint32_t *ids = NULL;
	size_t i, j, ids_cap = 0;

	out->nseries = sp->nseries;
	out->sample_rate = sp->sample_rate;
	memcpy(out->type, sp->type, sizeof(out->type));
	memcpy(out->units, sp->units, sizeof(out->units));
	memcpy(out->spy_name, sp->spy_name, sizeof(out->spy_name));
	memcpy(out->aggregation, sp->aggregation, sizeof(out->aggregation));
	memset(map, 0xff, (nnames ? nnames : 1) * sizeof(*map));
	for (i = 0; i < f->n; i++) {
		want[i] = strtab_find(sp->names, f->path[i], strlen(f->path[i]));
		if (want[i] == UINT32_MAX)
			goto done; /* a frame nobody has: nothing is under the path */
	}
	for (i = 0; i < sp->nstacks; i++) {
		const struct store_stack *st = &sp->stacks[i];
		const uint32_t *fr = sp->frames + st->first;

		if (st->depth < f->n || st->value <= 0)
			continue;
		for (j = 0; j < f->n && fr[j] == want[j]; j++)
			;
		if (j < f->n)
			continue;
		ALLOC_GROW(ids, st->depth, ids_cap);
		for (j = 0; j < st->depth; j++) {
			uint32_t id = fr[j] < nnames ? fr[j] : 0;

			if (map[id] == UINT32_MAX)
				map[id] = strtab_intern(out->names, strtab_get(sp->names, id));
			ids[j] = map[id];
		}
		store_profile_add_ids(out, ids, st->depth, st->value);
	}
done:
	xfree(ids);
	xfree(map);
	xfree(want);
	return out;
}

/* Parse the optional `focus` parameter (400 on error). */
static int arg_focus(const struct http_request *req, struct http_response *resp,
		     struct render_focus *f)
{
	struct errmsg err = { "" };

	if (render_focus_parse(http_arg(req, "focus"), f, &err) < 0)
		return http_error(resp, 400, "bad parameter 'focus': %s", err.msg), -EINVAL;
	return 0;
}

/* The stacks of the shared merge *p under the focus path, when there is one: *p then points
 * at them, and *owned (freed by the caller) too. */
static void apply_focus(const struct store_profile **p, struct store_profile **owned,
			const struct render_focus *f)
{
	if (!f->n)
		return;
	*owned = render_focus_filter(*p, f);
	*p = *owned;
}

/* ,"focus":{"path":[...],"total":T,"selectionTotal":S} */
static int write_focus(struct buf *b, const struct render_focus *f, int64_t total, int64_t selection)
{
	size_t i;
	int err = buf_puts(b, ",\"focus\":{\"path\":[");

	for (i = 0; i < f->n && !err; i++) {
		if (i)
			err = buf_putc(b, ',');
		if (!err)
			err = json_str(b, f->path[i]);
	}
	if (!err)
		err = buf_printf(b, "],\"total\":%" PRId64 ",\"selectionTotal\":%" PRId64 "}", total,
				 selection);
	return err;
}

/* The legacy "name" of a selection: APP.TYPE when the selector names both. */
static void selection_name(const struct server_range *r, const struct store_profile *p,
			   char *out, size_t outlen)
{
	const char *app = r->sel ? selector_eq_value(r->sel, "service_name") : NULL;
	const char *type = r->sel && r->sel->type ? r->sel->type : p->type;

	if (app && type && *type)
		snprintf(out, outlen, "%s.%s", app, type);
	else
		snprintf(out, outlen, "%s", r->query);
}

static int write_metadata(struct buf *b, const char *format, const struct store_profile *p,
			  const char *name)
{
	int err = 0;

	err |= buf_printf(b, "\"metadata\":{\"format\":\"%s\",\"spyName\":", format);
	err |= json_str(b, p->spy_name[0] ? p->spy_name : "unknown");
	err |= buf_printf(b, ",\"sampleRate\":%" PRIu32 ",\"units\":", p->sample_rate ? p->sample_rate : 100);
	err |= json_str(b, p->units[0] ? p->units : "samples");
	err |= buf_puts(b, ",\"name\":");
	err |= json_str(b, name);
	err |= buf_putc(b, '}');
	return err < 0 ? -E2BIG : 0;
}

/* "key":{"startTime":..,"samples":[..],"durationDelta":..} over the selection. */
static int write_timeline(struct server *s, struct buf *b, const char *key,
			  const struct store_query *q, struct errmsg *err)
{
	struct store_timeseries *ts = NULL;
	size_t i;
	int rc;

	rc = store_timeseries(s->store, q, 0, NULL, &ts, err);
	if (rc < 0)
		return rc;
	rc = buf_printf(b, "\"%s\":{\"startTime\":%" PRId64 ",\"samples\":[", key, ts->start);
	for (i = 0; i < ts->npoints && rc == 0; i++)
		rc = buf_printf(b, "%s%" PRId64, i ? "," : "",
				ts->ngroups ? ts->groups[0].values[i] : (int64_t)0);
	if (rc == 0)
		rc = buf_printf(b, "],\"durationDelta\":%" PRId64 "}", ts->step);
	store_timeseries_free(ts);
	return rc;
}

static void set_body_type(struct http_response *resp, const char *ctype, const char *disposition)
{
	resp->content_type = ctype;
	resp->content_disposition = disposition;
}

void render_handle(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range r;
	struct render_focus focus;
	const struct store_profile *merged = NULL, *p = NULL;
	struct store_profile view;
	struct store_profile *focused = NULL;
	struct profile *prof = NULL;
	struct errmsg err = { "" };
	const char *format = http_arg(req, "format");
	char name[512];
	uint64_t max_nodes;
	int64_t selection_total;
	int rc, lines;

	if (!format || !*format)
		format = "json";
	if (strcmp(format, "json") && strcmp(format, "pprof") && strcmp(format, "folded") &&
	    strcmp(format, "collapsed") && strcmp(format, "html") && strcmp(format, "svg")) {
		http_error(resp, 400, "bad parameter 'format': want json, pprof, folded, html or svg");
		return;
	}
	if (server_arg_max_nodes(req, resp, &max_nodes) < 0 || server_arg_lines(req, resp, &lines) < 0)
		return;
	if (arg_focus(req, resp, &focus) < 0)
		return;
	if (server_parse_range(req, resp, "query", "from", "until", &r) < 0)
		goto cleanup_focus;
	/* A subtree is rendered from every stack the store returns (not only the heaviest
	 * 64 Ki), so that zooming in finds the light stacks that make up a deep frame; the
	 * merge is shared with the top table and the other zooms (merge_cache.h). */
	rc = merge_cache_get(s->merges, s->store, r.query, &r.q,
			     focus.n ? STORE_MAX_MERGE_STACKS : s->cfg.render.max_stacks, lines, &merged,
			     &err);
	if (rc < 0) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	p = merged; /* by function unless lines (merge_cache.h) */
	selection_total = p->total;
	apply_focus(&p, &focused, &focus);
	nodes_view(&p, &view, s->cfg.render.max_nodes);
	if (!strcmp(format, "json")) {
		struct buf *b = &resp->body;

		selection_name(&r, p, name, sizeof(name));
		rc = buf_puts(b, "{\"flamebearer\":");
		if (!rc)
			rc = flamebearer_write(p, (size_t)max_nodes, b);
		if (!rc)
			rc = buf_putc(b, ',');
		if (!rc)
			rc = write_metadata(b, "single", p, name);
		if (!rc && focus.n)
			rc = write_focus(b, &focus, p->total, selection_total);
		if (!rc)
			rc = buf_putc(b, ',');
		if (!rc && (rc = write_timeline(s, b, "timeline", &r.q, &err)) < 0 && rc != -E2BIG) {
			server_store_error(resp, rc, &err);
			goto cleanup;
		}
		if (!rc)
			rc = buf_puts(b, "}\n");
	} else if (!strcmp(format, "folded") || !strcmp(format, "collapsed")) {
		set_body_type(resp, "text/plain; charset=utf-8", NULL);
		rc = render_folded(p, &resp->body);
	} else if (!strcmp(format, "pprof")) {
		prof = render_to_profile(p);
		set_body_type(resp, "application/octet-stream",
			      "attachment; filename=\"profile.pb.gz\"");
		rc = pprof_encode(prof, &resp->body);
	} else {
		selection_name(&r, p, name, sizeof(name));
		prof = render_to_profile(p);
		if (!strcmp(format, "svg")) {
			set_body_type(resp, "image/svg+xml", NULL);
			rc = flamegraph_svg_write(prof, name[0] ? name : "scorch", &resp->body);
		} else {
			set_body_type(resp, "text/html; charset=utf-8", NULL);
			rc = flamegraph_html_write(prof, name[0] ? name : "scorch", &resp->body);
		}
	}
	if (rc < 0)
		http_error(resp, 500, "cannot render the profile (%s)", strerror(-rc));
cleanup:
	profile_free(prof);
	store_profile_free(focused);
	merge_cache_put(s->merges, merged);
	server_range_release(&r);
cleanup_focus:
	render_focus_release(&focus);
}

void render_diff_handle(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	struct server_range lr, rr;
	struct render_focus focus;
	const struct store_profile *lm = NULL, *rm = NULL, *lp, *rp;
	struct store_profile lview, rview;
	struct store_profile *lf = NULL, *rf = NULL;
	struct errmsg err = { "" };
	struct buf *b = &resp->body;
	uint64_t max_nodes;
	int64_t lsel, rsel;
	char name[512];
	int rc, lines;

	memset(&rr, 0, sizeof(rr));
	memset(&lr, 0, sizeof(lr));
	if (server_arg_max_nodes(req, resp, &max_nodes) < 0 || server_arg_lines(req, resp, &lines) < 0)
		return;
	if (arg_focus(req, resp, &focus) < 0)
		return;
	if (server_parse_range(req, resp, "leftQuery", "leftFrom", "leftUntil", &lr) < 0)
		goto cleanup;
	if (server_parse_range(req, resp, "rightQuery", "rightFrom", "rightUntil", &rr) < 0)
		goto cleanup;
	if ((rc = merge_cache_get(s->merges, s->store, lr.query, &lr.q,
				  focus.n ? STORE_MAX_MERGE_STACKS : s->cfg.render.max_stacks, lines,
				  &lm, &err)) < 0 ||
	    (rc = merge_cache_get(s->merges, s->store, rr.query, &rr.q,
				  focus.n ? STORE_MAX_MERGE_STACKS : s->cfg.render.max_stacks, lines,
				  &rm, &err)) < 0) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	lp = lm;
	rp = rm;
	lsel = lp->total;
	rsel = rp->total;
	apply_focus(&lp, &lf, &focus);
	apply_focus(&rp, &rf, &focus);
	nodes_view(&lp, &lview, s->cfg.render.max_nodes);
	nodes_view(&rp, &rview, s->cfg.render.max_nodes);
	selection_name(&rr, rp, name, sizeof(name));
	rc = buf_puts(b, "{\"flamebearer\":");
	if (!rc)
		rc = flamebearer_write_diff(lp, rp, (size_t)max_nodes, b);
	if (!rc)
		rc = buf_putc(b, ',');
	if (!rc)
		rc = write_metadata(b, "double", rp->nstacks ? rp : lp, name);
	if (!rc)
		rc = buf_printf(b, ",\"leftTicks\":%" PRId64 ",\"rightTicks\":%" PRId64,
				lp->total, rp->total);
	if (!rc && focus.n)
		rc = write_focus(b, &focus, lp->total + rp->total, lsel + rsel);
	if (!rc && focus.n)
		rc = buf_printf(b, ",\"leftSelectionTicks\":%" PRId64 ",\"rightSelectionTicks\":%" PRId64,
				lsel, rsel);
	if (!rc)
		rc = buf_putc(b, ',');
	if (!rc && (rc = write_timeline(s, b, "leftTimeline", &lr.q, &err)) < 0 && rc != -E2BIG) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	if (!rc)
		rc = buf_putc(b, ',');
	if (!rc && (rc = write_timeline(s, b, "rightTimeline", &rr.q, &err)) < 0 && rc != -E2BIG) {
		server_store_error(resp, rc, &err);
		goto cleanup;
	}
	if (!rc)
		rc = buf_puts(b, "}\n");
	if (rc < 0)
		http_error(resp, 500, "cannot render the diff (%s)", strerror(-rc));
cleanup:
	store_profile_free(lf);
	store_profile_free(rf);
	merge_cache_put(s->merges, lm);
	merge_cache_put(s->merges, rm);
	server_range_release(&lr);
	server_range_release(&rr);
	render_focus_release(&focus);
}
