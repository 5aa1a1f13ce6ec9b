/* test_php.c: PHP support. The x86 decoders (execute_ex's dispatch jump, zend_vm_kind) on byte
 * strings; the walker and the names on memory images laid out as PHP 7.4 and 8.0 - 8.3 do
 * (methods, functions, internal functions, {main} and {include}, the ZEND_CALL_TOP frames
 * that end segments), a reused function address caught; and, with Debian's php installed, the
 * file detection of php8.2 and php-fpm8.2, the walk, names, lines and script label of a live
 * interpreter, the layout of another version caught, and the runtime through the framework. */
#include <linux/types.h>

#include "agent/elf.h"
#include "agent/process.h"
#include "agent/procmaps.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "profile/profile.h"
#include "runtime/php/php.h"
#include "runtime/php/php_proc.h"
#include "runtime/php/php_runtime.h"
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

static void test_decoders(void)
{
	/* php8.2's execute_ex: ... jmp *(%r15) at +0x45 */
	static const uint8_t code[] = { 0x55, 0x53, 0x48, 0x83, 0xec, 0x08, 0x41, 0xff, 0x27, 0x90 };
	static const uint8_t jmp_rax[] = { 0x90, 0xff, 0xe0 };
	static const uint8_t jmp_disp[] = { 0xff, 0x64, 0x24, 0x08 }; /* jmp *8(%rsp) */
	static const uint8_t hybrid[] = { 0xb8, 0x04, 0x00, 0x00, 0x00, 0xc3 };
	static const uint8_t call_vm[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3 };

	CHECK_EQ_INT(php_decode_jit_return(code, sizeof(code), 0x36cbe0), 0x36cbe0 + 9);
	CHECK_EQ_INT(php_decode_jit_return(jmp_rax, sizeof(jmp_rax), 0x1000), 0x1003);
	CHECK_EQ_INT(php_decode_jit_return(jmp_disp, sizeof(jmp_disp), 0x1000), 0x1004);
	CHECK_EQ_INT(php_decode_jit_return(code, 6, 0x1000), 0);
	CHECK(php_decode_vm_kind_hybrid(hybrid, sizeof(hybrid)));
	CHECK(!php_decode_vm_kind_hybrid(call_vm, sizeof(call_vm)));
	CHECK(!php_decode_vm_kind_hybrid(hybrid, 3));
	CHECK(php_is_sapi_path("/usr/bin/php8.2"));
	CHECK(php_is_sapi_path("/usr/sbin/php-fpm8.2"));
	CHECK(php_is_sapi_path("/usr/bin/php-cgi"));
	CHECK(php_is_sapi_path("/usr/lib/apache2/modules/libphp8.2.so"));
	CHECK(!php_is_sapi_path("/usr/bin/phpize"));
	CHECK(!php_is_sapi_path("/usr/bin/php-config8.2"));
}

/* --- memory images ----------------------------------------------------------------------- */

struct img {
	struct mem_image m;
	struct php_offsets o;
};

#define img_alloc(im, n) mem_image_alloc(&(im)->m, n)
#define put64(im, addr, v) mem_image_put64(&(im)->m, addr, v)
#define put32(im, addr, v) mem_image_put32(&(im)->m, addr, v)

static uint64_t mk_zstr(struct img *im, const char *s)
{
	size_t len = strlen(s);
	uint64_t v = img_alloc(im, 24 + len + 1);

	put32(im, v, 1);      /* refcount */
	put32(im, v + 4, 6);  /* IS_STRING */
	put64(im, v + 16, len);
	memcpy(im->m.mem + (v + 24 - im->m.base), s, len);
	return v;
}

static uint64_t mk_func(struct img *im, int type, const char *name, const char *klass,
			const char *file, int line_start)
{
	uint64_t f = img_alloc(im, 256);

	put32(im, f, (uint32_t)type);
	if (name)
		put64(im, f + im->o.fn_name, mk_zstr(im, name));
	if (klass) {
		uint64_t ce = img_alloc(im, 64);

		put64(im, ce + im->o.ce_name, mk_zstr(im, klass));
		put64(im, f + im->o.fn_scope, ce);
	}
	if (file) {
		put64(im, f + im->o.op_filename, mk_zstr(im, file));
		put32(im, f + im->o.op_line_start, (uint32_t)line_start);
	}
	return f;
}

