/*
 * subs.c — STAN subscriptions (stan layer; see internal.h): the request
 * checks in the original's order and with its texts, the feed (a durable
 * consumer of the channel's stream plus its push engine, src/store/push.h)
 * each subscription joins, delivery as MsgProto to the inbox, acks, and
 * unsubscribe (deletes a durable) versus close (keeps it).
 *
 * Consumer names in a channel's stream: "d-<client>-<durable>" for a
 * durable, "q-<durable>:<group>" for a durable queue group, "g-<group>"
 * for a queue group and "s-<n>" for a plain subscription; the last two are
 * deleted when their last member leaves and, for a file store, when the
 * channel is opened again (their clients cannot resume them).
 */
#include "stan/internal.h"
#include "stan/names.h"

#include "subject/subject.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONSUMER_NAME 128

static void sub_reply(rift_stan *svc, const rift_msg *m, const char *ack_inbox,
                      const char *error) {
    size_t rl;
    const char *reply = rift_msg_reply(m, &rl);
    if (!reply || !rl) {
        return;
    }
    rift_stan_sub_resp r = {
        {ack_inbox, ack_inbox ? strlen(ack_inbox) : 0},
        {error, error ? strlen(error) : 0},
    };
    uint8_t buf[2048];
    size_t n = rift_stan_encode_sub_resp(&r, buf, sizeof buf);
    stan_send(svc, reply, rl, buf, n);
}

static bool literal_ok(rift_stan_str s) {
    return s.len &&
           rift_subject_valid(s.p, s.len, false, RIFT_MAX_SUBJECT_BYTES);
}

static void append_safe(char *out, size_t cap, size_t *n, rift_stan_str s) {
    stan_append_safe(out, cap, n, s.p, s.len);
}

/* feed_name builds the consumer name; false when it does not fit. */
static bool feed_name(rift_stan *svc, const rift_stan_sub_req *q, char *out,
                      size_t cap) {
    size_t n = 0;
    char serial[32];
    if (q->q_group.len) {
        if (q->durable_name.len) {
            stan_queue_durable_name(out, cap, &n, q->durable_name.p,
                                    q->durable_name.len, q->q_group.p,
                                    q->q_group.len);
        } else {
            append_safe(out, cap, &n, (rift_stan_str){"g-", 2});
            append_safe(out, cap, &n, q->q_group);
        }
    } else if (q->durable_name.len) {
        stan_durable_name(out, cap, &n, q->client_id.p, q->client_id.len,
                          q->durable_name.p, q->durable_name.len);
    } else {
        int k =
            snprintf(serial, sizeof serial, "s-%" PRIu64, ++svc->next_serial);
        append_safe(out, cap, &n, (rift_stan_str){serial, (size_t)k});
    }
    out[n] = '\0';
    return n > 0 && n <= MAX_CONSUMER_NAME && n + 4 < cap;
}

static stan_feed *feed_find(stan_channel *ch, const char *name) {
    for (stan_feed *f = ch->feeds; f; f = f->next) {
        if (strcmp(f->name, name) == 0) {
            return f;
        }
    }
    return NULL;
}

/* ---- Delivery ---- */

static int deliver(void *ctx, void *member, const rift_delivery *d) {
    rift_stan *svc = ctx;
    stan_sub *sub = member;
    const rift_record *r = &d->record;
    rift_stan_msg_proto mp = {0};
    mp.sequence = r->sequence;
    mp.subject = (rift_stan_str){r->subject, r->subject_len};
    mp.reply = (rift_stan_str){r->reply, r->reply_len};
    mp.data = (rift_stan_str){(const char *)r->payload, r->payload_len};
    mp.timestamp = (int64_t)(r->timestamp_ms * 1000000u);
    mp.redelivered = d->delivery_count > 1;
    mp.redelivery_count = d->delivery_count > 1 ? d->delivery_count - 1 : 0;
    size_t cap =
        rift_stan_encoded_bound(r->subject_len + r->reply_len + r->payload_len);
    uint8_t small[1024];
    uint8_t *buf = cap <= sizeof small ? small : rift_malloc(svc->s.mem, cap);
    if (!buf) {
        return RIFT_ERR_NOMEM;
    }
    size_t n = rift_stan_encode_msg_proto(&mp, buf, cap);
    stan_send(svc, sub->inbox, strlen(sub->inbox), buf, n);
    sub->last_sent = RIFT_MAX(sub->last_sent, r->sequence);
    if (buf != small) {
        rift_free(svc->s.mem, buf);
    }
    return 0;
}

