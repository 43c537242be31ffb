/*
 * test_quic_handshake.c — QUIC transport over 127.0.0.1: handshake and
 * echo, certificate and ALPN refusals, close codes and reasons, Retry,
 * connection limit, idle timeout, keep-alive, unreachable server,
 * handshake timeout, version negotiation, stateless reset after restart.
 */
#include "quic_harness.h"

#include <unistd.h>

static bool streams_closed(void *arg) {
    cli_app *app = arg;
    return app->nstreams > 0 && app->closed_streams == (int)app->nstreams;
}

static bool server_handshake_one(void *arg) {
    return ((srv_app *)arg)->handshakes >= 1;
}

static bool server_closed_one(void *arg) {
    return ((srv_app *)arg)->conns_closed >= 1;
}

RIFT_TEST(handshake_echo_and_close_reason) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, NULL, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_handshake, &app, 5000));
    CHECK(app.handshake);
    /* The server completes one flight later, on the client's Finished. */
    CHECK(harness_run(&h, server_handshake_one, &h.srv, 5000));
    CHECK_EQ_INT(h.srv.handshakes, 1);
    rift_quic_conn *c = rift_quic_client_conn(cli);
    CHECK(rift_quic_conn_is_established(c));
    CHECK_EQ_INT(rift_quic_conn_streams_left(c), 128);

    cli_stream *cs = cli_open(&app, c);
    CHECK(cs != NULL);
    rift_quic_chunk ch = {(const uint8_t *)"hello", 5, NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, true));
    /* FIN queued: further writes are refused. */
    CHECK_EQ_INT(rift_quic_stream_write(cs->s, &ch, 1, false), RIFT_ERR_CLOSED);
    CHECK(harness_run(&h, streams_closed, &app, 5000));
    CHECK(cs->fin);
    CHECK_EQ_MEM(cs->rx, cs->rx_len, "hello", 5);
    CHECK(!cs->code_set);
    CHECK_EQ_INT(h.srv.streams_opened, 1);

    rift_quic_conn_close(c, 0, "client closed", strlen("client closed"));
    CHECK(harness_run(&h, server_closed_one, &h.srv, 5000));
    CHECK(h.srv.last_close.kind == RIFT_QUIC_CLOSE_PEER_APP);
    CHECK_EQ_U64(h.srv.last_close.code, 0);
    CHECK_EQ_STR(h.srv.last_close.reason, "client closed");
    CHECK(app.close.seen);
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_LOCAL_APP);
    CHECK_EQ_INT(h.srv.streams_closed, 1);
    CHECK_EQ_INT(rift_quic_endpoint_conn_count(h.server), 0);

    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

RIFT_TEST(server_close_reaches_client_with_code_and_reason) {
    harness h;
    CHECK(harness_init(&h));
    h.srv.close_on_handshake = true;
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, NULL, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_client_closed, &app, 5000));
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_PEER_APP);
    CHECK_EQ_U64(app.close.code, 1);
    CHECK_EQ_STR(app.close.reason, "authentication failed");
    CHECK(harness_run(&h, server_closed_one, &h.srv, 5000));
    CHECK(h.srv.last_close.kind == RIFT_QUIC_CLOSE_LOCAL_APP);
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

static void expect_tls_failure(const char *ca_which, const char *name,
                               const char *detail_part) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    rift_quic_settings s;
    harness_client_settings(&h, &s);
    if (ca_which) {
        s.ca_file = ca_which[0] == 'o' ? h.other_ca : h.ca;
    }
    if (name) {
        s.server_name = name;
    }
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, &s, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_client_closed, &app, 5000));
    CHECK(!app.handshake);
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_LOCAL_TRANSPORT);
    CHECK_EQ_INT(app.close.error, RIFT_ERR_TLS);
    /* bad_certificate (42) from the verifying client. */
    CHECK_EQ_U64(app.close.code, RIFT_QUIC_CRYPTO_ERROR + 42);
    CHECK_MSG(strstr(app.close.detail, detail_part) != NULL, "detail: %s",
              app.close.detail);
    harness_spin(&h, 50);
    CHECK_EQ_INT(h.srv.handshakes, 0);
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

