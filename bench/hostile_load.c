/* hostile_load.c: hostile and heavy load for `scorch server` (bench/server_hostile.sh drives
 * it): generators of oversized profiles, and clients that push, query, probe /healthz and hold
 * connections open with trickling headers. Plain sockets, one thread per client; results on
 * stdout as key=value words.
 *
 *   hostile_load gen-pprof OUT LOCATIONS TYPES SAMPLES DEPTH  gzip pprof: LOCATIONS locations
 *       (one function per 4), SAMPLES samples of DEPTH random locations, TYPES values each
 *   hostile_load gen-folded OUT LINES DISTINCT DEPTH  LINES folded lines, DISTINCT of them
 *       distinct, 8..8+DEPTH frames (DEPTH 0: three short frames, ~25 bytes a line)
 *   hostile_load post PORT FILE PATH N TIMEOUT      N concurrent POSTs of FILE to PATH
 *   hostile_load probe PORT SECONDS [STOPFILE]      GET /healthz every 50 ms, a new connection
 *       each time (as an orchestrator does), until SECONDS passed or STOPFILE exists: latency
 *       percentiles and failures (10 s timeout; a failure counts as 10 s)
 *   hostile_load clients PORT N SECONDS             N keep-alive clients (from 127.0.1.x, 2 per
 *       address) alternating a 300-line ingest and a /render of the last hour
 *   hostile_load slowloris PORT N SECONDS ADDR      N connections from ADDR sending a request
 *       head one byte per second, reconnecting when closed
 *   hostile_load fill-disk PORT DIR SECONDS         push new 3000-stack profiles for SECONDS,
 *       tracking the size of the store's files in DIR (their largest total) */
#include "lib/buf.h"
#include "profile/gzip.h"
#include "profile/protobuf.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static int port;
static atomic_int stop;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- generators ----------------------------------------------------------------------------- */

static int write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, len, f) != len) {
		fprintf(stderr, "cannot write %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f);
}

static int gen_pprof(const char *out, long nloc, int ntypes, long nsamples, int depth)
{
	struct buf raw = BUF_INIT(BUF_UNLIMITED), gz = BUF_INIT(BUF_UNLIMITED);
	struct protobuf_writer w = PROTOBUF_WRITER(&raw);
	long nfn = nloc / 4 + 1, i;
	uint64_t seed = 0x1234567;
	size_t m, n;
	int k, d;
	char s[64];

	/* strings: 0 "", 1 "count", 2..1+ntypes type names, then function names */
	for (k = 0; k < ntypes; k++) {
		m = protobuf_begin(&w, 1);
		protobuf_put_uint64(&w, 1, 2 + (uint64_t)k);
		protobuf_put_uint64(&w, 2, 1);
		protobuf_end(&w, m);
	}
	for (i = 0; i < nsamples; i++) {
		m = protobuf_begin(&w, 2);
		n = protobuf_begin(&w, 1);
		for (d = 0; d < depth; d++)
			protobuf_put_raw_varint(&w, 1 + xorshift(&seed) % (uint64_t)nloc);
		protobuf_end(&w, n);
		n = protobuf_begin(&w, 2);
		for (k = 0; k < ntypes; k++)
			protobuf_put_raw_varint(&w, 1 + xorshift(&seed) % 1000);
		protobuf_end(&w, n);
		protobuf_end(&w, m);
	}
	for (i = 0; i < nloc; i++) {
		m = protobuf_begin(&w, 4);
		protobuf_put_uint64(&w, 1, (uint64_t)i + 1);
		protobuf_put_uint64(&w, 3, 0x400000 + (uint64_t)i * 16);
		n = protobuf_begin(&w, 4);
		protobuf_put_uint64(&w, 1, (uint64_t)(i % nfn) + 1);
		protobuf_put_uint64(&w, 2, (uint64_t)(i % 1000) + 1);
		protobuf_end(&w, n);
		protobuf_end(&w, m);
	}
	for (i = 0; i < nfn; i++) {
		m = protobuf_begin(&w, 5);
		protobuf_put_uint64(&w, 1, (uint64_t)i + 1);
		protobuf_put_uint64(&w, 2, 2 + (uint64_t)ntypes + (uint64_t)i);
		protobuf_end(&w, m);
	}
	protobuf_put_bytes(&w, 6, "", 0);
	protobuf_put_bytes(&w, 6, "count", 5);
	for (k = 0; k < ntypes; k++) {
		snprintf(s, sizeof(s), "type%d", k);
		protobuf_put_bytes(&w, 6, s, strlen(s));
	}
	for (i = 0; i < nfn; i++) {
		snprintf(s, sizeof(s), "package%ld.function_%ld", i % 97, i);
		protobuf_put_bytes(&w, 6, s, strlen(s));
	}
	if (w.err || gzip_compress(raw.data, raw.len, Z_BEST_SPEED, &gz) < 0)
		return fprintf(stderr, "cannot encode\n"), 1;
	printf("raw_bytes=%zu gzip_bytes=%zu\n", raw.len, gz.len);
	return write_file(out, gz.data, gz.len) < 0;
}

static int gen_folded(const char *out, long lines, long distinct, int maxdepth)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	long i;

	for (i = 0; i < lines; i++) {
		long k = i % distinct;
		uint64_t s2 = (uint64_t)k * 0x9e3779b97f4a7c15ULL + 1;
		int d, depth = maxdepth ? 8 + (int)(xorshift(&s2) % (unsigned)maxdepth) : 0;

		buf_printf(&b, "main");
		if (!maxdepth) {
			buf_printf(&b, ";f%u;l%ld %u\n", (unsigned)(k % 1000), k,
				   (unsigned)(1 + xorshift(&seed) % 9));
			continue;
		}
		for (d = 0; d < depth; d++)
			buf_printf(&b, ";pkg%u::fn_%u", (unsigned)(xorshift(&s2) % 50),
				   (unsigned)(xorshift(&s2) % 5000));
		buf_printf(&b, ";leaf_%ld %u\n", k, (unsigned)(1 + xorshift(&seed) % 9));
	}
	printf("bytes=%zu\n", b.len);
	return write_file(out, b.data, b.len) < 0;
}

