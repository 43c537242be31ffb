/*
 * test_frame_reader.c — unit tests of the incremental frame reader (codec
 * layer): the §3.9 fragmented-read vector in every split, zero copy, the
 * length check before allocation, limits, out-of-memory recovery and the
 * mid-frame state a server's deadlines rely on.
 */
#include "codec/frame.h"
#include "test.h"

#include <stdlib.h>

/* ---- A counting allocator that can be told to fail ---- */

typedef struct counting {
    int allocs;
    int frees;
    size_t last_size;
    bool fail;
} counting;

static void *c_malloc(size_t size, void *ud) {
    counting *c = ud;
    if (c->fail) {
        return NULL;
    }
    c->allocs++;
    c->last_size = size;
    return malloc(size);
}

static void c_free(void *p, void *ud) {
    counting *c = ud;
    if (p != NULL) {
        c->frees++;
    }
    free(p);
}

static void *c_calloc(size_t n, size_t size, void *ud) {
    (void)n;
    (void)size;
    (void)ud;
    return NULL;
}

static void *c_realloc(void *p, size_t size, void *ud) {
    (void)p;
    (void)size;
    (void)ud;
    return NULL;
}

static rift_mem counting_mem(counting *c) {
    rift_mem m = {c, c_malloc, c_free, c_calloc, c_realloc};
    return m;
}

/* Feeds |data| in chunks whose sizes are |splits| (the last chunk takes
 * the rest) and collects the concatenation of every body into |out|. */
static int feed_split(rift_frame_reader *r, const uint8_t *data, size_t len,
                      const size_t *splits, size_t nsplits, uint8_t *out,
                      size_t *out_len, int *frames) {
    size_t off = 0;
    *out_len = 0;
    *frames = 0;
    for (size_t i = 0; i <= nsplits && off <= len; i++) {
        size_t chunk = i < nsplits ? splits[i] : len - off;
        size_t used = 0;
        while (used < chunk) {
            rift_frame_body body;
            rift_error err = {0};
            rift_ssize n = rift_frame_reader_feed(r, data + off + used,
                                                  chunk - used, &body, &err);
            if (n < 0) {
                return (int)n;
            }
            used += (size_t)n;
            if (body.data != NULL) {
                memcpy(out + *out_len, body.data, body.len);
                *out_len += body.len;
                (*frames)++;
            }
        }
        off += chunk;
    }
    return 0;
}

/* ---- §3.9 fragmented read ---- */

static const uint8_t frag_stream[] = {0x00, 0x00, 0x00, 0x07, 0x07, 0x61,
                                      0x62, 0x63, 0x64, 0x65, 0x66};
static const uint8_t frag_body[] = {0x07, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66};

RIFT_TEST(fragmented_read_vector) {
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, NULL);
    rift_frame_body body;
    rift_error err = {0};

    CHECK(!rift_frame_reader_mid_frame(&r));
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream, 2, &body, &err), 2);
    CHECK(body.data == NULL);
    CHECK(rift_frame_reader_mid_frame(&r));
    CHECK_EQ_INT(rift_frame_reader_buffered(&r), 2);

    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream + 2, 4, &body, &err),
                 4);
    CHECK(body.data == NULL);
    CHECK_EQ_INT(rift_frame_reader_buffered(&r), 6);

    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream + 6, 5, &body, &err),
                 5);
    CHECK(body.data != NULL);
    CHECK(body.assembled);
    CHECK_EQ_MEM(body.data, body.len, frag_body, sizeof(frag_body));
    CHECK(!rift_frame_reader_mid_frame(&r));
    CHECK_EQ_INT(rift_frame_reader_buffered(&r), 0);
    rift_frame_reader_free(&r);
}

RIFT_TEST(fragmented_read_every_split) {
    size_t n = sizeof(frag_stream);
    uint8_t out[64];
    size_t out_len;
    int frames;
    /* Byte by byte. */
    size_t ones[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, NULL);
    CHECK_OK(feed_split(&r, frag_stream, n, ones, 11, out, &out_len, &frames));
    CHECK_EQ_INT(frames, 1);
    CHECK_EQ_MEM(out, out_len, frag_body, sizeof(frag_body));
    rift_frame_reader_free(&r);

    /* Every way of cutting the stream into two and three chunks. */
    for (size_t a = 0; a <= n; a++) {
        for (size_t b = a; b <= n; b++) {
            size_t splits[2] = {a, b - a};
            rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, NULL);
            int rc = feed_split(&r, frag_stream, n, splits, 2, out, &out_len,
                                &frames);
            rift_frame_reader_free(&r);
            CHECK_OK(rc);
            CHECK_MSG(frames == 1, "split %zu/%zu: %d frames", a, b, frames);
            CHECK_EQ_MEM(out, out_len, frag_body, sizeof(frag_body));
        }
    }
}

