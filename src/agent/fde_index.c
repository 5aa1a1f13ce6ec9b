/* fde_index.c: sorted FDE ranges of a file (see fde_index.h). The FDEs come from cfi_fdes(),
 * which reads each FDE's header and skips its program, so building costs one pass over the
 * section and a sort. */
#include "agent/fde_index.h"
#include "agent/cfi.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Ranges looked at before the last one starting at or below an address, for FDEs nested in
 * others. */
#define FDE_INDEX_NEST 4

struct fde_range {
	uint32_t start; /* from base */
	uint32_t len;
};

struct fde_index {
	uint64_t base;
	struct fde_range *r; /* sorted by start, one per start */
	size_t count;
};

struct collect {
	uint64_t lo, hi;
	struct fde_range *r;
	size_t n, cap;
	int err;
};

static int collect_fde(void *arg, uint64_t start, uint64_t end)
{
	struct collect *c = arg;
	struct fde_range *grown;
	uint64_t len = end - start;

	if (start < c->lo || start >= c->hi)
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;

		if (c->n >= FDE_INDEX_MAX) {
			c->err = -E2BIG;
			return 1;
		}
		if (cap > FDE_INDEX_MAX)
			cap = FDE_INDEX_MAX;
		grown = try_realloc(c->r, cap * sizeof(*c->r));
		if (!grown) {
			c->err = -ENOMEM;
			return 1;
		}
		c->r = grown;
		c->cap = cap;
	}
	c->r[c->n].start = (uint32_t)(start - c->lo);
	c->r[c->n].len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	c->n++;
	return 0;
}

/* By start, the longest first among equal starts (it is kept). */
static int range_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->len > y->len ? -1 : x->len < y->len;
}

int fde_index_build_cfi(const uint8_t *data, size_t size, uint64_t vaddr, int kind, uint64_t lo,
			uint64_t hi, struct fde_index **out, struct errmsg *err)
{
	struct collect c;
	struct fde_index *x;
	size_t i, n;
	int rc;

	*out = NULL;
	memset(&c, 0, sizeof(c));
	c.lo = lo;
	c.hi = hi < lo ? lo : hi - lo > (1ull << 32) ? lo + (1ull << 32) : hi;
	rc = cfi_fdes(data, size, vaddr, kind, collect_fde, &c, NULL, err);
	if (c.err) {
		xfree(c.r);
		return errmsg_set(err, c.err, c.err == -E2BIG ? "more than %u FDEs" :
					      "out of memory for %u FDEs", FDE_INDEX_MAX);
	}
	if (rc < 0 || !c.n) {
		xfree(c.r);
		return rc < 0 ? rc : errmsg_set(err, -ENOENT, "no FDE in the executable code");
	}
	qsort(c.r, c.n, sizeof(*c.r), range_cmp);
	for (i = 1, n = 1; i < c.n; i++)
		if (c.r[i].start != c.r[n - 1].start)
			c.r[n++] = c.r[i];
	x = xcalloc(1, sizeof(*x));
	x->base = lo;
	x->count = n;
	x->r = try_realloc(c.r, n * sizeof(*c.r));
	if (!x->r)
		x->r = c.r; /* shrinking failed: keep the larger block */
	*out = x;
	return 0;
}

/* A CFI section read into memory of ours (not the elf_file's section cache: the index is all
 * that is kept). Compressed sections (.debug_frame only) are read through the cache. */
static int read_cfi(struct elf_file *e, const char *name, uint8_t **own, const void **data,
		    size_t *size, uint64_t *vaddr)
{
	struct elf_section_info si;

	*own = NULL;
	if (elf_section_info(e, name, &si) < 0 || si.type == SHT_NOBITS || !si.size)
		return -ENOENT;
	if (si.flags & SHF_COMPRESSED)
		return elf_section(e, name, data, size, vaddr);
	if (si.size > ELF_MAX_SECTION_BYTES)
		return -E2BIG;
	*own = try_malloc((size_t)si.size);
	if (!*own)
		return -ENOMEM;
	if (elf_read(e, si.offset, *own, (size_t)si.size) < 0) {
		xfree(*own);
		*own = NULL;
		return -EIO;
	}
	*data = *own;
	*size = (size_t)si.size;
	*vaddr = si.addr;
	return 0;
}

int fde_index_build(struct elf_file *e, struct fde_index **out, struct errmsg *err)
{
	static const char *const names[] = { ".eh_frame", ".debug_frame" };
	const struct elf_segment *seg;
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t nseg = 0, i;
	int rc = -ENOENT;

	*out = NULL;
	seg = elf_segments(e, &nseg);
	for (i = 0; i < nseg; i++) {
		if (!(seg[i].flags & PF_X) || seg[i].vaddr + seg[i].memsz < seg[i].vaddr)
			continue;
		if (seg[i].vaddr < lo)
			lo = seg[i].vaddr;
		if (seg[i].vaddr + seg[i].memsz > hi)
			hi = seg[i].vaddr + seg[i].memsz;
	}
	if (lo >= hi)
		return errmsg_set(err, -ENOENT, "no executable segment");
	for (i = 0; i < 2 && rc == -ENOENT; i++) {
		uint8_t *own;
		const void *data;
		size_t size;
		uint64_t vaddr;

		rc = read_cfi(e, names[i], &own, &data, &size, &vaddr);
		if (rc == 0)
			rc = fde_index_build_cfi(data, size, vaddr,
						 i ? CFI_DEBUG_FRAME : CFI_EH_FRAME, lo, hi, out, err);
		else if (rc != -ENOENT)
			errmsg_set(err, rc, "cannot read '%s'", names[i]);
		xfree(own);
	}
	if (rc == -ENOENT && !*out)
		return errmsg_set(err, -ENOENT, "no FDE in the executable code");
	return rc;
}

int fde_index_lookup(const struct fde_index *x, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi, back;
	uint64_t off;

	if (!x || !x->count || vaddr < x->base || vaddr - x->base > UINT32_MAX)
		return 0;
	off = vaddr - x->base;
	hi = x->count;
	/* the last range starting at or below off */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->r[mid].start <= off)
			lo = mid;
		else
			hi = mid;
	}
	if (x->r[lo].start > off)
		return 0;
	/* an FDE inside another (rare): the outer one holds what follows the inner one */
	for (back = 0; back < FDE_INDEX_NEST && back <= lo; back++) {
		const struct fde_range *r = &x->r[lo - back];

		if (off - r->start < r->len) {
			*start = x->base + r->start;
			return 1;
		}
	}
	return 0;
}

size_t fde_index_count(const struct fde_index *x)
{
	return x ? x->count : 0;
}

size_t fde_index_bytes(const struct fde_index *x)
{
	return x ? sizeof(*x) + x->count * sizeof(*x->r) : 0;
}

void fde_index_free(struct fde_index *x)
{
	if (!x)
		return;
	xfree(x->r);
	xfree(x);
}
