/* v8_heap.h: reading V8's objects out of another process (or a memory image): strings,
 * SharedFunctionInfos (name, inferred name, script, start position), Scripts (name, line ends),
 * Code objects (kind, instructions, source positions, inlined functions), bytecode arrays; and
 * the table decoders that turn code offsets into source positions and lines.
 *
 * Process memory is hostile: the process runs on while we read, the GC moves and frees
 * objects, a lying or corrupted heap must give an error and never a crash, a hang or an
 * unbounded allocation. Every object is type-checked through its map before its fields are
 * believed; every length is capped (V8_NAME_MAX, V8_SOURCE_MAX, V8_TABLE_MAX); every walk is
 * bounded (struct v8_reader.budget counts the reads one operation may make).
 *
 * The decoders are pure functions on bytes (fuzzed and unit-tested):
 *   v8_spt_decode()      a source position table (bytecode or machine code): entries of
 *                        (code offset, source position), each a zig-zag VLQ delta
 *   v8_baseline_offset() a Sparkplug pc offset -> bytecode offset, from the code's bytecode
 *                        offset table walked in step with the bytecodes
 *   v8_line_of()         a script offset -> line, from the script's line ends
 * A source position (V8's SourcePosition) packs: bit 0 external, bits 1-30 script offset + 1,
 * bits 31-46 inlining id + 1 (0: not inlined). */
#ifndef SCORCH_RUNTIME_V8_HEAP_H
#define SCORCH_RUNTIME_V8_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/v8/v8_meta.h"

struct procmem;

#define V8_NAME_MAX 512            /* bytes of UTF-8 kept of a function name */
#define V8_FILE_MAX 1024           /* bytes of UTF-8 kept of a script name */
#define V8_SOURCE_MAX (64u << 20)  /* characters of a script read for its line ends */
#define V8_TABLE_MAX (4u << 20)    /* bytes of a position / offset table, of bytecodes */
#define V8_MAX_INLINED 4096        /* inlining positions of one Code object */
#define V8_READ_BUDGET 100000      /* reads of one operation (a string, a function, a code) */

/* One process's heap as the readers see it. */
struct v8_reader {
	struct procmem *mem;
	const struct v8_file *f;
	long budget;          /* reads left in the current operation */
	uint64_t is_map;      /* the InstructionStream map, once seen (v8_code_at_pc) */
};

/* ---- decoders */

struct v8_pos {
	uint32_t code_offset;  /* bytecode offset, or pc offset from the instruction start */
	uint64_t position;     /* the raw SourcePosition */
};

/* Decode a source position table. 0 with *out (xmalloc'ed, sorted by code offset as V8 wrote
 * it) and *n, or -EINVAL for a malformed table (nothing allocated). */
int v8_spt_decode(const uint8_t *tab, size_t len, struct v8_pos **out, size_t *n);
/* The raw position of the last entry with code_offset <= offset, or -1 when none. */
int64_t v8_spt_lookup(const struct v8_pos *pos, size_t n, uint32_t offset);

static inline int32_t v8_pos_script_offset(uint64_t pos)
{
	return (int32_t)((pos >> 1) & 0x3fffffff) - 1;
}
static inline int32_t v8_pos_inlining_id(uint64_t pos)
{
	return (int32_t)((pos >> 31) & 0xffff) - 1;
}
static inline int v8_pos_external(uint64_t pos)
{
	return (int)(pos & 1);
}

/* The bytecode offset a Sparkplug pc offset belongs to: table is the code's bytecode offset
 * table (unsigned VLQ pc deltas, one per bytecode), bytecodes the bytecode array's bytes, sizes
 * Bytecodes::kBytecodeSizes (3 x nsizes: single, wide, extra-wide operands). Returns the
 * offset, -1 for the function's entry (before the first bytecode), -2 when the tables do not
 * agree. */
int32_t v8_baseline_offset(const uint8_t *table, size_t tlen, const uint8_t *bytecodes,
			   size_t blen, const uint8_t *sizes, size_t nsizes, uint32_t pc_offset);

/* The 1-based line of script offset pos given the offsets of the line ends (each the offset of
 * a '\n', ascending), or 0 when pos is negative. */
