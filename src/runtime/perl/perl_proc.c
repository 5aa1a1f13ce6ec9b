/* perl_proc.c: the Perl interpreter in a file and a process, names of subs and statements, the
 * user-space walker and the caches (perl_proc.h). The BPF walker (perl.bpf.h) follows the same
 * contexts; keep the two in step. */
#include "runtime/perl/perl_proc.h"
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "runtime/code.h"
#include "runtime/name_cache.h"
#include "runtime/tls.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

struct perl_process {
	int pid;
	struct procmem mem;
	struct perl_proc bpf;
	uint64_t key_addr;   /* PL_thr_key in the process (threaded) */
	int tsd_pending;     /* glibc's key layout not known at attach: try once more when the
				interpreter exists (the process may have been read before ld.so
				mapped libc) */
	char version[16];
	char *script;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int perl_is_interp_path(const char *path)
{
	const char *b = base_name(path), *s;

	if (!strncmp(b, "libperl.so", 10))
		return 1;
	if (strncmp(b, "perl", 4))
		return 0;
	for (s = b + 4; *s; s++)
		if (!((*s >= '0' && *s <= '9') || *s == '.'))
			return 0;
	return 1;
}

static int read_byte(struct elf_file *e, const char *name, unsigned *out)
{
	uint64_t v, size;
	uint8_t b;

	if (elf_find_symbol(e, name, &v, &size) < 0 || !v || code_read(e, v, &b, 1) < 0)
		return -ENOENT;
	*out = b;
	return 0;
}

int perl_file_detect(struct elf_file *e, const char *path, struct perl_file *out)
{
	uint64_t v, size;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!perl_is_interp_path(path))
		return 0;
	rc = elf_symbols_load(e, NULL);
	if (rc)
		return rc;
	if (elf_find_symbol(e, "Perl_runops_standard", &v, &size) < 0 || !v || !size)
		return 0; /* a perl launcher whose interpreter is in libperl */
	out->runops_lo = v;
	out->runops_hi = v + size;
	if (read_byte(e, "PL_revision", &out->major) < 0 || read_byte(e, "PL_version", &out->minor) < 0 ||
	    read_byte(e, "PL_subversion", &out->patch) < 0)
		return 0;
	if (elf_find_symbol(e, "PL_thr_key", &v, &size) == 0 && v) {
		out->threaded = 1;
		out->thr_key = v;
		if (elf_find_symbol(e, "PL_curinterp", &v, &size) == 0)
			out->curinterp = v;
	} else {
		if (elf_find_symbol(e, "PL_curcop", &v, &size) < 0 || !v)
			return 0;
		out->curcop = v;
		if (elf_find_symbol(e, "PL_curstackinfo", &v, &size) < 0 || !v)
			return 0;
		out->curstackinfo = v;
	}
	snprintf(out->path, sizeof(out->path), "%s", path);
	return 1;
}

int perl_offsets_for(unsigned major, unsigned minor, unsigned patch, int threaded,
		     struct perl_offsets *o)
{
	memset(o, 0, sizeof(*o));
	if (major != 5 || minor < 28 || minor > 42)
		return -ENOTSUP;
	o->version = major << 16 | minor << 8 | (patch & 0xff);
	o->flags = threaded ? PERL_F_THREADED : 0;
	o->interp_curcop = minor >= 34 ? 0xd0 : 0xe0;
	o->interp_curstackinfo = minor >= 34 ? 0xe0 : 0xf0;
	o->si_cxstack = 0x08;
	o->si_prev = 0x10;
	o->si_cxix = 0x20;
	o->si_type = minor >= 32 ? 0x2c : 0x28;
	o->cx_size = minor >= 32 ? 0x68 : 0x60;
	o->cx_oldcop = 0x10;
	o->cx_retop = 0x30;
	o->cx_cv = minor >= 32 ? 0x48 : 0x40;
	o->cop_line = 0x24;
	o->cop_file = 0x30;
	o->sv_any = 0;
	o->sv_flags = 0x0c;
	o->sv_u = 0x10;
	o->xcv_stash = 0x20;
	o->xcv_gv = 0x38;
	o->xcv_flags = 0x5c;
	o->gp_egv = 0x38;
	o->xgv_namehek = 0x20;
	o->xgv_stash = 0x28;
	o->xhv_max = 0x18;
	if (minor >= 36) { /* the aux struct follows the body (struct xpvhv_with_aux) */
		o->flags |= PERL_F_HV_AUX_IN_BODY;
		o->hv_aux = 0x20;
	}
	o->aux_name = 0;
	o->aux_name_count = 0x1c;
	return 0;
}

