/* php_proc.c: the Zend engine in a file and a process, its functions, the user-space walker and
 * the cache (php_proc.h). The BPF walker (php.bpf.h) follows the same chain; keep them in step. */
#include "runtime/php/php_proc.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "runtime/code.h"
#include "runtime/name_cache.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IS_STRING 6

struct php_process {
	int pid;
	struct procmem mem;
	struct php_proc bpf;
	char version[16];
	char *script;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int php_is_sapi_path(const char *path)
{
	const char *b = base_name(path), *s;

	if (!strncmp(b, "libphp", 6))
		return strstr(b, ".so") != NULL;
	if (strncmp(b, "php", 3))
		return 0;
	s = b + 3;
	if (!strncmp(s, "-cgi", 4))
		s += 4;
	else if (!strncmp(s, "-fpm", 4))
		s += 4;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || *s == '.'))
			return 0;
	return 1;
}

uint64_t php_decode_jit_return(const uint8_t *code, size_t len, uint64_t base)
{
	size_t i;

	for (i = 0; i + 2 <= len; i++) {
		size_t at = i, n;
		uint8_t modrm, mod, rm;

		if ((code[at] & 0xf0) == 0x40 && at + 3 <= len && code[at + 1] == 0xff)
			at++; /* REX */
		if (code[at] != 0xff || at + 1 >= len)
			continue;
		modrm = code[at + 1];
		if (((modrm >> 3) & 7) != 4)
			continue; /* not jmp r/m */
		mod = modrm >> 6;
		rm = modrm & 7;
		n = at + 2 - i;
		if (mod != 3 && rm == 4)
			n++; /* SIB */
		if (mod == 1)
			n += 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			n += 4;
		if (i + n > len)
			return 0;
		return base + i + n;
	}
	return 0;
}

int php_decode_vm_kind_hybrid(const uint8_t *code, size_t len)
{
	static const uint8_t want[] = { 0xb8, 0x04, 0x00, 0x00, 0x00, 0xc3 };

	return len >= sizeof(want) && !memcmp(code, want, sizeof(want));
}

int php_opcache_jit_globals(struct elf_file *e, uint64_t *buf_var, uint64_t *size_var)
{
	static const uint8_t ops[] = { 0x8b };
	struct code_riprel r[16];
	uint64_t v, size;
	uint8_t code[64];
	int n, i;

	*buf_var = *size_var = 0;
	if (elf_symbols_load(e, NULL) < 0 ||
	    elf_find_symbol(e, "zend_jit_unprotect", &v, &size) < 0 || !v)
		return -ENOENT;
	if (code_read(e, v, code, sizeof(code)) < 0)
		return -ENOENT;
	/* the first loads into rdi and rsi: the arguments of its mprotect() call */
	n = code_x86_riprel(code, sizeof(code), v, ops, 1, r, 16);
	for (i = 0; i < n; i++) {
		if (!(r[i].rex & 8))
			continue; /* 64-bit loads only */
		if (r[i].reg == 7 && !*buf_var)
			*buf_var = r[i].target;  /* rdi: the address */
		else if (r[i].reg == 6 && !*size_var)
			*size_var = r[i].target; /* rsi: the length */
	}
	return *buf_var && *size_var && *buf_var != *size_var ? 0 : -ENOENT;
}

/* "X-Powered-By: PHP/8.2.36" in the read-only data */
static int read_version(struct elf_file *e, struct php_file *out)
{
	static const char key[] = "X-Powered-By: PHP/";
	const char *data, *p, *end;
	size_t size;

	if (elf_section(e, ".rodata", (const void **)&data, &size, NULL) < 0)
		return -ENOENT;
	end = data + size;
	for (p = data; p && p + sizeof(key) + 5 < end;
	     p = memchr(p + 1, 'X', (size_t)(end - p - 1))) {
		unsigned a, b, c;
		char buf[24];
		size_t n;

		if (memcmp(p, key, sizeof(key) - 1))
			continue;
		n = (size_t)(end - (p + sizeof(key) - 1));
		if (n > sizeof(buf) - 1)
			n = sizeof(buf) - 1;
		memcpy(buf, p + sizeof(key) - 1, n);
		buf[n] = 0;
		if (sscanf(buf, "%u.%u.%u", &a, &b, &c) == 3 && a < 100 && b < 100 && c < 1000) {
			out->major = a;
			out->minor = b;
			out->patch = c;
			return 0;
		}
	}
	return -ENOENT;
}