/* ---- Feeds ---- */

/* consumer_config maps the request's start position; NULL errtext = ok. */
static const char *consumer_config(const rift_stan_sub_req *q, rift_stream *st,
                                   rift_consumer_config *cc) {
    rift_consumer_config_default(cc);
    cc->ack_wait_ms = (uint64_t)q->ack_wait_in_secs * 1000u;
    cc->max_ack_pending = 65536;
    switch (q->start_position) {
    case RIFT_STAN_NEW_ONLY:
        cc->start = RIFT_START_NEW_ONLY;
        break;
    case RIFT_STAN_LAST_RECEIVED:
        cc->start = RIFT_START_LAST_RECEIVED;
        break;
    case RIFT_STAN_TIME_DELTA_START:
        if (q->start_time_delta < 0) {
            return STAN_ERR_INVALID_TIME;
        }
        cc->start = RIFT_START_TIME_DELTA;
        cc->start_time_ms = (uint64_t)q->start_time_delta / 1000000u;
        break;
    case RIFT_STAN_SEQUENCE_START: {
        rift_stream_info info;
        if (rift_stream_get_info(st, &info, NULL) != 0) {
            return STAN_ERR_SUB_REQ;
        }
        uint64_t last = info.last_sequence;
        rift_stream_info_free(&info);
        if (q->start_sequence > last + 1) {
            return STAN_ERR_INVALID_SEQUENCE;
        }
        cc->start = RIFT_START_SEQUENCE;
        cc->start_sequence = q->start_sequence ? q->start_sequence : 1;
        break;
    }
    default:
        cc->start = RIFT_START_FIRST;
        break;
    }
    return NULL;
}