/* ---- HTTP ------------------------------------------------------------------------------------- */

static int connect_from(const char *from, int timeout_ms)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (from) {
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		inet_pton(AF_INET, from, &sa.sin_addr);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(fd);
			return -1;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read one response; its status, or -1 (timeout, reset). *keep: the server keeps the
 * connection. */
static int read_response(int fd, int *keep)
{
	static __thread char *b;
	static __thread size_t cap;
	size_t got = 0, need = 0, hdr = 0;
	int status = -1;

	*keep = 0;
	for (;;) {
		ssize_t r;

		if (got + 65536 > cap) {
			cap = (got + 65536) * 2;
			b = realloc(b, cap);
		}
		r = read(fd, b + got, cap - got - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return hdr && got >= need ? status : -1;
		got += (size_t)r;
		b[got] = '\0';
		if (!hdr) {
			char *e = strstr(b, "\r\n\r\n"), *cl;

			if (!e)
				continue;
			hdr = (size_t)(e - b) + 4;
			status = atoi(b + 9);
			cl = strcasestr(b, "\r\ncontent-length:");
			need = hdr + (cl && cl < e ? strtoul(cl + 17, NULL, 10) : 0);
			*keep = !strcasestr(b, "\r\nconnection: close") || strcasestr(b, "keep-alive");
			if (status == 100) { /* an interim answer: the real one follows */
				memmove(b, b + hdr, got - hdr);
				got -= hdr;
				hdr = 0;
				continue;
			}
		}
		if (got >= need)
			return status;
	}
}

/* Status codes seen, as "200:12,503:3". */
#define MAXCODE 600
static atomic_ulong codes[MAXCODE + 1]; /* [MAXCODE]: no answer */

static void count_code(int status)
{
	atomic_fetch_add(&codes[status > 0 && status < MAXCODE ? status : MAXCODE], 1);
}

static void print_codes(void)
{
	int i, first = 1;

	printf("codes=");
	for (i = 0; i <= MAXCODE; i++) {
		unsigned long n = atomic_load(&codes[i]);

		if (!n)
			continue;
		if (i == MAXCODE)
			printf("%snone:%lu", first ? "" : ",", n);
		else
			printf("%s%d:%lu", first ? "" : ",", i, n);
		first = 0;
	}
	printf("%s ", first ? "-" : "");
}

/* ---- post: N concurrent uploads --------------------------------------------------------------- */

struct post_job {
	pthread_t t;
	const char *body, *path;
	size_t len;
	int timeout;
	int status;
	double secs;
};

static void *post_thread(void *arg)
{
	struct post_job *j = arg;
	char head[1024];
	double t0 = now_s();
	int fd = connect_from(NULL, j->timeout * 1000), n, keep;

	j->status = -1;
	if (fd >= 0) {
		n = snprintf(head, sizeof(head), "POST %s HTTP/1.1\r\nHost: bench\r\nContent-Length: %zu\r\n"
			     "Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
			     j->path, j->len);
		/* A server may answer (413, 503) and close before the body is in: read anyway. */
		if (write_all(fd, head, (size_t)n) == 0)
			write_all(fd, j->body, j->len);
		j->status = read_response(fd, &keep);
		close(fd);
	}
	j->secs = now_s() - t0;
	return NULL;
}

static int do_post(const char *file, const char *path, int n, int timeout)
{
	FILE *f = fopen(file, "rb");
	struct post_job *jobs = calloc((size_t)n, sizeof(*jobs));
	char *body;
	long len;
	int i;
	double slowest = 0;

	if (!f)
		return fprintf(stderr, "cannot open %s\n", file), 1;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	body = malloc((size_t)len + 1);
	if (fread(body, 1, (size_t)len, f) != (size_t)len)
		return fprintf(stderr, "cannot read %s\n", file), 1;
	fclose(f);
	for (i = 0; i < n; i++) {
		jobs[i].body = body;
		jobs[i].len = (size_t)len;
		jobs[i].path = path;
		jobs[i].timeout = timeout;
		pthread_create(&jobs[i].t, NULL, post_thread, &jobs[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(jobs[i].t, NULL);
		count_code(jobs[i].status);
		if (jobs[i].secs > slowest)
			slowest = jobs[i].secs;
	}
	print_codes();
	printf("slowest_s=%.1f\n", slowest);
	return 0;
}

/* ---- probe: /healthz latency --------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int do_probe(double seconds, const char *stopfile)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n";
	size_t cap = 4096, n = 0, fails = 0;
	double *lat = malloc(cap * sizeof(*lat)), end = now_s() + seconds;

	while (now_s() < end && (!stopfile || access(stopfile, F_OK) != 0)) {
		double t0 = now_s(), dt;
		int fd = connect_from(NULL, 10000), keep, st = -1;

		if (fd >= 0) {
			if (write_all(fd, req, sizeof(req) - 1) == 0)
				st = read_response(fd, &keep);
			close(fd);
		}
		dt = (now_s() - t0) * 1000;
		if (st != 200)
			fails++;
		if (n == cap)
			lat = realloc(lat, (cap *= 2) * sizeof(*lat));
		lat[n++] = st == 200 ? dt : 10000; /* a failure counts as the timeout */
		if (dt < 50)
			usleep((useconds_t)((50 - dt) * 1000));
	}
	qsort(lat, n, sizeof(*lat), cmp_double);
	printf("probes=%zu failed=%zu p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n", n, fails,
	       n ? lat[n / 2] : 0, n ? lat[(size_t)((double)n * 0.99)] : 0, n ? lat[n - 1] : 0);
	return 0;
}

/* ---- clients: many keep-alive clients ----------------------------------------------------------- */

static char ingest_body[65536];
static size_t ingest_len;

static void *client_thread(void *arg)
{
	long id = (long)arg;
	char from[32], head[512];
	int fd = -1, i = 0;

	snprintf(from, sizeof(from), "127.0.1.%ld", 1 + id / 2 % 250);
	while (!atomic_load(&stop)) {
		int n, st, keep = 0;

		if (fd < 0 && (fd = connect_from(from, 30000)) < 0) {
			count_code(-1);
			usleep(100000);
			continue;
		}
		if (i++ % 2 == 0) {
			n = snprintf(head, sizeof(head), "POST /ingest?name=clients.cpu%%7Bc%%3D%ld%%7D "
				     "HTTP/1.1\r\nHost: b\r\nContent-Length: %zu\r\n\r\n", id % 20, ingest_len);
			st = write_all(fd, head, (size_t)n) == 0 && write_all(fd, ingest_body, ingest_len) == 0 ?
			     read_response(fd, &keep) : -1;
		} else {
			n = snprintf(head, sizeof(head), "GET /render?query=clients.cpu%%7B%%7D&from=now-1h "
				     "HTTP/1.1\r\nHost: b\r\n\r\n");
			st = write_all(fd, head, (size_t)n) == 0 ? read_response(fd, &keep) : -1;
		}
		count_code(st);
		if (st < 0 || !keep) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int do_clients(int n, double seconds)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	uint64_t seed = 42;
	long i;

	for (i = 0; i < 300; i++) {
		int d, depth = 10 + (int)(xorshift(&seed) % 20);

		ingest_len += (size_t)snprintf(ingest_body + ingest_len, sizeof(ingest_body) - ingest_len, "main");
		for (d = 0; d < depth; d++)
			ingest_len += (size_t)snprintf(ingest_body + ingest_len, sizeof(ingest_body) - ingest_len,
						       ";fn_%u", (unsigned)(xorshift(&seed) % 3000));
		ingest_len += (size_t)snprintf(ingest_body + ingest_len, sizeof(ingest_body) - ingest_len,
					       " %u\n", (unsigned)(1 + xorshift(&seed) % 9));
	}
	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, client_thread, (void *)i);
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&stop, 1);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	print_codes();
	printf("\n");
	return 0;
}

/* ---- slowloris ------------------------------------------------------------------------------------- */

static atomic_ulong slow_opened, slow_closed_by_server;

static int do_slowloris(int n, double seconds, const char *from)
{
	static const char head[] = "GET /labels HTTP/1.1\r\nHost: x\r\nX-Padding: ";
	int *fds = calloc((size_t)n, sizeof(int)), i;
	size_t *pos = calloc((size_t)n, sizeof(size_t));
	double end = now_s() + seconds;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	while (now_s() < end) {
		for (i = 0; i < n; i++) {
			char c, buf[4096];
			ssize_t r;

			if (fds[i] < 0) {
				fds[i] = connect_from(from, 1000);
				pos[i] = 0;
				if (fds[i] >= 0)
					atomic_fetch_add(&slow_opened, 1);
				continue;
			}
			/* An answer (408, 429, 503) or a close: count it, reconnect next round. */
			r = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (r == 0 || (r > 0) || (r < 0 && errno != EAGAIN)) {
				if (r > 0)
					count_code(atoi(buf + 9));
				atomic_fetch_add(&slow_closed_by_server, 1);
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			c = pos[i] < sizeof(head) - 1 ? head[pos[i]] : 'a';
			pos[i]++;
			if (send(fds[i], &c, 1, MSG_NOSIGNAL) != 1) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
		usleep(1000000);
	}
	printf("opened=%lu closed_by_server=%lu ", (unsigned long)atomic_load(&slow_opened),
	       (unsigned long)atomic_load(&slow_closed_by_server));
	print_codes();
	printf("\n");
	return 0;
}

/* ---- fill-disk ------------------------------------------------------------------------------------- */

static long dir_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long total = 0;

	while (d && (e = readdir(d))) {
		char p[4096];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
			total += st.st_size;
	}
	if (d)
		closedir(d);
	return total;
}

static int do_fill(const char *dir, double seconds)
{
	struct buf b = BUF_INIT(BUF_UNLIMITED);
	double end = now_s() + seconds;
	long k = 0, largest = 0;
	uint64_t seed = 77;

	while (now_s() < end) {
		char head[256];
		int fd, n, st = -1, keep, i, j;
		long sz;

		buf_reset(&b);
		for (i = 0; i < 3000; i++) {
			buf_printf(&b, "fill%ld_%d", k, i);
			for (j = 0; j < 5; j++)
				buf_printf(&b, ";f%u", (unsigned)(xorshift(&seed) % 1000000));
			buf_printf(&b, " 1\n");
		}
		k++;
		fd = connect_from(NULL, 30000);
		if (fd >= 0) {
			n = snprintf(head, sizeof(head), "POST /ingest?name=fill.cpu HTTP/1.1\r\nHost: f\r\n"
				     "Content-Length: %zu\r\nConnection: close\r\n\r\n", b.len);
			if (write_all(fd, head, (size_t)n) == 0 && write_all(fd, b.data, b.len) == 0)
				st = read_response(fd, &keep);
			close(fd);
		}
		count_code(st);
		sz = dir_files(dir);
		if (sz > largest)
			largest = sz;
	}
	/* Does the server still answer queries? */
	{
		static const char req[] = "GET /render?query=fill.cpu&from=now-1h HTTP/1.1\r\nHost: f\r\n"
					  "Connection: close\r\n\r\n";
		int fd = connect_from(NULL, 30000), keep, st = -1;

		if (fd >= 0) {
			if (write_all(fd, req, sizeof(req) - 1) == 0)
				st = read_response(fd, &keep);
			close(fd);
		}
		printf("query_after=%d ", st);
	}
	printf("pushes=%ld largest_files=%ld final_files=%ld ", k, largest, dir_files(dir));
	print_codes();
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 7 && !strcmp(argv[1], "gen-pprof"))
		return gen_pprof(argv[2], atol(argv[3]), atoi(argv[4]), atol(argv[5]), atoi(argv[6]));
	if (argc >= 6 && !strcmp(argv[1], "gen-folded"))
		return gen_folded(argv[2], atol(argv[3]), atol(argv[4]), atoi(argv[5]));
	if (argc < 3) {
		fprintf(stderr, "usage: see the top of bench/hostile_load.c\n");
		return 2;
	}
	port = atoi(argv[2]);
	if (argc >= 7 && !strcmp(argv[1], "post"))
		return do_post(argv[3], argv[4], atoi(argv[5]), atoi(argv[6]));
	if (argc >= 4 && !strcmp(argv[1], "probe"))
		return do_probe(atof(argv[3]), argc >= 5 ? argv[4] : NULL);
	if (argc >= 5 && !strcmp(argv[1], "clients"))
		return do_clients(atoi(argv[3]), atof(argv[4]));
	if (argc >= 6 && !strcmp(argv[1], "slowloris"))
		return do_slowloris(atoi(argv[3]), atof(argv[4]), argv[5]);
	if (argc >= 5 && !strcmp(argv[1], "fill-disk"))
		return do_fill(argv[3], atof(argv[4]));
	fprintf(stderr, "usage: see the top of bench/hostile_load.c\n");
	return 2;
}
