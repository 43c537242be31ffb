/*
 * test_subject.c — unit tests of subject syntax (subject layer): the broker
 * rule and matching (docs/protocol-v1.md §1.3, §1.4), the wire validators
 * (§3.6, §3.9), the configuration rule (§5) and its error text.
 */
#include "subject/acl.h"
#include "common/debug_str.h"
#include "subject/subject.h"
#include "test.h"

#define S(lit) (lit), (sizeof(lit) - 1)

static bool broker_sub(const char *s, size_t len) {
    return rift_subject_valid(s, len, true, 1024);
}

static bool broker_pub(const char *s, size_t len) {
    return rift_subject_valid(s, len, false, 1024);
}

/* ---- §1.3 broker rule ---- */

RIFT_TEST(broker_vectors_subscribe_rejects) {
    CHECK(!broker_sub(S("")));
    CHECK(!broker_sub(S(".x")));
    CHECK(!broker_sub(S("x.")));
    CHECK(!broker_sub(S("x..y")));
    CHECK(!broker_sub(S("x.>.y")));
    CHECK(!broker_sub(S("x.a*")));
    CHECK(!broker_sub(S("x y")));
}

RIFT_TEST(broker_vectors_publish_rejects_wildcards) {
    CHECK(!broker_pub(S("x.*")));
    CHECK(!broker_pub(S("x.>")));
    CHECK(broker_sub(S("x.*")));
    CHECK(broker_sub(S("x.>")));
    CHECK(broker_pub(S("x.y")));
}

RIFT_TEST(broker_rule_details) {
    CHECK(broker_sub(S("*")));
    CHECK(broker_sub(S(">")));
    CHECK(broker_sub(S("*.*.>")));
    CHECK(!broker_sub(S("*a")));
    CHECK(!broker_sub(S("a>")));
    CHECK(!broker_sub(S(">.a")));
    CHECK(!broker_sub(S(">>")));
    CHECK(!broker_sub(S("**")));
    CHECK(!broker_sub(S(".")));
    CHECK(!broker_sub(S("a\tb")));
    CHECK(!broker_sub(S("a\nb")));
    CHECK(!broker_sub(S("a\x7f")));
    CHECK(!broker_sub("a\0b", 3));
    /* Punctuation other than the separators is ordinary. */
    CHECK(broker_pub(S("a-b_c:d/e#f$g~!\"'")));
    /* The byte limit is max_bytes, inclusive. */
    CHECK(rift_subject_valid(S("abcd"), false, 4));
    CHECK(!rift_subject_valid(S("abcde"), false, 4));
}

RIFT_TEST(broker_unicode_whitespace_and_controls) {
    CHECK(!broker_pub(S("a\xC2\xA0"
                        "b"))); /* U+00A0 no-break space */
    CHECK(!broker_pub(S("a\xE2\x80\x83"
                        "b"))); /* U+2003 em space */
    CHECK(!broker_pub(S("a\xE3\x80\x80"
                        "b")));            /* U+3000 ideographic space */
    CHECK(!broker_pub(S("a\xC2\x85")));    /* U+0085 NEL (Cc) */
    CHECK(!broker_pub(S("a\xC2\x9F")));    /* U+009F (Cc) */
    CHECK(!broker_pub(S("\xE2\x80\xA8"))); /* U+2028 line separator */
    CHECK(!broker_pub(S("\xE1\x9A\x80"))); /* U+1680 ogham space */
    CHECK(broker_pub(S("a\xE2\x80\x8B"
                       "b")));      /* U+200B is Cf, not whitespace */
    CHECK(!broker_pub(S("\xFF")));  /* not UTF-8 */
    CHECK(!broker_pub(S("a\xC3"))); /* truncated sequence */
    CHECK(broker_pub(S("caf\xC3\xA9.na\xC3\xAFve")));
    CHECK(broker_sub(S("\xE6\x97\xA5\xE6\x9C\xAC.*.>")));
}

RIFT_TEST(scan_classifies) {
    CHECK_EQ_INT(rift_subject_scan(S("a.b"), 1024), RIFT_SUBJECT_LITERAL);
    CHECK_EQ_INT(rift_subject_scan(S("a.*"), 1024), RIFT_SUBJECT_WILDCARD);
    CHECK_EQ_INT(rift_subject_scan(S("a.>"), 1024), RIFT_SUBJECT_WILDCARD);
    CHECK_EQ_INT(rift_subject_scan(S("a..b"), 1024), RIFT_SUBJECT_INVALID);
    CHECK_EQ_INT(rift_subject_scan(S("abc"), 2), RIFT_SUBJECT_INVALID);
    CHECK(rift_subject_has_wildcard(S("a.*.b")));
    CHECK(rift_subject_has_wildcard(S(">")));
    CHECK(!rift_subject_has_wildcard(S("a*.b")));
    CHECK(!rift_subject_has_wildcard(S("")));
}

/* ---- §1.4 matching ---- */

