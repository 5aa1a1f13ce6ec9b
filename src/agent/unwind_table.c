/* unwind_table.c: per-file unwind tables (see unwind_table.h).
 *
 * Why a build is linear: .eh_frame is walked in the order of its .eh_frame_hdr index, so its
 * rows arrive sorted (rows of one FDE ascend, and the index sorts the FDEs); a level whose rows
 * do not arrive sorted (no index, .debug_frame, hostile files) is merge sorted by its natural
 * runs. The first level is cut of its overlaps in place; each later level (small: PLT stubs,
 * the entry point, the frame-pointer rule) keeps only the pieces the levels before it left
 * uncovered; one pass merges the levels into entries. Rows are 16 bytes and their vector is
 * sized from the section up front, so a build touches little more memory than its result. */
#include "agent/unwind_table.h"
#include "agent/cfi.h"
#include "agent/elf.h"
#include "agent/gopclntab.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A row: [start, start + len) with one rule (struct unwind_entry without its pc, packed). */
struct row {
	uint64_t start;
	uint32_t len;
	uint32_t rule;
};

/* Sources in priority order (lower wins where they overlap). LV_GO_RUNTIME, the Go runtime's
 * own functions whose frames no stack-pointer delta describes (add_go_runtime()), wins over
 * all of them, but as a mask: its rows are added first and the other levels' rows are cut
 * around them as they are added (add_row()), so that the first level with rows is still a big
 * one, cut in place (resolve()), not a copy. */
enum {
	LV_EH_FRAME, LV_DEBUG_FRAME, LV_DEBUG_FILE, LV_STUBS, LV_FP, LV_GO_RUNTIME, LV__COUNT
};

struct level {
	size_t first, n;    /* its rows: b->rows[first, first + n) */
	int unsorted;
	const struct row *res; /* resolved: sorted, disjoint from every level before it */
	struct row *owned;  /* res when it is not in b->rows */
	size_t nres;
};

struct builder {
	struct row *rows;
	size_t n, cap;
	struct level lv[LV__COUNT];
	int cur;
	int src;
	struct unwind_table_stats *stats;
	int full;            /* more than UNWIND_TABLE_MAX_ROWS rows */
	int huge;            /* a row longer than 4 GiB: no table can hold it */
	int clip;            /* rows are cut to [lo, hi): the executable segments' span */
	uint64_t lo, hi;
	size_t mask_first, nmask; /* rows[mask_first, +nmask): LV_GO_RUNTIME's, sorted, disjoint:
				   * no other level's row covers them */
};

static uint32_t rule_pack(const struct unwind_entry *e)
{
	return (uint32_t)e->off | (uint32_t)e->kind << 16 | (uint32_t)(uint8_t)e->rbp << 24;
}

static void rule_unpack(uint32_t r, struct unwind_entry *e)
{
	e->pc = 0;
	e->off = (uint16_t)r;
	e->kind = (uint8_t)(r >> 16);
	e->rbp = (int8_t)(uint8_t)(r >> 24);
}

static void set_level(struct builder *b, int lv)
{
	b->cur = lv;
	b->lv[lv].first = b->n;
	b->lv[lv].n = 0;
}

/* Make room for want rows in all (bounded by UNWIND_TABLE_MAX_ROWS). Pages of the vector that
 * are never written cost no memory, so a generous estimate is cheap. */
