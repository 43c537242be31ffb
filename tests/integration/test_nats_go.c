/*
 * test_nats_go.c — the official NATS Go client (tests/interop/go) against
 * riftd's NATS listener and, for parity, against nats-server 2.9 with the
 * same principals (tests layer). Each test starts one server and runs one
 * scenario of the client; the scenario's checks are in the Go program.
 */
// labels: nats
#include "nats_fix.h"
#include "test.h"

static void scenario(nats_fix_target target, bool token_mode, const char *name,
                     int want) {
    nats_fix f = {.target = target, .token_mode = token_mode};
    const char *go = nats_fix_tool("NI_GO_CLIENT");
    CHECK(go[0] != '\0');
    CHECK(nats_fix_start(&f));
    const char *args[] = {name, NULL};
    int rc = nats_fix_client_run(&f, go, args);
    nats_fix_free(&f);
    CHECK_EQ_INT(rc, want);
}

static void riftd(const char *name) {
    scenario(NATS_FIX_RIFTD, false, name, 0);
}

static void nats_server(const char *name) {
    scenario(NATS_FIX_NATS_SERVER, false, name, 0);
}

/* The client reconnects by itself after the server restarts on its port. */
static void reconnect(nats_fix_target target) {
    nats_fix f = {.target = target};
    const char *go = nats_fix_tool("NI_GO_CLIENT");
    CHECK(go[0] != '\0');
    CHECK(nats_fix_start(&f));
    const char *args[] = {"reconnect", NULL};
    rift_proc c;
    bool started = nats_fix_client_start(&f, &c, "reconnect", go, args);
    bool told = started && rift_proc_wait_text(&c, false, "await-restart",
                                               RIFT_PROC_WAIT_MS);
    bool restarted = told && nats_fix_restart(&f);
    int rc = started ? nats_fix_client_wait(&f, &c) : -1;
    nats_fix_free(&f);
    CHECK(told);
    CHECK(restarted);
    CHECK_EQ_INT(rc, 0);
}
RIFT_TEST(go_tls_ca_riftd) {
    riftd("tls_ca");
}
RIFT_TEST(go_tls_ca_nats_server) {
    nats_server("tls_ca");
}
RIFT_TEST(go_missing_ca_riftd) {
    riftd("missing_ca");
}
RIFT_TEST(go_missing_ca_nats_server) {
    nats_server("missing_ca");
}
RIFT_TEST(go_auth_userpass_riftd) {
    riftd("auth_userpass");
}
RIFT_TEST(go_auth_userpass_nats_server) {
    nats_server("auth_userpass");
}
RIFT_TEST(go_bad_password_riftd) {
    riftd("bad_password");
}
RIFT_TEST(go_bad_password_nats_server) {
    nats_server("bad_password");
}
RIFT_TEST(go_wildcards_riftd) {
    riftd("wildcards");
}
RIFT_TEST(go_wildcards_nats_server) {
    nats_server("wildcards");
}
RIFT_TEST(go_queue_riftd) {
    riftd("queue");
}
RIFT_TEST(go_queue_nats_server) {
    nats_server("queue");
}
RIFT_TEST(go_unsub_max_riftd) {
    riftd("unsub_max");
}
RIFT_TEST(go_unsub_max_nats_server) {
    nats_server("unsub_max");
}
RIFT_TEST(go_no_echo_riftd) {
    riftd("no_echo");
}
RIFT_TEST(go_no_echo_nats_server) {
    nats_server("no_echo");
}
RIFT_TEST(go_headers_riftd) {
    riftd("headers");
}
RIFT_TEST(go_headers_nats_server) {
    nats_server("headers");
}
RIFT_TEST(go_request_reply_riftd) {
    riftd("request_reply");
}
RIFT_TEST(go_request_reply_nats_server) {
    nats_server("request_reply");
}
RIFT_TEST(go_no_responders_riftd) {
    riftd("no_responders");
}
RIFT_TEST(go_no_responders_nats_server) {
    nats_server("no_responders");
}
RIFT_TEST(go_ordered_10k_riftd) {
    riftd("ordered_10k");
}
RIFT_TEST(go_ordered_10k_nats_server) {
    nats_server("ordered_10k");
}
RIFT_TEST(go_max_payload_riftd) {
    riftd("max_payload");
}
RIFT_TEST(go_max_payload_nats_server) {
    nats_server("max_payload");
}
RIFT_TEST(go_permissions_riftd) {
    riftd("permissions");
}
RIFT_TEST(go_permissions_nats_server) {
    nats_server("permissions");
}
RIFT_TEST(go_slow_consumer_riftd) {
    riftd("slow_consumer");
}
RIFT_TEST(go_slow_consumer_nats_server) {
    nats_server("slow_consumer");
}

/* nats-server cannot mix token and user authentication: its token runs
 * get a config of their own. */
RIFT_TEST(go_auth_token_riftd) {
    riftd("auth_token");
}
RIFT_TEST(go_auth_token_nats_server) {
    scenario(NATS_FIX_NATS_SERVER, true, "auth_token", 0);
}
RIFT_TEST(go_bad_token_riftd) {
    riftd("bad_token");
}
RIFT_TEST(go_bad_token_nats_server) {
    scenario(NATS_FIX_NATS_SERVER, true, "bad_token", 0);
}

RIFT_TEST(go_reconnect_riftd) {
    reconnect(NATS_FIX_RIFTD);
}
RIFT_TEST(go_reconnect_nats_server) {
    reconnect(NATS_FIX_NATS_SERVER);
}

/* riftd's inbox rule (docs/riftd.md, "NATS inboxes"): carol has no
 * _INBOX.> grant and still gets replies; bob cannot read them. On
 * nats-server, where carol needs the grant and bob's _INBOX.> sees every
 * reply, the same attack succeeds: the scenario fails there (status 1),
 * which shows that it detects a leak. */
RIFT_TEST(go_inbox_no_grant_riftd) {
    riftd("inbox_no_grant");
}
RIFT_TEST(go_inbox_isolation_riftd) {
    riftd("inbox_isolation");
}
RIFT_TEST(go_inbox_isolation_nats_server_leaks) {
    scenario(NATS_FIX_NATS_SERVER, false, "inbox_isolation", 1);
}

/* nats.allow_plaintext on a loopback listener / nats-server without tls. */
static void plaintext(nats_fix_target target) {
    nats_fix f = {.target = target, .plaintext = true};
    const char *go = nats_fix_tool("NI_GO_CLIENT");
    CHECK(go[0] != '\0');
    CHECK(nats_fix_start(&f));
    const char *args[] = {"plaintext", NULL};
    int rc = nats_fix_client_run(&f, go, args);
    nats_fix_free(&f);
    CHECK_EQ_INT(rc, 0);
}

RIFT_TEST(go_plaintext_riftd) {
    plaintext(NATS_FIX_RIFTD);
}
RIFT_TEST(go_plaintext_nats_server) {
    plaintext(NATS_FIX_NATS_SERVER);
}

/* The server's max_payload check itself (the client's limit raised). */
RIFT_TEST(go_max_payload_server_riftd) {
    riftd("max_payload_server");
}
RIFT_TEST(go_max_payload_server_nats_server) {
    nats_server("max_payload_server");
}
