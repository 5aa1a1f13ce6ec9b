/* v8_heap.c: V8 objects read from process memory, and the position table decoders
 * (v8_heap.h). */
#include "runtime/v8/v8_heap.h"
#include "runtime/procmem.h"
#include "lib/alloc.h"
#include "lib/utf8.h"

#include <errno.h>
#include <string.h>

#define STR_CHUNK (16u << 10)   /* characters read at once */
#define STR_STACK 4096          /* pending cons string halves */
#define SCAN_BACK (1u << 20)    /* bytes scanned below a pc for its InstructionStream */
#define SCAN_PAGE 4096
#define MAX_LOCALS_INLINED 75   /* kScopeInfoMaxInlinedLocalNamesSize */

/* ---- decoders */

/* A VLQ of 7-bit groups, least significant first, bit 7 says more follow. */
static int vlq(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || shift > 63)
			return -1;
		b = p[(*pos)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*out = v;
	return 0;
}

static int64_t zigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int v8_spt_decode(const uint8_t *tab, size_t len, struct v8_pos **out, size_t *n)
{
	struct v8_pos *v = NULL;
	size_t cnt = 0, cap = 0, pos = 0;
	int64_t code = -1, source = 0;

	*out = NULL;
	*n = 0;
	while (pos < len) {
		uint64_t a, b;
		int64_t ds;

		if (vlq(tab, len, &pos, &a) || vlq(tab, len, &pos, &b))
			goto bad;
		/* The code delta d was written as d (a statement position) or -d - 1: zig-zag
		 * decoding either gives d back as a >> 1. Offsets and positions are far below
		 * 2^48: larger deltas are a malformed table. */
		ds = zigzag(b);
		if ((a >> 1) > UINT32_MAX || ds > (1LL << 48) || ds < -(1LL << 48))
			goto bad;
		code += (int64_t)(a >> 1);
		source += ds;
		/* offset -1 is the function's entry (its stack check): looked up as offset 0 */
		if (code < -1 || code > UINT32_MAX || source < 0 || source > (1LL << 48))
			goto bad;
		ALLOC_GROW(v, cnt + 1, cap);
		v[cnt].code_offset = code < 0 ? 0 : (uint32_t)code;
		v[cnt].position = (uint64_t)source;
		cnt++;
	}
	*out = v;
	*n = cnt;
	return 0;
bad:
	xfree(v);
	return -EINVAL;
}

int64_t v8_spt_lookup(const struct v8_pos *pos, size_t n, uint32_t offset)
{
	int64_t found = -1;
	size_t i;

	/* V8 writes the entries in code order, but a table may repeat an offset: the last entry
	 * at or before offset wins, as in V8's own lookup */
	for (i = 0; i < n && pos[i].code_offset <= offset; i++)
		found = (int64_t)pos[i].position;
	return found;
}

/* The size of the bytecode at off (a Wide/ExtraWide prefix included), or 0. */
static uint32_t bytecode_size(const uint8_t *bc, size_t blen, const uint8_t *sizes, size_t nsizes,
			      size_t off)
{
	uint8_t b = bc[off];

	if (b >= nsizes)
		return 0;
	if (b <= 3) {
		/* Wide (0), ExtraWide (1) and their debug-break forms (2, 3) prefix the next
		 * bytecode, whose operands they scale */
		size_t scale = (b == 0 || b == 2) ? 1 : 2;

		if (off + 1 >= blen || bc[off + 1] >= nsizes)
			return 0;
		return 1 + sizes[scale * nsizes + bc[off + 1]];
	}
	return sizes[b];
}

int32_t v8_baseline_offset(const uint8_t *table, size_t tlen, const uint8_t *bytecodes,
			   size_t blen, const uint8_t *sizes, size_t nsizes, uint32_t pc_offset)
{
	uint64_t end, delta;
	size_t tpos = 0, bpos = 0;
	int32_t current = -1;

	if (!sizes || !nsizes || vlq(table, tlen, &tpos, &end))
		return -2;
	/* entry i covers pc offsets (end_{i-1}, end_i]: the prologue, then one bytecode each */
	while (end < pc_offset) {
		uint32_t size;

		if (bpos >= blen || vlq(table, tlen, &tpos, &delta))
			return -2;
		size = bytecode_size(bytecodes, blen, sizes, nsizes, bpos);
		if (!size)
			return -2;
		current = (int32_t)bpos;
		bpos += size;
		end += delta;
	}
	return current;
}

