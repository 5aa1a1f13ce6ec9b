/* unwinder.c: processes, files and the table space of the native unwinder (see unwinder.h).
 *
 * Table space: two flat arrays shared with BPF (mmap()ed BPF_F_MMAPABLE array maps, or heap
 * arrays without BPF): unw_entries holds one slice per loaded file, unw_maps one slice per
 * process. Slices come from a first-fit range allocator; a process's slice is replaced (new
 * slice written, then the pid entry switched, then the old slice freed) so BPF never sees a
 * half-written list. Files not referenced by any process stay loaded until space runs out and
 * are evicted least recently used first. */
#include "agent/unwinder.h"
#include "agent/elf.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the step, compiled for user space: memory comes from a snapshot */

struct uenv {
	struct unwinder *u;
	const uint8_t *stack;
	uint64_t sp0;
	size_t len;
	uint64_t *words;
	size_t max;
	const uint64_t *deferred; /* a snapshot's deferred runtime words, consumed in order */
	size_t ndeferred, dpos;
};

static int uenv_read(struct unw_state *st, __u64 addr, __u64 *out);
static const struct unwind_mapping *uenv_mapping(struct unw_state *st, uint32_t idx);
static const struct unwind_entry *uenv_entry(struct unw_state *st, uint32_t idx);
static int uenv_emit(struct unw_state *st, uint64_t word);
static int uenv_runtime(struct unw_state *st, const struct unwind_mapping *m,
			const struct unwind_entry *e);

#define UNW_INLINE inline
#define UNW_READ_U64(st, addr, dstp) uenv_read((st), (addr), (dstp))
#define UNW_MAPPING(st, idx) uenv_mapping((st), (idx))
#define UNW_ENTRY(st, idx) uenv_entry((st), (idx))
#define UNW_EMIT(st, word) uenv_emit((st), (word))
#define UNW_RUNTIME_HOOK(st, m, e) uenv_runtime((st), (m), (e))
#include "bpf/unwind_step.h"

#define MAX_SEGS 8
#define MAX_INTERP 4
#define REFRESH_MIN_NS 2000000ull /* re-read a process's maps at most every 2 ms on misses */
#define MAX_CLAIM_PIECES 4096     /* mappings after splitting at claimed ranges */

struct ufile {
	char key[72];              /* "b:<build id>" or "h:<content hash>" */
	uint64_t keyhash;
	uint32_t id;
	int refs;                  /* mappings of published processes */
	uint64_t last_used;        /* tick of the last reference */
	int loaded;                /* has a slice in the entry space */
	int fp;                    /* no table: frame-pointer rule */
	int failed;                /* no table and no frame pointers */
	int interp;
	uint8_t kind;              /* enum unwinder_kind of the runtime in the file (interp) */
	uint32_t first, count;     /* slice in the entry space */
	uint64_t base;             /* table base (link-time) */
	struct { uint64_t vaddr, offset, filesz; } segs[MAX_SEGS];
	int nsegs;
	struct ufile *prev, *next; /* all files, most recently used first */
};

struct umap {
	uint64_t start, end, offset;
	struct ufile *f;           /* NULL: anonymous executable memory (FP rule) */
	uint32_t flags;
	uint8_t kind;              /* a runtime's claim, else the file's kind */
};

struct uproc {
	int pid;
	struct umap *maps;
	size_t n;
	uint32_t first, count;     /* slice in the mapping space */
	int published;
	uint64_t last_read_ns;
};

struct range {
	uint32_t start, len;
};

struct ralloc {
	struct range *free;
	size_t n, cap;
	uint32_t total, used;
};

