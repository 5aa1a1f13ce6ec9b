/* store_clickhouse.c: the ClickHouse backend of the profile store (store.h). The tables are
 * documented in store_clickhouse.h, the HTTP client is clickhouse.h; docs/storage.md explains
 * the design.
 *
 * Writes: a request thread turns its batches into RowBinary rows (a sample row per batch with
 * its stacks and values as arrays, and the series, stack and frame rows this server has not
 * written yet for that day), appends them to the
 * pending insert and waits. One flusher thread inserts whatever is pending (dimension rows
 * first, then the samples, whose materialized views fill the rollups) at most once per flush
 * interval, and then answers every waiting request with the outcome. So a write returns only
 * after ClickHouse accepted its rows, and thousands of small pushes become a few inserts per
 * second (ClickHouse makes a part per insert).
 *
 * Reads: the series list (labels, metadata, time span) is read and matched against the
 * selector here; samples are then read with `series IN (ids)` (or no filter when every series
 * matches), full hours from samples_1h and the edges from samples, their arrays unrolled with
 * ARRAY JOIN and summed per stack in ClickHouse. Stack and frame names are
 * resolved through a bounded cache shared by all queries. */
#include "store/store_clickhouse.h"
#include "store/clickhouse.h"
#include "store/rowbinary.h"
#include "store/selector.h"
#include "store/store.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/strtab.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY 86400
#define HOUR 3600
#define TEN_MIN 600
#define PENDING_MAX (64u << 20)       /* bytes of rows waiting for the flusher */
#define ANSWER_MAX (512u << 20)       /* bytes of one answer */
#define RESOLVE_CHUNK 8192            /* hashes per lookup statement */
#define MAX_TS_VALUES (4u << 20)      /* groups x points of one time series */
#define INIT_RETRY_NS 1000000000LL    /* schema set-up retried at most once a second */
#define SERIES_TTL_NS 1000000000LL    /* series list reused this long unless we wrote since */
#define SELECT_SETTINGS "max_query_size=104857600&wait_end_of_query=1"
#define DDL_SETTINGS "allow_experimental_low_cardinality_type=1"
/* Sums are kept as Decimal128 (rollups merge without wrapping) and answered saturated at
 * INT64_MAX, as the other backend does. */
#define SAT_SUM(col) "toUInt64(least(sum(" col "), toDecimal128(9223372036854775807, 0)))"

/* Cache keys of the rows a writer already wrote (kind, hash, day). */
enum { K_SERIES = 1, K_STACK, K_FRAME };

static const char *const fact_tables[] = { "samples", "samples_1h", "totals_10m", "spans" };
static const char *const dim_tables[] = { "series", "stacks", "frames" };
#define NFACTS (sizeof(fact_tables) / sizeof(fact_tables[0]))
#define NDIMS (sizeof(dim_tables) / sizeof(dim_tables[0]))

static int64_t now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- state ------------------------------------------------------------------------------------ */

/* Rows waiting to be inserted, and the requests waiting for them. */
struct waiter {
	struct waiter *next;
	int done, ret;
	struct errmsg err;
};

struct pending {
	struct buf samples, series, stacks, frames; /* RowBinary rows */
	size_t nsamples;
	struct dim_key { uint64_t key, val; } *keys; /* dimension rows: added to the cache of
	                                             * rows written once inserted */
	size_t nkeys, keys_cap;
	struct waiter *waiters;
};

struct ch {
	struct clickhouse *cli;
	struct clickhouse_url url;
	struct store_opts opts;
	int cluster;
	char *db;

	pthread_mutex_t init_lock;
	atomic_int ready;
	int64_t init_tried_ns;

	/* Writer: request threads fill `cur`, the flusher inserts it. */
	pthread_mutex_t wlock;
	pthread_cond_t wake, done;
	struct pending cur;
	int stop;
	pthread_t flusher;
	int flusher_started;

	/* Rows of dimension tables already written: (kind, hash, day) -> 1, or for a series
	 * (series, day) -> signature of the metadata written; bounded, cleared when full and
	 * after retention. */
	pthread_mutex_t clock;
	struct u64map written;
	size_t written_limit;

	/* The last series list answer, reused by queries for SERIES_TTL_NS as long as this
	 * server inserted nothing since (other servers' new series show up within that time). */
	pthread_mutex_t slock;
	struct buf series_ans;
	int64_t series_ns;
	uint64_t series_gen;
	atomic_uint_fast64_t write_gen; /* bumped by every insert and every dropped day */

	/* Readers' cache: stack hash -> offset in spool ([depth, frame hashes...]), frame hash ->
	 * id in names. Bounded by rcache_limit bytes (dropped whole when full). */
	pthread_mutex_t rlock;
	struct u64map stack_at, frame_at;
	uint64_t *spool;
	size_t nspool, spool_cap;
	struct strtab *names;
	size_t rcache_limit;
};

static void pending_init(struct pending *p)
{
	memset(p, 0, sizeof(*p));
	buf_init(&p->samples, BUF_UNLIMITED);
	buf_init(&p->series, BUF_UNLIMITED);
	buf_init(&p->stacks, BUF_UNLIMITED);
	buf_init(&p->frames, BUF_UNLIMITED);
}

static void pending_release(struct pending *p)
{
	buf_release(&p->samples);
	buf_release(&p->series);
	buf_release(&p->stacks);
	buf_release(&p->frames);
	xfree(p->keys);
	memset(p, 0, sizeof(*p));
}

static size_t pending_bytes(const struct pending *p)
{
	return p->samples.len + p->series.len + p->stacks.len + p->frames.len;
}

/* Table name as used in statements: "db.name". */
static char *tname(const struct ch *ch, const char *name, int local)
{
	return xasprintf("%s.%s%s", ch->db, name, local && ch->cluster ? "_local" : "");
}

/* ---- schema ------------------------------------------------------------------------------------ */

struct table_def {
	const char *name;
	const char *columns;
	const char *engine; /* after ENGINE = */
	const char *view;   /* its materialized view: what it selects from samples, or NULL */
	const char *group;  /* and how it groups (NULL: row by row) */
};

/* Rows per granule (the unit ClickHouse reads) of the tables whose rows hold arrays: a row is
 * a whole profile of hundreds or thousands of pairs, so the default 8192 rows would make a
 * query of one series among many read millions of pairs of its neighbours (measured: 40 ms
 * against 10 ms for one of 2000 series over 30 minutes). */
#define ROW_GRANULE "256"

static const struct table_def facts[] = {
	{ "samples", "series UInt64, t UInt32, stacks Array(UInt64), values Array(UInt64),"
	  " total Decimal128(0)",
	  "MergeTree PARTITION BY intDiv(t, 86400) ORDER BY (series, t) SETTINGS index_granularity = "
	  ROW_GRANULE, NULL, NULL },
	/* No GROUP BY: a flush holds about one push per series (agents push every 10 s), so a
	 * GROUP BY at insert would find little to sum; the merges sum the map per stack. */
	{ "samples_1h", "series UInt64, t UInt32, stacksMap Nested(stack UInt64, value Decimal128(0))",
	  "SummingMergeTree PARTITION BY intDiv(t, 86400) ORDER BY (series, t) SETTINGS"
	  " index_granularity = " ROW_GRANULE,
	  "series, toUInt32(intDiv(t, 3600) * 3600) AS t, stacks AS `stacksMap.stack`,"
	  " arrayMap(v -> toDecimal128(v, 0), values) AS `stacksMap.value`", NULL },
	{ "totals_10m", "series UInt64, t UInt32, total Decimal128(0)",
	  "SummingMergeTree(total) PARTITION BY intDiv(t, 86400) ORDER BY (series, t)",
	  "series, toUInt32(intDiv(t, 600) * 600) AS t, sum(total) AS total", "series, t" },
	{ "spans", "series UInt64, day UInt32, first AggregateFunction(min, UInt32),"
	  " last AggregateFunction(max, UInt32)",
	  "AggregatingMergeTree PARTITION BY day ORDER BY series",
	  "series, toUInt32(intDiv(t, 86400)) AS day, minState(t) AS first, maxState(t) AS last",
	  "series, day" },
};

static const struct table_def dims[] = {
	{ "series", "id UInt64, day UInt32, updated UInt64, type String, names Array(String),"
	  " vals Array(String), sample_rate Nullable(UInt32), units Nullable(String),"
	  " spy_name Nullable(String), aggregation Nullable(String)",
	  "MergeTree PARTITION BY day ORDER BY id", NULL, NULL },
	{ "stacks", "hash UInt64, day UInt32, frames Array(UInt64)",
	  "ReplacingMergeTree PARTITION BY day ORDER BY hash", NULL, NULL },
	{ "frames", "hash UInt64, day UInt32, name String",
	  "ReplacingMergeTree PARTITION BY day ORDER BY hash", NULL, NULL },
};

static int ddl(struct ch *ch, int node, const char *sql, struct errmsg *err)
{
	return clickhouse_exec(ch->cli, node, sql, DDL_SETTINGS, NULL, 0, NULL, err);
}

