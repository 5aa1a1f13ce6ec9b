#!/bin/sh
# node_accuracy.sh: the Node.js (V8) section of docs/benchmarks.md.
#   1. accuracy matrix: tests/helpers/node/accuracy.js (a known split of the main thread's CPU
#      time) run with --perf-basic-prof --interpreted-frames-native-stack (what perf needs to
#      name JavaScript) and profiled on the same run by scorch (-p, no help from node) and by
#      `perf record -g` (frame pointers + node's perf map), and once more by scorch alone on a
#      plain `node` (production: no flags). The workload idles 1 s before its rounds (a server
#      up before its load). Medians over RUNS runs: worst share error vs the measured split
#      (points), % of the JavaScript samples after start-up complete to _start (and of node's
#      start-up samples: bootstrapping, loading the main module), hot lines
#      right, % of c_work's samples with the inlined mix above it, % of d_zlib's samples with
#      zlib's native frames above it, % of b_work's samples under its 10 recursive frames.
#   2. BPF cost of the V8 walker per sample with 50 JavaScript frames at 19 and 99 Hz
#      (v8_stats: walker time / samples that reached V8 code): one function's recursion and 50
#      distinct functions (not inlined: --max-inlined-bytecode-size=0), optimized and
#      interpreted (--no-opt --no-sparkplug).
#   3. the symbolization cache's hit rate (the accuracy run).
# Needs root, node and perf. Usage: [SCORCH=path] [HZ=499] sh bench/node_accuracy.sh [RUNS] [SECONDS]
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-6}
HZ=${HZ:-499}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
SCORCH=${SCORCH:-./scorch}
[ -x "$SCORCH" ] || { echo "build ./scorch first"; exit 1; }
command -v node > /dev/null || { echo "needs node"; exit 1; }
command -v perf > /dev/null || { echo "needs perf"; exit 1; }
WL=$PWD/tests/helpers/node/accuracy.js
CHECK="python3 tests/helpers/node/check_accuracy.py"

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
fig() { sed -n "s/.*[ ]$1=\([0-9.]*\).*/\1/p"; }

# perf script -> folded (root first)
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
        if sym.endswith(")") and " (" in sym:
            sym = sym[:sym.rindex(" (")]  # perf's " (/path/of/dso)"
        stack.append(sym)
flush()
for k, v in out.items():
    print("%s %d" % (k, v))
PY

: > "$tmp/s"; : > "$tmp/p"; : > "$tmp/plain"; : > "$tmp/stats"
for r in $(seq "$RUNS"); do
	# the same run, profiled by both (node in $tmp: with these flags it writes V8 logs to
	# its working directory)
	(cd "$tmp" && exec perf record -q -e cpu-clock -F $HZ -g -o "$tmp/perf.data" -- node \
		--perf-basic-prof --interpreted-frames-native-stack $WL "$SECS" "$tmp/t" 1000) \
		> /dev/null 2>&1 &
	perf_pid=$!
	node_pid=
	for i in $(seq 50); do
		node_pid=$(pgrep -P $perf_pid node | head -1)
		[ -n "$node_pid" ] && break
		sleep 0.02
	done
	if [ -n "$node_pid" ]; then
		"$SCORCH" record -F $HZ --lines -p "$node_pid" -o "$tmp/s.folded" > /dev/null 2>&1
	fi
	wait $perf_pid
	$CHECK "$tmp/s.folded" "$tmp/t" >> "$tmp/s"
	perf script -i "$tmp/perf.data" -F comm,ip,sym 2> /dev/null | python3 "$tmp/collapse.py" \
		> "$tmp/p.folded"
	rm -f "/tmp/perf-$node_pid.map" # after perf script: it names the JIT frames
	$CHECK "$tmp/p.folded" "$tmp/t" --perf >> "$tmp/p"
	# production: plain node, scorch only
	"$SCORCH" record --stats --lines -F $HZ -o "$tmp/o.folded" -- node $WL "$SECS" "$tmp/t2" 1000 \
		> /dev/null 2> "$tmp/log"
	grep '^v8:' "$tmp/log" >> "$tmp/stats"
	$CHECK "$tmp/o.folded" "$tmp/t2" >> "$tmp/plain"
done

