/* v8_symbols.c: the cache of V8 functions, code and scripts per process, and V8 frame words
 * turned into frames (v8_symbols.h). */
#include "runtime/v8/v8_symbols.h"
#include "lib/alloc.h"
#include "lib/hash.h"
#include "profile/profile.h"
#include "runtime/plugin.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A script whose source could not be read (the process moved or changed it under the reader)
 * keeps its name, and its line ends are tried again, at most ENDS_TRIES times in all, at least
 * ENDS_RETRY_NS apart: its frames have lines from then on. */
#define ENDS_TRIES 4
#define ENDS_RETRY_NS (100 * 1000000ULL)

struct script {
	uint32_t pid;
	uint64_t addr;
	char *name;        /* as shown: "file://" dropped */
	uint32_t *ends;    /* line ends, NULL when unknown */
	size_t nends;
	int ends_tries;    /* reads of the line ends that failed */
	uint64_t ends_next_ns;
};

struct func {
	uint32_t pid;
	uint64_t addr;
	uint32_t chk;      /* v8_checksum(sum_a, sum_b): the POS / JITPC frames' checksum */
	uint64_t sum_a, sum_b;
	char *name;        /* shown name: the name, the inferred name, or "(anonymous)" */
	struct script *script;
	int32_t start_pos;
	uint64_t bytecode, baseline;
	int bc_loaded;     /* bcpos read (or tried) */
	struct v8_pos *bcpos;
	size_t nbcpos;
};

struct code {
	uint32_t pid;
	uint64_t addr;
	struct v8_code_info ci;
	struct v8_pos *pos;          /* machine code positions (optimized code) */
	size_t npos;
	struct v8_inlined *inl;
	uint32_t *inl_chk;           /* the checksum of each inlined function, as read with the code */
	size_t ninl;
	uint64_t outer;              /* the SFI of the code (optimized), or 0 */
	uint8_t *table, *bytecodes;  /* Sparkplug: bytecode offset table and bytecodes */
	size_t ntable, nbytecodes;
};

struct v8_symbols {
	struct u64map funcs, codes, scripts, pcs; /* key(pid, addr) -> pointer (pcs: -> Code) */
	struct u64map by_sum;  /* key(pid, checksum) -> the function last seen with it: a function
				* the GC moved since the sample is found again by what it is */
	struct func **fv;
	struct code **cv;
	struct script **sv;
	size_t nf, nc, ns, fcap, ccap, scap, npcs;
	size_t max;
	struct v8_symbols_stats st;
	char typed[64];
};

static uint64_t key(uint32_t pid, uint64_t addr)
{
	uint64_t k = hash_combine(hash_u64((uint64_t)pid + 1), addr);

	return (k == 0 || k == ~0ULL) ? 1 : k;
}

struct v8_symbols *v8_symbols_new(size_t max_entries)
{
	struct v8_symbols *s = xcalloc(1, sizeof(*s));

	u64map_init(&s->funcs);
	u64map_init(&s->codes);
	u64map_init(&s->scripts);
	u64map_init(&s->pcs);
	u64map_init(&s->by_sum);
	s->max = max_entries ? max_entries : 65536;
	return s;
}

static void free_func(struct func *f)
{
	xfree(f->name);
	xfree(f->bcpos);
	xfree(f);
}

static void free_code(struct code *c)
{
	xfree(c->pos);
	xfree(c->inl);
	xfree(c->inl_chk);
	xfree(c->table);
	xfree(c->bytecodes);
	xfree(c);
}

static void free_script(struct script *sc)
{
	xfree(sc->name);
	xfree(sc->ends);
	xfree(sc);
}

static void clear(struct v8_symbols *s)
{
	size_t i;

	for (i = 0; i < s->nf; i++)
		free_func(s->fv[i]);
	for (i = 0; i < s->nc; i++)
		free_code(s->cv[i]);
	for (i = 0; i < s->ns; i++)
		free_script(s->sv[i]);
	s->nf = s->nc = s->ns = s->npcs = 0;
	u64map_release(&s->funcs);
	u64map_release(&s->codes);
	u64map_release(&s->scripts);
	u64map_release(&s->pcs);
	u64map_release(&s->by_sum);
	u64map_init(&s->funcs);
	u64map_init(&s->codes);
	u64map_init(&s->scripts);
	u64map_init(&s->pcs);
	u64map_init(&s->by_sum);
}

