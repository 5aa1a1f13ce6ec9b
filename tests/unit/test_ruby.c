/* test_ruby.c: CRuby support. The succinct line index against a brute-force rank; the walker
 * and the names on memory images laid out as CRuby 3.1, 3.2, 3.3 and 3.4 do (methods, blocks
 * and their method entry up the environment chain, special variables, C functions of a class,
 * of an included module and of a singleton class, the FINISH frames that end segments); reuse
 * caught by the checksums; and, with Debian's ruby installed, the file detection of libruby
 * (stripped: vm_exec_core and the global symbol table found from code), ruby_current_ec
 * through its general-dynamic TLS slot checked against the thread's own fs base, the walk,
 * names, lines and script label of a live interpreter, a wrong layout caught, and the runtime
 * through the framework and the process registry. */
#include <linux/types.h>

#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/procmem.h"
#include "runtime/ruby/ruby.h"
#include "runtime/ruby/ruby_offsets.h"
#include "runtime/ruby/ruby_proc.h"
#include "runtime/ruby/ruby_runtime.h"
#include "runtime/ruby/ruby_sym.h"
#include "runtime/runtime.h"
#include "child_cpu.h"
#include "mem_image.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- the succinct index ------------------------------------------------------------------ */

/* Ruby's succ_index_table for bits set at positions[] (sorted) in a body of size instructions,
 * built the straightforward way: rank(x) = positions <= x. */
static size_t build_succ(uint8_t *out, size_t cap, const uint32_t *pos, size_t npos, uint32_t size)
{
	uint32_t nblocks = size > 54 ? (size - 54 + 511) / 512 : 0, x, b, k;
	size_t len = 48 + 80 * (size_t)nblocks, i;
	uint64_t imm[6] = { 0 };

	if (len > cap)
		return 0;
	memset(out, 0, len);
	for (x = 0; x < 54; x++) {
		uint64_t r = 0;

		for (i = 0; i < npos; i++)
			r += pos[i] <= x;
		imm[x / 9] |= (r & 0x7f) << ((x % 9) * 7);
	}
	memcpy(out, imm, sizeof(imm));
	for (b = 0; b < nblocks; b++) {
		uint32_t start = 54 + 512 * b, rank = 0;
		uint64_t bits[8] = { 0 }, small = 0, cum = 0;
		uint8_t *blk = out + 48 + 80 * (size_t)b;

		for (i = 0; i < npos; i++) {
			if (pos[i] < start)
				rank++;
			else if (pos[i] < start + 512)
				bits[(pos[i] - start) / 64] |= 1ULL << ((pos[i] - start) % 64);
		}
		for (k = 1; k < 8; k++) {
			cum += (uint64_t)__builtin_popcountll(bits[k - 1]);
			small |= (cum & 0x1ff) << ((k - 1) * 9);
		}
		memcpy(blk, &rank, 4);
		memcpy(blk + 8, &small, 8);
		memcpy(blk + 16, bits, sizeof(bits));
	}
	return len;
}

static void test_succ_lookup(void)
{
	static uint8_t table[48 + 80 * 16];
	uint32_t pos[600], n, size = 54 + 512 * 3 + 100, x, seed = 12345, i;
	int bad = 0;

	/* random increasing positions, position 0 always (the first instruction has a line) */
	for (n = 0, x = 0; x < size && n < 600; x++) {
		seed = seed * 1103515245u + 12345u;
		if (x == 0 || (seed >> 16) % 5 == 0)
			pos[n++] = x;
	}
	CHECK(build_succ(table, sizeof(table), pos, n, size) > 0);
	for (x = 0; x < size; x++) {
		int want = 0;

		for (i = 0; i < n; i++)
			want += pos[i] <= x;
		if (ruby_succ_lookup(table, 48 + 80 * 4, x) != want && bad++ < 5)
			fprintf(stderr, "  pos %u: %d, expected %d\n", x,
				ruby_succ_lookup(table, 48 + 80 * 4, x), want);
	}
	CHECK_EQ_INT(bad, 0);
	/* a table too short for the position: no answer, no read past it */
	CHECK_EQ_INT(ruby_succ_lookup(table, 48 + 80, 54 + 600), -1);
	CHECK_EQ_INT(ruby_succ_lookup(table, 40, 3), -1);
}

/* --- memory images ----------------------------------------------------------------------- */

struct img {
	struct mem_image m;
	struct rb_offsets o;
	uint64_t symbols;  /* rb_symbols_t */
	uint64_t chunk;    /* the first chunk of ids */
	uint32_t next_serial;
	uint64_t id_classpath, id_attached; /* one ID per name, as in the VM */
};

