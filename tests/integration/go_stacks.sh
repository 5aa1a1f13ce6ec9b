#!/bin/sh
# go_stacks.sh: whole and true Go stacks, with real BPF. A Go program of 24 goroutines
# (tests/helpers/go/stacks: time.Now in a hot loop, allocation and recursion, computing), built
# normal and stripped (-ldflags='-s -w'), profiled by scorch record, then by the agent (which
# unwinds a new process's first samples from stack snapshots, in user space):
#   - 99% of the samples end at a root of the Go runtime: runtime.goexit (every goroutine),
#     runtime.mstart / rt0_go (threads), or where a system stack part begins and the goroutine
#     is not followed (mcall, morestack, asmcgocall; systemstack in a stack snapshot), with no
#     [unwind error] / [unknown];
#   - the hot functions are named, under their goroutine's root;
#   - time.now's vDSO calls (made on the system stack) have whole stacks:
#     runtime.goexit;main.main.func1;main.workNow;time.Now;time.now;<vDSO>;
#   - what runs on the system stack through runtime.systemstack goes on in the goroutine that
#     called it, to runtime.goexit (from BPF: a snapshot does not hold the goroutine's g), and
#     so does runtime.morestack's copy of a goroutine's growing stack (newstack, copystack);
#   - C code called through cgo goes on in the goroutine that called it;
#   - no false root: a goroutine's function lies on runtime.goexit;
#   - no false caller: nothing above mcall or morestack (the words above them on the system
#     stack are stale: runtime.newproc once showed up as systemstack's caller), and newproc
#     above systemstack only with its own closure (runtime.newproc.func1) below.
. tests/integration/server.inc
need_bpf

command -v go > /dev/null 2>&1 || { echo "SKIP: no go toolchain"; exit 0; }
mkdir -p "$TMP/src"
cp tests/helpers/go/stacks/stacks.go tests/helpers/go/stacks/go.mod "$TMP/src/"
(cd "$TMP/src" && { [ -n "${HOME:-}" ] || export GOCACHE=/tmp/scorch-go-build-cache; } &&
	go build -o "$TMP/gostk" . && go build -ldflags='-s -w' -o "$TMP/gostk_s" .) \
	> "$TMP/go.log" 2>&1 || { echo "SKIP: go cannot build the workload: $(tail -3 "$TMP/go.log")"; exit 0; }

ROOTS='^[^;]*;(runtime\.(goexit|mstart|rt0_go|systemstack|mcall|morestack|asmcgocall|clone)|gogo)(;|$)'
GOFUNCS='(main\.main\.func[0-9]+|runtime\.(main|gcBgMarkWorker|bgsweep|bgscavenge|forcegchelper|runfinq))'
BAD='\[unwind error\]|\[unknown\]|\[unknown frame\]|\[truncated\]'
FOREIGN='\[(python|java|v8|ruby|php|perl|dotnet)[]:]|\([^();]*\.(py|js|mjs|rb|php|pl|pm|java)(:[0-9]+)?\)(;| |$)'

