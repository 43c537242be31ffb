/*
 * replicated.h — replicated streams (cluster layer, archive rift_cluster;
 * docs/cluster.md "Replicated streams"): rift streams with replicas = 3
 * stored in the backbone's JetStream, served to the protocol server as
 * its stream backend (rift_server_stream_backend, include/rift/server.h).
 *
 * Rift stream N is JetStream stream RIFT_<hex(N)> on the subjects
 * <prefix>_stream.<hex(N)>.> (a private namespace: rift streams may
 * overlap, JetStream streams may not, and live subscribers of
 * <prefix>.> never see it). The consumer operations block in libnats, so
 * they run on the backend's worker threads; publishes are asynchronous
 * JetStream publishes, at most REPL_PUB_WINDOW in flight (replicated_pub.c).
 * The server only submits.
 */
#ifndef RIFT_CLUSTER_REPLICATED_H
#define RIFT_CLUSTER_REPLICATED_H

#include "cluster/cluster.h"
#include "rift/server.h"

typedef struct rift_repl rift_repl;

/* One replicated stream's configuration (copied by rift_repl_start). */
typedef struct rift_repl_stream_config {
    const char *name; /* [A-Za-z0-9_-], 1..96 bytes */
    const char *const *subjects;
    size_t n_subjects;
    uint64_t max_messages, max_bytes, max_payload_bytes, max_consumers;
    uint64_t max_age_ms; /* 0: none */
    uint32_t replicas;
} rift_repl_stream_config;

/* What `rift status` shows of one replicated stream on this node. */
typedef struct rift_repl_stream_status {
    const char *name; /* valid while the backend runs */
    bool ready;       /* the JetStream stream exists with our limits */
    uint32_t replicas;
    uint64_t published, duplicates, fetched, acked, errors;
    uint64_t retries;       /* publish tries repeated (same message id) */
    uint64_t last_sequence; /* the newest STORED sequence from this node */
    size_t consumers;       /* consumers bound on this node */
    size_t fetch_waits;     /* CONSUMER_FETCH_WAITs waiting, node-wide */
    char last_error[160];   /* "" when none */
} rift_repl_stream_status;

/*
 * rift_repl_start makes the backend for |n| streams over cluster |c|'s
 * connection (which must outlive it). The JetStream streams are created
 * (or their limits updated) in the background and again before any
 * operation while that has not succeeded, so a backbone down at start is
 * not an error. Errors: RIFT_ERR_INVALID_CONFIG, RIFT_ERR_NOMEM.
 */
int rift_repl_start(rift_repl **pr, rift_cluster *c, const char *node,
                    const char *prefix, const rift_repl_stream_config *v,
                    size_t n, rift_error *err);

/* rift_repl_stop finishes queued operations (each completes, with an
 * error once stopping) and joins the workers. NULL is a no-op. */
void rift_repl_stop(rift_repl *r);

/* rift_repl_end_waits ends every CONSUMER_FETCH_WAIT waiting in |r|
 * within one pull (100 ms; each answers what it has) and has later ones
 * answer at once. riftd calls it before stopping the protocol server,
 * which waits for its backend operations to complete. NULL is a no-op. */
void rift_repl_end_waits(rift_repl *r);

/* The server's view of |r| (valid until rift_repl_stop). */
rift_server_stream_backend rift_repl_backend(rift_repl *r);

size_t rift_repl_stream_count(const rift_repl *r);
void rift_repl_get_status(rift_repl *r, size_t i, rift_repl_stream_status *st);

#endif /* RIFT_CLUSTER_REPLICATED_H */
