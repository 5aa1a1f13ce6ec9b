/* test_table_cache.c: the unwind table cache (agent/table_cache.c): the compact form, hits in
 * memory and on disk, corrupt or other-version files ignored and rebuilt, bounded memory and
 * disk, failures while writing; and the unwinder on top of it: a table is built once per file,
 * across unwinders sharing a directory and after its slice of the table space was evicted. */
#include "agent/elf.h"
#include "agent/table_cache.h"
#include "agent/unwind_table.h"
#include "agent/unwinder.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[] = "/tmp/scorch-tcache.XXXXXX";
static int dir_seq;

/* A fresh directory under tmpdir for one test. */
static char *new_dir(void)
{
	return xasprintf("%s/d%d", tmpdir, ++dir_seq);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A valid table of n entries: rules cycling through a few kinds (big frames among them), the
 * last one invalid. */
static struct unwind_entry *make_table(size_t n, uint32_t seed)
{
	struct unwind_entry *e = xcalloc(n, sizeof(*e));
	uint32_t pc = seed % 16;
	size_t i;

	for (i = 0; i < n; i++) {
		e[i].pc = pc;
		e[i].kind = i + 1 == n ? UNW_INVALID : (uint8_t)(UNW_CFA_RSP + (i + seed) % 2);
		e[i].off = e[i].kind == UNW_INVALID ? 0 : (uint16_t)(8 * (1 + (i * 7 + seed) % 9));
		e[i].rbp = e[i].kind == UNW_CFA_RBP ? -2 : 0;
		if (i % 50 == 7 && i + 1 < n) /* now and then a big frame (UNW_F_BIG) */
			e[i].kind |= UNW_F_BIG | 0x10;
		pc += 1 + (uint32_t)((i * 2654435761u + seed) % 300);
	}
	return e;
}

static struct table_info info_of(size_t n, uint64_t base)
{
	struct table_info info;

	memset(&info, 0, sizeof(info));
	info.kind = TABLE_ENTRIES;
	info.count = (uint32_t)n;
	info.base = base;
	info.sources = UT_SRC_EH_FRAME;
	return info;
}

static int same_entries(const struct table_rec *r, const struct unwind_entry *e, size_t n)
{
	struct unwind_entry *out = xcalloc(n, sizeof(*out));
	int ok = table_rec_decode(r, out, n) == 0 && !memcmp(out, e, n * sizeof(*e));

	xfree(out);
	return ok;
}

static char *file_path(const char *dir, const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static uint64_t dir_bytes(const char *dir, int *files)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t total = 0;

	*files = 0;
	while (d && (de = readdir(d))) {
		struct stat sb;
		char *p = file_path(dir, de->d_name);

		if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
			total += (uint64_t)sb.st_size;
			(*files)++;
		}
		xfree(p);
	}
	if (d)
		closedir(d);
	return total;
}

static void test_compact_roundtrip(void)
{
	struct unwind_entry *e = make_table(5000, 7), *out = xcalloc(5000, sizeof(*out));
	struct elf_file *ef;
	struct unwind_table t;
	struct errmsg err;
	uint32_t nrules;
	size_t size, cut;
	uint8_t *p = table_cache_encode(e, 5000, &size, &nrules);

	CHECK(p != NULL);
	CHECK_EQ_INT(table_cache_decode(p, size, nrules, 5000, out), 0);
	CHECK(!memcmp(out, e, 5000 * sizeof(*e)));
	/* every truncation, and the wrong count or rule count, is refused */
	for (cut = 0; cut < size; cut += 1 + cut / 64)
		CHECK_EQ_INT(table_cache_decode(p, cut, nrules, 5000, out), -EINVAL);
	CHECK_EQ_INT(table_cache_decode(p, size, nrules, 4999, out), -EINVAL);
	CHECK_EQ_INT(table_cache_decode(p, size, nrules + 1, 5000, out), -EINVAL);
	xfree(p);
	/* tables the cache must not take: unsorted, no end marker, a bad kind */
	e[10].pc = e[9].pc;
	CHECK(table_cache_encode(e, 5000, &size, &nrules) == NULL);
	xfree(e);
	e = make_table(10, 1);
	e[9].kind = UNW_CFA_RSP;
	CHECK(table_cache_encode(e, 10, &size, &nrules) == NULL);
	e[9].kind = 0x4f;
	CHECK(table_cache_encode(e, 10, &size, &nrules) == NULL);
	xfree(e);
	xfree(out);

	/* a real table: about 2 bytes per entry instead of 8 */
	if (elf_open("/lib/x86_64-linux-gnu/libc.so.6", &ef, &err))
		SKIP("no libc.so.6: %s", err.msg);
	CHECK_EQ_INT(unwind_table_build(ef, NULL, NULL, 0, &t, &err), 0);
	p = table_cache_encode(t.entries, t.count, &size, &nrules);
	CHECK(p != NULL);
	CHECK(size < t.count * 3);
	out = xcalloc(t.count, sizeof(*out));
	CHECK_EQ_INT(table_cache_decode(p, size, nrules, t.count, out), 0);
	CHECK(!memcmp(out, t.entries, t.count * sizeof(*out)));
	xfree(out);
	xfree(p);
	unwind_table_release(&t);
	elf_close(ef);
}

