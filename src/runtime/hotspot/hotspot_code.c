/* hotspot_code.c: Java methods, compiled scopes, line tables and stub names out of a JVM's
 * memory, and the per-(pid, address) cache of what they decode to (hotspot_code.h). */
#include "runtime/hotspot/hotspot_code.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "runtime/hotspot/hotspot_vm.h" /* also hotspot.h, sampler.h */
#include "runtime/procmem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint16_t ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* ---- decoders */

int hotspot_unsigned5(const uint8_t *buf, size_t len, size_t *pos, uint32_t x, uint32_t *out)
{
	/* little-endian digits: bytes >= 192 (low codes: 192 - x of them) say another byte
	 * follows, each high byte carries 6 more bits; at most 5 bytes */
	uint32_t low = 192, sum = 0, shift = 0, b;
	size_t i;

	for (i = 0; i < 5; i++) {
		if (*pos + i >= len)
			return -EINVAL;
		b = buf[*pos + i];
		if (b < x)
			return -EINVAL; /* an excluded byte */
		sum += (b - x) << shift;
		if (b < low || i == 4) {
			*pos += i + 1;
			*out = sum;
			return 0;
		}
		shift += 6;
	}
	return -EINVAL;
}

static int32_t decode_sign(uint32_t v)
{
	return (int32_t)(v >> 1) ^ -(int32_t)(v & 1);
}

int hotspot_line_table(const uint8_t *buf, size_t len, uint32_t x, struct hotspot_line *out,
		       size_t max, size_t *n)
{
	size_t pos = 0;
	int64_t bci = 0, line = 0;

	*n = 0;
	while (pos < len) {
		uint8_t b = buf[pos++];

		if (b == 0)
			return 0;
		if (b == 0xff) {
			uint32_t db, dl;

			if (hotspot_unsigned5(buf, len, &pos, x, &db) ||
			    hotspot_unsigned5(buf, len, &pos, x, &dl))
				return -EINVAL;
			bci += decode_sign(db);
			line += decode_sign(dl);
		} else {
			bci += b >> 3;
			line += b & 7;
		}
		if (bci < 0 || bci > 0xffff || line < 0 || line > 0x7fffffff)
			return -EINVAL;
		if (*n >= max)
			return -E2BIG;
		out[*n].bci = (uint32_t)bci;
		out[*n].line = (uint32_t)line;
		(*n)++;
	}
	return -EINVAL; /* no terminator */
}

void hotspot_class_name(char *s)
{
	char *p;

	for (p = s; *p; p++)
		if (*p == '/')
			*p = '.';
	/* hidden classes (lambdas, method handles): "Name+0x<address>" */
	p = strstr(s, "+0x");
	if (p && strspn(p + 3, "0123456789abcdef") == strlen(p + 3))
		*p = '\0';
}

/* Names go into folded lines and labels: no control characters. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* ---- memory readers */

/* A Symbol's bytes into out (NUL-terminated, cut at outlen - 1). 0 or negative errno. */
static int read_symbol(struct procmem *m, const struct hotspot_vm *vm, uint64_t sym, char *out,
		       size_t outlen)
{
	uint32_t len = 0;
	uint8_t hdr[8];

	if (!sym || (sym & 7))
		return -EINVAL;
	if (vm->sym_length_shift) {
		if (procmem_u32(m, sym + vm->sym_length, &len) < 0)
			return -EFAULT;
		len >>= vm->sym_length_shift;
	} else {
		if (procmem_read(m, sym + vm->sym_length, hdr, 2) < 0)
			return -EFAULT;
		len = ld16(hdr);
	}
	if (len >= outlen)
		len = (uint32_t)outlen - 1;
	if (procmem_read(m, sym + vm->sym_body, out, len) < 0)
		return -EFAULT;
	out[len] = '\0';
	if (memchr(out, '\0', len))
		return -EINVAL; /* not a symbol */
	sanitize(out);
	return 0;
}

/* The Symbol* in slot idx of the constant pool cp (the slot's low bit is a tag). */
static int cp_symbol(struct procmem *m, const struct hotspot_vm *vm, uint64_t cp, uint32_t idx,
		     char *out, size_t outlen)
{
	uint64_t sym;

	if (procmem_u64(m, cp + vm->cp_size + 8ULL * idx, &sym) < 0)
		return -EFAULT;
	return read_symbol(m, vm, sym & ~1ULL, out, outlen);
}

