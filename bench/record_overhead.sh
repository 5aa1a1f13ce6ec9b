#!/bin/sh
# record_overhead.sh: cost of whole-machine sampling, scorch vs perf, in the same run.
#
# A CPU-bound workload keeps every CPU busy; each profiler samples the whole machine at 99 Hz
# for DURATION seconds, in turn, ROUNDS times. For each we measure the profiler's own CPU time
# (user + sys of the process, from GNU time), its peak RSS, the BPF program run time
# (kernel.bpf_stats_enabled) for scorch, and samples captured vs expected
# (99 Hz x CPUs x seconds). Prints a markdown table of medians.
#
# usage: sudo sh bench/record_overhead.sh [DURATION=20] [ROUNDS=3]
set -eu
cd "$(dirname "$0")/.."
DURATION=${1:-20}
ROUNDS=${2:-3}
HZ=99
B=${B:-build}
[ "$(id -u)" = 0 ] || { echo "error: needs root" >&2; exit 1; }
command -v perf >/dev/null || { echo "error: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
make -s scorch "$B/helpers/fp_hot"
NCPU=$(nproc)
TMP=$(mktemp -d)
WORKERS=""
cleanup() { kill $WORKERS 2>/dev/null; sysctl -q kernel.bpf_stats_enabled=0; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Workload: one busy process per CPU for the whole benchmark.
for i in $(seq "$NCPU"); do "$B/helpers/fp_hot" 100000 & WORKERS="$WORKERS $!"; done

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

sysctl -q kernel.bpf_stats_enabled=1
expected=$((HZ * NCPU * DURATION))
for r in $(seq "$ROUNDS"); do
	# scorch
	/usr/bin/time -f "%U %S %M" -o "$TMP/time" ./scorch record -q --stats -a -F $HZ -d "$DURATION" -o "$TMP/s.folded" 2> "$TMP/s.err"
	read -r u s m < "$TMP/time"
	echo "$u $s" | awk '{ print ($1 + $2) }' >> "$TMP/scorch.cpu"
	echo "$m" >> "$TMP/scorch.rss"
	awk '{ s += $NF } END { print s + 0 }' "$TMP/s.folded" >> "$TMP/scorch.samples"
	grep -o 'bpf_runtime_ns=[0-9]*' "$TMP/s.err" | cut -d= -f2 >> "$TMP/scorch.bpfns" || true
	# perf
	/usr/bin/time -f "%U %S %M" -o "$TMP/time" perf record -q -a -g -F $HZ -o "$TMP/perf.data" -- sleep "$DURATION" 2>/dev/null
	read -r u s m < "$TMP/time"
	echo "$u $s" | awk '{ print ($1 + $2) }' >> "$TMP/perf.cpu"
	echo "$m" >> "$TMP/perf.rss"
	perf script -i "$TMP/perf.data" -F pid 2>/dev/null | wc -l >> "$TMP/perf.samples"
done

sc_cpu=$(median < "$TMP/scorch.cpu"); pf_cpu=$(median < "$TMP/perf.cpu")
sc_rss=$(median < "$TMP/scorch.rss"); pf_rss=$(median < "$TMP/perf.rss")
sc_n=$(median < "$TMP/scorch.samples"); pf_n=$(median < "$TMP/perf.samples")
sc_bpf=$( [ -s "$TMP/scorch.bpfns" ] && median < "$TMP/scorch.bpfns" || echo 0)

pct() { awk -v a="$1" -v d="$DURATION" 'BEGIN { printf "%.3f%%", 100 * a / d }'; }
echo
echo "Whole machine, $NCPU CPUs busy, $HZ Hz, ${DURATION} s, median of $ROUNDS rounds (expected samples: $expected)"
echo
echo "| profiler | user+sys CPU | % of one core | BPF run time | % of one core (incl. BPF) | peak RSS | samples | % of expected |"
echo "|---|---|---|---|---|---|---|---|"
awk -v c="$sc_cpu" -v b="$sc_bpf" -v d="$DURATION" -v r="$sc_rss" -v n="$sc_n" -v e="$expected" 'BEGIN {
	printf "| scorch record -a | %.3f s | %.3f%% | %.3f s | %.3f%% | %.1f MB | %d | %.1f%% |\n", c, 100*c/d, b/1e9, 100*(c+b/1e9)/d, r/1024, n, 100*n/e }'
awk -v c="$pf_cpu" -v d="$DURATION" -v r="$pf_rss" -v n="$pf_n" -v e="$expected" 'BEGIN {
	printf "| perf record -a -g | %.3f s | %.3f%% | n/a (in-kernel) | %.3f%% | %.1f MB | %d | %.1f%% |\n", c, 100*c/d, 100*c/d, r/1024, n, 100*n/e }'
