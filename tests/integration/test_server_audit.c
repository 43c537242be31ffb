/*
 * test_server_audit.c — wire behaviours of the protocol server that the
 * audit against docs/protocol-v1.md found without a test of their own
 * (integration tests over real QUIC): STOP_SENDING(0) after an ERROR and
 * after a one-shot answer (§2.7, §9), a SUBSCRIBE converting a publisher
 * stream (§2.8), a successful one-shot operation ending a publisher stream
 * with later frames ignored, REQUEST's validation order down to the
 * payload (§2.9), the 1,024-byte UTF-8 cut of an ERROR text as it leaves
 * the server (§2.5), and the transport profile the server and the C client
 * actually advertise (§2.1).
 */
// labels: threads
#include "quic/internal.h"
#include "quic_harness.h"
#include "rawcli.h"
#include "store_testutil.h"

#include "rift/client.h"
#include "rift/stream.h"

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* ---- Frames ---- */

static size_t put_str(uint8_t *p, const char *s) {
    size_t n = strlen(s);
    p[0] = (uint8_t)(n >> 8);
    p[1] = (uint8_t)n;
    memcpy(p + 2, s, n);
    return 2 + n;
}

static void put_len(uint8_t *buf, size_t n) {
    size_t body = n - 4;
    buf[0] = (uint8_t)(body >> 24);
    buf[1] = (uint8_t)(body >> 16);
    buf[2] = (uint8_t)(body >> 8);
    buf[3] = (uint8_t)body;
}

/* STREAM_PUBLISH of |payload| to |stream|. */
static size_t b_stream_publish(uint8_t *buf, const char *stream,
                               const char *subject, const char *payload) {
    size_t n = 4;
    buf[n++] = 10;
    n += put_str(buf + n, stream);
    n += put_str(buf + n, subject);
    n += put_str(buf + n, "");
    memcpy(buf + n, payload, strlen(payload));
    n += strlen(payload);
    put_len(buf, n);
    return n;
}

/* A REQUEST frame with |plen| zero bytes of payload (|buf| big enough). */
static size_t b_request_zeros(uint8_t *buf, uint32_t timeout,
                              const char *subject, size_t plen) {
    size_t n = rc_build_request(buf, timeout, subject, NULL, 0);
    memset(buf + n, 0, plen);
    n += plen;
    put_len(buf, n);
    return n;
}

static bool stream_closed(void *arg) {
    return ((rc_stream *)arg)->closed;
}

/* The server's side ended with FIN (no reset), and the QUIC stream closed
 * with application code 0: the STOP_SENDING(0) the server sent on its
 * receive half made our transport reset our open send half with that
 * code, the only way the stream can close while we never finished it. */
static bool fin_and_stop_0(rc_stream *s) {
    rc_run(s->cli, stream_closed, s, 5000);
    if (!s->fin || s->reset || !s->closed || !s->code_set ||
        s->close_code != 0) {
        fprintf(stderr,
                "fin %d reset %d (code %llu) closed %d code_set %d code "
                "%llu\n",
                s->fin, s->reset, (unsigned long long)s->reset_code, s->closed,
                s->code_set, (unsigned long long)s->close_code);
        return false;
    }
    return true;
}

/* A server with one memory stream "events" (subjects >). */
typedef struct afix {
    srvfix f;
    rift_stream *events;
    rift_server_stream list[1];
} afix;

static bool afix_up(afix *a, const rift_broker_settings *bs) {
    if (!fix_init(&a->f, bs) || rift_stream_new(&a->events, NULL, NULL) != 0) {
        return false;
    }
    a->list[0] = (rift_server_stream){"events", 6, a->events};
    a->f.settings.streams = a->list;
    a->f.settings.stream_count = 1;
    return fix_start(&a->f);
}

static void afix_down(afix *a) {
    rift_server_del(a->f.srv);
    a->f.srv = NULL;
    rift_stream_del(a->events);
    fix_fini(&a->f);
}

/* ---- §2.7 / §9: ERROR, then FIN and STOP_SENDING(0) ---- */

