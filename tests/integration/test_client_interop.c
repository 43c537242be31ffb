/*
 * test_client_interop.c — rift's C client against the independent Quinn +
 * rustls stub server (tests/quinn-peer, `rift-quinn-peer stub`): connect
 * and AUTH, TLS refusals, publishing (confirmed, pipelined with flush,
 * shared), subscriptions, request/reply, retained streams and consumers,
 * the 1 MiB payload boundary and local validation (integration tests).
 *
 * The peer is built by scripts/interop-build.sh (scripts/test.sh runs it
 * before ctest); these tests fail with a clear message when it is missing.
 */
// labels: threads interop
#include "quinn_stub.h"
#include "test.h"

#include "rift/client.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN "client-interop-token-0123456789abcdef"
#define SEC   1000000000LL

#define STUB_START(st)                                                         \
 do {                                                                          \
  SKIP_WITHOUT_QUINN_PEER();                                                   \
  if (!quinn_stub_start(&(st), TOKEN)) {                                       \
   quinn_stub_stop(&(st));                                                     \
   CHECK_MSG(false, "quinn stub: %s", (st).why);                               \
  }                                                                            \
 } while (0)

static void settings_for(rift_client_settings *s, quinn_stub *st) {
    rift_client_settings_default(s);
    s->address = st->addr;
    s->ca_file = st->ca;
    s->server_name = "localhost";
    s->token = TOKEN;
}

static int connect_stub(quinn_stub *st, rift_client **pc, rift_error *err) {
    rift_client_settings s;
    settings_for(&s, st);
    return rift_client_new(pc, &s, err);
}

#define S(x) x, strlen(x)
#define P(x) (const uint8_t *)(x), strlen(x)

/* ---- Connection ---- */

RIFT_TEST(connect_and_auth) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c = NULL;
    rift_error err;
    int rc = connect_stub(&st, &c, &err);
    CHECK_MSG(rc == 0, "connect: %s", err.text);
    CHECK(rift_client_is_connected(c));
    struct sockaddr_storage ss;
    socklen_t len;
    rift_client_local_addr(c, &ss, &len);
    CHECK_EQ_INT(ss.ss_family, AF_INET);
    rift_client_del(c);

    /* A host name: its IPv4 address is preferred (the stub listens on
     * 127.0.0.1 only). */
    rift_client_settings s;
    settings_for(&s, &st);
    char addr[64];
    snprintf(addr, sizeof(addr), "localhost%s", strrchr(st.addr, ':'));
    s.address = addr;
    s.connect_timeout_ms = 5000;
    rc = rift_client_new(&c, &s, &err);
    CHECK_MSG(rc == 0, "connect %s: %s", addr, err.text);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

RIFT_TEST(wrong_token_is_authentication_failed) {
    quinn_stub st;
    STUB_START(st);
    rift_client_settings s;
    settings_for(&s, &st);
    s.token = "not-the-token";
    rift_client *c = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "authentication failed");
    CHECK(c == NULL);
    quinn_stub_stop(&st);
}

RIFT_TEST(wrong_ca_is_refused) {
    quinn_stub st;
    STUB_START(st);
    rift_client_settings s;
    settings_for(&s, &st);
    s.ca_file = st.other_ca;
    rift_client *c = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_TLS);
    CHECK_MSG(strstr(err.text, "certificate") != NULL, "text: %s", err.text);
    quinn_stub_stop(&st);
}

RIFT_TEST(wrong_server_name_is_refused) {
    quinn_stub st;
    STUB_START(st);
    rift_client_settings s;
    settings_for(&s, &st);
    s.server_name = "not-this-server.example";
    rift_client *c = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_TLS);
    quinn_stub_stop(&st);
}

