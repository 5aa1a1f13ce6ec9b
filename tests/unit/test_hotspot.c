/* test_hotspot.c: the HotSpot runtime's readers and frame step: the compressed streams, the
 * vmStructs reader on made-up JVMs in the dialects of JDK 11, 17 and 21 (hotspot_image.h), the
 * frame step over their stacks (compiled, inlined, interpreted, stub; prologue, epilogue,
 * deoptimized), symbolization and its reuse checks, hostile tables, and the installed JDKs: the
 * tables of a live JDK 17 read from the process, recorded as an image and read again from it;
 * a JDK we do not support refused with a reason. Java thread names: the String decoder, the
 * thread list and names on the made-up JVMs (renames, reused thread ids, objects of the wrong
 * class), and the names of a live JDK 17's threads, recorded and read again from the image. */
#include "test.h"

#include "agent/elf.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "runtime/hotspot/hotspot.h"
#include "runtime/hotspot/hotspot_code.h"
#include "runtime/hotspot/hotspot_threads.h"
#include "runtime/hotspot/hotspot_vm.h"
#include "runtime/hotspot/hotspot_walk.h"
#include "runtime/procmem.h"

#include "hotspot_image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- decoders */

static void test_unsigned5(void)
{
	static const uint32_t vals[] = { 0, 1, 63, 190, 191, 192, 193, 1000, 12345, 1u << 20,
					 0x7fffffff, 0xffffffff };
	uint32_t x, v;
	size_t i;

	for (x = 0; x <= 1; x++) {
		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			uint8_t buf[8];
			size_t n = 0, pos = 0;

			hsimg_u5(buf, &n, vals[i], x);
			CHECK(n >= 1 && n <= 5);
			CHECK_EQ_INT(hotspot_unsigned5(buf, n, &pos, x, &v), 0);
			CHECK_EQ_INT(v, vals[i]);
			CHECK_EQ_INT(pos, n);
			/* cut short: an error, never a read past the end */
			if (n > 1) {
				pos = 0;
				CHECK_EQ_INT(hotspot_unsigned5(buf, n - 1, &pos, x, &v), -EINVAL);
			}
		}
	}
	{
		/* the JDK 17 encoding of 192: a high byte then a zero digit */
		static const uint8_t b[] = { 192, 0 };
		size_t pos = 0;

		CHECK_EQ_INT(hotspot_unsigned5(b, 2, &pos, 0, &v), 0);
		CHECK_EQ_INT(v, 192);
		/* with JDK 19+'s exclusion a zero byte is not a digit */
		pos = 0;
		CHECK_EQ_INT(hotspot_unsigned5(b, 2, &pos, 1, &v), -EINVAL);
	}
}