RIFT_TEST(error_then_fin_and_stop_sending_0) {
    afix a;
    CHECK(afix_up(&a, NULL));
    rawcli *c = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "plugin");
    CHECK(c != NULL);
    /* A malformed frame on a stream we keep open for writing. */
    rc_stream *s = rc_open(c);
    CHECK(rc_send(s, "\0\0\0\1\xff", 5, false));
    CHECK(rc_expect_error(s, 2, "unknown opcode", 5000));
    CHECK(fin_and_stop_0(s));
    /* A permission error after a valid frame on a publisher stream. */
    s = rc_open(c);
    CHECK(rc_publish(s, "game.a", "x", 1, true));
    uint8_t buf[512];
    size_t n = rc_build_msg(buf, 4, "rift.events.x", NULL, "x", 1);
    CHECK(rc_send(s, buf, n, false));
    CHECK(rc_expect_error(s, 1, "publication not permitted", 5000));
    CHECK(fin_and_stop_0(s));
    /* Normal completion of a one-shot operation ends the same way. */
    s = rc_open(c);
    n = b_stream_publish(buf, "events", "game.stored", "x");
    CHECK(rc_send(s, buf, n, false));
    size_t len;
    const uint8_t *b = rc_frame(s, 5000, &len);
    CHECK(b != NULL && b[0] == 11 && len == 17);
    CHECK(fin_and_stop_0(s));
    /* The connection carries on. */
    s = rc_open(c);
    CHECK(rc_ping(s));
    rc_free(c);
    afix_down(&a);
}

/* ---- §2.8: a publisher stream turned into a delivery stream ---- */

RIFT_TEST(subscribe_converts_a_publisher_stream) {
    afix a;
    CHECK(afix_up(&a, NULL));
    rawcli *c = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "plugin");
    CHECK(c != NULL);
    rc_stream *p = rc_open(c);
    CHECK(rc_publish(p, "game.before", "x", 1, true));
    CHECK(rc_ping(p));
    CHECK(rc_subscribe(p, "game.conv", NULL));
    rc_stream *q = rc_open(c);
    CHECK(rc_publish(q, "game.conv", "m1", 2, true));
    rc_msg m;
    CHECK(rc_expect_msg(p, &m, 5000));
    CHECK_EQ_MEM(m.payload, m.payload_len, "m1", 2);
    /* The server never reads the stream again: a PING gets no OK and
     * even garbage draws no ERROR; deliveries go on. */
    CHECK(rc_send(p, "\0\0\0\1\10\0\0\0\0", 9, false));
    CHECK(rc_publish(q, "game.conv", "m2", 2, true));
    CHECK(rc_expect_msg(p, &m, 5000));
    CHECK_EQ_MEM(m.payload, m.payload_len, "m2", 2);
    rc_spin(c, 50);
    CHECK_EQ_INT(p->rx_len - p->rx_off, 0);
    CHECK(!p->fin && !p->reset);
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(a.f.srv, &st, NULL));
    CHECK_EQ_U64(st.subscriptions, 1);
    rift_server_stats_free(&st);
    /* The Rust client's drop (STOP_SENDING + RESET_STREAM) cancels it
     * (§2.9 SUBSCRIBE 6). */
    rc_stop(p, 0);
    rc_reset(p, 0);
    CHECK(fix_wait_subs(&a.f, 0, 5000));
    rc_free(c);
    afix_down(&a);
}

/* ---- §2.8: a successful one-shot operation ends a publisher stream ---- */

RIFT_TEST(one_shot_on_a_publisher_stream_ends_it) {
    afix a;
    CHECK(afix_up(&a, NULL));
    rawcli *c = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "plugin");
    CHECK(c != NULL);
    rc_stream *p = rc_open(c);
    CHECK(rc_publish(p, "game.a", "x", 1, true));
    /* STREAM_PUBLISH then a PING and a PUBLISH_ACK in the same flight. */
    uint8_t buf[512];
    size_t n = b_stream_publish(buf, "events", "game.a", "one");
    n += rc_build_msg(buf + n, 5, "game.a", NULL, "y", 1);
    memcpy(buf + n, "\0\0\0\1\10", 5);
    n += 5;
    CHECK(rc_send(p, buf, n, false));
    size_t len;
    const uint8_t *b = rc_frame(p, 5000, &len);
    CHECK(b != NULL && b[0] == 11 && len == 17);
    CHECK(rc_expect_end(p, 5000));
    CHECK_EQ_INT(p->rx_len - p->rx_off, 0);
    CHECK(fin_and_stop_0(p));
    /* The frames after it were ignored: one record, and nothing else was
     * routed by that stream. */
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(a.events, &info, NULL));
    CHECK_EQ_U64(info.last_sequence, 1);
    rift_stream_info_free(&info);
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(a.f.srv, &st, NULL));
    CHECK_EQ_U64(st.msgs_in, 2); /* the first PUBLISH_ACK and the record */
    rift_server_stats_free(&st);
    rc_free(c);
    afix_down(&a);
}

