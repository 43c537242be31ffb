/*
 * deliver.c — remote subscriptions and requests of the protocol server
 * (server layer): SUBSCRIBE, the delivery of broker messages as MESSAGE
 * frames, REQUEST with its inbox, and the notifier that tells the server
 * thread which subscriptions have something queued.
 *
 * Reference: docs/protocol-v1.md §2.9 (SUBSCRIBE, REQUEST), §1.7 (slow
 * consumers), §1.9 (request/reply).
 *
 * Every subscription of the server shares one notifier whose eventfd the
 * loop watches; a ready subscription is drained in batches
 * (rift_sub_recv_batch). MESSAGE headers go out as small copied chunks and
 * payloads zero-copy from the broker's buffer (pinned by the message
 * reference until the peer acknowledges them), except tiny payloads, which
 * are copied next to their header. Pulling stops while SRV_SEND_HIGH bytes
 * of a stream, or SRV_CONN_HIGH bytes of its connection, are
 * unacknowledged: a subscriber that does not keep up then
 * fills its broker queue, becomes a slow consumer and is disconnected,
 * rather than making the server buffer without bound or stall publishers.
 *
 * REQUEST never blocks the loop: a fresh inbox subscription on the same
 * notifier, a publish with that reply, and a loop timer for the timeout.
 */
#include "broker/broker_face.h"
#include "server/handlers.h"
#include "server/stream_record.h"
#include "store/kick_hold.h"

#include "subject/acl.h"
#include "subject/name.h"

#include <string.h>

static const char text_payload[] = "payload exceeds 1 MiB transport limit";
static const char text_no_responders[] = "no responders available";
static const char text_timed_out[] = "request timed out";

static void msg_release(void *msg) {
    rift_msg_unref(msg);
}

/* ---- Subscriptions in the quota ---- */

/* A broker subscription for |ss|'s identity, counted in the quota
 * ("subscription limit reached" once its share is used up), and its
 * close, which gives the unit back. */
static int sub_open(srv_stream *ss, const char *pattern, size_t len,
                    const rift_sub_options *opts, rift_sub **psub,
                    rift_error *err) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    size_t slot = srv->quota_slots[c->id_index];
    int rc = rift_quota_take(srv->quota, slot, RIFT_QUOTA_SUBSCRIPTIONS, err);
    if (rc != 0) {
        return rc;
    }
    rc = rift_broker_subscribe(srv->broker, pattern, len, opts, psub, err);
    if (rc != 0) {
        rift_quota_give(srv->quota, slot, RIFT_QUOTA_SUBSCRIPTIONS);
    }
    return rc;
}

static void sub_close(srv_stream *ss, rift_sub *sub) {
    srv_conn *c = ss->conn;
    rift_sub_close(sub);
    rift_quota_give(c->srv->quota, c->srv->quota_slots[c->id_index],
                    RIFT_QUOTA_SUBSCRIPTIONS);
}

/* ---- Dropping ---- */

static void delivery_drop(srv_stream *ss) {
    rift_server *srv = ss->conn->srv;
    if (ss->sub != NULL) {
        sub_close(ss, ss->sub);
        ss->sub = NULL;
        ss->sub_ready = false;
        srv->c.subscriptions--;
    }
    while (ss->backlog_pos < ss->backlog_len) {
        rift_msg_unref(ss->backlog[ss->backlog_pos++]);
    }
    ss->backlog_pos = ss->backlog_len = 0;
    if (ss->inbox != NULL) {
        sub_close(ss, ss->inbox);
        ss->inbox = NULL;
        rift_timer_stop(&ss->op_timer);
    }
}

/* How the stream record lets go of a subscription or a request's inbox
 * (stream_record.c calls no handler). */
static const srv_op_hooks delivery_hooks = {delivery_drop, NULL};

/* ---- SUBSCRIBE ---- */

void rift_srv_subscribe(srv_stream *ss, const srv_frame *frame) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    rift_error err;
    rift_frame_subscribe f;
    if (rift_frame_decode_subscribe(frame->fields, frame->len, &f, &err) != 0 ||
        rift_identity_can_subscribe(c->id, f.pattern, f.pattern_len, &err) !=
            0) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    if (f.queue_len > 0 && !rift_name_valid(f.queue, f.queue_len)) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_QUEUE, "invalid queue group");
        return;
    }
    rift_sub_options opts = {
        .queue = f.queue_len > 0 ? f.queue : NULL,
        .queue_len = f.queue_len,
        .notifier = srv->notifier,
        .user_data = ss,
    };
    rift_sub *sub;
    if (sub_open(ss, f.pattern, f.pattern_len, &opts, &sub, &err) != 0) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    /* The subscription exists before OK goes out (§2.9 SUBSCRIBE 5). */
    ss->sub = sub;
    ss->op = &delivery_hooks;
    ss->state = SS_DELIVERY;
    srv->c.subscriptions++;
    /* The client cancels with STOP_SENDING (§2.9 SUBSCRIBE 6), possibly
     * keeping its own half open: the transport must report it when it
     * arrives, not when the next MESSAGE is written, or requests keep
     * being routed to a subscription nobody reads. */
    rift_quic_stream_watch_stop(ss->qs);
    if (rift_srv_write_ok(ss, false) != 0) {
        delivery_drop(ss);
        ss->state = SS_DONE;
        rift_srv_release_permit(ss);
        rift_quic_stream_shutdown_read(ss->qs, 0);
    }
}

