/* test_procmaps.c: the /proc/PID/maps parser on fixed text (spaces in paths, deleted files,
 * special and anonymous mappings, malformed lines), on this process's own maps, and opening
 * the file behind a mapping, including a deleted one. */
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char sample[] =
	"555e8c011000-555e8c013000 r--p 00000000 fe:00 247134                     /usr/bin/cat\n"
	"555e8c013000-555e8c018000 r-xp 00002000 fe:00 247134                     /usr/bin/cat\n"
	"555eb7238000-555eb7259000 rw-p 00000000 00:00 0                          [heap]\n"
	"7fcb4c3a8000-7fcb4c3ca000 rw-p 00000000 00:00 0 \n"
	"this line is garbage\n"
	"7fcb4c451000-7fcb4c5a7000 r-xp 00026000 fe:00 332835                     /opt/my app/lib x.so (deleted)\n"
	"7fcb4c610000-7fcb4c617000 r--s 00000000 fe:00 332280                     /usr/lib/gconv.cache\n"
	"7fcb4c61e000-7fcb4c620000 r-xp 00000000 00:00 0                          [vdso]\n"
	"7ffc4c61e000-7ffc4c620000 rw-p 00000000 00:00 0                          [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

static void test_parse_sample(void)
{
	struct procmaps m;
	const struct procmaps_entry *e;

	CHECK_EQ_INT(procmaps_parse(sample, strlen(sample), &m, NULL), 0);
	CHECK_EQ_INT(m.n, 9);
	CHECK_EQ_INT(m.bad_lines, 1);
	if (m.n != 9)
		goto cleanup;
	e = &m.v[1];
	CHECK_EQ_INT(e->start, 0x555e8c013000ULL);
	CHECK_EQ_INT(e->end, 0x555e8c018000ULL);
	CHECK_EQ_INT(e->offset, 0x2000);
	CHECK_EQ_INT(e->perms, PROCMAPS_R | PROCMAPS_X);
	CHECK_EQ_INT(e->dev_major, 0xfe);
	CHECK_EQ_INT(e->dev_minor, 0);
	CHECK_EQ_INT(e->inode, 247134);
	CHECK_EQ_INT(e->kind, PROCMAPS_FILE);
	CHECK_EQ_STR(e->path, "/usr/bin/cat");
	CHECK_EQ_INT(m.v[2].kind, PROCMAPS_HEAP);
	CHECK_EQ_INT(m.v[3].kind, PROCMAPS_ANON);
	CHECK_EQ_STR(m.v[3].path, "");
	CHECK_EQ_STR(m.v[4].path, "/opt/my app/lib x.so");
	CHECK_EQ_INT(m.v[4].deleted, 1);
	CHECK_EQ_INT(m.v[1].deleted, 0);
	CHECK_EQ_INT(m.v[5].perms, PROCMAPS_R | PROCMAPS_SHARED);
	CHECK_EQ_INT(m.v[6].kind, PROCMAPS_VDSO);
	CHECK_EQ_INT(m.v[7].kind, PROCMAPS_STACK);
	CHECK_EQ_INT(m.v[8].kind, PROCMAPS_SPECIAL);
	CHECK_EQ_INT(m.v[8].end, 0xffffffffff601000ULL);
	/* lookups */
	e = procmaps_find(&m, 0x555e8c013000ULL);
	CHECK(e == &m.v[1]);
	e = procmaps_find(&m, 0x555e8c017fffULL);
	CHECK(e == &m.v[1]);
	CHECK(procmaps_find(&m, 0x555e8c018000ULL) == NULL);
	CHECK(procmaps_find(&m, 0x1000) == NULL);
	CHECK(procmaps_find(&m, 0xffffffffff600010ULL) == &m.v[8]);
cleanup:
	procmaps_release(&m);
}

static void test_malformed(void)
{
	static const char *bad[] = {
		"1000-0fff r-xp 00000000 00:00 0 /x\n",           /* end < start */
		"1000-2000 r-x 00000000 00:00 0 /x\n",            /* short perms */
		"1000-2000 rqxp 00000000 00:00 0 /x\n",
		"10000000000000000-2 r-xp 00000000 00:00 0 /x\n", /* overflow */
		"1000-2000 r-xp 00000000 00:00 x /x\n",
		"1000-2000 r-xp 00000000 0000 0 /x\n",
		"-2000 r-xp 00000000 00:00 0 /x\n",
		"1000-2000 r-xp 00000000 00:00 099999999999999999999 /x\n",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct procmaps m;

		CHECK_EQ_INT(procmaps_parse(bad[i], strlen(bad[i]), &m, NULL), 0);
		CHECK_EQ_INT(m.n, 0);
		CHECK_EQ_INT(m.bad_lines, 1);
		procmaps_release(&m);
	}
	{
		struct procmaps m;

		CHECK_EQ_INT(procmaps_parse("", 0, &m, NULL), 0);
		CHECK_EQ_INT(m.n, 0);
		procmaps_release(&m);
		procmaps_release(&m); /* twice is fine */
	}
}

