/* symbolizer.c: native and kernel symbolization (see symbolizer.h).
 *
 * Three caches, from coarse to fine:
 *   files   one struct sym_file per distinct ELF file, found by the (dev, inode, path) of a
 *           mapping, by (dev, inode, size, mtime) of the opened file, or by build id. A file
 *           is opened when a process that maps it is first seen (the process may be gone by
 *           the time its samples are symbolized: the descriptor keeps the file readable), but
 *           only its headers are read then. What names it (symbols, MiniDebugInfo, its debug
 *           file, Go's table; file_prepare()) is loaded when an address in it is first
 *           symbolized (file_load()), then the descriptor is closed, unless the file is read
 *           later: Go binaries (.gopclntab is read on demand) and files with DWARF lines. At
 *           most SYM_MAX_PENDING files (opts.max_pending_files) wait so, holding a descriptor
 *           each; past that, the one that waited longest lets its descriptor go and is opened
 *           again by path when needed (as a dropped file is, below). Loaded names are held up
 *           to opts.max_symbol_bytes, least recently used files dropped first (their headers
 *           and results stay); a dropped file is opened again by path when needed, if it is
 *           still the same file (device, inode, size, mtime). DWARF held for lines has its
 *           own budget (opts.line_budget, file_src()).
 *   procs   per tracked pid, its executable mappings sorted by address, each with the load
 *           bias of its file (elf_mapping_bias()), and its JIT symbols (perf map, jitdump).
 *   results per file, link-time address -> a result record (name, source line, inlined
 *           frames) in one pool; demangled names are memoized by mangled name. Every string
 *           handed out lives in one strtab, so results stay valid however the caches change.
 * Sources: elf.h (ELF, debug files), minidebug.h, gopclntab.h, srcline.h (DWARF),
 * debugfetch.h (debuginfod), perfmap.h (JIT), procmaps.h, kallsyms.h (kernel). */
#include "agent/symbolizer.h"
#include "agent/debugfetch.h"
#include "agent/demangle.h"
#include "agent/elf.h"
#include "agent/fde_index.h"
#include "agent/gopclntab.h"
#include "agent/kallsyms.h"
#include "agent/minidebug.h"
#include "agent/perfmap.h"
#include "agent/procmaps.h"
#include "agent/srcline.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/strtab.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Beyond this many cached addresses (all files together), the address caches are dropped and
 * refilled: they are a speed-up, not a store (a map entry and a result record each). */
#define SYM_MAX_CACHED_ADDRS (128u << 10)
/* Loaded names (symbol arrays and their strings, Go's index) held at once, unless options say
 * otherwise. Past it, files not symbolized for SYM_HOLD_NS are dropped, least recently used
 * first; past twice as much, any (a working set larger than the budget costs memory up to 2x
 * rather than re-reading the same files every round of symbolization). */
#define SYM_DEFAULT_SYMBOL_BYTES (16u << 20)
#define SYM_HOLD_NS (60 * 1000000000LL)
/* Files opened whose names are not loaded yet (each holds a descriptor). */
#define SYM_MAX_PENDING 256
/* Past this many cached files, files that no tracked process maps any more are dropped (their
 * strings stay: results handed out remain valid). */
#define SYM_MAX_FILES 4096
/* Files whose descriptor stays open to be read later (Go, DWARF lines). */
#define SYM_MAX_OPEN_FILES 256
/* An unknown kernel address re-reads /proc/kallsyms at most this often. */
#define SYM_KALLSYMS_RELOAD_NS (60 * 1000000000LL)
/* An address outside every known mapping re-reads the maps at most this often. */
#define SYM_REFRESH_NS 1000000000LL
/* A JIT address without a name re-reads the perf map at most this often. */
#define SYM_JIT_REFRESH_NS 1000000000LL
/* Frames of one address: the function and what is inlined into it. */
#define SYM_MAX_FRAMES 33

struct sym_file {
	struct elf_file *elf;   /* NULL when the file could not be opened or parsed */
	struct elf_file *debug; /* separate debug file (local or from debuginfod), or NULL */
	struct elf_file *mini;  /* MiniDebugInfo, or NULL */
	struct elf_file *syms;  /* where names come from first */
	struct elf_file *syms2; /* then (the file's .dynsym when syms is MiniDebugInfo), or NULL */
	struct gopclntab *go;   /* Go: names, lines and inlined calls from .gopclntab */
	struct fde_index *fdes; /* function starts from its CFI, for code no symbol covers */
	int fdes_tried;         /* fdes built (or failed) since the names were loaded */
	uint64_t go_lo, go_hi;
	uint32_t build_id;      /* strtab id of the hex build id, 0 if none */
	struct u64map addrs;    /* link-time addr + 1 -> result index + 1 */
	int used;               /* mark for eviction */
	int remote;             /* asked debuginfod; 2: its debug file arrived (remote_path) */
	uint32_t remote_path;   /* strtab id of the debug file debuginfod gave, 0 if none */
	int open_fds;           /* descriptors this file keeps (SYM_MAX_OPEN_FILES) */
	int loaded;             /* names loaded (file_load()); until then elf holds its fd */
	int prepared;           /* loaded once (its debuginfod request, if any, is out) */
	int dropped;            /* names dropped for room, or parked: file_load() reopens it */
	int reopen_failed;      /* ... and that failed (the file changed or is gone) */
	uint32_t path;          /* strtab id of the path it was opened by (finds its debug file) */
	int pid;                /* the process it was opened through (its root, for the same) */
	uint64_t stat_key;      /* hash of (dev, inode, size, mtime) when opened */
	size_t sym_bytes;       /* held by its loaded names (file_sym_bytes()) */
	int64_t last_use;       /* CLOCK_MONOTONIC ns of its latest lookup */

	/* line info: the file holding DWARF (still attached), its libdw view when open */
	struct elf_file *dwarf_src;
	struct srcline *src;
	int src_failed;
	uint64_t src_tick;      /* last use, for the budget's LRU */
	int64_t src_closed_ns;  /* when the budget last closed its DWARF (0: never) */
};

/* One address's answer: the function and its inlined frames (inl[first .. first + n)). */
struct sym_res {
	uint32_t name, mangled, file; /* strtab ids (0: none) */
	int32_t line;
	uint32_t inl_first, ninl;
	uint64_t start;               /* no name: link-time start of its FDE + 1 (0: none) */
};

struct sym_inl {
	uint32_t name, mangled, file;
	int32_t line;
};

