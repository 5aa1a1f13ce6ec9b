/* ruby_proc.c: CRuby detection, the process side, the user-space walker and the script label
 * (ruby_proc.h). The BPF walker (ruby.bpf.h) follows the same chains; keep the two in step. */
#include "runtime/ruby/ruby_proc.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "runtime/code.h"
#include "runtime/ruby/ruby_offsets.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ruby_proc {
	int pid;
	struct procmem mem;
	struct rb_offsets off;
	struct ruby_mem rm;
	struct rb_proc bpf;
	struct tls_symbol ec;
	int have_ec;
	uint64_t bias;
	char version[16];
	char *file;
	char *script;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int ruby_is_vm_path(const char *path)
{
	const char *b = base_name(path), *s;

	if (!strcmp(b, "ruby"))
		return 1;
	if (strncmp(b, "libruby", 7))
		return 0;
	s = b + 7;
	if (*s == '-') { /* libruby-3.1.so.3.1.7 */
		for (s++; (*s >= '0' && *s <= '9') || *s == '.'; s++)
			if (!strncmp(s, ".so", 3))
				break;
	}
	return !strncmp(s, ".so", 3);
}

/* "3.1.7" (ruby_version, a string in .rodata) */
static int read_version(struct elf_file *e, struct ruby_file *out)
{
	uint64_t addr, size;
	char buf[16];
	unsigned a, b, c;

	if (elf_find_symbol(e, "ruby_version", &addr, &size) < 0 || !addr)
		return -ENOTSUP;
	memset(buf, 0, sizeof(buf));
	if (code_read(e, addr, buf, sizeof(buf) - 1) < 0)
		return -EIO;
	if (sscanf(buf, "%u.%u.%u", &a, &b, &c) != 3 || a > 9 || b > 99 || c > 999)
		return -ENOTSUP;
	out->major = a;
	out->minor = b;
	out->patch = c;
	return 0;
}

/* vm_exec_core: the symbol when the file has one; else the biggest function rb_vm_exec calls
 * (the VM loop is by far the largest), bounded by its unwind data. */
static void find_core(struct elf_file *e, struct ruby_file *out)
{
	uint8_t code[8192];
	uint64_t v, size, targets[256], lo, hi, best = 0;
	size_t len;
	int n, i;

	if (elf_find_symbol(e, "vm_exec_core", &v, &size) == 0 && v && size) {
		out->core_lo = v;
		out->core_hi = v + size;
		return;
	}
	len = out->exec_hi - out->exec_lo;
	if (len > sizeof(code))
		len = sizeof(code);
	if (code_read(e, out->exec_lo, code, len) < 0)
		return;
	n = code_x86_branch_targets(code, len, out->exec_lo, 0, targets, 256);
	for (i = 0; i < n; i++) {
		if (code_function_range(e, targets[i], &lo, &hi) < 0 || lo != targets[i])
			continue;
		if (hi - lo > best && (lo >= out->exec_hi || hi <= out->exec_lo)) {
			best = hi - lo;
			out->core_lo = lo;
			out->core_hi = hi;
		}
	}
	if (best < 4096) /* not a VM loop */
		out->core_lo = out->core_hi = 0;
}

/* ruby_global_symbols: the symbol, else the global that rb_id2str's lookup compares the serial
 * with (last_id, at +0) and loads ids from (+16): a `cmp reg, X(%rip)` and a `mov Y(%rip), reg`
 * with Y = X + 16, in rb_id2str or the function it calls or jumps to. */
static uint64_t find_symbols(struct elf_file *e)
{
	static const uint8_t ops[] = { 0x39, 0x3b, 0x8b };
	uint8_t code[256];
	uint64_t v, size, funcs[9];
	struct code_riprel r[64];
	int nf = 1, f, n, i, j;

	if (elf_find_symbol(e, "ruby_global_symbols", &v, &size) == 0 && v)
		return v;
	if (elf_find_symbol(e, "rb_id2str", &v, &size) < 0 || !v)
		return 0;
	funcs[0] = v;
	if (code_read(e, v, code, 64) == 0)
		nf += code_x86_branch_targets(code, size && size < 64 ? size : 64, v, 1, funcs + 1, 8);
	for (f = 0; f < nf; f++) {
		if (code_read(e, funcs[f], code, sizeof(code)) < 0)
			continue;
		n = code_x86_riprel(code, sizeof(code), funcs[f], ops, sizeof(ops), r, 64);
		for (i = 0; i < n; i++) {
			if (r[i].opcode == 0x8b)
				continue;
			for (j = i + 1; j < n; j++)
				if (r[j].opcode == 0x8b && r[j].target == r[i].target + 16)
					return r[i].target;
		}
	}
	return 0;
}

