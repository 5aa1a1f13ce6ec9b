/* otlp_ingest.h: POST /v1development/profiles, the OTLP/HTTP profiles receiver.
 *
 * The body is an ExportProfilesServiceRequest, protobuf (Content-Type application/x-protobuf,
 * the default) or OTLP/JSON (application/json), raw or gzip (Content-Encoding: gzip, or
 * recognized by its magic). Each OTLP profile becomes series of the store the way a pprof upload
 * does (ingest.h), named from the attributes (docs/server.md, "OTLP"):
 *
 *   service.name -> the app (service_name); host.name -> host; container.id -> container_id;
 *   process.executable.name -> process; other string attributes of the resource, the profile
 *   and the samples keep their names (characters outside [A-Za-z0-9_.] become '_');
 *   thread.name is the root frame, as comm is for pprof; numeric attributes are not labels.
 *
 * Answers follow OTLP/HTTP: 200 with an ExportProfilesServiceResponse (partial_success counts
 * the profiles the store cannot take: negative values, more than a day in the future, over a
 * store limit; the others are stored); 400 with a google.rpc.Status for a body that does not
 * decode, 413 for one over a decoder cap (nothing stored); 415 for an unknown Content-Type or
 * Content-Encoding; 503 when the store fails (retryable: nothing stored). All of one request is
 * one store transaction. */
#ifndef SCORCH_OTLP_INGEST_H
#define SCORCH_OTLP_INGEST_H

#include "server/http.h"

/* The route handler; ctx is the struct server. */
void otlp_ingest_handle(void *ctx, const struct http_request *req, struct http_response *resp);

#endif
