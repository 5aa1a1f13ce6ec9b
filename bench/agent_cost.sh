#!/bin/sh
# agent_cost.sh: what whole-machine profiling costs at production settings (19 Hz), measured
# in steady state, next to bpftrace and perf measured in the same run on the same load.
#
# Three scenes, one after the other (each: a warm-up, then the steady window):
#   idle   nothing is started (other work on the machine is not stopped: see the load average
#          printed with each table)
#   busy   every CPU busy with a long-running program: python3 (a recursive function, which
#          runs scorch's CPython walker) and sqlite3 (a never-ending recursive query: Debian's
#          -O2 build, no frame pointers), one per CPU, alternately
#   churn  bench/churn_load.sh: gcc compiling a small file, git, sh and python one-liners, a JVM
#          and a Node process now and then (about 20 new processes a second)
# In each scene the tools run side by side, started together on the same load:
#   scorch    ./scorch agent -F 19, pushing every 10 s to a local scorch server (not measured),
#             with an unwind table cache directory of its own, empty at the start of the run
#             (the first scene fills it; later scenes find their tables there, as an agent
#             running for months would)
#   base      (--base PATH) another scorch binary the same way: an A/B comparison in one run
#   bpftrace  bpftrace -e 'profile:hz:19 { @[kstack, ustack, comm] = count(); }' (frame-pointer
#             user stacks only)
#   perf      perf record -a -g -F 19 (frame-pointer user stacks, written to a file)
#
# Columns, over the steady window of each scene:
#   CPU % machine   the tool's user+sys time (every thread's /proc/PID/task/T/schedstat, ns)
#                   divided by the window times the number of CPUs
#   BPF % machine   run time of the tool's BPF programs (kernel.bpf_stats_enabled, from the
#                   /proc/PID/fdinfo of its program descriptors) on the same scale; perf has no
#                   BPF and its in-kernel cost (the NMI-time stack walk) has no counter: n/a
#   total           the sum: what the tool costs the machine
#   BPF ns/sample   run time of its perf_event program divided by its runs
#   samples/s       runs of that program per second (expected: HZ x CPUs); perf: SAMPLE
#                   records of the whole run per second of it
#   lost            samples lost over the whole run: scorch, ring buffer full plus stacks over
#                   the aggregation cap (its --stats); bpftrace, samples counted but missing
#                   from its stack map (map full); perf, LOST records' samples
#   peak RSS        VmHWM at the end of the window (start-up included)
#   steady RSS      mean VmRSS of the window (read every 2 s)
#   builds/min      unwind tables built from ELF files in the window, per minute (scorch --stats;
#                   a base build without --stats is run with -v -v, whose debug lines carry
#                   the same counters)
# With --rounds N each scene runs N times and each figure is the median of its rounds.
#
# Measuring on a shared machine: the tools see the same processes, so a comparison within a row
# pair is fair even when the absolute figures are noisy; run on a quiet machine for figures to
# publish (docs/benchmarks.md, "Agent cost at 19 Hz").
set -eu
cd "$(dirname "$0")/.."

usage() {
	cat <<'EOF'
usage: sudo sh bench/agent_cost.sh [--quick] [--secs N] [--warmup N] [--scenes LIST]
                                   [--tools LIST] [--base PATH] [--rounds N] [--hz N]
                                   [--keep DIR]

Cost of `scorch agent` at 19 Hz in three scenes (idle, busy, churn), next to bpftrace and
perf run at the same time on the same load: CPU and BPF run time as % of the machine, BPF
ns per sample, samples per second and lost, peak and steady RSS, unwind table builds per
minute. Needs root, ./scorch (make), and bpftrace / perf for their columns (skipped with a
note when missing).

  --quick        smoke test: 5 s warm-up and a 10 s window per scene
  --secs N       steady window per scene in seconds (default 60)
  --warmup N     seconds before the window (default 15)
  --scenes LIST  comma-separated scenes: idle,busy,churn (default: all three)
  --tools LIST   comma-separated: scorch,base,bpftrace,perf (default: scorch,bpftrace,perf,
                 and base with --base)
  --base PATH    run this scorch binary too, as "base" (e.g. a build of an older commit)
  --rounds N     run every scene N times and print medians (default 1)
  --hz N         sampling frequency of every tool (default 19)
  --keep DIR     keep the logs, stats and perf/bpftrace outputs in DIR

examples:
  sudo sh bench/agent_cost.sh                         # the table of docs/benchmarks.md
  sudo sh bench/agent_cost.sh --quick                 # does everything work? (~1 min)
  sudo sh bench/agent_cost.sh --base /tmp/main/scorch --tools scorch,base --rounds 3
  sudo sh bench/agent_cost.sh --scenes churn --secs 120 --keep /tmp/cost
EOF
}

