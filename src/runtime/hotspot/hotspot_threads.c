/* hotspot_threads.c: Java thread names from a JVM's memory (hotspot_threads.h): the flags and
 * class metadata read once, the thread list and the names read into a cache by thread id. */
#include "runtime/hotspot/hotspot_threads.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/utf8.h"
#include "runtime/hotspot/hotspot_code.h"
#include "runtime/hotspot/hotspot_vm.h"
#include "runtime/procmem.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define MAX_FLAGS 8192          /* JVMFlag entries (JDK 17 has about 1,300) */
#define MAX_FIELDS 1024         /* Java fields of one class */
#define MAX_SUPERS 16           /* classes between a thread's class and java.lang.Thread */
#define MAX_INSTANCE (64u << 10) /* bytes of a Thread or String instance */
#define MAX_TID 4194304         /* PID_MAX_LIMIT */
#define MAX_ENTRIES (2 * HOTSPOT_MAX_THREADS) /* Java threads and others cached */
#define JENV_RETRY_NS (100 * 1000000ULL) /* a JVM still starting: look again after */
#define JENV_TRIES 600                   /* ... up to a minute of samples */

#define ACC_STATIC 0x0008
#define T_BYTE 8 /* BasicType of byte[] elements */

static uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint16_t ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static int aligned_ptr(uint64_t p)
{
	return p && !(p & 7) && p < (1ULL << 57);
}

/* ---- flags and classes */

/* The value of a bool flag of the JVM: 0 or 1, -ENOENT when absent, -EFAULT. */
static int bool_flags(struct procmem *m, const struct hotspot_thread_offsets *o, int *oops,
		      int *klass)
{
	uint64_t arr = 0, n = 0, i;
	uint8_t *buf;
	int rc = -ENOENT;

	*oops = *klass = -1;
	if (procmem_u64(m, o->flags, &arr) < 0 || procmem_u64(m, o->num_flags, &n) < 0)
		return -EFAULT;
	if (!aligned_ptr(arr) || n == 0 || n > MAX_FLAGS ||
	    n * o->flag_size > PROCMEM_MAX_READ)
		return arr ? -EINVAL : -EAGAIN;
	buf = xmalloc(n * o->flag_size);
	if (procmem_read(m, arr, buf, n * o->flag_size) < 0) {
		rc = -EFAULT;
		goto cleanup;
	}
	for (i = 0; i < n && (*oops < 0 || *klass < 0); i++) {
		const uint8_t *f = buf + i * o->flag_size;
		uint64_t name, addr;
		char s[32];
		uint8_t v;
		int *dst;

		memcpy(&name, f + o->flag_name, 8);
		memcpy(&addr, f + o->flag_addr, 8);
		/* 27 bytes hold either name with its NUL */
		if (!name || procmem_read(m, name, s, 27) < 0)
			continue;
		s[27] = '\0';
		if (!strcmp(s, "UseCompressedOops"))
			dst = oops;
		else if (!strcmp(s, "UseCompressedClassPointers"))
			dst = klass;
		else
			continue;
		if (!addr || procmem_read(m, addr, &v, 1) < 0 || v > 1)
			continue;
		*dst = v;
	}
	rc = *oops >= 0 && *klass >= 0 ? 0 : -ENOENT;
cleanup:
	xfree(buf);
	return rc;
}

/* Klass::_layout_helper of k. */
static int layout_helper(struct procmem *m, const struct hotspot_thread_offsets *o, uint64_t k,
			 int32_t *out)
{
	return procmem_u32(m, k + o->klass_layout, (uint32_t *)out) < 0 ? -EFAULT : 0;
}

/* The instance size of class k from its layout helper (positive for instances). */
static int instance_size(struct procmem *m, const struct hotspot_thread_offsets *o, uint64_t k,
			 uint32_t *out)
{
	int32_t lh;

	if (layout_helper(m, o, k, &lh))
		return -EFAULT;
	if (lh < 16 || (uint32_t)lh > MAX_INSTANCE)
		return -EINVAL;
	*out = (uint32_t)lh & ~7u;
	return 0;
}

