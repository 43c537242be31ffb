/*
 * test_quic_ack_hold.c — the ACK of a lone request packet and its answer
 * (tests, quic layer): an application that answers after the 2 ms ACK
 * hold but said so (rift_quic_conn_answer_later, as the server does for a
 * synced publish waiting for its fdatasync) sends one packet, the answer
 * carrying the ACK; one that did not say so sends a bare ACK first.
 */
#include "quic_harness.h"

static bool got_request(void *arg) {
    return ((srv_app *)arg)->later != NULL;
}

static bool stream_closed(void *arg) {
    cli_stream *cs = arg;
    return cs->closed || cs->app->close.seen;
}

/* One request and its answer |delay_ms| after the request arrived.
 * Returns the datagrams the server sent from the request to the moment
 * the client had the whole answer, or -1 on failure. */
static long round_trip(harness *h, cli_app *app, rift_quic_endpoint *cli,
                       int delay_ms) {
    h->srv.later = NULL;
    rift_quic_endpoint_stats st;
    rift_quic_endpoint_get_stats(h->server, &st);
    uint64_t before = st.tx_datagrams;
    cli_stream *cs = cli_open(app, rift_quic_client_conn(cli));
    if (cs == NULL) {
        return -1;
    }
    rift_quic_chunk req = {(const uint8_t *)"?", 1, NULL, NULL};
    if (rift_quic_stream_write(cs->s, &req, 1, true) != 0 ||
        !harness_run(h, got_request, &h->srv, 5000)) {
        return -1;
    }
    harness_spin(h, delay_ms);
    rift_quic_chunk ans = {(const uint8_t *)"!", 1, NULL, NULL};
    if (rift_quic_stream_write(h->srv.later, &ans, 1, true) != 0 ||
        !harness_run(h, stream_closed, cs, 5000) || !cs->closed) {
        return -1;
    }
    rift_quic_endpoint_get_stats(h->server, &st);
    return (long)(st.tx_datagrams - before);
}

/* Server with a 2 ms ACK hold and a 20 ms answer hold (the margins keep
 * the test steady on a loaded machine); a connected client with one
 * round trip done and path MTU discovery over. */
static bool setup(harness *h, cli_app *app, rift_quic_endpoint **cli,
                  bool answer_later) {
    rift_quic_settings s;
    rift_quic_settings_default(&s);
    s.ack_hold = 2000000;
    s.answer_hold = 20000000;
    if (!harness_init(h)) {
        return false;
    }
    h->srv.mode = SRV_LATER;
    h->srv.answer_later = answer_later;
    if (!harness_server(h, &s)) {
        return false;
    }
    *cli = harness_client(h, NULL, app);
    if (*cli == NULL || !harness_run(h, cond_handshake, app, 5000) ||
        !app->handshake) {
        return false;
    }
    if (round_trip(h, app, *cli, 0) < 0) {
        return false;
    }
    harness_spin(h, 200);
    return true;
}

RIFT_TEST(answer_later_lets_the_late_answer_carry_the_ack) {
    harness h;
    cli_app app = {0};
    rift_quic_endpoint *cli = NULL;
    CHECK(setup(&h, &app, &cli, true));
    /* 4 ms: past the ACK hold, well within the answer hold. A stall of
     * the test thread longer than the answer hold would let the bare ACK
     * go first, so a loaded machine gets three tries. */
    long sent = -1;
    for (int i = 0; i < 3 && sent != 1; i++) {
        sent = round_trip(&h, &app, cli, 4);
        CHECK(sent >= 1);
    }
    CHECK_EQ_INT(sent, 1);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}

RIFT_TEST(without_answer_later_a_bare_ack_goes_first) {
    harness h;
    cli_app app = {0};
    rift_quic_endpoint *cli = NULL;
    CHECK(setup(&h, &app, &cli, false));
    CHECK_EQ_INT(round_trip(&h, &app, cli, 10), 2);
    rift_quic_endpoint_del(cli);
    cli_app_free(&app);
    harness_fini(&h);
}
