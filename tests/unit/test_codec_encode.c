/*
 * test_codec_encode.c — unit tests of the frame header encoders (codec
 * layer): golden bytes, a round trip of every opcode through the decoder,
 * the ERROR text cut, and the string, buffer and body limits.
 */
#include "codec/frame.h"
#include "test.h"

#include <stdlib.h>

/* Encodes |f| (header plus its payload appended), checks the length
 * prefix, decodes the body and compares the result with |f|. */
static bool round_trip(const rift_frame *f, rift_frame *back) {
    static uint8_t buf[RIFT_FRAME_HEADER_MAX + 64];
    rift_ssize n = rift_frame_encode_header(buf, RIFT_FRAME_HEADER_MAX, f);
    if (n < 5) {
        fprintf(stderr, "encode %s: %zd\n", rift_opcode_name(f->opcode), n);
        return false;
    }
    const uint8_t *p;
    size_t plen;
    rift_frame_payload(f, &p, &plen);
    if (plen > 64) {
        return false;
    }
    if (plen > 0) {
        memcpy(buf + n, p, plen);
    }
    size_t body = (size_t)n - 4 + plen;
    uint32_t declared = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
                        (uint32_t)buf[2] << 8 | buf[3];
    if (declared != body || buf[4] != f->opcode) {
        fprintf(stderr, "prefix %u != %zu\n", declared, body);
        return false;
    }
    rift_error err = {0};
    if (rift_frame_decode(buf + 4, body, back, &err) != 0) {
        fprintf(stderr, "decode %s: %s\n", rift_opcode_name(f->opcode),
                err.text);
        return false;
    }
    return back->opcode == f->opcode;
}

#define CHECK_SLICE(p, n, s) CHECK_EQ_MEM((p), (n), (s), strlen(s))

RIFT_TEST(golden_publish_and_message_bytes) {
    uint8_t buf[64];
    /* PUBLISH "a", no reply, payload "x": 00 00 00 07 04 00 01 61 00 00. */
    rift_ssize n =
        rift_frame_encode_publish_header(buf, sizeof(buf), "a", 1, NULL, 0, 1);
    CHECK_EQ_INT(n, 10);
    CHECK_EQ_MEM(buf, 10, "\x00\x00\x00\x07\x04\x00\x01\x61\x00\x00", 10);
    n = rift_frame_encode_message_header(buf, sizeof(buf), "a.b", 3, "_I", 2,
                                         0);
    CHECK_EQ_INT(n, 14);
    CHECK_EQ_MEM(buf, 14,
                 "\x00\x00\x00\x0A\x07\x00\x03"
                 "a.b\x00\x02_I",
                 14);
    CHECK_EQ_INT(n, RIFT_FRAME_MSG_HEADER_SIZE(3, 2));
    n = rift_frame_encode_msg_header(buf, sizeof(buf), RIFT_OP_PUBLISH_ACK, "s",
                                     1, "", 0, 3);
    CHECK_EQ_INT(n, 10);
    CHECK_EQ_MEM(buf, 5, "\x00\x00\x00\x09\x05", 5);
    CHECK_EQ_INT(rift_frame_encode_msg_header(buf, sizeof(buf), RIFT_OP_PING,
                                              "s", 1, "", 0, 0),
                 RIFT_ERR_INVALID_ARGUMENT);
}

RIFT_TEST(golden_fixed_frames) {
    uint8_t buf[64];
    CHECK_EQ_INT(rift_frame_encode_ok(buf, sizeof(buf)), 5);
    CHECK_EQ_MEM(buf, 5, "\x00\x00\x00\x01\x02", 5);
    CHECK_EQ_INT(rift_frame_encode_ping(buf, sizeof(buf)), 5);
    CHECK_EQ_MEM(buf, 5, "\x00\x00\x00\x01\x08", 5);
    CHECK_EQ_INT(rift_frame_encode_stored(buf, sizeof(buf), 1, 0x0102), 21);
    CHECK_EQ_MEM(buf, 21,
                 "\x00\x00\x00\x11\x0B"
                 "\x00\x00\x00\x00\x00\x00\x00\x01"
                 "\x00\x00\x00\x00\x00\x00\x01\x02",
                 21);
    CHECK_EQ_INT(
        rift_frame_encode_error(buf, sizeof(buf), 2, "unknown opcode", 14), 23);
    CHECK_EQ_MEM(buf, 23, "\x00\x00\x00\x13\x03\x00\x02\x00\x0Eunknown opcode",
                 23);
    CHECK_EQ_INT(rift_frame_encode_auth(buf, sizeof(buf), "tok", 3), 10);
    CHECK_EQ_MEM(buf, 10, "\x00\x00\x00\x06\x01\x00\x03tok", 10);
}

