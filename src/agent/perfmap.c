/* perfmap.c: perf-PID.map and jitdump parsing and lookup (see perfmap.h). Entries are kept in
 * arrival order (their sequence number decides overlaps) and sorted by start on the first
 * lookup after a feed. */
#include "agent/perfmap.h"
#include "lib/alloc.h"
#include "lib/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" written in the host's byte order */
#define JITDUMP_HEADER 40
#define JIT_CODE_LOAD 0
#define JIT_CODE_MOVE 1
#define JIT_CODE_CLOSE 3
#define JITDUMP_MAX_RECORD (256u << 20)
/* An overlapping older entry further back than this is not looked for. */
#define LOOKBACK 256

struct pm_entry {
	uint64_t start, size;
	uint32_t seq;
	uint32_t name; /* offset into names */
};

struct perfmap {
	struct pm_entry *e;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	uint32_t seq;
	int sorted;
	uint64_t bad;
	/* an incomplete line or record from the previous feed */
	char *pending;
	size_t npending;
	int skipping_line; /* a line longer than any we accept: drop until its newline */
	/* jitdump */
	int jd_header_done;
	uint64_t jd_skip;  /* bytes of the current record still to skip */
};

struct perfmap *perfmap_new(void)
{
	struct perfmap *m = xcalloc(1, sizeof(*m));

	m->pending = xmalloc(PERFMAP_MAX_NAME + 128);
	m->sorted = 1;
	return m;
}

void perfmap_free(struct perfmap *m)
{
	if (!m)
		return;
	xfree(m->e);
	xfree(m->names);
	xfree(m->pending);
	xfree(m);
}

size_t perfmap_count(const struct perfmap *m)
{
	return m->n;
}

uint64_t perfmap_bad_lines(const struct perfmap *m)
{
	return m->bad;
}

static int add(struct perfmap *m, uint64_t start, uint64_t size, const char *name, size_t len)
{
	struct pm_entry *x;

	if (!size || start + size < start || !len || len >= PERFMAP_MAX_NAME) {
		m->bad++;
		return 0;
	}
	if (m->n >= PERFMAP_MAX_ENTRIES)
		return -E2BIG;
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 256;
		struct pm_entry *ne = try_realloc(m->e, ncap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		m->e = ne;
		m->cap = ncap;
	}
	if (m->names_len + len + 1 > m->names_cap) {
		size_t ncap = m->names_cap ? m->names_cap * 2 : 4096;
		char *nn;

		while (ncap < m->names_len + len + 1)
			ncap *= 2;
		nn = try_realloc(m->names, ncap);
		if (!nn)
			return -ENOMEM;
		m->names = nn;
		m->names_cap = ncap;
	}
	if (m->names_len > UINT32_MAX - len - 1)
		return -E2BIG;
	x = &m->e[m->n++];
	x->start = start;
	x->size = size;
	x->seq = m->seq++;
	x->name = (uint32_t)m->names_len;
	memcpy(m->names + m->names_len, name, len);
	m->names[m->names_len + len] = '\0';
	m->names_len += len + 1;
	m->sorted = 0;
	return 0;
}

/* A hex number (optional 0x) ending at a blank: 0 and the value, or -1. */
static int hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t r = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits++ >= 16)
			return -1;
		r = r << 4 | (uint64_t)d;
	}
	if (!digits || s == end || (*s != ' ' && *s != '\t'))
		return -1;
	*v = r;
	*p = s;
	return 0;
}

static int parse_line(struct perfmap *m, const char *s, size_t len)
{
	const char *end = s + len, *p = s;
	uint64_t start, size;

	while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (p == end)
		return 0;
	if (hex(&p, end, &start) < 0)
		goto bad;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (hex(&p, end, &size) < 0)
		goto bad;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == end || memchr(p, '\0', (size_t)(end - p)))
		goto bad;
	return add(m, start, size, p, (size_t)(end - p));
bad:
	m->bad++;
	return 0;
}

int perfmap_feed(struct perfmap *m, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int rc = 0;

	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		if (m->skipping_line) {
			if (nl)
				m->skipping_line = 0;
		} else if (!nl) {
			/* an incomplete last line: keep it for the next feed */
			if (m->npending + n > PERFMAP_MAX_NAME + 100) {
				m->skipping_line = 1;
				m->npending = 0;
				m->bad++;
			} else {
				memcpy(m->pending + m->npending, p, n);
				m->npending += n;
			}
		} else if (m->npending) {
			if (m->npending + n > PERFMAP_MAX_NAME + 100) {
				m->bad++;
			} else {
				memcpy(m->pending + m->npending, p, n);
				rc = parse_line(m, m->pending, m->npending + n);
			}
			m->npending = 0;
		} else {
			rc = parse_line(m, p, n);
		}
		p += n + (nl ? 1 : 0);
	}
	return rc;
}

