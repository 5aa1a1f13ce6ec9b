#!/bin/sh
# ui_browser.sh: the web UI in headless Chromium against a live server with known data: the
# flame graph draws the known frames, search highlights and reports the matched share, the top
# table lists the functions in order, a row opens the sandwich view, the diff view shows the
# known change, no request leaves 127.0.0.1 and the console stays clean. The browser part is
# tests/integration/ui_browser.js (playwright-core from web/ui/node_modules). Screenshots go to
# the temp dir (and to $SCORCH_UI_SHOTS when set).
. tests/integration/server.inc

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "SKIP: no Chromium at $CHROMIUM (apt-get install chromium)"; exit 0; }
command -v node >/dev/null 2>&1 || { echo "SKIP: node is not installed"; exit 0; }
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

mkdir -p "$TMP/shots"
NODE_PATH=web/ui/node_modules timeout 60 node tests/integration/ui_browser.js "$URL" "$CHROMIUM" "$TMP" \
	$((now - 3600)) $((now - 900)) $((now - 900)) $((now + 1)) || fail "browser checks failed"
if [ -n "${SCORCH_UI_SHOTS:-}" ]; then
	mkdir -p "$SCORCH_UI_SHOTS" && cp "$TMP"/shots/*.png "$SCORCH_UI_SHOTS"/
fi
echo "ok ui_browser"
