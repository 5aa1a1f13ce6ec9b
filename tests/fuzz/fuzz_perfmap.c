/* fuzz_perfmap.c: libFuzzer target for the JIT symbol parsers (src/agent/perfmap.c): the input,
 * fed in pieces of varying size, as perf-PID.map text and as a jitdump file; lookups at the
 * entries' addresses and around them. */
#include "agent/perfmap.h"
#include "lib/log.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void lookups(struct perfmap *m)
{
	uint64_t a;

	for (a = 0; a < 64; a++)
		perfmap_lookup(m, a * 0x1000 + 8, NULL);
	perfmap_lookup(m, UINT64_MAX, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *m = perfmap_new();
	size_t off = 0, piece = size ? data[0] % 97 + 1 : 1;

	while (off < size) {
		size_t n = size - off < piece ? size - off : piece;

		perfmap_feed(m, (const char *)data + off, n);
		off += n;
	}
	lookups(m);
	perfmap_free(m);

	m = perfmap_new();
	for (off = 0; off < size;) {
		size_t n = size - off < piece * 7 ? size - off : piece * 7;

		if (perfmap_feed_jitdump(m, data + off, n, NULL) < 0)
			break;
		off += n;
	}
	lookups(m);
	perfmap_free(m);
	return 0;
}
