/* bpf_verify.c: how much work the kernel's verifier does for a BPF object: loads every
 * program of the object (no attach) with the verifier's statistics on and prints, per
 * program, the instructions processed, the peak states and the verification time.
 * Usage: bpf_verify OBJECT.bpf.o   (root). bench/bpf_verify.sh builds the sampler with and
 * without each runtime walker and runs this on each build. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

int main(int argc, char **argv)
{
	static char log[1 << 16];
	struct bpf_object *obj;
	struct bpf_program *prog;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJECT.bpf.o\n", argv[0]);
		return 2;
	}
	libbpf_set_print(quiet);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "error: cannot open '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!strcmp(bpf_program__name(prog), "on_sample")) {
			bpf_program__set_log_level(prog, 4); /* BPF_LOG_STATS */
			bpf_program__set_log_buf(prog, log, sizeof(log));
		} else {
			bpf_program__set_autoload(prog, false);
		}
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "error: cannot load '%s': %s\n%s\n", argv[1], strerror(-err), log);
		bpf_object__close(obj);
		return 1;
	}
	/* "verification time N usec", "processed N insns (limit ...) max_states_per_insn ..." */
	{
		char *p = strstr(log, "verification time"), *q = strstr(log, "processed ");
		unsigned long usec = 0, insns = 0;

		if (p)
			sscanf(p, "verification time %lu usec", &usec);
		if (q)
			sscanf(q, "processed %lu insns", &insns);
		printf("on_sample: processed_insns=%lu verification_usec=%lu\n", insns, usec);
	}
	bpf_object__close(obj);
	return 0;
}
