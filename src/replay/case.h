/* case.h: a replay case, one stack of one thread as the user-space unwinder saw it, in a file
 * that needs neither the process, nor its binaries, nor root (docs/formats.md, "Replay cases").
 *
 * A case holds the thread's registers, the memory the unwind read (whole 4 KiB pages, only
 * those it touched), the mappings and unwind-table entries it looked up (with the indices the
 * step used, so that a replay reads the same ones), the words it produced, a name for each of
 * them, and the stack as `scorch record` prints it. src/replay/replay.c runs the same step
 * (bpf/unwind_step.h, through unwinder_unwind_from()) over it.
 *
 * FILE. gzip of:
 *   "SCORCHRC" (8 bytes), u32 version (CASE_VERSION), u32 0
 *   sections until the end: u32 type, u32 length, length bytes (all integers little-endian):
 *     CASE_SEC_META     key NUL value NUL ... ("description", "origin", "comm")
 *     CASE_SEC_REGS     u32 pid, u32 tid, u64 pc, sp, bp, fsbase, u32 flags (UNW_S_OFF_STACK),
 *                       u32 map_first, u32 map_count, u64 rbx, rdi (0: unknown)
 *                                                                             (68 bytes, once)
 *     CASE_SEC_MEM      u64 address, then the bytes                           (any number)
 *     CASE_SEC_MAPPING  u32 index, u64 start, end, bias, u32 table_first, table_count,
 *                       u16 flags, u8 kind, u8 index_shift, u32 index_count, then the file's
 *                       name (no NUL)                                         (any number)
 *     CASE_SEC_ENTRIES  (u32 index, u32 pc, u16 off, u8 kind, s8 rbp) x n     (any number)
 *     CASE_SEC_DEFERRED u64 x n: a snapshot's deferred runtime words          (at most once)
 *     CASE_SEC_NAME     u64 word, u8 leaf (the word is the leaf's exact pc), then the
 *                       frame's text as record prints it (inlined frames: "a;b") (any number)
 *     CASE_SEC_EXPECT   u32 result (enum unwind_stat), u32 n, u64 x n words, then the folded
 *                       stack, comm first                                      (once)
 *     CASE_SEC_JIT_LINKS u32 count, then (u64 ra, u64 below) x count: the process's PCRE2 JIT
 *                       links (bpf/unwind.h), when the unwind asked for them  (at most once)
 * A section of an unknown type is skipped (a newer writer of the same version may add one);
 * a newer version is refused. Everything is checked as hostile input: sizes, counts, overlaps
 * (tests/fuzz/fuzz_case.c). */
#ifndef SCORCH_REPLAY_CASE_H
#define SCORCH_REPLAY_CASE_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "lib/buf.h"
#include "lib/log.h"

#define CASE_MAGIC "SCORCHRC"
#define CASE_VERSION 1
#define CASE_MAX_BYTES (64u << 20)  /* a case, decompressed */
#define CASE_MAX_ITEMS (1u << 20)   /* memory ranges, mappings, entries, names, words */
#define CASE_PAGE 4096u

enum case_section {
	CASE_SEC_META = 1,
	CASE_SEC_REGS = 2,
	CASE_SEC_MEM = 3,
	CASE_SEC_MAPPING = 4,
	CASE_SEC_ENTRIES = 5,
	CASE_SEC_DEFERRED = 6,
	CASE_SEC_NAME = 7,
	CASE_SEC_EXPECT = 8,
	CASE_SEC_JIT_LINKS = 9,
};

struct case_mem {
	uint64_t addr;
	uint32_t len;
	uint8_t *data;
};

struct case_mapping {
	uint32_t idx;
	struct unwind_mapping m;
	char *file;
};

struct case_entry {
	uint32_t idx;
	struct unwind_entry e;
};

struct case_name {
	uint64_t word;
	uint8_t leaf;
	char *text;
};

struct replay_case {
	char *description, *origin, *comm;
	uint32_t pid, tid;
	uint64_t pc, sp, bp, fsbase, bx, di;
	uint32_t flags, map_first, map_count;
	struct unwind_jit_links jit;    /* count 0: none */
	struct case_mem *mem;           /* sorted by address, not overlapping */
	size_t nmem, mem_cap;
	struct case_mapping *maps;      /* sorted by index */
	size_t nmaps, maps_cap;
	struct case_entry *entries;     /* sorted by index */
	size_t nentries, entries_cap;
	uint64_t *deferred;
	size_t ndeferred;
	struct case_name *names;
	size_t nnames, names_cap;
	uint32_t expect_result;
	uint64_t *expect_words;
	size_t nexpect;
	char *expect;                   /* the folded stack, comm first; NULL when none */
	int have_regs;
};

/* Parse a case file's bytes (gzip or not). 0, or -EINVAL / -ENOTSUP (a newer version) with
 * err saying what is wrong; nothing is kept on failure. */
int case_parse(const void *data, size_t len, struct replay_case *c, struct errmsg *err);
int case_load(const char *path, struct replay_case *c, struct errmsg *err);
/* The file's bytes (gzip) into out. 0 or -ENOMEM. */
int case_encode(const struct replay_case *c, struct buf *out);
void case_release(struct replay_case *c);

/* Building a case (capture): add memory (merged into the pages already held), a mapping or an
 * entry by index (kept once), a name. Each 0 or -ENOSPC past CASE_MAX_ITEMS. */
int case_add_mem(struct replay_case *c, uint64_t addr, const void *data, uint32_t len);
int case_add_mapping(struct replay_case *c, uint32_t idx, const struct unwind_mapping *m,
		     const char *file);
int case_add_entry(struct replay_case *c, uint32_t idx, const struct unwind_entry *e);
int case_add_name(struct replay_case *c, uint64_t word, int leaf, const char *text);

/* Lookups of a parsed case: NULL when not held. */
const struct case_mapping *case_mapping(const struct replay_case *c, uint32_t idx);
const struct case_entry *case_entry(const struct replay_case *c, uint32_t idx);
const char *case_name(const struct replay_case *c, uint64_t word, int leaf);
/* 8 bytes at addr: 0, or -1 when the case does not hold them. */
int case_read_u64(const struct replay_case *c, uint64_t addr, uint64_t *out);

#endif
