/* test_offcpu.c: off-CPU profiles in user space: the reason of a switch-out (bpf/offcpu.h,
 * shared with BPF), off-CPU records in the aggregate (weights, reason frames, rate-limited
 * records, CPU / off-CPU / wall values), the profile kinds of a session and the CLI's duration
 * parser. */
#include "agent/aggregate.h"
#include "agent/session.h"
#include "agent/symbolizer.h"
#include "bpf/offcpu.h"
#include "cli/cli.h"
#include "lib/alloc.h"
#include "profile/profile.h"
#include "test.h"

#include <errno.h>

static void test_reason(void)
{
	/* still runnable: preempted, whatever the system call */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_RUNNABLE), OFFCPU_PREEMPTED);
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_RUNNABLE | OFFCPU_I_SYSCALL | 202), OFFCPU_PREEMPTED);
	/* block I/O wait, in a system call or a page fault */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_IOWAIT), OFFCPU_IO);
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_IOWAIT | OFFCPU_I_SYSCALL | 35), OFFCPU_IO);
	/* by system call (x86-64 numbers) */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 202), OFFCPU_LOCK);  /* futex */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 449), OFFCPU_LOCK);  /* futex_waitv */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 35), OFFCPU_SLEEP);  /* nanosleep */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 230), OFFCPU_SLEEP); /* clock_nanosleep */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 0), OFFCPU_IO);      /* read */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 45), OFFCPU_IO);     /* recvfrom */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 232), OFFCPU_IO);    /* epoll_wait */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 426), OFFCPU_IO);    /* io_uring_enter */
	CHECK_EQ_INT(offcpu_reason(OFFCPU_I_SYSCALL | 61), OFFCPU_OTHER);  /* wait4 */
	/* number 0 without the syscall bit is a page fault, not read() */
	CHECK_EQ_INT(offcpu_reason(0), OFFCPU_OTHER);
	CHECK_EQ_STR(offcpu_reason_frame(OFFCPU_IO), "[off-cpu: io]");
	CHECK_EQ_STR(offcpu_reason_frame(OFFCPU_LOCK), "[off-cpu: lock]");
	CHECK_EQ_STR(offcpu_reason_frame(OFFCPU_SLEEP), "[off-cpu: sleep]");
	CHECK_EQ_STR(offcpu_reason_frame(OFFCPU_PREEMPTED), "[off-cpu: preempted]");
	CHECK_EQ_STR(offcpu_reason_frame(0), "[off-cpu: other]");
	CHECK_EQ_STR(offcpu_reason_frame(15), "[off-cpu: other]");
}

struct rec {
	struct event_hdr hdr;
	struct sample_body body;
	uint64_t frames[4];
};

#define MARK(m) ((FW_TAG_MARKER << FW_TAG_SHIFT) | (m))

static size_t make(struct rec *r, uint32_t pid, uint32_t flags, uint64_t weight, uint64_t marker)
{
	memset(r, 0, sizeof(*r));
	r->hdr.type = EVENT_SAMPLE;
	r->hdr.version = SCORCH_EVENT_VERSION;
	r->hdr.pid = r->hdr.tid = pid;
	snprintf(r->body.comm, sizeof(r->body.comm), "w%u", pid);
	r->body.flags = flags;
	r->body.weight_ns = weight;
	r->body.nuser = marker ? 1 : 0;
	r->frames[0] = MARK(marker);
	r->hdr.size = (uint16_t)(sizeof(r->hdr) + sizeof(r->body) + r->body.nuser * 8);
	return r->hdr.size;
}

#define OFF(reason) (SAMPLE_F_OFFCPU | ((reason) << SAMPLE_F_REASON_SHIFT))

/* The value of the sample whose leaf (first location) is named leaf, or -1. */
static int64_t leaf_value(const struct profile *p, const char *leaf)
{
	char name[128];
	int64_t v = -1;
	size_t i;

	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *locs = profile_sample_locs(p, &p->samples[i]);

		profile_frame_name(p, locs[0], name, sizeof(name));
		if (!strcmp(name, leaf))
			v = (v < 0 ? 0 : v) + p->samples[i].value;
	}
	return v;
}

