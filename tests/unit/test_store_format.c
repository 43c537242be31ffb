/*
 * test_store_format.c — the store's byte formats (unit tests of the store
 * layer): CRC-32C on both paths, segment names and headers, records, state
 * event framing and its torn-versus-corrupt classification.
 */
#include "test.h"

#include "store/crc32c.h"
#include "store/format.h"

RIFT_TEST(crc32c_vectors) {
    CHECK_EQ_U64(rift_crc32c("123456789", 9), 0xE3069283u);
    CHECK_EQ_U64(rift_crc32c("", 0), 0);
    uint8_t zeros[32] = {0};
    CHECK_EQ_U64(rift_crc32c(zeros, 32), 0x8A9136AAu); /* RFC 3720 B.4 */
    uint8_t ones[32];
    memset(ones, 0xFF, sizeof(ones));
    CHECK_EQ_U64(rift_crc32c(ones, 32), 0x62A8AB43u);
    uint8_t inc[32];
    for (int i = 0; i < 32; i++) {
        inc[i] = (uint8_t)i;
    }
    CHECK_EQ_U64(rift_crc32c(inc, 32), 0x46DD794Eu);
}

RIFT_TEST(crc32c_paths_agree) {
    static uint8_t buf[4099];
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (uint8_t)(i * 131 + 7);
    }
    /* Every length and misalignment, and chunked updates. */
    for (size_t off = 0; off < 9; off++) {
        for (size_t len = 0; len + off <= 300; len++) {
            uint32_t hw = rift_crc32c(buf + off, len);
            uint32_t sw = rift_crc32c_update_sw(0, buf + off, len);
            CHECK_EQ_U64(hw, sw);
        }
    }
    uint32_t whole = rift_crc32c(buf, sizeof(buf));
    uint32_t parts = 0;
    for (size_t pos = 0; pos < sizeof(buf); pos += 37) {
        size_t n = RIFT_MIN((size_t)37, sizeof(buf) - pos);
        parts = rift_crc32c_update(parts, buf + pos, n);
    }
    CHECK_EQ_U64(whole, parts);
    CHECK_EQ_U64(whole, rift_crc32c_update_sw(0, buf, sizeof(buf)));
}

RIFT_TEST(segment_names) {
    char name[32];
    rift_seg_name(name, sizeof(name), 1);
    CHECK_EQ_STR(name, "00000000000000000001.seg");
    rift_seg_name(name, sizeof(name), UINT64_MAX);
    CHECK_EQ_STR(name, "18446744073709551615.seg");
    uint64_t base = 0;
    CHECK(rift_seg_name_parse("18446744073709551615.seg", &base));
    CHECK_EQ_U64(base, UINT64_MAX);
    CHECK(rift_seg_name_parse("00000000000000000042.seg", &base));
    CHECK_EQ_U64(base, 42);
    CHECK(!rift_seg_name_parse("18446744073709551616.seg", &base));
    CHECK(!rift_seg_name_parse("0000000000000000004a.seg", &base));
    CHECK(!rift_seg_name_parse("0000000000000000042.seg", &base));
    CHECK(!rift_seg_name_parse("00000000000000000042.log", &base));
    CHECK(!rift_seg_name_parse("state.log", &base));
}

RIFT_TEST(segment_header) {
    uint8_t h[RIFT_SEG_HEADER];
    rift_seg_header_encode(h, 77);
    CHECK_EQ_MEM(h, 8, "RIFTSEG1", 8);
    uint64_t base = 0;
    CHECK_OK(rift_seg_header_decode(h, &base));
    CHECK_EQ_U64(base, 77);
    for (size_t i = 0; i < RIFT_SEG_HEADER; i++) {
        h[i] ^= 0x01;
        CHECK_EQ_INT(rift_seg_header_decode(h, &base), -1);
        h[i] ^= 0x01;
    }
}

