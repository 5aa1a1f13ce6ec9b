/* test_perl.c: Perl support. The context walk and the names on memory images laid out as Perl
 * 5.28, 5.32, 5.34, 5.36 and 5.40 do (threaded; 5.36 also non-threaded): subs named by their GV
 * or by their CV's HEK (5.22+ subs without a glob), stash names before and after 5.36's
 * embedded aux, the pending-COP order that gives each sub the line it runs, a sub called from C
 * and a sort block's stack that end segments; a reused COP caught by the line check; and, with
 * Debian's perl installed, the file detection of /usr/bin/perl, the key of PL_thr_key, the
 * walk, names, lines and script label of a live interpreter, the layout of another version
 * caught, and the runtime through the framework. */
#include <linux/types.h>

#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/perl/perl.h"
#include "runtime/perl/perl_proc.h"
#include "runtime/perl/perl_runtime.h"
#include "runtime/procmem.h"
#include "runtime/runtime.h"
#include "child_cpu.h"
#include "mem_image.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct img {
	struct mem_image m;
	struct perl_offsets o;
};

#define img_alloc(im, n) mem_image_alloc(&(im)->m, n)
#define put64(im, addr, v) mem_image_put64(&(im)->m, addr, v)
#define put32(im, addr, v) mem_image_put32(&(im)->m, addr, v)

static uint64_t mk_hek(struct img *im, const char *s)
{
	uint64_t h = img_alloc(im, 8 + strlen(s) + 1);

	put32(im, h + 4, (uint32_t)strlen(s));
	memcpy(im->m.mem + (h + 8 - im->m.base), s, strlen(s));
	return h;
}

static uint64_t mk_stash(struct img *im, const char *name)
{
	uint64_t hv = img_alloc(im, 24), body = img_alloc(im, 0x20 + 0x40);

	put64(im, hv, body);
	put32(im, hv + 0xc, PERL_SVT_PVHV);
	if (im->o.flags & PERL_F_HV_AUX_IN_BODY) {
		put64(im, body + im->o.hv_aux, mk_hek(im, name)); /* name_count 0: a direct HEK */
	} else {
		uint64_t array = img_alloc(im, 8 * 8 + 0x40);

		put64(im, hv + 0x10, array);
		put64(im, body + im->o.xhv_max, 7);
		put64(im, array + 8 * 8, mk_hek(im, name));
	}
	return hv;
}

static uint64_t mk_gv(struct img *im, const char *name, uint64_t stash)
{
	uint64_t gv = img_alloc(im, 24), body = img_alloc(im, 0x40), gp = img_alloc(im, 0x48);

	put64(im, gv, body);
	put32(im, gv + 0xc, PERL_SVT_PVGV | PERL_SVPGV_GP);
	put64(im, gv + 0x10, gp);
	put64(im, body + im->o.xgv_namehek, mk_hek(im, name));
	put64(im, body + im->o.xgv_stash, stash);
	return gv;
}

/* a CV named by its GV, or (gv 0) by a HEK and its stash */
static uint64_t mk_cv(struct img *im, uint64_t gv, const char *name, uint64_t stash)
{
	uint64_t cv = img_alloc(im, 24), body = img_alloc(im, 0x68);

	put64(im, cv, body);
	put32(im, cv + 0xc, PERL_SVT_PVCV);
	if (gv) {
		put64(im, body + im->o.xcv_gv, gv);
	} else {
		put64(im, body + im->o.xcv_gv, mk_hek(im, name));
		put64(im, body + im->o.xcv_stash, stash);
		put32(im, body + im->o.xcv_flags, PERL_CVF_NAMED);
	}
	return cv;
}

static uint64_t mk_cop(struct img *im, const char *file, uint32_t line)
{
	uint64_t cop = img_alloc(im, 0x58);

	put32(im, cop + im->o.cop_line, line);
	if (im->o.flags & PERL_F_THREADED) {
		uint64_t s = img_alloc(im, strlen(file) + 1);

		memcpy(im->m.mem + (s - im->m.base), file, strlen(file));
		put64(im, cop + im->o.cop_file, s);
	} else {
		char gvname[256];

		snprintf(gvname, sizeof(gvname), "_<%s", file);
		put64(im, cop + im->o.cop_file, mk_gv(im, gvname, 0));
	}
	return cop;
}

