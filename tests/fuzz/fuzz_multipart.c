/* fuzz_multipart.c: the multipart/form-data parser of POST /ingest. Input: a Content-Type value
 * on the first line, the body after it. Every part must lie inside the body. */
#include "lib/alloc.h"
#include "server/multipart.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct range {
	const char *lo, *hi;
};

static int check_part(void *arg, const struct multipart_part *p)
{
	const struct range *r = arg;

	if (p->data < r->lo || p->data + p->len > r->hi || p->name + p->name_len > r->hi ||
	    (p->filename && p->filename + p->filename_len > r->hi))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	char *ctype, boundary[MULTIPART_MAX_BOUNDARY + 1];
	struct multipart_part part;
	struct errmsg err;
	struct range r;
	size_t clen, blen;
	char *body;

	if (!nl)
		return 0;
	clen = (size_t)(nl - (const char *)data);
	ctype = xstrndup((const char *)data, clen);
	blen = size - clen - 1;
	/* An exact-size copy so ASan sees any read past the end. */
	body = xmalloc(blen ? blen : 1);
	memcpy(body, nl + 1, blen);
	r.lo = body;
	r.hi = body + blen;
	if (multipart_boundary(ctype, boundary, sizeof(boundary), &err) == 0) {
		multipart_each(body, blen, boundary, check_part, &r, &err);
		if (multipart_find(body, blen, boundary, "profile", &part, &err) == 0)
			check_part(&r, &part);
	}
	xfree(body);
	xfree(ctype);
	return 0;
}