int hotspot_cp_symbol(struct procmem *m, const struct hotspot_vm *vm, uint64_t cp, uint32_t idx,
		      char *out, size_t outlen)
{
	int32_t len;

	if (!cp || (cp & 7) || outlen < 2 ||
	    procmem_u32(m, cp + vm->cp_length, (uint32_t *)&len) < 0)
		return -EFAULT;
	if (idx == 0 || len <= 0 || len > 65536 || idx >= (uint32_t)len)
		return -EINVAL;
	return cp_symbol(m, vm, cp, idx, out, outlen);
}

#define HDR_MAX 512

static int read_lines(struct procmem *m, const struct hotspot_vm *vm, uint64_t addr,
		      struct hotspot_method *hm)
{
	uint8_t *buf = NULL;
	size_t have = 0, cap = 0, n = 0, max = 4096;
	struct hotspot_line *lines = NULL;
	int rc = -EINVAL;

	/* The table has no length: read page-bounded pieces until its terminator. */
	while (have < HOTSPOT_LINETABLE_MAX) {
		size_t want = 4096 - ((addr + have) & 4095);

		if (want > HOTSPOT_LINETABLE_MAX - have)
			want = HOTSPOT_LINETABLE_MAX - have;
		ALLOC_GROW(buf, have + want, cap);
		if (procmem_read(m, addr + have, buf + have, want) < 0) {
			rc = -EFAULT;
			goto cleanup;
		}
		have += want;
		if (memchr(buf + have - want, 0, want)) {
			/* a zero byte may be inside an escape: decode and see */
			if (!lines)
				lines = xmalloc(max * sizeof(*lines));
			rc = hotspot_line_table(buf, have, vm->unsigned5_x, lines, max, &n);
			while (rc == -E2BIG && max < HOTSPOT_LINETABLE_MAX) {
				max *= 4;
				lines = xrealloc(lines, max * sizeof(*lines));
				rc = hotspot_line_table(buf, have, vm->unsigned5_x, lines, max, &n);
			}
			if (rc == 0)
				break;
		}
	}
	if (rc == 0) {
		size_t i;

		hm->lines = n ? xrealloc(lines, n * sizeof(*lines)) : NULL;
		if (!n)
			xfree(lines);
		lines = NULL;
		hm->nlines = n;
		hm->first_line = 0;
		for (i = 0; i < n; i++)
			if (hm->lines[i].line && (!hm->first_line || hm->lines[i].line < hm->first_line))
				hm->first_line = hm->lines[i].line;
	}
cleanup:
	xfree(lines);
	xfree(buf);
	return rc;
}

void hotspot_method_release(struct hotspot_method *hm)
{
	if (!hm)
		return;
	xfree(hm->klass);
	xfree(hm->name);
	xfree(hm->qualified);
	xfree(hm->system_name);
	xfree(hm->file);
	xfree(hm->lines);
	memset(hm, 0, sizeof(*hm));
}

