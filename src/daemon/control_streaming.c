/*
 * control_streaming.c — the NATS Streaming views (daemon layer): the
 * control commands streaming.server, streaming.clients and
 * streaming.channels, and the monitor's /streaming/serverz, clientsz and
 * channelsz, which keep nats-streaming-server's JSON names (Serverz,
 * Clientz, Channelz, Subscriptionz in its server/monitor.go) so that
 * existing monitoring scripts keep working. docs/riftd.md documents both.
 *
 * Every answer is built from one snapshot of the service taken under its
 * lock (rift_stan_view_take), never from live state.
 */
#include "daemon/daemon_internal.h"

#include "stan/views.h"

#include <string.h>

static int no_service(rift_error *err) {
    return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                          "NATS Streaming is not configured (no `streaming` "
                          "table)");
}

static json_t *sub_json(const rift_stan_sub_view *s) {
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:b,s:b,s:I,s:I,s:I,s:I,s:b,s:s}", "client_id",
        s->client_id, "inbox", s->inbox, "ack_inbox", s->ack_inbox,
        "is_durable", s->is_durable, "is_offline", s->is_offline,
        "max_inflight", (json_int_t)s->max_inflight, "ack_wait",
        (json_int_t)s->ack_wait_s, "last_sent", (json_int_t)s->last_sent,
        "pending_count", (json_int_t)s->pending_count, "is_stalled",
        s->is_stalled, "consumer", s->consumer);
    /* omitempty in the original */
    if (o != NULL && s->durable_name != NULL && s->durable_name[0]) {
        json_object_set_new(o, "durable_name", json_string(s->durable_name));
    }
    if (o != NULL && s->queue_name != NULL && s->queue_name[0]) {
        json_object_set_new(o, "queue_name", json_string(s->queue_name));
    }
    return o;
}

static json_t *channel_json(const rift_stan_channel_view *c, bool subs) {
    json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I}", "name", c->name, "msgs",
                          (json_int_t)c->msgs, "bytes", (json_int_t)c->bytes,
                          "first_seq", (json_int_t)c->first_seq, "last_seq",
                          (json_int_t)c->last_seq);
    if (o != NULL && subs && c->nsubs > 0) {
        json_t *a = json_array();
        for (size_t i = 0; a != NULL && i < c->nsubs; i++) {
            json_array_append_new(a, sub_json(&c->subs[i]));
        }
        json_object_set_new(o, "subscriptions", a ? a : json_null());
    }
    return o;
}

/* The client's live subscriptions by channel (the original's map). */
static json_t *client_subs(const rift_stan_view *v, const char *id) {
    json_t *m = json_object();
    for (size_t i = 0; m != NULL && i < v->nchannels; i++) {
        const rift_stan_channel_view *c = &v->channels[i];
        for (size_t j = 0; j < c->nsubs; j++) {
            const rift_stan_sub_view *s = &c->subs[j];
            if (s->is_offline || strcmp(s->client_id, id) != 0) {
                continue;
            }
            json_t *a = json_object_get(m, c->name);
            if (a == NULL) {
                a = json_array();
                json_object_set_new(m, c->name, a);
            }
            json_array_append_new(a, sub_json(s));
        }
    }
    return m;
}

static json_t *client_json(const rift_stan_view *v,
                           const rift_stan_client_view *c, bool subs) {
    json_t *o = json_pack("{s:s,s:s,s:I}", "id", c->id, "hb_inbox", c->hb_inbox,
                          "subscriptions_count", (json_int_t)c->subscriptions);
    if (o != NULL && subs && c->subscriptions > 0) {
        json_object_set_new(o, "subscriptions", client_subs(v, c->id));
    }
    return o;
}

static json_t *serverz(const rift_stan_view *v) {
    return json_pack(
        "{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:s}", "cluster_id", v->cluster_id,
        "version", RIFT_VERSION, "state", "STANDALONE", "clients",
        (json_int_t)v->nclients, "subscriptions", (json_int_t)v->subscriptions,
        "channels", (json_int_t)v->nchannels, "total_msgs",
        (json_int_t)v->total_msgs, "total_bytes", (json_int_t)v->total_bytes,
        "store", v->file_store ? "FILE" : "MEMORY");
}