int v8_line_of(const uint32_t *ends, size_t n, int32_t pos)
{
	size_t lo = 0, hi = n;

	if (pos < 0)
		return 0;
	/* the first line end at or after pos */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ends[mid] < (uint32_t)pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo + 1;
}

/* ---- reading */

static int rd(struct v8_reader *r, uint64_t addr, void *buf, size_t len)
{
	if (r->budget-- <= 0)
		return -E2BIG;
	return procmem_read(r->mem, addr, buf, len);
}

static uint64_t untag(uint64_t obj)
{
	return obj - 1;
}

int v8_field(struct v8_reader *r, uint64_t obj, uint32_t off, uint64_t *val)
{
	const struct v8_layout *l = &r->f->lay;
	uint32_t v32;
	int rc;

	if (!(obj & 1))
		return -EINVAL;
	if (l->tagged_size == 4) {
		rc = rd(r, untag(obj) + off, &v32, 4);
		if (rc)
			return rc;
		/* a SMI stays as it is; a pointer is relative to the 4 GiB cage of obj */
		*val = (v32 & 1) ? (obj & 0xffffffff00000000ULL) | v32 : v32;
		return 0;
	}
	return rd(r, untag(obj) + off, val, 8);
}

int64_t v8_smi_value(const struct v8_reader *r, uint64_t v)
{
	if (r->f->lay.smi_shift == 1)
		return (int64_t)(int32_t)(uint32_t)v >> 1;
	return (int64_t)v >> 32;
}

int v8_type_of(struct v8_reader *r, uint64_t obj, uint32_t *type)
{
	const struct v8_layout *l = &r->f->lay;
	uint64_t map;
	uint16_t t;
	int rc;

	if (!(obj & 1) || obj < 4096)
		return -EINVAL;
	rc = v8_field(r, obj, l->obj_map, &map);
	if (rc)
		return rc;
	if (!(map & 1))
		return -EINVAL;
	rc = rd(r, untag(map) + l->map_instance_type, &t, sizeof(t));
	if (rc)
		return rc;
	*type = t;
	return 0;
}

static int smi_field(struct v8_reader *r, uint64_t obj, uint32_t off, int64_t *out)
{
	uint64_t v;
	int rc = v8_field(r, obj, off, &v);

	if (rc)
		return rc;
	if (!v8_is_smi(v))
		return -EINVAL;
	*out = v8_smi_value(r, v);
	return 0;
}

static int is_string_type(const struct v8_reader *r, uint32_t type)
{
	return type < r->f->lay.first_nonstring;
}

/* ---- strings: every representation, streamed as chunks of characters */

struct str_sink {
	/* chars: nchars characters at data, one or two bytes each; 0 to go on, 1 to stop */
	int (*chars)(void *ctx, const uint8_t *data, size_t nchars, int two_byte);
	void *ctx;
};

struct str_part {
	uint64_t obj;
	uint32_t from, len;
};

/* Stream characters [from, from + len) of obj through sink. */
static int walk_string(struct v8_reader *r, uint64_t obj, uint32_t from, uint32_t len,
		       struct str_sink *sink)
{
	const struct v8_layout *l = &r->f->lay;
	struct str_part *stack = NULL;
	size_t depth = 0, cap = 0;
	uint8_t *buf = NULL;
	int rc = 0;

