/*
 * views.c — snapshots of the STAN service for monitoring (stan layer; see
 * views.h): clients, channels and their subscriptions, with what
 * nats-streaming-server's Clientz, Channelz and Subscriptionz carry. The
 * snapshot is copied out under the service lock, so the caller formats
 * it without holding anything.
 *
 * Offline durables (a durable closed by its client, a durable queue group
 * whose last member left) exist only as consumers of the channel's stream
 * ("d-…", "q-…", subs.c): they are listed from the stream with what the
 * consumer knows (pending, ack wait). A "d-<client>-<durable>" name does
 * not say where the client ID ends (both may hold '-'), so only the
 * consumer name identifies such an entry.
 */
#include "stan/internal.h"
#include "stan/views.h"

#include <stdlib.h>
#include <string.h>

typedef struct builder {
    rift_stan *svc;
    bool oom;
} builder;

static char *dup(builder *b, const char *s) {
    if (!s) {
        return NULL;
    }
    char *d = rift_strndup(NULL, s, strlen(s));
    b->oom |= d == NULL;
    return d;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

/* unescape reverses subs.c's %XX escaping of a consumer-name part. */
static char *unescape(builder *b, const char *s, size_t len) {
    char *out = rift_calloc(NULL, 1, len + 1);
    if (!out) {
        b->oom = true;
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        int hi = 0, lo = 0;
        if (s[i] == '%' && i + 2 < len && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            out[n++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[n++] = s[i];
        }
    }
    return out;
}

static void sub_view_from_live(builder *b, rift_stan_sub_view *v,
                               const stan_sub *s) {
    stan_feed *f = s->feed;
    v->client_id = dup(b, s->client ? s->client->id : "");
    v->inbox = dup(b, s->inbox);
    v->ack_inbox = dup(b, s->ack_inbox);
    v->durable_name = dup(b, s->durable);
    v->queue_name = dup(b, s->q_group);
    v->consumer = dup(b, f->name);
    v->is_durable = f->durable;
    v->max_inflight = s->max_in_flight > 0 ? (uint32_t)s->max_in_flight : 0;
    v->ack_wait_s = s->ack_wait_s > 0 ? (uint32_t)s->ack_wait_s : 0;
    v->last_sent = s->last_sent;
    v->pending_count = rift_push_member_pending(f->push, s);
    v->is_stalled = v->pending_count >= v->max_inflight;
}

static bool feed_live(const stan_channel *ch, const char *name) {
    for (const stan_feed *f = ch->feeds; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* An offline durable from its consumer; false when |name| is not one. */
static bool sub_view_offline(builder *b, rift_stan_sub_view *v,
                             stan_channel *ch, const char *name) {
    bool d = strncmp(name, "d-", 2) == 0, q = strncmp(name, "q-", 2) == 0;
    if ((!d && !q) || feed_live(ch, name)) {
        return false;
    }
    rift_consumer *c = NULL;
    rift_consumer_info info;
    if (rift_stream_consumer_get(ch->stream, name, strlen(name), &c, NULL) !=
            0 ||
        rift_consumer_get_info(c, &info, NULL) != 0) {
        rift_consumer_close(c);
        return false;
    }
    memset(v, 0, sizeof *v);
    v->client_id = dup(b, "");
    v->inbox = dup(b, "");
    v->ack_inbox = dup(b, "");
    v->consumer = dup(b, name);
    v->is_durable = true;
    v->is_offline = true;
    v->ack_wait_s = (uint32_t)(info.config.ack_wait_ms / 1000u);
    v->pending_count = info.pending;
    const char *colon = q ? strchr(name + 2, ':') : NULL;
    if (colon) {
        /* "q-<durable>:<group>": the durable name cannot hold ':'. */
        v->durable_name = unescape(b, name + 2, (size_t)(colon - name - 2));
        v->queue_name = unescape(b, colon + 1, strlen(colon + 1));
    }
    rift_consumer_close(c);
    return true;
}

static int channel_view(builder *b, stan_channel *ch, rift_stan_channel_view *v,
                        rift_error *err) {
    v->name = dup(b, ch->name);
    rift_stream_info info;
    int rc = rift_stream_get_info(ch->stream, &info, err);
    if (rc != 0) {
        return rc;
    }
    v->msgs = info.messages;
    v->bytes = info.bytes;
    v->first_seq = info.messages ? info.first_sequence : 0;
    v->last_seq = info.last_sequence;
    size_t cap = ch->subs + info.consumer_count;
    v->subs = rift_calloc(NULL, cap ? cap : 1, sizeof *v->subs);
    if (!v->subs) {
        rift_stream_info_free(&info);
        b->oom = true;
        return RIFT_ERR_NOMEM;
    }
    for (stan_sub *s = b->svc->sub_list; s && v->nsubs < cap; s = s->next) {
        if (s->feed->ch == ch) {
            sub_view_from_live(b, &v->subs[v->nsubs++], s);
        }
    }
    for (size_t i = 0; i < info.consumer_count && v->nsubs < cap; i++) {
        if (sub_view_offline(b, &v->subs[v->nsubs], ch,
                             info.consumer_names[i])) {
            v->nsubs++;
        }
    }
    rift_stream_info_free(&info);
    return 0;
}

static int cmp_client(const void *a, const void *b) {
    return strcmp(((const rift_stan_client_view *)a)->id,
                  ((const rift_stan_client_view *)b)->id);
}

static int cmp_channel(const void *a, const void *b) {
    return strcmp(((const rift_stan_channel_view *)a)->name,
                  ((const rift_stan_channel_view *)b)->name);
}

static int take_locked(builder *b, const char *only, rift_stan_view *out,
                       rift_error *err) {
    rift_stan *svc = b->svc;
    out->cluster_id = dup(b, svc->cluster_id);
    out->file_store = svc->dir != NULL;
    out->subscriptions = svc->nsubs;
    out->clients = rift_calloc(NULL, svc->nclients + 1, sizeof *out->clients);
    out->channels =
        rift_calloc(NULL, svc->nchannels + 1, sizeof *out->channels);
    if (!out->clients || !out->channels) {
        return RIFT_ERR_NOMEM;
    }
    for (stan_client *c = svc->clients; c && out->nclients < svc->nclients;
         c = c->next) {
        rift_stan_client_view *v = &out->clients[out->nclients++];
        v->id = dup(b, c->id);
        v->hb_inbox = dup(b, c->hb_inbox);
        for (stan_sub *s = svc->sub_list; s; s = s->next) {
            v->subscriptions += s->client == c;
        }
    }
    for (stan_channel *ch = svc->channels; ch; ch = ch->next) {
        if (out->nchannels >= svc->nchannels ||
            (only && strcmp(only, ch->name) != 0)) {
            continue;
        }
        rift_stan_channel_view *v = &out->channels[out->nchannels++];
        int rc = channel_view(b, ch, v, err);
        if (rc != 0) {
            return rc;
        }
        out->total_msgs += v->msgs;
        out->total_bytes += v->bytes;
    }
    return 0;
}

int rift_stan_view_take(rift_stan *svc, const char *channel,
                        rift_stan_view *out, rift_error *err) {
    memset(out, 0, sizeof *out);
    builder b = {svc, false};
    pthread_mutex_lock(&svc->lock);
    int rc = take_locked(&b, channel, out, err);
    pthread_mutex_unlock(&svc->lock);
    if (rc == 0 && b.oom) {
        rc = RIFT_ERR_NOMEM;
    }
    if (rc == RIFT_ERR_NOMEM) {
        return rift_error_set(err, rc, "out of memory");
    }
    if (rc == 0) {
        qsort(out->clients, out->nclients, sizeof *out->clients, cmp_client);
        qsort(out->channels, out->nchannels, sizeof *out->channels,
              cmp_channel);
    }
    return rc;
}

static void sub_view_free(rift_stan_sub_view *v) {
    char *strs[] = {v->client_id,    v->inbox,      v->ack_inbox,
                    v->durable_name, v->queue_name, v->consumer};
    for (size_t i = 0; i < RIFT_ARRAY_LEN(strs); i++) {
        rift_free(NULL, strs[i]);
    }
}

void rift_stan_view_free(rift_stan_view *v) {
    for (size_t i = 0; v->clients && i < v->nclients; i++) {
        rift_free(NULL, v->clients[i].id);
        rift_free(NULL, v->clients[i].hb_inbox);
    }
    for (size_t i = 0; v->channels && i < v->nchannels; i++) {
        rift_stan_channel_view *c = &v->channels[i];
        for (size_t j = 0; j < c->nsubs; j++) {
            sub_view_free(&c->subs[j]);
        }
        rift_free(NULL, c->subs);
        rift_free(NULL, c->name);
    }
    rift_free(NULL, v->clients);
    rift_free(NULL, v->channels);
    rift_free(NULL, v->cluster_id);
    memset(v, 0, sizeof *v);
}
