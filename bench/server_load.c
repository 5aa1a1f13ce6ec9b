/* server_load.c: HTTP load generator for `scorch server` (bench/server_bench.sh drives it).
 * Plain sockets, HTTP/1.1 keep-alive, one connection per client thread.
 *
 *   server_load ingest PORT CLIENTS SECONDS STACKS [MAXCOUNT [NSERIES]]   concurrent POST /ingest of
 *       folded bodies with STACKS distinct lines drawn from a pool of 3000 stacks of 12..40
 *       frames over 2000 function names; counts 1..MAXCOUNT (default 1: samples == stacks)
 *   server_load fill PORT HOURS STACKS [CLIENTS]    one push every 10 s of simulated time over
 *       the last HOURS hours (STACKS lines, counts 1..8), 4 clients
 *   server_load query PORT CLIENTS REQUESTS PATH    GET PATH repeatedly, latency percentiles
 *
 * Prints one line of key=value results. Exit status 1 when any request failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POOL_STACKS 3000
#define POOL_FUNCS 2000
#define MAX_LAT 2000000

static int port;
static char *pool[POOL_STACKS];
static volatile int stop;
static double deadline;
static int fill_next, fill_total;
static unsigned nseries;            /* ingest: distinct series (0: one per client, up to 8) */
static atomic_uint series_next;
static int64_t fill_start;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

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

static void make_pool(void)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	char line[4096];
	int i, j;

	for (i = 0; i < POOL_STACKS; i++) {
		int depth = 12 + (int)(xorshift(&s) % 29), len;

		len = snprintf(line, sizeof(line), "bench_main");
		for (j = 1; j < depth; j++) {
			/* shared prefixes near the root, diverse leaves, like real stacks */
			unsigned f = j < 6 ? (unsigned)(xorshift(&s) % (unsigned)(4 * j)) :
					     (unsigned)(xorshift(&s) % POOL_FUNCS);

			len += snprintf(line + len, sizeof(line) - (size_t)len, ";pkg%u::function_%u", f % 50, f);
		}
		pool[i] = strdup(line);
	}
}

struct conn {
	int fd;
	char *rbuf;
	size_t rcap;
};

