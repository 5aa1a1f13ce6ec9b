#!/bin/sh
# perl_stacks.sh: Perl stacks end to end, under Debian's perl (5.36, threaded): profiles
# tests/helpers/perl/accuracy.pl (a known CPU split measured by the workload itself: pure Perl 3
# frames deep, pure Perl under 10 levels of recursion, time inside Compress::Zlib::compress) and
# checks (tests/helpers/runtimes/check_accuracy.py) the split per sub within 2 points, the hot
# lines, the XS module's and libz's native frames above the Perl frames that called them, the 10
# recursive frames, that >= 99% of the stacks reach <main>, and that >= 99% of the samples taken
# while Perl code runs carry their Perl frames with no Perl_runops_standard left over; then the
# script label; then Perl threads and the regex engine (tests/helpers/perl/threads.pl).
set -u
cd "$(dirname "$0")/../.."
. tests/integration/lib.inc
need_bpf
PERL=$(command -v perl || true)
[ -n "$PERL" ] || { echo "SKIP: perl is not installed"; exit 0; }
"$PERL" -MCompress::Zlib -e 1 2>/dev/null || { echo "SKIP: perl has no Compress::Zlib"; exit 0; }
ok=0
for try in 1 2; do
	rm -f "$TMP/out.folded" "$TMP/truth"
	if ! timeout 60 $SCORCH record --lines -F 997 -o "$TMP/out.folded" -- \
		"$PERL" tests/helpers/perl/accuracy.pl 4 "$TMP/truth" > "$TMP/log" 2>&1; then
		echo "scorch record failed:"; cat "$TMP/log"
		continue
	fi
	res=$(python3 tests/helpers/runtimes/check_accuracy.py "$TMP/out.folded" "$TMP/truth" \
		--root "<main>" --vm '^Perl_runops_standard$' --deep deep:10 \
		--native 'c_zlib:^(deflate|adler32.*|Zlib\.so.*|libz\.so.*)$')
	echo "try $try: $res"
	case "$res" in ok*) ok=1; break ;; esac
done
[ $ok = 1 ] || fail "the Perl profile does not match the workload's split"
# The script label names the service (pprof sample label script=.../accuracy.pl).
timeout 60 $SCORCH record -F 199 -o "$TMP/out.pb.gz" -- "$PERL" tests/helpers/perl/accuracy.pl 1 \
	> "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "scorch record to pprof failed"; }
gzip -dc "$TMP/out.pb.gz" | grep -a -q "tests/helpers/perl/accuracy.pl" || fail "no script label"
echo "ok: script label"
# Threads and the regex engine: every thread's samples carry its Perl frames (each thread has an
# interpreter of its own, found through PL_thr_key), and the regex engine's native frames sit
# above the sub that matches.
timeout 60 $SCORCH record --lines -F 499 -o "$TMP/thr.folded" -- "$PERL" tests/helpers/perl/threads.pl 1 \
	> "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "scorch record of threads.pl failed"; }
res=$(awk '{ n = $NF }
	/;start_thread( \([^)]*\))?;/ { thr += n; if ($0 ~ /;main::worker \([^)]*threads\.pl:[0-9]+\);Threaded::spin \(/) ok += n }
	/;Threaded::match \(/ { m += n; if ($0 ~ /<main> \([^)]*threads\.pl:[0-9]+\);Threaded::match \([^)]*\);Perl_pp_match;Perl_regexec_flags/) re += n }
	END { printf "%d %d %d %d\n", thr, ok, m, re }' "$TMP/thr.folded")
set -- $res
echo "threads: $2 of $1 thread samples in main::worker;Threaded::spin, $4 of $3 Threaded::match samples in the regex engine above it"
[ "$1" -gt 0 ] && [ $(( $2 * 100 )) -ge $(( $1 * 95 )) ] || fail "thread samples without their Perl frames"
[ "$4" -gt 0 ] || fail "no regex engine frames above Threaded::match"
echo "ok: threads, regex engine"