/* The offset of the non-static Java field name:sig declared by class ik. 0, -ENOENT, -EINVAL,
 * -EFAULT. */
static int java_field(struct procmem *m, const struct hotspot_vm *vm, uint64_t ik,
		      const char *name, const char *sig, uint32_t size, uint32_t *out)
{
	const struct hotspot_thread_offsets *o = &vm->thr;
	uint64_t cp = 0, fields = 0;
	uint8_t cnt[2], *buf = NULL;
	uint32_t count, i, alen;
	size_t len;
	int rc = -ENOENT;

	if (procmem_u64(m, ik + vm->ik_constants, &cp) < 0 ||
	    procmem_u64(m, ik + o->ik_fields, &fields) < 0 ||
	    procmem_read(m, ik + o->ik_java_fields, cnt, 2) < 0 ||
	    procmem_u32(m, fields, &alen) < 0)
		return -EFAULT;
	count = ld16(cnt);
	if (!aligned_ptr(cp) || !aligned_ptr(fields) || count == 0 || count > MAX_FIELDS ||
	    (uint64_t)count * o->fi_slots > alen)
		return -EINVAL;
	len = (size_t)count * o->fi_slots * 2;
	buf = xmalloc(len);
	if (procmem_read(m, fields + o->array_u2_data, buf, len) < 0) {
		rc = -EFAULT;
		goto cleanup;
	}
	for (i = 0; i < count; i++) {
		const uint8_t *f = buf + (size_t)i * o->fi_slots * 2;
		char s[64];
		uint32_t lo, hi, off;

		if (ld16(f + 2 * o->fi_access) & ACC_STATIC)
			continue;
		if (hotspot_cp_symbol(m, vm, cp, ld16(f + 2 * o->fi_name), s, sizeof(s)) ||
		    strcmp(s, name))
			continue;
		if (hotspot_cp_symbol(m, vm, cp, ld16(f + 2 * o->fi_sig), s, sizeof(s)) ||
		    strcmp(s, sig))
			continue;
		lo = ld16(f + 2 * o->fi_low);
		hi = ld16(f + 2 * o->fi_high);
		if (o->fi_tag_offset && !(lo & o->fi_tag_offset)) {
			rc = -EINVAL; /* the offset is not assigned yet */
			goto cleanup;
		}
		off = ((hi << 16) | lo) >> o->fi_tag_size;
		if (off < 8 || off + 1 > size) {
			rc = -EINVAL;
			goto cleanup;
		}
		*out = off;
		rc = 0;
		goto cleanup;
	}
cleanup:
	xfree(buf);
	return rc;
}

int hotspot_jenv_read(struct procmem *m, const struct hotspot_vm *vm, struct hotspot_jenv *env,
		      struct errmsg *err)
{
	const struct hotspot_thread_offsets *o = &vm->thr;
	uint32_t shift = 0, ref;
	int oops, klass, rc;

