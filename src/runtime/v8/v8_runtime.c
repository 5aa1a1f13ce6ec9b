/* v8_runtime.c: the V8 (Node.js) runtime (v8_runtime.h). Metadata in v8_meta.c, heap readers in
 * v8_heap.c, the frame cache in v8_symbols.c, the BPF walker in v8.bpf.h. */
#include "runtime/v8/v8_runtime.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "agent/unwinder.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "runtime/plugin.h"
#include "runtime/procmem.h"
#include "runtime/v8/v8_meta.h"
#include "runtime/v8/v8_symbols.h"
#include "runtime/v8/v8_walk.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define V8_CACHE_ENTRIES (1u << 17)
#define V8_MAX_CODE_CLAIMS 192      /* anonymous executable mappings claimed per process */
#define CMDLINE_MAX (64u << 10)

struct v8_state {
	struct plugin_maps maps;      /* v8_procs, v8_stats (-1 without BPF) */
	struct v8_symbols *sym;
	size_t live;
	uint64_t words, claims, claim_errors;
	uint64_t snap_frames, snap_bad; /* frames of stack snapshots stepped, [v8: unreadable frame] */
};

struct range {
	uint64_t start, end;
};

struct v8_inst {
	int pid;
	const struct v8_file *file;
	uint64_t dev, ino;            /* the V8 file */
	struct process_registry *reg;
	uint64_t bias;                /* of the V8 file's mapping */
	struct procmem mem;
	struct v8_reader reader;
	struct v8_proc bpf;
	int published;
	struct range code[V8_MAX_CODE_CLAIMS]; /* the anonymous executable mappings claimed */
	size_t ncode;
	char script[PATH_MAX];
};

static int v8_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		   struct errmsg *err)
{
	struct v8_state *s = xcalloc(1, sizeof(*s));
	int rc = plugin_maps_find(obj, "v8_procs", "v8_stats", "V8", &s->maps, err);

	if (rc) {
		xfree(s);
		return rc;
	}
	s->sym = v8_symbols_new(V8_CACHE_ENTRIES);
	*state = s;
	return 0;
}

static void v8_free(void *state)
{
	struct v8_state *s = state;

	if (!s)
		return;
	v8_symbols_free(s->sym);
	xfree(s);
}

static int v8_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	struct errmsg err = { "" };
	struct v8_file *f = xmalloc(sizeof(*f));
	int rc = v8_file_detect(e, path, f, &err);

	if (rc != 1) {
		xfree(f);
		/* a V8 we cannot walk: profiled natively, said once per file */
		if (rc == -ENOTSUP) {
			log_warn("v8 stacks of '%s': %s", path, err.msg);
			return 0;
		}
		return rc;
	}
	log_debug("v8: '%s' is V8 %u.%u.%u.%u (%d metadata symbols; derived: %s)", path, f->major,
		  f->minor, f->build, f->patch, f->nmetadata, f->fallbacks[0] ? f->fallbacks : "none");
	*data = f;
	return 1;
}

static void v8_file_free(void *data)
{
	v8_file_release(data);
	xfree(data);
}

/* ---- claims: the builtins once, the JIT code as it is mapped */

static void claim_code(struct v8_state *s, struct v8_inst *in, const struct process *p)
{
	struct range now[V8_MAX_CODE_CLAIMS];
	size_t n = 0, i, j;

	for (i = 0; i < p->maps.n && n < V8_MAX_CODE_CLAIMS; i++) {
		const struct procmaps_entry *m = &p->maps.v[i];

		if (m->kind == PROCMAPS_ANON && (m->perms & PROCMAPS_X)) {
			now[n].start = m->start;
			now[n].end = m->end;
			n++;
		}
	}
	/* gone or moved: released (a claim at the same start is replaced below) */
	for (i = 0; i < in->ncode; i++) {
		for (j = 0; j < n && now[j].start != in->code[i].start; j++)
			;
		if (j == n)
			process_claim(in->reg, in->pid, in->code[i].start, in->code[i].end, 0);
	}
	for (j = 0; j < n; j++) {
		for (i = 0; i < in->ncode; i++)
			if (in->code[i].start == now[j].start && in->code[i].end == now[j].end)
				break;
		if (i < in->ncode)
			continue;
		if (process_claim(in->reg, in->pid, now[j].start, now[j].end, UNWINDER_V8))
			s->claim_errors++;
		else
			s->claims++;
	}
	memcpy(in->code, now, n * sizeof(now[0]));
	in->ncode = n;
	/* the first ones for the walker, which then needs no mapping lookup in them */
	for (j = 0; j < V8_JIT_RANGES; j++) {
		in->bpf.jit_lo[j] = j < n ? now[j].start : 0;
		in->bpf.jit_hi[j] = j < n ? now[j].end : 0;
	}
	if (in->published) {
		__u32 key = (__u32)in->pid;

		bpf_map_update_elem(s->maps.procs_fd, &key, &in->bpf, BPF_ANY);
	}
}

