/*
 * session.c — connections and authentication of the protocol server (server
 * layer): the transport callbacks, the AUTH exchange on a connection's
 * first stream (docs/protocol-v1.md §2.6), streams held until it
 * succeeds, and connection bookkeeping.
 *
 * Authentication: the first client-initiated bidirectional stream (ID 0)
 * must carry one AUTH frame (at most 4,099 bytes) within handshake_timeout
 * of the handshake. A known token gets OK + FIN; an unknown one gets
 * ERROR(1, "authentication failed") + FIN and then the connection close
 * (code 1, same reason) once that frame is acknowledged or after a short
 * linger; anything else (another opcode, a malformed or oversized frame,
 * trailing bytes, the stream ending early, the deadline) goes straight to
 * the close. Streams the client opens before authentication completes are
 * held (their bytes buffered, not credited) and taken into service in
 * stream ID order once it succeeds.
 */
#include "server/stream_record.h"
#include "common/dlist.h"
#include "server/handlers.h"
#include "server/stream_events.h"

#include <string.h>

static const char auth_failed[] = "authentication failed";
/* The quota module's text (subject/quota.h), also the close reason. */
static const char text_conn_limit[] = "connection limit reached";

/* ---- Connection records ---- */

void rift_srv_conn_quota_give(srv_conn *c) {
    if (c->quota_taken) {
        c->quota_taken = false;
        rift_quota_give(c->srv->quota, c->srv->quota_slots[c->id_index],
                        RIFT_QUOTA_CONNECTIONS);
    }
}

static srv_conn *conn_new(rift_server *srv, rift_quic_conn *qc);

static void close_conn(srv_conn *c) {
    c->close_pending = false;
    rift_timer_stop(&c->auth_timer);
    if (c->qc != NULL) {
        const char *why = c->over_limit ? text_conn_limit : auth_failed;
        rift_quic_conn_close(c->qc, c->over_limit ? 0 : 1, why, strlen(why));
    }
}

/* Every failure except an unknown token: close without an ERROR frame. */
static void auth_abort(srv_conn *c) {
    if (c->state != SC_AUTH) {
        return;
    }
    c->state = SC_FAILED;
    c->srv->c.auth_failures++;
    close_conn(c);
}

static void auth_timer_cb(rift_timer *t, void *arg) {
    srv_conn *c = arg;
    (void)t;
    if (c->state == SC_AUTH) {
        auth_abort(c);
    } else if (c->close_pending) {
        close_conn(c);
    }
}

