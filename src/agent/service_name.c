/* service_name.c: the naming rules of service_name.h. Interpreters are a table: how to find
 * the script, the module and inline code in their command lines. */
#include "agent/service_name.h"

#include <stdio.h>
#include <string.h>

/* comm holds at most 15 bytes: one that long may have been cut */
#define COMM_CUT 15

struct interp {
	const char *name;      /* executable file name, or its prefix when versioned */
	int versioned;         /* the name may be followed by a version: python3.11, ruby3.1 */
	const char *inline_opts; /* options whose argument is code: "-c" (one per NUL) */
	const char *module_opt;  /* option whose argument names a module: "-m", or NULL */
	const char *arg_opts;    /* options that take a separate argument (space separated) */
};

static const struct interp interps[] = {
	{ "python", 1, "-c", "-m", "-W -X --check-hash-based-pycs" },
	{ "pypy", 1, "-c", "-m", "-W -X" },
	{ "node", 0, "-e --eval -p --print", NULL, "-r --require --import --loader --env-file" },
	{ "nodejs", 0, "-e --eval -p --print", NULL, "-r --require --import --loader" },
	{ "ruby", 1, "-e", NULL, "-I -r -C -E -F" },
	{ "perl", 1, "-e -E", NULL, "-I -M -m" },
	{ "php", 1, "-r", NULL, "-c -d -z" },
	{ "bash", 0, "-c", NULL, "-o -O --rcfile --init-file" },
	{ "sh", 0, "-c", NULL, "-o" },
	{ "dash", 0, "-c", NULL, "-o" },
	{ "zsh", 0, "-c", NULL, "-o" },
	{ "java", 0, NULL, "-m --module", "-cp -classpath --class-path -p --module-path --add-modules --add-opens --add-exports -javaagent" },
};

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash && slash[1] ? slash + 1 : path;
}

/* Is word one of the space-separated words of list? */
static int in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	while (list && *list) {
		const char *end = strchr(list, ' ');
		size_t len = end ? (size_t)(end - list) : strlen(list);

		if (len == n && !strncmp(list, word, n))
			return 1;
		list = end ? end + 1 : NULL;
	}
	return 0;
}

static const struct interp *find_interp(const char *exe)
{
	size_t i;

	if (!exe || !*exe)
		return NULL;
	for (i = 0; i < sizeof(interps) / sizeof(interps[0]); i++) {
		size_t n = strlen(interps[i].name);
		const char *rest = exe + n;

		if (strncmp(exe, interps[i].name, n))
			continue;
		if (!*rest)
			return &interps[i];
		if (!interps[i].versioned)
			continue;
		while (*rest && ((*rest >= '0' && *rest <= '9') || *rest == '.'))
			rest++;
		if (!*rest)
			return &interps[i];
	}
	return NULL;
}

/* Copy src into out, replacing what the ingest name syntax reserves (and controls). */
static void put_name(char *out, size_t outlen, const char *src)
{
	size_t i = 0;

	for (; *src && i + 1 < outlen; src++) {
		unsigned char c = (unsigned char)*src;

		out[i++] = c <= ' ' || c == 0x7f || strchr("{},=\"", c) ? '_' : (char)c;
	}
	out[i] = '\0';
}

const char *service_script_base(const char *script, char *buf, size_t buflen)
{
	const char *base;
	size_t n;

	if (!script || !*script || script[0] == '<')
		return NULL; /* <frozen site>, <string>, <stdin>, ...: no file */
	n = strlen(script);
	if (n > 9 && !strcmp(script + n - 9, ".__main__")) {
		/* python -m pkg runs the module pkg.__main__ */
		snprintf(buf, buflen, "%.*s", (int)(n - 9), script);
		return buf;
	}
	base = base_name(script);
	if ((!strcmp(base, "__main__.py") || !strcmp(base, "__init__.py")) && base != script) {
		/* a package run as a whole: name it after its directory */
		const char *end = base - 1, *start = end;

		while (start > script && start[-1] != '/')
			start--;
		n = (size_t)(end - start);
		if (!n)
			return NULL;
		snprintf(buf, buflen, "%.*s", (int)n, start);
		return buf;
	}
	snprintf(buf, buflen, "%s", base);
	return buf;
}

static int all_letters(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return 0;
	return 1;
}

/* What the command line says an interpreter runs: 1 and the script or module in buf, 2 for
 * inline code, 3 for code read from stdin ("-"), 0 when nothing (an interactive session). */
