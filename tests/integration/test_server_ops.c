/*
 * test_server_ops.c — operation streams of the protocol server over real
 * QUIC: the ACL vectors of §3.8 with the "plugin" identity, the malformed
 * frame vectors of §3.9, per-opcode validation texts (§2.9), PING as a
 * barrier with 10,000 ordered frames, queue groups across connections, the
 * 1 MiB payload limit, request/reply, and the client FIN on a publisher.
 */
// labels: threads
#include "rawcli.h"

#include <stdlib.h>

typedef struct env {
    srvfix f;
    rawcli *c;
} env;

static bool env_up(env *e, const char *identity) {
    if (!fix_init(&e->f, NULL) || !fix_start(&e->f)) {
        return false;
    }
    e->c = rc_login(e->f.loop, &e->f.addr, e->f.addrlen, e->f.ca, identity);
    return e->c != NULL;
}

static void env_down(env *e) {
    rc_free(e->c);
    fix_fini(&e->f);
}

/* Sends |bytes| on a fresh stream and expects ERROR(code, text), then the
 * end of the stream. */
static bool one_error(rawcli *c, const void *bytes, size_t len, int code,
                      const char *text) {
    rc_stream *s = rc_open(c);
    return s != NULL && rc_send(s, bytes, len, false) &&
           rc_expect_error(s, code, text, 5000) && rc_expect_end(s, 5000);
}

static bool msg_error(rawcli *c, uint8_t op, const char *subject,
                      const char *reply, size_t plen, int code,
                      const char *text) {
    uint8_t *buf = calloc(1, plen + 4200);
    size_t n = rc_build_msg(buf, op, subject, reply, NULL, 0);
    /* The payload (zeros) is appended by hand to avoid a second buffer. */
    n += plen;
    buf[0] = (uint8_t)((n - 4) >> 24);
    buf[1] = (uint8_t)((n - 4) >> 16);
    buf[2] = (uint8_t)((n - 4) >> 8);
    buf[3] = (uint8_t)(n - 4);
    bool ok = one_error(c, buf, n, code, text);
    free(buf);
    return ok;
}

RIFT_TEST(acl_vectors_plugin) {
    env e;
    CHECK(env_up(&e, "plugin"));
    uint8_t buf[256];
    size_t n = rc_build_subscribe(buf, ">", NULL);
    CHECK(one_error(e.c, buf, n, 1, "subscription not permitted"));
    rc_stream *s = rc_open(e.c);
    CHECK(rc_subscribe(s, "game.*.>", NULL));
    CHECK(msg_error(e.c, 5, "rift.control.reload", NULL, 0, 1,
                    "publication not permitted"));
    CHECK(msg_error(e.c, 4, "rift.control.reload", NULL, 0, 1,
                    "publication not permitted"));
    /* Publishing inside the grant reaches the subscription. */
    rc_stream *p = rc_open(e.c);
    CHECK(rc_publish(p, "game.region.x", "hi", 2, true));
    rc_msg m;
    CHECK(rc_expect_msg(s, &m, 5000));
    CHECK_EQ_STR(m.subject, "game.region.x");
    CHECK_EQ_STR(m.reply, "");
    CHECK_EQ_MEM(m.payload, m.payload_len, "hi", 2);
    /* More of §3: rift.events never, replies only to granted inboxes. */
    CHECK(msg_error(e.c, 5, "rift.events.player", NULL, 0, 1,
                    "publication not permitted"));
    CHECK(msg_error(e.c, 5, "game.request", "rift.control.reload", 0, 1,
                    "reply must be an authorized _INBOX subject"));
    n = rc_build_subscribe(buf, "rift.*", NULL);
    CHECK(one_error(e.c, buf, n, 1, "subscription not permitted"));
    env_down(&e);
}

RIFT_TEST(acl_vectors_control) {
    env e;
    CHECK(env_up(&e, "wide"));
    uint8_t buf[256];
    size_t n = rc_build_subscribe(buf, ">", NULL);
    CHECK(one_error(e.c, buf, n, 1, "subscription not permitted"));
    n = rc_build_subscribe(buf, "rift.control", NULL);
    CHECK(one_error(e.c, buf, n, 1, "subscription not permitted"));
    CHECK(msg_error(e.c, 5, "rift.control", NULL, 0, 1,
                    "publication not permitted"));
    rc_free(e.c);
    e.c = rc_login(e.f.loop, &e.f.addr, e.f.addrlen, e.f.ca, "admin");
    CHECK(e.c != NULL);
    rc_stream *s = rc_open(e.c);
    CHECK(rc_subscribe(s, ">", NULL));
    rc_stream *p = rc_open(e.c);
    CHECK(rc_publish(p, "rift.control.reload", NULL, 0, true));
    CHECK(msg_error(e.c, 5, "rift.events.player", NULL, 0, 1,
                    "publication not permitted"));
    env_down(&e);
}