#define img_alloc(im, n) mem_image_alloc(&(im)->m, n)
#define put64(im, addr, v) mem_image_put64(&(im)->m, addr, v)
#define put32(im, addr, v) mem_image_put32(&(im)->m, addr, v)

static uint64_t mk_str(struct img *im, const char *s)
{
	size_t len = strlen(s);
	uint64_t v;

	if (len <= 12) { /* embedded */
		v = img_alloc(im, 24 + len + 1);
		if (im->o.flags & RB_F_STR_LEN_FLAGS) {
			put64(im, v, 0x05 | (uint64_t)len << 14);
		} else {
			put64(im, v, 0x05);
			put64(im, v + 16, len);
		}
		memcpy(im->m.mem + (v + im->o.str_embed - im->m.base), s, len);
	} else {
		uint64_t data = img_alloc(im, len + 1);

		memcpy(im->m.mem + (data - im->m.base), s, len);
		v = img_alloc(im, 40);
		put64(im, v, 0x05 | 1ULL << 13);
		put64(im, v + 16, len);
		put64(im, v + 24, data);
	}
	return v;
}

static uint64_t mk_ary(struct img *im, const uint64_t *el, size_t n)
{
	uint64_t v;
	size_t i;

	if (n <= 3) {
		v = img_alloc(im, 40);
		put64(im, v, 0x07 | 1ULL << 13 | (uint64_t)n << 15);
		for (i = 0; i < n; i++)
			put64(im, v + 16 + 8 * i, el[i]);
	} else {
		uint64_t data = img_alloc(im, 8 * n);

		for (i = 0; i < n; i++)
			put64(im, data + 8 * i, el[i]);
		v = img_alloc(im, 40);
		put64(im, v, 0x07);
		put64(im, v + 16, n);
		put64(im, v + 32, data);
	}
	return v;
}

/* An ID for name (a local ID: serial << 4), registered in the symbol table. */
static uint64_t mk_id(struct img *im, const char *name)
{
	uint32_t serial = im->next_serial++;
	uint64_t data;

	memcpy(&data, im->m.mem + (im->chunk + 32 - im->m.base), 8);
	put64(im, data + 8 * (serial % 512) * 2, mk_str(im, name));
	return (uint64_t)serial << 4;
}

static void img_init(struct img *im, unsigned minor)
{
	uint64_t slots[1024] = { 0 }, chunk, ids;

	memset(im, 0, sizeof(*im));
	im->m.cap = 1 << 20;
	im->m.mem = xcalloc(1, im->m.cap);
	im->m.base = 0x7f0000100000ULL;
	CHECK_EQ_INT(ruby_offsets_for(3, minor, 0, &im->o), 0);
	img_alloc(im, 16); /* the fuzz corpus's header: the main ractor and the symbol table */
	chunk = mk_ary(im, slots, 1024);
	im->chunk = chunk;
	ids = mk_ary(im, &chunk, 1);
	im->symbols = img_alloc(im, 40);
	put32(im, im->symbols, 511);
	put64(im, im->symbols + im->o.symbols_ids, ids);
	im->next_serial = 20; /* above tLAST_OP_ID >> 4 */
	im->id_classpath = mk_id(im, "__classpath__");
	im->id_attached = mk_id(im, "__attached__");
}

/* A class or module named path; singleton: a singleton class attached to it instead. */
static uint64_t mk_class(struct img *im, const char *path, int module, int singleton)
{
	const struct rb_offsets *o = &im->o;
	uint64_t k = img_alloc(im, 32 + 160), name = mk_str(im, path);

	put64(im, k, module ? 0x03 : 0x02);
	if (o->flags & RB_F_CLASS_IV_TBL) {
		uint64_t ext = img_alloc(im, 64), tbl = img_alloc(im, 56), ent = img_alloc(im, 24);

		put64(im, k + o->class_ext, ext);
		put64(im, ext + o->ext_iv_tbl, tbl);
		put64(im, tbl + 32, 0);
		put64(im, tbl + 40, 1);
		put64(im, tbl + 48, ent);
		put64(im, ent + 8, im->id_classpath);
		put64(im, ent + 16, name);
	} else if (o->flags & RB_F_CLASS_IV_PTR) {
		uint64_t iv = img_alloc(im, 8);

		put64(im, k + o->class_ext + o->ext_iv_tbl, iv);
		put64(im, iv, name);
	} else {
		put64(im, k + o->class_ext + o->ext_classpath, name);
	}
	if (singleton) {
		uint64_t s = img_alloc(im, 32 + 160);

		put64(im, s, 0x02 | o->singleton_flag);
		if (o->flags & RB_F_CLASS_IV_TBL) {
			uint64_t ext = img_alloc(im, 64), tbl = img_alloc(im, 56), ent = img_alloc(im, 48);

			put64(im, s + o->class_ext, ext);
			put64(im, ext + o->ext_iv_tbl, tbl);
			put64(im, tbl + 32, 0);
			put64(im, tbl + 40, 2);
			put64(im, tbl + 48, ent);
			/* another ivar first, then __attached__ */
			put64(im, ent + 8, mk_id(im, "__tmp__"));
			put64(im, ent + 16, 8); /* nil */
			put64(im, ent + 32, im->id_attached);
			put64(im, ent + 40, k);
		} else if (o->flags & RB_F_CLASS_PATH) {
			put64(im, s + o->class_ext + o->ext_attached, k);
		}
		return s;
	}
	return k;
}

