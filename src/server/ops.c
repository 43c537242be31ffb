/*
 * ops.c — operation streams of the protocol server (server layer):
 * permits, cutting the byte stream into frames (zero-copy when a frame
 * arrived whole), dispatch by opcode, PUBLISH / PUBLISH_ACK / PING, the
 * error path, normal completion and the stream deadlines.
 *
 * Reference: docs/protocol-v1.md §2.7 (lifecycle and deadlines), §2.8
 * (stream kinds), §2.9 (PUBLISH, PING and opcode checks).
 *
 * Deadlines share one timer per stream and are checked lazily: the hot
 * path only records timestamps (first byte of a frame, last ACK progress)
 * and the timer, when it fires, either finds a deadline passed or re-arms
 * itself for the earliest one still pending. So a pipelined publisher
 * costs no timer operations per frame.
 */
#include "server/internal.h"

#include "subject/acl.h"
#include "subject/name.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char text_timeout[] = "QUIC operation timed out";
static const char text_closed[] = "QUIC stream closed";
static const char text_payload[] = "payload exceeds 1 MiB transport limit";

static void stream_timer_cb(rift_timer *t, void *arg);

/* ---- Records ---- */

srv_stream *rift_srv_stream_new(srv_conn *c, rift_quic_stream *qs,
                                srv_state state) {
    rift_server *srv = c->srv;
    srv_stream *ss = rift_calloc(srv->mem, 1, sizeof(*ss));
    if (ss == NULL) {
        return NULL;
    }
    ss->conn = c;
    ss->qs = qs;
    ss->state = state;
    c->refs++;
    rift_frame_reader_init(&ss->reader,
                           state == SS_AUTH ? RIFT_FRAME_AUTH_MAX_BYTES
                                            : RIFT_FRAME_MAX_BYTES,
                           srv->mem);
    rift_timer_init(srv->loop, &ss->timer, stream_timer_cb, ss);
    rift_timer_init(srv->loop, &ss->op_timer, NULL, ss);
    ss->next = srv->all;
    if (srv->all) {
        srv->all->prev = ss;
    }
    srv->all = ss;
    rift_quic_stream_set_user_data(qs, ss);
    return ss;
}

static void stop_waiting(srv_stream *ss) {
    if (ss->wait_conn) {
        ss->wait_conn = false;
        ss->conn->waiting--;
    }
}

void rift_srv_stream_free(srv_stream *ss) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    rift_srv_delivery_drop(ss);
    rift_srv_store_detach(ss);
    rift_srv_release_permit(ss);
    stop_waiting(ss);
    c->queued -= ss->accounted;
    srv->c.queued -= ss->accounted;
    rift_timer_stop(&ss->timer);
    rift_timer_stop(&ss->op_timer);
    rift_frame_reader_free(&ss->reader);
    rift_free(srv->mem, ss->held);
    if (ss->qs != NULL) {
        rift_quic_stream_set_user_data(ss->qs, NULL);
    }
    if (ss->prev) {
        ss->prev->next = ss->next;
    } else {
        srv->all = ss->next;
    }
    if (ss->next) {
        ss->next->prev = ss->prev;
    }
    rift_free(srv->mem, ss);
    rift_srv_conn_unref(c);
}

void rift_srv_release_permit(srv_stream *ss) {
    if (ss->permit) {
        ss->permit = false;
        ss->conn->permits--;
    }
    if (ss->counted) {
        ss->counted = false;
        ss->conn->srv->c.streams--;
    }
}

/* ---- The connection's budget ---- */

void rift_srv_account(srv_stream *ss) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    uint64_t cur =
        (ss->qs != NULL ? rift_quic_stream_unacked(ss->qs) : 0) + ss->extra;
    c->queued = c->queued - ss->accounted + cur;
    srv->c.queued = srv->c.queued - ss->accounted + cur;
    ss->accounted = cur;
    if (c->queued > srv->c.conn_queued_peak) {
        srv->c.conn_queued_peak = c->queued;
    }
}