/* ---- §2.9 REQUEST: timeout, then subject and ACL, then payload ---- */

RIFT_TEST(request_validation_order_down_to_the_payload) {
    afix a;
    CHECK(afix_up(&a, NULL));
    rawcli *c = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "plugin");
    CHECK(c != NULL);
    size_t big = 1048577;
    uint8_t *buf = malloc(big + 256);
    CHECK(buf != NULL);
    struct {
        uint32_t timeout;
        const char *subject;
        size_t plen;
        int code;
        const char *text;
    } cases[] = {
        {0, "game.*", big, 2, "request timeout must be 1..120000 ms"},
        {1000, "game.*", big, 2, "publication subject must be literal"},
        {1000, "a b", big, 2, "invalid subject pattern"},
        /* The ACL comes before the payload (unlike PUBLISH). */
        {1000, "rift.events.x", big, 1, "publication not permitted"},
        {1000, "game.big", big, 2, "payload exceeds 1 MiB transport limit"},
        /* Exactly 1 MiB passes validation (and finds nobody). */
        {1000, "game.big", big - 1, 2, "no responders available"},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(cases); i++) {
        size_t n = b_request_zeros(buf, cases[i].timeout, cases[i].subject,
                                   cases[i].plen);
        rc_stream *s = rc_open(c);
        CHECK(s != NULL);
        CHECK(rc_send(s, buf, n, true));
        CHECK_MSG(rc_expect_error(s, cases[i].code, cases[i].text, 10000),
                  "case %zu", i);
        CHECK(rc_expect_end(s, 5000));
    }
    free(buf);
    rc_free(c);
    afix_down(&a);
}

/* ---- §2.5: ERROR texts are cut at 1,024 bytes on a UTF-8 boundary ---- */

RIFT_TEST(error_text_cut_at_1024_bytes_on_the_wire) {
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    bs.max_subject_bytes = 64;
    afix a;
    CHECK(afix_up(&a, &bs));
    rawcli *c = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "wide");
    CHECK(c != NULL);
    /* A 1,024-byte subject the wire accepts and the broker refuses:
     * "invalid subject: " (17 bytes) + 1,006 'a' puts the 3-byte "€" at
     * bytes 1,023..1,025 of the text, across the cut. */
    char subject[1025];
    memset(subject, 'a', 1006);
    memcpy(subject + 1006, "\xe2\x82\xac", 3);
    memset(subject + 1009, 'b', 15);
    subject[1024] = '\0';
    uint8_t buf[2200];
    size_t n = rc_build_msg(buf, 5, subject, NULL, NULL, 0);
    rc_stream *s = rc_open(c);
    CHECK(rc_send(s, buf, n, true));
    char want[1100];
    snprintf(want, sizeof(want), "invalid subject: %.1006s", subject);
    CHECK_EQ_INT(strlen(want), 1023);
    CHECK(rc_expect_error(s, 2, want, 5000));
    /* With the character two bytes earlier it ends at byte 1,024 and
     * stays whole. */
    memset(subject, 'a', 1004);
    memcpy(subject + 1004, "\xe2\x82\xac", 3);
    memset(subject + 1007, 'b', 17);
    n = rc_build_msg(buf, 5, subject, NULL, NULL, 0);
    s = rc_open(c);
    CHECK(rc_send(s, buf, n, true));
    snprintf(want, sizeof(want), "invalid subject: %.1007s", subject);
    CHECK_EQ_INT(strlen(want), 1024);
    CHECK(rc_expect_error(s, 2, want, 5000));
    rc_free(c);
    afix_down(&a);
}

/* ---- §2.1: the transport profile actually advertised ---- */

