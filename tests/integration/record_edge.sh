#!/bin/sh
# scorch record at its edges: exit statuses on every path, bad arguments, -d shorter than the
# command, signals passed on and escalated, a parent that ignores SIGCHLD, closed stdout and
# stderr, a command that leaves a daemon behind, -p targets whose main thread exits first or
# that exit during startup, -F 10000.
. tests/integration/lib.inc

# Bad arguments: exit status 2 and a message naming the problem (no BPF needed).
expect_usage() { # expected-message args...
	msg=$1
	shift
	timeout 20 $SCORCH record "$@" > "$TMP/u.out" 2> "$TMP/u.err"
	rc=$?
	[ $rc -eq 2 ] || fail "record $*: exit $rc, expected 2: $(cat "$TMP/u.err")"
	grep -q -- "$msg" "$TMP/u.err" || fail "record $*: no '$msg' in: $(cat "$TMP/u.err")"
}
expect_usage "no command after '--'" -o "$TMP/x.folded" --
expect_usage "unrecognized option '--bogus'" --bogus -o "$TMP/x.folded"
expect_usage "see 'scorch record --help'" --bogus -o "$TMP/x.folded"
expect_usage "invalid frequency '0'" -F 0 -o "$TMP/x.folded"
expect_usage "invalid frequency '4294967395'" -F 4294967395 -o "$TMP/x.folded"
expect_usage "invalid frequency 'abc'" -F abc -o "$TMP/x.folded"
expect_usage "invalid duration '0'" -d 0 -o "$TMP/x.folded"
expect_usage "invalid duration '1e12'" -d 1e12 -o "$TMP/x.folded"
expect_usage "invalid duration ''" -d '' -o "$TMP/x.folded"
expect_usage "invalid PID list" -p 12x -o "$TMP/x.folded"
expect_usage "no output file" -a
expect_usage "exclusive" -a -p 1 -o "$TMP/x.folded"
expect_usage "exclusive" -a -o "$TMP/x.folded" -- true
$SCORCH record --help > "$TMP/help.txt" || fail "--help exited $?"
grep -q '^examples:' "$TMP/help.txt" || fail "--help has no examples"
grep -q 'daemons' "$TMP/help.txt" || fail "--help does not say what happens to daemons"
# every runtime that works is named, in scorch --help and scorch record --help
$SCORCH --help > "$TMP/mainhelp.txt" || fail "scorch --help exited $?"
for rt in CPython HotSpot/Java V8/Node.js Ruby PHP Perl Go 'C, C++, Rust'; do
	tr '\n' ' ' < "$TMP/help.txt" | grep -q "$rt" || fail "record --help does not list $rt"
	tr '\n' ' ' < "$TMP/mainhelp.txt" | grep -q "$rt" || fail "scorch --help does not list $rt"
done
[ -f "$TMP/x.folded" ] && fail "a failed record left an output file"

need_bpf

# A command killed by a signal: 128 + the signal.
$SCORCH record -q -o "$TMP/k.folded" -- sh -c 'kill -9 $$'
rc=$?
[ $rc -eq 137 ] || fail "command killed by SIGKILL: exit $rc, expected 137"
[ -f "$TMP/k.folded" ] || fail "no profile after the command was killed"

# -d shorter than the command: the command gets SIGTERM, the profile is written.
start=$(date +%s)
timeout 25 $SCORCH record -q -d 1 -o "$TMP/d.folded" -- sleep 30
rc=$?
[ $rc -eq 143 ] || fail "-d 1 -- sleep 30: exit $rc, expected 143 (SIGTERM)"
[ $(($(date +%s) - start)) -lt 25 ] || fail "-d 1 waited for the command to finish"
[ -f "$TMP/d.folded" ] || fail "-d 1 -- sleep 30: no profile"

# ... and one that ignores SIGTERM is killed 5 s later.
# (The busy loops carry this test's PID: pgrep must not find those of another run.)
LOOP=record-edge-busy-$$
timeout -s KILL 40 $SCORCH record -q -d 1 -o "$TMP/d2.folded" -- sh -c "trap '' TERM; while :; do :; done # $LOOP" 2> "$TMP/d2.err"
rc=$?
for p in $(pgrep -f "$LOOP"); do kill -9 "$p"; done
[ $rc -eq 137 ] || fail "a command ignoring SIGTERM: exit $rc, expected 137: $(cat "$TMP/d2.err")"
grep -q "did not exit after SIGTERM" "$TMP/d2.err" || fail "no word of the SIGKILL: $(cat "$TMP/d2.err")"
grep -q '^sh;' "$TMP/d2.folded" || fail "the busy sh was not profiled: $(head -3 "$TMP/d2.folded")"

# SIGINT is passed on to the command; a command that ignores it is killed by a second one.
# (Sent once the command has run 0.3 s of CPU under the recording; the pause after the first SIGINT is
# the time record is given to exit wrongly, not a wait for anything.)
$SCORCH record -q -o "$TMP/i.folded" -- sh -c "trap '' INT; while :; do :; done # $LOOP" 2> "$TMP/i.err" &
pid=$!
kill_at_exit $pid
wait_for 60 "busy command under record" pgrep -P $pid -f "$LOOP"
wait_for 60 "sampling by record" sampling $pid
loop=$(pgrep -P $pid -f "$LOOP" | head -1)
ran() { awk -v c="$(cpu_of $loop)" 'BEGIN { exit !(c >= 0.3) }'; }
wait_for 120 "0.3 s of CPU for the busy command" ran
kill -INT $pid
sleep 1.5
kill -0 $pid 2>/dev/null || fail "record exited before the command did"
kill -INT $pid
wait $pid
rc=$?
for p in $(pgrep -f "$LOOP"); do kill -9 "$p"; done
[ $rc -eq 137 ] || fail "second SIGINT: exit $rc, expected 137: $(cat "$TMP/i.err")"
grep -q '^sh;' "$TMP/i.folded" || fail "no profile after two SIGINTs"

