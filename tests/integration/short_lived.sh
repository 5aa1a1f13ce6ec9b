#!/bin/sh
# short_lived.sh: the frames of short-lived interpreters are named. A Perl, a Ruby and a Python
# program (tests/helpers/short_lived/parent.*) each start 30 children one after the other: new
# interpreters that run 15 ms of CPU in their file-level code, 25 ms in a named sub, method or
# function, then 10 ms in another one, and exit. Recorded at 499 Hz, >= 98% of the children's
# samples that carry frames of their runtime have no marker of it ([perl: unknown sub],
# [ruby: unknown iseq], [python: unknown code], ...), and both functions and the file-level code
# are among them (tests/helpers/short_lived/check_names.py). Before the reader was woken by the
# samples of young runtime processes (UNW_PID_EAGER) and the name caches kept an entry per
# identity of an address, 8-10% of the Perl and Ruby samples and 25% of the Python ones had
# markers: the last function is first seen in the process's last 10 ms.
set -u
cd "$(dirname "$0")/../.."
. tests/integration/lib.inc
need_bpf
ran=0
# check RUNTIME INTERPRETER EXT FUNCTIONS
check() {
	ok=0
	for try in 1 2; do
		rm -f "$TMP/$1.folded"
		timeout 120 $SCORCH record -F 499 -o "$TMP/$1.folded" -- \
			"$2" "tests/helpers/short_lived/parent.$3" 30 > "$TMP/log" 2>&1 ||
			{ cat "$TMP/log"; fail "scorch record of parent.$3 failed"; }
		res=$(python3 tests/helpers/short_lived/check_names.py "$TMP/$1.folded" "$1" \
			"child.$3" "$4") && ok=1
		echo "try $try: $res"
		[ $ok = 1 ] && break
	done
	[ $ok = 1 ] || fail "$1: the short-lived children's frames are not named"
	ran=$((ran + 1))
}
PERL=$(command -v perl || true)
RUBY=$(command -v ruby || true)
PY=$(command -v python3 || true)
[ -n "$PERL" ] && check perl "$PERL" pl main::short_lived_work,main::wind_down
[ -n "$RUBY" ] && check ruby "$RUBY" rb ShortLived#work,ShortLived#wind_down
[ -n "$PY" ] && check python "$PY" py short_lived_work,wind_down
[ $ran -gt 0 ] || { echo "SKIP: none of perl, ruby, python3 is installed"; exit 0; }
echo "ok: short-lived children named ($ran runtimes)"
