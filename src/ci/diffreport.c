/* diffreport.c: markdown, text and JSON layouts of a comparison (see diffreport.h). Markdown is
 * written to read well as a pull-request comment: a verdict line, a small table with the
 * regressions first, the callers that grew with them on one line, new and vanished hot paths,
 * the link to the UI, and the method in a collapsed section. */
#include "ci/diffreport.h"
#include "ci/compare.h"
#include "lib/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NAME_SHOWN 90 /* longer names are cut in the middle in tables */

/* A writer that ran out of room leaves out as it was. */
static int undo_on_error(struct buf *out, size_t len0, int err)
{
	if (!err)
		return 0;
	out->len = len0;
	if (out->data)
		out->data[len0] = '\0';
	return -E2BIG;
}

static size_t top_of(const struct diffreport_ctx *ctx)
{
	return ctx->top ? ctx->top : 10;
}

/* A CPU amount: "1.25 s", "230 ms", "4.1 ms", or samples. */
static const char *amount(char *out, size_t n, double v, int seconds)
{
	double a = fabs(v);

	if (!seconds)
		snprintf(out, n, a >= 100 || v == floor(v) ? "%.0f" : "%.1f", v);
	else if (a >= 100)
		snprintf(out, n, "%.0f s", v);
	else if (a >= 1)
		snprintf(out, n, "%.2f s", v);
	else if (a >= 0.0095 || v == 0)
		snprintf(out, n, "%.0f ms", v * 1000);
	else
		snprintf(out, n, "%.1f ms", v * 1000);
	return out;
}

static const char *change_str(char *out, size_t n, const struct compare_metric *m)
{
	if (m->base == 0 && m->new == 0)
		snprintf(out, n, "0%%");
	else if (isinf(m->change))
		snprintf(out, n, "new");
	else if (m->new == 0)
		snprintf(out, n, "gone");
	else if (fabs(m->change) >= 9.995)
		snprintf(out, n, "%+.0f%%", m->change * 100);
	else
		snprintf(out, n, "%+.1f%%", m->change * 100);
	return out;
}

static const char *pvalue(char *out, size_t n, double p)
{
	if (p < 0.001)
		snprintf(out, n, "p<0.001");
	else
		snprintf(out, n, "p=%.3f", p);
	return out;
}

/* A name for a table cell: cut in the middle when long (on UTF-8 boundaries). */
static const char *shown(char *out, size_t n, const char *name)
{
	size_t len = strlen(name), head = NAME_SHOWN * 2 / 3, tail = NAME_SHOWN - head - 1, t;

	if (len <= NAME_SHOWN || n < NAME_SHOWN + 8) {
		snprintf(out, n, "%s", name);
		return out;
	}
	while (head > 0 && ((unsigned char)name[head] & 0xc0) == 0x80)
		head--;
	t = len - tail;
	while (t < len && ((unsigned char)name[t] & 0xc0) == 0x80)
		t++;
	snprintf(out, n, "%.*s\xe2\x80\xa6%s", (int)head, name, name + t);
	return out;
}

/* s as inline code: backticks inside get a double fence; in a table, '|' is escaped. */
static int md_code_in(struct buf *b, const char *s, int table)
{
	int fence2 = strchr(s, '`') != NULL, err = 0;

	err |= buf_puts(b, fence2 ? "`` " : "`");
	for (; *s && !err; s++) {
		if (*s == '|' && table)
			err |= buf_puts(b, "\\|");
		else
			err |= buf_putc(b, *s == '\n' || *s == '\r' ? ' ' : *s);
	}
	err |= buf_puts(b, fence2 ? " ``" : "`");
	return err ? -1 : 0;
}

/* A function name in a table cell or list: shortened, as inline code. */
static int md_code(struct buf *b, const char *name)
{
	char tmp[NAME_SHOWN * 4 + 16];

	return md_code_in(b, shown(tmp, sizeof(tmp), name), 1);
}

const char *diffreport_method(const struct compare_result *r)
{
	if (r->welch && r->prior_df > 0)
		return "moderated t-test on each function's CPU time per run (its run-to-run "
		       "variance, relative to sampling noise and at least that, shrunk toward the "
		       "typical one of all functions), p-values adjusted with Holm's method over "
		       "every function tested";
	if (r->welch)
		return "Welch's t-test on each function's CPU time per run (each side's variance at "
		       "least its sampling variance), p-values adjusted with Holm's method over every "
		       "function tested";
	return "exact test of two Poisson counts (the new side's samples of a function are "
	       "binomial given both sides' samples and sampling exposure; counts divided by the "
	       "dispersion the other functions show between the two runs), p-values adjusted with "
	       "Holm's method over every function tested";
}