static uint64_t mk_cme(struct img *im, uint64_t klass, const char *name, uint32_t type)
{
	uint64_t me = img_alloc(im, 48), def = img_alloc(im, 48);

	put64(im, me, RB_T_IMEMO | (uint64_t)RB_IMEMO_MENT << RB_IMEMO_SHIFT);
	put64(im, me + im->o.me_defined_class, klass);
	put64(im, me + im->o.me_def, def);
	put64(im, me + im->o.me_owner, klass);
	put32(im, def, type);
	put64(im, def + im->o.def_original_id, mk_id(im, name));
	return me;
}

/* An iseq whose instruction at index pos[i] starts line lines[i]; local: its method's iseq
 * (0: itself). Returns the rb_iseq_t; *encoded its instructions. */
static uint64_t mk_iseq(struct img *im, uint32_t type, const char *label, const char *base,
			const char *path, int first, const int *lines, const uint32_t *pos,
			size_t n, uint32_t size, uint64_t local, uint64_t *encoded)
{
	const struct rb_offsets *o = &im->o;
	uint64_t is = img_alloc(im, 32), body = img_alloc(im, 360), info = img_alloc(im, 12 * n);
	uint64_t pathobj, el[2], loc = body + o->body_location;
	uint8_t succ[48 + 80 * 4];
	size_t len = build_succ(succ, sizeof(succ), pos, n, size), i;
	uint64_t table = img_alloc(im, len);

	*encoded = img_alloc(im, 8 * size);
	put64(im, is, 0x1a | 7 << 12);
	put64(im, is + o->iseq_body, body);
	put32(im, body + o->body_type, type);
	put32(im, body + o->body_size, size);
	put64(im, body + o->body_encoded, *encoded);
	el[0] = mk_str(im, path);
	el[1] = mk_str(im, "/srv/app/realpath.rb");
	pathobj = type == RUBY_ISEQ_MAIN ? mk_ary(im, el, 2) : el[0];
	put64(im, loc, pathobj);
	put64(im, loc + 8, mk_str(im, base));
	put64(im, loc + 16, mk_str(im, label));
	if (o->flags & RB_F_LINENO_VALUE)
		put64(im, loc + o->loc_first_lineno, (uint64_t)first << 1 | 1);
	else
		put32(im, loc + o->loc_first_lineno, (uint32_t)first);
	for (i = 0; i < n; i++)
		put32(im, info + 12 * i, (uint32_t)lines[i]);
	memcpy(im->m.mem + (table - im->m.base), succ, len);
	put64(im, body + o->body_insn_info, info);
	put32(im, body + o->body_insn_info_size, (uint32_t)n);
	put64(im, body + o->body_succ_table, table);
	put64(im, body + o->body_local_iseq, local ? local : is);
	return is;
}

struct frame_spec {
	uint64_t flags;     /* magic | VM flags */
	uint64_t iseq;
	uint64_t pc;
	uint64_t me_cref;
	int prev;           /* index of the frame whose ep is this one's previous env, or -1 */
};

/* The VM stack: frames[0] is the newest. Returns the execution context. */
static uint64_t mk_stack(struct img *im, const struct frame_spec *f, size_t n)
{
	const struct rb_offsets *o = &im->o;
	uint64_t stack = img_alloc(im, 8 * 1024), end = stack + 8 * 1024, ec = img_alloc(im, 64);
	uint64_t eps[16], cfp = end - o->cfp_size;
	size_t i;

	/* the dummy frame at the bottom */
	{
		uint64_t env = stack + 8 * 900;

		put64(im, env + 16, RB_FRAME_MAGIC_DUMMY);
		put64(im, cfp + 32, env + 16);
	}
	for (i = n; i-- > 0;) {
		uint64_t env = stack + 8 * (3 * i + 4);

		cfp -= o->cfp_size;
		eps[i] = env + 16;
		put64(im, env, f[i].me_cref);
		put64(im, env + 8, f[i].prev >= 0 ? eps[f[i].prev] | 1 : 0);
		put64(im, env + 16, f[i].flags);
		put64(im, cfp, f[i].pc);
		put64(im, cfp + 16, f[i].iseq);
		put64(im, cfp + 32, env + 16);
	}
	put64(im, ec + o->ec_vm_stack, stack);
	put64(im, ec + o->ec_vm_stack_size, 1024);
	put64(im, ec + o->ec_cfp, cfp);
	return ec;
}

