/* runtime.c: the runtime framework (runtime.h): the table of runtimes, per-file detection
 * cached by file identity, instances attached to the processes of the registry, the rt_pids
 * BPF map, and the routing of frame words by tag. */
#include "runtime/runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "agent/unwind_table.h"
#include "bpf/unwind.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/hotspot/hotspot_runtime.h"
#include "runtime/perl/perl_runtime.h"
#include "runtime/plugin.h"
#include "runtime/php/php_runtime.h"
#include "runtime/python/python_runtime.h"
#include "runtime/ruby/ruby_runtime.h"
#include "runtime/v8/v8_runtime.h"
#include "sampler.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* THE TABLE: one line per runtime. Its kind (enum unwinder_kind) must be unique and match the
 * RUNTIME_WALKERS line of runtime/runtime.bpf.h. */
static const struct runtime_ops *const runtime_table[] = {
	&python_runtime_ops,
	&hotspot_runtime_ops,
	&v8_runtime_ops,
	&ruby_runtime_ops,
	&php_runtime_ops,
	&perl_runtime_ops,
};

#define MAX_RUNTIMES 16
#define MAX_SEGS 8
#define MAX_FILES 65536 /* cached file results before the cache is emptied */

struct slot {
	const struct runtime_ops *ops;
	void *state;
	int enabled;              /* not disabled and init() succeeded (or not run yet) */
	int inited;
	struct runtime_config cfg;
	uint64_t attached, attach_errors;
};

/* One distinct executable file, as far as runtimes care. */
struct rt_file {
	int slot;                 /* index in rts->slots of the runtime found in it, or -1 */
	void *data;               /* that runtime's file data */
	struct { uint64_t vaddr, offset, filesz; } segs[MAX_SEGS];
	int nsegs;
};

struct runtimes {
	struct slot slots[MAX_RUNTIMES];
	size_t nslots;
	struct process_registry *reg;
	int rt_pids_fd;           /* rt_pids, or -1 */
	struct u64map rt_masks;   /* pid + 1 -> the mask in rt_pids (absent: no entry) */
	const char *only;
	/* file cache: every rt_file is in `files`; the maps find them again */
	struct rt_file **files;
	size_t nfiles, files_cap;
	struct u64map by_map;     /* hash(dev, inode, path) of a mapping -> rt_file * */
	struct u64map by_stat;    /* hash(dev, inode, size, mtime) -> rt_file * */
	struct u64map by_id;      /* hash(build id or content hash) -> rt_file * */
	uint64_t files_detected, file_opens;
	uint64_t stray_words;     /* runtime words of a process without that runtime attached */
	char only_name[32];
};

static uint64_t nonzero(uint64_t h)
{
	return h == 0 || h == ~0ULL ? 2 : h;
}

static int name_in_list(const char *name, const char *list)
{
	size_t n = strlen(name);
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

struct runtimes *runtimes_new_table(const struct runtime_ops *const *table, size_t n,
				    const struct runtimes_opts *opts)
{
	struct runtimes *rts = xcalloc(1, sizeof(*rts));
	size_t i;

	rts->rt_pids_fd = -1;
	u64map_init(&rts->by_map);
	u64map_init(&rts->by_stat);
	u64map_init(&rts->by_id);
	u64map_init(&rts->rt_masks);
	if (opts && opts->only)
		snprintf(rts->only_name, sizeof(rts->only_name), "%s", opts->only);
	for (i = 0; i < n && rts->nslots < MAX_RUNTIMES; i++) {
		struct slot *s = &rts->slots[rts->nslots++];

		s->ops = table[i];
		s->enabled = !(opts && opts->disable && name_in_list(table[i]->name, opts->disable));
		s->cfg.keep_native = opts && (opts->keep_native ||
					      (opts->keep && name_in_list(table[i]->name, opts->keep)));
		s->cfg.only = rts->only_name[0] && !strcmp(rts->only_name, table[i]->name);
	}
	return rts;
}

static void list_add(char *buf, size_t len, const char *name)
{
	size_t used = strlen(buf);

	snprintf(buf + used, len - used, "%s%s", used ? "," : "", name);
}

void runtimes_opts_from_env(struct runtimes_opts *o)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < sizeof(runtime_table) / sizeof(runtime_table[0]); i++) {
		char var[48], *p;
		const char *v;

		snprintf(var, sizeof(var), "SCORCH_%s", runtime_table[i]->name);
		for (p = var; *p; p++)
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
		v = getenv(var);
		if (!v)
			continue;
		if (!strcmp(v, "off"))
			list_add(o->buf_disable, sizeof(o->buf_disable), runtime_table[i]->name);
		else if (!strcmp(v, "keep"))
			list_add(o->buf_keep, sizeof(o->buf_keep), runtime_table[i]->name);
		else if (!strcmp(v, "only"))
			snprintf(o->buf_only, sizeof(o->buf_only), "%s", runtime_table[i]->name);
	}
	o->disable = o->buf_disable[0] ? o->buf_disable : NULL;
	o->keep = o->buf_keep[0] ? o->buf_keep : NULL;
	o->only = o->buf_only[0] ? o->buf_only : NULL;
}