bool rift_srv_conn_full(srv_stream *ss) {
    srv_conn *c = ss->conn;
    if (c->queued < SRV_CONN_HIGH) {
        return false;
    }
    if (!ss->wait_conn) {
        rift_server *srv = c->srv;
        ss->wait_conn = true;
        c->waiting++;
        ss->wait_since = rift_loop_now(srv->loop);
        rift_srv_arm(ss, ss->wait_since + srv->io_ns);
    }
    return true;
}

/* ACKs freed room: the streams waiting for it take turns until it is
 * used up again. */
static void resume_waiters(srv_conn *c) {
    rift_server *srv = c->srv;
    for (srv_stream *ss = srv->all, *next; ss != NULL; ss = next) {
        next = ss->next;
        if (c->waiting == 0 || c->queued >= SRV_CONN_HIGH) {
            return;
        }
        if (ss->conn != c || !ss->wait_conn) {
            continue;
        }
        stop_waiting(ss);
        if (ss->state == SS_DELIVERY) {
            rift_srv_delivery_resume(ss);
        } else if (ss->state == SS_BUSY) {
            rift_srv_fetch_resume(ss);
        }
    }
}

/* ---- Deadlines ---- */

void rift_srv_arm(srv_stream *ss, rift_tstamp at) {
    if (!rift_timer_active(&ss->timer) || at < ss->timer_at) {
        ss->timer_at = at;
        rift_timer_start(&ss->timer, at);
    }
}

static void stream_timer_cb(rift_timer *t, void *arg) {
    srv_stream *ss = arg;
    (void)t;
    if (ss->qs == NULL) {
        return;
    }
    rift_server *srv = ss->conn->srv;
    rift_tstamp now = rift_loop_now(srv->loop);
    rift_tstamp next = UINT64_MAX;
    bool expired = false;
    if (ss->state == SS_OPS) {
        if (!ss->got_frame) {
            rift_tstamp d = ss->opened_at + srv->handshake_ns;
            expired |= now >= d;
            next = RIFT_MIN(next, d);
        }
        if (ss->mid) {
            rift_tstamp d = ss->frame_start + srv->io_ns;
            expired |= now >= d;
            next = RIFT_MIN(next, d);
        }
    }
    if (ss->wait_conn) {
        /* Kept waiting by the connection's budget: its client must make
         * progress on some stream, as with a blocked write. */
        rift_tstamp d =
            RIFT_MAX(ss->wait_since, ss->conn->last_progress) + srv->io_ns;
        expired |= now >= d;
        next = RIFT_MIN(next, d);
    }
    uint64_t unacked = rift_quic_stream_unacked(ss->qs);
    if (ss->state == SS_DONE) {
        if (unacked > 0) {
            /* The ERROR or the last frames of a finished stream could not
             * be delivered within another io_timeout: drop them, however
             * few (a client that never credits its window would pin them
             * until the connection ends). */
            rift_tstamp d =
                RIFT_MAX(ss->last_progress, ss->done_at) + srv->io_ns;
            if (now >= d) {
                rift_quic_stream_shutdown_write(ss->qs, 0);
                rift_srv_account(ss);
                return;
            }
            next = RIFT_MIN(next, d);
        }
    } else if (ss->state != SS_REFUSED && unacked >= SRV_WRITE_BLOCKED) {
        rift_tstamp d = ss->last_progress + srv->io_ns;
        expired |= now >= d;
        next = RIFT_MIN(next, d);
    }
    if (expired) {
        rift_srv_fail(ss, RIFT_ERR_TIMEOUT, text_timeout);
        return;
    }
    if (next != UINT64_MAX) {
        ss->timer_at = next;
        rift_timer_start(&ss->timer, next);
    }
}

/* ---- Writing ---- */