int ruby_file_detect(struct elf_file *e, const char *path, struct ruby_file *out)
{
	uint64_t v, size;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!ruby_is_vm_path(path))
		return 0;
	rc = elf_symbols_load(e, NULL);
	if (rc)
		return rc;
	if (elf_find_symbol(e, "rb_vm_exec", &v, &size) < 0 || !v || !size)
		return 0; /* an executable whose VM is in libruby */
	out->exec_lo = v;
	out->exec_hi = v + size;
	snprintf(out->path, sizeof(out->path), "%s", path);
	rc = read_version(e, out);
	if (rc < 0)
		return rc;
	find_core(e, out);
	out->have_ec = tls_symbol_find(e, "ruby_current_ec", &out->ec) == 0;
	if (elf_find_symbol(e, "ruby_single_main_ractor", &v, &size) == 0)
		out->main_ractor = v;
	out->symbols = find_symbols(e);
	return 1;
}

/* --- process */

static struct ruby_proc *proc_new(int pid, unsigned major, unsigned minor, unsigned patch,
				  struct errmsg *err, int *rc)
{
	struct ruby_proc *p = xcalloc(1, sizeof(*p));

	p->pid = pid;
	snprintf(p->version, sizeof(p->version), "%u.%u.%u", major, minor, patch);
	if (ruby_offsets_for(major, minor, patch, &p->off) < 0) {
		*rc = errmsg_set(err, -ENOTSUP, "Ruby %s is not supported (3.1 - 3.4 are)",
				 p->version);
		xfree(p);
		return NULL;
	}
	p->bpf.off = p->off;
	p->rm.m = &p->mem;
	p->rm.off = &p->off;
	*rc = 0;
	return p;
}

int ruby_proc_attach(int pid, const struct ruby_file *f, uint64_t bias, struct ruby_proc **out,
		     struct errmsg *err)
{
	struct ruby_proc *p;
	int rc;

	p = proc_new(pid, f->major, f->minor, f->patch, err, &rc);
	if (!p)
		return rc;
	procmem_init_pid(&p->mem, pid);
	p->file = xstrdup(f->path);
	p->bias = bias;
	p->bpf.exec_lo = f->exec_lo + bias;
	p->bpf.exec_hi = f->exec_hi + bias;
	if (f->core_lo) {
		p->bpf.core_lo = f->core_lo + bias;
		p->bpf.core_hi = f->core_hi + bias;
	}
	p->bpf.main_ractor = f->main_ractor ? f->main_ractor + bias : 0;
	p->rm.symbols = f->symbols ? f->symbols + bias : 0;
	p->ec = f->ec;
	p->have_ec = f->have_ec;
	if (!p->have_ec && !p->bpf.main_ractor) {
		rc = errmsg_set(err, -ENOTSUP,
				"'%s' has neither ruby_current_ec nor ruby_single_main_ractor",
				f->path);
		ruby_proc_free(p);
		return rc;
	}
	*out = p;
	rc = ruby_proc_tls(p);
	return rc == -EAGAIN ? -EAGAIN : 0;
}

int ruby_proc_tls(struct ruby_proc *p)
{
	if (!p->have_ec || p->bpf.ec_tls.mode != RT_TLS_NONE)
		return 0;
	return tls_resolve(&p->mem, &p->ec, p->bias, &p->bpf.ec_tls);
}

int ruby_proc_open_mem(struct procmem *m, unsigned major, unsigned minor, uint64_t main_ractor,
		       uint64_t symbols, struct ruby_proc **out, struct errmsg *err)
{
	struct ruby_proc *p;
	int rc;

	p = proc_new(0, major, minor, 0, err, &rc);
	if (!p)
		return rc;
	p->mem = *m;
	p->bpf.main_ractor = main_ractor;
	p->rm.symbols = symbols;
	*out = p;
	return 0;
}

void ruby_proc_free(struct ruby_proc *p)
{
	if (!p)
		return;
	xfree(p->file);
	xfree(p->script);
	xfree(p);
}

const char *ruby_proc_version(const struct ruby_proc *p)
{
	return p->version;
}

const struct rb_proc *ruby_proc_bpf(const struct ruby_proc *p)
{
	return &p->bpf;
}

struct ruby_mem *ruby_proc_mem(struct ruby_proc *p)
{
	return &p->rm;
}

