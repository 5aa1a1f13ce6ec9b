/* unwinder.c: processes, files and the table space of the native unwinder (see unwinder.h).
 *
 * Table space: two flat arrays shared with BPF (BPF_F_MMAPABLE array maps, or heap arrays
 * without BPF): unw_entries holds one slice per loaded file, unw_maps one slice per process.
 * The maps are not kept mapped into this process: mapping a BPF array puts every page of it
 * into our RSS at once (16 MiB of entries, whether used or not). A table's slice is mapped
 * while it is written; a process's mappings are written with one batched update; the
 * user-space unwinder reads entries one lookup at a time through a small direct-mapped cache
 * (struct space_slot, dropped where a slice is written) and mappings from a heap copy of
 * unw_maps, of which only the used part is ever touched. Slices come from a first-fit range allocator; a process's slice is replaced (new
 * slice written, then the pid entry switched, then the old slice freed) so BPF never sees a
 * half-written list. Files not referenced by any process stay loaded until space runs out and
 * are evicted least recently used first; they stay known (struct ufile) and their tables come
 * back from the table cache. With -a, unwinder_exec() learns which executables' processes get
 * sampled and publishes those at their exec. */
#include "agent/unwinder.h"
#include "agent/elf.h"
#include "agent/pcre_jit.h"
#include "agent/procmaps.h"
#include "agent/table_cache.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
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
	int pid;
	struct unw_state *st;     /* for the runtime step's emit() */
	const struct unwind_source *src; /* a replay case's memory and tables, or NULL */
	const struct unwind_tap *tap;    /* who watches what the unwind reads, or NULL */
};

static int uenv_read(struct unw_state *st, __u64 addr, __u64 *out);
static const struct unwind_mapping *uenv_mapping(struct unw_state *st, uint32_t idx);
static const struct unwind_entry *uenv_entry(struct unw_state *st, uint32_t idx);
static int uenv_emit(struct unw_state *st, uint64_t word);
static int uenv_runtime(struct unw_state *st, const struct unwind_mapping *m,
			const struct unwind_entry *e);
static const struct unwind_jit_links *uenv_jit_links(struct unw_state *st);
static int uenv_read_code(struct unw_state *st, __u64 addr, __u64 *out);
static void uenv_set_last(struct unw_state *st, uint64_t word);

#define UNW_INLINE inline
#define UNW_READ_U64(st, addr, dstp) uenv_read((st), (addr), (dstp))
#define UNW_MAPPING(st, idx) uenv_mapping((st), (idx))
#define UNW_ENTRY(st, idx) uenv_entry((st), (idx))
#define UNW_EMIT(st, word) uenv_emit((st), (word))
#define UNW_RUNTIME_HOOK(st, m, e) uenv_runtime((st), (m), (e))
#define UNW_JIT_LINKS(st) uenv_jit_links(st)
#define UNW_READ_CODE(st, addr, dst) uenv_read_code((st), (addr), (dst))
#define UNW_SET_LAST(st, word) uenv_set_last((st), (word))
#include "bpf/unwind_step.h"

#define MAX_SEGS 16
#define MAX_INTERP 4
#define REFRESH_MIN_NS 2000000ull /* re-read a process's maps at most every 2 ms on misses */
#define MAX_CLAIM_PIECES 4096     /* mappings after splitting at claimed ranges */

#define UFILE_KEY_MAX 72

struct ufile {
	char key[UFILE_KEY_MAX];   /* "b:<build id>" or "h:<content hash>" */
	uint64_t keyhash;
	int refs;                  /* mappings of published processes */
	uint64_t last_used;        /* tick of the last reference */
	int known;                 /* tkind, base, count, interp, kind known (built or cached) */
	int tkind;                 /* enum table_kind: entries, the FP rule, or no table */
	int built;                 /* built from the file by this process once already */
	int loaded;                /* has a slice in the entry space */
	int interp;
	uint8_t kind;              /* enum unwinder_kind of the runtime in the file (interp) */
	uint64_t seen_inode;       /* inode_key() of a mapping found to be this file ... */
	uint64_t seen_ns;          /* ... at this time (stat or open): trusted for a second */
	uint64_t pin;              /* == unwinder.track_seq: the process being read maps it, do
				      not evict it to make room for its other files */
	/* As an executable (-a): processes started from it lately, how many of them were
	 * sampled, and whether its exec wakes user space (unw_exec_hot) to publish its table. */
	uint32_t execs, sampled;
	int hot;
	struct unwind_exec_key exec_key;
	uint32_t first, count;     /* slice in the entry space; count: entries of the table (the
				      slice also holds its page index: UNW_INDEX_SLOTS(count)) */
	uint8_t index_shift;       /* its page index (unwind.h) */
	uint32_t index_count;
	uint64_t base;             /* table base (link-time) */
	struct elf_segment segs[MAX_SEGS]; /* the PT_LOADs (the executable ones only when
					      there are more), for elf_segments_bias() */
	int nsegs;
	int jit_known;             /* jit, njit: where a PCRE2 library calls its JIT code */
	int njit;
	struct pcre_jit_link jit[PCRE_JIT_LINKS_MAX];
	struct ufile *prev, *next; /* all files, most recently used first */
};

struct umap {
	uint64_t start, end, offset;
	struct ufile *f;           /* NULL: anonymous executable memory (FP rule) */
	uint32_t flags;
	uint8_t kind;              /* a runtime's claim, else the file's kind */
	int loaded;                /* f's table was loaded when this was read */
};

struct uproc {
	int pid;
	struct umap *maps;
	size_t n;
	uint32_t first, count;     /* slice in the mapping space */
	int published;
	int unseen;                /* published with UNW_PID_UNSEEN */
	int eager;                 /* published with UNW_PID_EAGER */
	uint64_t eager_until_ns;   /* the end of its eager time (0: not published yet) */
	uint64_t last_read_ns;
	struct unwind_jit_links jit; /* its PCRE2 JIT links (published in unw_jit if any) */
};

struct range {
	uint32_t start, len;
};

/* The EVENT_STACK_CHUNK records of one CPU, gathered until the snapshot they belong to. */
#define MAX_CHUNK_CPUS 8192
struct chunk_buf {
	uint32_t pid, tid, n;      /* n: chunks gathered, in order */
	uint64_t time_ns;
	uint64_t addr0;            /* stack address of data[0] */
	uint8_t *data;             /* up to UNW_SNAPSHOT_CHUNKS x STACK_CHUNK_BYTES */
	size_t len;
};

struct ralloc {
	struct range *free;
	size_t n, cap;
	uint32_t total, used;
};

/* Entries of the entry map read for user-space unwinding of snapshots: one lookup each,
 * kept in a direct-mapped cache (a table search reads the same index and entries again for
 * every frame in the same code). Cleared where the space is written. 4096 slots: 64 KiB.
 * (A batched lookup of the run of entries around a miss costs more than it saves: the kernel
 * copies each element on its own, and a search's probes land in different runs.) */
#define SPACE_CACHE_SLOTS 16384u
/* Entries handed out by uenv_entry() are copies in a ring of this many, so that a cache slot
 * replaced by a later read never leaves the step with a dangling pointer (the step holds at
 * most a few entries at once). */
#define SPACE_ENTRY_RING 16

struct space_slot {
	uint32_t idx1;     /* the entry's index + 1, 0: empty */
	struct unwind_entry e;
};

