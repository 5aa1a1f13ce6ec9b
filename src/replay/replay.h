/* replay.h: run a replay case (case.h) through the user-space unwinder, the same step the BPF
 * program runs (bpf/unwind_step.h), with the case's memory, mappings and table entries in place
 * of the process and its files; and capture a case from a live thread.
 *
 * A replay prints the stack as `scorch record` does (comm first, root first), each word named
 * from the case (a word the case does not name: its address, "0x..."), and compares it with
 * the case's recorded words (case.h, EXPECT). --trace shows each step: registers, the mapping,
 * the rule. */
#ifndef SCORCH_REPLAY_REPLAY_H
#define SCORCH_REPLAY_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "replay/case.h"

struct replay_result {
	uint64_t *words;   /* leaf first */
	size_t n;
	uint32_t result;   /* enum unwind_stat */
	char *folded;      /* comm;root;...;leaf */
};

/* Replay c. trace: where each step is described, or NULL. 0 or -ENOMEM. */
int replay_run(const struct replay_case *c, FILE *trace, struct replay_result *out);
void replay_result_release(struct replay_result *r);
/* The folded stack of words (leaf first) named from c. Caller frees. */
char *replay_folded(const struct replay_case *c, const uint64_t *words, size_t n);
/* Whether r is what c recorded (its words and how the unwind ended). */
int replay_matches(const struct replay_case *c, const struct replay_result *r);

/* CAPTURE. Stop thread tid of process pid (ptrace), read its registers and stack, unwind it
 * with u (the process tracked in u: unwinder_track_pid()) while recording what the unwind
 * reads, name the words with sym, and fill c. The thread runs again before this returns. 0,
 * or a negative errno with err saying why (no such thread, ptrace refused, ...). */
struct unwinder;
struct symbolizer;
int replay_capture(struct unwinder *u, struct symbolizer *sym, int pid, int tid,
		   const char *comm, struct replay_case *c, struct errmsg *err);

/* The same from a sample's stack snapshot that the user-space unwind did not finish (the
 * unwinder's capture hook, record --capture-dir): the snapshot's bytes are the memory, rts (may
 * be NULL) names the runtime words. */
struct runtimes;
struct unwinder_snapshot;
int replay_capture_snapshot(struct unwinder *u, struct symbolizer *sym, struct runtimes *rts,
			    const struct unwinder_snapshot *snap, struct replay_case *c,
			    struct errmsg *err);

#endif