void v8_symbols_free(struct v8_symbols *s)
{
	if (!s)
		return;
	clear(s);
	xfree(s->fv);
	xfree(s->cv);
	xfree(s->sv);
	xfree(s);
}

/* Called before a batch of lookups, never in the middle of one: frames already handed out
 * point into the entries. */
static void make_room(struct v8_symbols *s)
{
	if (s->nf + s->nc + s->ns + s->npcs >= s->max) {
		clear(s);
		s->st.clears++;
	}
}

void v8_symbols_forget_pid(struct v8_symbols *s, uint32_t pid)
{
	size_t i, j;

	for (i = j = 0; i < s->nf; i++) {
		if (s->fv[i]->pid == pid) {
			u64map_remove(&s->funcs, key(pid, s->fv[i]->addr));
			free_func(s->fv[i]);
		} else {
			s->fv[j++] = s->fv[i];
		}
	}
	s->nf = j;
	/* the checksum index points at functions: rebuilt from those left */
	u64map_release(&s->by_sum);
	u64map_init(&s->by_sum);
	for (i = 0; i < s->nf; i++)
		u64map_put(&s->by_sum, key(s->fv[i]->pid, s->fv[i]->chk),
			   (uint64_t)(uintptr_t)s->fv[i]);
	for (i = j = 0; i < s->nc; i++) {
		if (s->cv[i]->pid == pid) {
			u64map_remove(&s->codes, key(pid, s->cv[i]->addr));
			free_code(s->cv[i]);
		} else {
			s->cv[j++] = s->cv[i];
		}
	}
	s->nc = j;
	for (i = j = 0; i < s->ns; i++) {
		if (s->sv[i]->pid == pid) {
			u64map_remove(&s->scripts, key(pid, s->sv[i]->addr));
			free_script(s->sv[i]);
		} else {
			s->sv[j++] = s->sv[i];
		}
	}
	s->ns = j;
	/* the pc -> Code map has no pid in its values: drop it whole (it refills by scanning) */
	u64map_release(&s->pcs);
	u64map_init(&s->pcs);
	s->npcs = 0;
}

/* ---- entries */

static struct script *get_script(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
				 uint64_t addr)
{
	uint64_t *slot = u64map_get(&s->scripts, key(pid, addr));
	char name[V8_FILE_MAX];
	struct script *sc;
	const char *shown;

	if (slot) {
		sc = (struct script *)(uintptr_t)*slot;
		if (sc->pid != pid || sc->addr != addr)
			goto read;
		if (!sc->ends && r && sc->ends_tries < ENDS_TRIES &&
		    plugin_now_ns() >= sc->ends_next_ns) {
			s->st.reads++;
			r->budget = V8_READ_BUDGET;
			if (v8_read_script(r, addr, name, sizeof(name), &sc->ends, &sc->nends)) {
				sc->ends_tries++;
				sc->ends_next_ns = plugin_now_ns() + ENDS_RETRY_NS;
			}
		}
		return sc;
	}
read:
	if (!r)
		return NULL;
	sc = xcalloc(1, sizeof(*sc));
	sc->pid = pid;
	sc->addr = addr;
	s->st.reads++;
	r->budget = V8_READ_BUDGET;
	if (v8_read_script(r, addr, name, sizeof(name), &sc->ends, &sc->nends)) {
		/* the name alone, when the source cannot be read (now) */
		sc->ends_tries = 1;
		sc->ends_next_ns = plugin_now_ns() + ENDS_RETRY_NS;
		r->budget = V8_READ_BUDGET;
		if (v8_read_script(r, addr, name, sizeof(name), NULL, NULL)) {
			s->st.read_errors++;
			xfree(sc);
			return NULL;
		}
	}
	shown = !strncmp(name, "file://", 7) ? name + 7 : name;
	sc->name = xstrdup(shown[0] ? shown : "<anonymous>");
	ALLOC_GROW(s->sv, s->ns + 1, s->scap);
	s->sv[s->ns++] = sc;
	u64map_put(&s->scripts, key(pid, addr), (uint64_t)(uintptr_t)sc);
	return sc;
}

static int script_line(const struct script *sc, int32_t pos)
{
	if (!sc || !sc->ends || pos < 0)
		return 0;
	return v8_line_of(sc->ends, sc->nends, pos);
}