struct unwinder {
	struct unwinder_opts opts;
	struct unwind_entry *entries; /* the entry space (mmap or heap) */
	struct unwind_mapping *maps;  /* the mapping space */
	uint32_t nentries, nmaps;
	size_t entries_bytes, maps_bytes;
	int mmapped;
	int pids_fd, stats_fd;
	struct ralloc ea, ma;
	struct u64map files;     /* keyhash -> struct ufile * */
	struct u64map devino;    /* hash(dev, ino, mtime, size) -> keyhash */
	struct u64map procs;     /* pid + 1 -> struct uproc * */
	struct ufile *lru_head, *lru_tail;
	uint32_t next_id;
	uint64_t tick;
	struct unwinder_stats st;
	uint8_t *fixbuf;         /* rewritten sample record */
	size_t fixcap;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- range allocator */
static void ralloc_init(struct ralloc *a, uint32_t total)
{
	memset(a, 0, sizeof(*a));
	a->total = total;
	ALLOC_GROW(a->free, 1, a->cap);
	a->free[0].start = 0;
	a->free[0].len = total;
	a->n = total ? 1 : 0;
}

static int ralloc_alloc(struct ralloc *a, uint32_t len, uint32_t *start)
{
	size_t i;

	if (!len)
		len = 1;
	for (i = 0; i < a->n; i++) {
		if (a->free[i].len >= len) {
			*start = a->free[i].start;
			a->free[i].start += len;
			a->free[i].len -= len;
			if (!a->free[i].len) {
				memmove(&a->free[i], &a->free[i + 1], (a->n - i - 1) * sizeof(*a->free));
				a->n--;
			}
			a->used += len;
			return 0;
		}
	}
	return -ENOSPC;
}

static void ralloc_free(struct ralloc *a, uint32_t start, uint32_t len)
{
	size_t i = 0;

	if (!len)
		len = 1;
	while (i < a->n && a->free[i].start < start)
		i++;
	ALLOC_GROW(a->free, a->n + 1, a->cap);
	memmove(&a->free[i + 1], &a->free[i], (a->n - i) * sizeof(*a->free));
	a->free[i].start = start;
	a->free[i].len = len;
	a->n++;
	a->used -= len;
	/* coalesce with the next, then with the previous */
	if (i + 1 < a->n && a->free[i].start + a->free[i].len == a->free[i + 1].start) {
		a->free[i].len += a->free[i + 1].len;
		memmove(&a->free[i + 1], &a->free[i + 2], (a->n - i - 2) * sizeof(*a->free));
		a->n--;
	}
	if (i > 0 && a->free[i - 1].start + a->free[i - 1].len == a->free[i].start) {
		a->free[i - 1].len += a->free[i].len;
		memmove(&a->free[i], &a->free[i + 1], (a->n - i - 1) * sizeof(*a->free));
		a->n--;
	}
}

/* ---- files */
static void lru_unlink(struct unwinder *u, struct ufile *f)
{
	if (f->prev)
		f->prev->next = f->next;
	else
		u->lru_head = f->next;
	if (f->next)
		f->next->prev = f->prev;
	else
		u->lru_tail = f->prev;
	f->prev = f->next = NULL;
}

static void lru_touch(struct unwinder *u, struct ufile *f)
{
	if (u->lru_head == f)
		return;
	if (f->prev || f->next || u->lru_tail == f)
		lru_unlink(u, f);
	f->next = u->lru_head;
	if (u->lru_head)
		u->lru_head->prev = f;
	u->lru_head = f;
	if (!u->lru_tail)
		u->lru_tail = f;
	f->last_used = ++u->tick;
}

static void file_drop(struct unwinder *u, struct ufile *f)
{
	if (f->loaded) {
		ralloc_free(&u->ea, f->first, f->count);
		u->st.files_loaded--;
	}
	u64map_remove(&u->files, f->keyhash);
	lru_unlink(u, f);
	u->st.files--;
	xfree(f);
}

/* Free table space by dropping unreferenced files, least recently used first, until a slice of
 * len entries fits. Returns 0 with *start, or -ENOSPC. */
static int entries_alloc(struct unwinder *u, uint32_t len, uint32_t *start)
{
	struct ufile *f, *prev;

	if (ralloc_alloc(&u->ea, len, start) == 0)
		return 0;
	for (f = u->lru_tail; f; f = prev) {
		prev = f->prev;
		if (f->refs || !f->loaded)
			continue;
		file_drop(u, f);
		u->st.evictions++;
		if (ralloc_alloc(&u->ea, len, start) == 0)
			return 0;
	}
	u->st.cap_hits++;
	return -ENOSPC;
}

static int file_identity(struct elf_file *e, char *key, size_t size)
{
	const char *bid = elf_build_id(e);
	uint64_t id;

	if (bid && *bid) {
		snprintf(key, size, "b:%.64s", bid);
		return 0;
	}
	if (elf_file_id(e, &id))
		return -EIO;
	snprintf(key, size, "h:%016llx", (unsigned long long)id);
	return 0;
}

/* Build the table of an opened ELF file and load it into the entry space. */
static struct ufile *file_load(struct unwinder *u, struct elf_file *e, const char *path,
			       const char *key)
{
	struct ufile *f = xcalloc(1, sizeof(*f));
	struct unwind_table t;
	struct unwind_range interp[MAX_INTERP];
	struct elf_file *dbg = NULL;
	struct errmsg err;
	const struct elf_segment *segs;
	size_t nseg, i;
	int ninterp = 0, rc;
	uint64_t t0 = now_ns();

	snprintf(f->key, sizeof(f->key), "%s", key);
	f->keyhash = hash_bytes(key, strlen(key), 0x5eed) | 1;
	f->id = ++u->next_id;
	segs = elf_segments(e, &nseg);
	for (i = 0; i < nseg && f->nsegs < MAX_SEGS; i++) {
		if (!(segs[i].flags & PF_X))
			continue;
		f->segs[f->nsegs].vaddr = segs[i].vaddr;
		f->segs[f->nsegs].offset = segs[i].offset;
		f->segs[f->nsegs].filesz = segs[i].filesz;
		f->nsegs++;
	}
	if (u->opts.interp)
		ninterp = u->opts.interp(u->opts.interp_ctx, e, path, interp, MAX_INTERP, &f->kind);
	if (ninterp < 0 || ninterp > MAX_INTERP)
		ninterp = 0;
	if (f->kind >= UNWINDER_KINDS)
		f->kind = UNWINDER_NATIVE;
	if (elf_section_info(e, ".eh_frame", &(struct elf_section_info){ 0 }) &&
	    elf_section_info(e, ".debug_frame", &(struct elf_section_info){ 0 }))
		elf_open_debug_file(e, path, NULL, u->opts.debug_dir, &dbg);
	rc = unwind_table_build(e, dbg, interp, (size_t)ninterp, &t, &err);
	elf_close(dbg);
	u->st.table_builds++;
	if (rc) {
		f->failed = 1;
		u->st.table_errors++;
	} else if (t.stats.sources == UT_SRC_FP) {
		f->fp = 1; /* no table needed: the FP rule applies to the whole file */
	} else if (t.count > UINT32_MAX || entries_alloc(u, (uint32_t)t.count, &f->first)) {
		f->failed = 1;
	} else {
		memcpy(&u->entries[f->first], t.entries, t.count * sizeof(*t.entries));
		f->count = (uint32_t)t.count;
		f->base = t.base;
		f->interp = t.interp;
		f->loaded = 1;
		u->st.files_loaded++;
	}
	unwind_table_release(&t);
	u->st.table_build_ns += now_ns() - t0;
	u64map_put(&u->files, f->keyhash, (uint64_t)(uintptr_t)f);
	u->st.files++;
	lru_touch(u, f);
	return f;
}

static struct ufile *file_find(struct unwinder *u, uint64_t keyhash)
{
	uint64_t *v = u64map_get(&u->files, keyhash);

