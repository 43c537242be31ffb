/*
 * test_subject_names.c — unit tests of the name rules (subject layer):
 * valid_name (docs/protocol-v1.md §2.2), broker queue names (§1.6),
 * configuration stream names and env names (§5), plugin names (§7.1),
 * store-local consumer names (§4.7).
 */
#include "subject/name.h"
#include "test.h"

#define S(lit) (lit), (sizeof(lit) - 1)

RIFT_TEST(valid_name_rule) {
    char buf[200];
    memset(buf, 'a', sizeof(buf));
    CHECK(rift_name_valid(S("a")));
    CHECK(rift_name_valid(S("Plugin-1_v2.0")));
    CHECK(rift_name_valid(S("...")));
    CHECK(rift_name_valid(buf, 96));
    CHECK(!rift_name_valid(buf, 97));
    CHECK(!rift_name_valid(S("")));
    CHECK(!rift_name_valid(S("a b")));
    CHECK(!rift_name_valid(S("a/b")));
    CHECK(!rift_name_valid(S("a*")));
    CHECK(!rift_name_valid(S("caf\xC3\xA9")));
    CHECK(!rift_name_valid("a\0", 2));
}

RIFT_TEST(queue_name_rule) {
    char buf[200];
    memset(buf, '~', sizeof(buf));
    CHECK(rift_queue_name_valid(S("workers")));
    CHECK(rift_queue_name_valid(S("a.b:c/d!\"#")));
    CHECK(rift_queue_name_valid(buf, 128));
    CHECK(!rift_queue_name_valid(buf, 129));
    CHECK(!rift_queue_name_valid(S("")));
    CHECK(!rift_queue_name_valid(S("a*")));
    CHECK(!rift_queue_name_valid(S("a>")));
    CHECK(!rift_queue_name_valid(S("a b")));
    CHECK(!rift_queue_name_valid(S("a\x7f")));
    CHECK(!rift_queue_name_valid(S("caf\xC3\xA9")));
}

RIFT_TEST(config_stream_name_rule) {
    char buf[200];
    memset(buf, 'Z', sizeof(buf));
    CHECK(rift_config_stream_name_valid(S("orders_1-x")));
    CHECK(rift_config_stream_name_valid(buf, 96));
    CHECK(!rift_config_stream_name_valid(buf, 97));
    CHECK(!rift_config_stream_name_valid(S("")));
    CHECK(!rift_config_stream_name_valid(S("orders.eu")));
    CHECK(rift_name_valid(S("orders.eu"))); /* the wire would accept it */
}

RIFT_TEST(plugin_name_rule) {
    char buf[200];
    memset(buf, '9', sizeof(buf));
    CHECK(rift_plugin_name_valid(S("my_plugin-2")));
    CHECK(rift_plugin_name_valid(buf, 128));
    CHECK(!rift_plugin_name_valid(buf, 129));
    CHECK(!rift_plugin_name_valid(S("")));
    CHECK(!rift_plugin_name_valid(S("a.b")));
    CHECK(!rift_plugin_name_valid(S("../x")));
}

RIFT_TEST(env_name_rule) {
    CHECK(rift_env_name_valid(S("RIFT_TOKEN")));
    CHECK(rift_env_name_valid(S("_x1")));
    CHECK(rift_env_name_valid(S("a")));
    CHECK(!rift_env_name_valid(S("")));
    CHECK(!rift_env_name_valid(S("1ABC")));
    CHECK(!rift_env_name_valid(S("A-B")));
    CHECK(!rift_env_name_valid(S("A.B")));
    CHECK(!rift_env_name_valid(S("A B")));
    CHECK(!rift_env_name_valid(S("\xC3\x89T")));
}

RIFT_TEST(store_consumer_name_rule) {
    char buf[200];
    memset(buf, 'c', sizeof(buf));
    CHECK(rift_store_consumer_name_valid(S("durable.caf\xC3\xA9*>")));
    CHECK(rift_store_consumer_name_valid(buf, 128));
    CHECK(!rift_store_consumer_name_valid(buf, 129));
    CHECK(!rift_store_consumer_name_valid(S("")));
    CHECK(!rift_store_consumer_name_valid(S("a b")));
    CHECK(!rift_store_consumer_name_valid(S("a\xC2\xA0")));
    CHECK(!rift_store_consumer_name_valid(S("a\x01")));
    CHECK(!rift_store_consumer_name_valid(S("\xFF")));
}