static struct func *read_func(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
			      uint64_t addr)
{
	struct v8_sfi_info info;
	struct func *f;

	s->st.reads++;
	r->budget = V8_READ_BUDGET;
	if (v8_read_sfi(r, addr, &info)) {
		s->st.read_errors++;
		return NULL;
	}
	f = xcalloc(1, sizeof(*f));
	f->pid = pid;
	f->addr = addr;
	f->sum_a = info.sum_a;
	f->sum_b = info.sum_b;
	f->chk = v8_checksum(info.sum_a, info.sum_b);
	f->name = xstrdup(info.name[0] ? info.name : info.inferred[0] ? info.inferred :
			  "(anonymous)");
	f->start_pos = info.start_pos;
	f->bytecode = info.bytecode;
	f->baseline = info.baseline;
	if (info.script)
		f->script = get_script(s, pid, r, info.script);
	return f;
}

/* Put nf in the cache in place of old (NULL: a new entry). */
static void put_func(struct v8_symbols *s, struct func *old, struct func *nf)
{
	size_t i;

	uint64_t *slot;

	if (old) {
		/* another function at the same address now: the entry is replaced */
		for (i = 0; i < s->nf; i++)
			if (s->fv[i] == old)
				s->fv[i] = nf;
		slot = u64map_get(&s->by_sum, key(old->pid, old->chk));
		if (slot && *slot == (uint64_t)(uintptr_t)old)
			u64map_remove(&s->by_sum, key(old->pid, old->chk));
		free_func(old);
	} else {
		ALLOC_GROW(s->fv, s->nf + 1, s->fcap);
		s->fv[s->nf++] = nf;
	}
	u64map_put(&s->funcs, key(nf->pid, nf->addr), (uint64_t)(uintptr_t)nf);
	u64map_put(&s->by_sum, key(nf->pid, nf->chk), (uint64_t)(uintptr_t)nf);
}

/* The function of pid last seen with checksum chk (v8_checksum of its scalars), when the
 * address in a frame holds something else now: the GC moved the function. */
static struct func *func_by_sum(struct v8_symbols *s, uint32_t pid, uint32_t chk)
{
	uint64_t *slot = u64map_get(&s->by_sum, key(pid, chk));
	struct func *f = slot ? (struct func *)(uintptr_t)*slot : NULL;

	if (!f || f->pid != pid || f->chk != chk)
		return NULL;
	s->st.moved++;
	return f;
}

static struct func *cached_func(struct v8_symbols *s, uint32_t pid, uint64_t addr)
{
	uint64_t *slot = u64map_get(&s->funcs, key(pid, addr));
	struct func *f = slot ? (struct func *)(uintptr_t)*slot : NULL;

	return f && f->pid == pid && f->addr == addr ? f : NULL;
}

/* The checksum a frame of f carries: with code (a CODE frame), its kind and size too. */
static uint32_t func_checksum(const struct func *f, const struct code *code)
{
	if (!code)
		return f->chk;
	return v8_checksum(f->sum_a ^ (((uint64_t)code->ci.kind << 32) | code->ci.size),
			   f->sum_b ^ code->ci.start);
}

/* The function at addr whose frame checksum is chk (with code for a CODE frame): cached, or
 * read now (again, when the cached one is another function). */
static struct func *get_func(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
			     uint64_t addr, uint32_t chk, const struct code *code)
{
	struct func *f = cached_func(s, pid, addr), *nf;

	s->st.lookups++;
	if (f && func_checksum(f, code) == chk) {
		s->st.hits++;
		if (r && f->script && !f->script->ends)
			get_script(s, pid, r, f->script->addr); /* its line ends, tried again */
		return f;
	}
	if (f)
		s->st.checksum_mismatches++;
	nf = r ? read_func(s, pid, r, addr) : NULL;
	if (nf && func_checksum(nf, code) != chk) {
		s->st.checksum_mismatches++;
		free_func(nf);
		nf = NULL;
	}
	if (!nf)
		return code ? NULL : func_by_sum(s, pid, chk);
	put_func(s, f, nf);
	return nf;
}

/* The function at addr as the process has it now (an inlined function, named by a Code object
 * just read): the cached entry when it is still the same function. */
static struct func *fresh_func(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
			       uint64_t addr)
{
	struct func *f = cached_func(s, pid, addr), *nf = read_func(s, pid, r, addr);

	if (!nf)
		return NULL;
	if (f && f->chk == nf->chk) {
		free_func(nf);
		return f;
	}
	put_func(s, f, nf);
	return nf;
}

