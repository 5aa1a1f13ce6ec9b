/* test_runtime.c: the runtime framework (runtime/runtime.h) with a made-up runtime that
 * recognises this test binary: detection once per file however many processes map it, the
 * load bias handed to attach(), interpreter ranges and the file's kind for the unwinder, polls
 * until done, frame words routed by tag, frames (inlined ones too) and labels through the
 * aggregate into a profile, detach at exit and release when forgotten, words of a runtime not
 * attached to the process (garbage) shown as one [unknown] and counted, and the tag ranges of
 * bpf/sampler.h. */
#include "agent/aggregate.h"
#include "agent/elf.h"
#include "agent/process.h"
#include "agent/symbolizer.h"
#include "agent/unwind_table.h"
#include "bpf/unwind.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/python/python.h"
#include "runtime/python/python_runtime.h"
#include "runtime/runtime.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAKE_KIND UNWINDER_RUBY
#define FAKE_TAG(n) ((FW_TAG_FIRST(FAKE_KIND) + (n)) << FW_TAG_SHIFT)

/* The "eval loop" the fake runtime flags; noinline so that it has a symbol of its own. */
__attribute__((noinline)) int fake_eval(int x);
__attribute__((noinline)) int fake_eval(int x)
{
	return x * 3 + 1;
}

struct fake {
	int detects, attaches, polls, detaches, releases, symbolizes;
	uint64_t lo, hi;      /* link-time range of fake_eval */
	uint64_t bias_ok;     /* attaches whose bias maps fake_eval right */
	uint64_t noted[16];
	size_t nnoted;
	int poll_rounds;      /* polls until done */
};

static struct fake g;

static int fake_init(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		     struct errmsg *err)
{
	*state = &g;
	return 0;
}

static int fake_detect(void *state, struct elf_file *e, const char *path, void **data)
{
	uint64_t v, size;

	if (!strstr(path, "test_runtime"))
		return 0;
	g.detects++;
	if (elf_find_symbol(e, "fake_eval", &v, &size) || !size)
		return 0;
	g.lo = v;
	g.hi = v + size;
	*data = &g;
	return 1;
}

static int fake_ranges(void *data, struct unwind_range *out, int max)
{
	out[0].lo = g.lo;
	out[0].hi = g.hi;
	return 1;
}

static int fake_attach(void *state, void *data, const struct runtime_attach *at, void **inst,
		       struct errmsg *err)
{
	g.attaches++;
	if (at->proc->pid == getpid() && g.lo + at->bias == (uint64_t)(uintptr_t)fake_eval)
		g.bias_ok++;
	*inst = xcalloc(1, 8);
	return 1; /* poll me */
}

static int fake_poll(void *state, void *inst, struct errmsg *err)
{
	g.polls++;
	return g.polls >= g.poll_rounds ? 0 : 1;
}

static void fake_note(void *state, void *inst, int pid, const uint64_t *w, size_t n)
{
	size_t i;

	for (i = 0; i < n && g.nnoted < 16; i++)
		g.noted[g.nnoted++] = w[i];
}

/* One word: an inlined frame and the frame it is inlined into. */
static int fake_symbolize(void *state, void *inst, int pid, const uint64_t *w, size_t n,
			  size_t *used, struct runtime_frame *out, int max)
{
	*used = 1;
	g.symbolizes++;
	if (max < 2)
		return 0;
	memset(out, 0, 2 * sizeof(*out));
	out[0].name = "java.util.HashMap.hash";
	out[0].file = "HashMap.java";
	out[0].line = 338;
	out[0].kind = FRAME_PYTHON;
	out[0].inlined = 1;
	out[1].name = "java.util.HashMap.get";
	out[1].file = "HashMap.java";
	out[1].line = 556;
	out[1].start_line = 550;
	out[1].kind = FRAME_PYTHON;
	return 2;
}