static int reserve(struct builder *b, size_t want)
{
	struct row *nr;

	if (want > UNWIND_TABLE_MAX_ROWS)
		want = UNWIND_TABLE_MAX_ROWS;
	if (want <= b->cap)
		return 0;
	nr = try_realloc(b->rows, want * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	b->rows = nr;
	b->cap = want;
	return 0;
}

static int add_row_raw(struct builder *b, uint64_t start, uint64_t end, uint32_t rule)
{
	struct level *l = &b->lv[b->cur];
	struct row *r;

	if (end <= start)
		return 0;
	if (b->clip && (start < b->lo || end > b->hi)) {
		b->stats->outside++;
		start = start < b->lo ? b->lo : start;
		end = end > b->hi ? b->hi : end;
		if (end <= start)
			return 0;
	}
	if (end - start > UINT32_MAX) {
		b->huge = 1;
		return -E2BIG;
	}
	if (b->n >= UNWIND_TABLE_MAX_ROWS) {
		b->full = 1;
		return -E2BIG;
	}
	if (b->n == b->cap && reserve(b, b->cap ? b->cap * 2 : 1024))
		return -ENOMEM;
	if (l->n && start < b->rows[b->n - 1].start)
		l->unsorted = 1;
	r = &b->rows[b->n++];
	r->start = start;
	r->len = (uint32_t)(end - start);
	r->rule = rule;
	l->n++;
	return 0;
}

/* Add [start, end) with rule, less the ranges of the mask (LV_GO_RUNTIME). */
static int add_row(struct builder *b, uint64_t start, uint64_t end, uint32_t rule)
{
	size_t lo = 0, hi = b->nmask;
	int rc;

	if (!b->nmask || b->cur == LV_GO_RUNTIME)
		return add_row_raw(b, start, end, rule);
	/* the first mask row that ends after start */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct row *m = &b->rows[b->mask_first + mid];

		if (m->start + m->len <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < b->nmask && start < end; lo++) {
		const struct row *m = &b->rows[b->mask_first + lo];

		if (m->start >= end)
			break;
		if (m->start > start && (rc = add_row_raw(b, start, m->start, rule)))
			return rc;
		if (m->start + m->len > start)
			start = m->start + m->len;
	}
	return start < end ? add_row_raw(b, start, end, rule) : 0;
}

/* The error of a failed add_row(), as a message. */
static int add_error(struct builder *b, struct errmsg *err)
{
	if (b->huge)
		return errmsg_set(err, -E2BIG, "unwind rows span more than 4 GiB");
	if (b->full)
		return errmsg_set(err, -E2BIG, "more than %u unwind rows", UNWIND_TABLE_MAX_ROWS);
	return errmsg_set(err, -ENOMEM, "out of memory for unwind rows");
}

/* The page index: one pass over the entries, bucket by bucket (why: bpf/unwind.h, PAGE
 * INDEX). */
void unwind_table_index(struct unwind_entry *t, uint32_t count, uint8_t *shift,
			uint32_t *nbuckets)
{
	uint32_t *words = (uint32_t *)(t + count), max = UNW_INDEX_WORDS(count), nb, b, i = 0;
	uint64_t last;
	unsigned sh = 2;

	*shift = 0;
	*nbuckets = 0;
	if (!max)
		return;
	last = t[count - 1].pc;
	while (sh < 31 && (last >> sh) + 2 > max)
		sh++;
	nb = (uint32_t)(last >> sh) + 2;
	if (nb > max)
		return;
	for (b = 0; b < nb; b++) {
		uint64_t at = (uint64_t)b << sh;

		while (i + 1 < count && t[i + 1].pc <= at)
			i++;
		words[b] = i;
	}
	/* the last slot's unused half, if any */
	if (nb & 1)
		words[nb] = i;
	*shift = (uint8_t)sh;
	*nbuckets = nb;
}

int unwind_rule_from_cfi(const struct cfi_row *row, struct unwind_entry *out)
{
	memset(out, 0, sizeof(*out));
	if (row->signal) {
		out->kind = UNW_SIGNAL;
		return 1;
	}
	if (row->ra_kind == CFI_R_UNDEF) {
		out->kind = UNW_STOP;
		return 1;
	}
	if (row->ra_kind == CFI_R_REG && row->ra_off == UNW_DWARF_RDI &&
	    row->cfa_kind == CFI_CFA_REG && row->cfa_reg == CFI_REG_RSP && row->cfa_off >= 0 &&
	    row->cfa_off <= 0xff && (row->rbp_kind == CFI_R_SAME || row->rbp_kind == CFI_R_UNDEF)) {
		/* the return address in rdi (glibc's __vfork, between its pop and push) */
		out->kind = UNW_RA_REG;
		out->off = (uint16_t)row->cfa_off;
		out->rbp = UNW_DWARF_RDI;
		return 1;
	}
	if (row->ra_kind != CFI_R_OFFSET || row->ra_off != -8)
		goto invalid;
	switch (row->cfa_kind) {
	case CFI_CFA_REG:
		if (row->cfa_off < 0 || row->cfa_off >= (1 << 21) ||
		    (row->cfa_off > 0xffff && row->cfa_off % 8))
			goto invalid;
		if (row->cfa_reg == CFI_REG_RSP)
			out->kind = UNW_CFA_RSP;
		else if (row->cfa_reg == CFI_REG_RBP)
			out->kind = UNW_CFA_RBP;
		else
			goto invalid; /* e.g. the DRAP register in a realigning prologue */
		if (row->cfa_off > 0xffff) {
			/* a big frame (rustc: 540,080 bytes): in 8-byte units */
			out->kind |= UNW_F_BIG | (uint8_t)(((row->cfa_off >> 3) >> 16) << 4);
			out->off = (uint16_t)(row->cfa_off >> 3);
		} else {
			out->off = (uint16_t)row->cfa_off;
		}
		break;
	case CFI_CFA_PLT:
		if (row->cfa_off < 0 || row->cfa_off > 0xff)
			goto invalid;
		out->kind = UNW_PLT;
		out->off = (uint16_t)(row->cfa_off | ((uint16_t)row->plt_thresh << 8));
		break;
	case CFI_CFA_DEREF:
		if (row->cfa_reg != CFI_REG_RBP || row->cfa_off < -32768 || row->cfa_off > 32767)
			goto invalid;
		out->kind = UNW_DEREF_RBP;
		out->off = (uint16_t)(int16_t)row->cfa_off;
		break;
	default:
		goto invalid;
	}
	switch (row->rbp_kind) {
	case CFI_R_SAME:
	case CFI_R_UNDEF:
		if (out->kind == UNW_DEREF_RBP)
			goto invalid; /* its rbp field always names a slot */
		out->rbp = 0;
		break;
	case CFI_R_OFFSET:
		if (out->kind == UNW_DEREF_RBP || row->rbp_off % 8 || row->rbp_off >= 0 ||
		    row->rbp_off < -128 * 8)
			goto invalid;
		out->rbp = (int8_t)(row->rbp_off / 8);
		break;
	case CFI_R_AT_RBP:
		if (out->kind != UNW_DEREF_RBP || row->rbp_off % 8 || row->rbp_off < -128 * 8 ||
		    row->rbp_off > 127 * 8)
			goto invalid;
		out->rbp = (int8_t)(row->rbp_off / 8);
		break;
	default:
		goto invalid;
	}
	return 1;
invalid:
	memset(out, 0, sizeof(*out));
	out->kind = UNW_INVALID;
	return 0;
}

static int on_cfi_row(void *arg, const struct cfi_row *row)
{
	struct builder *b = arg;
	struct unwind_entry rule;

	if (!unwind_rule_from_cfi(row, &rule))
		b->stats->unsupported++;
	return add_row(b, row->start, row->end, rule_pack(&rule)) ? 1 : 0;
}

/* Rows of one CFI section; hdr (may be NULL) is .eh_frame's index. */
static int add_cfi(struct builder *b, const uint8_t *data, size_t size, uint64_t vaddr, int kind,
		   const uint8_t *hdr, size_t hdr_size, uint64_t hdr_vaddr, int src,
		   struct errmsg *err)
{
	struct cfi_stats cs;
	size_t before = b->n;
	int rc = -ENOENT;

	if (!data || !size)
		return 0;
	/* About one row per 5-7 bytes of CFI in real files: reserve one per 4. */
	if (reserve(b, b->n + size / 4 + 64))
		return errmsg_set(err, -ENOMEM, "out of memory for unwind rows");
	memset(&cs, 0, sizeof(cs));
	if (kind == CFI_EH_FRAME && hdr)
		rc = cfi_parse_sorted(data, size, vaddr, hdr, hdr_size, hdr_vaddr, on_cfi_row, b,
				      &cs);
	if (rc == -ENOENT)
		rc = cfi_parse(data, size, vaddr, kind, on_cfi_row, b, &cs, NULL);
	b->stats->fdes += cs.fdes;
	b->stats->bad_entries += cs.bad_entries;
	if (rc > 0)
		return add_error(b, err);
	/* A section we cannot walk at all is not fatal: other sources may cover the file. */
	if (b->n > before)
		b->src |= src;
	return 0;
}

static size_t run_end(const struct row *v, size_t i, size_t n)
{
	for (i++; i < n && v[i].start >= v[i - 1].start; i++)
		;
	return i;
}

/* Sort rows by start, stably (an earlier row wins an overlap): bottom-up merges of natural
 * runs, O(n log runs). */
static int sort_rows(struct row *v, size_t n)
{
	struct row *tmp = try_malloc(n * sizeof(*tmp)), *src = v, *dst = tmp, *t;
	size_t runs;

	if (!tmp)
		return -ENOMEM;
	do {
		size_t i = 0;

		runs = 0;
		while (i < n) {
			size_t m = run_end(src, i, n), e = m < n ? run_end(src, m, n) : n;
			size_t a = i, c = m, k = i;

			while (a < m && c < e)
				dst[k++] = src[c].start < src[a].start ? src[c++] : src[a++];
			while (a < m)
				dst[k++] = src[a++];
			while (c < e)
				dst[k++] = src[c++];
			i = e;
			runs++;
		}
		t = src;
		src = dst;
		dst = t;
	} while (runs > 1);
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	xfree(tmp);
	return 0;
}

static int sort_level(struct builder *b, struct level *l)
{
	if (!l->unsorted)
		return 0;
	if (sort_rows(b->rows + l->first, l->n))
		return -ENOMEM;
	l->unsorted = 0;
	return 0;
}

static uint64_t row_end(const struct row *r)
{
	return r->start + r->len;
}

static int push_piece(struct level *l, size_t *cap, const struct row *r, uint64_t start,
		      uint64_t end)
{
	if (l->nres == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct row *nv = try_realloc(l->owned, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->owned = nv;
		*cap = ncap;
	}
	l->owned[l->nres].start = start;
	l->owned[l->nres].len = (uint32_t)(end - start);
	l->owned[l->nres].rule = r->rule;
	l->nres++;
	return 0;
}

/* Resolve every level: a level only fills what the levels before it left uncovered; within a
 * level an overlapping row (sloppy CFI) loses to the earlier. */
static int resolve(struct builder *b)
{
	struct { const struct row *v; size_t n, i; } prev[LV__COUNT];
	int nprev = 0, lv, k;

	for (lv = 0; lv < LV__COUNT; lv++) {
		struct level *l = &b->lv[lv];
		struct row *v;
		uint64_t covered = 0;
		size_t i, m = 0, cap = 0;
		int any = 0;

		if (!l->n)
			continue;
		v = b->rows + l->first;
		if (sort_level(b, l))
			return -ENOMEM;
		if (!nprev) {
			/* The first level: cut in place (this vector is the peak of a build's
			 * memory; no copy). */
			for (i = 0; i < l->n; i++) {
				uint64_t s = v[i].start, e = row_end(&v[i]);

				if (any && s < covered)
					s = covered;
				if (s >= e)
					continue;
				v[m].start = s;
				v[m].len = (uint32_t)(e - s);
				v[m].rule = v[i].rule;
				m++;
				covered = e;
				any = 1;
			}
			l->res = v;
			l->nres = m;
		} else {
			/* each level walks the levels before it from their start */
			for (k = 0; k < nprev; k++)
				prev[k].i = 0;
			for (i = 0; i < l->n; i++) {
				uint64_t s = v[i].start, e = row_end(&v[i]);

				if (any && s < covered)
					s = covered;
				if (s >= e)
					continue;
				covered = e;
				any = 1;
				while (s < e) {
					const struct row *best = NULL;

					/* the earliest interval of the levels before that
					 * reaches past s */
					for (k = 0; k < nprev; k++) {
						while (prev[k].i < prev[k].n &&
						       row_end(&prev[k].v[prev[k].i]) <= s)
							prev[k].i++;
						if (prev[k].i < prev[k].n &&
						    prev[k].v[prev[k].i].start < e &&
						    (!best || prev[k].v[prev[k].i].start < best->start))
							best = &prev[k].v[prev[k].i];
					}
					if (!best) {
						if (push_piece(l, &cap, &v[i], s, e))
							return -ENOMEM;
						break;
					}
					if (best->start > s && push_piece(l, &cap, &v[i], s, best->start))
						return -ENOMEM;
					s = row_end(best);
				}
			}
			l->res = l->owned;
		}
		if (l->nres) {
			prev[nprev].v = l->res;
			prev[nprev].n = l->nres;
			prev[nprev].i = 0;
			nprev++;
		}
	}
	return 0;
}

static int same_rule(const struct unwind_entry *a, const struct unwind_entry *b)
{
	return a->kind == b->kind && a->off == b->off && a->rbp == b->rbp;
}

#define UT_PAD_GAP 32

struct out {
	struct unwind_entry *e;
	size_t n, cap;
	uint64_t base;
	int err;
};

static void out_put(struct out *o, uint64_t pc, const struct unwind_entry *rule)
{
	struct unwind_entry *e;

	if (o->err)
		return;
	if (o->n && same_rule(&o->e[o->n - 1], rule))
		return;
	if (o->n && o->e[o->n - 1].pc == pc - o->base) {
		/* an empty range: the new rule replaces it */
		e = &o->e[o->n - 1];
		*e = *rule;
		e->pc = (uint32_t)(pc - o->base);
		if (o->n >= 2 && same_rule(&o->e[o->n - 2], e))
			o->n--;
		return;
	}
	if (o->n == o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 1024;
		struct unwind_entry *ne;

		if (o->cap >= UNW_MAX_FILE_ENTRIES) {
			o->err = -E2BIG;
			return;
		}
		if (ncap > UNW_MAX_FILE_ENTRIES)
			ncap = UNW_MAX_FILE_ENTRIES;
		ne = try_realloc(o->e, ncap * sizeof(*ne));
		if (!ne) {
			o->err = -ENOMEM;
			return;
		}
		o->e = ne;
		o->cap = ncap;
	}
	e = &o->e[o->n++];
	*e = *rule;
	e->pc = (uint32_t)(pc - o->base);
}

/* Emit [start, end) with rule, split at interpreter range boundaries. */
static void out_segment(struct out *o, uint64_t start, uint64_t end, const struct unwind_entry *rule,
			const struct unwind_range *interp, size_t ninterp)
{
	size_t i;

	while (start < end) {
		uint64_t cut = end;
		struct unwind_entry r = *rule;

		for (i = 0; i < ninterp; i++) {
			if (interp[i].lo <= start && start < interp[i].hi) {
				if ((r.kind & UNW_KIND_MASK) != UNW_INVALID)
					r.kind |= UNW_F_INTERP;
				if (interp[i].hi < cut)
					cut = interp[i].hi;
			} else if (interp[i].lo > start && interp[i].lo < cut) {
				cut = interp[i].lo;
			}
		}
		out_put(o, start, &r);
		start = cut;
	}
}

/* The next row of the merged levels, in address order (the levels are disjoint). */
static const struct row *next_row(struct builder *b, size_t *idx)
{
	const struct row *best = NULL;
	int lv, which = -1;

	for (lv = 0; lv < LV__COUNT; lv++) {
		const struct level *l = &b->lv[lv];

		if (idx[lv] < l->nres && (!best || l->res[idx[lv]].start < best->start)) {
			best = &l->res[idx[lv]];
			which = lv;
		}
	}
	if (best)
		idx[which]++;
	return best;
}

static int finish(struct builder *b, const struct unwind_range *interp, size_t ninterp,
		  struct unwind_table *t, struct errmsg *err)
{
	struct out o;
	struct unwind_entry invalid, rule;
	const struct row *r;
	uint64_t covered = 0, maxend = 0, minstart = UINT64_MAX;
	size_t idx[LV__COUNT], total = 0, i;
	int started = 0, lv;

	memset(&o, 0, sizeof(o));
	memset(&invalid, 0, sizeof(invalid));
	memset(idx, 0, sizeof(idx));
	if (!b->n)
		return errmsg_set(err, -ENOENT, "no unwind information");
	b->stats->rows = b->n;
	if (resolve(b))
		return errmsg_set(err, -ENOMEM, "out of memory for unwind rows");
	for (lv = 0; lv < LV__COUNT; lv++) {
		const struct level *l = &b->lv[lv];

		if (!l->nres)
			continue;
		/* resolved levels are sorted and disjoint: the last row ends last */
		if (l->res[0].start < minstart)
			minstart = l->res[0].start;
		if (row_end(&l->res[l->nres - 1]) > maxend)
			maxend = row_end(&l->res[l->nres - 1]);
		total += l->nres;
	}
	if (!total)
		return errmsg_set(err, -ENOENT, "no unwind information");
	o.base = minstart;
	if (maxend - o.base > UINT32_MAX)
		return errmsg_set(err, -E2BIG, "unwind rows span more than 4 GiB");
	/* At most a gap entry per row, and two cuts per interpreter range, plus the end: the
	 * vector is sized once (pages never written cost nothing) and trimmed after. */
	o.cap = 2 * total + 2 * ninterp + 2;
	if (o.cap > UNW_MAX_FILE_ENTRIES)
		o.cap = UNW_MAX_FILE_ENTRIES;
	o.e = try_malloc(o.cap * sizeof(*o.e));
	if (!o.e)
		return errmsg_set(err, -ENOMEM, "out of memory for %zu unwind entries", o.cap);
	while ((r = next_row(b, idx))) {
		/* Small gaps are alignment padding between functions: no code runs there, so the
		 * previous rule may cover them and save an entry. */
		if (started && r->start > covered && r->start - covered >= UT_PAD_GAP)
			out_segment(&o, covered, r->start, &invalid, NULL, 0);
		rule_unpack(r->rule, &rule);
		out_segment(&o, r->start, row_end(r), &rule, interp, ninterp);
		covered = row_end(r);
		started = 1;
	}
	/* the terminator (out_put: a row may end at UINT64_MAX, where covered + 1 wraps) */
	out_put(&o, covered, &invalid);
	if (o.err) {
		xfree(o.e);
		return errmsg_set(err, o.err, o.err == -E2BIG ? "more than %u unwind entries" :
			"out of memory for %u unwind entries", UNW_MAX_FILE_ENTRIES);
	}
	if (o.cap > o.n + o.n / 8 + 16) {
		struct unwind_entry *shrunk = try_realloc(o.e, o.n * sizeof(*o.e));

		if (shrunk)
			o.e = shrunk;
	}
	/* the last entry must be UNW_INVALID (out_put may have merged it into an invalid run) */
	t->base = o.base;
	t->entries = o.e;
	t->count = o.n;
	for (i = 0; i < o.n; i++)
		if (o.e[i].kind & UNW_F_INTERP)
			t->interp = 1;
	t->stats.sources = b->src;
	return 0;
}

static void builder_release(struct builder *b)
{
	int lv;

	for (lv = 0; lv < LV__COUNT; lv++)
		xfree(b->lv[lv].owned);
	xfree(b->rows);
}

int unwind_table_from_sections(const struct unwind_cfi_sections *sec,
			       const struct unwind_range *interp, size_t ninterp,
			       struct unwind_table *out, struct errmsg *err)
{
	struct builder b;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.stats = &out->stats;
	set_level(&b, LV_EH_FRAME);
	rc = add_cfi(&b, sec->eh, sec->eh_size, sec->eh_vaddr, CFI_EH_FRAME, sec->eh_hdr,
		     sec->eh_hdr_size, sec->eh_hdr_vaddr, UT_SRC_EH_FRAME, err);
	if (!rc) {
		set_level(&b, LV_DEBUG_FRAME);
		rc = add_cfi(&b, sec->df, sec->df_size, 0, CFI_DEBUG_FRAME, NULL, 0, 0,
			     UT_SRC_DEBUG_FRAME, err);
	}
	if (!rc)
		rc = finish(&b, interp, ninterp, out, err);
	builder_release(&b);
	return rc;
}

int unwind_table_from_cfi(const uint8_t *eh, size_t eh_size, uint64_t eh_vaddr,
			  const uint8_t *df, size_t df_size, const struct unwind_range *interp,
			  size_t ninterp, struct unwind_table *out, struct errmsg *err)
{
	struct unwind_cfi_sections sec;

	memset(&sec, 0, sizeof(sec));
	sec.eh = eh;
	sec.eh_size = eh_size;
	sec.eh_vaddr = eh_vaddr;
	sec.df = df;
	sec.df_size = df_size;
	return unwind_table_from_sections(&sec, interp, ninterp, out, err);
}

static int add_section_cfi(struct builder *b, struct elf_file *e, const char *name, int kind,
			   int src, struct errmsg *err)
{
	const void *data, *hdr = NULL;
	size_t size, hdr_size = 0;
	uint64_t vaddr, hdr_vaddr = 0;
	int rc = elf_section(e, name, &data, &size, &vaddr);

	if (rc == -ENOENT)
		return 0;
	if (rc == -E2BIG || rc == -EIO)
		return 0; /* unusable section: other sources may do */
	if (rc)
		return errmsg_set(err, rc, "cannot read '%s'", name);
	if (kind == CFI_EH_FRAME && elf_section(e, ".eh_frame_hdr", &hdr, &hdr_size, &hdr_vaddr))
		hdr = NULL; /* walk the section in its own order */
	return add_cfi(b, data, size, kind == CFI_EH_FRAME ? vaddr : 0, kind, hdr, hdr_size,
		       hdr_vaddr, src, err);
}

static uint32_t simple_rule(uint8_t kind, uint16_t off, int8_t rbp)
{
	struct unwind_entry r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.off = off;
	r.rbp = rbp;
	return rule_pack(&r);
}

/* PLT stubs without CFI: `jmp *GOT(%rip)` with the return address on top: CFA = rsp + 8. */
static int add_plt(struct builder *b, struct elf_file *e)
{
	static const char *const names[] = { ".plt.sec", ".plt.got", ".plt" };
	uint32_t rule = simple_rule(UNW_CFA_RSP, 8, 0);
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elf_section_info si;
		size_t before = b->n;
		int rc;

		if (elf_section_info(e, names[i], &si) || !si.addr || !si.size)
			continue;
		if (!strcmp(names[i], ".plt")) {
			/* lazy-binding PLT: entry 0 pushes once more; entries push then jump.
			 * Only used where no CFI covers it (a low priority). */
			rc = add_row(b, si.addr, si.addr + 16, rule);
			if (!rc)
				rc = add_row(b, si.addr + 16, si.addr + si.size,
					     simple_rule(UNW_PLT, 8 | (11 << 8), 0));
		} else {
			rc = add_row(b, si.addr, si.addr + si.size, rule);
		}
		if (rc)
			return rc;
		b->stats->plt_rows += b->n - before;
		b->src |= UT_SRC_PLT;
	}
	return 0;
}

/* Rows of the CFI levels and after (not the Go runtime's few). */
static size_t cfi_rows(const struct builder *b)
{
	return b->n - b->lv[LV_GO_RUNTIME].n;
}

/* Whether a row of the (sorted) CFI levels holds addr. */
static int cfi_covers(struct builder *b, uint64_t addr)
{
	int lv;

	for (lv = LV_EH_FRAME; lv <= LV_DEBUG_FILE; lv++) {
		const struct level *l = &b->lv[lv];
		const struct row *v;
		size_t lo = 0, hi = l->n;

		if (!l->n)
			continue;
		v = b->rows + l->first;
		if (v[0].start > addr)
			continue;
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (v[mid].start <= addr)
				lo = mid;
			else
				hi = mid;
		}
		if (addr < row_end(&v[lo]))
			return 1;
	}
	return 0;
}