RIFT_TEST(round_trip_every_opcode) {
    static const uint8_t pl[] = "payload-bytes";
    rift_frame f, b;

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_AUTH;
    f.auth.token = "secret-token";
    f.auth.token_len = 12;
    CHECK(round_trip(&f, &b));
    CHECK_SLICE(b.auth.token, b.auth.token_len, "secret-token");

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_OK;
    CHECK(round_trip(&f, &b));
    f.opcode = RIFT_OP_PING;
    CHECK(round_trip(&f, &b));

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_ERROR;
    f.error.code = 1;
    f.error.message = "publication not permitted";
    f.error.message_len = strlen(f.error.message);
    CHECK(round_trip(&f, &b));
    CHECK_EQ_INT(b.error.code, 1);
    CHECK_SLICE(b.error.message, b.error.message_len,
                "publication not permitted");

    static const uint8_t msg_ops[] = {RIFT_OP_PUBLISH, RIFT_OP_PUBLISH_ACK,
                                      RIFT_OP_MESSAGE};
    for (size_t i = 0; i < sizeof(msg_ops); i++) {
        memset(&f, 0, sizeof(f));
        f.opcode = msg_ops[i];
        f.msg.subject = "orders.eu";
        f.msg.subject_len = 9;
        f.msg.reply = "_INBOX.1";
        f.msg.reply_len = 8;
        f.msg.payload = pl;
        f.msg.payload_len = 13;
        CHECK(round_trip(&f, &b));
        CHECK_SLICE(b.msg.subject, b.msg.subject_len, "orders.eu");
        CHECK_SLICE(b.msg.reply, b.msg.reply_len, "_INBOX.1");
        CHECK_EQ_MEM(b.msg.payload, b.msg.payload_len, pl, 13);
    }

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_SUBSCRIBE;
    f.subscribe.pattern = "orders.>";
    f.subscribe.pattern_len = 8;
    f.subscribe.queue = "workers";
    f.subscribe.queue_len = 7;
    CHECK(round_trip(&f, &b));
    CHECK_SLICE(b.subscribe.pattern, b.subscribe.pattern_len, "orders.>");
    CHECK_SLICE(b.subscribe.queue, b.subscribe.queue_len, "workers");

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_REQUEST;
    f.request.timeout_ms = 120000;
    f.request.subject = "svc.time";
    f.request.subject_len = 8;
    f.request.payload = pl;
    f.request.payload_len = 4;
    CHECK(round_trip(&f, &b));
    CHECK_EQ_INT(b.request.timeout_ms, 120000);
    CHECK_SLICE(b.request.subject, b.request.subject_len, "svc.time");
    CHECK_EQ_MEM(b.request.payload, b.request.payload_len, pl, 4);

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_STREAM_PUBLISH;
    f.stream_publish.stream = "events";
    f.stream_publish.stream_len = 6;
    f.stream_publish.subject = "ev.a";
    f.stream_publish.subject_len = 4;
    f.stream_publish.payload = pl;
    f.stream_publish.payload_len = 13;
    CHECK(round_trip(&f, &b));
    CHECK_SLICE(b.stream_publish.stream, b.stream_publish.stream_len, "events");
    CHECK_SLICE(b.stream_publish.subject, b.stream_publish.subject_len, "ev.a");
    CHECK_EQ_INT(b.stream_publish.reply_len, 0);
    CHECK_EQ_MEM(b.stream_publish.payload, b.stream_publish.payload_len, pl,
                 13);

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_STORED;
    f.stored.sequence = UINT64_MAX;
    f.stored.timestamp_ms = 1700000000123ULL;
    CHECK(round_trip(&f, &b));
    CHECK_EQ_U64(b.stored.sequence, UINT64_MAX);
    CHECK_EQ_U64(b.stored.timestamp_ms, 1700000000123ULL);

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_CONSUMER_OPEN;
    f.consumer_open.stream = "events";
    f.consumer_open.stream_len = 6;
    f.consumer_open.name = "worker-1";
    f.consumer_open.name_len = 8;
    f.consumer_open.filter = "ev.*";
    f.consumer_open.filter_len = 4;
    f.consumer_open.start_sequence = 0x1122334455667788ULL;
    f.consumer_open.ack_wait_ms = 3600000;
    f.consumer_open.max_ack_pending = 65536;
    CHECK(round_trip(&f, &b));
    CHECK_SLICE(b.consumer_open.stream, b.consumer_open.stream_len, "events");
    CHECK_SLICE(b.consumer_open.name, b.consumer_open.name_len, "worker-1");
    CHECK_SLICE(b.consumer_open.filter, b.consumer_open.filter_len, "ev.*");
    CHECK_EQ_U64(b.consumer_open.start_sequence, 0x1122334455667788ULL);
    CHECK_EQ_INT(b.consumer_open.ack_wait_ms, 3600000);
    CHECK_EQ_INT(b.consumer_open.max_ack_pending, 65536);
    CHECK_EQ_INT(b.consumer_open.decoded, 6);

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_CONSUMER_FETCH;
    f.consumer_fetch.stream = "events";
    f.consumer_fetch.stream_len = 6;
    f.consumer_fetch.name = "w";
    f.consumer_fetch.name_len = 1;
    f.consumer_fetch.limit = 256;
    CHECK(round_trip(&f, &b));
    CHECK_SLICE(b.consumer_fetch.name, b.consumer_fetch.name_len, "w");
    CHECK_EQ_INT(b.consumer_fetch.limit, 256);
    CHECK_EQ_INT(b.consumer_fetch.decoded, 3);

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_DELIVERY;
    f.delivery.sequence = 17;
    f.delivery.timestamp_ms = 99;
    f.delivery.delivery_count = 4;
    f.delivery.subject = "ev.a";
    f.delivery.subject_len = 4;
    f.delivery.reply = "_INBOX.r";
    f.delivery.reply_len = 8;
    f.delivery.payload = pl;
    f.delivery.payload_len = 0;
    CHECK(round_trip(&f, &b));
    CHECK_EQ_U64(b.delivery.sequence, 17);
    CHECK_EQ_U64(b.delivery.timestamp_ms, 99);
    CHECK_EQ_INT(b.delivery.delivery_count, 4);
    CHECK_SLICE(b.delivery.subject, b.delivery.subject_len, "ev.a");
    CHECK_SLICE(b.delivery.reply, b.delivery.reply_len, "_INBOX.r");
    CHECK_EQ_INT(b.delivery.payload_len, 0);

    memset(&f, 0, sizeof(f));
    f.opcode = RIFT_OP_ACK;
    f.ack.stream = "events";
    f.ack.stream_len = 6;
    f.ack.name = "w";
    f.ack.name_len = 1;
    f.ack.sequence = 12345678901ULL;
    CHECK(round_trip(&f, &b));
    CHECK_EQ_U64(b.ack.sequence, 12345678901ULL);
    CHECK_EQ_INT(b.ack.decoded, 3);

    /* Unknown opcodes have no encoder. */
    f.opcode = 16;
    uint8_t buf[16];
    CHECK_EQ_INT(rift_frame_encode_header(buf, sizeof(buf), &f),
                 RIFT_ERR_INVALID_ARGUMENT);
}

