/* symbolizer.c: native and kernel symbolization (see symbolizer.h).
 *
 * Three caches, from coarse to fine:
 *   files   one struct sym_file per distinct ELF file, found by the (dev, inode, path) of a
 *           mapping, by (dev, inode, size, mtime) of the opened file, or by build id. Symbols
 *           are loaded when the file is first seen (the process may be gone by the time its
 *           samples are symbolized), then the descriptor is closed.
 *   procs   per tracked pid, its executable mappings sorted by address, each with the load
 *           bias of its file.
 *   results per file, link-time address -> interned (name, mangled); demangled names are
 *           memoized by mangled name. Every string handed out lives in one strtab, so results
 *           stay valid however the caches change.
 * See elf.h for the ELF side, procmaps.h for /proc/PID/maps, kallsyms.h for the kernel. */
#include "agent/symbolizer.h"
#include "agent/demangle.h"
#include "agent/elf.h"
#include "agent/kallsyms.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/strtab.h"

#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Beyond this many cached addresses (all files together), the address caches are dropped and
 * refilled: they are a speed-up, not a store. */
#define SYM_MAX_CACHED_ADDRS (1u << 20)
/* Past this many cached files, files that no tracked process maps any more are dropped (their
 * strings stay: results handed out remain valid). */
#define SYM_MAX_FILES 4096
/* An unknown kernel address re-reads /proc/kallsyms at most this often. */
#define SYM_KALLSYMS_RELOAD_NS (60 * 1000000000LL)
/* An address outside every known mapping re-reads the maps at most this often. */
#define SYM_REFRESH_NS 1000000000LL

struct sym_file {
	struct elf_file *elf;   /* NULL when the file could not be opened or parsed */
	struct elf_file *debug; /* separate debug file, or NULL */
	struct elf_file *syms;  /* the one whose symbols we use (debug when it has .symtab) */
	uint32_t build_id;      /* strtab id of the hex build id, 0 if none */
	struct u64map addrs;    /* link-time addr + 1 -> name id << 32 | mangled id */
	int used;               /* mark for eviction */

	/* line info (only with opts.line_info): the file holding DWARF, opened lazily */
	struct elf_file *dwarf_src; /* f->debug or f->elf, still attached, or NULL */
	Elf *libelf;
	Dwarf *dwarf;
	int dwarf_tried;
	struct u64map lines;        /* link-time addr + 1 -> file id << 32 | line */
};

struct sym_map {
	uint64_t start, end, offset;
	uint64_t bias;
	uint32_t module; /* strtab id of the path (or "[vdso]") */
	struct sym_file *file;
};

struct sym_proc {
	int pid;
	uint64_t maps_hash;      /* of the maps text last parsed */
	int64_t last_refresh_ns;
	struct sym_map *maps;
	size_t nmaps;
};

struct symbolizer {
	struct symbolizer_options opts;
	char *debug_dir;
	struct strtab *strings;

	struct sym_file **files; /* every file ever opened (owned) */
	size_t nfiles, files_cap;
	size_t max_files;
	size_t evict_at;              /* evict unused files when nfiles reaches this */
	struct u64map files_by_map;   /* hash(dev, inode, path) -> struct sym_file * */
	struct u64map files_by_stat;  /* hash(dev, inode, size, mtime) -> struct sym_file * */
	struct u64map files_by_build; /* hash(build id) -> struct sym_file * */
	struct sym_file *vdso;        /* our own vDSO, loaded on first use */
	int vdso_tried;

	struct u64map procs;     /* pid + 1 -> struct sym_proc * */
	struct u64map demangled; /* mangled id -> demangled id (0: not mangled) */
	size_t cached_addrs;

	struct kallsyms *kallsyms;
	int kallsyms_tried;
	int64_t kallsyms_loaded_ns;
	char kernel_problem[256];
	struct u64map kernel_addrs; /* addr -> name id << 32 | module id */

	uint64_t lookups, cache_hits;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t nonzero_key(uint64_t h)
{
	return h == 0 || h == ~0ULL ? 2 : h;
}

struct symbolizer *symbolizer_new_opts(const struct symbolizer_options *opts)
{
	struct symbolizer *s = xcalloc(1, sizeof(*s));

