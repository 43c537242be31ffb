/*
 * test_nats_protocol.c — the NATS listener (src/nats) over raw sockets:
 * authentication, PUB/SUB/UNSUB max, queue groups, HPUB/HMSG, echo,
 * no-responders, permission violations that keep the connection, and the
 * cross-face path to in-process broker subscribers and back.
 */
#include "natsraw.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

#define T 5000 /* ms to wait for anything that should come */

#define START(f, tweak) CHECK_OK(natsraw_start(&(f), (tweak)))

RIFT_TEST(info_then_token_auth) {
    natsraw_fix f;
    START(f, NULL);
    char info[1024];
    natsraw *c = natsraw_connect(&f, 0, info, sizeof(info));
    CHECK(c != NULL);
    CHECK(strncmp(info, "INFO {", 6) == 0);
    CHECK(strstr(info, "\"proto\":1") != NULL);
    CHECK(strstr(info, "\"headers\":true") != NULL);
    CHECK(strstr(info, "\"auth_required\":true") != NULL);
    CHECK(strstr(info, "\"tls_required\":false") != NULL);
    CHECK(strstr(info, "\"max_payload\":1048576") != NULL);
    CHECK(strstr(info, "\"connect_urls\"") == NULL);
    CHECK(natsraw_hello(c, NATSRAW_ALICE, ""));
    rift_nats_stats st;
    CHECK_OK(rift_nats_get_stats(f.nats, &st));
    CHECK_EQ_U64(st.authenticated, 1);
    CHECK_EQ_STR(st.names[0], "alice");
    CHECK_EQ_U64(st.by_identity[0], 1);
    CHECK_EQ_U64(st.by_identity[1], 0);
    rift_free(NULL, st.by_identity);
    natsraw_close(c);
    natsraw_stop(&f);
}

RIFT_TEST(bad_credentials_are_refused_and_closed) {
    natsraw_fix f;
    START(f, NULL);
    static const char *const bad[] = {
        "CONNECT {\"auth_token\":\"wrong-token-0123456789abcdefghijkl\"}\r\n",
        "CONNECT {\"verbose\":false}\r\n",
        /* bob's token under alice's name */
        "CONNECT {\"user\":\"alice\",\"pass\":\"" NATSRAW_BOB "\"}\r\n",
        "PING\r\n", /* anything before CONNECT */
        "CONNECT {not json}\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        natsraw *c = natsraw_connect(&f, 0, NULL, 0);
        CHECK(c != NULL);
        CHECK(natsraw_send(c, bad[i], 0));
        CHECK_MSG(i == 4 ||
                      natsraw_expect(c, "-ERR 'Authorization Violation'", T),
                  "case %zu", i);
        CHECK_MSG(natsraw_wait_closed(c, T), "case %zu stays open", i);
        natsraw_close(c);
    }
    /* user + pass is the principal's name and token. */
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_send(
        c,
        "CONNECT {\"verbose\":true,\"user\":\"bob\",\"pass\":\"" NATSRAW_BOB
        "\"}\r\n",
        0));
    CHECK(natsraw_expect(c, "+OK\r\n", T));
    natsraw_close(c);
    rift_nats_stats st;
    CHECK_OK(rift_nats_get_stats(f.nats, &st));
    CHECK(st.auth_failures >= 4);
    rift_free(NULL, st.by_identity);
    natsraw_stop(&f);
}

static void anonymous_carol(rift_nats_settings *s) {
    s->anonymous = "carol";
}

RIFT_TEST(anonymous_acts_as_its_principal) {
    natsraw_fix f;
    START(f, anonymous_carol);
    char info[1024];
    natsraw *c = natsraw_connect(&f, 0, info, sizeof(info));
    CHECK(strstr(info, "\"auth_required\":false") != NULL);
    CHECK(natsraw_send(c,
                       "CONNECT {\"verbose\":false}\r\nSUB c.x 1\r\n"
                       "SUB a.x 2\r\nPUB c.x 2\r\nhi\r\nPING\r\n",
                       0));
    CHECK(natsraw_expect(
        c, "-ERR 'Permissions Violation for Subscription to \"a.x\"'", T));
    CHECK(natsraw_expect(c, "MSG c.x 1 2\r\nhi\r\n", T));
    CHECK(natsraw_expect(c, "PONG\r\n", T));
    /* Wrong credentials are not silently anonymous. */
    natsraw *d = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_send(
        d, "CONNECT {\"auth_token\":\"nope-nope-nope-nope\"}\r\n", 0));
    CHECK(natsraw_expect(d, "Authorization Violation", T));
    natsraw_close(d);
    natsraw_close(c);
    natsraw_stop(&f);
}

