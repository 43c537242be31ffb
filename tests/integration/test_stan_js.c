/*
 * test_stan_js.c — the second NATS Streaming client stack,
 * node-nats-streaming 0.3.2 on nats@1.4.12 (tests/interop/js/stan-interop.js),
 * against riftd started with the migration configuration: a principal, the
 * NATS face with it as the anonymous principal, and the streaming service
 * on a file store in the test's directory. Each test starts one riftd and
 * runs one scenario of the client; the checks are in the client program.
 */
// labels: nats
#include "riftd_fix.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The grants a STAN client needs (docs/streaming.md): it publishes
 * requests, PubMsgs and acks under _STAN.> and answers heartbeats on its
 * _INBOX.>; it receives replies and deliveries on _INBOX.> and PubAcks on
 * _STAN.acks.<nuid>. */
static const char config[] =
    "return {\n"
    "  data_dir = 'data',\n"
    "  messaging = { principals = { { name = 'stan',\n"
    "    token_env = 'RIFT_TEST_TOKEN',\n"
    "    publish = { '_STAN.>', '_INBOX.>' },\n"
    "    subscribe = { '_INBOX.>', '_STAN.acks.>' } } } },\n"
    "  nats = { listen = '127.0.0.1:0', anonymous = 'stan',\n"
    "           allow_plaintext = true },\n"
    "  streaming = { store = 'file', dir = 'stan', sync_on_write = true },\n"
    "}\n";

/* Copies the NATS address riftd logged ("rift: NATS on IP:PORT") into
 * |url| as nats://IP:PORT. */
static bool nats_url(riftd_fix *f, char *url, size_t cap) {
    char *log = rift_proc_read(f->p.err);
    const char *key = "rift: NATS on ";
    const char *at = log ? strstr(log, key) : NULL;
    bool ok = false;
    if (at != NULL) {
        at += strlen(key);
        int len = (int)strcspn(at, " \r\n");
        int n = snprintf(url, cap, "nats://%.*s", len, at);
        ok = len > 0 && n > 0 && (size_t)n < cap;
    }
    if (!ok) {
        fprintf(stderr, "  riftd logged no \"%s<address>\":\n%s\n", key,
                log ? log : "(no log)");
    }
    free(log);
    return ok;
}

static void scenario(const char *name) {
    const char *node = getenv("NI_NODE");
    const char *js = getenv("NI_STAN_JS_CLIENT");
    if (node == NULL || node[0] == '\0') {
        SKIP("node is not installed (scripts/deps.sh --test installs it)");
    }
    CHECK(js != NULL && js[0] != '\0');
    riftd_fix f;
    CHECK(riftd_fix_init(&f, config));
    CHECK(riftd_fix_start(&f, NULL));
    char url[96], env_url[128];
    CHECK(nats_url(&f, url, sizeof url));
    snprintf(env_url, sizeof env_url, "NI_URL=%s", url);
    const char *env[] = {env_url, "NI_STAN_CLUSTER=test-cluster", NULL};
    const char *args[] = {js, name, NULL};
    rift_proc c;
    CHECK(rift_proc_start(&c, node, f.dir, name, args, env, NULL, 0));
    int rc = rift_proc_wait(&c, 2 * RIFT_PROC_WAIT_MS);
    if (rc != 0) {
        char *out = rift_proc_read(c.out);
        char *err = rift_proc_read(c.err);
        char *log = rift_proc_read(f.p.err);
        fprintf(stderr,
                "  client exited with %d\n  stdout:\n%s\n  stderr:\n%s\n"
                "  riftd:\n%s\n",
                rc, out ? out : "", err ? err : "", log ? log : "");
        free(out);
        free(err);
        free(log);
    }
    int stopped = riftd_fix_stop(&f);
    riftd_fix_free(&f);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(stopped, 0);
}

RIFT_TEST(stan_js_publish_ack) {
    scenario("publish_ack");
}
RIFT_TEST(stan_js_start_positions) {
    scenario("start_positions");
}
RIFT_TEST(stan_js_start_time_delta) {
    scenario("start_time_delta");
}
RIFT_TEST(stan_js_durable_resume) {
    scenario("durable_resume");
}
RIFT_TEST(stan_js_unsubscribe_deletes_durable) {
    scenario("unsubscribe_deletes_durable");
}
RIFT_TEST(stan_js_queue_group) {
    scenario("queue_group");
}
RIFT_TEST(stan_js_ack_wait_redelivery) {
    scenario("ack_wait_redelivery");
}
RIFT_TEST(stan_js_max_in_flight) {
    scenario("max_in_flight");
}
RIFT_TEST(stan_js_duplicate_client_id) {
    scenario("duplicate_client_id");
}
RIFT_TEST(stan_js_close) {
    scenario("close");
}
