/* walkers.bpf.h: the bodies of the runtime walkers named in runtime.bpf.h's RUNTIME_WALKERS.
 * Included by sampler.bpf.c after unwind_user.bpf.h, whose maps (unw_state_map) the walkers
 * use. One line per runtime. */
#ifndef SCORCH_RUNTIME_WALKERS_BPF_H
#define SCORCH_RUNTIME_WALKERS_BPF_H

#include "runtime/python/python.bpf.h"
#include "runtime/hotspot/hotspot.bpf.h"
#include "runtime/v8/v8.bpf.h"
#include "runtime/ruby/ruby.bpf.h"
#include "runtime/php/php.bpf.h"
#include "runtime/perl/perl.bpf.h"

#endif