int php_file_detect(struct elf_file *e, const char *path, struct php_file *out)
{
	uint64_t v, size;
	uint8_t code[256];
	int rc;

	memset(out, 0, sizeof(*out));
	if (!php_is_sapi_path(path))
		return 0;
	rc = elf_symbols_load(e, NULL);
	if (rc)
		return rc;
	if (elf_find_symbol(e, "execute_ex", &v, &size) < 0 || !v || !size)
		return 0;
	out->exec_lo = v;
	out->exec_hi = v + size;
	snprintf(out->path, sizeof(out->path), "%s", path);
	out->zts = elf_find_symbol(e, "executor_globals_offset", &v, &size) == 0;
	if (elf_find_symbol(e, "executor_globals", &v, &size) == 0)
		out->eg = v;
	if (!out->eg && !out->zts)
		return 0;
	if (read_version(e, out) < 0)
		return 0; /* no version string: not a PHP we can read */
	if (elf_find_symbol(e, "zend_vm_kind", &v, &size) == 0 && code_read(e, v, code, 8) == 0 &&
	    php_decode_vm_kind_hybrid(code, 8)) {
		size_t len = out->exec_hi - out->exec_lo < sizeof(code) ? out->exec_hi - out->exec_lo
									: sizeof(code);

		if (code_read(e, out->exec_lo, code, len) == 0)
			out->jit_return = php_decode_jit_return(code, len, out->exec_lo);
	}
	return 1;
}

/* --- offsets */

static int offsets_for(unsigned major, unsigned minor, unsigned patch, struct php_offsets *o)
{
	memset(o, 0, sizeof(*o));
	if (!((major == 7 && minor == 4) || (major == 8 && minor <= 3)))
		return -ENOTSUP;
	o->version = major << 16 | minor << 8 | (patch & 0xff);
	o->eg_current_ex = 488;
	o->ex_opline = 0;
	o->ex_func = 24;
	o->ex_call_info = 40;
	o->ex_prev = 48;
	o->fn_type = 0;
	o->fn_name = 8;
	o->fn_scope = 16;
	o->ce_name = 8;
	o->op_lineno = 24;
	o->str_len = 16;
	o->str_val = 24;
	if (major == 7) {
		o->op_filename = 136;
		o->op_line_start = 144;
	} else if (minor == 2) {
		o->op_filename = 152;
		o->op_line_start = 160;
	} else { /* 8.0, 8.1, 8.3 */
		o->op_filename = 144;
		o->op_line_start = 152;
	}
	return 0;
}

static struct php_process *proc_new(int pid, unsigned major, unsigned minor, unsigned patch,
				    struct errmsg *err, int *rc)
{
	struct php_process *p = xcalloc(1, sizeof(*p));

	p->pid = pid;
	snprintf(p->version, sizeof(p->version), "%u.%u.%u", major, minor, patch);
	if (offsets_for(major, minor, patch, &p->bpf.off) < 0) {
		*rc = errmsg_set(err, -ENOTSUP, "PHP %s is not supported (7.4 and 8.0 - 8.3 are)",
				 p->version);
		xfree(p);
		return NULL;
	}
	*rc = 0;
	return p;
}

int php_proc_attach(int pid, const struct php_file *f, uint64_t bias, struct php_process **out,
		    struct errmsg *err)
{
	struct php_process *p;
	uint64_t probe;
	int rc;

