/* gopclntab.c: the .gopclntab reader (see gopclntab.h for what it reads and its limits).
 *
 * Layout of the table (offsets from its header; runtime/symtab.go's pcHeader):
 *   0   u32  magic        0xfffffffa (1.16-1.17), 0xfffffff0 (1.18-1.19), 0xfffffff1 (1.20+)
 *   4   u8,u8 pad (0, 0), u8 minLC (instruction quantum, 1 on x86), u8 ptrSize (8)
 *   8   word nfunc, nfiles, [textStart: 1.18+], funcnameOffset, cuOffset, filetabOffset,
 *            pctabOffset, pclnOffset
 * At pclnOffset: the functab, nfunc + 1 pairs (entry, funcoff) of u32 (1.18+: entry relative to
 * textStart) or u64 (1.16: absolute entry), then the _func records at pclnOffset + funcoff:
 *   1.18-1.19: u32 entryoff, i32 nameoff, i32 args, u32 deferreturn, u32 pcsp, pcfile, pcln,
 *              npcdata, cuOffset, u8 funcID, flag, pad, nfuncdata (40 bytes)
 *   1.20+:     the same with i32 startLine after cuOffset (44 bytes)
 *   1.16-1.17: u64 entry, then nameoff ... cuOffset, u8 funcID, pad[2], nfuncdata (44 bytes)
 * followed by u32 pcdata[npcdata] (offsets into pctab) and funcdata[nfuncdata] (1.18+: u32
 * offsets from moduledata.gofunc, ~0 for none; 1.16: u64 addresses, 8-aligned).
 * A pc-value table is a list of (zig-zag uvarint value delta, uvarint pc delta x quantum)
 * pairs starting at value -1 and pc = the function's entry; a zero value delta after the first
 * pair ends it. Files: pcfile gives an index i, cutab[cuOffset + i] (u32) an offset into
 * filetab. Inlined calls: pcdata[2] (PCDATA_InlTreeIndex) gives an index into funcdata[3]
 * (FUNCDATA_InlTree), entries of 20 bytes (1.16-1.19: nameoff at 12, parentPc at 16) or 16
 * bytes (1.20+: nameOff at 4, parentPc at 8); the caller's file and line are those of
 * entry + parentPc. */
#include "agent/gopclntab.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define GO_MAGIC_116 0xfffffffau
#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u
#define GO_MAGIC_12  0xfffffffbu

#define PCDATA_INLTREE 2
#define FUNCDATA_INLTREE 3

/* runtime.moduledata word indexes (see runtime/symtab.go): pcHeader, then six slices of three
 * words, findfunctab, minpc, maxpc, text (22), ...; gofunc is word 38 in 1.18-1.19 and 40 from
 * 1.20 (covctrs/ecovctrs came before it). */
#define MD_FUNCNAMETAB 1
#define MD_PCLNTABLE 13
#define MD_TEXT 22
#define MD_GOFUNC_118 38
#define MD_GOFUNC_120 40

#define BLOCK 4096
#define NBLOCKS 16
#define NAME_POOL (32u << 10) /* names and files of one lookup */

struct block {
	uint64_t off;  /* file offset of data[0]; UINT64_MAX when empty */
	uint32_t len;
	uint64_t used;
	uint8_t data[BLOCK];
};

struct functab_ent {
	uint32_t entry;   /* relative to text */
	uint32_t funcoff; /* relative to the functab's start */
};

struct gopclntab {
	struct elf_file *e;
	int layout;                  /* 116, 118, 120 */
	uint32_t quantum;
	uint64_t hdr_off, hdr_vaddr; /* file offset and vaddr of the header */
	uint64_t end_off;            /* end of the readable table (file offset) */
	uint64_t funcname_off, cu_off, filetab_off, pctab_off, pcln_off; /* file offsets */
	uint64_t text;               /* link-time address entries are relative to */
	uint64_t gofunc;             /* moduledata.gofunc (1.18+), 0 if unknown */
	int inline_ok;
	struct functab_ent *ftab;    /* nfunc + 1 entries */
	uint32_t nfunc;
	struct block *blocks;
	uint64_t tick;
	char *pool;                  /* NAME_POOL bytes: the strings of the last lookup */
	size_t pool_used;
};