/* The ELF entry point (_start, or ld.so's _start when the dynamic linker runs) is the outermost
 * frame even when no CFI says so (hand-written assembly): a STOP rule where CFI leaves a gap.
 * Where CFI covers it (it says so itself), the symbols are not needed: loading them would cost
 * more than the rest of the build. */
static int add_entry_stop(struct builder *b, struct elf_file *e)
{
	const struct elf_symbol *sym;
	uint64_t entry = elf_entry(e), len = 64;
	int lv;

	if (!entry)
		return 0;
	for (lv = LV_EH_FRAME; lv <= LV_DEBUG_FILE; lv++)
		if (sort_level(b, &b->lv[lv]))
			return -ENOMEM;
	if (cfi_covers(b, entry))
		return 0;
	sym = elf_symbol_lookup(e, entry);
	if (sym && sym->addr == entry && sym->size && sym->size <= 4096)
		len = sym->size;
	return add_row(b, entry, entry + len, simple_rule(UNW_STOP, 0, 0));
}

/* Go: every function's stack-pointer delta (.gopclntab's pcsp, what the Go runtime unwinds
 * with): CFA = rsp + delta + 8, and once the function has a frame (delta > 0) the caller's RBP
 * is at CFA - 16 (Go saves it right below the return address). Exact for frameless leaf
 * functions, where the frame-pointer rule would skip the caller. The entry point's function is
 * left to the STOP rule (add_entry_stop()). A negative delta (syscall.rawVforkSyscall pops its
 * return address into a register around vfork) has no rule: UNW_INVALID, rather than the
 * frame-pointer rule's guess. */
