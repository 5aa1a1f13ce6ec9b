#!/bin/sh
# server_limits.sh: `scorch server` at the edges: selections of everything ({} and regexes),
# "until=now" including the current second, names and label values with dots, slashes, spaces,
# quotes and UTF-8, empty bodies, sums past INT64_MAX (saturate, never wrap), stacks deeper
# than the store takes (cut, not refused), odd parameters, stalled clients that must neither
# block others nor hold a graceful stop, and ingest + queries + maintenance at the same time.
. tests/integration/server.inc

start_server
printf 'main;foo 5\nmain;bar 3\n' > $TMP/a.folded

# Everything: {} and an always-true regex select every series; until=now covers data written
# during the current second.
ingest app1.cpu $TMP/a.folded
ingest app2.cpu $TMP/a.folded
for q in '{}' '{service_name=~".*"}' '' '{__type__="cpu"}'; do
	[ "$(ticks "$q")" = 16 ] || fail "query '$q' selects $(ticks "$q"), want 16"
	[ "$(ticks "$q" from=now-1h until=now)" = 16 ] || fail "query '$q' until=now: $(ticks "$q" from=now-1h until=now)"
done
[ "$(curl -s -g "$URL/render?query={}&from=now-1h&until=now" | json_int numTicks)" = 16 ] ||
	fail "unencoded {} in the URL"

# Names: dots (the last one starts the type), dashes, slashes, UTF-8; label values with
# spaces, quotes, backslashes and UTF-8 come back exactly.
ingest 'my.app/v-2.cpu' $TMP/a.folded
[ "$(ticks 'my.app/v-2.cpu')" = 8 ] || fail "app name with dots and slashes"
ingest 'ünïcode-app.cpu' $TMP/a.folded
[ "$(ticks 'ünïcode-app.cpu')" = 8 ] || fail "UTF-8 app name"
ingest 'sp.cpu{k="a b \"q\" \\ é"}' $TMP/a.folded
[ "$(get /label-values label=k)" = '["a b \"q\" \\ é"]' ] || fail "label value: $(get /label-values label=k)"
[ "$(ticks 'sp.cpu{k="a b \"q\" \\ é"}')" = 8 ] || fail "select by the odd label value"

# An empty body is accepted and stores nothing, not even a series.
code=$(status_of -X POST "$URL/ingest?name=empty.cpu")
[ "$code" = 200 ] || fail "empty body: HTTP $code"
get /label-values label=__name__ | grep -q empty && fail "an empty body created a series"

# Sums past INT64_MAX saturate (within a request, across requests, in every view).
printf 'a;b 9223372036854775807\na;b 1\nc 5\n' > $TMP/huge.folded
ingest ovf.cpu $TMP/huge.folded
ingest ovf.cpu $TMP/huge.folded
get /render query=ovf.cpu > $TMP/ovf.json
grep -q '"numTicks":9223372036854775807,' $TMP/ovf.json || fail "render of huge sums: $(head -c 300 $TMP/ovf.json)"
grep -q -- '-[0-9]' $TMP/ovf.json && fail "negative numbers in $(head -c 300 $TMP/ovf.json)"
get /api/v1/top query=ovf.cpu | grep -q '"total":9223372036854775807,' || fail "top of huge sums"
get /api/v1/series query=ovf.cpu | grep -q '"total":9223372036854775807,' || fail "series of huge sums"
get /render-diff leftQuery=ovf.cpu rightQuery=ovf.cpu | grep -q '"numTicks":9223372036854775807,' ||
	fail "diff of huge sums"

# A 10 000-frame stack is kept cut to the store's depth, root side first.
awk 'BEGIN { for (i = 0; i < 10000; i++) printf "%sr%d", (i ? ";" : ""), i; print " 7"; print "main;x 3" }' \
	> $TMP/deep.folded
ingest deep.cpu $TMP/deep.folded
get /render query=deep.cpu format=folded > $TMP/deep.out
[ "$(total_count $TMP/deep.out)" = 10 ] || fail "deep stack total"
grep -q '^r0;r1;.*;r2046;\[truncated\] 7$' $TMP/deep.out || fail "deep stack not cut at the root side"