/* The bytecode positions of f (for interpreted and Sparkplug frames), read once. */
static void func_bytecode_positions(struct v8_symbols *s, struct func *f, struct v8_reader *r)
{
	const struct v8_layout *l;
	uint8_t *tab = NULL;
	uint64_t spt;
	size_t len;

	if (f->bc_loaded || !r || !f->bytecode)
		return;
	f->bc_loaded = 1;
	l = &r->f->lay;
	r->budget = V8_READ_BUDGET;
	if (v8_field(r, f->bytecode, l->bca_spt, &spt) || v8_is_smi(spt))
		return;
	if (v8_read_byte_array(r, spt, &tab, &len))
		return; /* undefined: V8 has not made the table (lazy source positions) */
	if (v8_spt_decode(tab, len, &f->bcpos, &f->nbcpos))
		s->st.read_errors++;
	xfree(tab);
}

static struct code *read_code(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
			      uint64_t addr)
{
	const struct v8_layout *l = &r->f->lay;
	struct code *c = xcalloc(1, sizeof(*c));
	uint8_t *tab = NULL;
	size_t len;

	c->pid = pid;
	c->addr = addr;
	s->st.reads++;
	r->budget = V8_READ_BUDGET;
	if (v8_read_code(r, addr, &c->ci) ||
	    (c->ci.kind != l->kind_baseline && c->ci.kind != l->kind_maglev &&
	     c->ci.kind != l->kind_turbofan)) {
		s->st.read_errors++;
		free_code(c);
		return NULL;
	}
	if (c->ci.kind == l->kind_baseline) {
		if (c->ci.spt)
			v8_read_byte_array(r, c->ci.spt, &c->table, &c->ntable);
		if (c->ci.bytecode)
			v8_read_bytecodes(r, c->ci.bytecode, &c->bytecodes, &c->nbytecodes);
		return c;
	}
	if (c->ci.spt && !v8_read_byte_array(r, c->ci.spt, &tab, &len)) {
		if (v8_spt_decode(tab, len, &c->pos, &c->npos))
			s->st.read_errors++;
		xfree(tab);
	}
	if (c->ci.deopt && !v8_read_inlining(r, c->ci.deopt, &c->inl, &c->ninl, &c->outer) &&
	    c->ninl) {
		size_t i;

		/* the inlined functions as they are now: their frames check against this */
		c->inl_chk = xcalloc(c->ninl, sizeof(*c->inl_chk));
		for (i = 0; i < c->ninl; i++) {
			struct func *g = c->inl[i].sfi ? fresh_func(s, pid, r, c->inl[i].sfi) : NULL;

			if (g)
				c->inl_chk[i] = g->chk;
			else
				c->inl[i].sfi = 0;
		}
	}
	return c;
}

static struct code *get_code(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
			     uint64_t addr, int reread)
{
	uint64_t *slot = u64map_get(&s->codes, key(pid, addr));
	struct code *c = NULL, *nc;
	size_t i;

	s->st.lookups++;
	if (slot) {
		c = (struct code *)(uintptr_t)*slot;
		if (c->pid != pid || c->addr != addr)
			c = NULL;
	}
	if (c && !reread) {
		s->st.hits++;
		return c;
	}
	if (!r)
		return c;
	nc = read_code(s, pid, r, addr);
	if (!nc)
		return reread ? NULL : c;
	if (c) {
		for (i = 0; i < s->nc; i++)
			if (s->cv[i] == c)
				s->cv[i] = nc;
		free_code(c);
	} else {
		ALLOC_GROW(s->cv, s->nc + 1, s->ccap);
		s->cv[s->nc++] = nc;
	}
	u64map_put(&s->codes, key(pid, addr), (uint64_t)(uintptr_t)nc);
	return nc;
}

/* The Code object holding pc (a JITPC frame), found by scanning once per pc. */
static uint64_t code_of_pc(struct v8_symbols *s, uint32_t pid, struct v8_reader *r, uint64_t pc)
{
	uint64_t *slot = u64map_get(&s->pcs, key(pid, pc)), addr = 0;

	if (slot)
		return *slot;
	if (!r)
		return 0;
	s->st.code_scans++;
	r->budget = V8_READ_BUDGET;
	if (v8_code_at_pc(r, pc, &addr) == 0)
		s->st.code_scan_hits++;
	else
		addr = 0;
	u64map_put(&s->pcs, key(pid, pc), addr);
	s->npcs++;
	return addr;
}

