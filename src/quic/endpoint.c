/*
 * endpoint.c — QUIC endpoints over one UDP socket (quic layer): the server
 * side's packet routing by connection ID, accept, connection limit, Retry,
 * stateless reset and version negotiation; the client side's single
 * connection; the receive loop and the write flush. See quic.h.
 */
#include "quic/quic_internal.h"

#include "common/common.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Receive batches per readiness event before yielding to other fds. */
#define RX_BATCHES_PER_EVENT 16
/* Retry tokens stay valid this long. */
#define RETRY_TOKEN_TIMEOUT (10 * NGTCP2_SECONDS)
/* Stateless resets per second, at most (they answer unknown packets). */
#define RESETS_PER_SECOND 1000

/* ---- Settings ---- */

void rift_quic_settings_default(rift_quic_settings *s) {
    memset(s, 0, sizeof(*s));
    s->idle_timeout = 60 * NGTCP2_SECONDS;
    s->keep_alive = 10 * NGTCP2_SECONDS;
    s->handshake_timeout = 5 * NGTCP2_SECONDS;
    s->max_streams_bidi = 128;
    s->stream_window = 2228224;
    s->conn_window = 8912896;
    s->max_udp_payload = 16384;
    s->max_connections = 1024;
    s->gso = true;
    s->gro = true;
    s->ack_hold = 2 * NGTCP2_MILLISECONDS;
    s->answer_hold = 15 * NGTCP2_MILLISECONDS;
}

void rift_quic_settings_default_client(rift_quic_settings *s) {
    rift_quic_settings_default(s);
    s->max_streams_bidi = 0;
}

/* ---- The per-process secret ---- */

static pthread_once_t secret_once = PTHREAD_ONCE_INIT;
static uint8_t process_secret[RIFT_QUIC_SECRET_LEN];

static void make_secret(void) {
    rift_random(process_secret, sizeof(process_secret));
}

/* Retry tokens carry a timestamp; wall-clock time keeps them checkable by
 * a restarted server that shares the secret. */
static ngtcp2_tstamp wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

/* ---- Write scheduling ---- */

static void flush_timer_cb(rift_timer *t, void *arg) {
    (void)t;
    rift_quic_endpoint_flush(arg);
}

/* Sends one packet built outside a connection (Retry, reset, ...). */
static void send_raw(rift_quic_endpoint *ep, const rift_udp_addr *to,
                     const rift_udp_addr *from, const uint8_t *pkt,
                     size_t len) {
    uint8_t *buf = rift_udp_tx_reserve(&ep->udp, len);
    memcpy(buf, pkt, len);
    rift_udp_tx_commit(&ep->udp, (const struct sockaddr *)&to->ss, to->len,
                       (const struct sockaddr *)&from->ss, from->len, len);
}

/* ---- Server: packets for no connection ---- */

static void send_version_negotiation(rift_quic_endpoint *ep,
                                     const ngtcp2_version_cid *vc,
                                     const rift_udp_addr *from,
                                     const rift_udp_addr *local, size_t len) {
    /* Only for datagrams a client could have sent as a first Initial: a
     * short probe must not draw a bigger answer. */
    if (len < NGTCP2_MAX_UDP_PAYLOAD_SIZE) {
        return;
    }
    static const uint32_t versions[] = {NGTCP2_PROTO_VER_V1,
                                        NGTCP2_PROTO_VER_V2};
    uint8_t pkt[RIFT_UDP_STATELESS_PKT], r;
    rift_random(&r, 1);
    ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(
        pkt, sizeof(pkt), r, vc->scid, vc->scidlen, vc->dcid, vc->dcidlen,
        versions, RIFT_ARRAY_LEN(versions));
    if (n > 0) {
        ep->stats.version_negotiations++;
        send_raw(ep, from, local, pkt, (size_t)n);
    }
}

static bool reset_budget(rift_quic_endpoint *ep) {
    uint64_t now = rift_now_ns();
    if (now - ep->reset_window > NGTCP2_SECONDS) {
        ep->reset_window = now;
        ep->resets_in_window = 0;
    }
    return ++ep->resets_in_window <= RESETS_PER_SECOND;
}