static void test_memory_hit(void)
{
	struct unwind_entry *e = make_table(300, 3);
	struct table_info info = info_of(300, 0x4000), got;
	struct table_cache_stats st;
	struct table_cache *c = table_cache_new(NULL, NULL);
	const struct table_rec *r;

	CHECK(table_cache_get(c, "b:aa", &got) == NULL);
	CHECK_EQ_INT(table_cache_put(c, "b:aa", &info, e), 0);
	r = table_cache_get(c, "b:aa", &got);
	CHECK(r != NULL);
	CHECK_EQ_INT(got.count, 300);
	CHECK_EQ_INT(got.base, 0x4000);
	CHECK_EQ_INT(got.kind, TABLE_ENTRIES);
	CHECK(r && same_entries(r, e, 300));
	/* the outcome of a file without a table is cached too */
	memset(&info, 0, sizeof(info));
	info.kind = TABLE_FP;
	CHECK_EQ_INT(table_cache_put(c, "h:0123", &info, NULL), 0);
	CHECK(table_cache_get(c, "h:0123", &got) != NULL);
	CHECK_EQ_INT(got.kind, TABLE_FP);
	CHECK(table_cache_get(c, "b:ab", &got) == NULL);
	table_cache_stats(c, &st);
	CHECK_EQ_INT(st.hits, 2);
	CHECK_EQ_INT(st.misses, 2);
	CHECK_EQ_INT(st.records, 2);
	CHECK_EQ_INT(st.disk, 0);
	table_cache_free(c);
	xfree(e);
}

static void test_disk_hit(void)
{
	char *dir = new_dir(), *p;
	struct table_cache_opts o = { .dir = dir };
	struct unwind_entry *e = make_table(2000, 5);
	struct table_info info = info_of(2000, 0x1000), got;
	struct table_cache_stats st;
	struct table_cache *a, *b;
	const struct table_rec *r;
	struct stat sb;
	struct errmsg err;

	a = table_cache_new(&o, &err);
	CHECK(a != NULL);
	CHECK_EQ_INT(table_cache_put(a, "b:0f0f+py", &info, e), 0);
	table_cache_free(a);
	CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
	p = file_path(dir, "b-0f0f+py.tbl");
	CHECK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	xfree(p);
	b = table_cache_new(&o, &err);
	r = table_cache_get(b, "b:0f0f+py", &got);
	CHECK(r != NULL);
	CHECK(r && same_entries(r, e, 2000));
	CHECK_EQ_INT(got.base, 0x1000);
	/* another variant of the same file is another table */
	CHECK(table_cache_get(b, "b:0f0f", &got) == NULL);
	table_cache_stats(b, &st);
	CHECK_EQ_INT(st.disk_hits, 1);
	CHECK_EQ_INT(st.misses, 1);
	CHECK_EQ_INT(st.bad_files, 0);
	CHECK(st.disk_bytes > 128);
	table_cache_free(b);
	xfree(e);
	xfree(dir);
}

