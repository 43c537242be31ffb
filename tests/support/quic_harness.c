/*
 * quic_harness.c — fixtures for the QUIC transport tests (tests layer).
 * See quic_harness.h.
 */
#include "quic_harness.h"

#include <string.h>

/* ---- Server app callbacks ---- */

static void copy_close(close_copy *cc, const rift_quic_close_info *ci) {
    cc->seen = true;
    cc->kind = ci->kind;
    cc->code = ci->code;
    cc->error = ci->error;
    size_t n = ci->reason_len < sizeof(cc->reason) - 1 ? ci->reason_len
                                                       : sizeof(cc->reason) - 1;
    if (n > 0) {
        memcpy(cc->reason, ci->reason, n);
    }
    cc->reason[n] = '\0';
    snprintf(cc->detail, sizeof(cc->detail), "%s", ci->detail);
}

static void srv_handshake(rift_quic_conn *c, void *ud) {
    srv_app *app = ud;
    app->handshakes++;
    app->last_conn = c;
    rift_quic_conn_set_user_data(c, app);
    if (app->close_on_handshake) {
        rift_quic_conn_close(c, 1, "authentication failed",
                             strlen("authentication failed"));
    }
}

static void srv_conn_closed(rift_quic_conn *c, const rift_quic_close_info *ci,
                            void *ud) {
    srv_app *app = ud;
    app->conns_closed++;
    copy_close(&app->last_close, ci);
    if (app->last_conn == c) {
        app->last_conn = NULL;
    }
}

static void srv_stream_open(rift_quic_stream *s, void *ud) {
    srv_app *app = ud;
    app->streams_opened++;
    srv_stream *ss = calloc(1, sizeof(*ss));
    rift_quic_stream_set_user_data(s, ss);
    if (app->mode == SRV_STOP) {
        rift_quic_stream_shutdown_read(s, 7);
        rift_quic_stream_write(s, NULL, 0, true);
    }
}

static srv_app *app_of(rift_quic_stream *s) {
    return rift_quic_conn_get_user_data(rift_quic_stream_conn(s));
}

static void srv_frames(srv_app *app, srv_stream *ss, const uint8_t *data,
                       size_t len) {
    size_t i = 0;
    while (i < len) {
        if (ss->body_left == 0) {
            size_t k = 8 - ss->hdr_len;
            if (k > len - i) {
                k = len - i;
            }
            memcpy(ss->hdr + ss->hdr_len, data + i, k);
            ss->hdr_len += k;
            i += k;
            if (ss->hdr_len < 8) {
                break;
            }
            uint32_t flen = get_u32(ss->hdr);
            uint32_t seq = get_u32(ss->hdr + 4);
            if (seq != ss->frames || flen < 4) {
                ss->bad = true;
                app->order_ok = false;
            }
            ss->frames++;
            app->frames_total++;
            ss->body_left = flen - 4;
            ss->hdr_len = 0;
            continue;
        }
        size_t k = len - i < ss->body_left ? len - i : (size_t)ss->body_left;
        ss->body_left -= k;
        i += k;
    }
}

static void srv_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                     bool fin, void *ud) {
    srv_stream *ss = ud;
    srv_app *app = app_of(s);
    switch (app->mode) {
    case SRV_ECHO:
        if (len > 0 || fin) {
            rift_quic_chunk ch = {data, len, NULL, NULL};
            rift_quic_stream_write(s, &ch, len > 0 ? 1 : 0, fin);
        }
        break;
    case SRV_FRAMES:
        srv_frames(app, ss, data, len);
        if (fin) {
            uint8_t out[8];
            put_u32(out, (uint32_t)(ss->frames >> 32));
            put_u32(out + 4, (uint32_t)ss->frames);
            rift_quic_chunk ch = {out, 8, NULL, NULL};
            rift_quic_stream_write(s, &ch, 1, true);
        }
        break;
    case SRV_SINK:
        for (size_t i = 0; i < len; i++) {
            if (data[i] != pattern_at(ss->bytes + i)) {
                app->order_ok = false;
                break;
            }
        }
        if (fin) {
            uint8_t out[8];
            uint64_t total = ss->bytes + len;
            put_u32(out, (uint32_t)(total >> 32));
            put_u32(out + 4, (uint32_t)total);
            rift_quic_chunk ch = {out, 8, NULL, NULL};
            rift_quic_stream_write(s, &ch, 1, true);
        }
        break;
    case SRV_STOP:
        break;
    case SRV_LATER:
        if (fin) {
            app->later = s;
            if (app->answer_later) {
                rift_quic_conn_answer_later(rift_quic_stream_conn(s));
            }
        }
        break;
    }
    ss->bytes += len;
    app->bytes_total += len;
    /* Manual credit: only what was processed goes back. */
    rift_quic_stream_consumed(s, len);
}