/* JIT code of a process: its perf map and jitdump file. */
struct sym_jit {
	struct perfmap *map;
	struct perfmap *dump;
	char map_path[64];      /* as the process sees it */
	char *dump_path;        /* the jitdump file it mapped, or NULL */
	uint64_t map_off, dump_off; /* bytes read so far */
	uint64_t map_ino, dump_ino;
	int64_t last_read_ns;
	uint32_t map_module, dump_module; /* strtab ids of the paths */
	uid_t uid;              /* the process's owner, and whether it shares our mount */
	int host_ns;            /* namespace: its files are still readable after it exited */
};

struct sym_map {
	uint64_t start, end, offset;
	uint64_t bias;
	uint32_t module; /* strtab id of the path (or "[vdso]") */
	struct sym_file *file;
	int anon;        /* anonymous executable memory (JIT code) */
	int main_exe;    /* the process's executable (/proc/PID/exe), not a library */
};

struct sym_proc {
	int pid;
	uint64_t maps_hash;      /* of the maps text last parsed */
	int64_t last_refresh_ns;
	struct sym_map *maps;
	size_t nmaps;
	/* The image (generation, symbolizer_set_maps_gen()) the maps are of, and the mappings of
	 * the one before it, for the samples taken before the process exec'd (0: unknown). */
	uint32_t gen, prev_gen;
	struct sym_map *prev;
	size_t nprev;
	struct sym_jit *jit;     /* NULL until a JIT address is looked up */
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
	size_t open_fds;              /* descriptors kept by files */

	struct sym_res *res;          /* results of the address caches */
	size_t nres, res_cap;
	struct sym_inl *inl;
	size_t ninl, inl_cap;
	struct sym_frame out_inl[SYM_MAX_FRAMES]; /* sym_result.inlined of the last lookup */

	uint64_t line_bytes;          /* estimated memory of the open srclines (line_cost()) */
	uint64_t line_opens, line_deferred;
	uint64_t line_budget;
	uint64_t tick;

	struct debugfetch *fetch;     /* debuginfod, or NULL */

	struct u64map procs;     /* pid + 1 -> struct sym_proc * */
	struct u64map demangled; /* mangled id -> demangled id (0: not mangled) */
	size_t cached_addrs;

	struct kallsyms *kallsyms;
	int kallsyms_tried;
	int64_t kallsyms_loaded_ns;
	char kernel_problem[256];
	struct u64map kernel_addrs; /* addr -> name id << 32 | module id */

	uint64_t lookups, cache_hits;
	size_t pending;          /* files opened, names not loaded (a descriptor each) */
	uint64_t files_loaded;   /* files whose names were loaded, ever */
	size_t symbol_bytes, max_symbol_bytes;
	size_t max_pending;
	uint64_t drops, reopens, reopen_failures, parked;
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
	s->opts.debuginfod_urls = NULL; /* copied into the fetcher below */
	s->strings = strtab_new();
	s->max_files = s->opts.max_files ? s->opts.max_files : SYM_MAX_FILES;
	s->evict_at = s->max_files;
	s->line_budget = s->opts.line_budget ? s->opts.line_budget : SYM_LINE_BUDGET;
	s->max_pending = s->opts.max_pending_files ? s->opts.max_pending_files : SYM_MAX_PENDING;
	s->max_symbol_bytes = s->opts.max_symbol_bytes ? s->opts.max_symbol_bytes
						       : SYM_DEFAULT_SYMBOL_BYTES;
	u64map_init(&s->files_by_map);
	u64map_init(&s->files_by_stat);
	u64map_init(&s->files_by_build);
	u64map_init(&s->procs);
	u64map_init(&s->demangled);
	u64map_init(&s->kernel_addrs);
	if (!s->opts.no_debuginfod) {
		struct errmsg err = { "" };

		s->fetch = debugfetch_new(opts ? opts->debuginfod_urls : NULL, &err);
		if (!s->fetch && err.msg[0] && !strstr(err.msg, "no debuginfod server"))
			log_warn("debuginfod is off: %s", err.msg);
	}
	return s;
}

struct symbolizer *symbolizer_new(void)
{
	return symbolizer_new_opts(NULL);
}

/* What an open srcline may hold in memory. */
static uint64_t line_cost(const struct srcline *src)
{
	return SYM_DWARF_FACTOR * srcline_cost(src);
}

/* Close f's DWARF (line info), if open. */
static void file_src_close(struct symbolizer *s, struct sym_file *f)
{
	if (!f->src)
		return;
	s->line_bytes -= line_cost(f->src);
	srcline_free(f->src);
	f->src = NULL;
}

static void file_free(struct symbolizer *s, struct sym_file *f)
{
	if (!f)
		return;
	file_src_close(s, f);
	s->open_fds -= (size_t)f->open_fds;
	gopclntab_free(f->go);
	fde_index_free(f->fdes);
	elf_close(f->elf);
	elf_close(f->debug);
	elf_close(f->mini);
	u64map_release(&f->addrs);
	xfree(f);
}

static void jit_free(struct sym_jit *j)
{
	if (!j)
		return;
	perfmap_free(j->map);
	perfmap_free(j->dump);
	xfree(j->dump_path);
	xfree(j);
}

static void proc_free(struct sym_proc *p)
{
	if (!p)
		return;
	jit_free(p->jit);
	xfree(p->maps);
	xfree(p->prev);
	xfree(p);
}

void symbolizer_free(struct symbolizer *s)
{
	size_t i = 0;
	uint64_t k, v;

	if (!s)
		return;
	debugfetch_free(s->fetch);
	while (u64map_next(&s->procs, &i, &k, &v))
		proc_free((struct sym_proc *)(uintptr_t)v);
	for (i = 0; i < s->nfiles; i++)
		file_free(s, s->files[i]);
	xfree(s->files);
	xfree(s->res);
	xfree(s->inl);
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
		for (j = 0; j < p->nprev; j++) {
			if (p->prev[j].file)
				p->prev[j].file->used = 1;
		}
	}
	purge_map(&s->files_by_map);
	purge_map(&s->files_by_stat);
	purge_map(&s->files_by_build);
	for (j = 0; j < s->nfiles; j++) {
		if (s->files[j]->used) {
			s->files[out++] = s->files[j];
		} else {
			if (!s->files[j]->loaded && !s->files[j]->dropped && s->files[j]->elf &&
			    s->pending)
				s->pending--;
			s->symbol_bytes -= s->files[j]->sym_bytes < s->symbol_bytes
						   ? s->files[j]->sym_bytes : s->symbol_bytes;
			s->cached_addrs -= s->files[j]->addrs.count < s->cached_addrs
						   ? s->files[j]->addrs.count : s->cached_addrs;
			file_free(s, s->files[j]);
		}
	}
	s->nfiles = out;
	s->evict_at = out * 2 > s->max_files ? out * 2 : s->max_files;
}

