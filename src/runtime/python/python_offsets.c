/* python_offsets.c: the built-in offset table for CPython 3.8 - 3.13 and the parser of
 * _Py_DebugOffsets (3.13+). See python_offsets.h for the layout and how groups are found. */
#include "runtime/python/python_offsets.h"
#include "lib/log.h"

#include <errno.h>
#include <string.h>

#define NO PY_NO_OFFSET

static void common_objects(struct py_offsets *o, unsigned ascii_size)
{
	o->ob_type = 8;
	o->str_length = 16;
	o->str_state = 32;
	o->str_ascii_size = ascii_size;
	o->bytes_size = 16;
	o->bytes_sval = 32;
}

int python_offsets_builtin(unsigned major, unsigned minor, struct py_offsets *o)
{
	if (major != 3 || minor < 8 || minor > 13)
		return -ENOTSUP;
	memset(o, 0, sizeof(*o));
	o->version = (major << 8) | minor;
	o->ts_next = 8;
	o->ts_interp = 16;
	o->ts_cframe_frame = NO;
	o->ts_native_thread_id = NO;
	o->fr_owner = NO;
	o->fr_localsplus = NO;
	o->co_qualname = NO;
	o->co_code_adaptive = NO;
	if (minor <= 10) {
		o->flags = PY_F_FRAME_OBJECTS | (minor == 10 ? PY_F_LASTI_UNITS : 0);
		o->rt_interp_head = 32;
		o->interp_next = 0;
		o->interp_threads_head = 8;
		o->ts_frame = 24;
		o->ts_thread_id = 176;
		o->fr_previous = 24;
		o->fr_code = 32;
		o->fr_instr = minor == 10 ? 96 : 104;
		o->fr_localsplus = minor == 10 ? 352 : 360;
		o->co_argcount = 16;
		o->co_flags = 36;
		o->co_firstlineno = 40;
		o->co_filename = 104;
		o->co_name = 112;
		o->co_linetable = 120;
		common_objects(o, 48);
		return 0;
	}
	o->flags = PY_F_INSTR_PTR;
	o->ts_native_thread_id = minor == 12 ? 144 : 160;
	o->fr_localsplus = 72;
	o->co_filename = 112;
	o->co_name = 120;
	o->co_qualname = 128;
	o->co_linetable = 136;
	o->co_flags = 48;
	if (minor == 11) {
		o->flags |= PY_F_IS_ENTRY | PY_F_CFRAME;
		o->rt_interp_head = 40;
		o->interp_threads_head = 16;
		o->ts_frame = 56;
		o->ts_cframe_frame = 8;
		o->ts_thread_id = 152;
		o->fr_previous = 48;
		o->fr_code = 32;
		o->fr_instr = 56;
		o->fr_owner = 68; /* is_entry */
		o->co_argcount = 56;
		o->co_firstlineno = 72;
		o->co_code_adaptive = 184;
		common_objects(o, 48);
		return 0;
	}
	o->flags |= PY_F_OWNER_SHIM;
	o->fr_previous = 8;
	o->fr_code = 0;
	o->fr_instr = 56;
	o->fr_owner = 70;
	o->co_argcount = 52;
	o->co_firstlineno = 68;
	common_objects(o, 40);
	if (minor == 12) {
		o->flags |= PY_F_CFRAME;
		o->rt_interp_head = 40;
		o->interp_threads_head = 72;
		o->ts_frame = 56;
		o->ts_cframe_frame = 0;
		o->ts_thread_id = 136;
		o->co_code_adaptive = 192;
		return 0;
	}
	/* 3.13.0 */
	o->rt_interp_head = 632;
	o->interp_next = 7264;
	o->interp_threads_head = 7344;
	o->ts_frame = 72;
	o->ts_thread_id = 152;
	o->co_code_adaptive = 200;
	return 0;
}

#define DBG_WORDS_MAX (PYTHON_DEBUG_OFFSETS_MAX / 8)

/* An offset inside a struct of the group's size (and well below 64 KiB: none is bigger). */
static int field_ok(uint64_t size, uint64_t off, uint64_t width)
{
	return size < (1u << 20) && off < size && off + width <= size;
}

