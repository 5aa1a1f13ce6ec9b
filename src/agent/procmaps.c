/* procmaps.c: the /proc/PID/maps parser and mapping opener (see procmaps.h). The parser is
 * hand-written (no sscanf) so every field is checked for range and form. */
#include "agent/procmaps.h"
#include "agent/elf.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Parse hex digits at *p (up to end); at least one digit, no overflow. */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (s < end) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (v >> 60)
			return -1;
		v = v << 4 | (uint64_t)d;
		digits++;
		s++;
	}
	if (!digits)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

static int parse_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
		digits++;
		s++;
	}
	if (!digits)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && **p == ' ')
		(*p)++;
}

static int classify(const char *path, size_t len)
{
	if (len == 0)
		return PROCMAPS_ANON;
	if (path[0] != '[')
		return PROCMAPS_FILE;
	if (len == 6 && !memcmp(path, "[vdso]", 6))
		return PROCMAPS_VDSO;
	if (len == 6 && !memcmp(path, "[heap]", 6))
		return PROCMAPS_HEAP;
	if (len >= 6 && !memcmp(path, "[stack", 6))
		return PROCMAPS_STACK;
	return PROCMAPS_SPECIAL;
}

/* A mapping's path of plen bytes: " (deleted)" taken off (and flagged), the kind set from
 * the rest. Returns the length kept. */
static size_t set_path_kind(struct procmaps_entry *e, const char *path, size_t plen)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;

	if (plen > dlen && !memcmp(path + plen - dlen, deleted, dlen)) {
		plen -= dlen;
		e->deleted = 1;
	}
	e->kind = (uint8_t)classify(path, plen);
	return plen;
}

/* Entries and their paths as they are read (the path pool moves while it grows: offsets until
 * the end). */
struct builder {
	struct buf pool;
	size_t *offs, cap, offs_cap;
};

static void builder_init(struct builder *b, struct procmaps *out)
{
	memset(out, 0, sizeof(*out));
	memset(b, 0, sizeof(*b));
	b->pool = (struct buf)BUF_INIT(PROCMAPS_MAX_BYTES + PROCMAPS_MAX_ENTRIES);
}

/* Add e with its path; 0 or a negative errno (explained in err). */
static int builder_add(struct builder *b, struct procmaps *out, const struct procmaps_entry *e,
		       const char *path, size_t plen, struct errmsg *err)
{
	if (out->n >= PROCMAPS_MAX_ENTRIES)
		return errmsg_set(err, -E2BIG, "more than %u mappings", PROCMAPS_MAX_ENTRIES);
	ALLOC_GROW(out->v, out->n + 1, b->cap);
	ALLOC_GROW(b->offs, out->n + 1, b->offs_cap);
	b->offs[out->n] = b->pool.len;
	if (buf_append(&b->pool, path, plen) < 0 || buf_putc(&b->pool, 0) < 0)
		return errmsg_set(err, -ENOMEM, "out of memory reading the mappings");
	out->v[out->n++] = *e;
	return 0;
}

/* Hand the paths to out (rc 0), or free everything (rc < 0). Returns rc. */
static int builder_finish(struct builder *b, struct procmaps *out, int rc)
{
	size_t i;

	if (rc == 0) {
		out->pool = buf_detach(&b->pool, NULL);
		for (i = 0; i < out->n; i++)
			out->v[i].path = out->pool ? out->pool + b->offs[i] : "";
	}
	buf_release(&b->pool);
	xfree(b->offs);
	if (rc < 0)
		procmaps_release(out);
	return rc;
}

/* Parse one line [s, end) into e; its path is [*path, *path + *plen). */
static int parse_line(const char *s, const char *end, struct procmaps_entry *e, const char **path,
		      size_t *plen)
{
	uint64_t major, minor;

	memset(e, 0, sizeof(*e));
	if (parse_hex(&s, end, &e->start) || expect(&s, end, '-') || parse_hex(&s, end, &e->end) ||
	    expect(&s, end, ' '))
		return -1;
	if (e->end < e->start || end - s < 4)
		return -1;
	if ((s[0] != 'r' && s[0] != '-') || (s[1] != 'w' && s[1] != '-') ||
	    (s[2] != 'x' && s[2] != '-') || (s[3] != 's' && s[3] != 'p'))
		return -1;
	e->perms = (s[0] == 'r' ? PROCMAPS_R : 0) | (s[1] == 'w' ? PROCMAPS_W : 0) |
		   (s[2] == 'x' ? PROCMAPS_X : 0) | (s[3] == 's' ? PROCMAPS_SHARED : 0);
	s += 4;
	if (expect(&s, end, ' ') || parse_hex(&s, end, &e->offset) || expect(&s, end, ' ') ||
	    parse_hex(&s, end, &major) || expect(&s, end, ':') || parse_hex(&s, end, &minor) ||
	    expect(&s, end, ' ') || parse_dec(&s, end, &e->inode))
		return -1;
	if (major > UINT32_MAX || minor > UINT32_MAX)
		return -1;
	e->dev_major = (uint32_t)major;
	e->dev_minor = (uint32_t)minor;
	if (s < end && *s != ' ')
		return -1;
	skip_spaces(&s, end);
	*path = s;
	*plen = (size_t)(end - s);
	if (*plen > 4096)
		return -1;
	*plen = set_path_kind(e, *path, *plen);
	if (memchr(*path, 0, *plen))
		return -1;
	return 0;
}