struct runtimes *runtimes_new(const struct runtimes_opts *opts)
{
	return runtimes_new_table(runtime_table, sizeof(runtime_table) / sizeof(runtime_table[0]),
				  opts);
}

void runtimes_configure_bpf(void *ctx, struct sampler_bpf *skel)
{
	struct runtimes *rts = ctx;
	size_t i;

	for (i = 0; i < rts->nslots; i++) {
		struct slot *s = &rts->slots[i];

		if (!s->enabled)
			continue;
		if (s->ops->configure)
			s->ops->configure(&s->cfg, skel);
		if (s->cfg.only)
			skel->rodata->runtime_only_kind = s->ops->kind;
	}
}

void runtimes_init(struct runtimes *rts, struct bpf_object *obj)
{
	size_t i;

	if (obj) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, "rt_pids");

		rts->rt_pids_fd = m ? bpf_map__fd(m) : -1;
	}
	for (i = 0; i < rts->nslots; i++) {
		struct slot *s = &rts->slots[i];
		struct errmsg err = { "" };

		if (!s->enabled || s->inited)
			continue;
		if (s->ops->init && s->ops->init(obj, &s->cfg, &s->state, &err) < 0) {
			log_warn("%s stacks are off: %s", s->ops->name, err.msg);
			s->enabled = 0;
			continue;
		}
		s->inited = 1;
	}
}

void runtimes_free(struct runtimes *rts)
{
	size_t i;

	if (!rts)
		return;
	for (i = 0; i < rts->nfiles; i++) {
		struct rt_file *f = rts->files[i];

		if (f->slot >= 0 && rts->slots[f->slot].ops->file_free)
			rts->slots[f->slot].ops->file_free(f->data);
		xfree(f);
	}
	xfree(rts->files);
	u64map_release(&rts->by_map);
	u64map_release(&rts->by_stat);
	u64map_release(&rts->by_id);
	u64map_release(&rts->rt_masks);
	for (i = 0; i < rts->nslots; i++) {
		struct slot *s = &rts->slots[i];

		if (s->inited && s->ops->free)
			s->ops->free(s->state);
	}
	xfree(rts);
}

/* ---- files */

static void files_clear(struct runtimes *rts)
{
	size_t i;

	for (i = 0; i < rts->nfiles; i++) {
		struct rt_file *f = rts->files[i];

		/* files a runtime was found in stay: instances may point at their data */
		if (f->slot >= 0)
			continue;
		xfree(f);
		rts->files[i] = NULL;
	}
	for (i = 0; i < rts->nfiles;) {
		if (!rts->files[i])
			rts->files[i] = rts->files[--rts->nfiles];
		else
			i++;
	}
	u64map_release(&rts->by_map);
	u64map_release(&rts->by_stat);
	u64map_release(&rts->by_id);
	u64map_init(&rts->by_map);
	u64map_init(&rts->by_stat);
	u64map_init(&rts->by_id);
}

