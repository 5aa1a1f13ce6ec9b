<?php
// accuracy.php: a CPU workload with a known split, for the PHP profiling tests and the
// accuracy benchmark. Usage: php accuracy.php SECONDS [TRUTH_FILE]
//   a_work   pure PHP, 3 frames deep                          (target 30% of CPU)
//   b_work   pure PHP, under 10 levels of recursion (deep)    (target 30%)
//   c_zlib   time spent inside gzcompress (native)            (target 40%)
// Each function measures its own CPU time; the real split is written to TRUTH_FILE as
// "name share" lines, with the line numbers of the hot loops ("line name N").
// ACCURACY_DELAY_MS=N waits N ms (no CPU) before the work starts.

class Accuracy
{
    public $spent = ['a_work' => 0.0, 'b_work' => 0.0, 'c_zlib' => 0.0];
    private $data;

    public function __construct()
    {
        $s = '';
        for ($i = 0; $i < (1 << 18); $i++) {
            $s .= chr(($i * 7919) % 251);
        }
        $this->data = $s;
    }

    private static function now()
    {
        $r = getrusage();
        return $r['ru_utime.tv_sec'] + $r['ru_utime.tv_usec'] / 1e6 +
            $r['ru_stime.tv_sec'] + $r['ru_stime.tv_usec'] / 1e6;
    }

    public function a_work($budget)
    {
        $t0 = self::now();
        $s = 0;
        while (self::now() - $t0 < $budget) {
            for ($i = 0; $i < 2000; $i++) {
                $s += $i * $i; // LINE_A
            }
        }
        $this->spent['a_work'] += self::now() - $t0;
        return $s;
    }

    public function b_work($budget)
    {
        $t0 = self::now();
        $s = 0;
        while (self::now() - $t0 < $budget) {
            for ($i = 0; $i < 2000; $i++) {
                $s ^= $i << 3; // LINE_B
            }
        }
        $this->spent['b_work'] += self::now() - $t0;
        return $s;
    }

    public function deep($n, $budget)
    {
        if ($n > 1) {
            return $this->deep($n - 1, $budget);
        }
        return $this->b_work($budget);
    }

    public function c_zlib($budget)
    {
        $t0 = self::now();
        while (self::now() - $t0 < $budget) {
            gzcompress($this->data, 9); // LINE_C
        }
        $this->spent['c_zlib'] += self::now() - $t0;
    }

    public function phase_a()
    {
        return $this->a_work(0.03);
    }

    public function run($seconds)
    {
        $end = microtime(true) + $seconds;
        while (microtime(true) < $end) {
            $this->phase_a();
            $this->deep(10, 0.03);
            $this->c_zlib(0.04);
        }
    }
}

usleep((int)(getenv('ACCURACY_DELAY_MS') ?: 0) * 1000);
$acc = new Accuracy();
$acc->run((float)($argv[1] ?? 3));
if (isset($argv[2])) {
    $total = array_sum($acc->spent);
    $out = '';
    foreach ($acc->spent as $name => $t) {
        $out .= sprintf("%s %.4f\n", $name, $t / $total);
    }
    foreach (file(__FILE__) as $i => $text) {
        foreach (['LINE_A' => 'a_work', 'LINE_B' => 'b_work', 'LINE_C' => 'c_zlib'] as $tag => $name) {
            if (substr(rtrim($text), -strlen('// ' . $tag)) === '// ' . $tag) {
                $out .= sprintf("line %s %d\n", $name, $i + 1);
            }
        }
    }
    file_put_contents($argv[2], $out);
}
