/* elf_sweep.c: a machine-wide robustness sweep and benchmark of the code that reads binaries
 * (src/agent/elf.c, cfi.c, unwind_table.c, python.c): every ELF file under the given
 * directories goes through what the agent does with a file a process maps, in a child process
 * of its own with a watchdog, and the figures of each file are recorded.
 *
 *   elf_sweep [-j JOBS] [-t SECS] [-o OUT.tsv] [-r REPORT_DIR] [-l LIST] [-q] [-T] [PATH...]
 *
 * PATH: directories (walked without following symlinks or crossing mounts) or files; default
 * /usr/bin /usr/sbin /usr/lib /usr/libexec /root/.pyenv /usr/local. -l LIST reads more paths,
 * one a line. A file is swept when it is a regular file starting with the ELF magic; a file
 * reached twice (hard links) is swept once.
 *
 * Per file, in a forked child (so that a crash, a sanitizer report, a hang or a balloon is
 * recorded against the file and the sweep goes on):
 *   elf_open; build id, debuglink, file id; the unwind table the agent builds (interpreter
 *   ranges, the separate debug file when the file has no CFI, unwind_table_build, which loads
 *   the symbols); symbol lookups; CPython detection when the file looks like an interpreter
 *   (python_is_interpreter_path or .PyRuntime: _PyRuntime, Py_Version, eval ranges); then every
 *   section header and its contents (last: the contents stay cached until elf_close).
 * -T also runs each file's first 1/3 and 2/3 (as if truncated while read) through the open,
 * the table build, the symbols and the sections (for crashes; their figures are not kept).
 * The child runs a leak check when built with LeakSanitizer and reports one fixed-size record
 * through a pipe. The parent kills a child after -t seconds (default 60) of wall time; the
 * child also has an RLIMIT_CPU of the same length.
 *
 * Output: -o writes one TSV line per file (header line first); the summary on stdout gives the
 * files scanned, total time, percentiles of the table build time (CPU time of the child's thread,
 * which a loaded machine disturbs less than wall time; the process clock is coarse under
 * RLIMIT_CPU), the largest tables and failures by reason.
 * -r keeps the stderr of every child that crashed, hung, leaked or printed anything (sanitizer
 * reports) as REPORT_DIR/NNNNN.err (default: a new /tmp/elf_sweep.XXXXXX). The exit status is
 * 1 when any child crashed, hung, leaked or exited badly.
 *
 * Build: `make B=build bench` gives build/bench/elf_sweep (-O2, for figures). For the sanitizer
 * sweep, link the same source against the sanitized library:
 *   cc -D_GNU_SOURCE -Isrc -Ibuild/bpf -Ibuild -include src/lib/banned.h -O1 -g \
 *      -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
 *      -o build/bench/elf_sweep-san bench/elf_sweep.c build/libscorch-san.a \
 *      -fsanitize=address,undefined -lbpf -lelf -ldw -lz -lzstd -lsqlite3 \
 *      -lcurl -liberty -lpthread -lm
 */
#include "agent/elf.h"
#include "runtime/python/python_proc.h"
#include "runtime/runtime.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "lib/log.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* LeakSanitizer's interface, present only in sanitized builds. */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

#define MAX_JOBS 16

enum status { ST_OK = 0, ST_CRASH, ST_HANG, ST_EXIT, ST_LEAK, ST_NOREPORT };
static const char *const status_names[] = { "ok", "crash", "hang", "exit", "leak", "noreport" };

/* What a child reports (one write, below PIPE_BUF). */
struct result {
	int open_rc, syms_rc, table_rc;
	uint32_t nsecs, sec_errors, nsyms;
	uint64_t size;
	uint64_t entries, rows, fdes, bad_entries, unsupported;
	int sources, has_debug, has_build_id, has_debuglink;
	int py;          /* 1: looked like CPython; 2: and _PyRuntime was found */
	int py_ranges;   /* eval ranges found */
	double cpu_ms, wall_ms, build_cpu_ms, build_wall_ms, syms_cpu_ms;
	uint64_t heap_peak, table_heap_peak;
	int leaked;
	int trunc_tables; /* -T: tables built from the truncated views */
	char msg[200];   /* the first error message */
};

