/* mapevents.c: executable mappings of new processes from perf's mmap records (mapevents.h):
 * the record parser, the per-process images, the per-CPU buffers and their drain. A session
 * (session.c) opens it and hands it to the process registry (process.c) as its maps source. */
#include "agent/mapevents.h"
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define TRAILER 16u          /* u32 pid, u32 tid, u64 time (sample_id_all, TID | TIME) */
#define MMAP2_FIXED 72u      /* header + fields before filename */
#define MAX_PATH_LEN 4096u
/* Free space under which a buffer may have refused a record: an MMAP2 with the longest path. */
#define FULL_MARGIN (MMAP2_FIXED + MAX_PATH_LEN + TRAILER)

struct me_map {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	uint8_t prot;
	uint8_t bid_len;     /* a build id instead of device and inode */
	uint8_t bid[20];
	char *path;          /* owned; "" for anonymous memory */
};

struct me_image {
	uint64_t start_ns;   /* the exec or fork that began it; 0: no image */
	struct me_map *v;    /* sorted by start, not overlapping */
	size_t n, cap;
	char *exe;           /* owned, or NULL */
	int complete;        /* every mapping since start_ns is here */
};

struct me_proc {
	int pid;
	struct me_image cur, prev;
	int exited;          /* exit seen */
	int collects;        /* collects since the exit */
	struct me_proc *older, *newer; /* by the start of cur */
};

struct me_cpu {
	int fd;
	void *base;          /* metadata page, then the data pages */
};

struct pending {
	uint64_t time;
	size_t off, len;     /* in the drain's scratch buffer */
	uint32_t seq;
};

struct mapevents {
	struct mapevents_opts opts;
	struct u64map procs; /* pid + 1 -> struct me_proc * */
	struct me_proc *oldest, *newest;
	int following;
	struct u64map follow; /* pid + 1 -> 1: followed, 2: and its children */
	struct me_cpu *cpus;
	int ncpus;
	size_t page, data_bytes;
	uint8_t *scratch;
	size_t scratch_len, scratch_cap;
	struct pending *pend;
	size_t npend, pend_cap;
	struct mapevents_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* ---- the parser */

int mapevents_parse(const void *rec, size_t len, struct mapevent *out)
{
	const uint8_t *r = rec;
	uint16_t size;

	memset(out, 0, sizeof(*out));
	out->filename = "";
	if (len < 8)
		return -EINVAL;
	out->type = rd32(r);
	memcpy(&out->misc, r + 4, 2);
	memcpy(&size, r + 6, 2);
	if (size != len || size < 8 + TRAILER)
		return -EINVAL;
	out->pid = rd32(r + size - TRAILER);
	out->tid = rd32(r + size - TRAILER + 4);
	out->time_ns = rd64(r + size - 8);
	switch (out->type) {
	case MAPEVENTS_REC_MMAP2: {
		size_t fnlen;

		if (size < MMAP2_FIXED + TRAILER + 1)
			return -EINVAL;
		if (rd32(r + 8) != out->pid)
			return -EINVAL;
		out->addr = rd64(r + 16);
		out->len = rd64(r + 24);
		out->pgoff = rd64(r + 32);
		if (out->misc & MAPEVENTS_MISC_BUILD_ID) {
			out->build_id_size = r[40];
			if (out->build_id_size > 20)
				return -EINVAL;
			memcpy(out->build_id, r + 44, out->build_id_size);
		} else {
			out->maj = rd32(r + 40);
			out->min = rd32(r + 44);
			out->ino = rd64(r + 48);
		}
		out->prot = rd32(r + 64);
		out->flags = rd32(r + 68);
		fnlen = size - MMAP2_FIXED - TRAILER;
		if (!memchr(r + MMAP2_FIXED, '\0', fnlen))
			return -EINVAL;
		out->filename = (const char *)r + MMAP2_FIXED;
		if (out->len == 0 || out->addr + out->len < out->addr)
			return -EINVAL;
		return 0;
	}
	case MAPEVENTS_REC_COMM:
		if (size < 16 + TRAILER + 1 || rd32(r + 8) != out->pid)
			return -EINVAL;
		out->comm_exec = (out->misc & MAPEVENTS_MISC_COMM_EXEC) != 0;
		return 0;
	case MAPEVENTS_REC_FORK:
	case MAPEVENTS_REC_EXIT:
		if (size < 32 + TRAILER)
			return -EINVAL;
		out->pid = rd32(r + 8);
		out->ppid = rd32(r + 12);
		out->tid = rd32(r + 16);
		out->ptid = rd32(r + 20);
		return 0;
	case MAPEVENTS_REC_LOST:
		if (size < 24 + TRAILER)
			return -EINVAL;
		out->lost = rd64(r + 16);
		return 0;
	default:
		return -ENOENT;
	}
}

/* ---- images and processes */

static size_t map_bytes(const struct me_map *e)
{
	return sizeof(*e) + strlen(e->path) + 1;
}

static void image_release(struct mapevents *m, struct me_image *im)
{
	size_t i;

	for (i = 0; i < im->n; i++) {
		m->st.bytes -= map_bytes(&im->v[i]);
		xfree(im->v[i].path);
	}
	xfree(im->v);
	xfree(im->exe);
	memset(im, 0, sizeof(*im));
}

static void image_copy(struct mapevents *m, struct me_image *dst, const struct me_image *src)
{
	size_t i;

	dst->n = dst->cap = 0;
	dst->v = NULL;
	if (src->n) {
		dst->v = xmalloc(src->n * sizeof(*dst->v));
		dst->cap = src->n;
	}
	for (i = 0; i < src->n; i++) {
		dst->v[i] = src->v[i];
		dst->v[i].path = xstrdup(src->v[i].path);
		m->st.bytes += map_bytes(&dst->v[i]);
	}
	dst->n = src->n;
	dst->exe = src->exe ? xstrdup(src->exe) : NULL;
	dst->complete = src->complete;
}

static struct me_proc *proc_get(struct mapevents *m, int pid)
{
	uint64_t *v = u64map_get(&m->procs, (uint64_t)(uint32_t)pid + 1);

