/*
 * test_cluster_backbone_tls.c — a JetStream backbone behind TLS and a
 * password (integration tests, docs/cluster.md "Configuration"): three
 * nats-servers with TLS on their client ports (a CA made for the test) and
 * `authorization { user, password }`, three riftd with tls:// URLs,
 * `tls.ca` and the password from an environment variable. A replicated
 * stream (replicas = 3) and live traffic work across the nodes; the
 * password appears neither in a log nor in `rift status`. A fourth riftd
 * with a wrong password, and one whose tls.ca is another CA, start, serve
 * local traffic, report the backbone down, refuse replicated publishes
 * at once with "backbone unavailable" and log why without the secret.
 */
// labels: threads slow
#include "cluster_client.h"
#include "cluster_fix.h"
#include "rift/client.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_PUB 20

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
        CHECK_MSG(cl_spub(c1, CL_SUBJECT, p, &seq, &err) == 0, "publish %d: %s",
                  i, err.text);
        CHECK_EQ_U64(seq, (uint64_t)i + 1);
    }
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = "orders.>";
    cfg.filter_len = strlen(cfg.filter);
    cfg.start_sequence = 1;
    CHECK_MSG(rift_client_consumer_open(c2, CL_STREAM, strlen(CL_STREAM),
                                        "reader", 6, &cfg, &err) == 0,
              "consumer open: %s", err.text);
    int got = 0;
    int64_t end = cl_now_ms() + CL_WAIT_MS;
    while (got < N_PUB && cl_now_ms() < end) {
        rift_client_delivery d[N_PUB];
        size_t n = 0;
        if (rift_client_fetch(c2, CL_STREAM, strlen(CL_STREAM), "reader", 6,
                              N_PUB, d, &n, &err) != 0) {
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
            CHECK(rift_client_ack(c2, CL_STREAM, strlen(CL_STREAM), "reader", 6,
                                  d[i].sequence, &err) == 0);
            rift_msg_unref(d[i].msg);
            got++;
        }
    }
    CHECK_EQ_INT(got, N_PUB);

    /* Live pub/sub across nodes: publish until node 3's interest crossed
     * the backbone, then one exact message. */
    rift_client_sub *s = cl_sub(f->n[2].c, "live.x", NULL);
    CHECK(s != NULL);
    char buf[64] = "";
    bool seen = false;
    end = cl_now_ms() + CL_WAIT_MS;
    while (s != NULL && !seen && cl_now_ms() < end) {
        CHECK(cl_pub(c1, "live.x", "probe"));
        seen = cl_next(s, 200, buf, sizeof buf);
    }
    CHECK(seen);
    while (s != NULL && cl_next(s, 100, buf, sizeof buf)) {
    }
    CHECK(cl_pub(c1, "live.x", "hello"));
    CHECK(s != NULL && cl_next(s, 10000, buf, sizeof buf));
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

/* A fourth riftd on nats-server 1 with |password_env| and |ca|: it starts,
 * serves local traffic, reports the backbone down, refuses a replicated
 * publish at once, and its log contains |why| and no secret. */
static void bad_node(cluster_fix *f, const char *password_env, const char *ca,
                     const char *why) {
    char cfg[4096];
    snprintf(cfg, sizeof cfg,
             "return {\n  log = 'info',\n  messaging = {\n"
             "    listen = '127.0.0.1:0', certificate = 'tls/server.pem',\n"
             "    private_key = 'tls/server.key',\n"
             "    streams = %s,\n"
             "    principals = { { name = 'app', token_env = "
             "'RIFT_TEST_TOKEN',\n"
             "      publish = { '>' }, subscribe = { '>' }, control = true } "
             "} },\n"
             "  cluster = { node = 'bad',\n"
             "    nats = { servers = { 'tls://127.0.0.1:%d' },\n"
             "      user = 'riftd', password_env = '%s',\n"
             "      tls = { ca = '%s' } } },\n}\n",
             CL_ORDERS_LUA, f->n[0].client_port, password_env, ca);
    riftd_fix r;
    CHECK(riftd_fix_init(&r, cfg));
    bool started = riftd_fix_start(&r, NULL);
    if (!started) {
        char *log = rift_proc_read(r.p.err);
        fprintf(stderr, "  riftd did not start:\n%s\n", log ? log : "(none)");
        free(log);
    }
    CHECK(started);
    rift_client *c = NULL;
    if (started) {
        bool said = rift_proc_wait_text(&r.p, true, why, RIFT_PROC_WAIT_MS);
        if (!said) {
            char *log = rift_proc_read(r.p.err);
            fprintf(stderr, "  log without \"%s\":\n%s\n", why,
                    log ? log : "(none)");
            free(log);
        }
        CHECK(said);
        CHECK(riftd_fix_connect(&r, RIFTD_FIX_TOKEN, &c));
    }
    if (c != NULL) {
        rift_client_sub *s = cl_sub(c, "a.b", NULL);
        CHECK(s != NULL);
        CHECK(cl_pub(c, "a.b", "local"));
        char buf[64] = "";
        CHECK(s != NULL && cl_next(s, 10000, buf, sizeof buf));
        CHECK_EQ_STR(buf, "local");
        if (s != NULL) {
            rift_client_sub_close(s);
        }
        char *st = status_text(c);
        CHECK_MSG(st != NULL && strstr(st, "\"backbone\":\"down\"") != NULL,
                  "status: %s", st ? st : "(none)");
        CHECK(no_secret(st));
        free(st);
        rift_error err = {0};
        uint64_t seq = 0;
        int64_t t0 = cl_now_ms();
        CHECK(cl_spub(c, CL_SUBJECT, "lost", &seq, &err) != 0);
        CHECK_MSG(strstr(err.text, "backbone unavailable") != NULL,
                  "publish: %s", err.text);
        CHECK(no_secret(err.text));
        CHECK_MSG(cl_now_ms() - t0 < 5000, "took %lld ms",
                  (long long)(cl_now_ms() - t0));
        rift_client_del(c);
    }
    char *log = rift_proc_read(r.p.err);
    CHECK_MSG(no_secret(log), "log shows a secret");
    if (log == NULL || strstr(log, why) == NULL) {
        fprintf(stderr, "  log without \"%s\":\n%s\n", why,
                log ? log : "(none)");
    }
    free(log);
    if (started) {
        CHECK_EQ_INT(riftd_fix_stop(&r), 0);
    }
    riftd_fix_free(&r);
}

RIFT_TEST(tls_and_password_backbone) {
    cluster_fix f;
    cluster_fix_opts o = {.jetstream = true,
                          .streams = CL_ORDERS_LUA,
                          .backbone_tls = true,
                          .backbone_auth = true};
    bool up = cluster_fix_start_opts(&f, &o) &&
              cluster_fix_wait_replicated(&f, CL_READY_MS);
    if (up) {
        good_body(&f);
        /* RIFT_TEST_TOKEN2 holds another value than the password. */
        char ca[800];
        snprintf(ca, sizeof ca, "%s/ca.pem", f.tls_dir);
        bad_node(&f, "RIFT_TEST_TOKEN2", ca, "(Authentication");
        /* tls/ca.pem of the riftd's own directory: another CA. */
        bad_node(&f, "RIFT_TEST_BACKBONE_PASSWORD", "tls/ca.pem", "(SSL");
    }
    bool down = cluster_fix_stop(&f);
    CHECK(up);
    CHECK(down);
}