/* Read len bytes at file offset off through the block cache: 0 or -EIO. */
static int rd(struct gopclntab *g, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;

	if (len > BLOCK)
		return elf_read(g->e, off, buf, len);
	while (len) {
		uint64_t base = off & ~(uint64_t)(BLOCK - 1);
		struct block *b = NULL, *victim = &g->blocks[0];
		size_t i, n;

		for (i = 0; i < NBLOCKS; i++) {
			if (g->blocks[i].off == base) {
				b = &g->blocks[i];
				break;
			}
			if (g->blocks[i].used < victim->used)
				victim = &g->blocks[i];
		}
		if (!b) {
			uint64_t size = elf_size(g->e);

			if (base >= size)
				return -EIO;
			b = victim;
			b->off = UINT64_MAX;
			b->len = (uint32_t)(size - base < BLOCK ? size - base : BLOCK);
			if (elf_read(g->e, base, b->data, b->len) < 0)
				return -EIO;
			b->off = base;
		}
		b->used = ++g->tick;
		if (off - base >= b->len)
			return -EIO;
		n = b->len - (size_t)(off - base);
		if (n > len)
			n = len;
		memcpy(p, b->data + (off - base), n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int rd32(struct gopclntab *g, uint64_t off, uint32_t *v)
{
	return rd(g, off, v, 4);
}

static int rd64(struct gopclntab *g, uint64_t off, uint64_t *v)
{
	return rd(g, off, v, 8);
}

/* A NUL-terminated string at off, copied into the name pool (at most GOPCLNTAB_MAX_NAME - 1
 * bytes kept): the copy, or NULL. */
static const char *rdstr(struct gopclntab *g, uint64_t off)
{
	char *out = g->pool + g->pool_used;
	size_t n = 0, room = NAME_POOL - g->pool_used;

	if (off >= g->end_off || room < 2)
		return NULL;
	if (room > GOPCLNTAB_MAX_NAME)
		room = GOPCLNTAB_MAX_NAME;
	while (n < room - 1) {
		char c;

		if (off + n >= g->end_off || rd(g, off + n, &c, 1) < 0)
			return NULL;
		if (!c)
			break;
		out[n++] = c;
	}
	if (!n)
		return NULL;
	out[n] = '\0';
	g->pool_used += n + 1;
	return out;
}

static int uvarint(struct gopclntab *g, uint64_t *off, uint32_t *v)
{
	uint32_t r = 0;
	int shift;

	for (shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*off >= g->end_off || rd(g, *off, &b, 1) < 0)
			return -EIO;
		(*off)++;
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EIO;
}

/* The value of pc-value table at pctab + off for target, in a function [entry, end). -1 when
 * there is no table or it does not cover target (the runtime's answer too). When fn is set,
 * call it for every run instead (target ignored). */
static int32_t pcvalue(struct gopclntab *g, uint32_t off, uint64_t entry, uint64_t end,
		       uint64_t target, gopclntab_sp_fn fn, void *ctx, int *stop)
{
	uint64_t p = g->pctab_off + off, pc = entry;
	int32_t val = -1;
	uint32_t steps;

	if (!off || p < g->pctab_off)
		return -1;
	for (steps = 0; steps < GOPCLNTAB_MAX_STEPS; steps++) {
		uint32_t uv, pcd;
		uint64_t prev = pc;

		if (uvarint(g, &p, &uv) < 0 || (uv == 0 && steps))
			break;
		val += (int32_t)(-(uv & 1) ^ (uv >> 1));
		if (uvarint(g, &p, &pcd) < 0)
			break;
		pc += (uint64_t)pcd * g->quantum;
		if (pc < prev || pc > end)
			pc = end; /* a lying table: clamp to the function */
		if (fn) {
			if (pc > prev && (*stop = fn(ctx, prev, pc, val)))
				return -1;
		} else if (target < pc) {
			return val;
		}
		if (pc >= end)
			break;
	}
	return -1;
}

/* --- the header */

static int parse_header(struct gopclntab *g, const uint8_t *h, size_t hlen, uint64_t limit,
			struct errmsg *err)
{
	uint32_t magic;
	uint64_t w[8];
	int nw, i;

	if (hlen < 8 + 8 * 8)
		return errmsg_set(err, -EINVAL, ".gopclntab header is truncated");
	memcpy(&magic, h, 4);
	if (magic == GO_MAGIC_12)
		return errmsg_set(err, -ENOTSUP, ".gopclntab of Go before 1.16 (not supported)");
	if (magic == GO_MAGIC_116)
		g->layout = 116;
	else if (magic == GO_MAGIC_118)
		g->layout = 118;
	else if (magic == GO_MAGIC_120)
		g->layout = 120;
	else
		return errmsg_set(err, -EINVAL, "no .gopclntab magic (0x%08x)", magic);
	if (h[4] || h[5] || h[7] != 8 || (h[6] != 1 && h[6] != 2 && h[6] != 4))
		return errmsg_set(err, -ENOTSUP, ".gopclntab for another architecture "
				  "(quantum %u, pointer size %u)", h[6], h[7]);
	g->quantum = h[6];
	nw = g->layout == 116 ? 7 : 8;
	memcpy(w, h + 8, (size_t)nw * 8);
	if (w[0] == 0 || w[0] > GOPCLNTAB_MAX_FUNCS)
		return errmsg_set(err, -EINVAL, ".gopclntab with %llu functions",
				  (unsigned long long)w[0]);
	g->nfunc = (uint32_t)w[0];
	i = 2;
	if (g->layout != 116)
		g->text = w[i++];
	/* Every part lies inside the table. */
	for (; i < nw; i++) {
		if (w[i] < 8 + 8 * (uint64_t)nw || w[i] >= limit - g->hdr_off)
			return errmsg_set(err, -EINVAL, ".gopclntab part %d out of range", i);
	}
	i = g->layout == 116 ? 2 : 3;
	g->funcname_off = g->hdr_off + w[i];
	g->cu_off = g->hdr_off + w[i + 1];
	g->filetab_off = g->hdr_off + w[i + 2];
	g->pctab_off = g->hdr_off + w[i + 3];
	g->pcln_off = g->hdr_off + w[i + 4];
	g->end_off = limit;
	return 0;
}

/* A header candidate at p (8-aligned bytes of the file): magic, 0, 0, quantum 1, pointer 8. */
static int looks_like_header(const uint8_t *p)
{
	uint32_t magic;

	memcpy(&magic, p, 4);
	return (magic == GO_MAGIC_116 || magic == GO_MAGIC_118 || magic == GO_MAGIC_120) &&
	       !p[4] && !p[5] && p[6] == 1 && p[7] == 8;
}

/* Find the table: its section, or its header in the read-only segments. */
static int locate(struct gopclntab *g, struct errmsg *err)
{
	static const char *const names[] = { ".gopclntab", ".data.rel.ro.gopclntab" };
	struct elf_section_info si;
	const struct elf_segment *segs;
	uint8_t *buf;
	uint64_t scanned = 0;
	size_t nsegs, i;
	int rc = -ENOENT;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (elf_section_info(g->e, names[i], &si) == 0 && si.type != SHT_NOBITS &&
		    si.size >= 72 && si.offset <= elf_size(g->e) &&
		    si.size <= elf_size(g->e) - si.offset) {
			g->hdr_off = si.offset;
			g->hdr_vaddr = si.addr;
			g->end_off = si.offset + si.size;
			return 0;
		}
	}
	/* Stripped section headers: the header pattern, 8-aligned, in a non-writable segment. A
	 * file with section headers but no such section is not Go (and is not read through). */
	if (elf_section_count(g->e) > 0)
		return errmsg_set(err, -ENOENT, "no .gopclntab");
	segs = elf_segments(g->e, &nsegs);
	buf = xmalloc(65536);
	for (i = 0; i < nsegs && rc == -ENOENT; i++) {
		uint64_t off, end;

		if ((segs[i].flags & PF_W) || !segs[i].filesz || segs[i].offset > elf_size(g->e))
			continue;
		end = segs[i].offset + (segs[i].filesz < elf_size(g->e) - segs[i].offset
						? segs[i].filesz : elf_size(g->e) - segs[i].offset);
		for (off = (segs[i].offset + 7) & ~7ULL; off + 72 <= end && rc == -ENOENT;) {
			size_t n = (end - off < 65536 ? (size_t)(end - off) : 65536) & ~(size_t)7, j;

			if (!n || scanned > GOPCLNTAB_MAX_SCAN || elf_read(g->e, off, buf, n) < 0)
				break;
			scanned += n;
			for (j = 0; j + 8 <= n; j += 8) {
				if (looks_like_header(buf + j) && end - (off + j) >= 72) {
					g->hdr_off = off + j;
					g->hdr_vaddr = segs[i].vaddr + (off + j - segs[i].offset);
					g->end_off = end;
					rc = 0;
					break;
				}
			}
			off += n;
		}
	}
	xfree(buf);
	if (rc)
		errmsg_set(err, -ENOENT, "no .gopclntab");
	return rc;
}

/* --- moduledata: the text start when the header has none, and gofunc */

/* RELATIVE relocations (PIE builds store 0 in the file and the value as the addend). Walks
 * .rela.dyn: with want_offset, the addend of the relocation at vaddr goes to *out; else every
 * relocation whose addend is vaddr is offered to moduledata_ok() and the first that passes goes
 * to *out. 0 or -ENOENT. */
static int moduledata_ok(struct gopclntab *g, uint64_t md);

static int relative_reloc(struct gopclntab *g, uint64_t vaddr, int want_offset, uint64_t *out)
{
	struct elf_section_info si;
	uint64_t off;

	if (elf_type(g->e) != ET_DYN || elf_section_info(g->e, ".rela.dyn", &si) ||
	    si.type != SHT_RELA || si.offset > elf_size(g->e) || si.size > elf_size(g->e) - si.offset)
		return -ENOENT;
	for (off = 0; off + sizeof(Elf64_Rela) <= si.size; off += sizeof(Elf64_Rela)) {
		Elf64_Rela r;

		if (rd(g, si.offset + off, &r, sizeof(r)) < 0)
			return -ENOENT;
		if (ELF64_R_TYPE(r.r_info) != R_X86_64_RELATIVE)
			continue;
		if (want_offset && r.r_offset == vaddr) {
			*out = (uint64_t)r.r_addend;
			return 0;
		}
		if (!want_offset && (uint64_t)r.r_addend == vaddr && moduledata_ok(g, r.r_offset)) {
			*out = r.r_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* The pointer-sized word at link-time address vaddr, relocated. */
static int word_at(struct gopclntab *g, uint64_t vaddr, uint64_t *v)
{
	uint64_t off;

	if (elf_offset_of_vaddr(g->e, vaddr, &off) || rd64(g, off, v) < 0)
		return -EIO;
	if (*v == 0)
		relative_reloc(g, vaddr, 1, v);
	return 0;
}

/* Whether a moduledata at vaddr md points at this table. */
static int moduledata_ok(struct gopclntab *g, uint64_t md)
{
	uint64_t v;

	return word_at(g, md + 8 * MD_FUNCNAMETAB, &v) == 0 &&
	       v == g->hdr_vaddr + (g->funcname_off - g->hdr_off) &&
	       word_at(g, md + 8 * MD_PCLNTABLE, &v) == 0 &&
	       v == g->hdr_vaddr + (g->pcln_off - g->hdr_off);
}

/* Find runtime.moduledata: a word holding the table's address in a writable segment (or a
 * relocation putting it there). 0 and its address, or -ENOENT. */
static int find_moduledata(struct gopclntab *g, uint64_t *md)
{
	const struct elf_segment *segs;
	uint64_t *buf, scanned = 0;
	size_t nsegs, i;
	int rc = -ENOENT;

	if (relative_reloc(g, g->hdr_vaddr, 0, md) == 0)
		return 0;
	segs = elf_segments(g->e, &nsegs);
	buf = xmalloc(65536);
	for (i = 0; i < nsegs && rc; i++) {
		uint64_t off, end;

		if (!(segs[i].flags & PF_W) || !segs[i].filesz || segs[i].offset > elf_size(g->e))
			continue;
		end = segs[i].offset + (segs[i].filesz < elf_size(g->e) - segs[i].offset
						? segs[i].filesz : elf_size(g->e) - segs[i].offset);
		for (off = (segs[i].offset + 7) & ~7ULL; off + 8 <= end && rc;) {
			size_t n = (end - off < 65536 ? (size_t)(end - off) : 65536) & ~(size_t)7, j;

			if (!n || scanned > GOPCLNTAB_MAX_SCAN || elf_read(g->e, off, buf, n) < 0)
				break;
			scanned += n;
			for (j = 0; j < n / 8; j++) {
				uint64_t cand = segs[i].vaddr + (off + 8 * j - segs[i].offset);

				if (buf[j] == g->hdr_vaddr && moduledata_ok(g, cand)) {
					*md = cand;
					rc = 0;
					break;
				}
			}
			off += n;
		}
	}
	xfree(buf);
	return rc;
}

/* --- the function index */

static int load_functab(struct gopclntab *g, struct errmsg *err)
{
	size_t esz = g->layout == 116 ? 16 : 8, i, n = (size_t)g->nfunc + 1, chunk = 4096;
	uint8_t *buf;
	uint64_t first = 0;
	int rc = 0;

	if (g->pcln_off + (uint64_t)n * esz > g->end_off)
		return errmsg_set(err, -EINVAL, ".gopclntab function table out of range");
	g->ftab = try_malloc(n * sizeof(*g->ftab));
	buf = try_malloc(chunk * esz);
	if (!g->ftab || !buf) {
		xfree(buf);
		return errmsg_set(err, -ENOMEM, "out of memory for %zu Go functions", n);
	}
	for (i = 0; i < n && !rc; i += chunk) {
		size_t m = n - i < chunk ? n - i : chunk, j;

		if (elf_read(g->e, g->pcln_off + i * esz, buf, m * esz) < 0) {
			rc = errmsg_set(err, -EIO, "cannot read the Go function table");
			break;
		}
		for (j = 0; j < m; j++) {
			uint64_t entry, funcoff;

			if (esz == 16) {
				memcpy(&entry, buf + 16 * j, 8);
				memcpy(&funcoff, buf + 16 * j + 8, 8);
				if (i + j == 0)
					first = g->text = entry;
				entry -= first;
			} else {
				uint32_t a, b;

				memcpy(&a, buf + 8 * j, 4);
				memcpy(&b, buf + 8 * j + 4, 4);
				entry = a;
				funcoff = b;
			}
			/* entries must not go down (the runtime searches them) */
			if (entry > UINT32_MAX || funcoff > UINT32_MAX ||
			    (i + j && entry < g->ftab[i + j - 1].entry)) {
				rc = errmsg_set(err, -EINVAL, ".gopclntab function %zu out of order", i + j);
				break;
			}
			g->ftab[i + j].entry = (uint32_t)entry;
			g->ftab[i + j].funcoff = (uint32_t)funcoff;
		}
	}
	xfree(buf);
	return rc;
}

int gopclntab_open(struct elf_file *e, struct gopclntab **out, struct errmsg *err)
{
	struct gopclntab *g;
	uint8_t h[72];
	uint64_t md = 0;
	size_t i;
	int rc;

	*out = NULL;
	if (elf_machine(e) != EM_X86_64)
		return errmsg_set(err, -ENOTSUP, "not an x86-64 file");
	g = xcalloc(1, sizeof(*g));
	g->e = e;
	g->blocks = xcalloc(NBLOCKS, sizeof(*g->blocks));
	g->pool = xmalloc(NAME_POOL);
	for (i = 0; i < NBLOCKS; i++)
		g->blocks[i].off = UINT64_MAX;
	rc = locate(g, err);
	if (rc)
		goto fail;
	if (g->end_off - g->hdr_off < sizeof(h) || elf_read(e, g->hdr_off, h, sizeof(h)) < 0) {
		rc = errmsg_set(err, -EIO, "cannot read the .gopclntab header");
		goto fail;
	}
	rc = parse_header(g, h, sizeof(h), g->end_off, err);
	if (!rc)
		rc = load_functab(g, err);
	if (rc)
		goto fail;
	if (g->layout != 116) {
		/* The inline trees hang off moduledata.gofunc; the text start is there too when
		 * the header has none (PIE builds relocate it, Go 1.26 leaves it 0). */
		if (find_moduledata(g, &md) == 0) {
			uint64_t v;

			if (word_at(g, md + 8 * (g->layout == 118 ? MD_GOFUNC_118 : MD_GOFUNC_120), &v) == 0)
				g->gofunc = v;
			if (!g->text && word_at(g, md + 8 * MD_TEXT, &v) == 0)
				g->text = v;
		}
		if (!g->text) {
			uint64_t v;

			if (relative_reloc(g, g->hdr_vaddr + 24, 1, &v) == 0)
				g->text = v;
		}
		if (!g->text) {
			struct elf_section_info si;

			if (elf_section_info(e, ".text", &si) == 0)
				g->text = si.addr;
		}
		g->inline_ok = g->gofunc != 0;
	} else {
		/* 1.16-1.17: funcdata are absolute addresses (0 in a PIE file: unusable). */
		g->inline_ok = elf_type(e) == ET_EXEC;
	}
	if (!g->text) {
		rc = errmsg_set(err, -EINVAL, "cannot tell where the Go text starts");
		goto fail;
	}
	*out = g;
	return 0;
fail:
	gopclntab_free(g);
	return rc;
}

void gopclntab_free(struct gopclntab *g)
{
	if (!g)
		return;
	xfree(g->ftab);
	xfree(g->blocks);
	xfree(g->pool);
	xfree(g);
}

int gopclntab_layout(const struct gopclntab *g)
{
	return g->layout;
}

size_t gopclntab_bytes(const struct gopclntab *g)
{
	if (!g)
		return 0;
	return sizeof(*g) + ((size_t)g->nfunc + 1) * sizeof(*g->ftab) +
	       NBLOCKS * sizeof(*g->blocks) + NAME_POOL;
}

void gopclntab_text_range(const struct gopclntab *g, uint64_t *lo, uint64_t *hi)
{
	*lo = g->text + g->ftab[0].entry;
	*hi = g->text + g->ftab[g->nfunc].entry;
}

int gopclntab_has_inline(const struct gopclntab *g)
{
	return g->inline_ok;
}

/* --- lookups */

struct gofunc {
	uint64_t off;        /* file offset of the _func record */
	uint64_t entry, end; /* link-time [entry, end) */
	int32_t nameoff;
	uint32_t pcsp, pcfile, pcln, npcdata, cu;
	uint8_t nfuncdata;
	uint8_t flag;        /* funcFlag (1.17+; 0 in 1.16, where the byte is padding) */
	uint64_t pcdata_off; /* file offset of pcdata[0] */
};

static int read_func(struct gopclntab *g, uint32_t i, struct gofunc *f)
{
	uint8_t b[44];
	size_t base = g->layout == 116 ? 8 : 4, need = g->layout == 118 ? 40 : 44;

	f->off = g->pcln_off + g->ftab[i].funcoff;
	f->entry = g->text + g->ftab[i].entry;
	f->end = g->text + g->ftab[i + 1].entry;
	if (f->off < g->pcln_off || f->off + need > g->end_off || rd(g, f->off, b, need) < 0)
		return -EIO;
	memcpy(&f->nameoff, b + base, 4);
	memcpy(&f->pcsp, b + base + 12, 4);
	memcpy(&f->pcfile, b + base + 16, 4);
	memcpy(&f->pcln, b + base + 20, 4);
	memcpy(&f->npcdata, b + base + 24, 4);
	memcpy(&f->cu, b + base + 28, 4);
	f->nfuncdata = b[need - 1];
	f->flag = b[base + (g->layout == 120 ? 37 : 33)];
	f->pcdata_off = f->off + need;
	if (f->npcdata > 1024)
		return -EIO;
	return 0;
}

static int32_t pcdata(struct gopclntab *g, const struct gofunc *f, uint32_t table, uint64_t pc)
{
	uint32_t off;

	if (table >= f->npcdata || rd32(g, f->pcdata_off + 4 * table, &off) < 0)
		return -1;
	return pcvalue(g, off, f->entry, f->end, pc, NULL, NULL, NULL);
}

/* The file offset of the inline tree of f, or 0. */
static uint64_t inline_tree(struct gopclntab *g, const struct gofunc *f)
{
	uint64_t addr, off, p = f->pcdata_off + 4 * (uint64_t)f->npcdata;

	if (!g->inline_ok || FUNCDATA_INLTREE >= f->nfuncdata)
		return 0;
	if (g->layout == 116) {
		if (p & 4)
			p += 4; /* 8-aligned pointers (offset and address agree modulo 8) */
		if (rd64(g, p + 8 * FUNCDATA_INLTREE, &addr) < 0 || !addr)
			return 0;
	} else {
		uint32_t o;

		if (rd32(g, p + 4 * FUNCDATA_INLTREE, &o) < 0 || o == UINT32_MAX)
			return 0;
		addr = g->gofunc + o;
	}
	if (elf_offset_of_vaddr(g->e, addr, &off))
		return 0;
	return off;
}

static const char *func_name(struct gopclntab *g, int32_t nameoff)
{
	if (nameoff < 0)
		return NULL;
	return rdstr(g, g->funcname_off + (uint32_t)nameoff);
}

static void file_line(struct gopclntab *g, const struct gofunc *f, uint64_t pc, const char **file,
		      int *line)
{
	int32_t fi = pcvalue(g, f->pcfile, f->entry, f->end, pc, NULL, NULL, NULL);
	int32_t ln = pcvalue(g, f->pcln, f->entry, f->end, pc, NULL, NULL, NULL);
	uint32_t foff;

	*file = NULL;
	*line = ln > 0 ? ln : 0;
	if (fi < 0 || rd32(g, g->cu_off + 4 * ((uint64_t)f->cu + (uint32_t)fi), &foff) < 0 ||
	    foff == UINT32_MAX)
		return;
	*file = rdstr(g, g->filetab_off + foff);
}

/* The index of the function holding pc, or -1. */
static int64_t find_func(const struct gopclntab *g, uint64_t pc)
{
	uint64_t rel;
	uint32_t lo = 0, hi = g->nfunc;

	if (pc < g->text || pc - g->text >= g->ftab[g->nfunc].entry)
		return -1;
	rel = pc - g->text;
	if (rel < g->ftab[0].entry)
		return -1;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (g->ftab[mid].entry <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

size_t gopclntab_lookup(struct gopclntab *g, uint64_t pc, struct gopclntab_frame *out,
			size_t max, uint64_t *entry)
{
	struct gofunc f;
	int64_t i = find_func(g, pc);
	uint64_t tree = 0, cur = pc;
	size_t n = 0;
	int32_t ix;

	g->pool_used = 0;
	if (i < 0 || !max || read_func(g, (uint32_t)i, &f) < 0)
		return 0;
	if (entry)
		*entry = f.entry;
	if (max > GOPCLNTAB_MAX_INLINE + 1)
		max = GOPCLNTAB_MAX_INLINE + 1;
	ix = pcdata(g, &f, PCDATA_INLTREE, pc);
	if (ix >= 0)
		tree = inline_tree(g, &f);
	/* Inlined calls, innermost first: each has the file and line of cur, and its caller's
	 * position is at entry + parentPc. */
	while (ix >= 0 && tree && n + 1 < max) {
		size_t esz = g->layout == 120 ? 16 : 20, noff = g->layout == 120 ? 4 : 12;
		int32_t nameoff, parent_pc;
		uint8_t rec[20];

		if (ix > (1 << 24) || rd(g, tree + (uint64_t)ix * esz, rec, esz) < 0)
			break;
		memcpy(&nameoff, rec + noff, 4);
		memcpy(&parent_pc, rec + noff + 4, 4);
		out[n].name = func_name(g, nameoff);
		if (!out[n].name)
			break;
		file_line(g, &f, cur, &out[n].file, &out[n].line);
		out[n].inlined = 1;
		n++;
		if (parent_pc < 0 || f.entry + (uint32_t)parent_pc >= f.end)
			break;
		cur = f.entry + (uint32_t)parent_pc;
		ix = pcdata(g, &f, PCDATA_INLTREE, cur);
	}
	out[n].name = func_name(g, f.nameoff);
	if (!out[n].name)
		return 0;
	out[n].inlined = 0;
	if (ix >= 0) {
		/* inlined code we could not expand: its line is not this function's */
		out[n].file = NULL;
		out[n].line = 0;
	} else {
		file_line(g, &f, cur, &out[n].file, &out[n].line);
	}
	return n + 1;
}

int gopclntab_sp_deltas(struct gopclntab *g, gopclntab_sp_fn fn, void *ctx)
{
	uint32_t i;
	int stop = 0;

	for (i = 0; i < g->nfunc && !stop; i++) {
		struct gofunc f;

		if (read_func(g, i, &f) < 0 || f.end <= f.entry)
			continue;
		pcvalue(g, f.pcsp, f.entry, f.end, 0, fn, ctx, &stop);
	}
	return stop;
}

/* Functions an unwinder must know by name: Go 1.16 has no funcFlag, sigtramp's flag does not
 * say it is the signal handler, and the signal restorer has none in any release. */
static const struct {
	const char *name;
	unsigned flags;
} special_names[] = {
	{ "runtime.goexit", GOPCLNTAB_TOPFRAME },
	{ "runtime.mstart", GOPCLNTAB_TOPFRAME },
	{ "runtime.rt0_go", GOPCLNTAB_TOPFRAME | GOPCLNTAB_SPWRITE },
	{ "runtime.sigtramp", GOPCLNTAB_TOPFRAME | GOPCLNTAB_SIGTRAMP },
	{ "runtime.systemstack", GOPCLNTAB_SPWRITE },
	{ "runtime.mcall", GOPCLNTAB_SPWRITE },
	{ "runtime.morestack", GOPCLNTAB_SPWRITE },
	{ "runtime.asmcgocall", GOPCLNTAB_SPWRITE },
	{ "runtime.gogo", GOPCLNTAB_SPWRITE },
	{ "runtime.nanotime1", GOPCLNTAB_SPWRITE },
	{ "runtime.walltime1", GOPCLNTAB_SPWRITE },
	{ "time.now", GOPCLNTAB_SPWRITE },
	{ "runtime.sigreturn", GOPCLNTAB_SIGRETURN },
	{ "runtime.sigreturn__sigaction", GOPCLNTAB_SIGRETURN },
	{ "runtime.casgstatus", GOPCLNTAB_CASGSTATUS },
};

/* funcFlag bits (runtime/symtab.go) */
#define FUNCFLAG_TOPFRAME 1
#define FUNCFLAG_SPWRITE 2

int gopclntab_special_funcs(struct gopclntab *g, gopclntab_func_fn fn, void *ctx)
{
	uint32_t i;
	size_t k;
	int rc;

	for (i = 0; i < g->nfunc; i++) {
		struct gofunc f;
		const char *name;
		char pre[17]; /* strlen("runtime.sigreturn") */
		unsigned flags = 0;

		if (read_func(g, i, &f) < 0 || f.end <= f.entry)
			continue;
		if (f.flag & FUNCFLAG_TOPFRAME)
			flags |= GOPCLNTAB_TOPFRAME;
		if (f.flag & FUNCFLAG_SPWRITE)
			flags |= GOPCLNTAB_SPWRITE;
		/* A name is read whole only where it may matter (reading every name byte by byte
		 * through the block cache would double the cost of a table): a flagged function,
		 * the restorer, casgstatus, and in 1.16 the runtime's functions. */
		if (!flags && (f.nameoff < 0 ||
			       rd(g, g->funcname_off + (uint32_t)f.nameoff, pre, sizeof(pre)) < 0 ||
			       (memcmp(pre, "runtime.sigreturn", sizeof(pre)) &&
				memcmp(pre, "runtime.casgstatu", sizeof(pre)) &&
				(g->layout != 116 || (memcmp(pre, "runtime.", 8) &&
						      memcmp(pre, "time.now", 8))))))
			continue;
		g->pool_used = 0;
		name = func_name(g, f.nameoff);
		if (!name)
			continue;
		/* the names stand in for the flags only where there may be none (1.16: an ABI
		 * wrapper of 1.17+ has the name of its body, not its flags) */
		if (!strncmp(name, "runtime.", 8) || !strncmp(name, "time.", 5))
			for (k = 0; k < sizeof(special_names) / sizeof(special_names[0]); k++)
				if (!strcmp(name, special_names[k].name))
					flags |= special_names[k].flags &
						 (g->layout == 116 ? ~0u : ~(GOPCLNTAB_TOPFRAME |
									GOPCLNTAB_SPWRITE));
		if (flags && (rc = fn(ctx, f.entry, f.end, name, flags)))
			return rc;
	}
	return 0;
}