static void send_stateless_reset(rift_quic_endpoint *ep,
                                 const ngtcp2_version_cid *vc,
                                 const rift_udp_addr *from,
                                 const rift_udp_addr *local, size_t len) {
    /* RFC 9000 §10.3: smaller than the trigger (no reset loops between
     * endpoints), at least 21 bytes to look like a short-header packet. */
    if (len < NGTCP2_STATELESS_RESET_TOKENLEN + 6 || !reset_budget(ep)) {
        return;
    }
    size_t out = len - 1 < 1200 ? len - 1 : 1200;
    size_t randlen = out - NGTCP2_STATELESS_RESET_TOKENLEN;
    uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN], rnd[RIFT_UDP_STATELESS_PKT];
    uint8_t pkt[RIFT_UDP_STATELESS_PKT];
    ngtcp2_cid cid;
    ngtcp2_cid_init(&cid, vc->dcid, vc->dcidlen);
    if (rift_quic_endpoint_reset_token(ep, token, &cid) != 0 ||
        rift_random(rnd, randlen) != 0) {
        return;
    }
    ngtcp2_ssize n =
        ngtcp2_pkt_write_stateless_reset(pkt, sizeof(pkt), token, rnd, randlen);
    if (n > 0) {
        ep->stats.resets_sent++;
        send_raw(ep, from, local, pkt, (size_t)n);
    }
}

static void send_retry(rift_quic_endpoint *ep, const ngtcp2_pkt_hd *hd,
                       const rift_udp_addr *from, const rift_udp_addr *local) {
    uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
    uint8_t pkt[RIFT_UDP_STATELESS_PKT];
    ngtcp2_cid scid;
    scid.datalen = RIFT_QUIC_SCID_LEN;
    if (rift_random(scid.data, scid.datalen) != 0) {
        return;
    }
    ngtcp2_ssize tl = ngtcp2_crypto_generate_retry_token(
        token, ep->secret, sizeof(ep->secret), hd->version,
        (const ngtcp2_sockaddr *)&from->ss, from->len, &scid, &hd->dcid,
        wall_ns());
    if (tl < 0) {
        return;
    }
    ngtcp2_ssize n =
        ngtcp2_crypto_write_retry(pkt, sizeof(pkt), hd->version, &hd->scid,
                                  &scid, &hd->dcid, token, (size_t)tl);
    if (n > 0) {
        ep->stats.retries_sent++;
        send_raw(ep, from, local, pkt, (size_t)n);
    }
}

/* A CONNECTION_CLOSE in an Initial packet, without creating state. */
static void send_initial_close(rift_quic_endpoint *ep, const ngtcp2_pkt_hd *hd,
                               const rift_udp_addr *from,
                               const rift_udp_addr *local, uint64_t code) {
    uint8_t pkt[RIFT_UDP_STATELESS_PKT];
    ngtcp2_ssize n = ngtcp2_crypto_write_connection_close(
        pkt, sizeof(pkt), hd->version, &hd->scid, &hd->dcid, code, NULL, 0);
    if (n > 0) {
        send_raw(ep, from, local, pkt, (size_t)n);
    }
}

static void accept_conn(rift_quic_endpoint *ep, const rift_udp_addr *from,
                        const rift_udp_addr *local, const uint8_t *data,
                        size_t len) {
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, data, len) != 0) {
        return; /* not a usable first Initial: drop silently */
    }
    if (ep->shutting_down || ep->nlive >= ep->settings.max_connections) {
        /* Refused at the QUIC level, as quinn's refuse(). */
        ep->stats.conns_refused++;
        send_initial_close(ep, &hd, from, local, NGTCP2_CONNECTION_REFUSED);
        return;
    }
    ngtcp2_cid odcid;
    const ngtcp2_cid *pod = NULL;
    if (hd.tokenlen > 0 && hd.token[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
        if (ngtcp2_crypto_verify_retry_token(
                &odcid, hd.token, hd.tokenlen, ep->secret, sizeof(ep->secret),
                hd.version, (const ngtcp2_sockaddr *)&from->ss, from->len,
                &hd.dcid, RETRY_TOKEN_TIMEOUT, wall_ns()) != 0) {
            send_initial_close(ep, &hd, from, local, NGTCP2_INVALID_TOKEN);
            return;
        }
        pod = &odcid;
    } else if (ep->settings.retry) {
        send_retry(ep, &hd, from, local);
        return;
    }
    rift_quic_conn *c;
    rift_error err;
    if (rift_quic_conn_new(&c, ep, local, from, &hd, pod, &err) != 0) {
        rift_log(RIFT_LOG_DEBUG, "quic: cannot accept: %s", err.text);
        return;
    }
    rift_quic_conn_read(c, local, from, data, len);
}