static void feed_free(rift_stan *svc, stan_feed *f, bool delete_consumer) {
    stan_channel *ch = f->ch;
    for (stan_feed **pp = &ch->feeds; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    rift_push_del(f->push);
    rift_consumer_close(f->consumer);
    if (delete_consumer) {
        rift_error e = {0};
        if (rift_stream_consumer_delete(ch->stream, f->name, strlen(f->name),
                                        &e) != 0 &&
            e.code != RIFT_ERR_CONSUMER_NOT_FOUND) {
            rift_log(RIFT_LOG_WARN, "stan: %s: delete %s: %s", ch->name,
                     f->name, e.text);
        }
    }
    rift_free(svc->s.mem, f->name);
    rift_free(svc->s.mem, f);
}

/* open_consumer opens the feed's consumer; *|resumed| when it existed
 * (a durable, or any feed the session file restores). */
static const char *open_consumer(stan_feed *f, const rift_stan_sub_req *q,
                                 bool *resumed) {
    rift_stream *st = f->ch->stream;
    size_t nl = strlen(f->name);
    *resumed = false;
    if ((f->durable || f->ch->svc->restoring) &&
        rift_stream_consumer_get(st, f->name, nl, &f->consumer, NULL) == 0) {
        *resumed = true;
        return NULL; /* the start position is ignored */
    }
    if (!f->durable) {
        (void)rift_stream_consumer_delete(st, f->name, nl, NULL);
    }
    rift_consumer_config cc;
    const char *errtext = consumer_config(q, st, &cc);
    if (errtext) {
        return errtext;
    }
    rift_error e = {0};
    if (rift_stream_consumer_open(st, f->name, nl, &cc, &f->consumer, &e) !=
        0) {
        rift_log(RIFT_LOG_WARN, "stan: %s: consumer %s: %s", f->ch->name,
                 f->name, e.text);
        return e.code == RIFT_ERR_INVALID_CONFIG ? STAN_ERR_TOO_MANY_SUBS
                                                 : STAN_ERR_SUB_REQ;
    }
    return NULL;
}

static stan_feed *feed_new(rift_stan *svc, stan_channel *ch, const char *name,
                           const rift_stan_sub_req *q, const char **errtext) {
    stan_feed *f = rift_calloc(svc->s.mem, 1, sizeof *f);
    if (!f || !(f->name = rift_strndup(svc->s.mem, name, strlen(name)))) {
        rift_free(svc->s.mem, f);
        *errtext = "stan: out of memory";
        return NULL;
    }
    f->ch = ch;
    f->durable = q->durable_name.len > 0;
    f->next = ch->feeds;
    ch->feeds = f;
    bool resumed = false;
    *errtext = open_consumer(f, q, &resumed);
    if (!*errtext) {
        rift_push_settings ps = {f->consumer, deliver, svc, svc->s.mem};
        if (rift_push_new(&f->push, &ps, NULL) != 0) {
            *errtext = STAN_ERR_SUB_REQ;
        }
    }
    /* A resumed durable (or durable queue group's first member) takes the
     * request's ack wait, as the original does; its maxInFlight is the
     * member's. */
    if (!*errtext && resumed &&
        rift_push_set_ack_wait(f->push, (uint64_t)q->ack_wait_in_secs * 1000u,
                               NULL) != 0) {
        *errtext = STAN_ERR_SUB_REQ;
    }
    if (*errtext) {
        feed_free(svc, f, false);
        return NULL;
    }
    return f;
}

/* ---- Subscribe ---- */

/* check_request applies the original's checks in its order. */
static const char *check_request(rift_stan *svc, const rift_stan_sub_req *q) {
    if (q->client_id.len == 0) {
        return STAN_ERR_MISSING_CLIENT;
    }
    if (q->ack_wait_in_secs < 1) {
        return STAN_ERR_ACK_WAIT;
    }
    if (q->max_in_flight < 1) {
        return STAN_ERR_MAX_INFLIGHT;
    }
    if (q->start_position < RIFT_STAN_NEW_ONLY ||
        q->start_position > RIFT_STAN_FIRST) {
        return STAN_ERR_INVALID_START;
    }
    if (!literal_ok(q->subject)) {
        return STAN_ERR_INVALID_SUBJECT;
    }
    if (!literal_ok(q->inbox)) {
        return STAN_ERR_SUB_REQ;
    }
    if (q->q_group.len && memchr(q->durable_name.p ? q->durable_name.p : "",
                                 ':', q->durable_name.len)) {
        return STAN_ERR_DUR_NAME;
    }
    if (!stan_client_find(svc, q->client_id)) {
        return STAN_ERR_UNKNOWN_CLIENT;
    }
    return NULL;
}

static void sub_free(rift_stan *svc, stan_sub *s) {
    rift_free(svc->s.mem, s->inbox);
    rift_free(svc->s.mem, s->ack_inbox);
    rift_free(svc->s.mem, s->durable);
    rift_free(svc->s.mem, s->q_group);
    rift_free(svc->s.mem, s);
}

/* sub_new joins |f|; |id| and |ack_inbox| are a restored subscription's,
 * 0 and NULL for a new one. */
static stan_sub *sub_new(rift_stan *svc, stan_feed *f,
                         const rift_stan_sub_req *q, uint64_t id,
                         const char *ack_inbox) {
    stan_sub *s = rift_calloc(svc->s.mem, 1, sizeof *s);
    if (!s) {
        return NULL;
    }
    s->client = stan_client_find(svc, q->client_id);
    s->feed = f;
    s->id = id ? id : ++svc->next_serial;
    s->inbox = stan_strdup(svc, q->inbox);
    s->durable = q->durable_name.len ? stan_strdup(svc, q->durable_name) : NULL;
    s->q_group = q->q_group.len ? stan_strdup(svc, q->q_group) : NULL;
    s->max_in_flight = q->max_in_flight;
    s->ack_wait_s = q->ack_wait_in_secs;
    char ack[1200];
    if (!ack_inbox) {
        snprintf(ack, sizeof ack, "%s.%s.%" PRIu64, svc->ack_prefix, svc->boot,
                 s->id);
        ack_inbox = ack;
    }
    s->ack_inbox = rift_strndup(svc->s.mem, ack_inbox, strlen(ack_inbox));
    /* A restored client's subscriptions join their push once it is heard
     * from (stan_subs_attach_client). */
    s->attached = !s->client->held;
    if (!s->inbox || !s->ack_inbox || (q->durable_name.len && !s->durable) ||
        (q->q_group.len && !s->q_group) ||
        (s->attached &&
         rift_push_add_member(f->push, s, (uint32_t)q->max_in_flight, NULL) !=
             0)) {
        sub_free(svc, s);
        return NULL;
    }
    f->members++;
    f->ch->subs++;
    svc->nsubs++;
    s->next = svc->sub_list;
    svc->sub_list = s;
    stan_sessions_sub_added(svc, s);
    return s;
}

void stan_on_subscribe(rift_stan *svc, const rift_msg *m) {
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    rift_stan_sub_req q;
    if (rift_stan_decode_sub_req(p, len, &q, NULL) != 0) {
        sub_reply(svc, m, NULL, STAN_ERR_SUB_REQ);
        return;
    }
    const char *errtext = check_request(svc, &q);
    stan_channel *ch = NULL;
    if (!errtext) {
        stan_client_heard(svc, stan_client_find(svc, q.client_id));
        ch = stan_channel_get(svc, q.subject, &errtext);
    }
    if (!errtext && ch->subs >= svc->s.max_subs) {
        errtext = STAN_ERR_TOO_MANY_SUBS;
    }
    char name[MAX_CONSUMER_NAME * 3 + 16];
    if (!errtext && !feed_name(svc, &q, name, sizeof name)) {
        errtext = STAN_ERR_SUB_REQ;
    }
    stan_feed *f = errtext ? NULL : feed_find(ch, name);
    if (f && !q.q_group.len) {
        errtext = STAN_ERR_DUP_DURABLE;
    }
    if (!errtext && !f) {
        f = feed_new(svc, ch, name, &q, &errtext);
    }
    stan_sub *s = errtext ? NULL : sub_new(svc, f, &q, 0, NULL);
    if (!errtext && !s) {
        if (f->members == 0) {
            feed_free(svc, f, !f->durable);
        }
        errtext = "stan: out of memory";
    }
    sub_reply(svc, m, s ? s->ack_inbox : NULL, errtext);
}

/* ---- Unsubscribe, close, acks ---- */

/* sub_remove drops |s|; when it was its feed's last member the consumer is
 * deleted (unsubscribe, or not durable) or kept (close of a durable). */
static void sub_remove(rift_stan *svc, stan_sub *s, bool unsubscribe) {
    stan_feed *f = s->feed;
    rift_push_remove_member(f->push, s);
    f->members--;
    f->ch->subs--;
    svc->nsubs--;
    for (stan_sub **pp = &svc->sub_list; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    stan_sessions_sub_removed(svc, s);
    sub_free(svc, s);
    if (f->members == 0) {
        feed_free(svc, f, unsubscribe || !f->durable);
    }
}

static stan_sub *sub_by_ack_inbox(rift_stan *svc, rift_stan_str inbox) {
    for (stan_sub *s = svc->sub_list; s; s = s->next) {
        if (strlen(s->ack_inbox) == inbox.len &&
            memcmp(s->ack_inbox, inbox.p, inbox.len) == 0) {
            return s;
        }
    }
    return NULL;
}

void stan_on_unsubscribe(rift_stan *svc, const rift_msg *m, bool close) {
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    rift_stan_unsub_req q;
    if (rift_stan_decode_unsub_req(p, len, &q, NULL) != 0) {
        sub_reply(svc, m, NULL, STAN_ERR_UNSUB_REQ);
        return;
    }
    if (q.client_id.len == 0) {
        sub_reply(svc, m, NULL, STAN_ERR_MISSING_CLIENT);
        return;
    }
    stan_client *c = stan_client_find(svc, q.client_id);
    stan_sub *s = sub_by_ack_inbox(svc, q.inbox);
    if (!c) {
        sub_reply(svc, m, NULL, STAN_ERR_UNKNOWN_CLIENT);
        return;
    }
    stan_client_heard(svc, c);
    if (!s || s->client != c) {
        sub_reply(svc, m, NULL, STAN_ERR_INVALID_SUB);
        return;
    }
    sub_remove(svc, s, !close);
    sub_reply(svc, m, NULL, NULL);
}

void stan_on_ack(rift_stan *svc, const rift_msg *m) {
    size_t sl, len;
    const char *subj = rift_msg_subject(m, &sl);
    const uint8_t *p = rift_msg_payload(m, &len);
    rift_stan_ack a;
    if (rift_stan_decode_ack(p, len, &a, NULL) != 0) {
        return; /* acks have no reply: a bad one is dropped */
    }
    stan_sub *s = sub_by_ack_inbox(svc, (rift_stan_str){subj, sl});
    if (s) {
        stan_client_heard(svc, s->client);
        (void)rift_push_ack(s->feed->push, a.sequence, NULL);
    }
}

void stan_subs_attach_client(rift_stan *svc, stan_client *c) {
    for (stan_sub *s = svc->sub_list; s; s = s->next) {
        if (s->client == c && !s->attached) {
            rift_error e = {0};
            if (rift_push_add_member(s->feed->push, s,
                                     (uint32_t)s->max_in_flight, &e) != 0) {
                rift_log(RIFT_LOG_WARN, "stan: %s: subscription of %s: %s",
                         s->feed->ch->name, c->id, e.text);
                continue;
            }
            s->attached = true;
        }
    }
}

void stan_subs_drop_client(rift_stan *svc, stan_client *c) {
    stan_sub *next;
    for (stan_sub *s = svc->sub_list; s; s = next) {
        next = s->next;
        if (s->client == c) {
            sub_remove(svc, s, false);
            next = svc->sub_list; /* the list changed: start again */
        }
    }
}

uint64_t stan_subs_pump(rift_stan *svc, uint64_t now_ms) {
    uint64_t due = UINT64_MAX;
    for (stan_channel *ch = svc->channels; ch; ch = ch->next) {
        /* An append counts as activity, also one that came from a rift
         * client (registry.c), which cannot touch last_activity_ms. */
        if (atomic_exchange(&ch->dirty, false)) {
            ch->last_activity_ms = now_ms;
        }
        for (stan_feed *f = ch->feeds; f; f = f->next) {
            rift_error e = {0};
            if (rift_push_pump(f->push, now_ms, &e) < 0) {
                rift_log(RIFT_LOG_WARN, "stan: %s: delivery: %s", ch->name,
                         e.text);
            }
            uint64_t d = rift_push_next_due_ms(f->push);
            due = d < due ? d : due;
        }
    }
    return due;
}

void stan_subs_free(rift_stan *svc) {
    while (svc->sub_list) {
        stan_sub *s = svc->sub_list;
        svc->sub_list = s->next;
        stan_feed *f = s->feed;
        sub_free(svc, s);
        if (--f->members == 0) {
            feed_free(svc, f, false); /* leftovers go at the next open */
        }
    }
    svc->nsubs = 0;
}

/* ---- Restore (sessions.c) ---- */

const char *stan_sub_restore(rift_stan *svc, const rift_stan_sub_req *q,
                             uint64_t id, const char *ack_inbox,
                             const char *feed) {
    const char *errtext = check_request(svc, q);
    stan_channel *ch = NULL;
    if (!errtext) {
        ch = stan_channel_get(svc, q->subject, &errtext);
    }
    if (!errtext && (strlen(feed) > MAX_CONSUMER_NAME || !ack_inbox[0])) {
        errtext = STAN_ERR_SUB_REQ;
    }
    stan_feed *f = errtext ? NULL : feed_find(ch, feed);
    if (f && !q->q_group.len) {
        errtext = STAN_ERR_DUP_DURABLE;
    }
    if (!errtext && !f) {
        f = feed_new(svc, ch, feed, q, &errtext);
    }
    stan_sub *s = errtext ? NULL : sub_new(svc, f, q, id, ack_inbox);
    if (!errtext && !s) {
        if (f->members == 0) {
            feed_free(svc, f, false);
        }
        errtext = "stan: out of memory";
    }
    if (s && id >= svc->next_serial) {
        svc->next_serial = id + 1; /* new names never meet restored ones */
    }
    return errtext;
}