RIFT_TEST(wrong_ca_is_refused) {
    expect_tls_failure("other", NULL, "issuer is unknown");
}

RIFT_TEST(wrong_server_name_is_refused) {
    expect_tls_failure(NULL, "other.example", "does not match");
}

RIFT_TEST(ip_server_name_verifies) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    rift_quic_settings s;
    harness_client_settings(&h, &s);
    s.server_name = "127.0.0.1";
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, &s, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_handshake, &app, 5000));
    CHECK(app.handshake);
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

static void expect_alpn_refused(const char *alpn, bool none) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    rift_quic_settings s;
    harness_client_settings(&h, &s);
    s.alpn = alpn;
    s.no_alpn = none;
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, &s, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_client_closed, &app, 5000));
    CHECK(!app.handshake);
    /* The server's no_application_protocol alert (120): 0x178. */
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_PEER_TRANSPORT);
    CHECK_EQ_U64(app.close.code, 0x178);
    CHECK_EQ_INT(app.close.error, RIFT_ERR_TLS);
    CHECK_EQ_INT(h.srv.handshakes, 0);
    rift_quic_endpoint_stats st;
    harness_spin(&h, 20);
    rift_quic_endpoint_get_stats(h.server, &st);
    CHECK_EQ_U64(st.conns_failed, 1);
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

RIFT_TEST(wrong_alpn_is_refused) {
    expect_alpn_refused("h3", false);
}

RIFT_TEST(missing_alpn_is_refused) {
    expect_alpn_refused(NULL, true);
}

RIFT_TEST(retry_then_handshake) {
    harness h;
    CHECK(harness_init(&h));
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.retry = true;
    CHECK(harness_server(&h, &s));
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, NULL, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_handshake, &app, 5000));
    CHECK(app.handshake);
    rift_quic_endpoint_stats st;
    rift_quic_endpoint_get_stats(h.server, &st);
    CHECK_EQ_U64(st.retries_sent, 1);
    /* The connection works after the Retry. */
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    CHECK(cs != NULL);
    rift_quic_chunk ch = {(const uint8_t *)"x", 1, NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, true));
    CHECK(harness_run(&h, streams_closed, &app, 5000));
    CHECK_EQ_MEM(cs->rx, cs->rx_len, "x", 1);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

RIFT_TEST(connection_limit_refuses_at_quic_level) {
    harness h;
    CHECK(harness_init(&h));
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.max_connections = 2;
    CHECK(harness_server(&h, &s));
    cli_app a1 = {0}, a2 = {0}, a3 = {0};
    rift_quic_endpoint *c1 = harness_client(&h, NULL, &a1);
    CHECK(harness_run(&h, cond_handshake, &a1, 5000) && a1.handshake);
    rift_quic_endpoint *c2 = harness_client(&h, NULL, &a2);
    CHECK(harness_run(&h, cond_handshake, &a2, 5000) && a2.handshake);
    rift_quic_endpoint *c3 = harness_client(&h, NULL, &a3);
    CHECK(harness_run(&h, cond_client_closed, &a3, 5000));
    CHECK(!a3.handshake);
    CHECK(a3.close.kind == RIFT_QUIC_CLOSE_PEER_TRANSPORT);
    CHECK_EQ_U64(a3.close.code, RIFT_QUIC_CONNECTION_REFUSED);
    rift_quic_endpoint_stats st;
    rift_quic_endpoint_get_stats(h.server, &st);
    CHECK_EQ_U64(st.conns_refused, 1);
    CHECK_EQ_INT(rift_quic_endpoint_conn_count(h.server), 2);
    /* A permit frees up when a connection ends. */
    rift_quic_conn_close(rift_quic_client_conn(c1), 0, "bye", 3);
    CHECK(harness_run(&h, server_closed_one, &h.srv, 5000));
    cli_app a4 = {0};
    rift_quic_endpoint *c4 = harness_client(&h, NULL, &a4);
    CHECK(harness_run(&h, cond_handshake, &a4, 5000) && a4.handshake);
    rift_quic_endpoint_del(c1);
    rift_quic_endpoint_del(c2);
    rift_quic_endpoint_del(c3);
    rift_quic_endpoint_del(c4);
    harness_fini(&h);
}

