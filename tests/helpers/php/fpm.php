<?php
// fpm.php: the accuracy workload as an FPM request: SECS and TRUTH come as FastCGI params.
$argv = ['accuracy.php', $_SERVER['SECS'] ?? '3', $_SERVER['TRUTH'] ?? null];
require __DIR__ . '/accuracy.php';
echo "done\n";
