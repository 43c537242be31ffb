/*
 * test_config_cluster.c — the `cluster` table of riftd's configuration
 * (src/lua/config_cluster_table.c into config/config_cluster.h): absent
 * means off, defaults, every key read, the refusals with their texts, and
 * the --check lines with credentials masked (docs/cluster.md).
 */
#include "lua/config_eval.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

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

#define CHECK_REJECTS(src, text) CHECK_EQ_STR(load_error(src), text)

RIFT_TEST(absent_is_off_and_defaults) {
    rift_config cfg;
    CHECK_OK(load("return {}", &cfg, NULL));
    bool off = !cfg.cluster.enabled;
    rift_config_free(&cfg);
    CHECK(off);
    CHECK_OK(load("return { cluster = { node = 'r1', nats = { servers = { "
                  "'nats://127.0.0.1:4222' } } } }",
                  &cfg, NULL));
    rift_config_cluster c = cfg.cluster;
    bool ok = c.enabled && strcmp(c.node, "r1") == 0 &&
              strcmp(c.prefix, "rift") == 0 && c.n_servers == 1 &&
              strcmp(c.servers[0], "nats://127.0.0.1:4222") == 0 &&
              c.user == NULL && c.ca == NULL;
    rift_config_free(&cfg);
    CHECK(ok);
}

RIFT_TEST(every_key_read_and_check_masks_credentials) {
    rift_config cfg;
    rift_error err = {0};
    CHECK_OK(load("return { cluster = { node = 'east-1', prefix = 'prod.rift',"
                  " nats = { servers = { 'nats://a:pw@10.0.0.1:4222', "
                  "'tls://10.0.0.2' }, user = 'riftd', password_env = "
                  "'RIFT_BACKBONE_PW', tls = { ca = '/etc/rift/ca.pem' } } } }",
                  &cfg, &err));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rift_config_cluster_print(&cfg.cluster, f);
    fclose(f);
    rift_config_free(&cfg);
    CHECK(text != NULL);
    CHECK_MSG(strstr(text, "cluster: node=east-1 prefix=prod.rift") != NULL,
              "%s", text);
    CHECK_MSG(strstr(text, "backbone nats://***@10.0.0.1:4222") != NULL, "%s",
              text);
    CHECK(strstr(text, "backbone tls://10.0.0.2") != NULL);
    CHECK(strstr(text, "user=riftd password from $RIFT_BACKBONE_PW") != NULL);
    CHECK(strstr(text, "tls ca=/etc/rift/ca.pem") != NULL);
    CHECK(strstr(text, "pw@") == NULL);
    free(text);
}

RIFT_TEST(refusals) {
    CHECK_REJECTS("return { cluster = 1 }", "cluster: expected a table");
    CHECK_REJECTS("return { cluster = { node = 'r1' } }",
                  "cluster.nats: required (the backbone's servers)");
    CHECK_REJECTS("return { cluster = { node = 'r1', nats = {} } }",
                  "cluster.nats.servers: required (a list of nats:// or "
                  "tls:// URLs)");
    CHECK_REJECTS(
        "return { cluster = { node = 'r1', nats = { servers = {} } } }",
        "cluster.nats.servers: expected 1..=64 URLs");
    CHECK_REJECTS("return { cluster = { node = 'r1', nats = { servers = { "
                  "'http://x' } } } }",
                  "cluster.nats.servers[1]: unknown scheme (expected "
                  "nats://[user:password@]host[:port] or tls://...)");
    CHECK_REJECTS("return { cluster = { nats = { servers = { 'nats://x' } } "
                  "} }",
                  "cluster.node: required, 1..64 of A-Z a-z 0-9 - _ (unique "
                  "per node)");
    CHECK_REJECTS("return { cluster = { node = 'a.b', nats = { servers = { "
                  "'nats://x' } } } }",
                  "cluster.node: required, 1..64 of A-Z a-z 0-9 - _ (unique "
                  "per node)");
    CHECK_REJECTS("return { cluster = { node = 'r1', prefix = 'a.*', nats = "
                  "{ servers = { 'nats://x' } } } }",
                  "cluster.prefix: expected a literal subject of at most 128 "
                  "bytes, not starting with $ or _");
    CHECK_REJECTS("return { cluster = { node = 'r1', nats = { servers = { "
                  "'nats://x' }, password_env = 'P' } } }",
                  "cluster.nats.password_env: needs user");
    CHECK_REJECTS("return { cluster = { node = 'r1', nats = { servers = { "
                  "'nats://x' }, token_env = 'bad name' } } }",
                  "cluster.nats.token_env: invalid environment variable name");
    CHECK_REJECTS("return { cluster = { node = 'r1', bogus = 1, nats = { "
                  "servers = { 'nats://x' } } } }",
                  "cluster.bogus: unknown field (expected nats, node, "
                  "prefix)");
    CHECK_REJECTS("return { cluster = { node = 'r1', nats = { servers = { "
                  "'nats://x' }, tls = { ca = '' } } } }",
                  "cluster.nats.tls.ca: path must not be empty");
}