static void test_line_table(void)
{
	struct hotspot_line out[8];
	size_t n = 0;
	/* (0,10) escaped, (5,11) packed, (12,12) packed, end */
	static const uint8_t t0[] = { 0xff, 0, 20, 41, 57, 0 };
	static const uint8_t nul[] = { 0x29, 0x31 };        /* no terminator */
	static const uint8_t neg[] = { 0xff, 3, 2, 0 };      /* bci -2 */
	uint8_t big[40];

	CHECK_EQ_INT(hotspot_line_table(t0, sizeof(t0), 0, out, 8, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(out[0].bci, 0);
	CHECK_EQ_INT(out[0].line, 10);
	CHECK_EQ_INT(out[1].bci, 5);
	CHECK_EQ_INT(out[1].line, 11);
	CHECK_EQ_INT(out[2].bci, 12);
	CHECK_EQ_INT(out[2].line, 12);
	CHECK_EQ_INT(hotspot_line_table(nul, sizeof(nul), 0, out, 8, &n), -EINVAL);
	CHECK_EQ_INT(hotspot_line_table(neg, sizeof(neg), 0, out, 8, &n), -EINVAL);
	memset(big, 0x09, sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK_EQ_INT(hotspot_line_table(big, sizeof(big), 0, out, 8, &n), -E2BIG);
	{
		struct hotspot_method hm;

		memset(&hm, 0, sizeof(hm));
		hm.lines = out;
		hotspot_line_table(t0, sizeof(t0), 0, out, 8, &hm.nlines);
		CHECK_EQ_INT(hotspot_method_line(&hm, 0), 10);
		CHECK_EQ_INT(hotspot_method_line(&hm, 7), 11);
		CHECK_EQ_INT(hotspot_method_line(&hm, 500), 12);
	}
}

static void test_class_names(void)
{
	char a[] = "java/util/HashMap";
	char b[] = "Demo$$Lambda$14+0x0000000800c03000";
	char c[] = "a/b+0xnot";

	hotspot_class_name(a);
	hotspot_class_name(b);
	hotspot_class_name(c);
	CHECK_EQ_STR(a, "java.util.HashMap");
	CHECK_EQ_STR(b, "Demo$$Lambda$14");
	CHECK_EQ_STR(c, "a.b+0xnot");
}

/* ---- made-up JVMs */

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return procmem_read(ctx, addr, buf, len);
}

static const char *const dialect_names[HSIMG__COUNT] = { "JDK 11", "JDK 17", "JDK 21" };

/* Walk the image's thread; n words into w. */
static size_t walk_image(struct hsimg *im, const struct hotspot_vm *vm, struct procmem *m,
			 uint64_t *w, size_t max, uint64_t *pc, uint64_t *sp,
			 enum hotspot_walk_end *end)
{
	uint64_t bp = im->bp;

	*pc = im->pc;
	*sp = im->sp;
	return hotspot_walk(&vm->bpf, image_read, m, pc, sp, &bp, 0, w, max, end);
}

static void check_frame(struct hotspot_cache *hc, struct procmem *m, const struct hotspot_vm *vm,
			const uint64_t *w, int nexp, const char *const *names, const uint32_t *lines)
{
	struct hotspot_sym s[8];
	int n = hotspot_cache_frames(hc, 1, m, vm, w[0], w[1], s, 8), i;

	CHECK_EQ_INT(n, nexp);
	for (i = 0; i < n && i < nexp; i++) {
		CHECK_EQ_STR(s[i].name, names[i]);
		CHECK_EQ_INT(s[i].line, lines[i]);
		CHECK_EQ_INT(s[i].inlined, i + 1 < n);
		if (!s[i].stub)
			CHECK_EQ_STR(s[i].file, "Demo.java");
	}
}

static void test_dialects(void)
{
	int d;

	for (d = 0; d < HSIMG__COUNT; d++) {
		struct hsimg im;
		struct procmem m;
		struct hotspot_vm vm;
		struct errmsg err = { "" };
		struct hotspot_cache *hc = hotspot_cache_new(1024);
		uint64_t w[32], pc, sp;
		enum hotspot_walk_end end;
		size_t n;
		char cmd[64];
		int rc;

		hsimg_build(&im, d);
		procmem_init_image(&m, &im.img);
		rc = hotspot_vm_read(&m, &im.file, 0, &vm, &err);
		if (rc) {
			fprintf(stderr, "  %s: %s\n", dialect_names[d], err.msg);
			CHECK_EQ_INT(rc, 0);
			hotspot_cache_free(hc);
			hsimg_free(&im);
			continue;
		}
		CHECK_EQ_INT(vm.major, im.L->major);
		CHECK_EQ_INT(vm.security, im.L->security);
		CHECK_EQ_INT(vm.bpf.cb_name, im.L->cb_name);
		CHECK_EQ_INT(vm.bpf.cb_code_begin, im.L->cb_code_begin);
		CHECK_EQ_INT(vm.bpf.nm_compile_id, im.L->nm_compile_id);
		CHECK_EQ_INT(vm.bpf.nm_deopt_handler, im.L->cm_deopt);
		CHECK_EQ_INT(vm.bpf.cm_size, im.L->cst_sizeof);
		CHECK_EQ_INT(vm.bpf.if_method, -3);
		CHECK_EQ_INT(vm.bpf.if_bcp, -8);
		CHECK_EQ_INT(vm.bpf.if_sender_sp, -1);
		CHECK_EQ_INT(vm.cm_flags_size, d == HSIMG_JDK21 ? 4 : 2);
		CHECK_EQ_INT(vm.sym_length_shift, d == HSIMG_JDK11 ? 16 : 0);
		CHECK_EQ_INT(vm.cp_source_file == HS_NO_FIELD, d == HSIMG_JDK11);
		CHECK_EQ_INT(vm.unsigned5_x, d == HSIMG_JDK21);
		CHECK_EQ_INT(hotspot_vm_code_cache(&m, &vm, &err), 0);
		CHECK_EQ_INT(vm.bpf.nheaps, 1);
		CHECK(vm.bpf.cc_lo == HSIMG_CODE && vm.bpf.cc_hi == HSIMG_CODE + HSIMG_CODE_LEN);
		CHECK(vm.bpf.interp_lo == im.interp + 112 && vm.bpf.interp_hi == im.interp + 112 + 3000);
		CHECK_EQ_INT(vm.stubs_resolved, 3);
		CHECK_EQ_INT(hotspot_vm_java_command(&m, &vm, cmd, sizeof(cmd)), 0);
		CHECK_EQ_STR(cmd, "com.example.Demo");

		n = walk_image(&im, &vm, &m, w, 32, &pc, &sp, &end);
		CHECK_EQ_INT(end, HOTSPOT_WALK_LEFT);
		CHECK_EQ_INT(n, 8);
		CHECK(pc == HSIMG_NATIVE_RA);
		if (n == 8) {
			static const char *const leaf[] = { "com.example.Demo.leaf" };
			static const uint32_t leaf_l[] = { 11 };
			static const char *const caller[] = { "com.example.Demo.inlined",
							      "com.example.Demo.caller" };
			static const uint32_t caller_l[] = { 1001, 22 };
			static const char *const main_[] = { "com.example.Demo.main" };
			static const uint32_t main_l[] = { 31 };
			static const char *const stub[] = { "StubRoutines::call_stub" };
			static const uint32_t stub_l[] = { 0 };

			CHECK(w[0] == ((FW_TAG_HS_JIT << FW_TAG_SHIFT) | im.nm_leaf));
			CHECK(w[1] == HS_INFO(43, 0x40));
			CHECK(w[2] == ((FW_TAG_HS_JIT << FW_TAG_SHIFT) | im.nm_caller));
			CHECK(w[3] == HS_INFO(42, 0x48));
			CHECK(w[4] == ((FW_TAG_HS_INTERP << FW_TAG_SHIFT) | im.m_main));
			CHECK(w[5] == HS_INFO(im.cm_main >> 3, 5));
			CHECK(w[6] == ((FW_TAG_HS_STUB << FW_TAG_SHIFT) | im.stubs));
			check_frame(hc, &m, &vm, w, 1, leaf, leaf_l);
			check_frame(hc, &m, &vm, w + 2, 2, caller, caller_l);
			check_frame(hc, &m, &vm, w + 4, 1, main_, main_l);
			check_frame(hc, &m, &vm, w + 6, 1, stub, stub_l);
		}
		{
			/* the system name carries the signature */
			struct hotspot_sym s[4];

			CHECK_EQ_INT(hotspot_cache_frames(hc, 1, &m, &vm, w[4], w[5], s, 4), 1);
			CHECK_EQ_STR(s[0].system_name, "com.example.Demo.main([Ljava/lang/String;)V");
			CHECK_EQ_INT(s[0].start_line, 30);
		}
		hotspot_vm_release(&vm);
		hotspot_cache_free(hc);
		hsimg_free(&im);
	}
}

/* The leaf caught at its edges, and a frame returning into a deoptimization handler. */
static void test_walk_edges(void)
{
	struct hsimg im;
	struct procmem m;
	struct hotspot_vm vm;
	struct errmsg err = { "" };
	uint64_t w[32], pc, sp, bp, s0 = HSIMG_STACK + 0x800, v;
	enum hotspot_walk_end end;
	size_t n;

	hsimg_build(&im, HSIMG_JDK17);
	procmem_init_image(&m, &im.img);
	CHECK_EQ_INT(hotspot_vm_read(&m, &im.file, 0, &vm, &err), 0);
	CHECK_EQ_INT(hotspot_vm_code_cache(&m, &vm, &err), 0);

	/* prologue: nothing pushed yet, the return address at sp */
	v = im.caller_ret;
	memcpy(im.stack + (s0 - HSIMG_STACK), &v, 8);
	pc = im.leaf_prologue;
	sp = s0;
	bp = 0x77;
	n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 2, &end);
	CHECK_EQ_INT(n, 2);
	CHECK(pc == im.caller_ret && sp == s0 + 8 && bp == 0x77);

	/* C2's prologue without a stack bang, at `mov [rsp + 16], rbp` after `sub rsp, 16`: the
	 * return address at the top of the allocated frame, not at sp (which holds a stale
	 * address of the code cache here) */
	{
		static const uint8_t mov[] = { 0x48, 0x89, 0x6c, 0x24, 0x10 };

		memcpy(im.code + (im.leaf_prologue - HSIMG_CODE), mov, sizeof(mov));
	}
	v = im.interp + 112 + 0x500;
	memcpy(im.stack + (s0 - HSIMG_STACK), &v, 8);
	v = im.caller_ret;
	memcpy(im.stack + (s0 + 24 - HSIMG_STACK), &v, 8);
	pc = im.leaf_prologue;
	sp = s0;
	bp = 0x77;
	n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 2, &end);
	CHECK_EQ_INT(n, 2);
	CHECK(pc == im.caller_ret && sp == s0 + 32 && bp == 0x77);

	/* epilogue: rbp about to be popped, the return address above it */
	v = 0x99;
	memcpy(im.stack + (s0 - HSIMG_STACK), &v, 8);
	v = im.caller_ret;
	memcpy(im.stack + (s0 + 8 - HSIMG_STACK), &v, 8);
	pc = im.leaf_epilogue;
	sp = s0;
	n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 2, &end);
	CHECK_EQ_INT(n, 2);
	CHECK(pc == im.caller_ret && sp == s0 + 16 && bp == 0x99);

	/* deoptimized: caller returns into its deopt handler, the real pc saved in its frame at
	 * orig_pc_offset (16); it still unwinds by its frame size */
	v = im.caller_ret;
	memcpy(im.stack + (s0 + 16 - HSIMG_STACK), &v, 8);
	v = HSIMG_NATIVE_RA; /* frame of 6 words: the return address at +40 */
	memcpy(im.stack + (s0 + 40 - HSIMG_STACK), &v, 8);
	pc = im.deopt;
	sp = s0;
	n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 1, w, 4, &end);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(end, HOTSPOT_WALK_LEFT);
	CHECK(w[1] == HS_INFO(42, 0x48)); /* the saved pc, not the handler */
	CHECK(pc == HSIMG_NATIVE_RA && sp == s0 + 48);

	/* a C1 runtime stub made without a frame size (-1, the G1 barriers): fp-based, at its
	 * leaf after `push rbp` (`mov rbp, rsp` as HotSpot writes it) and in its body */
	{
		static const uint8_t enter[] = { 0x55, 0x48, 0x8b, 0xec, 0x50, 0x51 };
		uint64_t stub = hsimg_blob(&im, 120, 4, hsimg_str(&im, "g1_post_barrier_slow"), -1,
					   (uint32_t)-1, 64);

		memcpy(im.code + (stub + 64 - HSIMG_CODE), enter, sizeof(enter));
		v = 0x99;
		memcpy(im.stack + (s0 - HSIMG_STACK), &v, 8);
		v = im.caller_ret;
		memcpy(im.stack + (s0 + 8 - HSIMG_STACK), &v, 8);
		pc = stub + 64 + 1;
		sp = s0;
		bp = 0x1234;
		n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 2, &end);
		CHECK_EQ_INT(n, 2);
		CHECK(w[0] == ((FW_TAG_HS_STUB << FW_TAG_SHIFT) | stub));
		CHECK(pc == im.caller_ret && sp == s0 + 16 && bp == 0x99);

		/* the caller's return address follows its call (e8 rel32) */
		im.code[im.caller_ret - 5 - HSIMG_CODE] = 0xe8;
		pc = stub + 64 + 6; /* two registers pushed below the frame */
		sp = s0 - 16;
		bp = s0;
		n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 2, &end);
		CHECK_EQ_INT(n, 2);
		CHECK(pc == im.caller_ret && sp == s0 + 16 && bp == 0x99);

		/* frameless (two registers pushed, no rbp of its own): rbp is the caller's,
		 * pointing at words that are no return address; the return address is found
		 * among the top words */
		v = 0x5;
		memcpy(im.stack + (s0 - HSIMG_STACK), &v, 8);
		v = 0x6;
		memcpy(im.stack + (s0 + 8 - HSIMG_STACK), &v, 8);
		v = im.caller_ret;
		memcpy(im.stack + (s0 + 16 - HSIMG_STACK), &v, 8);
		v = im.interp + 112 + 0x500; /* into the code cache, after no call */
		memcpy(im.stack + (s0 + 0x48 - HSIMG_STACK), &v, 8);
		pc = stub + 64 + 6;
		sp = s0;
		bp = s0 + 0x40;
		n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 2, &end);
		CHECK_EQ_INT(n, 2);
		CHECK(pc == im.caller_ret && sp == s0 + 24 && bp == s0 + 0x40);
	}

	/* a pc in a free part of the heap: a mark, not a guess */
	pc = HSIMG_CODE + 100 * 128 + 4;
	sp = s0;
	n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 0, w, 4, &end);
	CHECK_EQ_INT(end, HOTSPOT_WALK_FAILED);
	CHECK_EQ_INT(n, 1);
	CHECK(w[0] == ((FW_TAG_HS_MARK << FW_TAG_SHIFT) | HS_MARK_NO_BLOB));

	/* an interpreted frame whose frame pointer is below sp: refused */
	pc = im.interp + 112 + 0x100;
	sp = s0;
	bp = s0 - 64;
	n = hotspot_walk(&vm.bpf, image_read, &m, &pc, &sp, &bp, 1, w, 4, &end);
	CHECK_EQ_INT(end, HOTSPOT_WALK_FAILED);
	CHECK(n == 1 && w[0] == ((FW_TAG_HS_MARK << FW_TAG_SHIFT) | HS_MARK_BAD_FRAME));
	hotspot_vm_release(&vm);
	hsimg_free(&im);
}