RIFT_TEST(error_message_cut_at_1024_on_utf8_boundary) {
    uint8_t buf[RIFT_FRAME_HEADER_MAX];
    char msg[2000];
    memset(msg, 'x', sizeof(msg));
    /* 1,023 ASCII bytes then a 3-byte character across byte 1,024. */
    memcpy(msg + 1023, "\xE2\x82\xAC", 3);
    rift_ssize n = rift_frame_encode_error(buf, sizeof(buf), 2, msg, 1500);
    CHECK_EQ_INT(n, 4 + 1 + 2 + 2 + 1023);
    rift_frame f;
    rift_error err = {0};
    CHECK_OK(rift_frame_decode(buf + 4, (size_t)n - 4, &f, &err));
    CHECK_EQ_INT(f.error.message_len, 1023);

    /* A character that ends exactly at byte 1,024 is kept. */
    memset(msg, 'x', sizeof(msg));
    memcpy(msg + 1021, "\xE2\x82\xAC", 3);
    n = rift_frame_encode_error(buf, sizeof(buf), 2, msg, 1500);
    CHECK_EQ_INT(n, 4 + 1 + 2 + 2 + 1024);
    /* A short message is untouched; an empty one is allowed. */
    CHECK_EQ_INT(rift_frame_encode_error(buf, sizeof(buf), 1, msg, 1024),
                 4 + 1 + 2 + 2 + 1024);
    CHECK_EQ_INT(rift_frame_encode_error(buf, sizeof(buf), 2, NULL, 0), 9);
}

