<?php
// excimer_folded.php: runs a PHP script under excimer (Debian's php-excimer, CPU-time sampling)
// and writes its samples as folded lines with frames "name (file:line)", root first, for
// tests/helpers/runtimes/check_accuracy.py. Internal functions have no frame of their own in
// excimer's traces. Usage: EX_OUT=out.folded [EX_PERIOD=seconds] php excimer_folded.php SCRIPT ARGS...
$out = getenv('EX_OUT');
$prof = new ExcimerProfiler();
$prof->setEventType(EXCIMER_CPU);
$prof->setPeriod((float)(getenv('EX_PERIOD') ?: 0.002));
$prof->start();
register_shutdown_function(function () use ($prof, $out) {
    $prof->stop();
    $lines = [];
    foreach ($prof->getLog() as $entry) {
        $frames = [];
        // getTrace(): newest first; each frame's line is where it was when sampled
        foreach (array_reverse($entry->getTrace()) as $f) {
            $name = isset($f['function'])
                ? (isset($f['class']) ? $f['class'] . '::' . $f['function'] : $f['function'])
                : '{main}';
            $frames[] = sprintf('%s (%s:%d)', $name, $f['file'] ?? '?', $f['line'] ?? 0);
        }
        $key = 'php;' . implode(';', $frames);
        $lines[$key] = ($lines[$key] ?? 0) + $entry->getEventCount();
    }
    $text = '';
    foreach ($lines as $k => $n) {
        $text .= "$k $n\n";
    }
    file_put_contents($out, $text);
});
$script = $argv[1];
$argv = array_slice($argv, 1);
$argc = count($argv);
require $script;