	for (;;) {
		uint32_t type, rep, slen, cs;
		int64_t v;
		uint64_t data, next;

		if (!len)
			goto pop;
		rc = v8_type_of(r, obj, &type);
		if (rc)
			goto cleanup;
		if (!is_string_type(r, type)) {
			rc = -EINVAL;
			goto cleanup;
		}
		rc = rd(r, untag(obj) + l->str_length, &slen, sizeof(slen));
		if (rc)
			goto cleanup;
		if (from > slen || len > slen - from) {
			rc = -EINVAL;
			goto cleanup;
		}
		rep = type & l->str_rep_mask;
		cs = (type & l->str_enc_mask) == l->str_one_byte ? 1 : 2;
		if (rep == l->str_thin) {
			rc = v8_field(r, obj, l->thin_actual, &obj);
			if (rc)
				goto cleanup;
			continue;
		}
		if (rep == l->str_sliced) {
			rc = v8_field(r, obj, l->sliced_parent, &next);
			if (!rc)
				rc = smi_field(r, obj, l->sliced_offset, &v);
			if (rc)
				goto cleanup;
			if (v < 0 || v > UINT32_MAX - from) {
				rc = -EINVAL;
				goto cleanup;
			}
			obj = next;
			from += (uint32_t)v;
			continue;
		}
		if (rep == l->str_cons) {
			uint64_t first, second;
			uint32_t flen;

			rc = v8_field(r, obj, l->cons_first, &first);
			if (!rc)
				rc = v8_field(r, obj, l->cons_second, &second);
			if (!rc && !(first & 1))
				rc = -EINVAL;
			if (!rc)
				rc = rd(r, untag(first) + l->str_length, &flen, sizeof(flen));
			if (rc)
				goto cleanup;
			if (flen > slen) {
				rc = -EINVAL;
				goto cleanup;
			}
			if (from >= flen) {
				obj = second;
				from -= flen;
				continue;
			}
			if (from + len > flen) {
				/* the part in the second half waits on the stack */
				if (depth >= STR_STACK) {
					rc = -E2BIG;
					goto cleanup;
				}
				ALLOC_GROW(stack, depth + 1, cap);
				stack[depth].obj = second;
				stack[depth].from = 0;
				stack[depth].len = from + len - flen;
				depth++;
				len = flen - from;
			}
			obj = first;
			continue;
		}
		if (rep == l->str_seq) {
			data = untag(obj) + l->seq_chars;
		} else if (rep == l->str_external) {
			rc = rd(r, untag(obj) + l->ext_data, &data, sizeof(data));
			if (rc)
				goto cleanup;
			if (!data) {
				rc = -ENOENT; /* an uncached external string: its data is not known */
				goto cleanup;
			}
		} else {
			rc = -EINVAL;
			goto cleanup;
		}
		if (!buf)
			buf = xmalloc(STR_CHUNK * 2);
		while (len) {
			uint32_t n = len < STR_CHUNK ? len : STR_CHUNK;

			rc = rd(r, data + (uint64_t)from * cs, buf, (size_t)n * cs);
			if (rc)
				goto cleanup;
			if (sink->chars(sink->ctx, buf, n, cs == 2))
				goto cleanup; /* the sink has enough */
			from += n;
			len -= n;
		}
pop:
		if (!depth)
			break;
		depth--;
		obj = stack[depth].obj;
		from = stack[depth].from;
		len = stack[depth].len;
	}
cleanup:
	xfree(stack);
	xfree(buf);
	return rc;
}

static int string_length(struct v8_reader *r, uint64_t obj, uint32_t *len)
{
	uint32_t type;
	int rc = v8_type_of(r, obj, &type);

	if (rc)
		return rc;
	if (!is_string_type(r, type))
		return -EINVAL;
	return rd(r, untag(obj) + r->f->lay.str_length, len, sizeof(*len));
}

struct utf8_out {
	char *out;
	size_t len, cap;      /* cap: room for characters (one byte kept for the NUL) */
	uint16_t high;        /* a pending high surrogate */
};

static void utf8_put(struct utf8_out *u, uint32_t c, int *full)
{
	char b[4];
	size_t n = utf8_encode(c, b);

	if (u->len + n > u->cap) {
		*full = 1;
		return;
	}
	memcpy(u->out + u->len, b, n);
	u->len += n;
}

static int utf8_chars(void *ctx, const uint8_t *data, size_t n, int two_byte)
{
	struct utf8_out *u = ctx;
	int full = 0;
	size_t i;

	for (i = 0; i < n && !full; i++) {
		uint32_t c;

		if (!two_byte) {
			utf8_put(u, data[i], &full);
			continue;
		}
		c = (uint32_t)data[2 * i] | ((uint32_t)data[2 * i + 1] << 8);
		if (c >= 0xd800 && c < 0xdc00) {
			if (u->high)
				utf8_put(u, 0xfffd, &full);
			u->high = (uint16_t)c;
			continue;
		}
		if (c >= 0xdc00 && c < 0xe000) {
			if (u->high)
				c = 0x10000 + (((uint32_t)u->high - 0xd800) << 10) + (c - 0xdc00);
			else
				c = 0xfffd;
			u->high = 0;
			utf8_put(u, c, &full);
			continue;
		}
		if (u->high) {
			utf8_put(u, 0xfffd, &full);
			u->high = 0;
		}
		utf8_put(u, c, &full);
	}
	return full;
}