static int has_section(struct elf_file *e, const char *name)
{
	struct elf_section_info si;

	return e && elf_section_info(e, name, &si) == 0 && si.type != SHT_NOBITS;
}

static int has_symbols(struct elf_file *e)
{
	size_t n = 0;

	if (!e || elf_symbols_load(e, NULL) < 0)
		return 0;
	elf_symbols(e, &n);
	return n > 0;
}

/* Which files give names and lines, in the order of symbolizer.h: the file's .symtab, its
 * MiniDebugInfo (with its .dynsym), its debug file; lines from the file or its debug file. */
static void file_choose_sources(struct symbolizer *s, struct sym_file *f)
{
	f->syms = f->elf;
	f->syms2 = NULL;
	if (!elf_has_symtab(f->elf)) {
		if (f->mini && has_symbols(f->mini)) {
			f->syms = f->mini;
			f->syms2 = f->elf;
		}
		if (f->debug && elf_has_symtab(f->debug) && has_symbols(f->debug)) {
			f->syms = f->debug;
			f->syms2 = f->elf; /* .dynsym for what the debug file lacks */
		}
	}
	elf_symbols_load(f->syms, NULL);
	if (f->syms2)
		elf_symbols_load(f->syms2, NULL);
	f->dwarf_src = NULL;
	if (!s->opts.no_line_info && !f->go) {
		if (f->debug && has_section(f->debug, ".debug_line") && has_section(f->debug, ".debug_info"))
			f->dwarf_src = f->debug;
		else if (has_section(f->elf, ".debug_line") && has_section(f->elf, ".debug_info"))
			f->dwarf_src = f->elf;
	}
}

/* Whether debuginfod may know more than we have: no symbol table, or no DWARF for lines. */
static int file_wants_remote(const struct symbolizer *s, const struct sym_file *f)
{
	if (!s->fetch || f->remote || !f->build_id || f->go)
		return 0;
	if (f->syms == f->elf && !elf_has_symtab(f->elf))
		return 1;
	return !s->opts.no_line_info && !f->dwarf_src;
}

/* Keep the descriptors of what is read later (Go's table, DWARF, symbol names), within
 * SYM_MAX_OPEN_FILES; let go of the others (names are then copied into memory first). */
static void file_settle_fds(struct symbolizer *s, struct sym_file *f)
{
	int keep_elf = f->go || f->dwarf_src == f->elf, keep_debug = f->debug && f->dwarf_src == f->debug;
	int names_elf = f->syms == f->elf || f->syms2 == f->elf;
	int names_debug = f->debug && (f->syms == f->debug || f->syms2 == f->debug);

	s->open_fds -= (size_t)f->open_fds;
	f->open_fds = 0;
	if ((keep_elf || keep_debug) && s->open_fds >= SYM_MAX_OPEN_FILES) {
		/* too many kept open: this one gets no lines (and a Go binary is named from its
		 * symbol table, if it has one) */
		f->dwarf_src = NULL;
		gopclntab_free(f->go);
		f->go = NULL;
		keep_elf = keep_debug = 0;
	}
	/* Names are read from the file when a function is first met: holding the descriptor
	 * costs far less than holding every name (Node: 8.8 MB of names). */
	if (s->open_fds + 2 <= SYM_MAX_OPEN_FILES) {
		keep_elf |= names_elf;
		keep_debug |= names_debug;
	}
	if (!keep_elf && elf_fd(f->elf) >= 0)
		elf_detach_file(f->elf);
	if (f->debug && !keep_debug && elf_fd(f->debug) >= 0)
		elf_detach_file(f->debug);
	if (f->mini)
		elf_detach_file(f->mini); /* its symbols are loaded; the image can go */
	f->open_fds = (elf_fd(f->elf) >= 0) + (f->debug && elf_fd(f->debug) >= 0);
	s->open_fds += (size_t)f->open_fds;
}

/* Memory held by f's loaded names: symbol arrays and strings of every source, Go's index. */
static size_t file_sym_bytes(const struct sym_file *f)
{
	return (f->elf ? elf_symbols_bytes(f->elf) : 0) +
	       (f->debug ? elf_symbols_bytes(f->debug) : 0) +
	       (f->mini ? elf_symbols_bytes(f->mini) : 0) + (f->go ? gopclntab_bytes(f->go) : 0) +
	       fde_index_bytes(f->fdes);
}

/* Count f's loaded names again (after they changed) in the symbol budget. */
static void file_account(struct symbolizer *s, struct sym_file *f)
{
	s->symbol_bytes -= f->sym_bytes < s->symbol_bytes ? f->sym_bytes : s->symbol_bytes;
	f->sym_bytes = file_sym_bytes(f);
	s->symbol_bytes += f->sym_bytes;
}

/* The debug file debuginfod gave for f (remote_path), if it is still there and still f's. */
static struct elf_file *remote_debug_open(struct symbolizer *s, const struct sym_file *f)
{
	struct elf_file *d = NULL;
	const uint8_t *fb, *db;
	size_t blen, dlen;

	if (!f->remote_path || elf_open(strtab_get(s->strings, f->remote_path), &d, NULL) < 0)
		return NULL;
	fb = elf_build_id_raw(f->elf, &blen);
	db = elf_build_id_raw(d, &dlen);
	if (!fb || !db || blen != dlen || memcmp(fb, db, blen)) {
		elf_close(d);
		return NULL;
	}
	return d;
}

/* Index f's function starts from its CFI (once per load; the file must still be readable),
 * for addresses no symbol covers. */
static void file_fdes(struct symbolizer *s, struct sym_file *f)
{
	struct errmsg err = { "" };
	int rc;

	if (f->fdes_tried || !f->elf || elf_fd(f->elf) < 0)
		return;
	f->fdes_tried = 1;
	rc = fde_index_build(f->elf, &f->fdes, &err);
	if (rc < 0 && rc != -ENOENT)
		log_debug("function starts of '%s': %s",
			  f->path ? strtab_get(s->strings, f->path) : "?", err.msg);
	file_account(s, f);
}

/* Load what an opened file needs to be named (symbols of the right source, Go's table), find
 * its debug file, ask debuginfod when that may give more. */