static int fake_label(void *state, void *inst, char *key, size_t kl, char *value, size_t vl)
{
	snprintf(key, kl, "main_class");
	snprintf(value, vl, "com.example.Main");
	return 1;
}

static int changed_calls;
static struct process_registry *changed_reg;
static uint64_t jit_start, jit_end;

/* Claims the "JIT code cache" the test mapped, once the registry has seen it. */
/* Thread names: tid + 1 is a thread of the runtime ("fake-thread-with-a-long-name"), the
 * others are not. */
static int fake_thread_name(void *state, void *inst, int tid, char *out, size_t outlen)
{
	if (tid != getpid() + 1)
		return 0;
	snprintf(out, outlen, "fake-thread-with-a-long-name");
	return 1;
}

static void fake_maps_changed(void *state, void *inst, struct process *p)
{
	size_t i;

	changed_calls++;
	for (i = 0; i < p->maps.n; i++)
		if (p->maps.v[i].start == jit_start && p->maps.v[i].kind == PROCMAPS_ANON)
			process_claim(changed_reg, p->pid, jit_start, jit_end, FAKE_KIND);
}

static void fake_detach(void *state, void *inst)
{
	g.detaches++;
}

static void fake_release(void *state, void *inst)
{
	g.releases++;
	xfree(inst);
}

static const struct runtime_ops fake_ops = {
	.name = "fake",
	.kind = FAKE_KIND,
	.init = fake_init,
	.file_detect = fake_detect,
	.interp_ranges = fake_ranges,
	.attach = fake_attach,
	.poll = fake_poll,
	.note = fake_note,
	.maps_changed = fake_maps_changed,
	.symbolize = fake_symbolize,
	.label = fake_label,
	.thread_name = fake_thread_name,
	.detach = fake_detach,
	.release = fake_release,
};

static const struct runtime_ops *const table[] = { &fake_ops };

static pid_t start_copy(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void test_lifecycle(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct runtimes *rts = runtimes_new_table(table, 1, NULL);
	struct runtime_frame fr[8];
	struct unwind_range ranges[4];
	struct elf_file *e = NULL;
	const char *key, *value;
	uint64_t words[] = { 0x401000, FAKE_TAG(0) | 1, FAKE_TAG(3) | 2,
			     (FW_TAG_PYTHON << FW_TAG_SHIFT) | 5,
			     (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_TRUNCATED };
	uint64_t unknown = (FW_TAG_FIRST(9) << FW_TAG_SHIFT) | 1;
	size_t used = 0;
	uint8_t kind = 99;
	pid_t child = start_copy();
	int tries;

	memset(&g, 0, sizeof(g));
	g.poll_rounds = 2;
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, getpid(), NULL), 0);
	CHECK_EQ_INT(g.detects, 1);
	CHECK_EQ_INT(g.attaches, 1);
	CHECK_EQ_INT(g.bias_ok, 1);
	/* another process of the same file: attached, not detected again */
	CHECK_EQ_INT(process_track(reg, child, NULL), 0);
	CHECK_EQ_INT(g.detects, 1);
	CHECK_EQ_INT(g.attaches, 2);
	/* the unwinder's question about the same file: answered from the cache */
	CHECK_EQ_INT(elf_open("/proc/self/exe", &e, NULL), 0);
	CHECK_EQ_INT(runtimes_interp_ranges(rts, e, "/x/test_runtime", ranges, 4, &kind), 1);
	CHECK_EQ_INT(kind, FAKE_KIND);
	CHECK_EQ_INT(ranges[0].lo, g.lo);
	CHECK_EQ_INT(g.detects, 1);
	elf_close(e);
	/* samples: polled until done (spaced by RUNTIME_POLL_NS), only the runtime's words */
	for (tries = 0; tries < 100 && g.polls < 2; tries++) {
		runtimes_note_sample(rts, getpid(), words, 5);
		usleep(1000);
	}
	CHECK_EQ_INT(g.polls, 2);
	g.nnoted = 0;
	runtimes_note_sample(rts, getpid(), words, 5);
	CHECK_EQ_INT(g.polls, 2); /* done: not polled again */
	CHECK_EQ_INT(g.nnoted, 2);
	CHECK_EQ_INT(g.noted[0], words[1]);
	CHECK_EQ_INT(g.noted[1], words[2]);
	/* frames */
	CHECK_EQ_INT(runtimes_symbolize(rts, getpid(), &words[1], 4, &used, fr, 8), 2);
	CHECK_EQ_INT(used, 1);
	CHECK_EQ_STR(fr[0].name, "java.util.HashMap.hash");
	CHECK_EQ_INT(fr[0].inlined, 1);
	CHECK_EQ_INT(fr[1].line, 556);
	CHECK_EQ_INT(runtimes_symbolize(rts, getpid(), &unknown, 1, &used, fr, 8), 1);
	CHECK_EQ_STR(fr[0].name, "[unknown]");
	CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
	/* label */
	CHECK_EQ_INT(process_runtime_label(reg, child, &key, &value), 1);
	CHECK_EQ_STR(key, "main_class");
	CHECK_EQ_STR(value, "com.example.Main");
	/* exit: detached (its frames still symbolize), released when forgotten */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	process_exit(reg, child);
	CHECK_EQ_INT(g.detaches, 1);
	CHECK_EQ_INT(runtimes_symbolize(rts, child, &words[1], 4, &used, fr, 8), 2);
	process_registry_collect(reg);
	CHECK_EQ_INT(g.releases, 1);
	/* an exec: the old image's instance goes, the new one is attached */
	process_exec(reg, getpid(), 0, 1);
	CHECK_EQ_INT(g.releases, 2);
	CHECK_EQ_INT(g.attaches, 3);
	process_registry_free(reg);
	CHECK_EQ_INT(g.releases, 3);
	runtimes_free(rts);
}

