/* php_runtime.h: PHP as a runtime of the framework (runtime/runtime.h): file detection (the
 * php, php-cgi, php-fpm executables, libphp*.so), one instance per PHP process (the php_procs
 * BPF map, the offset check once PHP code runs, opcache's JIT buffer claimed), frame names and
 * lines, and the `script` label (the request's top file). Listed in the table of
 * src/runtime/runtime.c. */
#ifndef SCORCH_RUNTIME_PHP_RUNTIME_H
#define SCORCH_RUNTIME_PHP_RUNTIME_H

#include "runtime/runtime.h"

extern const struct runtime_ops php_runtime_ops;

#endif
