#!/bin/sh
# java_accuracy.sh: the Java (HotSpot) section of docs/benchmarks.md.
#   1. accuracy matrix: tests/helpers/java/Accuracy.java (three threads with a known split of
#      CPU time) profiled at HZ (default 499: the share error of a few hundred samples is
#      mostly sampling noise) by scorch (no JVM flags) and by perf with a perf map
#      (-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit,
#      `perf record -g`), medians over RUNS runs: worst share error vs the measured split,
#      % of the workload's samples complete to the thread's root, hot lines right, % of the
#      inlined method's samples with its caller right below, % of zlib's samples under the JNI
#      frame.
#   2. BPF cost of the HotSpot walker per sample with 50 Java frames at 19 and 99 Hz
#      (hs_stats), interpreted (-Xint), compiled without inlining (-XX:-Inline: 50 physical
#      frames), and compiled as the JVM likes.
#   3. the symbolization cache's hit rate (the accuracy run).
#   4. agent RSS while a busy JVM runs (whole machine, 19 Hz, pushing to a local server).
# Needs root, a JDK (java, javac) and perf.
# Usage: [SCORCH=path] [HZ=499] sh bench/java_accuracy.sh [RUNS] [SECONDS]
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-8}
HZ=${HZ:-499}
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
SCORCH=${SCORCH:-./scorch}
[ -x "$SCORCH" ] || { echo "build ./scorch first"; exit 1; }
command -v javac > /dev/null || { echo "needs a JDK (javac)"; exit 1; }
javac -d "$tmp/classes" tests/helpers/java/Accuracy.java || exit 1
SRC=tests/helpers/java/Accuracy.java

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
fig() { sed -n "s/.*[ ]$1=\([0-9.]*\).*/\1/p"; }

# perf script -> folded (root first), JIT frames named from the perf map
cat > "$tmp/collapse.py" <<'PY'
import sys
stack, comm, out = [], None, {}
def flush():
    if comm is not None and stack:
        k = ";".join([comm] + stack[::-1])
        out[k] = out.get(k, 0) + 1
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush(); stack, comm = [], None
    elif not line[0].isspace():
        comm = line.split()[0]
    else:
        parts = line.strip().split(None, 1)
        sym = parts[1] if len(parts) > 1 else "[unknown]"
        stack.append(sym.split(" (")[0] if not sym.startswith("[unknown]") else "[unknown]")
flush()
for k, v in out.items():
    print("%s %d" % (k, v))
PY

echo "| profiler ($HZ Hz, ${SECS}s runs) | worst share error (pts) | complete to the thread's root | hot lines | inlined frame above its caller | zlib under the JNI frame | samples |"
echo "|---|---|---|---|---|---|---|"
: > "$tmp/s"; : > "$tmp/p"; : > "$tmp/stats"
for r in $(seq "$RUNS"); do
	timeout 120 "$SCORCH" record --lines --stats -F $HZ -o "$tmp/o.folded" -- java -cp "$tmp/classes" \
		Accuracy "$SECS" "$tmp/t" "$SRC" > /dev/null 2> "$tmp/log" &&
		python3 tests/helpers/java/check_accuracy.py "$tmp/o.folded" "$tmp/t" | grep FIGURES >> "$tmp/s"
	grep '^hotspot:' "$tmp/log" >> "$tmp/stats"
	if command -v perf > /dev/null; then
		touch "$tmp/mark"
		timeout 120 perf record -q -e cpu-clock -F $HZ -g -o "$tmp/perf.data" -- java -XX:+PreserveFramePointer \
			-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$tmp/classes" Accuracy "$SECS" \
			"$tmp/t" "$SRC" > /dev/null 2>&1
		perf script -i "$tmp/perf.data" -F comm,ip,sym 2> /dev/null | python3 "$tmp/collapse.py" \
			> "$tmp/p.folded"
		python3 tests/helpers/java/check_accuracy.py "$tmp/p.folded" "$tmp/t" --perf-map |
			grep FIGURES >> "$tmp/p"
		# the perf map this run's JVM left behind
		find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$tmp/mark" -exec grep -l 'Accuracy' {} + |
			xargs -r rm -f
	fi
