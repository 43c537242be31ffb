/*
 * test_frame_ext_stream.c — unit tests of the stream extensions' frames
 * (codec layer, docs/protocol-v1.md E.2): byte layout of STREAM_INFO_GET,
 * spec and info round trips, the decoder texts for truncated and trailing
 * bodies, and the encoders' refusals.
 */
#include "codec/frame_ext.h"
#include "codec/frame_ext_stream.h"
#include "test.h"

#include <string.h>

RIFT_TEST(info_get_bytes) {
    uint8_t buf[64];
    rift_ssize n = rift_frame_encode_stream_ref(
        buf, sizeof(buf), RIFT_OP_STREAM_INFO_GET, "orders", 6);
    CHECK_EQ_INT(n, 13);
    CHECK(memcmp(buf, "\0\0\0\x09\x1c\0\x06orders", 13) == 0);
    const char *s;
    size_t len;
    CHECK_OK(rift_frame_decode_stream_ref(buf + 5, 8, &s, &len, NULL));
    CHECK_EQ_MEM(s, len, "orders", 6);
    rift_error err;
    uint8_t trailing[9];
    memcpy(trailing, buf + 5, 8);
    trailing[8] = 0;
    CHECK(rift_frame_decode_stream_ref(trailing, 9, &s, &len, &err) != 0);
    CHECK_EQ_STR(err.text, "unexpected trailing frame bytes");
    /* Only 28, 32, 33 take a bare stream. */
    CHECK(rift_frame_encode_stream_ref(buf, sizeof(buf), RIFT_OP_STREAM_CREATE,
                                       "x", 1) < 0);
}

RIFT_TEST(spec_and_info_round_trip) {
    rift_frame_stream_info in = {
        .spec = {.stream = "audit.eu",
                 .stream_len = 8,
                 .subjects = "audit.eu.> audit.x",
                 .subjects_len = 18,
                 .storage = RIFT_EXT_STORAGE_FILE,
                 .max_messages = 5,
                 .max_bytes = 1u << 20,
                 .max_age_ms = 60000,
                 .max_payload_bytes = 4096,
                 .max_consumers = 7},
        .messages = 3,
        .bytes = 99,
        .first_sequence = 2,
        .last_sequence = 4,
        .consumers = 1,
        .runtime = 1,
    };
    uint8_t buf[256];
    rift_ssize n = rift_frame_encode_stream_info(buf, sizeof(buf), &in);
    CHECK(n > 5);
    CHECK_EQ_INT(buf[4], RIFT_OP_STREAM_INFO_EXT);
    rift_frame_stream_info out;
    CHECK_OK(rift_frame_decode_stream_info(buf + 5, (size_t)n - 5, &out, NULL));
    CHECK_EQ_MEM(out.spec.subjects, out.spec.subjects_len, "audit.eu.> audit.x",
                 18);
    CHECK_EQ_U64(out.spec.max_age_ms, 60000);
    CHECK_EQ_U64(out.spec.max_consumers, 7);
    CHECK_EQ_U64(out.last_sequence, 4);
    CHECK_EQ_INT(out.runtime, 1);
    rift_error err;
    CHECK(rift_frame_decode_stream_info(buf + 5, (size_t)n - 6, &out, &err) !=
          0);
    CHECK_EQ_STR(err.text, "truncated frame");

    n = rift_frame_encode_stream_spec(buf, sizeof(buf), RIFT_OP_STREAM_UPDATE,
                                      &in.spec);
    CHECK(n > 5);
    CHECK_EQ_INT(buf[4], RIFT_OP_STREAM_UPDATE);
    rift_frame_stream_spec spec;
    CHECK_OK(
        rift_frame_decode_stream_spec(buf + 5, (size_t)n - 5, &spec, NULL));
    CHECK_EQ_INT(spec.decoded, 8);
    CHECK_EQ_U64(spec.max_payload_bytes, 4096);
    /* A cut after the name still reports the name as decoded. */
    CHECK(rift_frame_decode_stream_spec(buf + 5, 12, &spec, &err) != 0);
    CHECK_EQ_INT(spec.decoded, 1);
    CHECK(rift_frame_encode_stream_spec(buf, sizeof(buf), RIFT_OP_STREAM_DELETE,
                                        &in.spec) < 0);
    CHECK(rift_frame_encode_stream_info(buf, 20, &in) < 0);
}

RIFT_TEST(opcodes_are_client_extensions_with_names) {
    CHECK(rift_ext_opcode_client(RIFT_OP_STREAM_INFO_GET));
    CHECK(!rift_ext_opcode_client(RIFT_OP_STREAM_INFO_EXT));
    for (uint8_t op = RIFT_OP_STREAM_CREATE; op <= RIFT_OP_STREAM_DELETE;
         op++) {
        CHECK(rift_ext_opcode_client(op));
    }
    CHECK_EQ_STR(rift_ext_opcode_name(RIFT_OP_STREAM_DELETE), "STREAM_DELETE");
    CHECK_EQ_STR(rift_ext_opcode_name(22), "CONSUMER_FETCH_WAIT");
}