static void file_prepare(struct symbolizer *s, struct sym_file *f, const char *path,
			 const char *root)
{
	const char *bid = elf_build_id(f->elf);
	struct errmsg err = { "" };

	if (bid)
		f->build_id = strtab_intern(s->strings, bid);
	f->loaded = f->prepared = 1;
	s->files_loaded++;
	if (gopclntab_open(f->elf, &f->go, &err) == 0)
		gopclntab_text_range(f->go, &f->go_lo, &f->go_hi);
	if (!elf_has_symtab(f->elf)) {
		int rc = minidebug_open(f->elf, &f->mini, &err);

		if (rc < 0 && rc != -ENOENT)
			log_debug("MiniDebugInfo of '%s': %s", path ? path : "?", err.msg);
	}
	/* a file loaded again after a drop: the debug file debuginfod gave before */
	if (f->remote == 2 && !f->go && !(f->debug = remote_debug_open(s, f)))
		f->remote = 0;
	if (!f->debug && !s->opts.no_debug_files && !f->go &&
	    (!elf_has_symtab(f->elf) || (!s->opts.no_line_info && !has_section(f->elf, ".debug_line")))) {
		if (elf_open_debug_file(f->elf, path, root, s->opts.debug_dir, &f->debug) < 0 && root)
			elf_open_debug_file(f->elf, path, NULL, s->opts.debug_dir, &f->debug);
	}
	file_choose_sources(s, f);
	/* Names without a .symtab (only .dynsym, or none) leave most functions unnamed: their
	 * starts are read now, while the descriptor is open. Otherwise on the first miss. */
	if (!elf_has_symtab(f->syms))
		file_fdes(s, f);
	if (file_wants_remote(s, f)) {
		size_t len;
		const uint8_t *raw = elf_build_id_raw(f->elf, &len);

		if (raw && debugfetch_request(s->fetch, raw, len) != -ENOSPC)
			f->remote = 1;
	}
	file_settle_fds(s, f);
	file_account(s, f);
}

/* Drop f's names (symbols of every source, its debug file and MiniDebugInfo, Go's table, its
 * DWARF) to make room, and its descriptors; its headers stay (load biases), and so do the
 * results already cached for it. */
static void file_drop(struct symbolizer *s, struct sym_file *f)
{
	file_src_close(s, f);
	f->src_failed = 0;
	f->dwarf_src = NULL;
	gopclntab_free(f->go);
	f->go = NULL;
	f->go_lo = f->go_hi = 0;
	fde_index_free(f->fdes);
	f->fdes = NULL;
	f->fdes_tried = 0;
	elf_close(f->debug);
	f->debug = NULL;
	elf_close(f->mini);
	f->mini = NULL;
	elf_symbols_release(f->elf);
	if (elf_fd(f->elf) >= 0)
		elf_detach_file(f->elf);
	f->syms = f->syms2 = NULL;
	s->open_fds -= (size_t)f->open_fds;
	f->open_fds = 0;
	s->symbol_bytes -= f->sym_bytes < s->symbol_bytes ? f->sym_bytes : s->symbol_bytes;
	f->sym_bytes = 0;
	f->loaded = 0;
	f->dropped = 1;
	s->drops++;
}

/* Keep the loaded names within max_symbol_bytes (files idle for SYM_HOLD_NS) and twice that
 * (any): drop the least recently used files but keep (the one just loaded). */
static void files_trim(struct symbolizer *s, const struct sym_file *keep)
{
	int64_t now = now_ns();

	while (s->symbol_bytes > s->max_symbol_bytes) {
		int hard = s->symbol_bytes > 2 * s->max_symbol_bytes;
		struct sym_file *lru = NULL;
		size_t i;

		for (i = 0; i < s->nfiles; i++) {
			struct sym_file *f = s->files[i];

			if (f == keep || f == s->vdso || !f->loaded || !f->sym_bytes)
				continue;
			if (!hard && now - f->last_use < SYM_HOLD_NS)
				continue;
			if (!lru || f->last_use < lru->last_use)
				lru = f;
		}
		if (!lru)
			return;
		file_drop(s, lru);
	}
}

static uint64_t stat_key_of(const struct stat *st)
{
	return nonzero_key(hash_combine(hash_combine(st->st_dev, st->st_ino),
					hash_combine((uint64_t)st->st_size,
						     (uint64_t)st->st_mtim.tv_sec * 1000000000ULL +
							     (uint64_t)st->st_mtim.tv_nsec)));
}

/* A file whose names were dropped (or that was parked): open it again by path (in the root of
 * the process it was seen in, while that lives) if it is still the same file. 0, or -1 (it
 * stays without names; the results cached for it remain). */