static int total_line(struct buf *b, const struct compare_result *r, int md)
{
	char x[32], y[32], c[32];
	int err = 0;

	err |= buf_printf(b, "Base: %zu run%s, %s%s per run; new: %zu run%s, %s (%s",
			  r->runs[0], r->runs[0] == 1 ? "" : "s",
			  amount(x, sizeof(x), r->total.base, r->seconds),
			  r->seconds ? " of CPU" : " samples", r->runs[1], r->runs[1] == 1 ? "" : "s",
			  amount(y, sizeof(y), r->total.new, r->seconds),
			  change_str(c, sizeof(c), &r->total));
	if (r->total.tested)
		err |= buf_printf(b, ", %s", r->total.verdict == COMPARE_NOISE ? "within noise" :
				  compare_verdict_name(r->total.verdict));
	err |= buf_puts(b, ").");
	if (r->scale != 1)
		err |= buf_printf(b, " Changes are measured after scaling the base by %.3f, the "
				  "typical change of all functions%s", r->scale,
				  md ? " (`--normalize`)." : " (--normalize).");
	return err ? -1 : 0;
}

static int selected_for_table(const struct compare_result *r, const struct compare_row *row)
{
	/* Callers whose total grew only because a callee did are listed on one line instead. */
	if (row->self.verdict != COMPARE_REGRESSION && row->total.verdict == COMPARE_REGRESSION)
		return 0;
	/* Unchanged functions are context: only those where at least 1% of the time goes. */
	if (row->verdict == COMPARE_NOISE || row->verdict == COMPARE_SMALL)
		return row->self.base >= 0.01 * r->total.base || row->self.new >= 0.01 * r->total.new;
	return 1;
}

static int is_caller(const struct compare_row *row)
{
	return row->self.verdict != COMPARE_REGRESSION && row->total.verdict == COMPARE_REGRESSION;
}

static int md_row(struct buf *b, const struct compare_result *r, const struct compare_row *row)
{
	char a[32], n[32], c[32], ta[32], tn[32], tc[32], p[32], verdict[64] = "";
	int err = 0, bold_self = row->self.verdict == COMPARE_REGRESSION,
	    bold_total = row->total.verdict == COMPARE_REGRESSION;
	const struct compare_metric *m = row->self.verdict == row->verdict ? &row->self : &row->total;

	if (row->verdict != COMPARE_NOISE)
		snprintf(verdict, sizeof(verdict), "%s%s%s (%s)",
			 row->verdict == COMPARE_REGRESSION ? "**" : "",
			 compare_verdict_name(row->verdict),
			 row->verdict == COMPARE_REGRESSION ? "**" : "", pvalue(p, sizeof(p), m->p_adj));

	err |= buf_puts(b, "| ");
	err |= md_code(b, row->name);
	err |= buf_printf(b, " | %s → %s | %s%s%s | %s → %s | %s%s%s | %s |\n",
			  amount(a, sizeof(a), row->self.base, r->seconds),
			  amount(n, sizeof(n), row->self.new, r->seconds), bold_self ? "**" : "",
			  change_str(c, sizeof(c), &row->self), bold_self ? "**" : "",
			  amount(ta, sizeof(ta), row->total.base, r->seconds),
			  amount(tn, sizeof(tn), row->total.new, r->seconds), bold_total ? "**" : "",
			  change_str(tc, sizeof(tc), &row->total), bold_total ? "**" : "", verdict);
	return err ? -1 : 0;
}

static int md_paths(struct buf *b, const struct compare_result *r, int added)
{
	size_t i, j, shown_n = 0;
	char v[32];
	int err = 0;

	for (i = 0; i < r->npaths && !err; i++) {
		const struct compare_path *p = &r->paths[i];

		if (p->added != added)
			continue;
		if (shown_n == 0)
			err |= buf_printf(b, "\n**%s hot paths** (%s):\n\n",
					  added ? "New" : "Vanished",
					  added ? "only in the new runs" : "only in the base runs");
		if (++shown_n > 5) {
			err |= buf_puts(b, "- …\n");
			break;
		}
		err |= buf_puts(b, "- ");
		/* The root and the last frames say the most; the middle of a deep path is cut. */
		for (j = 0; j < p->nframes && !err; j++) {
			if (p->nframes > 6 && j >= 2 && j < p->nframes - 3) {
				if (j == 2)
					err |= buf_puts(b, " → …");
				continue;
			}
			if (j)
				err |= buf_puts(b, " → ");
			err |= md_code(b, p->frames[j]);
		}
		err |= buf_printf(b, ": %.1f%% of the %s runs' CPU (%s per run)\n", p->share * 100,
				  added ? "new" : "base", amount(v, sizeof(v), p->value, r->seconds));
	}
	return err ? -1 : 0;
}

