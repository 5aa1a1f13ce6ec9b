/* otlp_ingest.c: POST /v1development/profiles (see otlp_ingest.h): body decoding through
 * profile/otlp.h (and otlp_json.h for OTLP/JSON), attribute -> label naming, one
 * ingest_profile() per OTLP profile, one store_write() for the request, OTLP answers. */
#include "server/otlp_ingest.h"
#include "lib/alloc.h"
#include "lib/budget.h"
#include "lib/strtab.h"
#include "profile/gzip.h"
#include "profile/otlp.h"
#include "profile/otlp_json.h"
#include "profile/profile.h"
#include "server/ingest.h"
#include "server/server.h"
#include "store/store.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* google.rpc.Code values used in error answers */
#define RPC_INVALID_ARGUMENT 3
#define RPC_UNAVAILABLE 14

/* Attribute names that map to scorch's own label names (the agent's, docs/server.md). */
static const char *const label_names[][2] = {
	{ "service.name", "service_name" },
	{ "host.name", "host" },
	{ "container.id", "container_id" },
	{ "process.executable.name", "process" },
};
#define NLABEL_NAMES (sizeof(label_names) / sizeof(label_names[0]))

/* Attributes that are never series labels: per-process or per-request identities that would
 * make a series per process or per upload. */
static const char *const not_labels[] = {
	"process.pid", "process.parent_pid", "thread.id", "process.command_line",
	"process.command_args", "process.owner", "profile.id",
};

static int is_not_label(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(not_labels) / sizeof(not_labels[0]); i++) {
		if (!strcmp(key, not_labels[i]))
			return 1;
	}
	return !strncmp(key, "__", 2);
}

/* The label name for attribute key into out: mapped, or the key with characters outside
 * [A-Za-z0-9_.] replaced by '_' (a leading digit or dot gets a '_' first). "" when nothing is
 * left or it is too long. */
static void label_name(const char *key, char *out, size_t outlen)
{
	size_t i, n = 0;

	for (i = 0; i < NLABEL_NAMES; i++) {
		if (!strcmp(key, label_names[i][0])) {
			snprintf(out, outlen, "%s", label_names[i][1]);
			return;
		}
	}
	if (!(*key >= 'a' && *key <= 'z') && !(*key >= 'A' && *key <= 'Z') && *key != '_' && n + 1 < outlen)
		out[n++] = '_';
	for (; *key && n + 1 < outlen; key++) {
		char c = *key;

		out[n++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '_' || c == '.') ? c : '_';
	}
	out[n] = '\0';
	if (*key || n > STORE_MAX_LABEL_NAME || (n == 1 && out[0] == '_'))
		out[0] = '\0';
}

/* Cut s to at most max bytes at a UTF-8 character boundary (in place). */
static void cut_utf8(char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	s[n] = '\0';
}

/* The labels of one profile: resource then profile attributes, strings only, mapped names;
 * a later attribute of the same name wins. Kept in a series_name whose strings the request's
 * strtab owns (never released through series_name_release()). */
struct series_labels {
	struct series_name name;
	const char *app; /* service.name, or NULL */
	const char *process;
	size_t dropped;  /* attributes that did not fit */
};

static void add_label(struct series_labels *sl, struct strtab *keep, const struct otlp_kv *kv)
{
	char name[STORE_MAX_LABEL_NAME + 2], value[STORE_MAX_LABEL_VALUE + 1];
	size_t i;

	if (kv->kind != OTLP_STR || !*kv->str || is_not_label(kv->key))
		return;
	label_name(kv->key, name, sizeof(name));
	if (!*name || !strcmp(name, "thread.name"))
		return;
	snprintf(value, sizeof(value), "%s", kv->str);
	cut_utf8(value, SERIES_MAX_VALUE);
	if (!strcmp(name, "service_name")) {
		sl->app = strtab_get(keep, strtab_intern(keep, value));
		return;
	}
	if (!strcmp(name, "process"))
		sl->process = strtab_get(keep, strtab_intern(keep, value));
	for (i = 0; i < sl->name.nlabels; i++) {
		if (!strcmp(sl->name.labels[i].key, name)) {
			sl->name.labels[i].value = (char *)strtab_get(keep, strtab_intern(keep, value));
			return;
		}
	}
	if (sl->name.nlabels >= SERIES_MAX_LABELS) {
		sl->dropped++;
		return;
	}
	sl->name.labels[sl->name.nlabels].key = (char *)strtab_get(keep, strtab_intern(keep, name));
	sl->name.labels[sl->name.nlabels].value = (char *)strtab_get(keep, strtab_intern(keep, value));
	sl->name.nlabels++;
}