/* A process that maps code after attach: the runtime hears of it and claims the range. */
static void test_maps_changed(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct runtimes *rts = runtimes_new_table(table, 1, NULL);
	struct process *p;
	void *jit;
	size_t i;
	int claimed = 0;

	memset(&g, 0, sizeof(g));
	changed_calls = 0;
	changed_reg = reg;
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, getpid(), NULL), 0);
	CHECK_EQ_INT(g.attaches, 1);
	CHECK_EQ_INT(changed_calls, 0); /* attach is no change */
	jit = mmap(NULL, 65536, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(jit != MAP_FAILED);
	jit_start = (uint64_t)(uintptr_t)jit;
	jit_end = jit_start + 65536;
	CHECK_EQ_INT(process_refresh(reg, getpid(), 0), 1);
	CHECK_EQ_INT(changed_calls, 1);
	p = process_get(reg, getpid());
	for (i = 0; p && i < p->nclaims; i++)
		if (p->claims[i].start == jit_start && p->claims[i].end == jit_end &&
		    p->claims[i].kind == FAKE_KIND)
			claimed = 1;
	CHECK(claimed);
	process_registry_free(reg);
	runtimes_free(rts);
	munmap(jit, 65536);
}

/* SCORCH_<NAME>=off|keep|only for each runtime of the table. */
static void test_env_knobs(void)
{
	struct runtimes_opts o;

	unsetenv("SCORCH_PYTHON");
	runtimes_opts_from_env(&o);
	CHECK(o.disable == NULL && o.keep == NULL && o.only == NULL && !o.keep_native);
	setenv("SCORCH_PYTHON", "off", 1);
	runtimes_opts_from_env(&o);
	CHECK_EQ_STR(o.disable, "python");
	setenv("SCORCH_PYTHON", "keep", 1);
	runtimes_opts_from_env(&o);
	CHECK_EQ_STR(o.keep, "python");
	CHECK(o.disable == NULL);
	setenv("SCORCH_PYTHON", "only", 1);
	runtimes_opts_from_env(&o);
	CHECK_EQ_STR(o.only, "python");
	setenv("SCORCH_PYTHON", "bogus", 1);
	runtimes_opts_from_env(&o);
	CHECK(o.disable == NULL && o.keep == NULL && o.only == NULL);
	unsetenv("SCORCH_PYTHON");
}

