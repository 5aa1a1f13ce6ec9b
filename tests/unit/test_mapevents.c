/* test_mapevents.c: the perf mmap/comm/fork/exit/lost record parser and the images built from
 * the records (src/agent/mapevents.c) on records made here: overlapping mappings, the image
 * before an exec, forks, lost records, files replaced since they were mapped, the bounds; the
 * process registry's use of them for a process that is gone; and, as root, the real events of
 * a child that runs /bin/true. */
#include "agent/mapevents.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

static uint8_t rec[8192];

static void put32(size_t off, uint32_t v)
{
	memcpy(rec + off, &v, 4);
}

static void put64(size_t off, uint64_t v)
{
	memcpy(rec + off, &v, 8);
}

/* Header, then the trailer (pid, tid, time) at the end: returns the size. */
static size_t finish(uint32_t type, uint16_t misc, size_t body_end, uint32_t pid, uint64_t t)
{
	size_t size = ((body_end + 7) & ~(size_t)7) + 16;
	uint16_t sz = (uint16_t)size;

	put32(0, type);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &sz, 2);
	put32(size - 16, pid);
	put32(size - 12, pid);
	put64(size - 8, t);
	return size;
}

static size_t mmap2(uint32_t pid, uint64_t t, uint64_t addr, uint64_t len, uint64_t pgoff,
		    const char *path, const struct stat *st)
{
	size_t n = strlen(path) + 1;

	memset(rec, 0, sizeof(rec));
	put32(8, pid);
	put32(12, pid);
	put64(16, addr);
	put64(24, len);
	put64(32, pgoff);
	put32(40, st ? major(st->st_dev) : 0);
	put32(44, st ? minor(st->st_dev) : 0);
	put64(48, st ? (uint64_t)st->st_ino : 0);
	put32(64, PROT_READ | PROT_EXEC);
	put32(68, MAP_PRIVATE);
	memcpy(rec + 72, path, n);
	return finish(MAPEVENTS_REC_MMAP2, 0, 72 + n, pid, t);
}

static size_t comm_exec(uint32_t pid, uint64_t t)
{
	memset(rec, 0, sizeof(rec));
	put32(8, pid);
	put32(12, pid);
	memcpy(rec + 16, "prog", 5);
	return finish(MAPEVENTS_REC_COMM, MAPEVENTS_MISC_COMM_EXEC, 21, pid, t);
}

static size_t task(uint32_t type, uint32_t pid, uint32_t ppid, uint64_t t)
{
	memset(rec, 0, sizeof(rec));
	put32(8, pid);
	put32(12, ppid);
	put32(16, pid);
	put32(20, ppid);
	put64(24, t);
	return finish(type, 0, 32, pid, t);
}

static size_t lost(uint64_t n, uint64_t t)
{
	memset(rec, 0, sizeof(rec));
	put64(8, 1);
	put64(16, n);
	return finish(MAPEVENTS_REC_LOST, 0, 24, 0, t);
}

static struct stat self_st;
static char self_path[4096];

static void self_file(void)
{
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);

	self_path[n > 0 ? n : 0] = '\0';
	if (stat(self_path, &self_st) < 0)
		memset(&self_st, 0, sizeof(self_st));
}

static void apply(struct mapevents *m, size_t n)
{
	CHECK_EQ_INT(mapevents_apply(m, rec, n), 0);
}

