/* service_name.h: the service a process is counted under (the `service_name` label the agent
 * puts on its profiles). Pure: it decides from facts the caller gathered (procinfo.h, the
 * sample, the runtime's script label) and touches no process. The rules, in order (docs/
 * agent.md describes them for users):
 *
 *   1. a kernel thread                              -> "kernel"
 *   2. a process that lived (or, still running, has lived) less than short_lived_s and whose
 *      parent has a service                        -> the parent's service (a shell loop's
 *                                                     `cat`, `date`, `basename`)
 *   3. an interpreter running a script or module    -> the script's file name, or the module
 *      (`python app.py` -> app.py, `python -m pkg` -> pkg, `python -m pkg.cli` -> pkg.cli,
 *      `node server.js` -> server.js; a module's label "pkg.__main__" -> pkg); the runtime's
 *      label wins over the command line;
 *      startup and frozen modules (`<frozen site>`, `<frozen getpath>`) never name a service;
 *      inline code is one service per executable: `python3.11 -c ...` -> "python3.11[-c]",
 *      `bash -c ...` -> "bash[-c]", code from stdin or a descriptor (`-`, /dev/fd/3) ->
 *      "python3.11[stdin]"
 *   4. a process in a container                     -> the container id's first 12 digits
 *   5. otherwise                                    -> the executable's file name (from
 *      /proc/PID/exe; argv[0]'s for a program run from a memfd); when that is unknown,
 *      argv[0]'s file name if the 15-byte comm is a prefix of it (comm is cut:
 *      "clickhouse-clie"), else comm.
 *
 * Names are at most SERVICE_NAME_MAX - 1 bytes and never contain spaces or any of {},="
 * (the characters the ingest name syntax reserves); others are kept. */
#ifndef SCORCH_SERVICE_NAME_H
#define SCORCH_SERVICE_NAME_H

#include <stddef.h>

#define SERVICE_NAME_MAX 256
#define SERVICE_SHORT_LIVED_DEFAULT 1.0 /* seconds */

struct service_facts {
	const char *exe;            /* path (or file name) of the executable; NULL or "" unknown */
	const char *const *argv;    /* the command line, may be NULL */
	size_t argc;
	const char *comm;           /* the kernel's task name (at most 15 bytes), may be NULL */
	const char *script;         /* the runtime's main script or module, NULL or "" unknown */
	const char *container_id;   /* 64 hex digits, NULL or "" when none */
	const char *parent_service; /* the parent's service; NULL or "" when unknown or when the
	                             * parent is init (its children are not part of it) */
	double age_s;               /* lifetime, or age so far; < 0 when unknown */
	int kernel_thread;
};

struct service_rules {
	double short_lived_s; /* rule 2 threshold; 0 disables it */
};

/* Write the service of f into out (outlen > 0; cut to fit). Returns the rule that decided
 * (1..5, as numbered above), for tests and debugging. */
int service_name(const struct service_facts *f, const struct service_rules *r, char *out,
		 size_t outlen);

/* The script label of an interpreter as a service name, or NULL when the label names no
 * service (frozen or startup modules, "<string>" and "<stdin>" are handled by the caller as
 * inline code): "/srv/app/worker.py" -> "worker.py", "pkg/__main__.py" and "pkg/__init__.py"
 * -> "pkg", "pkg.__main__" -> "pkg". */
const char *service_script_base(const char *script, char *buf, size_t buflen);

#endif
