/* pcre_jit.c: the calls into PCRE2's JIT code in a libpcre2 file (see pcre_jit.h). The BPF
 * side of the rule is unwind_step.h (unwind_jit_link()); the per-process links are published
 * by unwinder.c. */
#include "agent/pcre_jit.h"
#include "agent/elf.h"
#include "agent/unwind_table.h"
#include "lib/alloc.h"
#include "runtime/code.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SETUP_WINDOW 16 /* bytes between the set-up of rdi and the call it is for */
#define MAX_CALLS 256   /* calls looked at in one function */
#define ARGS_WORDS 4    /* words of struct jit_arguments the BPF side reads */

/* Length of an indirect call (ff /2) at buf[i] (REX prefix allowed), or 0. RIP-relative
 * operands (calls through the GOT) are not counted. */
static size_t indirect_call_len(const uint8_t *buf, size_t len, size_t i)
{
	size_t p = i, n;
	uint8_t modrm, mod, rm;

	if (p < len && (buf[p] & 0xf0) == 0x40)
		p++;
	if (p + 1 >= len || buf[p] != 0xff)
		return 0;
	modrm = buf[p + 1];
	if (((modrm >> 3) & 7) != 2)
		return 0;
	mod = modrm >> 6;
	rm = modrm & 7;
	n = p + 2 - i;
	if (mod == 3)
		return n;
	if (rm == 4) { /* SIB */
		if (p + 2 >= len)
			return 0;
		if (mod == 0 && (buf[p + 2] & 7) == 5)
			n += 4;
		n++;
	} else if (mod == 0 && rm == 5) {
		return 0; /* RIP-relative */
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return i + n <= len ? n : 0;
}

static int32_t rd32(const uint8_t *p)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		     (uint32_t)p[3] << 24;

	return (int32_t)v;
}

/* The offset from rsp of the pointer the instruction ending at buf[end] puts into rdi
 * (`mov %rsp,%rdi`, `lea (%rsp),%rdi`, `lea d8(%rsp),%rdi`, `lea d32(%rsp),%rdi`), or -1. */
static int64_t rdi_setup_ending_at(const uint8_t *buf, size_t end)
{
	if (end >= 3 && buf[end - 3] == 0x48 && buf[end - 2] == 0x89 && buf[end - 1] == 0xe7)
		return 0;
	if (end >= 4 && !memcmp(buf + end - 4, "\x48\x8d\x3c\x24", 4))
		return 0;
	if (end >= 5 && !memcmp(buf + end - 5, "\x48\x8d\x7c\x24", 4))
		return (int8_t)buf[end - 1] >= 0 ? (int64_t)(int8_t)buf[end - 1] : -1;
	if (end >= 8 && !memcmp(buf + end - 8, "\x48\x8d\xbc\x24", 4))
		return rd32(buf + end - 4) >= 0 ? (int64_t)rd32(buf + end - 4) : -1;
	return -1;
}

/* The set-up of rdi nearest before the call at buf[at], within SETUP_WINDOW bytes, or -1. */
static int64_t rdi_setup_before(const uint8_t *buf, size_t at)
{
	size_t end, lo = at > SETUP_WINDOW ? at - SETUP_WINDOW : 0;

	for (end = at; end > lo; end--) {
		int64_t k = rdi_setup_ending_at(buf, end);

		if (k >= 0)
			return k;
	}
	return -1;
}

int pcre_jit_calls(const uint8_t *buf, size_t len, uint64_t base, struct pcre_jit_call *out,
		   int max)
{
	size_t i, n;
	int count = 0;

	for (i = 0; i < len && count < max; i++) {
		struct pcre_jit_call c;

		memset(&c, 0, sizeof(c));
		if (buf[i] == 0xe8 && i + 5 <= len) {
			c.target = base + i + 5 + (uint64_t)(int64_t)rd32(buf + i + 1);
			n = 5;
		} else if ((n = indirect_call_len(buf, len, i)) == 0) {
			continue;
		}
		if (count && out[count - 1].ra == base + i + n)
			continue; /* the same call without its REX prefix */
		c.at = base + i;
		c.ra = base + i + n;
		c.args = rdi_setup_before(buf, i);
		out[count++] = c;
	}
	return count;
}

/* The CFA offset of a rule whose CFA is rsp + a constant, else 0. */
static uint64_t rsp_cfa(const struct unwind_entry *r)
{
	if (!r || (r->kind & UNW_KIND_MASK) != UNW_CFA_RSP)
		return 0;
	return UNW_CFA_OFF(r);
}