int diffreport_markdown(const struct compare_result *r, const struct diffreport_ctx *ctx,
			struct buf *out)
{
	size_t i, rows = 0, callers = 0, top = top_of(ctx);
	size_t len0 = out->len;
	char c[32];
	int err = 0;

	if (r->regressed) {
		const struct compare_row *first = r->nrows ? &r->rows[0] : NULL;

		if (first && first->self.verdict == COMPARE_REGRESSION) {
			err |= buf_puts(out, "### scorch: CPU regression in ");
			err |= md_code(out, first->name);
			err |= buf_printf(out, " (%s self time)\n\n", change_str(c, sizeof(c), &first->self));
		} else if (first && first->total.verdict == COMPARE_REGRESSION) {
			err |= buf_puts(out, "### scorch: CPU regression under ");
			err |= md_code(out, first->name);
			err |= buf_printf(out, " (%s total time)\n\n", change_str(c, sizeof(c), &first->total));
		} else {
			err |= buf_printf(out, "### scorch: CPU regression (%s in total)\n\n",
					  change_str(c, sizeof(c), &r->total));
		}
	} else {
		err |= buf_puts(out, "### scorch: no CPU regression\n\n");
	}

	if (r->self_regressions)
		err |= buf_printf(out, "**%zu function%s got slower** ", r->self_regressions,
				  r->self_regressions == 1 ? "" : "s");
	else if (r->total_regressions)
		err |= buf_printf(out, "**%zu function%s' total time grew** ", r->total_regressions,
				  r->total_regressions == 1 ? "" : "s");
	else
		err |= buf_puts(out, "No function got slower ");
	err |= buf_printf(out, "beyond %+.0f%% and %.1f%% of the run's CPU, at a %.0f%% chance of "
			  "any false alarm.", r->opts.threshold * 100, r->opts.min_impact * 100,
			  r->opts.alpha * 100);
	if (r->improvements)
		err |= buf_printf(out, " %zu got faster.", r->improvements);
	err |= buf_puts(out, " ");
	err |= total_line(out, r, 1);
	err |= buf_puts(out, "\n\n");

	if (r->nrows) {
		err |= buf_printf(out, "| function | self: base → new | change | total: base → new | change | |\n"
				  "|---|---:|---:|---:|---:|---|\n");
		for (i = 0; i < r->nrows && rows < top && !err; i++) {
			if (!selected_for_table(r, &r->rows[i]))
				continue;
			err |= md_row(out, r, &r->rows[i]);
			rows++;
		}
	}
	for (i = 0; i < r->nrows && !err; i++) {
		const struct compare_row *row = &r->rows[i];

		if (!is_caller(row))
			continue;
		if (callers == 0)
			err |= buf_puts(out, "\nCallers whose total grew with it: ");
		if (++callers > 8) {
			err |= buf_puts(out, ", …");
			break;
		}
		if (callers > 1)
			err |= buf_puts(out, ", ");
		err |= md_code(out, row->name);
		err |= buf_printf(out, " (%s)", change_str(c, sizeof(c), &row->total));
	}
	if (callers)
		err |= buf_puts(out, "\n");
	err |= md_paths(out, r, 1);
	err |= md_paths(out, r, 0);
	if (ctx->ui_url)
		err |= buf_printf(out, "\n[Open this comparison in the scorch UI](%s)\n", ctx->ui_url);

	err |= buf_puts(out, "\n<details><summary>How this was measured</summary>\n\n");
	err |= buf_puts(out, "Base: ");
	err |= md_code_in(out, ctx->base_name ? ctx->base_name : "base", 0);
	err |= buf_puts(out, ". New: ");
	err |= md_code_in(out, ctx->new_name ? ctx->new_name : "new", 0);
	err |= buf_printf(out, ".\n\nEach function's self time (samples ending in it) and total "
			  "time (samples containing it) per run, compared with the %s; %zu tests, "
			  "family-wise alpha %g. A regression is a significant growth of at least "
			  "%+.0f%% that is also at least %.1f%% of the base run's CPU. ",
			  diffreport_method(r), r->tests, r->opts.alpha,
			  r->opts.threshold * 100, r->opts.min_impact * 100);
	if (!r->welch && r->dispersion > 1)
		err |= buf_printf(out, "Between the two runs, the functions' differences have %.1f "
				  "times the variance sampling explains; the test allows for it. ",
				  r->dispersion);
	if (r->untested)
		err |= buf_printf(out, "%zu function%s under %.1f%% of the CPU %s not tested. ",
				  r->untested, r->untested == 1 ? "" : "s", r->opts.min_share * 100,
				  r->untested == 1 ? "was" : "were");
	if (!r->seconds)
		err |= buf_puts(out, "The profiles carry no sampling rate, so values are samples. ");
	if (r->paths_truncated)
		err |= buf_puts(out, "Too many distinct call paths: the deepest were not compared. ");
	err |= buf_puts(out, "\n\n</details>\n");
	return undo_on_error(out, len0, err);
}

