#!/bin/sh
# server_retention.sh: retention with a real `scorch server`. By age: the periodic maintenance
# drops data older than --retention (and series left without data), keeps the rest. By size:
# with --max-disk the store stays under the cap while hours of distinct stacks are pushed, the
# oldest hours go first and the newest data is kept (the cap on a full disk and within the
# current hour: server_disk.sh).
. tests/integration/server.inc

now=$(date +%s)

# wait_maintenance: until the maintenance loop (every 10 s, first ~1 s after start) ran once.
wait_maintenance() {
	i=0
	until get /metrics | grep -q '^scorch_store_maintenance_runs_total [1-9]'; do
		i=$((i + 1))
		[ $i -gt 100 ] && fail "no store maintenance within 10 s"
		sleep 0.1
	done
}

# --- By age.
start_server --retention 2h
printf 'main;old 5\n' > $TMP/old.folded
printf 'main;new 7\n' > $TMP/new.folded
ingest old.cpu $TMP/old.folded --url-query from=$((now - 5 * 3600))
ingest keep.cpu $TMP/new.folded --url-query from=$((now - 1800))
ingest keep.cpu $TMP/old.folded --url-query from=$((now - 4 * 3600))
# A restart runs the maintenance right away: whatever it found is beyond the retention.
stop_server TERM
start_server --retention 2h
wait_maintenance
[ "$(ticks old.cpu from=now-6h)" = 0 ] || fail "data older than the retention survived"
[ "$(ticks keep.cpu from=now-6h)" = 7 ] || fail "retention dropped recent data: $(ticks keep.cpu from=now-6h)"
[ "$(get /label-values label=__name__)" = '["keep.cpu"]' ] ||
	fail "series without data left: $(get /label-values label=__name__)"
get /metrics | grep -q '^scorch_store_maintenance_errors_total 0$' || fail "maintenance errors"
stop_server TERM

# --- By size: 12 hours of 3000 new stacks each (about 0.5 MB in the store per hour) under a 4 MB
# cap, which counts every file of the store (database, WAL, its index, the reserve).
DATA=$TMP/data-cap
CAP=4000000
store_files() { cat $DATA/scorch.db $DATA/scorch.db-wal $DATA/scorch.db-shm $DATA/scorch.reserve 2>/dev/null | wc -c; }
start_server --retention 0 --max-disk 4MB
h=12
while [ $h -ge 1 ]; do
	awk -v h=$h 'BEGIN { srand(h); for (i = 0; i < 3000; i++) { s = "h" h "_" i;
		for (j = 0; j < 5; j++) s = s ";f" int(rand() * 100000); print s, 1 + int(rand() * 9) } }' \
		> $TMP/chunk.folded
	ingest cap.cpu $TMP/chunk.folded --url-query from=$((now - h * 3600))
	# Enforced before the write: the files are under the cap once it is acknowledged.
	[ "$(store_files)" -le $CAP ] || fail "hour -$h: $(store_files) bytes on disk over the $CAP cap"
	h=$((h - 1))
done
last=$(total_count $TMP/chunk.folded)
[ "$(ticks cap.cpu from=now-2h)" = "$last" ] || fail "the newest hour was dropped: $(ticks cap.cpu from=now-2h) != $last"
[ "$(ticks cap.cpu from=now-13h until=now-8h)" = 0 ] || fail "the oldest hours were kept"
stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "exit status $SRV_STATUS"
echo "server retention: ok"