static void mk_cx(struct img *im, uint64_t cxstack, int ix, uint8_t type, uint64_t oldcop,
		  uint64_t retop, uint64_t cv)
{
	uint64_t cx = cxstack + (uint64_t)ix * im->o.cx_size;

	im->m.mem[cx - im->m.base] = type;
	put64(im, cx + im->o.cx_oldcop, oldcop);
	put64(im, cx + im->o.cx_retop, retop);
	put64(im, cx + im->o.cx_cv, cv);
}

static uint64_t mk_si(struct img *im, uint64_t cxstack, int cxix, int type, uint64_t prev)
{
	uint64_t si = img_alloc(im, 0x40);

	put64(im, si + im->o.si_cxstack, cxstack);
	put64(im, si + im->o.si_prev, prev);
	put32(im, si + im->o.si_cxix, (uint32_t)cxix);
	put32(im, si + im->o.si_type, (uint32_t)type);
	return si;
}

static void check_image(unsigned minor, int threaded)
{
	struct img im;
	struct procmem_region r;
	struct procmem_image pi;
	struct procmem m;
	struct perl_process *p = NULL;
	struct perl_cache *cache = perl_cache_new(64);
	struct errmsg err = { { 0 } };
	uint64_t words[64], worker, main_stash, cv_outer, cv_inner, cop_sort, cop_in_outer,
		cop_call_outer, cop_x, main_cx, sort_cx, si_main, si_sort, interp = 0, var = 0,
		g_curcop = 0, g_si = 0;
	static const char *const want[] = { "Worker::inner", "Worker::outer", "<main>" };
	static const int want_line[] = { 17, 11, 30 };
	const char *script = NULL;
	int n, i, k = 0, segs = 0;

	memset(&im, 0, sizeof(im));
	im.m.cap = 1 << 18;
	im.m.mem = xcalloc(1, im.m.cap);
	im.m.base = 0x7f0000300000ULL;
	CHECK_EQ_INT(perl_offsets_for(5, minor, 0, threaded, &im.o), 0);
	img_alloc(&im, 32); /* the fuzz corpus's header: PL_curinterp, PL_curcop, PL_curstackinfo */
	worker = mk_stash(&im, "Worker");
	main_stash = mk_stash(&im, "main");
	cv_outer = mk_cv(&im, mk_gv(&im, "outer", worker), NULL, 0);
	cv_inner = mk_cv(&im, 0, "inner", worker); /* 5.22+: no glob */
	cop_sort = mk_cop(&im, "/srv/app.pl", 17);      /* in a sort block of inner */
	cop_in_outer = mk_cop(&im, "/srv/app.pl", 11);  /* outer's call of inner */
	cop_call_outer = mk_cop(&im, "/srv/app.pl", 30); /* the program's call of outer */
	cop_x = mk_cop(&im, "/srv/app.pl", 10);          /* outer's loop */
	(void)main_stash;
	main_cx = img_alloc(&im, 4 * im.o.cx_size);
	mk_cx(&im, main_cx, 0, 2 /* CXt_BLOCK */, 0, 0, 0);
	mk_cx(&im, main_cx, 1, PERL_CXT_SUB, cop_call_outer, 0x1000, cv_outer);
	mk_cx(&im, main_cx, 2, 3 /* a loop */, cop_x, 0, 0);
	/* inner was called from C (a callback of an XS function: no retop) */
	mk_cx(&im, main_cx, 3, PERL_CXT_SUB, cop_in_outer, 0, cv_inner);
	sort_cx = img_alloc(&im, im.o.cx_size);
	mk_cx(&im, sort_cx, 0, 0 /* CXt_NULL */, cop_in_outer, 0, 0);
	si_main = mk_si(&im, main_cx, 3, PERL_SI_MAIN, 0);
	si_sort = mk_si(&im, sort_cx, 0, 3 /* PERLSI_SORT */, si_main);
	if (threaded) {
		interp = img_alloc(&im, 0x200);
		put64(&im, interp + im.o.interp_curcop, cop_sort);
		put64(&im, interp + im.o.interp_curstackinfo, si_sort);
		var = img_alloc(&im, 8);
		put64(&im, var, interp);
	} else {
		g_curcop = img_alloc(&im, 8);
		g_si = img_alloc(&im, 8);
		put64(&im, g_curcop, cop_sort);
		put64(&im, g_si, si_sort);
	}
	put64(&im, im.m.base, var);
	put64(&im, im.m.base + 8, g_curcop);
	put64(&im, im.m.base + 16, g_si);
	if (getenv("SCORCH_PERL_CORPUS")) {
		char path[512];
		FILE *out;

		snprintf(path, sizeof(path), "%s/image-5.%u%s", getenv("SCORCH_PERL_CORPUS"), minor,
			 threaded ? "" : "-nothreads");
		out = fopen(path, "wb");
		if (out) {
			fputc((int)(minor - 28), out); /* fuzz_perl.c: 5.(28 + byte % 15) */
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
	CHECK_EQ_INT(perl_proc_open_mem(&m, minor, var, g_curcop, g_si, &p, &err), 0);
	if (!p)
		goto out;
	CHECK_EQ_INT(perl_proc_validate(p, &err), 0);
	n = perl_proc_walk(p, words, 64, 1);
	/* END (the sort block's run) inner END outer <main> END */
	CHECK_EQ_INT(n, 9);
	for (i = 0; i < n; i++) {
		const struct perl_sub *s;
		const struct perl_cop *c;

		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_MARKER) {
			segs++;
			CHECK(words[i] & FW_SEGMENT_DROP_NATIVE);
			continue;
		}
		CHECK_EQ_INT(words[i] >> FW_TAG_SHIFT, FW_TAG_PERL_SUB);
		if (i + 1 >= n || k >= 3)
			break;
		s = perl_cache_sub(cache, 1, words[i] & FW_DATA_MASK, perl_proc_mem(p),
				   perl_proc_offsets(p));
		CHECK(s != NULL);
		if (s)
			CHECK_EQ_STR(s->name, want[k]);
		c = perl_cache_cop(cache, 1, words[i + 1] & PERL_ADDR_MASK,
				   (uint32_t)(words[i + 1] >> 48) & 0xff, perl_proc_mem(p),
				   perl_proc_offsets(p));
		CHECK(c != NULL);
		if (c) {
			CHECK_EQ_INT(c->line, want_line[k]);
			CHECK_EQ_STR(c->file, "/srv/app.pl");
		}
		k++;
		i++;
	}
	CHECK_EQ_INT(segs, 3);
	CHECK_EQ_INT(perl_proc_script(p, &script), 0);
	CHECK_EQ_STR(script, "/srv/app.pl");
	/* a COP reused for another statement: the line's low byte no longer matches */
	put32(&im, cop_in_outer + im.o.cop_line, 12);
	CHECK(perl_cache_cop(cache, 2, cop_in_outer, 11, perl_proc_mem(p), perl_proc_offsets(p)) ==
	      NULL);
	/* ... the new statement is read as an entry of its own, and the old one, read before the
	 * reuse, keeps its entry for the samples that still name it */
	{
		const struct perl_cop *c = perl_cache_cop(cache, 1, cop_in_outer, 12, perl_proc_mem(p),
							  perl_proc_offsets(p));

		CHECK(c != NULL && c->line == 12);
		c = perl_cache_cop(cache, 1, cop_in_outer, 11, NULL, NULL);
		CHECK(c != NULL && c->line == 11);
	}
	/* a sub whose name cannot be read: validation fails */
	{
		uint64_t body;

		memcpy(&body, im.m.mem + (cv_inner - im.m.base), 8);
		put64(&im, body + im.o.xcv_gv, 0x10);
		CHECK_EQ_INT(perl_proc_validate(p, &err), -EINVAL);
	}
out:
	perl_proc_free(p);
	perl_cache_free(cache);
	xfree(im.m.mem);
}

static void test_images(void)
{
	static const unsigned minors[] = { 28, 32, 34, 36, 40 };
	struct perl_offsets o;
	size_t i;

	for (i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		int before = test_failed_checks;

		check_image(minors[i], 1);
		if (test_failed_checks != before)
			fprintf(stderr, "  (layout of 5.%u)\n", minors[i]);
	}
	check_image(36, 0);
	CHECK_EQ_INT(perl_offsets_for(5, 26, 0, 1, &o), -ENOTSUP);
	CHECK_EQ_INT(perl_offsets_for(5, 44, 0, 1, &o), -ENOTSUP);
	CHECK(perl_is_interp_path("/usr/bin/perl"));
	CHECK(perl_is_interp_path("/usr/bin/perl5.36.0"));
	CHECK(perl_is_interp_path("/usr/lib/x86_64-linux-gnu/libperl.so.5.36"));
	CHECK(!perl_is_interp_path("/usr/bin/perldoc"));
	CHECK(!perl_is_interp_path("/usr/bin/perl-x"));
}

/* --- a live interpreter ------------------------------------------------------------------ */

#define PERL "/usr/bin/perl"

static int start_stack(struct child *c)
{
	char *const argv[] = { (char *)PERL, (char *)"tests/helpers/perl/stack.pl", NULL };

	return child_start(c, NULL, argv, 3);
}

/* The file, the bias of its mapping in pid and the maps. */
static int attach_live(int pid, struct perl_file *f, struct perl_process **p, struct errmsg *err,
		       unsigned minor)
{
	struct procmaps maps = { 0 };
	struct elf_file *e = NULL;
	uint64_t bias = 0;
	size_t i;
	int rc = -ENOENT;

	if (procmaps_read(pid, &maps, NULL) < 0)
		return -ESRCH;
	for (i = 0; i < maps.n; i++)
		if (maps.v[i].kind == PROCMAPS_FILE && !strcmp(maps.v[i].path, PERL) &&
		    elf_open(PERL, &e, NULL) == 0) {
			rc = perl_file_detect(e, PERL, f) == 1 ? 0 : -ENOENT;
			if (minor)
				f->minor = minor; /* another version's layout */
			bias = elf_load_bias(e, maps.v[i].start, maps.v[i].offset);
			elf_close(e);
			break;
		}
	procmaps_keep(&maps, PROCMAPS_X);
	if (rc == 0)
		rc = perl_proc_attach(pid, f, bias, &maps, p, err);
	procmaps_release(&maps);
	return rc;
}

static void test_live(void)
{
	struct perl_file f;
	struct perl_process *p = NULL;
	struct perl_cache *cache;
	struct errmsg err = { { 0 } };
	struct child c;
	uint64_t words[64];
	const char *script = NULL;
	char joined[1024] = "";
	int n, i;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (access(PERL, X_OK) < 0)
		SKIP("%s is not installed", PERL);
	if (start_stack(&c) < 0) {
		CHECK(!"stack.pl did not start");
		return;
	}
	CHECK_EQ_INT(attach_live(c.pid, &f, &p, &err, 0), 0);
	CHECK_EQ_INT(f.major, 5);
	CHECK(f.threaded && f.thr_key && f.curinterp); /* Debian's build is threaded */
	if (!p)
		goto out;
	CHECK(perl_proc_bpf(p)->tsd.stride == 16 && perl_proc_bpf(p)->tsd.direct == 32);
	CHECK_EQ_INT(perl_proc_validate(p, &err), 0);
	n = perl_proc_walk(p, words, 64, 0);
	CHECK_EQ_INT(n, 6);
	cache = perl_cache_new(16);
	for (i = 0; i + 1 < n; i += 2) {
		const struct perl_sub *s = perl_cache_sub(cache, 1, words[i] & FW_DATA_MASK,
							  perl_proc_mem(p), perl_proc_offsets(p));
		char name[256], part[300];
		const struct perl_cop *cop;

		snprintf(name, sizeof(name), "%s", s ? s->name : "?");
		cop = perl_cache_cop(cache, 1, words[i + 1] & PERL_ADDR_MASK,
				     (uint32_t)(words[i + 1] >> 48) & 0xff, perl_proc_mem(p),
				     perl_proc_offsets(p));
		snprintf(part, sizeof(part), "%s:%u;", name, cop ? cop->line : 0);
		if (strlen(joined) + strlen(part) < sizeof(joined))
			memcpy(joined + strlen(joined), part, strlen(part) + 1);
	}
	perl_cache_free(cache);
	CHECK_EQ_STR(joined, "Worker::inner:10;Worker::outer:14;<main>:19;");
	CHECK_EQ_INT(perl_proc_script(p, &script), 0);
	CHECK(script && strstr(script, "tests/helpers/perl/stack.pl"));
	perl_proc_free(p);
	p = NULL;
	/* the layout of 5.32 on 5.36: caught */
	CHECK_EQ_INT(attach_live(c.pid, &f, &p, &err, 32), 0);
	if (p)
		CHECK_EQ_INT(perl_proc_validate(p, &err), -EINVAL);
out:
	perl_proc_free(p);
	child_stop(&c);
}

static void test_runtime(void)
{
	static const struct runtime_ops *const table[] = { &perl_runtime_ops };
	struct process_registry *reg;
	struct runtimes *rts;
	struct runtime_frame fr[4];
	struct perl_file f;
	struct perl_process *p = NULL;
	struct errmsg err = { { 0 } };
	const char *key = NULL, *value = NULL;
	uint64_t words[64], bad[2];
	size_t used = 0;
	struct child c;
	int n = 0, tries;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (access(PERL, X_OK) < 0)
		SKIP("%s is not installed", PERL);
	if (start_stack(&c) < 0) {
		CHECK(!"stack.pl did not start");
		return;
	}
	reg = process_registry_new(NULL);
	rts = runtimes_new_table(table, 1, NULL);
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, c.pid, "perl"), 0);
	CHECK(process_get(reg, c.pid) && process_get(reg, c.pid)->runtimes != NULL);
	if (attach_live(c.pid, &f, &p, &err, 0) == 0)
		n = perl_proc_walk(p, words, 64, 0);
	CHECK_EQ_INT(n, 6);
	for (tries = 0; tries < 300 && !process_runtime_label(reg, c.pid, &key, &value); tries++) {
		runtimes_note_sample(rts, c.pid, words, (size_t)n);
		usleep(2000);
	}
	CHECK(key && !strcmp(key, "script"));
	CHECK(value && strstr(value, "tests/helpers/perl/stack.pl"));
	child_stop(&c);
	process_exit(reg, c.pid);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words, (size_t)n, &used, fr, 4), 1);
	CHECK_EQ_INT(used, 2);
	CHECK_EQ_STR(fr[0].name, "Worker::inner");
	CHECK_EQ_INT(fr[0].line, 10);
	CHECK(fr[0].file && strstr(fr[0].file, "stack.pl"));
	CHECK_EQ_INT(fr[0].kind, FRAME_PYTHON);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + 4, 2, &used, fr, 4), 1);
	CHECK_EQ_STR(fr[0].name, "<main>");
	CHECK_EQ_INT(fr[0].line, 19);
	/* a COP word whose line byte does not match what was read: no file, no wrong line */
	bad[0] = words[0];
	bad[1] = words[1] ^ (1ULL << 48);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, bad, 2, &used, fr, 4), 1);
	CHECK(fr[0].file == NULL && fr[0].line == 0);
	process_registry_collect(reg);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words, (size_t)n, &used, fr, 4), 1);
	CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
	perl_proc_free(p);
	process_registry_free(reg);
	runtimes_free(rts);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_images);
	RUN(test_live);
	RUN(test_runtime);
	return test_summary();
}
