/* store_clickhouse.h: the ClickHouse backend of the profile store (store.h's "clickhouse"
 * kind, implemented in store_clickhouse.c over the HTTP client clickhouse.h). docs/storage.md
 * explains the design; this is the reference of what it keeps in ClickHouse (18.16 as Debian
 * ships it: no TTL, no column codecs, no query parameters).
 *
 * store_open("clickhouse", URL, ...): URL as in clickhouse.h, e.g.
 *   clickhouse://127.0.0.1:8123/scorch
 *   clickhouse://10.0.0.1:8123,10.0.0.2:8123/scorch?cluster=profiles&user=scorch&password=x
 * The database and its tables are created when missing (on every node of a cluster); the
 * layout version is recorded in `meta` and checked on open.
 *
 * Tables (t = unix seconds of a batch's `from`; day = t / 86400; every table holding t or day is
 * PARTITION BY day, so that retention is ALTER TABLE ... DROP PARTITION):
 *
 *   meta(key String, value String) TinyLog, on every node:
 *       magic = STORE_CH_MAGIC, version = STORE_CH_VERSION, cluster = NAME or "" (single node)
 *
 *   samples(series UInt64, t UInt32, stacks Array(UInt64), values Array(UInt64),
 *           total Decimal128(0)) MergeTree ORDER BY (series, t)
 *       One row per written batch (a pushed profile): its stack hashes sorted and unique, the
 *       value of each (a stack given twice in a batch is summed, saturated at INT64_MAX), and
 *       the exact sum of the values (the time series' finest resolution). ClickHouse's cost
 *       per insert is per row, and array elements are cheap columnar data, so ingest costs
 *       per pushed profile rather than per (stack, value) pair. 256 rows per granule (a
 *       row is a whole profile): a query of one series reads little of its neighbours.
 *   samples_1h(series UInt64, t UInt32, stacksMap Nested(stack UInt64, value Decimal128(0)))
 *       SummingMergeTree ORDER BY (series, t), t = hour start; filled by the materialized view
 *       samples_1h_mv with each samples row's arrays (values as Decimal128). Merges sum the
 *       map per stack (a Nested column whose name ends in "Map"), so that a merged part holds
 *       one row per series and hour. Sums are Decimal128 so that merged rollups never wrap;
 *       queries answer sums saturated at INT64_MAX. Read with ARRAY JOIN and sum() ... GROUP
 *       BY stack (parts not merged yet hold several rows per key).
 *   totals_10m(series UInt64, t UInt32, total Decimal128(0)) SummingMergeTree(total) ORDER BY
 *       (series, t): the sum of the batches per 10 minutes (time series); view totals_10m_mv.
 *   spans(series UInt64, day UInt32, first AggregateFunction(min, UInt32),
 *         last AggregateFunction(max, UInt32)) AggregatingMergeTree ORDER BY series:
 *       time of the oldest and newest batch of a series per day; view spans_mv.
 *
 *   series(id UInt64, day UInt32, updated UInt64, type String, names Array(String),
 *          vals Array(String), sample_rate Nullable(UInt32), units Nullable(String),
 *          spy_name Nullable(String), aggregation Nullable(String)) MergeTree ORDER BY id
 *       A row per series and day it is written in (the day of its batch when that is later),
 *       and per change of its metadata, so that the newest metadata outlives retention: id = the
 *       stable hash (lib/hash.h) of the series key (type NUL (name NUL value NUL)*, labels
 *       sorted by name, as in store_sqlite.h); updated = writer's clock in ns. A NULL metadata
 *       field was not given by that write: readers take the newest non-NULL value.
 *   stacks(hash UInt64, day UInt32, frames Array(UInt64)) ReplacingMergeTree ORDER BY hash
 *       hash = stable hash of the frame hashes (8 bytes each, little-endian, root first).
 *   frames(hash UInt64, day UInt32, name String) ReplacingMergeTree ORDER BY hash
 *       hash = stable hash of the name.
 *       A writer adds a series/stack/frame row for each day it uses it in, so dropping old
 *       days frees what only they used.
 *
 * Cluster (cluster=NAME, every node listed in the URL): the four sample tables above are
 * NAME_local tables on every node with a Distributed table of the plain name over them,
 * sharded by series (inserts with insert_distributed_sync=1: acknowledged once every shard
 * has its rows); the views live on each node's local samples table. series, stacks and frames
 * are written to every node, so each shard resolves its own samples and the store's queries
 * only ever filter with plain IN on literal ids (no GLOBAL IN, no distributed joins).
 * Retention drops the partitions on every node. */
#ifndef SCORCH_STORE_CLICKHOUSE_H
#define SCORCH_STORE_CLICKHOUSE_H

#include <stddef.h>

struct errmsg;

#define STORE_CH_MAGIC   "scorch-profile-store"
/* 1: a row per (batch, stack) and a totals table; 2: a row per batch with arrays. */
#define STORE_CH_VERSION 2

/* Decoders of ClickHouse's answers, run on arbitrary bytes by the fuzz target (the answers are
 * outside input). kind: 0 series list, 1 merge pairs, 2 stacks, 3 frames, 4 time series.
 * Returns 0 or -EIO. */
int store_clickhouse_decode(int kind, const void *data, size_t len, struct errmsg *err);

#endif