/* The rule for the frame that the return address ra is in (looked up at ra - 1). */
static const struct unwind_entry *rule_at_return(const struct unwind_table *t, uint64_t ra)
{
	const struct unwind_entry *r = unwind_table_lookup(t, ra - 1);

	return r && (r->kind & UNW_KIND_MASK) != UNW_INVALID ? r : NULL;
}

static int read_function(struct elf_file *e, uint64_t lo, uint64_t hi, uint8_t **buf)
{
	int rc;

	if (hi <= lo || hi - lo > CODE_MAX_READ)
		return -E2BIG;
	*buf = xmalloc(hi - lo);
	rc = code_read(e, lo, *buf, hi - lo);
	if (rc) {
		xfree(*buf);
		*buf = NULL;
	}
	return rc;
}

/* The link through function T (a direct call's target): T has exactly one indirect call,
 * which passes T's rdi on (the jit_arguments pointer the caller set up). */
static int link_through(struct elf_file *e, const struct unwind_table *t,
			const struct pcre_jit_call *c, struct pcre_jit_link *out)
{
	struct pcre_jit_call calls[MAX_CALLS];
	const struct unwind_entry *caller = rule_at_return(t, c->ra), *inner;
	uint64_t lo, hi, cfa;
	uint8_t *buf = NULL;
	int n, i, found = -1;

	if (!caller || rsp_cfa(caller) < (uint64_t)c->args + 8 * (ARGS_WORDS + 1) ||
	    code_function_range(e, c->target, &lo, &hi) || lo != c->target ||
	    read_function(e, lo, hi, &buf))
		return 0;
	n = pcre_jit_calls(buf, hi - lo, lo, calls, MAX_CALLS);
	xfree(buf);
	for (i = 0; i < n; i++) {
		if (calls[i].target)
			continue;
		if (found >= 0)
			return 0; /* two indirect calls: not the function we know */
		found = i;
	}
	if (found < 0)
		return 0;
	inner = rule_at_return(t, calls[found].ra);
	cfa = rsp_cfa(inner);
	/* T keeps rbp (then the caller restores it) or restores it itself */
	if (!cfa || (!inner->rbp && !caller->rbp))
		return 0;
	out->ra = calls[found].ra;
	out->below = (uint64_t)c->args + cfa + 8;
	return 1;
}

static int link_cmp(const void *a, const void *b)
{
	const struct pcre_jit_link *x = a, *y = b;

	return x->below < y->below ? -1 : x->below > y->below;
}

int pcre_jit_links(struct elf_file *e, struct pcre_jit_link *out, int max)
{
	static const char *const names[] = { "pcre2_jit_match_8", "pcre2_jit_match_16",
					     "pcre2_jit_match_32" };
	struct pcre_jit_call calls[MAX_CALLS];
	struct unwind_table t;
	uint64_t lo = 0, size = 0, hi;
	uint8_t *buf = NULL;
	size_t w;
	int n, i, count = 0, rc;

	for (w = 0; w < sizeof(names) / sizeof(names[0]); w++)
		if (elf_find_symbol(e, names[w], &lo, &size) == 0 && lo)
			break;
	if (w == sizeof(names) / sizeof(names[0]))
		return 0;
	if (size)
		hi = lo + size;
	else if (code_function_range(e, lo, &lo, &hi))
		return 0;
	rc = read_function(e, lo, hi, &buf);
	if (rc)
		return rc == -E2BIG || rc == -ENOENT ? 0 : rc;
	n = pcre_jit_calls(buf, hi - lo, lo, calls, MAX_CALLS);
	xfree(buf);
	memset(&t, 0, sizeof(t));
	if (unwind_table_build(e, NULL, NULL, 0, &t, NULL))
		return 0;
	for (i = 0; i < n && count < max; i++) {
		const struct pcre_jit_call *c = &calls[i];
		const struct unwind_entry *r;

		if (c->args < 0)
			continue;
		if (c->target) {
			count += link_through(e, &t, c, &out[count]);
			continue;
		}
		/* the direct call: its frame holds the arguments at rsp + args, and restores the
		 * caller's rbp */
		r = rule_at_return(&t, c->ra);
		if (rsp_cfa(r) < (uint64_t)c->args + 8 * (ARGS_WORDS + 1) || !r->rbp)
			continue;
		out[count].ra = c->ra;
		out[count].below = (uint64_t)c->args + 8;
		count++;
	}
	unwind_table_release(&t);
	qsort(out, (size_t)count, sizeof(*out), link_cmp);
	return count;
}
