#!/bin/sh
# under_load.sh: run tests next to an artificial CPU load, to catch tests whose verdict depends
# on how much CPU the machine gives them (a fixed sample count, a sleep used as a wait, a tight
# timeout). Starts LOOPS busy loops pinned to every CPU (at nice 0, like the tests), runs
# tests/run.sh ROUNDS times (TESTS=pattern limits it, as for run.sh), stops the loops and prints
# how often each test failed. Exit status 0 when every round passed.
#
# usage: sh tests/under_load.sh [-l LOOPS] [-r ROUNDS]   (defaults: 4 loops per CPU, 3 rounds)
# examples:
#   make test-build && sh tests/under_load.sh                       # everything, 3 times
#   TESTS=record_ sh tests/under_load.sh -l 8 -r 10                 # the record tests, harder
set -u
cd "$(dirname "$0")/.."
loops=4 rounds=3
while getopts l:r: o; do
	case $o in
	l) loops=$OPTARG ;;
	r) rounds=$OPTARG ;;
	*) echo "usage: sh tests/under_load.sh [-l LOOPS_PER_CPU] [-r ROUNDS]" >&2; exit 2 ;;
	esac
done
case "$loops$rounds" in *[!0-9]*) echo "under_load.sh: -l and -r take numbers" >&2; exit 2 ;; esac
command -v taskset >/dev/null 2>&1 || { echo "under_load.sh: taskset is missing (util-linux)" >&2; exit 1; }

busy=
trap 'for p in $busy; do kill $p 2>/dev/null; done' EXIT
trap 'exit 130' INT TERM
ncpu=$(nproc)
c=0
while [ $c -lt "$ncpu" ]; do
	i=0
	while [ $i -lt "$loops" ]; do
		taskset -c $c sh -c 'while :; do :; done' &
		busy="$busy $!"
		i=$((i + 1))
	done
	c=$((c + 1))
done
echo "load: $loops busy loops on each of $ncpu CPUs ($(echo $busy | wc -w) in all)"

out=$(mktemp -d /tmp/scorch-load.XXXXXX)
r=1 bad=0
while [ $r -le "$rounds" ]; do
	start=$(date +%s)
	sh tests/run.sh > "$out/round$r.txt" 2>&1 || bad=$((bad + 1))
	echo "round $r: $(tail -n 1 "$out/round$r.txt") in $(( $(date +%s) - start )) s (load $(cut -d' ' -f1 /proc/loadavg))"
	grep '^FAIL' "$out/round$r.txt" | sed 's/^/  /'
	r=$((r + 1))
done
echo
echo "failures per test over $rounds rounds:"
cat "$out"/round*.txt | awk '$1 == "FAIL" { n[$2]++ } END { for (t in n) printf "  %-40s %d\n", t, n[t] }' | sort
echo "(logs of every round: $out)"
[ $bad -eq 0 ]
