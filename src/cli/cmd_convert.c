/* cmd_convert.c: `scorch convert IN OUT`, a profile from one format into another. Input
 * formats are recognized by content (profile/input.h), output formats by OUT's extension
 * (profile/output.h). */
#include "cli/commands.h"
#include "lib/alloc.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "profile/input.h"
#include "profile/output.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_INPUT (1024u << 20)

static const char usage_text[] =
	"usage: scorch convert [options] IN OUT\n"
	"\n"
	"Convert a profile from one format into another. IN is pprof (gzip or raw protobuf),\n"
	"OTLP profiles (an ExportProfilesServiceRequest), a JFR recording or folded text (each\n"
	"plain or gzip), recognized by content. OUT's format comes from its extension:\n"
	"  .pb.gz .pprof .pb   pprof, gzip-compressed\n"
	"  .folded .txt        folded stacks, one 'root;...;leaf COUNT' line per stack\n"
	"  .json               speedscope JSON\n"
	"  .html               interactive flame graph, one file that works offline\n"
	"  .svg                static flame graph\n"
	"  .otlp               OTLP profiles (protobuf), to POST to /v1development/profiles\n"
	"IN may be '-' for standard input; OUT may be '-' for standard output (with --format).\n"
	"\n"
	"options:\n"
	"  -f, --format FMT        output format whatever OUT's extension: pprof, folded,\n"
	"                          speedscope, html, svg or otlp\n"
	"  -t, --title TITLE       title of html, svg and speedscope output (default: IN's name)\n"
	"  -i, --sample-index N    which pprof sample value to use, from 0 (default: the\n"
	"                          profile's default type, else 'samples', else 'cpu', else\n"
	"                          the last one)\n"
	"  -T, --type TYPE         which profile of an OTLP or JFR input: the OTLP sample type\n"
	"                          (profiles of it are merged) or the JFR profile type, e.g.\n"
	"                          alloc_outside_tlab_bytes, lock_duration (default: the first\n"
	"                          OTLP profile's type; JFR's cpu, else the first)\n"
	"  -l, --lines             one frame per source line: 'fn (file.c:LINE)'; by default a\n"
	"                          function sampled on several lines is one frame (pprof output\n"
	"                          keeps the lines either way)\n"
	"  -h, --help              show this help\n"
	"\n"
	"examples:\n"
	"  scorch convert cpu.pb.gz cpu.html              # flame graph of a pprof profile\n"
	"  scorch convert -t 'nightly build' out.folded out.svg\n"
	"  scorch convert -i 1 heap.pb.gz heap.folded     # Go heap: alloc_space\n"
	"  scorch convert --lines cpu.pb.gz lines.html    # hot lines, not just functions\n"
	"  scorch convert -f folded profile.pb.gz - | sort -k2 -n -t' ' | tail\n"
	"  scorch convert -T lock_duration app.jfr locks.html    # JFR monitor contention\n"
	"  scorch convert cpu.pb.gz cpu.otlp                     # pprof to OTLP\n";

static int read_input(const char *path, struct buf *b)
{
	int err = buf_read_file(b, strcmp(path, "-") ? path : "/dev/stdin");

	if (err == -E2BIG)
		return error("convert: '%s' is larger than %u MiB", path, MAX_INPUT >> 20);
	if (err)
		return error("convert: cannot read '%s': %s", path, strerror(-err));
	return 0;
}

static int write_stdout(const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(STDOUT_FILENO, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "title", required_argument, NULL, 't' },
		{ "sample-index", required_argument, NULL, 'i' },
		{ "type", required_argument, NULL, 'T' },
		{ "lines", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct input_opts opts = INPUT_OPTS_DEFAULT;
	struct buf in = BUF_INIT(MAX_INPUT), out = BUF_INIT(BUF_UNLIMITED);
	enum output_format fmt = OUTPUT_UNKNOWN;
	enum input_format ifmt;
	struct profile *p = NULL;
	struct errmsg em = { "" };
	const char *title = NULL, *inpath, *outpath;
	char *end;
	long v;
	int c, err, rc = 1, lines = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:t:i:T:lh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			fmt = output_format_parse(optarg);
			if (fmt == OUTPUT_UNKNOWN) {
				error("convert: unknown format '%s' (pprof, folded, speedscope, html, svg, otlp)",
				      optarg);
				return 2;
			}
			break;
		case 't':
			title = optarg;
			break;
		case 'T':
			opts.type = optarg;
			break;
		case 'i':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 0 || v > 1000000) {
				error("convert: bad sample index '%s'", optarg);
				return 2;
			}
			opts.sample_index = (int)v;
			break;
		case 'l':
			lines = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs("see 'scorch convert --help'\n", stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		error("convert: expected IN and OUT, got %d argument%s; see 'scorch convert --help'",
		      argc - optind, argc - optind == 1 ? "" : "s");
		return 2;
	}
	inpath = argv[optind];
	outpath = argv[optind + 1];
	if (fmt == OUTPUT_UNKNOWN) {
		if (!strcmp(outpath, "-")) {
			error("convert: writing to standard output needs --format");
			return 2;
		}
		fmt = output_format_for(outpath);
		if (fmt == OUTPUT_UNKNOWN) {
			error("convert: cannot tell the format of '%s' from its extension; use .pb.gz, "
			      ".folded, .json, .html, .svg or .otlp, or --format", outpath);
			return 2;
		}
	}
	if (!title)
		title = strcmp(inpath, "-") ? base_name(inpath) : "scorch profile";

	if (read_input(inpath, &in) < 0)
		goto cleanup;
	err = input_decode(in.data, in.len, &opts, &ifmt, &p, &em);
	if (err) {
		error("convert: cannot read '%s' as %s: %s", inpath,
		      ifmt == INPUT_UNKNOWN ? "a profile" : input_format_name(ifmt), em.msg);
		goto cleanup;
	}
	buf_release(&in);
	p->show_lines = (uint8_t)lines;
	err = output_render(p, fmt, title, &out);
	if (err) {
		error("convert: cannot render %s: %s", output_format_name(fmt), strerror(-err));
		goto cleanup;
	}
	err = strcmp(outpath, "-") ? write_file_atomic(outpath, out.data ? out.data : "", out.len)
				   : write_stdout(out.data ? out.data : "", out.len);
	if (err) {
		error("convert: cannot write '%s': %s", outpath, strerror(-err));
		goto cleanup;
	}
	log_info("converted '%s' (%s, %zu samples) to '%s' (%s, %zu bytes)", inpath,
		 input_format_name(ifmt), p->nsamples, outpath, output_format_name(fmt), out.len);
	rc = 0;
cleanup:
	profile_free(p);
	buf_release(&in);
	buf_release(&out);
	return rc;
}
