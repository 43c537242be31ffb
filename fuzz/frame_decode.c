/*
 * frame_decode.c — libFuzzer target of the wire codec (fuzz layer).
 *
 * Input: one seed byte, then a byte stream as a peer would send it. For
 * both body limits (1,114,112 and the auth stream's 4,099) the stream is
 * cut into frames twice: once fed whole (every body handed out in place)
 * and once in chunks whose sizes derive from the seed. Both cuts must
 * yield the same bodies and end in the same state or error. Every body is
 * decoded in a loop until error or end of input (as ngtcp2's decode_frame
 * fuzzer does); a frame that decodes must re-encode to exactly its own
 * bytes, and its views must lie inside the body; so must the extension
 * frames CONSUMER_LIST and CONSUMER_LIST_RESULT. Any disagreement traps.
 */
#include "codec/frame.h"
#include "codec/frame_ext.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                       \
 do {                                                                          \
  if (!(cond)) {                                                               \
   __builtin_trap();                                                           \
  }                                                                            \
 } while (0)

typedef struct span {
    size_t off;
    size_t len;
} span;

static bool inside(const void *p, size_t n, const uint8_t *body, size_t len) {
    const uint8_t *b = p;
    if (n == 0) {
        return p == NULL || (b >= body && b <= body + len);
    }
    return b >= body && b + n <= body + len;
}

/* The extension frames CONSUMER_LIST (26) and CONSUMER_LIST_RESULT (27):
 * what decodes re-encodes to exactly its own bytes. */
static void check_ext_body(const uint8_t *body, size_t len) {
    static uint8_t out[RIFT_FRAME_MAX_BYTES + 4];
    static rift_frame_consumer_info items[RIFT_EXT_MAX_LIST];
    rift_error err = {0};
    rift_ssize n = -1;
    if (body[0] == RIFT_OP_CONSUMER_LIST) {
        rift_frame_consumer_list f;
        if (rift_frame_decode_consumer_list(body + 1, len - 1, &f, &err) != 0) {
            FUZZ_CHECK(err.code == RIFT_ERR_PROTOCOL);
            return;
        }
        FUZZ_CHECK(inside(f.stream, f.stream_len, body, len));
        FUZZ_CHECK(inside(f.after, f.after_len, body, len));
        n = rift_frame_encode_consumer_list(out, sizeof(out), &f);
    } else {
        size_t count;
        bool more;
        if (rift_frame_decode_consumer_list_result(body + 1, len - 1, items,
                                                   RIFT_EXT_MAX_LIST, &count,
                                                   &more, &err) != 0) {
            FUZZ_CHECK(err.code == RIFT_ERR_PROTOCOL);
            return;
        }
        n = rift_frame_encode_consumer_list_result(out, sizeof(out), items,
                                                   count, more);
    }
    FUZZ_CHECK(n == (rift_ssize)(len + 4));
    FUZZ_CHECK(memcmp(out + 4, body, len) == 0);
}

/* Decodes one body, checks the views and the re-encoding. */
static void check_body(const uint8_t *body, size_t len) {
    static uint8_t hdr[RIFT_FRAME_HEADER_MAX];
    if (body[0] == RIFT_OP_CONSUMER_LIST ||
        body[0] == RIFT_OP_CONSUMER_LIST_RESULT) {
        check_ext_body(body, len);
    }
    rift_frame f;
    rift_error err = {0};
    (void)rift_frame_check_operation(body[0], &err);
    (void)rift_frame_check_opcode(body[0], RIFT_FRAME_FROM_SERVER, &err);
    if (rift_frame_decode(body, len, &f, &err) != 0) {
        FUZZ_CHECK(err.code == RIFT_ERR_PROTOCOL);
        return;
    }
    FUZZ_CHECK(rift_opcode_known(f.opcode));
    const uint8_t *payload;
    size_t plen;
    rift_frame_payload(&f, &payload, &plen);
    FUZZ_CHECK(inside(payload, plen, body, len));
    if (f.opcode == RIFT_OP_ERROR &&
        f.error.message_len > RIFT_FRAME_ERROR_TEXT_MAX) {
        /* The encoder cuts long messages (§2.5): no byte-exact echo. */
        return;
    }
    rift_ssize n = rift_frame_encode_header(hdr, sizeof(hdr), &f);
    FUZZ_CHECK(n >= 5);
    size_t h = (size_t)n;
    FUZZ_CHECK(h - 4 + plen == len);
    uint32_t declared = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
                        (uint32_t)hdr[2] << 8 | hdr[3];
    FUZZ_CHECK(declared == len);
    FUZZ_CHECK(memcmp(hdr + 4, body, h - 4) == 0);
    FUZZ_CHECK(plen == 0 || payload == body + (h - 4));
}

