#!/bin/sh
# native_symbols.sh: the native symbolization section of docs/benchmarks.md. Known-split
# workloads (tests/helpers/sym/split.{c,rs,js}, tests/helpers/go/spin.go: A gets 2/3 of the
# thread's CPU time, B 1/3, measured by the workload itself) built the way users build them,
# each profiled by scorch and by perf in the same run (perf with its best call-graph mode for the
# binary: --call-graph dwarf without frame pointers, -g with them):
#   share    % of the samples whose stack holds A among those holding A or B; error vs the truth
#   named    the hot functions appear under their own names, leaf with its caller
#            (A;leafA, B;inlined)
#   lines    % of the samples in the leaf function whose line lies in that function's source
#            lines (scorch --lines; "-" where the binary has no lines)
# Medians over RUNS runs of SECS seconds at HZ.
#
# usage: sudo sh bench/native_symbols.sh [RUNS=3] [SECS=4] [HZ=499]
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-4}
HZ=${3:-499}
SCORCH=${SCORCH:-./scorch}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
[ -x "$SCORCH" ] || { echo "build ./scorch first" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
RUSTC=$(command -v rustc || echo "${HOME:-/root}/.cargo/bin/rustc")

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }

# --- build
gcc -O2 -g -fomit-frame-pointer -o "$TMP/c" tests/helpers/sym/split.c
(cd "$TMP" && g++ -x c++ -O2 -g -fomit-frame-pointer -o full_cc "$OLDPWD/tests/helpers/sym/split.c" &&
	nm full_cc --format=posix --defined-only |
	awk '{ if ($2 == "T" || $2 == "t" || $2 == "W") print $1 }' | sort > funcsyms &&
	nm -D full_cc --format=posix --defined-only | awk '{ print $1 }' | sort > dynsyms &&
	comm -13 dynsyms funcsyms > keep && objcopy --only-keep-debug full_cc full.debug &&
	objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep \
		full.debug minidebuginfo && xz -f minidebuginfo &&
	objcopy --strip-all full_cc stripped_cc &&
	objcopy --add-section .gnu_debugdata=minidebuginfo.xz stripped_cc cc)
# full debug info (cargo's `debug = true` in [profile.release]): lines and inlined calls
[ -x "$RUSTC" ] && "$RUSTC" -O -C debuginfo=2 -o "$TMP/rs" tests/helpers/sym/split.rs
cp tests/helpers/go/spin.go tests/helpers/go/go.mod "$TMP/"
(cd "$TMP" && go build -o go_normal . && go build -ldflags='-s -w' -o go_stripped .)

# the source lines of a function: first and last line of its body in FILE
fn_lines() { # file pattern-of-first-line
	awk -v pat="$2" 'index($0, pat) { s = NR; d = 0 } s && !e { o = gsub(/{/, "{"); c = gsub(/}/, "}");
		d += o - c; if (d <= 0 && (o || c)) e = NR } END { print s, e }' "$1"
}

# scorch_run NAME CMD...: folded in $TMP/NAME.s.folded, truth in $TMP/NAME.truth
share_of() { # folded A B
	awk -v a="$2" -v b="$3" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		if (s ~ a) x += n; else if (s ~ b) y += n }
		END { if (x + y) printf "%.1f", 100 * x / (x + y); else print "-" }' "$1"
}
truth_of() {
	awk -v a="$2" -v b="$3" '$1 == a { x = $2 } $1 == b { y = $2 }
		END { if (x + y) printf "%.1f", 100 * x / (x + y); else print "-" }' "$1"
}
# perf script output -> folded (root first), frames by symbol (inlined frames kept)
perf_folded() {
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk '
		/^[^ \t]/ { if (n) emit(); comm = $1; n = 0; next }
		/^[ \t]*$/ { if (n) emit(); n = 0; next }
		{ sub(/^[ \t]*[0-9a-f]+ /, ""); sub(/\+0x[0-9a-f]+$/, ""); sub(/ \(inlined\)$/, "")
		  f[n++] = $0 }
		function emit(  s, i) { s = comm; for (i = n - 1; i >= 0; i--) s = s ";" f[i]; c[s]++ }
		END { if (n) emit(); for (s in c) print s, c[s] }'
}
# % of the samples in function L (the innermost frame matching L: inlined callees may follow)
# whose line is in [lo, hi]
lines_ok() { # folded regex file-pattern lo hi
	awk -v l="$2" -v fp="$3" -v lo="$4" -v hi="$5" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
		k = split(s, fr, ";"); f = ""; for (i = k; i > 0; i--) if (fr[i] ~ l) { f = fr[i]; break }
		if (f == "") next
		t += n; if (match(f, fp ":[0-9]+\\)$")) { ln = substr(f, RSTART, RLENGTH)
		sub(/^.*:/, "", ln); sub(/\)$/, "", ln); if (ln + 0 >= lo && ln + 0 <= hi) ok += n } }
		END { if (t) printf "%.0f\n", 100 * ok / t; else print "-" }' "$1"
}

