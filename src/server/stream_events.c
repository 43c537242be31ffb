/*
 * stream_events.c — operation streams of the protocol server (server layer):
 * the transport's stream events, permits, streams held before authentication,
 * cutting the byte stream into frames (zero-copy when a frame arrived
 * whole) and dispatch by opcode to the handlers, which all take the same
 * srv_frame: publish.c (PUBLISH, PUBLISH_ACK, PING), deliver.c
 * (SUBSCRIBE, REQUEST), stream_ops.c (10, 12, 13, 15).
 *
 * Reference: docs/protocol-v1.md §2.7 (lifecycle and deadlines), §2.8
 * (stream kinds), §2.9 (opcode checks).
 */
#include "codec/frame_ext.h"
#include "server/handlers.h"
#include "server/stream_events.h"
#include "server/stream_record.h"
#include "store/kick_hold.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char text_closed[] = "QUIC stream closed";


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
        rift_srv_stop_waiting(ss);
        if (ss->state == SS_DELIVERY) {
            rift_srv_delivery_resume(ss);
        } else if (ss->state == SS_PUSH) {
            rift_srv_push_resume(ss);
        } else if (ss->state == SS_BUSY) {
            rift_srv_fetch_resume(ss);
        }
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
        /* This replay may run outside a receive batch (a permit freed by
         * a completion): then no rx_batch_done flushes what it held. */
        bool in_hold = rift_stream_kicks_held();
        rift_srv_stream_data(ss, held, len, fin);
        if (!in_hold) {
            rift_stream_flush_kicks();
        }
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


static void handle_frame(srv_stream *ss, const rift_frame_body *body) {
    rift_error err;
    if (rift_ext_opcode_client(body->data[0])) {
        /* Extensions (opcodes 16 and up), before the v1 check that calls
         * them unknown. */
        srv_frame x = {body->data[0], body->data + 1, body->len - 1,
                       body->assembled};
        rift_srv_ext_op(ss, &x);
        return;
    }
    if (rift_frame_check_operation(body->data[0], &err) != 0) {
        rift_srv_fail_err(ss, &err);
        return;
    }
    srv_frame f = {body->data[0], body->data + 1, body->len - 1,
                   body->assembled};
    switch (f.opcode) {
    case RIFT_OP_PUBLISH:
    case RIFT_OP_PUBLISH_ACK:
        rift_srv_publish(ss, &f);
        break;
    case RIFT_OP_PING:
        rift_srv_ping(ss, &f);
        break;
    case RIFT_OP_SUBSCRIBE:
        rift_srv_subscribe(ss, &f);
        break;
    case RIFT_OP_REQUEST:
        rift_srv_request(ss, &f);
        break;
    default: /* 10, 12, 13, 15: the rest are refused above */
        rift_srv_stream_op(ss, &f);
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
            rift_srv_fail_err(ss, &err);
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
    /* The store appends of this data's frames stage their records and
     * wake each stream's writer once, when the receive batch is done
     * (rift_srv_rx_batch_done flushes; store/kick_hold.h), instead of
     * having the writer race the rest of the batch record by record. */
    rift_stream_hold_kicks();
    switch (ss->state) {
    case SS_HELD:
        hold(ss, data, len, fin);
        break;
    case SS_OPS:
        ops_data(ss, data, len, fin);
        break;
    case SS_PUSH:
        rift_srv_push_data(ss, data, len, fin);
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
    if (ss->state == SS_PUSH) {
        rift_srv_write_failed(ss); /* the client ended its push */
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
    if (ss->state == SS_DELIVERY || ss->state == SS_PUSH ||
        (ss->state == SS_BUSY && ss->store_op != NULL &&
         !rift_srv_store_in_flight(ss))) {
        /* §2.9 SUBSCRIBE 6: the client cancelled; drop the subscription.
         * (A fetch that is writing gives up its records too.) */
        rift_srv_write_failed(ss);
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
    } else if (ss->state == SS_PUSH && unacked < SRV_SEND_LOW) {
        rift_srv_push_resume(ss);
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
         * writing its records has nobody left to write to.) A backend's
         * waiting fetch is told, so that it answers now. */
        rift_srv_store_abandon(ss);
        return;
    }
    rift_srv_stream_free(ss);
}
