/* test_service_name.c: the service naming rules (service_name.h), one case per rule and the
 * command lines of the common interpreters; the /proc parsers that feed them (procinfo.h). */
#include "agent/procinfo.h"
#include "agent/service_name.h"
#include "test.h"

static const struct service_rules rules = { SERVICE_SHORT_LIVED_DEFAULT };

/* name of a process given its exe and a space-separated command line (no quoting) */
static int name_of(const char *exe, const char *cmdline, const char *comm, const char *script,
		   char *out)
{
	char copy[512];
	const char *argv[32];
	size_t argc = 0;
	char *p, *sp;
	struct service_facts f;

	memset(&f, 0, sizeof(f));
	snprintf(copy, sizeof(copy), "%s", cmdline ? cmdline : "");
	for (p = copy; cmdline && *p && argc < 32; p = sp) {
		sp = strchr(p, ' ');
		if (sp)
			*sp++ = '\0';
		argv[argc++] = p;
		if (!sp)
			break;
	}
	f.exe = exe;
	f.argv = argv;
	f.argc = argc;
	f.comm = comm;
	f.script = script;
	f.age_s = 100;
	return service_name(&f, &rules, out, SERVICE_NAME_MAX);
}

#define NAME(want, ...) do { \
	char _out[SERVICE_NAME_MAX]; \
	name_of(__VA_ARGS__, _out); \
	CHECK_EQ_STR(_out, want); } while (0)

static void test_python(void)
{
	/* the runtime's label wins */
	NAME("worker.py", "/usr/bin/python3.11", "python3 /srv/app/worker.py", "python3", "/srv/app/worker.py");
	/* before the runtime knows: the command line */
	NAME("worker.py", "/usr/bin/python3.11", "python3 -u /srv/app/worker.py --x 1", "python3", NULL);
	NAME("pkg", "/usr/bin/python3.11", "python3 -m pkg serve", "python3", NULL);
	NAME("pkg.cli", "/usr/bin/python3.11", "python3 -X dev -m pkg.cli", "python3", NULL);
	NAME("pkg", "/usr/bin/python3.11", "python3 -mpkg", "python3", NULL);
	NAME("pkg", "/usr/bin/python3.11", "python3 -m pkg", "python3", "pkg");
	NAME("pkg", "/usr/bin/python3.11", "python3 -m pkg", "python3", "pkg.__main__");
	/* a package's __main__.py is named after the package */
	NAME("tool", "/usr/bin/python3.11", "python3 /opt/tool/__main__.py", "python3", "/opt/tool/__main__.py");
	NAME("tool", "/usr/bin/python3.11", "python3 -m tool", "python3", "/opt/tool/__init__.py");
	/* inline code: one service per executable, never "<string>" */
	NAME("python3.11[-c]", "/usr/bin/python3.11", "python3 -c print(1)", "python3", "<string>");
	NAME("python3.11[-c]", "/usr/bin/python3.11", "python3 -c print(1)", "python3", NULL);
	NAME("python3.11[-c]", "/usr/bin/python3.11", "python3 -Sc pass", "python3", NULL);
	NAME("python3.11[stdin]", "/usr/bin/python3.11", "python3 -", "python3", NULL);
	NAME("python3.11[stdin]", "/usr/bin/python3.11", "python3", "python3", "<stdin>");
	/* frozen startup modules never name a service: the command line decides */
	NAME("app.py", "/usr/bin/python3.11", "python3 app.py", "python3", "<frozen site>");
	NAME("app.py", "/usr/bin/python3.11", "python3 app.py", "python3", "<frozen getpath>");
	NAME("python3.11", "/usr/bin/python3.11", "python3", "python3", "<frozen site>");
	/* an interactive interpreter is its executable */
	NAME("python3.11", "/usr/bin/python3.11", "python3", "python3", NULL);
	NAME("pypy3", "/usr/bin/pypy3", "pypy3 -m", "pypy3", NULL);
	/* a versioned CPython built elsewhere */
	NAME("job.py", "/root/.pyenv/versions/3.12.1/bin/python3.12", "python job.py", "python", NULL);
}