struct unwinder {
	struct unwinder_opts opts;
	struct unwind_entry *entries; /* the entry space: heap without BPF, else NULL (the map) */
	struct unwind_mapping *maps;  /* the mapping space (heap; with BPF a copy of the map) */
	uint32_t nentries, nmaps;
	size_t entries_bytes, maps_bytes;
	int mmapped;                  /* the spaces are BPF maps (entries_fd, maps_fd) */
	int entries_fd, maps_fd;
	long page;
	struct space_slot *ecache;    /* SPACE_CACHE_SLOTS (with BPF) */
	int no_batch;                 /* the kernel has no batched updates of array maps */
	struct unwind_entry ering[SPACE_ENTRY_RING];
	unsigned eringpos;
	int pids_fd, stats_fd, hot_fd, jit_fd;
	struct ralloc ea, ma;
	struct u64map files;     /* keyhash -> struct ufile * */
	struct u64map devino;    /* hash(dev, ino, mtime, size) -> keyhash */
	struct u64map inodes;    /* hash(dev, ino) as /proc/PID/maps has them -> keyhash: a hint
				    of the files a process maps, before they are opened */
	uint64_t track_seq;
	struct u64map procs;     /* pid + 1 -> struct uproc * */
	struct u64map execd;     /* pid + 1 -> keyhash of its executable, until it is sampled or
				    exits (-a: which executables' processes get sampled) */
	struct u64map eager;     /* pid + 1 -> 1 while published with UNW_PID_EAGER */
	struct ufile *lru_head, *lru_tail;
	struct ufile *vdso;      /* the vDSO's file, and the length of its mapping */
	size_t vdso_len;
	uint64_t tick;
	struct unwinder_stats st;
	struct table_cache *cache; /* tables per file identity (memory, maybe disk) */
	int cache_warned;        /* a failed disk write was noted (once) */
	int cache_note_said;
	char cache_note[300];    /* what went wrong with the cache, for the caller to say */
	struct chunk_buf *chunks; /* per CPU: stack chunks of the snapshot that comes next */
	size_t nchunk_cpus;
	uint8_t *fixbuf;         /* rewritten sample record */
	size_t fixcap;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* This thread's CPU time: what a table build costs, which a busy machine does not inflate. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

/* Give f's slice of the table space back. The file stays known: its table comes back from the
 * table cache, not from its ELF file, when a process maps it again. */
static void file_unload(struct unwinder *u, struct ufile *f)
{
	if (!f->loaded)
		return;
	ralloc_free(&u->ea, f->first, f->count + UNW_INDEX_SLOTS(f->count));
	f->loaded = 0;
	u->st.files_loaded--;
}


static void exec_set_hot(struct unwinder *u, struct ufile *f, int hot);

static void file_drop(struct unwinder *u, struct ufile *f)
{
	if (u->vdso == f)
		u->vdso = NULL;
	exec_set_hot(u, f, 0);
	file_unload(u, f);
	u64map_remove(&u->files, f->keyhash);
	lru_unlink(u, f);
	u->st.files--;
	xfree(f);
}

/* Free table space by unloading unreferenced files, least recently used first, until a slice
 * of len entries fits. Returns 0 with *start, or -ENOSPC. */
static int entries_alloc(struct unwinder *u, uint32_t len, uint32_t *start)
{
	struct ufile *f, *prev;

	if (ralloc_alloc(&u->ea, len, start) == 0)
		return 0;
	for (f = u->lru_tail; f; f = prev) {
		prev = f->prev;
		if (f->refs || !f->loaded || f->pin == u->track_seq)
			continue;
		file_unload(u, f);
		u->st.evictions++;
		if (ralloc_alloc(&u->ea, len, start) == 0)
			return 0;
	}
	u->st.cap_hits++;
	return -ENOSPC;
}

/* Known files no process maps and whose table is not loaded cost a little memory each: keep
 * at most UNWINDER_MAX_FILES of them, forgetting the least recently used. */
static void files_trim(struct unwinder *u)
{
	struct ufile *f, *prev;

	for (f = u->lru_tail; f && u->st.files > UNWINDER_MAX_FILES; f = prev) {
		prev = f->prev;
		if (!f->refs && !f->loaded)
			file_drop(u, f);
	}
	/* dev/inode shortcuts of forgotten or replaced files: cheap to learn again */
	if (u->devino.count > 4 * (size_t)UNWINDER_MAX_FILES) {
		u64map_release(&u->devino);
		u64map_init(&u->devino);
	}
	if (u->inodes.count > 4 * (size_t)UNWINDER_MAX_FILES) {
		u64map_release(&u->inodes);
		u64map_init(&u->inodes);
	}
}

/* ---- the table space seen from user space */

/* A writable view of [first, first + count) elements of size elem of a space: the heap array,
 * or a mapping of the pages of the BPF map that hold them. *cookie and *len are for space_unmap(). */
static void *space_map(struct unwinder *u, int fd, void *heap, size_t elem, uint32_t first,
		       uint32_t count, void **cookie, size_t *len)
{
	uint64_t lo, hi, off;
	void *p;

	*cookie = NULL;
	*len = 0;
	if (!u->mmapped)
		return (uint8_t *)heap + (size_t)first * elem;
	lo = (uint64_t)first * elem;
	hi = lo + (uint64_t)(count ? count : 1) * elem;
	off = lo & ~((uint64_t)u->page - 1);
	hi = (hi + (uint64_t)u->page - 1) & ~((uint64_t)u->page - 1);
	p = mmap(NULL, (size_t)(hi - off), PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED)
		return NULL;
	*cookie = p;
	*len = (size_t)(hi - off);
	return (uint8_t *)p + (lo - off);
}

static void space_unmap(void *cookie, size_t len)
{
	if (cookie)
		munmap(cookie, len);
}

/* Entry idx of the entry space for reading, or NULL. With BPF, a copy from a small ring, read
 * from the map (or its cache). */
static const struct unwind_entry *space_entry(struct unwinder *u, uint32_t idx)
{
	struct space_slot *sl;

	if (idx >= u->nentries)
		return NULL;
	if (!u->mmapped)
		return &u->entries[idx];
	sl = &u->ecache[idx % SPACE_CACHE_SLOTS];
	if (sl->idx1 != idx + 1) {
		sl->idx1 = 0;
		if (bpf_map_lookup_elem(u->entries_fd, &idx, &sl->e))
			return NULL;
		sl->idx1 = idx + 1;
		u->st.entry_reads++;
	}
	u->eringpos = (u->eringpos + 1) % SPACE_ENTRY_RING;
	u->ering[u->eringpos] = sl->e;
	return &u->ering[u->eringpos];
}

/* The entries [first, first + count) are written: what the cache held of them is stale. */
static void space_cache_drop(struct unwinder *u, uint32_t first, uint32_t count)
{
	uint32_t i;

	if (!u->ecache)
		return;
	if (count >= SPACE_CACHE_SLOTS) {
		/* only the slots holding entries of the range: a table loaded under churn must
		 * not empty the cache of every other table (the snapshots of the next new
		 * processes search the same files) */
		for (i = 0; i < SPACE_CACHE_SLOTS; i++) {
			struct space_slot *sl = &u->ecache[i];

			if (sl->idx1 && sl->idx1 - 1 >= first && sl->idx1 - 1 - first < count)
				sl->idx1 = 0;
		}
		return;
	}
	for (i = 0; i < count; i++) {
		struct space_slot *sl = &u->ecache[(first + i) % SPACE_CACHE_SLOTS];

		if (sl->idx1 == first + i + 1)
			sl->idx1 = 0;
	}
}

/* Copy the heap's mappings [first, first + count) to the mapping map: one batched update (a
 * process has tens of mappings; mapping the map's pages for them would cost an mmap, page
 * faults and an munmap with a TLB flush on every CPU), else one update each. 0 or -errno. */
static int maps_write(struct unwinder *u, uint32_t first, uint32_t count)
{
	uint32_t keys[256], n, i, done = 0;
	int rc = 0;

	while (done < count) {
		n = count - done < 256 ? count - done : 256;
		for (i = 0; i < n; i++)
			keys[i] = first + done + i;
		if (!u->no_batch) {
			uint32_t k = n;

			if (bpf_map_update_batch(u->maps_fd, keys, &u->maps[first + done], &k, NULL) == 0 &&
			    k == n) {
				done += n;
				continue;
			}
			if (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP)
				u->no_batch = 1; /* an older kernel: one by one from now on */
		}
		for (i = 0; i < n; i++) {
			if (bpf_map_update_elem(u->maps_fd, &keys[i], &u->maps[keys[i]], BPF_ANY)) {
				rc = -errno;
				return rc;
			}
		}
		done += n;
	}
	return 0;
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

/* The table cache's key: the file's identity and what else changed its build. */
static void cache_key(const struct unwinder *u, const struct ufile *f, char *out, size_t size)
{
	snprintf(out, size, "%s%s%s", f->key, u->opts.interp ? "+rt" : "",
		 u->opts.debug_dir ? "+dbg" : "");
}

/* Copy a table into a new slice of the table space (entries, or the cached record to decode
 * straight into it). 0, or -ENOSPC when it does not fit (the file is then published without
 * a table and loading is tried again the next time a process maps it). */
static int file_load_entries(struct unwinder *u, struct ufile *f, const struct unwind_entry *e,
			     const struct table_rec *rec, uint32_t count)
{
	uint32_t first, slots = count + UNW_INDEX_SLOTS(count);

	struct unwind_entry *dst;
	void *cookie;
	size_t len;

	if (entries_alloc(u, slots, &first))
		return -ENOSPC;
	space_cache_drop(u, first, slots);
	dst = space_map(u, u->entries_fd, u->entries, sizeof(*dst), first, slots, &cookie, &len);
	if (!dst) {
		ralloc_free(&u->ea, first, slots);
		return -errno;
	}
	if (e) {
		memcpy(dst, e, (size_t)count * sizeof(*e));
	} else if (table_rec_decode(rec, dst, count)) {
		space_unmap(cookie, len);
		ralloc_free(&u->ea, first, slots);
		return -EINVAL;
	}
	unwind_table_index(dst, count, &f->index_shift, &f->index_count);
	space_unmap(cookie, len);
	f->first = first;
	f->loaded = 1;
	u->st.files_loaded++;
	return 0;
}

/* Make f usable by BPF from what is known or cached: 0 when it is (table loaded, FP rule, or
 * no table to be had), -ENOENT when its table is in no cache and must be built from the file,
 * -ENOSPC when the table space is full. */
static int file_ensure(struct unwinder *u, struct ufile *f)
{
	char key[UFILE_KEY_MAX + 16];
	const struct table_rec *rec;
	struct table_info info;
	int rc;

	if (f->known && (f->tkind != TABLE_ENTRIES || f->loaded))
		return 0;
	if (!u->cache)
		return -ENOENT;
	cache_key(u, f, key, sizeof(key));
	rec = table_cache_get(u->cache, key, &info);
	if (!rec)
		return -ENOENT;
	if (f->known && (info.kind != f->tkind || info.base != f->base || info.count != f->count))
		return -ENOENT; /* not what we built before: do not mix */
	f->tkind = info.kind;
	f->base = info.base;
	f->count = info.count;
	f->interp = info.interp;
	f->kind = info.runtime < UNWINDER_KINDS ? info.runtime : UNWINDER_NATIVE;
	f->known = 1;
	if (info.kind != TABLE_ENTRIES)
		return 0;
	rc = file_load_entries(u, f, NULL, rec, info.count);
	if (rc == -EINVAL)
		return -ENOENT;
	if (!rc)
		u->st.tables_from_cache++;
	return rc;
}

/* A new known file (no table yet) for an opened ELF file. */
static struct ufile *file_new(struct unwinder *u, struct elf_file *e, const char *key)
{
	struct ufile *f = xcalloc(1, sizeof(*f));
	const struct elf_segment *segs;
	size_t nseg, i;

	snprintf(f->key, sizeof(f->key), "%s", key);
	f->keyhash = hash_bytes(key, strlen(key), 0x5eed) | 1;
	segs = elf_segments(e, &nseg);
	for (i = 0; i < nseg && f->nsegs < MAX_SEGS; i++) {
		if (!(segs[i].flags & PF_X) && nseg > MAX_SEGS)
			continue;
		f->segs[f->nsegs++] = segs[i];
	}
	u64map_put(&u->files, f->keyhash, (uint64_t)(uintptr_t)f);
	u->st.files++;
	lru_touch(u, f);
	files_trim(u);
	return f;
}

/* Build f's table from its opened ELF file, cache it and load it into the table space. */
static void file_build(struct unwinder *u, struct ufile *f, struct elf_file *e, const char *path)
{
	struct unwind_table t;
	struct unwind_range interp[MAX_INTERP];
	struct elf_file *dbg = NULL;
	struct table_info info;
	struct errmsg err;
	char key[UFILE_KEY_MAX + 16];
	int ninterp = 0, rc;
	uint64_t t0 = cpu_ns();

	f->kind = UNWINDER_NATIVE;
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
	if (f->built)
		u->st.table_rebuilds++;
	f->built = 1;
	memset(&info, 0, sizeof(info));
	if (rc) {
		info.kind = TABLE_NONE;
		u->st.table_errors++;
	} else if (t.stats.sources == UT_SRC_FP) {
		info.kind = TABLE_FP; /* no table needed: the FP rule applies to the whole file */
	} else if (t.count > UNW_MAX_FILE_ENTRIES) {
		info.kind = TABLE_NONE;
	} else {
		info.kind = TABLE_ENTRIES;
		info.count = (uint32_t)t.count;
		info.base = t.base;
		info.interp = (uint8_t)t.interp;
		info.sources = (uint8_t)t.stats.sources;
	}
	info.runtime = f->kind;
	file_unload(u, f);
	f->tkind = info.kind;
	f->base = info.base;
	f->count = info.count;
	f->interp = info.interp;
	f->known = 1;
	if (info.kind == TABLE_ENTRIES)
		file_load_entries(u, f, t.entries, NULL, info.count);
	if (u->cache) {
		struct table_cache_stats cs;

		cache_key(u, f, key, sizeof(key));
		table_cache_put(u->cache, key, &info, info.kind == TABLE_ENTRIES ? t.entries : NULL);
		table_cache_stats(u->cache, &cs);
		if (cs.disk_errors && !u->cache_warned) {
			u->cache_warned = 1;
			u->cache_note_said = 0;
			snprintf(u->cache_note, sizeof(u->cache_note),
				 "cannot write unwind tables to the cache directory (%llu failed "
				 "writes); they are kept in memory", (unsigned long long)cs.disk_errors);
		}
	}
	unwind_table_release(&t);
	u->st.table_build_ns += cpu_ns() - t0;
}

static struct ufile *file_find(struct unwinder *u, const char *key)
{
	uint64_t *v = u64map_get(&u->files, hash_bytes(key, strlen(key), 0x5eed) | 1);
	struct ufile *f = v ? (struct ufile *)(uintptr_t)*v : NULL;

	return f && !strcmp(f->key, key) ? f : NULL;
}

static uint64_t inode_hint(uint32_t major, uint32_t minor, uint64_t ino)
{
	return hash_combine(hash_combine(hash_u64(major), minor), ino) | 1;
}

static uint64_t inode_key(const struct procmaps_entry *m)
{
	return inode_hint(m->dev_major, m->dev_minor, m->inode);
}

static uint64_t devino_key(const struct stat *sb)
{
	return hash_combine(hash_combine(hash_u64(sb->st_dev), sb->st_ino),
			    hash_combine((uint64_t)sb->st_mtim.tv_sec * 1000000000ull +
					 (uint64_t)sb->st_mtim.tv_nsec, (uint64_t)sb->st_size)) | 1;
}

#define FILE_SEEN_NS 1000000000ull

/* The file a keyhash found in one of the maps names (v may be NULL), or NULL. */
static struct ufile *file_by_hash(struct unwinder *u, const uint64_t *v)
{
	uint64_t *fv = v ? u64map_get(&u->files, *v) : NULL;

	return fv ? (struct ufile *)(uintptr_t)*fv : NULL;
}

/* Mapping m was found to be file f (by stat or open): its device and inode lead to f. */
static void file_seen(struct unwinder *u, struct ufile *f, const struct procmaps_entry *m)
{
	u64map_put(&u->inodes, inode_key(m), f->keyhash);
	f->seen_inode = inode_key(m);
	f->seen_ns = now_ns();
}

/* The file behind a mapping, with its table loaded when one can be had: from the table space,
 * the table cache, or built from the file. */
static struct ufile *file_of_mapping(struct unwinder *u, int pid, const struct procmaps_entry *m)
{
	char key[UFILE_KEY_MAX];
	struct elf_file *e = NULL;
	struct ufile *f = NULL;
	struct stat sb;
	uint64_t dk;
	int fd, rc;

	/* A file whose device and inode (as the maps say them) were found to be this file less
	 * than a second ago: under churn the same libraries are mapped by process after process.
	 * (A file rewritten in place keeps its inode: its new content is seen a second later.) */
	f = file_by_hash(u, u64map_get(&u->inodes, inode_key(m)));
	if (f && f->seen_inode == inode_key(m) && now_ns() - f->seen_ns < FILE_SEEN_NS &&
	    file_ensure(u, f) != -ENOENT) {
		u->st.files_by_inode++;
		return f;
	}
	/* A file known already, reached by its path (a stat, no open): most mappings of a new
	 * process are such (libc, the dynamic loader, the executable run again). */
	f = procmaps_stat(m, &sb) == 0 ? file_by_hash(u, u64map_get(&u->devino, devino_key(&sb)))
				       : NULL;
	if (f && file_ensure(u, f) != -ENOENT) {
		file_seen(u, f, m);
		u->st.files_by_path++;
		return f;
	}
	fd = procmaps_open(pid, m, NULL);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return NULL;
	}
	dk = devino_key(&sb);
	f = file_by_hash(u, u64map_get(&u->devino, dk));
	if (f)
		file_seen(u, f, m);
	rc = f ? file_ensure(u, f) : -ENOENT;
	if (f && rc != -ENOENT) {
		close(fd);
		return f;
	}
	if (elf_open_fd(fd, m->path, &e, NULL))
		return f; /* fd closed by elf_open_fd */
	if (!f && file_identity(e, key, sizeof(key)) == 0) {
		f = file_find(u, key);
		if (!f)
			f = file_new(u, e, key);
		u64map_put(&u->devino, dk, f->keyhash);
		file_seen(u, f, m);
		rc = file_ensure(u, f);
	}
	if (f && rc == -ENOENT)
		file_build(u, f, e, m->path);
	elf_close(e);
	return f;
}

/* The vDSO: read from the process's memory (it is the same for every process). */
static struct ufile *file_of_vdso(struct unwinder *u, int pid, const struct procmaps_entry *m)
{
	char path[64], key[UFILE_KEY_MAX];
	struct elf_file *e = NULL;
	struct ufile *f = NULL;
	size_t len = m->end - m->start;
	uint8_t *buf;
	int fd;

