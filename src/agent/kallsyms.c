/* kallsyms.c: /proc/kallsyms parsing and address lookup (see kallsyms.h). */
#include "agent/kallsyms.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ksym {
	uint64_t addr;
	uint32_t name;   /* offset in names */
	uint32_t module; /* offset in names, or 0 for the core kernel (names[0] is "") */
	uint32_t rank;
};

struct kallsyms {
	struct ksym *syms;
	size_t n;
	char *names;
	size_t names_len;
};

static uint32_t rank_of(char type, const char *name, size_t len)
{
	uint32_t r = 0, us = 0;

	if (type == 't' || type == 'w')
		r += 1u << 24;
	while (us < len && name[us] == '_' && us < 15)
		us++;
	r += us << 20;
	r += len < 0xfffff ? (uint32_t)len : 0xfffff;
	return r;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Intern a module name: modules repeat on thousands of lines, so remember the last one. */
struct mod_cache {
	const char *name;
	size_t len;
	uint32_t off;
};

int kallsyms_parse(const char *text, size_t len, struct kallsyms **out, struct errmsg *err)
{
	struct kallsyms *k = xcalloc(1, sizeof(*k));
	struct buf names = BUF_INIT(KALLSYMS_MAX_BYTES);
	struct mod_cache mod = { NULL, 0, 0 };
	const char *p = text, *end = text + len;
	size_t cap = 0, i, out_n = 0, zero_addrs = 0, lines = 0;
	int rc = 0;

	*out = NULL;
	buf_putc(&names, 0);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *s = p, *name, *mstart = NULL;
		size_t nlen, mlen = 0;
		uint64_t addr = 0;
		int digits = 0, d;
		char type;
		struct ksym *ks;

		p = nl ? nl + 1 : end;
		while (s < le && (d = hexval(*s)) >= 0 && digits < 16) {
			addr = addr << 4 | (uint64_t)d;
			digits++;
			s++;
		}
		if (!digits || le - s < 4 || s[0] != ' ' || s[2] != ' ')
			continue;
		lines++;
		type = s[1];
		if (!addr)
			zero_addrs++;
		if (type != 'T' && type != 't' && type != 'W' && type != 'w')
			continue;
		name = s + 3;
		nlen = 0;
		while (name + nlen < le && name[nlen] != '\t' && name[nlen] != ' ')
			nlen++;
		if (!nlen || nlen > 4096)
			continue;
		if (name + nlen < le) {
			const char *m = memchr(name + nlen, '[', (size_t)(le - name - nlen));
			const char *me = m ? memchr(m, ']', (size_t)(le - m)) : NULL;

			if (m && me && me > m + 1) {
				mstart = m + 1;
				mlen = (size_t)(me - mstart);
			}
		}
		if (!addr)
			continue;
		if (k->n >= KALLSYMS_MAX_BYTES / 16) {
			rc = errmsg_set(err, -E2BIG, "too many kernel symbols");
			goto cleanup;
		}
		ALLOC_GROW(k->syms, k->n + 1, cap);
		ks = &k->syms[k->n];
		ks->addr = addr;
		ks->module = 0;
		if (mstart) {
			if (!mod.name || mod.len != mlen || memcmp(mod.name, mstart, mlen)) {
				mod.name = mstart;
				mod.len = mlen;
				mod.off = (uint32_t)names.len;
				if (buf_append(&names, mstart, mlen) < 0 || buf_putc(&names, 0) < 0) {
					rc = errmsg_set(err, -E2BIG, "kernel symbol names too large");
					goto cleanup;
				}
			}
			ks->module = mod.off;
		}
		ks->name = (uint32_t)names.len;
		ks->rank = rank_of(type, name, nlen);
		if (buf_append(&names, name, nlen) < 0 || buf_putc(&names, 0) < 0) {
			rc = errmsg_set(err, -E2BIG, "kernel symbol names too large");
			goto cleanup;
		}
		k->n++;
	}
	if (lines && zero_addrs == lines) {
		rc = errmsg_set(err, -EPERM, "kernel symbol addresses are hidden (all read as 0): "
				"run as root or set kernel.kptr_restrict=0 (sysctl)");
		goto cleanup;
	}
	if (!k->n) {
		rc = errmsg_set(err, -ENOENT, "no kernel text symbols found");
		goto cleanup;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
	for (i = 0; i < k->n; i++) {
		if (out_n && k->syms[out_n - 1].addr == k->syms[i].addr)
			continue;
		k->syms[out_n++] = k->syms[i];
	}
	k->n = out_n;
	k->names = buf_detach(&names, &k->names_len);
	*out = k;
cleanup:
	buf_release(&names);
	if (rc < 0)
		kallsyms_free(k);
	return rc;
}

int kallsyms_load(const char *path, struct kallsyms **out, struct errmsg *err)
{
	struct buf text = BUF_INIT(KALLSYMS_MAX_BYTES);
	int rc;

	*out = NULL;
	if (!path)
		path = "/proc/kallsyms";
	rc = buf_read_file(&text, path);
	if (rc < 0) {
		errmsg_set(err, rc, "cannot read '%s': %s", path, strerror(-rc));
		goto cleanup;
	}
	rc = kallsyms_parse(text.data ? text.data : "", text.len, out, err);
cleanup:
	buf_release(&text);
	return rc;
}

void kallsyms_free(struct kallsyms *k)
{
	if (!k)
		return;
	xfree(k->syms);
	xfree(k->names);
	xfree(k);
}

const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr, uint64_t *sym_addr,
			    const char **module)
{
	size_t lo = 0, hi = k->n;
	const struct ksym *s;
	uint64_t limit;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &k->syms[lo - 1];
	limit = lo < k->n ? k->syms[lo].addr - s->addr : KALLSYMS_MAX_SIZE;
	if (limit > KALLSYMS_MAX_SIZE)
		limit = KALLSYMS_MAX_SIZE;
	if (addr - s->addr >= limit)
		return NULL;
	if (sym_addr)
		*sym_addr = s->addr;
	if (module)
		*module = s->module ? k->names + s->module : NULL;
	return k->names + s->name;
}

int kallsyms_find(const struct kallsyms *k, const char *name, uint64_t *addr)
{
	size_t i;

	for (i = 0; i < k->n; i++) {
		if (!strcmp(k->names + k->syms[i].name, name)) {
			*addr = k->syms[i].addr;
			return 0;
		}
	}
	return -ENOENT;
}

size_t kallsyms_count(const struct kallsyms *k)
{
	return k->n;
}