int hotspot_method_read(struct procmem *m, const struct hotspot_vm *vm, uint64_t addr,
			uint32_t cookie, struct hotspot_method *out, struct errmsg *err)
{
	uint8_t cmb[HDR_MAX], cpb[HDR_MAX];
	char klass[HOTSPOT_SYMBOL_MAX], name[HOTSPOT_SYMBOL_MAX], sig[HOTSPOT_SYMBOL_MAX];
	char file[HOTSPOT_SYMBOL_MAX];
	uint64_t cm = 0, cp, holder, back = 0, ksym = 0;
	uint32_t flags, name_idx, sig_idx, file_idx = 0, cplen;
	uint16_t v16;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!addr || (addr & 7))
		return errmsg_set(err, -EINVAL, "not a Method* (0x%llx)", (unsigned long long)addr);
	if (vm->bpf.cm_size > HDR_MAX || vm->cp_size > HDR_MAX)
		return errmsg_set(err, -ENOTSUP, "ConstMethod or ConstantPool larger than %d bytes",
				  HDR_MAX);
	if (procmem_u64(m, addr + vm->bpf.m_const_method, &cm) < 0)
		return errmsg_set(err, -EFAULT, "cannot read Method 0x%llx", (unsigned long long)addr);
	if (cookie && (uint32_t)(cm >> 3) != cookie)
		return errmsg_set(err, -ESTALE, "Method 0x%llx was replaced", (unsigned long long)addr);
	if (!cm || (cm & 7) || procmem_read(m, cm, cmb, vm->bpf.cm_size) < 0)
		return errmsg_set(err, -EFAULT, "cannot read ConstMethod 0x%llx",
				  (unsigned long long)cm);
	cp = ld64(cmb + vm->cm_constants);
	flags = vm->cm_flags_size == 4 ? ld32(cmb + vm->cm_flags) : ld16(cmb + vm->cm_flags);
	out->code_size = ld16(cmb + vm->cm_code_size);
	name_idx = ld16(cmb + vm->cm_name_index);
	sig_idx = ld16(cmb + vm->cm_signature_index);
	if (!cp || (cp & 7) || procmem_read(m, cp, cpb, vm->cp_size) < 0)
		return errmsg_set(err, -EFAULT, "cannot read ConstantPool 0x%llx",
				  (unsigned long long)cp);
	holder = ld64(cpb + vm->cp_pool_holder);
	cplen = ld32(cpb + vm->cp_length);
	if (cplen == 0 || cplen > 0x10000 || name_idx == 0 || name_idx >= cplen || sig_idx == 0 ||
	    sig_idx >= cplen)
		return errmsg_set(err, -EINVAL, "method 0x%llx: indices %u, %u outside its pool (%u)",
				  (unsigned long long)addr, name_idx, sig_idx, cplen);
	/* the class must own this constant pool: a stale or garbage Method* fails here */
	if (!holder || (holder & 7) || procmem_u64(m, holder + vm->ik_constants, &back) < 0 ||
	    back != cp)
		return errmsg_set(err, -EINVAL, "method 0x%llx: its class does not own its pool",
				  (unsigned long long)addr);
	if (procmem_u64(m, holder + vm->klass_name, &ksym) < 0 ||
	    (rc = read_symbol(m, vm, ksym, klass, sizeof(klass))) < 0 ||
	    (rc = cp_symbol(m, vm, cp, name_idx, name, sizeof(name))) < 0 ||
	    (rc = cp_symbol(m, vm, cp, sig_idx, sig, sizeof(sig))) < 0)
		return errmsg_set(err, -EFAULT, "method 0x%llx: unreadable names",
				  (unsigned long long)addr);
	if (vm->cp_source_file != HS_NO_FIELD)
		file_idx = ld16(cpb + vm->cp_source_file);
	else if (procmem_read(m, holder + vm->ik_source_file, &v16, 2) == 0)
		file_idx = v16;
	file[0] = '\0';
	if (file_idx && file_idx < cplen && cp_symbol(m, vm, cp, file_idx, file, sizeof(file)) < 0)
		file[0] = '\0';
	hotspot_class_name(klass);
	out->klass = xstrdup(klass);
	out->name = xstrdup(name);
	out->qualified = xasprintf("%s.%s", klass, name);
	out->system_name = xasprintf("%s.%s%s", klass, name, sig);
	out->file = file[0] ? xstrdup(file) : NULL;
	out->cookie = (uint32_t)(cm >> 3);
	if ((flags & vm->cm_has_linenumbers) &&
	    read_lines(m, vm, cm + vm->bpf.cm_size + out->code_size, out) < 0) {
		out->lines = NULL; /* names without lines are still worth having */
		out->nlines = 0;
	}
	return 0;
}

uint32_t hotspot_method_line(const struct hotspot_method *hm, uint32_t bci)
{
	uint32_t line = 0, best = 0;
	size_t i;
	int found = 0;

	for (i = 0; i < hm->nlines; i++) {
		if (hm->lines[i].bci <= bci && (!found || hm->lines[i].bci >= best)) {
			best = hm->lines[i].bci;
			line = hm->lines[i].line;
			found = 1;
		}
	}
	return line;
}

/* ---- compiled code */

struct nm_header {
	uint64_t method, code_begin, scopes_begin;
	uint32_t size, compile_id;
	int32_t metadata, scopes_pcs, dependencies;
	char name[16];
};

