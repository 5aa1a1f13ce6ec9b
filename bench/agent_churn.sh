#!/bin/sh
# agent_churn.sh: what `scorch agent` costs at 19 Hz on a machine where processes come and go
# (bench/churn_load.sh: gcc, git, sh, python one-liners, a JVM and a Node process now and then,
# about 20 new processes a second), with the unwind tables the agent builds for them.
#
# Agents run side by side on the same churn, pushing to one local `scorch server`:
#   new        ./scorch agent, its table cache directory empty at the start
#   new, warm  (with -w) ./scorch agent again afterwards, alone with another base agent, on the
#              directory the first one filled: a restarted agent
#   base       $SCORCH_BASE agent, an older build to compare with (optional; run without
#              --cache-dir, which older builds do not know)
# For each: CPU (user+sys, /proc/PID/stat) over the steady window (after WARMUP seconds) as %
# of one core and of the machine, peak RSS (VmHWM), and from its last --stats line (the agent
# prints it at debug level each interval): tables built, their CPU time, tables loaded from
# the cache (memory or disk), from disk, evictions from the BPF table space, processes published
# at exec. BPF run time is the same program for both and is not attributed per agent here.
# With PERF=1 (and perf installed), each agent is also profiled over the steady window
# (perf record --call-graph dwarf, 499 Hz) and a second table gives the share of its CPU spent
# under a few functions: unwind_table_build, qsort, elf_symbols_load, procmaps_read.
#
# usage: sudo [SCORCH_BASE=/path/to/old/scorch] [PERF=1] sh bench/agent_churn.sh [SECONDS=60] [WARMUP=15] [-w]
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-60}
WARMUP=${2:-15}
WARM=${3:-}
SCORCH=${SCORCH:-./scorch}
BASE=${SCORCH_BASE:-}
[ "$(id -u)" = 0 ] || { echo "error: needs root" >&2; exit 1; }
[ -x "$SCORCH" ] || { echo "error: no $SCORCH binary (run make first)" >&2; exit 1; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "error: SCORCH_BASE=$BASE is not executable" >&2; exit 1; }
TMP=$(mktemp -d)
srv= load= agents=
cleanup() {
	for p in $load $agents $srv; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

"$SCORCH" server --listen 127.0.0.1:0 --port-file "$TMP/port" --data "$TMP/data" 2> "$TMP/server.log" &
srv=$!
i=0
while [ ! -s "$TMP/port" ]; do
	i=$((i + 1)); [ $i -gt 100 ] && { cat "$TMP/server.log"; exit 1; }
	sleep 0.1
done
URL="http://127.0.0.1:$(cat "$TMP/port")"
tck=$(getconf CLK_TCK)
ncpu=$(getconf _NPROCESSORS_ONLN)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hwm_of() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
stat_of() { # FILE LINE NAME: NAME=... of the last stats line starting with LINE (unwind:, ...)
	grep "^$2" "$1" | tail -1 | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k { print $2 }'
}

# run_phase LABEL:BINARY:CACHEDIR ... : agents side by side on the churn; one table line each.
run_phase() {
	sh bench/churn_load.sh "$TMP/churn" &
	load=$!
	agents=
	for spec in "$@"; do
		label=${spec%%:*}; rest=${spec#*:}; bin=${rest%%:*}; dir=${rest#*:}
		if [ "$dir" = - ]; then
			"$bin" -v -v agent --server "$URL" -F 19 --interval 10s -d "$SECS" \
				2> "$TMP/$label.log" &
		else
			"$bin" -v -v agent --server "$URL" -F 19 --interval 10s -d "$SECS" \
				--cache-dir "$dir" 2> "$TMP/$label.log" &
		fi
		agents="$agents $!"
		echo "$!" > "$TMP/$label.pid"
	done
	sleep "$WARMUP"
	p0=$(awk '/^processes/ { print $2 }' /proc/stat)
	perfs=
	for spec in "$@"; do
		label=${spec%%:*}
		cpu_of "$(cat "$TMP/$label.pid")" > "$TMP/$label.cpu0"
		if [ "${PERF:-0}" = 1 ]; then
			perf record -q -o "$TMP/$label.perf" --call-graph dwarf,16384 -F 499 \
				-p "$(cat "$TMP/$label.pid")" -- sleep $((SECS - WARMUP - 3)) \
				2> /dev/null &
			perfs="$perfs $!"
		fi
	done
	sleep $((SECS - WARMUP - 2))
	for p in $perfs; do wait "$p" || true; done
	p1=$(awk '/^processes/ { print $2 }' /proc/stat)
	for spec in "$@"; do
		label=${spec%%:*}; pid=$(cat "$TMP/$label.pid")
		cpu_of "$pid" > "$TMP/$label.cpu1"
		hwm_of "$pid" > "$TMP/$label.hwm"
	done
	win=$((SECS - WARMUP - 2))
	for a in $agents; do wait "$a" || true; done
	agents=
	kill $load 2>/dev/null || true
	wait $load 2>/dev/null || true
	load=
	for spec in "$@"; do
		label=${spec%%:*}; log=$TMP/$label.log
		awk -v l="$label" -v c0="$(cat "$TMP/$label.cpu0")" -v c1="$(cat "$TMP/$label.cpu1")" \
			-v k="$tck" -v w="$win" -v n="$ncpu" -v h="$(cat "$TMP/$label.hwm")" \
			-v forks="$(( (p1 - p0) / win ))" \
			-v tb="$(stat_of "$log" unwind: table_builds)" \
			-v tms="$(stat_of "$log" unwind: table_build_ms)" \
			-v fc="$(stat_of "$log" unwind: tables_from_cache)" \
			-v ev="$(stat_of "$log" unwind: evictions)" \
			-v ep="$(stat_of "$log" unwind: exec_publishes)" \
			-v dh="$(stat_of "$log" table_cache: disk_hits)" \
			'BEGIN { c = 100 * (c1 - c0) / k / w
			printf "| %s | %d | %.3f%% | %.3f%% | %.1f MB | %s | %s | %s | %s | %s | %s |\n",
				l, forks, c, c / n, h / 1024, tb, tms, fc, dh, ev, ep }' >> "$TMP/rows"
		[ -s "$TMP/$label.perf" ] && perf report -i "$TMP/$label.perf" --children --stdio \
			--percent-limit 0 2> /dev/null | awk -v l="$label" '
			/^# Samples:/ { n = $3 }
			$NF ~ /^(unwind_table_build|__GI___qsort_r|elf_symbols_load|procmaps_read)$/ &&
			$1 ~ /%$/ && !($NF in s) { s[$NF] = $1 }
			END { printf "| %s | %d | %s | %s | %s | %s |\n", l, n,
				s["unwind_table_build"] ? s["unwind_table_build"] : "0%",
				s["__GI___qsort_r"] ? s["__GI___qsort_r"] : "0%",
				s["elf_symbols_load"] ? s["elf_symbols_load"] : "0%",
				s["procmaps_read"] ? s["procmaps_read"] : "0%" }' >> "$TMP/perf_rows" || true
	done
}

echo "conditions: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, ${SECS} s runs, steady window after ${WARMUP} s"
echo
mkdir -p "$TMP/cache-new"
if [ -n "$BASE" ]; then
	run_phase "new:$SCORCH:$TMP/cache-new" "base:$BASE:-"
else
	run_phase "new:$SCORCH:$TMP/cache-new"
fi
if [ "$WARM" = -w ]; then
	if [ -n "$BASE" ]; then
		run_phase "new, warm:$SCORCH:$TMP/cache-new" "base, again:$BASE:-"
	else
		run_phase "new, warm:$SCORCH:$TMP/cache-new"
	fi
fi
echo "| agent | new processes/s (machine) | CPU, % of one core | % of the machine | peak RSS | tables built | build CPU ms | tables from cache | from disk | evictions | exec publishes |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
cat "$TMP/rows"
if [ -s "$TMP/perf_rows" ]; then
	echo
	echo "| agent | perf samples | in unwind_table_build | in qsort | in elf_symbols_load | in procmaps_read |"
	echo "|---|---|---|---|---|---|"
	cat "$TMP/perf_rows"
fi
