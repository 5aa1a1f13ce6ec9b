/* plugin.c: the plumbing the interpreter runtimes share (plugin.h). */
#include "runtime/plugin.h"
#include "agent/process.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/runtime.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t plugin_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void *plugin_file_copy(const void *f, size_t size)
{
	void *p = xmalloc(size);

	memcpy(p, f, size);
	return p;
}

void plugin_file_free(void *data)
{
	xfree(data);
}

int plugin_maps_find(struct bpf_object *obj, const char *procs, const char *stats,
		     const char *what, struct plugin_maps *out, struct errmsg *err)
{
	struct bpf_map *p, *s;

	out->procs_fd = out->stats_fd = -1;
	if (!obj)
		return 0;
	p = bpf_object__find_map_by_name(obj, procs);
	s = bpf_object__find_map_by_name(obj, stats);
	if (!p || !s)
		return errmsg_set(err, -ENOENT, "the BPF object has no %s maps", what);
	out->procs_fd = bpf_map__fd(p);
	out->stats_fd = bpf_map__fd(s);
	return 0;
}

int plugin_publish(const struct plugin_maps *m, struct plugin_entry *e, const void *value)
{
	__u32 key = (__u32)e->pid;

	if (m->procs_fd < 0)
		return 0;
	if (bpf_map_update_elem(m->procs_fd, &key, value, BPF_ANY))
		return -errno;
	e->published = 1;
	return 0;
}

void plugin_unpublish(const struct plugin_maps *m, struct plugin_entry *e)
{
	if (e->published && m->procs_fd >= 0) {
		__u32 key = (__u32)e->pid;

		bpf_map_delete_elem(m->procs_fd, &key);
	}
	e->published = 0;
}

int plugin_check_due(const struct plugin_check *c)
{
	return plugin_now_ns() >= c->next_try_ns;
}

int plugin_check_poll(struct plugin_check *c, const struct plugin_check_ops *ops, void *proc,
		      struct plugin_check_stats *st, struct errmsg *err)
{
	const char *script;
	int rc;

	if (!plugin_check_due(c))
		return 1;
	if (!c->verified) {
		st->validations++;
		rc = ops->validate(proc, err);
		if (rc == -EAGAIN) {
			c->next_try_ns = plugin_now_ns() + ops->again_ns;
			return 1;
		}
		if (rc == -EINVAL && ++c->tries < ops->max_tries) {
			/* a frame pushed or popped while we read looks like a bad offset once; a
			 * wrong table fails every time */
			st->validation_retries++;
			c->next_try_ns = plugin_now_ns() + ops->invalid_ns;
			return 1;
		}
		if (rc) {
			st->failures++;
			return rc;
		}
		c->verified = 1;
	}
	if (ops->script(proc, &script) == 0) {
		xfree(c->script);
		c->script = xstrdup(script);
		return 0;
	}
	if (ops->max_script_tries && ++c->script_tries >= ops->max_script_tries)
		return 0;
	c->next_try_ns = plugin_now_ns() + ops->script_ns;
	return 1;
}

int plugin_check_label(const struct plugin_check *c, char *key, size_t keylen, char *value,
		       size_t valuelen)
{
	if (!c->script)
		return 0;
	snprintf(key, keylen, "script");
	snprintf(value, valuelen, "%s", c->script);
	return 1;
}

void plugin_check_release(struct plugin_check *c)
{
	xfree(c->script);
	c->script = NULL;
}

int plugin_jit_claim(struct plugin_jit *j, struct process_registry *reg, int pid, uint64_t start,
		     uint64_t end, int kind)
{
	int k, rc;

	for (k = 0; k < j->n && j->range[k][0] != start; k++)
		;
	if (k < j->n && j->range[k][1] == end)
		return 0;
	if (k == j->n && j->n == PLUGIN_JIT_MAX)
		return 0;
	rc = process_claim(reg, pid, start, end, kind);
	if (rc)
		return rc;
	j->range[k][0] = start;
	j->range[k][1] = end;
	if (k == j->n)
		j->n++;
	return 1;
}

int plugin_special(struct runtime_frame *out, const char *name)
{
	memset(out, 0, sizeof(*out));
	out->name = name;
	out->kind = FRAME_SPECIAL;
	return 1;
}