/* Read meta on node: 0 with *found = 0 (empty), 1 (ours, right version), or an error. */
static int check_meta(struct ch *ch, int node, int *found, struct errmsg *err)
{
	struct buf out = BUF_INIT(1 << 16);
	char *sql = xasprintf("SELECT key, value FROM %s.meta FORMAT TSV", ch->db);
	char *line, *save = NULL;
	int ret, magic = 0, version = -1;
	const char *cl = NULL;
	char clbuf[128] = "";

	*found = 0;
	ret = clickhouse_exec(ch->cli, node, sql, NULL, NULL, 0, &out, err);
	xfree(sql);
	if (ret < 0)
		goto cleanup;
	for (line = strtok_r(out.data ? out.data : (char *)"", "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (!tab)
			continue;
		*tab = '\0';
		if (!strcmp(line, "magic"))
			magic = !strcmp(tab + 1, STORE_CH_MAGIC) ? 1 : -1;
		else if (!strcmp(line, "version"))
			version = atoi(tab + 1);
		else if (!strcmp(line, "cluster"))
			cl = snprintf(clbuf, sizeof(clbuf), "%s", tab + 1) >= 0 ? clbuf : NULL;
	}
	if (!magic && version < 0)
		goto cleanup; /* a new database */
	if (magic < 0 || !magic) {
		ret = errmsg_set(err, -EINVAL, "database '%s' on %s is not a scorch profile store (bad magic)",
				 ch->db, clickhouse_node_name(ch->cli, (size_t)node));
		goto cleanup;
	}
	if (version != STORE_CH_VERSION) {
		ret = errmsg_set(err, -EINVAL, "store layout version %d in '%s' on %s, this scorch reads %d"
				 " (use another database name, or keep running the scorch that wrote it)",
				 version, ch->db, clickhouse_node_name(ch->cli, (size_t)node),
				 STORE_CH_VERSION);
		goto cleanup;
	}
	if (cl && strcmp(cl, ch->url.cluster ? ch->url.cluster : "")) {
		ret = errmsg_set(err, -EINVAL, "database '%s' was created %s%s%s, the URL says %s%s",
				 ch->db, *cl ? "for cluster '" : "on a single node", cl, *cl ? "'" : "",
				 ch->url.cluster ? "cluster=" : "a single node",
				 ch->url.cluster ? ch->url.cluster : "");
		goto cleanup;
	}
	*found = 1;
cleanup:
	buf_release(&out);
	return ret;
}

/* The URL must list every node of the cluster (dimension tables and retention are per node). */
static int check_cluster(struct ch *ch, struct errmsg *err)
{
	struct buf out = BUF_INIT(1 << 16);
	char *sql = xasprintf("SELECT count(DISTINCT shard_num), count() FROM system.clusters"
			      " WHERE cluster = '%s' FORMAT TSV", ch->url.cluster);
	unsigned long shards = 0, hosts = 0;
	int ret = clickhouse_exec(ch->cli, CLICKHOUSE_ANY, sql, NULL, NULL, 0, &out, err);

	xfree(sql);
	if (ret < 0)
		goto cleanup;
	if (sscanf(out.data ? out.data : "", "%lu\t%lu", &shards, &hosts) != 2 || !shards) {
		ret = errmsg_set(err, -EINVAL, "cluster '%s' is not in ClickHouse's remote_servers",
				 ch->url.cluster);
		goto cleanup;
	}
	if (hosts != shards) {
		ret = errmsg_set(err, -EINVAL, "cluster '%s' has replicas (%lu hosts for %lu shards):"
				 " the store expects one node per shard", ch->url.cluster, hosts, shards);
		goto cleanup;
	}
	if (shards != clickhouse_nodes(ch->cli))
		ret = errmsg_set(err, -EINVAL, "cluster '%s' has %lu shards but the store URL lists %zu"
				 " nodes: list the HTTP address of every shard", ch->url.cluster, shards,
				 clickhouse_nodes(ch->cli));
cleanup:
	buf_release(&out);
	return ret;
}

static int create_tables(struct ch *ch, int node, struct errmsg *err)
{
	size_t i;
	int ret = 0;
	char *sql, *local, *dist;

	for (i = 0; i < NFACTS && !ret; i++) {
		local = tname(ch, facts[i].name, 1);
		sql = xasprintf("CREATE TABLE IF NOT EXISTS %s (%s) ENGINE = %s", local, facts[i].columns,
				facts[i].engine);
		ret = ddl(ch, node, sql, err);
		xfree(sql);
		if (!ret && facts[i].view) {
			char *src = tname(ch, "samples", 1);

			sql = xasprintf("CREATE MATERIALIZED VIEW IF NOT EXISTS %s_mv TO %s AS SELECT %s FROM %s"
					"%s%s", local, local, facts[i].view, src,
					facts[i].group ? " GROUP BY " : "", facts[i].group ? facts[i].group : "");
			ret = ddl(ch, node, sql, err);
			xfree(sql);
			xfree(src);
		}
		if (!ret && ch->cluster) {
			dist = tname(ch, facts[i].name, 0);
			sql = xasprintf("CREATE TABLE IF NOT EXISTS %s AS %s ENGINE = Distributed(%s, %s, %s_local%s)",
					dist, local, ch->url.cluster, ch->db, facts[i].name,
					!strcmp(facts[i].name, "samples") ? ", series" : "");
			ret = ddl(ch, node, sql, err);
			xfree(sql);
			xfree(dist);
		}
		xfree(local);
	}
	for (i = 0; i < NDIMS && !ret; i++) {
		sql = xasprintf("CREATE TABLE IF NOT EXISTS %s.%s (%s) ENGINE = %s", ch->db, dims[i].name,
				dims[i].columns, dims[i].engine);
		ret = ddl(ch, node, sql, err);
		xfree(sql);
	}
	return ret;
}

/* Create or check the database on every node. */
static int schema_init(struct ch *ch, struct errmsg *err)
{
	size_t n = clickhouse_nodes(ch->cli), i;
	int ret = 0, found;
	char *sql;

	if (ch->cluster) {
		ret = check_cluster(ch, err);
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < n && !ret; i++) {
		int node = (int)i;

		sql = xasprintf("CREATE DATABASE IF NOT EXISTS %s", ch->db);
		ret = ddl(ch, node, sql, err);
		xfree(sql);
		if (ret < 0)
			break;
		sql = xasprintf("CREATE TABLE IF NOT EXISTS %s.meta (key String, value String) ENGINE = TinyLog",
				ch->db);
		ret = ddl(ch, node, sql, err);
		xfree(sql);
		if (ret == 0)
			ret = check_meta(ch, node, &found, err);
		if (ret == 0)
			ret = create_tables(ch, node, err);
		if (ret == 0 && !found) {
			sql = xasprintf("INSERT INTO %s.meta VALUES ('magic', '%s'), ('version', '%d'), ('cluster', '%s')",
					ch->db, STORE_CH_MAGIC, STORE_CH_VERSION,
					ch->url.cluster ? ch->url.cluster : "");
			ret = ddl(ch, node, sql, err);
			xfree(sql);
		}
	}
	return ret;
}

/* 0 once the schema is in place; -EAGAIN while ClickHouse cannot be reached (retried at most
 * once a second, so that a server started before ClickHouse recovers by itself). */
static int ensure_ready(struct ch *ch, struct errmsg *err)
{
	int ret;

	if (atomic_load(&ch->ready))
		return 0;
	pthread_mutex_lock(&ch->init_lock);
	ret = 0;
	if (!atomic_load(&ch->ready)) {
		int64_t now = now_ns(CLOCK_MONOTONIC);

		if (ch->init_tried_ns && now - ch->init_tried_ns < INIT_RETRY_NS) {
			ret = errmsg_set(err, -EAGAIN, "clickhouse is not reachable yet (%s)",
					 clickhouse_node_name(ch->cli, 0));
		} else {
			ch->init_tried_ns = now;
			ret = schema_init(ch, err);
			if (ret == 0)
				atomic_store(&ch->ready, 1);
		}
	}
	pthread_mutex_unlock(&ch->init_lock);
	return ret;
}

/* ---- writes ------------------------------------------------------------------------------------ */

static uint64_t cache_key(int kind, uint64_t hash, uint64_t day)
{
	uint64_t k = hash_combine(hash_combine((uint64_t)kind, hash), day);

	return (k == 0 || k == ~0ULL) ? 2 : k;
}

static int cache_has(struct ch *ch, uint64_t key, uint64_t val)
{
	uint64_t *slot;
	int has;

	pthread_mutex_lock(&ch->clock);
	slot = u64map_get(&ch->written, key);
	has = slot && *slot == val;
	pthread_mutex_unlock(&ch->clock);
	return has;
}

static void cache_clear(struct ch *ch)
{
	pthread_mutex_lock(&ch->clock);
	u64map_release(&ch->written);
	u64map_init(&ch->written);
	pthread_mutex_unlock(&ch->clock);
}

/* Rows of one request, built without any lock. */
struct encoder {
	struct pending rows;
	struct u64map seen; /* cache keys already in rows */
	uint64_t *fhash;    /* frame hash per batch frame index (0 = not computed) */
	size_t fhash_cap;
	uint64_t *sframes;
	size_t sframes_cap;
	struct store_pair *pairs; /* of the batch being encoded */
	size_t pairs_cap;
	struct buf key;
};

/* Add a dimension row unless this server wrote it already (or rows have it). */
static int want_dim(struct ch *ch, struct encoder *e, uint64_t key, uint64_t val)
{
	uint64_t *slot = u64map_get(&e->seen, key);

	if ((slot && *slot == val) || cache_has(ch, key, val))
		return 0;
	u64map_put(&e->seen, key, val);
	ALLOC_GROW(e->rows.keys, e->rows.nkeys + 1, e->rows.keys_cap);
	e->rows.keys[e->rows.nkeys].key = key;
	e->rows.keys[e->rows.nkeys++].val = val;
	return 1;
}

/* The writer's clock for series rows: strictly increasing, so that the newest metadata wins
 * even between rows written within one clock tick. */
static uint64_t series_clock(void)
{
	static atomic_uint_fast64_t last;
	uint64_t now = (uint64_t)now_ns(CLOCK_REALTIME), prev = atomic_load(&last), next;

	do {
		next = now > prev ? now : prev + 1;
	} while (!atomic_compare_exchange_weak(&last, &prev, next));
	return next;
}

static uint64_t meta_sig(const struct store_batch *b)
{
	uint64_t h = hash_combine(0x5e7, b->sample_rate);

	h = hash_combine(h, b->units ? hash_stable(b->units, strlen(b->units)) : 1);
	h = hash_combine(h, b->spy_name ? hash_stable(b->spy_name, strlen(b->spy_name)) : 1);
	return hash_combine(h, b->aggregation ? hash_stable(b->aggregation, strlen(b->aggregation)) : 1);
}

static void put_nrate(struct buf *b, uint32_t rate)
{
	if (!rate) {
		rowbinary_put_u8(b, 1);
		return;
	}
	rowbinary_put_u8(b, 0);
	rowbinary_put_u32(b, rate);
}

static int encode_batch(struct ch *ch, struct encoder *e, const struct store_batch *b,
			struct errmsg *err)
{
	uint64_t series, day = (uint64_t)b->from / DAY, sday, key, lo = 0, hi = 0;
	size_t i, j, np = 0;

	for (i = 0; i < b->nsamples && !b->samples[i].value; i++)
		;
	if (i == b->nsamples)
		return 0; /* an empty profile stores nothing, not even its series */
	if (b->from > (int64_t)UINT32_MAX - DAY)
		return errmsg_set(err, -EINVAL, "batch time %lld is beyond what the clickhouse store keeps"
				  " (unix seconds up to 2^32)", (long long)b->from);
	/* The series key as in store_sqlite.h; its stable hash is the series id. */
	buf_reset(&e->key);
	buf_append(&e->key, b->type, strlen(b->type) + 1);
	for (i = 0; i < b->nlabels; i++) {
		buf_append(&e->key, b->labels[i].name, strlen(b->labels[i].name) + 1);
		buf_append(&e->key, b->labels[i].value, strlen(b->labels[i].value) + 1);
	}
	series = hash_stable(e->key.data, e->key.len);
	/* A series row lives in the partition of the day it is written (or of its batch, when
	 * that is later): the newest metadata stays as long as the series has data, whatever the
	 * order of the batch times; a series whose samples are all dropped has no spans left and
	 * is no longer listed. */
	sday = (uint64_t)time(NULL) / DAY;
	if (sday < day)
		sday = day;
	key = cache_key(K_SERIES, series, sday);
	if (want_dim(ch, e, key, meta_sig(b))) {
		struct buf *r = &e->rows.series;

		rowbinary_put_u64(r, series);
		rowbinary_put_u32(r, (uint32_t)sday);
		rowbinary_put_u64(r, series_clock());
		rowbinary_put_str(r, b->type, strlen(b->type));
		rowbinary_put_len(r, b->nlabels);
		for (i = 0; i < b->nlabels; i++)
			rowbinary_put_str(r, b->labels[i].name, strlen(b->labels[i].name));
		rowbinary_put_len(r, b->nlabels);
		for (i = 0; i < b->nlabels; i++)
			rowbinary_put_str(r, b->labels[i].value, strlen(b->labels[i].value));
		put_nrate(r, b->sample_rate);
		rowbinary_put_nstr(r, b->units);
		rowbinary_put_nstr(r, b->spy_name);
		rowbinary_put_nstr(r, b->aggregation);
	}
	ALLOC_GROW(e->fhash, b->nframe_names + 1, e->fhash_cap);
	memset(e->fhash, 0, (b->nframe_names + 1) * sizeof(*e->fhash));
	for (i = 0; i < b->nsamples; i++) {
		const struct store_sample *sm = &b->samples[i];
		uint64_t stack;

		if (!sm->value)
			continue;
		ALLOC_GROW(e->sframes, sm->nframes + 1, e->sframes_cap);
		for (j = 0; j < sm->nframes; j++) {
			uint32_t idx = sm->frames[j];

			if (!e->fhash[idx]) {
				const char *name = b->frame_names[idx];
				size_t len = strlen(name);

				e->fhash[idx] = hash_stable(name, len);
				if (want_dim(ch, e, cache_key(K_FRAME, e->fhash[idx], day), 1)) {
					rowbinary_put_u64(&e->rows.frames, e->fhash[idx]);
					rowbinary_put_u32(&e->rows.frames, (uint32_t)day);
					rowbinary_put_str(&e->rows.frames, name, len);
				}
			}
			e->sframes[j] = e->fhash[idx];
		}
		stack = hash_stable(e->sframes, sm->nframes * sizeof(uint64_t));
		if (want_dim(ch, e, cache_key(K_STACK, stack, day), 1)) {
			rowbinary_put_u64(&e->rows.stacks, stack);
			rowbinary_put_u32(&e->rows.stacks, (uint32_t)day);
			rowbinary_put_len(&e->rows.stacks, sm->nframes);
			for (j = 0; j < sm->nframes; j++)
				rowbinary_put_u64(&e->rows.stacks, e->sframes[j]);
		}
		ALLOC_GROW(e->pairs, np + 1, e->pairs_cap);
		e->pairs[np].stack = stack;
		e->pairs[np++].value = sm->value;
	}
	/* One row per batch: its stacks sorted and unique (a stack given twice is summed,
	 * saturated as the other backend does), their values, and the exact total (Decimal128:
	 * a thousand values near INT64_MAX do not fit 64 bits). */
	np = store_pairs_merge(e->pairs, np);
	rowbinary_put_u64(&e->rows.samples, series);
	rowbinary_put_u32(&e->rows.samples, (uint32_t)b->from);
	rowbinary_put_len(&e->rows.samples, np);
	for (i = 0; i < np; i++)
		rowbinary_put_u64(&e->rows.samples, e->pairs[i].stack);
	rowbinary_put_len(&e->rows.samples, np);
	for (i = 0; i < np; i++) {
		uint64_t v = (uint64_t)e->pairs[i].value;

		rowbinary_put_u64(&e->rows.samples, v);
		lo += v;
		hi += lo < v;
	}
	rowbinary_put_u64(&e->rows.samples, lo); /* Decimal128: 16 bytes, little-endian */
	rowbinary_put_u64(&e->rows.samples, hi);
	e->rows.nsamples += np;
	return 0;
}

static int insert_rows(struct ch *ch, int node, const char *table, int local, const struct buf *rows,
		       const char *settings, struct errmsg *err)
{
	char *t, *sql;
	int ret;

	if (!rows->len)
		return 0;
	t = tname(ch, table, local);
	sql = xasprintf("INSERT INTO %s FORMAT RowBinary", t);
	ret = clickhouse_exec(ch->cli, node, sql, settings, rows->data, rows->len, NULL, err);
	xfree(sql);
	xfree(t);
	return ret;
}

/* Insert the taken rows: dimension rows on every node first (a reader must be able to resolve
 * every sample it sees), then the samples (the materialized views fill the rollups). */
static int flush_rows(struct ch *ch, struct pending *p, struct errmsg *err)
{
	size_t n = clickhouse_nodes(ch->cli), i;
	int ret = ensure_ready(ch, err);

	for (i = 0; i < n && ret == 0; i++) {
		ret = insert_rows(ch, (int)i, "frames", 0, &p->frames, NULL, err);
		if (ret == 0)
			ret = insert_rows(ch, (int)i, "stacks", 0, &p->stacks, NULL, err);
		if (ret == 0)
			ret = insert_rows(ch, (int)i, "series", 0, &p->series, NULL, err);
	}
	if (ret == 0)
		ret = insert_rows(ch, CLICKHOUSE_ANY, "samples", 0, &p->samples,
				  ch->cluster ? "insert_distributed_sync=1&max_insert_block_size=16777216" :
						"max_insert_block_size=16777216", err);
	return ret;
}

static void *flusher_main(void *arg)
{
	struct ch *ch = arg;
	int64_t last = 0;

	pthread_mutex_lock(&ch->wlock);
	for (;;) {
		struct pending take;
		struct waiter *w;
		struct errmsg err = { "" };
		int64_t wait_ns;
		size_t i;
		int ret;

		while (!ch->cur.waiters && !ch->stop)
			pthread_cond_wait(&ch->wake, &ch->wlock);
		if (!ch->cur.waiters)
			break;
		/* One insert per flush interval: what arrives meanwhile goes into the next one. */
		wait_ns = last + (int64_t)ch->url.flush_ms * 1000000LL - now_ns(CLOCK_MONOTONIC);
		if (wait_ns > 0 && !ch->stop) {
			struct timespec ts = { (time_t)(wait_ns / 1000000000LL), (long)(wait_ns % 1000000000LL) };

			pthread_mutex_unlock(&ch->wlock);
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&ch->wlock);
		}
		take = ch->cur;
		pending_init(&ch->cur);
		pthread_cond_broadcast(&ch->done); /* room for writers held back by PENDING_MAX */
		pthread_mutex_unlock(&ch->wlock);

		last = now_ns(CLOCK_MONOTONIC);
		ret = flush_rows(ch, &take, &err);
		atomic_fetch_add(&ch->write_gen, 1);
		if (ret == 0) {
			pthread_mutex_lock(&ch->clock);
			for (i = 0; i < take.nkeys; i++) {
				if (ch->written.count >= ch->written_limit) {
					u64map_release(&ch->written);
					u64map_init(&ch->written);
				}
				u64map_put(&ch->written, take.keys[i].key, take.keys[i].val);
			}
			pthread_mutex_unlock(&ch->clock);
		}

		pthread_mutex_lock(&ch->wlock);
		for (w = take.waiters; w; w = w->next) {
			w->ret = ret;
			if (ret < 0)
				w->err = err;
			w->done = 1;
		}
		pthread_cond_broadcast(&ch->done);
		pending_release(&take);
	}
	pthread_mutex_unlock(&ch->wlock);
	return NULL;
}

