/* ruby_sym.c: CRuby objects read from process memory, frame names and the cache
 * (ruby_sym.h). */
#include "runtime/ruby/ruby_sym.h"
#include "lib/alloc.h"
#include "runtime/name_cache.h"
#include "runtime/procmem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define T_CLASS  0x02
#define T_MODULE 0x03
#define T_STRING 0x05
#define T_ARRAY  0x07
#define T_ICLASS 0x1c
#define FL_EMBED_OFF (1ULL << 13) /* RSTRING_NOEMBED; RARRAY_EMBED_FLAG has the same bit */

static int rd64(struct ruby_mem *rm, uint64_t addr, uint64_t *v)
{
	return procmem_u64(rm->m, addr, v) < 0 ? -EFAULT : 0;
}

/* Keep printable text only: a name with control bytes is garbage or not ours to print. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int ruby_read_str(struct ruby_mem *rm, uint64_t v, char *out, size_t outlen)
{
	const struct rb_offsets *o = rm->off;
	uint64_t h[4], len, data;

	if (!outlen)
		return -EINVAL;
	out[0] = 0;
	if (!v || (v & 7))
		return -EINVAL; /* an immediate (nil, Fixnum, ...) */
	if (procmem_read(rm->m, v, h, sizeof(h)) < 0)
		return -EFAULT;
	if ((h[0] & RB_T_MASK) != T_STRING)
		return -EINVAL;
	if (h[0] & FL_EMBED_OFF) {
		len = h[2];                       /* as.heap.len (3.1) or len (3.2+): both at 16 */
		data = o->str_heap_ptr == 24 ? h[3] : 0;
		if (!data && rd64(rm, v + o->str_heap_ptr, &data) < 0)
			return -EFAULT;
	} else {
		len = (o->flags & RB_F_STR_LEN_FLAGS) ? (h[0] >> 14) & 0x1f : h[2];
		data = v + o->str_embed;
	}
	if (len > RUBY_STR_MAX)
		return -E2BIG;
	if (len >= outlen)
		len = outlen - 1;
	if (len && procmem_read(rm->m, data, out, (size_t)len) < 0)
		return -EFAULT;
	out[len] = 0;
	sanitize(out);
	return 0;
}

int ruby_ary_entry(struct ruby_mem *rm, uint64_t ary, uint64_t i, uint64_t *out)
{
	uint64_t h[5], n, at;

	if (!ary || (ary & 7))
		return -EINVAL;
	if (procmem_read(rm->m, ary, h, sizeof(h)) < 0)
		return -EFAULT;
	if ((h[0] & RB_T_MASK) != T_ARRAY)
		return -EINVAL;
	if (h[0] & FL_EMBED_OFF) { /* RARRAY_EMBED_FLAG */
		n = (h[0] >> 15) & rm->off->ary_embed_len_mask;
		at = ary + 16;
	} else {
		n = h[2];
		at = h[4];
	}
	if (i >= n || n > (1ULL << 32))
		return -ENOENT;
	return rd64(rm, at + 8 * i, out);
}

int ruby_id2str(struct ruby_mem *rm, uint64_t id, char *out, size_t outlen)
{
	uint64_t serial, last = 0, ids, chunk, str;
	int rc;

	if (outlen)
		out[0] = 0;
	if (!rm->symbols || !id)
		return -ENOENT;
	serial = id > rm->off->last_op_id ? id >> 4 : id;
	if (procmem_read(rm->m, rm->symbols, &last, 4) < 0)
		return -EFAULT;
	if (serial > last || serial > (1ULL << 30))
		return -ENOENT;
	if (rd64(rm, rm->symbols + rm->off->symbols_ids, &ids) < 0)
		return -EFAULT;
	/* ids: an Array of chunks of 512 (string, symbol) pairs */
	rc = ruby_ary_entry(rm, ids, serial / 512, &chunk);
	if (rc == 0)
		rc = ruby_ary_entry(rm, chunk, (serial % 512) * 2, &str);
	if (rc == 0)
		rc = ruby_read_str(rm, str, out, outlen);
	return rc == -EINVAL ? -ENOENT : rc;
}

/* 3.1: the value of ivar `name` of a class, from its st_table of ivars. *known caches the
 * name's ID. 0, -ENOENT, -EFAULT. */
