/*
 * test_broker_request.c — request/reply over the in-process broker (broker
 * layer): inbox format, echo responder on its own thread, no responders,
 * timeout, and the inbox always being removed (docs/protocol-v1.md §1.9).
 */
// labels: threads
#include "rift/broker.h"
#include "test.h"

#include <pthread.h>

typedef struct responder {
    rift_broker *b;
    rift_sub *sub;
    int handled;
} responder;

/* Echoes every request to its reply subject until the subscription is
 * closed by rift_broker_del, or a "stop" payload arrives. */
static void *echo_main(void *arg) {
    responder *r = arg;
    for (;;) {
        rift_msg *m;
        if (rift_sub_recv(r->sub, -1, &m, NULL) != 0) {
            break;
        }
        size_t plen, rlen;
        const uint8_t *p = rift_msg_payload(m, &plen);
        const char *reply = rift_msg_reply(m, &rlen);
        bool stop = plen == 4 && memcmp(p, "stop", 4) == 0;
        if (reply != NULL) {
            rift_broker_publish(r->b, reply, rlen, NULL, 0, p, plen, NULL,
                                NULL);
        }
        r->handled++;
        rift_msg_unref(m);
        if (stop) {
            break;
        }
    }
    return NULL;
}

static bool is_lower_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

RIFT_TEST(inbox_format) {
    char a[RIFT_INBOX_LEN + 1], b[RIFT_INBOX_LEN + 1];
    CHECK_OK(rift_broker_new_inbox(a, NULL));
    CHECK_OK(rift_broker_new_inbox(b, NULL));
    CHECK_EQ_INT(strlen(a), 39);
    CHECK_EQ_INT(RIFT_INBOX_LEN, 39);
    CHECK(memcmp(a, "_INBOX.", 7) == 0);
    for (int i = 7; i < 39; i++) {
        CHECK_MSG(is_lower_hex(a[i]), "inbox %s has '%c'", a, a[i]);
    }
    CHECK(strcmp(a, b) != 0);
}

RIFT_TEST(request_echo) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    responder r = {.b = b};
    CHECK_OK(rift_broker_subscribe(b, "svc.echo", 8, NULL, &r.sub, NULL));
    pthread_t t;
    CHECK_OK(pthread_create(&t, NULL, echo_main, &r));
    size_t before = rift_broker_subscription_count(b);
    for (int i = 0; i < 50; i++) {
        char body[32];
        int n = snprintf(body, sizeof(body), "ping %d", i);
        rift_msg *reply = NULL;
        rift_error err;
        CHECK_OK(rift_broker_request(b, "svc.echo", 8, (const uint8_t *)body,
                                     (size_t)n, 5000000000LL, &reply, &err));
        size_t len, slen;
        const uint8_t *p = rift_msg_payload(reply, &len);
        CHECK_EQ_MEM(p, len, body, (size_t)n);
        /* The reply's subject is the inbox; it has no reply itself. */
        const char *subj = rift_msg_subject(reply, &slen);
        CHECK_EQ_INT(slen, RIFT_INBOX_LEN);
        CHECK(memcmp(subj, "_INBOX.", 7) == 0);
        CHECK(rift_msg_reply(reply, NULL) == NULL);
        rift_msg_unref(reply);
        CHECK_EQ_INT(rift_broker_subscription_count(b), before);
    }
    rift_msg *last;
    CHECK_OK(rift_broker_request(b, "svc.echo", 8, (const uint8_t *)"stop", 4,
                                 5000000000LL, &last, NULL));
    rift_msg_unref(last);
    pthread_join(t, NULL);
    CHECK_EQ_INT(r.handled, 51);
    rift_sub_close(r.sub);
    rift_broker_del(b);
}

RIFT_TEST(request_no_responders) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_msg *reply = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_broker_request(b, "absent", 6, NULL, 0, 1000000000LL,
                                     &reply, &err),
                 RIFT_ERR_NO_RESPONDERS);
    CHECK_EQ_STR(err.text, "no responders available");
    CHECK(reply == NULL);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    /* A slow (full) responder counts as nobody. */
    rift_sub *full;
    rift_sub_options o = {.capacity = 1};
    CHECK_OK(rift_broker_subscribe(b, "full", 4, &o, &full, NULL));
    CHECK_OK(rift_broker_publish(b, "full", 4, NULL, 0, NULL, 0, NULL, NULL));
    CHECK_EQ_INT(
        rift_broker_request(b, "full", 4, NULL, 0, 1000000000LL, &reply, &err),
        RIFT_ERR_NO_RESPONDERS);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 1);
    rift_sub_close(full);
    /* Invalid subjects fail as publish does, inbox removed too. */
    CHECK_EQ_INT(rift_broker_request(b, "a.*", 3, NULL, 0, 1000, &reply, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: a.*");
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    rift_broker_del(b);
}

RIFT_TEST(request_timeout) {
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *idle;
    CHECK_OK(rift_broker_subscribe(b, "idle", 4, NULL, &idle, NULL));
    size_t before = rift_broker_subscription_count(b);
    rift_msg *reply = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_broker_request(b, "idle", 4, (const uint8_t *)"x", 1,
                                     1000000LL, &reply, &err),
                 RIFT_ERR_TIMEOUT);
    CHECK_EQ_STR(err.text, "request timed out");
    CHECK(reply == NULL);
    CHECK_EQ_INT(rift_broker_subscription_count(b), before);
    /* The request reached the idle subscriber, with the inbox as reply. */
    rift_msg *m;
    CHECK_OK(rift_sub_recv(idle, 0, &m, NULL));
    size_t rl;
    CHECK(rift_msg_reply(m, &rl) != NULL);
    CHECK_EQ_INT(rl, RIFT_INBOX_LEN);
    rift_msg_unref(m);
    rift_sub_close(idle);
    rift_broker_del(b);
}

RIFT_TEST(request_inbox_counts_against_limit) {
    rift_broker_settings s;
    rift_broker_settings_default(&s);
    s.max_subscriptions = 1;
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, &s, NULL));
    rift_sub *only;
    CHECK_OK(rift_broker_subscribe(b, "svc", 3, NULL, &only, NULL));
    rift_msg *reply;
    rift_error err;
    CHECK_EQ_INT(rift_broker_request(b, "svc", 3, NULL, 0, 1000, &reply, &err),
                 RIFT_ERR_SUBSCRIPTION_LIMIT);
    CHECK_EQ_STR(err.text, "subscription limit reached");
    rift_sub_close(only);
    rift_broker_del(b);
}

RIFT_TEST(monitor_counts_as_responder) {
    /* §1.9: a passive subscriber on '>' makes the publish "delivered", so
     * the request waits and times out instead of failing at once. */
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *mon;
    CHECK_OK(rift_broker_subscribe(b, ">", 1, NULL, &mon, NULL));
    rift_msg *reply;
    CHECK_EQ_INT(rift_broker_request(b, "x", 1, NULL, 0, 1000000, &reply, NULL),
                 RIFT_ERR_TIMEOUT);
    rift_sub_close(mon);
    rift_broker_del(b);
}
