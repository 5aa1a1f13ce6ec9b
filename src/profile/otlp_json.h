/* otlp_json.h: OTLP/JSON requests (the JSON encoding of ExportProfilesServiceRequest, as OTLP/HTTP
 * senders post with Content-Type application/json), transcoded into the protobuf wire form that
 * otlp_decode() reads, so that both encodings go through one decoder.
 *
 * The JSON mapping is protobuf's: field names in lowerCamelCase (the proto names in snake_case
 * are accepted too), 64-bit integers as numbers or decimal strings, enums as integers, unknown
 * fields ignored. Bytes fields (ids, original payloads) are not needed by scorch and are
 * skipped. Input is hostile: nesting is limited to 64 levels, the output to max_out bytes, and
 * any malformed or mistyped value is -EBADMSG with a message giving its byte offset. */
#ifndef SCORCH_OTLP_JSON_H
#define SCORCH_OTLP_JSON_H

#include "lib/buf.h"
#include "lib/log.h"

#include <stddef.h>

/* Append the protobuf form of the JSON request to out (at most max_out bytes of it). Returns 0,
 * -EBADMSG (malformed), or -E2BIG (output over max_out). */
int otlp_json_to_protobuf(const char *json, size_t len, size_t max_out, struct buf *out,
			  struct errmsg *err);

#endif