static int append_buf(struct buf *to, const struct buf *from)
{
	return from->len ? buf_append(to, from->data, from->len) : 0;
}

static int ch_write(void *state, const struct store_batch *batches, size_t n, struct errmsg *err)
{
	struct ch *ch = state;
	struct encoder e;
	struct waiter w;
	size_t i;
	int ret = 0;

	memset(&e, 0, sizeof(e));
	memset(&w, 0, sizeof(w));
	pending_init(&e.rows);
	u64map_init(&e.seen);
	buf_init(&e.key, BUF_UNLIMITED);
	for (i = 0; i < n && ret == 0; i++)
		ret = encode_batch(ch, &e, &batches[i], err);
	if (ret < 0 || !e.rows.nsamples)
		goto cleanup;

	pthread_mutex_lock(&ch->wlock);
	while (!ch->stop && ch->cur.waiters && pending_bytes(&ch->cur) + pending_bytes(&e.rows) > PENDING_MAX)
		pthread_cond_wait(&ch->done, &ch->wlock);
	if (ch->stop) {
		pthread_mutex_unlock(&ch->wlock);
		ret = errmsg_set(err, -EAGAIN, "the store is closing");
		goto cleanup;
	}
	append_buf(&ch->cur.samples, &e.rows.samples);
	append_buf(&ch->cur.series, &e.rows.series);
	append_buf(&ch->cur.stacks, &e.rows.stacks);
	append_buf(&ch->cur.frames, &e.rows.frames);
	ch->cur.nsamples += e.rows.nsamples;
	ALLOC_GROW(ch->cur.keys, ch->cur.nkeys + e.rows.nkeys + 1, ch->cur.keys_cap);
	if (e.rows.nkeys)
		memcpy(ch->cur.keys + ch->cur.nkeys, e.rows.keys, e.rows.nkeys * sizeof(*e.rows.keys));
	ch->cur.nkeys += e.rows.nkeys;
	w.next = ch->cur.waiters;
	ch->cur.waiters = &w;
	pthread_cond_signal(&ch->wake);
	while (!w.done)
		pthread_cond_wait(&ch->done, &ch->wlock);
	pthread_mutex_unlock(&ch->wlock);
	ret = w.ret;
	if (ret < 0 && err)
		*err = w.err;
cleanup:
	pending_release(&e.rows);
	u64map_release(&e.seen);
	xfree(e.fhash);
	xfree(e.sframes);
	xfree(e.pairs);
	buf_release(&e.key);
	return ret;
}