static int read_nmethod(struct procmem *m, const struct hotspot_vm *vm, uint64_t addr,
			struct nm_header *h, struct errmsg *err)
{
	uint8_t buf[HS_HDR];
	uint64_t name;
	size_t need = HS_HDR;

	memset(h, 0, sizeof(*h));
	/* a short read near the end of the heap's mapping: the fields are well inside */
	while (procmem_read(m, addr, buf, need) < 0) {
		need /= 2;
		if (need < 128)
			return errmsg_set(err, -EFAULT, "cannot read nmethod 0x%llx",
					  (unsigned long long)addr);
	}
#define FIELD_OK(off, sz) ((size_t)(off) + (sz) <= need) /* HS_NO_FIELD is far beyond */
	if (!FIELD_OK(vm->bpf.cb_name, 8) || !FIELD_OK(vm->bpf.nm_compile_id, 4) ||
	    !FIELD_OK(vm->nm_method, 8) || !FIELD_OK(vm->nm_scopes_data, 8) ||
	    !FIELD_OK(vm->nm_metadata, 4) || !FIELD_OK(vm->nm_scopes_pcs, 4) ||
	    !FIELD_OK(vm->nm_dependencies, 4) || !FIELD_OK(vm->bpf.cb_code_begin, 8) ||
	    !FIELD_OK(vm->bpf.cb_size, 4))
		return errmsg_set(err, -EFAULT, "nmethod 0x%llx: header cut short",
				  (unsigned long long)addr);
#undef FIELD_OK
	name = ld64(buf + vm->bpf.cb_name);
	if (procmem_read(m, name, h->name, sizeof(h->name) - 1) < 0)
		h->name[0] = '\0';
	h->name[sizeof(h->name) - 1] = '\0';
	h->compile_id = ld32(buf + vm->bpf.nm_compile_id);
	h->method = ld64(buf + vm->nm_method);
	h->code_begin = ld64(buf + vm->bpf.cb_code_begin);
	h->scopes_begin = ld64(buf + vm->nm_scopes_data);
	h->size = ld32(buf + vm->bpf.cb_size);
	h->metadata = (int32_t)ld32(buf + vm->nm_metadata);
	h->scopes_pcs = (int32_t)ld32(buf + vm->nm_scopes_pcs);
	h->dependencies = (int32_t)ld32(buf + vm->nm_dependencies);
	if (strncmp(h->name, "nmethod", 7) && strncmp(h->name, "native nmethod", 14))
		return errmsg_set(err, -ESTALE, "0x%llx is no nmethod now", (unsigned long long)addr);
	return 0;
}

