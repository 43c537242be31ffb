/*
 * test_auth.c — unit tests of token authentication and access settings
 * (subject layer): the HMAC tag (docs/protocol-v1.md §2.6 item 7), the
 * constant-time lookup table and AuthConfig validation (§3.7).
 */
#include "subject/auth.h"
#include "test.h"

#include <stdlib.h>

#define S(lit) (lit), (sizeof(lit) - 1)

static void hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) {
        sprintf(out + 2 * i, "%02x", b[i]);
    }
}

RIFT_TEST(tag_vector) {
    /*
     * Computed independently:
     *   printf 'rift-messaging/1 authentication' \
     *     | openssl dgst -sha256 -hmac 'correct horse battery staple 0123'
     * and with Python's hmac module for the empty key.
     */
    uint8_t tag[RIFT_AUTH_TAG_BYTES];
    char h[2 * RIFT_AUTH_TAG_BYTES + 1];
    CHECK_OK(rift_auth_tag(S("correct horse battery staple 0123"), tag));
    hex(tag, sizeof(tag), h);
    CHECK_EQ_STR(
        h, "11c6d0f82ad5a8443e9ac402dd93a4385bec4796c34530e132ff32fb3c48dc69");
    CHECK_OK(rift_auth_tag(NULL, 0, tag));
    hex(tag, sizeof(tag), h);
    CHECK_EQ_STR(
        h, "b10639b7d887c03645adbe351aa549cbe27989f1d6dde2272595b17df118f510");
}

/* Three identities: alice, bob (control), carol. */
static void make_ids(rift_identity ids[3]) {
    static const char *names[] = {"alice", "bob", "carol"};
    static const char *tokens[] = {"correct horse battery staple 0123",
                                   "bob's token, at least thirty-two bytes",
                                   "carol-token-carol-token-carol-token"};
    for (int i = 0; i < 3; i++) {
        rift_identity_init(&ids[i], NULL);
        if (rift_identity_set_name(&ids[i], names[i], strlen(names[i])) ||
            rift_identity_set_token(&ids[i], tokens[i], strlen(tokens[i])) ||
            rift_identity_allow_publish(&ids[i], S("game.>")) ||
            rift_identity_allow_subscribe(&ids[i], S("_INBOX.>"))) {
            abort(); /* out of memory in a test */
        }
    }
    ids[1].control = true;
}

static void free_ids(rift_identity *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        rift_identity_free(&ids[i]);
    }
}

RIFT_TEST(table_lookup) {
    rift_identity ids[3];
    make_ids(ids);
    rift_auth_table t;
    CHECK_OK(rift_auth_table_init(&t, ids, 3, NULL));
    CHECK_EQ_INT(t.count, 3);
    const rift_identity *who =
        rift_auth_table_lookup(&t, S("bob's token, at least thirty-two bytes"));
    CHECK(who != NULL);
    CHECK_EQ_STR(who->name, "bob");
    CHECK(who->control);
    CHECK_EQ_INT(who->npublish, 1);
    /* The table keeps no token. */
    CHECK(who->token == NULL);
    who = rift_auth_table_lookup(&t, S("correct horse battery staple 0123"));
    CHECK(who != NULL);
    CHECK_EQ_STR(who->name, "alice");
    who = rift_auth_table_lookup(&t, S("carol-token-carol-token-carol-token"));
    CHECK(who != NULL);
    CHECK_EQ_STR(who->name, "carol");
    /* Wrong, empty, prefix and extended tokens do not match. */
    CHECK(rift_auth_table_lookup(&t, S("wrong token")) == NULL);
    CHECK(rift_auth_table_lookup(&t, NULL, 0) == NULL);
    CHECK(rift_auth_table_lookup(&t, S("correct horse battery staple 012")) ==
          NULL);
    CHECK(rift_auth_table_lookup(&t, S("correct horse battery staple 01234")) ==
          NULL);
    /* The table outlives the identities it was built from. */
    free_ids(ids, 3);
    who = rift_auth_table_lookup(&t, S("carol-token-carol-token-carol-token"));
    CHECK(who != NULL);
    CHECK_EQ_STR(who->name, "carol");
    rift_auth_table_free(&t);
    rift_auth_table_free(NULL);
}

RIFT_TEST(table_empty) {
    rift_auth_table t;
    CHECK_OK(rift_auth_table_init(&t, NULL, 0, NULL));
    CHECK(rift_auth_table_lookup(&t, S("anything")) == NULL);
    rift_auth_table_free(&t);
}

/* ---- Settings validation ---- */

