/*
 * test_broker.c — unit tests of the in-process broker (broker layer): the
 * conformance vectors of docs/protocol-v1.md §1.1-§1.8 (configuration,
 * subject syntax, wildcards, fan-out, queue groups, slow consumers,
 * limits), messages and the subscription lifecycle.
 */
#include "rift/broker.h"
#include "test.h"

#include <stdlib.h>

static const uint8_t P64[64] = {0x2A};

static rift_broker *broker_with(size_t cap, size_t max_payload,
                                size_t max_subs) {
    rift_broker_settings s;
    rift_broker_settings_default(&s);
    if (cap) {
        s.subscription_capacity = cap;
    }
    if (max_payload) {
        s.max_payload_bytes = max_payload;
    }
    if (max_subs) {
        s.max_subscriptions = max_subs;
    }
    rift_broker *b = NULL;
    if (rift_broker_new(&b, &s, NULL) != 0) {
        return NULL;
    }
    return b;
}

static int sub(rift_broker *b, const char *pattern, const char *queue,
               rift_sub **ps) {
    rift_sub_options o = {0};
    o.queue = queue;
    o.queue_len = queue ? strlen(queue) : 0;
    return rift_broker_subscribe(b, pattern, strlen(pattern), &o, ps, NULL);
}

static int pub(rift_broker *b, const char *subject, rift_publish_report *r) {
    return rift_broker_publish(b, subject, strlen(subject), NULL, 0, P64, 3, r,
                               NULL);
}

/* drain counts the messages queued on |s| (poll until AGAIN). */
static size_t drain(rift_sub *s) {
    size_t n = 0;
    rift_msg *m;
    while (rift_sub_recv(s, 0, &m, NULL) == 0) {
        rift_msg_unref(m);
        n++;
    }
    return n;
}

/* ---- §1.1 configuration ---- */

RIFT_TEST(config_defaults) {
    rift_broker_settings s;
    rift_broker_settings_default(&s);
    CHECK_EQ_INT(s.subscription_capacity, 1024);
    CHECK_EQ_INT(s.max_payload_bytes, 1048576);
    CHECK_EQ_INT(s.max_subject_bytes, 1024);
    CHECK_EQ_INT(s.max_subscriptions, 65536);
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    CHECK_EQ_INT(rift_broker_get_settings(b)->subscription_capacity, 1024);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    rift_broker_del(b);
    rift_broker_del(NULL);
}

RIFT_TEST(config_zero_limits_rejected) {
    for (int field = 0; field < 5; field++) {
        rift_broker_settings s;
        rift_broker_settings_default(&s);
        switch (field) {
        case 0:
            s.subscription_capacity = 0;
            break;
        case 1:
            s.max_payload_bytes = 0;
            break;
        case 2:
            s.max_subject_bytes = 0;
            break;
        case 3:
            s.max_subscriptions = 0;
            break;
        default:
            s.subscription_capacity = SIZE_MAX; /* absurdly large */
            break;
        }
        rift_broker *b = NULL;
        rift_error err;
        CHECK_EQ_INT(rift_broker_new(&b, &s, &err), RIFT_ERR_INVALID_CONFIG);
        CHECK_EQ_INT(err.code, RIFT_ERR_INVALID_CONFIG);
        CHECK_EQ_STR(err.text,
                     "invalid messaging configuration: limits must be "
                     "positive");
        CHECK(b == NULL);
    }
}

/* ---- §1.3 subject syntax ---- */

RIFT_TEST(subscribe_invalid_subjects) {
    rift_broker *b = broker_with(0, 0, 0);
    CHECK(b != NULL);
    static const char *bad[] = {"", ".x", "x.", "x..y", "x.>.y", "x.a*", "x y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rift_sub *s = NULL;
        rift_error err;
        CHECK_EQ_INT(
            rift_broker_subscribe(b, bad[i], strlen(bad[i]), NULL, &s, &err),
            RIFT_ERR_INVALID_SUBJECT);
        char want[64];
        snprintf(want, sizeof(want), "invalid subject: %s", bad[i]);
        CHECK_EQ_STR(err.text, want);
        CHECK(s == NULL);
    }
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    rift_broker_del(b);
}

