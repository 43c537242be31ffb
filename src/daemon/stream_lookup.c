/*
 * stream_lookup.c — riftd's one namespace of streams (daemon layer): the
 * configured messaging.streams, then the NATS Streaming channels, each
 * channel a stream named after the channel itself (docs/streaming.md
 * "Channels are streams"). A configured stream wins a name both have: the
 * channel keeps working for STAN clients but is not reachable by name from
 * the rift side, and listings leave it out.
 *
 * A channel can be removed at runtime (max_inactivity), so every user
 * outside the STAN service pins it for the time it uses the stream
 * (stan/views.h): the QUIC server per operation through the stream
 * source, the control commands per command through a stream reference.
 */
#include "daemon/daemon_internal.h"

#include "stan/views.h"

#include <string.h>

static rift_stream *source_acquire(void *ud, const char *name, size_t len,
                                   void **token) {
    return rift_stan_channel_acquire(ud, name, len, token);
}

static void source_release(void *ud, void *token, bool appended) {
    rift_stan_channel_release(ud, token, appended);
}

rift_server_stream_source rift_daemon_stream_source(struct rift_stan *s) {
    if (s == NULL) {
        return (rift_server_stream_source){0};
    }
    return (rift_server_stream_source){source_acquire, source_release, s};
}

rift_stream *rift_daemon_stream_acquire(rift_daemon *d, const char *name,
                                        rift_daemon_stream_ref *ref) {
    *ref = (rift_daemon_stream_ref){0};
    ref->stream = rift_daemon_streams_find(d->streams, name);
    if (ref->stream == NULL && d->stan != NULL) {
        ref->stream =
            rift_stan_channel_acquire(d->stan, name, strlen(name), &ref->token);
        ref->stan = ref->stream ? d->stan : NULL;
    }
    return ref->stream;
}

void rift_daemon_stream_release(rift_daemon_stream_ref *ref) {
    if (ref->stan != NULL) {
        rift_stan_channel_release(ref->stan, ref->token, ref->appended);
    }
    *ref = (rift_daemon_stream_ref){0};
}

json_t *rift_daemon_channel_json(rift_daemon *d, const char *name) {
    rift_daemon_stream_ref ref;
    if (rift_daemon_streams_find(d->streams, name) != NULL ||
        rift_daemon_stream_acquire(d, name, &ref) == NULL) {
        return NULL;
    }
    json_t *o = rift_daemon_stream_json(ref.stream, name);
    rift_daemon_stream_release(&ref);
    if (o != NULL) {
        json_object_set_new(o, "channel", json_true());
    }
    return o;
}

int rift_daemon_channels_append(rift_daemon *d, json_t *list) {
    char **names;
    size_t n;
    if (d->stan == NULL) {
        return 0;
    }
    if (rift_stan_channel_names(d->stan, &names, &n) != 0) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        /* NULL: shadowed by a configured stream, or removed meanwhile. */
        json_t *o = rift_daemon_channel_json(d, names[i]);
        if (o != NULL) {
            json_array_append_new(list, o);
        }
    }
    rift_stan_names_free(names, n);
    return 0;
}