static uint8_t *read_whole(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat sb;
	uint8_t *buf;

	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = xmalloc((size_t)sb.st_size + 1);
	*len = (size_t)read(fd, buf, (size_t)sb.st_size);
	close(fd);
	return buf;
}

static void write_whole(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd >= 0) {
		CHECK_EQ_INT(write(fd, buf, len), len);
		close(fd);
	}
}

/* Put a table with one cache, damage its file with damage(), then look it up with a fresh
 * cache: it must be ignored (counted, deleted), and a rebuilt table put then hits. */
static void damaged_file(const char *what, void (*damage)(uint8_t *buf, size_t *len),
			 int expect_rc)
{
	char *dir = new_dir(), *p;
	struct table_cache_opts o = { .dir = dir };
	struct unwind_entry *e = make_table(700, 9);
	struct table_info info = info_of(700, 0x2000), got;
	struct table_cache_stats st;
	struct table_cache *a, *b;
	size_t len, off;
	uint32_t nrules;
	uint8_t *buf;

	a = table_cache_new(&o, NULL);
	CHECK_EQ_INT(table_cache_put(a, "b:cafe", &info, e), 0);
	table_cache_free(a);
	p = file_path(dir, "b-cafe.tbl");
	buf = read_whole(p, &len);
	CHECK(buf != NULL);
	if (!buf)
		return;
	CHECK_EQ_INT(table_cache_check_file(buf, len, "b:cafe", &got, &off, &nrules), 0);
	damage(buf, &len);
	if (expect_rc)
		CHECK_EQ_INT(table_cache_check_file(buf, len, "b:cafe", &got, &off, &nrules),
			     expect_rc);
	write_whole(p, buf, len);
	xfree(buf);
	b = table_cache_new(&o, NULL);
	if (table_cache_get(b, "b:cafe", &got))
		fprintf(stderr, "  (%s was accepted)\n", what);
	table_cache_stats(b, &st);
	CHECK_EQ_INT(st.bad_files, 1);
	CHECK_EQ_INT(st.disk_hits, 0);
	CHECK(access(p, F_OK) < 0); /* deleted */
	/* rebuilt and written again: the next cache hits */
	CHECK_EQ_INT(table_cache_put(b, "b:cafe", &info, e), 0);
	table_cache_free(b);
	b = table_cache_new(&o, NULL);
	CHECK(table_cache_get(b, "b:cafe", &got) != NULL);
	table_cache_free(b);
	xfree(p);
	xfree(e);
	xfree(dir);
}

static void flip_payload(uint8_t *buf, size_t *len)
{
	buf[*len - 3] ^= 0x40;
}

static void flip_header(uint8_t *buf, size_t *len)
{
	(void)len;
	buf[100] ^= 1; /* the base */
}

static void truncate_payload(uint8_t *buf, size_t *len)
{
	(void)buf;
	*len -= 5;
}

static void truncate_header(uint8_t *buf, size_t *len)
{
	(void)buf;
	*len = 60;
}

static void empty_file(uint8_t *buf, size_t *len)
{
	(void)buf;
	*len = 0;
}

/* Valid checksums around a payload that does not decode: a hostile file. */
static void forge_payload(uint8_t *buf, size_t *len)
{
	uint32_t c;

	memset(buf + 128 + 4 * buf[108], 0xff, 8);
	c = (uint32_t)crc32(0, buf + 128, (uInt)(*len - 128));
	memcpy(buf + 120, &c, 4);
	c = (uint32_t)crc32(0, buf, 124);
	memcpy(buf + 124, &c, 4);
}

static void other_table_version(uint8_t *buf, size_t *len)
{
	uint32_t v = UNWIND_TABLE_VERSION + 1, c;

	(void)len;
	memcpy(buf + 12, &v, 4);
	c = (uint32_t)crc32(0, buf, 124);
	memcpy(buf + 124, &c, 4);
}

static void other_format(uint8_t *buf, size_t *len)
{
	uint32_t v = TABLE_CACHE_FORMAT + 1, c;

	(void)len;
	memcpy(buf + 8, &v, 4);
	c = (uint32_t)crc32(0, buf, 124);
	memcpy(buf + 124, &c, 4);
}

