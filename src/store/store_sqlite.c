/* store_sqlite.c: the embedded SQLite backend of the profile store (store.h). The schema and
 * blob formats are documented in store_sqlite.h; docs/storage.md explains the design.
 *
 * One writer connection (guarded by wlock) does writes, retention and rollup building; a small
 * pool of reader connections serves queries concurrently (WAL readers see a snapshot and never
 * block the writer). The writer keeps bounded caches that map frame names, stacks and series to
 * their ids, so that a write of a known stack costs a hash and a map probe; the caches are
 * dropped whenever a transaction fails or retention deletes ids. Readers keep bounded caches of
 * stack id -> frame ids and frame id -> name.
 *
 * Reads walk the partitions of a time range coarsest first (day rollups, hour rollups, raw
 * rows), so a 7-day query reads 7 day rows per series plus the raw edges. */
#include "store/store_sqlite.h"
#include "store/store.h"
#include "store/selector.h"
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/strtab.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define HOUR 3600
#define DAY 86400
#define NLEVELS 3 /* 0 raw, 1 hour, 2 day */
#define PAGE 8192     /* page_size of the database */
#define ID_BITS 40
#define ID_MASK ((1ULL << ID_BITS) - 1)
#define MAX_ROLLUP_STACKS (4u << 20) /* a partition with more distinct stacks stays unrolled */
#define MAX_TS_VALUES (4u << 20)      /* groups x points of one time series */
#define COMPACT_BATCH 32              /* partitions rolled up per transaction */
#define COMPACT_BUDGET_NS 1000000000LL /* per store_maintain call */

static const int64_t level_size[NLEVELS] = { 1, HOUR, DAY };

/* ---- varints and hashing (part of the on-disk format: see store_sqlite.h) --------------------- */

static size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static int varint_get(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	int shift = 0;

	while (p < end && shift < 64) {
		uint8_t b = *p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*pp = p;
			*out = v;
			return 0;
		}
		shift += 7;
	}
	return -1;
}

/* The stored hash of a frame name or stack blob: part of the on-disk format (hash.h). */
static uint64_t sq_hash(const void *data, size_t len)
{
	return hash_stable(data, len);
}

