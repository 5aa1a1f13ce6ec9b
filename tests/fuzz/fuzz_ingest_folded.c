/* fuzz_ingest_folded.c: the folded-text fast path of POST /ingest (lines straight into a
 * store batch). On success the batch must hold at most one stack per line, none deeper than
 * the store takes (deeper ones are cut) and no negative value (sums saturate). */
#include "lib/alloc.h"
#include "server/ingest.h"
#include "store/store.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Exactly size bytes, no terminator: a multipart part is not NUL-terminated either. */
	char *text = xmalloc(size ? size : 1);
	struct ingest_batches b;
	struct ingest_meta meta;
	struct errmsg err;
	size_t lines = 1, i;

	memcpy(text, data, size);
	memset(&meta, 0, sizeof(meta));
	meta.app = "app";
	meta.type = "cpu";
	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (ingest_folded(text, size, &meta, &b, &err) == 0) {
		if (b.n != 1 || b.stacks > lines || b.batches[0].nsamples > b.stacks)
			abort();
		for (i = 0; i < b.batches[0].nsamples; i++)
			if (b.batches[0].samples[i].nframes == 0 ||
			    b.batches[0].samples[i].nframes > STORE_MAX_DEPTH ||
			    b.batches[0].samples[i].value < 0)
				abort();
	}
	ingest_batches_release(&b);
	xfree(text);
	return 0;
}