# name | command | A | B | truth A | truth B | named regex (A chain) | named regex (B) | perf mode |
#   leaf regex | file pattern | first line pattern of the leaf
row() {
	name=$1 cmd=$2 ra=$3 rb=$4 ta=$5 tb=$6 na=$7 nb=$8 mode=$9
	shift 9
	leaf=$1 fpat=$2 lpat=$3 lsrc=$4
	: > "$TMP/s"; : > "$TMP/p"; : > "$TMP/l"; : > "$TMP/t"; sn=yes pn=yes
	for r in $(seq "$RUNS"); do
		# shellcheck disable=SC2086
		"$SCORCH" record -q -F "$HZ" -o "$TMP/$name.s.folded" -- $cmd "$SECS" "$TMP/$name.truth" \
			> /dev/null 2>&1 || { echo "| $name | scorch failed |"; return; }
		truth=$(truth_of "$TMP/$name.truth" "$ta" "$tb")
		echo "$truth" >> "$TMP/t"
		s=$(share_of "$TMP/$name.s.folded" "$ra" "$rb")
		awk -v a="$s" -v t="$truth" 'BEGIN { d = a - t; print (d < 0 ? -d : d) }' >> "$TMP/s"
		grep -Eq "$na" "$TMP/$name.s.folded" && grep -Eq "$nb" "$TMP/$name.s.folded" || sn=no
		# shellcheck disable=SC2086
		perf record -q -F "$HZ" $mode -o "$TMP/perf.data" -- $cmd "$SECS" "$TMP/$name.ptruth" \
			> /dev/null 2>&1
		perf_folded "$TMP/perf.data" > "$TMP/$name.p.folded"
		ptruth=$(truth_of "$TMP/$name.ptruth" "$ta" "$tb")
		p=$(share_of "$TMP/$name.p.folded" "$ra" "$rb")
		awk -v a="$p" -v t="$ptruth" 'BEGIN { if (a == "-") print 100; else { d = a - t; print (d < 0 ? -d : d) } }' >> "$TMP/p"
		grep -Eq "$na" "$TMP/$name.p.folded" && grep -Eq "$nb" "$TMP/$name.p.folded" || pn=no
		if [ -n "$lsrc" ]; then
			# shellcheck disable=SC2086
			"$SCORCH" record -q -F "$HZ" --lines -o "$TMP/$name.l.folded" -- $cmd "$SECS" \
				> /dev/null 2>&1
			set -- $(fn_lines "$lsrc" "$lpat")
			lines_ok "$TMP/$name.l.folded" "$leaf" "$fpat" "$1" "$2" >> "$TMP/l"
		fi
	done
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$(median < "$TMP/t")" \
		"$(median < "$TMP/s")" "$sn" "$(median < "$TMP/p")" "$pn" \
		"$( [ -n "$lsrc" ] && echo "$(median < "$TMP/l")%" || echo -)"
}

echo "| workload | truth: A's share % | scorch error (pts) | scorch names right | perf error (pts) | perf names right | scorch lines in the right function |"
echo "|---|---|---|---|---|---|---|"
row "C -O2, no frame pointers" "$TMP/c" 'work_a' 'work_b' work_a work_b \
	'work_a;leaf_a( [0-9]+$|;)' 'work_b;mix( [0-9]+$|;)' "--call-graph dwarf" \
	'^leaf_a ' 'split.c' 'unsigned long leaf_a(' tests/helpers/sym/split.c
row "C++ stripped + MiniDebugInfo" "$TMP/cc" 'work_a\(' 'work_b\(' work_a work_b \
	'work_a\(int\);leaf_a\(unsigned long\)( [0-9]+$|;)' 'work_b\(int\)( [0-9]+$|;)' "--call-graph dwarf" \
	'' '' '' ''
[ -x "$TMP/rs" ] && row "Rust release (LLD)" "$TMP/rs" 'work_a' 'work_b' work_a work_b \
	'split::work_a;split::leaf_a( [0-9]+$|;)' 'split::work_b( [0-9]+$|;)' "--call-graph dwarf" \
	'^split::leaf_a ' 'split.rs' 'fn leaf_a(' tests/helpers/sym/split.rs
row "Go" "$TMP/go_normal" 'main\.spinA' 'main\.spinB' main.spinA main.spinB \
	'main.spinA;main.leafA( [0-9]+$|;)' 'main.spinB;main.hot( [0-9]+$|;)' "-g" \
	'^main.leafA ' 'spin.go' 'func leafA(' tests/helpers/go/spin.go
row "Go stripped" "$TMP/go_stripped" 'main\.spinA' 'main\.spinB' main.spinA main.spinB \
	'main.spinA;main.leafA( [0-9]+$|;)' 'main.spinB;main.hot( [0-9]+$|;)' "-g" \
	'^main.leafA ' 'spin.go' 'func leafA(' tests/helpers/go/spin.go
touch "$TMP/before"
cp tests/helpers/sym/split.js "$TMP/"
# run in $TMP: --perf-basic-prof also leaves V8 logs in the working directory
printf '#!/bin/sh\ncd "%s" && exec node --perf-basic-prof split.js "$@"\n' "$TMP" > "$TMP/node_split"
chmod +x "$TMP/node_split"
row "Node --perf-basic-prof" "$TMP/node_split" 'workA' 'workB' \
	workA workB 'workA' 'workB' "-g" '' '' '' ''
find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$TMP/before" -exec grep -l 'split.js' {} + 2>/dev/null |
	xargs -r rm -f