RIFT_TEST(missing_ca_file_and_bad_address) {
    quinn_stub st;
    STUB_START(st);
    rift_client_settings s;
    settings_for(&s, &st);
    s.ca_file = "/nonexistent/ca.pem";
    rift_client *c = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_TLS);
    settings_for(&s, &st);
    s.address = "127.0.0.1";
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    s.address = "[::1:7443";
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    quinn_stub_stop(&st);
}

/* ---- Publishing and subscriptions ---- */

static int recv_one(rift_client_sub *sub, rift_msg **m) {
    rift_error err;
    return rift_client_sub_recv(sub, 10 * SEC, m, &err);
}

RIFT_TEST(publish_confirmed_and_receive) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("interop.>"), NULL, 0, &sub, &err));
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    CHECK_OK(rift_publisher_publish_confirmed(p, S("interop.a"), S("_INBOX.r1"),
                                              P("hello"), &err));
    rift_msg *m;
    CHECK_OK(recv_one(sub, &m));
    size_t len;
    CHECK_EQ_STR(rift_msg_subject(m, &len), "interop.a");
    CHECK_EQ_INT(len, 9);
    CHECK_EQ_STR(rift_msg_reply(m, NULL), "_INBOX.r1");
    const uint8_t *pl = rift_msg_payload(m, &len);
    CHECK_EQ_MEM(pl, len, "hello", 5);
    rift_msg_unref(m);

    /* Empty payload, no reply. */
    CHECK_OK(rift_publisher_publish_confirmed(p, S("interop.b"), NULL, 0, NULL,
                                              0, &err));
    CHECK_OK(recv_one(sub, &m));
    CHECK(rift_msg_reply(m, &len) == NULL && len == 0);
    rift_msg_payload(m, &len);
    CHECK_EQ_INT(len, 0);
    rift_msg_unref(m);
    CHECK_EQ_INT(rift_client_sub_recv(sub, 0, &m, &err), RIFT_ERR_AGAIN);
    rift_publisher_close(p);
    rift_client_sub_close(sub);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

RIFT_TEST(pipelined_publishes_keep_order_through_flush) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("interop.seq"), NULL, 0, &sub, &err));
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    enum {
        N = 3000
    };
    for (uint32_t i = 0; i < N; i++) {
        uint8_t b[80];
        memset(b, (int)(i & 0xff), sizeof(b));
        memcpy(b, &i, sizeof(i));
        CHECK_OK(rift_publisher_publish(p, S("interop.seq"), NULL, 0, b,
                                        (i % 64) + 4, &err));
    }
    CHECK_MSG(rift_publisher_flush(p, &err) == 0, "flush: %s", err.text);
    for (uint32_t i = 0; i < N; i++) {
        rift_msg *m;
        CHECK_MSG(recv_one(sub, &m) == 0, "message %u missing", i);
        size_t len;
        const uint8_t *pl = rift_msg_payload(m, &len);
        uint32_t got;
        memcpy(&got, pl, sizeof(got));
        CHECK_EQ_INT(got, i);
        CHECK_EQ_INT(len, (i % 64) + 4);
        rift_msg_unref(m);
    }
    rift_publisher_close(p);
    rift_client_sub_close(sub);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

RIFT_TEST(shared_publish_and_subscription_fd) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("interop.*"), NULL, 0, &sub, &err));
    int fd = rift_client_sub_fd(sub);
    CHECK(fd >= 0);
    struct pollfd pfd = {fd, POLLIN, 0};
    CHECK_EQ_INT(poll(&pfd, 1, 0), 0);
    CHECK_OK(rift_client_publish(c, S("interop.x"), P("one"), &err));
    CHECK_OK(rift_client_publish_with_reply(c, S("interop.y"), S("_INBOX.z"),
                                            P("two"), &err));
    CHECK_EQ_INT(poll(&pfd, 1, 10000), 1);
    rift_msg *m;
    CHECK_OK(rift_client_sub_recv(sub, 0, &m, &err));
    CHECK_EQ_STR(rift_msg_subject(m, NULL), "interop.x");
    rift_msg_unref(m);
    CHECK_OK(recv_one(sub, &m));
    CHECK_EQ_STR(rift_msg_reply(m, NULL), "_INBOX.z");
    rift_msg_unref(m);
    CHECK_EQ_INT(rift_client_sub_pending(sub), 0);
    CHECK_EQ_INT(poll(&pfd, 1, 0), 0);
    rift_client_sub_close(sub);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

