/*
 * components.h — the components riftd composes (daemon layer): the
 * durable streams (src/store, open_streams.c), the QUIC protocol server
 * (src/server, quic_listener.c) and the Lua plugin host (src/lua,
 * plugins.c).
 *
 * Each component is an opaque handle with start/stop and JSON views for
 * the control commands. The runtime (daemon.c) starts them in the order
 * of docs/protocol-v1.md §5.2 — streams, then TLS and the listener, then
 * Lua — and stops them in reverse after the "draining" event.
 */
#ifndef RIFT_DAEMON_COMPONENTS_H
#define RIFT_DAEMON_COMPONENTS_H

#include "config/config.h"
#include "rift/broker.h"
#include "rift/server.h"
#include "rift/stream.h"
#include "subject/acl.h"
#include "subject/name.h"

#include <jansson.h>

/* ---- Streams (§4; step 1 of the start-up order) ---- */

typedef struct rift_daemon_streams rift_daemon_streams;

/*
 * rift_daemon_streams_open opens every configured stream: file storage in
 * storage_path (relative to the working directory, created when missing)
 * or memory, with the configured limits and max_age_ms. All or nothing: on
 * failure the streams already open are closed again and the error names
 * the stream, "messaging.streams.<name>: <error>".
 */
int rift_daemon_streams_open(rift_daemon_streams **ps, const rift_config *cfg,
                             rift_error *err);

/* rift_daemon_streams_advise publishes the streams' consumer advisories
 * (records dropped after max_deliver) on rift.events.consumer of
 * |broker|, which must outlive the streams. */
void rift_daemon_streams_advise(rift_daemon_streams *s, rift_broker *broker);

/* rift_daemon_advise_max_deliver publishes |a| (a record of |stream|
 * dropped after max_deliver) on rift.events.consumer of |broker|, naming
 * the consumer by its label (a remote consumer's client-side name) when
 * it has one: the one spelling of the advisory for configured and
 * run-time streams. */
void rift_daemon_advise_max_deliver(rift_broker *broker, const char *stream,
                                    const rift_consumer_advisory *a);

/* rift_daemon_streams_close checkpoints file streams (consumer-state
 * snapshot, sync) and closes every stream. NULL is a no-op. */
void rift_daemon_streams_close(rift_daemon_streams *s);

/* rift_daemon_streams_find returns the open stream |name| or NULL. The set
 * never changes while it is open, so any thread may call this. */
rift_stream *rift_daemon_streams_find(const rift_daemon_streams *s,
                                      const char *name);

/* rift_daemon_streams_count returns how many streams are open. */
size_t rift_daemon_streams_count(const rift_daemon_streams *s);

/* rift_daemon_streams_at returns the |i|-th stream (configuration order,
 * sorted by name) and its name. */
rift_stream *rift_daemon_streams_at(const rift_daemon_streams *s, size_t i,
                                    const char **name);

/*
 * rift_daemon_stream_summary is one stream's entry of status/streams:
 * {"name","storage":"memory"|"file","messages","bytes","first_seq",
 * "last_seq","consumers","open"} (plus "poisoned", "segments",
 * "disk_bytes" for file streams). New reference, NULL when out of memory.
 */
json_t *rift_daemon_stream_summary(rift_daemon_streams *s,
                                   const rift_config_stream *cfg);

/* The same entry for any open stream (|st| NULL: "open": false), its
 * storage as the store reports it. New reference, NULL when out of
 * memory. */
json_t *rift_daemon_stream_json(rift_stream *st, const char *name);

/* ---- Cluster backbone (docs/cluster.md; right after the broker) ---- */

struct rift_cluster;

struct rift_repl;

typedef struct rift_daemon_cluster {
    struct rift_cluster *c; /* NULL without a `cluster` table */
    struct rift_repl *repl; /* the replicated streams; NULL: none */
    rift_broker *broker;
    char node[72];
} rift_daemon_cluster;

/* rift_daemon_cluster_start joins the backbone when cfg has a `cluster`
 * table (n->c stays NULL otherwise); a backbone down at start is logged
 * and retried, not an error. */
int rift_daemon_cluster_start(rift_daemon_cluster *n, rift_broker *broker,
                              const rift_config *cfg, rift_error *err);

void rift_daemon_cluster_stop(rift_daemon_cluster *n);

/* Ends the replicated streams' waiting fetches (rift_repl_end_waits):
 * called before the QUIC server stops, which waits for them. */
void rift_daemon_cluster_end_waits(rift_daemon_cluster *n);

/* The QUIC server's stream backend for the replicated streams (all NULL
 * without any); valid until rift_daemon_cluster_stop. */
rift_server_stream_backend rift_daemon_cluster_backend(rift_daemon_cluster *n);

/* `rift status`'s "cluster": {"node","backbone":"up"|"down","connected",
 * "server",
 * "subscriptions","messages":{"out","in","echoes_dropped"},"errors",
 * "reconnects","replicated":[{"name","replicas","ready","published",
 * "duplicates","fetched","acked","errors","last_sequence","consumers",
 * "last_error"}]}, or JSON null. New reference. */
json_t *rift_daemon_cluster_json(rift_daemon_cluster *n);

/* ---- NATS Streaming (docs/streaming.md; after the streams) ---- */

struct rift_stan;

/* rift_daemon_stan_start starts the service when cfg has a `streaming`
 * table (*ps stays NULL otherwise); errors read "streaming: <error>".
 * Stop it with rift_stan_stop (stan/stan.h). */
int rift_daemon_stan_start(struct rift_stan **ps, rift_broker *broker,
                           const rift_config *cfg, rift_error *err);

/* The service's entry of `rift status`: {"clients","channels",
 * "subscriptions"}, or JSON null without the service. New reference. */
