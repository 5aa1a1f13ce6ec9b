#!/bin/sh
# scorch diff on recorded runs of a program built twice (tests/helpers/ci_work.c; the second
# build's checksum() does twice the work): the regression is found and named with 1 and with
# 3 runs per side (exit 3), runs of one build give no alarm (exit 0), and bad inputs get clear
# errors.
. tests/integration/lib.inc
need_bpf

BASE=$B/helpers/ci_work
SLOW=$B/helpers/ci_slow/ci_work
[ -x "$BASE" ] && [ -x "$SLOW" ] || fail "no ci_work builds (make test-build)"

# Short runs at a high rate: ~0.5 s of CPU each, ~500 samples (docs/benchmarks.md, "CI
# regression detection": at this size the regression is found in every pair, no false alarm).
mkdir -p $TMP/base $TMP/slow
for i in 1 2 3 4; do
	$SCORCH record -q -F 999 -o $TMP/base/run$i.pb.gz -- "$BASE" 1 || fail "record base $i: $?"
done
for i in 1 2 3; do
	$SCORCH record -q -F 999 -o $TMP/slow/run$i.pb.gz -- "$SLOW" 1 || fail "record slow $i: $?"
done

# 1. One run per side: found, named first, exit 3.
$SCORCH diff $TMP/base/run1.pb.gz $TMP/slow/run1.pb.gz > $TMP/d1.txt 2>&1
rc=$?
cat $TMP/d1.txt | head -12
[ $rc -eq 3 ] || fail "1 run per side: exit $rc, expected 3"
grep -q '^REGRESSION: 1 function slower' $TMP/d1.txt || fail "verdict line: $(head -1 $TMP/d1.txt)"
first=$(awk '/^function /{getline; print $1; exit}' $TMP/d1.txt)
[ "$first" = checksum ] || fail "first row is '$first', expected checksum"

# 2. Three runs per side (a directory and a comma list): found with the moderated t-test.
$SCORCH diff -f json $TMP/base/run1.pb.gz,$TMP/base/run2.pb.gz,$TMP/base/run3.pb.gz $TMP/slow > $TMP/d3.json
rc=$?
[ $rc -eq 3 ] || fail "3 runs per side: exit $rc, expected 3"
grep -q '"runs":{"base":3,"new":3}' $TMP/d3.json || fail "runs: $(head -c 200 $TMP/d3.json)"
grep -q '"test":"moderated-t"' $TMP/d3.json || fail "test: $(head -c 300 $TMP/d3.json)"
grep -q '"functions":\[{"name":"checksum","verdict":"regression"' $TMP/d3.json ||
	fail "checksum not first: $(grep -o '"functions":\[{"name":"[^"]*","verdict":"[^"]*"' $TMP/d3.json)"

# 3. The same build on both sides: no alarm, with 1 and with 2 runs per side.
$SCORCH diff $TMP/base/run1.pb.gz $TMP/base/run2.pb.gz > $TMP/s1.txt 2>&1
rc=$?
[ $rc -eq 0 ] || { cat $TMP/s1.txt; fail "same build, 1 run per side: exit $rc"; }
grep -q '^no regression: 0 functions slower, 0 with a slower total only' $TMP/s1.txt || fail "$(head -1 $TMP/s1.txt)"
$SCORCH diff -q $TMP/base/run1.pb.gz,$TMP/base/run2.pb.gz $TMP/base/run3.pb.gz,$TMP/base/run4.pb.gz > $TMP/s2.txt
rc=$?
[ $rc -eq 0 ] || { cat $TMP/s2.txt; fail "same build, 2 runs per side: exit $rc"; }

# 4. Markdown for a pull request names the function in its heading.
$SCORCH diff -q -f markdown -o $TMP/pr.md $TMP/base/run1.pb.gz $TMP/slow/run1.pb.gz
[ $? -eq 3 ] || fail "markdown: not exit 3"
grep -q '^### scorch: CPU regression in `checksum`' $TMP/pr.md || fail "heading: $(head -1 $TMP/pr.md)"
grep -q '^| `checksum` |' $TMP/pr.md || fail "no checksum row"

# 5. Folded input works too (no sampling rate: samples); mixing it with pprof is refused.
$SCORCH convert $TMP/base/run1.pb.gz $TMP/b.folded && $SCORCH convert $TMP/slow/run1.pb.gz $TMP/s.folded ||
	fail "convert"
$SCORCH diff -q $TMP/b.folded $TMP/s.folded > $TMP/f.txt
[ $? -eq 3 ] || fail "folded: not exit 3"
grep -q 'samples per run' $TMP/f.txt || fail "folded values not in samples: $(sed -n 4p $TMP/f.txt)"
$SCORCH diff $TMP/b.folded $TMP/slow/run1.pb.gz 2> $TMP/mix.err
[ $? -eq 1 ] || fail "mixed inputs: not exit 1"
grep -q "sampling period" $TMP/mix.err || fail "mixed message: $(cat $TMP/mix.err)"

# 6. Errors: a missing file, garbage, a directory without profiles, bad options.
$SCORCH diff $TMP/nope.pb.gz $TMP/b.folded 2> $TMP/e1
[ $? -eq 1 ] && grep -q "cannot read '$TMP/nope.pb.gz'" $TMP/e1 || fail "missing file: $(cat $TMP/e1)"
head -c 3000 /dev/urandom > $TMP/garbage.pb.gz
$SCORCH diff $TMP/garbage.pb.gz $TMP/b.folded 2> $TMP/e2
[ $? -eq 1 ] && grep -q "cannot read '$TMP/garbage.pb.gz'" $TMP/e2 || fail "garbage: $(cat $TMP/e2)"
mkdir $TMP/empty
$SCORCH diff $TMP/empty $TMP/b.folded 2> $TMP/e3
[ $? -eq 1 ] && grep -q "holds no profile" $TMP/e3 || fail "empty dir: $(cat $TMP/e3)"
$SCORCH diff --threshold abc $TMP/b.folded $TMP/s.folded 2> $TMP/e4
[ $? -eq 2 ] && grep -q "invalid threshold 'abc'" $TMP/e4 || fail "bad threshold: $(cat $TMP/e4)"
$SCORCH diff -f yaml $TMP/b.folded $TMP/s.folded 2> /dev/null
[ $? -eq 2 ] || fail "bad format: not exit 2"
echo "ok"