int ruby_proc_running_ec(struct ruby_proc *p, uint64_t *ec)
{
	uint64_t ractor;

	if (!p->bpf.main_ractor)
		return -ENOENT;
	if (procmem_u64(&p->mem, p->bpf.main_ractor, &ractor) < 0)
		return -EFAULT;
	if (!ractor)
		return -EAGAIN;
	if (procmem_u64(&p->mem, ractor + p->off.ractor_running_ec, ec) < 0)
		return -EFAULT;
	return *ec ? 0 : -EAGAIN;
}

/* --- the walker (mirrors ruby.bpf.h) */

/* The method entry of a frame whose environment is env = { me_cref, specval, flags } at ep:
 * rb_vm_frame_method_entry(). *me set (0 when none); *def its definition. 0 or -EFAULT. */
static int method_entry(struct ruby_proc *p, const uint64_t env_in[3], uint64_t *me,
			uint64_t *def)
{
	uint64_t env[3], h[3];
	int i;

	memcpy(env, env_in, sizeof(env));
	*me = *def = 0;
	for (i = 0; i < RB_MAX_EP; i++) {
		uint64_t cand = env[0];
		int local = !!(env[2] & RB_ENV_FLAG_LOCAL);

		if (cand && !(cand & 7)) {
			if (procmem_read(&p->mem, cand, h, sizeof(h)) < 0)
				return -EFAULT;
			if ((h[0] & RB_T_MASK) == RB_T_IMEMO) {
				uint64_t t = (h[0] >> RB_IMEMO_SHIFT) & 0xf;

				if (t == RB_IMEMO_MENT) {
					*me = cand;
					*def = h[2];
					return 0;
				}
				if (local && t == RB_IMEMO_SVAR) {
					/* a local ep may hold special variables: vm_svar.cref_or_me */
					uint64_t sv = h[1];

					if (sv && !(sv & 7) &&
					    procmem_read(&p->mem, sv, h, sizeof(h)) == 0 &&
					    (h[0] & RB_T_MASK) == RB_T_IMEMO &&
					    ((h[0] >> RB_IMEMO_SHIFT) & 0xf) == RB_IMEMO_MENT) {
						*me = sv;
						*def = h[2];
					}
					return 0;
				}
			}
		}
		if (local)
			return 0;
		/* VM_ENV_PREV_EP: specval without the guard bits */
		if (procmem_read(&p->mem, (env[1] & ~3ULL) - 16, env, sizeof(env)) < 0)
			return -EFAULT;
	}
	return 0;
}

static int push(uint64_t *words, size_t max, size_t *n, uint64_t tag, uint64_t data)
{
	if (*n >= max)
		return -1;
	words[(*n)++] = (tag << FW_TAG_SHIFT) | (data & FW_DATA_MASK);
	return 0;
}

int ruby_proc_walk_ec(struct ruby_proc *p, uint64_t ec, uint64_t *words, size_t max,
		      int segments)
{
	const struct rb_offsets *o = &p->off;
	uint64_t e[3], cfp, end;
	size_t n = 0, frames;

	if (!ec || procmem_read(&p->mem, ec, e, sizeof(e)) < 0)
		return -EFAULT;
	cfp = e[o->ec_cfp / 8];
	end = e[o->ec_vm_stack / 8] + 8 * e[o->ec_vm_stack_size / 8];
	if (cfp < e[o->ec_vm_stack / 8] || cfp >= end || e[1] > (1u << 24))
		return -EINVAL;
	for (frames = 0; cfp + o->cfp_size <= end && frames < RUBY_MAX_FRAMES; frames++) {
		uint64_t c[5], env[3], magic, me = 0, def = 0;

		if (procmem_read(&p->mem, cfp, c, sizeof(c)) < 0 || !c[4] ||
		    procmem_read(&p->mem, c[4] - 16, env, sizeof(env)) < 0) {
			push(words, max, &n, FW_TAG_RUBY_MARK, RB_MARK_BAD_FRAME);
			break;
		}
		cfp += o->cfp_size;
		magic = env[2] & RB_FRAME_MAGIC_MASK;
		if (magic == RB_FRAME_MAGIC_DUMMY)
			break;
		if (magic == RB_FRAME_MAGIC_CFUNC) {
			if (method_entry(p, env, &me, &def) == 0 && me &&
			    (push(words, max, &n, FW_TAG_RUBY_CFUNC, me) ||
			     push(words, max, &n, FW_TAG_RUBY_INFO,
				  RB_POS_UNKNOWN | (uint64_t)rb_checksum(def, 0) << 32)))
				break;
		} else if (magic != RB_FRAME_MAGIC_IFUNC && c[2]) {
			uint64_t body = 0, b[2], pos = RB_POS_UNKNOWN;
			uint32_t size;

			if (procmem_u64(&p->mem, c[2] + o->iseq_body, &body) < 0 || !body ||
			    procmem_read(&p->mem, body, b, sizeof(b)) < 0) {
				push(words, max, &n, FW_TAG_RUBY_MARK, RB_MARK_BAD_FRAME);
				break;
			}
			size = (uint32_t)(b[0] >> 32);
			if (c[0] >= b[1] && (c[0] - b[1]) / 8 <= size)
				pos = (c[0] - b[1]) / 8;
			method_entry(p, env, &me, &def);
			if (push(words, max, &n, FW_TAG_RUBY_ISEQ, c[2]) ||
			    push(words, max, &n, FW_TAG_RUBY_INFO,
				 pos | (uint64_t)rb_checksum(body, size) << 32))
				break;
			if (me && push(words, max, &n, FW_TAG_RUBY_CME,
				       (me & 0xffffffffffffULL) |
					       (uint64_t)(rb_checksum(def, 0) & 0xff) << 48))
				break;
		}
		if (segments && (env[2] & RB_FRAME_FLAG_FINISH) &&
		    push(words, max, &n, FW_TAG_MARKER,
			 FW_MARKER_SEGMENT_END))
			break;
	}
	return (int)n;
}