# A parent that ignores SIGCHLD (inherited across exec): the exit status is still read.
if command -v python3 >/dev/null 2>&1; then
	timeout 60 python3 -c 'import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$SCORCH" record -q -o "$TMP/c.folded" -- sh -c 'exit 5'
	rc=$?
	[ $rc -eq 5 ] || fail "with SIGCHLD ignored: exit $rc, expected 5"
fi

# stdout and stderr closed: the profile is written whole, the status is the command's.
$SCORCH record -o "$TMP/closed.folded" -- "$B/helpers/fp_hot" 0.3 >&- 2>&-
rc=$?
[ $rc -eq 0 ] || fail "with stdout and stderr closed: exit $rc"
grep -q '^fp_hot;.* [0-9]*$' "$TMP/closed.folded" || fail "with stdout and stderr closed: bad profile"
awk '!/ [0-9]+$/ { bad = 1 } END { exit bad }' "$TMP/closed.folded" || fail "stray text in the profile"
ls "$TMP" | grep -q '\.tmp\.' && fail "a temporary file was left behind: $(ls "$TMP")"

# A command that starts a daemon and exits: we stop when the command exits.
start=$(date +%s)
timeout 20 $SCORCH record -q -o "$TMP/daemon.folded" -- sh -c "sleep 29.5$$ & exit 0"
rc=$?
for p in $(pgrep -fx "sleep 29.5$$"); do kill "$p"; done
[ $rc -eq 0 ] || fail "daemon case: exit $rc"
[ $(($(date +%s) - start)) -lt 20 ] || fail "record waited for the daemon the command left"

# -p: a process whose main thread exits first lives on in its other thread.
# Held stopped until the recording samples; its worker then runs 0.5 s of CPU, all of it after
# the main thread is gone, and the process's exit ends the recording.
start_stopped pid "$B/helpers/leader_exit" -c 0.5 > "$TMP/le.out"
kill_at_exit $pid
$SCORCH record -q -F 199 -p $pid -o "$TMP/le.folded" &
rec=$!
kill_at_exit $rec
wait_for 60 "sampling by record -p" sampling $rec
kill -CONT $pid
wait $rec || fail "record -p (leader exited) exited $?"
wait $pid
# (Its frames do not resolve yet: /proc/PID/maps of a process whose main thread is gone is
# empty; only /proc/PID/task/TID/maps of a live thread has them.)
cpu=$(sed -n 's/^leader_exit: cpu \([0-9.]*\) s$/\1/p' "$TMP/le.out")
[ -n "$cpu" ] || fail "leader_exit did not report its CPU time: $(cat "$TMP/le.out")"
check_samples "record -p, main thread gone" "$(count_matching "$TMP/le.folded" '^leader_exit;')" "$cpu" 199

# -p: record stops when the process exits.
start_stopped pid "$B/helpers/leader_exit" -c 0.2
kill_at_exit $pid
$SCORCH record -q -p $pid -d 60 -o "$TMP/end.folded" &
rec=$!
kill_at_exit $rec
wait_for 60 "sampling by record -p" sampling $rec
kill -CONT $pid
start=$(date +%s)
wait $rec || fail "record -p exited $?"
[ $(($(date +%s) - start)) -lt 50 ] || fail "record -p did not stop when the process exited"
grep -q '^leader_exit;' "$TMP/end.folded" || fail "record -p: no samples of the process"

# -p: the process exits while we start: the (empty) profile is still written.
sleep 0.2 &
pid=$!
timeout 30 $SCORCH record -q -p $pid -d 60 -o "$TMP/gone.folded" 2> "$TMP/gone.err"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "process gone at start: exit $rc"
if [ $rc -eq 0 ]; then
	[ -f "$TMP/gone.folded" ] || fail "process gone at start: no profile"
else
	grep -q "no process with PID $pid" "$TMP/gone.err" || fail "unclear message: $(cat "$TMP/gone.err")"
fi

# -F 10000: works (or says the kernel's limit plainly).
# The kernel may throttle a rate this high (perf_cpu_time_max_percent), so only half of the
# 10000 per CPU second is asked for: still five times what the next rate down (-F 999) gives.
$SCORCH record -q --stats -F 10000 -o "$TMP/f.folded" -- "$B/helpers/fp_hot" -c 0.5 > "$TMP/f.out" 2> "$TMP/f.err"
rc=$?
if [ $rc -eq 0 ]; then
	n=$(count_matching "$TMP/f.folded" '^fp_hot;')
	cpu=$(sed -n 's/^fp_hot: cpu \([0-9.]*\) s$/\1/p' "$TMP/f.out")
	[ -n "$cpu" ] || fail "fp_hot did not report its CPU time: $(cat "$TMP/f.out")"
	echo "-F 10000: $n samples for $cpu s of CPU"
	awk -v n="$n" -v c="$cpu" 'BEGIN { exit !(n >= 0.5 * c * 10000 && n <= 1.1 * c * 10000 + 300) }' ||
		fail "-F 10000 gave $n samples for $cpu s of CPU: $(cat "$TMP/f.err")"
else
	grep -q "perf_event_max_sample_rate" "$TMP/f.err" || fail "-F 10000 failed unclearly: $(cat "$TMP/f.err")"
fi
echo ok
