/*
 * test_quic_streams.c — QUIC stream behaviour over 127.0.0.1: 10,000
 * frames in order, a 16 MiB transfer through manual flow-control credit
 * with zero-copy chunks, 300 streams against a 128-stream limit, RESET_STREAM
 * and STOP_SENDING in both directions, backpressure when credit is held.
 */
#include "quic_harness.h"
#include "quic/quic_internal.h"

static bool stream_done(void *arg) {
    cli_stream *cs = arg;
    return cs->closed || cs->app->close.seen;
}

static bool all_streams_closed(void *arg) {
    cli_app *app = arg;
    return app->closed_streams == (int)app->nstreams || app->close.seen;
}

static bool connect_client(harness *h, cli_app *app,
                           rift_quic_endpoint **pcli) {
    *pcli = harness_client(h, NULL, app);
    return *pcli != NULL && harness_run(h, cond_handshake, app, 5000) &&
           app->handshake;
}

RIFT_TEST(ten_thousand_frames_in_order) {
    harness h;
    CHECK(harness_init(&h));
    h.srv.mode = SRV_FRAMES;
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    CHECK(cs != NULL);
    enum {
        N = 10000
    };
    /* Frames of varying size: header copied, body copied too (small). */
    for (uint32_t i = 0; i < N; i++) {
        uint8_t hdr[8], body[200];
        uint32_t blen = (i * 37) % sizeof(body);
        put_u32(hdr, blen + 4);
        put_u32(hdr + 4, i);
        memset(body, (int)(i & 0xff), blen);
        rift_quic_chunk ch[2] = {{hdr, 8, NULL, NULL},
                                 {body, blen, NULL, NULL}};
        CHECK_OK(rift_quic_stream_write(cs->s, ch, 2, i == N - 1));
        if (i % 1000 == 999) {
            rift_loop_run_once(h.loop, 0); /* let some go out */
        }
    }
    CHECK(harness_run(&h, stream_done, cs, 10000));
    CHECK(cs->closed);
    CHECK(h.srv.order_ok);
    CHECK_EQ_U64(h.srv.frames_total, N);
    CHECK_EQ_INT(cs->rx_len, 8);
    CHECK_EQ_U64(get_u32(cs->rx + 4), N);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

/* Zero-copy chunks: every release must come exactly once. */
static int releases;

static void count_release(void *owner) {
    (void)owner;
    releases++;
}

RIFT_TEST(large_transfer_with_manual_credit) {
    harness h;
    CHECK(harness_init(&h));
    h.srv.mode = SRV_SINK;
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    CHECK(cs != NULL);
    enum {
        CHUNK = 65536,
        TOTAL = 16 << 20
    };
    uint8_t *data = malloc(TOTAL);
    for (uint64_t i = 0; i < TOTAL; i++) {
        data[i] = pattern_at(i);
    }
    releases = 0;
    /* Queue everything at once: the 2 MiB stream window and 8 MiB
     * connection window only open as the server consumes. */
    for (size_t off = 0; off < TOTAL; off += CHUNK) {
        rift_quic_chunk ch = {data + off, CHUNK, count_release, NULL};
        CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, off + CHUNK == TOTAL));
    }
    CHECK(rift_quic_stream_unacked(cs->s) == TOTAL);
    CHECK(harness_run(&h, stream_done, cs, 30000));
    CHECK(cs->closed);
    CHECK(h.srv.order_ok);
    CHECK_EQ_U64(h.srv.bytes_total, TOTAL);
    CHECK_EQ_INT(cs->rx_len, 8);
    CHECK_EQ_U64(get_u32(cs->rx + 4), TOTAL);
    CHECK_EQ_INT(releases, TOTAL / CHUNK);
    rift_quic_endpoint_del(cli);
    free(data);
    cli_app_free(&app);
    harness_fini(&h);
}

/* Sends |total| bytes on one stream with |max_payload| as the client's
 * largest UDP payload; returns the datagrams the client sent, 0 on
 * failure. */