# Parameters at the edges.
[ "$(ticks app1.cpu from=now-3650d)" = 8 ] || fail "ten-year range"
[ "$(ticks app1.cpu from=0 until=now)" = 8 ] || fail "range from 0"
[ "$(get /render query=app1.cpu maxNodes=1 | json_int numTicks)" = 8 ] || fail "maxNodes=1"
get /render query=app1.cpu max-nodes=1 | grep -q '"names":\["total","other"\]' ||
	fail "max-nodes (the older spelling) ignored"
for bad in maxNodes=0 maxNodes=-1 maxNodes=99999999999999999999 from=now-1x until=99999999999999999999; do
	[ "$(status_of -G --data-urlencode "$bad" "$URL/render")" = 400 ] || fail "$bad: not 400"
done
[ "$(status_of "$URL/render?from=200&until=100")" = 400 ] || fail "from after until"
[ "$(status_of -X POST "$URL/render")" = 405 ] || fail "POST /render"
[ "$(status_of "$URL/ingest")" = 405 ] || fail "GET /ingest"
[ "$(status_of "$URL/no/such/path")" = 404 ] || fail "unknown path"
grep -q '^{"error":' $TMP/body || fail "404 without a JSON error"

# Stalled clients (headers sent, body never finished) neither block other requests nor hold
# a graceful stop for the whole grace period.
if command -v python3 >/dev/null 2>&1; then
	python3 - "$(cat $TMP/port)" > $TMP/slow.log 2>&1 <<'EOF' &
import socket, sys, time
socks = []
for i in range(20):
    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
    s.send(b'POST /ingest?name=slow.cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nmain;a 1\n')
    socks.append(s)
print('open', flush=True)
time.sleep(30)
EOF
	SLOW=$!
	i=0
	until grep -q open $TMP/slow.log 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 100 ] && fail "slow clients did not connect: $(cat $TMP/slow.log)"
		sleep 0.1
	done
	[ "$(status_of "$URL/healthz")" = 200 ] || fail "healthz with stalled clients"
	ingest app1.cpu $TMP/a.folded
	[ "$(ticks app1.cpu)" = 16 ] || fail "ingest with stalled clients"
	kill -TERM $SRV_PID
	i=0
	while kill -0 $SRV_PID 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 150 ] && fail "SIGTERM waits for stalled clients"
		sleep 0.1
	done
	stop_server TERM
	[ "$SRV_STATUS" = 0 ] || fail "exit status $SRV_STATUS"
	kill $SLOW 2>/dev/null
	wait $SLOW 2>/dev/null
	start_server
else
	echo "no python3: stalled-client checks skipped"
fi

# Ingest, queries and maintenance at the same time: every acknowledged sample is there.
before=$(ticks conc.cpu)
writer() {
	n=0
	while [ $n -lt 20 ]; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @$TMP/a.folded \
			--url-query "name=conc.cpu{w=$1}" "$URL/ingest")
		[ "$code" = 200 ] && echo ok >> $TMP/conc.$1
		n=$((n + 1))
	done
}
reader() {
	n=0
	while [ $n -lt 20 ]; do
		for p in /render /api/v1/top /api/v1/series /labels /metrics; do
			code=$(curl -s -o /dev/null -w '%{http_code}' -G --data-urlencode 'query={}' "$URL$p")
			[ "$code" = 200 ] || echo "$p $code" >> $TMP/conc.readfail
		done
		n=$((n + 1))
	done
}
writer 1 & w1=$!
writer 2 & w2=$!
reader & r1=$!
wait $w1 $w2 $r1
[ ! -e $TMP/conc.readfail ] || fail "queries failed during ingest: $(cat $TMP/conc.readfail)"
acks=$(cat $TMP/conc.1 $TMP/conc.2 | wc -l)
[ "$acks" = 40 ] || fail "only $acks of 40 concurrent ingests acknowledged"
[ $(( $(ticks conc.cpu) - before )) = 320 ] || fail "concurrent ingest total $(ticks conc.cpu)"

stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "exit status $SRV_STATUS"
echo "server limits: ok"