/* ---- MESSAGE frames ---- */

/* Checks a message about to be written (§2.9 SUBSCRIBE 9). */
static int check_msg(const char *subject, size_t slen, const char *reply,
                     size_t rlen, size_t plen, rift_error *err) {
    if (rift_subject_validate_literal(subject, slen, err) != 0 ||
        (rlen > 0 && rift_subject_validate_literal(reply, rlen, err) != 0)) {
        return err->code;
    }
    if (plen > RIFT_FRAME_MAX_PAYLOAD) {
        return rift_error_set(err, RIFT_ERR_PAYLOAD_TOO_LARGE, "%s",
                              text_payload);
    }
    return 0;
}

/* The chunks of the MESSAGE frames being assembled, with the scratch
 * buffer holding their headers and small payloads. */
typedef struct out_batch {
    rift_quic_chunk ch[2 * SRV_BATCH + 2];
    size_t n;
    uint8_t *scratch;
    size_t used;
    size_t bytes;
} out_batch;

/* Writes what |ob| holds. On failure the pinned messages are released
 * (the stream did not take them). */
static int out_flush(srv_stream *ss, out_batch *ob, bool fin) {
    int rc = 0;
    if (ob->n > 0 || fin) {
        rc = rift_srv_write(ss, ob->ch, ob->n, fin);
        if (rc != 0) {
            for (size_t i = 0; i < ob->n; i++) {
                if (ob->ch[i].release != NULL) {
                    ob->ch[i].release(ob->ch[i].owner);
                }
            }
        }
    }
    ob->n = 0;
    ob->used = 0;
    return rc;
}

/* Adds one MESSAGE frame for |msg| (whose reference the batch takes) with
 * subject |subject|; flushes first when the scratch is full. */
static int out_add(srv_stream *ss, out_batch *ob, const char *subject,
                   size_t slen, rift_msg *msg) {
    size_t rlen, plen;
    const char *reply = rift_msg_reply(msg, &rlen);
    const uint8_t *payload = rift_msg_payload(msg, &plen);
    bool copy = plen <= SRV_COPY_PAYLOAD_MAX;
    size_t need = RIFT_FRAME_MSG_HEADER_SIZE(slen, rlen) + (copy ? plen : 0);
    if (ob->used + need > SRV_SCRATCH_BYTES || ob->n + 2 > 2 * SRV_BATCH) {
        int rc = out_flush(ss, ob, false);
        if (rc != 0) {
            rift_msg_unref(msg);
            return rc;
        }
    }
    uint8_t *p = ob->scratch + ob->used;
    rift_ssize h = rift_frame_encode_message_header(
        p, SRV_SCRATCH_BYTES - ob->used, subject, slen, reply, rlen, plen);
    if (h < 0) {
        rift_msg_unref(msg);
        return (int)h;
    }
    /* Copied bytes that follow the previous copied chunk in the scratch
     * extend it: one chunk for a run of small frames. */
    rift_quic_chunk *last = ob->n > 0 ? &ob->ch[ob->n - 1] : NULL;
    bool extend =
        last != NULL && last->release == NULL && last->data + last->len == p;
    if (copy) {
        if (plen > 0) {
            memcpy(p + h, payload, plen);
        }
        if (extend) {
            last->len += (size_t)h + plen;
        } else {
            ob->ch[ob->n++] =
                (rift_quic_chunk){p, (size_t)h + plen, NULL, NULL};
        }
        rift_msg_unref(msg);
    } else {
        if (extend) {
            last->len += (size_t)h;
        } else {
            ob->ch[ob->n++] = (rift_quic_chunk){p, (size_t)h, NULL, NULL};
        }
        ob->ch[ob->n++] = (rift_quic_chunk){payload, plen, msg_release, msg};
    }
    ob->used += (size_t)h + (copy ? plen : 0);
    ob->bytes += (size_t)h + plen;
    return 0;
}

