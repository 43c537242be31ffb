/*
 * test_stan_proto.c — the STAN protobuf codec (src/stan/proto.c): round
 * trips of every message, negative int32 fields, unknown fields skipped,
 * and the three decoder errors for truncated, malformed and oversized
 * input.
 */
#include "stan/proto.h"
#include "test.h"

#include <stdlib.h>

static rift_stan_str S(const char *s) {
    return (rift_stan_str){s, strlen(s)};
}

static bool str_eq(rift_stan_str a, const char *b) {
    return a.len == strlen(b) && (a.len == 0 || memcmp(a.p, b, a.len) == 0);
}

RIFT_TEST(sub_req_round_trip) {
    rift_stan_sub_req q = {0};
    q.client_id = S("me");
    q.subject = S("orders");
    q.q_group = S("workers");
    q.inbox = S("_INBOX.x");
    q.durable_name = S("dur");
    q.max_in_flight = 1024;
    q.ack_wait_in_secs = 30;
    q.start_position = RIFT_STAN_SEQUENCE_START;
    q.start_sequence = 1ull << 40;
    q.start_time_delta = 5000000000ll;
    uint8_t buf[512];
    size_t n = rift_stan_encode_sub_req(&q, buf, sizeof buf);
    CHECK(n > 0);
    rift_stan_sub_req d;
    CHECK_OK(rift_stan_decode_sub_req(buf, n, &d, NULL));
    CHECK(str_eq(d.client_id, "me") && str_eq(d.subject, "orders"));
    CHECK(str_eq(d.q_group, "workers") && str_eq(d.inbox, "_INBOX.x"));
    CHECK(str_eq(d.durable_name, "dur"));
    CHECK_EQ_INT(d.max_in_flight, 1024);
    CHECK_EQ_INT(d.ack_wait_in_secs, 30);
    CHECK_EQ_INT(d.start_position, RIFT_STAN_SEQUENCE_START);
    CHECK_EQ_U64(d.start_sequence, 1ull << 40);
    CHECK_EQ_INT(d.start_time_delta, 5000000000ll);
}

RIFT_TEST(known_bytes_decode) {
    /* PubAck{guid:"ab", error:"x"} as any protobuf library writes it. */
    static const uint8_t wire[] = {0x0a, 0x02, 'a', 'b', 0x12, 0x01, 'x'};
    rift_stan_pub_ack a;
    CHECK_OK(rift_stan_decode_pub_ack(wire, sizeof wire, &a, NULL));
    CHECK(str_eq(a.guid, "ab") && str_eq(a.error, "x"));
    uint8_t out[32];
    CHECK_EQ_MEM(out, rift_stan_encode_pub_ack(&a, out, sizeof out), wire,
                 sizeof wire);
}

RIFT_TEST(negative_int32_is_ten_bytes) {
    rift_stan_connect_req q = {0};
    q.ping_interval = -100; /* clients' tests send milliseconds this way */
    q.ping_max_out = -1;
    uint8_t buf[64];
    size_t n = rift_stan_encode_connect_req(&q, buf, sizeof buf);
    CHECK_EQ_INT(n, 2 * (1 + 10));
    rift_stan_connect_req d;
    CHECK_OK(rift_stan_decode_connect_req(buf, n, &d, NULL));
    CHECK_EQ_INT(d.ping_interval, -100);
    CHECK_EQ_INT(d.ping_max_out, -1);
}

RIFT_TEST(msg_proto_round_trip) {
    rift_stan_msg_proto m = {0};
    m.sequence = 7;
    m.subject = S("foo");
    m.data = S("hello");
    m.timestamp = 1700000000123456789ll;
    m.redelivered = true;
    m.redelivery_count = 2;
    uint8_t buf[128];
    size_t n = rift_stan_encode_msg_proto(&m, buf, sizeof buf);
    rift_stan_msg_proto d;
    CHECK_OK(rift_stan_decode_msg_proto(buf, n, &d, NULL));
    CHECK_EQ_U64(d.sequence, 7);
    CHECK(str_eq(d.subject, "foo") && str_eq(d.data, "hello"));
    CHECK_EQ_INT(d.timestamp, 1700000000123456789ll);
    CHECK(d.redelivered);
    CHECK_EQ_INT(d.redelivery_count, 2);
}

RIFT_TEST(unknown_fields_skipped) {
    /* Ack{sequence: 5} behind unknown varint, bytes, fixed32 and fixed64
     * fields, and a later duplicate of field 2 that wins. */
    static const uint8_t wire[] = {
        0xc8, 0x06, 0x2a,                         /* field 105 varint 42 */
        0x9a, 0x01, 0x03, 'a', 'b', 'c',          /* field 19 bytes */
        0x7d, 1,    2,    3,   4,                 /* field 15 fixed32 */
        0x79, 1,    2,    3,   4,   5,   6, 7, 8, /* field 15 fixed64 */
        0x10, 0x04,                               /* sequence 4 */
        0x0a, 0x01, 'z',                          /* subject "z" */
        0x10, 0x05,                               /* sequence 5 */
    };
    rift_stan_ack a;
    CHECK_OK(rift_stan_decode_ack(wire, sizeof wire, &a, NULL));
    CHECK_EQ_U64(a.sequence, 5);
    CHECK(str_eq(a.subject, "z"));
}

