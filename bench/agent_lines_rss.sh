#!/bin/sh
# agent_lines_rss.sh: the agent's memory at production settings (19 Hz, 10 s intervals, line
# info on, the default) while it profiles a machine with a JVM, Node, CPython, a C program
# built -O2 -g (DWARF lines) and the process churn of bench/churn_load.sh (gcc, git, sh,
# python one-liners, a JVM and Node started now and then). With --base, another scorch build
# (e.g. main's) runs at the same time on the same load, so both see the same processes.
#
# For each agent it prints the peak RSS (VmHWM over the whole run, start-up included), the
# steady RSS (mean VmRSS after the warm-up, read every second), the largest VmRSS seen after
# the warm-up, and from its last --stats lines: counted heap (alloc_live_bytes), its peak
# (alloc_peak_bytes), loaded symbols (sym_symbol_bytes), DWARF held for lines
# (sym_line_bytes) and the table cache (table_cache bytes); then where its RSS is at the end
# (/proc/PID/smaps: heap and anonymous memory, BPF maps mapped in, files). The load average
# and the rate of new processes on the machine are printed above the tables: the machine may
# be shared.
set -eu
cd "$(dirname "$0")/.."

usage() {
	cat <<'EOF'
usage: sudo sh bench/agent_lines_rss.sh [--secs N] [--warmup N] [--base PATH] [--no-churn]
                                        [--keep DIR]

Peak and steady RSS of `scorch agent -F 19` (line info on) under a JVM, Node, CPython, a C
program with DWARF and process churn, for ./scorch and, with --base, another build measured in
the same run on the same load.

  --secs N      length of the run in seconds (default 90, at least 30)
  --warmup N    seconds before the steady window starts (default 20)
  --base PATH   another scorch binary to run side by side (e.g. a build of main)
  --no-churn    leave bench/churn_load.sh out (the long-running programs only)
  --keep DIR    keep the agents' logs (with their --stats lines) in DIR

examples:
  sudo sh bench/agent_lines_rss.sh --base /tmp/main/scorch           # docs/benchmarks.md
  sudo sh bench/agent_lines_rss.sh --secs 300 --keep /tmp/rss
EOF
}

SECS=90 WARMUP=20 BASE= CHURN=1 KEEP=
while [ $# -gt 0 ]; do
	case $1 in
	--secs) SECS=${2:?}; shift ;;
	--warmup) WARMUP=${2:?}; shift ;;
	--base) BASE=${2:?}; shift ;;
	--no-churn) CHURN=0 ;;
	--keep) KEEP=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
for v in "$SECS" "$WARMUP"; do
	case $v in ''|*[!0-9]*) echo "error: '$v' is not a number" >&2; exit 2 ;; esac
done
[ "$SECS" -ge 30 ] || { echo "error: --secs must be at least 30" >&2; exit 2; }
[ "$WARMUP" -lt "$SECS" ] || { echo "error: --warmup must be shorter than --secs" >&2; exit 2; }
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "error: needs root (BPF)" >&2; exit 1; }
[ -x "$SCORCH" ] || { echo "error: no $SCORCH binary: run make first" >&2; exit 1; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "error: --base $BASE is not an executable" >&2; exit 1; }
for c in java node python3 gcc; do
	command -v $c > /dev/null || { echo "error: $c is needed for the workload" >&2; exit 1; }
done

TMP=$(mktemp -d)
srv= loads=
cleanup() {
	for p in $loads; do kill "$p" 2>/dev/null || true; done
	for d in "$TMP"/agent-*; do
		[ -s "$d/pid" ] && kill "$(cat "$d/pid")" 2>/dev/null || true
	done
	[ -n "$srv" ] && kill "$srv" 2>/dev/null || true
	wait 2>/dev/null || true
	if [ -n "$KEEP" ]; then
		mkdir -p "$KEEP"
		for d in "$TMP"/agent-*; do cp -r "$d" "$KEEP"/ 2>/dev/null || true; done
		echo "logs kept in $KEEP" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gcc -O2 -g -fomit-frame-pointer -o "$TMP/split" tests/helpers/sym/split.c
cp tests/helpers/java/Spin.java "$TMP/"
"$SCORCH" server --listen 127.0.0.1:0 --port-file "$TMP/port" --data "$TMP/data" \
	2> "$TMP/server.log" &
srv=$!
i=0
while [ ! -s "$TMP/port" ]; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "error: scorch server did not start" >&2; exit 1; }
	sleep 0.1
done
URL="http://127.0.0.1:$(cat "$TMP/port")"

# The long-running programs, started before the agents (as on a machine the agent joins).
long=$((SECS + 30))
(cd "$TMP" && exec java Spin.java "$long") > /dev/null 2>&1 &
loads="$loads $!"
node -e 'function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) }
	const end = Date.now() + 1000 * Number(process.argv[1]); while (Date.now() < end) f(25)' \
	"$long" &
loads="$loads $!"
python3 tests/helpers/python/accuracy.py "$long" > /dev/null 2>&1 &
loads="$loads $!"
"$TMP/split" "$long" &
loads="$loads $!"
sleep 2

