#!/bin/sh
# php_stacks.sh: PHP stacks end to end, under Debian's php 8.2: profiles
# tests/helpers/php/accuracy.php (a known CPU split measured by the workload itself: pure PHP 3
# frames deep, pure PHP under 10 levels of recursion, time inside gzcompress) with the CLI, the
# CLI with opcache's tracing JIT, and as a php-fpm request (tests/helpers/php/fpm.php through a
# FastCGI client), and checks (tests/helpers/runtimes/check_accuracy.py) the split per function
# within 2 points, the hot lines, libz's frames above the PHP frame that called them, the 10
# recursive frames, that >= 99% of the stacks reach {main}, and that >= 99% of the samples taken
# while PHP code runs carry their PHP frames with no execute_ex left over; then the script label.
# The JIT run starts its work 0.5 s in: samples in JIT code taken before the unwinder has the
# process's tables (its first ~0.1-0.3 s, 42 libraries here) are unwound in user space, which
# cannot step over JIT code yet (docs/limits.md); the test measures the steady state.
set -u
cd "$(dirname "$0")/../.."
. tests/integration/lib.inc
need_bpf
PHP=$(command -v php || true)
[ -n "$PHP" ] || { echo "SKIP: php is not installed (scripts/install-deps.sh installs php-cli)"; exit 0; }
CHECK="python3 tests/helpers/runtimes/check_accuracy.py"
NATIVE='c_zlib:^(deflate|adler32.*|zlib\.so.*|libz\.so.*)$'
JIT="-d opcache.enable_cli=1 -d opcache.jit_buffer_size=64M -d opcache.jit=tracing"
failed=0

check() { # label folded truth
	res=$($CHECK "$2" "$3" --root "{main}" --vm '^execute_ex$' --deep deep:10 --native "$NATIVE")
	echo "$1: $res"
	case "$res" in ok*) return 0 ;; esac
	return 1
}

for mode in cli jit; do
	opt=""; delay=0
	[ $mode = jit ] && { opt=$JIT; delay=500; }
	ok=0
	for try in 1 2; do
		rm -f "$TMP/out.folded" "$TMP/truth"
		if ! ACCURACY_DELAY_MS=$delay timeout 60 $SCORCH record --lines -F 997 -o "$TMP/out.folded" -- \
			"$PHP" $opt tests/helpers/php/accuracy.php 4 "$TMP/truth" > "$TMP/log" 2>&1; then
			echo "$mode: scorch record failed:"; cat "$TMP/log"
			continue
		fi
		check "$mode (try $try)" "$TMP/out.folded" "$TMP/truth" && { ok=1; break; }
	done
	[ $ok = 1 ] || failed=$((failed + 1))
done

FPM=$(ls /usr/sbin/php-fpm* 2>/dev/null | head -1)
if [ -z "$FPM" ]; then
	echo "skipped: php-fpm is not installed"
else
	ok=0
	for try in 1 2; do
		rm -f "$TMP/fpm.sock" "$TMP/fpm.pid" "$TMP/fpm.folded" "$TMP/truth"
		cat > "$TMP/fpm.conf" <<CONF
[global]
error_log = $TMP/fpm.log
pid = $TMP/fpm.pid
daemonize = no
[www]
listen = $TMP/fpm.sock
pm = static
pm.max_children = 1
clear_env = no
CONF
		timeout 60 $SCORCH record --lines -F 997 -o "$TMP/fpm.folded" -- "$FPM" -R -F -y "$TMP/fpm.conf" \
			> "$TMP/fpmrec.log" 2>&1 &
		rec=$!
		for i in $(seq 100); do [ -S "$TMP/fpm.sock" ] && break; sleep 0.1; done
		python3 tests/helpers/php/fcgi_request.py "$TMP/fpm.sock" "$PWD/tests/helpers/php/fpm.php" \
			SECS=4 TRUTH="$TMP/truth" > "$TMP/resp" 2>&1 || { echo "fpm request failed"; cat "$TMP/resp"; }
		[ -f "$TMP/fpm.pid" ] && kill -TERM "$(cat "$TMP/fpm.pid")" 2>/dev/null
		wait $rec
		if [ -s "$TMP/truth" ] && check "fpm (try $try)" "$TMP/fpm.folded" "$TMP/truth"; then
			ok=1
			break
		fi
		cat "$TMP/fpmrec.log"
	done
	[ $ok = 1 ] || failed=$((failed + 1))
fi

# The script label names the service (pprof sample label script=.../accuracy.php).
timeout 60 $SCORCH record -F 199 -o "$TMP/out.pb.gz" -- "$PHP" tests/helpers/php/accuracy.php 1 \
	> "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "scorch record to pprof failed"; }
gzip -dc "$TMP/out.pb.gz" | grep -a -q "tests/helpers/php/accuracy.php" || fail "no script label"
echo "ok: script label"
[ $failed = 0 ]