	if (f->zts)
		return errmsg_set(err, -ENOTSUP,
				  "'%s' is a thread-safe (ZTS) build: its globals are per thread", f->path);
	p = proc_new(pid, f->major, f->minor, f->patch, err, &rc);
	if (!p)
		return rc;
	procmem_init_pid(&p->mem, pid);
	p->bpf.eg = f->eg + bias;
	p->bpf.exec_lo = f->exec_lo + bias;
	p->bpf.exec_hi = f->exec_hi + bias;
	p->bpf.jit_return = f->jit_return ? f->jit_return + bias : 0;
	if (procmem_u64(&p->mem, p->bpf.eg + p->bpf.off.eg_current_ex, &probe) < 0) {
		php_proc_free(p);
		return errmsg_set(err, -EFAULT, "cannot read executor_globals of process %d", pid);
	}
	*out = p;
	return 0;
}

int php_proc_open_mem(struct procmem *m, unsigned major, unsigned minor, uint64_t eg,
		      struct php_process **out, struct errmsg *err)
{
	struct php_process *p;
	int rc;

	p = proc_new(0, major, minor, 0, err, &rc);
	if (!p)
		return rc;
	p->mem = *m;
	p->bpf.eg = eg;
	*out = p;
	return 0;
}

void php_proc_free(struct php_process *p)
{
	if (!p)
		return;
	xfree(p->script);
	xfree(p);
}

const struct php_offsets *php_proc_offsets(const struct php_process *p)
{
	return &p->bpf.off;
}

struct procmem *php_proc_mem(struct php_process *p)
{
	return &p->mem;
}

const struct php_proc *php_proc_bpf(const struct php_process *p)
{
	return &p->bpf;
}

const char *php_proc_version(const struct php_process *p)
{
	return p->version;
}

/* --- functions */

int php_read_zstr(struct procmem *m, const struct php_offsets *o, uint64_t addr, char *out,
		  size_t outlen)
{
	uint64_t h[3];
	size_t len, i;

	if (!outlen)
		return -EINVAL;
	out[0] = 0;
	if (!addr || (addr & 7))
		return -EINVAL;
	if (procmem_read(m, addr, h, sizeof(h)) < 0)
		return -EFAULT;
	/* gc.u.type_info: IS_STRING in the low bits; h; len */
	if (((h[0] >> 32) & 0xf) != IS_STRING || h[2] > (1u << 20))
		return -EINVAL;
	len = h[2] < outlen - 1 ? (size_t)h[2] : outlen - 1;
	if (len && procmem_read(m, addr + o->str_val, out, len) < 0)
		return -EFAULT;
	out[len] = 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = '?';
	return 0;
}

void php_func_release(struct php_func *f)
{
	if (!f)
		return;
	xfree(f->name);
	xfree(f->file);
	memset(f, 0, sizeof(*f));
}

