#!/bin/sh
# bpf_verify.sh: the verifier's work for the sampler with no runtime walker, with each walker
# alone, and with all of them (the BPF budget every walker shares): instructions processed and
# verification time of the perf_event program, median of RUNS loads. Needs root and a build
# (make). Usage: sh bench/bpf_verify.sh [RUNS]
set -eu
cd "$(dirname "$0")/.."
RUNS=${1:-5}
B=${B:-build}
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
make -s "$B/bench/bpf_verify" "$B/bpf/vmlinux.h" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
echo "| walkers | processed insns | verification time (us, median of $RUNS) |"
echo "|---|---|---|"
# masks: 1 << kind (python 1, hotspot 2, v8 3, ruby 4, php 5, perl 6)
for spec in "none:0" "python:0x2" "hotspot:0x4" "v8:0x8" "ruby:0x10" "php:0x20" "perl:0x40" "all:0xffffffff"; do
	name=${spec%%:*}; mask=${spec#*:}
	clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -DRT_WALKER_MASK=$mask -I"$B/bpf" -Isrc/bpf \
		-Isrc -Wall -Werror -Wno-unused-function -c src/bpf/sampler.bpf.c -o "$tmp/s.o"
	: > "$tmp/r"
	for i in $(seq "$RUNS"); do
		"$B/bench/bpf_verify" "$tmp/s.o" >> "$tmp/r" || exit 1
	done
	insns=$(sed -n 's/.*processed_insns=\([0-9]*\).*/\1/p' "$tmp/r" | median)
	usec=$(sed -n 's/.*verification_usec=\([0-9]*\).*/\1/p' "$tmp/r" | median)
	echo "| $name | $insns | $usec |"
done
