/* ruby_offsets.h: the layouts of CRuby 3.1 - 3.4 on x86-64 (struct rb_offsets, ruby.h). CRuby
 * exports no introspection data: the values come from its headers of each version (vm_core.h,
 * iseq.h, method.h, internal/class.h, include/ruby/internal/core/) and Debian's 3.1 is checked
 * against a live interpreter by the tests. */
#ifndef SCORCH_RUNTIME_RUBY_OFFSETS_H
#define SCORCH_RUNTIME_RUBY_OFFSETS_H

#include <linux/types.h>

#include "runtime/ruby/ruby.h"

/* The table for CRuby major.minor (patch is recorded in out->version): 0, or -ENOTSUP. */
int ruby_offsets_for(unsigned major, unsigned minor, unsigned patch, struct rb_offsets *out);

#endif
