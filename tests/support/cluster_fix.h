/*
 * cluster_fix.h — a riftd cluster for integration tests (tests layer):
 * three nats-servers joined by routes on loopback (cluster.name, server
 * names, fixed free ports so a killed one restarts where it was) and three
 * riftd, each bridged to its own nats-server through a `cluster` table
 * (docs/cluster.md), with one connected client per node and a plaintext
 * NATS listener on each riftd.
 */
#ifndef RIFT_TESTS_CLUSTER_FIX_H
#define RIFT_TESTS_CLUSTER_FIX_H

#include "procs.h"
#include "riftd_fix.h"

#define CLUSTER_FIX_NODES 3

typedef struct cluster_node {
    char *ns_dir;
    rift_proc ns;
    bool ns_running;
    int client_port, route_port;
    int nats_port; /* riftd's NATS listener (plaintext, loopback) */
    riftd_fix r;
    rift_client *c;
} cluster_node;

/* What cluster_fix_start_opts adds to the plain cluster (all optional). */
typedef struct cluster_fix_opts {
    /* JetStream on every nats-server (store_dir <ns_dir>/js). */
    bool jetstream;
    /* Lua text of messaging.streams, e.g. "{ orders = { replicas = 3 } }". */
    const char *streams;
    /* The last node's messaging.streams instead (nodes configured
     * differently); NULL: |streams|. */
    const char *streams_last;
    /* A second principal 'worker' (token RIFTD_FIX_TOKEN2, publish and
     * subscribe '>'). */
    bool second_principal;
    /* Lua text of 'worker''s subscribe grant; NULL: "{ '>' }". */
    const char *worker_subscribe;
    /* Lua text of principal 'app''s `streams` grant, e.g. "{ 'orders' }"
     * (stream administration: STREAM_PURGE of a replicated stream). */
    const char *app_streams;
    /* Lua text of riftd's `limits` table, e.g.
     * "{ per_identity = { consumers = 2 } }" (app is a control principal:
     * the quotas hold 'worker'). */
    const char *limits;
    /* TLS on every nats-server's client port (routes stay plain), with a
     * certificate of a CA made for the cluster (cluster_fix.tls_dir); the
     * riftd use tls:// URLs and `tls = { ca = <tls_dir>/ca.pem }`. */
    bool backbone_tls;
    /* `authorization { user: riftd, password: RIFTD_FIX_BACKBONE_PW }` on
     * every nats-server's client port; the riftd use user 'riftd' and
     * password_env 'RIFT_TEST_BACKBONE_PASSWORD' (riftd_fix sets it). */
    bool backbone_auth;
} cluster_fix_opts;

typedef struct cluster_fix {
    cluster_node n[CLUSTER_FIX_NODES];
    cluster_fix_opts o;
    /* ca.pem, server.pem, server.key of the nats-servers (backbone_tls);
     * NULL otherwise. */
    char *tls_dir;
} cluster_fix;

/* A free TCP port on 127.0.0.1 (bound once and released), or 0. */
int cluster_fix_free_port(void);

/* Starts the three nats-servers, then the three riftd (node names r1..r3)
 * and their clients (token RIFTD_FIX_TOKEN: publish and subscribe '>',
 * control). False, with the reason printed, when anything fails. */
bool cluster_fix_start(cluster_fix *f);

/* cluster_fix_start with |o| (NULL: none; its strings must outlive |f|). */
bool cluster_fix_start_opts(cluster_fix *f, const cluster_fix_opts *o);

/* SIGKILLs riftd |i| (its client is dropped first). */
void cluster_fix_riftd_kill(cluster_fix *f, int i);

/* (Re)starts riftd |i| in its directory and connects its client. */
bool cluster_fix_riftd_start(cluster_fix *f, int i);

/* Waits up to |ms| until every replicated stream of every running riftd
 * reports ready in `rift status` (the JetStream stream exists, so a meta
 * leader was elected); false, with the last status printed, if not. */
bool cluster_fix_wait_replicated(cluster_fix *f, int ms);

/* (Re)starts nats-server |i| on its ports and waits until it is ready. */
bool cluster_fix_ns_start(cluster_fix *f, int i);

/* SIGKILLs nats-server |i|. */
void cluster_fix_ns_kill(cluster_fix *f, int i);

/* `rift status` of node |i| over its client; NULL on failure. */
json_t *cluster_fix_status(cluster_fix *f, int i);

/* The "cluster" object of cluster_fix_status(f, |i|), a new reference
 * (json_decref it); NULL on failure. */
json_t *cluster_fix_cluster(cluster_fix *f, int i);

/* Its "replicated"[0] (the first replicated stream's counters and ready
 * flag), a new reference; NULL on failure or without one. */
json_t *cluster_fix_replicated(cluster_fix *f, int i);

/* VmRSS of a process in KiB, or 0. */
long cluster_fix_rss_kib(pid_t pid);

/* Stops everything (riftd with SIGTERM, checking exit status 0) and
 * removes the directories; false when a riftd did not exit cleanly. */
bool cluster_fix_stop(cluster_fix *f);

#endif /* RIFT_TESTS_CLUSTER_FIX_H */