RIFT_TEST(pub_sub_wildcards_and_unsub_max) {
    natsraw_fix f;
    START(f, NULL);
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(c, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(c, "SUB a.* 1\r\nsub a.> 2\r\nUNSUB 2 2\r\n", 0));
    CHECK(natsraw_send(c,
                       "PUB a.b a.r 3\r\none\r\nPUB a.b.c 3\r\ntwo\r\n"
                       "PUB a.c 5\r\nthree\r\nPING\r\n",
                       0));
    /* Subscriptions drain in any order: wait for each without consuming. */
    CHECK(natsraw_await(c, "PONG\r\n", T));
    CHECK(natsraw_has(c, "MSG a.b 1 a.r 3\r\none\r\n"));
    CHECK(natsraw_has(c, "MSG a.b 2 a.r 3\r\none\r\n"));
    CHECK(natsraw_has(c, "MSG a.b.c 2 3\r\ntwo\r\n"));
    CHECK(natsraw_has(c, "MSG a.c 1 5\r\nthree\r\n"));
    CHECK(!natsraw_has(c, "MSG a.b.c 1"));
    /* sid 2 reached its max of 2 (a.b and a.b.c) before a.c. */
    CHECK(!natsraw_has(c, "MSG a.c 2"));
    CHECK(natsraw_expect(c, "PONG\r\n", T));
    CHECK(natsraw_send(c,
                       "UNSUB 1\r\nPUB a.d 1\r\nx\r\nSUB a.e 3\r\n"
                       "PUB a.e 1\r\ny\r\nPING\r\n",
                       0));
    CHECK(natsraw_expect(c, "MSG a.e 3 1\r\ny\r\nPONG\r\n", T));
    CHECK(!natsraw_has(c, "a.d"));
    natsraw_close(c);
    natsraw_stop(&f);
}

RIFT_TEST(queue_group_spans_faces) {
    natsraw_fix f;
    START(f, NULL);
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(c, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(c, "SUB a.q workers 1\r\nSUB a.q workers 2\r\n", 0));
    CHECK(natsraw_ping(c));
    rift_sub *local;
    rift_sub_options o = {.queue = "workers", .queue_len = 7};
    CHECK_OK(rift_broker_subscribe(f.broker, "a.q", 3, &o, &local, NULL));
    enum {
        N = 60
    };
    for (int i = 0; i < N; i++) {
        CHECK(natsraw_send(c, "PUB a.q 1\r\nx\r\n", 0));
    }
    CHECK(natsraw_send(c, "PING\r\n", 0));
    CHECK(natsraw_await(c, "PONG\r\n", T));
    size_t nats_got = 0;
    /* Count MSG lines delivered to either sid. */
    for (const char *p = c->buf;
         p != NULL && (p = strstr(p, "MSG a.q ")) != NULL; p += 8) {
        nats_got++;
    }
    size_t local_got = rift_sub_pending(local);
    CHECK_EQ_U64(nats_got + local_got, N);
    CHECK(local_got > 0 && nats_got > 0);
    rift_sub_close(local);
    natsraw_close(c);
    natsraw_stop(&f);
}

RIFT_TEST(headers_travel_between_nats_clients_only) {
    natsraw_fix f;
    START(f, NULL);
    natsraw *h = natsraw_connect(&f, 0, NULL, 0);
    natsraw *plain = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(h, NATSRAW_ALICE, ",\"headers\":true"));
    CHECK(natsraw_hello(plain, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(h, "SUB a.h 1\r\n", 0));
    CHECK(natsraw_send(plain, "SUB a.h 9\r\n", 0));
    CHECK(natsraw_ping(h) && natsraw_ping(plain));
    rift_sub *local;
    CHECK_OK(rift_broker_subscribe(f.broker, "a.h", 3, NULL, &local, NULL));
    CHECK(
        natsraw_send(h,
                     "HPUB a.h 23 28\r\nNATS/1.0\r\nX-Key: v1\r\n\r\nhello\r\n"
                     "PING\r\n",
                     0));
    CHECK(natsraw_expect(
        h, "HMSG a.h 1 23 28\r\nNATS/1.0\r\nX-Key: v1\r\n\r\nhello\r\nPONG",
        T));
    /* A client that did not ask for headers gets the payload as MSG. */
    CHECK(natsraw_expect(plain, "MSG a.h 9 5\r\nhello\r\n", T));
    CHECK(!natsraw_has(plain, "HMSG"));
    /* So does an in-process (or protocol v1) subscriber. */
    rift_msg *m = NULL;
    CHECK_OK(rift_sub_recv(local, 5000000000ll, &m, NULL));
    size_t plen;
    const uint8_t *pay = rift_msg_payload(m, &plen);
    CHECK_EQ_MEM(pay, plen, "hello", 5);
    rift_msg_unref(m);
    rift_sub_close(local);
    natsraw_close(h);
    natsraw_close(plain);
    natsraw_stop(&f);
}