int rift_srv_write(srv_stream *ss, const rift_quic_chunk *chunks, size_t n,
                   bool fin) {
    if (ss->qs == NULL) {
        return RIFT_ERR_CLOSED;
    }
    uint64_t before = rift_quic_stream_unacked(ss->qs);
    int rc = rift_quic_stream_write(ss->qs, chunks, n, fin);
    if (rc != 0) {
        return rc;
    }
    rift_srv_account(ss);
    if (before < SRV_WRITE_BLOCKED &&
        rift_quic_stream_unacked(ss->qs) >= SRV_WRITE_BLOCKED) {
        /* Every write must make progress within io_timeout. */
        rift_server *srv = ss->conn->srv;
        ss->last_progress = rift_loop_now(srv->loop);
        rift_srv_arm(ss, ss->last_progress + srv->io_ns);
    }
    return 0;
}

int rift_srv_write_ok(srv_stream *ss, bool fin) {
    static const uint8_t ok[5] = {0, 0, 0, 1, RIFT_OP_OK};
    rift_quic_chunk ch = {ok, sizeof(ok), NULL, NULL};
    return rift_srv_write(ss, &ch, 1, fin);
}

/* Our side is over: no permit, no longer an open operation stream. */
static void become_done(srv_stream *ss) {
    ss->state = SS_DONE;
    ss->done_at = rift_loop_now(ss->conn->srv->loop);
    ss->mid = false;
    rift_srv_release_permit(ss);
    stop_waiting(ss);
    if (!rift_srv_store_in_flight(ss)) {
        rift_srv_store_detach(ss); /* a fetch that was writing */
    }
}

/* A finished stream whose last bytes are not acknowledged gets one more
 * io_timeout for them (the SS_DONE check of stream_timer_cb). Usually a
 * no-op: the first-frame deadline's timer is still pending. */
static void linger(srv_stream *ss) {
    if (ss->qs != NULL && rift_quic_stream_unacked(ss->qs) > 0) {
        rift_srv_arm(ss, ss->done_at + ss->conn->srv->io_ns);
    }
}

void rift_srv_fail(srv_stream *ss, int code, const char *text) {
    if (ss->state == SS_DONE || ss->state == SS_REFUSED) {
        return;
    }
    rift_srv_delivery_drop(ss);
    become_done(ss);
    if (ss->qs == NULL) {
        if (ss->store_op == NULL) {
            rift_srv_stream_free(ss);
        }
        return;
    }
    uint8_t buf[RIFT_FRAME_PREFIX_BYTES + 5 + RIFT_FRAME_ERROR_TEXT_MAX];
    rift_ssize n = rift_frame_encode_error(
        buf, sizeof(buf), rift_error_wire_code(code), text, strlen(text));
    if (n > 0) {
        rift_quic_chunk ch = {buf, (size_t)n, NULL, NULL};
        (void)rift_srv_write(ss, &ch, 1, true);
    }
    rift_quic_stream_shutdown_read(ss->qs, 0);
    linger(ss);
}

void rift_srv_finish(srv_stream *ss) {
    if (ss->state == SS_DONE || ss->state == SS_REFUSED) {
        return;
    }
    become_done(ss);
    if (ss->qs == NULL) {
        if (ss->store_op == NULL) {
            rift_srv_stream_free(ss);
        }
        return;
    }
    (void)rift_srv_write(ss, NULL, 0, true);
    rift_quic_stream_shutdown_read(ss->qs, 0);
    linger(ss);
}

static void fail_err(srv_stream *ss, const rift_error *err) {
    rift_srv_fail(ss, err->code, err->text);
}

/* A write failed because the peer stopped our side or the connection is
 * closing: nobody can read a reply any more, so end quietly. */
static void write_failed(srv_stream *ss) {
    become_done(ss);
    rift_srv_delivery_drop(ss);
    if (ss->qs != NULL) {
        rift_quic_stream_shutdown_read(ss->qs, 0);
    }
}

