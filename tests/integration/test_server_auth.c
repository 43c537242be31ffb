/*
 * test_server_auth.c — connection setup and authentication of the protocol
 * server over real QUIC (docs/protocol-v1.md §2.6): a known token, an
 * unknown one, every malformed first frame, the deadline, streams opened
 * before authentication, validation of the settings (§3.7) and the
 * shutdown close.
 */
// labels: threads
#include "rawcli.h"

#include <pthread.h>
#include <stdlib.h>

static bool closed(void *arg) {
    return ((rawcli *)arg)->close.seen;
}

/* Expects the server to close the connection with code 1 "authentication
 * failed". */
static bool expect_auth_close(rawcli *c) {
    rc_run(c, closed, c, 5000);
    if (!c->close.seen || c->close.kind != RIFT_QUIC_CLOSE_PEER_APP ||
        c->close.code != 1 ||
        strcmp(c->close.reason, "authentication failed") != 0) {
        fprintf(stderr, "close: seen %d kind %d code %llu reason \"%s\" (%s)\n",
                c->close.seen, c->close.kind, (unsigned long long)c->close.code,
                c->close.reason, c->close.detail);
        return false;
    }
    return true;
}

RIFT_TEST(auth_ok_then_operations) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(c != NULL);
    rc_stream *a = rc_open(c);
    uint8_t buf[256];
    size_t n = rc_build_auth(buf, RC_TOKEN("plugin"));
    CHECK(rc_send(a, buf, n, true));
    CHECK(rc_expect_ok(a, 5000));
    /* OK and FIN, nothing else. */
    CHECK(rc_expect_end(a, 5000));
    CHECK(a->fin);
    rc_stream *p = rc_open(c);
    CHECK(rc_ping(p));

    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.connections, 1);
    CHECK_EQ_U64(st.authenticated, 1);
    CHECK_EQ_U64(st.streams, 1);
    CHECK_EQ_INT(st.identity_count, 5);
    CHECK_EQ_STR(st.identities[0].name, "plugin");
    CHECK_EQ_U64(st.identities[0].connections, 1);
    CHECK_EQ_U64(st.identities[1].connections, 0);
    rift_server_stats_free(&st);
    rc_free(c);
    fix_fini(&f);
}

RIFT_TEST(unknown_token_closes_with_code_1) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(c != NULL);
    rc_stream *a = rc_open(c);
    uint8_t buf[256];
    size_t n = rc_build_auth(buf, "not-a-token-of-anybody-0123456789abcdef");
    CHECK(rc_send(a, buf, n, true));
    /* The ERROR frame usually gets through before the close (the server
     * waits for its ACK); the close is what counts. */
    size_t len;
    const uint8_t *b = rc_frame(a, 5000, &len);
    if (b != NULL) {
        CHECK_EQ_INT(b[0], 3);
        CHECK_EQ_MEM(b + 1, len - 1, "\0\1\0\25authentication failed", 25);
    }
    CHECK(expect_auth_close(c));
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.auth_failures, 1);
    CHECK_EQ_U64(st.authenticated, 0);
    rift_server_stats_free(&st);
    rc_free(c);
    fix_fini(&f);
}

/* Sends |bytes| as the first stream's data and expects the close without
 * an ERROR frame. */
static bool bad_first_frame(srvfix *f, const uint8_t *bytes, size_t len,
                            bool fin) {
    rawcli *c = rc_connect(f->loop, &f->addr, f->addrlen, f->ca, true);
    if (c == NULL) {
        return false;
    }
    rc_stream *a = rc_open(c);
    bool ok = rc_send(a, bytes, len, fin) && expect_auth_close(c);
    if (ok && a->rx_len != 0) {
        fprintf(stderr, "the server answered %zu bytes\n", a->rx_len);
        ok = false;
    }
    rc_free(c);
    return ok;
}

RIFT_TEST(malformed_auth_frames_close_without_error) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    uint8_t buf[8192];
    /* PING first. */
    CHECK(bad_first_frame(&f, (const uint8_t *)"\0\0\0\1\10", 5, false));
    /* AUTH with a trailing byte after the token. */
    size_t n = rc_build_auth(buf, RC_TOKEN("plugin"));
    buf[3]++;
    buf[n++] = 'x';
    CHECK(bad_first_frame(&f, buf, n, true));
    /* A token string longer than the frame. */
    CHECK(bad_first_frame(&f, (const uint8_t *)"\0\0\0\3\1\0\11", 7, true));
    /* Oversized: 4,100 > 4,099. */
    memset(buf, 'a', sizeof(buf));
    buf[0] = 0;
    buf[1] = 0;
    buf[2] = 0x10;
    buf[3] = 0x04;
    CHECK(bad_first_frame(&f, buf, 64, false));
    /* Zero length. */
    CHECK(bad_first_frame(&f, (const uint8_t *)"\0\0\0\0", 4, false));
    /* The stream ends inside the frame. */
    n = rc_build_auth(buf, RC_TOKEN("plugin"));
    CHECK(bad_first_frame(&f, buf, n - 3, true));
    /* Invalid UTF-8 token. */
    CHECK(bad_first_frame(&f, (const uint8_t *)"\0\0\0\4\1\0\1\xff", 8, true));
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.auth_failures, 7);
    rift_server_stats_free(&st);
    fix_fini(&f);
}