static srv_conn *conn_new(rift_server *srv, rift_quic_conn *qc) {
    srv_conn *c = rift_calloc(srv->mem, 1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->srv = srv;
    c->qc = qc;
    c->state = SC_AUTH;
    c->refs = 1;
    rift_timer_init(srv->loop, &c->auth_timer, auth_timer_cb, c);
    RIFT_DLIST_PUSH(srv->conns, c, prev, next);
    srv->c.connections++;
    rift_quic_conn_set_user_data(qc, c);
    return c;
}

/* ---- Authentication ---- */

/* Takes the streams held before authentication into service, lowest
 * stream ID first (the order quinn's accept_bi hands them out). */
static void release_held(srv_conn *c) {
    rift_server *srv = c->srv;
    if (c->held == 0) {
        return;
    }
    c->held = 0;
    for (;;) {
        srv_stream *best = NULL;
        for (srv_stream *ss = srv->all; ss; ss = ss->next) {
            if (ss->conn == c && ss->state == SS_HELD && ss->qs != NULL &&
                (best == NULL ||
                 rift_quic_stream_id(ss->qs) < rift_quic_stream_id(best->qs))) {
                best = ss;
            }
        }
        if (best == NULL) {
            return;
        }
        rift_srv_stream_accept(best);
    }
}

static void auth_reject(srv_conn *c, srv_stream *ss);

static void auth_accept(srv_conn *c, srv_stream *ss, const rift_identity *id) {
    rift_server *srv = c->srv;
    size_t index = (size_t)((const rift_auth_entry *)((const char *)id -
                                                      offsetof(rift_auth_entry,
                                                               identity)) -
                            srv->auth.entries);
    /* A known token, but the identity holds its share of connections (or
     * only the control reserve is left): ERROR(2) on the auth stream, then
     * a close with code 0 — no new wire code, and not an auth failure. */
    if (rift_quota_take(srv->quota, srv->quota_slots[index],
                        RIFT_QUOTA_CONNECTIONS, NULL) != 0) {
        c->over_limit = true;
        auth_reject(c, ss);
        return;
    }
    c->quota_taken = true;
    c->state = SC_READY;
    c->id = id;
    c->id_index = index;
    srv->id_conns[c->id_index]++;
    srv->c.authenticated++;
    rift_timer_stop(&c->auth_timer);
    ss->state = SS_DONE;
    (void)rift_srv_write_ok(ss, true);
    rift_quic_stream_shutdown_read(ss->qs, 0);
    release_held(c);
}

static void auth_reject(srv_conn *c, srv_stream *ss) {
    rift_server *srv = c->srv;
    c->state = SC_FAILED;
    if (!c->over_limit) {
        srv->c.auth_failures++;
    }
    ss->state = SS_DONE;
    uint8_t buf[64];
    const char *text = c->over_limit ? text_conn_limit : auth_failed;
    rift_ssize n = rift_frame_encode_error(
        buf, sizeof(buf), c->over_limit ? 2 : 1, text, strlen(text));
    rift_quic_chunk ch = {buf, (size_t)n, NULL, NULL};
    if (n < 0 || rift_quic_stream_write(ss->qs, &ch, 1, true) != 0) {
        close_conn(c);
        return;
    }
    /* The close would discard the ERROR frame if sent in the same flush;
     * give it until its ACK (or a short linger) to get through. */
    c->close_pending = true;
    rift_timer_start(&c->auth_timer,
                     rift_loop_now(srv->loop) + SRV_AUTH_ERROR_LINGER_NS);
}

static void auth_frame(srv_conn *c, srv_stream *ss, const uint8_t *body,
                       size_t len) {
    rift_frame_auth a;
    if (body[0] != RIFT_OP_AUTH ||
        rift_frame_decode_auth(body + 1, len - 1, &a, NULL) != 0) {
        auth_abort(c);
        return;
    }
    const rift_identity *id =
        rift_auth_table_lookup(&c->srv->auth, a.token, a.token_len);
    if (id == NULL) {
        auth_reject(c, ss);
    } else {
        auth_accept(c, ss, id);
    }
}

static void auth_data(srv_stream *ss, const uint8_t *data, size_t len,
                      bool fin) {
    srv_conn *c = ss->conn;
    if (c->state != SC_AUTH) {
        return; /* bytes after the AUTH frame are not read */
    }
    size_t off = 0;
    while (off < len) {
        rift_frame_body body;
        rift_ssize n = rift_frame_reader_feed(&ss->reader, data + off,
                                              len - off, &body, NULL);
        if (n < 0) {
            auth_abort(c);
            return;
        }
        off += (size_t)n;
        if (body.data != NULL) {
            rift_quic_stream_consumed(ss->qs, off);
            auth_frame(c, ss, body.data, body.len);
            return;
        }
    }
    rift_quic_stream_consumed(ss->qs, off);
    if (fin) {
        auth_abort(c); /* the stream ended before a whole frame */
    }
}

/* ---- Transport callbacks ---- */

static void on_handshake(rift_quic_conn *qc, void *ep_ud) {
    rift_server *srv = ep_ud;
    srv->c.accepted++;
    srv_conn *c = conn_new(srv, qc);
    if (c == NULL) {
        rift_quic_conn_close(qc, 1, auth_failed, sizeof(auth_failed) - 1);
        return;
    }
    rift_timer_start(&c->auth_timer,
                     rift_loop_now(srv->loop) + srv->handshake_ns);
}

static void on_conn_closed(rift_quic_conn *qc, const rift_quic_close_info *ci,
                           void *ud) {
    srv_conn *c = ud;
    (void)qc;
    (void)ci;
    if (c == NULL) {
        return;
    }
    rift_server *srv = c->srv;
    c->qc = NULL;
    rift_timer_stop(&c->auth_timer);
    /* §2.7: the connection's end aborts its stream tasks. A request still
     * waiting for its reply goes now, inbox included (otherwise a client
     * could pin inboxes, which count against max_subscriptions, for up to
     * 120 s per stream by reconnecting); store operations run to their
     * end (their records are freed by the completion). */
    for (srv_stream *ss = srv->all, *next; ss != NULL; ss = next) {
        next = ss->next;
        if (ss->conn == c && ss->state == SS_BUSY && ss->inbox != NULL &&
            ss->qs == NULL) {
            rift_srv_stream_free(ss);
        }
    }
    if (c->state == SC_READY) {
        srv->id_conns[c->id_index]--;
        srv->c.authenticated--;
    }
    rift_srv_conn_quota_give(c);
    srv->c.connections--;
    rift_srv_conn_unref(c);
}

static void on_stream_open(rift_quic_stream *qs, void *conn_ud) {
    srv_conn *c = conn_ud;
    if (c == NULL || c->state == SC_FAILED) {
        return; /* no record: the callbacks below ignore the stream */
    }
    srv_stream *ss;
    if (c->state == SC_AUTH) {
        bool first = rift_quic_stream_id(qs) == 0 && c->auth == NULL;
        ss = rift_srv_stream_new(c, qs, first ? SS_AUTH : SS_HELD);
        if (ss != NULL && first) {
            c->auth = ss;
        } else if (ss != NULL) {
            c->held++;
        }
    } else {
        ss = rift_srv_stream_new(c, qs, SS_HELD);
        if (ss != NULL) {
            rift_srv_stream_accept(ss);
            return;
        }
    }
    if (ss == NULL) {
        /* Out of memory: refuse the stream as if no permit were free. */
        rift_quic_stream_shutdown_write(qs, 2);
        rift_quic_stream_shutdown_read(qs, 2);
    }
}

static void on_stream_data(rift_quic_stream *qs, const uint8_t *data,
                           size_t len, bool fin, void *ud) {
    srv_stream *ss = ud;
    (void)qs;
    if (ss == NULL) {
        return;
    }
    if (ss->state == SS_AUTH) {
        auth_data(ss, data, len, fin);
    } else {
        rift_srv_stream_data(ss, data, len, fin);
    }
}

static void on_stream_reset(rift_quic_stream *qs, uint64_t code, void *ud) {
    srv_stream *ss = ud;
    (void)qs;
    if (ss == NULL) {
        return;
    }
    if (ss->state == SS_AUTH) {
        auth_abort(ss->conn);
    } else {
        rift_srv_stream_reset(ss, code);
    }
}

static void on_stream_stopped(rift_quic_stream *qs, void *ud) {
    srv_stream *ss = ud;
    (void)qs;
    if (ss == NULL) {
        return;
    }
    if (ss == ss->conn->auth) {
        /* Its write side only ever carries OK or ERROR. */
        if (ss->conn->close_pending) {
            close_conn(ss->conn);
        }
        return;
    }
    rift_srv_stream_stopped(ss);
}

static void on_stream_acked(rift_quic_stream *qs, uint64_t unacked, void *ud) {
    srv_stream *ss = ud;
    (void)qs;
    if (ss == NULL) {
        return;
    }
    if (ss == ss->conn->auth) {
        if (ss->conn->close_pending && unacked == 0) {
            close_conn(ss->conn);
        }
        return;
    }
    rift_srv_stream_acked(ss, unacked);
}

static void on_stream_close(rift_quic_stream *qs, bool code_set, uint64_t code,
                            void *ud) {
    srv_stream *ss = ud;
    (void)qs;
    (void)code_set;
    (void)code;
    if (ss == NULL) {
        return;
    }
    srv_conn *c = ss->conn;
    if (c->auth == ss) {
        c->auth = NULL;
        if (c->state == SC_AUTH) {
            auth_abort(c);
        } else if (c->close_pending) {
            close_conn(c);
        }
    }
    rift_srv_stream_closed(ss);
}

const rift_quic_callbacks rift_srv_callbacks = {
    .handshake_done = on_handshake,
    .conn_closed = on_conn_closed,
    .stream_open = on_stream_open,
    .stream_data = on_stream_data,
    .stream_reset = on_stream_reset,
    .stream_stopped = on_stream_stopped,
    .stream_acked = on_stream_acked,
    .stream_close = on_stream_close,
    .rx_batch_done = rift_srv_rx_batch_done,
};
