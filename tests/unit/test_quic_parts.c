/*
 * test_quic_parts.c — unit tests of the QUIC layer's building blocks (quic
 * layer): the pinned send queue (merging, peek, partial consume, in-order
 * acks, truncate, release accounting) and the connection-ID map.
 */
#include "common/common.h"
#include "quic/cidmap.h"
#include "quic/sendq.h"
#include "test.h"

#include <stdlib.h>

static int released;

static void on_release(void *owner) {
    (void)owner;
    released++;
}

RIFT_TEST(sendq_copies_merge_and_stay_pinned) {
    rift_sendq q;
    rift_sendq_init(&q, NULL);
    uint8_t a[100], b[100];
    memset(a, 'a', sizeof(a));
    memset(b, 'b', sizeof(b));
    CHECK_OK(rift_sendq_reserve(&q, 2, 200));
    rift_sendq_append_copy(&q, a, 100);
    rift_sendq_append_copy(&q, b, 100);
    CHECK_EQ_INT(q.count, 1); /* contiguous copies merged */
    ngtcp2_vec v[4];
    uint64_t total;
    CHECK_EQ_INT(rift_sendq_peek(&q, v, 4, &total), 1);
    CHECK_EQ_U64(total, 200);
    const uint8_t *pinned = v[0].base;
    rift_sendq_consume(&q, 150);
    CHECK_EQ_U64(rift_sendq_unsent(&q), 50);
    /* Appending more must not move bytes already handed out. */
    for (int i = 0; i < 200; i++) {
        CHECK_OK(rift_sendq_reserve(&q, 1, 100));
        rift_sendq_append_copy(&q, a, 100);
    }
    CHECK(pinned[0] == 'a' && pinned[100] == 'b');
    /* The first block was small (RIFT_SENDQ_FIRST_BLOCK: a fresh queue is
     * usually an operation's one short answer), so the next copy starts
     * a 16 KiB block; 163 copies fill it and the rest start a third. */
    CHECK_EQ_INT(rift_sendq_peek(&q, v, 4, &total), 3);
    CHECK(v[0].base == pinned + 150);
    CHECK_EQ_U64(v[0].len, 200 - 150);
    CHECK_EQ_U64(v[1].len, (RIFT_SENDQ_BLOCK / 100) * 100);
    CHECK_EQ_U64(v[2].len, (200 - RIFT_SENDQ_BLOCK / 100) * 100);
    CHECK_EQ_U64(total, rift_sendq_unsent(&q));
    rift_sendq_clear(&q);
}

RIFT_TEST(sendq_acks_release_in_order) {
    rift_sendq q;
    rift_sendq_init(&q, NULL);
    static uint8_t buf[3][1000];
    released = 0;
    CHECK_OK(rift_sendq_reserve(&q, 4, 10));
    rift_sendq_append_ref(&q, buf[0], 1000, on_release, NULL);
    rift_sendq_append_copy(&q, (const uint8_t *)"hdr", 3);
    rift_sendq_append_ref(&q, buf[1], 1000, on_release, NULL);
    rift_sendq_append_ref(&q, buf[2], 1000, on_release, NULL);
    CHECK_EQ_U64(rift_sendq_unacked(&q), 3003);
    rift_sendq_consume(&q, 2500);
    rift_sendq_ack(&q, 0, 500); /* partial head */
    CHECK_EQ_INT(released, 0);
    rift_sendq_ack(&q, 500, 503); /* head + the copy entry */
    CHECK_EQ_INT(released, 1);
    CHECK_EQ_INT(q.count, 2);
    /* Never release what was not sent. */
    rift_sendq_ack(&q, 1003, 5000);
    CHECK_EQ_INT(released, 2);
    CHECK_EQ_U64(q.acked, 2500);
    ngtcp2_vec v[4];
    uint64_t total;
    CHECK_EQ_INT(rift_sendq_peek(&q, v, 4, &total), 1);
    CHECK_EQ_U64(total, 503);
    CHECK(v[0].base == buf[2] + 497);
    rift_sendq_clear(&q);
    CHECK_EQ_INT(released, 3);
}

RIFT_TEST(sendq_truncate_drops_unsent_only) {
    rift_sendq q;
    rift_sendq_init(&q, NULL);
    static uint8_t buf[4][100];
    released = 0;
    CHECK_OK(rift_sendq_reserve(&q, 4, 0));
    for (int i = 0; i < 4; i++) {
        rift_sendq_append_ref(&q, buf[i], 100, on_release, NULL);
    }
    rift_sendq_consume(&q, 150);
    rift_sendq_truncate(&q);
    CHECK_EQ_INT(released, 2); /* entries 2 and 3 never went out */
    CHECK_EQ_U64(rift_sendq_unsent(&q), 0);
    CHECK_EQ_U64(q.end, 150);
    rift_sendq_ack(&q, 0, 150);
    CHECK_EQ_INT(released, 4);
    CHECK_EQ_U64(rift_sendq_unacked(&q), 0);
    rift_sendq_clear(&q);
    CHECK_EQ_INT(released, 4);
}

RIFT_TEST(sendq_ring_grows_across_wrap) {
    rift_sendq q;
    rift_sendq_init(&q, NULL);
    static uint8_t buf[1];
    released = 0;
    uint64_t off = 0;
    for (int round = 0; round < 50; round++) {
        CHECK_OK(rift_sendq_reserve(&q, 13, 0));
        for (int i = 0; i < 13; i++) {
            rift_sendq_append_ref(&q, buf, 1, on_release, NULL);
        }
        rift_sendq_consume(&q, 13);
        rift_sendq_ack(&q, off, 10);
        off += 10;
    }
    CHECK_EQ_INT(released, 500);
    CHECK_EQ_U64(rift_sendq_unacked(&q), 150);
    rift_sendq_clear(&q);
    CHECK_EQ_INT(released, 650);
}

RIFT_TEST(cidmap_put_get_del_many) {
    rift_cidmap m;
    CHECK_OK(rift_cidmap_init(&m, NULL));
    enum {
        N = 5000
    };
    static uint8_t cids[N][18];
    static int vals[N];
    for (int i = 0; i < N; i++) {
        CHECK_OK(rift_random(cids[i], 18));
        CHECK_OK(rift_cidmap_put(&m, cids[i], 18, &vals[i]));
    }
    CHECK_EQ_INT(m.len, N);
    for (int i = 0; i < N; i++) {
        CHECK(rift_cidmap_get(&m, cids[i], 18) == &vals[i]);
    }
    /* Delete every other one; the rest must stay reachable (backward
     * shift keeps probe runs intact). */
    for (int i = 0; i < N; i += 2) {
        CHECK(rift_cidmap_del(&m, cids[i], 18, &vals[i]));
    }
    for (int i = 0; i < N; i++) {
        void *want = i % 2 ? &vals[i] : NULL;
        CHECK(rift_cidmap_get(&m, cids[i], 18) == want);
    }
    /* Wrong owner: not removed. Different length: different key. */
    CHECK(!rift_cidmap_del(&m, cids[1], 18, &vals[0]));
    CHECK(rift_cidmap_get(&m, cids[1], 17) == NULL);
    CHECK_EQ_INT(rift_cidmap_put(&m, cids[0], 21, &vals[0]),
                 RIFT_ERR_INVALID_ARGUMENT);
    rift_cidmap_free(&m);
}
