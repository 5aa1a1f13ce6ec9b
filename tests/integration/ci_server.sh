#!/bin/sh
# scorch diff --server: selections of CI runs on a real server. Runs are ingested as folded
# profiles with known counts (no BPF needed): the base commit's three runs, a head commit whose
# `b` does twice the work, and a second base-like commit. Checks the verdicts and exit
# statuses, the markdown's link to the UI, the run selection (--max-runs, shared runs), and
# the errors users get (unreachable server, bad selection, no runs, missing token).
. tests/integration/server.inc

start_server

# ingest_run COMMIT RUN A B C: one run of app "ciapp" with its counts.
ingest_run() {
	printf 'ci_work;main;a %s\nci_work;main;b %s\nci_work;main;c %s\nci_work;main;d 40\n' "$3" "$4" "$5" > $TMP/run.folded
	ingest "ciapp.cpu{commit=$1,run=$2,branch=main}" $TMP/run.folded --url-query sampleRate=100
}
ingest_run base  r-base-1 300 300 300
ingest_run base  r-base-2 310 296 291
ingest_run base  r-base-3 297 305 302
ingest_run head  r-head-1 303 600 298
ingest_run head  r-head-2 292 590 310
ingest_run head  r-head-3 301 612 296
ingest_run same  r-same-1 305 302 296
ingest_run same  r-same-2 296 299 306
ingest_run same  r-same-3 299 293 301

# 1. A regression between commits, 3 runs per side: exit 3, b named first.
$SCORCH diff -f json --server "$URL" 'ciapp.cpu{commit="base"}' 'ciapp.cpu{commit="head"}' > $TMP/reg.json 2> $TMP/reg.err
rc=$?
[ $rc -eq 3 ] || fail "regression: exit $rc, expected 3: $(cat $TMP/reg.err)"
grep -q '"regressed":true' $TMP/reg.json || fail "no regression in $(head -c 300 $TMP/reg.json)"
grep -q '"runs":{"base":3,"new":3}' $TMP/reg.json || fail "not 3 runs per side: $(head -c 300 $TMP/reg.json)"
grep -q '"test":"moderated-t"' $TMP/reg.json || fail "not the moderated t-test: $(head -c 300 $TMP/reg.json)"
first=$(grep -o '"functions":\[{"name":"[^"]*"' $TMP/reg.json | sed 's/.*"name":"//; s/"$//')
[ "$first" = b ] || fail "first function is '$first', expected b"
grep -q 'regression: .b. self time grew' $TMP/reg.err || fail "no verdict on stderr: $(cat $TMP/reg.err)"

# 2. Markdown: the heading, the table and the UI's diff view link with both selections.
$SCORCH diff -q -f markdown -o $TMP/comment.md --server "$URL" 'ciapp.cpu{commit="base"}' 'ciapp.cpu{commit="head"}'
[ $? -eq 3 ] || fail "markdown run did not exit 3"
grep -q '^### scorch: CPU regression in `b` (+' $TMP/comment.md || fail "heading: $(head -3 $TMP/comment.md)"
grep -q '^| `b` | 3.00 s → 6.01 s | \*\*+100' $TMP/comment.md || fail "table row: $(grep '`b`' $TMP/comment.md)"
link="$URL/?view=diff&lq=ciapp.cpu%7Bcommit%3D%22base%22%7D&rq=ciapp.cpu%7Bcommit%3D%22head%22%7D&from="
grep -qF "[Open this comparison in the scorch UI]($link" $TMP/comment.md || fail "no UI link: $(grep -i 'scorch UI' $TMP/comment.md)"
grep -q '&until=[0-9]*)$' $TMP/comment.md || fail "UI link without until"

# 3. Two commits of the same version: exit 0, nothing flagged.
$SCORCH diff --server "$URL" 'ciapp.cpu{commit="base"}' 'ciapp.cpu{commit="same"}' > $TMP/same.txt 2>&1
rc=$?
[ $rc -eq 0 ] || fail "same version: exit $rc: $(cat $TMP/same.txt)"
grep -q '^no regression: 0 functions slower' $TMP/same.txt || fail "same version: $(head -2 $TMP/same.txt)"