RIFT_TEST(idle_timeout_closes_silently) {
    harness h;
    CHECK(harness_init(&h));
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.idle_timeout = 300 * 1000000ULL;
    s.keep_alive = 0;
    CHECK(harness_server(&h, &s));
    rift_quic_settings cs;
    harness_client_settings(&h, &cs);
    cs.idle_timeout = 300 * 1000000ULL;
    cs.keep_alive = 0;
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, &cs, &app);
    CHECK(harness_run(&h, cond_handshake, &app, 5000) && app.handshake);
    rift_tstamp t0 = rift_now_ns();
    CHECK(harness_run(&h, cond_client_closed, &app, 5000));
    rift_tstamp dt = rift_now_ns() - t0;
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_IDLE);
    CHECK_EQ_INT(app.close.error, RIFT_ERR_TIMEOUT);
    /* At least the idle timeout (ngtcp2 may stretch it to 3×PTO). */
    CHECK_MSG(dt >= 250 * 1000000ULL, "closed after %llu ms",
              (unsigned long long)(dt / 1000000));
    CHECK(harness_run(&h, server_closed_one, &h.srv, 5000));
    CHECK(h.srv.last_close.kind == RIFT_QUIC_CLOSE_IDLE);
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

RIFT_TEST(keep_alive_keeps_an_idle_connection) {
    harness h;
    CHECK(harness_init(&h));
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.idle_timeout = 400 * 1000000ULL;
    s.keep_alive = 0;
    CHECK(harness_server(&h, &s));
    rift_quic_settings cs;
    harness_client_settings(&h, &cs);
    cs.idle_timeout = 400 * 1000000ULL;
    cs.keep_alive = 100 * 1000000ULL;
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, &cs, &app);
    CHECK(harness_run(&h, cond_handshake, &app, 5000) && app.handshake);
    harness_spin(&h, 1500);
    CHECK(!app.close.seen);
    CHECK_EQ_INT(h.srv.conns_closed, 0);
    CHECK(rift_quic_conn_is_established(rift_quic_client_conn(cli)));
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

RIFT_TEST(unreachable_server_fails_fast) {
    harness h;
    CHECK(harness_init(&h));
    int port = rift_test_free_udp_port();
    CHECK(port > 0);
    struct sockaddr_in *sa = (struct sockaddr_in *)&h.addr;
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa->sin_port = htons((uint16_t)port);
    h.addrlen = sizeof(*sa);
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, NULL, &app);
    CHECK(cli != NULL);
    CHECK(harness_run(&h, cond_client_closed, &app, 3000));
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_NETWORK);
    CHECK_MSG(strstr(app.close.detail, "refused") != NULL, "detail: %s",
              app.close.detail);
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

RIFT_TEST(silent_server_hits_handshake_timeout) {
    harness h;
    CHECK(harness_init(&h));
    /* A bound socket that never answers. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in *sa = (struct sockaddr_in *)&h.addr;
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa->sin_port = 0;
    CHECK_OK(bind(fd, (struct sockaddr *)sa, sizeof(*sa)));
    h.addrlen = sizeof(*sa);
    CHECK_OK(getsockname(fd, (struct sockaddr *)sa, &h.addrlen));
    rift_quic_settings s;
    harness_client_settings(&h, &s);
    s.handshake_timeout = 300 * 1000000ULL;
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, &s, &app);
    CHECK(harness_run(&h, cond_client_closed, &app, 5000));
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_HANDSHAKE_TIMEOUT);
    CHECK_EQ_INT(app.close.error, RIFT_ERR_TIMEOUT);
    close(fd);
    rift_quic_endpoint_del(cli);
    harness_fini(&h);
}

RIFT_TEST(unknown_version_gets_version_negotiation) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    uint8_t pkt[1200];
    memset(pkt, 0, sizeof(pkt));
    pkt[0] = 0xc0;                /* long header */
    put_u32(pkt + 1, 0x1a2a3a4a); /* a reserved-pattern version */
    pkt[5] = 8;                   /* DCID length */
    memset(pkt + 6, 0x11, 8);     /* DCID */
    pkt[14] = 8;                  /* SCID length */
    memset(pkt + 15, 0x22, 8);    /* SCID */
    CHECK_EQ_INT(
        sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&h.addr, h.addrlen),
        (ssize_t)sizeof(pkt));
    uint8_t in[1500];
    ssize_t n = -1;
    for (int i = 0; i < 200 && n < 0; i++) {
        rift_loop_run_once(h.loop, 5000000);
        n = recv(fd, in, sizeof(in), 0);
    }
    CHECK(n > 7);
    CHECK(in[0] & 0x80);
    CHECK_EQ_U64(get_u32(in + 1), 0); /* version 0 = Version Negotiation */
    close(fd);
    harness_fini(&h);
}

