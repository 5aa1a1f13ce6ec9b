# php_pcre_jit.sh: stacks through PCRE2's JIT code (tests/helpers/php/regex.php: a loop of
# preg_match_all(), pcre.jit=1 as PHP has it by default). The JIT code has no unwind
# information; the unwinder goes through it from where libpcre2 calls it (docs/unwinding.md,
# "PCRE2's JIT code"), and the PHP frames must outlive any native gap (the walker's
# RT_OP_RESCUE, docs/runtimes.md):
#   - >= 99% of the samples of the php process outside its start and end carry the script's
#     PHP frames, and no sample ends in [unwind error] or [stack switch] without them;
#   - >= 99% of its samples in the JIT code are whole: the native frames from _start through
#     php_pcre_match_impl are there, and the JIT frame is named [pcre2 jit];
#   - grep -P (PCRE2 without PHP, through jit_machine_stack_exec) over a generated file: >= 97%
#     of its samples in the JIT code are whole down to __libc_start_main (see below).
. tests/integration/lib.inc
need_bpf
PHP=$(command -v php || true)
[ -n "$PHP" ] || { echo "SKIP: php is not installed (scripts/install-deps.sh installs php-cli)"; exit 0; }
[ "$("$PHP" -r 'echo ini_get("pcre.jit");')" = 1 ] || { echo "SKIP: php has no PCRE JIT"; exit 0; }

$SCORCH record -F 499 -o "$TMP/out.folded" -- "$PHP" -d pcre.jit=1 tests/helpers/php/regex.php 3 \
	> "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "scorch record failed"; }
grep -E '^php[0-9.]*;' "$TMP/out.folded" |
	grep -Ev 'php_module_startup|php_module_shutdown|php_request_shutdown|_dl_start|_dl_fini|;exit;' \
	> "$TMP/php" || true
all=$(total_count "$TMP/php")
php=$(count_matching "$TMP/php" ';run \(|;run;')
marked=$(count_matching "$TMP/php" '\[unwind error\]|\[stack switch\]')
# (without PHP frames: the gap is in the script's regex code only if [pcre2 jit] or pcre2's own
# frames are in the stack; an exit-time destructor of an extension's library, e.g. libicuio's
# __cxa_finalize or OpenSSL's cleanup, runs after the script and has none to keep)
bare=$(grep -E '\[unwind error\]|\[stack switch\]' "$TMP/php" | grep -Ev ';tokenize( |;)' |
	grep -Ec 'pcre2|\[pcre2 jit\]|preg_' || true)
echo "php: $php of $all samples with PHP frames, $marked through a native gap, $bare of those in regex code without PHP frames"
[ "$all" -ge 100 ] || fail "only $all samples of php"
[ $((php * 100)) -ge $((all * 99)) ] && [ "$bare" = 0 ] ||
	{ grep -v ';run' "$TMP/php" | sort -t' ' -k2 -rn | head -5 | cut -c1-400; fail "PHP frames lost"; }

# the JIT code's samples: [pcre2 jit] when the unwind went through it, an [unknown] frame
# (anonymous memory) right after [unwind error] when it did not
jit=$(count_matching "$TMP/php" '\[pcre2 jit\]|\[unwind error\];\[unknown\]')
whole=$(count_matching "$TMP/php" \
	'^php[0-9.]*;_start;__libc_start_main;.*;php_pcre_match_impl;pcre2_jit_match_8;\[pcre2 jit\]')
echo "php: $whole of $jit samples in the JIT code with whole native stacks"
[ "$jit" -ge 50 ] || fail "only $jit samples in the JIT code"
[ $((whole * 100)) -ge $((jit * 99)) ] ||
	{ grep -E '\[unknown\]|\[pcre2 jit\]' "$TMP/php" | grep -Ev '_start;.*;\[pcre2 jit\]' |
		sort -t' ' -k2 -rn | head -5 | cut -c1-400; fail "stacks through the JIT code broken"; }

if echo ab | grep -qP 'a(?=b)' 2>/dev/null && ldd "$(command -v grep)" | grep -q libpcre2-8; then
	awk 'BEGIN { srand(1); split("alpha beta gamma delta_x foo_bar baz qux12 z9", w, " ");
		for (i = 0; i < 400000; i++) { l = "";
			for (j = 0; j < 8; j++) l = l w[int(rand() * 8) + 1] " ";
			print l i "." i % 97 } }' > "$TMP/big.txt"
	# one process over the file 8 times (not /dev/null: grep stops at the first match there)
	$SCORCH record -F 499 -o "$TMP/grep.folded" -- grep -cP '(\w+) \w+ \1 ' \
		"$TMP/big.txt" "$TMP/big.txt" "$TMP/big.txt" "$TMP/big.txt" "$TMP/big.txt" \
		"$TMP/big.txt" "$TMP/big.txt" "$TMP/big.txt" \
		> "$TMP/glog" 2>&1 || { cat "$TMP/glog"; fail "scorch record of grep -P failed"; }
	grep -E '^grep;' "$TMP/grep.folded" > "$TMP/grep" || true
	gjit=$(count_matching "$TMP/grep" '\[pcre2 jit\]|\[unwind error\];\[unknown\]')
	gwhole=$(count_matching "$TMP/grep" \
		'^grep;[^;]*;__libc_start_main;.*;pcre2_jit_match_8;([^;]*;)?\[pcre2 jit\]')
	echo "grep -P: $gwhole of $gjit samples in the JIT code with whole native stacks"
	[ "$gjit" -ge 100 ] || fail "only $gjit samples of grep -P in the JIT code"
	# 97%, not 99: the first samples of the new process, before user space published its
	# tables, are stack snapshots, and their copy stops at the pages of the 32 KiB stack that
	# jit_machine_stack_exec() keeps in its frame which were never touched (docs/limits.md)
	[ $((gwhole * 100)) -ge $((gjit * 97)) ] ||
		{ grep -E '\[unknown\]|\[pcre2 jit\]' "$TMP/grep" | sort -t' ' -k2 -rn | head -5 |
			cut -c1-400;
		  fail "grep -P stacks through the JIT code broken"; }
else
	echo "grep has no -P with libpcre2-8: its part is not run"
fi
echo "php pcre jit ok"