int python_offsets_from_debug(const void *data, size_t len, struct py_offsets *o,
			      uint32_t *version_hex, struct errmsg *err)
{
	uint64_t w[DBG_WORDS_MAX];
	const uint64_t *g;
	size_t n, k, ts = 0, fr, co = 0, uni = 0;
	uint64_t ver, ft;
	unsigned major, minor;

	if (len < 24 || memcmp(data, "xdebugpy", 8))
		return errmsg_set(err, -ENOENT, "no _Py_DebugOffsets cookie");
	memcpy(&ver, (const char *)data + 8, 8);
	memcpy(&ft, (const char *)data + 16, 8);
	major = (ver >> 24) & 0xff;
	minor = (ver >> 16) & 0xff;
	*version_hex = (uint32_t)ver;
	if (major != 3 || minor < 13)
		return errmsg_set(err, -ENOTSUP, "_Py_DebugOffsets of unsupported version %u.%u",
				  major, minor);
	if (ft)
		return errmsg_set(err, -ENOTSUP,
				  "free-threaded CPython %u.%u is not supported yet", major, minor);
	n = (len - 24) / 8;
	if (n > DBG_WORDS_MAX)
		n = DBG_WORDS_MAX;
	memcpy(w, (const char *)data + 24, n * 8);
	if (n < 40)
		return errmsg_set(err, -EINVAL, "_Py_DebugOffsets truncated");

	/* thread_state: {size, prev = 0, next = 8, interp = 16, current_frame, thread_id, ...} */
	for (k = 3 + 13; k + 9 <= n && k < 3 + 32; k++) {
		if (w[k + 1] == 0 && w[k + 2] == 8 && w[k + 3] == 16) {
			ts = k;
			break;
		}
	}
	if (!ts)
		return errmsg_set(err, -EINVAL, "_Py_DebugOffsets: thread_state group not found");
	fr = ts + 9;
	/* code_object: {size, filename, name = filename + 8, qualname = name + 8, ...} */
	for (k = fr + 6; k + 10 <= n && k < fr + 12; k++) {
		if (w[k + 1] && w[k + 2] == w[k + 1] + 8 && w[k + 3] == w[k + 2] + 8) {
			co = k;
			break;
		}
	}
	if (!co)
		return errmsg_set(err, -EINVAL, "_Py_DebugOffsets: code_object group not found");
	/* unicode_object: {size, state = length + 16, length, asciiobject_size = length + 24},
	 * right after bytes_object {size, ob_size, ob_sval = ob_size + 16}. */
	for (k = co + 10 + 3; k + 4 <= n; k++) {
		if (w[k + 2] && w[k + 1] == w[k + 2] + 16 && w[k + 3] == w[k + 2] + 24 &&
		    w[k - 1] == w[k - 2] + 16) {
			uni = k;
			break;
		}
	}
	if (!uni)
		return errmsg_set(err, -EINVAL, "_Py_DebugOffsets: unicode_object group not found");

	memset(o, 0, sizeof(*o));
	o->version = (major << 8) | minor;
	o->flags = PY_F_INSTR_PTR | PY_F_OWNER_SHIM | (minor >= 14 ? PY_F_TAGGED_CODE : 0);
	g = &w[0]; /* runtime_state */
	if (!field_ok(g[0], g[2], 8))
		goto bad;
	o->rt_interp_head = (uint32_t)g[2];
	g = &w[3]; /* interpreter_state */
	if (!field_ok(g[0], g[2], 8) || !field_ok(g[0], g[3], 8))
		goto bad;
	o->interp_next = (uint32_t)g[2];
	o->interp_threads_head = (uint32_t)g[3];
	g = &w[ts];
	if (!field_ok(g[0], g[4], 8) || !field_ok(g[0], g[5], 8) || !field_ok(g[0], g[6], 4))
		goto bad;
	o->ts_next = (uint32_t)g[2];
	o->ts_interp = (uint32_t)g[3];
	o->ts_frame = (uint32_t)g[4];
	o->ts_cframe_frame = PY_NO_OFFSET;
	o->ts_thread_id = (uint32_t)g[5];
	o->ts_native_thread_id = (uint32_t)g[6];
	g = &w[fr];
	if (!field_ok(g[0], g[1], 8) || !field_ok(g[0], g[2], 8) || !field_ok(g[0], g[3], 8) ||
	    !field_ok(g[0], g[5], 1))
		goto bad;
	o->fr_previous = (uint32_t)g[1];
	o->fr_code = (uint32_t)g[2];
	o->fr_instr = (uint32_t)g[3];
	o->fr_localsplus = (uint32_t)g[4];
	o->fr_owner = (uint32_t)g[5];
	g = &w[co];
	for (k = 1; k <= 4; k++)
		if (!field_ok(g[0], g[k], 8))
			goto bad;
	if (!field_ok(g[0], g[5], 4) || !field_ok(g[0], g[6], 4) || g[9] > g[0] || g[9] >= 4096)
		goto bad;
	o->co_filename = (uint32_t)g[1];
	o->co_name = (uint32_t)g[2];
	o->co_qualname = (uint32_t)g[3];
	o->co_linetable = (uint32_t)g[4];
	o->co_firstlineno = (uint32_t)g[5];
	o->co_argcount = (uint32_t)g[6];
	o->co_flags = PY_NO_OFFSET;
	o->co_code_adaptive = (uint32_t)g[9];
	g = &w[uni];
	if (g[3] > 256 || g[2] > 64)
		goto bad;
	o->ob_type = 8;
	o->str_length = (uint32_t)g[2];
	o->str_state = (uint32_t)g[1];
	o->str_ascii_size = (uint32_t)g[3];
	o->bytes_size = (uint32_t)w[uni - 2];
	o->bytes_sval = (uint32_t)w[uni - 1];
	if (o->bytes_sval > 256)
		goto bad;
	return 0;
bad:
	return errmsg_set(err, -EINVAL, "_Py_DebugOffsets of %u.%u: an offset lies outside its struct",
			  major, minor);
}
