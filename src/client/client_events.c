/*
 * client_events.c — what the transport reports to the Rift client (client
 * layer, client thread): the handshake and the AUTH exchange, stream data
 * cut into frames and dispatched to the stream's owner (a call, a
 * publisher, a subscription), stream resets, stops, ACKs and ends, and
 * the connection's close, which fails everything still attached.
 */
#include "client/client_internal.h"

#include <string.h>

/* ---- Connect ---- */

void rift_client_connect_complete(rift_client *c, int rc, const rift_error *e) {
    pthread_mutex_lock(&c->mu);
    if (!c->connect_done) {
        c->connect_done = true;
        c->connect_rc = rc;
        if (rc != 0) {
            rift_error_copy(&c->connect_err, e);
        }
        pthread_cond_signal(&c->connect_cond);
    }
    pthread_mutex_unlock(&c->mu);
    rift_timer_stop(&c->connect_timer);
}

void rift_client_connect_timeout(rift_timer *t, void *arg) {
    rift_client *c = arg;
    (void)t;
    rift_error e;
    rift_error_set(&e, RIFT_ERR_TIMEOUT, "%s", RIFT_CLIENT_ERR_TIMEOUT);
    rift_client_connect_complete(c, e.code, &e);
    if (c->conn != NULL && !c->dead) {
        rift_quic_conn_close(c->conn, 0, RIFT_CLIENT_ERR_SHUTDOWN,
                             strlen(RIFT_CLIENT_ERR_SHUTDOWN));
    }
}

static void on_handshake(rift_quic_conn *conn, void *ud) {
    rift_client *c = ud;
    rift_client_stream *cs;
    rift_error e;
    (void)conn;
    int rc = rift_client_stream_open(c, RIFT_CS_AUTH, NULL, &cs);
    if (rc != 0) {
        rift_error_set(&e, RIFT_ERR_CONNECTION, "cannot open the auth stream");
        rift_client_connect_complete(c, e.code, &e);
        return;
    }
    uint8_t buf[RIFT_FRAME_AUTH_MAX_BYTES + RIFT_FRAME_PREFIX_BYTES];
    rift_ssize n =
        rift_frame_encode_auth(buf, sizeof(buf), c->token, c->token_len);
    explicit_bzero(c->token, c->token_len);
    rift_quic_chunk ch = {buf, n > 0 ? (size_t)n : 0, NULL, NULL};
    rc = n < 0 ? (int)n : rift_quic_stream_write(cs->qs, &ch, 1, true);
    explicit_bzero(buf, sizeof(buf));
    if (rc != 0) {
        rift_error_set(&e, RIFT_ERR_CLOSED, "%s", RIFT_CLIENT_ERR_CLOSED);
        rift_client_connect_complete(c, e.code, &e);
    }
}

static void auth_frame(rift_client_stream *cs, const uint8_t *body,
                       size_t len) {
    rift_client *c = cs->c;
    rift_error e;
    int rc = rift_client_expect_ok(body, len, &e);
    cs->kind = RIFT_CS_NONE; /* the auth stream is done either way */
    if (rc == 0) {
        c->authed = true;
    }
    rift_client_connect_complete(c, rc, &e);
}

/* ---- QUIC callbacks ---- */

static void fail_owner(rift_client_stream *cs, const rift_error *e) {
    switch (cs->kind) {
    case RIFT_CS_AUTH:
        cs->kind = RIFT_CS_NONE;
        rift_client_connect_complete(cs->c, e->code, e);
        break;
    case RIFT_CS_CALL:
        rift_client_call_finish(cs->u.call, e->code, e);
        break;
    case RIFT_CS_PUB:
        rift_client_pub_fail(cs->u.pub, e, true);
        break;
    case RIFT_CS_SUB:
        rift_client_sub_fail(cs->u.sub, e, true);
        break;
    case RIFT_CS_PUSH:
        rift_client_push_fail(cs->u.push, e, true);
        break;
    case RIFT_CS_NONE:
        break;
    }
    cs->kind = RIFT_CS_NONE;
}

static void closed_error(rift_error *e) {
    rift_error_set(e, RIFT_ERR_CLOSED, "%s", RIFT_CLIENT_ERR_CLOSED);
}

/* Hands one complete frame to the stream's owner. Returns true when the
 * owner keeps the frame's flow-control bytes (a queued subscription
 * message); they are credited back when the application takes it. */
static bool dispatch(rift_client_stream *cs, const rift_frame_body *b) {
    switch (cs->kind) {
    case RIFT_CS_AUTH:
        auth_frame(cs, b->data, b->len);
        return false;
    case RIFT_CS_CALL:
        rift_client_call_frame(cs, b);
        return false;
    case RIFT_CS_PUB:
        rift_client_pub_frame(cs, b->data, b->len);
        return false;
    case RIFT_CS_SUB:
        return rift_client_sub_frame(cs, b);
    case RIFT_CS_PUSH:
        rift_client_push_frame(cs, b);
        return false;
    case RIFT_CS_NONE:
        break;
    }
    return false;
}

