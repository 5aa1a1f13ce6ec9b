/* symbolizer.h: host-side symbolization of native user-space and kernel addresses.
 *
 * User space: symbolizer_track_pid() snapshots /proc/PID/maps and opens every file-backed
 * executable mapping right away, so that a process's frames still resolve after it exits.
 * Each file is opened ONCE however many processes map it (keyed by build id, else device +
 * inode + size + mtime); what names it is loaded lazily, when an address in it is first
 * symbolized (a process that exits before any of its samples is symbolized costs no symbol
 * loading). Names come from the first of these that has a symbol table
 * (docs/symbolization.md):
 *   1. the file's .symtab (with .dynsym);
 *   2. its MiniDebugInfo (.gnu_debugdata, minidebug.h), with the file's .dynsym;
 *   3. its separate debug file (/usr/lib/debug/.build-id/..., .gnu_debuglink; elf.h);
 *   4. a debuginfod server (debugfetch.h), in the background, asked when the file is loaded
 *      (symbolizer_debuginfo_request() asks for every file seen, for one-shot recordings):
 *      until the debug file arrives the frames get what 1-3 give, and later lookups (later
 *      profiles) the better names.
 * Go binaries are read through their .gopclntab (gopclntab.h): names, files, lines and
 * inlined calls even when stripped. Source lines and inlined calls of other native code come
 * from DWARF (srcline.h) of the file or its debug file, loaded lazily, within a memory budget.
 * Anonymous executable memory (JIT code) is named from the process's perf map
 * (/tmp/perf-PID.map) or jitdump file (perfmap.h), read again when an address misses.
 * Results are cached per (file, address), since the same addresses recur in every sample. The
 * [vdso] is read from our own vDSO (same kernel for every process).
 * Kernel: /proc/kallsyms, loaded on first use (see kallsyms.h).
 *
 * Memory: loaded names are bounded (options.max_symbol_bytes, least recently used files
 * dropped and read again when needed), DWARF held for lines too (options.line_budget), so are
 * the cached results (dropped and refilled past 128k addresses). The symbolizer owns
 * everything it returns; strings in struct sym_result stay valid
 * until symbolizer_free(), even after symbolizer_forget_pid(); the inlined[] array until the
 * next lookup. Not thread-safe (the debuginfod worker is internal).
 *
 * Reads of /proc never block on a dying process: a process that exits between two reads just
 * leaves fewer mappings. */
#ifndef SCORCH_AGENT_SYMBOLIZER_H
#define SCORCH_AGENT_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

/* A function inlined at an address (strings owned by the symbolizer). */
struct sym_frame {
	const char *name;         /* demangled, or NULL when unknown */
	const char *mangled;      /* as the debug info has it, or NULL */
	const char *source_file;  /* or NULL */
	int line;                 /* 0 when unknown */
};

struct sym_result {           /* strings owned by the symbolizer, valid until symbolizer_free */
	const char *name;         /* demangled function name; without a symbol, the file's name
				     and its function's start from the CFI ("libz.so.1+0x3a40",
				     func_start set); NULL if unknown */
	const char *mangled;      /* raw symbol name, or NULL */
	const char *module;       /* path of the mapped file, "[vdso]", the perf map of JIT code,
				     NULL if no mapping */
	const char *build_id;     /* hex or NULL */
	int main_exe;             /* module is the process's executable (not a library) */
	uint64_t map_start, map_limit, map_offset; /* the mapping that holds the address */
	uint64_t module_offset;   /* file offset of addr, for "module+0xOFF" */
	uint64_t func_start;      /* name made of the start of the FDE holding addr: that
				     start (link-time address), else 0 */
	const char *source_file;  /* of the function's own code at addr (DWARF, .gopclntab) */
	int line;                 /* 0 when unknown */
	/* Functions inlined at addr, innermost first; the last one was inlined into `name`
	 * (at source_file:line). Valid until the next symbolizer call. */
	const struct sym_frame *inlined;
	size_t ninlined;
};

/* Re-read pid's maps now through whoever owns them (the session's process registry), which
 * calls symbolizer_set_maps() when they changed. Returns 1 when read, 0 when not. */
typedef int (*symbolizer_refresh_fn)(void *ctx, int pid);

struct symbolizer_options {
	const char *debug_dir;    /* instead of /usr/lib/debug (tests); NULL for the default */
	symbolizer_refresh_fn refresh; /* NULL: the symbolizer reads /proc/PID/maps itself */
	void *refresh_ctx;
	int no_debug_files;       /* 1: never look for separate debug files */
	int no_line_info;         /* 1: no source lines or inlined frames (DWARF, .gopclntab) */
	size_t line_budget;       /* memory for DWARF held open, estimated as SYM_DWARF_FACTOR
				     times its size (least recently used files are closed beyond
				     it; a file alone above it gets no lines); 0: SYM_LINE_BUDGET */
	uint64_t line_reopen_ns;  /* SYM_LINE_REOPEN_NS when 0 (tests shorten it) */
	size_t max_files;         /* files cached before unused ones are dropped; 0: 4096 */
	size_t max_pending_files; /* files opened, names not loaded, holding a descriptor; past
				   * it the oldest lets it go (opened again by path); 0: 256 */
	size_t max_symbol_bytes;  /* loaded names (symbols of every source, Go's index; not the
				   * DWARF of line_budget): past it files idle for a minute are
				   * dropped (least recently used first), past twice as much any;
				   * 0: 16 MiB */
	const char *debuginfod_urls; /* debuginfod servers besides DEBUGINFOD_URLS (NULL: none) */
	int no_debuginfod;        /* 1: never ask debuginfod, whatever DEBUGINFOD_URLS says */
};

