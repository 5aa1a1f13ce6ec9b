/* folded.c: the folded text format (see folded.h; the grammar is in docs/formats.md).
 *
 * The writer renders each location's name once, builds every sample's line into one buffer,
 * sorts the lines and merges equal stacks. The parser interns each distinct frame text once and
 * maps it to a location, so a large file costs one hash lookup per frame. */
#include "profile/folded.h"
#include "lib/alloc.h"
#include "lib/strtab.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 4096

/* ------------------------------------------------------------------ writer */

struct line {
	size_t off, len;
	int64_t value;
};

/* ';' separates frames and a newline ends the line: neither may appear inside a name. */
static int put_name(struct buf *b, const char *s, size_t n)
{
	size_t start = b->len, i;
	int err = buf_append(b, s, n);

	for (i = start; !err && i < b->len; i++) {
		if (b->data[i] == ';')
			b->data[i] = ':';
		else if (b->data[i] == '\n' || b->data[i] == '\r' || b->data[i] == '\0')
			b->data[i] = ' ';
	}
	return err;
}

static int cmp_lines(const void *a, const void *b, void *arg)
{
	const struct line *x = a, *y = b;
	const char *base = arg;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(base + x->off, base + y->off, n);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

int folded_write(const struct profile *p, struct buf *out)
{
	struct buf names = BUF_INIT(out->max), stacks = BUF_INIT(out->max);
	size_t *name_off = xmalloc((p->nlocations + 2) * sizeof(*name_off));
	struct line *lines = NULL;
	size_t nlines = 0, lines_cap = 0, i, j;
	uint32_t comm_key = strtab_find(p->strings, "comm", 4);
	char *name = xmalloc(NAME_MAX_LEN);
	int err = 0;

	/* Names of locations 0..n (0 and unknown ids: "[unknown]"), back to back. */
	for (i = 0; i <= p->nlocations && !err; i++) {
		size_t n = profile_frame_name(p, (uint32_t)i, name, NAME_MAX_LEN);

		name_off[i] = names.len;
		err = put_name(&names, name, n);
	}
	name_off[p->nlocations + 1] = names.len;

	for (i = 0; i < p->nsamples && !err; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *locs = profile_sample_locs(p, s);
		const struct profile_label *labels = profile_sample_labels(p, s);
		struct line *l;
		int first = 1;

		if (s->value <= 0)
			continue;
		ALLOC_GROW(lines, nlines + 1, lines_cap);
		l = &lines[nlines++];
		l->off = stacks.len;
		l->value = s->value;
		for (j = 0; comm_key != UINT32_MAX && j < s->nlabels; j++) {
			if (labels[j].key == comm_key && labels[j].str) {
				const char *comm = profile_get_str(p, labels[j].str);

				err = put_name(&stacks, comm, strlen(comm));
				first = 0;
				break;
			}
		}
		for (j = s->nlocs; j-- > 0 && !err;) {
			uint32_t loc = locs[j] <= p->nlocations ? locs[j] : 0;

			if (!first)
				err = buf_putc(&stacks, ';');
			if (!err)
				err = buf_append(&stacks, names.data + name_off[loc],
						 name_off[loc + 1] - name_off[loc]);
			first = 0;
		}
		if (first && !err)
			err = buf_puts(&stacks, "[unknown]");
		l->len = stacks.len - l->off;
	}
	if (err)
		goto cleanup;
	if (nlines > 1)
		qsort_r(lines, nlines, sizeof(*lines), cmp_lines, stacks.data);
	for (i = 0; i < nlines && !err; i = j) {
		int64_t sum = lines[i].value;

		for (j = i + 1; j < nlines && !cmp_lines(&lines[i], &lines[j], stacks.data); j++) {
			if (__builtin_add_overflow(sum, lines[j].value, &sum))
				sum = INT64_MAX;
		}
		err = buf_append(out, stacks.data + lines[i].off, lines[i].len);
		if (!err)
			err = buf_printf(out, " %" PRId64 "\n", sum);
	}
cleanup:
	buf_release(&names);
	buf_release(&stacks);
	xfree(name_off);
	xfree(lines);
	xfree(name);
	return err;
}

/* ------------------------------------------------------------------ parser */

struct parser {
	struct profile *p;
	struct strtab *frames; /* frame text -> dense id */
	uint32_t *loc_of;      /* frame id -> location id (0 until made) */
	size_t loc_cap;
	struct buf scratch;
};

static const char *scratch_str(struct parser *ps, const char *s, size_t n)
{
	buf_reset(&ps->scratch);
	if (buf_append(&ps->scratch, s, n) < 0)
		return NULL;
	return ps->scratch.data;
}

static uint32_t frame_location(struct parser *ps, const char *s, size_t n)
{
	uint32_t known = strtab_count(ps->frames), id = strtab_intern_len(ps->frames, s, n), fn;
	size_t name_len, file_off, file_len;
	int64_t line = 0;
	enum frame_kind kind = FRAME_NATIVE;
	char *file = NULL;

	if (id < known)
		return ps->loc_of[id];
	ALLOC_GROW(ps->loc_of, (size_t)id + 1, ps->loc_cap);
	if (n > 4 && !memcmp(s + n - 4, "_[k]", 4)) {
		kind = FRAME_KERNEL;
		n -= 4;
	} else if (profile_frame_split(s, n, &name_len, &file_off, &file_len, &line)) {
		if (profile_is_runtime_file(s + file_off, file_len))
			kind = FRAME_PYTHON;
		if (line > 0)
			ps->p->show_lines = 1; /* written back as read */
		file = xstrndup(s + file_off, file_len);
		n = name_len;
	} else if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		kind = FRAME_SPECIAL;
	}
	fn = profile_intern_function(ps->p, kind, scratch_str(ps, s, n), NULL, file, 0);
	xfree(file);
	ps->loc_of[id] = profile_intern_location(ps->p, 0, 0, fn, line);
	return ps->loc_of[id];
}