int hotspot_nmethod_scopes(struct procmem *m, const struct hotspot_vm *vm, uint64_t addr,
			   uint32_t cookie, uint32_t pos, struct hotspot_scope *out, size_t max,
			   size_t *n, struct errmsg *err)
{
	struct nm_header h;
	uint8_t *pcs = NULL, *scopes = NULL;
	uint64_t pcs_lo, pcs_hi, sc_hi, md_lo, md_hi;
	size_t npcs, i, best = (size_t)-1, spos, len;
	uint32_t decode = 0;
	int rc;

	*n = 0;
	if (max == 0)
		return -EINVAL;
	rc = read_nmethod(m, vm, addr, &h, err);
	if (rc)
		return rc;
	if (h.compile_id != cookie)
		return errmsg_set(err, -ESTALE, "nmethod 0x%llx was replaced", (unsigned long long)addr);
	out[0].method = h.method;
	out[0].bci = -1;
	*n = 1;
	if (pos == HS_NO_POS || !strncmp(h.name, "native", 6))
		return 0; /* the method itself is all there is */
	/* the tables, checked against the blob */
	if (h.size < 64 || h.size > (1u << 30) || h.metadata <= 0 || h.scopes_pcs < h.metadata ||
	    h.dependencies < h.scopes_pcs || (uint32_t)h.dependencies > h.size)
		return errmsg_set(err, -EINVAL, "nmethod 0x%llx: tables outside the blob",
				  (unsigned long long)addr);
	md_lo = addr + (uint32_t)h.metadata;
	md_hi = h.scopes_begin;
	sc_hi = addr + (uint32_t)h.scopes_pcs;
	pcs_lo = sc_hi;
	pcs_hi = addr + (uint32_t)h.dependencies;
	if (md_hi < md_lo || md_hi > sc_hi || ((md_hi - md_lo) & 7) ||
	    pcs_hi - pcs_lo > HOTSPOT_SCOPES_MAX || sc_hi - h.scopes_begin > HOTSPOT_SCOPES_MAX)
		return errmsg_set(err, -EINVAL, "nmethod 0x%llx: tables out of order",
				  (unsigned long long)addr);
	npcs = (size_t)(pcs_hi - pcs_lo) / vm->pc_size;
	if (npcs == 0)
		return 0;
	pcs = try_malloc(npcs * vm->pc_size);
	if (!pcs)
		return errmsg_set(err, -ENOMEM, "no memory for %zu PcDescs", npcs);
	if (procmem_read(m, pcs_lo, pcs, npcs * vm->pc_size) < 0) {
		rc = errmsg_set(err, -EFAULT, "cannot read the PcDescs of 0x%llx",
				(unsigned long long)addr);
		goto cleanup;
	}
	/* The debug info of a pc is at the first PcDesc at or after it: a return address has
	 * its own, the leaf's pc belongs to the next safepoint or call. */
	for (i = 0; i < npcs; i++) {
		int32_t off = (int32_t)ld32(pcs + i * vm->pc_size + vm->pc_pc_offset);

		if (off < 0 || (uint32_t)off < pos)
			continue;
		if (best == (size_t)-1 ||
		    off < (int32_t)ld32(pcs + best * vm->pc_size + vm->pc_pc_offset))
			best = i;
	}
	if (best == (size_t)-1)
		goto cleanup;
	decode = ld32(pcs + best * vm->pc_size + vm->pc_scope);
	if (decode == 0) /* serialized null: no scope here */
		goto cleanup;
	len = (size_t)(sc_hi - h.scopes_begin);
	if (decode >= len) {
		rc = errmsg_set(err, -EINVAL, "nmethod 0x%llx: scope %u past its data (%zu)",
				(unsigned long long)addr, decode, len);
		goto cleanup;
	}
	scopes = try_malloc(len);
	if (!scopes) {
		rc = errmsg_set(err, -ENOMEM, "no memory for %zu bytes of scopes", len);
		goto cleanup;
	}
	if (procmem_read(m, h.scopes_begin, scopes, len) < 0) {
		rc = errmsg_set(err, -EFAULT, "cannot read the scopes of 0x%llx",
				(unsigned long long)addr);
		goto cleanup;
	}
	*n = 0;
	for (i = 0; i < max && i < HOTSPOT_MAX_INLINE; i++) {
		uint32_t sender, midx, bci;
		uint64_t method = 0;

		spos = decode;
		if (hotspot_unsigned5(scopes, len, &spos, vm->unsigned5_x, &sender) ||
		    hotspot_unsigned5(scopes, len, &spos, vm->unsigned5_x, &midx) ||
		    hotspot_unsigned5(scopes, len, &spos, vm->unsigned5_x, &bci)) {
			rc = errmsg_set(err, -EINVAL, "nmethod 0x%llx: scope at %u cut short",
					(unsigned long long)addr, decode);
			goto cleanup;
		}
		if (midx == 0 || (uint64_t)midx * 8 > md_hi - md_lo ||
		    procmem_u64(m, md_lo + 8ULL * (midx - 1), &method) < 0) {
			rc = errmsg_set(err, -EINVAL, "nmethod 0x%llx: method %u outside its metadata",
					(unsigned long long)addr, midx);
			goto cleanup;
		}
		out[i].method = method;
		out[i].bci = (int32_t)bci - 1; /* stored + 1: the entry bci is -1 */
		*n = i + 1;
		if (sender == 0 || sender >= len)
			break;
		decode = sender;
	}
	rc = 0;
cleanup:
	if (rc && *n == 0) {
		out[0].method = h.method;
		out[0].bci = -1;
		*n = 1;
	}
	xfree(pcs);
	xfree(scopes);
	return rc;
}