# check WHAT PROGRAM FOLDED [bpf]: the properties above for PROGRAM's samples with a user stack
# (not those taken while it exits, or before its exec, under the name of its parent), figures
# printed; bpf: systemstack's stacks must be whole.
check() {
	what=$1 f=$3.user
	grep "^$2;" "$3" | grep -v "^$2;[^;]*_\[k\]" > "$f"
	total=$(total_count "$f")
	[ "$total" -ge 200 ] || fail "$what: only $total samples"
	bad=$(count_matching "$f" "$BAD")
	rooted=$(count_matching "$f" "$ROOTS")
	now=$(count_matching "$f" ';time\.now(;|$)')
	whole=$(count_matching "$f" \
		'^[^;]*;runtime\.goexit;main\.main\.func1;main\.workNow;time\.Now;time\.now(;|$)')
	vdso=$(count_matching "$f" ';main\.workNow;time\.Now;time\.now;[^;]*(vdso|clock_gettime)')
	echo "$what: $total samples, $bad broken, $rooted at a root; time.now $now, whole $whole," \
		"into the vDSO $vdso"
	[ $((bad * 100)) -le "$total" ] ||
		fail "$what: $bad of $total samples broken: $(grep -E "$BAD" "$f" | sort -k2 -nr -t' ' | head -5)"
	[ $((rooted * 100)) -ge $((total * 99)) ] ||
		fail "$what: $rooted of $total samples at a root: $(grep -Ev "$ROOTS" "$f" | head -5)"
	# no runtime's frame in a Go process: a walker's marker or a frame named after a script
	foreign=$(count_matching "$f" "$FOREIGN")
	[ "$foreign" = 0 ] ||
		fail "$what: $foreign samples with another runtime's frames: $(grep -E "$FOREIGN" "$f" | head -3)"
	for fn in workNow workAlloc workCompute; do
		[ "$(count_matching "$f" "^[^;]*;runtime\\.goexit;main\\.main\\.func1;main\\.$fn(;|\$)")" -gt 0 ] ||
			fail "$what: no runtime.goexit;main.main.func1;main.$fn stack"
	done
	[ "$now" -ge 20 ] || fail "$what: only $now samples in time.now"
	[ "$vdso" -gt 0 ] || fail "$what: no time.now stack into the vDSO"
	[ $((whole * 100)) -ge $((now * 98)) ] ||
		fail "$what: $whole of $now time.now stacks whole: $(grep ';time\.now' "$f" | grep -v ';runtime\.goexit;main\.main\.func1;main\.workNow;time\.Now;time\.now' | head -5)"
	# the system stack's first frames where the goroutine is not followed: nothing above
	# (mcall: never; morestack: only the goroutine whose stack newstack is copying, under
	# its goexit: newstack, then copystack or the status changes around it)
	n=$(grep -E ';[^;]+;runtime\.(mcall|morestack)(;| )' "$f" |
		grep -Evc '^[^;]*;runtime\.goexit;.*;runtime\.morestack;runtime\.newstack(;| )' || true)
	[ "$n" = 0 ] || fail "$what: $n stacks with a caller above mcall/morestack:" \
		"$(grep -E ';[^;]+;runtime\.(mcall|morestack)(;| )' "$f" | grep -Ev '^[^;]*;runtime\.goexit;.*;runtime\.morestack;runtime\.newstack(;| )' | head -5)"
	# (a sample at systemstack's own call instruction ends there, whole: nothing to check)
	n=$(count_matching "$f" ';runtime\.newproc;runtime\.systemstack;')
	m=$(count_matching "$f" ';runtime\.newproc;runtime\.systemstack;runtime\.newproc\.func1(;|$)')
	[ "$n" = "$m" ] || fail "$what: runtime.newproc above systemstack without its closure:" \
		"$(grep ';runtime\.newproc;runtime\.systemstack' "$f" | grep -v 'systemstack;runtime\.newproc\.func1' | head -5)"
	# a goroutine's function lies on runtime.goexit, never under a false root (another
	# process's runtime.usleep, epollwait or newproc once named goexit + 1)
	n=$(grep -E "^[^;]*;[^[;][^;]*;$GOFUNCS(;| )" "$f" | grep -cv '^[^;]*;runtime\.goexit;' || true)
	[ "$n" = 0 ] || fail "$what: $n goroutine stacks with a false root:" \
		"$(grep -E "^[^;]*;[^[;][^;]*;$GOFUNCS(;| )" "$f" | grep -v '^[^;]*;runtime\.goexit;' | head -5)"
	sys=$(count_matching "$f" ';runtime\.systemstack;')
	whole=$(count_matching "$f" '^[^;]*;runtime\.goexit;.*;runtime\.systemstack;')
	echo "$what: $sys samples on the system stack through systemstack, $whole whole to goexit"
	cp=$(count_matching "$f" ';runtime\.morestack;runtime\.newstack;runtime\.copystack(;|$)')
	cpwhole=$(count_matching "$f" '^[^;]*;runtime\.goexit;.*;runtime\.morestack;runtime\.newstack;runtime\.copystack(;|$)')
	echo "$what: $cp samples growing a goroutine's stack (morestack, copystack), $cpwhole whole to goexit"
	if [ "${4:-}" = bpf ]; then
		[ "$sys" -gt 0 ] || fail "$what: no sample on the system stack through systemstack"
		# 95% whole, or 2 stacks fewer (a few dozen samples: one miss is 3%)
		[ $(((sys - whole) * 100)) -le $((sys * 5 + 200)) ] ||
			fail "$what: $whole of $sys systemstack stacks whole: $(grep ';runtime\.systemstack;' "$f" | grep -v ';runtime\.goexit;' | head -5)"
		[ "$cp" -gt 0 ] || fail "$what: no sample in morestack's copystack"
		[ $(((cp - cpwhole) * 100)) -le $((cp * 5 + 200)) ] ||
			fail "$what: $cpwhole of $cp copystack stacks whole: $(grep ';runtime\.copystack' "$f" | grep -v ';runtime\.goexit;' | head -5)"
	fi
}

for b in gostk gostk_s; do
	"$SCORCH" record -q -F 499 -o "$TMP/$b.folded" -- "$TMP/$b" 4 > "$TMP/$b.log" 2>&1 ||
		fail "record $b: $(tail -5 "$TMP/$b.log")"
	check "record $b" "$b" "$TMP/$b.folded" bpf
done

# cgo (tests/helpers/go/cgo): C code called on the system stack by runtime.asmcgocall goes on
# in the goroutine that called it.
mkdir -p "$TMP/cgo"
cp tests/helpers/go/cgo/cgo.go tests/helpers/go/cgo/go.mod "$TMP/cgo/"
if (cd "$TMP/cgo" && { [ -n "${HOME:-}" ] || export GOCACHE=/tmp/scorch-go-build-cache; } &&
	CGO_ENABLED=1 go build -ldflags='-s -w' -o "$TMP/gocgo" .) > "$TMP/cgo.log" 2>&1; then
	"$SCORCH" record -q -F 499 -o "$TMP/gocgo.folded" -- "$TMP/gocgo" 3 > "$TMP/gocgo.log" 2>&1 ||
		fail "record gocgo: $(tail -5 "$TMP/gocgo.log")"
	grep '^gocgo;' "$TMP/gocgo.folded" | grep -v '^gocgo;[^;]*_\[k\]' > "$TMP/gocgo.user"
	total=$(total_count "$TMP/gocgo.user")
	c=$(count_matching "$TMP/gocgo.user" ';main\.workC;')
	whole=$(count_matching "$TMP/gocgo.user" \
		'^gocgo;runtime\.goexit;main\.main\.func1;main\.workC;main\._Cfunc_spin_c;runtime\.cgocall;runtime\.asmcgocall;[^;]*spin_c')
	bad=$(count_matching "$TMP/gocgo.user" "$BAD")
	echo "record gocgo: $total samples, $bad broken; main.workC $c, whole into C $whole"
	[ "$c" -ge 50 ] || fail "gocgo: only $c samples in main.workC"
	[ $((whole * 100)) -ge $((c * 95)) ] ||
		fail "gocgo: $whole of $c cgo stacks whole: $(grep ';main\.workC' "$TMP/gocgo.user" | head -5)"
	[ $((bad * 100)) -le "$total" ] || fail "gocgo: $bad of $total samples broken"
else
	echo "skipped: cgo (the build failed: $(tail -1 "$TMP/cgo.log"))"
fi

# The agent: the processes start after it, so their first samples come as stack snapshots,
# unwound in user space with the same step and tables. Each runs an executable of its own (one
# whose processes are mostly sampled has its tables published at exec, before any sample).
A=gostk$$
start_server
$SCORCH -v agent --server "$URL" -F 199 --interval 2s --short-lived 0 --cache-dir "$TMP/tables" -d 300 --stats \
	2> "$TMP/agent.log" &
agent=$!
kill_at_exit $agent
wait_for 60 "'agent: profiling' from the agent" grep -q 'agent: profiling' "$TMP/agent.log"
# after its first push, the agent has read the machine's processes and waits for new ones
wait_for 60 "a first push from the agent" grep -q 'profiles sent' "$TMP/agent.log"
pids=
for i in 1 2 3 4 5 6; do
	mkdir "$TMP/run$i"
	cp "$TMP/gostk_s" "$TMP/run$i/$A"
	"$TMP/run$i/$A" 3 > /dev/null &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p" || fail "$A exited $?"
done
kill -TERM $agent
wait $agent || fail "agent exited $?: $(tail -5 "$TMP/agent.log")"
get /render query="$A.cpu{}" from=now-1h until=now format=folded | grep -v '^$' > "$TMP/agent.folded"
grep -o 'snapshots=[0-9]* snapshots_complete=[0-9]*' "$TMP/agent.log" | tail -1
check "agent $A" "$A" "$TMP/agent.folded"
stop_server
echo "PASS"