static int class_ivar_tbl(struct ruby_mem *rm, uint64_t klass, const char *name, uint64_t *known,
			  uint64_t *out)
{
	const struct rb_offsets *o = rm->off;
	uint64_t ext, tbl, t[7], i;
	char buf[32];

	if (rd64(rm, klass + o->class_ext, &ext) < 0 || !ext ||
	    rd64(rm, ext + o->ext_iv_tbl, &tbl) < 0)
		return -EFAULT;
	if (!tbl)
		return -ENOENT;
	/* st_table: entry_power.., type, num_entries, bins, entries_start, entries_bound, entries */
	if (procmem_read(rm->m, tbl, t, sizeof(t)) < 0)
		return -EFAULT;
	if (t[5] < t[4] || t[5] - t[4] > RUBY_IVARS_MAX)
		return -ENOENT;
	for (i = t[4]; i < t[5]; i++) {
		uint64_t e[3]; /* hash, key, record */

		if (procmem_read(rm->m, t[6] + 24 * i, e, sizeof(e)) < 0)
			return -EFAULT;
		if (!e[1])
			continue; /* a deleted entry */
		if (*known) {
			if (e[1] != *known)
				continue;
		} else if (ruby_id2str(rm, e[1], buf, sizeof(buf)) < 0 || strcmp(buf, name)) {
			continue;
		} else {
			*known = e[1];
		}
		*out = e[2];
		return 0;
	}
	return -ENOENT;
}

/* A class path must look like one: constant names joined by "::". */
static int is_const_path(const char *s)
{
	if (!(*s >= 'A' && *s <= 'Z'))
		return 0;
	for (; *s; s++) {
		if (*s == ':' && s[1] == ':' && s[2] >= 'A' && s[2] <= 'Z') {
			s += 1;
			continue;
		}
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || (unsigned char)*s >= 0x80))
			return 0;
	}
	return 1;
}

static int class_path_of(struct ruby_mem *rm, uint64_t klass, char *out, size_t outlen,
			 int *singleton, int depth)
{
	const struct rb_offsets *o = rm->off;
	uint64_t flags, path = 0, attached = 0, ivptr;
	int rc;

	if (!klass || (klass & 7) || depth > 2)
		return -EINVAL;
	if (rd64(rm, klass, &flags) < 0)
		return -EFAULT;
	if ((flags & RB_T_MASK) == T_ICLASS) {
		/* an included module: its class is the module (RBasic.klass) */
		if (rd64(rm, klass + 8, &klass) < 0 || !klass || (klass & 7) ||
		    rd64(rm, klass, &flags) < 0)
			return -EFAULT;
	}
	if ((flags & RB_T_MASK) != T_CLASS && (flags & RB_T_MASK) != T_MODULE)
		return -EINVAL;
	if (flags & o->singleton_flag) {
		*singleton = 1;
		if (o->flags & RB_F_CLASS_PATH) {
			if (rd64(rm, klass + o->class_ext + o->ext_attached, &attached) < 0)
				return -EFAULT;
		} else if (o->flags & RB_F_CLASS_IV_TBL) {
			rc = class_ivar_tbl(rm, klass, "__attached__", &rm->id_attached, &attached);
			if (rc < 0)
				return rc;
		} else {
			return -ENOENT; /* 3.2: the attached object's ivar slot is not known */
		}
		return class_path_of(rm, attached, out, outlen, singleton, depth + 1);
	}
	if (o->flags & RB_F_CLASS_PATH) {
		if (rd64(rm, klass + o->class_ext + o->ext_classpath, &path) < 0)
			return -EFAULT;
	} else if (o->flags & RB_F_CLASS_IV_TBL) {
		rc = class_ivar_tbl(rm, klass, "__classpath__", &rm->id_classpath, &path);
		if (rc < 0)
			return rc;
	} else if (o->flags & RB_F_CLASS_IV_PTR) {
		/* 3.2: ivars in shape order; a named class's first one is its path */
		if (rd64(rm, klass + o->class_ext + o->ext_iv_tbl, &ivptr) < 0)
			return -EFAULT;
		if (!ivptr || rd64(rm, ivptr, &path) < 0)
			return -ENOENT;
	} else {
		return -ENOENT;
	}
	if (!path || (path & 7))
		return -ENOENT; /* nil: anonymous */
	rc = ruby_read_str(rm, path, out, outlen);
	if (rc < 0)
		return rc == -EINVAL ? -ENOENT : rc;
	return is_const_path(out) ? 0 : -ENOENT;
}

int ruby_class_path(struct ruby_mem *rm, uint64_t klass, char *out, size_t outlen,
		    int *singleton)
{
	*singleton = 0;
	if (outlen)
		out[0] = 0;
	return class_path_of(rm, klass, out, outlen, singleton, 0);
}

