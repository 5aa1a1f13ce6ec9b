/* ruby_runtime.c: CRuby as a runtime of the framework (ruby_runtime.h). Detection and the
 * process side are in ruby_proc.c, objects and names in ruby_sym.c, the BPF walker in
 * ruby.bpf.h. */
#include "runtime/ruby/ruby_runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/ruby/ruby_proc.h"
#include "runtime/ruby/ruby_sym.h"
#include "runtime/plugin.h"
#include "sampler.skel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CACHE_ENTRIES (1u << 17)
#define SCRIPT_RETRY_NS (50 * 1000000ULL)
#define SCRIPT_TRIES 200
#define VALIDATE_TRIES 5
#define VALIDATE_RETRY_NS (20 * 1000000ULL)
#define JIT_MIN_BYTES (1u << 20) /* YJIT reserves its code memory in one big mapping */

struct rb_state {
	struct plugin_maps maps;  /* rb_procs, rb_stats */
	struct ruby_cache *cache;
	uint64_t frames;          /* Ruby frames noted */
	size_t live;
	struct plugin_check_stats checks;
	uint64_t jit_claims;
	char name[2 * RUBY_NAME_MAX + 8]; /* the last frame name symbolize() returned */
};

struct rb_inst {
	struct plugin_entry e;
	struct ruby_proc *proc;
	struct process_registry *reg;
	int tls_pending;
	struct plugin_check check;
	struct plugin_jit jit;
};

static int rb_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		   struct errmsg *err)
{
	struct rb_state *s = xcalloc(1, sizeof(*s));
	int rc = plugin_maps_find(obj, "rb_procs", "rb_stats", "Ruby", &s->maps, err);

	if (rc) {
		xfree(s);
		return rc;
	}
	s->cache = ruby_cache_new(CACHE_ENTRIES);
	*state = s;
	return 0;
}

static void rb_configure(const struct runtime_config *cfg, struct sampler_bpf *skel)
{
	skel->rodata->ruby_keep_vm_frames = cfg->keep_native ? 1 : 0;
}

static void rb_free(void *state)
{
	struct rb_state *s = state;

	if (!s)
		return;
	ruby_cache_free(s->cache);
	xfree(s);
}

static int rb_file_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	struct ruby_file f;
	int rc = ruby_file_detect(e, path, &f);

	if (rc <= 0)
		return rc;
	*data = plugin_file_copy(&f, sizeof(f));
	return 1;
}

static int rb_interp_ranges(void *data, struct unwind_range *out, int max)
{
	const struct ruby_file *f = data;
	int n = 0;

	if (n < max) {
		out[n].lo = f->exec_lo;
		out[n].hi = f->exec_hi;
		n++;
	}
	if (f->core_lo && n < max) {
		out[n].lo = f->core_lo;
		out[n].hi = f->core_hi;
		n++;
	}
	return n;
}

static int validate(void *proc, struct errmsg *err)
{
	return ruby_proc_validate(proc, err);
}

static int script(void *proc, const char **out)
{
	return ruby_proc_script(proc, out);
}

/* the VM may still be starting; the main thread must hold the VM lock when we look for the
 * script */
static const struct plugin_check_ops check_ops = {
	.validate = validate,
	.script = script,
	.max_tries = VALIDATE_TRIES,
	.again_ns = VALIDATE_RETRY_NS,
	.invalid_ns = VALIDATE_RETRY_NS,
	.script_ns = SCRIPT_RETRY_NS,
	.max_script_tries = SCRIPT_TRIES,
};

/* YJIT's code memory: a big anonymous executable mapping (named by the VM from 3.3 on). Its
 * code has no unwind data: the walker reports the Ruby frames from there on. */
static void claim_jit(struct rb_state *s, struct rb_inst *in, struct process *p)
{
	size_t i;

	if (!in->reg)
		return;
	for (i = 0; i < p->maps.n; i++) {
		const struct procmaps_entry *m = &p->maps.v[i];
		int named = m->kind == PROCMAPS_SPECIAL && strstr(m->path, "[anon:Ruby");

		if (!(m->perms & PROCMAPS_X) ||
		    !(named || (m->kind == PROCMAPS_ANON && m->end - m->start >= JIT_MIN_BYTES)))
			continue;
		/* the same start with another end: the code memory grew (its protection
		 * changed page by page); the claim of that start is replaced */
		if (plugin_jit_claim(&in->jit, in->reg, in->e.pid, m->start, m->end,
				     UNWINDER_RUBY) > 0)
			s->jit_claims++;
	}
}

