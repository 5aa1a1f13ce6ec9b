#!/bin/sh
# store_clickhouse.sh: the profile store on ClickHouse (Debian's clickhouse-server, started here
# as plain processes on free loopback ports with configs written here; SKIP when it is not
# installed). One server for the single-node cases, two more for a 2-shard cluster:
#   1. the differential test: one data set in SQLite and ClickHouse, every query compared
#      (build/tests-store/diff_clickhouse, tests/store/diff_clickhouse.c); a database of an
#      older layout refused with a clear error;
#   2. the HTTP tests of the server (ingest, errors, limits, auth, and kill -9 during ingest
#      losing nothing acknowledged) run again with --store clickhouse://;
#   3. ClickHouse stopped and restarted during ingest: ingest answers 503, queries a clear
#      error, the server stays up and recovers by itself, everything acknowledged is stored;
#   4. two shards (remote_servers, Distributed tables sharded by series) with two scorch
#      servers writing at once: both see everything, the samples are split over the shards,
#      the dimension tables are on both; a shard down gives 503, and its return recovers.
. tests/integration/server.inc
. tests/integration/clickhouse.inc

need_clickhouse
DIFF=$B/tests-store/diff_clickhouse
[ -x "$DIFF" ] || fail "no $DIFF (run make test-build first)"
PIDS=
trap 'for p in $PIDS $SRV_PID; do kill -9 $p 2>/dev/null; done; ch_stop_all; rm -rf "$TMP"' EXIT INT TERM

ch_start one
CH1="clickhouse://127.0.0.1:$CH_HTTP_one"

# 1. Differential test.
mkdir -p $TMP/sqlite
"$DIFF" "$CH1/diff?flush=0ms" $TMP/sqlite > $TMP/diff.log 2>&1 || { cat $TMP/diff.log; fail "differential test"; }
grep -E 'compared|written' $TMP/diff.log

# A database of the previous layout (version 1: a row per stack) is refused with a clear error,
# and nothing is created in it.
ch_query one "CREATE DATABASE old1" >/dev/null
ch_query one "CREATE TABLE old1.meta (key String, value String) ENGINE = TinyLog" >/dev/null
ch_query one "INSERT INTO old1.meta VALUES ('magic', 'scorch-profile-store'), ('version', '1'), ('cluster', '')" >/dev/null
timeout 60 "$SCORCH" server --listen 127.0.0.1:0 --store "$CH1/old1" > $TMP/old1.log 2>&1 &&
	fail "the server started on a database of layout 1"
grep -q "store layout version 1 in 'old1' on 127.0.0.1:$CH_HTTP_one, this scorch reads 2" $TMP/old1.log ||
	fail "no clear error for layout 1: $(cat $TMP/old1.log)"
[ "$(ch_query one "SELECT count() FROM system.tables WHERE database = 'old1'")" = 1 ] ||
	fail "tables were created in a database of layout 1"
echo "layout 1 refused: $(grep -o 'store layout.*' $TMP/old1.log | head -1)"

# 2. The server's HTTP tests on this store.
# (server_auth is left out: authentication happens before the store is involved.)
T0=$(date +%s)
since() { echo "$(( $(date +%s) - T0 )) s"; }
for t in server_ingest server_errors server_limits server_crash; do
	SCORCH_TEST_STORE="$CH1/http_$t" sh tests/integration/$t.sh > $TMP/$t.log 2>&1 ||
		{ cat $TMP/$t.log; fail "tests/integration/$t.sh on clickhouse"; }
	grep -q '^SKIP' $TMP/$t.log && fail "$t skipped: $(grep '^SKIP' $TMP/$t.log)"
	echo "$t on clickhouse: ok ($(since))"
done

