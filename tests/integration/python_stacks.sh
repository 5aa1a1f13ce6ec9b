#!/bin/sh
# python_stacks.sh: CPython stacks end to end. Profiles tests/helpers/python/accuracy.py (a
# known CPU split: pure Python 3 frames deep, pure Python under 15 levels of recursion, and
# time inside zlib) under every installed CPython and checks the split per function, the hot
# lines, native frames above the Python frame that called them, the recursion depth, that
# stacks reach <module>, and that >= 99.5% of the samples taken while the interpreter runs Python
# code (start-up and imports included) carry their Python frames
# (tests/helpers/python/check_accuracy.py --coverage). Interpreters that are not installed are
# skipped loudly; all missing means SKIP.
set -u
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
	echo "SKIP python_stacks: needs root for BPF"
	exit 0
fi
CHECK_PY=""
for p in /usr/bin/python3 /root/.pyenv/versions/3.11.7/bin/python3; do
	[ -x "$p" ] && CHECK_PY=$p && break
done
[ -n "$CHECK_PY" ] || { echo "SKIP python_stacks: no python to run the checker"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ran=0 failed=0
for py in /root/.pyenv/versions/3.8.*/bin/python3.8 /root/.pyenv/versions/3.9.*/bin/python3.9 \
	  /root/.pyenv/versions/3.10.*/bin/python3.10 /root/.pyenv/versions/3.11.*/bin/python3.11 \
	  /root/.pyenv/versions/3.12.*/bin/python3.12 /root/.pyenv/versions/3.13.*/bin/python3.13 \
	  /usr/bin/python3.11; do
	if [ ! -x "$py" ]; then
		echo "skipped (not installed): $py"
		continue
	fi
	ran=$((ran + 1))
	# 2 s of the script's own CPU time (however long that takes on a busy machine): ~1000
	# samples at 499 Hz, so a share's sampling noise is about 1.5 points against the checker's
	# 8-point tolerance, and the truth is CPU time as well: one run is enough, load or not.
	rm -f "$tmp/out.folded" "$tmp/truth"
	if ! timeout 150 ./scorch record -F 499 --lines -o "$tmp/out.folded" -- \
		"$py" tests/helpers/python/accuracy.py 2 "$tmp/truth" > "$tmp/log" 2>&1; then
		echo "$py: scorch record failed:"; cat "$tmp/log"
		failed=$((failed + 1))
		continue
	fi
	res=$("$CHECK_PY" tests/helpers/python/check_accuracy.py "$tmp/out.folded" "$tmp/truth" \
		--coverage)
	echo "$py: $res"
	case "$res" in ok*) ;; *) failed=$((failed + 1)) ;; esac
done
if [ $ran = 0 ]; then
	echo "SKIP python_stacks: no CPython 3.8+ installed"
	exit 0
fi
echo "$ran interpreters, $failed failed"
[ $failed = 0 ]