int php_func_read(struct procmem *m, const struct php_offsets *o, uint64_t addr,
		  uint32_t call_info, struct php_func *out)
{
	uint64_t h[3], scope_name = 0, filename = 0;
	char name[PHP_NAME_MAX], klass[PHP_NAME_MAX], buf[2 * PHP_NAME_MAX + 4];
	uint32_t line_start = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!addr || (addr & 7))
		return -EINVAL;
	if (procmem_read(m, addr, h, sizeof(h)) < 0)
		return -EFAULT;
	out->type = (uint32_t)(h[0] & 0xff);
	if (out->type != PHP_FUNC_INTERNAL && out->type != PHP_FUNC_USER &&
	    out->type != PHP_FUNC_EVAL)
		return -EINVAL;
	out->checksum = php_checksum(h[1], out->type);
	name[0] = klass[0] = 0;
	if (h[1]) {
		rc = php_read_zstr(m, o, h[1], name, sizeof(name));
		if (rc < 0)
			return rc == -EFAULT ? rc : -EINVAL;
		if (h[2] && procmem_u64(m, h[2] + o->ce_name, &scope_name) == 0)
			php_read_zstr(m, o, scope_name, klass, sizeof(klass));
	}
	if (out->type != PHP_FUNC_INTERNAL) {
		char file[PHP_PATH_MAX];

		if (procmem_u64(m, addr + o->op_filename, &filename) < 0 ||
		    procmem_u32(m, addr + o->op_line_start, &line_start) < 0)
			return -EFAULT;
		if (php_read_zstr(m, o, filename, file, sizeof(file)) < 0)
			return -EINVAL; /* user code always has a file */
		out->file = xstrdup(file);
		out->line_start = (int32_t)line_start;
	}
	if (name[0] && klass[0])
		snprintf(buf, sizeof(buf), "%s::%s", klass, name);
	else if (name[0])
		snprintf(buf, sizeof(buf), "%s", name);
	else if (out->type == PHP_FUNC_EVAL)
		snprintf(buf, sizeof(buf), "{eval}");
	else if (call_info & (PHP_CALL_TOP >> 16))
		snprintf(buf, sizeof(buf), "{main}");
	else
		snprintf(buf, sizeof(buf), "{include}");
	out->name = xstrdup(buf);
	return 0;
}

/* --- the walker (mirrors php.bpf.h) */

int php_proc_walk(struct php_process *p, uint64_t *words, size_t max, int segments)
{
	const struct php_offsets *o = &p->bpf.off;
	uint64_t ex = 0, e[7], f[3];
	size_t n = 0, frames;

	if (procmem_u64(&p->mem, p->bpf.eg + o->eg_current_ex, &ex) < 0)
		return -EFAULT;
	for (frames = 0; ex && frames < PHP_WALK_MAX; frames++) {
		uint32_t info, type, line = 0;

		if (n + 3 > max)
			break;
		if (procmem_read(&p->mem, ex, e, sizeof(e)) < 0) {
			words[n++] = (FW_TAG_PHP_MARK << FW_TAG_SHIFT) | PHP_MARK_BAD_FRAME;
			break;
		}
		ex = e[6];
		info = (uint32_t)e[5];
		if (e[3]) {
			if (procmem_read(&p->mem, e[3], f, sizeof(f)) < 0) {
				words[n++] = (FW_TAG_PHP_MARK << FW_TAG_SHIFT) | PHP_MARK_BAD_FRAME;
				break;
			}
			type = (uint32_t)(f[0] & 0xff);
			if (type != PHP_FUNC_INTERNAL && e[0] &&
			    procmem_u32(&p->mem, e[0] + o->op_lineno, &line) < 0)
				line = 0;
			words[n++] = (FW_TAG_PHP_FUNC << FW_TAG_SHIFT) | (e[3] & FW_DATA_MASK);
			words[n++] = (FW_TAG_PHP_LINE << FW_TAG_SHIFT) | line |
				     (uint64_t)php_checksum(f[1], type) << 32 |
				     (uint64_t)((info >> 16) & 0xff) << 48;
		}
		if (segments && (info & PHP_CALL_TOP))
			words[n++] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_SEGMENT_END;
	}
	return (int)n;
}

int php_proc_validate(struct php_process *p, struct errmsg *err)
{
	uint64_t words[256];
	int n, i, funcs = 0;

	n = php_proc_walk(p, words, 256, 0);
	if (n < 0)
		return errmsg_set(err, p->pid > 0 && kill(p->pid, 0) < 0 ? -ESRCH : -EFAULT,
				  "cannot read executor_globals of PHP %s", p->version);
	for (i = 0; i + 1 < n; i++) {
		struct php_func f;

		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_PHP_MARK)
			return errmsg_set(err, -EINVAL,
					  "an execute_data of PHP %s cannot be read: offsets do not match",
					  p->version);
		if ((words[i] >> FW_TAG_SHIFT) != FW_TAG_PHP_FUNC)
			continue;
		if (php_func_read(&p->mem, &p->bpf.off, words[i] & FW_DATA_MASK,
				  (uint32_t)(words[i + 1] >> 48) & 0xff, &f) < 0)
			return errmsg_set(err, -EINVAL,
					  "a frame of PHP %s has no readable function: offsets do not match",
					  p->version);
		php_func_release(&f);
		funcs++;
		i++;
	}
	return funcs ? 0 : -EAGAIN;
}

