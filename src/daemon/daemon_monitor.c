/*
 * daemon_monitor.c — what riftd's monitoring listener shows (daemon
 * layer): the views behind /status and /healthz (monitor.h serves them).
 *
 * /status is `rift status`'s object, with two differences for a listener
 * that needs no authentication: the configuration is named by its file
 * name only (no server path), and each stream lists its consumers' names.
 */
#include "daemon/daemon_internal.h"

#include <string.h>

static void add_consumer_names(rift_daemon *d, json_t *streams) {
    size_t i;
    json_t *el;
    json_array_foreach(streams, i, el) {
        const char *name = json_string_value(json_object_get(el, "name"));
        rift_stream *st =
            name != NULL ? rift_daemon_streams_find(d->streams, name) : NULL;
        rift_stream_info info;
        rift_error err = {0};
        if (st == NULL || rift_stream_get_info(st, &info, &err) != 0) {
            continue;
        }
        json_t *names = json_array();
        for (size_t j = 0; names != NULL && j < info.consumer_count; j++) {
            json_array_append_new(names, json_string(info.consumer_names[j]));
        }
        json_object_set_new(el, "consumer_names",
                            names != NULL ? names : json_null());
        rift_stream_info_free(&info);
    }
}

static json_t *monitor_status(void *ud) {
    rift_daemon *d = ud;
    json_t *o = rift_daemon_status_json(d);
    if (o == NULL) {
        return NULL;
    }
    const char *src = json_string_value(json_object_get(o, "config"));
    if (src != NULL) {
        const char *slash = strrchr(src, '/');
        json_object_set_new(o, "config", json_string(slash ? slash + 1 : src));
    }
    add_consumer_names(d, json_object_get(o, "streams"));
    return o;
}

static bool monitor_healthy(void *ud, const char **why) {
    rift_daemon *d = ud;
    if (atomic_load(&d->draining)) {
        *why = "shutting down";
        return false;
    }
    if (d->quic != NULL && !rift_daemon_quic_alive(d->quic)) {
        *why = "messaging listener stopped";
        return false;
    }
    return true;
}

int rift_daemon_monitor_start(rift_daemon *d, rift_error *err) {
    if (d->cfg.monitor.listen == NULL) {
        return 0;
    }
    rift_monitor_views v = {
        .user_data = d,
        .status = monitor_status,
        .healthy = monitor_healthy,
    };
    int rc = rift_monitor_start(&d->monitor, &d->cfg.monitor, &v, err);
    if (rc == 0) {
        /* The bound address (port 0 shows the real port; tests read it). */
        rift_log(RIFT_LOG_INFO, "rift: monitor HTTP on %s",
                 rift_monitor_address(d->monitor));
    }
    return rc;
}