static bool check_server_params(const ngtcp2_transport_params *p,
                                uint64_t bidi) {
    bool ok = p->initial_max_streams_bidi == bidi &&
              p->initial_max_streams_uni == 0 &&
              p->max_idle_timeout == 60 * NGTCP2_SECONDS &&
              p->initial_max_stream_data_bidi_remote == 2228224 &&
              p->initial_max_stream_data_bidi_local == 2228224 &&
              p->initial_max_data == 8912896 && p->max_datagram_frame_size == 0;
    if (!ok) {
        fprintf(stderr,
                "bidi %llu uni %llu idle %llu window %llu/%llu conn %llu "
                "datagram %llu\n",
                (unsigned long long)p->initial_max_streams_bidi,
                (unsigned long long)p->initial_max_streams_uni,
                (unsigned long long)p->max_idle_timeout,
                (unsigned long long)p->initial_max_stream_data_bidi_remote,
                (unsigned long long)p->initial_max_stream_data_bidi_local,
                (unsigned long long)p->initial_max_data,
                (unsigned long long)p->max_datagram_frame_size);
    }
    return ok;
}

static bool tls_profile(gnutls_session_t s) {
    gnutls_datum_t alpn;
    return gnutls_protocol_get_version(s) == GNUTLS_TLS1_3 &&
           gnutls_alpn_get_selected_protocol(s, &alpn) == 0 &&
           alpn.size == 16 && memcmp(alpn.data, "rift-messaging/1", 16) == 0 &&
           !gnutls_session_is_resumed(s);
}

RIFT_TEST(server_transport_profile) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(c != NULL);
    const ngtcp2_transport_params *p =
        ngtcp2_conn_get_remote_transport_params(c->conn->qc);
    CHECK(p != NULL);
    CHECK(check_server_params(p, 128));
    CHECK(tls_profile(c->conn->tls));
    rc_free(c);
    rift_server_del(f.srv);
    /* The stream limit follows max_streams_per_connection. */
    f.settings.max_streams_per_connection = 7;
    CHECK(fix_start(&f));
    c = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, true);
    CHECK(c != NULL);
    p = ngtcp2_conn_get_remote_transport_params(c->conn->qc);
    CHECK(p != NULL);
    CHECK(check_server_params(p, 7));
    rc_free(c);
    fix_fini(&f);
}

/* The C client connects from a thread to a bare QUIC server (the test's
 * harness, which answers AUTH with an echo the client refuses). */
typedef struct connect_arg {
    rift_client_settings s;
    char addr[64];
    int rc;
    atomic_bool done;
} connect_arg;

static void *client_thread(void *arg) {
    connect_arg *ca = arg;
    rift_client *c = NULL;
    rift_error err;
    ca->rc = rift_client_new(&c, &ca->s, &err);
    rift_client_del(c);
    atomic_store(&ca->done, true);
    return NULL;
}

static bool client_done(void *arg) {
    return atomic_load(&((connect_arg *)arg)->done);
}

static bool server_handshake(void *arg) {
    return ((srv_app *)arg)->handshakes > 0;
}

RIFT_TEST(client_transport_profile) {
    harness h;
    CHECK(harness_init(&h));
    CHECK(harness_server(&h, NULL));
    connect_arg ca;
    memset(&ca, 0, sizeof(ca));
    rift_client_settings_default(&ca.s);
    struct sockaddr_in *sin = (struct sockaddr_in *)&h.addr;
    snprintf(ca.addr, sizeof(ca.addr), "127.0.0.1:%u", ntohs(sin->sin_port));
    ca.s.address = ca.addr;
    ca.s.ca_file = h.ca;
    ca.s.server_name = "localhost";
    ca.s.token = "token-0123456789abcdef0123456789abcdef";
    ca.s.connect_timeout_ms = 3000;
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, client_thread, &ca));
    bool hs = harness_run(&h, server_handshake, &h.srv, 5000);
    bool ok = false;
    if (hs && h.srv.last_conn != NULL) {
        const ngtcp2_transport_params *p =
            ngtcp2_conn_get_remote_transport_params(h.srv.last_conn->qc);
        /* The server cannot open streams; otherwise the same profile. */
        ok = p != NULL && check_server_params(p, 0) &&
             tls_profile(h.srv.last_conn->tls);
    }
    /* Let the client finish (it refuses the echoed AUTH). */
    harness_run(&h, client_done, &ca, 10000);
    pthread_join(t, NULL);
    harness_fini(&h);
    CHECK(hs);
    CHECK(ok);
    CHECK(ca.rc != 0);
}