RIFT_TEST(malformed_frames_leave_the_connection_usable) {
    env e;
    CHECK(env_up(&e, "plugin"));
    CHECK(one_error(e.c, "\0\0\0\0", 4, 2,
                    "frame length exceeds limit or is zero"));
    CHECK(one_error(e.c, "\0\x11\0\1", 4, 2,
                    "frame length exceeds limit or is zero"));
    CHECK(one_error(e.c, "\0\0\0\1\xff", 5, 2, "unknown opcode"));
    CHECK(one_error(e.c, "\0\0\0\3\6\0\x1e", 7, 2, "invalid string length"));
    rc_stream *s = rc_open(e.c);
    CHECK(rc_subscribe(s, "game.x", NULL));
    rc_stream *p = rc_open(e.c);
    CHECK(rc_publish(p, "game.x", "ok", 2, false));
    CHECK(rc_ping(p));
    rc_msg m;
    CHECK(rc_expect_msg(s, &m, 5000));
    CHECK_EQ_MEM(m.payload, m.payload_len, "ok", 2);
    env_down(&e);
}

RIFT_TEST(unknown_opcodes) {
    env e;
    CHECK(env_up(&e, "plugin"));
    /* 16 to 35 are the extensions (docs/protocol-v1.md "Extensions"). */
    static const uint8_t ops[] = {0, 36, 2, 3, 7, 11, 14, 1, 200};
    for (size_t i = 0; i < sizeof(ops); i++) {
        uint8_t f[5] = {0, 0, 0, 1, ops[i]};
        CHECK_MSG(one_error(e.c, f, 5, 2, "unknown opcode"), "opcode %u",
                  ops[i]);
    }
    /* After a valid frame on the same stream, too. */
    rc_stream *p = rc_open(e.c);
    CHECK(rc_ping(p));
    CHECK(rc_send(p, "\0\0\0\1\x0e", 5, false));
    CHECK(rc_expect_error(p, 2, "unknown opcode", 5000));
    CHECK(rc_expect_end(p, 5000));
    env_down(&e);
}

RIFT_TEST(publish_validation_texts) {
    env e;
    CHECK(env_up(&e, "wide"));
    CHECK(msg_error(e.c, 4, "", NULL, 0, 2, "invalid subject length"));
    char big[1100];
    memset(big, 'a', 1025);
    big[1025] = '\0';
    CHECK(msg_error(e.c, 4, big, NULL, 0, 2, "invalid subject length"));
    CHECK(msg_error(e.c, 4, "a..b", NULL, 0, 2, "invalid subject pattern"));
    CHECK(msg_error(e.c, 4, "a b", NULL, 0, 2, "invalid subject pattern"));
    CHECK(msg_error(e.c, 4, "a*", NULL, 0, 2, "invalid subject pattern"));
    CHECK(msg_error(e.c, 4, "*", NULL, 0, 2,
                    "publication subject must be literal"));
    CHECK(msg_error(e.c, 5, "a.>", NULL, 0, 2,
                    "publication subject must be literal"));
    CHECK(msg_error(e.c, 5, "a", "_INBOX.*", 0, 2,
                    "publication subject must be literal"));
    /* §3.9: decode_message of 00 01 2A 00 00. */
    CHECK(one_error(e.c, "\0\0\0\6\4\0\1*\0\0", 10, 2,
                    "publication subject must be literal"));
    CHECK(msg_error(e.c, 5, "a", NULL, 1048577, 2,
                    "payload exceeds 1 MiB transport limit"));
    /* The payload check comes before the ACL. */
    CHECK(msg_error(e.c, 5, "rift.events.x", NULL, 1048577, 2,
                    "payload exceeds 1 MiB transport limit"));
    CHECK(one_error(e.c, "\0\0\0\3\4\0\1", 7, 2, "invalid string length"));
    CHECK(one_error(e.c, "\0\0\0\4\4\0\1\xff", 8, 2, "string must be UTF-8"));
    CHECK(one_error(e.c, "\0\0\0\2\4\0", 6, 2, "truncated frame"));
    /* PING with a body. */
    CHECK(one_error(e.c, "\0\0\0\2\10\0", 6, 2,
                    "unexpected trailing frame bytes"));
    env_down(&e);
}