static void test_disabled(void)
{
	struct runtimes_opts o = { .disable = "other,fake" };
	struct process_registry *reg = process_registry_new(NULL);
	struct runtimes *rts = runtimes_new_table(table, 1, &o);

	memset(&g, 0, sizeof(g));
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, getpid(), NULL), 0);
	CHECK_EQ_INT(g.detects, 0);
	CHECK_EQ_INT(g.attaches, 0);
	process_registry_free(reg);
	runtimes_free(rts);
}

static int label_of_pid(void *ctx, uint32_t pid, const char **k, const char **v)
{
	return process_runtime_label(ctx, (int)pid, k, v);
}

/* Runtime words through the aggregate into a profile: frames and the runtime's label, with no
 * runtime-specific code in aggregate.c. */
static void test_into_profile(void)
{
	struct {
		struct event_hdr hdr;
		struct sample_body body;
		uint64_t frames[4];
	} r;
	struct process_registry *reg = process_registry_new(NULL);
	struct runtimes *rts = runtimes_new_table(table, 1, NULL);
	struct symbolizer *sym = symbolizer_new();
	struct agg *a = agg_new(0);
	struct profile *p = profile_new();
	char name[256];
	const uint32_t *locs;
	size_t i;
	int found_label = 0;

	memset(&g, 0, sizeof(g));
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	process_track(reg, getpid(), NULL);
	agg_set_runtimes(a, rts);
	memset(&r, 0, sizeof(r));
	r.hdr.type = EVENT_SAMPLE;
	r.hdr.version = SCORCH_EVENT_VERSION;
	r.hdr.pid = r.hdr.tid = (uint32_t)getpid();
	snprintf(r.body.comm, sizeof(r.body.comm), "java");
	r.body.nuser = 2;
	r.frames[0] = FAKE_TAG(0) | 7;
	r.frames[1] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_UNWIND_ERROR;
	r.hdr.size = sizeof(r.hdr) + sizeof(r.body) + 2 * 8;
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, r.hdr.size), 0);
	/* the same stack on a thread the runtime names: a sample of its own, named so */
	r.hdr.tid = (uint32_t)getpid() + 1;
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, r.hdr.size), 0);
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, r.hdr.size), 0);
	CHECK_EQ_INT((int)agg_stacks(a), 2);
	agg_set_label_source(a, label_of_pid, reg); /* the registry asks the runtime */
	CHECK_EQ_INT(agg_to_profile(a, sym, p, NULL, NULL), 0);
	CHECK_EQ_INT(p->nsamples, 2);
	CHECK_EQ_STR(profile_sample_label_str(p, &p->samples[0], "comm"), "java");
	CHECK_EQ_STR(profile_sample_label_str(p, &p->samples[1], "comm"), "fake-thread-with-a-long-name");
	CHECK_EQ_INT((int)p->samples[1].value, 2);
	locs = profile_sample_locs(p, &p->samples[0]);
	CHECK_EQ_INT(p->samples[0].nlocs, 3);
	profile_frame_name_flags(p, locs[0], PROFILE_NAME_LINES, name, sizeof(name));
	CHECK_EQ_STR(name, "java.util.HashMap.hash (HashMap.java:338)");
	profile_frame_name_flags(p, locs[1], PROFILE_NAME_LINES, name, sizeof(name));
	CHECK_EQ_STR(name, "java.util.HashMap.get (HashMap.java:556)");
	/* by function (the default) */
	profile_frame_name(p, locs[1], name, sizeof(name));
	CHECK_EQ_STR(name, "java.util.HashMap.get (HashMap.java)");
	profile_frame_name(p, locs[2], name, sizeof(name));
	CHECK_EQ_STR(name, "[unwind error]");
	for (i = 0; i < p->samples[0].nlabels; i++) {
		const struct profile_label *l = &profile_sample_labels(p, &p->samples[0])[i];

		if (!strcmp(profile_get_str(p, l->key), "main_class") &&
		    !strcmp(profile_get_str(p, l->str), "com.example.Main"))
			found_label = 1;
	}
	CHECK(found_label);
	profile_free(p);
	agg_free(a);
	symbolizer_free(sym);
	process_registry_free(reg);
	runtimes_free(rts);
}