# 4. --max-runs takes the newest runs; runs in both selections stay on the new side only.
$SCORCH diff -f json --max-runs 2 --server "$URL" 'ciapp.cpu{branch="main"}' 'ciapp.cpu{commit="same"}' > $TMP/mr.json 2> $TMP/mr.err
grep -q '"runs":{"base":' $TMP/mr.json || fail "max-runs: $(cat $TMP/mr.err)"
grep -q 'also match.* the base selection' $TMP/mr.err || fail "shared runs not reported: $(cat $TMP/mr.err)"
grep -q '"new":"ciapp.cpu{commit=\\"same\\"} (2 runs: r-same-3, r-same-2)"' $TMP/mr.json ||
	fail "not the 2 newest runs: $(grep -o '"new":"[^}]*} ([^)]*)' $TMP/mr.json)"

# 5. A file on one side, a selection on the other.
get /render 'query=ciapp.cpu{commit="head"}' format=pprof from=now-1h > $TMP/head.pb.gz
$SCORCH diff -q --server "$URL" 'ciapp.cpu{run="r-base-1"}' $TMP/head.pb.gz > /dev/null
rc=$?
[ $rc -eq 3 ] || fail "file vs selection: exit $rc"

# 6. Errors: no runs, bad selection, unreachable server, a selection without --server.
$SCORCH diff --server "$URL" 'ciapp.cpu{commit="nope"}' 'ciapp.cpu{commit="head"}' 2> $TMP/e1 && fail "no runs accepted"
grep -q "no runs match 'ciapp.cpu{commit=\"nope\"}'" $TMP/e1 || fail "no-runs message: $(cat $TMP/e1)"
$SCORCH diff --server "$URL" 'ciapp.cpu{commit=' 'ciapp.cpu{commit="head"}' 2> $TMP/e2
[ $? -eq 1 ] || fail "bad selection: not exit 1"
grep -q "is neither a file nor a valid selection" $TMP/e2 || fail "bad selection message: $(cat $TMP/e2)"
$SCORCH diff --server http://127.0.0.1:1 'a.cpu' 'b.cpu' 2> $TMP/e3
[ $? -eq 1 ] || fail "unreachable server: not exit 1"
grep -q "cannot reach http://127.0.0.1:1" $TMP/e3 || fail "unreachable message: $(cat $TMP/e3)"
SCORCH_SERVER= $SCORCH diff 'a.cpu{x="1"}' 'b.cpu' 2> $TMP/e4
[ $? -eq 1 ] || fail "selection without server: not exit 1"
grep -q "a selection needs --server URL" $TMP/e4 || fail "no hint about --server: $(cat $TMP/e4)"
$SCORCH diff onlyone 2> $TMP/e5
[ $? -eq 2 ] || fail "one argument: not exit 2"

# 7. A server with a token: refused without it, fine with it.
stop_server
echo "s3cret" > $TMP/token
start_server --auth-token-file $TMP/token
$SCORCH diff --server "$URL" 'ciapp.cpu{commit="base"}' 'ciapp.cpu{commit="head"}' 2> $TMP/e6
[ $? -eq 1 ] || fail "missing token: not exit 1"
grep -q "answered 401: missing or wrong bearer token" $TMP/e6 || fail "401 message: $(cat $TMP/e6)"
$SCORCH diff -q --auth-token-file $TMP/token --server "$URL" 'ciapp.cpu{commit="base"}' 'ciapp.cpu{commit="head"}' > /dev/null
[ $? -eq 3 ] || fail "with the token: not exit 3"
SCORCH_AUTH_TOKEN=s3cret $SCORCH diff -q --server "$URL" 'ciapp.cpu{commit="base"}' 'ciapp.cpu{commit="head"}' > /dev/null
[ $? -eq 3 ] || fail "with SCORCH_AUTH_TOKEN: not exit 3"
stop_server
echo "ok"
