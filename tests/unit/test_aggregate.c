/* test_aggregate.c: agg_add_record() counting, validation and cap, agg_reset(), and
 * agg_to_profile() routing stacks to profiles (idle and marker frames, labels). */
#include "agent/aggregate.h"
#include "agent/symbolizer.h"
#include "lib/alloc.h"
#include "profile/profile.h"
#include "test.h"

#include <errno.h>
#include <unistd.h>

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

/* Two functions of this binary for the symbolizer to name (kept whole: their symbols are
 * looked up). */
__attribute__((noinline)) static int leaf_here(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static int named_here(int x)
{
	return leaf_here(x) + 2;
}

/* The outermost frame of the sample whose leaf is named leaf, or "" */
static void root_below(const struct profile *p, const char *leaf, char *out, size_t size)
{
	char name[128];
	size_t i;

	out[0] = '\0';
	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *locs = profile_sample_locs(p, &p->samples[i]);
		uint32_t n = p->samples[i].nlocs;

		profile_frame_name(p, locs[0], name, sizeof(name));
		if (n > 1 && !strcmp(name, leaf))
			profile_frame_name(p, locs[n - 1], out, size);
	}
}

/* A native address is symbolized once per (pid, address): the cache of a profile must not
 * give one process's address the frames of another's. Keys made as
 * hash(pid ^ (addr + c + (pid << 6) + (pid >> 2))) collided for pids a few hundred apart with
 * addresses a few KiB apart, which is every Go process and the next ones: the root frame of
 * `compile`'s goroutines (runtime.goexit + 1) was named after another compile's
 * runtime.usleep. */
static void test_native_cache_exact(void)
{
	struct agg *a = agg_new(0);
	struct symbolizer *sym = symbolizer_new();
	struct route rt = { profile_new(), profile_new() };
	uint64_t me = (uint64_t)getpid(), other = (1u << 22) + 12345; /* no such process */
	uint64_t leaf = (uint64_t)(uintptr_t)&leaf_here + 1;
	uint64_t ret = (uint64_t)(uintptr_t)&named_here + 2; /* looked up at named_here + 1 */
	uint64_t k = 0x9e3779b97f4a7c15ULL;
	uint64_t same = me ^ (ret + k + (me << 6) + (me >> 2));
	uint64_t theirs[2], mine[2] = { leaf, ret };
	char root[128];
	struct rec r;
	size_t n;

	/* other's return address, with the key the old hash gave (me, ret) */
	theirs[1] = ((same ^ other) - k - (other << 6) - (other >> 2));
	theirs[0] = theirs[1];
	CHECK((theirs[1] >> FW_TAG_SHIFT) == FW_TAG_NATIVE);
	CHECK_EQ_INT(named_here(1), 6);
	n = make(&r, (uint32_t)other, "busy", 0, theirs, 2);
	agg_add_record(a, &r.hdr, n);
	n = make(&r, (uint32_t)me, "busy", 0, mine, 2);
	agg_add_record(a, &r.hdr, n);
	CHECK_EQ_INT(agg_to_profile(a, sym, NULL, pick, &rt), 0);
	CHECK_EQ_INT(profile_total(rt.busy), 2);
	root_below(rt.busy, "leaf_here", root, sizeof(root));
	CHECK_EQ_STR(root, "named_here");
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
	RUN(test_native_cache_exact);
	return test_summary();
}
