/*
 * test_server_limits.c — resource limits and deadlines of the protocol
 * server over real QUIC (docs/protocol-v1.md §2.6, §2.7, §2.9): stream
 * permits (RESET/STOP code 2), the connection limit, the first-frame,
 * partial-frame and blocked-write deadlines, slow network subscribers,
 * and cancellation of subscriptions by STOP_SENDING (with or without the
 * client's own half reset).
 */
// labels: threads
#include "rawcli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool closed(void *arg) {
    return ((rawcli *)arg)->close.seen;
}

static bool credit_back(void *arg) {
    return rift_quic_conn_streams_left(((rawcli *)arg)->conn) > 0;
}

static bool two_streams(void *arg) {
    return rift_quic_conn_streams_left(((rawcli *)arg)->conn) >= 2;
}

static bool got_reset(void *arg) {
    return ((rc_stream *)arg)->reset;
}

static bool got_closed(void *arg) {
    return ((rc_stream *)arg)->closed;
}

RIFT_TEST(stream_permits_exhausted) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.max_streams_per_connection = 2;
    CHECK(fix_start(&f));
    rawcli *r = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(r && c);
    rc_stream *idle = rc_open(r);
    CHECK(rc_subscribe(idle, "game.idle", NULL));
    /* Two requests nobody answers hold both permits for 10 s. */
    uint8_t buf[256];
    size_t n = rc_build_request(buf, 10000, "game.idle", NULL, 0);
    /* The auth stream's credit may still be on its way back. */
    CHECK(rc_run(c, two_streams, c, 5000));
    rc_stream *q1 = rc_open(c);
    rc_stream *q2 = rc_open(c);
    CHECK(q1 && q2);
    CHECK(rc_send(q1, buf, n, true));
    CHECK(rc_send(q2, buf, n, true));
    CHECK(fix_wait_subs(&f, 3, 5000)); /* two inboxes */
    /* The client gives up on q1: the QUIC stream closes and its credit
     * comes back, but the server's operation still holds the permit (as
     * the original's task does until its timeout). */
    rc_stop(q1, 0);
    CHECK(rc_run(c, credit_back, c, 5000));
    rc_stream *q3 = rc_open(c);
    CHECK_MSG(q3 != NULL, "no QUIC stream credit came back");
    CHECK(rc_send(q3, "\0\0\0\1\10", 5, false));
    CHECK(rc_run(c, got_reset, q3, 5000));
    CHECK_EQ_U64(q3->reset_code, 2);
    /* With STOP_SENDING(2) on its other half, the stream is gone. */
    CHECK(rc_run(c, got_closed, q3, 5000));
    CHECK_EQ_INT(q3->rx_len, 0);
    rc_free(c);
    rc_free(r);
    fix_fini(&f);
}

RIFT_TEST(connection_limit) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.max_connections = 2;
    CHECK(fix_start(&f));
    rawcli *a = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    rawcli *b = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(a && b);
    rawcli *c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, false);
    CHECK(c != NULL);
    rc_run(c, closed, c, 5000);
    CHECK(c->close.seen);
    CHECK(!c->handshake);
    CHECK_EQ_U64(c->close.code, RIFT_QUIC_CONNECTION_REFUSED);
    rc_free(c);
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.connections, 2);
    CHECK_EQ_U64(st.authenticated, 1);
    CHECK(st.connections_refused >= 1);
    rift_server_stats_free(&st);
    /* A freed slot admits the next one. */
    rc_free(b);
    rift_tstamp end = rift_now_ns() + 5000000000ull;
    rawcli *d = NULL;
    while (d == NULL && rift_now_ns() < end) {
        d = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "other_plugin");
    }
    CHECK(d != NULL);
    rc_free(d);
    rc_free(a);
    fix_fini(&f);
}