int folded_parse(const char *text, size_t len, size_t max_lines, struct profile **out,
		 struct errmsg *err)
{
	struct parser ps;
	const char *s = len ? text : "", *end = s + len;
	uint32_t *stack = NULL;
	size_t stack_cap = 0, lineno = 0, nlines = 0;
	int64_t total = 0;
	int rc = 0;

	*out = NULL;
	memset(&ps, 0, sizeof(ps));
	ps.p = profile_new();
	profile_set_type(ps.p, "samples", "count", 0);
	ps.frames = strtab_new();
	buf_init(&ps.scratch, BUF_UNLIMITED);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end, *sp, *f, *fe;
		size_t depth = 0, i;
		int64_t count = 0;

		lineno++;
		while (e > s && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == s)
			goto next;
		if (++nlines > max_lines) {
			rc = errmsg_set(err, -E2BIG, "folded: more than %zu lines", max_lines);
			goto cleanup;
		}
		if (memchr(s, '\0', (size_t)(e - s))) {
			rc = errmsg_set(err, -EINVAL, "folded: line %zu: NUL byte", lineno);
			goto cleanup;
		}
		for (sp = e; sp > s && sp[-1] != ' ' && sp[-1] != '\t'; sp--)
			;
		if (sp == s) {
			rc = errmsg_set(err, -EINVAL, "folded: line %zu: no count", lineno);
			goto cleanup;
		}
		for (f = sp; f < e; f++) {
			if (*f < '0' || *f > '9' || count > (INT64_MAX - (*f - '0')) / 10) {
				rc = errmsg_set(err, -EINVAL, "folded: line %zu: bad count '%.*s'", lineno,
						(int)(e - sp > 32 ? 32 : e - sp), sp);
				goto cleanup;
			}
			count = count * 10 + (*f - '0');
		}
		if (__builtin_add_overflow(total, count, &total)) {
			rc = errmsg_set(err, -ERANGE, "folded: line %zu: counts overflow", lineno);
			goto cleanup;
		}
		for (e = sp; e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
			;
		if (e == s) {
			rc = errmsg_set(err, -EINVAL, "folded: line %zu: empty stack", lineno);
			goto cleanup;
		}
		for (f = s; f <= e; f = fe + 1) {
			fe = memchr(f, ';', (size_t)(e - f));
			if (!fe)
				fe = e;
			if (fe == f) {
				rc = errmsg_set(err, -EINVAL, "folded: line %zu: empty frame", lineno);
				goto cleanup;
			}
			if (depth >= FOLDED_MAX_DEPTH) {
				rc = errmsg_set(err, -E2BIG, "folded: line %zu: more than %d frames",
						lineno, FOLDED_MAX_DEPTH);
				goto cleanup;
			}
			ALLOC_GROW(stack, depth + 1, stack_cap);
			stack[depth++] = frame_location(&ps, f, (size_t)(fe - f));
		}
		/* The model stores stacks leaf first. */
		for (i = 0; i < depth / 2; i++) {
			uint32_t t = stack[i];

			stack[i] = stack[depth - 1 - i];
			stack[depth - 1 - i] = t;
		}
		profile_add_sample(ps.p, stack, depth, NULL, 0, count);
next:
		s = nl ? nl + 1 : end;
	}
cleanup:
	if (rc) {
		profile_free(ps.p);
		ps.p = NULL;
	}
	*out = ps.p;
	strtab_free(ps.frames);
	xfree(ps.loc_of);
	buf_release(&ps.scratch);
	xfree(stack);
	return rc;
}