static void other_key(uint8_t *buf, size_t *len)
{
	uint32_t c;

	(void)len;
	buf[16 + 2] = 'd'; /* b:dafe: a file renamed, or a hash clash of names */
	c = (uint32_t)crc32(0, buf, 124);
	memcpy(buf + 124, &c, 4);
}

static void test_corrupt_file_ignored(void)
{
	damaged_file("a flipped payload byte", flip_payload, -EBADMSG);
	damaged_file("a flipped header byte", flip_header, -EBADMSG);
	damaged_file("a truncated payload", truncate_payload, -EBADMSG);
	damaged_file("a truncated header", truncate_header, -EBADMSG);
	damaged_file("an empty file", empty_file, -EBADMSG);
	damaged_file("a forged payload", forge_payload, -EBADMSG);
	damaged_file("another key", other_key, -EBADMSG);
}

static void test_version_mismatch_rebuilt(void)
{
	damaged_file("another table version", other_table_version, -EPROTO);
	damaged_file("another file format", other_format, -EPROTO);
}

static void test_bounded_memory(void)
{
	struct unwind_entry *e = make_table(1000, 11);
	struct table_info info = info_of(1000, 0), got;
	struct table_cache_opts o = { .max_bytes = 8000 };
	struct table_cache_stats st;
	struct table_cache *c = table_cache_new(&o, NULL);
	char key[32];
	int i;

	for (i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "b:%04d", i);
		CHECK_EQ_INT(table_cache_put(c, key, &info, e), 0);
		table_cache_stats(c, &st);
		CHECK(st.bytes <= 8000);
	}
	CHECK(st.evictions > 0);
	CHECK(st.records >= 1 && st.records < 20);
	/* the most recent stay, the oldest went */
	CHECK(table_cache_get(c, "b:0019", &got) != NULL);
	CHECK(table_cache_get(c, "b:0000", &got) == NULL);
	/* a use makes a record recent: it outlives newer ones */
	table_cache_stats(c, &st);
	snprintf(key, sizeof(key), "b:%04llu", (unsigned long long)(20 - st.records));
	CHECK(table_cache_get(c, key, &got) != NULL);
	CHECK_EQ_INT(table_cache_put(c, "b:new", &info, e), 0);
	CHECK(table_cache_get(c, key, &got) != NULL);
	/* a record larger than the whole budget is not held */
	xfree(e);
	e = make_table(20000, 1);
	info = info_of(20000, 0);
	CHECK_EQ_INT(table_cache_put(c, "b:big", &info, e), 0);
	CHECK(table_cache_get(c, "b:big", &got) == NULL);
	table_cache_free(c);
	xfree(e);
}

static void test_bounded_disk(void)
{
	char *dir = new_dir(), key[32];
	struct unwind_entry *e = make_table(1000, 13);
	struct table_info info = info_of(1000, 0), got;
	struct table_cache_opts o = { .dir = dir, .max_disk_bytes = 12000 };
	struct table_cache_stats st;
	struct table_cache *c = table_cache_new(&o, NULL);
	struct timespec ts[2];
	int i, files;

	for (i = 0; i < 12; i++) {
		char *p, name[32];

		snprintf(key, sizeof(key), "b:%04d", i);
		CHECK_EQ_INT(table_cache_put(c, key, &info, e), 0);
		table_cache_flush(c);
		/* distinct ages: file i was used at t = 1000 + i */
		snprintf(name, sizeof(name), "b-%04d.tbl", i);
		p = file_path(dir, name);
		ts[0].tv_sec = ts[1].tv_sec = 1000 + i;
		ts[0].tv_nsec = ts[1].tv_nsec = 0;
		utimensat(AT_FDCWD, p, ts, 0);
		xfree(p);
		CHECK(dir_bytes(dir, &files) <= 12000);
	}
	table_cache_stats(c, &st);
	CHECK(st.disk_evictions > 0);
	CHECK(st.disk_bytes <= 12000);
	CHECK_EQ_INT(st.disk_bytes, dir_bytes(dir, &files));
	table_cache_free(c);
	/* the newest are on disk, the oldest are gone */
	c = table_cache_new(&o, NULL);
	CHECK(table_cache_get(c, "b:0011", &got) != NULL);
	CHECK(table_cache_get(c, "b:0000", &got) == NULL);
	table_cache_free(c);
	xfree(e);
	xfree(dir);
}