json_t *rift_daemon_stan_json(struct rift_stan *s);


/* ---- Per-identity quotas (limits.c) ---- */

struct rift_quota;

/* The accounting of |cfg|'s principals under its resolved `limits`,
 * shared by every front end (rift_quota_del frees it). */
int rift_daemon_quota_new(struct rift_quota **pq, const rift_config *cfg,
                          rift_error *err);

/* ---- QUIC server (§2, §5.2 step 2) ---- */

typedef struct rift_daemon_quic rift_daemon_quic;

/*
 * rift_daemon_quic_start checks the TLS files (the §5.2 texts), builds the
 * identities from the principals (tokens already loaded), and binds the
 * server on messaging.listen with the messaging limits, every open
 * configured stream and, after them, |source|'s (riftd: run-time streams
 * and channels), the stream administration |admin| and the replicated
 * streams' |backend|; *pq stays NULL when
 * no listener is configured. Errors carry the §5.2 certificate/private key
 * texts, or the server's ("cannot bind ...").
 */
int rift_daemon_quic_start(rift_daemon_quic **pq, rift_broker *broker,
                           rift_daemon_streams *streams,
                           rift_server_stream_source source,
                           rift_server_stream_admin admin,
                           rift_server_stream_backend backend,
                           const rift_config *cfg, struct rift_quota *quota,
                           rift_error *err);

/* The address actually bound ("127.0.0.1:43210" when the port was 0). */
const char *rift_daemon_quic_address(const rift_daemon_quic *q);

/* rift_daemon_quic_flush delivers what is already queued for remote
 * subscribers (the draining event) and waits for their ACKs, at most
 * |timeout_ms|. NULL is a no-op. */
void rift_daemon_quic_flush(rift_daemon_quic *q, uint64_t timeout_ms);

/* rift_daemon_quic_stop closes every connection (code 0, "server
 * shutdown"), waits up to 2 s and frees |q|. NULL is a no-op. */
void rift_daemon_quic_stop(rift_daemon_quic *q);

/* False when the server thread ended unexpectedly (the 1 s watchdog).
 * NULL (no listener) is alive. */
bool rift_daemon_quic_alive(const rift_daemon_quic *q);

/* {"total":n,"authenticated":n,"by_identity":{"<name>":n,...}}: every
 * configured identity, with zero counts too. NULL q: zeros. New
 * reference. */
json_t *rift_daemon_quic_connections(const rift_daemon_quic *q);

/* The server's own counters: {"accepted","refused","auth_failures",
 * "streams","subscriptions","slow_consumers","messages":{"in","out"},
 * "bytes":{"in","out"}}, or JSON null without a listener. New reference. */
json_t *rift_daemon_quic_stats(const rift_daemon_quic *q);

/* The configured identity |name| (grants included) or NULL. */
const rift_identity *rift_daemon_quic_identity(const rift_daemon_quic *q,
                                               const char *name);

/*
 * rift_daemon_quic_requester names the identity whose pending REQUEST
 * waits on |inbox| (rift_server_requester). Returns 0 or a negative code
 * when the request did not come over this listener.
 */
int rift_daemon_quic_requester(const rift_daemon_quic *q, const char *inbox,
                               size_t len, char name[RIFT_NAME_MAX + 1]);

/* ---- NATS listener (src/nats, docs/nats.md; after the QUIC server) ---- */

typedef struct rift_daemon_nats rift_daemon_nats;

/*
 * rift_daemon_nats_start checks the TLS files (the same texts as the QUIC
 * listener's), builds the identities from the principals (tokens already
 * loaded) and listens on nats.listen; *pn stays NULL without one.
 */
int rift_daemon_nats_start(rift_daemon_nats **pn, rift_broker *broker,
                           const rift_config *cfg, struct rift_quota *quota,
                           rift_error *err);
const char *rift_daemon_nats_address(const rift_daemon_nats *n);
/* Closes every NATS connection and frees |n|. NULL is a no-op. */
void rift_daemon_nats_stop(rift_daemon_nats *n);
/* False when the listener thread ended unexpectedly; NULL is alive. */
bool rift_daemon_nats_alive(const rift_daemon_nats *n);
/* {"address","total","authenticated","by_identity":{...},"accepted",
 * "refused","auth_failures","slow_consumers","producer_pauses","messages",
 * "bytes"}, or
 * JSON null without a listener. New reference. */
json_t *rift_daemon_nats_connections(const rift_daemon_nats *n);

/* ---- Lua plugin host (§7.1; step 3) ---- */

typedef struct rift_daemon_lua rift_daemon_lua;

/*
 * rift_daemon_lua_start starts the plugin host over |broker|: loads the
 * configured plugins and the configuration's own message handlers and
 * subscribes messaging.subscriptions, before riftd reports ready.
 * rift.stream/rift.consumer find |streams| (configured), then |source|'s
 * (run-time streams and channels, pinned per Lua operation); both must
 * outlive the host.
 */
int rift_daemon_lua_start(rift_daemon_lua **pl, rift_broker *broker,
                          rift_daemon_streams *streams,
                          rift_server_stream_source source,
                          const rift_config *cfg, rift_error *err);

/* Applies a reloaded configuration (Lua sources; subscriptions stay). On
 * failure the running plugins are untouched. */
int rift_daemon_lua_reload(rift_daemon_lua *l, const rift_config *cfg,
                           rift_error *err);

/* Aborts the message handlers and unloads the plugins. NULL is a no-op. */
void rift_daemon_lua_stop(rift_daemon_lua *l);

/* [{"name":...,"state":...,...},...] for status. New reference. */
json_t *rift_daemon_lua_plugins(rift_daemon_lua *l, const rift_config *cfg);

#endif /* RIFT_DAEMON_COMPONENTS_H */