/* ---- Zero copy ---- */

RIFT_TEST(whole_frames_are_not_copied) {
    /* Three frames in one chunk: PING, PUBLISH "a" payload "xy", OK. */
    const uint8_t chunk[] = {0, 0,   0, 1, 8,   0,   0, 0, 8, 4, 0,
                             1, 'a', 0, 0, 'x', 'y', 0, 0, 0, 1, 2};
    counting c = {0};
    rift_mem mem = counting_mem(&c);
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, &mem);
    rift_frame_body body;
    rift_error err = {0};
    size_t off = 0;

    rift_ssize n =
        rift_frame_reader_feed(&r, chunk + off, sizeof(chunk), &body, &err);
    CHECK_EQ_INT(n, 5);
    CHECK(body.data == chunk + 4 && body.len == 1 && !body.assembled);
    off += (size_t)n;
    n = rift_frame_reader_feed(&r, chunk + off, sizeof(chunk) - off, &body,
                               &err);
    CHECK_EQ_INT(n, 12);
    CHECK(body.data == chunk + 9 && body.len == 8 && !body.assembled);
    rift_frame f;
    CHECK_OK(rift_frame_decode(body.data, body.len, &f, &err));
    CHECK(f.msg.subject == (const char *)chunk + 12);
    CHECK(f.msg.payload == chunk + 15);
    off += (size_t)n;
    n = rift_frame_reader_feed(&r, chunk + off, sizeof(chunk) - off, &body,
                               &err);
    CHECK_EQ_INT(n, 5);
    CHECK(body.data == chunk + 21);
    off += (size_t)n;
    CHECK_EQ_INT(off, sizeof(chunk));
    CHECK_EQ_INT(rift_frame_reader_feed(&r, NULL, 0, &body, &err), 0);
    CHECK(body.data == NULL);
    CHECK_EQ_INT(c.allocs, 0);
    CHECK_EQ_INT(rift_frame_reader_detach(&r) == NULL, 1);
    rift_frame_reader_free(&r);
}

RIFT_TEST(split_prefix_then_whole_body_is_zero_copy) {
    /* The prefix straddles two chunks and ends one chunk exactly; the body
     * then arrives whole: no allocation, pointer into the last chunk. */
    counting c = {0};
    rift_mem mem = counting_mem(&c);
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, &mem);
    rift_frame_body body;
    rift_error err = {0};
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream, 3, &body, &err), 3);
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream + 3, 1, &body, &err),
                 1);
    CHECK(body.data == NULL);
    CHECK(rift_frame_reader_mid_frame(&r));
    CHECK_EQ_INT(rift_frame_reader_buffered(&r), 4);
    CHECK_EQ_INT(c.allocs, 0);
    /* The body plus the start of a next frame. */
    uint8_t next[9];
    memcpy(next, frag_stream + 4, 7);
    next[7] = 0;
    next[8] = 0;
    CHECK_EQ_INT(rift_frame_reader_feed(&r, next, 9, &body, &err), 7);
    CHECK(body.data == next && !body.assembled);
    CHECK_EQ_MEM(body.data, body.len, frag_body, sizeof(frag_body));
    CHECK_EQ_INT(rift_frame_reader_feed(&r, next + 7, 2, &body, &err), 2);
    CHECK(body.data == NULL);
    CHECK_EQ_INT(rift_frame_reader_buffered(&r), 2);
    CHECK_EQ_INT(c.allocs, 0);
    rift_frame_reader_free(&r);
}

/* ---- Length checks ---- */

static int feed_prefix(uint32_t limit, uint32_t declared, counting *c,
                       rift_error *err) {
    rift_mem mem = counting_mem(c);
    rift_frame_reader r;
    rift_frame_reader_init(&r, limit, &mem);
    uint8_t pre[5] = {(uint8_t)(declared >> 24), (uint8_t)(declared >> 16),
                      (uint8_t)(declared >> 8), (uint8_t)declared, 0x04};
    rift_frame_body body;
    rift_ssize n = rift_frame_reader_feed(&r, pre, sizeof(pre), &body, err);
    rift_frame_reader_free(&r);
    return (int)n;
}

