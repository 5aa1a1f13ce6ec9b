<?php
// stack.php: a PHP program with a known stack for the unit tests (tests/unit/test_php.c):
//   {main} -> driver -> Worker::outer -> Worker::inner (spins, calling intdiv)
// Prints "ready" once the stack is up.
class Worker
{
    public function inner()
    {
        echo "ready\n";
        fflush(STDOUT);
        $s = 0;
        for ($i = 0; ; $i++) { $s += intdiv($i, 3); } // SPIN
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