# 3. ClickHouse stopped and restarted under ingest.
printf 'main;a;b 4\nmain;a;c 3\nmain;d 2\nmain 1\n' > $TMP/req.folded
PER_REQ=10
client() { # URL ID: ingest until $TMP/stop; one line per answer: its status
	while [ ! -e $TMP/stop ]; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 15 --data-binary @$TMP/req.folded \
			--url-query "name=$3.cpu{client=$2}" "$1/ingest")
		echo $code >> $TMP/codes.$3.$2
		[ "$code" = 200 ] || sleep 0.1
	done
}
count_code() { cat $TMP/codes.$1.* 2>/dev/null | grep -c "^$2\$"; }
wait_codes() { # PREFIX CODE N: until N answers CODE (bounded)
	i=0
	while [ "$(count_code $1 $2)" -lt $3 ]; do
		i=$((i + 1))
		[ $i -gt 300 ] && fail "waited 30 s for $3 answers $2 (have $(count_code $1 $2); codes: $(cat $TMP/codes.$1.* | sort | uniq -c | tr '\n' ' '))"
		sleep 0.1
	done
}

SCORCH_TEST_STORE="$CH1/restart" start_server
rm -f $TMP/stop
client $URL 1 rs & PIDS="$PIDS $!"
client $URL 2 rs & PIDS="$PIDS $!"
wait_codes rs 200 10
ch_stop one TERM
n503=$(count_code rs 503)
wait_codes rs 503 $((n503 + 3))
# While ClickHouse is down: queries answer a clear error, the server itself is healthy.
code=$(status_of -G --data-urlencode query=rs.cpu "$URL/render")
[ "$code" = 503 ] || fail "query with clickhouse down: HTTP $code, want 503"
grep -q 'store unavailable' $TMP/body || fail "query error body: $(cat $TMP/body)"
code=$(status_of "$URL/healthz")
[ "$code" = 200 ] || fail "healthz with clickhouse down: HTTP $code"
kill -0 $SRV_PID || fail "the server died with clickhouse down"
n200=$(count_code rs 200)
ch_start one
wait_codes rs 200 $((n200 + 10))
touch $TMP/stop
wait $PIDS
PIDS=
acked=$(( $(count_code rs 200) * PER_REQ ))
total=$(ticks rs.cpu from=now-1h)
echo "clickhouse restart ($(since)): $(count_code rs 503) answers 503, acknowledged $acked samples, stored $total"
[ "$total" -ge "$acked" ] || fail "lost acknowledged samples over a clickhouse restart: stored $total < $acked"
[ "$total" -le $((acked + 2 * PER_REQ)) ] || fail "stored $total, more than acknowledged + in flight"
other=$(cat $TMP/codes.rs.* | grep -v '^200$' | grep -v '^503$' | sort | uniq -c | tr '\n' ' ')
[ -z "$other" ] || fail "answers other than 200/503 during the restart: $other"
stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "server exit status $SRV_STATUS after the restart test"
ch_stop one

