#!/bin/sh
# server_errors.sh: bad input to `scorch server`: every bad request gets the documented 4xx with
# a JSON error naming the problem, nothing of it is stored, the server keeps serving, and the
# rejection counters move.
. tests/integration/server.inc

start_server --max-body 1MB

printf 'main;foo 5\n' > $TMP/good.folded
ingest 'app.cpu{env=prod}' $TMP/good.folded
[ "$(ticks app.cpu)" = 5 ] || fail "baseline"

# expect CODE WORD CURL-ARGS...: the status and an {"error": ...} body mentioning WORD.
expect() {
	want=$1 word=$2
	shift 2
	code=$(status_of "$@")
	[ "$code" = "$want" ] || fail "HTTP $code (want $want) for $*: $(cat $TMP/body)"
	grep -q '^{"error":"' $TMP/body || fail "no JSON error body for $*: $(cat $TMP/body)"
	grep -qi "$word" $TMP/body || fail "error for $* does not mention '$word': $(cat $TMP/body)"
}

# 400: parameters.
expect 400 name --data-binary @$TMP/good.folded "$URL/ingest"
expect 400 name --data-binary @$TMP/good.folded --url-query 'name=app{env}' "$URL/ingest"
expect 400 name --data-binary @$TMP/good.folded --url-query 'name=.cpu' "$URL/ingest"
expect 400 format --data-binary @$TMP/good.folded --url-query name=app.cpu "$URL/ingest?format=trie"
expect 400 from --data-binary @$TMP/good.folded --url-query name=app.cpu "$URL/ingest?from=yesterday"
expect 400 until --data-binary @$TMP/good.folded --url-query name=app.cpu "$URL/ingest?from=2000&until=1000"
expect 400 future --data-binary @$TMP/good.folded --url-query name=app.cpu "$URL/ingest?from=now%2B2d"
expect 400 sampleRate --data-binary @$TMP/good.folded --url-query name=app.cpu "$URL/ingest?sampleRate=abc"
labels=$(awk 'BEGIN { for (i = 0; i < 40; i++) printf "%sk%d=v", (i ? "," : ""), i }')
expect 400 labels --data-binary @$TMP/good.folded --url-query "name=app.cpu{$labels}" "$URL/ingest"
long=$(awk 'BEGIN { for (i = 0; i < 2000; i++) printf "x" }')
expect 400 longer --data-binary @$TMP/good.folded --url-query "name=app.cpu{k=$long}" "$URL/ingest"
expect 400 query -G --data-urlencode 'query=app.cpu{env=~"("}' "$URL/render"
expect 400 query -G --data-urlencode 'query=app.cpu{env' "$URL/render"
expect 400 from -G --data-urlencode 'query=app.cpu' --data-urlencode from=garbage "$URL/render"
expect 400 maxNodes -G --data-urlencode 'query=app.cpu' --data-urlencode maxNodes=0 "$URL/render"
expect 400 format -G --data-urlencode 'query=app.cpu' --data-urlencode format=png "$URL/render"
expect 400 label "$URL/label-values"
expect 400 unit -G --data-urlencode unit=furlongs "$URL/api/v1/series"

# 413: a body over --max-body, with and without Content-Length.
head -c 2000000 /dev/zero | tr '\0' 'a' > $TMP/huge
expect 413 larger --data-binary @$TMP/huge --url-query name=app.cpu "$URL/ingest"
expect 413 larger -H 'Transfer-Encoding: chunked' --data-binary @$TMP/huge --url-query name=app.cpu "$URL/ingest"

# 422: bodies that do not parse; a good line before a bad one stores nothing.
printf 'main;foo 5\nmain;bar\n' > $TMP/bad.folded
expect 422 'line 2' --data-binary @$TMP/bad.folded --url-query 'name=app.cpu{env=prod}' "$URL/ingest"
printf 'main;foo 5\nmain;bar -3\n' > $TMP/neg.folded
expect 422 count --data-binary @$TMP/neg.folded --url-query 'name=app.cpu{env=prod}' "$URL/ingest"
head -c 3000 /dev/urandom > $TMP/garbage
expect 422 pprof --data-binary @$TMP/garbage --url-query name=app.cpu "$URL/ingest?format=pprof"
printf '\037\213\010\000garbage' > $TMP/badgzip
expect 422 pprof --data-binary @$TMP/badgzip --url-query name=app.cpu "$URL/ingest?format=pprof"
expect 422 jfr --data-binary @$TMP/good.folded --url-query name=app.cpu "$URL/ingest?format=jfr"
expect 422 multipart -F "other=@$TMP/good.folded" --url-query name=app.cpu "$URL/ingest"
expect 422 multipart -H 'Content-Type: multipart/form-data; boundary=zzz' --data-binary @$TMP/good.folded \
	--url-query name=app.cpu "$URL/ingest"

# 401 is not used without a token; 404 and 405.
expect 404 endpoint "$URL/nope"
expect 405 method "$URL/ingest"

# Nothing of the rejected requests was stored, and the server still serves.
[ "$(ticks app.cpu)" = 5 ] || fail "rejected data was stored: $(ticks app.cpu)"
[ "$(get /label-values label=__name__)" = '["app.cpu"]' ] || fail "series from rejected requests"
ingest 'app.cpu{env=prod}' $TMP/good.folded
[ "$(ticks app.cpu)" = 10 ] || fail "server does not take data after errors"

get /metrics > $TMP/metrics.txt
grep -q '^scorch_ingest_rejected_total{reason="bad_request"} 10$' $TMP/metrics.txt ||
	fail "bad_request count: $(grep rejected_total $TMP/metrics.txt)"
grep -q '^scorch_ingest_rejected_total{reason="too_large"} 2$' $TMP/metrics.txt || fail "too_large count"
grep -q '^scorch_ingest_rejected_total{reason="parse_error"} 7$' $TMP/metrics.txt || fail "parse_error count"
grep -q 'scorch_http_requests_total{route="/ingest",code="413"} 2' $TMP/metrics.txt || fail "413 by route"

stop_server TERM
[ "$SRV_STATUS" = 0 ] || fail "exit status $SRV_STATUS"
echo "server errors: ok"