RIFT_TEST(cross_face_both_ways) {
    natsraw_fix f;
    START(f, NULL);
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(c, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(c, "SUB a.in 4\r\n", 0));
    CHECK(natsraw_ping(c));
    /* In-process publish (another thread than the listener's) -> NATS. */
    CHECK_OK(rift_broker_publish(f.broker, "a.in", 4, "_INBOX.r1", 9,
                                 (const uint8_t *)"from-broker", 11, NULL,
                                 NULL));
    CHECK(natsraw_expect(c, "MSG a.in 4 _INBOX.r1 11\r\nfrom-broker\r\n", T));
    /* NATS publish -> in-process subscriber. */
    rift_sub *local;
    CHECK_OK(rift_broker_subscribe(f.broker, "a.out", 5, NULL, &local, NULL));
    CHECK(natsraw_send(c, "PUB a.out 4\r\nnats\r\n", 0));
    rift_msg *m = NULL;
    CHECK_OK(rift_sub_recv(local, 5000000000ll, &m, NULL));
    size_t plen;
    const uint8_t *pay = rift_msg_payload(m, &plen);
    CHECK_EQ_MEM(pay, plen, "nats", 4);
    rift_msg_unref(m);
    rift_sub_close(local);
    natsraw_close(c);
    natsraw_stop(&f);
}

RIFT_TEST(echo_false_skips_own_messages) {
    natsraw_fix f;
    START(f, NULL);
    natsraw *quiet = natsraw_connect(&f, 0, NULL, 0);
    natsraw *other = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(quiet, NATSRAW_ALICE, ",\"echo\":false"));
    CHECK(natsraw_hello(other, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(quiet, "SUB a.e 1\r\nPUB a.e 4\r\nmine\r\n", 0));
    CHECK(natsraw_ping(quiet));
    CHECK(natsraw_send(other, "PUB a.e 6\r\ntheirs\r\n", 0));
    CHECK(natsraw_expect(quiet, "MSG a.e 1 6\r\ntheirs\r\n", T));
    CHECK(!natsraw_has(quiet, "mine"));
    natsraw_close(quiet);
    natsraw_close(other);
    natsraw_stop(&f);
}

RIFT_TEST(no_responders_status) {
    natsraw_fix f;
    START(f, NULL);
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(c, NATSRAW_ALICE,
                        ",\"headers\":true,\"no_responders\":true"));
    CHECK(natsraw_send(c,
                       "SUB _INBOX.Abcdefghij0123456789XY.* 7\r\n"
                       "PUB svc.none _INBOX.Abcdefghij0123456789XY.1 2\r\n"
                       "hi\r\nPING\r\n",
                       0));
    CHECK(natsraw_expect(c,
                         "HMSG _INBOX.Abcdefghij0123456789XY.1 7 16 16\r\n"
                         "NATS/1.0 503\r\n\r\n\r\nPONG",
                         T));
    /* Without the option: silence (the request just times out). */
    natsraw *d = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(d, NATSRAW_ALICE, ",\"headers\":true"));
    CHECK(natsraw_send(d,
                       "SUB _INBOX.Zbcdefghij0123456789XY.* 7\r\n"
                       "PUB svc.none _INBOX.Zbcdefghij0123456789XY.1 2\r\n"
                       "hi\r\n",
                       0));
    CHECK(natsraw_ping(d));
    CHECK(!natsraw_has(d, "503"));
    /* no_responders without headers is refused, as nats-server does. */
    natsraw *e = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_send(e,
                       "CONNECT {\"auth_token\":\"" NATSRAW_ALICE
                       "\",\"no_responders\":true}\r\n",
                       0));
    CHECK(natsraw_wait_closed(e, T));
    natsraw_close(e);
    natsraw_close(d);
    natsraw_close(c);
    natsraw_stop(&f);
}

RIFT_TEST(violations_keep_the_connection) {
    natsraw_fix f;
    START(f, NULL);
    natsraw *c = natsraw_connect(&f, 0, NULL, 0);
    CHECK(natsraw_hello(c, NATSRAW_ALICE, ""));
    CHECK(natsraw_send(c, "PUB b.x 1\r\nx\r\n", 0));
    CHECK(natsraw_expect(
        c, "-ERR 'Permissions Violation for Publish to \"b.x\"'", T));
    CHECK(natsraw_send(c, "PUB rift.events.ready 1\r\nx\r\n", 0));
    CHECK(natsraw_expect(
        c, "-ERR 'Permissions Violation for Publish to \"rift.events.ready\"'",
        T));
    CHECK(natsraw_send(c, "SUB b.> 1\r\n", 0));
    CHECK(natsraw_expect(
        c, "-ERR 'Permissions Violation for Subscription to \"b.>\"'", T));
    CHECK(natsraw_send(c, "SUB a..x 1\r\nPUB a.* 1\r\nx\r\n", 0));
    CHECK(natsraw_expect(c, "-ERR 'Invalid Subject'", T));
    CHECK(natsraw_expect(c, "-ERR 'Invalid Publish Subject'", T));
    /* A reply subject outside its inboxes and subscribe grants is refused
     * too. */
    CHECK(natsraw_send(c, "PUB a.x b.reply 1\r\nx\r\n", 0));
    CHECK(natsraw_expect(c, "Permissions Violation for Publish to \"a.x\"", T));
    /* Still usable. */
    CHECK(natsraw_send(c, "SUB a.ok 1\r\nPUB a.ok 2\r\nok\r\n", 0));
    CHECK(natsraw_expect(c, "MSG a.ok 1 2\r\nok\r\n", T));
    natsraw_close(c);
    natsraw_stop(&f);
}
