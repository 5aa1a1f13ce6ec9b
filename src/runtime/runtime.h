/* runtime.h: the runtime framework, user-space side. A runtime (CPython, HotSpot, V8, Ruby,
 * PHP, Perl, ...) is a directory src/runtime/<name>/ with
 *   - a BPF walker (<name>.bpf.h) dispatched by mapping kind (runtime/runtime.bpf.h),
 *   - a contract header shared with it (<name>.h: its map values and frame-word tags), and
 *   - a struct runtime_ops (below), listed in the table of runtime.c.
 * docs/runtimes.md walks through adding one.
 *
 * LIFECYCLE, driven by the process registry (agent/process.h) and the session:
 *   per session   init() once the BPF object is loaded (find your maps), configure() before
 *                 it is loaded (set your walker's const volatile knobs), free() at the end.
 *   per file      file_detect() on each distinct executable file a process maps (its result
 *                 cached by file identity: build id, else a content hash): recognise the runtime from the file's name, sections or symbols and
 *                 learn what the file itself says (symbol addresses, version, offsets that do
 *                 not depend on the process). interp_ranges() gives the link-time ranges the
 *                 native unwinder flags UNW_F_INTERP (an interpreter's eval loop), so the
 *                 walker is called there.
 *   per process   attach() when a process maps a detected file (with the mapping and its load
 *                 bias): read what the process says (version from memory, offsets), fill the
 *                 walker's BPF maps, claim JIT ranges (process_claim()). poll() is called
 *                 from the sample stream while attach() left work for later (an interpreter
 *                 not initialized yet, a check to retry), at most every RUNTIME_POLL_NS.
 *                 jit_step() (JIT runtimes) unwinds a frame in a claimed range of a stack
 *                 snapshot in user space, as the BPF walker would have.
 *                 note() sees the frame words of the runtime's tags in each sample while the
 *                 process lives (read and cache what they name now: the process may be gone
 *                 when the profile is built). symbolize() turns words into frames. detach()
 *                 when the process exited (remove its BPF state; keep what symbolize() needs
 *                 for the interval's samples), release() when it is forgotten.
 *
 * Frame words: the walker emits words with tags of its kind's range only (bpf/sampler.h:
 * kind k owns k << 4 .. (k << 4) + 15); the framework routes them by tag to the runtime's
 * note() and symbolize(), which decide how many words one frame takes.
 *
 * Errors: a runtime found but not usable (unsupported version, offsets that do not match the
 * process) is reported once per process as "<name> stacks of PID N: <reason>" and the process
 * is profiled natively. Every reader of process memory treats it as hostile (procmem.h) and
 * has a fuzz target.
 *
 * Ownership: the framework owns the per-file data (file_free()) and the instances (release());
 * strings a runtime returns in struct runtime_frame / labels must stay valid until its next
 * call. Not thread-safe. */
#ifndef SCORCH_RUNTIME_H
#define SCORCH_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct bpf_object;
struct elf_file;
struct errmsg;
struct process;
struct process_registry;
struct procmaps_entry;
struct sampler_bpf;
struct unw_state;
struct unwind_range;
struct unwinder_io;

#define RUNTIME_POLL_NS (5 * 1000000ULL) /* poll() at most this often per instance */

/* One symbolized frame of a runtime. kind is an enum frame_kind of profile/profile.h:
 * FRAME_PYTHON for interpreted or JIT frames shown as "name (file:line)", FRAME_SPECIAL for
 * a marker ("[python: truncated]"), FRAME_NATIVE for a native frame a runtime names. */
struct runtime_frame {
	const char *name;        /* qualified function name */
	const char *system_name; /* raw name (NULL: same as name) */
	const char *file;        /* source file, or NULL */
	int64_t line;            /* 0 when unknown */
	int64_t start_line;      /* first line of the function, 0 when unknown */
	uint8_t kind;
	uint8_t inlined;         /* inlined into the frame after it (C2, TurboFan) */
};

/* What attach() gets: the process, the mapping of the detected file, and its load bias
 * (process address = link-time address + bias). */
struct runtime_attach {
	struct process_registry *reg;
	struct process *proc;
	const struct procmaps_entry *map;
	uint64_t bias;
};

/* How a runtime is set up, from the session's options and the environment. */
struct runtime_config {
	int keep_native;   /* keep the interpreter's native eval-loop frames next to its frames */
	int only;          /* this runtime's frames only, in place of the native stack */
};