RIFT_TEST(broker_limits_surface) {
    srvfix f;
    rift_broker_settings bs;
    rift_broker_settings_default(&bs);
    bs.max_payload_bytes = 16;
    bs.max_subject_bytes = 64;
    bs.max_subscriptions = 2;
    CHECK(fix_init(&f, &bs));
    CHECK(fix_start(&f));
    rawcli *c = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    CHECK(c != NULL);
    CHECK(
        msg_error(c, 5, "a", NULL, 17, 2, "payload size 17 exceeds limit 16"));
    char subj[80];
    memset(subj, 'a', 70);
    subj[70] = '\0';
    char want[120];
    snprintf(want, sizeof(want), "invalid subject: %s", subj);
    CHECK(msg_error(c, 5, subj, NULL, 0, 2, want));
    rc_stream *s1 = rc_open(c);
    CHECK(rc_subscribe(s1, "a", NULL));
    rc_stream *s2 = rc_open(c);
    CHECK(rc_subscribe(s2, "b", NULL));
    uint8_t buf[256];
    size_t n = rc_build_subscribe(buf, "c", NULL);
    CHECK(one_error(c, buf, n, 2, "subscription limit reached"));
    rc_free(c);
    fix_fini(&f);
}

RIFT_TEST(subscribe_validation_texts) {
    env e;
    CHECK(env_up(&e, "plugin"));
    uint8_t buf[512];
    size_t n = rc_build_subscribe(buf, "", NULL);
    CHECK(one_error(e.c, buf, n, 2, "invalid subject length"));
    n = rc_build_subscribe(buf, "game.>.x", NULL);
    CHECK(one_error(e.c, buf, n, 2, "invalid subject pattern"));
    n = rc_build_subscribe(buf, "game.x", "bad queue");
    CHECK(one_error(e.c, buf, n, 2, "invalid queue group"));
    char q[100];
    memset(q, 'q', 97);
    q[97] = '\0';
    n = rc_build_subscribe(buf, "game.x", q);
    CHECK(one_error(e.c, buf, n, 2, "invalid queue group"));
    /* The ACL is checked before the queue name. */
    n = rc_build_subscribe(buf, "other", "bad queue");
    CHECK(one_error(e.c, buf, n, 1, "subscription not permitted"));
    n = rc_build_subscribe(buf, "game.x", NULL);
    buf[3]++;
    buf[n++] = 0;
    CHECK(one_error(e.c, buf, n, 2, "unexpected trailing frame bytes"));
    env_down(&e);
}

RIFT_TEST(ping_barrier_and_ordering) {
    env e;
    CHECK(env_up(&e, "plugin"));
    rc_stream *s = rc_open(e.c);
    CHECK(rc_subscribe(s, "game.seq", NULL));
    rc_stream *p = rc_open(e.c);
    enum {
        N = 10000
    };
    uint8_t *buf = malloc((size_t)N * 32);
    size_t off = 0;
    for (uint32_t i = 0; i < N; i++) {
        uint8_t pl[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16),
                         (uint8_t)(i >> 8), (uint8_t)i};
        off += rc_build_msg(buf + off, 4, "game.seq", NULL, pl, 4);
    }
    CHECK(rc_send(p, buf, off, false));
    free(buf);
    CHECK(rc_ping(p));
    /* OK means every earlier PUBLISH was routed: all are queued for the
     * subscriber by now, in order. */
    for (uint32_t i = 0; i < N; i++) {
        rc_msg m;
        CHECK(rc_expect_msg(s, &m, 5000));
        CHECK_EQ_INT(m.payload_len, 4);
        uint32_t v = (uint32_t)m.payload[0] << 24 |
                     (uint32_t)m.payload[1] << 16 |
                     (uint32_t)m.payload[2] << 8 | m.payload[3];
        CHECK_EQ_INT(v, i);
    }
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(e.f.srv, &st, NULL));
    CHECK_EQ_U64(st.msgs_in, N);
    CHECK_EQ_U64(st.msgs_out, N);
    CHECK_EQ_U64(st.bytes_in, 4 * N);
    CHECK_EQ_U64(st.subscriptions, 1);
    rift_server_stats_free(&st);
    env_down(&e);
}

