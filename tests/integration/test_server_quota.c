/*
 * test_server_quota.c — per-identity quotas of the protocol server over
 * real QUIC (subject/quota.h, docs/riftd.md "limits"): one identity's
 * share of subscriptions, connections and consumers, the reserve only
 * control identities may use, and units coming back when resources go.
 */
// labels: threads
#include "rawcli.h"

#include "codec/frame.h"
#include "rift/stream.h"
#include "subject/quota.h"

#include <stdlib.h>

static const char *const names[] = {"plugin", "other_plugin", "interop", "wide",
                                    "admin"};
static const bool control[] = {false, false, false, false, true};

/* 8 units of each kind, 3 per identity, the last 2 for control. */
static rift_quota *quota_new(void) {
    rift_quota_settings s = {
        .capacity = {8, 8, 0},
        .per_identity = {3, 3, 2},
        .control_reserve = {2, 2, 0},
        .names = names,
        .control = control,
        .count = 5,
    };
    rift_quota *q = NULL;
    rift_error err;
    return rift_quota_new(&q, &s, &err) == 0 ? q : NULL;
}

typedef struct used_wait {
    rift_quota *q;
    rift_quota_kind kind;
    uint64_t n;
} used_wait;

static bool used_is(void *arg) {
    used_wait *w = arg;
    return rift_quota_used(w->q, SIZE_MAX, w->kind) == w->n;
}

static rc_stream *subscribe(rawcli *c, const char *pattern) {
    rc_stream *s = rc_open(c);
    if (s == NULL) {
        return NULL;
    }
    uint8_t buf[512];
    size_t n = rc_build_subscribe(buf, pattern, NULL);
    return rc_send(s, buf, n, false) ? s : NULL;
}

RIFT_TEST(subscriptions_per_identity_and_control_reserve) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    rift_quota *q = quota_new();
    CHECK(q != NULL);
    f.settings.quota = q;
    CHECK(fix_start(&f));
    rawcli *w = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    rawcli *p = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    rawcli *o = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "other_plugin");
    rawcli *a = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "admin");
    CHECK(w && p && o && a);
    /* One identity: three, then its share is used up. */
    CHECK(rc_expect_ok(subscribe(w, "game.a"), 5000));
    CHECK(rc_expect_ok(subscribe(w, "game.b"), 5000));
    CHECK(rc_expect_ok(subscribe(w, "game.c"), 5000));
    CHECK(rc_expect_error(subscribe(w, "game.d"), 2,
                          "subscription limit reached", 5000));
    /* Six taken: the last two are the control reserve. */
    CHECK(rc_expect_ok(subscribe(p, "game.x"), 5000));
    CHECK(rc_expect_ok(subscribe(p, "game.y"), 5000));
    CHECK(rc_expect_ok(subscribe(o, "game.z"), 5000));
    CHECK(rc_expect_error(subscribe(o, "game.zz"), 2,
                          "subscription limit reached", 5000));
    CHECK(rc_expect_ok(subscribe(a, "game.admin1"), 5000));
    CHECK(rc_expect_ok(subscribe(a, "game.admin2"), 5000));
    CHECK_EQ_U64(rift_quota_used(q, SIZE_MAX, RIFT_QUOTA_SUBSCRIPTIONS), 8);
    CHECK_EQ_U64(rift_quota_used(q, rift_quota_find(q, "wide", 4),
                                 RIFT_QUOTA_SUBSCRIPTIONS),
                 3);
    /* The units come back with the connection. */
    rc_free(w);
    used_wait uw = {q, RIFT_QUOTA_SUBSCRIPTIONS, 5};
    CHECK(rift_test_wait_until(used_is, &uw, 5000));
    CHECK(rc_expect_ok(subscribe(o, "game.zz"), 5000));
    rc_free(p);
    rc_free(o);
    rc_free(a);
    fix_fini(&f);
    rift_quota_del(q);
}

static bool closed(void *arg) {
    return ((rawcli *)arg)->close.seen;
}

/* A known token over the identity's share: ERROR(2) on the auth stream,
 * then the connection closes with code 0 and the same reason. */
static bool refused(srvfix *f, const char *identity) {
    rawcli *c = rc_connect(f->loop, &f->addr, f->addrlen, f->ca, true);
    if (c == NULL) {
        return false;
    }
    rc_stream *s = rc_open(c);
    uint8_t buf[512];
    char token[128];
    snprintf(token, sizeof(token), "%s-token-0123456789abcdef0123456789",
             identity);
    size_t n = rc_build_auth(buf, token);
    bool ok = s != NULL && rc_send(s, buf, n, true) &&
              rc_expect_error(s, 2, "connection limit reached", 5000);
    ok = ok && rc_run(c, closed, c, 5000) && c->close.code == 0 &&
         strcmp(c->close.reason, "connection limit reached") == 0;
    if (!ok) {
        fprintf(stderr, "close seen=%d code=%llu reason=%s\n", c->close.seen,
                (unsigned long long)c->close.code, c->close.reason);
    }
    rc_free(c);
    return ok;
}

