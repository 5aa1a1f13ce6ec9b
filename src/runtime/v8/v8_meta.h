/* v8_meta.h: what a file with V8 in it says about V8: the version, the object layout and frame
 * constants from its postmortem metadata (the v8dbg_* symbols that V8's
 * tools/gen-postmortem-metadata.py generates and Node always links in), and where the embedded
 * builtins and the interpreter's entry trampolines are. Read once per file
 * (runtime_ops.file_detect).
 *
 * Nothing is hard-coded where the metadata has it. Some fields were never in the metadata or
 * left it over time; those are derived from what is there, by V8 version, and listed in
 * struct v8_file.fallbacks (docs/v8.md has the table):
 *   JSFunction::code            shared + 3 tagged slots (before 11.7), shared - 1 slot after
 *   Code::instruction_start     source_position_table + 2 tagged slots (11.1.204+: a pointer)
 *   Code::flags, instruction_size   instruction_start + 8, flags + 8 (flags + 4 from 11.4.59)
 *   CodeKind MAGLEV, TURBOFAN   CodeKindBaseline + 1, + 2
 *   BytecodeArray::source_position_table   FixedArrayBase::length + 3 tagged slots
 *   SharedFunctionInfo::function_literal_id  flags + 4
 *   InterpreterData::bytecode_array   the first field (one tagged slot)
 *   ExternalString data         resource + one pointer (the cached data pointer)
 *   ScopeInfo flags bits        has_saved_class_variable 10, function_variable 12-13,
 *                               has_inferred_function_name 14 (9.x - 12.x)
 * A build whose metadata lacks what cannot be derived (the frame slots, the SFI and JSFunction
 * fields, the type ids) is refused with the name of what is missing.
 *
 * Every value comes from the file: a lying file gives wrong offsets, which the process readers
 * (v8_heap.c) survive (every object is type-checked) and the per-process check catches.
 *
 * Ownership: struct v8_file owns bytecode_sizes; v8_file_release() frees it. */
#ifndef SCORCH_RUNTIME_V8_META_H
#define SCORCH_RUNTIME_V8_META_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/v8/v8.h"

struct elf_file;
struct errmsg;

#define V8_MAX_FRAME_TYPES 64
#define V8_MAX_BYTECODES 1024

/* The object layout user space reads (offsets in bytes from the untagged object). */
struct v8_layout {
	uint32_t tagged_size, smi_shift, ptr_size;
	uint32_t heap_object_tag, heap_object_tag_mask;
	/* instance types */
	uint32_t first_nonstring;
	uint32_t t_js_function_first, t_js_function_last;
	uint32_t t_sfi, t_scope_info, t_script, t_code, t_bytecode_array, t_byte_array;
	uint32_t t_fixed_array, t_weak_fixed_array, t_interpreter_data, t_instruction_stream;
	/* strings */
	uint32_t str_rep_mask, str_enc_mask, str_one_byte;
	uint32_t str_seq, str_cons, str_external, str_sliced, str_thin;
	uint32_t str_length, seq_chars, cons_first, cons_second, thin_actual;
	uint32_t sliced_parent, sliced_offset, ext_resource, ext_data;
	/* objects */
	uint32_t obj_map, map_instance_type;
	uint32_t fa_length, fa_data;
	uint32_t fn_shared, fn_code;
	uint32_t sfi_function_data, sfi_name_or_scope_info, sfi_script, sfi_length, sfi_flags;
	uint32_t sfi_literal_id;
	uint32_t si_base;            /* first slot of a ScopeInfo (after map, or map + length) */
	uint32_t si_flags, si_ncontextlocals, si_first_vars; /* slot indices */
	uint32_t script_source, script_name, script_line_ends;
	uint32_t code_deopt, code_spt, code_bytecode, code_start, code_size, code_flags;
	uint32_t code_istream;       /* Code::instruction_stream (just before the start) */
	uint32_t is_body;            /* InstructionStream: where its instructions start */
	uint32_t bca_spt, bca_data;
	uint32_t id_bytecode_array;  /* InterpreterData::bytecode_array */
	uint32_t deopt_inlined_count, deopt_literals, deopt_sfi, deopt_inlining;
	uint32_t kind_interpreted, kind_baseline, kind_maglev, kind_turbofan;
	uint32_t kind_shift, kind_mask;
	int32_t fp_context, fp_function, fp_bytecode_array, fp_bytecode_offset;
};

struct v8_file {
	uint32_t major, minor, build, patch;
	struct v8_layout lay;
	struct v8_offsets off;                 /* what the BPF walker needs (v8.h) */
	uint64_t builtins_lo, builtins_hi;     /* link-time range of the embedded builtins */
	uint64_t builtins_offset;              /* the file offset of builtins_lo (0: unknown) */
	uint64_t interp_lo[V8_INTERP_RANGES], interp_hi[V8_INTERP_RANGES];
	int ninterp;
	uint64_t handlers_lo, handlers_hi;     /* the bytecode handlers (the builtins' tail), or 0 */
	uint64_t blob_code_var, blob_size_var; /* link-time addresses of V8's variables holding the
					        * embedded code's address and size (0: unknown) */
	uint8_t *bytecode_sizes;               /* Bytecodes::kBytecodeSizes: 3 x nbytecodes */
	size_t nbytecodes;
	char frame_types[V8_MAX_FRAME_TYPES][32]; /* frame type id -> "InterpretedFrame" */
	int nmetadata;                         /* v8dbg_* symbols read */
	char fallbacks[1024];                  /* fields derived, not read: "JSFunction::code, ..." */
	char path[256];
};

/* 1 when path looks like a V8 embedder by name: node, nodejs, node20, nsolid, libnode.so*. */
int v8_is_embedder_path(const char *path);

/* 1 with out filled when e (mapped as path) carries V8 with usable metadata; 0 when it has no
 * V8 (not named like an embedder and no v8dbg_* in its dynamic symbols); -ENOTSUP with a reason
 * in err for a V8 whose metadata lacks what the walker needs; another negative errno on read
 * errors. On 1 the caller releases out with v8_file_release(). */
int v8_file_detect(struct elf_file *e, const char *path, struct v8_file *out,
		   struct errmsg *err);
void v8_file_release(struct v8_file *f);

/* (major << 24) | (minor << 16) | build: for comparisons with version thresholds. */
static inline uint32_t v8_version_key(uint32_t major, uint32_t minor, uint32_t build)
{
	return (major << 24) | (minor << 16) | (build & 0xffff);
}

/* The name of a frame type ("InterpretedFrame"), or NULL. */
const char *v8_frame_type_name(const struct v8_file *f, uint32_t type);

#endif