static const char *validate(const rift_auth_settings *s) {
    static rift_error err;
    memset(&err, 0, sizeof(err));
    int rc = rift_auth_settings_validate(s, &err);
    if (rc == 0) {
        return "ok";
    }
    return rc == RIFT_ERR_INVALID_ARGUMENT && err.code == rc ? err.text
                                                             : "bad code";
}

#define LIMITS "invalid QUIC resource limits"
#define IDS    "identity names and tokens must be nonempty and unique"

RIFT_TEST(settings_defaults_and_limits) {
    rift_auth_settings s;
    rift_auth_settings_default(&s);
    CHECK_EQ_INT(s.max_connections, 1024);
    CHECK_EQ_INT(s.max_streams_per_connection, 128);
    CHECK_EQ_INT(s.handshake_timeout_ms, 5000);
    CHECK_EQ_INT(s.io_timeout_ms, 30000);
    CHECK_EQ_STR(validate(&s), "ok");
    s.max_connections = 0;
    CHECK_EQ_STR(validate(&s), LIMITS);
    rift_auth_settings_default(&s);
    s.max_streams_per_connection = 0;
    CHECK_EQ_STR(validate(&s), LIMITS);
    s.max_streams_per_connection = 65536;
    CHECK_EQ_STR(validate(&s), LIMITS);
    s.max_streams_per_connection = 65535;
    CHECK_EQ_STR(validate(&s), "ok");
    s.handshake_timeout_ms = 0;
    CHECK_EQ_STR(validate(&s), LIMITS);
    rift_auth_settings_default(&s);
    s.io_timeout_ms = 0;
    CHECK_EQ_STR(validate(&s), LIMITS);
}

RIFT_TEST(settings_identities) {
    rift_identity ids[3];
    make_ids(ids);
    rift_auth_settings s;
    rift_auth_settings_default(&s);
    s.identities = ids;
    s.nidentities = 3;
    CHECK_EQ_STR(validate(&s), "ok");
    /* Duplicate name. */
    CHECK_OK(rift_identity_set_name(&ids[2], S("alice")));
    CHECK_EQ_STR(validate(&s), IDS);
    CHECK_OK(rift_identity_set_name(&ids[2], S("carol")));
    /* Duplicate token. */
    CHECK_OK(rift_identity_set_token(&ids[2],
                                     S("correct horse battery staple 0123")));
    CHECK_EQ_STR(validate(&s), IDS);
    /* Empty token, token length bounds. */
    CHECK_OK(rift_identity_set_token(&ids[2], S("")));
    CHECK_EQ_STR(validate(&s), IDS);
    char big[RIFT_AUTH_TOKEN_MAX + 1];
    memset(big, 't', sizeof(big));
    CHECK_OK(rift_identity_set_token(&ids[2], big, sizeof(big)));
    CHECK_EQ_STR(validate(&s), IDS);
    CHECK_OK(rift_identity_set_token(&ids[2], big, RIFT_AUTH_TOKEN_MAX));
    CHECK_EQ_STR(validate(&s), "ok");
    /* Invalid names. */
    CHECK_OK(rift_identity_set_name(&ids[2], S("car ol")));
    CHECK_EQ_STR(validate(&s), IDS);
    CHECK_OK(rift_identity_set_name(&ids[2], S("")));
    CHECK_EQ_STR(validate(&s), IDS);
    CHECK_OK(rift_identity_set_name(&ids[2], S("carol.v2")));
    CHECK_EQ_STR(validate(&s), "ok");
    /* Grants must pass validate_pattern. */
    CHECK_OK(rift_identity_allow_subscribe(&ids[1], S("a..b")));
    CHECK_EQ_STR(validate(&s), "invalid subject pattern");
    /* Identities are checked in order: ids[1]'s bad grant is reported
     * before ids[2]'s duplicate name. */
    CHECK_OK(rift_identity_set_name(&ids[2], S("alice")));
    CHECK_EQ_STR(validate(&s), "invalid subject pattern");
    free_ids(ids, 3);
    /* A grant over 1,024 bytes. */
    rift_identity one;
    rift_identity_init(&one, NULL);
    CHECK_OK(rift_identity_set_name(&one, S("bob")));
    CHECK_OK(rift_identity_set_token(&one, S("b")));
    char longp[1025];
    memset(longp, 'p', sizeof(longp));
    CHECK_OK(rift_identity_allow_publish(&one, longp, sizeof(longp)));
    s.identities = &one;
    s.nidentities = 1;
    CHECK_EQ_STR(validate(&s), "invalid subject length");
    rift_identity_free(&one);
}
