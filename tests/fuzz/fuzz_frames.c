/* fuzz_frames.c: garbage frame words through the routing of words to runtimes
 * (runtimes_note_sample(), runtimes_symbolize()) and the aggregate that turns a sample's words
 * into a profile's frames. Two made-up runtimes are in the table: one attached to this process
 * (it finds itself in this binary), one never attached. The input is a flags byte (bit 0: the
 * sample is of this process, else of a pid nobody tracks) and up to 256 user words. A runtime
 * may only ever be handed words of its own tag range in a process it is attached to: the
 * never-attached one must never be called, the attached one never given another's words, and
 * no frame may come out but native ones, markers, the attached runtime's and "[unknown]". */
#include <linux/types.h>

#include "agent/aggregate.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/symbolizer.h"
#include "bpf/unwind.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OWN_KIND   UNWINDER_PHP
#define OTHER_KIND UNWINDER_HOTSPOT
#define MAX_WORDS  256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int own_state;

static int own_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		    struct errmsg *err)
{
	*state = &own_state;
	return 0;
}

static int own_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	if (!strstr(path, "fuzz_frames"))
		return 0;
	*data = &own_state;
	return 1;
}

static int own_attach(void *state, void *data, const struct runtime_attach *at, void **inst,
		      struct errmsg *err)
{
	*inst = &own_state;
	return 0;
}

static void own_note(void *state, void *inst, int pid, const uint64_t *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (FW_TAG_KIND(w[i] >> FW_TAG_SHIFT) != OWN_KIND)
			abort();
}

/* Two words per frame when the second is its own too (like CPython's), else one. */
static int own_symbolize(void *state, void *inst, int pid, const uint64_t *w, size_t n,
			 size_t *used, struct runtime_frame *out, int max)
{
	if (!inst || pid != getpid() || FW_TAG_KIND(w[0] >> FW_TAG_SHIFT) != OWN_KIND)
		abort();
	*used = n > 1 && FW_TAG_KIND(w[1] >> FW_TAG_SHIFT) == OWN_KIND ? 2 : 1;
	if (max < 1)
		return 0;
	memset(out, 0, sizeof(*out));
	out->name = "own.frame";
	out->kind = FRAME_PYTHON;
	return 1;
}

static int other_symbolize(void *state, void *inst, int pid, const uint64_t *w, size_t n,
			   size_t *used, struct runtime_frame *out, int max)
{
	abort(); /* never attached: none of its words can be real */
}

static const struct runtime_ops own_ops = {
	.name = "own",
	.kind = OWN_KIND,
	.init = own_init,
	.file_detect = own_detect,
	.attach = own_attach,
	.note = own_note,
	.symbolize = own_symbolize,
};

static const struct runtime_ops other_ops = {
	.name = "other",
	.kind = OTHER_KIND,
	.init = own_init,
	.symbolize = other_symbolize,
};

static const struct runtime_ops *const table[] = { &own_ops, &other_ops };

static struct process_registry *reg;
static struct runtimes *rts;
static struct symbolizer *sym;

static int frame_allowed(const char *name)
{
	if (!strcmp(name, "own.frame") || !strcmp(name, "[unknown]") ||
	    !strcmp(name, "[unwind error]") || !strcmp(name, "[truncated]") ||
	    !strcmp(name, "[stack switch]") || !strcmp(name, "[exec]") ||
	    !strcmp(name, "[exited]") || !strcmp(name, "[pcre2 jit]") ||
	    !strcmp(name, "[unknown marker]") || !strcmp(name, "[no stack]"))
		return 1;
	return name[0] != '['; /* a native frame (a symbol or an address) */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct {
		struct event_hdr hdr;
		struct sample_body body;
		uint64_t frames[MAX_WORDS];
	} r;
	struct runtime_frame fr[8];
	struct profile *p;
	struct agg *a;
	size_t n, i, used;
	char name[512];

	if (size < 9)
		return 0;
	if (!reg) {
		log_set_level(LOG_ERROR);
		reg = process_registry_new(NULL);
		rts = runtimes_new_table(table, 2, NULL);
		sym = symbolizer_new();
		runtimes_init(rts, NULL);
		runtimes_subscribe(rts, reg);
		process_track(reg, getpid(), NULL);
	}
	n = (size - 1) / 8;
	if (n > MAX_WORDS)
		n = MAX_WORDS;
	memset(&r, 0, sizeof(r));
	memcpy(r.frames, data + 1, n * 8);
	r.hdr.type = EVENT_SAMPLE;
	r.hdr.version = SCORCH_EVENT_VERSION;
	r.hdr.pid = r.hdr.tid = (data[0] & 1) ? (uint32_t)getpid() : 0x3ffffff0u;
	memcpy(r.body.comm, "fuzz", 5);
	r.body.nuser = (uint16_t)n;
	r.hdr.size = (uint16_t)(sizeof(r.hdr) + sizeof(r.body) + n * 8);

	runtimes_note_sample(rts, (int)r.hdr.pid, r.frames, n);
	/* every run of non-native words, as the aggregate hands them over */
	for (i = 0; i < n; i += used) {
		uint64_t tag = r.frames[i] >> FW_TAG_SHIFT;

		used = 1;
		if (tag == FW_TAG_NATIVE || tag == FW_TAG_MARKER)
			continue;
		runtimes_symbolize(rts, (int)r.hdr.pid, &r.frames[i], n - i, &used, fr, 8);
		if (used < 1 || used > n - i)
			abort();
	}
	a = agg_new(0);
	p = profile_new();
	agg_set_runtimes(a, rts);
	if (agg_add_record(a, &r.hdr, r.hdr.size) == 0 &&
	    agg_to_profile(a, sym, p, NULL, NULL) == 0) {
		for (i = 0; i < p->nsamples; i++) {
			const uint32_t *locs = profile_sample_locs(p, &p->samples[i]);
			size_t k;

			for (k = 0; k < p->samples[i].nlocs; k++) {
				profile_frame_name(p, locs[k], name, sizeof(name));
				if (!frame_allowed(name))
					abort();
			}
		}
	}
	profile_free(p);
	agg_free(a);
	return 0;
}