int hotspot_stub_name(struct procmem *m, const struct hotspot_vm *vm, uint64_t blob, uint32_t pos,
		      char *out, size_t outlen)
{
	uint64_t name, code_begin;
	uint8_t buf[HS_HDR_MIN];
	char bname[64];
	const char *stub = NULL;
	size_t i;

	if (procmem_read(m, blob, buf, sizeof(buf)) < 0 || (size_t)vm->bpf.cb_name + 8 > sizeof(buf) ||
	    (size_t)vm->bpf.cb_code_begin + 8 > sizeof(buf))
		return -EFAULT;
	name = ld64(buf + vm->bpf.cb_name);
	code_begin = ld64(buf + vm->bpf.cb_code_begin);
	if (procmem_read(m, name, bname, sizeof(bname) - 1) < 0)
		return -EFAULT;
	bname[sizeof(bname) - 1] = '\0';
	for (i = 0; bname[i]; i++)
		if ((unsigned char)bname[i] < 0x20 || (unsigned char)bname[i] >= 0x7f)
			bname[i] = '\0';
	if (pos != HS_NO_POS && !strncmp(bname, "StubRoutines", 12))
		stub = hotspot_vm_stub_name(vm, code_begin + pos, 16384);
	if (stub && !strcmp(stub, "call_stub_return_address"))
		stub = "call_stub";
	if (stub)
		snprintf(out, outlen, "StubRoutines::%s", stub);
	else
		snprintf(out, outlen, "%s", bname[0] ? bname : "[java: stub]");
	return 0;
}

/* ---- the cache */

enum entry_kind { E_METHOD = 1, E_PC, E_STUB };

struct entry {
	uint8_t kind;
	uint32_t pid;
	uint64_t addr;
	uint32_t cookie;
	uint32_t pos;
	union {
		struct hotspot_method *method;
		struct {
			struct hotspot_scope *v;
			size_t n;
		} pc;
		char *stub;
	} u;
};

struct hotspot_cache {
	size_t max;
	struct u64map index;  /* key -> 1 + entry index */
	struct entry *entries;
	size_t n, cap;
	struct hotspot_cache_stats st;
};

static uint64_t entry_key(uint8_t kind, uint32_t pid, uint64_t addr, uint32_t cookie,
			  uint32_t pos)
{
	uint64_t h = hash_combine(hash_u64(((uint64_t)kind << 32) | pid), addr);

	h = hash_combine(h, ((uint64_t)cookie << 32) | pos);
	return h == 0 || h == ~0ULL ? 2 : h; /* the map's reserved keys */
}

struct hotspot_cache *hotspot_cache_new(size_t max_entries)
{
	struct hotspot_cache *hc = xcalloc(1, sizeof(*hc));

	hc->max = max_entries ? max_entries : 1;
	u64map_init(&hc->index);
	return hc;
}

static void entry_release(struct entry *e)
{
	switch (e->kind) {
	case E_METHOD:
		hotspot_method_release(e->u.method);
		xfree(e->u.method);
		break;
	case E_PC:
		xfree(e->u.pc.v);
		break;
	case E_STUB:
		xfree(e->u.stub);
		break;
	default:
		break;
	}
	memset(e, 0, sizeof(*e));
}

static void cache_clear(struct hotspot_cache *hc)
{
	size_t i;

	for (i = 0; i < hc->n; i++)
		entry_release(&hc->entries[i]);
	hc->n = 0;
	u64map_release(&hc->index);
	u64map_init(&hc->index);
	hc->st.methods = hc->st.pcs = hc->st.stubs = 0;
}

void hotspot_cache_free(struct hotspot_cache *hc)
{
	if (!hc)
		return;
	cache_clear(hc);
	u64map_release(&hc->index);
	xfree(hc->entries);
	xfree(hc);
}

/* The entry for the key, or NULL. Methods match on (pid, addr) whatever the cookie: the
 * caller checks it. */
static struct entry *cache_find(struct hotspot_cache *hc, uint8_t kind, uint32_t pid,
				uint64_t addr, uint32_t cookie, uint32_t pos)
{
	uint64_t *v;
	struct entry *e;

	if (kind == E_METHOD)
		cookie = pos = 0;
	v = u64map_get(&hc->index, entry_key(kind, pid, addr, cookie, pos));
	if (!v || *v == 0 || *v > hc->n)
		return NULL;
	e = &hc->entries[*v - 1];
	if (e->kind != kind || e->pid != pid || e->addr != addr ||
	    (kind != E_METHOD && (e->cookie != cookie || e->pos != pos)))
		return NULL;
	return e;
}