static int conn_open(struct conn *c)
{
	struct sockaddr_in sa;
	int one = 1;

	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
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

/* Send one request and read the response; returns the status or -1. */
static int request(struct conn *c, const char *head, size_t hlen, const char *body, size_t blen)
{
	size_t got = 0, need = 0, hdr_end = 0;
	int status = -1, attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (c->fd < 0 && conn_open(c) < 0)
			return -1;
		if (write_all(c->fd, head, hlen) == 0 && (!blen || write_all(c->fd, body, blen) == 0))
			break;
		close(c->fd);
		c->fd = -1;
	}
	if (c->fd < 0)
		return -1;
	for (;;) {
		ssize_t r;

		if (got + 65536 > c->rcap) {
			c->rcap = (got + 65536) * 2;
			c->rbuf = realloc(c->rbuf, c->rcap);
		}
		r = read(c->fd, c->rbuf + got, c->rcap - got - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		c->rbuf[got] = '\0';
		if (!hdr_end) {
			char *e = strstr(c->rbuf, "\r\n\r\n"), *cl;

			if (!e)
				continue;
			hdr_end = (size_t)(e - c->rbuf) + 4;
			status = atoi(c->rbuf + 9);
			cl = strcasestr(c->rbuf, "\r\ncontent-length:");
			need = hdr_end + (cl && cl < e ? strtoul(cl + 17, NULL, 10) : 0);
		}
		if (hdr_end && got >= need)
			return status;
	}
	close(c->fd);
	c->fd = -1;
	return hdr_end && got >= need ? status : -1;
}

/* The first few error answers, on stderr (stdout keeps its one line of results). */
static atomic_int errors_shown;

static void note_error(const struct conn *c, int status)
{
	const char *body = c->rbuf ? strstr(c->rbuf, "\r\n\r\n") : NULL;

	if (atomic_fetch_add(&errors_shown, 1) >= 3)
		return;
	fprintf(stderr, "error answer: %d %.200s\n", status, status > 0 && body ? body + 4 : "(no answer)");
}

struct worker {
	pthread_t t;
	int id, nstacks, count_max;
	const char *path;
	int nreq;
	uint64_t requests, stacks, samples, errors, bytes;
	double *lat;
	size_t nlat;
};

static char *folded_body(uint64_t *seed, int nstacks, int count_max, size_t *len, uint64_t *samples)
{
	size_t cap = (size_t)nstacks * 1024, n = 0;
	char *b = malloc(cap);
	int i;

	*samples = 0;
	for (i = 0; i < nstacks; i++) {
		/* distinct lines: consecutive pool entries from a random start */
		unsigned k = (unsigned)((xorshift(seed) % POOL_STACKS + (unsigned)i) % POOL_STACKS);
		unsigned cnt = count_max > 1 ? 1 + (unsigned)(xorshift(seed) % (unsigned)count_max) : 1;
		size_t l = strlen(pool[k]);

		if (n + l + 32 > cap) {
			cap *= 2;
			b = realloc(b, cap);
		}
		memcpy(b + n, pool[k], l);
		n += l;
		n += (size_t)snprintf(b + n, cap - n, " %u\n", cnt);
		*samples += cnt;
	}
	*len = n;
	return b;
}

#define BODIES 16

static void *ingest_worker(void *arg)
{
	struct worker *w = arg;
	struct conn c = { -1, NULL, 0 };
	uint64_t seed = 0x1234567ULL * (uint64_t)(w->id + 1), bsamples[BODIES];
	char head[512], *bodies[BODIES];
	size_t blens[BODIES];
	unsigned k = 0, sid = 0;
	int i, retry = 0;

	/* Bodies are made up front so that the client spends its time on the wire. */
	for (i = 0; i < BODIES; i++)
		bodies[i] = folded_body(&seed, w->nstacks, w->count_max, &blens[i], &bsamples[i]);
	while (!stop && now_s() < deadline) {
		size_t blen = blens[k % BODIES];
		/* With nseries, every push is another agent's series (round robin over all); a
		 * refused push is retried for the same agent, as an agent would. */
		if (!retry)
			sid = nseries ? (unsigned)(atomic_fetch_add(&series_next, 1) % nseries) :
					(unsigned)(w->id % 8);
		int hlen = snprintf(head, sizeof(head),
				    "POST /ingest?name=bench.cpu%%7B%s%%3D%u%%7D HTTP/1.1\r\n"
				    "Host: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n",
				    nseries ? "agent" : "client", sid, blen);
		double t0 = now_s();
		int st = request(&c, head, (size_t)hlen, bodies[k % BODIES], blen);

		if (w->nlat < MAX_LAT)
			w->lat[w->nlat++] = now_s() - t0;
		retry = st != 200;
		if (st == 200) {
			w->requests++;
			w->stacks += (uint64_t)w->nstacks;
			w->samples += bsamples[k % BODIES];
			w->bytes += blen;
		} else {
			w->errors++;
			note_error(&c, st);
		}
		k++;
	}
	for (i = 0; i < BODIES; i++)
		free(bodies[i]);
	if (c.fd >= 0)
		close(c.fd);
	free(c.rbuf);
	return NULL;
}

static void *fill_worker(void *arg)
{
	struct worker *w = arg;
	struct conn c = { -1, NULL, 0 };
	uint64_t seed = 0xabcdefULL * (uint64_t)(w->id + 1);
	char head[512];

	for (;;) {
		uint64_t samples;
		size_t blen;
		char *body;
		int k, hlen, st;

		pthread_mutex_lock(&lock);
		k = fill_next++;
		pthread_mutex_unlock(&lock);
		if (k >= fill_total)
			break;
		body = folded_body(&seed, w->nstacks, 8, &blen, &samples);
		hlen = snprintf(head, sizeof(head),
				"POST /ingest?name=fill.cpu%%7Bhost%%3Dh%d%%7D&from=%lld&until=%lld HTTP/1.1\r\n"
				"Host: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n", k % 4,
				(long long)(fill_start + (int64_t)(k / 4) * 10),
				(long long)(fill_start + (int64_t)(k / 4) * 10 + 10), blen);
		st = request(&c, head, (size_t)hlen, body, blen);
		if (st == 200) {
			w->requests++;
			w->stacks += (uint64_t)w->nstacks;
			w->samples += samples;
		} else {
			w->errors++;
		}
		free(body);
	}
	if (c.fd >= 0)
		close(c.fd);
	free(c.rbuf);
	return NULL;
}

static void *query_worker(void *arg)
{
	struct worker *w = arg;
	struct conn c = { -1, NULL, 0 };
	char head[4096];
	int i, hlen = snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", w->path);

	for (i = 0; i < w->nreq; i++) {
		double t0 = now_s();
		int st = request(&c, head, (size_t)hlen, NULL, 0);

		w->lat[w->nlat++] = now_s() - t0;
		if (st == 200)
			w->requests++;
		else
			w->errors++;
	}
	if (c.fd >= 0)
		close(c.fd);
	free(c.rbuf);
	return NULL;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i];
}

