/* replay.c: a case through the user-space unwinder (replay.h). */
#include "replay/replay.h"

#include "agent/aggregate.h"
#include "agent/unwind_table.h"
#include "agent/unwinder.h"
#include "lib/alloc.h"
#include "lib/buf.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

struct replay_ctx {
	const struct replay_case *c;
	FILE *trace;
	unsigned step;
};

static int src_read(void *ctx, uint64_t addr, uint64_t *out)
{
	const struct replay_ctx *r = ctx;

	return case_read_u64(r->c, addr, out);
}

static const struct unwind_mapping *src_mapping(void *ctx, uint32_t idx)
{
	const struct replay_ctx *r = ctx;
	const struct case_mapping *m = case_mapping(r->c, idx);

	return m ? &m->m : NULL;
}

static const struct unwind_entry *src_entry(void *ctx, uint32_t idx)
{
	const struct replay_ctx *r = ctx;
	const struct case_entry *e = case_entry(r->c, idx);

	return e ? &e->e : NULL;
}

/* The mapping of the case holding addr (by address, for the trace), or NULL. */
static const struct case_mapping *mapping_of(const struct replay_case *c, uint64_t addr)
{
	size_t i;

	for (i = 0; i < c->nmaps; i++)
		if (addr >= c->maps[i].m.start && addr < c->maps[i].m.end)
			return &c->maps[i];
	return NULL;
}

/* The entry the step will use for lookup in m: of the entries the case holds in m's table
 * (those the capture's step read), the last one at or below it: the step reads the right one,
 * its neighbours in the table are only the probes of its search. */
static const struct unwind_entry *entry_of(const struct replay_case *c,
					   const struct unwind_mapping *m, uint64_t lookup)
{
	const struct unwind_entry *best = NULL;
	uint64_t rel = lookup - m->bias;
	size_t i;

	for (i = 0; i < c->nentries; i++) {
		const struct case_entry *e = &c->entries[i];

		if (e->idx < m->table_first || e->idx - m->table_first >= m->table_count)
			continue;
		if (e->e.pc <= rel && (!best || e->e.pc >= best->pc))
			best = &e->e;
	}
	return best;
}

static const struct unwind_jit_links *src_jit_links(void *ctx)
{
	const struct replay_ctx *r = ctx;

	return r->c->jit.count ? &r->c->jit : NULL;
}

static void src_step(void *ctx, const struct unw_state *st)
{
	struct replay_ctx *r = ctx;
	const struct case_mapping *cm;
	uint64_t lookup = (uint64_t)st->pc - ((st->flags & UNW_S_RETADDR) ? 1 : 0);
	char rule[96];

	if (!r->trace)
		return;
	fprintf(r->trace, "step %u: pc=0x%" PRIx64 "%s sp=0x%" PRIx64 " bp=0x%" PRIx64
			  " words=%u",
		r->step++, (uint64_t)st->pc, (st->flags & UNW_S_RETADDR) ? " (return address)" : "",
		(uint64_t)st->sp, (uint64_t)st->bp, st->n);
	cm = mapping_of(r->c, lookup);
	if (!cm) {
		fprintf(r->trace, "  no mapping\n");
		return;
	}
	fprintf(r->trace, "  %s+0x%" PRIx64, cm->file[0] ? cm->file : "[anon]",
		(uint64_t)(lookup - cm->m.start));
	if (cm->m.flags & UNW_MAP_FP) {
		fprintf(r->trace, "  rule: frame pointer%s\n",
			(cm->m.flags & UNW_MAP_ANON) ? " (a guess: anonymous memory)" : "");
		return;
	}
	{
		const struct unwind_entry *e = entry_of(r->c, &cm->m, lookup);

		fprintf(r->trace, "  rule: %s\n",
			e ? unwind_rule_str(e, rule, sizeof(rule)) : "none held");
	}
}

static const char *result_name(uint32_t r)
{
	static const char *const names[USTAT__COUNT] = {
		[USTAT_COMPLETE] = "complete", [USTAT_TRUNCATED] = "truncated",
		[USTAT_ERR_NO_MAPPING] = "pc in no mapping", [USTAT_ERR_NO_TABLE] = "no table",
		[USTAT_ERR_INVALID] = "no rule", [USTAT_ERR_READ] = "memory not readable",
		[USTAT_ERR_LOOP] = "the stack did not move up", [USTAT_ERR_BAD_PC] = "bad pc",
		[USTAT_STACK_SWITCH] = "stack switch",
	};

	return r < USTAT__COUNT && names[r] ? names[r] : "?";
}

int replay_run(const struct replay_case *c, FILE *trace, struct replay_result *out)
{
	struct unwinder_opts o = { 0 };
	struct replay_ctx ctx = { c, trace, 0 };
	struct unwind_source src = { 0 };
	struct unwind_regs regs;
	struct errmsg err = { { 0 } };
	struct unwinder *u;

	memset(out, 0, sizeof(*out));
	o.max_entries = 16;
	o.max_mappings = 16;
	u = unwinder_new(NULL, &o, &err);
	if (!u)
		return -ENOMEM;
	src.ctx = &ctx;
	src.read = src_read;
	src.mapping = src_mapping;
	src.entry = src_entry;
	src.step = src_step;
	src.jit_links = src_jit_links;
	src.map_first = c->map_first;
	src.map_count = c->map_count;
	out->words = xcalloc(MAX_USER_WORDS, sizeof(uint64_t));
	regs = (struct unwind_regs){ c->pc, c->sp, c->bp, c->fsbase, c->bx, c->di };
	out->n = unwinder_unwind_from(u, (int)c->pid, &src, NULL, &regs, NULL, 0,
				      c->deferred, c->ndeferred, c->flags, out->words,
				      MAX_USER_WORDS, &out->result);
	unwinder_free(u);
	if (trace)
		fprintf(trace, "end: %s, %zu words\n", result_name(out->result), out->n);
	out->folded = replay_folded(c, out->words, out->n);
	return 0;
}

void replay_result_release(struct replay_result *r)
{
	if (!r)
		return;
	xfree(r->words);
	xfree(r->folded);
	memset(r, 0, sizeof(*r));
}

char *replay_folded(const struct replay_case *c, const uint64_t *words, size_t n)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	size_t i;

	buf_puts(&b, c->comm && c->comm[0] ? c->comm : "?");
	for (i = n; i-- > 0;) {
		uint64_t w = words[i];
		const char *name = case_name(c, w, i == 0);
		char hex[40];

		if (!name && (w >> FW_TAG_SHIFT) == FW_TAG_MARKER)
			name = agg_marker_name(w & FW_DATA_MASK);
		if (!name && (w >> FW_TAG_SHIFT) == FW_TAG_MARKER)
			continue; /* a marker that adds no frame */
		if (name && !name[0])
			continue; /* a runtime frame's second word: named with its first */
		if (!name) {
			snprintf(hex, sizeof(hex), (w >> FW_TAG_SHIFT) ? "[word 0x%" PRIx64 "]" : "0x%" PRIx64,
				 w);
			name = hex;
		}
		buf_putc(&b, ';');
		buf_puts(&b, name);
	}
	buf_putc(&b, 0);
	return buf_detach(&b, NULL);
}

int replay_matches(const struct replay_case *c, const struct replay_result *r)
{
	return c->expect && r->n == c->nexpect && r->result == c->expect_result &&
	       (!r->n || !memcmp(r->words, c->expect_words, r->n * sizeof(uint64_t)));
}