	return v ? (struct ufile *)(uintptr_t)*v : NULL;
}

/* The file of a mapping: by (dev, inode, mtime, size) when seen before, else opened. */
static struct ufile *file_of_mapping(struct unwinder *u, int pid, const struct procmaps_entry *m)
{
	char key[72];
	struct elf_file *e = NULL;
	struct ufile *f = NULL;
	struct stat sb;
	uint64_t dk, *v;
	int fd;

	fd = procmaps_open(pid, m, NULL);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return NULL;
	}
	dk = hash_combine(hash_combine(hash_u64(sb.st_dev), sb.st_ino),
			  hash_combine((uint64_t)sb.st_mtim.tv_sec * 1000000000ull +
				       (uint64_t)sb.st_mtim.tv_nsec, (uint64_t)sb.st_size)) | 1;
	v = u64map_get(&u->devino, dk);
	if (v && (f = file_find(u, *v))) {
		close(fd);
		return f;
	}
	if (elf_open_fd(fd, m->path, &e, NULL))
		return NULL; /* fd closed by elf_open_fd */
	if (file_identity(e, key, sizeof(key)) == 0) {
		f = file_find(u, hash_bytes(key, strlen(key), 0x5eed) | 1);
		if (f && strcmp(f->key, key))
			f = NULL;
		if (!f)
			f = file_load(u, e, m->path, key);
		u64map_put(&u->devino, dk, f->keyhash);
	}
	elf_close(e);
	return f;
}

/* The vDSO: read from the process's memory (it is the same for every process). */
static struct ufile *file_of_vdso(struct unwinder *u, int pid, const struct procmaps_entry *m)
{
	char path[64], key[72];
	struct elf_file *e = NULL;
	struct ufile *f = NULL;
	size_t len = m->end - m->start;
	uint8_t *buf;
	int fd;