/* Reused addresses: a method or nmethod replaced is caught, not named after the old one; what
 * was cached while it lived is kept for its samples. */
static void test_reuse(void)
{
	struct hsimg im;
	struct procmem m;
	struct hotspot_vm vm;
	struct errmsg err = { "" };
	struct hotspot_cache *hc = hotspot_cache_new(1024);
	struct hotspot_cache_stats st;
	struct hotspot_sym s[4];
	uint64_t w[32], pc, sp, v;
	enum hotspot_walk_end end;

	hsimg_build(&im, HSIMG_JDK17);
	procmem_init_image(&m, &im.img);
	CHECK_EQ_INT(hotspot_vm_read(&m, &im.file, 0, &vm, &err), 0);
	CHECK_EQ_INT(hotspot_vm_code_cache(&m, &vm, &err), 0);
	CHECK_EQ_INT(walk_image(&im, &vm, &m, w, 32, &pc, &sp, &end), 8);
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, &m, &vm, w[4], w[5], s, 4), 1);
	CHECK_EQ_STR(s[0].name, "com.example.Demo.main");
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, &m, &vm, w[2], w[3], s, 4), 2);

	/* the class is unloaded and its Method's memory reused: another ConstMethod */
	v = im.cm_main + 8;
	memcpy(im.meta + (im.m_main + im.L->m_const - HSIMG_META), &v, 8);
	/* the nmethod is flushed and its blob reused by another compile */
	v = 77;
	memcpy(im.code + (im.nm_caller + im.L->nm_compile_id - HSIMG_CODE), &v, 4);

	/* the samples taken before: still named (cached while the process lived) */
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, &m, &vm, w[4], w[5], s, 4), 1);
	CHECK_EQ_STR(s[0].name, "com.example.Demo.main");
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, &m, &vm, w[2], w[3], s, 4), 2);
	CHECK_EQ_STR(s[1].name, "com.example.Demo.caller");
	/* a new sample naming the old objects with the new cookies: read again, never the old
	 * names (the ConstMethod moved: its cookie differs) */
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, &m, &vm, w[4], HS_INFO((im.cm_main + 8) >> 3, 5),
					  s, 4), 1);
	CHECK(s[0].special && !strcmp(s[0].name, "[java: unknown method]"));
	/* an old cookie at a pc never seen: the blob is not that nmethod any more */
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, &m, &vm, w[2], HS_INFO(42, 0x20), s, 4), 1);
	CHECK(s[0].special && !strcmp(s[0].name, "[java: unknown compiled method]"));
	/* the process gone: only the cache answers */
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, NULL, NULL, w[0], w[1], s, 4), 1);
	CHECK_EQ_STR(s[0].name, "[java: unknown compiled method]"); /* never read */
	hotspot_cache_stats(hc, &st);
	CHECK(st.stale >= 1);
	CHECK(st.hits >= 3);
	hotspot_cache_forget_pid(hc, 1);
	CHECK_EQ_INT(hotspot_cache_frames(hc, 1, NULL, NULL, w[4], w[5], s, 4), 1);
	CHECK(s[0].special);
	hotspot_vm_release(&vm);
	hotspot_cache_free(hc);
	hsimg_free(&im);
}

