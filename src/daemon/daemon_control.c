/*
 * daemon_control.c — riftd's rift.control.* commands for a standalone
 * broker (daemon layer): status, reload, streams, stream.info. The bridge
 * (control.c) has already checked size, JSON shape and field names; these
 * functions produce the "data" value or the error text.
 */
#include "daemon/daemon_internal.h"

#include "daemon/events.h"

#include <string.h>

/* ---- status ---- */

static json_t *streams_array(rift_daemon *d) {
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < d->cfg.messaging.n_streams; i++) {
        json_array_append_new(
            list, rift_daemon_stream_summary(d->streams,
                                             &d->cfg.messaging.streams[i]));
    }
    return list;
}

static int cmd_status(void *ud, json_t *args, rift_tstamp deadline,
                      json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    (void)args;
    (void)deadline;
    rift_broker_stats st;
    rift_broker_get_stats(d->broker, &st);
    pthread_mutex_lock(&d->lock);
    const rift_config_messaging *m = &d->cfg.messaging;
    *data = json_pack(
        "{s:s,s:s,s:s,s:I,s:o,s:b,s:o,s:I,s:I,s:{s:I,s:I},s:{s:I,s:I},s:o,"
        "s:o}",
        "version", RIFT_VERSION, "revision", d->cfg.revision, "config",
        d->cfg.source_name, "uptime_ms",
        (json_int_t)((rift_now_ns() - d->started_ns) / 1000000u), "listen",
        m->listen ? json_string(m->listen) : json_null(), "listening",
        d->quic != NULL, "connections", rift_daemon_quic_connections(d->quic),
        "subscriptions", (json_int_t)st.subscriptions, "slow_consumers",
        (json_int_t)st.slow_consumers, "messages", "in", (json_int_t)st.msgs_in,
        "out", (json_int_t)st.msgs_out, "bytes", "in", (json_int_t)st.bytes_in,
        "out", (json_int_t)st.bytes_out, "streams", streams_array(d), "plugins",
        rift_daemon_lua_plugins(d->lua, &d->cfg));
    pthread_mutex_unlock(&d->lock);
    if (*data == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* ---- reload ---- */

static int cmd_reload(void *ud, json_t *args, rift_tstamp deadline,
                      json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    (void)args;
    char rev[17];
    int rc = rift_daemon_reload(d, deadline, rev, err);
    if (rc != 0) {
        return rc;
    }
    *data = json_pack("{s:b,s:s,s:s}", "reloaded", 1, "revision", rev,
                      "existing_sessions", "preserved");
    return *data ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

/* ---- streams, stream.info ---- */

static int cmd_streams(void *ud, json_t *args, rift_tstamp deadline,
                       json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    (void)args;
    (void)deadline;
    pthread_mutex_lock(&d->lock);
    *data = json_pack("{s:o}", "streams", streams_array(d));
    pthread_mutex_unlock(&d->lock);
    return *data ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

static json_t *string_array(char *const *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < n; i++) {
        json_array_append_new(a, json_string(v[i]));
    }
    return a;
}

static int cmd_stream_info(void *ud, json_t *args, rift_tstamp deadline,
                           json_t **data, rift_error *err) {
    rift_daemon *d = ud;
    (void)deadline;
    json_t *jname = json_object_get(args, "name");
    const char *name = json_is_string(jname) ? json_string_value(jname) : NULL;
    size_t len = name ? json_string_length(jname) : 0;
    if (name == NULL || len == 0 || len > 96 || strlen(name) != len) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "name must be a nonempty string of at most 96 "
                              "bytes");
    }
    pthread_mutex_lock(&d->lock);
    const rift_config_stream *s = rift_config_find_stream(&d->cfg, name);
    if (s == NULL) {
        pthread_mutex_unlock(&d->lock);
        return rift_error_set(err, RIFT_ERR_UNKNOWN_STREAM,
                              "unknown stream \"%s\"; use streams to list "
                              "streams",
                              name);
    }
    json_t *info = rift_daemon_stream_summary(d->streams, s);
    if (info != NULL) {
        json_object_set_new(info, "subjects",
                            string_array(s->subjects, s->n_subjects));
        json_object_set_new(info, "storage_path",
                            s->storage_path ? json_string(s->storage_path)
                                            : json_null());
        json_object_set_new(info, "max_messages",
                            json_integer((json_int_t)s->max_messages));
        json_object_set_new(info, "max_bytes",
                            json_integer((json_int_t)s->max_bytes));
        json_object_set_new(info, "max_payload_bytes",
                            json_integer((json_int_t)s->max_payload_bytes));
        json_object_set_new(info, "max_consumers",
                            json_integer((json_int_t)s->max_consumers));
        json_object_set_new(info, "sync_on_write",
                            json_boolean(s->sync_on_write));
        json_object_set_new(info, "max_age_ms",
                            s->max_age_ms
                                ? json_integer((json_int_t)s->max_age_ms)
                                : json_null());
    }
    pthread_mutex_unlock(&d->lock);
    *data = info;
    return info ? 0 : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
}

/* ---- Table ---- */

static const char *const no_fields[] = {NULL};
static const char *const name_field[] = {"name", NULL};

const rift_control_command rift_daemon_commands[] = {
    {"status", no_fields, true, cmd_status},
    {"reload", no_fields, false, cmd_reload},
    {"streams", no_fields, false, cmd_streams},
    {"stream.info", name_field, false, cmd_stream_info},
};

const size_t rift_daemon_n_commands = RIFT_ARRAY_LEN(rift_daemon_commands);