RIFT_TEST(first_frame_deadline) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.handshake_timeout_ms = 300;
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    rc_stream *s = rc_open(c);
    /* Only part of the first frame. */
    CHECK(rc_send(s, "\0\0\0\1", 4, false));
    rift_tstamp t0 = rift_now_ns();
    CHECK(rc_expect_error(s, 2, "QUIC operation timed out", 5000));
    CHECK(rift_now_ns() - t0 >= 250000000ull);
    CHECK(rc_expect_end(s, 5000));
    /* One byte, then nothing. */
    rc_stream *e = rc_open(c);
    CHECK(rc_send(e, "\0", 1, false));
    CHECK(rc_expect_error(e, 2, "QUIC operation timed out", 5000));
    /* After the first frame, idle publishers stay open. */
    rc_stream *p = rc_open(c);
    CHECK(rc_ping(p));
    rc_spin(c, 600);
    CHECK(rc_ping(p));
    rc_free(c);
    fix_fini(&f);
}

RIFT_TEST(partial_frame_deadline) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.io_timeout_ms = 300;
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    rc_stream *p = rc_open(c);
    CHECK(rc_ping(p));
    rc_spin(c, 400); /* idle between frames: no deadline */
    CHECK(rc_ping(p));
    CHECK(rc_send(p, "\0\0", 2, false));
    rift_tstamp t0 = rift_now_ns();
    CHECK(rc_expect_error(p, 2, "QUIC operation timed out", 5000));
    CHECK(rift_now_ns() - t0 >= 250000000ull);
    CHECK(rc_expect_end(p, 5000));
    rc_free(c);
    fix_fini(&f);
}

/* Publishes |n| payloads of |size| bytes with one PING at the end. */
static bool flood(rc_stream *p, const char *subject, size_t n, size_t size) {
    uint8_t *pl = calloc(1, size);
    uint8_t *buf = malloc(size + 64);
    for (size_t i = 0; i < n; i++) {
        pl[0] = (uint8_t)i;
        pl[1] = (uint8_t)(i >> 8);
        size_t k = rc_build_msg(buf, 4, subject, NULL, pl, size);
        if (!rc_send(p, buf, k, false)) {
            free(pl);
            free(buf);
            return false;
        }
    }
    free(pl);
    free(buf);
    return rc_ping(p);
}

RIFT_TEST(slow_network_subscriber_is_disconnected) {
    srvfix f;
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    bs.subscription_capacity = 16;
    CHECK(fix_init(&f, &bs));
    CHECK(fix_start(&f));
    rawcli *slow = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    rawcli *fast = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "other_plugin");
    rawcli *pub = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    CHECK(slow && fast && pub);
    rc_stream *ss = rc_open(slow);
    CHECK(rc_subscribe(ss, "game.flood", NULL));
    rc_pause(ss); /* reads nothing from now on */
    rc_stream *fs = rc_open(fast);
    CHECK(rc_subscribe(fs, "game.flood", NULL));
    rc_stream *ps = rc_open(pub);
    enum {
        N = 400,
        SIZE = 16384,
        ROUND = 10
    };
    /* The publisher is never held up, and the fast subscriber, which
     * keeps up (the test reads each round before the next), gets all. */
    for (int r = 0; r < N / ROUND; r++) {
        CHECK(flood(ps, "game.flood", ROUND, SIZE));
        for (int i = 0; i < ROUND; i++) {
            rc_msg m;
            CHECK(rc_expect_msg(fs, &m, 10000));
            CHECK_EQ_INT(m.payload_len, SIZE);
            CHECK_EQ_INT(m.payload[0], i);
        }
    }
    /* The slow one's queue overflowed; once it reads again it finds what
     * was in flight, then the slow-consumer ERROR. */
    rc_resume(ss);
    int got = 0;
    for (;;) {
        size_t len;
        const uint8_t *b = rc_frame(ss, 10000, &len);
        CHECK(b != NULL);
        if (b[0] == 7) {
            got++;
            continue;
        }
        CHECK_EQ_INT(b[0], 3);
        static const char want[] =
            "\0\2\0\x3asubscriber exceeded its bounded queue and was "
            "disconnected";
        CHECK_EQ_MEM(b + 1, len - 1, want, sizeof(want) - 1);
        break;
    }
    CHECK(got < N);
    CHECK(rc_expect_end(ss, 5000));
    CHECK(fix_wait_subs(&f, 1, 2000));
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.slow_consumers, 1);
    rift_server_stats_free(&st);
    /* The publisher and the fast subscriber carry on. */
    CHECK(rc_publish(ps, "game.flood", "z", 1, true));
    rc_msg m;
    CHECK(rc_expect_msg(fs, &m, 5000));
    rc_free(slow);
    rc_free(fast);
    rc_free(pub);
    fix_fini(&f);
}