	memset(env, 0, sizeof(*env));
	if (!o->usable)
		return errmsg_set(err, -ENOTSUP, "the JVM's tables do not describe its threads");
	rc = bool_flags(m, o, &oops, &klass);
	if (rc)
		return errmsg_set(err, rc, "UseCompressedOops/UseCompressedClassPointers: %s",
				  rc == -ENOENT ? "not among the JVM's flags" : "unreadable");
	env->compressed_oops = (uint32_t)oops;
	env->compressed_klass = (uint32_t)klass;
	if (procmem_u64(m, o->narrow_oop_base, &env->oop_base) < 0 ||
	    procmem_u32(m, o->narrow_oop_shift, &env->oop_shift) < 0 ||
	    procmem_u64(m, o->narrow_klass_base, &env->klass_base) < 0 ||
	    procmem_u32(m, o->narrow_klass_shift, &shift) < 0)
		return errmsg_set(err, -EFAULT, "cannot read the compressed pointers' bases");
	env->klass_shift = shift;
	if (env->oop_shift > 8 || env->klass_shift > 8)
		return errmsg_set(err, -EINVAL, "compressed pointer shifts %u/%u make no sense",
				  env->oop_shift, env->klass_shift);
	env->arr_length = o->oop_klass + (env->compressed_klass ? 4 : 8);
	if (procmem_u64(m, o->thread_klass, &env->thread_klass) < 0 ||
	    procmem_u64(m, o->string_klass, &env->string_klass) < 0)
		return errmsg_set(err, -EFAULT, "cannot read the well-known classes");
	if (!env->thread_klass || !env->string_klass)
		return errmsg_set(err, -EAGAIN, "java.lang.Thread is not loaded yet");
	if (!aligned_ptr(env->thread_klass) || !aligned_ptr(env->string_klass))
		return errmsg_set(err, -EINVAL, "the well-known classes make no sense");
	if ((rc = instance_size(m, o, env->thread_klass, &env->thread_size)) ||
	    (rc = instance_size(m, o, env->string_klass, &env->string_size)))
		return errmsg_set(err, rc, "the sizes of Thread and String");
	ref = env->compressed_oops ? 4 : 8;
	if ((rc = java_field(m, vm, env->thread_klass, "name", "Ljava/lang/String;",
			     env->thread_size - ref + 1, &env->thread_name)) ||
	    (rc = java_field(m, vm, env->string_klass, "value", "[B",
			     env->string_size - ref + 1, &env->string_value)) ||
	    (rc = java_field(m, vm, env->string_klass, "coder", "B", env->string_size,
			     &env->string_coder)))
		return errmsg_set(err, rc == -EFAULT ? -EFAULT : -ENOTSUP,
				  "Thread.name, String.value and String.coder: %s",
				  rc == -ENOENT ? "not found in the classes' fields" : "unreadable");
	return 0;
}

/* ---- objects */

static int read_ref(struct procmem *m, const struct hotspot_jenv *env, uint64_t addr,
		    uint64_t *out)
{
	uint32_t v;

	if (!env->compressed_oops)
		return procmem_u64(m, addr, out) < 0 ? -EFAULT : 0;
	if (procmem_u32(m, addr, &v) < 0)
		return -EFAULT;
	*out = v ? env->oop_base + ((uint64_t)v << env->oop_shift) : 0;
	return 0;
}

static int klass_of(struct procmem *m, const struct hotspot_vm *vm,
		    const struct hotspot_jenv *env, uint64_t obj, uint64_t *out)
{
	uint32_t v;

	if (!env->compressed_klass)
		return procmem_u64(m, obj + vm->thr.oop_klass, out) < 0 ? -EFAULT : 0;
	if (procmem_u32(m, obj + vm->thr.oop_klass, &v) < 0)
		return -EFAULT;
	*out = v ? env->klass_base + ((uint64_t)v << env->klass_shift) : 0;
	return 0;
}

/* 0 when class k is java.lang.Thread or extends it. */
static int is_thread_class(struct procmem *m, const struct hotspot_vm *vm,
			   struct hotspot_jenv *env, uint64_t k)
{
	uint64_t c = k;
	uint32_t i;

	for (i = 0; i < env->nsubclasses; i++)
		if (env->subclasses[i] == k)
			return 0;
	for (i = 0; i < MAX_SUPERS && aligned_ptr(c); i++) {
		if (c == env->thread_klass) {
			if (k != c && env->nsubclasses < HOTSPOT_MAX_SUBCLASSES)
				env->subclasses[env->nsubclasses++] = k;
			return 0;
		}
		if (procmem_u64(m, c + vm->thr.klass_super, &c) < 0)
			return -EFAULT;
	}
	return -EINVAL;
}

