#!/bin/sh
# offcpu.sh: off-CPU and wall-clock profiles with real BPF.
#  1. Native, three kinds of wait (tests/helpers/offcpu_work.c: pipe read, futex, nanosleep),
#     recorded with --wall: the wait's stack reaches the kernel's wait path and ends in the
#     right reason frame; the waiting thread's share of wall time is within 3 points of the
#     program's own measure; the thread's wall profile adds up to its wall time (within 5%).
#  2. Python (tests/helpers/python/offcpu.py), recorded with --off-cpu: the three waits under
#     the Python functions that made them, with their reasons; values are nanoseconds.
#     Ruby, PHP and Perl (when installed): their functions above the sleep.
#  3. top --off-cpu and --wall: seconds under the waiting function; wall covers the thread.
#  4. The agent with --profile cpu,offcpu,wall pushes offcpu and wall profiles (nanoseconds)
#     that the server stores next to cpu and answers queries on.
. tests/integration/server.inc
need_bpf
[ -x "$B/helpers/offcpu_work" ] || fail "no $B/helpers/offcpu_work (run make test-build)"

# Kernels without the switch-in hooks (sched_exit_tp, or kprobes) are told apart from failures.
if ! $SCORCH record --off-cpu -q -d 0.2 -o "$TMP/probe.folded" -- sleep 0.1 2> "$TMP/probe.log"; then
	if grep -q "off-CPU profiling needs" "$TMP/probe.log"; then
		echo "SKIP: $(grep -m1 'off-CPU profiling needs' "$TMP/probe.log")"
		exit 0
	fi
	fail "scorch record --off-cpu failed: $(cat "$TMP/probe.log")"
fi

# ns_matching FILE REGEX: nanoseconds of the folded lines whose stack matches REGEX (as an
# integer: off-CPU sums pass 2^31, where awk's default output turns to exponents).
ns_matching() {
	awk -v re="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ re) s += n } END { printf "%.0f\n", s }' "$1"
}

# check_native FOLDED OUT WAIT_FN STACK_RE: prints a verdict line, exit 0 when it holds.
check_native() {
	awk -v fn="$3" -v re="$4" -v out="$2" '
	BEGIN {
		getline line < out
		n = split(line, kv, /[ =]/)
		for (i = 1; i < n; i += 2) m[kv[i]] = kv[i + 1]
	}
	{
		v = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		if (s !~ /^blocker;/ || s !~ /;work_loop;/) next
		tot += v
		if (index(s, ";" fn ";")) blk += v
		if (s ~ re) hit += v
	}
	END {
		if (!m["wall_ns"] || !tot) { print "no data (profile total " tot ")"; exit 1 }
		share = 100 * blk / tot; own = 100 * m["blocked_ns"] / m["wall_ns"]
		sum = 100 * tot / m["wall_ns"]
		printf "waiting share %.1f%% (its own measure %.1f%%), wall sum %.1f%% of %.3f s, %.1f%% of the wait on the expected stack\n", share, own, sum, m["wall_ns"] / 1e9, blk ? 100 * hit / blk : 0
		d = share - own
		if (d < -3 || d > 3 || sum < 95 || sum > 105 || hit < 0.5 * blk) exit 1
	}' "$1"
}

# 1. native
for kind in pipe futex sleep; do
	case $kind in
	pipe) fn=wait_for_data re=';wait_for_data;read;.*pipe_read_\[k\];.*schedule_\[k\];.*\[off-cpu: io\]$' ;;
	futex) fn=wait_for_lock re=';wait_for_lock;.*futex.*schedule_\[k\];.*\[off-cpu: lock\]$' ;;
	sleep) fn=take_a_nap re=';take_a_nap;.*nanosleep.*schedule_\[k\];.*\[off-cpu: sleep\]$' ;;
	esac
	ok=0
	# Two tries: the machine is shared and a burst of load can skew one run.
	for try in 1 2; do
		$SCORCH record --wall -F 499 -q -o "$TMP/$kind.folded" -- \
			"$B/helpers/offcpu_work" $kind 1.5 6 4 > "$TMP/$kind.out" 2> "$TMP/$kind.log" ||
			fail "record --wall of $kind failed: $(cat "$TMP/$kind.log")"
		if res=$(check_native "$TMP/$kind.folded" "$TMP/$kind.out" $fn "$re"); then
			echo "$kind: $res"
			ok=1
			break
		fi
		echo "$kind (try $try): $res"
	done
	if [ $ok = 0 ]; then
		grep "^blocker" "$TMP/$kind.folded" | sort -t' ' -k2 -n | tail -5
		fail "$kind: the wall profile does not match the program's own measure"
	fi
done