static struct perl_process *proc_new(int pid, unsigned major, unsigned minor, unsigned patch,
				     int threaded, struct errmsg *err, int *rc)
{
	struct perl_process *p = xcalloc(1, sizeof(*p));

	p->pid = pid;
	snprintf(p->version, sizeof(p->version), "%u.%u.%u", major, minor, patch);
	if (perl_offsets_for(major, minor, patch, threaded, &p->bpf.off) < 0) {
		*rc = errmsg_set(err, -ENOTSUP, "Perl %s is not supported (5.28 - 5.42 are)",
				 p->version);
		xfree(p);
		return NULL;
	}
	*rc = 0;
	return p;
}

int perl_proc_key(struct perl_process *p)
{
	uint64_t interp = 0;
	uint32_t key;

	if (!(p->bpf.off.flags & PERL_F_THREADED))
		return 0;
	/* the key exists once the main interpreter does */
	if (!p->bpf.curinterp || procmem_u64(&p->mem, p->bpf.curinterp, &interp) < 0 || !interp)
		return -EAGAIN;
	if (procmem_u32(&p->mem, p->key_addr, &key) < 0)
		return -EFAULT;
	p->bpf.key = key;
	if (p->tsd_pending) {
		struct errmsg e2 = { "" };
		struct procmaps m;

		memset(&m, 0, sizeof(m));
		p->tsd_pending = 0;
		if (procmaps_read(p->pid, &m, &e2) < 0 ||
		    tls_tsd_of_process(p->pid, &m, &p->bpf.tsd, &e2) < 0)
			log_debug("perl stacks of PID %d: %s: the main interpreter only", p->pid,
				  e2.msg);
		procmaps_release(&m);
	}
	return 0;
}

int perl_proc_attach(int pid, const struct perl_file *f, uint64_t bias,
		     const struct procmaps *maps, struct perl_process **out, struct errmsg *err)
{
	struct perl_process *p;
	int rc;

	p = proc_new(pid, f->major, f->minor, f->patch, f->threaded, err, &rc);
	if (!p)
		return rc;
	procmem_init_pid(&p->mem, pid);
	p->bpf.runops_lo = f->runops_lo + bias;
	p->bpf.runops_hi = f->runops_hi + bias;
	if (f->threaded) {
		struct errmsg e2 = { "" };

		p->key_addr = f->thr_key + bias;
		p->bpf.curinterp = f->curinterp ? f->curinterp + bias : 0;
		/* without glibc's key layout, every thread is walked as the main interpreter */
		if (tls_tsd_of_process(pid, maps, &p->bpf.tsd, &e2) < 0)
			p->tsd_pending = 1; /* perl_proc_key() tries again */
	} else {
		p->bpf.curcop = f->curcop + bias;
		p->bpf.curstackinfo = f->curstackinfo + bias;
	}
	*out = p;
	rc = perl_proc_key(p);
	return rc == -EAGAIN ? -EAGAIN : 0;
}

int perl_proc_open_mem(struct procmem *m, unsigned minor, uint64_t interp_var, uint64_t curcop,
		       uint64_t curstackinfo, struct perl_process **out, struct errmsg *err)
{
	struct perl_process *p;
	int rc;

	p = proc_new(0, 5, minor, 0, interp_var != 0, err, &rc);
	if (!p)
		return rc;
	p->mem = *m;
	p->bpf.curinterp = interp_var;
	p->bpf.curcop = curcop;
	p->bpf.curstackinfo = curstackinfo;
	*out = p;
	return 0;
}

void perl_proc_free(struct perl_process *p)
{
	if (!p)
		return;
	xfree(p->script);
	xfree(p);
}

const struct perl_proc *perl_proc_bpf(const struct perl_process *p)
{
	return &p->bpf;
}

const struct perl_offsets *perl_proc_offsets(const struct perl_process *p)
{
	return &p->bpf.off;
}

struct procmem *perl_proc_mem(struct perl_process *p)
{
	return &p->mem;
}

/* --- the walker (mirrors perl.bpf.h) */

struct walk {
	struct perl_process *p;
	uint64_t *words;
	size_t max, n;
	int segments;
};

static int push(struct walk *w, uint64_t word)
{
	if (w->n >= w->max)
		return -1;
	w->words[w->n++] = word;
	return 0;
}