#define METHOD (0x11110001ULL | RB_ENV_FLAG_LOCAL)
#define BLOCK  0x22220001ULL
#define EVAL   (0x77770001ULL | RB_ENV_FLAG_LOCAL)
#define CFUNC  (RB_FRAME_MAGIC_CFUNC | RB_ENV_FLAG_LOCAL | 0x80)
#define IFUNC  (RB_FRAME_MAGIC_IFUNC | RB_ENV_FLAG_LOCAL)
#define FINISH RB_FRAME_FLAG_FINISH

static void check_image(unsigned minor)
{
	struct img im;
	struct procmem_region r;
	struct procmem_image pi;
	struct procmem m;
	struct ruby_proc *p = NULL;
	struct ruby_cache *cache = ruby_cache_new(64);
	struct errmsg err = { { 0 } };
	uint64_t words[64], enc_main, enc_outer, enc_block, enc_inner, ec, ractor, var;
	uint64_t worker, kernel, iclass, deflate_s, cref, svar, me_outer, me_inner, me_loop,
		me_deflate, iseq_main, iseq_outer, iseq_block, iseq_inner;
	static const int l_main[] = { 20, 21 }, l_outer[] = { 11, 12 }, l_block[] = { 12, 13 },
		l_inner[] = { 5, 6, 7 };
	static const uint32_t p2[] = { 0, 4 }, p3[] = { 0, 2, 60 };
	static const char *const want[] = {
		NULL, "Worker#inner", "block in Worker#outer", "Kernel#loop", "Worker#outer", "<main>",
	};
	static const int want_line[] = { 0, 7, 12, 0, 11, 21 };
	char name[512];
	int n, i, k, segs = 0;

	img_init(&im, minor);
	worker = mk_class(&im, "Worker", 0, 0);
	kernel = mk_class(&im, "Kernel", 1, 0);
	iclass = img_alloc(&im, 40);
	put64(&im, iclass, 0x1c);
	put64(&im, iclass + 8, kernel);
	deflate_s = mk_class(&im, "Zlib::Deflate", 0, 1);
	me_outer = mk_cme(&im, worker, "outer", RUBY_METHOD_ISEQ);
	me_inner = mk_cme(&im, worker, "inner", RUBY_METHOD_ISEQ);
	me_loop = mk_cme(&im, iclass, "loop", RUBY_METHOD_CFUNC);
	me_deflate = mk_cme(&im, deflate_s, "deflate", RUBY_METHOD_CFUNC);
	cref = img_alloc(&im, 40);
	put64(&im, cref, RB_T_IMEMO | 1 << RB_IMEMO_SHIFT);
	svar = img_alloc(&im, 40);
	put64(&im, svar, RB_T_IMEMO | (uint64_t)RB_IMEMO_SVAR << RB_IMEMO_SHIFT);
	put64(&im, svar + 8, me_inner);
	iseq_main = mk_iseq(&im, RUBY_ISEQ_MAIN, "<main>", "<main>", "app.rb", 1, l_main, p2, 2,
			    10, 0, &enc_main);
	iseq_outer = mk_iseq(&im, RUBY_ISEQ_METHOD, "outer", "outer", "app.rb", 10, l_outer, p2, 2,
			     10, 0, &enc_outer);
	iseq_block = mk_iseq(&im, RUBY_ISEQ_BLOCK, "block in outer", "outer", "app.rb", 12,
			     l_block, p2, 2, 10, iseq_outer, &enc_block);
	iseq_inner = mk_iseq(&im, RUBY_ISEQ_METHOD, "inner", "inner", "app.rb", 4, l_inner, p3, 3,
			     200, 0, &enc_inner);
	{
		/* newest first; pcs are past the instruction that runs (pos + 1) */
		struct frame_spec f[] = {
			{ CFUNC, 0, 0, me_deflate, -1 },
			{ METHOD, iseq_inner, enc_inner + 8 * 61, svar, -1 },        /* line 7 */
			{ BLOCK | FINISH, iseq_block, enc_block + 8 * 1, 0, 4 },    /* line 12 */
			{ CFUNC, 0, 0, me_loop, -1 },
			{ IFUNC, 0x1234568, 0, 0, -1 },                             /* skipped */
			{ METHOD, iseq_outer, enc_outer + 8 * 3, me_outer, -1 },     /* line 11 */
			{ EVAL | FINISH, iseq_main, enc_main + 8 * 6, cref, -1 },    /* line 21 */
		};

		/* the block's previous env is outer's (index 5 once the IFUNC is in) */
		f[2].prev = 5;
		ec = mk_stack(&im, f, sizeof(f) / sizeof(f[0]));
	}
	ractor = img_alloc(&im, 0x300);
	put64(&im, ractor + im.o.ractor_running_ec, ec);
	var = img_alloc(&im, 8);
	put64(&im, var, ractor);

	put64(&im, im.m.base, var);
	put64(&im, im.m.base + 8, im.symbols);
	if (getenv("SCORCH_RUBY_CORPUS")) {
		/* seeds for tests/fuzz/fuzz_ruby.c: the version byte, then the image */
		char path[512];
		FILE *out;

		snprintf(path, sizeof(path), "%s/image-3.%u", getenv("SCORCH_RUBY_CORPUS"), minor);
		out = fopen(path, "wb");
		if (out) {
			fputc((int)minor, out);
			fwrite(im.m.mem, 1, im.m.used, out);
			fclose(out);
		}
	}
	r.addr = im.m.base;
	r.data = im.m.mem;
	r.len = im.m.used;
	pi.regions = &r;
	pi.nregions = 1;
	procmem_init_image(&m, &pi);
	CHECK_EQ_INT(ruby_proc_open_mem(&m, 3, minor, var, im.symbols, &p, &err), 0);
	if (!p)
		goto out;
	CHECK_EQ_INT(ruby_proc_validate(p, &err), 0);
	n = ruby_proc_walk_ec(p, ec, words, 64, 1);
	/* 2 (cfunc) + 3 + 3 + end + 2 + 3 + 2 + end */
	CHECK_EQ_INT(n, 17);
	for (i = 0, k = 0; i < n && k < 6; k++) {
		uint64_t t = words[i] >> FW_TAG_SHIFT;
		const struct ruby_iseq *is = NULL;
		const struct ruby_cme *cme = NULL;
		struct ruby_cme copy;
		uint32_t cks = (uint32_t)(words[i + 1] >> 32) & 0xffffff;

		if (t == FW_TAG_MARKER) {
			i++;
			k--;
			continue;
		}
		if (t == FW_TAG_RUBY_CFUNC) {
			cme = ruby_cache_cme(cache, 1, words[i] & FW_DATA_MASK, cks, 0xffffff,
					     ruby_proc_mem(p));
			CHECK(cme != NULL);
			CHECK_EQ_INT(ruby_frame_name(NULL, cme, name, sizeof(name)), 0);
			if (k == 0)
				CHECK_EQ_STR(name, minor == 2 ? "deflate" : "Zlib::Deflate.deflate");
			else
				CHECK_EQ_STR(name, want[k]);
			i += 2;
			continue;
		}
		CHECK_EQ_INT(t, FW_TAG_RUBY_ISEQ);
		is = ruby_cache_iseq(cache, 1, words[i] & FW_DATA_MASK, cks, ruby_proc_mem(p));
		CHECK(is != NULL);
		if (i + 2 < n && (words[i + 2] >> FW_TAG_SHIFT) == FW_TAG_RUBY_CME) {
			const struct ruby_cme *c = ruby_cache_cme(
				cache, 1, words[i + 2] & 0xffffffffffffULL,
				(uint32_t)(words[i + 2] >> 48) & 0xff, 0xff, ruby_proc_mem(p));

			CHECK(c != NULL);
			if (c) {
				copy = *c;
				cme = &copy;
			}
			is = ruby_cache_iseq(cache, 1, words[i] & FW_DATA_MASK, cks, NULL);
		}
		if (is) {
			CHECK_EQ_INT(ruby_frame_name(is, cme, name, sizeof(name)), 0);
			CHECK_EQ_STR(name, want[k]);
			CHECK_EQ_INT(ruby_iseq_line(is, (uint32_t)words[i + 1]), want_line[k]);
			CHECK_EQ_STR(is->path, "app.rb");
		}
		i += cme ? 3 : 2;
	}
	for (i = 0; i < n; i++)
		segs += (words[i] >> FW_TAG_SHIFT) == FW_TAG_MARKER;
	CHECK_EQ_INT(segs, 2);
	/* the script: the <main> iseq's path */
	{
		const char *script = NULL;

		CHECK_EQ_INT(ruby_proc_script(p, &script), 0);
		CHECK_EQ_STR(script, "app.rb");
	}
	/* reuse: the iseq's body pointer changed -> checksum mismatch, no stale name */
	{
		uint64_t body;

		memcpy(&body, im.m.mem + (iseq_outer + im.o.iseq_body - im.m.base), 8);
		put64(&im, iseq_outer + im.o.iseq_body, body + 16);
		n = ruby_proc_walk_ec(p, ec, words, 64, 0);
		for (i = 0; i < n; i++)
			if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_RUBY_ISEQ &&
			    (words[i] & FW_DATA_MASK) == iseq_outer)
				break;
		CHECK(i + 1 < n);
		put64(&im, iseq_outer + im.o.iseq_body, body);
		if (i + 1 < n)
			CHECK(ruby_cache_iseq(cache, 1, iseq_outer,
					      (uint32_t)(words[i + 1] >> 32) & 0xffffff,
					      ruby_proc_mem(p)) == NULL);
		/* another iseq at that address (its body's size differs) is read as an entry of
		 * its own, and the one read before keeps its entry, for the samples that still
		 * name it */
		if (i + 1 < n) {
			uint32_t size, old = 0, fresh = 0;
			int round;

			memcpy(&size, im.m.mem + (body + im.o.body_size - im.m.base), 4);
			for (round = 0; round < 2; round++) {
				put32(&im, body + im.o.body_size, round ? size + 1 : size);
				n = ruby_proc_walk_ec(p, ec, words, 64, 0);
				for (i = 0; i < n; i++)
					if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_RUBY_ISEQ &&
					    (words[i] & FW_DATA_MASK) == iseq_outer)
						break;
				CHECK(i + 1 < n);
				if (i + 1 < n)
					*(round ? &fresh : &old) = (uint32_t)(words[i + 1] >> 32) & 0xffffff;
			}
			CHECK(fresh != old);
			CHECK(ruby_cache_iseq(cache, 1, iseq_outer, fresh, ruby_proc_mem(p)) != NULL);
			put32(&im, body + im.o.body_size, size);
			CHECK(ruby_cache_iseq(cache, 1, iseq_outer, old, NULL) != NULL);
		}
	}
	/* a broken chain: the walk stops with a mark, not garbage */
	put64(&im, ec + im.o.ec_cfp, 8);
	CHECK(ruby_proc_walk_ec(p, ec, words, 64, 0) < 0);