/* V8 runs its builtins from a copy of them when it can (remapped next to its code space, so
 * that calls between the two are near): found in the maps (another mapping of the file) or from
 * V8's own variables; published and claimed like the original. */
static void find_builtins_copy(struct v8_state *s, struct v8_inst *in, const struct process *p)
{
	const struct v8_file *f = in->file;
	uint64_t size = f->builtins_hi - f->builtins_lo, copy = 0, blob = 0, blob_size = 0;
	size_t i;

	if (!size)
		return;
	for (i = 0; i < p->maps.n && f->builtins_offset; i++) {
		const struct procmaps_entry *m = &p->maps.v[i];
		uint64_t at;

		if (m->kind != PROCMAPS_FILE || m->inode != in->ino ||
		    (((uint64_t)m->dev_major << 32) | m->dev_minor) != in->dev ||
		    f->builtins_offset < m->offset || f->builtins_offset - m->offset >= m->end - m->start)
			continue;
		at = m->start + (f->builtins_offset - m->offset);
		if (at != in->bpf.builtins_lo[0] && at + size <= m->end)
			copy = at;
	}
	if (!copy && f->blob_code_var && f->blob_size_var &&
	    !procmem_u64(&in->mem, f->blob_code_var + in->bias, &blob) &&
	    !procmem_u64(&in->mem, f->blob_size_var + in->bias, &blob_size) && blob &&
	    blob != in->bpf.builtins_lo[0] && blob_size == size)
		copy = blob;
	if (!copy || copy == in->bpf.builtins_lo[1])
		return;
	in->bpf.builtins_lo[1] = copy;
	in->bpf.builtins_hi[1] = copy + size;
	if (in->published) {
		__u32 key = (__u32)in->pid;

		bpf_map_update_elem(s->maps.procs_fd, &key, &in->bpf, BPF_ANY);
	}
	if (process_claim(in->reg, in->pid, copy, copy + size, UNWINDER_V8) == 0)
		s->claims++;
	else
		s->claim_errors++;
}

static void v8_maps_changed(void *state, void *inst, struct process *proc)
{
	find_builtins_copy(state, inst, proc);
	claim_code(state, inst, proc);
}

/* ---- the main script */

int v8_node_main_script(const char *args, size_t len, char *out, size_t outlen)
{
	/* options of node that take the next argument as their value */
	static const char *const with_value[] = {
		"-r", "--require", "--import", "--loader", "--experimental-loader", "-C",
		"--conditions", "--input-type", "--title", "--inspect-port", "--debug-port",
		"--env-file", "--experimental-policy", "--policy-integrity", "--redirect-warnings",
		"--diagnostic-dir", "--report-dir", "--report-directory", "--report-filename",
		"--report-signal", "--secure-heap", "--secure-heap-min", "--icu-data-dir",
		"--openssl-config", "--tls-cipher-list", "--tls-keylog", "--use-largepages",
		"--unhandled-rejections", "--dns-result-order", "--heapsnapshot-signal",
		"--cpu-prof-dir", "--cpu-prof-name", "--heap-prof-dir", "--heap-prof-name",
		"--trace-event-categories", "--trace-event-file-pattern", "--watch-path",
		"--experimental-sea-config", "--max-http-header-size", "--stack-trace-limit",
		"--disable-warning", "--test-reporter", "--test-reporter-destination",
		"--test-name-pattern", "--test-concurrency", "--test-shard", "--run",
	};
	size_t pos = 0, i;
	int first = 1, skip = 0, options = 1;

	if (!outlen)
		return 0;
	out[0] = '\0';
	while (pos < len) {
		const char *a = args + pos;
		size_t alen = strnlen(a, len - pos);

		pos += alen + 1;
		if (first) { /* argv[0] */
			first = 0;
			continue;
		}
		if (skip) {
			skip = 0;
			continue;
		}
		if (options && alen && a[0] == '-') {
			if (alen == 1)
				return 0; /* "-": the script comes from stdin */
			if (!strcmp(a, "--")) {
				options = 0;
				continue;
			}
			/* inline code: no script (the agent names it after the executable) */
			if (!strcmp(a, "-e") || !strcmp(a, "--eval") || !strcmp(a, "-p") ||
			    !strcmp(a, "--print") || !strncmp(a, "--eval=", 7) ||
			    !strncmp(a, "--print=", 8) || !strcmp(a, "-pe"))
				return 0;
			if (memchr(a, '=', alen))
				continue;
			for (i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
				if (!strcmp(a, with_value[i]))
					skip = 1;
			continue;
		}
		if (!alen)
			continue;
		snprintf(out, outlen, "%.*s", (int)alen, a);
		return 1;
	}
	return 0;
}

/* The main script of pid as an absolute path (relative ones are taken from its cwd). */
static void find_script(struct v8_inst *in)
{
	char path[64], cwd[PATH_MAX / 2], arg[PATH_MAX / 2];
	char *buf = xmalloc(CMDLINE_MAX);
	ssize_t n = 0, r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", in->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (n < (ssize_t)CMDLINE_MAX && (r = read(fd, buf + n, CMDLINE_MAX - n)) > 0)
			n += r;
		close(fd);
	}
	if (n > 0 && v8_node_main_script(buf, (size_t)n, arg, sizeof(arg)) == 1) {
		snprintf(path, sizeof(path), "/proc/%d/cwd", in->pid);
		if (arg[0] != '/' && arg[0] != '[' && (r = readlink(path, cwd, sizeof(cwd) - 1)) > 0) {
			cwd[r] = '\0';
			snprintf(in->script, sizeof(in->script), "%s/%s", cwd,
				 !strncmp(arg, "./", 2) ? arg + 2 : arg);
		} else {
			snprintf(in->script, sizeof(in->script), "%s", arg);
		}
	}
	xfree(buf);
}

