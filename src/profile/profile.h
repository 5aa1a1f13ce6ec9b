/* profile.h: the in-memory profile model shared by the recorder, the agent, the server and
 * every codec (pprof, folded, speedscope, html). It mirrors pprof's model closely, so that
 * encoding and decoding are direct:
 *
 *   mapping  : an executable or library mapped in a process (address range, file, build id)
 *   function : a symbol (name, source file, start line) and its kind (native, kernel, python)
 *   location : one frame: address (+ mapping) and/or function + line
 *   sample   : a stack of locations, LEAF FIRST as in pprof, a value and labels
 *
 * Functions and locations are interned (adding the same one twice returns the same id), and
 * samples with the same stack and labels are merged by adding their values, so a profile stays
 * small however many raw samples feed it. Ids are 1-based (0 means "none"), as in pprof.
 *
 * The profile owns all its memory, including the strings, which live in its strtab.
 * profile_free() releases everything. */
#ifndef SCORCH_PROFILE_H
#define SCORCH_PROFILE_H

#include <stddef.h>
#include <stdint.h>

struct strtab;

enum frame_kind {
	FRAME_NATIVE = 0,  /* user-space machine code: name is the (demangled) symbol */
	FRAME_KERNEL = 1,  /* kernel: folded as "name_[k]" */
	FRAME_PYTHON = 2,  /* interpreted: folded as "qualname (file:line)" */
	FRAME_SPECIAL = 3, /* scorch's markers: [idle], [truncated], [unwind error], ... */
};

struct profile_mapping {
	uint64_t start, limit, offset;
	uint32_t file;     /* string id */
	uint32_t build_id; /* string id, lowercase hex, or 0 */
	uint8_t main_exe;  /* the executable of its process (not a library); tools take the
			      first mapping for the main file: profile_mappings_main_first() */
};

struct profile_function {
	uint32_t name;        /* string id: display name (demangled) */
	uint32_t system_name; /* string id: mangled name, or same as name */
	uint32_t filename;    /* string id, or 0 */
	int64_t start_line;
	uint8_t kind;         /* enum frame_kind */
};

/* A frame. Inlined calls are frames of their own: a location with `inlined` set is a function
 * inlined into the frame that follows it in a sample (its caller, at the same address and
 * mapping), as pprof's Line entries of one Location, innermost first. The pprof codec turns
 * such runs into one Location with several Lines and back. */
struct profile_location {
	uint64_t address; /* absolute in the process, 0 if unknown */
	uint32_t mapping; /* mapping id or 0 */
	uint32_t function; /* function id or 0 (unsymbolized) */
	int64_t line;
	uint8_t inlined;  /* inlined into the next frame of the stack */
};

struct profile_label {
	uint32_t key; /* string id */
	uint32_t str; /* string id, or 0 for a numeric label */
	int64_t num;
};

struct profile_sample {
	uint32_t locs_first; /* index into the location-id pool */
	uint32_t nlocs;
	uint32_t labels_first; /* index into the label pool */
	uint32_t nlabels;
	int64_t value;
};

struct profile {
	struct strtab *strings;

	struct profile_mapping *mappings; /* mappings[id - 1] */
	size_t nmappings, mappings_cap;
	struct profile_function *functions;
	size_t nfunctions, functions_cap;
	struct profile_location *locations;
	size_t nlocations, locations_cap;
	struct profile_sample *samples;
	size_t nsamples, samples_cap;
	uint32_t *loc_pool; /* location ids of all samples, leaf first */
	size_t loc_pool_len, loc_pool_cap;
	struct profile_label *label_pool;
	size_t label_pool_len, label_pool_cap;

