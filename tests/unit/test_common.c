/*
 * test_common.c — unit tests of the common layer: error table, error detail
 * truncation, UTF-8 validation.
 */
#include "common/common.h"
#include "test.h"

RIFT_TEST(strerror_covers_table) {
    CHECK_EQ_STR(rift_strerror(RIFT_ERR_NO_RESPONDERS),
                 "no responders available");
    CHECK_EQ_STR(rift_err_name(RIFT_ERR_TIMEOUT), "RIFT_ERR_TIMEOUT");
    CHECK_EQ_STR(rift_err_name(-2), "ENOENT");
    CHECK(rift_err_is_fatal(RIFT_ERR_POISONED));
    CHECK(!rift_err_is_fatal(RIFT_ERR_TIMEOUT));
    CHECK(!rift_err_is_fatal(-5));
}

RIFT_TEST(wire_code_is_one_only_for_permission) {
    CHECK_EQ_INT(rift_error_wire_code(RIFT_ERR_PERMISSION), 1);
    CHECK_EQ_INT(rift_error_wire_code(RIFT_ERR_PROTOCOL), 2);
    CHECK_EQ_INT(rift_error_wire_code(RIFT_ERR_TIMEOUT), 2);
}

RIFT_TEST(error_text_cut_at_utf8_boundary) {
    /* 1,023 ASCII bytes then a 3-byte character straddling byte 1,024:
     * the character does not fit, so the text is cut before it. */
    char subject[1100];
    memset(subject, 'a', 1023);
    memcpy(subject + 1023, "\xE2\x82\xAC", 3);
    subject[1026] = '\0';
    rift_error err;
    rift_error_set(&err, RIFT_ERR_INVALID_SUBJECT, "%s", subject);
    CHECK_EQ_INT(strlen(err.text), 1023);
    /* A character that ends exactly at byte 1,024 is kept. */
    memset(subject, 'a', 1021);
    memcpy(subject + 1021, "\xE2\x82\xAC", 3);
    memcpy(subject + 1024, "zz", 3);
    rift_error_set(&err, RIFT_ERR_INVALID_SUBJECT, "%s", subject);
    CHECK_EQ_INT(strlen(err.text), 1024);
    CHECK_EQ_INT(err.code, RIFT_ERR_INVALID_SUBJECT);
}

RIFT_TEST(utf8_validation) {
    CHECK(rift_utf8_valid((const uint8_t *)"hello.world", 11));
    CHECK(rift_utf8_valid((const uint8_t *)"\xC3\xA9t\xC3\xA9", 5));
    CHECK(!rift_utf8_valid((const uint8_t *)"\xFF", 1));
    CHECK(!rift_utf8_valid((const uint8_t *)"\xC0\xAF", 2));     /* overlong */
    CHECK(!rift_utf8_valid((const uint8_t *)"\xED\xA0\x80", 3)); /* surrogate */
    CHECK(!rift_utf8_valid((const uint8_t *)"\xF4\x90\x80\x80", 4));
    CHECK(!rift_utf8_valid((const uint8_t *)"\xE2\x82", 2)); /* truncated */
    CHECK(rift_utf8_valid((const uint8_t *)"\xF0\x9F\x98\x80", 4));
}
