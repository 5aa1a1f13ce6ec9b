/* python_code.c: code objects, strings and line tables read from CPython process memory, and
 * the per-(pid, address) cache of decoded code objects (python_code.h). */
#include "runtime/python/python_code.h"
#include "runtime/name_cache.h"
#include "runtime/procmem.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "lib/utf8.h"

#include <errno.h>
#include <string.h>

/* --- line tables */

int python_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, uint32_t off)
{
	uint64_t addr = 0;
	int line = firstlineno;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > off)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line;
}

int python_line_310(const uint8_t *tab, size_t len, int firstlineno, uint32_t off)
{
	uint64_t start = 0, end;
	int line = firstlineno;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int8_t ld = (int8_t)tab[i + 1];

		if (ld != -128)
			line += ld;
		end = start + tab[i];
		if (off >= start && off < end)
			return ld == -128 ? -1 : line;
		start = end;
	}
	return -1;
}

/* A varint of the 3.11+ location table: 6-bit chunks, bit 6 says another chunk follows. */
static int read_varint(const uint8_t *tab, size_t len, size_t *pos, uint32_t *out)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || shift > 30)
			return -1;
		b = tab[(*pos)++];
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = v;
	return 0;
}

static int read_svarint(const uint8_t *tab, size_t len, size_t *pos, int *out)
{
	uint32_t v;

	if (read_varint(tab, len, pos, &v) < 0)
		return -1;
	*out = (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
	return 0;
}

int python_line_311(const uint8_t *tab, size_t len, int firstlineno, uint32_t off)
{
	uint64_t addr = 0, target = off / 2;
	int64_t line = firstlineno;
	size_t pos = 0;
	int has_line;

	while (pos < len) {
		uint8_t b = tab[pos++];
		unsigned code = (b >> 3) & 15, units = (b & 7) + 1;
		uint32_t skip;
		int delta;

		if (!(b & 0x80))
			return -1; /* not at the start of an entry: corrupt table */
		has_line = 1;
		if (code == 15) {
			has_line = 0;
		} else if (code == 14) {
			if (read_svarint(tab, len, &pos, &delta) < 0 ||
			    read_varint(tab, len, &pos, &skip) < 0 ||
			    read_varint(tab, len, &pos, &skip) < 0 ||
			    read_varint(tab, len, &pos, &skip) < 0)
				return -1;
			line += delta;
		} else if (code == 13) {
			if (read_svarint(tab, len, &pos, &delta) < 0)
				return -1;
			line += delta;
		} else if (code >= 10) {
			line += (int)code - 10;
			pos += 2;
		} else {
			pos += 1;
		}
		if (line < -(1 << 30) || line > (1 << 30))
			return -1; /* no real table goes there */
		if (target >= addr && target < addr + units)
			return has_line ? (int)line : -1;
		addr += units;
	}
	return -1;
}

int python_code_line(const struct python_code *c, uint32_t off)
{
	unsigned minor = c->version & 0xff;

	if (off == PY_INSTR_UNKNOWN || !c->linetable)
		return c->firstlineno;
	if (minor <= 9)
		return python_line_lnotab(c->linetable, c->linetable_len, c->firstlineno, off);
	if (minor == 10)
		return python_line_310(c->linetable, c->linetable_len, c->firstlineno, off);
	return python_line_311(c->linetable, c->linetable_len, c->firstlineno, off);
}

/* --- objects */

static int check_type(struct procmem *m, const struct py_offsets *off, uint64_t addr,
		      uint64_t want)
{
	uint64_t type;
	int err;

	if (!want)
		return 0;
	err = procmem_u64(m, addr + off->ob_type, &type);
	if (err)
		return err;
	return type == want ? 0 : -EINVAL;
}

/* Append code point cp to out as UTF-8 if it fits (keeping room for the NUL). */
static size_t put_utf8(char *out, size_t outlen, size_t n, uint32_t cp)
{
	char tmp[4];
	size_t k;

	if (cp >= 0xd800 && cp < 0xe000)
		cp = '?';
	k = utf8_encode(cp, tmp);
	if (n + k >= outlen)
		return 0;
	memcpy(out + n, tmp, k);
	return k;
}

int python_read_str(struct procmem *m, const struct py_offsets *off,
		    const struct python_types *types, uint64_t addr, char *out, size_t outlen)
{
	uint8_t raw[PYTHON_FILE_MAX * 4];
	int64_t length;
	uint32_t state, kind;
	uint64_t data;
	size_t nchars, i, n = 0, k;
	int err;

	if (!outlen)
		return -EINVAL;
	out[0] = 0;
	if (!addr)
		return -EFAULT;
	err = check_type(m, off, addr, types ? types->str_type : 0);
	if (err)
		return err;
	if ((err = procmem_read(m, addr + off->str_length, &length, sizeof(length))) ||
	    (err = procmem_u32(m, addr + off->str_state, &state)))
		return err;
	if (length < 0 || length > (1 << 24))
		return -EINVAL;
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5))) /* not compact: names and file names always are */
		return -EINVAL;
	nchars = (size_t)length;
	if (nchars > outlen - 1)
		nchars = outlen - 1;
	if (state & (1u << 6)) { /* compact ASCII */
		if (kind != 1)
			return -EINVAL;
		data = addr + off->str_ascii_size;
	} else {
		if (kind != 1 && kind != 2 && kind != 4)
			return -EINVAL;
		data = addr + off->str_ascii_size + ((off->version & 0xff) >= 12 ? 16 : 24);
	}
	if (nchars * kind > sizeof(raw))
		nchars = sizeof(raw) / kind;
	err = procmem_read(m, data, raw, nchars * kind);
	if (err)
		return err;
	for (i = 0; i < nchars; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = raw[i];
			if ((state & (1u << 6)) && cp >= 0x80)
				cp = '?';
		} else if (kind == 2) {
			uint16_t v;

			memcpy(&v, raw + 2 * i, 2);
			cp = v;
		} else {
			memcpy(&cp, raw + 4 * i, 4);
		}
		if (cp == 0)
			cp = '?';
		k = put_utf8(out, outlen, n, cp);
		if (!k)
			break;
		n += k;
	}
	out[n] = 0;
	return 0;
}