static void on_stream_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                           bool fin, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    uint64_t credit = 0;
    size_t off = 0;
    while (off < len && cs->kind != RIFT_CS_NONE) {
        rift_frame_body b;
        rift_error e;
        rift_ssize n =
            rift_frame_reader_feed(&cs->rd, data + off, len - off, &b, &e);
        if (n < 0) {
            fail_owner(cs, &e);
            break;
        }
        off += (size_t)n;
        if (b.data != NULL && !dispatch(cs, &b)) {
            credit += RIFT_FRAME_PREFIX_BYTES + b.len;
        }
    }
    if (cs->kind == RIFT_CS_SUB) {
        rift_client_sub_flush(cs->u.sub);
    }
    /* Bytes of a detached stream (and the tail after a failure) are not
     * anybody's: give them back at once. The transport never credits more
     * than it delivered. */
    credit += len - off;
    rift_client_stream_credit(cs, credit);
    if (fin) {
        cs->fin = cs->read_end = true;
        if (cs->kind != RIFT_CS_NONE) {
            rift_error e;
            closed_error(&e);
            fail_owner(cs, &e);
        }
    }
}

static void on_stream_reset(rift_quic_stream *s, uint64_t code, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    (void)code;
    cs->read_end = true;
    if (cs->kind == RIFT_CS_PUB) {
        rift_client_pub_read_end(cs, true);
    } else if (cs->kind != RIFT_CS_NONE) {
        rift_error e;
        closed_error(&e);
        fail_owner(cs, &e);
    }
}

static void on_stream_stopped(rift_quic_stream *s, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    /* Calls and subscriptions learn the outcome from the read side (the
     * server writes ERROR and FIN before it stops a stream). */
    if (cs->kind == RIFT_CS_PUB) {
        rift_client_pub_stopped(cs);
    }
}

static void on_stream_acked(rift_quic_stream *s, uint64_t unacked, void *ud) {
    rift_client_stream *cs = ud;
    (void)s;
    if (cs->kind == RIFT_CS_PUB) {
        rift_client_pub_acked(cs, unacked);
    } else if (cs->kind == RIFT_CS_PUSH) {
        rift_client_push_acked(cs, unacked);
    }
}

static void on_stream_close(rift_quic_stream *s, bool code_set, uint64_t code,
                            void *ud) {
    rift_client_stream *cs = ud;
    rift_client *c = cs->c;
    (void)s;
    (void)code_set;
    (void)code;
    cs->qs = NULL;
    if (cs->kind != RIFT_CS_NONE && c->conn != NULL &&
        !rift_quic_conn_is_established(c->conn)) {
        /* The connection is ending: conn_closed follows with the reason,
         * which is what the owner should report. */
        return;
    }
    if (cs->kind != RIFT_CS_NONE) {
        rift_error e;
        closed_error(&e);
        fail_owner(cs, &e);
    }
    rift_client_stream_free(cs);
}

static void close_error(const rift_quic_close_info *ci, rift_error *e) {
    const char *reason = (const char *)ci->reason;
    int len = (int)RIFT_MIN(ci->reason_len, (size_t)RIFT_ERROR_TEXT_MAX);
    switch (ci->kind) {
    case RIFT_QUIC_CLOSE_PEER_APP:
        if (len > 0) {
            rift_error_set(
                e, ci->code == 1 ? RIFT_ERR_PERMISSION : RIFT_ERR_CONNECTION,
                "%.*s", len, reason);
        } else {
            rift_error_set(
                e, ci->code == 1 ? RIFT_ERR_PERMISSION : RIFT_ERR_CONNECTION,
                "%s", ci->detail);
        }
        break;
    case RIFT_QUIC_CLOSE_LOCAL_APP:
        if (len > 0) {
            rift_error_set(e, RIFT_ERR_CONNECTION, "%.*s", len, reason);
        } else {
            rift_error_set(e, RIFT_ERR_CONNECTION, "%s",
                           RIFT_CLIENT_ERR_SHUTDOWN);
        }
        break;
    default:
        rift_error_set(e, ci->error != 0 ? ci->error : RIFT_ERR_CONNECTION,
                       "%s", ci->detail);
        break;
    }
}

void rift_client_fail_all(rift_client *c, const rift_error *e,
                          bool transport_gone) {
    while (c->streams != NULL) {
        rift_client_stream *cs = c->streams;
        if (transport_gone) {
            cs->qs = NULL;
        }
        fail_owner(cs, e);
        rift_client_stream_free(cs);
    }
    while (c->open_head != NULL) {
        rift_client_call_finish(c->open_head, e->code, e);
    }
}

static void on_conn_closed(rift_quic_conn *conn, const rift_quic_close_info *ci,
                           void *ud) {
    rift_client *c = ud;
    (void)conn;
    rift_error e;
    close_error(ci, &e);
    c->dead = true;
    /* Dead before anyone waiting hears about it: a caller woken by the
     * failure below must see rift_client_is_connected false. */
    pthread_mutex_lock(&c->mu);
    c->conn_dead = true;
    rift_error_copy(&c->conn_err, &e);
    pthread_mutex_unlock(&c->mu);
    rift_client_fail_all(c, &e, true);
    rift_client_connect_complete(c, e.code, &e);
}

static void on_streams_available(rift_quic_conn *conn, void *ud) {
    (void)conn;
    rift_client_calls_retry_open(ud);
}

const rift_quic_callbacks rift_client_quic_callbacks = {
    .handshake_done = on_handshake,
    .conn_closed = on_conn_closed,
    .stream_data = on_stream_data,
    .stream_reset = on_stream_reset,
    .stream_stopped = on_stream_stopped,
    .stream_acked = on_stream_acked,
    .stream_close = on_stream_close,
    .streams_available = on_streams_available,
};
