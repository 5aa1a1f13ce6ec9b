#!/bin/sh
# naming.sh: one naming of frames in every view, with real BPF.
#   1. Two truly anonymous JavaScript functions in two files (tests/helpers/node/anon/) are two
#      frames, "(anonymous) (.../a.js)" and "(anonymous) (.../b.js)", in `scorch record`'s
#      folded output, after `scorch convert` of its pprof, and after a server's ingest and
#      render (folded and flamebearer JSON).
#   2. pprof mappings: the program's executable first, runtime frames in a mapping named after
#      their language ([javascript]), never [python] for JavaScript.
#   3. The agent shows the inlined native frames `scorch record` shows, on one CPython program
#      (frames in at least 5% of the record's samples must all be in the agent's profile),
#      given a --line-memory that holds the interpreter's DWARF (libpython's 14 MB of DWARF
#      needs 64; the default 16 keeps the agent's memory target and gives such a file names
#      without lines).
. tests/integration/server.inc
need_bpf

ran=0
if command -v node > /dev/null 2>&1; then
	ran=$((ran + 1))
	ANON=$(cd tests/helpers/node/anon && pwd)
	"$SCORCH" record -q -F 199 -o "$TMP/js.pb.gz" -- node "$ANON/main.js" 3 > "$TMP/js.log" 2>&1 ||
		fail "record node: $(cat "$TMP/js.log")"
	"$SCORCH" convert "$TMP/js.pb.gz" "$TMP/js.folded" || fail "convert"
	"$SCORCH" record -q -F 199 -o "$TMP/jsr.folded" -- node "$ANON/main.js" 1 > "$TMP/js.log" 2>&1 ||
		fail "record node: $(cat "$TMP/js.log")"
	start_server
	ingest 'anon.cpu' "$TMP/js.pb.gz" --url-query format=pprof
	get /render query=anon.cpu format=folded > "$TMP/srv.folded"
	get /render query=anon.cpu > "$TMP/srv.json"
	stop_server
	for f in a b; do
		frame="(anonymous) ($ANON/$f.js)"
		for v in jsr.folded js.folded srv.folded; do
			n=$(tr ';' '\n' < "$TMP/$v" | sed 's/ [0-9]*$//' | grep -cxF "$frame")
			[ "$n" -ge 1 ] || fail "$v: no frame '$frame': $(tr ';' '\n' < "$TMP/$v" | grep -F anonymous | sort | uniq -c)"
		done
		grep -qF "\"$frame\"" "$TMP/srv.json" || fail "flamebearer: no '$frame'"
		echo "ok: '$frame' in record, convert, server folded and JSON"
	done
	tr ';' '\n' < "$TMP/srv.folded" | sed 's/ [0-9]*$//' | grep -qx '(anonymous)' &&
		fail "server: a bare '(anonymous)' frame lost its file"
	python3 tests/integration/pprof_mappings.py "$TMP/js.pb.gz" > "$TMP/maps" || fail "pprof mappings"
	echo "pprof mappings: $(tr '\n' ' ' < "$TMP/maps")"
	first=$(head -1 "$TMP/maps")
	[ "$first" = "$(readlink -f "$(command -v node)")" ] || fail "first pprof mapping is '$first', not node's executable"
	grep -qx '\[javascript\]' "$TMP/maps" || fail "no [javascript] mapping"
	grep -qx '\[python\]' "$TMP/maps" && fail "JavaScript frames in a [python] mapping"
	echo "ok: pprof mappings"
else
	echo "skipped: Node (not installed)"
fi

PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
PY=$(readlink -f "$PY" 2>/dev/null)
if [ -x "$PY" ]; then
	ran=$((ran + 1))
	"$SCORCH" record -q -F 99 -o "$TMP/py.pb.gz" -- "$PY" tests/helpers/python/accuracy.py 3 \
		> /dev/null 2> "$TMP/py.log" || fail "record python: $(cat "$TMP/py.log")"
	"$SCORCH" convert "$TMP/py.pb.gz" "$TMP/py.folded" || fail "convert"
	python3 tests/integration/pprof_mappings.py "$TMP/py.pb.gz" > "$TMP/pymaps" || fail "pprof mappings"
	[ "$(head -1 "$TMP/pymaps")" = "$PY" ] || fail "first pprof mapping is '$(head -1 "$TMP/pymaps")', not $PY"
	start_server
	$SCORCH -v agent --server "$URL" -F 99 --interval 2s --cache-dir "$TMP/tables" -d 300 \
		--line-memory 128 \
		2> "$TMP/agent.log" &
	agent=$!
	kill_at_exit $agent
	wait_for 60 "'agent: profiling' from the agent" grep -q 'agent: profiling' "$TMP/agent.log"
	"$PY" tests/helpers/python/accuracy.py 3 > /dev/null 2>&1
	kill -TERM $agent
	wait $agent || fail "agent exited $?: $(tail -5 "$TMP/agent.log")"
	get /render query='accuracy.py.cpu{}' from=now-1h until=now format=folded > "$TMP/agent.folded"
	stop_server
	# native frames (no file part) in at least 5% of the record's samples
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); t += n; k = split($0, f, ";")
		delete seen; for (i = 2; i <= k; i++) if (!(f[i] in seen) && f[i] !~ / \(/) { seen[f[i]] = 1; c[f[i]] += n } }
		END { for (x in c) if (c[x] >= 0.05 * t) print x }' "$TMP/py.folded" | sort > "$TMP/common"
	tr ';' '\n' < "$TMP/agent.folded" | sed 's/ [0-9]*$//' | sort -u > "$TMP/agent.frames"
	missing=$(comm -23 "$TMP/common" "$TMP/agent.frames")
	echo "CPython: $(wc -l < "$TMP/common") native frames in >= 5% of record's samples"
	[ -z "$missing" ] || fail "the agent lacks frames record shows: $missing"
	if HOME=$TMP PPROF_TMPDIR=$TMP go tool pprof -traces "$TMP/py.pb.gz" 2> /dev/null | grep -q '(inline)'; then
		echo "ok: the agent shows record's frames, inlined ones included"
	else
		echo "ok: the agent shows record's frames (this CPython has no DWARF: no inlined frames)"
	fi
else
	echo "skipped: CPython (no python3)"
fi
[ $ran -gt 0 ] || { echo "SKIP: neither node nor python3"; exit 0; }