/* ---- frames */

/* How many words the frame at w[0..n) takes (1 for a lone or malformed word). */
static size_t frame_words(const uint64_t *w, size_t n)
{
	uint64_t t0 = w[0] >> FW_TAG_SHIFT, t1, t2;

	if (t0 != FW_TAG_V8_SFI || n < 2)
		return 1;
	t1 = w[1] >> FW_TAG_SHIFT;
	if (t1 == FW_TAG_V8_POS)
		return 2;
	if ((t1 == FW_TAG_V8_CODE || t1 == FW_TAG_V8_JITPC) && n >= 3) {
		t2 = w[2] >> FW_TAG_SHIFT;
		if (t2 == FW_TAG_V8_PC || t2 == FW_TAG_V8_RET)
			return 3;
	}
	return 1;
}

static void frame_of(struct runtime_frame *fr, const struct func *f, int32_t script_offset,
		     int inlined)
{
	int line = script_line(f->script, script_offset);
	int start_line = script_line(f->script, f->start_pos);

	memset(fr, 0, sizeof(*fr));
	fr->name = f->name;
	fr->file = f->script ? f->script->name : NULL;
	fr->start_line = start_line;
	fr->line = line ? line : start_line;
	fr->kind = FRAME_PYTHON;
	fr->inlined = (uint8_t)inlined;
}

/* The line of an interpreted frame at bytecode offset bc (-1: unknown). */
static int32_t bytecode_position(struct v8_symbols *s, struct func *f, struct v8_reader *r,
				 int64_t bc)
{
	int64_t pos;

	if (bc < 0)
		return -1;
	func_bytecode_positions(s, f, r);
	pos = v8_spt_lookup(f->bcpos, f->nbcpos, (uint32_t)bc);
	return pos < 0 ? -1 : v8_pos_script_offset((uint64_t)pos);
}

/* Frames of compiled code c at pc offset off (ret: a return address) for the frame's function
 * f: the inlined functions first, f last. */
static int code_frames(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
		       const struct v8_file *vf, struct func *f, struct code *c, uint32_t off, int ret,
		       struct runtime_frame *out, int max)
{
	int64_t raw;
	int n = 0, depth;

	if (c->ci.kind == (vf ? vf->lay.kind_baseline : 0xffffffffu) || c->table) {
		int32_t bc = -1;

		if (c->table && c->bytecodes && vf)
			bc = v8_baseline_offset(c->table, c->ntable, c->bytecodes, c->nbytecodes,
						vf->bytecode_sizes, vf->nbytecodes,
						ret ? off : off + 1);
		frame_of(&out[0], f, bytecode_position(s, f, r, bc), 0);
		return 1;
	}
	raw = v8_spt_lookup(c->pos, c->npos, ret && off ? off - 1 : off);
	if (raw < 0) {
		frame_of(&out[0], f, -1, 0);
		return 1;
	}
	/* innermost inlined function first, then each caller, the code's function last */
	for (depth = 0; depth < 64 && n < max - 1; depth++) {
		int32_t id = v8_pos_inlining_id((uint64_t)raw);
		struct func *g;

		if (id < 0 || (size_t)id >= c->ninl)
			break;
		g = c->inl[id].sfi ? get_func(s, pid, r, c->inl[id].sfi, c->inl_chk[id], NULL) :
				     NULL;
		if (g)
			frame_of(&out[n++], g, v8_pos_script_offset((uint64_t)raw), 1);
		raw = (int64_t)c->inl[id].position;
	}
	frame_of(&out[n++], f, v8_pos_script_offset((uint64_t)raw), 0);
	return n;
}

static const char *typed_name(struct v8_symbols *s, const struct v8_file *f, uint64_t type)
{
	const char *name = f ? v8_frame_type_name(f, (uint32_t)type) : NULL;
	size_t len;

	if (!name) {
		snprintf(s->typed, sizeof(s->typed), "[v8: frame type %u]", (unsigned)type);
		return s->typed;
	}
	len = strlen(name);
	if (len > 5 && !strcmp(name + len - 5, "Frame"))
		len -= 5;
	snprintf(s->typed, sizeof(s->typed), "[v8: %.*s]", (int)len, name);
	return s->typed;
}