/* ---- §2.7: the end of a connection aborts its requests ---- */

RIFT_TEST(connection_end_drops_pending_requests) {
    afix a;
    CHECK(afix_up(&a, NULL));
    rawcli *r = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "wide");
    CHECK(r != NULL);
    rc_stream *idle = rc_open(r);
    CHECK(rc_subscribe(idle, "game.idle", NULL));
    CHECK(fix_wait_subs(&a.f, 1, 2000));
    /* Two requests nobody answers, with a long timeout; each holds an
     * inbox subscription. */
    rawcli *c = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "plugin");
    CHECK(c != NULL);
    uint8_t buf[256];
    size_t n = rc_build_request(buf, 60000, "game.idle", "q", 1);
    for (int i = 0; i < 2; i++) {
        rc_stream *q = rc_open(c);
        CHECK(q != NULL && rc_send(q, buf, n, true));
    }
    CHECK(fix_wait_subs(&a.f, 3, 5000));
    /* The requester goes away: like the original's aborted stream tasks,
     * its requests and their inboxes go with the connection instead of
     * waiting for their timeout. */
    rc_free(c);
    CHECK(fix_wait_subs(&a.f, 1, 3000));
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(a.f.srv, &st, NULL));
    CHECK_EQ_U64(st.connections, 1);
    CHECK_EQ_U64(st.streams, 1);
    rift_server_stats_free(&st);
    rc_free(r);
    afix_down(&a);
}

/* ---- Allocator hooks (rift_mem) on the server and the client ---- */

typedef struct mem_count {
    atomic_long calls;
} mem_count;

static void *m_malloc(size_t size, void *ud) {
    atomic_fetch_add(&((mem_count *)ud)->calls, 1);
    return malloc(size);
}

static void m_free(void *ptr, void *ud) {
    (void)ud;
    free(ptr);
}

static void *m_calloc(size_t n, size_t size, void *ud) {
    atomic_fetch_add(&((mem_count *)ud)->calls, 1);
    return calloc(n, size);
}

static void *m_realloc(void *ptr, size_t size, void *ud) {
    atomic_fetch_add(&((mem_count *)ud)->calls, 1);
    return realloc(ptr, size);
}

RIFT_TEST(custom_allocators_serve_connections) {
    mem_count sc = {0}, cc = {0};
    rift_mem smem = {&sc, m_malloc, m_free, m_calloc, m_realloc};
    rift_mem cmem = {&cc, m_malloc, m_free, m_calloc, m_realloc};
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.mem = &smem;
    CHECK(fix_start(&f));
    char addr[64];
    CHECK_OK(rift_server_address(f.srv, addr, sizeof(addr), NULL));
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = addr;
    s.ca_file = f.ca;
    s.server_name = "localhost";
    s.token = RC_TOKEN("plugin");
    s.mem = &cmem;
    rift_client *c = NULL;
    rift_error err = {0};
    CHECK_OK(rift_client_new(&c, &s, &err));
    rift_client_sub *sub = NULL;
    CHECK_OK(rift_client_subscribe(c, "game.m", 6, NULL, 0, &sub, &err));
    CHECK_OK(
        rift_client_publish(c, "game.m", 6, (const uint8_t *)"hi", 2, &err));
    rift_msg *m = NULL;
    CHECK_OK(rift_client_sub_recv(sub, 5000000000, &m, &err));
    size_t n = 0;
    const uint8_t *p = rift_msg_payload(m, &n);
    CHECK_EQ_MEM(p, n, "hi", 2);
    rift_msg_unref(m);
    rift_client_sub_close(sub);
    rift_client_del(c);
    fix_fini(&f);
    CHECK(atomic_load(&sc.calls) > 0);
    CHECK(atomic_load(&cc.calls) > 0);
}

/* ---- Issue 4: Retry (address validation) can be switched on ---- */

