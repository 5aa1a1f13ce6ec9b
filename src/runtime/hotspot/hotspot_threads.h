/* hotspot_threads.h: the names of a JVM's Java threads, read from its memory, so that samples
 * of a Java thread carry its java.lang.Thread name in full rather than the kernel's 15-byte
 * comm ("C2 CompilerThre", "pool-1-thread-1" cut).
 *
 * The way, every step from the JVM's own tables (hotspot_vm.h: struct hotspot_thread_offsets):
 *   ThreadsSMRSupport::_java_thread_list -> ThreadsList { _length, _threads[] } -> JavaThread*
 *   JavaThread::_osthread -> OSThread::_thread_id                  the kernel thread id
 *   JavaThread::_threadObj (an OopHandle from JDK 16: -> oop slot)  the java.lang.Thread
 *   java.lang.Thread.name -> String { value (byte[]), coder }       the name, LATIN1 or UTF-16
 * The Java fields' offsets are not in the tables: hotspot_jenv_read() finds them in the
 * classes' field info (InstanceKlass::_fields, FieldInfo slots, names and signatures from the
 * constant pool), and how references are stored (compressed oops and class pointers, their
 * base and shift) from the JVM's flags (JVMFlag table) and CompressedOops statics. The
 * java.lang.Thread and String classes are the JVM's well-known ones (vmClasses).
 *
 * Every object read is checked: a thread object's class must be java.lang.Thread or a
 * subclass, the name's class String, its value a byte[] (by its class's layout helper), sizes
 * and offsets bounded; a JavaThread must still belong to the thread id it was listed for.
 * Process memory is hostile input (tests/fuzz/fuzz_hotspot.c feeds these readers).
 *
 * Virtual threads (JDK 19+): the JavaThread's _threadObj is the carrier's platform thread, so
 * a sample of a virtual thread carries its carrier's name ("ForkJoinPool-1-worker-1"), never
 * another thread's.
 *
 * Ownership: struct hotspot_threads is the per-JVM cache (hotspot_threads_free()). Not
 * thread-safe. */
#ifndef SCORCH_RUNTIME_HOTSPOT_THREADS_H
#define SCORCH_RUNTIME_HOTSPOT_THREADS_H

#include <stddef.h>
#include <stdint.h>

struct errmsg;
struct hotspot_vm;
struct procmem;

#define HOTSPOT_THREAD_NAME_MAX 128 /* bytes of a name kept (UTF-8 with its NUL); longer is cut */
#define HOTSPOT_MAX_THREADS 4096    /* Java threads of one JVM listed; the others keep comm */
#define HOTSPOT_THREAD_TTL_NS (1000 * 1000000ULL)    /* a sampled thread's name is read again
						      * after this (Thread.setName) */
#define HOTSPOT_THREAD_RESCAN_NS (1000 * 1000000ULL) /* a thread not in the list is looked
						      * for again after this (reused ids) */
#define HOTSPOT_THREAD_SCAN_MIN_NS (50 * 1000000ULL) /* the list is read at most this often,
						      * or less: 50 times as long as a read
						      * took, up to HOTSPOT_THREAD_RESCAN_NS */
#define HOTSPOT_MAX_SUBCLASSES 32   /* Thread subclasses remembered as checked */

/* What the JVM says once it runs: how references are stored, the classes and fields. */
struct hotspot_jenv {
	uint64_t oop_base, klass_base;
	uint32_t oop_shift, klass_shift;
	uint32_t compressed_oops, compressed_klass;
	uint64_t thread_klass, string_klass;   /* InstanceKlass* */
	uint32_t thread_name;                  /* java.lang.Thread.name */
	uint32_t string_value, string_coder;   /* java.lang.String.value (byte[]), .coder (byte) */
	uint32_t thread_size, string_size;     /* instance sizes, bytes */
	uint32_t arr_length;                   /* an array's length field */
	/* learnt while reading names */
	uint64_t byte_array_klass;             /* the byte[] class, once checked */
	uint32_t byte_array_data;              /* where a byte[]'s elements start */
	uint64_t subclasses[HOTSPOT_MAX_SUBCLASSES]; /* classes checked to extend Thread */
	uint32_t nsubclasses;
};

/* Fill env from the running JVM. 0, or -ENOTSUP (its tables lack what is needed: JDK 21's
 * field info streams, a JVM without the flags), -EAGAIN (the classes are not loaded yet),
 * -EINVAL (the memory makes no sense), -EFAULT (unreadable). */
int hotspot_jenv_read(struct procmem *m, const struct hotspot_vm *vm, struct hotspot_jenv *env,
		      struct errmsg *err);

struct hotspot_jthread {
	int32_t tid;
	uint64_t jt; /* JavaThread* */
};

/* The Java threads listed now: up to max into out, *n set. 0, -EAGAIN (no list yet), -EINVAL,
 * -EFAULT. Threads whose OSThread cannot be read (starting, exiting) are left out. */
int hotspot_jthreads_list(struct procmem *m, const struct hotspot_vm *vm,
			  struct hotspot_jthread *out, size_t max, size_t *n);

/* The name of JavaThread jt, listed for thread id tid, as UTF-8 into out (NUL-terminated, cut
 * at a character boundary, control characters replaced by '?'). 0, or -ESRCH (jt is no longer
 * thread tid), -ENOENT (no java.lang.Thread or an empty name), -EINVAL (an object of the
 * wrong class or size), -EFAULT. env's learnt fields may be updated. */
int hotspot_jthread_name(struct procmem *m, const struct hotspot_vm *vm, struct hotspot_jenv *env,
			 uint64_t jt, int32_t tid, char *out, size_t outlen);

/* Decode a Java String's value (coder 0: LATIN1 bytes, 1: UTF-16 little endian) into out as
 * above. Returns the length written, or -EINVAL (a bad coder or an odd UTF-16 length). */
int hotspot_string_utf8(const uint8_t *value, size_t len, int coder, char *out, size_t outlen);

/* ---- the per-JVM cache, by thread id */
struct hotspot_threads;

struct hotspot_threads *hotspot_threads_new(void);
void hotspot_threads_free(struct hotspot_threads *t); /* NULL ok */

/* The Java name of thread tid of the JVM (vm read from m), or NULL when it has none to give
 * (not a Java thread, not known yet, the JVM not ready, a read failed): the caller keeps the
 * kernel's name. now: monotonic nanoseconds. The first lookup of an unknown thread reads the
 * thread list (at most every HOTSPOT_THREAD_RESCAN_NS), a known one's name is read again after
 * HOTSPOT_THREAD_TTL_NS. The string is valid until the next call. */
const char *hotspot_threads_name(struct hotspot_threads *t, struct procmem *m,
				 const struct hotspot_vm *vm, int32_t tid, uint64_t now);

struct hotspot_threads_stats {
	uint64_t lookups, named;  /* lookups, of which gave a name */
	uint64_t reads, scans;    /* names read, thread lists read */
	uint64_t read_errors;     /* names that could not be read */
	size_t threads;           /* threads cached (Java and not) */
	int ready;                /* 1 ready, 0 waiting for the JVM, -1 not possible */
};
void hotspot_threads_stats(const struct hotspot_threads *t, struct hotspot_threads_stats *st);

#endif