	if (len == 0 || len > (1u << 20))
		return NULL;
	/* The kernel maps the same vDSO into every (64-bit) process: read it once. */
	if (u->vdso && u->vdso_len == len && file_ensure(u, u->vdso) != -ENOENT)
		return u->vdso;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = xmalloc(len);
	if (pread(fd, buf, len, (off_t)m->start) == (ssize_t)len &&
	    elf_open_mem(buf, len, &e, NULL) == 0 && file_identity(e, key, sizeof(key)) == 0) {
		f = file_find(u, key);
		if (!f)
			f = file_new(u, e, key);
		if (file_ensure(u, f) == -ENOENT)
			file_build(u, f, e, "[vdso]");
		u->vdso = f;
		u->vdso_len = len;
	}
	elf_close(e);
	xfree(buf);
	close(fd);
	return f;
}

/* The load bias of executable mapping m, a mapping of f (elf_segments_bias(); hint: the bias
 * of the mapping of the same file right before it, or NULL); -1 when the mapping is none of
 * the file's segments. */
static int map_bias(const struct ufile *f, const struct procmaps_entry *m, const uint64_t *hint,
		    uint64_t *bias)
{
	struct elf_mapping em;

	if (f->nsegs == 0) {
		*bias = m->start - m->offset;
		return 0;
	}
	procmaps_elf_mapping(m, &em);
	return elf_segments_bias(f->segs, (size_t)f->nsegs, &em, hint, bias) ? -1 : 0;
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

/* The flags of p's entry in unw_pids. */
static uint32_t proc_flags(const struct uproc *p)
{
	return (p->unseen ? UNW_PID_UNSEEN : 0) | (p->eager ? UNW_PID_EAGER : 0);
}

/* Write p's mappings into a new slice, switch the pid entry to it, free the old slice. */
static int proc_publish(struct unwinder *u, struct uproc *p)
{
	uint32_t first = 0, count = (uint32_t)p->n, i;
	struct unwind_pid up;
	uint64_t now = now_ns();
	int runtime = 0;

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
		if (!m->f || (m->f->known && m->f->tkind == TABLE_FP)) {
			bm->flags = UNW_MAP_FP | (m->f ? 0 : UNW_MAP_ANON);
		} else if (!m->f->loaded) {
			bm->flags = UNW_MAP_NO_TABLE;
		} else {
			bm->bias = m->offset + m->f->base; /* offset holds the load bias here */
			bm->table_first = m->f->first;
			bm->table_count = m->f->count;
			bm->index_shift = m->f->index_shift;
			bm->index_count = m->f->index_count;
			bm->flags = m->f->interp ? UNW_MAP_INTERP : 0;
		}
		bm->flags |= m->flags;
		bm->kind = m->kind;
		runtime |= m->kind != UNWINDER_NATIVE;
	}
	if (u->mmapped) { /* the heap copy is what user space reads; BPF reads the map */
		int e = maps_write(u, first, count);

		if (e) {
			ralloc_free(&u->ma, first, count);
			return e;
		}
	}
	/* Published at its exec, before any sample of it: the samples carry its lineage until
	 * user space sees one (exec_sampled()). */
	if (!p->published && u64map_get(&u->execd, (uint64_t)p->pid + 1))
		p->unseen = 1;
	/* A runtime's process, in its first UNWINDER_EAGER_NS from its first publication: the
	 * samples that run its code wake the reader (UNW_PID_EAGER), so that the runtime reads
	 * what they name before the process exits or frees it. */
	if (!p->eager_until_ns)
		p->eager_until_ns = now + UNWINDER_EAGER_NS;
	p->eager = runtime && now < p->eager_until_ns;
	if (p->eager)
		u64map_put(&u->eager, (uint64_t)p->pid + 1, 1);
	else
		u64map_remove(&u->eager, (uint64_t)p->pid + 1);
	memset(&up, 0, sizeof(up));
	up.first = first;
	up.count = count;
	up.flags = proc_flags(p);
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

/* ---- PCRE2's JIT code (pcre_jit.h, bpf/unwind.h: PCRE2 JIT LINKS) */

/* A PCRE2 library, by its file name: libpcre2-8.so.0, libpcre2-16.so.0, ... */
static int is_pcre2(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strncmp(base ? base + 1 : path, "libpcre2-", 9);
}

/* Add the links of f, mapped by e at load bias bias, to *jit (the process's): read from the
 * file once per file. */
static void jit_links_add(int pid, const struct procmaps_entry *e, struct ufile *f,
			  uint64_t bias, struct unwind_jit_links *jit)
{
	int i;

	if (!f->jit_known) {
		struct elf_file *ef = NULL;
		int fd, rc = 0;

		if (!is_pcre2(e->path))
			return;
		fd = procmaps_open(pid, e, NULL);
		if (fd < 0)
			return; /* not known yet: tried again at the next read */
		if (elf_open_fd(fd, e->path, &ef, NULL) == 0) {
			rc = pcre_jit_links(ef, f->jit, PCRE_JIT_LINKS_MAX);
			elf_close(ef);
		} else {
			rc = -EIO;
		}
		f->jit_known = 1;
		f->njit = rc > 0 ? rc : 0;
		log_debug("pcre2 jit links of '%s': %d", e->path, rc);
	}
	for (i = 0; i < f->njit; i++) {
		uint64_t ra = f->jit[i].ra + bias;
		uint32_t k;

		if (ra < e->start || ra >= e->end)
			continue; /* in another segment of the file */
		for (k = 0; k < jit->count && jit->link[k].ra != ra; k++)
			;
		if (k < jit->count || jit->count >= UNW_JIT_LINKS_MAX)
			continue;
		/* sorted by below, smallest first (insertion) */
		for (k = jit->count; k > 0 && jit->link[k - 1].below > f->jit[i].below; k--)
			jit->link[k] = jit->link[k - 1];
		jit->link[k].ra = ra;
		jit->link[k].below = f->jit[i].below;
		jit->count++;
	}
}

/* Make *jit p's links, in unw_jit too. */
static void jit_links_publish(struct unwinder *u, struct uproc *p,
			      const struct unwind_jit_links *jit)
{
	if (!memcmp(&p->jit, jit, sizeof(*jit)))
		return;
	if (u->jit_fd >= 0) {
		if (jit->count)
			bpf_map_update_elem(u->jit_fd, &p->pid, jit, BPF_ANY);
		else
			bpf_map_delete_elem(u->jit_fd, &p->pid);
	}
	p->jit = *jit;
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
	const struct procmaps_entry *prev = NULL;
	struct unwind_jit_links jit;
	uint64_t prev_bias = 0;
	size_t n = 0, cap = 0, i;

	if (pid <= 0)
		return -EINVAL;
	/* Files this process maps must not be evicted to make room for each other: pin those
	 * known by their dev/inode before any table is loaded. */
	u->track_seq++;
	for (i = 0; i < pm->n; i++) {
		struct ufile *f;

		if ((pm->v[i].perms & PROCMAPS_X) && pm->v[i].kind == PROCMAPS_FILE &&
		    (f = file_by_hash(u, u64map_get(&u->inodes, inode_key(&pm->v[i])))))
			f->pin = u->track_seq;
	}
	if (u->vdso)
		u->vdso->pin = u->track_seq;
	memset(&jit, 0, sizeof(jit));
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
			/* the same load's previous segment tells segments sharing a page apart */
			int same = prev && procmaps_same_file(prev, e);

			m.f = file_of_mapping(u, pid, e);
			if (!m.f || (m.f->known && m.f->tkind == TABLE_NONE) ||
			    (!(m.f->known && m.f->tkind == TABLE_FP) &&
			     map_bias(m.f, e, same ? &prev_bias : NULL, &bias)))
				m.flags = UNW_MAP_NO_TABLE;
			else if (m.f->known && m.f->tkind == TABLE_ENTRIES)
				jit_links_add(pid, e, m.f, bias, &jit);
			prev = e;
			prev_bias = bias;
		} else if (e->kind == PROCMAPS_VDSO) {
			m.f = file_of_vdso(u, pid, e);
			m.flags = UNW_MAP_VDSO;
			if (!m.f || (m.f->known && m.f->tkind == TABLE_NONE) || map_bias(m.f, e, NULL, &bias))
				m.flags |= UNW_MAP_NO_TABLE;
		} else if (e->kind == PROCMAPS_SPECIAL && !strcmp(e->path, "[vsyscall]")) {
			continue; /* legacy page above user space */
		}
		/* anonymous executable memory (JIT code): frame-pointer rule, unless claimed */
		m.offset = bias;
		m.kind = m.f && m.f->interp ? m.f->kind : UNWINDER_NATIVE;
		m.loaded = m.f ? m.f->loaded : 0;
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
	/* A claimed range that is not executable at this read (a JIT code cache whose pages a
	 * runtime makes writable while it compiles into them: opcache, V8's W^X) stays the
	 * runtime's: its code runs again the moment the protection flips back. */
	for (i = 0; i < nclaims && n < MAX_CLAIM_PIECES; i++) {
		const struct unwinder_claim *c = &claims[i];
		size_t k;

		if (!c->kind || c->kind >= UNWINDER_KINDS || c->end <= c->start)
			continue;
		for (k = 0; k < n && (maps[k].end <= c->start || maps[k].start >= c->end); k++)
			;
		if (k < n)
			continue; /* overlaps a mapping: split there already */
		ALLOC_GROW(maps, n + 1, cap);
		memset(&maps[n], 0, sizeof(maps[n]));
		maps[n].start = c->start;
		maps[n].end = c->end;
		maps[n].kind = c->kind;
		maps[n].flags = UNW_MAP_RUNTIME;
		n++;
	}
	/* anonymous memory of a process with PCRE2 may be its JIT code */
	for (i = 0; i < n && jit.count; i++)
		if (!maps[i].f && !(maps[i].flags & (UNW_MAP_RUNTIME | UNW_MAP_VDSO)))
			maps[i].flags |= UNW_MAP_JIT_LINKS;
	if (n) /* an exiting process has no mappings left, and maps is NULL */
		qsort(maps, n, sizeof(*maps), umap_cmp);
	p = proc_get(u, pid);
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->pid = pid;
		u64map_put(&u->procs, (uint64_t)pid + 1, (uint64_t)(uintptr_t)p);
	}
	/* the links first: BPF asks for them once a mapping has UNW_MAP_JIT_LINKS */
	jit_links_publish(u, p, &jit);
	/* unchanged: keep the published slice (not when a table was loaded since) */
	if (p->published && p->n == n) {
		for (i = 0; i < n; i++)
			if (p->maps[i].start != maps[i].start || p->maps[i].end != maps[i].end ||
			    p->maps[i].f != maps[i].f || p->maps[i].offset != maps[i].offset ||
			    p->maps[i].kind != maps[i].kind || p->maps[i].flags != maps[i].flags ||
			    p->maps[i].loaded != maps[i].loaded)
				break;
		if (i == n) {
			proc_release_maps(u, maps, n);
			p->last_read_ns = now_ns();
			return 0;
		}
	}
	proc_release_maps(u, p->maps, p->n); /* none for a new process */
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

/* ---- executables (-a): read at their exec those whose processes get sampled */

static void exec_set_hot(struct unwinder *u, struct ufile *f, int hot)
{
	uint8_t one = 1;

	if (f->hot == hot)
		return;
	if (hot && u->hot_fd >= 0 && bpf_map_update_elem(u->hot_fd, &f->exec_key, &one, BPF_ANY))
		return; /* the map is full: no early wakeup for this one */
	if (!hot && u->hot_fd >= 0)
		bpf_map_delete_elem(u->hot_fd, &f->exec_key);
	f->hot = hot;
	if (hot)
		u->st.exec_hot++;
	else
		u->st.exec_hot--;
}

/* Whether the processes of an executable are sampled often enough (a quarter of them) for
 * reading each at its exec to pay: /bin/true is not, cc1 is. */
static int exec_worth_it(const struct ufile *f)
{
	return f->known && f->tkind == TABLE_ENTRIES && f->execs && 4 * f->sampled >= f->execs;
}

/* A sample of pid: if it was started by an exec we counted, its executable's processes get
 * sampled (one hash lookup per sample). */
static void exec_sampled(struct unwinder *u, int pid)
{
	uint64_t *v = u64map_get(&u->execd, (uint64_t)pid + 1), *fv;
	struct uproc *p = proc_get(u, pid);
	struct ufile *f;

	if (!v)
		return;
	fv = u64map_get(&u->files, *v);
	u64map_remove(&u->execd, (uint64_t)pid + 1);
	if (p && p->published && p->unseen && u->pids_fd >= 0) {
		/* its first sample is here (with its lineage): later ones need none */
		struct unwind_pid up = { p->first, p->count, 0 };

		up.flags = proc_flags(p) & ~UNW_PID_UNSEEN;
		if (bpf_map_update_elem(u->pids_fd, &p->pid, &up, BPF_EXIST) == 0)
			p->unseen = 0;
	}
	if (!fv)
		return;
	f = (struct ufile *)(uintptr_t)*fv;
	f->sampled++;
	exec_set_hot(u, f, exec_worth_it(f));
}

int unwinder_exec(struct unwinder *u, const struct event_hdr *hdr, size_t size)
{
	const struct exec_body *b = (const void *)(hdr + 1);
	struct unwind_exec_key key;
	uint64_t *kh, *fv;
	struct ufile *f;
	int pid = (int)hdr->pid;

	u64map_remove(&u->execd, (uint64_t)pid + 1);
	if (size < sizeof(*hdr) + sizeof(*b))
		return 0;
	memset(&key, 0, sizeof(key));
	key.ino = b->ino;
	key.dev_major = b->dev_major;
	key.dev_minor = b->dev_minor;
	kh = u64map_get(&u->inodes, inode_hint(key.dev_major, key.dev_minor, key.ino));
	fv = kh ? u64map_get(&u->files, *kh) : NULL;
	if (!fv)
		return 0; /* an executable not seen yet: its first sample reads it */
	f = (struct ufile *)(uintptr_t)*fv;
	if (f->exec_key.ino != key.ino || f->exec_key.dev_major != key.dev_major ||
	    f->exec_key.dev_minor != key.dev_minor) {
		exec_set_hot(u, f, 0);
		f->exec_key = key;
	}
	if (++f->execs > 64) { /* recent processes weigh most */
		f->execs /= 2;
		f->sampled /= 2;
	}
	u64map_put(&u->execd, (uint64_t)pid + 1, f->keyhash);
	exec_set_hot(u, f, exec_worth_it(f));
	if (f->hot)
		u->st.exec_publishes++;
	return f->hot;
}

/* A sample of a process published with UNW_PID_EAGER (one hash lookup per sample while some
 * process is): past its eager time, its entry loses the flag. */
static void eager_sampled(struct unwinder *u, int pid, uint64_t time_ns)
{
	struct uproc *p;
	struct unwind_pid up;

	if (!u64map_get(&u->eager, (uint64_t)pid + 1))
		return;
	p = proc_get(u, pid);
	if (p && p->eager && time_ns < p->eager_until_ns)
		return;
	u64map_remove(&u->eager, (uint64_t)pid + 1);
	if (!p || !p->eager)
		return;
	p->eager = 0;
	memset(&up, 0, sizeof(up));
	up.first = p->first;
	up.count = p->count;
	up.flags = proc_flags(p);
	if (p->published && u->pids_fd >= 0)
		bpf_map_update_elem(u->pids_fd, &p->pid, &up, BPF_EXIST);
}

void unwinder_forget_pid(struct unwinder *u, int pid)
{
	struct uproc *p = proc_get(u, pid);

	u64map_remove(&u->execd, (uint64_t)pid + 1);
	u64map_remove(&u->eager, (uint64_t)pid + 1);
	if (!p)
		return;
	if (u->pids_fd >= 0)
		bpf_map_delete_elem(u->pids_fd, &pid);
	if (u->jit_fd >= 0 && p->jit.count)
		bpf_map_delete_elem(u->jit_fd, &pid);
	if (p->published) {
		ralloc_free(&u->ma, p->first, p->count);
		u->st.pids--;
	}
	proc_release_maps(u, p->maps, p->n);
	u64map_remove(&u->procs, (uint64_t)pid + 1);
	xfree(p);
}

static void chunk_reset(struct chunk_buf *b)
{
	xfree(b->data);
	b->data = NULL;
	b->len = 0;
	b->n = 0;
}

/* Keep a stack chunk for the snapshot that follows it from the same CPU (bpf/unwind.h). A
 * chunk out of order or of another sample drops what was gathered. */
static void chunk_note(struct unwinder *u, const struct event_hdr *hdr, size_t size)
{
	const struct stack_chunk *c = (const struct stack_chunk *)hdr;
	size_t head = offsetof(struct stack_chunk, data);
	struct chunk_buf *b;

	if (size < head || hdr->cpu >= MAX_CHUNK_CPUS || c->len > STACK_CHUNK_BYTES ||
	    head + c->len > size || c->index >= UNW_SNAPSHOT_CHUNKS)
		return;
	if (hdr->cpu >= u->nchunk_cpus) {
		size_t n = (size_t)hdr->cpu + 1;

		u->chunks = xrealloc(u->chunks, n * sizeof(*u->chunks));
		memset(&u->chunks[u->nchunk_cpus], 0, (n - u->nchunk_cpus) * sizeof(*u->chunks));
		u->nchunk_cpus = n;
	}
	b = &u->chunks[hdr->cpu];
	if (c->index == 0) {
		chunk_reset(b);
		b->pid = hdr->pid;
		b->tid = hdr->tid;
		b->time_ns = hdr->time_ns;
		b->addr0 = c->addr;
	} else if (b->n != c->index || b->pid != hdr->pid || b->tid != hdr->tid ||
		   b->time_ns != hdr->time_ns || c->addr != b->addr0 + b->len) {
		chunk_reset(b);
		return;
	}
	if (!b->data)
		b->data = xmalloc((size_t)UNW_SNAPSHOT_CHUNKS * STACK_CHUNK_BYTES);
	memcpy(b->data + b->len, c->data, c->len);
	b->len += c->len;
	b->n++;
}

void unwinder_note_chunk(struct unwinder *u, const struct event_hdr *hdr, size_t size)
{
	if (u && size >= sizeof(*hdr) && hdr->type == EVENT_STACK_CHUNK)
		chunk_note(u, hdr, size);
}

/* ---- user-space unwinding */
static int uenv_read(struct unw_state *st, __u64 addr, __u64 *out)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;
	struct iovec local = { out, 8 }, remote = { (void *)(uintptr_t)addr, 8 };

