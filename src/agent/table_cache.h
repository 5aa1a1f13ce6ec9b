/* table_cache.h: unwind tables kept per file identity, so that a binary run a thousand times a
 * day has its table built once: in memory for the life of the process, and optionally on disk
 * for the next ones.
 *
 * A record is what unwinder.c needs to publish a file without opening it again: the outcome of
 * the build (entries, the frame-pointer rule, or no table) and the entries in a compact form,
 * 2-3 bytes each instead of 8 (below). Keys are the unwinder's file identity ("b:<build id>" or
 * "h:<content hash>") plus whatever changed the build (the caller appends it: e.g. "+rt" when
 * interpreter ranges were flagged).
 *
 * Memory: records are held up to opts.max_bytes, least recently used dropped first. Disk
 * (opts.dir, created 0700 when missing; refused when another user owns it or others may write
 * to it): one file per record, written to a temporary file, fsync()ed and renamed into place
 * (then the directory is fsync()ed), so a crash leaves the old record or the new one, never a
 * torn one. Files are read back only when their header and payload checksums, versions and key
 * all match and the entries decode to a valid table; any other file is deleted and counted
 * (bad_files), and the table is rebuilt. The directory is kept under opts.max_disk_bytes by
 * deleting the least recently used records (a disk hit refreshes the file's mtime).
 *
 * COMPACT ENTRIES (the payload, in memory and on disk):
 *   nrules x u32      the distinct rules, most used first: off | kind << 16 | (u8)rbp << 24
 *   count x {uleb128 pc delta, uleb128 rule index}
 *                     pc deltas from the previous entry (the first from 0); entries are
 *                     strictly increasing, the last one is UNW_INVALID
 *
 * DISK FILE <dir>/<key with ':' as '-'>.tbl, little endian:
 *   offset size field
 *   0      8    magic "SCORCHUT"
 *   8      4    TABLE_CACHE_FORMAT (this layout)
 *   12     4    UNWIND_TABLE_VERSION (what the builder makes of a file)
 *   16     80   key, NUL padded
 *   96     8    base: link-time address entry pcs are relative to
 *   104    4    count: entries
 *   108    4    nrules
 *   112    4    payload bytes (the file is 128 + this long)
 *   116    1    kind: TABLE_ENTRIES, TABLE_FP, TABLE_NONE
 *   117    1    interp: some entry carries UNW_F_INTERP
 *   118    1    runtime: the unwinder kind of the file's runtime (enum unwinder_kind)
 *   119    1    sources: UT_SRC_* of the build
 *   120    4    CRC-32 of the payload
 *   124    4    CRC-32 of bytes 0-123
 *   128    ..   payload
 *
 * Ownership: the cache owns its records; table_cache_free() releases them (after writing what
 * is queued). One thread may use a cache; the cache's own writer thread does the disk writes. */
#ifndef SCORCH_AGENT_TABLE_CACHE_H
#define SCORCH_AGENT_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/unwind.h"

struct errmsg;
struct table_cache;

#define TABLE_CACHE_FORMAT 1
#define TABLE_CACHE_KEY_MAX 80            /* bytes of a key, NUL included */
#define TABLE_CACHE_HEADER 128
#define TABLE_CACHE_MAX_FILE (64u << 20)  /* a record file larger than this is not read */
#define TABLE_CACHE_DEFAULT_BYTES (16u << 20)
#define TABLE_CACHE_DEFAULT_DISK_BYTES (256ull << 20)
#define TABLE_CACHE_DEFAULT_DIR "/var/cache/scorch/tables"

enum table_kind {
	TABLE_NONE = 0,    /* no table could be made (no CFI, no frame pointers, unreadable) */
	TABLE_ENTRIES = 1, /* entries */
	TABLE_FP = 2,      /* no entries needed: the frame-pointer rule covers the file */
};

struct table_info {
	uint8_t kind;      /* enum table_kind */
	uint8_t interp;
	uint8_t runtime;   /* enum unwinder_kind of the runtime whose ranges were flagged */
	uint8_t sources;   /* UT_SRC_* */
	uint32_t count;    /* entries (TABLE_ENTRIES) */
	uint64_t base;
};