SECS=60 WARMUP=15 SCENES=idle,busy,churn TOOLS= BASE= ROUNDS=1 HZ=19 KEEP=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) SECS=10 WARMUP=5 ;;
	--secs) SECS=${2:?}; shift ;;
	--warmup) WARMUP=${2:?}; shift ;;
	--scenes) SCENES=${2:?}; shift ;;
	--tools) TOOLS=${2:?}; shift ;;
	--base) BASE=${2:?}; shift ;;
	--rounds) ROUNDS=${2:?}; shift ;;
	--hz) HZ=${2:?}; shift ;;
	--keep) KEEP=${2:?}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
for v in "$SECS" "$WARMUP" "$ROUNDS" "$HZ"; do
	case $v in ''|*[!0-9]*) echo "error: '$v' is not a number" >&2; exit 2 ;; esac
done
[ "$SECS" -ge 4 ] || { echo "error: --secs must be at least 4" >&2; exit 2; }
[ "$ROUNDS" -ge 1 ] || { echo "error: --rounds must be at least 1" >&2; exit 2; }
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "error: needs root (BPF, perf events of every CPU)" >&2; exit 1; }
[ -x "$SCORCH" ] || { echo "error: no $SCORCH binary: run make first" >&2; exit 1; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "error: --base $BASE is not an executable" >&2; exit 1; }
if [ -z "$TOOLS" ]; then
	TOOLS=scorch
	[ -n "$BASE" ] && TOOLS="$TOOLS,base"
	TOOLS="$TOOLS,bpftrace,perf"
fi
for s in $(echo "$SCENES" | tr ',' ' '); do
	case $s in idle|busy|churn) ;; *) echo "error: unknown scene '$s'" >&2; exit 2 ;; esac
done
tools=
for t in $(echo "$TOOLS" | tr ',' ' '); do
	case $t in
	scorch) ;;
	base) [ -n "$BASE" ] || { echo "error: the base tool needs --base PATH" >&2; exit 2; } ;;
	bpftrace|perf)
		if ! command -v "$t" > /dev/null; then
			echo "note: $t is not installed: its rows are left out" >&2
			continue
		fi ;;
	*) echo "error: unknown tool '$t'" >&2; exit 2 ;;
	esac
	tools="$tools $t"
done
[ -n "$tools" ] || { echo "error: no tool to measure" >&2; exit 2; }

if [ "$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)" != 1 ]; then
	# BPF run time is only counted with this on (it stays on: other measurements may use it)
	echo 1 > /proc/sys/kernel/bpf_stats_enabled
fi

TMP=$(mktemp -d)
pids= srv=
cleanup() {
	for p in $pids $srv; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ -n "$KEEP" ]; then
		mkdir -p "$KEEP" && cp -r "$TMP"/. "$KEEP"/ 2>/dev/null || true
		echo "logs kept in $KEEP" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NCPU=$(getconf _NPROCESSORS_ONLN)
"$SCORCH" server --listen 127.0.0.1:0 --port-file "$TMP/port" --data "$TMP/server-data" \
	2> "$TMP/server.log" &
srv=$!
i=0
while [ ! -s "$TMP/port" ]; do
	i=$((i + 1))
	[ $i -gt 100 ] && { echo "error: scorch server did not start:" >&2; cat "$TMP/server.log" >&2; exit 1; }
	sleep 0.1