	if (opts)
		s->opts = *opts;
	if (s->opts.debug_dir) {
		s->debug_dir = xstrdup(s->opts.debug_dir);
		s->opts.debug_dir = s->debug_dir;
	}
	s->strings = strtab_new();
	s->max_files = s->opts.max_files ? s->opts.max_files : SYM_MAX_FILES;
	s->evict_at = s->max_files;
	u64map_init(&s->files_by_map);
	u64map_init(&s->files_by_stat);
	u64map_init(&s->files_by_build);
	u64map_init(&s->procs);
	u64map_init(&s->demangled);
	u64map_init(&s->kernel_addrs);
	return s;
}

struct symbolizer *symbolizer_new(void)
{
	return symbolizer_new_opts(NULL);
}

static void file_free(struct sym_file *f)
{
	if (!f)
		return;
	if (f->dwarf)
		dwarf_end(f->dwarf);
	if (f->libelf)
		elf_end(f->libelf);
	elf_close(f->elf);
	elf_close(f->debug);
	u64map_release(&f->addrs);
	u64map_release(&f->lines);
	xfree(f);
}

static void proc_free(struct sym_proc *p)
{
	if (!p)
		return;
	xfree(p->maps);
	xfree(p);
}

void symbolizer_free(struct symbolizer *s)
{
	size_t i = 0;
	uint64_t k, v;

	if (!s)
		return;
	while (u64map_next(&s->procs, &i, &k, &v))
		proc_free((struct sym_proc *)(uintptr_t)v);
	for (i = 0; i < s->nfiles; i++)
		file_free(s->files[i]);
	xfree(s->files);
	u64map_release(&s->files_by_map);
	u64map_release(&s->files_by_stat);
	u64map_release(&s->files_by_build);
	u64map_release(&s->procs);
	u64map_release(&s->demangled);
	u64map_release(&s->kernel_addrs);
	kallsyms_free(s->kallsyms);
	strtab_free(s->strings);
	xfree(s->debug_dir);
	xfree(s);
}

/* --- files */

static struct sym_file *file_add(struct symbolizer *s, struct elf_file *elf)
{
	struct sym_file *f = xcalloc(1, sizeof(*f));

