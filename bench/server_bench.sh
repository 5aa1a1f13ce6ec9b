#!/bin/sh
# server_bench.sh: `scorch server` over HTTP on loopback: ingest throughput with concurrent
# clients, query latency over a pre-filled store, and the server's peak RSS. Prints a table
# (medians of RUNS runs); docs/benchmarks.md ("Server") has the latest figures.
#
#   sh bench/server_bench.sh              (env: B=build dir, RUNS=3, SECS=5, HOURS=24)
#   STORE='clickhouse://127.0.0.1:8123/DB' sh bench/server_bench.sh
#       the same on ClickHouse (DB is replaced by a database per phase, dropped beforehand;
#       a cluster URL works too); adds agent-like runs with many clients and 10k series, and
#       query latency once 100k series exist.
#   ONLY_QUERY=1 sh bench/server_bench.sh   only the pre-filled store's query latency
#   ONLY_SERIES=1 sh bench/server_bench.sh  only the many-series part
#
# Load comes from bench/server_load.c (plain sockets, keep-alive, one connection per client).
# Ingest bodies: 1000 distinct folded stacks of 12..40 frames (~500 KB); "stacks/s" counts
# lines, "samples/s" the sum of their counts. The fill pushes one 300-stack profile per 10 s
# per host for 4 hosts over HOURS hours, like agents would.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-3}
SECS=${SECS:-5}
HOURS=${HOURS:-24}
SCORCH=${SCORCH:-./scorch}
TMP=$(mktemp -d /tmp/scorch-server-bench.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM

mkdir -p $B/bench
${CC:-cc} -O2 -g -Wall -Wextra -D_GNU_SOURCE -o $B/bench/server_load bench/server_load.c -lpthread
LOAD=$B/bench/server_load

q() { # LABEL CLIENTS REQUESTS PATH
	$LOAD query $PORT $2 $3 "$4" > $TMP/out || { echo "query $4 failed: $(cat $TMP/out)"; exit 1; }
	printf '%-44s %10s %10s %10s\n' "$1" "$(field p50_ms < $TMP/out)" "$(field p90_ms < $TMP/out)" "$(field p99_ms < $TMP/out)"
}
STORE=${STORE:-}
start() { # DATA-DIR (its name names the ClickHouse database with STORE)
	rm -f $TMP/port
	if [ -n "$STORE" ]; then
		db=bench_$(basename "$1")
		url=$(echo "$STORE" | sed "s|/DB|/$db|")
		ch=$(echo "$STORE" | sed 's|^clickhouse://||; s|/.*||' | tr ',' ' ')
		for h in $ch; do curl -s --data-binary "DROP DATABASE IF EXISTS $db" "http://$h/" >/dev/null; done
		# every client of this benchmark comes from 127.0.0.1: no cap per address
		set -- --store "$url" --threads 256 --max-connections 1024 --max-client-connections 0
	else
		set -- --data "$1"
	fi
	"$SCORCH" server --listen 127.0.0.1:0 --port-file $TMP/port "$@" 2>>$TMP/server.log &
	PID=$!
	i=0
	while [ ! -s $TMP/port ]; do
		i=$((i + 1)); [ $i -gt 100 ] && { cat $TMP/server.log; exit 1; }
		sleep 0.1
	done
	PORT=$(cat $TMP/port)
}
stop() { kill -TERM $PID; wait $PID || true; PID=; }
cpu_ticks() { awk '{ print $14 + $15 }' /proc/$PID/stat; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
hz=$(getconf CLK_TCK)

if [ -z "${ONLY_SERIES:-}" ]; then
if [ -z "${ONLY_QUERY:-}" ]; then
printf '%-44s %12s %12s %10s %10s %12s\n' "ingest (POST /ingest, folded)" "stacks/s" "samples/s" "p50 ms" "p99 ms" "stacks/cpu-s"
start $TMP/ingest
specs='"1 1" "4 1" "8 1" "4 16"'
[ -n "$STORE" ] && specs="$specs \"64 16\" \"64 16 10000\""
eval "set -- $specs"
for spec in "$@"; do
	set -- $spec
	clients=$1 maxc=$2 nser=${3:-0}
	: > $TMP/runs
	r=0
	while [ $r -lt $RUNS ]; do
		c0=$(cpu_ticks)
		$LOAD ingest $PORT $clients $SECS 1000 $maxc $nser > $TMP/out
		c1=$(cpu_ticks)
		st=$(field stacks_per_s < $TMP/out)
		secs=$(field seconds < $TMP/out)
		per_cpu=$(awk -v s=$st -v t=$secs -v c=$((c1 - c0)) -v hz=$hz 'BEGIN { printf "%.0f", c ? s * t / (c / hz) : 0 }')
		echo "$st $(field samples_per_s < $TMP/out) $(field p50_ms < $TMP/out) $(field p99_ms < $TMP/out) $per_cpu" >> $TMP/runs
		r=$((r + 1))
	done
	label="$clients client(s), counts $( [ $maxc = 1 ] && echo 1 || echo 1..$maxc )$( [ $nser = 0 ] || echo ", $nser series")"
	printf '%-44s %12s %12s %10s %10s %12s\n' "$label" \
		"$(cut -d' ' -f1 $TMP/runs | median)" "$(cut -d' ' -f2 $TMP/runs | median)" \
		"$(cut -d' ' -f3 $TMP/runs | median)" "$(cut -d' ' -f4 $TMP/runs | median)" \
		"$(cut -d' ' -f5 $TMP/runs | median)"
done
ingest_rss=$(awk '/VmHWM/ { print $2 }' /proc/$PID/status)
stop
echo "server peak RSS after the ingest runs: $((ingest_rss / 1024)) MB"
echo
fi

start $TMP/query
t0=$(date +%s)
$LOAD fill $PORT $HOURS 300 ${FILL_CLIENTS:-$([ -n "$STORE" ] && echo 64 || echo 4)} > $TMP/fill || { echo "fill failed: $(cat $TMP/fill)"; exit 1; }
echo "pre-filled $HOURS h (4 hosts, one 300-stack push per 10 s each): $(field requests < $TMP/fill) pushes in $(( $(date +%s) - t0 )) s"
printf '%-44s %10s %10s %10s\n' "query (GET, 1 client unless noted)" "p50 ms" "p90 ms" "p99 ms"
q "/render last 1h" 1 20 "/render?query=fill.cpu&from=now-1h"
q "/render last 6h" 1 10 "/render?query=fill.cpu&from=now-6h"
q "/render last ${HOURS}h" 1 10 "/render?query=fill.cpu&from=now-${HOURS}h"
q "/render last ${HOURS}h, one host" 1 10 "/render?query=fill.cpu%7Bhost%3D%22h1%22%7D&from=now-${HOURS}h"
q "/render last 1h, 4 clients" 4 20 "/render?query=fill.cpu&from=now-1h"
q "/render last 1h, format=pprof" 1 10 "/render?query=fill.cpu&from=now-1h&format=pprof"
q "/api/v1/series last ${HOURS}h by host" 1 10 "/api/v1/series?query=fill.cpu&from=now-${HOURS}h&group_by=host"
q "/api/v1/top last ${HOURS}h" 1 10 "/api/v1/top?query=fill.cpu&from=now-${HOURS}h"
q "/labels" 1 50 "/labels"
query_rss=$(awk '/VmHWM/ { print $2 }' /proc/$PID/status)
echo "server peak RSS (fill + queries): $((query_rss / 1024)) MB"
stop
fi
[ -z "${ONLY_QUERY:-}" ] || exit 0

# Many series: agents pushing 20-stack profiles, each push another agent's series, until
# SERIES_TARGET (default 100000) series exist; then query one series among them, all of them,
# and the label listings. SERIES_CLIENTS concurrent agents (64; 256 on ClickHouse, whose
# inserts take what all waiting agents pushed). ONLY_SERIES=1 runs only this part.
SERIES_TARGET=${SERIES_TARGET:-100000}
start $TMP/series
t0=$(date +%s)
sclients=${SERIES_CLIENTS:-$([ -n "$STORE" ] && echo 256 || echo 64)}
# busy answers (503: the server's ingest memory is taken by waiting pushes) are what agents
# retry: counted, not fatal
$LOAD ingest $PORT $sclients ${SERIES_SECS:-90} 20 4 $SERIES_TARGET > $TMP/out || true
nser=$(curl -s "http://127.0.0.1:$PORT/label-values?label=agent&from=now-1h" | tr ',' '\n' | grep -c . || true)
echo
echo "$nser series from $(field requests < $TMP/out) pushes of 20 stacks in $(( $(date +%s) - t0 )) s ($(field stacks_per_s < $TMP/out) stacks/s, $sclients clients, $(field errors < $TMP/out) busy answers)"
printf '%-44s %10s %10s %10s\n' "query at $nser series (GET, 1 client)" "p50 ms" "p90 ms" "p99 ms"
q "/render one series of them, last 1h" 1 10 "/render?query=bench.cpu%7Bagent%3D%227%22%7D&from=now-1h"
q "/render all of them, last 1h" 1 5 "/render?query=bench.cpu&from=now-1h"
q "/api/v1/series one series, last 1h" 1 10 "/api/v1/series?query=bench.cpu%7Bagent%3D%227%22%7D&from=now-1h"
q "/labels" 1 10 "/labels"
q "/label-values?label=agent" 1 5 "/label-values?label=agent"
series_rss=$(awk '/VmHWM/ { print $2 }' /proc/$PID/status)
echo "server peak RSS with $nser series: $((series_rss / 1024)) MB"
stop