static struct entry *cache_add(struct hotspot_cache *hc, uint8_t kind, uint32_t pid, uint64_t addr,
			       uint32_t cookie, uint32_t pos)
{
	struct entry *e = cache_find(hc, kind, pid, addr, cookie, pos);

	if (e) {
		entry_release(e); /* replaced in place (a reused address) */
	} else {
		ALLOC_GROW(hc->entries, hc->n + 1, hc->cap);
		e = &hc->entries[hc->n++];
		u64map_put(&hc->index,
			   entry_key(kind, pid, addr, kind == E_METHOD ? 0 : cookie,
				     kind == E_METHOD ? 0 : pos),
			   hc->n);
		if (kind == E_METHOD)
			hc->st.methods++;
		else if (kind == E_PC)
			hc->st.pcs++;
		else
			hc->st.stubs++;
	}
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->pid = pid;
	e->addr = addr;
	e->cookie = cookie;
	e->pos = pos;
	return e;
}

/* The method at addr: cached with the same cookie (cookie 0: any), else read. */
static const struct hotspot_method *get_method(struct hotspot_cache *hc, uint32_t pid,
					       struct procmem *m, const struct hotspot_vm *vm,
					       uint64_t addr, uint32_t cookie)
{
	struct entry *e;
	struct hotspot_method hm;
	int rc;

	hc->st.lookups++;
	e = cache_find(hc, E_METHOD, pid, addr, 0, 0);
	if (e && (!cookie || e->u.method->cookie == cookie)) {
		hc->st.hits++;
		return e->u.method;
	}
	if (e)
		hc->st.stale++;
	if (!m || !vm)
		return NULL;
	hc->st.reads++;
	rc = hotspot_method_read(m, vm, addr, cookie, &hm, NULL);
	if (rc) {
		hc->st.read_errors++;
		return NULL;
	}
	e = cache_add(hc, E_METHOD, pid, addr, hm.cookie, 0);
	e->u.method = xmalloc(sizeof(hm));
	*e->u.method = hm;
	return e->u.method;
}

static struct entry *get_pc(struct hotspot_cache *hc, uint32_t pid, struct procmem *m,
			    const struct hotspot_vm *vm, uint64_t addr, uint32_t cookie,
			    uint32_t pos)
{
	struct hotspot_scope sc[HOTSPOT_MAX_INLINE];
	struct entry *e;
	size_t n = 0;

	hc->st.lookups++;
	e = cache_find(hc, E_PC, pid, addr, cookie, pos);
	if (e) {
		hc->st.hits++;
		return e;
	}
	if (!m || !vm)
		return NULL;
	hc->st.reads++;
	if (hotspot_nmethod_scopes(m, vm, addr, cookie, pos, sc, HOTSPOT_MAX_INLINE, &n, NULL) &&
	    n == 0) {
		hc->st.read_errors++;
		return NULL;
	}
	if (n == 0)
		return NULL;
	e = cache_add(hc, E_PC, pid, addr, cookie, pos);
	e->u.pc.v = xmalloc(n * sizeof(*sc));
	memcpy(e->u.pc.v, sc, n * sizeof(*sc));
	e->u.pc.n = n;
	return e;
}

static const char *get_stub(struct hotspot_cache *hc, uint32_t pid, struct procmem *m,
			    const struct hotspot_vm *vm, uint64_t addr, uint32_t cookie,
			    uint32_t pos)
{
	struct entry *e;
	char name[128];

	hc->st.lookups++;
	e = cache_find(hc, E_STUB, pid, addr, cookie, pos);
	if (e) {
		hc->st.hits++;
		return e->u.stub;
	}
	if (!m || !vm)
		return NULL;
	hc->st.reads++;
	if (hotspot_stub_name(m, vm, addr, pos, name, sizeof(name)) < 0) {
		hc->st.read_errors++;
		return NULL;
	}
	e = cache_add(hc, E_STUB, pid, addr, cookie, pos);
	e->u.stub = xstrdup(name);
	return e->u.stub;
}

