/* hotspot_vm.h: what a HotSpot JVM says about itself. libjvm.so exports tables describing its
 * own C++ structures (gHotSpotVMStructs: type, field, offset or address of a static;
 * gHotSpotVMTypes: type sizes; gHotSpotVMIntConstants) for the Serviceability Agent. Nothing
 * here is hard-coded per version: every offset comes from those tables, read from the running
 * process (or a memory image), with the names each JDK uses (JDK 11, 17, 21 and those around
 * them). In three steps:
 *   hotspot_file_detect()  the file: is it a libjvm.so with the tables (their link-time
 *                          addresses, from its symbols). Cheap for other files.
 *   hotspot_vm_read()      the process: read the tables, check them (strides, entry counts,
 *                          every field inside its type, types <= 64 KiB), pick the fields the
 *                          walker and the symbolizer need, the version.
 *   hotspot_vm_code_cache() the code heaps, the interpreter's code and the stub routines'
 *                          entries, once the JVM has set them up (-EAGAIN before).
 *
 * Process memory is hostile input: every count and string is bounded, and a table that lies
 * (a field outside its type, a stride too large, a heap whose boundaries are reversed) is an
 * error, never a crash. tests/fuzz/fuzz_hotspot.c feeds it images.
 *
 * Ownership: struct hotspot_vm owns its stub list (hotspot_vm_release()). Not thread-safe. */
#ifndef SCORCH_RUNTIME_HOTSPOT_VM_H
#define SCORCH_RUNTIME_HOTSPOT_VM_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/hotspot/hotspot.h"

struct elf_file;
struct errmsg;
struct procmem;

#define HOTSPOT_MAX_STRIDE 256
#define HOTSPOT_MAX_ENTRIES (128u << 10)
#define HOTSPOT_MAX_TYPE_SIZE (64u << 10)
#define HOTSPOT_NAME_MAX 96       /* bytes of a type or field name in the tables */
#define HOTSPOT_MAX_STUBS 512     /* StubRoutines entry points kept for naming stubs */

/* The exported symbols of libjvm.so, as link-time addresses (add the load bias). */
enum hotspot_export {
	HS_SYM_STRUCTS = 0,      /* gHotSpotVMStructs (a pointer to the entry array) */
	HS_SYM_S_STRIDE,         /* gHotSpotVMStructEntryArrayStride */
	HS_SYM_S_TYPE,           /* ...TypeNameOffset */
	HS_SYM_S_FIELD,          /* ...FieldNameOffset */
	HS_SYM_S_TYPESTR,        /* ...TypeStringOffset */
	HS_SYM_S_STATIC,         /* ...IsStaticOffset */
	HS_SYM_S_OFFSET,         /* ...OffsetOffset */
	HS_SYM_S_ADDRESS,        /* ...AddressOffset */
	HS_SYM_TYPES,            /* gHotSpotVMTypes */
	HS_SYM_T_STRIDE,
	HS_SYM_T_TYPE,
	HS_SYM_T_SIZE,
	HS_SYM_INTS,             /* gHotSpotVMIntConstants */
	HS_SYM_I_STRIDE,
	HS_SYM_I_NAME,
	HS_SYM_I_VALUE,
	HS_SYM__COUNT,
};

struct hotspot_file {
	uint64_t sym[HS_SYM__COUNT];
	char path[256];
};

/* 1 with out filled when e (mapped as path) is a HotSpot libjvm.so, 0 when it is not, or a
 * negative errno on read errors. */
int hotspot_file_detect(struct elf_file *e, const char *path, struct hotspot_file *out);
/* The symbol names, for tests and tools. */
const char *hotspot_sym_name(enum hotspot_export s);

struct hotspot_stub {
	uint64_t addr;  /* the entry point (0: not generated yet) */
	uint64_t var;   /* the StubRoutines variable holding it */
	char name[48];  /* "call_stub_return_address", "jbyte_arraycopy", ... */
};