static void test_parse(void)
{
	struct mapevent ev;
	size_t n = mmap2(42, 1000, 0x400000, 0x2000, 0x1000, "/usr/bin/x", &self_st);

	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), 0);
	CHECK_EQ_INT(ev.type, MAPEVENTS_REC_MMAP2);
	CHECK_EQ_INT(ev.pid, 42);
	CHECK_EQ_INT(ev.time_ns, 1000);
	CHECK_EQ_INT(ev.addr, 0x400000);
	CHECK_EQ_INT(ev.len, 0x2000);
	CHECK_EQ_INT(ev.pgoff, 0x1000);
	CHECK_EQ_INT(ev.ino, self_st.st_ino);
	CHECK_EQ_INT(ev.prot, PROT_READ | PROT_EXEC);
	CHECK_EQ_STR(ev.filename, "/usr/bin/x");
	/* truncated, too short, a size field that lies, no NUL in the name */
	CHECK_EQ_INT(mapevents_parse(rec, n - 8, &ev), -EINVAL);
	CHECK_EQ_INT(mapevents_parse(rec, 7, &ev), -EINVAL);
	CHECK_EQ_INT(mapevents_parse(rec, 0, &ev), -EINVAL);
	memset(rec + 72, 'a', n - 72 - 16);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), -EINVAL);
	/* an empty mapping, one that wraps */
	n = mmap2(42, 1000, 0x400000, 0, 0, "/x", NULL);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), -EINVAL);
	n = mmap2(42, 1000, UINT64_MAX - 10, 0x1000, 0, "/x", NULL);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), -EINVAL);
	/* the build-id form */
	n = mmap2(42, 1000, 0x400000, 0x1000, 0, "/x", NULL);
	rec[4] = 0;
	rec[5] = (uint8_t)(MAPEVENTS_MISC_BUILD_ID >> 8);
	rec[40] = 20;
	memset(rec + 44, 0xab, 20);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), 0);
	CHECK_EQ_INT(ev.build_id_size, 20);
	CHECK_EQ_INT(ev.build_id[19], 0xab);
	CHECK_EQ_INT(ev.ino, 0);
	rec[40] = 21;
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), -EINVAL);
	/* the others */
	n = comm_exec(7, 5);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), 0);
	CHECK_EQ_INT(ev.comm_exec, 1);
	n = task(MAPEVENTS_REC_FORK, 8, 7, 6);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), 0);
	CHECK_EQ_INT(ev.pid, 8);
	CHECK_EQ_INT(ev.ppid, 7);
	n = lost(3, 9);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), 0);
	CHECK_EQ_INT(ev.lost, 3);
	put32(0, 99);
	CHECK_EQ_INT(mapevents_parse(rec, n, &ev), -ENOENT);
}

