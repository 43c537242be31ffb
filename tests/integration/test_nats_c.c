/*
 * test_nats_c.c — the official NATS C client (nats.c, tests/interop/c) against
 * riftd's NATS listener and, for parity, against nats-server 2.9 with the same
 * principals (tests layer). Each test starts one server and runs one scenario
 * of the client; the checks are in the client program.
 */
// labels: nats
#include "nats_fix.h"
#include "test.h"

#include <stdlib.h>

#include <string.h>

/* The nats.c client, built by CMake against pkg-config libnats. */
static bool client(const char *name, const char **prog, const char **args) {
    *prog = nats_fix_tool("NI_C_CLIENT");
    args[0] = name;
    return (*prog)[0] != '\0';
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

RIFT_TEST(c_tls_ca_riftd) {
    riftd("tls_ca");
}
RIFT_TEST(c_tls_ca_nats_server) {
    nats_server("tls_ca");
}
RIFT_TEST(c_missing_ca_riftd) {
    riftd("missing_ca");
}
RIFT_TEST(c_missing_ca_nats_server) {
    nats_server("missing_ca");
}
RIFT_TEST(c_auth_userpass_riftd) {
    riftd("auth_userpass");
}
RIFT_TEST(c_auth_userpass_nats_server) {
    nats_server("auth_userpass");
}
RIFT_TEST(c_wildcards_riftd) {
    riftd("wildcards");
}
RIFT_TEST(c_wildcards_nats_server) {
    nats_server("wildcards");
}
RIFT_TEST(c_queue_riftd) {
    riftd("queue");
}
RIFT_TEST(c_queue_nats_server) {
    nats_server("queue");
}
RIFT_TEST(c_headers_riftd) {
    riftd("headers");
}
RIFT_TEST(c_headers_nats_server) {
    nats_server("headers");
}
RIFT_TEST(c_request_reply_riftd) {
    riftd("request_reply");
}
RIFT_TEST(c_request_reply_nats_server) {
    nats_server("request_reply");
}
RIFT_TEST(c_no_responders_riftd) {
    riftd("no_responders");
}
RIFT_TEST(c_no_responders_nats_server) {
    nats_server("no_responders");
}
RIFT_TEST(c_permissions_riftd) {
    riftd("permissions");
}
RIFT_TEST(c_permissions_nats_server) {
    nats_server("permissions");
}
RIFT_TEST(c_reconnect_riftd) {
    riftd("reconnect");
}
RIFT_TEST(c_reconnect_nats_server) {
    nats_server("reconnect");
}

/* nats-server cannot mix token and user authentication: its token runs
 * get a config of their own. */
RIFT_TEST(c_auth_token_riftd) {
    riftd("auth_token");
}
RIFT_TEST(c_auth_token_nats_server) {
    scenario(NATS_FIX_NATS_SERVER, true, "auth_token");
}
RIFT_TEST(c_bad_token_riftd) {
    riftd("bad_token");
}
RIFT_TEST(c_bad_token_nats_server) {
    scenario(NATS_FIX_NATS_SERVER, true, "bad_token");
}
