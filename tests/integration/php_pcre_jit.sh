# php_pcre_jit.sh: PHP stacks through PCRE2's JIT code (tests/helpers/php/regex.php: a loop of
# preg_match_all(), pcre.jit=1 as PHP has it by default). The JIT code has no unwind
# information and the native unwind may stop in it; the PHP frames must outlive that (the
# walker's RT_OP_RESCUE, docs/runtimes.md): >= 99% of the samples of the php process outside
# its start and end carry the script's PHP frames, and no sample ends in [unwind error] or
# [stack switch] without them.
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
bare=$(grep -E '\[unwind error\]|\[stack switch\]' "$TMP/php" | grep -Evc ';tokenize( |;)' || true)
echo "php: $php of $all samples with PHP frames, $marked through a native gap, $bare of those without PHP frames"
[ "$all" -ge 100 ] || fail "only $all samples of php"
[ $((php * 100)) -ge $((all * 99)) ] && [ "$bare" = 0 ] ||
	{ grep -v ';run' "$TMP/php" | sort -t' ' -k2 -rn | head -5 | cut -c1-400; fail "PHP frames lost"; }
echo "php pcre jit ok"