static int64_t floor_to(int64_t t, int64_t size)
{
	int64_t r = t % size;

	return r < 0 ? t - r - size : t - r;
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- connections ------------------------------------------------------------------------------- */

enum {
	R_SERIES_ALL, R_RAW_DATA, R_RAW_TOTAL, R_ROLL1_DATA, R_ROLL2_DATA, R_ROLL1_TOTAL,
	R_ROLL2_TOTAL, R_STACK_FRAMES, R_FRAME_NAME, NREAD
};

static const char *const read_sql[NREAD] = {
	[R_SERIES_ALL] = "SELECT id, key, sample_rate, units, spy_name, aggregation, first_t, last_t FROM series",
	[R_RAW_DATA] = "SELECT t, total, data FROM raw WHERE series = ?1 AND t >= ?2 AND t < ?3",
	[R_RAW_TOTAL] = "SELECT t, total FROM raw WHERE series = ?1 AND t >= ?2 AND t < ?3",
	[R_ROLL1_DATA] = "SELECT t, total, data FROM rollup WHERE level = 1 AND series = ?1 AND t >= ?2 AND t < ?3 ORDER BY t",
	[R_ROLL2_DATA] = "SELECT t, total, data FROM rollup WHERE level = 2 AND series = ?1 AND t >= ?2 AND t < ?3 ORDER BY t",
	[R_ROLL1_TOTAL] = "SELECT t, total FROM rollup WHERE level = 1 AND series = ?1 AND t >= ?2 AND t < ?3 ORDER BY t",
	[R_ROLL2_TOTAL] = "SELECT t, total FROM rollup WHERE level = 2 AND series = ?1 AND t >= ?2 AND t < ?3 ORDER BY t",
	[R_STACK_FRAMES] = "SELECT frames FROM stacks WHERE id = ?1",
	[R_FRAME_NAME] = "SELECT name FROM frames WHERE id = ?1",
};

enum {
	W_BEGIN, W_COMMIT, W_ROLLBACK, W_SERIES_GET, W_SERIES_INS, W_SERIES_TIME, W_SERIES_META,
	W_FRAME_GET, W_FRAME_INS, W_FRAME_TOUCH, W_STACK_GET, W_STACK_INS, W_STACK_TOUCH, W_RAW_INS,
	W_DIRTY_INS, W_ROLLUP_DEL, W_ROLLUP_PUT, W_DIRTY_DEL, W_DIRTY_DUE, W_PAGE_COUNT, W_FREELIST,
	W_RAW_MINMAX, NWRITE
};

static const char *const write_sql[NWRITE] = {
	[W_BEGIN] = "BEGIN IMMEDIATE",
	[W_COMMIT] = "COMMIT",
	[W_ROLLBACK] = "ROLLBACK",
	[W_SERIES_GET] = "SELECT id, first_t, last_t, sample_rate, units, spy_name, aggregation FROM series WHERE key = ?1",
	[W_SERIES_INS] = "INSERT INTO series(key, type, sample_rate, units, spy_name, aggregation, first_t, last_t) "
			 "VALUES (?1, ?2, coalesce(?3, 100), coalesce(?4, 'samples'), coalesce(?5, ''), coalesce(?6, 'sum'), ?7, ?7)",
	[W_SERIES_TIME] = "UPDATE series SET first_t = ?2, last_t = ?3 WHERE id = ?1",
	[W_SERIES_META] = "UPDATE series SET sample_rate = coalesce(?2, sample_rate), units = coalesce(?3, units), "
			  "spy_name = coalesce(?4, spy_name), aggregation = coalesce(?5, aggregation) WHERE id = ?1",
	[W_FRAME_GET] = "SELECT id, last_hour, name FROM frames WHERE hash = ?1",
	[W_FRAME_INS] = "INSERT INTO frames(hash, last_hour, name) VALUES (?1, ?2, ?3)",
	[W_FRAME_TOUCH] = "UPDATE frames SET last_hour = ?2 WHERE id = ?1 AND last_hour < ?2",
	[W_STACK_GET] = "SELECT id, last_hour, frames FROM stacks WHERE hash = ?1",
	[W_STACK_INS] = "INSERT INTO stacks(hash, last_hour, frames) VALUES (?1, ?2, ?3)",
	[W_STACK_TOUCH] = "UPDATE stacks SET last_hour = ?2 WHERE id = ?1 AND last_hour < ?2",
	[W_RAW_INS] = "INSERT INTO raw(series, t, total, data) VALUES (?1, ?2, ?3, ?4)",
	[W_DIRTY_INS] = "INSERT OR IGNORE INTO dirty(level, series, t) VALUES (?1, ?2, ?3)",
	[W_ROLLUP_DEL] = "DELETE FROM rollup WHERE level = ?1 AND series = ?2 AND t = ?3",
	[W_ROLLUP_PUT] = "INSERT OR REPLACE INTO rollup(level, series, t, total, data) VALUES (?1, ?2, ?3, ?4, ?5)",
	[W_DIRTY_DEL] = "DELETE FROM dirty WHERE level = ?1 AND series = ?2 AND t = ?3",
	[W_DIRTY_DUE] = "SELECT series, t FROM dirty WHERE level = ?1 AND t <= ?2 LIMIT ?3",
	[W_PAGE_COUNT] = "PRAGMA page_count",
	[W_FREELIST] = "PRAGMA freelist_count",
	[W_RAW_MINMAX] = "SELECT min(t), max(t) FROM raw",
};

static const char schema_sql[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
	"CREATE TABLE series(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, type TEXT NOT NULL,"
	" sample_rate INTEGER, units TEXT, spy_name TEXT, aggregation TEXT,"
	" first_t INTEGER NOT NULL, last_t INTEGER NOT NULL);"
	"CREATE TABLE frames(id INTEGER PRIMARY KEY AUTOINCREMENT, hash INTEGER NOT NULL,"
	" last_hour INTEGER NOT NULL, name TEXT NOT NULL);"
	"CREATE INDEX frames_hash ON frames(hash);"
	"CREATE TABLE stacks(id INTEGER PRIMARY KEY AUTOINCREMENT, hash INTEGER NOT NULL,"
	" last_hour INTEGER NOT NULL, frames BLOB NOT NULL);"
	"CREATE INDEX stacks_hash ON stacks(hash);"
	"CREATE TABLE raw(id INTEGER PRIMARY KEY, series INTEGER NOT NULL, t INTEGER NOT NULL,"
	" total INTEGER NOT NULL, data BLOB NOT NULL);"
	"CREATE INDEX raw_series_t ON raw(series, t, total);"
	"CREATE INDEX raw_t ON raw(t);"
	"CREATE TABLE rollup(level INTEGER NOT NULL, series INTEGER NOT NULL, t INTEGER NOT NULL,"
	" total INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(level, series, t));"
	"CREATE TABLE dirty(level INTEGER NOT NULL, series INTEGER NOT NULL, t INTEGER NOT NULL,"
	" PRIMARY KEY(level, series, t)) WITHOUT ROWID;";

struct conn {
	sqlite3 *db;
	sqlite3_stmt *rd[NREAD];
	sqlite3_stmt *wr[NWRITE]; /* writer only */
	int busy;
	/* Reader caches (bounded by cache_limit bytes, dropped whole when full). */
	struct u64map stack_at;  /* stack id -> offset in spool: [depth, frame ids...] */
	uint32_t *spool;
	size_t nspool, spool_cap;
	struct u64map frame_at;  /* frame id -> id in names */
	struct strtab *names;
	size_t cache_limit;
};

struct series_ent {
	int64_t id, first_t, last_t;
	uint64_t h_units, h_spy, h_agg;
	uint32_t rate;
};

struct sq {
	char *dir, *file;
	struct store_opts opts;

	pthread_mutex_t wlock;
	struct conn w;
	/* Writer caches: hash -> id | last_hour << ID_BITS. */
	struct u64map frame_cache, stack_cache;
	struct u64map series_cache; /* key hash -> index + 1 in sents */
	struct series_ent *sents;
	size_t nsents, sents_cap;
	struct u64map dirty_cache; /* partitions already marked dirty (rollup deleted) */
	size_t intern_limit;       /* entries per cache */
	/* Writer scratch. */
	uint64_t *fmap;
	size_t fmap_cap;
	uint8_t *sblob;            /* a stack's frame blob */
	size_t sblob_cap;
	struct store_pair *pairs;
	size_t pairs_cap;
	uint8_t *blob;
	size_t blob_cap;
	char *key;
	size_t key_cap;
	/* Disk: the size cap and the reserve (see "disk" below). */
	char *wal, *shm, *reserve;  /* file names */
	int64_t reserve_size;       /* bytes the reserve file holds */
	int reserve_have;           /* the reserve file exists */
	int64_t wal_limit;          /* WAL bytes after which a write checkpoints and truncates */

	pthread_mutex_t plock;
	pthread_cond_t pcond;
	struct conn *readers;
	int nreaders;
};

/* -ENOSPC when the disk (or SQLite's size limit) is full, so that callers can say so; -EIO
 * for every other failure. */
static int db_error(struct conn *c, struct errmsg *err, const char *what)
{
	int full = sqlite3_errcode(c->db) == SQLITE_FULL;

	/* Interrupted by the progress handler: the request's budget ran out. */
	if (sqlite3_errcode(c->db) == SQLITE_INTERRUPT && budget_failed())
		return budget_error(err, budget_failed());
	return errmsg_set(err, full ? -ENOSPC : -EIO, "%s: %s", what, sqlite3_errmsg(c->db));
}

static int exec_sql(struct conn *c, const char *sql, struct errmsg *err)
{
	char *msg = NULL;

	if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		int ret = errmsg_set(err, -EIO, "sqlite: %s (in \"%.60s\")", msg ? msg : "error", sql);

		sqlite3_free(msg);
		return ret;
	}
	return 0;
}

/* Step a statement that returns no rows (or whose rows are ignored), then reset it. */
static int step_done(struct conn *c, sqlite3_stmt *st, struct errmsg *err, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return db_error(c, err, what);
	return 0;
}

static int64_t pragma_int(struct conn *c, sqlite3_stmt *st)
{
	int64_t v = -1;

	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

static void conn_cache_clear(struct conn *c)
{
	u64map_release(&c->stack_at);
	u64map_init(&c->stack_at);
	u64map_release(&c->frame_at);
	u64map_init(&c->frame_at);
	c->nspool = 0;
	strtab_free(c->names);
	c->names = strtab_new();
}

static size_t conn_cache_bytes(const struct conn *c)
{
	return c->spool_cap * sizeof(uint32_t) + strtab_bytes(c->names) +
	       (c->stack_at.cap + c->frame_at.cap) * 16;
}

static void conn_close(struct conn *c)
{
	int i;

	for (i = 0; i < NREAD; i++)
		sqlite3_finalize(c->rd[i]);
	for (i = 0; i < NWRITE; i++)
		sqlite3_finalize(c->wr[i]);
	if (c->db)
		sqlite3_close(c->db);
	u64map_release(&c->stack_at);
	u64map_release(&c->frame_at);
	strtab_free(c->names);
	xfree(c->spool);
	memset(c, 0, sizeof(*c));
}

static int conn_open(struct conn *c, const char *file, int64_t cache_kib, struct errmsg *err)
{
	char sql[128];
	int ret;

	u64map_init(&c->stack_at);
	u64map_init(&c->frame_at);
	c->names = strtab_new();
	if (sqlite3_open_v2(file, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		ret = errmsg_set(err, -EIO, "cannot open '%s': %s", file,
				 c->db ? sqlite3_errmsg(c->db) : "out of memory");
		return ret;
	}
	sqlite3_busy_timeout(c->db, 10000);
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%lld; PRAGMA temp_store = MEMORY;",
		 (long long)cache_kib);
	return exec_sql(c, sql, err);
}

/* Long statements of a query stop when its request's budget is spent. */
static int progress(void *arg)
{
	return budget_check() != 0;
}

static int conn_prepare(struct conn *c, struct errmsg *err)
{
	int i;

	for (i = 0; i < NREAD; i++)
		if (sqlite3_prepare_v3(c->db, read_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->rd[i], NULL))
			return db_error(c, err, "prepare");
	return 0;
}

/* ---- disk: files, the reserve ---------------------------------------------------------------------- */

static uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The reserve: a file of reserve_size bytes allocated on disk while all is well and deleted
 * when the disk fills, so that what must still write (retention deleting old data, the WAL
 * checkpoint, the checkpoint at shutdown) has room. Writes of new data are refused while it
 * cannot be made. Returns 0 when it exists. */
static int reserve_make(struct sq *sq)
{
	int fd, rc;

	if (sq->reserve_have)
		return 0;
	fd = open(sq->reserve, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	rc = posix_fallocate(fd, 0, (off_t)sq->reserve_size);
	close(fd);
	if (rc) {
		unlink(sq->reserve);
		return -rc;
	}
	sq->reserve_have = 1;
	return 0;
}

static void reserve_drop(struct sq *sq)
{
	unlink(sq->reserve);
	sq->reserve_have = 0;
}

/* ---- open / close ------------------------------------------------------------------------------- */

static int check_or_create_schema(struct conn *c, int sync_full, int64_t wal_bytes, struct errmsg *err)
{
	sqlite3_stmt *st = NULL;
	int ret, have = 0;
	char sql[256];

	/* Must precede the first table: page size and incremental vacuum are fixed at creation. */
	ret = exec_sql(c, "PRAGMA page_size = 8192; PRAGMA auto_vacuum = INCREMENTAL;", err);
	if (ret < 0)
		return ret;
	ret = exec_sql(c, "PRAGMA journal_mode = WAL", err);
	if (ret < 0)
		return ret;
	snprintf(sql, sizeof(sql), "PRAGMA synchronous = %s; PRAGMA journal_size_limit = %lld;"
		 " PRAGMA wal_autocheckpoint = %lld;", sync_full ? "FULL" : "NORMAL",
		 (long long)wal_bytes, (long long)(wal_bytes / 8192));
	ret = exec_sql(c, sql, err);
	if (ret < 0)
		return ret;
	if (sqlite3_prepare_v2(c->db, "SELECT count(*) FROM sqlite_master WHERE name = 'meta'", -1, &st, NULL))
		return db_error(c, err, "cannot read schema");
	if (sqlite3_step(st) == SQLITE_ROW)
		have = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (!have) {
		ret = exec_sql(c, "BEGIN IMMEDIATE", err);
		if (ret < 0)
			return ret;
		ret = exec_sql(c, schema_sql, err);
		if (ret == 0) {
			snprintf(sql, sizeof(sql),
				 "INSERT INTO meta VALUES ('magic', '%s'), ('version', %d); COMMIT;",
				 STORE_SQLITE_MAGIC, STORE_SQLITE_VERSION);
			ret = exec_sql(c, sql, err);
		}
		if (ret < 0) {
			exec_sql(c, "ROLLBACK", NULL);
			return ret;
		}
		return 0;
	}
	if (sqlite3_prepare_v2(c->db, "SELECT (SELECT value FROM meta WHERE key = 'magic'),"
				      " (SELECT value FROM meta WHERE key = 'version')", -1, &st, NULL))
		return db_error(c, err, "cannot read meta table");
	ret = errmsg_set(err, -EINVAL, "not a scorch profile store (bad magic)");
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *magic = (const char *)sqlite3_column_text(st, 0);
		int version = sqlite3_column_int(st, 1);

		if (magic && !strcmp(magic, STORE_SQLITE_MAGIC)) {
			ret = 0;
			if (version != STORE_SQLITE_VERSION)
				ret = errmsg_set(err, -EINVAL, "store format version %d, this scorch reads %d",
						 version, STORE_SQLITE_VERSION);
		}
	}
	sqlite3_finalize(st);
	return ret;
}

static void sq_close(void *state)
{
	struct sq *sq = state;
	int i;

	if (!sq)
		return;
	if (sq->w.db)
		sqlite3_wal_checkpoint_v2(sq->w.db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	for (i = 0; i < sq->nreaders; i++)
		conn_close(&sq->readers[i]);
	xfree(sq->readers);
	conn_close(&sq->w);
	u64map_release(&sq->frame_cache);
	u64map_release(&sq->stack_cache);
	u64map_release(&sq->series_cache);
	u64map_release(&sq->dirty_cache);
	xfree(sq->sents);
	xfree(sq->fmap);
	xfree(sq->sblob);
	xfree(sq->pairs);
	xfree(sq->blob);
	xfree(sq->key);
	pthread_mutex_destroy(&sq->wlock);
	pthread_mutex_destroy(&sq->plock);
	pthread_cond_destroy(&sq->pcond);
	xfree(sq->dir);
	xfree(sq->file);
	xfree(sq->wal);
	xfree(sq->shm);
	xfree(sq->reserve);
	xfree(sq);
}

static int sq_open(const char *path, const struct store_opts *opts, void **state, struct errmsg *err)
{
	struct sq *sq = xcalloc(1, sizeof(*sq));
	int64_t page_kib, reader_kib, wal_bytes;
	int i, ret;

	*state = NULL;
	pthread_mutex_init(&sq->wlock, NULL);
	pthread_mutex_init(&sq->plock, NULL);
	pthread_cond_init(&sq->pcond, NULL);
	u64map_init(&sq->frame_cache);
	u64map_init(&sq->stack_cache);
	u64map_init(&sq->series_cache);
	u64map_init(&sq->dirty_cache);
	sq->opts = *opts;
	if (!sq->opts.cache_bytes)
		sq->opts.cache_bytes = 64ULL << 20;
	if (sq->opts.cache_bytes < (4ULL << 20))
		sq->opts.cache_bytes = 4ULL << 20;
	if (sq->opts.readers <= 0)
		sq->opts.readers = 4;
	if (sq->opts.readers > 64)
		sq->opts.readers = 64;
	/* A quarter of the budget for the writer's page cache, a quarter for the readers' page
	 * caches, a quarter for the writer's id caches, a quarter for the readers' caches. */
	page_kib = (int64_t)(sq->opts.cache_bytes / 4 / 1024);
	reader_kib = page_kib / sq->opts.readers;
	sq->intern_limit = sq->opts.cache_bytes / 4 / 2 / 48;
	sq->dir = xstrdup(path);
	sq->file = xasprintf("%s/%s", path, STORE_SQLITE_FILE);
	sq->wal = xasprintf("%s-wal", sq->file);
	sq->shm = xasprintf("%s-shm", sq->file);
	sq->reserve = xasprintf("%s/%s", path, STORE_SQLITE_RESERVE);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		ret = errmsg_set(err, -errno, "cannot create directory '%s': %s", path, strerror(errno));
		goto cleanup;
	}
	ret = conn_open(&sq->w, sq->file, page_kib, err);
	if (ret < 0)
		goto cleanup;
	/* The WAL is checkpointed and truncated once it passes this size (at most 1/32 of the
	 * cap: it counts against it). */
	wal_bytes = 16 << 20;
	if (sq->opts.max_disk_bytes && (int64_t)(sq->opts.max_disk_bytes / 32) < wal_bytes)
		wal_bytes = (int64_t)(sq->opts.max_disk_bytes / 32);
	if (wal_bytes < 16 * 8192)
		wal_bytes = 16 * 8192;
	sq->wal_limit = wal_bytes;
	/* Headroom kept on disk for a full disk (see "disk"): 1/16 of the cap, or without a cap
	 * 1/64 of the file system; 256 KiB to 32 MiB. */
	if (sq->opts.max_disk_bytes) {
		sq->reserve_size = (int64_t)(sq->opts.max_disk_bytes / 16);
	} else {
		struct statvfs vfs;

		sq->reserve_size = statvfs(path, &vfs) == 0 ?
			(int64_t)((uint64_t)vfs.f_blocks * vfs.f_frsize / 64) : 16 << 20;
	}
	if (sq->reserve_size < 256 << 10)
		sq->reserve_size = 256 << 10;
	if (sq->reserve_size > 32 << 20)
		sq->reserve_size = 32 << 20;
	ret = check_or_create_schema(&sq->w, sq->opts.sync_full, wal_bytes, err);
	if (ret < 0)
		goto cleanup;
	ret = conn_prepare(&sq->w, err);
	if (ret < 0)
		goto cleanup;
	for (i = 0; i < NWRITE; i++) {
		if (sqlite3_prepare_v3(sq->w.db, write_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &sq->w.wr[i], NULL)) {
			ret = db_error(&sq->w, err, "prepare");
			goto cleanup;
		}
	}
	sq->w.cache_limit = sq->opts.cache_bytes / 8;
	sq->readers = xcalloc((size_t)sq->opts.readers, sizeof(*sq->readers));
	sq->nreaders = sq->opts.readers;
	for (i = 0; i < sq->nreaders; i++) {
		ret = conn_open(&sq->readers[i], sq->file, reader_kib, err);
		if (ret < 0)
			goto cleanup;
		sqlite3_progress_handler(sq->readers[i].db, 10000, progress, NULL);
		ret = exec_sql(&sq->readers[i], "PRAGMA query_only = 1", err);
		if (ret == 0)
			ret = conn_prepare(&sq->readers[i], err);
		if (ret < 0)
			goto cleanup;
		sq->readers[i].cache_limit = sq->opts.cache_bytes / 4 / (size_t)sq->nreaders;
	}
	/* A disk already full does not keep the store from opening (queries work); writes are
	 * refused until the reserve can be made. */
	reserve_make(sq);
	*state = sq;
	return 0;
cleanup:
	sq_close(sq);
	return ret;
}

/* ---- writer caches ------------------------------------------------------------------------------ */

static void cache_put(struct u64map *m, size_t limit, uint64_t key, uint64_t val)
{
	if (m->count >= limit) {
		u64map_release(m);
		u64map_init(m);
	}
	u64map_put(m, key, val);
}

static void writer_caches_clear(struct sq *sq)
{
	u64map_release(&sq->frame_cache);
	u64map_init(&sq->frame_cache);
	u64map_release(&sq->stack_cache);
	u64map_init(&sq->stack_cache);
	u64map_release(&sq->series_cache);
	u64map_init(&sq->series_cache);
	u64map_release(&sq->dirty_cache);
	u64map_init(&sq->dirty_cache);
	sq->nsents = 0;
}

static uint64_t meta_hash(const char *s)
{
	return sq_hash(s, strlen(s));
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* The series id of b (created if new), with its time range and metadata brought up to date. */
static int series_resolve(struct sq *sq, const struct store_batch *b, int64_t *id, struct errmsg *err)
{
	struct conn *c = &sq->w;
	struct series_ent *e = NULL;
	size_t klen = 0, i, need;
	uint64_t h, *slot;
	int ret;

	need = strlen(b->type) + 1;
	for (i = 0; i < b->nlabels; i++)
		need += strlen(b->labels[i].name) + strlen(b->labels[i].value) + 2;
	ALLOC_GROW(sq->key, need, sq->key_cap);
	memcpy(sq->key, b->type, strlen(b->type) + 1);
	klen = strlen(b->type) + 1;
	for (i = 0; i < b->nlabels; i++) {
		size_t nl = strlen(b->labels[i].name) + 1, vl = strlen(b->labels[i].value) + 1;

		memcpy(sq->key + klen, b->labels[i].name, nl);
		klen += nl;
		memcpy(sq->key + klen, b->labels[i].value, vl);
		klen += vl;
	}
	h = sq_hash(sq->key, klen);
	slot = u64map_get(&sq->series_cache, h);
	if (slot)
		e = &sq->sents[*slot - 1];
	if (!e) {
		sqlite3_stmt *st = c->wr[W_SERIES_GET];
		int rc;

		if (sq->nsents >= sq->intern_limit / 4 + 1024) {
			u64map_release(&sq->series_cache);
			u64map_init(&sq->series_cache);
			sq->nsents = 0;
		}
		ALLOC_GROW(sq->sents, sq->nsents + 1, sq->sents_cap);
		e = &sq->sents[sq->nsents];
		memset(e, 0, sizeof(*e));
		sqlite3_bind_blob(st, 1, sq->key, (int)klen, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			e->id = sqlite3_column_int64(st, 0);
			e->first_t = sqlite3_column_int64(st, 1);
			e->last_t = sqlite3_column_int64(st, 2);
			e->rate = (uint32_t)sqlite3_column_int64(st, 3);
			e->h_units = meta_hash((const char *)sqlite3_column_text(st, 4) ?: "");
			e->h_spy = meta_hash((const char *)sqlite3_column_text(st, 5) ?: "");
			e->h_agg = meta_hash((const char *)sqlite3_column_text(st, 6) ?: "");
		}
		sqlite3_reset(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return db_error(c, err, "cannot read series");
		if (rc == SQLITE_DONE) {
			st = c->wr[W_SERIES_INS];
			sqlite3_bind_blob(st, 1, sq->key, (int)klen, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, b->type, -1, SQLITE_STATIC);
			if (b->sample_rate)
				sqlite3_bind_int64(st, 3, b->sample_rate);
			else
				sqlite3_bind_null(st, 3);
			bind_text_or_null(st, 4, b->units);
			bind_text_or_null(st, 5, b->spy_name);
			bind_text_or_null(st, 6, b->aggregation);
			sqlite3_bind_int64(st, 7, b->from);
			ret = step_done(c, st, err, "cannot insert series");
			if (ret < 0)
				return ret;
			e->id = sqlite3_last_insert_rowid(c->db);
			e->first_t = e->last_t = b->from;
			e->rate = b->sample_rate ? b->sample_rate : 100;
			e->h_units = meta_hash(b->units ? b->units : "samples");
			e->h_spy = meta_hash(b->spy_name ? b->spy_name : "");
			e->h_agg = meta_hash(b->aggregation ? b->aggregation : "sum");
		}
		sq->nsents++;
		u64map_put(&sq->series_cache, h, sq->nsents);
	}
	if (b->from < e->first_t || b->from > e->last_t) {
		sqlite3_stmt *st = c->wr[W_SERIES_TIME];

		if (b->from < e->first_t)
			e->first_t = b->from;
		if (b->from > e->last_t)
			e->last_t = b->from;
		sqlite3_bind_int64(st, 1, e->id);
		sqlite3_bind_int64(st, 2, e->first_t);
		sqlite3_bind_int64(st, 3, e->last_t);
		ret = step_done(c, st, err, "cannot update series");
		if (ret < 0)
			return ret;
	}
	if ((b->sample_rate && b->sample_rate != e->rate) ||
	    (b->units && meta_hash(b->units) != e->h_units) ||
	    (b->spy_name && meta_hash(b->spy_name) != e->h_spy) ||
	    (b->aggregation && meta_hash(b->aggregation) != e->h_agg)) {
		sqlite3_stmt *st = c->wr[W_SERIES_META];

		sqlite3_bind_int64(st, 1, e->id);
		if (b->sample_rate)
			sqlite3_bind_int64(st, 2, b->sample_rate);
		else
			sqlite3_bind_null(st, 2);
		bind_text_or_null(st, 3, b->units);
		bind_text_or_null(st, 4, b->spy_name);
		bind_text_or_null(st, 5, b->aggregation);
		ret = step_done(c, st, err, "cannot update series");
		if (ret < 0)
			return ret;
		if (b->sample_rate)
			e->rate = b->sample_rate;
		if (b->units)
			e->h_units = meta_hash(b->units);
		if (b->spy_name)
			e->h_spy = meta_hash(b->spy_name);
		if (b->aggregation)
			e->h_agg = meta_hash(b->aggregation);
	}
	*id = e->id;
	return 0;
}

/* Intern one frame name or stack blob: cache, then the hash index, then insert. `get`, `ins`
 * and `touch` are the statements of the table; the value column to compare is column 2. */
static int intern(struct sq *sq, struct u64map *cache, int get, int ins, int touch,
		  const void *data, size_t len, int is_text, int64_t hour, uint64_t *out, struct errmsg *err)
{
	struct conn *c = &sq->w;
	uint64_t h = sq_hash(data, len), *slot = u64map_get(cache, h);
	sqlite3_stmt *st;
	int64_t id = 0, last_hour = 0;
	int rc, ret;

	if (slot) {
		id = (int64_t)(*slot & ID_MASK);
		last_hour = (int64_t)(*slot >> ID_BITS);
		if (last_hour < hour) {
			st = c->wr[touch];
			sqlite3_bind_int64(st, 1, id);
			sqlite3_bind_int64(st, 2, hour);
			ret = step_done(c, st, err, "cannot update last use");
			if (ret < 0)
				return ret;
			*slot = (uint64_t)id | ((uint64_t)hour << ID_BITS);
		}
		*out = (uint64_t)id;
		return 0;
	}
	st = c->wr[get];
	sqlite3_bind_int64(st, 1, (int64_t)h);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *v = sqlite3_column_blob(st, 2);
		size_t vlen = (size_t)sqlite3_column_bytes(st, 2);

		if (vlen == len && (!len || (v && !memcmp(v, data, len)))) {
			id = sqlite3_column_int64(st, 0);
			last_hour = sqlite3_column_int64(st, 1);
			break;
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(c, err, "cannot look up id");
	if (id && last_hour < hour) {
		st = c->wr[touch];
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, hour);
		ret = step_done(c, st, err, "cannot update last use");
		if (ret < 0)
			return ret;
		last_hour = hour;
	}
	if (!id) {
		st = c->wr[ins];
		sqlite3_bind_int64(st, 1, (int64_t)h);
		sqlite3_bind_int64(st, 2, hour);
		if (is_text)
			sqlite3_bind_text(st, 3, data, (int)len, SQLITE_STATIC);
		else
			sqlite3_bind_blob(st, 3, data, (int)len, SQLITE_STATIC);
		ret = step_done(c, st, err, "cannot insert");
		if (ret < 0)
			return ret;
		id = sqlite3_last_insert_rowid(c->db);
		last_hour = hour;
		if ((uint64_t)id > ID_MASK)
			return errmsg_set(err, -E2BIG, "id space exhausted");
	}
	cache_put(cache, sq->intern_limit, h, (uint64_t)id | ((uint64_t)last_hour << ID_BITS));
	*out = (uint64_t)id;
	return 0;
}

/* Encode sorted, distinct pairs as a sample blob into sq->blob; returns its length. */
static size_t encode_pairs(struct sq *sq, const struct store_pair *pairs, size_t n, int64_t *total)
{
	uint64_t prev = 0;
	size_t len = 0, i;

	ALLOC_GROW(sq->blob, 10 + n * 20, sq->blob_cap);
	len += varint_put(sq->blob + len, n);
	*total = 0;
	for (i = 0; i < n; i++) {
		len += varint_put(sq->blob + len, pairs[i].stack - prev);
		len += varint_put(sq->blob + len, (uint64_t)pairs[i].value);
		prev = pairs[i].stack;
		*total = store_sat_add(*total, pairs[i].value);
	}
	return len;
}

static int mark_dirty(struct sq *sq, int64_t series, int64_t t, struct errmsg *err)
{
	struct conn *c = &sq->w;
	int level, ret;

	for (level = 1; level < NLEVELS; level++) {
		int64_t bucket = floor_to(t, level_size[level]);
		uint64_t k = hash_combine(hash_combine((uint64_t)level, (uint64_t)series), (uint64_t)bucket);

		k = (k == 0 || k == ~0ULL) ? 2 : k;
		if (u64map_get(&sq->dirty_cache, k))
			continue;
		sqlite3_bind_int(c->wr[W_ROLLUP_DEL], 1, level);
		sqlite3_bind_int64(c->wr[W_ROLLUP_DEL], 2, series);
		sqlite3_bind_int64(c->wr[W_ROLLUP_DEL], 3, bucket);
		ret = step_done(c, c->wr[W_ROLLUP_DEL], err, "cannot invalidate rollup");
		if (ret < 0)
			return ret;
		sqlite3_bind_int(c->wr[W_DIRTY_INS], 1, level);
		sqlite3_bind_int64(c->wr[W_DIRTY_INS], 2, series);
		sqlite3_bind_int64(c->wr[W_DIRTY_INS], 3, bucket);
		ret = step_done(c, c->wr[W_DIRTY_INS], err, "cannot mark partition");
		if (ret < 0)
			return ret;
		cache_put(&sq->dirty_cache, sq->intern_limit, k, 1);
	}
	return 0;
}

/* The hot path of ingest: every frame name and stack becomes an id through the caches (a map
 * probe when known), the batch becomes one row of (stack id delta, value) varints. */
static int write_batch(struct sq *sq, const struct store_batch *b, struct errmsg *err)
{
	struct conn *c = &sq->w;
	int64_t series = 0, hour = b->from / HOUR, total;
	size_t i, j, np = 0, len;
	int ret;

	/* A batch without samples (an empty profile) stores nothing, not even its series. */
	for (i = 0; i < b->nsamples && !b->samples[i].value; i++)
		;
	if (i == b->nsamples)
		return 0;
	ret = series_resolve(sq, b, &series, err);
	if (ret < 0)
		return ret;
	ALLOC_GROW(sq->fmap, b->nframe_names + 1, sq->fmap_cap);
	memset(sq->fmap, 0, (b->nframe_names + 1) * sizeof(*sq->fmap));
	ALLOC_GROW(sq->pairs, b->nsamples + 1, sq->pairs_cap);
	ALLOC_GROW(sq->sblob, STORE_MAX_DEPTH * 10 + 10, sq->sblob_cap);
	for (i = 0; i < b->nsamples; i++) {
		const struct store_sample *sm = &b->samples[i];
		size_t slen = 0;
		uint64_t sid;

		if (!sm->value)
			continue;
		for (j = 0; j < sm->nframes; j++) {
			uint32_t idx = sm->frames[j];

			if (!sq->fmap[idx]) {
				const char *name = b->frame_names[idx];

				ret = intern(sq, &sq->frame_cache, W_FRAME_GET, W_FRAME_INS, W_FRAME_TOUCH,
					     name, strlen(name), 1, hour, &sq->fmap[idx], err);
				if (ret < 0)
					return ret;
			}
			slen += varint_put(sq->sblob + slen, sq->fmap[idx]);
		}
		ret = intern(sq, &sq->stack_cache, W_STACK_GET, W_STACK_INS, W_STACK_TOUCH,
			     sq->sblob, slen, 0, hour, &sid, err);
		if (ret < 0)
			return ret;
		sq->pairs[np].stack = sid;
		sq->pairs[np].value = sm->value;
		np++;
	}
	if (!np)
		return 0;
	np = store_pairs_merge(sq->pairs, np);
	len = encode_pairs(sq, sq->pairs, np, &total);
	sqlite3_bind_int64(c->wr[W_RAW_INS], 1, series);
	sqlite3_bind_int64(c->wr[W_RAW_INS], 2, b->from);
	sqlite3_bind_int64(c->wr[W_RAW_INS], 3, total);
	sqlite3_bind_blob(c->wr[W_RAW_INS], 4, sq->blob, (int)len, SQLITE_STATIC);
	ret = step_done(c, c->wr[W_RAW_INS], err, "cannot insert samples");
	if (ret < 0)
		return ret;
	return mark_dirty(sq, series, b->from, err);
}

static int txn_begin(struct sq *sq, struct errmsg *err)
{
	return step_done(&sq->w, sq->w.wr[W_BEGIN], err, "cannot begin transaction");
}

static int txn_end(struct sq *sq, int ok, struct errmsg *err)
{
	int ret = 0;

	if (ok) {
		ret = step_done(&sq->w, sq->w.wr[W_COMMIT], err, "cannot commit");
		if (ret == 0)
			return 0;
	}
	if (!sqlite3_get_autocommit(sq->w.db))
		step_done(&sq->w, sq->w.wr[W_ROLLBACK], NULL, "rollback");
	/* Ids cached during the transaction may not exist. */
	writer_caches_clear(sq);
	return ret;
}

static int make_room(struct sq *sq, int64_t need, struct errmsg *err);
static void wal_truncate(struct sq *sq);
static int64_t files_size(struct sq *sq);
static int write_fits(struct sq *sq, int64_t used0, int64_t free0, size_t nbatches,
		      int64_t *need);

static int sq_write(void *state, const struct store_batch *batches, size_t n, struct errmsg *err)
{
	struct sq *sq = state;
	int64_t need = 0, used0 = 0, free0 = 0;
	size_t i;
	int ret, attempt;

	pthread_mutex_lock(&sq->wlock);
	/* No reserve: the disk filled up and has not enough room yet. New data waits, so that
	 * queries, retention and shutdown keep the room they need. */
	if (!sq->reserve_have && reserve_make(sq) < 0) {
		ret = errmsg_set(err, -ENOSPC, "disk full under '%s': new data is refused until "
				 "%lld bytes are free again (queries keep working)", sq->dir,
				 (long long)sq->reserve_size);
		goto cleanup;
	}
	/* The cap is enforced before the commit: the transaction measures what it adds (pages
	 * newly in use, plus the pages it modifies, all of which go to the WAL); when that does
	 * not fit, it is rolled back, room is made (older data dropped), and it runs once more.
	 * If it still does not fit, it is refused. */
	for (attempt = 0;; attempt++) {
		ret = txn_begin(sq, err);
		if (ret == 0 && sq->opts.max_disk_bytes) {
			used0 = pragma_int(&sq->w, sq->w.wr[W_PAGE_COUNT]);
			free0 = pragma_int(&sq->w, sq->w.wr[W_FREELIST]);
		}
		for (i = 0; i < n && ret == 0; i++)
			ret = write_batch(sq, &batches[i], err);
		if (ret == 0 && sq->opts.max_disk_bytes && !write_fits(sq, used0, free0, n, &need)) {
			txn_end(sq, 0, NULL);
			/* Too large for even an empty store (the WAL and the database hold it at
			 * once until the checkpoint): refused without dropping anything. */
			if (2 * need + sq->reserve_size + 32 * PAGE > (int64_t)sq->opts.max_disk_bytes) {
				ret = errmsg_set(err, -ENOSPC, "a write of %lld bytes cannot fit the disk "
						 "cap (%llu bytes, --max-disk): it needs twice its size",
						 (long long)need,
						 (unsigned long long)sq->opts.max_disk_bytes);
				goto cleanup;
			}
			ret = make_room(sq, need, err);
			if (ret < 0)
				goto cleanup;
			if (attempt == 0)
				continue;
			ret = errmsg_set(err, -ENOSPC, "the store is at its disk cap (%llu bytes, "
					 "--max-disk): this write needs %lld bytes",
					 (unsigned long long)sq->opts.max_disk_bytes, (long long)need);
			goto cleanup;
		}
		if (ret != -ENOSPC || !sqlite3_get_autocommit(sq->w.db))
			ret = txn_end(sq, ret == 0, ret < 0 ? NULL : err) ?: ret;
		break;
	}
	if (ret == -ENOSPC) {
		/* The file system is full (whatever the cap): the reserve is given back so that
		 * the checkpoint and retention can run, and writes wait until it can be made
		 * again. */
		reserve_drop(sq);
		wal_truncate(sq);
		if (sq->opts.max_disk_bytes)
			make_room(sq, 0, NULL);
		errmsg_set(err, -ENOSPC, "disk full under '%s': nothing of this write was stored; "
			   "new data is refused until space is free (queries keep working)", sq->dir);
		goto cleanup;
	}
	if (ret == 0 && (int64_t)file_size(sq->wal) > sq->wal_limit)
		wal_truncate(sq);
	/* Should the WAL's pages still have taken the store past the cap (the checkpoint could
	 * not truncate it while a query read it), it is brought back under it at once. */
	if (ret == 0 && sq->opts.max_disk_bytes && files_size(sq) > (int64_t)sq->opts.max_disk_bytes)
		make_room(sq, 0, NULL);
cleanup:
	pthread_mutex_unlock(&sq->wlock);
	return ret;
}

/* ---- reading: partitions walk ------------------------------------------------------------------------ */

struct walk {
	struct conn *c;
	int64_t series;
	int want_data;
	int top;  /* coarsest level to use */
	int (*row)(struct walk *w, int64_t t, int64_t total, const uint8_t *data, size_t len);
	void *arg;
	struct errmsg *err;
};

static sqlite3_stmt *walk_stmt(struct walk *w, int level)
{
	static const int data_stmt[NLEVELS] = { R_RAW_DATA, R_ROLL1_DATA, R_ROLL2_DATA };
	static const int total_stmt[NLEVELS] = { R_RAW_TOTAL, R_ROLL1_TOTAL, R_ROLL2_TOTAL };

	return w->c->rd[w->want_data ? data_stmt[level] : total_stmt[level]];
}

/* Feed w->row every row of [a, b): rollups of `level` fully inside, finer levels for the gaps. */
static int walk_span(struct walk *w, int level, int64_t a, int64_t b)
{
	int64_t size = level_size[level], first, last, cur = a;
	sqlite3_stmt *st;
	int rc, ret = 0;

	if (a >= b)
		return 0;
	if (level > 0) {
		first = floor_to(a, size);
		if (first < a)
			first += size;
		last = floor_to(b, size); /* rollups must start in [first, last) */
		if (first >= last)
			return walk_span(w, level - 1, a, b);
	} else {
		first = a;
		last = b;
	}
	st = walk_stmt(w, level);
	sqlite3_bind_int64(st, 1, w->series);
	sqlite3_bind_int64(st, 2, first);
	sqlite3_bind_int64(st, 3, last);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(st, 0), total = sqlite3_column_int64(st, 1);
		const uint8_t *data = NULL;
		size_t len = 0;

		if (level > 0 && t > cur) {
			ret = walk_span(w, level - 1, cur, t);
			if (ret < 0)
				break;
		}
		if (w->want_data) {
			data = sqlite3_column_blob(st, 2);
			len = (size_t)sqlite3_column_bytes(st, 2);
		}
		/* A query holds its request's time and memory budget (lib/budget.h). */
		ret = budget_check();
		if (ret < 0) {
			budget_error(w->err, ret);
			break;
		}
		ret = w->row(w, t, total, data, len);
		if (ret < 0)
			break;
		cur = t + size;
	}
	sqlite3_reset(st);
	if (ret < 0)
		return ret;
	if (rc != SQLITE_DONE)
		return db_error(w->c, w->err, "cannot read samples");
	if (level > 0)
		return walk_span(w, level - 1, cur, b);
	return 0;
}

/* Accumulates stack id -> value for merges and rollup building. */
struct accum {
	struct u64map map;
	size_t max;
	int64_t other;
	uint64_t other_stacks;
	int overflow;
};

static int accum_row(struct walk *w, int64_t t, int64_t total, const uint8_t *data, size_t len)
{
	struct accum *acc = w->arg;
	const uint8_t *p = data, *end = data + len;
	uint64_t n, i, stack = 0;

	/* The hot loop of every flame graph query: varint pairs into a hash map. */
	if (varint_get(&p, end, &n) < 0)
		return errmsg_set(w->err, -EIO, "corrupt sample blob (series %lld, time %lld)",
				  (long long)w->series, (long long)t);
	for (i = 0; i < n; i++) {
		uint64_t delta, value, *slot;

		if (varint_get(&p, end, &delta) < 0 || varint_get(&p, end, &value) < 0)
			return errmsg_set(w->err, -EIO, "corrupt sample blob (series %lld, time %lld)",
					  (long long)w->series, (long long)t);
		stack += delta;
		if (!stack || stack == ~0ULL)
			continue;
		if (value > INT64_MAX)
			value = INT64_MAX;
		slot = u64map_get(&acc->map, stack);
		if (slot) {
			*slot = (uint64_t)store_sat_add((int64_t)*slot, (int64_t)value);
		} else if (acc->map.count < acc->max) {
			u64map_put(&acc->map, stack, value);
		} else {
			acc->other = store_sat_add(acc->other, (int64_t)value);
			acc->overflow = 1;
		}
	}
	return 0;
}

static void accum_init(struct accum *acc, size_t max)
{
	memset(acc, 0, sizeof(*acc));
	u64map_init(&acc->map);
	acc->max = max;
}

static struct conn *reader_get(struct sq *sq)
{
	struct conn *c = NULL;
	int i;

	pthread_mutex_lock(&sq->plock);
	for (;;) {
		for (i = 0; i < sq->nreaders && !c; i++)
			if (!sq->readers[i].busy)
				c = &sq->readers[i];
		if (c)
			break;
		pthread_cond_wait(&sq->pcond, &sq->plock);
	}
	c->busy = 1;
	pthread_mutex_unlock(&sq->plock);
	if (conn_cache_bytes(c) > c->cache_limit)
		conn_cache_clear(c);
	/* One read transaction: the whole query sees one snapshot. */
	exec_sql(c, "BEGIN", NULL);
	return c;
}

static void reader_put(struct sq *sq, struct conn *c)
{
	exec_sql(c, "COMMIT", NULL);
	pthread_mutex_lock(&sq->plock);
	c->busy = 0;
	pthread_cond_signal(&sq->pcond);
	pthread_mutex_unlock(&sq->plock);
}

/* ---- series selection ------------------------------------------------------------------------------ */

struct sel_series {
	int64_t id, first_t, last_t;
	uint32_t rate;
	char *group; /* group_by value, owned */
	char *type, *units, *spy, *agg; /* owned (merge metadata) */
};

/* Decode a series key into type and labels (pointing into key). */
static int decode_key(const char *key, size_t len, const char **type, struct store_label *labels,
		      size_t *nlabels)
{
	const char *p = key, *end = key + len, *z;
	size_t n = 0;

	if (!len || key[len - 1] != '\0')
		return -1;
	*type = p;
	p += strlen(p) + 1;
	while (p < end) {
		if (n >= STORE_MAX_LABELS)
			return -1;
		labels[n].name = p;
		z = memchr(p, '\0', (size_t)(end - p));
		p = z + 1;
		if (p >= end)
			return -1;
		labels[n].value = p;
		z = memchr(p, '\0', (size_t)(end - p));
		p = z + 1;
		n++;
	}
	*nlabels = n;
	return 0;
}

typedef int (*series_visit)(const struct store_series_info *info, void *arg);

/* Call visit for every series matching q (selector and time overlap). */
static int walk_series(struct conn *c, const struct store_query *q, series_visit visit, void *arg,
		       struct errmsg *err)
{
	sqlite3_stmt *st = c->rd[R_SERIES_ALL];
	struct store_label labels[STORE_MAX_LABELS];
	struct store_series_info info;
	int rc, ret = 0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = sqlite3_column_blob(st, 1);
		size_t klen = (size_t)sqlite3_column_bytes(st, 1);

		memset(&info, 0, sizeof(info));
		info.first_time = sqlite3_column_int64(st, 6);
		info.last_time = sqlite3_column_int64(st, 7);
		if ((q->from || q->until) && (info.last_time < q->from || info.first_time >= q->until))
			continue;
		if (!key || decode_key(key, klen, &info.type, labels, &info.nlabels) < 0)
			continue;
		info.labels = labels;
		if (!selector_match(q->sel, info.type, labels, info.nlabels))
			continue;
		info.id = (uint64_t)sqlite3_column_int64(st, 0);
		info.sample_rate = (uint32_t)sqlite3_column_int64(st, 2);
		info.units = (const char *)sqlite3_column_text(st, 3) ?: "";
		info.spy_name = (const char *)sqlite3_column_text(st, 4) ?: "";
		info.aggregation = (const char *)sqlite3_column_text(st, 5) ?: "";
		ret = visit(&info, arg);
		if (ret)
			break;
	}
	sqlite3_reset(st);
	if (ret)
		return ret;
	if (rc != SQLITE_DONE)
		return db_error(c, err, "cannot read series");
	return 0;
}

static int sq_series(void *state, const struct store_query *q, store_series_fn fn, void *arg,
		     struct errmsg *err)
{
	struct sq *sq = state;
	struct conn *c = reader_get(sq);
	int ret = walk_series(c, q, fn, arg, err);

	reader_put(sq, c);
	return ret;
}

struct sel_list {
	struct sel_series *v;
	size_t n, cap;
	const char *group_by;
};

static int collect_series(const struct store_series_info *info, void *arg)
{
	struct sel_list *l = arg;
	struct sel_series *s;

	ALLOC_GROW(l->v, l->n + 1, l->cap);
	s = &l->v[l->n++];
	memset(s, 0, sizeof(*s));
	s->id = (int64_t)info->id;
	s->first_t = info->first_time;
	s->last_t = info->last_time;
	s->rate = info->sample_rate;
	s->type = xstrdup(info->type);
	s->units = xstrdup(info->units);
	s->spy = xstrdup(info->spy_name);
	s->agg = xstrdup(info->aggregation);
	if (l->group_by)
		s->group = store_series_group(info, l->group_by);
	return 0;
}

static void sel_list_release(struct sel_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		xfree(l->v[i].group);
		xfree(l->v[i].type);
		xfree(l->v[i].units);
		xfree(l->v[i].spy);
		xfree(l->v[i].agg);
	}
	xfree(l->v);
}

/* ---- merge ------------------------------------------------------------------------------------------- */

/* Frame ids of stack `id` (cached per reader connection); *depth set; NULL on error. */
static const uint32_t *reader_stack(struct conn *c, uint64_t id, uint32_t *depth, struct errmsg *err)
{
	uint64_t *slot = u64map_get(&c->stack_at, id);
	sqlite3_stmt *st;
	const uint8_t *p, *end;
	size_t off;
	uint32_t n = 0;
	int rc;

	if (slot) {
		*depth = c->spool[*slot];
		return c->spool + *slot + 1;
	}
	if (conn_cache_bytes(c) > c->cache_limit)
		conn_cache_clear(c);
	st = c->rd[R_STACK_FRAMES];
	sqlite3_bind_int64(st, 1, (int64_t)id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			errmsg_set(err, -EIO, "stack %llu is missing", (unsigned long long)id);
		else
			db_error(c, err, "cannot read stack");
		return NULL;
	}
	p = sqlite3_column_blob(st, 0);
	end = p + sqlite3_column_bytes(st, 0);
	ALLOC_GROW(c->spool, c->nspool + (size_t)(end - p) + 1, c->spool_cap);
	off = c->nspool;
	while (p < end) {
		uint64_t f;

		if (varint_get(&p, end, &f) < 0 || f > UINT32_MAX) {
			sqlite3_reset(st);
			errmsg_set(err, -EIO, "corrupt stack %llu", (unsigned long long)id);
			return NULL;
		}
		c->spool[off + 1 + n++] = (uint32_t)f;
	}
	sqlite3_reset(st);
	c->spool[off] = n;
	c->nspool = off + 1 + n;
	u64map_put(&c->stack_at, id, off);
	*depth = n;
	return c->spool + off + 1;
}

/* Name of frame `id` (cached per reader connection); NULL on error. */
static const char *reader_frame(struct conn *c, uint64_t id, struct errmsg *err)
{
	uint64_t *slot = u64map_get(&c->frame_at, id);
	sqlite3_stmt *st;
	uint32_t sid;
	int rc;

	if (slot)
		return strtab_get(c->names, (uint32_t)*slot);
	st = c->rd[R_FRAME_NAME];
	sqlite3_bind_int64(st, 1, (int64_t)id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			errmsg_set(err, -EIO, "frame %llu is missing", (unsigned long long)id);
		else
			db_error(c, err, "cannot read frame");
		return NULL;
	}
	sid = strtab_intern_len(c->names, (const char *)sqlite3_column_text(st, 0),
				(size_t)sqlite3_column_bytes(st, 0));
	sqlite3_reset(st);
	u64map_put(&c->frame_at, id, sid);
	return strtab_get(c->names, sid);
}

static int cmp_pair_value(const void *a, const void *b)
{
	const struct store_pair *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return (x->stack > y->stack) - (x->stack < y->stack);
}

/* Turn an accumulator into a profile: keep the max largest stacks, resolve ids to names. */
static int build_profile(struct conn *c, struct accum *acc, size_t max, struct store_profile *p,
			 struct errmsg *err)
{
	struct store_pair *pairs = NULL;
	struct u64map local; /* frame id -> id in p->names */
	uint32_t *ids = NULL, *frames;
	size_t n = 0, i, ids_cap = 0, it = 0;
	uint64_t k, v;
	int ret = 0;

	u64map_init(&local);
	pairs = xmalloc((acc->map.count + 1) * sizeof(*pairs));
	while (u64map_next(&acc->map, &it, &k, &v)) {
		if (!v)
			continue;
		pairs[n].stack = k;
		pairs[n].value = (int64_t)v;
		n++;
	}
	/* Heaviest first: what the caps below leave out are the lightest stacks. */
	if (n > 1)
		qsort(pairs, n, sizeof(*pairs), cmp_pair_value);
	p->other = store_sat_add(p->other, acc->other);
	p->other_stacks += acc->other_stacks;
	for (i = 0; i < n; i++) {
		const uint32_t *fr = NULL;
		uint32_t depth = 0, j;

		if (i < max) {
			fr = reader_stack(c, pairs[i].stack, &depth, err);
			if (!fr) {
				ret = -EIO;
				goto cleanup;
			}
		}
		if (i >= max || p->nframes + depth > STORE_MAX_MERGE_FRAMES) {
			/* Over the stack or frame cap: this and every lighter stack is "other". */
			for (; i < n; i++) {
				p->other = store_sat_add(p->other, pairs[i].value);
				p->other_stacks++;
			}
			break;
		}
		ALLOC_GROW(ids, depth + 1, ids_cap);
		frames = ids;
		memcpy(frames, fr, depth * sizeof(*fr)); /* reader_frame may not move spool, but be safe */
		for (j = 0; j < depth; j++) {
			uint64_t *slot = u64map_get(&local, frames[j]);

			if (!slot) {
				const char *name = reader_frame(c, frames[j], err);

				if (!name) {
					ret = -EIO;
					goto cleanup;
				}
				u64map_put(&local, frames[j], strtab_intern(p->names, name));
				slot = u64map_get(&local, frames[j]);
			}
			frames[j] = (uint32_t)*slot;
		}
		store_profile_add_ids(p, frames, depth, pairs[i].value);
	}
	p->total = store_sat_add(p->total, p->other);
	store_profile_truncate(p, 0);
cleanup:
	u64map_release(&local);
	xfree(pairs);
	xfree(ids);
	return ret;
}

static void copy_meta(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static int sq_merge(void *state, const struct store_query *q, size_t max_stacks,
		    struct store_profile **out, struct errmsg *err)
{
	struct sq *sq = state;
	struct sel_list sel = { 0 };
	struct store_profile *p = store_profile_new();
	struct accum acc;
	struct conn *c = reader_get(sq);
	struct walk w = { 0 };
	const struct sel_series *newest = NULL;
	size_t i;
	int ret;

	accum_init(&acc, STORE_MAX_MERGE_STACKS);
	ret = walk_series(c, q, collect_series, &sel, err);
	if (ret < 0)
		goto cleanup;
	w.c = c;
	w.want_data = 1;
	w.top = NLEVELS - 1;
	w.row = accum_row;
	w.arg = &acc;
	w.err = err;
	for (i = 0; i < sel.n; i++) {
		w.series = sel.v[i].id;
		ret = walk_span(&w, w.top, q->from, q->until);
		if (ret < 0)
			goto cleanup;
		if (!newest || sel.v[i].last_t > newest->last_t)
			newest = &sel.v[i];
	}
	ret = build_profile(c, &acc, max_stacks, p, err);
	if (ret < 0)
		goto cleanup;
	p->nseries = sel.n;
	if (newest) {
		p->sample_rate = newest->rate;
		copy_meta(p->type, sizeof(p->type), newest->type);
		copy_meta(p->units, sizeof(p->units), newest->units);
		copy_meta(p->spy_name, sizeof(p->spy_name), newest->spy);
		copy_meta(p->aggregation, sizeof(p->aggregation), newest->agg);
	}
	*out = p;
	p = NULL;
cleanup:
	reader_put(sq, c);
	u64map_release(&acc.map);
	sel_list_release(&sel);
	store_profile_free(p);
	return ret;
}

/* ---- time series ---------------------------------------------------------------------------------------- */

struct ts_walk {
	int64_t *values;
	int64_t start, step, from, until;
	size_t npoints;
};

static int ts_row(struct walk *w, int64_t t, int64_t total, const uint8_t *data, size_t len)
{
	struct ts_walk *tw = w->arg;
	int64_t k;

	if (t < tw->from || t >= tw->until)
		return 0;
	k = (t - tw->start) / tw->step;
	if (k >= 0 && (size_t)k < tw->npoints)
		tw->values[k] = store_sat_add(tw->values[k], total < 0 ? 0 : total);
	return 0;
}

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct store_ts_group *)a)->group, ((const struct store_ts_group *)b)->group);
}

