/* perl_proc.h: finding the Perl interpreter in a file and in a running process, naming its
 * subs and statements, and walking its context stack from user space.
 *
 *   perl_file_detect()   once per file: an executable named perl (or perl5.X) with the
 *                        interpreter linked in, or libperl.so*; its version (PL_revision,
 *                        PL_version, PL_subversion: bytes of its read-only data), a threaded
 *                        build (PL_thr_key) or not (PL_curcop and PL_curstackinfo globals),
 *                        Perl_runops_standard (the loop that runs the ops).
 *   perl_proc_attach()   the process: the offsets of the version; threaded: the key's value
 *                        and glibc's key layout from the process's libc (runtime/tls.h).
 *   perl_proc_validate() once Perl code runs: the main interpreter's contexts must lead to
 *                        subs with GVs that have names, and to COPs with files.
 *
 * Names (struct perl_sub) per (pid, GV address): `Package::sub` from the GV's name and its
 * stash's name (`__ANON__::sub` without a stash), a lexical sub by its own name, `<main>` for
 * the program's file-level code. Statements (struct perl_cop) per (pid, COP address, low byte
 * of the line the walker read), checked against that byte: file and line; a COP address reused
 * by another statement is a new entry next to the old one. Both are kept in one cache
 * (struct perl_cache, a runtime/name_cache.h).
 *
 * Ownership: struct perl_process is freed with perl_proc_free(), caches with
 * perl_cache_free(); strings they return live until the next call that may evict, or the free.
 * Not thread-safe. */
#ifndef SCORCH_RUNTIME_PERL_PROC_H
#define SCORCH_RUNTIME_PERL_PROC_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/name_cache.h"
#include "runtime/perl/perl.h"
#include "runtime/procmem.h"

struct elf_file;
struct errmsg;
struct perl_process;
struct procmaps;

#define PERL_NAME_MAX 256
#define PERL_PATH_MAX 1024
#define PERL_WALK_MAX 4096 /* contexts of the user-space walker */

struct perl_file {
	unsigned major, minor, patch;
	int threaded;
	uint64_t thr_key;                /* PL_thr_key (threaded) */
	uint64_t curinterp;              /* PL_curinterp (threaded) */
	uint64_t curcop, curstackinfo;   /* PL_curcop, PL_curstackinfo (non-threaded) */
	uint64_t runops_lo, runops_hi;   /* Perl_runops_standard */
	char path[256];
};

int perl_is_interp_path(const char *path);
/* 1 when the file holds a Perl interpreter, 0 when not, negative errno on read errors. */
int perl_file_detect(struct elf_file *e, const char *path, struct perl_file *out);
/* The layout of Perl 5.minor: 0, or -ENOTSUP (5.28 - 5.42 are known). */
int perl_offsets_for(unsigned major, unsigned minor, unsigned patch, int threaded,
		     struct perl_offsets *out);

/* The process side; maps: its executable mappings (to find its libc). 0, -EAGAIN with *out set
 * (PL_thr_key has no key yet: perl has not started its interpreter; call perl_proc_key()
 * later), -ENOTSUP (version, libc: err says which), -EFAULT. */
int perl_proc_attach(int pid, const struct perl_file *f, uint64_t bias,
		     const struct procmaps *maps, struct perl_process **out, struct errmsg *err);
/* Read PL_thr_key again: 0 once the key exists, -EAGAIN before. */
int perl_proc_key(struct perl_process *p);
/* 0, -EAGAIN (no Perl code running yet), -EINVAL (offsets do not match: err), -EFAULT, -ESRCH. */
int perl_proc_validate(struct perl_process *p, struct errmsg *err);
/* Tests and fuzzing: memory read through m; interp_var: the address of PL_curinterp (threaded
 * layout), or 0 with curcop and curstackinfo the globals' addresses (non-threaded). */
int perl_proc_open_mem(struct procmem *m, unsigned minor, uint64_t interp_var, uint64_t curcop,
		       uint64_t curstackinfo, struct perl_process **out, struct errmsg *err);
void perl_proc_free(struct perl_process *p);
const struct perl_proc *perl_proc_bpf(const struct perl_process *p);
const struct perl_offsets *perl_proc_offsets(const struct perl_process *p);
struct procmem *perl_proc_mem(struct perl_process *p);

/* Walk the main interpreter's contexts into words (perl.h), leaf first, at most max; with
 * segments, a segment end marker where RT_OP_DEFER puts one. The number of words, or a
 * negative errno. */
int perl_proc_walk(struct perl_process *p, uint64_t *words, size_t max, int segments);

/* The script label: the file of the program's file-level code. Remembered once found. 0 or
 * -ENOENT (no program running now, or perl -e). */
int perl_proc_script(struct perl_process *p, const char **script);

/* --- names */
struct perl_sub {
	char *name;        /* Package::sub */
};
struct perl_cop {
	char *file;
	uint32_t line;
};
/* The sub of a SUB word's data (GV, or CV with PERL_SUB_NAMED_CV; 0: <main>): 0 or errno. */
int perl_sub_read(struct procmem *m, const struct perl_offsets *o, uint64_t sub,
		  struct perl_sub *out);
int perl_cop_read(struct procmem *m, const struct perl_offsets *o, uint64_t cop,
		  struct perl_cop *out);
void perl_sub_release(struct perl_sub *s);
void perl_cop_release(struct perl_cop *c);

struct perl_cache;
struct perl_cache *perl_cache_new(size_t max_entries);
void perl_cache_free(struct perl_cache *c);
/* NULL when not to be had (never seen and the process is gone, unreadable, not what the word
 * says: a COP whose line's low byte differs). m NULL: cached entries only. */
const struct perl_sub *perl_cache_sub(struct perl_cache *c, uint32_t pid, uint64_t sub,
				      struct procmem *m, const struct perl_offsets *o);
const struct perl_cop *perl_cache_cop(struct perl_cache *c, uint32_t pid, uint64_t cop,
				      uint32_t line_byte, struct procmem *m,
				      const struct perl_offsets *o);
void perl_cache_forget_pid(struct perl_cache *c, uint32_t pid);
void perl_cache_stats(const struct perl_cache *c, struct name_cache_stats *st);

#endif
