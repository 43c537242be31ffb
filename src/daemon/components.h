/*
 * components.h — the seams between riftd's runtime and the components
 * built by other issues (daemon layer): durable streams (src/store), the
 * QUIC server (src/server + src/quic) and the Lua plugin host (src/lua).
 *
 * Each component is an opaque handle with start/stop and a JSON view for
 * the control commands. Until a component lands, its functions here are
 * stubs marked TODO that keep the start-up order of §5.2 and report the
 * configured shape with zero counters; riftd's runtime (daemon.c) never
 * needs to change when a stub is replaced.
 */
#ifndef RIFT_DAEMON_COMPONENTS_H
#define RIFT_DAEMON_COMPONENTS_H

#include "daemon/config.h"
#include "rift/broker.h"

#include <jansson.h>

/* ---- Streams (§4; step 1 of the start-up order) ---- */

typedef struct rift_daemon_streams rift_daemon_streams;

/*
 * Opens every configured stream (creating storage directories). A failure
 * names the stream: "messaging.streams.<name>: <error>".
 */
int rift_daemon_streams_open(rift_daemon_streams **ps, const rift_config *cfg,
                             rift_error *err);
void rift_daemon_streams_close(rift_daemon_streams *s);

/* One stream's summary for status/streams: name, storage, counters
 * (messages, bytes, first_seq, last_seq, consumers). New reference. */
json_t *rift_daemon_stream_summary(rift_daemon_streams *s,
                                   const rift_config_stream *cfg);

/* ---- QUIC server (§2, §5.2 step 2) ---- */

typedef struct rift_daemon_quic rift_daemon_quic;

/*
 * Builds TLS and identities from |cfg| (tokens already loaded) and binds
 * the listener; *pq stays NULL when no listener is configured. Errors
 * carry the §5.2 texts (certificate/private key PEM, bind failures).
 */
int rift_daemon_quic_start(rift_daemon_quic **pq, rift_broker *broker,
                           rift_daemon_streams *streams, const rift_config *cfg,
                           rift_error *err);

/* Closes the endpoint (code 0, "server shutdown"), waits up to 2 s. */
void rift_daemon_quic_stop(rift_daemon_quic *q);

/* False when the server task ended unexpectedly (the 1 s watchdog). */
bool rift_daemon_quic_alive(const rift_daemon_quic *q);

/* {"total":n,"by_identity":{"<name>":n,...}}. New reference. */
json_t *rift_daemon_quic_connections(const rift_daemon_quic *q);

/* ---- Lua plugin host (§7.1; step 3) ---- */

typedef struct rift_daemon_lua rift_daemon_lua;

/* Loads the plugins and registers the messaging.subscriptions handlers. */
int rift_daemon_lua_start(rift_daemon_lua **pl, rift_broker *broker,
                          const rift_config *cfg, rift_error *err);

/* Applies a reloaded configuration (Lua sources; subscriptions stay). */
int rift_daemon_lua_reload(rift_daemon_lua *l, const rift_config *cfg,
                           rift_error *err);

/* Aborts the message handlers and unloads the plugins. */
void rift_daemon_lua_stop(rift_daemon_lua *l);

/* [{"name":...,"state":...},...] for status. New reference. */
json_t *rift_daemon_lua_plugins(const rift_daemon_lua *l,
                                const rift_config *cfg);

#endif /* RIFT_DAEMON_COMPONENTS_H */
