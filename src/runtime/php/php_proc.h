/* php_proc.h: finding the Zend engine in a file and in a running process, reading its functions
 * and walking its execute_data chain from user space.
 *
 *   php_file_detect()   once per file: is it a PHP SAPI binary (php, php-cgi, php-fpm with an
 *                       optional version suffix, or libphp*.so), its version (the
 *                       "X-Powered-By: PHP/X.Y.Z" string of its read-only data), an NTS build
 *                       (executor_globals a plain global), execute_ex and, when the VM is the
 *                       hybrid one (zend_vm_kind() returns 4), the address right after
 *                       execute_ex's first indirect jump: where JIT code entered by that jump
 *                       returns to, for the unwind.
 *   php_proc_attach()   the process: the offsets of the version, the walker's map value.
 *   php_proc_validate() when PHP code runs: every frame's function must be a function with a
 *                       name and file that are zend_strings.
 *
 * Functions (struct php_func) are read per (pid, address) and cached (a runtime/name_cache.h)
 * with the walker's checksum (php.h: php_checksum()), so a reused address is caught. Names: `Class::method`,
 * `function`, `{main}` (the top of a request), `{include}` (a file's code run by include or
 * require), `{eval}`; internal functions by their name (`gzcompress`).
 *
 * Ownership: struct php_process is freed with php_proc_free(), the cache with php_cache_free();
 * strings they return live until the next call that may evict (cache) or the free. */
#ifndef SCORCH_RUNTIME_PHP_PROC_H
#define SCORCH_RUNTIME_PHP_PROC_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/name_cache.h"
#include "runtime/php/php.h"
#include "runtime/procmem.h"

struct elf_file;
struct errmsg;
struct php_process;

#define PHP_NAME_MAX 256
#define PHP_PATH_MAX 1024
#define PHP_WALK_MAX 4096 /* frames of the user-space walker */

struct php_file {
	unsigned major, minor, patch;
	uint64_t eg;                 /* executor_globals */
	uint64_t exec_lo, exec_hi;   /* execute_ex */
	uint64_t jit_return;         /* after execute_ex's dispatch jump (hybrid VM), or 0 */
	int zts;                     /* a thread-safe build: not supported */
	char path[256];
};

/* 1 when the file is a PHP SAPI with the engine in it, 0 when not, negative errno on read
 * errors. */
int php_file_detect(struct elf_file *e, const char *path, struct php_file *out);
/* 1 when the name says php, php-cgi or php-fpm (with an optional version) or libphp*.so. */
int php_is_sapi_path(const char *path);
/* The address after the first indirect jump (ff /4) in code at base, or 0. */
uint64_t php_decode_jit_return(const uint8_t *code, size_t len, uint64_t base);
/* 1 when code is `mov $4, %eax; ret` (zend_vm_kind() of the hybrid VM). */
int php_decode_vm_kind_hybrid(const uint8_t *code, size_t len);

/* opcache's JIT buffer globals (dasm_buf, dasm_size: static) from the code of the exported
 * zend_jit_unprotect(), which loads them into rdi and rsi for mprotect(): their link-time
 * addresses in opcache.so. 0, or -ENOENT (not the code we know, no JIT in this opcache). */
int php_opcache_jit_globals(struct elf_file *opcache, uint64_t *buf_var, uint64_t *size_var);

/* The process side: 0, or -ENOTSUP (version without a layout, ZTS: err says which). */
int php_proc_attach(int pid, const struct php_file *f, uint64_t bias, struct php_process **out,
		    struct errmsg *err);
/* 0, -EAGAIN (no PHP code running now), -EINVAL (offsets do not match: err), -EFAULT. */
int php_proc_validate(struct php_process *p, struct errmsg *err);
/* Tests and fuzzing: a memory image or a process read through m, with executor_globals at eg. */
int php_proc_open_mem(struct procmem *m, unsigned major, unsigned minor, uint64_t eg,
		      struct php_process **out, struct errmsg *err);
void php_proc_free(struct php_process *p);
const struct php_offsets *php_proc_offsets(const struct php_process *p);
struct procmem *php_proc_mem(struct php_process *p);
/* The map value for php_procs. */
const struct php_proc *php_proc_bpf(const struct php_process *p);
const char *php_proc_version(const struct php_process *p);

/* Walk the request's frames into words (php.h), leaf first, at most max; with segments, a
 * segment end marker after each ZEND_CALL_TOP frame. The number of words, or a negative errno. */
int php_proc_walk(struct php_process *p, uint64_t *words, size_t max, int segments);

/* The script label: the file of the request's top code (the outermost frame). Remembered once
 * found. 0 or -ENOENT (no request running now). */
int php_proc_script(struct php_process *p, const char **script);

/* --- functions */
struct php_func {
	char *name;        /* Class::method, function, {main}, {include}, {eval} */
	char *file;        /* user code: op_array.filename, else NULL */
	int32_t line_start;
	uint32_t type;     /* PHP_FUNC_* */
	uint32_t checksum; /* php_checksum(function_name pointer, type) */
};
/* Read the zend_function at addr; call_info: the frame's bits 16-23 (php.h), which name
 * file-level code. 0 or a negative errno. Release with php_func_release(). */
int php_func_read(struct procmem *m, const struct php_offsets *o, uint64_t addr,
		  uint32_t call_info, struct php_func *out);
void php_func_release(struct php_func *f);
/* A zend_string into out (cut at outlen - 1, control bytes replaced): 0 or negative errno. */
int php_read_zstr(struct procmem *m, const struct php_offsets *o, uint64_t addr, char *out,
		  size_t outlen);

struct php_cache;
struct php_cache *php_cache_new(size_t max_entries);
void php_cache_free(struct php_cache *c);
/* The function of (pid, addr) whose checksum is checksum (16 bits), cached or read through m
 * (NULL: the process is gone). NULL when not to be had. */
const struct php_func *php_cache_get(struct php_cache *c, uint32_t pid, uint64_t addr,
				     uint32_t checksum, uint32_t call_info, struct procmem *m,
				     const struct php_offsets *o);
void php_cache_forget_pid(struct php_cache *c, uint32_t pid);
void php_cache_stats(const struct php_cache *c, struct name_cache_stats *st);

#endif
