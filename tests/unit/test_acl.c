/*
 * test_acl.c — unit tests of access control (subject layer): containment
 * and overlap (docs/protocol-v1.md §3.1, §3.2), can_publish and
 * can_subscribe (§3.3, §3.4) with every identity table of §3.8, and
 * consumer-name scoping (§3.5).
 */
#include "subject/acl.h"
#include "test.h"

#include <stdlib.h>

#define S(lit) (lit), (sizeof(lit) - 1)

static bool covers(const char *a, const char *r) {
    return rift_subject_covers(a, strlen(a), r, strlen(r));
}

static bool overlaps(const char *a, const char *b) {
    return rift_subject_overlaps(a, strlen(a), b, strlen(b));
}

/* ---- §3.8 containment table and derived vectors ---- */

RIFT_TEST(containment_vectors) {
    CHECK(covers("game.>", "game.region.*"));
    CHECK(!covers("game.region.*", "game.>"));
    CHECK(!covers("game.*", "game.>"));
    CHECK(!covers("game.>", "game"));
    CHECK(covers(">", "game.>"));
    CHECK(!covers("game.private", "game.*"));
    CHECK(overlaps("*.control.>", "rift.control.>"));
}

RIFT_TEST(containment_derived_vectors) {
    CHECK(covers("*", "*"));
    CHECK(!covers("*", ">"));
    CHECK(covers(">", ">"));
    CHECK(covers("a.>", "a.*.>"));
    CHECK(!overlaps("rift.control.>", "rift.control"));
    CHECK(overlaps(">", "a"));
    CHECK(!overlaps("a.*", "a"));
}

RIFT_TEST(containment_more) {
    CHECK(covers("a.b", "a.b"));
    CHECK(!covers("a.b", "a.c"));
    CHECK(!covers("a", "a.b"));
    CHECK(covers("a.*", "a.b"));
    CHECK(!covers("a.*", "a.b.c"));
    CHECK(!covers("a.*.c", "a.b.>"));
    CHECK(covers("*.*", "a.*"));
    CHECK(!covers("a.b.>", "a.*.c"));
    /* Overlap is symmetric and weaker than containment. */
    CHECK(overlaps("a.*.c", "a.b.*"));
    CHECK(overlaps("a.b.*", "a.*.c"));
    CHECK(!overlaps("a.*.c", "a.b.d"));
    CHECK(overlaps("a.>", "*.b"));
    CHECK(!overlaps("a.>", "a"));
    CHECK(!overlaps("a.b", "a.b.c"));
    CHECK(overlaps("rift.*", "rift.control"));
}

/* ---- Identities used by the tables ---- */

static int make_identity(rift_identity *id, const char *name,
                         const char *const *pub, const char *const *sub,
                         bool control) {
    rift_identity_init(id, NULL);
    int rc = rift_identity_set_name(id, name, strlen(name));
    for (size_t i = 0; rc == 0 && pub[i] != NULL; i++) {
        rc = rift_identity_allow_publish(id, pub[i], strlen(pub[i]));
    }
    for (size_t i = 0; rc == 0 && sub[i] != NULL; i++) {
        rc = rift_identity_allow_subscribe(id, sub[i], strlen(sub[i]));
    }
    id->control = control;
    return rc;
}

static const char *const everything[] = {">", NULL};
static const char *const plugin_grants[] = {"game.>", "_INBOX.>", NULL};
static const char *const nothing[] = {NULL};

/* "ok", or the error text when the code is the expected one. */
static rift_error last;

static const char *sub(const rift_identity *id, const char *pattern) {
    memset(&last, 0, sizeof(last));
    int rc = rift_identity_can_subscribe(id, pattern, strlen(pattern), &last);
    if (rc == 0) {
        return "ok";
    }
    return rc == last.code ? last.text : "code mismatch";
}

static const char *pub(const rift_identity *id, const char *subject,
                       const char *reply) {
    memset(&last, 0, sizeof(last));
    int rc = rift_identity_can_publish(id, subject, strlen(subject), reply,
                                       reply ? strlen(reply) : 0, &last);
    if (rc == 0) {
        return "ok";
    }
    return rc == last.code ? last.text : "code mismatch";
}