/* A second runtime that is in the table but never found in a file: never attached. */
static int other_symbolizes;

static int other_symbolize(void *state, void *inst, int pid, const uint64_t *w, size_t n,
			   size_t *used, struct runtime_frame *out, int max)
{
	other_symbolizes++;
	*used = 1;
	memset(out, 0, sizeof(*out));
	out->name = "other.frame";
	out->kind = FRAME_PYTHON;
	return 1;
}

static const struct runtime_ops other_ops = {
	.name = "other",
	.kind = UNWINDER_PHP,
	.symbolize = other_symbolize,
};

static const struct runtime_ops *const two[] = { &fake_ops, &other_ops };

/* Words with a runtime's tag in a process that runtime is not attached to (a garbage return
 * address whose top byte passed for a tag) reach no runtime: each run of them is one
 * [unknown], counted; the attached runtime's own words still symbolize. */
static void test_stray(void)
{
	struct {
		struct event_hdr hdr;
		struct sample_body body;
		uint64_t frames[8];
	} r;
	struct process_registry *reg = process_registry_new(NULL);
	struct runtimes *rts = runtimes_new_table(two, 2, NULL);
	struct symbolizer *sym = symbolizer_new();
	struct agg *a = agg_new(0);
	struct profile *p = profile_new();
	struct runtime_frame fr[8];
	uint64_t other[3] = { (FW_TAG_FIRST(UNWINDER_PHP) << FW_TAG_SHIFT) | 5,
			      ((FW_TAG_FIRST(UNWINDER_PHP) + 2) << FW_TAG_SHIFT) | 6,
			      FAKE_TAG(0) | 1 };
	uint64_t reserved = (0x02ULL << FW_TAG_SHIFT) | 9;
	char name[256];
	const uint32_t *locs;
	size_t used = 0;
	pid_t child = start_copy();

	memset(&g, 0, sizeof(g));
	other_symbolizes = 0;
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, getpid(), NULL), 0);
	CHECK_EQ_INT(g.attaches, 1);
	/* a runtime of the table, not attached here: one [unknown] for its run of two words */
	CHECK_EQ_INT(runtimes_symbolize(rts, getpid(), other, 3, &used, fr, 8), 1);
	CHECK_EQ_INT(used, 2);
	CHECK_EQ_STR(fr[0].name, "[unknown]");
	CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
	CHECK_EQ_INT(other_symbolizes, 0);
	CHECK_EQ_INT(runtimes_stray_words(rts), 2);
	/* the attached runtime's word after them is its own */
	CHECK_EQ_INT(runtimes_symbolize(rts, getpid(), &other[2], 1, &used, fr, 8), 2);
	CHECK_EQ_INT(g.symbolizes, 1);
	/* its tag in a process it is not attached to (untracked), and in none (pid 0) */
	CHECK_EQ_INT(runtimes_symbolize(rts, child, &other[2], 1, &used, fr, 8), 1);
	CHECK_EQ_STR(fr[0].name, "[unknown]");
	CHECK_EQ_INT(runtimes_symbolize(rts, 0, &other[2], 1, &used, fr, 8), 1);
	CHECK_EQ_INT(g.symbolizes, 1);
	/* a reserved native tag */
	CHECK_EQ_INT(runtimes_symbolize(rts, getpid(), &reserved, 1, &used, fr, 8), 1);
	CHECK_EQ_STR(fr[0].name, "[unknown]");
	CHECK_EQ_INT(runtimes_stray_words(rts), 5);
	CHECK_EQ_INT(other_symbolizes, 0);

	/* through the aggregate: garbage words between the runtime's frame and the marker */
	agg_set_runtimes(a, rts);
	memset(&r, 0, sizeof(r));
	r.hdr.type = EVENT_SAMPLE;
	r.hdr.version = SCORCH_EVENT_VERSION;
	r.hdr.pid = r.hdr.tid = (uint32_t)getpid();
	snprintf(r.body.comm, sizeof(r.body.comm), "x");
	r.body.nuser = 5;
	r.frames[0] = FAKE_TAG(0) | 7;
	r.frames[1] = other[0];
	r.frames[2] = other[1];
	r.frames[3] = reserved;
	r.frames[4] = (FW_TAG_MARKER << FW_TAG_SHIFT) | FW_MARKER_UNWIND_ERROR;
	r.hdr.size = sizeof(r.hdr) + sizeof(r.body) + 5 * 8;
	CHECK_EQ_INT(agg_add_record(a, &r.hdr, r.hdr.size), 0);
	CHECK_EQ_INT(agg_to_profile(a, sym, p, NULL, NULL), 0);
	CHECK_EQ_INT(p->nsamples, 1);
	locs = profile_sample_locs(p, &p->samples[0]);
	CHECK_EQ_INT(p->samples[0].nlocs, 5);
	profile_frame_name(p, locs[0], name, sizeof(name));
	CHECK_EQ_STR(name, "java.util.HashMap.hash (HashMap.java)");
	profile_frame_name(p, locs[2], name, sizeof(name));
	CHECK_EQ_STR(name, "[unknown]");
	profile_frame_name(p, locs[3], name, sizeof(name));
	CHECK_EQ_STR(name, "[unknown]");
	profile_frame_name(p, locs[4], name, sizeof(name));
	CHECK_EQ_STR(name, "[unwind error]");
	CHECK_EQ_INT(other_symbolizes, 0);
	CHECK_EQ_INT(runtimes_stray_words(rts), 8);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	profile_free(p);
	agg_free(a);
	symbolizer_free(sym);
	process_registry_free(reg);
	runtimes_free(rts);
}

