<?php
// stack.php: a PHP program with a known stack for the unit tests (tests/unit/test_php.c):
//   {main} -> driver -> Worker::outer -> Worker::inner (spins, calling intdiv)
// Prints "ready" from the spinning line itself: every statement after it is on line 12.
class Worker
{
    public function inner()
    {
        $s = 0;
        $said = false;
        // the spin, "ready" printed once from it
        for ($i = 0; ; $i++) { $said = $said || fwrite(STDOUT, "ready\n"); $s += intdiv($i, 3); }
    }

    public static function outer()
    {
        (new Worker())->inner(); // CALL_INNER
    }
}

function driver()
{
    Worker::outer(); // CALL_OUTER
}

driver(); // CALL_DRIVER