/* ---- answers --------------------------------------------------------------------------------- */

struct sel_series {
	uint64_t id;
	int64_t first_t, last_t;
	uint32_t rate;
	char *type, *units, *spy, *agg, *group; /* owned */
};

struct sel_list {
	struct sel_series *v;
	size_t n, cap;
	size_t total; /* series in the store (matching or not) */
	const char *group_by;
};

static void sel_list_release(struct sel_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		xfree(l->v[i].type);
		xfree(l->v[i].units);
		xfree(l->v[i].spy);
		xfree(l->v[i].agg);
		xfree(l->v[i].group);
	}
	xfree(l->v);
	memset(l, 0, sizeof(*l));
}

/* Walk the rows of the series query: id, type, names, vals, rate, units, spy, agg, first, last.
 * Calls visit for those matching q (NULL q: all). */
static int decode_series(const void *data, size_t len, const struct store_query *q,
			 store_series_fn visit, void *arg, size_t *total, struct errmsg *err)
{
	struct rowbinary r;
	struct store_label labels[STORE_MAX_LABELS];
	char *strs[2 * STORE_MAX_LABELS + 5];
	int ret = 0;

	rowbinary_init(&r, data, len);
	*total = 0;
	while (rowbinary_more(&r) && !ret) {
		struct store_series_info info;
		size_t nn, nv, i, k = 0, slen;
		const char *s;
		uint64_t id;
		uint32_t rate, first, last;

		memset(&info, 0, sizeof(info));
		rowbinary_get_u64(&r, &id);
		if (rowbinary_get_str(&r, STORE_MAX_TYPE, &s, &slen) < 0)
			break;
		strs[k++] = xstrndup(s, slen);
		if (rowbinary_get_len(&r, STORE_MAX_LABELS, &nn) < 0)
			goto bad;
		for (i = 0; i < nn; i++) {
			if (rowbinary_get_str(&r, STORE_MAX_LABEL_NAME, &s, &slen) < 0)
				goto bad;
			strs[k++] = xstrndup(s, slen);
		}
		if (rowbinary_get_len(&r, STORE_MAX_LABELS, &nv) < 0 || nv != nn)
			goto bad;
		for (i = 0; i < nv; i++) {
			if (rowbinary_get_str(&r, STORE_MAX_LABEL_VALUE, &s, &slen) < 0)
				goto bad;
			strs[k++] = xstrndup(s, slen);
		}
		rowbinary_get_u32(&r, &rate);
		for (i = 0; i < 3; i++) {
			if (rowbinary_get_str(&r, STORE_MAX_META, &s, &slen) < 0)
				goto bad;
			strs[k++] = xstrndup(s, slen);
		}
		rowbinary_get_u32(&r, &first);
		if (rowbinary_get_u32(&r, &last) < 0)
			goto bad;
		(*total)++;
		info.id = id;
		info.type = strs[0];
		for (i = 0; i < nn; i++) {
			labels[i].name = strs[1 + i];
			labels[i].value = strs[1 + nn + i];
		}
		info.labels = labels;
		info.nlabels = nn;
		info.sample_rate = rate;
		info.units = strs[1 + 2 * nn];
		info.spy_name = strs[2 + 2 * nn];
		info.aggregation = strs[3 + 2 * nn];
		info.first_time = first;
		info.last_time = last;
		if ((!q || !(q->from || q->until) ||
		     (info.last_time >= q->from && info.first_time < q->until)) &&
		    (!q || selector_match(q->sel, info.type, labels, nn)) && visit)
			ret = visit(&info, arg);
		for (i = 0; i < k; i++)
			xfree(strs[i]);
		continue;
bad:
		for (i = 0; i < k; i++)
			xfree(strs[i]);
		break;
	}
	if (r.bad)
		return errmsg_set(err, -EIO, "malformed series list from clickhouse");
	return ret;
}

static int series_query(struct ch *ch, struct buf *out, struct errmsg *err)
{
	uint64_t gen = atomic_load(&ch->write_gen);
	int64_t now = now_ns(CLOCK_MONOTONIC);
	char *spans, *sql;
	int ret;

	pthread_mutex_lock(&ch->slock);
	if (ch->series_ns && now - ch->series_ns < SERIES_TTL_NS && ch->series_gen == gen) {
		ret = buf_append(out, ch->series_ans.data ? ch->series_ans.data : "", ch->series_ans.len);
		pthread_mutex_unlock(&ch->slock);
		if (ret < 0)
			return errmsg_set(err, ret, "series list too large");
		return 0;
	}
	pthread_mutex_unlock(&ch->slock);
	spans = tname(ch, "spans", 0);
	sql = xasprintf(
		"SELECT id, type, names, vals, rate, units, spy, agg, first, last FROM"
		" (SELECT id, any(type) AS type, any(names) AS names, any(vals) AS vals,"
		"  ifNull(argMaxIf(sample_rate, updated, isNotNull(sample_rate)), 100) AS rate,"
		"  ifNull(argMaxIf(units, updated, isNotNull(units)), 'samples') AS units,"
		"  ifNull(argMaxIf(spy_name, updated, isNotNull(spy_name)), '') AS spy,"
		"  ifNull(argMaxIf(aggregation, updated, isNotNull(aggregation)), 'sum') AS agg"
		"  FROM %s.series GROUP BY id)"
		" ANY INNER JOIN"
		" (SELECT series AS id, minMerge(first) AS first, maxMerge(last) AS last FROM %s GROUP BY series)"
		" USING id FORMAT RowBinary", ch->db, spans);
	ret = clickhouse_exec(ch->cli, CLICKHOUSE_ANY, sql, SELECT_SETTINGS, NULL, 0, out, err);
	xfree(sql);
	xfree(spans);
	if (ret == 0) {
		pthread_mutex_lock(&ch->slock);
		buf_reset(&ch->series_ans);
		if (buf_append(&ch->series_ans, out->data ? out->data : "", out->len) == 0) {
			ch->series_ns = now;
			ch->series_gen = gen;
		} else {
			ch->series_ns = 0;
		}
		pthread_mutex_unlock(&ch->slock);
	}
	return ret;
}