/* The tag ranges of bpf/sampler.h and the kinds of the built-in table. */
static void test_tags(void)
{
	CHECK_EQ_INT(FW_TAG_KIND(FW_TAG_NATIVE), UNWINDER_NATIVE);
	CHECK_EQ_INT(FW_TAG_KIND(FW_TAG_MARKER), UNWINDER_NATIVE);
	CHECK_EQ_INT(FW_TAG_KIND(FW_TAG_SNAPSHOT), UNWINDER_NATIVE);
	CHECK_EQ_INT(FW_TAG_KIND(FW_TAG_PYTHON), UNWINDER_PYTHON);
	CHECK_EQ_INT(FW_TAG_KIND(FW_TAG_PYTHON_INSTR), UNWINDER_PYTHON);
	CHECK_EQ_INT(FW_TAG_KIND(FW_TAG_PYTHON_MARK), UNWINDER_PYTHON);
	CHECK_EQ_INT(FW_TAG_KIND(0xff), UNWINDER_KINDS - 1);
	CHECK_EQ_INT(python_runtime_ops.kind, UNWINDER_PYTHON);
	CHECK(UNWINDER_KINDS <= 16); /* one 4-bit range each in the tag byte */
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_tags);
	RUN(test_lifecycle);
	RUN(test_maps_changed);
	RUN(test_env_knobs);
	RUN(test_disabled);
	RUN(test_into_profile);
	RUN(test_stray);
	return test_summary();
}
