/* capture.c: a replay case from a live thread (replay.h, replay_capture()). */
#include "replay/replay.h"

#include "agent/procmaps.h"
#include "agent/symbolizer.h"
#include "agent/unwinder.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define CAPTURE_STACK_MAX (1u << 20) /* stack bytes copied from sp (the unwind's own copy) */

struct capture {
	struct replay_case *c;
	int memfd;
	const struct procmaps *pm;
	int err;
};

/* Keep the whole page(s) holding [addr, addr + len): read again from the stopped process. */
static void tap_read(void *ctx, uint64_t addr, const void *data, size_t len)
{
	struct capture *cp = ctx;
	uint64_t page = addr & ~(uint64_t)(CASE_PAGE - 1), held;
	uint8_t buf[CASE_PAGE];
	int rc;

	for (; page < addr + len; page += CASE_PAGE) {
		if (case_read_u64(cp->c, page > addr ? page : addr, &held) == 0)
			continue; /* read before: the case has it */
		if (pread(cp->memfd, buf, CASE_PAGE, (off_t)page) == (ssize_t)CASE_PAGE)
			rc = case_add_mem(cp->c, page, buf, CASE_PAGE);
		else /* the last page of a mapping may end early: keep what was read */
			rc = case_add_mem(cp->c, addr, data, (uint32_t)len);
		if (rc == -ENOSPC)
			cp->err = rc;
	}
}

static const char *file_of(const struct procmaps *pm, uint64_t start, uint64_t end)
{
	size_t i;

	for (i = 0; i < pm->n; i++) {
		const struct procmaps_entry *e = &pm->v[i];

		if (e->start < end && start < e->end)
			return e->path[0] ? e->path : "";
	}
	return "";
}

static void tap_mapping(void *ctx, uint32_t idx, const struct unwind_mapping *m)
{
	struct capture *cp = ctx;

	if (case_add_mapping(cp->c, idx, m, file_of(cp->pm, m->start, m->end)) < 0)
		cp->err = -ENOSPC;
}

static void tap_entry(void *ctx, uint32_t idx, const struct unwind_entry *e)
{
	struct capture *cp = ctx;

	if (case_add_entry(cp->c, idx, e) < 0)
		cp->err = -ENOSPC;
}

/* The PCRE2 JIT links the step asked for (both kinds of capture: the case is the first
 * member of each context). */
static void tap_jit_links(void *ctx, const struct unwind_jit_links *jl)
{
	struct replay_case *c = *(struct replay_case **)ctx;

	c->jit = *jl;
}

/* The frame text of a native word, as a profile names it: the function (or module+0x...), the
 * functions inlined there after it (root first). */
static char *native_text(struct symbolizer *sym, int pid, uint64_t addr)
{
	struct sym_result r;
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	size_t i;

	memset(&r, 0, sizeof(r));
	if (symbolizer_user(sym, pid, addr, &r) < 0 || !r.name) {
		if (r.module)
			buf_printf(&b, "%s+0x%" PRIx64, strrchr(r.module, '/') ? strrchr(r.module, '/') + 1
									: r.module,
				   r.module_offset);
		else
			buf_puts(&b, "[unknown]");
	} else {
		buf_puts(&b, r.name);
		for (i = r.ninlined; i-- > 0;)
			if (r.inlined[i].name)
				buf_printf(&b, ";%s", r.inlined[i].name);
	}
	buf_putc(&b, 0);
	return buf_detach(&b, NULL);
}

/* Whether sp is off the main thread's own stack, as the BPF sampler tells it (mm->start_stack,
 * field 28 of /proc/PID/stat): a thread other than the main one never is. */
static int off_stack(int pid, int tid, uint64_t sp)
{
	char path[64], buf[1024], *p;
	unsigned long long top = 0;
	FILE *f;
	int field;

	if (pid != tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return 0;
	/* fields after the comm: 3 (state) on */
	for (field = 2; field < 28 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &top) != 1)
		return 0;
	return top && !(top > sp && top - sp <= UNW_MAIN_STACK_SPAN);
}

static int stop_thread(int tid, struct user_regs_struct *regs, struct errmsg *err)
{
	int status;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
		return errmsg_set(err, -errno, "cannot trace thread %d: %s", tid, strerror(errno));
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 ||
	    waitpid(tid, &status, __WALL) != tid || !WIFSTOPPED(status)) {
		int e = errno ? errno : ESRCH;

		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return errmsg_set(err, -e, "cannot stop thread %d: %s", tid, strerror(e));
	}
	if (ptrace(PTRACE_GETREGS, tid, NULL, regs) < 0) {
		int e = errno;

		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return errmsg_set(err, -e, "cannot read the registers of thread %d: %s", tid,
				  strerror(e));
	}
	return 0;
}