static int sq_timeseries(void *state, const struct store_query *q, int64_t step, const char *group_by,
			 struct store_timeseries **out, struct errmsg *err)
{
	struct sq *sq = state;
	struct sel_list sel = { 0 };
	struct store_timeseries *ts = xcalloc(1, sizeof(*ts));
	struct strtab *gnames = strtab_new();
	struct u64map gindex; /* group name id -> index + 1 */
	struct conn *c = reader_get(sq);
	struct walk w = { 0 };
	struct ts_walk tw;
	size_t i, max_groups, groups_cap = 0;
	int ret, level;

	u64map_init(&gindex);
	ts->step = step;
	ts->start = floor_to(q->from, step);
	ts->npoints = q->until > ts->start ? (size_t)((q->until - ts->start + step - 1) / step) : 0;
	max_groups = STORE_MAX_GROUPS;
	if (ts->npoints && MAX_TS_VALUES / ts->npoints < max_groups)
		max_groups = MAX_TS_VALUES / ts->npoints;
	if (max_groups < 1)
		max_groups = 1;
	sel.group_by = group_by;
	ret = walk_series(c, q, collect_series, &sel, err);
	if (ret < 0)
		goto cleanup;
	w.c = c;
	w.want_data = 0;
	/* A rollup can serve a bucket only when its partition lies inside one step. */
	for (level = NLEVELS - 1; level > 0; level--)
		if (step % level_size[level] == 0)
			break;
	w.top = level;
	w.row = ts_row;
	w.arg = &tw;
	w.err = err;
	tw.start = ts->start;
	tw.step = step;
	tw.from = q->from;
	tw.until = q->until;
	tw.npoints = ts->npoints;
	for (i = 0; i < sel.n; i++) {
		const char *g = sel.v[i].group ? sel.v[i].group : "";
		uint32_t gid = strtab_intern(gnames, g);
		uint64_t *slot = u64map_get(&gindex, (uint64_t)gid + 1);
		struct store_ts_group *grp;
		int64_t sum = 0;
		size_t k;

		if (!slot && ts->ngroups >= max_groups) {
			gid = 0; /* "": the rest */
			slot = u64map_get(&gindex, 1);
		}
		if (!slot) {
			ALLOC_GROW(ts->groups, ts->ngroups + 1, groups_cap);
			grp = &ts->groups[ts->ngroups++];
			grp->group = xstrdup(strtab_get(gnames, gid));
			grp->values = xcalloc(ts->npoints ? ts->npoints : 1, sizeof(int64_t));
			grp->total = 0;
			u64map_put(&gindex, (uint64_t)gid + 1, ts->ngroups);
			slot = u64map_get(&gindex, (uint64_t)gid + 1);
		}
		grp = &ts->groups[*slot - 1];
		tw.values = grp->values;
		w.series = sel.v[i].id;
		ret = walk_span(&w, w.top, q->from, q->until);
		if (ret < 0)
			goto cleanup;
		for (k = 0; k < ts->npoints; k++)
			sum = store_sat_add(sum, grp->values[k]);
		grp->total = sum;
	}
	if (ts->ngroups > 1)
		qsort(ts->groups, ts->ngroups, sizeof(*ts->groups), cmp_group);
	*out = ts;
	ts = NULL;
cleanup:
	reader_put(sq, c);
	u64map_release(&gindex);
	strtab_free(gnames);
	sel_list_release(&sel);
	store_timeseries_free(ts);
	return ret;
}

