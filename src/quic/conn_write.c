/*
 * conn_write.c — the write path of a QUIC connection (quic layer):
 * queued shutdowns and credit, STOP_SENDING probes, stream events,
 * packets through ngtcp2_conn_writev_stream into the UDP batch, the ACK
 * hold, and the endpoint's write scheduling (dirty connections written
 * at the end of each handler, one UDP flush).
 */
#include "quic/quic_internal.h"

#include <stdint.h>

/* Vectors handed to one writev_stream call. */
#define WRITE_VECS 16
/* Packets per write pass: what GSO can carry in one message. */
#define MAX_PKTS_PER_WRITE 64

static void stream_sent(rift_quic_stream *s, ngtcp2_ssize nd, bool fin) {
    if (nd > 0) {
        rift_sendq_consume(&s->q, (size_t)nd);
    }
    if (fin && rift_sendq_unsent(&s->q) == 0) {
        s->flags |= STREAM_FIN_SENT;
    }
    if (!rift_quic_stream_wants_write(s)) {
        rift_quic_ready_remove(s);
    } else if (s->ready_next != NULL) {
        /* Round robin: the stream goes to the back of the line. */
        rift_quic_ready_remove(s);
        rift_quic_ready_add(s);
    }
}

/* The write side is dead inside ngtcp2 (our reset, or the peer's
 * STOP_SENDING): drop unsent data and report a stop we did not cause. */
static void stream_write_dead(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    rift_quic_ready_remove(s);
    rift_sendq_truncate(&s->q);
    if (!(s->flags & (STREAM_WR_SHUT | STREAM_WR_STOPPED))) {
        s->flags |= STREAM_WR_STOPPED;
        if (!(s->flags & STREAM_IN_EVENTS)) {
            s->flags |= STREAM_IN_EVENTS;
            s->ev_next = c->events;
            c->events = s;
        }
    }
}

/* Carries out queued shutdowns and credit. ngtcp2's shutdown functions
 * only queue frames (checked in 1.11), so no stream closes under us. */
static void apply_ops(rift_quic_conn *c) {
    while (c->ops) {
        rift_quic_stream *s = c->ops;
        c->ops = s->ops_next;
        s->flags &= ~(uint32_t)STREAM_IN_OPS;
        if (s->credit_pending > 0) {
            uint64_t n = s->credit_pending;
            s->credit_pending = 0;
            s->uncredited -= n;
            ngtcp2_conn_extend_max_stream_offset(c->qc, s->id, n);
            ngtcp2_conn_extend_max_offset(c->qc, n);
        }
        if (s->flags & STREAM_DO_STOP) {
            s->flags &= ~(uint32_t)STREAM_DO_STOP;
            ngtcp2_conn_shutdown_stream_read(c->qc, 0, s->id, s->stop_code);
        }
        if (s->flags & STREAM_DO_RESET) {
            s->flags &= ~(uint32_t)STREAM_DO_RESET;
            ngtcp2_conn_shutdown_stream_write(c->qc, 0, s->id, s->reset_code);
        }
    }
}

/* ngtcp2 1.11 has no callback for a received STOP_SENDING (recv_stop_sending
 * came in 1.24): it only marks the stream's write side shut and queues the
 * RESET_STREAM answer. Streams whose app wants to know at once (a
 * subscription that may have nothing to send for hours) are probed after
 * packets were read. The probe is a writev_stream call that cannot write:
 * ngtcp2_conn_writev_stream_versioned (1.11) looks the stream up, answers
 * NGTCP2_ERR_STREAM_SHUT_WR if its write side is shut, and otherwise
 * rejects the vector, whose length no varint can carry, with
 * NGTCP2_ERR_INVALID_ARGUMENT before it touches any state. Either way
 * nothing is sent and no packet is built; a probe costs a stream lookup.
 * (test_server_limits.c stop_sending_alone_cancels_at_once covers it.) */
static void probe_stops(rift_quic_conn *c) {
    c->rx_probe = false;
    if (c->nwatch == 0) {
        return;
    }
    static uint8_t dummy;
    ngtcp2_vec unwritable = {&dummy, SIZE_MAX};
    for (rift_quic_stream *s = c->streams; s; s = s->all_next) {
        if (!(s->flags & STREAM_WATCH_STOP) ||
            (s->flags &
             (STREAM_WR_SHUT | STREAM_WR_STOPPED | STREAM_FIN_QUEUED))) {
            continue;
        }
        ngtcp2_ssize nd;
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(
            c->qc, NULL, NULL, NULL, 0, &nd, 0, s->id, &unwritable, 1, 0);
        if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
            stream_write_dead(s);
        }
    }
}