static int file_reopen(struct symbolizer *s, struct sym_file *f)
{
	const char *path = f->path ? strtab_get(s->strings, f->path) : NULL;
	struct elf_file *elf = NULL;
	struct stat st;
	char buf[4200];
	int fd = -1;

	if (!path || path[0] != '/')
		goto fail;
	if (f->pid) {
		snprintf(buf, sizeof(buf), "/proc/%d/root%s", f->pid, path);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    stat_key_of(&st) != f->stat_key) {
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	if (elf_open_fd(fd, path, &elf, NULL) < 0)
		goto fail;
	elf_close(f->elf);
	f->elf = elf;
	f->dropped = 0;
	s->reopens++;
	return 0;
fail:
	f->reopen_failed = 1;
	s->reopen_failures++;
	return -1;
}

/* Load f's names now, when its first address is symbolized (or at once when too many files
 * wait). The process it was opened through may be gone: its debug file is then looked for in
 * our own root. */
static void file_load(struct symbolizer *s, struct sym_file *f)
{
	char root[64];
	int pid = f->pid;

	if (f->loaded || !f->elf || f->reopen_failed)
		return;
	if (f->dropped) {
		if (file_reopen(s, f) < 0)
			return;
	} else if (s->pending) {
		s->pending--;
	}
	if (pid) {
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
		if (access(root, X_OK) < 0)
			pid = 0;
	}
	file_prepare(s, f, f->path ? strtab_get(s->strings, f->path) : NULL, pid ? root : NULL);
	files_trim(s, f);
}

/* Too many files wait for their names with a descriptor open: the one that waited longest
 * (files are in the order they were opened) lets its descriptor go and will be opened again by
 * path, like a file whose names were dropped. */
static void pending_park_oldest(struct symbolizer *s, const struct sym_file *keep)
{
	size_t i;

	for (i = 0; i < s->nfiles; i++) {
		struct sym_file *f = s->files[i];

		if (f == keep || f->loaded || f->dropped || !f->elf)
			continue;
		elf_detach_file(f->elf);
		f->dropped = 1;
		s->pending--;
		s->parked++;
		return;
	}
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
	stat_key = stat_key_of(&st);
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
		/* headers only for now: names when one of its addresses is symbolized */
		if (bid_key)
			f->build_id = strtab_intern(s->strings, elf_build_id(elf));
		f->path = strtab_intern(s->strings, m->path);
		f->pid = pid;
		f->stat_key = stat_key;
		s->pending++;
		if (s->pending > s->max_pending)
			pending_park_oldest(s, f);
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

/* The load bias of mapping e of f (elf_mapping_bias(); hint: the bias of the mapping of the
 * same file right before it, or NULL); for a file we could not read, or a mapping that is none
 * of its segments, start - offset gives at least stable module offsets. */
static uint64_t mapping_bias(const struct sym_file *f, const struct procmaps_entry *e,
			     const uint64_t *hint)
{
	struct elf_mapping m;
	uint64_t bias;

	procmaps_elf_mapping(e, &m);
	if (f && f->elf && elf_mapping_bias(f->elf, &m, hint, &bias) == 0)
		return bias;
	return e->start - e->offset;
}

static struct sym_proc *proc_new(struct symbolizer *s, int pid)
{
	struct sym_proc *p = xcalloc(1, sizeof(*p));

	p->pid = pid;
	u64map_put(&s->procs, (uint64_t)(uint32_t)pid + 1, (uint64_t)(uintptr_t)p);
	return p;
}

/* "jit-NNN.dump": the jitdump file a JIT runtime maps so that profilers find it. */
static int is_jitdump(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	return n > 9 && !strncmp(base, "jit-", 4) && !strcmp(base + n - 5, ".dump") &&
	       strspn(base + 4, "0123456789") == n - 9;
}

static struct sym_jit *jit_get(struct symbolizer *s, struct sym_proc *p)
{
	if (!p->jit) {
		char path[64], a[64], b[64];
		struct stat st;
		ssize_t na, nb;

		p->jit = xcalloc(1, sizeof(*p->jit));
		/* who may have written its files, and whether our /tmp is its /tmp */
		snprintf(path, sizeof(path), "/proc/%d", p->pid);
		p->jit->uid = stat(path, &st) == 0 ? st.st_uid : 0;
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", p->pid);
		na = readlink(path, a, sizeof(a) - 1);
		nb = readlink("/proc/self/ns/mnt", b, sizeof(b) - 1);
		p->jit->host_ns = na > 0 && na == nb && !memcmp(a, b, (size_t)na);
		/* perf-PID.map names the pid as the process knows it (its pid namespace) */
		snprintf(p->jit->map_path, sizeof(p->jit->map_path), "/tmp/perf-%d.map",
			 perfmap_ns_pid(p->pid));
		p->jit->map_module = strtab_intern(s->strings, p->jit->map_path);
	}
	return p->jit;
}

static void jit_note_dump(struct symbolizer *s, struct sym_proc **pp, int pid, const char *path)
{
	struct sym_jit *j;

	if (!*pp)
		*pp = proc_new(s, pid);
	j = jit_get(s, *pp);
	if (j->dump_path && !strcmp(j->dump_path, path))
		return;
	xfree(j->dump_path);
	perfmap_free(j->dump);
	j->dump = NULL;
	j->dump_off = j->dump_ino = 0;
	j->dump_path = xstrdup(path);
	j->dump_module = strtab_intern(s->strings, path);
}

static void jit_refresh(struct symbolizer *s, struct sym_proc *p);

/* Install the executable mappings of m for pid (unchanged maps cost a hash). */
static int proc_set_maps(struct symbolizer *s, int pid, const struct procmaps *m,
			 uint32_t gen, struct sym_proc **out)
{
	struct sym_proc *p = proc_get(s, pid);
	struct sym_map *maps = NULL;
	const struct procmaps_entry *prev = NULL;
	size_t nmaps = 0, cap = 0, i;
	uint64_t h, prev_bias = 0;
	int has_jit = 0;
	char exe_link[64], exe[4096];
	ssize_t exe_len;

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
		/* the same mappings in a new image (an exec of the same program at the same
		 * addresses): the older image's samples are named from these too */
		if (gen && p->gen && p->gen != gen) {
			xfree(p->prev);
			p->prev = p->nmaps ? xmalloc(p->nmaps * sizeof(*p->prev)) : NULL;
			if (p->nmaps)
				memcpy(p->prev, p->maps, p->nmaps * sizeof(*p->prev));
			p->nprev = p->nmaps;
			p->prev_gen = p->gen;
		}
		if (gen)
			p->gen = gen;
		p->last_refresh_ns = now_ns();
		*out = p;
		return 0;
	}
	if (s->nfiles >= s->evict_at)
		files_evict_unused(s);
	/* which mapping is the executable (pprof names it the profile's main file) */
	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", pid);
	exe_len = readlink(exe_link, exe, sizeof(exe) - 1);
	exe[exe_len > 0 ? exe_len : 0] = '\0';
	for (i = 0; i < m->n; i++) {
		const struct procmaps_entry *e = &m->v[i];
		struct sym_file *f = NULL;
		struct sym_map *sm;

		if (!(e->perms & PROCMAPS_X))
			continue;
		if (e->kind == PROCMAPS_FILE && is_jitdump(e->path)) {
			/* mapped by a JIT runtime as a marker for profilers: its names */
			jit_note_dump(s, &p, pid, e->path);
			continue;
		}
		if (e->kind == PROCMAPS_VDSO)
			f = vdso_file(s);
		else if (e->kind == PROCMAPS_FILE)
			f = file_for_mapping(s, pid, e);
		else if (e->kind == PROCMAPS_SPECIAL && !strcmp(e->path, "[vsyscall]"))
			continue;
		ALLOC_GROW(maps, nmaps + 1, cap);
		sm = &maps[nmaps++];
		memset(sm, 0, sizeof(*sm));
		sm->start = e->start;
		sm->end = e->end;
		sm->offset = e->offset;
		sm->file = f;
		if (e->kind == PROCMAPS_FILE || e->kind == PROCMAPS_VDSO) {
			/* the same load's previous segment tells segments sharing a page apart */
			int same = prev && procmaps_same_file(prev, e);

			sm->module = strtab_intern(s->strings, e->kind == PROCMAPS_VDSO ? "[vdso]" : e->path);
			sm->main_exe = e->kind == PROCMAPS_FILE && exe[0] && !strcmp(exe, e->path);
			sm->bias = mapping_bias(f, e, same ? &prev_bias : NULL);
			prev = e;
			prev_bias = sm->bias;
		} else {
			sm->anon = 1; /* anonymous executable memory: JIT code (perf map, jitdump) */
			has_jit = 1;
		}
	}
	if (nmaps)
		qsort(maps, nmaps, sizeof(*maps), map_cmp);
	if (!p)
		p = proc_new(s, pid);
	if (gen && p->gen && gen != p->gen) {
		/* a new image: the old one's mappings stay for the samples taken before */
		xfree(p->prev);
		p->prev = p->maps;
		p->nprev = p->nmaps;
		p->prev_gen = p->gen;
	} else {
		xfree(p->maps);
	}
	if (gen)
		p->gen = gen;
	p->maps = maps;
	p->nmaps = nmaps;
	p->maps_hash = h;
	p->last_refresh_ns = now_ns();
	*out = p;
	/* JIT code: learn who the process is and read its names now, while it lives. */
	if (has_jit)
		jit_refresh(s, p);
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
	rc = proc_set_maps(s, pid, &m, 0, out);
	procmaps_release(&m);
	return rc;
}

int symbolizer_set_maps(struct symbolizer *s, int pid, const struct procmaps *maps)
{
	return symbolizer_set_maps_gen(s, pid, maps, 0);
}

int symbolizer_set_maps_gen(struct symbolizer *s, int pid, const struct procmaps *maps,
			    uint32_t gen)
{
	struct sym_proc *p;

	if (pid <= 0)
		return -EINVAL;
	return proc_set_maps(s, pid, maps, gen, &p);
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

static const struct sym_map *maps_find(const struct sym_map *maps, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < maps[lo - 1].end)
		return &maps[lo - 1];
	return NULL;
}

static const struct sym_map *proc_find(const struct sym_proc *p, uint64_t addr)
{
	return maps_find(p->maps, p->nmaps, addr);
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

static uint32_t intern(struct symbolizer *s, const char *str)
{
	return str && *str ? strtab_intern(s->strings, str) : 0;
}

/* Drop every cached address (all files): when the cap is reached, and when a file got a
 * better source of names. */
static void cache_reset(struct symbolizer *s)
{
	size_t i;

	for (i = 0; i < s->nfiles; i++) {
		u64map_release(&s->files[i]->addrs);
		u64map_init(&s->files[i]->addrs);
	}
	s->cached_addrs = 0;
	s->nres = s->ninl = 0;
}

/* The libdw view of f's DWARF, opened within the line budget (least recently used ones are
 * closed to make room), or NULL. */
static struct srcline *file_src(struct symbolizer *s, struct sym_file *f)
{
	struct errmsg err = { "" };
	uint64_t cost;

	if (!f->dwarf_src || f->src_failed)
		return NULL;
	f->src_tick = ++s->tick;
	if (f->src)
		return f->src;
	/* Decided from the headers, before libdw reads (and inflates) every DWARF section. */
	cost = SYM_DWARF_FACTOR * srcline_estimate(f->dwarf_src);
	if (f->src_closed_ns &&
	    (uint64_t)(now_ns() - f->src_closed_ns) <
		    (s->opts.line_reopen_ns ? s->opts.line_reopen_ns : SYM_LINE_REOPEN_NS) &&
	    s->line_bytes + cost > s->line_budget) {
		/* Closed for another file a moment ago, and opening it again would close one:
		 * files that together outgrow the budget would take turns, each open costing
		 * milliseconds. It waits (its frames get no lines meanwhile). */
		s->line_deferred++;
		return NULL;
	}
	if (cost > s->line_budget) {
		log_debug("no source lines for a file with %llu MB of DWARF (budget %llu MB of memory)",
			  (unsigned long long)(cost / SYM_DWARF_FACTOR >> 20),
			  (unsigned long long)(s->line_budget >> 20));
		f->src_failed = 1;
		return NULL;
	}
	if (elf_fd(f->dwarf_src) < 0 ||
	    srcline_open(elf_fd(f->dwarf_src), "debug info", &f->src, &err) < 0) {
		f->src_failed = 1;
		return NULL;
	}
	cost = line_cost(f->src);
	while (s->line_bytes + cost > s->line_budget) {
		struct sym_file *lru = NULL;
		size_t i;

		for (i = 0; i < s->nfiles; i++) {
			struct sym_file *g = s->files[i];

			if (g->src && g != f &&
			    (!lru || g->src_tick < lru->src_tick))
				lru = g;
		}
		if (!lru)
			break;
		file_src_close(s, lru);
		lru->src_closed_ns = now_ns();
	}
	s->line_opens++;
	s->line_bytes += cost;
	return f->src;
}

/* The symbol holding link-time address vaddr: from the first source, then the second. */
static const struct elf_symbol *symbol_at(struct sym_file *f, uint64_t vaddr, struct elf_file **from)
{
	struct elf_file *src[2] = { f->syms, f->syms2 };
	int i;

	for (i = 0; i < 2; i++) {
		const struct elf_symbol *sym;

		if (!src[i])
			continue;
		sym = elf_symbol_lookup(src[i], vaddr);
		if (!sym) {
			/* Callers look return addresses up at addr - 1. A signal frame's return
			 * address is the first byte of the trampoline (__restore_rt), so addr - 1
			 * falls in the padding before it: a function starting right after is the
			 * one meant. */
			sym = elf_symbol_lookup(src[i], vaddr + 1);
			if (sym && sym->addr != vaddr + 1)
				sym = NULL;
		}
		if (sym) {
			*from = src[i];
			return sym;
		}
	}
	return NULL;
}

static void res_add_inl(struct symbolizer *s, struct sym_res *r, uint32_t mangled, uint32_t file,
			int line)
{
	struct sym_inl *x;
	uint32_t d = mangled ? demangled_id(s, mangled) : 0;

	ALLOC_GROW(s->inl, s->ninl + 1, s->inl_cap);
	x = &s->inl[s->ninl++];
	x->mangled = mangled;
	x->name = d ? d : mangled;
	x->file = file;
	x->line = line;
	r->ninl++;
}

/* The result for link-time address vaddr in f (cached): index into s->res + 1 (a result without
 * a name when nothing is known), 0 when it could not be stored. */
static uint32_t file_lookup(struct symbolizer *s, struct sym_file *f, uint64_t vaddr)
{
	uint64_t key = vaddr + 1, *v;
	struct sym_res r;
	int cacheable = key != 0 && key != ~0ULL;
	size_t first_inl;

	if (cacheable && (v = u64map_get(&f->addrs, key))) {
		s->cache_hits++;
		return (uint32_t)*v;
	}
	if (cacheable && s->cached_addrs >= SYM_MAX_CACHED_ADDRS)
		cache_reset(s);
	file_load(s, f);
	memset(&r, 0, sizeof(r));
	first_inl = s->ninl;
	r.inl_first = (uint32_t)first_inl;
	if (f->go && vaddr >= f->go_lo && vaddr < f->go_hi) {
		struct gopclntab_frame fr[SYM_MAX_FRAMES];
		size_t n = gopclntab_lookup(f->go, vaddr, fr, SYM_MAX_FRAMES, NULL), i;

		for (i = 0; i + 1 < n && !s->opts.no_line_info; i++)
			res_add_inl(s, &r, intern(s, fr[i].name), intern(s, fr[i].file), fr[i].line);
		if (n) {
			r.mangled = r.name = intern(s, fr[n - 1].name);
			if (!s->opts.no_line_info) {
				r.file = intern(s, fr[n - 1].file);
				r.line = fr[n - 1].line;
			}
		}
	}
	if (!r.name && f->syms) {
		struct elf_file *from = NULL;
		const struct elf_symbol *sym = symbol_at(f, vaddr, &from);
		uint64_t deferred = s->line_deferred;
		struct srcline *src = s->opts.no_line_info ? NULL : file_src(s, f);
		struct srcline_frame fr[SYM_MAX_FRAMES];
		size_t n = src ? srcline_lookup(src, vaddr, fr, SYM_MAX_FRAMES) : 0, i;

		if (sym) {
			uint32_t d;

			r.mangled = strtab_intern(s->strings, elf_symbol_name(from, sym));
			d = demangled_id(s, r.mangled);
			r.name = d ? d : r.mangled;
		} else if (n && fr[n - 1].name) {
			uint32_t d;

			r.mangled = intern(s, fr[n - 1].name);
			d = demangled_id(s, r.mangled);
			r.name = d ? d : r.mangled;
		}
		for (i = 0; r.name && i + 1 < n; i++)
			res_add_inl(s, &r, intern(s, fr[i].name), intern(s, fr[i].file), fr[i].line);
		if (r.name && n) {
			r.file = intern(s, fr[n - 1].file);
			r.line = fr[n - 1].line;
		}
		if (s->line_deferred != deferred)
			cacheable = 0; /* its lines come once the file's DWARF is open again */
	}
	if (!r.name) {
		uint64_t start;

		s->ninl = first_inl;
		r.ninl = 0;
		/* no symbol covers it: named after its function's start (its FDE), so that a
		 * function is one frame however many of its instructions are sampled */
		file_fdes(s, f);
		if (!(f->go && vaddr >= f->go_lo && vaddr < f->go_hi) &&
		    fde_index_lookup(f->fdes, vaddr, &start))
			r.start = start + 1;
	}
	ALLOC_GROW(s->res, s->nres + 1, s->res_cap);
	s->res[s->nres++] = r;
	if (cacheable) {
		u64map_put(&f->addrs, key, s->nres);
		s->cached_addrs++;
	}
	return (uint32_t)s->nres;
}

/* Read what a JIT file gained since the last read (all of it after a rewrite). */
static void jit_read(struct sym_jit *j, struct perfmap **pm, uint64_t *off, uint64_t *ino, int pid,
		     const char *path, int dump)
{
	struct stat st;
	char *buf;
	int fd = perfmap_open_for(pid, path);

	/* The process is gone (its /proc/PID/root too): its files are ours when it shared our
	 * mount namespace. */
	if (fd < 0 && j->host_ns)
		fd = perfmap_open_path(path, j->uid);

	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return;
	}
	if (!*pm || (uint64_t)st.st_ino != *ino || (uint64_t)st.st_size < *off) {
		perfmap_free(*pm);
		*pm = perfmap_new();
		*off = 0;
		*ino = (uint64_t)st.st_ino;
	}
	buf = xmalloc(1 << 16);
	while (*off < (uint64_t)st.st_size && *off < PERFMAP_MAX_FILE) {
		ssize_t n = pread(fd, buf, 1 << 16, (off_t)*off);
		int rc;

		if (n <= 0)
			break;
		rc = dump ? perfmap_feed_jitdump(*pm, buf, (size_t)n, NULL)
			  : perfmap_feed(*pm, buf, (size_t)n);
		*off += (uint64_t)n;
		if (rc < 0)
			break;
	}
	xfree(buf);
	close(fd);
}

/* Read what p's JIT files gained. */
static void jit_refresh(struct symbolizer *s, struct sym_proc *p)
{
	struct sym_jit *j = jit_get(s, p);

	j->last_read_ns = now_ns();
	jit_read(j, &j->map, &j->map_off, &j->map_ino, p->pid, j->map_path, 0);
	if (j->dump_path)
		jit_read(j, &j->dump, &j->dump_off, &j->dump_ino, p->pid, j->dump_path, 1);
}

/* The name of JIT code at addr in process p, from its perf map or jitdump, read again (at most
 * once a second) when addr is not in it yet. */
static const char *jit_lookup(struct symbolizer *s, struct sym_proc *p, uint64_t addr,
			      uint32_t *module)
{
	struct sym_jit *j = jit_get(s, p);
	const char *name;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		if (j->map && (name = perfmap_lookup(j->map, addr, NULL))) {
			*module = j->map_module;
			return name;
		}
		if (j->dump && (name = perfmap_lookup(j->dump, addr, NULL))) {
			*module = j->dump_module;
			return name;
		}
		if (pass || now_ns() - j->last_read_ns < SYM_JIT_REFRESH_NS)
			break;
		jit_refresh(s, p);
	}
	return NULL;
}