/* Where the elements of byte[] arr start, checking its class (a type array of bytes). */
static int byte_array(struct procmem *m, const struct hotspot_vm *vm, struct hotspot_jenv *env,
		      uint64_t arr, uint32_t *data)
{
	uint64_t k = 0;
	int32_t lh;
	uint32_t hdr;

	if (klass_of(m, vm, env, arr, &k))
		return -EFAULT;
	if (!aligned_ptr(k))
		return -EINVAL;
	if (env->byte_array_klass && k == env->byte_array_klass) {
		*data = env->byte_array_data;
		return 0;
	}
	if (layout_helper(m, &vm->thr, k, &lh))
		return -EFAULT;
	/* array tag in the top 2 bits (type arrays: 3), header size, element type, log2 size */
	hdr = ((uint32_t)lh >> 16) & 0xff;
	if (((uint32_t)lh >> 30) != 3 || (((uint32_t)lh >> 8) & 0xff) != T_BYTE ||
	    ((uint32_t)lh & 0xff) != 0 || hdr < env->arr_length + 4 || hdr > 32)
		return -EINVAL;
	if (env->byte_array_klass)
		return -EINVAL; /* there is one byte[] class */
	env->byte_array_klass = k;
	env->byte_array_data = hdr;
	*data = hdr;
	return 0;
}

/* Append code point c as UTF-8 if it fits (room for the NUL kept). */
static int put_utf8(char *out, size_t outlen, size_t *pos, uint32_t c)
{
	char b[4];
	size_t n;

	if (c < 0x20 || c == 0x7f)
		c = '?';
	n = utf8_encode(c, b);
	if (*pos + n >= outlen)
		return -1;
	memcpy(out + *pos, b, n);
	*pos += n;
	return 0;
}

int hotspot_string_utf8(const uint8_t *value, size_t len, int coder, char *out, size_t outlen)
{
	size_t i, pos = 0;

	if (outlen == 0)
		return -EINVAL;
	out[0] = '\0';
	if (coder == 0) {
		for (i = 0; i < len; i++)
			if (put_utf8(out, outlen, &pos, value[i]))
				break;
	} else if (coder == 1 && !(len & 1)) {
		for (i = 0; i + 1 < len; i += 2) {
			uint32_t c = ld16(value + i);

			if (c >= 0xd800 && c < 0xdc00 && i + 3 < len &&
			    ld16(value + i + 2) >= 0xdc00 && ld16(value + i + 2) < 0xe000) {
				c = 0x10000 + ((c - 0xd800) << 10) + (ld16(value + i + 2) - 0xdc00);
				i += 2;
			} else if (c >= 0xd800 && c < 0xe000) {
				c = 0xfffd; /* a lone surrogate */
			}
			if (put_utf8(out, outlen, &pos, c))
				break;
		}
	} else {
		return -EINVAL;
	}
	out[pos] = '\0';
	return (int)pos;
}