struct job {
	pid_t pid;
	int fd;          /* read end of the result pipe */
	size_t seq;
	char *path;
	double start;    /* wall clock, seconds */
	struct result r;
	size_t got;
};

struct summary_file {
	char *path;
	double build_cpu_ms;
	uint64_t entries;
};

struct sweep {
	int jobs;
	double timeout;
	int quiet;
	int truncated;
	FILE *out;
	const char *report_dir;
	struct job job[MAX_JOBS];
	int active;
	size_t seq;
	struct u64map seen; /* dev/inode of files already swept */
	/* summary */
	size_t files, not_elf64, opened, tables, interp_files;
	size_t status_count[6];
	struct summary_file *sf;
	size_t nsf, capsf;
	double total_wall_ms;
	char **fail_reasons;
	size_t *fail_counts;
	size_t nfail, capfail, capfailc;
	uint64_t max_heap;
	char *max_heap_path;
};

static struct sweep *g_sweep;

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_err(struct result *r, const char *stage, const char *msg)
{
	if (!r->msg[0])
		snprintf(r->msg, sizeof(r->msg), "%s: %.180s", stage, msg);
}

/* --- the child: one file */

static void sweep_sections(struct elf_file *e, struct result *r)
{
	size_t i, n = elf_section_count(e);

	r->nsecs = (uint32_t)n;
	for (i = 1; i < n; i++) {
		struct elf_section_info si;
		const char *name;
		const void *data;
		size_t size;
		int rc;

		if (elf_section_info_at(e, i, &name, &si) < 0)
			continue;
		rc = elf_section_at(e, i, &data, &size);
		if (rc < 0 && rc != -ENOENT) {
			r->sec_errors++;
			if (!r->msg[0])
				snprintf(r->msg, sizeof(r->msg), "section %zu '%.40s': %s", i, name,
					 strerror(-rc));
		}
	}
}

static void sweep_python(struct elf_file *e, const char *path, struct result *r)
{
	struct elf_section_info sec;
	uint64_t v, lo[2], hi[2];

	if (!python_is_interpreter_path(path, NULL, NULL) &&
	    elf_section_info(e, ".PyRuntime", &sec) < 0)
		return;
	r->py = 1;
	if ((elf_find_symbol(e, "_PyRuntime", &v, NULL) == 0 && v) ||
	    (elf_section_info(e, ".PyRuntime", &sec) == 0 && sec.addr))
		r->py = 2;
	(void)elf_find_symbol(e, "Py_Version", &v, NULL);
	(void)elf_find_symbol(e, "_Py_DebugOffsets", &v, NULL);
	r->py_ranges = python_eval_ranges(e, lo, hi);
}

