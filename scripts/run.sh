#!/bin/sh
# run.sh: scorch's main job for `make run`: profile the whole machine for 10 seconds and write
# scorch-profile.html (open it in a browser). Needs root for BPF.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "error: profiling with eBPF needs root: run 'sudo make run'" >&2
	exit 1
fi
./scorch record -a -d "${DURATION:-10}" -o scorch-profile.html
echo "open $(pwd)/scorch-profile.html in a browser"