int hotspot_jthread_name(struct procmem *m, const struct hotspot_vm *vm, struct hotspot_jenv *env,
			 uint64_t jt, int32_t tid, char *out, size_t outlen)
{
	const struct hotspot_thread_offsets *o = &vm->thr;
	uint64_t os = 0, thread = 0, k = 0, name = 0, value = 0, slot;
	uint8_t coder, bytes[2 * HOTSPOT_THREAD_NAME_MAX];
	uint32_t t = 0, data = 0;
	int32_t len;
	size_t want;
	int rc;

	if (!aligned_ptr(jt) || outlen < 2)
		return -EINVAL;
	/* still the thread it was listed for (ids are reused, JavaThreads freed) */
	if (procmem_u64(m, jt + o->jt_osthread, &os) < 0 || !aligned_ptr(os) ||
	    procmem_u32(m, os + o->os_thread_id, &t) < 0)
		return -EFAULT;
	if ((int32_t)t != tid)
		return -ESRCH;
	/* its java.lang.Thread: an OopHandle (a slot holding the oop) or the oop itself */
	if (o->jt_obj_handle) {
		if (procmem_u64(m, jt + o->jt_thread_obj + o->oh_obj, &slot) < 0)
			return -EFAULT;
		if (!slot)
			return -ENOENT; /* attaching, or a thread without one */
		if (!aligned_ptr(slot) || procmem_u64(m, slot, &thread) < 0)
			return -EFAULT;
	} else if (procmem_u64(m, jt + o->jt_thread_obj, &thread) < 0) {
		return -EFAULT;
	}
	if (!thread)
		return -ENOENT;
	if (!aligned_ptr(thread))
		return -EINVAL;
	if ((rc = klass_of(m, vm, env, thread, &k)))
		return rc;
	if ((rc = is_thread_class(m, vm, env, k)))
		return rc;
	if ((rc = read_ref(m, env, thread + env->thread_name, &name)))
		return rc;
	if (!name)
		return -ENOENT;
	if (!aligned_ptr(name))
		return -EINVAL;
	if ((rc = klass_of(m, vm, env, name, &k)))
		return rc;
	if (k != env->string_klass)
		return -EINVAL;
	if ((rc = read_ref(m, env, name + env->string_value, &value)) ||
	    procmem_read(m, name + env->string_coder, &coder, 1) < 0)
		return rc ? rc : -EFAULT;
	if (!aligned_ptr(value) || coder > 1)
		return -EINVAL;
	if ((rc = byte_array(m, vm, env, value, &data)))
		return rc;
	if (procmem_u32(m, value + env->arr_length, (uint32_t *)&len) < 0)
		return -EFAULT;
	if (len < 0)
		return -EINVAL;
	if (len == 0)
		return -ENOENT;
	/* a longer name is cut: its first bytes are enough for outlen */
	want = (size_t)len < sizeof(bytes) ? (size_t)len : sizeof(bytes);
	if (coder)
		want &= ~(size_t)1;
	if (procmem_read(m, value + data, bytes, want) < 0)
		return -EFAULT;
	rc = hotspot_string_utf8(bytes, want, coder, out, outlen);
	return rc < 0 ? rc : rc == 0 ? -ENOENT : 0;
}

int hotspot_jthreads_list(struct procmem *m, const struct hotspot_vm *vm,
			  struct hotspot_jthread *out, size_t max, size_t *n)
{
	const struct hotspot_thread_offsets *o = &vm->thr;
	uint64_t tl = 0, arr = 0, *jts = NULL;
	uint32_t len = 0, i;
	int rc = 0;

	*n = 0;
	if (!o->usable)
		return -ENOTSUP;
	if (procmem_u64(m, o->java_thread_list, &tl) < 0)
		return -EFAULT;
	if (!tl)
		return -EAGAIN;
	if (!aligned_ptr(tl) || procmem_u32(m, tl + o->tl_length, &len) < 0 ||
	    procmem_u64(m, tl + o->tl_threads, &arr) < 0)
		return aligned_ptr(tl) ? -EFAULT : -EINVAL;
	if (len == 0)
		return 0;
	if (!aligned_ptr(arr))
		return -EINVAL;
	if (len > max)
		len = (uint32_t)max;
	if (len > HOTSPOT_MAX_THREADS)
		len = HOTSPOT_MAX_THREADS;
	jts = xmalloc((size_t)len * 8);
	if (procmem_read(m, arr, jts, (size_t)len * 8) < 0) {
		rc = -EFAULT;
		goto cleanup;
	}
	for (i = 0; i < len; i++) {
		uint64_t os = 0;
		uint32_t tid = 0;

		if (!aligned_ptr(jts[i]) || procmem_u64(m, jts[i] + o->jt_osthread, &os) < 0 ||
		    !aligned_ptr(os) || procmem_u32(m, os + o->os_thread_id, &tid) < 0 ||
		    (int32_t)tid <= 0 || tid > MAX_TID)
			continue;
		out[*n].tid = (int32_t)tid;
		out[*n].jt = jts[i];
		(*n)++;
	}
cleanup:
	xfree(jts);
	return rc;
}

