/*
 * conn.c — one QUIC connection over ngtcp2 (quic layer): ngtcp2 callbacks,
 * the receive and write paths, streams and their pinned send queues,
 * deferred operations, closing and draining, and the public connection and
 * stream functions of quic.h.
 *
 * Re-entrancy rule: app callbacks run from inside ngtcp2 callbacks (data
 * pointers are only valid there), so every public operation only records
 * what to do and marks the connection dirty; the endpoint's flush then
 * calls into ngtcp2 (rift_quic_conn_write). That keeps ngtcp2 free of
 * nested calls and honours the WRITE_MORE contract (nothing else may touch
 * the connection between MORE calls).
 */
#include "quic/internal.h"

#include "common/common.h"
#include "common/dlist.h"

#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <stdio.h>
#include <string.h>

/* Vectors handed to one writev_stream call. */
#define WRITE_VECS 16
/* Packets per write pass: what GSO can carry in one message. */
#define MAX_PKTS_PER_WRITE 64

static void conn_timer_cb(rift_timer *t, void *arg);
static void enter_closing(rift_quic_conn *c);
static void terminate(rift_quic_conn *c);
static void kill_conn(rift_quic_conn *c);

/* ---- Stream lists ---- */

static void ready_add(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    if (s->flags & (STREAM_IN_READY | STREAM_BLOCKED)) {
        return;
    }
    s->flags |= STREAM_IN_READY;
    RIFT_DLIST_APPEND(c->ready_head, c->ready_tail, s, ready_prev, ready_next);
}

static void ready_remove(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    if (!(s->flags & STREAM_IN_READY)) {
        return;
    }
    s->flags &= ~(uint32_t)STREAM_IN_READY;
    RIFT_DLIST_REMOVE_TAILED(c->ready_head, c->ready_tail, s, ready_prev,
                             ready_next);
}

/* Has something for writev_stream: data, or a FIN not yet taken. */
static bool stream_wants_write(const rift_quic_stream *s) {
    if (s->flags & (STREAM_WR_SHUT | STREAM_WR_STOPPED)) {
        return false;
    }
    return rift_sendq_unsent(&s->q) > 0 ||
           ((s->flags & STREAM_FIN_QUEUED) && !(s->flags & STREAM_FIN_SENT));
}

static void ops_add(rift_quic_stream *s) {
    if (s->flags & STREAM_IN_OPS) {
        return;
    }
    s->flags |= STREAM_IN_OPS;
    s->ops_next = s->conn->ops;
    s->conn->ops = s;
}

static void unlink_from(rift_quic_stream **head, rift_quic_stream *s,
                        size_t next_off) {
    for (rift_quic_stream **pp = head; *pp;
         pp = (rift_quic_stream **)((char *)*pp + next_off)) {
        if (*pp == s) {
            *pp = *(rift_quic_stream **)((char *)s + next_off);
            return;
        }
    }
}