/* ---- Accepting ---- */

void rift_srv_stream_accept(srv_stream *ss) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    if (c->permits >= srv->max_streams) {
        /* §2.7: no permit — reset and stop with code 2, no ERROR. */
        ss->state = SS_REFUSED;
        rift_quic_stream_shutdown_write(ss->qs, 2);
        rift_quic_stream_shutdown_read(ss->qs, 2);
        rift_free(srv->mem, ss->held);
        ss->held = NULL;
        ss->held_len = ss->held_cap = 0;
        return;
    }
    c->permits++;
    ss->permit = true;
    ss->counted = true;
    srv->c.streams++;
    ss->state = SS_OPS;
    ss->opened_at = rift_loop_now(srv->loop);
    rift_srv_arm(ss, ss->opened_at + srv->handshake_ns);
    if (ss->held_len > 0 || ss->held_fin) {
        uint8_t *held = ss->held;
        size_t len = ss->held_len;
        bool fin = ss->held_fin;
        ss->held = NULL;
        ss->held_len = ss->held_cap = 0;
        rift_srv_stream_data(ss, held, len, fin);
        rift_free(srv->mem, held);
    }
}

/* Buffers bytes of a stream opened before authentication finished. They
 * are not credited, so the stream window bounds the buffer. */
static void hold(srv_stream *ss, const uint8_t *data, size_t len, bool fin) {
    rift_server *srv = ss->conn->srv;
    if (ss->held_len + len > ss->held_cap) {
        size_t cap = ss->held_cap ? ss->held_cap : 256;
        while (cap < ss->held_len + len) {
            cap *= 2;
        }
        uint8_t *p = rift_realloc(srv->mem, ss->held, cap);
        if (p == NULL) {
            /* Cannot keep it: refuse the stream like a missing permit. */
            ss->state = SS_REFUSED;
            rift_quic_stream_shutdown_write(ss->qs, 2);
            rift_quic_stream_shutdown_read(ss->qs, 2);
            return;
        }
        ss->held = p;
        ss->held_cap = cap;
    }
    if (len > 0) {
        memcpy(ss->held + ss->held_len, data, len);
        ss->held_len += len;
    }
    ss->held_fin |= fin;
}

/* ---- PUBLISH, PUBLISH_ACK, PING ---- */

static void body_release(void *buf) {
    /* Only used with the default allocator (see do_publish). */
    rift_free(NULL, buf);
}

