/*
 * cluster.h — riftd nodes joined by a NATS cluster (cluster layer, its own
 * archive rift_cluster because it links libnats; docs/cluster.md): the
 * backbone connection and the bridge that carries the broker's live
 * traffic across nodes. Every rift subject S travels as <prefix>.S.
 */
#ifndef RIFT_CLUSTER_CLUSTER_H
#define RIFT_CLUSTER_CLUSTER_H

#include "rift/broker.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct rift_cluster rift_cluster;

typedef struct rift_cluster_settings {
    const char *const *servers; /* nats:// or tls:// URLs */
    size_t n_servers;
    const char *node;                    /* unique per node: [A-Za-z0-9_-] */
    const char *prefix;                  /* a literal subject */
    const char *user, *password, *token; /* NULL: none */
    const char *ca_file; /* TLS trust; NULL: the system's bundle */
    /* Backbone up (true) or down, with the server shown masked; called on
     * libnats' threads. May be NULL. */
    void (*on_state)(void *ud, bool up, const char *server);
    void *ud;
} rift_cluster_settings;

typedef struct rift_cluster_status {
    bool connected;
    char server[256]; /* the URL in use, credentials masked; "" when down */
    uint64_t msgs_out, msgs_in, echoes_dropped, errors, reconnects;
    size_t subscriptions; /* NATS subscriptions, the node inbox included */
} rift_cluster_status;

/*
 * rift_cluster_start connects to the backbone and bridges |b| to it. When
 * no server answers now it still starts and keeps retrying (logged); local
 * traffic never waits for the backbone. Errors: RIFT_ERR_INVALID_CONFIG,
 * RIFT_ERR_CONNECTION (refused options, authorization), RIFT_ERR_NOMEM.
 */
int rift_cluster_start(rift_cluster **pc, rift_broker *b,
                       const rift_cluster_settings *s, rift_error *err);

/* rift_cluster_stop unbridges the broker, then closes the connection. */
void rift_cluster_stop(rift_cluster *c);

void rift_cluster_get_status(rift_cluster *c, rift_cluster_status *st);

/* The backbone's natsConnection (replicated.c runs JetStream over it);
 * valid until rift_cluster_stop. */
struct __natsConnection *rift_cluster_connection(rift_cluster *c);

/*
 * rift_cluster_crosses: whether subject or pattern |s| is carried by the
 * backbone. rift.* (events, control) and _STAN.* stay on their node;
 * _INBOX.* travels only as replies (docs/cluster.md "What crosses").
 */
bool rift_cluster_crosses(const char *s, size_t len);

#endif /* RIFT_CLUSTER_CLUSTER_H */