# 2. Python
PY=
for p in /usr/bin/python3.11 /usr/bin/python3 /root/.pyenv/versions/3.12.*/bin/python3.12; do
	[ -x "$p" ] && { PY=$p; break; }
done
if [ -z "$PY" ]; then
	echo "skipped (no python3): the Python part"
else
	$SCORCH record --off-cpu -F 199 -q -o "$TMP/py.folded" -- "$PY" tests/helpers/python/offcpu.py 1.5 \
		> "$TMP/py.out" 2> "$TMP/py.log" || fail "record --off-cpu of $PY failed: $(cat "$TMP/py.log")"
	for want in 'wait_for_data \(.*offcpu\.py\);.*read;.*pipe_read_\[k\];.*\[off-cpu: io\]$' \
		    'wait_for_lock \(.*offcpu\.py\);.*futex.*\[off-cpu: lock\]$' \
		    'take_a_nap \(.*offcpu\.py\);.*nanosleep.*\[off-cpu: sleep\]$'; do
		n=$(ns_matching "$TMP/py.folded" "$want")
		echo "python: $n ns under $want"
		# each wait takes about a third of 1.5 s: at least 0.2 s of it must be there
		[ "$n" -ge 200000000 ] || {
			grep -E 'wait_for|take_a_nap' "$TMP/py.folded" | sort -t' ' -k2 -n | tail -4
			fail "python: too little off-CPU time under $want"
		}
	done
	waited=$(sed -n 's/^waited_s=\([0-9.]*\) .*/\1/p' "$TMP/py.out")
	got=$(ns_matching "$TMP/py.folded" '(wait_for_data|wait_for_lock|take_a_nap) \(')
	echo "python: ${waited}s waited by its own measure, $got ns in the profile"
	awk -v w="$waited" -v g="$got" 'BEGIN { r = g / 1e9 / w; exit !(r > 0.85 && r < 1.15) }' ||
		fail "python: the waits add up to $got ns, the program measured ${waited} s"
fi

# 2b. Ruby, PHP and Perl (each when installed): their frames above the sleep, through the same
#     unwinder and walkers as CPU samples. Ruby's sleep waits in ppoll() on its signal fd: io.
rt_check() { # name regex command...
	name=$1 re=$2
	shift 2
	command -v "$1" > /dev/null || { echo "skipped (no $1): the $name part"; return 0; }
	$SCORCH record --off-cpu -F 99 -q -o "$TMP/$name.folded" -- "$@" > /dev/null 2> "$TMP/$name.log" ||
		fail "record --off-cpu of $name failed: $(cat "$TMP/$name.log")"
	n=$(ns_matching "$TMP/$name.folded" "$re")
	echo "$name: $n ns under $re"
	# 60 sleeps of 10 ms: at least half of it under the runtime's frame
	[ "$n" -ge 300000000 ] || {
		sort -t' ' -k2 -n "$TMP/$name.folded" | tail -3
		fail "$name: too little off-CPU time under $re"
	}
}
rt_check ruby 'Object#take_nap( \([^)]*\))?;Kernel#sleep;.*ppoll.*\[off-cpu: io\]$' \
	ruby -e 'def take_nap; sleep 0.01; end; 60.times { take_nap }'
rt_check php 'take_nap( \([^)]*\))?;usleep;.*nanosleep.*\[off-cpu: sleep\]$' \
	php -r 'function take_nap() { usleep(10000); } for ($i = 0; $i < 60; $i++) take_nap();'
rt_check perl 'main::take_nap( \([^)]*\))?;.*usleep;.*nanosleep.*\[off-cpu: sleep\]$' \
	perl -e 'use Time::HiRes qw(usleep); sub take_nap { usleep(10000) } take_nap() for 1..60'

# 3. top: --off-cpu reports seconds of waiting under the function that waited; --wall covers
#    at least the whole wall time of the working thread (plain reports, not on a terminal)
"$B/helpers/offcpu_work" sleep 3 6 4 > /dev/null &
work=$!
$SCORCH top --off-cpu -F 199 -p $work -i 1 -d 2.5 -n 100 > "$TMP/top_off.txt" 2> "$TMP/top_off.err" ||
	fail "top --off-cpu exited $?: $(cat "$TMP/top_off.err")"
kill $work 2>/dev/null
wait $work 2>/dev/null
head -12 "$TMP/top_off.txt"
grep -q '^scorch top - .* offcpu [0-9.]* s in ' "$TMP/top_off.txt" ||
	fail "top --off-cpu: no offcpu header: $(head -3 "$TMP/top_off.txt")"
grep -Eq 'SELF +TOTAL +TIME +PROCESS' "$TMP/top_off.txt" ||
	fail "top --off-cpu: no TIME column"
