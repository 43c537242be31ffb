/*
 * test_frame_ext_push.c — unit tests of the push consumer's frames (codec
 * layer, docs/protocol-v1.md E.2 and E.5): the byte layout of PUSH_OPEN
 * (the document's example), PUSH_ACK round trips, the decoder texts for
 * truncated and trailing bodies, opcode names and the encoders' refusals.
 */
#include "codec/frame_ext.h"
#include "codec/frame_ext_push.h"
#include "test.h"

#include <string.h>

RIFT_TEST(push_open_bytes_and_round_trip) {
    rift_frame_push_open f = {"s", 1, "c", 1, 1024, 0, 0};
    uint8_t buf[64];
    rift_ssize n = rift_frame_encode_push_open(buf, sizeof(buf), &f);
    CHECK_EQ_INT(n, 19);
    static const uint8_t want[] = {0,   0, 0, 0x0f, 0x22, 0, 1, 's', 0, 1,
                                   'c', 0, 0, 4,    0,    0, 0, 0,   0};
    CHECK(memcmp(buf, want, sizeof(want)) == 0);
    rift_frame_push_open out;
    CHECK_OK(rift_frame_decode_push_open(buf + 5, 14, &out, NULL));
    CHECK_EQ_MEM(out.stream, out.stream_len, "s", 1);
    CHECK_EQ_MEM(out.name, out.name_len, "c", 1);
    CHECK_EQ_INT(out.max_in_flight, 1024);
    CHECK_EQ_INT(out.ack_wait_ms, 0);
    CHECK_EQ_INT(out.decoded, 4);
    rift_error err;
    /* The name is decoded (and so scoped) before a short tail fails. */
    CHECK(rift_frame_decode_push_open(buf + 5, 12, &out, &err) != 0);
    CHECK_EQ_STR(err.text, "truncated frame");
    CHECK_EQ_INT(out.decoded, 3);
    uint8_t trailing[15];
    memcpy(trailing, buf + 5, 14);
    trailing[14] = 0;
    CHECK(rift_frame_decode_push_open(trailing, 15, &out, &err) != 0);
    CHECK_EQ_STR(err.text, "unexpected trailing frame bytes");
    /* Too small a buffer writes nothing useful and says so. */
    CHECK(rift_frame_encode_push_open(buf, 10, &f) < 0);
}

RIFT_TEST(push_ack_round_trip_and_texts) {
    rift_frame_push_ack f = {"orders", 6, "w", 1, 0x0102030405060708ull, 0};
    uint8_t buf[64];
    rift_ssize n = rift_frame_encode_push_ack(buf, sizeof(buf), &f);
    CHECK_EQ_INT(n, 5 + 2 + 6 + 2 + 1 + 8);
    CHECK_EQ_INT(buf[4], RIFT_OP_PUSH_ACK);
    rift_frame_push_ack out;
    CHECK_OK(rift_frame_decode_push_ack(buf + 5, (size_t)n - 5, &out, NULL));
    CHECK_EQ_MEM(out.stream, out.stream_len, "orders", 6);
    CHECK_EQ_U64(out.sequence, 0x0102030405060708ull);
    rift_error err;
    CHECK(rift_frame_decode_push_ack(buf + 5, (size_t)n - 6, &out, &err) != 0);
    CHECK_EQ_STR(err.text, "truncated frame");
    char big[4097];
    memset(big, 'a', sizeof(big));
    rift_frame_push_ack huge = {big, sizeof(big), "w", 1, 1, 0};
    uint8_t large[5000];
    CHECK(rift_frame_encode_push_ack(large, sizeof(large), &huge) < 0);
}

RIFT_TEST(push_opcodes_are_client_extensions_with_names) {
    CHECK(rift_ext_opcode_client(RIFT_OP_PUSH_OPEN));
    CHECK(rift_ext_opcode_client(RIFT_OP_PUSH_ACK));
    CHECK(!rift_ext_opcode_client(36));
    CHECK(rift_ext_opcode_client(RIFT_OP_CONSUMER_LIST));
    CHECK(!rift_ext_opcode_client(RIFT_OP_CONSUMER_LIST_RESULT)); /* server's */
    CHECK_EQ_STR(rift_ext_opcode_name(RIFT_OP_CONSUMER_LIST), "CONSUMER_LIST");
    CHECK_EQ_STR(rift_ext_opcode_name(RIFT_OP_PUSH_OPEN), "PUSH_OPEN");
    CHECK_EQ_STR(rift_ext_opcode_name(RIFT_OP_PUSH_ACK), "PUSH_ACK");
}