agents="new"
[ -n "$BASE" ] && agents="$agents base"
for a in $agents; do
	D=$TMP/agent-$a
	mkdir -p "$D/cache"
	bin=$SCORCH
	[ "$a" = base ] && bin=$BASE
	"$bin" agent --server "$URL" -F 19 --interval 10s --cache-dir "$D/cache" --stats \
		2> "$D/log" &
	echo $! > "$D/pid"
done
if [ "$CHURN" = 1 ]; then
	sh bench/churn_load.sh "$TMP/churn" &
	loads="$loads $!"
fi
la0=$(cut -d' ' -f1 /proc/loadavg)
t=0 p0= p1=
while [ "$t" -lt "$SECS" ]; do
	sleep 1
	t=$((t + 1))
	[ "$t" = "$WARMUP" ] && p0=$(awk '/^processes/ { print $2 }' /proc/stat)
	for a in $agents; do
		D=$TMP/agent-$a
		p=$(cat "$D/pid")
		kill -0 "$p" 2>/dev/null || { echo "error: agent '$a' exited:" >&2; tail -5 "$D/log" >&2; exit 1; }
		awk -v t="$t" '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } END { print t, r, h }' \
			"/proc/$p/status" >> "$D/rss"
	done
done
p1=$(awk '/^processes/ { print $2 }' /proc/stat)
la1=$(cut -d' ' -f1 /proc/loadavg)
# where the RSS is at the end: heap and anonymous memory, BPF maps mapped in (writable: table
# space; read-only: the ring buffer), the executable and shared libraries
for a in $agents; do
	awk '/^[0-9a-f]+-[0-9a-f]+ / { k = "anon"; if ($6 ~ /^anon_inode:bpf-map/) k = ($2 ~ /w/ ? "bpfrw" : "bpfro");
		else if ($6 ~ /^\//) k = "file" }
		/^Rss:/ { r[k] += $2 }
		END { printf "%.1f %.1f %.1f %.1f\n", r["anon"] / 1024, r["bpfrw"] / 1024, r["bpfro"] / 1024, r["file"] / 1024 }' \
		"/proc/$(cat "$TMP/agent-$a/pid")/smaps" > "$TMP/agent-$a/smaps" 2>/dev/null || true
done
for p in $loads; do kill "$p" 2>/dev/null || true; done
for a in $agents; do kill -TERM "$(cat "$TMP/agent-$a/pid")" 2>/dev/null || true; done
for a in $agents; do wait "$(cat "$TMP/agent-$a/pid")" 2>/dev/null || true; done

stat_of() { # LOG KEY: the value of KEY in the last line that has it
	grep -o "[ :]$2=[0-9.]*" "$1" 2>/dev/null | tail -1 | sed 's/.*=//'
}
mb() { awk -v v="${1:-0}" 'BEGIN { printf "%.1f", v / 1048576 }'; }

echo "scorch agent memory at 19 Hz with line info, $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d):" \
	"${SECS} s, steady window after ${WARMUP} s; load average $la0 at the start, $la1 at the end;" \
	"$(awk -v a="$p0" -v b="$p1" -v w=$((SECS - WARMUP)) 'BEGIN { printf "%.0f", (b - a) / w }') new processes/s"
echo
echo "| agent | peak RSS MB (VmHWM) | steady RSS MB (mean) | max RSS MB after warm-up | heap MB (counted) | heap peak MB | symbols MB | DWARF for lines MB | table cache MB |"
echo "|---|---|---|---|---|---|---|---|---|"
for a in $agents; do
	D=$TMP/agent-$a
	name=$a
	[ "$a" = new ] && name="this build"
	[ "$a" = base ] && name="base ($BASE)"
	awk -v w="$WARMUP" -v name="$name" '
		{ hwm = $3 } $1 > w { s += $2; k++; if ($2 > mx) mx = $2 }
		END { printf "| %s | %.1f | %.1f | %.1f", name, hwm / 1024, (k ? s / k : 0) / 1024, mx / 1024 }' \
		"$D/rss"
	tc=$(grep '^table_cache:' "$D/log" | tail -1 | grep -o ' bytes=[0-9]*' | sed 's/.*=//')
	echo " | $(mb "$(stat_of "$D/log" alloc_live_bytes)") | $(mb "$(stat_of "$D/log" alloc_peak_bytes)") | $(mb "$(stat_of "$D/log" sym_symbol_bytes)") | $(mb "$(stat_of "$D/log" sym_line_bytes)") | $(mb "$tc") |"
done
echo
echo "| agent | RSS at the end: heap and anonymous MB | BPF maps, writable MB | BPF maps, read-only (ring buffer) MB | executable and libraries MB |"
echo "|---|---|---|---|---|"
for a in $agents; do
	name=$a
	[ "$a" = new ] && name="this build"
	[ "$a" = base ] && name="base"
	set -- $(cat "$TMP/agent-$a/smaps" 2>/dev/null || echo "- - - -")
	echo "| $name | $1 | $2 | $3 | $4 |"
done