	/* Sample and period type, as pprof's ValueType (string ids). Default cpu/nanoseconds.
	 * CPU profiles from the sampler use sample type samples/count (value = number of samples)
	 * with period type cpu/nanoseconds and period = 1e9 / frequency: the pprof encoder then
	 * writes two sample values, samples/count and cpu/nanoseconds (= count * period), as Go's
	 * own CPU profiles do; the decoder of such a profile keeps the count. */
	uint32_t sample_type, sample_unit;
	uint32_t period_type, period_unit;
	int64_t period;         /* e.g. 1e9/99 ns at 99 Hz */
	int64_t time_nanos;     /* start, unix ns */
	int64_t duration_nanos;

	/* Several values per sample, kept by decoders asked for every sample type (pprof with
	 * PPROF_ALL_TYPES) so that a profile is decoded once however many types it has: nvalues
	 * columns of types value_types[k] / value_units[k] (string ids); sample i's value k is
	 * values[i * nvalues + k], and `value` is column value_index. 0 columns otherwise.
	 * profile_merge() and the writers use `value` only. */
	uint32_t nvalues, value_index;
	uint32_t *value_types, *value_units;
	int64_t *values;
	size_t values_cap;
	/* Presentation: 1 when frame names carry source lines (`--lines`), so that a function
	 * sampled on several lines becomes several frames; 0 (default) aggregates by function.
	 * See profile_frame_name(). */
	uint8_t show_lines;

	/* private: intern indexes */
	void *priv;
};

struct profile *profile_new(void);
void profile_free(struct profile *p);

uint32_t profile_str(struct profile *p, const char *s);
const char *profile_get_str(const struct profile *p, uint32_t id);

/* Set the sample type, e.g. ("cpu", "nanoseconds"); the period type follows it. */
void profile_set_type(struct profile *p, const char *type, const char *unit, int64_t period);
/* Set the period type separately, e.g. ("cpu", "nanoseconds") for a samples/count profile. */
void profile_set_period_type(struct profile *p, const char *type, const char *unit);

/* Mappings are not interned (a process may map one file at several ranges). Set main_exe of
 * the result (p->mappings[id - 1]) for a process's executable. */
uint32_t profile_add_mapping(struct profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			     const char *file, const char *build_id);
uint32_t profile_intern_function(struct profile *p, enum frame_kind kind, const char *name,
				 const char *system_name, const char *filename, int64_t start_line);
uint32_t profile_intern_location(struct profile *p, uint32_t mapping, uint64_t address,
				 uint32_t function, int64_t line);
/* The same for an inlined frame when inlined is 1 (see struct profile_location). */
uint32_t profile_intern_location_inl(struct profile *p, uint32_t mapping, uint64_t address,
				     uint32_t function, int64_t line, int inlined);

/* Add value to the sample with this stack (location ids, leaf first) and these labels,
 * creating it if needed. Labels are compared in the order given. */
void profile_add_sample(struct profile *p, const uint32_t *locs, size_t nlocs,
			const struct profile_label *labels, size_t nlabels, int64_t value);

static inline const uint32_t *profile_sample_locs(const struct profile *p,
						  const struct profile_sample *s)
{
	return p->loc_pool ? p->loc_pool + s->locs_first : NULL; /* NULL only when empty */
}
static inline const struct profile_label *profile_sample_labels(const struct profile *p,
								 const struct profile_sample *s)
{
	return p->label_pool ? p->label_pool + s->labels_first : NULL;
}
/* Give p n value columns (type and unit string ids, n >= 1), `value` being column index.
 * Call before the first sample. */
void profile_set_value_types(struct profile *p, size_t n, const uint32_t *types,
			     const uint32_t *units, uint32_t index);
/* profile_add_sample() for a profile with value columns: values[0..nvalues) are added to the
 * sample's columns (and values[value_index] to its `value`). */
void profile_add_sample_values(struct profile *p, const uint32_t *locs, size_t nlocs,
			       const struct profile_label *labels, size_t nlabels,
			       const int64_t *values);
/* Value k of sample s (`value` when the profile has no columns). */
int64_t profile_sample_value(const struct profile *p, const struct profile_sample *s, uint32_t k);

