/* elf.h: a bounds-checked reader for ELF64 little-endian (x86-64) files.
 *
 * The agent opens every binary on the machine, so every file is treated as hostile: it may be
 * truncated (even while we read it), lie about its sizes and offsets, or be huge. This reader
 * never maps the file; it preads only what is asked for (headers, section headers, string and
 * symbol tables, notes, requested sections), checks every offset and size against the file
 * size, and caps every allocation (ELF_MAX_SECTION_BYTES per section).
 *
 * Ownership: elf_open*() return a struct elf_file that the caller releases with elf_close().
 * Every pointer returned by the accessors (build id, debuglink, section data, symbols, names)
 * is owned by the elf_file and valid until elf_close(). Not thread-safe: one elf_file must not
 * be used from two threads at once.
 *
 * Symbols: elf_symbols_load() merges .symtab and .dynsym (functions and data objects with a
 * value), sorts them by address, drops duplicates and gives zero-sized symbols the distance to
 * the next symbol as size (bounded by their section). elf_symbol_lookup() then finds the symbol
 * containing a link-time address. For a file without .symtab, see elf_open_debug_file().
 *
 * Addresses: symbol values and section/segment vaddrs are link-time addresses. For a mapping
 * from /proc/PID/maps (start, file offset), the load bias is
 *     bias = start - elf_vaddr_of_offset(offset)   (0 for non-PIE executables)
 * and a process address addr corresponds to the link-time address addr - bias. */
#ifndef SCORCH_AGENT_ELF_H
#define SCORCH_AGENT_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct errmsg;
struct elf_file;

/* Caps against lying or gigantic files. */
#define ELF_MAX_SECTION_BYTES (512u << 20) /* one section read into memory */
#define ELF_MAX_SECTIONS 65535u
#define ELF_MAX_SEGMENTS 4096u
#define ELF_MAX_SYMBOLS (16u << 20)       /* kept symbols per file */
#define ELF_MAX_NOTE_BYTES (64u << 10)
#define ELF_MAX_DEBUG_FILE (8ull << 30)  /* a debug file candidate (read whole for its CRC) */

/* Open a file. Reads the ELF header, program headers and section headers; fails with -ENOEXEC
 * (and a message in err) when the file is not a well-formed ELF64 little-endian file. */
int elf_open(const char *path, struct elf_file **out, struct errmsg *err);
/* Same on an open descriptor, which the elf_file takes over (closed by elf_close(), or at once
 * on failure). name is used in messages (may be NULL). */
int elf_open_fd(int fd, const char *name, struct elf_file **out, struct errmsg *err);
/* Same on a memory image, which is copied (for fuzzing, tests and the vDSO). len is capped at
 * 1 GiB. */
int elf_open_mem(const void *data, size_t len, struct elf_file **out, struct errmsg *err);
void elf_close(struct elf_file *e); /* NULL ok */
/* Close the descriptor (or free the memory image) but keep what was already read: headers,
 * build id, debuglink, cached sections and loaded symbols. Later reads fail with -EIO. For
 * caches that hold many files and must not hold their descriptors. */
void elf_detach_file(struct elf_file *e);

/* The descriptor of an open file (owned by e), or -1 for memory images and detached files. */
int elf_fd(const struct elf_file *e);
uint16_t elf_type(const struct elf_file *e);    /* ET_EXEC, ET_DYN, ... */
uint16_t elf_machine(const struct elf_file *e); /* EM_X86_64, ... */
uint64_t elf_entry(const struct elf_file *e);
/* Size of the file (or memory image) in bytes. */
uint64_t elf_size(const struct elf_file *e);

/* The GNU build id (NT_GNU_BUILD_ID) as lowercase hex, or NULL. elf_build_id_raw gives the
 * bytes and their count. */
const char *elf_build_id(const struct elf_file *e);
const uint8_t *elf_build_id_raw(const struct elf_file *e, size_t *len);
/* The file name in .gnu_debuglink and its CRC32, or NULL. */
const char *elf_debuglink(const struct elf_file *e, uint32_t *crc);

