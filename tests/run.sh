#!/bin/sh
# run.sh: every test of scorch. Unit tests (ASan/UBSan builds), fuzz corpus replays, then the
# integration tests (tests/integration/*.sh; those needing root/BPF print SKIP when they can't
# run). Prints one line per test and a closing "N passed, N failed, N skipped" line.
# TESTS="pattern ..." limits the run to tests whose name contains one of the patterns.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
passed=0 failed=0 skipped=0
failures=""
log=$B/test-logs
mkdir -p $log

run_one() { # name, command...
	name=$1; shift
	if [ -n "${TESTS:-}" ]; then
		want=0
		for pat in $TESTS; do
			case "$name" in *"$pat"*) want=1 ;; esac
		done
		[ $want = 1 ] || return
	fi
	start=$(date +%s)
	mkdir -p "$(dirname "$log/$name.log")"
	"$@" > "$log/$name.log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		if grep -q "^SKIP" "$log/$name.log"; then
			skipped=$((skipped + 1))
			printf 'SKIP  %-40s %3ss  %s\n' "$name" "$secs" "$(grep -m1 '^SKIP' "$log/$name.log")"
		else
			passed=$((passed + 1))
			printf 'ok    %-40s %3ss\n' "$name" "$secs"
		fi
	else
		failed=$((failed + 1))
		failures="$failures $name"
		printf 'FAIL  %-40s %3ss (exit %d)\n' "$name" "$secs" "$rc"
		tail -n 40 "$log/$name.log" | sed 's/^/      | /'
	fi
	# Unit tests count their own skips; make them visible.
	if grep -q "^  SKIP" "$log/$name.log"; then
		grep "^  SKIP" "$log/$name.log" | sed 's/^/      /'
	fi
}

# No test asks the network for debug info: those that test debuginfod start their own server.
unset DEBUGINFOD_URLS
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

for t in $B/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "unit/$(basename "$t")" "$t"
done

for r in $B/replay/fuzz_*; do
	[ -x "$r" ] || continue
	n=$(basename "$r"); n=${n#fuzz_}
	run_one "fuzz-replay/$n" "$r" "tests/fuzz/corpus/$n"
done

for t in tests/integration/*.sh; do
	[ -f "$t" ] || continue
	run_one "integration/$(basename "$t" .sh)" sh "$t"
done

echo
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