/* ---- failures while writing */
static int fail_at; /* 1: write, 2: fsync, 3: rename */

static ssize_t bad_write(int fd, const void *buf, size_t len)
{
	if (fail_at == 1) {
		/* half of it, then the disk is full */
		static int calls;

		if (calls++ % 2 == 0)
			return write(fd, buf, len / 2 ? len / 2 : 1);
		errno = ENOSPC;
		return -1;
	}
	return write(fd, buf, len);
}

static int bad_fsync(int fd)
{
	if (fail_at == 2) {
		errno = EIO;
		return -1;
	}
	return fsync(fd);
}

static int bad_rename(int a, const char *b, int c, const char *d)
{
	if (fail_at == 3) {
		errno = EIO;
		return -1; /* as if we crashed before the rename */
	}
	return renameat(a, b, c, d);
}

static void test_failed_writes_lose_nothing(void)
{
	static const struct table_cache_io io = { bad_write, bad_fsync, bad_rename };
	char *dir = new_dir();
	struct table_cache_opts good = { .dir = dir }, bad = { .dir = dir, .io = &io };
	struct unwind_entry *v1 = make_table(500, 21), *v2 = make_table(600, 22);
	struct table_info i1 = info_of(500, 0x100), i2 = info_of(600, 0x200), got;
	struct table_cache_stats st;
	struct table_cache *c;
	const struct table_rec *r;
	int files;

	c = table_cache_new(&good, NULL);
	CHECK_EQ_INT(table_cache_put(c, "b:01", &i1, v1), 0);
	table_cache_free(c);
	for (fail_at = 1; fail_at <= 3; fail_at++) {
		c = table_cache_new(&bad, NULL);
		CHECK_EQ_INT(table_cache_put(c, "b:01", &i2, v2), 0);
		CHECK_EQ_INT(table_cache_put(c, "b:02", &i2, v2), 0);
		table_cache_flush(c);
		table_cache_stats(c, &st);
		CHECK_EQ_INT(st.disk_errors, 2);
		CHECK_EQ_INT(st.disk_writes, 0);
		/* memory still has the new tables */
		r = table_cache_get(c, "b:02", &got);
		CHECK(r && same_entries(r, v2, 600));
		table_cache_free(c);
		/* the disk has the old record, whole, and no temporary file */
		dir_bytes(dir, &files);
		CHECK_EQ_INT(files, 1);
		c = table_cache_new(&good, NULL);
		r = table_cache_get(c, "b:01", &got);
		CHECK(r && same_entries(r, v1, 500));
		CHECK(table_cache_get(c, "b:02", &got) == NULL);
		table_cache_free(c);
	}
	fail_at = 0;
	xfree(v1);
	xfree(v2);
	xfree(dir);
}

static void test_directory_checks(void)
{
	char *dir = new_dir(), *p;
	struct table_cache_opts o = { .dir = dir };
	struct table_cache *c;
	struct errmsg err;
	struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	int files;

	/* created with its parents, 0700 */
	p = xasprintf("%s/a/b", dir);
	o.dir = p;
	c = table_cache_new(&o, &err);
	CHECK(c != NULL);
	table_cache_free(c);
	xfree(p);
	o.dir = dir;
	/* a temporary file left by a crash is removed; a fresh one (another writer) is not */
	p = file_path(dir, ".tmp-1-1-b-01.tbl");
	write_whole(p, (const uint8_t *)"x", 1);
	utimensat(AT_FDCWD, p, old, 0);
	xfree(p);
	p = file_path(dir, ".tmp-2-1-b-02.tbl");
	write_whole(p, (const uint8_t *)"x", 1);
	xfree(p);
	c = table_cache_new(&o, &err);
	table_cache_free(c);
	dir_bytes(dir, &files);
	CHECK_EQ_INT(files, 1);
	/* others may write to it: refused */
	chmod(dir, 0777);
	c = table_cache_new(&o, &err);
	CHECK(c == NULL);
	CHECK(c == NULL && strstr(err.msg, "writable by others") != NULL);
	chmod(dir, 0700);
	/* another user's: refused (needs root to give it away) */
	if (geteuid() == 0 && chown(dir, 65534, 65534) == 0) {
		c = table_cache_new(&o, &err);
		CHECK(c == NULL);
		chown(dir, 0, 0);
	}
	/* a file where the directory should be */
	p = file_path(dir, "file");
	write_whole(p, (const uint8_t *)"x", 1);
	o.dir = p;
	CHECK(table_cache_new(&o, &err) == NULL);
	xfree(p);
	xfree(dir);
}

