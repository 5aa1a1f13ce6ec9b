#!/bin/sh
# server_ingest.sh: ingest folded and pprof (raw, gzip, multipart) into a real `scorch server`,
# then query it back: exact totals, selectors (=, !=, =~, !~), labels, label values, diff, top,
# sandwich, series, output formats, time ranges, truncation, metrics counters.
. tests/integration/server.inc

start_server

printf 'main;foo;bar 10\nmain;foo;baz 5\nmain;qux 3\n' > $TMP/a.folded       # 18
printf 'main;foo;bar 1\r\nmain;other 4\n\n' > $TMP/b.folded                 # 5
printf 'x;y 7\n' > $TMP/c.folded                                            # 7

ingest 'app1.cpu{env=prod,region=eu}' $TMP/a.folded
ingest 'app1.cpu{env=prod,region=eu}' $TMP/a.folded
ingest 'app1.cpu{env=staging, region="us"}' $TMP/b.folded
ingest 'app2.cpu{env=prod}' $TMP/c.folded

# Exact totals through selectors.
[ "$(ticks 'app1.cpu')" = 41 ] || fail "app1.cpu total $(ticks 'app1.cpu'), want 41"
[ "$(ticks 'app1.cpu{env="prod"}')" = 36 ] || fail "env=prod"
[ "$(ticks 'app1.cpu{env!="prod"}')" = 5 ] || fail "env!=prod"
[ "$(ticks 'app1.cpu{region=~"e.*"}')" = 36 ] || fail "region=~e.*"
[ "$(ticks 'app1.cpu{region!~"e.*"}')" = 5 ] || fail "region!~e.*"
[ "$(ticks '{env="prod"}')" = 43 ] || fail "all apps with env=prod: $(ticks '{env="prod"}')"
[ "$(ticks 'app1')" = 41 ] || fail "app without type"
[ "$(ticks 'nosuchapp.cpu')" = 0 ] || fail "unknown app has data"

# Flamebearer shape: root "total", names, 4 ints per node.
get /render 'query=app1.cpu{env="prod"}' > $TMP/fb.json
grep -q '"names":\["total","main","foo","qux","bar","baz"\]' $TMP/fb.json || fail "names: $(cat $TMP/fb.json)"
grep -q '"levels":\[\[0,36,0,0\],\[0,36,0,1\],\[0,30,0,2,0,6,6,3\],\[0,20,20,4,0,10,10,5\]\]' $TMP/fb.json ||
	fail "levels: $(cat $TMP/fb.json)"
grep -q '"format":"single"' $TMP/fb.json || fail "metadata format"
grep -q '"name":"app1.cpu"' $TMP/fb.json || fail "metadata name"
grep -q '"durationDelta":[1-9][0-9]*' $TMP/fb.json || fail "timeline"

# Labels and values.
get /labels > $TMP/labels.json
for l in env region service_name; do
	grep -q "\"$l\"" $TMP/labels.json || fail "label $l missing from $(cat $TMP/labels.json)"
done
[ "$(get /label-values label=env)" = '["prod","staging"]' ] || fail "env values: $(get /label-values label=env)"
[ "$(get /label-values label=region query=app1.cpu{env=\"prod\"})" = '["eu"]' ] || fail "region values with a query"
[ "$(get /label-values label=__name__)" = '["app1.cpu","app2.cpu"]' ] || fail "app names: $(get /label-values label=__name__)"

# pprof: raw gzip, with the type from the profile, and multipart.
"$SCORCH" convert $TMP/a.folded $TMP/a.pb.gz 2>$TMP/convert.log || fail "scorch convert: $(cat $TMP/convert.log)"
ingest 'pp{env=test}' $TMP/a.pb.gz --url-query format=pprof
[ "$(ticks 'pp.cpu')" = 18 ] || fail "pprof ingest: $(ticks 'pp.cpu')"
code=$(status_of -F "profile=@$TMP/a.pb.gz" --url-query 'name=pp.cpu{env=test}' "$URL/ingest")
[ "$code" = 200 ] || fail "multipart ingest: $code $(cat $TMP/body)"
[ "$(ticks 'pp.cpu')" = 36 ] || fail "after multipart: $(ticks 'pp.cpu')"
get /render query=pp.cpu format=folded | sort > $TMP/pp.folded
printf 'main;foo;bar 20\nmain;foo;baz 10\nmain;qux 6\n' | diff - $TMP/pp.folded || fail "folded export"
get /render query=pp.cpu format=pprof > $TMP/export.pb.gz
"$SCORCH" convert $TMP/export.pb.gz $TMP/export.folded || fail "exported pprof does not decode"
[ "$(total_count $TMP/export.folded)" = 36 ] || fail "exported pprof total"
get /render query=pp.cpu format=html | grep -q '<html' || fail "html export"

# A Go heap profile: every sample type is a series (app.alloc_objects, ...); a Go CPU profile
# (samples and cpu nanoseconds) is one cpu series.
HEAP=tests/fuzz/corpus/pprof/go-heap.pb.gz
code=$(status_of -F "profile=@$HEAP" --url-query 'name=heapapp{env=test}' "$URL/ingest")
[ "$code" = 200 ] || fail "heap ingest: $code $(cat $TMP/body)"
[ "$(json_int series < $TMP/body)" = 4 ] || fail "heap ingest series: $(cat $TMP/body)"
[ "$(get /label-values label=__type__ query=heapapp)" = '["alloc_objects","alloc_space","inuse_objects","inuse_space"]' ] ||
	fail "heap types: $(get /label-values label=__type__ query=heapapp)"