/* ---- the cache */

enum jt_state {
	JT_UNREAD = 0, /* a Java thread whose name was not read yet */
	JT_NAMED,      /* name holds its name */
	JT_NO_NAME,    /* a Java thread whose name could not be read */
	JT_OTHER,      /* not in the thread list at the last look (GC, JIT, native threads) */
};

struct jt_entry {
	int32_t tid;
	uint8_t state;
	uint64_t jt;
	uint64_t read_ns; /* when the name was read, or when an OTHER entry was made */
	char name[HOTSPOT_THREAD_NAME_MAX];
};

struct hotspot_threads {
	struct hotspot_jenv env;
	int ready;                 /* 1 env read, 0 not yet, -1 never */
	unsigned tries;
	uint64_t next_try_ns;
	struct jt_entry *e;
	size_t n, cap;
	struct u64map by_tid;      /* tid -> index + 1 */
	uint64_t next_scan_ns;     /* the thread list is not read again before */
	struct hotspot_jthread *list;
	uint64_t lookups, named, reads, scans, read_errors;
};

struct hotspot_threads *hotspot_threads_new(void)
{
	struct hotspot_threads *t = xcalloc(1, sizeof(*t));

	u64map_init(&t->by_tid);
	return t;
}

void hotspot_threads_free(struct hotspot_threads *t)
{
	if (!t)
		return;
	xfree(t->e);
	xfree(t->list);
	u64map_release(&t->by_tid);
	xfree(t);
}

static struct jt_entry *find(struct hotspot_threads *t, int32_t tid)
{
	uint64_t *v = u64map_get(&t->by_tid, (uint64_t)tid);

	return v ? &t->e[*v - 1] : NULL;
}

static struct jt_entry *add(struct hotspot_threads *t, int32_t tid, uint64_t jt, uint8_t state,
			    uint64_t now)
{
	struct jt_entry *e;

	if (t->n >= MAX_ENTRIES)
		return NULL;
	ALLOC_GROW(t->e, t->n + 1, t->cap);
	e = &t->e[t->n++];
	memset(e, 0, sizeof(*e));
	e->tid = tid;
	e->jt = jt;
	e->state = state;
	e->read_ns = now;
	u64map_put(&t->by_tid, (uint64_t)tid, t->n);
	return e;
}

/* Read the thread list again: the Java threads now, keeping the names of those that were
 * there (same id, same JavaThread); the others are forgotten (exited, or not Java threads:
 * they are found again at their next sample). */