/* ---- instances */

static void unpublish(struct v8_state *s, struct v8_inst *in)
{
	if (in->published && s->maps.procs_fd >= 0) {
		__u32 key = (__u32)in->pid;

		bpf_map_delete_elem(s->maps.procs_fd, &key);
	}
	in->published = 0;
}

static int v8_attach(void *state, void *data, const struct runtime_attach *at, void **out,
		     struct errmsg *err)
{
	struct v8_state *s = state;
	const struct v8_file *f = data;
	struct v8_inst *in;
	int i, rc;

	in = xcalloc(1, sizeof(*in));
	in->pid = at->proc->pid;
	in->file = f;
	in->reg = at->reg;
	procmem_init_pid(&in->mem, in->pid);
	in->reader.mem = &in->mem;
	in->reader.f = f;
	in->bias = at->bias;
	in->dev = ((uint64_t)at->map->dev_major << 32) | at->map->dev_minor;
	in->ino = at->map->inode;
	in->bpf.off = f->off;
	if (f->builtins_hi > f->builtins_lo) {
		in->bpf.builtins_lo[0] = f->builtins_lo + at->bias;
		in->bpf.builtins_hi[0] = f->builtins_hi + at->bias;
	}
	for (i = 0; i < f->ninterp && i < V8_INTERP_RANGES; i++) {
		if (f->interp_lo[i] < f->builtins_lo || f->interp_hi[i] > f->builtins_hi)
			continue;
		in->bpf.interp_lo[i] = (uint32_t)(f->interp_lo[i] - f->builtins_lo);
		in->bpf.interp_hi[i] = (uint32_t)(f->interp_hi[i] - f->builtins_lo);
	}
	if (f->handlers_lo >= f->builtins_lo && f->handlers_hi <= f->builtins_hi &&
	    f->handlers_hi > f->handlers_lo) {
		in->bpf.handlers_lo = (uint32_t)(f->handlers_lo - f->builtins_lo);
		in->bpf.handlers_hi = (uint32_t)(f->handlers_hi - f->builtins_lo);
	}
	if (s->maps.procs_fd >= 0) {
		__u32 key = (__u32)in->pid;

		if (bpf_map_update_elem(s->maps.procs_fd, &key, &in->bpf, BPF_ANY)) {
			rc = errmsg_set(err, -errno, "cannot publish V8 process %d to BPF: %s",
					in->pid, strerror(errno));
			xfree(in);
			return rc;
		}
		in->published = 1;
	}
	if (in->bpf.builtins_hi[0] > in->bpf.builtins_lo[0] &&
	    process_claim(at->reg, in->pid, in->bpf.builtins_lo[0], in->bpf.builtins_hi[0],
			  UNWINDER_V8) == 0)
		s->claims++;
	find_builtins_copy(s, in, at->proc);
	claim_code(s, in, at->proc);
	find_script(in);
	s->live++;
	*out = in;
	return 0;
}

/* A frame of a stack snapshot in a claimed range, in user space: the BPF walker's step, one
 * frame at a time (the unwinder hands the caller back if it is V8 code again). The sample's
 * registers other than pc, sp and rbp are not in a snapshot: the leaf bytecode handler's
 * offset comes from the frame. */
