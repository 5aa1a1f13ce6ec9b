#!/bin/sh
# runtime_accuracy.sh: the Ruby, PHP and Perl sections of docs/benchmarks.md.
#   1. accuracy matrix: each runtime's accuracy workload (tests/helpers/<rt>/accuracy.*: a known
#      CPU split measured by the workload itself, a hot function under 10 levels of recursion,
#      one inside a native zlib call) profiled by scorch at 499 Hz, and by the runtime's own
#      profiler where Debian packages one (Ruby: stackprof, PHP: excimer, Perl: Devel::NYTProf,
#      a tracing profiler, in its sub-only mode on the thread's CPU clock), side by side; the median
#      over RUNS runs of: worst share error vs truth (points), % of stacks complete to the
#      program's root frame, hot lines right, % of the zlib-calling function's samples with the
#      library's native frames above it, % of the samples while the runtime runs code that
#      carry its frames (tests/helpers/runtimes/check_accuracy.py).
#   2. BPF cost of the walker per sample with 50 frames (the walker's own counters), with its
#      frames only (SCORCH_<RT>=only) and interleaved with the native unwind.
# Needs root. Usage: [SCORCH=path] sh bench/runtime_accuracy.sh [RUNS] [SECONDS] [RUNTIMES]
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-3}
SECS=${2:-4}
WHICH=${3:-ruby php perl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
SCORCH=${SCORCH:-./scorch}
[ -x "$SCORCH" ] || { echo "build ./scorch first"; exit 1; }
CHECK="python3 tests/helpers/runtimes/check_accuracy.py"
NATIVE='^(deflate|adler32.*|zlib\.so.*|libz\.so.*|Zlib\.so.*|compress2?)$'

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'; }
fig() { sed -n "s/.*[ ]$1=\([0-9.]*\).*/\1/p"; }
row() { # label figures-file
	e=$(fig max_err < "$2" | median); c=$(fig complete < "$2" | median)
	l=$(sed -n 's/.*lines_ok=\([0-9]*\/[0-9]*\).*/\1/p' "$2" | sort | head -1)
	nt=$(fig native < "$2" | median); cv=$(fig coverage < "$2" | median)
	echo "| $1 | $e | $c% | ${l:--} | $nt% | $cv% |"
}

accuracy() { # runtime label root vm check-args... -- command...
	rt=$1; label=$2; root=$3; vm=$4; shift 4
	extra=""
	while [ "$1" != "--" ]; do extra="$extra $1"; shift; done
	shift
	: > "$tmp/s"
	for r in $(seq "$RUNS"); do
		timeout 120 "$SCORCH" record --lines -F 499 -o "$tmp/o.folded" -- "$@" "$SECS" "$tmp/t" \
			> /dev/null 2>&1 &&
			$CHECK "$tmp/o.folded" "$tmp/t" --root "$root" --vm "$vm" --deep deep:10 \
				--native "c_zlib:$NATIVE" $extra | grep FIGURES >> "$tmp/s"
	done
	row "$label (scorch)" "$tmp/s"
}

cost() { # runtime label stats-prefix command...
	rt=$1; label=$2; prefix=$3; shift 3
	upper=$(echo "$rt" | tr a-z A-Z)
	for mode in on only; do
		: > "$tmp/c"
		for r in $(seq "$RUNS"); do
			env "SCORCH_$upper=$mode" timeout 60 "$SCORCH" record --stats -F 499 \
				-o "$tmp/d.folded" -- "$@" 3 2> "$tmp/stats" > /dev/null
			line=$(grep "^$prefix:" "$tmp/stats")
			ns=$(echo "$line" | fig bpf_walk_ns); s=$(echo "$line" | fig bpf_samples)
			fr=$(echo "$line" | fig bpf_frames)
			[ -n "$s" ] && [ "$s" -gt 0 ] && echo "$ns $s $fr" | awk '{printf "%d %.1f %.1f\n", $1/$2, $3/$2, $1/$3}' >> "$tmp/c"
		done
		ns=$(awk '{print $1}' "$tmp/c" | median); fps=$(awk '{print $2}' "$tmp/c" | median)
		nf=$(awk '{print $3}' "$tmp/c" | median)
		echo "| $label | $mode | $ns | $nf | $fps |"
	done
}

for rt in $WHICH; do
	case $rt in
	ruby)
		command -v ruby > /dev/null || { echo "ruby: not installed"; continue; }
		ver=$(ruby -e 'print RUBY_VERSION')
		echo "Ruby $ver: accuracy (median of $RUNS runs of $SECS s)"
		echo "| profiler | worst share error (pts) | stacks to <main> | hot lines | native above c_zlib | samples with their Ruby frames |"
		echo "|---|---|---|---|---|---|"
		accuracy ruby "ruby $ver" "<main>" '^rb_vm_exec$' -- ruby tests/helpers/ruby/accuracy.rb
		accuracy ruby "ruby $ver --yjit" "<main>" '^rb_vm_exec$' --no-lines -- \
			ruby --yjit tests/helpers/ruby/accuracy.rb
		if ruby -e 'require "stackprof"' 2> /dev/null; then
			: > "$tmp/s"
			for r in $(seq "$RUNS"); do
				SP_OUT="$tmp/sp.folded" SP_INTERVAL=2000 timeout 120 ruby \
					bench/runtimes/stackprof_folded.rb tests/helpers/ruby/accuracy.rb \
					"$SECS" "$tmp/t" > /dev/null 2>&1 &&
					$CHECK "$tmp/sp.folded" "$tmp/t" --root "<main>" --vm '^rb_vm_exec$' \
						--deep deep:10 --native "c_zlib:$NATIVE" | grep FIGURES >> "$tmp/s"
			done
			row "ruby $ver (stackprof, 500 Hz)" "$tmp/s"
		else
			echo "(stackprof not installed: apt-get install ruby-stackprof)"
		fi
		echo
		echo "Ruby $ver: BPF walker cost, 50 frames (median of $RUNS runs)"
		echo "| runtime | mode | ns per sample | ns per frame | frames per sample |"
		echo "|---|---|---|---|---|"
		cost ruby "ruby $ver" ruby ruby bench/runtimes/deep.rb
		echo
		;;
	php)
		command -v php > /dev/null || { echo "php: not installed"; continue; }
		ver=$(php -r 'echo PHP_VERSION;')
		echo "PHP $ver: accuracy (median of $RUNS runs of $SECS s)"
		echo "| profiler | worst share error (pts) | stacks to {main} | hot lines | native above c_zlib | samples with their PHP frames |"
		echo "|---|---|---|---|---|---|"
		accuracy php "php $ver" "{main}" '^execute_ex$' -- php tests/helpers/php/accuracy.php
		ACCURACY_DELAY_MS=500 accuracy php "php $ver, opcache tracing JIT" "{main}" \
			'^execute_ex$' -- php -d opcache.enable_cli=1 -d opcache.jit_buffer_size=64M \
			-d opcache.jit=tracing tests/helpers/php/accuracy.php
		unset ACCURACY_DELAY_MS
		if php -r 'exit(class_exists("ExcimerProfiler") ? 0 : 1);' 2> /dev/null; then
			: > "$tmp/s"
			for r in $(seq "$RUNS"); do
				EX_OUT="$tmp/ex.folded" EX_PERIOD=0.002 timeout 120 php \
					bench/runtimes/excimer_folded.php tests/helpers/php/accuracy.php \
					"$SECS" "$tmp/t" > /dev/null 2>&1 &&
					$CHECK "$tmp/ex.folded" "$tmp/t" --root "{main}" --vm '^execute_ex$' \
						--deep deep:10 --native "c_zlib:$NATIVE" | grep FIGURES >> "$tmp/s"
			done
			row "php $ver (excimer, 500 Hz)" "$tmp/s"
		else
			echo "(excimer not installed: apt-get install php-excimer)"
		fi
		echo
		echo "PHP $ver: BPF walker cost, 50 frames (median of $RUNS runs)"
		echo "| runtime | mode | ns per sample | ns per frame | frames per sample |"
		echo "|---|---|---|---|---|"
		cost php "php $ver" php php bench/runtimes/deep.php
		echo
		;;
	perl)
		command -v perl > /dev/null || { echo "perl: not installed"; continue; }
		ver=$(perl -e 'printf "%vd", $^V')
		echo "Perl $ver: accuracy (median of $RUNS runs of $SECS s)"
		echo "| profiler | worst share error (pts) | stacks to <main> | hot lines | native above c_zlib | samples with their Perl frames |"
		echo "|---|---|---|---|---|---|"
		accuracy perl "perl $ver" "<main>" '^Perl_runops_standard$' -- \
			perl tests/helpers/perl/accuracy.pl
		if perl -MDevel::NYTProf::Data -e 1 2> /dev/null && command -v nytprofcalls > /dev/null; then
			: > "$tmp/s"
			for r in $(seq "$RUNS"); do
				rm -f "$tmp/ny.out"
				NYTPROF="file=$tmp/ny.out:clock=3:stmts=0" timeout 120 perl -d:NYTProf \
					tests/helpers/perl/accuracy.pl "$SECS" "$tmp/t" > /dev/null 2>&1 &&
					nytprofcalls "$tmp/ny.out" 2> /dev/null |
					perl bench/runtimes/nytprof_folded.pl tests/helpers/perl/accuracy.pl \
						> "$tmp/ny.folded" &&
					$CHECK "$tmp/ny.folded" "$tmp/t" --root "<main>" \
						--vm '^Perl_runops_standard$' --deep deep:10 \
						--native "c_zlib:$NATIVE" | grep FIGURES >> "$tmp/s"
			done
			row "perl $ver (Devel::NYTProf, subs, thread CPU clock)" "$tmp/s"
		else
			echo "(Devel::NYTProf not installed: apt-get install libdevel-nytprof-perl)"
		fi
		echo
		echo "Perl $ver: BPF walker cost, 50 frames (median of $RUNS runs)"
		echo "| runtime | mode | ns per sample | ns per frame | frames per sample |"
		echo "|---|---|---|---|---|"
		cost perl "perl $ver" perl perl bench/runtimes/deep.pl
		echo
		;;
	esac
done
