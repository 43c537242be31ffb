/*
 * monitor_metrics.c — the /metrics view of the monitoring listener (daemon
 * layer): a status object (the /status view) in the Prometheus text
 * exposition format 0.0.4. Rendering from the status object, rather than
 * from the components, keeps one source for both views: a number the
 * status shows and the metrics miss (or the reverse) cannot happen.
 */
#include "daemon/monitor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One metric family: where its value sits in an object ("a" or "a.b"). */
typedef struct metric {
    const char *name;
    const char *type; /* "gauge" or "counter" */
    const char *help;
    const char *key;
    const char *sub; /* NULL: key holds the number */
} metric;

static const metric broker_metrics[] = {
    {"rift_uptime_seconds", "gauge", "Seconds since riftd started.",
     "uptime_ms", NULL},
    {"rift_connections", "gauge", "Live remote connections.", "connections",
     "total"},
    {"rift_connections_authenticated", "gauge",
     "Live authenticated remote connections.", "connections", "authenticated"},
    {"rift_subscriptions", "gauge",
     "Live broker subscriptions (local and remote).", "subscriptions", NULL},
    {"rift_slow_consumers_total", "counter",
     "Subscriptions dropped or disconnected as slow consumers.",
     "slow_consumers", NULL},
    {"rift_messages_in_total", "counter", "Messages published to the broker.",
     "messages", "in"},
    {"rift_messages_out_total", "counter", "Messages delivered by the broker.",
     "messages", "out"},
    {"rift_bytes_in_total", "counter", "Payload bytes published.", "bytes",
     "in"},
    {"rift_bytes_out_total", "counter", "Payload bytes delivered.", "bytes",
     "out"},
};

static const metric remote_metrics[] = {
    {"rift_remote_connections_accepted_total", "counter",
     "QUIC connections whose handshake completed.", "accepted", NULL},
    {"rift_remote_connections_refused_total", "counter",
     "QUIC connections refused (limit or shutdown).", "refused", NULL},
    {"rift_remote_auth_failures_total", "counter", "Failed authentications.",
     "auth_failures", NULL},
    {"rift_remote_streams", "gauge", "Open operation streams.", "streams",
     NULL},
    {"rift_remote_subscriptions", "gauge", "Live remote subscriptions.",
     "subscriptions", NULL},
    {"rift_remote_slow_consumers_total", "counter",
     "Remote subscriptions disconnected as slow consumers.", "slow_consumers",
     NULL},
    {"rift_remote_messages_in_total", "counter",
     "Publications accepted from remote clients.", "messages", "in"},
    {"rift_remote_messages_out_total", "counter",
     "MESSAGE and DELIVERY frames written to remote clients.", "messages",
     "out"},
    {"rift_remote_bytes_in_total", "counter",
     "Payload bytes accepted from remote clients.", "bytes", "in"},
    {"rift_remote_bytes_out_total", "counter",
     "Payload bytes written to remote clients.", "bytes", "out"},
};

static const metric cluster_metrics[] = {
    {"rift_cluster_backbone_up", "gauge",
     "1 while the cluster backbone is connected.", "connected", NULL},
    {"rift_cluster_subscriptions", "gauge",
     "NATS subscriptions on the backbone (node inbox included).",
     "subscriptions", NULL},
    {"rift_cluster_messages_out_total", "counter",
     "Local publications handed to the backbone.", "messages", "out"},
    {"rift_cluster_messages_in_total", "counter",
     "Backbone messages delivered to local subscribers.", "messages", "in"},
    {"rift_cluster_echoes_dropped_total", "counter",
     "The node's own publications dropped on their way back.", "messages",
     "echoes_dropped"},
    {"rift_cluster_errors_total", "counter",
     "Backbone publishes or deliveries that failed.", "errors", NULL},
    {"rift_cluster_reconnects_total", "counter",
     "Reconnections to the backbone.", "reconnects", NULL},
};

static const metric stream_metrics[] = {
    {"rift_stream_messages", "gauge", "Records retained.", "messages", NULL},
    {"rift_stream_bytes", "gauge", "Retained record bytes.", "bytes", NULL},
    {"rift_stream_first_sequence", "gauge", "Oldest retained sequence.",
     "first_seq", NULL},
    {"rift_stream_last_sequence", "gauge", "Newest sequence (0: none yet).",
     "last_seq", NULL},
    {"rift_stream_consumers", "gauge", "Durable consumers.", "consumers", NULL},
    {"rift_stream_open", "gauge", "1 when the stream is open.", "open", NULL},
    {"rift_stream_poisoned", "gauge",
     "1 after a write or sync failed (publishes are refused).", "poisoned",
     NULL},
    {"rift_stream_segments", "gauge", "Segment files (file storage).",
     "segments", NULL},
    {"rift_stream_disk_bytes", "gauge", "Segment bytes on disk.", "disk_bytes",
     NULL},
};

static const metric plugin_metrics[] = {
    {"rift_plugin_callbacks_total", "counter", "Lua callbacks run.",
     "callbacks", NULL},
    {"rift_plugin_messages_total", "counter", "Messages handed to the plugin.",
     "messages", NULL},
    {"rift_plugin_errors_total", "counter", "Callbacks that failed.", "errors",
     NULL},
    {"rift_plugin_published_total", "counter", "Messages the plugin published.",
     "published", NULL},
    {"rift_plugin_dropped_total", "counter",
     "Messages dropped before the plugin saw them.", "dropped", NULL},
    {"rift_plugin_memory_bytes", "gauge", "Lua heap in use.", "memory_bytes",
     NULL},
    {"rift_plugin_subscriptions", "gauge", "The plugin's subscriptions.",
     "subscriptions", NULL},
    {"rift_plugin_queued", "gauge", "Messages waiting for the plugin.",
     "queued", NULL},
};

