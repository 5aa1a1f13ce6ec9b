/* otlp.h: OpenTelemetry profiles (OTLP) in and out of the profile model: the protobuf schema of
 * opentelemetry-proto v1.11.0, `opentelemetry.proto.collector.profiles.v1development`
 * ExportProfilesServiceRequest (what `POST /v1development/profiles` carries), written and read
 * with the hand-written wire codec of protobuf.h. Field numbers and conventions are in
 * docs/formats.md ("OTLP profiles").
 *
 * One OTLP Profile has one sample type, like one struct profile, so a profile maps to a Profile
 * and back. A request holds resources (what produced the profiles: service, host, process,
 * container) with their profiles, and ONE dictionary (strings, mappings, locations, functions,
 * attributes, stacks) shared by all of them.
 *
 * Conventions both directions agree on, so that encode + decode gives the profile back (names,
 * values, labels; ids may differ):
 *   - sample labels are sample attributes; "comm" travels as `thread.name` and "pid" as
 *     `process.pid` (semantic conventions), any other key as is; string labels are string
 *     values, numeric labels int values;
 *   - a frame's kind is the location attribute `profile.frame.type` (`native`, `kernel`,
 *     `cpython`); scorch's markers ([idle], ...) have none and are recognized like pprof's
 *     (a "[...]" name without file or mapping); other types (`jvm`, `go`, ...) read as native;
 *   - a mapping's build id is its attribute `process.executable.build_id.gnu` (read also from
 *     `.go` and `.htlhash` when there is no GNU one);
 *   - a location with several lines (inlined calls, innermost first) becomes as many locations
 *     of the model, leaf first.
 *
 * The decoder treats its input as hostile: gzip is inflated up to lim->max_inflated; every length,
 * index and count is checked (decode_limits.h caps); a malformed request is rejected as a whole
 * with -EBADMSG (or -E2BIG past a cap, -ERANGE when values overflow) and a message naming the
 * field, and nothing of it is returned. */
#ifndef SCORCH_OTLP_H
#define SCORCH_OTLP_H

#include "lib/buf.h"
#include "lib/log.h"
#include "profile/decode_limits.h"
#include "profile/profile.h"

#include <stddef.h>
#include <stdint.h>

#define OTLP_PROFILES_PATH "/v1development/profiles"
#define OTLP_FRAME_TYPE    "profile.frame.type"
#define OTLP_BUILD_ID_GNU  "process.executable.build_id.gnu"

/* ---- Encoding -------------------------------------------------------------------------- */

/* A resource or profile attribute: a string value, or an integer when str is NULL. */
struct otlp_attr {
	const char *key;
	const char *str;
	int64_t num;
};

/* One resource and the profiles it produced. */
struct otlp_resource {
	const struct otlp_attr *attrs;
	size_t nattrs;
	const char *scope_name;    /* instrumentation scope name, e.g. "scorch"; NULL for none */
	const char *scope_version; /* NULL for none */
	struct profile *const *profiles;
	size_t nprofiles;
};

/* Append the ExportProfilesServiceRequest (raw protobuf) for nres resources to out. Returns 0,
 * or -E2BIG past out->max (out is then as it was). */
int otlp_encode(const struct otlp_resource *res, size_t nres, struct buf *out);

/* The answer of a receiver: an ExportProfilesServiceResponse, with partial_success set when
 * rejected > 0 or msg is non-empty (msg may be NULL). json: the OTLP/JSON form instead of
 * protobuf. */
int otlp_encode_response(int64_t rejected, const char *msg, int json, struct buf *out);
/* An error answer: a google.rpc.Status {code, message} (protobuf or JSON). */
int otlp_encode_status(int code, const char *msg, int json, struct buf *out);
/* Read a receiver's protobuf ExportProfilesServiceResponse: *rejected and msg (NUL-terminated,
 * cut to msglen) from its partial_success, 0 and "" when absent. Returns 0 or -EBADMSG. */
int otlp_decode_response(const void *data, size_t len, int64_t *rejected, char *msg,
			 size_t msglen);

/* ---- Decoding -------------------------------------------------------------------------- */

enum otlp_kind { OTLP_STR = 0, OTLP_INT, OTLP_BOOL, OTLP_DOUBLE, OTLP_OTHER };

/* A decoded attribute. str is the text of any scalar (an int as decimal, a bool as
 * "true"/"false", a double as %g) and "" for arrays, maps and bytes (kind OTLP_OTHER). */
struct otlp_kv {
	const char *key;
	const char *str;
	int64_t num; /* OTLP_INT and OTLP_BOOL */
	uint8_t kind; /* enum otlp_kind */
};

struct otlp_resource_in {
	const struct otlp_kv *attrs;
	size_t nattrs;
};

struct otlp_profile_in {
	struct profile *prof;         /* owned by the request */
	size_t resource;              /* index into resources */
	const char *scope_name;       /* "" when none */
	const struct otlp_kv *attrs;  /* Profile.attribute_indices */
	size_t nattrs;
};

struct otlp_request {
	struct otlp_resource_in *resources;
	size_t nresources;
	struct otlp_profile_in *profiles;
	size_t nprofiles;
	uint64_t samples;  /* Sample messages read */
	void *priv;
};

/* Decode an ExportProfilesServiceRequest (gzip or raw protobuf) into out. Zero fields of lim
 * (may be NULL) take the defaults. Returns 0, or a negative errno with a message in err and out
 * empty. Release with otlp_request_release() either way. */
int otlp_decode(const void *data, size_t len, const struct decode_limits *lim,
		struct otlp_request *out, struct errmsg *err);
void otlp_request_release(struct otlp_request *r);

/* The value of attribute key among attrs, or NULL. */
const struct otlp_kv *otlp_kv_find(const struct otlp_kv *attrs, size_t n, const char *key);

#endif
