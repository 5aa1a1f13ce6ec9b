/* process.c: the process registry (process.h): records by pid, the one reader of
 * /proc/PID/maps in a session, and the events its subscribers (unwinder, symbolizer, runtimes)
 * learn processes from. */
#include "agent/process.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LISTENERS 8
#define FORK_NOTE_TTL_NS (30 * 1000000000ULL) /* a fork note unused this long is dropped */
#define MAX_FORK_NOTES 65536

/* What the fork record of a process not read yet said, for its labels when it is read: its
 * lineage, and its container id when it started in its parent's cgroups and the parent's was
 * known then (process_fork()). */
struct fork_note {
	uint64_t when_ns;  /* the fork record's time */
	uint64_t start_ns;
	int ppid;
	int kernel_thread;
	int has_cid;       /* cid holds the container id */
	char cid[sizeof(((struct procinfo *)0)->container_id)];
};

struct process_registry {
	struct process_registry_opts opts;
	struct u64map procs; /* pid + 1 -> struct process * */
	struct u64map forks; /* pid + 1 -> struct fork_note * */
	int follow_cgroups;  /* cgroup-move records come (process_registry_follow_cgroups()) */
	int cgroups_lost;    /* one was lost: what fork records say of cgroups is not trusted */
	uint32_t moves_seen; /* seq of the latest cgroup-move record */
	struct process_listener listeners[MAX_LISTENERS];
	size_t nlisteners;
	process_label_fn label_fn;
	void *label_ctx;
	process_maps_fn maps_fn;
	void *maps_ctx;
	int notifying;
	struct process_registry_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct process_registry *process_registry_new(const struct process_registry_opts *opts)
{
	struct process_registry *r = xcalloc(1, sizeof(*r));

	if (opts)
		r->opts = *opts;
	u64map_init(&r->procs);
	u64map_init(&r->forks);
	return r;
}

void process_registry_follow_cgroups(struct process_registry *r, int on)
{
	r->follow_cgroups = on;
}

static struct fork_note *fork_note(struct process_registry *r, int pid)
{
	uint64_t *v = u64map_get(&r->forks, (uint64_t)(uint32_t)pid + 1);

	return v ? (struct fork_note *)(uintptr_t)*v : NULL;
}

static void drop_fork_note(struct process_registry *r, int pid)
{
	struct fork_note *n = fork_note(r, pid);

	if (n) {
		u64map_remove(&r->forks, (uint64_t)(uint32_t)pid + 1);
		xfree(n);
	}
}

/* Whether cgroup facts learnt from events still hold: every cgroup-move record came. */
static int cgroups_followed(const struct process_registry *r)
{
	return r->follow_cgroups && !r->cgroups_lost;
}

int process_registry_subscribe(struct process_registry *r, const struct process_listener *l)
{
	if (r->nlisteners >= MAX_LISTENERS)
		return -ENOSPC;
	r->listeners[r->nlisteners++] = *l;
	return 0;
}

void process_registry_set_label_source(struct process_registry *r, process_label_fn fn,
				       void *ctx)
{
	r->label_fn = fn;
	r->label_ctx = ctx;
}

struct process *process_get(struct process_registry *r, int pid)
{
	uint64_t *v;

	if (pid <= 0)
		return NULL;
	v = u64map_get(&r->procs, (uint64_t)(uint32_t)pid + 1);
	return v ? (struct process *)(uintptr_t)*v : NULL;
}

struct process *process_next(struct process_registry *r, size_t *iter)
{
	uint64_t k, v;

	if (!u64map_next(&r->procs, iter, &k, &v))
		return NULL;
	return (struct process *)(uintptr_t)v;
}

static void notify(struct process_registry *r, struct process *p, enum process_event ev)
{
	size_t i;

	r->notifying++;
	for (i = 0; i < r->nlisteners; i++) {
		r->st.events++;
		r->listeners[i].on_event(r->listeners[i].ctx, p, ev);
	}
	r->notifying--;
	/* Claims made by a listener (a runtime attached during NEW) reach everyone now. */
	if (!r->notifying && p->claims_dirty && ev != PROCESS_EV_FORGET &&
	    p->state == PROCESS_LIVE) {
		p->claims_dirty = 0;
		notify(r, p, PROCESS_EV_CLAIMS);
	}
}

static struct process *process_create(struct process_registry *r, int pid)
{
	struct process *p = xcalloc(1, sizeof(*p));

