#!/bin/sh
# server_auth.sh: with --auth-token-file every endpoint (including /metrics and /healthz) wants
# "Authorization: Bearer <token>": missing or wrong tokens get 401 with a JSON error and store
# nothing; the right one works.
. tests/integration/server.inc

printf 's3cret-token\n' > $TMP/token
printf 'Authorization: Bearer s3cret-token\n' > $TMP/auth_header
CURL_AUTH="-H @$TMP/auth_header"
start_server --auth-token-file $TMP/token

printf 'main;foo 5\n' > $TMP/a.folded

for path in /healthz /metrics /labels /render /api/v1/top; do
	code=$(curl -s -o $TMP/body -w '%{http_code}' "$URL$path")
	[ "$code" = 401 ] || fail "$path without a token: HTTP $code"
	grep -q '"error"' $TMP/body || fail "$path: no JSON error"
	code=$(curl -s -o $TMP/body -w '%{http_code}' -H 'Authorization: Bearer wrong' "$URL$path")
	[ "$code" = 401 ] || fail "$path with a wrong token: HTTP $code"
	code=$(curl -s -o $TMP/body -w '%{http_code}' -H 'Authorization: Bearer s3cret-token-and-more' "$URL$path")
	[ "$code" = 401 ] || fail "$path with a longer token: HTTP $code"
	code=$(curl -s -o $TMP/body -w '%{http_code}' -H 'Authorization: Basic czNjcmV0LXRva2Vu' "$URL$path")
	[ "$code" = 401 ] || fail "$path with basic auth: HTTP $code"
	code=$(curl -s -o $TMP/body -w '%{http_code}' $CURL_AUTH "$URL$path")
	[ "$code" = 200 ] || fail "$path with the token: HTTP $code $(cat $TMP/body)"
done

code=$(curl -s -o $TMP/body -w '%{http_code}' --data-binary @$TMP/a.folded "$URL/ingest?name=app.cpu")
[ "$code" = 401 ] || fail "ingest without a token: HTTP $code"
code=$(curl -s -o $TMP/body -w '%{http_code}' -H 'Authorization: Bearer nope' --data-binary @$TMP/a.folded "$URL/ingest?name=app.cpu")
[ "$code" = 401 ] || fail "ingest with a wrong token: HTTP $code"
[ "$(get /label-values label=__name__)" = '[]' ] || fail "unauthorized ingest stored data"
ingest app.cpu $TMP/a.folded
[ "$(ticks app.cpu)" = 5 ] || fail "authorized ingest"
get /metrics | grep -q '^scorch_ingest_rejected_total{reason="unauthorized"} 2$' || fail "unauthorized counter"

stop_server TERM

# An empty token file is refused at start.
: > $TMP/empty
if "$SCORCH" server --listen 127.0.0.1:0 --data $DATA --auth-token-file $TMP/empty 2>$TMP/err; then
	fail "server started with an empty token file"
fi
grep -q empty $TMP/err || fail "no message about the empty token file"
echo "server auth: ok"