# 4. Two shards, two scorch servers.
ch_pick_ports a
ch_pick_ports b
ch_start a "$CH_TCP_a $CH_TCP_b"
ch_start b "$CH_TCP_a $CH_TCP_b"
CH2="clickhouse://127.0.0.1:$CH_HTTP_a,127.0.0.1:$CH_HTTP_b/dist?cluster=scorch2"
start_scorch() { # NAME: a scorch server on the cluster; sets URL_NAME, PID_NAME
	rm -f $TMP/port.$1
	"$SCORCH" server --listen 127.0.0.1:0 --port-file $TMP/port.$1 --store "$CH2" 2>>$TMP/server.$1.log &
	eval "PID_$1=$!"
	PIDS="$PIDS $!"
	i=0
	while [ ! -s $TMP/port.$1 ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && { cat $TMP/server.$1.log; fail "scorch server $1 did not start"; }
		sleep 0.1
	done
	eval "URL_$1=http://127.0.0.1:$(cat $TMP/port.$1)"
}
start_scorch x
start_scorch y
rm -f $TMP/stop
cpids=
for c in 1 2 3; do
	client $URL_x $c dx & cpids="$cpids $!"; PIDS="$PIDS $!"
	client $URL_y $c dy & cpids="$cpids $!"; PIDS="$PIDS $!"
done
wait_codes dx 200 30
wait_codes dy 200 30
touch $TMP/stop
wait $cpids
ack_x=$(( $(count_code dx 200) * PER_REQ ))
ack_y=$(( $(count_code dy 200) * PER_REQ ))
bad=$(cat $TMP/codes.d* | grep -vc '^200$')
[ "$bad" = 0 ] || fail "cluster ingest: $bad answers other than 200"
for u in $URL_x $URL_y; do
	URL=$u
	[ "$(ticks dx.cpu from=now-1h)" = $ack_x ] || fail "$u: dx.cpu $(ticks dx.cpu from=now-1h), acknowledged $ack_x"
	[ "$(ticks dy.cpu from=now-1h)" = $ack_y ] || fail "$u: dy.cpu $(ticks dy.cpu from=now-1h), acknowledged $ack_y"
	[ "$(ticks '{}' from=now-1h)" = $((ack_x + ack_y)) ] || fail "$u: everything"
	[ "$(get /label-values label=client | tr -d '[]"')" = "1,2,3" ] || fail "$u: label values"
done
rows_a=$(ch_query a "SELECT count() FROM dist.samples_local")
rows_b=$(ch_query b "SELECT count() FROM dist.samples_local")
stacks_a=$(ch_query a "SELECT uniqExact(hash) FROM dist.stacks")
stacks_b=$(ch_query b "SELECT uniqExact(hash) FROM dist.stacks")
series_a=$(ch_query a "SELECT uniqExact(id) FROM dist.series")
series_b=$(ch_query b "SELECT uniqExact(id) FROM dist.series")
echo "2 shards ($(since)): acknowledged $ack_x + $ack_y samples through two servers; sample rows per shard $rows_a / $rows_b; stacks $stacks_a / $stacks_b; series $series_a / $series_b"
[ "$rows_a" -gt 0 ] && [ "$rows_b" -gt 0 ] || fail "samples not spread over both shards ($rows_a / $rows_b)"
[ "$stacks_a" = 4 ] && [ "$stacks_b" = 4 ] || fail "stacks not on every shard ($stacks_a / $stacks_b)"
[ "$series_a" = 6 ] && [ "$series_b" = 6 ] || fail "series not on every shard ($series_a / $series_b)"

# A shard down: ingest 503 (an insert needs every shard), queries a clear error; back up: recovered.
ch_stop b
URL=$URL_x
code=$(status_of --max-time 20 --data-binary @$TMP/req.folded --url-query 'name=dz.cpu' "$URL/ingest")
[ "$code" = 503 ] || fail "ingest with a shard down: HTTP $code ($(cat $TMP/body))"
code=$(status_of --max-time 20 -G --data-urlencode query=dx.cpu "$URL/render")
[ "$code" = 503 ] || fail "query with a shard down: HTTP $code ($(cat $TMP/body))"
ch_start b "$CH_TCP_a $CH_TCP_b"
i=0
until [ "$(status_of --max-time 20 --data-binary @$TMP/req.folded --url-query 'name=dz.cpu' "$URL/ingest")" = 200 ]; do
	i=$((i + 1))
	[ $i -gt 100 ] && fail "no recovery after the shard came back: $(cat $TMP/body)"
	sleep 0.2
done
[ "$(ticks dx.cpu from=now-1h)" = $ack_x ] || fail "after the shard came back: dx.cpu $(ticks dx.cpu from=now-1h)"
[ "$(ticks dz.cpu from=now-1h)" = $PER_REQ ] || fail "dz.cpu after recovery: $(ticks dz.cpu from=now-1h)"
kill -TERM $PID_x $PID_y
wait $PID_x || fail "scorch server x exit status $?"
wait $PID_y || fail "scorch server y exit status $?"
PIDS=
echo "store on clickhouse: ok ($(since))"