/* Everything the walker and the symbolizer need, from the tables. Offsets in bytes; a field
 * the version does not have is HS_NO_FIELD. */
#define HS_NO_FIELD 0xffffffffu

/* What naming Java threads takes (hotspot_threads.c): the thread list, the way from a
 * JavaThread to its java.lang.Thread, class metadata to find the Java fields, and the flags
 * that say how object references are stored. Optional: usable is 0 when the JVM's tables lack
 * any of it (its threads keep their kernel names). */
struct hotspot_thread_offsets {
	int usable;
	uint64_t java_thread_list;  /* &ThreadsSMRSupport::_java_thread_list (ThreadsList *) */
	uint32_t tl_length;         /* ThreadsList::_length (uint) */
	uint32_t tl_threads;        /* ThreadsList::_threads (JavaThread **) */
	uint32_t jt_osthread;       /* JavaThread::_osthread (OSThread *) */
	uint32_t jt_thread_obj;     /* JavaThread::_threadObj */
	uint32_t jt_obj_handle;     /* 1: _threadObj is an OopHandle (JDK 16+), 0: an oop */
	uint32_t oh_obj;            /* OopHandle::_obj (oop *) */
	uint32_t os_thread_id;      /* OSThread::_thread_id (pid_t) */
	uint64_t thread_klass;      /* &vmClasses::_klasses[Thread_klass_knum] (InstanceKlass *) */
	uint64_t string_klass;      /* ... String_klass_knum */
	uint64_t narrow_oop_base, narrow_oop_shift;     /* statics: address, int */
	uint64_t narrow_klass_base, narrow_klass_shift;
	uint64_t flags, num_flags;  /* &JVMFlag::flags (JVMFlag *), &JVMFlag::numFlags (size_t) */
	uint32_t flag_size, flag_name, flag_addr; /* sizeof(JVMFlag), _name, _addr */
	uint32_t oop_klass;         /* oopDesc::_metadata._klass */
	uint32_t klass_super;       /* Klass::_super */
	uint32_t klass_layout;      /* Klass::_layout_helper (jint) */
	uint32_t ik_fields;         /* InstanceKlass::_fields (Array<u2> *) */
	uint32_t ik_java_fields;    /* InstanceKlass::_java_fields_count (u2) */
	uint32_t array_u2_data;     /* Array<u2>::_data */
	uint32_t fi_access, fi_name, fi_sig, fi_low, fi_high, fi_slots; /* FieldInfo u2 slots */
	uint32_t fi_tag_size, fi_tag_offset; /* FIELDINFO_TAG_SIZE, FIELDINFO_TAG_OFFSET */
};