/* Debug files that arrived from debuginfod: use them for their files. */
static size_t take_remote(struct symbolizer *s)
{
	struct debugfetch_result res[16];
	size_t n, i, got = 0;

	if (!s->fetch)
		return 0;
	while ((n = debugfetch_poll(s->fetch, res, 16)) > 0) {
		for (i = 0; i < n; i++) {
			uint64_t key = nonzero_key(hash_bytes(res[i].build_id, strlen(res[i].build_id), 0xb1d));
			uint64_t *v = u64map_get(&s->files_by_build, key);
			struct sym_file *f = v ? (struct sym_file *)(uintptr_t)*v : NULL;
			struct elf_file *d = NULL;
			size_t blen;
			const uint8_t *fb, *db;

			if (res[i].error || !res[i].path || !f || !f->elf) {
				if (res[i].error && res[i].error != -ENOENT)
					log_debug("debuginfod: %s: %s", res[i].build_id,
						  strerror(-res[i].error));
				xfree(res[i].path);
				continue;
			}
			if (elf_open(res[i].path, &d, NULL) == 0) {
				size_t dlen;

				fb = elf_build_id_raw(f->elf, &blen);
				db = elf_build_id_raw(d, &dlen);
				if (!fb || !db || blen != dlen || memcmp(fb, db, blen)) {
					elf_close(d);
					d = NULL;
				}
			}
			if (d)
				f->remote_path = strtab_intern(s->strings, res[i].path);
			xfree(res[i].path);
			if (!d)
				continue;
			if (!f->loaded) {
				/* dropped since it asked: file_prepare() opens it when it loads again */
				elf_close(d);
				f->remote = 2;
				continue;
			}
			file_src_close(s, f);
			f->src_failed = 0;
			elf_close(f->debug);
			f->debug = d;
			f->remote = 2;
			file_choose_sources(s, f);
			file_settle_fds(s, f);
			file_account(s, f);
			files_trim(s, f);
			got++;
		}
	}
	/* Names and lines change for those files: look every address up afresh. */
	if (got)
		cache_reset(s);
	return got;
}

