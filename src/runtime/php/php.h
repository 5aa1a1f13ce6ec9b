/* php.h: the contract between the PHP stack walker in BPF (php.bpf.h) and user space
 * (php_runtime.c, php_proc.c). Only fixed-size types; included by both sides.
 *
 * User space finds the Zend engine in a process (the php, php-cgi or php-fpm executable, or
 * libphp*.so: php_proc.c), fills one struct php_proc per process into the `php_procs` map
 * (key: tgid), and the walker follows EG(current_execute_data) with the offsets of the PHP
 * version (php_proc.c: the engine exports no layout). NTS builds only: a thread-safe build keeps
 * its globals in TSRM storage.
 *
 * PER SAMPLE: ex = executor_globals.current_execute_data (a PHP process runs one request on
 * one thread), then each zend_execute_data: its func (zend_function *), the line of its opline
 * (user code), its call info (This.u1.type_info), prev_execute_data. A frame whose call info has
 * ZEND_CALL_TOP is the first one a C-level call of the VM (execute_ex) runs: it ends a segment.
 *
 * FRAME WORDS (sampler.h; PHP owns the tags 0x50 - 0x5f), leaf first, two per frame:
 *   FW_TAG_PHP_FUNC  data = address of the zend_function
 *   FW_TAG_PHP_LINE  data bits 0-31  the line of the frame's opline (0 for internal functions
 *                                     and unknown)
 *                         bits 32-47 php_checksum() of the function (its name pointer, type)
 *                         bits 48-55 bits 16-23 of the call info (bit 0: code, not a
 *                                     function; bit 1: the top of a VM call)
 *   FW_TAG_PHP_MARK  data = enum php_mark, in place of frames the walker could not read.
 *
 * THE WALKER (php.bpf.h: php_bpf_walk(), dispatched by runtime/runtime.bpf.h for mappings of
 * kind UNWINDER_PHP):
 *   RT_OP_FRAME  at execute_ex (the range user space flagged UNW_F_INTERP): the frames of that
 *                VM call, up to its ZEND_CALL_TOP frame, in place of the native frame. In the
 *                opcache JIT buffer (a claimed range: JIT code is entered by a jump from
 *                execute_ex and runs on its stack frame): the same frames, then the unwind goes
 *                on from execute_ex (php_proc.jit_return, the address after execute_ex's
 *                dispatch jump) whose native frame is then dropped.
 *   RT_OP_DEFER  the same segments for a stack snapshot.
 *   RT_OP_ONLY   every frame of the request.
 * Counters: the php_stats map (enum php_stat), printed by `scorch record --stats`.
 */
#ifndef SCORCH_RUNTIME_PHP_H
#define SCORCH_RUNTIME_PHP_H

#include "bpf/sampler.h"
#include "bpf/unwind.h"

#define FW_TAG_PHP_FUNC (FW_TAG_FIRST(UNWINDER_PHP) + 0) /* 0x50 */
#define FW_TAG_PHP_LINE (FW_TAG_FIRST(UNWINDER_PHP) + 1)
#define FW_TAG_PHP_MARK (FW_TAG_FIRST(UNWINDER_PHP) + 2)

enum php_mark {
	PHP_MARK_BAD_FRAME = 1, /* an execute_data or its function could not be read */
	PHP_MARK_TRUNCATED = 2, /* more frames than the walker reads per sample */
};

enum php_stat {
	PHPSTAT_SAMPLES = 0, /* samples of known PHP processes that reached the walker */
	PHPSTAT_IDLE,        /* ... with no PHP code running (no current_execute_data) */
	PHPSTAT_HOOKS,       /* native frames in execute_ex handed to the walker */
	PHPSTAT_FRAMES,      /* PHP frames emitted */
	PHPSTAT_ERRORS,      /* unreadable frames */
	PHPSTAT_TRUNCATED,   /* walks cut at PHP_MAX_FRAMES or the record's end */
	PHPSTAT_WALK_NS,     /* time spent in the walker, ns */
	PHPSTAT_DEFERRED,    /* samples sent as snapshots whose PHP frames were deferred */
	PHPSTAT_JIT,         /* samples whose unwind met JIT code */
	PHPSTAT__COUNT,
};

/* Zend constants (Zend/zend_compile.h; 7.4 - 8.3) */
#define PHP_FUNC_INTERNAL 1
#define PHP_FUNC_USER     2
#define PHP_FUNC_EVAL     4
#define PHP_CALL_CODE     (1u << 16)
#define PHP_CALL_TOP      (1u << 17)

/* Field offsets of one PHP version (x86-64, NTS), in bytes. */
struct php_offsets {
	__u32 version;          /* (major << 16) | (minor << 8) | patch */
	__u32 eg_current_ex;    /* executor_globals.current_execute_data */
	/* zend_execute_data: opline 0, func 24, This.u1.type_info 40, prev_execute_data 48 */
	__u32 ex_opline, ex_func, ex_call_info, ex_prev;
	/* zend_function (common / op_array) */
	__u32 fn_type, fn_name, fn_scope, op_filename, op_line_start;
	__u32 ce_name;          /* zend_class_entry.name */
	__u32 op_lineno;        /* zend_op.lineno */
	__u32 str_len, str_val; /* zend_string */
};

/* The per-process map value (key: tgid). */
struct php_proc {
	__u64 eg;                    /* address of executor_globals */
	__u64 exec_lo, exec_hi;      /* execute_ex */
	__u64 jit_return;            /* where the unwind resumes after JIT code (0: no JIT) */
	struct php_offsets off;
};

/* Ties a zend_function address to the function that was there: 16 bits of its name pointer
 * and type. Computed the same way in BPF and in user space. */
static inline __u32 php_checksum(__u64 name, __u32 type)
{
	__u32 h = (__u32)(name >> 3) * 0x9e3779b1u;

	h ^= (__u32)(name >> 35) * 0x7feb352du;
	h ^= type * 0x85ebca6bu;
	h ^= h >> 16;
	return h & 0xffff;
}

#endif