	return v ? (struct me_proc *)(uintptr_t)*v : NULL;
}

static void lru_unlink(struct mapevents *m, struct me_proc *p)
{
	if (p->older)
		p->older->newer = p->newer;
	else
		m->oldest = p->newer;
	if (p->newer)
		p->newer->older = p->older;
	else
		m->newest = p->older;
	p->older = p->newer = NULL;
}

static void lru_push(struct mapevents *m, struct me_proc *p)
{
	p->older = m->newest;
	p->newer = NULL;
	if (m->newest)
		m->newest->newer = p;
	else
		m->oldest = p;
	m->newest = p;
}

static void proc_drop(struct mapevents *m, struct me_proc *p)
{
	lru_unlink(m, p);
	u64map_remove(&m->procs, (uint64_t)(uint32_t)p->pid + 1);
	image_release(m, &p->cur);
	image_release(m, &p->prev);
	m->st.bytes -= sizeof(*p);
	m->st.procs--;
	xfree(p);
}

/* A new image of pid begins at when (an exec, or a fork whose child starts from the parent's
 * image when we know it). Returns the process, with cur empty and complete. */
static struct me_proc *new_image(struct mapevents *m, int pid, uint64_t when, int reused)
{
	struct me_proc *p = proc_get(m, pid);

	if (!p) {
		if (m->st.procs >= m->opts.max_procs && m->oldest) {
			proc_drop(m, m->oldest);
			m->st.evicted++;
		}
		p = xcalloc(1, sizeof(*p));
		p->pid = pid;
		u64map_put(&m->procs, (uint64_t)(uint32_t)pid + 1, (uint64_t)(uintptr_t)p);
		m->st.bytes += sizeof(*p);
		m->st.procs++;
	} else {
		lru_unlink(m, p);
		image_release(m, &p->prev);
		if (reused)
			image_release(m, &p->cur); /* another process: its images are not ours */
		else
			p->prev = p->cur;
		memset(&p->cur, 0, sizeof(p->cur));
	}
	p->exited = 0;
	p->collects = 0;
	p->cur.start_ns = when ? when : 1;
	p->cur.complete = 1;
	lru_push(m, p);
	return p;
}

static int followed(const struct mapevents *m, int pid)
{
	return !m->following || u64map_get(&m->follow, (uint64_t)(uint32_t)pid + 1) != NULL;
}

/* Map [start, end) in im, over whatever it covered (the kernel replaced it). */
static void image_map(struct mapevents *m, struct me_image *im, const struct mapevent *ev)
{
	uint64_t start = ev->addr, end = ev->addr + ev->len;
	size_t i, j, n = 0;
	struct me_map e, *nv;
	const char *path = ev->filename;

	if (!im->complete)
		return;
	memset(&e, 0, sizeof(e));
	e.start = start;
	e.end = end;
	e.pgoff = ev->pgoff;
	e.maj = ev->maj;
	e.min = ev->min;
	e.ino = ev->ino;
	e.prot = (uint8_t)(ev->prot & 7);
	e.bid_len = ev->build_id_size;
	memcpy(e.bid, ev->build_id, sizeof(e.bid));
	/* anonymous executable memory (a JIT's) is "//anon"; a path is only kept when it is one
	 * the maps text can carry */
	if (!strcmp(path, "//anon") || strlen(path) > MAX_PATH_LEN || strchr(path, '\n') ||
	    (path[0] != '/' && path[0] != '['))
		path = "";
	/* the entries that survive, the new one, and up to one split in two: n + 2 at most */
	nv = xmalloc((im->n + 2) * sizeof(*nv));
	for (i = 0; i < im->n; i++) {
		struct me_map *o = &im->v[i];

		if (o->end <= start || o->start >= end) {
			nv[n++] = *o;
			continue;
		}
		if (o->start < start && o->end > end) { /* split around the new one */
			struct me_map tail = *o;

			tail.path = xstrdup(o->path);
			tail.pgoff += end - o->start;
			tail.start = end;
			o->end = start;
			nv[n++] = *o;
			nv[n++] = tail;
			m->st.bytes += map_bytes(&tail);
			continue;
		}
		if (o->start < start) {
			o->end = start;
			nv[n++] = *o;
		} else if (o->end > end) {
			o->pgoff += end - o->start;
			o->start = end;
			nv[n++] = *o;
		} else {
			m->st.bytes -= map_bytes(o);
			xfree(o->path);
		}
	}
	if (n >= MAPEVENTS_MAX_MAPPINGS) {
		/* too many to keep: the image will not be served */
		for (i = 0; i < n; i++) {
			m->st.bytes -= map_bytes(&nv[i]);
			xfree(nv[i].path);
		}
		xfree(nv);
		xfree(im->v);
		im->v = NULL;
		im->n = im->cap = 0;
		im->complete = 0;
		return;
	}
	e.path = xstrdup(path);
	m->st.bytes += map_bytes(&e);
	for (j = n; j > 0 && nv[j - 1].start > e.start; j--)
		nv[j] = nv[j - 1];
	nv[j] = e;
	n++;
	xfree(im->v);
	im->v = nv;
	im->n = n;
	im->cap = n;
	/* the first file an exec maps is its executable (binfmt_elf maps it before the loader) */
	if (!im->exe && e.path[0] == '/')
		im->exe = xstrdup(e.path);
}

/* Any image current now may miss a mapping: none of them is served. */
static void all_incomplete(struct mapevents *m)
{
	struct me_proc *p;

	for (p = m->oldest; p; p = p->newer)
		p->cur.complete = 0;
}

int mapevents_apply(struct mapevents *m, const void *rec, size_t len)
{
	struct mapevent ev;
	struct me_proc *p;
	int rc = mapevents_parse(rec, len, &ev);

	if (rc) {
		if (rc == -EINVAL)
			m->st.bad++;
		return rc;
	}
	m->st.records++;
	switch (ev.type) {
	case MAPEVENTS_REC_MMAP2:
		if (!(ev.prot & PROT_EXEC))
			break;
		p = proc_get(m, (int)ev.pid);
		if (!p || p->exited || ev.time_ns < p->cur.start_ns)
			break; /* not born while we watch, or a record of an image before */
		m->st.mmaps++;
		image_map(m, &p->cur, &ev);
		break;
	case MAPEVENTS_REC_COMM:
		if (!ev.comm_exec || (int)ev.pid <= 0 || !followed(m, (int)ev.pid))
			break;
		p = proc_get(m, (int)ev.pid);
		if (p && ev.time_ns < p->cur.start_ns)
			break;
		new_image(m, (int)ev.pid, ev.time_ns, 0);
		break;
	case MAPEVENTS_REC_FORK: {
		struct me_proc *parent;

		if (ev.pid == ev.ppid || (int)ev.pid <= 0)
			break; /* a thread */
		if (m->following) {
			uint64_t *f = u64map_get(&m->follow, (uint64_t)ev.ppid + 1);

			if (!f || *f != 2)
				break;
			u64map_put(&m->follow, (uint64_t)ev.pid + 1, 2);
		}
		p = proc_get(m, (int)ev.pid);
		if (p && ev.time_ns < p->cur.start_ns)
			break; /* the exec of the child came first (another CPU) */
		p = new_image(m, (int)ev.pid, ev.time_ns, 1);
		/* the child runs the parent's image: a copy when we know it whole */
		parent = proc_get(m, (int)ev.ppid);
		if (parent && parent->cur.start_ns && parent->cur.start_ns <= ev.time_ns) {
			uint64_t start = p->cur.start_ns;

			image_copy(m, &p->cur, &parent->cur);
			p->cur.start_ns = start;
		} else {
			p->cur.complete = 0;
		}
		break;
	}
	case MAPEVENTS_REC_EXIT:
		if (ev.pid != ev.tid)
			break; /* a thread, or a leader that leaves its threads running */
		if (m->following) /* its children were followed at their fork already */
			u64map_remove(&m->follow, (uint64_t)ev.pid + 1);
		p = proc_get(m, (int)ev.pid);
		if (p && ev.time_ns >= p->cur.start_ns)
			p->exited = 1;
		break;
	case MAPEVENTS_REC_LOST:
		/* any image current now may miss a mapping: none of them is served */
		m->st.lost += ev.lost ? ev.lost : 1;
		all_incomplete(m);
		break;
	}
	return 0;
}

/* ---- the buffers */

struct mapevents *mapevents_new(const struct mapevents_opts *opts)
{
	struct mapevents *m = xcalloc(1, sizeof(*m));

