/*
 * test_cluster_backbone_tls.c — a JetStream backbone behind TLS and a
 * password (integration tests, docs/cluster.md "Configuration"): three
 * nats-servers with TLS on their client ports (a CA made for the test) and
 * `authorization { user, password }`, three riftd with tls:// URLs,
 * `tls.ca` and the password from an environment variable. A replicated
 * stream (replicas = 3) and live traffic work across the nodes; the
 * password appears neither in a log nor in `rift status`. (A node with a
 * wrong password or another CA is not tested yet: libnats closes such a
 * connection and riftd then fails; see docs/cluster.md.)
 */
// labels: threads slow
#include "cluster_fix.h"
#include "rift/client.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM   "orders"
#define READY_MS 60000
#define WAIT_MS  20000
#define N_PUB    20

static const char streams_lua[] =
    "{ orders = { subjects = { 'orders.>' }, replicas = 3 } }";

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int spub(rift_client *c, const char *payload, uint64_t *seq,
                rift_error *err) {
    rift_stored st = {0};
    int rc = rift_client_stream_publish(
        c, STREAM, strlen(STREAM), "orders.created", 14, NULL, 0,
        (const uint8_t *)payload, strlen(payload), &st, err);
    *seq = rc == 0 ? st.sequence : 0;
    return rc;
}

static rift_client_sub *sub(rift_client *c, const char *pattern) {
    rift_client_sub *s = NULL;
    rift_error err = {0};
    if (rift_client_subscribe(c, pattern, strlen(pattern), NULL, 0, &s, &err) !=
        0) {
        fprintf(stderr, "  subscribe %s: %s\n", pattern, err.text);
        return NULL;
    }
    return s;
}

static bool pub(rift_client *c, const char *subject, const char *payload) {
    rift_error err = {0};
    return rift_client_publish(c, subject, strlen(subject),
                               (const uint8_t *)payload, strlen(payload),
                               &err) == 0;
}

/* One message within |ms| into |buf|; false if none. */
static bool next(rift_client_sub *s, int ms, char *buf, size_t cap) {
    rift_msg *m = NULL;
    rift_error err = {0};
    if (rift_client_sub_recv(s, ms * RIFT_MSEC, &m, &err) != 0) {
        return false;
    }
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    snprintf(buf, cap, "%.*s", (int)len, (const char *)p);
    rift_msg_unref(m);
    return true;
}

/* The whole `rift status` of node |c| as text (caller frees), or NULL. */
static char *status_text(rift_client *c) {
    json_t *v = riftd_fix_control(c, "status", "{}", NULL);
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return text;
}

static bool no_secret(const char *text) {
    return text != NULL && strstr(text, RIFTD_FIX_BACKBONE_PW) == NULL &&
           strstr(text, RIFTD_FIX_TOKEN2) == NULL;
}

static void good_body(cluster_fix *f) {
    rift_client *c1 = f->n[0].c, *c2 = f->n[1].c;
    rift_error err = {0};
    for (int i = 0; i < N_PUB; i++) {
        char p[16];
        snprintf(p, sizeof p, "m%d", i);
        uint64_t seq = 0;
        CHECK_MSG(spub(c1, p, &seq, &err) == 0, "publish %d: %s", i, err.text);
        CHECK_EQ_U64(seq, (uint64_t)i + 1);
    }
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "orders.>";
    cfg.filter_len = strlen(cfg.filter);
    cfg.start_sequence = 1;
    CHECK_MSG(rift_client_consumer_open(c2, STREAM, strlen(STREAM), "reader", 6,
                                        &cfg, &err) == 0,
              "consumer open: %s", err.text);
    int got = 0;
    int64_t end = now_ms() + WAIT_MS;
    while (got < N_PUB && now_ms() < end) {
        rift_client_delivery d[N_PUB];
        size_t n = 0;
        if (rift_client_fetch(c2, STREAM, strlen(STREAM), "reader", 6, N_PUB, d,
                              &n, &err) != 0) {
            CHECK_MSG(false, "fetch: %s", err.text);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            size_t plen;
            const uint8_t *p = rift_msg_payload(d[i].msg, &plen);
            char want[16];
            snprintf(want, sizeof want, "m%d", got);
            CHECK_EQ_U64(d[i].sequence, (uint64_t)got + 1);
            CHECK(plen == strlen(want) && memcmp(p, want, plen) == 0);
            CHECK(rift_client_ack(c2, STREAM, strlen(STREAM), "reader", 6,
                                  d[i].sequence, &err) == 0);
            rift_msg_unref(d[i].msg);
            got++;
        }
    }
    CHECK_EQ_INT(got, N_PUB);

    /* Live pub/sub across nodes: publish until node 3's interest crossed
     * the backbone, then one exact message. */
    rift_client_sub *s = sub(f->n[2].c, "live.x");
    CHECK(s != NULL);
    char buf[64] = "";
    bool seen = false;
    end = now_ms() + WAIT_MS;
    while (s != NULL && !seen && now_ms() < end) {
        CHECK(pub(c1, "live.x", "probe"));
        seen = next(s, 200, buf, sizeof buf);
    }
    CHECK(seen);
    while (s != NULL && next(s, 100, buf, sizeof buf)) {
    }
    CHECK(pub(c1, "live.x", "hello"));
    CHECK(s != NULL && next(s, 10000, buf, sizeof buf));
    CHECK_EQ_STR(buf, "hello");
    if (s != NULL) {
        rift_client_sub_close(s);
    }

    /* Neither the logs nor `rift status` show the password; status names
     * the tls:// server. */
    for (int i = 0; i < CLUSTER_FIX_NODES; i++) {
        char *log = rift_proc_read(f->n[i].r.p.err);
        CHECK_MSG(no_secret(log), "r%d log shows the password", i + 1);
        free(log);
        char *st = status_text(f->n[i].c);
        CHECK_MSG(no_secret(st), "r%d status shows the password", i + 1);
        CHECK(st != NULL && strstr(st, "\"backbone\":\"up\"") != NULL);
        CHECK(st != NULL && strstr(st, "tls://127.0.0.1") != NULL);
        free(st);
    }
}

RIFT_TEST(tls_and_password_backbone) {
    cluster_fix f;
    cluster_fix_opts o = {.jetstream = true,
                          .streams = streams_lua,
                          .backbone_tls = true,
                          .backbone_auth = true};
    bool up = cluster_fix_start_opts(&f, &o) &&
              cluster_fix_wait_replicated(&f, READY_MS);
    if (up) {
        good_body(&f);
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}
