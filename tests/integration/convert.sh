#!/bin/sh
# convert.sh: `scorch convert` between every format: folded -> pprof -> folded is exact, the
# outputs are what their formats say, Go's pprof reads ours and ours reads Go's, the HTML page
# runs (under node, when installed), and bad input fails with a message.
set -u
cd "$(dirname "$0")/../.."
SCORCH=${SCORCH:-./scorch}
[ -x "$SCORCH" ] || { echo "SKIP: $SCORCH is not built"; exit 0; }
tmp=$(mktemp -d /tmp/scorch-convert.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > "$tmp/in.folded" <<'TXT'
app;main;work;memcpy 30
app;main;work 10
app;main;read_[k] 5
python3;<module> (/srv/run.py:3);Job.run (job.py:12) 7
python3;[idle] 2
TXT
sort "$tmp/in.folded" > "$tmp/want.folded"

for ext in pb.gz folded json html svg; do
	"$SCORCH" convert "$tmp/in.folded" "$tmp/out.$ext" || fail "convert to .$ext"
	[ -s "$tmp/out.$ext" ] || fail "empty .$ext"
done
# pprof keeps the lines: with --lines the round trip is exact
"$SCORCH" convert --lines "$tmp/out.pb.gz" "$tmp/back.folded" || fail "pprof back to folded"
cmp -s "$tmp/want.folded" "$tmp/back.folded" || { diff "$tmp/want.folded" "$tmp/back.folded"; fail "folded -> pprof -> folded changed"; }
gunzip -t "$tmp/out.pb.gz" || fail "pprof output is not gzip"
"$SCORCH" convert --lines -f folded "$tmp/out.pb.gz" - > "$tmp/stdout.folded" || fail "--format to stdout"
cmp -s "$tmp/want.folded" "$tmp/stdout.folded" || fail "stdout output differs"
# by default, frames are functions: the Python frames lose their line, not their file
"$SCORCH" convert "$tmp/out.pb.gz" "$tmp/byfn.folded" || fail "pprof to folded by function"
grep -q '^python3;<module> (/srv/run.py);Job.run (job.py) 7$' "$tmp/byfn.folded" ||
	fail "not aggregated by function: $(cat "$tmp/byfn.folded")"
grep -q '"type":"sampled"' "$tmp/out.json" || fail "speedscope json"
grep -q '</svg>' "$tmp/out.svg" || fail "svg"
grep -Eq 'https?://' "$tmp/out.html" && fail "the html page refers to the network"
echo "ok: folded -> pprof, folded, speedscope, html, svg; pprof -> folded exact"

# Errors name the problem and exit non-zero.
printf 'a;b\n' > "$tmp/bad.folded"
"$SCORCH" convert "$tmp/bad.folded" "$tmp/x.svg" 2> "$tmp/err" && fail "bad input accepted"
grep -q "line 1: no count" "$tmp/err" || fail "message: $(cat "$tmp/err")"
"$SCORCH" convert "$tmp/in.folded" "$tmp/x.png" 2> "$tmp/err" && fail "unknown extension accepted"
grep -q "x.png" "$tmp/err" || fail "message: $(cat "$tmp/err")"
"$SCORCH" convert --help | grep -q "examples:" || fail "--help"
echo "ok: errors"

if command -v go > /dev/null 2>&1; then
	HOME=$tmp PPROF_TMPDIR=$tmp go tool pprof -top -symbolize=none "$tmp/out.pb.gz" > "$tmp/top" 2>&1 || { cat "$tmp/top"; fail "go tool pprof rejects our pprof"; }
	grep -q "memcpy" "$tmp/top" || { cat "$tmp/top"; fail "go tool pprof lost memcpy"; }
	# A profile Go wrote itself (CPU, with its own conventions) reads back.
	mkdir -p "$tmp/gen"
	cat > "$tmp/gen/main.go" <<'GO'
package main

import (
	"os"
	"runtime/pprof"
	"time"
)

//go:noinline
func spinHot(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	f, _ := os.Create(os.Args[1])
	pprof.StartCPUProfile(f)
	x := 0
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
		x += spinHot(100000)
	}
	pprof.StopCPUProfile()
	f.Close()
	println(x > 0)
}
GO
	printf 'module gen\ngo 1.19\n' > "$tmp/gen/go.mod"
	if (cd "$tmp/gen" && HOME=$tmp GOCACHE=$tmp/cache GOFLAGS=-mod=mod go run . "$tmp/go.pb.gz") > "$tmp/gorun" 2>&1; then
		"$SCORCH" convert "$tmp/go.pb.gz" "$tmp/go.folded" || fail "reading Go's pprof"
		grep -q "main.spinHot" "$tmp/go.folded" || { cat "$tmp/go.folded"; fail "Go's hot function missing"; }
		echo "ok: go tool pprof reads ours; ours reads Go's"
	else
		echo "ok: go tool pprof reads ours (could not build the Go generator: $(tail -n 1 "$tmp/gorun"))"
	fi
else
	echo "note: go not installed, pprof interoperability not checked"
fi

if command -v node > /dev/null 2>&1; then
	node tests/integration/flamegraph_page.js "$tmp/out.html" app main work memcpy || fail "the html page's script"
	echo "ok: html page script"
else
	echo "note: node not installed, the html page's script not run"
fi
echo "PASS"
