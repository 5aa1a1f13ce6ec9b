/* test_process.c: the process registry (agent/process.h) on live processes: maps read once per
 * change and handed to every subscriber, the event order (new, changed, claims, stale, exit,
 * forget), claims made from inside a listener, labels, exits found by the interval's sweep, and
 * the native unwinder publishing claimed ranges with the runtime's kind, and container ids
 * taken from fork records. */
#include "agent/process.h"
#include "agent/unwinder.h"
#include "bpf/unwind.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 64

struct recorder {
	int pids[MAX_EVENTS];
	enum process_event evs[MAX_EVENTS];
	size_t maps[MAX_EVENTS]; /* p->maps.n at the event */
	size_t claims[MAX_EVENTS];
	int n;
	/* claim this range of the process from inside the NEW event */
	struct process_registry *reg;
	uint64_t claim_start, claim_end;
};

static void record(void *ctx, struct process *p, enum process_event ev)
{
	struct recorder *r = ctx;

	if (r->n < MAX_EVENTS) {
		r->pids[r->n] = p->pid;
		r->evs[r->n] = ev;
		r->maps[r->n] = p->maps.n;
		r->claims[r->n] = p->nclaims;
		r->n++;
	}
	if (ev == PROCESS_EV_NEW && r->claim_end)
		process_claim(r->reg, p->pid, r->claim_start, r->claim_end, UNWINDER_HOTSPOT);
}

static int count(const struct recorder *r, int pid, enum process_event ev)
{
	int i, n = 0;

	for (i = 0; i < r->n; i++)
		n += r->pids[i] == pid && r->evs[i] == ev;
	return n;
}

static pid_t start_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	if (pid > 0 && test_wait_exec(pid, "/bin/sleep") < 0)
		fprintf(stderr, "  (the child did not exec /bin/sleep within 30 s)\n");
	return pid;
}

static void test_maps_once_and_events(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct recorder a = { 0 }, b = { 0 };
	struct process_listener la = { "a", record, &a }, lb = { "b", record, &b };
	struct process_registry_stats st;
	struct process *p;
	pid_t child = start_sleeper();
	size_t i;

	CHECK(child > 0);
	CHECK_EQ_INT(process_registry_subscribe(reg, &la), 0);
	CHECK_EQ_INT(process_registry_subscribe(reg, &lb), 0);
	/* the first sample reads the process; both subscribers get the same maps */
	p = process_seen(reg, child, "sleep");
	CHECK(p != NULL);
	CHECK_EQ_INT(a.n, 1);
	CHECK_EQ_INT(b.n, 1);
	CHECK_EQ_INT(a.evs[0], PROCESS_EV_NEW);
	CHECK(a.maps[0] > 0 && a.maps[0] == b.maps[0]);
	for (i = 0; p && i < p->maps.n; i++)
		CHECK(p->maps.v[i].perms & PROCMAPS_X);
	CHECK(p && strstr(p->exe, "sleep") != NULL);
	{
		/* the executable named is the one mapped */
		struct stat sb;
		size_t mapped = 0;

		CHECK(p && stat(p->exe, &sb) == 0);
		for (i = 0; p && i < p->maps.n; i++)
			mapped += p->maps.v[i].inode == (uint64_t)sb.st_ino &&
				  !strcmp(p->maps.v[i].path, p->exe);
		CHECK(mapped >= 1);
	}
	CHECK(p && !strcmp(p->comm, "sleep"));
	/* more samples: no read, no event */
	process_seen(reg, child, "sleep");
	process_seen(reg, child, "sleep");
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.maps_reads, 1);
	CHECK_EQ_INT(a.n, 1);
	/* a refresh asked too soon is skipped; an unchanged one reads and sends nothing */
	CHECK_EQ_INT(process_refresh(reg, child, 60ULL * 1000000000ULL), 0);
	CHECK_EQ_INT(process_refresh(reg, child, 0), 1);
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.maps_reads, 2);
	CHECK_EQ_INT(a.n, 1);
	/* for a pc that ran after the last read (a library mapped since), however soon; not for
	 * one that ran before it */
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(process_refresh_after(reg, child, 60ULL * 1000000000ULL,
						   p->maps_read_ns - 1), 0);
		CHECK_EQ_INT(process_refresh_after(reg, child, 60ULL * 1000000000ULL,
						   p->maps_read_ns + 1), 1);
	}
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.maps_reads, 3);
	CHECK_EQ_INT(a.n, 1);
	/* an exec with -a: stale, then read again at the next sample (a new generation) */
	process_exec(reg, child, 0, 0);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_STALE), 1);
	CHECK_EQ_INT(p->state, PROCESS_STALE);
	CHECK(process_seen(reg, child, "sleep") == p);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_NEW), 2);
	CHECK_EQ_INT(p->generation, 1);
	/* an exec record older than the last read (a sample of the new image came first) */
	process_exec(reg, child, 1, 1);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_NEW), 2);
	/* exit: once, and the record stays until the interval is collected */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	process_exit(reg, child);
	process_exit(reg, child);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_EXIT), 1);
	CHECK(process_get(reg, child) == p);
	CHECK(process_seen(reg, child, "sleep") == NULL); /* not read again */
	CHECK(p->maps.n > 0); /* what symbolizing its samples needs is still there */
	process_registry_collect(reg);
	CHECK(process_get(reg, child) == NULL);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_FORGET), 1);
	CHECK_EQ_INT(count(&b, child, PROCESS_EV_FORGET), 1);
	/* a process that is gone at its first sample is not read twice */
	CHECK(process_seen(reg, child, "sleep") == NULL);
	CHECK(process_seen(reg, child, "sleep") == NULL);
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.exited_pending, 1);
	process_registry_free(reg);
}

