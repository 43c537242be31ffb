/*
 * test_config.c — unit tests of the Lua configuration (daemon layer): one
 * vector per validation text of docs/protocol-v1.md §5, defaults, the
 * reference's example blocks, tokens at start-up.
 */
#include "lua/config_eval.h"
#include "test.h"

#include <stdlib.h>

static int load(const char *src, rift_config *cfg, rift_error *err) {
    return rift_config_load_string(cfg, src, strlen(src), "test.lua", true,
                                   NULL, err);
}

/* Evaluates |src| and returns the error text ("" when it loaded). */
static const char *load_error(const char *src) {
    static rift_error err;
    rift_config cfg;
    memset(&err, 0, sizeof(err));
    int rc = load(src, &cfg, &err);
    rift_config_free(&cfg);
    if (rc == 0) {
        return "";
    }
    return err.text;
}

#define CHECK_REJECTS(src, text) CHECK_EQ_STR(load_error(src), text)
#define CHECK_ACCEPTS(src)       CHECK_EQ_STR(load_error(src), "")

/* A listener with everything it needs, for tests that vary one key. */
#define LISTEN                                                                 \
 "listen = '127.0.0.1:7443', certificate = 'c.pem', private_key = 'k.pem', "   \
 "principals = { { name = 'p', token_env = 'P_TOKEN' } }, "

/* ---- messaging: presence and shape ---- */

RIFT_TEST(messaging_absent_nil_false_give_defaults) {
    const char *srcs[] = {"return {}", "return { messaging = nil }",
                          "return { messaging = false }",
                          "return { messaging = {} }", ""};
    for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
        rift_config cfg;
        rift_error err = {0};
        CHECK_OK(load(srcs[i], &cfg, &err));
        rift_config_messaging *m = &cfg.messaging;
        CHECK(m->listen == NULL);
        CHECK_EQ_U64(m->subscription_capacity, 1024);
        CHECK_EQ_U64(m->max_payload_bytes, 1048576);
        CHECK_EQ_U64(m->max_subject_bytes, 1024);
        CHECK_EQ_U64(m->max_subscriptions, 65536);
        CHECK_EQ_U64(m->max_connections, 1024);
        CHECK_EQ_U64(m->max_streams_per_connection, 128);
        CHECK_EQ_U64(m->handshake_timeout_ms, 5000);
        CHECK_EQ_U64(m->io_timeout_ms, 30000);
        CHECK_EQ_INT(m->n_principals, 0);
        CHECK_EQ_INT(m->n_streams, 0);
        rift_config_free(&cfg);
    }
}

RIFT_TEST(messaging_true_rejected) {
    CHECK_REJECTS("return { messaging = true }",
                  "messaging: expected a table, nil or false");
    CHECK_REJECTS("return { messaging = 'x' }",
                  "messaging: expected a table, nil or false");
}

RIFT_TEST(unknown_fields_name_their_path) {
    CHECK_REJECTS(
        "return { messaging = { bogus = 1 } }",
        "messaging.bogus: unknown field (expected listen, certificate, "
        "private_key, principals, subscription_capacity, max_payload_bytes, "
        "max_subject_bytes, max_subscriptions, max_connections, "
        "max_streams_per_connection, handshake_timeout_ms, io_timeout_ms, "
        "subscriptions, streams)");
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'p', token_env = 'P', token = 'x' } } } }",
                  "messaging.principals.token: unknown field (expected name, "
                  "token_env, publish, subscribe, control, streams)");
    CHECK_REJECTS("return { messaging = { subscriptions = { { subject = 'a', "
                  "group = 'g' } } }, on_message = function() end }",
                  "messaging.subscriptions.group: unknown field (expected "
                  "subject, queue)");
    CHECK_REJECTS("return { messaging = { streams = { jobs = { max_age = 1 } "
                  "} } }",
                  "messaging.streams.jobs.max_age: unknown field (expected "
                  "subjects, max_messages, max_bytes, max_payload_bytes, "
                  "max_consumers, sync_on_write, storage_path, max_age_ms, "
                  "replicas)");
    CHECK_REJECTS(
        "return { listen = '0.0.0.0:1' }",
        "listen: unknown field (expected messaging, plugins, "
        "data_dir, log, on_message, quic, monitor, limits, nats, streaming, "
        "cluster)");
    CHECK_REJECTS("return { messaging = { 1 } }",
                  "messaging[1]: unknown field (expected listen, certificate, "
                  "private_key, principals, subscription_capacity, "
                  "max_payload_bytes, max_subject_bytes, max_subscriptions, "
                  "max_connections, max_streams_per_connection, "
                  "handshake_timeout_ms, io_timeout_ms, subscriptions, "
                  "streams)");
    /* The lexically smallest unknown key is named, whatever the hash order. */
    CHECK_REJECTS("return { zz = 1, aa = 2, messaging = {} }",
                  "aa: unknown field (expected messaging, plugins, data_dir, "
                  "log, on_message, quic, monitor, limits, nats, streaming, "
                  "cluster)");
}

