/*
 * test_server_client.c — rift's C client library (include/rift/client.h)
 * against the protocol server: publish and subscribe, the publisher
 * barrier, request/reply with an in-process responder, permission errors,
 * retained streams, and prompt unregistration when a subscription is
 * dropped (STOP_SENDING + RESET_STREAM from the client).
 */
// labels: threads
#include "rawcli.h"

#include "rift/client.h"
#include "rift/stream.h"

#include <pthread.h>

static bool connect_as(srvfix *f, const char *identity, rift_client **pc) {
    char addr[64], token[128];
    if (rift_server_address(f->srv, addr, sizeof(addr), NULL) != 0) {
        return false;
    }
    snprintf(token, sizeof(token), "%s-token-0123456789abcdef0123456789",
             identity);
    rift_client_settings s;
    rift_client_settings_default(&s);
    s.address = addr;
    s.ca_file = f->ca;
    s.server_name = "localhost";
    s.token = token;
    rift_error err;
    if (rift_client_new(pc, &s, &err) != 0) {
        fprintf(stderr, "connect: %s\n", err.text);
        return false;
    }
    return true;
}

/* Answers one request on game.echo (in-process, through the broker). */
static void *responder(void *arg) {
    rift_sub *sub = arg;
    rift_msg *m;
    if (rift_sub_recv(sub, 5000000000, &m, NULL) == 0) {
        size_t rl, pl;
        const char *reply = rift_msg_reply(m, &rl);
        const uint8_t *p = rift_msg_payload(m, &pl);
        rift_broker *b = rift_sub_user_data(sub);
        rift_broker_publish(b, reply, rl, NULL, 0, p, pl, NULL, NULL);
        rift_msg_unref(m);
    }
    return NULL;
}

RIFT_TEST(c_client_round_trip) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rift_client *c;
    CHECK(connect_as(&f, "plugin", &c));
    rift_error err;

    rift_client_sub *sub;
    CHECK_OK(rift_client_subscribe(c, "game.>", 6, NULL, 0, &sub, &err));
    CHECK_OK(
        rift_client_publish(c, "game.a", 6, (const uint8_t *)"one", 3, &err));
    rift_publisher *p;
    CHECK_OK(rift_client_publisher_open(c, &p, &err));
    for (int i = 0; i < 100; i++) {
        CHECK_OK(rift_publisher_publish(p, "game.b", 6, NULL, 0,
                                        (const uint8_t *)"x", 1, &err));
    }
    CHECK_OK(rift_publisher_flush(p, &err));
    rift_msg *m;
    CHECK_OK(rift_client_sub_recv(sub, 5000000000, &m, &err));
    size_t len;
    const uint8_t *pl = rift_msg_payload(m, &len);
    CHECK_EQ_MEM(pl, len, "one", 3);
    rift_msg_unref(m);
    for (int i = 0; i < 100; i++) {
        CHECK_OK(rift_client_sub_recv(sub, 5000000000, &m, &err));
        rift_msg_unref(m);
    }

    /* Permission errors come back as RIFT_ERR_PERMISSION with the text. */
    CHECK_EQ_INT(rift_client_publish(c, "rift.control.x", 14, NULL, 0, &err),
                 RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "publication not permitted");
    rift_client_sub *bad;
    CHECK_EQ_INT(rift_client_subscribe(c, ">", 1, NULL, 0, &bad, &err),
                 RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "subscription not permitted");

    /* Request/reply with a responder inside the server's process. */
    rift_sub *rs;
    rift_sub_options o = {.user_data = f.broker};
    CHECK_OK(rift_broker_subscribe(f.broker, "game.echo", 9, &o, &rs, NULL));
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, responder, rs));
    rift_msg *reply;
    CHECK_OK(rift_client_request(c, "game.echo", 9, (const uint8_t *)"ping", 4,
                                 5000 * RIFT_MSEC, &reply, &err));
    pthread_join(t, NULL);
    pl = rift_msg_payload(reply, &len);
    CHECK_EQ_MEM(pl, len, "ping", 4);
    size_t sl;
    const char *subj = rift_msg_subject(reply, &sl);
    CHECK_EQ_INT(sl, 39);
    CHECK(strncmp(subj, "_INBOX.", 7) == 0);
    rift_msg_unref(reply);
    rift_sub_close(rs);

    /* Dropping the subscription unregisters it on the server. */
    size_t before = rift_broker_subscription_count(f.broker);
    rift_client_sub_close(sub);
    CHECK(fix_wait_subs(&f, before - 1, 2000));
    /* Nobody (the game.> subscription included) listens any more. */
    CHECK_EQ_INT(rift_client_request(c, "game.none", 9, NULL, 0,
                                     1000 * RIFT_MSEC, &reply, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "no responders available");

    rift_publisher_close(p);
    rift_client_del(c);
    rift_tstamp end = rift_now_ns() + 2000000000ull;
    rift_server_stats st = {0};
    do {
        rift_server_stats_free(&st);
        CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    } while (st.connections > 0 && rift_now_ns() < end);
    CHECK_EQ_U64(st.connections, 0);
    rift_server_stats_free(&st);
    fix_fini(&f);
}

