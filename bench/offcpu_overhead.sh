#!/bin/sh
# offcpu_overhead.sh: the cost of off-CPU profiling on a machine doing RATE context switches a
# second, scorch next to perf and bpftrace, measured in the same run.
#
# bench/cswitch_load.c keeps RATE context switches a second going (thread pairs passing a byte
# over pipes, paced on their own switch count). Each profiler then watches the whole machine
# for DURATION seconds, in turn, ROUNDS times:
#   none               the load alone (the reference)
#   scorch agent cpu   `scorch agent --profile cpu` at its production settings (19 Hz)
#   scorch agent +off  `scorch agent --profile cpu,offcpu` (19 Hz: off-CPU period 52.6 ms)
#   perf sched_switch  `perf record -e sched:sched_switch -g -a` (a stack at every switch)
#   bpftrace offcpu    bpftrace's offcputime logic on the sched_switch tracepoint: this kernel
#                      has no kprobes, so the stacks are taken at the switch-out (in the thread
#                      that leaves) and the time summed at its switch-in, per (kstack, ustack,
#                      comm) in a map, as offcputime.bt does (maps of up to 1 M keys)
# Measured from 2 s after the profiler is attached to 3 s before its end:
#   - context switches a second, the machine's (/proc/stat ctxt) and the load's;
#   - the load's CPU time per context switch (user + system of its threads: the kernel's work
#     at their switches, tracepoints and BPF programs included, is charged to them), and its
#     increase over the reference: what each switch costs the workload;
#   - the profiler's own CPU (user + system of its process), as a share of one core;
#   - BPF run time per context switch of the profiler's switch programs (kernel.bpf_stats_enabled,
#     which this script turns on and leaves on): scorch's offcpu_switch_out + offcpu_switch_in,
#     bpftrace's sched_switch program; perf has no BPF (its cost is in the load's CPU column);
#   - what each recorded and what it dropped: scorch's off-CPU records, rate-limited and lost
#     intervals (its log); perf's samples and lost events; bpftrace's lost events.
# Prints a markdown table of medians.
#
# usage: sudo sh bench/offcpu_overhead.sh [DURATION=20] [ROUNDS=3] [RATE=50000]
set -eu
cd "$(dirname "$0")/.."
DURATION=${1:-20}
ROUNDS=${2:-3}
RATE=${3:-50000}
B=${B:-build}
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "error: needs root" >&2; exit 1; }
[ "$DURATION" -ge 8 ] || { echo "error: DURATION must be at least 8 s" >&2; exit 1; }
command -v perf >/dev/null || { echo "error: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
command -v bpftrace >/dev/null || { echo "error: bpftrace is missing (apt-get install bpftrace)" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "error: bpftool is missing" >&2; exit 1; }
if [ "$SCORCH" = ./scorch ]; then make -s B="$B" scorch "$B/bench/cswitch_load"; else make -s B="$B" "$B/bench/cswitch_load"; fi
TCK=$(getconf CLK_TCK)
TMP=$(mktemp -d)
LOAD= PROF= SRV=
cleanup() {
	for p in $LOAD $PROF $SRV; do kill "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sysctl -q kernel.bpf_stats_enabled=1

# A scorch server on a free loopback port for the agent (its own cost is not counted).
"$SCORCH" server --listen 127.0.0.1:0 --port-file "$TMP/port" --data "$TMP/data" 2> "$TMP/server.log" &
SRV=$!
i=0
while [ ! -s "$TMP/port" ]; do
	i=$((i + 1)); [ $i -gt 100 ] && { cat "$TMP/server.log"; exit 1; }
	sleep 0.1
done
URL="http://127.0.0.1:$(cat "$TMP/port")"

cat > "$TMP/offcpu.bt" <<EOF
tracepoint:sched:sched_switch
{
	@start[args->prev_pid] = nsecs;
	@ks[args->prev_pid] = kstack;
	@us[args->prev_pid] = ustack;
	\$last = @start[args->next_pid];
	if (\$last != 0) {
		@[@ks[args->next_pid], @us[args->next_pid], args->next_comm] = sum(nsecs - \$last);
		delete(@start[args->next_pid]);
	}
}
interval:s:$DURATION { exit(); }
EOF

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
proc_cpu() { awk -v k="$TCK" '{ print ($14 + $15) / k }' "/proc/$1/stat" 2>/dev/null || echo 0; }
load_switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { s += $2 } END { print s + 0 }'; }
ctxt() { awk '/^ctxt/ { print $2 }' /proc/stat; }
prog_ids() { bpftool prog show -j | python3 -c 'import json,sys; print(" ".join(str(p["id"]) for p in json.load(sys.stdin)))'; }
# bpf_stats OLD_IDS NAME_RE CNT_RE: "run_time_ns run_cnt": run time summed over the programs not
# in OLD_IDS whose name matches NAME_RE, runs of the one matching CNT_RE (one run per switch).
bpf_stats() {
	bpftool prog show -j | python3 -c '
import json, re, sys
old = set(sys.argv[1].split()); pat = re.compile(sys.argv[2]); cpat = re.compile(sys.argv[3])
rt = cnt = 0
for p in json.load(sys.stdin):
    name = p.get("name", "")
    if str(p["id"]) in old or not pat.search(name):
        continue
    rt += p.get("run_time_ns", 0)
    if cpat.search(name):
        cnt += p.get("run_cnt", 0)
print(rt, cnt)' "$1" "$2" "$3"
}

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (at most 30 s).
wait_for() {
	i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 300 ] && { echo "error: '$2' not seen in $1" >&2; return 1; }
		sleep 0.1
	done
}

run_one() { # NAME
	name=$1
	"$B/bench/cswitch_load" "$RATE" $((DURATION + 20)) > "$TMP/load.out" &
	LOAD=$!
	sleep 2
	old=$(prog_ids)
	case $name in
	none) sleep "$DURATION" & PROF=$! ;;
	scorch-cpu) "$SCORCH" -v agent --server "$URL" --profile cpu -d "$DURATION" --interval 10s \
			--cache-dir "$TMP/tables" 2> "$TMP/$name.log" & PROF=$! ;;
	scorch-offcpu) "$SCORCH" -v agent --server "$URL" --profile cpu,offcpu -d "$DURATION" \
			--interval 10s --cache-dir "$TMP/tables" 2> "$TMP/$name.log" & PROF=$! ;;
	perf) perf record -e sched:sched_switch -g -a -o "$TMP/perf.data" -- sleep "$DURATION" \
			2> "$TMP/$name.log" & PROF=$! ;;
	bpftrace) BPFTRACE_MAP_KEYS_MAX=1048576 bpftrace "$TMP/offcpu.bt" > "$TMP/bt.out" 2> "$TMP/$name.log" & PROF=$! ;;
	esac
	# the window starts once the profiler is attached (bpftrace compiles for seconds under
	# load) and settled
	case $name in
	scorch-*) wait_for "$TMP/$name.log" 'agent: profiling' ;;
	bpftrace) wait_for "$TMP/bt.out" 'Attaching' ;;
	*) sleep 1 ;;
	esac
	sleep 2
	re=x^ cre=x^
	case $name in
	scorch-offcpu) re='^offcpu_sw' cre='^offcpu_switch_o' ;;
	bpftrace) re='^sched_switch$' cre='^sched_switch$' ;;
	esac
	c0=$(ctxt); l0=$(load_switches $LOAD); lc0=$(proc_cpu $LOAD); p0=$(proc_cpu $PROF)
	b0=$(bpf_stats "$old" "$re" "$cre"); t0=$(date +%s.%N)
	sleep $((DURATION - 5))
	c1=$(ctxt); l1=$(load_switches $LOAD); lc1=$(proc_cpu $LOAD); p1=$(proc_cpu $PROF)
	b1=$(bpf_stats "$old" "$re" "$cre"); t1=$(date +%s.%N)
	wait $PROF || true
	PROF=
	kill $LOAD 2>/dev/null || true
	wait $LOAD 2>/dev/null || true
	LOAD=
	echo "$t0 $t1 $c0 $c1 $l0 $l1 $lc0 $lc1 $p0 $p1 $b0 $b1" | awk '{
		dt = $2 - $1; ls = $6 - $5
		bt = $13 - $11; bc = $14 - $12
		printf "%.0f %.0f %.1f %.3f %.1f\n", ($4 - $3) / dt, ls / dt, ls ? 1e9 * ($8 - $7) / ls : 0,
		       100 * ($10 - $9) / dt, bc ? bt / bc : 0 }' >> "$TMP/$name.m"
	# what it recorded, what it dropped
	case $name in
	scorch-offcpu)
		sed -n 's/.*off-CPU: .* \([0-9]*\) recorded .*, \([0-9]*\) without stack .*, \([0-9]*\) lost .*/\1 \2 \3/p' \
			"$TMP/$name.log" >> "$TMP/$name.rec" ;;
	perf)
		n=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$TMP/$name.log")
		lost=$(perf report -i "$TMP/perf.data" --stats 2>/dev/null | awk '/LOST events/ { s += $NF } END { print s + 0 }')
		mb=$(sed -n 's/.*wrote \([0-9.]*\) MB.*/\1/p' "$TMP/$name.log")
		echo "${n:-0} ${lost:-0} ${mb:-0}" >> "$TMP/$name.rec" ;;
	bpftrace)
		n=$(grep -c '^@\[' "$TMP/bt.out" || true)
		lost=$(grep -o 'Lost [0-9]*' "$TMP/$name.log" | awk '{ s += $2 } END { print s + 0 }')
		echo "${n:-0} ${lost:-0}" >> "$TMP/$name.rec" ;;
	esac
}

