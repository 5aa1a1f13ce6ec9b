/* cfi.c: the DWARF CFI parser (see cfi.h). A walk over CIE/FDE entries; each FDE's call frame
 * program runs on a small register state (CFA, RBP, return address) and a row is reported each
 * time the location advances. CIEs are parsed once and cached (direct mapped, fixed size), so
 * a section with many FDEs sharing a few CIEs costs one pass. */
#include "agent/cfi.h"
#include "lib/log.h"

#include <errno.h>
#include <string.h>

/* DW_CFA_* opcodes */
enum {
	CFA_nop = 0x00, CFA_set_loc = 0x01, CFA_advance_loc1 = 0x02, CFA_advance_loc2 = 0x03,
	CFA_advance_loc4 = 0x04, CFA_offset_extended = 0x05, CFA_restore_extended = 0x06,
	CFA_undefined = 0x07, CFA_same_value = 0x08, CFA_register = 0x09,
	CFA_remember_state = 0x0a, CFA_restore_state = 0x0b, CFA_def_cfa = 0x0c,
	CFA_def_cfa_register = 0x0d, CFA_def_cfa_offset = 0x0e, CFA_def_cfa_expression = 0x0f,
	CFA_expression = 0x10, CFA_offset_extended_sf = 0x11, CFA_def_cfa_sf = 0x12,
	CFA_def_cfa_offset_sf = 0x13, CFA_val_offset = 0x14, CFA_val_offset_sf = 0x15,
	CFA_val_expression = 0x16, CFA_GNU_window_save = 0x2d, CFA_GNU_args_size = 0x2e,
	CFA_GNU_negative_offset_extended = 0x2f,
	CFA_advance_loc = 0x40, CFA_offset = 0x80, CFA_restore = 0xc0,
};

/* DW_OP_* opcodes used by the expressions we recognize */
enum {
	OP_deref = 0x06, OP_and = 0x1a, OP_plus = 0x22, OP_shl = 0x24, OP_ge = 0x2a,
	OP_lit0 = 0x30, OP_breg0 = 0x70,
};

#define PE_omit 0xff

struct reader {
	const uint8_t *p;
	size_t pos, end;
	int bad;
};

static uint64_t rd_bytes(struct reader *r, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	if (r->bad || r->end - r->pos < n || r->pos > r->end) {
		r->bad = 1;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->pos + i] << (8 * i);
	r->pos += n;
	return v;
}

static uint8_t rd_u8(struct reader *r)
{
	return (uint8_t)rd_bytes(r, 1);
}

static uint64_t rd_uleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;

		if (r->bad || r->pos >= r->end) {
			r->bad = 1;
			return 0;
		}
		b = r->p[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		else if (b & 0x7f)
			r->bad = 1; /* does not fit in 64 bits */
		shift += 7;
		if (!(b & 0x80))
			return v;
		if (shift > 140) { /* absurdly long encoding */
			r->bad = 1;
			return 0;
		}
	}
}