	if (opts)
		m->opts = *opts;
	if (!m->opts.max_procs)
		m->opts.max_procs = MAPEVENTS_DEFAULT_PROCS;
	if (!m->opts.max_age_ns)
		m->opts.max_age_ns = MAPEVENTS_DEFAULT_AGE_NS;
	if (!m->opts.pages || (m->opts.pages & (m->opts.pages - 1)))
		m->opts.pages = MAPEVENTS_DEFAULT_PAGES;
	if (m->opts.pages < 2) /* room for the longest record and more (FULL_MARGIN) */
		m->opts.pages = 2;
	u64map_init(&m->procs);
	u64map_init(&m->follow);
	return m;
}

void mapevents_follow(struct mapevents *m, int pid, int children)
{
	if (pid <= 0)
		return;
	m->following = 1;
	u64map_put(&m->follow, (uint64_t)(uint32_t)pid + 1, children ? 2 : 1);
}

static void close_cpus(struct mapevents *m)
{
	int i;

	for (i = 0; i < m->ncpus; i++) {
		if (m->cpus[i].base)
			munmap(m->cpus[i].base, m->page + m->data_bytes);
		if (m->cpus[i].fd >= 0)
			close(m->cpus[i].fd);
	}
	xfree(m->cpus);
	m->cpus = NULL;
	m->ncpus = 0;
	m->st.cpus = 0;
}

int mapevents_open(struct mapevents *m, struct errmsg *err)
{
	struct perf_event_attr attr;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF), page = sysconf(_SC_PAGESIZE);
	int i, ret = 0, opened = 0, skipped = 0;