int v8_read_string(struct v8_reader *r, uint64_t obj, char *out, size_t outlen)
{
	struct utf8_out u = { out, 0, outlen ? outlen - 1 : 0, 0 };
	struct str_sink sink = { utf8_chars, &u };
	uint32_t len;
	int rc;

	if (!outlen)
		return -EINVAL;
	out[0] = '\0';
	rc = string_length(r, obj, &len);
	if (rc)
		return rc;
	/* at most outlen characters are needed: each is one byte or more */
	if (len > outlen)
		len = (uint32_t)outlen;
	rc = walk_string(r, obj, 0, len, &sink);
	if (rc)
		return rc;
	if (u.high) {
		int full = 0;

		utf8_put(&u, 0xfffd, &full); /* a high surrogate at the end */
	}
	out[u.len] = '\0';
	return 0;
}

struct ends_out {
	uint32_t *ends;
	size_t n, cap;
	uint32_t pos;
};

static int ends_chars(void *ctx, const uint8_t *data, size_t n, int two_byte)
{
	struct ends_out *e = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		int nl = two_byte ? (data[2 * i] == '\n' && data[2 * i + 1] == 0) : data[i] == '\n';

		if (nl) {
			ALLOC_GROW(e->ends, e->n + 1, e->cap);
			e->ends[e->n++] = e->pos + (uint32_t)i;
		}
	}
	e->pos += (uint32_t)n;
	return 0;
}

int v8_string_line_ends(struct v8_reader *r, uint64_t obj, uint32_t **ends, size_t *n)
{
	struct ends_out e = { NULL, 0, 0, 0 };
	struct str_sink sink = { ends_chars, &e };
	uint32_t len;
	int rc;

	*ends = NULL;
	*n = 0;
	rc = string_length(r, obj, &len);
	if (rc)
		return rc;
	if (len > V8_SOURCE_MAX)
		return -E2BIG;
	rc = walk_string(r, obj, 0, len, &sink);
	if (rc) {
		xfree(e.ends);
		return rc;
	}
	*ends = e.ends;
	*n = e.n;
	return 0;
}

/* ---- functions and scripts */

/* slot i of a ScopeInfo */
static int si_slot(struct v8_reader *r, uint64_t si, uint32_t i, uint64_t *v)
{
	const struct v8_layout *l = &r->f->lay;

	if (i > (1u << 20))
		return -EINVAL;
	return v8_field(r, si, l->si_base + i * l->tagged_size, v);
}

/* A name slot: a string (read into out), or a SMI / an oddball (no name). */
static int name_slot(struct v8_reader *r, uint64_t v, char *out, size_t outlen)
{
	uint32_t type;

	if (v8_is_smi(v))
		return 0;
	if (v8_type_of(r, v, &type) || !is_string_type(r, type))
		return 0; /* undefined: no name */
	return v8_read_string(r, v, out, outlen);
}

/* The function's name, inferred name and position from its ScopeInfo (layout: v8_meta.h). */
static int read_scope_info(struct v8_reader *r, uint64_t si, struct v8_sfi_info *out)
{
	const struct v8_layout *l = &r->f->lay;
	uint64_t v, a, b;
	int64_t flags, nctx, start, end;
	uint32_t idx;
	int rc;

	rc = si_slot(r, si, l->si_flags, &v);
	if (rc || !v8_is_smi(v))
		return rc ? rc : -EINVAL;
	flags = v8_smi_value(r, v);
	rc = si_slot(r, si, l->si_ncontextlocals, &v);
	if (rc || !v8_is_smi(v))
		return rc ? rc : -EINVAL;
	nctx = v8_smi_value(r, v);
	if (nctx < 0 || nctx > (1 << 16))
		return -EINVAL;
	/* the context locals' names (or their hash table) and infos */
	idx = l->si_first_vars + (uint32_t)(nctx < MAX_LOCALS_INLINED ? nctx : 1) + (uint32_t)nctx;
	if ((flags >> 10) & 1) /* has_saved_class_variable */
		idx++;
	if ((flags >> 12) & 3) { /* function_variable: its name and slot index */
		rc = si_slot(r, si, idx + 1, &v);
		if (rc || !v8_is_smi(v))
			return rc ? rc : -EINVAL;
		rc = si_slot(r, si, idx, &v);
		if (rc)
			return rc;
		name_slot(r, v, out->name, sizeof(out->name));
		idx += 2;
	}
	if ((flags >> 14) & 1) { /* has_inferred_function_name */
		rc = si_slot(r, si, idx, &v);
		if (rc)
			return rc;
		name_slot(r, v, out->inferred, sizeof(out->inferred));
		idx++;
	}
	/* the function's start and end position */
	if (!si_slot(r, si, idx, &a) && !si_slot(r, si, idx + 1, &b) && v8_is_smi(a) &&
	    v8_is_smi(b)) {
		start = v8_smi_value(r, a);
		end = v8_smi_value(r, b);
		if (start >= 0 && end >= start && end < (1LL << 30)) {
			out->start_pos = (int32_t)start;
			out->end_pos = (int32_t)end;
		}
	}
	return 0;
}