/* ---- integers ---- */

RIFT_TEST(integer_ranges_and_texts) {
    static const struct {
        const char *key;
        const char *max;
    } keys[] = {
        {"subscription_capacity", "1000000"},
        {"max_payload_bytes", "16777216"},
        {"max_subject_bytes", "1024"},
        {"max_subscriptions", "1000000"},
        {"max_connections", "1000000"},
        {"max_streams_per_connection", "65535"},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char expect[200], src[200];
        snprintf(expect, sizeof(expect),
                 "messaging.%s: expected an integer in 1..=%s", keys[i].key,
                 keys[i].max);
        const char *bad[] = {"0", "-1", "1.5", "'64'", "true", "1e300"};
        for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
            snprintf(src, sizeof(src), "return { messaging = { %s = %s } }",
                     keys[i].key, bad[j]);
            CHECK_REJECTS(src, expect);
        }
        snprintf(src, sizeof(src), "return { messaging = { %s = %s + 1 } }",
                 keys[i].key, keys[i].max);
        CHECK_REJECTS(src, expect);
        /* The maximum itself, as an integral float too. */
        snprintf(src, sizeof(src), "return { messaging = { %s = %s.0 } }",
                 keys[i].key, keys[i].max);
        CHECK_ACCEPTS(src);
    }
}

RIFT_TEST(timeouts_are_milliseconds) {
    CHECK_REJECTS("return { messaging = { io_timeout_ms = 0 } }",
                  "messaging.io_timeout_ms: expected 1..=86400000 "
                  "milliseconds");
    CHECK_REJECTS("return { messaging = { handshake_timeout_ms = 86400001 } }",
                  "messaging.handshake_timeout_ms: expected 1..=86400000 "
                  "milliseconds");
    CHECK_REJECTS("return { messaging = { io_timeout_ms = 2.5 } }",
                  "messaging.io_timeout_ms: expected 1..=86400000 "
                  "milliseconds");
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load("return { messaging = { io_timeout_ms = 86400000, "
                  "handshake_timeout_ms = 1 } }",
                  &cfg, &err));
    CHECK_EQ_U64(cfg.messaging.io_timeout_ms, 86400000);
    CHECK_EQ_U64(cfg.messaging.handshake_timeout_ms, 1);
    rift_config_free(&cfg);
}

RIFT_TEST(max_subject_bytes_at_least_64) {
    CHECK_REJECTS("return { messaging = { max_subject_bytes = 63 } }",
                  "messaging.max_subject_bytes: at least 64 bytes are "
                  "required for Rift control and request inbox subjects");
    CHECK_ACCEPTS("return { messaging = { max_subject_bytes = 64 } }");
}

/* ---- listener, TLS, principals ---- */

RIFT_TEST(listener_rules) {
    CHECK_REJECTS("return { messaging = { certificate = 'c.pem' } }",
                  "messaging.listen: required when TLS or principals are "
                  "configured");
    CHECK_REJECTS("return { messaging = { private_key = 'k.pem' } }",
                  "messaging.listen: required when TLS or principals are "
                  "configured");
    CHECK_REJECTS("return { messaging = { principals = { { name = 'p', "
                  "token_env = 'P' } } } }",
                  "messaging.listen: required when TLS or principals are "
                  "configured");
    CHECK_REJECTS("return { messaging = { listen = '127.0.0.1:7443', "
                  "principals = { { name = 'p', token_env = 'P' } } } }",
                  "messaging.listen: certificate and private_key are "
                  "required for QUIC TLS");
    CHECK_REJECTS("return { messaging = { listen = '127.0.0.1:7443', "
                  "certificate = 'c.pem', principals = { { name = 'p', "
                  "token_env = 'P' } } } }",
                  "messaging.listen: certificate and private_key are "
                  "required for QUIC TLS");
    CHECK_REJECTS("return { messaging = { listen = '127.0.0.1:7443', "
                  "certificate = 'c.pem', private_key = 'k.pem' } }",
                  "messaging.principals: grant at least one authenticated "
                  "principal for a QUIC listener");
    CHECK_REJECTS("return { messaging = { listen = '127.0.0.1:7443', "
                  "certificate = 'c.pem', private_key = 'k.pem', principals "
                  "= {} } }",
                  "messaging.principals: grant at least one authenticated "
                  "principal for a QUIC listener");
    CHECK_REJECTS("return { messaging = { " LISTEN
                  "max_payload_bytes = 1048577 } }",
                  "messaging.max_payload_bytes: QUIC supports at most "
                  "1048576 bytes");
    /* Without a listener the broker takes up to 16 MiB. */
    CHECK_ACCEPTS("return { messaging = { max_payload_bytes = 16777216 } }");
    CHECK_REJECTS("return { messaging = { " LISTEN " certificate = '' } }",
                  "messaging.certificate: path must not be empty");
    CHECK_REJECTS("return { messaging = { " LISTEN " private_key = '' } }",
                  "messaging.private_key: path must not be empty");
}