out:
	ruby_proc_free(p);
	ruby_cache_free(cache);
	xfree(im.m.mem);
}

static void test_images(void)
{
	unsigned minor;

	for (minor = 1; minor <= 4; minor++) {
		int before = test_failed_checks;

		check_image(minor);
		if (test_failed_checks != before)
			fprintf(stderr, "  (layout of 3.%u)\n", minor);
	}
	/* no layout for versions we do not know */
	{
		struct rb_offsets o;

		CHECK_EQ_INT(ruby_offsets_for(3, 0, 0, &o), -ENOTSUP);
		CHECK_EQ_INT(ruby_offsets_for(3, 5, 0, &o), -ENOTSUP);
		CHECK_EQ_INT(ruby_offsets_for(2, 7, 8, &o), -ENOTSUP);
	}
}

static void test_paths(void)
{
	CHECK(ruby_is_vm_path("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.7"));
	CHECK(ruby_is_vm_path("/opt/ruby/lib/libruby.so.3.3"));
	CHECK(ruby_is_vm_path("/opt/ruby/bin/ruby"));
	CHECK(!ruby_is_vm_path("/usr/bin/ruby3.1")); /* Debian's: the VM is in libruby */
	CHECK(!ruby_is_vm_path("/usr/lib/libruby-static.a"));
	CHECK(!ruby_is_vm_path("/usr/bin/rubyx"));
	CHECK(!ruby_is_vm_path("/usr/lib/librubyish.so"));
}