static int push_frame(struct walk *w, uint64_t sub, uint64_t cop)
{
	uint32_t line = 0;

	if (cop)
		procmem_u32(&w->p->mem, cop + w->p->bpf.off.cop_line, &line);
	if (w->n + 2 > w->max)
		return -1;
	push(w, (FW_TAG_PERL_SUB << FW_TAG_SHIFT) | sub);
	push(w, (FW_TAG_PERL_COP << FW_TAG_SHIFT) | (cop & PERL_ADDR_MASK) |
		 (uint64_t)(line & 0xff) << 48);
	return 0;
}

static void segment_end(struct walk *w)
{
	if (w->segments)
		push(w, (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_SEGMENT_END |
			FW_SEGMENT_DROP_NATIVE);
}

/* The SUB word of a CV (perl.bpf.h: perl_sub_of). */
static uint64_t sub_of(struct perl_process *p, uint64_t cv)
{
	const struct perl_offsets *o = &p->bpf.off;
	uint64_t h[3], gv, egv = 0;
	uint32_t flags;

	if (!cv || procmem_read(&p->mem, cv, h, sizeof(h)) < 0)
		return 0;
	if (((h[1] >> 32) & 0x1f) != PERL_SVT_PVCV || !h[0])
		return 0;
	if (procmem_u64(&p->mem, h[0] + o->xcv_gv, &gv) < 0 ||
	    procmem_u32(&p->mem, h[0] + o->xcv_flags, &flags) < 0)
		return 0;
	if (flags & PERL_CVF_NAMED)
		return (cv & PERL_ADDR_MASK) | PERL_SUB_NAMED_CV;
	if (!gv || procmem_read(&p->mem, gv, h, sizeof(h)) < 0)
		return 0;
	if (((h[1] >> 32) & (0x1f | PERL_SVPGV_GP)) != (PERL_SVT_PVGV | PERL_SVPGV_GP))
		return 0;
	if (h[2] && procmem_u64(&p->mem, h[2] + o->gp_egv, &egv) < 0)
		egv = 0;
	return (egv ? egv : gv) & PERL_ADDR_MASK;
}

static int si_load(struct perl_process *p, uint64_t si, uint64_t *cxstack, uint64_t *prev,
		   int32_t *ix, uint32_t *type)
{
	const struct perl_offsets *o = &p->bpf.off;
	uint8_t b[0x30];

	if (procmem_read(&p->mem, si, b, sizeof(b)) < 0)
		return -EFAULT;
	memcpy(cxstack, b + o->si_cxstack, 8);
	memcpy(prev, b + o->si_prev, 8);
	memcpy(ix, b + o->si_cxix, 4);
	memcpy(type, b + o->si_type, 4);
	return 0;
}

/* The main interpreter's current COP and stack info. */
static int roots(struct perl_process *p, uint64_t *cop, uint64_t *si)
{
	const struct perl_offsets *o = &p->bpf.off;
	uint64_t interp;

	if (o->flags & PERL_F_THREADED) {
		if (!p->bpf.curinterp || procmem_u64(&p->mem, p->bpf.curinterp, &interp) < 0)
			return -EFAULT;
		if (!interp)
			return -EAGAIN;
		if (procmem_u64(&p->mem, interp + o->interp_curcop, cop) < 0 ||
		    procmem_u64(&p->mem, interp + o->interp_curstackinfo, si) < 0)
			return -EFAULT;
	} else if (procmem_u64(&p->mem, p->bpf.curcop, cop) < 0 ||
		   procmem_u64(&p->mem, p->bpf.curstackinfo, si) < 0) {
		return -EFAULT;
	}
	return *si ? 0 : -EAGAIN;
}

int perl_proc_walk(struct perl_process *p, uint64_t *words, size_t max, int segments)
{
	const struct perl_offsets *o = &p->bpf.off;
	struct walk w = { p, words, max, 0, segments };
	uint64_t pending, si, cxstack, prev, cx[10];
	uint32_t type, si_type;
	int32_t ix;
	int steps, open = 0, rc;

	rc = roots(p, &pending, &si);
	if (rc < 0)
		return rc;
	if (si_load(p, si, &cxstack, &prev, &ix, &si_type) < 0)
		return -EFAULT;
	for (steps = 0; steps < PERL_WALK_MAX; steps++) {
		if (ix < 0) {
			if (si_type == PERL_SI_MAIN) {
				if (pending)
					push_frame(&w, 0, pending);
				segment_end(&w);
				break;
			}
			if (!prev || si_load(p, prev, &cxstack, &prev, &ix, &si_type) < 0)
				break;
			if (open)
				segment_end(&w);
			open = 0;
			continue;
		}
		if (procmem_read(&p->mem, cxstack + (uint64_t)(uint32_t)ix * o->cx_size, cx,
				 sizeof(cx)) < 0) {
			push(&w, (FW_TAG_PERL_MARK << FW_TAG_SHIFT) | PERL_MARK_BAD_FRAME);
			break;
		}
		ix--;
		type = (uint32_t)(cx[0] & 0xff);
		if ((type & 0xf) == PERL_CXT_SUBST)
			continue;
		open = 1;
		if (((type & 0xf) == PERL_CXT_SUB || (type & 0xf) == PERL_CXT_FORMAT) &&
		    !(type & PERL_CXP_RE_FAKE)) {
			uint64_t sub = sub_of(p, cx[o->cx_cv / 8]);

			if (sub && push_frame(&w, sub, pending) < 0)
				break;
			pending = cx[o->cx_oldcop / 8];
			if (!cx[o->cx_retop / 8]) {
				segment_end(&w);
				open = 0;
			}
			continue;
		}
		if (!pending)
			pending = cx[o->cx_oldcop / 8];
	}
	return (int)w.n;
}

/* --- names */

/* A HEK's key into out: 0 or errno. */
static int read_hek(struct procmem *m, uint64_t hek, char *out, size_t outlen)
{
	uint32_t len;
	size_t i, n;

	if (!hek || (hek & 3) || procmem_u32(m, hek + 4, &len) < 0)
		return -EFAULT;
	if (len > (1u << 16))
		return -EINVAL;
	n = len < outlen - 1 ? len : outlen - 1;
	if (n && procmem_read(m, hek + 8, out, n) < 0)
		return -EFAULT;
	out[n] = 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = '?';
	return 0;
}

/* The name of a stash (HV). */
static int stash_name(struct procmem *m, const struct perl_offsets *o, uint64_t hv, char *out,
		      size_t outlen)
{
	uint64_t h[3], aux, name, max;
	int32_t count;

	if (!hv || procmem_read(m, hv, h, sizeof(h)) < 0)
		return -EFAULT;
	if (((h[1] >> 32) & 0x1f) != PERL_SVT_PVHV || !h[0])
		return -EINVAL;
	if (o->flags & PERL_F_HV_AUX_IN_BODY) {
		aux = h[0] + o->hv_aux;
	} else {
		if (!h[2] || procmem_u64(m, h[0] + o->xhv_max, &max) < 0 || max > (1u << 28))
			return -EINVAL;
		aux = h[2] + (max + 1) * 8;
	}
	if (procmem_u64(m, aux + o->aux_name, &name) < 0 ||
	    procmem_read(m, aux + o->aux_name_count, &count, 4) < 0)
		return -EFAULT;
	if (count > 0 && procmem_u64(m, name, &name) < 0)
		return -EFAULT;
	if (count < 0 && procmem_u64(m, name + 8, &name) < 0)
		return -EFAULT;
	return read_hek(m, name, out, outlen);
}

int perl_sub_read(struct procmem *m, const struct perl_offsets *o, uint64_t sub,
		  struct perl_sub *out)
{
	uint64_t h[3], addr = sub & PERL_ADDR_MASK, body[2];
	char name[PERL_NAME_MAX], pkg[PERL_NAME_MAX], buf[2 * PERL_NAME_MAX + 4];
	int rc;

	memset(out, 0, sizeof(*out));
	if (!addr) {
		out->name = xstrdup("<main>");
		return 0;
	}
	if (procmem_read(m, addr, h, sizeof(h)) < 0)
		return -EFAULT;
	if (sub & PERL_SUB_NAMED_CV) {
		/* the CV's name HEK where a GV would be, and its stash */
		uint64_t hek, stash;

		if (((h[1] >> 32) & 0x1f) != PERL_SVT_PVCV || !h[0] ||
		    procmem_u64(m, h[0] + o->xcv_gv, &hek) < 0 ||
		    procmem_u64(m, h[0] + o->xcv_stash, &stash) < 0)
			return -EINVAL;
		rc = read_hek(m, hek, name, sizeof(name));
		if (rc < 0)
			return rc;
		if (stash_name(m, o, stash, pkg, sizeof(pkg)) < 0 || !pkg[0])
			snprintf(pkg, sizeof(pkg), "__ANON__");
		snprintf(buf, sizeof(buf), "%s::%s", pkg, name);
		out->name = xstrdup(buf);
		return 0;
	}
	if (((h[1] >> 32) & 0x1f) != PERL_SVT_PVGV || !h[0])
		return -EINVAL;
	if (procmem_read(m, h[0] + o->xgv_namehek, body, sizeof(body)) < 0)
		return -EFAULT;
	rc = read_hek(m, body[0], name, sizeof(name));
	if (rc < 0)
		return rc == -EFAULT ? rc : -EINVAL;
	if (stash_name(m, o, body[1], pkg, sizeof(pkg)) < 0 || !pkg[0])
		snprintf(pkg, sizeof(pkg), "__ANON__");
	snprintf(buf, sizeof(buf), "%s::%s", pkg, name);
	out->name = xstrdup(buf);
	return 0;
}

int perl_cop_read(struct procmem *m, const struct perl_offsets *o, uint64_t cop,
		  struct perl_cop *out)
{
	char file[PERL_PATH_MAX];
	uint64_t f;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!cop || procmem_u32(m, cop + o->cop_line, &out->line) < 0 ||
	    procmem_u64(m, cop + o->cop_file, &f) < 0)
		return -EFAULT;
	if (!f)
		return -EINVAL;
	if (o->flags & PERL_F_THREADED) {
		/* a char *: read what is there, up to a NUL */
		for (i = 0; i < sizeof(file) - 1; i += 64) {
			size_t n = sizeof(file) - 1 - i < 64 ? sizeof(file) - 1 - i : 64;

			if (procmem_read(m, f + i, file + i, n) < 0) {
				if (i == 0)
					return -EFAULT;
				file[i] = 0;
				break;
			}
			file[i + n] = 0;
			if (memchr(file + i, 0, n))
				break;
		}
	} else {
		/* the file's GV, named "_<path" */
		uint64_t h[3], hek;

		if (procmem_read(m, f, h, sizeof(h)) < 0 || !h[0] ||
		    procmem_u64(m, h[0] + o->xgv_namehek, &hek) < 0 ||
		    read_hek(m, hek, file, sizeof(file)) < 0)
			return -EFAULT;
		if (file[0] == '_' && file[1] == '<')
			memmove(file, file + 2, strlen(file + 2) + 1);
	}
	file[sizeof(file) - 1] = 0;
	for (i = 0; file[i]; i++)
		if ((unsigned char)file[i] < 0x20 || file[i] == 0x7f)
			file[i] = '?';
	if (!file[0])
		return -EINVAL;
	out->file = xstrdup(file);
	return 0;
}