size_t symbolizer_debuginfo_request(struct symbolizer *s)
{
	size_t i, n = 0;

	if (!s->fetch)
		return 0;
	for (i = 0; i < s->nfiles; i++) {
		struct sym_file *f = s->files[i];

		if (f->prepared || !f->elf || f->reopen_failed)
			continue;
		f->last_use = now_ns();
		file_load(s, f);
		n += f->loaded;
	}
	return n;
}

size_t symbolizer_debuginfo_pending(struct symbolizer *s)
{
	return s->fetch ? debugfetch_pending(s->fetch) : 0;
}

size_t symbolizer_debuginfo_poll(struct symbolizer *s, int timeout_ms)
{
	if (!s->fetch)
		return 0;
	if (timeout_ms > 0 && debugfetch_pending(s->fetch))
		debugfetch_wait(s->fetch, timeout_ms);
	return take_remote(s);
}

const char *symbolizer_debuginfod_urls(const struct symbolizer *s)
{
	return s->fetch ? debugfetch_urls(s->fetch) : NULL;
}

int symbolizer_user(struct symbolizer *s, int pid, uint64_t addr, struct sym_result *out)
{
	return symbolizer_user_gen(s, pid, 0, addr, out);
}

int symbolizer_user_gen(struct symbolizer *s, int pid, uint32_t gen, uint64_t addr,
			struct sym_result *out)
{
	struct sym_proc *p = proc_get(s, pid);
	const struct sym_map *m = NULL;
	const struct sym_res *r;
	uint32_t idx;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -ENOENT;
	s->lookups++;
	take_remote(s);
	if (gen && p && p->gen && gen != p->gen) {
		/* an image the process has left: its own mappings, or none (never the later
		 * image's, which may put another file at the same address) */
		if (gen != p->prev_gen)
			return -ENOENT;
		m = maps_find(p->prev, p->nprev, addr);
		if (!m || m->anon)
			return -ENOENT;
		goto found;
	}
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
	if (m->anon) {
		uint32_t module = 0;
		const char *name = jit_lookup(s, p, addr, &module);

		if (!name)
			return -ENOENT; /* JIT code nobody named: an unknown frame */
		out->name = out->mangled = strtab_get(s->strings, strtab_intern(s->strings, name));
		out->module = strtab_get(s->strings, module);
		out->map_start = m->start;
		out->map_limit = m->end;
		out->module_offset = addr - m->start;
		return 0;
	}
found:
	out->module = strtab_get(s->strings, m->module);
	out->main_exe = m->main_exe;
	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	out->module_offset = addr - m->start + m->offset;
	if (!m->file)
		return 0;
	m->file->last_use = now_ns();
	if (m->file->build_id)
		out->build_id = strtab_get(s->strings, m->file->build_id);
	idx = file_lookup(s, m->file, addr - m->bias);
	if (!idx)
		return 0;
	r = &s->res[idx - 1];
	if (!r->name) {
		const char *base = strrchr(out->module, '/');
		char buf[320];

		if (!r->start)
			return 0;
		/* "liblzma.so.5+0x1a2b0": the file and the link-time address of the function's
		 * start, as nm, objdump and addr2line give it */
		snprintf(buf, sizeof(buf), "%.255s+0x%" PRIx64, base ? base + 1 : out->module,
			 r->start - 1);
		out->name = out->mangled = strtab_get(s->strings, strtab_intern(s->strings, buf));
		out->func_start = r->start - 1;
		return 0;
	}
	out->name = strtab_get(s->strings, r->name);
	out->mangled = strtab_get(s->strings, r->mangled);
	out->source_file = r->file ? strtab_get(s->strings, r->file) : NULL;
	out->line = r->line;
	for (i = 0; i < r->ninl && i < SYM_MAX_FRAMES; i++) {
		const struct sym_inl *x = &s->inl[r->inl_first + i];

		s->out_inl[i].name = x->name ? strtab_get(s->strings, x->name) : NULL;
		s->out_inl[i].mangled = x->mangled ? strtab_get(s->strings, x->mangled) : NULL;
		s->out_inl[i].source_file = x->file ? strtab_get(s->strings, x->file) : NULL;
		s->out_inl[i].line = x->line;
	}
	out->inlined = i ? s->out_inl : NULL;
	out->ninlined = i;
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
	size_t i = 0;
	uint64_t k, v;

