#!/bin/sh
# python_accuracy.sh: the CPython section of docs/benchmarks.md.
#   1. accuracy matrix: tests/helpers/python/accuracy.py (known CPU split) under every
#      installed CPython, profiled by scorch (and by austin, when installed, side by side);
#      the median over RUNS runs of: worst share error vs truth (points), % of samples whose
#      stack reaches <module>, hot lines right, % of c_zlib samples with native frames above,
#      and % of the samples taken while Python code runs (start-up included) that carry their
#      Python frames.
#   2. BPF cost of the Python walker per sample with 50 Python frames (py_stats walk time).
#   3. code-object cache hit rate of the symbolizer.
# Needs root. Usage: [SCORCH=path] sh bench/python_accuracy.sh [RUNS] [SECONDS]
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-4}
CHECK_PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
SCORCH=${SCORCH:-./scorch}
[ -x "$SCORCH" ] || { echo "build ./scorch first"; exit 1; }

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
fig() { sed -n "s/.*[ ]$1=\([0-9.]*\).*/\1/p"; }

echo "| CPython | scorch worst share error (pts) | scorch stacks to <module> | scorch hot lines | scorch native above c_zlib | scorch samples with their Python frames | austin worst share error | austin stacks to <module> | austin hot lines |"
echo "|---|---|---|---|---|---|---|---|---|"
for py in /root/.pyenv/versions/3.8.*/bin/python3.8 /root/.pyenv/versions/3.9.*/bin/python3.9 \
	  /root/.pyenv/versions/3.10.*/bin/python3.10 /root/.pyenv/versions/3.11.*/bin/python3.11 \
	  /root/.pyenv/versions/3.12.*/bin/python3.12 /root/.pyenv/versions/3.13.*/bin/python3.13 \
	  /usr/bin/python3.11; do
	[ -x "$py" ] || continue
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	[ "$py" = /usr/bin/python3.11 ] && ver="$ver (Debian)"
	: > "$tmp/s"; : > "$tmp/a"
	for r in $(seq "$RUNS"); do
		timeout 120 "$SCORCH" record -F 499 --lines -o "$tmp/o.folded" -- "$py" \
			tests/helpers/python/accuracy.py "$SECS" "$tmp/t" > /dev/null 2>&1 &&
			$CHECK_PY tests/helpers/python/check_accuracy.py "$tmp/o.folded" "$tmp/t" |
			grep FIGURES >> "$tmp/s"
		if command -v austin > /dev/null; then
			timeout 120 austin -i 2000 -o "$tmp/a.out" "$py" \
				tests/helpers/python/accuracy.py "$SECS" "$tmp/t" > /dev/null 2>&1
			$CHECK_PY tests/helpers/python/check_accuracy.py "$tmp/a.out" "$tmp/t" --austin |
				grep FIGURES >> "$tmp/a"
		fi
	done
	se=$(fig max_err < "$tmp/s" | median); sc=$(fig complete < "$tmp/s" | median)
	sl=$(sed -n 's/.*lines_ok=\([0-9]*\/[0-9]*\).*/\1/p' "$tmp/s" | sort | head -1)
	sn=$(fig native < "$tmp/s" | median)
	sv=$(fig coverage < "$tmp/s" | median)
	ae=$(fig max_err < "$tmp/a" | median); ac=$(fig complete < "$tmp/a" | median)
	al=$(sed -n 's/.*lines_ok=\([0-9]*\/[0-9]*\).*/\1/p' "$tmp/a" | sort | head -1)
	echo "| $ver | $se | $sc% | ${sl:--} | $sn% | $sv% | ${ae} | ${ac}% | ${al:--} |"
done

echo
echo "BPF walker cost per sample, 50 Python frames (median of $RUNS runs, ns):"
echo "| CPython | mode | ns per sample | ns per frame | frames per sample |"
echo "|---|---|---|---|---|"
cat > "$tmp/deep.py" <<'PY'
import sys, time
def spin(n):
    s = 0
    for i in range(n):
        s += i
    return s
def deep(n):
    if n > 1:
        return deep(n - 1)
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        spin(1000)
deep(48)  # + <module> + spin = 50 frames
PY
for py in /root/.pyenv/versions/3.9.*/bin/python3.9 /root/.pyenv/versions/3.11.*/bin/python3.11 \
	  /root/.pyenv/versions/3.12.*/bin/python3.12 /root/.pyenv/versions/3.13.*/bin/python3.13; do
	[ -x "$py" ] || continue
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	for mode in on only; do
		: > "$tmp/c"
		for r in $(seq "$RUNS"); do
			SCORCH_PYTHON=$mode timeout 60 "$SCORCH" record --stats -F 499 -o "$tmp/d.folded" \
				-- "$py" "$tmp/deep.py" 2 2>&1 | grep '^python:' >> "$tmp/c"
		done
		awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		      if (v["bpf_samples"] > 0) printf "%.0f %.0f %.1f\n", v["bpf_walk_ns"] / v["bpf_samples"],
		      v["bpf_walk_ns"] / (v["bpf_frames"] ? v["bpf_frames"] : 1), v["bpf_frames"] / v["bpf_samples"] }' \
			"$tmp/c" | sort -n > "$tmp/c2"
		n=$(wc -l < "$tmp/c2"); mid=$(( (n + 1) / 2 ))
		line=$(sed -n "${mid}p" "$tmp/c2")
		set -- $line
		label=$([ $mode = on ] && echo "interleaved" || echo "Python only")
		echo "| $ver | $label | ${1:--} | ${2:--} | ${3:--} |"
	done
done

echo
echo "Symbolization cache (accuracy.py, 3.12, ${SECS}s):"
py=$(ls /root/.pyenv/versions/3.12.*/bin/python3.12 2>/dev/null | head -1)
if [ -n "$py" ]; then
	"$SCORCH" record --stats -F 499 -o "$tmp/o.folded" -- "$py" tests/helpers/python/accuracy.py \
		"$SECS" 2>&1 | grep '^python:' | awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "lookups %d, hits %d (%.2f%%), code objects read %d, read errors %d\n",
		v["cache_lookups"], v["cache_hits"], 100 * v["cache_hits"] / (v["cache_lookups"] ? v["cache_lookups"] : 1),
		v["code_reads"], v["read_errors"] }'
fi