/* The vmStructs entry of type::field, or 0. */
static uint64_t find_entry(struct hsimg *im, const char *type, const char *field)
{
	uint64_t e;

	for (e = im->struct_entries;; e += 48) {
		uint64_t t, f;

		memcpy(&t, im->tab + (e - HSIMG_TAB), 8);
		memcpy(&f, im->tab + (e + 8 - HSIMG_TAB), 8);
		if (!t)
			return 0;
		if (!strcmp((char *)im->tab + (t - HSIMG_TAB), type) &&
		    !strcmp((char *)im->tab + (f - HSIMG_TAB), field))
			return e;
	}
}

static int read_modified(int d, void (*modify)(struct hsimg *), struct errmsg *err)
{
	struct hsimg im;
	struct procmem m;
	struct hotspot_vm vm;
	int rc;

	hsimg_build(&im, d);
	modify(&im);
	procmem_init_image(&m, &im.img);
	rc = hotspot_vm_read(&m, &im.file, 0, &vm, err);
	if (rc == 0) {
		rc = hotspot_vm_code_cache(&m, &vm, err);
		hotspot_vm_release(&vm);
	}
	hsimg_free(&im);
	return rc;
}

static void mod_stride(struct hsimg *im)
{
	uint64_t v = 1000;

	memcpy(im->tab + (im->stride_var - HSIMG_TAB), &v, 8);
}

static void mod_outside_type(struct hsimg *im)
{
	uint64_t e = find_entry(im, "CodeBlob", "_name"), v = 4000;

	memcpy(im->tab + (e + 32 - HSIMG_TAB), &v, 8);
}

static void mod_missing(struct hsimg *im)
{
	uint64_t e = find_entry(im, "CodeBlob", "_frame_size"), f;

	memcpy(&f, im->tab + (e + 8 - HSIMG_TAB), 8);
	im->tab[f - HSIMG_TAB + 1] = 'X'; /* "_Xrame_size" */
}

static void mod_version8(struct hsimg *im)
{
	uint64_t e = find_entry(im, "JDK_Version", "_current"), a;

	memcpy(&a, im->tab + (e + 40 - HSIMG_TAB), 8);
	im->tab[a - HSIMG_TAB] = 8;
}

static void mod_no_tables(struct hsimg *im)
{
	memset(im->tab + (im->file.sym[HS_SYM_STRUCTS] - HSIMG_TAB), 0, 8);
}

static void mod_no_heaps(struct hsimg *im)
{
	memset(im->tab + (im->heaps_var - HSIMG_TAB), 0, 8);
}

static void mod_reversed_bounds(struct hsimg *im)
{
	uint64_t v = HSIMG_CODE - 4096;

	memcpy(im->tab + (im->high_var - HSIMG_TAB), &v, 8);
}

