#!/bin/sh
# jfr_ingest.sh: a JFR recording made by the test from a real JVM (tests/helpers/java/JfrWork.java
# with the settings of scorch-test.jfc: execution samples, allocations in and outside TLABs,
# monitor enters, parks), posted to POST /ingest?format=jfr raw, gzip-compressed and as the
# multipart form Pyroscope's Java agent sends (fields jfr and labels), then queried: every event
# type is its own profile type, and each one's stacks and values equal what the JDK's own
# `jfr print --json` reads from the same file; malformed uploads are refused and store nothing.
. tests/integration/server.inc

for t in java javac jfr; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: no $t (install openjdk-17-jdk-headless: make deps)"; exit 0; }
done
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 0; }

mkdir -p $TMP/classes $TMP/expected
javac -d $TMP/classes tests/helpers/java/JfrWork.java || fail "javac"
java -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,JfrWork::* \
	-XX:StartFlightRecording=filename=$TMP/rec.jfr,settings=$PWD/tests/helpers/java/scorch-test.jfc \
	-cp $TMP/classes JfrWork 2000 2 > $TMP/java.out 2> $TMP/java.err || fail "java: $(tail -3 $TMP/java.err)"
[ -s $TMP/rec.jfr ] || fail "no recording: $(tail -3 $TMP/java.err)"
jfr print --json --events jdk.ExecutionSample,jdk.ObjectAllocationInNewTLAB,jdk.ObjectAllocationOutsideTLAB,jdk.JavaMonitorEnter,jdk.ThreadPark \
	--stack-depth 100000 $TMP/rec.jfr > $TMP/rec.json || fail "jfr print"
$PY tests/integration/jfr_expected.py $TMP/expected < $TMP/rec.json || fail "reading jfr print's output"

start_server
code=$(status_of --data-binary @$TMP/rec.jfr "$URL/ingest?name=shop&format=jfr&from=now-30s")
[ "$code" = 200 ] || fail "raw jfr: HTTP $code: $(cat $TMP/body)"
cat $TMP/body; echo
TYPES="cpu alloc_in_new_tlab_objects alloc_in_new_tlab_bytes alloc_outside_tlab_objects alloc_outside_tlab_bytes lock_count lock_duration park_count park_duration"
for t in $TYPES; do
	[ -s $TMP/expected/$t.folded ] || fail "the JVM recorded no events for $t (see $TMP/rec.json)"
	get /render query="shop.$t" from=now-1h format=folded | sort > $TMP/got.folded
	if ! diff $TMP/expected/$t.folded $TMP/got.folded > $TMP/diff.txt; then
		head -20 $TMP/diff.txt
		fail "shop.$t differs from what jfr print reads"
	fi
	echo "shop.$t: $(wc -l < $TMP/got.folded) stacks, total $(total_count $TMP/got.folded), as jfr print reads them"
done
# The workload's methods are where they should be.
grep -q '^worker-[01];java.lang.Thread.run;JfrWork$$Lambda$[^;]*.run;JfrWork.lambda$main$[0-9]*;JfrWork.hotA;JfrWork.spin [0-9]*$' $TMP/expected/cpu.folded ||
	fail "no worker;...;hotA;spin stacks in cpu"
grep -q ';JfrWork.holdMonitor [0-9]*$' $TMP/expected/lock_duration.folded || fail "no holdMonitor in lock_duration"
grep -q ';JfrWork.holdLock;java.util.concurrent.locks.ReentrantLock.lock;' $TMP/expected/park_count.folded || fail "no holdLock in park_count"
grep -q '^main;JfrWork.main;JfrWork.allocate [0-9]*$' $TMP/expected/alloc_outside_tlab_bytes.folded || fail "no allocate in alloc_outside_tlab_bytes"
# Units and the sampling period: 1 ms is 1000 Hz.
get /render query=shop.cpu > $TMP/cpu.json
grep -q '"sampleRate":1000' $TMP/cpu.json || fail "cpu sample rate: $(head -c 400 $TMP/cpu.json)"
get /render query=shop.lock_duration | grep -q '"units":"nanoseconds"' || fail "lock_duration units"
get /render query=shop.alloc_outside_tlab_bytes | grep -q '"units":"bytes"' || fail "alloc bytes units"

# scorch convert reads recordings too, one profile type at a time.
"$SCORCH" convert -T park_duration $TMP/rec.jfr $TMP/park.folded || fail "scorch convert of a recording"
sort $TMP/park.folded | diff $TMP/expected/park_duration.folded - || fail "scorch convert -T park_duration"
"$SCORCH" convert $TMP/rec.jfr - -f folded | sort | diff $TMP/expected/cpu.folded - || fail "scorch convert: cpu by default"

# gzip, and Pyroscope's Java agent form: the recording in "jfr", a labels snapshot in "labels"
# (a LabelsSnapshot with one context; the JDK's events carry no contextId, so no labels apply).
gzip -c $TMP/rec.jfr > $TMP/rec.jfr.gz
code=$(status_of --data-binary @$TMP/rec.jfr.gz "$URL/ingest?name=shop-gz.cpu&format=jfr&from=now-30s")
[ "$code" = 200 ] || fail "gzip jfr: HTTP $code: $(cat $TMP/body)"
[ "$(ticks shop-gz.cpu)" = "$(total_count $TMP/expected/cpu.folded)" ] || fail "gzip: shop-gz.cpu $(ticks shop-gz.cpu)"
# contexts {7: Context {labels {1: 2}}}, strings {1: "endpoint", 2: "/api/v1"}
printf '\012\012\010\007\022\006\012\004\010\001\020\002\022\014\010\001\022\010endpoint\022\013\010\002\022\007/api/v1' > $TMP/labels.pb
code=$(status_of -F "jfr=@$TMP/rec.jfr" -F "labels=@$TMP/labels.pb" --url-query "name=agent{env=test}" "$URL/ingest?format=jfr&from=now-30s&spyName=javaspy")
[ "$code" = 200 ] || fail "multipart jfr: HTTP $code: $(cat $TMP/body)"
[ "$(ticks 'agent.park_count{env="test"}')" = "$(total_count $TMP/expected/park_count.folded)" ] || fail "multipart: agent.park_count"

# Malformed: 422 with a message, nothing stored.
before=$(ticks '{}')
head -c 20000 $TMP/rec.jfr > $TMP/cut.jfr
code=$(status_of --data-binary @$TMP/cut.jfr "$URL/ingest?name=cut&format=jfr")
[ "$code" = 422 ] || fail "truncated jfr: HTTP $code"
grep -q 'cannot ingest jfr: jfr: chunk of' $TMP/body || fail "truncated jfr message: $(cat $TMP/body)"
printf 'garbage' > $TMP/bad.pb
code=$(status_of -F "jfr=@$TMP/rec.jfr" -F "labels=@$TMP/bad.pb" "$URL/ingest?name=badlabels&format=jfr")
[ "$code" = 422 ] || fail "bad labels: HTTP $code"
grep -q 'LabelsSnapshot' $TMP/body || fail "bad labels message: $(cat $TMP/body)"
[ "$(ticks '{}')" = "$before" ] || fail "a refused upload changed the store"
echo ok