int php_proc_script(struct php_process *p, const char **script)
{
	uint64_t words[2 * PHP_WALK_MAX];
	struct php_func f;
	int n, i;

	if (p->script) {
		*script = p->script;
		return 0;
	}
	n = php_proc_walk(p, words, 2 * PHP_WALK_MAX, 0);
	for (i = n - 2; i >= 0; i--)
		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_PHP_FUNC)
			break;
	if (i < 0 || php_func_read(&p->mem, &p->bpf.off, words[i] & FW_DATA_MASK,
				   (uint32_t)(words[i + 1] >> 48) & 0xff, &f) < 0)
		return -ENOENT;
	if (f.file && f.file[0] && strcmp(f.file, "Standard input code") &&
	    strcmp(f.file, "Command line code"))
		p->script = xstrdup(f.file);
	php_func_release(&f);
	if (!p->script)
		return -ENOENT;
	*script = p->script;
	return 0;
}

/* --- cache: a name_cache of struct php_func keyed by (pid, address, call info, checksum) */

struct php_cache {
	struct name_cache *nc;
};

struct cache_reader {
	struct procmem *m;
	const struct php_offsets *o;
	uint32_t call_info;
};

static int cache_read(void *arg, const struct name_cache_key *key, void *value)
{
	struct cache_reader *r = arg;

	return php_func_read(r->m, r->o, key->addr, r->call_info, value);
}

static int cache_same(const struct name_cache_key *key, const void *value)
{
	const struct php_func *f = value;

	return f->checksum == key->ident;
}

static void cache_release(const struct name_cache_key *key, void *value)
{
	php_func_release(value);
}

/* One entry per (pid, address, call info): the checksum is left out of the hash, so a function
 * read with a new checksum replaces the one that was at its address. */
static uint64_t cache_hash(const struct name_cache_key *key)
{
	struct name_cache_key k = *key;

	k.ident = 0;
	return name_cache_hash(&k);
}

static const struct name_cache_ops cache_ops = {
	.value_size = sizeof(struct php_func),
	.release = cache_release,
	.same = cache_same,
	.hash = cache_hash,
};

struct php_cache *php_cache_new(size_t max_entries)
{
	struct php_cache *c = xcalloc(1, sizeof(*c));

	c->nc = name_cache_new(&cache_ops, max_entries);
	return c;
}

void php_cache_free(struct php_cache *c)
{
	if (!c)
		return;
	name_cache_free(c->nc);
	xfree(c);
}

/* File-level code is named by its call info ({main} or {include}): part of the key. */
const struct php_func *php_cache_get(struct php_cache *c, uint32_t pid, uint64_t addr,
				     uint32_t checksum, uint32_t call_info, struct procmem *m,
				     const struct php_offsets *o)
{
	struct name_cache_key key = { .pid = pid, .tag = call_info & 3, .addr = addr,
				      .ident = checksum };
	struct cache_reader r = { m, o, call_info };

	return name_cache_get(c->nc, &key, m && o ? cache_read : NULL, &r);
}

void php_cache_forget_pid(struct php_cache *c, uint32_t pid)
{
	name_cache_forget_pid(c->nc, pid);
}

void php_cache_stats(const struct php_cache *c, struct name_cache_stats *st)
{
	name_cache_stats(c->nc, st);
}
