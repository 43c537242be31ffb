/*
 * conn_api.c — the connection and stream functions of quic.h (quic
 * layer): user data, addresses, close, opening streams, writing into a
 * stream's send queue, credit, shutdowns. Each records what to do and
 * marks the connection dirty; the endpoint's flush calls into ngtcp2.
 */
#include "quic/quic_internal.h"

#include <string.h>

void rift_quic_conn_set_user_data(rift_quic_conn *conn, void *ud) {
    conn->user_data = ud;
}

void *rift_quic_conn_get_user_data(const rift_quic_conn *conn) {
    return conn->user_data;
}

void rift_quic_conn_peer_addr(const rift_quic_conn *conn,
                              struct sockaddr_storage *ss, socklen_t *len) {
    const ngtcp2_path *p = ngtcp2_conn_get_path(conn->qc);
    socklen_t n = (socklen_t)p->remote.addrlen;
    if (n > sizeof(*ss)) {
        n = sizeof(*ss);
    }
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, p->remote.addr, n);
    *len = n;
}

bool rift_quic_conn_is_established(const rift_quic_conn *conn) {
    return conn->state == CONN_ESTABLISHED && !conn->close_requested;
}

void rift_quic_conn_close(rift_quic_conn *conn, uint64_t code,
                          const char *reason, size_t reason_len) {
    if (conn->state >= CONN_CLOSING || conn->close_requested) {
        return;
    }
    if (reason_len > RIFT_QUIC_REASON_MAX) {
        reason_len = RIFT_QUIC_REASON_MAX;
    }
    if (reason_len > 0) {
        memcpy(conn->reason_buf, reason, reason_len);
    }
    ngtcp2_ccerr_set_application_error(
        &conn->ccerr, code, (const uint8_t *)conn->reason_buf, reason_len);
    conn->close_requested = true;
    rift_quic_conn_set_close_info(conn, RIFT_QUIC_CLOSE_LOCAL_APP, code,
                                  RIFT_ERR_CONNECTION,
                                  "connection closed locally");
    conn->close_info.reason = (const uint8_t *)conn->reason_buf;
    conn->close_info.reason_len = reason_len;
    rift_quic_endpoint_mark_dirty(conn->ep, conn);
}

int rift_quic_conn_open_stream(rift_quic_conn *conn, void *ud,
                               rift_quic_stream **ps) {
    if (!rift_quic_conn_is_established(conn)) {
        return RIFT_ERR_CLOSED;
    }
    if (ngtcp2_conn_get_streams_bidi_left(conn->qc) == 0) {
        return RIFT_ERR_AGAIN;
    }
    rift_quic_stream *s = rift_quic_stream_new(conn, -1, ud);
    if (s == NULL) {
        return RIFT_ERR_NOMEM;
    }
    int64_t id;
    int rv = ngtcp2_conn_open_bidi_stream(conn->qc, &id, s);
    if (rv != 0) {
        rift_quic_stream_free(s);
        if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) {
            return RIFT_ERR_AGAIN;
        }
        return rv == NGTCP2_ERR_NOMEM ? RIFT_ERR_NOMEM : RIFT_ERR_CLOSED;
    }
    s->id = id;
    *ps = s;
    return 0;
}

void rift_quic_conn_answer_later(rift_quic_conn *conn) {
    /* Only meaningful while a packet's stream data is being delivered:
     * read_pkt turns it into the hold of that packet. */
    if (conn->rx_data_seen) {
        conn->rx_answer_later = true;
    }
}

uint64_t rift_quic_conn_streams_left(const rift_quic_conn *conn) {
    if (conn->state != CONN_ESTABLISHED) {
        return 0;
    }
    return ngtcp2_conn_get_streams_bidi_left(conn->qc);
}