/* Cuts |in| with |r|, feeding chunks of the sizes chosen by |seed| (0 for
 * the whole input at once); records the bodies' offsets when |rec| is set
 * and otherwise compares against |want|. Returns the feed error or 0. */
static int cut(rift_frame_reader *r, const uint8_t *in, size_t n, uint32_t seed,
               span *rec, const span *want, size_t *count) {
    static uint8_t mode_max[4] = {4, 32, 255, 0};
    size_t off = 0;
    size_t frames = 0;
    uint32_t x = seed | 1u;
    size_t body_start = 0; /* stream offset of the next body's prefix */
    while (off < n) {
        size_t chunk = n - off;
        if (seed != 0) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            size_t max = mode_max[seed & 3];
            size_t c = max ? 1 + x % max : 1 + x % 4096;
            chunk = c < chunk ? c : chunk;
        }
        size_t used = 0;
        while (used < chunk) {
            rift_frame_body body;
            rift_error err = {0};
            rift_ssize k = rift_frame_reader_feed(r, in + off + used,
                                                  chunk - used, &body, &err);
            if (k < 0) {
                FUZZ_CHECK(body.data == NULL);
                *count = frames;
                return (int)k;
            }
            FUZZ_CHECK((size_t)k <= chunk - used);
            used += (size_t)k;
            if (body.data == NULL) {
                /* No frame: the whole rest of the chunk was taken. */
                FUZZ_CHECK(used == chunk);
                continue;
            }
            FUZZ_CHECK(body.len >= 1 && body.len <= r->limit);
            /* The body ends exactly where this feed stopped. */
            size_t end = off + used;
            FUZZ_CHECK(end - body.len == body_start + 4);
            FUZZ_CHECK(memcmp(body.data, in + end - body.len, body.len) == 0);
            if (!body.assembled) {
                FUZZ_CHECK(body.data == in + end - body.len);
            }
            /* Fed whole, every body is handed out in place. */
            FUZZ_CHECK(seed != 0 || !body.assembled);
            if (rec != NULL) {
                rec[frames] = (span){end - body.len, body.len};
                check_body(body.data, body.len);
            } else {
                FUZZ_CHECK(want[frames].off == end - body.len);
                FUZZ_CHECK(want[frames].len == body.len);
            }
            body_start = end;
            frames++;
        }
        off += chunk;
    }
    /* Whatever is left over is the unfinished frame. */
    FUZZ_CHECK(rift_frame_reader_buffered(r) == n - body_start);
    FUZZ_CHECK(rift_frame_reader_mid_frame(r) == (n > body_start));
    *count = frames;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) {
        return 0;
    }
    uint32_t seed = (uint32_t)data[0] * 2654435761u;
    seed = seed ? seed : 1;
    const uint8_t *in = data + 1;
    size_t n = size - 1;
    /* Bodies are at least one byte after a 4-byte prefix. */
    span *spans = malloc((n / 5 + 1) * sizeof(span));
    if (spans == NULL) {
        return 0;
    }
    static const uint32_t limits[2] = {RIFT_FRAME_MAX_BYTES,
                                       RIFT_FRAME_AUTH_MAX_BYTES};
    for (int l = 0; l < 2; l++) {
        rift_frame_reader whole, chunked;
        rift_frame_reader_init(&whole, limits[l], NULL);
        rift_frame_reader_init(&chunked, limits[l], NULL);
        size_t nwhole = 0, nchunked = 0;
        int rc1 = cut(&whole, in, n, 0, spans, NULL, &nwhole);
        int rc2 = cut(&chunked, in, n, seed, NULL, spans, &nchunked);
        FUZZ_CHECK(rc1 == rc2);
        FUZZ_CHECK(nwhole == nchunked);
        rift_frame_reader_free(&whole);
        rift_frame_reader_free(&chunked);
    }
    free(spans);
    return 0;
}