/* File operations, so that tests can make any step fail (a full disk, a crash before the
 * rename). NULL members use the system calls. */
struct table_cache_io {
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*fsync)(int fd);
	int (*renameat)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
};

struct table_cache_opts {
	size_t max_bytes;         /* records held in memory; 0: TABLE_CACHE_DEFAULT_BYTES */
	const char *dir;          /* records on disk; NULL: memory only */
	uint64_t max_disk_bytes;  /* 0: TABLE_CACHE_DEFAULT_DISK_BYTES */
	const struct table_cache_io *io; /* NULL: the system calls */
};

struct table_cache_stats {
	uint64_t hits, disk_hits, misses;
	uint64_t puts;
	uint64_t evictions;        /* records dropped from memory */
	uint64_t bytes, records;   /* in memory now */
	uint64_t encoded_entries;  /* entries of the records in memory */
	uint64_t disk_writes, disk_errors;
	uint64_t bad_files;        /* files found corrupt, truncated or of another version */
	uint64_t disk_evictions;   /* files deleted to stay under max_disk_bytes */
	uint64_t disk_bytes;       /* record files on disk now */
	int disk;                  /* 1 when the disk part is in use */
};

/* Create a cache. With opts->dir, the directory is created when missing, checked, and scanned
 * for its size (temporary files left by a crash are removed). Returns NULL with a message when
 * the directory cannot be used; callers may go on with a memory-only cache. */
struct table_cache *table_cache_new(const struct table_cache_opts *opts, struct errmsg *err);
void table_cache_free(struct table_cache *c); /* NULL ok */

/* Look key up, in memory then on disk. Returns a record (owned by the cache, valid until the
 * next call that changes the cache: get or put) and fills *info, or NULL when the table is not
 * cached. */
struct table_rec;
const struct table_rec *table_cache_get(struct table_cache *c, const char *key,
					struct table_info *info);
/* Write the entries of a TABLE_ENTRIES record into out (room for info.count). 0, or -EINVAL
 * when the record does not decode (cannot happen for records the cache accepted). */
int table_rec_decode(const struct table_rec *r, struct unwind_entry *out, size_t cap);

/* Store a build's outcome (entries: info->count of them, sorted, the last one UNW_INVALID; NULL
 * for other kinds). The record goes to memory (unless larger than max_bytes) and is queued for
 * the writer thread, which writes it to disk (a durable write costs two fsync() calls: not on
 * the caller's thread). Returns 0, -EINVAL for a key or table the cache cannot hold, -ENOSPC
 * when the write queue is full (32 MiB waiting). Failed writes count in disk_errors; the
 * memory record is kept either way. */
int table_cache_put(struct table_cache *c, const char *key, const struct table_info *info,
		    const struct unwind_entry *entries);
/* Wait until every queued record is written (tests; table_cache_free() writes them too). */
void table_cache_flush(struct table_cache *c);

void table_cache_stats(struct table_cache *c, struct table_cache_stats *out);

/* Check a record file's bytes (data, len) for key (NULL: any key); 0 and *info, *payload_off,
 * *nrules when it is sound (the checks of a disk read, for tests and fuzzing), else a negative
 * errno: -EPROTO for another format or table version, -EBADMSG for anything else. */
int table_cache_check_file(const uint8_t *data, size_t len, const char *key,
			   struct table_info *info, size_t *payload_off, uint32_t *nrules);

/* Encode count entries into a new payload (xfree() it); *nrules receives the rule count. NULL
 * (errno EINVAL) when the entries are not a valid table. Decode the reverse: 0 or -EINVAL. */
uint8_t *table_cache_encode(const struct unwind_entry *e, size_t count, size_t *size,
			    uint32_t *nrules);
int table_cache_decode(const uint8_t *payload, size_t size, uint32_t nrules, size_t count,
		       struct unwind_entry *out);

#endif