void perl_sub_release(struct perl_sub *s)
{
	xfree(s->name);
	s->name = NULL;
}

void perl_cop_release(struct perl_cop *c)
{
	xfree(c->file);
	c->file = NULL;
}

int perl_proc_validate(struct perl_process *p, struct errmsg *err)
{
	uint64_t words[256];
	int n, i, subs = 0, cops = 0;

	n = perl_proc_walk(p, words, 256, 0);
	if (n == -EAGAIN)
		return n;
	if (n < 0 && p->pid > 0 && kill(p->pid, 0) < 0)
		return errmsg_set(err, -ESRCH, "process %d is gone", p->pid);
	if (n < 0) /* the process lives: its chain does not lead where the layout says */
		return errmsg_set(err, -EINVAL,
				  "the context stack of Perl %s cannot be read: offsets do not match",
				  p->version);
	for (i = 0; i + 1 < n; i++) {
		struct perl_sub s;
		struct perl_cop c;

		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_PERL_MARK)
			return errmsg_set(err, -EINVAL,
					  "a context of Perl %s cannot be read: offsets do not match",
					  p->version);
		if ((words[i] >> FW_TAG_SHIFT) != FW_TAG_PERL_SUB)
			continue;
		if (perl_sub_read(&p->mem, &p->bpf.off, words[i] & FW_DATA_MASK, &s) < 0)
			return errmsg_set(err, -EINVAL,
					  "a sub of Perl %s has no readable name: offsets do not match",
					  p->version);
		xfree(s.name);
		subs++;
		if ((words[i + 1] & PERL_ADDR_MASK) &&
		    perl_cop_read(&p->mem, &p->bpf.off, words[i + 1] & PERL_ADDR_MASK, &c) == 0) {
			xfree(c.file);
			cops++;
		}
		i++;
	}
	if (!subs)
		return -EAGAIN;
	if (!cops)
		return errmsg_set(err, -EINVAL,
				  "no statement of Perl %s has a readable file: offsets do not match",
				  p->version);
	return 0;
}