/* A temporary file of len bytes (path: a mkstemp template) mapped from offset off with prot,
 * or MAP_FAILED. The file stays: the caller unlinks or replaces it. */
static void *map_temp(char *path, size_t len, int prot, off_t off)
{
	char data[16384];
	void *p;
	int fd;

	if (len > sizeof(data) || (size_t)off >= len)
		return MAP_FAILED;
	memset(data, 0xc3, len);
	fd = mkstemp(path);
	if (fd < 0)
		return MAP_FAILED;
	if (write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return MAP_FAILED;
	}
	p = mmap(NULL, len - (size_t)off, prot, MAP_PRIVATE, fd, off);
	close(fd);
	return p;
}

static void test_self_maps(void)
{
	struct procmaps m;
	const struct procmaps_entry *e;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st1, st2;
	int fd;

	CHECK(n > 0);
	exe[n > 0 ? n : 0] = 0;
	CHECK_EQ_INT(procmaps_read(0, &m, NULL), 0);
	CHECK(m.n > 5);
	e = procmaps_find(&m, (uint64_t)(uintptr_t)&test_self_maps);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ_STR(e->path, exe);
		CHECK(e->perms & PROCMAPS_X);
		fd = procmaps_open(0, e, NULL);
		CHECK(fd >= 0);
		if (fd >= 0) {
			CHECK(fstat(fd, &st1) == 0 && stat(exe, &st2) == 0 && st1.st_ino == st2.st_ino);
			close(fd);
		}
		fd = procmaps_open(getpid(), e, NULL);
		CHECK(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	procmaps_release(&m);
	CHECK_EQ_INT(procmaps_read(INT_MAX, &m, NULL), -ESRCH);
	procmaps_release(&m);
}

static void test_open_deleted(void)
{
	char path[] = "/tmp/scorch-test-procmaps-XXXXXX";
	struct procmaps m;
	const struct procmaps_entry *e;
	char data[8192], back[16];
	void *p;
	int fd;

	memset(data, 'z', sizeof(data));
	memcpy(data, "MAGIC", 5);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, data, sizeof(data)) == (ssize_t)sizeof(data));
	p = mmap(NULL, sizeof(data), PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	unlink(path);
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	CHECK_EQ_INT(procmaps_read(0, &m, NULL), 0);
	e = procmaps_find(&m, (uint64_t)(uintptr_t)p);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ_STR(e->path, path);
		CHECK_EQ_INT(e->deleted, 1);
		fd = procmaps_open(getpid(), e, NULL);
		if (fd < 0 && geteuid() != 0) {
			munmap(p, sizeof(data));
			procmaps_release(&m);
			SKIP("map_files needs root");
		}
		CHECK(fd >= 0);
		if (fd >= 0) {
			CHECK(pread(fd, back, 5, 0) == 5 && !memcmp(back, "MAGIC", 5));
			close(fd);
		}
	}
	munmap(p, sizeof(data));
	procmaps_release(&m);
	/* anonymous mappings cannot be opened */
	{
		struct procmaps_entry anon = { .kind = PROCMAPS_ANON, .path = "" };
		struct errmsg err;

		CHECK_EQ_INT(procmaps_open(0, &anon, &err), -EINVAL);
	}
}

/* The executable mappings asked of the kernel one by one are those of the text, field by
 * field: a deleted file mapped executable, anonymous executable memory, the vdso. */