static int v8_jit_step(void *state, void *inst, struct unw_state *st, const struct unwinder_io *io)
{
	struct v8_state *s = state;
	struct v8_inst *in = inst;
	struct v8_walk w;
	uint32_t i;

	memset(&w, 0, sizeof(w));
	w.p = in->bpf;
	w.pc = st->pc;
	w.sp = st->sp;
	w.fp = st->bp;
	w.flags = (st->flags & UNW_S_RETADDR) ? 0 : V8_W_EXACT;
	w.leaf_bc = ~0ULL;
	if (v8_walk_step(&w, io->read, io->io))
		return UNW_HOOK_NATIVE;
	s->snap_frames++;
	s->snap_bad += w.found == V8STAT_BAD;
	if (w.replace && st->n > 0)
		st->n--;
	for (i = 0; i < w.nout; i++)
		if (io->emit(io->io, w.out[i]))
			break;
	st->pc = w.pc;
	st->sp = w.sp;
	st->bp = w.fp;
	st->flags |= UNW_S_RETADDR;
	return UNW_HOOK_MOVED;
}

static void v8_note(void *state, void *inst, int pid, const uint64_t *words, size_t n)
{
	struct v8_state *s = state;
	struct v8_inst *in = inst;

	s->words += n;
	v8_symbols_note(s->sym, (uint32_t)pid, &in->reader, words, n);
}

static int v8_symbolize(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			size_t *used, struct runtime_frame *out, int max)
{
	struct v8_state *s = state;
	struct v8_inst *in = inst;

	return v8_symbols_frames(s->sym, (uint32_t)pid, in && in->reader.mem ? &in->reader : NULL,
				 in ? in->file : NULL, words, n, used, out, max);
}

static int v8_label(void *state, void *inst, char *key, size_t keylen, char *value,
		    size_t valuelen)
{
	struct v8_inst *in = inst;

	if (!in->script[0])
		return 0;
	snprintf(key, keylen, "script");
	snprintf(value, valuelen, "%s", in->script);
	return 1;
}

static void v8_detach(void *state, void *inst)
{
	struct v8_inst *in = inst;

	unpublish(state, in);
	/* symbolizing this interval's samples reads nothing more from the process */
	in->reader.mem = NULL;
}

static void v8_release(void *state, void *inst)
{
	struct v8_state *s = state;
	struct v8_inst *in = inst;

	unpublish(s, in);
	v8_symbols_forget_pid(s->sym, (uint32_t)in->pid);
	xfree(in);
	if (s->live)
		s->live--;
}

static void v8_print_stats(void *state, FILE *f)
{
	struct v8_state *s = state;
	struct v8_symbols_stats ss;
	uint64_t b[V8STAT__COUNT];

	v8_symbols_stats(s->sym, &ss);
	runtime_read_counters(s->maps.stats_fd, b, V8STAT__COUNT);
	fprintf(f, "v8: procs=%zu words_noted=%llu claims=%llu claim_errors=%llu lookups=%llu "
		"hits=%llu reads=%llu read_errors=%llu checksum_mismatches=%llu moved=%llu code_scans=%llu "
		"code_scan_hits=%llu functions=%zu codes=%zu scripts=%zu bpf_samples=%llu "
		"bpf_frames=%llu bpf_interp=%llu bpf_compiled=%llu bpf_jitpc=%llu bpf_typed=%llu "
		"bpf_bad=%llu bpf_errors=%llu bpf_walk_ns=%llu snapshot_frames=%llu "
		"snapshot_bad=%llu\n",
		s->live, (unsigned long long)s->words, (unsigned long long)s->claims,
		(unsigned long long)s->claim_errors, (unsigned long long)ss.lookups,
		(unsigned long long)ss.hits, (unsigned long long)ss.reads,
		(unsigned long long)ss.read_errors, (unsigned long long)ss.checksum_mismatches,
		(unsigned long long)ss.moved, (unsigned long long)ss.code_scans, (unsigned long long)ss.code_scan_hits,
		ss.functions, ss.codes, ss.scripts, (unsigned long long)b[V8STAT_SAMPLES],
		(unsigned long long)b[V8STAT_FRAMES], (unsigned long long)b[V8STAT_INTERP],
		(unsigned long long)b[V8STAT_COMPILED], (unsigned long long)b[V8STAT_JITPC],
		(unsigned long long)b[V8STAT_TYPED], (unsigned long long)b[V8STAT_BAD],
		(unsigned long long)b[V8STAT_ERRORS], (unsigned long long)b[V8STAT_WALK_NS],
		(unsigned long long)s->snap_frames, (unsigned long long)s->snap_bad);
}

const struct runtime_ops v8_runtime_ops = {
	.name = "v8",
	.kind = UNWINDER_V8,
	.frames_on_stack = 1, /* snapshots: jit_step walks V8's frames on the copied stack */
	.init = v8_init,
	.free = v8_free,
	.file_detect = v8_detect,
	.file_free = v8_file_free,
	.attach = v8_attach,
	.maps_changed = v8_maps_changed,
	.jit_step = v8_jit_step,
	.note = v8_note,
	.symbolize = v8_symbolize,
	.label = v8_label,
	.detach = v8_detach,
	.release = v8_release,
	.print_stats = v8_print_stats,
};