done
URL="http://127.0.0.1:$(cat "$TMP/port")"
mkdir -p "$TMP/cache-scorch" "$TMP/cache-base"
STATS_OPT=--stats
if [ -n "$BASE" ] && ! "$BASE" agent --help 2>/dev/null | grep -q -- '--stats'; then
	BASE_STATS="-v -v"
else
	BASE_STATS=--stats
fi

# --- measurements of one process (and its threads)
cpu_ns() { # PID: user+sys ns of all its threads (schedstat: on-CPU time)
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
bpf_of() { # PID: "total_run_ns perf_event_run_ns perf_event_runs" of its BPF programs
	for fd in /proc/"$1"/fd/*; do
		case $(readlink "$fd" 2>/dev/null) in
		anon_inode:bpf-prog) cat "/proc/$1/fdinfo/${fd##*/}" 2>/dev/null; echo ;;
		esac
	done | awk '
		/^prog_type:/ { t = $2 } /^prog_id:/ { id = $2 }
		/^run_time_ns:/ { rt = $2 } /^run_cnt:/ { rc = $2 }
		/^$/ { if (id != "" && !(id in seen)) { seen[id] = 1; tot += rt
			if (t == 7) { pe += rt; pc += rc } } id = "" }
		END { printf "%.0f %.0f %.0f\n", tot, pe, pc }'
}
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
stat_lines() { grep -c '^unwind:' "$1" 2>/dev/null || true; }

# --- scene loads
start_load() { # SCENE: starts its programs, their pids in $load
	load=
	case $1 in
	busy)
		i=0
		while [ $i -lt "$NCPU" ]; do
			if [ $((i % 2)) -eq 0 ]; then
				/usr/bin/python3 -c '
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
while True:
    fib(22)' &
			else
				sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c WHERE x < 0;' > /dev/null &
			fi
			load="$load $!"
			i=$((i + 1))
		done ;;
	churn)
		sh bench/churn_load.sh "$TMP/churn" &
		load=$! ;;
	esac
	pids="$pids $load"
}

start_tool() { # TOOL DIR: starts it, pid in DIR/pid
	case $1 in
	scorch)
		"$SCORCH" agent --server "$URL" -F "$HZ" --interval 10s --cache-dir "$TMP/cache-scorch" \
			$STATS_OPT 2> "$2/log" & ;;
	base)
		# -v -v is a global option, --stats one of the agent's
		# shellcheck disable=SC2086
		if [ "$BASE_STATS" = --stats ]; then
			"$BASE" agent --stats --server "$URL" -F "$HZ" --interval 10s \
				--cache-dir "$TMP/cache-base" 2> "$2/log" &
		else
			"$BASE" $BASE_STATS agent --server "$URL" -F "$HZ" --interval 10s \
				--cache-dir "$TMP/cache-base" 2> "$2/log" &
		fi ;;
	bpftrace)
		BPFTRACE_MAP_KEYS_MAX=1048576 bpftrace -e "profile:hz:$HZ { @n = count(); @s[kstack, ustack, comm] = count(); }" \
			> "$2/out" 2> "$2/log" & ;;
	perf)
		perf record -a -g -F "$HZ" -o "$2/perf.data" > "$2/out" 2> "$2/log" & ;;
	esac
	echo $! > "$2/pid"
	pids="$pids $!"
}

stop_tool() { # TOOL DIR
	p=$(cat "$2/pid")
	case $1 in
	scorch|base) kill -TERM "$p" 2>/dev/null || true ;;
	*) kill -INT "$p" 2>/dev/null || true ;;
	esac
}

# lost samples of a finished tool
lost_of() { # TOOL DIR
	case $1 in
	scorch|base)
		grep '^stats:' "$2/log" | tail -1 | tr ' ' '\n' | awk -F= '
			$1 == "ringbuf_lost" || $1 == "stacks_lost" { s += $2 } END { print s + 0 }' ;;
	bpftrace)
		awk '/^@n: / { n = $2; next } /\]: [0-9]+$/ { s += $NF }
			END { print (n > s ? n - s : 0) }' "$2/out" ;;
	perf)
		perf report -i "$2/perf.data" --stats 2> /dev/null | awk '
			/LOST_SAMPLES events:/ { print $3; f = 1 } END { if (!f) print 0 }' | head -1 ;;
	esac
}
perf_rate() { # DIR: SAMPLE records per second of the recording
	perf report -i "$1/perf.data" --stats 2> /dev/null | awk '
		/SAMPLE events:/ && !s { s = $3 }
		END { print s + 0 }'
}
counter_of() { # LOG LINE-PREFIX KEY N: value of KEY in the N-th line starting with the prefix
	grep "^$2" "$1" 2>/dev/null | sed -n "${4}p" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k { print $2 }'
}

