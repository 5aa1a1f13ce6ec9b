#!/bin/sh
# scorch record: a known hot function dominates, exit status, -p, -a with idle, errors.
. tests/integration/lib.inc
need_bpf

# 1. A command with a known split: hot_function ~80%, cold_function ~20%, under main. fp_hot
# runs for 1 s of its own CPU time and says how much it used: the samples must match it.
$SCORCH record -q -F 999 -o "$TMP/hot.folded" -- "$B/helpers/fp_hot" -c 1 > "$TMP/hot.out" ||
	fail "record exited $?"
grep -q '^fp_hot;' "$TMP/hot.folded" || fail "no fp_hot stacks: $(head -5 "$TMP/hot.folded")"
total=$(count_matching "$TMP/hot.folded" '^fp_hot;')
hot=$(count_matching "$TMP/hot.folded" '^fp_hot;(.*;)?main;run;hot_function$')
cold=$(count_matching "$TMP/hot.folded" '^fp_hot;(.*;)?main;run;cold_function$')
echo "fp_hot: total=$total hot=$hot cold=$cold"
cpu=$(sed -n 's/^fp_hot: cpu \([0-9.]*\) s$/\1/p' "$TMP/hot.out")
[ -n "$cpu" ] || fail "fp_hot did not report its CPU time: $(cat "$TMP/hot.out")"
check_samples "record -- fp_hot" "$total" "$cpu" 999
[ $((hot * 100 / total)) -ge 65 ] || fail "hot_function has $hot of $total samples, expected ~80%"
[ $((cold * 100 / total)) -ge 8 ] || fail "cold_function has $cold of $total samples, expected ~20%"
[ $((hot)) -gt $((cold * 2)) ] || fail "hot_function ($hot) does not dominate cold_function ($cold)"

# 2. The command's exit status is scorch's.
$SCORCH record -q -o "$TMP/exit.folded" -- sh -c 'exit 3'
rc=$?
[ $rc -eq 3 ] || fail "expected exit status 3, got $rc"

# 3. A command that does not exist: 127 and a message naming it.
$SCORCH record -q -o "$TMP/nf.folded" -- /nonexistent/command-xyz 2> "$TMP/nf.err"
rc=$?
[ $rc -eq 127 ] || fail "expected 127 for a missing command, got $rc"
grep -q "command not found: '/nonexistent/command-xyz'" "$TMP/nf.err" || fail "no clear message: $(cat "$TMP/nf.err")"

# 4. -p: a running process and its threads. The process is held stopped until the recording
# samples, then runs 0.5 s of CPU and exits, which ends the recording: all its CPU time is in.
start_stopped pid "$B/helpers/fp_hot" -c 0.5 > "$TMP/pid.out"
kill_at_exit $pid
$SCORCH record -q -F 499 -p $pid -o "$TMP/pid.folded" &
rec=$!
kill_at_exit $rec
wait_for 60 "perf events of record -p" sampling $rec
kill -CONT $pid
wait $rec || fail "record -p exited $?"
wait $pid
cpu=$(sed -n 's/^fp_hot: cpu \([0-9.]*\) s$/\1/p' "$TMP/pid.out")
[ -n "$cpu" ] || fail "fp_hot did not report its CPU time: $(cat "$TMP/pid.out")"
check_samples "record -p $pid" "$(count_matching "$TMP/pid.folded" '^fp_hot;')" "$cpu" 499
n=$(count_matching "$TMP/pid.folded" '^fp_hot;.*hot_function$')
[ "$n" -ge 1 ] || fail "record -p $pid: no hot_function samples"
# The process is still `sh` (start_stopped's wrapper) until its exec of fp_hot is done: a sample
# taken inside that exec (likelier on a loaded machine) is the process's own.
not_it='$0 !~ /^fp_hot;/ && !($0 ~ /^sh;/ && $0 ~ /execve/)'
others=$(awk "$not_it" "$TMP/pid.folded" | wc -l)
[ "$others" -eq 0 ] || fail "record -p captured other processes: $(awk "$not_it" "$TMP/pid.folded" | head -3)"

# 5. Unknown PID: a clear error.
$SCORCH record -q -p 4000000 -d 1 -o "$TMP/x.folded" 2> "$TMP/p.err" && fail "unknown pid accepted"
grep -q "no process with PID 4000000" "$TMP/p.err" || fail "unclear message: $(cat "$TMP/p.err")"

# 6. Unwritable output: refused before profiling.
$SCORCH record -q -a -d 1 -o /nonexistent-dir/x.folded 2> "$TMP/o.err" && fail "unwritable output accepted"
grep -q "cannot write output" "$TMP/o.err" || fail "unclear message: $(cat "$TMP/o.err")"
$SCORCH record -q -a -d 1 -o "$TMP/x.unknownext" 2> "$TMP/e.err" && fail "unknown extension accepted"
grep -q "cannot tell the format" "$TMP/e.err" || fail "unclear message: $(cat "$TMP/e.err")"

# 7. Not root: refused with the fix named.
if command -v setpriv >/dev/null 2>&1; then
	chmod 1777 "$TMP"
	setpriv --reuid=65534 --regid=65534 --clear-groups $SCORCH record -q -a -d 1 -o "$TMP/np.folded" 2> "$TMP/np.err" &&
		fail "record as nobody succeeded"
	grep -q "needs root (or the capabilities CAP_BPF and CAP_PERFMON)" "$TMP/np.err" || fail "unclear message as nobody: $(cat "$TMP/np.err")"
fi

# 8. Whole machine: idle shows as its own frame, kernel frames carry _[k].
# dd makes system calls all the time, so kernel frames are there even on a quiet machine. Both
# run until the recording is over (it may take a while to start on a busy machine). With more
# than one CPU both share the last one and CPU 0 has idle time to show: some virtual machines
# fire no cpu-clock event at all on an idle CPU other than CPU 0 (perf and bpftrace see none
# either), so CPU 0 is the one that must idle.
pin=
[ "$(nproc)" -gt 1 ] && command -v taskset >/dev/null && pin="taskset -c $(($(nproc) - 1))"
$pin "$B/helpers/fp_hot" 120 &
pid=$!
kill_at_exit $pid
$pin timeout 120 dd if=/dev/zero of=/dev/null bs=64 2>/dev/null &
dd=$!
kill_at_exit $dd
idle0=$(awk '/^cpu / { print $5 + $6 }' /proc/stat)
$SCORCH record -q -a -d 1 -o "$TMP/all.folded" || fail "record -a exited $?"
idle1=$(awk '/^cpu / { print $5 + $6 }' /proc/stat)
kill $pid $dd 2>/dev/null
wait $pid $dd 2>/dev/null
if ! grep -q '\[idle\] [0-9]*$' "$TMP/all.folded"; then
	# Only acceptable when the CPUs really had no idle time (another load on the machine).
	[ $((idle1 - idle0)) -le 3 ] || fail "no [idle] frame in -a profile, yet the CPUs idled $((idle1 - idle0)) ticks"
	echo "note: the machine was fully busy, no idle time to see"
fi
grep -q '^dd;.*_\[k\]' "$TMP/all.folded" || fail "no kernel frames of dd in -a profile: $(cut -c1-100 "$TMP/all.folded" | head -5)"
grep -q '^fp_hot;.*hot_function' "$TMP/all.folded" || fail "-a missed the busy process"
echo "ok"