	f->elf = elf;
	u64map_init(&f->addrs);
	u64map_init(&f->lines);
	ALLOC_GROW(s->files, s->nfiles + 1, s->files_cap);
	s->files[s->nfiles++] = f;
	return f;
}

static void purge_map(struct u64map *m)
{
	size_t i = 0;
	uint64_t k, v;

	while (u64map_next(m, &i, &k, &v)) {
		if (!((struct sym_file *)(uintptr_t)v)->used)
			u64map_remove(m, k);
	}
}

/* Drop the files that no tracked process maps. Called before a process's maps are rebuilt, so
 * every file still referenced is reachable from s->procs. */
static void files_evict_unused(struct symbolizer *s)
{
	size_t i = 0, j, out = 0;
	uint64_t k, v;

	for (j = 0; j < s->nfiles; j++)
		s->files[j]->used = s->files[j] == s->vdso;
	while (u64map_next(&s->procs, &i, &k, &v)) {
		const struct sym_proc *p = (const struct sym_proc *)(uintptr_t)v;

		for (j = 0; j < p->nmaps; j++) {
			if (p->maps[j].file)
				p->maps[j].file->used = 1;
		}
	}
	purge_map(&s->files_by_map);
	purge_map(&s->files_by_stat);
	purge_map(&s->files_by_build);
	for (j = 0; j < s->nfiles; j++) {
		if (s->files[j]->used) {
			s->files[out++] = s->files[j];
		} else {
			s->cached_addrs -= s->files[j]->addrs.count < s->cached_addrs
						   ? s->files[j]->addrs.count : s->cached_addrs;
			file_free(s->files[j]);
		}
	}
	s->nfiles = out;
	s->evict_at = out * 2 > s->max_files ? out * 2 : s->max_files;
}

/* Load the symbols of a freshly opened file (and find its debug file when it lacks .symtab),
 * then let go of the descriptors: everything needed later is in memory. */
static void file_prepare(struct symbolizer *s, struct sym_file *f, const char *path,
			 const char *root)
{
	const char *bid = elf_build_id(f->elf);

	if (bid)
		f->build_id = strtab_intern(s->strings, bid);
	f->syms = f->elf;
	if (!elf_has_symtab(f->elf) && !s->opts.no_debug_files) {
		if (elf_open_debug_file(f->elf, path, root, s->opts.debug_dir, &f->debug) < 0 && root)
			elf_open_debug_file(f->elf, path, NULL, s->opts.debug_dir, &f->debug);
		if (f->debug && elf_has_symtab(f->debug))
			f->syms = f->debug;
	}
	elf_symbols_load(f->syms, NULL);
	if (f->syms != f->elf) {
		size_t n;

		/* the debug file may lack symbols after all (e.g. only DWARF): use .dynsym then */
		elf_symbols(f->syms, &n);
		if (!n) {
			f->syms = f->elf;
			elf_symbols_load(f->elf, NULL);
		}
	}
	/* With line info on, keep the descriptor of the file that has DWARF line tables. */
	if (s->opts.line_info) {
		struct elf_section_info si;

		if (f->debug && elf_section_info(f->debug, ".debug_line", &si) == 0 &&
		    si.type != SHT_NOBITS)
			f->dwarf_src = f->debug;
		else if (elf_section_info(f->elf, ".debug_line", &si) == 0 && si.type != SHT_NOBITS)
			f->dwarf_src = f->elf;
	}
	if (f->dwarf_src != f->elf)
		elf_detach_file(f->elf);
	if (f->debug && f->dwarf_src != f->debug)
		elf_detach_file(f->debug);
}

/* The file behind a file-backed mapping of pid: from the caches, or opened now. Never NULL: a
 * file that cannot be read gets an entry with elf == NULL so we do not retry it every time. */
static struct sym_file *file_for_mapping(struct symbolizer *s, int pid,
					 const struct procmaps_entry *m)
{
	uint64_t map_key, stat_key, bid_key = 0, *v;
	struct sym_file *f;
	struct elf_file *elf = NULL;
	struct stat st;
	char root[64];
	int fd;

	map_key = hash_combine(hash_combine(((uint64_t)m->dev_major << 32) | m->dev_minor, m->inode),
			       hash_bytes(m->path, strlen(m->path), 0x3a9));
	map_key = nonzero_key(map_key);
	v = u64map_get(&s->files_by_map, map_key);
	if (v)
		return (struct sym_file *)(uintptr_t)*v;
	fd = procmaps_open(pid, m, NULL);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		/* A dying process: do not remember the failure under this key (another process
		 * mapping the same file may succeed). */
		return NULL;
	}
	stat_key = nonzero_key(hash_combine(hash_combine(st.st_dev, st.st_ino),
					    hash_combine((uint64_t)st.st_size,
							 (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
								 (uint64_t)st.st_mtim.tv_nsec)));
	v = u64map_get(&s->files_by_stat, stat_key);
	if (v) {
		close(fd);
		f = (struct sym_file *)(uintptr_t)*v;
		u64map_put(&s->files_by_map, map_key, (uint64_t)(uintptr_t)f);
		return f;
	}
	if (elf_open_fd(fd, m->path, &elf, NULL) == 0 && elf_build_id(elf)) {
		const char *bid = elf_build_id(elf);

		bid_key = nonzero_key(hash_bytes(bid, strlen(bid), 0xb1d));
		v = u64map_get(&s->files_by_build, bid_key);
		if (v) {
			elf_close(elf);
			f = (struct sym_file *)(uintptr_t)*v;
			u64map_put(&s->files_by_map, map_key, (uint64_t)(uintptr_t)f);
			u64map_put(&s->files_by_stat, stat_key, (uint64_t)(uintptr_t)f);
			return f;
		}
	}
	f = file_add(s, elf);
	if (elf) {
		if (pid)
			snprintf(root, sizeof(root), "/proc/%d/root", pid);
		file_prepare(s, f, m->path, pid ? root : NULL);
	}
	u64map_put(&s->files_by_map, map_key, (uint64_t)(uintptr_t)f);
	u64map_put(&s->files_by_stat, stat_key, (uint64_t)(uintptr_t)f);
	if (bid_key)
		u64map_put(&s->files_by_build, bid_key, (uint64_t)(uintptr_t)f);
	return f;
}

/* Our own vDSO: the same kernel maps the same image into every (64-bit) process. */
static struct sym_file *vdso_file(struct symbolizer *s)
{
	struct procmaps m;
	size_t i;

	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = 1;
	if (!getauxval(AT_SYSINFO_EHDR) || procmaps_read(0, &m, NULL) < 0)
		return NULL;
	for (i = 0; i < m.n; i++) {
		struct elf_file *elf;

		if (m.v[i].kind != PROCMAPS_VDSO || m.v[i].start != getauxval(AT_SYSINFO_EHDR))
			continue;
		if (elf_open_mem((const void *)(uintptr_t)m.v[i].start, m.v[i].end - m.v[i].start,
				 &elf, NULL) == 0) {
			s->vdso = file_add(s, elf);
			file_prepare(s, s->vdso, NULL, NULL);
		}
		break;
	}
	procmaps_release(&m);
	return s->vdso;
}

/* --- processes */

static int map_cmp(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static struct sym_proc *proc_get(struct symbolizer *s, int pid)
{
	uint64_t *v = u64map_get(&s->procs, (uint64_t)(uint32_t)pid + 1);

	return v ? (struct sym_proc *)(uintptr_t)*v : NULL;
}

/* The load bias of mapping i of maps, a mapping of f (elf_mapping_bias()); for a file we could
 * not read, or a mapping that is none of its segments, start - offset gives at least stable
 * module offsets. */
static uint64_t mapping_bias(const struct sym_file *f, const struct procmaps *maps, size_t i)
{
	const struct procmaps_entry *e = &maps->v[i];
	struct elf_mapping m, first;
	size_t j = procmaps_run_start(maps, i);
	uint64_t bias;

	procmaps_elf_mapping(e, &m);
	procmaps_elf_mapping(&maps->v[j], &first);
	if (f && f->elf && elf_mapping_bias(f->elf, &m, j < i ? &first : NULL, &bias) == 0)
		return bias;
	return e->start - e->offset;
}

/* Install the executable mappings of m for pid (unchanged maps cost a hash). */
static int proc_set_maps(struct symbolizer *s, int pid, const struct procmaps *m,
			 struct sym_proc **out)
{
	struct sym_proc *p = proc_get(s, pid);
	struct sym_map *maps = NULL;
	size_t nmaps = 0, cap = 0, i;
	uint64_t h;

	/* Unchanged maps (the usual case for a refresh) cost a hash. */
	h = 0x9a9;
	for (i = 0; i < m->n; i++) {
		const struct procmaps_entry *e = &m->v[i];

		if (!(e->perms & PROCMAPS_X))
			continue;
		h = hash_combine(h, e->start);
		h = hash_combine(h, e->end);
		h = hash_combine(h, e->offset ^ e->inode);
	}
	if (p && p->maps_hash == h) {
		p->last_refresh_ns = now_ns();
		*out = p;
		return 0;
	}
	if (s->nfiles >= s->evict_at)
		files_evict_unused(s);
	for (i = 0; i < m->n; i++) {
		const struct procmaps_entry *e = &m->v[i];
		struct sym_file *f = NULL;
		struct sym_map *sm;

		if (!(e->perms & PROCMAPS_X))
			continue;
		if (e->kind == PROCMAPS_VDSO)
			f = vdso_file(s);
		else if (e->kind == PROCMAPS_FILE)
			f = file_for_mapping(s, pid, e);
		if (!f && e->kind != PROCMAPS_FILE)
			continue; /* anonymous executable memory (JIT): nothing to say about it */
		ALLOC_GROW(maps, nmaps + 1, cap);
		sm = &maps[nmaps++];
		sm->start = e->start;
		sm->end = e->end;
		sm->offset = e->offset;
		sm->file = f;
		sm->module = strtab_intern(s->strings, e->kind == PROCMAPS_VDSO ? "[vdso]" : e->path);
		sm->bias = mapping_bias(f, m, i);
	}
	if (nmaps)
		qsort(maps, nmaps, sizeof(*maps), map_cmp);
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->pid = pid;
		u64map_put(&s->procs, (uint64_t)(uint32_t)pid + 1, (uint64_t)(uintptr_t)p);
	}
	xfree(p->maps);
	p->maps = maps;
	p->nmaps = nmaps;
	p->maps_hash = h;
	p->last_refresh_ns = now_ns();
	*out = p;
	return 0;
}

/* Read the maps again (through options.refresh when set) and install them. */
static int proc_refresh(struct symbolizer *s, int pid, struct sym_proc **out)
{
	struct sym_proc *p = proc_get(s, pid);
	struct procmaps m;
	int rc;

	*out = p;
	if (s->opts.refresh) {
		/* The owner of the maps calls symbolizer_set_maps() when they changed. */
		rc = s->opts.refresh(s->opts.refresh_ctx, pid);
		p = proc_get(s, pid);
		if (p)
			p->last_refresh_ns = now_ns();
		*out = p;
		return rc == 1 ? 0 : -ENOENT;
	}
	rc = procmaps_read(pid, &m, NULL);
	if (rc < 0) {
		if (p)
			p->last_refresh_ns = now_ns();
		return rc;
	}
	rc = proc_set_maps(s, pid, &m, out);
	procmaps_release(&m);
	return rc;
}

int symbolizer_set_maps(struct symbolizer *s, int pid, const struct procmaps *maps)
{
	struct sym_proc *p;

	if (pid <= 0)
		return -EINVAL;
	return proc_set_maps(s, pid, maps, &p);
}

int symbolizer_track_pid(struct symbolizer *s, int pid)
{
	struct sym_proc *p;

	if (pid <= 0)
		return -EINVAL;
	return proc_refresh(s, pid, &p);
}

void symbolizer_forget_pid(struct symbolizer *s, int pid)
{
	struct sym_proc *p = proc_get(s, pid);

	if (!p)
		return;
	u64map_remove(&s->procs, (uint64_t)(uint32_t)pid + 1);
	proc_free(p);
}

static const struct sym_map *proc_find(const struct sym_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < p->maps[lo - 1].end)
		return &p->maps[lo - 1];
	return NULL;
}

