/*
 * stan_proto.c — libFuzzer target for the STAN protobuf codec (fuzz
 * layer). The first byte picks one of the eleven decoders, the rest is its
 * input. The target aborts when an invariant breaks:
 * - a decoder fails only with RIFT_ERR_PROTOCOL and one of the three
 *   documented texts;
 * - every string of a decoded view lies inside the input, and strings
 *   other than payloads are at most RIFT_STAN_MAX_STRING bytes;
 * - a decoded view re-encodes within rift_stan_encoded_bound, the
 *   re-encoding decodes, and encoding that again gives the same bytes
 *   (decode ∘ encode is the identity on views).
 */
#include "stan/proto.h"
#include "fuzz_require.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef int (*decode_fn)(const uint8_t *, size_t, void *, rift_error *);
typedef size_t (*encode_fn)(const void *, uint8_t *, size_t);

#define CODEC(name, type)                                                      \
 {                                                                             \
  (decode_fn) rift_stan_decode_##name, (encode_fn)rift_stan_encode_##name,     \
      sizeof(type)                                                             \
 }

static const struct codec {
    decode_fn decode;
    encode_fn encode;
    size_t size;
} codecs[] = {
    CODEC(connect_req, rift_stan_connect_req),
    CODEC(connect_resp, rift_stan_connect_resp),
    CODEC(pub_msg, rift_stan_pub_msg),
    CODEC(pub_ack, rift_stan_pub_ack),
    CODEC(msg_proto, rift_stan_msg_proto),
    CODEC(ack, rift_stan_ack),
    CODEC(sub_req, rift_stan_sub_req),
    CODEC(sub_resp, rift_stan_sub_resp),
    CODEC(unsub_req, rift_stan_unsub_req),
    CODEC(ping, rift_stan_ping),
    CODEC(one_str, rift_stan_one_str),
};

/* Every rift_stan_str member of a view, found by scanning it: views are
 * made of rift_stan_str and scalars only, and a pointer into the input is
 * recognisable. Checks each lies inside [p, p + len). */
static void check_strings(const void *view, size_t size, const uint8_t *p,
                          size_t len) {
    const unsigned char *v = view;
    for (size_t off = 0; off + sizeof(rift_stan_str) <= size;
         off += sizeof(void *)) {
        rift_stan_str s;
        memcpy(&s, v + off, sizeof s);
        const uint8_t *sp = (const uint8_t *)s.p;
        if (len && sp >= p && sp < p + len) {
            REQUIRE(s.len <= (size_t)(p + len - sp));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) {
        return 0;
    }
    const struct codec *c =
        &codecs[data[0] % (sizeof codecs / sizeof codecs[0])];
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    _Alignas(max_align_t) unsigned char view[256], view2[256];
    REQUIRE(c->size <= sizeof view);
    rift_error err = {0};
    int rc = c->decode(p, len, view, &err);
    if (rc != 0) {
        REQUIRE(rc == RIFT_ERR_PROTOCOL);
        REQUIRE(strcmp(err.text, "stan: truncated protobuf") == 0 ||
                strcmp(err.text, "stan: invalid protobuf") == 0 ||
                strcmp(err.text, "stan: protobuf field too large") == 0);
        return 0;
    }
    check_strings(view, c->size, p, len);
    size_t cap = rift_stan_encoded_bound(len);
    uint8_t *a = malloc(cap), *b = malloc(cap);
    REQUIRE(a && b);
    size_t na = c->encode(view, a, cap);
    REQUIRE(na <= cap);
    REQUIRE(c->decode(a, na, view2, NULL) == 0);
    size_t nb = c->encode(view2, b, cap);
    REQUIRE(na == nb && memcmp(a, b, na) == 0);
    free(a);
    free(b);
    return 0;
}
