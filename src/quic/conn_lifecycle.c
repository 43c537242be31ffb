/*
 * conn_lifecycle.c — one QUIC connection over ngtcp2 (quic layer): its creation
 * (settings, transport parameters, routes, TLS session) and destruction,
 * the receive path and the connection timer. Its other roles have their
 * own files: the ngtcp2 callbacks (conn_callbacks.c), the write path and
 * the endpoint's write scheduling (conn_write.c), closing and draining
 * (conn_close.c), stream records and lists (stream_list.c), the public
 * connection and stream functions of quic.h (conn_api.c).
 *
 * Re-entrancy rule: app callbacks run from inside ngtcp2 callbacks (data
 * pointers are only valid there), so every public operation only records
 * what to do and marks the connection dirty; the endpoint's flush then
 * calls into ngtcp2 (rift_quic_conn_write). That keeps ngtcp2 free of
 * nested calls and honours the WRITE_MORE contract (nothing else may touch
 * the connection between MORE calls).
 */
#include "quic/quic_internal.h"

#include "common/common.h"

#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <stdio.h>
#include <string.h>

static void conn_timer_cb(rift_timer *t, void *arg);

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

/* ngtcp2 settings of a new connection: the endpoint's timeouts and
 * windows, path MTU probes, the ACK threshold for the hold. */
static void fill_settings(const rift_quic_endpoint *ep,
                          ngtcp2_settings *settings) {
    const rift_quic_settings *st = &ep->settings;
    ngtcp2_settings_default(settings);
    settings->initial_ts = rift_now_ns();
    settings->handshake_timeout = st->handshake_timeout;
    /* Fixed windows, as the reference's quinn profile: no auto-tuning. */
    settings->max_window = 0;
    settings->max_stream_window = 0;
    /* Path MTU discovery goes from 1,200 bytes up through the endpoint's
     * probe sizes (ngtcp2 skips those above the peer's
     * max_udp_payload_size, and those above a size that failed). */
    settings->max_tx_udp_payload_size = ep->pmtud_probes[ep->npmtud - 1];
    settings->pmtud_probes = ep->pmtud_probes;
    settings->pmtud_probeslen = ep->npmtud;
    if (st->ack_hold > 0 || st->answer_hold > 0) {
        /* Every write carries the ACK of what arrived before it (ngtcp2
         * otherwise leaves it out until srtt/8 has passed, a few µs on
         * loopback, and sends it alone a moment later); the hold below
         * decides when a connection with nothing else to say writes. */
        settings->ack_thresh = 1;
    }
    if (st->debug) {
        settings->log_printf = rift_quic_ngtcp2_log;
    }
}

/* Our transport parameters: streams, windows, idle timeout, CIDs. */
static void fill_params(const rift_quic_settings *st,
                        ngtcp2_transport_params *params) {
    ngtcp2_transport_params_default(params);
    params->initial_max_streams_bidi = st->max_streams_bidi;
    params->initial_max_streams_uni = 0;
    params->initial_max_stream_data_bidi_local = st->stream_window;
    params->initial_max_stream_data_bidi_remote = st->stream_window;
    params->initial_max_stream_data_uni = 0;
    params->initial_max_data = st->conn_window;
    params->max_idle_timeout = st->idle_timeout;
    params->active_connection_id_limit = RIFT_QUIC_CID_LIMIT;
    params->max_datagram_frame_size = 0;
}

/* The error of a failed ngtcp2_conn_*_new. */
static int ngtcp2_failed(int rv, rift_error *err) {
    return rift_error_set(
        err, rv == NGTCP2_ERR_NOMEM ? RIFT_ERR_NOMEM : RIFT_ERR_CONNECTION,
        "QUIC connection: %s", ngtcp2_strerror(rv));
}

/* Server side: ngtcp2's connection for the client's first Initial |hd|
 * (after a validated Retry, |odcid| is the client's first DCID). */
static int server_ngtcp2(rift_quic_conn *c, const ngtcp2_pkt_hd *hd,
                         const ngtcp2_cid *odcid, const ngtcp2_cid *scid,
                         ngtcp2_settings *settings,
                         ngtcp2_transport_params *params,
                         const ngtcp2_mem *pmem, rift_error *err) {
    params->original_dcid = odcid ? *odcid : hd->dcid;
    params->original_dcid_present = 1;
    if (odcid) {
        params->retry_scid = hd->dcid;
        params->retry_scid_present = 1;
        settings->token = hd->token;
        settings->tokenlen = hd->tokenlen;
        settings->token_type = NGTCP2_TOKEN_TYPE_RETRY;
    }
    params->stateless_reset_token_present = 1;
    if (rift_quic_endpoint_reset_token(c->ep, params->stateless_reset_token,
                                       scid) != 0) {
        return rift_error_set(err, RIFT_ERR_IO, "stateless reset token");
    }
    int rv = ngtcp2_conn_server_new(&c->qc, &hd->scid, scid, &c->ps.path,
                                    hd->version, rift_quic_conn_callbacks(true),
                                    settings, params, pmem, c);
    return rv == 0 ? 0 : ngtcp2_failed(rv, err);
}
/* Client side: ngtcp2's connection to a fresh random DCID. */
static int client_ngtcp2(rift_quic_conn *c, const ngtcp2_cid *scid,
                         const ngtcp2_settings *settings,
                         const ngtcp2_transport_params *params,
                         const ngtcp2_mem *pmem, rift_error *err) {
    ngtcp2_cid dcid;
    if (random_cid(c->ep, &dcid) != 0) {
        return rift_error_set(err, RIFT_ERR_IO, "no entropy");
    }
    int rv = ngtcp2_conn_client_new(
        &c->qc, &dcid, scid, &c->ps.path, NGTCP2_PROTO_VER_V1,
        rift_quic_conn_callbacks(false), settings, params, pmem, c);
    return rv == 0 ? 0 : ngtcp2_failed(rv, err);
}