	if (len == 0 || len > (1u << 20))
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = xmalloc(len);
	if (pread(fd, buf, len, (off_t)m->start) == (ssize_t)len &&
	    elf_open_mem(buf, len, &e, NULL) == 0 && file_identity(e, key, sizeof(key)) == 0) {
		f = file_find(u, hash_bytes(key, strlen(key), 0x5eed) | 1);
		if (!f)
			f = file_load(u, e, "[vdso]", key);
	}
	elf_close(e);
	xfree(buf);
	close(fd);
	return f;
}

/* The link-time address of a mapping's start (for its bias), from the file's executable
 * segments; mappings of other parts of the file return -1. */
static int map_bias(const struct ufile *f, const struct procmaps_entry *m, uint64_t *bias)
{
	int i;

	for (i = 0; i < f->nsegs; i++) {
		uint64_t off = f->segs[i].offset, pstart = off & ~(uint64_t)0xfff;

		if (m->offset >= pstart && m->offset < off + (f->segs[i].filesz ? f->segs[i].filesz : 1)) {
			uint64_t vaddr = f->segs[i].vaddr - (off - m->offset);

			*bias = m->start - vaddr;
			return 0;
		}
	}
	if (f->nsegs == 0) {
		*bias = m->start - m->offset;
		return 0;
	}
	return -1;
}

/* ---- processes */
static struct uproc *proc_get(struct unwinder *u, int pid)
{
	uint64_t *v = u64map_get(&u->procs, (uint64_t)pid + 1);

	return v ? (struct uproc *)(uintptr_t)*v : NULL;
}

static void proc_release_maps(struct unwinder *u, struct umap *maps, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (maps[i].f)
			maps[i].f->refs--;
	xfree(maps);
}

/* Write p's mappings into a new slice, switch the pid entry to it, free the old slice. */
static int proc_publish(struct unwinder *u, struct uproc *p)
{
	uint32_t first = 0, count = (uint32_t)p->n, i;
	struct unwind_pid up;

	if (p->n > UNW_MAX_PID_MAPPINGS)
		count = UNW_MAX_PID_MAPPINGS;
	if (ralloc_alloc(&u->ma, count, &first)) {
		u->st.cap_hits++;
		return -ENOSPC;
	}
	for (i = 0; i < count; i++) {
		const struct umap *m = &p->maps[i];
		struct unwind_mapping *bm = &u->maps[first + i];

		memset(bm, 0, sizeof(*bm));
		bm->start = m->start;
		bm->end = m->end;
		if (!m->f || m->f->fp) {
			bm->flags = UNW_MAP_FP;
		} else if (!m->f->loaded) {
			bm->flags = UNW_MAP_NO_TABLE;
		} else {
			bm->bias = m->offset + m->f->base; /* offset holds the load bias here */
			bm->table_first = m->f->first;
			bm->table_count = m->f->count;
			bm->flags = m->f->interp ? UNW_MAP_INTERP : 0;
		}
		bm->flags |= m->flags;
		bm->kind = m->kind;
		bm->file_id = m->f ? m->f->id : 0;
	}
	up.first = first;
	up.count = count;
	if (u->pids_fd >= 0 && bpf_map_update_elem(u->pids_fd, &p->pid, &up, BPF_ANY)) {
		int e = -errno;

		ralloc_free(&u->ma, first, count);
		u->st.cap_hits++;
		return e;
	}
	if (p->published)
		ralloc_free(&u->ma, p->first, p->count);
	else
		u->st.pids++;
	p->first = first;
	p->count = count;
	p->published = 1;
	return 0;
}

