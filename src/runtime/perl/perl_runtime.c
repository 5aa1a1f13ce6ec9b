/* perl_runtime.c: Perl as a runtime of the framework (perl_runtime.h). Detection, names and the
 * user-space walker are in perl_proc.c, the BPF walker in perl.bpf.h. */
#include "runtime/perl/perl_runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/perl/perl_proc.h"
#include "runtime/plugin.h"
#include "sampler.skel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CACHE_ENTRIES (1u << 17)
#define RETRY_NS (20 * 1000000ULL)
#define VALIDATE_TRIES 5
#define SCRIPT_TRIES 200

struct perl_state {
	struct plugin_maps maps;
	struct perl_cache *cache;
	uint64_t frames;
	size_t live;
	struct plugin_check_stats checks;
};

struct perl_inst {
	struct plugin_entry e;
	struct perl_process *proc;
	int key_pending;
	struct plugin_check check;
};

static int perl_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		     struct errmsg *err)
{
	struct perl_state *s = xcalloc(1, sizeof(*s));
	int rc = plugin_maps_find(obj, "perl_procs", "perl_stats", "Perl", &s->maps, err);

	if (rc) {
		xfree(s);
		return rc;
	}
	s->cache = perl_cache_new(CACHE_ENTRIES);
	*state = s;
	return 0;
}

static void perl_configure(const struct runtime_config *cfg, struct sampler_bpf *skel)
{
	skel->rodata->perl_keep_vm_frames = cfg->keep_native ? 1 : 0;
}

static void perl_free(void *state)
{
	struct perl_state *s = state;

	if (!s)
		return;
	perl_cache_free(s->cache);
	xfree(s);
}

static int perl_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	struct perl_file f;
	int rc = perl_file_detect(e, path, &f);

	if (rc <= 0)
		return rc;
	*data = plugin_file_copy(&f, sizeof(f));
	return 1;
}

static int perl_interp_ranges(void *data, struct unwind_range *out, int max)
{
	const struct perl_file *f = data;

	if (max < 1)
		return 0;
	out[0].lo = f->runops_lo;
	out[0].hi = f->runops_hi;
	return 1;
}

static int validate(void *proc, struct errmsg *err)
{
	return perl_proc_validate(proc, err);
}

static int script(void *proc, const char **out)
{
	return perl_proc_script(proc, out);
}

static const struct plugin_check_ops check_ops = {
	.validate = validate,
	.script = script,
	.max_tries = VALIDATE_TRIES,
	.again_ns = RETRY_NS,
	.invalid_ns = RETRY_NS,
	.script_ns = RETRY_NS,
	.max_script_tries = SCRIPT_TRIES,
};

static int perl_attach(void *state, void *data, const struct runtime_attach *at, void **out,
		       struct errmsg *err)
{
	struct perl_state *s = state;
	struct perl_inst *in;
	struct perl_process *p = NULL;
	int rc;

	rc = perl_proc_attach(at->proc->pid, data, at->bias, &at->proc->maps, &p, err);
	if (rc < 0 && rc != -EAGAIN)
		return rc;
	in = xcalloc(1, sizeof(*in));
	in->e.pid = at->proc->pid;
	in->proc = p;
	in->key_pending = rc == -EAGAIN;
	if (!in->key_pending)
		plugin_publish(&s->maps, &in->e, perl_proc_bpf(p));
	s->live++;
	*out = in;
	return 1;
}

static int perl_poll(void *state, void *inst, struct errmsg *err)
{
	struct perl_state *s = state;
	struct perl_inst *in = inst;
	int rc;

	if (!plugin_check_due(&in->check))
		return 1;
	if (in->key_pending) {
		/* PL_thr_key holds the key once perl made its interpreter */
		rc = perl_proc_key(in->proc);
		if (rc == -EAGAIN)
			return 1;
		if (rc < 0)
			return rc;
		in->key_pending = 0;
		plugin_publish(&s->maps, &in->e, perl_proc_bpf(in->proc));
	}
	rc = plugin_check_poll(&in->check, &check_ops, in->proc, &s->checks, err);
	if (rc < 0)
		plugin_unpublish(&s->maps, &in->e);
	return rc;
}

static void perl_note(void *state, void *inst, int pid, const uint64_t *words, size_t n)
{
	struct perl_state *s = state;
	struct perl_inst *in = inst;
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		if ((words[i] >> FW_TAG_SHIFT) != FW_TAG_PERL_SUB ||
		    (words[i + 1] >> FW_TAG_SHIFT) != FW_TAG_PERL_COP)
			continue;
		perl_cache_sub(s->cache, (uint32_t)pid, words[i] & FW_DATA_MASK,
			       perl_proc_mem(in->proc), perl_proc_offsets(in->proc));
		if (words[i + 1] & PERL_ADDR_MASK)
			perl_cache_cop(s->cache, (uint32_t)pid, words[i + 1] & PERL_ADDR_MASK,
				       (uint32_t)(words[i + 1] >> 48) & 0xff, perl_proc_mem(in->proc),
				       perl_proc_offsets(in->proc));
		s->frames++;
		i++;
	}
}