RIFT_TEST(queue_groups_across_connections) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *a = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    rawcli *b = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "other_plugin");
    rawcli *p = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    CHECK(a && b && p);
    rc_stream *sa = rc_open(a), *sb = rc_open(b), *plain = rc_open(p);
    CHECK(rc_subscribe(sa, "game.jobs", "workers"));
    CHECK(rc_subscribe(sb, "game.*", "workers"));
    CHECK(rc_subscribe(plain, "game.jobs", NULL));
    rc_stream *ps = rc_open(p);
    for (int i = 0; i < 20; i++) {
        CHECK(rc_publish(ps, "game.jobs", "j", 1, true));
    }
    rc_msg m;
    for (int i = 0; i < 20; i++) {
        CHECK(rc_expect_msg(plain, &m, 5000));
    }
    for (int i = 0; i < 10; i++) {
        CHECK(rc_expect_msg(sa, &m, 5000));
        CHECK(rc_expect_msg(sb, &m, 5000));
    }
    rc_spin(a, 20);
    CHECK_EQ_INT(sa->rx_len - sa->rx_off, 0);
    CHECK_EQ_INT(sb->rx_len - sb->rx_off, 0);
    rc_free(a);
    rc_free(b);
    rc_free(p);
    fix_fini(&f);
}

RIFT_TEST(max_payload_round_trip) {
    env e;
    CHECK(env_up(&e, "plugin"));
    rc_stream *s = rc_open(e.c);
    CHECK(rc_subscribe(s, "game.big", NULL));
    size_t n = 1048576;
    uint8_t *pl = malloc(n);
    for (size_t i = 0; i < n; i++) {
        pl[i] = (uint8_t)(i * 7 + (i >> 11));
    }
    rc_stream *p = rc_open(e.c);
    CHECK(rc_publish(p, "game.big", pl, n, true));
    rc_msg m;
    CHECK(rc_expect_msg(s, &m, 10000));
    CHECK_EQ_STR(m.subject, "game.big");
    CHECK_EQ_MEM(m.payload, m.payload_len, pl, n);
    /* Twice, so the second goes through the reused paths. */
    CHECK(rc_publish(p, "game.big", pl, n, true));
    CHECK(rc_expect_msg(s, &m, 10000));
    CHECK_EQ_MEM(m.payload, m.payload_len, pl, n);
    free(pl);
    env_down(&e);
}

/* A responder on its own connection answering one request. */
static bool answer(rc_stream *rs, rc_stream *rp, const char *reply_reply) {
    rc_msg m;
    if (!rc_expect_msg(rs, &m, 5000)) {
        return false;
    }
    if (strncmp(m.reply, "_INBOX.", 7) != 0 || strlen(m.reply) != 39) {
        fprintf(stderr, "reply subject %s\n", m.reply);
        return false;
    }
    uint8_t buf[4200];
    size_t n =
        rc_build_msg(buf, 5, m.reply, reply_reply, m.payload, m.payload_len);
    return rc_send(rp, buf, n, false) && rc_expect_ok(rp, 5000);
}