/* --- a live interpreter ------------------------------------------------------------------ */

#define RUBY "/usr/bin/ruby"

static int start_stack(struct child *c)
{
	char *const argv[] = { (char *)RUBY, (char *)"tests/helpers/ruby/stack.rb", NULL };

	return child_start(c, NULL, argv, 3);
}

/* libruby's mapping in pid, its file detected, and the load bias. */
static int find_libruby(int pid, struct ruby_file *f, uint64_t *bias)
{
	struct procmaps maps = { 0 };
	struct elf_file *e = NULL;
	size_t i;
	int rc = -ENOENT;

	if (procmaps_read(pid, &maps, NULL) < 0)
		return -ESRCH;
	for (i = 0; i < maps.n; i++) {
		const struct procmaps_entry *m = &maps.v[i];

		if (m->kind != PROCMAPS_FILE || !strstr(m->path, "libruby") ||
		    !(m->perms & PROCMAPS_X))
			continue;
		if (elf_open(m->path, &e, NULL) < 0)
			break;
		rc = ruby_file_detect(e, m->path, f) == 1 ? 0 : -ENOENT;
		*bias = elf_load_bias(e, m->start, m->offset);
		elf_close(e);
		break;
	}
	procmaps_release(&maps);
	return rc;
}

/* The thread's fs base, from ptrace. */
static int fs_base_of(pid_t pid, uint64_t *fs)
{
	struct user_regs_struct regs;
	int status;

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0 || waitpid(pid, &status, 0) < 0) {
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return -EIO;
	}
	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) < 0) {
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return -EIO;
	}
	*fs = regs.fs_base;
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return 0;
}