static int ch_series(void *state, const struct store_query *q, store_series_fn fn, void *arg,
		     struct errmsg *err)
{
	struct ch *ch = state;
	struct buf out = BUF_INIT(ANSWER_MAX);
	size_t total;
	int ret = ensure_ready(ch, err);

	if (ret == 0)
		ret = series_query(ch, &out, err);
	if (ret == 0)
		ret = decode_series(out.data, out.len, q, fn, arg, &total, err);
	buf_release(&out);
	return ret;
}

static int collect_series(const struct store_series_info *info, void *arg)
{
	struct sel_list *l = arg;
	struct sel_series *s;

	ALLOC_GROW(l->v, l->n + 1, l->cap);
	s = &l->v[l->n++];
	memset(s, 0, sizeof(*s));
	s->id = info->id;
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

/* The selected series, and in *filter the SQL condition selecting their samples ("" when every
 * series of the store is selected). */
static int select_series(struct ch *ch, const struct store_query *q, struct sel_list *sel,
			 struct buf *filter, struct errmsg *err)
{
	struct buf out = BUF_INIT(ANSWER_MAX);
	size_t i;
	int ret = series_query(ch, &out, err);

	if (ret == 0)
		ret = decode_series(out.data, out.len, q, collect_series, sel, &sel->total, err);
	buf_release(&out);
	if (ret < 0)
		return ret;
	buf_reset(filter);
	if (sel->n == sel->total)
		return 0; /* every series: the time condition does the rest */
	buf_puts(filter, "series IN (");
	for (i = 0; i < sel->n; i++)
		buf_printf(filter, "%s%" PRIu64, i ? "," : "", sel->v[i].id);
	buf_puts(filter, ") AND ");
	return 0;
}

/* ---- merge --------------------------------------------------------------------------------- */

static int decode_pairs(const void *data, size_t len, struct store_pair **out, size_t *n, size_t *cap,
			struct errmsg *err)
{
	struct rowbinary r;

	rowbinary_init(&r, data, len);
	while (rowbinary_more(&r)) {
		uint64_t stack, v;

		rowbinary_get_u64(&r, &stack);
		if (rowbinary_get_u64(&r, &v) < 0)
			break;
		ALLOC_GROW(*out, *n + 1, *cap);
		(*out)[*n].stack = stack;
		(*out)[*n].value = v > INT64_MAX ? INT64_MAX : (int64_t)v;
		(*n)++;
	}
	if (r.bad)
		return errmsg_set(err, -EIO, "malformed merge answer from clickhouse");
	return 0;
}

/* The time condition of a read over [from, until) split at the inner aligned span [a, b): the
 * coarse table serves [a, b), the fine one the edges. Writes the two conditions. */
static void split_range(int64_t from, int64_t until, int64_t size, int64_t *a, int64_t *b)
{
	int64_t x = (from + size - 1) / size * size, y = until / size * size;

	if (from < 0)
		x = 0;
	if (x >= y) {
		x = y = until; /* no whole bucket: the fine table only */
	}
	*a = x;
	*b = y;
}

static void fine_condition(struct buf *sql, int64_t from, int64_t until, int64_t a, int64_t b)
{
	if (a >= b)
		buf_printf(sql, "(t >= %lld AND t < %lld)", (long long)from, (long long)until);
	else
		buf_printf(sql, "((t >= %lld AND t < %lld) OR (t >= %lld AND t < %lld))",
			   (long long)from, (long long)a, (long long)b, (long long)until);
}

static int64_t clamp_t(int64_t t)
{
	if (t < 0)
		return 0;
	if (t > (int64_t)UINT32_MAX)
		return (int64_t)UINT32_MAX + 1;
	return t;
}

/* Stacks and frames unknown to the cache, fetched into the query's own maps. */
struct resolve {
	struct u64map stack_at; /* stack hash -> offset in pool */
	uint64_t *pool;
	size_t npool, pool_cap;
	struct u64map frame_at; /* frame hash -> id in p->names */
};

static int decode_stacks(const void *data, size_t len, struct resolve *rs, struct errmsg *err)
{
	struct rowbinary r;

	rowbinary_init(&r, data, len);
	while (rowbinary_more(&r)) {
		uint64_t hash, f;
		size_t n, i, off;

		rowbinary_get_u64(&r, &hash);
		if (rowbinary_get_len(&r, STORE_MAX_DEPTH, &n) < 0)
			break;
		off = rs->npool;
		ALLOC_GROW(rs->pool, rs->npool + n + 1, rs->pool_cap);
		rs->pool[off] = n;
		for (i = 0; i < n; i++) {
			if (rowbinary_get_u64(&r, &f) < 0)
				break;
			rs->pool[off + 1 + i] = f;
		}
		if (r.bad)
			break;
		rs->npool += n + 1;
		if (hash && hash != ~0ULL)
			u64map_put(&rs->stack_at, hash, off);
	}
	if (r.bad)
		return errmsg_set(err, -EIO, "malformed stack list from clickhouse");
	return 0;
}

static int decode_frames(const void *data, size_t len, struct resolve *rs, struct strtab *names,
			 struct errmsg *err)
{
	struct rowbinary r;

	rowbinary_init(&r, data, len);
	while (rowbinary_more(&r)) {
		uint64_t hash;
		const char *s;
		size_t n;

		rowbinary_get_u64(&r, &hash);
		if (rowbinary_get_str(&r, STORE_MAX_FRAME, &s, &n) < 0)
			break;
		if (hash && hash != ~0ULL)
			u64map_put(&rs->frame_at, hash, strtab_intern_len(names, s, n));
	}
	if (r.bad)
		return errmsg_set(err, -EIO, "malformed frame list from clickhouse");
	return 0;
}

/* Fetch rows of `table` (stacks or frames) for the hashes in want[0..n). */
static int fetch_by_hash(struct ch *ch, const char *table, const char *cols, const uint64_t *want,
			 size_t n, struct buf *out, struct errmsg *err)
{
	struct buf sql = BUF_INIT(BUF_UNLIMITED);
	size_t i, start;
	int ret = 0;

	for (start = 0; start < n && ret == 0; start += RESOLVE_CHUNK) {
		size_t end = start + RESOLVE_CHUNK < n ? start + RESOLVE_CHUNK : n;

		buf_reset(&sql);
		buf_printf(&sql, "SELECT hash, %s FROM %s.%s WHERE hash IN (", cols, ch->db, table);
		for (i = start; i < end; i++)
			buf_printf(&sql, "%s%" PRIu64, i > start ? "," : "", want[i]);
		buf_puts(&sql, ") GROUP BY hash FORMAT RowBinary");
		ret = clickhouse_exec(ch->cli, CLICKHOUSE_ANY, sql.data, SELECT_SETTINGS, NULL, 0, out, err);
	}
	buf_release(&sql);
	return ret;
}

static void rcache_clear_locked(struct ch *ch)
{
	u64map_release(&ch->stack_at);
	u64map_init(&ch->stack_at);
	u64map_release(&ch->frame_at);
	u64map_init(&ch->frame_at);
	ch->nspool = 0;
	strtab_free(ch->names);
	ch->names = strtab_new();
}

static size_t rcache_bytes_locked(const struct ch *ch)
{
	return ch->spool_cap * sizeof(uint64_t) + strtab_bytes(ch->names) +
	       (ch->stack_at.cap + ch->frame_at.cap) * 16;
}

/* Resolve pairs[0..n) (n <= max stacks kept) into p: frame hashes through the shared cache,
 * then the missing ones from ClickHouse. */
static int resolve_into(struct ch *ch, const struct store_pair *pairs, size_t n, size_t max,
			struct store_profile *p, struct errmsg *err)
{
	struct resolve rs;
	struct buf out = BUF_INIT(ANSWER_MAX);
	uint64_t *want = NULL;
	uint32_t *ids = NULL;
	size_t nwant = 0, want_cap = 0, i, j, ids_cap = 0, kept = n < max ? n : max;
	struct u64map asked;
	int ret = 0;

	memset(&rs, 0, sizeof(rs));
	u64map_init(&rs.stack_at);
	u64map_init(&rs.frame_at);
	u64map_init(&asked);
	/* 1. stacks: copy known ones from the cache, list the others */
	pthread_mutex_lock(&ch->rlock);
	for (i = 0; i < kept; i++) {
		uint64_t *slot = u64map_get(&ch->stack_at, pairs[i].stack), off, d;

		if (slot) {
			off = *slot;
			d = ch->spool[off];
			ALLOC_GROW(rs.pool, rs.npool + d + 1, rs.pool_cap);
			memcpy(rs.pool + rs.npool, ch->spool + off, (d + 1) * sizeof(uint64_t));
			u64map_put(&rs.stack_at, pairs[i].stack, rs.npool);
			rs.npool += d + 1;
		} else if (pairs[i].stack && pairs[i].stack != ~0ULL) {
			ALLOC_GROW(want, nwant + 1, want_cap);
			want[nwant++] = pairs[i].stack;
		}
	}
	pthread_mutex_unlock(&ch->rlock);
	if (nwant) {
		ret = fetch_by_hash(ch, "stacks", "any(frames)", want, nwant, &out, err);
		if (ret == 0)
			ret = decode_stacks(out.data, out.len, &rs, err);
		if (ret < 0)
			goto cleanup;
	}
	/* 2. frames of the stacks kept */
	nwant = 0;
	buf_reset(&out);
	pthread_mutex_lock(&ch->rlock);
	for (i = 0; i < rs.npool; i += rs.pool[i] + 1) {
		for (j = 0; j < rs.pool[i]; j++) {
			uint64_t f = rs.pool[i + 1 + j], *slot;

			if (!f || f == ~0ULL || u64map_get(&rs.frame_at, f) || u64map_get(&asked, f))
				continue;
			slot = u64map_get(&ch->frame_at, f);
			if (slot) {
				u64map_put(&rs.frame_at, f,
					   strtab_intern(p->names, strtab_get(ch->names, (uint32_t)*slot)));
			} else {
				u64map_put(&asked, f, 1);
				ALLOC_GROW(want, nwant + 1, want_cap);
				want[nwant++] = f;
			}
		}
	}
	pthread_mutex_unlock(&ch->rlock);
	if (nwant) {
		ret = fetch_by_hash(ch, "frames", "any(name)", want, nwant, &out, err);
		if (ret == 0)
			ret = decode_frames(out.data, out.len, &rs, p->names, err);
		if (ret < 0)
			goto cleanup;
	}
	/* 3. the profile, heaviest first, within the frame cap */
	for (i = 0; i < n; i++) {
		uint64_t *slot = i < kept ? u64map_get(&rs.stack_at, pairs[i].stack) : NULL;
		uint64_t off, d;

		if (i < kept && !slot) {
			ret = errmsg_set(err, -EIO, "stack %016" PRIx64 " is missing from %s.stacks",
					 pairs[i].stack, ch->db);
			goto cleanup;
		}
		d = slot ? rs.pool[*slot] : 0;
		if (i >= kept || p->nframes + d > STORE_MAX_MERGE_FRAMES) {
			for (; i < n; i++) {
				p->other = store_sat_add(p->other, pairs[i].value);
				p->other_stacks++;
			}
			break;
		}
		off = *slot;
		ALLOC_GROW(ids, d + 1, ids_cap);
		for (j = 0; j < d; j++) {
			uint64_t *fs = u64map_get(&rs.frame_at, rs.pool[off + 1 + j]);

			if (!fs) {
				ret = errmsg_set(err, -EIO, "frame %016" PRIx64 " is missing from %s.frames",
						 rs.pool[off + 1 + j], ch->db);
				goto cleanup;
			}
			ids[j] = (uint32_t)*fs;
		}
		store_profile_add_ids(p, ids, d, pairs[i].value);
	}
	/* 4. remember what was fetched */
	pthread_mutex_lock(&ch->rlock);
	if (rcache_bytes_locked(ch) > ch->rcache_limit)
		rcache_clear_locked(ch);
	{
		size_t it = 0;
		uint64_t k, v;

		while (u64map_next(&rs.stack_at, &it, &k, &v)) {
			uint64_t d = rs.pool[v];

			if (u64map_get(&ch->stack_at, k))
				continue;
			ALLOC_GROW(ch->spool, ch->nspool + d + 1, ch->spool_cap);
			memcpy(ch->spool + ch->nspool, rs.pool + v, (d + 1) * sizeof(uint64_t));
			u64map_put(&ch->stack_at, k, ch->nspool);
			ch->nspool += d + 1;
		}
		it = 0;
		while (u64map_next(&rs.frame_at, &it, &k, &v))
			if (!u64map_get(&ch->frame_at, k))
				u64map_put(&ch->frame_at, k, strtab_intern(ch->names, strtab_get(p->names, (uint32_t)v)));
	}
	pthread_mutex_unlock(&ch->rlock);
cleanup:
	u64map_release(&rs.stack_at);
	u64map_release(&rs.frame_at);
	u64map_release(&asked);
	xfree(rs.pool);
	xfree(want);
	xfree(ids);
	buf_release(&out);
	return ret;
}

static void copy_meta(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

static int ch_merge(void *state, const struct store_query *q, size_t max_stacks,
		    struct store_profile **out, struct errmsg *err)
{
	struct ch *ch = state;
	struct sel_list sel = { 0 };
	struct buf filter = BUF_INIT(BUF_UNLIMITED), sql = BUF_INIT(BUF_UNLIMITED);
	struct buf ans = BUF_INIT(ANSWER_MAX);
	struct store_profile *p = store_profile_new();
	const struct sel_series *newest = NULL;
	struct store_pair *pairs = NULL;
	size_t npairs = 0, pairs_cap = 0, i;
	int64_t from = clamp_t(q->from), until = clamp_t(q->until), a, b;
	char *raw = tname(ch, "samples", 0), *hourly = tname(ch, "samples_1h", 0);
	int ret = ensure_ready(ch, err);

	if (ret < 0)
		goto cleanup;
	ret = select_series(ch, q, &sel, &filter, err);
	if (ret < 0 || !sel.n || from >= until)
		goto done;
	split_range(from, until, HOUR, &a, &b);
	buf_puts(&sql, "SELECT stack, " SAT_SUM("value") " AS v FROM (");
	if (a < b)
		buf_printf(&sql, "SELECT stack, value FROM %s ARRAY JOIN stacksMap.stack AS stack,"
			   " stacksMap.value AS value WHERE %st >= %lld AND t < %lld UNION ALL ",
			   hourly, filter.data ? filter.data : "", (long long)a, (long long)b);
	buf_printf(&sql, "SELECT stack, toDecimal128(v, 0) AS value FROM %s ARRAY JOIN stacks AS stack,"
		   " values AS v WHERE %s", raw, filter.data ? filter.data : "");
	fine_condition(&sql, from, until, a, b);
	buf_printf(&sql, ") GROUP BY stack HAVING v > 0 ORDER BY v DESC, stack LIMIT %d FORMAT RowBinary",
		   STORE_MAX_MERGE_STACKS);
	ret = clickhouse_exec(ch->cli, CLICKHOUSE_ANY, sql.data, SELECT_SETTINGS, NULL, 0, &ans, err);
	if (ret == 0)
		ret = decode_pairs(ans.data, ans.len, &pairs, &npairs, &pairs_cap, err);
	if (ret < 0)
		goto cleanup;
	if (npairs == STORE_MAX_MERGE_STACKS) {
		/* More distinct stacks than a merge holds: count the rest as `other`. */
		uint64_t total = 0, distinct = 0;
		int64_t listed = 0;
		char *cut = strstr(sql.data, ") GROUP BY");

		*cut = '\0';
		buf_reset(&ans);
		{
			char *q2 = xasprintf("SELECT " SAT_SUM("value") ", uniqExact(stack) FROM (%s) FORMAT TSV",
					     strstr(sql.data, "FROM (") + 6);

			ret = clickhouse_exec(ch->cli, CLICKHOUSE_ANY, q2, SELECT_SETTINGS, NULL, 0, &ans, err);
			xfree(q2);
		}
		if (ret < 0)
			goto cleanup;
		if (sscanf(ans.data ? ans.data : "", "%" SCNu64 "\t%" SCNu64, &total, &distinct) == 2) {
			for (i = 0; i < npairs; i++)
				listed = store_sat_add(listed, pairs[i].value);
			if (total > (uint64_t)listed)
				p->other = store_sat_add(p->other, total - (uint64_t)listed > INT64_MAX ?
								   INT64_MAX : (int64_t)(total - (uint64_t)listed));
			if (distinct > npairs)
				p->other_stacks += distinct - npairs;
		}
	}
	ret = resolve_into(ch, pairs, npairs, max_stacks, p, err);
	if (ret < 0)
		goto cleanup;
done:
	if (ret < 0)
		goto cleanup;
	p->total = store_sat_add(p->total, p->other);
	store_profile_truncate(p, 0);
	p->nseries = sel.n;
	for (i = 0; i < sel.n; i++)
		if (!newest || sel.v[i].last_t > newest->last_t)
			newest = &sel.v[i];
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
	store_profile_free(p);
	sel_list_release(&sel);
	buf_release(&filter);
	buf_release(&sql);
	buf_release(&ans);
	xfree(pairs);
	xfree(raw);
	xfree(hourly);
	return ret;
}

/* ---- time series ----------------------------------------------------------------------------- */

struct ts_sink {
	struct store_timeseries *ts;
	struct u64map series_group; /* series id -> group index + 1 */
};

static int decode_ts(const void *data, size_t len, struct ts_sink *sink, struct errmsg *err)
{
	struct rowbinary r;

	rowbinary_init(&r, data, len);
	while (rowbinary_more(&r)) {
		uint64_t series, v, *slot;
		uint32_t k;

		rowbinary_get_u64(&r, &series);
		rowbinary_get_u32(&r, &k);
		if (rowbinary_get_u64(&r, &v) < 0)
			break;
		slot = series && series != ~0ULL ? u64map_get(&sink->series_group, series) : NULL;
		if (!slot || !sink->ts || k >= sink->ts->npoints)
			continue;
		{
			struct store_ts_group *g = &sink->ts->groups[*slot - 1];

			g->values[k] = store_sat_add(g->values[k], v > INT64_MAX ? INT64_MAX : (int64_t)v);
		}
	}
	if (r.bad)
		return errmsg_set(err, -EIO, "malformed time series from clickhouse");
	return 0;
}

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct store_ts_group *)a)->group, ((const struct store_ts_group *)b)->group);
}

