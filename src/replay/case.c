/* case.c: the replay case file (case.h). */
#include "replay/case.h"

#include "lib/alloc.h"
#include "profile/gzip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- little-endian fields */
static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)v);
	wr16(p + 2, (uint16_t)(v >> 16));
}

static void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

/* ---- building */
/* Room for one element at `at` of an array of n (grown): returns it. */
static void *insert_at(void *arr, size_t n, size_t size, size_t at)
{
	memmove((char *)arr + (at + 1) * size, (char *)arr + at * size, (n - at) * size);
	return (char *)arr + at * size;
}

static size_t mem_find(const struct replay_case *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nmem;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->mem[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo; /* the first range starting after addr */
}

int case_add_mem(struct replay_case *c, uint64_t addr, const void *data, uint32_t len)
{
	size_t at = mem_find(c, addr);
	struct case_mem *m;

	if (len == 0 || addr + len < addr)
		return -EINVAL;
	/* held already (capture adds whole pages): keep the first copy */
	if (at > 0 && c->mem[at - 1].addr + c->mem[at - 1].len > addr)
		return 0;
	if (at < c->nmem && addr + len > c->mem[at].addr)
		return -EEXIST;
	if (c->nmem >= CASE_MAX_ITEMS)
		return -ENOSPC;
	ALLOC_GROW(c->mem, c->nmem + 1, c->mem_cap);
	m = insert_at(c->mem, c->nmem++, sizeof(*c->mem), at);
	m->addr = addr;
	m->len = len;
	m->data = xmalloc(len);
	memcpy(m->data, data, len);
	return 0;
}

/* Where idx is or goes in an array sorted by its leading u32 index (struct case_mapping,
 * struct case_entry). */
static size_t idx_pos(const void *arr, size_t n, size_t size, uint32_t idx)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t at;

		memcpy(&at, (const char *)arr + mid * size, sizeof(at));
		if (at < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int case_add_mapping(struct replay_case *c, uint32_t idx, const struct unwind_mapping *m,
		     const char *file)
{
	size_t at = idx_pos(c->maps, c->nmaps, sizeof(*c->maps), idx);
	struct case_mapping *cm;

	if (at < c->nmaps && c->maps[at].idx == idx)
		return 0;
	if (c->nmaps >= CASE_MAX_ITEMS)
		return -ENOSPC;
	ALLOC_GROW(c->maps, c->nmaps + 1, c->maps_cap);
	cm = insert_at(c->maps, c->nmaps++, sizeof(*c->maps), at);
	cm->idx = idx;
	cm->m = *m;
	cm->file = xstrdup(file ? file : "");
	return 0;
}

int case_add_entry(struct replay_case *c, uint32_t idx, const struct unwind_entry *e)
{
	size_t at = idx_pos(c->entries, c->nentries, sizeof(*c->entries), idx);
	struct case_entry *ce;

	if (at < c->nentries && c->entries[at].idx == idx)
		return 0;
	if (c->nentries >= CASE_MAX_ITEMS)
		return -ENOSPC;
	ALLOC_GROW(c->entries, c->nentries + 1, c->entries_cap);
	ce = insert_at(c->entries, c->nentries++, sizeof(*c->entries), at);
	ce->idx = idx;
	ce->e = *e;
	return 0;
}

int case_add_name(struct replay_case *c, uint64_t word, int leaf, const char *text)
{
	struct case_name *n;

	if (case_name(c, word, leaf))
		return 0;
	if (c->nnames >= CASE_MAX_ITEMS)
		return -ENOSPC;
	ALLOC_GROW(c->names, c->nnames + 1, c->names_cap);
	n = &c->names[c->nnames++];
	n->word = word;
	n->leaf = leaf ? 1 : 0;
	n->text = xstrdup(text);
	return 0;
}

/* ---- lookups */
const struct case_mapping *case_mapping(const struct replay_case *c, uint32_t idx)
{
	size_t at = idx_pos(c->maps, c->nmaps, sizeof(*c->maps), idx);

	return at < c->nmaps && c->maps[at].idx == idx ? &c->maps[at] : NULL;
}

const struct case_entry *case_entry(const struct replay_case *c, uint32_t idx)
{
	size_t at = idx_pos(c->entries, c->nentries, sizeof(*c->entries), idx);

	return at < c->nentries && c->entries[at].idx == idx ? &c->entries[at] : NULL;
}

const char *case_name(const struct replay_case *c, uint64_t word, int leaf)
{
	size_t i;

	for (i = 0; i < c->nnames; i++)
		if (c->names[i].word == word && c->names[i].leaf == (leaf ? 1 : 0))
			return c->names[i].text;
	return NULL;
}

int case_read_u64(const struct replay_case *c, uint64_t addr, uint64_t *out)
{
	size_t at = mem_find(c, addr);
	const struct case_mem *m;

	if (at == 0)
		return -1;
	m = &c->mem[at - 1];
	if (addr - m->addr > m->len || m->len - (addr - m->addr) < 8)
		return -1;
	memcpy(out, m->data + (addr - m->addr), 8);
	return 0;
}

void case_release(struct replay_case *c)
{
	size_t i;

	if (!c)
		return;
	xfree(c->description);
	xfree(c->origin);
	xfree(c->comm);
	for (i = 0; i < c->nmem; i++)
		xfree(c->mem[i].data);
	xfree(c->mem);
	for (i = 0; i < c->nmaps; i++)
		xfree(c->maps[i].file);
	xfree(c->maps);
	xfree(c->entries);
	xfree(c->deferred);
	for (i = 0; i < c->nnames; i++)
		xfree(c->names[i].text);
	xfree(c->names);
	xfree(c->expect_words);
	xfree(c->expect);
	memset(c, 0, sizeof(*c));
}

/* ---- encoding */
static int put_section(struct buf *b, uint32_t type, const void *data, size_t len)
{
	uint8_t h[8];

	if (len > CASE_MAX_BYTES)
		return -ENOMEM;
	wr32(h, type);
	wr32(h + 4, (uint32_t)len);
	return buf_append(b, h, 8) || (len && buf_append(b, data, len)) ? -ENOMEM : 0;
}

static int put_meta(struct buf *m, const char *key, const char *value)
{
	if (!value)
		return 0;
	return buf_append(m, key, strlen(key) + 1) || buf_append(m, value, strlen(value) + 1)
		       ? -ENOMEM
		       : 0;
}

int case_encode(const struct replay_case *c, struct buf *out)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED), s = BUF_INIT(BUF_UNLIMITED);
	uint8_t r[68];
	size_t i;
	int rc = -ENOMEM;

	if (buf_append(&b, CASE_MAGIC, 8))
		goto out;
	wr32(r, CASE_VERSION);
	wr32(r + 4, 0);
	if (buf_append(&b, r, 8))
		goto out;
	if (put_meta(&s, "description", c->description) || put_meta(&s, "origin", c->origin) ||
	    put_meta(&s, "comm", c->comm) || put_section(&b, CASE_SEC_META, s.data, s.len))
		goto out;
	wr32(r, c->pid);
	wr32(r + 4, c->tid);
	wr64(r + 8, c->pc);
	wr64(r + 16, c->sp);
	wr64(r + 24, c->bp);
	wr64(r + 32, c->fsbase);
	wr32(r + 40, c->flags);
	wr32(r + 44, c->map_first);
	wr32(r + 48, c->map_count);
	wr64(r + 52, c->bx);
	wr64(r + 60, c->di);
	if (put_section(&b, CASE_SEC_REGS, r, 68))
		goto out;
	if (c->jit.count) {
		buf_reset(&s);
		wr32(r, c->jit.count);
		if (buf_append(&s, r, 4))
			goto out;
		for (i = 0; i < c->jit.count && i < UNW_JIT_LINKS_MAX; i++) {
			wr64(r, c->jit.link[i].ra);
			wr64(r + 8, c->jit.link[i].below);
			if (buf_append(&s, r, 16))
				goto out;
		}
		if (put_section(&b, CASE_SEC_JIT_LINKS, s.data, s.len))
			goto out;
	}
	for (i = 0; i < c->nmem; i++) {
		buf_reset(&s);
		wr64(r, c->mem[i].addr);
		if (buf_append(&s, r, 8) || buf_append(&s, c->mem[i].data, c->mem[i].len) ||
		    put_section(&b, CASE_SEC_MEM, s.data, s.len))
			goto out;
	}
	for (i = 0; i < c->nmaps; i++) {
		const struct unwind_mapping *m = &c->maps[i].m;

		buf_reset(&s);
		wr32(r, c->maps[i].idx);
		wr64(r + 4, m->start);
		wr64(r + 12, m->end);
		wr64(r + 20, m->bias);
		wr32(r + 28, m->table_first);
		wr32(r + 32, m->table_count);
		wr16(r + 36, m->flags);
		r[38] = m->kind;
		r[39] = m->index_shift;
		wr32(r + 40, m->index_count);
		if (buf_append(&s, r, 44) ||
		    buf_append(&s, c->maps[i].file, strlen(c->maps[i].file)) ||
		    put_section(&b, CASE_SEC_MAPPING, s.data, s.len))
			goto out;
	}
	buf_reset(&s);
	for (i = 0; i < c->nentries; i++) {
		const struct unwind_entry *e = &c->entries[i].e;

		wr32(r, c->entries[i].idx);
		wr32(r + 4, e->pc);
		wr16(r + 8, e->off);
		r[10] = e->kind;
		r[11] = (uint8_t)e->rbp;
		if (buf_append(&s, r, 12))
			goto out;
	}
	if (c->nentries && put_section(&b, CASE_SEC_ENTRIES, s.data, s.len))
		goto out;
	if (c->ndeferred) {
		buf_reset(&s);
		for (i = 0; i < c->ndeferred; i++) {
			wr64(r, c->deferred[i]);
			if (buf_append(&s, r, 8))
				goto out;
		}
		if (put_section(&b, CASE_SEC_DEFERRED, s.data, s.len))
			goto out;
	}
	for (i = 0; i < c->nnames; i++) {
		buf_reset(&s);
		wr64(r, c->names[i].word);
		r[8] = c->names[i].leaf;
		if (buf_append(&s, r, 9) ||
		    buf_append(&s, c->names[i].text, strlen(c->names[i].text)) ||
		    put_section(&b, CASE_SEC_NAME, s.data, s.len))
			goto out;
	}
	if (c->expect) {
		buf_reset(&s);
		wr32(r, c->expect_result);
		wr32(r + 4, (uint32_t)c->nexpect);
		if (buf_append(&s, r, 8))
			goto out;
		for (i = 0; i < c->nexpect; i++) {
			wr64(r, c->expect_words[i]);
			if (buf_append(&s, r, 8))
				goto out;
		}
		if (buf_append(&s, c->expect, strlen(c->expect)) ||
		    put_section(&b, CASE_SEC_EXPECT, s.data, s.len))
			goto out;
	}
	rc = gzip_compress(b.data, b.len, 9, out) < 0 ? -ENOMEM : 0;
out:
	buf_release(&b);
	buf_release(&s);
	return rc;
}