int perl_proc_script(struct perl_process *p, const char **script)
{
	uint64_t words[2 * PERL_WALK_MAX];
	struct perl_cop c;
	int n, i;

	if (p->script) {
		*script = p->script;
		return 0;
	}
	n = perl_proc_walk(p, words, sizeof(words) / sizeof(words[0]), 0);
	for (i = n - 2; i >= 0; i--)
		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_PERL_SUB)
			break;
	if (i < 0 || (words[i] & FW_DATA_MASK) != 0 ||
	    perl_cop_read(&p->mem, &p->bpf.off, words[i + 1] & PERL_ADDR_MASK, &c) < 0)
		return -ENOENT;
	if (strcmp(c.file, "-e") && strcmp(c.file, "-"))
		p->script = xstrdup(c.file);
	xfree(c.file);
	if (!p->script)
		return -ENOENT;
	*script = p->script;
	return 0;
}

/* --- caches: a name_cache keyed by (pid, address, kind, line byte of a COP) */

enum { ENT_SUB = 1, ENT_COP = 2 };

/* A COP freed and its address reused by another (the ops of a BEGIN block, of a required
 * file's top level) has an entry per line byte, kept for the samples that still name it. */
union cache_value {
	struct perl_sub sub;
	struct perl_cop cop;
};

