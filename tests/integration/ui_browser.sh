#!/bin/sh
# ui_browser.sh: every view of the web UI in headless Chromium against a live server: known
# folded data (flame graph, table side by side, the Lines toggle, search, zoom and its URL, context menu,
# sandwich with fuzzy search, top table, exports, diffs of two ranges and of two label sets,
# the empty-baseline state, CI runs, group by, % of machine, upload of pprof, folded,
# speedscope, JFR and OTLP files, selector errors, second-precision ranges and clean axes), a 50k-stack deep profile
# (pruning, zoom that loads the subtree from the server), and a real agent's data when BPF can
# be used. The browser part is tests/integration/ui_browser.js (playwright-core from
# web/ui/node_modules). Screenshots go to the temp dir (and to $SCORCH_UI_SHOTS when set).
. tests/integration/server.inc

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "SKIP: no Chromium at $CHROMIUM (apt-get install chromium)"; exit 0; }
command -v node >/dev/null 2>&1 || { echo "SKIP: node is not installed"; exit 0; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 0; }
[ -d web/ui/node_modules/playwright-core ] ||
	{ echo "SKIP: web/ui/node_modules is missing (run: cd web/ui && npm install --no-save)"; exit 0; }

start_server
curl -s "$URL/" | grep -q '/ui/assets/' ||
	{ echo "SKIP: this scorch binary was built without the web UI (npm missing at build time)"; exit 0; }

now=$(date +%s)
base=$((now - 1800))
comp=$((now - 300))
# baseline: hot_loop 60%, helper 20%; comparison: hot_loop 20%, helper 70%
printf 'app;main;compute;hot_loop 60\napp;main;compute;helper 20\napp;main;io;read_k_[k] 20\n' > "$TMP/base.folded"
printf 'app;main;compute;hot_loop 20\napp;main;compute;helper 70\napp;main;io;read_k_[k] 10\n' > "$TMP/comp.folded"
ingest 'shop.cpu{env=prod}' "$TMP/base.folded" --url-query "from=$base"
ingest 'shop.cpu{env=prod}' "$TMP/comp.folded" --url-query "from=$comp"
ingest 'other.cpu{env=dev}' "$TMP/base.folded" --url-query "from=$base"
# frames with their source line: one function sampled on two lines (the Lines toggle)
printf 'app;main;work (w.c:10) 30\napp;main;work (w.c:12) 50\n' > "$TMP/lines.folded"
ingest 'srcline.cpu' "$TMP/lines.folded" --url-query "from=$base"

# two CI runs of the same program, labelled by commit: parse 30% -> 60% of the samples
printf 'ci_test;main;parse 30\nci_test;main;render 70\n' > "$TMP/run_a.folded"
printf 'ci_test;main;parse 60\nci_test;main;render 40\n' > "$TMP/run_b.folded"
# (scorch ci gives every run a unique `run` label: commit aaa111 ran twice)
ingest 'citest.cpu{commit=aaa111,branch=main,job=unit,run=r1}' "$TMP/run_a.folded" --url-query "from=$((now - 1260))"
ingest 'citest.cpu{commit=aaa111,branch=main,job=unit,run=r2}' "$TMP/run_a.folded" --url-query "from=$((now - 1200))"
ingest 'citest.cpu{commit=bbb222,branch=feature,job=unit,run=r3}' "$TMP/run_b.folded" --url-query "from=$((now - 600))"

# a machine with 4 CPUs: web busy with 100 samples every 10 s (at 100 Hz: 0.1 core), the rest
# idle, for the last 10 minutes (the timeline's last buckets must not drop to zero)
printf 'web;serve;handle 100\n' > "$TMP/web.folded"
printf 'swapper;[idle] 3900\n' > "$TMP/idle.folded"
t=$((now - 600))
while [ $t -le $now ]; do
	ingest 'web.cpu{host=m1,cpus=4}' "$TMP/web.folded" --url-query "from=$t" --url-query sampleRate=100
	ingest 'idle.cpu{host=m1,cpus=4}' "$TMP/idle.folded" --url-query "from=$t" --url-query sampleRate=100
	t=$((t + 10))
done

# a deep profile with 50 000 distinct stacks (the first render cannot hold it all)
python3 tests/helpers/python/deep_profile.py "$TMP/deep.folded" 50000
ingest 'deep.cpu' "$TMP/deep.folded" --url-query "from=$((now - 120))"

# files to upload: the same stacks as pprof, folded and speedscope
"$SCORCH" convert "$TMP/base.folded" "$TMP/up.pb.gz" || fail "convert to pprof"
"$SCORCH" convert "$TMP/comp.folded" "$TMP/up.json" || fail "convert to speedscope"
cp "$TMP/base.folded" "$TMP/up.folded"
"$SCORCH" convert "$TMP/base.folded" "$TMP/up.otlp" || fail "convert to OTLP"
# a recording of Debian's JDK 17 (every event kind), gzip-compressed
cp tests/fuzz/corpus/jfr/jdk17-all-events.jfr.gz "$TMP/up.jfr.gz"

# a real agent's data: a busy program profiled for a few seconds (needs root and BPF)
AGENT=skip
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	"$B/helpers/fp_hot" 5 > /dev/null &
	hot=$!
	if "$SCORCH" agent --server "$URL" -F 199 --interval 1s -d 4 2> "$TMP/agent.log"; then
		AGENT=$(nproc)
	else
		echo "agent part skipped: the agent failed: $(tail -3 "$TMP/agent.log")"
	fi
	kill $hot 2>/dev/null; wait $hot 2>/dev/null
else
	echo "agent part skipped: needs root and BPF"
fi

mkdir -p "$TMP/shots"
NODE_PATH=web/ui/node_modules timeout 240 node tests/integration/ui_browser.js "$URL" "$CHROMIUM" "$TMP" \
	"$now" "$AGENT" || fail "browser checks failed"
if [ -n "${SCORCH_UI_SHOTS:-}" ]; then
	mkdir -p "$SCORCH_UI_SHOTS" && cp "$TMP"/shots/*.png "$SCORCH_UI_SHOTS"/
fi
echo "ok ui_browser"