RIFT_TEST(zero_and_oversized_lengths_fail_before_allocating) {
    counting c = {0};
    rift_error err = {0};
    /* 00 00 00 00 */
    CHECK_EQ_INT(feed_prefix(RIFT_FRAME_MAX_BYTES, 0, &c, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "frame length exceeds limit or is zero");
    /* 00 11 00 01 = 1,114,113 */
    CHECK_EQ_INT(feed_prefix(RIFT_FRAME_MAX_BYTES, 1114113, &c, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "frame length exceeds limit or is zero");
    CHECK_EQ_INT(feed_prefix(RIFT_FRAME_MAX_BYTES, UINT32_MAX, &c, &err),
                 RIFT_ERR_PROTOCOL);
    /* AUTH stream: 4,100 over, 4,099 fine (a body byte is present, so the
     * buffer is allocated at the declared size). */
    CHECK_EQ_INT(feed_prefix(RIFT_FRAME_AUTH_MAX_BYTES, 4100, &c, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_STR(err.text, "frame length exceeds limit or is zero");
    CHECK_EQ_INT(c.allocs, 0);
    CHECK_EQ_INT(feed_prefix(RIFT_FRAME_AUTH_MAX_BYTES, 4099, &c, &err), 5);
    CHECK_EQ_INT(c.allocs, 1);
    CHECK_EQ_INT(c.last_size, 4099);
    CHECK_EQ_INT(c.frees, 1);
}

RIFT_TEST(length_error_is_final) {
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, NULL);
    rift_frame_body body;
    rift_error err = {0};
    const uint8_t zero[] = {0, 0};
    CHECK_EQ_INT(rift_frame_reader_feed(&r, zero, 2, &body, &err), 2);
    CHECK_EQ_INT(rift_frame_reader_feed(&r, zero, 2, &body, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK(body.data == NULL);
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream, 11, &body, &err),
                 RIFT_ERR_PROTOCOL);
    CHECK_EQ_INT(rift_frame_reader_feed(&r, NULL, 0, &body, &err),
                 RIFT_ERR_PROTOCOL);
    /* reset starts over. */
    rift_frame_reader_reset(&r);
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream, 11, &body, &err), 11);
    CHECK_EQ_MEM(body.data, body.len, frag_body, sizeof(frag_body));
    rift_frame_reader_free(&r);
}

RIFT_TEST(max_frame_assembled_with_one_allocation) {
    /* Exactly 1,114,112 bytes, fed in 1,200-byte chunks like QUIC packets. */
    size_t body_len = RIFT_FRAME_MAX_BYTES;
    size_t total = 4 + body_len;
    uint8_t *stream = malloc(total);
    CHECK(stream != NULL);
    stream[0] = 0x00;
    stream[1] = 0x11;
    stream[2] = 0x00;
    stream[3] = 0x00;
    for (size_t i = 4; i < total; i++) {
        stream[i] = (uint8_t)(i * 7);
    }
    counting c = {0};
    rift_mem mem = counting_mem(&c);
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, &mem);
    size_t off = 0;
    int frames = 0;
    bool same = false;
    int rc = 0;
    while (off < total && rc == 0) {
        size_t chunk = total - off < 1200 ? total - off : 1200;
        size_t used = 0;
        while (used < chunk) {
            rift_frame_body body;
            rift_error err = {0};
            rift_ssize n = rift_frame_reader_feed(&r, stream + off + used,
                                                  chunk - used, &body, &err);
            if (n < 0) {
                rc = (int)n;
                break;
            }
            used += (size_t)n;
            if (body.data != NULL) {
                frames++;
                same = body.assembled && body.len == body_len &&
                       memcmp(body.data, stream + 4, body_len) == 0;
            }
        }
        off += chunk;
    }
    /* The big buffer is released once the next feed shows the body dead. */
    rift_frame_body body;
    rift_error err = {0};
    rift_ssize last = rift_frame_reader_feed(&r, NULL, 0, &body, &err);
    size_t cap_after = r.buf_cap;
    rift_frame_reader_free(&r);
    free(stream);
    CHECK_OK(rc);
    CHECK_EQ_INT(frames, 1);
    CHECK(same);
    CHECK_EQ_INT(c.allocs, 1);
    CHECK_EQ_INT(c.last_size, RIFT_FRAME_MAX_BYTES);
    CHECK_EQ_INT(last, 0);
    CHECK_EQ_INT(cap_after, 0);
    CHECK_EQ_INT(c.frees, 1);
}

