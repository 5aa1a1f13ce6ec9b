/* ingest_post.c: posts one file over and over to one URL from CLIENTS threads for SECONDS, with
 * keep-alive (libcurl), and prints one line of key=value results (bench/ingest_formats.sh).
 *
 *   ingest_post URL CONTENT_TYPE CONTENT_ENCODING|- FILE CLIENTS SECONDS
 *
 * Exit status 1 when any request did not answer 2xx. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *url;
static struct curl_slist *headers;
static char *body;
static long body_len;
static double deadline;

struct worker {
	pthread_t t;
	unsigned long requests, errors;
	double *lat;
	size_t nlat, cap;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
	return size * n;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	CURL *c = curl_easy_init();

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, body_len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	while (now_s() < deadline) {
		double t0 = now_s();
		long status = 0;

		if (curl_easy_perform(c) == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (w->nlat == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 1024;
			w->lat = realloc(w->lat, w->cap * sizeof(*w->lat));
		}
		w->lat[w->nlat++] = now_s() - t0;
		if (status >= 200 && status < 300)
			w->requests++;
		else
			w->errors++;
	}
	curl_easy_cleanup(c);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct worker *w;
	unsigned long req = 0, err = 0;
	double *all, t0, secs;
	size_t n = 0, i;
	char h[256];
	FILE *f;
	int k, clients;

	if (argc != 7) {
		fprintf(stderr, "usage: ingest_post URL CONTENT_TYPE CONTENT_ENCODING|- FILE CLIENTS SECONDS\n");
		return 2;
	}
	url = argv[1];
	snprintf(h, sizeof(h), "Content-Type: %s", argv[2]);
	headers = curl_slist_append(NULL, h);
	if (strcmp(argv[3], "-")) {
		snprintf(h, sizeof(h), "Content-Encoding: %s", argv[3]);
		headers = curl_slist_append(headers, h);
	}
	headers = curl_slist_append(headers, "Expect:");
	f = fopen(argv[4], "rb");
	if (!f) {
		perror(argv[4]);
		return 2;
	}
	fseek(f, 0, SEEK_END);
	body_len = ftell(f);
	fseek(f, 0, SEEK_SET);
	body = malloc((size_t)body_len + 1);
	if (fread(body, 1, (size_t)body_len, f) != (size_t)body_len)
		return 2;
	fclose(f);
	clients = atoi(argv[5]);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	w = calloc((size_t)clients, sizeof(*w));
	t0 = now_s();
	deadline = t0 + atof(argv[6]);
	for (k = 0; k < clients; k++)
		pthread_create(&w[k].t, NULL, run, &w[k]);
	for (k = 0; k < clients; k++) {
		pthread_join(w[k].t, NULL);
		req += w[k].requests;
		err += w[k].errors;
		n += w[k].nlat;
	}
	secs = now_s() - t0;
	all = malloc((n ? n : 1) * sizeof(*all));
	n = 0;
	for (k = 0; k < clients; k++)
		for (i = 0; i < w[k].nlat; i++)
			all[n++] = w[k].lat[i];
	qsort(all, n, sizeof(*all), cmp);
	printf("requests=%lu errors=%lu seconds=%.2f req_per_s=%.1f p50_ms=%.2f p99_ms=%.2f\n", req, err,
	       secs, (double)req / secs, n ? all[n / 2] * 1e3 : 0, n ? all[(size_t)(0.99 * (double)(n - 1))] * 1e3 : 0);
	return err ? 1 : 0;
}
