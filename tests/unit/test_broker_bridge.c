/*
 * test_broker_bridge.c — the broker's bridge for a cluster backbone
 * (broker layer, broker_face.h): interest replayed and followed, local
 * publishes forwarded after local routing with queue groups left to the
 * backbone, deliveries from the backbone to one pattern, one group member
 * or an inbox, the no-responders mark, and NATS header blocks carried both
 * ways behind a zero origin (docs/cluster.md).
 */
#include "broker/broker_face.h"
#include "broker/msg_ext.h"
#include "test.h"

#include <stdio.h>

typedef struct rec {
    char log[2048];
    size_t forwarded;
    size_t last_local;
    size_t last_headers_len;
    char headers[128];
    bool answer;
} rec;

static void on_interest(void *ud, const char *p, size_t plen, const char *q,
                        size_t qlen, int delta) {
    rec *r = ud;
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof r->log - n, "%c%.*s%s%.*s;",
             delta > 0 ? '+' : '-', (int)plen, p, q ? "/" : "", (int)qlen,
             q ? q : "");
}

static bool on_forward(void *ud, const char *s, size_t slen, const char *reply,
                       size_t rlen, const uint8_t *h, size_t hlen,
                       const uint8_t *p, size_t plen, size_t local) {
    (void)s;
    (void)slen;
    (void)reply;
    (void)rlen;
    (void)p;
    (void)plen;
    rec *r = ud;
    r->forwarded++;
    r->last_local = local;
    r->last_headers_len = hlen;
    if (hlen > 0 && hlen < sizeof r->headers) {
        memcpy(r->headers, h, hlen);
        r->headers[hlen] = 0;
    }
    return r->answer;
}

static size_t drain(rift_sub *s) {
    size_t n = 0;
    rift_msg *m;
    while (rift_sub_recv(s, 0, &m, NULL) == 0) {
        rift_msg_unref(m);
        n++;
    }
    return n;
}

RIFT_TEST(interest_replayed_and_followed) {
    rift_broker *b = NULL;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *a = NULL, *g = NULL, *c = NULL;
    CHECK_OK(rift_broker_subscribe(b, "a.*", 3, NULL, &a, NULL));
    rift_sub_options qo = {.queue = "w", .queue_len = 1};
    CHECK_OK(rift_broker_subscribe(b, "j.>", 3, &qo, &g, NULL));
    rec r = {.answer = true};
    rift_broker_bridge br = {
        .ud = &r, .interest = on_interest, .forward = on_forward};
    rift_broker_set_bridge(b, &br);
    CHECK_EQ_STR(r.log, "+j.>/w;+a.*;");
    r.log[0] = '\0';
    CHECK_OK(rift_broker_subscribe(b, "c", 1, NULL, &c, NULL));
    rift_sub_close(c);
    CHECK_EQ_STR(r.log, "+c;-c;");
    rift_broker_set_bridge(b, NULL);
    r.log[0] = '\0';
    rift_sub_close(a);
    CHECK_EQ_STR(r.log, "");
    rift_sub_close(g);
    rift_broker_del(b);
}

RIFT_TEST(local_publish_skips_groups_and_forwards) {
    rift_broker *b = NULL;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *plain = NULL, *member = NULL;
    CHECK_OK(rift_broker_subscribe(b, "j.*", 3, NULL, &plain, NULL));
    rift_sub_options qo = {.queue = "w", .queue_len = 1};
    CHECK_OK(rift_broker_subscribe(b, "j.*", 3, &qo, &member, NULL));
    rec r = {.answer = true};
    rift_broker_bridge br = {
        .ud = &r, .interest = on_interest, .forward = on_forward};
    rift_broker_set_bridge(b, &br);
    rift_publish_report rep;
    CHECK_OK(rift_broker_publish(b, "j.x", 3, NULL, 0, (const uint8_t *)"1", 1,
                                 &rep, NULL));
    CHECK_EQ_INT(rep.delivered, 1);
    CHECK_EQ_INT(rep.forwarded, 1);
    CHECK_EQ_INT(r.forwarded, 1);
    CHECK_EQ_INT(r.last_local, 1);
    CHECK_EQ_INT(drain(plain), 1);
    CHECK_EQ_INT(drain(member), 0); /* the backbone picks the member */
    /* Nobody local: still forwarded; a refusing backbone reports 0. */
    r.answer = false;
    CHECK_OK(rift_broker_publish(b, "none", 4, NULL, 0, NULL, 0, &rep, NULL));
    CHECK_EQ_INT(rep.delivered, 0);
    CHECK_EQ_INT(rep.forwarded, 0);
    CHECK_EQ_INT(r.forwarded, 2);
    rift_sub_close(plain);
    rift_sub_close(member);
    rift_broker_set_bridge(b, NULL);
    rift_broker_del(b);
}