done
for who in s p; do
	[ -s "$tmp/$who" ] || continue
	e=$(fig max_err < "$tmp/$who" | median); c=$(fig complete < "$tmp/$who" | median)
	l=$(sed -n 's/.*lines_ok=\([0-9]*\/[0-9]*\).*/\1/p' "$tmp/$who" | sort | head -1)
	i=$(fig inlined < "$tmp/$who" | median); j=$(fig jni < "$tmp/$who" | median)
	n=$(fig samples < "$tmp/$who" | median)
	if [ $who = s ]; then
		echo "| scorch | $e | $c% | $l | $i% | $j% | $n |"
	else
		echo "| perf + -XX:+PreserveFramePointer + perf map | $e | $c% | - (no lines) | - (no inlined frames) | - | $n |"
	fi
done

echo
echo "HotSpot walker, BPF time per sample with 50 Java frames (median of $RUNS runs):"
echo "| JVM mode | Hz | ns per sample | ns per Java frame | Java frames per sample |"
echo "|---|---|---|---|---|"
cat > "$tmp/Deep.java" <<'JAVA'
public class Deep {
    static volatile long sink;
    static long spin(long x) { for (int i = 0; i < 100000; i++) x = x * 31 + i; return x; }
    static long deep(int n, long x) { return n > 0 ? deep(n - 1, x) + 1 : spin(x); }
    public static void main(String[] a) {
        long end = System.nanoTime() + (long) (Double.parseDouble(a[0]) * 1e9);
        // main + 48 deep + spin = 50 Java frames
        while (System.nanoTime() < end) sink += deep(47, sink);
    }
}
JAVA
javac -d "$tmp/d" "$tmp/Deep.java"
for mode in -Xint -XX:-Inline default; do
	for hz in 19 99; do
		: > "$tmp/c"
		for r in $(seq "$RUNS"); do
			opt=$mode; [ "$mode" = default ] && opt=-XX:+UseSerialGC
			timeout 60 "$SCORCH" record --stats -F $hz -o "$tmp/d.folded" -- java $opt -cp "$tmp/d" \
				Deep 6 2>&1 | grep '^hotspot:' >> "$tmp/c"
		done
		awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		      f = v["bpf_interp"] + v["bpf_jit"] + v["bpf_stub"]
		      if (v["bpf_samples"] > 0) printf "%.0f %.0f %.1f\n", v["bpf_walk_ns"] / v["bpf_samples"],
		      v["bpf_walk_ns"] / (f ? f : 1), f / v["bpf_samples"] }' "$tmp/c" | sort -n > "$tmp/c2"
		n=$(wc -l < "$tmp/c2"); mid=$(( (n + 1) / 2 ))
		set -- $(sed -n "${mid}p" "$tmp/c2")
		echo "| $mode | $hz | ${1:--} | ${2:--} | ${3:--} |"
	done
done

echo
echo "Symbolization cache (the accuracy runs, summed):"
awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] += kv[2] } }
     END { printf "lookups %d, hits %d (%.2f%%), reads %d, read errors %d, stale %d\n",
	   v["cache_lookups"], v["cache_hits"], 100 * v["cache_hits"] / (v["cache_lookups"] ? v["cache_lookups"] : 1),
	   v["cache_reads"], v["read_errors"], v["stale"] }' "$tmp/stats"

echo
echo "Agent RSS with a busy JVM (whole machine, 19 Hz, 2 s pushes, 20 s):"
"$SCORCH" server --listen 127.0.0.1:0 --port-file "$tmp/port" --data "$tmp/data" 2> /dev/null &
srv=$!
i=0; while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
java -cp "$tmp/classes" Accuracy 22 > /dev/null 2>&1 &
jvm=$!
"$SCORCH" agent --server "http://127.0.0.1:$(cat "$tmp/port")" -F 19 --interval 2s -d 20 2> "$tmp/agent.log" &
agent=$!
peak=0
while kill -0 $agent 2> /dev/null; do
	rss=$(awk '/^VmRSS/ {print $2}' /proc/$agent/status 2> /dev/null)
	[ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
	sleep 0.5
done
hwm=$peak
wait $jvm 2> /dev/null
echo "agent peak RSS $((hwm / 1024)) MB (sampled every 0.5 s)"
kill $srv 2> /dev/null; wait $srv 2> /dev/null; srv=