static int64_t rd_sleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	for (;;) {
		if (r->bad || r->pos >= r->end) {
			r->bad = 1;
			return 0;
		}
		b = r->p[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
		if (shift > 140) {
			r->bad = 1;
			return 0;
		}
	}
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* A pointer with an .eh_frame encoding. secaddr is the section's vaddr (for pcrel). Indirect
 * pointers are returned as the address of the pointer (we never need their target). */
static uint64_t rd_encoded(struct reader *r, uint8_t enc, uint64_t secaddr)
{
	uint64_t fieldaddr = secaddr + r->pos, v;

	if (enc == PE_omit)
		return 0;
	if ((enc & 0x70) == 0x50) { /* aligned */
		size_t a = (r->pos + 7) & ~(size_t)7;

		if (a > r->end) {
			r->bad = 1;
			return 0;
		}
		r->pos = a;
		return rd_bytes(r, 8);
	}
	switch (enc & 0x0f) {
	case 0x00: v = rd_bytes(r, 8); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_bytes(r, 2); break;
	case 0x03: v = rd_bytes(r, 4); break;
	case 0x04: v = rd_bytes(r, 8); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_bytes(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_bytes(r, 4); break;
	case 0x0c: v = rd_bytes(r, 8); break;
	default:
		r->bad = 1;
		return 0;
	}
	switch (enc & 0x70) {
	case 0x00:
		break;
	case 0x10:
		v += fieldaddr;
		break;
	default: /* textrel, datarel, funcrel: bases we do not know */
		r->bad = 1;
		return 0;
	}
	return v;
}

/* The size of an encoded value's format, for pc_range (which has no application part). */
static uint64_t rd_encoded_plain(struct reader *r, uint8_t enc)
{
	return rd_encoded(r, enc & 0x0f, 0);
}

/* An offset times the data alignment factor. Hostile operands overflow: the result saturates,
 * which no rule accepts (see unwind_rule_from_cfi()), instead of being undefined behaviour. */
static int64_t scaled(int64_t v, int64_t factor)
{
	int64_t r;

	if (__builtin_mul_overflow(v, factor, &r))
		return (v < 0) != (factor < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

struct regrule {
	uint8_t kind;
	int64_t off;
};

struct state {
	uint8_t cfa_kind, cfa_reg, plt_thresh;
	int64_t cfa_off;
	struct regrule rbp, ra;
};

struct cie {
	size_t offset; /* key: section offset of the CIE; SIZE_MAX when the slot is empty */
	int valid;
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc, has_z, signal, ra_reg, addr_size;
	struct state init;
};

#define CIE_CACHE 64

struct walk {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;
	int kind;
	cfi_row_fn fn;
	cfi_fde_fn fde_fn; /* cfi_fdes(): ranges only, programs are not run */
	void *arg;
	struct cfi_stats *stats;
	struct cie cache[CIE_CACHE];
	int stop; /* the callback's non-zero value */
};

/* Recognize the CFA expressions we can evaluate; anything else is CFI_CFA_EXPR. */
static void parse_cfa_expr(const uint8_t *p, size_t len, struct state *st)
{
	struct reader r = { p, 0, len, 0 };
	uint8_t op = rd_u8(&r);

	st->cfa_kind = CFI_CFA_EXPR;
	if (r.bad || op < OP_breg0 || op > OP_breg0 + 31)
		return;
	{
		uint8_t reg = op - OP_breg0;
		int64_t off = rd_sleb(&r);
		uint8_t op2 = rd_u8(&r);

		if (r.bad)
			return;
		if (op2 == OP_deref && r.pos == len) {
			/* CFA = *(reg + off): realigned frames (gcc's DRAP) */
			st->cfa_kind = CFI_CFA_DEREF;
			st->cfa_reg = reg;
			st->cfa_off = off;
			return;
		}
		/* PLT: breg7 off; breg16 0; lit15; and; litN; ge; lit3; shl; plus */
		if (reg == CFI_REG_RSP && op2 == OP_breg0 + CFI_REG_RA) {
			int64_t z = rd_sleb(&r);
			uint8_t a = rd_u8(&r), b = rd_u8(&r), c = rd_u8(&r), d = rd_u8(&r);
			uint8_t e = rd_u8(&r), f = rd_u8(&r), g = rd_u8(&r);

			if (r.bad || r.pos != len || z != 0 || a != OP_lit0 + 15 || b != OP_and ||
			    c < OP_lit0 || c > OP_lit0 + 15 || d != OP_ge || e != OP_lit0 + 3 ||
			    f != OP_shl || g != OP_plus)
				return;
			st->cfa_kind = CFI_CFA_PLT;
			st->cfa_reg = CFI_REG_RSP;
			st->cfa_off = off;
			st->plt_thresh = c - OP_lit0;
		}
	}
}

/* A register saved at RBP + off (DW_OP_breg6 off): how gcc describes RBP in realigned frames. */
static void reg_expr(const uint8_t *p, size_t len, struct regrule *rr)
{
	struct reader r = { p, 0, len, 0 };
	uint8_t op = rd_u8(&r);
	int64_t off = rd_sleb(&r);

	if (!r.bad && r.pos == len && op == OP_breg0 + CFI_REG_RBP) {
		rr->kind = CFI_R_AT_RBP;
		rr->off = off;
	}
}

static struct regrule *rule_of(struct state *st, uint64_t reg)
{
	if (reg == CFI_REG_RBP)
		return &st->rbp;
	if (reg == CFI_REG_RA)
		return &st->ra;
	return NULL;
}

static void set_rule(struct state *st, uint64_t reg, uint8_t kind, int64_t off)
{
	struct regrule *rr = rule_of(st, reg);

	if (rr) {
		rr->kind = kind;
		rr->off = off;
	}
}

struct program {
	const struct cie *cie;
	uint64_t loc, end; /* current location, end of the FDE's range */
	uint64_t row_start;
	int emit;          /* 0 while running CIE initial instructions */
};

static int emit_row(struct walk *w, struct program *pg, const struct state *st, uint64_t upto)
{
	struct cfi_row row;

	if (!pg->emit || upto <= pg->row_start)
		return 0;
	memset(&row, 0, sizeof(row));
	row.start = pg->row_start;
	row.end = upto;
	row.cfa_kind = st->cfa_kind;
	row.cfa_reg = st->cfa_reg;
	row.cfa_off = st->cfa_off;
	row.plt_thresh = st->plt_thresh;
	row.rbp_kind = st->rbp.kind;
	row.rbp_off = st->rbp.off;
	row.ra_kind = st->ra.kind;
	row.ra_off = st->ra.off;
	row.signal = pg->cie->signal;
	pg->row_start = upto;
	if (w->stats)
		w->stats->rows++;
	w->stop = w->fn(w->arg, &row);
	return w->stop;
}

static int advance(struct walk *w, struct program *pg, const struct state *st, uint64_t delta)
{
	uint64_t to;

	if (!pg->emit)
		return 0; /* advancing in a CIE's initial program has no meaning; ignore */
	if (delta && pg->cie->code_align > UINT64_MAX / delta)
		to = pg->end;
	else
		to = pg->loc + delta * pg->cie->code_align;
	if (to < pg->loc || to > pg->end)
		to = pg->end;
	if (emit_row(w, pg, st, to))
		return -1;
	pg->loc = to;
	return 0;
}

/* Run a call frame program over r. Returns 0, or -1 when the program is malformed or the
 * callback stopped the walk (w->stop). */
static int run_program(struct walk *w, struct program *pg, struct reader *r, struct state *st)
{
	struct state stack[CFI_MAX_STATE_DEPTH];
	unsigned depth = 0;
	const struct cie *cie = pg->cie;

	while (r->pos < r->end && !r->bad) {
		uint8_t op = rd_u8(r), low = op & 0x3f;
		uint64_t reg, u;
		int64_t s;

		switch (op & 0xc0) {
		case CFA_advance_loc:
			if (advance(w, pg, st, low))
				return -1;
			continue;
		case CFA_offset:
			u = rd_uleb(r);
			set_rule(st, low, CFI_R_OFFSET, scaled((int64_t)u, cie->data_align));
			continue;
		case CFA_restore:
			if (rule_of(st, low))
				*rule_of(st, low) = *rule_of((struct state *)&cie->init, low);
			continue;
		}
		switch (op) {
		case CFA_nop:
		case CFA_GNU_window_save:
			break;
		case CFA_set_loc: {
			uint64_t to = rd_encoded(r, cie->fde_enc, w->vaddr);

			if (r->bad)
				return -1;
			if (pg->emit) {
				if (to < pg->loc)
					return -1;
				if (to > pg->end)
					to = pg->end;
				if (emit_row(w, pg, st, to))
					return -1;
				pg->loc = to;
			}
			break;
		}
		case CFA_advance_loc1:
			if (advance(w, pg, st, rd_bytes(r, 1)))
				return -1;
			break;
		case CFA_advance_loc2:
			if (advance(w, pg, st, rd_bytes(r, 2)))
				return -1;
			break;
		case CFA_advance_loc4:
			if (advance(w, pg, st, rd_bytes(r, 4)))
				return -1;
			break;
		case CFA_offset_extended:
			reg = rd_uleb(r);
			u = rd_uleb(r);
			set_rule(st, reg, CFI_R_OFFSET, scaled((int64_t)u, cie->data_align));
			break;
		case CFA_restore_extended:
			reg = rd_uleb(r);
			if (rule_of(st, reg))
				*rule_of(st, reg) = *rule_of((struct state *)&cie->init, reg);
			break;
		case CFA_undefined:
			set_rule(st, rd_uleb(r), CFI_R_UNDEF, 0);
			break;
		case CFA_same_value:
			set_rule(st, rd_uleb(r), CFI_R_SAME, 0);
			break;
		case CFA_register:
			reg = rd_uleb(r);
			u = rd_uleb(r);
			if (u == reg)
				set_rule(st, reg, CFI_R_SAME, 0);
			else
				set_rule(st, reg, CFI_R_REG, (int64_t)u);
			break;
		case CFA_remember_state:
			if (depth >= CFI_MAX_STATE_DEPTH)
				return -1;
			stack[depth++] = *st;
			break;
		case CFA_restore_state:
			if (!depth)
				return -1;
			{
				/* The CFA rule is restored too (DWARF 5 clarified this). */
				*st = stack[--depth];
			}
			break;
		case CFA_def_cfa:
			st->cfa_reg = (uint8_t)rd_uleb(r);
			st->cfa_off = (int64_t)rd_uleb(r);
			st->cfa_kind = CFI_CFA_REG;
			break;
		case CFA_def_cfa_sf:
			st->cfa_reg = (uint8_t)rd_uleb(r);
			st->cfa_off = scaled(rd_sleb(r), cie->data_align);
			st->cfa_kind = CFI_CFA_REG;
			break;
		case CFA_def_cfa_register:
			st->cfa_reg = (uint8_t)rd_uleb(r);
			if (st->cfa_kind != CFI_CFA_REG)
				st->cfa_kind = CFI_CFA_EXPR; /* no offset is known */
			break;
		case CFA_def_cfa_offset:
			st->cfa_off = (int64_t)rd_uleb(r);
			if (st->cfa_kind != CFI_CFA_REG)
				st->cfa_kind = CFI_CFA_EXPR;
			break;
		case CFA_def_cfa_offset_sf:
			st->cfa_off = scaled(rd_sleb(r), cie->data_align);
			if (st->cfa_kind != CFI_CFA_REG)
				st->cfa_kind = CFI_CFA_EXPR;
			break;
		case CFA_def_cfa_expression:
			u = rd_uleb(r);
			if (r->bad || u > r->end - r->pos)
				return -1;
			parse_cfa_expr(r->p + r->pos, (size_t)u, st);
			r->pos += (size_t)u;
			break;
		case CFA_expression:
		case CFA_val_expression:
			reg = rd_uleb(r);
			u = rd_uleb(r);
			if (r->bad || u > r->end - r->pos)
				return -1;
			set_rule(st, reg, CFI_R_OTHER, 0);
			if (op == CFA_expression && reg == CFI_REG_RBP)
				reg_expr(r->p + r->pos, (size_t)u, &st->rbp);
			r->pos += (size_t)u;
			break;
		case CFA_offset_extended_sf:
			reg = rd_uleb(r);
			s = rd_sleb(r);
			set_rule(st, reg, CFI_R_OFFSET, scaled(s, cie->data_align));
			break;
		case CFA_val_offset:
			reg = rd_uleb(r);
			u = rd_uleb(r);
			set_rule(st, reg, CFI_R_VAL_OFFSET, scaled((int64_t)u, cie->data_align));
			break;
		case CFA_val_offset_sf:
			reg = rd_uleb(r);
			s = rd_sleb(r);
			set_rule(st, reg, CFI_R_VAL_OFFSET, scaled(s, cie->data_align));
			break;
		case CFA_GNU_args_size:
			(void)rd_uleb(r);
			break;
		case CFA_GNU_negative_offset_extended:
			reg = rd_uleb(r);
			u = rd_uleb(r);
			set_rule(st, reg, CFI_R_OFFSET, scaled(scaled((int64_t)u, cie->data_align), -1));
			break;
		default:
			return -1; /* unknown opcode: its operands cannot be skipped */
		}
	}
	return r->bad ? -1 : 0;
}

/* Read an entry's length. On success, *body is the offset after the length field, *next the
 * offset of the following entry, and *is64 tells the DWARF format. 0 = terminator / end. */
static int read_length(const struct walk *w, size_t off, size_t *body, size_t *next, int *is64)
{
	struct reader r = { w->data, off, w->size, 0 };
	uint64_t len = rd_bytes(&r, 4);

	*is64 = 0;
	if (r.bad)
		return -1;
	if (len == 0xffffffffu) {
		len = rd_bytes(&r, 8);
		*is64 = 1;
		if (r.bad)
			return -1;
	} else if (len >= 0xfffffff0u) {
		return -1; /* reserved */
	}
	if (len > w->size - r.pos)
		return -1;
	*body = r.pos;
	*next = r.pos + (size_t)len;
	return len == 0 ? 0 : 1;
}

/* Parse the CIE at off into c (not cached). Returns 0 or -1. */
static int parse_cie(struct walk *w, size_t off, struct cie *c)
{
	size_t body, next;
	int is64, version;
	struct reader r;
	char aug[16];
	size_t naug = 0, aug_end = 0;
	uint64_t idv;
	struct program pg;

	memset(c, 0, sizeof(*c));
	c->offset = off;
	if (read_length(w, off, &body, &next, &is64) <= 0)
		return -1;
	r = (struct reader){ w->data, body, next, 0 };
	idv = rd_bytes(&r, w->kind == CFI_DEBUG_FRAME && is64 ? 8 : 4);
	if (w->kind == CFI_EH_FRAME ? idv != 0 : (is64 ? idv != UINT64_MAX : idv != 0xffffffffu))
		return -1;
	version = rd_u8(&r);
	if (version != 1 && version != 3 && version != 4)
		return -1;
	for (;;) {
		uint8_t ch = rd_u8(&r);

		if (r.bad)
			return -1;
		if (!ch)
			break;
		if (naug + 1 >= sizeof(aug))
			return -1;
		aug[naug++] = (char)ch;
	}
	aug[naug] = 0;
	c->addr_size = 8;
	if (version == 4) {
		c->addr_size = rd_u8(&r);
		if (rd_u8(&r) != 0 || (c->addr_size != 4 && c->addr_size != 8))
			return -1; /* segment selectors are not supported */
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u8(&r) : (uint8_t)rd_uleb(&r);
	c->fde_enc = w->kind == CFI_EH_FRAME ? 0x00 : PE_omit; /* debug_frame: see parse_fde */
	if (r.bad)
		return -1;
	if (aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		size_t i;

		if (r.bad || alen > r.end - r.pos)
			return -1;
		aug_end = r.pos + (size_t)alen;
		c->has_z = 1;
		for (i = 1; i < naug; i++) {
			struct reader ar = { w->data, r.pos, aug_end, 0 };

			if (aug[i] == 'L') {
				(void)rd_u8(&ar);
			} else if (aug[i] == 'R') {
				c->fde_enc = rd_u8(&ar);
			} else if (aug[i] == 'P') {
				uint8_t enc = rd_u8(&ar);

				(void)rd_encoded(&ar, (uint8_t)(enc & 0x7f), w->vaddr);
			} else if (aug[i] == 'S') {
				c->signal = 1;
			} else if (aug[i] == 'B' || aug[i] == 'G') {
				/* no data */
			} else {
				break; /* unknown: the length lets us skip the rest */
			}
			if (ar.bad)
				return -1;
			r.pos = ar.pos;
		}
		r.pos = aug_end;
	} else if (naug) {
		/* Without 'z' only letters without data can be skipped. */
		size_t i;

		for (i = 0; i < naug; i++)
			if (aug[i] != 'S')
				return -1;
		c->signal = 1;
	}
	if (w->kind == CFI_DEBUG_FRAME && !c->has_z)
		c->fde_enc = c->addr_size == 8 ? 0x04 : 0x03;
	if (c->code_align == 0)
		return -1;
	if (next - r.pos > CFI_MAX_CIE_PROGRAM)
		return -1;
	/* The initial state: CFA undefined, RBP unchanged, return address at CFA-8 unless the
	 * program says otherwise (x86-64 ABI: the initial instructions define it). */
	c->init.cfa_kind = CFI_CFA_UNDEF;
	c->init.rbp.kind = CFI_R_SAME;
	c->init.ra.kind = CFI_R_SAME;
	memset(&pg, 0, sizeof(pg));
	pg.cie = c;
	pg.emit = 0;
	r.end = next;
	if (run_program(w, &pg, &r, &c->init))
		return -1;
	c->valid = 1;
	return 0;
}

static const struct cie *get_cie(struct walk *w, size_t off)
{
	struct cie *slot = &w->cache[(off ^ (off >> 7)) % CIE_CACHE];

	if (slot->offset == off)
		return slot->valid ? slot : NULL;
	if (parse_cie(w, off, slot) == 0 && w->stats)
		w->stats->cies++;
	slot->offset = off;
	return slot->valid ? slot : NULL;
}

static void bad_entry(struct walk *w)
{
	if (w->stats)
		w->stats->bad_entries++;
}

static void parse_fde(struct walk *w, size_t idpos, size_t body_end, uint64_t idv, int is64)
{
	struct reader r = { w->data, idpos, body_end, 0 };
	const struct cie *cie;
	size_t cie_off;
	uint64_t pc_begin, pc_range;
	struct program pg;
	struct state st;

	r.pos += w->kind == CFI_DEBUG_FRAME && is64 ? 8 : 4;
	if (w->kind == CFI_EH_FRAME) {
		if (idv > idpos) {
			bad_entry(w);
			return;
		}
		cie_off = idpos - (size_t)idv;
	} else {
		if (idv >= w->size) {
			bad_entry(w);
			return;
		}
		cie_off = (size_t)idv;
	}
	cie = get_cie(w, cie_off);
	if (!cie) {
		bad_entry(w);
		return;
	}
	pc_begin = rd_encoded(&r, cie->fde_enc, w->vaddr);
	pc_range = rd_encoded_plain(&r, cie->fde_enc);
	if (cie->has_z) {
		uint64_t alen = rd_uleb(&r);

		if (!r.bad && alen <= r.end - r.pos)
			r.pos += (size_t)alen;
		else
			r.bad = 1;
	}
	if (r.bad || pc_begin + pc_range < pc_begin) {
		bad_entry(w);
		return;
	}
	if (w->stats)
		w->stats->fdes++;
	if (pc_range == 0)
		return;
	if (w->fde_fn) {
		w->stop = w->fde_fn(w->arg, pc_begin, pc_begin + pc_range);
		return;
	}
	memset(&pg, 0, sizeof(pg));
	pg.cie = cie;
	pg.loc = pg.row_start = pc_begin;
	pg.end = pc_begin + pc_range;
	pg.emit = 1;
	st = cie->init;
	if (run_program(w, &pg, &r, &st)) {
		if (!w->stop)
			bad_entry(w);
		return;
	}
	emit_row(w, &pg, &st, pg.end);
}

static void walk_init(struct walk *w, const uint8_t *data, size_t size, uint64_t vaddr, int kind,
		      cfi_row_fn fn, void *arg, struct cfi_stats *stats)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	w->data = data;
	w->size = size;
	w->vaddr = vaddr;
	w->kind = kind;
	w->fn = fn;
	w->arg = arg;
	w->stats = stats;
	for (i = 0; i < CIE_CACHE; i++)
		w->cache[i].offset = SIZE_MAX;
}

/* Walk every entry of w's section in order (cfi_parse(), cfi_fdes()). */
static int walk_section(struct walk *w, struct errmsg *err)
{
	const uint8_t *data = w->data;
	size_t size = w->size, off = 0;
	int kind = w->kind, first = 1;

	if (!data && size)
		return errmsg_set(err, -EINVAL, "no CFI data");
	while (off < size) {
		size_t body, next;
		int is64, rc = read_length(w, off, &body, &next, &is64);
		struct reader r;
		uint64_t idv;

		if (rc < 0) {
			if (first)
				return errmsg_set(err, -EINVAL, "bad CFI entry length at offset %zu", off);
			bad_entry(w);
			break; /* cannot find the next entry */
		}
		first = 0;
		if (rc == 0) {
			if (kind == CFI_EH_FRAME)
				break; /* the terminator */
			off = next;
			continue;
		}
		r = (struct reader){ data, body, next, 0 };
		idv = rd_bytes(&r, kind == CFI_DEBUG_FRAME && is64 ? 8 : 4);
		if (r.bad) {
			bad_entry(w);
		} else if (kind == CFI_EH_FRAME ? idv == 0
					       : (is64 ? idv == UINT64_MAX : idv == 0xffffffffu)) {
			/* a CIE: parsed on demand by the FDEs that use it */
		} else {
			parse_fde(w, body, next, idv, is64);
			if (w->stop)
				return w->stop;
		}
		off = next;
	}
	return 0;
}

int cfi_parse(const uint8_t *data, size_t size, uint64_t vaddr, int kind, cfi_row_fn fn, void *arg,
	      struct cfi_stats *stats, struct errmsg *err)
{
	struct walk w;

	walk_init(&w, data, size, vaddr, kind, fn, arg, stats);
	return walk_section(&w, err);
}

int cfi_fdes(const uint8_t *data, size_t size, uint64_t vaddr, int kind, cfi_fde_fn fn, void *arg,
	     struct cfi_stats *stats, struct errmsg *err)
{
	struct walk w;

	walk_init(&w, data, size, vaddr, kind, NULL, arg, stats);
	w.fde_fn = fn;
	return walk_section(&w, err);
}

/* The FDEs of an .eh_frame section, counted the way cfi_parse() walks it (up to the first
 * unreadable length or the terminator). */
static size_t count_fdes(const struct walk *w)
{
	size_t off = 0, n = 0;

	while (off < w->size) {
		size_t body, next;
		int is64, rc = read_length(w, off, &body, &next, &is64);
		struct reader r;

		if (rc <= 0)
			break;
		r = (struct reader){ w->data, body, next, 0 };
		if (rd_bytes(&r, 4) != 0 && !r.bad)
			n++;
		off = next;
	}
	return n;
}

/* .eh_frame_hdr (LSB "Exception Frame Header"):
 *   offset size    field
 *   0      1       version (1)
 *   1      1       eh_frame_ptr encoding
 *   2      1       fde_count encoding
 *   3      1       table encoding; we accept DW_EH_PE_datarel | DW_EH_PE_sdata4 (0x3b), what
 *                  GNU ld, gold and lld write
 *   4      ..      eh_frame_ptr, fde_count (encoded), then fde_count pairs of s32
 *                  (initial location, FDE address), relative to the start of the header,
 *                  sorted by initial location. */
#define EH_HDR_TABLE_ENC 0x3b

int cfi_parse_sorted(const uint8_t *data, size_t size, uint64_t vaddr, const uint8_t *hdr,
		     size_t hdr_size, uint64_t hdr_vaddr, cfi_row_fn fn, void *arg,
		     struct cfi_stats *stats)
{
	struct walk *w, wbuf;
	struct reader r = { hdr, 0, hdr_size, 0 };
	uint8_t version, ptr_enc, count_enc, table_enc;
	uint64_t eh_ptr, count, i;
	int64_t prev_loc = INT64_MIN;
	size_t table;

	if (!data || !size || !hdr || hdr_size < 4)
		return -ENOENT;
	version = rd_u8(&r);
	ptr_enc = rd_u8(&r);
	count_enc = rd_u8(&r);
	table_enc = rd_u8(&r);
	if (version != 1 || table_enc != EH_HDR_TABLE_ENC || ptr_enc == PE_omit ||
	    count_enc == PE_omit)
		return -ENOENT;
	eh_ptr = rd_encoded(&r, ptr_enc, hdr_vaddr);
	count = rd_encoded(&r, count_enc, hdr_vaddr);
	if (r.bad || eh_ptr != vaddr || count > (r.end - r.pos) / 8)
		return -ENOENT;
	table = r.pos;
	w = &wbuf;
	walk_init(w, data, size, vaddr, CFI_EH_FRAME, fn, arg, stats);
	/* The index must name every FDE of the section, in address order, inside the section:
	 * otherwise rows would be missed, and the caller walks the section instead. */
	if (count != count_fdes(w))
		return -ENOENT;
	for (i = 0; i < count; i++) {
		const uint8_t *p = hdr + table + i * 8;
		int32_t loc, fde;

		memcpy(&loc, p, 4);
		memcpy(&fde, p + 4, 4);
		if (loc < prev_loc || hdr_vaddr + (uint64_t)(int64_t)fde - vaddr >= size)
			return -ENOENT;
		prev_loc = loc;
	}
	for (i = 0; i < count; i++) {
		int32_t fde;
		size_t body, next, off;
		int is64;
		uint64_t idv;

		memcpy(&fde, hdr + table + i * 8 + 4, 4);
		off = (size_t)(hdr_vaddr + (uint64_t)(int64_t)fde - vaddr);
		if (read_length(w, off, &body, &next, &is64) <= 0) {
			bad_entry(w);
			continue;
		}
		r = (struct reader){ data, body, next, 0 };
		idv = rd_bytes(&r, 4);
		if (r.bad || idv == 0) {
			bad_entry(w); /* not an FDE */
			continue;
		}
		parse_fde(w, body, next, idv, is64);
		if (w->stop)
			return w->stop;
	}
	return 0;
}