RIFT_TEST(publish_wildcard_subject_fails) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s;
    CHECK_OK(sub(b, ">", NULL, &s));
    rift_error err;
    rift_publish_report r = {9, 9, 9};
    CHECK_EQ_INT(rift_broker_publish(b, "x.*", 3, NULL, 0, P64, 1, &r, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: x.*");
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_EQ_INT(rift_broker_publish(b, "x.>", 3, NULL, 0, P64, 1, NULL, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: x.>");
    /* The reply is validated the same way and named in the error. */
    CHECK_EQ_INT(rift_broker_publish(b, "x", 1, "r.*", 3, P64, 1, NULL, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: r.*");
    CHECK_EQ_INT(rift_broker_publish(b, "x", 1, "r..s", 4, P64, 1, NULL, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: r..s");
    CHECK_EQ_INT(drain(s), 0);
    rift_sub_close(s);
    rift_broker_del(b);
}

RIFT_TEST(max_payload_two_rejects_three_bytes) {
    rift_broker *b = broker_with(0, 2, 0);
    rift_sub *s;
    CHECK_OK(sub(b, "x", NULL, &s));
    rift_error err;
    rift_publish_report r;
    CHECK_OK(rift_broker_publish(b, "x", 1, NULL, 0, P64, 2, &r, &err));
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(rift_broker_publish(b, "x", 1, NULL, 0, P64, 3, &r, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload size 3 exceeds limit 2");
    /* Also when nobody listens. */
    CHECK_EQ_INT(rift_broker_publish(b, "y", 1, NULL, 0, P64, 3, &r, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_INT(drain(s), 1);
    rift_sub_close(s);
    rift_broker_del(b);
}

RIFT_TEST(max_subject_bytes_applies) {
    rift_broker_settings st;
    rift_broker_settings_default(&st);
    st.max_subject_bytes = 5;
    rift_broker *b;
    CHECK_OK(rift_broker_new(&b, &st, NULL));
    rift_sub *s;
    rift_error err;
    CHECK_OK(rift_broker_subscribe(b, "a.b.c", 5, NULL, &s, NULL));
    CHECK_EQ_INT(rift_broker_subscribe(b, "a.b.cd", 6, NULL, &s, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: a.b.cd");
    CHECK_EQ_INT(
        rift_broker_publish(b, "a.b.cd", 6, NULL, 0, P64, 1, NULL, &err),
        RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 1);
    rift_broker_del(b);
    rift_sub_close(s);
}

RIFT_TEST(queue_names_validated) {
    rift_broker *b = broker_with(0, 0, 0);
    char q128[129], q129[130];
    memset(q128, 'q', 128);
    q128[128] = '\0';
    memset(q129, 'q', 129);
    q129[129] = '\0';
    static const char *bad[] = {"", "a*", "a>b", "a b", "\xC3\xA9", "a\tb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rift_sub *s = NULL;
        rift_sub_options o = {.queue = bad[i], .queue_len = strlen(bad[i])};
        rift_error err;
        CHECK_EQ_INT(rift_broker_subscribe(b, "x", 1, &o, &s, &err),
                     RIFT_ERR_INVALID_QUEUE);
        CHECK_EQ_STR(err.text, "invalid queue group");
    }
    rift_sub *s = NULL;
    rift_sub_options o = {.queue = q129, .queue_len = 129};
    CHECK_EQ_INT(rift_broker_subscribe(b, "x", 1, &o, &s, NULL),
                 RIFT_ERR_INVALID_QUEUE);
    /* Any ASCII graphic byte but '*' and '>' is fine, up to 128 of them. */
    o.queue = q128;
    o.queue_len = 128;
    CHECK_OK(rift_broker_subscribe(b, "x", 1, &o, &s, NULL));
    rift_sub_close(s);
    o.queue = "a.b-c_d!~{}";
    o.queue_len = strlen(o.queue);
    CHECK_OK(rift_broker_subscribe(b, "x", 1, &o, &s, NULL));
    rift_sub_close(s);
    /* An invalid subject is reported before an invalid queue. */
    rift_error err;
    o.queue = "";
    o.queue_len = 0;
    CHECK_EQ_INT(rift_broker_subscribe(b, "x..", 3, &o, &s, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    rift_broker_del(b);
}

RIFT_TEST(non_ascii_subjects_allowed) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s;
    const char *subj = "caf\xC3\xA9.*";
    CHECK_OK(rift_broker_subscribe(b, subj, strlen(subj), NULL, &s, NULL));
    rift_publish_report r;
    const char *p = "caf\xC3\xA9.\xE2\x82\xAC";
    CHECK_OK(pub(b, p, &r));
    CHECK_EQ_INT(r.delivered, 1);
    /* Unicode whitespace (U+00A0) is not. */
    rift_error err;
    CHECK_EQ_INT(
        rift_broker_publish(b, "a\xC2\xA0", 3, NULL, 0, P64, 1, &r, &err),
        RIFT_ERR_INVALID_SUBJECT);
    rift_sub_close(s);
    rift_broker_del(b);
}

/* ---- §1.4 wildcard matching ---- */

RIFT_TEST(wildcard_vectors) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s[3];
    CHECK_OK(sub(b, "orders.created", NULL, &s[0]));
    CHECK_OK(sub(b, "orders.*", NULL, &s[1]));
    CHECK_OK(sub(b, "orders.>", NULL, &s[2]));
    rift_publish_report r;
    CHECK_OK(pub(b, "orders.created", &r));
    CHECK_EQ_INT(r.delivered, 3);
    CHECK_EQ_INT(r.slow_consumers, 0);
    CHECK_OK(pub(b, "orders", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_OK(pub(b, "orders.created.local", &r));
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(drain(s[0]), 1);
    CHECK_EQ_INT(drain(s[1]), 1);
    CHECK_EQ_INT(drain(s[2]), 2);
    for (int i = 0; i < 3; i++) {
        rift_sub_close(s[i]);
    }
    rift_broker_del(b);
}

RIFT_TEST(wildcard_edge_cases) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *gt, *star2, *mid, *all;
    CHECK_OK(sub(b, ">", NULL, &all));
    CHECK_OK(sub(b, "a.>", NULL, &gt));
    CHECK_OK(sub(b, "*.*", NULL, &star2));
    CHECK_OK(sub(b, "a.*.c", NULL, &mid));
    rift_publish_report r;
    CHECK_OK(pub(b, "a", &r)); /* '>' needs one token: only ">" */
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_OK(pub(b, "a.b", &r)); /* >, a.>, *.* */
    CHECK_EQ_INT(r.delivered, 3);
    CHECK_OK(pub(b, "a.b.c", &r)); /* >, a.>, a.*.c */
    CHECK_EQ_INT(r.delivered, 3);
    CHECK_OK(pub(b, "a.b.c.d", &r)); /* >, a.> */
    CHECK_EQ_INT(r.delivered, 2);
    CHECK_OK(pub(b, "b.c", &r)); /* >, *.* */
    CHECK_EQ_INT(r.delivered, 2);
    CHECK_EQ_INT(drain(all), 5);
    CHECK_EQ_INT(drain(gt), 3);
    CHECK_EQ_INT(drain(star2), 2);
    CHECK_EQ_INT(drain(mid), 1);
    rift_sub_close(all);
    rift_sub_close(gt);
    rift_sub_close(star2);
    rift_sub_close(mid);
    rift_broker_del(b);
}

/* ---- §1.5 registry and fan-out ---- */

RIFT_TEST(fanout_shares_one_payload) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s[3];
    CHECK_OK(sub(b, "fan.out", NULL, &s[0]));
    CHECK_OK(sub(b, "fan.*", NULL, &s[1]));
    CHECK_OK(sub(b, ">", NULL, &s[2]));
    rift_publish_report r;
    CHECK_OK(rift_broker_publish(b, "fan.out", 7, "reply.here", 10, P64, 64, &r,
                                 NULL));
    CHECK_EQ_INT(r.delivered, 3);
    rift_msg *m[3];
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rift_sub_recv(s[i], 0, &m[i], NULL));
    }
    size_t len[3];
    const uint8_t *p0 = rift_msg_payload(m[0], &len[0]);
    CHECK(p0 == rift_msg_payload(m[1], &len[1]));
    CHECK(p0 == rift_msg_payload(m[2], &len[2]));
    CHECK_EQ_MEM(p0, len[0], P64, 64);
    size_t sl, rl;
    CHECK_EQ_STR(rift_msg_subject(m[1], &sl), "fan.out");
    CHECK_EQ_INT(sl, 7);
    CHECK_EQ_STR(rift_msg_reply(m[2], &rl), "reply.here");
    CHECK_EQ_INT(rl, 10);
    for (int i = 0; i < 3; i++) {
        rift_msg_unref(m[i]);
        rift_sub_close(s[i]);
    }
    rift_broker_del(b);
}

RIFT_TEST(publish_without_subscribers_is_silent) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_publish_report r = {7, 7, 7};
    CHECK_OK(pub(b, "nobody.home", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_EQ_INT(r.slow_consumers, 0);
    CHECK_OK(rift_broker_publish(b, "x", 1, NULL, 0, NULL, 0, NULL, NULL));
    rift_broker_stats st;
    rift_broker_get_stats(b, &st);
    CHECK_EQ_U64(st.msgs_in, 2);
    CHECK_EQ_U64(st.bytes_in, 3);
    CHECK_EQ_U64(st.msgs_out, 0);
    rift_broker_del(b);
}

RIFT_TEST(no_reply_means_null_reply) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s;
    CHECK_OK(sub(b, "x", NULL, &s));
    /* A non-NULL reply of length 0 is no reply. */
    CHECK_OK(rift_broker_publish(b, "x", 1, "", 0, NULL, 0, NULL, NULL));
    rift_msg *m;
    CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
    size_t rl = 99, pl = 99;
    CHECK(rift_msg_reply(m, &rl) == NULL);
    CHECK_EQ_INT(rl, 0);
    CHECK(rift_msg_payload(m, &pl) != NULL);
    CHECK_EQ_INT(pl, 0);
    rift_msg_unref(m);
    rift_sub_close(s);
    rift_broker_del(b);
}

/* ---- §1.6 queue groups ---- */

RIFT_TEST(queue_group_fair_across_subjects) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s[4];
    CHECK_OK(sub(b, "a", "group_a", &s[0]));
    CHECK_OK(sub(b, "a", "group_a", &s[1]));
    CHECK_OK(sub(b, "b", "group_a", &s[2]));
    CHECK_OK(sub(b, "b", "group_a", &s[3]));
    for (int i = 0; i < 20; i++) {
        rift_publish_report r;
        CHECK_OK(pub(b, "a", &r));
        CHECK_EQ_INT(r.delivered, 1);
        CHECK_OK(pub(b, "b", &r));
        CHECK_EQ_INT(r.delivered, 1);
    }
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(drain(s[i]), 10);
        rift_sub_close(s[i]);
    }
    rift_broker_del(b);
}

RIFT_TEST(queue_group_with_plain_subscriber) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *wild, *exact, *plain;
    CHECK_OK(sub(b, "jobs.*", "workers", &wild));
    CHECK_OK(sub(b, "jobs.run", "workers", &exact));
    CHECK_OK(sub(b, "jobs.run", NULL, &plain));
    size_t last_exact = 0;
    for (int i = 0; i < 20; i++) {
        rift_publish_report r;
        CHECK_OK(pub(b, "jobs.run", &r));
        CHECK_EQ_INT(r.delivered, 2);
        /* The workers alternate; the exact one comes first in candidate
         * order, so it wins the initial tie. */
        size_t now = rift_sub_pending(exact);
        CHECK_EQ_INT(now - last_exact, i % 2 == 0 ? 1 : 0);
        last_exact = now;
    }
    CHECK_EQ_INT(drain(wild), 10);
    CHECK_EQ_INT(drain(exact), 10);
    CHECK_EQ_INT(drain(plain), 20);
    rift_sub_close(wild);
    rift_sub_close(exact);
    rift_sub_close(plain);
    rift_broker_del(b);
}

RIFT_TEST(queue_group_tie_goes_to_exact_then_registration_order) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *w1, *w2, *e1, *e2;
    /* Registration order: w1, e1, w2, e2; candidate order for "t.x" is
     * e1, e2 (exact, registration order), then w1, w2. */
    CHECK_OK(sub(b, "t.*", "q", &w1));
    CHECK_OK(sub(b, "t.x", "q", &e1));
    CHECK_OK(sub(b, "t.>", "q", &w2));
    CHECK_OK(sub(b, "t.x", "q", &e2));
    rift_sub *order[4] = {e1, e2, w1, w2};
    for (int i = 0; i < 8; i++) {
        CHECK_OK(pub(b, "t.x", NULL));
        rift_msg *m;
        CHECK_OK(rift_sub_recv(order[i % 4], 0, &m, NULL));
        rift_msg_unref(m);
    }
    CHECK_EQ_INT(drain(w1) + drain(w2) + drain(e1) + drain(e2), 0);
    rift_sub_close(w1);
    rift_sub_close(w2);
    rift_sub_close(e1);
    rift_sub_close(e2);
    rift_broker_del(b);
}

RIFT_TEST(distinct_queue_groups_each_get_one) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s[6];
    CHECK_OK(sub(b, "x", "g1", &s[0]));
    CHECK_OK(sub(b, "x", "g1", &s[1]));
    CHECK_OK(sub(b, "x", "g2", &s[2]));
    CHECK_OK(sub(b, ">", "g2", &s[3]));
    CHECK_OK(sub(b, "*", "g3", &s[4]));
    CHECK_OK(sub(b, "x", NULL, &s[5]));
    rift_publish_report r;
    for (int i = 0; i < 4; i++) {
        CHECK_OK(pub(b, "x", &r));
        CHECK_EQ_INT(r.delivered, 4);
    }
    CHECK_EQ_INT(drain(s[0]), 2);
    CHECK_EQ_INT(drain(s[1]), 2);
    CHECK_EQ_INT(drain(s[2]), 2);
    CHECK_EQ_INT(drain(s[3]), 2);
    CHECK_EQ_INT(drain(s[4]), 4);
    CHECK_EQ_INT(drain(s[5]), 4);
    for (int i = 0; i < 6; i++) {
        rift_sub_close(s[i]);
    }
    rift_broker_del(b);
}

/* ---- §1.7 slow consumers ---- */

RIFT_TEST(slow_plain_subscriber_capacity_one) {
    rift_broker *b = broker_with(1, 0, 0);
    rift_sub *s;
    CHECK_OK(sub(b, "slow", NULL, &s));
    rift_publish_report r;
    CHECK_OK(pub(b, "slow", &r));
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(r.slow_consumers, 0);
    CHECK_OK(pub(b, "slow", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_EQ_INT(r.slow_consumers, 1);
    /* Counted once: later publishes skip it. */
    CHECK_OK(pub(b, "slow", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_EQ_INT(r.slow_consumers, 0);
    rift_msg *m = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, &err), RIFT_ERR_SLOW_CONSUMER);
    CHECK_EQ_STR(err.text,
                 "subscriber exceeded its bounded queue and was disconnected");
    CHECK(m == NULL);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, &err), RIFT_ERR_CLOSED);
    CHECK_EQ_STR(err.text, "subscription closed");
    CHECK_EQ_INT(rift_sub_recv(s, 1000000, &m, &err), RIFT_ERR_CLOSED);
    CHECK_EQ_INT(rift_sub_pending(s), 0);
    rift_broker_stats st;
    rift_broker_get_stats(b, &st);
    CHECK_EQ_U64(st.slow_consumers, 1);
    CHECK_EQ_U64(st.msgs_out, 1);
    CHECK_EQ_U64(st.subscriptions, 0);
    rift_sub_close(s);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    rift_broker_del(b);
}

RIFT_TEST(slow_queue_member_fails_over) {
    rift_broker *b = broker_with(1, 0, 0);
    rift_sub *a, *bb;
    CHECK_OK(sub(b, "work", "q", &a));
    CHECK_OK(sub(b, "work", "q", &bb));
    rift_publish_report r;
    CHECK_OK(pub(b, "work", &r)); /* a is chosen */
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(rift_sub_pending(a), 1);
    CHECK_OK(pub(b, "work", &r)); /* b is chosen, then drains */
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(rift_sub_pending(bb), 1);
    CHECK_EQ_INT(drain(bb), 1);
    CHECK_OK(pub(b, "work", &r)); /* a is full: slow; b takes it */
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(r.slow_consumers, 1);
    CHECK_EQ_INT(rift_sub_pending(bb), 1);
    rift_msg *m;
    rift_error err;
    CHECK_EQ_INT(rift_sub_recv(a, 0, &m, &err), RIFT_ERR_SLOW_CONSUMER);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 1);
    CHECK_EQ_INT(drain(bb), 1);
    /* The group survives with one member. */
    CHECK_OK(pub(b, "work", &r));
    CHECK_EQ_INT(r.delivered, 1);
    CHECK_EQ_INT(drain(bb), 1);
    rift_sub_close(a);
    rift_sub_close(bb);
    rift_broker_del(b);
}

RIFT_TEST(queue_group_all_full_not_delivered) {
    rift_broker *b = broker_with(1, 0, 0);
    rift_sub *a, *c;
    CHECK_OK(sub(b, "w", "q", &a));
    CHECK_OK(sub(b, "w", "q", &c));
    rift_publish_report r;
    CHECK_OK(pub(b, "w", &r));
    CHECK_OK(pub(b, "w", &r));
    CHECK_OK(pub(b, "w", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_EQ_INT(r.slow_consumers, 2);
    CHECK_OK(pub(b, "w", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_EQ_INT(r.slow_consumers, 0);
    rift_sub_close(a);
    rift_sub_close(c);
    rift_broker_del(b);
}

RIFT_TEST(capacity_option_overrides_default) {
    rift_broker *b = broker_with(1, 0, 0);
    rift_sub *s;
    rift_sub_options o = {.capacity = 100};
    CHECK_OK(rift_broker_subscribe(b, "c", 1, &o, &s, NULL));
    for (int i = 0; i < 100; i++) {
        rift_publish_report r;
        CHECK_OK(pub(b, "c", &r));
        CHECK_EQ_INT(r.delivered, 1);
    }
    rift_publish_report r;
    CHECK_OK(pub(b, "c", &r));
    CHECK_EQ_INT(r.slow_consumers, 1);
    CHECK_EQ_INT(rift_sub_pending(s), 100);
    rift_msg *m;
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, NULL), RIFT_ERR_SLOW_CONSUMER);
    CHECK_EQ_INT(rift_sub_pending(s), 0);
    rift_sub_close(s);
    rift_error err;
    o.capacity = SIZE_MAX;
    CHECK_EQ_INT(rift_broker_subscribe(b, "c", 1, &o, &s, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    rift_broker_del(b);
}

RIFT_TEST(queue_keeps_order_across_growth) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s;
    rift_sub_options o = {.capacity = 4096};
    CHECK_OK(rift_broker_subscribe(b, "o", 1, &o, &s, NULL));
    uint32_t next = 0, expect = 0;
    /* Interleave publishes and receives so the ring wraps while growing. */
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < round * 3 + 1; i++, next++) {
            CHECK_OK(rift_broker_publish(
                b, "o", 1, NULL, 0, (const uint8_t *)&next, 4, NULL, NULL));
        }
        for (int i = 0; i < round * 2 + 1; i++, expect++) {
            rift_msg *m;
            CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
            uint32_t got;
            memcpy(&got, rift_msg_payload(m, NULL), 4);
            rift_msg_unref(m);
            CHECK_EQ_INT(got, expect);
        }
    }
    while (expect < next) {
        rift_msg *m;
        CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
        uint32_t got;
        memcpy(&got, rift_msg_payload(m, NULL), 4);
        rift_msg_unref(m);
        CHECK_EQ_INT(got, expect);
        expect++;
    }
    rift_sub_close(s);
    rift_broker_del(b);
}

/* ---- §1.8 lifecycle and limits ---- */

RIFT_TEST(subscription_limit) {
    rift_broker *b = broker_with(0, 0, 2);
    rift_sub *s1, *s2, *s3 = NULL;
    CHECK_OK(sub(b, "a", NULL, &s1));
    CHECK_OK(sub(b, "b.*", "q", &s2));
    rift_error err;
    CHECK_EQ_INT(rift_broker_subscribe(b, "c", 1, NULL, &s3, &err),
                 RIFT_ERR_SUBSCRIPTION_LIMIT);
    CHECK_EQ_STR(err.text, "subscription limit reached");
    CHECK(s3 == NULL);
    rift_sub_close(s1);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 1);
    CHECK_OK(sub(b, "c", NULL, &s3));
    rift_sub_close(s2);
    rift_sub_close(s3);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    rift_broker_del(b);
}

RIFT_TEST(close_unregisters_at_once) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s, *w;
    CHECK_OK(sub(b, "gone", NULL, &s));
    CHECK_OK(sub(b, "gone.>", NULL, &w));
    CHECK_OK(pub(b, "gone", NULL));
    CHECK_OK(pub(b, "gone.x", NULL));
    CHECK_EQ_INT(rift_broker_subscription_count(b), 2);
    rift_sub_close(s); /* with a message still queued */
    rift_sub_close(w);
    rift_sub_close(NULL);
    CHECK_EQ_INT(rift_broker_subscription_count(b), 0);
    rift_publish_report r;
    CHECK_OK(pub(b, "gone", &r));
    CHECK_EQ_INT(r.delivered, 0);
    CHECK_OK(pub(b, "gone.x", &r));
    CHECK_EQ_INT(r.delivered, 0);
    rift_broker_del(b);
}

RIFT_TEST(broker_del_closes_open_subscriptions) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s, *q;
    CHECK_OK(sub(b, "x", NULL, &s));
    CHECK_OK(sub(b, "x.>", "grp", &q));
    CHECK_OK(pub(b, "x", NULL));
    rift_broker_del(b);
    rift_msg *m;
    rift_error err;
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, &err), RIFT_ERR_CLOSED);
    CHECK_EQ_STR(err.text, "subscription closed");
    CHECK_EQ_INT(rift_sub_recv(q, 1000, &m, &err), RIFT_ERR_CLOSED);
    CHECK_EQ_INT(rift_sub_pending(s), 0);
    rift_sub_close(s);
    rift_sub_close(q);
}

RIFT_TEST(recv_timeout_returns_again) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s;
    CHECK_OK(sub(b, "t", NULL, &s));
    rift_msg *m = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_sub_recv(s, 0, &m, &err), RIFT_ERR_AGAIN);
    CHECK_EQ_INT(err.code, RIFT_ERR_AGAIN);
    CHECK_EQ_INT(rift_sub_recv(s, 2000000, &m, &err), RIFT_ERR_AGAIN);
    CHECK(m == NULL);
    CHECK_OK(pub(b, "t", NULL));
    CHECK_OK(rift_sub_recv(s, -1, &m, &err));
    rift_msg_unref(m);
    rift_sub_close(s);
    rift_broker_del(b);
}