struct perl_cache {
	struct name_cache *nc;
};

struct cache_reader {
	struct procmem *m;
	const struct perl_offsets *o;
};

static int cache_read(void *arg, const struct name_cache_key *key, void *value)
{
	struct cache_reader *r = arg;
	union cache_value *v = value;

	return key->tag == ENT_SUB ? perl_sub_read(r->m, r->o, key->addr, &v->sub)
				   : perl_cop_read(r->m, r->o, key->addr, &v->cop);
}

static int cache_same(const struct name_cache_key *key, const void *value)
{
	const union cache_value *v = value;

	return key->tag == ENT_SUB || (v->cop.line & 0xff) == key->ident;
}

static void cache_release(const struct name_cache_key *key, void *value)
{
	union cache_value *v = value;

	if (key->tag == ENT_SUB)
		perl_sub_release(&v->sub);
	else
		perl_cop_release(&v->cop);
}

static const struct name_cache_ops cache_ops = {
	.value_size = sizeof(union cache_value),
	.release = cache_release,
	.same = cache_same,
};

struct perl_cache *perl_cache_new(size_t max_entries)
{
	struct perl_cache *c = xcalloc(1, sizeof(*c));

	c->nc = name_cache_new(&cache_ops, max_entries);
	return c;
}

void perl_cache_free(struct perl_cache *c)
{
	if (!c)
		return;
	name_cache_free(c->nc);
	xfree(c);
}

static const union cache_value *get(struct perl_cache *c, uint32_t pid, uint64_t addr,
				    uint32_t kind, uint32_t line_byte, struct procmem *m,
				    const struct perl_offsets *o)
{
	struct name_cache_key key = { .pid = pid, .tag = kind, .addr = addr, .ident = line_byte };
	struct cache_reader r = { m, o };

	return name_cache_get(c->nc, &key, m && o ? cache_read : NULL, &r);
}

const struct perl_sub *perl_cache_sub(struct perl_cache *c, uint32_t pid, uint64_t sub,
				      struct procmem *m, const struct perl_offsets *o)
{
	const union cache_value *v;

	if (!(sub & PERL_ADDR_MASK)) {
		static const struct perl_sub main_sub = { (char *)"<main>" };

		return &main_sub;
	}
	v = get(c, pid, sub, ENT_SUB, 0, m, o);
	return v ? &v->sub : NULL;
}

const struct perl_cop *perl_cache_cop(struct perl_cache *c, uint32_t pid, uint64_t cop,
				      uint32_t line_byte, struct procmem *m,
				      const struct perl_offsets *o)
{
	const union cache_value *v = get(c, pid, cop, ENT_COP, line_byte & 0xff, m, o);

	return v ? &v->cop : NULL;
}

void perl_cache_forget_pid(struct perl_cache *c, uint32_t pid)
{
	name_cache_forget_pid(c->nc, pid);
}

void perl_cache_stats(const struct perl_cache *c, struct name_cache_stats *st)
{
	name_cache_stats(c->nc, st);
}