static void deliver_events(rift_quic_conn *c) {
    while (c->events && c->state < CONN_CLOSING) {
        rift_quic_stream *s = c->events;
        c->events = s->ev_next;
        s->flags &= ~(uint32_t)STREAM_IN_EVENTS;
        if (c->ep->cbs.stream_stopped) {
            c->ep->cbs.stream_stopped(s, s->user_data);
        }
    }
}

static void arm_timer(rift_quic_conn *c) {
    ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(c->qc);
    if (exp == UINT64_MAX) {
        rift_timer_stop(&c->timer);
    } else {
        rift_timer_start(&c->timer, exp);
    }
}

/* What one writev_stream call takes from the stream at the head of the
 * ready list (none: only control frames and ACKs). */
typedef struct stream_vecs {
    ngtcp2_vec v[WRITE_VECS];
    size_t nv;
    int64_t sid;
    uint32_t flags;
    bool fin;
} stream_vecs;

static void take_vecs(rift_quic_stream *s, stream_vecs *sv) {
    sv->nv = 0;
    sv->sid = -1;
    sv->flags = 0;
    sv->fin = false;
    if (s == NULL) {
        return;
    }
    uint64_t total;
    /* MORE lets ngtcp2 pack several streams into one packet. */
    sv->flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
    sv->sid = s->id;
    sv->nv = rift_sendq_peek(&s->q, sv->v, WRITE_VECS, &total);
    /* FIN only when the vectors cover everything left: ngtcp2 applies it
     * as soon as the given data fits. */
    if ((s->flags & STREAM_FIN_QUEUED) && !(s->flags & STREAM_FIN_SENT) &&
        total == rift_sendq_unsent(&s->q)) {
        sv->flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        sv->fin = true;
    }
}

/* Returns false when the connection failed. */
static bool write_pkts(rift_quic_conn *c) {
    rift_quic_endpoint *ep = c->ep;
    ngtcp2_tstamp ts = rift_now_ns();
    /* Room for the largest packet (a path MTU probe may be that big);
     * the send quantum is counted in packets of the path's current size. */
    size_t mtu = ngtcp2_conn_get_max_tx_udp_payload_size(c->qc);
    size_t max_pkts = ngtcp2_conn_get_send_quantum(c->qc) /
                      ngtcp2_conn_get_path_max_tx_udp_payload_size(c->qc);
    if (max_pkts < 1) {
        max_pkts = 1;
    } else if (max_pkts > MAX_PKTS_PER_WRITE) {
        max_pkts = MAX_PKTS_PER_WRITE;
    }
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    uint8_t *buf = NULL;
    size_t npkts = 0;
    c->in_write = true;
    for (;;) {
        if (buf == NULL) {
            /* Between packets only: after WRITE_MORE the same buffer must
             * be passed again. */
            if (rift_udp_blocked(&ep->udp)) {
                break;
            }
            buf = rift_udp_tx_reserve(&ep->udp, mtu);
        }
        rift_quic_stream *s = c->ready_head;
        stream_vecs sv;
        take_vecs(s, &sv);
        ngtcp2_ssize nd = -1;
        ngtcp2_ssize n =
            ngtcp2_conn_writev_stream(c->qc, &ps.path, &pi, buf, mtu, &nd,
                                      sv.flags, sv.sid, sv.v, sv.nv, ts);
        bool fin = sv.fin;
        if (n < 0) {
            switch (n) {
            case NGTCP2_ERR_WRITE_MORE:
                if (s != NULL) {
                    stream_sent(s, nd, fin);
                }
                continue;
            case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                s->flags |= STREAM_BLOCKED;
                rift_quic_ready_remove(s);
                continue;
            case NGTCP2_ERR_STREAM_SHUT_WR:
                stream_write_dead(s);
                continue;
            case NGTCP2_ERR_STREAM_NOT_FOUND:
                rift_quic_ready_remove(s);
                continue;
            default:
                break;
            }
            c->in_write = false;
            rift_quic_conn_local_error(c, (int)n);
            return false;
        }
        if (s != NULL && nd >= 0) {
            stream_sent(s, nd, fin);
        }
        if (n == 0) {
            break; /* nothing more now: cwnd, pacing or no data */
        }
        rift_udp_tx_commit(&ep->udp, ps.path.remote.addr,
                           ps.path.remote.addrlen, ps.path.local.addr,
                           ps.path.local.addrlen, (size_t)n);
        buf = NULL;
        if (++npkts >= max_pkts) {
            break; /* send quantum used: the pacing timer resumes */
        }
    }
    c->in_write = false;
    ngtcp2_conn_update_pkt_tx_time(c->qc, ts);
    return true;
}

