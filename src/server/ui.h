/* ui.h: the web UI routes of `scorch server`: GET / and GET /ui/... answer the files of the
 * TypeScript UI (web/ui/, built by Vite and embedded at build time into web_ui_assets.h).
 * When the binary was built without the UI (no npm), / answers a short page pointing to
 * /render?format=html. docs/ui.md describes the UI. */
#ifndef SCORCH_UI_H
#define SCORCH_UI_H

#include "server/http.h"

/* GET / and GET /ui/...: index.html for "/", "/ui" and "/ui/", else the embedded file named by
 * the path after "/ui/" (404 when absent). Sets Content-Type from the extension and caching
 * headers: hashed files under /ui/assets/ are immutable, everything else revalidates. */
void ui_handle(void *ctx, const struct http_request *req, struct http_response *resp);

/* 1 when the binary carries the built UI. */
int ui_available(void);

#endif
