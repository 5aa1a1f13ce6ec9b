#!/bin/sh
# server_crash.sh: durability of acknowledged ingests. Several clients push a stream of
# ingests; the server is killed with SIGKILL in the middle, restarted on the same data, and
# every acknowledged (2xx) sample must be there (at most the requests in flight at the kill
# may be there without an acknowledgement). Then the same with a graceful SIGTERM, which must
# exit 0 and lose nothing acknowledged.
. tests/integration/server.inc

CLIENTS=3
PER_REQ=10  # samples per request
printf 'main;a;b 4\nmain;a;c 3\nmain;d 2\nmain 1\n' > $TMP/req.folded

client() { # ID: ingest until $TMP/stop exists or 400 requests; log one line per 200
	n=0
	while [ ! -e $TMP/stop ] && [ $n -lt 400 ]; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --data-binary @$TMP/req.folded \
			--url-query 'name=crash.cpu{client='$1'}' "$URL/ingest")
		[ "$code" = 200 ] && echo ok >> $TMP/acks.$1
		n=$((n + 1))
	done
}

run_round() { # SIGNAL
	rm -f $TMP/stop $TMP/acks.*
	before=$(ticks crash.cpu)
	pids=
	i=0
	while [ $i -lt $CLIENTS ]; do
		client $i &
		pids="$pids $!"
		i=$((i + 1))
	done
	# Let some requests through (bounded wait), then stop the server under load.
	i=0
	while [ "$(cat $TMP/acks.* 2>/dev/null | wc -l)" -lt 30 ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	stop_server $1
	touch $TMP/stop
	wait $pids
	acked=$(( $(cat $TMP/acks.* 2>/dev/null | wc -l) * PER_REQ ))
	[ $acked -gt 0 ] || fail "no ingest was acknowledged before SIG$1"
	start_server
	total=$(( $(ticks crash.cpu) - before ))
	echo "SIG$1: acknowledged $acked samples, stored $total"
	[ $total -ge $acked ] || fail "SIG$1 lost acknowledged data: stored $total < acknowledged $acked"
	[ $total -le $((acked + CLIENTS * PER_REQ)) ] || fail "SIG$1: stored $total, more than acknowledged + in flight"
}

start_server
run_round KILL
run_round TERM
[ "$SRV_STATUS" = 0 ] || fail "SIGTERM exit status $SRV_STATUS"
grep -q 'SIGTERM received' $TMP/server.log || fail "no shutdown message"
# The store opens cleanly after both stops and still takes data.
ingest crash.cpu $TMP/req.folded
stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "final exit status $SRV_STATUS"
echo "server crash/shutdown: ok"