typedef struct two_subs {
    rift_client_sub *a, *b;
} two_subs;

static bool ten_pending(void *arg) {
    two_subs *t = arg;
    return rift_client_sub_pending(t->a) + rift_client_sub_pending(t->b) >= 10;
}

RIFT_TEST(queue_group_and_cancelled_subscription) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_client_sub *a, *b;
    CHECK_OK(rift_client_subscribe(c, S("interop.q"), S("workers"), &a, &err));
    CHECK_OK(rift_client_subscribe(c, S("interop.q"), S("workers"), &b, &err));
    for (int i = 0; i < 10; i++) {
        CHECK_OK(rift_client_publish(c, S("interop.q"), P("w"), &err));
    }
    two_subs t = {a, b};
    CHECK(rift_test_wait_until(ten_pending, &t, 10000));
    /* The stub hands a group's messages out in turn. */
    CHECK_EQ_INT(rift_client_sub_pending(a), 5);
    CHECK_EQ_INT(rift_client_sub_pending(b), 5);
    rift_client_sub_close(a);
    rift_client_sub_close(b);
    /* The connection is still fine after cancelling. */
    CHECK_OK(rift_client_publish(c, S("interop.q"), P("w"), &err));
    rift_client_del(c);
    quinn_stub_stop(&st);
}

/* ---- Request/reply ---- */

typedef struct responder {
    rift_client *c;
    rift_client_sub *sub;
    int answered;
    atomic_bool stop;
} responder;

static void *respond(void *arg) {
    responder *r = arg;
    rift_msg *m;
    rift_error err;
    while (!atomic_load(&r->stop)) {
        int rc = rift_client_sub_recv(r->sub, SEC / 10, &m, &err);
        if (rc == RIFT_ERR_AGAIN) {
            continue;
        }
        if (rc != 0) {
            break;
        }
        size_t rlen, plen;
        const char *reply = rift_msg_reply(m, &rlen);
        const uint8_t *pl = rift_msg_payload(m, &plen);
        uint8_t out[256];
        size_t n = plen < 200 ? plen : 200;
        memcpy(out, "re:", 3);
        if (n > 0) {
            memcpy(out + 3, pl, n);
        }
        if (reply != NULL &&
            rift_client_publish(r->c, reply, rlen, out, n + 3, &err) == 0) {
            r->answered++;
        }
        rift_msg_unref(m);
    }
    return NULL;
}