	if (m->cpus)
		return 0;
	if (ncpu <= 0)
		ncpu = 1;
	m->page = page > 0 ? (size_t)page : 4096;
	m->data_bytes = m->page * m->opts.pages;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	attr.mmap = 1;      /* executable mappings only (no mmap_data) */
	attr.mmap2 = 1;     /* with device and inode */
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.task = 1;      /* fork and exit */
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC; /* the sampler's bpf_ktime_get_ns() */
	attr.watermark = 1;
	attr.wakeup_watermark = (uint32_t)(m->data_bytes / 2);
	m->cpus = xcalloc((size_t)ncpu, sizeof(*m->cpus));
	m->ncpus = (int)ncpu;
	for (i = 0; i < m->ncpus; i++) {
		struct me_cpu *c = &m->cpus[i];
		void *base;

		c->fd = (int)syscall(SYS_perf_event_open, &attr, -1, i, -1, PERF_FLAG_FD_CLOEXEC);
		if (c->fd < 0) {
			if (errno == ENODEV || errno == EINVAL) { /* an offline CPU, or an old kernel */
				skipped = -errno;
				continue;
			}
			ret = -errno;
			break;
		}
		base = mmap(NULL, m->page + m->data_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
			    0);
		if (base == MAP_FAILED) {
			ret = -errno;
			close(c->fd);
			c->fd = -1;
			break;
		}
		c->base = base;
		opened++;
	}
	if (!ret && !opened)
		ret = skipped ? skipped : -ENODEV;
	if (ret) {
		close_cpus(m);
		return errmsg_set(err, ret, "cannot watch new mappings (perf_event_open): %s",
				  strerror(-ret));
	}
	m->st.cpus = opened;
	return 0;
}