/* ---- text ---------------------------------------------------------------------------------- */

static const char *text_verdict(const struct compare_row *row)
{
	if (row->self.verdict == COMPARE_REGRESSION)
		return "REGRESSION";
	if (row->total.verdict == COMPARE_REGRESSION)
		return "REGRESSION (total)";
	return row->verdict == COMPARE_NOISE ? "" : compare_verdict_name(row->verdict);
}

int diffreport_text(const struct compare_result *r, const struct diffreport_ctx *ctx,
		    struct buf *out)
{
	size_t i, j, len0 = out->len, top = top_of(ctx);
	char a[32], n[32], c[32], ta[32], tn[32], tc[32], name[NAME_SHOWN * 4 + 16];
	int err = 0;

	err |= buf_printf(out, "%s: ", r->regressed ? "REGRESSION" : "no regression");
	err |= buf_printf(out, "%zu function%s slower, %zu with a slower total only, %zu faster, "
			  "%zu new, %zu gone (threshold %+.0f%%, min impact %.1f%%, alpha %g)\n",
			  r->self_regressions, r->self_regressions == 1 ? "" : "s",
			  r->total_regressions, r->improvements, r->added, r->gone,
			  r->opts.threshold * 100, r->opts.min_impact * 100, r->opts.alpha);
	err |= buf_printf(out, "base: %s\nnew:  %s\n", ctx->base_name ? ctx->base_name : "base",
			  ctx->new_name ? ctx->new_name : "new");
	err |= total_line(out, r, 0);
	err |= buf_printf(out, "\ntest: %s.\n\n", diffreport_method(r));
	if (r->nrows) {
		err |= buf_printf(out, "%-40s %10s %10s %8s  %10s %10s %8s  %s\n", "function",
				  "self base", "self new", "change", "total base", "total new",
				  "change", "verdict");
		for (i = 0; i < r->nrows && i < top && !err; i++) {
			const struct compare_row *row = &r->rows[i];

			err |= buf_printf(out, "%-40s %10s %10s %8s%c %10s %10s %8s%c %s\n",
					  shown(name, sizeof(name), row->name),
					  amount(a, sizeof(a), row->self.base, r->seconds),
					  amount(n, sizeof(n), row->self.new, r->seconds),
					  change_str(c, sizeof(c), &row->self),
					  row->self.verdict != COMPARE_NOISE ? '*' : ' ',
					  amount(ta, sizeof(ta), row->total.base, r->seconds),
					  amount(tn, sizeof(tn), row->total.new, r->seconds),
					  change_str(tc, sizeof(tc), &row->total),
					  row->total.verdict != COMPARE_NOISE ? '*' : ' ', text_verdict(row));
		}
		if (r->nrows > top)
			err |= buf_printf(out, "(%zu more; --top N shows more)\n", r->nrows - top);
		err |= buf_puts(out, "* significant\n");
	}
	for (i = 0; i < r->npaths && !err; i++) {
		const struct compare_path *p = &r->paths[i];

		err |= buf_printf(out, "\n%s hot path (%.1f%% of the %s runs, %s per run):\n  ",
				  p->added ? "new" : "vanished", p->share * 100, p->added ? "new" : "base",
				  amount(a, sizeof(a), p->value, r->seconds));
		for (j = 0; j < p->nframes && !err; j++)
			err |= buf_printf(out, "%s%s", j ? ";" : "", p->frames[j]);
		err |= buf_putc(out, '\n');
	}
	if (ctx->ui_url)
		err |= buf_printf(out, "\nUI: %s\n", ctx->ui_url);
	return undo_on_error(out, len0, err);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static int json_metric(struct buf *b, const char *key, const struct compare_metric *m)
{
	int err = 0;

	err |= buf_printf(b, "\"%s\":{\"base\":", key);
	err |= json_double(b, m->base);
	err |= buf_puts(b, ",\"new\":");
	err |= json_double(b, m->new);
	err |= buf_puts(b, ",\"change\":");
	err |= json_double(b, m->change); /* infinite (new) is null */
	err |= buf_puts(b, ",\"impact\":");
	err |= json_double(b, m->impact);
	err |= buf_puts(b, ",\"p\":");
	err |= json_double(b, m->p);
	err |= buf_puts(b, ",\"p_adjusted\":");
	err |= json_double(b, m->p_adj);
	err |= buf_printf(b, ",\"tested\":%s,\"verdict\":", m->tested ? "true" : "false");
	err |= json_str(b, compare_verdict_name(m->verdict));
	err |= buf_putc(b, '}');
	return err ? -1 : 0;
}

int diffreport_json(const struct compare_result *r, const struct diffreport_ctx *ctx,
		    struct buf *out)
{
	size_t i, j, len0 = out->len;
	int err = 0;