RIFT_TEST(small_buffer_reused_and_detachable) {
    counting c = {0};
    rift_mem mem = counting_mem(&c);
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, &mem);
    rift_frame_body body;
    rift_error err = {0};
    for (int round = 0; round < 3; round++) {
        CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream, 6, &body, &err),
                     6);
        CHECK_EQ_INT(
            rift_frame_reader_feed(&r, frag_stream + 6, 5, &body, &err), 5);
        CHECK(body.assembled);
        CHECK_EQ_MEM(body.data, body.len, frag_body, sizeof(frag_body));
    }
    CHECK_EQ_INT(c.allocs, 1);
    uint8_t *kept = rift_frame_reader_detach(&r);
    CHECK(kept == body.data);
    CHECK(rift_frame_reader_detach(&r) == NULL);
    /* The next straddling frame needs a new buffer. */
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream, 6, &body, &err), 6);
    CHECK_EQ_INT(c.allocs, 2);
    CHECK_EQ_MEM(kept, 7, frag_body, 7);
    rift_free(&mem, kept);
    rift_frame_reader_free(&r);
    CHECK_EQ_INT(c.frees, 2);
}

RIFT_TEST(out_of_memory_leaves_reader_as_before) {
    counting c = {0};
    rift_mem mem = counting_mem(&c);
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, &mem);
    rift_frame_body body;
    rift_error err = {0};
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream, 2, &body, &err), 2);
    c.fail = true;
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream + 2, 4, &body, &err),
                 RIFT_ERR_NOMEM);
    CHECK_EQ_INT(err.code, RIFT_ERR_NOMEM);
    CHECK_EQ_INT(rift_frame_reader_buffered(&r), 2);
    c.fail = false;
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream + 2, 4, &body, &err),
                 4);
    CHECK_EQ_INT(rift_frame_reader_feed(&r, frag_stream + 6, 5, &body, &err),
                 5);
    CHECK_EQ_MEM(body.data, body.len, frag_body, sizeof(frag_body));
    rift_frame_reader_free(&r);
}

/* ---- Many frames, pseudo-random fragmentation ---- */

RIFT_TEST(random_fragmentation_preserves_frames) {
    /* 200 PUBLISH frames with payloads of 0..3,000 bytes. */
    size_t cap = 200 * (4 + 10 + 3000);
    uint8_t *stream = malloc(cap);
    size_t *ends = malloc(200 * sizeof(size_t));
    CHECK(stream != NULL && ends != NULL);
    size_t len = 0;
    uint32_t seed = 12345;
    for (int i = 0; i < 200; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t plen = (seed >> 8) % 3001;
        rift_ssize h = rift_frame_encode_publish_header(stream + len, cap - len,
                                                        "s.x", 3, "", 0, plen);
        CHECK(h > 0);
        len += (size_t)h;
        for (size_t k = 0; k < plen; k++) {
            stream[len + k] = (uint8_t)(i + k);
        }
        len += plen;
        ends[i] = len;
    }
    rift_frame_reader r;
    rift_frame_reader_init(&r, RIFT_FRAME_MAX_BYTES, NULL);
    size_t off = 0, begin = 0;
    int frames = 0, zero_copy = 0;
    bool ok = true;
    while (off < len && ok) {
        seed = seed * 1103515245u + 12345u;
        size_t chunk = 1 + (seed >> 8) % 2500;
        if (chunk > len - off) {
            chunk = len - off;
        }
        size_t used = 0;
        while (used < chunk && ok) {
            rift_frame_body body;
            rift_error err = {0};
            rift_ssize n = rift_frame_reader_feed(&r, stream + off + used,
                                                  chunk - used, &body, &err);
            ok = n >= 0;
            if (!ok) {
                break;
            }
            used += (size_t)n;
            if (body.data != NULL) {
                size_t want = ends[frames] - begin - 4;
                ok = body.len == want &&
                     memcmp(body.data, stream + begin + 4, want) == 0;
                zero_copy += !body.assembled;
                begin = ends[frames];
                frames++;
            }
        }
        off += chunk;
    }
    rift_frame_reader_free(&r);
    free(stream);
    free(ends);
    CHECK(ok);
    CHECK_EQ_INT(frames, 200);
    CHECK(zero_copy > 0);
}