static void test_other_interpreters(void)
{
	NAME("server.js", "/usr/bin/node", "node --require ./tracing.js server.js", "node", NULL);
	NAME("node[-e]", "/usr/bin/node", "node -e 1+1", "node", NULL);
	NAME("bash[-c]", "/usr/bin/bash", "bash -c sleep", "bash", NULL);
	NAME("bash[-c]", "/usr/bin/bash", "bash -ec true", "bash", NULL);
	NAME("deploy.sh", "/usr/bin/bash", "bash -x ./deploy.sh", "bash", NULL);
	NAME("bash[stdin]", "/usr/bin/bash", "bash /dev/fd/3", "bash", NULL);
	NAME("bash", "/usr/bin/bash", "-bash", "bash", NULL);
	NAME("ruby3.1[-e]", "/usr/bin/ruby3.1", "ruby -e puts", "ruby", NULL);
	NAME("app.jar", "/usr/lib/jvm/java-17/bin/java", "java -Xmx1g -jar /srv/app.jar", "java", NULL);
	NAME("com.example.Main", "/usr/lib/jvm/java-17/bin/java", "java -cp /srv/lib com.example.Main", "java", NULL);
	NAME("com.x.Main", "/usr/lib/jvm/java-17/bin/java", "java -p mods -m mymod/com.x.Main", "java", NULL);
	NAME("mymod", "/usr/lib/jvm/java-17/bin/java", "java -p mods -m mymod", "java", NULL);
	/* the JVM's own label (its main class, the -jar file or module/class) wins */
	NAME("com.x.Main", "/usr/lib/jvm/java-17/bin/java", "java -p mods -m mymod/com.x.Main", "java", "mymod/com.x.Main");
	NAME("app.jar", "/usr/lib/jvm/java-17/bin/java", "java -jar /srv/app.jar", "java", "/srv/app.jar");
	/* not an interpreter, even if its name starts like one */
	NAME("pythonista", "/usr/bin/pythonista", "pythonista -c x", "pythonista", NULL);
	NAME("shred", "/usr/bin/shred", "shred -c f", "shred", NULL);
}

static void test_executables(void)
{
	/* /proc/PID/exe, never the 15-byte comm */
	NAME("clickhouse-client", "/usr/bin/clickhouse-client", "clickhouse-client -q x", "clickhouse-clie", NULL);
	/* exe unknown (the process is gone): argv[0] when comm is its cut prefix */
	NAME("clickhouse-client", NULL, "/usr/bin/clickhouse-client -q x", "clickhouse-clie", NULL);
	/* argv[0] unrelated to comm (a renamed process): comm */
	NAME("postgres", NULL, "postgres:_checkpointer", "postgres", NULL);
	NAME("worker", NULL, NULL, "worker", NULL);
	NAME("runc", "/memfd:sealed-91173221a7ea (deleted)", "runc init", "runc:[2:INIT]", NULL);
	NAME("[unknown]", NULL, NULL, NULL, NULL);
	/* reserved characters never reach the name */
	NAME("my_app_x_", "/opt/my app{x}", NULL, "my app", NULL);
}