	memset(st, 0, sizeof(*st));
	st->pids = s->procs.count;
	st->files = s->nfiles;
	for (i = 0; i < s->nfiles; i++) {
		const struct sym_file *f = s->files[i];
		size_t n = 0;

		if (f->syms)
			elf_symbols(f->syms, &n);
		st->symbols += n;
		st->go_files += f->go != NULL;
		st->mini_files += f->mini && f->syms == f->mini;
		st->debug_files += f->debug != NULL;
		st->remote_files += f->remote == 2 && f->debug;
		st->line_files += f->src != NULL;
	}
	st->line_bytes = s->line_bytes;
	st->line_opens = s->line_opens;
	st->line_deferred = s->line_deferred;
	st->files_pending = s->pending;
	st->files_loaded = s->files_loaded;
	st->symbol_bytes = s->symbol_bytes;
	st->drops = s->drops;
	st->reopens = s->reopens;
	st->reopen_failures = s->reopen_failures;
	st->parked = s->parked;
	st->strings = strtab_count(s->strings);
	st->string_bytes = strtab_bytes(s->strings);
	st->cached_addrs = s->cached_addrs + s->kernel_addrs.count;
	st->lookups = s->lookups;
	st->cache_hits = s->cache_hits;
	i = 0;
	while (u64map_next(&s->procs, &i, &k, &v)) {
		const struct sym_proc *p = (const struct sym_proc *)(uintptr_t)v;

		if (p->jit && p->jit->map)
			st->jit_entries += perfmap_count(p->jit->map);
		if (p->jit && p->jit->dump)
			st->jit_entries += perfmap_count(p->jit->dump);
	}
}