uint64_t v8_bytecode_of(struct v8_reader *r, uint64_t data)
{
	const struct v8_layout *l = &r->f->lay;
	uint32_t type;
	int hops;

	/* a BytecodeArray, or an InterpreterData / Sparkplug Code that holds one */
	for (hops = 0; hops < 3; hops++) {
		if (v8_type_of(r, data, &type))
			return 0;
		if (type == l->t_bytecode_array)
			return data;
		if (type == l->t_interpreter_data) {
			if (v8_field(r, data, l->id_bytecode_array, &data))
				return 0;
		} else if (type == l->t_code) {
			if (v8_field(r, data, l->code_bytecode, &data))
				return 0;
		} else {
			return 0;
		}
	}
	return 0;
}

int v8_read_sfi(struct v8_reader *r, uint64_t sfi, struct v8_sfi_info *out)
{
	const struct v8_layout *l = &r->f->lay;
	const struct v8_offsets *o = &r->f->off;
	uint8_t sum[V8_SFI_READ];
	uint64_t v, data;
	uint32_t type;
	int rc, i;

	memset(out, 0, sizeof(*out));
	out->start_pos = out->end_pos = -1;
	rc = v8_type_of(r, sfi, &type);
	if (rc)
		return rc;
	if (type != l->t_sfi)
		return -EINVAL;
	rc = rd(r, untag(sfi) + o->sfi_sum, sum, sizeof(sum));
	if (rc)
		return rc;
	for (i = 0; i < 8; i++) {
		if (o->sfi_sum_mask & (1u << i))
			out->sum_a |= (uint64_t)sum[i] << (8 * i);
		if (o->sfi_sum_mask & (1u << (i + 8)))
			out->sum_b |= (uint64_t)sum[i + 8] << (8 * i);
	}
	rc = v8_field(r, sfi, l->sfi_name_or_scope_info, &v);
	if (rc)
		return rc;
	if (!v8_is_smi(v) && !v8_type_of(r, v, &type)) {
		if (is_string_type(r, type))
			v8_read_string(r, v, out->name, sizeof(out->name));
		else if (type == l->t_scope_info)
			read_scope_info(r, v, out);
	}
	if (!v8_field(r, sfi, l->sfi_script, &v) && !v8_is_smi(v) && !v8_type_of(r, v, &type) &&
	    type == l->t_script)
		out->script = v;
	if (!v8_field(r, sfi, l->sfi_function_data, &data) && !v8_is_smi(data)) {
		out->bytecode = v8_bytecode_of(r, data);
		if (!v8_type_of(r, data, &type) && type == l->t_code) {
			struct v8_code_info ci;

			if (!v8_read_code(r, data, &ci) && ci.kind == l->kind_baseline)
				out->baseline = data;
		}
	}
	return 0;
}