static void do_publish(srv_stream *ss, const uint8_t *body, size_t len,
                       bool assembled, bool ack) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    rift_error err;
    rift_frame_msg m;
    if (rift_frame_decode_msg(body + 1, len - 1, &m, &err) != 0) {
        fail_err(ss, &err);
        return;
    }
    /* A publisher usually repeats its subject: the last one that passed
     * the literal and ACL checks (without a reply) needs neither again.
     * The payload check sits between them, so it runs either way. */
    bool known = m.reply_len == 0 && m.subject_len == ss->last_subject_len &&
                 m.subject_len > 0 &&
                 memcmp(m.subject, ss->last_subject, m.subject_len) == 0;
    if (!known &&
        (rift_subject_validate_literal(m.subject, m.subject_len, &err) != 0 ||
         (m.reply_len > 0 &&
          rift_subject_validate_literal(m.reply, m.reply_len, &err) != 0))) {
        fail_err(ss, &err);
        return;
    }
    if (m.payload_len > RIFT_FRAME_MAX_PAYLOAD) {
        rift_srv_fail(ss, RIFT_ERR_PAYLOAD_TOO_LARGE, text_payload);
        return;
    }
    if (!known) {
        if (rift_identity_can_publish(c->id, m.subject, m.subject_len, m.reply,
                                      m.reply_len, &err) != 0) {
            fail_err(ss, &err);
            return;
        }
        if (m.reply_len == 0 && m.subject_len <= sizeof(ss->last_subject)) {
            memcpy(ss->last_subject, m.subject, m.subject_len);
            ss->last_subject_len = (uint8_t)m.subject_len;
        }
    }
    int rc;
    rift_publish_report rep = {0, 0};
    if (assembled && m.payload_len >= SRV_EXTERNAL_MIN && srv->mem == NULL) {
        /* The body was assembled from several packets into the reader's
         * buffer: that buffer becomes the message payload instead of
         * being copied once more. */
        rift_msg *msg;
        uint8_t *buf = rift_frame_reader_detach(&ss->reader);
        rc = rift_msg_new_external(&msg, NULL, m.subject, m.subject_len,
                                   m.reply, m.reply_len, m.payload,
                                   m.payload_len, body_release, buf, NULL);
        if (rc != 0) {
            rift_free(NULL, buf);
            rift_error_set(&err, rc, "out of memory");
        } else {
            rc = rift_broker_publish_msg(srv->broker, msg, &rep, &err);
            rift_msg_unref(msg);
        }
    } else {
        rc = rift_broker_publish(srv->broker, m.subject, m.subject_len, m.reply,
                                 m.reply_len, m.payload, m.payload_len, &rep,
                                 &err);
    }
    if (rc != 0) {
        fail_err(ss, &err);
        return;
    }
    srv->c.msgs_in++;
    srv->c.bytes_in += m.payload_len;
    /* Somebody got it, maybe one of our subscriptions (see
     * rift_srv_stream_data). */
    srv->drain_count += rep.delivered > 0;
    if (ack && rift_srv_write_ok(ss, false) != 0) {
        write_failed(ss);
    }
}

static void do_ping(srv_stream *ss, const uint8_t *body, size_t len) {
    rift_error err;
    if (rift_frame_decode_empty(body + 1, len - 1, &err) != 0) {
        fail_err(ss, &err);
        return;
    }
    if (rift_srv_write_ok(ss, false) != 0) {
        write_failed(ss);
    }
}

static void handle_frame(srv_stream *ss, const rift_frame_body *body) {
    uint8_t op = body->data[0];
    rift_error err;
    if (rift_frame_check_operation(op, &err) != 0) {
        fail_err(ss, &err);
        return;
    }
    const uint8_t *fields = body->data + 1;
    size_t flen = body->len - 1;
    switch (op) {
    case RIFT_OP_PUBLISH:
    case RIFT_OP_PUBLISH_ACK:
        do_publish(ss, body->data, body->len, body->assembled,
                   op == RIFT_OP_PUBLISH_ACK);
        break;
    case RIFT_OP_PING:
        do_ping(ss, body->data, body->len);
        break;
    case RIFT_OP_SUBSCRIBE:
        rift_srv_subscribe(ss, fields, flen);
        break;
    case RIFT_OP_REQUEST:
        rift_srv_request(ss, fields, flen);
        break;
    default: /* 10, 12, 13, 15: the rest are refused above */
        rift_srv_stream_op(ss, op, fields, flen);
        break;
    }
}

/* ---- Transport events ---- */

static void ops_data(srv_stream *ss, const uint8_t *data, size_t len,
                     bool fin) {
    rift_server *srv = ss->conn->srv;
    size_t off = 0;
    while (off < len && ss->state == SS_OPS) {
        rift_frame_body body;
        rift_error err;
        rift_ssize n = rift_frame_reader_feed(&ss->reader, data + off,
                                              len - off, &body, &err);
        if (n < 0) {
            fail_err(ss, &err);
            break;
        }
        off += (size_t)n;
        if (body.data != NULL) {
            ss->got_frame = true;
            ss->mid = false;
            handle_frame(ss, &body);
        }
    }
    if (ss->state != SS_OPS) {
        /* A one-shot operation, a subscription or an error ended reading:
         * later bytes are not read (nor credited, as in the original). */
        if (off > 0 && ss->qs != NULL) {
            rift_quic_stream_consumed(ss->qs, off);
        }
        return;
    }
    rift_quic_stream_consumed(ss->qs, off);
    if (fin) {
        /* §2.7: a client FIN where the next frame should start (or
         * inside one) draws ERROR(2, "QUIC stream closed"). */
        rift_srv_fail(ss, RIFT_ERR_CLOSED, text_closed);
        return;
    }
    if (!ss->mid && rift_frame_reader_mid_frame(&ss->reader)) {
        ss->mid = true;
        ss->frame_start = rift_loop_now(srv->loop);
        rift_srv_arm(ss, ss->frame_start + srv->io_ns);
    }
}

