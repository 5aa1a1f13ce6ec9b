# native_unwind.sh: stacks of a program built without frame pointers (tests/helpers/
# unwind_chain.c), profiled for real, must be whole: a chain through a libc callback (qsort)
# and a signal handler, a 500-frame recursion, a library loaded with dlopen(), and processes
# that live 100 ms.
. tests/integration/lib.inc
need_bpf
H=$B/helpers/unwind_chain
[ -x "$H" ] || fail "helper $H not built (make B=$B test-build)"

# share NAME FILE REGEX: percentage of the helper's samples whose stack matches REGEX.
share() {
	grep '^unwind_chain;' "$2" > "$TMP/$1.h" || true
	all=$(total_count "$TMP/$1.h")
	ok=$(count_matching "$TMP/$1.h" "$3")
	[ "$all" -ge 20 ] || fail "$1: only $all samples of the helper"
	pct=$((ok * 100 / all))
	echo "$1: $ok of $all samples complete ($pct%)"
	[ $pct -ge 90 ] || { sort -t' ' -k2 -rn "$TMP/$1.h" | head -5 | cut -c1-400; fail "$1: $pct% < 90%"; }
}

$SCORCH record -F 199 -o "$TMP/chain.folded" -- $H chain 1.5 || fail "record chain"
share chain "$TMP/chain.folded" \
	'^unwind_chain;_start;__libc_start_main[^;]*;.*;main;level1;level2;qsort[^;]*;.*;cmp;.*;on_signal;leaf_spin($|;)'

$SCORCH record -F 199 -o "$TMP/deep.folded" -- $H deep 500 1.5 || fail "record deep"
# exactly 500 recursive frames between deep_start and the leaf
grep '^unwind_chain;' "$TMP/deep.folded" | awk '{ c = $NF; line = $0; n = gsub(/;recurse/, "", line);
	if ($0 ~ /^unwind_chain;_start;.*;main;deep_start;recurse;/ && $0 ~ /;recurse;leaf_spin/ && n == 500) ok += c; all += c }
	END { printf "deep: %d of %d samples with 500 frames\n", ok, all; exit !(all >= 20 && ok * 100 >= all * 90) }' ||
	fail "deep recursion not whole"

$SCORCH record -F 199 -o "$TMP/dlopen.folded" -- $H dlopen 1.5 || fail "record dlopen"
share dlopen "$TMP/dlopen.folded" '^unwind_chain;_start;__libc_start_main[^;]*;.*;main;run_dlopen;sqlite3_exec;'

$SCORCH record -F 199 -o "$TMP/short.folded" -- sh -c "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do $H short 100; done" ||
	fail "record short"
share short "$TMP/short.folded" '^unwind_chain;_start;__libc_start_main[^;]*;.*;main;short_a;short_b;leaf_spin($|;)'
echo "native unwinding ok"
