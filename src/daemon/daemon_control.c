/*
 * daemon_control.c — riftd's rift.control.* commands for a standalone
 * broker (daemon layer): status, reload and the command table (the stream
 * and consumer commands are in control_streams.c). The bridge
 * (control_bridge.c) has already checked size, JSON shape and field names;
 * these functions produce the "data" value or the error text.
 */
#include "daemon/daemon_internal.h"

#include "daemon/events.h"
#include "daemon/runtime_streams.h"

#include <string.h>

/* ---- status ---- */

json_t *rift_daemon_streams_json(rift_daemon *d) {
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < d->cfg.messaging.n_streams; i++) {
        json_array_append_new(
            list, rift_daemon_stream_summary(d->streams,
                                             &d->cfg.messaging.streams[i]));
    }
    /* Then the streams made at run time and the NATS Streaming channels,
     * which are streams too. */
    if (list != NULL) {
        rift_runtime_streams_append(d->runtime, list);
        (void)rift_daemon_channels_append(d, list);
    }
    return list;
}

json_t *rift_daemon_status_json(rift_daemon *d) {
    rift_broker_stats st;
    rift_broker_get_stats(d->broker, &st);
    pthread_mutex_lock(&d->lock);
    const rift_config_messaging *m = &d->cfg.messaging;
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:I,s:o,s:o,s:b,s:o,s:I,s:I,s:{s:I,s:I},s:{s:I,s:I},"
        "s:o,s:o,s:o}",
        "version", RIFT_VERSION, "revision", d->cfg.revision, "config",
        d->cfg.source_name, "uptime_ms",
        (json_int_t)((rift_now_ns() - d->started_ns) / 1000000u), "listen",
        m->listen ? json_string(m->listen) : json_null(), "address",
        d->quic ? json_string(rift_daemon_quic_address(d->quic)) : json_null(),
        "listening", rift_daemon_quic_alive(d->quic) && d->quic != NULL,
        "connections", rift_daemon_quic_connections(d->quic), "subscriptions",
        (json_int_t)st.subscriptions, "slow_consumers",
        (json_int_t)st.slow_consumers, "messages", "in", (json_int_t)st.msgs_in,
        "out", (json_int_t)st.msgs_out, "bytes", "in", (json_int_t)st.bytes_in,
        "out", (json_int_t)st.bytes_out, "remote",
        rift_daemon_quic_stats(d->quic), "streams", rift_daemon_streams_json(d),
        "plugins", rift_daemon_lua_plugins(d->lua, &d->cfg));
    if (o != NULL) {
        /* The NATS face: its connections by identity (null without it). */
        json_object_set_new(o, "nats", rift_daemon_nats_connections(d->nats));
        json_object_set_new(o, "streaming", rift_daemon_stan_json(d->stan));
        json_object_set_new(o, "cluster",
                            rift_daemon_cluster_json(&d->cluster));
    }
    pthread_mutex_unlock(&d->lock);
    return o;
}

static int cmd_status(void *ud, const rift_control_call *call, json_t **data,
                      rift_error *err) {
    (void)call;
    *data = rift_daemon_status_json(ud);
    if (*data == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* ---- reload ---- */

static int cmd_reload(void *ud, const rift_control_call *call, json_t **data,
                      rift_error *err) {
    rift_daemon *d = ud;
    char rev[17];
    int rc = rift_daemon_reload(d, call->deadline_ns, rev, err);
    if (rc != 0) {
        return rc;
    }
    *data = json_pack("{s:b,s:s,s:s}", "reloaded", 1, "revision", rev,
                      "existing_sessions", "preserved");
    return *data ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

/* ---- Table ---- */

static const char *const no_fields[] = {NULL};
static const char *const name_field[] = {"name", NULL};
static const char *const client_field[] = {"client", NULL};
static const char *const replay_fields[] = {"stream", "from", "limit", NULL};
static const char *const consumer_fields[] = {"stream", "name", "identity",
                                              NULL};
static const char *const open_fields[] = {
    "stream",          "name",     "identity",
    "filter",          "start",    "start_sequence",
    "start_time_ms",   "since_ms", "ack_wait_ms",
    "max_ack_pending", NULL};

const rift_control_command rift_daemon_commands[] = {
    {"status", no_fields, true, cmd_status},
    {"reload", no_fields, false, cmd_reload},
    {"streams", no_fields, false, rift_daemon_cmd_streams},
    {"stream.info", name_field, false, rift_daemon_cmd_stream_info},
    {"stream.replay", replay_fields, false, rift_daemon_cmd_stream_replay},
    {"stream.reopen", name_field, false, rift_daemon_cmd_stream_reopen},
    {"consumer.open", open_fields, false, rift_daemon_cmd_consumer_open},
    {"consumer.info", consumer_fields, false, rift_daemon_cmd_consumer_info},
    {"consumer.delete", consumer_fields, false,
     rift_daemon_cmd_consumer_delete},
    {"streaming.server", no_fields, false, rift_daemon_cmd_streaming_server},
    {"streaming.clients", client_field, false,
     rift_daemon_cmd_streaming_clients},
    {"streaming.channels", name_field, false,
     rift_daemon_cmd_streaming_channels},
};

const size_t rift_daemon_n_commands = RIFT_ARRAY_LEN(rift_daemon_commands);