RIFT_TEST(request_reply_through_the_stub) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    responder r = {c, NULL, 0, false};
    CHECK_OK(rift_client_subscribe(c, S("svc.echo"), NULL, 0, &r.sub, &err));
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, respond, &r));
    for (int i = 0; i < 5; i++) {
        rift_msg *m = NULL;
        int rc = rift_client_request(c, S("svc.echo"), P("ping"),
                                     5000 * RIFT_MSEC, &m, &err);
        CHECK_MSG(rc == 0, "request: %s", err.text);
        size_t len;
        const uint8_t *pl = rift_msg_payload(m, &len);
        CHECK_EQ_MEM(pl, len, "re:ping", 7);
        CHECK(strncmp(rift_msg_subject(m, NULL), "_INBOX.", 7) == 0);
        rift_msg_unref(m);
    }
    /* Nobody listens here: the server's text comes back as a remote
     * error. */
    rift_msg *m = NULL;
    CHECK_EQ_INT(rift_client_request(c, S("svc.none"), P("x"), 1000 * RIFT_MSEC,
                                     &m, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "no responders available");
    atomic_store(&r.stop, true);
    pthread_join(t, NULL);
    rift_client_sub_close(r.sub);
    CHECK_EQ_INT(r.answered, 5);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

RIFT_TEST(request_timeout_range_is_checked_locally) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_msg *m = NULL;
    CHECK_EQ_INT(rift_client_request(c, S("svc.x"), P("x"), 0, &m, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout must be 1..120000 ms");
    CHECK_EQ_INT(rift_client_request(c, S("svc.x"), P("x"), -1, &m, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout must be 1..120000 ms");
    CHECK_EQ_INT(rift_client_request(c, S("svc.x"), P("x"), 120001 * RIFT_MSEC,
                                     &m, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout must be 1..120000 ms");
    CHECK_EQ_INT(rift_client_request(c, S("svc.x"), P("x"),
                                     (1ull << 32) * RIFT_MSEC, &m, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout too large");
    CHECK_EQ_INT(
        rift_client_request(c, S("svc.*"), P("x"), 100 * RIFT_MSEC, &m, &err),
        RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "publication subject must be literal");
    CHECK(m == NULL);
    /* A responder that never answers: the server's own timeout. */
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("svc.slow"), NULL, 0, &sub, &err));
    CHECK_EQ_INT(
        rift_client_request(c, S("svc.slow"), P("x"), 50 * RIFT_MSEC, &m, &err),
        RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "request timed out");
    rift_client_sub_close(sub);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

/* ---- Retained streams and consumers ---- */

RIFT_TEST(stream_publish_consumer_fetch_ack) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    uint64_t before = 0;
    for (uint64_t i = 1; i <= 3; i++) {
        rift_stored stored;
        char payload[16];
        snprintf(payload, sizeof(payload), "rec-%llu", (unsigned long long)i);
        CHECK_OK(rift_client_stream_publish(
            c, S("events"), S("events.a"), i == 2 ? "_INBOX.r" : NULL,
            i == 2 ? 8 : 0, P(payload), &stored, &err));
        CHECK_EQ_U64(stored.sequence, i);
        CHECK(stored.timestamp_ms >= before && stored.timestamp_ms > 0);
        before = stored.timestamp_ms;
    }
    rift_consumer_config cfg = {"events.>",          8, 1, 30000, 100,
                                RIFT_START_SEQUENCE, 0, 0};
    CHECK_OK(
        rift_client_consumer_open(c, S("events"), S("worker"), &cfg, &err));
    rift_client_delivery msgs[256];
    size_t n = 0;
    CHECK_OK(rift_client_fetch(c, S("events"), S("worker"), 2, msgs, &n, &err));
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_U64(msgs[0].sequence, 1);
    CHECK_EQ_U64(msgs[1].sequence, 2);
    CHECK_EQ_INT(msgs[0].delivery_count, 1);
    CHECK(msgs[0].timestamp_ms > 0);
    CHECK_EQ_STR(rift_msg_subject(msgs[1].msg, NULL), "events.a");
    CHECK_EQ_STR(rift_msg_reply(msgs[1].msg, NULL), "_INBOX.r");
    size_t len;
    const uint8_t *pl = rift_msg_payload(msgs[1].msg, &len);
    CHECK_EQ_MEM(pl, len, "rec-2", 5);
    for (size_t i = 0; i < n; i++) {
        CHECK_OK(rift_client_ack(c, S("events"), S("worker"), msgs[i].sequence,
                                 &err));
        rift_msg_unref(msgs[i].msg);
    }
    CHECK_OK(
        rift_client_fetch(c, S("events"), S("worker"), 256, msgs, &n, &err));
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_U64(msgs[0].sequence, 3);
    rift_msg_unref(msgs[0].msg);
    CHECK_OK(
        rift_client_fetch(c, S("events"), S("worker"), 10, msgs, &n, &err));
    CHECK_EQ_INT(n, 0);

    /* Server errors keep their text; local checks come first. */
    CHECK_EQ_INT(
        rift_client_fetch(c, S("events"), S("nobody"), 1, msgs, &n, &err),
        RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "consumer does not exist");
    CHECK_EQ_INT(
        rift_client_fetch(c, S("events"), S("worker"), 0, msgs, &n, &err),
        RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "fetch limit must be 1..256");
    CHECK_EQ_INT(
        rift_client_fetch(c, S("events"), S("worker"), 257, msgs, &n, &err),
        RIFT_ERR_INVALID_ARGUMENT);
    cfg.ack_wait_ms = 1ull << 32;
    CHECK_EQ_INT(
        rift_client_consumer_open(c, S("events"), S("worker"), &cfg, &err),
        RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "ack wait too large");
    cfg.ack_wait_ms = 1000;
    cfg.start = RIFT_START_NEW_ONLY;
    CHECK_EQ_INT(
        rift_client_consumer_open(c, S("events"), S("worker"), &cfg, &err),
        RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text,
                 "start position must be RIFT_START_SEQUENCE over the wire");
    char big[5000];
    memset(big, 'a', sizeof(big));
    CHECK_EQ_INT(rift_client_ack(c, big, sizeof(big), S("worker"), 1, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "string exceeds protocol limit");
    rift_client_del(c);
    quinn_stub_stop(&st);
}

/* ---- Payload limits and local validation ---- */

RIFT_TEST(max_payload_round_trip_and_oversize_refused_locally) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("interop.big"), NULL, 0, &sub, &err));
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    size_t max = 1048576;
    uint8_t *big = malloc(max + 1);
    CHECK(big != NULL);
    for (size_t i = 0; i <= max; i++) {
        big[i] = (uint8_t)(i * 7 + (i >> 11));
    }
    int rc = rift_publisher_publish_confirmed(p, S("interop.big"), NULL, 0, big,
                                              max, &err);
    CHECK_MSG(rc == 0, "1 MiB publish: %s", err.text);
    rift_msg *m;
    CHECK_OK(recv_one(sub, &m));
    size_t len;
    const uint8_t *pl = rift_msg_payload(m, &len);
    CHECK_EQ_INT(len, max);
    CHECK(memcmp(pl, big, max) == 0);
    rift_msg_unref(m);

    /* One byte more is refused before anything is written, on every path,
     * and the publisher stays usable. */
    CHECK_EQ_INT(rift_publisher_publish_confirmed(p, S("interop.big"), NULL, 0,
                                                  big, max + 1, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload exceeds 1 MiB transport limit");
    CHECK_EQ_INT(rift_publisher_publish(p, S("interop.big"), NULL, 0, big,
                                        max + 1, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_INT(rift_client_publish(c, S("interop.big"), big, max + 1, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload exceeds 1 MiB transport limit");
    CHECK_EQ_INT(rift_client_stream_publish(c, S("events"), S("interop.big"),
                                            NULL, 0, big, max + 1, NULL, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_OK(rift_publisher_publish_confirmed(p, S("interop.big"), NULL, 0,
                                              P("after"), &err));
    CHECK_OK(recv_one(sub, &m));
    pl = rift_msg_payload(m, &len);
    CHECK_EQ_MEM(pl, len, "after", 5);
    rift_msg_unref(m);
    /* The shared publisher too. */
    CHECK_OK(rift_client_publish(c, S("interop.big"), big, max, &err));
    CHECK_OK(recv_one(sub, &m));
    pl = rift_msg_payload(m, &len);
    CHECK_EQ_INT(len, max);
    CHECK(memcmp(pl, big, max) == 0);
    rift_msg_unref(m);
    free(big);
    rift_publisher_close(p);
    rift_client_sub_close(sub);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

RIFT_TEST(invalid_subjects_are_refused_locally) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    CHECK_EQ_INT(rift_publisher_publish(p, S("a..b"), NULL, 0, P("x"), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid subject pattern");
    CHECK_EQ_INT(rift_publisher_publish(p, S("a.*"), NULL, 0, P("x"), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "publication subject must be literal");
    CHECK_EQ_INT(rift_publisher_publish(p, "", 0, NULL, 0, P("x"), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid subject length");
    CHECK_EQ_INT(rift_publisher_publish_confirmed(p, S("a.b"), S("_INBOX.>"),
                                                  P("x"), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "publication subject must be literal");
    CHECK_EQ_INT(rift_client_publish(c, S("a b"), P("x"), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_OK(
        rift_publisher_publish_confirmed(p, S("a.b"), NULL, 0, P("x"), &err));
    CHECK_OK(rift_publisher_flush(p, &err));
    rift_publisher_close(p);
    rift_client_del(c);
    quinn_stub_stop(&st);
}

/* ---- Lifetimes ---- */

RIFT_TEST(handles_fail_after_client_close) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("interop.>"), NULL, 0, &sub, &err));
    CHECK_OK(rift_client_publish(c, S("interop.a"), P("x"), &err));
    rift_client_del(c);
    /* Queued messages are still delivered, then the end. */
    rift_msg *m;
    int rc = rift_client_sub_recv(sub, SEC, &m, &err);
    if (rc == 0) {
        rift_msg_unref(m);
        rc = rift_client_sub_recv(sub, SEC, &m, &err);
    }
    CHECK_EQ_INT(rc, RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(err.text, "client closed");
    CHECK_EQ_INT(rift_publisher_flush(p, &err), RIFT_ERR_CONNECTION);
    CHECK_EQ_STR(err.text, "client closed");
    CHECK_EQ_INT(rift_publisher_flush(p, &err), RIFT_ERR_UNUSABLE);
    CHECK_EQ_STR(err.text,
                 "publisher closed or a previous operation was cancelled");
    rift_publisher_close(p);
    rift_client_sub_close(sub);
    quinn_stub_stop(&st);
}

/* ---- Threads ---- */

typedef struct pub_thread {
    rift_client *c;
    int id;
    int n;
    int failures;
} pub_thread;

static void *publish_many(void *arg) {
    pub_thread *t = arg;
    rift_error err;
    rift_publisher *p = NULL;
    if (t->id % 2 == 0 && rift_client_publisher_open(t->c, &p, &err) != 0) {
        t->failures = t->n;
        return NULL;
    }
    for (int i = 0; i < t->n; i++) {
        char subject[32];
        snprintf(subject, sizeof(subject), "interop.t%d", t->id);
        int rc = p != NULL ? rift_publisher_publish(p, S(subject), NULL, 0,
                                                    P("payload"), &err)
                           : rift_client_publish(t->c, S(subject), P("payload"),
                                                 &err);
        if (rc != 0) {
            t->failures++;
        }
    }
    if (p != NULL) {
        if (rift_publisher_flush(p, &err) != 0) {
            t->failures++;
        }
        rift_publisher_close(p);
    }
    return NULL;
}

RIFT_TEST(concurrent_publishers_share_one_client) {
    quinn_stub st;
    STUB_START(st);
    rift_client *c;
    rift_error err;
    CHECK_OK(connect_stub(&st, &c, &err));
    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, S("interop.*"), NULL, 0, &sub, &err));
    enum {
        T = 4,
        N = 200
    };
    pub_thread ts[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        ts[i] = (pub_thread){c, i, N, 0};
        CHECK_OK(pthread_create(&th[i], NULL, publish_many, &ts[i]));
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(ts[i].failures, 0);
    }
    for (int i = 0; i < T * N; i++) {
        rift_msg *m;
        CHECK_MSG(recv_one(sub, &m) == 0, "message %d missing", i);
        rift_msg_unref(m);
    }
    rift_client_sub_close(sub);
    rift_client_del(c);
    quinn_stub_stop(&st);
}