int v8_line_of(const uint32_t *ends, size_t n, int32_t pos);

/* ---- readers (0 or a negative errno; never a partial result) */

/* The instance type of the heap object obj (a tagged pointer). */
int v8_type_of(struct v8_reader *r, uint64_t obj, uint32_t *type);
/* A tagged field at off of obj: the full value (decompressed under pointer compression). */
int v8_field(struct v8_reader *r, uint64_t obj, uint32_t off, uint64_t *val);
/* The value of a SMI held in a tagged field. */
int64_t v8_smi_value(const struct v8_reader *r, uint64_t v);
static inline int v8_is_smi(uint64_t v)
{
	return (v & 1) == 0;
}
/* A string as UTF-8 (NUL-terminated, at most outlen - 1 bytes, cut at a character boundary).
 * -EINVAL when obj is not a string. */
int v8_read_string(struct v8_reader *r, uint64_t obj, char *out, size_t outlen);
/* The line ends of a string (offsets of its '\n' characters, in UTF-16 units as V8 counts
 * script positions): *ends xmalloc'ed. Up to V8_SOURCE_MAX characters. */
int v8_string_line_ends(struct v8_reader *r, uint64_t obj, uint32_t **ends, size_t *n);

/* What a SharedFunctionInfo says. */
struct v8_sfi_info {
	char name[V8_NAME_MAX];      /* the function's name, "" when anonymous */
	char inferred[V8_NAME_MAX];  /* the name V8 inferred for an anonymous function, or "" */
	uint64_t script;             /* the Script, or 0 */
	int32_t start_pos, end_pos;  /* in the script, -1 when not known */
	uint64_t bytecode;           /* its BytecodeArray, or 0 */
	uint64_t baseline;           /* its Sparkplug Code, or 0 */
	uint64_t sum_a, sum_b;       /* the bytes the walker's checksum covers (masked) */
};
int v8_read_sfi(struct v8_reader *r, uint64_t sfi, struct v8_sfi_info *out);

/* A Script's name (its file or URL) and line ends (from Script::line_ends when V8 computed
 * them, else from the source). ends may be NULL (not wanted). */
int v8_read_script(struct v8_reader *r, uint64_t script, char *name, size_t namelen,
		   uint32_t **ends, size_t *nends);

/* A Code object. */
struct v8_code_info {
	uint32_t kind;
	uint64_t start;          /* instruction start */
	uint32_t size;
	uint64_t spt;            /* its source position table (baseline: bytecode offset table) */
	uint64_t deopt;          /* its deoptimization data (FixedArray), or 0 */
	uint64_t bytecode;       /* baseline: its BytecodeArray, or 0 */
};
int v8_read_code(struct v8_reader *r, uint64_t code, struct v8_code_info *out);
/* The Code object whose instructions hold pc, found by its InstructionStream header below pc
 * (scanned back at most 1 MiB): 0 with *code, or -ENOENT. */
int v8_code_at_pc(struct v8_reader *r, uint64_t pc, uint64_t *code);

/* The bytes of a ByteArray (position tables), or of a BytecodeArray's bytecodes: *out
 * xmalloc'ed, at most V8_TABLE_MAX. */
int v8_read_byte_array(struct v8_reader *r, uint64_t arr, uint8_t **out, size_t *len);
int v8_read_bytecodes(struct v8_reader *r, uint64_t bca, uint8_t **out, size_t *len);
/* The BytecodeArray behind a SharedFunctionInfo's function data (a BytecodeArray, an
 * InterpreterData or a Sparkplug Code holding one), or 0. */
uint64_t v8_bytecode_of(struct v8_reader *r, uint64_t data);

/* Inlining of an optimized Code: the inlining positions (caller position, index into the
 * literal SFIs) and the SFI of each. */
struct v8_inlined {
	uint64_t position;  /* raw SourcePosition of the call in the caller */
	uint64_t sfi;       /* the inlined function's SFI */
};
/* *out xmalloc'ed (may be NULL with *n 0: nothing inlined); *outer the SFI of the code. */
int v8_read_inlining(struct v8_reader *r, uint64_t deopt, struct v8_inlined **out, size_t *n,
		     uint64_t *outer);

#endif