/* ---- maintenance: retention, size cap, rollups ------------------------------------------------------- */

/* Delete everything sampled before cutoff (a multiple of HOUR), in the open transaction. Every
 * value is a bound parameter: ?1 cutoff, ?2 its day, ?3 the next day, ?4 its hour number. */
static int drop_before(struct sq *sq, int64_t cutoff, struct errmsg *err)
{
	static const char *const steps[] = {
		/* A day cut in the middle must be rolled up again from what remains. */
		"INSERT OR IGNORE INTO dirty(level, series, t)"
		" SELECT DISTINCT 2, series, ?2 FROM raw WHERE t >= ?1 AND t < ?3",
		"DELETE FROM raw WHERE t < ?1",
		"DELETE FROM rollup WHERE level = 1 AND t < ?1",
		"DELETE FROM rollup WHERE level = 2 AND t < ?1",
		"DELETE FROM dirty WHERE level = 1 AND t < ?1",
		"DELETE FROM dirty WHERE level = 2 AND t + 86400 <= ?1",
		"DELETE FROM stacks WHERE last_hour < ?4",
		"DELETE FROM frames WHERE last_hour < ?4",
		"DELETE FROM series WHERE last_t < ?1",
		"UPDATE series SET first_t = ?1 WHERE first_t < ?1",
	};
	int64_t day = floor_to(cutoff, DAY);
	size_t i;
	int ret = 0;

	for (i = day == cutoff ? 1 : 0; i < sizeof(steps) / sizeof(steps[0]) && !ret; i++) {
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(sq->w.db, steps[i], -1, &st, NULL) != SQLITE_OK)
			return db_error(&sq->w, err, "cannot prepare retention");
		sqlite3_bind_int64(st, 1, cutoff);
		sqlite3_bind_int64(st, 2, day);
		sqlite3_bind_int64(st, 3, day + DAY);
		sqlite3_bind_int64(st, 4, cutoff / HOUR);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db_error(&sq->w, err, "cannot drop old data");
		sqlite3_finalize(st);
	}
	return ret;
}