[ "$(ticks heapapp.inuse_space from=0)" = 4380407 ] || fail "inuse_space: $(ticks heapapp.inuse_space from=0)"
[ "$(ticks heapapp.alloc_objects from=0)" = 6789 ] || fail "alloc_objects: $(ticks heapapp.alloc_objects from=0)"
get /render query=heapapp.alloc_objects from=0 | grep -q '"units":"objects"' || fail "objects units"
code=$(status_of --data-binary @tests/fuzz/corpus/pprof/go-cpu.pb.gz --url-query 'name=cpuapp' "$URL/ingest?format=pprof")
[ "$code" = 200 ] && [ "$(json_int series < $TMP/body)" = 1 ] || fail "Go CPU profile: $code $(cat $TMP/body)"
[ "$(get /label-values label=__type__ query=cpuapp)" = '["cpu"]' ] || fail "Go CPU types"

# Diff.
get /render-diff 'leftQuery=app1.cpu{env="prod"}' 'rightQuery=app1.cpu{env="staging"}' > $TMP/diff.json
[ "$(json_int leftTicks < $TMP/diff.json)" = 36 ] || fail "diff leftTicks: $(cat $TMP/diff.json)"
[ "$(json_int rightTicks < $TMP/diff.json)" = 5 ] || fail "diff rightTicks"
[ "$(json_int numTicks < $TMP/diff.json)" = 41 ] || fail "diff numTicks"
grep -q '"format":"double"' $TMP/diff.json || fail "diff format"
grep -q '"levels":\[\[0,36,0,0,5,0,0\],' $TMP/diff.json || fail "diff root: $(cat $TMP/diff.json)"

# Top table and sandwich.
get /api/v1/top query=app1.cpu > $TMP/top.json
grep -q '"rows":\[{"name":"bar","self":21,"total":21}' $TMP/top.json || fail "top: $(cat $TMP/top.json)"
get /api/v1/top query=app1.cpu sort=total limit=1 | grep -q '"rows":\[{"name":"main","self":0,"total":41}\]' ||
	fail "top by total"
get /api/v1/sandwich query=app1.cpu function=foo > $TMP/sw.json
[ "$(json_int total < $TMP/sw.json)" = 31 ] || fail "sandwich total: $(cat $TMP/sw.json)"
grep -q '"callees":{"names":\["total","foo","bar","baz"\]' $TMP/sw.json || fail "sandwich callees"
[ "$(status_of -G --data-urlencode query=app1.cpu --data-urlencode function=nope "$URL/api/v1/sandwich")" = 404 ] ||
	fail "sandwich of an unknown function"

# Time series, grouped, in samples and in cores.
get /api/v1/series query=app1.cpu group_by=env > $TMP/series.json
grep -q '{"group":"prod","total":36,' $TMP/series.json || fail "series: $(cat $TMP/series.json)"
grep -q '{"group":"staging","total":5,' $TMP/series.json || fail "series staging"
get /api/v1/series 'query={env="prod"}' group_by=__name__ > $TMP/series.json
grep -q '{"group":"app1.cpu","total":36,' $TMP/series.json || fail "series by __name__: $(cat $TMP/series.json)"
grep -q '{"group":"app2.cpu","total":7,' $TMP/series.json || fail "series by __name__ app2"
get /api/v1/series query=app1.cpu unit=cores step=10s | grep -q '"unit":"cores"' || fail "series in cores"

# Time ranges: data written two hours ago is outside the default hour and inside its range.
T=$(( $(date +%s) - 7200 ))
code=$(status_of --data-binary @$TMP/c.folded --url-query 'name=old.cpu' "$URL/ingest?from=$T&until=$((T + 10))")
[ "$code" = 200 ] || fail "ingest with from/until: $code"
[ "$(ticks old.cpu)" = 0 ] || fail "old data in the last hour"
[ "$(ticks old.cpu from=$((T - 5)) until=$((T + 5)))" = 7 ] || fail "old data in its range"
[ "$(ticks old.cpu from=now-3h until=now-1h)" = 7 ] || fail "now-3h..now-1h"

# Truncation keeps the total and merges the rest into "other".
get /render query=app1.cpu maxNodes=3 > $TMP/trunc.json
[ "$(json_int numTicks < $TMP/trunc.json)" = 41 ] || fail "truncated total"
grep -q '"other"' $TMP/trunc.json || fail "no other node: $(cat $TMP/trunc.json)"

# Metrics moved.
get /metrics > $TMP/metrics.txt
grep -q '^scorch_ingest_requests_total 9$' $TMP/metrics.txt || fail "ingest requests: $(grep ingest_requests $TMP/metrics.txt)"
grep -q '^scorch_ingest_samples_total 8774498$' $TMP/metrics.txt || fail "ingest samples: $(grep ingest_samples $TMP/metrics.txt)"
grep -q 'scorch_http_request_duration_seconds_count{route="/render"} [1-9]' $TMP/metrics.txt || fail "render latency"
wait_until 5 metric_is scorch_store_series '^[1-9]' || fail "store series gauge"

stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "server exit status $SRV_STATUS after SIGTERM"
echo "server ingest/query: ok"