static void scan(struct hotspot_threads *t, struct procmem *m, const struct hotspot_vm *vm,
		 uint64_t now)
{
	struct jt_entry *old = t->e;
	struct u64map old_idx = t->by_tid;
	size_t n = 0, i;
	uint64_t t0 = clock_ns(), took, wait;
	int rc;

	t->scans++;
	if (!t->list)
		t->list = xmalloc(HOTSPOT_MAX_THREADS * sizeof(*t->list));
	rc = hotspot_jthreads_list(m, vm, t->list, HOTSPOT_MAX_THREADS, &n);
	/* Why the wait scales with the cost: a JVM starting threads in a burst is read again
	 * soon (its new threads named within tens of milliseconds), one with thousands of
	 * threads does not spend more than about 2% of a CPU on its list. */
	took = clock_ns() - t0;
	wait = took * 50 > HOTSPOT_THREAD_SCAN_MIN_NS ? took * 50 : HOTSPOT_THREAD_SCAN_MIN_NS;
	t->next_scan_ns = now + (wait < HOTSPOT_THREAD_RESCAN_NS ? wait : HOTSPOT_THREAD_RESCAN_NS);
	if (rc)
		return; /* keep what we had */
	t->e = NULL;
	t->n = t->cap = 0;
	u64map_init(&t->by_tid);
	for (i = 0; i < n; i++) {
		uint64_t *v = u64map_get(&old_idx, (uint64_t)t->list[i].tid);
		const struct jt_entry *o = v ? &old[*v - 1] : NULL;
		struct jt_entry *e;

		if (find(t, t->list[i].tid))
			continue; /* listed twice: the list changed under us */
		e = add(t, t->list[i].tid, t->list[i].jt, JT_UNREAD, 0);
		if (e && o && o->jt == e->jt && (o->state == JT_NAMED || o->state == JT_NO_NAME)) {
			e->state = o->state;
			e->read_ns = o->read_ns;
			memcpy(e->name, o->name, sizeof(e->name));
		}
	}
	xfree(old);
	u64map_release(&old_idx);
}

const char *hotspot_threads_name(struct hotspot_threads *t, struct procmem *m,
				 const struct hotspot_vm *vm, int32_t tid, uint64_t now)
{
	struct jt_entry *e;
	char buf[HOTSPOT_THREAD_NAME_MAX];
	int rc;

	t->lookups++;
	if (tid <= 0 || !vm->thr.usable || t->ready < 0)
		return NULL;
	if (!t->ready) {
		if (now < t->next_try_ns)
			return NULL;
		rc = hotspot_jenv_read(m, vm, &t->env, NULL);
		if (rc == 0) {
			t->ready = 1;
		} else if ((rc == -EAGAIN || rc == -EFAULT) && ++t->tries < JENV_TRIES) {
			t->next_try_ns = now + JENV_RETRY_NS;
			return NULL;
		} else {
			t->ready = -1;
			return NULL;
		}
	}
	e = find(t, tid);
	/* a thread not seen yet, or not in the list a while ago: look at the list */
	if ((!e || (e->state == JT_OTHER && now - e->read_ns >= HOTSPOT_THREAD_RESCAN_NS)) &&
	    now >= t->next_scan_ns) {
		scan(t, m, vm, now);
		e = find(t, tid);
		if (!e) {
			add(t, tid, 0, JT_OTHER, now); /* not a Java thread, for a while */
			return NULL;
		}
	}
	if (!e) {
		add(t, tid, 0, JT_OTHER, 0); /* looked up at the next read of the list */
		return NULL;
	}
	if (e->state == JT_OTHER)
		return NULL;
	if (e->state == JT_UNREAD || now - e->read_ns >= HOTSPOT_THREAD_TTL_NS) {
		t->reads++;
		e->read_ns = now;
		rc = hotspot_jthread_name(m, vm, &t->env, e->jt, tid, buf, sizeof(buf));
		if (rc == 0) {
			memcpy(e->name, buf, sizeof(e->name));
			e->state = JT_NAMED;
		} else if (rc == -ESRCH) {
			/* the id is another thread's now: a look at the list will tell */
			t->read_errors++;
			e->state = JT_OTHER;
			e->read_ns = 0; /* looked up at the next read of the list */
			return NULL;
		} else if (e->state != JT_NAMED) {
			/* a name read while the GC moves it may fail once: an older one stays */
			t->read_errors++;
			e->state = JT_NO_NAME;
		}
	}
	if (e->state != JT_NAMED)
		return NULL;
	t->named++;
	return e->name;
}

void hotspot_threads_stats(const struct hotspot_threads *t, struct hotspot_threads_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!t)
		return;
	st->lookups = t->lookups;
	st->named = t->named;
	st->reads = t->reads;
	st->scans = t->scans;
	st->read_errors = t->read_errors;
	st->threads = t->n;
	st->ready = t->ready;
}