RIFT_TEST(string_limit_4096) {
    char *s = malloc(4097);
    CHECK(s != NULL);
    memset(s, 'a', 4097);
    uint8_t *buf = malloc(RIFT_FRAME_HEADER_MAX);
    CHECK(buf != NULL);
    rift_ssize ok = rift_frame_encode_auth(buf, RIFT_FRAME_HEADER_MAX, s, 4096);
    rift_ssize bad =
        rift_frame_encode_auth(buf, RIFT_FRAME_HEADER_MAX, s, 4097);
    rift_ssize bad2 = rift_frame_encode_subscribe(buf, RIFT_FRAME_HEADER_MAX,
                                                  "a", 1, s, 4097);
    /* The largest header of all: CONSUMER_OPEN with three maximal strings
     * is exactly RIFT_FRAME_HEADER_MAX. */
    rift_ssize big = rift_frame_encode_consumer_open(
        buf, RIFT_FRAME_HEADER_MAX, s, 4096, s, 4096, s, 4096, 1, 1, 1);
    rift_ssize small = rift_frame_encode_consumer_open(
        buf, RIFT_FRAME_HEADER_MAX - 1, s, 4096, s, 4096, s, 4096, 1, 1, 1);
    free(s);
    free(buf);
    CHECK_EQ_INT(ok, 4 + RIFT_FRAME_AUTH_MAX_BYTES);
    CHECK_EQ_INT(bad, RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(bad2, RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(big, RIFT_FRAME_HEADER_MAX);
    CHECK_EQ_INT(small, RIFT_ERR_INVALID_ARGUMENT);
}

RIFT_TEST(buffer_too_small_writes_nothing) {
    uint8_t buf[16];
    memset(buf, 0xAA, sizeof(buf));
    CHECK_EQ_INT(rift_frame_encode_publish_header(buf, 9, "a", 1, "", 0, 0),
                 RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(buf[0], 0xAA);
    CHECK_EQ_INT(rift_frame_encode_publish_header(buf, 10, "a", 1, "", 0, 0),
                 10);
    CHECK_EQ_INT(rift_frame_encode_ok(NULL, 0), RIFT_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(rift_frame_encode_ok(buf, 4), RIFT_ERR_INVALID_ARGUMENT);
    /* A NULL string needs a zero length. */
    CHECK_EQ_INT(rift_frame_encode_auth(buf, sizeof(buf), NULL, 1),
                 RIFT_ERR_INVALID_ARGUMENT);
}

RIFT_TEST(payload_and_body_limits) {
    uint8_t buf[RIFT_FRAME_HEADER_MAX];
    char subj[1024];
    memset(subj, 'a', sizeof(subj));
    /* 1 MiB payload with maximal subject and reply fits easily. */
    rift_ssize n = rift_frame_encode_message_header(
        buf, sizeof(buf), subj, 1024, subj, 1024, RIFT_FRAME_MAX_PAYLOAD);
    CHECK_EQ_INT(n, RIFT_FRAME_MSG_HEADER_SIZE(1024, 1024));
    CHECK_EQ_INT(n, 2057);
    uint32_t declared = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
                        (uint32_t)buf[2] << 8 | buf[3];
    CHECK_EQ_INT(declared, 2053 + RIFT_FRAME_MAX_PAYLOAD);

    /* Body exactly at the limit, and one byte over. */
    size_t fixed = 1 + 2 + 1 + 2; /* opcode, "a", "" */
    n = rift_frame_encode_publish_header(buf, sizeof(buf), "a", 1, "", 0,
                                         RIFT_FRAME_MAX_BYTES - fixed);
    CHECK_EQ_INT(n, 10);
    declared = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
               (uint32_t)buf[2] << 8 | buf[3];
    CHECK_EQ_INT(declared, RIFT_FRAME_MAX_BYTES);
    CHECK_EQ_INT(
        rift_frame_encode_publish_header(buf, sizeof(buf), "a", 1, "", 0,
                                         RIFT_FRAME_MAX_BYTES - fixed + 1),
        RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_INT(rift_frame_encode_delivery_header(buf, sizeof(buf), 1, 1, 1,
                                                   "a", 1, "", 0, SIZE_MAX),
                 RIFT_ERR_PAYLOAD_TOO_LARGE);
    CHECK_EQ_INT(rift_frame_encode_request_header(buf, sizeof(buf), 1, "a", 1,
                                                  RIFT_FRAME_MAX_PAYLOAD),
                 4 + 1 + 4 + 3);
    CHECK_EQ_INT(RIFT_FRAME_MAX_BYTES, 1114112);
    CHECK_EQ_INT(RIFT_FRAME_AUTH_MAX_BYTES, 4099);
    CHECK_EQ_INT(RIFT_FRAME_HEADER_MAX, 12315);
}
