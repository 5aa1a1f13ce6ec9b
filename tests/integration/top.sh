#!/bin/sh
# scorch top: plain reports when not on a terminal, the busy function ranked first; on a
# (pseudo) terminal, keys sort and quit and names are cut to its width (top_keys.py).
. tests/integration/lib.inc
need_bpf

# top runs until it has printed three reports (however long it takes to start and however
# little CPU the workload gets), then is stopped with SIGINT.
"$B/helpers/fp_hot" 120 &
pid=$!
kill_at_exit $pid
$SCORCH top -F 499 -p $pid -i 1 -n 5 > "$TMP/top.txt" 2> "$TMP/top.err" &
top=$!
kill_at_exit $top
reports_in() { [ "$(grep -c '^scorch top - ' "$TMP/top.txt")" -ge 3 ]; }
wait_for 120 "three reports from top" reports_in
kill -INT $top
wait $top || fail "top exited $? after SIGINT: $(cat "$TMP/top.err")"
kill $pid 2>/dev/null; wait $pid 2>/dev/null
cat "$TMP/top.txt"
reports=$(grep -c '^scorch top - ' "$TMP/top.txt")
[ "$reports" -ge 3 ] || fail "expected a report per interval, got $reports"
# In each report, the first row is hot_function (about 80% of this process's samples).
first=$(awk '/SELF +TOTAL/ { getline; print $NF }' "$TMP/top.txt" | sort | uniq -c | sort -rn | head -1 | awk '{ print $2 }')
[ "$first" = hot_function ] || fail "top row is '$first', expected hot_function"
rows=$(awk '/SELF +TOTAL/ { n = 0; while ((getline line) > 0 && line != "") n++; print n; exit }' "$TMP/top.txt")
[ "$rows" -le 5 ] || fail "-n 5 showed $rows rows"
# On a terminal: keys sort and quit, lines fit its width, the terminal is restored.
if command -v python3 > /dev/null; then
	"$B/helpers/fp_hot" 120 &
	pid=$!
	kill_at_exit $pid
	python3 tests/integration/top_keys.py "$SCORCH" $pid || fail "top on a terminal"
	kill $pid 2>/dev/null; wait $pid 2>/dev/null
else
	echo "SKIP: the terminal part needs python3"
fi
$SCORCH top -p 4000000 2> "$TMP/e.err" && fail "unknown pid accepted"
grep -q "no process with PID 4000000" "$TMP/e.err" || fail "unclear error: $(cat "$TMP/e.err")"
echo ok