	if (env->src)
		return env->src->read(env->src->ctx, addr, (uint64_t *)out);
	if (addr < env->sp0 || addr - env->sp0 > env->len || env->len - (addr - env->sp0) < 8) {
		/* The stack the thread switched away from (a switch was followed): its frames
		 * stay as they are while the thread runs on the other stack, so the live
		 * process has them; the snapshot holds only the current stack. */
		if ((!st->switches && !env->tap) || env->pid <= 0 ||
		    process_vm_readv(env->pid, &local, 1, &remote, 1, 0) != 8)
			return -1;
	} else {
		memcpy(out, env->stack + (addr - env->sp0), 8);
	}
	if (env->tap)
		env->tap->read(env->tap->ctx, addr, out, 8);
	return 0;
}

/* 16 bytes of code: from the live process (a snapshot holds only the stack). */
static int uenv_read_code(struct unw_state *st, __u64 addr, __u64 *out)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;
	struct iovec local = { out, 16 }, remote = { (void *)(uintptr_t)addr, 16 };

	if (env->src)
		return env->src->read(env->src->ctx, addr, (uint64_t *)&out[0]) ||
		       env->src->read(env->src->ctx, addr + 8, (uint64_t *)&out[1]) ? -1 : 0;
	if (env->pid <= 0 || process_vm_readv(env->pid, &local, 1, &remote, 1, 0) != 16)
		return -1;
	if (env->tap)
		env->tap->read(env->tap->ctx, addr, out, 16);
	return 0;
}