struct runtime_ops {
	const char *name;   /* "python": messages, --stats line, SCORCH_<NAME> knob */
	uint8_t kind;       /* enum unwinder_kind: its mapping kind and frame-word tags */
	/* 1: its frames are found again from a stack snapshot (a JIT whose frames live on the
	 * native stack, unwound in user space by jit_step): snapshots of its processes keep no
	 * room for deferred words (RT_OP_DEFER), the whole room is for the stack */
	uint8_t frames_on_stack;

	/* Session. init: state for the runtime (NULL obj: user space only, for tests). */
	int (*init)(struct bpf_object *obj, const struct runtime_config *cfg, void **state,
		    struct errmsg *err);
	void (*configure)(const struct runtime_config *cfg, struct sampler_bpf *skel);
	void (*free)(void *state);

	/* Files. detect: 1 with *data set (the runtime is in this file), 0 not this runtime, or
	 * a negative errno. path is the file's path as mapped (it may be a /proc path). Cheap
	 * for other files: look at the name and section headers before loading symbols. */
	int (*file_detect)(void *state, struct elf_file *e, const char *path, void **data);
	int (*interp_ranges)(void *data, struct unwind_range *out, int max);
	void (*file_free)(void *data);

	/* Processes. attach: 0 with *inst set; 1 with *inst set when it must still be polled;
	 * -ENOTSUP/-EINVAL (with a reason in err: reported once), -ESRCH (gone). */
	int (*attach)(void *state, void *data, const struct runtime_attach *at, void **inst,
		      struct errmsg *err);
	/* 0: done, nothing more to poll; 1: poll again later; negative errno with err: the
	 * runtime cannot be profiled in this process (detach() follows). */
	int (*poll)(void *state, void *inst, struct errmsg *err);
	void (*note)(void *state, void *inst, int pid, const uint64_t *words, size_t n);
	/* The process mapped or unmapped code (PROCESS_EV_CHANGED, after attach): a JIT code
	 * cache appeared or grew; claim its ranges with process_claim(). NULL: not interested. */
	void (*maps_changed)(void *state, void *inst, struct process *proc);
	/* JIT runtimes (NULL for others): the step of the BPF walker for a pc in a claimed range,
	 * run in user space over a stack snapshot (agent/unwinder.h: unwinder_jit_fn says what
	 * to return; io reads the snapshot's stack and the live process, and emits words). */
	int (*jit_step)(void *state, void *inst, struct unw_state *st,
			const struct unwinder_io *io);
	/* Frames of the words at words[0..n) (the first has the runtime's tag): fill up to max
	 * frames (leaf first, like the words), set *used to the words consumed (>= 1), return
	 * the number of frames (0: the words are dropped). inst is the process's instance (it
	 * may be detached); the framework hands a runtime no words of a process it is not
	 * attached to (runtimes_symbolize()). */
	int (*symbolize)(void *state, void *inst, int pid, const uint64_t *words, size_t n,
			 size_t *used, struct runtime_frame *out, int max);
	/* The process's label: key (e.g. "script", "main_class") and value; 1 when known. The
	 * agent names the service after the value's last path component. */
	int (*label)(void *state, void *inst, char *key, size_t keylen, char *value,
		     size_t valuelen);
	/* The name the runtime gives thread tid of the process (a JVM: its java.lang.Thread's
	 * name): 1 with out set (UTF-8, NUL-terminated), 0 when it has none (the sample keeps
	 * the kernel's comm). Called for every sample of the process, while it lives: cache, and
	 * read again now and then (names change). NULL: the runtime names no threads. */
	int (*thread_name)(void *state, void *inst, int tid, char *out, size_t outlen);
	void (*detach)(void *state, void *inst);
	void (*release)(void *state, void *inst);

	/* One line "<name>: k=v k=v ..." for --stats (NULL: none). */
	void (*print_stats)(void *state, FILE *f);
};

/* An attached runtime in a process (struct process.runtimes). */
struct runtime_inst {
	const struct runtime_ops *ops;
	void *state;              /* the runtime's session state */
	void *data;               /* the runtime's instance */
	uint64_t map_start;       /* the mapping it was attached for */
	uint64_t next_poll_ns;    /* 0: nothing to poll */
	int detached;
	struct runtime_inst *next;
};