RIFT_TEST(listen_addresses) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load("return { messaging = { " LISTEN " } }", &cfg, &err));
    CHECK_EQ_STR(cfg.messaging.listen, "127.0.0.1:7443");
    CHECK_EQ_INT(cfg.messaging.listen_addr.ss_family, AF_INET);
    rift_config_free(&cfg);
    CHECK_OK(load("return { messaging = { " LISTEN " listen = '[::1]:0' } }",
                  &cfg, &err));
    CHECK_EQ_INT(cfg.messaging.listen_addr.ss_family, AF_INET6);
    rift_config_free(&cfg);
    const char *bad[] = {"'localhost:7443'", "'127.0.0.1'", "'127.0.0.1:'",
                         "'::1:7443'",       "'[::1]'",     "'1.2.3.4:65536'",
                         "'1.2.3.4:-1'",     "7443",        "'[::1]:x'"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char src[300];
        snprintf(src, sizeof(src),
                 "return { messaging = { " LISTEN " listen = %s } }", bad[i]);
        const char *want =
            bad[i][0] == '\''
                ? "messaging.listen: expected an ip:port socket address"
                : "messaging.listen: expected a string";
        CHECK_REJECTS(src, want);
    }
}

RIFT_TEST(principal_names) {
    const char *text = "messaging.principals: names must be unique and "
                       "contain 1..=96 letters, digits, dots, underscores or "
                       "hyphens";
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { "
                  "token_env = 'P' } } } }",
                  text);
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'a b', token_env = 'P' } } } }",
                  text);
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'', token_env = 'P' } } } }",
                  text);
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "string.rep('a', 97), token_env = 'P' } } } }",
                  text);
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'a', token_env = 'P' }, { name = 'a', token_env = 'Q' } } "
                  "} }",
                  text);
    CHECK_ACCEPTS("return { messaging = { " LISTEN " principals = { { name = "
                  "string.rep('a', 96), token_env = 'P' }, { name = "
                  "'A.b_c-9', token_env = 'Q' } } } }");
}

RIFT_TEST(plugin_and_principal_names_are_disjoint) {
    CHECK_REJECTS("return { messaging = { " LISTEN " }, plugins = { { name = "
                  "'p', grants = { subscribe = { 'a.>' } } } } }",
                  "plugins.p: a messaging principal has the same name; "
                  "plugins and principals need distinct names");
    CHECK_REJECTS("rift.plugin('p') return { messaging = { " LISTEN " } }",
                  "plugins.p: a messaging principal has the same name; "
                  "plugins and principals need distinct names");
    CHECK_ACCEPTS("return { messaging = { " LISTEN " }, plugins = { 'q' } }");
}

RIFT_TEST(limits_table) {
    rift_config cfg;
    rift_error err;
    const char *src = "return { messaging = { max_connections = 100, "
                      "max_subscriptions = 1000 }, limits = { per_identity = "
                      "{ connections = 5, consumers = 7 }, control_reserve = "
                      "{ subscriptions = 0 } } }";
    CHECK_OK(load(src, &cfg, &err));
    rift_config_limits l;
    rift_config_limits_resolve(&cfg, &l);
    CHECK_EQ_U64(l.connections, 5);
    CHECK_EQ_U64(l.subscriptions, 500); /* half of max_subscriptions */
    CHECK_EQ_U64(l.consumers, 7);
    CHECK_EQ_U64(l.reserve_connections, 6); /* 100 / 16 */
    CHECK_EQ_U64(l.reserve_subscriptions, 0);
    rift_config_free(&cfg);
    /* Defaults of the defaults: 1024 connections, 65,536 subscriptions,
     * a stream of 128 consumers. */
    CHECK_OK(load("return {}", &cfg, &err));
    rift_config_limits_resolve(&cfg, &l);
    CHECK_EQ_U64(l.connections, 512);
    CHECK_EQ_U64(l.subscriptions, 32768);
    CHECK_EQ_U64(l.consumers, 64);
    CHECK_EQ_U64(l.reserve_connections, 16);
    CHECK_EQ_U64(l.reserve_subscriptions, 64);
    rift_config_free(&cfg);
    CHECK_REJECTS("return { limits = 1 }", "limits: expected a table");
    CHECK_REJECTS("return { limits = { quota = {} } }",
                  "limits.quota: unknown field (expected per_identity, "
                  "control_reserve)");
    CHECK_REJECTS("return { limits = { per_identity = { connections = 0 } } }",
                  "limits.per_identity.connections: expected an integer in "
                  "1..=1000000");
    CHECK_REJECTS("return { limits = { control_reserve = { subscriptions = "
                  "-1 } } }",
                  "limits.control_reserve.subscriptions: expected an integer "
                  "in 0..=1000000");
    CHECK_REJECTS("return { limits = { control_reserve = { consumers = 1 } } }",
                  "limits.control_reserve.consumers: unknown field (expected "
                  "connections, subscriptions)");
    CHECK_REJECTS("return { messaging = { max_connections = 4 }, limits = { "
                  "control_reserve = { connections = 4 } } }",
                  "limits.control_reserve.connections: must be below "
                  "messaging.max_connections");
    /* The messaging block keeps the original's schema. */
    CHECK(strncmp(load_error("return { messaging = { limits = {} } }"),
                  "messaging.limits: unknown field", 31) == 0);
}