struct elf_section_info {
	uint64_t addr;   /* sh_addr (link-time vaddr, 0 if not allocated) */
	uint64_t offset; /* sh_offset */
	uint64_t size;   /* sh_size (compressed size if SHF_COMPRESSED) */
	uint64_t flags;  /* sh_flags */
	uint32_t type;   /* sh_type */
};
/* Look a section header up by name without reading the contents: 0 or -ENOENT. */
int elf_section_info(const struct elf_file *e, const char *name, struct elf_section_info *out);
/* Section contents, read into memory owned by e (cached; decompressed if SHF_COMPRESSED with
 * zlib or zstd, up to ELF_MAX_SECTION_BYTES). -ENOENT when absent or SHT_NOBITS, -EIO when the
 * file is truncated, -E2BIG past the cap. vaddr (may be NULL) receives sh_addr. */
int elf_section(struct elf_file *e, const char *name, const void **data, size_t *size,
		uint64_t *vaddr);
/* Sections by index, for tools that visit every section header: index 0 is the null section.
 * elf_section_count() is 0 for a file without (readable) section headers. elf_section_info_at()
 * fills out and *name (owned by e; "" when the name is out of range): 0 or -ENOENT past the
 * count. elf_section_at() reads the contents like elf_section() (same errors and cache). */
size_t elf_section_count(const struct elf_file *e);
int elf_section_info_at(const struct elf_file *e, size_t i, const char **name,
			struct elf_section_info *out);
int elf_section_at(struct elf_file *e, size_t i, const void **data, size_t *size);
/* Read len bytes at file offset off into buf: 0, or -EIO if they are not all in the file. */
int elf_read(struct elf_file *e, uint64_t off, void *buf, size_t len);

/* Loadable segments (PT_LOAD) in file order. */
struct elf_segment {
	uint64_t vaddr, memsz;
	uint64_t offset, filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};
const struct elf_segment *elf_segments(const struct elf_file *e, size_t *count);
/* The link-time vaddr of file offset off, via the PT_LOAD whose file range holds it (or, for an
 * offset at a segment's page-aligned start, the segment starting in that page). 0 or -ENOENT.
 * Ambiguous when two segments share a page (LLD, mold): to place a mapping, use
 * elf_mapping_bias(). */
int elf_vaddr_of_offset(const struct elf_file *e, uint64_t off, uint64_t *vaddr);
/* The file offset of link-time address vaddr (inside some PT_LOAD's file bytes): 0 or -ENOENT. */
int elf_offset_of_vaddr(const struct elf_file *e, uint64_t vaddr, uint64_t *off);

/* A mapping of a file as /proc/PID/maps shows it: [start, end), the file offset of start and
 * its protection as PF_R | PF_W | PF_X (ELF_MAP_ANY_PROT when unknown). */
struct elf_mapping {
	uint64_t start, end, offset;
	uint32_t prot;
};
#define ELF_MAP_ANY_PROT 0x80000000u
#define ELF_PAGE_SIZE 4096u

/* The load bias of a mapping: the process address of link-time address v is v + bias, and a
 * pc in the mapping is link-time address pc - bias. The one place that turns mappings into
 * link-time addresses (symbolizer, unwinder, runtimes).
 *
 * The loaders (the kernel, ld.so) map each PT_LOAD from the page below p_offset to the page
 * above p_offset + p_filesz, at the page below p_vaddr + bias, segments in vaddr order. A
 * mapping therefore belongs to a segment whose page-rounded file range holds its offset. When
 * several segments share a page (LLD, mold and -z noseparate-code place the code right after
 * the read-only data, one page higher in memory: offset and vaddr agree only modulo the page;
 * a linker script may put several executable segments in one file page), the candidates are
 * ranked by:
 *   1. agreement with `hint` (may be NULL): the bias of the load the mapping is believed to
 *      belong to, i.e. of the mapping of the same file right before it (a load maps its
 *      segments in order, at one bias): this tells apart two executable segments that start
 *      in one file page;
 *   2. the mapping's protection (executable or not, then writable or not);
 *   3. a segment whose mapping starts at this offset (a mapping split by mprotect starts
 *      inside its segment);
 *   4. a segment whose range holds the whole mapping.
 *
 * elf_segments_bias() works on a copy of the segment table (callers that keep segments after
 * closing the file); elf_mapping_bias() on an open file. Both return 0, or -ENOENT when no
 * segment can hold the mapping (then the file is not what was mapped, or the mapping is not
 * one of its segments). */
int elf_segments_bias(const struct elf_segment *segs, size_t nsegs, const struct elf_mapping *m,
		      const uint64_t *hint, uint64_t *bias);
int elf_mapping_bias(const struct elf_file *e, const struct elf_mapping *m, const uint64_t *hint,
		     uint64_t *bias);