static void mod_endless(struct hsimg *im)
{
	uint64_t e = find_entry(im, "JavaThread", "_threadObj") + 48;

	/* no terminating entry: names that cannot be read follow */
	memset(im->tab + (e - HSIMG_TAB), 0x11, 48 * 4);
}

static void test_hostile_tables(void)
{
	struct errmsg err = { "" };

	CHECK_EQ_INT(read_modified(HSIMG_JDK17, mod_stride, &err), -EINVAL);
	CHECK(strstr(err.msg, "stride") != NULL);
	CHECK_EQ_INT(read_modified(HSIMG_JDK17, mod_outside_type, &err), -EINVAL);
	CHECK(strstr(err.msg, "outside its type") != NULL);
	CHECK_EQ_INT(read_modified(HSIMG_JDK11, mod_missing, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "CodeBlob::_frame_size") != NULL);
	CHECK_EQ_INT(read_modified(HSIMG_JDK17, mod_version8, &err), -ENOTSUP);
	CHECK(strstr(err.msg, "JDK 8") != NULL);
	CHECK_EQ_INT(read_modified(HSIMG_JDK17, mod_no_tables, &err), -EFAULT);
	CHECK_EQ_INT(read_modified(HSIMG_JDK21, mod_no_heaps, &err), -EAGAIN);
	CHECK_EQ_INT(read_modified(HSIMG_JDK17, mod_reversed_bounds, &err), -EINVAL);
	CHECK_EQ_INT(read_modified(HSIMG_JDK17, mod_endless, &err), -EFAULT);
}

/* ---- live JVMs */

/* ---- Java thread names */

static void test_string_utf8(void)
{
	static const uint8_t latin1[] = { 'c', 'a', 'f', 0xe9, 0x01 };
	static const uint8_t u16[] = { 'a', 0, 0x2d, 0x4e, 0x3d, 0xd8, 0x00, 0xde, 0x00, 0xd8, 'z', 0 };
	char out[32];

	CHECK_EQ_INT(hotspot_string_utf8(latin1, sizeof(latin1), 0, out, sizeof(out)), 6);
	CHECK_EQ_STR(out, "caf\xc3\xa9?"); /* a control character replaced */
	/* a BMP character, a surrogate pair, a lone surrogate */
	CHECK_EQ_INT(hotspot_string_utf8(u16, sizeof(u16), 1, out, sizeof(out)), 12);
	CHECK_EQ_STR(out, "a\xe4\xb8\xad\xf0\x9f\x98\x80\xef\xbf\xbdz");
	/* cut at a character boundary, never inside one */
	CHECK_EQ_INT(hotspot_string_utf8(u16, sizeof(u16), 1, out, 6), 4);
	CHECK_EQ_STR(out, "a\xe4\xb8\xad");
	CHECK_EQ_INT(hotspot_string_utf8(u16, 3, 1, out, sizeof(out)), -EINVAL);
	CHECK_EQ_INT(hotspot_string_utf8(u16, 2, 7, out, sizeof(out)), -EINVAL);
	CHECK_EQ_INT(hotspot_string_utf8(latin1, 0, 0, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, "");
}

static void test_threads_image(void)
{
	static const int dialects[] = { HSIMG_JDK11, HSIMG_JDK17 };
	const uint64_t s = 1000000000ULL;
	size_t di;

	for (di = 0; di < 2; di++) {
		struct hsimg im;
		struct procmem m;
		struct hotspot_vm vm;
		struct hotspot_jenv env;
		struct hotspot_jthread list[8];
		struct hotspot_threads *t;
		struct errmsg err = { "" };
		char name[HOTSPOT_THREAD_NAME_MAX];
		const char *nm;
		size_t n = 0;
		uint64_t t0 = 5 * s;
		int c;

		hsimg_build(&im, (enum hsimg_dialect)dialects[di]);
		c = im.d == HSIMG_JDK17;
		procmem_init_image(&m, &im.img);
		CHECK_EQ_INT(hotspot_vm_read(&m, &im.file, 0, &vm, &err), 0);
		CHECK_EQ_INT(vm.thr.usable, 1);
		CHECK_EQ_INT(vm.thr.jt_obj_handle, im.d == HSIMG_JDK17);
		CHECK_EQ_INT(hotspot_jenv_read(&m, &vm, &env, &err), 0);
		CHECK_EQ_INT((int)env.compressed_oops, c);
		CHECK_EQ_INT((int)env.compressed_klass, c);
		CHECK_EQ_INT((int)env.thread_name, c ? 12 : 16);
		CHECK_EQ_INT((int)env.string_value, c ? 12 : 16);
		CHECK_EQ_INT((int)env.string_coder, c ? 16 : 24);
		CHECK_EQ_INT(hotspot_jthreads_list(&m, &vm, list, 8, &n), 0);
		CHECK_EQ_INT((int)n, 3);
		CHECK(list[0].tid == HSIMG_TID && list[0].jt == im.jt[0]);
		CHECK(list[2].tid == HSIMG_TID + 2 && list[2].jt == im.jt[2]);
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[0], HSIMG_TID, name,
						  sizeof(name)), 0);
		CHECK_EQ_STR(name, HSIMG_NAME0);
		/* a Thread subclass, a UTF-16 name */
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[1], HSIMG_TID + 1, name,
						  sizeof(name)), 0);
		CHECK_EQ_STR(name, HSIMG_NAME1);
		CHECK_EQ_INT((int)env.nsubclasses, 1);
		/* a JavaThread without a java.lang.Thread, one listed for another id */
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[2], HSIMG_TID + 2, name,
						  sizeof(name)), -ENOENT);
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[0], HSIMG_TID + 1, name,
						  sizeof(name)), -ESRCH);
		/* a short buffer cuts the name */
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[0], HSIMG_TID, name, 7), 0);
		CHECK_EQ_STR(name, "worker");

		/* the cache: names by thread id, renames seen after the TTL, reused ids */
		t = hotspot_threads_new();
		nm = hotspot_threads_name(t, &m, &vm, HSIMG_TID, t0);
		CHECK(nm && !strcmp(nm, HSIMG_NAME0));
		nm = hotspot_threads_name(t, &m, &vm, HSIMG_TID + 1, t0);
		CHECK(nm && !strcmp(nm, HSIMG_NAME1));
		CHECK(hotspot_threads_name(t, &m, &vm, HSIMG_TID + 2, t0) == NULL);
		CHECK(hotspot_threads_name(t, &m, &vm, 4242, t0) == NULL); /* a GC thread, say */
		/* Thread.setName: the bytes change in place here (a new String in the JVM) */
		memcpy(im.meta + (im.name_bytes[0] - HSIMG_META) + (c ? 16 : 24), "WORKER", 6);
		nm = hotspot_threads_name(t, &m, &vm, HSIMG_TID, t0 + s / 2);
		CHECK(nm && !strcmp(nm, HSIMG_NAME0)); /* cached for a while */
		nm = hotspot_threads_name(t, &m, &vm, HSIMG_TID, t0 + s + 1);
		CHECK(nm && !strncmp(nm, "WORKER-with", 11));
		/* the thread exits and its id goes to a new Java thread (listed anew) */
		hsimg_put32(im.meta, HSIMG_META, im.os[0] + 208, 7777);
		CHECK(hotspot_threads_name(t, &m, &vm, HSIMG_TID, t0 + 2 * s + 2) == NULL);
		CHECK(hotspot_threads_name(t, &m, &vm, 4242, t0 + 2 * s + 3) == NULL);
		nm = hotspot_threads_name(t, &m, &vm, 7777, t0 + 3 * s + 4);
		CHECK(nm && !strncmp(nm, "WORKER-with", 11));
		CHECK(hotspot_threads_name(t, &m, &vm, HSIMG_TID, t0 + 3 * s + 5) == NULL);
		/* hostile: a thread object of the wrong class, a name that is no String */
		if (c)
			hsimg_put32(im.meta, HSIMG_META, im.thread_obj[1] + 8,
				    (uint32_t)(im.string_klass - HSIMG_META));
		else
			hsimg_put64(im.meta, HSIMG_META, im.thread_obj[1] + 8, im.string_klass);
		env.nsubclasses = 0;
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[1], HSIMG_TID + 1, name,
						  sizeof(name)), -EINVAL);
		hsimg_put32(im.meta, HSIMG_META, im.name_bytes[0] + (c ? 12 : 16), 0x7fffffff);
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[0], 7777, name,
						  sizeof(name)), 0); /* a huge length is cut */
		hsimg_put32(im.meta, HSIMG_META, im.name_bytes[0] + (c ? 12 : 16), 0x80000000u);
		CHECK_EQ_INT(hotspot_jthread_name(&m, &vm, &env, im.jt[0], 7777, name,
						  sizeof(name)), -EINVAL);
		hotspot_threads_free(t);
		hotspot_vm_release(&vm);
		hsimg_free(&im);
	}
	/* JDK 21 keeps its field info in streams: no names, and no harm */
	{
		struct hsimg im;
		struct procmem m;
		struct hotspot_vm vm;
		struct hotspot_jenv env;
		struct hotspot_threads *t = hotspot_threads_new();
		struct errmsg err = { "" };

		hsimg_build(&im, HSIMG_JDK21);
		procmem_init_image(&m, &im.img);
		CHECK_EQ_INT(hotspot_vm_read(&m, &im.file, 0, &vm, &err), 0);
		CHECK_EQ_INT(vm.thr.usable, 0);
		CHECK_EQ_INT(hotspot_jenv_read(&m, &vm, &env, &err), -ENOTSUP);
		CHECK(hotspot_threads_name(t, &m, &vm, 1, 1) == NULL);
		hotspot_threads_free(t);
		hotspot_vm_release(&vm);
		hsimg_free(&im);
	}
}

