#!/bin/sh
# table_cache: unwind tables are built once per binary, not once per process, and survive the
# recorder with --cache-dir; a binary seen for the first time keeps its full depth from its
# first sample.
#   1. `record -- sh -c LOOP` runs a helper 200 times: every file (sh, the helper, libc, ld.so,
#      the vDSO) is built exactly once (table_builds == files, table_rebuilds == 0), and each
#      table is in the cache directory when scorch has exited.
#   2. The same again with the same --cache-dir: nothing is built, every table comes from disk.
#   3. One cache file corrupted: it is ignored (bad_files), that table alone is rebuilt.
#   5. (run before 4) `agent --unwind-memory 1`: the kernel's entry space has that size, a table
#      too big for it is refused and counted, and the agent carries on.
#   4. `record -a` while a new binary (a copy of the helper under a fresh name) runs a recursion
#      600 frames deep with 128-byte frames (75 KiB of stack): its first samples come as stack
#      snapshots (no table yet), deeper than one record, and every sample is whole.
. tests/integration/lib.inc
need_bpf
HELPER=$B/helpers/unwind_chain
[ -x "$HELPER" ] || fail "$HELPER is missing (make B=$B test-build)"

stat_of() { # FILE NAME: the value of NAME=... in scorch's --stats output
	tr ' ' '\n' < "$1" | awk -F= -v k="$2" '$1 == k { print $2; exit }'
}

CACHE=$TMP/cache
LOOP="i=0; while [ \$i -lt 200 ]; do $HELPER short 1; i=\$((i+1)); done"

# 1. 200 processes of the same binary
$SCORCH record -q --stats --cache-dir "$CACHE" -o "$TMP/1.folded" -- sh -c "$LOOP" 2> "$TMP/1.err" ||
	fail "record exited $?: $(tail -3 "$TMP/1.err")"
builds=$(stat_of "$TMP/1.err" table_builds)
files=$(stat_of "$TMP/1.err" files)
rebuilds=$(stat_of "$TMP/1.err" table_rebuilds)
reads=$(stat_of "$TMP/1.err" maps_reads)
echo "run 1: $reads process reads, $files files, $builds tables built, $rebuilds rebuilt"
[ -n "$builds" ] && [ -n "$files" ] || fail "no unwind counters in --stats: $(cat "$TMP/1.err")"
[ "$reads" -ge 200 ] || fail "the helper's processes were not read ($reads map reads)"
[ "$rebuilds" -eq 0 ] || fail "$rebuilds tables were built again"
[ "$builds" -eq "$files" ] || fail "$builds tables built for $files files"
[ "$files" -le 10 ] || fail "$files files for sh and one helper"
# (written by the cache's writer thread, all of them before scorch exits)
n=$(ls "$CACHE" | grep -c '\.tbl$')
[ "$n" -eq "$builds" ] || fail "$n files in the cache directory for $builds tables built"
[ "$(stat -c %a "$CACHE")" = 700 ] || fail "the cache directory is $(stat -c %a "$CACHE"), not 700"

# 2. a new recorder: nothing built, everything from disk
$SCORCH record -q --stats --cache-dir "$CACHE" -o "$TMP/2.folded" -- sh -c "$LOOP" 2> "$TMP/2.err" ||
	fail "record exited $?: $(tail -3 "$TMP/2.err")"
b2=$(stat_of "$TMP/2.err" table_builds)
hits=$(stat_of "$TMP/2.err" disk_hits)
echo "run 2: $b2 tables built, $hits from disk"
[ "$b2" -eq 0 ] || fail "$b2 tables built with every table on disk"
[ "$hits" -eq "$files" ] || fail "$hits tables from disk, expected $files"