static bool stream_stopped_or_closed(void *arg) {
    cli_app *app = arg;
    return app->close.seen;
}

RIFT_TEST(stateless_reset_after_server_restart) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    cli_app app = {0};
    rift_quic_endpoint *cli = harness_client(&h, NULL, &app);
    CHECK(harness_run(&h, cond_handshake, &app, 5000) && app.handshake);
    /* Crash: the server vanishes without a word, then a new process (same
     * per-process secret) comes back on the same port. */
    rift_quic_endpoint_abort(h.server);
    h.server = NULL;
    CHECK(harness_server(&h, NULL));
    cli_stream *cs = cli_open(&app, rift_quic_client_conn(cli));
    CHECK(cs != NULL);
    rift_quic_chunk ch = {(const uint8_t *)"ping", 4, NULL, NULL};
    CHECK_OK(rift_quic_stream_write(cs->s, &ch, 1, false));
    CHECK(harness_run(&h, stream_stopped_or_closed, &app, 5000));
    CHECK(app.close.kind == RIFT_QUIC_CLOSE_STATELESS_RESET);
    CHECK(cs->closed);
    rift_quic_endpoint_stats st;
    rift_quic_endpoint_get_stats(h.server, &st);
    CHECK(st.resets_sent >= 1);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

static bool run_client_on(harness *h, const char *name) {
    cli_app app = {0};
    rift_quic_settings s;
    harness_client_settings(h, &s);
    s.server_name = name;
    rift_quic_endpoint *cli = harness_client(h, &s, &app);
    if (cli == NULL) {
        return false;
    }
    bool ok = harness_run(h, cond_handshake, &app, 5000) && app.handshake;
    cli_stream *cs = ok ? cli_open(&app, rift_quic_client_conn(cli)) : NULL;
    if (cs != NULL) {
        rift_quic_chunk ch = {(const uint8_t *)"v", 1, NULL, NULL};
        ok = rift_quic_stream_write(cs->s, &ch, 1, true) == 0 &&
             harness_run(h, streams_closed, &app, 5000) && cs->rx_len == 1;
    }
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    return ok;
}

RIFT_TEST(wildcard_bind_answers_from_the_right_address) {
    harness h;
    CHECK(harness_init(&h));
    /* 0.0.0.0: replies carry the destination address via IP_PKTINFO. */
    struct sockaddr_in *sa = (struct sockaddr_in *)&h.addr;
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_ANY);
    h.addrlen = sizeof(*sa);
    CHECK(harness_server(&h, NULL));
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(run_client_on(&h, "localhost"));
    harness_fini(&h);
}

RIFT_TEST(ipv6_loopback) {
    harness h;
    CHECK(harness_init(&h));
    struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&h.addr;
    memset(sa, 0, sizeof(*sa));
    sa->sin6_family = AF_INET6;
    sa->sin6_addr = in6addr_loopback;
    h.addrlen = sizeof(*sa);
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.cert_file = h.cert;
    s.key_file = h.key;
    rift_error err;
    if (rift_quic_server_new(&h.server, h.loop, (struct sockaddr *)sa,
                             sizeof(*sa), &s, &harness_server_cbs, &h.srv,
                             &err) != 0) {
        harness_fini(&h);
        SKIP("no IPv6 loopback here (%s)", err.text);
    }
    rift_quic_endpoint_local_addr(h.server, &h.addr, &h.addrlen);
    CHECK(run_client_on(&h, "::1"));
    harness_fini(&h);
}