static int read_bytes(struct procmem *m, const struct py_offsets *off,
		      const struct python_types *types, uint64_t addr, uint8_t **out, size_t *len)
{
	int64_t size;
	uint8_t *data;
	int err;

	*out = NULL;
	*len = 0;
	if (!addr)
		return -EFAULT;
	err = check_type(m, off, addr, types ? types->bytes_type : 0);
	if (err)
		return err;
	err = procmem_read(m, addr + off->bytes_size, &size, sizeof(size));
	if (err)
		return err;
	if (size < 0 || (uint64_t)size > PYTHON_LINETABLE_MAX)
		return -E2BIG;
	if (size == 0)
		return 0;
	data = try_malloc((size_t)size);
	if (!data)
		return -ENOMEM;
	err = procmem_read(m, addr + off->bytes_sval, data, (size_t)size);
	if (err) {
		xfree(data);
		return err;
	}
	*out = data;
	*len = (size_t)size;
	return 0;
}

int python_code_checksum(struct procmem *m, const struct py_offsets *off, uint64_t addr,
			 uint32_t *checksum)
{
	uint32_t firstlineno;
	uint64_t name;
	int err;

	if ((err = procmem_u32(m, addr + off->co_firstlineno, &firstlineno)) ||
	    (err = procmem_u64(m, addr + off->co_name, &name)))
		return err;
	*checksum = py_code_checksum(firstlineno, name);
	return 0;
}

void python_code_release(struct python_code *c)
{
	if (!c)
		return;
	xfree(c->qualname);
	xfree(c->filename);
	xfree(c->linetable);
	memset(c, 0, sizeof(*c));
}

static int code_read(struct procmem *m, const struct py_offsets *off,
		     const struct python_types *types, uint64_t addr, struct python_code *out,
		     struct errmsg *err)
{
	char name[PYTHON_NAME_MAX], file[PYTHON_FILE_MAX];
	uint64_t name_ptr, qual_ptr = 0, file_ptr, tab_ptr;
	int32_t firstlineno;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!addr)
		return errmsg_set(err, -EFAULT, "null code object");
	rc = check_type(m, off, addr, types ? types->code_type : 0);
	if (rc)
		return errmsg_set(err, rc, "0x%llx is not a code object", (unsigned long long)addr);
	if ((rc = procmem_read(m, addr + off->co_firstlineno, &firstlineno, 4)) ||
	    (rc = procmem_u64(m, addr + off->co_name, &name_ptr)) ||
	    (rc = procmem_u64(m, addr + off->co_filename, &file_ptr)) ||
	    (rc = procmem_u64(m, addr + off->co_linetable, &tab_ptr)) ||
	    (off->co_qualname != PY_NO_OFFSET &&
	     (rc = procmem_u64(m, addr + off->co_qualname, &qual_ptr))))
		return errmsg_set(err, rc, "cannot read code object at 0x%llx",
				  (unsigned long long)addr);
	if (firstlineno < 0 || firstlineno > (1 << 24))
		return errmsg_set(err, -EINVAL, "code object at 0x%llx: bad co_firstlineno %d",
				  (unsigned long long)addr, firstlineno);
	rc = python_read_str(m, off, types, qual_ptr ? qual_ptr : name_ptr, name, sizeof(name));
	if (rc)
		return errmsg_set(err, rc, "code object at 0x%llx: unreadable name",
				  (unsigned long long)addr);
	rc = python_read_str(m, off, types, file_ptr, file, sizeof(file));
	if (rc)
		return errmsg_set(err, rc, "code object at 0x%llx: unreadable file name",
				  (unsigned long long)addr);
	rc = read_bytes(m, off, types, tab_ptr, &out->linetable, &out->linetable_len);
	if (rc)
		return errmsg_set(err, rc, "code object at 0x%llx: unreadable line table",
				  (unsigned long long)addr);
	out->qualname = xstrdup(name);
	out->filename = xstrdup(file);
	out->firstlineno = firstlineno;
	out->checksum = py_code_checksum((uint32_t)firstlineno, name_ptr);
	out->version = off->version;
	return 0;
}