static int umap_cmp(const void *a, const void *b)
{
	const struct umap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Append m to maps, split at the claimed ranges: the parts inside a claim get its kind and
 * UNW_MAP_RUNTIME. */
static void add_split(struct umap **maps, size_t *n, size_t *cap, const struct umap *m,
		      const struct unwinder_claim *claims, size_t nclaims)
{
	uint64_t cur = m->start;
	size_t i;

	for (i = 0; i < nclaims && *n < MAX_CLAIM_PIECES; i++) {
		const struct unwinder_claim *c = &claims[i];
		struct umap piece = *m;

		if (c->end <= cur || c->start >= m->end || !c->kind || c->kind >= UNWINDER_KINDS)
			continue;
		if (c->start > cur) {
			piece.start = cur;
			piece.end = c->start;
			ALLOC_GROW(*maps, *n + 1, *cap);
			(*maps)[(*n)++] = piece;
			cur = c->start;
		}
		piece = *m;
		piece.start = cur;
		piece.end = c->end < m->end ? c->end : m->end;
		piece.kind = c->kind;
		piece.flags |= UNW_MAP_RUNTIME;
		ALLOC_GROW(*maps, *n + 1, *cap);
		(*maps)[(*n)++] = piece;
		cur = piece.end;
	}
	if (cur < m->end) {
		struct umap piece = *m;

		piece.start = cur;
		ALLOC_GROW(*maps, *n + 1, *cap);
		(*maps)[(*n)++] = piece;
	}
}

int unwinder_set_maps(struct unwinder *u, int pid, const struct procmaps *pm,
		      const struct unwinder_claim *claims, size_t nclaims)
{
	struct uproc *p;
	struct umap *maps = NULL;
	size_t n = 0, cap = 0, i;

	if (pid <= 0)
		return -EINVAL;
	for (i = 0; i < pm->n; i++) {
		const struct procmaps_entry *e = &pm->v[i];
		struct umap m;
		uint64_t bias = 0;

		if (!(e->perms & PROCMAPS_X))
			continue;
		memset(&m, 0, sizeof(m));
		m.start = e->start;
		m.end = e->end;
		if (e->kind == PROCMAPS_FILE) {
			m.f = file_of_mapping(u, pid, e);
			if (!m.f || m.f->failed || (!m.f->fp && map_bias(m.f, e, &bias)))
				m.flags = UNW_MAP_NO_TABLE;
		} else if (e->kind == PROCMAPS_VDSO) {
			m.f = file_of_vdso(u, pid, e);
			m.flags = UNW_MAP_VDSO;
			if (!m.f || m.f->failed || map_bias(m.f, e, &bias))
				m.flags |= UNW_MAP_NO_TABLE;
		} else if (e->kind == PROCMAPS_SPECIAL && !strcmp(e->path, "[vsyscall]")) {
			continue; /* legacy page above user space */
		}
		/* anonymous executable memory (JIT code): frame-pointer rule, unless claimed */
		m.offset = bias;
		m.kind = m.f && m.f->interp ? m.f->kind : UNWINDER_NATIVE;
		if (nclaims) {
			size_t before = n;

			add_split(&maps, &n, &cap, &m, claims, nclaims);
			if (m.f)
				m.f->refs += (int)(n - before); /* one per piece */
		} else {
			ALLOC_GROW(maps, n + 1, cap);
			maps[n++] = m;
			if (m.f)
				m.f->refs++;
		}
		/* referenced at once: loading the next file may evict unreferenced ones */
		if (m.f)
			lru_touch(u, m.f);
	}
	if (n) /* an exiting process has no mappings left, and maps is NULL */
		qsort(maps, n, sizeof(*maps), umap_cmp);
	p = proc_get(u, pid);
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->pid = pid;
		u64map_put(&u->procs, (uint64_t)pid + 1, (uint64_t)(uintptr_t)p);
	} else {
		/* unchanged: keep the published slice */
		if (p->published && p->n == n) {
			for (i = 0; i < n; i++)
				if (p->maps[i].start != maps[i].start || p->maps[i].end != maps[i].end ||
				    p->maps[i].f != maps[i].f || p->maps[i].offset != maps[i].offset ||
				    p->maps[i].kind != maps[i].kind || p->maps[i].flags != maps[i].flags)
					break;
			if (i == n) {
				proc_release_maps(u, maps, n);
				p->last_read_ns = now_ns();
				return 0;
			}
		}
		proc_release_maps(u, p->maps, p->n);
	}
	p->maps = maps;
	p->n = n;
	p->last_read_ns = now_ns();
	return proc_publish(u, p);
}

int unwinder_track_pid(struct unwinder *u, int pid)
{
	struct procmaps pm;
	int rc;

	if (pid <= 0)
		return -EINVAL;
	rc = procmaps_read(pid, &pm, NULL);
	u->st.map_reads++;
	if (rc == 0)
		rc = unwinder_set_maps(u, pid, &pm, NULL, 0);
	procmaps_release(&pm);
	return rc;
}

int unwinder_lookup_mapping(struct unwinder *u, int pid, uint64_t addr,
			    struct unwind_mapping *out)
{
	struct uproc *p = proc_get(u, pid);
	uint32_t i;