static uint64_t mk_ex(struct img *im, uint64_t func, int line, uint32_t info, uint64_t prev)
{
	uint64_t ex = img_alloc(im, 80), op = img_alloc(im, 32);

	put32(im, op + im->o.op_lineno, (uint32_t)line);
	put64(im, ex + im->o.ex_opline, line ? op : 0);
	put64(im, ex + im->o.ex_func, func);
	put32(im, ex + im->o.ex_call_info, info);
	put64(im, ex + im->o.ex_prev, prev);
	return ex;
}

static void check_image(unsigned major, unsigned minor)
{
	struct img im;
	struct procmem_region r;
	struct procmem_image pi;
	struct procmem m;
	struct php_process *p = NULL;
	struct php_cache *cache = php_cache_new(64);
	struct errmsg err = { { 0 } };
	uint64_t words[64], eg, f_main, f_inc, f_outer, f_inner, f_gz, f_cb, ex;
	static const char *const want[] = {
		"gzcompress", "Worker::inner", "{closure}", "array_map", "Worker::outer", "{include}",
		"{main}",
	};
	static const int want_line[] = { 0, 7, 12, 0, 11, 3, 2 };
	const char *script = NULL;
	int n, i, k = 0, segs = 0;

	memset(&im, 0, sizeof(im));
	im.m.cap = 1 << 18;
	im.m.mem = xcalloc(1, im.m.cap);
	im.m.base = 0x7f0000200000ULL;
	if (php_proc_open_mem(&m, major, minor, 0, &p, &err) < 0) {
		CHECK(!"no layout");
		xfree(im.m.mem);
		php_cache_free(cache);
		return;
	}
	im.o = *php_proc_offsets(p);
	php_proc_free(p);
	p = NULL;
	img_alloc(&im, 16); /* the fuzz corpus's header: executor_globals */
	eg = img_alloc(&im, 1024);
	f_main = mk_func(&im, PHP_FUNC_USER, NULL, NULL, "/srv/www/index.php", 1);
	f_inc = mk_func(&im, PHP_FUNC_USER, NULL, NULL, "/srv/www/lib.php", 1);
	f_outer = mk_func(&im, PHP_FUNC_USER, "outer", "Worker", "/srv/www/lib.php", 10);
	f_cb = mk_func(&im, PHP_FUNC_USER, "{closure}", NULL, "/srv/www/lib.php", 12);
	f_inner = mk_func(&im, PHP_FUNC_USER, "inner", "Worker", "/srv/www/lib.php", 5);
	f_gz = mk_func(&im, PHP_FUNC_INTERNAL, "gzcompress", NULL, NULL, 0);
	{
		uint64_t f_array_map = mk_func(&im, PHP_FUNC_INTERNAL, "array_map", NULL, NULL, 0);
		/* oldest first: {main} (TOP code), include (code), Worker::outer, array_map
		 * (internal), a closure it calls back (a VM call of its own: TOP function),
		 * Worker::inner, gzcompress (internal) */
		uint64_t e_main = mk_ex(&im, f_main, 2, PHP_CALL_TOP | PHP_CALL_CODE, 0);
		uint64_t e_inc = mk_ex(&im, f_inc, 3, PHP_CALL_CODE, e_main);
		uint64_t e_outer = mk_ex(&im, f_outer, 11, 0, e_inc);
		uint64_t e_map = mk_ex(&im, f_array_map, 0, 0, e_outer);
		uint64_t e_cb = mk_ex(&im, f_cb, 12, PHP_CALL_TOP, e_map);
		uint64_t e_inner = mk_ex(&im, f_inner, 7, 0x308, e_cb);

		ex = mk_ex(&im, f_gz, 0, 0, e_inner);
	}
	put64(&im, eg + im.o.eg_current_ex, ex);
	put64(&im, im.m.base, eg);
	if (getenv("SCORCH_PHP_CORPUS")) {
		char path[512];
		FILE *out;

		snprintf(path, sizeof(path), "%s/image-%u.%u", getenv("SCORCH_PHP_CORPUS"), major,
			 minor);
		out = fopen(path, "wb");
		if (out) {
			fputc(major == 7 ? 0 : (int)minor + 1, out);
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
	CHECK_EQ_INT(php_proc_open_mem(&m, major, minor, eg, &p, &err), 0);
	if (!p)
		goto out;
	CHECK_EQ_INT(php_proc_validate(p, &err), 0);
	n = php_proc_walk(p, words, 64, 1);
	CHECK_EQ_INT(n, 7 * 2 + 2);
	for (i = 0; i + 1 < n && k < 7; i++) {
		const struct php_func *f;

		if ((words[i] >> FW_TAG_SHIFT) == FW_TAG_MARKER) {
			segs++;
			continue;
		}
		CHECK_EQ_INT(words[i] >> FW_TAG_SHIFT, FW_TAG_PHP_FUNC);
		f = php_cache_get(cache, 1, words[i] & FW_DATA_MASK,
				  (uint32_t)(words[i + 1] >> 32) & 0xffff,
				  (uint32_t)(words[i + 1] >> 48) & 0xff, php_proc_mem(p),
				  php_proc_offsets(p));
		CHECK(f != NULL);
		if (f) {
			CHECK_EQ_STR(f->name, want[k]);
			CHECK_EQ_INT(f->file ? (int)(words[i + 1] & 0xffffffff) : 0, want_line[k]);
		}
		k++;
		i++;
	}
	for (; i < n; i++)
		segs += (words[i] >> FW_TAG_SHIFT) == FW_TAG_MARKER;
	CHECK_EQ_INT(segs, 2);
	CHECK_EQ_INT(php_proc_script(p, &script), 0);
	CHECK_EQ_STR(script, "/srv/www/index.php");
	/* reuse: another function's name at the same address -> no stale name */
	{
		uint64_t name;
		uint32_t cks;

		memcpy(&name, im.m.mem + (f_outer + im.o.fn_name - im.m.base), 8);
		cks = php_checksum(name, PHP_FUNC_USER);
		put64(&im, f_outer + im.o.fn_name, mk_zstr(&im, "other"));
		CHECK(php_cache_get(cache, 2, f_outer, cks, 0, php_proc_mem(p),
				    php_proc_offsets(p)) == NULL);
		CHECK(php_cache_get(cache, 1, f_outer, cks, 0, NULL, NULL) != NULL); /* cached */
	}
	/* a function that is not one: the walk marks it, validation fails */
	put32(&im, f_inner, 9);
	CHECK_EQ_INT(php_proc_validate(p, &err), -EINVAL);
out:
	php_proc_free(p);
	php_cache_free(cache);
	xfree(im.m.mem);
}

static void test_images(void)
{
	static const unsigned v[][2] = { { 7, 4 }, { 8, 0 }, { 8, 1 }, { 8, 2 }, { 8, 3 } };
	struct php_process *p = NULL;
	struct procmem m;
	struct errmsg err;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int before = test_failed_checks;

		check_image(v[i][0], v[i][1]);
		if (test_failed_checks != before)
			fprintf(stderr, "  (layout of %u.%u)\n", v[i][0], v[i][1]);
	}
	memset(&m, 0, sizeof(m));
	CHECK_EQ_INT(php_proc_open_mem(&m, 8, 4, 0, &p, &err), -ENOTSUP);
	CHECK_EQ_INT(php_proc_open_mem(&m, 7, 3, 0, &p, &err), -ENOTSUP);
}

/* --- a live interpreter ------------------------------------------------------------------ */

#define PHP "/usr/bin/php8.2"

static int start_stack(struct child *c)
{
	char *const argv[] = { (char *)PHP, (char *)"-n", (char *)"tests/helpers/php/stack.php", NULL };

	return child_start(c, NULL, argv, 3);
}

static int detect(const char *path, struct php_file *f)
{
	struct elf_file *e = NULL;
	int rc;

	if (elf_open(path, &e, NULL) < 0)
		return -ENOENT;
	rc = php_file_detect(e, path, f);
	elf_close(e);
	return rc;
}

/* The bias of the executable's mapping in pid. */
static uint64_t exe_bias(int pid, const char *exe)
{
	struct procmaps maps = { 0 };
	struct elf_file *e = NULL;
	uint64_t bias = 0;
	size_t i;

	if (procmaps_read(pid, &maps, NULL) < 0)
		return 0;
	for (i = 0; i < maps.n; i++)
		if (maps.v[i].kind == PROCMAPS_FILE && !strcmp(maps.v[i].path, exe) &&
		    elf_open(exe, &e, NULL) == 0) {
			bias = elf_load_bias(e, maps.v[i].start, maps.v[i].offset);
			elf_close(e);
			break;
		}
	procmaps_release(&maps);
	return bias;
}

static void test_live(void)
{
	struct php_file f;
	struct php_process *p = NULL;
	struct php_cache *cache;
	struct errmsg err = { { 0 } };
	struct child c;
	uint64_t words[64];
	const char *script = NULL;
	char joined[1024] = "";
	int n, i;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (access(PHP, X_OK) < 0)
		SKIP("%s is not installed", PHP);
	CHECK_EQ_INT(detect(PHP, &f), 1);
	CHECK_EQ_INT(f.major, 8);
	CHECK_EQ_INT(f.minor, 2);
	CHECK(f.eg && !f.zts);
	CHECK(f.jit_return > f.exec_lo && f.jit_return < f.exec_hi); /* the hybrid VM */
	if (access("/usr/sbin/php-fpm8.2", X_OK) == 0) {
		struct php_file g;

		CHECK_EQ_INT(detect("/usr/sbin/php-fpm8.2", &g), 1);
		CHECK(g.eg && g.jit_return);
	}
	CHECK_EQ_INT(detect("/usr/bin/perl", &f) == 1, 0);
	CHECK_EQ_INT(detect(PHP, &f), 1);
	if (start_stack(&c) < 0) {
		CHECK(!"stack.php did not start");
		return;
	}
	CHECK_EQ_INT(php_proc_attach(c.pid, &f, exe_bias(c.pid, PHP), &p, &err), 0);
	if (!p)
		goto out;
	CHECK_EQ_INT(php_proc_validate(p, &err), 0);
	/* a live process read at any moment may be between the calls of its loop: read again
	 * (bounded) until it is inside them */
	for (i = 0; i < 40; i++) {
		n = php_proc_walk(p, words, 64, 0);
		if (n == 8 || n == 10)
			break;
		usleep(50000);
	}
	CHECK(n == 8 || n == 10); /* intdiv's frame on top, or not */
	if (n != 8 && n != 10)
		goto out;
	cache = php_cache_new(16);
	for (i = n - 8; i + 1 < n; i += 2) {
		const struct php_func *fn = php_cache_get(cache, 1, words[i] & FW_DATA_MASK,
							  (uint32_t)(words[i + 1] >> 32) & 0xffff,
							  (uint32_t)(words[i + 1] >> 48) & 0xff,
							  php_proc_mem(p), php_proc_offsets(p));
		char part[300];

		snprintf(part, sizeof(part), "%s:%d;", fn ? fn->name : "?",
			 (int)(words[i + 1] & 0xffffffff));
		if (strlen(joined) + strlen(part) < sizeof(joined))
			memcpy(joined + strlen(joined), part, strlen(part) + 1);
	}
	php_cache_free(cache);
	CHECK_EQ_STR(joined, "Worker::inner:12;Worker::outer:17;driver:23;{main}:26;");
	CHECK_EQ_INT(php_proc_script(p, &script), 0);
	CHECK(script && strstr(script, "tests/helpers/php/stack.php"));
	php_proc_free(p);
	p = NULL;
	/* the layout of 7.4 on 8.2: caught */
	f.major = 7;
	f.minor = 4;
	CHECK_EQ_INT(php_proc_attach(c.pid, &f, exe_bias(c.pid, PHP), &p, &err), 0);
	if (p)
		CHECK_EQ_INT(php_proc_validate(p, &err), -EINVAL);
out:
	php_proc_free(p);
	child_stop(&c);
}

static void test_runtime(void)
{
	static const struct runtime_ops *const table[] = { &php_runtime_ops };
	struct process_registry *reg;
	struct runtimes *rts;
	struct runtime_frame fr[4];
	struct php_file f;
	struct php_process *p = NULL;
	struct errmsg err = { { 0 } };
	const char *key = NULL, *value = NULL;
	uint64_t words[64], bad[2];
	size_t used = 0;
	struct child c;
	int n = 0, tries, top;

	if (geteuid() != 0)
		SKIP("reading another process's memory needs root here");
	if (access(PHP, X_OK) < 0)
		SKIP("%s is not installed", PHP);
	if (start_stack(&c) < 0) {
		CHECK(!"stack.php did not start");
		return;
	}
	reg = process_registry_new(NULL);
	rts = runtimes_new_table(table, 1, NULL);
	runtimes_init(rts, NULL);
	runtimes_subscribe(rts, reg);
	CHECK_EQ_INT(process_track(reg, c.pid, "php8.2"), 0);
	CHECK(process_get(reg, c.pid) && process_get(reg, c.pid)->runtimes != NULL);
	/* the script may be between calls when first seen: walk again
	 * (bounded) until it is inside them, as test_walk does */
	if (detect(PHP, &f) == 1 &&
	    php_proc_attach(c.pid, &f, exe_bias(c.pid, PHP), &p, &err) == 0) {
		for (tries = 0; tries < 40; tries++) {
			n = php_proc_walk(p, words, 64, 0);
			if (n == 8 || n == 10)
				break;
			usleep(50000);
		}
	}
	CHECK(n == 8 || n == 10); /* intdiv's frame on top, or not */
	if (n != 8 && n != 10) {
		child_stop(&c);
		php_proc_free(p);
		process_registry_free(reg);
		runtimes_free(rts);
		return;
	}
	top = n - 8;
	for (tries = 0; tries < 300 && !process_runtime_label(reg, c.pid, &key, &value); tries++) {
		runtimes_note_sample(rts, c.pid, words, (size_t)n);
		usleep(2000);
	}
	CHECK(key && !strcmp(key, "script"));
	CHECK(value && strstr(value, "tests/helpers/php/stack.php"));
	child_stop(&c);
	process_exit(reg, c.pid);
	if (top < 0)
		top = 0;
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + top, (size_t)(n - top), &used, fr, 4),
		     1);
	CHECK_EQ_INT(used, 2);
	CHECK_EQ_STR(fr[0].name, "Worker::inner");
	CHECK_EQ_INT(fr[0].line, 12);
	CHECK_EQ_INT(fr[0].start_line, 7);
	CHECK(fr[0].file && strstr(fr[0].file, "stack.php"));
	CHECK_EQ_INT(fr[0].kind, FRAME_PYTHON);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + top + 6, 2, &used, fr, 4), 1);
	CHECK_EQ_STR(fr[0].name, "{main}");
	bad[0] = words[top];
	bad[1] = words[top + 1] ^ (1ULL << 32);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, bad, 2, &used, fr, 4), 1);
	CHECK_EQ_STR(fr[0].name, "[php: unknown function]");
	CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
	process_registry_collect(reg);
	CHECK_EQ_INT(runtimes_symbolize(rts, c.pid, words + top, 2, &used, fr, 4), 1);
	CHECK_EQ_INT(fr[0].kind, FRAME_SPECIAL);
	php_proc_free(p);
	process_registry_free(reg);
	runtimes_free(rts);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_decoders);
	RUN(test_images);
	RUN(test_live);
	RUN(test_runtime);
	return test_summary();
}