int procmaps_parse(const char *text, size_t len, struct procmaps *out, struct errmsg *err)
{
	struct builder b;
	const char *p = text, *end = text + len;
	int rc = 0;

	builder_init(&b, out);
	while (p < end && rc == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;
		struct procmaps_entry e;
		const char *path;
		size_t plen;

		if (line_end > p) {
			if (parse_line(p, line_end, &e, &path, &plen) < 0)
				out->bad_lines++;
			else
				rc = builder_add(&b, out, &e, path, plen, err);
		}
		p = nl ? nl + 1 : end;
	}
	return builder_finish(&b, out, rc);
}

int procmaps_read(int pid, struct procmaps *out, struct errmsg *err)
{
	struct buf text = BUF_INIT(PROCMAPS_MAX_BYTES);
	char path[64];
	int rc;

	memset(out, 0, sizeof(*out));
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	rc = buf_read_file(&text, path);
	if (rc == -ENOENT)
		rc = -ESRCH;
	if (rc < 0)
		errmsg_set(err, rc, "cannot read '%s': %s", path, strerror(-rc));
	else
		rc = procmaps_parse(text.data ? text.data : "", text.len, out, err);
	buf_release(&text);
	return rc;
}

/* The kernel's struct procmap_query (include/uapi/linux/fs.h, Linux 6.11), spelled out here so
 * that the build does not need new kernel headers. */
struct maps_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
_Static_assert(sizeof(struct maps_query) == 104, "struct procmap_query is 104 bytes");
#define MAPS_QUERY _IOWR('f', 17, struct maps_query)
#define MAPS_Q_READABLE 0x01
#define MAPS_Q_WRITABLE 0x02
#define MAPS_Q_EXECUTABLE 0x04
#define MAPS_Q_SHARED 0x08
#define MAPS_Q_COVERING_OR_NEXT 0x10

static int query_unsupported; /* set once the kernel says it has no PROCMAP_QUERY */

int procmaps_query_supported(void)
{
	return !__atomic_load_n(&query_unsupported, __ATOMIC_RELAXED);
}

void procmaps_query_use(int on)
{
	__atomic_store_n(&query_unsupported, !on, __ATOMIC_RELAXED);
}

/* One executable mapping after another. 0, -ENOTTY/-EINVAL when the kernel has no such
 * query (nothing read then), or another negative errno. */
static int query_exec(int fd, struct procmaps *out, struct errmsg *err)
{
	struct builder b;
	uint64_t addr = 0;
	char name[4096 + 1];
	int rc = 0;

	builder_init(&b, out);
	do {
		struct maps_query q;
		struct procmaps_entry e;
		size_t plen;

		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_flags = MAPS_Q_EXECUTABLE | MAPS_Q_COVERING_OR_NEXT;
		q.query_addr = addr;
		q.vma_name_size = sizeof(name) - 1;
		q.vma_name_addr = (uint64_t)(uintptr_t)name;
		if (ioctl(fd, MAPS_QUERY, &q) < 0) {
			if (errno == ENOENT) /* no executable mapping at or above addr */
				break;
			rc = -errno;
			if (rc != -ENOTTY && rc != -EINVAL) /* else the caller reads the text */
				errmsg_set(err, rc, "cannot query the mappings: %s", strerror(-rc));
			break;
		}
		if (q.vma_end <= q.vma_start || q.vma_start < addr) {
			rc = errmsg_set(err, -EIO, "the kernel answered a mapping out of order");
			break;
		}
		addr = q.vma_end; /* 0 past the last page of the address space: the end */
		memset(&e, 0, sizeof(e));
		e.start = q.vma_start;
		e.end = q.vma_end;
		e.offset = q.vma_offset;
		e.inode = q.inode;
		e.dev_major = q.dev_major;
		e.dev_minor = q.dev_minor;
		e.perms = (q.vma_flags & MAPS_Q_READABLE ? PROCMAPS_R : 0) |
			  (q.vma_flags & MAPS_Q_WRITABLE ? PROCMAPS_W : 0) |
			  (q.vma_flags & MAPS_Q_EXECUTABLE ? PROCMAPS_X : 0) |
			  (q.vma_flags & MAPS_Q_SHARED ? PROCMAPS_SHARED : 0);
		name[sizeof(name) - 1] = '\0';
		plen = q.vma_name_size ? strnlen(name, sizeof(name) - 1) : 0;
		plen = set_path_kind(&e, name, plen);
		rc = builder_add(&b, out, &e, name, plen, err);
	} while (rc == 0 && addr);
	return builder_finish(&b, out, rc);
}