static int frames(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
		  const struct v8_file *vf, const uint64_t *w, size_t n, size_t *used,
		  struct runtime_frame *out, int max)
{
	uint64_t tag = w[0] >> FW_TAG_SHIFT, last, sfi;
	uint32_t chk, off;
	struct code *c = NULL;
	struct func *f;
	size_t k;

	*used = k = frame_words(w, n);
	if (max < 1)
		return 0;
	if (tag == FW_TAG_V8_TYPED)
		return plugin_special(out, typed_name(s, vf, w[0] & FW_DATA_MASK));
	if (tag == FW_TAG_V8_MARK)
		return plugin_special(out, "[v8: unreadable frame]");
	if (k == 1)
		return plugin_special(out, "[v8: unknown frame]");
	sfi = w[0] & FW_DATA_MASK;
	last = w[k - 1];
	chk = (uint32_t)((last >> 32) & 0xffffff);
	off = (uint32_t)last;
	if (k == 2) {
		int64_t bc = -1;

		f = get_func(s, pid, r, sfi, chk, NULL);
		if (!f)
			return plugin_special(out, "[v8: unknown function]");
		/* the frame's slot holds the offset from the BytecodeArray's tagged address */
		if (off != (uint32_t)V8_POS_UNKNOWN && vf)
			bc = (int64_t)(int32_t)off - (vf->lay.bca_data - vf->lay.heap_object_tag);
		frame_of(&out[0], f, bytecode_position(s, f, r, bc), 0);
		return 1;
	}
	if ((w[1] >> FW_TAG_SHIFT) == FW_TAG_V8_CODE) {
		c = get_code(s, pid, r, w[1] & FW_DATA_MASK, 0);
		f = c ? get_func(s, pid, r, sfi, chk, c) : NULL;
		if (c && !f && r) {
			/* the cached Code may be stale: another object at its address now */
			c = get_code(s, pid, r, w[1] & FW_DATA_MASK, 1);
			f = c ? get_func(s, pid, r, sfi, chk, c) : NULL;
		}
		if (c && !f && c->outer) {
			/* the function moved since the sample: its code still names it */
			f = cached_func(s, pid, c->outer);
			if (f && func_checksum(f, c) != chk)
				f = NULL;
			if (f)
				s->st.moved++;
		}
	} else {
		/* JITPC: the code holding pc, if it is this function's */
		uint64_t addr = code_of_pc(s, pid, r, w[1] & FW_DATA_MASK);

		f = get_func(s, pid, r, sfi, chk, NULL);
		c = addr ? get_code(s, pid, r, addr, 0) : NULL;
		if (c && f && c->ci.start <= (w[1] & FW_DATA_MASK))
			off = (uint32_t)((w[1] & FW_DATA_MASK) - c->ci.start);
		if (c && f && !((c->outer && c->outer == f->addr) ||
				(c->ci.kind == (vf ? vf->lay.kind_baseline : 0xffffffffu) &&
				 f->baseline == c->addr)))
			c = NULL; /* another function's code (a callee's prologue) */
	}
	if (!f)
		return plugin_special(out, "[v8: unknown function]");
	if (!c) {
		frame_of(&out[0], f, -1, 0);
		return 1;
	}
	return code_frames(s, pid, r, vf, f, c, off, (last >> FW_TAG_SHIFT) == FW_TAG_V8_RET, out,
			   max);
}

void v8_symbols_note(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
		     const uint64_t *words, size_t n)
{
	struct runtime_frame fr[64];
	size_t i, used;

	make_room(s);
	for (i = 0; i < n; i += used) {
		frames(s, pid, r, r->f, words + i, n - i, &used, fr, 64);
		if (used < 1)
			used = 1;
	}
}

int v8_symbols_frames(struct v8_symbols *s, uint32_t pid, struct v8_reader *r,
		      const struct v8_file *f, const uint64_t *words, size_t n, size_t *used,
		      struct runtime_frame *out, int max)
{
	int k;

	*used = 1;
	if (!n)
		return 0;
	k = frames(s, pid, r, f, words, n, used, out, max);
	if (*used < 1 || *used > n)
		*used = 1;
	return k;
}

void v8_symbols_stats(const struct v8_symbols *s, struct v8_symbols_stats *st)
{
	*st = s->st;
	st->functions = s->nf;
	st->codes = s->nc;
	st->scripts = s->ns;
}