static uint64_t transfer_datagrams(size_t max_payload, size_t total) {
    harness h;
    uint64_t sent = 0;
    if (!harness_init(&h)) {
        return 0;
    }
    h.srv.mode = SRV_SINK;
    cli_app app = {0};
    rift_quic_endpoint *cli = NULL;
    uint8_t *data = malloc(total);
    rift_quic_settings qs;
    harness_client_settings(&h, &qs);
    qs.max_udp_payload = max_payload;
    if (data == NULL || !harness_server(&h, NULL)) {
        goto out;
    }
    cli = harness_client(&h, &qs, &app);
    if (cli == NULL || !harness_run(&h, cond_handshake, &app, 5000)) {
        goto out;
    }
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    for (size_t i = 0; i < total; i++) {
        data[i] = pattern_at(i);
    }
    rift_quic_chunk ch = {data, total, NULL, NULL};
    if (cs == NULL || rift_quic_stream_write(cs->s, &ch, 1, true) != 0 ||
        !harness_run(&h, stream_done, cs, 30000) || !h.srv.order_ok ||
        h.srv.bytes_total != total) {
        goto out;
    }
    rift_quic_endpoint_stats st;
    rift_quic_endpoint_get_stats(cli, &st);
    sent = st.tx_datagrams;
out:
    rift_quic_endpoint_del(cli);
    free(data);
    cli_app_free(&app);
    harness_fini(&h);
    return sent;
}

RIFT_TEST(path_mtu_discovery_fills_the_loopback_path) {
    /* Loopback carries 64 KiB datagrams: after the probes the stream goes
     * out in 16 KiB packets (default). With quinn's 1,452-byte ceiling it
     * takes at least total / 1,452 packets. */
    enum {
        TOTAL = 4 << 20
    };
    uint64_t big = transfer_datagrams(16384, TOTAL);
    uint64_t small = transfer_datagrams(1452, TOTAL);
    CHECK(big > 0 && small > 0);
    CHECK(small >= TOTAL / 1452);
    CHECK(big < TOTAL / 8192);
}

/* Opens streams as the limit allows; each sends a few bytes and FIN. */
typedef struct many {
    cli_app *app;
    rift_quic_conn *conn;
    int opened;
    int want;
    bool failed;
} many;

static void open_more(many *m) {
    while (m->opened < m->want) {
        cli_stream *cs = cli_open(m->app, m->conn);
        if (cs == NULL) {
            return; /* limit: wait for streams_available */
        }
        uint8_t msg[4];
        put_u32(msg, (uint32_t)m->opened);
        rift_quic_chunk ch = {msg, 4, NULL, NULL};
        if (rift_quic_stream_write(cs->s, &ch, 1, true) != 0) {
            m->failed = true;
        }
        m->opened++;
    }
}

static bool many_done(void *arg) {
    many *m = arg;
    open_more(m);
    return (m->opened == m->want &&
            m->app->closed_streams == (int)m->app->nstreams) ||
           m->app->close.seen;
}

RIFT_TEST(three_hundred_streams_against_limit_128) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL)); /* default max 128 streams */
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    many m = {&app, rift_quic_client_conn(cli), 0, 300, false};
    open_more(&m);
    CHECK_EQ_INT(m.opened, 128);
    CHECK_EQ_INT(rift_quic_conn_streams_left(m.conn), 0);
    CHECK(harness_run(&h, many_done, &m, 20000));
    CHECK(!m.failed);
    CHECK_EQ_INT(m.opened, 300);
    CHECK_EQ_INT(app.closed_streams, 300);
    CHECK(app.streams_available > 0);
    for (size_t i = 0; i < app.nstreams; i++) {
        CHECK_EQ_INT(app.streams[i]->rx_len, 4);
        CHECK_EQ_U64(get_u32(app.streams[i]->rx), i);
    }
    CHECK_EQ_INT(h.srv.streams_opened, 300);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

static bool server_saw_reset(void *arg) {
    return ((srv_app *)arg)->streams_reset > 0;
}