static const struct unwind_mapping *uenv_mapping(struct unw_state *st, uint32_t idx)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;
	const struct unwind_mapping *m;

	if (env->src)
		return env->src->mapping(env->src->ctx, idx);
	m = idx < env->u->nmaps ? &env->u->maps[idx] : NULL;
	if (m && env->tap)
		env->tap->mapping(env->tap->ctx, idx, m);
	return m;
}

static const struct unwind_entry *uenv_entry(struct unw_state *st, uint32_t idx)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;
	const struct unwind_entry *e;

	if (env->src)
		return env->src->entry(env->src->ctx, idx);
	e = space_entry(env->u, idx);
	if (e && env->tap)
		env->tap->entry(env->tap->ctx, idx, e);
	return e;
}

static int uenv_emit(struct unw_state *st, uint64_t word)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;

	if (st->n + 1 >= env->max) /* keep one word for a marker */
		return 1;
	env->words[st->n++] = word;
	return 0;
}

static void uenv_set_last(struct unw_state *st, uint64_t word)
{
	const struct uenv *env = (const struct uenv *)(uintptr_t)st->env;

	if (st->n > 0)
		env->words[st->n - 1] = word;
}

/* The runtime step's view of memory: the snapshot for the stack it holds, the live process
 * for the rest (code, metadata, stack deeper than the copy). */