struct go_rows {
	struct builder *b;
	uint64_t entry;
	int err;
};

static int go_row(void *ctx, uint64_t lo, uint64_t hi, int32_t delta)
{
	struct go_rows *g = ctx;

	if (delta > 0xffff - 8 || (g->entry >= lo && g->entry < hi))
		return 0; /* not expressible (or a lying table): other sources cover it */
	if (delta < 0)
		g->err = add_row(g->b, lo, hi, simple_rule(UNW_INVALID, 0, 0));
	else
		g->err = add_row(g->b, lo, hi, simple_rule(UNW_CFA_RSP, (uint16_t)(delta + 8),
							      delta > 0 ? -2 : 0));
	return g->err;
}

static int add_gopclntab(struct builder *b, struct elf_file *e, struct gopclntab *gp)
{
	struct go_rows g = { b, elf_entry(e), 0 };
	size_t before = b->n;

	gopclntab_sp_deltas(gp, go_row, &g);
	if (b->n > before)
		b->src |= UT_SRC_GOPCLNTAB;
	return g.err;
}

/* The Go runtime's functions whose frames the deltas (and Go's .debug_frame, made from them)
 * get wrong, from their funcFlag (gopclntab.h), at the top priority:
 *   - TOPFRAME (runtime.goexit, mstart, rt0_go): STOP. Above them lies no frame: goexit's
 *     return address is the bottom word of every goroutine's stack, and what the deltas read
 *     past it is whatever the stack's memory holds;
 *   - SPWRITE with a frame (time.now, runtime.nanotime1: they move SP to the system stack
 *     around the vDSO call, after setting up their frame): the frame-pointer rule, which holds
 *     wherever SP is, from the end of the prologue (SUBQ $n, SP; MOVQ BP, n-8(SP); LEAQ
 *     n-8(SP), BP) to each epilogue (MOVQ n-8(SP), BP; ADDQ $n, SP; RET), where RBP is the
 *     caller's again and SP is back: there the deltas' rule. The frame pointer leads from
 *     the system stack back to the goroutine's, which may lie below it: the step follows a
 *     table's rbp rule there as a stack switch (unwind_step.h);
 *   - SPWRITE without a frame: a return address into one of them is the bottom of the system
 *     stack (g0) they switched to, and what lies above it there is stale. At the call of
 *     runtime.systemstack and runtime.asmcgocall, the rules that go back to the goroutine
 *     (UNW_GO_SYSTEMSTACK: from the thread's g to m.curg's g.sched; UNW_GO_ASMCGOCALL: from
 *     what asmcgocall saved on the system stack), and from runtime.morestack's call of
 *     newstack, UNW_GO_MORESTACK (m.curg's g.sched while newstack copies its stack), with
 *     offsets read from their code and casgstatus's; STOP everywhere else in them and in the
 *     others (mcall, gogo, clone): the end, with no false caller (Go's own traceback ends at
 *     mcall too: the goroutine that called it is being descheduled);
 *   - the signal restorer (runtime.sigreturn): the signal frame rule, from the byte before it
 *     when that is padding (a return address into it is looked up one byte early).
 *     runtime.sigtramp is a TOPFRAME the deltas unwind: its return address is the restorer. */