static int drop_txn(struct sq *sq, int64_t cutoff, struct errmsg *err)
{
	int ret = txn_begin(sq, err);

	if (ret < 0)
		return ret;
	ret = drop_before(sq, cutoff, err);
	ret = txn_end(sq, ret == 0, ret < 0 ? NULL : err) ?: ret;
	writer_caches_clear(sq); /* ids may have been deleted */
	if (ret == 0)
		exec_sql(&sq->w, "PRAGMA incremental_vacuum", NULL);
	return ret;
}

static int raw_minmax(struct sq *sq, int64_t *mn, int64_t *mx)
{
	sqlite3_stmt *st = sq->w.wr[W_RAW_MINMAX];
	int found = 0;

	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*mn = sqlite3_column_int64(st, 0);
		*mx = sqlite3_column_int64(st, 1);
		found = 1;
	}
	sqlite3_reset(st);
	return found;
}

/* ---- disk: the size cap ----------------------------------------------------------------------------
 *
 * max_disk_bytes counts every file of the store: database (data, rollups, indexes, free pages),
 * WAL, its index (-shm) and the reserve. It is enforced before a write: a write that could take
 * the files past the cap first gets room (the WAL checkpointed and truncated, then the oldest
 * hours dropped, then if need be the oldest rows of the newest hours, and the file shrunk);
 * when even an empty store would not hold it, it is refused (-ENOSPC). The room made aims at
 * 80% of the cap, so that the space freed lasts for many writes. */