static int ch_timeseries(void *state, const struct store_query *q, int64_t step, const char *group_by,
			 struct store_timeseries **out, struct errmsg *err)
{
	struct ch *ch = state;
	struct sel_list sel = { 0 };
	struct store_timeseries *ts = xcalloc(1, sizeof(*ts));
	struct strtab *gnames = strtab_new();
	struct u64map gindex; /* group name id + 1 -> index + 1 */
	struct ts_sink sink;
	struct buf filter = BUF_INIT(BUF_UNLIMITED), sql = BUF_INIT(BUF_UNLIMITED);
	struct buf ans = BUF_INIT(ANSWER_MAX);
	size_t i, k, max_groups, groups_cap = 0;
	int64_t from = clamp_t(q->from), until = clamp_t(q->until), a = until, b = until;
	char *fine = tname(ch, "samples", 0), *coarse = tname(ch, "totals_10m", 0);
	int ret;

	u64map_init(&gindex);
	u64map_init(&sink.series_group);
	sink.ts = ts;
	ts->step = step;
	ts->start = q->from - ((q->from % step) + step) % step;
	ts->npoints = q->until > ts->start ? (size_t)((q->until - ts->start + step - 1) / step) : 0;
	max_groups = STORE_MAX_GROUPS;
	if (ts->npoints && MAX_TS_VALUES / ts->npoints < max_groups)
		max_groups = MAX_TS_VALUES / ts->npoints;
	if (max_groups < 1)
		max_groups = 1;
	sel.group_by = group_by;
	ret = ensure_ready(ch, err);
	if (ret == 0)
		ret = select_series(ch, q, &sel, &filter, err);
	if (ret < 0)
		goto cleanup;
	for (i = 0; i < sel.n; i++) {
		const char *g = sel.v[i].group ? sel.v[i].group : "";
		uint32_t gid = strtab_intern(gnames, g);
		uint64_t *slot = u64map_get(&gindex, (uint64_t)gid + 1);

		if (!slot && ts->ngroups >= max_groups) {
			gid = 0; /* "": the rest */
			slot = u64map_get(&gindex, 1);
		}
		if (!slot) {
			struct store_ts_group *grp;

			ALLOC_GROW(ts->groups, ts->ngroups + 1, groups_cap);
			grp = &ts->groups[ts->ngroups++];
			grp->group = xstrdup(strtab_get(gnames, gid));
			grp->values = xcalloc(ts->npoints ? ts->npoints : 1, sizeof(int64_t));
			grp->total = 0;
			u64map_put(&gindex, (uint64_t)gid + 1, ts->ngroups);
			slot = u64map_get(&gindex, (uint64_t)gid + 1);
		}
		u64map_put(&sink.series_group, sel.v[i].id, *slot);
	}
	if (sel.n && from < until && ts->npoints) {
		/* 10-minute totals serve buckets made of whole 10 minutes. */
		if (step % TEN_MIN == 0)
			split_range(from, until, TEN_MIN, &a, &b);
		buf_printf(&sql, "SELECT series, toUInt32(intDiv(t - %lld, %lld)) AS k, " SAT_SUM("total") " FROM (",
			   (long long)ts->start, (long long)step);
		if (a < b)
			buf_printf(&sql, "SELECT series, t, total FROM %s WHERE %st >= %lld AND t < %lld UNION ALL ",
				   coarse, filter.data ? filter.data : "", (long long)a, (long long)b);
		buf_printf(&sql, "SELECT series, t, total FROM %s WHERE %s", fine,
			   filter.data ? filter.data : "");
		fine_condition(&sql, from, until, a, b);
		buf_puts(&sql, ") GROUP BY series, k FORMAT RowBinary");
		ret = clickhouse_exec(ch->cli, CLICKHOUSE_ANY, sql.data, SELECT_SETTINGS, NULL, 0, &ans, err);
		if (ret == 0)
			ret = decode_ts(ans.data, ans.len, &sink, err);
		if (ret < 0)
			goto cleanup;
	}
	for (i = 0; i < ts->ngroups; i++) {
		int64_t sum = 0;

		for (k = 0; k < ts->npoints; k++)
			sum = store_sat_add(sum, ts->groups[i].values[k]);
		ts->groups[i].total = sum;
	}
	if (ts->ngroups > 1)
		qsort(ts->groups, ts->ngroups, sizeof(*ts->groups), cmp_group);
	*out = ts;
	ts = NULL;
cleanup:
	store_timeseries_free(ts);
	strtab_free(gnames);
	u64map_release(&gindex);
	u64map_release(&sink.series_group);
	sel_list_release(&sel);
	buf_release(&filter);
	buf_release(&sql);
	buf_release(&ans);
	xfree(fine);
	xfree(coarse);
	return ret;
}

