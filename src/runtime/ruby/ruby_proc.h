/* ruby_proc.h: finding CRuby in a file and in a running process, and walking its control frames
 * from user space.
 *
 * In two steps, as the runtime framework asks (runtime/runtime.h):
 *   ruby_file_detect()   what the file says, once per file: is it libruby (or a `ruby`
 *                        executable with the VM linked in), its version (the ruby_version
 *                        string), the VM loop (rb_vm_exec, and vm_exec_core: a static function,
 *                        found from rb_vm_exec's calls and the unwind data when the file is
 *                        stripped), the thread-local ruby_current_ec and how it is reached, the
 *                        main ractor, and the global symbol table (ruby_global_symbols: from the
 *                        symbol table, else from the code of rb_id2str, which reads it).
 *   ruby_proc_attach()   what the process says: the offsets of its version, the TLS module id
 *                        of libruby (once the loader relocated it: -EAGAIN before), the walker's
 *                        map value.
 *   ruby_proc_validate() once the VM runs: the main ractor's running execution context must
 *                        hold readable control frames whose iseqs are iseqs; the symbol table,
 *                        when found, must look like one (else C functions go unnamed).
 *
 * The user-space walker (ruby_proc_walk_ec()) reads the same chains as the BPF walker and
 * produces the same frame words (ruby.h): the tests compare both, and the script label comes
 * from it.
 *
 * Ownership: struct ruby_proc is freed with ruby_proc_free(); strings it returns live as long as
 * it does. Not thread-safe. */
#ifndef SCORCH_RUNTIME_RUBY_PROC_H
#define SCORCH_RUNTIME_RUBY_PROC_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/procmem.h"
#include "runtime/ruby/ruby.h"
#include "runtime/ruby/ruby_sym.h"
#include "runtime/tls.h"

struct elf_file;
struct errmsg;
struct ruby_proc;

/* What a CRuby file says about itself (link-time addresses: add the load bias). */
struct ruby_file {
	unsigned major, minor, patch;
	uint64_t exec_lo, exec_hi;   /* rb_vm_exec */
	uint64_t core_lo, core_hi;   /* vm_exec_core, 0 when not found */
	struct tls_symbol ec;        /* ruby_current_ec */
	int have_ec;
	uint64_t main_ractor;        /* ruby_single_main_ractor, or 0 */
	uint64_t symbols;            /* ruby_global_symbols, or 0 */
	char path[256];              /* for messages */
};

/* 1 when the file's name says libruby[-X.Y].so* or ruby, and it holds the VM (rb_vm_exec);
 * 0 when not; -ENOTSUP when it is a CRuby we cannot read (no ruby_version: too old), negative
 * errno on read errors. */
int ruby_file_detect(struct elf_file *e, const char *path, struct ruby_file *out);
/* 1 when the file name looks like a CRuby VM: libruby.so*, libruby-X.Y.so*, or `ruby`. */
int ruby_is_vm_path(const char *path);

/* The process side: pid's VM is the file f loaded with bias. 0; -EAGAIN with *out set (the
 * loader has not relocated libruby yet: call ruby_proc_tls() again later); -ENOTSUP (a version
 * without a layout table: err says which). */
int ruby_proc_attach(int pid, const struct ruby_file *f, uint64_t bias, struct ruby_proc **out,
		     struct errmsg *err);
/* Resolve ruby_current_ec now: 0, -EAGAIN (not yet), -EFAULT. */
int ruby_proc_tls(struct ruby_proc *p);
/* Check the offsets against the running VM (see above): 0, -EAGAIN (the VM is not running
 * Ruby code yet), -EINVAL (err says what did not match), -EFAULT, -ESRCH. */
int ruby_proc_validate(struct ruby_proc *p, struct errmsg *err);

/* The same over a memory image or a process read through m, for tests and fuzzing: the
 * version, and the addresses the file would have given (0 when absent). */
int ruby_proc_open_mem(struct procmem *m, unsigned major, unsigned minor, uint64_t main_ractor,
		       uint64_t symbols, struct ruby_proc **out, struct errmsg *err);
void ruby_proc_free(struct ruby_proc *p); /* NULL ok */

const char *ruby_proc_version(const struct ruby_proc *p);
const struct rb_proc *ruby_proc_bpf(const struct ruby_proc *p);
struct ruby_mem *ruby_proc_mem(struct ruby_proc *p);
/* The main ractor's running execution context (the thread holding the VM lock): 0 or errno. */
int ruby_proc_running_ec(struct ruby_proc *p, uint64_t *ec);

#define RUBY_MAX_FRAMES 4096  /* control frames per walk */

/* Walk the control frames of execution context ec into frame words (ruby.h), leaf first, at
 * most max: with segments set, a FW_MARKER_SEGMENT_END marker word after each FINISH frame (what
 * RT_OP_DEFER emits, without the rb_vm_exec markers). Returns the number of words, or a negative
 * errno when ec cannot be read at all; an unreadable frame ends the walk with a
 * RB_MARK_BAD_FRAME word. */
int ruby_proc_walk_ec(struct ruby_proc *p, uint64_t ec, uint64_t *words, size_t max,
		      int segments);

/* The script label: the path of the main program (the <main> iseq at the bottom of the main
 * thread's frames). Remembered once found. 0, or -ENOENT (the main thread does not hold the VM
 * now, or runs no script: ruby -e). */
int ruby_proc_script(struct ruby_proc *p, const char **script);

#endif