#define GO_TEXT_MAX 4096 /* bytes of an SPWRITE function read for its prologue and epilogues */

struct go_runtime {
	struct builder *b;
	struct elf_file *e;
	/* what the runtime's own code says, for runtime.morestack's rule (go_morestack_rows(),
	 * made last): the offsets systemstack uses (0: not found), where casgstatus finds a g's
	 * status, and morestack's range */
	uint32_t curg_off, status_off;
	int32_t tls_off;
	uint64_t morestack, morestack_end;
	uint8_t text[GO_TEXT_MAX];
};

static int go_read_text(struct elf_file *e, uint64_t addr, void *buf, size_t len)
{
	uint64_t off;

	if (elf_offset_of_vaddr(e, addr, &off))
		return -1;
	return elf_read(e, off, buf, len) < 0 ? -1 : 0;
}

/* An SPWRITE function: the frame-pointer rule over its frame's body, or STOP. */
static int go_spwrite_rows(struct go_runtime *g, uint64_t entry, uint64_t end)
{
	const uint8_t *t = g->text;
	uint32_t fp = simple_rule(UNW_CFA_RBP, 16, -2);
	uint64_t len = end - entry, i, from;
	uint8_t n;
	int rc;

	if (len > GO_TEXT_MAX || len < 14 || go_read_text(g->e, entry, g->text, len))
		return add_row(g->b, entry, end, simple_rule(UNW_STOP, 0, 0));
	n = t[3];
	if (t[0] != 0x48 || t[1] != 0x83 || t[2] != 0xec || n < 16 || n > 127 ||
	    memcmp(t + 4, "\x48\x89\x6c\x24", 4) || t[8] != n - 8 ||
	    memcmp(t + 9, "\x48\x8d\x6c\x24", 4) || t[13] != n - 8)
		return add_row(g->b, entry, end, simple_rule(UNW_STOP, 0, 0));
	/* [entry, entry + 14): the prologue, before any SP write: the deltas hold */
	from = 14;
	for (i = 14; i + 10 <= len; i++) {
		if (memcmp(t + i, "\x48\x8b\x6c\x24", 4) || t[i + 4] != n - 8 ||
		    memcmp(t + i + 5, "\x48\x83\xc4", 3) || t[i + 8] != n || t[i + 9] != 0xc3)
			continue;
		/* the epilogue: the frame pointer until RBP is reloaded, then the deltas' rule
		 * (SP is the frame's again) */
		if ((rc = add_row(g->b, entry + from, entry + i + 5, fp)) ||
		    (rc = add_row(g->b, entry + i + 5, entry + i + 9,
				  simple_rule(UNW_CFA_RSP, (uint16_t)(n + 8), 0))) ||
		    (rc = add_row(g->b, entry + i + 9, entry + i + 10,
				  simple_rule(UNW_CFA_RSP, 8, 0))))
			return rc;
		from = i + 10;
		i += 9;
	}
	return add_row(g->b, entry + from, end, fp);
}

/* runtime.systemstack's rule: UNW_GO_SYSTEMSTACK with the offsets its own instructions use
 * (amd64, asm_amd64.s), or STOP when they are not the expected ones:
 *   MOVQ 8(SP), DI; MOVQ %fs:TLS, AX; MOVQ g_m(AX), BX; CMPQ m_gsignal(BX), AX; JEQ;
 *   MOVQ m_g0(BX), DX; CMPQ DX, AX; JEQ; CMPQ m_curg(BX), AX; JNE; CALL gosave_systemstack_switch
 * and in gosave_systemstack_switch: LEAQ 8(SP), R9; MOVQ R9, g_sched_sp(R14); ...;
 * MOVQ BP, g_sched_bp(R14). */