/* Copy len bytes at ring offset off (wrapping) into dst. */
static void ring_copy(const uint8_t *data, size_t data_bytes, uint64_t off, void *dst, size_t len)
{
	size_t at = (size_t)(off & (data_bytes - 1)), first = data_bytes - at;

	if (first >= len) {
		memcpy(dst, data + at, len);
	} else {
		memcpy(dst, data + at, first);
		memcpy((uint8_t *)dst + first, data, len - first);
	}
}

static int pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Copy the records of one ring, from tail to head, into the drain's scratch. Returns 1 when the
 * ring was (nearly) full: records may have been refused. */
static int collect_ring(struct mapevents *m, const uint8_t *data, size_t data_bytes,
			uint64_t head, uint64_t tail, uint32_t *seq)
{
	int full = 0;

	if (head - tail > data_bytes) { /* cannot be: start over */
		m->st.bad++;
		return 1;
	}
	if (head != tail && head - tail + FULL_MARGIN > data_bytes)
		full = 1;
	while (tail != head) {
		struct perf_event_header h;
		struct pending *pd;

		if (head - tail < sizeof(h)) {
			m->st.bad++;
			break;
		}
		ring_copy(data, data_bytes, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			m->st.bad++;
			break;
		}
		ALLOC_GROW(m->scratch, m->scratch_len + h.size, m->scratch_cap);
		ring_copy(data, data_bytes, tail, m->scratch + m->scratch_len, h.size);
		ALLOC_GROW(m->pend, m->npend + 1, m->pend_cap);
		pd = &m->pend[m->npend++];
		pd->off = m->scratch_len;
		pd->len = h.size;
		pd->seq = (*seq)++;
		pd->time = h.size >= sizeof(h) + TRAILER ?
				   rd64(m->scratch + m->scratch_len + h.size - 8) : 0;
		m->scratch_len += h.size;
		tail += h.size;
	}
	return full;
}

/* Apply what collect_ring() gathered, merged by time. */
static int apply_pending(struct mapevents *m, int full)
{
	size_t i;
	int n = 0;

	if (m->npend > 1)
		qsort(m->pend, m->npend, sizeof(*m->pend), pending_cmp);
	for (i = 0; i < m->npend; i++)
		if (mapevents_apply(m, m->scratch + m->pend[i].off, m->pend[i].len) == 0)
			n++;
	m->npend = 0;
	m->scratch_len = 0;
	if (full) {
		m->st.full++;
		all_incomplete(m);
	}
	/* a burst should not keep its scratch memory for good */
	if (m->scratch_cap > (1u << 20)) {
		xfree(m->scratch);
		m->scratch = NULL;
		m->scratch_cap = 0;
		xfree(m->pend);
		m->pend = NULL;
		m->pend_cap = 0;
	}
	return n;
}

/* Why a drain: the records of every CPU are merged by time, so that a child's fork (written on
 * its parent's CPU) comes before its exec and mappings (written on its own). A buffer found
 * (nearly) full may have refused records: the kernel says so with a LOST record only when it
 * writes the next one, so the images current now are not trusted from here on. */
int mapevents_drain(struct mapevents *m)
{
	int cpu, full = 0;
	uint32_t seq = 0;

	m->npend = 0;
	m->scratch_len = 0;
	for (cpu = 0; cpu < m->ncpus; cpu++) {
		struct me_cpu *c = &m->cpus[cpu];
		struct perf_event_mmap_page *meta = c->base;
		uint64_t head;

		if (!c->base)
			continue;
		head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		full |= collect_ring(m, (const uint8_t *)c->base + m->page, m->data_bytes, head,
				     meta->data_tail, &seq);
		__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
	}
	return apply_pending(m, full);
}

int mapevents_feed_ring(struct mapevents *m, const uint8_t *data, size_t data_bytes,
			uint64_t head, uint64_t tail)
{
	uint32_t seq = 0;
	int full;

	if (!data_bytes || (data_bytes & (data_bytes - 1)))
		return -EINVAL;
	m->npend = 0;
	m->scratch_len = 0;
	full = collect_ring(m, data, data_bytes, head, tail, &seq);
	return apply_pending(m, full);
}