static int perl_symbolize(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			  size_t *used, struct runtime_frame *out, int max)
{
	struct perl_state *s = state;
	struct perl_inst *in = inst;
	uint64_t tag = words[0] >> FW_TAG_SHIFT, cop_addr;
	struct procmem *m = in ? perl_proc_mem(in->proc) : NULL;
	const struct perl_offsets *o = in ? perl_proc_offsets(in->proc) : NULL;
	const struct perl_sub *sub;
	const struct perl_cop *cop = NULL;
	static char name[PERL_NAME_MAX * 2 + 8];

	*used = 1;
	if (max < 1)
		return 0;
	if (tag == FW_TAG_PERL_MARK)
		return plugin_special(out, (words[0] & FW_DATA_MASK) == PERL_MARK_TRUNCATED
					    ? "[perl: truncated]" : "[perl: unreadable frame]");
	if (tag != FW_TAG_PERL_SUB || n < 2 || (words[1] >> FW_TAG_SHIFT) != FW_TAG_PERL_COP)
		return plugin_special(out, "[perl: unknown frame]");
	*used = 2;
	sub = perl_cache_sub(s->cache, (uint32_t)pid, words[0] & FW_DATA_MASK, m, o);
	if (!sub)
		return plugin_special(out, "[perl: unknown sub]");
	/* the COP's lookup may evict the sub's entry: keep the name */
	snprintf(name, sizeof(name), "%s", sub->name);
	cop_addr = words[1] & PERL_ADDR_MASK;
	if (cop_addr)
		cop = perl_cache_cop(s->cache, (uint32_t)pid, cop_addr,
				     (uint32_t)(words[1] >> 48) & 0xff, m, o);
	memset(out, 0, sizeof(*out));
	out->name = name;
	out->file = cop ? cop->file : NULL;
	out->line = cop ? cop->line : 0;
	out->kind = FRAME_PYTHON;
	return 1;
}

static int perl_label(void *state, void *inst, char *key, size_t keylen, char *value,
		      size_t valuelen)
{
	struct perl_inst *in = inst;

	return plugin_check_label(&in->check, key, keylen, value, valuelen);
}

static void perl_detach(void *state, void *inst)
{
	struct perl_state *s = state;
	struct perl_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
}

static void perl_release(void *state, void *inst)
{
	struct perl_state *s = state;
	struct perl_inst *in = inst;

	plugin_unpublish(&s->maps, &in->e);
	perl_cache_forget_pid(s->cache, (uint32_t)in->e.pid);
	perl_proc_free(in->proc);
	plugin_check_release(&in->check);
	xfree(in);
	if (s->live)
		s->live--;
}

static void perl_print_stats(void *state, FILE *f)
{
	struct perl_state *s = state;
	struct name_cache_stats cs;
	uint64_t b[PLSTAT__COUNT];

	perl_cache_stats(s->cache, &cs);
	runtime_read_counters(s->maps.stats_fd, b, PLSTAT__COUNT);
	fprintf(f, "perl: procs=%zu frames_noted=%llu cache_lookups=%llu cache_hits=%llu reads=%llu "
		"read_errors=%llu checksum_mismatches=%llu validations=%llu validation_retries=%llu "
		"failures=%llu bpf_samples=%llu bpf_no_interp=%llu bpf_hooks=%llu bpf_frames=%llu "
		"bpf_errors=%llu bpf_truncated=%llu bpf_deferred=%llu bpf_walk_ns=%llu\n",
		s->live, (unsigned long long)s->frames, (unsigned long long)cs.lookups,
		(unsigned long long)cs.hits, (unsigned long long)cs.reads,
		(unsigned long long)cs.read_errors, (unsigned long long)cs.checksum_mismatches,
		(unsigned long long)s->checks.validations,
		(unsigned long long)s->checks.validation_retries,
		(unsigned long long)s->checks.failures, (unsigned long long)b[PLSTAT_SAMPLES],
		(unsigned long long)b[PLSTAT_NO_INTERP], (unsigned long long)b[PLSTAT_HOOKS],
		(unsigned long long)b[PLSTAT_FRAMES], (unsigned long long)b[PLSTAT_ERRORS],
		(unsigned long long)b[PLSTAT_TRUNCATED], (unsigned long long)b[PLSTAT_DEFERRED],
		(unsigned long long)b[PLSTAT_WALK_NS]);
}

const struct runtime_ops perl_runtime_ops = {
	.name = "perl",
	.kind = UNWINDER_PERL,
	.init = perl_init,
	.configure = perl_configure,
	.free = perl_free,
	.file_detect = perl_detect,
	.interp_ranges = perl_interp_ranges,
	.file_free = plugin_file_free,
	.attach = perl_attach,
	.poll = perl_poll,
	.note = perl_note,
	.symbolize = perl_symbolize,
	.label = perl_label,
	.detach = perl_detach,
	.release = perl_release,
	.print_stats = perl_print_stats,
};