static uint32_t go_systemstack_rule(struct go_runtime *g, uint64_t entry, uint64_t end)
{
	static const uint8_t head[] = { 0x48, 0x8b, 0x7c, 0x24, 0x08, 0x64, 0x48, 0x8b, 0x04, 0x25 };
	const uint8_t *t = g->text;
	uint64_t len = end - entry, p, call;
	int32_t tls, rel;
	uint32_t curg, sched_bp = 0, stop = simple_rule(UNW_STOP, 0, 0);
	struct unwind_entry r;
	int sched_sp = 0;

	if (len > GO_TEXT_MAX || len < 48 || go_read_text(g->e, entry, g->text, len) ||
	    memcmp(t, head, sizeof(head)))
		return stop;
	memcpy(&tls, t + 10, 4);
	p = 14;
	if (t[p] != 0x48 || t[p + 1] != 0x8b || t[p + 2] != 0x58 || t[p + 3] != UNW_GO_G_M)
		return stop;
	p += 4;
	/* CMPQ m_gsignal(BX), AX (disp8 or disp32); JEQ */
	if (t[p] != 0x48 || t[p + 1] != 0x3b || (t[p + 2] != 0x43 && t[p + 2] != 0x83))
		return stop;
	p += t[p + 2] == 0x43 ? 4 : 7;
	if (t[p] != 0x74)
		return stop;
	p += 2;
	/* MOVQ 0(BX), DX (m_g0 is 0); CMPQ DX, AX; JEQ */
	if (memcmp(t + p, "\x48\x8b\x13\x48\x39\xd0\x74", 7))
		return stop;
	p += 8;
	/* CMPQ m_curg(BX), AX */
	if (t[p] != 0x48 || t[p + 1] != 0x3b || (t[p + 2] != 0x43 && t[p + 2] != 0x83))
		return stop;
	if (t[p + 2] == 0x43) {
		curg = t[p + 3];
		p += 4;
	} else {
		memcpy(&curg, t + p + 3, 4);
		p += 7;
	}
	if (t[p] != 0x75 || t[p + 2] != 0xe8)
		return stop;
	memcpy(&rel, t + p + 3, 4);
	call = entry + p + 7 + (int64_t)rel;
	/* gosave_systemstack_switch: where it saves SP and BP in g.sched */
	if (go_read_text(g->e, call, g->text, 64))
		return stop;
	for (p = 0; p + 9 <= 64; p++) {
		if (!memcmp(t + p, "\x4c\x8d\x4c\x24\x08\x4d\x89\x4e", 8) &&
		    t[p + 8] == UNW_GO_G_SCHED_SP)
			sched_sp = 1;
		if (!memcmp(t + p, "\x49\x89\x6e", 3) && !sched_bp)
			sched_bp = t[p + 3];
		if (t[p] == 0xc3)
			break;
	}
	if (!sched_sp || !sched_bp || sched_bp % 8 || curg % 8 || curg / 8 > 0xff ||
	    tls % 8 || tls / 8 < -128 || tls / 8 > 127)
		return stop;
	memset(&r, 0, sizeof(r));
	r.kind = UNW_GO_SYSTEMSTACK;
	r.off = (uint16_t)(curg / 8 | (sched_bp / 8) << 8);
	r.rbp = (int8_t)(tls / 8);
	g->curg_off = curg;
	g->tls_off = tls;
	return rule_pack(&r);
}

/* Where runtime.casgstatus finds a g's status: its first LOCK CMPXCHG r32, disp(reg) (the CAS
 * on g.atomicstatus, the g in a register). 0 when not found. */
static uint32_t go_status_offset(struct go_runtime *g, uint64_t entry, uint64_t end)
{
	const uint8_t *t = g->text;
	uint64_t len = end - entry, p;
	int32_t d;

	if (len > GO_TEXT_MAX)
		len = GO_TEXT_MAX;
	if (len < 16 || go_read_text(g->e, entry, g->text, len))
		return 0;
	for (p = 0; p + 8 <= len; p++) {
		uint8_t modrm = t[p + 3];

		if (t[p] != 0xf0 || t[p + 1] != 0x0f || t[p + 2] != 0xb1 || (modrm & 7) == 4)
			continue;
		if ((modrm >> 6) == 1)
			d = (int8_t)t[p + 4];
		else if ((modrm >> 6) == 2)
			memcpy(&d, t + p + 4, 4);
		else
			continue;
		return d > 0 && d % 4 == 0 && d / 4 <= 0xff ? (uint32_t)d : 0;
	}
	return 0;
}

/* runtime.morestack (asm_amd64.s): it saves the calling function's registers in g.sched and
 * calls newstack on g0:
 *   MOVQ 0(SP), AX; MOVQ AX, g_sched_pc(SI); LEAQ 8(SP), AX; MOVQ AX, g_sched_sp(SI);
 *   MOVQ BP, g_sched_bp(SI); ...; MOVQ g_sched_sp(BX), SP; CALL runtime.newstack
 * From the call on (on g0), UNW_GO_MORESTACK with the offsets of systemstack and casgstatus;
 * STOP before it and when the code or an offset is not the expected one. */
static int go_morestack_rows(struct go_runtime *g)
{
	static const uint8_t pc[] = { 0x48, 0x8b, 0x04, 0x24, 0x48, 0x89, 0x46, UNW_GO_G_SCHED_PC };
	static const uint8_t sp[] = { 0x48, 0x8d, 0x44, 0x24, 0x08, 0x48, 0x89, 0x46,
				      UNW_GO_G_SCHED_SP };
	static const uint8_t bp[] = { 0x48, 0x89, 0x6e, UNW_GO_G_SCHED_BP };
	static const uint8_t sw[] = { 0x48, 0x8b, 0x63, UNW_GO_G_SCHED_SP, 0xe8 };
	uint64_t entry = g->morestack, end = g->morestack_end, len = end - entry, call = 0;
	uint32_t stop = simple_rule(UNW_STOP, 0, 0);
	struct unwind_entry r;
	const uint8_t *t = g->text;
	int rc;

	if (!entry)
		return 0;
	if (!g->curg_off || !g->status_off || len > GO_TEXT_MAX || len < 32 ||
	    go_read_text(g->e, entry, g->text, len) ||
	    !memmem(t, len, pc, sizeof(pc)) || !memmem(t, len, sp, sizeof(sp)) ||
	    !memmem(t, len, bp, sizeof(bp)) || !memmem(t, len, sw, sizeof(sw)))
		return add_row(g->b, entry, end, stop);
	call = (uint64_t)((const uint8_t *)memmem(t, len, sw, sizeof(sw)) - t) + 4;
	memset(&r, 0, sizeof(r));
	r.kind = UNW_GO_MORESTACK;
	r.off = (uint16_t)(g->curg_off / 8 | (g->status_off / 4) << 8);
	r.rbp = (int8_t)(g->tls_off / 8);
	if ((rc = add_row(g->b, entry, entry + call, stop)))
		return rc;
	return add_row(g->b, entry + call, end, rule_pack(&r));
}

/* runtime.asmcgocall's rule: UNW_GO_ASMCGOCALL with the stack slots its code uses, or STOP:
 *   MOVQ SP, DX (its SP at entry); ... after the switch: MOVQ DI, G(SP) (the goroutine's g);
 *   MOVQ 8(DI), DI (g.stack.hi); SUBQ DX, DI; MOVQ DI, D(SP) (the depth);
 *   without a switch: MOVQ $0, G(SP); MOVQ DX, D(SP) (the SP itself). */
static uint32_t go_asmcgocall_rule(struct go_runtime *g, uint64_t entry, uint64_t end)
{
	const uint8_t *t = g->text;
	uint64_t len = end - entry, p;
	uint32_t stop = simple_rule(UNW_STOP, 0, 0);
	int sp_dx = 0, sw = 0, nosw = 0;
	uint8_t gs = 0, ds = 0;
	struct unwind_entry r;

	if (len > GO_TEXT_MAX || len < 32 || go_read_text(g->e, entry, g->text, len))
		return stop;
	for (p = 0; p + 18 <= len; p++) {
		if (!sp_dx && !memcmp(t + p, "\x48\x89\xe2", 3))
			sp_dx = 1;
		if (sp_dx && !memcmp(t + p, "\x48\x89\x7c\x24", 4) &&
		    !memcmp(t + p + 5, "\x48\x8b\x7f\x08\x48\x29\xd7\x48\x89\x7c\x24", 11)) {
			gs = t[p + 4];
			ds = t[p + 16];
			sw = 1;
		}
		if (sw && !memcmp(t + p, "\x48\xc7\x44\x24", 4) && t[p + 4] == gs &&
		    !memcmp(t + p + 5, "\x00\x00\x00\x00\x48\x89\x54\x24", 8) && t[p + 13] == ds)
			nosw = 1;
	}
	if (!nosw || gs % 8 || ds % 8 || gs == ds)
		return stop;
	memset(&r, 0, sizeof(r));
	r.kind = UNW_GO_ASMCGOCALL;
	r.off = (uint16_t)(gs / 8 | (ds / 8) << 8);
	return rule_pack(&r);
}