/* ---- parsing */
static char *dup_text(const uint8_t *p, size_t n)
{
	char *s = xmalloc(n + 1);

	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static int text_ok(const uint8_t *p, size_t n)
{
	return memchr(p, 0, n) == NULL && memchr(p, '\n', n) == NULL;
}

static int parse_meta(struct replay_case *c, const uint8_t *p, size_t n, struct errmsg *err)
{
	size_t at = 0;

	while (at < n) {
		const uint8_t *k = p + at, *v, *end;
		char **slot = NULL;

		end = memchr(k, 0, n - at);
		if (!end || (size_t)(end - p) + 1 >= n)
			return errmsg_set(err, -EINVAL, "case: a META key without its value");
		v = end + 1;
		end = memchr(v, 0, n - (size_t)(v - p));
		if (!end)
			return errmsg_set(err, -EINVAL, "case: a META value without its end");
		if (!strcmp((const char *)k, "description"))
			slot = &c->description;
		else if (!strcmp((const char *)k, "origin"))
			slot = &c->origin;
		else if (!strcmp((const char *)k, "comm"))
			slot = &c->comm;
		if (slot) {
			if (*slot || !text_ok(v, (size_t)(end - v)))
				return errmsg_set(err, -EINVAL, "case: META '%s' twice or not text",
						  (const char *)k);
			*slot = dup_text(v, (size_t)(end - v));
		}
		at = (size_t)(end - p) + 1;
	}
	return 0;
}

static int parse_section(struct replay_case *c, uint32_t type, const uint8_t *p, size_t n,
			 struct errmsg *err)
{
	size_t i;

	switch (type) {
	case CASE_SEC_META:
		return parse_meta(c, p, n, err);
	case CASE_SEC_REGS:
		if (n != 68 || c->have_regs)
			return errmsg_set(err, -EINVAL, "case: REGS of %zu bytes, or twice", n);
		c->pid = rd32(p);
		c->tid = rd32(p + 4);
		c->pc = rd64(p + 8);
		c->sp = rd64(p + 16);
		c->bp = rd64(p + 24);
		c->fsbase = rd64(p + 32);
		c->flags = rd32(p + 40);
		c->map_first = rd32(p + 44);
		c->map_count = rd32(p + 48);
		c->bx = rd64(p + 52);
		c->di = rd64(p + 60);
		if (c->map_count > UNW_MAX_PID_MAPPINGS)
			return errmsg_set(err, -EINVAL, "case: %u mappings", c->map_count);
		c->have_regs = 1;
		return 0;
	case CASE_SEC_MEM: {
		uint64_t addr;
		size_t at;
		int rc;

		if (n <= 8 || n - 8 > CASE_MAX_BYTES)
			return errmsg_set(err, -EINVAL, "case: MEM of %zu bytes", n);
		addr = rd64(p);
		at = mem_find(c, addr);
		if (addr + (n - 8) < addr ||
		    (at > 0 && c->mem[at - 1].addr + c->mem[at - 1].len > addr) ||
		    (at < c->nmem && addr + (n - 8) > c->mem[at].addr))
			return errmsg_set(err, -EINVAL, "case: MEM ranges overlap at 0x%llx",
					  (unsigned long long)addr);
		rc = case_add_mem(c, addr, p + 8, (uint32_t)(n - 8));
		return rc ? errmsg_set(err, rc, "case: MEM at 0x%llx refused",
				       (unsigned long long)addr)
			  : 0;
	}
	case CASE_SEC_MAPPING: {
		struct unwind_mapping m;
		char *file;
		uint32_t idx;
		int rc;

		if (n < 44 || n - 44 > 4096 || !text_ok(p + 44, n - 44))
			return errmsg_set(err, -EINVAL, "case: MAPPING of %zu bytes", n);
		memset(&m, 0, sizeof(m));
		idx = rd32(p);
		m.start = rd64(p + 4);
		m.end = rd64(p + 12);
		m.bias = rd64(p + 20);
		m.table_first = rd32(p + 28);
		m.table_count = rd32(p + 32);
		m.flags = rd16(p + 36);
		m.kind = p[38];
		m.index_shift = p[39];
		m.index_count = rd32(p + 40);
		if (m.end <= m.start || case_mapping(c, idx))
			return errmsg_set(err, -EINVAL, "case: MAPPING %u empty or twice", idx);
		file = dup_text(p + 44, n - 44);
		rc = case_add_mapping(c, idx, &m, file);
		xfree(file);
		return rc ? errmsg_set(err, rc, "case: too many mappings") : 0;
	}
	case CASE_SEC_ENTRIES:
		if (n % 12)
			return errmsg_set(err, -EINVAL, "case: ENTRIES of %zu bytes", n);
		for (i = 0; i < n; i += 12) {
			struct unwind_entry e;
			uint32_t idx = rd32(p + i);

			e.pc = rd32(p + i + 4);
			e.off = rd16(p + i + 8);
			e.kind = p[i + 10];
			e.rbp = (int8_t)p[i + 11];
			if (case_entry(c, idx))
				return errmsg_set(err, -EINVAL, "case: entry %u twice", idx);
			if (case_add_entry(c, idx, &e))
				return errmsg_set(err, -ENOSPC, "case: too many entries");
		}
		return 0;
	case CASE_SEC_DEFERRED:
		if (n % 8 || c->deferred || n / 8 > MAX_USER_WORDS)
			return errmsg_set(err, -EINVAL, "case: DEFERRED of %zu bytes, or twice", n);
		c->ndeferred = n / 8;
		c->deferred = xmalloc(n ? n : 1);
		for (i = 0; i < c->ndeferred; i++)
			c->deferred[i] = rd64(p + 8 * i);
		return 0;
	case CASE_SEC_NAME: {
		char *text;
		int rc;

		if (n < 9 || n - 9 > 65536 || !text_ok(p + 9, n - 9))
			return errmsg_set(err, -EINVAL, "case: NAME of %zu bytes", n);
		if (case_name(c, rd64(p), p[8]))
			return errmsg_set(err, -EINVAL, "case: a word named twice");
		text = dup_text(p + 9, n - 9);
		rc = case_add_name(c, rd64(p), p[8], text);
		xfree(text);
		return rc ? errmsg_set(err, rc, "case: too many names") : 0;
	}
	case CASE_SEC_EXPECT: {
		uint32_t nw;

		if (n < 8 || c->expect)
			return errmsg_set(err, -EINVAL, "case: EXPECT of %zu bytes, or twice", n);
		nw = rd32(p + 4);
		if (nw > MAX_USER_WORDS || n - 8 < (size_t)nw * 8 ||
		    !text_ok(p + 8 + (size_t)nw * 8, n - 8 - (size_t)nw * 8))
			return errmsg_set(err, -EINVAL, "case: EXPECT of %u words in %zu bytes", nw,
					  n);
		c->expect_result = rd32(p);
		c->nexpect = nw;
		c->expect_words = xmalloc(nw ? (size_t)nw * 8 : 1);
		for (i = 0; i < nw; i++)
			c->expect_words[i] = rd64(p + 8 + 8 * i);
		c->expect = dup_text(p + 8 + (size_t)nw * 8, n - 8 - (size_t)nw * 8);
		return 0;
	}
	case CASE_SEC_JIT_LINKS: {
		uint32_t k;

		if (n < 4 || c->jit.count || rd32(p) == 0 || rd32(p) > UNW_JIT_LINKS_MAX ||
		    n != 4 + 16 * (size_t)rd32(p))
			return errmsg_set(err, -EINVAL, "case: JIT_LINKS of %zu bytes, or twice", n);
		for (k = 0; k < rd32(p); k++) {
			c->jit.link[k].ra = rd64(p + 4 + 16 * k);
			c->jit.link[k].below = rd64(p + 12 + 16 * k);
		}
		c->jit.count = rd32(p);
		return 0;
	}
	default:
		return 0; /* a section this reader does not know: skipped */
	}
}

int case_parse(const void *data, size_t len, struct replay_case *c, struct errmsg *err)
{
	struct buf plain = BUF_INIT(CASE_MAX_BYTES);
	const uint8_t *p = data;
	size_t at;
	uint32_t version;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	if (gzip_is(data, len)) {
		if (gzip_decompress(data, len, CASE_MAX_BYTES, &plain, err) < 0) {
			buf_release(&plain);
			return -EINVAL;
		}
		p = (const uint8_t *)plain.data;
		len = plain.len;
	}
	if (len < 16 || memcmp(p, CASE_MAGIC, 8)) {
		rc = errmsg_set(err, -EINVAL, "not a scorch replay case (no '%s' header)", CASE_MAGIC);
		goto out;
	}
	version = rd32(p + 8);
	if (version > CASE_VERSION) {
		rc = errmsg_set(err, -ENOTSUP,
				"case format version %u is newer than this scorch reads (%u): "
				"replay it with a newer scorch",
				version, CASE_VERSION);
		goto out;
	}
	if (version == 0) {
		rc = errmsg_set(err, -EINVAL, "case format version 0 does not exist");
		goto out;
	}
	for (at = 16; at < len;) {
		uint32_t type, n;

		if (len - at < 8) {
			rc = errmsg_set(err, -EINVAL, "case: a section header cut at byte %zu", at);
			goto out;
		}
		type = rd32(p + at);
		n = rd32(p + at + 4);
		if (n > len - at - 8) {
			rc = errmsg_set(err, -EINVAL, "case: section %u of %u bytes past the end",
					type, n);
			goto out;
		}
		rc = parse_section(c, type, p + at + 8, n, err);
		if (rc)
			goto out;
		at += 8 + (size_t)n;
	}
	if (!c->have_regs)
		rc = errmsg_set(err, -EINVAL, "case: no registers (REGS section)");
out:
	buf_release(&plain);
	if (rc) {
		case_release(c);
		return rc < 0 ? rc : -EINVAL;
	}
	return 0;
}

int case_load(const char *path, struct replay_case *c, struct errmsg *err)
{
	struct buf b = BUF_INIT(CASE_MAX_BYTES);
	int rc;

	memset(c, 0, sizeof(*c));
	rc = buf_read_file(&b, path);
	if (rc < 0) {
		buf_release(&b);
		return errmsg_set(err, rc, "cannot read '%s': %s", path, strerror(-rc));
	}
	rc = case_parse(b.data, b.len, c, err);
	buf_release(&b);
	return rc;
}
