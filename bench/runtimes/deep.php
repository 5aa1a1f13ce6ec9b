<?php
// deep.php: 50 PHP frames ({main}, 48 levels of deep, spin) for the walker's cost per sample.
function spin($n)
{
    $s = 0;
    for ($i = 0; $i < $n; $i++) {
        $s += $i;
    }
    return $s;
}

function deep($n, $end)
{
    if ($n > 1) {
        return deep($n - 1, $end);
    }
    while (microtime(true) < $end) {
        spin(1000);
    }
}

deep(48, microtime(true) + (float)$argv[1]);
