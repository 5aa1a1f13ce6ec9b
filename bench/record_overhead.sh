#!/bin/sh
# record_overhead.sh: cost of whole-machine sampling, scorch vs perf, in the same run.
#
# A CPU-bound workload keeps every CPU busy; each profiler samples the whole machine at 99 Hz
# for DURATION seconds, in turn, ROUNDS times. For each we measure:
#   - the profiler's own CPU time, user + sys, from GNU time: everything, start-up (BPF load,
#     BTF) and the end (symbolizing, writing) included;
#   - its steady-state CPU: utime + stime from /proc/PID/stat between 3 s after the start and
#     2 s before the end, as a share of one core (what a long recording or the agent costs);
#   - for scorch, the sampling program's run time in the kernel (kernel.bpf_stats_enabled,
#     `scorch record --stats`); perf's in-kernel work (its interrupt handler and stack copies)
#     is charged to the interrupted tasks and not measured;
#   - peak RSS (GNU time), and samples captured vs expected (99 Hz x CPUs x seconds).
# Prints a markdown table of medians.
#
# usage: sudo sh bench/record_overhead.sh [DURATION=20] [ROUNDS=3]
set -eu
cd "$(dirname "$0")/.."
DURATION=${1:-20}
ROUNDS=${2:-3}
HZ=99
B=${B:-build}
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "error: needs root" >&2; exit 1; }
[ "$DURATION" -ge 8 ] || { echo "error: DURATION must be at least 8 s (steady state is measured from 3 s to 2 s before the end)" >&2; exit 1; }
command -v perf >/dev/null || { echo "error: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
# SCORCH=path: benchmark that binary as it is (only the workload is built).
if [ "$SCORCH" = ./scorch ]; then make -s B="$B" scorch "$B/helpers/fp_hot"; else make -s B="$B" "$B/helpers/fp_hot"; fi
NCPU=$(nproc)
TCK=$(getconf CLK_TCK)
TMP=$(mktemp -d)
STATS0=$(sysctl -n kernel.bpf_stats_enabled)
WORKERS=
cleanup() {
	for p in $WORKERS; do kill "$p" 2>/dev/null; done
	sysctl -q kernel.bpf_stats_enabled="$STATS0"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Workload: one busy process per CPU for the whole benchmark.
for i in $(seq "$NCPU"); do
	"$B/helpers/fp_hot" 100000 &
	WORKERS="$WORKERS $!"
done

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# steady NAME PATTERN: wait for the profiler (pgrep -n -f PATTERN, anchored so that GNU time
# running it does not match), then append its CPU seconds
# from 3 s after its start to 2 s before the end to $TMP/NAME.steady.
steady() {
	pid=
	i=0
	while [ -z "$pid" ] && [ $i -lt 50 ]; do
		pid=$(pgrep -n -f "$2" || true)
		sleep 0.1
		i=$((i + 1))
	done
	[ -n "$pid" ] || { echo "error: $1 did not start" >&2; return; }
	sleep 3
	a=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	sleep $((DURATION - 5))
	b=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	awk -v a="$a" -v b="$b" -v k="$TCK" 'BEGIN { print (b - a) / k }' >> "$TMP/$1.steady"
}

sysctl -q kernel.bpf_stats_enabled=1
expected=$((HZ * NCPU * DURATION))
for r in $(seq "$ROUNDS"); do
	# scorch
	steady scorch "^[^ ]*scorch record -q --stats -a -F $HZ -d $DURATION -o $TMP/s.folded" &
	st=$!
	/usr/bin/time -f "%U %S %M" -o "$TMP/time" "$SCORCH" record -q --stats -a -F $HZ -d "$DURATION" -o "$TMP/s.folded" 2> "$TMP/s.err"
	wait $st
	tail -n 1 "$TMP/time" | awk '{ print $1 + $2 }' >> "$TMP/scorch.cpu"
	tail -n 1 "$TMP/time" | awk '{ print $3 }' >> "$TMP/scorch.rss"
	awk '{ s += $NF } END { print s + 0 }' "$TMP/s.folded" >> "$TMP/scorch.samples"
	grep -o 'bpf_runtime_ns=[0-9]*' "$TMP/s.err" | cut -d= -f2 >> "$TMP/scorch.bpfns" || true
	# perf
	steady perf "^perf record -q -a -g -F $HZ -o $TMP/perf.data" &
	st=$!
	/usr/bin/time -f "%U %S %M" -o "$TMP/time" perf record -q -a -g -F $HZ -o "$TMP/perf.data" -- sleep "$DURATION" 2>/dev/null
	wait $st
	tail -n 1 "$TMP/time" | awk '{ print $1 + $2 }' >> "$TMP/perf.cpu"
	tail -n 1 "$TMP/time" | awk '{ print $3 }' >> "$TMP/perf.rss"
	perf script -i "$TMP/perf.data" -F pid 2>/dev/null | wc -l >> "$TMP/perf.samples"
done

sc_cpu=$(median < "$TMP/scorch.cpu"); pf_cpu=$(median < "$TMP/perf.cpu")
sc_st=$(median < "$TMP/scorch.steady"); pf_st=$(median < "$TMP/perf.steady")
sc_rss=$(median < "$TMP/scorch.rss"); pf_rss=$(median < "$TMP/perf.rss")
sc_n=$(median < "$TMP/scorch.samples"); pf_n=$(median < "$TMP/perf.samples")
sc_bpf=$( [ -s "$TMP/scorch.bpfns" ] && median < "$TMP/scorch.bpfns" || echo 0)
win=$((DURATION - 5))

echo
echo "Whole machine, $NCPU CPUs busy, $HZ Hz, ${DURATION} s, median of $ROUNDS rounds (expected samples: $expected)"
echo
echo "| profiler | user+sys CPU, whole run | % of one core | steady state (% of one core) | BPF run time | % of one core incl. BPF | peak RSS | samples | % of expected |"
echo "|---|---|---|---|---|---|---|---|---|"
awk -v c="$sc_cpu" -v st="$sc_st" -v w="$win" -v b="$sc_bpf" -v d="$DURATION" -v r="$sc_rss" -v n="$sc_n" -v e="$expected" 'BEGIN {
	printf "| scorch record -a | %.3f s | %.3f%% | %.3f%% | %.3f s | %.3f%% | %.1f MB | %d | %.1f%% |\n", c, 100*c/d, 100*st/w, b/1e9, 100*(c+b/1e9)/d, r/1024, n, 100*n/e }'
awk -v c="$pf_cpu" -v st="$pf_st" -v w="$win" -v d="$DURATION" -v r="$pf_rss" -v n="$pf_n" -v e="$expected" 'BEGIN {
	printf "| perf record -a -g | %.3f s | %.3f%% | %.3f%% | n/a (not measurable) | n/a | %.1f MB | %d | %.1f%% |\n", c, 100*c/d, 100*st/w, r/1024, n, 100*n/e }'
echo
echo "Steady state: CPU time from 3 s after the start to 2 s before the end (${win} s), clock-tick resolution."
