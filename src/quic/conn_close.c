/*
 * conn_close.c — ending a QUIC connection (quic layer): the close reason
 * reported to the application, our CONNECTION_CLOSE and the closing
 * period, the peer's close and the draining period, local errors and
 * ICMP failures.
 */
#include "quic/quic_internal.h"

#include <stdio.h>
#include <string.h>

void rift_quic_conn_set_close_info(rift_quic_conn *c, rift_quic_close_kind kind,
                                   uint64_t code, int error,
                                   const char *detail) {
    rift_quic_close_info *ci = &c->close_info;
    if (ci->kind != 0) {
        return; /* the first reason wins */
    }
    ci->kind = kind;
    ci->code = code;
    ci->error = error;
    snprintf(ci->detail, sizeof(ci->detail), "%s", detail);
}

/* Reports the end to the app once: stream_close for every stream left,
 * then conn_closed. Also releases the connection permit. */
void rift_quic_conn_terminate(rift_quic_conn *c) {
    rift_quic_endpoint *ep = c->ep;
    if (c->counted) {
        c->counted = false;
        ep->nlive--;
    }
    if (!c->visible) {
        if (ep->server) {
            ep->stats.conns_failed++;
        }
        while (c->streams) {
            rift_quic_stream_free(c->streams);
        }
        return;
    }
    if (c->notified) {
        return;
    }
    c->notified = true;
    while (c->streams) {
        rift_quic_stream *s = c->streams;
        if (ep->cbs.stream_close) {
            ep->cbs.stream_close(s, false, 0, s->user_data);
        }
        rift_quic_stream_free(s);
    }
    if (ep->cbs.conn_closed) {
        ep->cbs.conn_closed(c, &c->close_info, c->user_data);
    }
}

/* Leaves no state behind: the timer frees the connection (server) or
 * parks it until rift_quic_endpoint_del (client). */
void rift_quic_conn_kill(rift_quic_conn *c) {
    c->state = CONN_DEAD;
    rift_timer_start(&c->timer, 0);
}

/* Writes our CONNECTION_CLOSE (from c->ccerr), keeps it for the closing
 * period, and reports the end. */
void rift_quic_conn_enter_closing(rift_quic_conn *c) {
    rift_quic_endpoint *ep = c->ep;
    if (c->state >= CONN_CLOSING) {
        return;
    }
    rift_tstamp now = rift_now_ns();
    if (!ngtcp2_conn_in_closing_period(c->qc) &&
        !ngtcp2_conn_in_draining_period(c->qc)) {
        uint8_t *buf = rift_udp_tx_reserve(&ep->udp, RIFT_UDP_MAX_PKT);
        ngtcp2_path_storage ps;
        ngtcp2_pkt_info pi;
        ngtcp2_path_storage_zero(&ps);
        ngtcp2_ssize n = ngtcp2_conn_write_connection_close(
            c->qc, &ps.path, &pi, buf, RIFT_UDP_MAX_PKT, &c->ccerr, now);
        if (n > 0) {
            c->close_pkt = rift_malloc(ep->mem, (size_t)n);
            if (c->close_pkt) {
                memcpy(c->close_pkt, buf, (size_t)n);
                c->close_len = (size_t)n;
            }
            rift_udp_tx_commit(&ep->udp, ps.path.remote.addr,
                               ps.path.remote.addrlen, ps.path.local.addr,
                               ps.path.local.addrlen, (size_t)n);
        }
    }
    c->state = CONN_CLOSING;
    c->close_deadline = now + 3 * ngtcp2_conn_get_pto(c->qc);
    rift_timer_start(&c->timer, c->close_deadline);
    rift_quic_conn_terminate(c);
}

static void enter_draining(rift_quic_conn *c) {
    c->state = CONN_DRAINING;
    c->close_deadline = rift_now_ns() + 3 * ngtcp2_conn_get_pto(c->qc);
    rift_timer_start(&c->timer, c->close_deadline);
    rift_quic_conn_terminate(c);
}