static void test_live(void)
{
	struct ruby_file f;
	struct ruby_proc *p = NULL;
	struct errmsg err = { { 0 } };
	struct ruby_cache *cache;
	struct child c;
	uint64_t bias = 0, ec = 0, words[256], fs = 0;
	const char *script = NULL;
	char name[512], joined[2048] = "";
	int n, i, rc;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (access(RUBY, X_OK) < 0)
		SKIP("%s is not installed", RUBY);
	if (start_stack(&c) < 0) {
		CHECK(!"stack.rb did not start");
		return;
	}
	CHECK_EQ_INT(find_libruby(c.pid, &f, &bias), 0);
	CHECK_EQ_INT(f.major, 3);
	CHECK(f.core_lo && f.core_hi - f.core_lo > 4096); /* vm_exec_core, found from the code */
	CHECK(f.have_ec && f.ec.got_module);               /* general dynamic, Debian's build */
	CHECK(f.symbols != 0);
	rc = ruby_proc_attach(c.pid, &f, bias, &p, &err);
	CHECK_EQ_INT(rc, 0);
	if (!p)
		goto out;
	CHECK_EQ_INT(ruby_proc_bpf(p)->ec_tls.mode, RT_TLS_DTV);
	CHECK_EQ_INT(ruby_proc_validate(p, &err), 0);
	CHECK_EQ_INT(ruby_proc_running_ec(p, &ec), 0);
	/* the EC through the TLS slot, as BPF reads it, is the one the ractor runs */
	if (fs_base_of(c.pid, &fs) == 0) {
		const struct rt_tls *t = &ruby_proc_bpf(p)->ec_tls;
		struct procmem m;
		uint64_t dtv = 0, block = 0, tls_ec = 0;

		procmem_init_pid(&m, c.pid);
		CHECK_EQ_INT(procmem_u64(&m, fs + t->dtv_offset, &dtv), 0);
		CHECK_EQ_INT(procmem_u64(&m, dtv + t->module * t->dtv_stride, &block), 0);
		CHECK_EQ_INT(procmem_u64(&m, block + t->offset, &tls_ec), 0);
		CHECK_EQ_INT(tls_ec, ec);
	} else {
		fprintf(stderr, "  SKIP-PART the TLS check: cannot ptrace the child\n");
	}
	n = ruby_proc_walk_ec(p, ec, words, 256, 0);
	CHECK(n > 10);
	cache = ruby_cache_new(256);
	for (i = 0; i < n;) {
		uint64_t t = words[i] >> FW_TAG_SHIFT;
		const struct ruby_iseq *is;
		const struct ruby_cme *cme = NULL;
		struct ruby_cme copy;
		uint32_t cks = (uint32_t)(words[i + 1] >> 32) & 0xffffff;
		char part[600];

		if (t == FW_TAG_RUBY_CFUNC) {
			cme = ruby_cache_cme(cache, 1, words[i] & FW_DATA_MASK, cks, 0xffffff,
					     ruby_proc_mem(p));
			snprintf(part, sizeof(part), "%s;",
				 cme && ruby_frame_name(NULL, cme, name, sizeof(name)) == 0 ? name : "?");
			i += 2;
		} else if (t == FW_TAG_RUBY_ISEQ) {
			if (i + 2 < n && (words[i + 2] >> FW_TAG_SHIFT) == FW_TAG_RUBY_CME) {
				cme = ruby_cache_cme(cache, 1, words[i + 2] & 0xffffffffffffULL,
						     (uint32_t)(words[i + 2] >> 48) & 0xff, 0xff,
						     ruby_proc_mem(p));
				if (cme) {
					copy = *cme;
					cme = &copy;
				}
			}
			is = ruby_cache_iseq(cache, 1, words[i] & FW_DATA_MASK, cks,
					     ruby_proc_mem(p));
			if (is) {
				ruby_frame_name(is, cme, name, sizeof(name));
				snprintf(part, sizeof(part), "%s:%d;", name,
					 ruby_iseq_line(is, (uint32_t)words[i + 1]));
			} else {
				snprintf(part, sizeof(part), "?;");
			}
			i += cme || (i + 2 < n && (words[i + 2] >> FW_TAG_SHIFT) == FW_TAG_RUBY_CME)
				     ? 3 : 2;
		} else {
			snprintf(part, sizeof(part), "mark;");
			i++;
		}
		if (strlen(joined) + strlen(part) < sizeof(joined))
			memcpy(joined + strlen(joined), part, strlen(part) + 1);
	}
	/* stack.rb: the block spins (line 10) or Integer#times runs between its calls */
	CHECK(strstr(joined, "Integer#times;Worker#inner:9;block in Worker#outer:16;Kernel#loop;"
			     "Worker#outer:15;<main>:21;") != NULL);
	if (!strstr(joined, "Integer#times;Worker#inner:9;"))
		fprintf(stderr, "  stack: %s\n", joined);
	ruby_cache_free(cache);
	CHECK_EQ_INT(ruby_proc_script(p, &script), 0);
	CHECK(script && strstr(script, "tests/helpers/ruby/stack.rb"));
	ruby_proc_free(p);
	p = NULL;
	/* the layout of another version: caught, not walked into garbage */
	f.minor = 3;
	CHECK_EQ_INT(ruby_proc_attach(c.pid, &f, bias, &p, &err), 0);
	if (p)
		CHECK_EQ_INT(ruby_proc_validate(p, &err), -EINVAL);
out:
	ruby_proc_free(p);
	child_stop(&c);
}