RIFT_TEST(record_roundtrip) {
    uint8_t rec[128];
    uint8_t head[RIFT_REC_HEAD];
    const uint8_t payload[] = {1, 2, 3, 4, 5};
    uint32_t crc = rift_rec_prepare(head, "a.b", 3, "_INBOX.x", 8, payload, 5);
    uint32_t len = 32 + 3 + 8 + 5;
    CHECK_EQ_U64(rift_get_u32(head), len);
    memcpy(rec, head, RIFT_REC_HEAD);
    memcpy(rec + 16, "a.b", 3);
    memcpy(rec + 19, "_INBOX.x", 8);
    memcpy(rec + 27, payload, 5);
    rift_rec_finish(rec, len, crc, 9, 1700000000123ull);
    CHECK(rift_rec_head_valid(rec));
    rift_rec_view v;
    const char *why = NULL;
    CHECK_OK(rift_rec_decode(rec, len, &v, &why));
    CHECK_EQ_U64(v.seq, 9);
    CHECK_EQ_U64(v.ts, 1700000000123ull);
    CHECK_EQ_MEM(v.subject, v.subject_len, "a.b", 3);
    CHECK_EQ_MEM(v.reply, v.reply_len, "_INBOX.x", 8);
    CHECK_EQ_MEM(v.payload, v.payload_len, payload, 5);
    /* Any flipped bit is detected. */
    for (uint32_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            rec[i] ^= (uint8_t)(1u << bit);
            CHECK_MSG(rift_rec_decode(rec, len, &v, &why) != 0,
                      "flip at %u bit %d undetected", i, bit);
            rec[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* Lengths must add up. */
    rift_put_u32(rec, len + 1);
    CHECK(!rift_rec_head_valid(rec));
    rift_put_u32(rec, len);
    rift_put_u16(rec + 8, 0); /* empty subject */
    CHECK(!rift_rec_head_valid(rec));
}

RIFT_TEST(state_event_framing) {
    rift_sbuf b;
    rift_sbuf_init(&b, NULL);
    int64_t start = rift_ev_begin(&b, RIFT_EV_ACK);
    CHECK(start == 0);
    CHECK_OK(rift_ev_put_u32(&b, 7));
    CHECK_OK(rift_ev_put_u64(&b, 12345));
    rift_ev_finish(&b, start);
    CHECK_EQ_INT(b.len, RIFT_EV_FRAME + 1 + 12);
    uint32_t len = 0;
    const char *why = NULL;
    CHECK_EQ_INT(rift_ev_frame_check(b.data, b.len, &len, &why), 0);
    CHECK_EQ_INT(len, b.len);
    /* Torn: every strict prefix. */
    for (size_t cut = 0; cut < b.len; cut++) {
        CHECK_EQ_INT(rift_ev_frame_check(b.data, cut, &len, &why), 1);
    }
    /* Zeros after a crash are torn too. */
    uint8_t zeros[64] = {0};
    CHECK_EQ_INT(rift_ev_frame_check(zeros, sizeof(zeros), &len, &why), 1);
    /* A damaged length or body is corruption, at any position. */
    for (size_t i = 0; i < b.len; i++) {
        b.data[i] ^= 0x10;
        int rc = rift_ev_frame_check(b.data, b.len, &len, &why);
        CHECK_MSG(rc == -1, "flip at %zu: %d", i, rc);
        b.data[i] ^= 0x10;
    }
    /* A length that runs past the end with a valid length checksum is a
     * torn tail. */
    rift_ev_reader r = {.p = b.data + RIFT_EV_FRAME,
                        .len = b.len - RIFT_EV_FRAME};
    CHECK_EQ_INT(rift_ev_get_u8(&r), RIFT_EV_ACK);
    CHECK_EQ_INT(rift_ev_get_u32(&r), 7);
    CHECK_EQ_U64(rift_ev_get_u64(&r), 12345);
    CHECK(!r.bad);
    rift_ev_get_u8(&r);
    CHECK(r.bad);
    rift_sbuf_free(&b);
}

RIFT_TEST(state_header) {
    uint8_t h[RIFT_STATE_HEADER];
    rift_state_header_encode(h);
    CHECK_OK(rift_state_header_decode(h));
    h[3] ^= 1;
    CHECK_EQ_INT(rift_state_header_decode(h), -1);
}
