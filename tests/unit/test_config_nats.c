/*
 * test_config_nats.c — the `nats` table of the Lua configuration
 * (src/lua/config_nats_table.c, src/config/config_nats.h): defaults, the
 * plaintext and TLS rules, the anonymous principal, ceilings taken from
 * messaging, and the NATS-only configuration.
 */
#include "lua/config_eval.h"
#include "test.h"

#include <stdlib.h>

static int load(const char *src, rift_config *cfg, rift_error *err) {
    return rift_config_load_string(cfg, src, strlen(src), "test.lua", true,
                                   NULL, err);
}

static const char *load_error(const char *src) {
    static rift_error err;
    rift_config cfg;
    memset(&err, 0, sizeof(err));
    int rc = load(src, &cfg, &err);
    rift_config_free(&cfg);
    return rc == 0 ? "" : err.text;
}

#define CHECK_REJECTS(src, text) CHECK_EQ_STR(load_error(src), text)
#define CHECK_ACCEPTS(src)       CHECK_EQ_STR(load_error(src), "")

#define PRINCIPALS                                                             \
 "principals = { { name = 'app', token_env = 'T', publish = { 'a.>' }, "       \
 "subscribe = { 'a.>' } } }"

RIFT_TEST(defaults_and_nats_only) {
    rift_config cfg;
    rift_error err = {0};
    const char *src = "return { messaging = { " PRINCIPALS " }, nats = { "
                      "listen = '127.0.0.1:4222', allow_plaintext = true } }";
    CHECK_OK(load(src, &cfg, &err));
    const rift_config_nats *n = &cfg.nats;
    CHECK_EQ_STR(n->listen, "127.0.0.1:4222");
    CHECK(cfg.messaging.listen == NULL);
    CHECK_EQ_U64(n->max_payload, 1048576);
    CHECK_EQ_U64(n->max_pending, 64u << 20);
    CHECK_EQ_U64(n->max_control_line, 4096);
    CHECK_EQ_U64(n->ping_interval_s, 120);
    CHECK_EQ_U64(n->max_pings_out, 2);
    CHECK_EQ_U64(n->auth_timeout_s, 2);
    CHECK_EQ_U64(n->write_deadline_s, 10);
    CHECK_EQ_U64(n->max_connections, 1024);
    CHECK_EQ_U64(n->producer_pause_ms, 10);
    rift_config_free(&cfg);
    /* Without nats, principals still need the QUIC listener (§5.1). */
    CHECK_REJECTS("return { messaging = { " PRINCIPALS " } }",
                  "messaging.listen: required when TLS or principals are "
                  "configured");
    /* No nats table, or one without listen: no listener. */
    CHECK_ACCEPTS("return { nats = {} }");
}

RIFT_TEST(plaintext_only_on_loopback) {
    CHECK_REJECTS("return { nats = { listen = '0.0.0.0:4222', "
                  "allow_plaintext = true } }",
                  "nats.allow_plaintext: only with a loopback nats.listen "
                  "address");
    CHECK_ACCEPTS("return { nats = { listen = '[::1]:4222', "
                  "allow_plaintext = true } }");
    CHECK_REJECTS("return { nats = { listen = '127.0.0.1:4222' } }",
                  "nats.tls: a certificate and private_key are required "
                  "(here or in messaging), or allow_plaintext on a loopback "
                  "address");
    CHECK_REJECTS("return { nats = { listen = '0.0.0.0:1', tls = { "
                  "certificate = 'c.pem' } } }",
                  "nats.tls: certificate and private_key go together");
    CHECK_ACCEPTS("return { nats = { listen = '0.0.0.0:1', tls = { "
                  "certificate = 'c.pem', private_key = 'k.pem' } } }");
    CHECK_REJECTS("return { nats = { listen = 'localhost:1' } }",
                  "nats.listen: expected an ip:port socket address");
}

RIFT_TEST(limits_and_anonymous) {
    CHECK_REJECTS("return { messaging = { max_payload_bytes = 1000 }, nats = "
                  "{ listen = '127.0.0.1:1', allow_plaintext = true, "
                  "max_payload = 1001 } }",
                  "nats.max_payload: at most messaging.max_payload_bytes "
                  "(1000)");
    CHECK_REJECTS("return { nats = { listen = '127.0.0.1:1', allow_plaintext "
                  "= true, max_payload = 4096, max_pending = 4095 } }",
                  "nats.max_pending: at least nats.max_payload");
    CHECK_REJECTS("return { nats = { listen = '127.0.0.1:1', allow_plaintext "
                  "= true, max_control_line = 100 } }",
                  "nats.max_control_line: expected at least 256 bytes");
    CHECK_REJECTS("return { nats = { listen = '127.0.0.1:1', allow_plaintext "
                  "= true, anonymous = 'ghost' } }",
                  "nats.anonymous: no messaging principal is named ghost");
    CHECK_ACCEPTS("return { messaging = { " PRINCIPALS " }, nats = { listen = "
                  "'127.0.0.1:1', allow_plaintext = true, anonymous = 'app', "
                  "ping_interval = 5, max_pings_out = 3, auth_timeout = 1, "
                  "write_deadline = 2, max_connections = 10 } }");
    CHECK_REJECTS("return { nats = { port = 4222 } }",
                  "nats.port: unknown field (expected listen, tls, "
                  "allow_plaintext, anonymous, max_payload, max_pending, "
                  "max_control_line, ping_interval, max_pings_out, "
                  "auth_timeout, write_deadline, max_connections, "
                  "producer_pause_ms)");
    CHECK_REJECTS(
        "return { nats = { listen = '127.0.0.1:1', allow_plaintext "
        "= true, producer_pause_ms = 1001 } }",
        "nats.producer_pause_ms: expected 0..=1000 milliseconds (0: never "
        "pause)");
    CHECK_ACCEPTS("return { nats = { listen = '127.0.0.1:1', allow_plaintext "
                  "= true, producer_pause_ms = 0 } }");
}