/* Rename the sample labels of p in place to series label names: mapped names, thread.name as
 * comm (the decoder did that already), unusable names and values out of the series (made
 * numeric, which ingest_profile leaves out). Returns 1 when some sample names its app. */
static int fix_sample_labels(struct profile *p)
{
	uint32_t *memo;
	size_t i, nstr = strtab_count(p->strings);
	int sample_app = 0;

	/* New strings may be added while renaming: memo covers the ids that exist now. */
	memo = xcalloc(nstr + 1, sizeof(*memo));
	for (i = 0; i < p->label_pool_len; i++) {
		struct profile_label *l = &p->label_pool[i];
		char name[STORE_MAX_LABEL_NAME + 2];
		const char *key;

		if (!l->str)
			continue;
		if (l->key < nstr && memo[l->key]) {
			if (memo[l->key] == UINT32_MAX)
				l->str = 0;
			else
				l->key = memo[l->key] - 1;
		} else {
			uint32_t old = l->key;

			key = profile_get_str(p, l->key);
			if (!strcmp(key, "comm")) {
				memo[old] = old + 1; /* the root frame, as it is */
				continue;
			}
			name[0] = '\0';
			if (!is_not_label(key))
				label_name(key, name, sizeof(name));
			if (!*name) {
				memo[old] = UINT32_MAX;
				l->str = 0;
			} else {
				l->key = profile_str(p, name);
				memo[old] = l->key + 1;
			}
		}
		if (!l->str)
			continue;
		if (strlen(profile_get_str(p, l->str)) > STORE_MAX_LABEL_VALUE) {
			char *v = xstrdup(profile_get_str(p, l->str));

			cut_utf8(v, STORE_MAX_LABEL_VALUE);
			l->str = profile_str(p, v);
			xfree(v);
		}
		if (!strcmp(profile_get_str(p, l->key), "service_name"))
			sample_app = 1;
	}
	xfree(memo);
	return sample_app;
}

/* Our profile type for an OTLP sample type (docs/server.md, "OTLP"). */
static void profile_type(const struct profile *p, char *type, size_t len, const char **units,
			 uint32_t *rate, const char **aggregation)
{
	ingest_pprof_type(p, NULL, type, len, units, rate);
	if ((!strcmp(type, "events") && !strcmp(*units, "nanoseconds")) || !strcmp(type, "off_cpu") ||
	    !strcmp(type, "off-cpu"))
		snprintf(type, len, "offcpu");
	else if (!strcmp(type, "allocated_objects"))
		snprintf(type, len, "alloc_objects");
	else if (!strcmp(type, "allocated_space"))
		snprintf(type, len, "alloc_space");
	*aggregation = !strncmp(type, "inuse_", 6) ? "average" : "sum";
}

struct answer {
	int json;
	int64_t rejected;
	char first_error[256];
};

static void reject(struct answer *a, size_t index, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reject(struct answer *a, size_t index, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!a->rejected++)
		snprintf(a->first_error, sizeof(a->first_error), "profile %zu: %s", index, msg);
}

