/* ruby_offsets.c: CRuby layouts per version (ruby_offsets.h). */
#include "runtime/ruby/ruby_offsets.h"

#include <errno.h>
#include <string.h>

/* Fields that have not moved from 3.1 to 3.4. */
static void common(struct rb_offsets *o)
{
	o->ec_vm_stack = 0;
	o->ec_vm_stack_size = 8;
	o->ec_cfp = 16;
	o->iseq_body = 16;
	o->body_type = 0;
	o->body_size = 4;
	o->body_encoded = 8;
	o->body_location = 64;      /* pathobj, base_label, label, first_lineno */
	o->loc_first_lineno = 24;
	o->insn_info_entry = 12;    /* line_no, node_id, events */
	o->me_defined_class = 8;
	o->me_def = 16;
	o->me_owner = 32;
	o->def_original_id = 32;    /* after the 8 bytes of bit fields and the body union */
	o->str_heap_ptr = 24;
	o->symbols_ids = 16;        /* rb_symbols_t: last_id, str_sym, ids */
}

int ruby_offsets_for(unsigned major, unsigned minor, unsigned patch, struct rb_offsets *o)
{
	memset(o, 0, sizeof(*o));
	if (major != 3 || minor < 1 || minor > 4)
		return -ENOTSUP;
	common(o);
	o->version = major << 16 | minor << 8 | (patch & 0xff);
	if (minor == 1) {
		/* jit_return grew the control frame; no variable-width allocation (RVARGC) yet */
		o->flags = RB_F_LINENO_VALUE | RB_F_STR_LEN_FLAGS | RB_F_CLASS_IV_TBL;
		o->cfp_size = 64;
		o->body_insn_info = 120;
		o->body_insn_info_size = 136;
		o->body_succ_table = 144;
		o->body_local_iseq = 176;
		o->ractor_running_ec = 0x208;
		o->str_embed = 16;
		o->ary_embed_len_mask = 0x3;
		o->class_ext = 24;          /* struct RClass.ptr */
		o->ext_iv_tbl = 8;          /* rb_classext_t.iv_tbl (st_table *) */
		o->singleton_flag = 1u << 12;
		o->last_op_id = 169;
		return 0;
	}
	/* 3.2+: RVARGC: strings keep their length in a field, the class extension follows the
	 * RClass in the same slot */
	o->body_insn_info = 112;
	o->body_insn_info_size = 128;
	o->body_succ_table = 136;
	o->body_local_iseq = 168;
	o->str_len = 16;
	o->str_embed = 24;
	o->ary_embed_len_mask = 0x7f;
	o->class_ext = 32;
	o->last_op_id = minor >= 4 ? 170 : 169;
	o->singleton_flag = minor >= 4 ? 1u << 13 : 1u << 12;
	if (minor == 2) {
		o->flags = RB_F_CLASS_IV_PTR;
		o->cfp_size = 64;
		o->ractor_running_ec = 0x208;
		o->ext_iv_tbl = 0;          /* rb_classext_t.iv_ptr (shape-indexed VALUE array) */
		return 0;
	}
	/* 3.3, 3.4: the control frame lost bp; the class path is a field */
	o->flags = RB_F_CLASS_PATH;
	o->cfp_size = 56;
	o->ractor_running_ec = 0x180;
	o->ext_attached = 96;
	o->ext_classpath = 120;
	return 0;
}