/* The runtime through the framework and the process registry, as a session drives it: frame
 * words as the walker makes them, the script label, names still there after the process
 * exited, until the registry forgets it; a checksum that does not match gives no name. */
static void test_runtime(void)
{
	static const struct runtime_ops *const table[] = { &ruby_runtime_ops };
	struct process_registry *reg;
	struct runtimes *rts;
	struct runtime_frame fr[4];
	struct ruby_file f;
	struct ruby_proc *p = NULL;
	struct errmsg err = { { 0 } };
	const char *key = NULL, *value = NULL;
	uint64_t words[256], ec = 0, bias = 0, bad[2];
	size_t used = 0;
	struct child c;
	int n = 0, tries, top;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (access(RUBY, X_OK) < 0)
		SKIP("%s is not installed", RUBY);
	if (start_stack(&c) < 0) {
		CHECK(!"stack.rb did not start");
		return;
	}
	reg = process_registry_new(NULL);
	rts = runtimes_new_table(table, 1, NULL);
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, c.pid, "ruby"), 0);
	CHECK(process_get(reg, c.pid) && process_get(reg, c.pid)->runtimes != NULL);
	if (find_libruby(c.pid, &f, &bias) == 0 &&
	    ruby_proc_attach(c.pid, &f, bias, &p, &err) == 0 && ruby_proc_running_ec(p, &ec) == 0)
		n = ruby_proc_walk_ec(p, ec, words, 256, 0);
	CHECK(n > 10);
	for (tries = 0; tries < 300 && !process_runtime_label(reg, c.pid, &key, &value); tries++) {
		runtimes_note_sample(rts, c.pid, words, (size_t)n);
		usleep(2000);
	}
	CHECK(key && !strcmp(key, "script"));
	CHECK(value && strstr(value, "tests/helpers/ruby/stack.rb"));
	child_stop(&c); /* the process is gone: names come from the cache */
	process_exit(reg, c.pid);
	/* the newest frame is Integer#times, or the block */
	top = (words[0] >> FW_TAG_SHIFT) == FW_TAG_RUBY_CFUNC ? 0 : 3;
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + top, (size_t)n - top, &used, fr, 4), 1);
	CHECK_EQ_STR(fr[0].name, "Integer#times");
	CHECK_EQ_INT(used, 2);
	CHECK_EQ_INT(fr[0].kind, FRAME_PYTHON);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + top + 2, (size_t)n - top - 2, &used, fr,
					4), 1);
	CHECK_EQ_STR(fr[0].name, "Worker#inner");
	CHECK_EQ_INT(fr[0].line, 9);
	CHECK_EQ_INT(fr[0].start_line, 6);
	CHECK(fr[0].file && strstr(fr[0].file, "stack.rb"));
	CHECK_EQ_INT(used, 3);
	bad[0] = words[top + 2];
	bad[1] = words[top + 3] ^ (1ULL << 32);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, bad, 2, &used, fr, 4), 1);
	CHECK_EQ_STR(fr[0].name, "[ruby: unknown iseq]");
	CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
	bad[0] = (FW_TAG_RUBY_MARK << FW_TAG_SHIFT) | RB_MARK_TRUNCATED;
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, bad, 1, &used, fr, 4), 1);
	CHECK_EQ_STR(fr[0].name, "[ruby: truncated]");
	process_registry_collect(reg);
	CHECK(process_get(reg, c.pid) == NULL);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + top + 2, (size_t)n - top - 2, &used, fr,
					4), 1);
	CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
	ruby_proc_free(p);
	process_registry_free(reg);
	runtimes_free(rts);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_succ_lookup);
	RUN(test_images);
	RUN(test_paths);
	RUN(test_live);
	RUN(test_runtime);
	return test_summary();
}