RIFT_TEST(connections_per_identity_and_control_reserve) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    rift_quota *q = quota_new();
    CHECK(q != NULL);
    f.settings.quota = q;
    CHECK(fix_start(&f));
    rawcli *c[6] = {0};
    c[0] = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    c[1] = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    c[2] = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    CHECK(c[0] && c[1] && c[2]);
    CHECK(refused(&f, "wide"));
    c[3] = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    c[4] = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    c[5] = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(c[3] && c[4] && c[5]);
    /* 6 of 8: the rest is for control identities. */
    CHECK(refused(&f, "other_plugin"));
    rawcli *a1 = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "admin");
    rawcli *a2 = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "admin");
    CHECK(a1 && a2);
    /* Refusals are not authentication failures. */
    rift_server_stats st;
    CHECK_OK(rift_server_get_stats(f.srv, &st, NULL));
    CHECK_EQ_U64(st.auth_failures, 0);
    rift_server_stats_free(&st);
    /* Everybody's connections count towards the reserve line (8 - 2):
     * three must go before a non-control identity gets in again. */
    rc_free(c[0]);
    rc_free(c[1]);
    rc_free(a1);
    used_wait uw = {q, RIFT_QUOTA_CONNECTIONS, 5};
    CHECK(rift_test_wait_until(used_is, &uw, 5000));
    rawcli *o = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "other_plugin");
    CHECK(o != NULL);
    rc_free(o);
    rc_free(a2);
    for (int i = 2; i < 6; i++) {
        rc_free(c[i]);
    }
    fix_fini(&f);
    rift_quota_del(q);
}

static rc_stream *consumer_open(rawcli *c, const char *name,
                                const char *filter) {
    rc_stream *s = rc_open(c);
    uint8_t buf[512];
    rift_ssize n = rift_frame_encode_consumer_open(
        buf, sizeof(buf), "jobs", 4, name, strlen(name), filter, strlen(filter),
        1, 30000, 128);
    return s != NULL && n > 0 && rc_send(s, buf, (size_t)n, true) ? s : NULL;
}

RIFT_TEST(consumers_per_identity_and_unreachable_filters) {
    srvfix f;
    CHECK(fix_init(&f, NULL));
    rift_quota *q = quota_new();
    CHECK(q != NULL);
    rift_stream_settings ss;
    rift_stream_settings_default(&ss);
    const char *subjects[] = {"game.jobs.>"};
    ss.subjects = subjects;
    ss.subjects_count = 1;
    rift_stream *jobs;
    rift_error err;
    CHECK_OK(rift_stream_new(&jobs, &ss, &err));
    rift_server_stream st = {"jobs", 4, jobs};
    f.settings.streams = &st;
    f.settings.stream_count = 1;
    f.settings.quota = q;
    CHECK(fix_start(&f));
    rawcli *w = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "wide");
    CHECK(w != NULL);
    /* A filter no stream subject can match would only hold a slot. */
    CHECK(rc_expect_error(consumer_open(w, "never", "game.other.>"), 2,
                          "invalid messaging configuration: consumer filter "
                          "matches none of the stream's subjects",
                          5000));
    CHECK(rc_expect_ok(consumer_open(w, "c1", "game.jobs.>"), 5000));
    CHECK(rc_expect_ok(consumer_open(w, "c2", "game.*.a"), 5000));
    CHECK(rc_expect_error(consumer_open(w, "c3", "game.jobs.x"), 2,
                          "invalid messaging configuration: stream consumer "
                          "limit reached",
                          5000));
    /* Reopening one's own consumer costs nothing. */
    CHECK(rc_expect_ok(consumer_open(w, "c1", "game.jobs.>"), 5000));
    /* Another identity has its own share. */
    rawcli *p = rc_login(f.loop, &f.addr, f.addrlen, f.ca, "plugin");
    CHECK(p != NULL);
    CHECK(rc_expect_ok(consumer_open(p, "c1", "game.jobs.>"), 5000));
    CHECK_EQ_U64(rift_quota_used(q, SIZE_MAX, RIFT_QUOTA_CONSUMERS), 3);
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(jobs, &info, &err));
    CHECK_EQ_INT(info.consumer_count, 3);
    rift_stream_info_free(&info);
    rc_free(w);
    rc_free(p);
    fix_fini(&f);
    rift_stream_del(jobs);
    rift_quota_del(q);
}
