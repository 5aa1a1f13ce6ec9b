#!/bin/sh
# ingest_formats.sh: `scorch server` ingest rate per body format, side by side: the same CPU
# profile as folded text, pprof (gzip) and OTLP (protobuf raw and gzip, OTLP/JSON when python3
# has google.protobuf), and a real JFR recording (raw and gzip) next to its cpu profile as pprof
# and OTLP. Prints a table of medians over RUNS runs; docs/benchmarks.md has the latest figures.
#
#   sh bench/ingest_formats.sh            (env: B=build dir, RUNS=3, SECS=5, CLIENTS=4)
#
# Load: bench/ingest_post.c (libcurl, keep-alive, CLIENTS threads posting one body in a loop).
# "samples" are the sum of the body's sample counts (folded counts, pprof/OTLP sample values);
# for JFR, the events (every event is one sample of its count-type profile: cpu, *_objects,
# lock_count, park_count; the byte and duration profiles come along). Each format gets a fresh
# server; "srv CPU ms/req" is the server's CPU time per request, and "samples/srv CPU-s" the
# samples it takes per second of its own CPU (steadier than end-to-end rates on a busy machine).
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-3}
SECS=${SECS:-5}
CLIENTS=${CLIENTS:-4}
SCORCH=${SCORCH:-./scorch}
TMP=$(mktemp -d /tmp/scorch-ingest-bench.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM

make --no-print-directory -s $B/bench/ingest_post scorch
POST=$B/bench/ingest_post
hz=$(getconf CLK_TCK)

start() {
	rm -rf $TMP/data $TMP/port
	"$SCORCH" server --listen 127.0.0.1:0 --port-file $TMP/port --data $TMP/data --max-body 256MiB \
		2>>$TMP/server.log &
	PID=$!
	i=0
	while [ ! -s $TMP/port ]; do
		i=$((i + 1)); [ $i -gt 100 ] && { cat $TMP/server.log; exit 1; }
		sleep 0.1
	done
	PORT=$(cat $TMP/port)
}
stop() { kill -TERM $PID; wait $PID || true; PID=; }
cpu_ticks() { awk '{ print $14 + $15 }' /proc/$PID/stat; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
total() { awk '{ s += $NF } END { print s + 0 }'; }

# 1. A CPU profile of 1000 distinct stacks of 12..40 frames over 2000 function names (shared
#    prefixes near the root, as real stacks), counts 1..8.
awk 'BEGIN {
	srand(42)
	for (i = 0; i < 1000; i++) {
		d = 12 + int(rand() * 29); line = "bench_main"
		for (j = 1; j < d; j++) {
			f = j < 6 ? int(rand() * 4 * j) : int(rand() * 2000)
			line = line ";pkg" (f % 50) "::function_" f
		}
		print line, 1 + int(rand() * 8)
	}
}' > $TMP/cpu.folded
"$SCORCH" convert $TMP/cpu.folded $TMP/cpu.pb.gz
"$SCORCH" convert -t bench $TMP/cpu.folded $TMP/cpu.otlp
gzip -c $TMP/cpu.otlp > $TMP/cpu.otlp.gz
CPU_SAMPLES=$(total < $TMP/cpu.folded)
JSON=
if /usr/bin/python3 -c 'import google.protobuf' 2>/dev/null; then
	PYTHONPATH=tests/integration /usr/bin/python3 -c '
import sys
from google.protobuf import json_format
from otlp_schema import msg
m = msg("ExportProfilesServiceRequest")(); m.ParseFromString(open(sys.argv[1], "rb").read())
open(sys.argv[2], "w").write(json_format.MessageToJson(m, indent=None))' $TMP/cpu.otlp $TMP/cpu.json && JSON=1
fi

# 2. A JFR recording of a real JVM (tests/helpers/java/JfrWork.java, every event kind).
JFR=
if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
	mkdir -p $TMP/classes
	javac -d $TMP/classes tests/helpers/java/JfrWork.java
	java -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,JfrWork::* \
		-XX:StartFlightRecording=filename=$TMP/rec.jfr,settings=$PWD/tests/helpers/java/scorch-test.jfc \
		-cp $TMP/classes JfrWork 3000 2 > /dev/null 2>&1
	gzip -c $TMP/rec.jfr > $TMP/rec.jfr.gz
	JFR_EVENTS=0
	for t in cpu alloc_in_new_tlab_objects alloc_outside_tlab_objects lock_count park_count; do
		n=$("$SCORCH" convert -T $t $TMP/rec.jfr - -f folded 2>/dev/null | total)
		JFR_EVENTS=$((JFR_EVENTS + n))
	done
	"$SCORCH" convert $TMP/rec.jfr $TMP/jcpu.pb.gz
	"$SCORCH" convert -t bench $TMP/rec.jfr $TMP/jcpu.otlp
	JCPU_SAMPLES=$("$SCORCH" convert $TMP/rec.jfr - -f folded | total)
	JFR=1
fi

run() { # LABEL FILE SAMPLES PATH CONTENT-TYPE ENCODING
	label=$1 file=$2 samples=$3 path=$4 ctype=$5 enc=$6
	: > $TMP/runs
	r=0
	while [ $r -lt $RUNS ]; do
		start
		c0=$(cpu_ticks)
		out=$($POST "http://127.0.0.1:$PORT$path" "$ctype" "$enc" "$file" $CLIENTS $SECS)
		c1=$(cpu_ticks)
		stop
		req=$(echo "$out" | field requests)
		echo "$(echo "$out" | field req_per_s) $(echo "$out" | field p50_ms) $(echo "$out" | field p99_ms) $(( (c1 - c0) * 1000 / hz )) $req" >> $TMP/runs
		r=$((r + 1))
	done
	rps=$(awk '{ print $1 }' $TMP/runs | median)
	p50=$(awk '{ print $2 }' $TMP/runs | median)
	p99=$(awk '{ print $3 }' $TMP/runs | median)
	cpu=$(awk '{ print ($5 ? $4 / $5 : 0) }' $TMP/runs | median)
	printf '%-34s %9.1f %11d %9.1f %12.0f %8.2f %8.2f %14.2f %16.0f\n' "$label" \
		"$(awk -v b=$(wc -c < $file) 'BEGIN { print b / 1024 }')" "$samples" "$rps" \
		"$(awk -v r=$rps -v s=$samples 'BEGIN { print r * s }')" "$p50" "$p99" "$cpu" \
		"$(awk -v c=$cpu -v s=$samples 'BEGIN { print (c > 0 ? s * 1000 / c : 0) }')"
}

echo "scorch server ingest, $CLIENTS clients, ${SECS}s x $RUNS runs (medians), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %9s %11s %9s %12s %8s %8s %14s %16s\n' "body" "KiB" "samples/req" "req/s" "samples/s" "p50 ms" "p99 ms" "srv CPU ms/req" "samples/srv CPU-s"
run "folded (/ingest)" $TMP/cpu.folded $CPU_SAMPLES "/ingest?name=bench.cpu" text/plain -
run "pprof gzip (/ingest)" $TMP/cpu.pb.gz $CPU_SAMPLES "/ingest?name=bench.cpu&format=pprof" application/octet-stream -
run "OTLP protobuf" $TMP/cpu.otlp $CPU_SAMPLES "/v1development/profiles" application/x-protobuf -
run "OTLP protobuf gzip" $TMP/cpu.otlp.gz $CPU_SAMPLES "/v1development/profiles" application/x-protobuf gzip
[ -n "$JSON" ] && run "OTLP/JSON" $TMP/cpu.json $CPU_SAMPLES "/v1development/profiles" application/json -
if [ -n "$JFR" ]; then
	run "JFR, 9 profile types (events)" $TMP/rec.jfr $JFR_EVENTS "/ingest?name=bench&format=jfr" application/octet-stream -
	run "JFR gzip (events)" $TMP/rec.jfr.gz $JFR_EVENTS "/ingest?name=bench&format=jfr" application/octet-stream -
	run "its cpu profile as pprof gzip" $TMP/jcpu.pb.gz $JCPU_SAMPLES "/ingest?name=bench.cpu&format=pprof" application/octet-stream -
	run "its cpu profile as OTLP" $TMP/jcpu.otlp $JCPU_SAMPLES "/v1development/profiles" application/x-protobuf -
fi