static rift_quic_stream *stream_new(rift_quic_conn *c, int64_t id, void *ud) {
    rift_quic_stream *s = rift_calloc(c->ep->mem, 1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->conn = c;
    s->id = id;
    s->user_data = ud;
    rift_sendq_init(&s->q, c->ep->mem);
    RIFT_DLIST_PUSH(c->streams, s, all_prev, all_next);
    return s;
}

/* Unlinks and frees |s|; releases every queued chunk. */
static void stream_free(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    if (s->flags & STREAM_WATCH_STOP) {
        c->nwatch--;
    }
    ready_remove(s);
    if (s->flags & STREAM_IN_OPS) {
        unlink_from(&c->ops, s, offsetof(rift_quic_stream, ops_next));
    }
    if (s->flags & STREAM_IN_EVENTS) {
        unlink_from(&c->events, s, offsetof(rift_quic_stream, ev_next));
    }
    RIFT_DLIST_REMOVE(c->streams, s, all_prev, all_next);
    rift_sendq_clear(&s->q);
    rift_free(c->ep->mem, s);
}

/* ---- ngtcp2 callbacks ---- */

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
        if (rift_quic_ep_reset_token(ep, token, cid) != 0 ||
            rift_quic_ep_add_cid(ep, c, cid) != 0) {
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
        rift_quic_ep_remove_cid(c->ep, c, cid);
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
    rift_quic_stream *s = stream_new(c, stream_id, NULL);
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
    stream_free(s);
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
        if (stream_wants_write(s)) {
            ready_add(s);
            rift_quic_ep_mark_dirty(c->ep, c);
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

static void log_printf(void *ud, const char *fmt, ...) RIFT_PRINTF(2, 3);

static void log_printf(void *ud, const char *fmt, ...) {
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

/* ---- Creation and destruction ---- */

static void *mem_malloc(size_t size, void *ud) {
    return rift_malloc(ud, size);
}

static void mem_free(void *ptr, void *ud) {
    rift_free(ud, ptr);
}

static void *mem_calloc(size_t nmemb, size_t size, void *ud) {
    return rift_calloc(ud, nmemb, size);
}

static void *mem_realloc(void *ptr, size_t size, void *ud) {
    return rift_realloc(ud, ptr, size);
}

static int random_cid(rift_quic_endpoint *ep, ngtcp2_cid *cid) {
    for (int attempt = 0; attempt < 8; attempt++) {
        cid->datalen = RIFT_QUIC_SCID_LEN;
        if (rift_random(cid->data, cid->datalen) != 0) {
            return RIFT_ERR_IO;
        }
        if (!ep->server ||
            rift_cidmap_get(&ep->map, cid->data, cid->datalen) == NULL) {
            return 0;
        }
    }
    return RIFT_ERR_IO;
}

int rift_quic_conn_new(rift_quic_conn **pc, rift_quic_endpoint *ep,
                       const rift_udp_addr *local, const rift_udp_addr *remote,
                       const ngtcp2_pkt_hd *hd, const ngtcp2_cid *odcid,
                       rift_error *err) {
    const rift_quic_settings *st = &ep->settings;
    int rv;
    rift_quic_conn *c = rift_calloc(ep->mem, 1, sizeof(*c));
    if (c == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    c->ep = ep;
    c->state = CONN_HANDSHAKE;
    c->visible = !ep->server;
    rift_timer_init(ep->loop, &c->timer, conn_timer_cb, c);
    ngtcp2_path_storage_init(&c->ps, (const ngtcp2_sockaddr *)&local->ss,
                             local->len, (const ngtcp2_sockaddr *)&remote->ss,
                             remote->len, NULL);

    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = rift_now_ns();
    settings.handshake_timeout = st->handshake_timeout;
    /* Fixed windows, as the reference's quinn profile: no auto-tuning. */
    settings.max_window = 0;
    settings.max_stream_window = 0;
    /* Path MTU discovery goes from 1,200 bytes up through the endpoint's
     * probe sizes (ngtcp2 skips those above the peer's
     * max_udp_payload_size, and those above a size that failed). */
    settings.max_tx_udp_payload_size = ep->pmtud_probes[ep->npmtud - 1];
    settings.pmtud_probes = ep->pmtud_probes;
    settings.pmtud_probeslen = ep->npmtud;
    if (st->ack_hold > 0 || st->answer_hold > 0) {
        /* Every write carries the ACK of what arrived before it (ngtcp2
         * otherwise leaves it out until srtt/8 has passed, a few µs on
         * loopback, and sends it alone a moment later); the hold below
         * decides when a connection with nothing else to say writes. */
        settings.ack_thresh = 1;
    }
    if (st->debug) {
        settings.log_printf = log_printf;
    }

    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_streams_bidi = st->max_streams_bidi;
    params.initial_max_streams_uni = 0;
    params.initial_max_stream_data_bidi_local = st->stream_window;
    params.initial_max_stream_data_bidi_remote = st->stream_window;
    params.initial_max_stream_data_uni = 0;
    params.initial_max_data = st->conn_window;
    params.max_idle_timeout = st->idle_timeout;
    params.active_connection_id_limit = RIFT_QUIC_CID_LIMIT;
    params.max_datagram_frame_size = 0;

    c->mem = (ngtcp2_mem){(void *)ep->mem, mem_malloc, mem_free, mem_calloc,
                          mem_realloc};
    const ngtcp2_mem *pmem = ep->mem ? &c->mem : NULL;

    ngtcp2_cid scid;
    if (random_cid(ep, &scid) != 0) {
        rv = rift_error_set(err, RIFT_ERR_IO, "no entropy for connection IDs");
        goto fail_conn;
    }
    if (ep->server) {
        params.original_dcid = odcid ? *odcid : hd->dcid;
        params.original_dcid_present = 1;
        if (odcid) {
            params.retry_scid = hd->dcid;
            params.retry_scid_present = 1;
            settings.token = hd->token;
            settings.tokenlen = hd->tokenlen;
            settings.token_type = NGTCP2_TOKEN_TYPE_RETRY;
        }
        params.stateless_reset_token_present = 1;
        if (rift_quic_ep_reset_token(ep, params.stateless_reset_token, &scid) !=
            0) {
            rv = rift_error_set(err, RIFT_ERR_IO, "stateless reset token");
            goto fail_conn;
        }
        rv = ngtcp2_conn_server_new(&c->qc, &hd->scid, &scid, &c->ps.path,
                                    hd->version, &server_callbacks, &settings,
                                    &params, pmem, c);
    } else {
        ngtcp2_cid dcid;
        if (random_cid(ep, &dcid) != 0) {
            rv = rift_error_set(err, RIFT_ERR_IO, "no entropy");
            goto fail_conn;
        }
        rv = ngtcp2_conn_client_new(&c->qc, &dcid, &scid, &c->ps.path,
                                    NGTCP2_PROTO_VER_V1, &client_callbacks,
                                    &settings, &params, pmem, c);
    }
    if (rv != 0) {
        rv = rift_error_set(
            err, rv == NGTCP2_ERR_NOMEM ? RIFT_ERR_NOMEM : RIFT_ERR_CONNECTION,
            "QUIC connection: %s", ngtcp2_strerror(rv));
        goto fail_conn;
    }
    if ((rv = rift_quic_tls_session(c, err)) != 0) {
        goto fail_tls;
    }
    ngtcp2_conn_set_tls_native_handle(c->qc, c->tls);
    if (st->keep_alive > 0) {
        ngtcp2_conn_set_keep_alive_timeout(c->qc, st->keep_alive);
    }
    if (ep->server) {
        /* Route by our SCID and, until the client switches to it, by the
         * DCID of its Initials. */
        if ((rv = rift_quic_ep_add_cid(ep, c, &scid)) != 0) {
            rift_error_set(err, rv, "out of memory");
            goto fail_cid;
        }
        /* The client's DCID is not one of ours (ngtcp2 never retires
         * it), so it is kept apart from c->cids. On a collision with a
         * live CID the other connection keeps the route. */
        c->odcid = hd->dcid;
        if (rift_cidmap_get(&ep->map, hd->dcid.data, hd->dcid.datalen) ==
            NULL) {
            if ((rv = rift_cidmap_put(&ep->map, hd->dcid.data, hd->dcid.datalen,
                                      c)) != 0) {
                rift_error_set(err, rv, "out of memory");
                goto fail_cid;
            }
            c->odcid_registered = true;
        }
        c->counted = true;
        ep->nlive++;
    }
    c->all_next = ep->conns;
    if (ep->conns) {
        ep->conns->all_prev = c;
    }
    ep->conns = c;
    *pc = c;
    return 0;

fail_cid:
    for (size_t i = 0; i < c->ncids; i++) {
        rift_cidmap_del(&ep->map, c->cids[i].data, c->cids[i].datalen, c);
    }
    if (c->odcid_registered) {
        rift_cidmap_del(&ep->map, c->odcid.data, c->odcid.datalen, c);
    }
    gnutls_deinit(c->tls);
fail_tls:
    ngtcp2_conn_del(c->qc);
fail_conn:
    rift_free(ep->mem, c);
    return rv;
}

void rift_quic_conn_free(rift_quic_conn *c) {
    rift_quic_endpoint *ep = c->ep;
    rift_timer_stop(&c->timer);
    while (c->streams) {
        stream_free(c->streams);
    }
    if (ep->server) {
        for (size_t i = 0; i < c->ncids; i++) {
            rift_cidmap_del(&ep->map, c->cids[i].data, c->cids[i].datalen, c);
        }
        if (c->odcid_registered) {
            rift_cidmap_del(&ep->map, c->odcid.data, c->odcid.datalen, c);
        }
    }
    if (c->counted) {
        ep->nlive--;
    }
    if (c->dirty) {
        rift_quic_conn **pp = &ep->dirty_head;
        rift_quic_conn *prev = NULL;
        while (*pp && *pp != c) {
            prev = *pp;
            pp = &(*pp)->dirty_next;
        }
        if (*pp) {
            *pp = c->dirty_next;
            if (ep->dirty_tail == c) {
                ep->dirty_tail = prev;
            }
        }
    }
    if (c->all_prev) {
        c->all_prev->all_next = c->all_next;
    } else if (ep->conns == c) {
        ep->conns = c->all_next;
    }
    if (c->all_next) {
        c->all_next->all_prev = c->all_prev;
    }
    if (ep->client == c) {
        ep->client = NULL;
    }
    ngtcp2_conn_del(c->qc);
    if (c->tls) {
        gnutls_deinit(c->tls);
    }
    rift_free(ep->mem, c->close_pkt);
    rift_free(ep->mem, c);
}

/* ---- Ending a connection ---- */

static void set_info(rift_quic_conn *c, rift_quic_close_kind kind,
                     uint64_t code, int error, const char *detail) {
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
static void terminate(rift_quic_conn *c) {
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
            stream_free(c->streams);
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
        stream_free(s);
    }
    if (ep->cbs.conn_closed) {
        ep->cbs.conn_closed(c, &c->close_info, c->user_data);
    }
}

/* Leaves no state behind: the timer frees the connection (server) or
 * parks it until rift_quic_endpoint_del (client). */
static void kill_conn(rift_quic_conn *c) {
    c->state = CONN_DEAD;
    rift_timer_start(&c->timer, 0);
}

/* Writes our CONNECTION_CLOSE (from c->ccerr), keeps it for the closing
 * period, and reports the end. */
static void enter_closing(rift_quic_conn *c) {
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
    terminate(c);
}

static void enter_draining(rift_quic_conn *c) {
    c->state = CONN_DRAINING;
    c->close_deadline = rift_now_ns() + 3 * ngtcp2_conn_get_pto(c->qc);
    rift_timer_start(&c->timer, c->close_deadline);
    terminate(c);
}

/* The peer closed (or reset): take its reason from ngtcp2. */
static void peer_closed(rift_quic_conn *c) {
    if (c->reset_received) {
        set_info(c, RIFT_QUIC_CLOSE_STATELESS_RESET, 0, RIFT_ERR_CONNECTION,
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
        set_info(c, RIFT_QUIC_CLOSE_PEER_APP, ce->error_code,
                 RIFT_ERR_CONNECTION, detail);
    } else if (ce->error_code > RIFT_QUIC_CRYPTO_ERROR &&
               ce->error_code <= RIFT_QUIC_CRYPTO_ERROR + 0xff) {
        snprintf(detail, sizeof(detail), "peer closed: TLS alert %u",
                 (unsigned)(ce->error_code - RIFT_QUIC_CRYPTO_ERROR));
        set_info(c, RIFT_QUIC_CLOSE_PEER_TRANSPORT, ce->error_code,
                 RIFT_ERR_TLS, detail);
    } else if (ce->error_code == RIFT_QUIC_CONNECTION_REFUSED) {
        set_info(c, RIFT_QUIC_CLOSE_PEER_TRANSPORT, ce->error_code,
                 RIFT_ERR_CONNECTION, "connection refused by server");
    } else {
        snprintf(detail, sizeof(detail),
                 "peer closed the connection (transport code 0x%llx)",
                 (unsigned long long)ce->error_code);
        set_info(c, RIFT_QUIC_CLOSE_PEER_TRANSPORT, ce->error_code,
                 RIFT_ERR_CONNECTION, detail);
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
static void local_error(rift_quic_conn *c, int rv) {
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
        set_info(c, RIFT_QUIC_CLOSE_LOCAL_TRANSPORT,
                 RIFT_QUIC_CRYPTO_ERROR + alert, RIFT_ERR_TLS, detail);
    } else {
        ngtcp2_ccerr_set_liberr(&c->ccerr, rv, NULL, 0);
        snprintf(detail, sizeof(detail), "QUIC error: %s", ngtcp2_strerror(rv));
        set_info(c, RIFT_QUIC_CLOSE_LOCAL_TRANSPORT, c->ccerr.error_code,
                 RIFT_ERR_CONNECTION, detail);
    }
    enter_closing(c);
}

void rift_quic_conn_network_error(rift_quic_conn *c, int errnum) {
    if (c->state != CONN_HANDSHAKE) {
        return; /* established connections ride out ICMP noise */
    }
    char detail[128];
    snprintf(detail, sizeof(detail), "cannot reach server: %s",
             strerror(errnum));
    set_info(c, RIFT_QUIC_CLOSE_NETWORK, 0, RIFT_ERR_CONNECTION, detail);
    terminate(c);
    kill_conn(c);
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
    enter_closing(c);
}

/* ---- Receive ---- */

void rift_quic_conn_read(rift_quic_conn *c, const rift_udp_addr *local,
                         const rift_udp_addr *remote, const uint8_t *data,
                         size_t len) {
    rift_quic_endpoint *ep = c->ep;
    switch (c->state) {
    case CONN_CLOSING:
        /* Answer stragglers with our CONNECTION_CLOSE, backing off
         * exponentially so a flood cannot turn us into an amplifier. */
        c->close_rx++;
        if (c->close_pkt && (c->close_rx & (c->close_rx - 1)) == 0) {
            uint8_t *buf = rift_udp_tx_reserve(&ep->udp, c->close_len);
            memcpy(buf, c->close_pkt, c->close_len);
            rift_udp_tx_commit(&ep->udp, (const struct sockaddr *)&remote->ss,
                               remote->len, (const struct sockaddr *)&local->ss,
                               local->len, c->close_len);
        }
        return;
    case CONN_DRAINING:
    case CONN_DEAD:
        return;
    default:
        break;
    }
    ngtcp2_path path = {
        {(ngtcp2_sockaddr *)&local->ss, local->len},
        {(ngtcp2_sockaddr *)&remote->ss, remote->len},
        NULL,
    };
    ngtcp2_pkt_info pi = {0};
    rift_tstamp ts = rift_now_ns();
    c->rx_data_seen = false;
    c->rx_answer_later = false;
    int rv = ngtcp2_conn_read_pkt(c->qc, &path, &pi, data, len, ts);
    bool data_seen = c->rx_data_seen;
    c->rx_data_seen = false; /* answer_later is over for this packet */
    if (rv == 0) {
        c->rx_probe = true;
        if (data_seen && c->rx_data_pkts++ == 0) {
            c->hold_until = ts + (c->rx_answer_later ? ep->settings.answer_hold
                                                     : ep->settings.ack_hold);
        }
        rift_quic_ep_mark_dirty(ep, c);
        return;
    }
    switch (rv) {
    case NGTCP2_ERR_DRAINING:
        peer_closed(c);
        break;
    case NGTCP2_ERR_DROP_CONN:
    case NGTCP2_ERR_RETRY:
        set_info(c, RIFT_QUIC_CLOSE_LOCAL_TRANSPORT, 0, RIFT_ERR_CONNECTION,
                 "connection dropped");
        terminate(c);
        kill_conn(c);
        break;
    case NGTCP2_ERR_DISCARD_PKT:
        break;
    default:
        local_error(c, rv);
        break;
    }
}

/* ---- Write ---- */

static void stream_sent(rift_quic_stream *s, ngtcp2_ssize nd, bool fin) {
    if (nd > 0) {
        rift_sendq_consume(&s->q, (size_t)nd);
    }
    if (fin && rift_sendq_unsent(&s->q) == 0) {
        s->flags |= STREAM_FIN_SENT;
    }
    if (!stream_wants_write(s)) {
        ready_remove(s);
    } else if (s->ready_next != NULL) {
        /* Round robin: the stream goes to the back of the line. */
        ready_remove(s);
        ready_add(s);
    }
}

/* The write side is dead inside ngtcp2 (our reset, or the peer's
 * STOP_SENDING): drop unsent data and report a stop we did not cause. */
static void stream_write_dead(rift_quic_stream *s) {
    rift_quic_conn *c = s->conn;
    ready_remove(s);
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
        ngtcp2_vec v[WRITE_VECS];
        size_t nv = 0;
        int64_t sid = -1;
        uint32_t flags = 0;
        bool fin = false;
        if (s != NULL) {
            uint64_t total;
            /* MORE lets ngtcp2 pack several streams into one packet. */
            flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
            sid = s->id;
            nv = rift_sendq_peek(&s->q, v, WRITE_VECS, &total);
            /* FIN only when the vectors cover everything left: ngtcp2
             * applies it as soon as the given data fits. */
            if ((s->flags & STREAM_FIN_QUEUED) &&
                !(s->flags & STREAM_FIN_SENT) &&
                total == rift_sendq_unsent(&s->q)) {
                flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
                fin = true;
            }
        }
        ngtcp2_ssize nd = -1;
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(
            c->qc, &ps.path, &pi, buf, mtu, &nd, flags, sid, v, nv, ts);
        if (n < 0) {
            switch (n) {
            case NGTCP2_ERR_WRITE_MORE:
                if (s != NULL) {
                    stream_sent(s, nd, fin);
                }
                continue;
            case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                s->flags |= STREAM_BLOCKED;
                ready_remove(s);
                continue;
            case NGTCP2_ERR_STREAM_SHUT_WR:
                stream_write_dead(s);
                continue;
            case NGTCP2_ERR_STREAM_NOT_FOUND:
                ready_remove(s);
                continue;
            default:
                break;
            }
            c->in_write = false;
            local_error(c, (int)n);
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
        enter_closing(c);
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

/* ---- Timer ---- */

static void conn_timer_cb(rift_timer *t, void *arg) {
    rift_quic_conn *c = arg;
    rift_quic_endpoint *ep = c->ep;
    (void)t;
    bool outer = !ep->processing;
    ep->processing = true;
    rift_tstamp now = rift_now_ns();
    switch (c->state) {
    case CONN_CLOSING:
    case CONN_DRAINING:
    case CONN_DEAD:
        /* The closing period is over (or the connection died silently):
         * servers forget it, clients park it until the endpoint goes. */
        if (c->state != CONN_DEAD && now < c->close_deadline) {
            rift_timer_start(&c->timer, c->close_deadline);
            break;
        }
        c->state = CONN_DEAD;
        if (ep->server) {
            rift_quic_conn_free(c);
        }
        break;
    default: {
        int rv = ngtcp2_conn_handle_expiry(c->qc, now);
        if (rv == 0) {
            conn_write(c, false);
        } else if (rv == NGTCP2_ERR_IDLE_CLOSE) {
            set_info(c, RIFT_QUIC_CLOSE_IDLE, 0, RIFT_ERR_TIMEOUT,
                     "connection idle timeout");
            terminate(c);
            kill_conn(c);
        } else if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
            set_info(c, RIFT_QUIC_CLOSE_HANDSHAKE_TIMEOUT, 0, RIFT_ERR_TIMEOUT,
                     "QUIC handshake timed out");
            terminate(c);
            kill_conn(c);
        } else {
            local_error(c, rv);
        }
        break;
    }
    }
    if (outer) {
        ep->processing = false;
        rift_quic_ep_flush(ep);
    }
}

/* ---- Public: connections ---- */

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
    set_info(conn, RIFT_QUIC_CLOSE_LOCAL_APP, code, RIFT_ERR_CONNECTION,
             "connection closed locally");
    conn->close_info.reason = (const uint8_t *)conn->reason_buf;
    conn->close_info.reason_len = reason_len;
    rift_quic_ep_mark_dirty(conn->ep, conn);
}

int rift_quic_conn_open_stream(rift_quic_conn *conn, void *ud,
                               rift_quic_stream **ps) {
    if (!rift_quic_conn_is_established(conn)) {
        return RIFT_ERR_CLOSED;
    }
    if (ngtcp2_conn_get_streams_bidi_left(conn->qc) == 0) {
        return RIFT_ERR_AGAIN;
    }
    rift_quic_stream *s = stream_new(conn, -1, ud);
    if (s == NULL) {
        return RIFT_ERR_NOMEM;
    }
    int64_t id;
    int rv = ngtcp2_conn_open_bidi_stream(conn->qc, &id, s);
    if (rv != 0) {
        stream_free(s);
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
    if (stream_wants_write(s)) {
        ready_add(s);
        rift_quic_ep_mark_dirty(c->ep, c);
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
    ops_add(s);
    rift_quic_ep_mark_dirty(s->conn->ep, s->conn);
}

void rift_quic_stream_shutdown_write(rift_quic_stream *s, uint64_t code) {
    if (s->flags & (STREAM_WR_SHUT | STREAM_WR_STOPPED)) {
        return;
    }
    s->flags |= STREAM_WR_SHUT | STREAM_DO_RESET;
    s->reset_code = code;
    ready_remove(s);
    rift_sendq_truncate(&s->q);
    ops_add(s);
    rift_quic_ep_mark_dirty(s->conn->ep, s->conn);
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
    ops_add(s);
    rift_quic_ep_mark_dirty(s->conn->ep, s->conn);
}