RIFT_TEST(principal_token_env) {
    const char *text = "messaging.principals.token_env: expected a unique "
                       "environment variable name";
    const char *bad[] = {"nil", "''", "'1ABC'", "'A-B'", "'A B'", "5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char src[300];
        snprintf(src, sizeof(src),
                 "return { messaging = { " LISTEN
                 " principals = { { name = 'p', token_env = %s } } } }",
                 bad[i]);
        CHECK_REJECTS(src, text);
    }
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'a', token_env = 'P' }, { name = 'b', token_env = 'P' } } "
                  "} }",
                  text);
    CHECK_ACCEPTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'a', token_env = '_x9' } } } }");
}

RIFT_TEST(principal_grants) {
    rift_config cfg;
    rift_error err = {0};
    /* The control principal of the reference's end-to-end test (§7.3). */
    CHECK_OK(load("return { messaging = { listen = '127.0.0.1:0', "
                  "certificate = 'cert.pem', private_key = 'key.pem', "
                  "principals = { { name = 'plugin', token_env = "
                  "'RIFT_PLUGIN_TOKEN', publish = { 'plugin.>', "
                  "'rift.control.*', '_INBOX.>' }, subscribe = { 'plugin.>', "
                  "'rift.events.>', '_INBOX.>' }, control = true } } } }",
                  &cfg, &err));
    rift_config_principal *p = &cfg.messaging.principals[0];
    CHECK_EQ_STR(p->name, "plugin");
    CHECK_EQ_STR(p->token_env, "RIFT_PLUGIN_TOKEN");
    CHECK_EQ_INT(p->n_publish, 3);
    CHECK_EQ_STR(p->publish[1], "rift.control.*");
    CHECK_EQ_INT(p->n_subscribe, 3);
    CHECK_EQ_STR(p->subscribe[1], "rift.events.>");
    CHECK(p->control);
    CHECK(p->token == NULL);
    rift_config_free(&cfg);
    /* Defaults: nothing granted, no control. */
    CHECK_OK(load("return { messaging = { " LISTEN " } }", &cfg, &err));
    CHECK_EQ_INT(cfg.messaging.principals[0].n_publish, 0);
    CHECK_EQ_INT(cfg.messaging.principals[0].n_subscribe, 0);
    CHECK(!cfg.messaging.principals[0].control);
    rift_config_free(&cfg);
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'p', token_env = 'P', control = 1 } } } }",
                  "messaging.principals.control: expected a boolean");
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { { name = "
                  "'p', token_env = 'P', publish = 'a.>' } } } }",
                  "messaging.principals.publish: expected a list");
    CHECK_REJECTS("return { messaging = { " LISTEN " principals = { 'p' } } }",
                  "messaging.principals: expected a list of tables");
}

/* ---- patterns ---- */