int v8_read_script(struct v8_reader *r, uint64_t script, char *name, size_t namelen,
		   uint32_t **ends, size_t *nends)
{
	const struct v8_layout *l = &r->f->lay;
	uint64_t v, data;
	uint32_t type;
	int64_t len, i, x;
	int rc;

	if (ends) {
		*ends = NULL;
		*nends = 0;
	}
	rc = v8_type_of(r, script, &type);
	if (rc)
		return rc;
	if (type != l->t_script)
		return -EINVAL;
	name[0] = '\0';
	if (!v8_field(r, script, l->script_name, &v))
		name_slot(r, v, name, namelen);
	if (!ends)
		return 0;
	/* V8's own line ends when something (a stack trace) asked for them */
	if (l->script_line_ends && !v8_field(r, script, l->script_line_ends, &v) &&
	    !v8_is_smi(v) && !v8_type_of(r, v, &type) && type == l->t_fixed_array &&
	    !smi_field(r, v, l->fa_length, &len) && len >= 0 && len <= V8_SOURCE_MAX / 8) {
		uint64_t *raw = try_malloc((size_t)(len ? len : 1) * l->tagged_size);
		uint32_t *out;

		if (!raw)
			return -ENOMEM;
		rc = len ? rd(r, untag(v) + l->fa_data, raw, (size_t)len * l->tagged_size) : 0;
		if (rc) {
			xfree(raw);
			return rc;
		}
		out = xmalloc((size_t)(len ? len : 1) * sizeof(*out));
		for (i = 0; i < len; i++) {
			data = l->tagged_size == 4 ? ((uint32_t *)raw)[i] : raw[i];
			x = v8_smi_value(r, data);
			if (!v8_is_smi(data) || x < 0 || x > UINT32_MAX ||
			    (i && (uint32_t)x < out[i - 1])) {
				xfree(raw);
				xfree(out);
				return -EINVAL;
			}
			out[i] = (uint32_t)x;
		}
		xfree(raw);
		*ends = out;
		*nends = (size_t)len;
		return 0;
	}
	rc = v8_field(r, script, l->script_source, &v);
	if (rc)
		return rc;
	return v8_string_line_ends(r, v, ends, nends);
}

/* ---- code */

int v8_read_code(struct v8_reader *r, uint64_t code, struct v8_code_info *out)
{
	const struct v8_layout *l = &r->f->lay;
	uint64_t v, is;
	uint32_t type, flags;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = v8_type_of(r, code, &type);
	if (rc)
		return rc;
	if (type != l->t_code)
		return -EINVAL;
	if ((rc = rd(r, untag(code) + l->code_start, &out->start, 8)) ||
	    (rc = rd(r, untag(code) + l->code_size, &out->size, 4)) ||
	    (rc = rd(r, untag(code) + l->code_flags, &flags, 4)))
		return rc;
	out->kind = (flags >> l->kind_shift) & l->kind_mask;
	if (!v8_field(r, code, l->code_spt, &v) && !v8_is_smi(v))
		out->spt = v;
	if (out->kind == l->kind_baseline) {
		if (!v8_field(r, code, l->code_bytecode, &v) && !v8_is_smi(v))
			out->bytecode = v8_bytecode_of(r, v);
	} else if (!v8_field(r, code, l->code_deopt, &v) && !v8_is_smi(v)) {
		out->deopt = v;
	}
	/* learn the InstructionStream map once: v8_code_at_pc() looks for it */
	if (!r->is_map && l->t_instruction_stream != 0xffffffffu &&
	    !v8_field(r, code, l->code_istream, &is) && (is & 1) &&
	    !v8_type_of(r, is, &type) && type == l->t_instruction_stream &&
	    !v8_field(r, is, l->obj_map, &v))
		r->is_map = v;
	return 0;
}

int v8_code_at_pc(struct v8_reader *r, uint64_t pc, uint64_t *code)
{
	const struct v8_layout *l = &r->f->lay;
	uint64_t page, buf[SCAN_PAGE / 8];
	int rc = -ENOENT;

	if (!r->is_map || l->is_body < 2 * 8 || pc < SCAN_BACK)
		return -ENOENT;
	/* Pages below pc, nearest first (a page at a time: the code space may begin at any of
	 * them): an InstructionStream starts with its map and its Code, and its instructions
	 * follow at is_body. */
	for (page = pc & ~(uint64_t)(SCAN_PAGE - 1); page > pc - SCAN_BACK; page -= SCAN_PAGE) {
		size_t i, n = SCAN_PAGE / 8;

		if (rd(r, page, buf, SCAN_PAGE))
			break;
		for (i = n; i-- > 0;) {
			struct v8_code_info ci;
			uint64_t is = page + i * 8, c;

			if (buf[i] != r->is_map || is + l->is_body > pc)
				continue;
			if (i + 1 < n)
				c = buf[i + 1];
			else if (rd(r, is + 8, &c, 8))
				continue;
			if (!(c & 1) || v8_read_code(r, c, &ci) || ci.start != is + l->is_body)
				continue; /* the map's address in the instructions, not a header */
			if (pc >= ci.start && pc - ci.start < ci.size) {
				*code = c;
				rc = 0;
			}
			/* the nearest InstructionStream below pc: it holds pc or nothing does */
			return rc;
		}
	}
	return rc;
}