#define SYM_LINE_BUDGET (16u << 20)
/* Memory libdw holds per byte of DWARF once every unit of a file was looked up (measured:
 * bench/sym_cost.c, docs/benchmarks.md). */
#define SYM_DWARF_FACTOR 4
/* A file whose DWARF the line budget closed is not opened again within this time if that would
 * close another: files that together outgrow the budget do not take turns every interval. */
#define SYM_LINE_REOPEN_NS (60ull * 1000000000ull)

/* A symbolizer with default options (line info on, debuginfod when DEBUGINFOD_URLS is set). */
struct symbolizer *symbolizer_new(void);
/* Same with options (opts may be NULL; it is copied, strings too). */
struct symbolizer *symbolizer_new_opts(const struct symbolizer_options *opts);
void symbolizer_free(struct symbolizer *s); /* NULL ok */

/* Snapshot /proc/PID/maps now and open/cache every file-backed executable mapping, so that
 * frames can still be resolved after the process exits. Cheap if already tracked and the maps
 * did not change; call again to refresh (e.g. after dlopen). Returns 0, or -ESRCH when the
 * process is gone (nothing tracked), or another negative errno. */
int symbolizer_track_pid(struct symbolizer *s, int pid);
/* The same from maps read by the caller (procmaps.h; non-executable entries are skipped), while
 * the process lives (its files are opened through /proc/PID/map_files). 0 or negative errno. */
struct procmaps;
int symbolizer_set_maps(struct symbolizer *s, int pid, const struct procmaps *maps);
/* The same, saying which image of the process the maps are (the registry's generation, 1, 2,
 * ...; 0: unknown): when it is a new one, the mappings of the image before are kept for
 * symbolizer_user_gen() (one image back). */
int symbolizer_set_maps_gen(struct symbolizer *s, int pid, const struct procmaps *maps,
			    uint32_t gen);
/* Drop the mappings of pid (the files stay cached for other processes and past results). */
void symbolizer_forget_pid(struct symbolizer *s, int pid);

/* Symbolize addr in process pid. An untracked pid is tracked first; an address outside every
 * known mapping triggers one refresh of the maps (at most once per second per pid; through
 * options.refresh when set). Returns 0
 * with out filled (out->name may still be NULL when the mapping is known but no symbol covers
 * addr), or -ENOENT when no mapping holds addr (out->module NULL). */
int symbolizer_user(struct symbolizer *s, int pid, uint64_t addr, struct sym_result *out);
/* The same for an address of image gen of the process (0: the current one): an image before
 * the current is named from its own mappings when they are kept, else not at all (-ENOENT),
 * never from the later image's. */
int symbolizer_user_gen(struct symbolizer *s, int pid, uint32_t gen, uint64_t addr,
			struct sym_result *out);
/* Symbolize a kernel address via /proc/kallsyms: 0, or -ENOENT (unknown / kallsyms hidden). */
int symbolizer_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *out);

/* Load every file seen whose names are not loaded yet, so that the debug files they lack are
 * asked of debuginfod now (for one-shot recordings, before waiting for them; lookups do it
 * file by file). Nothing without debuginfod. Returns how many files were loaded. */
size_t symbolizer_debuginfo_request(struct symbolizer *s);
/* Debug files still downloading from debuginfod (0 without debuginfod). */
size_t symbolizer_debuginfo_pending(struct symbolizer *s);
/* Take in the debug files downloaded since the last call (every lookup does it too): the
 * files they belong to are looked up afresh from then on. Waits up to timeout_ms for one to
 * arrive when some are pending (0: do not wait). Returns how many arrived. */
size_t symbolizer_debuginfo_poll(struct symbolizer *s, int timeout_ms);
/* The debuginfod servers asked, or NULL when debuginfod is off. */
const char *symbolizer_debuginfod_urls(const struct symbolizer *s);

/* Why kernel symbols are unavailable (e.g. kptr_restrict), or NULL when they are fine or not
 * loaded yet. */
const char *symbolizer_kernel_problem(struct symbolizer *s);

struct symbolizer_stats {
	size_t pids;        /* tracked processes */
	size_t files;       /* cached files (incl. those that failed to open) */
	size_t files_pending; /* of those, opened but names not loaded yet (a descriptor each) */
	uint64_t files_loaded; /* files whose names were loaded since start */
	size_t symbol_bytes;   /* held by loaded names (<= 2 x options.max_symbol_bytes) */
	uint64_t drops;        /* files whose names were dropped for room */
	uint64_t reopens, reopen_failures; /* ... and opened again when needed (or not) */
	uint64_t parked;       /* files that waited for their names without a descriptor (past
				* max_pending_files waiting), opened again like dropped ones */
	size_t strings, string_bytes; /* names and paths handed out (kept until symbolizer_free) */
	size_t symbols;     /* symbols held */
	size_t cached_addrs;
	uint64_t lookups, cache_hits;
	size_t go_files;    /* files named through .gopclntab */
	size_t mini_files;  /* files named through MiniDebugInfo */
	size_t debug_files; /* separate debug files in use (local or debuginfod) */
	size_t remote_files; /* ... of which from debuginfod */
	size_t line_files;  /* files whose DWARF is open for lines */
	uint64_t line_bytes; /* their estimated memory (SYM_DWARF_FACTOR x srcline_cost()) */
	uint64_t line_opens;    /* DWARF opened for lines (again after the budget closed it) */
	uint64_t line_deferred; /* lookups without lines: reopening would close another file
				 * within SYM_LINE_REOPEN_NS of its own close */
	size_t jit_entries; /* perf map / jitdump entries held */
};
void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *st);

#endif