run_scene() { # SCENE ROUND
	scene=$1 round=$2
	D=$TMP/$scene.$round
	mkdir -p "$D"
	start_load "$scene"
	for t in $tools; do
		mkdir -p "$D/$t"
		start_tool "$t" "$D/$t"
	done
	la0=$(cut -d' ' -f1 /proc/loadavg)
	sleep "$WARMUP"
	p0=$(awk '/^processes/ { print $2 }' /proc/stat)
	t0=$(date +%s.%N)
	for t in $tools; do
		p=$(cat "$D/$t/pid")
		kill -0 "$p" 2>/dev/null || { echo "error: $t exited during the warm-up:" >&2; tail -5 "$D/$t/log" >&2; exit 1; }
		cpu_ns "$p" > "$D/$t/cpu0"
		bpf_of "$p" > "$D/$t/bpf0"
		stat_lines "$D/$t/log" > "$D/$t/lines0"
		: > "$D/$t/rss"
	done
	elapsed=0
	while [ "$elapsed" -lt "$SECS" ]; do
		step=2
		[ $((SECS - elapsed)) -lt 2 ] && step=$((SECS - elapsed))
		sleep "$step"
		elapsed=$((elapsed + step))
		for t in $tools; do
			status_kb "$(cat "$D/$t/pid")" VmRSS >> "$D/$t/rss"
		done
	done
	t1=$(date +%s.%N)
	p1=$(awk '/^processes/ { print $2 }' /proc/stat)
	for t in $tools; do
		p=$(cat "$D/$t/pid")
		cpu_ns "$p" > "$D/$t/cpu1"
		bpf_of "$p" > "$D/$t/bpf1"
		stat_lines "$D/$t/log" > "$D/$t/lines1"
		status_kb "$p" VmHWM > "$D/$t/hwm"
	done
	la1=$(cut -d' ' -f1 /proc/loadavg)
	for p in $load; do kill "$p" 2>/dev/null || true; done
	for p in $load; do wait "$p" 2>/dev/null || true; done
	for t in $tools; do stop_tool "$t" "$D/$t"; done
	for t in $tools; do
		p=$(cat "$D/$t/pid")
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	win=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	echo "$scene $round load=$la0-$la1 procs_per_s=$(awk -v a="$p0" -v b="$p1" -v w="$win" 'BEGIN { printf "%.1f", (b - a) / w }')" >> "$TMP/conditions"
	for t in $tools; do
		T=$D/$t
		l0=$(cat "$T/lines0") l1=$(cat "$T/lines1")
		builds=-
		case $t in
		scorch|base)
			if [ "$l1" -gt "$l0" ]; then
				# from the last stats line before the window (or the start) to the
				# last one in it
				b0=0 u0=0
				if [ "$l0" -gt 0 ]; then
					b0=$(counter_of "$T/log" unwind: table_builds "$l0")
					u0=$(counter_of "$T/log" stats: uptime_s "$l0")
				fi
				b1=$(counter_of "$T/log" unwind: table_builds "$l1")
				u1=$(counter_of "$T/log" stats: uptime_s "$l1")
				# without uptime_s (an older build's debug lines): one interval per line
				builds=$(awk -v b0="$b0" -v b1="$b1" -v u0="$u0" -v u1="$u1" -v n=$((l1 - l0)) \
					'BEGIN { d = (u1 != "" && u0 != "") ? u1 - u0 : 10 * n
					printf "%.1f", (d > 0 ? 60 * (b1 - b0) / d : 0) }')
			fi ;;
		esac
		rate=
		[ "$t" = perf ] && rate=$(perf_rate "$T")
		lost=$(lost_of "$t" "$T")
		set -- $(cat "$T/bpf0") $(cat "$T/bpf1")
		awk -v tool="$t" -v scene="$scene" -v c0="$(cat "$T/cpu0")" -v c1="$(cat "$T/cpu1")" \
			-v b0="$1" -v pe0="$2" -v pc0="$3" -v b1="$4" -v pe1="$5" -v pc1="$6" \
			-v w="$win" -v n="$NCPU" -v hwm="$(cat "$T/hwm")" -v builds="$builds" \
			-v lost="$lost" -v prate="$rate" -v secs="$((SECS + WARMUP))" \
			-v rss="$(awk '{ s += $1; k++ } END { printf "%.0f", k ? s / k : 0 }' "$T/rss")" '
			BEGIN {
				cpu = 100 * (c1 - c0) / (w * 1e9 * n)
				bpf = 100 * (b1 - b0) / (w * 1e9 * n)
				nsps = pc1 > pc0 ? (pe1 - pe0) / (pc1 - pc0) : 0
				sps = (pc1 - pc0) / w
				if (tool == "perf") { bpf = -1; nsps = -1; sps = prate / secs }
				# scene tool cpu bpf total nsps sps lost hwm rss builds
				printf "%s %s %.4f %.4f %.4f %.0f %.1f %s %.1f %.1f %s\n", scene, tool, cpu,
					bpf, cpu + (bpf > 0 ? bpf : 0), nsps, sps, lost, hwm / 1024,
					rss / 1024, builds
			}' >> "$TMP/results"
	done
}

