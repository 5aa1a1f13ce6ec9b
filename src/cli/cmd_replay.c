/* cmd_replay.c: `scorch replay CASE...`: run replay cases (src/replay/case.h) through the
 * user-space unwinder and print their stacks, or compare them with what they recorded. */
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "replay/replay.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPLAY_EXIT_DIFFERS 3

static const char replay_usage[] =
	"usage: scorch replay [--expect] [--trace] [-q] CASE|DIR...\n"
	"\n"
	"Run replay cases (made by `scorch capture`, or kept in tests/replay/) through the same\n"
	"unwinding code the BPF sampler runs, with the memory, mappings and unwind-table entries\n"
	"each case holds: no process, binaries or root needed. Prints each stack as `scorch\n"
	"record` does (comm first, root first; a frame the case cannot name as its address).\n"
	"A directory stands for every *.case file below it.\n"
	"\n"
	"      --expect    compare each stack with the one the case recorded; on a difference\n"
	"                  print both (exit status 3)\n"
	"      --trace     show every step: registers, the mapping, the rule used\n"
	"  -q, --quiet     with --expect, print only the differences and a summary\n"
	"\n"
	"Exit status: 0; 3 when a replay differs from its case (--expect); 1 when a case cannot\n"
	"be read (a newer format version, a damaged file); 2 for bad arguments.\n"
	"\n"
	"examples:\n"
	"  scorch replay cases/1234-1240-0.case\n"
	"  scorch replay --expect tests/replay/\n"
	"  scorch replay --trace cases/1234-1240-0.case | less\n";

struct replay_opts {
	int expect, trace, quiet;
	unsigned cases, differ, unreadable;
};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static void replay_one(struct replay_opts *o, const char *path)
{
	struct replay_case c;
	struct replay_result r;
	struct errmsg err = { { 0 } };

	o->cases++;
	if (case_load(path, &c, &err) < 0) {
		error("%s: %s", path, err.msg);
		o->unreadable++;
		return;
	}
	if (o->trace)
		printf("%s: %s\n", path, c.description ? c.description : "");
	if (replay_run(&c, o->trace ? stdout : NULL, &r) < 0) {
		error("%s: out of memory", path);
		o->unreadable++;
		case_release(&c);
		return;
	}
	if (!o->expect) {
		printf("%s%s%s\n", o->trace ? "" : path, o->trace ? "" : ": ", r.folded);
	} else if (!c.expect) {
		error("%s: the case recorded no stack to compare with", path);
		o->unreadable++;
	} else if (!replay_matches(&c, &r)) {
		size_t i;

		o->differ++;
		printf("%s: DIFFERS (%s)\n  expected: %s\n  got:      %s\n", path,
		       c.description ? c.description : "", c.expect, r.folded);
		for (i = 0; i < r.n || i < c.nexpect; i++) {
			if (i < r.n && i < c.nexpect && r.words[i] == c.expect_words[i])
				continue;
			printf("  first different word: #%zu (leaf first): expected %s, got %s\n", i,
			       i < c.nexpect ? "a word" : "none", i < r.n ? "a word" : "none");
			if (i < c.nexpect)
				printf("    expected 0x%llx\n", (unsigned long long)c.expect_words[i]);
			if (i < r.n)
				printf("    got      0x%llx\n", (unsigned long long)r.words[i]);
			break;
		}
		if (r.result != c.expect_result)
			printf("  the unwind ended differently: expected %u, got %u (enum unwind_stat)\n",
			       c.expect_result, r.result);
	} else if (!o->quiet) {
		printf("%s: ok\n", path);
	}
	replay_result_release(&r);
	case_release(&c);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(struct replay_opts *o, const char *path, int depth)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0, i;

	if (stat(path, &st) < 0) {
		error("%s: %s", path, strerror(errno));
		o->cases++;
		o->unreadable++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		replay_one(o, path);
		return;
	}
	if (depth > 8 || !(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		ALLOC_GROW(names, n + 1, cap);
		names[n++] = xasprintf("%s/%s", path, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		if (stat(names[i], &st) == 0 &&
		    (S_ISDIR(st.st_mode) || ends_with(names[i], ".case")))
			replay_path(o, names[i], depth + 1);
		xfree(names[i]);
	}
	xfree(names);
}

int cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "expect", no_argument, NULL, 'e' },
		{ "trace", no_argument, NULL, 't' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct replay_opts o = { 0 };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			o.expect = 1;
			break;
		case 't':
			o.trace = 1;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'h':
			fputs(replay_usage, stdout);
			return 0;
		default:
			fputs(replay_usage, stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fputs(replay_usage, stderr);
		return 2;
	}
	for (; optind < argc; optind++)
		replay_path(&o, argv[optind], 0);
	if (o.expect)
		fprintf(stderr, "scorch: %u cases, %u differ, %u unreadable\n", o.cases, o.differ,
			o.unreadable);
	if (o.unreadable)
		return 1;
	return o.differ ? REPLAY_EXIT_DIFFERS : 0;
}