RIFT_TEST(truncated_input_refused) {
    rift_stan_pub_msg m = {0};
    m.client_id = S("c");
    m.guid = S("g");
    m.subject = S("s");
    m.data = S("payload");
    uint8_t buf[128];
    size_t n = rift_stan_encode_pub_msg(&m, buf, sizeof buf);
    for (size_t cut = 1; cut < n; cut++) {
        rift_stan_pub_msg d;
        rift_error e = {0};
        int rc = rift_stan_decode_pub_msg(buf, cut, &d, &e);
        /* Cuts on a field boundary are valid shorter messages. */
        if (rc != 0) {
            CHECK_EQ_INT(rc, RIFT_ERR_PROTOCOL);
            CHECK_EQ_STR(e.text, "stan: truncated protobuf");
        }
    }
    static const uint8_t half_varint[] = {0x08, 0x80};
    rift_stan_ack a;
    rift_error e = {0};
    CHECK_EQ_INT(rift_stan_decode_ack(half_varint, 2, &a, &e),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(e.text, "stan: truncated protobuf");
}

RIFT_TEST(malformed_input_refused) {
    static const uint8_t group[] = {0x0b};        /* field 1 start group */
    static const uint8_t field0[] = {0x00, 0x01}; /* field number 0 */
    static const uint8_t str_as_int[] = {0x0a ^ 0x02, 0x01}; /* 1 varint */
    static const uint8_t int_as_str[] = {0x12, 0x01, 'x'};   /* seq bytes */
    static const uint8_t long_varint[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const struct {
        const uint8_t *p;
        size_t n;
    } cases[] = {{group, sizeof group},
                 {field0, sizeof field0},
                 {str_as_int, sizeof str_as_int},
                 {int_as_str, sizeof int_as_str},
                 {long_varint, sizeof long_varint}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rift_stan_ack a;
        rift_error e = {0};
        CHECK_EQ_INT(rift_stan_decode_ack(cases[i].p, cases[i].n, &a, &e),
                     RIFT_ERR_PROTOCOL);
        CHECK_EQ_STR(e.text, "stan: invalid protobuf");
    }
}

RIFT_TEST(huge_fields) {
    size_t big = RIFT_STAN_MAX_STRING + 1;
    char *s = malloc(big + 1);
    CHECK(s != NULL);
    memset(s, 'a', big);
    s[big] = '\0';
    size_t cap = rift_stan_encoded_bound(big);
    uint8_t *buf = malloc(cap);
    CHECK(buf != NULL);
    /* A string field above the bound is refused... */
    rift_stan_pub_msg m = {0};
    m.client_id = S(s);
    size_t n = rift_stan_encode_pub_msg(&m, buf, cap);
    rift_stan_pub_msg d;
    rift_error e = {0};
    int rc = rift_stan_decode_pub_msg(buf, n, &d, &e);
    /* ...but a payload of the same size is data and passes. */
    rift_stan_pub_msg m2 = {0};
    m2.data = S(s);
    size_t n2 = rift_stan_encode_pub_msg(&m2, buf, cap);
    rift_stan_pub_msg d2;
    int rc2 = rift_stan_decode_pub_msg(buf, n2, &d2, NULL);
    /* A length far past the input is truncation, not an allocation. */
    static const uint8_t lie[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
    rift_error e3 = {0};
    int rc3 = rift_stan_decode_pub_msg(lie, sizeof lie, &d, &e3);
    free(s);
    free(buf);
    CHECK_EQ_INT(rc, RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(e.text, "stan: protobuf field too large");
    CHECK_OK(rc2);
    CHECK_EQ_INT(d2.data.len, big);
    CHECK_EQ_INT(rc3, RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(e3.text, "stan: truncated protobuf");
}

RIFT_TEST(encoder_reports_short_buffer) {
    rift_stan_sub_resp r = {S("_STAN.acks.x.1"), {0}};
    uint8_t buf[64];
    size_t need = rift_stan_encode_sub_resp(&r, buf, sizeof buf);
    CHECK(need > 0);
    for (size_t cap = 0; cap < need; cap++) {
        CHECK_EQ_INT(rift_stan_encode_sub_resp(&r, buf, cap), 0);
    }
    CHECK(need <= rift_stan_encoded_bound(r.ack_inbox.len));
}