#define DENIED_SUB   "subscription not permitted"
#define DENIED_PUB   "publication not permitted"
#define DENIED_REPLY "reply must be an authorized _INBOX subject"

RIFT_TEST(identity_all_control_off) {
    rift_identity id;
    CHECK_OK(make_identity(&id, "all", everything, everything, false));
    CHECK_EQ_STR(sub(&id, ">"), DENIED_SUB);
    CHECK_EQ_INT(last.code, RIFT_ERR_PERMISSION);
    CHECK_EQ_INT(rift_error_wire_code(last.code), 1);
    CHECK_EQ_STR(sub(&id, "rift.*"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "rift.control"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "game.>"), "ok");
    CHECK_EQ_STR(pub(&id, "rift.control", NULL), DENIED_PUB);
    CHECK_EQ_INT(last.code, RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(pub(&id, "rift.control.reload", NULL), DENIED_PUB);
    CHECK_EQ_STR(pub(&id, "rift.events.player", NULL), DENIED_PUB);
    CHECK_EQ_STR(pub(&id, "game.request", "rift.control.reload"), DENIED_REPLY);
    CHECK_EQ_INT(last.code, RIFT_ERR_PERMISSION);
    rift_identity_free(&id);
}

RIFT_TEST(identity_all_control_on) {
    rift_identity id;
    CHECK_OK(make_identity(&id, "all", everything, everything, true));
    CHECK_EQ_STR(sub(&id, ">"), "ok");
    CHECK_EQ_STR(pub(&id, "rift.control.reload", NULL), "ok");
    CHECK_EQ_STR(pub(&id, "rift.events.player", NULL), DENIED_PUB);
    rift_identity_free(&id);
}

RIFT_TEST(identity_plugin) {
    rift_identity id;
    CHECK_OK(make_identity(&id, "plugin", plugin_grants, plugin_grants, false));
    CHECK_EQ_STR(sub(&id, ">"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "game.*.>"), "ok");
    CHECK_EQ_STR(pub(&id, "rift.control.reload", NULL), DENIED_PUB);
    /* Consumer open with the default filter ">" is the same check. */
    CHECK_EQ_STR(sub(&id, ">"), DENIED_SUB);
    /* Responders publish on inbox subjects. */
    CHECK_EQ_STR(pub(&id, "_INBOX.0123456789abcdef0123456789abcdef", NULL),
                 "ok");
    CHECK_EQ_STR(pub(&id, "game.request", "_INBOX.abc"), "ok");
    CHECK_EQ_STR(pub(&id, "chat.x", NULL), DENIED_PUB);
    CHECK_EQ_STR(sub(&id, "chat.>"), DENIED_SUB);
    rift_identity_free(&id);
}

RIFT_TEST(subscribe_control_detection) {
    rift_identity id;
    CHECK_OK(make_identity(&id, "all", everything, everything, false));
    CHECK_EQ_STR(sub(&id, "rift.>"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "*.control.>"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "*.*"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "rift.control.*"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "rift.control.reload"), DENIED_SUB);
    CHECK_EQ_STR(sub(&id, "*.*.*"), DENIED_SUB);
    /* Neither overlapping rift.control.> nor covering rift.control. */
    CHECK_EQ_STR(sub(&id, "rift.events.>"), "ok");
    CHECK_EQ_STR(sub(&id, "rift.controlX.>"), "ok");
    CHECK_EQ_STR(sub(&id, "*"), "ok");
    CHECK_EQ_STR(sub(&id, "rift.*.x"), DENIED_SUB); /* rift.control.x */
    CHECK_EQ_STR(sub(&id, "*.events"), "ok");
    rift_identity_free(&id);
}

RIFT_TEST(publish_reserved_prefixes) {
    rift_identity id;
    CHECK_OK(make_identity(&id, "all", everything, everything, false));
    CHECK_EQ_STR(pub(&id, "rift.events", NULL), DENIED_PUB);
    CHECK_EQ_STR(pub(&id, "rift.eventsX", NULL), "ok");
    CHECK_EQ_STR(pub(&id, "rift.events2.a", NULL), "ok");
    CHECK_EQ_STR(pub(&id, "rift.controlX", NULL), "ok");
    CHECK_EQ_STR(pub(&id, "rift", NULL), "ok");
    CHECK_EQ_STR(pub(&id, "xrift.control", NULL), "ok");
    rift_identity_free(&id);
}

RIFT_TEST(publish_validation_comes_first) {
    rift_identity id;
    CHECK_OK(make_identity(&id, "none", nothing, nothing, false));
    CHECK_EQ_STR(pub(&id, "a*", NULL), "invalid subject pattern");
    CHECK_EQ_INT(last.code, RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(rift_error_wire_code(last.code), 2);
    CHECK_EQ_STR(pub(&id, "a.*", NULL), "publication subject must be literal");
    CHECK_EQ_STR(pub(&id, "", NULL), "invalid subject length");
    CHECK_EQ_STR(pub(&id, "rift.events.x", NULL), DENIED_PUB);
    CHECK_EQ_STR(pub(&id, "a.b", NULL), DENIED_PUB);
    CHECK_EQ_STR(sub(&id, "a..b"), "invalid subject pattern");
    CHECK_EQ_STR(sub(&id, "a.b"), DENIED_SUB);
    rift_identity_free(&id);
}

RIFT_TEST(publish_reply_rules) {
    static const char *const inbox_ns[] = {"_INBOX.paper.>", NULL};
    rift_identity id;
    CHECK_OK(make_identity(&id, "paper", everything, inbox_ns, false));
    CHECK_EQ_STR(pub(&id, "a", "_INBOX.paper.1"), "ok");
    CHECK_EQ_STR(pub(&id, "a", "_INBOX.other.1"), DENIED_REPLY);
    CHECK_EQ_STR(pub(&id, "a", "_INBOX"), DENIED_REPLY);
    CHECK_EQ_STR(pub(&id, "a", "_inbox.paper.1"), DENIED_REPLY);
    /* The reply is validated as a literal first (code 2). */
    CHECK_EQ_STR(pub(&id, "a", "_INBOX.paper.*"),
                 "publication subject must be literal");
    CHECK_EQ_INT(last.code, RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(pub(&id, "a", "_INBOX..x"), "invalid subject pattern");
    /* The subject check happens before the reply is looked at. */
    CHECK_EQ_STR(pub(&id, "rift.events.a", "bad reply"), DENIED_PUB);
    /* An empty reply means "no reply". */
    CHECK_EQ_STR(pub(&id, "a", ""), "ok");
    rift_identity_free(&id);
}

/* ---- Identity lifecycle ---- */

static int fail_after;

static void *failing_malloc(size_t size, void *ud) {
    (void)ud;
    if (fail_after-- <= 0) {
        return NULL;
    }
    return malloc(size);
}

static void failing_free(void *p, void *ud) {
    (void)ud;
    free(p);
}

static void *failing_calloc(size_t n, size_t size, void *ud) {
    (void)ud;
    if (fail_after-- <= 0) {
        return NULL;
    }
    return calloc(n, size);
}

static void *failing_realloc(void *p, size_t size, void *ud) {
    (void)ud;
    if (fail_after-- <= 0) {
        return NULL;
    }
    return realloc(p, size);
}

static const rift_mem failing_mem = {NULL, failing_malloc, failing_free,
                                     failing_calloc, failing_realloc};

RIFT_TEST(identity_copy_and_allocation_failures) {
    rift_identity src;
    CHECK_OK(make_identity(&src, "plugin", plugin_grants, plugin_grants, true));
    CHECK_OK(rift_identity_set_token(&src, S("secret")));
    rift_identity dst;
    CHECK_OK(rift_identity_copy(&dst, &src, NULL, true));
    CHECK_EQ_STR(dst.name, "plugin");
    CHECK_EQ_STR(dst.token, "secret");
    CHECK_EQ_INT(dst.npublish, 2);
    CHECK_EQ_INT(dst.nsubscribe, 2);
    CHECK(dst.control);
    CHECK_EQ_STR(dst.subscribe[1].pattern, "_INBOX.>");
    rift_identity_free(&dst);
    CHECK_OK(rift_identity_copy(&dst, &src, NULL, false));
    CHECK(dst.token == NULL);
    rift_identity_free(&dst);
    /* Every allocation of a copy failing in turn leaves nothing behind
     * (ASan's leak check covers the "nothing"). */
    int ok_at = -1;
    for (int n = 0; n < 32 && ok_at < 0; n++) {
        fail_after = n;
        int rc = rift_identity_copy(&dst, &src, &failing_mem, true);
        if (rc == 0) {
            ok_at = n;
            rift_identity_free(&dst);
        } else {
            CHECK_EQ_INT(rc, RIFT_ERR_NOMEM);
            CHECK(dst.name == NULL && dst.npublish == 0);
        }
    }
    CHECK(ok_at > 0);
    rift_identity_free(&src);
    rift_identity_free(NULL);
}

/* ---- §3.5 consumer-name scoping ---- */

RIFT_TEST(consumer_scope_digest) {
    /*
     * Expected digests computed independently in the shell:
     *   printf '\x00\x00\x00\x00\x00\x00\x00\x06pluginorders-worker' \
     *     | sha256sum
     *   → e86cb96a1cd628c8021b7d913aee8fe2d63d68cb3884949d2a389304228d2a63
     *   printf '\x00\x00\x00\x00\x00\x00\x00\x05alicejobs' | sha256sum
     *   → 523f520bde0a224b5591dd72b13ef5055682565d87c8bc207e6e1e11fd950ba8
     *   printf '\x00\x00\x00\x00\x00\x00\x00\x02abcjobs' | sha256sum
     *   → e751ccccfddf06437af5506b19a27750f2abe7043d4e59fdd5b74161f96515b1
     *   printf '\x00\x00\x00\x00\x00\x00\x00\x03abcjobs' | sha256sum
     *   → 0c5b0b2b821bb45b0c26fdbf40cc21a4f31ba9cb0de22533e8c750af6baf4a15
     */
    char out[RIFT_SCOPED_CONSUMER_SIZE];
    CHECK_OK(rift_consumer_scope(S("plugin"), S("orders-worker"), out));
    CHECK_EQ_STR(out, "remote_e86cb96a1cd628c8021b7d913aee8fe2d63d68cb3884949d"
                      "2a389304228d2a63");
    CHECK_EQ_INT(strlen(out), 71);
    CHECK_OK(rift_consumer_scope(S("alice"), S("jobs"), out));
    CHECK_EQ_STR(out, "remote_523f520bde0a224b5591dd72b13ef5055682565d87c8bc20"
                      "7e6e1e11fd950ba8");
    /* Length prefix: ("ab", "cjobs") and ("abc", "jobs") differ. */
    CHECK_OK(rift_consumer_scope(S("ab"), S("cjobs"), out));
    CHECK_EQ_STR(out, "remote_e751ccccfddf06437af5506b19a27750f2abe7043d4e59fd"
                      "d5b74161f96515b1");
    CHECK_OK(rift_consumer_scope(S("abc"), S("jobs"), out));
    CHECK_EQ_STR(out, "remote_0c5b0b2b821bb45b0c26fdbf40cc21a4f31ba9cb0de22533"
                      "e8c750af6baf4a15");
    char big[RIFT_SCOPE_INPUT_MAX + 1];
    memset(big, 'a', sizeof(big));
    CHECK_OK(rift_consumer_scope(big, RIFT_SCOPE_INPUT_MAX, big,
                                 RIFT_SCOPE_INPUT_MAX, out));
    CHECK_EQ_INT(rift_consumer_scope(big, sizeof(big), S("x"), out),
                 RIFT_ERR_INVALID_ARGUMENT);
}

RIFT_TEST(identity_consumer_name) {
    rift_identity alice, bob;
    CHECK_OK(make_identity(&alice, "alice", nothing, nothing, false));
    CHECK_OK(make_identity(&bob, "bob", nothing, nothing, false));
    char a[RIFT_SCOPED_CONSUMER_SIZE], b[RIFT_SCOPED_CONSUMER_SIZE];
    rift_error err;
    CHECK_OK(rift_identity_consumer_name(&alice, S("jobs"), a, &err));
    CHECK_EQ_STR(a, "remote_523f520bde0a224b5591dd72b13ef5055682565d87c8bc207"
                    "e6e1e11fd950ba8");
    /* printf '\x00\x00\x00\x00\x00\x00\x00\x03bobjobs' | sha256sum */
    CHECK_OK(rift_identity_consumer_name(&bob, S("jobs"), b, &err));
    CHECK_EQ_STR(b, "remote_70f8837250069d6fff2e9755d7da1a449e62833cc65aefe07"
                    "3e4a4c0cf6eed12");
    CHECK_EQ_INT(rift_identity_consumer_name(&alice, S("a b"), a, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid consumer name");
    CHECK_EQ_INT(rift_identity_consumer_name(&alice, S(""), a, &err),
                 RIFT_ERR_PROTOCOL);
    rift_identity_free(&alice);
    rift_identity_free(&bob);
}

/* ---- Overlap: edge cases and an exhaustive cross-check ---- */

RIFT_TEST(overlap_wildcard_edges) {
    CHECK(overlaps(">", ">"));
    CHECK(overlaps("*", "*"));
    CHECK(overlaps("*", ">"));
    CHECK(overlaps(">", "*"));
    CHECK(!overlaps("*", "*.*"));
    CHECK(overlaps(">", "*.*"));
    CHECK(overlaps("*.>", "a.b.c"));
    CHECK(!overlaps("*.>", "a"));
    CHECK(overlaps("a.>", "a.*"));
    CHECK(overlaps("a.>", "*.>"));
    CHECK(!overlaps("a.>", "b.>"));
    CHECK(overlaps("a.*.>", "*.b.c.d"));
    CHECK(!overlaps("a.*.>", "*.b"));
    CHECK(!overlaps("a.b.c", "a.b"));
    CHECK(overlaps("events.>", "events.mine.>"));
    CHECK(!overlaps("events.>", "events"));
    CHECK(!overlaps("nomatch.>", "events.>"));
}

/* Patterns over tokens a, b, *, > (">" last) of 1..3 tokens. */
static size_t all_patterns(char out[][16]) {
    static const char *const toks[] = {"a", "b", "*", ">"};
    size_t n = 0;
    for (int len = 1; len <= 3; len++) {
        int total = 1;
        for (int i = 0; i < len; i++) {
            total *= 4;
        }
        for (int code = 0; code < total; code++) {
            char buf[16] = "";
            bool ok = true;
            for (int i = 0, c = code; i < len; i++, c /= 4) {
                if (c % 4 == 3 && i != len - 1) {
                    ok = false;
                }
                strcat(buf, toks[c % 4]);
                if (i + 1 < len) {
                    strcat(buf, ".");
                }
            }
            if (ok) {
                memcpy(out[n++], buf, sizeof(buf));
            }
        }
    }
    return n;
}

/* Is there a literal subject over a, b, c of 1..4 tokens both match? */
static bool witness(const char *p, const char *q) {
    static const char *const toks[] = {"a", "b", "c"};
    for (int len = 1; len <= 4; len++) {
        int total = 1;
        for (int i = 0; i < len; i++) {
            total *= 3;
        }
        for (int code = 0; code < total; code++) {
            char s[16] = "";
            for (int i = 0, c = code; i < len; i++, c /= 3) {
                strcat(s, toks[c % 3]);
                if (i + 1 < len) {
                    strcat(s, ".");
                }
            }
            if (rift_subject_matches(p, strlen(p), s, strlen(s)) &&
                rift_subject_matches(q, strlen(q), s, strlen(s))) {
                return true;
            }
        }
    }
    return false;
}

RIFT_TEST(overlap_agrees_with_a_common_subject) {
    static char pats[128][16];
    size_t n = all_patterns(pats);
    CHECK(n > 50);
    size_t mismatches = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            bool got = overlaps(pats[i], pats[j]);
            if (got != witness(pats[i], pats[j]) ||
                got != overlaps(pats[j], pats[i])) {
                if (mismatches++ < 5) {
                    fprintf(stderr, "overlaps(%s, %s) = %d\n", pats[i], pats[j],
                            got);
                }
            }
        }
    }
    CHECK_EQ_U64(mismatches, 0);
}
