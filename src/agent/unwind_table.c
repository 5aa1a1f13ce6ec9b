/* unwind_table.c: per-file unwind tables (see unwind_table.h). Rows are gathered into a
 * bounded vector, sorted, resolved into non-overlapping segments and compressed. */
#include "agent/unwind_table.h"
#include "agent/cfi.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
	uint64_t start, end;
	struct unwind_entry rule; /* pc unused */
	uint32_t prio;            /* lower wins on overlap */
	uint32_t seq;             /* keeps the sort stable */
};

struct builder {
	struct row *rows;
	size_t n, cap;
	uint32_t prio;
	int src;
	struct unwind_table_stats *stats;
	int full;
	int clip;            /* rows are cut to [lo, hi): the executable segments' span */
	uint64_t lo, hi;
};

static int add_row(struct builder *b, uint64_t start, uint64_t end, const struct unwind_entry *rule)
{
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
	if (b->n >= UNWIND_TABLE_MAX_ROWS) {
		b->full = 1;
		return -E2BIG;
	}
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 1024;
		struct row *nr = try_realloc(b->rows, ncap * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		b->rows = nr;
		b->cap = ncap;
	}
	r = &b->rows[b->n];
	r->start = start;
	r->end = end;
	r->rule = *rule;
	r->rule.pc = 0;
	r->prio = b->prio;
	r->seq = (uint32_t)b->n;
	b->n++;
	return 0;
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
	if (row->ra_kind != CFI_R_OFFSET || row->ra_off != -8)
		goto invalid;
	switch (row->cfa_kind) {
	case CFI_CFA_REG:
		if (row->cfa_off < 0 || row->cfa_off > 0xffff)
			goto invalid;
		if (row->cfa_reg == CFI_REG_RSP)
			out->kind = UNW_CFA_RSP;
		else if (row->cfa_reg == CFI_REG_RBP)
			out->kind = UNW_CFA_RBP;
		else
			goto invalid; /* e.g. the DRAP register in a realigning prologue */
		out->off = (uint16_t)row->cfa_off;
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
	return add_row(b, row->start, row->end, &rule) ? 1 : 0;
}

static int add_cfi(struct builder *b, const uint8_t *data, size_t size, uint64_t vaddr, int kind,
		   int src, struct errmsg *err)
{
	struct cfi_stats cs;
	size_t before = b->n;
	int rc;

	if (!data || !size)
		return 0;
	memset(&cs, 0, sizeof(cs));
	rc = cfi_parse(data, size, vaddr, kind, on_cfi_row, b, &cs, NULL);
	b->stats->fdes += cs.fdes;
	b->stats->bad_entries += cs.bad_entries;
	if (b->full)
		return errmsg_set(err, -E2BIG, "more than %u unwind rows", UNWIND_TABLE_MAX_ROWS);
	if (rc > 0)
		return errmsg_set(err, -ENOMEM, "out of memory for unwind rows");
	/* A section we cannot walk at all is not fatal: other sources may cover the file. */
	if (b->n > before)
		b->src |= src;
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int push_piece(struct row **v, size_t *n, size_t *cap, const struct row *r, uint64_t start,
		      uint64_t end)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct row *nv = try_realloc(*v, ncap * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[*n] = *r;
	(*v)[*n].start = start;
	(*v)[*n].end = end;
	(*n)++;
	return 0;
}

/* Turn b->rows into sorted, non-overlapping rows: a source only fills what the sources before
 * it left uncovered; within one source an overlapping row (sloppy CFI) loses to the earlier. */
static int resolve(struct builder *b)
{
	struct row *res = NULL, *piece = NULL, *merged = NULL;
	size_t nres = 0, capres = 0, npiece, cappiece = 0, i = 0, j;
	int rc = 0;

	qsort(b->rows, b->n, sizeof(*b->rows), row_cmp);
	while (i < b->n) {
		uint64_t level_covered = 0;
		size_t k = 0, a, c, m;

		for (j = i; j < b->n && b->rows[j].prio == b->rows[i].prio; j++)
			;
		npiece = 0;
		for (; i < j; i++) {
			const struct row *r = &b->rows[i];
			uint64_t s = r->start > level_covered ? r->start : level_covered, e = r->end;

			if (s >= e)
				continue;
			level_covered = e;
			while (k < nres && res[k].end <= s)
				k++;
			while (s < e && !rc) {
				if (k < nres && res[k].start < e) {
					if (res[k].start > s)
						rc = push_piece(&piece, &npiece, &cappiece, r, s, res[k].start);
					if (res[k].end > s)
						s = res[k].end;
					k++;
				} else {
					rc = push_piece(&piece, &npiece, &cappiece, r, s, e);
					s = e;
				}
			}
			if (rc)
				goto cleanup;
		}
		if (!nres) {
			/* the first level: its pieces are the result (no copy: this is the peak of
			 * a table build's memory) */
			xfree(res);
			res = piece;
			nres = npiece;
			capres = cappiece;
			piece = NULL;
			cappiece = 0;
			continue;
		}
		/* merge res and piece (both sorted, disjoint) */
		merged = try_malloc((nres + npiece + 1) * sizeof(*merged));
		if (!merged) {
			rc = -ENOMEM;
			goto cleanup;
		}
		for (a = 0, c = 0, m = 0; a < nres || c < npiece;)
			merged[m++] = c >= npiece || (a < nres && res[a].start < piece[c].start) ?
				res[a++] : piece[c++];
		xfree(res);
		res = merged;
		merged = NULL;
		nres = m;
		capres = m + 1;
	}
	xfree(b->rows);
	b->rows = res;
	b->n = nres;
	b->cap = capres;
	res = NULL;
cleanup:
	xfree(res);
	xfree(piece);
	return rc;
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

		if (ncap > UNW_MAX_FILE_ENTRIES) {
			o->err = -E2BIG;
			return;
		}
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

static int finish(struct builder *b, const struct unwind_range *interp, size_t ninterp,
		  struct unwind_table *t, struct errmsg *err)
{
	struct out o;
	struct unwind_entry invalid;
	uint64_t covered = 0, maxend = 0;
	size_t i;
	int started = 0;

	memset(&o, 0, sizeof(o));
	memset(&invalid, 0, sizeof(invalid));
	if (!b->n)
		return errmsg_set(err, -ENOENT, "no unwind information");
	b->stats->rows = b->n;
	if (resolve(b))
		return errmsg_set(err, -ENOMEM, "out of memory for unwind rows");
	o.base = b->rows[0].start;
	for (i = 0; i < b->n; i++)
		if (b->rows[i].end > maxend)
			maxend = b->rows[i].end;
	if (maxend - o.base > UINT32_MAX)
		return errmsg_set(err, -E2BIG, "unwind rows span more than 4 GiB");
	for (i = 0; i < b->n; i++) {
		const struct row *r = &b->rows[i];
		uint64_t start = r->start;

		/* Small gaps are alignment padding between functions: no code runs there, so the
		 * previous rule may cover them and save an entry. */
		if (started && start > covered && start - covered >= UT_PAD_GAP)
			out_segment(&o, covered, start, &invalid, NULL, 0);
		out_segment(&o, start, r->end, &r->rule, interp, ninterp);
		covered = r->end;
		started = 1;
	}
	/* the terminator (out_put: a row may end at UINT64_MAX, where covered + 1 wraps) */
	out_put(&o, covered, &invalid);
	if (o.err) {
		xfree(o.e);
		return errmsg_set(err, o.err, o.err == -E2BIG ? "more than %u unwind entries" :
			"out of memory for %u unwind entries", UNW_MAX_FILE_ENTRIES);
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
	xfree(b->rows);
}

int unwind_table_from_cfi(const uint8_t *eh, size_t eh_size, uint64_t eh_vaddr,
			  const uint8_t *df, size_t df_size, const struct unwind_range *interp,
			  size_t ninterp, struct unwind_table *out, struct errmsg *err)
{
	struct builder b;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.stats = &out->stats;
	b.prio = 0;
	rc = add_cfi(&b, eh, eh_size, eh_vaddr, CFI_EH_FRAME, UT_SRC_EH_FRAME, err);
	if (!rc) {
		b.prio = 1;
		rc = add_cfi(&b, df, df_size, 0, CFI_DEBUG_FRAME, UT_SRC_DEBUG_FRAME, err);
	}
	if (!rc)
		rc = finish(&b, interp, ninterp, out, err);
	builder_release(&b);
	return rc;
}

static int add_section_cfi(struct builder *b, struct elf_file *e, const char *name, int kind,
			   int src, struct errmsg *err)
{
	const void *data;
	size_t size;
	uint64_t vaddr;
	int rc = elf_section(e, name, &data, &size, &vaddr);

	if (rc == -ENOENT)
		return 0;
	if (rc == -E2BIG || rc == -EIO)
		return 0; /* unusable section: other sources may do */
	if (rc)
		return errmsg_set(err, rc, "cannot read '%s'", name);
	return add_cfi(b, data, size, kind == CFI_EH_FRAME ? vaddr : 0, kind, src, err);
}

/* PLT stubs without CFI: `jmp *GOT(%rip)` with the return address on top: CFA = rsp + 8. */
static int add_plt(struct builder *b, struct elf_file *e)
{
	static const char *const names[] = { ".plt.sec", ".plt.got", ".plt" };
	struct unwind_entry rule;
	size_t i;

	memset(&rule, 0, sizeof(rule));
	rule.kind = UNW_CFA_RSP;
	rule.off = 8;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elf_section_info si;
		size_t before = b->n;

		if (elf_section_info(e, names[i], &si) || !si.addr || !si.size)
			continue;
		if (!strcmp(names[i], ".plt")) {
			/* lazy-binding PLT: entry 0 pushes once more; entries push then jump.
			 * Only use it when no CFI covered it (lowest priority). */
			struct unwind_entry plt = rule;

			plt.kind = UNW_PLT;
			plt.off = 8 | (11 << 8);
			if (add_row(b, si.addr, si.addr + 16, &rule) ||
			    add_row(b, si.addr + 16, si.addr + si.size, &plt))
				return -E2BIG;
		} else if (add_row(b, si.addr, si.addr + si.size, &rule)) {
			return -E2BIG;
		}
		b->stats->plt_rows += b->n - before;
		b->src |= UT_SRC_PLT;
	}
	return 0;
}

/* The ELF entry point (_start, or ld.so's _start when the dynamic linker runs) is the outermost
 * frame even when no CFI says so (hand-written assembly): a STOP rule where CFI leaves a gap. */
static int add_entry_stop(struct builder *b, struct elf_file *e)
{
	const struct elf_symbol *sym;
	struct unwind_entry rule;
	uint64_t entry = elf_entry(e), len = 64;

	if (!entry)
		return 0;
	memset(&rule, 0, sizeof(rule));
	rule.kind = UNW_STOP;
	sym = elf_symbol_lookup(e, entry);
	if (sym && sym->addr == entry && sym->size && sym->size <= 4096)
		len = sym->size;
	return add_row(b, entry, entry + len, &rule);
}

/* The frame-pointer rule over every executable segment: CFA = rbp + 16, RBP at CFA - 16. */
static int add_fp(struct builder *b, struct elf_file *e)
{
	const struct elf_segment *seg;
	struct unwind_entry rule;
	size_t n, i;

	memset(&rule, 0, sizeof(rule));
	rule.kind = UNW_CFA_RBP;
	rule.off = 16;
	rule.rbp = -2;
	seg = elf_segments(e, &n);
	for (i = 0; i < n; i++) {
		if (!(seg[i].flags & PF_X) || !seg[i].memsz)
			continue;
		if (add_row(b, seg[i].vaddr, seg[i].vaddr + seg[i].memsz, &rule))
			return -E2BIG;
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
	int rc, is_go;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.stats = &out->stats;
	set_clip(&b, e);
	is_go = !elf_section_info(e, ".gopclntab", &si) || !elf_section_info(e, ".go.buildinfo", &si);

	b.prio = 0;
	rc = add_section_cfi(&b, e, ".eh_frame", CFI_EH_FRAME, UT_SRC_EH_FRAME, err);
	if (!rc) {
		b.prio = 1;
		rc = add_section_cfi(&b, e, ".debug_frame", CFI_DEBUG_FRAME, UT_SRC_DEBUG_FRAME, err);
	}
	if (!rc && debug && !b.n) {
		b.prio = 2;
		rc = add_section_cfi(&b, debug, ".debug_frame", CFI_DEBUG_FRAME, UT_SRC_DEBUG_FILE, err);
		if (!rc && !b.n)
			rc = add_section_cfi(&b, debug, ".eh_frame", CFI_EH_FRAME, UT_SRC_DEBUG_FILE, err);
	}
	if (!rc) {
		int had_cfi = b.n > 0;

		b.prio = 3;
		rc = add_entry_stop(&b, e);
		if (!rc)
			rc = add_plt(&b, e);
		if (!rc && (!had_cfi || is_go)) {
			b.prio = 4;
			rc = add_fp(&b, e);
		}
		if (rc)
			rc = errmsg_set(err, rc, "more than %u unwind rows", UNWIND_TABLE_MAX_ROWS);
	}
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
	static const char *const kinds[] = { "invalid", "rsp", "rbp", "plt", "deref", "signal", "stop" };
	unsigned k = e->kind & UNW_KIND_MASK;
	int n;

	switch (k) {
	case UNW_CFA_RSP:
	case UNW_CFA_RBP:
		n = snprintf(buf, size, "cfa=%s+%u", kinds[k], e->off);
		break;
	case UNW_PLT:
		n = snprintf(buf, size, "cfa=plt(rsp+%u,%u)", e->off & 0xff, e->off >> 8);
		break;
	case UNW_DEREF_RBP:
		n = snprintf(buf, size, "cfa=*(rbp%+d)", (int16_t)e->off);
		break;
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