RIFT_TEST(user_data_and_stats) {
    rift_broker *b = broker_with(0, 0, 0);
    int tag;
    rift_sub *s, *t;
    rift_sub_options o = {.user_data = &tag};
    CHECK_OK(rift_broker_subscribe(b, "s", 1, &o, &s, NULL));
    CHECK(rift_sub_user_data(s) == &tag);
    CHECK_OK(sub(b, "*", NULL, &t));
    CHECK_OK(rift_broker_publish(b, "s", 1, NULL, 0, P64, 10, NULL, NULL));
    CHECK_OK(rift_broker_publish(b, "s", 1, NULL, 0, P64, 20, NULL, NULL));
    rift_sub_close(t); /* its counts stay in the totals */
    rift_broker_stats st;
    rift_broker_get_stats(b, &st);
    CHECK_EQ_U64(st.subscriptions, 1);
    CHECK_EQ_U64(st.msgs_in, 2);
    CHECK_EQ_U64(st.bytes_in, 30);
    CHECK_EQ_U64(st.msgs_out, 4);
    CHECK_EQ_U64(st.bytes_out, 60);
    CHECK_EQ_U64(st.slow_consumers, 0);
    rift_sub_close(s);
    rift_broker_del(b);
}

/* ---- Messages ---- */

static int released;
static void on_release(void *ud) {
    released += *(int *)ud;
}

