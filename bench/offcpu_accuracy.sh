#!/bin/sh
# offcpu_accuracy.sh: how close `scorch record --wall` comes to a program's own measure of the
# time it waits, by kind of wait and sampling rate.
#
# tests/helpers/offcpu_work.c runs a thread that burns BURN_MS of CPU, then waits about
# BLOCK_MS (a pipe read fed by another thread, a futex another thread wakes, a nanosleep),
# again and again for SECONDS, and measures the time inside its waits itself. For each kind
# and rate (RATES: HZ:SECONDS pairs, default 99 Hz for 3 s, record's default rate, and 19 Hz
# for 10 s, the agent's rate and push interval), ROUNDS recordings; per recording:
#   - the waiting share: the thread's wall-profile time under the waiting function over all
#     of its time in work_loop(), against the program's own blocked / wall;
#   - the wall sum: the thread's whole wall profile over its measured wall time.
# Prints a markdown table: medians and the worst difference of the rounds. Off-CPU waits
# shorter than the period (1/HZ) are sampled, so the error shrinks with the rate and the time,
# as for CPU samples (docs/recording.md, "Estimator and its bias").
#
# usage: sudo [RATES="99:3 19:10"] sh bench/offcpu_accuracy.sh [ROUNDS=3] [BLOCK_MS=6] [BURN_MS=4]
set -eu
cd "$(dirname "$0")/.."
RATES=${RATES:-99:3 19:10}
ROUNDS=${1:-3}
BLOCK=${2:-6}
BURN=${3:-4}
B=${B:-build}
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "error: needs root" >&2; exit 1; }
if [ "$SCORCH" = ./scorch ]; then make -s B="$B" scorch "$B/helpers/offcpu_work"; else make -s B="$B" "$B/helpers/offcpu_work"; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo
echo "offcpu_work: waits of ${BLOCK} ms after ${BURN} ms of CPU, $ROUNDS recordings each, $(nproc) CPUs"
echo
echo "| wait | -F | seconds | waiting share, own measure | waiting share, profile | difference (worst) | wall sum (worst) |"
echo "|---|---|---|---|---|---|---|"
for kind in pipe futex sleep; do
	case $kind in pipe) fn=wait_for_data ;; futex) fn=wait_for_lock ;; sleep) fn=take_a_nap ;; esac
	for spec in $RATES; do
		hz=${spec%%:*} secs=${spec#*:}
		: > "$TMP/r"
		for r in $(seq "$ROUNDS"); do
			"$SCORCH" record --wall -F "$hz" -q -o "$TMP/w.folded" -- \
				"$B/helpers/offcpu_work" $kind "$secs" "$BLOCK" "$BURN" > "$TMP/out" 2> "$TMP/err" ||
				{ cat "$TMP/err" >&2; exit 1; }
			awk -v fn="$fn" -v out="$TMP/out" '
			BEGIN { getline line < out; n = split(line, kv, /[ =]/); for (i = 1; i < n; i += 2) m[kv[i]] = kv[i + 1] }
			{ v = $NF; s = $0; sub(/ [0-9]+$/, "", s)
			  if (s !~ /^blocker;/ || s !~ /;work_loop;/) next
			  tot += v; if (index(s, ";" fn ";")) blk += v }
			END { own = 100 * m["blocked_ns"] / m["wall_ns"]; got = 100 * blk / tot
			      printf "%.2f %.2f %.2f %.2f\n", own, got, got - own, 100 * tot / m["wall_ns"] }' \
				"$TMP/w.folded" >> "$TMP/r"
		done
		own=$(awk '{ print $1 }' "$TMP/r" | median)
		got=$(awk '{ print $2 }' "$TMP/r" | median)
		diff=$(awk '{ print $3 }' "$TMP/r" | median)
		worst=$(awk '{ d = $3 < 0 ? -$3 : $3; if (d > w) { w = d; s = $3 } } END { printf "%+.1f", s }' "$TMP/r")
		sum=$(awk '{ print $4 }' "$TMP/r" | median)
		wsum=$(awk '{ d = $4 - 100; d = d < 0 ? -d : d; if (d >= w) { w = d; s = $4 } } END { printf "%.1f", s }' "$TMP/r")
		printf "| %s | %d | %s | %.1f%% | %.1f%% | %+.1f points (%s) | %.1f%% (%s%%) |\n" \
			$kind "$hz" "$secs" "$own" "$got" "$diff" "$worst" "$sum" "$wsum"
	done
done