/* --- lookups */

static uint32_t demangled_id(struct symbolizer *s, uint32_t mangled)
{
	uint64_t *v = u64map_get(&s->demangled, mangled);
	uint32_t id = 0;
	char *d;

	if (v)
		return (uint32_t)*v;
	d = demangle(strtab_get(s->strings, mangled));
	if (d) {
		id = strtab_intern(s->strings, d);
		xfree(d);
	}
	u64map_put(&s->demangled, mangled, id);
	return id;
}

/* Interned (name, mangled) for link-time address vaddr in f, cached. */
static uint64_t file_lookup(struct symbolizer *s, struct sym_file *f, uint64_t vaddr)
{
	uint64_t key = vaddr + 1, *v, packed = 0;
	const struct elf_symbol *sym;
	int cacheable = key != 0 && key != ~0ULL;

	if (cacheable && (v = u64map_get(&f->addrs, key))) {
		s->cache_hits++;
		return *v;
	}
	sym = f->syms ? elf_symbol_lookup(f->syms, vaddr) : NULL;
	if (!sym && f->syms) {
		/* Callers look return addresses up at addr - 1. A signal frame's return address is
		 * the first byte of the trampoline (__restore_rt), so addr - 1 falls in the padding
		 * before it: a function starting right after is the one meant. */
		sym = elf_symbol_lookup(f->syms, vaddr + 1);
		if (sym && sym->addr != vaddr + 1)
			sym = NULL;
	}
	if (sym) {
		uint32_t mangled = strtab_intern(s->strings, elf_symbol_name(f->syms, sym));
		uint32_t name = demangled_id(s, mangled);

		packed = (uint64_t)(name ? name : mangled) << 32 | mangled;
	}
	if (cacheable) {
		if (s->cached_addrs >= SYM_MAX_CACHED_ADDRS) {
			size_t i;

			for (i = 0; i < s->nfiles; i++)
				u64map_release(&s->files[i]->addrs);
			s->cached_addrs = 0;
		}
		u64map_put(&f->addrs, key, packed);
		s->cached_addrs++;
	}
	return packed;
}

