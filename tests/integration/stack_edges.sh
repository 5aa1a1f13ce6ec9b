# stack_edges.sh: native code the CFI tables do not describe (tests/helpers/stack_edges.c),
# profiled for real: a leaf assembly function without CFI keeps its callers (the leaf rule);
# a stack switch that leaves its link in rbp (like Rust's psm) is followed back to main; a
# makecontext() stack, which has no link back, ends in one [stack switch] frame. No stack of
# the helper may end in [unwind error].
. tests/integration/lib.inc
need_bpf
H=$B/helpers/stack_edges
[ -x "$H" ] || fail "helper $H not built (make B=$B test-build)"

# share NAME REGEX: percentage of the helper's samples (in $TMP/NAME.folded) whose stack
# matches REGEX (at least 90%), and none with [unwind error].
share() {
	grep '^stack_edges;' "$TMP/$1.folded" > "$TMP/$1.h" || true
	all=$(total_count "$TMP/$1.h")
	ok=$(count_matching "$TMP/$1.h" "$2")
	err=$(count_matching "$TMP/$1.h" '\[unwind error\]')
	[ "$all" -ge 20 ] || fail "$1: only $all samples of the helper"
	pct=$((ok * 100 / all))
	echo "$1: $ok of $all samples as expected ($pct%), $err with [unwind error]"
	[ $pct -ge 90 ] && [ "$err" = 0 ] ||
		{ sort -t' ' -k2 -rn "$TMP/$1.h" | head -5 | cut -c1-400; fail "$1: $pct% < 90% or errors"; }
}

for mode in leaf linked ucontext; do
	$SCORCH record -F 199 -o "$TMP/$mode.folded" -- $H $mode 1.5 > "$TMP/$mode.log" 2>&1 ||
		{ cat "$TMP/$mode.log"; fail "record $mode"; }
done
share leaf '^stack_edges;_start;__libc_start_main[^;]*;.*;main;leaf_caller;asm_leaf($|;)'
share linked '^stack_edges;_start;__libc_start_main[^;]*;.*;main;run_linked;asm_switch;on_new_stack;spin($|;)'
share ucontext '^stack_edges;\[stack switch\];(__start_context;)?ctx_entry;spin($|;)'
echo "stack edges ok"
