#!/bin/sh
# replay.sh: replay cases (docs/formats.md, "Replay cases").
#   - the corpus (tests/replay/, made by tests/replay/make-corpus.sh: C, Go, Rust and the
#     native frames of six interpreters) replays to the stacks it recorded, without root;
#   - a case captured from a live program (a signal frame, a libc callback; a 600-frame
#     recursion) replays to the same stack after the process has exited;
#   - scorch record --capture-dir keeps the samples it could not unwind whole as cases;
#   - a changed rule in a case's table, or a changed return address, makes --expect fail,
#     printing both stacks;
#   - a case of a newer format version, and a damaged one, are refused with a message.
. tests/integration/lib.inc

# the corpus, as an unprivileged user would (replay needs no root)
$SCORCH replay --expect -q tests/replay/ > "$TMP/corpus.out" 2> "$TMP/corpus.err" ||
	{ cat "$TMP/corpus.out" "$TMP/corpus.err"; fail "the corpus does not replay to its stacks"; }
n=$(find tests/replay -name '*.case' | wc -l)
grep -q "scorch: $n cases, 0 differ, 0 unreadable" "$TMP/corpus.err" ||
	fail "corpus summary: $(cat "$TMP/corpus.err")"
[ "$n" -ge 100 ] || fail "only $n cases in tests/replay"
echo "corpus: $n cases replayed"

if [ "$(id -u)" != 0 ]; then
	echo "skipped: capture (tracing another process needs root here)"
	echo "PASS"
	exit 0
fi
H=$B/helpers/unwind_chain
[ -x "$H" ] || fail "$H not built (make test-build)"

# capture, then the process is gone
"$H" chain 30 > /dev/null 2>&1 &
pid=$!
kill_at_exit $pid
sleep 0.5
$SCORCH capture -p "$pid" -n 3 -i 5ms -o "$TMP/live" -m "chain" > "$TMP/capture.out" 2>&1 ||
	{ cat "$TMP/capture.out"; fail "capture failed"; }
"$H" deep 600 30 > /dev/null 2>&1 &
deep=$!
kill_at_exit $deep
sleep 0.5
$SCORCH capture -p "$deep" -o "$TMP/deep" > "$TMP/capture2.out" 2>&1 ||
	{ cat "$TMP/capture2.out"; fail "capture of the deep stack failed"; }
