/*
 * test_nats_js.c — the official NATS JavaScript client (nats.js v2,
 * tests/interop/js) against riftd's NATS listener and, for parity, against
 * nats-server 2.9 with the same principals (tests layer). Each test starts one
 * server and runs one scenario of the client; the checks are in the client
 * program.
 */
// labels: nats
#include "nats_fix.h"
#include "test.h"

#include <stdlib.h>

#include <string.h>

/* node with tests/interop/js/nats-interop.mjs (its node_modules from
 * `npm ci`, which scripts/deps.sh --test runs). */
static bool client(const char *name, const char **prog, const char **args) {
    *prog = nats_fix_tool("NI_NODE");
    args[0] = nats_fix_tool("NI_JS_CLIENT");
    args[1] = name;
    return (*prog)[0] != '\0' && args[0][0] != '\0';
}

static void scenario(nats_fix_target target, bool token_mode,
                     const char *name) {
    const char *prog = NULL;
    const char *args[3] = {NULL, NULL, NULL};
    CHECK(client(name, &prog, args));
    nats_fix_scenario(target, token_mode, name, prog, args);
}

static void riftd(const char *name) {
    scenario(NATS_FIX_RIFTD, false, name);
}

static void nats_server(const char *name) {
    scenario(NATS_FIX_NATS_SERVER, false, name);
}

RIFT_TEST(js_tls_ca_riftd) {
    riftd("tls_ca");
}
RIFT_TEST(js_tls_ca_nats_server) {
    nats_server("tls_ca");
}
RIFT_TEST(js_missing_ca_riftd) {
    riftd("missing_ca");
}
RIFT_TEST(js_missing_ca_nats_server) {
    nats_server("missing_ca");
}
RIFT_TEST(js_auth_userpass_riftd) {
    riftd("auth_userpass");
}
RIFT_TEST(js_auth_userpass_nats_server) {
    nats_server("auth_userpass");
}
RIFT_TEST(js_wildcards_riftd) {
    riftd("wildcards");
}
RIFT_TEST(js_wildcards_nats_server) {
    nats_server("wildcards");
}
RIFT_TEST(js_queue_riftd) {
    riftd("queue");
}
RIFT_TEST(js_queue_nats_server) {
    nats_server("queue");
}
RIFT_TEST(js_headers_riftd) {
    riftd("headers");
}
RIFT_TEST(js_headers_nats_server) {
    nats_server("headers");
}
RIFT_TEST(js_request_reply_riftd) {
    riftd("request_reply");
}
RIFT_TEST(js_request_reply_nats_server) {
    nats_server("request_reply");
}
RIFT_TEST(js_no_responders_riftd) {
    riftd("no_responders");
}
RIFT_TEST(js_no_responders_nats_server) {
    nats_server("no_responders");
}
RIFT_TEST(js_permissions_riftd) {
    riftd("permissions");
}
RIFT_TEST(js_permissions_nats_server) {
    nats_server("permissions");
}
RIFT_TEST(js_reconnect_riftd) {
    riftd("reconnect");
}
RIFT_TEST(js_reconnect_nats_server) {
    nats_server("reconnect");
}

/* nats-server cannot mix token and user authentication: its token runs
 * get a config of their own. */
RIFT_TEST(js_auth_token_riftd) {
    riftd("auth_token");
}
RIFT_TEST(js_auth_token_nats_server) {
    scenario(NATS_FIX_NATS_SERVER, true, "auth_token");
}
RIFT_TEST(js_bad_token_riftd) {
    riftd("bad_token");
}
RIFT_TEST(js_bad_token_nats_server) {
    scenario(NATS_FIX_NATS_SERVER, true, "bad_token");
}
