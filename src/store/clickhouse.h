/* clickhouse.h: a small client for ClickHouse's HTTP interface (libcurl, kept-alive
 * connections), enough for the profile store's ClickHouse backend (store_clickhouse.c).
 *
 * A store URL names one node or every node of a cluster:
 *   clickhouse://HOST:PORT[,HOST:PORT...]/DATABASE[?user=U&password=P&cluster=NAME&timeout=10s
 *                                                  &flush=100ms]
 * PORT is the HTTP port (8123 when omitted); DATABASE defaults to "scorch". Several nodes are
 * only meaningful with cluster=NAME (a cluster of remote_servers whose shards they are).
 *
 * Statements go to one node, or to "any" node: the one that answered last, then the others
 * in turn when a node cannot be reached (a stateless server survives the loss of the node it
 * was talking to, as long as the cluster can still answer). An insert moves to another node
 * only when it could not connect: one that may have been stored is not sent twice.
 *
 * Errors: 0 or a negative errno, with a message in *err:
 *   -EAGAIN   ClickHouse cannot be reached, timed out, or refused for a reason that passes
 *             (too many parts, memory limit, a shard down, too many queries): retry later
 *   -EACCES   authentication failed (wrong user or password)
 *   -EIO      any other error reported by ClickHouse (the message carries its text)
 *   -E2BIG    the answer is larger than the caller's buffer allows
 *
 * Threads: a struct clickhouse is shared by all threads; each call borrows a connection from a
 * pool. Ownership: clickhouse_new() copies the config; results go into the caller's buf. */
#ifndef SCORCH_CLICKHOUSE_H
#define SCORCH_CLICKHOUSE_H

#include <stddef.h>

struct buf;
struct errmsg;

#define CLICKHOUSE_MAX_NODES 64

struct clickhouse_url {
	char *nodes[CLICKHOUSE_MAX_NODES]; /* "host:port" */
	size_t nnodes;
	char *database;
	char *user, *password; /* NULL when not given */
	char *cluster;         /* NULL: a single node */
	int timeout_ms;        /* per statement (default 10 s) */
	int flush_ms;          /* at most one insert per this interval (default 100 ms); read
	                        * by the store, which batches concurrent writes */
};

/* Parse a clickhouse:// URL (see above). Returns 0 or -EINVAL with a message naming what is
 * wrong. Release with clickhouse_url_release(). */
int clickhouse_url_parse(const char *url, struct clickhouse_url *out, struct errmsg *err);
void clickhouse_url_release(struct clickhouse_url *u);

struct clickhouse;

struct clickhouse *clickhouse_new(const struct clickhouse_url *u);
void clickhouse_free(struct clickhouse *c);

#define CLICKHOUSE_ANY (-1)

/* Run one statement on node `node` (an index of the URL's nodes, or CLICKHOUSE_ANY).
 *   data == NULL: sql is sent as the request body (SELECT, CREATE, ALTER, ...);
 *   data != NULL: sql goes into the URL and data (len bytes) is the body (INSERT ... FORMAT).
 * settings: more URL parameters ("a=1&b=2", may be NULL). The answer is appended to out (up to
 * out->max; may be NULL to discard it). */
int clickhouse_exec(struct clickhouse *c, int node, const char *sql, const char *settings,
		    const void *data, size_t len, struct buf *out, struct errmsg *err);

/* Node count, and "host:port" of node i (for messages). */
size_t clickhouse_nodes(const struct clickhouse *c);
const char *clickhouse_node_name(const struct clickhouse *c, size_t i);

/* Classify an error answer of ClickHouse ("Code: N, e.displayText() = ..."): -EAGAIN for
 * errors that pass, -EACCES for authentication, else -EIO. */
int clickhouse_error_class(const char *body, size_t len);

#endif
