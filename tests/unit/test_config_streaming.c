/*
 * test_config_streaming.c — the `streaming` table of riftd's
 * configuration (src/lua/config_streaming.c into config/config_streaming.h):
 * absent means off, defaults, every key read, the file store under
 * data_dir, the refusals with their texts, and the nats_server URL
 * (accepted forms, credentials masked in what is shown).
 */
#include "lua/config_eval.h"
#include "test.h"

static int load(const char *src, rift_config *cfg, rift_error *err) {
    return rift_config_load_string(cfg, src, strlen(src), "test.lua", true,
                                   NULL, err);
}

static const char *load_error(const char *src) {
    static rift_error err;
    rift_config cfg;
    memset(&err, 0, sizeof err);
    int rc = load(src, &cfg, &err);
    rift_config_free(&cfg);
    return rc == 0 ? "" : err.text;
}

RIFT_TEST(absent_is_off_and_empty_table_is_defaults) {
    rift_config cfg;
    CHECK_OK(load("return {}", &cfg, NULL));
    bool off = !cfg.streaming.enabled;
    rift_config_free(&cfg);
    CHECK(off);
    CHECK_OK(load("return { streaming = {} }", &cfg, NULL));
    rift_config_streaming s = cfg.streaming;
    bool ok = s.enabled && strcmp(s.cluster_id, "test-cluster") == 0 &&
              strcmp(s.discover_prefix, "_STAN.discover") == 0 &&
              !s.file_store && s.sync_on_write && s.max_channels == 100 &&
              s.max_subs == 1000 && s.limits.max_msgs == 1000000 &&
              s.limits.max_bytes == 1024000000 && s.limits.max_age_ms == 0 &&
              s.hb_interval_ms == 30000 && s.hb_timeout_ms == 10000 &&
              s.hb_fail_count == 10;
    rift_config_free(&cfg);
    CHECK(ok);
}

RIFT_TEST(every_key_read) {
    rift_config cfg;
    rift_error err = {0};
    int rc =
        load("return { data_dir = '/var/lib/rift', streaming = {\n"
             "  cluster_id = 'prod', discover_prefix = 'X.discover',\n"
             "  store = 'file', sync_on_write = false,\n"
             "  limits = { max_channels = 7, max_subs = 9, max_msgs = 11,\n"
             "    max_bytes = 13, max_age_ms = 15, max_inactivity_ms = 17,\n"
             "    channels = { ['orders.*'] = { max_age_ms = 3600000 } } },\n"
             "  heartbeat = { interval_ms = 100, timeout_ms = 50,\n"
             "    fail_count = 2 } } }",
             &cfg, &err);
    rift_config_streaming s = cfg.streaming;
    bool ok = rc == 0 && strcmp(s.cluster_id, "prod") == 0 &&
              strcmp(s.discover_prefix, "X.discover") == 0 && s.file_store &&
              strcmp(s.dir, "/var/lib/rift/streaming") == 0 &&
              !s.sync_on_write && s.max_channels == 7 && s.max_subs == 9 &&
              s.limits.max_msgs == 11 && s.limits.max_bytes == 13 &&
              s.limits.max_age_ms == 15 && s.limits.max_inactivity_ms == 17 &&
              s.n_channels == 1 &&
              strcmp(s.channels[0].pattern, "orders.*") == 0 &&
              s.channels[0].limits.max_age_ms == 3600000 &&
              s.channels[0].limits.max_msgs == 11 && /* inherited */
              s.hb_interval_ms == 100 && s.hb_timeout_ms == 50 &&
              s.hb_fail_count == 2;
    rift_config_free(&cfg);
    CHECK_MSG(rc == 0, "%s", err.text);
    CHECK(ok);
}

