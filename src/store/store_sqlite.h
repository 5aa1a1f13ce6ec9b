/* store_sqlite.h: the on-disk format of the embedded SQLite profile store (store.h's "sqlite"
 * backend, implemented in store_sqlite.c). docs/storage.md explains the design; this is the
 * reference.
 *
 * Files: DIR/scorch.db (+ scorch.db-wal, scorch.db-shm while open), DIR/scorch.reserve (disk
 * space held back for a full disk: allocated, never read; see docs/storage.md). page_size 8192,
 * journal_mode WAL, auto_vacuum INCREMENTAL (freed pages are returned to the file system after
 * retention), synchronous NORMAL (or FULL with store_opts.sync_full).
 *
 * Tables (all integers are SQLite INTEGERs, times unix seconds):
 *
 *   meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID
 *       'magic'   = STORE_SQLITE_MAGIC, 'version' = STORE_SQLITE_VERSION (checked on open)
 *
 *   series(id INTEGER PRIMARY KEY, key BLOB UNIQUE, type TEXT, sample_rate, units, spy_name,
 *          aggregation, first_t, last_t)
 *       key = the series identity (see "series key" below); first_t/last_t = time of the
 *       oldest/newest batch written (first_t is raised by retention).
 *
 *   frames(id INTEGER PRIMARY KEY AUTOINCREMENT, hash, last_hour, name TEXT)   index on hash
 *   stacks(id INTEGER PRIMARY KEY AUTOINCREMENT, hash, last_hour, frames BLOB) index on hash
 *       Every frame name and every distinct stack is stored once. hash = 64-bit hash of name /
 *       of the frame ids; last_hour = floor(t / 3600) of the newest sample using it (garbage
 *       collected by retention, which drops whole hours). AUTOINCREMENT: ids are never reused, so cached ids stay valid.
 *       stacks.frames = frame ids, root first, each an unsigned LEB128 varint.
 *
 *   raw(id INTEGER PRIMARY KEY, series, t, total, data BLOB)
 *       index raw_series_t(series, t, total)   selection by series and time; covers time series
 *       index raw_t(t)                         retention
 *       One row per written batch: t = batch `from`, total = sum of values, data = sample blob.
 *
 *   rollup(level, series, t, total, data BLOB, PRIMARY KEY(level, series, t))
 *       Pre-aggregated partitions: level 1 = hour [t, t+3600), level 2 = day [t, t+86400), UTC
 *       aligned. Invariant: a rollup row equals the sum of the raw rows of its series and
 *       partition. Built by the compactor (store_maintain) for partitions that ended more than
 *       STORE_SQLITE_GRACE seconds ago; a write into a partition deletes its rollup.
 *
 *   dirty(level, series, t, PRIMARY KEY(level, series, t)) WITHOUT ROWID
 *       Partitions written since their rollup was last built (work list of the compactor).
 *
 * Sample blob (raw.data and rollup.data), stack ids ascending, each distinct:
 *   offset  size     description
 *   0       varint   n, number of (stack, value) pairs
 *   ...     varint   stack id minus the previous pair's stack id (the first: minus 0)
 *   ...     varint   value (> 0)
 *   (the two varints repeat n times; nothing follows)
 *
 * Series key: type NUL (name NUL value NUL)*, labels sorted by name, empty values dropped.
 *
 * Varint: unsigned LEB128, at most 10 bytes, low 7 bits first, high bit = more bytes follow. */
#ifndef SCORCH_STORE_SQLITE_H
#define SCORCH_STORE_SQLITE_H

#define STORE_SQLITE_FILE    "scorch.db"
#define STORE_SQLITE_RESERVE "scorch.reserve"
#define STORE_SQLITE_MAGIC   "scorch-profile-store"
#define STORE_SQLITE_VERSION 2
#define STORE_SQLITE_GRACE   300 /* seconds after a partition ends before it is rolled up */

#endif