RIFT_TEST(config_pattern_rule) {
    static const char *bad[] = {"a..b", ".a", "a.", "x.>.y", "x.a*",
                                "a b",  "",   "é",  "a\\tb", "a>"};
    static const char *shown[] = {"a..b", ".a", "a.", "x.>.y", "x.a*",
                                  "a b",  "",   "é",  "a\\tb", "a>"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char src[300], want[300];
        /* The §5 text, then whose grant it is. */
        snprintf(want, sizeof(want),
                 "messaging: invalid subject pattern \"%s\"; use tokens, * or "
                 "terminal > (principal \"p\", subscribe)",
                 shown[i]);
        snprintf(src, sizeof(src),
                 "return { messaging = { " LISTEN
                 " principals = { { name = 'p', token_env = 'P', subscribe = "
                 "{ 'ok.>', \"%s\" } } } } }",
                 bad[i]);
        CHECK_REJECTS(src, want);
        snprintf(want, sizeof(want),
                 "messaging: invalid subject pattern \"%s\"; use tokens, * or "
                 "terminal >",
                 shown[i]);
        snprintf(src, sizeof(src),
                 "return { on_message = function() end, messaging = { "
                 "subscriptions = { { subject = \"%s\" } } } }",
                 bad[i]);
        CHECK_REJECTS(src, want);
        snprintf(src, sizeof(src),
                 "return { messaging = { streams = { s = { subjects = { \"%s\" "
                 "} } } } }",
                 bad[i]);
        CHECK_REJECTS(src, want);
    }
    /* Longer than max_subject_bytes. */
    CHECK_REJECTS("return { messaging = { max_subject_bytes = 64, streams = { "
                  "s = { subjects = { string.rep('a', 65) } } } } }",
                  "messaging: invalid subject pattern "
                  "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                  "aaaaaaa\"; use tokens, * or terminal >");
    CHECK_ACCEPTS("return { messaging = { max_subject_bytes = 64, streams = { "
                  "s = { subjects = { string.rep('a', 64), '*.b.>', '>' } } } "
                  "} }");
    /* A quote and a newline are escaped, keeping the message on one line. */
    CHECK_REJECTS("return { messaging = { streams = { s = { subjects = { "
                  "'a\"\\n' } } } } }",
                  "messaging: invalid subject pattern \"a\\\"\\n\"; use "
                  "tokens, * or terminal >");
    CHECK(rift_config_pattern_valid("rift.control.*", 14, 1024));
    CHECK(!rift_config_pattern_valid("rift.\x7f", 6, 1024));
}

/* ---- Lua subscriptions ---- */

RIFT_TEST(lua_subscriptions) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load("return { on_message = function(m) end, messaging = { "
                  "subscriptions = { { subject = 'plugin.echo', queue = "
                  "'echoers' }, { subject = 'plugin.>' } } } }",
                  &cfg, &err));
    CHECK_EQ_INT(cfg.messaging.n_subscriptions, 2);
    CHECK_EQ_STR(cfg.messaging.subscriptions[0].subject, "plugin.echo");
    CHECK_EQ_STR(cfg.messaging.subscriptions[0].queue, "echoers");
    CHECK(cfg.messaging.subscriptions[1].queue == NULL);
    CHECK(cfg.has_on_message);
    rift_config_free(&cfg);

    const char *qtext = "messaging.subscriptions.queue: expected a nonempty "
                        "queue name without wildcards or whitespace";
    const char *bad[] = {"''", "'a b'", "'w*'", "'w>'", "string.rep('q', 129)",
                         "1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char src[300];
        snprintf(src, sizeof(src),
                 "return { on_message = function() end, messaging = { "
                 "subscriptions = { { subject = 'a', queue = %s } } } }",
                 bad[i]);
        CHECK_REJECTS(src, qtext);
    }
    CHECK_ACCEPTS("return { on_message = function() end, messaging = { "
                  "subscriptions = { { subject = 'a', queue = string.rep('q', "
                  "128) } } } }");
    CHECK_REJECTS("return { on_message = function() end, messaging = { "
                  "subscriptions = { { subject = 'a', queue = 'q' }, { "
                  "subject = 'a', queue = 'q' } } } }",
                  "messaging.subscriptions: duplicate subscription");
    CHECK_REJECTS("return { on_message = function() end, messaging = { "
                  "subscriptions = { { subject = 'a' }, { subject = 'a' } } } "
                  "}",
                  "messaging.subscriptions: duplicate subscription");
    /* Same subject, different queue: two subscriptions. */
    CHECK_ACCEPTS("return { on_message = function() end, messaging = { "
                  "subscriptions = { { subject = 'a' }, { subject = 'a', "
                  "queue = 'q' } } } }");
    CHECK_REJECTS("return { on_message = function() end, messaging = { "
                  "subscriptions = { { queue = 'q' } } } }",
                  "messaging.subscriptions.subject: expected a subject "
                  "pattern");
}