RIFT_TEST(blocked_write_deadline) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.io_timeout_ms = 1000;
    CHECK(fix_start(&f));
    /* A subscriber with a small receive window, so little data blocks
     * it. */
    rawcli *sub =
        rc_login_window(f.loop, &f.addr, f.addrlen, f.ca, "plugin", 65536);
    rawcli *pub = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    CHECK(sub && pub);
    rc_stream *ss = rc_open(sub);
    CHECK(rc_subscribe(ss, "game.block", NULL));
    rc_pause(ss);
    rc_stream *ps = rc_open(pub);
    enum {
        N = 64
    };
    CHECK(flood(ps, "game.block", N, 16384));
    /* The blocked write fails after io_timeout and the subscription goes. */
    rift_tstamp t0 = rift_now_ns();
    CHECK(fix_wait_subs(&f, 0, 10000));
    CHECK(rift_now_ns() - t0 >= 500000000ull);
    rc_resume(ss);
    int got = 0;
    for (;;) {
        size_t len;
        const uint8_t *b = rc_frame(ss, 10000, &len);
        CHECK(b != NULL);
        if (b[0] == 7) {
            got++;
            continue;
        }
        CHECK_EQ_MEM(b, len, "\3\0\2\0\x18QUIC operation timed out", 29);
        break;
    }
    CHECK_MSG(got > 0 && got <= N, "got %d", got);
    CHECK(rc_expect_end(ss, 5000));
    rc_free(sub);
    rc_free(pub);
    fix_fini(&f);
}

RIFT_TEST(stop_sending_unsubscribes_promptly) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    rc_stream *s = rc_open(c);
    CHECK(rc_subscribe(s, "game.x", NULL));
    CHECK(fix_wait_subs(&f, 1, 2000));
    /* What the Rust client's drop does: STOP_SENDING(0) + RESET(0). */
    rc_stop(s, 0);
    rc_reset(s, 0);
    rift_tstamp t0 = rift_now_ns();
    CHECK(fix_wait_subs(&f, 0, 2000));
    CHECK(rift_now_ns() - t0 < 1000000000ull);
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.subscriptions, 0);
    CHECK_EQ_U64(st.streams, 0);
    rift_server_stats_free(&st);

    /* The connection and its other streams carry on. */
    rc_stream *p = rc_open(c);
    CHECK(rc_publish(p, "game.x", "1", 1, true));
    CHECK(rc_ping(p));
    rc_free(c);
    fix_fini(&f);
}

RIFT_TEST(stop_sending_alone_cancels_at_once) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    rc_stream *s = rc_open(c);
    CHECK(rc_subscribe(s, "game.y", NULL));
    CHECK(fix_wait_subs(&f, 1, 2000));
    /* STOP_SENDING with our own half left open (§2.9 SUBSCRIBE 6), and no
     * traffic on the subject: the server's transport answers with
     * RESET_STREAM, and by then the subscription must be gone. */
    rc_stop(s, 0);
    CHECK(rc_run(c, got_reset, s, 5000));
    rc_stream *r = rc_open(c);
    uint8_t buf[128];
    size_t n = rc_build_request(buf, 5000, "game.y", "q", 1);
    CHECK(rc_send(r, buf, n, true));
    /* Not "request timed out" 5 s later: nobody subscribes any more. */
    CHECK(rc_expect_error(r, 2, "no responders available", 3000));
    CHECK(fix_wait_subs(&f, 0, 2000));
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.subscriptions, 0);
    rift_server_stats_free(&st);
    /* The connection carries on. */
    rc_stream *p = rc_open(c);
    CHECK(rc_ping(p));
    rc_free(c);
    fix_fini(&f);
}

