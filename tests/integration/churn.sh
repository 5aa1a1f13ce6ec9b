#!/bin/sh
# churn: the agent reads processes that exit and memory that is unmapped or truncated while it
# reads them. While `scorch record -a` runs for 8 s:
#   - hundreds of short processes dlopen()/dlclose() libraries and exit (helpers/churn spawn);
#   - a process maps a copy of libz that is then truncated on disk to one page (its headers
#     stay readable, everything after them gives EIO), another maps a copy truncated to 0
#     bytes, a third maps a copy that is deleted;
#   - `scorch record -p` is pointed at the truncated-library process afterwards.
# scorch must exit 0 with a valid profile (it converts) holding samples of the churn, and
# print no crash or sanitizer report.
. tests/integration/lib.inc
need_bpf
[ -x "$B/helpers/churn" ] || fail "$B/helpers/churn is missing (make B=$B test-build)"
LIBZ=$(for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
	[ -f "$d/libz.so.1" ] && { echo "$d/libz.so.1"; break; }; done)
[ -n "$LIBZ" ] || { echo "SKIP: no libz.so.1 to copy"; exit 0; }

crashed() { # FILE: 0 when FILE holds a crash or sanitizer report
	grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error|Segmentation fault|SIGSEGV|SIGBUS|BUG|core dumped|fatal:' "$1"
}

for n in half zero gone; do cp "$LIBZ" "$TMP/libz_$n.so"; done
pids=""
for n in half zero gone; do
	# (they live until the test kills them: their profiling must not race their end)
	"$B/helpers/churn" mapped "$TMP/libz_$n.so" 300 > "$TMP/mapped_$n.out" &
	pids="$pids $!"
	kill_at_exit $!
done
for n in half zero gone; do
	wait_for 60 "ready from churn mapped $n" grep -q ready "$TMP/mapped_$n.out"
done

$SCORCH record -q -a -d 120 -o "$TMP/x.pb.gz" 2> "$TMP/record.err" &
rec=$!
kill_at_exit $rec
wait_for 60 "sampling by record -a" sampling $rec
truncate -s 4096 "$TMP/libz_half.so"
truncate -s 0 "$TMP/libz_zero.so"
rm -f "$TMP/libz_gone.so"
"$B/helpers/churn" spawn 6 16 > "$TMP/spawn.out" || fail "churn spawn failed"
kill -INT $rec
wait $rec
rc=$?
cat "$TMP/spawn.out"
[ $rc -eq 0 ] || fail "record -a exited $rc: $(tail -5 "$TMP/record.err")"
crashed "$TMP/record.err" && fail "record -a reported a crash: $(head -20 "$TMP/record.err")"
$SCORCH convert "$TMP/x.pb.gz" "$TMP/x.folded" 2> "$TMP/convert.err" ||
	fail "the profile does not convert: $(cat "$TMP/convert.err")"
total=$(total_count "$TMP/x.folded")
churn=$(count_matching "$TMP/x.folded" '^churn;')
echo "record -a: $total samples, $churn in churn processes"
[ "$total" -gt 0 ] || fail "empty profile"
[ "$churn" -gt 0 ] || fail "no samples of the churn processes: $(head -3 "$TMP/x.folded")"

# A process whose mapped library is truncated, profiled from the start.
pid=$(echo $pids | cut -d' ' -f1)
kill -0 "$pid" 2>/dev/null || fail "the truncated-library process died (it must never run the library again)"
$SCORCH record -q -p "$pid" -d 1 -o "$TMP/p.folded" 2> "$TMP/p.err"
rc=$?
[ $rc -eq 0 ] || fail "record -p of the truncated-library process exited $rc: $(tail -5 "$TMP/p.err")"
crashed "$TMP/p.err" && fail "record -p reported a crash: $(head -20 "$TMP/p.err")"
n=$(count_matching "$TMP/p.folded" '^churn;')
echo "record -p (libz truncated under the process): $n samples"
[ "$n" -gt 0 ] || fail "no samples of the truncated-library process"
kill $pids 2>/dev/null
wait 2>/dev/null
echo "ok"