static void read_exec_as_text(int as_text)
{
	char path[] = "/tmp/scorch-test-procmaps-XXXXXX";
	struct procmaps q, t;
	void *file, *anon;
	size_t i, deleted = 0, anons = 0;

	file = map_temp(path, 3 * 4096, PROT_READ | PROT_EXEC, 4096);
	unlink(path);
	anon = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	CHECK(file != MAP_FAILED && anon != MAP_FAILED);
	if (as_text)
		procmaps_query_use(0);
	CHECK_EQ_INT(procmaps_read_exec(0, &q, NULL), 0);
	CHECK_EQ_INT(procmaps_read(0, &t, NULL), 0);
	procmaps_keep(&t, PROCMAPS_X);
	for (i = deleted = 0; i < t.n; i++) /* the kernel's page: left out */
		if (strcmp(t.v[i].path, "[vsyscall]"))
			t.v[deleted++] = t.v[i];
	t.n = deleted;
	deleted = 0;
	if (!as_text && !procmaps_query_supported())
		printf("  note: no PROCMAP_QUERY on this kernel, the text was read\n");
	CHECK(q.n >= 4);
	CHECK_EQ_INT((int)q.n, (int)t.n);
	for (i = 0; i < q.n && i < t.n; i++) {
		const struct procmaps_entry *a = &q.v[i], *b = &t.v[i];

		CHECK(a->start == b->start && a->end == b->end && a->offset == b->offset);
		CHECK(a->inode == b->inode && a->dev_major == b->dev_major &&
		      a->dev_minor == b->dev_minor);
		CHECK_EQ_INT(a->perms, b->perms);
		CHECK_EQ_INT(a->kind, b->kind);
		CHECK_EQ_INT(a->deleted, b->deleted);
		CHECK_EQ_STR(a->path, b->path);
		deleted += a->deleted && a->start == (uint64_t)(uintptr_t)file &&
			   a->offset == 4096 && !strcmp(a->path, path);
		anons += a->kind == PROCMAPS_ANON && a->start == (uint64_t)(uintptr_t)anon &&
			 a->perms == (PROCMAPS_R | PROCMAPS_W | PROCMAPS_X);
	}
	CHECK_EQ_INT((int)deleted, 1);
	CHECK_EQ_INT((int)anons, 1);
	procmaps_release(&q);
	procmaps_release(&t);
	CHECK_EQ_INT(procmaps_read_exec(getpid(), &q, NULL), 0);
	CHECK(q.n >= 4);
	procmaps_release(&q);
	CHECK_EQ_INT(procmaps_read_exec(INT_MAX, &q, NULL), -ESRCH);
	procmaps_release(&q);
	munmap(file, 2 * 4096);
	munmap(anon, 3 * 4096);
	procmaps_query_use(1);
}

/* stat without open: the executable's mapping by its path; not a deleted file, not a file
 * replaced under the same path. */
static void test_stat_mapping(void)
{
	char path[] = "/tmp/scorch-test-procmaps-XXXXXX", other[64];
	struct procmaps m;
	const struct procmaps_entry *e;
	struct stat st, want;
	char data[64] = "another file";
	void *p;
	int fd;

	CHECK_EQ_INT(procmaps_read_exec(0, &m, NULL), 0);
	e = procmaps_find(&m, (uint64_t)(uintptr_t)&test_stat_mapping);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ_INT(procmaps_stat(e, &st), 0);
		CHECK(stat("/proc/self/exe", &want) == 0 && want.st_ino == st.st_ino &&
		      want.st_dev == st.st_dev);
	}
	procmaps_release(&m);

	p = map_temp(path, 4096, PROT_READ | PROT_EXEC, 0);
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	CHECK_EQ_INT(procmaps_read_exec(0, &m, NULL), 0);
	e = procmaps_find(&m, (uint64_t)(uintptr_t)p);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ_INT(procmaps_stat(e, &st), 0);
		/* replaced: the path now leads to another inode */
		snprintf(other, sizeof(other), "%s.new", path);
		fd = open(other, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		CHECK(fd >= 0 && write(fd, data, sizeof(data)) == (ssize_t)sizeof(data));
		if (fd >= 0)
			close(fd);
		CHECK(rename(other, path) == 0);
		CHECK_EQ_INT(procmaps_stat(e, &st), -1);
	}
	procmaps_release(&m);
	unlink(path);
	/* deleted: no path to reach it by */
	CHECK_EQ_INT(procmaps_read_exec(0, &m, NULL), 0);
	e = procmaps_find(&m, (uint64_t)(uintptr_t)p);
	CHECK(e && e->deleted);
	if (e)
		CHECK_EQ_INT(procmaps_stat(e, &st), -1);
	procmaps_release(&m);
	munmap(p, 4096);
}

static void test_read_exec(void)
{
	read_exec_as_text(0);
	read_exec_as_text(1);
}

int main(void)
{
	RUN(test_parse_sample);
	RUN(test_malformed);
	RUN(test_self_maps);
	RUN(test_open_deleted);
	RUN(test_read_exec);
	RUN(test_stat_mapping);
	return test_summary();
}