	p->pid = pid;
	p->exe = xstrdup("");
	u64map_put(&r->procs, (uint64_t)(uint32_t)pid + 1, (uint64_t)(uintptr_t)p);
	return p;
}

static void process_destroy(struct process *p)
{
	procmaps_release(&p->maps);
	xfree(p->exe);
	xfree(p->claims);
	xfree(p);
}

static void forget(struct process_registry *r, struct process *p)
{
	notify(r, p, PROCESS_EV_FORGET);
	u64map_remove(&r->procs, (uint64_t)(uint32_t)p->pid + 1);
	process_destroy(p);
}

static uint64_t maps_hash(const struct procmaps *m)
{
	uint64_t h = 0x9a9;
	size_t i;

	for (i = 0; i < m->n; i++) {
		h = hash_combine(h, m->v[i].start);
		h = hash_combine(h, m->v[i].end);
		h = hash_combine(h, m->v[i].offset ^ m->v[i].inode);
	}
	return h;
}

static void read_exe(struct process *p)
{
	char link[64], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", p->pid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		n = 0;
	target[n] = '\0';
	if (n > 10 && !strcmp(target + n - 10, " (deleted)"))
		target[n - 10] = '\0';
	xfree(p->exe);
	p->exe = xstrdup(target);
}

void process_registry_set_maps_source(struct process_registry *r, process_maps_fn fn,
				      void *ctx)
{
	r->maps_fn = fn;
	r->maps_ctx = ctx;
}

/* Where a read of the maps came from, and up to when they hold. */
struct maps_read {
	uint64_t as_of_ns;   /* maps_read_ns for them */
	int from_events;     /* the maps source's: the process was gone */
	char exe[4096];      /* from_events: the executable ("" unknown) */
};

/* Read the executable mappings of p into new maps, for a pc that ran at when_ns (0: now); 0 or
 * negative errno (p unchanged then). A process gone already (or a zombie: no mappings left) is
 * asked of the maps source. */
static int read_maps(struct process_registry *r, struct process *p, struct procmaps *out,
		     uint64_t when_ns, struct maps_read *how)
{
	int rc = procmaps_read_exec(p->pid, out, NULL);

	r->st.maps_reads++;
	how->from_events = 0;
	how->as_of_ns = now_ns();
	if ((rc || !out->n) && r->maps_fn) {
		struct procmaps ev;

		if (r->maps_fn(r->maps_ctx, p->pid, when_ns, &ev, how->exe, sizeof(how->exe),
			       &how->as_of_ns) == 0) {
			procmaps_release(out);
			*out = ev;
			r->st.maps_from_events++;
			how->from_events = 1;
			return 0;
		}
		procmaps_release(&ev);
		how->as_of_ns = now_ns();
	}
	if (rc)
		procmaps_release(out);
	return rc;
}

static void set_comm(struct process *p, const char *comm)
{
	if (comm && *comm && strncmp(p->comm, comm, sizeof(p->comm)))
		snprintf(p->comm, sizeof(p->comm), "%.15s", comm);
}

/* (Re-)read what labels p. An exec changes the executable and the command line, not when the
 * process started, who started it or when it exits: the lineage learnt from its samples and
 * events stays, or a child of a shell loop whose samples all came before the exec was read
 * would lose its parent and stand as a service of its own. */
static void read_info(struct process_registry *r, struct process *p)
{
	struct procinfo old;
	struct fork_note *n = fork_note(r, p->pid);
	const char *cid = NULL;

	/* The container id without reading /proc/PID/cgroup, when events say what it is: the
	 * parent's, for a child forked into its cgroups; its own, for an exec of a process that
	 * has not moved since it was read. */
	if (cgroups_followed(r)) {
		if (n && n->has_cid)
			cid = n->cid;
		else if (p->have_info && p->cgroup_known && !p->cgroup_stale)
			cid = p->info.container_id;
	}
	if (cid) {
		char keep[sizeof(p->info.container_id)];

		snprintf(keep, sizeof(keep), "%s", cid); /* cid may be p->info's */
		r->st.cgroup_inherited++;
		old = p->info;
		procinfo_read_exe(p->pid, p->comm, p->exe, keep, &p->info);
	} else {
		r->st.cgroup_reads++;
		old = p->info;
		procinfo_read_exe(p->pid, p->comm, p->exe, NULL, &p->info);
	}
	p->cgroup_known = 1;
	p->cgroup_stale = 0;
	drop_fork_note(r, p->pid);
	if (!p->have_info) {
		p->have_info = 1;
		return;
	}
	p->info.ppid = old.ppid;
	memcpy(p->info.ancestors, old.ancestors, sizeof(old.ancestors));
	p->info.start_ns = old.start_ns;
	p->info.exit_ns = old.exit_ns;
	p->info.last_ns = old.last_ns;
	p->info.kernel_thread = old.kernel_thread;
}

/* Read p as a new image (the one that ran at when_ns, 0: now) and send NEW. */
static int load(struct process_registry *r, struct process *p, const char *comm,
		uint64_t when_ns)
{
	struct procmaps m;
	struct maps_read how;
	int rc, known = p->state != 0;

	set_comm(p, comm);
	rc = read_maps(r, p, &m, when_ns, &how);
	if (rc) {
		if (known && p->state != PROCESS_EXITED) {
			p->state = PROCESS_EXITED;
			notify(r, p, PROCESS_EV_EXIT);
		}
		p->state = PROCESS_EXITED;
		if (r->opts.labels && !p->have_info) {
			/* gone already: what can be known without /proc (the comm, the lineage
			 * process_note_lineage() adds) still names its samples */
			procinfo_read(p->pid, p->comm, &p->info);
			p->have_info = 1;
		}
		return rc;
	}
	procmaps_release(&p->maps);
	p->maps = m;
	p->maps_hash = maps_hash(&p->maps);
	p->maps_read_ns = how.as_of_ns;
	if (known)
		p->generation++;
	p->state = PROCESS_LIVE;
	p->nclaims = 0;
	p->claims_dirty = 0;
	p->label_key[0] = p->label_value[0] = '\0';
	if (how.from_events) {
		xfree(p->exe);
		p->exe = xstrdup(how.exe);
	} else {
		read_exe(p);
	}
	if (r->opts.labels)
		read_info(r, p);
	r->st.maps_changes++;
	notify(r, p, PROCESS_EV_NEW);
	return 0;
}

int process_track(struct process_registry *r, int pid, const char *comm)
{
	struct process *p;

	if (pid <= 0)
		return -EINVAL;
	p = process_get(r, pid);
	if (!p)
		p = process_create(r, pid);
	return load(r, p, comm, 0);
}

struct process *process_seen(struct process_registry *r, int pid, const char *comm)
{
	return process_seen_at(r, pid, comm, 0);
}

struct process *process_seen_at(struct process_registry *r, int pid, const char *comm,
				uint64_t when_ns)
{
	struct process *p = process_get(r, pid);

	if (pid <= 0)
		return NULL;
	if (p && p->state != PROCESS_STALE) {
		set_comm(p, comm);
		return p->state == PROCESS_LIVE ? p : NULL;
	}
	if (!p)
		p = process_create(r, pid); /* kept even when unreadable: not read again */
	return load(r, p, comm, when_ns) == 0 ? p : NULL;
}

static void new_image(struct process_registry *r, int pid, uint64_t when_ns, int read_now)
{
	struct process *p = process_get(r, pid);

	/* Read after the event already (a sample of the new image came first): current. */
	if (p && p->state == PROCESS_LIVE && when_ns && p->maps_read_ns > when_ns)
		return;
	if (!p) {
		if (read_now && pid > 0)
			load(r, process_create(r, pid), NULL, when_ns);
		return;
	}
	if (read_now) {
		load(r, p, NULL, when_ns);
		return;
	}
	p->state = PROCESS_STALE;
	p->nclaims = 0;
	notify(r, p, PROCESS_EV_STALE);
}

void process_exec(struct process_registry *r, int pid, uint64_t when_ns, int read_now)
{
	new_image(r, pid, when_ns, read_now);
}

void process_fork(struct process_registry *r, int pid, uint64_t when_ns, int read_now,
		  const struct process_fork_info *f)
{
	struct process *p = process_get(r, pid);

	drop_fork_note(r, pid);
	if (p)
		p->cgroup_stale = 1; /* a new process under a reused pid */
	if (f && r->opts.labels && pid > 0 && r->forks.count < MAX_FORK_NOTES) {
		struct fork_note *n = xmalloc(sizeof(*n));
		struct process *pp = f->parent > 0 ? process_get(r, f->parent) : NULL;
		struct fork_note *pn = f->parent > 0 ? fork_note(r, f->parent) : NULL;

		n->has_cid = 0;
		n->cid[0] = '\0';
		n->when_ns = when_ns;
		n->start_ns = f->start_ns;
		n->ppid = f->ppid;
		n->kernel_thread = f->kernel_thread;
		/* The parent's container id as known now is the child's when the child started
		 * in the parent's cgroups and every cgroup move before the fork has been seen:
		 * then the parent's record is current as of the fork (a parent moved since it
		 * was read is cgroup_stale, and a move after the fork does not touch the
		 * child). */
		if (cgroups_followed(r) && f->same_cgroups && f->cgroup_moves == r->moves_seen) {
			if (pp && pp->have_info && pp->cgroup_known && !pp->cgroup_stale) {
				memcpy(n->cid, pp->info.container_id, sizeof(n->cid));
				n->cid[sizeof(n->cid) - 1] = '\0';
				n->has_cid = 1;
			} else if (!pp && pn && pn->has_cid) {
				memcpy(n->cid, pn->cid, sizeof(n->cid));
				n->has_cid = 1;
			}
		}
		u64map_put(&r->forks, (uint64_t)(uint32_t)pid + 1, (uint64_t)(uintptr_t)n);
	}
	new_image(r, pid, when_ns, read_now);
}

void process_cgroup_moved(struct process_registry *r, int pid, uint32_t seq)
{
	struct process *p = process_get(r, pid);
	struct fork_note *n = fork_note(r, pid);

	r->st.cgroup_moves++;
	if (seq != r->moves_seen + 1 && !r->cgroups_lost) {
		/* a record was lost (ring buffer full): from now on every container id is read
		 * from /proc */
		r->cgroups_lost = 1;
		log_debug("process: a cgroup-move record was lost (seq %u after %u): container ids "
			  "are read from /proc from now on", seq, r->moves_seen);
	}
	r->moves_seen = seq;
	if (pid == 0) {
		/* a cgroup was renamed: any process's path may have changed */
		size_t it = 0;
		uint64_t k, v;

		while ((p = process_next(r, &it)))
			p->cgroup_stale = 1;
		for (it = 0; u64map_next(&r->forks, &it, &k, &v);)
			((struct fork_note *)(uintptr_t)v)->has_cid = 0;
		return;
	}
	if (p)
		p->cgroup_stale = 1;
	if (n)
		n->has_cid = 0;
}

void process_exit(struct process_registry *r, int pid)
{
	struct process *p = process_get(r, pid);

	drop_fork_note(r, pid);
	/* Two threads exiting together may both report the exit: the second is a no-op. */
	if (!p || p->state == PROCESS_EXITED)
		return;
	p->state = PROCESS_EXITED;
	notify(r, p, PROCESS_EV_EXIT);
}

int process_refresh(struct process_registry *r, int pid, uint64_t min_interval_ns)
{
	return process_refresh_after(r, pid, min_interval_ns, 0);
}

int process_refresh_after(struct process_registry *r, int pid, uint64_t min_interval_ns,
			  uint64_t when_ns)
{
	struct process *p = process_get(r, pid);
	struct procmaps m;
	struct maps_read how;
	uint64_t h;
	int rc;

	if (!p || p->state != PROCESS_LIVE || r->notifying)
		return 0;
	if (now_ns() - p->maps_read_ns < min_interval_ns && p->maps_read_ns >= when_ns)
		return 0;
	rc = read_maps(r, p, &m, when_ns, &how);
	p->maps_read_ns = rc ? now_ns() : how.as_of_ns;
	if (rc) {
		if (rc == -ESRCH) {
			p->state = PROCESS_EXITED;
			notify(r, p, PROCESS_EV_EXIT);
		}
		return rc;
	}
	h = maps_hash(&m);
	if (h == p->maps_hash) {
		procmaps_release(&m);
		return 1;
	}
	procmaps_release(&p->maps);
	p->maps = m;
	p->maps_hash = h;
	r->st.maps_changes++;
	notify(r, p, PROCESS_EV_CHANGED);
	return 1;
}

int process_claim(struct process_registry *r, int pid, uint64_t start, uint64_t end,
		  uint8_t kind)
{
	struct process *p = process_get(r, pid);
	size_t i;

	if (!p || p->state != PROCESS_LIVE)
		return -ENOENT;
	if (kind >= 16 || (kind && end <= start))
		return -EINVAL;
	for (i = 0; i < p->nclaims && p->claims[i].start < start; i++)
		;
	if (i < p->nclaims && p->claims[i].start == start) {
		if (kind) {
			p->claims[i].end = end;
			p->claims[i].kind = kind;
		} else {
			memmove(&p->claims[i], &p->claims[i + 1],
				(p->nclaims - i - 1) * sizeof(*p->claims));
			p->nclaims--;
		}
	} else if (kind) {
		if (p->nclaims >= PROCESS_MAX_CLAIMS)
			return -ENOSPC;
		ALLOC_GROW(p->claims, p->nclaims + 1, p->claims_cap);
		memmove(&p->claims[i + 1], &p->claims[i], (p->nclaims - i) * sizeof(*p->claims));
		p->claims[i].start = start;
		p->claims[i].end = end;
		p->claims[i].kind = kind;
		p->nclaims++;
	} else {
		return 0;
	}
	if (r->notifying)
		p->claims_dirty = 1;
	else
		notify(r, p, PROCESS_EV_CLAIMS);
	return 0;
}

static void ask_label(struct process_registry *r, struct process *p)
{
	if (p->label_key[0] || !r->label_fn)
		return;
	if (r->label_fn(r->label_ctx, p, p->label_key, sizeof(p->label_key), p->label_value,
			sizeof(p->label_value)) != 1 || !p->label_value[0])
		p->label_key[0] = p->label_value[0] = '\0';
}

int process_runtime_label(struct process_registry *r, int pid, const char **key,
			  const char **value)
{
	struct process *p = process_get(r, pid);

	if (!p)
		return 0;
	ask_label(r, p);
	if (!p->label_key[0])
		return 0;
	*key = p->label_key;
	*value = p->label_value;
	return 1;
}

const struct procinfo *process_labels(struct process_registry *r, int pid)
{
	struct process *p = process_get(r, pid);

	if (!p || !p->have_info)
		return NULL;
	if (p->cgroup_stale && p->cgroup_known && p->state == PROCESS_LIVE) {
		/* moved to another cgroup since it was read */
		r->st.cgroup_reads++;
		procinfo_read_cgroup(pid, &p->info);
		p->cgroup_stale = 0;
	}
	if (!p->info.script[0] && p->state != PROCESS_STALE) {
		ask_label(r, p);
		/* the whole label (a path, a module): service_name.c makes the name */
		if (p->label_value[0])
			snprintf(p->info.script, sizeof(p->info.script), "%s", p->label_value);
	}
	return &p->info;
}

const struct procinfo *process_note_labels(struct process_registry *r, int pid)
{
	struct process *p = process_get(r, pid);
	struct fork_note *n;
	const char *cid;

	if (pid <= 0 || !r->opts.labels)
		return NULL;
	if (p)
		return p->have_info ? &p->info : NULL;
	n = fork_note(r, pid);
	cid = n && n->has_cid && cgroups_followed(r) ? n->cid : NULL;
	p = process_create(r, pid);
	p->state = PROCESS_STALE; /* labels only: its maps are read at a sample of its own */
	if (procinfo_read_exe(pid, NULL, NULL, cid, &p->info) < 0) {
		p->state = PROCESS_EXITED; /* forgotten at the next collect */
		return NULL;
	}
	if (cid) {
		r->st.cgroup_inherited++;
	} else {
		r->st.cgroup_reads++;
	}
	p->cgroup_known = 1;
	if (n) {
		/* its fork record said when it started and who its parent is */
		p->info.ppid = n->ppid;
		memset(p->info.ancestors, 0, sizeof(p->info.ancestors));
		p->info.ancestors[0] = n->ppid > 1 ? (uint32_t)n->ppid : 0;
		p->info.start_ns = n->start_ns;
		p->info.kernel_thread = n->kernel_thread;
	} else if (procinfo_read_stat(pid, &p->info) < 0) {
		p->state = PROCESS_EXITED;
		return NULL;
	} else {
		r->st.stat_reads++;
	}
	drop_fork_note(r, pid);
	p->have_info = 1;
	return &p->info;
}

void process_note_lineage(struct process_registry *r, int pid, const struct process_lineage *l,
			  uint64_t young_ns)
{
	struct process *p = process_get(r, pid);
	size_t i;

	if (!p || !r->opts.labels || !p->have_info)
		return;
	if (!l->start_ns && !l->kernel_thread) {
		/* The sampler sends the lineage only until user space has seen a sample of the
		 * process (sampler.bpf.c: lineage()): keep what the first samples said. When
		 * those were lost, what /proc says. */
		if (!p->info.start_ns && !p->info.last_ns)
			procinfo_read_stat(pid, &p->info);
		if (l->time_ns > p->info.last_ns)
			p->info.last_ns = l->time_ns;
		return;
	}
	if (p->info.start_ns != l->start_ns || !p->info.last_ns) {
		memcpy(p->info.ancestors, l->ancestors, sizeof(p->info.ancestors));
		p->info.ppid = (int)l->ancestors[0];
		p->info.start_ns = l->start_ns;
		p->info.kernel_thread = l->kernel_thread;
		if (l->start_ns && l->time_ns - l->start_ns < young_ns)
			for (i = 0; i < PROCINFO_ANCESTORS && l->ancestors[i] > 1; i++)
				process_note_labels(r, (int)l->ancestors[i]);
	}
	if (l->time_ns > p->info.last_ns)
		p->info.last_ns = l->time_ns;
}

void process_set_exit_time(struct process_registry *r, int pid, uint64_t when_ns)
{
	struct process *p = process_get(r, pid);

	if (p && p->have_info && !p->info.exit_ns)
		p->info.exit_ns = when_ns;
}

void process_registry_collect(struct process_registry *r)
{
	struct process *p;
	size_t it = 0, n = 0, cap = 0, i;
	int *gone = NULL;

	while ((p = process_next(r, &it))) {
		if (p->state != PROCESS_EXITED && kill(p->pid, 0) < 0 && errno == ESRCH) {
			/* dead without an exit record: lost (ring buffer full), or not read yet
			 * (it died while the interval was symbolized); kept for one more
			 * interval, so that samples still in the ring buffer find its record */
			p->state = PROCESS_EXITED;
			notify(r, p, PROCESS_EV_EXIT);
			continue;
		}
		if (p->state == PROCESS_EXITED) {
			ALLOC_GROW(gone, n + 1, cap);
			gone[n++] = p->pid;
		}
	}
	for (i = 0; i < n; i++) {
		p = process_get(r, gone[i]);
		if (p)
			forget(r, p);
	}
	/* fork notes of processes never read (never sampled, nor an ancestor of a sampled one) */
	if (r->forks.count) {
		uint64_t now = now_ns(), k, v;

		n = 0;
		it = 0;
		while (u64map_next(&r->forks, &it, &k, &v)) {
			const struct fork_note *fn = (const struct fork_note *)(uintptr_t)v;

			if (now - fn->when_ns > FORK_NOTE_TTL_NS) {
				ALLOC_GROW(gone, n + 1, cap);
				gone[n++] = (int)(k - 1);
			}
		}
		for (i = 0; i < n; i++)
			drop_fork_note(r, gone[i]);
	}
	xfree(gone);
}

void process_registry_stats(const struct process_registry *r, struct process_registry_stats *st)
{
	size_t it = 0;
	uint64_t k, v;

	*st = r->st;
	st->procs = r->procs.count;
	st->fork_notes = r->forks.count;
	st->cgroups_followed = cgroups_followed(r);
	st->exited_pending = 0;
	st->labeled = 0;
	while (u64map_next(&r->procs, &it, &k, &v)) {
		const struct process *p = (const struct process *)(uintptr_t)v;

		st->exited_pending += p->state == PROCESS_EXITED;
		st->labeled += p->have_info;
	}
}

void process_registry_free(struct process_registry *r)
{
	struct process *p;
	size_t it = 0;
	uint64_t k, v;

	if (!r)
		return;
	while ((p = process_next(r, &it))) {
		forget(r, p);
		it = 0; /* the map changed under the iterator: start over */
	}
	u64map_release(&r->procs);
	for (it = 0; u64map_next(&r->forks, &it, &k, &v);)
		xfree((void *)(uintptr_t)v);
	u64map_release(&r->forks);
	xfree(r);
}