	if (!p || !p->published)
		return -ENOENT;
	for (i = 0; i < p->count; i++) {
		const struct unwind_mapping *m = &u->maps[p->first + i];

		if (addr >= m->start && addr < m->end) {
			*out = *m;
			return 0;
		}
	}
	return -ENOENT;
}

void unwinder_forget_pid(struct unwinder *u, int pid)
{
	struct uproc *p = proc_get(u, pid);

	if (!p)
		return;
	if (u->pids_fd >= 0)
		bpf_map_delete_elem(u->pids_fd, &pid);
	if (p->published) {
		ralloc_free(&u->ma, p->first, p->count);
		u->st.pids--;
	}
	proc_release_maps(u, p->maps, p->n);
	u64map_remove(&u->procs, (uint64_t)pid + 1);
	xfree(p);
}

/* ---- user-space unwinding */
static int uenv_read(struct unw_state *st, __u64 addr, __u64 *out)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;

	if (addr < env->sp0 || addr - env->sp0 > env->len || env->len - (addr - env->sp0) < 8)
		return -1;
	memcpy(out, env->stack + (addr - env->sp0), 8);
	return 0;
}

static const struct unwind_mapping *uenv_mapping(struct unw_state *st, uint32_t idx)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;

	return idx < env->u->nmaps ? &env->u->maps[idx] : NULL;
}

static const struct unwind_entry *uenv_entry(struct unw_state *st, uint32_t idx)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;

	return idx < env->u->nentries ? &env->u->entries[idx] : NULL;
}

static int uenv_emit(struct unw_state *st, uint64_t word)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;

	if (st->n + 1 >= env->max) /* keep one word for a marker */
		return 1;
	env->words[st->n++] = word;
	return 0;
}

/* The runtime hook of the user-space step: replay the next deferred segment of the snapshot at
 * a frame in an interpreter range, as the BPF walker did at the same frame (RT_OP_FRAME). JIT
 * ranges have nothing deferred: the native rule applies. */
static int uenv_runtime(struct unw_state *st, const struct unwind_mapping *m,
			const struct unwind_entry *e)
{
	struct uenv *env = (struct uenv *)(uintptr_t)st->env;
	size_t end = env->dpos, i;
	uint64_t marker = FW_TAG_MARKER << FW_TAG_SHIFT | FW_MARKER_SEGMENT_END;
	int keep = 0;

	if (!e || env->dpos >= env->ndeferred)
		return UNW_HOOK_NATIVE;
	while (end < env->ndeferred && (env->deferred[end] & ~FW_SEGMENT_KEEP_NATIVE) != marker)
		end++;
	if (end < env->ndeferred)
		keep = !!(env->deferred[end] & FW_SEGMENT_KEEP_NATIVE);
	if (end > env->dpos && st->n > 0) {
		if (!keep)
			st->n--; /* the segment replaces the native frame of the eval loop */
		for (i = env->dpos; i < end; i++)
			if (uenv_emit(st, env->deferred[i]))
				break;
		env->u->st.deferred_segments++;
	}
	env->dpos = end < env->ndeferred ? end + 1 : end;
	return UNW_HOOK_NATIVE;
}

static int pc_known(const struct uproc *p, uint64_t pc)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (pc >= p->maps[i].start && pc < p->maps[i].end)
			return 1;
	return 0;
}

size_t unwinder_unwind(struct unwinder *u, int pid, uint64_t pc, uint64_t sp, uint64_t bp,
		       const void *stack, size_t len, uint64_t *words, size_t max, uint32_t *result)
{
	return unwinder_unwind_deferred(u, pid, pc, sp, bp, stack, len, NULL, 0, words, max,
					result);
}

size_t unwinder_unwind_deferred(struct unwinder *u, int pid, uint64_t pc, uint64_t sp,
				uint64_t bp, const void *stack, size_t len,
				const uint64_t *deferred, size_t ndeferred, uint64_t *words,
				size_t max, uint32_t *result)
{
	struct uproc *p = proc_get(u, pid);
	struct unw_state st;
	struct uenv env;
	uint32_t i;

	if (max < 2) {
		if (result)
			*result = USTAT_TRUNCATED;
		return 0;
	}
	memset(&st, 0, sizeof(st));
	env.u = u;
	env.stack = stack;
	env.sp0 = sp;
	env.len = len;
	env.words = words;
	env.max = max;
	env.deferred = deferred;
	env.ndeferred = deferred ? ndeferred : 0;
	env.dpos = 0;
	st.env = (uint64_t)(uintptr_t)&env;
	st.pc = pc;
	st.sp = sp;
	st.bp = bp;
	if (p && p->published) {
		st.map_first = p->first;
		st.map_count = p->count;
	}
	for (i = 0; i < MAX_USER_WORDS; i++)
		if (unwind_step(&st))
			break;
	if (i == MAX_USER_WORDS)
		st.result = USTAT_TRUNCATED;
	if (st.result == USTAT_TRUNCATED)
		words[st.n++] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_TRUNCATED;
	else if (st.result != USTAT_COMPLETE)
		words[st.n++] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_UNWIND_ERROR;
	if (result)
		*result = st.result;
	return st.n;
}