RIFT_TEST(subscription_slots_and_limit) {
    CHECK_REJECTS("return { on_message = function() end, messaging = { "
                  "max_subscriptions = 1, subscriptions = { { subject = 'a' } "
                  "} } }",
                  "messaging.subscriptions must leave one max_subscriptions "
                  "slot for Rift control");
    CHECK_ACCEPTS("return { on_message = function() end, messaging = { "
                  "max_subscriptions = 2, subscriptions = { { subject = 'a' } "
                  "} } }");
    CHECK_REJECTS("local s = {} for i = 1, 1025 do s[i] = { subject = 's.' "
                  ".. i } end return { on_message = function() end, messaging "
                  "= { subscriptions = s } }",
                  "messaging.subscriptions: at most 1024 subscriptions are "
                  "allowed");
    CHECK_ACCEPTS("local s = {} for i = 1, 1024 do s[i] = { subject = 's.' "
                  ".. i } end return { on_message = function() end, messaging "
                  "= { subscriptions = s } }");
}

RIFT_TEST(on_message_pairing) {
    const char *text =
        "on_message and messaging.subscriptions must be configured together";
    CHECK_REJECTS("return { on_message = function() end }", text);
    CHECK_REJECTS("return { messaging = { subscriptions = { { subject = 'a' } "
                  "} } }",
                  text);
    CHECK_REJECTS("rift.on('message', function() end) return {}", text);
    CHECK_ACCEPTS("rift.on('message', function() end) return { messaging = { "
                  "subscriptions = { { subject = 'a' } } } }");
    CHECK_REJECTS("return { on_message = 5 }",
                  "on_message: expected a function");
    CHECK_REJECTS("rift.on('route', function() end)",
                  "test.lua:1: rift.on: unknown event \"route\" (riftd "
                  "supports \"message\")");
}

/* ---- streams ---- */

RIFT_TEST(stream_defaults_and_example) {
    rift_config cfg;
    rift_error err = {0};
    /* The reference's end-to-end stream (§4.8) and a memory stream. */
    CHECK_OK(load("return { messaging = { streams = { jobs = { subjects = { "
                  "'plugin.jobs' }, storage_path = 'stream-data' }, events = "
                  "{} } } }",
                  &cfg, &err));
    CHECK_EQ_INT(cfg.messaging.n_streams, 2);
    const rift_config_stream *ev = &cfg.messaging.streams[0];
    const rift_config_stream *jobs = &cfg.messaging.streams[1];
    CHECK_EQ_STR(ev->name, "events"); /* sorted by name */
    CHECK_EQ_INT(ev->n_subjects, 1);
    CHECK_EQ_STR(ev->subjects[0], ">");
    CHECK_EQ_U64(ev->max_messages, 100000);
    CHECK_EQ_U64(ev->max_bytes, 67108864);
    CHECK_EQ_U64(ev->max_payload_bytes, 1048576);
    CHECK_EQ_U64(ev->max_consumers, 128);
    CHECK(ev->sync_on_write);
    CHECK(ev->storage_path == NULL);
    CHECK_EQ_U64(ev->max_age_ms, 0);
    CHECK_EQ_STR(jobs->name, "jobs");
    CHECK_EQ_STR(jobs->subjects[0], "plugin.jobs");
    CHECK_EQ_STR(jobs->storage_path, "stream-data");
    CHECK(rift_config_find_stream(&cfg, "jobs") == jobs);
    CHECK(rift_config_find_stream(&cfg, "nope") == NULL);
    rift_config_free(&cfg);

    /* Stream payload default is min(1 MiB, messaging.max_payload_bytes). */
    CHECK_OK(load("return { messaging = { max_payload_bytes = 1000, streams "
                  "= { s = {} } } }",
                  &cfg, &err));
    CHECK_EQ_U64(cfg.messaging.streams[0].max_payload_bytes, 1000);
    rift_config_free(&cfg);
    CHECK_OK(load("return { messaging = { max_payload_bytes = 4194304, "
                  "streams = { s = { max_bytes = 17179869184, max_messages = "
                  "10000000, max_consumers = 65536, sync_on_write = false, "
                  "max_age_ms = 60000 } } } }",
                  &cfg, &err));
    const rift_config_stream *s = &cfg.messaging.streams[0];
    CHECK_EQ_U64(s->max_payload_bytes, 1048576);
    CHECK_EQ_U64(s->max_bytes, 17179869184ull);
    CHECK_EQ_U64(s->max_messages, 10000000);
    CHECK_EQ_U64(s->max_consumers, 65536);
    CHECK(!s->sync_on_write);
    CHECK_EQ_U64(s->max_age_ms, 60000);
    rift_config_free(&cfg);
}