RIFT_TEST(retry_setting_validates_addresses) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(!f.settings.retry); /* off by default, as quinn's */
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    /* A server that sent a Retry names its source CID in its transport
     * parameters (RFC 9000 §7.3). */
    CHECK(!ngtcp2_conn_get_remote_transport_params(c->conn->qc)
               ->retry_scid_present);
    rc_free(c);
    rift_server_del(f.srv);
    f.settings.retry = true;
    CHECK(fix_start(&f));
    c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    CHECK(ngtcp2_conn_get_remote_transport_params(c->conn->qc)
              ->retry_scid_present);
    rc_stream *p = rc_open(c);
    CHECK(rc_ping(p));
    rc_free(c);
    fix_fini(&f);
}

/* ---- §2.9 SUBSCRIBE 9: each MESSAGE is re-checked before it is written
 * (local publishers may use broker limits wider than the wire's) ---- */

static bool local_publish(afix *a, const char *subject, const char *reply,
                          size_t plen) {
    uint8_t *p = calloc(1, plen + 1);
    rift_publish_report rep;
    rift_error err;
    int rc =
        rift_broker_publish(a->f.broker, subject, strlen(subject), reply,
                            reply ? strlen(reply) : 0, p, plen, &rep, &err);
    free(p);
    return rc == 0 && rep.delivered == 1;
}

RIFT_TEST(messages_beyond_the_wire_limits_end_the_subscription) {
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    bs.max_payload_bytes = 2 * 1048576;
    bs.max_subject_bytes = 2048;
    afix a;
    CHECK(afix_up(&a, &bs));
    rawcli *c = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "plugin");
    CHECK(c != NULL);
    char big[1100];
    memset(big, 'x', 1030);
    memcpy(big, "game.", 5);
    big[1030] = '\0';
    struct {
        const char *subject, *reply;
        size_t plen;
        const char *text;
    } cases[] = {
        {"game.p", NULL, 1048577, "payload exceeds 1 MiB transport limit"},
        {big, NULL, 1, "invalid subject length"},
        {"game.r", big, 1, "invalid subject length"},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(cases); i++) {
        rc_stream *s = rc_open(c);
        CHECK(rc_subscribe(s, "game.>", NULL));
        /* One that passes first, then the one that cannot be sent. */
        CHECK(local_publish(&a, "game.ok", NULL, 1048576));
        CHECK(
            local_publish(&a, cases[i].subject, cases[i].reply, cases[i].plen));
        rc_msg m;
        CHECK(rc_expect_msg(s, &m, 10000));
        CHECK_EQ_INT(m.payload_len, 1048576);
        CHECK_MSG(rc_expect_error(s, 2, cases[i].text, 5000), "case %zu", i);
        CHECK(rc_expect_end(s, 5000));
        CHECK(fix_wait_subs(&a.f, 0, 5000));
    }
    rc_free(c);
    afix_down(&a);
}

/* ---- Issue 4: shutdown closes every connection with 0 "server shutdown",
 * authenticated or not, busy or idle ---- */

static void *stop_thread(void *srv) {
    rift_server_stop(srv);
    return NULL;
}

typedef struct three {
    rawcli *c[3];
} three;

static bool all_closed(void *arg) {
    three *t = arg;
    for (int i = 0; i < 3; i++) {
        if (!t->c[i]->close.seen) {
            return false;
        }
    }
    return true;
}

RIFT_TEST(shutdown_closes_every_connection) {
    afix a;
    CHECK(afix_up(&a, NULL));
    three t;
    /* Idle and authenticated; in the middle of a request; never
     * authenticated. */
    t.c[0] = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "plugin");
    t.c[1] = rc_login(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, "wide");
    t.c[2] = rc_connect(a.f.loop, &a.f.addr, a.f.addrlen, a.f.ca, true);
    CHECK(t.c[0] && t.c[1] && t.c[2]);
    rc_stream *sub = rc_open(t.c[1]);
    CHECK(rc_subscribe(sub, "game.idle", NULL));
    uint8_t buf[256];
    size_t n = rc_build_request(buf, 60000, "game.idle", "q", 1);
    rc_stream *q = rc_open(t.c[0]);
    CHECK(rc_send(q, buf, n, true));
    CHECK(fix_wait_subs(&a.f, 2, 5000));
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, stop_thread, a.f.srv));
    rawcli idle = {.loop = a.f.loop};
    rc_run(&idle, all_closed, &t, 5000);
    pthread_join(th, NULL);
    for (int i = 0; i < 3; i++) {
        rawcli *c = t.c[i];
        CHECK_MSG(c->close.seen && c->close.kind == RIFT_QUIC_CLOSE_PEER_APP &&
                      c->close.code == 0 &&
                      strcmp(c->close.reason, "server shutdown") == 0,
                  "connection %d: seen %d kind %d code %llu reason %s", i,
                  c->close.seen, c->close.kind,
                  (unsigned long long)c->close.code, c->close.reason);
        rc_free(c);
    }
    CHECK_EQ_INT(rift_broker_subscription_count(a.f.broker), 0);
    afix_down(&a);
}