struct footprint {
	int64_t files;  /* database + WAL + shm + reserve */
	int64_t live;   /* pages in use */
	int64_t free;   /* free pages inside the database file */
	int64_t wal;
};

static int64_t files_size(struct sq *sq)
{
	return (int64_t)(file_size(sq->file) + file_size(sq->shm) + file_size(sq->wal)) +
	       (sq->reserve_have ? sq->reserve_size : 0);
}

static void footprint_get(struct sq *sq, struct footprint *f)
{
	int64_t pages = pragma_int(&sq->w, sq->w.wr[W_PAGE_COUNT]);
	int64_t free_pages = pragma_int(&sq->w, sq->w.wr[W_FREELIST]);

	f->wal = (int64_t)file_size(sq->wal);
	f->files = (int64_t)(file_size(sq->file) + file_size(sq->shm)) + f->wal +
		   (sq->reserve_have ? sq->reserve_size : 0);
	f->live = (pages > free_pages ? pages - free_pages : 0) * PAGE;
	f->free = (free_pages > 0 ? free_pages : 0) * PAGE;
}

/* Could a write of about `need` bytes happen without passing the cap? It lands in the WAL
 * (need), and in the database file at the next checkpoint beyond what its free pages hold. */
static int room_for(const struct footprint *f, int64_t need, int64_t cap)
{
	int64_t grow = need > f->free ? need - f->free : 0;

	return f->files + need + grow <= cap;
}