static void on_datagram(void *arg, const rift_udp_addr *from,
                        const rift_udp_addr *local, uint8_t *data, size_t len) {
    rift_quic_endpoint *ep = arg;
    if (!ep->server) {
        if (ep->client) {
            rift_quic_conn_read(ep->client, local, from, data, len);
        }
        return;
    }
    ngtcp2_version_cid vc;
    int rv = ngtcp2_pkt_decode_version_cid(&vc, data, len, RIFT_QUIC_SCID_LEN);
    if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
        send_version_negotiation(ep, &vc, from, local, len);
        return;
    }
    if (rv != 0) {
        return;
    }
    rift_quic_conn *c = rift_cidmap_get(&ep->map, vc.dcid, vc.dcidlen);
    if (c != NULL) {
        rift_quic_conn_read(c, local, from, data, len);
        return;
    }
    if (data[0] & 0x80) {
        accept_conn(ep, from, local, data, len);
    } else {
        send_stateless_reset(ep, &vc, from, local, len);
    }
}

/* ---- I/O ---- */

static void mark_all_dirty(rift_quic_endpoint *ep) {
    for (rift_quic_conn *c = ep->conns; c; c = c->all_next) {
        if (c->state < CONN_CLOSING) {
            rift_quic_endpoint_mark_dirty(ep, c);
        }
    }
}

static void on_io(rift_io *io, unsigned events, void *arg) {
    rift_quic_endpoint *ep = arg;
    (void)io;
    ep->processing = true;
    if ((events & RIFT_IO_WRITE) && rift_udp_flush_pending(&ep->udp) == 0) {
        /* Writable again: everyone who held back writes now. */
        mark_all_dirty(ep);
    }
    if (events & (RIFT_IO_READ | RIFT_IO_ERROR)) {
        for (int i = 0; i < RX_BATCHES_PER_EVENT; i++) {
            int n = rift_udp_recv_batch(&ep->udp, on_datagram, ep);
            if (n < 0) {
                /* ICMP errors on the client's connected socket. */
                if (!ep->server && ep->client &&
                    (n == -ECONNREFUSED || n == -EHOSTUNREACH ||
                     n == -ENETUNREACH)) {
                    rift_quic_conn_network_error(ep->client, -n);
                }
                continue;
            }
            if (n == 0) {
                break;
            }
            /* Flush (and with it ACK) after every batch, not after
             * draining the socket: late ACKs inflate the peer's RTT
             * estimate and its pacing slows down. */
            if (ep->cbs.rx_batch_done) {
                ep->cbs.rx_batch_done(ep->user_data);
            }
            rift_quic_endpoint_flush(ep);
            if (n < RIFT_UDP_RX_BATCH) {
                /* A short batch drained the socket: another recvmmsg
                 * would only say EAGAIN (a syscall, several µs in a
                 * paravirtualised guest). Later datagrams make the
                 * socket readable again. */
                break;
            }
        }
    }
    rift_quic_endpoint_flush(ep);
    ep->processing = false;
}

/* ---- Creation ---- */

/* The path MTU probe sizes up to settings.max_udp_payload (clamped to
 * 1,452 .. RIFT_UDP_MAX_PKT), which ends the list. */
static void set_probes(rift_quic_endpoint *ep) {
    static const uint16_t sizes[] = {1452, 8952, 16384};
    size_t max = ep->settings.max_udp_payload;
    max = max < sizes[0] ? sizes[0] : max;
    max = max > RIFT_UDP_MAX_PKT ? RIFT_UDP_MAX_PKT : max;
    ep->npmtud = 0;
    for (size_t i = 0; i < RIFT_ARRAY_LEN(sizes) && sizes[i] < max; i++) {
        ep->pmtud_probes[ep->npmtud++] = sizes[i];
    }
    ep->pmtud_probes[ep->npmtud++] = (uint16_t)max;
}