/* Server side: route by our SCID and, until the client switches to it,
 * by the DCID of its Initials. The client's DCID is not one of ours
 * (ngtcp2 never retires it), so it is kept apart from c->cids. On a
 * collision with a live CID the other connection keeps the route. */
static int add_routes(rift_quic_conn *c, const ngtcp2_pkt_hd *hd,
                      const ngtcp2_cid *scid, rift_error *err) {
    rift_quic_endpoint *ep = c->ep;
    int rv = rift_quic_endpoint_add_cid(ep, c, scid);
    if (rv != 0) {
        return rift_error_set(err, rv, "out of memory");
    }
    c->odcid = hd->dcid;
    if (rift_cidmap_get(&ep->map, hd->dcid.data, hd->dcid.datalen) == NULL) {
        rv = rift_cidmap_put(&ep->map, hd->dcid.data, hd->dcid.datalen, c);
        if (rv != 0) {
            return rift_error_set(err, rv, "out of memory");
        }
        c->odcid_registered = true;
    }
    return 0;
}

static void remove_routes(rift_quic_conn *c) {
    rift_quic_endpoint *ep = c->ep;
    for (size_t i = 0; i < c->ncids; i++) {
        rift_cidmap_del(&ep->map, c->cids[i].data, c->cids[i].datalen, c);
    }
    if (c->odcid_registered) {
        rift_cidmap_del(&ep->map, c->odcid.data, c->odcid.datalen, c);
    }
}

/* ngtcp2's connection and the TLS session under it. */
static int open_ngtcp2(rift_quic_conn *c, const ngtcp2_pkt_hd *hd,
                       const ngtcp2_cid *odcid, const ngtcp2_cid *scid,
                       rift_error *err) {
    rift_quic_endpoint *ep = c->ep;
    ngtcp2_settings settings;
    ngtcp2_transport_params params;
    fill_settings(ep, &settings);
    fill_params(&ep->settings, &params);
    c->mem = (ngtcp2_mem){(void *)ep->mem, mem_malloc, mem_free, mem_calloc,
                          mem_realloc};
    const ngtcp2_mem *pmem = ep->mem ? &c->mem : NULL;
    int rv = ep->server ? server_ngtcp2(c, hd, odcid, scid, &settings, &params,
                                        pmem, err)
                        : client_ngtcp2(c, scid, &settings, &params, pmem, err);
    if (rv != 0) {
        return rv;
    }
    if ((rv = rift_quic_tls_session(c, err)) != 0) {
        ngtcp2_conn_del(c->qc);
        return rv;
    }
    ngtcp2_conn_set_tls_native_handle(c->qc, c->tls);
    if (ep->settings.keep_alive > 0) {
        ngtcp2_conn_set_keep_alive_timeout(c->qc, ep->settings.keep_alive);
    }
    return 0;
}

int rift_quic_conn_new(rift_quic_conn **pc, rift_quic_endpoint *ep,
                       const rift_udp_addr *local, const rift_udp_addr *remote,
                       const ngtcp2_pkt_hd *hd, const ngtcp2_cid *odcid,
                       rift_error *err) {
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
    ngtcp2_cid scid;
    int rv;
    if (random_cid(ep, &scid) != 0) {
        rv = rift_error_set(err, RIFT_ERR_IO, "no entropy for connection IDs");
        rift_free(ep->mem, c);
        return rv;
    }
    if ((rv = open_ngtcp2(c, hd, odcid, &scid, err)) != 0) {
        rift_free(ep->mem, c);
        return rv;
    }
    if (ep->server) {
        if ((rv = add_routes(c, hd, &scid, err)) != 0) {
            remove_routes(c);
            gnutls_deinit(c->tls);
            ngtcp2_conn_del(c->qc);
            rift_free(ep->mem, c);
            return rv;
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
}

void rift_quic_conn_free(rift_quic_conn *c) {
    rift_quic_endpoint *ep = c->ep;
    rift_timer_stop(&c->timer);
    while (c->streams) {
        rift_quic_stream_free(c->streams);
    }
    if (ep->server) {
        remove_routes(c);
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
        rift_quic_endpoint_mark_dirty(ep, c);
        return;
    }
    switch (rv) {
    case NGTCP2_ERR_DRAINING:
        rift_quic_conn_peer_closed(c);
        break;
    case NGTCP2_ERR_DROP_CONN:
    case NGTCP2_ERR_RETRY:
        rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_LOCAL_TRANSPORT, 0,
                                      RIFT_ERR_CONNECTION,
                                      "connection dropped");
        rift_quic_conn_terminate(c);
        rift_quic_conn_kill(c);
        break;
    case NGTCP2_ERR_DISCARD_PKT:
        break;
    default:
        rift_quic_conn_local_error(c, rv);
        break;
    }
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
            rift_quic_conn_write_unheld(c);
        } else if (rv == NGTCP2_ERR_IDLE_CLOSE) {
            rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_IDLE, 0,
                                          RIFT_ERR_TIMEOUT,
                                          "connection idle timeout");
            rift_quic_conn_terminate(c);
            rift_quic_conn_kill(c);
        } else if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
            rift_quic_conn_set_close_info(c, RIFT_QUIC_CLOSE_HANDSHAKE_TIMEOUT,
                                          0, RIFT_ERR_TIMEOUT,
                                          "QUIC handshake timed out");
            rift_quic_conn_terminate(c);
            rift_quic_conn_kill(c);
        } else {
            rift_quic_conn_local_error(c, rv);
        }
        break;
    }
    }
    if (outer) {
        ep->processing = false;
        rift_quic_endpoint_flush(ep);
    }
}