/* What the unwinder's file_load() does with a file. */
static void sweep_table(struct elf_file *e, const char *path, struct result *r)
{
	struct unwind_range interp[4];
	struct elf_section_info si;
	struct elf_file *dbg = NULL;
	struct unwind_table t;
	struct errmsg err;
	double c0 = now_s(CLOCK_THREAD_CPUTIME_ID), w0 = now_s(CLOCK_MONOTONIC);
	uint64_t live0 = alloc_live_bytes();
	static struct runtimes *rts;
	uint8_t kind;
	int ninterp;

	if (!rts) {
		rts = runtimes_new(NULL);
		runtimes_init(rts, NULL);
	}
	ninterp = runtimes_interp_ranges(rts, e, path, interp, 4, &kind);
	if (ninterp < 0 || ninterp > 4)
		ninterp = 0;
	if (elf_section_info(e, ".eh_frame", &si) && elf_section_info(e, ".debug_frame", &si))
		elf_open_debug_file(e, path, NULL, NULL, &dbg);
	r->has_debug = dbg != NULL;
	r->table_rc = unwind_table_build(e, dbg, interp, (size_t)ninterp, &t, &err);
	r->build_cpu_ms = (now_s(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e3;
	r->build_wall_ms = (now_s(CLOCK_MONOTONIC) - w0) * 1e3;
	r->table_heap_peak = alloc_peak_bytes() > live0 ? alloc_peak_bytes() - live0 : 0;
	if (r->table_rc == 0) {
		r->entries = t.count;
		/* the table must be sorted and end with UNW_INVALID */
		if (!t.count || (t.entries[t.count - 1].kind & UNW_KIND_MASK) != UNW_INVALID)
			note_err(r, "table", "does not end with an invalid entry");
	} else {
		note_err(r, "table", err.msg);
	}
	r->rows = t.stats.rows;
	r->fdes = t.stats.fdes;
	r->bad_entries = t.stats.bad_entries;
	r->unsupported = t.stats.unsupported;
	r->sources = t.stats.sources;
	unwind_table_release(&t);
	elf_close(dbg);
}

static void sweep_file(const char *path, struct result *r)
{
	struct elf_file *e = NULL;
	struct errmsg err;
	double c0 = now_s(CLOCK_THREAD_CPUTIME_ID), w0 = now_s(CLOCK_MONOTONIC), c1;
	uint64_t live0 = alloc_live_bytes(), id;
	const struct elf_symbol *syms;
	size_t nsyms, i, len;
	uint32_t crc;

	r->open_rc = elf_open(path, &e, &err);
	if (r->open_rc < 0) {
		note_err(r, "open", err.msg);
		goto done;
	}
	r->size = elf_size(e);
	r->has_build_id = elf_build_id(e) != NULL;
	(void)elf_build_id_raw(e, &len);
	r->has_debuglink = elf_debuglink(e, &crc) != NULL;
	(void)elf_file_id(e, &id);

	sweep_table(e, path, r);

	c1 = now_s(CLOCK_THREAD_CPUTIME_ID);
	r->syms_rc = elf_symbols_load(e, &err);
	if (r->syms_rc < 0)
		note_err(r, "symbols", err.msg);
	syms = elf_symbols(e, &nsyms);
	r->nsyms = (uint32_t)nsyms;
	for (i = 0; i < nsyms; i += 1 + nsyms / 256) {
		const struct elf_symbol *s = elf_symbol_lookup(e, syms[i].addr + syms[i].size / 2);

		if (s)
			(void)elf_symbol_name(e, s);
	}
	r->syms_cpu_ms = (now_s(CLOCK_THREAD_CPUTIME_ID) - c1) * 1e3;

	sweep_python(e, path, r);
	sweep_sections(e, r);
done:
	r->heap_peak = alloc_peak_bytes() > live0 ? alloc_peak_bytes() - live0 : 0;
	elf_close(e);
	r->cpu_ms = (now_s(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e3;
	r->wall_ms = (now_s(CLOCK_MONOTONIC) - w0) * 1e3;
}

/* The file as if it had been truncated while we read it: its first 1/3 and 2/3 (at most
 * 64 MiB), opened as memory images, through the same steps. Only crashes count here. */
static void sweep_truncated(const char *path, struct result *r)
{
	static const unsigned num[] = { 1, 2 };
	struct elf_file *e;
	struct errmsg err;
	struct stat sb;
	size_t i;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (i = 0; i < sizeof(num) / sizeof(num[0]); i++) {
		size_t len = (size_t)((uint64_t)sb.st_size * num[i] / 3);
		struct unwind_table t;
		uint8_t *buf;

		if (len > (64u << 20))
			len = 64u << 20;
		buf = xmalloc(len ? len : 1);
		if (pread(fd, buf, len, 0) == (ssize_t)len && elf_open_mem(buf, len, &e, &err) == 0) {
			if (unwind_table_build(e, NULL, NULL, 0, &t, &err) == 0) {
				r->trunc_tables++;
				unwind_table_release(&t);
			}
			elf_symbols_load(e, &err);
			sweep_sections(e, &(struct result){ 0 });
			elf_close(e);
		}
		xfree(buf);
	}
	close(fd);
}

static void child_main(const char *path, int wfd, int errfd, double timeout, int truncated)
{
	struct result r;
	struct rlimit rl;
	ssize_t n;

	if (errfd >= 0) {
		dup2(errfd, 2);
		close(errfd);
	}
	rl.rlim_cur = rl.rlim_max = (rlim_t)timeout + 1;
	setrlimit(RLIMIT_CPU, &rl);
	memset(&r, 0, sizeof(r));
	sweep_file(path, &r);
	if (truncated)
		sweep_truncated(path, &r);
	if (__lsan_do_recoverable_leak_check)
		r.leaked = __lsan_do_recoverable_leak_check() != 0;
	n = write(wfd, &r, sizeof(r));
	_exit(n == (ssize_t)sizeof(r) ? 0 : 3);
}

/* --- the parent */

static void add_reason(struct sweep *s, const char *reason)
{
	size_t i;

	for (i = 0; i < s->nfail; i++) {
		if (!strcmp(s->fail_reasons[i], reason)) {
			s->fail_counts[i]++;
			return;
		}
	}
	ALLOC_GROW(s->fail_reasons, s->nfail + 1, s->capfail);
	ALLOC_GROW(s->fail_counts, s->nfail + 1, s->capfailc);
	s->fail_reasons[s->nfail] = xstrdup(reason);
	s->fail_counts[s->nfail++] = 1;
}

/* A failure reason without the file name: the message up to its first quote, plus the errno
 * text at its end (messages quote the file name). */
static void reason_of(const char *stage, int rc, const char *msg, char *buf, size_t size)
{
	const char *q = strchr(msg, '\'');
	int n = q ? (int)(q - msg) : (int)strlen(msg);

	snprintf(buf, size, "%s %s: %.*s", stage, rc ? strerror(-rc) : "", n > 60 ? 60 : n, msg);
}

static char *err_path(const struct sweep *s, int slot)
{
	return xasprintf("%s/slot%d.err", s->report_dir, slot);
}

static void finish_job(struct sweep *s, int slot, int wstatus, int hung)
{
	struct job *j = &s->job[slot];
	struct result *r = &j->r;
	enum status st = ST_OK;
	char reason[160], *ep = err_path(s, slot);
	struct stat sb;
	int keep_err = 0;

	if (hung)
		st = ST_HANG;
	else if (WIFSIGNALED(wstatus))
		st = ST_CRASH;
	else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0)
		st = ST_EXIT;
	else if (j->got != sizeof(*r))
		st = ST_NOREPORT;
	else if (r->leaked)
		st = ST_LEAK;
	if (st != ST_OK || (stat(ep, &sb) == 0 && sb.st_size > 0))
		keep_err = 1;
	if (j->got != sizeof(*r))
		memset(r, 0, sizeof(*r));
	s->status_count[st]++;
	s->files++;
	s->total_wall_ms += (now_s(CLOCK_MONOTONIC) - j->start) * 1e3;
	if (st != ST_OK) {
		snprintf(reason, sizeof(reason), "child %s%s", status_names[st],
			 WIFSIGNALED(wstatus) && !hung ? " (signal)" : "");
		add_reason(s, reason);
		fprintf(stderr, "elf_sweep: %s: %s (see %s/%05zu.err)\n", j->path, status_names[st],
			s->report_dir, j->seq);
	} else if (r->open_rc == -ENOEXEC) {
		s->not_elf64++;
	} else if (r->open_rc < 0) {
		reason_of("open", r->open_rc, r->msg, reason, sizeof(reason));
		add_reason(s, reason);
	} else {
		s->opened++;
		if (r->table_rc == 0) {
			s->tables++;
		} else {
			char m[200];
			const char *colon = strchr(r->msg, ':');

			snprintf(m, sizeof(m), "%s", colon && !strncmp(r->msg, "table", 5) ?
				 colon + 2 : r->msg);
			reason_of("table", r->table_rc, m, reason, sizeof(reason));
			add_reason(s, reason);
		}
		if (r->py)
			s->interp_files++;
		ALLOC_GROW(s->sf, s->nsf + 1, s->capsf);
		s->sf[s->nsf].path = xstrdup(j->path);
		s->sf[s->nsf].build_cpu_ms = r->build_cpu_ms;
		s->sf[s->nsf].entries = r->entries;
		s->nsf++;
		if (r->heap_peak > s->max_heap) {
			s->max_heap = r->heap_peak;
			xfree(s->max_heap_path);
			s->max_heap_path = xstrdup(j->path);
		}
	}
	if (s->out)
		fprintf(s->out,
			"%zu\t%s\t%s\t%llu\t%d\t%d\t%u\t%u\t%u\t%d\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu"
			"\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%llu\t%llu\t%s\n",
			j->seq, j->path, status_names[st], (unsigned long long)r->size, r->open_rc,
			r->syms_rc, r->nsyms, r->nsecs, r->sec_errors, r->table_rc,
			(unsigned long long)r->entries, (unsigned long long)r->entries * 8,
			(unsigned long long)r->rows, (unsigned long long)r->fdes,
			(unsigned long long)r->bad_entries, (unsigned long long)r->unsupported,
			r->sources, r->has_debug, r->py * 10 + r->py_ranges, r->cpu_ms, r->wall_ms,
			r->build_cpu_ms, r->build_wall_ms, r->syms_cpu_ms,
			(unsigned long long)r->heap_peak, (unsigned long long)r->table_heap_peak, r->msg);
	if (!s->quiet && s->files % 250 == 0)
		fprintf(stderr, "elf_sweep: %zu files\n", s->files);
	if (keep_err) {
		char *dst = xasprintf("%s/%05zu.err", s->report_dir, j->seq);
		FILE *f = fopen(dst, "a");

		if (f) {
			fprintf(f, "== %s: %s\n", j->path, status_names[st]);
			fclose(f);
		}
		/* the child's stderr follows the header line */
		{
			FILE *in = fopen(ep, "r"), *o = fopen(dst, "a");
			char buf[4096];
			size_t n;

			while (in && o && (n = fread(buf, 1, sizeof(buf), in)) > 0)
				fwrite(buf, 1, n, o);
			if (in)
				fclose(in);
			if (o)
				fclose(o);
		}
		xfree(dst);
	}
	unlink(ep);
	xfree(ep);
	close(j->fd);
	xfree(j->path);
	memset(j, 0, sizeof(*j));
	s->active--;
}

/* Wait for results until fewer than want jobs run. */
static void reap(struct sweep *s, int want)
{
	while (s->active >= want && s->active > 0) {
		struct pollfd pf[MAX_JOBS];
		int slot[MAX_JOBS], n = 0, i, timeout_ms = 1000, left;
		double now = now_s(CLOCK_MONOTONIC);

		for (i = 0; i < s->jobs; i++) {
			if (!s->job[i].pid)
				continue;
			if (now - s->job[i].start > s->timeout) {
				int ws = 0;

				kill(s->job[i].pid, SIGKILL);
				waitpid(s->job[i].pid, &ws, 0);
				finish_job(s, i, ws, 1);
				continue;
			}
			left = (int)((s->timeout - (now - s->job[i].start)) * 1000) + 1;
			if (left < timeout_ms)
				timeout_ms = left;
			pf[n].fd = s->job[i].fd;
			pf[n].events = POLLIN;
			slot[n++] = i;
		}
		if (!n)
			continue;
		if (poll(pf, (nfds_t)n, timeout_ms) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			struct job *j = &s->job[slot[i]];
			ssize_t got;
			int ws = 0;

			if (!pf[i].revents)
				continue;
			got = read(j->fd, (char *)&j->r + j->got, sizeof(j->r) - j->got);
			if (got > 0) {
				j->got += (size_t)got;
				if (j->got < sizeof(j->r))
					continue;
			} else if (got < 0 && errno == EINTR) {
				continue;
			}
			/* a whole record, or end of file (the child died) */
			waitpid(j->pid, &ws, 0);
			finish_job(s, slot[i], ws, 0);
		}
	}
}

static void start_job(struct sweep *s, const char *path)
{
	int p[2], slot, errfd;
	char *ep;
	pid_t pid;

	reap(s, s->jobs);
	for (slot = 0; slot < s->jobs && s->job[slot].pid; slot++)
		;
	if (pipe2(p, O_CLOEXEC) < 0) {
		perror("pipe");
		exit(2);
	}
	ep = err_path(s, slot);
	errfd = open(ep, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	xfree(ep);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		close(p[0]);
		child_main(path, p[1], errfd, s->timeout, s->truncated);
	}
	if (errfd >= 0)
		close(errfd);
	close(p[1]);
	s->job[slot].pid = pid;
	s->job[slot].fd = p[0];
	s->job[slot].seq = s->seq++;
	s->job[slot].path = xstrdup(path);
	s->job[slot].start = now_s(CLOCK_MONOTONIC);
	s->job[slot].got = 0;
	s->active++;
}

static void consider(struct sweep *s, const char *path, const struct stat *sb)
{
	unsigned char magic[4];
	uint64_t key;
	ssize_t n;
	int fd;

	if (!S_ISREG(sb->st_mode) || sb->st_size < 4)
		return;
	key = hash_combine(hash_u64((uint64_t)sb->st_dev), (uint64_t)sb->st_ino) | 1;
	if (u64map_get(&s->seen, key))
		return;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = pread(fd, magic, 4, 0);
	close(fd);
	if (n != 4 || memcmp(magic, ELFMAG, SELFMAG))
		return;
	u64map_put(&s->seen, key, 1);
	start_job(s, path);
}

static int walk_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_F)
		consider(g_sweep, path, sb);
	return 0;
}

static void sweep_path(struct sweep *s, const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) < 0)
		return;
	if (S_ISDIR(sb.st_mode))
		nftw(path, walk_cb, 32, FTW_PHYS | FTW_MOUNT);
	else
		consider(s, path, &sb);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_entries(const void *a, const void *b)
{
	const struct summary_file *x = a, *y = b;

	return x->entries > y->entries ? -1 : x->entries < y->entries;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static void print_summary(struct sweep *s, double secs)
{
	double *t = xcalloc(s->nsf + 1, sizeof(double)), sum = 0;
	size_t i;

	for (i = 0; i < s->nsf; i++) {
		t[i] = s->sf[i].build_cpu_ms;
		sum += t[i];
	}
	qsort(t, s->nsf, sizeof(double), cmp_double);
	printf("files swept (ELF magic)     %zu\n", s->files);
	printf("  not ELF64 LE              %zu\n", s->not_elf64);
	printf("  opened                    %zu\n", s->opened);
	printf("  with a table              %zu\n", s->tables);
	printf("  CPython-like              %zu\n", s->interp_files);
	printf("sweep wall time             %.1f s (children: %.1f s)\n", secs,
	       s->total_wall_ms / 1e3);
	printf("table build CPU ms per file p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  sum %.1f\n",
	       pct(t, s->nsf, 0.5), pct(t, s->nsf, 0.9), pct(t, s->nsf, 0.99),
	       s->nsf ? t[s->nsf - 1] : 0, sum);
	printf("largest heap peak           %.1f MiB (%s)\n", (double)s->max_heap / (1 << 20),
	       s->max_heap_path ? s->max_heap_path : "-");
	printf("children: ");
	for (i = 0; i < 6; i++)
		printf("%s %zu  ", status_names[i], s->status_count[i]);
	printf("\nlargest tables:\n");
	if (s->nsf)
		qsort(s->sf, s->nsf, sizeof(*s->sf), cmp_entries);
	for (i = 0; i < s->nsf && i < 10; i++)
		printf("  %9llu entries %8.1f KiB %9.2f ms  %s\n",
		       (unsigned long long)s->sf[i].entries, (double)s->sf[i].entries * 8 / 1024,
		       s->sf[i].build_cpu_ms, s->sf[i].path);
	printf("failures by reason:\n");
	for (i = 0; i < s->nfail; i++)
		printf("  %6zu  %s\n", s->fail_counts[i], s->fail_reasons[i]);
	xfree(t);
}

static void sweep_release(struct sweep *s)
{
	size_t i;

	for (i = 0; i < s->nsf; i++)
		xfree(s->sf[i].path);
	for (i = 0; i < s->nfail; i++)
		xfree(s->fail_reasons[i]);
	xfree(s->sf);
	xfree(s->fail_reasons);
	xfree(s->fail_counts);
	xfree(s->max_heap_path);
	u64map_release(&s->seen);
}

static void usage(void)
{
	fprintf(stderr, "usage: elf_sweep [-j JOBS] [-t SECS] [-o OUT.tsv] [-r REPORT_DIR] "
			"[-l LIST] [-q] [-T] [PATH...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec",
						 "/root/.pyenv", "/usr/local" };
	struct sweep s;
	const char *out = NULL, *list = NULL;
	char tmpl[] = "/tmp/elf_sweep.XXXXXX";
	double t0 = now_s(CLOCK_MONOTONIC);
	int c, i;

	memset(&s, 0, sizeof(s));
	s.jobs = 2;
	s.timeout = 60;
	u64map_init(&s.seen);
	g_sweep = &s;
	while ((c = getopt(argc, argv, "j:t:o:r:l:qT")) != -1) {
		switch (c) {
		case 'j': s.jobs = atoi(optarg); break;
		case 't': s.timeout = atof(optarg); break;
		case 'o': out = optarg; break;
		case 'r': s.report_dir = optarg; break;
		case 'l': list = optarg; break;
		case 'q': s.quiet = 1; break;
		case 'T': s.truncated = 1; break;
		default: usage();
		}
	}
	if (s.jobs < 1 || s.jobs > MAX_JOBS || s.timeout <= 0)
		usage();
	if (!s.report_dir) {
		s.report_dir = mkdtemp(tmpl);
		if (!s.report_dir) {
			perror("mkdtemp");
			return 2;
		}
	} else if (mkdir(s.report_dir, 0755) < 0 && errno != EEXIST) {
		perror(s.report_dir);
		return 2;
	}
	if (out) {
		s.out = fopen(out, "w");
		if (!s.out) {
			perror(out);
			return 2;
		}
		fprintf(s.out, "seq\tpath\tstatus\tsize\topen_rc\tsyms_rc\tnsyms\tnsecs\tsec_errors"
			"\ttable_rc\tentries\tbytes\trows\tfdes\tbad_entries\tunsupported\tsources"
			"\tdebug_file\tpy\tcpu_ms\twall_ms\tbuild_cpu_ms\tbuild_wall_ms\tsyms_cpu_ms"
			"\theap_peak\ttable_heap_peak\tmsg\n");
	}
	signal(SIGPIPE, SIG_IGN);
	if (list) {
		FILE *f = fopen(list, "r");
		char line[4096];

		if (!f) {
			perror(list);
			return 2;
		}
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			if (line[0])
				sweep_path(&s, line);
		}
		fclose(f);
	}
	for (i = optind; i < argc; i++)
		sweep_path(&s, argv[i]);
	if (optind == argc && !list)
		for (i = 0; i < (int)(sizeof(defaults) / sizeof(defaults[0])); i++)
			sweep_path(&s, defaults[i]);
	reap(&s, 1);
	if (s.out)
		fclose(s.out);
	print_summary(&s, now_s(CLOCK_MONOTONIC) - t0);
	printf("reports in %s\n", s.report_dir);
	fflush(stdout);
	sweep_release(&s);
	return s.status_count[ST_CRASH] + s.status_count[ST_HANG] + s.status_count[ST_EXIT] +
	       s.status_count[ST_LEAK] + s.status_count[ST_NOREPORT] ? 1 : 0;
}