static int ep_new(rift_quic_endpoint **pep, rift_loop *loop, bool server,
                  const rift_quic_settings *settings,
                  const rift_quic_callbacks *cbs, void *ud, rift_error *err) {
    rift_quic_settings def;
    if (settings == NULL) {
        if (server) {
            rift_quic_settings_default(&def);
        } else {
            rift_quic_settings_default_client(&def);
        }
        settings = &def;
    }
    rift_quic_endpoint *ep = rift_calloc(settings->mem, 1, sizeof(*ep));
    if (ep == NULL) {
        return rift_error_set(err, RIFT_ERR_NOMEM, "out of memory");
    }
    ep->mem = settings->mem;
    ep->loop = loop;
    ep->server = server;
    ep->settings = *settings;
    ep->settings.cert_file = ep->settings.key_file = NULL;
    ep->settings.ca_file = ep->settings.server_name = NULL;
    ep->settings.alpn = NULL;
    ep->settings.static_secret = NULL;
    if (ep->settings.max_connections == 0) {
        ep->settings.max_connections = 1024;
    }
    set_probes(ep);
    if (cbs) {
        ep->cbs = *cbs;
    }
    ep->user_data = ud;
    ep->udp.fd = -1;
    if (settings->static_secret) {
        memcpy(ep->secret, settings->static_secret, sizeof(ep->secret));
    } else {
        pthread_once(&secret_once, make_secret);
        memcpy(ep->secret, process_secret, sizeof(ep->secret));
    }
    if (rift_cidmap_init(&ep->map, ep->mem) != 0) {
        rift_free(ep->mem, ep);
        return rift_error_set(err, RIFT_ERR_IO, "no entropy");
    }
    rift_timer_init(loop, &ep->flush_timer, flush_timer_cb, ep);
    *pep = ep;
    return 0;
}

static int ep_open_socket(rift_quic_endpoint *ep, const struct sockaddr *bind,
                          socklen_t bindlen, const struct sockaddr *peer,
                          socklen_t peerlen, rift_error *err) {
    rift_udp_settings us = {ep->settings.gso, ep->settings.gro, peer != NULL};
    int rv = rift_udp_open(&ep->udp, bind, bindlen, peer, peerlen, &us, ep->mem,
                           err);
    if (rv != 0) {
        return rv;
    }
    rv = rift_io_start(ep->loop, &ep->io, ep->udp.fd, RIFT_IO_READ, on_io, ep);
    if (rv != 0) {
        return rift_error_set(err, RIFT_ERR_IO, "cannot watch socket: %s",
                              rift_strerror(rv));
    }
    return 0;
}

int rift_quic_server_new(rift_quic_endpoint **pep, rift_loop *loop,
                         const struct sockaddr *addr, socklen_t addrlen,
                         const rift_quic_settings *settings,
                         const rift_quic_callbacks *cbs, void *ud,
                         rift_error *err) {
    rift_quic_settings def;
    if (settings == NULL) {
        rift_quic_settings_default(&def);
        settings = &def;
    }
    if (addr == NULL ||
        (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid listen address");
    }
    rift_quic_endpoint *ep;
    int rv = ep_new(&ep, loop, true, settings, cbs, ud, err);
    if (rv != 0) {
        return rv;
    }
    if ((rv = rift_quic_tls_server_cred(ep, settings->cert_file,
                                        settings->key_file, err)) != 0 ||
        (rv = ep_open_socket(ep, addr, addrlen, NULL, 0, err)) != 0) {
        rift_quic_endpoint_del(ep);
        return rv;
    }
    *pep = ep;
    return 0;
}

int rift_quic_client_new(rift_quic_endpoint **pep, rift_loop *loop,
                         const struct sockaddr *addr, socklen_t addrlen,
                         const rift_quic_settings *settings,
                         const rift_quic_callbacks *cbs, void *ud,
                         rift_error *err) {
    rift_quic_settings def;
    if (settings == NULL) {
        rift_quic_settings_default_client(&def);
        settings = &def;
    }
    if (addr == NULL ||
        (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "invalid server address");
    }
    if (settings->server_name == NULL || settings->server_name[0] == '\0' ||
        strlen(settings->server_name) >= 256) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT,
                              "server name required");
    }
    const char *alpn = settings->alpn ? settings->alpn : RIFT_ALPN;
    if (strlen(alpn) == 0 || strlen(alpn) >= 64) {
        return rift_error_set(err, RIFT_ERR_INVALID_ARGUMENT, "invalid ALPN");
    }
    rift_quic_endpoint *ep;
    int rv = ep_new(&ep, loop, false, settings, cbs, ud, err);
    if (rv != 0) {
        return rv;
    }
    snprintf(ep->server_name, sizeof(ep->server_name), "%s",
             settings->server_name);
    ep->alpn_len = strlen(alpn);
    memcpy(ep->alpn, alpn, ep->alpn_len);
    ep->offer_alpn = !settings->no_alpn;

    struct sockaddr_storage any;
    memset(&any, 0, sizeof(any));
    any.ss_family = addr->sa_family;
    socklen_t anylen = addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                  : sizeof(struct sockaddr_in6);
    if ((rv = rift_quic_tls_client_cred(ep, settings->ca_file, err)) != 0 ||
        (rv = ep_open_socket(ep, (struct sockaddr *)&any, anylen, addr, addrlen,
                             err)) != 0) {
        rift_quic_endpoint_del(ep);
        return rv;
    }
    rift_udp_addr remote;
    rift_udp_addr_set(&remote, addr, addrlen);
    rift_quic_conn *c;
    if ((rv = rift_quic_conn_new(&c, ep, &ep->udp.local, &remote, NULL, NULL,
                                 err)) != 0) {
        rift_quic_endpoint_del(ep);
        return rv;
    }
    c->user_data = ud;
    ep->client = c;
    /* The first flight goes out from the loop. */
    rift_quic_endpoint_mark_dirty(ep, c);
    *pep = ep;
    return 0;
}

