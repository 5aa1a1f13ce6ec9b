#!/bin/sh
# mmap_events.sh: the samples of processes that exit before their maps are read keep their
# stacks. A shell loop starts a tiny C program (tests/helpers/mmap_events/spin.c) 200 times: it
# lives about 2 ms, in mmap_spin_work(). Most of its samples are snapshots (no unwind tables
# yet) read after it is gone; the mappings the kernel reported as they were made
# (src/agent/mapevents.c) unwind and name them. For `scorch record -F 999 -- sh -c LOOP` and
# for `scorch agent -F 999` (whole machine, pushing to a server), of the program's samples:
#   - >= 60% are mmap_spin_work under _start / __libc_start_main (the others are in the
#     loader and libc's start-up, before main);
#   - <= 3% are [exited] (measured: 0-0.2%; before the events, 11% for record and 20% for the
#     agent);
#   - --stats says the maps of gone processes came from the events (maps_from_events > 0).
. tests/integration/server.inc
need_bpf
command -v gcc > /dev/null 2>&1 || { echo "SKIP: no gcc to build the workload"; exit 0; }
mkdir -p "$TMP/bin"
S=$TMP/bin/mmapspin
gcc -O2 -fomit-frame-pointer -o "$S" tests/helpers/mmap_events/spin.c || fail "cannot build spin.c"

stat_of() { # FILE NAME: the last value of NAME=... in scorch's --stats output
	tr ' ' '\n' < "$1" | awk -F= -v k="$2" '$1 == k { v = $2 } END { print v }'
}
count_of() { # LINE NAME
	echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2; exit }'
}
# check WHAT FOLDED STATS: the shares above
check() {
	res=$(python3 tests/helpers/mmap_events/count.py "$2" mmapspin 2> "$TMP/other") ||
		fail "count.py failed"
	echo "$1: $res; maps_from_events=$(stat_of "$3" maps_from_events)"
	total=$(count_of "$res" total)
	named=$(count_of "$res" named)
	exited=$(count_of "$res" exited)
	[ "$total" -ge 100 ] || fail "$1: only $total samples of the program"
	[ $((named * 100)) -ge $((total * 60)) ] ||
		{ cat "$TMP/other"; fail "$1: $named of $total samples named with a root"; }
	[ $((exited * 100)) -le $((total * 3)) ] ||
		fail "$1: $exited of $total samples are [exited]"
	[ "$(stat_of "$3" maps_from_events)" -gt 0 ] 2>/dev/null ||
		fail "$1: no maps from the events (--stats: $(grep mapevents "$3"))"
}

LOOP="i=0; while [ \$i -lt 200 ]; do $S 2; i=\$((i+1)); done"
timeout 120 $SCORCH record -q -F 999 --stats -o "$TMP/rec.folded" -- sh -c "$LOOP" \
	2> "$TMP/rec.err" || fail "record exited $?: $(tail -3 "$TMP/rec.err")"
check record "$TMP/rec.folded" "$TMP/rec.err"

# The agent: every process of the machine, the loop's children named after this shell.
start_server
(sleep 1; i=0; while [ $i -lt 300 ]; do "$S" 2; i=$((i + 1)); done) &
loop=$!
kill_at_exit $loop
timeout 60 $SCORCH agent --server "$URL" -F 999 --interval 2s -d 6 --stats --no-cache-dir \
	2> "$TMP/agent.err" || fail "agent exited $?: $(tail -5 "$TMP/agent.err")"
wait $loop
get /label-values label=service_name | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    print(s)' > "$TMP/services"
: > "$TMP/agent.folded"
while read -r svc; do
	get /render "query=$svc.cpu{}" from=now-1h until=now format=folded >> "$TMP/agent.folded"
	echo >> "$TMP/agent.folded"
done < "$TMP/services"
check agent "$TMP/agent.folded" "$TMP/agent.err"
stop_server
echo "ok"
