#!/bin/sh
# server_hostile.sh: `scorch server` under hostile and heavy load, scenario by scenario, for two
# builds measured in the same run: BASE (by default `main`, built from git into a temporary
# directory) and NEW (./scorch). For each: the answers, the server's peak RSS, its CPU seconds,
# and the latency of /healthz probed every 50 ms on a new connection during the scenario.
# docs/benchmarks.md ("Server under hostile load") has the latest table.
#
#   sudo sh bench/server_hostile.sh          (env: BASE=other scorch binary, NEW=./scorch,
#                                             ONLY=scenario-name-substring, B=build dir)
#
# Scenarios (bench/hostile_load.c makes the load):
#   huge-pprof     one 58 MB gzip pprof with 5.6 M locations (173 MB inflated)
#   8-types-48MB   one pprof with 8 sample types, 35 MB gzip, 1 M locations, 400 k samples
#   8-types-small  one pprof with 8 sample types, 3 MB (accepted by both)
#   folded-2M      2 M distinct folded lines (46 MB)
#   5x60MB         5 concurrent ~60 MB folded bodies (3000 distinct stacks repeated)
#   500-clients    500 keep-alive clients (2 per source address) ingesting and rendering, 20 s
#   slow-headers   300 connections from one address trickling their heads (1 byte/s), 20 s
#   disk-full      pushes onto a 48 MB tmpfs (no --max-disk) for 15 s (root)
#   max-disk-5MB   pushes with --max-disk 5MB for 20 s: the largest size of the store's files
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
NEW=${NEW:-./scorch}
ONLY=${ONLY:-}
TMP=$(mktemp -d /tmp/scorch-hostile.XXXXXX)
PID= PROBE=
cleanup() {
	[ -n "$PROBE" ] && kill $PROBE 2>/dev/null
	[ -n "$PID" ] && kill -9 $PID 2>/dev/null
	mountpoint -q $TMP/tmpfs 2>/dev/null && umount $TMP/tmpfs
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

make -s B=$B $B/bench/hostile_load
LOAD=$B/bench/hostile_load
if [ -z "${BASE:-}" ]; then
	echo "building main into $TMP/main (the build before this branch's changes) ..." >&2
	mkdir -p $TMP/main
	git archive main | tar -x -C $TMP/main
	make -s -C $TMP/main -j2 scorch >&2
	BASE=$TMP/main/scorch
fi
hz=$(getconf CLK_TCK)

echo "generating inputs ..." >&2
$LOAD gen-pprof $TMP/huge.pb.gz 5600000 1 100000 16 >&2
$LOAD gen-pprof $TMP/t8big.pb.gz 1000000 8 400000 16 >&2
$LOAD gen-pprof $TMP/t8small.pb.gz 100000 8 50000 16 >&2
$LOAD gen-folded $TMP/f2m.folded 2000000 2000000 0 >&2
$LOAD gen-folded $TMP/f60.folded 245000 3000 16 >&2

start() { # BINARY DATA-DIR [ARGS...]
	bin=$1 data=$2
	shift 2
	rm -f $TMP/port
	"$bin" server --listen 127.0.0.1:0 --port-file $TMP/port --data "$data" --retention 0 "$@" \
		2>>$TMP/server.log &
	PID=$!
	i=0
	while [ ! -s $TMP/port ]; do
		i=$((i + 1))
		[ $i -gt 200 ] && { tail $TMP/server.log; exit 1; }
		sleep 0.05
	done
	PORT=$(cat $TMP/port)
}
stop() { kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null || true; PID=; }
ms() { date +%s%3N; }
cpu() { awk '{ print $14 + $15 }' /proc/$PID/stat; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

printf '%-14s %-5s %-44s %7s %6s %9s %9s %8s %6s %6s\n' scenario build answers "peak MB" "CPU s" \
	"hz p50 ms" "hz p99 ms" "hz fail" "wall s" "stop s"
# run NAME BUILD-LABEL BINARY SERVER-ARGS LOAD-ARGS...: one scenario on one build.
run() {
	name=$1 label=$2 bin=$3 sargs=$4
	shift 4
	case "$name" in *"$ONLY"*) ;; *) return ;; esac
	data=$TMP/data-$label
	rm -rf $data
	[ "$name" = disk-full ] && data=$TMP/tmpfs/data
	# shellcheck disable=SC2086
	start "$bin" $data $sargs
	for arg in "$@"; do
		shift
		[ "$arg" = PORT ] && arg=$PORT
		set -- "$@" "$arg"
	done
	rm -f $TMP/stop
	$LOAD probe $PORT 600 $TMP/stop > $TMP/probe.out &
	PROBE=$!
	c0=$(cpu)
	t0=$(date +%s.%N)
	$LOAD "$@" > $TMP/load.out 2>&1 || true
	t1=$(date +%s.%N)
	c1=$(cpu)
	touch $TMP/stop
	wait $PROBE || true
	PROBE=
	rss=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' /proc/$PID/status)
	s0=$(ms)
	stop
	s1=$(ms)
	answers=$(field codes < $TMP/load.out)
	extra=$(field largest_files < $TMP/load.out)
	[ -n "$extra" ] && answers="$answers files<=$((extra / 1000000))MB"
	extra=$(field query_after < $TMP/load.out)
	[ -n "$extra" ] && answers="$answers then-query:$extra"
	printf '%-14s %-5s %-44s %7s %6s %9s %9s %8s %6s %6s\n' "$name" "$label" "$answers" "$rss" \
		"$(awk -v c=$((c1 - c0)) -v hz=$hz 'BEGIN { printf "%.1f", c / hz }')" \
		"$(field p50_ms < $TMP/probe.out)" "$(field p99_ms < $TMP/probe.out)" \
		"$(field failed < $TMP/probe.out)/$(field probes < $TMP/probe.out)" \
		"$(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.1f", b - a }')" \
		"$(awk -v a=$s0 -v b=$s1 'BEGIN { printf "%.1f", (b - a) / 1000 }')"
}
both() { # NAME SERVER-ARGS LOAD-ARGS...
	bname=$1 bargs=$2
	shift 2
	run "$bname" main "$BASE" "$bargs" "$@"
	run "$bname" new "$NEW" "$bargs" "$@"
}

both huge-pprof "" post PORT $TMP/huge.pb.gz "/ingest?name=huge&format=pprof" 1 300
both 8-types-48MB "" post PORT $TMP/t8big.pb.gz "/ingest?name=t8&format=pprof" 1 600
both 8-types-small "" post PORT $TMP/t8small.pb.gz "/ingest?name=t8s&format=pprof" 1 300
both folded-2M "" post PORT $TMP/f2m.folded "/ingest?name=f2m.cpu" 1 300
both 5x60MB "" post PORT $TMP/f60.folded "/ingest?name=f60.cpu" 5 300
both 500-clients "" clients PORT 500 20
both slow-headers "" slowloris PORT 300 20 127.0.0.2
if [ "$(id -u)" = 0 ] && mkdir -p $TMP/tmpfs && mount -t tmpfs -o size=48m tmpfs $TMP/tmpfs; then
	run disk-full main "$BASE" "" fill-disk PORT $TMP/tmpfs/data 15
	rm -rf $TMP/tmpfs/data
	run disk-full new "$NEW" "" fill-disk PORT $TMP/tmpfs/data 15
else
	echo "disk-full: skipped (needs root to mount a tmpfs)"
fi
run max-disk-5MB main "$BASE" "--max-disk 5MB" fill-disk PORT $TMP/data-main 20
run max-disk-5MB new "$NEW" "--max-disk 5MB" fill-disk PORT $TMP/data-new 20
