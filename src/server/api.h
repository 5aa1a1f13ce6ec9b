/* api.h: the label endpoints of the legacy API and scorch's own /api/v1 queries.
 *
 *   GET /labels?query=&from=&until=             label names, a JSON array of strings
 *   GET /label-values?label=&query=&from=&until= values of one label, a JSON array
 *   GET /api/v1/series?query=&from=&until=&step=&group_by=&unit=samples|seconds|cores
 *   GET /api/v1/top?query=&from=&until=&limit=&sort=self|total|name
 *   GET /api/v1/sandwich?query=&function=&from=&until=&maxNodes=
 *   GET /api/v1/runs?query=&from=&until=&by=commit&labels=branch,job,run,...&limit=
 *       the values of one label (CI runs by commit), newest first, each with its total,
 *       first and last write time, series count and the values of a few other labels
 *
 * For /labels and /label-values, a request without from and until covers all time. */
#ifndef SCORCH_API_H
#define SCORCH_API_H

#include "server/http.h"

void api_labels(void *ctx, const struct http_request *req, struct http_response *resp);
void api_label_values(void *ctx, const struct http_request *req, struct http_response *resp);
void api_series(void *ctx, const struct http_request *req, struct http_response *resp);
void api_top(void *ctx, const struct http_request *req, struct http_response *resp);
void api_sandwich(void *ctx, const struct http_request *req, struct http_response *resp);
void api_runs(void *ctx, const struct http_request *req, struct http_response *resp);

#endif