static void test_images(void)
{
	struct mapevents *m = mapevents_new(NULL);
	struct procmaps pm;
	struct mapevents_stats st;
	char exe[256];
	uint64_t as_of = 0;

	apply(m, comm_exec(100, 10));
	apply(m, mmap2(100, 11, 0x10000, 0x8000, 0x1000, self_path, &self_st));
	/* the loader maps over the middle of it: split in three */
	apply(m, mmap2(100, 12, 0x12000, 0x1000, 0, "//anon", NULL));
	apply(m, mmap2(100, 13, 0x7f0000, 0x1000, 0, "[vdso]", NULL));
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK_EQ_INT(pm.n, 4);
	if (pm.n == 4) {
		CHECK_EQ_INT(pm.v[0].start, 0x10000);
		CHECK_EQ_INT(pm.v[0].end, 0x12000);
		CHECK_EQ_STR(pm.v[0].path, self_path);
		CHECK_EQ_INT(pm.v[0].inode, self_st.st_ino);
		CHECK_EQ_INT(pm.v[0].offset, 0x1000);
		CHECK_EQ_INT(pm.v[1].kind, PROCMAPS_ANON);
		CHECK_EQ_INT(pm.v[2].start, 0x13000);
		CHECK_EQ_INT(pm.v[2].offset, 0x4000);
		CHECK_EQ_STR(pm.v[2].path, self_path);
		CHECK_EQ_INT(pm.v[3].kind, PROCMAPS_VDSO);
		CHECK(pm.v[0].perms & PROCMAPS_X);
	}
	CHECK_EQ_STR(exe, self_path);
	CHECK(as_of > 0);
	procmaps_release(&pm);
	/* unknown pid */
	CHECK_EQ_INT(mapevents_maps(m, 101, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	/* a mapping of a process not seen starting is not kept */
	apply(m, mmap2(102, 14, 0x10000, 0x1000, 0, self_path, &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 102, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.procs, 1);
	CHECK_EQ_INT(st.mmaps, 3);
	CHECK_EQ_INT(st.refused, 0);
	mapevents_free(m);
}

/* The ring reader: records that wrap at the end of the buffer, a header that runs past head, a
 * head behind the tail, a ring read nearly full. */
static void test_ring(void)
{
	struct mapevents *m = mapevents_new(NULL);
	struct mapevents_stats st;
	struct procmaps pm;
	static uint8_t ring[8192]; /* more than the longest record: not read as full */
	uint8_t stream[512];
	size_t len = 0, n, k;
	uint64_t tail = 3 * sizeof(ring) + sizeof(ring) - 40, as_of;
	char exe[64];

	n = comm_exec(100, 10);
	memcpy(stream, rec, n);
	len = n;
	n = mmap2(100, 11, 0x10000, 0x1000, 0, self_path[0] && strlen(self_path) < 200 ?
		  self_path : "/x", &self_st);
	memcpy(stream + len, rec, n);
	len += n;
	for (k = 0; k < len; k++)
		ring[(tail + k) % sizeof(ring)] = stream[k];
	CHECK_EQ_INT(mapevents_feed_ring(m, ring, sizeof(ring), tail + len, tail), 2);
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK_EQ_INT(pm.n, 1);
	procmaps_release(&pm);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.bad, 0);
	CHECK_EQ_INT(st.full, 0);
	/* head cuts the second record: the first is applied, the rest counted bad */
	CHECK_EQ_INT(mapevents_feed_ring(m, ring, sizeof(ring), tail + len - 8, tail), 1);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.bad, 1);
	/* head behind tail: nothing read, the ring is not trusted */
	CHECK_EQ_INT(mapevents_feed_ring(m, ring, sizeof(ring), tail, tail + len), 0);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.bad, 2);
	CHECK_EQ_INT(st.full, 1);
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	CHECK_EQ_INT(mapevents_feed_ring(m, ring, 500, tail + len, tail), -EINVAL);
	mapevents_free(m);
}

/* A path that leads to another file than the one mapped is not used: no name rather than a
 * wrong one. */
