/*
 * conn_callbacks.c — the ngtcp2 callbacks of a QUIC connection (quic layer):
 * connection IDs, handshake, stream open / data / ACK / close / reset,
 * credit, and the callback tables of a server and a client connection.
 * They run inside ngtcp2 calls and only record state or call the
 * application (conn_lifecycle.c explains the re-entrancy rule).
 */
#include "quic/quic_internal.h"

#include "common/common.h"

#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void rand_cb(uint8_t *dest, size_t destlen,
                    const ngtcp2_rand_ctx *rand_ctx) {
    (void)rand_ctx;
    rift_random(dest, destlen);
}

static int get_new_connection_id_cb(ngtcp2_conn *qc, ngtcp2_cid *cid,
                                    uint8_t *token, size_t cidlen, void *ud) {
    rift_quic_conn *c = ud;
    rift_quic_endpoint *ep = c->ep;
    (void)qc;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (rift_random(cid->data, cidlen) != 0) {
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        cid->datalen = cidlen;
        if (!ep->server ||
            rift_cidmap_get(&ep->map, cid->data, cid->datalen) == NULL) {
            break;
        }
    }
    if (ep->server) {
        if (rift_quic_endpoint_reset_token(ep, token, cid) != 0 ||
            rift_quic_endpoint_add_cid(ep, c, cid) != 0) {
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
    } else if (rift_random(token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) {
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

static int remove_connection_id_cb(ngtcp2_conn *qc, const ngtcp2_cid *cid,
                                   void *ud) {
    rift_quic_conn *c = ud;
    (void)qc;
    if (c->ep->server) {
        rift_quic_endpoint_remove_cid(c->ep, c, cid);
    }
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *qc, void *ud) {
    rift_quic_conn *c = ud;
    rift_quic_endpoint *ep = c->ep;
    (void)qc;
    if (!ep->server && !rift_quic_tls_alpn_ok(c)) {
        /* GNUTLS_ALPN_MANDATORY should make this impossible; checked
         * anyway because everything after it trusts the protocol. */
        c->alpn_failed = true;
        ngtcp2_ccerr_set_tls_alert(&c->ccerr, 120, NULL, 0);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    c->state = CONN_ESTABLISHED;
    if (ep->server) {
        /* ngtcp2 reports confirmation to clients only: a server's
         * handshake is confirmed when it completes (RFC 9001 §4.1.2). */
        c->confirmed = true;
        /* The client now uses our CIDs; its first DCID served only to
         * route retransmitted Initials. */
        if (c->odcid_registered) {
            rift_cidmap_del(&ep->map, c->odcid.data, c->odcid.datalen, c);
            c->odcid_registered = false;
        }
        c->visible = true;
        ep->stats.conns_accepted++;
    }
    if (ep->cbs.handshake_done) {
        ep->cbs.handshake_done(c, ep->user_data);
    }
    return 0;
}

static int stream_open_cb(ngtcp2_conn *qc, int64_t stream_id, void *ud) {
    rift_quic_conn *c = ud;
    if (!ngtcp2_is_bidi_stream(stream_id)) {
        return 0; /* we allow none; ngtcp2 enforces the limit */
    }
    rift_quic_stream *s = rift_quic_stream_new(c, stream_id, NULL);
    if (s == NULL) {
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    ngtcp2_conn_set_stream_user_data(qc, stream_id, s);
    if (c->ep->cbs.stream_open) {
        c->ep->cbs.stream_open(s, c->user_data);
    }
    return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *qc, uint32_t flags,
                               int64_t stream_id, uint64_t offset,
                               const uint8_t *data, size_t datalen, void *ud,
                               void *sud) {
    rift_quic_conn *c = ud;
    rift_quic_stream *s = sud;
    (void)offset;
    bool fin = (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0;
    c->rx_data_seen = true;
    if (s == NULL || (s->flags & STREAM_RD_SHUT)) {
        /* Nobody reads it: give the credit straight back. */
        ngtcp2_conn_extend_max_stream_offset(qc, stream_id, datalen);
        ngtcp2_conn_extend_max_offset(qc, datalen);
        return 0;
    }
    if (fin) {
        s->flags |= STREAM_READ_DONE;
    }
    if (c->ep->settings.auto_credit) {
        ngtcp2_conn_extend_max_stream_offset(qc, stream_id, datalen);
        ngtcp2_conn_extend_max_offset(qc, datalen);
    } else {
        s->uncredited += datalen;
    }
    if (c->ep->cbs.stream_data && (datalen > 0 || fin)) {
        c->ep->cbs.stream_data(s, data, datalen, fin, s->user_data);
    }
    return 0;
}

static int acked_stream_data_offset_cb(ngtcp2_conn *qc, int64_t stream_id,
                                       uint64_t offset, uint64_t datalen,
                                       void *ud, void *sud) {
    rift_quic_conn *c = ud;
    rift_quic_stream *s = sud;
    (void)qc;
    (void)stream_id;
    if (s == NULL || datalen == 0) {
        return 0;
    }
    rift_sendq_ack(&s->q, offset, datalen);
    if (c->ep->cbs.stream_acked) {
        c->ep->cbs.stream_acked(s, rift_sendq_unacked(&s->q), s->user_data);
    }
    return 0;
}

static int stream_close_cb(ngtcp2_conn *qc, uint32_t flags, int64_t stream_id,
                           uint64_t app_error_code, void *ud, void *sud) {
    rift_quic_conn *c = ud;
    rift_quic_stream *s = sud;
    /* ngtcp2 does not renew the peer's stream credit by itself: one more
     * stream for every remote stream that ends, or the peer stalls after
     * max_streams_bidi streams in total. */
    if (ngtcp2_is_bidi_stream(stream_id) &&
        !ngtcp2_conn_is_local_stream(qc, stream_id)) {
        ngtcp2_conn_extend_max_streams_bidi(qc, 1);
    }
    if (s == NULL) {
        return 0;
    }
    /* Connection credit the app never returned for this stream. */
    if (s->uncredited > 0) {
        ngtcp2_conn_extend_max_offset(qc, s->uncredited);
        s->uncredited = 0;
    }
    bool code_set = (flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET) != 0;
    if (c->ep->cbs.stream_close) {
        c->ep->cbs.stream_close(s, code_set, code_set ? app_error_code : 0,
                                s->user_data);
    }
    rift_quic_stream_free(s);
    return 0;
}

static int stream_reset_cb(ngtcp2_conn *qc, int64_t stream_id,
                           uint64_t final_size, uint64_t app_error_code,
                           void *ud, void *sud) {
    rift_quic_conn *c = ud;
    rift_quic_stream *s = sud;
    (void)qc;
    (void)stream_id;
    (void)final_size;
    if (s == NULL) {
        return 0;
    }
    s->flags |= STREAM_READ_DONE;
    if (c->ep->cbs.stream_reset) {
        c->ep->cbs.stream_reset(s, app_error_code, s->user_data);
    }
    return 0;
}

static int extend_max_stream_data_cb(ngtcp2_conn *qc, int64_t stream_id,
                                     uint64_t max_data, void *ud, void *sud) {
    rift_quic_conn *c = ud;
    rift_quic_stream *s = sud;
    (void)qc;
    (void)stream_id;
    (void)max_data;
    if (s != NULL && (s->flags & STREAM_BLOCKED)) {
        s->flags &= ~(uint32_t)STREAM_BLOCKED;
        if (rift_quic_stream_wants_write(s)) {
            rift_quic_ready_add(s);
            rift_quic_endpoint_mark_dirty(c->ep, c);
        }
    }
    return 0;
}

static int extend_max_local_streams_bidi_cb(ngtcp2_conn *qc,
                                            uint64_t max_streams, void *ud) {
    rift_quic_conn *c = ud;
    (void)qc;
    (void)max_streams;
    /* Before the handshake completes the app cannot open streams yet; it
     * learns about the initial limit from handshake_done. */
    if (c->state == CONN_ESTABLISHED && c->ep->cbs.streams_available) {
        c->ep->cbs.streams_available(c, c->user_data);
    }
    return 0;
}

static int handshake_confirmed_cb(ngtcp2_conn *qc, void *ud) {
    rift_quic_conn *c = ud;
    (void)qc;
    c->confirmed = true;
    return 0;
}

static int recv_stateless_reset_cb(ngtcp2_conn *qc,
                                   const ngtcp2_pkt_stateless_reset *sr,
                                   void *ud) {
    rift_quic_conn *c = ud;
    (void)qc;
    (void)sr;
    c->reset_received = true;
    return 0;
}

void rift_quic_ngtcp2_log(void *ud, const char *fmt, ...) {
    (void)ud;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ngtcp2: %s\n", line);
}

static const ngtcp2_callbacks server_callbacks = {
    .recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
    .handshake_completed = handshake_completed_cb,
    .handshake_confirmed = handshake_confirmed_cb,
    .encrypt = ngtcp2_crypto_encrypt_cb,
    .decrypt = ngtcp2_crypto_decrypt_cb,
    .hp_mask = ngtcp2_crypto_hp_mask_cb,
    .recv_stream_data = recv_stream_data_cb,
    .acked_stream_data_offset = acked_stream_data_offset_cb,
    .stream_open = stream_open_cb,
    .stream_close = stream_close_cb,
    .rand = rand_cb,
    .get_new_connection_id = get_new_connection_id_cb,
    .remove_connection_id = remove_connection_id_cb,
    .update_key = ngtcp2_crypto_update_key_cb,
    .stream_reset = stream_reset_cb,
    .extend_max_stream_data = extend_max_stream_data_cb,
    .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
    .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
    .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
    .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
};

static const ngtcp2_callbacks client_callbacks = {
    .client_initial = ngtcp2_crypto_client_initial_cb,
    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
    .handshake_completed = handshake_completed_cb,
    .handshake_confirmed = handshake_confirmed_cb,
    .encrypt = ngtcp2_crypto_encrypt_cb,
    .decrypt = ngtcp2_crypto_decrypt_cb,
    .hp_mask = ngtcp2_crypto_hp_mask_cb,
    .recv_stream_data = recv_stream_data_cb,
    .acked_stream_data_offset = acked_stream_data_offset_cb,
    .stream_open = stream_open_cb,
    .stream_close = stream_close_cb,
    .recv_stateless_reset = recv_stateless_reset_cb,
    .recv_retry = ngtcp2_crypto_recv_retry_cb,
    .extend_max_local_streams_bidi = extend_max_local_streams_bidi_cb,
    .rand = rand_cb,
    .get_new_connection_id = get_new_connection_id_cb,
    .remove_connection_id = remove_connection_id_cb,
    .update_key = ngtcp2_crypto_update_key_cb,
    .stream_reset = stream_reset_cb,
    .extend_max_stream_data = extend_max_stream_data_cb,
    .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
    .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
    .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
    .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
};

const ngtcp2_callbacks *rift_quic_conn_callbacks(bool server) {
    return server ? &server_callbacks : &client_callbacks;
}