/* ---- A full disk under a served stream: a clear error, nothing
 * acknowledged lost, everything else still served ---- */

/* STREAM_PUBLISH on a fresh stream; returns the first frame's body. */
static const uint8_t *stream_publish_once(rawcli *c, const char *stream,
                                          const char *payload, size_t *len) {
    uint8_t buf[256];
    size_t n = b_stream_publish(buf, stream, "game.d", payload);
    rc_stream *s = rc_open(c);
    if (s == NULL || !rc_send(s, buf, n, true)) {
        return NULL;
    }
    return rc_frame(s, 5000, len);
}

RIFT_TEST(full_disk_keeps_the_server_serving) {
    test_vfs tv;
    test_vfs_init(&tv);
    atomic_store(&tv.now_ms, 1700000000000ull); /* the back-off's clock */
    srvfix f;
    CHECK(fix_init(&f, NULL));
    char dir[4300];
    snprintf(dir, sizeof(dir), "%s/disk", f.tmp);
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    ss.storage_path = dir;
    ss.vfs = &tv.vfs;
    rift_stream *disk, *mem;
    CHECK_OK(rift_stream_new(&disk, &ss, NULL));
    CHECK_OK(rift_stream_new(&mem, NULL, NULL));
    rift_server_stream list[2] = {{"disk", 4, disk}, {"mem", 3, mem}};
    f.settings.streams = list;
    f.settings.stream_count = 2;
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c != NULL);
    size_t len;
    const uint8_t *b = stream_publish_once(c, "disk", "kept", &len);
    CHECK(b != NULL && b[0] == 11 && len == 17);
    /* The disk fills up. */
    atomic_store(&tv.fail_write_at, atomic_load(&tv.pwrites) + 1);
    b = stream_publish_once(c, "disk", "lost", &len);
    CHECK(b != NULL && b[0] == 3 && b[1] == 0 && b[2] == 2);
    char text[1100] = "";
    if (b != NULL && len >= 5) {
        snprintf(text, sizeof(text), "%.*s", (int)len - 5, (const char *)b + 5);
    }
    CHECK_MSG(strncmp(text, "messaging I/O: ", 15) == 0 &&
                  strstr(text, "No space left on device") != NULL,
              "%s", text);
    CHECK_MSG(strstr(text, dir) == NULL, "a path leaked: %s", text);
    /* The stream refuses writes until the back-off has passed, with a
     * text saying what works; the failed publish is not counted. */
    b = stream_publish_once(c, "disk", "again", &len);
    CHECK(b != NULL && b[0] == 3 && b[1] == 0 && b[2] == 2);
    CHECK(b != NULL && len > 20 && memcmp(b + 5, "stream storage: ", 16) == 0);
    text[0] = '\0';
    if (b != NULL && len >= 5) {
        snprintf(text, sizeof(text), "%.*s", (int)len - 5, (const char *)b + 5);
    }
    CHECK_MSG(strstr(text, "retried automatically") != NULL &&
                  strstr(text, dir) == NULL,
              "%s", text);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(disk, &info, NULL));
    CHECK_EQ_U64(info.messages, 1);
    CHECK_EQ_U64(info.last_sequence, 1);
    rift_stream_info_free(&info);
    /* Space is back (the fault was one write): after the back-off the
     * stream takes writes again, and the failed publish's sequence is
     * used again. */
    atomic_store(&tv.now_ms, 1700000000000ull + 1000);
    b = stream_publish_once(c, "disk", "back", &len);
    CHECK(b != NULL && b[0] == 11 && len == 17);
    CHECK(b != NULL && b[8] == 2); /* sequence 2 (big-endian u64 at 1) */
    /* Everything else carries on. */
    b = stream_publish_once(c, "mem", "fine", &len);
    CHECK(b != NULL && b[0] == 11 && len == 17);
    rc_stream *sub = rc_open(c), *p = rc_open(c);
    CHECK(rc_subscribe(sub, "game.live", NULL));
    CHECK(rc_publish(p, "game.live", "x", 1, true));
    rc_msg m;
    CHECK(rc_expect_msg(sub, &m, 5000));
    rc_free(c);
    rift_server_del(f.srv);
    f.srv = NULL;
    rift_stream_del(disk);
    rift_stream_del(mem);
    /* Reopened on a healthy disk: the acknowledged records are there, the
     * failed one is not. */
    ss.vfs = NULL;
    CHECK_OK(rift_stream_new(&disk, &ss, NULL));
    CHECK_OK(rift_stream_get_info(disk, &info, NULL));
    CHECK_EQ_U64(info.messages, 2);
    CHECK_EQ_U64(info.last_sequence, 2);
    rift_stream_info_free(&info);
    rift_stream_del(disk);
    test_vfs_free(&tv);
    fix_fini(&f);
}