RIFT_TEST(refusals) {
    CHECK_EQ_STR(load_error("return { streaming = { clusterid = 'x' } }"),
                 "streaming.clusterid: unknown field (expected cluster_id, "
                 "discover_prefix, nats_server, store, dir, sync_on_write, "
                 "limits, heartbeat)");
    CHECK_EQ_STR(load_error("return { streaming = { cluster_id = 'a b' } }"),
                 "streaming.cluster_id: only alphanumeric and `-` or `_` "
                 "characters allowed");
    CHECK_EQ_STR(load_error("return { streaming = { store = 'sql' } }"),
                 "streaming.store: expected \"memory\" or \"file\"");
    CHECK_EQ_STR(load_error("return { streaming = { store = 'file' } }"),
                 "streaming.dir: required with store = \"file\" when "
                 "data_dir is not set");
    CHECK_EQ_STR(
        load_error("return { streaming = { nats_server = 'http://x:4222' } }"),
        "streaming.nats_server: unknown scheme (expected "
        "nats://[user:password@]host[:port] or tls://...)");
    CHECK_EQ_STR(
        load_error("return { streaming = { nats_server = 'nats://x:0' } }"),
        "streaming.nats_server: invalid port (expected "
        "nats://[user:password@]host[:port] or tls://...)");
    CHECK_EQ_STR(load_error("return { streaming = { discover_prefix = 'a.>' "
                            "} }"),
                 "streaming.discover_prefix: invalid subject");
    CHECK_EQ_STR(load_error("return { streaming = { limits = { channels = { "
                            "['a..b'] = {} } } } }"),
                 "streaming.limits.channels: keys must be channel names or "
                 "patterns");
    CHECK_EQ_STR(load_error("return { streaming = 5 }"),
                 "streaming: expected a table");
}

RIFT_TEST(nats_server_url) {
    rift_config cfg;
    CHECK_OK(load("return { streaming = { nats_server = "
                  "'nats://u:p@127.0.0.1:4222' } }",
                  &cfg, NULL));
    bool kept =
        strcmp(cfg.streaming.nats_server, "nats://u:p@127.0.0.1:4222") == 0;
    rift_config_free(&cfg);
    CHECK(kept);
    static const struct {
        const char *url, *shown;
    } ok[] = {
        {"nats://h", "nats://h"},
        {"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
        {"tls://nats.example:4443", "tls://nats.example:4443"},
        {"nats://alice:s3cr@t@h:1", "nats://***@h:1"},
        {"nats://tok3n@[::1]:4222", "nats://***@[::1]:4222"},
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(ok); i++) {
        char shown[128];
        rift_error err = {0};
        CHECK_MSG(
            rift_stan_nats_url_check(ok[i].url, shown, sizeof shown, &err) == 0,
            "%s: %s", ok[i].url, err.text);
        CHECK_EQ_STR(shown, ok[i].shown);
    }
    static const char *const bad[] = {
        "",
        "nats://",
        "nats://:4222",
        "nats://h:65536",
        "nats://h:x",
        "nats://a,nats://b",
        "nats://h/p",
        "nats://[::1",
        "nats://pa ss@h",
    };
    for (size_t i = 0; i < RIFT_ARRAY_LEN(bad); i++) {
        rift_error err = {0};
        CHECK_MSG(rift_stan_nats_url_check(bad[i], NULL, 0, &err) ==
                      RIFT_ERR_INVALID_CONFIG,
                  "%s accepted", bad[i]);
        /* The text never repeats the URL: it may hold a password. */
        CHECK(strstr(err.text, "pa ss") == NULL);
    }
}

RIFT_TEST(equality_for_reload) {
    static const char a[] = "return { streaming = { cluster_id = 'one', "
                            "limits = { channels = { x = { max_msgs = 5 } } } "
                            "} }";
    static const char b[] = "return { streaming = { cluster_id = 'two', "
                            "limits = { channels = { x = { max_msgs = 5 } } } "
                            "} }";
    rift_config c1, c2, c3;
    CHECK_OK(load(a, &c1, NULL));
    CHECK_OK(load(a, &c2, NULL));
    CHECK_OK(load(b, &c3, NULL));
    bool same = rift_config_streaming_equal(&c1.streaming, &c2.streaming);
    bool differ = !rift_config_streaming_equal(&c1.streaming, &c3.streaming);
    rift_config_free(&c1);
    rift_config_free(&c2);
    rift_config_free(&c3);
    CHECK(same);
    CHECK(differ);
}
