#!/bin/sh
# ui_bench.sh [RUNS]: first paint and zoom timings of the web UI on a deep profile of 50 000
# distinct stacks (tests/helpers/python/deep_profile.py), next to scorch's standalone HTML
# flame graph and speedscope loading the same stacks in the same headless Chromium.
#
#   sh bench/ui_bench.sh 5
#
# Needs a scorch built with the UI, chromium, node, python3 and web/ui/node_modules; speedscope
# is installed from npm into a temporary directory (left out, with a note, when npm cannot).
set -eu
cd "$(dirname "$0")/.."
RUNS=${1:-5}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
SCORCH=${SCORCH:-./scorch}
TMP=$(mktemp -d /tmp/scorch-uibench.XXXXXX)
SRV= WEB=
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	[ -n "$WEB" ] && kill "$WEB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

"$SCORCH" server --listen 127.0.0.1:0 --port-file "$TMP/port" --data "$TMP/data" 2> "$TMP/server.log" &
SRV=$!
while [ ! -s "$TMP/port" ]; do sleep 0.1; done
URL="http://127.0.0.1:$(cat "$TMP/port")"

python3 tests/helpers/python/deep_profile.py "$TMP/deep.folded" 50000
curl -s --data-binary @"$TMP/deep.folded" "$URL/ingest?name=deep.cpu&from=$(($(date +%s) - 60))" > /dev/null

SS=none
if (cd "$TMP" && npm install --no-save --silent --prefix "$TMP/ss" speedscope@1.25.0 > /dev/null 2>&1); then
	dir=$(dirname "$(find "$TMP/ss/node_modules/speedscope" -name index.html -path '*release*' | head -1)")
	cp "$TMP/deep.folded" "$dir/deep.txt"
	python3 -m http.server 0 --bind 127.0.0.1 --directory "$dir" > "$TMP/web.log" 2>&1 &
	WEB=$!
	i=0
	until grep -q 'port' "$TMP/web.log"; do i=$((i + 1)); [ $i -gt 50 ] && break; sleep 0.1; done
	port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$TMP/web.log" | head -1)
	[ -n "$port" ] && SS="http://127.0.0.1:$port"
else
	echo "note: speedscope could not be installed from npm: its column is left out"
fi

echo "# web UI, 50 000 distinct stacks ($(wc -c < "$TMP/deep.folded") bytes folded), $RUNS runs, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
NODE_PATH=web/ui/node_modules node bench/ui_bench.js "$URL" "$CHROMIUM" "$RUNS" "$SS" "$SS/deep.txt" "$SRV"
