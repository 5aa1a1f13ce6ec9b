<?php
// regex.php: a tokenizer of preg_match_all() calls in a loop for ARGV[1] seconds: most of the
// time is spent in PCRE2's JIT code (pcre.jit=1, PHP's default), which has no unwind
// information (tests/integration/php_pcre_jit.sh).
function tokenize($s) {
	$n = 0;
	for ($i = 0; $i < 400; $i++) {
		if (preg_match_all('/(?:[a-z_][a-z0-9_]*|\d+(?:\.\d+)?|"(?:[^"\\\\]|\\\\.)*")\s*(?=[,;)(=+*-])/i', $s, $m))
			$n += count($m[0]);
	}
	return $n;
}
function run($secs) {
	$s = str_repeat('foo_bar = baz(12.5, "qu\"x", alpha_beta) + gamma * 42; ', 40);
	$end = microtime(true) + $secs;
	$t = 0;
	while (microtime(true) < $end)
		$t += tokenize($s);
	return $t;
}
echo run((float)($argv[1] ?? 3)), "\n";