static void test_replaced_file(void)
{
	struct mapevents *m = mapevents_new(NULL);
	struct procmaps pm;
	struct mapevents_stats st;
	struct stat other = self_st;
	char exe[64];
	uint64_t as_of;

	other.st_ino++;
	apply(m, comm_exec(100, 10));
	apply(m, mmap2(100, 11, 0x10000, 0x1000, 0, self_path, &other));
	apply(m, mmap2(100, 12, 0x20000, 0x1000, 0, "/nonexistent/lib.so", &self_st));
	apply(m, mmap2(100, 13, 0x30000, 0x1000, 0, "/tmp/gone (deleted)", &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK_EQ_INT(pm.n, 3);
	for (size_t i = 0; i < pm.n; i++) {
		CHECK_EQ_INT(pm.v[i].kind, PROCMAPS_ANON);
		CHECK_EQ_INT(pm.v[i].inode, 0);
	}
	procmaps_release(&pm);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.refused, 3);
	mapevents_free(m);
}

/* A sample taken before an exec is unwound with the image that ran then. */
static void test_image_before_exec(void)
{
	struct mapevents_opts o = { .previous_images = 1 };
	struct mapevents *m = mapevents_new(&o);
	struct procmaps pm;
	char exe[64];
	uint64_t as_of;

	apply(m, comm_exec(100, 10));
	apply(m, mmap2(100, 11, 0x10000, 0x1000, 0, self_path, &self_st));
	apply(m, comm_exec(100, 20));
	apply(m, mmap2(100, 21, 0x50000, 0x1000, 0, self_path, &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 100, 15, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK(pm.n == 1 && pm.v[0].start == 0x10000);
	CHECK_EQ_INT(as_of, 19);
	procmaps_release(&pm);
	CHECK_EQ_INT(mapevents_maps(m, 100, 25, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK(pm.n == 1 && pm.v[0].start == 0x50000);
	procmaps_release(&pm);
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK(pm.n == 1 && pm.v[0].start == 0x50000);
	procmaps_release(&pm);
	/* before both: unknown */
	CHECK_EQ_INT(mapevents_maps(m, 100, 5, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	mapevents_free(m);
	/* without previous_images: refused, the current image still served */
	m = mapevents_new(NULL);
	apply(m, comm_exec(100, 10));
	apply(m, mmap2(100, 11, 0x10000, 0x1000, 0, self_path, &self_st));
	apply(m, comm_exec(100, 20));
	apply(m, mmap2(100, 21, 0x50000, 0x1000, 0, self_path, &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 100, 15, &pm, exe, sizeof(exe), &as_of), -ESTALE);
	procmaps_release(&pm);
	CHECK_EQ_INT(mapevents_maps(m, 100, 25, &pm, exe, sizeof(exe), &as_of), 0);
	procmaps_release(&pm);
	/* a mapping record older than the image it would land in is the old image's */
	apply(m, mmap2(100, 15, 0x90000, 0x1000, 0, self_path, &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK_EQ_INT(pm.n, 1);
	procmaps_release(&pm);
	mapevents_free(m);
}

static void test_forks_and_lost(void)
{
	struct mapevents *m = mapevents_new(NULL);
	struct procmaps pm;
	char exe[64];
	uint64_t as_of;

	apply(m, comm_exec(100, 10));
	apply(m, mmap2(100, 11, 0x10000, 0x1000, 0, self_path, &self_st));
	/* a child runs its parent's image; a thread is no new process */
	apply(m, task(MAPEVENTS_REC_FORK, 101, 100, 20));
	apply(m, task(MAPEVENTS_REC_FORK, 100, 100, 21));
	CHECK_EQ_INT(mapevents_maps(m, 101, 0, &pm, exe, sizeof(exe), &as_of), 0);
	CHECK(pm.n == 1 && pm.v[0].start == 0x10000);
	CHECK_EQ_STR(exe, self_path);
	procmaps_release(&pm);
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), 0);
	procmaps_release(&pm);
	/* the child of a process we did not see start: its image is not known whole */
	apply(m, task(MAPEVENTS_REC_FORK, 201, 200, 22));
	apply(m, mmap2(201, 23, 0x10000, 0x1000, 0, self_path, &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 201, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	/* a pid reused by a new process: the old images go */
	apply(m, task(MAPEVENTS_REC_FORK, 100, 201, 30));
	CHECK_EQ_INT(mapevents_maps(m, 100, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	CHECK(mapevents_maps(m, 100, 15, &pm, exe, sizeof(exe), &as_of) < 0);
	procmaps_release(&pm);
	/* a lost record: what was current may miss a mapping; what starts after is whole */
	apply(m, lost(5, 40));
	CHECK_EQ_INT(mapevents_maps(m, 101, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	apply(m, comm_exec(101, 50));
	apply(m, mmap2(101, 51, 0x10000, 0x1000, 0, self_path, &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 101, 0, &pm, exe, sizeof(exe), &as_of), 0);
	procmaps_release(&pm);
	{
		struct mapevents_stats st;

		mapevents_stats(m, &st);
		CHECK_EQ_INT(st.lost, 5);
	}
	mapevents_free(m);
}

static void test_follow(void)
{
	struct mapevents *m = mapevents_new(NULL);
	struct procmaps pm;
	char exe[64];
	uint64_t as_of;

	mapevents_follow(m, 100, 1);
	mapevents_follow(m, 400, 0);
	apply(m, comm_exec(100, 10));
	apply(m, comm_exec(300, 10)); /* not ours */
	apply(m, task(MAPEVENTS_REC_FORK, 401, 400, 11)); /* a child of a process followed alone */
	apply(m, comm_exec(401, 12));
	apply(m, task(MAPEVENTS_REC_FORK, 101, 100, 11));
	apply(m, comm_exec(101, 12));
	apply(m, mmap2(101, 13, 0x10000, 0x1000, 0, self_path, &self_st));
	apply(m, mmap2(300, 13, 0x10000, 0x1000, 0, self_path, &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 101, 0, &pm, exe, sizeof(exe), &as_of), 0);
	procmaps_release(&pm);
	CHECK_EQ_INT(mapevents_maps(m, 300, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	{
		struct mapevents_stats st;

		mapevents_stats(m, &st);
		CHECK_EQ_INT(st.procs, 2); /* 100 and 101 */
	}
	mapevents_free(m);
}

static void test_bounds(void)
{
	struct mapevents_opts o = { .max_procs = 4 };
	struct mapevents *m = mapevents_new(&o);
	struct mapevents_stats st;
	struct procmaps pm;
	char exe[64];
	uint64_t as_of;
	uint32_t pid;
	int i;
	struct timespec ts;
	uint64_t t0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	for (pid = 1; pid <= 10; pid++)
		apply(m, comm_exec(pid, t0 + pid));
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.procs, 4);
	CHECK_EQ_INT(st.evicted, 6);
	/* too many mappings: the image is not served, and what it held is freed */
	for (i = 0; i < MAPEVENTS_MAX_MAPPINGS + 10; i++)
		apply(m, mmap2(10, t0 + 20, 0x100000 + (uint64_t)i * 0x2000, 0x1000, 0, self_path,
			       &self_st));
	CHECK_EQ_INT(mapevents_maps(m, 10, 0, &pm, exe, sizeof(exe), &as_of), -ENOENT);
	procmaps_release(&pm);
	/* exited processes go at the second collect after their exit (the others are young) */
	apply(m, task(MAPEVENTS_REC_EXIT, 10, 1, t0 + 30));
	mapevents_collect(m);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.procs, 4);
	mapevents_collect(m);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.procs, 3);
	mapevents_free(m);
	/* old images go (times here are far in the past of CLOCK_MONOTONIC) */
	o.max_age_ns = 1;
	m = mapevents_new(&o);
	apply(m, comm_exec(5, 1));
	mapevents_collect(m);
	mapevents_stats(m, &st);
	CHECK_EQ_INT(st.procs, 0);
	CHECK_EQ_INT(st.bytes, 0);
	mapevents_free(m);
}

/* The registry asks the maps source for a process it cannot read. */
static struct mapevents *reg_src;

static int from_events(void *ctx, int pid, uint64_t when_ns, struct procmaps *out, char *exe,
		       size_t exelen, uint64_t *as_of_ns)
{
	return mapevents_maps(reg_src, pid, when_ns, out, exe, exelen, as_of_ns);
}

static void test_registry_source(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct process_registry_stats st;
	struct process *p;
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	CHECK(gone > 0);
	waitpid(gone, NULL, 0);
	reg_src = mapevents_new(NULL);
	process_registry_set_maps_source(reg, from_events, NULL);
	apply(reg_src, comm_exec((uint32_t)gone, 10));
	apply(reg_src, mmap2((uint32_t)gone, 11, 0x10000, 0x1000, 0, self_path, &self_st));
	p = process_seen_at(reg, gone, "prog", 12);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->state, PROCESS_LIVE);
		CHECK_EQ_INT(p->maps.n, 1);
		CHECK_EQ_STR(p->exe, self_path);
	}
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.maps_from_events, 1);
	/* a zombie: /proc/PID/maps is there but empty */
	{
		pid_t z = fork();
		char path[64], state = 0;
		int i;

		if (z == 0)
			_exit(0);
		CHECK(z > 0);
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)z);
		for (i = 0; i < 3000 && state != 'Z'; i++) {
			FILE *f = fopen(path, "r");

			if (f) {
				if (fscanf(f, "%*d %*s %c", &state) != 1)
					state = 0;
				fclose(f);
			}
			if (state != 'Z')
				usleep(1000);
		}
		CHECK_EQ_INT(state, 'Z');
		apply(reg_src, comm_exec((uint32_t)z, 20));
		apply(reg_src, mmap2((uint32_t)z, 21, 0x10000, 0x1000, 0, self_path, &self_st));
		p = process_seen_at(reg, z, "prog", 22);
		CHECK(p != NULL && p->maps.n == 1);
		waitpid(z, NULL, 0);
	}
	process_registry_stats(reg, &st);
	CHECK_EQ_INT(st.maps_from_events, 2);
	process_registry_free(reg);
	mapevents_free(reg_src);
}

/* As root: the kernel's own records of a child that runs /bin/true. */
static void test_real_events(void)
{
	struct mapevents *m = mapevents_new(NULL);
	struct procmaps pm;
	struct errmsg err;
	char exe[4096];
	uint64_t as_of;
	size_t i, files = 0;
	pid_t child;

	if (mapevents_open(m, &err) < 0) {
		mapevents_free(m);
		SKIP("%s", err.msg);
	}
	child = fork();
	if (child == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	CHECK(child > 0);
	waitpid(child, NULL, 0);
	CHECK_EQ_INT(mapevents_maps(m, child, 0, &pm, exe, sizeof(exe), &as_of), 0);
	for (i = 0; i < pm.n; i++)
		files += pm.v[i].kind == PROCMAPS_FILE && pm.v[i].inode &&
			 (pm.v[i].perms & PROCMAPS_X);
	CHECK(files >= 2); /* the executable, the loader, libc */
	CHECK(strstr(exe, "true") != NULL);
	/* a procmaps_open() of the gone process's files works by path */
	for (i = 0; i < pm.n; i++) {
		if (pm.v[i].kind == PROCMAPS_FILE) {
			int fd = procmaps_open(child, &pm.v[i], NULL);

			CHECK(fd >= 0);
			if (fd >= 0)
				close(fd);
		}
	}
	procmaps_release(&pm);
	mapevents_free(m);
}

/* As root: a buffer too small for a burst of processes. The kernel says it lost records, the
 * images current then are not served, nothing breaks, and what starts after is whole. */
static void test_real_overflow(void)
{
	struct mapevents_opts o = { .pages = 2 };
	struct mapevents *m = mapevents_new(&o);
	struct mapevents_stats st;
	struct procmaps pm;
	struct errmsg err;
	char exe[4096];
	uint64_t as_of;
	pid_t kids[60], last;
	int i, served;

	if (mapevents_open(m, &err) < 0) {
		mapevents_free(m);
		SKIP("%s", err.msg);
	}
	for (i = 0; i < 60; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
	}
	for (i = 0; i < 60; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	mapevents_drain(m);
	mapevents_stats(m, &st);
	CHECK(st.full > 0); /* the LOST record comes with the next record written */
	CHECK_EQ_INT(st.bad, 0);
	for (i = 0; i < 60; i++) {
		if (mapevents_maps(m, kids[i], 0, &pm, exe, sizeof(exe), &as_of) == 0)
			CHECK(pm.n > 0);
		procmaps_release(&pm);
	}
	/* after the loss, a new process is known whole again (tried a few times: the rest of the
	 * machine may fill this small buffer meanwhile) */
	for (i = 0, served = 0; i < 10 && !served; i++) {
		last = fork();
		if (last == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		CHECK(last > 0);
		waitpid(last, NULL, 0);
		served = mapevents_maps(m, last, 0, &pm, exe, sizeof(exe), &as_of) == 0 &&
			 pm.n >= 2;
		procmaps_release(&pm);
	}
	CHECK(served);
	mapevents_stats(m, &st);
	CHECK(st.lost > 0);
	CHECK_EQ_INT(st.bad, 0);
	mapevents_free(m);
}

int main(void)
{
	self_file();
	RUN(test_parse);
	RUN(test_images);
	RUN(test_ring);
	RUN(test_replaced_file);
	RUN(test_image_before_exec);
	RUN(test_forks_and_lost);
	RUN(test_follow);
	RUN(test_bounds);
	RUN(test_registry_source);
	RUN(test_real_events);
	RUN(test_real_overflow);
	return test_summary();
}