RIFT_TEST(msg_refcount_and_external_payload) {
    rift_msg *m;
    CHECK_OK(rift_msg_new(&m, NULL, "s.t", 3, "r", 1, P64, 5, NULL));
    size_t len;
    CHECK_EQ_STR(rift_msg_subject(m, &len), "s.t");
    CHECK_EQ_STR(rift_msg_reply(m, NULL), "r");
    CHECK(rift_msg_payload(m, &len) != P64);
    CHECK_EQ_MEM(rift_msg_payload(m, NULL), len, P64, 5);
    CHECK(rift_msg_ref(m) == m);
    rift_msg_unref(m);
    rift_msg_unref(m);
    rift_msg_unref(NULL);

    static uint8_t buf[16] = "external";
    int one = 1;
    released = 0;
    CHECK_OK(rift_msg_new_external(&m, NULL, "e", 1, NULL, 0, buf, 8,
                                   on_release, &one, NULL));
    CHECK(rift_msg_payload(m, &len) == buf);
    CHECK_EQ_INT(len, 8);
    CHECK(rift_msg_reply(m, &len) == NULL);

    /* Publishing an existing message shares it: receivers see the very
     * same payload pointer; the release runs after the last drop. */
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s1, *s2;
    CHECK_OK(sub(b, "e", NULL, &s1));
    CHECK_OK(sub(b, "*", NULL, &s2));
    rift_publish_report r;
    CHECK_OK(rift_broker_publish_msg(b, m, &r, NULL));
    CHECK_EQ_INT(r.delivered, 2);
    rift_msg_unref(m);
    CHECK_EQ_INT(released, 0);
    rift_msg *g1, *g2;
    CHECK_OK(rift_sub_recv(s1, 0, &g1, NULL));
    CHECK_OK(rift_sub_recv(s2, 0, &g2, NULL));
    CHECK(g1 == m && g2 == m);
    CHECK(rift_msg_payload(g1, NULL) == buf);
    rift_msg_unref(g1);
    CHECK_EQ_INT(released, 0);
    rift_msg_unref(g2);
    CHECK_EQ_INT(released, 1);

    /* publish_msg validates like publish. */
    CHECK_OK(rift_msg_new(&m, NULL, "bad.*", 5, NULL, 0, P64, 1, NULL));
    rift_error err;
    CHECK_EQ_INT(rift_broker_publish_msg(b, m, NULL, &err),
                 RIFT_ERR_INVALID_SUBJECT);
    CHECK_EQ_STR(err.text, "invalid subject: bad.*");
    rift_msg_unref(m);
    rift_sub_close(s1);
    rift_sub_close(s2);
    rift_broker_del(b);
}