static void summarize(const char *mode, struct worker *w, int n, double secs)
{
	uint64_t req = 0, stacks = 0, samples = 0, errors = 0, bytes = 0;
	size_t nlat = 0, i;
	double *all;
	int k;

	for (k = 0; k < n; k++) {
		req += w[k].requests;
		stacks += w[k].stacks;
		samples += w[k].samples;
		errors += w[k].errors;
		bytes += w[k].bytes;
		nlat += w[k].nlat;
	}
	all = malloc((nlat ? nlat : 1) * sizeof(*all));
	nlat = 0;
	for (k = 0; k < n; k++)
		for (i = 0; i < w[k].nlat; i++)
			all[nlat++] = w[k].lat[i];
	qsort(all, nlat, sizeof(*all), cmp_d);
	printf("%s requests=%llu errors=%llu seconds=%.2f req_per_s=%.0f stacks_per_s=%.0f "
	       "samples_per_s=%.0f mb_per_s=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f\n",
	       mode, (unsigned long long)req, (unsigned long long)errors, secs, (double)req / secs,
	       (double)stacks / secs, (double)samples / secs, (double)bytes / secs / 1e6,
	       pct(all, nlat, 0.5) * 1e3, pct(all, nlat, 0.9) * 1e3, pct(all, nlat, 0.99) * 1e3);
	free(all);
}

int main(int argc, char **argv)
{
	struct worker *w;
	int n, k, failed = 0;
	double t0, secs;

	if (argc < 6) {
		fprintf(stderr, "usage: server_load ingest PORT CLIENTS SECONDS STACKS [MAXCOUNT]\n"
				"       server_load ingest PORT CLIENTS SECS STACKS MAXCOUNT NSERIES\n"
				"       server_load fill PORT HOURS STACKS [CLIENTS]\n"
				"       server_load query PORT CLIENTS REQUESTS PATH\n");
		return 2;
	}
	port = atoi(argv[2]);
	make_pool();
	if (!strcmp(argv[1], "fill")) {
		n = argc > 5 && atoi(argv[5]) > 0 ? atoi(argv[5]) : 4;
		fill_total = atoi(argv[3]) * 360 * 4;
		fill_start = (int64_t)time(NULL) - (int64_t)atoi(argv[3]) * 3600;
	} else {
		n = atoi(argv[3]);
	}
	w = calloc((size_t)n, sizeof(*w));
	t0 = now_s();
	deadline = t0 + atof(argv[4]);
	for (k = 0; k < n; k++) {
		w[k].id = k;
		if (!strcmp(argv[1], "ingest")) {
			w[k].nstacks = atoi(argv[5]);
			w[k].count_max = argc > 6 ? atoi(argv[6]) : 1;
			nseries = argc > 7 ? (unsigned)atoi(argv[7]) : 0;
			w[k].lat = malloc(MAX_LAT * sizeof(double));
			pthread_create(&w[k].t, NULL, ingest_worker, &w[k]);
		} else if (!strcmp(argv[1], "fill")) {
			w[k].nstacks = atoi(argv[4]);
			pthread_create(&w[k].t, NULL, fill_worker, &w[k]);
		} else {
			w[k].nreq = atoi(argv[4]);
			w[k].path = argv[5];
			w[k].lat = malloc((size_t)w[k].nreq * sizeof(double));
			pthread_create(&w[k].t, NULL, query_worker, &w[k]);
		}
	}
	for (k = 0; k < n; k++)
		pthread_join(w[k].t, NULL);
	secs = now_s() - t0;
	summarize(argv[1], w, n, secs);
	for (k = 0; k < n; k++) {
		failed |= w[k].errors > 0;
		free(w[k].lat);
	}
	free(w);
	return failed;
}