RIFT_TEST(client_reset_reaches_server) {
    harness h;
    CHECK(harness_init(&h));
    h.srv.mode = SRV_SINK;
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    CHECK(cs != NULL);
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = pattern_at(i);
    }
    rift_quic_chunk ch = {buf, sizeof(buf), NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, false));
    harness_spin(&h, 20);
    /* RESET_STREAM(0x42) + STOP_SENDING(0x42): like a dropped publisher. */
    rift_quic_stream_shutdown_write(cs->s, 0x42);
    rift_quic_stream_shutdown_read(cs->s, 0x42);
    CHECK_EQ_INT(rift_quic_stream_write(cs->s, &ch, 1, false), RIFT_ERR_CLOSED);
    CHECK(harness_run(&h, server_saw_reset, &h.srv, 5000));
    CHECK_EQ_U64(h.srv.last_reset_code, 0x42);
    /* The server's side is answered with an automatic reset; the stream
     * closes on both ends and the stream credit is renewed. */
    CHECK(harness_run(&h, stream_done, cs, 5000));
    CHECK(cs->code_set);
    CHECK_EQ_U64(cs->code, 0x42);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

static bool stopped_and_closed(void *arg) {
    cli_stream *cs = arg;
    return (cs->stopped && cs->closed) || cs->app->close.seen;
}

RIFT_TEST(server_stop_sending_is_observed_by_client) {
    harness h;
    CHECK(harness_init(&h));
    h.srv.mode = SRV_STOP; /* STOP_SENDING(7) + FIN on every stream */
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    app.write_on_ack = true;
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    CHECK(cs != NULL);
    uint8_t buf[512] = {0};
    rift_quic_chunk ch = {buf, sizeof(buf), NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, false));
    CHECK(harness_run(&h, stopped_and_closed, cs, 5000));
    CHECK(cs->stopped);
    CHECK(cs->fin);
    /* The peer's STOP_SENDING code arrives with the close. */
    CHECK(cs->code_set);
    CHECK_EQ_U64(cs->code, 7);
    CHECK_EQ_INT(app.stopped_streams, 1);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

/* Backpressure: a server that does not return credit stops the sender at
 * the stream window; returning it lets the rest through. */
typedef struct held {
    uint64_t received;
    rift_quic_stream *s;
    uint64_t owed;
    bool fin;
} held;

static held g_held;

static void hold_open(rift_quic_stream *s, void *ud) {
    (void)ud;
    g_held.s = s;
}

static void hold_data(rift_quic_stream *s, const uint8_t *data, size_t len,
                      bool fin, void *ud) {
    (void)s;
    (void)data;
    (void)ud;
    g_held.received += len;
    g_held.owed += len;
    g_held.fin |= fin;
}

static void hold_close(rift_quic_stream *s, bool code_set, uint64_t code,
                       void *ud) {
    (void)code_set;
    (void)code;
    (void)ud;
    if (g_held.s == s) {
        g_held.s = NULL;
    }
}

static bool held_at_window(void *arg) {
    (void)arg;
    return g_held.received >= 2228224;
}

static bool held_fin(void *arg) {
    (void)arg;
    return g_held.fin;
}