RIFT_TEST(stream_validation_texts) {
    const char *names = "messaging.streams: names must contain 1..=96 letters, "
                        "digits, underscores or hyphens";
    CHECK_REJECTS("return { messaging = { streams = { ['a.b'] = {} } } }",
                  names);
    CHECK_REJECTS("return { messaging = { streams = { [''] = {} } } }", names);
    CHECK_REJECTS("return { messaging = { streams = { {} } } }", names);
    CHECK_REJECTS("return { messaging = { streams = { [string.rep('s', 97)] = "
                  "{} } } }",
                  names);
    CHECK_ACCEPTS("return { messaging = { streams = { [string.rep('s', 96)] = "
                  "{}, ['A_b-9'] = {} } } }");

    CHECK_REJECTS("return { messaging = { streams = { s = { subjects = {} } } "
                  "} }",
                  "messaging.streams.s.subjects: at least one pattern is "
                  "required");
    CHECK_REJECTS("local t = {} for i = 1, 1025 do t[i] = 'a.' .. i end "
                  "return { messaging = { streams = { s = { subjects = t } } "
                  "} }",
                  "messaging.streams.s.subjects: at most 1024 patterns are "
                  "allowed");
    static const char *zero[] = {"max_messages", "max_bytes",
                                 "max_payload_bytes", "max_consumers"};
    for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
        char src[200];
        snprintf(src, sizeof(src),
                 "return { messaging = { streams = { s = { %s = 0 } } } }",
                 zero[i]);
        CHECK_REJECTS(src, "messaging.streams.s: limits must be positive");
    }
    CHECK_REJECTS("return { messaging = { streams = { s = { max_messages = "
                  "10000001 } } } }",
                  "messaging.streams.s.max_messages: expected an integer in "
                  "1..=10000000");
    CHECK_REJECTS("return { messaging = { streams = { s = { max_bytes = "
                  "17179869185 } } } }",
                  "messaging.streams.s.max_bytes: expected an integer in "
                  "1..=17179869184");
    CHECK_REJECTS("return { messaging = { streams = { s = { "
                  "max_payload_bytes = 16777217 } } } }",
                  "messaging.streams.s.max_payload_bytes: expected an "
                  "integer in 1..=16777216");
    CHECK_REJECTS("return { messaging = { streams = { s = { max_consumers = "
                  "65537 } } } }",
                  "messaging.streams.s.max_consumers: expected an integer in "
                  "1..=65536");
    CHECK_REJECTS("return { messaging = { streams = { s = { max_age_ms = 0 } "
                  "} } }",
                  "messaging.streams.s.max_age_ms: expected "
                  "1..=315360000000 milliseconds");
    const char *fit = "messaging.streams.s.max_payload_bytes: must fit both "
                      "broker and stream byte limits";
    /* Larger than the broker's payload limit... */
    CHECK_REJECTS("return { messaging = { streams = { s = { "
                  "max_payload_bytes = 1048577 } } } }",
                  fit);
    /* ...or than the stream's byte budget. */
    CHECK_REJECTS("return { messaging = { streams = { s = { max_bytes = 100, "
                  "max_payload_bytes = 101 } } } }",
                  fit);
    CHECK_REJECTS("return { messaging = { streams = { s = { max_bytes = 100 } "
                  "} } }",
                  fit);
    CHECK_ACCEPTS("return { messaging = { streams = { s = { max_bytes = 100, "
                  "max_payload_bytes = 100 } } } }");
    CHECK_REJECTS("return { messaging = { streams = { s = { sync_on_write = "
                  "'yes' } } } }",
                  "messaging.streams.s.sync_on_write: expected a boolean");
    CHECK_REJECTS("return { messaging = { streams = { s = 5 } } }",
                  "messaging.streams.s: expected a table");
}

RIFT_TEST(stream_storage_paths) {
    const char *text =
        "messaging.streams.storage_path: paths must be nonempty and unique";
    CHECK_REJECTS("return { messaging = { streams = { s = { storage_path = '' "
                  "} } } }",
                  text);
    CHECK_REJECTS("return { messaging = { streams = { a = { storage_path = "
                  "'data/x' }, b = { storage_path = 'data/x' } } } }",
                  text);
    /* Two spellings of one directory are the same path. */
    CHECK_REJECTS("return { messaging = { streams = { a = { storage_path = "
                  "'data/x' }, b = { storage_path = './data//y/../x/' } } } }",
                  text);
    CHECK_ACCEPTS("return { messaging = { streams = { a = { storage_path = "
                  "'data/x' }, b = { storage_path = 'data/y' }, c = {}, d = "
                  "{} } } }");
}

/* ---- tokens ---- */

typedef struct env_pair {
    const char *name;
    const char *value;
} env_pair;

static const char *fake_getenv(const char *name, void *ud) {
    for (const env_pair *e = ud; e->name != NULL; e++) {
        if (strcmp(e->name, name) == 0) {
            return e->value;
        }
    }
    return NULL;
}