static json_t *clientsz(const rift_stan_view *v, const char *only, bool subs,
                        rift_error *err) {
    for (size_t i = 0; only != NULL && i < v->nclients; i++) {
        if (strcmp(v->clients[i].id, only) == 0) {
            return client_json(v, &v->clients[i], subs);
        }
    }
    if (only != NULL) {
        rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "Client %s not found",
                       only);
        return NULL;
    }
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < v->nclients; i++) {
        json_array_append_new(a, client_json(v, &v->clients[i], subs));
    }
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:o}", "cluster_id", v->cluster_id,
                     "offset", (json_int_t)0, "limit", (json_int_t)v->nclients,
                     "count", (json_int_t)v->nclients, "total",
                     (json_int_t)v->nclients, "clients", a ? a : json_null());
}

static json_t *channelsz(const rift_stan_view *v, const char *only, bool subs,
                         rift_error *err) {
    if (only != NULL) {
        if (v->nchannels == 0) {
            rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                           "Channel %s not found", only);
            return NULL;
        }
        return channel_json(&v->channels[0], subs);
    }
    json_t *a = json_array();
    for (size_t i = 0; a != NULL && i < v->nchannels; i++) {
        json_array_append_new(a, subs ? channel_json(&v->channels[i], true)
                                      : json_string(v->channels[i].name));
    }
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:o}", "cluster_id", v->cluster_id,
                     "offset", (json_int_t)0, "limit", (json_int_t)v->nchannels,
                     "count", (json_int_t)v->nchannels, "total",
                     (json_int_t)v->nchannels, subs ? "channels" : "names",
                     a ? a : json_null());
}

int rift_daemon_streaming_view(rift_daemon *d, rift_daemon_streaming_which w,
                               const char *only, bool subs, json_t **out,
                               rift_error *err) {
    *out = NULL;
    if (d->stan == NULL) {
        return no_service(err);
    }
    rift_stan_view v;
    int rc = rift_stan_view_take(
        d->stan, w == RIFT_STREAMING_CHANNELS ? only : NULL, &v, err);
    if (rc == 0) {
        rift_error why = {0};
        switch (w) {
        case RIFT_STREAMING_SERVER:
            *out = serverz(&v);
            break;
        case RIFT_STREAMING_CLIENTS:
            *out = clientsz(&v, only, subs, &why);
            break;
        default:
            *out = channelsz(&v, only, subs, &why);
            break;
        }
        if (*out == NULL) {
            rc = why.code
                     ? rift_error_set(err, why.code, "%s", why.text)
                     : rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
        }
    }
    rift_stan_view_free(&v);
    return rc;
}

/* ---- Control commands: always with the subscriptions ---- */

static int only_arg(const rift_control_call *call, const char *key,
                    const char **out, rift_error *err) {
    json_t *v = json_object_get(call->args, key);
    *out = NULL;
    if (v == NULL) {
        return 0;
    }
    size_t len = json_is_string(v) ? json_string_length(v) : 0;
    if (len == 0 || strlen(json_string_value(v)) != len) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "%s must be a nonempty string", key);
    }
    *out = json_string_value(v);
    return 0;
}

int rift_daemon_cmd_streaming_server(void *ud, const rift_control_call *call,
                                     json_t **data, rift_error *err) {
    (void)call;
    return rift_daemon_streaming_view(ud, RIFT_STREAMING_SERVER, NULL, true,
                                      data, err);
}

int rift_daemon_cmd_streaming_clients(void *ud, const rift_control_call *call,
                                      json_t **data, rift_error *err) {
    const char *id;
    int rc = only_arg(call, "client", &id, err);
    return rc != 0 ? rc
                   : rift_daemon_streaming_view(ud, RIFT_STREAMING_CLIENTS, id,
                                                true, data, err);
}

int rift_daemon_cmd_streaming_channels(void *ud, const rift_control_call *call,
                                       json_t **data, rift_error *err) {
    const char *name;
    int rc = only_arg(call, "name", &name, err);
    return rc != 0 ? rc
                   : rift_daemon_streaming_view(ud, RIFT_STREAMING_CHANNELS,
                                                name, true, data, err);
}