/* ---- answers */

/* Whether the file at e's path now is the mapped one. */
static int file_matches(const struct me_map *e)
{
	struct stat st;

	if (e->path[0] != '/' || strstr(e->path, " (deleted)"))
		return 0;
	if (e->bid_len) {
		struct elf_file *elf = NULL;
		const uint8_t *bid;
		size_t blen = 0;
		int fd = open(e->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), ok;

		if (fd < 0)
			return 0;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return 0;
		}
		if (elf_open_fd(fd, e->path, &elf, NULL) < 0)
			return 0;
		bid = elf_build_id_raw(elf, &blen);
		ok = bid && blen == e->bid_len && !memcmp(bid, e->bid, blen);
		elf_close(elf);
		return ok;
	}
	if (!e->ino || stat(e->path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_ino == e->ino && major(st.st_dev) == e->maj &&
	       minor(st.st_dev) == e->min;
}

int mapevents_maps(struct mapevents *m, int pid, uint64_t when_ns, struct procmaps *out,
		   char *exe, size_t exelen, uint64_t *as_of_ns)
{
	const struct me_image *im;
	struct me_proc *p;
	char *text = NULL;
	size_t len = 0, cap = 0, i;
	int rc;

	memset(out, 0, sizeof(*out));
	if (exelen)
		exe[0] = '\0';
	if (m->ncpus)
		mapevents_drain(m);
	p = proc_get(m, pid);
	if (!p)
		return -ENOENT;
	im = &p->cur;
	*as_of_ns = now_ns();
	if (when_ns && when_ns < p->cur.start_ns) {
		if (!m->opts.previous_images) {
			m->st.stale++;
			return -ESTALE;
		}
		im = &p->prev;
		*as_of_ns = p->cur.start_ns - 1;
		if (!im->start_ns || when_ns < im->start_ns)
			return -ENOENT;
	}
	if (!im->complete || !im->n)
		return -ENOENT;
	for (i = 0; i < im->n; i++) {
		const struct me_map *e = &im->v[i];
		int keep = e->path[0] == '[' || (e->path[0] == '/' && file_matches(e));
		size_t need = strlen(e->path) + 128;

		if (e->path[0] == '/' && !keep)
			m->st.refused++;
		ALLOC_GROW(text, len + need, cap);
		len += (size_t)snprintf(text + len, cap - len,
					"%llx-%llx %c%c%cp %08llx %02x:%02x %llu %s\n",
					(unsigned long long)e->start, (unsigned long long)e->end,
					e->prot & PROT_READ ? 'r' : '-',
					e->prot & PROT_WRITE ? 'w' : '-', 'x',
					(unsigned long long)(keep ? e->pgoff : 0), keep ? e->maj : 0,
					keep ? e->min : 0, (unsigned long long)(keep ? e->ino : 0),
					keep ? e->path : "");
	}
	rc = procmaps_parse(text, len, out, NULL);
	xfree(text);
	if (rc)
		return rc;
	/* a build id said who the file is: its device and inode are what the path gives now */
	for (i = 0; i < out->n && i < im->n; i++) {
		struct procmaps_entry *pe = &out->v[i];
		struct stat st;

		if (pe->kind == PROCMAPS_FILE && !pe->inode && stat(pe->path, &st) == 0) {
			pe->inode = (uint64_t)st.st_ino;
			pe->dev_major = major(st.st_dev);
			pe->dev_minor = minor(st.st_dev);
		}
	}
	if (exelen && im->exe)
		snprintf(exe, exelen, "%s", im->exe);
	m->st.served++;
	return 0;
}

void mapevents_collect(struct mapevents *m)
{
	uint64_t now = now_ns();
	struct me_proc *p, *next;

	if (m->ncpus)
		mapevents_drain(m);
	for (p = m->oldest; p; p = next) {
		next = p->newer;
		if (p->exited ? ++p->collects >= 2 : now - p->cur.start_ns > m->opts.max_age_ns)
			proc_drop(m, p);
	}
}

void mapevents_stats(const struct mapevents *m, struct mapevents_stats *out)
{
	*out = m->st;
}

void mapevents_free(struct mapevents *m)
{
	if (!m)
		return;
	while (m->oldest)
		proc_drop(m, m->oldest);
	close_cpus(m);
	u64map_release(&m->procs);
	u64map_release(&m->follow);
	xfree(m->scratch);
	xfree(m->pend);
	xfree(m);
}