/* rule over the calls that end the instruction sequence seq (its last 2 bytes: the call) in
 * [entry, end), whose text is in g->text, and STOP everywhere else: the rule holds only where
 * the call is made or returns (elsewhere SP and the saved words are not those it reads). */
static int go_call_rows(struct go_runtime *g, uint64_t entry, uint64_t end, uint32_t rule,
			const char *seq, size_t n)
{
	uint32_t stop = simple_rule(UNW_STOP, 0, 0);
	uint64_t len = end - entry, p, from = 0;
	int rc;

	if (rule != stop && len <= GO_TEXT_MAX && !go_read_text(g->e, entry, g->text, len)) {
		for (p = 0; p + n <= len; p++) {
			if (memcmp(g->text + p, seq, n))
				continue;
			if ((rc = add_row(g->b, entry + from, entry + p + n - 2, stop)) ||
			    (rc = add_row(g->b, entry + p + n - 2, entry + p + n, rule)))
				return rc;
			from = p + n;
		}
	}
	return add_row(g->b, entry + from, end, stop);
}

static int go_runtime_row(void *ctx, uint64_t entry, uint64_t end, const char *name,
			  unsigned flags)
{
	struct go_runtime *g = ctx;
	uint8_t pad;

	if (flags & GOPCLNTAB_SIGRETURN) {
		if (!go_read_text(g->e, entry - 1, &pad, 1) && pad == 0xcc)
			entry--;
		return add_row(g->b, entry, end, simple_rule(UNW_SIGNAL, 0, 0));
	}
	if (flags & GOPCLNTAB_SIGTRAMP)
		return 0;
	if (flags & GOPCLNTAB_CASGSTATUS) {
		g->status_off = go_status_offset(g, entry, end);
		return 0;
	}
	if ((flags & GOPCLNTAB_SPWRITE) && !strcmp(name, "runtime.morestack")) {
		g->morestack = entry; /* its rows come last: go_morestack_rows() */
		g->morestack_end = end;
		return 0;
	}
	if (flags & GOPCLNTAB_TOPFRAME)
		return add_row(g->b, entry, end, simple_rule(UNW_STOP, 0, 0));
	/* MOVQ DI, DX; MOVQ 0(DI), DI; CALL DI (the call on the system stack) */
	if ((flags & GOPCLNTAB_SPWRITE) && !strcmp(name, "runtime.systemstack"))
		return go_call_rows(g, entry, end, go_systemstack_rule(g, entry, end),
				    "\x48\x89\xfa\x48\x8b\x3f\xff\xd7", 8);
	/* MOVQ BX, DI; MOVQ BX, CX; CALL AX (the C function) */
	if ((flags & GOPCLNTAB_SPWRITE) && !strcmp(name, "runtime.asmcgocall"))
		return go_call_rows(g, entry, end, go_asmcgocall_rule(g, entry, end),
				    "\x48\x89\xdf\x48\x89\xd9\xff\xd0", 8);
	if (flags & GOPCLNTAB_SPWRITE)
		return go_spwrite_rows(g, entry, end);
	return 0;
}

/* Before any other level: its rows become the mask the others are cut around. */
static int add_go_runtime(struct builder *b, struct elf_file *e, struct gopclntab *gp)
{
	struct go_runtime *g = try_malloc(sizeof(*g));
	struct level *l = &b->lv[LV_GO_RUNTIME];
	const struct row *v;
	size_t i;
	int rc;

	if (!g)
		return -ENOMEM;
	memset(g, 0, offsetof(struct go_runtime, text));
	g->b = b;
	g->e = e;
	set_level(b, LV_GO_RUNTIME);
	rc = gopclntab_special_funcs(gp, go_runtime_row, g);
	if (!rc)
		rc = go_morestack_rows(g);
	xfree(g);
	if (rc || sort_level(b, l))
		return rc ? rc : -ENOMEM;
	v = b->rows + l->first;
	for (i = 1; i < l->n; i++)
		if (v[i].start < v[i - 1].start + v[i - 1].len)
			return 0; /* overlapping functions: a lying table, no mask */
	b->mask_first = l->first;
	b->nmask = l->n;
	return 0;
}

/* V8's embedded builtins (Builtins_* in node and libnode) have no CFI; like the JIT code they
 * call, they keep frame pointers: the frame-pointer rule where no CFI covers them. Only files
 * whose .dynstr names a builtin load their symbols for it. Their ranges are gathered before
 * any row (v8_builtins_find()), so that the symbols read for them (Node: 99,000) and the rows
 * of the file's CFI are never held at once. */
struct v8_ranges {
	struct unwind_range *r;
	size_t n, cap;
};

/* Whether string table section si holds marker, read in blocks (never the whole table). */
static int strings_contain(struct elf_file *e, const struct elf_section_info *si,
			   const char *marker, size_t mlen)
{
	enum { BLOCK = 64 << 10 };
	char *buf;
	uint64_t at = 0;
	int found = 0;

	if (si->type != SHT_STRTAB || si->size < mlen)
		return 0;
	buf = try_malloc(BLOCK);
	if (!buf)
		return 0;
	while (at < si->size && !found) {
		size_t n = si->size - at < BLOCK ? (size_t)(si->size - at) : BLOCK;

		if (elf_read(e, si->offset + at, buf, n) < 0)
			break;
		found = memmem(buf, n, marker, mlen) != NULL;
		if (at + n >= si->size)
			break;
		at += n - (mlen - 1); /* a marker across two blocks is seen in the next one */
	}
	xfree(buf);
	return found;
}

static int v8_builtins_find(struct elf_file *e, struct v8_ranges *out)
{
	static const char marker[] = "Builtins_InterpreterEntryTrampoline";
	const struct elf_symbol *syms;
	struct elf_section_info si;
	size_t n, i;
	int rc = 0;

	if (elf_section_info(e, ".dynstr", &si) < 0 ||
	    !strings_contain(e, &si, marker, sizeof(marker) - 1) || elf_symbols_load(e, NULL) < 0)
		return 0;
	syms = elf_symbols(e, &n);
	for (i = 0; i < n; i++) {
		if (strncmp(elf_symbol_name(e, &syms[i]), "Builtins_", 9))
			continue;
		if (out->n == out->cap) {
			size_t ncap = out->cap ? 2 * out->cap : 256;
			struct unwind_range *q = try_realloc(out->r, ncap * sizeof(*q));

			if (!q) {
				rc = -ENOMEM;
				break;
			}
			out->r = q;
			out->cap = ncap;
		}
		out->r[out->n].lo = syms[i].addr;
		out->r[out->n].hi = syms[i].addr + syms[i].size;
		out->n++;
	}
	elf_symbols_release(e);
	return rc;
}

static int add_v8_builtins(struct builder *b, const struct v8_ranges *v8)
{
	size_t i;

	for (i = 0; i < v8->n; i++) {
		int rc = add_row(b, v8->r[i].lo, v8->r[i].hi, simple_rule(UNW_CFA_RBP, 16, -2));

		if (rc)
			return rc;
		b->stats->fp_rows++;
	}
	return 0;
}