static uint64_t identity_key(struct elf_file *e)
{
	const char *bid = elf_build_id(e);
	uint64_t id;

	if (bid && *bid)
		return nonzero(hash_bytes(bid, strlen(bid), 0xb17d));
	if (elf_file_id(e, &id) == 0)
		return nonzero(hash_u64(id ^ 0xf11e));
	return 0;
}

/* The runtime result of an opened file: cached by identity, else detected now. */
static struct rt_file *file_of_elf(struct runtimes *rts, struct elf_file *e, const char *path)
{
	uint64_t key = identity_key(e), *v;
	struct rt_file *f;
	const struct elf_segment *segs;
	size_t i, nseg;

	if (key && (v = u64map_get(&rts->by_id, key)))
		return (struct rt_file *)(uintptr_t)*v;
	if (rts->nfiles >= MAX_FILES)
		files_clear(rts);
	f = xcalloc(1, sizeof(*f));
	f->slot = -1;
	for (i = 0; i < rts->nslots; i++) {
		struct slot *s = &rts->slots[i];
		int rc;

		if (!s->enabled || !s->inited || !s->ops->file_detect)
			continue;
		rc = s->ops->file_detect(s->state, e, path, &f->data);
		if (rc == 1) {
			f->slot = (int)i;
			rts->files_detected++;
			break;
		}
		if (rc < 0) {
			/* unreadable now (truncated, replaced): not remembered as "no runtime" */
			xfree(f);
			return NULL;
		}
	}
	if (f->slot >= 0) {
		segs = elf_segments(e, &nseg);
		for (i = 0; i < nseg && f->nsegs < MAX_SEGS; i++) {
			f->segs[f->nsegs].vaddr = segs[i].vaddr;
			f->segs[f->nsegs].offset = segs[i].offset;
			f->segs[f->nsegs].filesz = segs[i].filesz;
			f->nsegs++;
		}
	}
	ALLOC_GROW(rts->files, rts->nfiles + 1, rts->files_cap);
	rts->files[rts->nfiles++] = f;
	if (key)
		u64map_put(&rts->by_id, key, (uint64_t)(uintptr_t)f);
	return f;
}