/* The peer closed (or reset): take its reason from ngtcp2. */
void rift_quic_conn_peer_closed(rift_quic_conn *c) {
    if (c->reset_received) {
        rift_quic_conn_set_close_info(
            c, RIFT_QUIC_CLOSE_STATELESS_RESET, 0, RIFT_ERR_CONNECTION,
            "connection reset by peer (stateless reset)");
        enter_draining(c);
        return;
    }
    const ngtcp2_ccerr *ce = ngtcp2_conn_get_ccerr(c->qc);
    char detail[160];
    rift_quic_close_info *ci = &c->close_info;
    if (ce->type == NGTCP2_CCERR_TYPE_APPLICATION) {
        snprintf(detail, sizeof(detail),
                 "peer closed the connection (application code %llu)",
                 (unsigned long long)ce->error_code);
        rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_PEER_APP,
                                      ce->error_code, RIFT_ERR_CONNECTION,
                                      detail);
    } else if (ce->error_code > RIFT_QUIC_CRYPTO_ERROR &&
               ce->error_code <= RIFT_QUIC_CRYPTO_ERROR + 0xff) {
        snprintf(detail, sizeof(detail), "peer closed: TLS alert %u",
                 (unsigned)(ce->error_code - RIFT_QUIC_CRYPTO_ERROR));
        rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_PEER_TRANSPORT,
                                      ce->error_code, RIFT_ERR_TLS, detail);
    } else if (ce->error_code == RIFT_QUIC_CONNECTION_REFUSED) {
        rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_PEER_TRANSPORT,
                                      ce->error_code, RIFT_ERR_CONNECTION,
                                      "connection refused by server");
    } else {
        snprintf(detail, sizeof(detail),
                 "peer closed the connection (transport code 0x%llx)",
                 (unsigned long long)ce->error_code);
        rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_PEER_TRANSPORT,
                                      ce->error_code, RIFT_ERR_CONNECTION,
                                      detail);
    }
    if (ci->reason == NULL && ce->reasonlen > 0) {
        size_t n = ce->reasonlen < sizeof(c->reason_buf)
                       ? ce->reasonlen
                       : sizeof(c->reason_buf);
        memcpy(c->reason_buf, ce->reason, n);
        ci->reason = (const uint8_t *)c->reason_buf;
        ci->reason_len = n;
    }
    enter_draining(c);
}

/* A local error |rv| from ngtcp2: close with the matching error. */
void rift_quic_conn_local_error(rift_quic_conn *c, int rv) {
    char detail[256];
    if (rv == NGTCP2_ERR_CRYPTO || c->alpn_failed) {
        uint8_t alert = c->alpn_failed ? 120 : ngtcp2_conn_get_tls_alert(c->qc);
        if (!c->alpn_failed) {
            ngtcp2_ccerr_set_tls_alert(&c->ccerr, alert, NULL, 0);
        }
        if (c->alpn_failed) {
            snprintf(detail, sizeof(detail), "server did not select ALPN %s",
                     RIFT_ALPN);
        } else if (!rift_quic_tls_verify_failure(c, detail, sizeof(detail))) {
            snprintf(detail, sizeof(detail), "TLS handshake failed (alert %u)",
                     (unsigned)alert);
        }
        rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_LOCAL_TRANSPORT,
                                      RIFT_QUIC_CRYPTO_ERROR + alert,
                                      RIFT_ERR_TLS, detail);
    } else {
        ngtcp2_ccerr_set_liberr(&c->ccerr, rv, NULL, 0);
        snprintf(detail, sizeof(detail), "QUIC error: %s", ngtcp2_strerror(rv));
        rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_LOCAL_TRANSPORT,
                                      c->ccerr.error_code, RIFT_ERR_CONNECTION,
                                      detail);
    }
    rift_quic_conn_enter_closing(c);
}

void rift_quic_conn_network_error(rift_quic_conn *c, int errnum) {
    if (c->state != CONN_HANDSHAKE) {
        return; /* established connections ride out ICMP noise */
    }
    char detail[128];
    snprintf(detail, sizeof(detail), "cannot reach server: %s",
             strerror(errnum));
    rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_NETWORK, 0,
                                  RIFT_ERR_CONNECTION, detail);
    rift_quic_conn_terminate(c);
    rift_quic_conn_kill(c);
}

void rift_quic_conn_close_now(rift_quic_conn *c, uint64_t code,
                              const char *reason) {
    if (c->state >= CONN_CLOSING) {
        return;
    }
    if (!c->close_requested) {
        ngtcp2_ccerr_set_application_error(
            &c->ccerr, code, (const uint8_t *)reason, strlen(reason));
    }
    /* No callbacks: the endpoint is going away. */
    c->visible = false;
    rift_quic_conn_enter_closing(c);
}