int replay_capture(struct unwinder *u, struct symbolizer *sym, int pid, int tid,
		   const char *comm, struct replay_case *c, struct errmsg *err)
{
	struct user_regs_struct regs;
	struct capture cp = { c, -1, NULL, 0 };
	struct unwind_tap tap = { &cp, tap_read, tap_mapping, tap_entry, tap_jit_links };
	struct unwind_regs ur;
	struct procmaps pm;
	uint8_t *stack = NULL;
	uint64_t *words = NULL;
	size_t len = 0, n, i;
	uint32_t result = 0;
	char path[64];
	int rc;

	memset(c, 0, sizeof(*c));
	memset(&pm, 0, sizeof(pm));
	if (unwinder_pid_mappings(u, pid, &c->map_first, &c->map_count) < 0)
		return errmsg_set(err, -ESRCH, "process %d is not known to the unwinder", pid);
	rc = procmaps_read(pid, &pm, err);
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	cp.memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (cp.memfd < 0) {
		rc = errmsg_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
		procmaps_release(&pm);
		return rc;
	}
	cp.pm = &pm;
	rc = stop_thread(tid, &regs, err);
	if (rc < 0)
		goto out;
	/* the stack from sp, page by page, to the end of its mapping */
	stack = xmalloc(CAPTURE_STACK_MAX);
	while (len < CAPTURE_STACK_MAX) {
		uint64_t addr = regs.rsp + len;
		size_t chunk = CASE_PAGE - (addr & (CASE_PAGE - 1));
		ssize_t got;

		if (chunk > CAPTURE_STACK_MAX - len)
			chunk = CAPTURE_STACK_MAX - len;
		got = pread(cp.memfd, stack + len, chunk, (off_t)addr);

		if (got <= 0)
			break;
		len += (size_t)got;
	}
	words = xcalloc(MAX_USER_WORDS, sizeof(uint64_t));
	c->flags = off_stack(pid, tid, regs.rsp) ? UNW_S_OFF_STACK : 0;
	ur = (struct unwind_regs){ regs.rip, regs.rsp, regs.rbp, regs.fs_base, regs.rbx, regs.rdi };
	n = unwinder_unwind_from(u, pid, NULL, &tap, &ur, stack, len, NULL, 0, c->flags, words,
				 MAX_USER_WORDS, &result);
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	if (cp.err) {
		rc = errmsg_set(err, cp.err, "the case would be too big");
		goto out;
	}
	c->pid = (uint32_t)pid;
	c->tid = (uint32_t)tid;
	c->pc = regs.rip;
	c->sp = regs.rsp;
	c->bp = regs.rbp;
	c->fsbase = regs.fs_base;
	c->bx = regs.rbx;
	c->di = regs.rdi;
	c->have_regs = 1;
	c->comm = xstrdup(comm && comm[0] ? comm : "?");
	for (i = 0; i < n; i++) {
		char *text;

		if (words[i] >> FW_TAG_SHIFT)
			continue; /* markers: named by the replay */
		text = native_text(sym, pid, i ? words[i] - 1 : words[i]);
		case_add_name(c, words[i], i == 0, text);
		xfree(text);
	}
	c->expect_result = result;
	c->nexpect = n;
	c->expect_words = words;
	words = NULL;
	c->expect = replay_folded(c, c->expect_words, c->nexpect);
	rc = 0;
out:
	if (rc < 0)
		case_release(c);
	xfree(words);
	xfree(stack);
	close(cp.memfd);
	procmaps_release(&pm);
	return rc;
}

/* ---- from a sample's stack snapshot (record --capture-dir) */

struct snap_capture {
	struct replay_case *c;
	const struct unwinder_snapshot *snap;
	const struct procmaps *pm;
	int err;
};

/* The part of the page holding addr that the snapshot holds; a read beyond it (the live
 * process, across a followed stack switch): its 8 bytes. */
static void snap_read(void *ctx, uint64_t addr, const void *data, size_t len)
{
	struct snap_capture *sc = ctx;
	const struct unwinder_snapshot *s = sc->snap;
	uint64_t page = addr & ~(uint64_t)(CASE_PAGE - 1), from, to;
	int rc;

	if (addr >= s->sp && addr - s->sp < s->len) {
		from = page > s->sp ? page : s->sp;
		to = page + CASE_PAGE < s->sp + s->len ? page + CASE_PAGE : s->sp + s->len;
		rc = case_add_mem(sc->c, from, (const uint8_t *)s->stack + (from - s->sp),
				  (uint32_t)(to - from));
	} else {
		rc = case_add_mem(sc->c, addr, data, (uint32_t)len);
	}
	if (rc == -ENOSPC)
		sc->err = rc;
}