static void test_sweep_finds_lost_exits(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct recorder a = { 0 };
	struct process_listener la = { "a", record, &a };
	pid_t child = start_sleeper();

	process_registry_subscribe(reg, &la);
	CHECK_EQ_INT(process_track(reg, child, NULL), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* no exit record (the ring buffer was full, or the record is still in it): the interval's
	 * sweep finds it, and keeps it for one more interval */
	process_registry_collect(reg);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_EXIT), 1);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_FORGET), 0);
	CHECK(process_get(reg, child) != NULL);
	/* its exit record, drained late: nothing more to say */
	process_exit(reg, child);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_EXIT), 1);
	process_registry_collect(reg);
	CHECK_EQ_INT(count(&a, child, PROCESS_EV_FORGET), 1);
	CHECK(process_get(reg, child) == NULL);
	CHECK_EQ_INT(process_track(reg, child, NULL), -ESRCH);
	process_registry_free(reg);
}

static void test_changed_and_claims(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct recorder a = { 0 };
	struct process_listener la = { "a", record, &a };
	struct unwinder *u;
	struct unwind_mapping m;
	struct unwinder_claim uc[4];
	struct errmsg err;
	struct process *p;
	size_t before, i;
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *code;

	a.reg = reg;
	process_registry_subscribe(reg, &la);
	CHECK_EQ_INT(process_track(reg, getpid(), NULL), 0);
	p = process_get(reg, getpid());
	before = p->maps.n;
	/* new executable memory (a JIT code cache): the refresh sees it */
	code = mmap(NULL, (size_t)page * 4, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(code != MAP_FAILED);
	CHECK_EQ_INT(process_refresh(reg, getpid(), 0), 1);
	CHECK_EQ_INT(count(&a, getpid(), PROCESS_EV_CHANGED), 1);
	CHECK_EQ_INT(p->maps.n, before + 1);
	/* a runtime claims the middle two pages */
	CHECK_EQ_INT(process_claim(reg, getpid(), (uint64_t)(uintptr_t)code + page,
				   (uint64_t)(uintptr_t)code + 3 * page, UNWINDER_HOTSPOT), 0);
	CHECK_EQ_INT(count(&a, getpid(), PROCESS_EV_CLAIMS), 1);
	CHECK_EQ_INT(p->nclaims, 1);
	CHECK_EQ_INT(process_claim(reg, getpid(), 10, 5, UNWINDER_HOTSPOT), -EINVAL);
	CHECK_EQ_INT(process_claim(reg, 1 << 30, 0, 4096, UNWINDER_HOTSPOT), -ENOENT);
	/* the unwinder publishes the claimed part with the runtime's kind, the rest natively */
	u = unwinder_new(NULL, NULL, &err);
	for (i = 0; i < p->nclaims; i++) {
		uc[i].start = p->claims[i].start;
		uc[i].end = p->claims[i].end;
		uc[i].kind = p->claims[i].kind;
	}
	CHECK_EQ_INT(unwinder_set_maps(u, getpid(), &p->maps, uc, p->nclaims), 0);
	CHECK_EQ_INT(unwinder_lookup_mapping(u, getpid(), (uint64_t)(uintptr_t)code, &m), 0);
	CHECK_EQ_INT(m.kind, UNWINDER_NATIVE);
	CHECK(!(m.flags & UNW_MAP_RUNTIME) && (m.flags & UNW_MAP_FP));
	CHECK_EQ_INT(m.end, (uint64_t)(uintptr_t)code + page);
	CHECK_EQ_INT(unwinder_lookup_mapping(u, getpid(), (uint64_t)(uintptr_t)code + page, &m), 0);
	CHECK_EQ_INT(m.kind, UNWINDER_HOTSPOT);
	CHECK(m.flags & UNW_MAP_RUNTIME);
	CHECK_EQ_INT(m.end, (uint64_t)(uintptr_t)code + 3 * page);
	CHECK_EQ_INT(unwinder_lookup_mapping(u, getpid(), (uint64_t)(uintptr_t)code + 3 * page, &m),
		     0);
	CHECK_EQ_INT(m.kind, UNWINDER_NATIVE);
	/* released: one mapping again */
	CHECK_EQ_INT(process_claim(reg, getpid(), (uint64_t)(uintptr_t)code + page, 0, 0), 0);
	CHECK_EQ_INT(p->nclaims, 0);
	CHECK_EQ_INT(unwinder_set_maps(u, getpid(), &p->maps, NULL, 0), 0);
	CHECK_EQ_INT(unwinder_lookup_mapping(u, getpid(), (uint64_t)(uintptr_t)code + page, &m), 0);
	CHECK_EQ_INT(m.kind, UNWINDER_NATIVE);
	CHECK_EQ_INT(m.start, (uint64_t)(uintptr_t)code);
	unwinder_free(u);
	munmap(code, (size_t)page * 4);
	CHECK_EQ_INT(process_refresh(reg, getpid(), 0), 1);
	CHECK_EQ_INT(count(&a, getpid(), PROCESS_EV_CHANGED), 2);
	CHECK_EQ_INT(p->maps.n, before);
	process_registry_free(reg);
}

/* A listener claiming during NEW: every listener sees NEW first, then CLAIMS. */
static void test_claims_from_a_listener(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct recorder a = { 0 }, b = { 0 };
	struct process_listener la = { "a", record, &a }, lb = { "b", record, &b };
	pid_t child = start_sleeper();

	a.reg = reg;
	a.claim_start = 0x10000;
	a.claim_end = 0x20000;
	process_registry_subscribe(reg, &la);
	process_registry_subscribe(reg, &lb);
	CHECK_EQ_INT(process_track(reg, child, NULL), 0);
	CHECK_EQ_INT(b.n, 2);
	CHECK_EQ_INT(b.evs[0], PROCESS_EV_NEW);
	CHECK_EQ_INT(b.claims[0], 1); /* made by a during NEW, visible ... */
	CHECK_EQ_INT(b.evs[1], PROCESS_EV_CLAIMS); /* ... and announced after it */
	CHECK_EQ_INT(a.evs[1], PROCESS_EV_CLAIMS);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	process_registry_free(reg);
	CHECK_EQ_INT(count(&b, child, PROCESS_EV_FORGET), 1);
}

static int label_source(void *ctx, struct process *p, char *key, size_t keylen, char *value,
			size_t valuelen)
{
	int *asked = ctx;

	if (++*asked < 2)
		return 0; /* not known yet (the interpreter has not run the script) */
	snprintf(key, keylen, "script");
	snprintf(value, valuelen, "/srv/app/main.py");
	return 1;
}

static void test_labels(void)
{
	struct process_registry_opts o = { .labels = 1 };
	struct process_registry *reg = process_registry_new(&o);
	const struct procinfo *pi;
	const char *key, *value;
	pid_t child = start_sleeper();
	int asked = 0;

	process_registry_set_label_source(reg, label_source, &asked);
	CHECK_EQ_INT(process_track(reg, child, "sleep"), 0);
	pi = process_labels(reg, child);
	CHECK(pi != NULL);
	CHECK(pi && !strcmp(pi->exe, "sleep"));
	CHECK(pi && pi->script[0] == '\0');
	pi = process_labels(reg, child);
	CHECK(pi && !strcmp(pi->script, "/srv/app/main.py")); /* whole: service_name.c names */
	CHECK_EQ_INT(process_runtime_label(reg, child, &key, &value), 1);
	CHECK_EQ_STR(key, "script");
	CHECK_EQ_STR(value, "/srv/app/main.py");
	CHECK_EQ_INT(asked, 2); /* remembered once known */
	CHECK(process_labels(reg, getpid()) == NULL); /* not tracked */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	process_registry_free(reg);
}

/* The lineage samples carry (service names): recorded on the labels, ancestors of a young
 * process read at once (labels only, stale), exit times, and a process gone before it could
 * be read still labelled with its comm and lineage. */
static void test_lineage(void)
{
	struct process_registry_opts o = { .labels = 1 };
	struct process_registry *reg = process_registry_new(&o);
	uint32_t anc[PROCINFO_ANCESTORS] = { (uint32_t)getpid(), 0 };
	struct process_lineage l = { 0 };
	const struct procinfo *pi;
	struct process *self;
	pid_t child = start_sleeper(), gone;

	CHECK(process_seen(reg, child, "sleep") != NULL);
	l.time_ns = 5000000000ULL;
	l.start_ns = 4900000000ULL; /* 0.1 s old: young */
	l.ancestors = anc;
	process_note_lineage(reg, child, &l, 1000000000ULL);
	pi = process_labels(reg, child);
	CHECK(pi && pi->start_ns == l.start_ns && pi->ancestors[0] == (uint32_t)getpid());
	CHECK(pi && pi->last_ns == l.time_ns && !pi->kernel_thread);
	/* the young child's parent (this test) was read, labels only */
	self = process_get(reg, getpid());
	CHECK(self && self->state == PROCESS_STALE && self->have_info);
	CHECK(self && self->info.start_ns > 0 && self->info.ppid == getppid());
	CHECK(process_labels(reg, getpid()) != NULL);
	/* an exec read at once (a hot executable) re-reads the executable and command line but
	 * keeps the lineage: samples taken before the exec still find the parent */
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		process_exec(reg, child, (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + 1,
			     1);
	}
	pi = process_labels(reg, child);
	CHECK(pi && pi->start_ns == l.start_ns && pi->ancestors[0] == (uint32_t)getpid());
	CHECK(pi && pi->ppid == getpid() && pi->last_ns == l.time_ns && !strcmp(pi->exe, "sleep"));
	/* a later sample moves the latest time only */
	l.time_ns = 7000000000ULL;
	process_note_lineage(reg, child, &l, 1000000000ULL);
	CHECK(pi->last_ns == 7000000000ULL);
	process_set_exit_time(reg, child, 7500000000ULL);
	process_exit(reg, child);
	CHECK_EQ_INT(pi->exit_ns, 7500000000LL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	/* gone before its first sample was handled */
	gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	CHECK(process_seen(reg, gone, "gonecomm") == NULL);
	process_note_lineage(reg, gone, &l, 1000000000ULL);
	pi = process_labels(reg, gone);
	CHECK(pi && !strcmp(pi->exe, "gonecomm") && !pi->exe_known);
	CHECK(pi && pi->ancestors[0] == (uint32_t)getpid());
	process_registry_collect(reg); /* both forgotten */
	CHECK(process_get(reg, gone) == NULL && process_get(reg, child) == NULL);

	/* dies while the interval is symbolized: its last sample (no lineage: BPF sends it only
	 * until user space has seen one) is drained after the collect and still finds it */
	child = start_sleeper();
	CHECK(process_seen(reg, child, "sleep") != NULL);
	l.time_ns = 9000000000ULL;
	l.start_ns = 8900000000ULL;
	process_note_lineage(reg, child, &l, 1000000000ULL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	process_registry_collect(reg);
	CHECK(process_seen(reg, child, "sleep") == NULL); /* not read again */
	{
		struct process_lineage late = { 9100000000ULL, 0, anc, 0 };

		process_note_lineage(reg, child, &late, 1000000000ULL);
	}
	pi = process_labels(reg, child);
	CHECK(pi && pi->start_ns == 8900000000ULL && pi->ancestors[0] == (uint32_t)getpid());
	CHECK(pi && pi->last_ns == 9100000000ULL && !strcmp(pi->exe, "sleep"));
	process_registry_collect(reg);
	CHECK(process_get(reg, child) == NULL);
	process_registry_free(reg);
}

/* Container ids from fork records (process_fork()): a child forked into its parent's cgroups
 * takes the parent's container id without reading /proc/PID/cgroup, an exec keeps it; a
 * parent moved since it was read, a child that did not start in its parent's cgroups, a
 * fork that saw moves not seen yet, a child moved after its fork, a reused pid and a renamed
 * cgroup all make the registry read /proc again; a lost move record stops it taking them from
 * events at all. The parent here is this test, its container id set to a made-up value, so
 * that what was taken from the parent cannot be mistaken for what /proc says ("" here). */
static void fake_cid(struct process_registry *reg, int pid, const char *cid)
{
	struct process *p = process_get(reg, pid);

	CHECK(p && p->have_info);
	if (p)
		snprintf(p->info.container_id, sizeof(p->info.container_id), "%s", cid);
}

static const char *cid_of(struct process_registry *reg, int pid)
{
	const struct procinfo *pi = process_labels(reg, pid);

	return pi ? pi->container_id : "(none)";
}

static void test_cgroups_from_forks(void)
{
	const char *fake = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	struct process_registry_opts o = { .labels = 1 };
	struct process_registry *reg = process_registry_new(&o);
	struct process_registry_stats st;
	struct process_fork_info fi = { 0 };
	pid_t self = getpid(), kids[6];
	const struct procinfo *pi;
	size_t i;

	for (i = 0; i < 6; i++)
		kids[i] = start_sleeper();
	process_registry_follow_cgroups(reg, 1);
	CHECK_EQ_INT(process_track(reg, self, "test"), 0);
	fake_cid(reg, self, fake);
	fi.parent = fi.ppid = self;
	fi.same_cgroups = 1;
	fi.start_ns = 4242;
	/* forked into the parent's cgroups: the parent's id, no read */
	process_fork(reg, kids[0], 1, 0, &fi);
	CHECK(process_seen(reg, kids[0], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[0]), fake);
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.cgroup_reads, 1); /* this test's own, at its track */
	CHECK_EQ_INT(st.cgroup_inherited, 1);
	CHECK_EQ_INT(st.fork_notes, 0);   /* used up */
	/* an exec of a process that has not moved keeps its id */
	process_exec(reg, kids[0], 2, 0);
	CHECK(process_seen(reg, kids[0], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[0]), fake);
	/* not in the parent's cgroups (CLONE_INTO_CGROUP): read */
	fi.same_cgroups = 0;
	process_fork(reg, kids[1], 3, 0, &fi);
	CHECK(process_seen(reg, kids[1], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[1]), "");
	fi.same_cgroups = 1;
	/* the fork saw a move this registry has not: read */
	fi.cgroup_moves = 1;
	process_fork(reg, kids[2], 4, 0, &fi);
	CHECK(process_seen(reg, kids[2], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[2]), "");
	/* a child moved after its fork, before it is read: read */
	fi.cgroup_moves = 0;
	process_fork(reg, kids[3], 5, 0, &fi);
	process_cgroup_moved(reg, kids[3], 1);
	CHECK(process_seen(reg, kids[3], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[3]), "");
	/* its lineage came from the fork record, an ancestor read needs no /proc/PID/stat */
	fi.cgroup_moves = 1;
	process_fork(reg, kids[4], 6, 0, &fi);
	pi = process_note_labels(reg, kids[4]);
	CHECK(pi && pi->start_ns == 4242 && pi->ppid == self && pi->ancestors[0] == (uint32_t)self);
	CHECK(pi && !strcmp(pi->container_id, fake));
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.stat_reads, 0);
	/* a new process under a known pid does not keep the old one's id */
	fake_cid(reg, kids[4], fake);
	fi.same_cgroups = 0;
	process_fork(reg, kids[4], 7, 0, &fi);
	CHECK(process_seen(reg, kids[4], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[4]), "");
	fi.same_cgroups = 1;
	/* the parent moved: its id is read again when asked for, and its children read theirs
	 * until then */
	process_cgroup_moved(reg, self, 2);
	fi.cgroup_moves = 2;
	process_fork(reg, kids[5], 8, 0, &fi);
	CHECK(process_seen(reg, kids[5], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[5]), "");
	CHECK_EQ_STR(cid_of(reg, self), ""); /* what /proc says now */
	fake_cid(reg, self, fake);
	/* a renamed cgroup: every id read again */
	process_cgroup_moved(reg, 0, 3);
	CHECK_EQ_STR(cid_of(reg, self), "");
	fake_cid(reg, self, fake);
	/* a lost record (seq 4 missing): ids are read from /proc from now on */
	process_cgroup_moved(reg, kids[1], 5);
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.cgroups_followed, 0);
	CHECK_EQ_INT(st.cgroup_moves, 4);
	fi.cgroup_moves = 5;
	process_fork(reg, kids[2], 9, 0, &fi);
	CHECK(process_seen(reg, kids[2], "sleep") != NULL);
	CHECK_EQ_STR(cid_of(reg, kids[2]), "");
	for (i = 0; i < 6; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	process_registry_free(reg);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_lineage);
	RUN(test_maps_once_and_events);
	RUN(test_sweep_finds_lost_exits);
	RUN(test_changed_and_claims);
	RUN(test_claims_from_a_listener);
	RUN(test_labels);
	RUN(test_cgroups_from_forks);
	return test_summary();
}
