/*
 * daemon_internal.h — the rift_daemon structure, shared by the runtime
 * (daemon.c) and the control commands (daemon_control.c). Daemon layer.
 */
#ifndef RIFT_DAEMON_DAEMON_INTERNAL_H
#define RIFT_DAEMON_DAEMON_INTERNAL_H

#include "daemon/components.h"
#include "daemon/control_bridge.h"
#include "daemon/daemon.h"
#include "daemon/monitor.h"

#include <pthread.h>
#include <stdatomic.h>

struct rift_daemon {
    rift_daemon_options opts;
    char *config_path; /* NULL: development configuration */
    rift_dev_state dev;
    /* |lock| guards cfg: the signal loop and the control bridge both read
     * and replace it. */
    pthread_mutex_t lock;
    rift_config cfg;
    rift_tstamp started_ns;
    rift_broker *broker;
    rift_daemon_streams *streams;
    rift_daemon_cluster cluster; /* cluster.c NULL without `cluster` */
    struct rift_stan *stan;      /* NULL without a `streaming` table */
    /* Streams made at run time (runtime_streams.c), opened after the
     * configured ones and before any listener. */
    struct rift_runtime_streams *runtime;
    rift_daemon_quic *quic;
    rift_daemon_nats *nats;   /* NULL without nats.listen */
    struct rift_quota *quota; /* per-identity accounting of the front ends */
    rift_daemon_lua *lua;
    rift_control *control;
    rift_monitor *monitor; /* NULL without a `monitor` table */
    /* Set when shutdown begins: /healthz answers 503 from then on. */
    atomic_bool draining;
    bool shut_down;
};

/* The `rift status` object (daemon_control.c): version, uptime, listener,
 * connections, subscriptions, message counters, remote server counters,
 * streams and plugins. Takes |lock|. New reference, NULL when out of
 * memory. */
json_t *rift_daemon_status_json(rift_daemon *d);

/* Starts the monitoring listener when the configuration has one
 * (daemon_monitor.c); errors are rift_monitor_start's. */
int rift_daemon_monitor_start(rift_daemon *d, rift_error *err);

/* Commands on streams and consumers (control_streams.c). */
int rift_daemon_cmd_streams(void *ud, const rift_control_call *call,
                            json_t **data, rift_error *err);
int rift_daemon_cmd_stream_info(void *ud, const rift_control_call *call,
                                json_t **data, rift_error *err);
int rift_daemon_cmd_stream_replay(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err);
int rift_daemon_cmd_stream_reopen(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err);
int rift_daemon_cmd_consumer_open(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err);
int rift_daemon_cmd_consumer_info(void *ud, const rift_control_call *call,
                                  json_t **data, rift_error *err);
int rift_daemon_cmd_consumer_delete(void *ud, const rift_control_call *call,
                                    json_t **data, rift_error *err);

/* Every stream's summary, configuration order; call with |lock| held. New
 * reference. */
json_t *rift_daemon_streams_json(rift_daemon *d);

/* ---- One namespace of streams (stream_lookup.c) ---- */

/* A stream in use by a control command or a view: a configured one, or a
 * run-time stream or NATS Streaming channel pinned until
 * rift_daemon_stream_release. */
typedef struct rift_daemon_stream_ref {
    rift_stream *stream;
    rift_daemon *d; /* set when a run-time stream or channel is pinned */
    void *token;
    bool appended; /* records were stored through it: wake the service */
} rift_daemon_stream_ref;

/* The QUIC server's stream source (run-time streams, then channels) and
 * stream administration over |d| (stream_lookup.c). The Lua host uses the
 * same source from its worker threads (plugins.c): acquire and release
 * are thread-safe (a run-time stream's under its registry lock, a
 * channel's under reg_lock / atomic plus the service's wake fd), and a
 * release may close a deleted run-time stream on the releasing thread. */
rift_server_stream_source rift_daemon_stream_source(rift_daemon *d);
rift_server_stream_admin rift_daemon_stream_admin(rift_daemon *d);

/* The stream |name| (configured first, then run-time streams, then
 * channels) or NULL; release
 * the reference in any case. */
rift_stream *rift_daemon_stream_acquire(rift_daemon *d, const char *name,
                                        rift_daemon_stream_ref *ref);
void rift_daemon_stream_release(rift_daemon_stream_ref *ref);

/* The channel |name|'s entry of `streams` (the rift_daemon_stream_json
 * fields plus "channel": true), or NULL when there is no such channel or a
 * configured stream has the name. New reference. */
json_t *rift_daemon_channel_json(rift_daemon *d, const char *name);

/* Appends every channel's entry to |list|, sorted by name.
 * RIFT_ERR_NOMEM. */
int rift_daemon_channels_append(rift_daemon *d, json_t *list);

/* ---- NATS Streaming views (control_streaming.c) ---- */

typedef enum rift_daemon_streaming_which {
    RIFT_STREAMING_SERVER,
    RIFT_STREAMING_CLIENTS,
    RIFT_STREAMING_CHANNELS,
} rift_daemon_streaming_which;

/* The /streaming/serverz, clientsz or channelsz object in *out (new
 * reference): |only| names one client or channel (its object alone, else
 * "Client|Channel <name> not found"), |subs| adds the subscriptions (the
 * original's ?subs=1; without it channelsz lists names only). Errors:
 * RIFT_ERR_INVALID_ARGUMENT (no service, not found), RIFT_ERR_NOMEM. */
int rift_daemon_streaming_view(rift_daemon *d, rift_daemon_streaming_which w,
                               const char *only, bool subs, json_t **out,
                               rift_error *err);
int rift_daemon_cmd_streaming_server(void *ud, const rift_control_call *call,
                                     json_t **data, rift_error *err);
int rift_daemon_cmd_streaming_clients(void *ud, const rift_control_call *call,
                                      json_t **data, rift_error *err);
int rift_daemon_cmd_streaming_channels(void *ud, const rift_control_call *call,
                                       json_t **data, rift_error *err);

/* The control command table (daemon_control.c). */
extern const rift_control_command rift_daemon_commands[];
extern const size_t rift_daemon_n_commands;

#endif /* RIFT_DAEMON_DAEMON_INTERNAL_H */