int ruby_proc_validate(struct ruby_proc *p, struct errmsg *err)
{
	uint64_t ec, words[256], last = 0, ids = 0, flags = 0;
	int n, i, iseqs = 0, rc;

	rc = ruby_proc_running_ec(p, &ec);
	if (rc == -ENOENT)
		return 0; /* nothing to check it with: the walker's reads check themselves */
	if (rc == -EAGAIN)
		return rc;
	if (rc < 0)
		return errmsg_set(err, p->pid > 0 && kill(p->pid, 0) < 0 ? -ESRCH : -EFAULT,
				  "cannot read the main ractor of Ruby %s", p->version);
	n = ruby_proc_walk_ec(p, ec, words, 256, 0);
	if (n < 0)
		return errmsg_set(err, -EINVAL,
				  "the execution context of Ruby %s has no valid VM stack: offsets do not match",
				  p->version);
	for (i = 0; i < n; i++) {
		struct ruby_iseq is;

		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_RUBY_MARK)
			return errmsg_set(err, -EINVAL,
					  "a control frame of Ruby %s cannot be read: offsets do not match",
					  p->version);
		if ((words[i] >> FW_TAG_SHIFT) != FW_TAG_RUBY_ISEQ)
			continue;
		if (ruby_iseq_read(&p->rm, words[i] & FW_DATA_MASK, &is) < 0)
			return errmsg_set(err, -EINVAL,
					  "a control frame of Ruby %s has no instruction sequence: offsets do not match",
					  p->version);
		ruby_iseq_release(&is);
		iseqs++;
	}
	if (!iseqs)
		return -EAGAIN; /* no Ruby code running yet */
	/* the symbol table names C functions: keep it only when it looks like one */
	if (p->rm.symbols &&
	    (procmem_read(&p->mem, p->rm.symbols, &last, 4) < 0 || last < 100 || last > (1u << 28) ||
	     procmem_u64(&p->mem, p->rm.symbols + p->off.symbols_ids, &ids) < 0 || !ids ||
	     procmem_u64(&p->mem, ids, &flags) < 0 || (flags & RB_T_MASK) != 0x07)) {
		log_debug("ruby stacks of PID %d: the global symbol table at 0x%llx is not one",
			  p->pid, (unsigned long long)p->rm.symbols);
		p->rm.symbols = 0;
	}
	return 0;
}

int ruby_proc_script(struct ruby_proc *p, const char **script)
{
	uint64_t ec, words[RUBY_MAX_FRAMES * 3];
	struct ruby_iseq is;
	int n, i;

	if (p->script) {
		*script = p->script;
		return 0;
	}
	if (ruby_proc_running_ec(p, &ec) < 0)
		return -ENOENT;
	n = ruby_proc_walk_ec(p, ec, words, sizeof(words) / sizeof(words[0]), 0);
	/* the outermost iseq frame */
	for (i = n - 1; i >= 0; i--)
		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_RUBY_ISEQ)
			break;
	if (i < 0 || ruby_iseq_read(&p->rm, words[i] & FW_DATA_MASK, &is) < 0)
		return -ENOENT;
	if (is.type == RUBY_ISEQ_MAIN && is.path && is.path[0] && strcmp(is.path, "-e") &&
	    strcmp(is.path, "-"))
		p->script = xstrdup(is.path);
	ruby_iseq_release(&is);
	if (!p->script)
		return -ENOENT;
	*script = p->script;
	return 0;
}