/* The runtime result of the file behind a mapping of pid, or NULL when it cannot be opened. */
static struct rt_file *file_of_mapping(struct runtimes *rts, int pid,
				       const struct procmaps_entry *m)
{
	uint64_t map_key, stat_key, *v;
	struct elf_file *e = NULL;
	struct rt_file *f;
	struct stat st;
	int fd;

	map_key = nonzero(hash_combine(hash_combine(((uint64_t)m->dev_major << 32) | m->dev_minor,
						    m->inode),
				       hash_bytes(m->path, strlen(m->path), 0x3a9)));
	if ((v = u64map_get(&rts->by_map, map_key)))
		return (struct rt_file *)(uintptr_t)*v;
	fd = procmaps_open(pid, m, NULL);
	if (fd < 0)
		return NULL;
	rts->file_opens++;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	stat_key = nonzero(hash_combine(hash_combine(st.st_dev, st.st_ino),
					hash_combine((uint64_t)st.st_size,
						     (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
							     (uint64_t)st.st_mtim.tv_nsec)));
	if ((v = u64map_get(&rts->by_stat, stat_key))) {
		close(fd);
		f = (struct rt_file *)(uintptr_t)*v;
	} else {
		if (elf_open_fd(fd, m->path, &e, NULL))
			return NULL; /* not ELF, or unreadable: fd closed by elf_open_fd */
		f = file_of_elf(rts, e, m->path);
		elf_close(e);
		if (!f)
			return NULL;
		u64map_put(&rts->by_stat, stat_key, (uint64_t)(uintptr_t)f);
	}
	u64map_put(&rts->by_map, map_key, (uint64_t)(uintptr_t)f);
	return f;
}

int runtimes_interp_ranges(void *ctx, struct elf_file *e, const char *path,
			   struct unwind_range *out, int max, uint8_t *kind)
{
	struct runtimes *rts = ctx;
	struct rt_file *f;
	const struct slot *s;
	int n;

	*kind = UNWINDER_NATIVE;
	if (!rts)
		return 0;
	f = file_of_elf(rts, e, path);
	if (!f || f->slot < 0)
		return 0;
	s = &rts->slots[f->slot];
	if (!s->enabled || !s->ops->interp_ranges)
		return 0;
	*kind = s->ops->kind;
	n = s->ops->interp_ranges(f->data, out, max);
	return n < 0 ? 0 : n > max ? max : n;
}

/* The load bias of a mapping of f (the same rule as elf_load_bias()). */
static uint64_t file_bias(const struct rt_file *f, const struct procmaps_entry *m)
{
	int i;

	for (i = 0; i < f->nsegs; i++)
		if (m->offset >= f->segs[i].offset && m->offset - f->segs[i].offset < f->segs[i].filesz)
			return m->start - (f->segs[i].vaddr + (m->offset - f->segs[i].offset));
	for (i = 0; i < f->nsegs; i++)
		if ((f->segs[i].offset & ~0xfffULL) == m->offset)
			return m->start - (f->segs[i].vaddr - (f->segs[i].offset - m->offset));
	return m->start - m->offset;
}

/* ---- instances */

static void rt_pids_update(struct runtimes *rts, struct process *p)
{
	struct runtime_inst *in;
	__u32 key = (__u32)p->pid, mask = 0;

	uint64_t *have;

	if (rts->rt_pids_fd < 0)
		return;
	/* only the walkers that defer frames into snapshots: the others need the whole stack
	 * room a snapshot has */
	for (in = p->runtimes; in; in = in->next)
		if (!in->detached && !in->ops->frames_on_stack)
			mask |= 1u << in->ops->kind;
	/* most processes run no runtime: no system call for them (the map is ours alone) */
	have = u64map_get(&rts->rt_masks, (uint64_t)key + 1);
	if (have ? *have == mask : !mask)
		return;
	if (mask) {
		if (bpf_map_update_elem(rts->rt_pids_fd, &key, &mask, BPF_ANY) == 0)
			u64map_put(&rts->rt_masks, (uint64_t)key + 1, mask);
	} else {
		bpf_map_delete_elem(rts->rt_pids_fd, &key);
		u64map_remove(&rts->rt_masks, (uint64_t)key + 1);
	}
}

static void report(const struct runtime_ops *ops, int pid, const struct errmsg *err)
{
	log_warn("%s stacks of PID %d: %s", ops->name, pid,
		 err->msg[0] ? err->msg : "the runtime cannot be read");
}

static void detach(struct runtimes *rts, struct runtime_inst *in)
{
	if (in->detached)
		return;
	if (in->ops->detach)
		in->ops->detach(in->state, in->data);
	in->detached = 1;
	in->next_poll_ns = 0;
}

static void release_all(struct runtimes *rts, struct process *p)
{
	struct runtime_inst *in = p->runtimes, *next;

	for (; in; in = next) {
		next = in->next;
		detach(rts, in);
		if (in->ops->release)
			in->ops->release(in->state, in->data);
		xfree(in);
	}
	p->runtimes = NULL;
	rt_pids_update(rts, p);
}

static int has_instance(const struct process *p, const struct runtime_ops *ops)
{
	const struct runtime_inst *in;

	for (in = p->runtimes; in; in = in->next)
		if (in->ops == ops)
			return 1;
	return 0;
}

/* Attach the runtimes found in p's mapped files that are not attached yet. */
static void scan(struct runtimes *rts, struct process *p)
{
	size_t i;
	int changed = 0;

	for (i = 0; i < p->maps.n; i++) {
		const struct procmaps_entry *m = &p->maps.v[i];
		struct runtime_attach at;
		struct runtime_inst *in;
		struct errmsg err = { "" };
		struct rt_file *f;
		struct slot *s;
		void *data = NULL;
		int rc;

		if (m->kind != PROCMAPS_FILE)
			continue;
		f = file_of_mapping(rts, p->pid, m);
		if (!f || f->slot < 0)
			continue;
		s = &rts->slots[f->slot];
		if (!s->enabled || !s->inited || has_instance(p, s->ops))
			continue;
		at.reg = rts->reg;
		at.proc = p;
		at.map = m;
		at.bias = file_bias(f, m);
		rc = s->ops->attach(s->state, f->data, &at, &data, &err);
		if (rc < 0) {
			s->attach_errors++;
			/* gone, or memory not readable (exiting, exec under way): nothing to say */
			if (rc != -ESRCH && rc != -ENOENT && rc != -EFAULT)
				report(s->ops, p->pid, &err);
			continue;
		}
		in = xcalloc(1, sizeof(*in));
		in->ops = s->ops;
		in->state = s->state;
		in->data = data;
		in->map_start = m->start;
		in->next_poll_ns = rc == 1 ? 1 : 0;
		in->next = p->runtimes;
		p->runtimes = in;
		s->attached++;
		changed = 1;
	}
	if (changed)
		rt_pids_update(rts, p);
}

static void on_process(void *ctx, struct process *p, enum process_event ev)
{
	struct runtimes *rts = ctx;
	struct runtime_inst *in;

	switch (ev) {
	case PROCESS_EV_NEW:
		release_all(rts, p); /* what was attached belonged to the old image */
		scan(rts, p);
		break;
	case PROCESS_EV_CHANGED:
		for (in = p->runtimes; in; in = in->next)
			if (!in->detached && in->ops->maps_changed)
				in->ops->maps_changed(in->state, in->data, p);
		scan(rts, p);
		break;
	case PROCESS_EV_STALE:
		release_all(rts, p);
		break;
	case PROCESS_EV_EXIT:
		for (in = p->runtimes; in; in = in->next)
			detach(rts, in);
		rt_pids_update(rts, p);
		break;
	case PROCESS_EV_FORGET:
		release_all(rts, p);
		break;
	default:
		break;
	}
}

static int label_of(void *ctx, struct process *p, char *key, size_t keylen, char *value,
		    size_t valuelen)
{
	struct runtime_inst *in;

	for (in = p->runtimes; in; in = in->next)
		if (in->ops->label && in->ops->label(in->state, in->data, key, keylen, value,
						     valuelen) == 1)
			return 1;
	return 0;
}

void runtimes_subscribe(struct runtimes *rts, struct process_registry *reg)
{
	struct process_listener l = { "runtimes", on_process, rts };

	rts->reg = reg;
	process_registry_subscribe(reg, &l);
	process_registry_set_label_source(reg, label_of, rts);
}

/* ---- samples */

int runtimes_jit_step(void *ctx, int pid, uint8_t kind, struct unw_state *st,
		      const struct unwinder_io *io)
{
	struct runtimes *rts = ctx;
	struct process *p = rts && rts->reg ? process_get(rts->reg, pid) : NULL;
	struct runtime_inst *in;

	if (!p)
		return UNW_HOOK_NATIVE;
	for (in = p->runtimes; in; in = in->next)
		if (in->ops->kind == kind && !in->detached && in->ops->jit_step)
			return in->ops->jit_step(in->state, in->data, st, io);
	return UNW_HOOK_NATIVE;
}

void runtimes_note_sample(struct runtimes *rts, int pid, const uint64_t *words, size_t n)
{
	struct process *p = rts->reg ? process_get(rts->reg, pid) : NULL;
	struct runtime_inst *in, *next;
	uint64_t now = 0;
	size_t i, j;

	if (!p || !p->runtimes)
		return;
	for (in = p->runtimes; in; in = next) {
		next = in->next;
		if (in->next_poll_ns && !in->detached && in->ops->poll) {
			struct errmsg err = { "" };
			int rc;

			if (!now)
				now = plugin_now_ns();
			if (now < in->next_poll_ns)
				goto note;
			rc = in->ops->poll(in->state, in->data, &err);
			in->next_poll_ns = rc == 1 ? now + RUNTIME_POLL_NS : 0;
			if (rc < 0) {
				/* cannot be profiled after all: say so once, go on natively (a
				 * process that exits or unmaps memory under us says nothing) */
				if (rc != -ESRCH && rc != -ENOENT && rc != -EFAULT)
					report(in->ops, pid, &err);
				detach(rts, in);
				rt_pids_update(rts, p);
				continue;
			}
		}
note:
		if (in->detached || !in->ops->note)
			continue;
		/* The runtime's words: a run of its tags (the other words are native frames or
		 * another runtime's). */
		for (i = 0; i < n; i = j) {
			uint8_t kind = FW_TAG_KIND(words[i] >> FW_TAG_SHIFT);

			for (j = i + 1; j < n && FW_TAG_KIND(words[j] >> FW_TAG_SHIFT) == kind; j++)
				;
			if (kind == in->ops->kind)
				in->ops->note(in->state, in->data, pid, words + i, j - i);
		}
	}
}

int runtimes_thread_name(struct runtimes *rts, int pid, int tid, char *out, size_t outlen)
{
	struct process *p = rts && rts->reg ? process_get(rts->reg, pid) : NULL;
	struct runtime_inst *in;

	if (!p || !p->runtimes || outlen == 0)
		return 0;
	for (in = p->runtimes; in; in = in->next) {
		if (in->detached || !in->ops->thread_name)
			continue;
		if (in->ops->thread_name(in->state, in->data, tid, out, outlen) == 1) {
			out[outlen - 1] = '\0';
			return out[0] ? 1 : 0;
		}
	}
	return 0;
}

int runtimes_symbolize(struct runtimes *rts, int pid, const uint64_t *words, size_t n,
		       size_t *used, struct runtime_frame *out, int max)
{
	uint8_t kind = FW_TAG_KIND(words[0] >> FW_TAG_SHIFT);
	struct process *p = rts && rts->reg ? process_get(rts->reg, pid) : NULL;
	struct runtime_inst *in = NULL;
	size_t i;
	int r;

	*used = 1;
	if (p && kind != UNWINDER_NATIVE)
		for (in = p->runtimes; in && in->ops->kind != kind; in = in->next)
			;
	for (i = 0; in && i < rts->nslots; i++) {
		struct slot *s = &rts->slots[i];

		if (s->ops != in->ops || !s->inited || !s->ops->symbolize)
			continue;
		r = s->ops->symbolize(s->state, in->data, pid, words, n, used, out, max);
		if (*used < 1 || *used > n)
			*used = 1;
		return r < 0 ? 0 : r > max ? max : r;
	}
	/* No runtime of this kind was attached to the process, so no walker wrote these words:
	 * garbage (a bad return address that passed for a tag). The run of them is one
	 * "[unknown]" frame, never decoded as another process's runtime frames. */
	while (*used < n && FW_TAG_KIND(words[*used] >> FW_TAG_SHIFT) == kind &&
	       (words[*used] >> FW_TAG_SHIFT) != FW_TAG_MARKER &&
	       (words[*used] >> FW_TAG_SHIFT) != FW_TAG_NATIVE)
		(*used)++;
	if (rts)
		rts->stray_words += *used;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	out->name = "[unknown]";
	out->kind = FRAME_SPECIAL;
	return 1;
}

uint64_t runtimes_stray_words(const struct runtimes *rts)
{
	return rts ? rts->stray_words : 0;
}

void runtime_read_counters(int fd, uint64_t *out, uint32_t n)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	__u32 k;
	int c;

	memset(out, 0, sizeof(uint64_t) * n);
	if (fd < 0 || ncpu <= 0)
		return;
	vals = xcalloc((size_t)ncpu, sizeof(*vals));
	for (k = 0; k < n; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	xfree(vals);
}

void runtimes_print_stats(struct runtimes *rts, FILE *f)
{
	size_t i;

	fprintf(f, "runtimes: files_detected=%llu file_opens=%llu files_cached=%zu "
		"stray_words=%llu",
		(unsigned long long)rts->files_detected, (unsigned long long)rts->file_opens,
		rts->nfiles, (unsigned long long)rts->stray_words);
	for (i = 0; i < rts->nslots; i++)
		fprintf(f, " %s_attached=%llu %s_attach_errors=%llu", rts->slots[i].ops->name,
			(unsigned long long)rts->slots[i].attached, rts->slots[i].ops->name,
			(unsigned long long)rts->slots[i].attach_errors);
	fputc('\n', f);
	for (i = 0; i < rts->nslots; i++)
		if (rts->slots[i].inited && rts->slots[i].ops->print_stats)
			rts->slots[i].ops->print_stats(rts->slots[i].state, f);
}
