/* test_aggregate.c: agg_add_record() counting, validation and cap, agg_reset(), and
 * agg_to_profile() routing stacks to profiles (idle and marker frames, labels). */
#include "agent/aggregate.h"
#include "agent/symbolizer.h"
#include "lib/alloc.h"
#include "profile/profile.h"
#include "test.h"

#include <errno.h>

struct rec {
	struct event_hdr hdr;
	struct sample_body body;
	uint64_t frames[8];
};

static size_t make(struct rec *r, uint32_t pid, const char *comm, uint32_t flags,
		   const uint64_t *user, uint16_t nuser)
{
	memset(r, 0, sizeof(*r));
	r->hdr.type = EVENT_SAMPLE;
	r->hdr.version = SCORCH_EVENT_VERSION;
	r->hdr.pid = r->hdr.tid = pid;
	snprintf(r->body.comm, sizeof(r->body.comm), "%s", comm);
	r->body.flags = flags;
	r->body.nuser = nuser;
	if (nuser)
		memcpy(r->frames, user, nuser * sizeof(uint64_t));
	r->hdr.size = (uint16_t)(sizeof(r->hdr) + sizeof(r->body) + nuser * sizeof(uint64_t));
	return r->hdr.size;
}

#define MARK(m) ((FW_TAG_MARKER << FW_TAG_SHIFT) | (m))

static void test_counts_and_validation(void)
{
	struct agg *a = agg_new(0);
	uint64_t s1[] = { MARK(FW_MARKER_TRUNCATED) }, s2[] = { MARK(FW_MARKER_UNWIND_ERROR) };
	struct rec r;
	size_t n;
	int i;

	for (i = 0; i < 5; i++) {
		n = make(&r, 10, "a", 0, s1, 1);
		CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	}
	n = make(&r, 10, "a", 0, s2, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	/* same frames, other pid or comm: other stacks */
	n = make(&r, 11, "a", 0, s1, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	n = make(&r, 10, "b", 0, s1, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	CHECK_EQ_INT(agg_samples(a), 8);
	CHECK_EQ_INT(agg_stacks(a), 4);

	/* malformed: shorter than its header, frames past the end, too many frames */
	n = make(&r, 10, "a", 0, s1, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, sizeof(r.hdr) + 4), -EINVAL);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n - 1), -EINVAL);
	r.body.nkernel = MAX_KERNEL_FRAMES + 1;
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, sizeof(r)), -EINVAL);
	CHECK_EQ_INT(agg_samples(a), 8);

	agg_reset(a);
	CHECK_EQ_INT(agg_samples(a), 0);
	CHECK_EQ_INT(agg_stacks(a), 0);
	n = make(&r, 10, "a", 0, s1, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	CHECK_EQ_INT(agg_stacks(a), 1);
	agg_free(a);
}

static void test_cap(void)
{
	struct agg *a = agg_new(2);
	uint64_t s[] = { MARK(FW_MARKER_TRUNCATED) };
	struct rec r;
	size_t n;

	n = make(&r, 1, "a", 0, s, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	n = make(&r, 2, "a", 0, s, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	n = make(&r, 3, "a", 0, s, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), -ENOSPC);
	/* known stacks still count at the cap */
	n = make(&r, 1, "a", 0, s, 1);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	CHECK_EQ_INT(agg_samples(a), 3);
	CHECK_EQ_INT(agg_dropped(a), 1);
	CHECK_EQ_INT(agg_stacks(a), 2);
	agg_reset(a);
	CHECK_EQ_INT(agg_dropped(a), 0);
	agg_free(a);
}

struct route {
	struct profile *idle, *busy;
};

static struct profile *pick(void *ctx, uint32_t pid, const char *comm)
{
	struct route *rt = ctx;

	if (pid == 0)
		return rt->idle;
	return strcmp(comm, "skipme") ? rt->busy : NULL;
}

static int has_frame(const struct profile *p, const char *want, int64_t *value)
{
	char name[128];
	size_t i, j;

	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *locs = profile_sample_locs(p, &p->samples[i]);

		for (j = 0; j < p->samples[i].nlocs; j++) {
			profile_frame_name(p, locs[j], name, sizeof(name));
			if (!strcmp(name, want)) {
				*value = p->samples[i].value;
				return 1;
			}
		}
	}
	return 0;
}

static void test_to_profile(void)
{
	struct agg *a = agg_new(0);
	struct symbolizer *sym = symbolizer_new();
	struct route rt = { profile_new(), profile_new() };
	uint64_t trunc[] = { MARK(FW_MARKER_TRUNCATED) };
	struct rec r;
	size_t n;
	int64_t v = 0;
	int i;

	for (i = 0; i < 3; i++) {
		n = make(&r, 0, "swapper/0", SAMPLE_F_IDLE, NULL, 0);
		agg_add_record(a, &r.hdr, n);
	}
	for (i = 0; i < 2; i++) {
		n = make(&r, 42, "busy", 0, trunc, 1);
		agg_add_record(a, &r.hdr, n);
	}
	n = make(&r, 43, "skipme", 0, trunc, 1);
	agg_add_record(a, &r.hdr, n);
	CHECK_EQ_INT(agg_to_profile(a, sym, NULL, pick, &rt), 0);
	CHECK_EQ_INT(profile_total(rt.idle), 3);
	CHECK(has_frame(rt.idle, "[idle]", &v));
	CHECK_EQ_INT(v, 3);
	CHECK_EQ_INT(profile_total(rt.busy), 2);
	CHECK(has_frame(rt.busy, "[truncated]", &v));
	CHECK(!has_frame(rt.busy, "[idle]", &v));
	profile_free(rt.idle);
	profile_free(rt.busy);
	symbolizer_free(sym);
	agg_free(a);
}

int main(void)
{
	RUN(test_counts_and_validation);
	RUN(test_cap);
	RUN(test_to_profile);
	return test_summary();
}
