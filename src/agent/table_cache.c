/* table_cache.c: unwind tables per file identity, in memory and on disk (see table_cache.h for
 * the formats). The memory part is a hash map plus an LRU list bounded in bytes; the disk part
 * is one file per record in a directory we own, written atomically, bounded in bytes by
 * deleting the files used least recently (mtime). Disk files are outside input: nothing from
 * them is used before table_cache_check_file() accepted every byte.
 *
 * Why a writer thread: a durable write costs two fsync() calls, 10-30 ms on a virtual disk,
 * and the caller is the agent's event loop, which must drain the sampler's ring buffer. Writes
 * go to a bounded queue that one thread empties; everything else (lookups, reads, the memory
 * part) stays on the caller's thread. c->mu guards the queue and the disk counters. */
#include "agent/table_cache.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static const char magic[8] = { 'S', 'C', 'O', 'R', 'C', 'H', 'U', 'T' };

#define TMP_PREFIX ".tmp-"
#define TMP_STALE_S 60           /* a temporary file this old was left by a crash */
#define DISK_LOW_WATER(max) ((max) / 10 * 9)
#define WRITE_QUEUE_MAX (32u << 20) /* bytes of records waiting for the writer thread */
#define NAME_MAX_LEN (TABLE_CACHE_KEY_MAX + 8)

/* A record file to write: its name and its bytes (header and payload). */
struct write_job {
	struct write_job *next;
	char name[NAME_MAX_LEN];
	uint8_t *data;
	size_t len;
};

struct table_rec {
	char key[TABLE_CACHE_KEY_MAX];
	uint64_t keyhash;
	struct table_info info;
	uint32_t nrules;
	uint8_t *payload;
	size_t size;
	struct table_rec *prev, *next; /* most recently used first */
};

struct table_cache {
	struct table_cache_opts opts;
	struct table_cache_io io;
	struct u64map recs;            /* keyhash -> struct table_rec * */
	struct table_rec *head, *tail;
	struct table_rec *transient;   /* a disk record too large to keep: freed at the next call */
	int dirfd;
	uint64_t tmp_seq;              /* writer thread only */
	struct table_cache_stats st;   /* disk_* and bad_files under mu */
	/* the writer thread */
	pthread_t writer;
	int writer_running;
	pthread_mutex_t mu;
	pthread_cond_t work, idle;
	struct write_job *qhead, *qtail;
	size_t queued;                 /* bytes in the queue */
	int writing, stopping;
};

/* ---- the compact form */

static uint32_t rule_of(const struct unwind_entry *e)
{
	return (uint32_t)e->off | (uint32_t)e->kind << 16 | (uint32_t)(uint8_t)e->rbp << 24;
}

static int rule_valid(uint32_t r)
{
	uint8_t kind = (uint8_t)(r >> 16);

	if ((kind & UNW_F_BIG) && (kind & UNW_KIND_MASK) != UNW_CFA_RSP &&
	    (kind & UNW_KIND_MASK) != UNW_CFA_RBP)
		return 0;
	if (!(kind & UNW_F_BIG) && (kind & UNW_BIG_HIGH))
		return 0;
	return (kind & UNW_KIND_MASK) <= UNW_RA_REG &&
	       !(kind & ~(UNW_KIND_MASK | UNW_F_INTERP | UNW_F_BIG | UNW_BIG_HIGH));
}

static size_t put_uleb(uint8_t *p, uint32_t v)
{
	size_t n = 0;

	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		p[n++] = b | (v ? 0x80 : 0);
	} while (v);
	return n;
}