void rift_quic_conn_get_rtt(const rift_quic_conn *conn, uint64_t *srtt,
                            uint64_t *cwnd) {
    ngtcp2_conn_info ci;
    ngtcp2_conn_get_conn_info(conn->qc, &ci);
    if (srtt) {
        *srtt = ci.smoothed_rtt;
    }
    if (cwnd) {
        *cwnd = ci.cwnd;
    }
}

/* ---- Public: streams ---- */

int64_t rift_quic_stream_id(const rift_quic_stream *s) {
    return s->id;
}

rift_quic_conn *rift_quic_stream_conn(const rift_quic_stream *s) {
    return s->conn;
}

void rift_quic_stream_set_user_data(rift_quic_stream *s, void *ud) {
    s->user_data = ud;
}

void *rift_quic_stream_get_user_data(const rift_quic_stream *s) {
    return s->user_data;
}

int rift_quic_stream_write(rift_quic_stream *s, const rift_quic_chunk *chunks,
                           size_t n, bool fin) {
    rift_quic_conn *c = s->conn;
    if ((s->flags & (STREAM_FIN_QUEUED | STREAM_WR_SHUT | STREAM_WR_STOPPED)) ||
        c->state >= CONN_CLOSING || c->close_requested) {
        return RIFT_ERR_CLOSED;
    }
    size_t copy = 0, entries = 0;
    for (size_t i = 0; i < n; i++) {
        if (chunks[i].release == NULL) {
            copy += chunks[i].len;
        }
        entries++;
    }
    if (rift_sendq_reserve(&s->q, entries, copy) != 0) {
        return RIFT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const rift_quic_chunk *k = &chunks[i];
        if (k->release == NULL) {
            rift_sendq_append_copy(&s->q, k->data, k->len);
        } else {
            rift_sendq_append_ref(&s->q, k->data, k->len, k->release, k->owner);
        }
    }
    if (fin) {
        s->flags |= STREAM_FIN_QUEUED;
    }
    if (rift_quic_stream_wants_write(s)) {
        rift_quic_ready_add(s);
        rift_quic_endpoint_mark_dirty(c->ep, c);
    }
    return 0;
}

uint64_t rift_quic_stream_unacked(const rift_quic_stream *s) {
    return rift_sendq_unacked(&s->q);
}

void rift_quic_stream_consumed(rift_quic_stream *s, uint64_t n) {
    uint64_t room = s->uncredited - s->credit_pending;
    if (n > room) {
        n = room; /* never credit more than was delivered */
    }
    if (n == 0) {
        return;
    }
    s->credit_pending += n;
    rift_quic_ops_add(s);
    rift_quic_endpoint_mark_dirty(s->conn->ep, s->conn);
}

void rift_quic_stream_shutdown_write(rift_quic_stream *s, uint64_t code) {
    if (s->flags & (STREAM_WR_SHUT | STREAM_WR_STOPPED)) {
        return;
    }
    s->flags |= STREAM_WR_SHUT | STREAM_DO_RESET;
    s->reset_code = code;
    rift_quic_ready_remove(s);
    rift_sendq_truncate(&s->q);
    rift_quic_ops_add(s);
    rift_quic_endpoint_mark_dirty(s->conn->ep, s->conn);
}

void rift_quic_stream_watch_stop(rift_quic_stream *s) {
    if (!(s->flags & STREAM_WATCH_STOP)) {
        s->flags |= STREAM_WATCH_STOP;
        s->conn->nwatch++;
    }
}

void rift_quic_stream_shutdown_read(rift_quic_stream *s, uint64_t code) {
    if (s->flags & STREAM_RD_SHUT) {
        return;
    }
    s->flags |= STREAM_RD_SHUT;
    if (s->flags & STREAM_READ_DONE) {
        return; /* nothing left to stop */
    }
    s->flags |= STREAM_DO_STOP;
    s->stop_code = code;
    rift_quic_ops_add(s);
    rift_quic_endpoint_mark_dirty(s->conn->ep, s->conn);
}
