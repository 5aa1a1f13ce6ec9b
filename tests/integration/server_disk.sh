#!/bin/sh
# server_disk.sh: `scorch server` on small file systems (tmpfs). With --max-disk the files of
# the store (database, WAL, its index, the reserve) never pass the cap once a write is
# acknowledged, even when the current hour alone is larger than the cap (its oldest rows go),
# and a write that cannot fit is refused with 507 naming the cap. On a full disk, writes get
# 507 and nothing else breaks: queries, /metrics, a graceful stop and a restart on the full disk
# work, and writes resume once space is free.
. tests/integration/server.inc

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a small tmpfs"; exit 0; }
MNT=$TMP/disk
mkdir -p $MNT
mount -t tmpfs -o size=24m tmpfs $MNT 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 0; }
trap 'if [ -n "$SRV_PID" ]; then kill -9 $SRV_PID 2>/dev/null; wait $SRV_PID 2>/dev/null; fi;
      umount $MNT 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM

now=$(date +%s)
store_files() { cat $DATA/scorch.db $DATA/scorch.db-wal $DATA/scorch.db-shm $DATA/scorch.reserve 2>/dev/null | wc -c; }
# chunk TAG N: N new distinct stacks of 6 frames (about 1 MB in the store per 3000)
SEED=0
chunk() {
	SEED=$((SEED + 1))
	awk -v tag=$1 -v n=$2 -v seed=$SEED 'BEGIN { srand(seed); for (i = 0; i < n; i++) { s = tag "_" i;
		for (j = 0; j < 5; j++) s = s ";f" int(rand() * 1000000); print s, 1 } }' > $TMP/chunk.folded
}
post() { # NAME [CURL-ARGS...]: the HTTP status of a POST of chunk.folded
	n=$1
	shift
	status_of --data-binary @$TMP/chunk.folded "$@" --url-query "name=$n" "$URL/ingest"
}

# --- 1. The cap, including the current hour: 6 past hours then 8 pushes now, 6 MB cap.
CAP=6000000
DATA=$MNT/capped
start_server --retention 0 --max-disk 6MB
for h in 6 5 4 3 2 1; do
	chunk past$h 3000
	code=$(post cap.cpu --url-query from=$((now - h * 3600)))
	[ "$code" = 200 ] || fail "hour -$h: HTTP $code: $(cat $TMP/body)"
	[ "$(store_files)" -le $CAP ] || fail "hour -$h: $(store_files) bytes on disk over the cap"
done
k=1
while [ $k -le 8 ]; do
	chunk now$k 3000
	code=$(post cap.cpu)
	[ "$code" = 200 ] || fail "push $k of the current hour: HTTP $code: $(cat $TMP/body)"
	[ "$(store_files)" -le $CAP ] || fail "push $k now: $(store_files) bytes on disk over the cap"
	k=$((k + 1))
done
echo "files after 14 pushes of ~1 MB under a 6 MB cap: $(store_files) bytes"
# The newest push is whole; the past hours are gone; the current hour lost its oldest rows.
get /render query='cap.cpu{}' from=now-1h format=folded > $TMP/now.folded
n8=$(grep -c '^now8_' $TMP/now.folded)
[ "$n8" = 3000 ] || fail "the newest push has $n8 of its 3000 stacks"
grep -q '^now1_' $TMP/now.folded && fail "the oldest rows of the current hour were kept over the cap"
[ "$(ticks 'cap.cpu{}' from=now-7h until=now-1h)" = 0 ] || fail "past hours kept over the cap"
# A single write that cannot fit even in an empty store is refused, naming the cap.
chunk huge 40000
code=$(post cap.cpu)
[ "$code" = 507 ] || fail "a write larger than the cap: HTTP $code"
grep -q "max-disk" $TMP/body || fail "507 without naming the cap: $(cat $TMP/body)"
[ "$(store_files)" -le $CAP ] || fail "after the refused write: $(store_files) bytes"
[ "$(ticks 'cap.cpu{}' from=now-1h)" -gt 0 ] || fail "the refused write lost stored data"
stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "exit status $SRV_STATUS"

# --- 2. A full disk (no cap): 507, everything else keeps working.
rm -rf $MNT/capped
DATA=$MNT/full
start_server --retention 0
chunk first 1000
[ "$(post full.cpu)" = 200 ] || fail "first push: $(cat $TMP/body)"
avail=$(df -B1 $MNT | tail -1 | awk '{print $4}')
dd if=/dev/zero of=$MNT/filler bs=1M count=$(( avail / 1048576 - 2 )) 2>/dev/null
k=0
code=200
while [ "$code" = 200 ] && [ $k -lt 30 ]; do
	chunk full$k 3000
	code=$(post full.cpu)
	k=$((k + 1))
done
[ "$code" = 507 ] || fail "pushes onto a full disk: HTTP $code after $k pushes"
grep -q "disk full" $TMP/body || fail "507 without saying why: $(cat $TMP/body)"
echo "disk full after $k pushes: $(cat $TMP/body)"
for p in /healthz /metrics /labels "/render?query=full.cpu" "/api/v1/top?query=full.cpu"; do
	[ "$(status_of "$URL$p")" = 200 ] || fail "$p on a full disk: $(cat $TMP/body)"
done
stored=$(ticks full.cpu)
[ "${stored:-0}" -ge 1000 ] || fail "data lost on the full disk: $stored"
# Stop and start again on the full disk: both work, queries answer, new data still waits.
stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "stop on a full disk: exit status $SRV_STATUS"
start_server --retention 0
[ "$(ticks full.cpu)" = "$stored" ] || fail "after a restart on the full disk: $(ticks full.cpu) != $stored"
[ "$(post full.cpu)" = 507 ] || fail "a push on the still full disk: not 507"
# Space comes back: writes resume.
rm -f $MNT/filler
[ "$(post full.cpu)" = 200 ] || fail "a push after space was freed: $(cat $TMP/body)"
stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "exit status $SRV_STATUS"
echo "server disk: ok"