/* --- instruction sequences */

void ruby_iseq_release(struct ruby_iseq *is)
{
	if (!is)
		return;
	xfree(is->label);
	xfree(is->base_label);
	xfree(is->method);
	xfree(is->path);
	xfree(is->lines);
	xfree(is->succ);
	memset(is, 0, sizeof(*is));
}

static char *read_str_dup(struct ruby_mem *rm, uint64_t v, size_t max)
{
	char buf[RUBY_PATH_MAX];

	if (max > sizeof(buf))
		max = sizeof(buf);
	if (ruby_read_str(rm, v, buf, max) < 0)
		return NULL;
	return xstrdup(buf);
}

static int body_of(struct ruby_mem *rm, uint64_t iseq, uint64_t *body)
{
	if (!iseq || (iseq & 7))
		return -EINVAL;
	if (rd64(rm, iseq + rm->off->iseq_body, body) < 0)
		return -EFAULT;
	return *body && !(*body & 7) ? 0 : -EINVAL;
}

static uint32_t u32_at(const uint8_t *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* The line numbers of insns_info (n entries of o->insn_info_entry bytes). */
static int read_lines(struct ruby_mem *rm, uint64_t at, uint32_t n, int32_t **out)
{
	uint32_t esz = rm->off->insn_info_entry, per = PROCMEM_MAX_READ / 12, i, j;
	int32_t *lines = xcalloc(n, sizeof(*lines));
	uint8_t *buf;

	if (esz < 4 || esz > 64) {
		xfree(lines);
		return -EINVAL;
	}
	per = PROCMEM_MAX_READ / esz;
	buf = xmalloc((size_t)(n < per ? n : per) * esz);
	for (i = 0; i < n; i += j) {
		uint32_t chunk = n - i < per ? n - i : per;

		if (procmem_read(rm->m, at + (uint64_t)i * esz, buf, (size_t)chunk * esz) < 0) {
			xfree(buf);
			xfree(lines);
			return -EFAULT;
		}
		for (j = 0; j < chunk; j++)
			lines[i + j] = (int32_t)u32_at(buf, (size_t)j * esz);
	}
	xfree(buf);
	*out = lines;
	return 0;
}

int ruby_iseq_read(struct ruby_mem *rm, uint64_t addr, struct ruby_iseq *out)
{
	const struct rb_offsets *o = rm->off;
	uint8_t b[256];
	uint64_t body, loc, lbody, lineno, info, succ;
	uint32_t ninfo;
	size_t need = o->body_local_iseq + 8;
	int rc;

	memset(out, 0, sizeof(*out));
	if (need > sizeof(b) || o->body_location + 32 > sizeof(b))
		return -EINVAL;
	rc = body_of(rm, addr, &body);
	if (rc < 0)
		return rc;
	if (procmem_read(rm->m, body, b, need) < 0)
		return -EFAULT;
	out->type = u32_at(b, o->body_type);
	out->size = u32_at(b, o->body_size);
	out->checksum = rb_checksum(body, out->size);
	if (out->type > RUBY_ISEQ_PLAIN || out->size > RUBY_ISEQ_MAX)
		return -EINVAL;
	loc = o->body_location;
	out->label = read_str_dup(rm, u64_at(b, loc + 16), RUBY_NAME_MAX);
	out->base_label = read_str_dup(rm, u64_at(b, loc + 8), RUBY_NAME_MAX);
	if (!out->label) {
		ruby_iseq_release(out);
		return -EINVAL;
	}
	{
		uint64_t pathobj = u64_at(b, loc), path = pathobj;

		/* a String, or an Array [path, realpath] */
		if (ruby_ary_entry(rm, pathobj, 0, &path) == -EFAULT)
			path = 0;
		out->path = read_str_dup(rm, path, RUBY_PATH_MAX);
	}
	lineno = (o->flags & RB_F_LINENO_VALUE) ? u64_at(b, loc + o->loc_first_lineno)
						  : u32_at(b, loc + o->loc_first_lineno);
	if (o->flags & RB_F_LINENO_VALUE)
		out->first_lineno = (lineno & 1) ? (int32_t)((int64_t)lineno >> 1) : 0;
	else
		out->first_lineno = (int32_t)lineno;
	if (out->first_lineno < 0)
		out->first_lineno = 0;
	/* the method this code belongs to: the local iseq, when it is a method's */
	lbody = 0;
	if (body_of(rm, u64_at(b, o->body_local_iseq), &lbody) == 0) {
		uint32_t ltype = 0;
		uint64_t lbase = 0;

		if (procmem_read(rm->m, lbody + o->body_type, &ltype, 4) == 0 &&
		    ltype == RUBY_ISEQ_METHOD &&
		    rd64(rm, lbody + o->body_location + 8, &lbase) == 0)
			out->method = read_str_dup(rm, lbase, RUBY_NAME_MAX);
	}
	/* the line table */
	info = u64_at(b, o->body_insn_info);
	ninfo = u32_at(b, o->body_insn_info_size);
	succ = u64_at(b, o->body_succ_table);
	if (info && ninfo && ninfo <= RUBY_LINES_MAX && read_lines(rm, info, ninfo, &out->lines) == 0) {
		out->nlines = ninfo;
		if (ninfo > 1 && succ) {
			uint64_t blocks = out->size > 54 ? (out->size - 54 + 511) / 512 : 0;
			uint64_t bytes = 48 + 80 * blocks;

			if (bytes <= RUBY_SUCC_MAX) {
				out->succ = xmalloc((size_t)bytes);
				if (procmem_read(rm->m, succ, out->succ, (size_t)bytes) < 0) {
					xfree(out->succ);
					out->succ = NULL;
				} else {
					out->nsucc = (uint32_t)bytes;
				}
			}
		}
	}
	return 0;
}

int ruby_succ_lookup(const uint8_t *t, size_t len, uint32_t pos)
{
	uint64_t w, bits, sb;
	uint32_t block, bit, small, rank;
	size_t at;

	if (pos < 54) {
		if (len < 48)
			return -1;
		w = u64_at(t, 8 * (pos / 9));
		return (int)((w >> ((pos % 9) * 7)) & 0x7f);
	}
	block = (pos - 54) / 512;
	bit = (pos - 54) % 512;
	small = bit / 64;
	at = 48 + (size_t)80 * block;
	if (at + 80 > len)
		return -1;
	rank = u32_at(t, at);
	sb = u64_at(t, at + 8);
	bits = u64_at(t, at + 16 + 8 * small) << (63 - bit % 64);
	if (small)
		rank += (uint32_t)((sb >> ((small - 1) * 9)) & 0x1ff);
	return (int)(rank + (uint32_t)__builtin_popcountll(bits));
}

int ruby_iseq_line(const struct ruby_iseq *is, uint32_t pos)
{
	int idx;

	if (pos == (uint32_t)RB_POS_UNKNOWN || !is->lines || is->nlines == 0)
		return is->first_lineno;
	if (pos > is->size)
		return is->first_lineno;
	if (pos > 0)
		pos--; /* the pc is past the instruction that runs */
	if (is->nlines == 1)
		return is->lines[0];
	if (!is->succ)
		return is->first_lineno;
	idx = ruby_succ_lookup(is->succ, is->nsucc, pos);
	if (idx < 1 || (uint32_t)idx > is->nlines)
		return is->first_lineno;
	return is->lines[idx - 1];
}

/* --- method entries */

void ruby_cme_release(struct ruby_cme *c)
{
	if (!c)
		return;
	xfree(c->name);
	xfree(c->klass);
	memset(c, 0, sizeof(*c));
}

int ruby_cme_read(struct ruby_mem *rm, uint64_t addr, struct ruby_cme *out)
{
	const struct rb_offsets *o = rm->off;
	uint64_t me[5], def[5];
	char buf[RUBY_NAME_MAX];
	int singleton = 0;

	memset(out, 0, sizeof(*out));
	if (!addr || (addr & 7))
		return -EINVAL;
	if (procmem_read(rm->m, addr, me, sizeof(me)) < 0)
		return -EFAULT;
	if ((me[0] & RB_T_MASK) != RB_T_IMEMO ||
	    ((me[0] >> RB_IMEMO_SHIFT) & 0xf) != RB_IMEMO_MENT)
		return -EINVAL;
	if (procmem_read(rm->m, me[o->me_def / 8], def, sizeof(def)) < 0)
		return -EFAULT;
	out->type = (uint32_t)(def[0] & 0xf);
	out->checksum = rb_checksum(me[o->me_def / 8], 0);
	if (ruby_id2str(rm, def[o->def_original_id / 8], buf, sizeof(buf)) == 0 && buf[0])
		out->name = xstrdup(buf);
	if (ruby_class_path(rm, me[o->me_defined_class / 8], buf, sizeof(buf), &singleton) == 0 ||
	    ruby_class_path(rm, me[o->me_owner / 8], buf, sizeof(buf), &singleton) == 0) {
		out->klass = xstrdup(buf);
		out->singleton = singleton;
	}
	return 0;
}

int ruby_frame_name(const struct ruby_iseq *is, const struct ruby_cme *cme, char *out,
		    size_t outlen)
{
	const char *sep = cme && cme->singleton ? "." : "#";

	if (!is) {
		if (!cme || !cme->name)
			return -ENOENT;
		if (cme->klass)
			snprintf(out, outlen, "%s%s%s", cme->klass, sep, cme->name);
		else
			snprintf(out, outlen, "%s", cme->name);
		return 0;
	}
	if (cme && cme->type == RUBY_METHOD_ISEQ && cme->klass && is->method && is->base_label) {
		size_t l = strlen(is->label), b = strlen(is->base_label);

		/* "block in outer" = prefix "block in " + base label "outer" */
		if (l >= b && !strcmp(is->label + l - b, is->base_label)) {
			snprintf(out, outlen, "%.*s%s%s%s", (int)(l - b), is->label, cme->klass, sep,
				 is->method);
			return 0;
		}
	}
	snprintf(out, outlen, "%s", is->label);
	return 0;
}

/* --- cache: a name_cache keyed by (pid, address, kind, mask << 32 | checksum) */

enum { ENT_ISEQ = 1, ENT_CME = 2 };

/* One entry per identity of an address (the checksum bits a word carries): an object freed and
 * its address reused keeps its entry for the samples that still name it. */
union cache_value {
	struct ruby_iseq iseq;
	struct ruby_cme cme;
};

struct ruby_cache {
	struct name_cache *nc;
};

static int cache_read(void *arg, const struct name_cache_key *key, void *value)
{
	union cache_value *v = value;

	return key->tag == ENT_ISEQ ? ruby_iseq_read(arg, key->addr, &v->iseq)
				    : ruby_cme_read(arg, key->addr, &v->cme);
}

static int cache_same(const struct name_cache_key *key, const void *value)
{
	const union cache_value *v = value;
	uint32_t checksum = key->tag == ENT_ISEQ ? v->iseq.checksum : v->cme.checksum;

	return (checksum & (uint32_t)(key->ident >> 32)) == (uint32_t)key->ident;
}

static void cache_release(const struct name_cache_key *key, void *value)
{
	union cache_value *v = value;

	if (key->tag == ENT_ISEQ)
		ruby_iseq_release(&v->iseq);
	else
		ruby_cme_release(&v->cme);
}

static const struct name_cache_ops cache_ops = {
	.value_size = sizeof(union cache_value),
	.release = cache_release,
	.same = cache_same,
};

struct ruby_cache *ruby_cache_new(size_t max_entries)
{
	struct ruby_cache *c = xcalloc(1, sizeof(*c));

	c->nc = name_cache_new(&cache_ops, max_entries);
	return c;
}

void ruby_cache_free(struct ruby_cache *c)
{
	if (!c)
		return;
	name_cache_free(c->nc);
	xfree(c);
}

static const union cache_value *cache_get(struct ruby_cache *c, uint32_t pid, uint64_t addr,
					  uint32_t kind, uint32_t checksum, uint32_t mask,
					  struct ruby_mem *rm)
{
	struct name_cache_key key = { .pid = pid, .tag = kind, .addr = addr,
				      .ident = (uint64_t)mask << 32 | checksum };

	return name_cache_get(c->nc, &key, rm ? cache_read : NULL, rm);
}

const struct ruby_iseq *ruby_cache_iseq(struct ruby_cache *c, uint32_t pid, uint64_t addr,
					uint32_t checksum, struct ruby_mem *rm)
{
	const union cache_value *v = cache_get(c, pid, addr, ENT_ISEQ, checksum, 0xffffff, rm);

	return v ? &v->iseq : NULL;
}

const struct ruby_cme *ruby_cache_cme(struct ruby_cache *c, uint32_t pid, uint64_t addr,
				      uint32_t checksum, uint32_t mask, struct ruby_mem *rm)
{
	const union cache_value *v = cache_get(c, pid, addr, ENT_CME, checksum & mask, mask, rm);

	return v ? &v->cme : NULL;
}

void ruby_cache_forget_pid(struct ruby_cache *c, uint32_t pid)
{
	name_cache_forget_pid(c->nc, pid);
}

void ruby_cache_stats(const struct ruby_cache *c, struct name_cache_stats *st)
{
	name_cache_stats(c->nc, st);
}