static int argv_target(const struct interp *in, const char *const *argv, size_t argc, char *buf,
		       size_t buflen)
{
	size_t i;

	for (i = 1; i < argc && argv[i]; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (in->inline_opts && in_list(in->inline_opts, a))
			return 2;
		if (in->module_opt && in_list(in->module_opt, a)) {
			const char *m = i + 1 < argc ? argv[i + 1] : NULL;

			if (!m || !*m)
				return 0;
			/* java -m module/main.Class: the main class, as the JVM's own label
			 * (hotspot: Arguments::_java_command) gives it; java -m module: the module */
			if (!strcmp(in->name, "java") && strchr(m, '/') && strchr(m, '/')[1])
				snprintf(buf, buflen, "%s", strchr(m, '/') + 1);
			else
				snprintf(buf, buflen, "%.*s", (int)strcspn(m, "/"), m);
			return 1;
		}
		if (in->module_opt && !strncmp(a, in->module_opt, 2) && a[1] == in->module_opt[1] &&
		    a[2] && in->module_opt[2] == '\0') {
			snprintf(buf, buflen, "%s", a + 2); /* python -mpkg */
			return 1;
		}
		if (!strcmp(a, "-jar") && !strcmp(in->name, "java")) {
			if (i + 1 < argc && argv[i + 1] && *argv[i + 1]) {
				snprintf(buf, buflen, "%s", base_name(argv[i + 1]));
				return 1;
			}
			return 0;
		}
		/* a cluster of short flags ending in the inline option: python -Sc, bash -ec */
		if (a[1] != '-' && in->inline_opts && strlen(a) > 2) {
			char last[3] = { '-', a[strlen(a) - 1], '\0' };

			if (in_list(in->inline_opts, last) && all_letters(a + 1))
				return 2;
		}
		if (in->arg_opts && in_list(in->arg_opts, a))
			i++; /* skip the option's argument */
	}
	if (i < argc && argv[i] && *argv[i]) {
		const char *a = argv[i];

		/* code from a pipe or descriptor: stdin, not a file with a name */
		if (!strcmp(a, "-") || !strncmp(a, "/dev/fd/", 8) || !strcmp(a, "/dev/stdin") ||
		    !strncmp(a, "/proc/self/fd/", 14))
			return 3;
		if (!strcmp(in->name, "java")) { /* the main class */
			snprintf(buf, buflen, "%s", a);
			return 1;
		}
		if (!service_script_base(a, buf, buflen))
			return 0;
		return 1;
	}
	return 0;
}

int service_name(const struct service_facts *f, const struct service_rules *r, char *out,
		 size_t outlen)
{
	char exe[SERVICE_NAME_MAX], target[SERVICE_NAME_MAX], tmp[SERVICE_NAME_MAX + 16];
	const struct interp *in;
	const char *comm = f->comm && *f->comm ? f->comm : NULL;
	const char *argv0 = f->argc && f->argv && f->argv[0] ? base_name(f->argv[0]) : NULL;
	int kind = 0;

	if (f->kernel_thread) {
		put_name(out, outlen, "kernel");
		return 1;
	}
	if (r && r->short_lived_s > 0 && f->age_s >= 0 && f->age_s < r->short_lived_s &&
	    f->parent_service && *f->parent_service) {
		put_name(out, outlen, f->parent_service);
		return 2;
	}
	/* the executable's name: /proc/PID/exe, else argv[0] when comm is a cut version of it */
	if (f->exe && *f->exe && strncmp(base_name(f->exe), "memfd:", 6))
		snprintf(exe, sizeof(exe), "%s", base_name(f->exe));
	else if (f->exe && *f->exe && argv0 && *argv0)
		snprintf(exe, sizeof(exe), "%s", argv0); /* run from a memfd: its argv[0] */
	else if (argv0 && *argv0 && (!comm || (strlen(comm) >= COMM_CUT &&
						  !strncmp(argv0, comm, strlen(comm)))))
		snprintf(exe, sizeof(exe), "%s", argv0);
	else
		snprintf(exe, sizeof(exe), "%s", comm ? comm : "[unknown]");

	in = find_interp(exe);
	if (in) {
		const char *s = f->script;

		if (s && *s && service_script_base(s, target, sizeof(target)))
			kind = 1;
		else if (s && !strcmp(s, "<string>"))
			kind = 2;
		else if (s && !strcmp(s, "<stdin>"))
			kind = 3;
		else if (f->argv && f->argc)
			kind = argv_target(in, f->argv, f->argc, target, sizeof(target));
		if (kind == 1 && target[0]) {
			put_name(out, outlen, target);
			return 3;
		}
		if (kind == 2 || kind == 3) {
			/* inline code: "python3.11[-c]", named by the interpreter's first inline option */
			const char *opt = in->inline_opts ? in->inline_opts : "-c";

			if (kind == 2)
				snprintf(tmp, sizeof(tmp), "%s[%.*s]", exe, (int)strcspn(opt, " "), opt);
			else
				snprintf(tmp, sizeof(tmp), "%s[stdin]", exe);
			put_name(out, outlen, tmp);
			return 3;
		}
	}
	if (f->container_id && *f->container_id) {
		snprintf(tmp, sizeof(tmp), "%.12s", f->container_id);
		put_name(out, outlen, tmp);
		return 4;
	}
	put_name(out, outlen, exe);
	return 5;
}