RIFT_TEST(request_reply) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    CHECK(fix_start(&f));
    rawcli *r = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    rawcli *q = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "other_plugin");
    CHECK(r && q);
    rc_stream *rs = rc_open(r), *rp = rc_open(r);
    CHECK(rc_subscribe(rs, "game.echo", "responders"));
    size_t subs = rift_broker_subscription_count(f.broker);

    rc_stream *qs = rc_open(q);
    uint8_t buf[512];
    size_t n = rc_build_request(buf, 5000, "game.echo", "\0\1bin\xff", 6);
    CHECK(rc_send(qs, buf, n, true));
    CHECK(answer(rs, rp, NULL));
    rc_msg m;
    CHECK(rc_expect_msg(qs, &m, 5000));
    CHECK(strncmp(m.subject, "_INBOX.", 7) == 0);
    CHECK_EQ_INT(strlen(m.subject), 39);
    for (size_t i = 7; i < 39; i++) {
        CHECK((m.subject[i] >= '0' && m.subject[i] <= '9') ||
              (m.subject[i] >= 'a' && m.subject[i] <= 'f'));
    }
    CHECK_EQ_STR(m.reply, "");
    CHECK_EQ_MEM(m.payload, m.payload_len, "\0\1bin\xff", 6);
    CHECK(rc_expect_end(qs, 5000));
    CHECK(fix_wait_subs(&f, subs, 2000));

    /* The responder's reply field is passed on. */
    qs = rc_open(q);
    n = rc_build_request(buf, 5000, "game.echo", "x", 1);
    CHECK(rc_send(qs, buf, n, true));
    CHECK(answer(rs, rp, "_INBOX.more"));
    CHECK(rc_expect_msg(qs, &m, 5000));
    CHECK_EQ_STR(m.reply, "_INBOX.more");

    /* No responders, at once. */
    qs = rc_open(q);
    n = rc_build_request(buf, 5000, "game.nobody", "x", 1);
    CHECK(rc_send(qs, buf, n, true));
    CHECK(rc_expect_error(qs, 2, "no responders available", 2000));
    CHECK(rc_expect_end(qs, 5000));

    /* A subscriber that never answers: the request times out. */
    rc_stream *idle = rc_open(r);
    CHECK(rc_subscribe(idle, "game.idle", NULL));
    qs = rc_open(q);
    n = rc_build_request(buf, 100, "game.idle", "x", 1);
    rift_tstamp t0 = rift_now_ns();
    CHECK(rc_send(qs, buf, n, true));
    CHECK(rc_expect_error(qs, 2, "request timed out", 5000));
    CHECK(rift_now_ns() - t0 >= 90000000ull);
    CHECK(fix_wait_subs(&f, subs + 1, 2000));

    /* Validation: timeout range first, then the subject and the ACL. */
    n = rc_build_request(buf, 0, "game.echo", NULL, 0);
    CHECK(one_error(q, buf, n, 2, "request timeout must be 1..120000 ms"));
    n = rc_build_request(buf, 120001, "", NULL, 0);
    CHECK(one_error(q, buf, n, 2, "request timeout must be 1..120000 ms"));
    CHECK(one_error(q, "\0\0\0\7\x09\0\0\0\0\0\x09", 11, 2,
                    "request timeout must be 1..120000 ms"));
    CHECK(one_error(q, "\0\0\0\7\x09\0\0\0\1\0\x09", 11, 2,
                    "invalid string length"));
    CHECK(one_error(q, "\0\0\0\3\x09\0\0", 7, 2, "truncated frame"));
    n = rc_build_request(buf, 10, "game.*", NULL, 0);
    CHECK(one_error(q, buf, n, 2, "publication subject must be literal"));
    n = rc_build_request(buf, 10, "rift.control.status", NULL, 0);
    CHECK(one_error(q, buf, n, 1, "publication not permitted"));
    rc_free(r);
    rc_free(q);
    fix_wait_subs(&f, 0, 2000);
    fix_fini(&f);
}

RIFT_TEST(client_fin_on_publisher) {
    env e;
    CHECK(env_up(&e, "plugin"));
    rc_stream *p = rc_open(e.c);
    CHECK(rc_publish(p, "game.a", "x", 1, true));
    CHECK(rc_send(p, NULL, 0, true));
    CHECK(rc_expect_error(p, 2, "QUIC stream closed", 5000));
    CHECK(rc_expect_end(p, 5000));
    /* A stream finished without any frame. */
    rc_stream *q = rc_open(e.c);
    CHECK(rc_send(q, NULL, 0, true));
    CHECK(rc_expect_error(q, 2, "QUIC stream closed", 5000));
    /* FIN inside a frame. */
    rc_stream *r = rc_open(e.c);
    CHECK(rc_send(r, "\0\0\0\5\4\0", 6, true));
    CHECK(rc_expect_error(r, 2, "QUIC stream closed", 5000));
    /* One-shot operations end with FIN, and later frames are ignored. */
    rc_stream *s = rc_open(e.c);
    uint8_t buf[256];
    size_t n = rc_build_request(buf, 1000, "game.none", NULL, 0);
    memcpy(buf + n, "\0\0\0\1\10", 5);
    CHECK(rc_send(s, buf, n + 5, false));
    CHECK(rc_expect_error(s, 2, "no responders available", 5000));
    CHECK(rc_expect_end(s, 5000));
    env_down(&e);
}
