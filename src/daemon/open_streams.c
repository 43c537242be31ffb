/*
 * open_streams.c — riftd's durable streams (daemon layer): the configured
 * messaging.streams opened with the store (include/rift/stream.h) at
 * start-up (all but the replicated ones, which live in the cluster's
 * JetStream), shared with the QUIC server, the Lua host and the control
 * commands, and closed last at shutdown. See components.h.
 */
#include "daemon/components.h"

#include "daemon/events.h"
#include "daemon/files.h"

#include <errno.h>
#include <string.h>

typedef struct daemon_stream {
    char *name;
    rift_stream *stream;
    bool file;
    rift_broker *broker; /* rift_daemon_streams_advise */
} daemon_stream;

struct rift_daemon_streams {
    daemon_stream *v; /* configuration order: sorted by name */
    size_t n;
};

static int open_one(daemon_stream *ds, const rift_config_stream *c,
                    rift_error *err) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.subjects = (const char *const *)c->subjects;
    s.subjects_count = c->n_subjects;
    s.max_messages = c->max_messages;
    s.max_bytes = c->max_bytes;
    s.max_payload_bytes = c->max_payload_bytes;
    s.max_consumers = (uint32_t)c->max_consumers;
    s.sync_on_write = c->sync_on_write;
    s.max_age_ms = c->max_age_ms;
    s.storage_path = c->storage_path;
    ds->file = c->storage_path != NULL;
    ds->name = rift_strndup(NULL, c->name, strlen(c->name));
    if (ds->name == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    /* The store creates what is missing 0700; a directory from an older
     * riftd (0755) would leave its segments readable by everyone. */
    int rc = ds->file ? rift_dir_narrow(c->storage_path) : 0;
    if (rc != 0 && rc != -ENOENT) {
        return rift_error_set(err, RIFT_ERR_STORAGE,
                              "messaging.streams.%s: %s: %s", c->name,
                              c->storage_path, strerror(-rc));
    }
    rift_error why = {0};
    rc = rift_stream_new(&ds->stream, &s, &why);
    if (rc != 0) {
        return rift_error_set(err, rc, "messaging.streams.%s: %s", c->name,
                              why.text);
    }
    return 0;
}

int rift_daemon_streams_open(rift_daemon_streams **ps, const rift_config *cfg,
                             rift_error *err) {
    const rift_config_messaging *m = &cfg->messaging;
    rift_daemon_streams *s = rift_calloc(NULL, 1, sizeof(*s));
    if (s == NULL ||
        (m->n_streams > 0 &&
         (s->v = rift_calloc(NULL, m->n_streams, sizeof(*s->v))) == NULL)) {
        rift_free(NULL, s);
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < m->n_streams; i++) {
        if (m->streams[i].replicas > 1) {
            continue; /* the cluster backbone holds it (cluster_node.c) */
        }
        daemon_stream *ds = &s->v[s->n++]; /* cleaned up also on failure */
        int rc = open_one(ds, &m->streams[i], err);
        if (rc != 0) {
            rift_daemon_streams_close(s);
            return rc;
        }
        rift_log(RIFT_LOG_DEBUG, "rift: stream %s open (%s)", ds->name,
                 m->streams[i].storage_path ? m->streams[i].storage_path
                                            : "memory");
    }
    *ps = s;
    return 0;
}

/* The consumer's label (the client's name of a remote consumer) when it
 * has one, else its stored name. */
void rift_daemon_advise_max_deliver(rift_broker *broker, const char *stream,
                                    const rift_consumer_advisory *a) {
    const char *name = a->label != NULL ? a->label : a->consumer;
    size_t len = a->label != NULL ? a->label_len : a->consumer_len;
    (void)rift_events_max_deliver(broker, stream, name, len, a->sequence,
                                  a->deliveries);
}

/* A record dropped after max_deliver deliveries, on the fetching thread. */
static void advise(void *arg, const rift_consumer_advisory *a) {
    daemon_stream *ds = arg;
    rift_daemon_advise_max_deliver(ds->broker, ds->name, a);
}

void rift_daemon_streams_advise(rift_daemon_streams *s, rift_broker *broker) {
    for (size_t i = 0; i < s->n; i++) {
        s->v[i].broker = broker;
        rift_stream_set_advisory_watch(s->v[i].stream, advise, &s->v[i]);
    }
}

void rift_daemon_streams_close(rift_daemon_streams *s) {
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        daemon_stream *ds = &s->v[i];
        if (ds->stream != NULL && ds->file) {
            /* A snapshot of the consumer state makes the next start's
             * recovery short; close syncs in any case. */
            rift_error err = {0};
            if (rift_stream_checkpoint(ds->stream, &err) != 0) {
                rift_log(RIFT_LOG_WARN, "rift: stream %s: %s", ds->name,
                         err.text);
            }
        }
        rift_stream_del(ds->stream);
        rift_free(NULL, ds->name);
    }
    rift_free(NULL, s->v);
    rift_free(NULL, s);
}

rift_stream *rift_daemon_streams_find(const rift_daemon_streams *s,
                                      const char *name) {
    for (size_t i = 0; s != NULL && i < s->n; i++) {
        if (strcmp(s->v[i].name, name) == 0) {
            return s->v[i].stream;
        }
    }
    return NULL;
}

size_t rift_daemon_streams_count(const rift_daemon_streams *s) {
    return s != NULL ? s->n : 0;
}

rift_stream *rift_daemon_streams_at(const rift_daemon_streams *s, size_t i,
                                    const char **name) {
    *name = s->v[i].name;
    return s->v[i].stream;
}

json_t *rift_daemon_stream_json(rift_stream *st, const char *name) {
    rift_stream_info info = {0};
    rift_error err = {0};
    bool open = st != NULL && rift_stream_get_info(st, &info, &err) == 0;
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:b}", "name", name, "storage",
                  info.durable ? "file" : "memory", "messages",
                  (json_int_t)info.messages, "bytes", (json_int_t)info.bytes,
                  "first_seq", (json_int_t)info.first_sequence, "last_seq",
                  (json_int_t)info.last_sequence, "consumers",
                  (json_int_t)info.consumer_count, "open", open);
    if (o != NULL && open) {
        json_object_set_new(o, "poisoned", json_boolean(info.poisoned));
        if (info.durable) {
            json_object_set_new(o, "segments",
                                json_integer((json_int_t)info.segments));
            json_object_set_new(o, "disk_bytes",
                                json_integer((json_int_t)info.disk_bytes));
        }
    }
    if (open) {
        rift_stream_info_free(&info);
    }
    return o;
}

json_t *rift_daemon_stream_summary(rift_daemon_streams *s,
                                   const rift_config_stream *cfg) {
    json_t *o = rift_daemon_stream_json(rift_daemon_streams_find(s, cfg->name),
                                        cfg->name);
    if (o != NULL) {
        /* The configuration says, also for a stream that failed to open. */
        json_object_set_new(o, "storage",
                            json_string(cfg->replicas > 1   ? "replicated"
                                        : cfg->storage_path ? "file"
                                                            : "memory"));
    }
    return o;
}