/* Source file and line of link-time address vaddr in f from DWARF, cached; 0 when unknown. */
static uint64_t file_line(struct symbolizer *s, struct sym_file *f, uint64_t vaddr)
{
	uint64_t key = vaddr + 1, *v, packed = 0;
	Dwarf_Die cu;
	Dwarf_Line *line;
	const char *src;
	int lineno = 0;

	if (!f->dwarf_src || key == 0 || key == ~0ULL)
		return 0;
	if ((v = u64map_get(&f->lines, key)))
		return *v;
	if (!f->dwarf_tried) {
		f->dwarf_tried = 1;
		elf_version(EV_CURRENT);
		/* ELF_C_READ reads with pread, never maps the file: a file truncated under us
		 * gives errors, not SIGBUS. */
		f->libelf = elf_begin(elf_fd(f->dwarf_src), ELF_C_READ, NULL);
		if (f->libelf)
			f->dwarf = dwarf_begin_elf(f->libelf, DWARF_C_READ, NULL);
	}
	if (f->dwarf && dwarf_addrdie(f->dwarf, vaddr, &cu) && (line = dwarf_getsrc_die(&cu, vaddr)) &&
	    dwarf_lineno(line, &lineno) == 0 && lineno > 0 && (src = dwarf_linesrc(line, NULL, NULL)))
		packed = (uint64_t)strtab_intern(s->strings, src) << 32 | (uint32_t)lineno;
	if (f->lines.count < SYM_MAX_CACHED_ADDRS)
		u64map_put(&f->lines, key, packed);
	return packed;
}

