#!/bin/sh
# build-ui.sh OUTDIR: build the web UI (web/ui/, TypeScript + Vite) into OUTDIR. Installs the
# pinned dev dependencies with npm when node_modules is missing or older than
# package-lock.json. Without npm (or when the registry cannot be reached) it warns and leaves
# OUTDIR empty: the binary then serves a short page pointing to /render?format=html. Builds
# from several build directories at once are serialized with a lock on web/ui/.build.lock.
set -eu
out=$1
mkdir -p "$out"
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
empty() {
	echo "warning: $1: building scorch without the web UI" >&2
	find "$out" -mindepth 1 -delete
	exit 0
}
command -v npm >/dev/null 2>&1 || empty "npm is not installed (sh scripts/install-deps.sh)"
cd web/ui
build() {
	if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
		# `npm install --no-save` rather than `npm ci`: npm 11's ci refuses a lock file that
		# lists only this platform's optional native packages (rollup's), which is what
		# `npm install` writes. Versions still come from package-lock.json.
		npm install --no-save --no-audit --no-fund --loglevel=error >&2 || empty "npm install failed"
	fi
	./node_modules/.bin/tsc --noEmit -p .
	./node_modules/.bin/vite build --logLevel warn --outDir "$out" --emptyOutDir
}
if command -v flock >/dev/null 2>&1; then
	exec 9>.build.lock
	flock 9
fi
build