/* The string value of label key (e.g. "comm") on sample s, or NULL. */
const char *profile_sample_label_str(const struct profile *p, const struct profile_sample *s,
				     const char *key);

/* The frame name of location id as the folded format shows it. By function (the default):
 *   native "symbol", kernel "symbol_[k]", python "qualname (file)", special "[idle]",
 *   unsymbolized "module+0xOFFSET" (offset in the file) or "[unknown]";
 * with lines (PROFILE_NAME_LINES), when the line is known:
 *   native "symbol (file:LINE)", python "qualname (file:LINE)".
 * So a function sampled on several lines is one frame unless lines are asked for.
 * profile_frame_name() follows p->show_lines. Written into out (always NUL-terminated,
 * truncated to outlen). Returns the length written. */
#define PROFILE_NAME_LINES 1u
size_t profile_frame_name(const struct profile *p, uint32_t loc, char *out, size_t outlen);
size_t profile_frame_name_flags(const struct profile *p, uint32_t loc, unsigned flags, char *out,
				size_t outlen);

/* Frame names (as written by profile_frame_name()) parsed back: "name (file:LINE)" gives
 * name, file and line (file and line only when LINE is a positive decimal number), "qual
 * (file.py)" and other runtimes' files (profile_is_runtime_file()) name and file, anything
 * else the name alone. Sets the offsets and lengths into s; *line is 0 when none. Returns 1
 * when a file part was found. */
int profile_frame_split(const char *s, size_t n, size_t *name_len, size_t *file_off,
			size_t *file_len, int64_t *line);
/* The language of a runtime frame's source file, told by its name: Python ("x.py", "x.pyw",
 * "<frozen ...>", "<string>"), JavaScript ("x.js", "x.mjs", "x.ts", "node:internal/..."),
 * the JVM ("X.java", "X.kt", ...), Ruby ("x.rb", "<internal:...>"), PHP ("x.php"), Perl
 * ("x.pl", "x.pm", "(eval N)"); PROFILE_LANG_NONE for anything else (native sources: "x.c",
 * "x.rs", "x.go", ...). */
enum profile_lang {
	PROFILE_LANG_NONE = 0,
	PROFILE_LANG_PYTHON,
	PROFILE_LANG_JS,
	PROFILE_LANG_JAVA,
	PROFILE_LANG_RUBY,
	PROFILE_LANG_PHP,
	PROFILE_LANG_PERL,
};
#define PROFILE_NLANGS 7
enum profile_lang profile_file_lang(const char *file, size_t len);
/* Whether a frame's file part names a runtime's source (profile_file_lang() knows it): such
 * frames keep their file when aggregated by function, so that two functions of one name in
 * two files ("(anonymous)" of a.js and of b.js) stay two frames in every view. */
int profile_is_runtime_file(const char *file, size_t len);
/* The by-function form of a frame name written with lines: "f (file.c:12)" -> "f",
 * "q (x.py:12)" -> "q (x.py)", "(anonymous) (/app/a.js:3)" -> "(anonymous) (/app/a.js)";
 * other names unchanged. Returns the length written to out (NUL-terminated, truncated to
 * outlen). */
size_t profile_frame_strip_line(const char *s, char *out, size_t outlen);

/* Renumber the mappings so that those with main_exe come first (each group in its order), the
 * locations following; for writers whose readers take the first mapping for the profile's
 * main file (pprof). Call once the profile is built (location ids stay). */
void profile_mappings_main_first(struct profile *p);

/* Sum of all sample values. */
int64_t profile_total(const struct profile *p);

/* Merge src into dst (strings, functions, locations, mappings re-interned). */
void profile_merge(struct profile *dst, const struct profile *src);

/* Give every sample the string label key=value, replacing a label of that key it has (so a
 * written profile carries it, and an ingest makes it a series label). Samples that become
 * equal are merged. */
void profile_set_label(struct profile *p, const char *key, const char *value);

#endif
