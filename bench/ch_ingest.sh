#!/bin/sh
# ch_ingest.sh: HTTP ingest into `scorch server` on ClickHouse, and what it costs each side.
# Starts its own clickhouse-server (one node, or two shards with SHARDS=2) on free loopback
# ports with its data in a temporary directory, then for every scorch binary given and every
# client count: a fresh database, a server, `server_load ingest` for SECS seconds (1000-stack
# folded bodies, counts 1..MAXCOUNT), and prints stacks/s, p99, 503 answers, and the CPU
# seconds of scorch and of clickhouse-server (from /proc/PID/stat; ClickHouse's includes
# SETTLE seconds after the load, its background merges of what was inserted) with the
# microseconds each spent per pair (stack line) acknowledged.
#
#   sh bench/ch_ingest.sh [SCORCH ...]          (default ./scorch)
#   env: SECS=10 CLIENTS="4 16 64" MAXCOUNT=16 SETTLE=3 SHARDS=1 B=build
#        NSERIES=N: every push is another of N series (agents), as server_load's NSERIES
#   e.g. SHARDS=2 sh bench/ch_ingest.sh /tmp/old/scorch ./scorch
#
# docs/benchmarks.md ("Server on ClickHouse next to SQLite") has the latest figures.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
SECS=${SECS:-10}
CLIENTS=${CLIENTS:-4 16 64}
MAXCOUNT=${MAXCOUNT:-16}
SETTLE=${SETTLE:-3}
SHARDS=${SHARDS:-1}
NSERIES=${NSERIES:-0}
[ $# -gt 0 ] || set -- ./scorch
TMP=$(mktemp -d /tmp/scorch-ch-ingest.XXXXXX)
PID=
fail() { echo "ch_ingest: $*" >&2; exit 1; }
. tests/integration/clickhouse.inc
# set +e: `wait` on a stopped clickhouse-server returns its status, which must not end the
# cleanup before every instance is stopped.
trap 'set +e; [ -n "$PID" ] && kill -9 $PID 2>/dev/null; ch_stop_all; rm -rf "$TMP"' EXIT INT TERM
command -v clickhouse-server >/dev/null 2>&1 || [ -x /usr/sbin/clickhouse-server ] ||
	fail "clickhouse-server is not installed"
command -v "$CH_SERVER" >/dev/null 2>&1 || CH_SERVER=/usr/sbin/clickhouse-server

mkdir -p $B/bench
${CC:-cc} -O2 -g -Wall -Wextra -D_GNU_SOURCE -o $B/bench/server_load bench/server_load.c -lpthread
LOAD=$B/bench/server_load

case $SHARDS in
1)	ch_start one
	NODES=one
	BASE="clickhouse://127.0.0.1:$CH_HTTP_one/DB" ;;
2)	ch_pick_ports a
	ch_pick_ports b
	ch_start a "$CH_TCP_a $CH_TCP_b"
	ch_start b "$CH_TCP_a $CH_TCP_b"
	NODES="a b"
	BASE="clickhouse://127.0.0.1:$CH_HTTP_a,127.0.0.1:$CH_HTTP_b/DB?cluster=scorch2" ;;
*)	fail "SHARDS is 1 or 2" ;;
esac

ticks() { awk '{ print $14 + $15 }' /proc/$1/stat; }
ch_ticks() { s=0; for n in $NODES; do eval "p=\$CH_PID_$n"; s=$((s + $(ticks $p))); done; echo $s; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
hz=$(getconf CLK_TCK)

echo "clickhouse $SHARDS node(s), $SECS s per run, 1000-stack bodies, counts 1..$MAXCOUNT, series $NSERIES (0: one per client), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-24s %7s %10s %8s %7s %9s %9s %9s %9s\n' build clients stacks/s p99_ms 503s \
	scorch_s ch_s scorch_us ch_us
# Builds take turns at each client count, and no database is dropped before the end: dropping
# one frees thousands of files at once, and ext4 without a journal then skips every inode freed
# in the last 5-10 s when it allocates new ones, which would slow the next run's inserts.
run=0
for c in $CLIENTS; do
	for scorch in "$@"; do
		run=$((run + 1))
		db=ingest_$run
		rm -f $TMP/port
		"$scorch" server --listen 127.0.0.1:0 --port-file $TMP/port \
			--store "$(echo "$BASE" | sed "s|/DB|/$db|")" --threads 256 --max-connections 1024 \
			2>>$TMP/server.log &
		PID=$!
		i=0
		while [ ! -s $TMP/port ]; do
			i=$((i + 1))
			[ $i -gt 100 ] && { cat $TMP/server.log; fail "$scorch did not start"; }
			sleep 0.1
		done
		s0=$(ticks $PID) k0=$(ch_ticks)
		$LOAD ingest $(cat $TMP/port) $c $SECS 1000 $MAXCOUNT $NSERIES > $TMP/out || true
		s1=$(ticks $PID)
		sleep $SETTLE
		k1=$(ch_ticks)
		kill -TERM $PID
		wait $PID || true
		PID=
		st=$(field stacks_per_s < $TMP/out)
		secs=$(field seconds < $TMP/out)
		awk -v b="$scorch" -v c=$c -v st=$st -v p99=$(field p99_ms < $TMP/out) \
			-v e=$(field errors < $TMP/out) -v secs=$secs -v s=$((s1 - s0)) -v k=$((k1 - k0)) \
			-v hz=$hz 'BEGIN {
				pairs = st * secs
				printf "%-24s %7d %10.0f %8.1f %7d %9.2f %9.2f %9.2f %9.2f\n", b, c, st, p99, e,
					s / hz, k / hz, pairs ? s / hz / pairs * 1e6 : 0, pairs ? k / hz / pairs * 1e6 : 0
			}'
		grep -o 'ingest: .*' $TMP/server.log | cut -c1-110 | sort | uniq -c | sed 's/^/    /' || true
		: > $TMP/server.log
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