static int special(struct hotspot_sym *out, const char *name)
{
	memset(out, 0, sizeof(*out));
	out->name = name;
	out->special = 1;
	return 1;
}

static void method_frame(const struct hotspot_method *hm, int32_t bci, struct hotspot_sym *out)
{
	memset(out, 0, sizeof(*out));
	out->name = hm->qualified;
	out->system_name = hm->system_name;
	out->file = hm->file;
	out->start_line = hm->first_line;
	out->line = bci >= 0 ? hotspot_method_line(hm, (uint32_t)bci) : 0;
	if (!out->line)
		out->line = hm->first_line;
}

int hotspot_cache_frames(struct hotspot_cache *hc, uint32_t pid, struct procmem *m,
			 const struct hotspot_vm *vm, uint64_t w0, uint64_t w1,
			 struct hotspot_sym *out, int max)
{
	uint64_t tag = w0 >> FW_TAG_SHIFT, addr = w0 & FW_DATA_MASK;
	uint32_t cookie = HS_INFO_COOKIE(w1), pos = HS_INFO_POS(w1);
	const struct hotspot_method *hm;
	struct hotspot_scope sc[HOTSPOT_MAX_INLINE];
	const char *name;
	struct entry *e;
	size_t i, n;

	if (max < 1)
		return 0;
	/* bounded memory: empty the cache between calls, never inside one (the strings of the
	 * frames returned stay valid until the next call) */
	if (hc->n >= hc->max) {
		cache_clear(hc);
		hc->st.clears++;
	}
	if ((w1 >> FW_TAG_SHIFT) != FW_TAG_HS_INFO)
		return special(out, "[java: unknown frame]");
	switch (tag) {
	case FW_TAG_HS_INTERP:
		hm = get_method(hc, pid, m, vm, addr, cookie);
		if (!hm)
			return special(out, "[java: unknown method]");
		method_frame(hm, pos == HS_NO_POS ? -1 : (int32_t)pos, out);
		return 1;
	case FW_TAG_HS_JIT:
		e = get_pc(hc, pid, m, vm, addr, cookie, pos);
		if (!e)
			return special(out, "[java: unknown compiled method]");
		/* a copy: reading a method below may grow (move) the entries */
		n = e->u.pc.n < HOTSPOT_MAX_INLINE ? e->u.pc.n : HOTSPOT_MAX_INLINE;
		memcpy(sc, e->u.pc.v, n * sizeof(*sc));
		for (i = 0; i < n && (int)i < max; i++) {
			hm = get_method(hc, pid, m, vm, sc[i].method, 0);
			if (!hm)
				special(&out[i], "[java: unknown method]");
			else
				method_frame(hm, sc[i].bci, &out[i]);
			out[i].inlined = i + 1 < n;
		}
		return (int)i;
	case FW_TAG_HS_STUB:
		name = get_stub(hc, pid, m, vm, addr, cookie, pos);
		special(out, name ? name : "[java: stub]");
		out->special = 0;
		out->stub = 1;
		return 1;
	default:
		return special(out, "[java: unknown frame]");
	}
}

void hotspot_cache_forget_pid(struct hotspot_cache *hc, uint32_t pid)
{
	size_t i, j = 0;

	for (i = 0; i < hc->n; i++) {
		if (hc->entries[i].pid == pid) {
			entry_release(&hc->entries[i]);
			continue;
		}
		hc->entries[j++] = hc->entries[i];
	}
	hc->n = j;
	u64map_release(&hc->index);
	u64map_init(&hc->index);
	hc->st.methods = hc->st.pcs = hc->st.stubs = 0;
	for (i = 0; i < hc->n; i++) {
		struct entry *e = &hc->entries[i];

		u64map_put(&hc->index,
			   entry_key(e->kind, e->pid, e->addr, e->kind == E_METHOD ? 0 : e->cookie,
				     e->kind == E_METHOD ? 0 : e->pos),
			   i + 1);
		if (e->kind == E_METHOD)
			hc->st.methods++;
		else if (e->kind == E_PC)
			hc->st.pcs++;
		else
			hc->st.stubs++;
	}
}

void hotspot_cache_stats(const struct hotspot_cache *hc, struct hotspot_cache_stats *st)
{
	*st = hc->st;
}