RIFT_TEST(held_credit_is_backpressure) {
    harness h;
    CHECK(harness_init(&h));
    memset(&g_held, 0, sizeof(g_held));
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.cert_file = h.cert;
    s.key_file = h.key;
    rift_quic_callbacks cbs = {
        .stream_open = hold_open,
        .stream_data = hold_data,
        .stream_close = hold_close,
    };
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    rift_error err;
    CHECK_OK(rift_quic_server_new(&h.server, h.loop, (struct sockaddr *)&sa,
                                  sizeof(sa), &s, &cbs, NULL, &err));
    rift_quic_endpoint_local_addr(h.server, &h.addr, &h.addrlen);
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    enum {
        TOTAL = 3 << 20
    };
    uint8_t *data = calloc(1, TOTAL);
    rift_quic_chunk ch = {data, TOTAL, NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, true));
    CHECK(harness_run(&h, held_at_window, NULL, 10000));
    harness_spin(&h, 200);
    /* Exactly the stream window and no more. */
    CHECK_EQ_U64(g_held.received, 2228224);
    CHECK(rift_quic_stream_unacked(cs->s) > 0);
    rift_quic_stream_consumed(g_held.s, g_held.owed);
    g_held.owed = 0;
    /* More credit as it arrives, until the FIN. */
    while (!g_held.fin) {
        CHECK(harness_run(&h, held_fin, NULL, 200) || g_held.owed > 0);
        if (g_held.s && g_held.owed) {
            rift_quic_stream_consumed(g_held.s, g_held.owed);
            g_held.owed = 0;
        }
    }
    CHECK_EQ_U64(g_held.received, TOTAL);
    rift_quic_endpoint_del(cli);
    free(data);
    cli_app_free(&app);
    harness_spin(&h, 50);
    rift_quic_endpoint_del(h.server);
    h.server = NULL;
    harness_fini(&h);
}

RIFT_TEST(endpoint_del_releases_queued_chunks) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    static uint8_t big[1 << 20];
    releases = 0;
    for (int i = 0; i < 8; i++) {
        rift_quic_chunk ch = {big, sizeof(big), count_release, NULL};
        CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, false));
    }
    rift_loop_run_once(h.loop, 0);
    rift_quic_endpoint_del(cli);
    CHECK_EQ_INT(releases, 8);
    cli_app_free(&app);
    harness_fini(&h);
}

RIFT_TEST(all_streams_close_before_conn_closed) {
    harness h;
    CHECK(harness_init(&h));
    h.srv.mode = SRV_SINK;
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    for (int i = 0; i < 5; i++) {
        cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
        CHECK(cs != NULL);
        uint8_t b[10];
        for (int k = 0; k < 10; k++) {
            b[k] = pattern_at((uint64_t)k);
        }
        rift_quic_chunk ch = {b, 10, NULL, NULL};
        CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, false));
    }
    harness_spin(&h, 50);
    rift_quic_conn_close(rift_quic_client_conn(cli), 0, "client closed", 13);
    CHECK(harness_run(&h, all_streams_closed, &app, 5000));
    CHECK_EQ_INT(app.closed_streams, 5);
    CHECK(app.close.seen);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

/* EAGAIN from the kernel (injected): packets wait for EPOLLOUT instead of
 * being dropped, and the transfer completes intact. */
static void inject_tick(rift_timer *t, void *arg) {
    rift_quic_endpoint *ep = arg;
    ep->udp.inject_eagain = 2;
    rift_timer_start(t, rift_now_ns() + 1000000);
}

RIFT_TEST(eagain_waits_for_writability) {
    harness h;
    CHECK(harness_init(&h));
    h.srv.mode = SRV_SINK;
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli;
    CHECK(connect_client(&h, &app, &cli));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    enum {
        TOTAL = 4 << 20
    };
    uint8_t *data = malloc(TOTAL);
    for (uint64_t i = 0; i < TOTAL; i++) {
        data[i] = pattern_at(i);
    }
    rift_quic_chunk ch = {data, TOTAL, NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, true));
    rift_timer tick;
    rift_timer_init(h.loop, &tick, inject_tick, cli);
    CHECK_OK(rift_timer_start(&tick, 0));
    CHECK(harness_run(&h, stream_done, cs, 30000));
    rift_timer_stop(&tick);
    CHECK(cs->closed);
    CHECK(h.srv.order_ok);
    CHECK_EQ_U64(h.srv.bytes_total, TOTAL);
    rift_quic_endpoint_stats st;
    rift_quic_endpoint_get_stats(cli, &st);
    CHECK(st.tx_eagain > 0);
    CHECK_EQ_U64(st.tx_dropped, 0);
    rift_quic_endpoint_del(cli);
    free(data);
    cli_app_free(&app);
    harness_fini(&h);
}