/* One jitdump record (the whole of it, or at least its fixed part and name). */
static int jd_record(struct perfmap *m, const uint8_t *r, size_t len, uint32_t id)
{
	uint64_t addr, size, old;

	if (id == JIT_CODE_LOAD) {
		const char *name = (const char *)r + 56;
		size_t n;

		if (len < 57)
			goto bad;
		memcpy(&addr, r + 32, 8);
		memcpy(&size, r + 40, 8);
		n = strnlen(name, len - 56);
		if (n == len - 56)
			goto bad; /* no NUL within what we hold */
		return add(m, addr, size, name, n);
	}
	if (id == JIT_CODE_MOVE) {
		size_t i;

		if (len < 64)
			goto bad;
		memcpy(&old, r + 32, 8);
		memcpy(&addr, r + 40, 8);
		memcpy(&size, r + 48, 8);
		/* the code keeps its name at its new address */
		for (i = m->n; i-- > 0;) {
			if (m->e[i].start == old) {
				char *name = m->names + m->e[i].name;
				size_t n = strlen(name);
				char *copy = xstrndup(name, n);
				int rc = add(m, addr, size, copy, n);

				xfree(copy);
				return rc;
			}
		}
		return 0;
	}
	return 0;
bad:
	m->bad++;
	return 0;
}

int perfmap_feed_jitdump(struct perfmap *m, const void *data, size_t len, struct errmsg *err)
{
	const uint8_t *p = data, *end = p + len;
	const size_t keep = 56 + PERFMAP_MAX_NAME + 1; /* what a record needs of itself */
	int rc = 0;

	if (!m->jd_header_done) {
		uint32_t magic, hsize;

		if (m->npending + len < JITDUMP_HEADER) {
			memcpy(m->pending + m->npending, p, len);
			m->npending += len;
			return 0;
		}
		if (m->npending) {
			size_t take = JITDUMP_HEADER - m->npending;

			memcpy(m->pending + m->npending, p, take);
			p += take;
			m->npending = JITDUMP_HEADER;
		} else {
			memcpy(m->pending, p, JITDUMP_HEADER);
			p += JITDUMP_HEADER;
		}
		memcpy(&magic, m->pending, 4);
		memcpy(&hsize, m->pending + 8, 4);
		m->npending = 0;
		if (magic != JITDUMP_MAGIC)
			return errmsg_set(err, -EINVAL, "not a jitdump file (magic 0x%08x)", magic);
		if (hsize < JITDUMP_HEADER || hsize > 4096)
			return errmsg_set(err, -EINVAL, "jitdump header of %u bytes", hsize);
		m->jd_header_done = 1;
		m->jd_skip = hsize - JITDUMP_HEADER;
	}
	while (p < end && !rc) {
		uint32_t id, total;
		size_t have;

		if (m->jd_skip) {
			size_t n = end - p < (ptrdiff_t)m->jd_skip ? (size_t)(end - p) : (size_t)m->jd_skip;

			p += n;
			m->jd_skip -= n;
			continue;
		}
		/* gather the record's head in pending */
		have = m->npending;
		if (have < 16) {
			size_t n = (size_t)(end - p) < 16 - have ? (size_t)(end - p) : 16 - have;

			memcpy(m->pending + have, p, n);
			m->npending += n;
			p += n;
			if (m->npending < 16)
				break;
		}
		memcpy(&id, m->pending, 4);
		memcpy(&total, m->pending + 4, 4);
		if (total < 16 || total > JITDUMP_MAX_RECORD) {
			m->bad++;
			m->npending = 0;
			return errmsg_set(err, -EINVAL, "jitdump record of %u bytes", total);
		}
		{
			size_t want = total < keep ? total : keep, n;

			n = (size_t)(end - p) < want - m->npending ? (size_t)(end - p) : want - m->npending;
			memcpy(m->pending + m->npending, p, n);
			m->npending += n;
			p += n;
			if (m->npending < want)
				break;
			rc = jd_record(m, (const uint8_t *)m->pending, want, id);
			m->jd_skip = total - want;
			m->npending = 0;
		}
	}
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *perfmap_lookup(struct perfmap *m, uint64_t addr, uint64_t *start)
{
	size_t lo = 0, hi, i, steps;
	const struct pm_entry *best = NULL;

	if (!m->sorted) {
		if (m->n > 1)
			qsort(m->e, m->n, sizeof(*m->e), entry_cmp);
		m->sorted = 1;
	}
	hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, steps = 0; i > 0 && steps < LOOKBACK; i--, steps++) {
		const struct pm_entry *x = &m->e[i - 1];

		if (addr - x->start < x->size && (!best || x->seq > best->seq))
			best = x;
	}
	if (!best)
		return NULL;
	if (start)
		*start = best->start;
	return m->names + best->name;
}

int perfmap_ns_pid(int pid)
{
	char path[64], line[256];
	int ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			char *p = line + 6, *end;

			for (;;) {
				long v = strtol(p, &end, 10);

				if (end == p)
					break;
				if (v > 0 && v <= 0x7fffffff)
					ns = (int)v;
				p = end;
			}
			break;
		}
	}
	fclose(f);
	return ns;
}

int perfmap_open_for(int pid, const char *path)
{
	char full[4096];
	struct stat st, pst;
	int fd, n;

	n = snprintf(full, sizeof(full), "/proc/%d/root%s", pid, path);
	if (n < 0 || (size_t)n >= sizeof(full) || path[0] != '/')
		return -ENAMETOOLONG;
	/* O_NOFOLLOW: the last component must not be a link (to /dev/zero, a fifo, ...);
	 * O_NONBLOCK: a fifo in its place does not block us. */
	fd = open(full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	snprintf(full, sizeof(full), "/proc/%d", pid);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || stat(full, &pst) < 0 ||
	    (st.st_uid != 0 && st.st_uid != pst.st_uid)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int perfmap_open_path(const char *path, uid_t owner)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != owner)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}
