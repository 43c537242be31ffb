/*
 * stream_lookup.c — riftd's one namespace of streams (daemon layer): the
 * configured messaging.streams, then the streams made at run time
 * (runtime_streams.c), then the NATS Streaming channels, each
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

#include "daemon/runtime_streams.h"
#include "stan/views.h"

#include <stdint.h>
#include <string.h>

/* A run-time stream's token carries bit 0 (its registry entry is
 * malloc-aligned, as is a channel's), so release knows whose it is. */
#define RUNTIME_TAG ((uintptr_t)1)

static rift_stream *acquire_runtime(rift_daemon *d, const char *name,
                                    size_t len, void **token) {
    void *t = NULL;
    rift_stream *st = rift_runtime_streams_acquire(d->runtime, name, len, &t);
    *token = st != NULL ? (void *)((uintptr_t)t | RUNTIME_TAG) : NULL;
    return st;
}

static void release_any(rift_daemon *d, void *token, bool appended) {
    if (((uintptr_t)token & RUNTIME_TAG) != 0) {
        rift_runtime_streams_release(d->runtime,
                                     (void *)((uintptr_t)token & ~RUNTIME_TAG));
    } else if (d->stan != NULL) {
        rift_stan_channel_release(d->stan, token, appended);
    }
}

static rift_stream *source_acquire(void *ud, const char *name, size_t len,
                                   void **token) {
    rift_daemon *d = ud;
    rift_stream *st = acquire_runtime(d, name, len, token);
    if (st == NULL && d->stan != NULL) {
        st = rift_stan_channel_acquire(d->stan, name, len, token);
    }
    return st;
}

static void source_release(void *ud, void *token, bool appended) {
    release_any(ud, token, appended);
}

static int admin_call(void *ud, const rift_server_stream_request *req,
                      rift_error *err) {
    rift_daemon *d = ud;
    if (req->verb == RIFT_SERVER_STREAM_CREATE && d->stan != NULL) {
        void *token;
        size_t len = strlen(req->name);
        if (rift_stan_channel_acquire(d->stan, req->name, len, &token) !=
            NULL) {
            rift_stan_channel_release(d->stan, token, false);
            return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                                  "stream already exists");
        }
    }
    return rift_runtime_streams_admin(d->runtime, req, err);
}

rift_server_stream_source rift_daemon_stream_source(rift_daemon *d) {
    return (rift_server_stream_source){source_acquire, source_release, d};
}

rift_server_stream_admin rift_daemon_stream_admin(rift_daemon *d) {
    return (rift_server_stream_admin){admin_call, d};
}

rift_stream *rift_daemon_stream_acquire(rift_daemon *d, const char *name,
                                        rift_daemon_stream_ref *ref) {
    *ref = (rift_daemon_stream_ref){0};
    ref->stream = rift_daemon_streams_find(d->streams, name);
    if (ref->stream == NULL) {
        ref->stream = source_acquire(d, name, strlen(name), &ref->token);
        ref->d = ref->stream ? d : NULL;
    }
    return ref->stream;
}

void rift_daemon_stream_release(rift_daemon_stream_ref *ref) {
    if (ref->d != NULL) {
        release_any(ref->d, ref->token, ref->appended);
    }
    *ref = (rift_daemon_stream_ref){0};
}

json_t *rift_daemon_channel_json(rift_daemon *d, const char *name) {
    rift_daemon_stream_ref ref;
    if (rift_daemon_streams_find(d->streams, name) != NULL ||
        rift_daemon_stream_acquire(d, name, &ref) == NULL) {
        return NULL;
    }
    if (((uintptr_t)ref.token & RUNTIME_TAG) != 0) {
        rift_daemon_stream_release(&ref); /* a run-time stream wins */
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