static void srv_reset(rift_quic_stream *s, uint64_t code, void *ud) {
    (void)ud;
    srv_app *app = app_of(s);
    app->streams_reset++;
    app->last_reset_code = code;
}

static void srv_stream_close(rift_quic_stream *s, bool code_set, uint64_t code,
                             void *ud) {
    (void)code_set;
    (void)code;
    srv_app *app = app_of(s);
    app->streams_closed++;
    free(ud);
}

const rift_quic_callbacks harness_server_cbs = {
    .handshake_done = srv_handshake,
    .conn_closed = srv_conn_closed,
    .stream_open = srv_stream_open,
    .stream_data = srv_data,
    .stream_reset = srv_reset,
    .stream_close = srv_stream_close,
};

/* ---- Client app callbacks ---- */

static void cli_handshake(rift_quic_conn *c, void *ud) {
    (void)c;
    cli_app *app = ud;
    app->handshake = true;
}

static void cli_conn_closed(rift_quic_conn *c, const rift_quic_close_info *ci,
                            void *ud) {
    (void)c;
    cli_app *app = ud;
    copy_close(&app->close, ci);
}

static void cli_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                     bool fin, void *ud) {
    cli_stream *cs = ud;
    size_t k =
        len < sizeof(cs->rx) - cs->rx_len ? len : sizeof(cs->rx) - cs->rx_len;
    if (k > 0) {
        memcpy(cs->rx + cs->rx_len, data, k);
        cs->rx_len += k;
    }
    cs->rx_bytes += len;
    if (fin) {
        cs->fin = true;
        if (cs->app->write_on_ack) {
            uint8_t more[512] = {0};
            rift_quic_chunk ch = {more, sizeof(more), NULL, NULL};
            rift_quic_stream_write(s, &ch, 1, false);
        }
    }
    rift_quic_stream_consumed(s, len);
}

static void cli_reset(rift_quic_stream *s, uint64_t code, void *ud) {
    (void)s;
    cli_stream *cs = ud;
    cs->reset = true;
    cs->reset_code = code;
}

static void cli_stopped(rift_quic_stream *s, void *ud) {
    (void)s;
    cli_stream *cs = ud;
    cs->stopped = true;
    cs->app->stopped_streams++;
}

static void cli_acked(rift_quic_stream *s, uint64_t unacked, void *ud) {
    (void)unacked;
    cli_stream *cs = ud;
    cs->app->acked_events++;
    if (cs->app->write_on_ack && !cs->stopped) {
        uint8_t more[512] = {0};
        rift_quic_chunk ch = {more, sizeof(more), NULL, NULL};
        rift_quic_stream_write(s, &ch, 1, false);
    }
}

static void cli_stream_close(rift_quic_stream *s, bool code_set, uint64_t code,
                             void *ud) {
    (void)s;
    cli_stream *cs = ud;
    cs->closed = true;
    cs->code_set = code_set;
    cs->code = code;
    cs->s = NULL;
    cs->app->closed_streams++;
}

static void cli_available(rift_quic_conn *c, void *ud) {
    (void)c;
    cli_app *app = ud;
    app->streams_available++;
}

const rift_quic_callbacks harness_client_cbs = {
    .handshake_done = cli_handshake,
    .conn_closed = cli_conn_closed,
    .stream_data = cli_data,
    .stream_reset = cli_reset,
    .stream_stopped = cli_stopped,
    .stream_acked = cli_acked,
    .stream_close = cli_stream_close,
    .streams_available = cli_available,
};

cli_stream *cli_open(cli_app *app, rift_quic_conn *c) {
    if (app->nstreams == RIFT_ARRAY_LEN(app->streams)) {
        return NULL;
    }
    cli_stream *cs = calloc(1, sizeof(*cs));
    cs->app = app;
    if (rift_quic_conn_open_stream(c, cs, &cs->s) != 0) {
        free(cs);
        return NULL;
    }
    app->streams[app->nstreams++] = cs;
    return cs;
}

void cli_app_free(cli_app *app) {
    for (size_t i = 0; i < app->nstreams; i++) {
        free(app->streams[i]);
    }
    app->nstreams = 0;
}