static void fail(struct http_response *resp, int json, int status, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void fail(struct http_response *resp, int json, int status, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	struct budget *b;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Written even when the request's budget is spent (often why it fails). */
	b = budget_pause();
	buf_reset(&resp->body);
	resp->status = status;
	resp->content_type = json ? "application/json" : "application/x-protobuf";
	if (otlp_encode_status(code, msg, json, &resp->body) < 0)
		buf_reset(&resp->body);
	budget_resume(b);
}

/* A body over a limit (a decoder cap, the request memory) is too large: 413; the server busy
 * (the shared ingest memory) or the request too slow: 503 with Retry-After; else def. */
static int limit_status(struct http_response *resp, int rc, int def)
{
	if (rc == -E2BIG || rc == -ENOMEM)
		return 413;
	if (rc == -EBUSY || rc == -ETIME) {
		resp->retry_after = rc == -EBUSY ? 2 : 0;
		return 503;
	}
	return def;
}

static int media_type_is(const char *ctype, const char *want)
{
	size_t n = strlen(want);

	while (*ctype == ' ')
		ctype++;
	return !strncasecmp(ctype, want, n) && (!ctype[n] || ctype[n] == ';' || ctype[n] == ' ');
}

static void handle(struct server *s, const struct http_request *req, struct http_response *resp,
		   uint64_t *samples_out, uint64_t *stacks_out)
{
	const char *ctype = http_header(req, "Content-Type");
	const char *cenc = http_header(req, "Content-Encoding");
	struct decode_limits lim = s->cfg.limits;
	struct otlp_request otlp;
	struct ingest_batches *batches = NULL;
	struct store_batch *all = NULL;
	struct strtab *keep = strtab_new();
	struct buf pb = BUF_INIT(BUF_UNLIMITED), inflated;
	struct errmsg err = { "" };
	struct answer ans;
	const char *body = req->body;
	size_t body_len = req->body_len, i, nall = 0;
	int64_t now = (int64_t)time(NULL);
	int json = 0, rc;

	memset(&otlp, 0, sizeof(otlp));
	memset(&ans, 0, sizeof(ans));
	buf_init(&inflated, lim.max_inflated);
	if (ctype && *ctype && !media_type_is(ctype, "application/x-protobuf") &&
	    !media_type_is(ctype, "application/protobuf") && !media_type_is(ctype, "application/octet-stream")) {
		if (!media_type_is(ctype, "application/json")) {
			fail(resp, 0, 415, RPC_INVALID_ARGUMENT,
			     "unsupported Content-Type '%.64s': send application/x-protobuf or application/json",
			     ctype);
			goto cleanup;
		}
		json = 1;
	}
	ans.json = json;
	if (cenc && *cenc && strcasecmp(cenc, "identity")) {
		if (strcasecmp(cenc, "gzip")) {
			fail(resp, json, 415, RPC_INVALID_ARGUMENT,
			     "unsupported Content-Encoding '%.32s': send gzip or no encoding", cenc);
			goto cleanup;
		}
		if (!gzip_is(body, body_len)) {
			fail(resp, json, 400, RPC_INVALID_ARGUMENT,
			     "Content-Encoding is gzip but the body is not gzip");
			goto cleanup;
		}
	}
	if (gzip_is(body, body_len)) {
		rc = gzip_decompress(body, body_len, lim.max_inflated, &inflated, &err);
		if (rc == -E2BIG)
			decode_limit_exceeded(&err, "otlp", "bytes after inflation", "inflated",
					      lim.max_inflated);
		else if (rc == -ENOMEM && budget_failed())
			rc = decode_check(&err, "otlp");
		if (rc < 0) {
			fail(resp, json, limit_status(resp, rc, 400), RPC_INVALID_ARGUMENT,
			     "cannot inflate the body: %s", err.msg);
			goto cleanup;
		}
		body = inflated.data;
		body_len = inflated.len;
	}
	if (json) {
		rc = otlp_json_to_protobuf(body, body_len, lim.max_inflated, &pb, &err);
		if (rc < 0) {
			fail(resp, json, 400, RPC_INVALID_ARGUMENT, "cannot decode OTLP/JSON: %s", err.msg);
			goto cleanup;
		}
		body = pb.data;
		body_len = pb.len;
	}
	rc = otlp_decode(body, body_len, &lim, &otlp, &err);
	if (rc == 0)
		rc = decode_check(&err, "otlp");
	if (rc < 0) {
		/* Over a cap: too large as a whole (413); busy (503); anything else is
		 * malformed (400). */
		fail(resp, json, limit_status(resp, rc, 400), rc == -EBUSY ? RPC_UNAVAILABLE :
		     RPC_INVALID_ARGUMENT, "%s", err.msg);
		goto cleanup;
	}

	batches = xcalloc(otlp.nprofiles + 1, sizeof(*batches));
	for (i = 0; i < otlp.nprofiles; i++) {
		struct otlp_profile_in *pi = &otlp.profiles[i];
		const struct otlp_resource_in *ri = &otlp.resources[pi->resource];
		struct profile *p = pi->prof;
		struct series_labels sl;
		struct ingest_meta meta;
		char type[STORE_MAX_TYPE + 1];
		size_t k;

		if (!p->nsamples)
			continue; /* nothing to store, nothing wrong */
		memset(&sl, 0, sizeof(sl));
		for (k = 0; k < ri->nattrs; k++)
			add_label(&sl, keep, &ri->attrs[k]);
		for (k = 0; k < pi->nattrs; k++)
			add_label(&sl, keep, &pi->attrs[k]);
		memset(&meta, 0, sizeof(meta));
		meta.name = &sl.name;
		meta.app = sl.app ? sl.app : sl.process ? sl.process : "unknown_service";
		meta.sample_app = fix_sample_labels(p);
		/* Producers that put the process on samples (the OTel eBPF profiler) name the app by
		 * it when nothing else does. */
		if (!sl.app && !sl.process)
			meta.sample_app = 2;
		profile_type(p, type, sizeof(type), &meta.units, &meta.sample_rate, &meta.aggregation);
		/* Batches keep pointers until the store write: the strings live in keep. */
		meta.type = strtab_get(keep, strtab_intern(keep, type));
		meta.spy_name = *pi->scope_name ? strtab_get(keep, strtab_intern(keep, pi->scope_name))
						: "otlp";
		if (strlen(meta.spy_name) > STORE_MAX_META)
			meta.spy_name = "otlp";
		if (!meta.sample_rate)
			meta.sample_rate = 100;
		meta.from = p->time_nanos > 0 ? p->time_nanos / 1000000000 : now;
		if (meta.from > now + 86400) {
			reject(&ans, i, "time_unix_nano is more than a day in the future");
			continue;
		}
		{
			int64_t dur = p->duration_nanos > 0 ? p->duration_nanos / 1000000000 : 0;

			meta.until = meta.from + (dur < 86400 ? dur : 86400);
		}
		rc = ingest_profile(p, &meta, &batches[i], &err);
		if (rc < 0 && budget_failed()) {
			/* The request's memory or time, not this profile: the whole request. */
			fail(resp, json, limit_status(resp, rc, 413), rc == -EBUSY ? RPC_UNAVAILABLE :
			     RPC_INVALID_ARGUMENT, "%s", err.msg);
			goto cleanup;
		}
		if (rc < 0) {
			reject(&ans, i, "%s", err.msg);
			ingest_batches_release(&batches[i]);
			continue;
		}
		if (sl.dropped && !ans.rejected && !ans.first_error[0])
			snprintf(ans.first_error, sizeof(ans.first_error),
				 "profile %zu: %zu attributes beyond %d labels were not kept", i, sl.dropped,
				 SERIES_MAX_LABELS);
		nall += batches[i].n;
		*samples_out += batches[i].samples;
		*stacks_out += batches[i].stacks;
	}

	/* One transaction for everything accepted. */
	all = xcalloc(nall + 1, sizeof(*all));
	nall = 0;
	for (i = 0; i < otlp.nprofiles; i++) {
		memcpy(all + nall, batches[i].batches, batches[i].n * sizeof(*all));
		nall += batches[i].n;
	}
	if (nall) {
		rc = store_write(s->store, all, nall, &err);
		if (rc == -EINVAL || rc == -E2BIG) {
			fail(resp, json, 400, RPC_INVALID_ARGUMENT, "rejected by the store: %s", err.msg);
			goto cleanup;
		}
		if (rc < 0) {
			log_warn("otlp ingest: store write failed: %s", err.msg);
			fail(resp, json, rc == -ENOSPC ? 507 : 503, RPC_UNAVAILABLE, "storage failure: %s",
			     err.msg);
			resp->retry_after = rc == -ENOSPC ? 10 : 2;
			goto cleanup;
		}
	}
	resp->status = 200;
	resp->content_type = json ? "application/json" : "application/x-protobuf";
	buf_reset(&resp->body);
	otlp_encode_response(ans.rejected, ans.first_error, json, &resp->body);
cleanup:
	if (resp->status < 200 || resp->status >= 300)
		*samples_out = *stacks_out = 0;
	for (i = 0; batches && i < otlp.nprofiles; i++)
		ingest_batches_release(&batches[i]);
	xfree(batches);
	xfree(all);
	otlp_request_release(&otlp);
	strtab_free(keep);
	buf_release(&pb);
	buf_release(&inflated);
}

void otlp_ingest_handle(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct server *s = ctx;
	uint64_t samples = 0, stacks = 0;

	handle(s, req, resp, &samples, &stacks);
	if (resp->status >= 200 && resp->status < 300)
		metrics_ingest(&s->metrics, resp->status, samples, stacks, req->body_len);
}