/* Whether some sample has frames a (leaf) then b. */
static int has_pair(const struct profile *p, const char *a, const char *b)
{
	char n0[128], n1[128];
	size_t i;

	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *locs = profile_sample_locs(p, &p->samples[i]);

		if (p->samples[i].nlocs < 2)
			continue;
		profile_frame_name(p, locs[0], n0, sizeof(n0));
		profile_frame_name(p, locs[1], n1, sizeof(n1));
		if (!strcmp(n0, a) && !strcmp(n1, b))
			return 1;
	}
	return 0;
}

static void test_aggregate_kinds(void)
{
	struct agg *a = agg_new(0);
	struct symbolizer *sym = symbolizer_new();
	struct profile *cpu = profile_new(), *off = profile_new(), *wall = profile_new();
	struct rec r;
	size_t n;
	int i;

	/* 3 CPU samples of pid 7, 2 idle samples */
	for (i = 0; i < 3; i++) {
		n = make(&r, 7, 0, 0, FW_MARKER_TRUNCATED);
		CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	}
	for (i = 0; i < 2; i++) {
		n = make(&r, 0, SAMPLE_F_IDLE, 0, 0);
		CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	}
	/* pid 7 blocked in I/O twice (same stack: weights add), slept once */
	n = make(&r, 7, OFF(OFFCPU_IO), 5000000, FW_MARKER_TRUNCATED);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	n = make(&r, 7, OFF(OFFCPU_IO), 7000000, FW_MARKER_TRUNCATED);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	n = make(&r, 7, OFF(OFFCPU_SLEEP), 1000000000, FW_MARKER_TRUNCATED);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	/* over the rate limit: no stack, time kept */
	n = make(&r, 7, OFF(OFFCPU_LOCK) | SAMPLE_F_NO_STACK, 3000000, 0);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	CHECK_EQ_INT(agg_samples(a), 5);
	CHECK_EQ_INT(agg_offcpu_records(a), 4);
	CHECK_EQ_INT(agg_stacks(a), 5);

	CHECK_EQ_INT(agg_to_profile_kind(a, sym, AGG_CPU, 10000000, cpu, NULL, NULL), 0);
	CHECK_EQ_INT(agg_to_profile_kind(a, sym, AGG_OFFCPU, 10000000, off, NULL, NULL), 0);
	CHECK_EQ_INT(agg_to_profile_kind(a, sym, AGG_WALL, 10000000, wall, NULL, NULL), 0);
	/* CPU: sample counts only, idle included */
	CHECK_EQ_INT(profile_total(cpu), 5);
	CHECK_EQ_INT(leaf_value(cpu, "[off-cpu: io]"), -1);
	/* off-CPU: nanoseconds, the reason as the leaf, above the thread's frames */
	CHECK_EQ_INT(profile_total(off), 12000000 + 1000000000 + 3000000);
	CHECK_EQ_INT(leaf_value(off, "[off-cpu: io]"), 12000000);
	CHECK_EQ_INT(leaf_value(off, "[off-cpu: sleep]"), 1000000000);
	CHECK(has_pair(off, "[off-cpu: io]", "[truncated]"));
	CHECK(has_pair(off, "[off-cpu: lock]", "[rate limited]"));
	CHECK_EQ_INT(leaf_value(off, "[idle]"), -1);
	/* wall: CPU samples weigh the period, idle is nobody's time */
	CHECK_EQ_INT(profile_total(wall), 3 * 10000000 + 12000000 + 1000000000 + 3000000);
	CHECK_EQ_INT(leaf_value(wall, "[truncated]"), 3 * 10000000);
	CHECK_EQ_INT(leaf_value(wall, "[idle]"), -1);

	/* an off-CPU record without any frame still names its reason */
	agg_reset(a);
	CHECK_EQ_INT(agg_offcpu_records(a), 0);
	n = make(&r, 9, OFF(OFFCPU_OTHER), 42, 0);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, n), 0);
	profile_free(off);
	off = profile_new();
	CHECK_EQ_INT(agg_to_profile_kind(a, sym, AGG_OFFCPU, 10000000, off, NULL, NULL), 0);
	CHECK(has_pair(off, "[off-cpu: other]", "[no stack]"));
	CHECK_EQ_INT(profile_total(off), 42);

	profile_free(cpu);
	profile_free(off);
	profile_free(wall);
	symbolizer_free(sym);
	agg_free(a);
}

