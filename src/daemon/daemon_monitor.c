/*
 * daemon_monitor.c — what riftd's monitoring listener shows (daemon
 * layer): the views behind /status and /healthz (monitor.h serves them).
 *
 * /status is `rift status`'s object, with two differences for a listener
 * that needs no authentication: the configuration is named by its file
 * name only (no server path), and each stream lists its consumers' names.
 */
#include "daemon/daemon_internal.h"

#include <stdio.h>
#include <string.h>

static void add_consumer_names(rift_daemon *d, json_t *streams) {
    size_t i;
    json_t *el;
    json_array_foreach(streams, i, el) {
        const char *name = json_string_value(json_object_get(el, "name"));
        /* A channel is pinned while its names are read. */
        rift_daemon_stream_ref ref = {0};
        rift_stream *st =
            name != NULL ? rift_daemon_stream_acquire(d, name, &ref) : NULL;
        rift_stream_info info;
        rift_error err = {0};
        int rc = st != NULL ? rift_stream_get_info(st, &info, &err) : -1;
        rift_daemon_stream_release(&ref);
        if (rc != 0) {
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

/* /streaming/<view>: unknown views and the service's absence are 404, as
 * is an unknown client or channel (the original's answer). */
static json_t *monitor_streaming(void *ud, const char *view, const char *only,
                                 bool subs, unsigned *code, char *why,
                                 size_t why_cap) {
    rift_daemon *d = ud;
    static const char *const names[] = {"serverz", "clientsz", "channelsz"};
    size_t w = 0;
    while (w < RIFT_ARRAY_LEN(names) && strcmp(view, names[w]) != 0) {
        w++;
    }
    *code = 404;
    if (w == RIFT_ARRAY_LEN(names) || d->stan == NULL) {
        snprintf(why, why_cap, "unknown path");
        return NULL;
    }
    json_t *o = NULL;
    rift_error err = {0};
    if (rift_daemon_streaming_view(d, (rift_daemon_streaming_which)w, only,
                                   subs, &o, &err) != 0) {
        *code = err.code == RIFT_ERR_NOMEM ? 500 : 404;
        snprintf(why, why_cap, "%s", err.text);
    }
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
        .streaming = monitor_streaming,
    };
    int rc = rift_monitor_start(&d->monitor, &d->cfg.monitor, &v, err);
    if (rc == 0) {
        /* The bound address (port 0 shows the real port; tests read it). */
        rift_log(RIFT_LOG_INFO, "rift: monitor HTTP on %s",
                 rift_monitor_address(d->monitor));
    }
    return rc;
}