static int rb_attach(void *state, void *data, const struct runtime_attach *at, void **out,
		     struct errmsg *err)
{
	struct rb_state *s = state;
	struct rb_inst *in;
	struct ruby_proc *p = NULL;
	int rc;

	rc = ruby_proc_attach(at->proc->pid, data, at->bias, &p, err);
	if (rc < 0 && rc != -EAGAIN)
		return rc;
	in = xcalloc(1, sizeof(*in));
	in->e.pid = at->proc->pid;
	in->proc = p;
	in->reg = at->reg;
	in->tls_pending = rc == -EAGAIN;
	plugin_publish(&s->maps, &in->e, ruby_proc_bpf(p));
	claim_jit(s, in, at->proc);
	s->live++;
	*out = in;
	return 1; /* validate and find the script from the sample stream */
}

static int rb_poll(void *state, void *inst, struct errmsg *err)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;
	int rc;

	if (!plugin_check_due(&in->check))
		return 1;
	if (in->tls_pending) {
		rc = ruby_proc_tls(in->proc);
		if (rc == -EAGAIN)
			return 1;
		in->tls_pending = 0;
		if (rc == 0)
			plugin_publish(&s->maps, &in->e, ruby_proc_bpf(in->proc));
	}
	rc = plugin_check_poll(&in->check, &check_ops, in->proc, &s->checks, err);
	if (rc < 0)
		plugin_unpublish(&s->maps, &in->e);
	return rc;
}

static void rb_maps_changed(void *state, void *inst, struct process *proc)
{
	claim_jit(state, inst, proc);
}

static uint32_t info_checksum(uint64_t info)
{
	return (uint32_t)((info >> 32) & 0xffffff);
}

static uint32_t info_pos(uint64_t info)
{
	return (uint32_t)(info & 0xffffffffu);
}

static uint64_t tag_of(uint64_t w)
{
	return w >> FW_TAG_SHIFT;
}

static void rb_note(void *state, void *inst, int pid, const uint64_t *words, size_t n)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;
	struct ruby_mem *rm = ruby_proc_mem(in->proc);
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		uint64_t t = tag_of(words[i]), addr = words[i] & FW_DATA_MASK;

		if (tag_of(words[i + 1]) != FW_TAG_RUBY_INFO)
			continue;
		if (t == FW_TAG_RUBY_ISEQ) {
			ruby_cache_iseq(s->cache, (uint32_t)pid, addr, info_checksum(words[i + 1]),
					rm);
			if (i + 2 < n && tag_of(words[i + 2]) == FW_TAG_RUBY_CME) {
				ruby_cache_cme(s->cache, (uint32_t)pid,
					       words[i + 2] & 0xffffffffffffULL,
					       (uint32_t)((words[i + 2] >> 48) & 0xff), 0xff, rm);
				i++;
			}
		} else if (t == FW_TAG_RUBY_CFUNC) {
			ruby_cache_cme(s->cache, (uint32_t)pid, addr, info_checksum(words[i + 1]),
				       0xffffff, rm);
		} else {
			continue;
		}
		s->frames++;
		i++;
	}
}