static int count_matches(const char *subject, size_t len) {
    static const char *subs[] = {"orders.created", "orders.*", "orders.>"};
    int n = 0;
    for (size_t i = 0; i < 3; i++) {
        if (rift_subject_matches(subs[i], strlen(subs[i]), subject, len)) {
            n++;
        }
    }
    return n;
}

RIFT_TEST(match_vectors) {
    CHECK_EQ_INT(count_matches(S("orders.created")), 3);
    CHECK_EQ_INT(count_matches(S("orders")), 0);
    CHECK_EQ_INT(count_matches(S("orders.created.local")), 1);
    CHECK(rift_subject_matches(S("orders.>"), S("orders.created.local")));
}

RIFT_TEST(match_details) {
    CHECK(rift_subject_matches(S(">"), S("a")));
    CHECK(rift_subject_matches(S(">"), S("a.b.c")));
    CHECK(rift_subject_matches(S("*"), S("a")));
    CHECK(!rift_subject_matches(S("*"), S("a.b")));
    CHECK(rift_subject_matches(S("a.*.c"), S("a.b.c")));
    CHECK(!rift_subject_matches(S("a.*.c"), S("a.b.d")));
    CHECK(!rift_subject_matches(S("a.b"), S("a.bc")));
    CHECK(!rift_subject_matches(S("a.bc"), S("a.b")));
    CHECK(!rift_subject_matches(S("a.b.c"), S("a.b")));
    CHECK(!rift_subject_matches(S("a.b"), S("a.b.c")));
    CHECK(!rift_subject_matches(S("a.*"), S("a")));
    CHECK(rift_subject_matches(S("caf\xC3\xA9.*"), S("caf\xC3\xA9.x")));
}

/* ---- §3.6 / §3.9 wire validation ---- */

static const char *pattern_error(const char *s, size_t len) {
    static rift_error err;
    memset(&err, 0, sizeof(err));
    int rc = rift_subject_validate_pattern(s, len, &err);
    if (rc == 0) {
        return "ok";
    }
    return rc == RIFT_ERR_PROTOCOL && err.code == rc ? err.text : "bad code";
}

static const char *literal_error(const char *s, size_t len) {
    static rift_error err;
    memset(&err, 0, sizeof(err));
    int rc = rift_subject_validate_literal(s, len, &err);
    if (rc == 0) {
        return "ok";
    }
    return rc == RIFT_ERR_PROTOCOL && err.code == rc ? err.text : "bad code";
}

RIFT_TEST(validate_pattern_vectors) {
    CHECK_EQ_STR(pattern_error(S("")), "invalid subject length");
    CHECK_EQ_STR(pattern_error(S("a..b")), "invalid subject pattern");
    CHECK_EQ_STR(pattern_error(S("a.>.b")), "invalid subject pattern");
    CHECK_EQ_STR(pattern_error(S("a*b")), "invalid subject pattern");
    CHECK_EQ_STR(pattern_error(S("a b")), "invalid subject pattern");
    CHECK_EQ_STR(pattern_error("a\0b", 3), "invalid subject pattern");
    CHECK_EQ_STR(pattern_error(S("a.*.>")), "ok");
    CHECK_EQ_STR(pattern_error(S("a\xC2\xA0")), "invalid subject pattern");
}

RIFT_TEST(validate_length_bounds) {
    char buf[1100];
    memset(buf, 'a', sizeof(buf));
    CHECK_EQ_STR(pattern_error(buf, 1024), "ok");
    CHECK_EQ_STR(literal_error(buf, 1024), "ok");
    CHECK_EQ_STR(pattern_error(buf, 1025), "invalid subject length");
    /* Length is checked before the token rule. */
    buf[0] = '.';
    CHECK_EQ_STR(pattern_error(buf, 1025), "invalid subject length");
    CHECK_EQ_STR(pattern_error(buf, 1024), "invalid subject pattern");
}

RIFT_TEST(validate_literal_vectors) {
    /* decode_message of 00 01 2A 00 00: subject "*", empty reply. */
    static const uint8_t frame[] = {0x00, 0x01, 0x2A, 0x00, 0x00};
    size_t slen = ((size_t)frame[0] << 8) | frame[1];
    CHECK_EQ_STR(literal_error((const char *)frame + 2, slen),
                 "publication subject must be literal");
    CHECK_EQ_STR(literal_error(S("a.>")),
                 "publication subject must be literal");
    CHECK_EQ_STR(literal_error(S("a.*.b")),
                 "publication subject must be literal");
    /* A wildcard inside a token fails earlier. */
    CHECK_EQ_STR(literal_error(S("a>")), "invalid subject pattern");
    CHECK_EQ_STR(literal_error(S("a.b*")), "invalid subject pattern");
    CHECK_EQ_STR(literal_error(S("")), "invalid subject length");
    CHECK_EQ_STR(literal_error(S("_INBOX.0123456789abcdef")), "ok");
    /* NULL err is allowed. */
    CHECK_EQ_INT(rift_subject_validate_literal(S("a.*"), NULL),
                 RIFT_ERR_PROTOCOL);
}