/* ---- Allocator failures ---- */

static int alloc_budget;
static void *fail_malloc(size_t n, void *ud) {
    (void)ud;
    return alloc_budget-- > 0 ? malloc(n) : NULL;
}
static void *fail_calloc(size_t n, size_t k, void *ud) {
    (void)ud;
    return alloc_budget-- > 0 ? calloc(n, k) : NULL;
}
static void *fail_realloc(void *p, size_t n, void *ud) {
    (void)ud;
    return alloc_budget-- > 0 ? realloc(p, n) : NULL;
}
static void plain_free(void *p, void *ud) {
    (void)ud;
    free(p);
}

RIFT_TEST(allocation_failures_are_reported) {
    static const rift_mem mem = {NULL, fail_malloc, plain_free, fail_calloc,
                                 fail_realloc};
    /* Fail the Nth allocation for growing N; every failure must surface as
     * RIFT_ERR_NOMEM (or a slow consumer for a ring that cannot grow) and
     * leak nothing (ASan checks). */
    for (int n = 0; n < 40; n++) {
        alloc_budget = n;
        rift_broker_settings s;
        rift_broker_settings_default(&s);
        s.mem = &mem;
        rift_broker *b = NULL;
        int rc = rift_broker_new(&b, &s, NULL);
        if (rc != 0) {
            CHECK_EQ_INT(rc, RIFT_ERR_NOMEM);
            continue;
        }
        rift_sub *s1 = NULL, *s2 = NULL, *s3 = NULL;
        rift_sub_options o = {.queue = "q", .queue_len = 1};
        rc = rift_broker_subscribe(b, "a.b.c", 5, NULL, &s1, NULL);
        CHECK(rc == 0 || rc == RIFT_ERR_NOMEM);
        rc = rift_broker_subscribe(b, "a.*.c", 5, &o, &s2, NULL);
        CHECK(rc == 0 || rc == RIFT_ERR_NOMEM);
        rc = rift_broker_subscribe(b, "a.>", 3, NULL, &s3, NULL);
        CHECK(rc == 0 || rc == RIFT_ERR_NOMEM);
        for (int i = 0; i < 12; i++) {
            rift_publish_report r;
            rc = rift_broker_publish(b, "a.b.c", 5, NULL, 0, P64, 8, &r, NULL);
            CHECK(rc == 0 || rc == RIFT_ERR_NOMEM);
        }
        rift_sub_close(s1);
        rift_sub_close(s2);
        rift_broker_del(b);
        rift_sub_close(s3);
    }
}