/* The number at m's place in |o|; false when absent or not a number (a
 * sample is left out rather than invented). Booleans count as 0/1. */
static bool value_of(const json_t *o, const metric *m, double *v) {
    const json_t *x = json_object_get(o, m->key);
    if (m->sub != NULL) {
        x = json_object_get(x, m->sub);
    }
    if (json_is_boolean(x)) {
        *v = json_is_true(x) ? 1.0 : 0.0;
        return true;
    }
    if (!json_is_number(x)) {
        return false;
    }
    *v = json_number_value(x);
    if (strcmp(m->key, "uptime_ms") == 0) {
        *v /= 1000.0;
    }
    return true;
}

/* A label value as the format wants it: \\, \" and \n escaped. */
static void put_label(FILE *f, const char *s) {
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"') {
            fputc('\\', f);
            fputc(*s, f);
        } else if (*s == '\n') {
            fputs("\\n", f);
        } else {
            fputc(*s, f);
        }
    }
}

static void put_head(FILE *f, const metric *m) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
            m->type);
}

static void put_value(FILE *f, double v) {
    if (v == (double)(int64_t)v) {
        fprintf(f, " %" PRId64 "\n", (int64_t)v);
    } else {
        fprintf(f, " %.3f\n", v);
    }
}

/* Families of one object (no labels). */
static void put_object(FILE *f, const json_t *o, const metric *ms, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double v;
        if (value_of(o, &ms[i], &v)) {
            put_head(f, &ms[i]);
            fputs(ms[i].name, f);
            put_value(f, v);
        }
    }
}

/* Families over an array of objects, one sample per element labelled
 * label="<element's name>". Samples of a family stay together, as the
 * format requires. */
static void put_list(FILE *f, const json_t *list, const char *label,
                     const metric *ms, size_t n) {
    for (size_t i = 0; i < n; i++) {
        bool head = false;
        size_t j;
        const json_t *el;
        json_array_foreach(list, j, el) {
            const char *name = json_string_value(json_object_get(el, "name"));
            double v;
            if (name == NULL || !value_of(el, &ms[i], &v)) {
                continue;
            }
            if (!head) {
                put_head(f, &ms[i]);
                head = true;
            }
            fprintf(f, "%s{%s=\"", ms[i].name, label);
            put_label(f, name);
            fputs("\"}", f);
            put_value(f, v);
        }
    }
}

/* Connections per identity: {"by_identity":{"<name>":<count>,...}}. */
static void put_identities(FILE *f, const json_t *by_identity) {
    bool head = false;
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)by_identity, name, v) {
        if (!json_is_integer(v)) {
            continue;
        }
        if (!head) {
            fputs("# HELP rift_identity_connections Live authenticated "
                  "connections of one identity.\n"
                  "# TYPE rift_identity_connections gauge\n",
                  f);
            head = true;
        }
        fputs("rift_identity_connections{identity=\"", f);
        put_label(f, name);
        fprintf(f, "\"} %" PRId64 "\n", (int64_t)json_integer_value(v));
    }
}

/* Plugin states as one gauge per plugin with the state as a label. */
static void put_plugin_states(FILE *f, const json_t *plugins) {
    bool head = false;
    size_t i;
    const json_t *el;
    json_array_foreach(plugins, i, el) {
        const char *name = json_string_value(json_object_get(el, "name"));
        const char *state = json_string_value(json_object_get(el, "state"));
        if (name == NULL || state == NULL) {
            continue;
        }
        if (!head) {
            fputs("# HELP rift_plugin_state The plugin's state (value 1).\n"
                  "# TYPE rift_plugin_state gauge\n",
                  f);
            head = true;
        }
        fputs("rift_plugin_state{plugin=\"", f);
        put_label(f, name);
        fputs("\",state=\"", f);
        put_label(f, state);
        fputs("\"} 1\n", f);
    }
}

char *rift_monitor_metrics(const json_t *status, size_t *len) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (f == NULL) {
        return NULL;
    }
    const char *version = json_string_value(json_object_get(status, "version"));
    const char *rev = json_string_value(json_object_get(status, "revision"));
    fputs("# HELP rift_info riftd's version and configuration revision.\n"
          "# TYPE rift_info gauge\nrift_info{version=\"",
          f);
    put_label(f, version ? version : "");
    fputs("\",revision=\"", f);
    put_label(f, rev ? rev : "");
    fputs("\"} 1\n", f);
    put_object(f, status, broker_metrics, RIFT_ARRAY_LEN(broker_metrics));
    put_identities(f, json_object_get(json_object_get(status, "connections"),
                                      "by_identity"));
    const json_t *remote = json_object_get(status, "remote");
    if (json_is_object(remote)) {
        put_object(f, remote, remote_metrics, RIFT_ARRAY_LEN(remote_metrics));
    }
    const json_t *cluster = json_object_get(status, "cluster");
    if (json_is_object(cluster)) {
        put_object(f, cluster, cluster_metrics,
                   RIFT_ARRAY_LEN(cluster_metrics));
    }
    put_list(f, json_object_get(status, "streams"), "stream", stream_metrics,
             RIFT_ARRAY_LEN(stream_metrics));
    const json_t *plugins = json_object_get(status, "plugins");
    put_plugin_states(f, plugins);
    put_list(f, plugins, "plugin", plugin_metrics,
             RIFT_ARRAY_LEN(plugin_metrics));
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}