/* ---- Harness ---- */

bool harness_init(harness *h) {
    memset(h, 0, sizeof(*h));
    h->srv.order_ok = true;
    h->tmp = rift_test_tmpdir();
    if (h->tmp == NULL) {
        return false;
    }
    snprintf(h->certs, sizeof(h->certs), "%s/certs", h->tmp);
    snprintf(h->other_certs, sizeof(h->other_certs), "%s/other", h->tmp);
    rift_error err;
    if (rift_certgen_dev(h->certs, NULL, &err) != 0 ||
        rift_certgen_dev(h->other_certs, NULL, &err) != 0) {
        fprintf(stderr, "certgen: %s\n", err.text);
        return false;
    }
    snprintf(h->ca, sizeof(h->ca), "%s/ca.pem", h->certs);
    snprintf(h->cert, sizeof(h->cert), "%s/server.pem", h->certs);
    snprintf(h->key, sizeof(h->key), "%s/server.key", h->certs);
    snprintf(h->other_ca, sizeof(h->other_ca), "%s/ca.pem", h->other_certs);
    return rift_loop_new(&h->loop, NULL) == 0;
}

bool harness_server(harness *h, rift_quic_settings *s) {
    rift_quic_settings def;
    if (s == NULL) {
        rift_quic_settings_default(&def);
        s = &def;
    }
    s->cert_file = h->cert;
    s->key_file = h->key;
    /* 127.0.0.1 port 0, unless the test preset an address (a restart on
     * the same port, a wildcard bind). */
    struct sockaddr_storage sa;
    socklen_t salen = h->addrlen;
    if (salen > 0) {
        memcpy(&sa, &h->addr, sizeof(sa));
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
        memset(&sa, 0, sizeof(sa));
        s4->sin_family = AF_INET;
        s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        salen = sizeof(*s4);
    }
    rift_error err;
    if (rift_quic_server_new(&h->server, h->loop, (struct sockaddr *)&sa, salen,
                             s, &harness_server_cbs, &h->srv, &err) != 0) {
        fprintf(stderr, "server: %s\n", err.text);
        return false;
    }
    rift_quic_endpoint_local_addr(h->server, &h->addr, &h->addrlen);
    return true;
}

static bool server_idle(void *arg) {
    harness *h = arg;
    return rift_quic_endpoint_conn_count(h->server) == 0 &&
           h->srv.streams_closed == h->srv.streams_opened;
}

void harness_fini(harness *h) {
    /* A graceful stop first, so every stream_close (which frees the app's
     * stream records) runs before the endpoint goes. */
    if (h->server) {
        rift_quic_endpoint_shutdown(h->server, 0, "server shutdown",
                                    strlen("server shutdown"));
        harness_run(h, server_idle, h, 2000);
    }
    rift_quic_endpoint_del(h->server);
    rift_loop_del(h->loop);
    rift_test_rmdir(h->tmp);
}

void harness_client_settings(harness *h, rift_quic_settings *s) {
    rift_quic_settings_default_client(s);
    s->ca_file = h->ca;
    s->server_name = "localhost";
}

rift_quic_endpoint *harness_client(harness *h, rift_quic_settings *s,
                                   cli_app *app) {
    rift_quic_settings def;
    if (s == NULL) {
        harness_client_settings(h, &def);
        s = &def;
    }
    rift_quic_endpoint *ep;
    rift_error err;
    if (rift_quic_client_new(&ep, h->loop, (struct sockaddr *)&h->addr,
                             h->addrlen, s, &harness_client_cbs, app,
                             &err) != 0) {
        fprintf(stderr, "client: %s\n", err.text);
        return NULL;
    }
    return ep;
}

bool harness_run(harness *h, bool (*cond)(void *), void *arg, int timeout_ms) {
    rift_tstamp end = rift_now_ns() + (rift_tstamp)timeout_ms * 1000000;
    while (!cond(arg)) {
        if (rift_now_ns() >= end) {
            return cond(arg);
        }
        rift_loop_run_once(h->loop, 10000000);
    }
    return true;
}

void harness_spin(harness *h, int ms) {
    rift_tstamp end = rift_now_ns() + (rift_tstamp)ms * 1000000;
    while (rift_now_ns() < end) {
        rift_loop_run_once(h->loop, 5000000);
    }
}

bool cond_handshake(void *arg) {
    cli_app *app = arg;
    return app->handshake || app->close.seen;
}

bool cond_client_closed(void *arg) {
    return ((cli_app *)arg)->close.seen;
}