static int counted_frees;
static void counting_free(void *p, void *ud) {
    (void)ud;
    counted_frees++;
    free(p);
}

RIFT_TEST(msg_new_allocates_from_the_callers_mem) {
    static const rift_mem mem = {NULL, fail_malloc, counting_free, fail_calloc,
                                 fail_realloc};
    rift_msg *m = NULL;
    rift_error err = {0};
    alloc_budget = 0;
    CHECK_EQ_INT(rift_msg_new(&m, &mem, "a", 1, NULL, 0, P64, 4, &err),
                 RIFT_ERR_NOMEM);
    CHECK_EQ_INT(err.code, RIFT_ERR_NOMEM);
    CHECK_EQ_STR(err.text, "out of memory");
    CHECK_EQ_INT(rift_msg_new_external(&m, &mem, "a", 1, NULL, 0, P64, 4, NULL,
                                       NULL, NULL),
                 RIFT_ERR_NOMEM);

    /* One allocation each, taken from |mem| and given back to it. */
    alloc_budget = 2;
    counted_frees = 0;
    CHECK_OK(rift_msg_new(&m, &mem, "a", 1, "r", 1, P64, 4, NULL));
    CHECK_EQ_INT(alloc_budget, 1);
    CHECK_EQ_MEM(rift_msg_payload(m, NULL), 4, P64, 4);
    rift_msg_unref(m);
    CHECK_EQ_INT(counted_frees, 1);
    static uint8_t buf[4] = "ext";
    int one = 1;
    released = 0;
    CHECK_OK(rift_msg_new_external(&m, &mem, "a", 1, NULL, 0, buf, 4,
                                   on_release, &one, NULL));
    CHECK_EQ_INT(alloc_budget, 0);
    rift_msg_unref(m);
    CHECK_EQ_INT(counted_frees, 2);
    CHECK_EQ_INT(released, 1);
}