void rift_srv_stream_data(srv_stream *ss, const uint8_t *data, size_t len,
                          bool fin) {
    rift_server *srv = ss->conn->srv;
    switch (ss->state) {
    case SS_HELD:
        hold(ss, data, len, fin);
        break;
    case SS_OPS:
        ops_data(ss, data, len, fin);
        break;
    default:
        break; /* not read any more */
    }
    /* Remote publications land in remote subscriptions served by this
     * very thread. They are drained when the transport finishes a batch of
     * datagrams (rift_srv_rx_batch_done), so the MESSAGE frames leave with
     * that batch's ACKs; a batch can carry thousands of small frames,
     * though, enough to overflow a queue, so every drain_every deliveries
     * they are drained at once as well. */
    if (srv->drain_count >= srv->drain_every) {
        rift_srv_drain_now(srv);
    }
}

void rift_srv_stream_reset(srv_stream *ss, uint64_t code) {
    if (ss->state == SS_HELD) {
        /* Not in service yet: it will never be. */
        ss->state = SS_REFUSED;
        rift_quic_stream_shutdown_write(ss->qs, 0);
        return;
    }
    if (ss->state != SS_OPS) {
        return; /* delivery and one-shot streams are not read */
    }
    char text[64];
    snprintf(text, sizeof(text), "stream reset by peer: error %" PRIu64, code);
    rift_srv_fail(ss, RIFT_ERR_CLOSED, text);
}

void rift_srv_stream_stopped(srv_stream *ss) {
    if (ss->state == SS_DELIVERY ||
        (ss->state == SS_BUSY && ss->store_op != NULL &&
         !rift_srv_store_in_flight(ss))) {
        /* §2.9 SUBSCRIBE 6: the client cancelled; drop the subscription.
         * (A fetch that is writing gives up its records too.) */
        write_failed(ss);
    }
    /* Elsewhere the next write fails (and ends the stream then). */
    rift_srv_account(ss); /* the transport dropped what was unsent */
}

void rift_srv_stream_acked(srv_stream *ss, uint64_t unacked) {
    srv_conn *c = ss->conn;
    rift_server *srv = c->srv;
    ss->last_progress = rift_loop_now(srv->loop);
    c->last_progress = ss->last_progress;
    rift_srv_account(ss);
    if (ss->state == SS_DELIVERY && unacked < SRV_SEND_LOW) {
        rift_srv_delivery_resume(ss);
    } else if (ss->state == SS_BUSY && unacked < SRV_SEND_LOW) {
        rift_srv_fetch_resume(ss);
    }
    if (c->waiting > 0 && c->queued < SRV_CONN_LOW) {
        resume_waiters(c);
    }
}

void rift_srv_stream_closed(srv_stream *ss) {
    rift_quic_stream_set_user_data(ss->qs, NULL);
    ss->qs = NULL;
    rift_timer_stop(&ss->timer);
    rift_srv_account(ss);
    if (ss->state == SS_BUSY &&
        (ss->inbox != NULL || rift_srv_store_in_flight(ss))) {
        /* The operation runs on (as the original's task does) and keeps
         * its permit; its completion frees the record. (A fetch that was
         * writing its records has nobody left to write to.) */
        return;
    }
    rift_srv_stream_free(ss);
}
