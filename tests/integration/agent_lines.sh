#!/bin/sh
# agent_lines.sh: functions and lines through the agent and the server, with real BPF. The
# agent pushes a C workload built with DWARF (tests/helpers/sym/split.c) and a stripped Go
# program (tests/helpers/go/spin.go); the server's views aggregate by function unless asked
# for lines (lines=1): top rows and flame graph frames of one function are one row / frame by
# default, several with lines. A Go program's service is its executable.
. tests/integration/server.inc
need_bpf

gcc -O2 -g -fomit-frame-pointer -o "$TMP/split_lines" tests/helpers/sym/split.c ||
	{ echo "SKIP: gcc cannot build the workload"; exit 0; }
GO=
if command -v go > /dev/null 2>&1 && cp tests/helpers/go/spin.go tests/helpers/go/go.mod "$TMP/" &&
	(cd "$TMP" && { [ -n "${HOME:-}" ] || export GOCACHE=/tmp/scorch-go-build-cache; } &&
		go build -ldflags='-s -w' -o spin_go .) > "$TMP/go.log" 2>&1; then
	GO=$TMP/spin_go
fi

start_server
"$TMP/split_lines" 6 &
c=$!
[ -n "$GO" ] && { "$GO" 6 & g=$!; }
$SCORCH agent --server "$URL" -F 99 --interval 2s -d 5 --cache-dir "$TMP/tables" 2> "$TMP/agent.log" ||
	fail "agent exited $?: $(tail -5 "$TMP/agent.log")"
wait $c
[ -n "$GO" ] && wait $g

# top by function: one row for work_b, no line in any native name
get /api/v1/top query='split_lines.cpu{}' from=now-1h until=now limit=1000 > "$TMP/top.json"
grep -q '"name":"work_b"' "$TMP/top.json" || fail "no work_b row: $(head -c 600 "$TMP/top.json")"
grep -q 'split.c:[0-9]' "$TMP/top.json" && fail "lines in the top table by function"
# with lines: work_b's lines are rows of their own
get /api/v1/top query='split_lines.cpu{}' from=now-1h until=now limit=1000 lines=1 > "$TMP/topl.json"
n=$(grep -o '"name":"work_b ([^"]*split.c:[0-9]*)"' "$TMP/topl.json" | sort -u | wc -l)
echo "work_b: $n lines with samples"
[ "$n" -ge 1 ] || fail "no work_b (split.c:LINE) row with lines=1: $(head -c 600 "$TMP/topl.json")"
grep -q '"name":"mix (/[^"]*split.c:[0-9]*)"' "$TMP/topl.json" || fail "inlined mix has no line"
# the flame graph: inlined mix under work_b either way, lines only when asked
f=$(get /render query='split_lines.cpu{}' from=now-1h until=now format=folded)
echo "$f" | grep -Eq ';work_b;mix [0-9]+$' || fail "no work_b;mix stack: $(echo "$f" | head -3)"
fl=$(get /render query='split_lines.cpu{}' from=now-1h until=now format=folded lines=1)
echo "$fl" | grep -Eq ';work_b \([^)]*split.c:[0-9]+\);mix \([^)]*split.c:[0-9]+\) [0-9]+$' ||
	fail "no lines with lines=1: $(echo "$fl" | head -3)"
status=$(status_of -G "$URL/api/v1/top" --data-urlencode 'query=split_lines.cpu{}' -d lines=maybe)
[ "$status" = 400 ] || fail "lines=maybe answered $status"

if [ -n "$GO" ]; then
	services=$(get /label-values label=service_name)
	echo "$services" | grep -q '"spin_go"' || fail "the Go program's service is not its executable: $services"
	fg=$(get /render query='spin_go.cpu{}' from=now-1h until=now format=folded)
	echo "$fg" | grep -Eq ';main.spinA;main.leafA [0-9]+$' || fail "Go stacks: $(echo "$fg" | head -3)"
	echo "ok: Go service and stacks"
fi
stop_server
echo "PASS"