rift_quic_conn *rift_quic_client_conn(rift_quic_endpoint *ep) {
    return ep->client;
}

void rift_quic_endpoint_local_addr(const rift_quic_endpoint *ep,
                                   struct sockaddr_storage *ss,
                                   socklen_t *len) {
    memcpy(ss, &ep->udp.local.ss, sizeof(*ss));
    *len = ep->udp.local.len;
}

void rift_quic_endpoint_shutdown(rift_quic_endpoint *ep, uint64_t code,
                                 const char *reason, size_t reason_len) {
    ep->shutting_down = true;
    for (rift_quic_conn *c = ep->conns; c; c = c->all_next) {
        rift_quic_conn_close(c, code, reason, reason_len);
    }
}

static void ep_free(rift_quic_endpoint *ep, bool say_goodbye) {
    if (say_goodbye && ep->udp.fd >= 0) {
        ep->processing = true;
        const char *why = ep->server ? "server shutdown" : "client closed";
        for (rift_quic_conn *c = ep->conns; c; c = c->all_next) {
            rift_quic_conn_close_now(c, 0, why);
        }
        rift_udp_tx_flush(&ep->udp);
    }
    while (ep->conns) {
        rift_quic_conn_free(ep->conns);
    }
    rift_timer_stop(&ep->flush_timer);
    rift_io_stop(&ep->io);
    if (ep->udp.fd >= 0) {
        rift_udp_close(&ep->udp);
    }
    if (ep->cred) {
        gnutls_certificate_free_credentials(ep->cred);
    }
    if (ep->prio) {
        gnutls_priority_deinit(ep->prio);
    }
    rift_cidmap_free(&ep->map);
    gnutls_memset(ep->secret, 0, sizeof(ep->secret));
    rift_free(ep->mem, ep);
}

void rift_quic_endpoint_del(rift_quic_endpoint *ep) {
    if (ep != NULL) {
        ep_free(ep, true);
    }
}

void rift_quic_endpoint_abort(rift_quic_endpoint *ep) {
    if (ep != NULL) {
        ep_free(ep, false);
    }
}

void rift_quic_endpoint_get_stats(const rift_quic_endpoint *ep,
                                  rift_quic_endpoint_stats *st) {
    *st = ep->stats;
    st->rx_datagrams = ep->udp.stats.rx_datagrams;
    st->tx_datagrams = ep->udp.stats.tx_datagrams;
    st->tx_calls = ep->udp.stats.tx_calls;
    st->tx_eagain = ep->udp.stats.tx_eagain;
    st->tx_dropped = ep->udp.stats.tx_errors + ep->udp.stats.tx_queue_drops;
    st->gso = ep->udp.gso;
    st->gro = ep->udp.gro;
}

size_t rift_quic_endpoint_conn_count(const rift_quic_endpoint *ep) {
    if (!ep->server) {
        return ep->client && ep->client->state < CONN_CLOSING ? 1 : 0;
    }
    return ep->nlive;
}