static int rb_symbolize(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			size_t *used, struct runtime_frame *out, int max)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;
	struct ruby_mem *rm = in ? ruby_proc_mem(in->proc) : NULL;
	uint64_t t = tag_of(words[0]), addr = words[0] & FW_DATA_MASK;
	const struct ruby_iseq *is = NULL;
	const struct ruby_cme *cme = NULL;
	struct ruby_cme copy;
	char klass[RUBY_NAME_MAX];

	*used = 1;
	if (max < 1)
		return 0;
	if (t == FW_TAG_RUBY_MARK)
		return plugin_special(out, (words[0] & FW_DATA_MASK) == RB_MARK_TRUNCATED
					    ? "[ruby: truncated]" : "[ruby: unreadable frame]");
	if ((t != FW_TAG_RUBY_ISEQ && t != FW_TAG_RUBY_CFUNC) || n < 2 ||
	    tag_of(words[1]) != FW_TAG_RUBY_INFO)
		return plugin_special(out, "[ruby: unknown frame]");
	*used = 2;
	memset(out, 0, sizeof(*out));
	out->kind = FRAME_PYTHON;
	if (t == FW_TAG_RUBY_CFUNC) {
		cme = ruby_cache_cme(s->cache, (uint32_t)pid, addr, info_checksum(words[1]), 0xffffff,
				     rm);
		if (!cme || ruby_frame_name(NULL, cme, s->name, sizeof(s->name)) < 0)
			return plugin_special(out, "[ruby: C function]");
		out->name = s->name;
		return 1;
	}
	if (n > 2 && tag_of(words[2]) == FW_TAG_RUBY_CME) {
		*used = 3;
		cme = ruby_cache_cme(s->cache, (uint32_t)pid, words[2] & 0xffffffffffffULL,
				     (uint32_t)((words[2] >> 48) & 0xff), 0xff, rm);
		if (cme) {
			/* the iseq's lookup may evict it: keep what the name needs */
			copy = *cme;
			snprintf(klass, sizeof(klass), "%s", cme->klass ? cme->klass : "");
			copy.klass = cme->klass ? klass : NULL;
			copy.name = NULL;
			cme = &copy;
		}
	}
	is = ruby_cache_iseq(s->cache, (uint32_t)pid, addr, info_checksum(words[1]), rm);
	if (!is)
		return plugin_special(out, "[ruby: unknown iseq]");
	ruby_frame_name(is, cme, s->name, sizeof(s->name));
	out->name = s->name;
	out->file = is->path;
	out->start_line = is->first_lineno;
	out->line = ruby_iseq_line(is, info_pos(words[1]));
	return 1;
}

static int rb_label(void *state, void *inst, char *key, size_t keylen, char *value,
		    size_t valuelen)
{
	struct rb_inst *in = inst;

	return plugin_check_label(&in->check, key, keylen, value, valuelen);
}

static void rb_detach(void *state, void *inst)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
}

static void rb_release(void *state, void *inst)
{
	struct rb_state *s = state;
	struct rb_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
	ruby_cache_forget_pid(s->cache, (uint32_t)in->e.pid);
	ruby_proc_free(in->proc);
	plugin_check_release(&in->check);
	xfree(in);
	if (s->live)
		s->live--;
}

static void rb_print_stats(void *state, FILE *f)
{
	struct rb_state *s = state;
	struct name_cache_stats cs;
	uint64_t b[RBSTAT__COUNT];

	ruby_cache_stats(s->cache, &cs);
	runtime_read_counters(s->maps.stats_fd, b, RBSTAT__COUNT);
	fprintf(f, "ruby: procs=%zu frames_noted=%llu cache_lookups=%llu cache_hits=%llu "
		"reads=%llu read_errors=%llu checksum_mismatches=%llu validations=%llu "
		"validation_retries=%llu failures=%llu jit_claims=%llu bpf_samples=%llu "
		"bpf_no_ec=%llu bpf_hooks=%llu bpf_frames=%llu bpf_errors=%llu bpf_truncated=%llu "
		"bpf_deferred=%llu bpf_jit=%llu bpf_walk_ns=%llu\n",
		s->live, (unsigned long long)s->frames, (unsigned long long)cs.lookups,
		(unsigned long long)cs.hits, (unsigned long long)cs.reads,
		(unsigned long long)cs.read_errors, (unsigned long long)cs.checksum_mismatches,
		(unsigned long long)s->checks.validations,
		(unsigned long long)s->checks.validation_retries,
		(unsigned long long)s->checks.failures, (unsigned long long)s->jit_claims,
		(unsigned long long)b[RBSTAT_SAMPLES], (unsigned long long)b[RBSTAT_NO_EC],
		(unsigned long long)b[RBSTAT_HOOKS], (unsigned long long)b[RBSTAT_FRAMES],
		(unsigned long long)b[RBSTAT_ERRORS], (unsigned long long)b[RBSTAT_TRUNCATED],
		(unsigned long long)b[RBSTAT_DEFERRED], (unsigned long long)b[RBSTAT_JIT],
		(unsigned long long)b[RBSTAT_WALK_NS]);
}

const struct runtime_ops ruby_runtime_ops = {
	.name = "ruby",
	.kind = UNWINDER_RUBY,
	.init = rb_init,
	.configure = rb_configure,
	.free = rb_free,
	.file_detect = rb_file_detect,
	.interp_ranges = rb_interp_ranges,
	.file_free = plugin_file_free,
	.attach = rb_attach,
	.poll = rb_poll,
	.note = rb_note,
	.maps_changed = rb_maps_changed,
	.symbolize = rb_symbolize,
	.label = rb_label,
	.detach = rb_detach,
	.release = rb_release,
	.print_stats = rb_print_stats,
};