RIFT_TEST(connection_loss_drops_subscriptions) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    for (int i = 0; i < 5; i++) {
        rc_stream *s = rc_open(c);
        CHECK(rc_subscribe(s, "game.>", i % 2 ? "g" : NULL));
    }
    CHECK(fix_wait_subs(&f, 5, 2000));
    rc_free(c); /* close 0 "client closed" */
    CHECK(fix_wait_subs(&f, 0, 2000));
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.connections, 0);
    CHECK_EQ_U64(st.identities[0].connections, 0);
    rift_server_stats_free(&st);
    fix_fini(&f);
}

/* ---- What a client that never reads can pin ---- */

/* rss_kib, queued_reached, CONN_BUDGET, OVERSHOOT: support/rawcli.h. */

RIFT_TEST(paused_subscriptions_pin_a_bounded_amount) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.io_timeout_ms = 2000;
    CHECK(fix_start(&f));
    /* 120 subscriptions on one connection with 16 KiB stream windows,
     * none of them read. */
    rawcli *sub =
        rc_login_window(f.loop, &f.addr, f.addrlen, f.ca, "plugin", 16384);
    rawcli *pub = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    CHECK(sub && pub);
    enum {
        SUBS = 120,
        MSGS = 9500,
        SIZE = 100
    };
    for (int i = 0; i < SUBS; i++) {
        rc_stream *s = rc_open(sub);
        CHECK(s != NULL);
        CHECK(rc_subscribe(s, "game.pin", NULL));
        rc_pause(s);
    }
    CHECK(fix_wait_subs(&f, SUBS, 5000));
    uint64_t rss0 = rss_kib();
    rc_stream *ps = rc_open(pub);
    CHECK(flood(ps, "game.pin", MSGS, SIZE));
    /* Each stream could take 1 MiB (about 8,700 of these MESSAGE frames):
     * 120 MiB. The connection stops at its budget. */
    queued_wait w = {&f, CONN_BUDGET - 1048576u};
    CHECK(rc_run(sub, queued_reached, &w, 10000));
    uint64_t rss1 = rss_kib();
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    uint64_t peak = st.conn_queued_peak;
    rift_server_stats_free(&st);
    fprintf(stderr, "  queued peak %llu bytes, RSS %llu -> %llu KiB\n",
            (unsigned long long)peak, (unsigned long long)rss0,
            (unsigned long long)rss1);
    CHECK_MSG(peak <= CONN_BUDGET + OVERSHOOT, "peak %llu",
              (unsigned long long)peak);
    /* Generous: the transport's blocks, ngtcp2 and the allocator add to
     * the 8.5 MiB; the unbounded server grew by 138 MiB here. */
    CHECK_MSG(!RSS_MEANINGFUL || rss1 < rss0 + 48 * 1024,
              "RSS %llu -> %llu KiB", (unsigned long long)rss0,
              (unsigned long long)rss1);
    /* The client stays silent past io_timeout: every subscription goes
     * (blocked write or kept waiting) and what it pinned is released. */
    CHECK(fix_wait_subs(&f, 0, 20000));
    w.at_least = 0;
    CHECK(rc_run(sub, queued_reached, &w, 20000));
    /* The publisher's connection carries on. */
    CHECK(rc_ping(ps));
    rc_free(sub);
    rc_free(pub);
    fix_fini(&f);
}