struct runtimes;

struct runtimes_opts {
	const char *disable;   /* comma-separated names of runtimes not to use, or NULL */
	const char *only;      /* name of the runtime whose frames replace the user stack */
	int keep_native;       /* keep every interpreter's eval-loop frames */
	const char *keep;      /* comma-separated names of runtimes whose eval-loop frames stay */
	/* storage for runtimes_opts_from_env() */
	char buf_disable[128], buf_keep[128], buf_only[32];
};

/* The benchmark and debugging knobs of the environment: SCORCH_<NAME>=off|only|keep for each
 * runtime of the table (SCORCH_PYTHON=keep, SCORCH_RUBY=only, ...): no frames of that
 * runtime / its frames only, in place of the native stack / keep its native eval-loop frames
 * next to its frames. Fills o (its strings point into o's buffers). */
void runtimes_opts_from_env(struct runtimes_opts *o);

/* The runtimes of the table in runtime.c, minus opts->disable. */
struct runtimes *runtimes_new(const struct runtimes_opts *opts);
/* NULL ok. Free the registry first: its FORGET events release the instances. */
void runtimes_free(struct runtimes *rts);
/* sampler_opts.configure: before the sampler's BPF object is loaded. ctx is the runtimes. */
void runtimes_configure_bpf(void *ctx, struct sampler_bpf *skel);
/* After it is loaded (obj NULL: user space only). A runtime whose init fails is dropped with
 * a warning; the others work on. */
void runtimes_init(struct runtimes *rts, struct bpf_object *obj);
/* Subscribe to the registry: attach on NEW/CHANGED, detach on EXIT, release on FORGET, and
 * give it the processes' labels. */
void runtimes_subscribe(struct runtimes *rts, struct process_registry *reg);

/* The native unwinder's question for a file it builds a table for (unwinder_interp_fn): the
 * interpreter ranges to flag and the file's unwinder kind (0: native only). */
int runtimes_interp_ranges(void *ctx, struct elf_file *e, const char *path,
			   struct unwind_range *out, int max, uint8_t *kind);

/* The unwinder's JIT step for snapshots (unwinder_opts.jit, ctx = the runtimes): hands st to
 * the jit_step of the runtime of kind attached to pid; UNW_HOOK_NATIVE when there is none. */
int runtimes_jit_step(void *ctx, int pid, uint8_t kind, struct unw_state *st,
		      const struct unwinder_io *io);

/* For each sample of pid: poll what waits, hand each runtime the words of its tags (user
 * words, leaf first). Cheap when pid has no runtime. */
void runtimes_note_sample(struct runtimes *rts, int pid, const uint64_t *words, size_t n);

/* The name of thread tid of pid from the first runtime of the process that gives one (see
 * runtime_ops.thread_name): 1 with out set, 0 (keep the kernel's comm). Cheap when pid has no
 * runtime. */
#define RUNTIME_THREAD_NAME_MAX 128
int runtimes_thread_name(struct runtimes *rts, int pid, int tid, char *out, size_t outlen);

/* Frames of the runtime words at words[0..n) of a sample of pid (words[0] has a tag that is
 * neither native nor a marker), see runtime_ops.symbolize. Words go only to a runtime attached
 * to pid (it may have exited since: detached instances stay until the registry forgets it);
 * any other word, and the run of words of the same kind after it, is one "[unknown]" frame,
 * counted as stray_words in runtimes_print_stats(). */
int runtimes_symbolize(struct runtimes *rts, int pid, const uint64_t *words, size_t n,
		       size_t *used, struct runtime_frame *out, int max);

/* Words runtimes_symbolize() found no attached runtime for (shown as "[unknown]"). */
uint64_t runtimes_stray_words(const struct runtimes *rts);

void runtimes_print_stats(struct runtimes *rts, FILE *f);

/* A runtime's BPF counters: the per-CPU array map fd (indexes 0..n-1, u64 values) summed over
 * the CPUs into out[0..n). All zero when fd < 0 (no BPF). */
void runtime_read_counters(int fd, uint64_t *out, uint32_t n);

/* For tests: a framework over a given table of runtimes. */
struct runtimes *runtimes_new_table(const struct runtime_ops *const *table, size_t n,
				    const struct runtimes_opts *opts);

#endif