RIFT_TEST(recv_batch_takes_in_order) {
    rift_broker *b = broker_with(0, 0, 0);
    rift_sub *s;
    CHECK_OK(sub(b, "batch", NULL, &s));
    for (uint32_t i = 0; i < 10; i++) {
        CHECK_OK(rift_broker_publish(b, "batch", 5, NULL, 0,
                                     (const uint8_t *)&i, 4, NULL, NULL));
    }
    rift_msg *m[8];
    rift_error err;
    CHECK_EQ_INT(rift_sub_recv_batch(s, 0, m, 0, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(rift_sub_recv_batch(s, 0, m, 8, NULL), 8);
    CHECK_EQ_INT(rift_sub_pending(s), 2);
    for (uint32_t i = 0; i < 8; i++) {
        uint32_t v;
        memcpy(&v, rift_msg_payload(m[i], NULL), 4);
        CHECK_EQ_INT(v, i);
        rift_msg_unref(m[i]);
    }
    CHECK_EQ_INT(rift_sub_recv_batch(s, -1, m, 8, NULL), 2);
    rift_msg_unref(m[0]);
    rift_msg_unref(m[1]);
    CHECK_EQ_INT(rift_sub_recv_batch(s, 1000000, m, 8, &err), RIFT_ERR_AGAIN);
    rift_broker_del(b);
    CHECK_EQ_INT(rift_sub_recv_batch(s, 0, m, 8, &err), RIFT_ERR_CLOSED);
    rift_sub_close(s);
}

RIFT_TEST(external_payload_with_reply_and_long_names) {
    /* The release record sits past the names, whatever their lengths. */
    static uint8_t buf[4] = "ext";
    char subject[301], reply[77];
    for (size_t len = 1; len < 40; len += 7) {
        memset(subject, 'a', sizeof(subject));
        memset(reply, 'r', sizeof(reply));
        size_t slen = len * 7 + 1, rlen = len % 11 + 1;
        int one = 1;
        released = 0;
        rift_msg *m;
        CHECK_OK(rift_msg_new_external(&m, NULL, subject, slen, reply, rlen,
                                       buf, 3, on_release, &one, NULL));
        size_t n;
        CHECK(rift_msg_subject(m, &n)[slen] == '\0');
        CHECK_EQ_INT(n, slen);
        const char *r = rift_msg_reply(m, &n);
        CHECK_EQ_INT(n, rlen);
        CHECK_EQ_MEM(r, n, reply, rlen);
        CHECK(r[rlen] == '\0');
        CHECK(rift_msg_payload(m, &n) == buf && n == 3);
        rift_msg_unref(m);
        CHECK_EQ_INT(released, 1);
    }
}

RIFT_TEST(a_deep_queue_keeps_order_across_ring_growth) {
    /* Past 262,144 slots the ring is mapped as huge pages; growing it
     * copies the wrapped slots like the smaller rings. */
    enum {
        FIRST = 200000,
        TAKE = 150000,
        SECOND = 250000
    };
    rift_broker *b = broker_with(1000000, 0, 0);
    rift_sub *s;
    CHECK_OK(sub(b, "deep", NULL, &s));
    uint32_t seq = 0, want = 0;
    bool ordered = true;
    for (uint32_t i = 0; i < FIRST; i++, seq++) {
        CHECK_OK(rift_broker_publish(b, "deep", 4, NULL, 0, (uint8_t *)&seq,
                                     sizeof(seq), NULL, NULL));
    }
    rift_msg *m;
    for (uint32_t i = 0; i < TAKE; i++, want++) {
        CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
        ordered = ordered &&
                  memcmp(rift_msg_payload(m, NULL), &want, sizeof(want)) == 0;
        rift_msg_unref(m);
    }
    for (uint32_t i = 0; i < SECOND; i++, seq++) {
        CHECK_OK(rift_broker_publish(b, "deep", 4, NULL, 0, (uint8_t *)&seq,
                                     sizeof(seq), NULL, NULL));
    }
    CHECK_EQ_INT(rift_sub_pending(s), FIRST - TAKE + SECOND);
    while (rift_sub_recv(s, 0, &m, NULL) == 0) {
        ordered = ordered &&
                  memcmp(rift_msg_payload(m, NULL), &want, sizeof(want)) == 0;
        want++;
        rift_msg_unref(m);
    }
    CHECK(ordered);
    CHECK_EQ_INT(want, seq);
    /* Closing with a full huge ring releases every message. */
    for (uint32_t i = 0; i < 300000; i++) {
        CHECK_OK(
            rift_broker_publish(b, "deep", 4, NULL, 0, P64, 8, NULL, NULL));
    }
    rift_sub_close(s);
    rift_broker_del(b);
}