RIFT_TEST(c_client_streams) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    rift_stream *st;
    CHECK_OK(rift_stream_new(&st, NULL, NULL));
    rift_server_stream list[1] = {{"events", 6, st}};
    f.settings.streams = list;
    f.settings.stream_count = 1;
    CHECK(fix_start(&f));
    rift_client *c;
    CHECK(connect_as(&f, "plugin", &c));
    rift_error err;
    rift_stored s1, s2;
    CHECK_OK(rift_client_stream_publish(c, "events", 6, "game.score", 10, NULL,
                                        0, (const uint8_t *)"one", 3, &s1,
                                        &err));
    CHECK_OK(rift_client_stream_publish(c, "events", 6, "game.score", 10, NULL,
                                        0, (const uint8_t *)"two", 3, &s2,
                                        &err));
    CHECK_EQ_U64(s1.sequence, 1);
    CHECK_EQ_U64(s2.sequence, 2);
    rift_consumer_config cfg = {
        .filter = "game.score",
        .filter_len = 10,
        .start_sequence = 1,
        .ack_wait_ms = 30000,
        .max_ack_pending = 128,
    };
    CHECK_OK(rift_client_consumer_open(c, "events", 6, "scoreboard", 10, &cfg,
                                       &err));
    rift_client_delivery d[10];
    size_t n = 0;
    CHECK_OK(
        rift_client_fetch(c, "events", 6, "scoreboard", 10, 10, d, &n, &err));
    CHECK_EQ_INT(n, 2);
    size_t len;
    const uint8_t *pl = rift_msg_payload(d[0].msg, &len);
    CHECK_EQ_MEM(pl, len, "one", 3);
    CHECK_EQ_U64(d[0].delivery_count, 1);
    for (size_t i = 0; i < n; i++) {
        CHECK_OK(rift_client_ack(c, "events", 6, "scoreboard", 10,
                                 d[i].sequence, &err));
        rift_msg_unref(d[i].msg);
    }
    CHECK_OK(
        rift_client_fetch(c, "events", 6, "scoreboard", 10, 10, d, &n, &err));
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(rift_client_ack(c, "events", 6, "scoreboard", 10, 1, &err),
                 RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "sequence is not pending acknowledgement");
    cfg.filter = ">";
    cfg.filter_len = 1;
    CHECK_EQ_INT(rift_client_consumer_open(c, "events", 6, "w", 1, &cfg, &err),
                 RIFT_ERR_PERMISSION);
    rift_client_del(c);
    rift_server_del(f.srv);
    f.srv = NULL;
    rift_stream_del(st);
    fix_fini(&f);
}
