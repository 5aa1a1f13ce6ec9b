#!/bin/sh
# agent_lines_rss.sh: the agent's memory with line info on (the default) while it profiles the
# whole machine at production settings (19 Hz, 10 s intervals) with workloads that give it
# DWARF to read: a C program built -O2 -g, a stripped Go program (.gopclntab), Node with
# --perf-basic-prof (a perf map), CPython (tests/helpers/python/accuracy.py), all restarted
# every 20 s so that new binaries keep coming. Prints the agent's peak RSS (VmHWM) and its
# symbolizer counters, with and without line info.
#
# usage: sudo [ROUNDS=2] sh bench/agent_lines_rss.sh [SECONDS=90]
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-90}
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
TMP=$(mktemp -d)
srv= agent= loop=
cleanup() {
	for p in $loop $agent $srv; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$TMP/start" -exec grep -l 'split.js' {} + \
		2>/dev/null | xargs -r rm -f
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
touch "$TMP/start"
gcc -O2 -g -fomit-frame-pointer -o "$TMP/split" tests/helpers/sym/split.c
cp tests/helpers/go/spin.go tests/helpers/go/go.mod tests/helpers/sym/split.js "$TMP/"
(cd "$TMP" && go build -ldflags='-s -w' -o spin_go .)

"$SCORCH" server --listen 127.0.0.1:0 --port-file "$TMP/port" --data "$TMP/data" 2> "$TMP/server.log" &
srv=$!
while [ ! -s "$TMP/port" ]; do sleep 0.1; done
URL="http://127.0.0.1:$(cat "$TMP/port")"

run() { # extra agent args
	( while :; do
		"$TMP/split" 20 &
		"$TMP/spin_go" 20 &
		(cd "$TMP" && exec node --perf-basic-prof split.js 20) &
		python3 tests/helpers/python/accuracy.py 20 > /dev/null 2>&1 &
		wait
	done ) &
	loop=$!
	"$SCORCH" agent --server "$URL" -F 19 --interval 10s -d "$SECS" "$@" 2> "$TMP/agent.log" &
	agent=$!
	hwm=0
	while kill -0 "$agent" 2>/dev/null; do
		v=$(awk '/^VmHWM/ { print $2 }' "/proc/$agent/status" 2>/dev/null || echo 0)
		[ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
		sleep 1
	done
	wait "$agent" || true
	kill "$loop" 2>/dev/null || true
	pkill -P "$loop" 2>/dev/null || true
	wait "$loop" 2>/dev/null || true
	loop=
	echo "$hwm"
}

# ROUNDS rounds of both, alternating which goes first (the machine's other load varies).
echo "| round | agent (19 Hz, 10 s intervals, $SECS s) | peak RSS (VmHWM) |"
echo "|---|---|---|"
for r in $(seq "${ROUNDS:-2}"); do
	if [ $((r % 2)) = 1 ]; then
		echo "| $r | --no-lines | $(( $(run --no-lines) / 1024 )) MB |"
		echo "| $r | line info on (default, --line-memory 16) | $(( $(run) / 1024 )) MB |"
	else
		echo "| $r | line info on (default, --line-memory 16) | $(( $(run) / 1024 )) MB |"
		echo "| $r | --no-lines | $(( $(run --no-lines) / 1024 )) MB |"
	fi
done