/* The frame-pointer rule over every executable segment: CFA = rbp + 16, RBP at CFA - 16. */
static int add_fp(struct builder *b, struct elf_file *e)
{
	const struct elf_segment *seg;
	size_t n, i;

	seg = elf_segments(e, &n);
	for (i = 0; i < n; i++) {
		int rc;

		if (!(seg[i].flags & PF_X) || !seg[i].memsz)
			continue;
		rc = add_row(b, seg[i].vaddr, seg[i].vaddr + seg[i].memsz,
			     simple_rule(UNW_CFA_RBP, 16, -2));
		if (rc)
			return rc;
		b->stats->fp_rows++;
		b->src |= UT_SRC_FP;
	}
	return 0;
}

/* The span of the executable segments: CFI rows outside it describe no code a process can run
 * from this file (a corrupt or unrelocated FDE range). Files without one (relocatable objects)
 * are not cut. */
static void set_clip(struct builder *b, struct elf_file *e)
{
	const struct elf_segment *seg;
	size_t n, i;

	seg = elf_segments(e, &n);
	for (i = 0; i < n; i++) {
		uint64_t end = seg[i].vaddr + seg[i].memsz;

		if (!(seg[i].flags & PF_X) || !seg[i].memsz || end < seg[i].vaddr)
			continue;
		if (!b->clip || seg[i].vaddr < b->lo)
			b->lo = seg[i].vaddr;
		if (!b->clip || end > b->hi)
			b->hi = end;
		b->clip = 1;
	}
}

int unwind_table_build(struct elf_file *e, struct elf_file *debug, const struct unwind_range *interp,
		       size_t ninterp, struct unwind_table *out, struct errmsg *err)
{
	struct builder b;
	struct elf_section_info si;
	struct v8_ranges v8 = { NULL, 0, 0 };
	struct gopclntab *gp = NULL;
	int rc, is_go;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.stats = &out->stats;
	set_clip(&b, e);
	is_go = !elf_section_info(e, ".gopclntab", &si) || !elf_section_info(e, ".go.buildinfo", &si);
	if (is_go && gopclntab_open(e, &gp, NULL) < 0)
		gp = NULL;
	rc = v8_builtins_find(e, &v8);
	if (rc) {
		xfree(v8.r);
		gopclntab_free(gp);
		return errmsg_set(err, rc, "out of memory for V8 builtins");
	}

	rc = gp ? add_go_runtime(&b, e, gp) : 0;
	if (rc)
		rc = add_error(&b, err);
	if (!rc) {
		set_level(&b, LV_EH_FRAME);
		rc = add_section_cfi(&b, e, ".eh_frame", CFI_EH_FRAME, UT_SRC_EH_FRAME, err);
	}
	if (!rc) {
		set_level(&b, LV_DEBUG_FRAME);
		rc = add_section_cfi(&b, e, ".debug_frame", CFI_DEBUG_FRAME, UT_SRC_DEBUG_FRAME, err);
	}
	if (!rc && debug && !cfi_rows(&b)) {
		set_level(&b, LV_DEBUG_FILE);
		rc = add_section_cfi(&b, debug, ".debug_frame", CFI_DEBUG_FRAME, UT_SRC_DEBUG_FILE, err);
		if (!rc && !cfi_rows(&b))
			rc = add_section_cfi(&b, debug, ".eh_frame", CFI_EH_FRAME, UT_SRC_DEBUG_FILE, err);
	}
	if (!rc && gp && !b.lv[LV_DEBUG_FILE].n) {
		/* Go's stack-pointer deltas rank with a debug file's CFI (it has none) */
		set_level(&b, LV_DEBUG_FILE);
		rc = add_gopclntab(&b, e, gp);
		if (rc)
			rc = add_error(&b, err);
	}
	gopclntab_free(gp);
	if (!rc) {
		int had_cfi = cfi_rows(&b) > 0;

		set_level(&b, LV_STUBS);
		rc = add_entry_stop(&b, e);
		if (!rc)
			rc = add_plt(&b, e);
		if (!rc && (!had_cfi || is_go)) {
			set_level(&b, LV_FP);
			rc = add_fp(&b, e);
		}
		if (!rc && had_cfi) {
			if (b.cur != LV_FP)
				set_level(&b, LV_FP);
			rc = add_v8_builtins(&b, &v8);
		}
		if (rc)
			rc = add_error(&b, err);
	}
	xfree(v8.r);
	if (!rc)
		rc = finish(&b, interp, ninterp, out, err);
	builder_release(&b);
	return rc;
}

void unwind_table_release(struct unwind_table *t)
{
	if (!t)
		return;
	xfree(t->entries);
	t->entries = NULL;
	t->count = 0;
}

const struct unwind_entry *unwind_table_lookup(const struct unwind_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->count;
	uint64_t rel;

	if (!t->count || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return NULL;
	rel = vaddr - t->base;
	if (rel < t->entries[0].pc)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->entries[mid].pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return &t->entries[lo];
}

const char *unwind_rule_str(const struct unwind_entry *e, char *buf, size_t size)
{
	static const char *const kinds[] = { "invalid", "rsp", "rbp", "plt", "deref", "signal", "stop",
					     "go-systemstack", "go-asmcgocall", "go-morestack",
					     "ra-in-register" };
	unsigned k = e->kind & UNW_KIND_MASK;
	int n;

	switch (k) {
	case UNW_CFA_RSP:
	case UNW_CFA_RBP:
		n = snprintf(buf, size, "cfa=%s+%llu", kinds[k], (unsigned long long)UNW_CFA_OFF(e));
		break;
	case UNW_PLT:
		n = snprintf(buf, size, "cfa=plt(rsp+%u,%u)", e->off & 0xff, e->off >> 8);
		break;
	case UNW_DEREF_RBP:
		n = snprintf(buf, size, "cfa=*(rbp%+d)", (int16_t)e->off);
		break;
	case UNW_GO_SYSTEMSTACK:
		n = snprintf(buf, size, "go-systemstack(g=fs%+d curg=%u sched.bp=%u)", e->rbp * 8,
			     (e->off & 0xff) * 8, (e->off >> 8) * 8);
		return buf;
	case UNW_RA_REG:
		n = snprintf(buf, size, "cfa=rsp+%u ra=reg%d (leaf only)", e->off, e->rbp);
		return buf;
	case UNW_GO_MORESTACK:
		n = snprintf(buf, size, "go-morestack(g=fs%+d curg=%u status=%u)", e->rbp * 8,
			     (e->off & 0xff) * 8, (e->off >> 8) * 4);
		return buf;
	case UNW_GO_ASMCGOCALL:
		n = snprintf(buf, size, "go-asmcgocall(g=sp+%u depth=sp+%u)", (e->off & 0xff) * 8,
			     (e->off >> 8) * 8);
		return buf;
	default:
		n = snprintf(buf, size, "%s", k < sizeof(kinds) / sizeof(kinds[0]) ? kinds[k] : "?");
		break;
	}
	if (n < 0 || (size_t)n >= size)
		return buf;
	if (e->rbp && k != UNW_SIGNAL && k != UNW_STOP && k != UNW_INVALID)
		snprintf(buf + n, size - (size_t)n, k == UNW_DEREF_RBP ? " rbp=*(rbp%+d)" :
			 " rbp=cfa%+d", e->rbp * 8);
	if (e->kind & UNW_F_INTERP) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, " interp");
	}
	return buf;
}
