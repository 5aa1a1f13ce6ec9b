/* test_plugin.c: the plumbing the interpreter runtimes share (runtime/plugin.h): the check of
 * a new instance (validation with retries, then the script), JIT claims that grow, marker
 * frames, and the maps without BPF. */
#include "agent/process.h"
#include "agent/unwind_table.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/plugin.h"
#include "runtime/runtime.h"
#include "test.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* A fake process: validate() answers from a script of return codes, script() once told. */
struct fake {
	const int *answers;
	size_t n, at;
	const char *script;
	int script_calls;
};

static int fake_validate(void *proc, struct errmsg *err)
{
	struct fake *f = proc;

	if (f->at >= f->n)
		return 0;
	return f->answers[f->at++];
}

static int fake_script(void *proc, const char **out)
{
	struct fake *f = proc;

	f->script_calls++;
	if (!f->script)
		return -EAGAIN;
	*out = f->script;
	return 0;
}

static const struct plugin_check_ops ops = {
	.validate = fake_validate,
	.script = fake_script,
	.max_tries = 3,
	.again_ns = 0,
	.invalid_ns = 0,
	.script_ns = 0,
	.max_script_tries = 2,
};

static void test_check(void)
{
	static const int starting[] = { -EAGAIN, -EAGAIN, -EINVAL, -EINVAL };
	static const int wrong[] = { -EINVAL, -EINVAL, -EINVAL };
	static const int fatal[] = { -ENOTSUP };
	struct plugin_check_stats st = { 0 };
	struct plugin_check c = { 0 };
	struct fake f = { starting, 4, 0, NULL, 0 };
	char key[16], value[64];
	struct errmsg err = { 0 };
	int i;

	/* not yet, not yet, two torn reads, then it holds; the script comes later */
	for (i = 0; i < 4; i++)
		CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), 1);
	CHECK(!c.verified);
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), 1); /* verified, no script */
	CHECK(c.verified);
	CHECK_EQ_INT(st.validations, 5);
	CHECK_EQ_INT(st.validation_retries, 2);
	CHECK_EQ_INT(st.failures, 0);
	CHECK_EQ_INT(plugin_check_label(&c, key, sizeof(key), value, sizeof(value)), 0);
	f.script = "/srv/app.rb";
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), 0);
	CHECK_EQ_INT(st.validations, 5); /* not validated again */
	CHECK_EQ_INT(plugin_check_label(&c, key, sizeof(key), value, sizeof(value)), 1);
	CHECK_EQ_STR(key, "script");
	CHECK_EQ_STR(value, "/srv/app.rb");
	plugin_check_release(&c);
	CHECK(c.script == NULL);

	/* a wrong table fails every time: given up after max_tries */
	memset(&c, 0, sizeof(c));
	memset(&st, 0, sizeof(st));
	f = (struct fake){ wrong, 3, 0, NULL, 0 };
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), 1);
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), 1);
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), -EINVAL);
	CHECK_EQ_INT(st.failures, 1);
	CHECK_EQ_INT(st.validation_retries, 2);
	CHECK_EQ_INT(f.script_calls, 0);

	/* any other error at once */
	memset(&c, 0, sizeof(c));
	f = (struct fake){ fatal, 1, 0, NULL, 0 };
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), -ENOTSUP);

	/* no script after max_script_tries: done without one; 0 tries forever */
	memset(&c, 0, sizeof(c));
	f = (struct fake){ NULL, 0, 0, NULL, 0 };
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), 1);
	CHECK_EQ_INT(plugin_check_poll(&c, &ops, &f, &st, &err), 0);
	CHECK(c.script == NULL);
	{
		struct plugin_check_ops forever = ops;

		forever.max_script_tries = 0;
		memset(&c, 0, sizeof(c));
		for (i = 0; i < 50; i++)
			CHECK_EQ_INT(plugin_check_poll(&c, &forever, &f, &st, &err), 1);
	}

	/* a retry delay is kept: not due until it passed */
	{
		struct plugin_check_ops slow = ops;

		slow.again_ns = 60ULL * 1000000000ULL;
		memset(&c, 0, sizeof(c));
		f = (struct fake){ starting, 4, 0, NULL, 0 };
		CHECK_EQ_INT(plugin_check_poll(&c, &slow, &f, &st, &err), 1);
		CHECK(!plugin_check_due(&c));
		CHECK_EQ_INT(plugin_check_poll(&c, &slow, &f, &st, &err), 1);
		CHECK_EQ_INT(f.at, 1); /* not asked again */
	}
}

static void test_jit_claims(void)
{
	struct process_registry *reg = process_registry_new(NULL);
	struct plugin_jit j = { 0 };
	struct process *p;
	int i;

	CHECK_EQ_INT(process_track(reg, getpid(), NULL), 0);
	p = process_get(reg, getpid());
	CHECK_EQ_INT(plugin_jit_claim(&j, reg, getpid(), 0x10000, 0x20000, UNWINDER_RUBY), 1);
	CHECK_EQ_INT(plugin_jit_claim(&j, reg, getpid(), 0x10000, 0x20000, UNWINDER_RUBY), 0);
	CHECK_EQ_INT(j.n, 1);
	/* the code memory grew: the claim of that start is replaced, not added */
	CHECK_EQ_INT(plugin_jit_claim(&j, reg, getpid(), 0x10000, 0x30000, UNWINDER_RUBY), 1);
	CHECK_EQ_INT(j.n, 1);
	CHECK(j.range[0][1] == 0x30000);
	CHECK(p && p->nclaims == 1 && p->claims[0].end == 0x30000);
	/* bounded */
	for (i = 1; i < PLUGIN_JIT_MAX + 3; i++)
		plugin_jit_claim(&j, reg, getpid(), 0x100000ULL * (uint64_t)(i + 1),
				 0x100000ULL * (uint64_t)(i + 1) + 0x1000, UNWINDER_RUBY);
	CHECK_EQ_INT(j.n, PLUGIN_JIT_MAX);
	/* a process the registry does not know: refused */
	{
		struct plugin_jit k = { 0 };

		CHECK(plugin_jit_claim(&k, reg, 999999999, 0x1000, 0x2000, UNWINDER_RUBY) < 0);
		CHECK_EQ_INT(k.n, 0);
	}
	process_registry_free(reg);
}

static void test_small_pieces(void)
{
	struct plugin_maps m;
	struct plugin_entry e = { 1234, 0 };
	struct runtime_frame fr;
	struct errmsg err = { 0 };
	uint64_t x = 42, *copy;

	/* without BPF: no maps, nothing published, nothing to remove */
	CHECK_EQ_INT(plugin_maps_find(NULL, "a", "b", "Test", &m, &err), 0);
	CHECK(m.procs_fd == -1 && m.stats_fd == -1);
	CHECK_EQ_INT(plugin_publish(&m, &e, &x), 0);
	CHECK(!e.published);
	plugin_unpublish(&m, &e);
	memset(&fr, 0x55, sizeof(fr));
	CHECK_EQ_INT(plugin_special(&fr, "[test: marker]"), 1);
	CHECK_EQ_STR(fr.name, "[test: marker]");
	CHECK(fr.kind == FRAME_SPECIAL && fr.file == NULL && fr.line == 0 && !fr.inlined);
	copy = plugin_file_copy(&x, sizeof(x));
	CHECK(copy && copy != &x && *copy == 42);
	plugin_file_free(copy);
	CHECK(plugin_now_ns() > 0);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_check);
	RUN(test_jit_claims);
	RUN(test_small_pieces);
	return test_summary();
}
