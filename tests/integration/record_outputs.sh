#!/bin/sh
# scorch record: every output format from a real profile, go tool pprof reads our pprof, and
# SIGINT/SIGTERM stop cleanly with the profile written.
. tests/integration/lib.inc
need_bpf

$SCORCH record -q -F 499 -o "$TMP/hot.pb.gz" -- "$B/helpers/fp_hot" -c 1 || fail "record to pprof exited $?"
[ "$(head -c2 "$TMP/hot.pb.gz" | od -An -tx1 | tr -d ' ')" = "1f8b" ] || fail "pprof output is not gzip"
if command -v go >/dev/null 2>&1; then
	HOME=$TMP GOCACHE=$TMP/gocache GOFLAGS=-mod=mod go tool pprof -top "$TMP/hot.pb.gz" > "$TMP/top.txt" 2>&1 ||
		fail "go tool pprof failed: $(tail -5 "$TMP/top.txt")"
	# The hottest function by self time is hot_function.
	awk '/flat%/ { go = 1; next } go && NF >= 6 { print $NF; exit }' "$TMP/top.txt" | grep -qx hot_function ||
		fail "go tool pprof -top does not show hot_function first: $(head -12 "$TMP/top.txt")"
	grep -q "Type: cpu" "$TMP/top.txt" || fail "pprof sample type is not cpu: $(head -5 "$TMP/top.txt")"
else
	echo "note: go is missing, pprof checked by our own decoder only"
fi
$SCORCH convert "$TMP/hot.pb.gz" "$TMP/conv.folded" || fail "convert pprof -> folded"
grep -q '^fp_hot;.*run;hot_function [0-9]*$' "$TMP/conv.folded" || fail "pprof lost the stacks: $(head -3 "$TMP/conv.folded")"

$SCORCH record -q -F 199 -o "$TMP/hot.json" -- "$B/helpers/fp_hot" -c 0.5 || fail "record to speedscope exited $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["profiles"][0]["type"]=="sampled"; assert any(f["name"]=="hot_function" for f in d["shared"]["frames"])' "$TMP/hot.json" ||
	fail "speedscope output is not valid or lacks hot_function"

$SCORCH record -q -F 199 -o "$TMP/hot.html" -- "$B/helpers/fp_hot" -c 0.5 || fail "record to html exited $?"
grep -q hot_function "$TMP/hot.html" || fail "html lacks hot_function"
grep -Eq '(src|href)="https?:' "$TMP/hot.html" && fail "html loads something from the network"

$SCORCH record -q -F 199 -o "$TMP/hot.svg" -- "$B/helpers/fp_hot" -c 0.5 || fail "record to svg exited $?"
grep -q '<svg' "$TMP/hot.svg" && grep -q hot_function "$TMP/hot.svg" || fail "svg lacks hot_function"

# SIGINT to a whole-machine recording: stops, writes the profile, exits 0.
$SCORCH record -q -a -o "$TMP/int.folded" &
pid=$!
kill_at_exit $pid
wait_for 60 "sampling by record -a" sampling $pid
# half a second of the whole machine: ~100 samples at 99 Hz on 2 CPUs, busy or idle (idle
# time is sampled too), so that there is a profile to write
sleep 0.5
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 0 ] || fail "record -a after SIGINT exited $rc"
[ -s "$TMP/int.folded" ] || fail "no profile written after SIGINT"

# SIGTERM while running a command: passed on to the command, the profile is still written and
# the exit status is the command's (143 = killed by SIGTERM).
# (sent once the command has run 0.2 s of CPU under the recording)
$SCORCH record -q -o "$TMP/term.folded" -- "$B/helpers/fp_hot" 120 &
pid=$!
kill_at_exit $pid
wait_for 60 "sampling by record" sampling $pid
wait_for 60 "fp_hot under record" pgrep -P $pid -x fp_hot
hot=$(pgrep -P $pid -x fp_hot)
kill_at_exit $hot
ran() { awk -v c="$(cpu_of $hot)" 'BEGIN { exit !(c >= 0.2) }'; }
wait_for 120 "0.2 s of CPU for fp_hot" ran
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] || fail "record -- cmd after SIGTERM exited $rc, expected 143"
grep -q '^fp_hot;' "$TMP/term.folded" || fail "no fp_hot stacks after SIGTERM"
echo ok