static int uio_read(void *io, uint64_t addr, void *buf, size_t len)
{
	const struct uenv *env = io;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (addr >= env->sp0 && addr - env->sp0 <= env->len && env->len - (addr - env->sp0) >= len) {
		memcpy(buf, env->stack + (addr - env->sp0), len);
		return 0;
	}
	if (len == 0 || env->pid <= 0)
		return -EFAULT;
	return process_vm_readv(env->pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int uio_emit(void *io, uint64_t word)
{
	struct uenv *env = io;

	return uenv_emit(env->st, word);
}

/* The runtime hook of the user-space step: replay the next deferred segment of the snapshot at
 * a frame in an interpreter range, as the BPF walker did at the same frame (RT_OP_FRAME); a pc
 * in a claimed JIT range goes to the runtime's own step (opts.jit). */
static int uenv_runtime(struct unw_state *st, const struct unwind_mapping *m,
			const struct unwind_entry *e)
{
	struct uenv *env = (struct uenv *)(uintptr_t)st->env;
	size_t end = env->dpos, i;
	uint64_t marker = FW_TAG_MARKER << FW_TAG_SHIFT | FW_MARKER_SEGMENT_END;
	int keep = 0;

	if (!e) {
		struct unwinder_io io = { uio_read, uio_emit, env };

		if (!env->u->opts.jit || !(m->flags & UNW_MAP_RUNTIME))
			return UNW_HOOK_NATIVE;
		env->st = st;
		return env->u->opts.jit(env->u->opts.jit_ctx, env->pid, m->kind, st, &io);
	}
	if (env->dpos >= env->ndeferred)
		return UNW_HOOK_NATIVE;
	while (end < env->ndeferred &&
	       (env->deferred[end] & ~(FW_SEGMENT_KEEP_NATIVE | FW_SEGMENT_DROP_NATIVE)) != marker)
		end++;
	if (end < env->ndeferred) {
		keep = !!(env->deferred[end] & FW_SEGMENT_KEEP_NATIVE);
		if (end == env->dpos && (env->deferred[end] & FW_SEGMENT_DROP_NATIVE) && st->n > 0)
			st->n--; /* the frames went with another native frame of the same call */
	}
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

static const struct unwind_jit_links *uenv_jit_links(struct unw_state *st)
{
	struct uenv *env = (struct uenv *)(uintptr_t)st->env;
	const struct uproc *p;

	if (env->src)
		return env->src->jit_links ? env->src->jit_links(env->src->ctx) : NULL;
	p = proc_get(env->u, env->pid);
	if (!p || !p->jit.count)
		return NULL;
	if (env->tap && env->tap->jit_links)
		env->tap->jit_links(env->tap->ctx, &p->jit);
	return &p->jit;
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

/* unwinder_unwind_deferred() with the unwind's initial flags (UNW_S_OFF_STACK). *result is why
 * the unwind stopped; *switched is set when the stack ends in [stack switch]. */
static size_t unwind_core(struct unwinder *u, int pid, const struct unwind_source *src,
			  const struct unwind_tap *tap, uint64_t pc, uint64_t sp, uint64_t bp,
			  uint64_t fsbase, uint64_t bx, uint64_t di, const void *stack, size_t len, const uint64_t *deferred,
			  size_t ndeferred, uint32_t flags, uint64_t *words, size_t max,
			  uint32_t *result, int *switched)
{
	struct uproc *p = src ? NULL : proc_get(u, pid);
	struct unw_state st;
	struct uenv env;
	uint32_t i, why;

	*switched = 0;
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
	env.pid = pid;
	env.st = &st;
	env.src = src;
	env.tap = tap;
	st.env = (uint64_t)(uintptr_t)&env;
	st.pid = (__u32)pid;
	st.pc = pc;
	st.sp = sp;
	st.bp = bp;
	st.flags = flags & UNW_S_OFF_STACK;
	st.fsbase = fsbase;
	st.leaf_bx = bx;
	st.leaf_di = di;
	if (src) {
		st.map_first = src->map_first;
		st.map_count = src->map_count;
	} else if (p && p->published) {
		st.map_first = p->first;
		st.map_count = p->count;
	}
	for (i = 0; i < MAX_USER_WORDS; i++) {
		if (src && src->step)
			src->step(src->ctx, &st);
		if (unwind_step(&st))
			break;
	}
	if (i == MAX_USER_WORDS)
		st.result = USTAT_TRUNCATED;
	u->st.switches += st.switches;
	why = st.result;
	/* a return address in no mapping, even after reading the maps again: garbage, not a
	 * frame (the leaf's pc stays: code we do not know yet is still where it ran) */
	if (why == USTAT_ERR_NO_MAPPING && st.n > 1 && (st.flags & UNW_S_RETADDR) &&
	    words[st.n - 1] == st.pc)
		st.n--;
	/* failed on a stack that is not the thread's, before any way back to it (as BPF) */
	if (st.result != USTAT_COMPLETE && st.result != USTAT_TRUNCATED && !st.signals &&
	    !st.switches && (flags & UNW_S_OFF_STACK))
		st.result = USTAT_STACK_SWITCH;
	*switched = st.result == USTAT_STACK_SWITCH;
	if (st.result == USTAT_TRUNCATED) {
		words[st.n++] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_TRUNCATED;
	} else if (st.result != USTAT_COMPLETE) {
		words[st.n++] = (FW_TAG_MARKER << FW_TAG_SHIFT) |
				(st.result == USTAT_STACK_SWITCH ? FW_MARKER_STACK_SWITCH :
								   FW_MARKER_UNWIND_ERROR);
		/* the runtime frames of the segments the unwind did not reach (native code it
		 * could not cross lies between them and the leaf) follow the marker, as the BPF
		 * walkers' RT_OP_RESCUE puts them */
		for (; env.dpos < env.ndeferred && st.n < max; env.dpos++) {
			uint64_t w = env.deferred[env.dpos];

			if ((w >> FW_TAG_SHIFT) != FW_TAG_MARKER)
				words[st.n++] = w;
		}
	}
	if (result)
		*result = why;
	return st.n;
}

static size_t unwind_words(struct unwinder *u, int pid, uint64_t pc, uint64_t sp, uint64_t bp,
			   const void *stack, size_t len, const uint64_t *deferred,
			   size_t ndeferred, uint32_t flags, uint64_t *words, size_t max,
			   uint32_t *result, int *switched)
{
	return unwind_core(u, pid, NULL, NULL, pc, sp, bp, 0, 0, 0, stack, len, deferred, ndeferred,
			   flags, words, max, result, switched);
}

size_t unwinder_unwind_from(struct unwinder *u, int pid, const struct unwind_source *src,
			    const struct unwind_tap *tap, const struct unwind_regs *r,
			    const void *stack, size_t len, const uint64_t *deferred,
			    size_t ndeferred, uint32_t flags, uint64_t *words, size_t max,
			    uint32_t *result)
{
	int switched;

	return unwind_core(u, pid, src, src ? NULL : tap, r->pc, r->sp, r->bp, r->fsbase, r->bx,
			   r->di, stack, len, deferred, ndeferred, flags, words, max, result,
			   &switched);
}

int unwinder_pid_mappings(struct unwinder *u, int pid, uint32_t *first, uint32_t *count)
{
	struct uproc *p = proc_get(u, pid);

	if (!p || !p->published)
		return -ENOENT;
	*first = p->first;
	*count = p->count;
	return 0;
}

size_t unwinder_unwind_deferred(struct unwinder *u, int pid, uint64_t pc, uint64_t sp,
				uint64_t bp, const void *stack, size_t len,
				const uint64_t *deferred, size_t ndeferred, uint64_t *words,
				size_t max, uint32_t *result)
{
	int switched;

	return unwind_words(u, pid, pc, sp, bp, stack, len, deferred, ndeferred, 0, words, max,
			    result, &switched);
}

/* Re-read a process's maps unless done very recently (through opts.refresh, the registry,
 * when there is one). Returns 1 when read. */
static int maybe_refresh(struct unwinder *u, int pid, uint64_t sample_ns, int *refreshed)
{
	struct uproc *p = proc_get(u, pid);

	if (*refreshed)
		return 0;
	*refreshed = 1;
	if (u->opts.refresh)
		return u->opts.refresh(u->opts.refresh_ctx, pid, sample_ns) == 1;
	if (p && now_ns() - p->last_read_ns < REFRESH_MIN_NS && p->last_read_ns >= sample_ns)
		return 0;
	return unwinder_track_pid(u, pid) == 0;
}

/* Whether pid is gone (or a zombie): its maps can no longer be read. Asked only when a
 * snapshot's leaf is in no mapping we know, after reading the maps again failed. */
static int process_gone(int pid)
{
	char path[32], c;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, &c, 1);
	close(fd);
	return n == 0;
}

int unwinder_fix_sample(struct unwinder *u, const struct event_hdr *hdr, size_t size,
			const struct event_hdr **out, size_t *out_size)
{
	const struct sample_body *body;
	const uint64_t *user, *deferred;
	const uint8_t *stack;
	uint8_t *joined = NULL;
	uint64_t w0, pc, sp, bp, nbytes, ndeferred, nchunks;
	struct uproc *p;
	size_t head, nwords, outsz;
	uint32_t result;
	struct sample_body *nb;
	int refreshed = 0, switched = 0;

	if (hdr->type != EVENT_SAMPLE)
		return 0;
	if (hdr->pid && u->execd.count)
		exec_sampled(u, (int)hdr->pid);
	if (hdr->pid && u->eager.count)
		eager_sampled(u, (int)hdr->pid, hdr->time_ns);
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
	nchunks = UNW_SNAPSHOT_CHUNKS_OF(w0);
	if ((nbytes & 7) || nbytes / 8 + ndeferred > (uint64_t)(body->nuser - UNW_SNAPSHOT_WORDS))
		return -EINVAL;
	pc = user[1];
	sp = user[2];
	bp = user[3];
	stack = (const uint8_t *)&user[UNW_SNAPSHOT_WORDS];
	deferred = &user[UNW_SNAPSHOT_WORDS + nbytes / 8];
	/* A deep stack: the rest came in chunk records just before, from the same CPU. */
	if (nchunks && hdr->cpu < u->nchunk_cpus) {
		struct chunk_buf *b = &u->chunks[hdr->cpu];

		if (b->n == nchunks && b->pid == hdr->pid && b->tid == hdr->tid &&
		    b->time_ns == hdr->time_ns && b->addr0 == sp + nbytes) {
			joined = xmalloc((size_t)nbytes + b->len);
			memcpy(joined, stack, (size_t)nbytes);
			memcpy(joined + nbytes, b->data, b->len);
			stack = joined;
			nbytes += b->len;
			u->st.snapshots_chained++;
		}
		chunk_reset(b);
	}
	/* A snapshot means BPF had no tables for this pc: learn the process's mappings now if we
	 * do not know them, and once more if the unwind runs into an unknown mapping. */
	p = proc_get(u, (int)hdr->pid);
	if (!p || !pc_known(p, pc))
		maybe_refresh(u, (int)hdr->pid, hdr->time_ns, &refreshed);
	outsz = head + ((size_t)body->nkernel + MAX_USER_WORDS) * 8;
	if (u->fixcap < outsz) {
		xfree(u->fixbuf);
		u->fixbuf = xmalloc(outsz);
		u->fixcap = outsz;
	}
	memcpy(u->fixbuf, hdr, head + (size_t)body->nkernel * 8);
	for (;;) {
		nwords = unwind_words(u, (int)hdr->pid, pc, sp, bp, stack, (size_t)nbytes, deferred,
				      (size_t)ndeferred,
				      (w0 & UNW_SNAPSHOT_OFF_STACK) ? UNW_S_OFF_STACK : 0,
				      (uint64_t *)(u->fixbuf + head) + body->nkernel,
				      MAX_USER_WORDS, &result, &switched);
		if ((result != USTAT_ERR_NO_MAPPING && result != USTAT_ERR_NO_TABLE) || refreshed ||
		    !maybe_refresh(u, (int)hdr->pid, hdr->time_ns, &refreshed))
			break;
	}
	if (u->opts.capture && result != USTAT_COMPLETE && result != USTAT_TRUNCATED &&
	    proc_get(u, (int)hdr->pid)) {
		struct unwinder_snapshot snap = {
			(int)hdr->pid, (int)hdr->tid, hdr->time_ns, body->comm, pc, sp, bp,
			(w0 & UNW_SNAPSHOT_OFF_STACK) ? UNW_S_OFF_STACK : 0, stack, (size_t)nbytes,
			deferred, (size_t)ndeferred, result,
		};

		u->opts.capture(u->opts.capture_ctx, u, &snap);
	}
	xfree(joined);
	/* The maps were not read in time: a process of a few milliseconds exited before the
	 * reader got to its exec (or to its first sample after ld.so mapped its libraries), so
	 * reading them now failed (no record of the process) or found it gone. Without them
	 * nothing of the stack can be named; say so once rather than [unknown];[unwind error]. */
	p = proc_get(u, (int)hdr->pid);
	if ((result == USTAT_ERR_NO_MAPPING || result == USTAT_ERR_NO_TABLE) &&
	    (!p || (!pc_known(p, pc) && process_gone((int)hdr->pid)))) {
		((uint64_t *)(u->fixbuf + head))[body->nkernel] =
			(FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_EXITED;
		nwords = 1;
		u->st.snapshots_exited++;
	}
	u->st.snapshots++;
	if (result == USTAT_COMPLETE)
		u->st.snapshots_complete++;
	else if (result == USTAT_ERR_BAD_PC)
		u->st.snapshots_bad_pc++;
	if (switched)
		u->st.snapshots_stack_switch++;
	nb = (struct sample_body *)(u->fixbuf + sizeof(*hdr));
	nb->nuser = (uint16_t)nwords;
	outsz = head + ((size_t)body->nkernel + nwords) * 8;
	((struct event_hdr *)u->fixbuf)->size = (uint16_t)(outsz > 0xffff ? 0xffff : outsz);
	*out = (const struct event_hdr *)u->fixbuf;
	*out_size = outsz;
	return 1;
}

/* ---- setup */
static size_t map_bytes(struct bpf_map *m, long page)
{
	size_t sz = (size_t)bpf_map__max_entries(m) * bpf_map__value_size(m);

	return (sz + (size_t)page - 1) & ~((size_t)page - 1);
}

struct unwinder *unwinder_new(struct bpf_object *obj, const struct unwinder_opts *opts,
			      struct errmsg *err)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));

	if (opts)
		u->opts = *opts;
	u->pids_fd = u->stats_fd = u->hot_fd = u->jit_fd = -1;
	u->entries_fd = u->maps_fd = -1;
	u->page = sysconf(_SC_PAGESIZE);
	if (u->page <= 0)
		u->page = 4096;
	u64map_init(&u->files);
	u64map_init(&u->devino);
	u64map_init(&u->inodes);
	u64map_init(&u->procs);
	u64map_init(&u->execd);
	u64map_init(&u->eager);
	if (obj) {
		struct bpf_map *me = bpf_object__find_map_by_name(obj, "unw_entries");
		struct bpf_map *mm = bpf_object__find_map_by_name(obj, "unw_maps");
		struct bpf_map *mp = bpf_object__find_map_by_name(obj, "unw_pids");
		struct bpf_map *ms = bpf_object__find_map_by_name(obj, "unw_stats");
		struct bpf_map *mh = bpf_object__find_map_by_name(obj, "unw_exec_hot");
		struct bpf_map *mj = bpf_object__find_map_by_name(obj, "unw_jit");

		if (!me || !mm || !mp || !ms) {
			errmsg_set(err, -ENOENT, "the BPF object has no unwind maps");
			goto fail;
		}
		u->mmapped = 1;
		u->entries_fd = bpf_map__fd(me);
		u->maps_fd = bpf_map__fd(mm);
		u->nentries = bpf_map__max_entries(me);
		u->nmaps = bpf_map__max_entries(mm);
		u->entries_bytes = map_bytes(me, u->page);
		u->maps_bytes = map_bytes(mm, u->page);
		/* is the entry map mappable at all (a window of its first page)? */
		{
			void *p = mmap(NULL, (size_t)u->page, PROT_READ | PROT_WRITE, MAP_SHARED,
				       u->entries_fd, 0);

			if (p == MAP_FAILED) {
				errmsg_set(err, -errno, "cannot map the unwind tables: %s",
					   strerror(errno));
				goto fail;
			}
			munmap(p, (size_t)u->page);
		}
		u->maps = xcalloc(u->nmaps, sizeof(*u->maps));
		u->ecache = xcalloc(SPACE_CACHE_SLOTS, sizeof(*u->ecache));
		u->pids_fd = bpf_map__fd(mp);
		u->stats_fd = bpf_map__fd(ms);
		u->hot_fd = mh ? bpf_map__fd(mh) : -1;
		u->jit_fd = mj ? bpf_map__fd(mj) : -1;
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
	{
		struct table_cache_opts co;
		struct errmsg cerr;

		memset(&co, 0, sizeof(co));
		co.max_bytes = u->opts.cache_bytes;
		co.max_disk_bytes = u->opts.cache_disk_bytes;
		co.dir = u->opts.cache_dir;
		u->cache = table_cache_new(&co, &cerr);
		if (!u->cache && co.dir) {
			/* the disk is an extra: go on with memory only, and say why */
			snprintf(u->cache_note, sizeof(u->cache_note), "%s (unwind tables are kept "
				 "in memory only)", cerr.msg);
			co.dir = NULL;
			u->cache = table_cache_new(&co, &cerr);
		}
	}
	u->opts.cache_dir = NULL; /* not kept: the caller's string */
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
	if (u->cache)
		table_cache_stats(u->cache, &out->cache);
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

const char *unwinder_cache_note(struct unwinder *u)
{
	if (!u->cache_note[0] || u->cache_note_said)
		return NULL;
	u->cache_note_said = 1;
	return u->cache_note;
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
	xfree(u->ecache);
	xfree(u->entries);
	xfree(u->maps);
	table_cache_free(u->cache);
	u64map_release(&u->files);
	u64map_release(&u->devino);
	u64map_release(&u->inodes);
	u64map_release(&u->procs);
	u64map_release(&u->execd);
	u64map_release(&u->eager);
	xfree(u->ea.free);
	xfree(u->ma.free);
	xfree(u->fixbuf);
	{
		size_t i;

		for (i = 0; i < u->nchunk_cpus; i++)
			chunk_reset(&u->chunks[i]);
		xfree(u->chunks);
	}
	xfree(u);
}
