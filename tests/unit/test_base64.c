/*
 * test_base64.c — padded base64 of riftd's control answers (daemon
 * layer): the RFC 4648 §10 vectors both ways, binary bytes, and
 * rejected input.
 */
#include "common/base64.h"
#include "test.h"

static const char *const vectors[][2] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

RIFT_TEST(rfc4648_vectors) {
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        const char *plain = vectors[i][0], *enc = vectors[i][1];
        char out[16];
        rift_base64_encode((const uint8_t *)plain, strlen(plain), out);
        CHECK_EQ_STR(out, enc);
        CHECK_EQ_INT(strlen(out), RIFT_BASE64_LEN(strlen(plain)));
        uint8_t back[16];
        size_t n = 99;
        CHECK(rift_base64_decode(enc, strlen(enc), back, &n));
        CHECK_EQ_MEM(back, n, plain, strlen(plain));
    }
}

RIFT_TEST(binary_round_trip) {
    uint8_t in[256], back[256];
    char enc[RIFT_BASE64_LEN(256) + 1];
    for (int i = 0; i < 256; i++) {
        in[i] = (uint8_t)(255 - i);
    }
    for (size_t len = 0; len <= 256; len += 37) {
        size_t n = 0;
        rift_base64_encode(in, len, enc);
        CHECK(rift_base64_decode(enc, strlen(enc), back, &n));
        CHECK_EQ_MEM(back, n, in, len);
    }
}

RIFT_TEST(rejects_malformed_input) {
    uint8_t out[16];
    size_t n;
    CHECK(!rift_base64_decode("Zg=", 3, out, &n));      /* length */
    CHECK(!rift_base64_decode("Z===", 4, out, &n));     /* too much padding */
    CHECK(!rift_base64_decode("Zg=a", 4, out, &n));     /* '=' inside */
    CHECK(!rift_base64_decode("Zm9v!A==", 8, out, &n)); /* alphabet */
    CHECK(!rift_base64_decode("Zg==Zm8=", 8, out, &n)); /* padding early */
}