# 3. a corrupt file is ignored and its table rebuilt (and written again)
f=$(ls -S "$CACHE"/*.tbl | head -1)
printf 'garbage' | dd of="$f" bs=1 seek=200 conv=notrunc 2> /dev/null
$SCORCH record -q --stats --cache-dir "$CACHE" -o "$TMP/3.folded" -- sh -c "$LOOP" 2> "$TMP/3.err" ||
	fail "record exited $?: $(tail -3 "$TMP/3.err")"
b3=$(stat_of "$TMP/3.err" table_builds)
bad=$(stat_of "$TMP/3.err" bad_files)
echo "run 3 (one file corrupted): $bad bad files, $b3 tables built"
[ "$bad" -eq 1 ] || fail "$bad bad cache files, expected 1"
[ "$b3" -eq 1 ] || fail "$b3 tables built, expected 1 (the corrupted one)"
grep -q 'AddressSanitizer\|runtime error\|Segmentation' "$TMP/3.err" && fail "crash: $(head "$TMP/3.err")"

# 5. the agent's kernel entry space is what --unwind-memory says (MB of 8-byte entries); a table
#    that does not fit in it (Node's, ~280k entries, against 1 MB = 131072) is refused and
#    counted (cap_hits), and the agent carries on; out-of-range sizes are refused
for bad in 0 1025 12x; do
	if $SCORCH agent --unwind-memory $bad --server http://127.0.0.1:9 -d 1 2> "$TMP/5.bad"; then
		fail "--unwind-memory $bad was accepted"
	fi
	grep -q "invalid --unwind-memory '$bad'" "$TMP/5.bad" || fail "--unwind-memory $bad: $(cat "$TMP/5.bad")"
done
NODE=$(command -v node || true)
if [ -n "$NODE" ]; then
	"$NODE" -e 'const t = Date.now(); let s = 0; while (Date.now() - t < 5000) s += Math.sqrt(s + 1);' &
	busy=$!
	kill_at_exit $busy
fi
$SCORCH agent --stats --no-cache-dir --unwind-memory 1 -F 99 -i 1s -d 4 \
	--server http://127.0.0.1:9 2> "$TMP/5.err" || fail "agent exited $?: $(tail -3 "$TMP/5.err")"
cap=$(grep '^unwind:' "$TMP/5.err" | tail -1 > "$TMP/5.last" && stat_of "$TMP/5.last" entries_cap)
used=$(stat_of "$TMP/5.last" entries_used)
hits=$(stat_of "$TMP/5.last" cap_hits)
echo "run 5: $used of $cap entries used, $hits tables refused"
[ "$cap" = 131072 ] || fail "entry space of $cap entries with --unwind-memory 1 (want 131072)"
[ "$used" -le "$cap" ] || fail "$used entries used of $cap"
if [ -n "$NODE" ]; then
	[ "$hits" -ge 1 ] || fail "Node's table fit in 131072 entries? $(cat "$TMP/5.last")"
else
	echo "run 5: no node here: the refusal of a table too big is not checked"
fi
grep -q 'AddressSanitizer\|runtime error\|Segmentation' "$TMP/5.err" && fail "crash: $(head "$TMP/5.err")"

# 4. a new binary, 600 frames deep from its first sample
# Its first samples usually come before its tables exist: snapshots whose deep part goes on in
# chunks. Whether one does depends on when the first sample lands against the reading of the
# new process; a run with every sample whole and no chained snapshot is right but does not
# exercise the chunks: one more helper, under another name, then. Two such runs fail.
attempt=0
while :; do
	attempt=$((attempt + 1))
	NAME=tcw$$-$attempt
	cp "$HELPER" "$TMP/$NAME"
	# The helper starts once the recording samples, and 1.5 s later: at its start the recorder sees
	# every process of the machine for the first time, and their stack snapshots crowd the ring
	# buffer until their tables are built (on a busy machine the chunks of the helper's snapshots
	# may then be dropped, checked below). The recording is stopped (SIGINT) once the helper is done.
	$SCORCH record -a -q --stats -F 499 -d 120 -o "$TMP/4.folded" 2> "$TMP/4.err" &
	rec=$!
	kill_at_exit $rec
	wait_for 60 "sampling by record -a" sampling $rec
	sleep 1.5
	"$TMP/$NAME" wide 600 1
	kill -INT $rec
	wait $rec || fail "record -a exited $?: $(tail -3 "$TMP/4.err")"
	awk -F';' -v name="$NAME" '$1 == name && /leaf_spin [0-9]+$/ {
		n = 0; bad = 0
		for (i = 1; i <= NF; i++) { if ($i == "recurse_wide") n++; if ($i ~ /unwind error|truncated/) bad = 1 }
		c = $NF; sub(/.* /, "", c)
		total += c; if (n == 600 && !bad) whole += c
	} END { print total + 0, whole + 0 }' "$TMP/4.folded" > "$TMP/4.count"
	read total whole < "$TMP/4.count"
	chained=$(stat_of "$TMP/4.err" snapshots_chained)
	echo "run 4: $whole of $total samples in the 600-deep leaf whole; $chained chained snapshots"
	unchained=$(stat_of "$TMP/4.err" bpf_snapshots_unchained)
	if { [ "$total" -lt 3 ] || [ "$whole" -ne "$total" ]; } && [ "${unchained:-0}" -gt 0 ]; then
		# By design the chunks give way to samples when the ring buffer is nearly full: the
		# reader could not keep up (an overloaded machine), so the deep first samples were cut
		# (they show as [unwind error]).
		echo "SKIP: the machine was too busy to check: $unchained snapshots could not send their stack chunks (ring buffer full); $whole of $total deep samples whole"
		exit 0
	fi
	[ "$total" -ge 3 ] || fail "only $total samples of the deep leaf; the helper's stacks: $(grep "^$NAME;" "$TMP/4.folded" |
		awk '{ print $NF, substr($0, length($0) - 120) }' | head -5)"
	if [ "$whole" -ne "$total" ]; then
		awk -F';' -v name="$NAME" '$1 == name && /leaf_spin [0-9]+$/ {
			n = 0; for (i = 1; i <= NF; i++) if ($i == "recurse_wide") n++
			if (n != 600) print n " x recurse_wide: " substr($0, 1, 160) " ... " substr($0, length($0) - 80)
		}' "$TMP/4.folded" | head -5
		grep -E '^(stats|unwind):' "$TMP/4.err"
		fail "$((total - whole)) samples of the deep leaf were not whole"
	fi
	[ "$chained" -ge 1 ] && break
	[ $attempt -ge 2 ] && fail "no snapshot went on in stack chunks ($attempt helpers, all samples whole)"
	echo "run 4: every sample whole without a snapshot (the tables came first): once more"
done
echo "ok"