echo "scorch agent cost at $HZ Hz: $NCPU CPUs, $(uname -r), $(date -u +%Y-%m-%d), window ${SECS} s after ${WARMUP} s, $ROUNDS round(s), tools:$tools"
r=1
while [ $r -le "$ROUNDS" ]; do
	for s in $(echo "$SCENES" | tr ',' ' '); do
		echo "  $s, round $r ..." >&2
		run_scene "$s" "$r"
	done
	r=$((r + 1))
done

# --- tables: medians over rounds
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for s in $(echo "$SCENES" | tr ',' ' '); do
	echo
	awk -v s="$s" '$1 == s { print }' "$TMP/conditions" | awk '
		{ split($3, l, "="); split(l[2], a, "-"); split($4, p, "=")
		  if (NR == 1 || a[1] < lo) lo = a[1]; if (a[2] > hi) hi = a[2]; if (a[1] > hi) hi = a[1]
		  ps = ps (ps ? ", " : "") p[2] }
		END { printf "### %s: load average %s-%s, new processes/s on the machine: %s\n\n", $1, lo, hi, ps }'
	echo "| tool | CPU % of machine | BPF % of machine | total % of machine | BPF ns/sample | samples/s | lost | peak RSS MB | steady RSS MB | table builds/min |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for t in $tools; do
		row="| $t"
		col=3
		for col in 3 4 5 6 7 8 9 10 11; do
			v=$(awk -v s="$s" -v t="$t" -v c=$col '$1 == s && $2 == t { print $c }' "$TMP/results" |
				grep -v '^-' | median 2> /dev/null || true)
			case $col in
			3|4|5) [ -n "$v" ] && v=$(awk -v v="$v" 'BEGIN { printf "%.3f%%", v }') ;;
			6) [ -n "$v" ] && v=$(awk -v v="$v" 'BEGIN { printf "%.0f", v }') ;;
			7|9|10) [ -n "$v" ] && v=$(awk -v v="$v" 'BEGIN { printf "%.1f", v }') ;;
			8) [ -n "$v" ] && v=$(awk -v v="$v" 'BEGIN { printf "%.0f", v }') ;;
			11) [ -n "$v" ] && v=$(awk -v v="$v" 'BEGIN { printf "%.1f", v }') ;;
			esac
			[ -z "$v" ] && v=n/a
			row="$row | $v"
		done
		echo "$row |"
	done
done
echo
echo "CPU: user+sys of the tool's threads; BPF: run time of its programs (perf: n/a, its kernel-side"
echo "cost has no counter); both as % of all $NCPU CPUs over the window. lost: whole run."