struct hotspot_vm {
	unsigned major, minor, security, build;
	char release[80];         /* "17.0.21.1+2-1-deb12u1-Debian", or "" */
	struct hs_proc bpf;       /* the walker's offsets (and, after hotspot_vm_code_cache(),
				   * the code cache) */
	/* symbolization */
	uint32_t method_size;       /* sizeof(Method) */
	uint32_t cm_constants;      /* ConstMethod::_constants */
	uint32_t cm_flags;          /* ConstMethod::_flags (or _flags._flags) */
	uint32_t cm_flags_size;     /* 2 or 4 */
	uint32_t cm_code_size;      /* u2 */
	uint32_t cm_name_index;     /* u2 */
	uint32_t cm_signature_index;
	uint32_t cm_has_linenumbers; /* the flag bit */
	uint32_t cp_size;           /* sizeof(ConstantPool): the slots follow it */
	uint32_t cp_pool_holder;    /* ConstantPool::_pool_holder */
	uint32_t cp_length;         /* ConstantPool::_length (int) */
	uint32_t cp_source_file;    /* ConstantPool::_source_file_name_index (u2), or NO_FIELD */
	uint32_t ik_source_file;    /* InstanceKlass::_source_file_name_index (JDK <= 13) */
	uint32_t ik_constants;      /* InstanceKlass::_constants */
	uint32_t klass_name;        /* Klass::_name */
	uint32_t sym_length;        /* Symbol::_length (u2), or _length_and_refcount (u32) */
	uint32_t sym_length_shift;  /* 0, or 16 when the length is the high half of a u32 */
	uint32_t sym_body;          /* Symbol::_body */
	uint32_t nm_method;         /* CompiledMethod::_method (nmethod::_method) */
	uint32_t nm_scopes_data;    /* CompiledMethod::_scopes_data_begin (address) */
	uint32_t nm_metadata;       /* nmethod::_metadata_offset (int, from the blob) */
	uint32_t nm_scopes_pcs;     /* nmethod::_scopes_pcs_offset */
	uint32_t nm_dependencies;   /* nmethod::_dependencies_offset */
	uint32_t pc_size;           /* sizeof(PcDesc) */
	uint32_t pc_pc_offset;      /* PcDesc::_pc_offset */
	uint32_t pc_scope;          /* PcDesc::_scope_decode_offset */
	uint32_t unsigned5_x;       /* bytes excluded by the compressed streams: 1 from JDK 19 */
	/* process statics */
	uint64_t heaps_addr;        /* &CodeCache::_heaps */
	uint64_t low_bound_addr, high_bound_addr;
	uint32_t ga_len, ga_data;   /* GrowableArrayBase::_len, GrowableArray<int>::_data */
	uint32_t heap_memory, heap_segmap, heap_log2; /* CodeHeap fields */
	uint32_t vs_low_boundary, vs_high_boundary, vs_low; /* VirtualSpace fields */
	uint64_t interp_code_addr;  /* &AbstractInterpreter::_code */
	uint32_t sq_buffer, sq_limit; /* StubQueue::_stub_buffer, _buffer_limit */
	uint64_t java_command_addr; /* &Arguments::_java_command */
	uint64_t call_stub_ret_addr; /* &StubRoutines::_call_stub_return_address */
	/* StubRoutines::_* entry point variables, read by hotspot_vm_code_cache() */
	struct hotspot_stub *stubs; /* sorted by addr once resolved */
	size_t nstubs;
	size_t stubs_resolved;      /* how many have their entry point */
	size_t entries_read;        /* vmStructs entries seen (statistics) */
	struct hotspot_thread_offsets thr; /* Java thread names */
};

/* Read the tables of the libjvm of f loaded with bias. 0, or:
 *   -ENOTSUP  a JVM we cannot walk (version, a structure we need is missing): err says which
 *   -EINVAL   the tables are inconsistent (err says how)
 *   -EFAULT   memory could not be read (the process exits, or the JVM is not up yet)
 * On success release out with hotspot_vm_release(). */
int hotspot_vm_read(struct procmem *m, const struct hotspot_file *f, uint64_t bias,
		    struct hotspot_vm *out, struct errmsg *err);
/* Fill vm->bpf's code cache (heaps, bounds, interpreter) and resolve the stub list (again when
 * called again: stubs are generated in phases). 0, -EAGAIN (the code cache is not set up
 * yet), -EINVAL (it makes no sense), -EFAULT. */
int hotspot_vm_code_cache(struct procmem *m, struct hotspot_vm *vm, struct errmsg *err);
void hotspot_vm_release(struct hotspot_vm *vm);

/* The name of the StubRoutines entry at or before addr (within max_dist bytes), or NULL. */
const char *hotspot_vm_stub_name(const struct hotspot_vm *vm, uint64_t addr, uint64_t max_dist);

/* The JVM's command (Arguments::_java_command: "com.example.Main args", "app.jar args",
 * "module/com.example.Main args"), its first word in out. 0, -ENOENT (none yet), -EFAULT. */
int hotspot_vm_java_command(struct procmem *m, const struct hotspot_vm *vm, char *out,
			    size_t outlen);

#endif