int symbolizer_user(struct symbolizer *s, int pid, uint64_t addr, struct sym_result *out)
{
	struct sym_proc *p = proc_get(s, pid);
	const struct sym_map *m = NULL;
	uint64_t packed;

	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -ENOENT;
	s->lookups++;
	if (!p)
		proc_refresh(s, pid, &p);
	if (p)
		m = proc_find(p, addr);
	if (!m && p && now_ns() - p->last_refresh_ns >= SYM_REFRESH_NS) {
		proc_refresh(s, pid, &p);
		m = p ? proc_find(p, addr) : NULL;
	}
	if (!m)
		return -ENOENT;
	out->module = strtab_get(s->strings, m->module);
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	out->module_offset = addr - m->start + m->offset;
	if (!m->file)
		return 0;
	if (m->file->build_id)
		out->build_id = strtab_get(s->strings, m->file->build_id);
	packed = file_lookup(s, m->file, addr - m->bias);
	if (packed) {
		out->name = strtab_get(s->strings, (uint32_t)(packed >> 32));
		out->mangled = strtab_get(s->strings, (uint32_t)packed);
	}
	if (s->opts.line_info && (packed = file_line(s, m->file, addr - m->bias))) {
		out->source_file = strtab_get(s->strings, (uint32_t)(packed >> 32));
		out->line = (int)(uint32_t)packed;
	}
	return 0;
}

static void kernel_load(struct symbolizer *s)
{
	struct errmsg err = { "" };
	struct kallsyms *k = NULL;

	s->kallsyms_tried = 1;
	s->kallsyms_loaded_ns = now_ns();
	if (kallsyms_load(NULL, &k, &err) < 0) {
		snprintf(s->kernel_problem, sizeof(s->kernel_problem), "%s", err.msg);
		return;
	}
	kallsyms_free(s->kallsyms);
	s->kallsyms = k;
	/* cached results came from the old table; their strings stay valid in s->strings */
	u64map_release(&s->kernel_addrs);
}

int symbolizer_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *out)
{
	uint64_t key = nonzero_key(addr), *v, packed;
	const char *name, *mod = NULL;

	memset(out, 0, sizeof(*out));
	s->lookups++;
	if (!s->kallsyms_tried)
		kernel_load(s);
	if (!s->kallsyms)
		return -ENOENT;
	v = u64map_get(&s->kernel_addrs, key);
	if (v) {
		s->cache_hits++;
		packed = *v;
	} else {
		name = kallsyms_lookup(s->kallsyms, addr, NULL, &mod);
		if (!name && now_ns() - s->kallsyms_loaded_ns >= SYM_KALLSYMS_RELOAD_NS) {
			/* a module or BPF program loaded since: read the table again */
			kernel_load(s);
			name = kallsyms_lookup(s->kallsyms, addr, NULL, &mod);
		}
		packed = 0;
		if (name) {
			char modname[80];
			uint32_t mod_id;

			if (mod)
				snprintf(modname, sizeof(modname), "[%s]", mod);
			mod_id = strtab_intern(s->strings, mod ? modname : "[kernel.kallsyms]");
			packed = (uint64_t)strtab_intern(s->strings, name) << 32 | mod_id;
		}
		if (s->kernel_addrs.count < SYM_MAX_CACHED_ADDRS)
			u64map_put(&s->kernel_addrs, key, packed);
	}
	if (!packed)
		return -ENOENT;
	out->name = out->mangled = strtab_get(s->strings, (uint32_t)(packed >> 32));
	out->module = strtab_get(s->strings, (uint32_t)packed);
	return 0;
}

const char *symbolizer_kernel_problem(struct symbolizer *s)
{
	return s->kernel_problem[0] ? s->kernel_problem : NULL;
}

void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->pids = s->procs.count;
	st->files = s->nfiles;
	for (i = 0; i < s->nfiles; i++) {
		size_t n = 0;

		if (s->files[i]->syms)
			elf_symbols(s->files[i]->syms, &n);
		st->symbols += n;
	}
	st->cached_addrs = s->cached_addrs + s->kernel_addrs.count;
	st->lookups = s->lookups;
	st->cache_hits = s->cache_hits;
}