/* Checkpoint the WAL into the database and truncate it (readers in the middle of a query can
 * keep it from being reset: tried twice). */
static void wal_truncate(struct sq *sq)
{
	int i;

	for (i = 0; i < 2; i++)
		if (sqlite3_wal_checkpoint_v2(sq->w.db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) ==
		    SQLITE_OK)
			return;
}

/* Give the free pages back to the file system, in steps with the WAL truncated between them
 * (moving pages writes them to the WAL, which counts against the cap too). */
static void shrink(struct sq *sq)
{
	int64_t step = sq->opts.max_disk_bytes ? (int64_t)sq->opts.max_disk_bytes / 16 / PAGE : 4096;
	int i;
	char sql[64];

	if (step < 32)
		step = 32;
	snprintf(sql, sizeof(sql), "PRAGMA incremental_vacuum(%lld)", (long long)step);
	for (i = 0; i < 1024; i++) {
		int64_t before = pragma_int(&sq->w, sq->w.wr[W_FREELIST]);

		if (before <= 0 || exec_sql(&sq->w, sql, NULL) < 0)
			break;
		wal_truncate(sq);
		if (pragma_int(&sq->w, sq->w.wr[W_FREELIST]) >= before)
			break;
	}
	wal_truncate(sq);
}

/* Inside a write transaction: does it fit under the cap? used0/free0 are page_count and
 * freelist_count at its start. Its pages newly in use land in the WAL and, at the checkpoint,
 * in the database file beyond its free pages; the pages it only modifies (index and table
 * interior pages, the series row) go to the WAL too: a few per batch. *need gets its bytes. */
static int write_fits(struct sq *sq, int64_t used0, int64_t free0, size_t nbatches,
		      int64_t *need)
{
	int64_t pages = pragma_int(&sq->w, sq->w.wr[W_PAGE_COUNT]);
	int64_t free_pages = pragma_int(&sq->w, sq->w.wr[W_FREELIST]);
	int64_t added = (pages - free_pages) - (used0 - free0);
	struct footprint f;

	if (added < 0)
		added = 0;
	*need = (added + 8 + 6 * (int64_t)nbatches) * PAGE;
	footprint_get(sq, &f);
	/* footprint_get() ran inside the transaction: its free pages are those left now, and
	 * the files have not grown yet (the pages are in the cache until the commit). */
	f.free = 0;
	return f.files + *need + (pages > used0 ? pages - used0 : 0) * PAGE <=
	       (int64_t)sq->opts.max_disk_bytes;
}

/* Stacks and frame names that no row references any more (after rows of the newest hours were
 * dropped: their last_hour says they are still in use). Reads every sample blob, which is
 * cheap here: only the newest hours are left when this runs. */
static int gc_unreferenced(struct sq *sq, struct errmsg *err)
{
	static const char *const scans[] = { "SELECT data FROM raw", "SELECT data FROM rollup" };
	struct u64map keep, keepf;
	sqlite3_stmt *st = NULL, *del = NULL;
	size_t k;
	int ret = 0, rc;

	u64map_init(&keep);
	u64map_init(&keepf);
	for (k = 0; k < 2 && !ret; k++) {
		if (sqlite3_prepare_v2(sq->w.db, scans[k], -1, &st, NULL) != SQLITE_OK) {
			ret = db_error(&sq->w, err, "cannot scan samples");
			break;
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const uint8_t *p = sqlite3_column_blob(st, 0);
			const uint8_t *end = p + sqlite3_column_bytes(st, 0);
			uint64_t cnt, i, stack = 0, delta, value;

			if (!p || varint_get(&p, end, &cnt) < 0)
				continue;
			for (i = 0; i < cnt; i++) {
				if (varint_get(&p, end, &delta) < 0 || varint_get(&p, end, &value) < 0)
					break;
				stack += delta;
				if (stack && stack != ~0ULL)
					u64map_put(&keep, stack, 1);
			}
		}
		sqlite3_finalize(st);
		st = NULL;
	}
	/* Stacks: delete the others; keep the frames of those that stay. */
	if (!ret && sqlite3_prepare_v2(sq->w.db, "SELECT id, frames FROM stacks", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(sq->w.db, "DELETE FROM stacks WHERE id = ?1", -1, &del, NULL) == SQLITE_OK) {
		while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
			const uint8_t *p = sqlite3_column_blob(st, 1);
			const uint8_t *end = p + sqlite3_column_bytes(st, 1);
			uint64_t f;

			if (u64map_get(&keep, id)) {
				while (p && p < end && varint_get(&p, end, &f) == 0)
					if (f && f != ~0ULL)
						u64map_put(&keepf, f, 1);
				continue;
			}
			sqlite3_bind_int64(del, 1, (int64_t)id);
			ret = step_done(&sq->w, del, err, "cannot delete a stack");
		}
	} else if (!ret) {
		ret = db_error(&sq->w, err, "cannot scan stacks");
	}
	sqlite3_finalize(st);
	sqlite3_finalize(del);
	st = del = NULL;
	if (!ret && sqlite3_prepare_v2(sq->w.db, "SELECT id FROM frames", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(sq->w.db, "DELETE FROM frames WHERE id = ?1", -1, &del, NULL) == SQLITE_OK) {
		while (!ret && sqlite3_step(st) == SQLITE_ROW) {
			uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);

			if (u64map_get(&keepf, id))
				continue;
			sqlite3_bind_int64(del, 1, (int64_t)id);
			ret = step_done(&sq->w, del, err, "cannot delete a frame");
		}
	} else if (!ret) {
		ret = db_error(&sq->w, err, "cannot scan frames");
	}
	sqlite3_finalize(st);
	sqlite3_finalize(del);
	u64map_release(&keep);
	u64map_release(&keepf);
	return ret;
}

/* Drop the `count` oldest raw rows (whatever their hour), their partitions marked for a new
 * rollup, then what no row uses any more. One transaction. */
