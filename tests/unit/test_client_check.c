/*
 * test_client_check.c — the C client's local validation, answer decoding
 * and message building, without a server (unit tests): the checks that run
 * before anything is written (§6.2, §3.9), ERROR frame mapping (§2.5) and
 * argument errors of the public API.
 */
#include "test.h"

#include "client/client_internal.h"

#include <stdlib.h>

/* ---- Publication checks ---- */

RIFT_TEST(publish_checks_subject_reply_and_size_in_order) {
    rift_error err;
    CHECK_OK(rift_client_check_publish("a.b", 3, NULL, 0, 0, &err));
    CHECK_OK(rift_client_check_publish("a.b", 3, "_INBOX.x", 8, 1048576, &err));
    CHECK_EQ_INT(rift_client_check_publish("a.b", 3, NULL, 0, 1048577, &err),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_STR(err.text, "payload exceeds 1 MiB transport limit");
    CHECK_EQ_INT(rift_client_check_publish("", 0, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid subject length");
    CHECK_EQ_INT(rift_client_check_publish("a..b", 4, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid subject pattern");
    CHECK_EQ_INT(rift_client_check_publish("a.*", 3, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "publication subject must be literal");
    CHECK_EQ_INT(rift_client_check_publish("a.>", 3, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "publication subject must be literal");
    /* The reply is checked after the subject, before the size. */
    CHECK_EQ_INT(rift_client_check_publish("a.b", 3, "r.*", 3, 1048577, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "publication subject must be literal");
    CHECK_EQ_INT(rift_client_check_publish("a b", 3, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(rift_client_check_publish("a\0b", 3, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(rift_client_check_publish("a.\xff", 3, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    char longest[1025];
    memset(longest, 'a', sizeof(longest));
    CHECK_OK(rift_client_check_publish(longest, 1024, NULL, 0, 0, &err));
    CHECK_EQ_INT(rift_client_check_publish(longest, 1025, NULL, 0, 0, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid subject length");
}

RIFT_TEST(strings_and_request_timeouts) {
    rift_error err;
    char s[4097];
    memset(s, 'x', sizeof(s));
    CHECK_OK(rift_client_check_string(s, 4096, &err));
    CHECK_OK(rift_client_check_string(NULL, 0, &err));
    CHECK_EQ_INT(rift_client_check_string(s, 4097, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "string exceeds protocol limit");
    CHECK_EQ_INT(rift_client_check_string("a\xc3", 2, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "string must be UTF-8");

    CHECK_OK(rift_client_check_request_timeout(1, &err));
    CHECK_OK(rift_client_check_request_timeout(120000, &err));
    CHECK_EQ_INT(rift_client_check_request_timeout(0, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout must be 1..120000 ms");
    CHECK_EQ_INT(rift_client_check_request_timeout(120001, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout must be 1..120000 ms");
    CHECK_EQ_INT(rift_client_check_request_timeout(UINT32_MAX, &err),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout must be 1..120000 ms");
    CHECK_EQ_INT(
        rift_client_check_request_timeout((uint64_t)UINT32_MAX + 1, &err),
        RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "request timeout too large");
}

/* ---- Answers ---- */

static size_t error_body(uint8_t *out, uint16_t code, const char *text) {
    uint8_t buf[2048];
    rift_ssize n =
        rift_frame_encode_error(buf, sizeof(buf), code, text, strlen(text));
    memcpy(out, buf + 4, (size_t)n - 4);
    return (size_t)n - 4;
}

RIFT_TEST(error_frames_map_to_codes_with_the_server_text) {
    uint8_t body[2048];
    rift_error err;
    size_t n = error_body(body, 1, "subscription not permitted");
    CHECK_EQ_INT(rift_client_error_from_frame(body, n, &err),
                 RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "subscription not permitted");
    n = error_body(body, 2, "unknown stream");
    CHECK_EQ_INT(rift_client_error_from_frame(body, n, &err), RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "unknown stream");
    n = error_body(body, 0, "");
    CHECK_EQ_INT(rift_client_error_from_frame(body, n, &err), RIFT_ERR_REMOTE);
    CHECK_EQ_STR(err.text, "");
    /* Malformed ERROR bodies give the decoder's text. */
    const uint8_t trunc[] = {3, 0};
    CHECK_EQ_INT(rift_client_error_from_frame(trunc, sizeof(trunc), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "truncated frame");
    const uint8_t badlen[] = {3, 0, 2, 0, 9, 'a'};
    CHECK_EQ_INT(rift_client_error_from_frame(badlen, sizeof(badlen), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid string length");
    const uint8_t badutf[] = {3, 0, 2, 0, 1, 0xff};
    CHECK_EQ_INT(rift_client_error_from_frame(badutf, sizeof(badutf), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "string must be UTF-8");
    const uint8_t trailing[] = {3, 0, 2, 0, 1, 'a', 'b'};
    CHECK_EQ_INT(rift_client_error_from_frame(trailing, sizeof(trailing), &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "unexpected trailing frame bytes");
}

RIFT_TEST(expect_ok_accepts_only_a_bare_ok) {
    rift_error err;
    const uint8_t ok[] = {RIFT_OP_OK};
    CHECK_OK(rift_client_expect_ok(ok, 1, &err));
    const uint8_t ok_extra[] = {RIFT_OP_OK, 0};
    CHECK_EQ_INT(rift_client_expect_ok(ok_extra, 2, &err), RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "unexpected trailing frame bytes");
    for (unsigned op = 0; op < 256; op++) {
        if (op == RIFT_OP_OK || op == RIFT_OP_ERROR) {
            continue;
        }
        uint8_t b[1] = {(uint8_t)op};
        CHECK_EQ_INT(rift_client_expect_ok(b, 1, &err), RIFT_ERR_PROTOCOL);
        CHECK_EQ_STR(err.text, "unexpected response opcode");
    }
    uint8_t body[64];
    size_t n = error_body(body, 1, "authentication failed");
    CHECK_EQ_INT(rift_client_expect_ok(body, n, &err), RIFT_ERR_PERMISSION);
    CHECK_EQ_STR(err.text, "authentication failed");
}

/* ---- Messages ---- */

RIFT_TEST(messages_copy_or_adopt_the_body) {
    uint8_t frame[64];
    rift_ssize h = rift_frame_encode_message_header(frame, sizeof(frame), "a.b",
                                                    3, "_INBOX.r", 8, 5);
    memcpy(frame + h, "hello", 5);
    size_t body_len = (size_t)h + 5 - 4;
    rift_frame_msg f;
    rift_error err;
    CHECK_OK(rift_frame_decode_msg(frame + 5, body_len - 1, &f, &err));

    rift_msg *m;
    CHECK_OK(rift_client_msg_build(&m, NULL, NULL, &f, NULL));
    memset(frame, 0, sizeof(frame)); /* the message owns copies */
    size_t len;
    CHECK_EQ_STR(rift_msg_subject(m, &len), "a.b");
    CHECK_EQ_INT(len, 3);
    CHECK_EQ_STR(rift_msg_reply(m, &len), "_INBOX.r");
    CHECK_EQ_INT(len, 8);
    const uint8_t *p = rift_msg_payload(m, &len);
    CHECK_EQ_MEM(p, len, "hello", 5);
    rift_msg_unref(m);

    /* An assembled body is adopted: the payload is not copied again. */
    uint8_t *body = malloc(body_len);
    h = rift_frame_encode_message_header(frame, sizeof(frame), "x", 1, NULL, 0,
                                         3);
    memcpy(body, frame + 4, (size_t)h - 4);
    memcpy(body + h - 4, "xyz", 3);
    CHECK_OK(rift_frame_decode_msg(body + 1, (size_t)h - 4 + 3 - 1, &f, &err));
    CHECK_OK(rift_client_msg_build(&m, NULL, NULL, &f, body));
    p = rift_msg_payload(m, &len);
    CHECK(p == f.payload);
    CHECK_EQ_MEM(p, len, "xyz", 3);
    CHECK(rift_msg_reply(m, &len) == NULL && len == 0);
    rift_msg_unref(m);
    rift_msg_unref(NULL);
}

/* A counting allocator: bodies from it are copied and given back. */
static int live_allocs;
static void *count_malloc(size_t n, void *ud) {
    (void)ud;
    live_allocs++;
    return malloc(n);
}
static void count_free(void *p, void *ud) {
    (void)ud;
    if (p != NULL) {
        live_allocs--;
    }
    free(p);
}
static void *count_calloc(size_t a, size_t b, void *ud) {
    (void)ud;
    live_allocs++;
    return calloc(a, b);
}
static void *count_realloc(void *p, size_t n, void *ud) {
    (void)ud;
    if (p == NULL) {
        live_allocs++;
    }
    return realloc(p, n);
}

RIFT_TEST(bodies_of_other_allocators_are_copied) {
    rift_mem mem = {NULL, count_malloc, count_free, count_calloc,
                    count_realloc};
    uint8_t frame[64];
    rift_ssize h = rift_frame_encode_message_header(frame, sizeof(frame), "s",
                                                    1, NULL, 0, 2);
    uint8_t *body = rift_malloc(&mem, (size_t)h - 4 + 2);
    memcpy(body, frame + 4, (size_t)h - 4);
    memcpy(body + h - 4, "ok", 2);
    rift_frame_msg f;
    rift_error err;
    CHECK_OK(rift_frame_decode_msg(body + 1, (size_t)h - 4 + 2 - 1, &f, &err));
    rift_msg *m;
    CHECK_OK(rift_client_msg_build(&m, &mem, NULL, &f, body));
    CHECK_EQ_INT(live_allocs, 0);
    size_t len;
    const uint8_t *p = rift_msg_payload(m, &len);
    CHECK_EQ_MEM(p, len, "ok", 2);
    rift_msg_unref(m);
}

RIFT_TEST(ring_keeps_fifo_order_across_growth_and_moves) {
    rift_client_ring a, b;
    rift_client_ring_init(&a, NULL);
    rift_client_ring_init(&b, NULL);
    rift_client_entry e;
    CHECK(!rift_client_ring_pop(&a, &e));
    uint32_t next_in = 0, next_out = 0;
    /* Interleave pushes and pops so the head wraps while growing. */
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 37; i++) {
            rift_msg *m;
            CHECK_OK(rift_msg_new(&m, NULL, "x", 1, NULL, 0, NULL, 0, NULL));
            CHECK_OK(
                rift_client_ring_push(&b, (rift_client_entry){m, next_in++}));
        }
        CHECK_OK(rift_client_ring_move(&a, &b));
        CHECK_EQ_INT(b.count, 0);
        for (int i = 0; i < 29; i++) {
            CHECK(rift_client_ring_pop(&a, &e));
            CHECK_EQ_INT(e.wire_len, next_out++);
            rift_msg_unref(e.msg);
        }
    }
    CHECK_EQ_INT(a.count, next_in - next_out);
    while (rift_client_ring_pop(&a, &e)) {
        CHECK_EQ_INT(e.wire_len, next_out++);
        rift_msg_unref(e.msg);
    }
    CHECK_EQ_INT(next_out, next_in);
    rift_msg *m;
    CHECK_OK(rift_msg_new(&m, NULL, "x", 1, NULL, 0, NULL, 0, NULL));
    CHECK_OK(rift_client_ring_push(&a, (rift_client_entry){m, 0}));
    rift_client_ring_free(&a); /* unrefs what is left */
    rift_client_ring_free(&b);
}

/* ---- Public API arguments ---- */

RIFT_TEST(connect_rejects_missing_settings_and_bad_addresses) {
    rift_client_settings s;
    rift_client_settings_default(&s);
    CHECK_EQ_INT(s.connect_timeout_ms, 30000);
    CHECK_EQ_INT(s.op_timeout_ms, 30000);
    rift_client *c = NULL;
    rift_error err;
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    s.ca_file = "ca.pem";
    s.server_name = "localhost";
    s.token = "t";
    const char *bad[] = {
        "nohost", ":7443", "127.0.0.1:", "[::1]7443", "[::1", "a:b:c"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s.address = bad[i];
        CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(err.text, "invalid server address") != NULL, "%s: %s",
                  bad[i], err.text);
    }
    char token[4098];
    memset(token, 't', sizeof(token) - 1);
    token[sizeof(token) - 1] = '\0';
    s.address = "127.0.0.1:7443";
    s.token = token;
    CHECK_EQ_INT(rift_client_new(&c, &s, &err), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(err.text, "string exceeds protocol limit");
    CHECK(c == NULL);
    rift_client_del(NULL);
    rift_publisher_close(NULL);
    rift_client_sub_close(NULL);
}