for r in $(seq "$ROUNDS"); do
	for p in none scorch-cpu scorch-offcpu perf bpftrace; do
		run_one $p
		echo "round $r $p: $(tail -n 1 "$TMP/$p.m")" >&2
	done
done

col() { awk -v c="$2" '{ print $c }' "$TMP/$1.m" | median; }
rcol() { [ -s "$TMP/$1.rec" ] && awk -v c="$2" '{ print $c }' "$TMP/$1.rec" | median || echo 0; }
base=$(col none 3)
win=$((DURATION - 5))
echo
echo "$(nproc) CPUs, load of $RATE context switches/s (bench/cswitch_load), ${DURATION} s per profiler, median of $ROUNDS rounds, measured over ${win} s"
echo
echo "| profiler | machine switches/s | load switches/s | load CPU per switch | + per switch | profiler CPU (% of a core) | BPF per switch | recorded | dropped |"
echo "|---|---|---|---|---|---|---|---|---|"
for p in none scorch-cpu scorch-offcpu perf bpftrace; do
	case $p in
	none) label="none (the load alone)"; rec="-"; drop="-" ;;
	scorch-cpu) label="scorch agent --profile cpu (19 Hz)"; rec="CPU samples only"; drop="-" ;;
	scorch-offcpu) label="scorch agent --profile cpu,offcpu (19 Hz)"
		rec="$(rcol $p 1) off-CPU intervals"
		drop="$(rcol $p 2) without stack, $(rcol $p 3) lost" ;;
	perf) label="perf record -e sched:sched_switch -g -a"
		rec="$(rcol $p 1) samples, $(rcol $p 3) MB"; drop="$(rcol $p 2) lost" ;;
	bpftrace) label="bpftrace offcputime (sched_switch)"
		rec="$(rcol $p 1) stacks"; drop="$(rcol $p 2) lost" ;;
	esac
	bpf=$(col $p 5)
	c=$(col $p 3)
	if [ $p = none ]; then
		plus=- pc=-
	else
		plus=$(awk -v c="$c" -v b="$base" 'BEGIN { printf "%+.0f ns", c - b }')
		pc=$(awk -v v="$(col $p 4)" 'BEGIN { printf "%.2f%%", v }')
	fi
	case $p in
	scorch-offcpu|bpftrace) bpfs=$(awk -v v="$bpf" 'BEGIN { printf "%.0f ns", v }') ;;
	*) bpfs=- ;;
	esac
	awk -v l="$label" -v m="$(col $p 1)" -v ls="$(col $p 2)" -v c="$c" -v plus="$plus" -v pc="$pc" \
	    -v bpf="$bpfs" -v rec="$rec" -v drop="$drop" 'BEGIN {
		printf "| %s | %.0f | %.0f | %.0f ns | %s | %s | %s | %s | %s |\n", l, m, ls, c, plus, pc,
		       bpf, rec, drop }'
done