/* A reader that records what it reads, to replay it as an image. */
struct recorder {
	struct procmem live;
	struct procmem_region *r;
	size_t n, cap;
};

static int rec_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct recorder *rec = ctx;
	int rc = procmem_read(&rec->live, addr, buf, len);
	void *copy;

	if (rc == 0) {
		ALLOC_GROW(rec->r, rec->n + 1, rec->cap);
		copy = xmalloc(len);
		memcpy(copy, buf, len);
		rec->r[rec->n++] = (struct procmem_region){ addr, copy, len };
	}
	return rc;
}

static pid_t spawn_java(const char *java, const char *a1, const char *a2, const char *a3)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(java, java, "-XX:TieredStopAtLevel=1", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* libjvm.so of pid: the file's tables and its load bias. 0 or -ENOENT. */
static int find_libjvm(pid_t pid, struct hotspot_file *f, uint64_t *bias)
{
	struct procmaps maps;
	struct elf_file *e = NULL;
	size_t i;
	int rc = -ENOENT;

	if (procmaps_read(pid, &maps, NULL))
		return -ENOENT;
	for (i = 0; i < maps.n && rc; i++) {
		const struct procmaps_entry *m = &maps.v[i];

		if (m->kind != PROCMAPS_FILE || !strstr(m->path, "libjvm.so") ||
		    !(m->perms & PROCMAPS_X))
			continue;
		if (elf_open(m->path, &e, NULL) == 0) {
			if (hotspot_file_detect(e, m->path, f) == 1) {
				*bias = elf_load_bias(e, m->start, m->offset);
				rc = 0;
			}
			elf_close(e);
		}
	}
	procmaps_release(&maps);
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The nmethods of the code heaps, named (the first max), found by walking each heap's blocks
 * up to the first never-used one; *found is set when one is named want. */
static int named_nmethods(struct procmem *m, const struct hotspot_vm *vm, char names[][128],
			  int max, const char *want, int *found)
{
	int n = 0;
	uint32_t h;

	for (h = 0; h < vm->bpf.nheaps; h++) {
		const struct hs_heap *hp = &vm->bpf.heaps[h];
		uint64_t a = hp->lo;

		while (a < hp->hi) {
			uint64_t len = 0, name = 0;
			uint8_t used = 0;
			char bname[16] = "";

			if (procmem_u64(m, a, &len) < 0 || len == 0 || len > (1u << 24) ||
			    procmem_read(m, a + 8, &used, 1) < 0)
				break;
			if (used && procmem_u64(m, a + vm->bpf.hb_size + vm->bpf.cb_name, &name) == 0 &&
			    procmem_read(m, name, bname, 8) == 0 && !strncmp(bname, "nmethod", 7)) {
				struct hotspot_scope sc[4];
				struct hotspot_method hm;
				uint32_t id = 0;
				size_t k;

				procmem_u32(m, a + vm->bpf.hb_size + vm->bpf.nm_compile_id, &id);
				if (hotspot_nmethod_scopes(m, vm, a + vm->bpf.hb_size, id, HS_NO_POS, sc, 4,
							   &k, NULL) == 0 &&
				    hotspot_method_read(m, vm, sc[0].method, 0, &hm, NULL) == 0) {
					if (n < max)
						snprintf(names[n++], 128, "%s", hm.qualified);
					if (want && !strcmp(hm.qualified, want))
						*found = 1;
					hotspot_method_release(&hm);
				}
			}
			a += len << hp->log2_seg;
		}
	}
	return n;
}

static void test_live_jdk17(void)
{
	const char *java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
	struct hotspot_file f;
	struct hotspot_vm vm, vm2;
	struct recorder rec;
	struct procmem m, img_mem;
	struct procmem_image img;
	struct errmsg err = { "" };
	char names[256][128], cmd[64];
	uint64_t bias = 0;
	int i, n = 0, found = 0, rc = -1;
	pid_t pid;
	size_t k;

	if (access(java, X_OK))
		SKIP("JDK 17 is not installed (%s)", java);
	pid = spawn_java(java, "tests/helpers/java/Spin.java", "30", NULL);
	CHECK(pid > 0);
	memset(&rec, 0, sizeof(rec));
	procmem_init_pid(&rec.live, pid);
	m.read = rec_read;
	m.ctx = &rec;
	m.reads = 0;
	/* the JVM starts: libjvm mapped, its tables filled, then the code cache */
	for (i = 0; i < 300; i++, sleep_ms(50)) {
		if (find_libjvm(pid, &f, &bias))
			continue;
		rc = hotspot_vm_read(&m, &f, bias, &vm, &err);
		if (rc)
			continue;
		rc = hotspot_vm_code_cache(&m, &vm, &err);
		if (rc == 0)
			break;
		hotspot_vm_release(&vm);
	}
	if (rc) {
		fprintf(stderr, "  live JDK 17: %s\n", err.msg);
		CHECK_EQ_INT(rc, 0);
		stop_child(pid);
		return;
	}
	/* the interpreter is generated right after the code cache is set up */
	for (i = 0; i < 100 && !vm.bpf.interp_hi; i++, sleep_ms(50))
		hotspot_vm_code_cache(&m, &vm, &err);
	CHECK_EQ_INT(vm.major, 17);
	CHECK(strstr(vm.release, "17.") == vm.release);
	CHECK(vm.bpf.nheaps >= 1);
	CHECK(vm.bpf.interp_hi > vm.bpf.interp_lo);
	CHECK(vm.entries_read > 1000);
	CHECK(hotspot_vm_java_command(&m, &vm, cmd, sizeof(cmd)) == 0);
	/* the source launcher runs Spin.java through its own main class */
	CHECK(strstr(cmd, "Main") != NULL || strstr(cmd, "Spin") != NULL);
	/* Spin.spin gets compiled: find it among the named nmethods */
	for (i = 0; i < 200 && !found; i++, sleep_ms(50))
		n = named_nmethods(&m, &vm, names, 256, "Spin.spin", &found);
	CHECK(n > 10);
	CHECK(found);
	stop_child(pid);

	/* the same reads from the recorded image: the same answers (newest reads first: the
	 * image is the memory as the last search saw it) */
	for (k = 0; k < rec.n / 2; k++) {
		struct procmem_region t = rec.r[k];

		rec.r[k] = rec.r[rec.n - 1 - k];
		rec.r[rec.n - 1 - k] = t;
	}
	img.regions = rec.r;
	img.nregions = rec.n;
	procmem_init_image(&img_mem, &img);
	CHECK_EQ_INT(hotspot_vm_read(&img_mem, &f, bias, &vm2, &err), 0);
	CHECK_EQ_INT(hotspot_vm_code_cache(&img_mem, &vm2, &err), 0);
	CHECK(memcmp(&vm.bpf, &vm2.bpf, sizeof(vm.bpf)) == 0);
	CHECK_EQ_INT(vm2.major, 17);
	CHECK_EQ_STR(vm2.release, vm.release);
	if (found) {
		char names2[256][128];
		int n2 = named_nmethods(&img_mem, &vm2, names2, 256, NULL, NULL), same = n2 == n;

		for (k = 0; k < (size_t)n2 && k < (size_t)n; k++)
			same &= !strcmp(names[k], names2[k]);
		CHECK(same);
	}
	hotspot_vm_release(&vm);
	hotspot_vm_release(&vm2);
	for (k = 0; k < rec.n; k++)
		xfree((void *)rec.r[k].data);
	xfree(rec.r);
}

/* The names of the threads of tests/helpers/java/ThreadNames.java, read from a live JDK 17,
 * then from the recorded reads. */
static void test_live_thread_names(void)
{
	const char *java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
	static const char *const want[] = { "worker-with-a-very-long-name-alpha",
					    "renamed-from-outside-beta-long",
					    "unicode-\xe5\x90\x8d\xe5\x89\x8d-\xce\xb4\xce\xbf"
					    "\xce\xba\xce\xb9\xce\xbc\xce\xae-delta", "main" };
	struct hotspot_file f;
	struct hotspot_vm vm;
	struct hotspot_jenv env;
	struct recorder rec;
	struct procmem m, img_mem;
	struct procmem_image img;
	struct hotspot_jthread list[256];
	struct errmsg err = { "" };
	char names[256][HOTSPOT_THREAD_NAME_MAX];
	uint64_t bias = 0;
	size_t n = 0, k, w;
	int i, rc = -1, found = 0;
	pid_t pid;

	if (access(java, X_OK))
		SKIP("JDK 17 is not installed (%s)", java);
	pid = spawn_java(java, "tests/helpers/java/ThreadNames.java", "20", NULL);
	CHECK(pid > 0);
	memset(&rec, 0, sizeof(rec));
	procmem_init_pid(&rec.live, pid);
	m.read = rec_read;
	m.ctx = &rec;
	m.reads = 0;
	for (i = 0; i < 300; i++, sleep_ms(50)) {
		if (find_libjvm(pid, &f, &bias))
			continue;
		rc = hotspot_vm_read(&m, &f, bias, &vm, &err);
		if (rc == 0)
			break;
	}
	if (rc) {
		fprintf(stderr, "  live JDK 17: %s\n", err.msg);
		CHECK_EQ_INT(rc, 0);
		stop_child(pid);
		return;
	}
	CHECK_EQ_INT(vm.thr.usable, 1);
	/* the source launcher compiles first: wait until every thread runs under its name */
	for (i = 0; i < 400 && found < 4; i++, sleep_ms(50)) {
		/* the image keeps the last round's reads only */
		for (k = 0; k < rec.n; k++)
			xfree((void *)rec.r[k].data);
		rec.n = 0;
		if (hotspot_jenv_read(&m, &vm, &env, &err) || hotspot_jthreads_list(&m, &vm, list, 256, &n))
			continue;
		found = 0;
		for (k = 0; k < n; k++) {
			if (hotspot_jthread_name(&m, &vm, &env, list[k].jt, list[k].tid, names[k],
						 sizeof(names[k])))
				names[k][0] = '\0';
			for (w = 0; w < 4; w++)
				found += !strcmp(names[k], want[w]);
		}
	}
	stop_child(pid);
	CHECK_EQ_INT(found, 4);
	/* the compiler threads are Java threads too: their names are longer than comm */
	for (k = 0, found = 0; k < n; k++)
		found += strstr(names[k], " CompilerThread") != NULL; /* C1 (TieredStopAtLevel=1) */
	CHECK(found >= 1);

	/* the same from the recorded reads (newest first) */
	for (k = 0; k < rec.n / 2; k++) {
		struct procmem_region r = rec.r[k];

		rec.r[k] = rec.r[rec.n - 1 - k];
		rec.r[rec.n - 1 - k] = r;
	}
	img.regions = rec.r;
	img.nregions = rec.n;
	procmem_init_image(&img_mem, &img);
	{
		struct hotspot_jthread list2[256];
		struct hotspot_jenv env2;
		char name[HOTSPOT_THREAD_NAME_MAX];
		size_t n2 = 0;

		CHECK_EQ_INT(hotspot_jenv_read(&img_mem, &vm, &env2, &err), 0);
		CHECK_EQ_INT(hotspot_jthreads_list(&img_mem, &vm, list2, 256, &n2), 0);
		CHECK_EQ_INT((int)n2, (int)n);
		for (k = 0; k < n && k < n2; k++) {
			CHECK(list2[k].tid == list[k].tid && list2[k].jt == list[k].jt);
			if (hotspot_jthread_name(&img_mem, &vm, &env2, list2[k].jt, list2[k].tid, name,
						 sizeof(name)))
				name[0] = '\0';
			CHECK_EQ_STR(name, names[k]);
		}
	}
	hotspot_vm_release(&vm);
	for (k = 0; k < rec.n; k++)
		xfree((void *)rec.r[k].data);
	xfree(rec.r);
}

/* Every other JDK installed under /usr/lib/jvm: one of 9 - 22 must be read and its compiled
 * Spin.spin named; any other version refused with its number, never misread. */
static void test_live_other_jdks(void)
{
	char seen[8][PATH_MAX];
	int nseen = 0, tried = 0;
	DIR *dir = opendir("/usr/lib/jvm");
	struct dirent *de;

	while (dir && (de = readdir(dir))) {
		char path[PATH_MAX], real[PATH_MAX];
		struct hotspot_file f;
		struct hotspot_vm vm;
		struct procmem m;
		struct errmsg err = { "" };
		uint64_t bias = 0;
		int i, j, rc = -EFAULT, dup = 0;
		pid_t pid;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/usr/lib/jvm/%s/bin/java", de->d_name);
		if (access(path, X_OK) || !realpath(path, real))
			continue;
		for (j = 0; j < nseen; j++)
			dup |= !strcmp(seen[j], real);
		if (dup || nseen >= 8 || strstr(real, "java-17-openjdk"))
			continue; /* JDK 17: test_live_jdk17 */
		snprintf(seen[nseen++], PATH_MAX, "%s", real);
		tried++;
		pid = spawn_java(real, "tests/helpers/java/Spin.java", "20", NULL);
		procmem_init_pid(&m, pid);
		for (i = 0; i < 300; i++, sleep_ms(50)) {
			if (find_libjvm(pid, &f, &bias))
				continue;
			rc = hotspot_vm_read(&m, &f, bias, &vm, &err);
			if (rc == 0 && (rc = hotspot_vm_code_cache(&m, &vm, &err)) != 0)
				hotspot_vm_release(&vm);
			if (rc != -EFAULT && rc != -EAGAIN)
				break;
		}
		fprintf(stderr, "  %s: %s\n", real, rc ? err.msg : "read");
		if (rc == 0) {
			char names[256][128];
			int found = 0, n = 0;

			CHECK(vm.major >= 9 && vm.major <= 22);
			for (i = 0; i < 200 && !found; i++, sleep_ms(50))
				n = named_nmethods(&m, &vm, names, 256, "Spin.spin", &found);
			CHECK(n > 10);
			CHECK(found);
			hotspot_vm_release(&vm);
		} else {
			CHECK_EQ_INT(rc, -ENOTSUP);
			CHECK(strstr(err.msg, "is not supported") != NULL);
		}
		stop_child(pid);
	}
	if (dir)
		closedir(dir);
	if (!tried)
		SKIP("no JDK but 17 installed under /usr/lib/jvm");
}

int main(void)
{
	RUN(test_unsigned5);
	RUN(test_line_table);
	RUN(test_class_names);
	RUN(test_dialects);
	RUN(test_walk_edges);
	RUN(test_reuse);
	RUN(test_hostile_tables);
	RUN(test_string_utf8);
	RUN(test_threads_image);
	RUN(test_live_jdk17);
	RUN(test_live_thread_names);
	RUN(test_live_other_jdks);
	return test_summary();
}