/* Writes backlog messages until the backlog is empty or the stream has
 * SRV_SEND_HIGH bytes unacknowledged. Returns false when the stream ended
 * or is throttled. */
static bool send_backlog(srv_stream *ss) {
    rift_server *srv = ss->conn->srv;
    out_batch ob = {.scratch = srv->scratch};
    uint64_t base = rift_quic_stream_unacked(ss->qs);
    while (ss->backlog_pos < ss->backlog_len &&
           base + ob.bytes < SRV_SEND_HIGH) {
        rift_msg *msg = ss->backlog[ss->backlog_pos++];
        size_t slen, rlen, plen;
        const char *subject = rift_msg_subject(msg, &slen);
        const char *reply = rift_msg_reply(msg, &rlen);
        (void)rift_msg_payload(msg, &plen);
        rift_error err;
        /* Re-validation (§2.9 SUBSCRIBE 9), skipped for the subject the
         * stream validated last (a subscription mostly sees few). */
        bool known = rlen == 0 && plen <= RIFT_FRAME_MAX_PAYLOAD &&
                     slen == ss->last_subject_len &&
                     memcmp(subject, ss->last_subject, slen) == 0;
        if (!known && check_msg(subject, slen, reply, rlen, plen, &err) != 0) {
            rift_msg_unref(msg);
            if (out_flush(ss, &ob, false) == 0) {
                rift_srv_fail(ss, err.code, err.text);
            } else {
                delivery_drop(ss);
            }
            return false;
        }
        if (!known && rlen == 0 && slen <= sizeof(ss->last_subject)) {
            memcpy(ss->last_subject, subject, slen);
            ss->last_subject_len = (uint8_t)slen;
        }
        if (out_add(ss, &ob, subject, slen, msg) != 0) {
            (void)out_flush(ss, &ob, false);
            delivery_drop(ss);
            return false;
        }
        srv->c.msgs_out++;
        srv->c.bytes_out += plen;
    }
    if (out_flush(ss, &ob, false) != 0) {
        /* The peer stopped the stream or the connection is closing. */
        delivery_drop(ss);
        ss->state = SS_DONE;
        rift_srv_release_permit(ss);
        return false;
    }
    return ss->backlog_pos == ss->backlog_len;
}

/* Moves queued messages of a ready subscription onto its stream. */
static void drain(srv_stream *ss) {
    rift_server *srv = ss->conn->srv;
    while (ss->state == SS_DELIVERY && ss->qs != NULL) {
        if (ss->backlog_pos == ss->backlog_len) {
            if (!ss->sub_ready ||
                rift_quic_stream_unacked(ss->qs) >= SRV_SEND_HIGH ||
                rift_srv_conn_full(ss)) {
                /* Resumed by this stream's ACKs or, when its connection
                 * has used its budget, by the connection's. Meanwhile
                 * the broker queue takes what comes, and overflows into
                 * a slow consumer if the client does not catch up. */
                return;
            }
            rift_error err;
            rift_ssize n =
                rift_sub_recv_batch(ss->sub, 0, ss->backlog, SRV_BATCH, &err);
            if (n == RIFT_ERR_AGAIN) {
                ss->sub_ready = false;
                return;
            }
            if (n < 0) {
                if (n == RIFT_ERR_SLOW_CONSUMER) {
                    srv->c.slow_consumers++;
                }
                rift_srv_fail(ss, (int)n, err.text);
                return;
            }
            ss->backlog_pos = 0;
            ss->backlog_len = (size_t)n;
            if (n < SRV_BATCH) {
                /* The queue was left empty: the next message is a fresh
                 * notifier report. */
                ss->sub_ready = false;
            }
        }
        if (!send_backlog(ss)) {
            return;
        }
    }
}

void rift_srv_delivery_resume(srv_stream *ss) {
    if (ss->sub_ready || ss->backlog_pos < ss->backlog_len) {
        drain(ss);
    }
}

/* ---- REQUEST ---- */

static void request_timeout_cb(rift_timer *t, void *arg) {
    srv_stream *ss = arg;
    (void)t;
    rift_srv_fail(ss, RIFT_ERR_TIMEOUT, text_timed_out);
}