static int drop_oldest_rows(struct sq *sq, int64_t count, struct errmsg *err)
{
	sqlite3_stmt *st = NULL, *del = NULL;
	int ret = txn_begin(sq, err);

	if (ret < 0)
		return ret;
	if (sqlite3_prepare_v2(sq->w.db, "SELECT id, series, t FROM raw ORDER BY t, id LIMIT ?1", -1,
			       &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(sq->w.db, "DELETE FROM raw WHERE id = ?1", -1, &del, NULL) != SQLITE_OK) {
		ret = db_error(&sq->w, err, "cannot prepare dropping rows");
	} else {
		int64_t ids[256], series[256], ts[256];
		int n = 0, i;

		/* In slices: the select must not run while its rows are deleted. */
		sqlite3_bind_int64(st, 1, count);
		while (!ret) {
			int rc = sqlite3_step(st);

			if (rc == SQLITE_ROW && n < 256) {
				ids[n] = sqlite3_column_int64(st, 0);
				series[n] = sqlite3_column_int64(st, 1);
				ts[n] = sqlite3_column_int64(st, 2);
				n++;
				continue;
			}
			if (rc != SQLITE_ROW && rc != SQLITE_DONE)
				ret = db_error(&sq->w, err, "cannot select rows");
			sqlite3_reset(st);
			for (i = 0; i < n && !ret; i++) {
				/* A partition that loses rows loses its rollups (the invariant: a rollup
				 * equals its raw rows) and is rolled up again later. */
				ret = mark_dirty(sq, series[i], ts[i], err);
				if (!ret) {
					sqlite3_bind_int64(del, 1, ids[i]);
					ret = step_done(&sq->w, del, err, "cannot drop a row");
				}
			}
			count -= n;
			if (rc == SQLITE_DONE && n < 256)
				break;
			if (count <= 0)
				break;
			n = 0;
			sqlite3_bind_int64(st, 1, count);
		}
	}
	sqlite3_finalize(st);
	sqlite3_finalize(del);
	if (!ret)
		ret = gc_unreferenced(sq, err);
	ret = txn_end(sq, ret == 0, ret < 0 ? NULL : err) ?: ret;
	writer_caches_clear(sq); /* ids may have been deleted */
	return ret;
}

static int64_t raw_rows(struct sq *sq)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;

	if (sqlite3_prepare_v2(sq->w.db, "SELECT count(*) FROM raw", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Make room for a write of `need` bytes under the cap (see above). 1 when data was dropped
 * for it, 0 when there was room, -ENOSPC when even dropping everything does not make room, or
 * the error of a failed step. */
static int make_room(struct sq *sq, int64_t need, struct errmsg *err)
{
	int64_t cap = (int64_t)sq->opts.max_disk_bytes, target = cap - cap / 5;
	struct footprint f;
	int iter, ret = 0, dropped = 0;

	footprint_get(sq, &f);
	if (room_for(&f, need, cap))
		return 0;
	wal_truncate(sq);
	footprint_get(sq, &f);
	if (room_for(&f, need, cap))
		return 0;
	/* 1. Whole hours, oldest first, while older hours remain; their size is estimated from
	 * the average size of an hour. */
	for (iter = 0; iter < 64 && !ret; iter++) {
		int64_t oldest, newest, hours, per_hour, drop, over;

		footprint_get(sq, &f);
		over = f.live + f.wal + (sq->reserve_have ? sq->reserve_size : 0) + 2 * need - target;
		if (over <= 0 || !raw_minmax(sq, &oldest, &newest))
			break;
		hours = (floor_to(newest, HOUR) - floor_to(oldest, HOUR)) / HOUR + 1;
		if (hours <= 1)
			break;
		per_hour = f.live / hours;
		if (per_hour < 1)
			per_hour = 1;
		drop = (over + per_hour - 1) / per_hour;
		if (drop < 1)
			drop = 1;
		if (drop > hours - 1)
			drop = hours - 1;
		ret = drop_txn(sq, floor_to(oldest, HOUR) + drop * HOUR, err);
		wal_truncate(sq);
		dropped = 1;
	}
	if (ret < 0)
		return ret;
	if (dropped)
		shrink(sq);
	footprint_get(sq, &f);
	/* 2. The newest hours alone do not fit: their oldest rows go, a share at a time. */
	for (iter = 0; iter < 16 && !ret && !room_for(&f, need, cap); iter++) {
		int64_t rows = raw_rows(sq), over, size = f.live + f.wal;

		if (rows <= 0)
			break;
		over = size + 2 * need + (sq->reserve_have ? sq->reserve_size : 0) - target;
		ret = drop_oldest_rows(sq, over >= size || size <= 0 ? rows :
				       rows * over / size + 1 + rows / 8, err);
		dropped = 1;
		wal_truncate(sq);
		shrink(sq);
		footprint_get(sq, &f);
	}
	if (ret < 0)
		return ret;
	if (!room_for(&f, need, cap))
		return errmsg_set(err, -ENOSPC, "the store is at its disk cap (%lld bytes, "
				  "--max-disk): a write of up to %lld bytes does not fit even after "
				  "dropping old data", (long long)cap, (long long)need);
	return dropped;
}

static int put_rollup(struct sq *sq, int level, int64_t series, int64_t t, struct accum *acc,
		      struct errmsg *err);

/* Build the rollup of one partition from the finer levels. */
static int build_rollup(struct sq *sq, int level, int64_t series, int64_t t, struct errmsg *err)
{
	struct conn *c = &sq->w;
	struct accum acc;
	struct walk w = { 0 };
	int ret;

	accum_init(&acc, MAX_ROLLUP_STACKS);
	w.c = c;
	w.series = series;
	w.want_data = 1;
	w.top = level - 1;
	w.row = accum_row;
	w.arg = &acc;
	w.err = err;
	ret = walk_span(&w, level - 1, t, t + level_size[level]);
	if (ret < 0)
		goto cleanup;
	sqlite3_bind_int(c->wr[W_ROLLUP_DEL], 1, level);
	sqlite3_bind_int64(c->wr[W_ROLLUP_DEL], 2, series);
	sqlite3_bind_int64(c->wr[W_ROLLUP_DEL], 3, t);
	ret = step_done(c, c->wr[W_ROLLUP_DEL], err, "cannot delete rollup");
	if (ret < 0)
		goto cleanup;
	/* Too many stacks or no data: no rollup, queries read the finer levels. */
	if (!acc.overflow && acc.map.count)
		ret = put_rollup(sq, level, series, t, &acc, err);
	if (ret == 0) {
		sqlite3_bind_int(c->wr[W_DIRTY_DEL], 1, level);
		sqlite3_bind_int64(c->wr[W_DIRTY_DEL], 2, series);
		sqlite3_bind_int64(c->wr[W_DIRTY_DEL], 3, t);
		ret = step_done(c, c->wr[W_DIRTY_DEL], err, "cannot clear partition mark");
	}
cleanup:
	u64map_release(&acc.map);
	return ret;
}

/* Write the accumulated partition as a rollup row. */
static int put_rollup(struct sq *sq, int level, int64_t series, int64_t t, struct accum *acc,
		      struct errmsg *err)
{
	struct conn *c = &sq->w;
	struct store_pair *pairs;
	size_t n = 0, len, it = 0;
	uint64_t k, v;
	int64_t total;
	int ret;

	pairs = xmalloc(acc->map.count * sizeof(*pairs));
	while (u64map_next(&acc->map, &it, &k, &v)) {
		if (!v)
			continue;
		pairs[n].stack = k;
		pairs[n].value = (int64_t)v;
		n++;
	}
	n = store_pairs_merge(pairs, n); /* distinct already: sorted */
	len = encode_pairs(sq, pairs, n, &total);
	xfree(pairs);
	sqlite3_bind_int(c->wr[W_ROLLUP_PUT], 1, level);
	sqlite3_bind_int64(c->wr[W_ROLLUP_PUT], 2, series);
	sqlite3_bind_int64(c->wr[W_ROLLUP_PUT], 3, t);
	sqlite3_bind_int64(c->wr[W_ROLLUP_PUT], 4, total);
	sqlite3_bind_blob(c->wr[W_ROLLUP_PUT], 5, sq->blob, (int)len, SQLITE_STATIC);
	ret = step_done(c, c->wr[W_ROLLUP_PUT], err, "cannot write rollup");
	return ret;
}

/* Roll up partitions that ended more than STORE_SQLITE_GRACE seconds before now, a few per
 * transaction so writes interleave. Returns the number built or a negative errno. */
static int compact(struct sq *sq, int64_t now, struct errmsg *err)
{
	int64_t deadline = monotonic_ns() + COMPACT_BUDGET_NS;
	int level, built = 0;

	for (level = 1; level < NLEVELS; level++) {
		for (;;) {
			struct { int64_t series, t; } due[COMPACT_BATCH];
			sqlite3_stmt *st;
			int n = 0, i, ret;

			if (monotonic_ns() > deadline)
				return built;
			pthread_mutex_lock(&sq->wlock);
			ret = txn_begin(sq, err);
			if (ret < 0) {
				pthread_mutex_unlock(&sq->wlock);
				return ret;
			}
			st = sq->w.wr[W_DIRTY_DUE];
			sqlite3_bind_int(st, 1, level);
			sqlite3_bind_int64(st, 2, now - STORE_SQLITE_GRACE - level_size[level]);
			sqlite3_bind_int(st, 3, COMPACT_BATCH);
			while (n < COMPACT_BATCH && sqlite3_step(st) == SQLITE_ROW) {
				due[n].series = sqlite3_column_int64(st, 0);
				due[n].t = sqlite3_column_int64(st, 1);
				n++;
			}
			sqlite3_reset(st);
			for (i = 0; i < n && ret == 0; i++)
				ret = build_rollup(sq, level, due[i].series, due[i].t, err);
			ret = txn_end(sq, ret == 0, ret < 0 ? NULL : err) ?: ret;
			/* Writes into these partitions must delete the new rollups again. */
			u64map_release(&sq->dirty_cache);
			u64map_init(&sq->dirty_cache);
			pthread_mutex_unlock(&sq->wlock);
			if (ret < 0)
				return ret;
			built += n;
			if (n < COMPACT_BATCH)
				break;
		}
	}
	return built;
}

static int sq_maintain(void *state, int64_t now, struct errmsg *err)
{
	struct sq *sq = state;
	int64_t oldest, newest;
	int ret = 0;

	int dropped = 0;

	pthread_mutex_lock(&sq->wlock);
	if (sq->opts.retention_sec > 0 && raw_minmax(sq, &oldest, &newest)) {
		int64_t cutoff = floor_to(now - sq->opts.retention_sec, HOUR);

		if (oldest < cutoff) {
			ret = drop_txn(sq, cutoff, err);
			dropped = 1;
		}
	}
	/* After a full disk: the reserve back once retention (or the operator) freed space. */
	if (!sq->reserve_have)
		reserve_make(sq);
	if (ret == 0 && sq->opts.max_disk_bytes) {
		ret = make_room(sq, 0, err);
		if (ret > 0) {
			dropped = 1;
			ret = 0;
		}
	}
	pthread_mutex_unlock(&sq->wlock);
	if (ret < 0)
		return ret;
	ret = compact(sq, now, err);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&sq->wlock);
	if ((int64_t)file_size(sq->wal) > sq->wal_limit)
		wal_truncate(sq);
	else
		sqlite3_wal_checkpoint_v2(sq->w.db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	pthread_mutex_unlock(&sq->wlock);
	return dropped;
}

/* ---- stats ---------------------------------------------------------------------------------------------- */

static int64_t count_of(struct conn *c, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int sq_stats(void *state, struct store_stats *out, struct errmsg *err)
{
	struct sq *sq = state;
	struct conn *c;
	int64_t pages, free_pages;
	int i;

	/* Counting rows scans indexes: done on a reader (a snapshot), so that a scrape of
	 * /metrics never holds the writer lock and stalls ingest. */
	c = reader_get(sq);
	out->disk_bytes = file_size(sq->file) + file_size(sq->wal) + file_size(sq->shm) +
			  file_size(sq->reserve);
	pages = count_of(c, "PRAGMA page_count");
	free_pages = count_of(c, "PRAGMA freelist_count");
	out->live_bytes = (uint64_t)((pages - free_pages) * 8192);
	out->series = (uint64_t)count_of(c, "SELECT count(*) FROM series");
	out->stacks = (uint64_t)count_of(c, "SELECT count(*) FROM stacks");
	out->frames = (uint64_t)count_of(c, "SELECT count(*) FROM frames");
	out->raw_rows = (uint64_t)count_of(c, "SELECT count(*) FROM raw");
	out->rollup_rows = (uint64_t)count_of(c, "SELECT count(*) FROM rollup");
	out->oldest = count_of(c, "SELECT coalesce(min(t), 0) FROM raw");
	out->newest = count_of(c, "SELECT coalesce(max(t), 0) FROM raw");
	reader_put(sq, c);
	pthread_mutex_lock(&sq->wlock);
	out->cache_bytes = (sq->frame_cache.cap + sq->stack_cache.cap + sq->series_cache.cap +
			    sq->dirty_cache.cap) * 16 + sq->sents_cap * sizeof(*sq->sents);
	pthread_mutex_unlock(&sq->wlock);
	pthread_mutex_lock(&sq->plock);
	for (i = 0; i < sq->nreaders; i++)
		if (!sq->readers[i].busy)
			out->cache_bytes += conn_cache_bytes(&sq->readers[i]);
	pthread_mutex_unlock(&sq->plock);
	return 0;
}

const struct store_ops store_sqlite_ops = {
	.kind = "sqlite",
	.open = sq_open,
	.close = sq_close,
	.write = sq_write,
	.maintain = sq_maintain,
	.series = sq_series,
	.merge = sq_merge,
	.timeseries = sq_timeseries,
	.stats = sq_stats,
};
