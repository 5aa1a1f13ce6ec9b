/* fuzz_mapevents.c: libFuzzer target for the perf record parser and the images built from the
 * records (src/agent/mapevents.c). The input is a stream of records as a perf ring buffer holds
 * them (each starts with its perf_event_header; its size field says where the next begins, and
 * the last may be cut short), applied in order with a small process cap; then the maps of every
 * pid the records named are asked for, before and after the collects. An input that starts
 * with 'R' is a ring instead, read as a drain reads a CPU's buffer: u64 head, u64 tail, then the
 * ring's bytes (the largest power of two they hold), records wrapping at its end. */
#include "agent/mapevents.h"
#include "agent/procmaps.h"
#include "lib/log.h"

#include <stdint.h>
#include <stddef.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PIDS 64

static void ask(struct mapevents *m, const uint32_t *pids, size_t npids)
{
	struct procmaps pm;
	char exe[256];
	uint64_t as_of;
	size_t i, j;

	for (i = 0; i < npids; i++) {
		for (j = 0; j < 3; j++) {
			static const uint64_t when[] = { 0, 1, UINT64_MAX };

			if (mapevents_maps(m, (int)pids[i], when[j], &pm, exe, sizeof(exe),
					   &as_of) == 0) {
				size_t k;

				for (k = 0; k < pm.n; k++)
					if (pm.v[k].end <= pm.v[k].start ||
					    (k && pm.v[k].start < pm.v[k - 1].end))
						__builtin_trap();
				if (strlen(exe) >= sizeof(exe))
					__builtin_trap();
			}
			procmaps_release(&pm);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mapevents_opts o = { .max_procs = 8, .previous_images = size & 1 };
	struct mapevents *m = mapevents_new(&o);
	struct mapevents_stats st;
	uint32_t pids[MAX_PIDS];
	size_t off = 0, npids = 0;

	if (size >= 17 + 8 && data[0] == 'R') {
		uint64_t head, tail;
		size_t ring = 8;

		memcpy(&head, data + 1, 8);
		memcpy(&tail, data + 9, 8);
		while (ring * 2 <= size - 17)
			ring *= 2;
		mapevents_feed_ring(m, data + 17, ring, head, tail);
		for (off = 0; off + 8 <= ring && npids < MAX_PIDS; off += 8) {
			uint32_t pid;

			memcpy(&pid, data + 17 + off, 4);
			if (pid && pid < 1u << 22)
				pids[npids++] = pid;
		}
		off = size; /* no stream */
	}
	while (off + 8 <= size) {
		uint16_t len;
		struct mapevent ev;
		size_t n;

		memcpy(&len, data + off + 6, 2);
		n = len < 8 ? 8 : len;
		if (n > size - off)
			n = size - off; /* cut short */
		if (mapevents_parse(data + off, n, &ev) == 0 && npids < MAX_PIDS)
			pids[npids++] = ev.pid;
		mapevents_apply(m, data + off, n);
		off += n;
	}
	ask(m, pids, npids);
	mapevents_collect(m);
	ask(m, pids, npids);
	mapevents_collect(m);
	mapevents_stats(m, &st);
	if (st.procs > o.max_procs)
		__builtin_trap();
	mapevents_free(m);
	return 0;
}
