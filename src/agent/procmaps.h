/* procmaps.h: /proc/PID/maps, parsed and bounded, and opening the file behind a mapping.
 *
 * Each line is "start-end perms offset major:minor inode [path]". The path may contain spaces;
 * a " (deleted)" suffix is removed and flagged; "[vdso]", "[heap]", "[stack]" and other
 * bracketed names are kinds of their own; no path means anonymous memory. Malformed lines are
 * skipped (and counted), never fatal: the text comes from the kernel, but also from fuzzers and
 * from tests.
 *
 * Ownership: struct procmaps owns its entries and their path strings; procmaps_release() frees
 * them. Entry pointers and paths stay valid until then. */
#ifndef SCORCH_AGENT_PROCMAPS_H
#define SCORCH_AGENT_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;
struct elf_mapping;

#define PROCMAPS_MAX_BYTES (64u << 20) /* of maps text read from /proc */
#define PROCMAPS_MAX_ENTRIES (1u << 20)

enum procmaps_perm {
	PROCMAPS_R = 1,
	PROCMAPS_W = 2,
	PROCMAPS_X = 4,
	PROCMAPS_SHARED = 8, /* 's' (else 'p', private) */
};

enum procmaps_kind {
	PROCMAPS_ANON = 0,  /* no path */
	PROCMAPS_FILE,      /* a path (possibly deleted, a memfd, ...) */
	PROCMAPS_VDSO,      /* [vdso] */
	PROCMAPS_HEAP,      /* [heap] */
	PROCMAPS_STACK,     /* [stack] */
	PROCMAPS_SPECIAL,   /* another [name]: [vvar], [vsyscall], [anon:...] */
};

struct procmaps_entry {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint8_t perms;       /* enum procmaps_perm bits */
	uint8_t kind;        /* enum procmaps_kind */
	uint8_t deleted;     /* the path ended in " (deleted)" */
	const char *path;    /* "" for anonymous; owned by the struct procmaps */
};

struct procmaps {
	struct procmaps_entry *v;
	size_t n;
	size_t bad_lines; /* malformed lines skipped */
	char *pool;       /* path strings */
};

/* Parse maps text (need not be NUL-terminated). Entries keep the order of the text (the
 * kernel's is sorted by address). Returns 0 (malformed lines are skipped), or -E2BIG past
 * PROCMAPS_MAX_ENTRIES / -ENOMEM. out is initialized by the call; release it in every case. */
int procmaps_parse(const char *text, size_t len, struct procmaps *out, struct errmsg *err);
/* Read and parse /proc/PID/maps (pid 0: this process). -ESRCH when the process is gone. */
int procmaps_read(int pid, struct procmaps *out, struct errmsg *err);
/* The executable mappings of /proc/PID/maps only, as procmaps_read() then
 * procmaps_keep(PROCMAPS_X) would give them, asked of the kernel mapping by mapping
 * (PROCMAP_QUERY, Linux 6.11+): no text for the others (a JVM has hundreds of data mappings)
 * and no parsing. Falls back to the text on older kernels. [vsyscall] is left out (the kernel's
 * page, not a mapping of the process: the query does not see it, the fallback drops it).
 * -ESRCH when the process is gone. */
int procmaps_read_exec(int pid, struct procmaps *out, struct errmsg *err);
/* 1 while procmaps_read_exec() asks the kernel, 0 once it found the query unsupported. */
int procmaps_query_supported(void);
/* Tests: 0 makes procmaps_read_exec() read the text as on an older kernel, 1 asks again. */
void procmaps_query_use(int on);
void procmaps_release(struct procmaps *m); /* fine on a zeroed or released struct */
/* Keep only the entries that have every permission bit of perms (e.g. PROCMAPS_X), in place
 * and in order; the paths stay valid. */
void procmaps_keep(struct procmaps *m, unsigned perms);

/* The entry holding addr (binary search; entries must be sorted, as the kernel writes them),
 * or NULL. */
const struct procmaps_entry *procmaps_find(const struct procmaps *m, uint64_t addr);

/* Whether b maps the same file (device and inode) as a, the entry before it in address order:
 * then b is most likely the next segment of the same load (see elf_mapping_bias()). */
int procmaps_same_file(const struct procmaps_entry *a, const struct procmaps_entry *b);
/* Entry e as an elf_mapping (its protection as PF_R | PF_W | PF_X). */
void procmaps_elf_mapping(const struct procmaps_entry *e, struct elf_mapping *out);

/* Open the file behind a file-backed mapping, read-only, and return the descriptor (the caller
 * closes it) or a negative errno. Tries /proc/PID/map_files/START-END (works for deleted files
 * and other mount namespaces), then /proc/PID/root/PATH, then PATH itself; a file reached by
 * path must have the mapping's inode (-ESTALE if it was replaced). When the process is gone,
 * only PATH in our own root is tried, and it must have the mapping's device and inode too (its
 * maps were read before it exited, or learnt from mapevents.h). pid 0 means this process. */
int procmaps_open(int pid, const struct procmaps_entry *e, struct errmsg *err);

/* stat(2) of the file behind a file-backed mapping without opening it, when its path (as this
 * process sees it) leads to the mapped inode: the same regular file, device and inode as the
 * mapping says. 0, or -1 (another mount namespace, a replaced or deleted file, a filesystem
 * whose st_dev is not the mapping's device): then open it with procmaps_open(). A mapped
 * inode cannot be reused while it is mapped, so a match is the mapped file. */
struct stat;
int procmaps_stat(const struct procmaps_entry *e, struct stat *st);

#endif
