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
 *   samples(series UInt64, t UInt32, stack LowCardinality(UInt64), value UInt64)
 *       MergeTree ORDER BY (series, t, stack): one row per (batch, distinct stack). The stack
 *       column is dictionary-encoded per part by ClickHouse (LowCardinality): dense ids for
 *       the column without an id authority that several stateless writers would need.
 *   samples_1h(series, t, stack, value Decimal128(0)) SummingMergeTree(value) ORDER BY (series,
 *       t, stack), t = hour start; filled by the materialized view samples_1h_mv from every
 *       insert into samples. Sums are Decimal128 so that merged rollups never wrap; queries
 *       answer sums saturated at INT64_MAX.
 *   totals(series UInt64, t UInt32, total Decimal128(0)) SummingMergeTree(total) ORDER BY (series, t):
 *       the sum of each batch (time series); view totals_mv.
 *   totals_10m(same) t = start of its 10 minutes; view totals_10m_mv.
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
 * Cluster (cluster=NAME, every node listed in the URL): the five sample tables above are
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
#define STORE_CH_VERSION 1

/* Decoders of ClickHouse's answers, run on arbitrary bytes by the fuzz target (the answers are
 * outside input). kind: 0 series list, 1 merge pairs, 2 stacks, 3 frames, 4 time series.
 * Returns 0 or -EIO. */
int store_clickhouse_decode(int kind, const void *data, size_t len, struct errmsg *err);

#endif