echo "| profiler ($HZ Hz, ${SECS}s runs, median of $RUNS) | worst share error (pts) | JavaScript samples after start-up complete to _start | start-up samples complete | hot lines (a, b, mix, c, d) | mix inlined above c_work | zlib above d_zlib | 10 recursive frames under b_work | samples |"
echo "|---|---|---|---|---|---|---|---|---|"
for who in plain s p; do
	[ -s "$tmp/$who" ] || continue
	e=$(fig worst < "$tmp/$who" | median); c=$(fig complete < "$tmp/$who" | median)
	su=$(fig startup_complete < "$tmp/$who" | median)
	l=$(awk '{ n = 0; t = 0; for (i = 1; i <= NF; i++) if ($i ~ /^line_/) { split($i, kv, "[=/]");
		t++; if (kv[2] == kv[3]) n++ } print n "/" t }' "$tmp/$who" | sort | head -1)
	m=$(fig inlined_mix < "$tmp/$who" | median); z=$(fig zlib_above < "$tmp/$who" | median)
	d=$(fig deep10 < "$tmp/$who" | median); n=$(fig samples < "$tmp/$who" | median)
	case $who in
	plain) echo "| scorch, plain node | $e | $c% | $su% | $l | $m% | $z% | $d% | $n |" ;;
	s) echo "| scorch, same run as perf | $e | $c% | $su% | $l | $m% | $z% | $d% | $n |" ;;
	p) echo "| perf -g + --perf-basic-prof --interpreted-frames-native-stack | $e | - | - | $l (a function's first line only) | $m% | $z% | $d% | $n |" ;;
	esac
done

echo
echo "V8 walker, BPF time per sample with 50 JavaScript frames (median of $RUNS runs):"
echo "| stack | node mode | Hz | ns per sample | ns per V8 frame | V8 frames per sample |"
echo "|---|---|---|---|---|---|"
python3 - "$tmp/distinct.js" <<'PY'
import sys
src = ["function spin(x) { for (let i = 0; i < 100000; i++) x = (x * 31 + i) | 0; return x; }"]
for i in range(48):
    src.append("function f%d(x) { return %s(x) + %d; }" % (i, "f%d" % (i + 1) if i < 47 else "spin", i))
src.append("const end = Date.now() + Number(process.argv[2]) * 1000; let sink = 0;")
src.append("while (Date.now() < end) sink += f0(sink); // the module function + 48 + spin = 50")
open(sys.argv[1], "w").write("\n".join(src) + "\n")
PY
cat > "$tmp/deep.js" <<'JS'
function spin(x) { for (let i = 0; i < 100000; i++) x = (x * 31 + i) | 0; return x; }
function deep(n, x) { return n > 0 ? deep(n - 1, x) + 1 : spin(x); }
const end = Date.now() + Number(process.argv[2]) * 1000;
let sink = 0;
// the module function + 48 deep + spin = 50 JavaScript frames
while (Date.now() < end) sink += deep(47, sink);
JS
for stack in recursion distinct; do
for mode in optimized interpreted; do
	for hz in 19 99; do
		: > "$tmp/c"
		for r in $(seq "$RUNS"); do
			opt=; [ $mode = interpreted ] && opt="--no-opt --no-sparkplug"
			js=$tmp/deep.js
			if [ $stack = distinct ]; then
				js=$tmp/distinct.js
				[ $mode = optimized ] && opt="--max-inlined-bytecode-size=0"
			fi
			"$SCORCH" record --stats -F $hz -o "$tmp/d.folded" -- node $opt "$js" 6 \
				2>&1 | grep '^v8:' >> "$tmp/c"
		done
		awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		      if (v["bpf_samples"] > 0) printf "%.0f %.0f %.1f\n", v["bpf_walk_ns"] / v["bpf_samples"],
		      v["bpf_walk_ns"] / (v["bpf_frames"] ? v["bpf_frames"] : 1), v["bpf_frames"] / v["bpf_samples"] }' \
			"$tmp/c" | sort -n > "$tmp/c2"
		k=$(wc -l < "$tmp/c2"); mid=$(( (k + 1) / 2 ))
		set -- $(sed -n "${mid}p" "$tmp/c2")
		echo "| $stack | $mode | $hz | ${1:--} | ${2:--} | ${3:--} |"
	done
done
done

echo
echo "Symbolization cache (accuracy.js, plain node, median of $RUNS runs):"
awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      printf "%.2f %d %d %d %d\n", 100 * v["hits"] / (v["lookups"] ? v["lookups"] : 1), v["lookups"],
	v["reads"], v["read_errors"], v["moved"] }' "$tmp/stats" | sort -n > "$tmp/h"
k=$(wc -l < "$tmp/h"); mid=$(( (k + 1) / 2 ))
set -- $(sed -n "${mid}p" "$tmp/h")
echo "hit rate ${1:--}% of ${2:--} lookups; objects read ${3:--}, read errors ${4:--}, functions the GC moved found again ${5:--}"
