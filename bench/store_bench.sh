#!/bin/sh
# store_bench.sh: build and run the profile store benchmark (bench/store_bench.c) and print its
# table. Usage: sh bench/store_bench.sh [DAYS] (default 7). Uses /tmp/scorch-bench (removed after).
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
days=${1:-7}
make --no-print-directory B="$B" "$B/bench/store_bench"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), sqlite $(sqlite3 --version 2>/dev/null | cut -d' ' -f1 || echo '?')"
"$B/bench/store_bench" -d "$days" -o /tmp/scorch-bench
rm -rf /tmp/scorch-bench /tmp/scorch-bench-full