static void test_kinds_parse(void)
{
	unsigned m = 0;
	char bad[16];

	CHECK_EQ_INT(session_kinds_parse("cpu", &m, bad, sizeof(bad)), 0);
	CHECK_EQ_INT(m, SESSION_CPU);
	CHECK_EQ_INT(session_kinds_parse("cpu,offcpu", &m, bad, sizeof(bad)), 0);
	CHECK_EQ_INT(m, SESSION_CPU | SESSION_OFFCPU);
	CHECK_EQ_INT(session_kinds_parse("wall,cpu,wall", &m, bad, sizeof(bad)), 0);
	CHECK_EQ_INT(m, SESSION_CPU | SESSION_WALL);
	m = 77;
	CHECK_EQ_INT(session_kinds_parse("cpu,offcpux", &m, bad, sizeof(bad)), -EINVAL);
	CHECK_EQ_STR(bad, "offcpux");
	CHECK_EQ_INT(m, 77);
	CHECK_EQ_INT(session_kinds_parse("", &m, bad, sizeof(bad)), -EINVAL);
	CHECK_EQ_STR(bad, "");
	CHECK_EQ_INT(session_kinds_parse("cpu,", &m, bad, sizeof(bad)), -EINVAL);
	CHECK_EQ_INT(session_kinds_parse("a-very-long-unknown-name", &m, bad, sizeof(bad)), -EINVAL);
	CHECK_EQ_INT(strlen(bad), sizeof(bad) - 1);
	CHECK_EQ_STR(session_kind_name(SESSION_CPU), "cpu");
	CHECK_EQ_STR(session_kind_name(SESSION_OFFCPU), "offcpu");
	CHECK_EQ_STR(session_kind_name(SESSION_WALL), "wall");
}

static void test_duration(void)
{
	uint64_t v = 1;

	CHECK_EQ_INT(cli_parse_duration_ns("500us", "--x", 0, 10000000000ULL, &v), 0);
	CHECK_EQ_INT(v, 500000);
	CHECK_EQ_INT(cli_parse_duration_ns("2ms", "--x", 0, 10000000000ULL, &v), 0);
	CHECK_EQ_INT(v, 2000000);
	CHECK_EQ_INT(cli_parse_duration_ns("1.5s", "--x", 0, 10000000000ULL, &v), 0);
	CHECK_EQ_INT(v, 1500000000);
	CHECK_EQ_INT(cli_parse_duration_ns("300ns", "--x", 0, 10000000000ULL, &v), 0);
	CHECK_EQ_INT(v, 300);
	CHECK_EQ_INT(cli_parse_duration_ns("0", "--x", 0, 10000000000ULL, &v), 0);
	CHECK_EQ_INT(v, 0);
	v = 9;
	/* no unit, bad unit, negative, out of range: refused, v untouched */
	CHECK_EQ_INT(cli_parse_duration_ns("5", "--x", 0, 10000000000ULL, &v), -1);
	CHECK_EQ_INT(cli_parse_duration_ns("5m", "--x", 0, 10000000000ULL, &v), -1);
	CHECK_EQ_INT(cli_parse_duration_ns("-1ms", "--x", 0, 10000000000ULL, &v), -1);
	CHECK_EQ_INT(cli_parse_duration_ns("ms", "--x", 0, 10000000000ULL, &v), -1);
	CHECK_EQ_INT(cli_parse_duration_ns("11s", "--x", 0, 10000000000ULL, &v), -1);
	CHECK_EQ_INT(cli_parse_duration_ns("1us", "--x", 2000, 10000000000ULL, &v), -1);
	CHECK_EQ_INT(v, 9);
}

int main(void)
{
	RUN(test_reason);
	RUN(test_aggregate_kinds);
	RUN(test_kinds_parse);
	RUN(test_duration);
	return test_summary();
}