RIFT_TEST(bridged_delivery_targets) {
    rift_broker *b = NULL;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *star = NULL, *lit = NULL, *m1 = NULL, *m2 = NULL;
    CHECK_OK(rift_broker_subscribe(b, "o.*", 3, NULL, &star, NULL));
    CHECK_OK(rift_broker_subscribe(b, "o.a", 3, NULL, &lit, NULL));
    rift_sub_options qo = {.queue = "w", .queue_len = 1};
    CHECK_OK(rift_broker_subscribe(b, "o.*", 3, &qo, &m1, NULL));
    CHECK_OK(rift_broker_subscribe(b, "o.>", 3, &qo, &m2, NULL));
    rec r = {.answer = true};
    rift_broker_bridge br = {
        .ud = &r, .interest = on_interest, .forward = on_forward};
    rift_broker_set_bridge(b, &br);
    rift_publish_report rep;
    /* One pattern's subscribers only, never forwarded again. */
    rift_bridge_target t = {.pattern = "o.*", .pattern_len = 3};
    CHECK_OK(rift_broker_publish_bridged(b, &t, "o.a", 3, NULL, 0, NULL, 0,
                                         &rep, NULL));
    CHECK_EQ_INT(rep.delivered, 1);
    CHECK_EQ_INT(rep.forwarded, 0);
    CHECK_EQ_INT(r.forwarded, 0);
    CHECK_EQ_INT(drain(star), 1);
    CHECK_EQ_INT(drain(lit), 0);
    /* One member of the group, whichever pattern matched. */
    t = (rift_bridge_target){.queue = "w", .queue_len = 1};
    for (int i = 0; i < 4; i++) {
        CHECK_OK(rift_broker_publish_bridged(b, &t, "o.a", 3, NULL, 0, NULL, 0,
                                             &rep, NULL));
        CHECK_EQ_INT(rep.delivered, 1);
    }
    CHECK_EQ_INT(drain(m1) + drain(m2), 4);
    CHECK_EQ_INT(drain(star) + drain(lit), 0);
    /* An inbox reply: every plain match, marked no-responders. */
    rift_sub *inbox = NULL;
    CHECK_OK(rift_broker_subscribe(b, "_INBOX.x", 8, NULL, &inbox, NULL));
    t = (rift_bridge_target){.no_responders = true};
    CHECK_OK(rift_broker_publish_bridged(b, &t, "_INBOX.x", 8, NULL, 0, NULL, 0,
                                         &rep, NULL));
    rift_msg *m = NULL;
    CHECK_OK(rift_sub_recv(inbox, 0, &m, NULL));
    CHECK(rift_msg_no_responders(m));
    rift_msg_unref(m);
    rift_sub *subs[] = {star, lit, m1, m2, inbox};
    for (size_t i = 0; i < 5; i++) {
        rift_sub_close(subs[i]);
    }
    rift_broker_set_bridge(b, NULL);
    rift_broker_del(b);
}

RIFT_TEST(headers_cross_the_bridge) {
    rift_broker *b = NULL;
    CHECK_OK(rift_broker_new(&b, NULL, NULL));
    rift_sub *s = NULL;
    CHECK_OK(rift_broker_subscribe(b, "h.*", 3, NULL, &s, NULL));
    rec r = {.answer = true};
    rift_broker_bridge br = {
        .ud = &r, .interest = on_interest, .forward = on_forward};
    rift_broker_set_bridge(b, &br);
    static const char hdr[] = "NATS/1.0\r\nA: 1\r\n\r\n";
    const uint8_t origin[RIFT_MSG_EXT_ORIGIN] = {7};
    /* A NATS face's publish: only the headers travel, not its origin. */
    CHECK_OK(rift_broker_publish_ext(
        b, "h.a", 3, NULL, 0, origin, sizeof origin, (const uint8_t *)hdr,
        sizeof hdr - 1, (const uint8_t *)"p", 1, NULL, NULL));
    CHECK_EQ_INT(r.last_headers_len, sizeof hdr - 1);
    CHECK_EQ_STR(r.headers, hdr);
    CHECK_EQ_INT(drain(s), 1);
    CHECK_OK(rift_broker_publish(b, "h.a", 3, NULL, 0, (const uint8_t *)"p", 1,
                                 NULL, NULL));
    CHECK_EQ_INT(r.last_headers_len, 0);
    CHECK_EQ_INT(drain(s), 1);
    /* From the backbone: the block is a zero origin, then the headers. */
    rift_bridge_target t = {.pattern = "h.*",
                            .pattern_len = 3,
                            .headers = (const uint8_t *)hdr,
                            .headers_len = sizeof hdr - 1};
    CHECK_OK(rift_broker_publish_bridged(b, &t, "h.a", 3, NULL, 0,
                                         (const uint8_t *)"xy", 2, NULL, NULL));
    rift_msg *m = NULL;
    CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
    size_t elen = 0, plen = 0;
    const uint8_t *ext = rift_msg_ext(m, &elen);
    CHECK_EQ_INT(elen, RIFT_MSG_EXT_ORIGIN + sizeof hdr - 1);
    static const uint8_t zero[RIFT_MSG_EXT_ORIGIN];
    CHECK(memcmp(ext, zero, sizeof zero) == 0);
    CHECK(memcmp(ext + RIFT_MSG_EXT_ORIGIN, hdr, sizeof hdr - 1) == 0);
    const uint8_t *pay = rift_msg_payload(m, &plen);
    CHECK_EQ_INT(plen, 2);
    CHECK(memcmp(pay, "xy", 2) == 0);
    rift_msg_unref(m);
    /* Without headers a bridged message has no block at all. */
    t.headers = NULL;
    t.headers_len = 0;
    CHECK_OK(rift_broker_publish_bridged(b, &t, "h.a", 3, NULL, 0, NULL, 0,
                                         NULL, NULL));
    CHECK_OK(rift_sub_recv(s, 0, &m, NULL));
    CHECK(rift_msg_ext(m, &elen) == NULL);
    rift_msg_unref(m);
    rift_sub_close(s);
    rift_broker_set_bridge(b, NULL);
    rift_broker_del(b);
}