static int read_bytes(struct v8_reader *r, uint64_t arr, uint32_t want_type, uint32_t data_off,
		      uint8_t **out, size_t *len)
{
	const struct v8_layout *l = &r->f->lay;
	uint32_t type;
	int64_t n;
	int rc;

	*out = NULL;
	*len = 0;
	rc = v8_type_of(r, arr, &type);
	if (rc)
		return rc;
	if (type != want_type)
		return -EINVAL;
	rc = smi_field(r, arr, l->fa_length, &n);
	if (rc)
		return rc;
	if (n < 0 || n > V8_TABLE_MAX)
		return -E2BIG;
	*out = xmalloc(n ? (size_t)n : 1);
	rc = n ? rd(r, untag(arr) + data_off, *out, (size_t)n) : 0;
	if (rc) {
		xfree(*out);
		*out = NULL;
		return rc;
	}
	*len = (size_t)n;
	return 0;
}

int v8_read_byte_array(struct v8_reader *r, uint64_t arr, uint8_t **out, size_t *len)
{
	return read_bytes(r, arr, r->f->lay.t_byte_array, r->f->lay.fa_data, out, len);
}

int v8_read_bytecodes(struct v8_reader *r, uint64_t bca, uint8_t **out, size_t *len)
{
	return read_bytes(r, bca, r->f->lay.t_bytecode_array, r->f->lay.bca_data, out, len);
}

/* Element i of a FixedArray-like object (FixedArray, WeakFixedArray): a weak reference
 * (tag 0b11) is returned as a strong one. */
static int array_get(struct v8_reader *r, uint64_t arr, int64_t i, uint64_t *v)
{
	const struct v8_layout *l = &r->f->lay;
	int64_t n;
	int rc = smi_field(r, arr, l->fa_length, &n);

	if (rc)
		return rc;
	if (i < 0 || i >= n)
		return -ENOENT;
	rc = v8_field(r, arr, l->fa_data + (uint32_t)i * l->tagged_size, v);
	if (!rc && (*v & 3) == 3)
		*v &= ~2ULL;
	return rc;
}

int v8_read_inlining(struct v8_reader *r, uint64_t deopt, struct v8_inlined **out, size_t *n,
		     uint64_t *outer)
{
	const struct v8_layout *l = &r->f->lay;
	struct v8_inlined *v = NULL;
	uint8_t *raw = NULL;
	uint64_t positions, literals;
	uint32_t type;
	size_t len, i, cnt;
	int rc;

	*out = NULL;
	*n = 0;
	*outer = 0;
	rc = v8_type_of(r, deopt, &type);
	if (rc)
		return rc;
	if (type != l->t_fixed_array)
		return -EINVAL;
	/* an empty deoptimization data: nothing inlined, no outer SFI */
	if (array_get(r, deopt, l->deopt_sfi, outer))
		return 0;
	if (array_get(r, deopt, l->deopt_inlining, &positions) ||
	    array_get(r, deopt, l->deopt_literals, &literals))
		return 0;
	rc = v8_read_byte_array(r, positions, &raw, &len);
	if (rc)
		return rc;
	cnt = len / 16; /* struct InliningPosition: SourcePosition, int inlined function id */
	if (cnt > V8_MAX_INLINED) {
		xfree(raw);
		return -E2BIG;
	}
	if (cnt)
		v = xcalloc(cnt, sizeof(*v));
	for (i = 0; i < cnt; i++) {
		int32_t id;

		memcpy(&v[i].position, raw + 16 * i, 8);
		memcpy(&id, raw + 16 * i + 8, 4);
		if (array_get(r, literals, id, &v[i].sfi))
			v[i].sfi = 0;
	}
	xfree(raw);
	*out = v;
	*n = cnt;
	return 0;
}
