/*
 * test_codec_decode.c — unit tests of the frame decoders and opcode checks
 * (codec layer): the §3.9 decoder vectors and malformed frames, every
 * error text, field-order precedence, limits and zero copy.
 */
#include "codec/frame.h"
#include "test.h"

#include <stdlib.h>

/* Decodes a whole body and checks it fails with RIFT_ERR_PROTOCOL and
 * exactly |want|. */
#define CHECK_DECODE_FAILS(body, len, want)                                    \
 do {                                                                          \
  rift_frame f_;                                                               \
  rift_error e_ = {0};                                                         \
  CHECK_EQ_INT(rift_frame_decode((body), (len), &f_, &e_), RIFT_ERR_PROTOCOL); \
  CHECK_EQ_INT(e_.code, RIFT_ERR_PROTOCOL);                                    \
  CHECK_EQ_STR(e_.text, (want));                                               \
 } while (0)

#define B(...)  ((const uint8_t[]){__VA_ARGS__})
#define BL(...) sizeof((const uint8_t[]){__VA_ARGS__})

/* ---- take_string (§3.9) ---- */

RIFT_TEST(take_string_vectors) {
    const char *s = NULL;
    size_t n = 0, pos = 0;
    rift_error err = {0};

    /* 00 02 61: declared 2 bytes, only 1 present. */
    CHECK_EQ_INT(
        rift_frame_take_string(B(0x00, 0x02, 0x61), 3, &pos, &s, &n, &err),
        RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid string length");
    CHECK_EQ_INT(pos, 0);

    /* 00 01 FF: not UTF-8. */
    CHECK_EQ_INT(
        rift_frame_take_string(B(0x00, 0x01, 0xFF), 3, &pos, &s, &n, &err),
        RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "string must be UTF-8");

    /* FF FF: 65,535 > 4,096. */
    CHECK_EQ_INT(rift_frame_take_string(B(0xFF, 0xFF), 2, &pos, &s, &n, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid string length");

    /* One byte: the u16 length itself is missing. */
    CHECK_EQ_INT(rift_frame_take_string(B(0x00), 1, &pos, &s, &n, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "truncated frame");

    const uint8_t ok[] = {0x00, 0x02, 'h', 'i', 0x00, 0x00};
    CHECK_OK(rift_frame_take_string(ok, sizeof(ok), &pos, &s, &n, &err));
    CHECK_EQ_INT(pos, 4);
    CHECK_EQ_MEM(s, n, "hi", 2);
    CHECK(s == (const char *)ok + 2);
    CHECK_OK(rift_frame_take_string(ok, sizeof(ok), &pos, &s, &n, &err));
    CHECK_EQ_INT(pos, 6);
    CHECK_EQ_INT(n, 0);
}

RIFT_TEST(take_string_length_edges) {
    uint8_t *buf = malloc(2 + 4097);
    CHECK(buf != NULL);
    memset(buf + 2, 'a', 4097);
    const char *s = NULL;
    size_t n = 0, pos = 0;
    rift_error err = {0};

    buf[0] = 0x10; /* 4,096 */
    buf[1] = 0x00;
    int rc = rift_frame_take_string(buf, 2 + 4096, &pos, &s, &n, &err);
    CHECK_OK(rc);
    CHECK_EQ_INT(n, 4096);

    buf[1] = 0x01; /* 4,097, all bytes present */
    pos = 0;
    rc = rift_frame_take_string(buf, 2 + 4097, &pos, &s, &n, &err);
    free(buf);
    CHECK_EQ_INT(rc, RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid string length");
}

/* ---- decode_message (§3.9) ---- */

RIFT_TEST(decode_message_wildcard_subject_decodes) {
    /* The codec decodes `*`; rejecting it as non-literal is the subject
     * layer's job. */
    const uint8_t fields[] = {0x00, 0x01, 0x2A, 0x00, 0x00};
    rift_frame_msg m;
    rift_error err = {0};
    CHECK_OK(rift_frame_decode_msg(fields, sizeof(fields), &m, &err));
    CHECK_EQ_MEM(m.subject, m.subject_len, "*", 1);
    CHECK_EQ_INT(m.reply_len, 0);
    CHECK_EQ_INT(m.payload_len, 0);
}

/* ---- The four malformed frames of §3.9, as bodies ---- */

RIFT_TEST(malformed_unknown_opcode_255) {
    /* 00 00 00 01 FF: the reader yields body FF. */
    rift_error err = {0};
    CHECK_EQ_INT(rift_frame_check_operation(0xFF, &err), RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "unknown opcode");
    CHECK_DECODE_FAILS(B(0xFF), 1, "unknown opcode");
}

RIFT_TEST(malformed_subscribe_string_past_end) {
    /* 00 00 00 03 06 00 1E: pattern length 30, nothing follows. */
    CHECK_DECODE_FAILS(B(0x06, 0x00, 0x1E), 3, "invalid string length");
}

RIFT_TEST(empty_body_is_a_length_error) {
    rift_frame f;
    rift_error err = {0};
    CHECK_EQ_INT(rift_frame_decode(B(0), 0, &f, &err), RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "frame length exceeds limit or is zero");
}

/* ---- Opcodes and direction (§2.4) ---- */

RIFT_TEST(unknown_opcodes) {
    CHECK_DECODE_FAILS(B(0x00), 1, "unknown opcode");
    CHECK_DECODE_FAILS(B(0x10), 1, "unknown opcode");
    CHECK_DECODE_FAILS(B(0x10, 0x00, 0x00), 3, "unknown opcode");
    for (unsigned op = 0; op < 256; op++) {
        CHECK_EQ_INT(rift_opcode_known((uint8_t)op), op >= 1 && op <= 15);
    }
    CHECK_EQ_STR(rift_opcode_name(RIFT_OP_CONSUMER_FETCH), "CONSUMER_FETCH");
    CHECK_EQ_STR(rift_opcode_name(0), "UNKNOWN");
    CHECK_EQ_STR(rift_opcode_name(200), "UNKNOWN");
}

RIFT_TEST(direction_checks) {
    static const uint8_t client[] = {1, 4, 5, 6, 8, 9, 10, 12, 13, 15};
    static const uint8_t server[] = {2, 3, 7, 11, 14};
    rift_error err = {0};
    for (size_t i = 0; i < sizeof(client); i++) {
        CHECK_OK(
            rift_frame_check_opcode(client[i], RIFT_FRAME_FROM_CLIENT, &err));
        CHECK_EQ_INT(
            rift_frame_check_opcode(client[i], RIFT_FRAME_FROM_SERVER, &err),
            RIFT_ERR_PROTOCOL);
        /* AUTH is a client opcode but not an operation. */
        if (client[i] == RIFT_OP_AUTH) {
            CHECK_EQ_INT(rift_frame_check_operation(client[i], &err),
                         RIFT_ERR_PROTOCOL);
            CHECK_EQ_STR(err.text, "unknown opcode");
        } else {
            CHECK_OK(rift_frame_check_operation(client[i], &err));
        }
    }
    for (size_t i = 0; i < sizeof(server); i++) {
        CHECK_OK(
            rift_frame_check_opcode(server[i], RIFT_FRAME_FROM_SERVER, &err));
        CHECK_EQ_INT(rift_frame_check_operation(server[i], &err),
                     RIFT_ERR_PROTOCOL);
        CHECK_EQ_STR(err.text, "unknown opcode");
    }
    CHECK_EQ_INT(rift_frame_check_operation(0, &err), RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(rift_frame_check_operation(16, &err), RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(rift_frame_check_opcode(16, RIFT_FRAME_FROM_SERVER, &err),
                 RIFT_ERR_PROTOCOL);
}

/* ---- Fixed layouts ---- */

RIFT_TEST(ping_and_ok_reject_trailing_bytes) {
    rift_frame f;
    rift_error err = {0};
    CHECK_OK(rift_frame_decode(B(RIFT_OP_PING), 1, &f, &err));
    CHECK_EQ_INT(f.opcode, RIFT_OP_PING);
    CHECK_OK(rift_frame_decode(B(RIFT_OP_OK), 1, &f, &err));
    CHECK_DECODE_FAILS(B(RIFT_OP_PING, 0x00), 2,
                       "unexpected trailing frame bytes");
    CHECK_DECODE_FAILS(B(RIFT_OP_OK, 0x41, 0x42), 3,
                       "unexpected trailing frame bytes");
}

RIFT_TEST(stored_is_exactly_16_bytes) {
    uint8_t body[18] = {RIFT_OP_STORED};
    for (int i = 1; i < 18; i++) {
        body[i] = (uint8_t)i;
    }
    rift_frame f;
    rift_error err = {0};
    CHECK_OK(rift_frame_decode(body, 17, &f, &err));
    CHECK_EQ_U64(f.stored.sequence, 0x0102030405060708ULL);
    CHECK_EQ_U64(f.stored.timestamp_ms, 0x090A0B0C0D0E0F10ULL);
    CHECK_DECODE_FAILS(body, 16, "truncated frame");
    CHECK_DECODE_FAILS(body, 9, "truncated frame");
    CHECK_DECODE_FAILS(body, 1, "truncated frame");
    CHECK_DECODE_FAILS(body, 18, "unexpected trailing frame bytes");
}

RIFT_TEST(trailing_bytes_after_every_fixed_layout) {
    /* AUTH "t" + 1 extra byte. */
    CHECK_DECODE_FAILS(B(1, 0, 1, 't', 0), 5,
                       "unexpected trailing frame bytes");
    /* ERROR code 2, "e", extra. */
    CHECK_DECODE_FAILS(B(3, 0, 2, 0, 1, 'e', 9), 7,
                       "unexpected trailing frame bytes");
    /* SUBSCRIBE "a", "", extra. */
    CHECK_DECODE_FAILS(B(6, 0, 1, 'a', 0, 0, 9), 7,
                       "unexpected trailing frame bytes");
    /* CONSUMER_OPEN "s","n","f", u64, u32, u32, extra. */
    CHECK_DECODE_FAILS(B(12, 0, 1, 's', 0, 1, 'n', 0, 1, 'f', 0, 0, 0, 0, 0, 0,
                         0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 9),
                       27, "unexpected trailing frame bytes");
    /* CONSUMER_FETCH "s","n", u32, extra. */
    CHECK_DECODE_FAILS(B(13, 0, 1, 's', 0, 1, 'n', 0, 0, 0, 1, 9), 12,
                       "unexpected trailing frame bytes");
    /* ACK "s","n", u64, extra. */
    CHECK_DECODE_FAILS(B(15, 0, 1, 's', 0, 1, 'n', 0, 0, 0, 0, 0, 0, 0, 1, 9),
                       16, "unexpected trailing frame bytes");
}

RIFT_TEST(missing_fixed_fields_are_truncated) {
    /* ERROR without a full code. */
    CHECK_DECODE_FAILS(B(3, 0), 2, "truncated frame");
    /* ERROR with code but no string length. */
    CHECK_DECODE_FAILS(B(3, 0, 2), 3, "truncated frame");
    /* PUBLISH with subject but reply length cut. */
    CHECK_DECODE_FAILS(B(4, 0, 1, 'a', 0), 5, "truncated frame");
    /* REQUEST with a 3-byte timeout. */
    CHECK_DECODE_FAILS(B(9, 0, 0, 1), 4, "truncated frame");
    /* CONSUMER_FETCH without limit. */
    CHECK_DECODE_FAILS(B(13, 0, 1, 's', 0, 1, 'n', 0, 0), 9, "truncated frame");
    /* ACK with a short sequence. */
    CHECK_DECODE_FAILS(B(15, 0, 1, 's', 0, 1, 'n', 0, 0, 0, 0), 11,
                       "truncated frame");
    /* DELIVERY without delivery_count. */
    CHECK_DECODE_FAILS(B(14, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2),
                       17, "truncated frame");
}

RIFT_TEST(errors_follow_field_order) {
    /* PUBLISH whose subject is bad UTF-8 and whose reply is cut: the
     * subject's error wins. */
    CHECK_DECODE_FAILS(B(4, 0, 1, 0xC0, 0, 9), 6, "string must be UTF-8");
    /* SUBSCRIBE with a good pattern and an overlong queue. */
    CHECK_DECODE_FAILS(B(6, 0, 1, 'a', 0x10, 0x01), 6, "invalid string length");

    /* REQUEST: the timeout is decoded before the subject fails, so the
     * server can check its range first (§2.9). */
    rift_frame f;
    rift_error err = {0};
    CHECK_EQ_INT(rift_frame_decode(B(9, 0, 0, 0, 0, 0, 5, 'a'), 8, &f, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(f.opcode, RIFT_OP_REQUEST);
    CHECK_EQ_INT(f.request.decoded, 1);
    CHECK_EQ_INT(f.request.timeout_ms, 0);

    /* CONSUMER_OPEN: name decoded, filter cut — decoded == 2 tells the
     * server to validate the name before reporting the decode error. */
    static const uint8_t open_bad[] = {12, 0, 1, 's', 0, 2, 'a', '!', 0, 3};
    CHECK_EQ_INT(rift_frame_decode(open_bad, sizeof(open_bad), &f, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "invalid string length");
    CHECK_EQ_INT(f.consumer_open.decoded, 2);
    CHECK_EQ_MEM(f.consumer_open.name, f.consumer_open.name_len, "a!", 2);
    CHECK(f.consumer_open.filter == NULL);

    /* CONSUMER_OPEN with missing max_ack_pending. */
    CHECK_EQ_INT(rift_frame_decode(B(12, 0, 1, 's', 0, 1, 'n', 0, 0, 0, 0, 0, 0,
                                     0, 0, 0, 7, 0, 0, 0, 9),
                                   21, &f, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "truncated frame");
    CHECK_EQ_INT(f.consumer_open.decoded, 5);
    CHECK_EQ_U64(f.consumer_open.start_sequence, 7);
    CHECK_EQ_INT(f.consumer_open.ack_wait_ms, 9);

    CHECK_EQ_INT(rift_frame_decode(B(13, 0, 1, 's', 0, 1, 'n', 0), 8, &f, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(f.consumer_fetch.decoded, 2);
    CHECK_EQ_INT(rift_frame_decode(B(15, 0, 1, 's', 0, 1), 6, &f, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(f.ack.decoded, 1);
}

RIFT_TEST(utf8_checked_in_every_string_field) {
    /* Multi-byte UTF-8 is fine; a lone continuation byte is not. */
    rift_frame f;
    rift_error err = {0};
    static const uint8_t auth[] = {1, 0, 2, 0xC3, 0xA9};
    CHECK_OK(rift_frame_decode(auth, sizeof(auth), &f, &err));
    CHECK_EQ_MEM(f.auth.token, f.auth.token_len, "\xC3\xA9", 2);
    CHECK_DECODE_FAILS(B(1, 0, 1, 0x80), 4, "string must be UTF-8");
    CHECK_DECODE_FAILS(B(3, 0, 1, 0, 1, 0x80), 6, "string must be UTF-8");
    CHECK_DECODE_FAILS(B(4, 0, 0, 0, 1, 0x80), 6, "string must be UTF-8");
    CHECK_DECODE_FAILS(B(9, 0, 0, 0, 1, 0, 1, 0xFE), 8, "string must be UTF-8");
    CHECK_DECODE_FAILS(B(10, 0, 1, 's', 0, 1, 'a', 0, 1, 0xFF), 10,
                       "string must be UTF-8");
    /* The payload is opaque bytes. */
    static const uint8_t pub[] = {4, 0, 1, 'a', 0, 0, 0xFF, 0xFE};
    CHECK_OK(rift_frame_decode(pub, sizeof(pub), &f, &err));
    CHECK_EQ_MEM(f.msg.payload, f.msg.payload_len, "\xFF\xFE", 2);
}

/* ---- Zero copy and limits ---- */

RIFT_TEST(views_point_into_the_body) {
    const uint8_t body[] = {14,  0,   0, 0, 0,   0,   0,   0,   42,  0,  0, 0,
                            0,   0,   0, 0, 7,   0,   0,   0,   3,   0,  3, 'a',
                            '.', 'b', 0, 4, 'r', '.', 'x', 'y', 'P', 'Q'};
    rift_frame f;
    rift_error err = {0};
    CHECK_OK(rift_frame_decode(body, sizeof(body), &f, &err));
    CHECK_EQ_INT(f.opcode, RIFT_OP_DELIVERY);
    CHECK_EQ_U64(f.delivery.sequence, 42);
    CHECK_EQ_U64(f.delivery.timestamp_ms, 7);
    CHECK_EQ_INT(f.delivery.delivery_count, 3);
    CHECK(f.delivery.subject == (const char *)body + 23);
    CHECK(f.delivery.reply == (const char *)body + 28);
    CHECK(f.delivery.payload == body + 32);
    CHECK_EQ_MEM(f.delivery.payload, f.delivery.payload_len, "PQ", 2);
    const uint8_t *p;
    size_t n;
    rift_frame_payload(&f, &p, &n);
    CHECK(p == body + 32 && n == 2);
}

RIFT_TEST(publish_with_max_payload) {
    size_t len = 1 + 2 + 1 + 2 + RIFT_FRAME_MAX_PAYLOAD;
    uint8_t *body = calloc(1, len);
    CHECK(body != NULL);
    body[0] = RIFT_OP_PUBLISH_ACK;
    body[2] = 1;
    body[3] = 'a';
    rift_frame f;
    rift_error err = {0};
    int rc = rift_frame_decode(body, len, &f, &err);
    bool ok = rc == 0 && f.msg.payload == body + 6 &&
              f.msg.payload_len == RIFT_FRAME_MAX_PAYLOAD;
    free(body);
    CHECK(ok);
}

RIFT_TEST(every_empty_string_layout_decodes) {
    rift_frame f;
    rift_error err = {0};
    CHECK_OK(rift_frame_decode(B(1, 0, 0), 3, &f, &err));
    CHECK_EQ_INT(f.auth.token_len, 0);
    CHECK_OK(rift_frame_decode(B(6, 0, 0, 0, 0), 5, &f, &err));
    CHECK_EQ_INT(f.subscribe.pattern_len + f.subscribe.queue_len, 0);
    CHECK_OK(rift_frame_decode(B(9, 0, 0, 0, 5, 0, 0), 7, &f, &err));
    CHECK_EQ_INT(f.request.decoded, 3);
    CHECK_EQ_INT(f.request.timeout_ms, 5);
    CHECK_EQ_INT(f.request.payload_len, 0);
    CHECK_OK(rift_frame_decode(B(10, 0, 0, 0, 0, 0, 0), 7, &f, &err));
    CHECK_EQ_INT(f.stream_publish.payload_len, 0);
}