/* ---- maintenance: retention by age and size --------------------------------------------------- */

/* Days (partitions) of `table` on every node, ascending and unique, and the bytes of the
 * database on all nodes together. */
static int list_days(struct ch *ch, const char *table, uint64_t **days, size_t *n,
		     uint64_t *bytes, struct errmsg *err)
{
	struct buf out = BUF_INIT(1 << 24);
	size_t nodes = clickhouse_nodes(ch->cli), i, j, cap = 0;
	int ret = 0;

	*n = 0;
	*bytes = 0;
	for (i = 0; i < nodes && ret == 0; i++) {
		char *sql = xasprintf("SELECT partition FROM system.parts WHERE database = '%s' AND active"
				      " AND table = '%s' GROUP BY partition FORMAT TSV", ch->db, table);
		char *line, *save = NULL;

		buf_reset(&out);
		ret = clickhouse_exec(ch->cli, (int)i, sql, NULL, NULL, 0, &out, err);
		xfree(sql);
		if (ret < 0)
			break;
		for (line = strtok_r(out.data ? out.data : (char *)"", "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *end;
			unsigned long long d = strtoull(line, &end, 10);

			if (end == line || *end)
				continue;
			for (j = 0; j < *n && (*days)[j] != d; j++)
				;
			if (j == *n) {
				ALLOC_GROW(*days, *n + 1, cap);
				(*days)[(*n)++] = d;
			}
		}
		buf_reset(&out);
		sql = xasprintf("SELECT sum(bytes_on_disk) FROM system.parts WHERE database = '%s' AND active"
				" FORMAT TSV", ch->db);
		ret = clickhouse_exec(ch->cli, (int)i, sql, NULL, NULL, 0, &out, err);
		xfree(sql);
		if (ret == 0 && out.data)
			*bytes += strtoull(out.data, NULL, 10);
	}
	for (i = 1; i < *n; i++) /* ascending (a few hundred days at most) */
		for (j = i; j > 0 && (*days)[j - 1] > (*days)[j]; j--) {
			uint64_t x = (*days)[j];

			(*days)[j] = (*days)[j - 1];
			(*days)[j - 1] = x;
		}
	buf_release(&out);
	return ret;
}

static int drop_day(struct ch *ch, uint64_t day, struct errmsg *err)
{
	size_t n = clickhouse_nodes(ch->cli), i, t;
	int ret = 0;

	for (i = 0; i < n && ret == 0; i++) {
		for (t = 0; t < NFACTS + NDIMS && ret == 0; t++) {
			const char *name = t < NFACTS ? fact_tables[t] : dim_tables[t - NFACTS];
			char *tn = tname(ch, name, t < NFACTS), *sql;

			sql = xasprintf("ALTER TABLE %s DROP PARTITION %llu", tn, (unsigned long long)day);
			ret = clickhouse_exec(ch->cli, (int)i, sql, NULL, NULL, 0, NULL, err);
			xfree(sql);
			xfree(tn);
		}
	}
	cache_clear(ch);
	atomic_fetch_add(&ch->write_gen, 1);
	pthread_mutex_lock(&ch->rlock);
	rcache_clear_locked(ch);
	pthread_mutex_unlock(&ch->rlock);
	return ret;
}

/* Whole days are dropped (a partition is a day), in every table on every node: by age once a
 * day lies entirely before now - retention; by size the days of the oldest samples while the
 * database is larger than max_disk_bytes, never the day of the newest samples. */
static int ch_maintain(void *state, int64_t now, struct errmsg *err)
{
	struct ch *ch = state;
	uint64_t *days = NULL, bytes = 0;
	size_t ndays = 0, i;
	char *samples = xasprintf("samples%s", ch->cluster ? "_local" : "");
	int ret = ensure_ready(ch, err), dropped = 0;

	if (ret < 0 || (!ch->opts.retention_sec && !ch->opts.max_disk_bytes))
		goto cleanup;
	if (ch->opts.retention_sec > 0) {
		/* Series rows are partitioned by the day they were written: theirs count too. */
		const char *tables[2] = { samples, "series" };
		size_t t;

		for (t = 0; t < 2 && ret == 0; t++) {
			ret = list_days(ch, tables[t], &days, &ndays, &bytes, err);
			for (i = 0; i < ndays && ret == 0; i++)
				if ((int64_t)((days[i] + 1) * DAY) <= now - ch->opts.retention_sec) {
					ret = drop_day(ch, days[i], err);
					dropped = 1;
				}
			xfree(days);
			days = NULL;
		}
	}
	while (ret == 0 && ch->opts.max_disk_bytes) {
		ret = list_days(ch, samples, &days, &ndays, &bytes, err);
		if (ret < 0 || bytes <= ch->opts.max_disk_bytes || ndays < 2)
			break;
		ret = drop_day(ch, days[0], err);
		dropped = 1;
		xfree(days);
		days = NULL;
	}
cleanup:
	xfree(days);
	xfree(samples);
	return ret < 0 ? ret : dropped; /* 1: data was dropped (store_generation()) */
}

/* ---- stats ------------------------------------------------------------------------------------- */

static int ch_stats(void *state, struct store_stats *out, struct errmsg *err)
{
	struct ch *ch = state;
	size_t n = clickhouse_nodes(ch->cli), i;
	struct buf ans = BUF_INIT(1 << 20);
	char *sql, *spans;
	int ret = ensure_ready(ch, err);

	for (i = 0; i < n && ret == 0; i++) {
		unsigned long long bytes = 0, raw = 0, roll = 0;

		buf_reset(&ans);
		sql = xasprintf("SELECT sum(bytes_on_disk), sumIf(rows, table = '%s'),"
				" sumIf(rows, table = '%s') FROM system.parts WHERE database = '%s' AND active"
				" FORMAT TSV", ch->cluster ? "samples_local" : "samples",
				ch->cluster ? "samples_1h_local" : "samples_1h", ch->db);
		ret = clickhouse_exec(ch->cli, (int)i, sql, NULL, NULL, 0, &ans, err);
		xfree(sql);
		if (ret == 0 && sscanf(ans.data ? ans.data : "", "%llu\t%llu\t%llu", &bytes, &raw, &roll) == 3) {
			out->disk_bytes += bytes;
			out->raw_rows += raw;
			out->rollup_rows += roll;
		}
	}
	if (ret == 0) {
		unsigned long long series = 0, stacks = 0, frames = 0;
		long long first = 0, last = 0;

		buf_reset(&ans);
		spans = tname(ch, "spans", 0);
		sql = xasprintf("SELECT (SELECT uniqExact(id) FROM %s.series), (SELECT uniqExact(hash) FROM %s.stacks),"
				" (SELECT uniqExact(hash) FROM %s.frames), (SELECT toInt64(ifNull(minMerge(first), 0))"
				" FROM %s), (SELECT toInt64(ifNull(maxMerge(last), 0)) FROM %s) FORMAT TSV",
				ch->db, ch->db, ch->db, spans, spans);
		ret = clickhouse_exec(ch->cli, CLICKHOUSE_ANY, sql, NULL, NULL, 0, &ans, err);
		xfree(sql);
		xfree(spans);
		if (ret == 0 && sscanf(ans.data ? ans.data : "", "%llu\t%llu\t%llu\t%lld\t%lld", &series,
				       &stacks, &frames, &first, &last) == 5) {
			out->series = series;
			out->stacks = stacks;
			out->frames = frames;
			out->oldest = first;
			out->newest = last;
		}
	}
	out->live_bytes = out->disk_bytes;
	pthread_mutex_lock(&ch->rlock);
	out->cache_bytes = rcache_bytes_locked(ch);
	pthread_mutex_unlock(&ch->rlock);
	pthread_mutex_lock(&ch->clock);
	out->cache_bytes += ch->written.cap * 16;
	pthread_mutex_unlock(&ch->clock);
	buf_release(&ans);
	return ret;
}

/* ---- open / close ------------------------------------------------------------------------------ */

static void ch_close(void *state)
{
	struct ch *ch = state;

	if (!ch)
		return;
	if (ch->flusher_started) {
		pthread_mutex_lock(&ch->wlock);
		ch->stop = 1;
		pthread_cond_broadcast(&ch->wake);
		pthread_cond_broadcast(&ch->done);
		pthread_mutex_unlock(&ch->wlock);
		pthread_join(ch->flusher, NULL);
	}
	pending_release(&ch->cur);
	clickhouse_free(ch->cli);
	clickhouse_url_release(&ch->url);
	u64map_release(&ch->written);
	u64map_release(&ch->stack_at);
	u64map_release(&ch->frame_at);
	xfree(ch->spool);
	strtab_free(ch->names);
	pthread_mutex_destroy(&ch->init_lock);
	pthread_mutex_destroy(&ch->wlock);
	pthread_mutex_destroy(&ch->clock);
	pthread_mutex_destroy(&ch->rlock);
	pthread_mutex_destroy(&ch->slock);
	buf_release(&ch->series_ans);
	pthread_cond_destroy(&ch->wake);
	pthread_cond_destroy(&ch->done);
	xfree(ch);
}

static int ch_open(const char *path, const struct store_opts *opts, void **state, struct errmsg *err)
{
	struct ch *ch = xcalloc(1, sizeof(*ch));
	uint64_t cache;
	int ret;

	*state = NULL;
	pthread_mutex_init(&ch->init_lock, NULL);
	pthread_mutex_init(&ch->wlock, NULL);
	pthread_mutex_init(&ch->clock, NULL);
	pthread_mutex_init(&ch->rlock, NULL);
	pthread_mutex_init(&ch->slock, NULL);
	buf_init(&ch->series_ans, ANSWER_MAX);
	pthread_cond_init(&ch->wake, NULL);
	pthread_cond_init(&ch->done, NULL);
	pending_init(&ch->cur);
	u64map_init(&ch->written);
	u64map_init(&ch->stack_at);
	u64map_init(&ch->frame_at);
	ch->names = strtab_new();
	ch->opts = *opts;
	cache = opts->cache_bytes ? opts->cache_bytes : 64ULL << 20;
	if (cache < (4ULL << 20))
		cache = 4ULL << 20;
	ch->written_limit = cache / 2 / 32;
	ch->rcache_limit = cache / 2;
	ret = clickhouse_url_parse(path, &ch->url, err);
	if (ret < 0) {
		ch_close(ch);
		return ret;
	}
	ch->db = ch->url.database;
	ch->cluster = ch->url.cluster != NULL;
	ch->cli = clickhouse_new(&ch->url);
	ret = ensure_ready(ch, err);
	if (ret == -EAGAIN) {
		/* ClickHouse down at start: serve anyway (ingest answers 503, queries an error)
		 * and set up the schema once it answers. */
		log_warn("clickhouse store: %s; retrying in the background", err ? err->msg : "unreachable");
		ret = 0;
	}
	if (ret < 0) {
		ch_close(ch);
		return ret;
	}
	if (pthread_create(&ch->flusher, NULL, flusher_main, ch)) {
		ch_close(ch);
		return errmsg_set(err, -EAGAIN, "cannot start the insert thread");
	}
	ch->flusher_started = 1;
	*state = ch;
	return 0;
}

/* ---- decoders for the fuzz target ------------------------------------------------------------ */

static int count_series(const struct store_series_info *info, void *arg)
{
	(*(size_t *)arg) += info->nlabels + 1;
	return 0;
}

int store_clickhouse_decode(int kind, const void *data, size_t len, struct errmsg *err)
{
	struct resolve rs;
	struct strtab *names;
	struct store_pair *pairs = NULL;
	size_t n = 0, cap = 0, total = 0, visited = 0;
	int ret;

	memset(&rs, 0, sizeof(rs));
	u64map_init(&rs.stack_at);
	u64map_init(&rs.frame_at);
	names = strtab_new();
	switch (kind) {
	case 0:
		ret = decode_series(data, len, NULL, count_series, &visited, &total, err);
		break;
	case 1:
		ret = decode_pairs(data, len, &pairs, &n, &cap, err);
		break;
	case 2:
		ret = decode_stacks(data, len, &rs, err);
		break;
	case 3:
		ret = decode_frames(data, len, &rs, names, err);
		break;
	default: {
		struct store_timeseries ts = { 0 };
		struct store_ts_group g = { NULL, NULL, 0 };
		struct ts_sink sink;
		int64_t values[16] = { 0 };

		g.values = values;
		ts.npoints = 16;
		ts.groups = &g;
		ts.ngroups = 1;
		sink.ts = &ts;
		u64map_init(&sink.series_group);
		u64map_put(&sink.series_group, 7, 1);
		ret = decode_ts(data, len, &sink, err);
		u64map_release(&sink.series_group);
		break;
	}
	}
	xfree(pairs);
	u64map_release(&rs.stack_at);
	u64map_release(&rs.frame_at);
	xfree(rs.pool);
	strtab_free(names);
	return ret;
}

const struct store_ops store_clickhouse_ops = {
	.kind = "clickhouse",
	.open = ch_open,
	.close = ch_close,
	.write = ch_write,
	.maintain = ch_maintain,
	.series = ch_series,
	.merge = ch_merge,
	.timeseries = ch_timeseries,
	.stats = ch_stats,
};
