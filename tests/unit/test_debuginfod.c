/* test_debuginfod.c: names and lines from a real debuginfod server (Debian's `debuginfod`,
 * indexing a directory that holds the debug file of a program built here, which is itself
 * stripped and has no debug link): the first lookups answer at once with what the file has,
 * the download happens in the background, and later lookups get the names and lines. An
 * unreachable server and one that never answers must not block lookups, nor the shutdown.
 *
 * As root, the test runs in a network namespace of its own (only loopback), so the server,
 * which listens on every interface, is reachable from nowhere else; the port is found free at
 * run time. */
#include "agent/symbolizer.h"
#include "lib/alloc.h"
#include "lib/log.h"
#include "test.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/scorch-test-debuginfod-XXXXXX";
#include "scratch.h"
static int have_prog;
static char build_id[129];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"volatile int sink;\n"
	"static __attribute__((noinline)) int secret_static(int x) {\n"
	"  return x * 13 + sink;\n"
	"}\n"
	"int main(void) {\n"
	"  sink = secret_static(2);\n"
	"  printf(\"%p\\n\", (void *)secret_static);\n"
	"  fflush(stdout);\n"
	"  for (;;) pause();\n"
	"}\n";

/* Only loopback, up: a network namespace of our own (root only). */
static int isolate_network(void)
{
	struct ifreq ifr;
	int fd, ok;

	if (unshare(CLONE_NEWNET) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ok = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
	ifr.ifr_flags |= IFF_UP;
	ok = ok && ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
	close(fd);
	return ok ? 0 : -1;
}

/* A loopback port nobody listens on right now. */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void setup(void)
{
	FILE *f;
	char line[256];

	if (!mkdtemp(tmpdir))
		return;
	f = fopen(tpath("p.c"), "w");
	if (!f)
		return;
	fputs(prog_src, f);
	fclose(f);
	/* The debug file is served, not installed; the program is stripped, no debug link. */
	have_prog = sh("cd %s && mkdir -p srv cache && gcc -O1 -g -o full p.c && "
		       "objcopy --only-keep-debug full srv/prog.debug && "
		       "objcopy --strip-all --remove-section=.gnu_debuglink full prog && rm full",
		       tmpdir) == 0;
	snprintf(line, sizeof(line), "readelf -n %s | awk '/Build ID/ { print $3 }'", tpath("prog"));
	f = popen(line, "r");
	if (!f || !fgets(build_id, sizeof(build_id), f))
		have_prog = 0;
	if (f)
		pclose(f);
	build_id[strcspn(build_id, "\n")] = 0;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static size_t discard(void *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* Wait until the server has indexed the debug file (its first scan runs at start-up). */
static int server_ready(int port)
{
	char url[512];
	double until = now() + 15;
	CURL *c = curl_easy_init();
	int ok = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/buildid/%s/debuginfo", port, build_id);
	while (c && !ok && now() < until) {
		long code = 0;
		struct timespec ts = { 0, 100 * 1000000L };

		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(c, CURLOPT_TIMEOUT, 2L);
		if (curl_easy_perform(c) == CURLE_OK &&
		    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200)
			ok = 1;
		else
			nanosleep(&ts, NULL);
	}
	if (c)
		curl_easy_cleanup(c);
	return ok;
}

/* The line of secret_static's first instruction, per binutils on the debug file. */
static int expected_line(void)
{
	char cmd[1024], out[512] = "";
	FILE *f;
	char *colon;

	snprintf(cmd, sizeof(cmd),
		 "addr2line -e %s $(nm %s | awk '/secret_static/ { print $1 }')", tpath("srv/prog.debug"),
		 tpath("srv/prog.debug"));
	f = popen(cmd, "r");
	if (!f || !fgets(out, sizeof(out), f)) {
		if (f)
			pclose(f);
		return -1;
	}
	pclose(f);
	colon = strrchr(out, ':');
	return colon ? atoi(colon + 1) : -1;
}

static struct symbolizer *sym_for_budget(const char *url, size_t max_symbol_bytes)
{
	struct symbolizer_options o;

	memset(&o, 0, sizeof(o));
	o.debug_dir = "/nonexistent";
	o.debuginfod_urls = url;
	o.max_symbol_bytes = max_symbol_bytes;
	return symbolizer_new_opts(&o);
}

static struct symbolizer *sym_for(const char *url)
{
	return sym_for_budget(url, 0);
}

static void test_fetch(void)
{
	struct symbolizer *s;
	struct sym_result r;
	char url[128], cmd[1024];
	pid_t server, prog = -1;
	uint64_t addr = 0;
	int port = free_port();
	double t0;

	if (!have_prog || sh("command -v debuginfod > /dev/null"))
		SKIP("gcc/objcopy or debuginfod not available");
	snprintf(cmd, sizeof(cmd), "%s/db.sqlite", tmpdir);
	server = fork();
	if (server == 0) {
		char p[16];
		int null = open("/dev/null", O_WRONLY);

		snprintf(p, sizeof(p), "%d", port);
		dup2(null, 1);
		dup2(null, 2);
		execlp("debuginfod", "debuginfod", "-F", "-p", p, "-d", cmd, "-t", "0", "-g", "0",
		       tpath("srv"), (char *)NULL);
		_exit(127);
	}
	if (!server_ready(port)) {
		stop(server);
		CHECK(!"debuginfod did not start");
		return;
	}
	setenv("DEBUGINFOD_CACHE_PATH", tpath("cache"), 1);
	unsetenv("DEBUGINFOD_URLS");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	s = sym_for(url);
	CHECK(symbolizer_debuginfod_urls(s) != NULL);
	prog = start_prog(tpath("prog"), &addr, 1);
	CHECK(prog > 0);
	if (prog > 0) {
		/* at once: the stripped file knows only where the static function starts */
		t0 = now();
		CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
		CHECK(r.func_start != 0);
		CHECK(r.name && !strncmp(r.name, "prog+0x", 7));
		CHECK(now() - t0 < 1.0);
		/* the download lands in the background */
		t0 = now();
		while (symbolizer_debuginfo_pending(s) && now() - t0 < 20)
			symbolizer_debuginfo_poll(s, 200);
		CHECK_EQ_INT(symbolizer_debuginfo_pending(s), 0);
		CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
		CHECK_EQ_STR(r.name, "secret_static");
		CHECK(r.source_file && strstr(r.source_file, "p.c"));
		CHECK_EQ_INT(r.line, expected_line());
		{
			struct symbolizer_stats st;

			symbolizer_get_stats(s, &st);
			CHECK_EQ_INT(st.remote_files, 1);
		}
	}
	symbolizer_free(s);
	/* Cached per build id: a new symbolizer gets it from the client cache without the
	 * server. */
	stop(server);
	unsetenv("DEBUGINFOD_URLS");
	s = sym_for(url);
	CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
	t0 = now();
	while (symbolizer_debuginfo_pending(s) && now() - t0 < 20)
		symbolizer_debuginfo_poll(s, 200);
	CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
	CHECK_EQ_STR(r.name, "secret_static");
	symbolizer_free(s);
	/* Files are loaded at their first lookup; symbolizer_debuginfo_request() loads those not
	 * looked up yet so that their requests go out (record, before its profile). With room for
	 * one file's names at a time, loading the libraries after the program drops the program's;
	 * its next lookup opens it again, with the debug file debuginfod gave. */
	s = sym_for_budget(url, 1);
	CHECK_EQ_INT(symbolizer_track_pid(s, prog), 0);
	{
		struct symbolizer_stats st;

		symbolizer_get_stats(s, &st);
		CHECK(st.files_pending >= 2); /* the program and libc at least, not loaded */
		CHECK(symbolizer_debuginfo_request(s) >= 2);
		symbolizer_get_stats(s, &st);
		CHECK_EQ_INT(st.files_pending, 0);
		CHECK(st.drops >= 1);
		t0 = now();
		while (symbolizer_debuginfo_pending(s) && now() - t0 < 20)
			symbolizer_debuginfo_poll(s, 200);
		CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
		CHECK_EQ_STR(r.name, "secret_static");
		symbolizer_get_stats(s, &st);
		CHECK(st.reopens >= 1);
		CHECK_EQ_INT(st.remote_files, 1);
		CHECK_EQ_INT(symbolizer_debuginfo_request(s), 0); /* nothing new to load */
	}
	symbolizer_free(s);
	stop(prog);
}

/* A server that accepts connections and never answers: lookups and the shutdown go on. */
static void test_silent_server(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct symbolizer *s;
	struct sym_result r;
	char url[128];
	pid_t prog;
	uint64_t addr = 0;
	double t0;
	int fd;

	if (!have_prog)
		SKIP("gcc/objcopy not available");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 8) == 0 &&
	      getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	setenv("DEBUGINFOD_CACHE_PATH", tpath("cache2"), 1);
	unsetenv("DEBUGINFOD_URLS");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
	s = sym_for(url);
	prog = start_prog(tpath("prog"), &addr, 1);
	CHECK(prog > 0);
	if (prog > 0) {
		t0 = now();
		CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
		CHECK_EQ_INT(symbolizer_user(s, prog, addr + 1, &r), 0);
		CHECK(now() - t0 < 1.0);
		CHECK(symbolizer_debuginfo_pending(s) >= 1); /* the program and its libraries */
	}
	t0 = now();
	symbolizer_free(s); /* cancels the transfer */
	CHECK(now() - t0 < 5.0);
	stop(prog);
	close(fd);
}

/* Nobody listens: an error result, no name, nothing pending. */
static void test_no_server(void)
{
	struct symbolizer *s;
	struct sym_result r;
	char url[128];
	pid_t prog;
	uint64_t addr = 0;
	double t0;

	if (!have_prog)
		SKIP("gcc/objcopy not available");
	setenv("DEBUGINFOD_CACHE_PATH", tpath("cache3"), 1);
	unsetenv("DEBUGINFOD_URLS");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", free_port());
	s = sym_for(url);
	prog = start_prog(tpath("prog"), &addr, 1);
	CHECK(prog > 0);
	if (prog > 0) {
		CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
		t0 = now();
		while (symbolizer_debuginfo_pending(s) && now() - t0 < 20)
			symbolizer_debuginfo_poll(s, 200);
		CHECK_EQ_INT(symbolizer_debuginfo_pending(s), 0);
		CHECK_EQ_INT(symbolizer_user(s, prog, addr, &r), 0);
		/* no name from anywhere: only the function's start, from the file */
		CHECK(r.func_start != 0);
		CHECK(r.name && !strncmp(r.name, "prog+0x", 7));
		if (!r.func_start)
			fprintf(stderr, "  got '%s' from %s\n", r.name, getenv("DEBUGINFOD_URLS"));
	}
	symbolizer_free(s);
	stop(prog);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	if (getuid() == 0 && isolate_network() < 0)
		fprintf(stderr, "  note: no network namespace of our own; the server listens on the "
			"host too, on a free port\n");
	setenv("DEBUGINFOD_TIMEOUT", "3", 1);
	setup();
	RUN(test_fetch);
	RUN(test_silent_server);
	RUN(test_no_server);
	sh("rm -rf %s", tmpdir);
	return test_summary();
}
