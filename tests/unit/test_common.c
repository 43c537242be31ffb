/*
 * test_common.c — unit tests of the common layer: error table, error detail
 * truncation, UTF-8 validation, log lines.
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

/* ---- Logging ---- */

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Runs rift_log(|level|, "%s", |msg|) with stderr captured; returns what
 * was written (malloc'd). */
static char *captured_log(const char *msg) {
    char path[] = "/tmp/rift-log-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        return NULL;
    }
    unlink(path);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    rift_log(RIFT_LOG_ERROR, "%s", msg);
    dup2(saved, STDERR_FILENO);
    close(saved);
    off_t n = lseek(fd, 0, SEEK_END);
    char *out = calloc(1, (size_t)n + 1);
    if (out != NULL && pread(fd, out, (size_t)n, 0) != n) {
        free(out);
        out = NULL;
    }
    close(fd);
    return out;
}

RIFT_TEST(log_lines_stay_one_line) {
    /* A Lua error (or any peer-influenced text) with line breaks. */
    char *out = captured_log("p: on_message: first\nsecond\r\nthird");
    CHECK(out != NULL);
    size_t len = strlen(out);
    CHECK(len > 0 && out[len - 1] == '\n');
    CHECK(strchr(out, '\n') == out + len - 1);
    CHECK(strchr(out, '\r') == NULL);
    CHECK(strstr(out, "error p: on_message: first second  third\n") != NULL);
    free(out);
}

RIFT_TEST(log_keeps_a_2048_byte_handler_error) {
    /* §7.1: "<name>: on_message: <error>" with the error cut to 2,048
     * bytes must reach the log whole. */
    char msg[2200];
    int n = snprintf(msg, sizeof(msg), "plugin: on_message: ");
    memset(msg + n, 'e', 2048);
    msg[n + 2048] = '\0';
    char *out = captured_log(msg);
    CHECK(out != NULL);
    char *at = strstr(out, "plugin: on_message: ");
    CHECK(at != NULL);
    CHECK_EQ_INT(strlen(at), (size_t)n + 2048 + 1);
    free(out);
    /* Longer lines are cut on a character boundary (whatever the prefix
     * length, the cut lands inside a 3-byte character 2 times out of 3;
     * try three alignments). */
    char big[9000];
    for (int shift = 0; shift < 3; shift++) {
        memset(big, 'a', (size_t)shift);
        for (int i = 0; i < 2900; i++) {
            memcpy(big + shift + 3 * i, "\xE2\x82\xAC", 3);
        }
        big[shift + 3 * 2900] = '\0';
        out = captured_log(big);
        CHECK(out != NULL);
        CHECK(rift_utf8_valid((const uint8_t *)out, strlen(out)));
        CHECK(strlen(out) > RIFT_LOG_LINE_MAX - 3);
        free(out);
    }
}