static const char *token_error(const env_pair *env) {
    static rift_error err;
    rift_config cfg;
    memset(&err, 0, sizeof(err));
    if (load("return { messaging = { " LISTEN " principals = { { name = 'a', "
             "token_env = 'A_TOKEN' }, { name = 'b', token_env = 'B_TOKEN' } "
             "} } }",
             &cfg, &err) != 0) {
        rift_config_free(&cfg);
        return err.text;
    }
    int rc = rift_config_load_tokens(&cfg, fake_getenv, (void *)env, &err);
    if (rc == 0 && cfg.messaging.principals[0].token_len < 32) {
        rc = -1;
        snprintf(err.text, sizeof(err.text), "token not stored");
    }
    rift_config_free(&cfg);
    return rc == 0 ? "" : err.text;
}

RIFT_TEST(tokens_from_environment) {
    const char *ok32 = "0123456789abcdef0123456789abcdef";
    const char *other = "ffffffffffffffffffffffffffffffff";
    env_pair good[] = {{"A_TOKEN", ok32}, {"B_TOKEN", other}, {NULL, NULL}};
    CHECK_EQ_STR(token_error(good), "");

    env_pair missing[] = {{"A_TOKEN", ok32}, {NULL, NULL}};
    CHECK_EQ_STR(token_error(missing),
                 "messaging: set B_TOKEN to a secret of at least 32 bytes");

    /* The §5.2 text, then the variable and principal (never the value). */
    const char *bad_text = "messaging token must contain 32..=1024 bytes "
                           "without control characters: A_TOKEN (principal "
                           "\"a\") holds a control character or invalid "
                           "UTF-8 in its 32 bytes";
    env_pair shortt[] = {{"A_TOKEN", "short"}, {"B_TOKEN", other}, {0, 0}};
    CHECK_EQ_STR(token_error(shortt),
                 "messaging token must contain 32..=1024 bytes without "
                 "control characters: A_TOKEN (principal \"a\") holds 5 "
                 "bytes");
    env_pair ctrl[] = {{"A_TOKEN", "0123456789abcdef0123456789abcde\t"},
                       {"B_TOKEN", other},
                       {0, 0}};
    CHECK_EQ_STR(token_error(ctrl), bad_text);
    /* U+0085 is a C1 control character. */
    env_pair c1[] = {{"A_TOKEN", "0123456789abcdef0123456789abcd\xc2\x85"},
                     {"B_TOKEN", other},
                     {0, 0}};
    CHECK_EQ_STR(token_error(c1), bad_text);
    char big[1026];
    memset(big, 'x', 1025);
    big[1025] = '\0';
    env_pair toolong[] = {{"A_TOKEN", big}, {"B_TOKEN", other}, {0, 0}};
    CHECK_EQ_STR(token_error(toolong),
                 "messaging token must contain 32..=1024 bytes without "
                 "control characters: A_TOKEN (principal \"a\") holds 1025 "
                 "bytes");
    big[1024] = '\0';
    env_pair maxlen[] = {{"A_TOKEN", big}, {"B_TOKEN", other}, {0, 0}};
    CHECK_EQ_STR(token_error(maxlen), "");
    env_pair same[] = {{"A_TOKEN", ok32}, {"B_TOKEN", ok32}, {0, 0}};
    CHECK_EQ_STR(token_error(same),
                 "invalid messaging configuration: identity names and tokens "
                 "must be nonempty and unique");
}

/* ---- reload comparison, revision ---- */

RIFT_TEST(messaging_equality_and_revision) {
    rift_config a, b, c;
    rift_error err = {0};
    const char *src = "return { messaging = { subscription_capacity = 8 }, "
                      "log = 'debug' }";
    CHECK_OK(load(src, &a, &err));
    CHECK_OK(load("return { log = 'warn', messaging = { "
                  "subscription_capacity = 8.0 } }",
                  &b, &err));
    CHECK_OK(
        load("return { messaging = { subscription_capacity = 9 } }", &c, &err));
    CHECK(rift_config_messaging_equal(&a.messaging, &b.messaging));
    CHECK(!rift_config_messaging_equal(&a.messaging, &c.messaging));
    CHECK_EQ_INT(strlen(a.revision), 16);
    CHECK(strcmp(a.revision, b.revision) != 0);
    char rev[17];
    rift_config_revision(src, strlen(src), rev);
    CHECK_EQ_STR(rev, a.revision);
    for (int i = 0; i < 16; i++) {
        CHECK((rev[i] >= '0' && rev[i] <= '9') ||
              (rev[i] >= 'a' && rev[i] <= 'f'));
    }
    rift_config_free(&a);
    rift_config_free(&b);
    rift_config_free(&c);
    /* A source without a file has the "runtime" revision. */
    CHECK_OK(rift_config_load_string(&a, "return {}", 9, "built-in", false,
                                     NULL, &err));
    CHECK_EQ_STR(a.revision, "runtime");
    rift_config_free(&a);
}
