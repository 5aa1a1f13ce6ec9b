#!/bin/sh
# jfr_accuracy.sh: how close the JFR of a JDK 17 recording (read by scorch) comes to a workload's
# own measure of where its time goes. tests/helpers/java/JfrWork.java: two threads doing 70% of
# their work in hotA and 30% in hotB (the same loop), each measuring the CPU time of both; JFR
# samples every 1 ms until the recording holds MIN worker samples. Prints one line per run and
# the mean and largest difference; docs/benchmarks.md ("JFR") has the latest figures.
#
#   sh bench/jfr_accuracy.sh            (env: RUNS=5, MIN=3000)
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
MIN=${MIN:-3000}
SCORCH=${SCORCH:-./scorch}
TMP=$(mktemp -d /tmp/scorch-jfr-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT INT TERM

mkdir -p $TMP/classes
javac -d $TMP/classes tests/helpers/java/JfrWork.java
echo "JfrWork 2 threads, 70/30 split, JFR period 1 ms, >= $MIN worker samples per run; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%4s %10s %8s %12s %12s %12s %10s\n' run samples secs "own hotA" "JFR hotA" "diff pts" "wall hotA"
r=1
: > $TMP/diffs
while [ $r -le $RUNS ]; do
	t0=$(date +%s.%N)
	java -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,JfrWork::* \
		-XX:StartFlightRecording=filename=$TMP/rec.jfr,settings=$PWD/tests/helpers/java/scorch-test.jfc \
		-cp $TMP/classes JfrWork 2000 2 $MIN > $TMP/out 2>/dev/null
	t1=$(date +%s.%N)
	own=$(sed -n 's/^split hotA=\([0-9.]*\) .*/\1/p' $TMP/out)
	wall=$(sed -n 's/^wall hotA=\([0-9.]*\) .*/\1/p' $TMP/out)
	"$SCORCH" convert $TMP/rec.jfr $TMP/cpu.folded 2>/dev/null
	awk -v own=$own -v wall=$wall -v r=$r -v secs=$(echo "$t1 - $t0" | bc) '
		/^worker-/ { n = $NF; t += n; if ($0 ~ /;JfrWork.hotA;/) a += n; else if ($0 ~ /;JfrWork.hotB;/) b += n }
		END { s = a / (a + b); printf "%4d %10d %8.1f %12.4f %12.4f %+12.2f %10.4f\n", r, t, secs, own, s, 100 * (s - own), wall }' \
		$TMP/cpu.folded | tee -a $TMP/diffs
	r=$((r + 1))
done
awk '{ d = $6 < 0 ? -$6 : $6; s += d; if (d > m) m = d } END { printf "mean |diff| %.2f points, largest %.2f points\n", s / NR, m }' $TMP/diffs
