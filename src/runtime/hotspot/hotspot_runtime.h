/* hotspot_runtime.h: the HotSpot JVM as a runtime of the framework (runtime/runtime.h): libjvm
 * detection, one instance per JVM (its tables read from memory, the hs_procs BPF map, the code
 * cache claimed for the walker), Java frame symbolization with inlined methods, and the
 * `main_class` label (the main class or the -jar file, from Arguments::_java_command).
 * Listed in the table of src/runtime/runtime.c. */
#ifndef SCORCH_RUNTIME_HOTSPOT_RUNTIME_H
#define SCORCH_RUNTIME_HOTSPOT_RUNTIME_H

#include "runtime/runtime.h"

extern const struct runtime_ops hotspot_runtime_ops;

#define HOTSPOT_SETUP_RETRY_NS (20 * 1000000ULL) /* a JVM still starting: look again after */
#define HOTSPOT_SETUP_TRIES 1500                 /* ... up to 30 s */
#define HOTSPOT_CACHE_ENTRIES (1u << 16)         /* methods + compiled pcs + stubs cached */

#endif