int procmaps_read_exec(int pid, struct procmaps *out, struct errmsg *err)
{
	char path[64];
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if (procmaps_query_supported()) {
		if (pid)
			snprintf(path, sizeof(path), "/proc/%d/maps", pid);
		else
			snprintf(path, sizeof(path), "/proc/self/maps");
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = errno == ENOENT ? -ESRCH : -errno;
			return errmsg_set(err, rc, "cannot read '%s': %s", path, strerror(-rc));
		}
		rc = query_exec(fd, out, err);
		close(fd);
		if (rc == -ESRCH || rc == 0)
			return rc;
		if (rc != -ENOTTY && rc != -EINVAL)
			return rc;
		__atomic_store_n(&query_unsupported, 1, __ATOMIC_RELAXED);
		log_debug("no PROCMAP_QUERY on this kernel: mappings are read from the text");
	}
	rc = procmaps_read(pid, out, err);
	if (rc == 0) {
		size_t i, n = 0;

		procmaps_keep(out, PROCMAPS_X);
		for (i = 0; i < out->n; i++)
			if (strcmp(out->v[i].path, "[vsyscall]"))
				out->v[n++] = out->v[i];
		out->n = n;
	}
	return rc;
}

void procmaps_release(struct procmaps *m)
{
	xfree(m->v);
	xfree(m->pool);
	memset(m, 0, sizeof(*m));
}

void procmaps_keep(struct procmaps *m, unsigned perms)
{
	size_t i, out = 0;

	for (i = 0; i < m->n; i++)
		if ((m->v[i].perms & perms) == perms)
			m->v[out++] = m->v[i];
	m->n = out;
}

const struct procmaps_entry *procmaps_find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < m->v[lo - 1].end)
		return &m->v[lo - 1];
	return NULL;
}

/* check: 0 none, 1 the mapping's inode, 2 its device and inode (a path read in our own root
 * for a process that is gone: only the same device and inode make it the mapped file). */
static int open_regular(const char *path, const struct procmaps_entry *e, int check)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if ((check && e->inode && (uint64_t)st.st_ino != e->inode) ||
	    (check == 2 && (!e->inode || major(st.st_dev) != e->dev_major ||
			    minor(st.st_dev) != e->dev_minor))) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int procmaps_open(int pid, const struct procmaps_entry *e, struct errmsg *err)
{
	char path[4200];
	const char *proc = pid ? NULL : "self";
	int fd, rc, gone = 0;

	if (e->kind != PROCMAPS_FILE)
		return errmsg_set(err, -EINVAL, "mapping at 0x%llx is not file-backed",
				  (unsigned long long)e->start);
	if (proc)
		snprintf(path, sizeof(path), "/proc/self/map_files/%llx-%llx",
			 (unsigned long long)e->start, (unsigned long long)e->end);
	else
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
			 (unsigned long long)e->start, (unsigned long long)e->end);
	fd = open_regular(path, e, 0);
	if (fd >= 0)
		return fd;
	if (fd == -ENOENT && pid && kill(pid, 0) < 0 && errno == ESRCH)
		gone = 1;
	if (gone && (e->path[0] != '/' || e->deleted))
		return errmsg_set(err, -ESRCH, "process %d is gone", pid);
	if (e->path[0] == '/') {
		if (pid && !gone) {
			snprintf(path, sizeof(path), "/proc/%d/root%s", pid, e->path);
			fd = open_regular(path, e, 1);
			if (fd >= 0)
				return fd;
		}
		/* a process that is gone (its maps known from mapevents.h): the path in our root,
		 * if it is still the file it mapped */
		rc = open_regular(e->path, e, gone ? 2 : 1);
		if (rc >= 0)
			return rc;
		if (fd == -ESTALE || rc == -ESTALE)
			return errmsg_set(err, -ESTALE, "'%s' was replaced since it was mapped", e->path);
		fd = rc;
	}
	return errmsg_set(err, fd, "cannot open mapped file '%s': %s", e->path, strerror(-fd));
}

int procmaps_stat(const struct procmaps_entry *e, struct stat *st)
{
	if (e->kind != PROCMAPS_FILE || e->deleted || e->path[0] != '/' || !e->inode)
		return -1;
	if (stat(e->path, st) < 0 || !S_ISREG(st->st_mode) || (uint64_t)st->st_ino != e->inode ||
	    major(st->st_dev) != e->dev_major || minor(st->st_dev) != e->dev_minor)
		return -1;
	return 0;
}

int procmaps_same_file(const struct procmaps_entry *a, const struct procmaps_entry *b)
{
	return a->kind == PROCMAPS_FILE && b->kind == PROCMAPS_FILE && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor && a->end <= b->start;
}

void procmaps_elf_mapping(const struct procmaps_entry *e, struct elf_mapping *out)
{
	out->start = e->start;
	out->end = e->end;
	out->offset = e->offset;
	out->prot = (e->perms & PROCMAPS_R ? PF_R : 0) | (e->perms & PROCMAPS_W ? PF_W : 0) |
		    (e->perms & PROCMAPS_X ? PF_X : 0);
}