static void test_kernel_and_short_lived(void)
{
	struct service_facts f;
	char out[SERVICE_NAME_MAX];
	struct service_rules off = { 0 };

	memset(&f, 0, sizeof(f));
	f.comm = "kworker/0:1";
	f.kernel_thread = 1;
	CHECK_EQ_INT(service_name(&f, &rules, out, sizeof(out)), 1);
	CHECK_EQ_STR(out, "kernel");

	memset(&f, 0, sizeof(f));
	f.exe = "/usr/bin/cat";
	f.comm = "cat";
	f.parent_service = "backup.sh";
	f.age_s = 0.01;
	CHECK_EQ_INT(service_name(&f, &rules, out, sizeof(out)), 2);
	CHECK_EQ_STR(out, "backup.sh");
	/* lived long enough: its own service */
	f.age_s = 1.5;
	CHECK_EQ_INT(service_name(&f, &rules, out, sizeof(out)), 5);
	CHECK_EQ_STR(out, "cat");
	/* age unknown, no parent, or the rule off: its own */
	f.age_s = -1;
	service_name(&f, &rules, out, sizeof(out));
	CHECK_EQ_STR(out, "cat");
	f.age_s = 0.01;
	f.parent_service = NULL;
	service_name(&f, &rules, out, sizeof(out));
	CHECK_EQ_STR(out, "cat");
	f.parent_service = "backup.sh";
	service_name(&f, &off, out, sizeof(out));
	CHECK_EQ_STR(out, "cat");
	/* a configurable threshold */
	{
		struct service_rules five = { 5.0 };

		f.age_s = 3;
		service_name(&f, &five, out, sizeof(out));
		CHECK_EQ_STR(out, "backup.sh");
	}
}

static void test_container_and_limits(void)
{
	struct service_facts f;
	char out[SERVICE_NAME_MAX], small[8];
	char buf[64];

	memset(&f, 0, sizeof(f));
	f.exe = "/usr/sbin/nginx";
	f.container_id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	f.age_s = 10;
	CHECK_EQ_INT(service_name(&f, &rules, out, sizeof(out)), 4);
	CHECK_EQ_STR(out, "0123456789ab");
	/* a script in a container is named by the script */
	f.exe = "/usr/bin/python3";
	f.script = "/app/main.py";
	CHECK_EQ_INT(service_name(&f, &rules, out, sizeof(out)), 3);
	CHECK_EQ_STR(out, "main.py");
	/* output cut to the buffer */
	f.container_id = NULL;
	f.script = NULL;
	f.exe = "/usr/bin/averyveryverylongname";
	service_name(&f, &rules, small, sizeof(small));
	CHECK_EQ_STR(small, "averyve");
	CHECK(service_script_base("<frozen site>", buf, sizeof(buf)) == NULL);
	CHECK(service_script_base("<string>", buf, sizeof(buf)) == NULL);
	CHECK(service_script_base("/__main__.py", buf, sizeof(buf)) == NULL);
	CHECK_EQ_STR(service_script_base("a/b/c.py", buf, sizeof(buf)), "c.py");
}

static void test_proc_parsers(void)
{
	const char *stat = "1234 (a) b) c) S 77 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 "
			   "987654 1000 100";
	const char cmd[] = "python3\0-m\0pkg\0";
	const char *argv[4];
	uint64_t start = 0;
	unsigned long flags = 0;
	int ppid = 0;

	CHECK_EQ_INT(procinfo_parse_stat(stat, strlen(stat), &ppid, &start, &flags), 0);
	CHECK_EQ_INT(ppid, 77);
	CHECK_EQ_INT(flags, 4194560);
	CHECK_EQ_INT(start, 987654);
	CHECK(procinfo_parse_stat("1 (x) S 2 3", 11, &ppid, &start, &flags) < 0);
	CHECK(procinfo_parse_stat("no paren", 8, &ppid, &start, &flags) < 0);
	CHECK_EQ_INT(procinfo_split_cmdline(cmd, sizeof(cmd) - 1, argv, 4), 3);
	CHECK_EQ_STR(argv[2], "pkg");
	CHECK_EQ_INT(procinfo_split_cmdline(cmd, sizeof(cmd) - 1, argv, 2), 2);
}

int main(void)
{
	RUN(test_proc_parsers);
	RUN(test_python);
	RUN(test_other_interpreters);
	RUN(test_executables);
	RUN(test_kernel_and_short_lived);
	RUN(test_container_and_limits);
	return test_summary();
}