void rift_srv_request(srv_stream *ss, const srv_frame *frame) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    rift_error err;
    rift_frame_request f;
    int rc = rift_frame_decode_request(frame->fields, frame->len, &f, &err);
    /* The timeout is checked before the subject is even decoded. */
    if (f.decoded >= 1 && (f.timeout_ms == 0 || f.timeout_ms > 120000)) {
        rift_srv_fail(ss, RIFT_ERR_INVALID_ARGUMENT,
                      "request timeout must be 1..120000 ms");
        return;
    }
    if (rc != 0 || rift_identity_can_publish(c->id, f.subject, f.subject_len,
                                             NULL, 0, &err) != 0) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    if (f.payload_len > RIFT_FRAME_MAX_PAYLOAD) {
        rift_srv_fail(ss, RIFT_ERR_PAYLOAD_TOO_LARGE, text_payload);
        return;
    }
    rift_sub_options opts = {.notifier = srv->notifier, .user_data = ss};
    if (rift_broker_new_inbox(ss->inbox_name, &err) != 0 ||
        sub_open(ss, ss->inbox_name, RIFT_INBOX_LEN, &opts, &ss->inbox, &err) !=
            0) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    ss->op = &delivery_hooks;
    rift_publish_report rep;
    if (rift_broker_publish(srv->broker, f.subject, f.subject_len,
                            ss->inbox_name, RIFT_INBOX_LEN, f.payload,
                            f.payload_len, &rep, &err) != 0) {
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    srv->c.msgs_in++;
    srv->c.bytes_in += f.payload_len;
    srv->drain_count++;
    if (rep.delivered == 0 && rep.forwarded == 0) {
        rift_srv_fail(ss, RIFT_ERR_NO_RESPONDERS, text_no_responders);
        return;
    }
    ss->state = SS_BUSY;
    rift_timer_init(srv->loop, &ss->op_timer, request_timeout_cb, ss);
    rift_timer_start(&ss->op_timer, rift_loop_now(srv->loop) +
                                        (rift_tstamp)f.timeout_ms * 1000000u);
}

/* The inbox has something: the first reply (or its failure) ends the
 * request. */
static void request_reply(srv_stream *ss) {
    rift_server *srv = ss->conn->srv;
    rift_msg *msg;
    rift_error err;
    int rc = rift_sub_recv(ss->inbox, 0, &msg, &err);
    if (rc == RIFT_ERR_AGAIN) {
        return;
    }
    if (rc != 0) {
        rift_srv_fail(ss, rc, err.text);
        return;
    }
    /* One reply is all a request takes: drop the inbox now. */
    sub_close(ss, ss->inbox);
    ss->inbox = NULL;
    rift_timer_stop(&ss->op_timer);
    if (rift_msg_no_responders(msg)) { /* the cluster's (docs/cluster.md) */
        rift_msg_unref(msg);
        rift_srv_fail(ss, RIFT_ERR_NO_RESPONDERS, text_no_responders);
        return;
    }
    if (ss->qs == NULL) {
        rift_msg_unref(msg);
        rift_srv_finish(ss); /* frees the record */
        return;
    }
    size_t rlen, plen;
    const char *reply = rift_msg_reply(msg, &rlen);
    (void)rift_msg_payload(msg, &plen);
    if (check_msg(ss->inbox_name, RIFT_INBOX_LEN, reply, rlen, plen, &err) !=
        0) {
        rift_msg_unref(msg);
        rift_srv_fail(ss, err.code, err.text);
        return;
    }
    /* The reply goes out under the inbox subject (§2.9 REQUEST 5). */
    out_batch ob = {.scratch = srv->scratch};
    if (out_add(ss, &ob, ss->inbox_name, RIFT_INBOX_LEN, msg) == 0) {
        srv->c.msgs_out++;
        srv->c.bytes_out += plen;
        (void)out_flush(ss, &ob, false);
    }
    rift_srv_finish(ss);
}

/* ---- Notifier ---- */

void rift_srv_drain_now(rift_server *srv) {
    srv->drain_count = 0;
    rift_srv_notify_cb(NULL, 0, srv);
}

void rift_srv_rx_batch_done(void *ep_ud) {
    rift_server *srv = ep_ud;
    /* The batch's store appends are staged: wake their writers first, so
     * the writes overlap with the deliveries and the flush below. */
    rift_stream_flush_kicks();
    if (srv->drain_count > 0) {
        rift_srv_drain_now(srv);
    }
}

void rift_srv_notify_cb(rift_io *io, unsigned events, void *arg) {
    rift_server *srv = arg;
    (void)io;
    (void)events;
    rift_sub *subs[64];
    for (;;) {
        size_t n =
            rift_notifier_poll(srv->notifier, subs, RIFT_ARRAY_LEN(subs));
        for (size_t i = 0; i < n; i++) {
            srv_stream *ss = rift_sub_user_data(subs[i]);
            if (subs[i] == ss->inbox) {
                request_reply(ss);
            } else if (subs[i] == ss->sub) {
                ss->sub_ready = true;
                drain(ss);
            }
        }
        if (n < RIFT_ARRAY_LEN(subs)) {
            return;
        }
    }
}