kill -9 $pid $deep
wait $pid $deep 2> /dev/null
ls "$TMP"/live/*.case > /dev/null 2>&1 || fail "no case written"
$SCORCH replay "$TMP"/live/*.case > "$TMP/replay.out" || fail "replay failed"
grep -c ';main;level1;level2;' "$TMP/replay.out" | grep -qx 3 ||
	fail "not 3 stacks through main;level1;level2: $(cat "$TMP/replay.out")"
grep -q '^[^:]*: unwind_chain;_start;' "$TMP/replay.out" || fail "no stack from _start: $(head -3 "$TMP/replay.out")"
# what capture printed for each case is what replay prints
sed -n 's/^\([^:]*\): [0-9]* frames, [0-9]* bytes, \(.*\)$/\1: \2/p' "$TMP/capture.out" | sort > "$TMP/a"
sort "$TMP/replay.out" > "$TMP/b"
cmp -s "$TMP/a" "$TMP/b" || { diff "$TMP/a" "$TMP/b" | head; fail "replay differs from capture"; }
$SCORCH replay --expect "$TMP"/live/*.case "$TMP"/deep/*.case > /dev/null 2>&1 ||
	fail "--expect: the cases differ from what they recorded"
r=$($SCORCH replay "$TMP"/deep/*.case | head -1 | tr ';' '\n' | grep -cx recurse)
[ "$r" = 600 ] || fail "the deep case has $r recurse frames, not 600"
echo "capture: 3 + 1 cases replayed after the processes exited ($r frames of recursion)"

# a changed rule and a changed return address: --expect says so, with both stacks
c=$(ls "$TMP"/live/*.case | head -1)
python3 - "$c" "$TMP/rule.case" "$TMP/ra.case" <<'EOF'
import gzip, struct, sys
raw = gzip.decompress(open(sys.argv[1], 'rb').read())
def sections(b):
    at, out = 16, []
    while at < len(b):
        t, n = struct.unpack_from('<II', b, at)
        out.append((t, bytearray(b[at + 8:at + 8 + n])))
        at += 8 + n
    return out
def write(path, secs):
    b = raw[:16] + b''.join(struct.pack('<II', t, len(d)) + bytes(d) for t, d in secs)
    open(path, 'wb').write(gzip.compress(b))
secs = sections(raw)
# every CFA offset of the table, 8 more
rule = [(t, bytearray(d)) for t, d in secs]
for t, d in rule:
    if t == 5:
        for i in range(0, len(d), 12):
            kind = d[i + 10] & 15
            if kind in (1, 2):
                off = struct.unpack_from('<H', d, i + 8)[0]
                struct.pack_into('<H', d, i + 8, (off + 8) & 0xffff)
write(sys.argv[2], rule)
# the leaf's return address in memory, elsewhere
exp = [d for t, d in secs if t == 8][0]
ra = struct.unpack_from('<Q', exp, 16)[0]
changed = [(t, bytearray(d)) for t, d in secs]
for t, d in changed:
    if t == 3:
        for i in range(8, len(d) - 7, 8):
            if struct.unpack_from('<Q', d, i)[0] == ra:
                struct.pack_into('<Q', d, i, ra + 0x100000)
write(sys.argv[3], changed)
EOF
for m in rule ra; do
	$SCORCH replay --expect "$TMP/$m.case" > "$TMP/$m.out" 2>&1
	rc=$?
	[ $rc = 3 ] || fail "a changed $m: replay --expect exited $rc, not 3: $(cat "$TMP/$m.out")"
	grep -q 'DIFFERS' "$TMP/$m.out" && grep -q '  expected: unwind_chain;' "$TMP/$m.out" &&
		grep -q '  got: ' "$TMP/$m.out" || fail "a changed $m: no difference shown: $(cat "$TMP/$m.out")"
done
echo "a changed rule and a changed return address: --expect exits 3 and shows both stacks"

# --trace: one line per step, with the rule
$SCORCH replay --trace "$c" > "$TMP/trace.out" || fail "--trace failed"
grep -q '^step 0: pc=0x' "$TMP/trace.out" && grep -q 'rule: cfa=' "$TMP/trace.out" &&
	grep -q '^end: complete' "$TMP/trace.out" || fail "--trace: $(head -5 "$TMP/trace.out")"

# scorch record --capture-dir: samples it could not unwind whole become cases (needs BPF)
if [ -r /sys/kernel/btf/vmlinux ]; then
	$SCORCH record -q -F 499 --capture-dir "$TMP/rec" --capture-max 5 -o "$TMP/rec.folded" \
		-- "$B/helpers/stack_edges" ucontext 1 > "$TMP/rec.log" 2>&1 || fail "record: $(tail -3 "$TMP/rec.log")"
	grep -q 'scorch: 5 replay cases of stacks not unwound whole in' "$TMP/rec.log" ||
		fail "record --capture-dir: $(tail -3 "$TMP/rec.log")"
	$SCORCH replay --expect -q "$TMP/rec" > /dev/null 2>&1 || fail "the recorded cases do not replay"
	$SCORCH replay "$TMP/rec" | grep -c 'stack_edges;\[stack switch\];__start_context;ctx_entry;spin$' |
		grep -qx 5 || fail "recorded cases: $($SCORCH replay "$TMP/rec" | head -3)"
	echo "record --capture-dir: 5 cases of [stack switch] stacks"
else
	echo "skipped: record --capture-dir (no BTF)"
fi

# refusals: a newer version, a damaged file, a missing one
$SCORCH replay tests/fuzz/corpus/case/future-version.bin > "$TMP/v.out" 2>&1
[ $? = 1 ] && grep -q 'version 2 is newer than this scorch reads' "$TMP/v.out" ||
	fail "a newer version: $(cat "$TMP/v.out")"
head -c 300 "$c" > "$TMP/cut.case"
$SCORCH replay "$TMP/cut.case" > "$TMP/cut.out" 2>&1
[ $? = 1 ] && grep -q 'cut.case: ' "$TMP/cut.out" || fail "a damaged case: $(cat "$TMP/cut.out")"
$SCORCH capture -p 999999999 -o "$TMP/none" > "$TMP/none.out" 2>&1 && fail "capture of no process succeeded"
grep -q 'bad pid\|process 999999999' "$TMP/none.out" || fail "capture of no process: $(cat "$TMP/none.out")"
echo "PASS"