static void snap_mapping(void *ctx, uint32_t idx, const struct unwind_mapping *m)
{
	struct snap_capture *sc = ctx;

	if (case_add_mapping(sc->c, idx, m, sc->pm ? file_of(sc->pm, m->start, m->end) : "") < 0)
		sc->err = -ENOSPC;
}

static void snap_entry(void *ctx, uint32_t idx, const struct unwind_entry *e)
{
	struct snap_capture *sc = ctx;

	if (case_add_entry(sc->c, idx, e) < 0)
		sc->err = -ENOSPC;
}

/* Name every word of words[0..n) into c: native words by sym, runtime words by rts (a frame
 * of several words is named on its first; the others name nothing). */
static void name_words(struct replay_case *c, struct symbolizer *sym, struct runtimes *rts,
		       int pid, const uint64_t *words, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint64_t w = words[i];
		unsigned tag = (unsigned)(w >> FW_TAG_SHIFT);

		if (tag == 0) {
			char *text = native_text(sym, pid, i ? w - 1 : w);

			case_add_name(c, w, i == 0, text);
			xfree(text);
			i++;
		} else if (tag == FW_TAG_MARKER || !rts) {
			i++; /* markers: named by the replay; runtime words without runtimes: bare */
		} else {
			struct runtime_frame fr[16];
			struct buf b = BUF_INIT(BUF_UNLIMITED);
			size_t used = 1, k;
			int nf = runtimes_symbolize(rts, pid, words + i, n - i, &used, fr, 16), j;

			for (j = nf; j-- > 0;)
				buf_printf(&b, "%s%s%s%s%s", b.len ? ";" : "",
					   fr[j].name ? fr[j].name : "[unknown]",
					   fr[j].file ? " (" : "", fr[j].file ? fr[j].file : "",
					   fr[j].file ? ")" : "");
			buf_putc(&b, 0);
			case_add_name(c, w, i == 0, b.data ? b.data : "");
			for (k = 1; k < used && i + k < n; k++)
				case_add_name(c, words[i + k], 0, "");
			buf_release(&b);
			i += used ? used : 1;
		}
	}
}

int replay_capture_snapshot(struct unwinder *u, struct symbolizer *sym, struct runtimes *rts,
			    const struct unwinder_snapshot *snap, struct replay_case *c,
			    struct errmsg *err)
{
	struct snap_capture sc = { c, snap, NULL, 0 };
	struct unwind_tap tap = { &sc, snap_read, snap_mapping, snap_entry, tap_jit_links };
	struct unwind_regs ur = { snap->pc, snap->sp, snap->bp, 0, 0, 0 };
	struct procmaps pm;
	uint64_t *words;
	uint32_t result = 0;
	size_t n;

	memset(c, 0, sizeof(*c));
	memset(&pm, 0, sizeof(pm));
	if (unwinder_pid_mappings(u, snap->pid, &c->map_first, &c->map_count) < 0)
		return errmsg_set(err, -ESRCH, "process %d has no mappings published", snap->pid);
	if (procmaps_read(snap->pid, &pm, NULL) == 0)
		sc.pm = &pm;
	words = xcalloc(MAX_USER_WORDS, sizeof(uint64_t));
	c->flags = snap->flags;
	n = unwinder_unwind_from(u, snap->pid, NULL, &tap, &ur, snap->stack, snap->len,
				 snap->deferred, snap->ndeferred, c->flags, words, MAX_USER_WORDS,
				 &result);
	if (sc.err) {
		xfree(words);
		procmaps_release(&pm);
		case_release(c);
		return errmsg_set(err, sc.err, "the case would be too big");
	}
	c->pid = (uint32_t)snap->pid;
	c->tid = (uint32_t)snap->tid;
	c->pc = snap->pc;
	c->sp = snap->sp;
	c->bp = snap->bp;
	c->have_regs = 1;
	c->comm = snap->comm ? strndup(snap->comm, 15) : xstrdup("?");
	if (!c->comm)
		c->comm = xstrdup("?");
	if (snap->ndeferred) {
		c->deferred = xmalloc(snap->ndeferred * sizeof(uint64_t));
		memcpy(c->deferred, snap->deferred, snap->ndeferred * sizeof(uint64_t));
		c->ndeferred = snap->ndeferred;
	}
	name_words(c, sym, rts, snap->pid, words, n);
	c->expect_result = result;
	c->nexpect = n;
	c->expect_words = words;
	c->expect = replay_folded(c, words, n);
	procmaps_release(&pm);
	return 0;
}
