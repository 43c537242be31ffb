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
    struct rift_stan *stan; /* NULL without a `streaming` table */
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

/* The control command table (daemon_control.c). */
extern const rift_control_command rift_daemon_commands[];
extern const size_t rift_daemon_n_commands;

#endif /* RIFT_DAEMON_DAEMON_INTERNAL_H */