/* Re-read a process's maps unless done very recently (through opts.refresh, the registry,
 * when there is one). Returns 1 when read. */
static int maybe_refresh(struct unwinder *u, int pid, int *refreshed)
{
	struct uproc *p = proc_get(u, pid);

	if (*refreshed)
		return 0;
	*refreshed = 1;
	if (u->opts.refresh)
		return u->opts.refresh(u->opts.refresh_ctx, pid) == 1;
	if (p && now_ns() - p->last_read_ns < REFRESH_MIN_NS)
		return 0;
	return unwinder_track_pid(u, pid) == 0;
}

int unwinder_fix_sample(struct unwinder *u, const struct event_hdr *hdr, size_t size,
			const struct event_hdr **out, size_t *out_size)
{
	const struct sample_body *body;
	const uint64_t *user;
	uint64_t w0, pc, sp, bp, nbytes, ndeferred;
	struct uproc *p;
	size_t head, nwords, outsz;
	uint32_t result;
	struct sample_body *nb;
	int refreshed = 0;

	if (hdr->type != EVENT_SAMPLE)
		return 0;
	head = sizeof(*hdr) + sizeof(*body);
	if (size < head)
		return -EINVAL;
	body = (const void *)(hdr + 1);
	if (head + ((size_t)body->nkernel + body->nuser) * 8 > size)
		return -EINVAL;
	if (body->nuser < UNW_SNAPSHOT_WORDS)
		return 0;
	user = (const uint64_t *)((const uint8_t *)hdr + head) + body->nkernel;
	w0 = user[0];
	if ((w0 >> FW_TAG_SHIFT) != FW_TAG_SNAPSHOT)
		return 0;
	nbytes = UNW_SNAPSHOT_BYTES(w0);
	ndeferred = UNW_SNAPSHOT_DEFERRED(w0);
	if ((nbytes & 7) || nbytes / 8 + ndeferred > (uint64_t)(body->nuser - UNW_SNAPSHOT_WORDS))
		return -EINVAL;
	pc = user[1];
	sp = user[2];
	bp = user[3];
	/* A snapshot means BPF had no tables for this pc: learn the process's mappings now if we
	 * do not know them, and once more if the unwind runs into an unknown mapping. */
	p = proc_get(u, (int)hdr->pid);
	if (!p || !pc_known(p, pc))
		maybe_refresh(u, (int)hdr->pid, &refreshed);
	outsz = head + ((size_t)body->nkernel + MAX_USER_WORDS) * 8;
	if (u->fixcap < outsz) {
		xfree(u->fixbuf);
		u->fixbuf = xmalloc(outsz);
		u->fixcap = outsz;
	}
	memcpy(u->fixbuf, hdr, head + (size_t)body->nkernel * 8);
	for (;;) {
		nwords = unwinder_unwind_deferred(
			u, (int)hdr->pid, pc, sp, bp, &user[UNW_SNAPSHOT_WORDS], (size_t)nbytes,
			&user[UNW_SNAPSHOT_WORDS + nbytes / 8], (size_t)ndeferred,
			(uint64_t *)(u->fixbuf + head) + body->nkernel, MAX_USER_WORDS, &result);
		if ((result != USTAT_ERR_NO_MAPPING && result != USTAT_ERR_NO_TABLE) || refreshed ||
		    !maybe_refresh(u, (int)hdr->pid, &refreshed))
			break;
	}
	u->st.snapshots++;
	if (result == USTAT_COMPLETE)
		u->st.snapshots_complete++;
	nb = (struct sample_body *)(u->fixbuf + sizeof(*hdr));
	nb->nuser = (uint16_t)nwords;
	outsz = head + ((size_t)body->nkernel + nwords) * 8;
	((struct event_hdr *)u->fixbuf)->size = (uint16_t)(outsz > 0xffff ? 0xffff : outsz);
	*out = (const struct event_hdr *)u->fixbuf;
	*out_size = outsz;
	return 1;
}