/* One string of a struct py_code_refs: the walker's copy (text, taken when the sample was) if
 * it holds the whole string, else the str object at addr, else a cut copy. */
static int ref_str(struct procmem *m, const struct py_offsets *off,
		   const struct python_types *types, uint64_t addr, const char *text,
		   size_t textlen, char *out, size_t outlen)
{
	size_t n = strnlen(text, textlen);

	if (n == textlen)
		return -EINVAL; /* not NUL-terminated: not what the walker writes */
	if (n && n + 1 < textlen) {
		memcpy(out, text, n + 1);
		return 0;
	}
	if (!python_read_str(m, off, types, addr, out, outlen))
		return 0;
	if (!n)
		return -ENOENT;
	memcpy(out, text, n + 1);
	return 0;
}

int python_code_from_refs(struct procmem *m, const struct py_offsets *off,
			  const struct python_types *types, const struct py_code_refs *r,
			  struct python_code *out, struct errmsg *err)
{
	char name[PYTHON_NAME_MAX], file[PYTHON_FILE_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	if (r->firstlineno > (1u << 24))
		return errmsg_set(err, -EINVAL, "bad co_firstlineno %u", r->firstlineno);
	rc = ref_str(m, off, types, r->qualname ? r->qualname : r->name, r->name_text,
		     sizeof(r->name_text), name, sizeof(name));
	if (rc)
		return errmsg_set(err, rc, "unreadable name at 0x%llx",
				  (unsigned long long)(r->qualname ? r->qualname : r->name));
	rc = ref_str(m, off, types, r->filename, r->file_text, sizeof(r->file_text), file,
		     sizeof(file));
	if (rc)
		return errmsg_set(err, rc, "unreadable file name at 0x%llx",
				  (unsigned long long)r->filename);
	out->qualname = xstrdup(name);
	out->filename = xstrdup(file);
	out->firstlineno = (int32_t)r->firstlineno;
	out->checksum = py_code_checksum(r->firstlineno, r->name);
	out->version = off->version;
	return 0;
}

/* The fields of a code object lie together, its name and file name strings often near each
 * other: read through whole blocks (procmem_cache_begin()), a few system calls per code object
 * instead of one per field. What is read is checked (types, lengths) as it is without. */
int python_code_read(struct procmem *m, const struct py_offsets *off,
		     const struct python_types *types, uint64_t addr, struct python_code *out,
		     struct errmsg *err)
{
	int rc;

	procmem_cache_begin(m);
	rc = code_read(m, off, types, addr, out, err);
	procmem_cache_end(m);
	return rc;
}

/* --- cache: a name_cache of struct python_code keyed by (pid, address, checksum) */

struct python_code_cache {
	struct name_cache *nc;
};

struct code_reader {
	struct procmem *m;
	const struct py_offsets *off;
	const struct python_types *types;
};

static int cache_read(void *arg, const struct name_cache_key *key, void *value)
{
	struct code_reader *r = arg;

	return python_code_read(r->m, r->off, r->types, key->addr, value, NULL);
}

static int cache_same(const struct name_cache_key *key, const void *value)
{
	const struct python_code *code = value;

	return code->checksum == key->ident;
}

static void cache_release(const struct name_cache_key *key, void *value)
{
	python_code_release(value);
}

static const struct name_cache_ops cache_ops = {
	.value_size = sizeof(struct python_code),
	.release = cache_release,
	.same = cache_same,
};

struct python_code_cache *python_code_cache_new(size_t max_entries)
{
	struct python_code_cache *cc = xcalloc(1, sizeof(*cc));

	cc->nc = name_cache_new(&cache_ops, max_entries);
	return cc;
}

void python_code_cache_free(struct python_code_cache *cc)
{
	if (!cc)
		return;
	name_cache_free(cc->nc);
	xfree(cc);
}

const struct python_code *python_code_cache_get(struct python_code_cache *cc, uint32_t pid,
						uint64_t addr, uint32_t checksum,
						struct procmem *m,
						const struct py_offsets *off,
						const struct python_types *types)
{
	struct name_cache_key key = { .pid = pid, .addr = addr, .ident = checksum };
	struct code_reader r = { m, off, types };

	return name_cache_get(cc->nc, &key, m && off ? cache_read : NULL, &r);
}

const struct python_code *python_code_cache_put(struct python_code_cache *cc, uint32_t pid,
						uint64_t addr, struct python_code *code)
{
	struct name_cache_key key = { .pid = pid, .addr = addr, .ident = code->checksum };

	return name_cache_put(cc->nc, &key, code);
}

void python_code_cache_forget_pid(struct python_code_cache *cc, uint32_t pid)
{
	name_cache_forget_pid(cc->nc, pid);
}

void python_code_cache_stats(const struct python_code_cache *cc, struct name_cache_stats *st)
{
	name_cache_stats(cc->nc, st);
}