/* True when the connection has nothing to send but the ACK of one packet
 * that carried stream data, less than ack_hold ago: that packet probably
 * asked for an answer, which will carry the ACK (settings.ack_hold).
 * Shutdowns, a close, stream data to send or a second data packet end
 * the hold; credit does not (it rides along). The timer waits for the end
 * of the hold: whatever else ngtcp2 wanted it for (the ACK itself; a
 * pacing slot with nothing to pace; loss detection, whose PTO includes
 * the peer's 25 ms max_ack_delay allowance) can wait that long too. */
static bool hold_ack(rift_quic_conn *c) {
    if (c->rx_data_pkts != 1 || !c->confirmed || c->close_requested ||
        c->ready_head != NULL || c->events != NULL) {
        return false;
    }
    for (rift_quic_stream *s = c->ops; s; s = s->ops_next) {
        if (s->flags & (STREAM_DO_RESET | STREAM_DO_STOP)) {
            return false;
        }
    }
    if (rift_now_ns() >= c->hold_until) {
        return false;
    }
    apply_ops(c);
    ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(c->qc);
    rift_timer_start(&c->timer, exp > c->hold_until ? exp : c->hold_until);
    return true;
}

/* Writes whatever the connection has to send; |may_hold|: unless only an
 * ACK that may wait (hold_ack). */
static void conn_write(rift_quic_conn *c, bool may_hold) {
    if (c->state >= CONN_CLOSING) {
        return;
    }
    if (c->rx_probe) {
        probe_stops(c); /* a stop found ends any ACK hold (events) */
    }
    if (may_hold && hold_ack(c)) {
        return;
    }
    c->rx_data_pkts = 0;
    apply_ops(c);
    if (c->close_requested) {
        rift_quic_conn_enter_closing(c);
        return;
    }
    if (!write_pkts(c)) {
        return;
    }
    /* Reports may queue more work; that marks the connection dirty
     * again and the endpoint's flush loop comes back to it. */
    deliver_events(c);
    if (c->state >= CONN_CLOSING) {
        return;
    }
    arm_timer(c);
}

void rift_quic_conn_write(rift_quic_conn *c) {
    const rift_quic_settings *st = &c->ep->settings;
    conn_write(c, st->ack_hold > 0 || st->answer_hold > 0);
}

void rift_quic_conn_write_unheld(rift_quic_conn *c) {
    conn_write(c, false);
}

/* ---- The endpoint's write scheduling ---- */

void rift_quic_endpoint_mark_dirty(rift_quic_endpoint *ep, rift_quic_conn *c) {
    if (c->dirty) {
        return;
    }
    c->dirty = true;
    c->dirty_next = NULL;
    if (ep->dirty_tail) {
        ep->dirty_tail->dirty_next = c;
    } else {
        ep->dirty_head = c;
    }
    ep->dirty_tail = c;
    /* Outside a handler (an app call from a timer or post): flush on the
     * next iteration, which also batches many calls into one write. */
    if (!ep->processing && !rift_timer_active(&ep->flush_timer)) {
        rift_timer_start(&ep->flush_timer, 0);
    }
}

static void update_io(rift_quic_endpoint *ep) {
    unsigned want = RIFT_IO_READ;
    if (rift_udp_blocked(&ep->udp)) {
        want |= RIFT_IO_WRITE;
    }
    rift_io_update(&ep->io, want);
}

void rift_quic_endpoint_flush(rift_quic_endpoint *ep) {
    bool outer = !ep->processing;
    ep->processing = true;
    while (ep->dirty_head) {
        rift_quic_conn *c = ep->dirty_head;
        ep->dirty_head = c->dirty_next;
        if (ep->dirty_head == NULL) {
            ep->dirty_tail = NULL;
        }
        c->dirty = false;
        rift_quic_conn_write(c);
    }
    rift_udp_tx_flush(&ep->udp);
    update_io(ep);
    if (outer) {
        ep->processing = false;
    }
}