/* ---- the unwinder on top */

static void test_unwinder_builds_once_per_directory(void)
{
	char *dir = new_dir();
	struct unwinder_opts o;
	struct unwinder_stats a, b;
	struct unwinder *u;
	struct errmsg err;

	memset(&o, 0, sizeof(o));
	o.cache_dir = dir;
	u = unwinder_new(NULL, &o, &err);
	CHECK_EQ_INT(unwinder_track_pid(u, getpid()), 0);
	unwinder_stats(u, &a);
	unwinder_free(u);
	CHECK(a.table_builds >= 3); /* this program, libc, ld.so, ... */
	CHECK_EQ_INT(a.cache.puts, a.table_builds);
	u = unwinder_new(NULL, &o, &err);
	CHECK_EQ_INT(unwinder_track_pid(u, getpid()), 0);
	unwinder_stats(u, &b);
	CHECK_EQ_INT(b.table_builds, 0);
	CHECK_EQ_INT(b.cache.disk_hits, a.table_builds);
	CHECK_EQ_INT(b.entries_used, a.entries_used);
	unwinder_free(u);
	xfree(dir);
}

/* A table evicted from the table space comes back from the cache, not from its ELF file. */
static void test_unwinder_eviction_republishes(void)
{
	struct unwinder_opts o;
	struct unwinder_stats st;
	struct unwinder *u;
	struct errmsg err;
	uint64_t self_entries, both;
	pid_t child;

	child = fork();
	if (child == 0) {
		execl("/bin/sleep", "sleep", "20", (char *)NULL);
		_exit(127);
	}
	CHECK(child > 0);
	CHECK_EQ_INT(test_wait_exec(child, "/bin/sleep"), 0);
	memset(&o, 0, sizeof(o));
	u = unwinder_new(NULL, &o, &err);
	CHECK_EQ_INT(unwinder_track_pid(u, getpid()), 0);
	unwinder_stats(u, &st);
	self_entries = st.entries_used;
	if (unwinder_track_pid(u, child)) {
		unwinder_free(u);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		SKIP("cannot read the child's mappings");
	}
	unwinder_stats(u, &st);
	both = st.entries_used;
	unwinder_free(u);
	CHECK(both > self_entries); /* sleep has a table of its own */

	/* room for this process's tables and half of the child's own: the child's evict some of
	 * ours, ours then evict the child's */
	o.max_entries = (uint32_t)(self_entries + (both - self_entries) / 2);
	u = unwinder_new(NULL, &o, &err);
	CHECK_EQ_INT(unwinder_track_pid(u, getpid()), 0);
	unwinder_forget_pid(u, getpid());
	CHECK_EQ_INT(unwinder_track_pid(u, child), 0);
	unwinder_forget_pid(u, child);
	CHECK_EQ_INT(unwinder_track_pid(u, getpid()), 0);
	unwinder_stats(u, &st);
	CHECK(st.evictions > 0);
	CHECK(st.tables_from_cache > 0);
	CHECK_EQ_INT(st.table_rebuilds, 0);
	CHECK_EQ_INT(st.cap_hits, 0);
	CHECK_EQ_INT(st.entries_used, self_entries);
	unwinder_free(u);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* A sample record of pid without user frames (what unwinder_fix_sample() sees first). */
static void send_sample(struct unwinder *u, int pid)
{
	struct {
		struct event_hdr hdr;
		struct sample_body body;
	} rec;
	const struct event_hdr *out;
	size_t out_size;

	memset(&rec, 0, sizeof(rec));
	rec.hdr.type = EVENT_SAMPLE;
	rec.hdr.version = SCORCH_EVENT_VERSION;
	rec.hdr.size = sizeof(rec);
	rec.hdr.pid = rec.hdr.tid = (uint32_t)pid;
	CHECK_EQ_INT(unwinder_fix_sample(u, &rec.hdr, sizeof(rec), &out, &out_size), 0);
}

/* -a: an executable whose processes get sampled is read at its exec, one whose processes are
 * not is left alone (a hash lookup per exec). */
static void test_exec_publish_learns(void)
{
	struct {
		struct event_hdr hdr;
		struct exec_body body;
	} ev;
	struct unwinder_stats st;
	struct unwinder *u;
	struct errmsg err;
	struct stat sb;
	pid_t child;
	int i, hot = 0;

	if (stat("/bin/sleep", &sb) < 0)
		SKIP("no /bin/sleep");
	child = fork();
	if (child == 0) {
		execl("/bin/sleep", "sleep", "20", (char *)NULL);
		_exit(127);
	}
	CHECK_EQ_INT(test_wait_exec(child, "/bin/sleep"), 0);
	memset(&ev, 0, sizeof(ev));
	ev.hdr.type = EVENT_EXEC;
	ev.hdr.version = SCORCH_EVENT_VERSION;
	ev.hdr.size = sizeof(ev);
	ev.hdr.pid = ev.hdr.tid = (uint32_t)child;
	ev.body.dev_major = major(sb.st_dev);
	ev.body.dev_minor = minor(sb.st_dev);
	ev.body.ino = sb.st_ino;
	u = unwinder_new(NULL, NULL, &err);
	/* an executable never seen: nothing to do */
	CHECK_EQ_INT(unwinder_exec(u, &ev.hdr, sizeof(ev)), 0);
	/* seen (read once), then started again: not yet worth reading at exec ... */
	CHECK_EQ_INT(unwinder_track_pid(u, child), 0);
	CHECK_EQ_INT(unwinder_exec(u, &ev.hdr, sizeof(ev)), 0);
	unwinder_stats(u, &st);
	CHECK_EQ_INT(st.exec_hot, 0);
	/* ... until its processes are sampled: then its next exec is read at once */
	send_sample(u, child);
	unwinder_stats(u, &st);
	CHECK_EQ_INT(st.exec_hot, 1);
	CHECK_EQ_INT(unwinder_exec(u, &ev.hdr, sizeof(ev)), 1);
	unwinder_stats(u, &st);
	CHECK_EQ_INT(st.exec_publishes, 1);
	/* a second sample of the same process counts once: 2 of 3 processes sampled */
	send_sample(u, child);
	send_sample(u, child);
	/* processes that stop being sampled: it goes cold when fewer than a quarter were (after
	 * the 9th process), and stays so */
	for (i = 0; i < 12; i++)
		hot += unwinder_exec(u, &ev.hdr, sizeof(ev));
	unwinder_stats(u, &st);
	CHECK_EQ_INT(st.exec_hot, 0);
	CHECK_EQ_INT(hot, 6); /* processes 3 to 8 */
	CHECK_EQ_INT(unwinder_exec(u, &ev.hdr, sizeof(ev)), 0);
	/* a truncated record says nothing */
	CHECK_EQ_INT(unwinder_exec(u, &ev.hdr, sizeof(ev.hdr)), 0);
	unwinder_free(u);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_compact_roundtrip);
	RUN(test_memory_hit);
	RUN(test_disk_hit);
	RUN(test_corrupt_file_ignored);
	RUN(test_version_mismatch_rebuilt);
	RUN(test_bounded_memory);
	RUN(test_bounded_disk);
	RUN(test_failed_writes_lose_nothing);
	RUN(test_directory_checks);
	RUN(test_unwinder_builds_once_per_directory);
	RUN(test_unwinder_eviction_republishes);
	RUN(test_exec_publish_learns);
	nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return test_summary();
}