/* ---- §5 configuration rule ---- */

RIFT_TEST(config_rule) {
    CHECK(rift_subject_config_valid(S("game.*.>"), 1024));
    CHECK(rift_subject_config_valid(S("a-b_c:d/e#f"), 1024));
    CHECK(!rift_subject_config_valid(S(""), 1024));
    CHECK(!rift_subject_config_valid(S("a..b"), 1024));
    CHECK(!rift_subject_config_valid(S("a.>.b"), 1024));
    CHECK(!rift_subject_config_valid(S("a*"), 1024));
    CHECK(!rift_subject_config_valid(S("a b"), 1024));
    CHECK(!rift_subject_config_valid(S("a\x7f"), 1024));
    CHECK(rift_subject_config_valid(S("abcd"), 4));
    CHECK(!rift_subject_config_valid(S("abcde"), 4));
    /* Non-ASCII: accepted by the broker and the wire, not by the config. */
    CHECK(broker_pub(S("caf\xC3\xA9")));
    CHECK_EQ_STR(pattern_error(S("caf\xC3\xA9")), "ok");
    CHECK(!rift_subject_config_valid(S("caf\xC3\xA9"), 1024));
    CHECK(!rift_subject_config_valid(S("a\xE2\x80\x8B"), 1024));
}

RIFT_TEST(config_error_text) {
    rift_error err;
    CHECK_EQ_INT(rift_subject_config_error(&err, S("a b")),
                 RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_INT(err.code, RIFT_ERR_INVALID_CONFIG);
    CHECK_EQ_STR(err.text, "messaging: invalid subject pattern \"a b\"; use "
                           "tokens, * or terminal >");
    rift_subject_config_error(&err, S("x\t\"y\\"));
    CHECK_EQ_STR(err.text, "messaging: invalid subject pattern "
                           "\"x\\t\\\"y\\\\\"; use tokens, * or terminal >");
    rift_subject_config_error(&err, S(""));
    CHECK_EQ_STR(err.text, "messaging: invalid subject pattern \"\"; use "
                           "tokens, * or terminal >");
    /* Long patterns are cut with the text at 1,024 bytes. */
    char big[2000];
    memset(big, 'a', sizeof(big));
    rift_subject_config_error(&err, big, sizeof(big));
    CHECK_EQ_INT(strlen(err.text), RIFT_ERROR_TEXT_MAX);
    CHECK(memcmp(err.text, "messaging: invalid subject pattern \"aaa", 39) ==
          0);
}

static const char *debug(const char *s, size_t len) {
    static char buf[256];
    size_t n = rift_debug_str(buf, sizeof(buf), s, len);
    return n == strlen(buf) ? buf : "length mismatch";
}

RIFT_TEST(debug_str_matches_rust) {
    CHECK_EQ_STR(debug(S("a.b")), "\"a.b\"");
    CHECK_EQ_STR(debug("a\0b", 3), "\"a\\0b\"");
    CHECK_EQ_STR(debug(S("\r\n")), "\"\\r\\n\"");
    CHECK_EQ_STR(debug(S("'")), "\"'\"");
    CHECK_EQ_STR(debug(S("\x1b\x7f")), "\"\\u{1b}\\u{7f}\"");
    CHECK_EQ_STR(debug(S("\xC2\x85")), "\"\\u{85}\"");
    CHECK_EQ_STR(debug(S("caf\xC3\xA9")), "\"caf\xC3\xA9\"");
    CHECK_EQ_STR(debug(S("\xC2\xA0")), "\"\\u{a0}\"");
    CHECK_EQ_STR(debug(S("\xE2\x80\x83")), "\"\\u{2003}\"");
    CHECK_EQ_STR(debug(S("\xE3\x80\x80")), "\"\\u{3000}\"");
    CHECK_EQ_STR(debug(S("\xE2\x80\x8B")), "\"\\u{200b}\""); /* Cf */
    CHECK_EQ_STR(debug(S("e\xCC\x81")), "\"e\\u{301}\"");    /* Mn */
    CHECK_EQ_STR(debug(S("\xEF\xBB\xBF")), "\"\\u{feff}\""); /* BOM */
    CHECK_EQ_STR(debug(S("\xEE\x80\x80")), "\"\\u{e000}\""); /* Co */
    CHECK_EQ_STR(debug(S("\xF0\x9F\x98\x80")), "\"\xF0\x9F\x98\x80\"");
    CHECK_EQ_STR(debug(S("\xE6\x97\xA5")), "\"\xE6\x97\xA5\"");
    CHECK_EQ_STR(debug(S("\xFF")), "\"\\xFF\"");
    /* snprintf-like: the full length is returned even when cut. */
    char small[4];
    CHECK_EQ_INT(rift_debug_str(small, sizeof(small), S("abcdef")), 8);
    CHECK_EQ_STR(small, "\"ab");
    CHECK_EQ_INT(rift_debug_str(NULL, 0, S("a\n")), 5);
}