/* ---- setup */
static void *map_mmap(struct bpf_map *m, size_t *bytes)
{
	size_t sz = (size_t)bpf_map__max_entries(m) * bpf_map__value_size(m);
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	sz = (sz + (size_t)page - 1) & ~((size_t)page - 1);
	p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	if (p == MAP_FAILED)
		return NULL;
	*bytes = sz;
	return p;
}

struct unwinder *unwinder_new(struct bpf_object *obj, const struct unwinder_opts *opts,
			      struct errmsg *err)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));

	if (opts)
		u->opts = *opts;
	u->pids_fd = u->stats_fd = -1;
	u64map_init(&u->files);
	u64map_init(&u->devino);
	u64map_init(&u->procs);
	if (obj) {
		struct bpf_map *me = bpf_object__find_map_by_name(obj, "unw_entries");
		struct bpf_map *mm = bpf_object__find_map_by_name(obj, "unw_maps");
		struct bpf_map *mp = bpf_object__find_map_by_name(obj, "unw_pids");
		struct bpf_map *ms = bpf_object__find_map_by_name(obj, "unw_stats");

		if (!me || !mm || !mp || !ms) {
			errmsg_set(err, -ENOENT, "the BPF object has no unwind maps");
			goto fail;
		}
		u->entries = map_mmap(me, &u->entries_bytes);
		u->maps = map_mmap(mm, &u->maps_bytes);
		if (!u->entries || !u->maps) {
			errmsg_set(err, -errno, "cannot map the unwind tables: %s", strerror(errno));
			goto fail;
		}
		u->mmapped = 1;
		u->nentries = bpf_map__max_entries(me);
		u->nmaps = bpf_map__max_entries(mm);
		u->pids_fd = bpf_map__fd(mp);
		u->stats_fd = bpf_map__fd(ms);
		u->st.kernel_bytes = u->entries_bytes + u->maps_bytes +
			(uint64_t)bpf_map__max_entries(mp) * (sizeof(struct unwind_pid) + 4 + 64);
	} else {
		u->nentries = u->opts.max_entries ? u->opts.max_entries : UNWINDER_DEFAULT_ENTRIES;
		u->nmaps = u->opts.max_mappings ? u->opts.max_mappings : UNWINDER_DEFAULT_MAPPINGS;
		u->entries = xcalloc(u->nentries, sizeof(*u->entries));
		u->maps = xcalloc(u->nmaps, sizeof(*u->maps));
	}
	ralloc_init(&u->ea, u->nentries);
	ralloc_init(&u->ma, u->nmaps);
	return u;
fail:
	unwinder_free(u);
	return NULL;
}

void unwinder_stats(struct unwinder *u, struct unwinder_stats *out)
{
	*out = u->st;
	out->entries_used = u->ea.used;
	out->entries_cap = u->nentries;
	out->mappings_used = u->ma.used;
	out->mappings_cap = u->nmaps;
	if (u->stats_fd >= 0) {
		int ncpu = libbpf_num_possible_cpus();
		uint32_t k;

		if (ncpu > 0) {
			uint64_t *vals = xcalloc((size_t)ncpu, sizeof(uint64_t));

			for (k = 0; k < USTAT__COUNT; k++) {
				int c;

				if (bpf_map_lookup_elem(u->stats_fd, &k, vals))
					continue;
				for (c = 0; c < ncpu; c++)
					out->bpf[k] += vals[c];
			}
			xfree(vals);
		}
	}
}

void unwinder_free(struct unwinder *u)
{
	size_t it = 0;
	uint64_t k, v;

	if (!u)
		return;
	while (u64map_next(&u->procs, &it, &k, &v)) {
		struct uproc *p = (struct uproc *)(uintptr_t)v;

		proc_release_maps(u, p->maps, p->n);
		xfree(p);
	}
	while (u->lru_head) {
		struct ufile *f = u->lru_head;

		lru_unlink(u, f);
		xfree(f);
	}
	if (u->mmapped) {
		if (u->entries)
			munmap(u->entries, u->entries_bytes);
		if (u->maps)
			munmap(u->maps, u->maps_bytes);
	} else {
		xfree(u->entries);
		xfree(u->maps);
	}
	u64map_release(&u->files);
	u64map_release(&u->devino);
	u64map_release(&u->procs);
	xfree(u->ea.free);
	xfree(u->ma.free);
	xfree(u->fixbuf);
	xfree(u);
}