/* ---- §2.9 REQUEST 2: the requester needs no subscribe grant for the
 * inbox (nor any subscribe grant at all) ---- */

RIFT_TEST(request_needs_no_inbox_grant) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    const char *pub[] = {"game.>"};
    rift_server_identity ids[2] = {
        f.settings.identities[0], /* plugin: the responder */
        {.name = "req",
         .name_len = 3,
         .token = RC_TOKEN("req"),
         .token_len = strlen(RC_TOKEN("req")),
         .publish = pub,
         .publish_count = 1},
    };
    f.settings.identities = ids;
    f.settings.identity_count = 2;
    CHECK(fix_start(&f));
    rawcli *r = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    rawcli *q = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "req");
    CHECK(r && q);
    rc_stream *rs = rc_open(r), *rp = rc_open(r);
    CHECK(rc_subscribe(rs, "game.echo", NULL));
    uint8_t buf[4300];
    size_t n = rc_build_request(buf, 5000, "game.echo", "hi", 2);
    rc_stream *qs = rc_open(q);
    CHECK(rc_send(qs, buf, n, true));
    rc_msg m;
    CHECK(rc_expect_msg(rs, &m, 5000));
    n = rc_build_msg(buf, 5, m.reply, NULL, "ho", 2);
    CHECK(rc_send(rp, buf, n, false) && rc_expect_ok(rp, 5000));
    CHECK(rc_expect_msg(qs, &m, 5000));
    CHECK_EQ_MEM(m.payload, m.payload_len, "ho", 2);
    /* While a plain publication with that kind of reply is refused. */
    n = rc_build_msg(buf, 5, "game.echo", "_INBOX.mine", NULL, 0);
    rc_stream *p = rc_open(q);
    CHECK(rc_send(p, buf, n, false));
    CHECK(rc_expect_error(p, 1, "reply must be an authorized _INBOX subject",
                          5000));
    rc_free(r);
    rc_free(q);
    fix_fini(&f);
}

/* ---- §2.6 2: a handshake that never finishes is dropped after
 * handshake_timeout and gives its connection slot back ---- */

RIFT_TEST(abandoned_handshakes_give_their_slot_back) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    f.settings.max_connections = 1;
    f.settings.handshake_timeout_ms = 300;
    CHECK(fix_start(&f));
    /* The client's first flight reaches the server, then the client
     * vanishes without a word. */
    rawcli *gone = rc_connect(f.loop, &f.addr, f.addrlen, f.ca, false);
    CHECK(gone != NULL);
    rift_loop_run_once(f.loop, 0);
    rc_abort(gone);
    rift_tstamp t0 = rift_now_ns();
    rawcli *c = NULL;
    while (c == NULL && rift_now_ns() - t0 < 5000000000ull) {
        c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    }
    CHECK(c != NULL);
    rc_stream *p = rc_open(c);
    CHECK(rc_ping(p));
    rc_free(c);
    fix_fini(&f);
}