/* Load bias for a mapping at map_start with file offset map_offset whose protection and size
 * are unknown: elf_mapping_bias() with ELF_MAP_ANY_PROT, falling back to map_start - map_offset
 * (the usual case for files whose first PT_LOAD has vaddr == offset). */
uint64_t elf_load_bias(const struct elf_file *e, uint64_t map_start, uint64_t map_offset);

/* --- symbols */
struct elf_symbol {
	uint64_t addr;     /* link-time value */
	uint64_t size;     /* st_size, or inferred for zero-sized symbols */
	uint32_t name;     /* where its name is (in the file or in memory); use elf_symbol_name() */
	uint8_t type;      /* STT_FUNC, STT_OBJECT, STT_GNU_IFUNC, STT_NOTYPE(in text) */
	uint8_t bind;      /* STB_LOCAL, STB_GLOBAL, STB_WEAK */
	uint8_t inferred;  /* 1 if the size was inferred */
	uint8_t table;     /* which symbol table its name is in, while names are in the file */
};
/* Read .symtab and .dynsym once (later calls return the cached result). Returns 0 (even when
 * the file has no symbols), or a negative errno on a read failure / allocation failure.
 * Names stay in the file, read by elf_symbol_name() when asked for, while the file is open;
 * elf_detach_file() (or elf_symbols_hold_names()) first copies the kept names into memory. */
int elf_symbols_load(struct elf_file *e, struct errmsg *err);
/* Bytes held by the loaded symbols (the array and their names); 0 before elf_symbols_load(). */
size_t elf_symbols_bytes(const struct elf_file *e);
/* Free the loaded symbols (pointers from elf_symbols()/elf_symbol_name() become invalid). A
 * later elf_symbols_load() reads them again, which fails on a detached file. */
void elf_symbols_release(struct elf_file *e);
/* 1 if the file has a .symtab section (not just .dynsym). */
int elf_has_symtab(const struct elf_file *e);
/* The sorted symbol array (after elf_symbols_load; else count 0). */
const struct elf_symbol *elf_symbols(const struct elf_file *e, size_t *count);
/* The name of a loaded symbol: in memory, or read from the file into a buffer of e that the
 * next call reuses (copy it to keep it). "" when it cannot be read (file truncated since). */
const char *elf_symbol_name(struct elf_file *e, const struct elf_symbol *s);
/* Copy the names of the loaded symbols into memory (one pool of their exact size): 0 or a
 * negative errno (the names then read as ""). */
int elf_symbols_hold_names(struct elf_file *e);
/* The symbol whose [addr, addr+size) holds link-time address addr, or NULL. Loads the symbols
 * if needed. When ranges nest (aliases, local labels in a function), the innermost wins. */
const struct elf_symbol *elf_symbol_lookup(struct elf_file *e, uint64_t addr);
/* Find a symbol by exact name (first match in .symtab, then .dynsym, including undefined-size
 * ones): 0 or -ENOENT. */
int elf_find_symbol(struct elf_file *e, const char *name, uint64_t *value, uint64_t *size);

/* --- file identity and debug files */

/* A 64-bit identity for a file without a build id: a hash of its size and its first and last
 * 4 KiB. Stable across copies of the same file. 0 or -EIO. */
int elf_file_id(struct elf_file *e, uint64_t *id);
/* CRC32 (the .gnu_debuglink polynomial, as zlib's crc32) of a whole file: 0, -E2BIG past
 * ELF_MAX_DEBUG_FILE bytes, or another negative errno. */
int elf_crc32_file(int fd, uint32_t *crc);

/* Find and open the separate debug file of e, whose own path is path (used for debuglink
 * lookups; may be NULL), under root (a prefix such as "/proc/PID/root", or NULL for "/"):
 *   <root>/usr/lib/debug/.build-id/xx/yyyy.debug            (by build id)
 *   <dir>/<debuglink>, <dir>/.debug/<debuglink>, <root>/usr/lib/debug/<dir>/<debuglink>
 * where a debuglink candidate must match the CRC32 (and the build id when both have one).
 * debug_dir overrides /usr/lib/debug (for tests; NULL for the default). Returns 0 and a new
 * elf_file, or -ENOENT. */
int elf_open_debug_file(const struct elf_file *e, const char *path, const char *root,
			const char *debug_dir, struct elf_file **out);

#endif