# the first report: [off-cpu: sleep] has time of its own, take_a_nap is on a fifth of it or more
awk '/^scorch top - / { r++ } r == 1 && /\[off-cpu: sleep\]$/ { t = $3 } r == 1 && $NF == "take_a_nap" { tot = $2 }
     END { sub(/s$/, "", t); sub(/%$/, "", tot); printf "top --off-cpu: [off-cpu: sleep] %s s, take_a_nap total %s%%\n", t, tot
	   exit !(t + 0 > 0.1 && tot + 0 >= 20) }' "$TMP/top_off.txt" || fail "top --off-cpu: the sleep is not where it waited"
"$B/helpers/offcpu_work" sleep 3 6 4 > /dev/null &
work=$!
$SCORCH top --wall -F 499 -p $work -i 1 -d 2.5 -n 100 > "$TMP/top_wall.txt" 2> "$TMP/top_wall.err" ||
	fail "top --wall exited $?: $(cat "$TMP/top_wall.err")"
kill $work 2>/dev/null
wait $work 2>/dev/null
# the first report: the working thread alone is one thread all along (its main thread waits in
# pthread_join(), counted when that wait ends; at most 3 threads: main, blocker, feeder)
awk '/^scorch top - .* wall / { r++; if (r == 1) { n = $0; sub(/.*\(/, "", n); sub(/ threads.*/, "", n) } }
     r == 1 && $NF == "burn" { b = $1 }
     END { sub(/%$/, "", b); printf "top --wall: %s threads on average, burn %s%%\n", n, b; exit !(n + 0 >= 0.9 && n + 0 <= 3.3 && b + 0 > 0) }' \
	"$TMP/top_wall.txt" || fail "top --wall: less than the thread's wall time: $(head -8 "$TMP/top_wall.txt")"

# 4. agent -> server, an offcpu profile next to cpu
start_server
"$B/helpers/offcpu_work" sleep 6 20 5 > /dev/null &
work=$!
$SCORCH agent --server "$URL" --profile cpu,offcpu,wall -F 99 --interval 2s -d 4 --cache-dir "$TMP/tables" \
	2> "$TMP/agent.log" || fail "agent exited $?: $(tail -5 "$TMP/agent.log")"
kill $work 2>/dev/null
wait $work 2>/dev/null
types=$(get /label-values label=__type__)
echo "profile types: $types"
echo "$types" | grep -q '"offcpu"' || fail "no offcpu profile type at the server: $types"
echo "$types" | grep -q '"cpu"' || fail "no cpu profile type at the server: $types"
echo "$types" | grep -q '"wall"' || fail "no wall profile type at the server: $types"
r=$(get /render query='offcpu_work.offcpu{}' from=now-1h until=now format=json)
echo "$r" | grep -q '"units":"nanoseconds"' || fail "the offcpu series is not in nanoseconds: $(echo "$r" | head -c 300)"
get /render query='offcpu_work.offcpu{}' from=now-1h until=now format=folded > "$TMP/agent.folded"
n=$(ns_matching "$TMP/agent.folded" ';take_a_nap;.*\[off-cpu: sleep\]$')
all=$(ns_matching "$TMP/agent.folded" '^blocker;.*\[off-cpu: sleep\]$')
echo "agent: ${all} ns of sleep at the server, ${n} ns of it under take_a_nap"
# the helper sleeps 20 ms of every 25: of 4 s of profiling, at least 1.5 s. While the agent is
# behind (a loaded machine, tables built at start) some waits keep their time without their
# stack ([rate limited]): most of it still has its stack.
[ "$all" -ge 1500000000 ] || fail "too little offcpu sleep time at the server: $(head -3 "$TMP/agent.folded")"
[ "$n" -ge $((all / 2)) ] || fail "too little offcpu time under take_a_nap at the server: $(head -3 "$TMP/agent.folded")"
# wall: the sleep and the CPU time of the same thread, in nanoseconds
get /render query='offcpu_work.wall{}' from=now-1h until=now format=folded > "$TMP/wall.folded"
nw=$(ns_matching "$TMP/wall.folded" '^blocker;.*\[off-cpu: sleep\]$')
nb=$(ns_matching "$TMP/wall.folded" ';burn$')
echo "agent: wall ${nw} ns of sleep, ${nb} ns in burn"
[ "$nw" -ge 1500000000 ] && [ "$nb" -gt 0 ] || fail "the wall profile lacks the sleep or the CPU time: $(head -3 "$TMP/wall.folded")"
s=$(get /api/v1/series query='offcpu_work.offcpu{}' from=now-1h until=now unit=seconds)
echo "$s" | grep -q '"unit":"seconds"' || fail "/api/v1/series does not give the offcpu series in seconds: $(echo "$s" | head -c 300)"
stop_server
echo ok