	err |= buf_printf(out, "{\"regressed\":%s,\"base\":", r->regressed ? "true" : "false");
	err |= json_str(out, ctx->base_name ? ctx->base_name : "base");
	err |= buf_puts(out, ",\"new\":");
	err |= json_str(out, ctx->new_name ? ctx->new_name : "new");
	err |= buf_printf(out, ",\"runs\":{\"base\":%zu,\"new\":%zu},\"unit\":\"%s\",\"test\":\"%s\","
			  "\"tests\":%zu,\"alpha\":", r->runs[0], r->runs[1],
			  r->seconds ? "seconds" : "samples",
			  r->welch ? (r->prior_df > 0 ? "moderated-t" : "welch") : "poisson", r->tests);
	err |= json_double(out, r->opts.alpha);
	err |= buf_puts(out, ",\"threshold\":");
	err |= json_double(out, r->opts.threshold);
	err |= buf_puts(out, ",\"min_impact\":");
	err |= json_double(out, r->opts.min_impact);
	err |= buf_puts(out, ",\"scale\":");
	err |= json_double(out, r->scale);
	if (!r->welch) {
		err |= buf_puts(out, ",\"dispersion\":");
		err |= json_double(out, r->dispersion);
	}
	if (r->welch && r->prior_df > 0) {
		err |= buf_puts(out, ",\"prior\":{\"df\":");
		err |= json_double(out, isinf(r->prior_df) ? 1e9 : r->prior_df);
		err |= buf_puts(out, ",\"dispersion\":");
		err |= json_double(out, r->prior_dispersion);
		err |= buf_putc(out, '}');
	}
	err |= buf_putc(out, ',');
	err |= json_metric(out, "total", &r->total);
	err |= buf_printf(out, ",\"counts\":{\"self_regressions\":%zu,\"total_regressions\":%zu,"
			  "\"improvements\":%zu,\"new\":%zu,\"gone\":%zu,\"untested\":%zu}",
			  r->self_regressions, r->total_regressions, r->improvements, r->added,
			  r->gone, r->untested);
	if (ctx->ui_url) {
		err |= buf_puts(out, ",\"ui\":");
		err |= json_str(out, ctx->ui_url);
	}
	err |= buf_puts(out, ",\"functions\":[");
	for (i = 0; i < r->nrows && !err; i++) {
		const struct compare_row *row = &r->rows[i];

		err |= buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
		err |= json_str(out, row->name);
		err |= buf_puts(out, ",\"verdict\":");
		err |= json_str(out, compare_verdict_name(row->verdict));
		err |= buf_putc(out, ',');
		err |= json_metric(out, "self", &row->self);
		err |= buf_putc(out, ',');
		err |= json_metric(out, "total", &row->total);
		err |= buf_putc(out, '}');
	}
	err |= buf_puts(out, "],\"paths\":[");
	for (i = 0; i < r->npaths && !err; i++) {
		const struct compare_path *p = &r->paths[i];

		err |= buf_printf(out, "%s{\"kind\":\"%s\",\"share\":", i ? "," : "",
				  p->added ? "new" : "vanished");
		err |= json_double(out, p->share);
		err |= buf_puts(out, ",\"value\":");
		err |= json_double(out, p->value);
		err |= buf_puts(out, ",\"p\":");
		err |= json_double(out, p->p);
		err |= buf_puts(out, ",\"frames\":[");
		for (j = 0; j < p->nframes && !err; j++) {
			if (j)
				err |= buf_putc(out, ',');
			err |= json_str(out, p->frames[j]);
		}
		err |= buf_puts(out, "]}");
	}
	err |= buf_printf(out, "],\"paths_truncated\":%s}\n", r->paths_truncated ? "true" : "false");
	return undo_on_error(out, len0, err);
}
