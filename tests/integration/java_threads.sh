#!/bin/sh
# java_threads.sh: samples of Java threads carry their java.lang.Thread names in full, not the
# kernel's 15-byte comm. Records tests/helpers/java/ThreadNames.java (threads named by their
# constructor, renamed from outside after they started, renamed by themselves halfway, and a
# non-ASCII name) and checks the folded output's roots: each thread's samples are under its
# full name (>= 90% of them; the rest may carry the comm for the moments before a name is
# read), the self-renamed thread under both of its names (the new one within a second or so),
# and no 15-byte cut of those names left as a root. SKIP when BPF or a JDK (java, javac) is
# missing.
. tests/integration/lib.inc
need_bpf
for t in java javac; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: $t is not installed (openjdk-17-jdk-headless)"; exit 0; }
done
javac -d "$TMP/classes" tests/helpers/java/ThreadNames.java || fail "javac ThreadNames.java"

timeout 60 $SCORCH record -F 299 -o "$TMP/out.folded" --stats -- \
	java -XX:+UseSerialGC -Xmx64m -cp "$TMP/classes" ThreadNames 3 > "$TMP/jvm.out" 2> "$TMP/record.log" ||
	{ cat "$TMP/record.log"; fail "scorch record failed"; }
grep -q ready "$TMP/jvm.out" || fail "the workload did not start its threads"
grep '^hotspot:' "$TMP/record.log" | tr ' ' '\n' | grep '^thread_'

# samples per root (the thread's name)
awk '{ n = $NF; sub(/ [0-9]+$/, ""); split($0, f, ";"); s[f[1]] += n }
     END { for (k in s) print s[k] "\t" k }' "$TMP/out.folded" | sort -rn > "$TMP/roots"
cat "$TMP/roots"
count() { awk -F '\t' -v k="$1" '$2 == k { print $1; f = 1 } END { if (!f) print 0 }' "$TMP/roots"; }

# full name vs what comm would have said: most samples carry the full name
check() { # full name, comm of the same thread, minimum samples under the full name
	full=$(count "$1"); cut=$(count "$2")
	echo "'$1': $full samples, '$2': $cut"
	[ "$full" -ge "$3" ] || fail "'$1' has $full samples (want >= $3)"
	[ $((full * 10)) -ge $(((full + cut) * 9)) ] ||
		fail "'$1': only $full of $((full + cut)) samples carry the thread's name"
}
check "worker-with-a-very-long-name-alpha" "worker-with-a-v" 10
check "renamed-from-outside-beta-long" "Thread-0" 10
check "unicode-名前-δοκιμή-delta" "unicode-名前-" 10
# renamed by itself halfway: both names, comm the same 15 bytes for both
one=$(count "phase-one-of-a-renamed-thread-gamma"); two=$(count "phase-two-of-a-renamed-thread-gamma")
echo "gamma: phase one $one, phase two $two, comm $(count phase-one-of-a-) / $(count phase-two-of-a-)"
[ "$one" -ge 5 ] && [ "$two" -ge 5 ] || fail "the self-renamed thread does not show both names ($one, $two)"
# a 15-byte cut of a name we know must not be a root of its own beyond a few samples
for c in worker-with-a-v phase-one-of-a- phase-two-of-a-; do
	n=$(count $c); [ "$n" -le 10 ] || fail "$n samples still under the comm '$c'"
done
echo "ok"
