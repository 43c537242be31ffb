/*
 * test_nats_outq.c — the chunked outbound queue of a NATS connection
 * (src/nats/nats_outq.c): bytes come out in order however they are
 * reserved and however little each write takes, large messages get a
 * chunk of their own, and an idle queue gives its memory back.
 */
#include "nats/nats_outq.h"
#include "test.h"

#include <string.h>

/* Writes |len| bytes of a counting pattern starting at |*next|. */
static void put(nats_outq *q, size_t len, uint8_t *next) {
    uint8_t *p = rift_nats_outq_reserve(q, len);
    CHECK(p != NULL);
    for (size_t i = 0; i < len; i++) {
        p[i] = (*next)++;
    }
    rift_nats_outq_commit(q, len);
}

/* Bytes that came out other than in order (checked by every test). */
static size_t misordered;

/* Takes up to |max| bytes out as a write would; counts pattern breaks. */
static size_t take(nats_outq *q, size_t max, uint8_t *expect) {
    struct iovec iov[16];
    int n = rift_nats_outq_iov(q, iov, 16);
    size_t got = 0;
    for (int i = 0; i < n && got < max; i++) {
        const uint8_t *b = iov[i].iov_base;
        for (size_t j = 0; j < iov[i].iov_len && got < max; j++, got++) {
            misordered += b[j] != *expect;
            (*expect)++;
        }
    }
    rift_nats_outq_consume(q, got);
    return got;
}

RIFT_TEST(bytes_leave_in_order_through_partial_writes) {
    nats_outq q = {0};
    uint8_t next = 0, expect = 0;
    size_t in = 0, out = 0;
    /* Sizes crossing the first and the standard chunk boundaries. */
    static const size_t sizes[] = {10, 4000, 200, 70000, 5, 65536, 1, 3000};
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            put(&q, sizes[i], &next);
            in += sizes[i];
        }
        /* Writes that take an odd amount, as a full socket does. */
        out += take(&q, 12345 + (size_t)round * 777, &expect);
        CHECK_EQ_INT(q.pending, in - out);
    }
    while (q.pending > 0) {
        out += take(&q, 9999, &expect);
    }
    CHECK_EQ_INT(out, in);
    CHECK_EQ_INT(misordered, 0);
    CHECK(rift_nats_outq_iov(&q, (struct iovec[1]){{0}}, 1) == 0);
    rift_nats_outq_free(&q);
}

RIFT_TEST(an_idle_queue_gives_its_chunks_back) {
    nats_outq q = {0};
    uint8_t next = 0, expect = 0;
    put(&q, 100, &next);
    put(&q, NATS_OUTQ_CHUNK, &next);
    put(&q, 3 * NATS_OUTQ_CHUNK, &next); /* a chunk of its own */
    put(&q, 100, &next);
    while (q.pending > 0) {
        take(&q, 50000, &expect);
    }
    /* Nothing but the reused tail (and at most one spare) is held. */
    CHECK(q.head == q.tail);
    rift_nats_outq_trim(&q);
    CHECK(q.head == NULL && q.tail == NULL && q.spare == NULL);
    /* Still usable after the trim. */
    put(&q, 10, &next);
    CHECK_EQ_INT(take(&q, 100, &expect), 10);
    CHECK_EQ_INT(misordered, 0);
    rift_nats_outq_free(&q);
}

RIFT_TEST(trim_keeps_what_is_unsent) {
    nats_outq q = {0};
    uint8_t next = 0, expect = 0;
    put(&q, 5000, &next);
    rift_nats_outq_trim(&q);
    CHECK_EQ_INT(q.pending, 5000);
    CHECK_EQ_INT(take(&q, 10000, &expect), 5000);
    CHECK_EQ_INT(misordered, 0);
    rift_nats_outq_free(&q);
}