RIFT_TEST(auth_deadline) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.handshake_timeout_ms = 300;
    CHECK(fix_start(&f));
    rawcli *c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(c != NULL);
    rift_tstamp t0 = rift_now_ns();
    /* Nothing at all. */
    CHECK(expect_auth_close(c));
    rift_tstamp waited = rift_now_ns() - t0;
    CHECK_MSG(waited >= 250000000ull && waited < 3000000000ull,
              "closed after %llu ms", (unsigned long long)(waited / 1000000));
    rc_free(c);

    /* A partial AUTH frame that never completes. */
    c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(c != NULL);
    rc_stream *a = rc_open(c);
    CHECK(rc_send(a, "\0\0\0\20\1", 5, false));
    CHECK(expect_auth_close(c));
    rc_free(c);
    fix_fini(&f);
}

RIFT_TEST(streams_opened_before_auth_are_held) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(c != NULL);
    rc_stream *a = rc_open(c); /* stream 0: nothing yet */
    rc_stream *p = rc_open(c); /* stream 4: a PING before AUTH */
    CHECK(rc_send(p, "\0\0\0\1\10", 5, false));
    rc_spin(c, 50);
    CHECK_EQ_INT(p->rx_len, 0);
    uint8_t buf[256];
    size_t n = rc_build_auth(buf, RC_TOKEN("plugin"));
    CHECK(rc_send(a, buf, n, true));
    CHECK(rc_expect_ok(a, 5000));
    CHECK(rc_expect_ok(p, 5000));
    CHECK(rc_ping(p));
    rc_free(c);
    fix_fini(&f);
}

static void *stop_thread(void *srv) {
    rift_server_stop(srv);
    return NULL;
}

RIFT_TEST(shutdown_closes_with_code_0) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    rc_stream *s = rc_open(c);
    CHECK(rc_subscribe(s, "game.>", NULL));
    CHECK(fix_wait_subs(&f, 1, 2000));
    /* The stop runs on another thread while this one drives the client. */
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, stop_thread, f.srv));
    rc_run(c, closed, c, 5000);
    pthread_join(t, NULL);
    CHECK(c->close.seen);
    CHECK_EQ_INT(c->close.kind, RIFT_QUIC_CLOSE_PEER_APP);
    CHECK_EQ_U64(c->close.code, 0);
    CHECK_EQ_STR(c->close.reason, "server shutdown");
    CHECK_EQ_INT(rift_broker_subscription_count(f.broker), 0);
    CHECK(!rift_server_is_running(f.srv));
    rc_free(c);

    /* A stopped server can be started again. */
    rift_error err;
    CHECK_OK(rift_server_start(f.srv, "127.0.0.1:0", &err));
    CHECK_OK(rift_server_local_addr(f.srv, &f.addr, &f.addrlen, NULL));
    c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "admin");
    CHECK(c != NULL);
    rc_free(c);
    fix_fini(&f);
}

RIFT_TEST(settings_validation) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_server_settings s;
    rift_server_settings_default(&s);
    s.cert_file = "/nonexistent/cert.pem";
    s.key_file = "/nonexistent/key.pem";
    rift_server *srv = NULL;
    rift_error err;

    s.max_connections = 0;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "invalid QUIC resource limits");
    s.max_connections = 1;
    s.max_streams_per_connection = 65536;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "invalid QUIC resource limits");
    s.max_streams_per_connection = 65535;
    s.io_timeout_ms = 0;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "invalid QUIC resource limits");
    s.io_timeout_ms = 1;

    const char *pubs[] = {"a..b"};
    rift_server_identity ids[2] = {
        {.name = "a", .name_len = 1, .token = "t1", .token_len = 2},
        {.name = "b", .name_len = 1, .token = "t1", .token_len = 2},
    };
    s.identities = ids;
    s.identity_count = 2;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text,
                 "identity names and tokens must be nonempty and unique");
    ids[1].token = "t2";
    ids[1].name = "a b";
    ids[1].name_len = 3;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text,
                 "identity names and tokens must be nonempty and unique");
    ids[1].name = "b";
    ids[1].name_len = 1;
    ids[1].publish = pubs;
    ids[1].publish_count = 1;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "invalid subject pattern");
    ids[1].publish_count = 0;

    rift_server_stream streams[2] = {
        {.name = "jobs", .name_len = 4, .stream = (rift_stream *)b},
        {.name = "bad/name", .name_len = 8, .stream = (rift_stream *)b},
    };
    s.streams = streams;
    s.stream_count = 2;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "invalid stream name");
    streams[1].name = "jobs";
    streams[1].name_len = 4;
    CHECK_EQ_INT(rift_server_new(&srv, b, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "invalid stream name");
    s.stream_count = 1;

    /* Valid settings; the TLS files are read by start. */
    CHECK_OK(rift_server_new(&srv, b, &s, &err));
    CHECK_EQ_INT(rift_server_start(srv, "127.0.0.1:0", &err), RIFT_ERR_TLS);
    CHECK_EQ_INT(rift_server_start(srv, "localhost:1", &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK(!rift_server_is_running(srv));
    char addr[64];
    rift_error aerr = {0};
    CHECK_EQ_INT(rift_server_address(srv, addr, sizeof(addr), &aerr),
                 RIFT_ERR_CLOSED);
    CHECK_EQ_STR(aerr.text, "server is not running");
    rift_server_del(srv);
    rift_broker_del(b);
}