/* A uleb128 of at most 32 bits at *pos; -1 when malformed or past end. */
static int get_uleb(const uint8_t *p, size_t end, size_t *pos, uint32_t *out)
{
	uint32_t v = 0;
	unsigned shift;

	for (shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*pos >= end)
			return -1;
		b = p[(*pos)++];
		if (shift == 28 && (b & 0x70))
			return -1; /* more than 32 bits */
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

struct rule_count {
	uint32_t rule;
	uint64_t n;
};

static int cmp_rule_count(const void *a, const void *b)
{
	const struct rule_count *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

static int entries_valid(const struct unwind_entry *e, size_t count)
{
	size_t i;

	if (!count || count > UNW_MAX_FILE_ENTRIES || !e)
		return 0;
	for (i = 0; i < count; i++) {
		if (!rule_valid(rule_of(&e[i])) || (i && e[i].pc <= e[i - 1].pc))
			return 0;
	}
	return (e[count - 1].kind & UNW_KIND_MASK) == UNW_INVALID;
}

uint8_t *table_cache_encode(const struct unwind_entry *e, size_t count, size_t *size,
			    uint32_t *nrules)
{
	struct u64map idx;
	struct rule_count *rc = NULL;
	size_t nrc = 0, caprc = 0, i, pos;
	uint8_t *out, *shrunk;
	uint32_t prev = 0;

	if (!entries_valid(e, count)) {
		errno = EINVAL;
		return NULL;
	}
	/* Rules by use, most used first: their indexes then fit one byte. */
	u64map_init(&idx);
	for (i = 0; i < count; i++) {
		uint64_t key = (uint64_t)rule_of(&e[i]) | 1ull << 32, *v = u64map_get(&idx, key);

		if (v) {
			rc[*v].n++;
			continue;
		}
		ALLOC_GROW(rc, nrc + 1, caprc);
		rc[nrc].rule = rule_of(&e[i]);
		rc[nrc].n = 1;
		u64map_put(&idx, key, nrc++);
	}
	qsort(rc, nrc, sizeof(*rc), cmp_rule_count);
	for (i = 0; i < nrc; i++)
		u64map_put(&idx, (uint64_t)rc[i].rule | 1ull << 32, i);
	out = xmalloc(nrc * 4 + count * 10);
	pos = 0;
	for (i = 0; i < nrc; i++) {
		memcpy(out + pos, &rc[i].rule, 4);
		pos += 4;
	}
	for (i = 0; i < count; i++) {
		pos += put_uleb(out + pos, e[i].pc - prev);
		pos += put_uleb(out + pos,
				(uint32_t)*u64map_get(&idx, (uint64_t)rule_of(&e[i]) | 1ull << 32));
		prev = e[i].pc;
	}
	shrunk = try_realloc(out, pos);
	if (shrunk)
		out = shrunk;
	u64map_release(&idx);
	xfree(rc);
	*size = pos;
	*nrules = (uint32_t)nrc;
	return out;
}

int table_cache_decode(const uint8_t *payload, size_t size, uint32_t nrules, size_t count,
		       struct unwind_entry *out)
{
	size_t pos = (size_t)nrules * 4, i;
	uint32_t pc = 0, r;

	if (!count || count > UNW_MAX_FILE_ENTRIES || !nrules || nrules > count ||
	    pos > size)
		return -EINVAL;
	for (i = 0; i < nrules; i++) {
		memcpy(&r, payload + 4 * i, 4);
		if (!rule_valid(r))
			return -EINVAL;
	}
	for (i = 0; i < count; i++) {
		uint32_t delta, ri;

		if (get_uleb(payload, size, &pos, &delta) || get_uleb(payload, size, &pos, &ri) ||
		    ri >= nrules || (i && !delta) || delta > UINT32_MAX - pc)
			return -EINVAL;
		pc += delta;
		memcpy(&r, payload + 4 * (size_t)ri, 4);
		if (out) {
			out[i].pc = pc;
			out[i].off = (uint16_t)r;
			out[i].kind = (uint8_t)(r >> 16);
			out[i].rbp = (int8_t)(uint8_t)(r >> 24);
		}
		if (i == count - 1 && ((uint8_t)(r >> 16) & UNW_KIND_MASK) != UNW_INVALID)
			return -EINVAL;
	}
	return pos == size ? 0 : -EINVAL;
}

/* ---- the file format */

static void le32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint32_t crc(const uint8_t *p, size_t n)
{
	uLong c = crc32(0, NULL, 0);

	while (n) {
		uInt chunk = n > (1u << 30) ? 1u << 30 : (uInt)n;

		c = crc32(c, p, chunk);
		p += chunk;
		n -= chunk;
	}
	return (uint32_t)c;
}

static void make_header(uint8_t *h, const struct table_rec *r)
{
	memset(h, 0, TABLE_CACHE_HEADER);
	memcpy(h, magic, 8);
	le32(h + 8, TABLE_CACHE_FORMAT);
	le32(h + 12, UNWIND_TABLE_VERSION);
	memcpy(h + 16, r->key, strlen(r->key));
	memcpy(h + 96, &r->info.base, 8);
	le32(h + 104, r->info.count);
	le32(h + 108, r->nrules);
	le32(h + 112, (uint32_t)r->size);
	h[116] = r->info.kind;
	h[117] = r->info.interp;
	h[118] = r->info.runtime;
	h[119] = r->info.sources;
	le32(h + 120, crc(r->payload, r->size));
	le32(h + 124, crc(h, 124));
}

/* The header's checks; the payload (len - header) is checked by the caller. */
static int check_header(const uint8_t *h, size_t len, const char *key, struct table_info *info,
			uint32_t *nrules)
{
	uint32_t payload;

	if (len < TABLE_CACHE_HEADER || memcmp(h, magic, 8) || rd32(h + 124) != crc(h, 124))
		return -EBADMSG;
	if (rd32(h + 8) != TABLE_CACHE_FORMAT || rd32(h + 12) != UNWIND_TABLE_VERSION)
		return -EPROTO;
	if (!memchr(h + 16, 0, TABLE_CACHE_KEY_MAX) ||
	    (key && strcmp((const char *)h + 16, key)))
		return -EBADMSG;
	memset(info, 0, sizeof(*info));
	memcpy(&info->base, h + 96, 8);
	info->count = rd32(h + 104);
	*nrules = rd32(h + 108);
	payload = rd32(h + 112);
	info->kind = h[116];
	info->interp = h[117];
	info->runtime = h[118];
	info->sources = h[119];
	if (payload != len - TABLE_CACHE_HEADER || info->interp > 1 || info->kind > TABLE_FP)
		return -EBADMSG;
	if (info->kind != TABLE_ENTRIES && (info->count || *nrules || payload))
		return -EBADMSG;
	if (info->kind == TABLE_ENTRIES &&
	    (!info->count || info->count > UNW_MAX_FILE_ENTRIES || !*nrules))
		return -EBADMSG;
	return 0;
}

int table_cache_check_file(const uint8_t *data, size_t len, const char *key,
			   struct table_info *info, size_t *payload_off, uint32_t *nrules)
{
	const uint8_t *p = data + TABLE_CACHE_HEADER;
	size_t n;
	int rc = check_header(data, len, key, info, nrules);

	if (rc)
		return rc;
	n = len - TABLE_CACHE_HEADER;
	if (rd32(data + 120) != crc(p, n))
		return -EBADMSG;
	if (info->kind == TABLE_ENTRIES &&
	    table_cache_decode(p, n, *nrules, info->count, NULL))
		return -EBADMSG;
	*payload_off = TABLE_CACHE_HEADER;
	return 0;
}

/* ---- memory */

static uint64_t key_hash(const char *key)
{
	return hash_bytes(key, strlen(key), 0x7ab1e) | 1;
}

static size_t rec_bytes(const struct table_rec *r)
{
	return sizeof(*r) + r->size;
}

static void lru_unlink(struct table_cache *c, struct table_rec *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		c->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		c->tail = r->prev;
	r->prev = r->next = NULL;
}

static void lru_push(struct table_cache *c, struct table_rec *r)
{
	r->prev = NULL;
	r->next = c->head;
	if (c->head)
		c->head->prev = r;
	c->head = r;
	if (!c->tail)
		c->tail = r;
}

static void rec_drop(struct table_cache *c, struct table_rec *r)
{
	lru_unlink(c, r);
	u64map_remove(&c->recs, r->keyhash);
	c->st.bytes -= rec_bytes(r);
	c->st.records--;
	c->st.encoded_entries -= r->info.count;
	xfree(r->payload);
	xfree(r);
}

static struct table_rec *rec_find(struct table_cache *c, const char *key)
{
	uint64_t *v = u64map_get(&c->recs, key_hash(key));
	struct table_rec *r = v ? (struct table_rec *)(uintptr_t)*v : NULL;

	return r && !strcmp(r->key, key) ? r : NULL;
}

/* Take r into memory (it becomes the most recent), dropping the least recent records to stay
 * under max_bytes. A record larger than the whole budget is not kept: returns 0 then. */
static int rec_insert(struct table_cache *c, struct table_rec *r)
{
	struct table_rec *old = rec_find(c, r->key);
	uint64_t *v;

	if (old)
		rec_drop(c, old);
	else if ((v = u64map_get(&c->recs, r->keyhash)))
		rec_drop(c, (struct table_rec *)(uintptr_t)*v); /* another key, same hash */
	if (rec_bytes(r) > c->opts.max_bytes)
		return 0;
	while (c->tail && c->st.bytes + rec_bytes(r) > c->opts.max_bytes) {
		rec_drop(c, c->tail);
		c->st.evictions++;
	}
	lru_push(c, r);
	u64map_put(&c->recs, r->keyhash, (uint64_t)(uintptr_t)r);
	c->st.bytes += rec_bytes(r);
	c->st.records++;
	c->st.encoded_entries += r->info.count;
	return 1;
}

static void rec_free(struct table_rec *r)
{
	if (r) {
		xfree(r->payload);
		xfree(r);
	}
}

/* ---- disk */

static void file_name(const char *key, char *out, size_t size)
{
	size_t i, n = 0;

	for (i = 0; key[i] && n + 5 < size; i++) {
		char ch = key[i];

		out[n++] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			   (ch >= '0' && ch <= '9') || ch == '+' || ch == '.' ? ch :
			   ch == ':' ? '-' : '_';
	}
	memcpy(out + n, ".tbl", 5);
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static int read_all(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EBADMSG;
		got += (size_t)n;
	}
	return 0;
}

/* Delete a record file; mu must not be held. Returns 1 when deleted. */
static int disk_forget(struct table_cache *c, const char *name, uint64_t size)
{
	if (unlinkat(c->dirfd, name, 0) < 0)
		return 0;
	pthread_mutex_lock(&c->mu);
	c->st.disk_bytes -= size < c->st.disk_bytes ? size : c->st.disk_bytes;
	pthread_mutex_unlock(&c->mu);
	return 1;
}

/* Read key's file into a new record: NULL when absent or unusable (then deleted, counted). */
static struct table_rec *disk_read(struct table_cache *c, const char *key)
{
	char name[NAME_MAX_LEN];
	uint8_t h[TABLE_CACHE_HEADER];
	struct table_rec *r = NULL;
	struct stat sb;
	uint32_t nrules;
	int fd, rc = -EBADMSG;

	memset(&sb, 0, sizeof(sb));
	file_name(key, name, sizeof(name));
	fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > TABLE_CACHE_MAX_FILE ||
	    sb.st_size < TABLE_CACHE_HEADER)
		goto bad;
	r = xcalloc(1, sizeof(*r));
	if (read_all(fd, h, sizeof(h)))
		goto bad;
	rc = check_header(h, (size_t)sb.st_size, key, &r->info, &nrules);
	if (rc)
		goto bad;
	r->size = (size_t)sb.st_size - TABLE_CACHE_HEADER;
	r->payload = xmalloc(r->size ? r->size : 1);
	rc = -EBADMSG;
	if (read_all(fd, r->payload, r->size) || rd32(h + 120) != crc(r->payload, r->size) ||
	    (r->info.kind == TABLE_ENTRIES &&
	     table_cache_decode(r->payload, r->size, nrules, r->info.count, NULL)))
		goto bad;
	r->nrules = nrules;
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->keyhash = key_hash(key);
	futimens(fd, NULL); /* recently used: evicted last */
	close(fd);
	return r;
bad:
	/* Corrupt, truncated, or written by another version: rebuilt and rewritten. */
	pthread_mutex_lock(&c->mu);
	c->st.bad_files++;
	pthread_mutex_unlock(&c->mu);
	close(fd);
	disk_forget(c, name, (uint64_t)sb.st_size);
	rec_free(r);
	return NULL;
}

static int write_all(struct table_cache *c, int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = c->io.write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

struct disk_file {
	char *name;
	struct timespec mtime;
	uint64_t size;
};

static int cmp_mtime(const void *a, const void *b)
{
	const struct disk_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Walk the directory: sum the record files, remove temporary files a crash left, and with
 * evict, delete the least recently used records down to the low-water mark. */
static void disk_scan(struct table_cache *c, int evict)
{
	struct disk_file *v = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	time_t now = time(NULL);
	int fd = dup(c->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat sb;

		if (fstatat(c->dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			if (now - sb.st_mtime > TMP_STALE_S)
				unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		if (!has_suffix(de->d_name, ".tbl"))
			continue;
		total += (uint64_t)sb.st_size;
		if (evict) {
			ALLOC_GROW(v, n + 1, cap);
			v[n].name = xstrdup(de->d_name);
			v[n].mtime = sb.st_mtim;
			v[n].size = (uint64_t)sb.st_size;
			n++;
		}
	}
	closedir(d);
	pthread_mutex_lock(&c->mu);
	c->st.disk_bytes = total;
	pthread_mutex_unlock(&c->mu);
	if (evict && total > c->opts.max_disk_bytes) {
		qsort(v, n, sizeof(*v), cmp_mtime);
		for (i = 0; i < n && total > DISK_LOW_WATER(c->opts.max_disk_bytes); i++) {
			if (!disk_forget(c, v[i].name, v[i].size))
				continue;
			total -= v[i].size < total ? v[i].size : total;
			pthread_mutex_lock(&c->mu);
			c->st.disk_evictions++;
			pthread_mutex_unlock(&c->mu);
		}
	}
	for (i = 0; i < n; i++)
		xfree(v[i].name);
	xfree(v);
}

/* Write a record file durably (writer thread): a temporary file, fsync, rename over the
 * record's name, fsync the directory. On failure nothing but the old file (if any) remains. */
static int disk_write(struct table_cache *c, const struct write_job *j)
{
	char tmp[NAME_MAX_LEN + 48];
	struct stat old;
	uint64_t old_size = 0, total;
	int fd, rc;

	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d-%llu-%s", (int)getpid(),
		 (unsigned long long)++c->tmp_seq, j->name);
	fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = write_all(c, fd, j->data, j->len);
	if (!rc && c->io.fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && fstatat(c->dirfd, j->name, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(old.st_mode))
		old_size = (uint64_t)old.st_size;
	if (!rc && c->io.renameat(c->dirfd, tmp, c->dirfd, j->name) < 0)
		rc = -errno;
	if (rc) {
		unlinkat(c->dirfd, tmp, 0);
		return rc;
	}
	c->io.fsync(c->dirfd);
	pthread_mutex_lock(&c->mu);
	c->st.disk_bytes += j->len;
	c->st.disk_bytes -= old_size < c->st.disk_bytes ? old_size : c->st.disk_bytes;
	c->st.disk_writes++;
	total = c->st.disk_bytes;
	pthread_mutex_unlock(&c->mu);
	if (total > c->opts.max_disk_bytes)
		disk_scan(c, 1);
	return 0;
}

static void *writer_main(void *arg)
{
	struct table_cache *c = arg;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct write_job *j;
		int rc;

		while (!c->qhead && !c->stopping)
			pthread_cond_wait(&c->work, &c->mu);
		if (!c->qhead)
			break;
		j = c->qhead;
		c->qhead = j->next;
		if (!c->qhead)
			c->qtail = NULL;
		c->queued -= j->len;
		c->writing = 1;
		pthread_mutex_unlock(&c->mu);
		rc = disk_write(c, j);
		xfree(j->data);
		xfree(j);
		pthread_mutex_lock(&c->mu);
		if (rc)
			c->st.disk_errors++;
		c->writing = 0;
		if (!c->qhead)
			pthread_cond_broadcast(&c->idle);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Queue r's file for the writer thread. 0, or -ENOSPC when the queue is full (the record
 * stays in memory; a later build writes it). */
static int disk_queue(struct table_cache *c, const struct table_rec *r)
{
	struct write_job *j;
	size_t len = TABLE_CACHE_HEADER + r->size;
	int rc = 0;

	j = xcalloc(1, sizeof(*j));
	file_name(r->key, j->name, sizeof(j->name));
	j->len = len;
	j->data = xmalloc(len);
	make_header(j->data, r);
	if (r->size)
		memcpy(j->data + TABLE_CACHE_HEADER, r->payload, r->size);
	pthread_mutex_lock(&c->mu);
	if (c->queued + len > WRITE_QUEUE_MAX) {
		c->st.disk_errors++;
		rc = -ENOSPC;
	} else {
		if (c->qtail)
			c->qtail->next = j;
		else
			c->qhead = j;
		c->qtail = j;
		c->queued += len;
		pthread_cond_signal(&c->work);
		j = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	if (j) {
		xfree(j->data);
		xfree(j);
	}
	return rc;
}

void table_cache_flush(struct table_cache *c)
{
	if (!c->writer_running)
		return;
	pthread_mutex_lock(&c->mu);
	while (c->qhead || c->writing)
		pthread_cond_wait(&c->idle, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* mkdir -p with mode 0700 for what is missing. */
static int make_dirs(const char *path)
{
	char buf[4096];
	size_t i, len = strlen(path);

	if (!len || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = i < len ? '/' : '\0';
	}
	return 0;
}

static int open_dir(struct table_cache *c, const char *dir, struct errmsg *err)
{
	struct stat sb;
	int rc = make_dirs(dir);

	if (rc)
		return errmsg_set(err, rc, "cannot create the cache directory '%s': %s", dir,
				  strerror(-rc));
	c->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->dirfd < 0)
		return errmsg_set(err, -errno, "cannot open the cache directory '%s': %s", dir,
				  strerror(errno));
	if (fstat(c->dirfd, &sb) < 0)
		return errmsg_set(err, -errno, "cannot stat '%s': %s", dir, strerror(errno));
	/* Tables steer how every process is unwound: only we may write them. */
	if (sb.st_uid != geteuid())
		return errmsg_set(err, -EPERM, "the cache directory '%s' belongs to uid %u, not us",
				  dir, (unsigned)sb.st_uid);
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		return errmsg_set(err, -EPERM, "the cache directory '%s' is writable by others "
				  "(chmod 700 it)", dir);
	return 0;
}

static ssize_t sys_write(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len);
}

/* ---- the interface */

struct table_cache *table_cache_new(const struct table_cache_opts *opts, struct errmsg *err)
{
	struct table_cache *c = xcalloc(1, sizeof(*c));

	if (opts)
		c->opts = *opts;
	if (!c->opts.max_bytes)
		c->opts.max_bytes = TABLE_CACHE_DEFAULT_BYTES;
	if (!c->opts.max_disk_bytes)
		c->opts.max_disk_bytes = TABLE_CACHE_DEFAULT_DISK_BYTES;
	if (c->opts.io)
		c->io = *c->opts.io;
	if (!c->io.write)
		c->io.write = sys_write;
	if (!c->io.fsync)
		c->io.fsync = fsync;
	if (!c->io.renameat)
		c->io.renameat = renameat;
	c->opts.io = NULL;
	c->dirfd = -1;
	u64map_init(&c->recs);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->idle, NULL);
	if (c->opts.dir) {
		int rc;

		if (open_dir(c, c->opts.dir, err)) {
			table_cache_free(c);
			return NULL;
		}
		c->opts.dir = NULL; /* not kept: the caller's string */
		disk_scan(c, 1);
		rc = pthread_create(&c->writer, NULL, writer_main, c);
		if (rc) {
			errmsg_set(err, -rc, "cannot start the cache writer thread: %s", strerror(rc));
			table_cache_free(c);
			return NULL;
		}
		c->writer_running = 1;
		c->st.disk = 1;
	}
	return c;
}

void table_cache_free(struct table_cache *c)
{
	if (!c)
		return;
	if (c->writer_running) {
		/* what is queued is written first: a stop loses no table */
		pthread_mutex_lock(&c->mu);
		c->stopping = 1;
		pthread_cond_signal(&c->work);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->writer, NULL);
	}
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->idle);
	while (c->head)
		rec_drop(c, c->head);
	rec_free(c->transient);
	u64map_release(&c->recs);
	if (c->dirfd >= 0)
		close(c->dirfd);
	xfree(c);
}

const struct table_rec *table_cache_get(struct table_cache *c, const char *key,
					struct table_info *info)
{
	struct table_rec *r;

	rec_free(c->transient);
	c->transient = NULL;
	r = rec_find(c, key);
	if (r) {
		lru_unlink(c, r);
		lru_push(c, r);
		c->st.hits++;
		*info = r->info;
		return r;
	}
	if (c->dirfd >= 0 && strlen(key) < TABLE_CACHE_KEY_MAX && (r = disk_read(c, key))) {
		c->st.disk_hits++;
		*info = r->info;
		if (!rec_insert(c, r))
			c->transient = r; /* larger than the memory budget: this use only */
		return r;
	}
	c->st.misses++;
	return NULL;
}

int table_rec_decode(const struct table_rec *r, struct unwind_entry *out, size_t cap)
{
	if (r->info.kind != TABLE_ENTRIES || cap < r->info.count)
		return -EINVAL;
	return table_cache_decode(r->payload, r->size, r->nrules, r->info.count, out);
}

int table_cache_put(struct table_cache *c, const char *key, const struct table_info *info,
		    const struct unwind_entry *entries)
{
	struct table_rec *r;
	int rc = 0;

	if (!*key || strlen(key) >= TABLE_CACHE_KEY_MAX || info->kind > TABLE_FP)
		return -EINVAL;
	rec_free(c->transient);
	c->transient = NULL;
	r = xcalloc(1, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->keyhash = key_hash(key);
	r->info = *info;
	if (info->kind == TABLE_ENTRIES) {
		r->payload = table_cache_encode(entries, info->count, &r->size, &r->nrules);
		if (!r->payload) {
			rec_free(r);
			return -EINVAL;
		}
	} else {
		r->info.count = 0;
		r->payload = NULL;
	}
	c->st.puts++;
	if (c->writer_running)
		rc = disk_queue(c, r);
	if (!rec_insert(c, r))
		rec_free(r);
	return rc;
}

void table_cache_stats(struct table_cache *c, struct table_cache_stats *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
}
